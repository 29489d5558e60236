// Hardware profiles: the built-ins parse, the seed's M2 Max arithmetic, strict field checks.
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"

using namespace infer_plan;

namespace {
LinkProfile no_links(const std::string& name) { return load_link(name); }

Json minimal() {
  return Json{{"memory", {{"capacity", "24 GB"}, {"bandwidth", "1 TB/s"}}}};
}
}  // namespace

TEST_CASE("built-in profiles and links") {
  for (const auto& n : builtin_hw_names()) {
    CAPTURE(n);
    const HwProfile p = load_hw_profile(n);
    CHECK(p.memory_capacity_bytes > 0);
    CHECK(p.memory_bandwidth_bytes_per_s > 0);
  }
  // a10, a100-40gb, a100-80gb, a100-80gb-pcie, a40, b200, dgx-spark, gb200, gh200, h100-nvl, h100-pcie,
  // h100-sxm, h20, h200, l4, l40, l40s, m1, m1-pro, m1-max-64gb, m1-ultra, m2, m2-pro, m2-max-96gb,
  // m2-ultra, m3, m3-pro, m3-max-36gb, m3-max-64gb, m3-ultra, m4, m4-pro, m4-max-36gb, m4-max,
  // mi300x, mi325x, mi355x, a10g, ryzen-ai-max-395, rtx-3090, rtx-4080, rtx-4090, rtx-5080, rtx-5090, rtx-6000-ada, rtx-a6000,
  // rtx-pro-6000-blackwell, rx-7900-xtx, t4, tesla-p40
  // (hwprofiles/calibrations/ holds data, not profiles)
  CHECK(builtin_hw_names().size() == 50);
  // the datasheets' bandwidths of the devices added last: B200 8 TB/s, MI300X 5.3 TB/s, MI325X
  // 6 TB/s, H100 NVL 3.9 TB/s, H20 4.0 TB/s, L4 300 GB/s, T4 320 GB/s, L40 864 GB/s, A10 600 GB/s,
  // RTX 5090 1792 GB/s, RTX 5080 960 GB/s, GB200 8 TB/s, MI355X 8 TB/s, A10G 600 GB/s, Ryzen AI Max+ 395
  // 256 GB/s (256 bits at 8000 MT/s)
  for (const auto& device : {std::pair{"b200", 8e12}, {"gb200", 8e12}, {"mi300x", 5.3e12}, {"mi325x", 6e12}, {"h100-nvl", 3.9e12},
                             {"h20", 4e12}, {"l4", 300e9}, {"t4", 320e9}, {"l40", 864e9}, {"a10", 600e9},
                             {"rtx-5090", 1792e9}, {"rtx-5080", 960e9}, {"mi355x", 8e12}, {"a10g", 600e9},
                             {"ryzen-ai-max-395", 256e9}}) {
    CAPTURE(device.first);  // (a pair, not a binding: clang before 16 cannot capture those)
    CHECK(load_hw_profile(device.first).memory_bandwidth_bytes_per_s == doctest::Approx(device.second).epsilon(1e-9));
  }
  // datasheet bandwidths: A100 80GB PCIe 1935 GB/s, H100 PCIe 2 TB/s, L40S 864 GB/s, RTX 3090
  // 936 GB/s, M2 Ultra 800 GB/s
  CHECK(load_hw_profile("a100-80gb-pcie").memory_bandwidth_bytes_per_s == 1.935e12);
  CHECK(load_hw_profile("h100-pcie").memory_bandwidth_bytes_per_s == 2e12);
  CHECK(load_hw_profile("l40s").memory_bandwidth_bytes_per_s == 864e9);
  CHECK(load_hw_profile("rtx-3090").memory_bandwidth_bytes_per_s == 936e9);
  CHECK(load_hw_profile("m2-ultra").memory_bandwidth_bytes_per_s == 800e9);
  CHECK(load_link("pcie-gen4-x16").bandwidth_bytes_per_s == 32e9);
  CHECK(load_link("pcie-gen5-x16").bandwidth_bytes_per_s == 64e9);
  CHECK(load_link("nvlink-c2c").bandwidth_bytes_per_s == 450e9);
  const HwProfile gh = load_hw_profile("gh200");
  REQUIRE(gh.host_links.size() == 1);
  CHECK(gh.host_links[0].name == "nvlink-c2c");
  CHECK(gh.host_links[0].bandwidth_bytes_per_s == 450e9);
  // GB200: 186 GB, dense BF16 2.5 PFLOPS, its Grace memory over NVLink-C2C
  const HwProfile gb = load_hw_profile("gb200");
  CHECK(gb.memory_capacity_bytes == 186'000'000'000ull);
  CHECK(gb.compute_ops_per_s.at("bf16") == 2500e12);
  REQUIRE(gb.host_links.size() == 1);
  CHECK(gb.host_links[0].name == "nvlink-c2c");
  CHECK(load_hw_profile("h200").compute_ops_per_s.at("bf16") == 989e12);
  CHECK(load_hw_profile("h200").memory_bandwidth_bytes_per_s == 4.8e12);
}

TEST_CASE("the M2 Max as built: 96 GiB, of which Metal wires 72 GiB for the GPU by default") {
  const HwProfile m2 = load_hw_profile("m2-max-96gb");
  CHECK(m2.memory_capacity_bytes == 96 * GiB);  // Apple's "96 GB" of memory is binary
  // recommendedMaxWorkingSetSize 73728 MB (llama.cpp's log on a 96 GB M2 Max) = 72 GiB
  CHECK(m2.usable_bytes() == 72 * GiB);
}

TEST_CASE("SPEC 2: M2 Max usable 81.41 GiB in seed 000's convention") {
  const HwProfile m2 = load_hw_profile("tests/data/profile_m2_max_seed.json");
  CHECK(m2.memory_capacity_bytes == 96'000'000'000ull);
  CHECK(m2.memory_reserved_bytes == 8 * GiB);
  // 96e9 - 8 * 2^30 = 87,410,065,408 B = 81.408 GiB
  CHECK(m2.usable_bytes() == 87'410'065'408ull);
  CHECK(to_gib(m2.usable_bytes()) == doctest::Approx(81.41).epsilon(1e-4));
}

TEST_CASE("a profile states its architecture from the closed list, or none") {
  Json j = minimal();
  CHECK(hw_profile_from_json(j, "x", "x.json", no_links).arch.empty());
  j["arch"] = "turing";
  CHECK(hw_profile_from_json(j, "x", "x.json", no_links).arch == "turing");
  j["arch"] = "kepler";
  CHECK_THROWS_WITH_AS(hw_profile_from_json(j, "x", "x.json", no_links),
                       doctest::Contains("x.json: field 'arch' is \"kepler\"; expected one of: pascal, volta"), InputError);
  CHECK(load_hw_profile("h200").arch == "hopper");
  CHECK(load_hw_profile("m2-ultra").arch == "apple-m2");
}

TEST_CASE("profile errors name the file and field") {
  CHECK(hw_profile_from_json(minimal(), "x", "x.json", no_links).memory_capacity_bytes == 24'000'000'000ull);
  Json j = minimal();
  j["memory"].erase("capacity");
  CHECK_THROWS_WITH_AS(hw_profile_from_json(j, "x", "x.json", no_links),
                       doctest::Contains("x.json: memory: field 'capacity' is missing"), InputError);
  j = minimal();
  j["memory"]["capacity"] = "24 GX";
  CHECK_THROWS_WITH_AS(hw_profile_from_json(j, "x", "x.json", no_links),
                       doctest::Contains("unknown unit 'GX'"), InputError);
  j = minimal();
  j["memory"]["capcity"] = "1 GB";
  CHECK_THROWS_WITH_AS(hw_profile_from_json(j, "x", "x.json", no_links),
                       doctest::Contains("unknown field 'capcity'"), InputError);
  j = minimal();
  j["memory"]["reserved"] = "30 GB";
  CHECK_THROWS_WITH_AS(hw_profile_from_json(j, "x", "x.json", no_links),
                       doctest::Contains("must be below 'capacity'"), InputError);
  j = minimal();
  j["compute"] = {{"fp64", "1 TFLOPS"}};
  CHECK_THROWS_WITH_AS(hw_profile_from_json(j, "x", "x.json", no_links),
                       doctest::Contains("unknown precision 'fp64'"), InputError);
  j = minimal();
  j["host_links"] = {"pcie-gen9"};
  CHECK_THROWS_WITH_AS(hw_profile_from_json(j, "x", "x.json", no_links),
                       doctest::Contains("unknown link 'pcie-gen9'"), InputError);
  CHECK_THROWS_WITH_AS(load_hw_profile("h300"), doctest::Contains("built-in: a10, a100-40gb"), InputError);
  CHECK_THROWS_WITH_AS(parse_json_text("{\n  \"memory\": {,\n}", "p.json"),
                       doctest::Contains("p.json: malformed JSON: parse error at line 2, column"), InputError);
}

// The CUDA probe writes both copy directions; the measured block reads each (1 GB/s = 1e9 B/s).
TEST_CASE("measured block: host_to_device and device_to_host") {
  Json j = minimal();
  j["measured"] = {{"host_to_device", "55 GB/s"}, {"device_to_host", "53.5 GB/s"}, {"launch_overhead_us", 1.5}};
  const HwProfile p = hw_profile_from_json(j, "probed", "probed.json", no_links);
  REQUIRE(p.measured);
  CHECK(p.measured->host_to_device_bytes_per_s.value() == doctest::Approx(55e9));
  CHECK(p.measured->device_to_host_bytes_per_s.value() == doctest::Approx(53.5e9));
  CHECK(p.measured->launch_overhead_s.value() == doctest::Approx(1.5e-6).scale(0));
  CHECK(p.measured->launch_unit == "projection");  // the CPU probe's, by default
  j["measured"]["launch_unit"] = "kernel";
  CHECK(hw_profile_from_json(j, "probed", "probed.json", no_links).measured->launch_unit == "kernel");
  j["measured"]["launch_unit"] = "warp";
  CHECK_THROWS_WITH_AS(hw_profile_from_json(j, "probed", "probed.json", no_links),
                       doctest::Contains("launch_unit is \"warp\""), InputError);
  j["measured"].erase("launch_unit");
  j["measured"]["device_to_hots"] = "1 GB/s";  // a typo is refused, not read as absent
  CHECK_THROWS_WITH_AS(hw_profile_from_json(j, "probed", "probed.json", no_links),
                       doctest::Contains("device_to_hots"), InputError);
}

TEST_CASE("price_per_hour: US dollars per device-hour, above 0") {
  Json j = minimal();
  CHECK_FALSE(hw_profile_from_json(j, "x", "x.json", no_links).price_per_hour);
  j["price_per_hour"] = 2.5;
  CHECK(*hw_profile_from_json(j, "x", "x.json", no_links).price_per_hour == 2.5);
  j["price_per_hour"] = 0;
  CHECK_THROWS_WITH_AS(hw_profile_from_json(j, "x", "x.json", no_links),
                       doctest::Contains("x.json: field 'price_per_hour' is 0"), InputError);
  j["price_per_hour"] = "2.5 USD";
  CHECK_THROWS_AS(hw_profile_from_json(j, "x", "x.json", no_links), InputError);
  CHECK(*load_hw_profile("h100-sxm").price_per_hour == 2.99);  // the profile's stated assumption
}

TEST_CASE("board_power_w: the datasheet's board power in watts, optional") {
  Json j = minimal();
  CHECK_FALSE(hw_profile_from_json(j, "x", "x.json", no_links).board_power_w);
  j["board_power_w"] = 350;
  CHECK(*hw_profile_from_json(j, "x", "x.json", no_links).board_power_w == 350);
  j["board_power_w"] = 0;
  CHECK_THROWS_WITH_AS(hw_profile_from_json(j, "x", "x.json", no_links),
                       doctest::Contains("x.json: field 'board_power_w' is 0; expected the board power in watts"), InputError);
  j["board_power_w"] = 1e9;
  CHECK_THROWS_AS(hw_profile_from_json(j, "x", "x.json", no_links), InputError);
  j["board_power_w"] = "350 W";
  CHECK_THROWS_AS(hw_profile_from_json(j, "x", "x.json", no_links), InputError);
  CHECK(*load_hw_profile("rtx-6000-ada").board_power_w == 300);  // NVIDIA's datasheet, as the profile cites
  CHECK_FALSE(load_hw_profile("m2-ultra").board_power_w);        // Apple states none for its GPU
}
