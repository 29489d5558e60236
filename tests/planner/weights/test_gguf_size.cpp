// GGUF file sizes: the seed's Qwen3-235B-A22B Q2_K file (SPEC 1: 79.81 GiB in all, 64.43 GiB
// codes + floats, 15.37 GiB metadata), the header arithmetic by hand, and published file sizes.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <optional>
#include <span>
#include <string>

#include "planner/catalog/catalog.hpp"
#include "planner/weights/gguf_size.hpp"
#include "planner/core/units.hpp"

using namespace infer_plan;

TEST_CASE("SPEC 1: the seed's Q2_K file, each figure within 0.5%") {
  const GgufFileSize g = gguf_file_size(load_model("qwen3-235b-a22b"), "Q2_K");
  CHECK(to_gib(g.file_bytes) == doctest::Approx(79.81).epsilon(0.005));
  CHECK(to_gib(g.code_and_float_bytes) == doctest::Approx(64.43).epsilon(0.005));
  CHECK(to_gib(g.meta_bytes) == doctest::Approx(15.37).epsilon(0.005));
  // and to the seed's two decimals
  CHECK(fmt::format("{:.2f} {:.2f} {:.2f}", to_gib(g.file_bytes), to_gib(g.code_and_float_bytes),
                    to_gib(g.meta_bytes)) == "79.81 64.43 15.37");
  CHECK(g.file_bytes == g.header_bytes + g.padding_bytes + g.tensor_data_bytes);
  CHECK(g.tensor_data_bytes == g.code_and_float_bytes + g.meta_bytes);
  CHECK(g.header_source == HeaderSource::estimated);
}

TEST_CASE("header: tokenizer estimate and tensor infos by hand") {
  const TokenizerEstimate t = estimate_tokenizer(load_model("qwen3-8b"));
  // 151,936 tokens x (8 B length + 9.00 B) = 2,582,912; i32 types 607,744;
  // 151,936 x 0.99639 = 151,387 merges x (8 + 10.00) = 2,724,966
  CHECK(t.tokens == 151'936);
  CHECK(t.merges == 151'387);
  CHECK(t.token_bytes == 2'582'912);
  CHECK(t.token_type_bytes == 607'744);
  CHECK(t.merge_bytes == 2'724'966);
  const TokenizerEstimate l = estimate_tokenizer(load_model("llama-3.1-8b"));
  CHECK(l.merges == 280'147);  // Llama 3's merges outnumber its tokens
  const TokenizerEstimate spm = estimate_tokenizer(load_model("llama-2-7b"));
  CHECK(spm.merges == 0);
  CHECK(spm.token_type_bytes == 32'000 * 8);  // i32 type + f32 score
  // name length 8 + 19, n_dims 4, 2 dims x 8, type 4, offset 8 = 59
  CHECK(gguf_tensor_info_bytes({"blk.0.attn_q.weight", {4096, 4096}, TensorRole::attn_q, 0}) == 59);
  CHECK(gguf_align(0, 32) == 0);
  CHECK(gguf_align(33, 32) == 64);
  CHECK(gguf_align(64, 32) == 64);
}

// Sizes listed by public GGUF repositories (Qwen/Qwen3-8B-GGUF, Qwen/Qwen3-0.6B-GGUF; Llama 3.1
// 8B Instruct quantizations) in decimal GB, rounded to their last digit: within 0.6%.
TEST_CASE("published file sizes within 0.6%") {
  struct Case { const char* model; const char* type; double gb; };
  const Case cases[] = {
      {"qwen3-8b", "Q4_K_M", 5.03},    {"qwen3-8b", "Q5_K_M", 5.85},   {"qwen3-8b", "Q6_K", 6.73},
      {"qwen3-8b", "Q8_0", 8.71},      {"qwen3-0.6b", "Q8_0", 0.639},  {"llama-3.1-8b", "Q4_K_M", 4.92},
      {"llama-3.1-8b", "Q8_0", 8.54},  {"llama-3.1-8b", "Q6_K", 6.60}, {"llama-3.1-8b", "Q3_K_M", 4.02},
      {"llama-3.1-8b", "Q2_K", 3.18},  {"llama-3.1-8b", "F16", 16.07},
  };
  for (const Case& c : cases) {
    CAPTURE(c.model);
    CAPTURE(c.type);
    CHECK(static_cast<double>(gguf_file_size(load_model(c.model), c.type).file_bytes) / 1e9 ==
          doctest::Approx(c.gb).epsilon(0.006));
  }
}

TEST_CASE("tensor classes add up to the tensor data") {
  const GgufFileSize g = gguf_file_size(load_model("qwen3-235b-a22b"), "Q2_K");
  uint64_t bytes = 0, meta = 0, tensors = 0;
  for (const auto& c : g.classes) {
    bytes += c.bytes;
    meta += c.meta_bytes;
    tensors += c.tensors;
  }
  CHECK(bytes == g.tensor_data_bytes);
  CHECK(meta == g.meta_bytes);
  CHECK(tensors == g.layout.tensors.size());
  CHECK(g.classes.back().name == "output head");
  CHECK(g.classes.back().types == "Q6_K x 1");
}

// Llama-3.1-8B-Instruct files by two publishers, each set made by one llama.cpp build with an
// importance matrix: bartowski (b3472) and ThomasBaruzier (b5e9546), exact byte sizes from the
// Hugging Face LFS pointers. Within a set every file carries the same metadata (tokenizer and
// keys), so file - tensor data must be one constant per set: that holds only if every tensor's
// type and bytes are llama.cpp's, i-quants included.
TEST_CASE("llama.cpp's i-quant and K-quant recipes, byte for byte against 22 published files") {
  struct Case { const char* type; uint64_t bytes; };
  const Case bartowski[] = {
      {"IQ2_M", 2948285856},  {"IQ3_XS", 3518752160}, {"IQ3_M", 3784828320}, {"IQ4_XS", 4447667616},
      {"IQ4_NL", 4677993888}, {"Q2_K", 3179136416},   {"Q3_K_S", 3664504224}, {"Q3_K_M", 4018922912},
      {"Q3_K_L", 4321961376}, {"Q4_K_S", 4692673952}, {"Q4_K_M", 4920739232}, {"Q5_K_S", 5599298976},
      {"Q5_K_M", 5732992416}, {"Q6_K", 6596011424},   {"Q8_0", 8540775840}};
  const Case thomas[] = {{"IQ1_S", 2019628256},   {"IQ1_M", 2161972448}, {"IQ2_XXS", 2399212768},
                         {"IQ2_XS", 2605782240},  {"IQ2_S", 2758489312}, {"IQ3_XXS", 3274912992},
                         {"IQ3_S", 3682325728}};
  const ModelSpec s = load_model("llama-3.1-8b");
  for (const auto& set : {std::span<const Case>(bartowski), std::span<const Case>(thomas)}) {
    std::optional<int64_t> metadata;
    for (const Case& c : set) {
      CAPTURE(c.type);
      const GgufFileSize g = gguf_file_size(s, std::string(c.type) + ":imatrix");
      const int64_t m = static_cast<int64_t>(c.bytes) - static_cast<int64_t>(g.tensor_data_bytes);
      if (!metadata) metadata = m;
      CHECK(m == *metadata);
      CHECK(static_cast<double>(g.file_bytes) == doctest::Approx(static_cast<double>(c.bytes)).epsilon(0.0001));
    }
  }
  // Without an importance matrix IQ4_XS keeps the first eighth of ffn_down at Q5_K: 4 layers of
  // 14336 x 4096 values at 176 instead of 136 B per 256 = 36,700,160 B more.
  CHECK(gguf_file_size(s, "IQ4_XS").tensor_data_bytes - gguf_file_size(s, "IQ4_XS:imatrix").tensor_data_bytes ==
        4ull * 14336 * 4096 / 256 * (176 - 136));
}

// MXFP4_MOE: experts MXFP4, every other matrix Q8_0 (ggml-org/gpt-oss-*-GGUF, LFS sizes);
// Qwen3-30B-A3B Q4_K_M (unsloth), whose metadata is 5,970,496 B.
TEST_CASE("GPT-OSS MXFP4 and Qwen3-30B-A3B files") {
  CHECK(static_cast<double>(gguf_file_size(load_model("gpt-oss-20b"), "MXFP4_MOE").file_bytes) ==
        doctest::Approx(12'109'566'624.0).epsilon(0.0005));
  CHECK(static_cast<double>(gguf_file_size(load_model("gpt-oss-120b"), "MXFP4_MOE").file_bytes) ==
        doctest::Approx(63'387'346'208.0).epsilon(0.0005));
  CHECK(gguf_file_size(load_model("qwen3-30b-a3b"), "Q4_K_M").tensor_data_bytes == 18'556'686'912ull - 5'970'496);
}
