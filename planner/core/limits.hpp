// The ranges every input shares, in one place: a plan file, a CLI flag and a benchmark's file
// are refused beyond the same limits, each far past any deployment but short of overflow.
#pragma once
#include <cstdint>

namespace infer_plan {

inline constexpr uint64_t kMaxContextTokens = uint64_t{1} << 24;  // 16M tokens per request
inline constexpr uint64_t kMaxConcurrentRequests = 1'000'000;     // requests (or sequences) in flight at once
inline constexpr uint64_t kMaxSimulatedRequests = 10'000'000;     // arrivals one serving simulation draws (~50 B of records each)
inline constexpr uint64_t kMaxScenarioPoints = 10'000;             // predictions one scenario sweeps (2 s of plain ones)
inline constexpr uint64_t kMaxTensorParallel = 64;                // devices one model is split across
inline constexpr uint64_t kMaxPdWorkers = 1024;                   // prefill or decode workers of a disaggregated server
inline constexpr double kMaxPricePerHour = 1e6;                   // US dollars per device-hour
inline constexpr double kMaxBoardPowerW = 1e5;                    // watts: a board, not a building
inline constexpr double kMaxTimeS = 1e7;                          // any time or deadline: 116 days
inline constexpr double kMaxArrivalRate = 1e6;                    // requests per second
// A model shrunk for a CPU run: below this every width of the built-in models is at its floor.
inline constexpr double kMinModelScale = 1e-3;
inline constexpr double kMaxRateBytesPerS = 1e18;                 // a memory or link bandwidth: 1 EB/s
inline constexpr double kMaxOpsPerS = 1e24;                       // a device's compute
// Any size given in bytes (weights, reserves, a device's memory): 1024 PiB. No memory or file
// comes near, and sums of a few such sizes stay far from 2^63, where signed margins would wrap.
inline constexpr uint64_t kMaxBytes = uint64_t{1} << 60;

// A model's shape, as config.json or a GGUF states it. Each bound is 8-30x the largest published
// model's (hidden 16384, 126 layers, 128 heads, head_dim 256, FFN 53248, vocab 262144, 384
// experts), and together they keep every tensor's element count, and their sum, below 2^63.
inline constexpr uint64_t kMaxModelWidth = uint64_t{1} << 17;     // hidden_size
inline constexpr uint64_t kMaxModelLayers = uint64_t{1} << 12;    // num_hidden_layers
inline constexpr uint64_t kMaxAttentionHeads = uint64_t{1} << 12; // query or KV heads
inline constexpr uint64_t kMaxHeadDim = uint64_t{1} << 12;
inline constexpr uint64_t kMaxFfnWidth = uint64_t{1} << 20;       // dense or per-expert FFN
inline constexpr uint64_t kMaxVocab = uint64_t{1} << 24;
inline constexpr uint64_t kMaxExperts = uint64_t{1} << 12;
inline constexpr uint64_t kMaxParameters = uint64_t{1} << 44;     // 17.6 T; the largest published is ~2 T

}  // namespace infer_plan
