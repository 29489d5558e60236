// Admission by deadline: a request finishes at queue wait + TTFT + generation, all
// measured from its arrival; it is admitted when that is no later than its deadline (margin >= 0).
// Queueing time is part of the budget. When the margin is negative the server must say no
// early: reject, hand off to another replica, or switch to a faster configuration.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace infer_plan {

struct AdmissionQuery {
  double queue_wait_s = 0;  // time waiting before the prefill starts
  double ttft_s = 0;        // prefill: arrival-at-server to first token
  double generation_s = 0;  // first token to last token
  double deadline_s = 0;    // from arrival
  // Optional KV check ("check KV space and remaining deadline"): both or neither.
  std::optional<double> kv_free_tokens;    // KV tokens not reserved by admitted requests
  std::optional<double> kv_needed_tokens;  // prompt + output tokens this request reserves
};

// The rule, stated once so the CLI and --explain print the same words.
inline constexpr const char* kAdmissionRule =
    "admit when finish = queue wait + TTFT + generation <= deadline (margin >= 0)"
    " and, when given, KV needed <= KV free";

struct AdmissionDecision {
  double finish_s = 0;   // queue wait + TTFT + generation
  double margin_s = 0;   // deadline - finish (negative: the deadline is missed by -margin)
  bool meets_deadline = false;
  std::optional<bool> kv_fits;  // absent when no KV figures were given
  bool admit = false;
  // For a missed deadline: how much faster generation must be to meet it (1.0084 = 0.84 %
  // faster); absent when queue wait + TTFT alone already exceed the deadline.
  std::optional<double> generation_speedup_needed;
  std::vector<std::string> alternatives;  // what to do instead of admitting (empty if admitted)
};

// InputError (naming the field: queue_wait_s, ttft_s, ...) for negative or non-finite times, a
// deadline <= 0, or only one of the two KV figures.
AdmissionDecision decide_admission(const AdmissionQuery& query);

}  // namespace infer_plan
