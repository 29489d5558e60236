// How long the serving simulation takes for 10^4 requests (target: well under 0.5 s, so a sweep or
// a max-rate bisection of ~20 runs stays interactive): a Qwen3-8B-like server on one GPU under a
// moderate load, and under overload with a deadline (every arrival then runs a lookahead) by each
// prediction rule. Counters: simulated requests per second (items_per_second), decode iterations
// and rejections per run.
//   bench_serving_sim [--benchmark_repetitions=5 ...]   (Google Benchmark's flags)
#include <benchmark/benchmark.h>

#include "planner/serving/serving_sim.hpp"

using namespace infer_plan;

namespace {

// ~26 ms decode iteration at batch 1 growing with batch and context, ~0.2 s prefill for 4K
// tokens; KV for 64 requests of 1K tokens.
ServerModel gpu_like() {
  ServerModel m;
  m.max_batch = 64;
  m.kv_capacity_tokens = 64 * 1024;
  m.decode_iteration_s = [](uint64_t batch, uint64_t context) {
    return 0.026 + 0.0002 * static_cast<double>(batch) + 2e-8 * static_cast<double>(context);
  };
  m.prefill_s = [](uint64_t prompt) { return 0.005 + 4.7e-5 * static_cast<double>(prompt); };
  return m;
}

ServingLoad load(double rate_per_s, bool deadline, DeadlinePrediction rule) {
  ServingLoad l;
  l.requests = 10'000;
  l.prompt_tokens = {128, 768};
  l.output_tokens = {32, 256};
  l.seed = 1;
  l.rate_per_s = rate_per_s;
  if (deadline) l.deadline_s = 10;
  l.deadline_prediction = rule;
  return l;
}

void simulate(benchmark::State& state, const ServingLoad& l) {
  const ServerModel server = gpu_like();
  ServingResult r;
  for (auto _ : state) {
    r = simulate_serving(server, l);
    benchmark::DoNotOptimize(r.completed);
  }
  // items_per_second: simulated requests per second of simulation
  state.SetItemsProcessed(static_cast<int64_t>(l.requests) * state.iterations());
  state.counters["decode_iterations"] = static_cast<double>(r.decode_iterations);
  state.counters["rejected"] = static_cast<double>(r.rejected.total());
}

void BM_moderate_load(benchmark::State& s) { simulate(s, load(5, false, DeadlinePrediction::load_persists)); }
void BM_overload_deadline_persists(benchmark::State& s) { simulate(s, load(20, true, DeadlinePrediction::load_persists)); }
void BM_overload_deadline_lower_bound(benchmark::State& s) {
  simulate(s, load(20, true, DeadlinePrediction::no_more_arrivals));
}
BENCHMARK(BM_moderate_load)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_overload_deadline_persists)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_overload_deadline_lower_bound)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
