// The verdict reads the rule of thumb's table first (the first matching row of 1-3 decides; row 4, one
// machine, decides where to split and says yes on its own), then the link rules can veto a split:
// a transfer longer than the prefill it moves, a link the KV traffic saturates, or one under
// 25 Gb/s. Transfers are taken whole and uncontended (no layer-by-layer overlap), as the seed does.
#include "planner/cost/pd_disaggregation.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/core/units.hpp"
#include "planner/model/tensor_inventory.hpp"

namespace infer_plan {
namespace {

constexpr uint64_t kMaxTokens = kMaxContextTokens;
constexpr uint64_t kMaxCount = kMaxConcurrentRequests;  // requests, decodes, GPUs

std::string ms(double v) { return fmt::format("{:.2f} ms", v); }

void require_positive(double v, std::string_view flag, std::string_view unit) {
  if (!std::isfinite(v) || v <= 0)
    throw InputError(fmt::format("{}: {} is out of range; expected a positive number of {}", flag, v, unit));
}

void require_count(uint64_t v, uint64_t max, std::string_view flag, std::string_view unit) {
  if (v == 0 || v > max)
    throw InputError(fmt::format("{}: {} {} is out of range; expected 1 to {}", flag, v, unit, max));
}

void validate(const PdInputs& in) {
  require_count(in.workload.prompt_tokens, kMaxTokens, "--input-len", "tokens");
  require_count(in.workload.output_tokens, kMaxTokens, "--output-len", "tokens");
  require_positive(in.times.prefill_ms, "--prefill-ms", "milliseconds");
  require_positive(in.times.decode_step_ms, "--decode-ms", "milliseconds");
  require_count(in.times.decode_batch, kMaxCount, "--decode-batch", "decodes");
  if (in.workload.rate_per_s) require_positive(*in.workload.rate_per_s, "--qps", "requests per second");
  if (in.workload.concurrency) require_count(*in.workload.concurrency, kMaxCount, "--concurrency", "requests");
  if (in.deployment.gpus) require_count(*in.deployment.gpus, kMaxCount, "--gpus", "GPUs");
  if (in.deployment.decode_concurrency)
    require_count(*in.deployment.decode_concurrency, kMaxCount, "--decode-concurrency", "requests");
  if (in.deployment.prefill_concurrency)
    require_count(*in.deployment.prefill_concurrency, kMaxCount, "--prefill-concurrency", "requests");
  if (in.deployment.same_machine && in.deployment.gpus && *in.deployment.gpus < 2)
    throw InputError(fmt::format("--same-machine: a split inside one machine needs --gpus 2 or more; got {}",
                                 *in.deployment.gpus));
  if (!std::isfinite(in.deployment.link.bandwidth_bytes_per_s) || in.deployment.link.bandwidth_bytes_per_s <= 0)
    throw InputError(fmt::format("--link: '{}' has no positive bandwidth", in.deployment.link.name));
}

std::vector<PdTableRow> match_table(const PdInputs& in, double rate_per_s, uint64_t concurrency) {
  const uint64_t prompt = in.workload.prompt_tokens;
  const uint64_t output = in.workload.output_tokens;
  const bool same_machine = in.deployment.same_machine;
  auto band = [](uint64_t c) {
    return c >= kPdHighConcurrency ? "high" : c >= kPdMediumConcurrency ? "medium" : "low";
  };
  std::vector<PdTableRow> rows(4);
  rows[0] = {1, fmt::format("mean input < {} tokens, low QPS (< {} req/s)", kPdShortInputTokens, kPdLowRatePerS),
             "no: mixed is enough, a split only adds a network hop",
             prompt < kPdShortInputTokens && rate_per_s < kPdLowRatePerS,
             fmt::format("input {} tokens, {:.3g} req/s", prompt, rate_per_s)};
  rows[1] = {2, fmt::format("long inputs (> {} tokens), high concurrency (>= {})", kPdLongInputTokens, kPdHighConcurrency),
             "strongly yes: a long prefill disturbs decode badly",
             prompt > kPdLongInputTokens && concurrency >= kPdHighConcurrency,
             fmt::format("input {} tokens, concurrency {} ({})", prompt, concurrency, band(concurrency))};
  rows[2] = {3, fmt::format("long outputs (> {} tokens), medium concurrency ({} to {})", kPdLongOutputTokens,
                            kPdMediumConcurrency, kPdHighConcurrency - 1),
             "yes, lean towards prefill-dedicated nodes",
             output > kPdLongOutputTokens && concurrency >= kPdMediumConcurrency && concurrency < kPdHighConcurrency,
             fmt::format("output {} tokens, concurrency {} ({})", output, concurrency, band(concurrency))};
  rows[3] = {4, "one machine, several GPUs on NVLink", "split across GPUs, not machines", same_machine,
             same_machine ? "--same-machine given" : "separate machines (no --same-machine)"};
  return rows;
}

PdVerdict verdict_of_table(const std::vector<PdTableRow>& rows) {
  if (rows[0].matched) return PdVerdict::No;
  if (rows[1].matched) return PdVerdict::StronglyYes;
  if (rows[2].matched) return PdVerdict::Yes;
  if (rows[3].matched) return PdVerdict::Yes;
  return PdVerdict::Maybe;
}

}  // namespace

const char* pd_verdict_name(PdVerdict v) {
  switch (v) {
    case PdVerdict::No: return "no";
    case PdVerdict::Maybe: return "maybe";
    case PdVerdict::Yes: return "yes";
    case PdVerdict::StronglyYes: return "strongly yes";
  }
  return "?";
}

uint64_t pd_kv_bytes_per_request(const ModelSpec& spec, KvTypes kv, uint64_t prompt_tokens) {
  // The decode side needs the whole cache, so no tensor-parallel split here: the prompt's pages
  // (a window layer's at most its window), and a hybrid model's linear-attention state.
  return kv_bytes_for_context(spec, kv, prompt_tokens);
}

double pd_kv_written_share(const ModelSpec& spec) {
  double attention = 0, all = 0;
  for (const TensorInfo& t : tensor_inventory(spec)) {
    if (t.layer < 0 || !t.is_matrix()) continue;
    double params = static_cast<double>(t.elements());
    if (t.is_expert()) params *= static_cast<double>(spec.experts_active) / static_cast<double>(spec.experts);
    all += params;
    if (tensor_role_name(t.role).starts_with("attn_")) attention += params;
  }
  return all > 0 ? attention / all : 1.0;
}

double kv_transfer_ms(uint64_t bytes, double link_bytes_per_s) {
  return 1e3 * static_cast<double>(bytes) / link_bytes_per_s;
}

double link_transfer_s(uint64_t bytes, uint64_t messages, const LinkProfile& link) {
  return static_cast<double>(messages) * link.message_latency_s + kv_transfer_ms(bytes, link.bandwidth_bytes_per_s) / 1e3;
}

PrefillStall prefill_stall(double decode_step_ms, double prefill_ms, uint64_t decode_batch) {
  PrefillStall s;
  s.step_ms = decode_step_ms + prefill_ms;
  s.added_ms = prefill_ms;
  s.ratio = s.step_ms / decode_step_ms;
  s.delayed_request_ms = prefill_ms * static_cast<double>(decode_batch);
  return s;
}

PdConcurrencyCheck check_pd_concurrency(std::optional<uint64_t> prefill_concurrency,
                                        uint64_t decode_concurrency) {
  PdConcurrencyCheck c;
  c.decode_concurrency = decode_concurrency;
  c.max_prefill_concurrency = decode_concurrency / kPdDecodePerPrefill;
  c.prefill_concurrency = prefill_concurrency;
  if (prefill_concurrency) c.ok = *prefill_concurrency * kPdDecodePerPrefill <= decode_concurrency;
  return c;
}

PdGpuSplit split_pd_gpus(uint64_t gpus) {
  PdGpuSplit s;
  s.gpus = gpus;
  s.prefill = std::max<uint64_t>(1, gpus / (kPdDecodePerPrefill + 1));
  s.decode = gpus - s.prefill;
  s.ratio_by_count = s.prefill * kPdDecodePerPrefill <= s.decode;
  return s;
}

namespace {

// The table's rows in order: the first of rows 1-3 to match decides; row 4 (one machine) says
// where to split, and yes on its own.
void read_table(const PdInputs& in, PdResult& r) {
  r.table = match_table(in, r.rate_per_s, r.concurrency);
  r.table_verdict = verdict_of_table(r.table);
  r.split_across_gpus = in.deployment.same_machine;
  bool any = false;
  for (const PdTableRow& row : r.table) {
    r.derivation.push_back(fmt::format("table row {} ({}): {} ({})", row.row, row.workload,
                                       row.matched ? "matches" : "does not match", row.because));
    if (!row.matched) continue;
    if (!any)
      r.reasons.push_back(fmt::format("the rule of thumb's row {} matches ({}): {}", row.row, row.because, row.advice));
    else if (row.row == 4 && r.table_verdict != PdVerdict::No)
      r.reasons.push_back(fmt::format("row 4 also matches: {}, so the KV crosses {} rather than a network",
                                      row.advice, r.link.name));
    else
      r.reasons.push_back(fmt::format("row {} also matches ({}), but the first match decides", row.row, row.because));
    any = true;
  }
  if (!any)
    r.reasons.push_back("no row of the rule of thumb's table matches; its general form: split when prefill steals more "
                        "decode time than the split's transfer costs");
  r.reasons.push_back(fmt::format("a {} prefill inside a step of {} decodes at {} makes it {} ({:.1f}x); "
                                  "a split removes this stall", ms(r.prefill_ms), r.decode_batch,
                                  ms(r.decode_step_ms), ms(r.stall.step_ms), r.stall.ratio));
}

// Seed 002 §4.3 and §5.3: the link can veto a split (transfer longer than the prefill, traffic
// over its bandwidth, under 25 Gb/s); it never makes one.
void apply_link_rules(PdResult& r) {
  const LinkProfile& link = r.link;
  const double bw = link.bandwidth_bytes_per_s;
  const bool split_wanted = r.verdict != PdVerdict::No;
  if (r.transfer_exceeds_prefill)
    r.reasons.push_back(fmt::format("the KV transfer ({}) exceeds the prefill it moves ({}): over {} the split "
                                    "costs more than it saves", ms(r.transfer_ms), ms(r.prefill_ms), link.name));
  else
    r.reasons.push_back(fmt::format("the KV transfer ({}) is {:.0f}% of the prefill ({}) over {}", ms(r.transfer_ms),
                                    100.0 * r.transfer_ms / r.prefill_ms, ms(r.prefill_ms), link.name));
  if (r.link_saturated)
    r.reasons.push_back(fmt::format("the KV traffic ({:.4g} req/s x {}) is {:.2f}x what {} carries ({}): the link "
                                    "saturates and transfers queue without bound", r.rate_per_s,
                                    format_bytes(r.kv_bytes_per_request), r.link_load, link.name, format_rate(bw)));
  if (r.link_below_minimum)
    r.reasons.push_back(fmt::format("{} ({}) is under the 25 Gb/s (3.125 GB/s) a KV transfer needs at least",
                                    link.name, format_rate(bw)));
  const bool link_fails = r.transfer_exceeds_prefill || r.link_saturated || r.link_below_minimum;
  if (split_wanted && link_fails) {
    r.verdict = PdVerdict::No;
    r.link_vetoed = true;
    r.reasons.push_back(fmt::format("so: not over {}; a split {} needs at least {} (ideally RDMA or NVLink)",
                                    link.name, r.split_across_gpus ? "between the GPUs" : "across machines",
                                    format_rate(std::max(r.link_needed_bytes_per_s, kPdMinLinkBytesPerS))));
  } else if (split_wanted) {
    r.reasons.push_back(fmt::format("{} ({}) meets the 25 Gb/s minimum for the KV hop", link.name,
                                    format_rate(bw)));
  }
}

// Seed 002 §4.3: prefill concurrency at most 1/3 of decode's; and a division of the GPUs.
void apply_concurrency_rule(const PdInputs& in, PdResult& r) {
  r.concurrency_check =
      check_pd_concurrency(in.deployment.prefill_concurrency, in.deployment.decode_concurrency.value_or(r.concurrency));
  const PdConcurrencyCheck& c = r.concurrency_check;
  r.derivation.push_back(fmt::format("prefill concurrency <= decode / 3 = floor({} / 3) = {}", c.decode_concurrency,
                                     c.max_prefill_concurrency));
  if (c.ok && !*c.ok)
    r.reasons.push_back(fmt::format("prefill concurrency {} is over 1/3 of decode's {}: at most {}, or the decode "
                                    "side starves and TTFT rises", *c.prefill_concurrency, c.decode_concurrency,
                                    c.max_prefill_concurrency));
  else if (c.ok)
    r.reasons.push_back(fmt::format("prefill concurrency {} is within 1/3 of decode's {} (at most {})",
                                    *c.prefill_concurrency, c.decode_concurrency, c.max_prefill_concurrency));
  else if (c.max_prefill_concurrency == 0)
    r.reasons.push_back(fmt::format("decode concurrency {} is under 3: no prefill concurrency stays within a third of it",
                                    c.decode_concurrency));
  if (!in.deployment.gpus || *in.deployment.gpus < 2) return;
  r.gpu_split = split_pd_gpus(*in.deployment.gpus);
  const PdGpuSplit& s = *r.gpu_split;
  r.derivation.push_back(fmt::format("split of {} GPUs: prefill = max(1, floor({} / 4)) = {}, decode = {} - {} = {}",
                                     s.gpus, s.gpus, s.prefill, s.gpus, s.prefill, s.decode));
  if (s.ratio_by_count)
    r.reasons.push_back(fmt::format("{} GPUs: {} prefill + {} decode keeps prefill at most 1/3 of decode", s.gpus,
                                    s.prefill, s.decode));
  else
    r.reasons.push_back(fmt::format("{} GPUs: {} prefill + {} decode; too few for one prefill to three decode by count, so cap the prefill "
                                    "side's concurrency at {}", s.gpus, s.prefill, s.decode,
                                    c.max_prefill_concurrency));
}

}  // namespace

PdResult plan_pd(const PdInputs& in) {
  validate(in);
  PdResult r;
  const LinkProfile& link = in.deployment.link;
  const double bw = link.bandwidth_bytes_per_s;
  auto& d = r.derivation;

  // What the split costs: one KV transfer per request.
  r.kv_bytes_per_token = kv_bytes_per_token(in.spec, in.kv);
  r.kv_bytes_per_request = pd_kv_bytes_per_request(in.spec, in.kv, in.workload.prompt_tokens);
  r.link = link;
  r.transfer_ms = 1e3 * link_transfer_s(r.kv_bytes_per_request, 1, link);
  r.prefill_ms = in.times.prefill_ms;
  r.transfer_exceeds_prefill = r.transfer_ms > r.prefill_ms;
  if (r.kv_bytes_per_request == r.kv_bytes_per_token * in.workload.prompt_tokens)
    d.push_back(fmt::format("KV per request = {} tokens x {} B/token = {} B ({})", in.workload.prompt_tokens,
                            r.kv_bytes_per_token, r.kv_bytes_per_request, format_bytes(r.kv_bytes_per_request)));
  else  // whole pages, windows capped, a linear-attention state (kv_bytes_for_context)
    d.push_back(fmt::format("KV per request = the cache of a {}-token prompt (whole {}-token pages{}{}) = {} B ({})",
                            in.workload.prompt_tokens, kKvPageTokens, in.spec.window_layer_count() ? ", windows capped" : "",
                            in.spec.is_hybrid() ? ", and the linear-attention layers' state" : "", r.kv_bytes_per_request,
                            format_bytes(r.kv_bytes_per_request)));
  d.push_back(fmt::format("transfer = {}{} B / {} ({} B/s, {}) = {}",
                          link.message_latency_s > 0 ? fmt::format("{:g} us (the link's latency) + ", link.message_latency_s * 1e6) : "",
                          r.kv_bytes_per_request, format_rate(bw), bw, link.name, ms(r.transfer_ms)));
  d.push_back(fmt::format("transfer {} prefill: {} {} {}", r.transfer_exceeds_prefill ? ">" : "<=",
                          ms(r.transfer_ms), r.transfer_exceeds_prefill ? ">" : "<=", ms(r.prefill_ms)));

  // Load: concurrency defaults to the decode batch; the rate, when not given, follows from
  // Little's law L = lambda x W, with W = prefill + output x decode step.
  r.decode_step_ms = in.times.decode_step_ms;
  r.decode_batch = in.times.decode_batch;
  r.request_time_s = (r.prefill_ms + static_cast<double>(in.workload.output_tokens) * r.decode_step_ms) / 1e3;
  if (in.workload.concurrency) {
    r.concurrency = *in.workload.concurrency;
  } else if (in.workload.rate_per_s) {  // Little's law the other way: the rate sets what is in flight
    r.concurrency_from_littles_law = true;
    r.littles_law_in_flight = *in.workload.rate_per_s * r.request_time_s;
    r.concurrency = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(std::min(r.littles_law_in_flight, 1e18))));
    d.push_back(fmt::format("concurrency (Little's law) = rate x (prefill + output x decode step) = {:.4g} x ({} + {} x "
                            "{}) = {:.4g} x {:.4g} s = {:.4g}, about {}", *in.workload.rate_per_s, ms(r.prefill_ms),
                            in.workload.output_tokens, ms(r.decode_step_ms), *in.workload.rate_per_s,
                            r.request_time_s, r.littles_law_in_flight, r.concurrency));
  } else {
    r.concurrency = in.times.decode_batch;
  }
  if (in.workload.rate_per_s) {
    r.rate_per_s = *in.workload.rate_per_s;
  } else {
    r.rate_from_littles_law = true;
    r.rate_per_s = static_cast<double>(r.concurrency) / r.request_time_s;
    d.push_back(fmt::format("rate (Little's law) = concurrency / (prefill + output x decode step) = {} / "
                            "({} + {} x {}) = {} / {:.4g} s = {:.4g} req/s",
                            r.concurrency, ms(r.prefill_ms), in.workload.output_tokens, ms(r.decode_step_ms),
                            r.concurrency, r.request_time_s, r.rate_per_s));
  }
  r.link_load = r.rate_per_s * static_cast<double>(r.kv_bytes_per_request) / bw;
  r.link_saturated = r.link_load >= 1.0;
  if (!r.link_saturated) r.ttft_split_ms = r.prefill_ms + r.transfer_ms;
  r.link_below_minimum = bw < kPdMinLinkBytesPerS;
  r.link_needed_bytes_per_s = std::max(static_cast<double>(r.kv_bytes_per_request) / (r.prefill_ms / 1e3),
                                       r.rate_per_s * static_cast<double>(r.kv_bytes_per_request));
  d.push_back(fmt::format("link load = rate x KV per request / bandwidth = {:.4g} x {} B / {} B/s = {:.3g}{}",
                          r.rate_per_s, r.kv_bytes_per_request, bw, r.link_load,
                          r.link_saturated ? " (>= 1: saturated)" : ""));
  d.push_back(r.ttft_split_ms
                  ? fmt::format("TTFT with the split = prefill + transfer = {} + {} = {}", ms(r.prefill_ms),
                                ms(r.transfer_ms), ms(*r.ttft_split_ms))
                  : std::string("TTFT with the split: none, the link saturates (transfers queue without bound)"));
  d.push_back(fmt::format("link needed = max(KV / prefill, rate x KV) = max({} B / {}, {:.4g} x {} B) = {}",
                          r.kv_bytes_per_request, ms(r.prefill_ms), r.rate_per_s, r.kv_bytes_per_request,
                          format_rate(r.link_needed_bytes_per_s)));

  // What the split saves: the prefill no longer stalls a mixed decode step.
  r.stall = prefill_stall(r.decode_step_ms, r.prefill_ms, r.decode_batch);
  d.push_back(fmt::format("stalled decode step = decode + prefill = {} + {} = {} ({:.2f}x the step alone)",
                          ms(r.decode_step_ms), ms(r.prefill_ms), ms(r.stall.step_ms), r.stall.ratio));
  d.push_back(fmt::format("delay absorbed by the batch = {} decodes x {} = {} summed over the batch",
                          r.decode_batch, ms(r.prefill_ms), ms(r.stall.delayed_request_ms)));

  read_table(in, r);
  r.verdict = r.table_verdict;
  if (in.deployment.gpus && *in.deployment.gpus == 1) {
    r.verdict = PdVerdict::No;
    r.reasons.push_back("one GPU: there is nothing to split; chunked prefill is the lever for the stall");
  }
  apply_link_rules(r);
  apply_concurrency_rule(in, r);
  return r;
}

}  // namespace infer_plan
