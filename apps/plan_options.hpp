// The flags that assemble a Plan (--model, --hw, --weights, --kv, --ctx, ...), shared by every
// command that answers a question about a configuration. A --plan file is read first; flags
// given on the command line override its fields.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "planner/plan/plan.hpp"

namespace infer_plan::apps {

// For flags bound to unsigned integers: CLI11 would otherwise wrap "-3" into 2^64 - 3.
inline const CLI::Validator kNonNegativeCount(
    [](std::string& text) {
      return !text.empty() && text[0] == '-' ? "'" + text + "' is negative; expected a whole number >= 0"
                                             : std::string();
    },
    "", "non-negative count");

struct PlanOptions {
  std::string plan_file;
  std::string model, hw, engine, weights, weights_size, kv, kv_k, kv_v, ctx;
  std::optional<uint64_t> requests, tp, output;
  std::optional<double> decode_ms, deadline_s, scale;
  std::vector<std::string> reserves;  // NAME=SIZE

  // Which groups of flags the command takes (bits, combined with |).
  static constexpr unsigned kModel = 1;      // --model --scale --kv --ctx --requests --tp --plan
  static constexpr unsigned kMemory = 2;     // --hw --engine --weights --weights-size --reserve
  static constexpr unsigned kGeneration = 4; // --output --decode-ms --deadline
  void add_to(CLI::App& cmd, unsigned groups);
  Plan resolve() const;  // throws InputError with the flag's name
};

struct OutputOptions {
  bool json = false;
  bool explain = false;
  void add_to(CLI::App& cmd);
};

}  // namespace infer_plan::apps
