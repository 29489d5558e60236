// How `advise --verify` executes a plan: the runtime's half of the CLI registers `report` here
// (apps/command_report.cpp); a build without the runtime leaves it empty, and --verify says so.
#pragma once
#include <functional>
#include <string>

namespace infer_plan::apps {

// Predicts and executes the plan file on `backend` ("cpu", "cuda"), probing the machine first,
// and prints report's predicted / measured / error table.
using PlanVerifier = std::function<void(const std::string& plan_file, const std::string& backend)>;
void set_plan_verifier(PlanVerifier verifier);
const PlanVerifier& plan_verifier();

}  // namespace infer_plan::apps
