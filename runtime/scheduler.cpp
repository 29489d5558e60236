#include "runtime/scheduler.hpp"

#include <cassert>
#include <limits>
#include <stdexcept>

#include "kernels/cpu/sampling.hpp"

namespace infer_plan::runtime {

std::vector<uint32_t> synthetic_prompt(uint64_t seed, uint64_t request, uint64_t tokens, uint64_t vocab) {
  kernels::SamplerRng rng(seed * 0x9E3779B97F4A7C15ULL + request);
  std::vector<uint32_t> out(tokens);
  for (uint32_t& t : out) t = static_cast<uint32_t>(rng.next_u64() % vocab);
  return out;
}

Scheduler::Scheduler(ServerModel model, const std::vector<ServingRequest>& arrivals, PagedKvCache& cache,
                     uint64_t max_batch, std::optional<double> deadline_s,
                     std::function<std::vector<uint32_t>(uint64_t, uint64_t)> prompt)
    : model_(std::move(model)), arrivals_(arrivals), cache_(cache), deadline_s_(deadline_s), prompt_(std::move(prompt)) {
  model_.kv_capacity_tokens = cache.pages_total() * kKvPageTokens;
  model_.kv_page_tokens = kKvPageTokens;  // the pool's pages, in the deadline's lookahead too
  model_.max_batch = max_batch;
  records_.resize(arrivals.size());
  for (size_t i = 0; i < arrivals.size(); ++i) {
    records_[i].arrival_s = arrivals[i].arrival_s;
    records_[i].prompt_tokens = arrivals[i].prompt_tokens;
    records_[i].output_tokens = arrivals[i].output_tokens;
  }
}

bool Scheduler::admitted_by_deadline(double now_s, const ServingRequest& candidate) const {
  ServerSnapshot snapshot;
  snapshot.now_s = now_s;
  for (const Sequence& s : running_) snapshot.running.push_back({arrivals_[s.id], s.emitted});
  for (const Sequence& s : waiting_) snapshot.waiting.push_back(arrivals_[s.id]);
  const double due_s = candidate.arrival_s + *deadline_s_;
  return admission_finish_s(model_, snapshot, candidate, due_s) <= due_s;
}

void Scheduler::arrive(double now_s) {
  for (; next_ < arrivals_.size() && arrivals_[next_].arrival_s <= now_s; ++next_) {
    const ServingRequest& a = arrivals_[next_];
    if (exceeds_kv_capacity(model_, a.kv_tokens())) {
      records_[next_].rejected = "exceeds_kv_capacity";
      ++ended_;
    } else if (deadline_s_ && !admitted_by_deadline(now_s, a)) {
      records_[next_].rejected = "deadline";
      ++ended_;
    } else {
      waiting_.push_back({next_, prompt_(next_, a.prompt_tokens), 0});
    }
  }
}

Scheduler::Step Scheduler::next(double now_s) {
  if (!waiting_.empty()) {
    const uint64_t need = records_[waiting_.front().id].prompt_tokens + records_[waiting_.front().id].output_tokens;
    const uint64_t reserved = (cache_.pages_total() - cache_.pages_free()) * kKvPageTokens;
    if (admits_head(model_, running_.size(), reserved, PagedKvCache::pages_for(need) * kKvPageTokens)) {
      if (!cache_.reserve(waiting_.front().id, need))
        throw std::logic_error("scheduler: the KV pool refused a request the admission rule let in");
      prefilling_ = std::move(waiting_.front());
      waiting_.pop_front();
      records_[prefilling_.id].start_s = now_s;
      return Step::prefill;
    }
  }
  if (!running_.empty()) return Step::decode;
  if (next_ < arrivals_.size()) return Step::idle;
  assert(waiting_.empty());  // nothing runs, nothing arrives: a waiting request would fit
  return Step::done;
}

void Scheduler::complete_prefill(uint32_t token, double now_s) {
  Sequence& s = prefilling_;
  s.tokens.push_back(token);
  s.emitted = 1;
  records_[s.id].first_token_s = now_s;
  if (s.emitted == records_[s.id].output_tokens) finish(s, now_s);
  else running_.push_back(std::move(s));
}

void Scheduler::complete_decode(std::span<const uint32_t> tokens, double now_s) {
  assert(tokens.size() >= running_.size());
  std::vector<Sequence> still;
  still.reserve(running_.size());
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& s = running_[i];
    s.tokens.push_back(tokens[i]);
    if (++s.emitted == records_[s.id].output_tokens) finish(s, now_s);
    else still.push_back(std::move(s));
  }
  running_ = std::move(still);
}

double Scheduler::next_arrival_s() const {
  return next_ < arrivals_.size() ? arrivals_[next_].arrival_s : std::numeric_limits<double>::infinity();
}

void Scheduler::finish(const Sequence& s, double now_s) {
  records_[s.id].finish_s = now_s;
  cache_.release(s.id);
  ++ended_;
}

}  // namespace infer_plan::runtime
