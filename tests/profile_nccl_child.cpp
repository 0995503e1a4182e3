// A profiled program for the NCCL recorder's test: it calls each NCCL entry
// point the recorder stands in for, as a program linked to NCCL does, with
// a null communicator. Without a GPU the real calls fail (ncclInvalidArgument),
// which is fine: the recorder records before it forwards, and the statuses
// printed show the real functions answered. Two of the calls are made inside
// a group, as a framework coalesces them, and one inside a simulated group.
//   profile_nccl_child [FAKE_CUPTI]
//   profile_nccl_child --late FAKE_CUPTI
// FAKE_CUPTI is loaded first, as the injection library loads libcupti, and
// the external ids it was given are counted. --late: one all-reduce before
// it is loaded (a call before cuInit loaded CUPTI), one after.
#include <nccl.h>

#include <cstdio>
#include <string>

#include "tests/fake_cupti_client.hpp"

// A recorded call before libcupti is loaded, and one after.
int late_cupti(const char* cupti) {
  ncclAllReduce(nullptr, nullptr, 1, ncclFloat32, ncclSum, nullptr, nullptr);
  const auto external_ids = redline::testing::load_fake_cupti(cupti);
  if (external_ids == nullptr) return 3;
  ncclAllReduce(nullptr, nullptr, 2, ncclFloat32, ncclSum, nullptr, nullptr);
  redline::testing::print_external_ids(external_ids);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--late") return late_cupti(argv[2]);
  redline::testing::FakeExternalIds external_ids = nullptr;
  if (argc > 1 && (external_ids = redline::testing::load_fake_cupti(argv[1])) == nullptr) return 3;
  const ncclComm_t comm = nullptr;
  std::printf("all_reduce status %d\n", ncclAllReduce(nullptr, nullptr, 1000, ncclBfloat16, ncclSum, comm, nullptr));
  std::printf("group start status %d\n", ncclGroupStart());
  ncclAllGather(nullptr, nullptr, 64, ncclFloat32, comm, nullptr);
  ncclReduceScatter(nullptr, nullptr, 32, ncclFloat16, ncclSum, comm, nullptr);
  std::printf("group end status %d\n", ncclGroupEnd());
  ncclBroadcast(nullptr, nullptr, 5, ncclInt64, 0, comm, nullptr);
  ncclBcast(nullptr, 6, ncclUint8, 0, comm, nullptr);
  ncclReduce(nullptr, nullptr, 7, ncclFloat64, ncclMax, 0, comm, nullptr);
  ncclAlltoAll(nullptr, nullptr, 8, ncclFloat8e4m3, comm, nullptr);
  ncclGather(nullptr, nullptr, 11, ncclInt8, 0, comm, nullptr);
  ncclScatter(nullptr, nullptr, 12, ncclFloat32, 0, comm, nullptr);
  ncclSend(nullptr, 9, ncclInt32, 1, comm, nullptr);
  ncclRecv(nullptr, 10, ncclInt32, 1, comm, nullptr);
  // A simulated group closes the group as ncclGroupEnd does: the call after it is a launch of its own.
  ncclSimInfo_t simulated = NCCL_SIM_INFO_INITIALIZER;
  ncclGroupStart();
  ncclAllReduce(nullptr, nullptr, 13, ncclFloat32, ncclSum, comm, nullptr);
  ncclGroupSimulateEnd(&simulated);
  ncclAllReduce(nullptr, nullptr, 14, ncclFloat32, ncclSum, comm, nullptr);
  if (external_ids != nullptr) redline::testing::print_external_ids(external_ids);
  return 0;
}
