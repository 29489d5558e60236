// "Did you mean" by hand: which names are near what was typed, and in what order.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "planner/core/suggest.hpp"

using namespace infer_plan;

TEST_CASE("edit distance: insertions, deletions, substitutions and swaps of one byte, case ignored") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("h200", "h100") == 1);
  CHECK(edit_distance("kitten", "sitting") == 3);  // the textbook pair: k->s, e->i, +g
  CHECK(edit_distance("QWEN3-8B", "qwen3-8b") == 0);
  CHECK(edit_distance("engien", "engine") == 1);  // i and e swapped: one edit
  CHECK(edit_distance("ca", "abc") == 3);        // no substring edited twice: not 2 (optimal string alignment)
}

TEST_CASE("nearest names: prefixes first, then near spellings and abbreviations; none far away") {
  const std::vector<std::string> hw{"a100-80gb", "h100-pcie", "h100-sxm", "h200", "rtx-4090"};
  // h100 begins h100-pcie and h100-sxm (the closer, 4 edits, first); h200 is one edit away
  CHECK(nearest_names("h100", hw) == std::vector<std::string>{"h100-sxm", "h100-pcie", "h200"});
  CHECK(nearest_names("H300", hw) == std::vector<std::string>{"h200"});
  CHECK(nearest_names("xyzzy", hw).empty());
  CHECK(nearest_names("h200", hw).empty());  // the name itself is not a suggestion
  // ctx abbreviates contex (c, t, x in order); 6 letters allow 2 edits, so ctx-size is not near
  const std::vector<std::string> flags{"ctx", "ctx-size", "cache-type-k", "model", "requests"};
  CHECK(nearest_names("contex", flags) == std::vector<std::string>{"ctx"});
  CHECK(nearest_names("modle", flags) == std::vector<std::string>{"model"});
  CHECK(did_you_mean("h100", hw) == " (did you mean h100-sxm, h100-pcie or h200?)");
  CHECK(did_you_mean("H300", hw) == " (did you mean h200?)");
  CHECK(did_you_mean("xyzzy", hw) == "");
}
