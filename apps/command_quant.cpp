// `infer-plan quant [TYPE]`: GGML block layouts: values and bytes per block, codes vs metadata,
// bits per value, and the size against BF16 ("4 bit is 1/4 the size" is wrong: q4_0 is 28%).
// With --quantize / --dequantize it runs kernels/cpu/quantize on raw files, to compare with ggml.
#include <fmt/format.h>

#include <bit>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "apps/plan_options.hpp"
#include "apps/text_table.hpp"
#include "kernels/cpu/quantize.hpp"
#include "planner/core/ggml_type.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"

namespace infer_plan::apps {
namespace {

struct QuantArgs {
  std::string type;
  std::string quantize_path;    // raw little-endian float32 in
  std::string dequantize_path;  // packed blocks in
  std::string out_path;
  OutputOptions out;
};

std::vector<uint8_t> read_file(const std::string& path, std::string_view flag) {
  require_regular_file(path, fmt::format("a file of raw values or blocks ({})", flag));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open '{}'", flag, path));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const uint8_t* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  if (out) out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw InputError(fmt::format("--out: cannot write '{}'", path));
}

// Floats are read and written byte by byte as little-endian, whatever the host.
void run_convert(const QuantArgs& a) {
  if (a.type.empty()) throw InputError(fmt::format("TYPE: --quantize and --dequantize need a type ({})", kernels::quantizer_type_names()));
  const GgmlTypeInfo& t = ggml_type_by_name(a.type, "TYPE");
  if (!kernels::has_quantizer(t.type))
    throw InputError(fmt::format("TYPE: no quantizer for {}; known: {}", t.name, kernels::quantizer_type_names()));
  if (!a.quantize_path.empty() && !a.dequantize_path.empty())
    throw InputError("--quantize, --dequantize: give one, not both");
  if (a.out_path.empty()) throw InputError("--out: the output file is required with --quantize or --dequantize");
  if (!a.quantize_path.empty()) {
    const std::vector<uint8_t> raw = read_file(a.quantize_path, "--quantize");
    if (raw.size() % 4 != 0)
      throw InputError(fmt::format("--quantize: '{}' is {} bytes, not a multiple of 4 (float32 values)",
                                   a.quantize_path, raw.size()));
    std::vector<float> values(raw.size() / 4);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = std::bit_cast<float>(static_cast<uint32_t>(raw[4 * i]) | (static_cast<uint32_t>(raw[4 * i + 1]) << 8) |
                                       (static_cast<uint32_t>(raw[4 * i + 2]) << 16) |
                                       (static_cast<uint32_t>(raw[4 * i + 3]) << 24));
    const std::string what = fmt::format("--quantize: '{}'", a.quantize_path);
    if (values.empty()) throw InputError(what + " is empty");
    std::vector<uint8_t> blocks(ggml_row_bytes(t.type, values.size(), what));
    kernels::quantize_row(t.type, values, blocks, what);
    write_file(a.out_path, blocks.data(), blocks.size());
    fmt::print("{}: {} values -> {} blocks, {} B -> {}\n", t.name, values.size(), values.size() / t.block_values,
               blocks.size(), a.out_path);
    return;
  }
  const std::vector<uint8_t> blocks = read_file(a.dequantize_path, "--dequantize");
  if (blocks.empty() || blocks.size() % t.block_bytes != 0)
    throw InputError(fmt::format("--dequantize: '{}' is {} bytes, not a whole number of {} blocks of {} B",
                                 a.dequantize_path, blocks.size(), t.name, t.block_bytes));
  std::vector<float> values(blocks.size() / t.block_bytes * t.block_values);
  kernels::dequantize_row(t.type, blocks, values, "--dequantize");
  std::vector<uint8_t> raw(values.size() * 4);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(values[i]);
    for (size_t k = 0; k < 4; ++k) raw[4 * i + k] = static_cast<uint8_t>(bits >> (8 * k));
  }
  write_file(a.out_path, raw.data(), raw.size());
  fmt::print("{}: {} blocks -> {} values, {} B -> {}\n", t.name, blocks.size() / t.block_bytes, values.size(),
             raw.size(), a.out_path);
}

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
  if (!a.quantize_path.empty() || !a.dequantize_path.empty()) return run_convert(a);
  if (!a.out_path.empty()) throw InputError("--out: only with --quantize or --dequantize");
  if (!a.type.empty()) {
    const GgmlTypeInfo& t = ggml_type_by_name(a.type, "TYPE");
    if (a.out.json()) {
      print_json(type_json(t));
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
  if (a.out.json()) {
    Json all = Json::array();
    for (const auto& t : ggml_types()) all.push_back(type_json(t));
    print_json(Json{{"types", all}});
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
  cmd->add_option("--quantize", args->quantize_path,
                  "Raw little-endian float32 file to quantize to TYPE (" + std::string(kernels::quantizer_type_names()) + "); its value count "
                  "must be a whole number of blocks; writes packed ggml blocks to --out");
  cmd->add_option("--dequantize", args->dequantize_path,
                  "Packed ggml TYPE blocks to dequantize; writes little-endian float32 to --out");
  cmd->add_option("--out", args->out_path, "Output file for --quantize / --dequantize (no default)");
  args->out.add_to(*cmd);
  cmd->footer("Examples:\n"
              "  infer-plan quant Q2_K     # 84 B per 256 values = 2.625 bit, metadata 23.8%\n"
              "  infer-plan quant          # every GGML type's block layout");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
