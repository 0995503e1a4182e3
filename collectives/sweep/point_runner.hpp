// Measures one point of a collective sweep on this rank, nccl-tests style:
// warm-up, one operation and a barrier, then a host clock around -n
// back-to-back operations and one wait (or -G graph replays of them), each
// on buffers shifted through the space the largest point needs (backends
// that rotate), then -c checked runs on fresh data. The
// tool combines the ranks' results; this file only measures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "collectives/backends/backend.hpp"
#include "collectives/ops/collective.hpp"
#include "collectives/faults/fault_hooks.hpp"

namespace redline {

struct PointSettings {
  int warmup_iterations = 5;   // -w
  int iterations = 20;         // -n
  int check_iterations = 1;    // -c (0: no check)
  int graph_replays = 0;       // -G (0: no CUDA graph)
  bool per_iteration = false;  // --per-iter: a wait after every operation, one sample each
  // --per-rank: after the timed loop, a pass with a wait after each operation
  // that records how long this rank spends inside one. The rank that arrives
  // last spends the least: the others wait for it there.
  bool arrival_pass = false;
  // A barrier of every rank, called right before the clock starts (nccl-tests'
  // Barrier): no rank starts timing while another is still setting up.
  std::function<void()> sync_ranks;
};

// Buffers for one collective, sized for the largest point: in-place runs
// use the receive buffer as nccl-tests does (send = recv + offset x rank).
class CollectiveBuffers {
 public:
  CollectiveBuffers(Backend& backend, const Collective& collective, std::size_t max_count, DataType type);
  ~CollectiveBuffers();
  CollectiveBuffers(const CollectiveBuffers&) = delete;
  CollectiveBuffers& operator=(const CollectiveBuffers&) = delete;

  void* send(int local) const { return send_[local]; }
  void* recv(int local) const { return recv_[local]; }
  std::size_t bytes() const { return bytes_; }  // of each buffer
  bool rotates() const { return rotates_; }      // Backend::rotates_buffers
  // Where this process writes the input for, or reads the result from,
  // `buffer`: the buffer itself when the backend's memory is host memory
  // (Backend::host_addressable), else one staging buffer of bytes() that
  // copy_in and copy_out move through. The staging buffer is allocated with
  // the others, so running out of memory is found here, before any point.
  char* host_side(void* buffer) { return staging_.empty() ? static_cast<char*>(buffer) : staging_.data(); }

 private:
  void release_all() noexcept;
  Backend& backend_;
  std::vector<void*> send_, recv_;
  std::vector<char> staging_;
  std::size_t bytes_ = 0;
  bool rotates_ = false;
};

struct PointMeasurement {
  double seconds_per_operation = 0;     // this rank: host time of the timed loop / operations
  std::vector<double> samples_seconds;  // --per-iter: one per operation
  double seconds_in_operation = 0;      // --per-rank: mean time inside one operation
  std::uint64_t wrong = 0;              // elements that failed verification, all checks, all local ranks
  bool checked = false;
};

// nccl-tests' warm-up, before a series is timed: `iterations` out-of-place
// operations at every size from min_count to max_count elements, doubling,
// and a wait after each size. The first sizes are then timed on a GPU (or a
// host) already running at speed, not one ramping up from idle.
void warm_up_series(Backend& backend, const Collective& collective, CollectiveBuffers& buffers,
                    std::size_t min_count, std::size_t max_count, const CollectiveCase& c, int iterations);

// Runs one point. `in_place` selects NCCL's in-place layout. `faults` is
// called before every timed operation and after each check's input is written.
PointMeasurement measure_point(Backend& backend, const Collective& collective, CollectiveBuffers& buffers,
                               std::size_t count, const CollectiveCase& c, bool in_place, const PointSettings& settings,
                               FaultHooks& faults = no_faults());

}  // namespace redline
