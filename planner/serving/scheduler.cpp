#include "planner/serving/scheduler.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "planner/core/input_error.hpp"

namespace infer_plan {
namespace {

// `running` is a min-heap on finish_step: a full batch loses a request almost every step, and a
// scan of the batch each time would dominate the lookahead's cost. Ties go by id, so the order of
// departures (and of the lookahead's stand-ins) is the same on every standard library.
bool finishes_later(const Scheduler::Running& a, const Scheduler::Running& b) {
  return a.finish_step != b.finish_step ? a.finish_step > b.finish_step : a.id > b.id;
}

}  // namespace

double checked_decode_s(const ServerModel& server, uint64_t batch, uint64_t context_tokens) {
  const double t = server.decode_iteration_s(batch, context_tokens);
  if (!std::isfinite(t) || t < 0)
    throw InputError(fmt::format("decode_iteration_s(batch {}, context {} tokens) returned {} s; expected a "
                                 "finite time >= 0", batch, context_tokens, t));
  return t;
}

double checked_prefill_s(const ServerModel& server, uint64_t prompt_tokens) {
  const double t = server.prefill_s(prompt_tokens);
  if (!std::isfinite(t) || t < 0)
    throw InputError(fmt::format("prefill_s({} prompt tokens) returned {} s; expected a finite time >= 0",
                                 prompt_tokens, t));
  return t;
}

double scheduled_step_s(const ServerModel& server, const ScheduledStep& step) {
  double dt = 0;
  uint64_t fresh = 0;  // tokens of the prompts begun in this step
  for (const PrefillChunk& c : step.prefill) {
    if (c.done == 0) fresh += c.tokens;
    else dt += checked_prefill_s(server, c.done + c.tokens) - checked_prefill_s(server, c.done);
  }
  if (fresh) dt += checked_prefill_s(server, fresh);
  if (step.batch) dt += checked_decode_s(server, step.batch, step.context_tokens);
  return dt;
}

Scheduler::Scheduler(const ServerModel& server, const std::vector<ServingRequest>& requests)
    : server_(&server), requests_(&requests) {}

uint32_t Scheduler::add(const ServingRequest& r) {
  added_.push_back(r);
  return static_cast<uint32_t>(requests_->size() + added_.size() - 1);
}

void Scheduler::restore_running(uint32_t id, uint64_t emitted) {
  const ServingRequest& r = request(id);
  assert(emitted >= 1 && emitted < r.output_tokens);
  running_.push_back({id, step_ + r.output_tokens - emitted});
  std::push_heap(running_.begin(), running_.end(), finishes_later);
  context_tokens_ += r.prompt_tokens + emitted;
  reserved_tokens_ += kv_reservation_tokens(*server_, r.kv_tokens());
}

const char* Scheduler::offer(uint32_t id, double now_s, std::optional<double> deadline_s, DeadlinePrediction how) {
  const ServingRequest& r = request(id);
  if (exceeds_kv_capacity(*server_, r.kv_tokens())) return "exceeds_kv_capacity";
  if (deadline_s) {
    const double due_s = r.arrival_s + *deadline_s - server_->first_token_s;
    if (admission_finish_s(*this, now_s, id, due_s, how) > due_s) return "deadline";
  }
  enqueue(id);
  return nullptr;
}

// `starting`: prompts this step ends that already hold a slot (they decode from the next step).
bool Scheduler::head_admissible(uint64_t starting) const {
  return !waiting_.empty() &&
         admits_head(*server_, running_.size() + starting + (partial_ ? 1 : 0), reserved_tokens_,
                     kv_reservation_tokens(*server_, request(waiting_.front()).kv_tokens()));
}

const ScheduledStep& Scheduler::schedule() {
  started_.clear();
  first_tokens_.clear();
  departed_.clear();
  ScheduledStep& s = scheduled_;
  s.prefill.clear();
  s.batch = 0;
  s.context_tokens = 0;
  if (server_->step_token_budget && (partial_ || head_admissible())) {
    if (server_->mix_decodes) {
      s.batch = running_.size();
      s.context_tokens = context_tokens_;
    }
    uint64_t room = *server_->step_token_budget > s.batch ? *server_->step_token_budget - s.batch : 0;
    uint64_t ending = 0;  // prompts this step ends
    if (partial_ && room) {
      const Partial p = *partial_;
      const uint64_t chunk = std::min(request(p.id).prompt_tokens - p.done, room);
      s.prefill.push_back({p.id, p.done, chunk});
      room -= chunk;
      if (p.done + chunk == request(p.id).prompt_tokens) {
        partial_.reset();
        ++ending;
      } else {
        partial_->done += chunk;
      }
    }
    while (room && !partial_ && head_admissible(ending)) {
      // Whole prompts only: the head waits for a step with room, unless it is the step's first.
      const uint64_t prompt = request(waiting_.front()).prompt_tokens;
      if (!server_->chunk_prompts && prompt > room && !s.prefill.empty()) break;
      const uint32_t id = admit_head();
      const uint64_t chunk = server_->chunk_prompts ? std::min(prompt, room) : prompt;
      s.prefill.push_back({id, 0, chunk});
      room -= std::min(chunk, room);
      if (chunk == request(id).prompt_tokens) ++ending;
      else partial_ = Partial{id, chunk};
    }
  } else if (head_admissible()) {  // prefill first, alone
    const uint32_t id = admit_head();
    s.prefill.push_back({id, 0, request(id).prompt_tokens});
  } else {
    assert(!running_.empty());
    s.batch = running_.size();
    s.context_tokens = context_tokens_;
  }
  return s;
}

void Scheduler::complete() {
  const ScheduledStep& s = scheduled_;
  if (s.batch) {
    ++step_;
    context_tokens_ += s.batch;  // one more token in each request's context
    while (!running_.empty() && running_.front().finish_step == step_) {
      const uint32_t id = running_.front().id;
      std::pop_heap(running_.begin(), running_.end(), finishes_later);
      running_.pop_back();
      context_tokens_ -= request(id).kv_tokens();  // prompt + output at its last token
      depart(id);
    }
  }
  for (const PrefillChunk& c : s.prefill) {
    if (c.done + c.tokens == request(c.id).prompt_tokens) emit_first_token(c.id);
    else ++chunks_continued_;
  }
}

// The head of the queue starts: its whole KV reserved, its prefill begun.
uint32_t Scheduler::admit_head() {
  const uint32_t id = waiting_.front();
  waiting_.pop_front();
  const uint64_t tokens = request(id).kv_tokens();
  reserved_tokens_ += kv_reservation_tokens(*server_, tokens);
  peak_reserved_tokens_ = std::max(peak_reserved_tokens_, reserved_tokens_);
  if (pool_) pool_->reserve(id, tokens);
  started_.push_back(id);
  return id;
}

// A prompt's end: the request's first token, then it leaves (one output token) or decodes.
void Scheduler::emit_first_token(uint32_t id) {
  const ServingRequest& r = request(id);
  first_tokens_.push_back(id);
  if (r.output_tokens == 1) {
    depart(id);
    return;
  }
  running_.push_back({id, step_ + r.output_tokens - 1});
  std::push_heap(running_.begin(), running_.end(), finishes_later);
  peak_batch_ = std::max<uint64_t>(peak_batch_, running_.size());
  context_tokens_ += r.prompt_tokens + 1;  // the prompt and the first token
}

void Scheduler::depart(uint32_t id) {
  reserved_tokens_ -= kv_reservation_tokens(*server_, request(id).kv_tokens());
  if (pool_) pool_->release(id);
  departed_.push_back(id);
}

std::string describe_policy(const ServerModel& server) {
  if (!server.step_token_budget) return "each prompt prefilled alone in its step, the batch stalled (prefill first)";
  return fmt::format("prompts within {} tokens a step{}, {}", *server.step_token_budget,
                     server.mix_decodes ? " beside the batch's decodes" : " in steps of their own (prefill first)",
                     server.chunk_prompts ? "a long one over several steps (chunked prefill)"
                                          : "each whole (no chunked prefill)");
}

std::string describe(const ScheduledStep& step) {
  std::string out = step.batch ? fmt::format("decode {} (context {})", step.batch, step.context_tokens) : "no decode";
  for (const PrefillChunk& c : step.prefill) out += fmt::format("; prefill #{} [{}, {})", c.id, c.done, c.done + c.tokens);
  return out;
}

ScheduleReplay replay_schedule(const ServerModel& server, const std::vector<ServingRequest>& arrivals,
                               std::optional<double> deadline_s, const std::vector<StepDecision>& decisions,
                               const std::vector<std::string>& rejected) {
  ScheduleReplay out;
  Scheduler s(server, arrivals);
  size_t next = 0;
  const auto differ = [&](std::string what) {
    out.identical = false;
    out.first_difference = std::move(what);
    return out;
  };
  const auto arrive = [&](double now_s) -> bool {
    for (; next < arrivals.size() && arrivals[next].arrival_s <= now_s; ++next) {
      const char* why = s.offer(static_cast<uint32_t>(next), now_s, deadline_s);
      const std::string replayed = why ? why : "";
      if (next < rejected.size() && replayed != rejected[next]) {
        differ(fmt::format("request {} at {:.6f} s: recorded {}, the replay {}", next, now_s,
                           rejected[next].empty() ? "admitted" : "rejected (" + rejected[next] + ")",
                           replayed.empty() ? "admits it" : "rejects it (" + replayed + ")"));
        return false;
      }
    }
    return true;
  };
  for (const StepDecision& d : decisions) {
    if (!arrive(d.decided_s)) return out;
    if (!s.has_work())
      return differ(fmt::format("step {} at {:.6f} s: recorded {}; the replay has nothing to run", out.steps,
                                d.decided_s, describe(d.step)));
    const ScheduledStep& replayed = s.schedule();
    const auto same_chunk = [](const PrefillChunk& a, const PrefillChunk& b) {
      return a.id == b.id && a.done == b.done && a.tokens == b.tokens;
    };
    if (replayed.batch != d.step.batch || replayed.context_tokens != d.step.context_tokens ||
        !std::equal(replayed.prefill.begin(), replayed.prefill.end(), d.step.prefill.begin(), d.step.prefill.end(),
                    same_chunk))
      return differ(fmt::format("step {} at {:.6f} s: recorded {}; the replay schedules {}", out.steps, d.decided_s,
                                describe(d.step), describe(replayed)));
    s.complete();
    ++out.steps;
  }
  if (!arrive(std::numeric_limits<double>::infinity())) return out;
  if (s.has_work()) return differ(fmt::format("after {} steps the replay still has work to run", out.steps));
  return out;
}

}  // namespace infer_plan
