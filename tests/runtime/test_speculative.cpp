// Speculative decoding on a tiny synthetic model: greedy output equals plain greedy decoding token
// for token, whatever the draft and the block length (issue 6's first must-hold; the sampled
// distribution is tested in test_speculative_distribution.cpp).
#include <doctest/doctest.h>

#include <vector>

#include "planner/model/model_scale.hpp"
#include "planner/plan/predict.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/decoder.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/paged_kv_cache.hpp"
#include "runtime/speculative.hpp"
#include "runtime/thread_pool.hpp"

using namespace infer_plan;
using namespace infer_plan::runtime;

TEST_CASE("greedy speculative decoding equals plain greedy decoding, for every block and draft") {
  Plan plan;  // Qwen3-0.6B at 0.1: 3 layers, 256 wide
  plan.model = "qwen3-0.6b";
  plan.scale = 0.1;
  plan.weights = "Q8_0";
  const ResolvedPlan rp = resolve_plan(plan);
  CpuBackend backend;
  ThreadPool pool(1);  // one thread: no spinning workers to fight a parallel ctest job (slow under sanitizers)
  const ModelWeights w(backend, rp.spec, rp.weights.layout, 11, pool);
  const std::vector<uint32_t> prompt{3, 141, 59, 26, 535};
  const uint64_t n = 24;

  PagedKvCache plain_cache(backend, rp.spec, plan.kv, 4);
  Decoder plain(w, plain_cache, pool);
  REQUIRE(plain_cache.reserve(1, prompt.size() + n));
  const std::vector<uint32_t> expected = generate(plain, 1, prompt, n, {});
  REQUIRE(expected.size() == n);

  for (uint64_t draft_layers : {1, 3}) {  // a 1-layer draft, and the whole target as its own draft
    ModelSpec draft_spec = rp.spec;
    draft_spec.layers = draft_layers;
    for (uint64_t block : {1, 2, 4, 7}) {
      CAPTURE(draft_layers);
      CAPTURE(block);
      PagedKvCache target_cache(backend, rp.spec, plan.kv, 4), draft_cache(backend, draft_spec, plan.kv, 4);
      Decoder target(w, target_cache, pool), draft(w, draft_cache, pool, draft_layers);
      REQUIRE(target_cache.reserve(1, prompt.size() + n + block + 1));
      REQUIRE(draft_cache.reserve(1, prompt.size() + n + block + 1));
      SpecDecodeStats stats;
      SpecOptions spec;
      spec.block = block;
      const std::vector<uint32_t> got = generate_speculative(target, 1, draft, 1, prompt, n, spec, stats);
      CHECK(got == expected);
      CHECK(stats.num_draft_tokens == stats.num_drafts * block);
      if (draft_layers == 3) {  // the target drafting for itself: every draft is accepted
        CHECK(stats.num_accepted_tokens == stats.num_draft_tokens);
        // Each round emits block + 1 tokens (the last round may be cut): rounds = ceil((n - 1) / (block + 1)).
        CHECK(stats.num_drafts == (n - 1 + block) / (block + 1));
      }
    }
  }
}
