// The ggml reference algorithms re-expressed as plain loops. Bit-identity depends on doing every
// float operation in the same order and precision as ggml's C: each expression below keeps ggml's
// evaluation order, and this file is compiled with -ffp-contract=off so no a*b+c becomes an FMA
// (kernels/CMakeLists.txt). Block byte offsets are kernels/block_layout.hpp's (ggml-common.h's structs).
#include "kernels/cpu/quantize.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/block_layout.hpp"
#include "kernels/cpu/half.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan::kernels {
namespace {

// ggml casts float to int8_t in C, e.g. (int8_t)(x0 + 8.5f): truncation toward zero. Inputs are
// in range except when a scale underflows to a subnormal and 1/d is inf (or the input holds
// inf/NaN), where C leaves it undefined; we give what x86 gives (cvttss2si yields 0x80000000,
// whose low byte is 0) rather than trapping.
int8_t truncate_to_int8(float v) {
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
  return static_cast<int8_t>(static_cast<uint8_t>(static_cast<int32_t>(v) & 0xFF));
}

const GgmlTypeInfo& q8_0() { return ggml_type_info(GgmlType::Q8_0); }
const GgmlTypeInfo& q4_0() { return ggml_type_info(GgmlType::Q4_0); }
const GgmlTypeInfo& q2_k() { return ggml_type_info(GgmlType::Q2_K); }
const GgmlTypeInfo& q8_k() { return ggml_type_info(GgmlType::Q8_K); }

// How make_qkx2_quants searches for one sub-block's grid (ggml's arguments, per type).
struct GridSearch {
  int n;         // values in the sub-block
  int nmax;      // the largest code
  float rmin;    // the first of the nstep + 1 grids tried: (nmax + rmin + rdelta * is) / (max - min)
  float rdelta;
  int nstep;
  bool use_mad;  // error measured as the weighted absolute difference, else the weighted square
};
constexpr GridSearch kQ2_KGrid{16, 3, -0.5f, 0.1f, 15, true};
constexpr GridSearch kQ4_KGrid{32, 15, -1.f, 0.1f, 20, false};
constexpr GridSearch kQ5_KGrid{32, 31, -0.5f, 0.1f, 15, false};

// ggml's make_qkx2_quants for one sub-block: fit x ~ scale * L - the_min with L in 0..nmax,
// weighting each value by `weights`. Start from the plain min/max grid, then try nstep + 1 slightly
// different grids, solve the weighted least squares scale and min for each rounding, and keep the
// one with the smallest weighted error. Returns the scale; *the_min gets the (non-negative) min to
// subtract.
float fit_scale_and_min(const GridSearch& g, const float* x, const float* weights, uint8_t* L, float* the_min) {
  const int n = g.n;
  const int nmax = g.nmax;
  std::array<uint8_t, 32> Laux{};
  assert(n <= static_cast<int>(Laux.size()));

  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;  // the offset only ever lowers the grid: codes start at min(x, 0)
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  const auto error_of = [&](float diff) { return g.use_mad ? std::fabs(diff) : diff * diff; };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    const float diff = scale * static_cast<float>(L[i]) + min - x[i];
    best_error += weights[i] * error_of(diff);
  }
  for (int is = 0; is <= g.nstep; ++is) {
    iscale = (g.rmin + g.rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const float lf = static_cast<float>(l);
      // ggml writes w*l*l and w*l*x[i]: left to right, (w*l)*l
      sum_l += w * lf;
      sum_l2 += w * lf * lf;
      sum_xl += w * lf * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {  // a positive min would shift the grid up; refit the scale alone
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        cur_error += weights[i] * error_of(diff);
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// ggml's make_qx_quants with rmse_type 1 and no importance: a symmetric grid for n values, codes
// -nmax..nmax-1 stored offset by nmax, each value weighted by its square; 19 grids around the one
// that maps the largest magnitude to -nmax, keeping the one with the best weighted fit. Returns
// the scale (its sign that of -max).
float fit_symmetric_scale(int n, int nmax, const float* x, int8_t* L) {
  constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const auto code = [&](float iscale, int i) { return std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i]))); };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = code(iscale, i);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    const float lf = static_cast<float>(l);
    sumlx += w * x[i] * lf;  // (w * x) * l, as ggml's w*x[i]*l
    suml2 += w * lf * lf;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = code(iscale, i);
      const float w = x[i] * x[i];
      const float lf = static_cast<float>(l);
      sumlx += w * x[i] * lf;
      suml2 += w * lf * lf;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(nmax + code(iscale, i));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

void check_sizes(GgmlType type, size_t values, size_t bytes, std::string_view what) {
  const uint64_t want = ggml_row_bytes(type, values, what);
  if (bytes != want)
    throw InputError(fmt::format("{}: {} values of {} need {} bytes, got {}", what, values,
                                 ggml_type_info(type).name, want, bytes));
}

}  // namespace

int nearest_int(float x) {
  // 12582912 = 1.5 * 2^23: the sum's ulp is 1, so the float add rounds x to an integer (ties to
  // even) and that integer sits in the low 23 mantissa bits, offset by 2^22.
  const float biased = x + 12582912.f;
  const int32_t bits = std::bit_cast<int32_t>(biased);
  return (bits & 0x007fffff) - 0x00400000;
}

bool has_quantizer(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_NL:
    case GgmlType::IQ4_XS:
    case GgmlType::MXFP4:
    case GgmlType::Q8_K: return true;
    default: return false;
  }
}

std::string_view quantizer_type_names() { return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4, Q8_K"; }

// The float types as rows too, so weights and KV caches of any supported type are written and
// read by the same two calls. Little-endian storage, as in a GGUF file.
void store_row_float(GgmlType type, std::span<const float> values, std::span<uint8_t> bytes) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == GgmlType::F32) {
      std::memcpy(&bytes[4 * i], &values[i], 4);  // the hosts we build for are little-endian
      continue;
    }
    const uint16_t h = type == GgmlType::F16 ? fp32_to_fp16(values[i]) : fp32_to_bf16(values[i]);
    bytes[2 * i] = static_cast<uint8_t>(h & 0xFF);
    bytes[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
}
void load_row_float(GgmlType type, std::span<const uint8_t> bytes, std::span<float> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == GgmlType::F32) {
      std::memcpy(&values[i], &bytes[4 * i], 4);
      continue;
    }
    const auto h = static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
    values[i] = type == GgmlType::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
  }
}

void quantize_row_q8_0(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(values.size() % kQ8_0Values == 0 && q8_0().block_values == kQ8_0Values);
  assert(blocks.size() == values.size() / kQ8_0Values * q8_0().block_bytes);
  const size_t block_bytes = q8_0().block_bytes;
  for (size_t b = 0; b < values.size() / kQ8_0Values; ++b) {
    const float* x = values.data() + b * kQ8_0Values;
    uint8_t* out = blocks.data() + b * block_bytes;
    // Symmetric: the largest magnitude maps to +-127. ggml's MAX(a, b) is a > b ? a : b.
    float amax = 0.0f;
    for (size_t j = 0; j < kQ8_0Values; ++j) amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;  // the float d, not its fp16 rounding
    store_fp16(out, d);
    for (size_t j = 0; j < kQ8_0Values; ++j)
      out[kQ8_0Qs + j] = static_cast<uint8_t>(truncate_to_int8(std::round(x[j] * id)));  // half away from 0
  }
}

void dequantize_row_q8_0(std::span<const uint8_t> blocks, std::span<float> values) {
  const size_t block_bytes = q8_0().block_bytes;
  assert(blocks.size() == values.size() / kQ8_0Values * block_bytes);
  for (size_t b = 0; b < values.size() / kQ8_0Values; ++b) {
    const uint8_t* in = blocks.data() + b * block_bytes;
    const float d = load_fp16(in);
    for (size_t j = 0; j < kQ8_0Values; ++j)
      values[b * kQ8_0Values + j] = static_cast<float>(static_cast<int8_t>(in[kQ8_0Qs + j])) * d;
  }
}

void quantize_row_q4_0(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(values.size() % kQ4_0Values == 0 && q4_0().block_values == kQ4_0Values);
  assert(blocks.size() == values.size() / kQ4_0Values * q4_0().block_bytes);
  const size_t block_bytes = q4_0().block_bytes;
  for (size_t b = 0; b < values.size() / kQ4_0Values; ++b) {
    const float* x = values.data() + b * kQ4_0Values;
    uint8_t* out = blocks.data() + b * block_bytes;
    // The signed value of largest magnitude (the first one on ties) maps to code 0 = -8, so the
    // 16 codes -8..7 cover it exactly and the opposite side reaches only 7/8 of it.
    float amax = 0.0f;
    float max = 0.0f;
    for (size_t j = 0; j < kQ4_0Values; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(out, d);
    // Value j goes in the low nibble of byte j, value j + 16 in its high nibble. +8.5 then
    // truncation = round half up onto codes 0..16; 16 (only at -max's mirror) is clamped to 15.
    for (size_t j = 0; j < kQ4_0Values / 2; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[kQ4_0Values / 2 + j] * id;
      const int q0 = std::min(15, static_cast<int>(truncate_to_int8(x0 + 8.5f)));
      const int q1 = std::min(15, static_cast<int>(truncate_to_int8(x1 + 8.5f)));
      // ggml stores MIN(15, int8) into a uint8_t, then ORs q1 << 4: both modulo 256
      out[kQ4_0Qs + j] = static_cast<uint8_t>(static_cast<uint8_t>(q0) | (static_cast<uint8_t>(q1) << 4));
    }
  }
}

void dequantize_row_q4_0(std::span<const uint8_t> blocks, std::span<float> values) {
  const size_t block_bytes = q4_0().block_bytes;
  assert(blocks.size() == values.size() / kQ4_0Values * block_bytes);
  for (size_t b = 0; b < values.size() / kQ4_0Values; ++b) {
    const uint8_t* in = blocks.data() + b * block_bytes;
    const float d = load_fp16(in);
    for (size_t j = 0; j < kQ4_0Values / 2; ++j) {
      const int x0 = (in[kQ4_0Qs + j] & 0x0F) - 8;
      const int x1 = (in[kQ4_0Qs + j] >> 4) - 8;
      values[b * kQ4_0Values + j] = static_cast<float>(x0) * d;
      values[b * kQ4_0Values + kQ4_0Values / 2 + j] = static_cast<float>(x1) * d;
    }
  }
}

void quantize_row_q5_0(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(blocks.size() == values.size() / kQ5_0Values * kQ5_0Bytes);
  for (size_t b = 0; b < values.size() / kQ5_0Values; ++b) {
    const float* x = values.data() + b * kQ5_0Values;
    uint8_t* out = blocks.data() + b * kQ5_0Bytes;
    // As Q4_0 with 32 codes: the signed value of largest magnitude maps to code 0 = -16.
    float amax = 0.0f, max = 0.0f;
    for (size_t j = 0; j < kQ5_0Values; ++j)
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(out, d);
    uint32_t qh = 0;
    for (size_t j = 0; j < kQ5_0Values / 2; ++j) {
      // +16.5 then truncation rounds half up onto 0..32; 32 (-max's mirror) is clamped to 31
      const auto q0 = static_cast<uint8_t>(std::min(31, static_cast<int>(truncate_to_int8(x[j] * id + 16.5f))));
      const auto q1 = static_cast<uint8_t>(
          std::min(31, static_cast<int>(truncate_to_int8(x[kQ5_0Values / 2 + j] * id + 16.5f))));
      out[kQ5_0Qs + j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= ((q0 & 0x10u) >> 4) << j;
      qh |= ((q1 & 0x10u) >> 4) << (j + kQ5_0Values / 2);
    }
    for (uint32_t i = 0; i < 4; ++i) out[kQ5_0Qh + i] = static_cast<uint8_t>(qh >> (8 * i));
  }
}

void dequantize_row_q5_0(std::span<const uint8_t> blocks, std::span<float> values) {
  assert(blocks.size() == values.size() / kQ5_0Values * kQ5_0Bytes);
  for (size_t b = 0; b < values.size() / kQ5_0Values; ++b) {
    const uint8_t* in = blocks.data() + b * kQ5_0Bytes;
    const float d = load_fp16(in);
    for (uint32_t j = 0; j < kQ5_0Values; ++j)
      values[b * kQ5_0Values + j] = static_cast<float>(static_cast<int>(q5_0_code(in, j)) - 16) * d;
  }
}

// Q4_1 and Q5_1 (ggml's quantize_row_q4_1_ref / q5_1_ref): codes 0..2^bits - 1 from the block's
// minimum m to its maximum, d = (max - min) / (2^bits - 1); value = q d + m.
void quantize_row_min_scale(int bits, std::span<const float> values, std::span<uint8_t> blocks) {
  const uint32_t block_bytes = bits == 4 ? kQ4_1Bytes : kQ5_1Bytes;
  static_assert(kQ4_1Values == kQ5_1Values && kQ4_1D == kQ5_1D && kQ4_1M == kQ5_1M, "one header");
  assert(blocks.size() == values.size() / kQ4_1Values * block_bytes);
  for (size_t b = 0; b < values.size() / kQ4_1Values; ++b) {
    const float* x = values.data() + b * kQ4_1Values;
    uint8_t* out = blocks.data() + b * block_bytes;
    float min = std::numeric_limits<float>::max(), max = -std::numeric_limits<float>::max();
    for (size_t j = 0; j < kQ4_1Values; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / static_cast<float>((1 << bits) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(out + kQ4_1D, d);
    store_fp16(out + kQ4_1M, min);
    uint32_t qh = 0;
    for (size_t j = 0; j < kQ4_1Values / 2; ++j) {
      // +0.5 then truncation rounds half up; Q4_1 clamps to 15 (ggml's MIN(15, (int8_t)...)), Q5_1
      // does not ((uint8_t)...: x - min is at most d 31 up to rounding)
      const float x0 = (x[j] - min) * id, x1 = (x[kQ4_1Values / 2 + j] - min) * id;
      int q0 = truncate_to_int8(x0 + 0.5f), q1 = truncate_to_int8(x1 + 0.5f);
      if (bits == 4) {
        q0 = std::min(15, q0), q1 = std::min(15, q1);
        out[kQ4_1Qs + j] = static_cast<uint8_t>(static_cast<uint8_t>(q0) | (static_cast<uint8_t>(q1) << 4));
        continue;
      }
      out[kQ5_1Qs + j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= ((static_cast<uint32_t>(q0) & 0x10u) >> 4) << j;
      qh |= ((static_cast<uint32_t>(q1) & 0x10u) >> 4) << (j + kQ5_1Values / 2);
    }
    if (bits == 5)
      for (uint32_t i = 0; i < 4; ++i) out[kQ5_1Qh + i] = static_cast<uint8_t>(qh >> (8 * i));
  }
}

void dequantize_row_min_scale(int bits, std::span<const uint8_t> blocks, std::span<float> values) {
  const uint32_t block_bytes = bits == 4 ? kQ4_1Bytes : kQ5_1Bytes;
  assert(blocks.size() == values.size() / kQ4_1Values * block_bytes);
  for (size_t b = 0; b < values.size() / kQ4_1Values; ++b) {
    const uint8_t* in = blocks.data() + b * block_bytes;
    const float d = load_fp16(in + kQ4_1D), m = load_fp16(in + kQ4_1M);
    for (uint32_t j = 0; j < kQ4_1Values; ++j) {
      const uint32_t q = bits == 4 ? (j < 16 ? in[kQ4_1Qs + j] & 0x0F : in[kQ4_1Qs + j - 16] >> 4)
                                   : q5_code(in + kQ5_1Qh, in + kQ5_1Qs, j);
      values[b * kQ4_1Values + j] = static_cast<float>(q) * d + m;  // ggml: x0*d + m, two roundings
    }
  }
}

void quantize_row_q4_1(std::span<const float> values, std::span<uint8_t> blocks) {
  quantize_row_min_scale(4, values, blocks);
}
void dequantize_row_q4_1(std::span<const uint8_t> blocks, std::span<float> values) {
  dequantize_row_min_scale(4, blocks, values);
}
void quantize_row_q5_1(std::span<const float> values, std::span<uint8_t> blocks) {
  quantize_row_min_scale(5, values, blocks);
}
void dequantize_row_q5_1(std::span<const uint8_t> blocks, std::span<float> values) {
  dequantize_row_min_scale(5, blocks, values);
}

void quantize_row_q2_k(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(values.size() % kQ2_KValues == 0 && q2_k().block_values == kQ2_KValues);
  assert(blocks.size() == values.size() / kQ2_KValues * q2_k().block_bytes);
  constexpr size_t kSubBlocks = kQ2_KValues / kQ2_KSubValues;
  constexpr float q4scale = 15.f;  // sub-block scales and mins are 4-bit codes of the super-block's
  const size_t block_bytes = q2_k().block_bytes;
  for (size_t b = 0; b < values.size() / kQ2_KValues; ++b) {
    const float* x = values.data() + b * kQ2_KValues;
    uint8_t* out = blocks.data() + b * block_bytes;
    std::array<uint8_t, kQ2_KValues> L{};
    std::array<float, kQ2_KSubValues> weights{};
    std::array<float, kSubBlocks> scales{};
    std::array<float, kSubBlocks> mins{};

    // 1. Fit each sub-block's scale and min in float.
    float max_scale = 0;  // the min is subtracted, so scales are non-negative
    float max_min = 0;
    for (size_t j = 0; j < kSubBlocks; ++j) {
      for (size_t l = 0; l < kQ2_KSubValues; ++l) weights[l] = std::fabs(x[kQ2_KSubValues * j + l]);
      scales[j] = fit_scale_and_min(kQ2_KGrid, x + kQ2_KSubValues * j, weights.data(), L.data() + kQ2_KSubValues * j,
                                    &mins[j]);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }

    // 2. Quantize the scales (low nibble) and mins (high nibble) to 4 bits against the largest;
    //    ggml assigns the int code to a uint8_t: modulo 256.
    uint8_t* sc = out + kQ2_KScales;
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (size_t j = 0; j < kSubBlocks; ++j) sc[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      store_fp16(out + kQ2_KD, max_scale / q4scale);
    } else {
      for (size_t j = 0; j < kSubBlocks; ++j) sc[j] = 0;
      store_fp16(out + kQ2_KD, 0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (size_t j = 0; j < kSubBlocks; ++j)
        sc[j] = static_cast<uint8_t>(sc[j] | (nearest_int(iscale * mins[j]) << 4));
      store_fp16(out + kQ2_KDmin, max_min / q4scale);
    } else {
      store_fp16(out + kQ2_KDmin, 0.f);
    }

    // 3. Re-round every value against the scale and min as stored (fp16 x 4-bit), so the codes fit
    //    what the dequantizer will see. A sub-block whose stored scale is 0 keeps its step-1 codes.
    const float d_stored = load_fp16(out + kQ2_KD);
    const float dmin_stored = load_fp16(out + kQ2_KDmin);
    for (size_t j = 0; j < kSubBlocks; ++j) {
      const float d = d_stored * static_cast<float>(sc[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = dmin_stored * static_cast<float>(sc[j] >> 4);
      for (size_t i = 0; i < kQ2_KSubValues; ++i) {
        const int l = nearest_int((x[kQ2_KSubValues * j + i] + dm) / d);
        L[kQ2_KSubValues * j + i] = static_cast<uint8_t>(std::max(0, std::min(3, l)));
      }
    }

    // 4. Pack: each half of 128 values fills 32 bytes; byte l holds values l, l+32, l+64, l+96 of
    //    that half in bits 0-1, 2-3, 4-5, 6-7 (so one shift serves 32 consecutive values).
    uint8_t* qs = out + kQ2_KQs;
    for (size_t half = 0; half < kQ2_KValues; half += 128) {
      for (size_t l = 0; l < 32; ++l) {
        qs[half / 4 + l] = static_cast<uint8_t>(L[half + l] | (L[half + l + 32] << 2) |
                                                (L[half + l + 64] << 4) | (L[half + l + 96] << 6));
      }
    }
  }
}

void dequantize_row_q2_k(std::span<const uint8_t> blocks, std::span<float> values) {
  const size_t block_bytes = q2_k().block_bytes;
  assert(blocks.size() == values.size() / kQ2_KValues * block_bytes);
  float* y = values.data();
  for (size_t b = 0; b < values.size() / kQ2_KValues; ++b) {
    const uint8_t* in = blocks.data() + b * block_bytes;
    const float d = load_fp16(in + kQ2_KD);
    const float dmin = load_fp16(in + kQ2_KDmin);
    const uint8_t* q = in + kQ2_KQs;
    size_t is = 0;  // sub-block index: 16 values each, in value order
    for (size_t half = 0; half < kQ2_KValues; half += 128) {
      for (int shift = 0; shift < 8; shift += 2) {
        // bytes 0-15 of this half's 32 hold one sub-block at this shift, bytes 16-31 the next
        for (size_t part = 0; part < 32; part += 16) {
          const uint8_t s = in[kQ2_KScales + is++];
          const float dl = d * static_cast<float>(s & 0xF);
          const float ml = dmin * static_cast<float>(s >> 4);
          for (size_t l = 0; l < 16; ++l)
            *y++ = dl * static_cast<float>((q[part + l] >> shift) & 3) - ml;
        }
      }
      q += 32;
    }
  }
}

// ggml's make_q3_quants with do_rmse: a symmetric grid of codes -nmax..nmax-1 (stored offset by
// nmax), values weighted by their square, then up to five passes of moving single codes where that
// raises the weighted fit's sumlx^2 / suml2. Returns the scale.
float fit_symmetric_scale_refined(int n, int nmax, const float* x, int8_t* L) {
  constexpr float kGroupMaxEps = 1e-15f;
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const auto li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx > 0) {
        float sl2 = suml2 - w * li * li;
        const int new_l = std::max(-nmax, std::min(nmax - 1, nearest_int(x[i] * sl2 / slx)));
        if (new_l != L[i]) {
          const auto nl = static_cast<float>(new_l);
          slx += w * x[i] * nl;
          sl2 += w * nl * nl;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Q3_K (ggml's quantize_row_q3_K_ref): each 16-value sub-block a refined symmetric 3-bit grid, its
// scale a 6-bit code of the block's largest-magnitude scale (which maps to -32).
void quantize_row_q3_k(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(values.size() % kQ3_KValues == 0 && blocks.size() == values.size() / kQ3_KValues * kQ3_KBytes);
  constexpr size_t kSubBlocks = kQ3_KValues / kQ3_KSubValues;
  for (size_t b = 0; b < values.size() / kQ3_KValues; ++b) {
    const float* x = values.data() + b * kQ3_KValues;
    uint8_t* out = blocks.data() + b * kQ3_KBytes;
    std::array<int8_t, kQ3_KValues> L{};
    std::array<float, kSubBlocks> scales{};
    float max_scale = 0;
    float amax = 0;
    for (size_t j = 0; j < kSubBlocks; ++j) {
      scales[j] = fit_symmetric_scale_refined(kQ3_KSubValues, 4, x + kQ3_KSubValues * j, L.data() + kQ3_KSubValues * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    uint8_t* sc = out + kQ3_KScales;
    std::memset(sc, 0, 12);
    if (max_scale != 0) {
      const float iscale = -32.f / max_scale;
      for (size_t j = 0; j < kSubBlocks; ++j) {
        // ggml keeps nearest_int in an int8_t, clamps to -32..31 and adds 32: 0..63
        const int l = std::max(-32, std::min(31, static_cast<int>(static_cast<int8_t>(nearest_int(iscale * scales[j]))))) + 32;
        if (j < 8)
          sc[j] = static_cast<uint8_t>(l & 0xF);
        else
          sc[j - 8] = static_cast<uint8_t>(sc[j - 8] | ((l & 0xF) << 4));
        sc[j % 4 + 8] = static_cast<uint8_t>(sc[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
      }
      store_fp16(out + kQ3_KD, 1 / iscale);
    } else {
      store_fp16(out + kQ3_KD, 0.f);
    }
    for (uint32_t j = 0; j < kSubBlocks; ++j) {
      const float d = load_fp16(out + kQ3_KD) * static_cast<float>(q3_k_scale(j, sc));
      if (d == 0.0f) continue;
      for (size_t i = 0; i < kQ3_KSubValues; ++i) {
        const int l = nearest_int(x[kQ3_KSubValues * j + i] / d);
        L[kQ3_KSubValues * j + i] = static_cast<int8_t>(std::max(-4, std::min(3, l)) + 4);
      }
    }
    // the third bit of value 32 s + l is bit s of hmask byte l; the low two as Q2_K's codes
    uint8_t* hmask = out + kQ3_KHmask;
    std::memset(hmask, 0, kQ3_KValues / 8);
    for (size_t j = 0; j < kQ3_KValues; ++j) {
      if (L[j] > 3) {
        hmask[j % 32] = static_cast<uint8_t>(hmask[j % 32] | (1 << (j / 32)));
        L[j] = static_cast<int8_t>(L[j] - 4);
      }
    }
    uint8_t* qs = out + kQ3_KQs;
    for (size_t half = 0; half < kQ3_KValues; half += 128)
      for (size_t l = 0; l < 32; ++l)
        qs[half / 4 + l] = static_cast<uint8_t>(L[half + l] | (L[half + l + 32] << 2) | (L[half + l + 64] << 4) |
                                                (L[half + l + 96] << 6));
  }
}

void dequantize_row_q3_k(std::span<const uint8_t> blocks, std::span<float> values) {
  assert(values.size() % kQ3_KValues == 0 && blocks.size() == values.size() / kQ3_KValues * kQ3_KBytes);
  for (size_t b = 0; b < values.size() / kQ3_KValues; ++b) {
    const uint8_t* in = blocks.data() + b * kQ3_KBytes;
    float* y = values.data() + b * kQ3_KValues;
    const float d_all = load_fp16(in + kQ3_KD);
    for (uint32_t v = 0; v < kQ3_KValues; ++v) {
      const uint32_t half = v / 128, s = (v % 128) / 32, l = v % 32;
      const int low = (in[kQ3_KQs + 32 * half + l] >> (2 * s)) & 3;
      const int high = (in[kQ3_KHmask + l] >> (4 * half + s)) & 1;
      const float dl = d_all * static_cast<float>(q3_k_scale(v / 16, in + kQ3_KScales));
      y[v] = dl * static_cast<float>(low - (high ? 0 : 4));
    }
  }
}

// Q4_K and Q5_K (ggml's quantize_row_q4_K_ref / q5_K_ref, the path llama-quantize takes without an
// importance matrix): each 32-value sub-block's scale and min fitted in float, both quantized to 6
// bits against the block's largest, then every value re-rounded against the stored ones. `bits` is
// 4 or 5; `out` is one block laid out as BlockQ4_K or BlockQ5_K.
void quantize_block_k_scale_min(int bits, const float* x, uint8_t* out) {
  constexpr size_t kSubBlocks = kQ4_KValues / kQ4_KSubValues;
  const GridSearch& grid = bits == 4 ? kQ4_KGrid : kQ5_KGrid;
  const int nmax = bits == 4 ? 15 : 31;
  const uint32_t d_at = bits == 4 ? kQ4_KD : kQ5_KD, dmin_at = bits == 4 ? kQ4_KDmin : kQ5_KDmin;
  uint8_t* sc = out + (bits == 4 ? kQ4_KScales : kQ5_KScales);
  std::array<uint8_t, kQ4_KValues> L{};
  std::array<float, kQ4_KSubValues> weights{};
  std::array<float, kSubBlocks> scales{};
  std::array<float, kSubBlocks> mins{};

  // 1. Each sub-block's scale and min, values weighted by the sub-block's RMS plus their magnitude.
  float max_scale = 0;
  float max_min = 0;
  for (size_t j = 0; j < kSubBlocks; ++j) {
    const float* xj = x + kQ4_KSubValues * j;
    float sum_x2 = 0;
    for (size_t l = 0; l < kQ4_KSubValues; ++l) sum_x2 += xj[l] * xj[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (size_t l = 0; l < kQ4_KSubValues; ++l) weights[l] = av_x + std::fabs(xj[l]);
    scales[j] = fit_scale_and_min(grid, xj, weights.data(), L.data() + kQ4_KSubValues * j, &mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  // 2. 6-bit codes of the scales and mins (ggml stores nearest_int in a uint8_t, then clamps to 63):
  //    sub-blocks 0-3 whole in bytes 0-3 and 4-7, 4-7 as nibbles in bytes 8-11 with their top two
  //    bits in the top of bytes 0-7.
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (size_t j = 0; j < kSubBlocks; ++j) {
    const auto ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const auto lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      sc[j] = ls;
      sc[j + 4] = lm;
    } else {
      sc[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      sc[j - 4] = static_cast<uint8_t>(sc[j - 4] | ((ls >> 4) << 6));
      sc[j] = static_cast<uint8_t>(sc[j] | ((lm >> 4) << 6));
    }
  }
  store_fp16(out + d_at, max_scale / 63.f);
  store_fp16(out + dmin_at, max_min / 63.f);

  // 3. Re-round against the stored scale and min; a sub-block whose stored scale is 0 keeps step 1's.
  for (uint32_t j = 0; j < kSubBlocks; ++j) {
    const KScaleMin m = k_scale_min(j, sc);
    const float d = load_fp16(out + d_at) * static_cast<float>(m.scale);
    if (d == 0.0f) continue;
    const float dm = load_fp16(out + dmin_at) * static_cast<float>(m.min);
    for (size_t i = 0; i < kQ4_KSubValues; ++i) {
      const int l = nearest_int((x[kQ4_KSubValues * j + i] + dm) / d);
      L[kQ4_KSubValues * j + i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }

  // 4. Pack: each 64 values fill 32 bytes, value l in the low nibble of byte l and 32 + l in its
  //    high nibble; Q5_K's fifth bits go to qh, bits 2p and 2p + 1 for the p-th 64.
  uint8_t* qs = out + (bits == 4 ? kQ4_KQs : kQ5_KQs);
  uint8_t* qh = out + kQ5_KQh;
  if (bits == 5) std::memset(qh, 0, kQ5_KValues / 8);
  for (size_t p = 0; p < kQ4_KValues / 64; ++p) {
    for (size_t l = 0; l < 32; ++l) {
      const uint8_t lo = L[64 * p + l], hi = L[64 * p + 32 + l];
      if (bits == 5) qh[l] = static_cast<uint8_t>(qh[l] | ((lo >> 4) << (2 * p)) | ((hi >> 4) << (2 * p + 1)));
      qs[32 * p + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
    }
  }
}

void dequantize_block_k_scale_min(int bits, const uint8_t* in, float* y) {
  const float d = load_fp16(in + (bits == 4 ? kQ4_KD : kQ5_KD));
  const float dmin = load_fp16(in + (bits == 4 ? kQ4_KDmin : kQ5_KDmin));
  const uint8_t* sc = in + (bits == 4 ? kQ4_KScales : kQ5_KScales);
  const uint8_t* qs = in + (bits == 4 ? kQ4_KQs : kQ5_KQs);
  const uint8_t* qh = in + kQ5_KQh;
  for (uint32_t p = 0; p < kQ4_KValues / 64; ++p) {
    for (uint32_t half = 0; half < 2; ++half) {
      const KScaleMin m = k_scale_min(2 * p + half, sc);
      const float dl = d * static_cast<float>(m.scale);
      const float ml = dmin * static_cast<float>(m.min);
      for (size_t l = 0; l < 32; ++l) {
        int q = (qs[32 * p + l] >> (4 * half)) & 0xF;
        if (bits == 5 && (qh[l] >> (2 * p + half) & 1)) q += 16;
        *y++ = dl * static_cast<float>(q) - ml;
      }
    }
  }
}

void quantize_row_q4_k(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(values.size() % kQ4_KValues == 0 && blocks.size() == values.size() / kQ4_KValues * kQ4_KBytes);
  for (size_t b = 0; b < values.size() / kQ4_KValues; ++b)
    quantize_block_k_scale_min(4, values.data() + b * kQ4_KValues, blocks.data() + b * kQ4_KBytes);
}
void dequantize_row_q4_k(std::span<const uint8_t> blocks, std::span<float> values) {
  assert(values.size() % kQ4_KValues == 0 && blocks.size() == values.size() / kQ4_KValues * kQ4_KBytes);
  for (size_t b = 0; b < values.size() / kQ4_KValues; ++b)
    dequantize_block_k_scale_min(4, blocks.data() + b * kQ4_KBytes, values.data() + b * kQ4_KValues);
}
void quantize_row_q5_k(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(values.size() % kQ5_KValues == 0 && blocks.size() == values.size() / kQ5_KValues * kQ5_KBytes);
  for (size_t b = 0; b < values.size() / kQ5_KValues; ++b)
    quantize_block_k_scale_min(5, values.data() + b * kQ5_KValues, blocks.data() + b * kQ5_KBytes);
}
void dequantize_row_q5_k(std::span<const uint8_t> blocks, std::span<float> values) {
  assert(values.size() % kQ5_KValues == 0 && blocks.size() == values.size() / kQ5_KValues * kQ5_KBytes);
  for (size_t b = 0; b < values.size() / kQ5_KValues; ++b)
    dequantize_block_k_scale_min(5, blocks.data() + b * kQ5_KBytes, values.data() + b * kQ5_KValues);
}

// Q6_K (ggml's quantize_row_q6_K_ref): each 16-value sub-block a symmetric 6-bit grid, its scale an
// 8-bit code of the block's largest-magnitude scale (which maps to -128).
void quantize_row_q6_k(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(values.size() % kQ6_KValues == 0 && blocks.size() == values.size() / kQ6_KValues * kQ6_KBytes);
  constexpr size_t kSubBlocks = kQ6_KValues / kQ6_KSubValues;
  constexpr float kGroupMaxEps = 1e-15f;
  for (size_t b = 0; b < values.size() / kQ6_KValues; ++b) {
    const float* x = values.data() + b * kQ6_KValues;
    uint8_t* out = blocks.data() + b * kQ6_KBytes;
    std::array<int8_t, kQ6_KValues> L{};
    std::array<float, kSubBlocks> scales{};
    float max_scale = 0;
    float max_abs_scale = 0;
    for (size_t j = 0; j < kSubBlocks; ++j) {
      scales[j] = fit_symmetric_scale(kQ6_KSubValues, 32, x + kQ6_KSubValues * j, L.data() + kQ6_KSubValues * j);
      if (std::fabs(scales[j]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(out, 0, kQ6_KBytes);
      continue;
    }
    const float iscale = -128.f / max_scale;
    store_fp16(out + kQ6_KD, 1 / iscale);
    for (size_t j = 0; j < kSubBlocks; ++j)  // int8_t in ggml: modulo 256
      out[kQ6_KScales + j] = static_cast<uint8_t>(std::min(127, nearest_int(iscale * scales[j])));
    for (size_t j = 0; j < kSubBlocks; ++j) {
      const float d = load_fp16(out + kQ6_KD) * static_cast<float>(static_cast<int8_t>(out[kQ6_KScales + j]));
      if (d == 0.0f) continue;
      for (size_t i = 0; i < kQ6_KSubValues; ++i) {
        const int l = nearest_int(x[kQ6_KSubValues * j + i] / d);
        L[kQ6_KSubValues * j + i] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
      }
    }
    for (size_t h = 0; h < kQ6_KValues / 128; ++h) {
      uint8_t* ql = out + kQ6_KQl + 64 * h;
      uint8_t* qh = out + kQ6_KQh + 32 * h;
      const int8_t* Lh = L.data() + 128 * h;
      for (size_t l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                     ((Lh[l + 96] >> 4) << 6));
      }
    }
  }
}

void dequantize_row_q6_k(std::span<const uint8_t> blocks, std::span<float> values) {
  assert(values.size() % kQ6_KValues == 0 && blocks.size() == values.size() / kQ6_KValues * kQ6_KBytes);
  for (size_t b = 0; b < values.size() / kQ6_KValues; ++b) {
    const uint8_t* in = blocks.data() + b * kQ6_KBytes;
    float* y = values.data() + b * kQ6_KValues;
    const float d = load_fp16(in + kQ6_KD);
    for (size_t h = 0; h < kQ6_KValues / 128; ++h) {
      const uint8_t* ql = in + kQ6_KQl + 64 * h;
      const uint8_t* qh = in + kQ6_KQh + 32 * h;
      const auto* sc = reinterpret_cast<const int8_t*>(in + kQ6_KScales + 8 * h);
      for (size_t l = 0; l < 32; ++l) {
        const size_t is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        // ggml: d * sc * q, left to right with sc and q as floats
        y[128 * h + l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[128 * h + l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[128 * h + l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[128 * h + l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

// The index of the table value nearest x (ggml's best_index_int8; ties to the lower).
int nearest_iq4_index(float x) {
  const int8_t* val = kIq4Values;
  if (x <= val[0]) return 0;
  if (x >= val[15]) return 15;
  int ml = 0, mu = 15;
  while (mu - ml > 1) {
    const int mav = (ml + mu) / 2;
    if (x < val[mav]) mu = mav;
    else ml = mav;
  }
  return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

// IQ4_NL and IQ4_XS as llama-quantize writes them without an importance matrix (ggml's
// quantize_iq4_nl / quantize_iq4_xs: quantize_row_iq4_nl_impl with 7 tries): each 32-value sub-block's
// scale the weighted (x^2) least-squares fit over 15 grids around the one mapping the largest
// magnitude to -127; IQ4_XS then codes the sub-blocks' scales in 6 bits against the largest and
// re-picks every index against the scale as coded. `values` is one block of 32 (IQ4_NL) or 256.
void quantize_block_iq4(bool xs, const float* x, uint8_t* out) {
  constexpr float kGroupMaxEps = 1e-15f;
  constexpr int kTries = 7;
  const int n = xs ? static_cast<int>(kIQ4_XSValues) : static_cast<int>(kIQ4_NLValues);
  const int subs = n / 32;
  std::array<uint8_t, kIQ4_XSValues> L{};
  std::array<float, kIQ4_XSValues / 32> scales{};
  uint8_t* qs = out + (xs ? kIQ4_XSQs : kIQ4_NLQs);
  std::memset(qs, 0, static_cast<size_t>(n) / 2);
  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < subs; ++ib) {
    const float* xb = x + 32 * ib;
    uint8_t* Lb = L.data() + 32 * ib;
    std::array<float, 32> weight{};
    for (int j = 0; j < 32; ++j) weight[j] = xb[j] * xb[j];
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    if (amax < kGroupMaxEps) {
      scales[ib] = 0;
      continue;
    }
    float d = -max / kIq4Values[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const int l = nearest_iq4_index(id * xb[j]);
      Lb[j] = static_cast<uint8_t>(l);
      const auto q = static_cast<float>(kIq4Values[l]);
      sumqx += weight[j] * q * xb[j];
      sumq2 += weight[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -kTries; itry <= kTries; ++itry) {
      id = static_cast<float>(itry + kIq4Values[0]) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < 32; ++j) {
        const auto q = static_cast<float>(kIq4Values[nearest_iq4_index(id * xb[j])]);
        sumqx += weight[j] * q * xb[j];
        sumq2 += weight[j] * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    if (std::fabs(d) > amax_scale) {
      amax_scale = std::fabs(d);
      max_scale = d;
    }
  }
  if (xs) {
    uint8_t* scales_l = out + kIQ4_XSScalesL;
    uint16_t scales_h = 0;
    const float d = -max_scale / 32;
    store_fp16(out + kIQ4_XSD, d);
    const float id = d != 0 ? 1 / d : 0.f;
    for (int ib = 0; ib < subs; ++ib) {
      int l = std::max(-32, std::min(31, nearest_int(id * scales[ib])));
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0 ? 1 / dl : 0.f;
      for (int j = 0; j < 32; ++j) L[32 * ib + j] = static_cast<uint8_t>(nearest_iq4_index(idl * x[32 * ib + j]));
      l += 32;
      if (ib % 2 == 0) scales_l[ib / 2] = static_cast<uint8_t>(l & 0xF);
      else scales_l[ib / 2] = static_cast<uint8_t>(scales_l[ib / 2] | ((l & 0xF) << 4));
      scales_h = static_cast<uint16_t>(scales_h | ((l >> 4) << (2 * (ib % 8))));
    }
    out[kIQ4_XSScalesH] = static_cast<uint8_t>(scales_h & 0xFF);
    out[kIQ4_XSScalesH + 1] = static_cast<uint8_t>(scales_h >> 8);
  } else {
    store_fp16(out + kIQ4_NLD, scales[0]);
    const float id = scales[0] != 0 ? 1 / scales[0] : 0;
    for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(nearest_iq4_index(id * x[j]));
  }
  for (int i = 0; i < subs; ++i)
    for (int j = 0; j < 16; ++j) qs[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

void quantize_row_iq4_nl(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(values.size() % kIQ4_NLValues == 0 && blocks.size() == values.size() / kIQ4_NLValues * kIQ4_NLBytes);
  for (size_t b = 0; b < values.size() / kIQ4_NLValues; ++b)
    quantize_block_iq4(false, values.data() + b * kIQ4_NLValues, blocks.data() + b * kIQ4_NLBytes);
}
void quantize_row_iq4_xs(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(values.size() % kIQ4_XSValues == 0 && blocks.size() == values.size() / kIQ4_XSValues * kIQ4_XSBytes);
  for (size_t b = 0; b < values.size() / kIQ4_XSValues; ++b)
    quantize_block_iq4(true, values.data() + b * kIQ4_XSValues, blocks.data() + b * kIQ4_XSBytes);
}

void dequantize_row_iq4_nl(std::span<const uint8_t> blocks, std::span<float> values) {
  assert(values.size() % kIQ4_NLValues == 0 && blocks.size() == values.size() / kIQ4_NLValues * kIQ4_NLBytes);
  for (size_t b = 0; b < values.size() / kIQ4_NLValues; ++b) {
    const uint8_t* in = blocks.data() + b * kIQ4_NLBytes;
    float* y = values.data() + b * kIQ4_NLValues;
    const float d = load_fp16(in + kIQ4_NLD);
    for (size_t j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIq4Values[in[kIQ4_NLQs + j] & 0xF]);
      y[j + 16] = d * static_cast<float>(kIq4Values[in[kIQ4_NLQs + j] >> 4]);
    }
  }
}
void dequantize_row_iq4_xs(std::span<const uint8_t> blocks, std::span<float> values) {
  assert(values.size() % kIQ4_XSValues == 0 && blocks.size() == values.size() / kIQ4_XSValues * kIQ4_XSBytes);
  for (size_t b = 0; b < values.size() / kIQ4_XSValues; ++b) {
    const uint8_t* in = blocks.data() + b * kIQ4_XSBytes;
    float* y = values.data() + b * kIQ4_XSValues;
    const float d = load_fp16(in + kIQ4_XSD);
    for (uint32_t ib = 0; ib < kIQ4_XSValues / 32; ++ib) {
      const float dl = d * static_cast<float>(iq4_xs_scale(ib, in));
      const uint8_t* qs = in + kIQ4_XSQs + 16 * ib;
      for (size_t j = 0; j < 16; ++j) {
        y[32 * ib + j] = dl * static_cast<float>(kIq4Values[qs[j] & 0xF]);
        y[32 * ib + j + 16] = dl * static_cast<float>(kIq4Values[qs[j] >> 4]);
      }
    }
  }
}

// MXFP4 (ggml's quantize_row_mxfp4_ref): the block's exponent from its largest magnitude
// (floor(log2 amax) - 2, so that the largest E2M1 value, 6, reaches it), each value the E2M1 value
// nearest x / scale (the first of equals).
void quantize_row_mxfp4(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(values.size() % kMXFP4Values == 0 && blocks.size() == values.size() / kMXFP4Values * kMXFP4Bytes);
  for (size_t b = 0; b < values.size() / kMXFP4Values; ++b) {
    const float* x = values.data() + b * kMXFP4Values;
    uint8_t* out = blocks.data() + b * kMXFP4Bytes;
    float amax = 0.0f;
    for (size_t j = 0; j < kMXFP4Values; ++j)
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    // ggml converts the float to uint8_t; below 2^-125 (negative) or at inf C leaves it undefined, and
    // we give what x86 gives (the low byte of the truncated int)
    const uint8_t e = amax > 0.0f ? static_cast<uint8_t>(truncate_to_int8(std::floor(std::log2(amax)) - 2 + 127)) : 0;
    const float d = mxfp4_scale(e);
    out[kMXFP4E] = e;
    const auto best = [d](float v) {
      int index = 0;
      float best_err = std::fabs(static_cast<float>(kMxfp4Values[0]) * d - v);
      for (int i = 1; i < 16; ++i) {
        const float err = std::fabs(static_cast<float>(kMxfp4Values[i]) * d - v);
        if (err < best_err) {
          index = i;
          best_err = err;
        }
      }
      return index;
    };
    for (size_t j = 0; j < kMXFP4Values / 2; ++j)
      out[kMXFP4Qs + j] = static_cast<uint8_t>(best(x[j]) | (best(x[kMXFP4Values / 2 + j]) << 4));
  }
}

void dequantize_row_mxfp4(std::span<const uint8_t> blocks, std::span<float> values) {
  assert(values.size() % kMXFP4Values == 0 && blocks.size() == values.size() / kMXFP4Values * kMXFP4Bytes);
  for (size_t b = 0; b < values.size() / kMXFP4Values; ++b) {
    const uint8_t* in = blocks.data() + b * kMXFP4Bytes;
    const float d = mxfp4_scale(in[kMXFP4E]);
    for (size_t j = 0; j < kMXFP4Values / 2; ++j) {
      values[b * kMXFP4Values + j] = static_cast<float>(kMxfp4Values[in[kMXFP4Qs + j] & 0x0F]) * d;
      values[b * kMXFP4Values + kMXFP4Values / 2 + j] = static_cast<float>(kMxfp4Values[in[kMXFP4Qs + j] >> 4]) * d;
    }
  }
}

// Q8_K is what activations become before a dot product with K-quant weights: a float scale (not
// fp16), 8-bit codes, and the sum of each 16 codes so the weights' per-sub-block mins can be
// applied with one multiply per sub-block instead of one per value.
void quantize_row_q8_k(std::span<const float> values, std::span<uint8_t> blocks) {
  assert(values.size() % kQ8_KValues == 0 && q8_k().block_values == kQ8_KValues);
  assert(blocks.size() == values.size() / kQ8_KValues * q8_k().block_bytes);
  const size_t block_bytes = q8_k().block_bytes;
  for (size_t b = 0; b < values.size() / kQ8_KValues; ++b) {
    const float* x = values.data() + b * kQ8_KValues;
    uint8_t* out = blocks.data() + b * block_bytes;
    // The signed value of largest magnitude (the first one on ties) maps to -127: iscale has the
    // opposite sign of that value, so every code lies in -127..127 (ggml chose -127, not -128,
    // to keep its IQ2 SIMD code simple; the clamp at 127 only guards rounding).
    float amax = 0;
    float max = 0;
    for (size_t j = 0; j < kQ8_KValues; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0) {
      // ggml writes d = 0 and zero codes and leaves bsums as they were; we zero them too (the sum
      // of zero codes), so the block's bytes do not depend on the buffer's previous contents.
      std::memset(out, 0, block_bytes);
      continue;
    }
    const float iscale = -127.f / max;
    for (size_t j = 0; j < kQ8_KValues; ++j) {
      const int v = nearest_int(iscale * x[j]);
      out[kQ8_KQs + j] = static_cast<uint8_t>(std::min(127, v));  // int8_t in ggml: modulo 256
    }
    for (size_t j = 0; j < kQ8_KValues / kQ8_KSumValues; ++j) {
      int sum = 0;
      for (size_t i = 0; i < kQ8_KSumValues; ++i)
        sum += static_cast<int8_t>(out[kQ8_KQs + j * kQ8_KSumValues + i]);
      const auto s16 = static_cast<uint16_t>(static_cast<int16_t>(sum));  // |sum| <= 16 * 127
      out[kQ8_KBsums + 2 * j] = static_cast<uint8_t>(s16 & 0xFF);
      out[kQ8_KBsums + 2 * j + 1] = static_cast<uint8_t>(s16 >> 8);
    }
    const float d = 1 / iscale;  // negative when the largest magnitude is positive
    std::memcpy(out + kQ8_KD, &d, 4);  // little-endian host, as store_row_float assumes
  }
}

void dequantize_row_q8_k(std::span<const uint8_t> blocks, std::span<float> values) {
  const size_t block_bytes = q8_k().block_bytes;
  assert(blocks.size() == values.size() / kQ8_KValues * block_bytes);
  for (size_t b = 0; b < values.size() / kQ8_KValues; ++b) {
    const uint8_t* in = blocks.data() + b * block_bytes;
    float d;
    std::memcpy(&d, in + kQ8_KD, 4);
    for (size_t j = 0; j < kQ8_KValues; ++j)
      values[b * kQ8_KValues + j] = d * static_cast<float>(static_cast<int8_t>(in[kQ8_KQs + j]));
  }
}

void quantize_row(GgmlType type, std::span<const float> values, std::span<uint8_t> blocks,
                  std::string_view what) {
  check_sizes(type, values.size(), blocks.size(), what);
  switch (type) {
    case GgmlType::Q8_0: return quantize_row_q8_0(values, blocks);
    case GgmlType::Q4_0: return quantize_row_q4_0(values, blocks);
    case GgmlType::Q4_1: return quantize_row_q4_1(values, blocks);
    case GgmlType::Q5_0: return quantize_row_q5_0(values, blocks);
    case GgmlType::Q5_1: return quantize_row_q5_1(values, blocks);
    case GgmlType::Q2_K: return quantize_row_q2_k(values, blocks);
    case GgmlType::Q3_K: return quantize_row_q3_k(values, blocks);
    case GgmlType::Q4_K: return quantize_row_q4_k(values, blocks);
    case GgmlType::Q5_K: return quantize_row_q5_k(values, blocks);
    case GgmlType::Q6_K: return quantize_row_q6_k(values, blocks);
    case GgmlType::IQ4_NL: return quantize_row_iq4_nl(values, blocks);
    case GgmlType::IQ4_XS: return quantize_row_iq4_xs(values, blocks);
    case GgmlType::MXFP4: return quantize_row_mxfp4(values, blocks);
    case GgmlType::Q8_K: return quantize_row_q8_k(values, blocks);
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: return store_row_float(type, values, blocks);
    default:
      throw InputError(fmt::format("{}: no quantizer for {}; known: {}", what, ggml_type_info(type).name,
                                   quantizer_type_names()));
  }
}

void dequantize_row(GgmlType type, std::span<const uint8_t> blocks, std::span<float> values,
                    std::string_view what) {
  check_sizes(type, values.size(), blocks.size(), what);
  switch (type) {
    case GgmlType::Q8_0: return dequantize_row_q8_0(blocks, values);
    case GgmlType::Q4_0: return dequantize_row_q4_0(blocks, values);
    case GgmlType::Q4_1: return dequantize_row_q4_1(blocks, values);
    case GgmlType::Q5_0: return dequantize_row_q5_0(blocks, values);
    case GgmlType::Q5_1: return dequantize_row_q5_1(blocks, values);
    case GgmlType::Q2_K: return dequantize_row_q2_k(blocks, values);
    case GgmlType::Q3_K: return dequantize_row_q3_k(blocks, values);
    case GgmlType::Q4_K: return dequantize_row_q4_k(blocks, values);
    case GgmlType::Q5_K: return dequantize_row_q5_k(blocks, values);
    case GgmlType::Q6_K: return dequantize_row_q6_k(blocks, values);
    case GgmlType::IQ4_NL: return dequantize_row_iq4_nl(blocks, values);
    case GgmlType::IQ4_XS: return dequantize_row_iq4_xs(blocks, values);
    case GgmlType::MXFP4: return dequantize_row_mxfp4(blocks, values);
    case GgmlType::Q8_K: return dequantize_row_q8_k(blocks, values);
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: return load_row_float(type, blocks, values);
    default:
      throw InputError(fmt::format("{}: no dequantizer for {}; known: {}", what, ggml_type_info(type).name,
                                   quantizer_type_names()));
  }
}

}  // namespace infer_plan::kernels
