// Units: decimal vs binary sizes (SPEC "Units"), exact integer rounding, strict unit names.
#include <doctest/doctest.h>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/core/units.hpp"

using namespace infer_plan;

TEST_CASE("sizes: decimal GB vs binary GiB") {
  CHECK(parse_bytes("96 GB", "t") == 96'000'000'000ull);
  CHECK(parse_bytes("8 GiB", "t") == 8ull << 30);
  CHECK(parse_bytes("8GiB", "t") == 8ull << 30);
  CHECK(parse_bytes("1024", "t") == 1024);
  CHECK(parse_bytes("512 MiB", "t") == 512ull << 20);
  CHECK(parse_bytes("0.5 KiB", "t") == 512);
  // 79.81 GiB = 7981 * 2^30 / 100 = 85695334973.44 -> 85695334973 (hand calculation)
  CHECK(parse_bytes("79.81GiB", "t") == 85'695'334'973ull);
  // SPEC: 96e9 B = 89.41 GiB
  CHECK(to_gib(parse_bytes("96 GB", "t")) == doctest::Approx(89.4069671631).epsilon(1e-10));
}

TEST_CASE("sizes: bad input names the field and the accepted units") {
  CHECK_THROWS_WITH_AS(parse_bytes("96 gb", "memory.capacity"),
                       doctest::Contains("memory.capacity: unknown unit 'gb'"), InputError);
  CHECK_THROWS_WITH_AS(parse_bytes("-1 GiB", "f"), doctest::Contains("negative"), InputError);
  CHECK_THROWS_WITH_AS(parse_bytes("GiB", "f"), doctest::Contains("does not start with a number"), InputError);
  CHECK_THROWS_WITH_AS(parse_bytes("1. GiB", "f"), doctest::Contains("decimal point"), InputError);
  CHECK_THROWS_WITH_AS(parse_bytes("20 EiB", "f"), doctest::Contains("KiB, MiB, GiB"), InputError);
  CHECK_THROWS_WITH_AS(parse_bytes("99999999999 PiB", "f"), doctest::Contains("2^60"), InputError);
  // 10000 PiB is below 2^64 but past 2^63, where a signed margin wraps and "fits" (issue 15).
  CHECK_THROWS_WITH_AS(parse_bytes("10000 PiB", "f"), doctest::Contains("f: '10000 PiB' is larger than 1024 PiB"),
                       InputError);
  CHECK(parse_bytes("1024 PiB", "f") == kMaxBytes);
  CHECK_THROWS_AS(parse_bytes("1e9", "f"), InputError);
}

TEST_CASE("rates and compute") {
  CHECK(parse_rate("64 GB/s", "t") == doctest::Approx(64e9));
  CHECK(parse_rate("4.8 TB/s", "t") == doctest::Approx(4.8e12));
  CHECK(parse_rate("25 Gb/s", "t") == doctest::Approx(3.125e9));  // SPEC 11: 25 GbE = 3.125 GB/s
  CHECK(parse_flops("989 TFLOPS", "t") == doctest::Approx(989e12));
  CHECK(parse_flops("624 TOPS", "t") == doctest::Approx(624e12));
  CHECK_THROWS_WITH_AS(parse_rate("64 GB", "link"), doctest::Contains("GB/s"), InputError);
  CHECK_THROWS_AS(parse_flops("989 tflops", "t"), InputError);
  // SPEC Units: 2592 MiB over 64 GB/s = 42.47 ms
  CHECK(static_cast<double>(2592 * MiB) / parse_rate("64 GB/s", "t") * 1e3 == doctest::Approx(42.47).epsilon(1e-3));
}

TEST_CASE("token counts") {
  CHECK(parse_tokens("8192", "--ctx") == 8192);
  CHECK(parse_tokens("8K", "--ctx") == 8192);
  CHECK(parse_tokens("32k", "--ctx") == 32768);
  CHECK(parse_tokens("1M", "--ctx") == 1048576);
  CHECK_THROWS_WITH_AS(parse_tokens("8 K", "--ctx"), doctest::Contains("--ctx"), InputError);
  CHECK_THROWS_AS(parse_tokens("-5", "--ctx"), InputError);
  CHECK_THROWS_AS(parse_tokens("K", "--ctx"), InputError);
}

TEST_CASE("formatting") {
  CHECK(format_bytes(147456) == "144 KiB");
  CHECK(format_bytes(1152 * MiB) == "1.12 GiB");
  CHECK(format_bytes(612 * MiB) == "612 MiB");
  CHECK(format_bytes(100) == "100 B");
  CHECK(format_gib(-0.56 * GiB) == "-0.56 GiB");
  CHECK(format_rate(4.8e12) == "4.8 TB/s");
  CHECK(format_rate(64e9) == "64 GB/s");
  CHECK(format_flops(989e12) == "989 TFLOPS");
  CHECK(format_int_ops(1979e12) == "1979 TOPS");  // H200 INT8, as the datasheet writes it (not 1.979 PFLOPS)
  CHECK(format_int_ops(624e9) == "624 GOPS");
}
