// RoPE: each pair's angle is formed and its cos/sin taken in double once per call (in float the
// angle alone would be off by ~position * 6e-8 rad: 0.006 rad at position 10^5), then applied to
// that pair in every head in float. The reference does every step in double.
#include "kernels/cpu/rope.hpp"

#include <cassert>
#include <cmath>

namespace infer_plan::kernels {
namespace {

// The two values pair i rotates, as offsets inside one head.
struct PairOffsets {
  uint64_t first;
  uint64_t second;
};

PairOffsets pair_offsets(uint64_t i, uint64_t head_dim, RopeLayout layout) {
  if (layout == RopeLayout::normal) return {2 * i, 2 * i + 1};
  return {i, i + head_dim / 2};
}

double pair_angle(uint64_t i, uint64_t head_dim, uint64_t position, float theta_base, const float* freq_factors) {
  const double exponent = -2.0 * static_cast<double>(i) / static_cast<double>(head_dim);
  const double angle = static_cast<double>(position) * std::pow(static_cast<double>(theta_base), exponent);
  return freq_factors ? angle / static_cast<double>(freq_factors[i]) : angle;
}

}  // namespace

void rope(float* x, uint64_t n_heads, uint64_t head_dim, uint64_t position, float theta_base,
          RopeLayout layout, const float* freq_factors) {
  assert(head_dim % 2 == 0);
  for (uint64_t i = 0; i < head_dim / 2; ++i) {
    const double angle = pair_angle(i, head_dim, position, theta_base, freq_factors);
    const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
    const PairOffsets p = pair_offsets(i, head_dim, layout);
    for (uint64_t h = 0; h < n_heads; ++h) {
      float* head = x + h * head_dim;
      const float x0 = head[p.first], x1 = head[p.second];
      head[p.first] = x0 * c - x1 * s;
      head[p.second] = x0 * s + x1 * c;
    }
  }
}

void rope_reference(float* x, uint64_t n_heads, uint64_t head_dim, uint64_t position,
                    float theta_base, RopeLayout layout, const float* freq_factors) {
  assert(head_dim % 2 == 0);
  for (uint64_t h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    for (uint64_t i = 0; i < head_dim / 2; ++i) {
      const PairOffsets p = pair_offsets(i, head_dim, layout);
      const double angle = pair_angle(i, head_dim, position, theta_base, freq_factors);
      const double x0 = head[p.first], x1 = head[p.second];
      head[p.first] = static_cast<float>(x0 * std::cos(angle) - x1 * std::sin(angle));
      head[p.second] = static_cast<float>(x0 * std::sin(angle) + x1 * std::cos(angle));
    }
  }
}

}  // namespace infer_plan::kernels
