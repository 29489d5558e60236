// `infer-plan gguf size`: the GGUF file llama.cpp would write for a model at a file type, by
// tensor class (codes + unquantized floats, quantization metadata), plus header and padding.
// `infer-plan gguf inspect FILE`: the same figures read from a file's header, with its metadata.
#include <fmt/format.h>
#include <memory>

#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "apps/plan_options.hpp"
#include "apps/text_table.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/weights/gguf_reader.hpp"
#include "planner/weights/gguf_size.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/core/units.hpp"

namespace infer_plan::apps {
namespace {

struct SizeArgs {
  std::string model = "qwen3-8b";
  std::string type = "Q4_K_M";
  bool tensors = false;
  OutputOptions out;
};

struct InspectArgs {
  std::string file;
  bool tensors = false;
  OutputOptions out;
};

// GiB for model-sized figures, the largest fitting binary unit for small files.
std::string size_text(uint64_t b) { return b >= GiB ? format_gib(static_cast<double>(b)) : format_bytes(b); }

std::string shape_product_text(const std::vector<uint64_t>& shape) {
  return fmt::format("{}", fmt::join(shape, " x "));
}

Json size_json(const GgufFileSize& g, bool with_tensors) {
  Json j{{"file_type", g.file_type},
         {"file_bytes", g.file_bytes},
         {"tensor_data_bytes", g.tensor_data_bytes},
         {"code_and_float_bytes", g.code_and_float_bytes},
         {"meta_bytes", g.meta_bytes},
         {"header_bytes", g.header_bytes},
         {"padding_bytes", g.padding_bytes},
         {"metadata_kv_bytes", g.metadata_kv_bytes},
         {"tensor_info_bytes", g.tensor_info_bytes},
         {"alignment", g.alignment},
         {"header_estimated", g.header_source == HeaderSource::estimated},
         {"fallback_tensors", g.fallback_tensors}};
  if (g.header_source == HeaderSource::estimated)
    j["tokenizer"] = Json{{"family", g.tokenizer.family},
                          {"tokens", g.tokenizer.tokens},
                          {"merges", g.tokenizer.merges},
                          {"bytes", g.tokenizer.bytes()}};
  Json classes = Json::array();
  for (const auto& c : g.classes)
    classes.push_back({{"class", c.name}, {"tensors", c.tensors}, {"types", c.types}, {"bytes", c.bytes},
                       {"code_and_float_bytes", c.code_and_float_bytes}, {"meta_bytes", c.meta_bytes}});
  j["classes"] = classes;
  if (with_tensors) {
    Json t = Json::array();
    for (const auto& p : g.layout.tensors)
      t.push_back({{"name", p.tensor.name}, {"type", ggml_type_info(p.type).name},
                   {"shape", p.tensor.shape}, {"bytes", p.bytes}});
    j["tensors"] = t;
  }
  return j;
}

void print_size_text(const GgufFileSize& g) {
  TextTable table{{"class", "tensors", "types", "codes+floats", "metadata", "total"},
                  {false, true, false, true, true, true}, {}};
  for (const auto& c : g.classes)
    table.rows.push_back({c.name, std::to_string(c.tensors), c.types, size_text(c.code_and_float_bytes),
                          size_text(c.meta_bytes), size_text(c.bytes)});
  table.rows.push_back({"tensor data", std::to_string(g.layout.tensors.size()), "", size_text(g.code_and_float_bytes),
                        size_text(g.meta_bytes), size_text(g.tensor_data_bytes)});
  fmt::print("{}\n", table.render("  "));
  const bool est = g.header_source == HeaderSource::estimated;
  fmt::print("  {:<22} {} ({} B): metadata KV {} B{}, tensor infos {} B\n", est ? "header (estimate)" : "header",
             format_mib(static_cast<double>(g.header_bytes)), g.header_bytes, g.metadata_kv_bytes,
             est ? fmt::format(" (tokenizer {} B, {} tokens, {} merges)", g.tokenizer_bytes,
                               g.tokenizer.tokens, g.tokenizer.merges)
                 : "",
             g.tensor_info_bytes);
  fmt::print("  padding                {} B (alignment {})\n", g.padding_bytes, g.alignment);
  fmt::print("  file                   {} ({} B)\n", size_text(g.file_bytes), g.file_bytes);
  if (g.fallback_tensors > 0)
    fmt::print("  note: {} tensor{} with rows that are not whole blocks fell back to another type\n",
               g.fallback_tensors, g.fallback_tensors == 1 ? "" : "s");
  if (est)
    fmt::print("  note: the header is an estimate from the vocabulary ({}); tensor data is exact\n",
               g.tokenizer.family);
}

void print_tensors(const GgufFileSize& g) {
  TextTable table{{"tensor", "type", "shape", "bytes"}, {false, false, false, true}, {}};
  for (const auto& p : g.layout.tensors)
    table.rows.push_back({p.tensor.name, std::string(ggml_type_info(p.type).name), shape_product_text(p.tensor.shape),
                          std::to_string(p.bytes)});
  fmt::print("\n{}", table.render("  "));
}

void print_explain(const GgufFileSize& g) {
  fmt::print("\nderivation:\n");
  for (const auto& line : g.derivation) fmt::print("  {}\n", line);
}

// The planner names the plan's flag (--weights); this command calls it --type.
GgufFileSize file_size_for_type(const ModelSpec& spec, const std::string& type) {
  try {
    return gguf_file_size(spec, type);
  } catch (const InputError& e) {
    std::string message = e.what();
    if (message.starts_with("--weights")) message.replace(0, 9, "--type");
    throw InputError(message);
  }
}

void run_size(const SizeArgs& a) {
  const ModelSpec spec = load_model(a.model);
  const GgufFileSize g = file_size_for_type(spec, a.type);
  if (a.out.json()) {
    Json j = size_json(g, a.tensors);
    j["model"] = spec.name;
    if (a.out.explain) j["derivation"] = g.derivation;
    print_json(j);
    return;
  }
  fmt::print("gguf size: {} at {}\n\n", spec.name, g.file_type);
  print_size_text(g);
  if (a.tensors) print_tensors(g);
  if (a.out.explain) print_explain(g);
}

std::string value_text(const GgufValue& v) {
  constexpr size_t kMaxShown = 80;
  std::string s = gguf_value_text(v);
  if (s.size() > kMaxShown) {
    size_t cut = kMaxShown;  // back up to a UTF-8 character's first byte: never split one
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut) + "...";
  }
  return s;
}

void run_inspect(const InspectArgs& a) {
  const GgufModel file = read_gguf_model(a.file);
  const GgufFileSize g = gguf_file_size_of(file);
  if (a.out.json()) {
    Json j = size_json(g, a.tensors);
    j["files"] = file.paths;
    j["version"] = file.version;
    Json kv = Json::object();
    for (const auto& m : file.metadata) kv[m.key] = value_text(m.value);
    j["metadata"] = kv;
    if (a.out.explain) j["derivation"] = g.derivation;
    print_json(j);
    return;
  }
  fmt::print("gguf inspect: {} (GGUF v{}, {} file{}, {} tensors, {} metadata keys)\n\n", a.file,
             file.version, file.paths.size(), file.paths.size() == 1 ? "" : "s", file.tensors.size(),
             file.metadata.size());
  for (const auto& m : file.metadata) fmt::print("  {:<44} {}\n", m.key, value_text(m.value));
  fmt::print("\n");
  print_size_text(g);
  if (a.tensors) print_tensors(g);
  if (a.out.explain) print_explain(g);
}

}  // namespace

void add_gguf_command(CLI::App& app) {
  CLI::App* gguf = app.add_subcommand(
      "gguf", "GGUF files: predicted size at a llama.cpp file type; inspect a file; write a synthetic one");
  gguf->require_subcommand(1);

  auto size = std::make_shared<SizeArgs>();
  CLI::App* s = gguf->add_subcommand(
      "size", "Size of the GGUF file llama-quantize writes for a model at a file type, by tensor class");
  s->add_option("--model,-m", size->model,
                "Model: a built-in name, a Hugging Face config.json, or a .gguf file (default qwen3-8b)");
  s->add_option("--type", size->type,
                "llama.cpp file type (Q2_K, Q3_K_S/M/L, Q4_0, Q4_1, Q4_K_S/M, Q5_0, Q5_1, Q5_K_S/M, Q6_K, "
                "Q8_0, F16, BF16, IQ1_S/M, IQ2_XXS/XS/S/M, IQ3_XXS/XS/S/M, IQ4_NL/XS, TQ1_0, TQ2_0, MXFP4_MOE; "
                "TYPE:imatrix: made with an importance matrix, as most published files are) or a GGML type "
                "stored throughout, e.g. Q4_K (default Q4_K_M)");
  s->add_flag("--tensors", size->tensors, "List every tensor with its type, shape and bytes");
  size->out.add_to(*s);
  s->footer("Examples:\n"
            "  infer-plan gguf size --model qwen3-235b-a22b --type Q2_K   # a published 79.81 GiB file\n"
            "  infer-plan gguf size -m qwen3-8b --type Q4_K_M,Q8_0 -o md  # two file types, one table");
  gguf->footer("Examples:\n"
               "  infer-plan gguf size -m qwen3-8b --type Q4_K_M   # the file llama.cpp's quantize would write\n"
               "  infer-plan gguf inspect model.gguf              # what a file holds\n"
               "  infer-plan gguf write -m qwen3-0.6b --scale 0.25 --out tiny.gguf  # a file llama.cpp loads");
  s->callback([size] { run_size(*size); });

  auto inspect = std::make_shared<InspectArgs>();
  CLI::App* i = gguf->add_subcommand(
      "inspect", "Read a .gguf header (no tensor data): metadata, tensor types by class, sizes");
  i->add_option("FILE", inspect->file, "A .gguf file; for split files give any part (-00001-of-0000N.gguf)")
      ->required();
  i->add_flag("--tensors", inspect->tensors, "List every tensor with its type, shape and bytes");
  inspect->out.add_to(*i);
  i->footer("Examples:\n"
            "  infer-plan gguf inspect model.gguf              # metadata, tensor types by class, sizes\n"
            "  infer-plan gguf inspect model.gguf --tensors    # every tensor");
  i->callback([inspect] { run_inspect(*inspect); });
}

}  // namespace infer_plan::apps
