// The quality comparison `quality` prints and `report --quality` appends: a reference model and
// the plan's weight and KV types on one text (runtime/quality), beside what they buy.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "planner/core/json_fields.hpp"
#include "planner/plan/plan.hpp"

namespace infer_plan::apps {

// The metadata key `gguf write` sets on its files: their weights are synthetic.
inline constexpr std::string_view kSyntheticWeightsKey = "infer_plan.synthetic_weights";

struct QualityInputs {
  std::string text_file;           // empty: the built-in text
  std::string reference = "F16";   // synthetic reference weights (a .gguf's are its own)
  uint64_t context = 512;          // tokens per chunk
  uint64_t chunks = 0;             // at most (0: all)
  uint64_t seed = 1;               // synthetic weights
  unsigned threads = 0;
  bool quiet = false;
};

// The figures as `quality --json` prints them (docs/json.md). `plan`'s weights and KV are the
// compared model's; the reference keeps KV F16.
Json measure_quality(Plan plan, const QualityInputs& in);
// The text lines `quality` prints for them.
std::string quality_text(const Json& q);

}  // namespace infer_plan::apps
