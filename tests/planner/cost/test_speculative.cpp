// SPEC 5: the seed's speculative decoding table (a = 0.75, verify 26.3 ms, draft 3.6 ms), groups of
// 4, per-position acceptance, a verify time that grows with m, the single minimum over m, and bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "planner/core/input_error.hpp"
#include "planner/cost/speculative.hpp"

using namespace infer_plan;

namespace {

SpecInputs seed_inputs() {
  SpecInputs in;
  in.accept_rates = {0.75};
  in.verify_ms = constant_verify_ms(26.3);
  in.draft_ms = 3.6;
  return in;
}

// The seed prints 2 decimals (1 for round times): the figure must round to what it prints.
void check_printed(double got, double printed, double half_last_digit) {
  INFO("got ", got, ", seed prints ", printed);
  CHECK(std::abs(got - printed) <= half_last_digit);
}

void check_seed_row(const SpecRow& row, uint64_t m, double tokens, double round_ms, double ms_per_token) {
  INFO("m = ", m);
  CHECK(row.block == m);
  check_printed(row.expected_tokens, tokens, 0.005);
  check_printed(row.round_ms, round_ms, 0.05);
  check_printed(row.ms_per_token, ms_per_token, 0.005);
}

}  // namespace

TEST_CASE("SPEC 5: the seed's table, optimum at m = 4") {
  const SpecResult r = speculative_table(seed_inputs());
  REQUIRE(r.rows.size() == 8);  // default M = 8
  check_seed_row(r.rows[0], 1, 1.75, 29.9, 17.09);
  check_seed_row(r.rows[1], 2, 2.31, 33.5, 14.49);
  check_seed_row(r.rows[3], 4, 3.05, 40.7, 13.34);
  check_seed_row(r.rows[7], 8, 3.70, 55.1, 14.89);
  // Pencil, exact in binary: E_2 = 1 + 0.75 + 0.5625; E_4 adds 0.421875 + 0.31640625.
  CHECK(r.rows[1].expected_tokens == 2.3125);
  CHECK(r.rows[3].expected_tokens == 3.05078125);
  CHECK(r.rows[3].drafts == 4);
  CHECK(r.best_block == 4);
  check_printed(r.best_ms_per_token, 13.34, 0.005);
  // Plain decode defaults to T_verify(0) = 26.3 ms/token: 26.3 / (40.7 / 3.05078125) = 1.9714.
  CHECK(r.plain_ms_per_token == 26.3);
  CHECK(r.best_speedup == doctest::Approx(1.9714).epsilon(1e-4));
  CHECK(r.beats_plain);
  // SPEC 10: "longer drafts are better" is wrong: m = 8 is worse than m = 4.
  CHECK(r.rows[7].ms_per_token > r.rows[3].ms_per_token);
}

TEST_CASE("SPEC 5: drafts in groups of 4, m = 5 costs 8 positions") {
  SpecInputs in = seed_inputs();
  in.group = 4;
  const SpecResult r = speculative_table(in);
  const SpecRow& m5 = r.rows[4];
  CHECK(m5.drafts == 8);
  check_seed_row(m5, 5, 3.29, 55.1, 16.76);  // 26.3 + 3.6 x 8 = 55.1 ms for 3.29 tokens
  CHECK(r.rows[0].drafts == 4);  // a partial group costs a whole one: 26.3 + 14.4 = 40.7 ms
  CHECK(r.rows[0].round_ms == doctest::Approx(40.7));
  CHECK(r.rows[3].drafts == 4);
  CHECK(r.rows[7].drafts == 8);
  // Within a group the extra positions are free, so the group's full length wins: m = 4, as before.
  CHECK(r.best_block == 4);
}

TEST_CASE("expected tokens: closed form, a = 1, a = 0, m = 0") {
  for (double a : {0.1, 0.5, 0.75, 0.9, 0.99}) {
    for (uint64_t m = 0; m <= spec_max_block_limit; ++m) {
      const double closed = (1 - std::pow(a, static_cast<double>(m + 1))) / (1 - a);
      INFO("a = ", a, ", m = ", m);
      CHECK(spec_expected_tokens({a}, m) == doctest::Approx(closed).epsilon(1e-12));
    }
  }
  for (uint64_t m : {0, 1, 4, 64}) {
    CHECK(spec_expected_tokens({1.0}, m) == static_cast<double>(m + 1));  // every draft kept
    CHECK(spec_expected_tokens({0.0}, m) == 1.0);                          // only the target's token
  }
  CHECK(spec_expected_tokens({0.3, 0.2}, 0) == 1.0);  // m = 0 is plain decoding
  // m = 0: no drafts, the round is one verify pass = a plain decode step.
  CHECK(spec_drafts(0, 1) == 0);
  CHECK(spec_drafts(0, 4) == 0);
  CHECK(spec_round_ms(26.3, spec_drafts(0, 4), 3.6) == 26.3);
}

TEST_CASE("drafts: a partial group costs a whole one") {
  CHECK(spec_drafts(7, 1) == 7);
  CHECK(spec_drafts(1, 4) == 4);
  CHECK(spec_drafts(4, 4) == 4);
  CHECK(spec_drafts(5, 4) == 8);
  CHECK(spec_drafts(9, 8) == 16);
  CHECK(spec_round_ms(26.3, 8, 3.6) == doctest::Approx(55.1));
}

TEST_CASE("per-position acceptance (measured acceptance is not geometric)") {
  SpecInputs in = seed_inputs();
  in.accept_rates = {0.9, 0.8, 0.7};
  in.max_block = 3;
  const SpecResult r = speculative_table(in);
  REQUIRE(r.rows.size() == 3);
  // Pencil: E_1 = 1.9; E_2 = 1.9 + 0.9 x 0.8 = 2.62; E_3 = 2.62 + 0.72 x 0.7 = 3.124.
  CHECK(r.rows[0].expected_tokens == doctest::Approx(1.9));
  CHECK(r.rows[1].expected_tokens == doctest::Approx(2.62));
  CHECK(r.rows[2].expected_tokens == doctest::Approx(3.124));
  // T_3 = 26.3 + 3 x 3.6 = 37.1 ms; 37.1 / 3.124 = 11.876 ms/token, the best of the three
  // (m = 1: 29.9 / 1.9 = 15.74; m = 2: 33.5 / 2.62 = 12.79).
  CHECK(r.best_block == 3);
  CHECK(r.best_ms_per_token == doctest::Approx(11.876).epsilon(1e-4));
  // A list longer than M: only a_1..a_M are used.
  in.max_block = 2;
  CHECK(speculative_table(in).rows.back().expected_tokens == doctest::Approx(2.62));
}

TEST_CASE("a verify pass that grows with m moves the optimum shorter") {
  SpecInputs in = seed_inputs();
  // T_verify(m) = 26.3 + 5 m ms (leaving the memory-bound regime); per token:
  // m=1: (26.3 + 5 + 3.6) / 1.75 = 19.94; m=2: (26.3 + 10 + 7.2) / 2.3125 = 18.81;
  // m=3: (26.3 + 15 + 10.8) / 2.734375 = 19.05 -> optimum m = 2 (m = 4 with a constant verify).
  in.verify_ms = [](uint64_t m) { return 26.3 + 5.0 * static_cast<double>(m); };
  const SpecResult r = speculative_table(in);
  CHECK(r.rows[0].verify_ms == doctest::Approx(31.3));
  CHECK(r.rows[1].round_ms == doctest::Approx(43.5));
  CHECK(r.rows[1].ms_per_token == doctest::Approx(18.811).epsilon(1e-4));
  CHECK(r.best_block == 2);
  CHECK(r.plain_ms_per_token == 26.3);  // T_verify(0)
}

TEST_CASE("plain decode baseline and a case where speculation does not pay") {
  SpecInputs in = seed_inputs();
  in.plain_ms_per_token = 90.0;  // the seed's measured plain decode
  const SpecResult measured = speculative_table(in);
  CHECK(measured.best_block == 4);  // the baseline changes the speedup, not the optimum
  CHECK(measured.best_speedup == doctest::Approx(90.0 / (40.7 / 3.05078125)));

  SpecInputs poor = seed_inputs();
  poor.accept_rates = {0.1};
  poor.draft_ms = 10.0;
  // m=1: (26.3 + 10) / 1.1 = 33.0 ms/token > 26.3: every block is slower than plain decoding.
  const SpecResult r = speculative_table(poor);
  CHECK_FALSE(r.beats_plain);
  CHECK(r.best_block == 1);
  CHECK(r.best_ms_per_token == doctest::Approx(33.0));
  CHECK(r.best_speedup < 1.0);

  // a = 1 and a verify longer than a draft: every longer block is cheaper per token, best = M.
  SpecInputs perfect = seed_inputs();
  perfect.accept_rates = {1.0};
  const SpecResult p = speculative_table(perfect);
  CHECK(p.best_block == 8);
  CHECK(p.best_ms_per_token == doctest::Approx((26.3 + 8 * 3.6) / 9));  // 55.1 / 9 = 6.12
}

TEST_CASE("property: for 0 < a < 1 and constant times, ms/token over m has a single minimum") {
  for (double a : {0.01, 0.2, 0.4, 0.6, 0.75, 0.9, 0.99}) {
    for (double verify_ms : {1.0, 26.3, 200.0}) {
      for (double draft_ms : {0.05, 3.6, 40.0}) {
        SpecInputs in;
        in.accept_rates = {a};
        in.verify_ms = constant_verify_ms(verify_ms);
        in.draft_ms = draft_ms;
        in.max_block = spec_max_block_limit;
        const SpecResult r = speculative_table(in);
        INFO("a = ", a, ", verify ", verify_ms, " ms, draft ", draft_ms, " ms");
        // Decreases (or stays) up to the optimum, increases (or stays) after it.
        const double slack = 1e-12;  // relative: equal neighbours may differ in the last bits
        bool rising = false, unimodal = true;
        for (size_t i = 1; i < r.rows.size(); ++i) {
          const double prev = r.rows[i - 1].ms_per_token, cur = r.rows[i].ms_per_token;
          if (cur > prev * (1 + slack)) rising = true;
          if (rising && cur < prev * (1 - slack)) unimodal = false;
        }
        CHECK(unimodal);
        for (const SpecRow& row : r.rows) CHECK(row.ms_per_token >= r.best_ms_per_token);
      }
    }
  }
}

TEST_CASE("bad input names the flag") {
  auto fails_with = [](SpecInputs in, const char* flag) {
    INFO("expecting an error naming ", flag);
    CHECK_THROWS_WITH_AS(speculative_table(in), doctest::Contains(flag), InputError);
  };
  SpecInputs in = seed_inputs();
  in.accept_rates = {1.2};
  fails_with(in, "--accept");
  in.accept_rates = {75};
  fails_with(in, "write 75% as 0.75");
  in.accept_rates = {-0.1};
  fails_with(in, "--accept");
  in.accept_rates = {NAN};
  fails_with(in, "--accept");
  in.accept_rates = {};
  fails_with(in, "--accept");
  in.accept_rates = {0.9, 1.5, 0.7};
  in.max_block = 3;
  fails_with(in, "(position 2)");
  // A per-position list shorter than M is refused, not extended with a guessed tail.
  in = seed_inputs();
  in.accept_rates = {0.9, 0.8, 0.7};
  fails_with(in, "--max-block");  // M = 8 > 3 rates
  in = seed_inputs();
  in.max_block = 0;
  fails_with(in, "--max-block");
  in.max_block = 65;
  fails_with(in, "--max-block");
  in = seed_inputs();
  in.group = 0;
  fails_with(in, "--group");
  in = seed_inputs();
  in.verify_ms = constant_verify_ms(0.0);
  fails_with(in, "--verify-ms");
  in.verify_ms = [](uint64_t m) { return m == 3 ? -1.0 : 26.3; };
  fails_with(in, "(block 3)");
  in.verify_ms = nullptr;
  fails_with(in, "--verify-ms");
  in = seed_inputs();
  in.draft_ms = 0;
  fails_with(in, "--draft-ms");
  in = seed_inputs();
  in.plain_ms_per_token = -5;
  fails_with(in, "--decode-ms");
  in.plain_ms_per_token = INFINITY;
  fails_with(in, "--decode-ms");
  // A plan-file reader names its fields instead.
  in = seed_inputs();
  in.accept_rates = {2};
  in.names.accept = "speculative.accept";
  fails_with(in, "speculative.accept");
}

TEST_CASE("seed 002's rule of thumb: 4; above 70% 6-8; below 40% 2-3") {
  auto rule = [](double a) {
    const SpecRuleOfThumb r = spec_rule_of_thumb(a);
    return std::vector<uint64_t>{r.block_min, r.block_max};
  };
  CHECK(rule(0.75) == std::vector<uint64_t>{6, 8});
  CHECK(rule(0.70) == std::vector<uint64_t>{4, 4});  // "above 70%" is strict
  CHECK(rule(0.65) == std::vector<uint64_t>{4, 4});  // seed 002's chat tasks: k = 4
  CHECK(rule(0.40) == std::vector<uint64_t>{4, 4});
  CHECK(rule(0.30) == std::vector<uint64_t>{2, 3});  // seed 002's code-heavy tasks
  CHECK(spec_mean_accept_rate({0.75}, 8) == 0.75);
  CHECK(spec_mean_accept_rate({0.9, 0.8, 0.7}, 3) == doctest::Approx(0.8));
  CHECK(spec_mean_accept_rate({0.9, 0.8, 0.7}, 2) == doctest::Approx(0.85));
}

#include "planner/catalog/catalog.hpp"

TEST_CASE("times from the roofline: verify grows with m only once compute-bound") {
  using namespace infer_plan;
  const ModelSpec target = load_model("qwen3-8b");
  const ModelSpec draft = load_model("qwen3-0.6b");
  const HwProfile h200 = load_hw_profile("h200");
  const Roofline t(target, uniform_weights_layout(target, "BF16"), {}, h200);
  const Roofline d(draft, uniform_weights_layout(draft, "BF16"), {}, h200);
  const SpecVerifyMs verify1 = roofline_verify_ms(t, 1, 4096);
  CHECK(verify1(0) == doctest::Approx(t.decode_step(1, 4096).time_s * 1e3));
  // batch 1 stays memory-bound: 9 tokens cost only their extra KV writes and embedding rows
  CHECK(verify1(8) == doctest::Approx(verify1(0)).epsilon(0.01));
  // batch 256 at a short context (256 tokens): 256 x 9 tokens x 2 x 8.2e9 FLOPs = 37.8 TFLOP is
  // compute-bound (38 ms at 989 TFLOPS) against ~5 ms for one decode step
  const SpecVerifyMs verify256 = roofline_verify_ms(t, 256, 256);
  CHECK(verify256(8) > 2 * verify256(0));
  CHECK(roofline_draft_ms(d, 1, 4096) < verify1(0) / 5);  // a 0.6B draft vs an 8B target
}

#include "planner/plan/predict.hpp"

TEST_CASE("a draft of the target's first layers: its tensors, bytes and roofline") {
  using namespace infer_plan;
  Plan plan;  // Qwen3-8B BF16: 36 layers; the draft keeps layers 0 and 1, the embedding and the head
  plan.engine = "none";  // the bare roofline: bytes, not an engine's fixed time per step
  plan.speculative = SpeculativePlan{};
  plan.speculative->draft_layers = 2;
  const ResolvedPlan rp = resolve_plan(plan);
  const WeightsLayout draft = first_layers_layout(rp.weights.layout, 2);
  uint64_t global = 0, layer0 = 0, all = 0, kept = 0;
  for (const TensorPlacement& t : rp.weights.layout.tensors) {
    all += t.bytes;
    if (t.tensor.layer < 0) global += t.bytes;
    if (t.tensor.layer == 0) layer0 += t.bytes;
  }
  for (const TensorPlacement& t : draft.tensors) {
    CHECK(t.tensor.layer < 2);
    kept += t.bytes;
  }
  // Every Qwen3-8B layer has the same tensors: the draft is the globals plus 2 of 36 layers.
  CHECK(kept == global + 2 * layer0);
  CHECK(all == global + 36 * layer0);
  const ModelSpec spec = first_layers_spec(rp.spec, 2);
  CHECK(spec.layers == 2);
  CHECK(spec.vocab == rp.spec.vocab);  // the same vocabulary, as speculative decoding needs
  // Its decode step reads the globals' head (not the embedding table, one row) and 2 layers.
  const std::unique_ptr<Roofline> d = plan_draft_roofline(rp);
  REQUIRE(d);
  CHECK(d->spec().layers == 2);
  CHECK(d->dense_weight_bytes() < rp.roofline->dense_weight_bytes() / 5);
  CHECK(d->decode_step(1, 4096).time_s < rp.roofline->decode_step(1, 4096).time_s / 5);
  // A draft as deep as the target is the target.
  plan.speculative->draft_layers = 36;
  CHECK(plan_draft_roofline(resolve_plan(plan))->dense_weight_bytes() == rp.roofline->dense_weight_bytes());
  plan.speculative->draft_layers = 37;
  CHECK_THROWS_WITH_AS(resolve_plan(plan), doctest::Contains("'speculative.draft_layers' is 37; expected at most the "
                                                             "target's 36 layers"),
                       InputError);
}
