// Little's law, n = lambda * T: the mean number of requests in a stable system equals
// the arrival rate times the mean time each spends in it. Given two of the three, solve for the
// third. It says nothing about bursts or unstable loads (serving_sim.hpp covers those).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infer_plan {

struct LittleQuery {
  std::optional<double> rate_per_s;      // lambda: arrivals per second
  std::optional<double> mean_sojourn_s;  // T: mean time from arrival to departure
  std::optional<double> mean_in_system;  // n: mean number of requests present
  // Names for error messages (the CLI passes its flags: "--rate", "--sojourn", "--in-system").
  std::string_view rate_what = "rate_per_s";
  std::string_view sojourn_what = "mean_sojourn_s";
  std::string_view in_system_what = "mean_in_system";
};

enum class LittleUnknown { in_system, rate, sojourn };

struct LittleResult {
  double rate_per_s = 0;
  double mean_sojourn_s = 0;
  double mean_in_system = 0;
  LittleUnknown solved_for = LittleUnknown::in_system;
  std::string derivation;  // "n = lambda x T = 4 req/s x 0.5 s = 2 requests"
};

// Exactly two of the three must be given, each finite and > 0; otherwise InputError naming the
// quantities (none, one, all three, zero, negative, not finite).
LittleResult solve_littles_law(const LittleQuery& query);

}  // namespace infer_plan
