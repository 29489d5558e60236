// runtime/quality: a model against itself scores nothing; Q8_0 < Q4_0 < Q2_K from an F16
// reference (the order of their rounding errors); the KL divergence and agreement against an
// independent computation from the decoder's own logits; bad input refused.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/weights/gguf_recipe.hpp"
#include "planner/weights/weights_size.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/decoder.hpp"
#include "runtime/quality.hpp"

using namespace infer_plan;
using namespace infer_plan::runtime;

namespace {
std::vector<uint32_t> stream(uint64_t n, uint64_t vocab) {
  std::vector<uint32_t> t(n);
  uint64_t x = 7;
  for (uint32_t& v : t) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<uint32_t>((x >> 33) % vocab);
  }
  return t;
}
}  // namespace

TEST_CASE("quality: itself, then Q8_0 < Q4_0 < Q2_K from an F16 reference") {
  const ModelSpec spec = load_model("tests/conformance/models/llama.json");
  CpuBackend backend;
  ThreadPool pool(2);
  const ModelWeights reference(backend, spec, uniform_weights_layout(spec, "F16"), 3, pool);
  const KvTypes f16{GgmlType::F16, GgmlType::F16};
  const std::vector<uint32_t> tokens = stream(130, spec.vocab);
  const QualityFigures self = compare_quality(backend, pool, {&reference, f16}, {&reference, f16}, tokens, 64);
  CHECK(self.chunks == 2);
  CHECK(self.positions == 2 * 31);  // positions 32..62 of each chunk of 64 predict 33..63
  CHECK(self.kld_mean == 0.0);
  CHECK(self.kld_max == 0.0);
  CHECK(self.top1_agreement == 1.0);
  CHECK(self.ppl_quantized == self.ppl_reference);
  CHECK(self.ln_ppl_ratio == 0.0);

  double previous_kld = 0, previous_top1 = 1;
  for (const char* type : {"Q8_0", "Q4_0", "Q2_K"}) {
    CAPTURE(type);
    const ModelWeights quantized(backend, reference, uniform_weights_layout(spec, type), pool);
    const QualityFigures q = compare_quality(backend, pool, {&reference, f16}, {&quantized, f16}, tokens, 64);
    CHECK(q.kld_mean > previous_kld);
    CHECK(q.kld_mean > 2 * q.kld_stderr);
    CHECK(q.top1_agreement < previous_top1);
    previous_kld = q.kld_mean;
    previous_top1 = q.top1_agreement;
  }
}

TEST_CASE("quality: llama.cpp's K-quant files order as their bits, Q6_K < Q5_K_M < Q4_K_M < Q3_K_M") {
  // Each file type as llama.cpp writes it (its per-tensor types: the output head at Q6_K, some
  // attn_v and ffn_down a type up), quantized from the same F16 reference.
  const ModelSpec spec = load_model("tests/conformance/models/llama.json");
  CpuBackend backend;
  ThreadPool pool(2);
  const ModelWeights reference(backend, spec, uniform_weights_layout(spec, "F16"), 3, pool);
  const KvTypes f16{GgmlType::F16, GgmlType::F16};
  const std::vector<uint32_t> tokens = stream(130, spec.vocab);
  double previous_kld = 0;
  for (const char* name : {"Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M"}) {
    CAPTURE(name);
    const auto ftype = find_llama_file_type(name);
    REQUIRE(ftype);
    const ModelWeights quantized(backend, reference, recipe_weights_layout(spec, ftype->ftype), pool);
    const QualityFigures q = compare_quality(backend, pool, {&reference, f16}, {&quantized, f16}, tokens, 64);
    CHECK(q.kld_mean > previous_kld);
    CHECK(q.kld_mean > 2 * q.kld_stderr);
    previous_kld = q.kld_mean;
  }
}

TEST_CASE("quality: KL divergence and agreement as an independent computation from the logits") {
  // The decoder's logits for one chunk, for both models; KL(p || q) = sum p ln(p / q) with p and q
  // normalised separately in long double; compare_quality's double path agrees to 1e-9.
  const ModelSpec spec = load_model("tests/conformance/models/qwen2.json");
  CpuBackend backend;
  ThreadPool pool(2);
  const ModelWeights reference(backend, spec, uniform_weights_layout(spec, "F16"), 5, pool);
  const ModelWeights quantized(backend, reference, uniform_weights_layout(spec, "Q4_0"), pool);
  const KvTypes kv{GgmlType::F16, GgmlType::F16};
  const std::vector<uint32_t> tokens = stream(32, spec.vocab);
  const QualityFigures q = compare_quality(backend, pool, {&reference, kv}, {&quantized, kv}, tokens, 32);
  const auto logits_of = [&](const ModelWeights& w) {
    PagedKvCache cache(backend, spec, kv, PagedKvCache::pages_for(32));
    REQUIRE(cache.reserve(1, 32));
    Decoder d(w, cache, pool);
    std::vector<std::vector<float>> logits;
    const SequenceChunk c{1, tokens, 0};
    d.forward(std::span(&c, 1), logits, true);
    return logits;
  };
  const auto p_rows = logits_of(reference), q_rows = logits_of(quantized);
  long double kld = 0;
  double same = 0;
  for (size_t i = 16; i + 1 < 32; ++i) {
    const auto probs = [](const std::vector<float>& l) {
      std::vector<long double> p(l.size());
      long double sum = 0;
      for (size_t v = 0; v < l.size(); ++v) sum += p[v] = std::exp(static_cast<long double>(l[v]));
      for (long double& x : p) x /= sum;
      return p;
    };
    const auto p = probs(p_rows[i]), qq = probs(q_rows[i]);
    for (size_t v = 0; v < p.size(); ++v) kld += p[v] * std::log(p[v] / qq[v]);
    same += std::max_element(p.begin(), p.end()) - p.begin() == std::max_element(qq.begin(), qq.end()) - qq.begin();
  }
  CHECK(q.positions == 15);
  CHECK(q.kld_mean == doctest::Approx(static_cast<double>(kld / 15)).epsilon(1e-9));
  CHECK(q.top1_agreement == doctest::Approx(same / 15));
}

TEST_CASE("quality: bad input") {
  const ModelSpec spec = load_model("tests/conformance/models/llama.json");
  CpuBackend backend;
  ThreadPool pool(1);
  const ModelWeights w(backend, spec, uniform_weights_layout(spec, "F16"), 3, pool);
  const KvTypes kv{GgmlType::F16, GgmlType::F16};
  CHECK_THROWS_WITH_AS(compare_quality(backend, pool, {&w, kv}, {&w, kv}, stream(10, spec.vocab), 64),
                       doctest::Contains("the text is 10 tokens, less than one chunk of --ctx-size 64"), InputError);
  CHECK_THROWS_WITH_AS(compare_quality(backend, pool, {&w, kv}, {&w, kv}, stream(10, spec.vocab), 2),
                       doctest::Contains("--ctx-size 2 is too short"), InputError);
  std::vector<uint32_t> bad = stream(64, spec.vocab);
  bad[5] = static_cast<uint32_t>(spec.vocab);
  CHECK_THROWS_WITH_AS(compare_quality(backend, pool, {&w, kv}, {&w, kv}, bad, 64), doctest::Contains("beyond the vocabulary"),
                       InputError);
}
