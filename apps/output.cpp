#include "apps/output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "apps/format.hpp"
#include "apps/text_table.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan::apps {

OutputFormat parse_output_format(std::string_view text, std::string_view flag) {
  static const std::map<std::string_view, OutputFormat> names{
      {"text", OutputFormat::text}, {"md", OutputFormat::md},       {"csv", OutputFormat::csv},
      {"json", OutputFormat::json}, {"jsonl", OutputFormat::jsonl}, {"markdown", OutputFormat::md}};
  const auto it = names.find(text);
  if (it == names.end())
    throw InputError(fmt::format("{}: '{}' is not an output format; accepted: {}", flag, text, kOutputFormats));
  return it->second;
}

OutputState& output_state() {
  static OutputState state;
  return state;
}

void OutputOptions::add_to(CLI::App& cmd, bool with_explain) {
  cmd.add_option_function<std::string>(
         "--output-format,-o",
         [](const std::string& v) { output_state().format = parse_output_format(v, "--output-format"); },
         fmt::format("Output: {} (default text). md, csv and jsonl give one row per point of a sweep: a comma "
                     "list on a flag (-c 8K,32K -ctk f16,q8_0) runs every combination",
                     kOutputFormats))
      ->type_name("FORMAT");
  cmd.add_flag_callback("--json", [] { output_state().format = OutputFormat::json; },
                        "Same as -o json: one JSON document for scripts (docs/json.md: keys and units)");
  if (with_explain) cmd.add_flag("--explain", explain, "Print the derivation with the numbers substituted");
}

bool OutputOptions::json() const {
  return output_state().format != OutputFormat::text || output_state().documents_wanted;
}

namespace {

// Byte figures are whole numbers: a count computed in floating point (the roofline's bytes per
// iteration) is written as an integer, never as 17510719488.0. Rates (bytes per second) are not counts.
void integral_bytes(Json& j, std::string_view key) {
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) integral_bytes(v, k);
  } else if (j.is_array()) {
    for (Json& e : j) integral_bytes(e, key);
  } else if (j.is_number_float() && key.find("bytes") != std::string_view::npos &&
             key.find("_per_s") == std::string_view::npos) {
    const double v = j.get<double>();
    if (std::isfinite(v) && std::abs(v) < 9.2e18) j = static_cast<int64_t>(std::llround(v));
  }
}

}  // namespace

void print_json(Json document) {
  integral_bytes(document, "");
  if (document.is_object()) document["schema"] = kJsonSchema;
  output_state().documents.push_back(std::move(document));
}

namespace {

void flatten_into(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, Json>>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) flatten_into(value, prefix.empty() ? key : prefix + "." + key, out);
    return;
  }
  if (j.is_array()) {
    std::string joined;
    for (const Json& e : j) {
      if (e.is_structured()) return;  // a list of records: not a column
      joined += (joined.empty() ? "" : " ") + (e.is_string() ? e.get<std::string>() : e.dump());
    }
    out.emplace_back(prefix, joined);
    return;
  }
  out.emplace_back(prefix, j);
}

bool ends_with(std::string_view s, std::string_view tail) { return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail; }

// A figure for people: bytes in GiB, 4 significant digits, yes/no, "-" for none.
std::string human_cell(const std::string& key, const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() && ends_with(key, "_bytes")) return gib(v.get<int64_t>());
  if (v.is_number_unsigned() && ends_with(key, "_bytes")) return gib(v.get<uint64_t>());
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  return v.dump();
}

// A figure for a spreadsheet: numbers as JSON writes them (integers exact), text quoted when needed.
std::string csv_cell(const Json& v) {
  if (v.is_null()) return "";
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string md_cell(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

// The figures a person reads first in each command's table (text, md); csv and json have all.
const std::vector<std::string>* headline(const std::string& command) {
  static const std::map<std::string, std::vector<std::string>> columns{
      {"fit", {"model", "hw", "weights", "kv_k", "kv_v", "context", "requests", "weights_bytes", "kv_bytes",
               "headroom_bytes", "fits", "max_requests", "max_context"}},
      {"kv", {"model", "context", "requests", "layers", "kv_heads", "head_dim"}},
      {"quality", {"model", "weights", "kv_k", "kv_v", "kld_mean", "kld_stderr", "top1_agreement", "ppl", "ppl_reference",
                   "weights_bytes", "kv_bytes_per_token", "decode_iteration_ms"}},
      {"roofline", {"model", "hw", "weights", "batch", "context", "decode_iteration_ms", "decode_bound", "tpot_ms",
                    "tokens_per_s", "ttft_ms", "prefill_ms"}},
      {"queue", {"rate_per_s", "completed", "rejected", "stable", "ttft_ms.median", "ttft_ms.p99", "tpot_ms.median",
                 "tpot_ms.p99", "itl_ms.p99", "e2el_ms.median", "e2el_ms.p99", "request_throughput_req_s",
                 "output_throughput_tok_s", "goodput_req_s"}},
  };
  const auto it = columns.find(command);
  return it == columns.end() ? nullptr : &it->second;
}

// A command whose answer is a list (a row per KV type, per block length, per tensor class...):
// in CSV and Markdown, a single run prints that list as its rows.
const char* record_list(const std::string& command) {
  static const std::map<std::string, const char*> lists{
      {"kv", "per_type"}, {"spec", "rows"},   {"gguf size", "classes"}, {"pd", "table"},
      {"hw", "devices"},  {"model", "models"}, {"quant", "types"}, {"calibrate", "points"}};
  const auto it = lists.find(command);
  return it == lists.end() ? nullptr : it->second;
}

}  // namespace

std::vector<std::pair<std::string, Json>> flatten_document(const Json& document) {
  std::vector<std::pair<std::string, Json>> out;
  flatten_into(document, "", out);
  return out;
}

std::string render_rows(const std::string& command, const std::vector<OutputRow>& rows, OutputFormat format) {
  if (format == OutputFormat::json) {
    if (rows.size() == 1 && rows[0].sweep.empty()) return json_text(rows[0].document) + "\n";
    Json runs = Json::array();
    for (const OutputRow& r : rows) {
      Json flags = Json::object();
      for (const auto& [flag, value] : r.sweep) flags[flag] = value;
      runs.push_back({{"sweep", flags}, {"result", r.document}});
    }
    return json_text(Json{{"schema", kJsonSchema}, {"command", command}, {"runs", runs}}) + "\n";
  }
  if (format == OutputFormat::jsonl) {
    std::string out;
    for (const OutputRow& r : rows) {
      Json line = r.document;
      if (!r.sweep.empty() && line.is_object()) {
        Json flags = Json::object();
        for (const auto& [flag, value] : r.sweep) flags[flag] = value;
        line["sweep"] = flags;
      }
      out += json_text(line, -1) + "\n";
    }
    return out;
  }
  if (rows.size() == 1 && rows[0].sweep.empty()) {
    const char* list = record_list(command);
    if (list && rows[0].document.is_object() && rows[0].document.contains(list) && rows[0].document[list].is_array() &&
        !rows[0].document[list].empty() && rows[0].document[list].front().is_object()) {
      std::vector<OutputRow> records;
      for (const Json& record : rows[0].document[list]) records.push_back({{}, record});
      return render_rows(command + " " + list, records, format);
    }
  }
  // A table: the swept flags, then the figures (every flat one for csv, the headline for people).
  std::vector<std::string> sweep_columns;
  for (const auto& [flag, value] : rows.empty() ? decltype(rows[0].sweep){} : rows[0].sweep) sweep_columns.push_back(flag);
  std::vector<std::map<std::string, Json>> flat(rows.size());
  std::vector<std::string> columns;
  for (size_t i = 0; i < rows.size(); ++i)
    for (auto& [key, value] : flatten_document(rows[i].document)) {
      if (key == "schema") continue;
      if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
      flat[i][key] = std::move(value);
    }
  // A swept flag's column already shows what it set: a figure of the same name would repeat it.
  std::erase_if(columns, [&](const std::string& c) {
    return std::find(sweep_columns.begin(), sweep_columns.end(), c) != sweep_columns.end();
  });
  if (format != OutputFormat::csv) {
    if (const auto* keep = headline(command)) {
      std::vector<std::string> chosen;
      for (const std::string& k : *keep)  // a swept flag's column already shows what it set
        if (std::find(columns.begin(), columns.end(), k) != columns.end() &&
            std::find(sweep_columns.begin(), sweep_columns.end(), k) == sweep_columns.end())
          chosen.push_back(k);
      columns = chosen;
    }
  }
  std::vector<std::string> headers;
  for (const std::string& f : sweep_columns) headers.push_back(f);
  // For people, a size is printed in GiB (human_cell): its column says so ("_gib", not "_bytes").
  for (const std::string& c : columns)
    headers.push_back(format != OutputFormat::csv && ends_with(c, "_bytes") ? c.substr(0, c.size() - 6) + "_gib" : c);
  std::vector<std::vector<std::string>> cells;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<std::string> line;
    for (const auto& [flag, value] : rows[i].sweep) line.push_back(format == OutputFormat::csv ? csv_cell(value) : value);
    for (const std::string& c : columns) {
      const auto it = flat[i].find(c);
      const Json v = it == flat[i].end() ? Json(nullptr) : it->second;
      line.push_back(format == OutputFormat::csv ? csv_cell(v) : human_cell(c, v));
    }
    cells.push_back(std::move(line));
  }
  if (format == OutputFormat::csv) {
    std::string out;
    for (size_t c = 0; c < headers.size(); ++c) out += (c ? "," : "") + csv_cell(headers[c]);
    out += "\n";
    for (const auto& line : cells) {
      for (size_t c = 0; c < line.size(); ++c) out += (c ? "," : "") + line[c];
      out += "\n";
    }
    return out;
  }
  std::vector<bool> right(headers.size(), false);
  for (size_t c = 0; c < headers.size(); ++c)
    right[c] = std::all_of(cells.begin(), cells.end(), [&](const auto& line) {
      const std::string& s = line[c];
      return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+');
    });
  if (format == OutputFormat::text) return TextTable{headers, right, cells}.render();
  std::string out = "|";
  for (const std::string& h : headers) out += " " + md_cell(h) + " |";
  out += "\n|";
  for (size_t c = 0; c < headers.size(); ++c) out += right[c] ? " ---: |" : " --- |";
  out += "\n";
  for (const auto& line : cells) {
    out += "|";
    for (const std::string& s : line) out += " " + md_cell(s) + " |";
    out += "\n";
  }
  return out;
}

}  // namespace infer_plan::apps
