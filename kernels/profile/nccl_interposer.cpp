// libredline_profile_nccl.so: preloaded into a profiled program
// (LD_PRELOAD, `redline profile --nccl-sizes`), it stands in for NCCL's
// collective and point-to-point entry points. Each call's collective, count,
// element size and communicator size is written to the file
// REDLINE_PROFILE_NCCL names (an `ncclcall` line, in the trace format)
// before the call is forwarded, and the call runs inside a CUPTI
// external-correlation id, so the kernels it launched join the line
// (harness/profile/nccl_calls.hpp) and NCCL's time is set against the busbw
// measured for the same collective and size.
//
// NCCL launches a group's kernels in ncclGroupEnd, not in the calls made
// inside the group: a group gets one id, pushed from its outermost
// ncclGroupStart to its outermost ncclGroupEnd, and every call inside it is
// recorded under that id, so the kernels join the whole group. A call
// outside a group is its own group (NCCL launches it before returning).
// A non-blocking communicator may launch later, on NCCL's own thread: those
// kernels join nothing, and the profile counts them as unjoined.
//
// Like the GEMM recorder it links neither NCCL nor CUPTI, and never takes
// the program down (call_recorder.hpp).
#include <cstdint>
#include <string>

#include "harness/profile/trace_file.hpp"
#include "kernels/profile/call_recorder.hpp"
#include "kernels/profile/nccl_sizes.hpp"

namespace redline::profile {
namespace {

CallRecorder& recorder() {
  // The id tag keeps these ids apart from the GEMM recorder's (tag 0),
  // whose ids share the process-id half and the correlation kind.
  static CallRecorder* const instance = new CallRecorder(
      {.file_variable = "REDLINE_PROFILE_NCCL",
       .id_tag = 0x80000000u,
       .without_cupti = "NCCL calls are recorded without their kernels, so their time is unknown"});
  return *instance;
}

constexpr const char* kNccl = "libnccl";

template <typename Fn>
Fn real(const char* name) {
  return recorder().real<Fn>(name, kNccl);
}

// The communicator's size; 0 where NCCL cannot say (the call will fail).
int ranks_of(ncclComm_t comm) {
  using Fn = ncclResult_t (*)(ncclComm_t, int*);
  static const Fn count = real<Fn>("ncclCommCount");
  int ranks = 0;
  if (count == nullptr || count(comm, &ranks) != ncclSuccess) return 0;
  return ranks;
}

// The open group on this thread: its depth (NCCL's groups nest), its id,
// and whether CUPTI took the id (else there is nothing to pop).
thread_local int t_group_depth = 0;
thread_local std::int64_t t_group_id = 0;
thread_local bool t_group_pushed = false;

// Records the call under the open group's id, or under an id of its own
// pushed around the forwarded call. All of it runs with the depth raised,
// so NCCL's calls into its own entry points forward only.
template <typename Forward>
ncclResult_t recorded(const char* collective, std::size_t count, ncclDataType_t type, ncclComm_t comm,
                      Forward forward) {
  if (!records_call(recorder())) return forward();
  const CallDepth depth;
  std::int64_t id = 0;
  try {
    id = t_group_depth > 0 ? t_group_id : recorder().next_id();
    recorder().write(nccl_call_line({id, collective, static_cast<std::int64_t>(count), nccl_element_bytes(type),
                                     ranks_of(comm)}));
  } catch (...) {
    return forward();  // out of memory while recording: forwarded unrecorded
  }
  if (t_group_depth > 0) return forward();  // the group's id is pushed already
  return recorder().correlated(id, forward);
}

}  // namespace
}  // namespace redline::profile

using namespace redline::profile;

#define REDLINE_EXPORT extern "C" __attribute__((visibility("default")))

REDLINE_EXPORT ncclResult_t ncclGroupStart() {
  using Fn = ncclResult_t (*)();
  static const Fn next = real<Fn>("ncclGroupStart");
  if (next == nullptr) return ncclSystemError;
  if (!records_call(recorder())) return next();
  const CallDepth depth;
  const ncclResult_t result = next();
  if (result == ncclSuccess && t_group_depth++ == 0) {
    t_group_id = recorder().next_id();
    t_group_pushed = recorder().push(t_group_id);  // not taken: the calls are recorded, and join nothing
  }
  return result;
}

namespace {

// ncclGroupEnd and ncclGroupSimulateEnd both close a level of the group
// (NCCL ends a simulated group too): the id is popped at the outermost.
template <typename Forward>
ncclResult_t group_closed(Forward forward) {
  if (!CallDepth::outermost() || t_group_depth == 0) return forward();
  const CallDepth depth;
  const ncclResult_t result = forward();  // a failed group is closed all the same
  if (--t_group_depth == 0 && t_group_pushed) recorder().pop();
  return result;
}

}  // namespace

REDLINE_EXPORT ncclResult_t ncclGroupEnd() {
  using Fn = ncclResult_t (*)();
  static const Fn next = real<Fn>("ncclGroupEnd");
  if (next == nullptr) return ncclSystemError;
  return group_closed([&] { return next(); });
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 22, 0)  // where ncclGroupSimulateEnd came in
REDLINE_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* sim_info) {
  using Fn = ncclResult_t (*)(ncclSimInfo_t*);
  static const Fn next = real<Fn>("ncclGroupSimulateEnd");
  if (next == nullptr) return ncclSystemError;
  return group_closed([&] { return next(sim_info); });
}
#endif

REDLINE_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  using Fn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  static const Fn next = real<Fn>("ncclAllReduce");
  if (next == nullptr) return ncclSystemError;
  return recorded("all_reduce", count, datatype, comm,
                  [&] { return next(sendbuff, recvbuff, count, datatype, op, comm, stream); });
}

REDLINE_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  using Fn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  static const Fn next = real<Fn>("ncclAllGather");
  if (next == nullptr) return ncclSystemError;
  return recorded("all_gather", sendcount, datatype, comm,
                  [&] { return next(sendbuff, recvbuff, sendcount, datatype, comm, stream); });
}

REDLINE_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                              cudaStream_t stream) {
  using Fn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  static const Fn next = real<Fn>("ncclReduceScatter");
  if (next == nullptr) return ncclSystemError;
  return recorded("reduce_scatter", recvcount, datatype, comm,
                  [&] { return next(sendbuff, recvbuff, recvcount, datatype, op, comm, stream); });
}

REDLINE_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                          int root, ncclComm_t comm, cudaStream_t stream) {
  using Fn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  static const Fn next = real<Fn>("ncclBroadcast");
  if (next == nullptr) return ncclSystemError;
  return recorded("broadcast", count, datatype, comm,
                  [&] { return next(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

REDLINE_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                      cudaStream_t stream) {
  using Fn = ncclResult_t (*)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  static const Fn next = real<Fn>("ncclBcast");
  if (next == nullptr) return ncclSystemError;
  return recorded("broadcast", count, datatype, comm, [&] { return next(buff, count, datatype, root, comm, stream); });
}

REDLINE_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  using Fn =
      ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t);
  static const Fn next = real<Fn>("ncclReduce");
  if (next == nullptr) return ncclSystemError;
  return recorded("reduce", count, datatype, comm,
                  [&] { return next(sendbuff, recvbuff, count, datatype, op, root, comm, stream); });
}

// NCCL 2.28's own all-to-all, gather and scatter; older programs make them
// of sends and receives in a group, which are recorded as such.
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
REDLINE_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t stream) {
  using Fn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  static const Fn next = real<Fn>("ncclGather");
  if (next == nullptr) return ncclSystemError;
  return recorded("gather", count, datatype, comm,
                  [&] { return next(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

REDLINE_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        int root, ncclComm_t comm, cudaStream_t stream) {
  using Fn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  static const Fn next = real<Fn>("ncclScatter");
  if (next == nullptr) return ncclSystemError;
  return recorded("scatter", count, datatype, comm,
                  [&] { return next(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

REDLINE_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclComm_t comm, cudaStream_t stream) {
  using Fn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  static const Fn next = real<Fn>("ncclAlltoAll");
  if (next == nullptr) return ncclSystemError;
  return recorded("alltoall", count, datatype, comm,
                  [&] { return next(sendbuff, recvbuff, count, datatype, comm, stream); });
}
#endif

REDLINE_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                     ncclComm_t comm, cudaStream_t stream) {
  using Fn = ncclResult_t (*)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  static const Fn next = real<Fn>("ncclSend");
  if (next == nullptr) return ncclSystemError;
  return recorded("send", count, datatype, comm, [&] { return next(sendbuff, count, datatype, peer, comm, stream); });
}

REDLINE_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                     cudaStream_t stream) {
  using Fn = ncclResult_t (*)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  static const Fn next = real<Fn>("ncclRecv");
  if (next == nullptr) return ncclSystemError;
  return recorded("recv", count, datatype, comm, [&] { return next(recvbuff, count, datatype, peer, comm, stream); });
}
