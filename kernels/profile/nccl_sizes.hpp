// What an NCCL call moves, from its arguments: the element size of its
// datatype. The message size a busbw curve is read at (nccl-tests' size
// column) follows from the collective, the count and the ranks
// (harness/profile/nccl_calls.hpp); this part needs nccl.h, so it is here.
#pragma once

#include <nccl.h>

#include <cstdint>

namespace redline::profile {

// Bytes per element; 0 for a datatype this NCCL header does not know (a
// newer library's), whose calls are recorded with their size unknown.
std::int64_t nccl_element_bytes(ncclDataType_t type);

}  // namespace redline::profile
