// E_m is summed as products (not the closed form) so one code path serves i.i.d. and per-position
// rates, and a = 1 and a = 0 come out exact (m + 1 and 1) instead of dividing by zero.
#include "planner/cost/speculative.hpp"

#include <cassert>
#include <cmath>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"

namespace infer_plan {
namespace {

double rate_at(const std::vector<double>& accept_rates, uint64_t position) {  // position 1-based
  return accept_rates.size() == 1 ? accept_rates[0] : accept_rates[position - 1];
}

void check_time_ms(double ms, const std::string& what, std::string_view detail = "") {
  if (!std::isfinite(ms) || ms <= 0)
    throw InputError(fmt::format("{}: {:g} ms{} is not a time; expected a number of ms > 0", what, ms, detail));
}

}  // namespace

void validate_spec_rates(const std::vector<double>& accept_rates, uint64_t max_block, uint64_t group,
                         const SpecInputNames& n) {
  // first: a long list sets max_block when none is given, and the list is what to name
  if (accept_rates.size() > spec_max_block_limit)
    throw InputError(fmt::format("{}: {} per-position rates; expected at most {}, one per draft position",
                                 n.accept, accept_rates.size(), spec_max_block_limit));
  if (max_block < 1 || max_block > spec_max_block_limit)
    throw InputError(fmt::format("{}: {} is out of range; expected a block length of 1 to {}", n.max_block,
                                 max_block, spec_max_block_limit));
  if (group < 1 || group > spec_max_block_limit)
    throw InputError(fmt::format("{}: {} is out of range; expected 1 to {} draft positions per group", n.group,
                                 group, spec_max_block_limit));
  if (accept_rates.empty())
    throw InputError(fmt::format("{}: no acceptance rate; expected one rate in [0, 1] or one per position",
                                 n.accept));
  for (size_t i = 0; i < accept_rates.size(); ++i) {
    const double a = accept_rates[i];
    if (!(a >= 0.0 && a <= 1.0))  // also rejects NaN
      throw InputError(fmt::format("{}: {:g}{} is not an acceptance rate; expected a value in [0, 1]{}", n.accept, a,
                                   accept_rates.size() > 1 ? fmt::format(" (position {})", i + 1) : "",
                                   a > 1 ? " (rates are fractions: write 75% as 0.75)" : ""));
  }
  // A per-position list says nothing past its end; guessing a tail would invent acceptance.
  if (accept_rates.size() > 1 && accept_rates.size() < max_block)
    throw InputError(fmt::format("{}: {} per-position rates cover blocks up to {}, but {} is {}; give a rate for "
                                 "every position up to {} or lower {}",
                                 n.accept, accept_rates.size(), accept_rates.size(), n.max_block,
                                 max_block, max_block, n.max_block));
}

namespace {

void validate(const SpecInputs& in) {
  const SpecInputNames& n = in.names;
  validate_spec_rates(in.accept_rates, in.max_block, in.group, n);
  if (!in.verify_ms) throw InputError(fmt::format("{}: no verify time; expected ms > 0", n.verify_ms));
  check_time_ms(in.verify_ms(0), n.verify_ms);
  for (uint64_t m = 1; m <= in.max_block; ++m)
    check_time_ms(in.verify_ms(m), n.verify_ms, fmt::format(" (block {})", m));
  check_time_ms(in.draft_ms, n.draft_ms);
  if (in.plain_ms_per_token) check_time_ms(*in.plain_ms_per_token, n.plain_ms);
}

}  // namespace

SpecVerifyMs constant_verify_ms(double ms) {
  return [ms](uint64_t) { return ms; };
}

double spec_expected_tokens(const std::vector<double>& accept_rates, uint64_t block) {
  assert(accept_rates.size() == 1 || accept_rates.size() >= block);
  double tokens = 1.0;      // the target's own token (correction or bonus) comes every round
  double all_accepted = 1.0;  // prod_{j<=i} a_j: drafts 1..i all survive
  for (uint64_t i = 1; i <= block; ++i) {
    all_accepted *= rate_at(accept_rates, i);
    tokens += all_accepted;
  }
  return tokens;
}

uint64_t spec_drafts(uint64_t block, uint64_t group) {
  assert(group >= 1);
  return (block + group - 1) / group * group;
}

double spec_round_ms(double verify_ms, uint64_t drafts, double draft_ms) {
  return verify_ms + static_cast<double>(drafts) * draft_ms;
}

SpecResult speculative_table(const SpecInputs& in) {
  validate(in);
  SpecResult r;
  r.plain_ms_per_token = in.plain_ms_per_token.value_or(in.verify_ms(0));
  for (uint64_t m = 1; m <= in.max_block; ++m) {
    SpecRow row;
    row.block = m;
    row.expected_tokens = spec_expected_tokens(in.accept_rates, m);
    row.drafts = spec_drafts(m, in.group);
    row.verify_ms = in.verify_ms(m);
    row.round_ms = spec_round_ms(row.verify_ms, row.drafts, in.draft_ms);
    row.ms_per_token = row.round_ms / row.expected_tokens;
    row.speedup = r.plain_ms_per_token / row.ms_per_token;
    if (r.rows.empty() || row.ms_per_token < r.best_ms_per_token) {
      r.best_block = m;
      r.best_ms_per_token = row.ms_per_token;
      r.best_speedup = row.speedup;
    }
    r.rows.push_back(row);
  }
  r.beats_plain = r.best_ms_per_token < r.plain_ms_per_token;
  return r;
}

SpecRuleOfThumb spec_rule_of_thumb(double accept_rate) {
  if (accept_rate > spec_rule_high_accept) return {6, 8};
  if (accept_rate < spec_rule_low_accept) return {2, 3};
  return {4, 4};
}

double spec_mean_accept_rate(const std::vector<double>& accept_rates, uint64_t max_block) {
  if (accept_rates.size() == 1) return accept_rates[0];
  double sum = 0;
  for (uint64_t i = 1; i <= max_block; ++i) sum += rate_at(accept_rates, i);
  return sum / static_cast<double>(max_block);
}

}  // namespace infer_plan

namespace infer_plan {

SpecVerifyMs roofline_verify_ms(const Roofline& target, uint64_t batch, uint64_t context) {
  return [target, batch, context](uint64_t block) {
    return target.decode_step(batch, context, block + 1).time_s * 1e3;
  };
}

double roofline_draft_ms(const Roofline& draft, uint64_t batch, uint64_t context) {
  return draft.decode_step(batch, context).time_s * 1e3;
}

ModelSpec first_layers_spec(const ModelSpec& spec, uint64_t layers) {
  assert(layers >= 1 && layers <= spec.layers);
  ModelSpec s = spec;
  if (layers == spec.layers) return s;
  s.name = fmt::format("{} (first {} layers)", spec.name, layers);
  s.layers = layers;
  std::erase_if(s.mlp_only_layers, [&](uint64_t l) { return l >= layers; });
  if (!s.window_layers.empty()) s.window_layers.resize(layers);
  if (s.is_hybrid()) s.linear_layers.resize(layers);
  return s;
}

WeightsLayout first_layers_layout(const WeightsLayout& layout, uint64_t layers) {
  WeightsLayout out = layout;
  std::erase_if(out.tensors, [&](const TensorPlacement& t) { return t.tensor.layer >= static_cast<int64_t>(layers); });
  return out;
}

}  // namespace infer_plan
