// Thrown by a command to end with a given exit code after printing (e.g. `sweep --check` = 1
// when an expectation fails); main() returns the code.
#pragma once

namespace infer_plan::apps {

struct ExitCode {
  int code;
};

}  // namespace infer_plan::apps
