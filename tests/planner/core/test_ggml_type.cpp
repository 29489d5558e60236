// The type table against SPEC 1 and ggml's block structs (sizes computed by hand from the
// field lists in ggml-common.h: e.g. Q3_K = hmask 32 + qs 64 + scales 12 + d 2 = 110 B).
#include <doctest/doctest.h>

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
                             {"Q6_K", 256, 210}, {"Q8_K", 256, 292}};
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
}

TEST_CASE("row bytes and bad names") {
  CHECK(ggml_row_bytes(GgmlType::Q8_0, 128, "r") == 4 * 34);
  CHECK(ggml_row_bytes(GgmlType::BF16, 128, "r") == 256);
  CHECK_THROWS_WITH_AS(ggml_row_bytes(GgmlType::Q2_K, 128, "K row"), doctest::Contains("K row"), InputError);
  CHECK_THROWS_WITH_AS(ggml_type_by_name("Q9_9", "--weights"), doctest::Contains("known types: F32"), InputError);
}
