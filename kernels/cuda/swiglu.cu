// The gated activations: one thread per value, a grid-stride loop, each value's arithmetic from
// kernels/activation.hpp (the CPU's own). expf is the accurate one (no --use_fast_math): for a very
// negative gate exp(-g) overflows to inf and g / inf = -0, the right limit, as on the CPU.
#include "kernels/cuda/swiglu.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/activation.hpp"
#include "kernels/cuda/check.hpp"

namespace infer_plan::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr uint64_t kBlocksMax = 4096;  // enough to fill an H200 (132 SMs x 2048 threads) with a stride loop

enum class Glu { silu, gelu, oai };

// Gemma's GEGLU as kernels/cpu/swiglu's geglu: the gate rounded to fp16, GELU in float, the result
// rounded to fp16 (the CPU's table holds exactly those values), times up; outside the table's range
// 0 or the identity.
__device__ __forceinline__ float gelu_fp16_times(float g, float u) {
  if (g <= act::kGeluTableLow) return 0.0f;
  if (g >= act::kGeluTableHigh) return g * u;
  const float x = __half2float(__float2half_rn(g));
  return __half2float(__float2half_rn(act::gelu_tanh(x))) * u;
}

// out may alias gate or up (no __restrict__): each element is read, then written, by one thread.
template <Glu kKind>
__global__ void __launch_bounds__(kThreads)
    glu_kernel(const float* gate, const float* up, uint64_t n, float limit, float* out) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * kThreads;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const float g = gate[i], u = up[i];
    if constexpr (kKind == Glu::silu) out[i] = act::silu_times(g, u);
    else if constexpr (kKind == Glu::gelu) out[i] = gelu_fp16_times(g, u);
    else out[i] = act::swiglu_oai(g, u, limit);
  }
}

template <Glu kKind>
void launch(const char* who, const float* gate, const float* up, uint64_t n, float limit, float* out, void* stream) {
  if (gate == nullptr || up == nullptr || out == nullptr)
    throw std::invalid_argument(std::string(who) + ": gate, up and out must be device pointers, not null");
  if (n < 1) throw std::invalid_argument(std::string(who) + ": n must be >= 1");
  const uint64_t blocks = (n + kThreads - 1) / kThreads < kBlocksMax ? (n + kThreads - 1) / kThreads : kBlocksMax;
  glu_kernel<kKind><<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(gate, up, n,
                                                                                                       limit, out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void swiglu(const float* gate, const float* up, uint64_t n, float* out, void* stream) {
  launch<Glu::silu>("swiglu", gate, up, n, 0.0f, out, stream);
}

void geglu(const float* gate, const float* up, uint64_t n, float* out, void* stream) {
  launch<Glu::gelu>("geglu", gate, up, n, 0.0f, out, stream);
}

void swiglu_oai(const float* gate, const float* up, uint64_t n, float limit, float* out, void* stream) {
  if (!(limit > 0.0f)) throw std::invalid_argument("swiglu_oai: limit must be > 0 (GPT-OSS's is 7)");
  launch<Glu::oai>("swiglu_oai", gate, up, n, limit, out, stream);
}

}  // namespace infer_plan::kernels::cuda
