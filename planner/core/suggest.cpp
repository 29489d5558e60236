#include "planner/core/suggest.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tuple>

namespace infer_plan {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// `short_one` within `long_one`, letters in order (ctx in context): an abbreviation.
bool abbreviates(const std::string& short_one, const std::string& long_one) {
  if (short_one.size() < 3 || short_one.size() >= long_one.size() || short_one[0] != long_one[0]) return false;
  size_t at = 0;
  for (char c : long_one)
    if (at < short_one.size() && c == short_one[at]) ++at;
  return at == short_one.size();
}

}  // namespace

size_t edit_distance(std::string_view a_in, std::string_view b_in) {
  const std::string a = lower(a_in), b = lower(b_in);
  // d[i][j]: the distance between a's first i bytes and b's first j (optimal string alignment)
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::vector<std::string> nearest_names(std::string_view typed, const std::vector<std::string>& known, size_t limit) {
  const std::string t = lower(typed);
  if (t.empty()) return {};
  const size_t within = std::max<size_t>(1, t.size() / 3);
  // (kind: 0 a prefix either way, 1 an abbreviation either way or a near spelling; distance; name)
  std::vector<std::tuple<int, size_t, std::string>> near;
  for (const std::string& name : known) {
    const std::string n = lower(name);
    if (n == t) continue;
    const size_t d = edit_distance(t, n);
    // a prefix of two letters or more, or a name of three or more that begins what was typed (not -h in --hw)
    if ((t.size() >= 2 && n.starts_with(t)) || (n.size() >= 3 && t.starts_with(n)))
      near.emplace_back(0, d, name);
    else if (d <= within || abbreviates(t, n) || abbreviates(n, t))
      near.emplace_back(1, d, name);
  }
  std::sort(near.begin(), near.end());
  std::vector<std::string> out;
  for (const auto& [kind, d, name] : near)
    if (out.size() < limit && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

std::string did_you_mean(std::string_view typed, const std::vector<std::string>& known) {
  const std::vector<std::string> near = nearest_names(typed, known);
  if (near.empty()) return "";
  if (near.size() == 1) return fmt::format(" (did you mean {}?)", near[0]);
  return fmt::format(" (did you mean {} or {}?)",
                     fmt::join(std::vector<std::string>(near.begin(), near.end() - 1), ", "), near.back());
}

}  // namespace infer_plan
