// nlohmann::json reports parse errors with line and column; we prefix the file name and turn
// type mismatches into InputErrors that say which field was wrong and what it should have been.
#include "planner/core/json_fields.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <sstream>

#include "planner/core/input_error.hpp"

namespace infer_plan {
namespace {

constexpr uint64_t kMaxTextFileBytes = uint64_t{64} << 20;
// No input of ours nests past 8 levels; a file nested 100k deep would overflow the stack of
// anything that walks it (printing a value in an error message, comparing, copying).
constexpr int kMaxJsonDepth = 64;

std::string describe(const Json& v) {
  std::string dumped = v.dump();
  if (dumped.size() > 40) dumped = dumped.substr(0, 37) + "...";
  return fmt::format("{} ({})", dumped, v.type_name());
}

const Json* find(const Json& obj, std::string_view key, std::string_view where) {
  if (!obj.is_object())
    throw InputError(fmt::format("{}: expected a JSON object, found {}", where, obj.type_name()));
  auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void missing(std::string_view key, std::string_view where, std::string_view expected) {
  throw InputError(fmt::format("{}: field '{}' is missing; expected {}", where, key, expected));
}

[[noreturn]] void wrong(std::string_view key, std::string_view where, const Json& v,
                        std::string_view expected) {
  throw InputError(
      fmt::format("{}: field '{}' is {}; expected {}", where, key, describe(v), expected));
}

}  // namespace

Json parse_json_text(std::string_view text, std::string_view origin) {
  const auto depth_cap = [origin](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw InputError(fmt::format("{}: JSON nested deeper than {} levels; expected a plan, profile, scenario or "
                                   "config of a few levels", origin, kMaxJsonDepth));
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), depth_cap);
  } catch (const Json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line L, column C: ..."
    std::string msg = e.what();
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    throw InputError(fmt::format("{}: malformed JSON: {}", origin, msg));
  } catch (const Json::exception& e) {  // out_of_range.406: a number beyond a double (1e400)
    std::string msg = e.what();
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    throw InputError(fmt::format("{}: malformed JSON: {}", origin, msg));
  }
}

void require_regular_file(const std::string& path, std::string_view expected) {
  // Checked before opening: opening a FIFO with no writer blocks forever, and /dev/zero never ends.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw InputError(fmt::format("{}: not a regular file; expected {}", path, expected));
}

std::string read_text_file(const std::string& path) {
  // Regular files only, and no text input of ours comes near the cap.
  require_regular_file(path, "a JSON or text file");
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) > kMaxTextFileBytes)
    throw InputError(fmt::format("{}: larger than {} MiB; expected a JSON or text file", path, kMaxTextFileBytes >> 20));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open file", path));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: cannot read file", path));
  return buf.str();
}

Json read_json_file(const std::string& path) { return parse_json_text(read_text_file(path), path); }

std::optional<uint64_t> optional_uint(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = find(obj, key, where);
  if (!v) return std::nullopt;
  constexpr std::string_view expected = "a non-negative integer";
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) {
    if (v->get<int64_t>() >= 0) return static_cast<uint64_t>(v->get<int64_t>());
    wrong(key, where, *v, expected);  // negative
  }
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (d >= 0 && d < 1.8e19 && std::floor(d) == d) return static_cast<uint64_t>(d);
  }
  wrong(key, where, *v, expected);
}

uint64_t require_uint(const Json& obj, std::string_view key, std::string_view where) {
  auto v = optional_uint(obj, key, where);
  if (!v) missing(key, where, "a non-negative integer");
  return *v;
}

std::optional<std::string> optional_string(const Json& obj, std::string_view key,
                                           std::string_view where) {
  const Json* v = find(obj, key, where);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong(key, where, *v, "a string");
  return v->get<std::string>();
}

std::string require_string(const Json& obj, std::string_view key, std::string_view where) {
  auto v = optional_string(obj, key, where);
  if (!v) missing(key, where, "a string");
  return *v;
}

std::optional<bool> optional_bool(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = find(obj, key, where);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong(key, where, *v, "true or false");
  return v->get<bool>();
}

std::optional<double> optional_number(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = find(obj, key, where);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong(key, where, *v, "a number");
  return v->get<double>();
}

const Json& require_object(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = find(obj, key, where);
  if (!v) missing(key, where, "an object");
  if (!v->is_object()) wrong(key, where, *v, "an object");
  return *v;
}

void check_known_fields(const Json& obj, std::initializer_list<std::string_view> keys, std::string_view where) {
  for (const auto& [key, value] : obj.items())
    if (!key.starts_with('_') && std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::vector<std::string_view> sorted(keys);
      std::sort(sorted.begin(), sorted.end());
      throw InputError(fmt::format("{}: unknown field '{}'; expected one of: {}", where, key, fmt::join(sorted, ", ")));
    }
}

}  // namespace infer_plan
