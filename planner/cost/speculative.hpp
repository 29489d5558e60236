// Speculative decoding cost model: a draft proposes m tokens per round, the target checks
// them in one verify pass. Expected tokens per round, round time, ms per token against plain
// decoding, and the best block length. Times are plain numbers or a callback (T_verify(m)) so the
// roofline can fill them; the CLI gives constants.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace infer_plan {

// Largest block length the table covers; measured optima sit far below (seed: K7 ~ K15).
inline constexpr uint64_t spec_max_block_limit = 64;

// The target's verify pass over block + 1 tokens (the m drafts and the bonus position), in ms.
// Block 0 is a plain decode step. Once the pass leaves the memory-bound regime it grows with m.
using SpecVerifyMs = std::function<double(uint64_t block)>;
SpecVerifyMs constant_verify_ms(double ms);

// Names of the inputs as the user wrote them, for error messages (CLI flags by default; a plan
// file reader sets its field names).
struct SpecInputNames {
  std::string accept = "--accept";
  std::string verify_ms = "--verify-ms";
  std::string draft_ms = "--draft-ms";
  std::string plain_ms = "--decode-ms";
  std::string max_block = "--max-block";
  std::string group = "--group";
};

// The rates and the block range alone, as a plan's speculative section is checked when read:
// max_block and group in 1..spec_max_block_limit, rates in [0, 1], a per-position list that covers
// max_block and is no longer than the limit.
void validate_spec_rates(const std::vector<double>& accept_rates, uint64_t max_block, uint64_t group,
                         const SpecInputNames& names);

struct SpecInputs {
  // One entry: the i.i.d. acceptance rate a at every position. Several: a_1..a_n, where a_i is
  // the probability that draft i is accepted given drafts 1..i-1 were (measured acceptance falls
  // with position, so it is not geometric). A list must cover every block: n >= max_block.
  std::vector<double> accept_rates;
  SpecVerifyMs verify_ms;                     // T_verify(m), ms per round
  double draft_ms = 0;                        // one draft position, ms
  std::optional<double> plain_ms_per_token;   // T_plain; unset: verify_ms(0), a plain decode step
  uint64_t max_block = 8;                     // M: the table covers m = 1..M
  uint64_t group = 1;                         // G: drafts run G positions at a time
  SpecInputNames names;
};

struct SpecRow {
  uint64_t block = 0;            // m
  double expected_tokens = 0;    // E_m, per round (accepted drafts + the target's own token)
  uint64_t drafts = 0;           // draft positions computed: m, or ceil(m/G)*G with groups
  double verify_ms = 0;          // T_verify(m)
  double round_ms = 0;           // T_m = T_verify(m) + drafts * T_draft
  double ms_per_token = 0;       // T_m / E_m
  double speedup = 0;            // T_plain / (ms per token); < 1 means slower than plain
};

struct SpecResult {
  std::vector<SpecRow> rows;      // m = 1..M
  double plain_ms_per_token = 0;  // T_plain
  uint64_t best_block = 0;        // argmin of ms per token over the rows (the shorter on a tie)
  double best_ms_per_token = 0;
  double best_speedup = 0;
  bool beats_plain = false;       // best ms per token < T_plain
};

// E_m = 1 + sum_{i=1..m} prod_{j<=i} a_j; with one rate, (1 - a^(m+1)) / (1 - a), and exactly
// m + 1 at a = 1, exactly 1 at a = 0. Precondition: one rate, or at least `block` of them.
double spec_expected_tokens(const std::vector<double>& accept_rates, uint64_t block);
// Draft positions computed for a block of m: a partial group costs a whole one.
uint64_t spec_drafts(uint64_t block, uint64_t group);
// T_m = T_verify + drafts * T_draft.
double spec_round_ms(double verify_ms, uint64_t drafts, double draft_ms);

// Validates the inputs (InputError naming the input) and tabulates m = 1..M with the optimum.
SpecResult speculative_table(const SpecInputs& in);

// Seed 002's rule of thumb, a starting point and not the answer: start at k = 4; above 70%
// acceptance go to 6-8; below 40% go to 2-3.
inline constexpr double spec_rule_high_accept = 0.70;  // strictly above: blocks 6-8
inline constexpr double spec_rule_low_accept = 0.40;   // strictly below: blocks 2-3
struct SpecRuleOfThumb {
  uint64_t block_min = 4;
  uint64_t block_max = 4;
};
SpecRuleOfThumb spec_rule_of_thumb(double accept_rate);
// The single rate the rule is applied to: the rate itself, or the mean of a_1..a_M for a list.
double spec_mean_accept_rate(const std::vector<double>& accept_rates, uint64_t max_block);

}  // namespace infer_plan

#include "planner/cost/roofline.hpp"

namespace infer_plan {

// Times from rooflines (the draft shares the target's vocabulary and context): the target's verify
// pass carries m + 1 tokens per sequence, so it costs more than a decode step once it leaves the
// memory-bound regime; the draft decodes one token per position.
SpecVerifyMs roofline_verify_ms(const Roofline& target, uint64_t batch, uint64_t context);
double roofline_draft_ms(const Roofline& draft, uint64_t batch, uint64_t context);

// A draft made of the target's first `layers` blocks, its embedding, final norm and head (the
// runtime's synthetic draft): the spec and the layout (tensors of later blocks dropped).
// Precondition: 1 <= layers <= spec.layers.
ModelSpec first_layers_spec(const ModelSpec& spec, uint64_t layers);
WeightsLayout first_layers_layout(const WeightsLayout& layout, uint64_t layers);

}  // namespace infer_plan
