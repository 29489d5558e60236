// Admission by deadline and KV space; the alternatives (reject, hand off, switch
// to a faster configuration), with the speed-up a faster configuration would need.
#include "planner/serving/admission.hpp"

#include <cmath>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"

namespace infer_plan {
namespace {

void check_time(double v, const char* what, bool zero_ok) {
  if (!std::isfinite(v) || v < 0 || (!zero_ok && v == 0))
    throw InputError(fmt::format("{}: {} s is not a {} finite number of seconds", what, v,
                                 zero_ok ? "non-negative" : "positive"));
}

}  // namespace

AdmissionDecision decide_admission(const AdmissionQuery& q) {
  check_time(q.queue_wait_s, "queue_wait_s", true);
  check_time(q.ttft_s, "ttft_s", true);
  check_time(q.generation_s, "generation_s", true);
  check_time(q.deadline_s, "deadline_s", false);
  if (q.kv_free_tokens.has_value() != q.kv_needed_tokens.has_value())
    throw InputError("kv_free_tokens and kv_needed_tokens: give both or neither");
  for (const auto& [v, what] : {std::pair{q.kv_free_tokens, "kv_free_tokens"},
                                std::pair{q.kv_needed_tokens, "kv_needed_tokens"}})
    if (v && (!std::isfinite(*v) || *v < 0))
      throw InputError(fmt::format("{}: {} is not a non-negative token count", what, *v));

  AdmissionDecision d;
  d.finish_s = q.queue_wait_s + q.ttft_s + q.generation_s;
  d.margin_s = q.deadline_s - d.finish_s;
  d.meets_deadline = d.margin_s >= 0;
  if (q.kv_free_tokens) d.kv_fits = *q.kv_needed_tokens <= *q.kv_free_tokens;
  d.admit = d.meets_deadline && d.kv_fits.value_or(true);
  if (d.admit) return d;

  // Time left for generation once the wait and the prefill are spent.
  const double generation_budget_s = q.deadline_s - q.queue_wait_s - q.ttft_s;
  if (!d.meets_deadline && generation_budget_s > 0)
    d.generation_speedup_needed = q.generation_s / generation_budget_s;
  d.alternatives.push_back("reject now, so the client can retry elsewhere while time is left");
  d.alternatives.push_back("hand off to a replica with a shorter queue or free KV space");
  if (!d.meets_deadline)
    d.alternatives.push_back(
        d.generation_speedup_needed
            ? fmt::format("switch to a faster configuration: generation must take <= {:.3f} s "
                          "instead of {:.3f} s ({:.2f}% faster; e.g. quantized weights, "
                          "speculative decoding at low load)",
                          generation_budget_s, q.generation_s,
                          100.0 * (*d.generation_speedup_needed - 1.0))
            : fmt::format("switch to a faster configuration: queue wait + TTFT alone are {:.3f} "
                          "s, past the {:.3f} s deadline, so a faster prefill or a shorter queue "
                          "is needed, not only faster decoding",
                          q.queue_wait_s + q.ttft_s, q.deadline_s));
  else
    d.alternatives.push_back(
        "free KV space first: quantize the KV cache, or wait for a running request to finish");
  return d;
}

}  // namespace infer_plan
