// Sampled speculative decoding draws from the target's own distribution (issue 6's second
// must-hold): a chi-square test over 4000 seeded runs. A binary of its own, labelled `statistics`:
// at -O0 under the sanitizers its 4000 runs take many minutes, so the sanitizer pass skips it (the
// sampled path still runs there in the sweep tests and the CLI cases).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/sampling.hpp"
#include "planner/plan/predict.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/decoder.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/paged_kv_cache.hpp"
#include "runtime/speculative.hpp"
#include "runtime/thread_pool.hpp"

using namespace infer_plan;
using namespace infer_plan::runtime;

TEST_CASE("sampled speculative decoding draws from the target's distribution (chi-square, p = 0.001)") {
  // A 6-token vocabulary (Qwen3-8B at 0.09: 3 layers, 256 wide, untied head cut to 6 rows, FFN 256; a tied
  // head would make the last input token dominate the logits) so that the joint
  // distribution of two generated tokens has only 36 cells. Each seeded run generates 3 tokens at
  // temperature 1 with block 2 and a 1-layer draft of the 3-layer target; tokens 2 and 3 come from
  // speculative rounds (kept drafts, replacements, or bonus tokens). Their joint frequencies must
  // fit P(t2, t3) = sum_t1 p(t1) p(t2 | t1) p(t3 | t1, t2), computed from the target's own logits:
  // Pearson's statistic over 36 cells has 35 degrees of freedom, 0.999 quantile 66.62, so a correct
  // implementation fails with probability 0.001 for a random seed set (never for this fixed one).
  // (Cells expected below 5 counts are pooled, which lowers the degrees of freedom.)
  Plan plan;
  plan.model = "qwen3-8b";
  plan.scale = 0.09;
  plan.weights = "Q8_0";
  ModelSpec spec = resolve_plan(plan).spec;
  REQUIRE(spec.layers == 3);
  spec.vocab = 6;
  spec.intermediate = 256;  // a narrow FFN: 4000 runs stay quick, also under the sanitizers
  const PlanWeights pw = plan_weights(spec, "Q8_0", std::nullopt);
  CpuBackend backend;
  ThreadPool pool(1);
  const ModelWeights w(backend, spec, pw.layout, 5, pool);
  ModelSpec draft_spec = spec;
  draft_spec.layers = 1;
  PagedKvCache target_cache(backend, spec, plan.kv, 2), draft_cache(backend, draft_spec, plan.kv, 2);
  Decoder target(w, target_cache, pool), draft(w, draft_cache, pool, 1);
  REQUIRE(target_cache.reserve(1, 16));
  REQUIRE(draft_cache.reserve(1, 16));
  const std::vector<uint32_t> prompt{1, 4, 2};

  // The exact joint distribution from the target (temperature 1: softmax of the logits).
  const auto softmax_of = [](const std::vector<float>& logits) {
    std::vector<float> probs;
    kernels::sampling_probabilities(logits, {1.0f, 1.0f}, probs);
    return probs;
  };
  const auto logits_after = [&](Decoder& d, const std::vector<uint32_t>& tokens) {
    std::vector<std::vector<float>> logits;
    const SequenceChunk c{1, tokens, 0};
    d.forward(std::span(&c, 1), logits, false);
    return logits.back();
  };
  std::vector<double> expected(36, 0.0), draft_joint(36, 0.0);
  const std::vector<float> p1 = softmax_of(logits_after(target, prompt));
  for (uint32_t t1 = 0; t1 < 6; ++t1) {
    std::vector<uint32_t> s1 = prompt;
    s1.push_back(t1);
    const std::vector<float> p2 = softmax_of(logits_after(target, s1)), q2 = softmax_of(logits_after(draft, s1));
    for (uint32_t t2 = 0; t2 < 6; ++t2) {
      std::vector<uint32_t> s2 = s1;
      s2.push_back(t2);
      const std::vector<float> p3 = softmax_of(logits_after(target, s2)), q3 = softmax_of(logits_after(draft, s2));
      for (uint32_t t3 = 0; t3 < 6; ++t3) {
        expected[t2 * 6 + t3] += p1[t1] * p2[t2] * p3[t3];
        draft_joint[t2 * 6 + t3] += p1[t1] * q2[t2] * q3[t3];  // what keeping every draft would give
      }
    }
  }

  constexpr int kRuns = 4000;
  std::vector<int> counts(36, 0);
  SpecDecodeStats stats;
  for (int run = 0; run < kRuns; ++run) {
    SpecOptions o;
    o.temperature = 1.0f;
    o.seed = 1000 + run;
    o.block = 2;
    const std::vector<uint32_t> out = generate_speculative(target, 1, draft, 1, prompt, 3, o, stats);
    REQUIRE(out.size() == 3);
    ++counts[out[1] * 6 + out[2]];
  }
  // Pearson's approximation needs expected counts >= 5: cells below 10 are pooled into one bin
  // (which must then reach 5).
  double chi2 = 0.0, chi2_of_draft = 0.0, pooled_e = 0.0, pooled_draft = 0.0;
  int pooled_count = 0, bins = 0;
  const auto add = [&](double observed, double e, double draft_e) {
    chi2 += (observed - e) * (observed - e) / e;
    chi2_of_draft += (draft_e - e) * (draft_e - e) / e;
    ++bins;
  };
  for (int cell = 0; cell < 36; ++cell) {
    const double e = kRuns * expected[cell];
    if (e >= 10) {
      add(counts[cell], e, kRuns * draft_joint[cell]);
    } else {
      pooled_e += e;
      pooled_draft += kRuns * draft_joint[cell];
      pooled_count += counts[cell];
    }
  }
  REQUIRE((pooled_e == 0 || pooled_e >= 5));
  if (pooled_e > 0) add(pooled_count, pooled_e, pooled_draft);
  // The 0.999 quantile for k = bins - 1 degrees of freedom by Wilson and Hilferty's approximation,
  // k (1 - 2/(9k) + z sqrt(2/(9k)))^3 with z = 3.090 (the normal's 0.999 quantile); within 0.2% of
  // the tables for k >= 20 (k = 35: 66.7 against the table's 66.62).
  const double k = bins - 1, h = 2.0 / (9.0 * k);
  const double critical = k * std::pow(1.0 - h + 3.090 * std::sqrt(h), 3.0);
  REQUIRE(k >= 20);
  INFO("chi-square " << chi2 << " over " << bins << " bins (critical " << critical << "); keeping every draft would give "
                     << chi2_of_draft << "; acceptance " << stats.acceptance_rate());
  CHECK(chi2 < critical);
  CHECK(chi2_of_draft > 3 * critical);
  // The test has power: the draft alone is far from the target, and both verdicts happened.
  CHECK(stats.acceptance_rate() > 0.2);
  CHECK(stats.acceptance_rate() < 0.95);
  // The counters add up: every round emits its kept drafts and one token of the target's.
  CHECK(stats.num_emitted_tokens == stats.num_accepted_tokens + stats.num_drafts);
  CHECK(stats.num_accepted_tokens_per_pos[0] >= stats.num_accepted_tokens_per_pos[1]);
  CHECK(stats.num_accepted_tokens_per_pos[0] + stats.num_accepted_tokens_per_pos[1] == stats.num_accepted_tokens);
}
