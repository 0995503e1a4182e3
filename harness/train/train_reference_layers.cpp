#include "harness/train/train_reference_layers.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace redline::train_ref {
namespace {

using Index = std::size_t;

void check_size(const std::vector<double>& t, std::int64_t expected, const char* name) {
  if (static_cast<std::int64_t>(t.size()) != expected)
    throw std::invalid_argument(std::string(name) + " holds " + std::to_string(t.size()) + " elements, not " +
                                std::to_string(expected));
}

// Turns every head's (i, i + d/2) pairs of x by sign * angle.
std::vector<double> rotate(const std::vector<double>& x, std::int64_t n, const RopeDims& r, double sign) {
  const std::int64_t d = r.head_dim, half = d / 2, width = r.heads * d;
  if (d % 2 != 0) throw std::invalid_argument("rotary head_dim = " + std::to_string(d) + " is odd");
  check_size(x, n * width, "rotary input");
  std::vector<double> y(x.size());
  for (std::int64_t t = 0; t < n; ++t) {
    const double position = static_cast<double>(t % r.seq);
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle = position * std::pow(r.theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      const double c = std::cos(angle), s = sign * std::sin(angle);
      for (std::int64_t h = 0; h < r.heads; ++h) {
        const Index lo = static_cast<Index>(t * width + h * d + i), hi = lo + static_cast<Index>(half);
        y[lo] = x[lo] * c - x[hi] * s;
        y[hi] = x[hi] * c + x[lo] * s;
      }
    }
  }
  return y;
}

double sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

void check_targets(const std::vector<double>& logits, const std::vector<std::int32_t>& targets, std::int64_t n,
                   std::int64_t vocab) {
  check_size(logits, n * vocab, "logits");
  if (static_cast<std::int64_t>(targets.size()) != n)
    throw std::invalid_argument("targets holds " + std::to_string(targets.size()) + " tokens, not " +
                                std::to_string(n));
  for (std::int32_t t : targets)
    if (t < 0 || t >= vocab)
      throw std::invalid_argument("target " + std::to_string(t) + " outside vocab " + std::to_string(vocab));
}

// log sum_j exp(row[j]), the maximum subtracted first so no exp overflows.
double log_sum_exp(const double* row, std::int64_t vocab) {
  const double max = *std::max_element(row, row + vocab);
  double sum = 0;
  for (std::int64_t j = 0; j < vocab; ++j) sum += std::exp(row[j] - max);
  return max + std::log(sum);
}

}  // namespace

std::vector<double> linear_forward(const std::vector<double>& x, const std::vector<double>& w, std::int64_t n,
                                   std::int64_t in, std::int64_t out) {
  check_size(x, n * in, "linear input");
  check_size(w, out * in, "linear weight");
  std::vector<double> y(static_cast<Index>(n * out));
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t o = 0; o < out; ++o) {
      double sum = 0;
      for (std::int64_t i = 0; i < in; ++i) sum += x[t * in + i] * w[o * in + i];
      y[t * out + o] = sum;
    }
  return y;
}

std::vector<double> linear_backward(const std::vector<double>& x, const std::vector<double>& w,
                                    const std::vector<double>& dy, std::int64_t n, std::int64_t in, std::int64_t out,
                                    std::vector<double>& dw) {
  check_size(x, n * in, "linear input");
  check_size(w, out * in, "linear weight");
  check_size(dy, n * out, "linear output gradient");
  check_size(dw, out * in, "linear weight gradient");
  std::vector<double> dx(x.size(), 0.0);
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t o = 0; o < out; ++o) {
      const double g = dy[t * out + o];
      for (std::int64_t i = 0; i < in; ++i) {
        dx[t * in + i] += g * w[o * in + i];
        dw[o * in + i] += g * x[t * in + i];
      }
    }
  return dx;
}

RmsNormForward rmsnorm_forward(const std::vector<double>& x, const std::vector<double>& w, std::int64_t n,
                               std::int64_t width, double eps) {
  check_size(x, n * width, "rmsnorm input");
  check_size(w, width, "rmsnorm weight");
  RmsNormForward f{std::vector<double>(x.size()), std::vector<double>(static_cast<Index>(n))};
  for (std::int64_t t = 0; t < n; ++t) {
    double squares = 0;
    for (std::int64_t i = 0; i < width; ++i) squares += x[t * width + i] * x[t * width + i];
    const double r = 1 / std::sqrt(squares / static_cast<double>(width) + eps);
    f.inv_rms[t] = r;
    for (std::int64_t i = 0; i < width; ++i) f.y[t * width + i] = x[t * width + i] * r * w[i];
  }
  return f;
}

std::vector<double> rmsnorm_backward(const std::vector<double>& x, const std::vector<double>& w,
                                     const std::vector<double>& inv_rms, const std::vector<double>& dy, std::int64_t n,
                                     std::int64_t width, std::vector<double>& dw) {
  check_size(x, n * width, "rmsnorm input");
  check_size(dy, n * width, "rmsnorm output gradient");
  check_size(inv_rms, n, "rmsnorm inv_rms");
  check_size(dw, width, "rmsnorm weight gradient");
  std::vector<double> dx(x.size());
  for (std::int64_t t = 0; t < n; ++t) {
    const double r = inv_rms[t];
    // y_i = x_i r w_i with dr/dx_j = -r^3 x_j / width, so
    // dx_j = r w_j dy_j - x_j r^3 / width * sum_i dy_i w_i x_i.
    double dot = 0;
    for (std::int64_t i = 0; i < width; ++i) {
      const Index at = static_cast<Index>(t * width + i);
      dot += dy[at] * w[i] * x[at];
      dw[i] += dy[at] * x[at] * r;
    }
    const double k = r * r * r * dot / static_cast<double>(width);
    for (std::int64_t i = 0; i < width; ++i) {
      const Index at = static_cast<Index>(t * width + i);
      dx[at] = r * w[i] * dy[at] - x[at] * k;
    }
  }
  return dx;
}

std::vector<double> rope_forward(const std::vector<double>& x, std::int64_t n, const RopeDims& dims) {
  return rotate(x, n, dims, 1.0);
}

std::vector<double> rope_backward(const std::vector<double>& dy, std::int64_t n, const RopeDims& dims) {
  return rotate(dy, n, dims, -1.0);
}

std::vector<double> swiglu_forward(const std::vector<double>& gate, const std::vector<double>& up) {
  check_size(up, static_cast<std::int64_t>(gate.size()), "swiglu up");
  std::vector<double> act(gate.size());
  for (Index i = 0; i < gate.size(); ++i) act[i] = gate[i] * sigmoid(gate[i]) * up[i];
  return act;
}

SwigluGrads swiglu_backward(const std::vector<double>& gate, const std::vector<double>& up,
                            const std::vector<double>& d_act) {
  check_size(up, static_cast<std::int64_t>(gate.size()), "swiglu up");
  check_size(d_act, static_cast<std::int64_t>(gate.size()), "swiglu output gradient");
  SwigluGrads g{std::vector<double>(gate.size()), std::vector<double>(gate.size())};
  for (Index i = 0; i < gate.size(); ++i) {
    const double s = sigmoid(gate[i]);
    // silu'(z) = sigmoid(z) (1 + z (1 - sigmoid(z))).
    g.d_gate[i] = d_act[i] * up[i] * s * (1 + gate[i] * (1 - s));
    g.d_up[i] = d_act[i] * gate[i] * s;
  }
  return g;
}

double cross_entropy_forward(const std::vector<double>& logits, const std::vector<std::int32_t>& targets,
                             std::int64_t n, std::int64_t vocab) {
  check_targets(logits, targets, n, vocab);
  double sum = 0;
  for (std::int64_t t = 0; t < n; ++t) {
    const double* row = &logits[static_cast<Index>(t * vocab)];
    sum += log_sum_exp(row, vocab) - row[targets[t]];
  }
  return sum / static_cast<double>(n);
}

std::vector<double> cross_entropy_backward(const std::vector<double>& logits, const std::vector<std::int32_t>& targets,
                                           std::int64_t n, std::int64_t vocab) {
  check_targets(logits, targets, n, vocab);
  std::vector<double> d(logits.size());
  for (std::int64_t t = 0; t < n; ++t) {
    const double* row = &logits[static_cast<Index>(t * vocab)];
    const double lse = log_sum_exp(row, vocab);
    for (std::int64_t j = 0; j < vocab; ++j)
      d[t * vocab + j] = (std::exp(row[j] - lse) - (j == targets[t] ? 1.0 : 0.0)) / static_cast<double>(n);
  }
  return d;
}

}  // namespace redline::train_ref
