// SPEC 6: TTFT 0.196 s + generation 6.76 s finishes at 6.956 s, inside a 7 s deadline by
// 0.044 s (the seed rounds it to 0.05); 0.1 s of queueing more misses it -> reject.
#include <doctest/doctest.h>

#include "planner/serving/admission.hpp"
#include "planner/core/input_error.hpp"

using namespace infer_plan;

namespace {
AdmissionQuery seed(double queue_wait_s) {
  AdmissionQuery q;
  q.queue_wait_s = queue_wait_s;
  q.ttft_s = 0.196;
  q.generation_s = 6.76;
  q.deadline_s = 7;
  return q;
}
bool mentions(const std::vector<std::string>& lines, const char* word) {
  for (const auto& l : lines)
    if (l.find(word) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST_CASE("SPEC 6: no queueing: finish 6.956 s, margin 0.044 s -> admit") {
  const AdmissionDecision d = decide_admission(seed(0));
  CHECK(d.finish_s == doctest::Approx(6.956).epsilon(1e-12));
  CHECK(d.margin_s == doctest::Approx(0.044).epsilon(1e-9));
  CHECK(d.margin_s == doctest::Approx(0.05).epsilon(0.15).scale(0));  // the seed's rounding
  CHECK(d.meets_deadline);
  CHECK(d.admit);
  CHECK(d.alternatives.empty());
  CHECK_FALSE(d.kv_fits.has_value());
}

TEST_CASE("SPEC 6: 0.1 s of queueing: finish 7.056 s, 0.056 s late -> reject, hand off, faster") {
  const AdmissionDecision d = decide_admission(seed(0.1));
  CHECK(d.finish_s == doctest::Approx(7.056).epsilon(1e-12));
  CHECK(d.margin_s == doctest::Approx(-0.056).epsilon(1e-9));
  CHECK_FALSE(d.admit);
  // generation must fit in 7 - 0.1 - 0.196 = 6.704 s: 6.76 / 6.704 = 1.00835 (0.84% faster)
  REQUIRE(d.generation_speedup_needed.has_value());
  CHECK(*d.generation_speedup_needed == doctest::Approx(6.76 / 6.704));
  CHECK(mentions(d.alternatives, "reject"));
  CHECK(mentions(d.alternatives, "hand off"));
  CHECK(mentions(d.alternatives, "faster configuration"));
  CHECK(mentions(d.alternatives, "6.704 s"));
}

TEST_CASE("margin exactly zero is admitted; wait + TTFT past the deadline needs no speed-up figure") {
  AdmissionQuery q;  // 1 + 2 + 4 = 7 exactly in binary floating point
  q.queue_wait_s = 1;
  q.ttft_s = 2;
  q.generation_s = 4;
  q.deadline_s = 7;
  CHECK(decide_admission(q).admit);
  CHECK(decide_admission(q).margin_s == 0.0);
  q.queue_wait_s = 6;  // 6 + 2 = 8 s > 7 s before any generation
  const AdmissionDecision d = decide_admission(q);
  CHECK_FALSE(d.admit);
  CHECK_FALSE(d.generation_speedup_needed.has_value());
  CHECK(mentions(d.alternatives, "faster prefill or a shorter queue"));
}

TEST_CASE("KV space is checked beside the deadline") {
  AdmissionQuery q = seed(0);
  q.kv_free_tokens = 8448;
  q.kv_needed_tokens = 8448;  // 8192 prompt + 256 output, exactly the free space
  CHECK(decide_admission(q).admit);
  q.kv_needed_tokens = 8449;
  const AdmissionDecision d = decide_admission(q);
  CHECK(d.meets_deadline);
  CHECK(d.kv_fits == false);
  CHECK_FALSE(d.admit);
  CHECK(mentions(d.alternatives, "KV"));
}

TEST_CASE("bad input names the field") {
  AdmissionQuery q = seed(0);
  q.deadline_s = 0;
  CHECK_THROWS_WITH_AS(decide_admission(q), doctest::Contains("deadline_s"), InputError);
  q = seed(-0.1);
  CHECK_THROWS_WITH_AS(decide_admission(q), doctest::Contains("queue_wait_s"), InputError);
  q = seed(0);
  q.kv_free_tokens = 10;
  CHECK_THROWS_WITH_AS(decide_admission(q), doctest::Contains("give both or neither"), InputError);
}
