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

PromptStall prompt_stall(const ServerModel& server, uint64_t prompt, uint64_t batch, uint64_t context_tokens) {
  const double decode_s = checked_decode_s(server, batch, context_tokens);
  // the budget's room for prompts: what the decodes leave, or all of it in steps of prompts alone
  const uint64_t beside = server.mix_decodes ? batch : 0;
  const uint64_t room = server.step_token_budget && *server.step_token_budget > beside ? *server.step_token_budget - beside : 0;
  PromptStall out;
  if (!server.step_token_budget || !server.mix_decodes || !server.chunk_prompts || room == 0 || prompt <= room) {
    const bool cut = server.step_token_budget && !server.mix_decodes && server.chunk_prompts && room;
    out.chunk_tokens = cut ? std::min(prompt, room) : prompt;
    out.steps = cut ? (prompt + room - 1) / room : 1;
    out.gap_s = decode_s + checked_prefill_s(server, prompt);  // whole, or its chunks back to back
    return out;
  }
  out.chunk_tokens = room;
  out.steps = (prompt + room - 1) / room;
  for (uint64_t done = 0; done < prompt; done += room) {
    ScheduledStep step;
    step.prefill.push_back({0, done, std::min(room, prompt - done)});
    out.gap_s = std::max(out.gap_s, decode_s + scheduled_step_s(server, step));
  }
  return out;
}

Scheduler::Scheduler(const ServerModel& server, const std::vector<ServingRequest>& requests)
    : server_(&server), requests_(&requests) {
  if (server.kv_on_demand) page_due_.assign(std::max<uint64_t>(server.kv_page_tokens, 1), 0);
}

uint32_t Scheduler::add(const ServingRequest& r) {
  added_.push_back(r);
  return static_cast<uint32_t>(requests_->size() + added_.size() - 1);
}

uint64_t Scheduler::prefill_tokens(uint32_t id) const {
  const auto again = recompute_.find(id);
  return request(id).prompt_tokens + (again == recompute_.end() ? 0 : again->second);
}

void Scheduler::restore_running(uint32_t id, uint64_t emitted) {
  const ServingRequest& r = request(id);
  assert(emitted >= 1 && emitted < r.output_tokens);
  take(server_->kv_on_demand ? held_tokens(r.prompt_tokens + emitted - 1) : kv_reservation_tokens(*server_, r.kv_tokens()));
  join_running(id, emitted);
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
bool Scheduler::head_admissible(uint64_t starting, uint64_t chunk) const {
  if (waiting_.empty()) return false;
  const uint64_t running = running_.size() + starting + (partial_ ? 1 : 0);
  const uint32_t head = waiting_.front();
  const uint64_t hit = prefix_hit(head);
  if (!server_->kv_on_demand)
    return admits_head(*server_, running, reserved_tokens_, held_tokens(request(head).kv_tokens()) - hit);
  return running < server_->max_batch && held_tokens(hit + chunk) - hit <= free_tokens();
}

uint64_t Scheduler::prefix_hit(uint32_t id) const {
  if (!server_->prefix_caching || prefix_cached_ == 0) return 0;
  const uint64_t page = std::max<uint64_t>(server_->kv_page_tokens, 1);
  return std::min(prefix_cached_, (prefill_tokens(id) - 1) / page * page);  // its last token is computed
}

uint64_t Scheduler::own_tokens(uint32_t id, uint64_t tokens) const {
  const auto shared = sharing_.find(id);
  return held_tokens(tokens) - (shared == sharing_.end() ? 0 : shared->second);
}

// The first prefill to pass the shared prefix's whole pages leaves them to the cache: they are
// the cache's from now on (still counted once), and the request shares them like a later one.
void Scheduler::cache_prefix(const PrefillChunk& c) {
  const uint64_t page = std::max<uint64_t>(server_->kv_page_tokens, 1);
  const uint64_t whole = shared_prefix_ / page * page;
  if (!server_->prefix_caching || prefix_cached_ || whole == 0 || c.done + c.tokens < whole) return;
  prefix_cached_ = whole;
  sharing_[c.id] = whole;
  if (pool_) pool_->pin_prefix(c.id, whole);
}

uint64_t Scheduler::held_tokens(uint64_t written) const { return kv_reservation_tokens(*server_, written); }

// A running request writes token prompt + emitted - 1 in a decode step, and emitted - step_ stays
// the same while it runs: its phase is that token's position less step_, modulo the page.
uint64_t Scheduler::page_phase(uint32_t id, uint64_t finish_step) const {
  const uint64_t page = page_due_.size();
  const ServingRequest& r = request(id);
  return ((r.kv_tokens() - 1) % page + page - finish_step % page) % page;
}

uint64_t Scheduler::free_tokens() const {
  if (!server_->kv_capacity_tokens) return std::numeric_limits<uint64_t>::max() / 2;
  return *server_->kv_capacity_tokens - reserved_tokens_;
}

void Scheduler::take(uint64_t tokens) {
  reserved_tokens_ += tokens;
  peak_reserved_tokens_ = std::max(peak_reserved_tokens_, reserved_tokens_);
}

// The running batch's decodes open pages: those whose token is a page's first. Short of free
// ones, the newest admitted request is preempted (the prompt part-way through first: it is the
// newest) until they fit.
void Scheduler::give_decode_pages() {
  const uint64_t page = page_due_.size();
  const auto due = [&] { return page_due_[(page - step_ % page) % page] * page; };
  while (due() > free_tokens()) {
    assert(partial_ || !running_.empty());
    if (partial_) preempt_partial();
    else preempt_newest_running();
  }
  if (due() == 0) return;
  take(due());
  if (pool_)
    for (const Running& r : running_)
      if (page_phase(r.id, r.finish_step) == (page - step_ % page) % page)
        pool_->hold(r.id, request(r.id).kv_tokens() - (r.finish_step - step_));  // prompt + emitted
}

void Scheduler::preempt_partial() {
  const Partial p = *partial_;
  partial_.reset();
  reserved_tokens_ -= own_tokens(p.id, p.done);
  sharing_.erase(p.id);
  if (pool_) pool_->release(p.id);
  waiting_.push_front(p.id);
  scheduled_.preempted.push_back(p.id);
  ++preemptions_;
}

void Scheduler::preempt_newest_running() {
  assert(!running_.empty());
  const auto newest = std::max_element(running_.begin(), running_.end(),
                                       [](const Running& a, const Running& b) { return a.admitted < b.admitted; });
  const Running r = *newest;
  running_.erase(newest);
  std::make_heap(running_.begin(), running_.end(), finishes_later);
  const ServingRequest& q = request(r.id);
  const uint64_t emitted = q.output_tokens - (r.finish_step - step_);
  --page_due_[page_phase(r.id, r.finish_step)];
  context_tokens_ -= q.prompt_tokens + emitted;
  reserved_tokens_ -= own_tokens(r.id, q.prompt_tokens + emitted - 1);
  sharing_.erase(r.id);
  if (pool_) pool_->release(r.id);
  recompute_[r.id] = emitted;
  waiting_.push_front(r.id);
  scheduled_.preempted.push_back(r.id);
  ++preemptions_;
}

const ScheduledStep& Scheduler::schedule() {
  started_.clear();
  first_tokens_.clear();
  resumed_.clear();
  departed_.clear();
  ScheduledStep& s = scheduled_;
  s.preempted.clear();
  s.prefill.clear();
  s.batch = 0;
  s.context_tokens = 0;
  const bool mixed = server_->step_token_budget && server_->mix_decodes;
  if (server_->kv_on_demand && mixed && !running_.empty()) give_decode_pages();
  // Nobody is admitted in a step that preempted: the pages just freed go to those running.
  const auto head_prompt = [&] { return waiting_.empty() ? 0 : prefill_tokens(waiting_.front()); };
  if (server_->step_token_budget) {
    if (mixed) {
      s.batch = running_.size();
      s.context_tokens = context_tokens_;
    }
    uint64_t room = *server_->step_token_budget > s.batch ? *server_->step_token_budget - s.batch : 0;
    uint64_t ending = 0;  // prompts this step ends
    if (partial_ && room) {
      const Partial p = *partial_;
      const uint64_t chunk = std::min(prefill_tokens(p.id) - p.done, room);
      const uint64_t pages = held_tokens(p.done + chunk) - held_tokens(p.done);
      if (server_->kv_on_demand && pages > free_tokens()) {
        preempt_partial();  // it is the newest: it preempts itself
      } else {
        if (server_->kv_on_demand) {
          take(pages);
          if (pool_) pool_->hold(p.id, p.done + chunk);
        }
        s.prefill.push_back({p.id, p.done, chunk});
        room -= chunk;
        if (p.done + chunk == prefill_tokens(p.id)) {
          partial_.reset();
          ++ending;
        } else {
          partial_->done += chunk;
        }
      }
    }
    // The head's prompt past what the prefix cache holds, its first chunk within the room.
    const auto head_rest = [&] { return head_prompt() - (waiting_.empty() ? 0 : prefix_hit(waiting_.front())); };
    const auto first_chunk = [&](uint64_t rest) { return server_->chunk_prompts ? std::min(rest, room) : rest; };
    while (room && !partial_ && s.preempted.empty() && head_admissible(ending, first_chunk(head_rest()))) {
      // Whole prompts only: the head waits for a step with room, unless it is the step's first.
      const uint64_t prompt = head_prompt(), rest = head_rest();
      if (!server_->chunk_prompts && rest > room && !s.prefill.empty()) break;
      const uint64_t chunk = first_chunk(rest), hit = prompt - rest;
      const uint32_t id = admit_head(hit, chunk);
      s.prefill.push_back({id, hit, chunk});
      room -= std::min(chunk, room);
      if (chunk == rest) ++ending;
      else partial_ = Partial{id, hit + chunk};
    }
  } else if (s.preempted.empty() &&
             head_admissible(0, head_prompt() - (waiting_.empty() ? 0 : prefix_hit(waiting_.front())))) {
    // prefill first, alone
    const uint64_t prompt = head_prompt(), hit = prefix_hit(waiting_.front());
    s.prefill.push_back({admit_head(hit, prompt - hit), hit, prompt - hit});
  }
  if (s.prefill.empty() && s.batch == 0) {  // the running batch decodes alone
    assert(!running_.empty());
    if (server_->kv_on_demand && !mixed) give_decode_pages();
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
      if (server_->kv_on_demand) --page_due_[page_phase(id, step_)];
      std::pop_heap(running_.begin(), running_.end(), finishes_later);
      running_.pop_back();
      context_tokens_ -= request(id).kv_tokens();  // prompt + output at its last token
      depart(id);
    }
  }
  for (const PrefillChunk& c : s.prefill) {
    cache_prefix(c);
    if (c.done + c.tokens == prefill_tokens(c.id)) prompt_ended(c.id);
    else ++chunks_continued_;
  }
}

// The head of the queue starts, its first chunk `chunk` tokens after the `hit` tokens the prefix
// cache holds: its whole KV reserved (KV on demand: the chunk's pages), its prefill begun.
uint32_t Scheduler::admit_head(uint64_t hit, uint64_t chunk) {
  const uint32_t id = waiting_.front();
  waiting_.pop_front();
  const uint64_t tokens = server_->kv_on_demand ? hit + chunk : request(id).kv_tokens();
  take(held_tokens(tokens) - hit);
  if (hit) {
    sharing_[id] = hit;
    prefix_hit_tokens_ += hit;
    if (pool_) pool_->attach_prefix(id, hit);
  }
  if (pool_) pool_->hold(id, tokens);
  started_.push_back(id);
  return id;
}

// A prompt's end emits the request's first token (after a preemption, its next one); then it
// leaves (that was its last) or decodes.
void Scheduler::prompt_ended(uint32_t id) {
  const ServingRequest& r = request(id);
  uint64_t emitted = 1;
  if (const auto again = recompute_.find(id); again != recompute_.end()) {
    emitted += again->second;
    recomputed_tokens_ += again->second;
    recompute_.erase(again);
    resumed_.push_back(id);
  } else {
    first_tokens_.push_back(id);
  }
  if (emitted == r.output_tokens) {
    depart(id);
    return;
  }
  join_running(id, emitted);
}

// Prompts end in the order they were admitted (the one part-way through is the newest admitted
// and ends first in its step), so the order of joining is the order of admission.
void Scheduler::join_running(uint32_t id, uint64_t emitted) {
  const ServingRequest& r = request(id);
  const uint64_t finish_step = step_ + r.output_tokens - emitted;
  running_.push_back({id, finish_step, joined_++});
  std::push_heap(running_.begin(), running_.end(), finishes_later);
  peak_batch_ = std::max<uint64_t>(peak_batch_, running_.size());
  context_tokens_ += r.prompt_tokens + emitted;  // the prompt and the tokens emitted
  if (server_->kv_on_demand) ++page_due_[page_phase(id, finish_step)];
}

void Scheduler::depart(uint32_t id) {
  const ServingRequest& r = request(id);
  // KV on demand: its pages hold every token but its last, which it emitted without writing.
  reserved_tokens_ -= own_tokens(id, server_->kv_on_demand ? r.kv_tokens() - 1 : r.kv_tokens());
  sharing_.erase(id);
  if (pool_) pool_->release(id);
  departed_.push_back(id);
}

std::string describe_policy(const ServerModel& server) {
  const std::string kv = server.kv_on_demand
                             ? "; KV pages as tokens are written, the newest request preempted and recomputed when "
                               "they run out"
                             : "; each request's whole KV reserved at admission";
  const std::string kv_and_cache = kv + (server.prefix_caching ? "; a shared prefix's KV blocks computed once (prefix caching)" : "");
  if (!server.step_token_budget) return "each prompt prefilled alone in its step, the batch stalled (prefill first)" + kv_and_cache;
  return fmt::format("prompts within {} tokens a step{}, {}{}", *server.step_token_budget,
                     server.mix_decodes ? " beside the batch's decodes" : " in steps of their own (prefill first)",
                     server.chunk_prompts ? "a long one over several steps (chunked prefill)"
                                          : "each whole (no chunked prefill)", kv_and_cache);
}

std::string describe(const ScheduledStep& step) {
  std::string out;
  for (const uint32_t id : step.preempted) out += fmt::format("preempt #{}; ", id);
  out += step.batch ? fmt::format("decode {} (context {})", step.batch, step.context_tokens) : "no decode";
  for (const PrefillChunk& c : step.prefill) out += fmt::format("; prefill #{} [{}, {})", c.id, c.done, c.done + c.tokens);
  return out;
}

ScheduleReplay replay_schedule(const ServerModel& server, const std::vector<ServingRequest>& arrivals,
                               std::optional<double> deadline_s, const std::vector<StepDecision>& decisions,
                               const std::vector<std::string>& rejected, uint64_t shared_prefix) {
  ScheduleReplay out;
  Scheduler s(server, arrivals);
  s.set_shared_prefix(shared_prefix);
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
        replayed.preempted != d.step.preempted ||
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
