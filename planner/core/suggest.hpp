// "Did you mean": the names of a closed list nearest to what was typed, for error messages.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace infer_plan {

// At most `limit` of `known`, nearest first, ignoring case: first the names that begin with what
// was typed or that it begins with (h100 -> h100-pcie, h100-sxm), then those within an edit
// distance of a third of its length (at least 1) or that abbreviate it or it abbreviates (three
// letters or more in order, the first the same: ctx and contex). Empty when none is near.
std::vector<std::string> nearest_names(std::string_view typed, const std::vector<std::string>& known, size_t limit = 3);

// " (did you mean X?)", " (did you mean X or Y?)", " (did you mean X, Y or Z?)", or "" when none is near.
std::string did_you_mean(std::string_view typed, const std::vector<std::string>& known);

// Edits of one byte each (insertion, deletion, substitution, or two neighbours swapped: the
// commonest typo), ignoring case: the optimal string alignment distance.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace infer_plan
