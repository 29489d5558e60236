// RoPE: each pair's angle is formed and its cos/sin taken in double once per call (in float the
// angle alone would be off by ~position * 6e-8 rad: 0.006 rad at position 10^5), then applied to
// that pair in every head in float. The reference does every step in double.
#include "kernels/cpu/rope.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>

namespace infer_plan::kernels {
namespace {

// The two values pair i rotates, as offsets inside one head of `n` rotated values.
struct PairOffsets {
  uint64_t first;
  uint64_t second;
};

PairOffsets pair_offsets(uint64_t i, uint64_t n, RopeLayout layout) {
  if (layout == RopeLayout::normal) return {2 * i, 2 * i + 1};
  return {i, i + n / 2};
}

// ggml's form: the trained angle, interpolated, then blended back toward it by the ramp.
double pair_angle(uint64_t i, uint64_t position, const RopeParams& p) {
  const double n = static_cast<double>(p.rotated());
  double extrap = static_cast<double>(position) * std::pow(static_cast<double>(p.theta_base), -2.0 * static_cast<double>(i) / n);
  if (p.freq_factors) extrap /= static_cast<double>(p.freq_factors[i]);
  const double interp = static_cast<double>(p.freq_scale) * extrap;
  if (p.ext_factor == 0.0f) return interp;
  const double span = std::max(0.001, static_cast<double>(p.corr_high) - static_cast<double>(p.corr_low));
  const double y = (static_cast<double>(i) - static_cast<double>(p.corr_low)) / span;
  const double mix = (1.0 - std::clamp(y, 0.0, 1.0)) * static_cast<double>(p.ext_factor);
  return interp * (1.0 - mix) + extrap * mix;
}

// transformers' form: one inverse frequency per pair, blended between the interpolated and the
// trained one by the extrapolation factor, times the position.
double reference_angle(uint64_t i, uint64_t position, const RopeParams& p) {
  const double n = static_cast<double>(p.rotated());
  double inv_freq = 1.0 / std::pow(static_cast<double>(p.theta_base), static_cast<double>(2 * i) / n);
  if (p.freq_factors) inv_freq /= static_cast<double>(p.freq_factors[i]);
  const double interpolated = inv_freq * static_cast<double>(p.freq_scale);
  double extrapolation = 0.0;  // share of the trained frequency
  if (p.ext_factor != 0.0f) {
    double low = p.corr_low, high = p.corr_high;
    if (high == low) high += 0.001;
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    extrapolation = (1.0 - ramp) * static_cast<double>(p.ext_factor);
  }
  return static_cast<double>(position) * (interpolated * (1.0 - extrapolation) + inv_freq * extrapolation);
}

}  // namespace

YarnRange yarn_correction_range(uint64_t dims, uint64_t original_context, double theta_base, double beta_fast,
                                double beta_slow) {
  // The pair index whose wavelength fits `rotations` times into the original context.
  const auto dim_for = [&](double rotations) {
    return static_cast<double>(dims) * std::log(static_cast<double>(original_context) / (rotations * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(theta_base));
  };
  const double low = std::max(0.0, std::floor(dim_for(beta_fast)));
  const double high = std::min(static_cast<double>(dims) - 1.0, std::ceil(dim_for(beta_slow)));
  return {static_cast<float>(low), static_cast<float>(high)};
}

void rope(float* x, uint64_t n_heads, uint64_t position, const RopeParams& p) {
  const uint64_t n = p.rotated();
  assert(n % 2 == 0 && n <= p.head_dim);
  for (uint64_t i = 0; i < n / 2; ++i) {
    const double angle = pair_angle(i, position, p);
    const float c = static_cast<float>(std::cos(angle) * static_cast<double>(p.magnitude));
    const float s = static_cast<float>(std::sin(angle) * static_cast<double>(p.magnitude));
    const PairOffsets o = pair_offsets(i, n, p.layout);
    for (uint64_t h = 0; h < n_heads; ++h) {
      float* head = x + h * p.head_dim;
      const float x0 = head[o.first], x1 = head[o.second];
      head[o.first] = x0 * c - x1 * s;
      head[o.second] = x0 * s + x1 * c;
    }
  }
}

void rope_reference(float* x, uint64_t n_heads, uint64_t position, const RopeParams& p) {
  const uint64_t n = p.rotated();
  assert(n % 2 == 0 && n <= p.head_dim);
  const double m = p.magnitude;
  for (uint64_t h = 0; h < n_heads; ++h) {
    float* head = x + h * p.head_dim;
    for (uint64_t i = 0; i < n / 2; ++i) {
      const PairOffsets o = pair_offsets(i, n, p.layout);
      const double angle = reference_angle(i, position, p);
      const double x0 = head[o.first], x1 = head[o.second];
      head[o.first] = static_cast<float>(m * (x0 * std::cos(angle) - x1 * std::sin(angle)));
      head[o.second] = static_cast<float>(m * (x0 * std::sin(angle) + x1 * std::cos(angle)));
    }
  }
}

}  // namespace infer_plan::kernels
