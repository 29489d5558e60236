// Block layouts transcribed from ggml's block_* structs; the tests check each row's arithmetic
// (codes + meta = block bytes; bits per value) and the SPEC's figures (Q2_K 84 B / 256 values).
#include "planner/core/ggml_type.hpp"

#include <array>
#include <cctype>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"

namespace infer_plan {
namespace {

// clang-format off
constexpr std::array kTypes{
  GgmlTypeInfo{GgmlType::F32,  "F32",    1,   4,   4,  0, "float"},
  GgmlTypeInfo{GgmlType::F16,  "F16",    1,   2,   2,  0, "IEEE half"},
  GgmlTypeInfo{GgmlType::Q4_0, "Q4_0",  32,  18,  16,  2, "fp16 d; u8 qs[16] (4-bit)"},
  GgmlTypeInfo{GgmlType::Q4_1, "Q4_1",  32,  20,  16,  4, "fp16 d, m; u8 qs[16] (4-bit)"},
  GgmlTypeInfo{GgmlType::Q5_0, "Q5_0",  32,  22,  20,  2, "fp16 d; u8 qh[4] (5th bits); u8 qs[16]"},
  GgmlTypeInfo{GgmlType::Q5_1, "Q5_1",  32,  24,  20,  4, "fp16 d, m; u8 qh[4] (5th bits); u8 qs[16]"},
  GgmlTypeInfo{GgmlType::Q8_0, "Q8_0",  32,  34,  32,  2, "fp16 d; i8 qs[32]"},
  GgmlTypeInfo{GgmlType::Q2_K, "Q2_K", 256,  84,  64, 20, "u8 scales[16] (4-bit scale + 4-bit min); u8 qs[64] (2-bit); fp16 d, dmin"},
  GgmlTypeInfo{GgmlType::Q3_K, "Q3_K", 256, 110,  96, 14, "u8 hmask[32] (high bits); u8 qs[64] (low 2 bits); u8 scales[12] (6-bit); fp16 d"},
  GgmlTypeInfo{GgmlType::Q4_K, "Q4_K", 256, 144, 128, 16, "fp16 d, dmin; u8 scales[12] (6-bit scales + mins); u8 qs[128] (4-bit)"},
  GgmlTypeInfo{GgmlType::Q5_K, "Q5_K", 256, 176, 160, 16, "fp16 d, dmin; u8 scales[12]; u8 qh[32] (5th bits); u8 qs[128]"},
  GgmlTypeInfo{GgmlType::Q6_K, "Q6_K", 256, 210, 192, 18, "u8 ql[128] (low 4 bits); u8 qh[64] (high 2 bits); i8 scales[16]; fp16 d"},
  GgmlTypeInfo{GgmlType::Q8_K, "Q8_K", 256, 292, 256, 36, "f32 d; i8 qs[256]; i16 bsums[16] (activations only)"},
  GgmlTypeInfo{GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66, 64, 2, "fp16 d; u16 qs[32] (E8 lattice grid indices + signs + 4-bit scales)"},
  GgmlTypeInfo{GgmlType::IQ2_XS,  "IQ2_XS",  256, 74, 64, 10, "fp16 d; u16 qs[32] (9-bit grid + 7-bit signs); u8 scales[8]"},
  GgmlTypeInfo{GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98, 96, 2, "fp16 d; u8 qs[96] (grid indices, signs and scales)"},
  GgmlTypeInfo{GgmlType::IQ1_S,   "IQ1_S",   256, 50, 48, 2, "fp16 d; u8 qs[32]; u16 qh[8] (high bits, shift, 3-bit scales)"},
  GgmlTypeInfo{GgmlType::IQ4_NL,  "IQ4_NL",   32, 18, 16, 2, "fp16 d; u8 qs[16] (4-bit indices into a non-linear table)"},
  GgmlTypeInfo{GgmlType::IQ3_S,   "IQ3_S",   256, 110, 104, 6, "fp16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]"},
  GgmlTypeInfo{GgmlType::IQ2_S,   "IQ2_S",   256, 82, 72, 10, "fp16 d; u8 qs[64] (grid + signs); u8 qh[8]; u8 scales[8]"},
  GgmlTypeInfo{GgmlType::IQ4_XS,  "IQ4_XS",  256, 136, 128, 8, "fp16 d; u16 scales_h; u8 scales_l[4] (6-bit scales); u8 qs[128]"},
  GgmlTypeInfo{GgmlType::IQ1_M,   "IQ1_M",   256, 56, 48, 8, "u8 qs[32]; u8 qh[16]; u8 scales[8] (3-bit scales, the fp16 d spread over them)"},
  GgmlTypeInfo{GgmlType::BF16, "BF16",   1,   2,   2,  0, "bfloat16"},
  GgmlTypeInfo{GgmlType::TQ1_0,   "TQ1_0",   256, 54, 52, 2, "u8 qs[48] (5 trits per byte); u8 qh[4] (4 per byte); fp16 d"},
  GgmlTypeInfo{GgmlType::TQ2_0,   "TQ2_0",   256, 66, 64, 2, "u8 qs[64] (2-bit trits); fp16 d"},
  GgmlTypeInfo{GgmlType::MXFP4,   "MXFP4",    32, 17, 16, 1, "u8 e (E8M0 power-of-two scale); u8 qs[16] (E2M1 4-bit)"},
  // Checkpoint formats (vLLM; not GGUF). Scales as their checkpoints store them.
  GgmlTypeInfo{GgmlType::FP8, "FP8", 1, 1, 1, 0, "E4M3 per value; one F32 scale per matrix", false, "fp8",
               ScaleScope::tensor, 4},
  GgmlTypeInfo{GgmlType::FP8_CHANNEL, "FP8_CHANNEL", 1, 1, 1, 0, "E4M3 per value; one F32 scale per output row", false,
               "fp8", ScaleScope::row, 4},
  GgmlTypeInfo{GgmlType::FP8_BLOCK128, "FP8_BLOCK128", 1, 1, 1, 0,
               "E4M3 per value; one F32 scale per 128 x 128 tile (DeepSeek-V3's weight_scale_inv)", false, "fp8",
               ScaleScope::tile128, 4},
  GgmlTypeInfo{GgmlType::INT8_W8A8, "INT8_W8A8", 1, 1, 1, 0, "i8 per value; one F32 scale per output row (activations "
               "quantized per token)", false, "int8", ScaleScope::row, 4},
  GgmlTypeInfo{GgmlType::AWQ_INT4_G128, "AWQ_INT4_G128", 128, 66, 64, 2,
               "groups of 128 inputs: 4-bit codes (int32-packed), fp16 scale; 4-bit zeros packed 8 per int32", false, "",
               ScaleScope::group_zeros, 4},
  GgmlTypeInfo{GgmlType::GPTQ_INT4_G128, "GPTQ_INT4_G128", 128, 66, 64, 2,
               "as AWQ, plus g_idx: one int32 per input column", false, "", ScaleScope::group_zeros_gidx, 4},
  GgmlTypeInfo{GgmlType::NVFP4, "NVFP4", 16, 9, 8, 1,
               "groups of 16: E2M1 4-bit codes, one E4M3 scale; F32 weight and input global scales per matrix",
               false, "fp4", ScaleScope::tensor, 8},
};
// clang-format on

}  // namespace

bool type_name_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  auto fold = [](char c) { return c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))); };
  for (size_t i = 0; i < a.size(); ++i)
    if (fold(a[i]) != fold(b[i])) return false;
  return true;
}

std::span<const GgmlTypeInfo> ggml_types() { return kTypes; }

const GgmlTypeInfo& ggml_type_info(GgmlType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t;
  throw InputError(fmt::format("unknown GGML type id {}", static_cast<uint32_t>(type)));
}

std::string ggml_type_names(bool gguf_only) {
  std::string out;
  for (const auto& t : kTypes) {
    if (gguf_only && !t.gguf) continue;
    if (!out.empty()) out += ", ";
    out += t.name;
  }
  return out;
}

const GgmlTypeInfo* find_ggml_type(std::string_view name) {
  for (const auto& t : kTypes)
    if (type_name_equal(t.name, name)) return &t;
  return nullptr;
}

const GgmlTypeInfo& ggml_type_by_name(std::string_view name, std::string_view what) {
  if (const GgmlTypeInfo* t = find_ggml_type(name)) return *t;
  throw InputError(
      fmt::format("{}: unknown GGML type '{}'; known types: {}", what, name, ggml_type_names()));
}

uint64_t ggml_row_bytes(GgmlType type, uint64_t values, std::string_view what) {
  const GgmlTypeInfo& t = ggml_type_info(type);
  if (values % t.block_values != 0)
    throw InputError(fmt::format("{}: {} values are not a whole number of {} blocks of {}", what,
                                 values, t.name, t.block_values));
  return values / t.block_values * t.block_bytes;
}

uint64_t ggml_tensor_bytes(GgmlType type, std::span<const uint64_t> shape, std::string_view what) {
  const GgmlTypeInfo& t = ggml_type_info(type);
  if (shape.empty()) return 0;
  uint64_t elements = 1;
  for (uint64_t d : shape) elements *= d;
  const uint64_t k = shape[0];
  const uint64_t row_bytes = ggml_row_bytes(type, k, what);
  const uint64_t rows = k ? elements / k : 0;
  const uint64_t bytes = rows * row_bytes;
  if (t.scope == ScaleScope::none) return bytes;
  const uint64_t n = shape.size() > 1 ? shape[1] : 1;
  const uint64_t matrices = n ? rows / n : 0;  // experts in a 3-D stack
  const auto up = [](uint64_t a, uint64_t b) { return (a + b - 1) / b; };
  switch (t.scope) {
    case ScaleScope::none: break;
    case ScaleScope::tensor: return bytes + matrices * t.scale_bytes;
    case ScaleScope::row: return bytes + rows * t.scale_bytes;
    case ScaleScope::tile128: return bytes + matrices * up(k, 128) * up(n, 128) * t.scale_bytes;
    case ScaleScope::group_zeros:
      return bytes + matrices * (k / t.block_values) * up(n, 8) * t.scale_bytes;
    case ScaleScope::group_zeros_gidx:
      return bytes + matrices * ((k / t.block_values) * up(n, 8) * t.scale_bytes + k * 4);
  }
  return bytes;
}

}  // namespace infer_plan
