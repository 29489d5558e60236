// How the commands write numbers in text, in one place so that a second means the same digits
// in every table (JSON prints the raw values).
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "apps/output.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/core/units.hpp"

namespace infer_plan::apps {

// Seconds (or any time) to four significant digits: 0.02388, 12.87.
inline std::string secs(double s) { return fmt::format("{:.4g}", s); }
// Milliseconds with two decimals and the unit: "12.35 ms".
inline std::string ms(double v) { return fmt::format("{:.2f} ms", v); }
// Up to two decimals, trailing zeros dropped: 26.3, 29.9, 29.86, 55.1.
inline std::string short_decimal(double v) {
  std::string s = fmt::format("{:.2f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}
// "1 request", "4 requests": a count with its noun, singular for one.
inline std::string count_of(uint64_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}
// Whole MiB: "288 MiB".
inline std::string mib(double bytes) { return fmt::format("{:.0f} MiB", bytes / MiB); }

// JSON as text. Strings from a GGUF or a path need not be UTF-8; invalid bytes become U+FFFD
// instead of an exception after the work is done. Commands hand documents to print_json
// (apps/output.hpp), which main prints in the chosen format.
inline std::string json_text(const Json& j, int indent = 2) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace infer_plan::apps
