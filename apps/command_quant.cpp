// `infer-plan quant [TYPE]`: GGML block layouts: values and bytes per block, codes vs metadata,
// bits per value, and the size against BF16 ("4 bit is 1/4 the size" is wrong: q4_0 is 28%).
#include <fmt/format.h>
#include <memory>

#include "apps/commands.hpp"
#include "apps/plan_options.hpp"
#include "apps/text_table.hpp"
#include "planner/ggml_type.hpp"
#include "planner/json_fields.hpp"

namespace infer_plan::apps {
namespace {

struct QuantArgs {
  std::string type;
  OutputOptions out;
};

Json type_json(const GgmlTypeInfo& t) {
  return Json{{"type", t.name},
              {"ggml_id", static_cast<uint32_t>(t.type)},
              {"block_values", t.block_values},
              {"block_bytes", t.block_bytes},
              {"code_bytes", t.code_bytes},
              {"meta_bytes", t.meta_bytes},
              {"bits_per_value", t.bits_per_value()},
              {"meta_fraction", t.meta_fraction()},
              {"size_vs_bf16", t.bits_per_value() / 16.0},
              {"layout", t.layout}};
}

std::string explain_type(const GgmlTypeInfo& t) {
  return fmt::format(
      "{}: {} B codes + {} B meta = {} B / {} values -> {} x 8 / {} = {:.4g} bit/value, meta {} / {} "
      "= {:.1f}%, {:.4g} / 16 = {:.1f}% of BF16\n",
      t.name, t.code_bytes, t.meta_bytes, t.block_bytes, t.block_values, t.block_bytes,
      t.block_values, t.bits_per_value(), t.meta_bytes, t.block_bytes, 100 * t.meta_fraction(),
      t.bits_per_value(), 100 * t.bits_per_value() / 16.0);
}

void run(const QuantArgs& a) {
  if (!a.type.empty()) {
    const GgmlTypeInfo& t = ggml_type_by_name(a.type, "TYPE");
    if (a.out.json) {
      fmt::print("{}\n", type_json(t).dump(2));
      return;
    }
    fmt::print("{}\n", t.name);
    fmt::print("  block           {} values in {} B\n", t.block_values, t.block_bytes);
    fmt::print("  codes           {} B\n", t.code_bytes);
    fmt::print("  metadata        {} B ({:.1f}% of the block)\n", t.meta_bytes, 100 * t.meta_fraction());
    fmt::print("  bits per value  {:.4g}\n", t.bits_per_value());
    fmt::print("  size vs BF16    {:.1f}%\n", 100 * t.bits_per_value() / 16.0);
    fmt::print("  layout          {}\n", t.layout);
    if (a.out.explain) fmt::print("\n{}", explain_type(t));
    return;
  }
  if (a.out.json) {
    Json all = Json::array();
    for (const auto& t : ggml_types()) all.push_back(type_json(t));
    fmt::print("{}\n", Json{{"types", all}}.dump(2));
    return;
  }
  TextTable table{{"type", "values/block", "bytes/block", "codes", "meta", "bits/value", "meta %", "vs BF16"},
                  {false, true, true, true, true, true, true, true}, {}};
  for (const auto& t : ggml_types())
    table.rows.push_back({std::string(t.name), std::to_string(t.block_values), std::to_string(t.block_bytes),
                          std::to_string(t.code_bytes), std::to_string(t.meta_bytes),
                          fmt::format("{:.4g}", t.bits_per_value()), fmt::format("{:.1f}", 100 * t.meta_fraction()),
                          fmt::format("{:.1f}%", 100 * t.bits_per_value() / 16.0)});
  fmt::print("{}", table.render());
  if (a.out.explain) {
    fmt::print("\n");
    for (const auto& t : ggml_types()) fmt::print("{}", explain_type(t));
  }
}

}  // namespace

void add_quant_command(CLI::App& app) {
  auto args = std::make_shared<QuantArgs>();
  CLI::App* cmd = app.add_subcommand(
      "quant", "GGML block formats: bytes per block, codes vs metadata, bits per value");
  cmd->add_option("TYPE", args->type,
                  "One type to show (case-insensitive): " + ggml_type_names() + "; all when omitted");
  args->out.add_to(*cmd);
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
