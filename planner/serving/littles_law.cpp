// Little's law solved for the missing quantity; all checks name the caller's flag or field.
#include "planner/serving/littles_law.hpp"

#include <cmath>
#include <fmt/format.h>

#include "planner/core/input_error.hpp"

namespace infer_plan {
namespace {

void check_positive(const std::optional<double>& v, std::string_view what, std::string_view unit) {
  if (!v) return;
  if (!std::isfinite(*v) || *v <= 0)
    throw InputError(fmt::format("{}: {} is not a positive, finite number of {}", what, *v, unit));
}

}  // namespace

LittleResult solve_littles_law(const LittleQuery& q) {
  const int given = int{q.rate_per_s.has_value()} + int{q.mean_sojourn_s.has_value()} +
                    int{q.mean_in_system.has_value()};
  if (given != 2)
    throw InputError(fmt::format(
        "Little's law n = lambda x T needs exactly two of {} (req/s), {} (s), {} (requests); "
        "{} given{}",
        q.rate_what, q.sojourn_what, q.in_system_what, given,
        given == 3 ? ": leave out the one to solve for" : ""));
  check_positive(q.rate_per_s, q.rate_what, "requests per second");
  check_positive(q.mean_sojourn_s, q.sojourn_what, "seconds");
  check_positive(q.mean_in_system, q.in_system_what, "requests");

  LittleResult r;
  if (!q.mean_in_system) {
    r.rate_per_s = *q.rate_per_s;
    r.mean_sojourn_s = *q.mean_sojourn_s;
    r.mean_in_system = r.rate_per_s * r.mean_sojourn_s;
    r.solved_for = LittleUnknown::in_system;
    r.derivation = fmt::format("n = lambda x T = {:g} req/s x {:g} s = {:g} requests in the system",
                               r.rate_per_s, r.mean_sojourn_s, r.mean_in_system);
  } else if (!q.rate_per_s) {
    r.mean_in_system = *q.mean_in_system;
    r.mean_sojourn_s = *q.mean_sojourn_s;
    r.rate_per_s = r.mean_in_system / r.mean_sojourn_s;
    r.solved_for = LittleUnknown::rate;
    r.derivation = fmt::format("lambda = n / T = {:g} requests / {:g} s = {:g} req/s",
                               r.mean_in_system, r.mean_sojourn_s, r.rate_per_s);
  } else {
    r.mean_in_system = *q.mean_in_system;
    r.rate_per_s = *q.rate_per_s;
    r.mean_sojourn_s = r.mean_in_system / r.rate_per_s;
    r.solved_for = LittleUnknown::sojourn;
    r.derivation = fmt::format("T = n / lambda = {:g} requests / {:g} req/s = {:g} s",
                               r.mean_in_system, r.rate_per_s, r.mean_sojourn_s);
  }
  return r;
}

}  // namespace infer_plan
