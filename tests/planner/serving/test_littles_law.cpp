// SPEC 6 / SPEC 9 "Little: 4 req/s * 0.5 s = 2; * 2 s = 8", solved each way, and the refusals.
#include <cmath>
#include <doctest/doctest.h>
#include <limits>

#include "planner/core/input_error.hpp"
#include "planner/serving/littles_law.hpp"

using namespace infer_plan;

TEST_CASE("SPEC 6: 4 req/s x 0.5 s = 2 requests; x 2 s = 8") {
  LittleQuery q;
  q.rate_per_s = 4;
  q.mean_sojourn_s = 0.5;
  LittleResult r = solve_littles_law(q);
  CHECK(r.solved_for == LittleUnknown::in_system);
  CHECK(r.mean_in_system == doctest::Approx(2.0));
  CHECK(r.derivation == "n = lambda x T = 4 req/s x 0.5 s = 2 requests in the system");
  q.mean_sojourn_s = 2;
  CHECK(solve_littles_law(q).mean_in_system == doctest::Approx(8.0));
}

TEST_CASE("solved for the rate and for the sojourn") {
  LittleQuery q;
  q.mean_in_system = 8;
  q.mean_sojourn_s = 2;  // 8 / 2 s = 4 req/s
  LittleResult r = solve_littles_law(q);
  CHECK(r.solved_for == LittleUnknown::rate);
  CHECK(r.rate_per_s == doctest::Approx(4.0));

  LittleQuery t;
  t.mean_in_system = 2;
  t.rate_per_s = 4;  // 2 / 4 req/s = 0.5 s
  r = solve_littles_law(t);
  CHECK(r.solved_for == LittleUnknown::sojourn);
  CHECK(r.mean_sojourn_s == doctest::Approx(0.5));
  CHECK(r.derivation == "T = n / lambda = 2 requests / 4 req/s = 0.5 s");
}

TEST_CASE("refuses none, one or all three given, and zero, negative or non-finite values") {
  LittleQuery none;
  none.rate_what = "--rate";
  CHECK_THROWS_WITH_AS(solve_littles_law(none), doctest::Contains("needs exactly two of --rate"), InputError);
  LittleQuery one;
  one.rate_per_s = 4;
  CHECK_THROWS_WITH_AS(solve_littles_law(one), doctest::Contains("1 given"), InputError);
  LittleQuery all;
  all.rate_per_s = 4;
  all.mean_sojourn_s = 0.5;
  all.mean_in_system = 2;
  CHECK_THROWS_WITH_AS(solve_littles_law(all), doctest::Contains("leave out the one to solve for"), InputError);

  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    LittleQuery q;
    q.rate_per_s = 4;
    q.mean_sojourn_s = bad;
    q.sojourn_what = "--sojourn";
    CHECK_THROWS_WITH_AS(solve_littles_law(q), doctest::Contains("--sojourn"), InputError);
  }
}
