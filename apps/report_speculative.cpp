#include "apps/report_speculative.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/svg_plot.hpp"
#include "apps/text_table.hpp"
#include "planner/cost/roofline.hpp"

namespace infer_plan::apps {
namespace {

SpecResult table_for(const std::vector<double>& rates, const SpecComparison& c, const Roofline& target,
                     const Roofline& draft, uint64_t max_block) {
  SpecInputs in;
  in.accept_rates = rates;
  in.verify_ms = roofline_verify_ms(target, 1, c.context);
  in.draft_ms = roofline_draft_ms(draft, 1, c.context);
  in.plain_ms_per_token = c.plain_predicted_ms;
  in.max_block = max_block;
  in.group = 1;
  return speculative_table(in);
}

}  // namespace

SpecComparison compare_speculative(const ResolvedPlan& rp, runtime::SpecSweepResult sweep) {
  SpecComparison c;
  c.sweep = std::move(sweep);
  const runtime::SpecSweepResult& s = c.sweep;
  const uint64_t max_block = s.points.size();
  // The context grows from the prompt to prompt + output during a run: the roofline at its middle.
  c.context = s.prompt_tokens + s.output_tokens / 2;
  c.plain_predicted_ms = rp.roofline->decode_step(1, c.context).time_s * 1e3;
  const std::unique_ptr<Roofline> draft = plan_draft_roofline(rp);
  c.per_pos = table_for(s.accept_per_pos(), c, *rp.roofline, *draft, max_block);
  c.iid = table_for({s.accept_iid()}, c, *rp.roofline, *draft, max_block);

  const uint64_t best = s.best_block(), predicted_best = c.per_pos.best_block;
  const runtime::SpecSweepPoint& measured_best = s.points[best - 1];
  const double at_predicted = s.points[predicted_best - 1].ms_per_token();
  const double over_best = at_predicted / measured_best.ms_per_token() - 1;
  std::vector<Row>& rows = c.rows;
  rows.push_back({"plain ms/token", "ms", c.plain_predicted_ms, s.plain_ms_per_token, 0.25,
                  fmt::format("batch 1, roofline at context {}", c.context)});
  rows.push_back({"spec_accept_rate (i.i.d.)", "", spec_mean_accept_rate(rp.plan.speculative->accept, max_block),
                  s.accept_iid(), std::nullopt,
                  fmt::format("the plan's estimate vs measured (kept / judged drafts); vLLM's rate {:.3f}",
                              s.draft_accept_rate())});
  rows.push_back({fmt::format("spec_ms_per_token m={}", best), "ms", c.per_pos.rows[best - 1].ms_per_token,
                  measured_best.ms_per_token(), std::nullopt, "planner from measured per-position rates, at the measured best"});
  rows.push_back({fmt::format("spec_ms_per_token m={} i.i.d.", best), "ms", c.iid.rows[best - 1].ms_per_token,
                  measured_best.ms_per_token(), std::nullopt, "planner from the one measured i.i.d. rate"});
  rows.push_back({fmt::format("spec_tokens_per_round m={}", best), "", c.per_pos.rows[best - 1].expected_tokens,
                  measured_best.stats.tokens_per_round(), std::nullopt, "E_m from the per-position rates"});
  rows.push_back({fmt::format("verify_ms m={}", best), "ms", c.per_pos.rows[best - 1].verify_ms, measured_best.verify_ms(),
                  std::nullopt, fmt::format("the target's pass over {} tokens", best + 1)});
  rows.push_back({"draft_ms per token", "ms", c.per_pos.rows[0].round_ms - c.per_pos.rows[0].verify_ms,
                  measured_best.draft_ms(), std::nullopt, s.draft});
  Row best_row{"spec_best_block", "", static_cast<double>(predicted_best), static_cast<double>(best), std::nullopt,
               fmt::format("measured ms/token at the predicted m is {:+.1f}% over the measured best", 100 * over_best)};
  best_row.rule = predicted_best == best || over_best <= kSpecBestBlockBound;
  best_row.rule_name = fmt::format("{:.0f}% of best", 100 * kSpecBestBlockBound);
  rows.push_back(best_row);
  rows.push_back({"spec_best_block i.i.d.", "", static_cast<double>(c.iid.best_block), static_cast<double>(best),
                  std::nullopt, "the planner's optimum from one i.i.d. rate"});
  Row interior{"spec_best_block interior", "", static_cast<double>(predicted_best), static_cast<double>(best), std::nullopt, ""};
  const double a = s.accept_iid();
  if (a >= kSpecModerateLow && a <= kSpecModerateHigh && max_block >= 3) {
    interior.rule = best > 1 && best < max_block;
    interior.rule_name = fmt::format("1 < m < {}", max_block);
    interior.note = fmt::format("acceptance {:.2f} is moderate: the measured minimum must lie inside 1..{}", a, max_block);
  } else {
    interior.note = fmt::format("acceptance {:.2f} is outside {}..{}: no interior minimum is expected", a,
                                kSpecModerateLow, kSpecModerateHigh);
  }
  rows.push_back(interior);
  return c;
}

std::string spec_sweep_table(const SpecComparison& c, bool markdown) {
  const runtime::SpecSweepResult& s = c.sweep;
  const std::vector<std::string> headers{"m", "tokens/round pred", "meas", "verify ms pred", "meas", "draft ms pred",
                                         "meas", "ms/token i.i.d.", "per-pos", "meas", "a_m"};
  const auto num = [](double v) { return fmt::format("{:.4g}", v); };
  std::vector<std::vector<std::string>> cells;
  const std::vector<double> a = s.accept_per_pos();
  for (size_t i = 0; i < s.points.size(); ++i) {
    const runtime::SpecSweepPoint& p = s.points[i];
    const SpecRow& pos = c.per_pos.rows[i];
    const double draft_pred = pos.drafts ? (pos.round_ms - pos.verify_ms) / static_cast<double>(pos.drafts) : 0;
    cells.push_back({std::to_string(p.block), num(pos.expected_tokens), num(p.stats.tokens_per_round()), num(pos.verify_ms),
                     num(p.verify_ms()), num(draft_pred), num(p.draft_ms()), num(c.iid.rows[i].ms_per_token),
                     num(pos.ms_per_token), num(p.ms_per_token()), fmt::format("{:.3f}", a[i])});
  }
  const std::string plain = fmt::format("plain decoding: {:.4g} ms/token predicted, {:.4g} measured; a_m: the measured "
                                        "rate at which draft m is kept when drafts 1..m-1 were",
                                        c.plain_predicted_ms, s.plain_ms_per_token);
  if (!markdown) {
    TextTable t{headers, std::vector<bool>(headers.size(), true), cells};
    return t.render("  ") + "  " + plain + "\n";
  }
  std::string out = "| " + fmt::format("{}", fmt::join(headers, " | ")) + " |\n|";
  for (size_t i = 0; i < headers.size(); ++i) out += "---:|";
  out += "\n";
  for (const auto& row : cells) out += "| " + fmt::format("{}", fmt::join(row, " | ")) + " |\n";
  return out + "\n" + plain + "\n";
}

Json spec_comparison_json(const SpecComparison& c) {
  Json j = runtime::spec_sweep_json(c.sweep);
  const auto table_json = [](const SpecResult& r) {
    Json rows = Json::array();
    for (const SpecRow& row : r.rows)
      rows.push_back({{"block", row.block}, {"expected_tokens", row.expected_tokens}, {"verify_ms", row.verify_ms},
                      {"round_ms", row.round_ms}, {"ms_per_token", row.ms_per_token}});
    return Json{{"rows", rows}, {"best_block", r.best_block}, {"best_ms_per_token", r.best_ms_per_token}};
  };
  j["predicted_per_pos"] = table_json(c.per_pos);
  j["predicted_iid"] = table_json(c.iid);
  j["predicted_plain_ms_per_token"] = c.plain_predicted_ms;
  j["context"] = c.context;
  return j;
}

std::string spec_sweep_svg(const SpecComparison& c, const std::string& title) {
  Series iid{"predicted (i.i.d. rate)", {}, {}, false}, pos{"predicted (per-position rates)", {}, {}, false},
      measured{"measured", {}, {}, true};
  for (size_t i = 0; i < c.sweep.points.size(); ++i) {
    const double m = static_cast<double>(c.sweep.points[i].block);
    iid.x.push_back(m);
    iid.y.push_back(c.iid.rows[i].ms_per_token);
    pos.x.push_back(m);
    pos.y.push_back(c.per_pos.rows[i].ms_per_token);
    measured.x.push_back(m);
    measured.y.push_back(c.sweep.points[i].ms_per_token());
  }
  return svg_line_chart(title, "block length m (drafts per round)", "ms per token", {iid, pos, measured});
}

}  // namespace infer_plan::apps
