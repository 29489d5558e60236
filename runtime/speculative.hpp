// Speculative decoding of one sequence (SPEC 5): a draft proposes `block` tokens one at a time,
// the target verifies them all in one forward pass, and the longest prefix that agrees with the
// target's own choice is kept, plus the target's token after it (a correction, or a bonus token
// when every draft was accepted). Greedy acceptance gives exactly plain greedy decoding's output.
// Rolling back a cache is free: rows past a sequence's valid length are simply overwritten by the
// next pass, so each decoder tracks how many of its cached tokens are still right.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/decoder.hpp"

namespace infer_plan::runtime {

// Counters named as vLLM's spec-decode metrics where they overlap.
struct SpecDecodeStats {
  uint64_t num_drafts = 0;            // verify rounds
  uint64_t num_draft_tokens = 0;      // tokens proposed
  uint64_t num_accepted_tokens = 0;   // proposed tokens kept
  std::vector<uint64_t> num_accepted_tokens_per_pos;  // [i]: rounds whose draft i was kept
  double draft_s = 0, verify_s = 0;   // time in the draft's and the target's passes
  double acceptance_rate() const {
    return num_draft_tokens ? static_cast<double>(num_accepted_tokens) / static_cast<double>(num_draft_tokens) : 0;
  }
};

// Greedy generation of `n` tokens after `prompt`, plain: one target pass per token.
// `seq` must have cache pages for prompt + n tokens in the target's cache.
std::vector<uint32_t> generate_greedy(Decoder& target, SequenceId seq, std::span<const uint32_t> prompt, uint64_t n);

// The same with a draft: `target_seq` needs pages for prompt + n + block tokens in the target's
// cache, `draft_seq` as many in the draft's. The output equals generate_greedy's token for token.
std::vector<uint32_t> generate_speculative_greedy(Decoder& target, SequenceId target_seq, Decoder& draft,
                                                  SequenceId draft_seq, std::span<const uint32_t> prompt, uint64_t n,
                                                  uint64_t block, SpecDecodeStats& stats);

}  // namespace infer_plan::runtime
