#include "apps/plan_verifier.hpp"

namespace infer_plan::apps {
namespace {

PlanVerifier& registered() {
  static PlanVerifier verifier;
  return verifier;
}

}  // namespace

void set_plan_verifier(PlanVerifier verifier) { registered() = std::move(verifier); }
const PlanVerifier& plan_verifier() { return registered(); }

}  // namespace infer_plan::apps
