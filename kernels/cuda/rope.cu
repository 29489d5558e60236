// RoPE: one thread per pair i of a head, for kHeadsPerBlock heads of one token. As kernels/cpu/rope
// does, each pair's angle (scaled and blended as RopeParams says) and its cos and sin (times the
// magnitude) are taken in double
// (in float the angle alone would be off by ~pos * 6e-8 rad), rounded to float, and the rotation
// is float: x0 * c - x1 * s and x0 * s + x1 * c, each product and sum rounded once (_rn intrinsics,
// no FMA), the CPU path's arithmetic. The double work is per (token, pair, block of heads), not per
// value, so it stays small next to the memory traffic.
#include "kernels/cuda/rope.hpp"

#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.hpp"

namespace infer_plan::kernels::cuda {
namespace {

constexpr uint32_t kThreadsMax = 256;
constexpr uint32_t kHeadsPerBlock = 8;  // heads sharing one cos/sin per pair
constexpr uint32_t kGridYMax = 65535;

__global__ void __launch_bounds__(kThreadsMax)
    rope_kernel(float* x, uint32_t n_heads, const uint32_t* __restrict__ positions, RopeParams p) {
  const uint32_t t = blockIdx.x;
  const uint32_t head0 = blockIdx.y * kHeadsPerBlock;
  const uint32_t head_end = min(n_heads, head0 + kHeadsPerBlock);
  const auto n = static_cast<uint32_t>(p.dims != 0 ? p.dims : p.head_dim);
  const uint32_t half = n / 2;
  const double position = positions[t];
  for (uint32_t i = threadIdx.x; i < half; i += blockDim.x) {
    const double exponent = -2.0 * static_cast<double>(i) / static_cast<double>(n);
    double extrap = position * pow(static_cast<double>(p.theta_base), exponent);
    if (p.freq_factors) extrap /= static_cast<double>(p.freq_factors[i]);
    double angle = static_cast<double>(p.freq_scale) * extrap;
    if (p.ext_factor != 0.0f) {
      const double span = fmax(0.001, static_cast<double>(p.corr_high) - static_cast<double>(p.corr_low));
      const double y = (static_cast<double>(i) - static_cast<double>(p.corr_low)) / span;
      const double mix = (1.0 - fmin(1.0, fmax(0.0, y))) * static_cast<double>(p.ext_factor);
      angle = angle * (1.0 - mix) + extrap * mix;
    }
    double sin_angle = 0.0, cos_angle = 0.0;
    sincos(angle, &sin_angle, &cos_angle);
    const float c = static_cast<float>(cos_angle * static_cast<double>(p.magnitude));
    const float s = static_cast<float>(sin_angle * static_cast<double>(p.magnitude));
    const bool neox = p.layout == RopeLayout::neox;
    const uint32_t first = neox ? i : 2 * i;
    const uint32_t second = neox ? i + half : 2 * i + 1;
    for (uint32_t h = head0; h < head_end; ++h) {
      float* head = x + (static_cast<uint64_t>(t) * n_heads + h) * p.head_dim;
      const float x0 = head[first], x1 = head[second];
      head[first] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
      head[second] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
    }
  }
}

}  // namespace

void rope(float* x, uint32_t tokens, uint32_t n_heads, const uint32_t* positions, const RopeParams& p, void* stream) {
  if (x == nullptr || positions == nullptr)
    throw std::invalid_argument("rope: x and positions must be device pointers, not null");
  if (tokens < 1 || tokens > 0x7FFFFFFFu)
    throw std::invalid_argument("rope: tokens = " + std::to_string(tokens) + ", expected 1..2^31-1");
  const uint64_t head_blocks = (static_cast<uint64_t>(n_heads) + kHeadsPerBlock - 1) / kHeadsPerBlock;
  if (n_heads < 1 || head_blocks > kGridYMax)
    throw std::invalid_argument("rope: n_heads = " + std::to_string(n_heads) + ", expected 1.." +
                                std::to_string(kGridYMax * kHeadsPerBlock));
  if (p.head_dim < 2 || p.head_dim > 0xFFFFFFFFu || p.head_dim % 2 != 0)
    throw std::invalid_argument("rope: head_dim = " + std::to_string(p.head_dim) + ", expected an even number >= 2");
  if (p.rotated() % 2 != 0 || p.rotated() > p.head_dim)
    throw std::invalid_argument("rope: dims = " + std::to_string(p.dims) + ", expected an even number <= head_dim " +
                                std::to_string(p.head_dim));
  if (!(p.theta_base > 0.0f) || !std::isfinite(p.theta_base))
    throw std::invalid_argument("rope: theta_base = " + std::to_string(p.theta_base) + ", expected a finite value > 0");
  if (!(p.freq_scale > 0.0f) || !std::isfinite(p.freq_scale) || !std::isfinite(p.magnitude) || !std::isfinite(p.ext_factor))
    throw std::invalid_argument("rope: freq_scale = " + std::to_string(p.freq_scale) + ", magnitude = " +
                                std::to_string(p.magnitude) + ", expected finite values (freq_scale > 0)");
  // YaRN's ramp rises from corr_low to corr_high, as yarn_correction_range gives them (equal ends
  // make it a step). Reversed or non-finite ends would blend the angles wrongly without a sign.
  if (p.ext_factor != 0.0f &&
      (!std::isfinite(p.corr_low) || !std::isfinite(p.corr_high) || !(p.corr_low <= p.corr_high)))
    throw std::invalid_argument("rope: corr_low = " + std::to_string(p.corr_low) + ", corr_high = " +
                                std::to_string(p.corr_high) +
                                ", expected finite YaRN ramp ends with corr_low <= corr_high");
  if (p.layout != RopeLayout::normal && p.layout != RopeLayout::neox)
    throw std::invalid_argument("rope: unknown layout " + std::to_string(static_cast<int>(p.layout)));
  // A warp's worth of pairs at least, 256 at most (wider heads loop).
  const auto half = static_cast<uint32_t>(p.rotated() / 2);
  const uint32_t threads = half >= kThreadsMax ? kThreadsMax : (half + 31) / 32 * 32;
  rope_kernel<<<dim3(tokens, static_cast<uint32_t>(head_blocks)), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, n_heads, positions, p);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace infer_plan::kernels::cuda
