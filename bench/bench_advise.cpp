// How long `advise` searches (issue 20: under 1 s on one core for a single device's space, under
// 10 s for a 64-GPU space). Single device: Llama-3.1-8B on one H100 at 4 req/s, every default
// weight and KV type, six max-batch limits. 64 GPUs: Llama-3.1-70B on H100, H200 and A100 at 40
// req/s, tensor parallel 1-8 and up to 64 devices of replicas. Counters: configurations in the
// space, simulations run, plans meeting the SLOs.
//   bench_advise [--benchmark_repetitions=3 ...]   (Google Benchmark's flags)
#include <benchmark/benchmark.h>

#include "planner/advise/advise.hpp"

using namespace infer_plan;

namespace {

AdviseQuery query(const char* model, std::vector<std::string> hw, std::vector<uint64_t> tp, double rate) {
  AdviseQuery q;
  q.model = model;
  q.hw = std::move(hw);
  q.weights = {"BF16", "FP8", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "AWQ_INT4_G128", "Q3_K_M", "Q2_K"};
  q.kv = {{GgmlType::BF16, GgmlType::BF16}, {GgmlType::Q8_0, GgmlType::Q8_0}, {GgmlType::Q4_0, GgmlType::Q4_0}};
  q.tp = std::move(tp);
  q.max_batch = {8, 16, 32, 64, 128, 256};
  q.max_devices = 64;
  q.rate_per_s = rate;
  q.prompt = {512, 2048};
  q.output = {128, 512};
  q.slo.at_most(SloMetric::ttft, 2);
  q.slo.at_most(SloMetric::tpot, 0.05);
  return q;
}

void search(benchmark::State& state, const AdviseQuery& q) {
  AdviseResult r;
  for (auto _ : state) {
    r = advise(q);
    benchmark::DoNotOptimize(r.ranked.data());
  }
  state.counters["space"] = static_cast<double>(r.space);
  state.counters["simulations"] = static_cast<double>(r.simulations);
  state.counters["ranked"] = static_cast<double>(r.ranked.size());
}

void BM_advise_single_device(benchmark::State& s) { search(s, query("llama-3.1-8b", {"h100-sxm"}, {1}, 4)); }
void BM_advise_64_gpus(benchmark::State& s) {
  search(s, query("llama-3.1-70b", {"h100-sxm", "h200", "a100-80gb"}, {1, 2, 4, 8}, 40));
}
BENCHMARK(BM_advise_single_device)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_advise_64_gpus)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
