// Speculative decoding measured over block lengths: one sequence (concurrency 1, as the
// seed's measurements), plain generation and m = 1..max_block with a draft made of the target's
// first layers, each generating the plan's `output` tokens after a prompt of context - output
// tokens. The block lengths run interleaved, `repeats` times, so that a machine whose speed drifts
// shifts every m alike. Measured: ms per token, verify and draft pass times, per-position
// acceptance (pooled over every m: whether draft i is kept depends on the prefix, not on m).
#pragma once
#include <cstdint>
#include <vector>

#include "planner/plan/predict.hpp"
#include "runtime/backend.hpp"
#include "runtime/server.hpp"
#include "runtime/speculative.hpp"

namespace infer_plan::runtime {

struct SpecSweepPoint {
  uint64_t block = 0;
  SpecDecodeStats stats;            // pooled over the repeats
  double ms_per_token() const;      // rounds' wall time / tokens they emitted
  double verify_ms() const;         // per round
  double draft_ms() const;          // per draft pass (one proposed token)
};

struct SpecSweepResult {
  std::string model, draft;         // "qwen3-8b@0.25", "first 1 of 9 layers"
  uint64_t draft_layers = 0;
  float temperature = 0;
  uint64_t prompt_tokens = 0, output_tokens = 0, repeats = 0;  // repeats run (fewer when interrupted)
  bool interrupted = false;  // SIGINT or SIGTERM: after the first repeat, whole repeats only
  unsigned threads = 0;
  double plain_ms_per_token = 0;    // plain generation, the same tokens
  std::vector<SpecSweepPoint> points;  // m = 1..max_block
  // Pooled acceptance: accepted[i] / reached[i], where reached[0] = rounds and reached[i] =
  // accepted[i - 1] (draft i is judged only when drafts 1..i-1 were kept).
  std::vector<uint64_t> accepted_per_pos, reached_per_pos;
  std::vector<double> accept_per_pos() const;  // a_i; a position never reached repeats the last
  double accept_iid() const;        // the one rate that fits all positions: sum accepted / sum reached
  double draft_accept_rate() const; // vLLM's: accepted tokens / draft tokens, over every m
  uint64_t best_block() const;      // argmin of measured ms per token (the shorter on a tie)
};

// The sweep's refusals (no draft_layers, too many, offload beside it, group > 1, output outside
// 2..context-1, repeats 0) as InputErrors, so that run and report refuse before a serving run.
void check_speculative_sweep(const ResolvedPlan& rp, uint64_t repeats);

// Needs plan.speculative with draft_layers (the synthetic draft); plan.output tokens per run.
SpecSweepResult run_speculative_sweep(const ResolvedPlan& rp, Backend& backend, const RunOptions& options,
                                      uint64_t repeats);

// JSON with the planner's key names where they overlap (spec_accept_rate, spec_ms_per_token, ...).
Json spec_sweep_json(const SpecSweepResult& r);

}  // namespace infer_plan::runtime
