// `infer-plan report PLAN --backend cpu`: the product's loop closed. The planner predicts the
// plan, the runtime executes the same plan, and the two are printed side by side with the error
// and, where the team has set one, the bound it must stay within (--check exits 1 when one
// fails; --check-exact only when a byte count or a law fails, the bounds whose verdict does not
// depend on how steady the machine was). Decode iterations are compared step by step: each
// measured step against the roofline at that step's own batch and context. Noisy machines: a
// failed bound reruns the runtime once.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "apps/plan_verifier.hpp"
#include "apps/exit_code.hpp"
#include "apps/plan_options.hpp"
#include "apps/quality_report.hpp"
#include "apps/report_speculative.hpp"
#include "apps/report_table.hpp"
#include "apps/run_options.hpp"
#include "apps/svg_plot.hpp"
#include "planner/core/input_error.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/figures.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/plan/predict.hpp"
#include "planner/serving/scheduler.hpp"
#include "planner/serving/serving_sim.hpp"
#include "runtime/interrupt.hpp"
#include "runtime/server.hpp"

namespace infer_plan::apps {
namespace {

// The bounds a report checks (the CI report fails when one does not hold).
constexpr double kDecodeBound = 0.25;   // decode iteration vs the roofline with a probed profile
constexpr double kLittleBound = 0.10;   // measured in-system vs measured rate x sojourn
constexpr double kSojournBound = 0.25;  // the serving simulation vs measured mean sojourn
constexpr double kOffloadRoundBound = 0.20;  // offload round vs bytes / probed copy bandwidth
constexpr double kDriverMemoryBound = 0.01;  // the device's memory as the driver sees it vs fit
constexpr double kPdTransferBound = 0.20;    // a request's time on the link vs its bytes / the link
// Issue 7's kernel targets on the GPU: a batch-1 decode step streams its bytes at this fraction of
// the probed device copy, or better (the sub-byte types' dequantization costs more).
constexpr double kDecodeBandwidthTarget = 0.85, kDecodeBandwidthTargetLowBit = 0.70;


struct ReportArgs {
  PlanOptions plan;
  RuntimeOptions runtime;
  OutputOptions out;
  std::string out_path, svg_dir;
  bool probe = false, quick_probe = false, check = false, check_exact = false;
  uint64_t spec_repeats = kDefaultSpecRepeats;
  bool quality = false;          // append the quality cost of the plan's types (apps/quality_report)
  std::string quality_text;      // its text (default: the built-in one)
  uint64_t quality_ctx = 512;
};

// The p50 of planner/serving's summarize (nearest rank), so a row's p50 and the JSON's measured
// p50 are one value (v[n/2] had picked the upper middle of an even count).
double median(std::vector<double> v) { return summarize(std::move(v)).p50; }

// ---- Offload: the plan's offload section predicted by planner/cost/offload and executed by
// runtime/offload_prefetcher. The link is the profile's first host link: with --probe, the probed
// copy thread beside the compute threads' products (runtime/probe.hpp).

// The stall per decode round the offload planner expects when the iteration without offload is
// `iteration_s` (the layers' copies beyond their windows); 0 without offload.
double offload_stall_ms(const ResolvedPlan& rp, double iteration_s) {
  if (!rp.plan.offload) return 0;
  OffloadInput in = plan_offload_input(rp);
  in.iteration_s = iteration_s;
  const OffloadResult r = plan_offload(rp.spec, rp.weights.layout, rp.weights.scale, rp.plan.kv, in, nullptr, 0);
  return static_cast<double>(r.layers_offloaded) * r.stall_per_group_ms;
}

// How the probe's copy thread should run for a plan: a group at a time (the prefetcher's memcpy
// size) beside the decode's products (the plan's weight type when it is one GGML type, the
// plan's batch); the defaults without offload.
ProbeCopy offload_probe_copy(const Plan& plan) {
  ProbeCopy copy;
  copy.product_cols = plan_model_spec(plan).hidden;  // the several-token products in the plan's row width
  copy.types = plan_weight_types(plan);
  if (!plan.offload) return copy;
  const ResolvedPlan rp = resolve_plan(plan);
  if (const GgmlTypeInfo* t = find_ggml_type(plan.weights)) copy.type = t->type;
  copy.tokens = plan.requests;
  const OffloadPart part = parse_offload_part(plan.offload->part, "offload.part");
  for (uint64_t l = 0; l < rp.spec.layers; ++l)
    if (plan.offload->every > 0 && offload_layer_selected(l, plan.offload->every))
      copy.chunk_bytes = std::max(copy.chunk_bytes, offload_group_bytes(rp.weights.layout, part, l));
  return copy;
}

// Device weights as fit would count them: fit counts every weight on the device; with offload
// the freed groups live in the host pool instead (their own row below).
double device_weights_predicted(const Prediction& p) {
  const double fit = static_cast<double>(p.fit.weights_bytes);
  return p.offload ? fit - static_cast<double>(p.offload->result.freed_bytes) : fit;
}

std::vector<Row> offload_rows(const ResolvedPlan& rp, const Prediction& p, const runtime::MeasuredFigures& m) {
  if (!p.offload || !m.offload) return {};
  const OffloadResult& o = p.offload->result;
  const runtime::MeasuredOffload& mo = *m.offload;
  const double link = plan_offload_input(rp).link_bytes_per_s;
  const auto d = [](uint64_t v) { return static_cast<double>(v); };
  std::vector<Row> rows;
  rows.push_back({"offload_host_bytes", "B", d(o.freed_bytes), d(mo.host_bytes), 0.0,
                  "host pool vs the offload planner's freed bytes"});
  rows.push_back({"offload_buffer_bytes", "B", d(o.buffer_bytes), d(mo.buffer_bytes), 0.0,
                  "device slots: buffers x group_bytes"});
  rows.push_back({"offload_bytes_per_round", "B", d(o.bytes_per_round), mo.bytes_per_round.max, 0.0,
                  fmt::format("largest of {} decode rounds (median {:.0f})", mo.rounds, mo.bytes_per_round.p50)});
  rows.push_back({"offload_round_ms p50", "ms", o.round_ms, mo.round_ms.p50, kOffloadRoundBound,
                  fmt::format("bytes / {} ({:.2f} GB/s) vs the copy thread's busy time per round", p.offload->link,
                              link / 1e9)});
  rows.push_back({"offload_bandwidth", "GB/s", link / 1e9, mo.bandwidth_bytes_per_s / 1e9, std::nullopt,
                  "the link vs bytes / copy time over all decode rounds"});
  rows.push_back({"offload_stall_ms p50", "ms", d(o.layers_offloaded) * o.stall_per_group_ms, mo.stall_ms.p50,
                  std::nullopt,
                  fmt::format("per round: copies beyond their windows, at the {:.3f} ms iteration", o.iteration_ms)});
  // The closed batch decodes `requests` tokens per round: the ceiling at the measured round.
  const double decode_s = m.decode_iteration_ms.p50 / 1e3;
  rows.push_back({"offload ceiling", "tok/s", o.throughput_ceiling_tok_s,
                  decode_s > 0 ? static_cast<double>(rp.plan.requests) / decode_s : 0.0, std::nullopt,
                  "requests / effective round vs requests / measured p50 decode round"});
  return rows;
}

// On the GPU: the bandwidth batch-1 decode steps reach (the roofline's bytes of each step over its
// measured time, the median) against the probed device copy, with the target for the
// plan's dominant weight type.
std::optional<Row> decode_bandwidth_row(const ResolvedPlan& rp, const runtime::RunResult& run) {
  if (run.backend != "cuda") return std::nullopt;
  const Roofline& rl = *rp.roofline;
  std::vector<double> rates;
  for (const runtime::StepRecord& s : run.steps)
    if (!s.prefill && !s.mixed() && s.batch == 1 && s.end_s > s.start_s)
      rates.push_back(rl.decode_step(1, s.context_tokens).bytes() / (s.end_s - s.start_s));
  if (rates.empty()) return std::nullopt;
  const TensorPlacement* largest = nullptr;
  for (const TensorPlacement& p : rp.weights.layout.tensors)
    if (!largest || p.bytes > largest->bytes) largest = &p;
  const bool low_bit = largest && (largest->type == GgmlType::Q4_0 || largest->type == GgmlType::Q2_K);
  const double target = low_bit ? kDecodeBandwidthTargetLowBit : kDecodeBandwidthTarget;
  const double copy = rl.rates().memory_bytes_per_s, reached = median(rates);
  Row r{"decode bandwidth (batch 1)", "GB/s", copy / 1e9, reached / 1e9, std::nullopt,
        fmt::format("weights + KV bytes of a step / its measured time, {} steps, vs the probed device copy", rates.size())};
  r.rule = reached >= target * copy;
  r.rule_name = fmt::format(">= {:.0f}%", 100 * target);
  return r;
}

std::vector<Row> compare(const ResolvedPlan& rp, const Prediction& p, const runtime::RunResult& run,
                         const runtime::MeasuredFigures& m) {
  const Roofline& rl = *rp.roofline;
  std::vector<Row> rows;
  const auto d = [](uint64_t v) { return static_cast<double>(v); };
  rows.push_back({"weights_bytes", "B", device_weights_predicted(p), d(m.weights_bytes), 0.0,
                  rp.plan.offload ? "device weights vs fit's less offload's freed bytes" : "allocated by the backend vs fit"});
  rows.push_back({"kv_bytes", "B", d(p.fit.kv_bytes), d(m.kv_bytes), 0.0,
                  "the page pool vs fit (requests x context, whole pages)"});
  if (m.driver_setup_bytes) {  // CUDA: the same state as cudaMemGetInfo sees it
    const double slots = p.offload ? d(p.offload->result.buffer_bytes) : 0.0;
    rows.push_back({"device memory (driver)", "B", device_weights_predicted(p) + d(p.fit.kv_bytes) + slots,
                    d(*m.driver_setup_bytes), kDriverMemoryBound,
                    "weights + KV pool + offload slots vs cudaMemGetInfo's growth over the setup"});
  }
  std::vector<double> pred_decode, meas_decode, pred_prefill, meas_prefill, pred_mixed, meas_mixed;
  std::vector<double> decode_lo, decode_hi, prefill_lo, prefill_hi;  // a calibration's bands
  for (const runtime::StepRecord& s : run.steps) {
    if (s.mixed()) {  // the simulation's own cost of the step the scheduler decided
      pred_mixed.push_back(scheduled_step_s(rp.server, run.schedule.at(s.decision).step) * 1e3);
      meas_mixed.push_back((s.end_s - s.start_s) * 1e3);
    } else if (s.prefill) {
      const StepCost c = rl.prefill(s.tokens);
      pred_prefill.push_back(c.time_s * 1e3);
      prefill_lo.push_back(c.time_lo_s * 1e3);
      prefill_hi.push_back(c.time_hi_s * 1e3);
      meas_prefill.push_back((s.end_s - s.start_s) * 1e3);
    } else {
      // With offload, plus the stall the offload planner expects at this step's iteration.
      const StepCost c = rl.decode_step(s.batch, s.context_tokens / s.batch);
      const double stall_ms = offload_stall_ms(rp, c.time_s);
      pred_decode.push_back(c.time_s * 1e3 + stall_ms);
      decode_lo.push_back(c.time_lo_s * 1e3 + stall_ms);
      decode_hi.push_back(c.time_hi_s * 1e3 + stall_ms);
      meas_decode.push_back((s.end_s - s.start_s) * 1e3);
    }
  }
  // The band where the calibration has one (its leave-one-out errors; a probe's has none).
  const auto with_band = [](Row r, const std::vector<double>& lo, const std::vector<double>& hi) {
    if (median(hi) > median(lo)) r.band = std::pair{median(lo), median(hi)};
    return r;
  };
  if (!meas_decode.empty())
    rows.push_back(with_band({"decode_iteration_ms p50", "ms", median(pred_decode), median(meas_decode), kDecodeBound,
                              fmt::format("{} at each of the {} steps' batch and context{}",
                                          rl.calibration() ? "step model" : "roofline", meas_decode.size(),
                                          rp.plan.offload ? ", plus offload's predicted stall" : "")},
                             decode_lo, decode_hi));
  if (const std::optional<Row> bw = decode_bandwidth_row(rp, run)) rows.push_back(*bw);
  if (!meas_prefill.empty())
    rows.push_back(with_band({"prefill_ms p50", "ms", median(pred_prefill), median(meas_prefill), std::nullopt,
                              fmt::format("{} prefill passes", meas_prefill.size())},
                             prefill_lo, prefill_hi));
  if (!meas_mixed.empty())
    rows.push_back({"mixed_step_ms p50", "ms", median(pred_mixed), median(meas_mixed), std::nullopt,
                    fmt::format("{} decode steps with prompts' chunks: the batch's iteration plus the chunks' prefill",
                                meas_mixed.size())});
  const ServingLatency* served = p.serving && p.serving->result.stable && p.serving->result.latency
                                     ? &*p.serving->result.latency : nullptr;
  if (served) {
    // vLLM bench serve's names and units (ms), as queue --simulate and run print them.
    rows.push_back({"e2el_ms mean", "ms", served->sojourn_s.mean * 1e3, m.mean_sojourn_s * 1e3, kSojournBound,
                    "serving simulation vs measured, same arrivals"});
    rows.push_back({"mean_in_system", "", served->mean_in_system, m.mean_in_system, std::nullopt, "time average"});
    rows.push_back({"ttft_ms median", "ms", served->ttft_s.p50 * 1e3, m.ttft_s.p50 * 1e3, std::nullopt, ""});
    rows.push_back({"tpot_ms median", "ms", served->tpot_s.p50 * 1e3, m.tpot_ms.p50, std::nullopt, ""});
    if (served->itl_s.count && m.itl_ms.count)
      rows.push_back({"itl_ms p99", "ms", served->itl_s.p99 * 1e3, m.itl_ms.p99, std::nullopt,
                      "every gap between two tokens; a prefill stalls the batch, a chunk less"});
    rows.push_back({"output_throughput_tok_s", "tok/s", p.serving->result.throughput_tok_s, m.throughput_tok_s,
                    std::nullopt, ""});
  }
  if (m.completed > 1) {
    Row little{"Little's law (measured)", "", m.littles_law_in_system, m.mean_in_system, kLittleBound,
               "scheduler's in-system count vs measured request rate x mean E2EL"};
    little.law = true;
    rows.push_back(little);
  }
  if (m.schedule_replay) {  // the runtime's bookkeeping: a fresh scheduler decides every step again
    Row replay{"schedule replayed", "steps", d(m.schedule_replay->steps), d(m.steps), std::nullopt,
               m.schedule_replay->identical ? "arrivals and decision times through a fresh scheduler"
                                            : m.schedule_replay->first_difference};
    replay.rule = m.schedule_replay->identical;
    replay.rule_name = "identical";
    replay.law = true;
    rows.push_back(replay);
  }
  for (Row& r : offload_rows(rp, p, m)) rows.push_back(std::move(r));
  rows.push_back({"rejected", "", p.serving ? d(p.serving->result.rejected.total()) : 0.0, d(m.rejected),
                  std::nullopt, ""});
  return rows;
}

void write_svgs(const std::string& dir, const std::vector<Row>& rows, const ResolvedPlan& rp, const runtime::RunResult& run,
                const runtime::MeasuredFigures& m) {
  // Short names under the bars (eight groups share 720 px).
  const std::map<std::string, std::string> short_name{
      {"decode_iteration_ms p50", "decode"}, {"prefill_ms p50", "prefill"}, {"e2el_ms mean", "E2EL"},
      {"mean_in_system", "in system"},       {"ttft_ms median", "TTFT"},   {"tpot_ms median", "TPOT"},
      {"output_throughput_tok_s", "throughput"}, {"Little's law (measured)", "Little"}};
  std::vector<BarGroup> bars;
  for (const Row& r : rows)
    if (r.unit != "B" && r.figure != "rejected")
      bars.push_back({short_name.count(r.figure) ? short_name.at(r.figure) : r.figure, r.unit, r.predicted, r.measured});
  write_text_file(dir + "/predicted_vs_measured.svg",
                  svg_predicted_vs_measured(rp.spec.name + ": predicted vs measured", bars), "--svg");
  // Latency against load: each decode step's time against its batch, measured points and the
  // roofline's line.
  Series measured{"measured", {}, {}, true}, predicted{"predicted (roofline)", {}, {}, false};
  uint64_t most = 1;
  uint64_t mean_context = 1, n = 0;
  for (const runtime::StepRecord& s : run.steps)
    if (!s.prefill) {
      measured.x.push_back(static_cast<double>(s.batch));
      measured.y.push_back((s.end_s - s.start_s) * 1e3);
      most = std::max(most, s.batch);
      mean_context += s.context_tokens / s.batch;
      ++n;
    }
  if (n) mean_context /= n;
  for (uint64_t b = 1; b <= most; ++b) {
    predicted.x.push_back(static_cast<double>(b));
    predicted.y.push_back(rp.roofline->decode_step(b, mean_context).time_s * 1e3);
  }
  write_text_file(dir + "/decode_vs_batch.svg",
                  svg_line_chart(rp.spec.name + ": decode iteration against batch", "batch (running requests)",
                                 "decode iteration (ms)", {predicted, measured}),
                  "--svg");
  if (!(rp.plan.load && rp.plan.load->rate_per_s)) return;
  // Latency against load: the serving simulation's mean E2EL from a tenth of the plan's rate
  // to twice it (the same seed: common random numbers), and the measured point at the plan's rate.
  ServingLoad load = plan_serving_load(rp.plan);
  const double rate = load.rate_per_s;
  Series sim{"predicted (serving simulation)", {}, {}, false}, point{"measured", {}, {}, true};
  for (int i = 1; i <= 20; ++i) {
    load.rate_per_s = rate * 0.1 * i;
    const ServingResult r = simulate_serving(rp.server, load);
    if (!r.stable || !r.latency) break;  // past saturation the mean has no meaning
    sim.x.push_back(load.rate_per_s);
    sim.y.push_back(r.latency->sojourn_s.mean * 1e3);
  }
  point.x.push_back(rate);
  point.y.push_back(m.mean_sojourn_s * 1e3);
  write_text_file(dir + "/e2el_vs_rate.svg",
                  svg_line_chart(rp.spec.name + ": mean E2EL (end-to-end latency) against arrival rate",
                                 "arrival rate (requests/s)", "mean E2EL (ms)", {sim, point}),
                  "--svg");
}

// The run's decode steps by batch size (median ms, mean context per sequence), with what
// `calibrate` needs to count their bytes: infer-plan's own engine as calibration input (the CUDA
// device check writes these). Runs with offload are left out: their steps hold the copy stalls.
Json decode_steps_json(const Plan& plan, const runtime::RunResult& run) {
  std::map<uint64_t, std::vector<const runtime::StepRecord*>> by_batch;
  for (const runtime::StepRecord& s : run.steps)
    if (!s.prefill && !s.mixed() && s.batch > 0) by_batch[s.batch].push_back(&s);
  Json groups = Json::array();
  for (const auto& [batch, steps] : by_batch) {
    std::vector<double> ms;
    double context = 0;
    for (const runtime::StepRecord* s : steps) {
      ms.push_back((s->end_s - s->start_s) * 1e3);
      context += static_cast<double>(s->context_tokens) / static_cast<double>(batch);
    }
    groups.push_back({{"batch", batch},
                      {"count", steps.size()},
                      {"context", static_cast<uint64_t>(std::llround(context / static_cast<double>(steps.size())))},
                      {"p50_ms", median(ms)}});
  }
  auto lower = [](std::string_view name) {
    std::string out(name);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  return Json{{"model", plan.model},
              {"scale", plan.scale},
              {"weights", plan.weights.empty() ? (plan.model.ends_with(".gguf") ? "file" : "BF16") : plan.weights},
              {"kv_k", lower(ggml_type_info(plan.kv.k).name)},
              {"kv_v", lower(ggml_type_info(plan.kv.v).name)},
              {"backend", run.backend},
              {"threads", run.threads},
              {"by_batch", groups}};
}

// ---- Disaggregation: the plan's pd section predicted (planner/serving/pd_serving) and executed
// (runtime/pd_server): the KV each request moves, its time on the link, the TTFT in parts, and the
// same load on as many colocated servers, so that the choice is checked and not only its parts.
std::vector<Row> pd_rows(const ResolvedPlan& rp, const Prediction& p, const runtime::PdRunResult& run,
                         const runtime::MeasuredPd& m) {
  const PdPrediction& pd = *p.pd;
  const auto d = [](uint64_t v) { return static_cast<double>(v); };
  std::vector<Row> rows;
  rows.push_back({"kv_transfer_bytes", "B", d(pd.kv_transfer_bytes), d(m.kv_transfer_bytes), 0.0,
                  m.kv_transfer_bytes_min == m.kv_transfer_bytes
                      ? fmt::format("one request's pages as the link copied them ({} requests alike)", m.split.completed)
                      : fmt::format("the largest request's pages; the smallest {} B", m.kv_transfer_bytes_min)});
  rows.push_back({"kv_transfer_ms mean", "ms", pd.kv_transfer_s * 1e3, m.split.link_s.mean * 1e3, kPdTransferBound,
                  fmt::format("bytes / {} x {:g} ({}){} vs the link's time carrying a request{}", pd.link,
                              rp.plan.pd->link_scale, format_rate(pd.link_bytes_per_s),
                              pd.link_message_s > 0 ? fmt::format(" + {:.3g} ms per transfer", pd.link_message_s * 1e3) : "",
                              pd.stream ? fmt::format(" (streamed: {} layers' pieces)", rp.spec.layers) : "")});
  // Each worker's passes against the step model the prediction runs on.
  const Roofline& rl = *rp.roofline;
  std::vector<double> pred_prefill, meas_prefill, pred_decode, meas_decode;
  for (const runtime::StepRecord& s : run.prefill_steps) {
    pred_prefill.push_back(rl.prefill(s.tokens).time_s * 1e3);
    meas_prefill.push_back((s.end_s - s.start_s) * 1e3);
  }
  for (const runtime::StepRecord& s : run.decode_steps) {
    pred_decode.push_back(rp.server.decode_iteration_s(s.batch, s.context_tokens - s.batch) * 1e3);
    meas_decode.push_back((s.end_s - s.start_s) * 1e3);
  }
  if (!meas_prefill.empty())
    rows.push_back({"prefill pass ms p50", "ms", median(pred_prefill), median(meas_prefill), std::nullopt,
                    fmt::format("the prefill workers' {} passes", meas_prefill.size())});
  if (!meas_decode.empty())
    rows.push_back({"decode step ms p50", "ms", median(pred_decode), median(meas_decode), std::nullopt,
                    fmt::format("the decode workers' {} steps, each at its batch and context", meas_decode.size())});
  std::vector<double> pred_co_prefill, meas_co_prefill, pred_co_decode, meas_co_decode;
  for (const runtime::RunResult& server : run.colocated)
    for (const runtime::StepRecord& s : server.steps) {
      const double measured_ms = (s.end_s - s.start_s) * 1e3;
      if (s.prefill) {
        pred_co_prefill.push_back(rl.prefill(s.tokens).time_s * 1e3);
        meas_co_prefill.push_back(measured_ms);
      } else {
        pred_co_decode.push_back(rp.server.decode_iteration_s(s.batch, s.context_tokens - s.batch) * 1e3);
        meas_co_decode.push_back(measured_ms);
      }
    }
  if (!meas_co_prefill.empty())
    rows.push_back({"colocated prefill pass ms p50", "ms", median(pred_co_prefill), median(meas_co_prefill),
                    std::nullopt, fmt::format("the colocated servers' {} passes", meas_co_prefill.size())});
  if (!meas_co_decode.empty())
    rows.push_back({"colocated decode step ms p50", "ms", median(pred_co_decode), median(meas_co_decode),
                    std::nullopt, fmt::format("their {} decode steps", meas_co_decode.size())});
  const PdServingResult& ps = pd.split;
  const PdServingResult& ms_ = m.split;
  rows.push_back({"split queue_ms mean", "ms", ps.queue_s.mean * 1e3, ms_.queue_s.mean * 1e3, std::nullopt,
                  "waiting for a prefill worker"});
  rows.push_back({"split prefill_ms mean", "ms", ps.prefill_s.mean * 1e3, ms_.prefill_s.mean * 1e3, std::nullopt, ""});
  rows.push_back({"split transfer_ms mean", "ms", ps.transfer_s.mean * 1e3, ms_.transfer_s.mean * 1e3, std::nullopt,
                  "waiting for and crossing the link"});
  rows.push_back({"split first_decode_ms mean", "ms", ps.first_decode_s.mean * 1e3, ms_.first_decode_s.mean * 1e3,
                  std::nullopt, "waiting for and running the first decode step"});
  rows.push_back({"split ttft_ms mean", "ms", pd.split_served.ttft_s.mean * 1e3, m.split_served.ttft_s.mean * 1e3,
                  std::nullopt, "the four parts above"});
  rows.push_back({"split tpot_ms median", "ms", pd.split_served.tpot_s.p50 * 1e3, m.split_served.tpot_s.p50 * 1e3,
                  std::nullopt, ""});
  rows.push_back({"split e2el_ms mean", "ms", pd.split_served.e2el_s.mean * 1e3, m.split_served.e2el_s.mean * 1e3,
                  std::nullopt, fmt::format("{} prefill + {} decode workers", pd.prefill_workers, pd.decode_workers)});
  const uint64_t servers = pd.prefill_workers + pd.decode_workers;
  rows.push_back({"colocated ttft_ms mean", "ms", pd.colocated.ttft_s.mean * 1e3, m.colocated.ttft_s.mean * 1e3,
                  std::nullopt, fmt::format("{} servers, request i on server i mod {}", servers, servers)});
  rows.push_back({"colocated tpot_ms median", "ms", pd.colocated.tpot_s.p50 * 1e3, m.colocated.tpot_s.p50 * 1e3,
                  std::nullopt, ""});
  rows.push_back({"colocated e2el_ms mean", "ms", pd.colocated.e2el_s.mean * 1e3, m.colocated.e2el_s.mean * 1e3,
                  std::nullopt, ""});
  const auto ratio = [](const ServedSummary& split, const ServedSummary& colocated) {
    return colocated.e2el_s.mean > 0 ? split.e2el_s.mean / colocated.e2el_s.mean : 0.0;
  };
  Row choice{"split / colocated e2el", "", ratio(pd.split_served, pd.colocated), ratio(m.split_served, m.colocated),
             std::nullopt,
             fmt::format("below 1 the split pays: predicted {}, measured {}", pd_choice_name(pd.choice),
                         pd_choice_name(m.choice))};
  choice.rule = pd.choice == m.choice;
  choice.rule_name = "same choice";
  rows.push_back(choice);
  rows.push_back({"rejected", "", d(pd.split.rejected), d(m.split.rejected), std::nullopt, "the split's decode pool"});
  return rows;
}

// One measurement: the plan resolved (on a probed profile with --probe), executed, predicted and
// compared row by row.
struct Measurement {
  ResolvedPlan rp;
  runtime::RunResult run;
  runtime::MeasuredFigures measured;
  Prediction predicted;
  std::optional<SpecComparison> spec;
  std::vector<Row> rows;
  bool rate_solved = false;  // the load's rate solved for its load.in_system
  // A plan with a pd section: the split and the colocated servers instead of `run`.
  std::optional<runtime::PdRunResult> pd_run;
  std::optional<runtime::MeasuredPd> pd_measured;
  bool interrupted() const { return pd_run ? pd_run->interrupted : run.interrupted; }
};

// With --probe the profile is measured moments before the run, so both see the same machine; on
// the CPU once more after it, and the prediction uses the means of the two (the VM's speed
// drifts by tens of percent within minutes).
class Prober {
 public:
  Prober(const ReportArgs& a, const Plan& plan) : a_(a), copy_(offload_probe_copy(plan)), options_(a.runtime) {
    // The probe's compute rates at the run's compute threads (one fewer with offload: the copy
    // thread's core); its copy thread runs beside their products, a group at a time, as offload's does.
    // (a disaggregated server's workers each with their share).
    options_.threads = plan.pd ? runtime::pd_worker_threads(plan, a.runtime.threads)
                               : runtime::compute_threads(plan, a.runtime.threads);
    if (plan.pd) workers_ = plan.pd->prefill_workers + plan.pd->decode_workers;
  }
  bool twice() const { return a_.probe && a_.runtime.backend == "cpu"; }
  // The plan on the profile probed now (the plan unchanged without --probe).
  ResolvedPlan before(Plan& plan) {
    if (a_.probe) {
      plan.hw = "inline";
      if (twice()) {
        before_ = probe_cpu_workers();
        plan.hw_inline = runtime::probe_profile_json(*before_, "cpu-probed");
      } else {
        plan.hw_inline = probe_profile(options_, a_.quick_probe, copy_, "cuda-probed");
      }
    }
    // infer-plan's runtime is no engine's: with no engine named, the profile's own calibration (a
    // probe's, calibrate's), else the bare ceiling, not the engine the weights would be served with.
    const bool own = plan.hw_inline ? plan.hw_inline->contains("calibration")
                                    : load_hw_profile(plan.hw).calibration.has_value();
    if (plan.engine.empty() && !own) plan.engine = std::string(kNoEngine);
    own_steps_ = own;
    return resolved(plan);
  }
  // On the CPU: the plan on the mean of the probes before and after the run.
  std::optional<ResolvedPlan> after(Plan& plan) {
    if (!twice()) return std::nullopt;
    const runtime::ProbeResult later = probe_cpu_workers();
    plan.hw_inline = runtime::probe_profile_json(runtime::average_probes(*before_, later), "cpu-probed");
    return resolved(plan);
  }

 private:
  // The CPU probed as one worker sees it: with a disaggregated server's workers, as many probes
  // at once (each worker's share of the threads), their rates averaged: the memory bandwidth and
  // cores the workers share while they all run, not an idle machine's.
  runtime::ProbeResult probe_cpu_workers() const {
    if (workers_ == 1) return probe_on(options_, a_.quick_probe, copy_);
    std::vector<std::optional<runtime::ProbeResult>> probes(workers_);
    std::vector<std::exception_ptr> errors(workers_);
    std::vector<std::thread> threads;
    for (uint64_t w = 0; w < workers_; ++w)
      threads.emplace_back([&, w] {
        RuntimeOptions o = options_;
        o.quiet = o.quiet || w > 0;  // one progress line
        try {
          probes[w] = probe_on(o, a_.quick_probe, copy_);
        } catch (...) {
          errors[w] = std::current_exception();
        }
      });
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    runtime::ProbeResult mean = *probes[0];
    for (uint64_t w = 1; w < workers_; ++w)  // a running mean: probe w weighs as much as each before it
      mean = runtime::average_probes(mean, *probes[w], 1.0 / static_cast<double>(w + 1));
    return mean;
  }
  uint64_t workers_ = 1;
  // A plan that names an engine runs that engine's scheduling policy on infer-plan's runtime: with a
  // profile of its own (a probe's, calibrate's), the step model stays the profile's, not the
  // engine's published runs' (whose overheads the runtime does not have).
  ResolvedPlan resolved(const Plan& plan) const {
    if (own_steps_ && !plan.engine.empty() && plan.engine != kNoEngine) {
      Plan bare = plan;
      bare.engine.clear();
      bare.engine_settings = {};
      const ResolvedPlan profile = resolve_plan(bare);
      if (profile.hw.calibration) return resolve_plan(plan, *profile.hw.calibration);
    }
    return resolve_plan(plan);
  }
  bool own_steps_ = false;
  const ReportArgs& a_;
  ProbeCopy copy_;
  RuntimeOptions options_;
  std::optional<runtime::ProbeResult> before_;
};

// The serving run, and with a speculative section the sweep over block lengths; then the rows.
// solve_rate: the plan's load gives load.in_system for its rate (set in `plan` by each call).
// A plan with a pd section: the split and the colocated servers, then the rows.
Measurement measure_pd(const ReportArgs& a, Plan& plan, Prober& prober) {
  Measurement m;
  m.rp = prober.before(plan);
  m.pd_run = execute_pd_plan(m.rp, a.runtime);
  m.pd_measured = runtime::measured_pd(*m.pd_run);
  if (m.pd_run->interrupted) return m;
  if (std::optional<ResolvedPlan> later = prober.after(plan)) m.rp = std::move(*later);
  m.predicted = predict(m.rp);
  m.rows = pd_rows(m.rp, m.predicted, *m.pd_run, *m.pd_measured);
  return m;
}

Measurement measure(const ReportArgs& a, Plan& plan, Prober& prober, bool solve_rate) {
  if (plan.pd) return measure_pd(a, plan, prober);
  Measurement m;
  m.rp = prober.before(plan);
  // A load given by what it keeps in the system: the rate that does it on the profile just probed
  // (again on a rerun's), which the run then offers and the prediction after it keeps.
  if (solve_rate) {
    m.rp.plan.load->rate_per_s.reset();
    plan.load->rate_per_s = solve_serving_rate(m.rp);
    m.rp.plan.load = plan.load;
    m.rate_solved = true;
  }
  m.run = execute_plan(m.rp, a.runtime);
  if (m.run.interrupted) {  // SIGINT: no sweep, no second probe, no comparison of a partial run
    m.measured = runtime::measured_figures(m.run);
    return m;
  }
  std::optional<runtime::SpecSweepResult> sweep;
  if (plan.speculative) sweep = execute_speculative_sweep(m.rp, a.runtime, a.spec_repeats);
  if (sweep && sweep->interrupted) {  // whole repeats were run: the serving figures stand, the sweep is cut
    m.run.interrupted = true;
    m.measured = runtime::measured_figures(m.run);
    return m;
  }
  if (std::optional<ResolvedPlan> later = prober.after(plan)) m.rp = std::move(*later);
  m.measured = runtime::measured_figures(m.run);
  m.predicted = predict(m.rp);
  m.rows = compare(m.rp, m.predicted, m.run, m.measured);
  if (sweep) {
    m.spec = compare_speculative(m.rp, *sweep);
    m.rows.insert(m.rows.end(), m.spec->rows.begin(), m.spec->rows.end());
  }
  return m;
}

// What the rows say: every bound, or with --check-exact the speed-independent ones counted.
struct Verdict {
  bool holds = false;          // every bound
  bool counted_holds = false;  // the bounds the exit status counts
  bool retried = false;
  std::string line;            // the closing line
};

bool counted(const ReportArgs& a, const Row& r) { return !a.check_exact || r.speed_independent(); }

bool counted_hold(const ReportArgs& a, const std::vector<Row>& rows) {
  return std::all_of(rows.begin(), rows.end(), [&](const Row& r) { return !counted(a, r) || r.holds(); });
}

Verdict verdict(const ReportArgs& a, const std::vector<Row>& rows, bool retried) {
  Verdict v;
  v.holds = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.holds(); });
  v.counted_holds = counted_hold(a, rows);
  v.retried = retried;
  const auto timing_failures =
      std::count_if(rows.begin(), rows.end(), [](const Row& r) { return !r.speed_independent() && !r.holds(); });
  // With --check-exact, the timing verdicts are reported beside it, not in it.
  v.line = !a.check_exact ? (v.holds ? "all bounds hold" : "SOME BOUNDS FAIL")
                          : fmt::format("{}; timing bounds: {} (not counted by --check-exact)",
                                        v.counted_holds ? "byte counts and laws hold" : "SOME BYTE COUNTS OR LAWS FAIL",
                                        timing_failures ? fmt::format("{} fail", timing_failures) : std::string("all hold"));
  return v;
}

std::string report_header(const Plan& plan, const Measurement& m) {
  return fmt::format(
      "report: {} ({}), KV {}, {} x {} tokens ({} out){}, on {}; profile {}: {}", m.rp.spec.name,
      m.rp.weights.label, kv_types_label(plan.kv), count_of(plan.load ? plan.load->requests : plan.requests, "request"),
      plan.context,
      plan.output,
      plan.load && plan.load->rate_per_s
          ? fmt::format(", Poisson {:.3g} req/s{}", *plan.load->rate_per_s,
                        m.rate_solved ? fmt::format(" (solved for {:g} in the system)", *plan.load->in_system) : "")
          : ", closed batch",
      // The CPU's compute threads; on the GPU the host's threads only write the weights.
      m.pd_run ? fmt::format("{} ({} prefill + {} decode workers of {} over {} x {:g}{}; as many colocated servers)",
                             m.pd_run->backend, plan.pd->prefill_workers, plan.pd->decode_workers,
                             count_of(m.pd_run->threads_per_worker, "thread"), plan.pd->link, plan.pd->link_scale,
                             plan.pd->stream ? ", streamed layer by layer" : "")
      : m.run.backend == "cpu" ? fmt::format("cpu ({})", count_of(m.run.threads, "thread")) : m.run.backend, m.rp.hw.name,
      m.rp.roofline->rates().memory_source);
}

Json report_json(const Plan& plan, const Measurement& m, const Verdict& v) {
  const std::vector<Row>& rows = m.rows;
  const bool exact_hold =
      std::all_of(rows.begin(), rows.end(), [](const Row& r) { return !r.speed_independent() || r.holds(); });
  Json j{{"plan", m.rp.spec.name}, {"holds", v.holds}, {"holds_speed_independent", exact_hold},
         {"retried", v.retried},   {"rows", Json::array()},
         {"measured", m.pd_run ? Json{{"pd", runtime::measured_pd_json(*m.pd_run, *m.pd_measured)}}
                               : runtime::measured_json(m.measured)},
         {"predicted", prediction_figures(m.predicted)}};
  for (const Row& r : rows) {
    Json row{{"figure", r.figure}, {"unit", r.unit}, {"predicted", r.predicted}, {"measured", r.measured},
             {"error", std::isfinite(r.error()) ? Json(r.error()) : Json(nullptr)},
             {"bound", r.bound ? Json(*r.bound) : r.rule ? Json(r.rule_name) : Json(nullptr)},
             {"holds", r.holds()}, {"speed_independent", r.speed_independent()}};
    if (r.band) {
      row["predicted_lo"] = r.band->first;
      row["predicted_hi"] = r.band->second;
      row["inside_band"] = r.inside_band();
    }
    j["rows"].push_back(row);
  }
  if (m.spec) j["speculative"] = spec_comparison_json(*m.spec);
  if (!plan.offload && !m.pd_run) j["decode_steps"] = decode_steps_json(plan, m.run);  // `calibrate` reads these
  return j;
}

void print_text(const std::string& header, const Measurement& m, const Verdict& v) {
  fmt::print("{}\n\n{}", header, table(m.rows, false));
  if (m.spec)
    fmt::print("\nspeculative decoding, {} draft, temperature {:g}, {} tokens x {} repeats per m:\n{}",
               m.spec->sweep.draft, m.spec->sweep.temperature, m.spec->sweep.output_tokens, m.spec->sweep.repeats,
               spec_sweep_table(*m.spec, false));
  fmt::print("\n{}{}\n", v.line, v.retried ? " (after one rerun)" : "");
}

// The TTFT in parts, predicted beside measured: the split's queue, prefill, transfer and first
// decode step, its TTFT, and the colocated servers' TTFT.
void write_pd_svg(const std::string& dir, const Measurement& m) {
  const PdPrediction& p = *m.predicted.pd;
  const runtime::MeasuredPd& r = *m.pd_measured;
  const std::vector<BarGroup> bars{
      {"queue", "ms", p.split.queue_s.mean * 1e3, r.split.queue_s.mean * 1e3},
      {"prefill", "ms", p.split.prefill_s.mean * 1e3, r.split.prefill_s.mean * 1e3},
      {"transfer", "ms", p.split.transfer_s.mean * 1e3, r.split.transfer_s.mean * 1e3},
      {"first decode", "ms", p.split.first_decode_s.mean * 1e3, r.split.first_decode_s.mean * 1e3},
      {"split TTFT", "ms", p.split_served.ttft_s.mean * 1e3, r.split_served.ttft_s.mean * 1e3},
      {"colocated TTFT", "ms", p.colocated.ttft_s.mean * 1e3, r.colocated.ttft_s.mean * 1e3}};
  write_text_file(dir + "/ttft_split.svg",
                  svg_predicted_vs_measured(m.rp.spec.name + ": mean TTFT in parts, split and colocated", bars), "--svg");
}

void write_markdown(const std::string& path, const std::string& header, const Measurement& m, const Verdict& v) {
  std::ofstream md(path);
  if (!md) throw InputError(fmt::format("--out: cannot write '{}'", path));
  md << "# infer-plan report\n\n" << header << "\n\n" << table(m.rows, true) << "\n"
     << v.line << (v.retried ? " (after one rerun).\n" : ".\n");
  if (m.spec)
    md << fmt::format("\n## Speculative decoding\n\n{} draft, temperature {:g}, {} tokens x {} repeats per block length.\n\n",
                      m.spec->sweep.draft, m.spec->sweep.temperature, m.spec->sweep.output_tokens, m.spec->sweep.repeats)
       << spec_sweep_table(*m.spec, true);
}

void run(const ReportArgs& a) {
  Plan plan = a.plan.resolve();
  check_output_path(a.out_path, "--out");
  check_output_dir(a.svg_dir, "--svg");
  // Arrivals at the load's rate, or at the rate that keeps its in_system (with no sojourn_s, which
  // with in_system would give the rate by Little's law instead).
  if (plan.load && (plan.load->rate_per_s || (plan.load->in_system && !plan.load->sojourn_s))) plan.load->simulate = true;
  if (plan.speculative) runtime::check_speculative_sweep(resolve_plan(plan), a.spec_repeats);  // before probing
  if (plan.pd) (void)plan_pd_link(plan);  // a link that does not exist, before probing
  Prober prober(a, plan);
  const bool solve_rate = plan.load && !plan.load->rate_per_s && plan.load->in_system && plan.load->simulate;
  Measurement m = measure(a, plan, prober, solve_rate);
  if (m.interrupted()) {
    if (m.pd_run) {
      fmt::print(stderr, "report: interrupted; the figures measured so far:\n");
      print_json(runtime::measured_pd_json(*m.pd_run, *m.pd_measured));
      throw ExitCode{runtime::kInterruptedExitCode};
    }
    fmt::print(stderr, "report: interrupted; {} requests ended, {} did not; the figures measured so far:\n",
               m.run.requests.size(), m.run.unfinished);
    print_json(runtime::measured_json(m.measured));
    throw ExitCode{runtime::kInterruptedExitCode};
  }
  bool retried = false;
  if (!counted_hold(a, m.rows)) {
    retried = true;  // a shared machine is noisy: probe and run once more before calling it a failure
    for (const Row& r : m.rows)
      if (counted(a, r) && !r.holds())
        fmt::print(stderr, "report: {} fails its bound ({}: predicted {}, measured {}); probing and running once more\n",
                   r.figure, r.rule ? r.rule_name : fmt::format("{:+.1f}% against {:.0f}%", 100 * r.error(), 100 * r.bound.value_or(0)),
                   format_value(r.predicted, r.unit), format_value(r.measured, r.unit));
    m = measure(a, plan, prober, solve_rate);
  }
  const Verdict v = verdict(a, m.rows, retried);
  const std::string header = report_header(plan, m);
  // What the plan's types cost in quality, beside the speed and memory measured above.
  std::optional<Json> quality;
  if (a.quality)
    quality = measure_quality(plan, {a.quality_text, "F16", a.quality_ctx, 0, a.runtime.seed, a.runtime.threads,
                                     a.runtime.quiet});
  if (a.out.json()) {
    Json j = report_json(plan, m, v);
    if (quality) j["quality"] = *quality;
    print_json(j);
  } else {
    print_text(header, m, v);
    if (quality) fmt::print("\n{}", quality_text(*quality));
  }
  if (!a.out_path.empty()) {
    write_markdown(a.out_path, header, m, v);
    if (quality) {
      std::ofstream md(a.out_path, std::ios::app);
      md << "\n## Quality\n\n```\n" << quality_text(*quality) << "```\n";
    }
  }
  if (!a.svg_dir.empty() && m.pd_run) {
    write_pd_svg(a.svg_dir, m);
  } else if (!a.svg_dir.empty()) {
    write_svgs(a.svg_dir, m.rows, m.rp, m.run, m.measured);
    if (m.spec)
      write_text_file(a.svg_dir + "/spec_ms_per_token.svg",
                      spec_sweep_svg(*m.spec, m.rp.spec.name + ": speculative decoding, ms per token against block length"),
                      "--svg");
  }
  if ((a.check || a.check_exact) && !v.counted_holds) throw ExitCode{1};
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Predict a plan and execute it; print predicted, measured and error side by side");
  cmd->add_option("PLAN", args->plan.plan_file, "Plan JSON file (same as --plan)")->type_name("FILE");
  args->plan.add_to(*cmd, PlanOptions::kModel | PlanOptions::kMemory | PlanOptions::kGeneration);
  args->runtime.add_to(*cmd);
  cmd->add_flag("--probe", args->probe, "Probe this machine first and predict with the measured profile");
  cmd->add_flag("--quick-probe", args->quick_probe, "With --probe: smaller buffers, fewer passes");
  cmd->add_option("--out", args->out_path, "Write the report as markdown to this file")->type_name("FILE");
  cmd->add_option("--svg", args->svg_dir, "Write SVG plots into this folder")->type_name("DIR");
  cmd->add_flag("--check", args->check, "Exit 1 when a bound fails (after one rerun)");
  cmd->add_flag("--check-exact", args->check_exact,
                "Exit 1 only when a byte count or a law fails (memory, KV pool, offload bytes, Little's law);\n"
                "timing bounds are printed with their verdict but do not set the exit status (shared CI machines)")
      ->excludes("--check");
  add_spec_repeats_option(*cmd, args->spec_repeats);
  cmd->add_flag("--quality", args->quality,
                "Also what the plan's weight and KV types cost in quality against an F16 reference (as the "
                "quality command: KL divergence, same top token, perplexity), on the CPU");
  cmd->add_option("--quality-text", args->quality_text, "With --quality: the text to score (default: built-in)")
      ->type_name("FILE");
  cmd->add_option("--quality-ctx", args->quality_ctx, "With --quality: tokens per chunk (default 512)")
      ->check(CLI::Range(uint64_t{4}, uint64_t{1} << 20))
      ->type_name("N");
  args->out.add_to(*cmd);
  cmd->footer("Examples:\n"
              "  infer-plan report scenarios/plans/cpu-small.json --backend cpu --probe --check\n"
              "  infer-plan report scenarios/plans/cpu-small.json --backend cpu --probe --quality\n"
              "  infer-plan report scenarios/plans/cpu-small.json --backend cpu --probe --quick-probe --check-exact  (CI)");
  cmd->callback([args] { run(*args); });
  // advise --verify: the same report on a plan file, probing first (quickly: the run is small).
  set_plan_verifier([](const std::string& plan_file, const std::string& backend) {
    ReportArgs a;
    a.plan.plan_file = plan_file;
    a.runtime.backend = backend;
    a.probe = true;
    a.quick_probe = true;
    run(a);
  });
}

}  // namespace infer_plan::apps
