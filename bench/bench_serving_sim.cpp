// How long the serving simulation takes for 10^4 requests (target: well under 0.5 s, so a
// sweep or a max-rate bisection of ~20 runs stays interactive). Warm-up, then repeats; prints
// the median and spread, and the cost per simulated request and per decode iteration.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "planner/serving/serving_sim.hpp"

using namespace infer_plan;

namespace {

struct Scenario {
  const char* name;
  ServerModel server;
  ServingLoad load;
};

// A Qwen3-8B-like server on one GPU: ~26 ms decode iteration at batch 1 growing with batch and
// context, ~0.2 s prefill for 4K tokens; KV for 64 requests of 1K tokens.
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

std::vector<Scenario> scenarios() {
  std::vector<Scenario> s;
  ServingLoad base;
  base.requests = 10'000;
  base.prompt_tokens = {128, 768};
  base.output_tokens = {32, 256};
  base.seed = 1;
  ServingLoad light = base;
  light.rate_per_s = 5;
  s.push_back({"moderate load, no deadline", gpu_like(), light});
  ServingLoad heavy = base;
  heavy.rate_per_s = 20;  // past capacity: the deadline rejects, every arrival runs a lookahead
  heavy.deadline_s = 10;
  s.push_back({"overload, deadline 10 s (persists)", gpu_like(), heavy});
  heavy.deadline_prediction = DeadlinePrediction::no_more_arrivals;
  s.push_back({"overload, deadline 10 s (lower-bound)", gpu_like(), heavy});
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 11;
  std::printf("serving simulation, 10^4 requests, %d repeats after one warm-up (target < 0.5 s each)\n", repeats);
  for (const Scenario& sc : scenarios()) {
    ServingResult r = simulate_serving(sc.server, sc.load);  // warm-up
    std::vector<double> seconds;
    for (int i = 0; i < repeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      r = simulate_serving(sc.server, sc.load);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    std::printf("  %-38s median %7.2f ms  (min %.2f, max %.2f)  %.2f us/request  %.0f ns per run iteration (lookaheads incl.)"
                "  [%llu iterations, %llu rejected, %s]\n",
                sc.name, 1e3 * median, 1e3 * seconds.front(), 1e3 * seconds.back(),
                1e6 * median / static_cast<double>(r.requests),
                1e9 * median / static_cast<double>(std::max<uint64_t>(1, r.decode_iterations)),
                static_cast<unsigned long long>(r.decode_iterations),
                static_cast<unsigned long long>(r.rejected.total()), r.stable ? "stable" : "unstable");
  }
  return 0;
}
