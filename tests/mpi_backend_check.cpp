// Runs every Backend operation of the MPI host backend, out-of-place and
// in-place, for every type and op, and checks each rank's result against
// values computed here from the operation's definition. Run under mpirun
// (-np 2 and -np 4 in ctest). Prints "N passed, M failed" (checks summed
// over ranks) on rank 0; exits 1 when any check failed on any rank.
//
// With the argument "abort": rank 0 never joins an all_reduce the others
// wait in, and a second thread on the others calls Backend::abort after a
// second, as the watchdog would. The whole job must end (mpirun exits
// non-zero) instead of hanging.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collectives/backends/backend.hpp"
#include "collectives/bootstrap/bootstrap.hpp"
#include "collectives/ops/data_type.hpp"
#include "collectives/backends/host_backend.hpp"

namespace redline {
namespace {

using Bytes = std::vector<unsigned char>;

// Inputs whose every partial result is exact in every type (fp8 e4m3 holds
// integers up to 16, e5m2 up to 8): small positive integers for sum and avg,
// +-1 and 2 for prod, [-4, 4] for max and min. Differs by rank and index.
double input(int rank, std::size_t i, DataType type, ReduceOp op) {
  const auto k = static_cast<long long>(i) + 3LL * rank;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return 1.0 + static_cast<double>(k % (type == DataType::fp8_e5m2 ? 2 : 4));
    case ReduceOp::prod: return k % 3 == 0 ? 2.0 : (k % 3 == 1 ? -1.0 : 1.0);
    case ReduceOp::max:
    case ReduceOp::min: return static_cast<double>((rank * 7LL + static_cast<long long>(i) * 3) % 9) - 4.0;
  }
  return 0;
}

double reduced(int nranks, std::size_t i, DataType type, ReduceOp op, const std::function<double(int)>& value) {
  double acc = value(0);
  for (int r = 1; r < nranks; ++r) {
    const double v = value(r);
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg: acc += v; break;
      case ReduceOp::prod: acc *= v; break;
      case ReduceOp::max: acc = std::max(acc, v); break;
      case ReduceOp::min: acc = std::min(acc, v); break;
    }
  }
  (void)i;
  if (op != ReduceOp::avg) return acc;
  // NCCL's average: rounded once for floating types, truncated toward zero for integers.
  return info(type).is_floating ? round_to_type(acc / nranks, type) : std::trunc(acc / nranks);
}

Bytes make(DataType type, std::size_t count, const std::function<double(std::size_t)>& value) {
  Bytes b(count * info(type).bytes);
  for (std::size_t i = 0; i < count; ++i) store_element(b.data(), type, i, value(i));
  return b;
}

class Checks {
 public:
  explicit Checks(int world_rank) : world_rank_(world_rank) {}

  void record(bool ok, const std::string& what, const std::string& detail = "") {
    if (ok) {
      ++passed_;
      return;
    }
    ++failed_;
    std::fprintf(stderr, "FAILED on rank %d: %s%s%s\n", world_rank_, what.c_str(), detail.empty() ? "" : ": ",
                 detail.c_str());
  }

  // recv[offset + i] == expected(i) for i < count (exact; avg within the type's tolerance).
  void expect(const std::string& what, const Bytes& got, DataType type, std::size_t offset, std::size_t count,
              const std::function<double(std::size_t)>& expected, bool tolerant = false) {
    std::string detail;
    for (std::size_t i = 0; i < count && detail.empty(); ++i) {
      const double g = load_element(got.data(), type, offset + i);
      const double e = expected(i);
      const bool ok = tolerant ? std::fabs(g - e) <= info(type).tolerance * std::fabs(e) + 1e-12 : g == e;
      if (!ok || std::isnan(g))
        detail = "element " + std::to_string(offset + i) + " is " + std::to_string(g) + ", expected " +
                 std::to_string(e);
    }
    record(detail.empty(), what, detail);
  }

  template <typename F>
  void expect_throw(const std::string& what, F f) {
    try {
      f();
    } catch (const std::exception& e) {
      record(true, what);
      return;
    }
    record(false, what, "no exception");
  }

  int passed() const { return passed_; }
  int failed() const { return failed_; }

 private:
  int world_rank_;
  int passed_ = 0, failed_ = 0;
};

// Backend buffers filled from and read back into host vectors.
class Buffer {
 public:
  Buffer(Backend& b, std::size_t bytes) : b_(b), bytes_(bytes), p_(b.allocate(0, bytes)) {}
  ~Buffer() { b_.release(0, p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void set(const Bytes& host) { b_.copy_in(0, p_, host.data(), host.size()); }
  Bytes get() const {
    Bytes host(bytes_);
    b_.copy_out(0, host.data(), p_, bytes_);
    return host;
  }
  char* at(std::size_t byte_offset) const { return static_cast<char*>(p_) + byte_offset; }

 private:
  Backend& b_;
  std::size_t bytes_;
  void* p_;
};

void check_backend(Backend& b, Checks& checks, const std::string& label, std::size_t count) {
  const int n = b.size();
  const int me = b.rank(0);
  const int root = 1 % n;
  const std::vector<DataType> types = {DataType::int8,    DataType::int32,    DataType::float32,  DataType::float64,
                                       DataType::float16, DataType::bfloat16, DataType::fp8_e4m3, DataType::fp8_e5m2};
  const std::vector<ReduceOp> ops = {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg};

  checks.record(b.name() == "host" && b.local_ranks() == 1, label + " name/local_ranks");
  {
    Buffer a(b, 100);
    checks.record(reinterpret_cast<std::uintptr_t>(a.at(0)) % 64 == 0, label + " 64-byte alignment");
  }

  for (const DataType type : types) {
    const std::size_t es = info(type).bytes;
    const std::string tname(info(type).name);
    for (const ReduceOp op : ops) {
      const std::string oname(to_string(op));
      if (!b.supports(type, op)) {
        checks.record(false, label + " supports " + tname + " " + oname);  // every type and op is supported
        checks.expect_throw(label + " all_reduce " + tname + " " + oname + " refused", [&] {
          Buffer x(b, count * es);
          b.all_reduce(0, x.at(0), x.at(0), count, type, op);
        });
        continue;
      }
      const bool tolerant = op == ReduceOp::avg;
      auto v = [&](int r, std::size_t i) { return input(r, i, type, op); };
      const Bytes mine = make(type, count, [&](std::size_t i) { return v(me, i); });
      const Bytes all_mine = make(type, count * n, [&](std::size_t i) { return v(me, i); });

      for (const bool in_place : {false, true}) {
        const std::string how = in_place ? " in-place" : " out-of-place";
        const std::string tag = label + " " + tname + " " + oname + how;
        // all_reduce
        {
          const std::string what = "all_reduce " + tag;
          Buffer s(b, count * es), r(b, count * es);
          s.set(mine);
          b.all_reduce(0, s.at(0), in_place ? s.at(0) : r.at(0), count, type, op);
          b.wait();
          checks.expect(what, in_place ? s.get() : r.get(), type, 0, count,
                        [&](std::size_t i) { return reduced(n, i, type, op, [&](int q) { return v(q, i); }); },
                        tolerant);
          if (!in_place) checks.record(s.get() == mine, what + " leaves send");
        }
        // reduce_scatter: our block is element rank*count.. of the reduced array
        {
          const std::string what = "reduce_scatter " + tag;
          Buffer s(b, count * n * es), r(b, count * es);
          s.set(all_mine);
          char* out = in_place ? s.at(static_cast<std::size_t>(me) * count * es) : r.at(0);
          b.reduce_scatter(0, s.at(0), out, count, type, op);
          Bytes got(count * es);
          std::memcpy(got.data(), out, got.size());
          checks.expect(what, got, type, 0, count, [&](std::size_t i) {
            const std::size_t j = static_cast<std::size_t>(me) * count + i;
            return reduced(n, j, type, op, [&](int q) { return v(q, j); });
          }, tolerant);
          if (!in_place) checks.record(s.get() == all_mine, what + " leaves send");
        }
        // reduce to root
        {
          const std::string what = "reduce " + tag + " root " + std::to_string(root);
          Buffer s(b, count * es), r(b, count * es);
          s.set(mine);
          b.reduce(0, s.at(0), in_place ? s.at(0) : r.at(0), count, type, op, root);
          if (me == root)
            checks.expect(what, in_place ? s.get() : r.get(), type, 0, count,
                          [&](std::size_t i) { return reduced(n, i, type, op, [&](int q) { return v(q, i); }); },
                          tolerant);
          if (!in_place) checks.record(s.get() == mine, what + " leaves send");
        }
      }
    }

    // Operations without a reduction, with the sum pattern.
    auto v = [&](int r, std::size_t i) { return input(r, i, type, ReduceOp::sum) * (r % 2 ? -1 : 1); };
    const Bytes mine = make(type, count, [&](std::size_t i) { return v(me, i); });
    for (const bool in_place : {false, true}) {
      const std::string tag = label + " " + tname + (in_place ? " in-place" : " out-of-place");
      {
        const std::string what = "all_gather " + tag;
        Buffer s(b, count * es), r(b, count * n * es);
        const Bytes filler = make(type, count * n, [](std::size_t) { return 3.0; });
        r.set(filler);
        char* send = in_place ? r.at(static_cast<std::size_t>(me) * count * es) : s.at(0);
        std::memcpy(send, mine.data(), mine.size());
        b.all_gather(0, send, r.at(0), count, type);
        const Bytes got = r.get();
        for (int q = 0; q < n; ++q)
          checks.expect(what + " block " + std::to_string(q), got, type, static_cast<std::size_t>(q) * count, count,
                        [&](std::size_t i) { return v(q, i); });
        if (!in_place) checks.record(s.get() == mine, what + " leaves send");
      }
      {
        const std::string what = "broadcast " + tag + " root " + std::to_string(root);
        Buffer s(b, count * es), r(b, count * es);
        s.set(mine);
        r.set(make(type, count, [](std::size_t) { return 3.0; }));
        b.broadcast(0, s.at(0), in_place ? s.at(0) : r.at(0), count, type, root);
        checks.expect(what, in_place ? s.get() : r.get(), type, 0, count, [&](std::size_t i) { return v(root, i); });
        if (!in_place) checks.record(s.get() == mine, what + " leaves send");
      }
      {
        // Block p of our input goes to rank p; block q of our output came from rank q.
        const std::string what = "all_to_all " + tag;
        const Bytes blocks = make(type, count * n, [&](std::size_t i) { return v(me, i); });
        Buffer s(b, count * n * es), r(b, count * n * es);
        s.set(blocks);
        b.all_to_all(0, s.at(0), in_place ? s.at(0) : r.at(0), count, type);
        const Bytes got = in_place ? s.get() : r.get();
        for (int q = 0; q < n; ++q)
          checks.expect(what + " block " + std::to_string(q), got, type, static_cast<std::size_t>(q) * count, count,
                        [&](std::size_t i) { return v(q, static_cast<std::size_t>(me) * count + i); });
        if (!in_place) checks.record(s.get() == blocks, what + " leaves send");
      }
      {
        const std::string what = "send_recv ring " + tag;
        const int to = (me + 1) % n, from = (me + n - 1) % n;
        Buffer s(b, count * es), r(b, count * es);
        s.set(mine);
        b.send_recv(0, s.at(0), in_place ? s.at(0) : r.at(0), count, type, to, from);
        checks.expect(what, in_place ? s.get() : r.get(), type, 0, count, [&](std::size_t i) { return v(from, i); });
        if (!in_place) checks.record(s.get() == mine, what + " leaves send");
      }
    }
  }

  checks.expect_throw(label + " local rank 1 refused", [&] { b.rank(1); });
  checks.expect_throw(label + " peer out of range refused", [&] {
    Buffer x(b, 4);
    b.send_recv(0, x.at(0), x.at(0), 1, DataType::int32, n, 0);
  });
  b.wait();
}

int abort_from_another_thread(Bootstrap& bootstrap) {
  auto backend = make_host_backend(bootstrap);
  if (bootstrap.rank() == 0) {
    std::this_thread::sleep_for(std::chrono::seconds(120));
    return 0;
  }
  std::thread watchdog([&] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::fprintf(stderr, "rank %d: aborting the hung all_reduce from another thread\n", bootstrap.rank());
    backend->abort();
  });
  float x = 1;
  backend->all_reduce(0, &x, &x, 1, DataType::float32, ReduceOp::sum);  // never completes
  watchdog.join();
  return 0;
}

int run(int argc, char** argv) {
  auto bootstrap = make_mpi_bootstrap(&argc, &argv);
  if (argc > 1 && std::string(argv[1]) == "abort") return abort_from_another_thread(*bootstrap);
  const int rank = bootstrap->rank(), size = bootstrap->size();
  Checks checks(rank);
  checks.record(bootstrap->kind() == "mpi", "bootstrap kind");
  checks.record(bootstrap->local_rank() >= 0 && bootstrap->local_rank() < bootstrap->local_size(),
                "bootstrap local rank");
  {
    auto world = make_host_backend(*bootstrap);
    checks.record(world->size() == size && world->rank(0) == rank, "world size and rank");
    check_backend(*world, checks, "[world]", 37);
    check_backend(*world, checks, "[world, 1 element]", 1);

    // Messages beyond the per-call limit: split calls and derived datatypes.
    HostBackendOptions small;
    small.max_count_per_call = 7;
    auto chunked = make_host_backend(*bootstrap, small);
    check_backend(*chunked, checks, "[max 7 per call]", 37);

    // Communicators of even and odd ranks, ordered by rank.
    auto half = world->split(rank % 2, rank);
    const int expect_size = size / 2 + (rank % 2 == 0 ? size % 2 : 0);
    checks.record(half && half->size() == expect_size && half->rank(0) == rank / 2, "split(rank % 2) size and rank");
    if (half) check_backend(*half, checks, "[split rank%2]", 37);

    // A negative color takes no part.
    auto without_first = world->split(rank == 0 ? -1 : 0, rank);
    checks.record(rank == 0 ? !without_first : (without_first && without_first->size() == size - 1),
                  "split without rank 0");
    if (without_first) check_backend(*without_first, checks, "[split without rank 0]", 5);
  }

  const int mine[2] = {checks.passed(), checks.failed()};
  const auto all = bootstrap->all_gather(mine, sizeof mine);
  int passed = 0, failed = 0;
  for (int r = 0; r < size; ++r) {
    int theirs[2];
    std::memcpy(theirs, all.data() + r * sizeof theirs, sizeof theirs);
    passed += theirs[0];
    failed += theirs[1];
  }
  if (rank == 0) {
    std::printf("host backend on %d ranks (MPI_THREAD_MULTIPLE: %s)\n", size, mpi_thread_multiple() ? "yes" : "no");
    std::printf("%d passed, %d failed\n", passed, failed);
    std::fflush(stdout);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace redline

int main(int argc, char** argv) {
  try {
    return redline::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_backend_check: %s\n", e.what());
    return 2;
  }
}
