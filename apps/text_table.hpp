// Aligned text tables for people: left-aligned text columns, right-aligned numbers.
#pragma once
#include <string>
#include <vector>

namespace infer_plan::apps {

struct TextTable {
  std::vector<std::string> headers;
  std::vector<bool> right_aligned;  // per column; missing = left
  std::vector<std::vector<std::string>> rows;

  std::string render(std::string_view indent = "") const;
};

}  // namespace infer_plan::apps
