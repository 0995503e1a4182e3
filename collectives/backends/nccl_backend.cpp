// NcclBackend: the Backend interface on NCCL communicators, one per local GPU,
// each with its own non-blocking stream.
//
// Why blocking communicators (set in the config; NCCL_COMM_BLOCKING would
// override it, so the tool sets that to 1 before init, as a
// non-blocking communicator would let wait() see idle streams before the
// operations are enqueued): they are what nccl-tests creates, so the
// numbers are comparable, and no call in the timed loop has to be polled for
// ncclInProgress. A hang is ended from
// the harness's watchdog thread with abort() -> ncclCommAbort, which NCCL
// supports on a live communicator from another thread (it raises the abort
// flag that the kernels and proxy threads poll); PyTorch's NCCL watchdog does
// the same. wait() never blocks inside CUDA: like nccl-tests'
// testStreamSynchronize it polls cudaStreamQuery and ncclCommGetAsyncError,
// so an NCCL error (a dead peer, a network failure) aborts the communicators
// and throws at once, and a watchdog abort() makes it throw on its next poll.
//
// Limits of the abort path: ncclCommAbort frees the communicator. wait() and
// abort() serialize on a mutex, so polling never touches a freed
// communicator; but an operation being enqueued at the moment of the abort
// (ncclAllReduce can block while connecting to peers) may. After abort() the
// process should end (Bootstrap::abort_all), as nccl-tests and PyTorch do.
// Communicator init cannot be aborted (blocking init returns no handle until
// every rank has joined); the device checks are exchanged between ranks first
// so that a rank that cannot start makes every rank fail instead of hang.
#include "collectives/backends/nccl_backend.hpp"

#if !defined(REDLINE_HAVE_NCCL)
#error "nccl_backend.cpp needs REDLINE_HAVE_NCCL (REDLINE_NCCL_CHECK): link redline_kernels built with NCCL"
#endif

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cuda_check.cuh"
#include "kernels/gpu_availability.cuh"

namespace redline {

namespace {

// --- versions -------------------------------------------------------------

// The library loaded at run time, which can be older than the header (a
// python wheel's libnccl first on LD_LIBRARY_PATH). 0 when it cannot say.
int loaded_nccl_version() {
  static const int version = [] {
    int code = 0;
    return ncclGetVersion(&code) == ncclSuccess ? code : 0;
  }();
  return version;
}

// NCCL_VERSION_CODE -> "2.28.9" (codes below 2.9 used one digit for the minor).
std::string version_text(int code) {
  const bool wide = code >= 10000;
  const int major = wide ? code / 10000 : code / 1000;
  const int minor = wide ? (code / 100) % 100 : (code / 100) % 10;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// --- types ----------------------------------------------------------------

std::size_t element_bytes(DataType type) {
  switch (type) {
    case DataType::int8: return 1;
    case DataType::int32: return 4;
    case DataType::float16: return 2;
    case DataType::bfloat16: return 2;
    case DataType::float32: return 4;
    case DataType::float64: return 8;
    case DataType::fp8_e4m3: return 1;
    case DataType::fp8_e5m2: return 1;
  }
  throw std::invalid_argument("nccl backend: unknown DataType");
}

bool is_fp8(DataType type) { return type == DataType::fp8_e4m3 || type == DataType::fp8_e5m2; }

ncclDataType_t to_nccl(DataType type) {
  switch (type) {
    case DataType::int8: return ncclInt8;
    case DataType::int32: return ncclInt32;
    case DataType::float16: return ncclFloat16;
    case DataType::bfloat16: return ncclBfloat16;
    case DataType::float32: return ncclFloat32;
    case DataType::float64: return ncclFloat64;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case DataType::fp8_e4m3: return ncclFloat8e4m3;
    case DataType::fp8_e5m2: return ncclFloat8e5m2;
#else
    case DataType::fp8_e4m3:
    case DataType::fp8_e5m2:
      throw std::invalid_argument("nccl backend: fp8 needs NCCL 2.24+ headers at build time");
#endif
  }
  throw std::invalid_argument("nccl backend: unknown DataType");
}

ncclRedOp_t to_nccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::avg: return ncclAvg;
  }
  throw std::invalid_argument("nccl backend: unknown ReduceOp");
}

// --- host facts for error messages ----------------------------------------

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "unknown-host";
  return name;
}

// " (CUDA_VISIBLE_DEVICES=0,1)", or "" when unset: the usual reason a host
// shows fewer GPUs than it has.
std::string visible_devices_note() {
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  return value == nullptr ? std::string{} : std::string(" (CUDA_VISIBLE_DEVICES=") + value + ")";
}

std::string gpus_text(int first, int count) {
  if (count == 1) return "GPU " + std::to_string(first);
  return "GPUs " + std::to_string(first) + "-" + std::to_string(first + count - 1);
}

std::string count_text(int n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

// What to launch instead, given `visible` GPUs per host and -g `g`.
std::string launch_hint(int visible, int g) {
  const int max_ranks = visible / g;
  if (max_ranks == 0) return "lower -g to at most " + std::to_string(visible);
  std::string hint = "launch at most " + count_text(max_ranks, "rank", "ranks") + " per node";
  if (g == 1) return hint + " or use -g to drive several GPUs per rank";
  return hint + " with -g " + std::to_string(g) + ", or lower -g";
}

// Makes `device` current for a scope and restores the previous one.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      (void)cudaGetLastError();
      previous_ = -1;
    }
    REDLINE_CUDA_CHECK(cudaSetDevice(device));
  }
  ~CurrentDevice() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = -1;
};

// --- start-up status, exchanged between ranks before NCCL init -------------

enum class StartFailure : std::int32_t { none = 0, no_gpu = 1, mapping = 2, other = 3 };

// What each process found, sent to every other: a failure, or the GPUs it
// will drive (PCI bus ids, so two processes of one host that picked the same
// GPU are caught before NCCL's own duplicate-GPU error).
constexpr int kMaxCheckedGpus = 16;
struct StartStatus {
  StartFailure failure = StartFailure::none;
  char text[508] = {};
  char host[64] = {};
  char machine[40] = {};  // this boot of the machine (see machine_key)
  std::int32_t local_rank = 0;
  std::int32_t visible = 0;
  std::int32_t gpus = 0;  // bus ids filled, at most kMaxCheckedGpus
  char bus_ids[kMaxCheckedGpus][16] = {};
};
static_assert(std::is_trivially_copyable_v<StartStatus>, "sent bytewise through the bootstrap");

// Which processes share GPUs: the kernel's boot id, the same for every
// container of one machine and different across machines, even two whose
// host names match; the host name where /proc does not have it.
std::string machine_key() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (in >> id && !id.empty()) return id;
  return "host:" + host_name();
}

void set_failure(StartStatus& status, StartFailure failure, const std::string& text) {
  status.failure = failure;
  const std::size_t n = std::min(text.size(), sizeof status.text - 1);
  std::memcpy(status.text, text.data(), n);
  status.text[n] = '\0';
}

[[noreturn]] void throw_start_failure(StartFailure failure, const std::string& message, bool own) {
  if (failure == StartFailure::mapping) throw GpuMappingError(message);
  // Another rank's missing GPU is an error for this one, not "cannot run here".
  if (failure == StartFailure::no_gpu && own) throw NoUsableGpuError(message);
  throw std::runtime_error(message);
}

// --- the backend ----------------------------------------------------------

struct SplitTag {};

class NcclBackend final : public Backend {
 public:
  // The world communicator: every process of `bootstrap`, g GPUs each.
  NcclBackend(Bootstrap& bootstrap, int gpus_per_process, bool blocking_each_op)
      : blocking_each_op_(blocking_each_op) {
    if (gpus_per_process < 1) {
      throw std::invalid_argument("nccl backend: GPUs per process (-g) must be at least 1, got " +
                                  std::to_string(gpus_per_process));
    }
    try {
      StartStatus mine = prepare_local_gpus(bootstrap, gpus_per_process);
      ncclUniqueId id{};
      if (mine.failure == StartFailure::none && bootstrap.rank() == 0) {
        const ncclResult_t result = ncclGetUniqueId(&id);
        if (result != ncclSuccess) {
          set_failure(mine, StartFailure::other,
                      "host " + host_name() + ": ncclGetUniqueId failed: " + ncclGetErrorString(result));
        }
      }
      throw_if_any_rank_failed(bootstrap, mine);
      bootstrap.broadcast(&id, sizeof id, 0);

      world_ = bootstrap.size() * gpus_per_process;
      for (int i = 0; i < gpus_per_process; ++i) ranks_.push_back(bootstrap.rank() * gpus_per_process + i);
      init_communicators(id);
      barrier_bootstrap_ = &bootstrap;
      // Harness kernels (input fill, L2 flush) run on the current device.
      REDLINE_CUDA_CHECK(cudaSetDevice(devices_.front()));
    } catch (...) {
      teardown();
      throw;
    }
  }

  // A communicator from ncclCommSplit on `device`; takes ownership of `comm`.
  NcclBackend(SplitTag, int device, ncclComm_t comm, bool blocking_each_op, bool fp8_devices,
              std::string fp8_device_reason)
      : devices_{device},
        comms_{comm},
        blocking_each_op_(blocking_each_op),
        fp8_devices_(fp8_devices),
        fp8_device_reason_(std::move(fp8_device_reason)) {
    try {
      int count = 0;
      int rank = 0;
      REDLINE_NCCL_CHECK(ncclCommCount(comm, &count));
      REDLINE_NCCL_CHECK(ncclCommUserRank(comm, &rank));
      world_ = count;
      ranks_ = {rank};
      CurrentDevice current(device);
      streams_.push_back(nullptr);
      REDLINE_CUDA_CHECK(cudaStreamCreateWithFlags(&streams_.back(), cudaStreamNonBlocking));
    } catch (...) {
      teardown();
      throw;
    }
  }

  ~NcclBackend() override { teardown(); }

  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  std::string name() const override { return "nccl"; }
  bool rotates_buffers() const override { return true; }  // as nccl-tests
  int size() const override { return world_; }
  int local_ranks() const override { return static_cast<int>(devices_.size()); }
  int rank(int local) const override { return ranks_.at(checked_local(local, "rank")); }

  // Every op runs on every type NCCL has, but avg on fp8; integer avg is
  // NCCL's sum then division by n, truncated toward zero, which the check expects.
  std::string unsupported_reason(DataType type, ReduceOp op) const override {
    if (!is_fp8(type)) return {};
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 24, 0)
    return "fp8 needs NCCL 2.24+; this binary was built against NCCL " + version_text(NCCL_VERSION_CODE);
#else
    const int loaded = loaded_nccl_version();
    if (loaded < NCCL_VERSION(2, 24, 0)) {
      return "fp8 needs NCCL 2.24+ on sm_90 or newer; the loaded NCCL is " +
             (loaded == 0 ? std::string("of unknown version") : version_text(loaded));
    }
    if (!fp8_devices_) return fp8_device_reason_;
    // NCCL 2.28.3 answers ncclInvalidArgument (seen on an H100), and the
    // error would end the whole run instead of skipping the one series.
    if (op == ReduceOp::avg) return "NCCL has no avg for fp8 (it answers ncclInvalidArgument)";
    return {};
#endif
  }

  void* allocate(int local, std::size_t bytes) override {
    const int i = checked_local(local, "allocate");
    CurrentDevice current(devices_[i]);
    void* ptr = nullptr;
    REDLINE_CUDA_CHECK(cudaMalloc(&ptr, bytes));
    return ptr;
  }

  // Never throws (cleanup paths): a failing free means the context is
  // already broken, and the next checked call reports that.
  void release(int /*local*/, void* ptr) override {
    if (ptr != nullptr && cudaFree(ptr) != cudaSuccess) (void)cudaGetLastError();
  }

  // Synchronous, for setup and verification only. On the local stream, so the
  // copy is ordered after the operations issued there (the stream does not
  // synchronize with the legacy default stream that plain cudaMemcpy uses).
  void copy_in(int local, void* dst, const void* host_src, std::size_t bytes) override {
    copy(local, dst, host_src, bytes, cudaMemcpyHostToDevice, "copy_in");
  }
  void copy_out(int local, void* host_dst, const void* src, std::size_t bytes) override {
    copy(local, host_dst, src, bytes, cudaMemcpyDeviceToHost, "copy_out");
  }

  void group_begin() override {
    REDLINE_NCCL_CHECK(ncclGroupStart());
    ++group_depth_;
  }

  void group_end() override {
    if (group_depth_ == 0) throw std::logic_error("nccl backend: group_end() without group_begin()");
    --group_depth_;
    REDLINE_NCCL_CHECK(ncclGroupEnd());
    if (group_depth_ == 0 && op_in_group_) {
      op_in_group_ = false;
      if (blocking_each_op_) complete_blocking_op();
    }
  }

  void all_reduce(int local, const void* send, void* recv, std::size_t count, DataType type,
                  ReduceOp op) override {
    const int i = begin_op(local, "all_reduce");
    REDLINE_NCCL_CHECK(ncclAllReduce(send, recv, count, to_nccl(type), to_nccl(op), comms_[i], streams_[i]));
    end_op();
  }

  void all_gather(int local, const void* send, void* recv, std::size_t send_count, DataType type) override {
    const int i = begin_op(local, "all_gather");
    REDLINE_NCCL_CHECK(ncclAllGather(send, recv, send_count, to_nccl(type), comms_[i], streams_[i]));
    end_op();
  }

  void reduce_scatter(int local, const void* send, void* recv, std::size_t recv_count, DataType type,
                      ReduceOp op) override {
    const int i = begin_op(local, "reduce_scatter");
    REDLINE_NCCL_CHECK(
        ncclReduceScatter(send, recv, recv_count, to_nccl(type), to_nccl(op), comms_[i], streams_[i]));
    end_op();
  }

  void broadcast(int local, const void* send, void* recv, std::size_t count, DataType type, int root) override {
    const int i = begin_op(local, "broadcast");
    REDLINE_NCCL_CHECK(ncclBroadcast(send, recv, count, to_nccl(type), root, comms_[i], streams_[i]));
    end_op();
  }

  void reduce(int local, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
              int root) override {
    const int i = begin_op(local, "reduce");
    REDLINE_NCCL_CHECK(ncclReduce(send, recv, count, to_nccl(type), to_nccl(op), root, comms_[i], streams_[i]));
    end_op();
  }

  // A send and a receive of count_per_peer elements with every rank (itself
  // included) in one group: what nccl-tests' alltoall runs, and it loads on
  // any NCCL >= 2.7 (ncclAlltoAll only exists from 2.28). Not in-place: with
  // send == recv a block can be overwritten before it is sent (nccl-tests
  // does not check in-place alltoall either).
  void all_to_all(int local, const void* send, void* recv, std::size_t count_per_peer, DataType type) override {
    const int i = begin_op(local, "all_to_all");
    if (count_per_peer > 0) {
      const ncclDataType_t nccl_type = to_nccl(type);
      const std::size_t block = count_per_peer * element_bytes(type);
      const char* send_bytes = static_cast<const char*>(send);
      char* recv_bytes = static_cast<char*>(recv);
      in_nccl_group([&] {
        for (int peer = 0; peer < world_; ++peer) {
          const std::size_t offset = static_cast<std::size_t>(peer) * block;
          REDLINE_NCCL_CHECK(ncclSend(send_bytes + offset, count_per_peer, nccl_type, peer, comms_[i], streams_[i]));
          REDLINE_NCCL_CHECK(ncclRecv(recv_bytes + offset, count_per_peer, nccl_type, peer, comms_[i], streams_[i]));
        }
      });
    }
    end_op();
  }

  void send_recv(int local, const void* send, void* recv, std::size_t count, DataType type, int peer_to,
                 int peer_from) override {
    const int i = begin_op(local, "send_recv");
    const ncclDataType_t nccl_type = to_nccl(type);
    in_nccl_group([&] {
      REDLINE_NCCL_CHECK(ncclSend(send, count, nccl_type, peer_to, comms_[i], streams_[i]));
      REDLINE_NCCL_CHECK(ncclRecv(recv, count, nccl_type, peer_from, comms_[i], streams_[i]));
    });
    end_op();
  }

  bool supports_capture() const override { return true; }

  // Thread-local capture mode, as nccl-tests uses: NCCL may connect peers
  // (and cudaMalloc) during the first captured operation, which global mode
  // forbids, and another thread's CUDA calls must not break the capture.
  void capture_begin() override {
    if (capturing_) throw std::logic_error("nccl backend: capture_begin() while already capturing");
    throw_if_aborted("capture_begin");
    std::size_t begun = 0;
    try {
      for (; begun < streams_.size(); ++begun) {
        CurrentDevice current(devices_[begun]);
        REDLINE_CUDA_CHECK(cudaStreamBeginCapture(streams_[begun], cudaStreamCaptureModeThreadLocal));
      }
    } catch (...) {
      end_captures_discarding(begun);
      throw;
    }
    capturing_ = true;
  }

  // One graph exec per local GPU replaces the previous recording.
  void capture_end() override {
    if (!capturing_) throw std::logic_error("nccl backend: capture_end() without capture_begin()");
    capturing_ = false;
    const std::size_t n = streams_.size();
    std::vector<cudaGraph_t> graphs(n, nullptr);
    cudaError_t failure = cudaSuccess;
    const char* failed_call = nullptr;
    for (std::size_t i = 0; i < n; ++i) {  // end every capture, even after a failure
      const cudaError_t status = cudaStreamEndCapture(streams_[i], &graphs[i]);
      if (status != cudaSuccess && failure == cudaSuccess) {
        failure = status;
        failed_call = "cudaStreamEndCapture";
      }
    }
    destroy_graph_execs();
    if (failure == cudaSuccess) {
      int previous = 0;
      const bool had_previous = cudaGetDevice(&previous) == cudaSuccess;
      graph_execs_.assign(n, nullptr);
      for (std::size_t i = 0; i < n && failure == cudaSuccess; ++i) {
        failure = cudaSetDevice(devices_[i]);
        failed_call = "cudaSetDevice";
        if (failure != cudaSuccess) break;
        failure = cudaGraphInstantiate(&graph_execs_[i], graphs[i], 0);
        failed_call = "cudaGraphInstantiate";
      }
      if (had_previous) (void)cudaSetDevice(previous);
    }
    for (cudaGraph_t graph : graphs) {
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
    }
    if (failure != cudaSuccess) {
      destroy_graph_execs();
      throw_if_cuda_failed(failure, failed_call, __FILE__, __LINE__);
    }
  }

  void replay_capture() override {
    if (graph_execs_.empty()) throw std::logic_error("nccl backend: replay_capture() without a finished capture");
    throw_if_aborted("replay_capture");
    for (std::size_t i = 0; i < graph_execs_.size(); ++i) {
      REDLINE_CUDA_CHECK(cudaGraphLaunch(graph_execs_[i], streams_[i]));
    }
    // -z cannot be recorded (no synchronize during capture): each replay is
    // one blocking step instead.
    if (blocking_each_op_) complete_blocking_op();
  }

  // ncclCommSplit with the parent's config. A negative color is
  // NCCL_SPLIT_NOCOLOR: this rank joins no group and gets nullptr.
  std::unique_ptr<Backend> split(int color, int key) override {
    if (local_ranks() != 1) {
      throw std::logic_error("nccl backend: communicator split (--split) needs one GPU per process; it is not "
                             "supported with -g " + std::to_string(local_ranks()));
    }
    if (capturing_ || group_depth_ != 0) {
      throw std::logic_error("nccl backend: split() inside a group or a graph capture");
    }
    throw_if_aborted("split");
    CurrentDevice current(devices_[0]);
    ncclComm_t child = nullptr;
    REDLINE_NCCL_CHECK(ncclCommSplit(comms_[0], color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, nullptr));
    if (child == nullptr) return nullptr;
    return std::make_unique<NcclBackend>(SplitTag{}, devices_[0], child, blocking_each_op_, fp8_devices_,
                                         fp8_device_reason_);
  }

  void wait() override {
    if (capturing_) throw std::logic_error("nccl backend: wait() during a CUDA graph capture (end the capture first)");
    wait_for_streams();
  }

  // From the watchdog thread. Idempotent.
  void abort() override {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    abort_locked();
  }

 private:
  // Fills devices_, streams_ and the fp8 facts; says why not when this
  // process cannot drive its GPUs.
  StartStatus prepare_local_gpus(const Bootstrap& bootstrap, int g) {
    StartStatus status;
    const int local_rank = bootstrap.local_rank();
    const int local_size = bootstrap.local_size();
    const std::string host = "host " + host_name();
    try {
      int visible = 0;
      const cudaError_t count_status = cudaGetDeviceCount(&visible);
      if (count_status != cudaSuccess || visible == 0) {
        (void)cudaGetLastError();
        const std::string reason = no_usable_gpu_reason(0).value_or("cudaGetDeviceCount found no device");
        set_failure(status, StartFailure::no_gpu,
                    host + ": local rank " + std::to_string(local_rank) + ": " + reason + visible_devices_note());
        return status;
      }

      // Each rank sees only its own GPUs (Slurm --gpus-per-task, Kubernetes
      // device plugins): they are 0..g-1. Otherwise the node-local rank picks.
      const bool bound_per_rank = visible == g && local_size > 1;
      const int first = bound_per_rank ? 0 : local_rank * g;
      const int needed = bound_per_rank ? g : local_size * g;
      const std::string visible_text = std::to_string(visible) + (visible == 1 ? " is" : " are") + " visible" +
                                       visible_devices_note();
      const std::string per_node = count_text(local_size, "local rank", "local ranks") + " x " +
                                   count_text(g, "GPU", "GPUs") + " (-g " + std::to_string(g) + ") need " +
                                   std::to_string(needed);
      if (first + g > visible) {
        set_failure(status, StartFailure::mapping,
                    host + ": local rank " + std::to_string(local_rank) + " of " + std::to_string(local_size) +
                        " needs " + gpus_text(first, g) + " but only " + visible_text + "; " + per_node + ": " +
                        launch_hint(visible, g));
        return status;
      }
      if (needed > visible) {
        set_failure(status, StartFailure::mapping,
                    host + ": " + per_node + " GPUs but only " + visible_text + "; this is local rank " +
                        std::to_string(local_rank) + ": " + launch_hint(visible, g));
        return status;
      }

      fp8_devices_ = true;
      for (int i = 0; i < g; ++i)
        if (const auto reason = open_device(first + i, status)) {
          set_failure(status, StartFailure::no_gpu, host + ": local rank " + std::to_string(local_rank) + ": " + *reason);
          return status;
        }
      const std::string name = host_name();
      std::memcpy(status.host, name.data(), std::min(name.size(), sizeof status.host - 1));
      const std::string machine = machine_key();
      std::memcpy(status.machine, machine.data(), std::min(machine.size(), sizeof status.machine - 1));
      status.local_rank = local_rank;
      status.visible = visible;
    } catch (const std::exception& error) {
      set_failure(status, StartFailure::other, host + ": local rank " + std::to_string(local_rank) + ": " + error.what());
    }
    return status;
  }

  // Makes local GPU `device` one of this process's (its stream, its fp8
  // support, its bus id in `status`), or says why it cannot be used.
  std::optional<std::string> open_device(int device, StartStatus& status) {
    // Current first: since CUDA 12 cudaSetDevice creates the context, and
    // the probe restores the previous device, which would otherwise be 0
    // and put a context on GPU 0 in every rank of the host.
    if (cudaSetDevice(device) != cudaSuccess) (void)cudaGetLastError();  // the probe says why
    if (auto reason = no_usable_gpu_reason(device)) return reason;
    int major = 0;
    int minor = 0;
    REDLINE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    REDLINE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    if (major < 9 && fp8_devices_) {
      fp8_devices_ = false;
      fp8_device_reason_ = "fp8 needs NCCL 2.24+ on sm_90 or newer; GPU " + std::to_string(device) + " is sm_" +
                           std::to_string(major) + std::to_string(minor);
    }
    devices_.push_back(device);
    streams_.push_back(nullptr);
    REDLINE_CUDA_CHECK(cudaStreamCreateWithFlags(&streams_.back(), cudaStreamNonBlocking));
    if (status.gpus < kMaxCheckedGpus) {
      REDLINE_CUDA_CHECK(cudaDeviceGetPCIBusId(status.bus_ids[status.gpus], sizeof status.bus_ids[0], device));
      ++status.gpus;
    }
    return std::nullopt;
  }

  // Collective: every rank learns whether any rank cannot start, and all
  // throw, so none waits forever inside ncclCommInitRank.
  static void throw_if_any_rank_failed(Bootstrap& bootstrap, const StartStatus& mine) {
    const std::vector<char> all = bootstrap.all_gather(&mine, sizeof mine);
    if (mine.failure != StartFailure::none) throw_start_failure(mine.failure, mine.text, true);
    const std::size_t ranks = all.size() / sizeof(StartStatus);
    std::vector<StartStatus> statuses(ranks);
    for (std::size_t r = 0; r < ranks; ++r) {
      StartStatus& theirs = statuses[r];
      std::memcpy(&theirs, all.data() + r * sizeof theirs, sizeof theirs);
      if (theirs.failure != StartFailure::none) {
        throw_start_failure(theirs.failure, "process rank " + std::to_string(r) + " cannot start NCCL: " + theirs.text,
                            false);
      }
    }
    // Every rank runs the same check on the same data, so all throw alike.
    std::map<std::pair<std::string, std::string>, std::size_t> driver_of;  // (machine, bus id) -> rank
    for (std::size_t b = 0; b < ranks; ++b) {
      const StartStatus& y = statuses[b];
      for (int j = 0; j < y.gpus; ++j) {
        const auto [it, fresh] = driver_of.emplace(std::make_pair(std::string(y.machine), std::string(y.bus_ids[j])), b);
        if (fresh) continue;
        const StartStatus& x = statuses[it->second];
        const std::string x_host = x.host, y_host = y.host;
        const std::string who =
            x_host == y_host ? "host " + x_host + ": local ranks " + std::to_string(x.local_rank) + " and " +
                                   std::to_string(y.local_rank)
                             : "host " + x_host + " local rank " + std::to_string(x.local_rank) + " and host " +
                                   y_host + " local rank " + std::to_string(y.local_rank) + " (one machine)";
        throw GpuMappingError(who + " would both drive GPU " + y.bus_ids[j] + " (" + std::to_string(y.visible) +
                              " visible to local rank " + std::to_string(y.local_rank) +
                              "): launch at most one rank per GPU, or give each rank its own GPUs "
                              "(CUDA_VISIBLE_DEVICES, srun --gpus-per-task)");
      }
    }
  }

  // g == 1: one ncclCommInitRank. g > 1: one per local GPU inside a group, as
  // a single thread must initialize several ranks of one communicator.
  void init_communicators(const ncclUniqueId& id) {
    const std::size_t n = devices_.size();
    std::vector<ncclComm_t> comms(n, nullptr);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 1;  // split communicators inherit it
    try {
      if (n == 1) {
        REDLINE_CUDA_CHECK(cudaSetDevice(devices_[0]));
        REDLINE_NCCL_CHECK(ncclCommInitRankConfig(&comms[0], world_, id, ranks_[0], &config));
      } else {
        in_nccl_group([&] {
          for (std::size_t i = 0; i < n; ++i) {
            REDLINE_CUDA_CHECK(cudaSetDevice(devices_[i]));
            REDLINE_NCCL_CHECK(ncclCommInitRankConfig(&comms[i], world_, id, ranks_[i], &config));
          }
        });
      }
    } catch (...) {
      for (ncclComm_t comm : comms) {
        if (comm != nullptr) (void)ncclCommAbort(comm);  // frees a failed init
      }
      throw;
    }
    std::lock_guard<std::mutex> lock(comm_mutex_);
    comms_ = std::move(comms);
  }

  // Runs `issue` (NCCL calls) between ncclGroupStart and ncclGroupEnd, and
  // closes the group when a call throws.
  template <typename Issue>
  static void in_nccl_group(Issue&& issue) {
    REDLINE_NCCL_CHECK(ncclGroupStart());
    try {
      issue();
    } catch (...) {
      (void)ncclGroupEnd();
      throw;
    }
    REDLINE_NCCL_CHECK(ncclGroupEnd());
  }

  int checked_local(int local, const char* what) const {
    if (local < 0 || local >= local_ranks()) {
      throw std::out_of_range(std::string("nccl backend: ") + what + ": local rank " + std::to_string(local) +
                              " out of range (this process drives " + std::to_string(local_ranks()) + ")");
    }
    return local;
  }

  void throw_if_aborted(const char* what) const {
    if (aborted_.load(std::memory_order_acquire)) {
      throw std::runtime_error(std::string("nccl backend: ") + what +
                               ": the NCCL communicator was aborted (watchdog timeout or an NCCL error)");
    }
  }

  int begin_op(int local, const char* what) {
    const int i = checked_local(local, what);
    throw_if_aborted(what);
    // Several GPUs driven from one thread: a call for one of them outside a
    // group would wait for the others, which are not issued yet.
    if (group_depth_ == 0 && local_ranks() > 1) {
      throw std::logic_error(std::string("nccl backend: ") + what + ": with -g " + std::to_string(local_ranks()) +
                             ", issue every local rank's call between group_begin() and group_end()");
    }
    return i;
  }

  void end_op() {
    if (!blocking_each_op_) return;
    if (group_depth_ > 0) {
      op_in_group_ = true;  // completed at the outermost group_end()
    } else {
      complete_blocking_op();
    }
  }

  // nccl-tests' -z: wait for the operation, then barrier every rank. Not
  // while capturing: nothing runs, and a synchronize would break the capture.
  void complete_blocking_op() {
    if (capturing_) return;
    wait_for_streams();
    if (barrier_bootstrap_ != nullptr) barrier_bootstrap_->barrier();
  }

  void wait_for_streams() {
    const std::size_t n = streams_.size();
    std::vector<char> done(n, 0);
    std::size_t remaining = n;
    while (remaining > 0) {
      bool progressed = false;
      for (std::size_t i = 0; i < n; ++i) {
        if (done[i]) continue;
        throw_if_aborted("wait");
        const cudaError_t status = cudaStreamQuery(streams_[i]);
        if (status == cudaSuccess) {
          done[i] = 1;
          --remaining;
          progressed = true;
          continue;
        }
        if (status != cudaErrorNotReady) throw_if_cuda_failed(status, "cudaStreamQuery", __FILE__, __LINE__);
        throw_if_async_error(i);
      }
      if (!progressed) sched_yield();  // leave the CPU to NCCL's proxy threads
    }
  }

  // An asynchronous NCCL error leaves kernels spinning on a peer that will
  // never answer: abort every local communicator (so teardown cannot hang)
  // and report.
  void throw_if_async_error(std::size_t i) {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    throw_if_aborted("wait");
    ncclResult_t async_error = ncclSuccess;
    const ncclResult_t query = ncclCommGetAsyncError(comms_[i], &async_error);
    if (query != ncclSuccess) {
      abort_locked();
      throw NcclError(query, "ncclCommGetAsyncError", __FILE__, __LINE__);
    }
    if (async_error == ncclSuccess || async_error == ncclInProgress) return;
    std::string call = "NCCL operation on rank " + std::to_string(ranks_[i]) + " (asynchronous error";
    const char* detail = ncclGetLastError(comms_[i]);
    if (detail != nullptr && detail[0] != '\0') call += std::string(": ") + detail;
    call += "; communicators aborted)";
    abort_locked();
    throw NcclError(async_error, call.c_str(), __FILE__, __LINE__);
  }

  void abort_locked() noexcept {
    if (aborted_.exchange(true, std::memory_order_acq_rel)) return;
    for (ncclComm_t comm : comms_) {
      if (comm != nullptr) (void)ncclCommAbort(comm);
    }
  }

  void copy(int local, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, const char* what) {
    const int i = checked_local(local, what);
    if (capturing_) throw std::logic_error(std::string("nccl backend: ") + what + " during a CUDA graph capture");
    if (bytes == 0) return;
    CurrentDevice current(devices_[i]);
    REDLINE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, streams_[i]));
    REDLINE_CUDA_CHECK(cudaStreamSynchronize(streams_[i]));
  }

  void end_captures_discarding(std::size_t count) noexcept {
    for (std::size_t i = 0; i < count && i < streams_.size(); ++i) {
      cudaGraph_t graph = nullptr;
      if (cudaStreamEndCapture(streams_[i], &graph) == cudaSuccess && graph != nullptr) (void)cudaGraphDestroy(graph);
    }
    (void)cudaGetLastError();
  }

  void destroy_graph_execs() noexcept {
    for (cudaGraphExec_t exec : graph_execs_) {
      if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    }
    graph_execs_.clear();
  }

  // Never throws. Communicators with work still queued (an exception left an
  // operation unfinished) are aborted: ncclCommDestroy would wait for it.
  void teardown() noexcept {
    if (capturing_) {
      end_captures_discarding(streams_.size());
      capturing_ = false;
    }
    destroy_graph_execs();
    {
      // Under the lock, so a watchdog abort cannot free the communicators
      // between the check and the group's end.
      std::lock_guard<std::mutex> lock(comm_mutex_);
      while (group_depth_ > 0) {  // an exception inside a group left it open
        // After an abort the group's communicators are freed: ending the
        // group would launch onto them. The process ends after an abort.
        if (!aborted_.load(std::memory_order_acquire)) (void)ncclGroupEnd();
        --group_depth_;
      }
    }
    {
      std::lock_guard<std::mutex> lock(comm_mutex_);
      if (!aborted_.load(std::memory_order_acquire)) {
        bool idle = true;
        for (cudaStream_t stream : streams_) {
          if (stream != nullptr && cudaStreamQuery(stream) != cudaSuccess) idle = false;
        }
        for (ncclComm_t comm : comms_) {
          if (comm == nullptr) continue;
          if (idle) {
            (void)ncclCommDestroy(comm);
          } else {
            (void)ncclCommAbort(comm);
          }
        }
      }
      aborted_.store(true, std::memory_order_release);  // a late abort() finds nothing to do
      comms_.clear();
    }
    for (cudaStream_t stream : streams_) {
      if (stream != nullptr) (void)cudaStreamDestroy(stream);
    }
    streams_.clear();
    (void)cudaGetLastError();
  }

  std::vector<int> devices_;                   // CUDA device of each local rank
  std::vector<int> ranks_;                     // global rank of each local rank
  std::vector<cudaStream_t> streams_;          // one non-blocking stream per local rank
  std::vector<ncclComm_t> comms_;              // set under comm_mutex_; abort() frees them
  std::vector<cudaGraphExec_t> graph_execs_;   // the last capture, one per local rank
  Bootstrap* barrier_bootstrap_ = nullptr;     // -z barrier; world communicator only
  int world_ = 0;
  bool blocking_each_op_ = false;
  bool fp8_devices_ = false;                   // every local GPU is sm_90 or newer
  std::string fp8_device_reason_;
  int group_depth_ = 0;
  bool op_in_group_ = false;                   // -z: an operation waits for group_end()
  bool capturing_ = false;
  std::mutex comm_mutex_;                      // polling vs abort(): never touch a freed comm
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(Bootstrap& bootstrap, int gpus_per_process, bool blocking_each_op) {
  return std::make_unique<NcclBackend>(bootstrap, gpus_per_process, blocking_each_op);
}

std::string nccl_version_string() {
  const int code = loaded_nccl_version();
  return code == 0 ? std::string("unknown") : version_text(code);
}

}  // namespace redline
