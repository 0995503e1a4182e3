// The MPI host backend in one process (MPI's singleton mode, no mpirun):
// the element reductions behind its user-defined MPI operations (rounding
// to nearest even, saturation, NaN), every operation on a world of one,
// in-place and split forms, the errors it gives, and the MPI bootstrap's
// refusal to run a launched rank alone. Multi-rank results are checked by
// mpi_backend_check under mpirun.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/ops/data_type.hpp"
#include "collectives/backends/host_backend.hpp"
#include "collectives/bootstrap/single_bootstrap.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

// ---------------------------------------------------------------------------
// host_reduce_elements: no MPI needed

// in op inout for one element of `type`, as the MPI operation computes it.
double reduce_one(DataType type, ReduceOp op, double in, double inout) {
  std::vector<unsigned char> a(8), b(8);
  store_element(a.data(), type, 0, in);
  store_element(b.data(), type, 0, inout);
  host_reduce_elements(a.data(), b.data(), 1, type, op);
  return load_element(b.data(), type, 0);
}

TEST(HostReduceElements, SumsRoundToNearestEven) {
  // bfloat16 has 8 significant bits: between 256 and 512 the step is 2.
  EXPECT_EQ(reduce_one(DataType::bfloat16, ReduceOp::sum, 256, 1), 256);  // 257: tie, to even 256
  EXPECT_EQ(reduce_one(DataType::bfloat16, ReduceOp::sum, 256, 3), 260);  // 259: tie, to even 260
  EXPECT_EQ(reduce_one(DataType::bfloat16, ReduceOp::sum, 1.5, 2.25), 3.75);
  // half: 11 bits, step 2 from 2048.
  EXPECT_EQ(reduce_one(DataType::float16, ReduceOp::sum, 2048, 1), 2048);
  EXPECT_EQ(reduce_one(DataType::float16, ReduceOp::sum, 2048, 3), 2052);
  // fp8 e4m3: 4 bits, step 2 from 16; saturates at 448 (no infinity).
  EXPECT_EQ(reduce_one(DataType::fp8_e4m3, ReduceOp::sum, 16, 1), 16);
  EXPECT_EQ(reduce_one(DataType::fp8_e4m3, ReduceOp::sum, 16, 3), 20);
  EXPECT_EQ(reduce_one(DataType::fp8_e4m3, ReduceOp::sum, 448, 448), 448);
  // fp8 e5m2: 3 bits, step 2 from 8.
  EXPECT_EQ(reduce_one(DataType::fp8_e5m2, ReduceOp::sum, 8, 1), 8);
  EXPECT_EQ(reduce_one(DataType::fp8_e5m2, ReduceOp::sum, 8, 3), 12);
}

TEST(HostReduceElements, EveryOpOnEveryCustomType) {
  for (const DataType t : {DataType::float16, DataType::bfloat16, DataType::fp8_e4m3, DataType::fp8_e5m2}) {
    SCOPED_TRACE(std::string(info(t).name));
    EXPECT_EQ(reduce_one(t, ReduceOp::sum, -3, 5), 2);
    EXPECT_EQ(reduce_one(t, ReduceOp::avg, -3, 5), 2);  // avg adds; the backend scales afterwards
    EXPECT_EQ(reduce_one(t, ReduceOp::prod, -2, 3), -6);
    EXPECT_EQ(reduce_one(t, ReduceOp::max, -2, 3), 3);
    EXPECT_EQ(reduce_one(t, ReduceOp::max, 3, -2), 3);
    EXPECT_EQ(reduce_one(t, ReduceOp::min, -2, 3), -2);
    EXPECT_EQ(reduce_one(t, ReduceOp::min, 3, -2), -2);
  }
}

TEST(HostReduceElements, NanIsNeverHidden) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const DataType t : {DataType::float16, DataType::bfloat16, DataType::fp8_e4m3, DataType::float32}) {
    for (const ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      EXPECT_TRUE(std::isnan(reduce_one(t, op, nan, 1))) << info(t).name << " " << to_string(op);
      EXPECT_TRUE(std::isnan(reduce_one(t, op, 1, nan))) << info(t).name << " " << to_string(op);
    }
  }
}

// The fast paths (tables, the float encoders) give the definition's bits:
// decode both with load_element, combine in double, store_element.
TEST(HostReduceElements, FastPathsMatchTheDefinitionBitForBit) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto combine = [&](ReduceOp op, double a, double b) {
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg: return a + b;
      case ReduceOp::prod: return a * b;
      case ReduceOp::max: return std::isnan(a) || std::isnan(b) ? nan : (a > b ? a : b);  // max(-0, +0) = +0
      case ReduceOp::min: return std::isnan(a) || std::isnan(b) ? nan : (a < b ? a : b);
    }
    return nan;
  };
  for (const DataType t : {DataType::bfloat16, DataType::float16, DataType::fp8_e4m3, DataType::fp8_e5m2}) {
    const std::size_t es = info(t).bytes;
    const std::uint32_t patterns = es == 1 ? 256 : 65536;
    // Every pattern as `in`, against partners that reach ties, overflow,
    // subnormals, zeros, infinities and NaN; for fp8 every pair.
    std::vector<std::uint32_t> partners;
    if (es == 1) {
      for (std::uint32_t p = 0; p < 256; ++p) partners.push_back(p);
    } else {
      for (std::uint32_t p : {0x0000u, 0x8000u, 0x0001u, 0x8001u, 0x03ffu, 0x0400u, 0x3c00u, 0x3c01u, 0xbc00u,
                              0x3f80u, 0x3f81u, 0xbf80u, 0x4000u, 0x7bffu, 0xfbffu, 0x7c00u, 0x7f7fu, 0xff7fu,
                              0x7f80u, 0x7fc0u, 0x0080u, 0x007fu, 0x4480u, 0x1234u, 0xc321u, 0x5a5au})
        partners.push_back(p);
      std::uint32_t x = 12345;
      for (int i = 0; i < 40; ++i) partners.push_back((x = x * 1103515245u + 12345u) >> 16 & 0xffffu);
    }
    for (const ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min}) {
      std::size_t mismatches = 0;
      std::string first;
      for (const std::uint32_t partner : partners) {
        std::vector<unsigned char> in(patterns * es), inout(patterns * es), expected(patterns * es);
        for (std::uint32_t p = 0; p < patterns; ++p) {
          std::memcpy(in.data() + p * es, &p, es);  // little-endian: the low bytes
          std::memcpy(inout.data() + p * es, &partner, es);
        }
        expected = inout;
        for (std::uint32_t p = 0; p < patterns; ++p)
          store_element(expected.data(), t, p,
                        combine(op, load_element(in.data(), t, p), load_element(inout.data(), t, p)));
        host_reduce_elements(in.data(), inout.data(), patterns, t, op);
        for (std::uint32_t p = 0; p < patterns; ++p) {
          if (std::memcmp(inout.data() + p * es, expected.data() + p * es, es) == 0) continue;
          if (mismatches++ == 0)
            first = "in pattern " + std::to_string(p) + ", inout pattern " + std::to_string(partner) + ": got " +
                    std::to_string(load_element(inout.data(), t, p)) + ", definition gives " +
                    std::to_string(load_element(expected.data(), t, p));
        }
      }
      EXPECT_EQ(mismatches, 0u) << info(t).name << " " << to_string(op) << ", first: " << first;
    }
  }
}

TEST(HostReduceElements, ManyElements) {
  const std::size_t n = 1000;
  std::vector<std::uint16_t> in(n), inout(n);
  for (std::size_t i = 0; i < n; ++i) {
    store_element(in.data(), DataType::bfloat16, i, static_cast<double>(i % 17));
    store_element(inout.data(), DataType::bfloat16, i, -static_cast<double>(i % 5));
  }
  host_reduce_elements(in.data(), inout.data(), n, DataType::bfloat16, ReduceOp::sum);
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(load_element(inout.data(), DataType::bfloat16, i), static_cast<double>(i % 17) - (i % 5)) << i;
}

// ---------------------------------------------------------------------------
// A world of one, in MPI's singleton mode

std::unique_ptr<Bootstrap>& world_slot() {
  static std::unique_ptr<Bootstrap> world;
  return world;
}

Bootstrap& world() {
  auto& w = world_slot();
  if (!w) w = make_mpi_bootstrap(nullptr, nullptr);
  return *w;
}

// MPI_Finalize once, after the last test (MPI cannot start again).
class MpiWorld : public ::testing::Environment {
 public:
  void TearDown() override { world_slot().reset(); }
};
[[maybe_unused]] ::testing::Environment* const kMpiWorld = ::testing::AddGlobalTestEnvironment(new MpiWorld);

std::vector<unsigned char> encode(DataType t, const std::vector<double>& values) {
  std::vector<unsigned char> out(values.size() * info(t).bytes);
  for (std::size_t i = 0; i < values.size(); ++i) store_element(out.data(), t, i, values[i]);
  return out;
}

std::vector<double> decode(DataType t, const void* data, std::size_t count) {
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = load_element(data, t, i);
  return out;
}

TEST(MpiBootstrap, WorldOfOne) {
  Bootstrap& b = world();
  EXPECT_EQ(b.kind(), "mpi");
  EXPECT_EQ(b.size(), 1);
  EXPECT_EQ(b.rank(), 0);
  EXPECT_EQ(b.local_rank(), 0);
  EXPECT_EQ(b.local_size(), 1);
  const int value = 11;
  const auto all = b.all_gather(&value, sizeof value);
  ASSERT_EQ(all.size(), sizeof value);
  int back = 0;
  std::memcpy(&back, all.data(), sizeof back);
  EXPECT_EQ(back, 11);
  b.broadcast(&back, sizeof back, 0);
  EXPECT_THROW(b.broadcast(&back, sizeof back, 1), std::runtime_error);
  b.barrier();
  EXPECT_TRUE(mpi_thread_multiple());  // Open MPI 4 provides it
}

// The variables a launcher sets, set for one test and removed after it.
class LauncherVariables : public ::testing::Test {
 protected:
  void set(const char* name, const char* value) {
    remember(name);
    setenv(name, value, 1);
  }
  void unset(const char* name) {
    remember(name);
    unsetenv(name);
  }
  void TearDown() override {
    for (const auto& name : unset_) unsetenv(name.c_str());
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  void remember(const char* name) {
    if (saved_.count(name) || std::find(unset_.begin(), unset_.end(), name) != unset_.end()) return;
    if (const char* old = std::getenv(name))
      saved_[name] = old;
    else
      unset_.push_back(name);
  }

  std::map<std::string, std::string> saved_;
  std::vector<std::string> unset_;
};

TEST_F(LauncherVariables, RankRunningAloneIsRefused) {
  world();  // MPI is up: the bootstrap below neither starts nor finalizes it
  // Open MPI's singleton start-up sets PMIX_RANK in our environment; a real
  // bootstrap looks at the launcher's variables before MPI starts.
  unset("PMIX_RANK");
  set("WORLD_SIZE", "4");
  set("RANK", "2");
  set("LOCAL_RANK", "0");
  std::string error;
  try {
    make_mpi_bootstrap(nullptr, nullptr);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_CONTAINS(error, "launched by torchrun-style env with world size 4");
  EXPECT_CONTAINS(error, "MPI_COMM_WORLD has 1 rank");
  EXPECT_CONTAINS(error, "use the env bootstrap");

  set("SLURM_STEP_ID", "0");
  set("SLURM_NTASKS", "8");
  set("SLURM_PROCID", "3");
  error.clear();
  try {
    make_mpi_bootstrap(nullptr, nullptr);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_CONTAINS(error, "launched by srun with world size 8");
  EXPECT_CONTAINS(error, "probably not the one the launcher serves");
  EXPECT_CONTAINS(error, "srun --mpi=list");
}

TEST(HostBackend, NeedsTheMpiBootstrap) {
  auto single = make_single_bootstrap();
  std::string error;
  try {
    make_host_backend(*single);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_CONTAINS(error, "needs the MPI bootstrap");
  EXPECT_CONTAINS(error, "'single' bootstrap");
}

TEST(HostBackend, Properties) {
  auto b = make_host_backend(world());
  EXPECT_EQ(b->name(), "host");
  EXPECT_EQ(b->size(), 1);
  EXPECT_EQ(b->local_ranks(), 1);
  EXPECT_EQ(b->rank(0), 0);
  EXPECT_THROW(b->rank(1), std::out_of_range);
  EXPECT_FALSE(b->supports_capture());
  for (const DataType t : all_data_types())
    for (const ReduceOp op : all_reduce_ops()) {
      EXPECT_EQ(b->unsupported_reason(t, op), "") << info(t).name << to_string(op);
      EXPECT_TRUE(b->supports(t, op)) << info(t).name << to_string(op);
    }
  void* p = b->allocate(0, 1000);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
  const char text[] = "copy me";
  b->copy_in(0, p, text, sizeof text);
  char back[sizeof text] = {};
  b->copy_out(0, back, p, sizeof back);
  EXPECT_STREQ(back, text);
  b->release(0, p);
  void* empty = b->allocate(0, 0);
  EXPECT_NE(empty, nullptr);
  b->release(0, empty);
  b->wait();
}

TEST(HostBackend, IntegerAvgOfOneRankAndBadPeers) {
  auto b = make_host_backend(world());
  std::int32_t x[4] = {1, -2, 3, 4};
  b->all_reduce(0, x, x, 4, DataType::int32, ReduceOp::avg);  // one rank: the mean is the value itself
  EXPECT_EQ(x[1], -2);
  EXPECT_THROW(b->broadcast(0, x, x, 4, DataType::int32, 1), std::out_of_range);
  EXPECT_THROW(b->send_recv(0, x, x, 4, DataType::int32, 1, 0), std::out_of_range);
}

// On one rank every collective copies its input (reductions of one value),
// which checks the buffers, offsets and in-place forms of every call, also
// through the paths for messages beyond the per-call count.
class OneRank : public ::testing::TestWithParam<std::size_t> {};

TEST_P(OneRank, EveryOperationInEveryTypeAndForm) {
  HostBackendOptions options;
  options.max_count_per_call = GetParam();
  auto b = make_host_backend(world(), options);
  const std::size_t n = 29;
  for (const DataType t : all_data_types()) {
    SCOPED_TRACE(std::string(info(t).name));
    std::vector<double> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<double>(static_cast<int>(i % 7) - 3);
    const auto input = encode(t, values);
    for (const ReduceOp op : all_reduce_ops()) {
      if (!b->supports(t, op)) continue;
      SCOPED_TRACE(std::string(to_string(op)));
      auto out = std::vector<unsigned char>(input.size(), 0);
      b->all_reduce(0, input.data(), out.data(), n, t, op);
      EXPECT_EQ(decode(t, out.data(), n), values);
      auto in_place = input;
      b->all_reduce(0, in_place.data(), in_place.data(), n, t, op);
      EXPECT_EQ(decode(t, in_place.data(), n), values);
      std::fill(out.begin(), out.end(), 0);
      b->reduce_scatter(0, input.data(), out.data(), n, t, op);
      EXPECT_EQ(decode(t, out.data(), n), values);
      in_place = input;
      b->reduce_scatter(0, in_place.data(), in_place.data(), n, t, op);
      EXPECT_EQ(decode(t, in_place.data(), n), values);
      std::fill(out.begin(), out.end(), 0);
      b->reduce(0, input.data(), out.data(), n, t, op, 0);
      EXPECT_EQ(decode(t, out.data(), n), values);
      in_place = input;
      b->reduce(0, in_place.data(), in_place.data(), n, t, op, 0);
      EXPECT_EQ(decode(t, in_place.data(), n), values);
    }
    auto out = std::vector<unsigned char>(input.size(), 0);
    b->all_gather(0, input.data(), out.data(), n, t);
    EXPECT_EQ(decode(t, out.data(), n), values);
    std::fill(out.begin(), out.end(), 0);
    b->broadcast(0, input.data(), out.data(), n, t, 0);
    EXPECT_EQ(decode(t, out.data(), n), values);
    std::fill(out.begin(), out.end(), 0);
    b->all_to_all(0, input.data(), out.data(), n, t);
    EXPECT_EQ(decode(t, out.data(), n), values);
    std::fill(out.begin(), out.end(), 0);
    b->send_recv(0, input.data(), out.data(), n, t, 0, 0);
    EXPECT_EQ(decode(t, out.data(), n), values);
    auto in_place = input;
    b->all_gather(0, in_place.data(), in_place.data(), n, t);
    b->broadcast(0, in_place.data(), in_place.data(), n, t, 0);
    b->all_to_all(0, in_place.data(), in_place.data(), n, t);
    b->send_recv(0, in_place.data(), in_place.data(), n, t, 0, 0);
    EXPECT_EQ(decode(t, in_place.data(), n), values);
  }
}

INSTANTIATE_TEST_SUITE_P(PerCallLimit, OneRank,
                         ::testing::Values(std::size_t{INT_MAX}, std::size_t{4}, std::size_t{1}));

TEST(HostBackend, AvgDividesBySize) {
  auto b = make_host_backend(world());
  float x[3] = {1.5f, -2.0f, 3.0f};
  b->all_reduce(0, x, x, 3, DataType::float32, ReduceOp::avg);
  EXPECT_EQ(x[0], 1.5f);
  EXPECT_EQ(x[2], 3.0f);
}

TEST(HostBackend, Split) {
  auto b = make_host_backend(world());
  auto part = b->split(5, 0);
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->size(), 1);
  EXPECT_EQ(part->rank(0), 0);
  double x = 2.5, y = 0;
  part->all_reduce(0, &x, &y, 1, DataType::float64, ReduceOp::sum);
  EXPECT_EQ(y, 2.5);
  EXPECT_EQ(b->split(-1, 0), nullptr);  // takes no part (NCCL_SPLIT_NOCOLOR)
}

TEST(HostBackend, ZeroElements) {
  auto b = make_host_backend(world());
  float x = 1;
  b->all_reduce(0, &x, &x, 0, DataType::float32, ReduceOp::sum);
  b->all_gather(0, &x, &x, 0, DataType::float32);
  b->send_recv(0, &x, &x, 0, DataType::float32, 0, 0);
  EXPECT_EQ(x, 1);
}

}  // namespace
}  // namespace redline
