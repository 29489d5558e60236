// Unit parsing is strict: a number, optional spaces, then exactly one of the listed units
// (case-sensitive, because "Mb/s" and "MB/s" differ by 8x). Sizes are computed exactly in
// 128-bit integers so "79.81GiB" is round(7981 * 2^30 / 100), not a float approximation.
#include "planner/core/units.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"

namespace infer_plan {
namespace {

struct Unit {
  std::string_view name;
  long double factor;  // multiplier to the base unit (bytes, bytes/s, ops/s)
};

constexpr std::array kSizeUnits{
    Unit{"B", 1.0L},      Unit{"kB", 1e3L},    Unit{"KB", 1e3L},      Unit{"MB", 1e6L},
    Unit{"GB", 1e9L},     Unit{"TB", 1e12L},   Unit{"PB", 1e15L},     Unit{"KiB", 1024.0L},
    Unit{"MiB", 1048576.0L}, Unit{"GiB", 1073741824.0L}, Unit{"TiB", 1099511627776.0L},
    Unit{"PiB", 1125899906842624.0L}};

constexpr std::array kRateUnits{
    Unit{"B/s", 1.0L},   Unit{"kB/s", 1e3L},  Unit{"KB/s", 1e3L},  Unit{"MB/s", 1e6L},
    Unit{"GB/s", 1e9L},  Unit{"TB/s", 1e12L}, Unit{"KiB/s", 1024.0L},
    Unit{"MiB/s", 1048576.0L}, Unit{"GiB/s", 1073741824.0L}, Unit{"TiB/s", 1099511627776.0L},
    Unit{"kb/s", 1e3L / 8}, Unit{"Mb/s", 1e6L / 8}, Unit{"Gb/s", 1e9L / 8}, Unit{"Tb/s", 1e12L / 8},
    Unit{"Mbps", 1e6L / 8}, Unit{"Gbps", 1e9L / 8}, Unit{"Tbps", 1e12L / 8}};

constexpr std::array kFlopsUnits{
    Unit{"FLOPS", 1.0L},     Unit{"GFLOPS", 1e9L},   Unit{"TFLOPS", 1e12L},  Unit{"PFLOPS", 1e15L},
    Unit{"FLOP/s", 1.0L},    Unit{"GFLOP/s", 1e9L},  Unit{"TFLOP/s", 1e12L}, Unit{"PFLOP/s", 1e15L},
    Unit{"OPS", 1.0L},       Unit{"GOPS", 1e9L},     Unit{"TOPS", 1e12L},    Unit{"POPS", 1e15L}};

constexpr std::array kDurationUnits{Unit{"ms", 1.0L}, Unit{"s", 1e3L}, Unit{"us", 1e-3L}, Unit{"min", 6e4L}};  // in ms

__extension__ typedef unsigned __int128 u128;  // exact size arithmetic (GCC/Clang)

struct Number {
  u128 mantissa = 0;  // all digits, decimal point removed
  unsigned fraction_digits = 0;
  std::string_view unit;
};

template <size_t N>
std::string unit_list(const std::array<Unit, N>& units) {
  std::string out;
  for (const auto& u : units) {
    if (!out.empty()) out += ", ";
    out += u.name;
  }
  return out;
}

template <size_t N>
Number split_number(std::string_view text, std::string_view what, const std::array<Unit, N>& units,
                    std::string_view example) {
  auto fail = [&](std::string_view why) -> Number {
    throw InputError(fmt::format("{}: '{}' {}; expected a non-negative number with a unit such as "
                                 "'{}' (units: {})",
                                 what, text, why, example, unit_list(units)));
  };
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i < text.size() && text[i] == '-') fail("is negative");
  Number n;
  unsigned digits = 0;
  bool point = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      if (++digits > 30) fail("has too many digits");
      n.mantissa = n.mantissa * 10 + static_cast<unsigned>(c - '0');
      if (point) ++n.fraction_digits;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (digits == 0) fail("does not start with a number");
  if (point && n.fraction_digits == 0) fail("has a decimal point without digits after it");
  while (i < text.size() && text[i] == ' ') ++i;
  size_t end = text.size();
  while (end > i && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  n.unit = text.substr(i, end - i);
  return n;
}

template <size_t N>
const Unit* find_unit(std::string_view name, const std::array<Unit, N>& units) {
  for (const auto& u : units)
    if (u.name == name) return &u;
  return nullptr;
}

template <size_t N>
double parse_scaled(std::string_view text, std::string_view what, const std::array<Unit, N>& units,
                    std::string_view example, std::string_view base_unit) {
  Number n = split_number(text, what, units, example);
  long double factor = 1.0L;
  if (!n.unit.empty() && n.unit != base_unit) {
    const Unit* u = find_unit(n.unit, units);
    if (!u)
      throw InputError(fmt::format("{}: unknown unit '{}' in '{}'; accepted units: {}", what, n.unit,
                                   text, unit_list(units)));
    factor = u->factor;
  }
  long double value = static_cast<long double>(n.mantissa) * factor;
  for (unsigned k = 0; k < n.fraction_digits; ++k) value /= 10.0L;
  return static_cast<double>(value);
}

std::string trim_decimal(double v, int max_decimals) {
  std::string s = fmt::format("{:.{}f}", v, max_decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

}  // namespace

namespace {
[[noreturn]] void too_large(std::string_view text, std::string_view what) {
  throw InputError(fmt::format("{}: '{}' is larger than 1024 PiB (2^60 bytes); no memory or file comes near", what,
                               text));
}
}  // namespace

uint64_t parse_bytes(std::string_view text, std::string_view what) {
  Number n = split_number(text, what, kSizeUnits, "96 GB' or '8 GiB");
  u128 factor = 1;
  if (!n.unit.empty()) {
    const Unit* u = find_unit(n.unit, kSizeUnits);
    // "14G" (as ls -h and Ollama write it) names no unit here: a binary GiB and a decimal GB
    // differ by 7%, so the user says which.
    const size_t prefix = n.unit.size() == 1 ? std::string_view("KMGTP").find(static_cast<char>(std::toupper(n.unit[0])))
                                             : std::string_view::npos;
    if (!u && prefix != std::string_view::npos) {
      const std::string_view number = text.substr(0, text.size() - 1);
      const char upper = "KMGTP"[prefix];
      throw InputError(fmt::format("{}: '{}': write {}{}iB (binary, 2^{}) or {}{}B (decimal, 10^{}); accepted units: {}",
                                   what, text, number, upper, 10 * (prefix + 1), number, upper == 'K' ? 'k' : upper,
                                   3 * (prefix + 1), unit_list(kSizeUnits)));
    }
    if (!u)
      throw InputError(fmt::format("{}: unknown unit '{}' in '{}'; accepted units: {}", what, n.unit,
                                   text, unit_list(kSizeUnits)));
    factor = static_cast<u128>(u->factor);
  }
  u128 divisor = 1;
  for (unsigned k = 0; k < n.fraction_digits; ++k) divisor *= 10;
  // mantissa < 10^30 and factor <= 2^50 would overflow 128 bits, so bound the mantissa first.
  const u128 limit = static_cast<u128>(UINT64_MAX) * divisor;
  if (n.mantissa > limit)
    too_large(text, what);
  u128 scaled = n.mantissa * factor;
  if (factor != 0 && scaled / factor != n.mantissa)
    too_large(text, what);
  u128 bytes = (scaled + divisor / 2) / divisor;  // round half up
  if (bytes > kMaxBytes) too_large(text, what);
  return static_cast<uint64_t>(bytes);
}

double parse_rate(std::string_view text, std::string_view what) {
  return parse_scaled(text, what, kRateUnits, "64 GB/s", "B/s");
}

double parse_flops(std::string_view text, std::string_view what) {
  return parse_scaled(text, what, kFlopsUnits, "989 TFLOPS", "FLOPS");
}

double parse_duration_ms(std::string_view text, std::string_view what) {
  return parse_scaled(text, what, kDurationUnits, "500ms", "ms");  // a bare number is ms, the base unit
}

double to_gib(uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(GiB); }
double to_mib(uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(MiB); }
double to_kib(uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(KiB); }

std::string format_bytes(uint64_t bytes) {
  constexpr std::array<std::pair<uint64_t, std::string_view>, 4> steps{
      {{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}}};
  for (auto [size, name] : steps) {
    if (bytes >= size) {
      if (bytes % size == 0) return fmt::format("{} {}", bytes / size, name);
      return fmt::format("{:.2f} {}", static_cast<double>(bytes) / static_cast<double>(size), name);
    }
  }
  return fmt::format("{} B", bytes);
}

std::string format_gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / static_cast<double>(GiB));
}

std::string format_mib(double bytes) {
  return fmt::format("{:.2f} MiB", bytes / static_cast<double>(MiB));
}

std::string format_rate(double v) {
  if (v >= 1e12) return trim_decimal(v / 1e12, 3) + " TB/s";
  if (v >= 1e9) return trim_decimal(v / 1e9, 3) + " GB/s";
  if (v >= 1e6) return trim_decimal(v / 1e6, 3) + " MB/s";
  return trim_decimal(v, 0) + " B/s";
}

std::string format_flops(double v) {
  if (v >= 1e15) return trim_decimal(v / 1e15, 3) + " PFLOPS";
  if (v >= 1e12) return trim_decimal(v / 1e12, 3) + " TFLOPS";
  if (v >= 1e9) return trim_decimal(v / 1e9, 3) + " GFLOPS";
  return trim_decimal(v, 0) + " FLOPS";
}

std::string format_int_ops(double v) {
  if (v >= 1e12) return trim_decimal(v / 1e12, 3) + " TOPS";
  if (v >= 1e9) return trim_decimal(v / 1e9, 3) + " GOPS";
  return trim_decimal(v, 0) + " OPS";
}

}  // namespace infer_plan

namespace infer_plan {

uint64_t parse_tokens(std::string_view text, std::string_view what) {
  auto fail = [&]() -> uint64_t {
    throw InputError(fmt::format("{}: '{}' is not a token count; expected a positive integer "
                                 "such as 8192 or 8K (= 8192) or 1M (= 1048576)", what, text));
  };
  if (text.empty() || text.size() > 12) fail();
  uint64_t multiplier = 1;
  std::string_view digits = text;
  if (char last = text.back(); last == 'K' || last == 'k') multiplier = 1024;
  else if (last == 'M' || last == 'm') multiplier = 1024 * 1024;
  if (multiplier != 1) digits.remove_suffix(1);
  if (digits.empty()) fail();
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') fail();
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v * multiplier;
}

double to_ms_exact(double seconds) { return std::round(seconds * 1e12) / 1e9; }

}  // namespace infer_plan
