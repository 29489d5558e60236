// The one error type the planner throws for bad user input (file, field, flag, value).
// apps/ maps it to exit code 2; broken invariants are asserts, not InputErrors.
#pragma once
#include <stdexcept>
#include <string>

namespace infer_plan {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace infer_plan
