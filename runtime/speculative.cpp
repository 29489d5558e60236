#include "runtime/speculative.hpp"

#include <cassert>
#include <chrono>

#include "kernels/cpu/sampling.hpp"

namespace infer_plan::runtime {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Feeds seq[valid, end) to `d` in one pass; returns the logits of every token fed (or the last).
std::vector<std::vector<float>> feed(Decoder& d, SequenceId id, const std::vector<uint32_t>& seq, uint64_t valid,
                                     bool every_token) {
  std::vector<std::vector<float>> logits;
  const SequenceChunk c{id, std::span<const uint32_t>(seq).subspan(valid), valid};
  d.forward(std::span(&c, 1), logits, every_token);
  return logits;
}

}  // namespace

std::vector<uint32_t> generate_greedy(Decoder& target, SequenceId seq, std::span<const uint32_t> prompt, uint64_t n) {
  std::vector<uint32_t> all(prompt.begin(), prompt.end()), out;
  uint64_t valid = 0;  // tokens of `all` in the cache
  while (out.size() < n) {
    const auto logits = feed(target, seq, all, valid, false);
    valid = all.size();
    out.push_back(kernels::argmax(logits.back()));
    all.push_back(out.back());
  }
  return out;
}

std::vector<uint32_t> generate_speculative_greedy(Decoder& target, SequenceId target_seq, Decoder& draft,
                                                  SequenceId draft_seq, std::span<const uint32_t> prompt, uint64_t n,
                                                  uint64_t block, SpecDecodeStats& stats) {
  assert(block >= 1);
  stats.num_accepted_tokens_per_pos.resize(std::max<size_t>(stats.num_accepted_tokens_per_pos.size(), block));
  std::vector<uint32_t> all(prompt.begin(), prompt.end()), out;
  // The first token comes from the target's prefill, as without a draft.
  auto t0 = std::chrono::steady_clock::now();
  out.push_back(kernels::argmax(feed(target, target_seq, all, 0, false).back()));
  stats.verify_s += seconds_since(t0);
  uint64_t target_valid = all.size(), draft_valid = 0;
  all.push_back(out.back());
  while (out.size() < n) {
    // Draft: catch up on the tokens it has not seen, then propose one token at a time.
    t0 = std::chrono::steady_clock::now();
    std::vector<uint32_t> proposal = all;
    const uint64_t end = all.size();
    for (uint64_t i = 0; i < block; ++i) {
      proposal.push_back(kernels::argmax(feed(draft, draft_seq, proposal, draft_valid, false).back()));
      draft_valid = proposal.size() - 1;  // all but the token just proposed are in its cache
    }
    stats.draft_s += seconds_since(t0);
    // Target: one pass over the unseen tokens and the whole proposal; logits at every position.
    t0 = std::chrono::steady_clock::now();
    const auto logits = feed(target, target_seq, proposal, target_valid, true);
    stats.verify_s += seconds_since(t0);
    // logits[k] predicts the token after proposal[target_valid + k]; the first draft sits at `end`.
    const uint64_t first = end - 1 - target_valid;  // index of the logits that judge draft 1
    uint64_t accepted = 0;
    while (accepted < block && proposal[end + accepted] == kernels::argmax(logits[first + accepted])) {
      ++stats.num_accepted_tokens_per_pos[accepted];
      ++accepted;
    }
    const uint32_t next = kernels::argmax(logits[first + accepted]);  // the correction, or the bonus
    ++stats.num_drafts;
    stats.num_draft_tokens += block;
    stats.num_accepted_tokens += accepted;
    for (uint64_t i = 0; i < accepted && out.size() < n; ++i) {
      out.push_back(proposal[end + i]);
      all.push_back(out.back());
    }
    if (out.size() < n) {
      out.push_back(next);
      all.push_back(next);
    }
    // What each cache still holds correctly: everything up to the accepted drafts.
    target_valid = end + accepted;
    draft_valid = std::min<uint64_t>(draft_valid, end + accepted);
  }
  return out;
}

}  // namespace infer_plan::runtime
