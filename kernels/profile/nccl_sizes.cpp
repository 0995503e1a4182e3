#include "kernels/profile/nccl_sizes.hpp"

namespace redline::profile {

std::int64_t nccl_element_bytes(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)  // NCCL's FP8 types
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
#endif
      return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

}  // namespace redline::profile
