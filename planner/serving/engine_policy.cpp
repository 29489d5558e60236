#include "planner/serving/engine_policy.hpp"

#include "planner/core/limits.hpp"

namespace infer_plan {
namespace {

constexpr uint64_t kLargeDeviceBytes = uint64_t{70} << 30;  // vLLM's threshold for its larger defaults

}  // namespace

EnginePolicy engine_policy(std::string_view engine, const HwProfile& hw) {
  if (engine == "vllm") {
    const bool large = hw.memory_capacity_bytes >= kLargeDeviceBytes && !hw.name.starts_with("a100");
    return large ? EnginePolicy{1024, 8192} : EnginePolicy{256, 2048};
  }
  if (engine == "sglang") return {kMaxConcurrentRequests, 8192};
  if (engine == "trtllm") return {2048, 8192};
  return {};
}

}  // namespace infer_plan
