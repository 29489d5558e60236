// Served runs as calibration rows (planner/calibration/llama_bench's BenchRow): each gives decode steps at a
// batch and a context, where llama-bench gives one sequence.
//   - `vllm bench serve --save-result` JSON (or its --append-result lines): one row, the median
//     inter-token latency (else the mean, else TPOT) as the step, at the mean number of requests in
//     flight (Little's law: request_throughput x mean end-to-end latency, which is mean_e2el_ms
//     or TTFT + TPOT x (output - 1)) and the mean context (input + output / 2). Weights and KV are
//     taken as BF16 (vLLM's dtype "auto" for today's checkpoints) unless the object says
//     "weights" / "kv_cache_dtype"; the model from "model_id" (or --model).
//   - infer-plan's own `report --json`: its "decode_steps", one row per batch size the run held
//     for at least 3 steps (their median), with the plan's model, scale, weights and KV types.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "planner/core/json_fields.hpp"
#include "planner/calibration/llama_bench.hpp"

namespace infer_plan {

// The rows of `j` when it is one of these formats; nullopt otherwise. InputError (origin, field,
// what was expected) when it is one of them but unusable.
std::optional<std::vector<BenchRow>> served_rows(const Json& j, const std::string& origin);

}  // namespace infer_plan
