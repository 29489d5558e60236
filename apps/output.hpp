// How a command's answer reaches the user: text for people, or one JSON document that main
// prints as JSON, JSON Lines, CSV or a Markdown table (-o), one row per point of a sweep
// (comma lists on flags, as llama-bench takes them). Commands build the document; main prints it.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "planner/core/json_fields.hpp"

namespace infer_plan::apps {

// The version of the JSON documents' layout (docs/json.md); every document carries it as
// "schema". Raised when a key is renamed, removed or changes its unit.
inline constexpr int kJsonSchema = 1;

enum class OutputFormat { text, md, csv, json, jsonl };
inline constexpr const char* kOutputFormats = "text, md, csv, json, jsonl";
// "text" -> OutputFormat::text, ...; InputError naming `flag` and the accepted spellings.
OutputFormat parse_output_format(std::string_view text, std::string_view flag);

// -o/--output-format and --json (= -o json), --explain. Commands ask json() to choose between
// printing text and building a document for print_json.
struct OutputOptions {
  bool explain = false;
  void add_to(CLI::App& cmd, bool with_explain = true);
  bool json() const;
};

// The process's output: the format chosen on the command line, and the documents the command
// handed to print_json (main prints them once the command returns).
struct OutputState {
  OutputFormat format = OutputFormat::text;
  bool documents_wanted = false;  // a sweep: every point is a row, in text too
  std::vector<Json> documents;
};
OutputState& output_state();

// A command's answer as a document: "schema" is added, and main prints it in the chosen format.
void print_json(Json document);

// The document's figures as columns: nested objects as "a.b", arrays of numbers or strings
// joined by spaces, arrays of objects left out (CSV and tables are flat; JSON keeps them).
std::vector<std::pair<std::string, Json>> flatten_document(const Json& document);

// One row of a table: the values of the swept flags (empty for a single run) and the document.
struct OutputRow {
  std::vector<std::pair<std::string, std::string>> sweep;  // flag -> value, in command-line order
  Json document;
};

// Prints the rows in `format` (text and md: the command's headline figures, byte figures in GiB;
// csv: every flat figure, raw; json: one document; jsonl: one per line).
std::string render_rows(const std::string& command, const std::vector<OutputRow>& rows, OutputFormat format);

}  // namespace infer_plan::apps
