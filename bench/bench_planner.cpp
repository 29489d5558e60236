// How many closed-form plans a sweep evaluates per second on one core (target: >= 10^6). A plan
// here is one point of a cartesian sweep (context x requests x K/V type x batch) evaluated the
// way `sweep` does, without JSON: fit (weights, KV, headroom, max requests and context) and the
// roofline's decode step and TPOT. Models and profiles are loaded once, as a sweep does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "planner/catalog/catalog.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/weights/weights_size.hpp"

using namespace infer_plan;

int main() {
  const ModelSpec spec = load_model("qwen3-8b");
  const HwProfile hw = load_hw_profile("h200");
  const PlanWeights w = plan_weights(spec, "Q8_0", std::nullopt);
  const GgmlType kv_types[] = {GgmlType::BF16, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0};
  std::vector<Roofline> rooflines;
  for (GgmlType t : kv_types) rooflines.emplace_back(spec, w.layout, KvTypes{t, t}, hw);

  const uint64_t contexts = 1024, requests = 64;  // 1024 x 64 x 4 = 262,144 plans per pass
  double checksum = 0;
  auto pass = [&] {
    Plan plan;
    uint64_t n = 0;
    for (uint64_t c = 1; c <= contexts; ++c) {
      plan.context = c * 32;
      for (uint64_t r = 1; r <= requests; ++r) {
        plan.requests = r;
        for (size_t k = 0; k < 4; ++k) {
          plan.kv = {kv_types[k], kv_types[k]};
          const FitResult fit = fit_memory(spec, hw, plan, w.bytes, w.label, false);
          const StepCost step = rooflines[k].decode_step(r, plan.context);
          checksum += static_cast<double>(fit.max_requests) + step.time_s;
          ++n;
        }
      }
    }
    return n;
  };
  pass();  // warm-up
  std::vector<double> rates;
  uint64_t plans = 0;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    plans = pass();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(static_cast<double>(plans) / s);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("bench_planner: %llu plans per pass (fit + roofline decode step), 7 repeats, one core\n",
              static_cast<unsigned long long>(plans));
  std::printf("  median %.3g plans/s (min %.3g, max %.3g); %.0f ns per plan; target >= 1e6 plans/s: %s\n",
              rates[3], rates.front(), rates.back(), 1e9 / rates[3], rates[3] >= 1e6 ? "met" : "NOT met");
  std::printf("  (checksum %.6g)\n", checksum);
  return 0;
}
