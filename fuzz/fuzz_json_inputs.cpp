// libFuzzer target for every JSON a user hands infer-plan: a plan (read, then resolved: model,
// profile, weights, fit), a hardware profile, a scenario, and a Hugging Face config.json. Any
// byte string must parse or raise an InputError naming the field -- never crash, hang, or wrap.
#include <algorithm>
#include <cstdint>
#include <string_view>

#include "planner/calibration/step_prior.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/model/hw_profile.hpp"
#include "planner/model/model_spec.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/predict.hpp"
#include "planner/plan/scenario.hpp"

namespace {

template <typename Body>
void refused_or_read(Body body) {
  try {
    body();
  } catch (const infer_plan::InputError&) {
  }
}

}  // namespace

// The engines' step models are fitted once per process (llama.cpp's 15 built-in devices); fitted
// here, before the clock of the first input starts, so that a plan without an engine is timed on
// its own work.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  using namespace infer_plan;
  const HwProfile h200 = load_hw_profile("h200");
  for (const char* engine : {"llama.cpp", "vllm", "sglang"}) (void)engine_step_calibration(h200, engine);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infer_plan;
  Json j;
  try {
    j = parse_json_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const InputError&) {
    return 0;
  }
  refused_or_read([&] {
    Plan plan = plan_from_json(j, "plan.json");
    if (plan.load) plan.load->requests = std::min<uint64_t>(plan.load->requests, 1000);  // a second per input at most
    (void)resolve_plan(plan);
  });
  refused_or_read([&] { (void)hw_profile_from_json(j, "fuzz", "profile.json", [](const std::string& n) { return load_link(n); }); });
  refused_or_read([&] { (void)scenario_from_json(j, "scenario.json"); });
  refused_or_read([&] { (void)parameter_count(model_spec_from_hf_config(j, "fuzz", "config.json")); });
  return 0;
}
