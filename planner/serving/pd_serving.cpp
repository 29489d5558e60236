#include "planner/serving/pd_serving.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"
#include "planner/serving/scheduler.hpp"

namespace infer_plan {

DecodePool::DecodePool(const ServerModel& server, const std::vector<ServingRequest>& requests)
    : server_(&server), requests_(&requests) {}

bool DecodePool::offer(uint32_t id) {
  if (exceeds_kv_capacity(*server_, (*requests_)[id].kv_tokens())) return false;
  waiting_.push_back(id);
  return true;
}

bool DecodePool::admits_head() const {
  return !waiting_.empty() &&
         infer_plan::admits_head(*server_, running_.size(), reserved_tokens_,
                                 kv_reservation_tokens(*server_, (*requests_)[waiting_.front()].kv_tokens()));
}

const std::vector<uint32_t>& DecodePool::schedule() {
  started_.clear();
  while (admits_head()) {
    const uint32_t id = waiting_.front();
    waiting_.pop_front();
    reserved_tokens_ += kv_reservation_tokens(*server_, (*requests_)[id].kv_tokens());
    running_.push_back({id, 0});
    started_.push_back(id);
  }
  batch_.clear();
  context_tokens_ = 0;
  for (const Running& r : running_) {
    batch_.push_back(r.id);
    context_tokens_ += (*requests_)[r.id].prompt_tokens + r.decoded;
  }
  return batch_;
}

void DecodePool::complete() {
  departed_.clear();
  for (Running& r : running_) ++r.decoded;
  std::erase_if(running_, [&](const Running& r) {
    const ServingRequest& q = (*requests_)[r.id];
    if (r.decoded < q.output_tokens) return false;
    departed_.push_back(r.id);
    reserved_tokens_ -= kv_reservation_tokens(*server_, q.kv_tokens());
    return true;
  });
}

namespace {

double checked(double t, std::string_view what, uint64_t tokens) {
  if (!std::isfinite(t) || t < 0)
    throw InputError(fmt::format("{}({} prompt tokens) returned {} s; expected a finite time >= 0", what, tokens, t));
  return t;
}

}  // namespace

PdServingResult simulate_pd_serving(const PdServerModel& model, const std::vector<ServingRequest>& requests) {
  if (model.prefill_workers == 0 || model.decode_workers == 0)
    throw InputError(fmt::format("disaggregation: {} prefill and {} decode workers; expected at least one of each",
                                 model.prefill_workers, model.decode_workers));
  PdServingResult result;
  result.requests.resize(requests.size());
  std::vector<uint32_t> admitted;  // in arrival order
  for (size_t i = 0; i < requests.size(); ++i) {
    PdRequestTimes& t = result.requests[i];
    t.arrival_s = requests[i].arrival_s;
    if (exceeds_kv_capacity(model.decode, requests[i].kv_tokens())) t.rejected = "exceeds_kv_capacity";
    else admitted.push_back(static_cast<uint32_t>(i));
  }

  // Prefill pool: FCFS over one queue, each prompt to the worker free first.
  std::vector<double> worker_free(model.prefill_workers, 0.0);
  for (const uint32_t id : admitted) {
    PdRequestTimes& t = result.requests[id];
    const auto worker = std::min_element(worker_free.begin(), worker_free.end());
    t.prefill_start_s = std::max(t.arrival_s, *worker);
    t.prefill_end_s = t.prefill_start_s + checked(model.prefill_s(requests[id].prompt_tokens), "prefill_s",
                                                  requests[id].prompt_tokens);
    *worker = t.prefill_end_s;
  }
  // The link: one transfer at a time, in the order the prefills end.
  std::vector<uint32_t> order = admitted;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return result.requests[a].prefill_end_s < result.requests[b].prefill_end_s;
  });
  double link_free = 0;
  for (const uint32_t id : order) {
    PdRequestTimes& t = result.requests[id];
    t.transfer_start_s = std::max(t.prefill_end_s, link_free);
    t.transfer_end_s = t.transfer_start_s + checked(model.transfer_s(requests[id].prompt_tokens), "transfer_s",
                                                    requests[id].prompt_tokens);
    link_free = t.transfer_end_s;
  }
  // Decode pool: landed requests to the workers in turn; each worker steps on its own clock.
  std::vector<std::vector<uint32_t>> handed(model.decode_workers);
  for (size_t i = 0; i < order.size(); ++i) handed[i % model.decode_workers].push_back(order[i]);
  for (const std::vector<uint32_t>& lands : handed) {
    DecodePool pool(model.decode, requests);
    double now = 0;
    size_t next = 0;
    while (next < lands.size() || pool.has_work()) {
      for (; next < lands.size() && result.requests[lands[next]].transfer_end_s <= now; ++next) {
        [[maybe_unused]] const bool waits = pool.offer(lands[next]);
        assert(waits);  // rejected on arrival otherwise
      }
      if (!pool.has_work()) {  // idle until the next landing
        now = result.requests[lands[next]].transfer_end_s;
        continue;
      }
      const std::vector<uint32_t>& batch = pool.schedule();
      now += checked_decode_s(model.decode, batch.size(), pool.context_tokens());
      for (const uint32_t id : pool.started()) result.requests[id].first_token_s = now;
      pool.complete();
      for (const uint32_t id : pool.departed()) result.requests[id].finish_s = now;
    }
  }

  std::vector<double> ttft, queue, prefill, transfer, first_decode, tpot;
  for (size_t i = 0; i < requests.size(); ++i) {
    const PdRequestTimes& t = result.requests[i];
    if (!t.rejected.empty()) {
      ++result.rejected;
      continue;
    }
    ++result.completed;
    result.span_s = std::max(result.span_s, t.finish_s);
    ttft.push_back(t.first_token_s - t.arrival_s);
    queue.push_back(t.prefill_start_s - t.arrival_s);
    prefill.push_back(t.prefill_end_s - t.prefill_start_s);
    transfer.push_back(t.transfer_end_s - t.prefill_end_s);
    first_decode.push_back(t.first_token_s - t.transfer_end_s);
    if (requests[i].output_tokens > 1)
      tpot.push_back((t.finish_s - t.first_token_s) / static_cast<double>(requests[i].output_tokens - 1));
  }
  result.ttft_s = summarize(ttft);
  result.queue_s = summarize(queue);
  result.prefill_s = summarize(prefill);
  result.transfer_s = summarize(transfer);
  result.first_decode_s = summarize(first_decode);
  result.tpot_s = summarize(tpot);
  assert(result.completed + result.rejected == requests.size());
  return result;
}

}  // namespace infer_plan
