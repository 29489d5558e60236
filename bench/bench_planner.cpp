// How many closed-form plans a sweep evaluates per second on one core (target: >= 10^6). A plan
// here is one point of a cartesian sweep (context x requests x K/V type) evaluated the way `sweep`
// does, without JSON: fit (weights, KV, headroom, max requests and context) and the roofline's
// decode step. Models and profiles are loaded once, as a sweep does.
//   bench_planner [--benchmark_repetitions=5 --benchmark_format=json ...]   (Google Benchmark's flags)
#include <benchmark/benchmark.h>

#include <vector>

#include "planner/catalog/catalog.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/plan/plan.hpp"
#include "planner/weights/weights_size.hpp"

using namespace infer_plan;

namespace {

void BM_fit_and_decode_step(benchmark::State& state) {
  const ModelSpec spec = load_model("qwen3-8b");
  const HwProfile hw = load_hw_profile("h200");
  const PlanWeights w = plan_weights(spec, "Q8_0", std::nullopt);
  const GgmlType kv_types[] = {GgmlType::BF16, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0};
  std::vector<Roofline> rooflines;
  for (GgmlType t : kv_types) rooflines.emplace_back(spec, w.layout, KvTypes{t, t}, hw);
  Plan plan;
  uint64_t point = 0, plans = 0;
  for (auto _ : state) {
    // The sweep's next point: context 32..32768 x requests 1..64 x four KV types.
    const uint64_t k = point % 4, r = point / 4 % 64 + 1, c = point / 256 % 1024 + 1;
    ++point;
    plan.context = c * 32;
    plan.requests = r;
    plan.kv = {kv_types[k], kv_types[k]};
    const FitResult fit = fit_memory(spec, hw, plan, w.bytes, w.label, false);
    const StepCost step = rooflines[k].decode_step(r, plan.context);
    benchmark::DoNotOptimize(fit.max_requests);
    benchmark::DoNotOptimize(step.time_s);
    ++plans;
  }
  state.SetItemsProcessed(static_cast<int64_t>(plans));  // items_per_second: plans per second
}
BENCHMARK(BM_fit_and_decode_step);

}  // namespace

BENCHMARK_MAIN();
