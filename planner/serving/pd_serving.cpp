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

std::vector<PdServerModel::StreamPiece> PdServerModel::pieces(uint64_t prompt_tokens) const {
  if (stream_pieces <= 1) return {{1.0, 1.0}};
  const uint64_t page = std::max<uint64_t>(decode.kv_page_tokens, 1);
  const auto pages = [page](uint64_t tokens) { return (tokens + page - 1) / page; };
  const uint64_t prompt = std::max<uint64_t>(prompt_tokens, 1), total = pages(prompt);
  const uint64_t pass = prefill_pass_tokens ? prefill_pass_tokens : prompt;
  const double n = static_cast<double>(stream_pieces);
  std::vector<StreamPiece> out;
  uint64_t sent = 0;  // pages each layer has sent
  for (uint64_t done = 0; done < prompt; done += pass) {
    const uint64_t end = std::min(prompt, done + pass), upto = end == prompt ? total : end / page;
    if (upto <= sent) continue;
    const double bytes = static_cast<double>(upto - sent) / static_cast<double>(total) / n;
    for (uint64_t k = 0; k < stream_pieces; ++k)
      out.push_back({(static_cast<double>(done) +
                      (static_cast<double>(k) + stream_ready_share) / n * static_cast<double>(end - done)) /
                         static_cast<double>(prompt),
                     bytes});
    sent = upto;
  }
  return out;
}

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
  if (model.stream_pieces <= 1) {
    for (const uint32_t id : order) {
      PdRequestTimes& t = result.requests[id];
      t.transfer_start_s = std::max(t.prefill_end_s, link_free);
      t.transfer_end_s = t.transfer_start_s + model.message_s +
                         checked(model.transfer_s(requests[id].prompt_tokens), "transfer_s", requests[id].prompt_tokens);
      link_free = t.transfer_end_s;
    }
  } else {  // every request's pieces, in the order they are ready
    struct Piece {
      double ready_s, seconds;
      uint32_t id;
      uint64_t index;
    };
    std::vector<Piece> pieces;
    std::vector<uint64_t> count(requests.size(), 0);  // each request's pieces
    for (const uint32_t id : admitted) {
      const PdRequestTimes& t = result.requests[id];
      const double whole = checked(model.transfer_s(requests[id].prompt_tokens), "transfer_s", requests[id].prompt_tokens);
      for (const PdServerModel::StreamPiece& p : model.pieces(requests[id].prompt_tokens))
        pieces.push_back({t.prefill_start_s + p.ready_share * (t.prefill_end_s - t.prefill_start_s),
                          model.message_s + whole * p.bytes_share, id, count[id]++});
    }
    std::stable_sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.ready_s < b.ready_s; });
    for (const Piece& p : pieces) {
      PdRequestTimes& t = result.requests[p.id];
      const double start = std::max(p.ready_s, link_free);
      link_free = start + p.seconds;
      if (p.index == 0) {
        t.transfer_start_s = start;
        t.link_s = 0;
      }
      t.link_s += p.seconds;
      if (p.index + 1 == count[p.id]) t.transfer_end_s = link_free;
    }
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {  // in the order they land
      return result.requests[a].transfer_end_s < result.requests[b].transfer_end_s;
    });
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

  summarize_pd(result, requests);
  assert(result.completed + result.rejected == requests.size());
  return result;
}

void summarize_pd(PdServingResult& result, const std::vector<ServingRequest>& requests) {
  assert(result.requests.size() == requests.size());
  result.completed = result.rejected = 0;
  result.span_s = 0;
  std::vector<double> ttft, queue, prefill, transfer, first_decode, tpot, link, e2el;
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
    link.push_back(t.link_s >= 0 ? t.link_s : t.transfer_end_s - t.transfer_start_s);
    first_decode.push_back(t.first_token_s - t.transfer_end_s);
    e2el.push_back(t.finish_s - t.arrival_s);
    if (requests[i].output_tokens > 1)
      tpot.push_back((t.finish_s - t.first_token_s) / static_cast<double>(requests[i].output_tokens - 1));
  }
  result.ttft_s = summarize(ttft);
  result.queue_s = summarize(queue);
  result.prefill_s = summarize(prefill);
  result.transfer_s = summarize(transfer);
  result.link_s = summarize(link);
  result.first_decode_s = summarize(first_decode);
  result.tpot_s = summarize(tpot);
  result.e2el_s = summarize(e2el);
}

ServedSummary summarize_served(const std::vector<ServedRequest>& requests) {
  ServedSummary s;
  std::vector<double> ttft, tpot, e2el;
  for (const ServedRequest& r : requests) {
    if (r.rejected) {
      ++s.rejected;
      continue;
    }
    ++s.completed;
    ttft.push_back(r.first_token_s - r.arrival_s);
    e2el.push_back(r.finish_s - r.arrival_s);
    if (r.output_tokens > 1) tpot.push_back((r.finish_s - r.first_token_s) / static_cast<double>(r.output_tokens - 1));
  }
  s.ttft_s = summarize(ttft);
  s.tpot_s = summarize(tpot);
  s.e2el_s = summarize(e2el);
  return s;
}

ServedSummary summarize_served(const PdServingResult& r, const std::vector<ServingRequest>& requests) {
  std::vector<ServedRequest> served;
  for (size_t i = 0; i < requests.size(); ++i) {
    const PdRequestTimes& t = r.requests.at(i);
    served.push_back({t.arrival_s, t.first_token_s, t.finish_s, requests[i].output_tokens, !t.rejected.empty()});
  }
  return summarize_served(served);
}

ServedSummary simulate_colocated(const ServerModel& server, const ServingLoad& load,
                                 const std::vector<ServingRequest>& requests, uint64_t servers) {
  if (servers == 0) throw InputError("colocated servers: expected at least one");
  std::vector<ServedRequest> served;
  ServingLoad each = load;
  each.record_requests = true;
  bool stable = true;
  std::string unstable_reason;
  for (uint64_t k = 0; k < servers && k < requests.size(); ++k) {
    std::vector<ServingRequest> share;
    for (size_t i = k; i < requests.size(); i += servers) share.push_back(requests[i]);
    const ServingResult r = simulate_serving(server, each, share);
    if (!r.stable && stable) {
      stable = false;
      unstable_reason = fmt::format("server {}: {}", k + 1, r.unstable_reason);
    }
    for (size_t i = 0; i < share.size(); ++i) {
      const RequestTimes& t = r.per_request.at(i);
      // the front end's delay, as simulate_serving counts it in TTFT and E2EL
      served.push_back({share[i].arrival_s, t.first_token_s + server.first_token_s, t.finish_s + server.first_token_s,
                        share[i].output_tokens, !t.rejected.empty()});
    }
  }
  ServedSummary summary = summarize_served(served);
  summary.stable = stable;
  summary.unstable_reason = unstable_reason;
  return summary;
}

const char* pd_choice_name(PdChoice c) { return c == PdChoice::split ? "split" : "colocate"; }

PdChoice pd_choice(const ServedSummary& split, const ServedSummary& colocated) {
  if (split.completed == 0) return PdChoice::colocate;
  if (colocated.completed == 0) return PdChoice::split;
  return split.e2el_s.mean < colocated.e2el_s.mean ? PdChoice::split : PdChoice::colocate;
}

}  // namespace infer_plan
