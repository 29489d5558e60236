// Speculative decoding of one sequence: a draft proposes `block` tokens one at a time,
// the target verifies them all in one forward pass, and a prefix of them is kept plus one token of
// the target's own (a correction, or a bonus token when every draft was kept).
// - Greedy (temperature 0): a draft is kept while it equals the target's argmax; the output is
//   exactly plain greedy decoding's.
// - Sampling (temperature > 0): rejection sampling (kernels::speculative_verdict); the output is
//   distributed exactly as plain sampling from the target.
// Rolling back a cache is free: rows past a sequence's valid length are simply overwritten by the
// next pass, so each decoder tracks how many of its cached tokens are still right.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/forward_pass.hpp"

namespace infer_plan::runtime {

// Counters named as vLLM's spec-decode metrics where they overlap, and the time spent.
struct SpecDecodeStats {
  uint64_t num_drafts = 0;            // verify rounds
  uint64_t num_draft_tokens = 0;      // tokens proposed
  uint64_t num_accepted_tokens = 0;   // proposed tokens kept
  std::vector<uint64_t> num_accepted_tokens_per_pos;  // [i]: rounds whose draft i was kept
  uint64_t num_emitted_tokens = 0;    // tokens the rounds produced (kept drafts + the target's own)
  uint64_t draft_passes = 0;          // the draft's forward passes (one per proposed token)
  double prefill_s = 0;               // the target's pass over the prompt (the first token)
  double draft_s = 0, verify_s = 0;   // time in the draft's and the target's passes after it
  double decode_s = 0;                // wall time of the rounds: passes, sampling and bookkeeping
  double acceptance_rate() const {
    return num_draft_tokens ? static_cast<double>(num_accepted_tokens) / static_cast<double>(num_draft_tokens) : 0;
  }
  // Tokens per round: accepted drafts + 1 (E_m, measured).
  double tokens_per_round() const {
    return num_drafts ? static_cast<double>(num_emitted_tokens) / static_cast<double>(num_drafts) : 0;
  }
};

struct GenerateOptions {
  float temperature = 0.0f;  // 0: greedy; else sampling from softmax(logits / temperature)
  uint64_t seed = 1;         // the sampler's
};

struct SpecOptions : GenerateOptions {
  uint64_t block = 4;        // m: drafts per round
};

// Plain generation of `n` tokens after `prompt`: one target pass per token. `seq` needs cache
// pages for prompt + n tokens. `decode_s` (optional) gets the time after the first token.
std::vector<uint32_t> generate(ForwardPass& target, SequenceId seq, std::span<const uint32_t> prompt, uint64_t n,
                               const GenerateOptions& options, double* decode_s = nullptr);

// The same with a draft: `target_seq` needs pages for prompt + n + block tokens in the target's
// cache, `draft_seq` as many in the draft's. Greedy: equals generate's output token for token.
std::vector<uint32_t> generate_speculative(ForwardPass& target, SequenceId target_seq, ForwardPass& draft,
                                           SequenceId draft_seq, std::span<const uint32_t> prompt, uint64_t n,
                                           const SpecOptions& options, SpecDecodeStats& stats);

}  // namespace infer_plan::runtime
