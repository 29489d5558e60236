// Token ids given on the command line ("1, 2,3"), for run --prompt-tokens and tokenize --ids.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "planner/core/input_error.hpp"

namespace infer_plan::apps {

// Ids within uint32 (the vocabulary bound is the caller's check); InputError naming `flag`.
inline std::vector<uint32_t> parse_token_ids(const std::string& text, std::string_view flag) {
  std::vector<uint32_t> ids;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    uint64_t value = 0;
    const auto [rest, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || rest != item.data() + item.size() || value > UINT32_MAX)
      throw InputError(fmt::format("{}: '{}' is not a token id; expected ids (0 to {}) separated by commas, e.g. "
                                   "1,2,3", flag, item, UINT32_MAX));
    ids.push_back(static_cast<uint32_t>(value));
    begin = end + 1;
  }
  return ids;
}

}  // namespace infer_plan::apps
