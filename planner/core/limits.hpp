// The ranges every input shares, in one place: a plan file, a CLI flag and a benchmark's file
// are refused beyond the same limits, each far past any deployment but short of overflow.
#pragma once
#include <cstdint>

namespace infer_plan {

inline constexpr uint64_t kMaxContextTokens = uint64_t{1} << 24;  // 16M tokens per request
inline constexpr uint64_t kMaxConcurrentRequests = 1'000'000;     // requests (or sequences) in flight at once
inline constexpr uint64_t kMaxSimulatedRequests = 10'000'000;     // arrivals one serving simulation draws (~50 B of records each)
inline constexpr uint64_t kMaxTensorParallel = 64;                // devices one model is split across
// Any size given in bytes (weights, reserves, a device's memory): 1024 PiB. No memory or file
// comes near, and sums of a few such sizes stay far from 2^63, where signed margins would wrap.
inline constexpr uint64_t kMaxBytes = uint64_t{1} << 60;

}  // namespace infer_plan
