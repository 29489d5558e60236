// Thrown by a command to end with a given exit code after printing (e.g. `sweep --check` = 1
// when an expectation fails); main() returns the code.
#pragma once

namespace infer_plan::apps {

struct ExitCode {
  int code;
};

// `fit` answering DOES NOT FIT (one plan, not a sweep's table): 1, as a failed `sweep --check`
// and `report --check`; 2 is bad input, 3 an internal error.
inline constexpr int kDoesNotFitExitCode = 1;

}  // namespace infer_plan::apps
