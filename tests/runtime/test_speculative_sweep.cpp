// The speculative sweep's bookkeeping on a tiny model: counters that add up, pooled per-position
// acceptance, and the exact figures when the draft is the whole target (every draft kept).
#include <doctest/doctest.h>

#include "planner/core/input_error.hpp"
#include "planner/plan/predict.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/speculative_sweep.hpp"

using namespace infer_plan;
using namespace infer_plan::runtime;

namespace {

Plan tiny_plan(uint64_t draft_layers, float temperature) {
  Plan plan;  // Qwen3-8B at 0.09: 3 layers, 256 wide
  plan.model = "qwen3-8b";
  plan.scale = 0.09;
  plan.weights = "Q8_0";
  plan.context = 40;
  plan.output = 24;
  plan.requests = 1;
  SpeculativePlan sp;
  sp.draft_layers = draft_layers;
  sp.temperature = temperature;
  sp.max_block = 4;
  plan.speculative = sp;
  return plan;
}

}  // namespace

TEST_CASE("a draft as deep as the target keeps every draft: m + 1 tokens per round, acceptance 1") {
  const ResolvedPlan rp = resolve_plan(tiny_plan(3, 0.0f));
  REQUIRE(rp.spec.layers == 3);
  CpuBackend backend;
  RunOptions o;
  o.threads = 1;
  const SpecSweepResult r = run_speculative_sweep(rp, backend, o, 2);
  REQUIRE(r.points.size() == 4);
  for (const SpecSweepPoint& p : r.points) {
    CAPTURE(p.block);
    CHECK(p.stats.num_accepted_tokens == p.stats.num_draft_tokens);
    CHECK(p.stats.tokens_per_round() == doctest::Approx(static_cast<double>(p.block + 1)));
    // 2 repeats x 23 tokens after the first, m + 1 per round: ceil(23 / (m + 1)) rounds each.
    CHECK(p.stats.num_drafts == 2 * ((23 + p.block) / (p.block + 1)));
    CHECK(p.ms_per_token() > 0);
    CHECK(p.verify_ms() > 0);
    CHECK(p.draft_ms() > 0);
  }
  CHECK(r.accept_iid() == 1.0);
  CHECK(r.draft_accept_rate() == 1.0);
  for (const double a : r.accept_per_pos()) CHECK(a == 1.0);
  CHECK(r.plain_ms_per_token > 0);
}

TEST_CASE("sampled sweep: pooled per-position counts add up over every block length") {
  const ResolvedPlan rp = resolve_plan(tiny_plan(1, 1.0f));
  CpuBackend backend;
  RunOptions o;
  o.threads = 1;
  const SpecSweepResult r = run_speculative_sweep(rp, backend, o, 2);
  uint64_t rounds = 0, accepted = 0;
  for (const SpecSweepPoint& p : r.points) {
    CHECK(p.stats.num_emitted_tokens == p.stats.num_accepted_tokens + p.stats.num_drafts);
    CHECK(p.stats.draft_passes == p.stats.num_draft_tokens);
    rounds += p.stats.num_drafts;
    accepted += p.stats.num_accepted_tokens;
  }
  // Draft 1 is judged in every round of every m; draft i + 1 only after draft i was kept.
  CHECK(r.reached_per_pos[0] == rounds);
  uint64_t pooled = 0;
  for (size_t i = 0; i < r.accepted_per_pos.size(); ++i) {
    CHECK(r.accepted_per_pos[i] <= r.reached_per_pos[i]);
    if (i > 0) CHECK(r.reached_per_pos[i] <= r.accepted_per_pos[i - 1]);
    pooled += r.accepted_per_pos[i];
  }
  CHECK(pooled == accepted);
  // A 1-layer draft of 3 at temperature 1 is neither always right nor always wrong.
  CHECK(r.accept_iid() > 0.1);
  CHECK(r.accept_iid() < 0.99);
  const uint64_t best = r.best_block();
  for (const SpecSweepPoint& p : r.points) CHECK(r.points[best - 1].ms_per_token() <= p.ms_per_token());
}

TEST_CASE("the sweep refuses what the runtime cannot run, naming the field") {
  CpuBackend backend;
  Plan plan = tiny_plan(1, 0.0f);
  plan.speculative->group = 4;
  CHECK_THROWS_WITH_AS(run_speculative_sweep(resolve_plan(plan), backend, {}, 1), doctest::Contains("speculative.group"),
                       InputError);
  plan = tiny_plan(1, 0.0f);
  plan.speculative->draft_layers.reset();
  plan.speculative->draft = "qwen3-0.6b";
  CHECK_THROWS_WITH_AS(run_speculative_sweep(resolve_plan(plan), backend, {}, 1), doctest::Contains("draft_layers"),
                       InputError);
  plan = tiny_plan(1, 0.0f);
  plan.offload = OffloadPlan{"ffn", 2, 2, ""};  // a valid section (layer 1 of 3)
  CHECK_THROWS_WITH_AS(run_speculative_sweep(resolve_plan(plan), backend, {}, 1), doctest::Contains("two plans"),
                       InputError);
  plan = tiny_plan(4, 0.0f);
  CHECK_THROWS_WITH_AS(resolve_plan(plan), doctest::Contains("expected at most the target's 3 layers"), InputError);
}
