// llama-bench's field names are the keys of every format (json, jsonl, csv header); the markdown
// table uses its column titles (model | size | params | backend | ngl | test | t/s) and a
// "build: <commit> (<number>)" line below it.
#include "planner/calibration/llama_bench.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <regex>

#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/core/limits.hpp"
#include "planner/calibration/serving_bench.hpp"
#include "planner/core/units.hpp"

namespace infer_plan {
namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

double parse_number(std::string_view text, std::string_view where) {
  const std::string t = trim(text);
  double v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v))
    throw InputError(fmt::format("{}: '{}' is not a number", where, t));
  return v;
}

// "6.74 B", "494.03 M", "6738415616" -> parameters.
double parse_params(std::string_view text, std::string_view where) {
  std::string t = trim(text);
  double unit = 1;
  if (!t.empty() && std::isalpha(static_cast<unsigned char>(t.back()))) {
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
    unit = u == 'K' ? 1e3 : u == 'M' ? 1e6 : u == 'B' || u == 'G' ? 1e9 : u == 'T' ? 1e12 : 0;
    if (unit == 0) throw InputError(fmt::format("{}: '{}' is not a parameter count such as \"6.74 B\"", where, t));
    t.pop_back();
  }
  const double v = parse_number(t, where) * unit;
  if (!(v > 0)) throw InputError(fmt::format("{}: '{}' is not a positive parameter count", where, text));
  return v;
}

// "tg128" -> (0, 128); "pp512" -> (512, 0); "pp512+tg128" -> (512, 128); older "tg 128".
void parse_test(std::string_view text, BenchRow& r, std::string_view where) {
  if (const size_t at = text.find('@'); at != std::string_view::npos) {  // "tg128 @ d512": a KV depth
    std::string depth = trim(text.substr(at + 1));
    if (!depth.empty() && (depth[0] == 'd' || depth[0] == 'D')) depth.erase(0, 1);
    const double d = parse_number(depth, where);
    if (!(d >= 0) || d != std::floor(d))
      throw InputError(fmt::format("{}: depth in '{}' is not a token count such as d512", where, trim(text)));
    r.n_depth = static_cast<uint64_t>(d);
    text = text.substr(0, at);
  }
  std::string t;
  for (char ch : text)
    if (!std::isspace(static_cast<unsigned char>(ch))) t += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  auto number_after = [&](std::string_view prefix, std::string_view part) -> std::optional<uint64_t> {
    if (!part.starts_with(prefix)) return std::nullopt;
    uint64_t v = 0;
    const auto digits = part.substr(prefix.size());
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || end != digits.data() + digits.size() || v == 0) return std::nullopt;
    return v;
  };
  std::string_view rest = t;
  bool any = false;
  while (!rest.empty()) {
    const size_t plus = rest.find('+');
    const std::string_view part = rest.substr(0, plus);
    if (const auto pp = number_after("pp", part)) r.n_prompt = *pp;
    else if (const auto tg = number_after("tg", part)) r.n_gen = *tg;
    else
      throw InputError(fmt::format("{}: test '{}' is not a llama-bench test such as tg128, pp512 or pp512+tg128",
                                   where, trim(text)));
    any = true;
    rest = plus == std::string_view::npos ? std::string_view() : rest.substr(plus + 1);
  }
  if (!any) throw InputError(fmt::format("{}: empty test; expected tg128, pp512, ...", where));
}

// "154.69 ± 0.27" (or "+-", or a lone number) -> avg, stddev.
void parse_rate_cell(std::string_view text, BenchRow& r, std::string_view where) {
  std::string t = trim(text);
  size_t pm = t.find("±");
  size_t skip = std::string("±").size();
  if (pm == std::string::npos) {
    pm = t.find("+-");
    skip = 2;
  }
  r.tokens_per_s = parse_number(pm == std::string::npos ? t : t.substr(0, pm), where);
  if (pm != std::string::npos) r.stddev_tokens_per_s = parse_number(t.substr(pm + skip), where);
}

void check_row(const BenchRow& r) {
  if (r.model_type.empty()) throw InputError(fmt::format("{}: no model_type (the model column)", r.origin));
  if (!(r.tokens_per_s > 0)) throw InputError(fmt::format("{}: avg_ts is {}; expected tokens/s > 0", r.origin, r.tokens_per_s));
  if (r.n_prompt == 0 && r.n_gen == 0) throw InputError(fmt::format("{}: n_prompt and n_gen are both 0; expected a test", r.origin));
  if (r.n_ubatch > kMaxContextTokens)
    throw InputError(fmt::format("{}: field 'n_ubatch' is {}; expected 1 to {} tokens (0 or absent: 512)", r.origin,
                                 r.n_ubatch, kMaxContextTokens));
}

std::string json_text(const Json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

BenchRow row_from_json(const Json& o, const std::string& where) {
  if (!o.is_object()) throw InputError(fmt::format("{}: expected a llama-bench result object", where));
  BenchRow r;
  r.origin = where;
  r.model_type = require_string(o, "model_type", where);
  if (const auto it = o.find("model_size"); it != o.end() && !it->is_null())
    r.model_bytes = it->is_string() ? parse_bytes(it->get<std::string>(), where + ": model_size")
                                    : require_uint(o, "model_size", where);
  if (const auto it = o.find("model_n_params"); it != o.end() && !it->is_null())
    r.params = it->is_string() ? parse_params(it->get<std::string>(), where + ": model_n_params")
                               : static_cast<double>(require_uint(o, "model_n_params", where));
  if (o.contains("test")) parse_test(require_string(o, "test", where), r, where + ": test");
  r.n_prompt = optional_uint(o, "n_prompt", where).value_or(r.n_prompt);
  r.n_gen = optional_uint(o, "n_gen", where).value_or(r.n_gen);
  r.n_depth = optional_uint(o, "n_depth", where).value_or(r.n_depth);
  r.n_ubatch = optional_uint(o, "n_ubatch", where).value_or(0);
  const auto avg = optional_number(o, "avg_ts", where);
  if (!avg) throw InputError(fmt::format("{}: field 'avg_ts' is missing; expected tokens/s", where));
  r.tokens_per_s = *avg;
  r.stddev_tokens_per_s = optional_number(o, "stddev_ts", where);
  r.kv_k = json_text(o, "type_k");
  r.kv_v = json_text(o, "type_v");
  r.backend = json_text(o, "backends");
  r.gpu_info = json_text(o, "gpu_info");
  r.build = json_text(o, "build_commit");
  if (r.build.empty()) r.build = json_text(o, "build_number");
  r.source = json_text(o, "source");
  r.model = json_text(o, "model");
  r.exclude = json_text(o, "exclude");
  check_row(r);
  return r;
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') cell += '"', ++i;
      else if (ch == '"') quoted = false;
      else cell += ch;
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      cells.push_back(cell);
      cell.clear();
    } else {
      cell += ch;
    }
  }
  cells.push_back(cell);
  return cells;
}

std::vector<BenchRow> parse_csv(const std::vector<std::string>& lines, const std::string& origin) {
  const std::vector<std::string> header = split_csv(lines.at(0));
  std::vector<BenchRow> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (trim(lines[i]).empty()) continue;
    const std::string where = fmt::format("{}:{}", origin, i + 1);
    const std::vector<std::string> cells = split_csv(lines[i]);
    if (cells.size() != header.size())
      throw InputError(fmt::format("{}: {} cells; the header has {}", where, cells.size(), header.size()));
    Json o = Json::object();
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string& key = header[c];
      const std::string& v = cells[c];
      if (key == "n_prompt" || key == "n_gen" || key == "model_size" || key == "model_n_params") {
        o[key] = static_cast<uint64_t>(parse_number(v, fmt::format("{}: {}", where, key)));
      } else if (key == "avg_ts" || key == "stddev_ts" || key == "n_ubatch") {
        o[key] = parse_number(v, fmt::format("{}: {}", where, key));
      } else {
        o[key] = v;
      }
    }
    rows.push_back(row_from_json(o, where));
  }
  return rows;
}

std::vector<std::string> split_markdown_row(const std::string& line) {
  std::vector<std::string> cells;
  std::string t = trim(line);
  if (t.starts_with('|')) t.erase(0, 1);
  if (t.ends_with('|')) t.pop_back();
  size_t start = 0;
  while (true) {
    const size_t bar = t.find('|', start);
    cells.push_back(trim(std::string_view(t).substr(start, bar == std::string::npos ? std::string::npos : bar - start)));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return cells;
}

std::vector<BenchRow> parse_markdown(const std::vector<std::string>& lines, const std::string& origin) {
  std::vector<BenchRow> rows;
  size_t i = 0;
  while (i < lines.size()) {
    const std::string line = trim(lines[i]);
    if (!line.starts_with('|')) {
      ++i;
      continue;
    }
    std::vector<std::string> header = split_markdown_row(line);
    for (std::string& h : header) h = lower(h);
    std::map<std::string, size_t> col;
    for (size_t c = 0; c < header.size(); ++c) col.emplace(header[c], c);
    const bool bench_table = col.count("model") && col.count("test") && col.count("t/s");
    const size_t first_row = rows.size();
    for (++i; i < lines.size() && trim(lines[i]).starts_with('|'); ++i) {
      const std::vector<std::string> cells = split_markdown_row(lines[i]);
      if (!bench_table || std::all_of(cells.begin(), cells.end(), [](const std::string& c) {
            return c.find_first_not_of("-: ") == std::string::npos;
          }))
        continue;  // another table, or the alignment row
      const std::string where = fmt::format("{}:{}", origin, i + 1);
      if (cells.size() != header.size())
        throw InputError(fmt::format("{}: {} cells; the header has {}", where, cells.size(), header.size()));
      BenchRow r;
      r.origin = where;
      r.model_type = cells[col["model"]];
      if (col.count("size")) r.model_bytes = parse_bytes(cells[col["size"]], where + ": size");
      if (col.count("params")) r.params = parse_params(cells[col["params"]], where + ": params");
      if (col.count("backend")) r.backend = cells[col["backend"]];
      if (col.count("type_k")) r.kv_k = cells[col["type_k"]];
      if (col.count("type_v")) r.kv_v = cells[col["type_v"]];
      if (col.count("n_ubatch"))
        r.n_ubatch = optional_uint(Json{{"n_ubatch", parse_number(cells[col["n_ubatch"]], where + ": n_ubatch")}},
                                   "n_ubatch", where).value_or(0);
      parse_test(cells[col["test"]], r, where + ": test");
      parse_rate_cell(cells[col["t/s"]], r, where + ": t/s");
      check_row(r);
      rows.push_back(std::move(r));
    }
    // "build: 8e672efe (2095)" follows llama-bench's table
    for (size_t k = i; k < lines.size() && k < i + 3; ++k) {
      const std::string t = trim(lines[k]);
      if (t.starts_with("build:")) {
        for (size_t r = first_row; r < rows.size(); ++r) rows[r].build = trim(std::string_view(t).substr(6));
        break;
      }
      if (t.starts_with('|')) break;
    }
  }
  return rows;
}

}  // namespace

double BenchRow::measured_s() const {
  if (step_s > 0) return step_s;
  return n_gen > 0 && n_prompt == 0 ? 1.0 / tokens_per_s : static_cast<double>(n_prompt + n_gen) / tokens_per_s;
}

std::string BenchRow::test_name() const {
  if (!test.empty()) return test;
  const std::string depth = n_depth ? fmt::format(" @ d{}", n_depth) : "";
  if (n_prompt && n_gen) return fmt::format("pp{}+tg{}{}", n_prompt, n_gen, depth);
  return (n_gen ? fmt::format("tg{}", n_gen) : fmt::format("pp{}", n_prompt)) + depth;
}

std::vector<BenchRow> parse_bench_text(std::string_view text, const std::string& origin) {
  const std::vector<std::string> lines = split_lines(text);
  size_t first = 0;
  while (first < lines.size() && trim(lines[first]).empty()) ++first;
  if (first == lines.size()) throw InputError(fmt::format("{}: empty; expected llama-bench output", origin));
  const std::string head = trim(lines[first]);
  std::vector<BenchRow> rows;
  if (head.starts_with('[') || (head.starts_with('{') && !head.ends_with('}'))) {
    const Json j = parse_json_text(text, origin);
    if (std::optional<std::vector<BenchRow>> served = served_rows(j, origin)) return *served;
    const Json* list = &j;
    if (j.is_object()) {
      if (!j.contains("points") || !j.at("points").is_array())
        throw InputError(fmt::format("{}: expected a llama-bench JSON array, or an object with a 'points' array", origin));
      list = &j.at("points");
    }
    if (!list->is_array()) throw InputError(fmt::format("{}: expected a JSON array of llama-bench results", origin));
    for (size_t k = 0; k < list->size(); ++k)
      rows.push_back(row_from_json((*list)[k], fmt::format("{}: result {}", origin, k + 1)));
  } else if (head.starts_with('{')) {  // jsonl: one object per line
    for (size_t k = first; k < lines.size(); ++k) {
      if (trim(lines[k]).empty()) continue;
      const std::string where = fmt::format("{}:{}", origin, k + 1);
      const Json j = parse_json_text(lines[k], where);
      if (std::optional<std::vector<BenchRow>> served = served_rows(j, where)) rows.insert(rows.end(), served->begin(), served->end());
      else rows.push_back(row_from_json(j, where));
    }
  } else if (std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return trim(l).starts_with('|'); })) {
    rows = parse_markdown(lines, origin);
  } else if (head.find("avg_ts") != std::string::npos && head.find("model_type") != std::string::npos) {
    rows = parse_csv(std::vector<std::string>(lines.begin() + static_cast<std::ptrdiff_t>(first), lines.end()), origin);
  } else {
    throw InputError(fmt::format("{}: not llama-bench output; expected -o json (an array), -o jsonl, -o csv "
                                 "(a header with model_type and avg_ts) or its markdown table "
                                 "(| model | size | params | backend | ngl | test | t/s |), `vllm bench serve "
                                 "--save-result` JSON, or infer-plan report --json", origin));
  }
  if (rows.empty())
    throw InputError(fmt::format("{}: no results found; a markdown table needs model, test and t/s columns", origin));
  return rows;
}

std::vector<BenchRow> read_bench_file(const std::string& path) {
  return parse_bench_text(read_text_file(path), path);
}

BenchModelType parse_bench_model_type(std::string_view model_type, std::string_view where) {
  const std::string t = trim(model_type);
  BenchModelType m;
  const size_t sp1 = t.find(' ');
  if (sp1 == std::string::npos)
    throw InputError(fmt::format("{}: model '{}' is not 'ARCH SIZE TYPE' as llama-bench prints it (e.g. "
                                 "\"llama 7B Q4_0\")", where, t));
  m.arch = t.substr(0, sp1);
  std::string rest = trim(std::string_view(t).substr(sp1 + 1));
  const size_t sp2 = rest.find(' ');
  if (sp2 != std::string::npos && std::isdigit(static_cast<unsigned char>(rest[0])) ) {
    m.size_label = rest.substr(0, sp2);
    rest = trim(std::string_view(rest).substr(sp2 + 1));
  } else if (sp2 != std::string::npos && rest[0] == '?') {
    m.size_label = rest.substr(0, sp2);
    rest = trim(std::string_view(rest).substr(sp2 + 1));
  }
  if (rest.starts_with("mostly ")) rest = rest.substr(7);
  if (rest.starts_with("all ")) rest = rest.substr(4);
  const size_t dash = rest.find(" - ");
  if (dash != std::string::npos) {
    const std::string base = trim(std::string_view(rest).substr(0, dash));
    const std::string variant = lower(trim(std::string_view(rest).substr(dash + 3)));
    if (variant == "small" || variant == "medium" || variant == "large") {
      // llama.cpp names Q2_K "Q2_K - Medium" and Q2_K_S "Q2_K - Small"
      m.file_type = base == "Q2_K" && variant == "medium" ? base : base + "_" + static_cast<char>(std::toupper(variant[0]));
    } else {
      m.file_type = base;  // "IQ2_XXS - 2.0625 bpw"
    }
  } else {
    m.file_type = rest;
  }
  // "MXFP4 MoE" (llama.cpp's name of its MXFP4_MOE file type): the file type's own spelling
  if (m.file_type.find(' ') != std::string::npos) {
    std::replace(m.file_type.begin(), m.file_type.end(), ' ', '_');
    std::transform(m.file_type.begin(), m.file_type.end(), m.file_type.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  }
  if (m.file_type.empty())
    throw InputError(fmt::format("{}: model '{}' names no weight type (e.g. \"llama 7B Q4_0\")", where, t));
  return m;
}

namespace {
constexpr int kFirst2025Build = 4400;  // llama.cpp's build numbers: b4400 is of the last days of 2024
}  // namespace

BuildEra build_era(const std::string& build) {
  static const std::regex number(R"(\((\d{3,5})\))"), year(R"((20\d\d))");
  std::smatch m;
  if (std::regex_search(build, m, number))
    return std::stoi(m[1].str()) >= kFirst2025Build ? BuildEra::from_2025 : BuildEra::before_2025;
  int latest = 0;
  for (auto it = std::sregex_iterator(build.begin(), build.end(), year); it != std::sregex_iterator(); ++it)
    latest = std::max(latest, std::stoi((*it)[1].str()));
  return latest >= 2025 ? BuildEra::from_2025 : BuildEra::before_2025;
}

}  // namespace infer_plan
