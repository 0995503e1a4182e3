// The data every rank sends, and what any reduction of it must give: small
// integers chosen so that every partial result, in whatever order a backend
// reduces, is exact in the element type. Expected values are then exact too
// (avg aside), and a check costs O(1) per element however many ranks there are.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/ops/collective.hpp"
#include "harness/core/splitmix64.hpp"

namespace redline {
namespace {

// Elements fall into pseudo-random classes; every rank's value for an element
// depends on (seed, rank, class). The reduction of a class over all ranks is
// computed once and cached, so verifying an element never loops over ranks.
constexpr std::uint64_t kClasses = 4096;
// Inputs stay small so that exact integer sums cannot hide in rounding.
constexpr std::int64_t kMaxMagnitude = 100;


std::uint64_t class_of(std::size_t i, std::uint64_t seed) { return splitmix64(splitmix64(seed) ^ i) % kClasses; }

std::uint64_t rank_hash(std::uint64_t seed, int rank, std::uint64_t cls) {
  constexpr std::uint64_t kRankSpread = 0x6a09e667f3bcc909;
  const std::uint64_t rank_key = static_cast<std::uint64_t>(rank) * kRankSpread;
  return splitmix64(splitmix64(seed ^ rank_key) + cls);
}

// Uniform in [0, m) from the top 32 bits of a hash, without a division.
std::uint64_t below(std::uint64_t h, std::uint64_t m) { return ((h >> 32) * m) >> 32; }

std::uint64_t class_hash(std::uint64_t seed, std::uint64_t cls) { return splitmix64(splitmix64(seed ^ 0xbb67ae8584caa73bull) + cls); }

void check_case(const CollectiveCase& c) {
  if (c.nranks < 1) throw std::invalid_argument("collective case with " + std::to_string(c.nranks) + " ranks");
}

// Sum: with n ranks each sending at most m in magnitude, any partial sum stays
// within n*m <= the type's exact-integer limit. Beyond limit ranks (fp8 from 9
// or 17 ranks, bfloat16 from 257) that needs m < 1, so instead only every
// `stride`-th rank (shifted per class) sends a non-zero value: nccl-tests'
// verifiable data does the same.
struct SumShape {
  std::int64_t stride;     // 1 when every rank contributes
  std::int64_t magnitude;  // m
};

SumShape sum_shape(const CollectiveCase& c) {
  const std::int64_t limit = info(c.type).exact_integer_limit;
  const std::int64_t n = c.nranks;
  if (n <= limit) return {1, std::clamp<std::int64_t>(limit / n, 1, kMaxMagnitude)};
  const std::int64_t stride = (n + limit - 1) / limit;
  const std::int64_t contributors = (n + stride - 1) / stride;
  return {stride, std::clamp<std::int64_t>(limit / contributors, 1, kMaxMagnitude)};
}

bool sum_contributes(const SumShape& s, int rank, std::uint64_t cls) {
  return s.stride == 1 || (static_cast<std::uint64_t>(rank) + cls) % static_cast<std::uint64_t>(s.stride) == 0;
}

// avg is the one result that cannot be exact (NCCL multiplies each input by a
// rounded 1/n), so its error must be bounded whatever the rank count: only two
// ranks per class contribute, with the same sign (no cancellation) and
// magnitudes within a factor of two (a missing contribution moves the result
// by a third or more, far above the tolerance; fp8, whose tolerance is not,
// has one contributor). nccl-tests' verifiable data
// also limits avg to two contributors.
struct AvgPair {
  int first;
  int second;
  bool negative;
};

AvgPair avg_pair(const CollectiveCase& c, std::uint64_t cls) {
  const std::uint64_t h = class_hash(c.seed, cls);
  const bool negative = (h >> 63) != 0;
  const auto n = static_cast<std::uint64_t>(c.nranks);
  const std::uint64_t first = (h & 0xffffffffu) % n;
  // fp8's tolerance (3 ulps: 37.5% for e4m3, 75% for e5m2) would hide a
  // dropped contribution of a pair (a third of the sum or more). One
  // contributor per class: a dropped one leaves 0, a doubled one twice the
  // value, both caught.
  if (c.type == DataType::fp8_e4m3 || c.type == DataType::fp8_e5m2)
    return {static_cast<int>(first), static_cast<int>(first), negative};
  if (c.nranks <= 2) return {0, c.nranks - 1, negative};
  const std::uint64_t second = (first + 1 + ((h >> 32) & 0x7fffffffu) % (n - 1)) % n;
  return {static_cast<int>(first), static_cast<int>(second), negative};
}

// fp8's lone avg contributor v is scaled by a power of two so that v / n
// stays a normal number: below the smallest normal the tolerance turns
// absolute, and at 1024 ranks e4m3's v / n of 2^-8 sat under it, so a dropped
// (0) or doubled contribution passed. A power of two keeps v exact (at most 3
// significant bits), and the scale stops where the largest v would pass the
// type's largest value (e4m3 448: up to 8192 ranks are covered; beyond, the
// absolute bound holds again). 1 for every other type.
double avg_scale(const CollectiveCase& c, std::int64_t bottom, std::int64_t top) {
  const bool e4m3 = c.type == DataType::fp8_e4m3;
  if (!e4m3 && c.type != DataType::fp8_e5m2) return 1;
  const double largest = e4m3 ? 448 : 57344;
  double scale = 1;
  while (static_cast<double>(bottom) * scale / c.nranks < smallest_normal(c.type) &&
         static_cast<double>(top) * scale * 2 <= largest)
    scale *= 2;
  return scale;
}

double avg_input(const CollectiveCase& c, int rank, std::uint64_t cls) {
  const AvgPair pair = avg_pair(c, cls);
  if (rank != pair.first && rank != pair.second) return 0.0;
  const std::int64_t top = std::clamp<std::int64_t>(info(c.type).exact_integer_limit / 2, 1, kMaxMagnitude);
  const std::int64_t bottom = (top + 1) / 2;
  const auto span = static_cast<std::uint64_t>(top - bottom + 1);
  const auto offset = static_cast<std::int64_t>(below(rank_hash(c.seed, rank, cls), span));
  const double magnitude = static_cast<double>(bottom + offset) * avg_scale(c, bottom, top);
  return pair.negative ? -magnitude : magnitude;
}

double signed_magnitude(std::uint64_t h, std::int64_t m) {
  const auto magnitude = static_cast<double>(1 + static_cast<std::int64_t>(below(h, static_cast<std::uint64_t>(m))));
  return (h & 1) ? -magnitude : magnitude;
}

double class_input(const CollectiveCase& c, int rank, std::uint64_t cls) {
  const std::uint64_t h = rank_hash(c.seed, rank, cls);
  switch (c.op) {
    case ReduceOp::sum: {
      const SumShape s = sum_shape(c);
      return sum_contributes(s, rank, cls) ? signed_magnitude(h, s.magnitude) : 0.0;
    }
    case ReduceOp::avg: return avg_input(c, rank, cls);
    case ReduceOp::max:
    case ReduceOp::min:
      return signed_magnitude(h, std::min(info(c.type).exact_integer_limit, kMaxMagnitude));
    case ReduceOp::prod: return (h & 1) ? -1.0 : 1.0;
  }
  throw std::invalid_argument("unknown ReduceOp");
}

double reduce_class(const CollectiveCase& c, std::uint64_t cls) {
  switch (c.op) {
    case ReduceOp::sum: {
      const SumShape s = sum_shape(c);
      double total = 0;
      const auto shift = static_cast<std::int64_t>(cls % static_cast<std::uint64_t>(s.stride));
      const std::int64_t first = (s.stride - shift) % s.stride;
      for (std::int64_t r = first; r < c.nranks; r += s.stride) total += class_input(c, static_cast<int>(r), cls);
      return round_to_type(total, c.type);
    }
    case ReduceOp::avg: {
      const AvgPair pair = avg_pair(c, cls);
      double total = avg_input(c, pair.first, cls);
      if (pair.second != pair.first) total += avg_input(c, pair.second, cls);
      if (!info(c.type).is_floating) {
        // NCCL's integer average: the sum divided by n, truncated toward zero.
        return static_cast<double>(static_cast<std::int64_t>(total) / c.nranks);
      }
      return round_to_type(total / c.nranks, c.type);
    }
    case ReduceOp::prod: {
      double product = 1;
      for (int r = 0; r < c.nranks; ++r) product *= class_input(c, r, cls);
      return round_to_type(product, c.type);
    }
    case ReduceOp::max:
    case ReduceOp::min: {
      double best = class_input(c, 0, cls);
      for (int r = 1; r < c.nranks; ++r) {
        const double v = class_input(c, r, cls);
        best = c.op == ReduceOp::max ? std::max(best, v) : std::min(best, v);
      }
      return round_to_type(best, c.type);
    }
  }
  throw std::invalid_argument("unknown ReduceOp");
}

// Reduced values of the last case seen by this thread, filled per class on
// first use (NaN: not computed yet; no reduction of this data is NaN).
struct ReducedCache {
  bool valid = false;
  CollectiveCase key;
  std::vector<double> values;
};

bool same_case(const CollectiveCase& a, const CollectiveCase& b) {
  return a.type == b.type && a.op == b.op && a.nranks == b.nranks && a.seed == b.seed;
}

}  // namespace

double input_value(std::size_t i, int rank, const CollectiveCase& c) {
  check_case(c);
  if (rank < 0 || rank >= c.nranks) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " outside 0.." + std::to_string(c.nranks - 1));
  }
  return class_input(c, rank, class_of(i, c.seed));
}

double reduced_value(std::size_t i, const CollectiveCase& c) {
  check_case(c);
  thread_local ReducedCache cache;
  if (!cache.valid || !same_case(cache.key, c)) {
    cache.key = c;
    cache.values.assign(kClasses, std::numeric_limits<double>::quiet_NaN());
    cache.valid = true;
  }
  const std::uint64_t cls = class_of(i, c.seed);
  double& slot = cache.values[cls];
  if (std::isnan(slot)) slot = reduce_class(c, cls);
  return slot;
}

}  // namespace redline
