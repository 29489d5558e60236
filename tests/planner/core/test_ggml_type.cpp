// The type table against SPEC 1 and ggml's block structs (sizes computed by hand from the
// field lists in ggml-common.h: e.g. Q3_K = hmask 32 + qs 64 + scales 12 + d 2 = 110 B).
#include <doctest/doctest.h>

#include <vector>

#include "planner/core/ggml_type.hpp"
#include "planner/core/input_error.hpp"

using namespace infer_plan;

TEST_CASE("SPEC 1: Q2_K, Q8_0, Q4_0") {
  const auto& q2k = ggml_type_by_name("Q2_K", "t");
  CHECK(q2k.block_values == 256);
  CHECK(q2k.block_bytes == 84);
  CHECK(q2k.code_bytes == 64);
  CHECK(q2k.meta_bytes == 20);
  CHECK(q2k.bits_per_value() == 2.625);                      // 84 * 8 / 256
  CHECK(q2k.meta_fraction() == doctest::Approx(0.238).epsilon(1e-3));  // 20 / 84 = 23.8%
  CHECK(ggml_type_by_name("q8_0", "t").bits_per_value() == 8.5);   // 34 * 8 / 32
  CHECK(ggml_type_by_name("q4_0", "t").bits_per_value() == 4.5);   // 18 * 8 / 32
  // "4 bit is 1/4 the size" is wrong: q4_0 is 18/64 = 28% of BF16
  CHECK(ggml_type_by_name("Q4_0", "t").bits_per_value() / 16.0 == doctest::Approx(18.0 / 64.0));
}

TEST_CASE("every block: codes + meta = bytes; the layouts of ggml-common.h") {
  struct Expect { const char* name; uint32_t values, bytes; };
  const Expect expected[] = {{"F32", 1, 4},     {"F16", 1, 2},     {"BF16", 1, 2},    {"Q4_0", 32, 18},
                             {"Q4_1", 32, 20},  {"Q5_0", 32, 22},  {"Q5_1", 32, 24},  {"Q8_0", 32, 34},
                             {"Q2_K", 256, 84}, {"Q3_K", 256, 110}, {"Q4_K", 256, 144}, {"Q5_K", 256, 176},
                             {"Q6_K", 256, 210}, {"Q8_K", 256, 292},
                             // i-quants and ternary types: IQ2_XXS = d 2 + qs 32 x u16 = 66; IQ2_XS + scales 8 =
                             // 74; IQ2_S = 2 + 64 + qh 8 + scales 8 = 82; IQ3_XXS = 2 + 96 = 98; IQ3_S = 2 + 64 +
                             // 8 + signs 32 + scales 4 = 110; IQ1_S = 2 + 32 + qh 8 x u16 = 50; IQ1_M = 32 + 16 +
                             // 8 = 56; IQ4_NL = 2 + 16 = 18 per 32; IQ4_XS = 2 + 2 + 4 + 128 = 136; TQ1_0 = 48 +
                             // 4 + 2 = 54; TQ2_0 = 64 + 2 = 66; MXFP4 = e 1 + qs 16 = 17 per 32
                             {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74}, {"IQ2_S", 256, 82}, {"IQ3_XXS", 256, 98},
                             {"IQ3_S", 256, 110}, {"IQ1_S", 256, 50}, {"IQ1_M", 256, 56}, {"IQ4_NL", 32, 18},
                             {"IQ4_XS", 256, 136}, {"TQ1_0", 256, 54}, {"TQ2_0", 256, 66}, {"MXFP4", 32, 17},
                             // checkpoint formats: their blocks (scales per matrix come on top)
                             {"FP8", 1, 1}, {"FP8_CHANNEL", 1, 1}, {"FP8_BLOCK128", 1, 1}, {"INT8_W8A8", 1, 1},
                             {"AWQ_INT4_G128", 128, 66}, {"GPTQ_INT4_G128", 128, 66}, {"NVFP4", 16, 9}};
  CHECK(ggml_types().size() == std::size(expected));
  for (const auto& e : expected) {
    CAPTURE(e.name);
    const auto& t = ggml_type_by_name(e.name, "t");
    CHECK(t.block_values == e.values);
    CHECK(t.block_bytes == e.bytes);
    CHECK(t.code_bytes + t.meta_bytes == t.block_bytes);
  }
  // the code bytes are exactly the bits of the values: Q6_K 6 bit x 256 / 8 = 192 B
  CHECK(ggml_type_by_name("Q6_K", "t").code_bytes == 6 * 256 / 8);
  CHECK(ggml_type_by_name("Q3_K", "t").code_bytes == 3 * 256 / 8);
  CHECK(ggml_type_by_name("Q5_0", "t").code_bytes == 5 * 32 / 8);
  // ggml ids as stored in GGUF
  CHECK(static_cast<uint32_t>(ggml_type_by_name("BF16", "t").type) == 30);
  CHECK(static_cast<uint32_t>(ggml_type_by_name("Q2_K", "t").type) == 10);
  CHECK(static_cast<uint32_t>(ggml_type_by_name("IQ2_XXS", "t").type) == 16);
  CHECK(static_cast<uint32_t>(ggml_type_by_name("IQ1_M", "t").type) == 29);
  CHECK(static_cast<uint32_t>(ggml_type_by_name("TQ1_0", "t").type) == 34);
  CHECK(static_cast<uint32_t>(ggml_type_by_name("MXFP4", "t").type) == 39);
  CHECK(ggml_type_by_name("IQ4_XS", "t").bits_per_value() == 4.25);
  CHECK(ggml_type_by_name("MXFP4", "t").bits_per_value() == 4.25);
  CHECK(ggml_type_by_name("TQ1_0", "t").bits_per_value() == 1.6875);
  CHECK(!ggml_type_by_name("FP8", "t").gguf);
  CHECK(ggml_type_by_name("awq-int4-g128", "t").type == GgmlType::AWQ_INT4_G128);  // '-' reads as '_'
}

TEST_CASE("checkpoint formats: codes, scales and zeros of whole matrices, by hand") {
  const std::vector<uint64_t> square{4096, 4096};
  // FP8 per tensor: one byte per value and one F32 scale.
  CHECK(ggml_tensor_bytes(GgmlType::FP8, square, "t") == 4096ull * 4096 + 4);
  // FP8 per channel: an F32 scale per output row (14336 of them).
  CHECK(ggml_tensor_bytes(GgmlType::FP8_CHANNEL, std::vector<uint64_t>{4096, 14336}, "t") == 4096ull * 14336 + 14336 * 4);
  // DeepSeek-V3's block FP8: weight_scale_inv [ceil(N/128), ceil(K/128)] F32. attn_q_b {1536, 24576}:
  // 12 x 192 tiles; the expert stack {7168, 2048, 256}: 56 x 16 tiles for each of 256 experts.
  CHECK(ggml_tensor_bytes(GgmlType::FP8_BLOCK128, std::vector<uint64_t>{1536, 24576}, "t") == 1536ull * 24576 + 12 * 192 * 4);
  CHECK(ggml_tensor_bytes(GgmlType::FP8_BLOCK128, std::vector<uint64_t>{7168, 2048, 256}, "t") ==
        7168ull * 2048 * 256 + 256ull * 56 * 16 * 4);
  CHECK(ggml_tensor_bytes(GgmlType::FP8_BLOCK128, std::vector<uint64_t>{200, 100}, "t") == 20000 + 2 * 1 * 4);  // edges round up
  // INT8 W8A8: per-channel F32 scales.
  CHECK(ggml_tensor_bytes(GgmlType::INT8_W8A8, square, "t") == 4096ull * 4096 + 4096 * 4);
  // AWQ g128, as AutoAWQ stores a 4096 x 4096 linear: qweight [K, N/8] int32 = 8,388,608 B, qzeros
  // [K/128, N/8] int32 = 65,536 B, scales [K/128, N] fp16 = 262,144 B.
  CHECK(ggml_tensor_bytes(GgmlType::AWQ_INT4_G128, square, "t") == 8'388'608 + 65'536 + 262'144);
  // GPTQ adds g_idx [K] int32 = 16,384 B.
  CHECK(ggml_tensor_bytes(GgmlType::GPTQ_INT4_G128, square, "t") == 8'388'608 + 65'536 + 262'144 + 16'384);
  // NVFP4: 9 B per 16 values (8 B of E2M1 codes, one E4M3 scale) and two F32 global scales.
  CHECK(ggml_tensor_bytes(GgmlType::NVFP4, square, "t") == 4096ull * 4096 / 16 * 9 + 8);
  // MXFP4 (GGML, and GPT-OSS's experts): 17 B per 32; gpt-oss-20b's ffn_up_exps {2880, 2880, 32}.
  CHECK(ggml_tensor_bytes(GgmlType::MXFP4, std::vector<uint64_t>{2880, 2880, 32}, "t") == 2880ull * 2880 * 32 / 32 * 17);
  // A row that is not whole groups is refused, naming the tensor.
  CHECK_THROWS_WITH_AS(ggml_tensor_bytes(GgmlType::AWQ_INT4_G128, std::vector<uint64_t>{100, 8}, "blk.0.x"),
                       doctest::Contains("blk.0.x"), InputError);
}

TEST_CASE("row bytes and bad names") {
  CHECK(ggml_row_bytes(GgmlType::Q8_0, 128, "r") == 4 * 34);
  CHECK(ggml_row_bytes(GgmlType::BF16, 128, "r") == 256);
  CHECK_THROWS_WITH_AS(ggml_row_bytes(GgmlType::Q2_K, 128, "K row"), doctest::Contains("K row"), InputError);
  CHECK_THROWS_WITH_AS(ggml_type_by_name("Q9_9", "--weights"), doctest::Contains("known types: F32"), InputError);
}
