#include "runtime/speculative.hpp"

#include <cassert>
#include <chrono>

#include "kernels/cpu/sampling.hpp"

namespace infer_plan::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Feeds seq[valid, end) to `d` in one pass; returns the logits of every token fed (or the last).
std::vector<std::vector<float>> feed(ForwardPass& d, SequenceId id, const std::vector<uint32_t>& seq, uint64_t valid,
                                     bool every_token) {
  std::vector<std::vector<float>> logits;
  const SequenceChunk c{id, std::span<const uint32_t>(seq).subspan(valid), valid};
  d.forward(std::span(&c, 1), logits, every_token);
  return logits;
}

// Draws tokens from logits as plain generation does (argmax, or softmax at the temperature).
class Sampler {
 public:
  explicit Sampler(const GenerateOptions& o) : params_{o.temperature, 1.0f}, rng_(o.seed) {}
  bool greedy() const { return params_.temperature == 0.0f; }
  uint32_t draw(std::span<const float> logits) { return kernels::sample_token(logits, params_, rng_, scratch_); }
  uint32_t draw_from(std::span<const float> probs) { return kernels::sample_from(probs, rng_); }
  // The distribution draw() samples from (temperature > 0 only).
  void probabilities(std::span<const float> logits, std::vector<float>& probs) const {
    kernels::sampling_probabilities(logits, params_, probs);
  }
  kernels::SpecVerdict verdict(std::span<const float> p, std::span<const float> q, uint32_t drafted) {
    return kernels::speculative_verdict(p, q, drafted, rng_, scratch_);
  }

 private:
  kernels::SamplingParams params_;
  kernels::SamplerRng rng_;
  std::vector<float> scratch_;
};

}  // namespace

std::vector<uint32_t> generate(ForwardPass& target, SequenceId seq, std::span<const uint32_t> prompt, uint64_t n,
                               const GenerateOptions& options, double* decode_s) {
  Sampler sampler(options);
  std::vector<uint32_t> all(prompt.begin(), prompt.end()), out;
  uint64_t valid = 0;  // tokens of `all` in the cache
  Clock::time_point after_first{};
  while (out.size() < n) {
    const auto logits = feed(target, seq, all, valid, false);
    valid = all.size();
    out.push_back(sampler.draw(logits.back()));
    all.push_back(out.back());
    if (out.size() == 1) after_first = Clock::now();
  }
  if (decode_s) *decode_s = n ? seconds_since(after_first) : 0;
  return out;
}

std::vector<uint32_t> generate_speculative(ForwardPass& target, SequenceId target_seq, ForwardPass& draft,
                                           SequenceId draft_seq, std::span<const uint32_t> prompt, uint64_t n,
                                           const SpecOptions& options, SpecDecodeStats& stats) {
  const uint64_t block = options.block;
  assert(block >= 1);
  stats.num_accepted_tokens_per_pos.resize(std::max<size_t>(stats.num_accepted_tokens_per_pos.size(), block));
  // One generator for the target's draws and the verdicts, another for the draft's proposals, so
  // that the target's stream does not depend on how many tokens the draft proposed.
  Sampler sampler(options);
  GenerateOptions draft_options = options;
  draft_options.seed = options.seed ^ 0x5bd1e995u;
  Sampler proposer(draft_options);
  std::vector<uint32_t> all(prompt.begin(), prompt.end()), out;
  if (n == 0) return out;
  // The first token comes from the target's prefill, as without a draft.
  auto t0 = Clock::now();
  out.push_back(sampler.draw(feed(target, target_seq, all, 0, false).back()));
  stats.prefill_s += seconds_since(t0);
  const auto rounds_start = Clock::now();
  uint64_t target_valid = all.size(), draft_valid = 0;
  all.push_back(out.back());
  std::vector<std::vector<float>> q(block);  // the draft's distribution at each proposed position
  std::vector<float> p;
  while (out.size() < n) {
    // Draft: catch up on the tokens it has not seen, then propose one token at a time.
    t0 = Clock::now();
    std::vector<uint32_t> proposal = all;
    const uint64_t end = all.size();
    for (uint64_t i = 0; i < block; ++i) {
      const std::vector<float> logits = feed(draft, draft_seq, proposal, draft_valid, false).back();
      if (!proposer.greedy()) proposer.probabilities(logits, q[i]);
      proposal.push_back(proposer.greedy() ? kernels::argmax(logits) : proposer.draw_from(q[i]));
      draft_valid = proposal.size() - 1;  // all but the token just proposed are in its cache
    }
    stats.draft_s += seconds_since(t0);
    stats.draft_passes += block;
    // Target: one pass over the unseen tokens and the whole proposal; logits at every position.
    t0 = Clock::now();
    const auto logits = feed(target, target_seq, proposal, target_valid, true);
    stats.verify_s += seconds_since(t0);
    // logits[k] predicts the token after proposal[target_valid + k]; the first draft sits at `end`.
    const uint64_t first = end - 1 - target_valid;  // index of the logits that judge draft 1
    uint64_t accepted = 0;
    uint32_t next = 0;  // the target's own token: a correction, or the bonus after every draft
    for (;; ++accepted) {
      const std::span<const float> judge = logits[first + accepted];
      if (accepted == block) {
        next = sampler.draw(judge);
        break;
      }
      const uint32_t drafted = proposal[end + accepted];
      if (sampler.greedy()) {
        next = kernels::argmax(judge);
        if (next != drafted) break;
      } else {
        sampler.probabilities(judge, p);
        const kernels::SpecVerdict v = sampler.verdict(p, q[accepted], drafted);
        if (!v.accepted) {
          next = v.token;
          break;
        }
      }
      ++stats.num_accepted_tokens_per_pos[accepted];
    }
    ++stats.num_drafts;
    stats.num_draft_tokens += block;
    stats.num_accepted_tokens += accepted;
    stats.num_emitted_tokens += accepted + 1;
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
  stats.decode_s += seconds_since(rounds_start);
  return out;
}

}  // namespace infer_plan::runtime
