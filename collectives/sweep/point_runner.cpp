#include "collectives/sweep/point_runner.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "collectives/ops/verify.hpp"
#include "harness/core/clock.hpp"
#include "harness/measure/measurement.hpp"

namespace redline {
namespace {

struct Pointers {
  const void* send;
  void* recv;
};

// Operation `iteration` works on the buffers shifted by a whole point's
// bytes, cycling through as many such slots as the buffers (sized for the
// sweep's largest point) hold, as nccl-tests does: a small point is not timed
// from cache. Checks use iteration 0. Only backends whose peer does the same
// rotate (Backend::rotates_buffers).
std::size_t rotation_shift(const CollectiveBuffers& buffers, const CollectiveCounts& counts, std::size_t element_bytes,
                           int iteration) {
  if (!buffers.rotates()) return 0;
  const std::size_t point_bytes = std::max(counts.send_count, counts.recv_count) * element_bytes;
  if (point_bytes == 0) return 0;
  const std::size_t slots = std::max<std::size_t>(1, buffers.bytes() / point_bytes);
  return point_bytes * (static_cast<std::size_t>(iteration) % slots);
}

Pointers pointers_for(const CollectiveBuffers& buffers, int local, const CollectiveCounts& counts, int rank,
                      std::size_t element_bytes, bool in_place, int iteration = 0) {
  const std::size_t shift = rotation_shift(buffers, counts, element_bytes, iteration);
  char* recv = static_cast<char*>(buffers.recv(local)) + shift;
  if (!in_place) return {static_cast<const char*>(buffers.send(local)) + shift, recv};
  return {recv + counts.send_inplace_offset * static_cast<std::size_t>(rank) * element_bytes,
          recv + counts.recv_inplace_offset * static_cast<std::size_t>(rank) * element_bytes};
}

// One operation on every local rank: a group when this process drives
// several, a plain call when it drives one, as nccl-tests does, so the two
// time the same NCCL calls.
void run_once(Backend& backend, const Collective& collective, const CollectiveBuffers& buffers,
              const CollectiveCounts& counts, const CollectiveCase& c, bool in_place, int iteration) {
  const std::size_t element = info(c.type).bytes;
  const bool group = backend.local_ranks() > 1;
  if (group) backend.group_begin();
  for (int local = 0; local < backend.local_ranks(); ++local) {
    const Pointers p = pointers_for(buffers, local, counts, backend.rank(local), element, in_place, iteration);
    collective.run(backend, local, p.send, p.recv, counts, c);
  }
  if (group) backend.group_end();
}

// Fresh input on every local rank: an in-place run overwrites its input.
// `check_faults`: for a check, told of each input before it is sent.
void load_inputs(Backend& backend, CollectiveBuffers& buffers, const CollectiveCounts& counts, const CollectiveCase& c,
                 bool in_place, FaultHooks* check_faults = nullptr) {
  const std::size_t element = info(c.type).bytes;
  for (int local = 0; local < backend.local_ranks(); ++local) {
    const int rank = backend.rank(local);
    const Pointers p = pointers_for(buffers, local, counts, rank, element, in_place);
    void* send = const_cast<void*>(p.send);
    char* host = buffers.host_side(send);
    fill_input(host, counts.send_count, c.type, rank, c);
    if (check_faults) check_faults->after_check_input(host, counts.send_count, c.type);
    backend.copy_in(local, send, host, counts.send_count * element);
  }
}

// What every timing loop of a point shares.
struct PointRun {
  Backend& backend;
  const Collective& collective;
  CollectiveBuffers& buffers;
  const CollectiveCounts& counts;
  const CollectiveCase& c;
  bool in_place;
  const PointSettings& settings;
  FaultHooks& faults;

  void once(int iteration) const { run_once(backend, collective, buffers, counts, c, in_place, iteration); }
  void timed(int iteration) const {
    faults.before_timed_operation();
    once(iteration);
  }
  void sync_ranks() const {
    if (settings.sync_ranks) settings.sync_ranks();
  }
};

// The harness's policy for the samples of one operation each: exactly -n on
// every rank. No noise stop, time cap or Ctrl-C may end them early: a rank
// that stopped would leave the others waiting in an operation it never
// joins (Ctrl-C is acted on between points, where the ranks agree on it).
MeasurementPolicy every_rank_policy(int iterations) {
  MeasurementPolicy policy = fixed_count_policy(iterations);
  policy.stops_on_interrupt = false;
  return policy;
}

// --per-iter: a wait after each operation, so the samples show the spread,
// at the cost of the pipelining that back-to-back operations get.
void time_each_operation(const PointRun& run, PointMeasurement& m) {
  const double start = steady_seconds();
  double end = start;
  int i = 0;
  const Measurement samples = measure(every_rank_policy(run.settings.iterations), [&] {
    const double t0 = steady_seconds();
    run.timed(i++);
    run.backend.wait();
    end = steady_seconds();
    return end - t0;
  });
  m.samples_seconds = samples.samples;
  m.seconds_per_operation = (end - start) / run.settings.iterations;
}

// -G: the iterations captured once, the capture replayed.
void time_graph_replays(const PointRun& run, PointMeasurement& m) {
  run.backend.capture_begin();
  for (int i = 0; i < run.settings.iterations; ++i) run.once(i);
  run.backend.capture_end();
  // As nccl-tests: the ranks meet, then the clock runs from the first
  // launch (which also uploads the graph) to the last replay's end.
  run.sync_ranks();
  const double start = steady_seconds();
  for (int g = 0; g < run.settings.graph_replays; ++g) run.backend.replay_capture();
  run.backend.wait();
  m.seconds_per_operation =
      (steady_seconds() - start) / (static_cast<double>(run.settings.iterations) * run.settings.graph_replays);
}

void time_back_to_back(const PointRun& run, PointMeasurement& m) {
  const double start = steady_seconds();
  for (int i = 0; i < run.settings.iterations; ++i) run.timed(i);
  run.backend.wait();
  m.seconds_per_operation = (steady_seconds() - start) / run.settings.iterations;
}

// --per-rank: how long this rank spends inside one operation, waited for each.
void time_arrival(const PointRun& run, PointMeasurement& m) {
  int i = 0;
  const Measurement inside = measure(every_rank_policy(run.settings.iterations), [&] {
    run.faults.before_timed_operation();
    const double t0 = steady_seconds();
    run.once(i++);
    run.backend.wait();
    return steady_seconds() - t0;
  });
  // Summed in the order measured (Summary::mean sums them sorted).
  m.seconds_in_operation =
      std::accumulate(inside.samples.begin(), inside.samples.end(), 0.0) / run.settings.iterations;
}

// -c: each check on fresh data, every local rank's result counted.
void check_results(const PointRun& run, PointMeasurement& m) {
  Backend& backend = run.backend;
  const std::size_t element = info(run.c.type).bytes;
  const std::size_t recv_bytes = run.counts.recv_count * element;
  m.checked = true;
  for (int k = 0; k < run.settings.check_iterations; ++k) {
    // The timed runs left correct results behind: an operation that writes
    // nothing must not pass. Poison the whole receive buffer, then load the
    // input (in place, the input block sits inside it).
    for (int local = 0; local < backend.local_ranks(); ++local) {
      char* host = run.buffers.host_side(run.buffers.recv(local));
      fill_poison(host, run.counts.recv_count, run.c.type);
      backend.copy_in(local, run.buffers.recv(local), host, recv_bytes);
    }
    load_inputs(backend, run.buffers, run.counts, run.c, run.in_place, &run.faults);
    run.once(0);
    backend.wait();
    for (int local = 0; local < backend.local_ranks(); ++local) {
      const int rank = backend.rank(local);
      const Pointers p = pointers_for(run.buffers, local, run.counts, rank, element, run.in_place);
      char* host = run.buffers.host_side(p.recv);
      backend.copy_out(local, host, p.recv, recv_bytes);
      m.wrong += count_wrong(host, run.counts.recv_count, run.c.type, run.collective, run.counts, run.c, rank);
    }
  }
}

}  // namespace

CollectiveBuffers::CollectiveBuffers(Backend& backend, const Collective& collective, std::size_t max_count,
                                     DataType type)
    : backend_(backend) {
  const CollectiveCounts counts = collective.counts(max_count, backend.size(), info(type).bytes);
  // In-place layouts put both sides in the receive buffer, so each buffer
  // holds the larger of the two.
  const std::size_t bytes = std::max<std::size_t>(1, std::max(counts.send_count, counts.recv_count)) * info(type).bytes;
  bytes_ = bytes;
  rotates_ = backend.rotates_buffers();
  try {
    for (int local = 0; local < backend.local_ranks(); ++local) {
      send_.push_back(backend.allocate(local, bytes));
      recv_.push_back(backend.allocate(local, bytes));
    }
    if (!backend.host_addressable()) staging_.resize(bytes);
  } catch (...) {
    release_all();  // the destructor does not run when the constructor throws
    throw;
  }
}

CollectiveBuffers::~CollectiveBuffers() { release_all(); }

void CollectiveBuffers::release_all() noexcept {
  for (std::size_t i = 0; i < send_.size(); ++i) backend_.release(static_cast<int>(i), send_[i]);
  for (std::size_t i = 0; i < recv_.size(); ++i) backend_.release(static_cast<int>(i), recv_[i]);
  send_.clear();
  recv_.clear();
}

void warm_up_series(Backend& backend, const Collective& collective, CollectiveBuffers& buffers,
                    std::size_t min_count, std::size_t max_count, const CollectiveCase& c, int iterations) {
  if (iterations <= 0) return;
  const std::size_t element = info(c.type).bytes;
  // Real inputs, not whatever the allocation held: NaN or denormal garbage
  // can slow a host reduction down.
  load_inputs(backend, buffers, collective.counts(max_count, backend.size(), element), c, false);
  for (std::size_t count = std::max<std::size_t>(min_count, 1); count <= max_count; count *= 2) {
    const CollectiveCounts counts = collective.counts(count, backend.size(), element);
    if (counts.param_count == 0) continue;  // under one element per rank: the sweep skips it too
    for (int i = 0; i < iterations; ++i) run_once(backend, collective, buffers, counts, c, false, i);
    backend.wait();
  }
}

PointMeasurement measure_point(Backend& backend, const Collective& collective, CollectiveBuffers& buffers,
                               std::size_t count, const CollectiveCase& c, bool in_place, const PointSettings& settings,
                               FaultHooks& faults) {
  const CollectiveCounts counts = collective.counts(count, backend.size(), info(c.type).bytes);
  const PointRun run{backend, collective, buffers, counts, c, in_place, settings, faults};
  PointMeasurement m;
  load_inputs(backend, buffers, counts, c, in_place);

  for (int i = 0; i < settings.warmup_iterations; ++i) run.once(i);
  backend.wait();
  // Whatever -w says, one operation completes and the ranks meet before the
  // clock starts (nccl-tests does the same): the first timed operation then
  // pays no lazy connection setup and starts on every rank together.
  run.once(0);
  backend.wait();
  run.sync_ranks();

  if (settings.per_iteration)
    time_each_operation(run, m);
  else if (settings.graph_replays > 0 && backend.supports_capture())
    time_graph_replays(run, m);
  else
    time_back_to_back(run, m);
  if (settings.arrival_pass) time_arrival(run, m);
  // NCCL leaves in-place alltoall and sendrecv undefined: timed, not checked.
  if (settings.check_iterations > 0 && (!in_place || collective.in_place_result_defined())) check_results(run, m);
  return m;
}

}  // namespace redline
