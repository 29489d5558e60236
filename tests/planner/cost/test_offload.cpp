// SPEC 4: every offload figure of the seed, and the per-group stall model.
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/offload.hpp"
#include "planner/core/units.hpp"

using namespace infer_plan;

namespace {
OffloadResult seed(double link_bytes_per_s, uint64_t buffers, const Roofline* rl = nullptr) {
  const ModelSpec s = load_model("qwen3-8b");
  OffloadInput in;
  in.buffers = buffers;
  in.link_name = "link";
  in.link_bytes_per_s = link_bytes_per_s;
  in.iteration_s = 26.26e-3;  // the seed's batch-1 decode iteration
  in.deadline_s = 7.0;
  return plan_offload(s, uniform_weights_layout(s, "BF16"), 1.0, {}, in, rl, 4096);
}
}  // namespace

TEST_CASE("SPEC 4: memory") {
  const OffloadResult one = seed(64e9, 1);
  CHECK(one.group_bytes == 288 * MiB);  // 3 x 4096 x 12288 x 2 B
  CHECK(one.layers_offloaded == 9);     // 36 / 4
  CHECK(one.freed_bytes == 2592 * MiB);
  CHECK(one.net_saving_bytes == 2304 * static_cast<int64_t>(MiB));
  CHECK(one.extra_requests == 2);            // 2304 / 1152
  CHECK(one.kv_bytes_per_request_reserved == 1188 * MiB);  // 8448 tokens x 144 KiB
  CHECK(one.extra_requests_reserved == 1);   // floor(2304 / 1188)
  const OffloadResult two = seed(64e9, 2);
  CHECK(two.net_saving_bytes == 2016 * static_cast<int64_t>(MiB));
  CHECK(two.extra_requests == 1);
  CHECK(two.extra_requests_reserved == 1);
}

TEST_CASE("SPEC 4: time over PCIe Gen5 and NVLink-C2C") {
  const OffloadResult pcie = seed(64e9, 2);
  CHECK(pcie.bytes_per_round == 2'717'908'992ull);  // 2592 MiB = 2.72 GB
  CHECK(pcie.round_ms == doctest::Approx(42.47).epsilon(1e-3));
  CHECK(pcie.transfer_exceeds_iteration);
  CHECK(pcie.effective_round_ms == doctest::Approx(42.47).epsilon(1e-3));  // evenly spaced: max(round, iteration)
  CHECK(pcie.throughput_ceiling_tok_s == doctest::Approx(94.2).epsilon(1e-3));  // 4 / 0.04247 s
  CHECK(pcie.rounds == 255);
  CHECK(pcie.generation_s == doctest::Approx(10.83).epsilon(1e-3));
  CHECK(pcie.meets_deadline == false);
  CHECK(pcie.max_hidden_layers == 5);  // floor(26.26 / 4.719)
  const OffloadResult c2c = seed(450e9, 2);
  CHECK(c2c.round_ms == doctest::Approx(6.04).epsilon(1e-3));
  CHECK(c2c.transfer_total_s == doctest::Approx(1.54).epsilon(2e-3));
  CHECK_FALSE(c2c.transfer_exceeds_iteration);
  CHECK(c2c.effective_round_ms == doctest::Approx(26.26));  // hidden under compute
  CHECK(c2c.meets_deadline == true);                        // 255 x 26.26 ms = 6.70 s
  CHECK(c2c.max_hidden_layers == 36);
}

TEST_CASE("one buffer: the copy cannot overlap its own part's compute") {
  // window = (4 - ffn share of the layer) x 26.26 / 36 ms; the ffn share is 288 / (288 + 80 MiB
  // attention + norms) of layer 3's bytes
  const OffloadResult pcie1 = seed(64e9, 1);
  CHECK_FALSE(pcie1.overlapped);
  CHECK(pcie1.window_ms < seed(64e9, 2).window_ms);
  CHECK(pcie1.effective_round_ms > 42.47);
  CHECK(seed(450e9, 1).effective_round_ms == doctest::Approx(26.26));  // C2C still hides
}

TEST_CASE("round time grows linearly with the offloaded layers") {
  const ModelSpec s = load_model("qwen3-8b");
  const WeightsLayout w = uniform_weights_layout(s, "BF16");
  for (uint64_t every : {1, 2, 3, 4, 6, 9, 12, 18, 36}) {
    OffloadInput in;
    in.every = every;
    in.link_bytes_per_s = 64e9;
    in.iteration_s = 0.02;
    const OffloadResult r = plan_offload(s, w, 1.0, {}, in, nullptr, 0);
    CAPTURE(every);
    CHECK(r.layers_offloaded == 36 / every);
    CHECK(r.round_ms == doctest::Approx(static_cast<double>(36 / every) * 288 * MiB / 64e9 * 1e3));
  }
}

TEST_CASE("hiding batch from the roofline; bad input") {
  const ModelSpec s = load_model("qwen3-8b");
  const HwProfile h200 = load_hw_profile("h200");
  const Roofline rl(s, uniform_weights_layout(s, "BF16"), {}, h200);
  const OffloadResult r = seed(64e9, 2, &rl);
  REQUIRE(r.hiding_batch);
  const uint64_t b = *r.hiding_batch;
  CHECK(rl.decode_step(b, 8192 + 128).time_s * 1e3 >= r.round_ms);
  CHECK(rl.decode_step(b - 1, 8192 + 128).time_s * 1e3 < r.round_ms);
  OffloadInput in;
  in.link_bytes_per_s = 64e9;
  in.iteration_s = 0.02;
  in.every = 0;
  CHECK_THROWS_WITH_AS(plan_offload(s, uniform_weights_layout(s, "BF16"), 1.0, {}, in, nullptr, 0),
                       doctest::Contains("--every"), InputError);
  in.every = 4;
  in.buffers = 0;
  CHECK_THROWS_WITH_AS(plan_offload(s, uniform_weights_layout(s, "BF16"), 1.0, {}, in, nullptr, 0),
                       doctest::Contains("--buffers"), InputError);
  CHECK_THROWS_AS(parse_offload_part("mlp", "--part"), InputError);
}
