// `infer-plan tokenize`: text to a model's token ids (and back with --ids), with the vocabulary a
// .gguf carries or, for other models, the synthetic one `gguf write` stores and run uses.
#include <fmt/format.h>

#include <memory>

#include "apps/commands.hpp"
#include "apps/output.hpp"
#include "apps/token_ids.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/model/model_scale.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer_plan::apps {
namespace {

struct TokenizeArgs {
  std::string model = "qwen3-0.6b";
  std::string text, file, ids, jsonl;
  double scale = 1.0;
  bool no_special = false, no_parse_special = false;
  OutputOptions out;
};

// A piece as text a terminal shows: control characters and bytes of a split UTF-8 character escaped.
std::string visible(const std::string& piece) {
  std::string s;
  for (size_t i = 0; i < piece.size(); ++i) {
    const auto c = static_cast<unsigned char>(piece[i]);
    if (c == '\n') s += "\\n";
    else if (c == '\t') s += "\\t";
    else if (c == '\r') s += "\\r";
    else if (c < 0x20 || c == 0x7F) s += fmt::format("\\x{:02x}", c);
    else s += static_cast<char>(c);
  }
  return s;
}

void run_tokenize(const TokenizeArgs& a) {
  const int sources = !a.text.empty() + !a.file.empty() + !a.ids.empty() + !a.jsonl.empty();
  if (sources != 1)
    throw InputError("tokenize: give exactly one of TEXT, --file FILE, --jsonl FILE or --ids ID,ID,... (the text to "
                     "encode, or the ids to decode)");
  const ModelSpec spec = scale_model_spec(load_model(a.model), a.scale, "--scale");
  const tokenizer::Tokenizer t(tokenizer::vocabulary_for(spec));
  const std::string& source = t.vocabulary().source;
  if (!a.jsonl.empty()) {  // many texts, one JSON string per line: one line of ids each
    const std::string all = read_text_file(a.jsonl);
    size_t line_no = 0;
    for (size_t begin = 0; begin < all.size();) {
      const size_t end = std::min(all.find('\n', begin), all.size());
      const std::string line = all.substr(begin, end - begin);
      begin = end + 1;
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const Json text = parse_json_text(line, fmt::format("{} line {}", a.jsonl, line_no));
      if (!text.is_string())
        throw InputError(fmt::format("{} line {}: expected a JSON string, got {}", a.jsonl, line_no, text.type_name()));
      const std::vector<uint32_t> ids = t.encode(text.get<std::string>(), !a.no_special, !a.no_parse_special);
      fmt::print("{}\n", Json{{"ids", ids}}.dump());
    }
    return;
  }
  if (!a.ids.empty()) {
    const std::vector<uint32_t> ids = parse_token_ids(a.ids, "--ids");
    const std::string text = t.decode(ids, !a.no_special);
    if (a.out.json()) {
      print_json(Json{{"model", spec.name}, {"vocabulary", source}, {"ids", ids}, {"text", text}, {"count", ids.size()}});
      return;
    }
    fmt::print("{}", text);
    return;
  }
  const std::string text = a.file.empty() ? a.text : read_text_file(a.file);
  const std::vector<uint32_t> ids = t.encode(text, !a.no_special, !a.no_parse_special);
  std::vector<std::string> pieces;
  for (const uint32_t id : ids) pieces.push_back(t.piece(id, true));
  if (a.out.json()) {
    Json printable = Json::array();  // JSON strings must be UTF-8: a piece that splits a character is escaped
    for (const std::string& p : pieces) {
      try {
        tokenizer::check_utf8(p, "piece");
        printable.push_back(p);
      } catch (const InputError&) {
        printable.push_back(visible(p));
      }
    }
    print_json(Json{{"model", spec.name}, {"vocabulary", source}, {"count", ids.size()}, {"ids", ids}, {"pieces", printable}});
    return;
  }
  fmt::print("{} tokens ({} vocabulary of {}: {})\n", ids.size(), t.vocabulary().model == "gpt2" ? "byte-level BPE" : "SentencePiece",
             t.vocabulary().size(), source);
  for (size_t i = 0; i < ids.size(); ++i) fmt::print("{:>8}  '{}'\n", ids[i], visible(pieces[i]));
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Text to a model's token ids (and ids back to text), as llama.cpp "
                                                 "tokenizes: the vocabulary of a .gguf, or the synthetic one");
  cmd->add_option("TEXT", args->text, "The text to encode");
  cmd->add_option("--model,-m", args->model,
                  "Model: a .gguf (its own vocabulary), or a built-in name or config.json (the synthetic vocabulary "
                  "`gguf write` stores) (default qwen3-0.6b)");
  cmd->add_option("--file,-f", args->file, "Encode this file's text instead")->type_name("FILE");
  cmd->add_option("--ids", args->ids, "Decode these ids instead")->type_name("ID,ID,...");
  cmd->add_option("--jsonl", args->jsonl,
                  "Encode many texts: each line of FILE a JSON string; prints one line {\"ids\": [...]} per text")
      ->type_name("FILE");
  cmd->add_option("--scale", args->scale, "The model's shape shrunk as run --scale shrinks it")->type_name("S");
  cmd->add_flag("--no-special", args->no_special, "No BOS/EOS added (decoding: control tokens not shown)");
  cmd->add_flag("--no-parse-special", args->no_parse_special,
                "Control tokens' texts in the input (<|im_start|>) stay text instead of becoming those tokens");
  args->out.add_to(*cmd, false);
  cmd->footer("Examples:\n"
              "  infer-plan tokenize -m model.gguf 'Hello, world!'\n"
              "  infer-plan tokenize -m model.gguf --ids 9707,11,1879 --json");
  cmd->callback([args] { run_tokenize(*args); });
}

}  // namespace infer_plan::apps
