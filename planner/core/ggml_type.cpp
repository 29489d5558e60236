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
  GgmlTypeInfo{GgmlType::BF16, "BF16",   1,   2,   2,  0, "bfloat16"},
};
// clang-format on

}  // namespace

bool type_name_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::span<const GgmlTypeInfo> ggml_types() { return kTypes; }

const GgmlTypeInfo& ggml_type_info(GgmlType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t;
  throw InputError(fmt::format("unknown GGML type id {}", static_cast<uint32_t>(type)));
}

std::string ggml_type_names() {
  std::string out;
  for (const auto& t : kTypes) {
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

}  // namespace infer_plan
