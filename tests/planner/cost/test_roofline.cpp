// Roofline: hand-computed bytes and FLOPs on a tiny model, seed 002's 7-14 ms floor, MoE
// expert counting and the tensor-parallel all-reduce.
#include <doctest/doctest.h>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/roofline.hpp"

using namespace infer_plan;

namespace {
HwProfile device(const char* bandwidth, const char* bf16 = "100 TFLOPS") {
  Json j{{"memory", {{"capacity", "80 GiB"}, {"bandwidth", bandwidth}}},
         {"compute", {{"bf16", bf16}}},
         {"device_link", {{"name", "nvlink"}, {"bandwidth", "100 GB/s"}}}};
  return hw_profile_from_json(j, "test", "test", [](const std::string& n) { return load_link(n); });
}
ModelSpec tiny() {
  // tests/data/tiny_config.json: hidden 256, 2 layers, 4 heads (2 KV) x 64, FFN 512, vocab 1024, tied
  return load_model("tests/data/tiny_config.json");
}
}  // namespace

TEST_CASE("tiny model: bytes and FLOPs by hand") {
  const ModelSpec s = tiny();
  const Roofline rl(s, uniform_weights_layout(s, "BF16"), {}, device("1 TB/s"));
  // matrices per layer: q 256x256 + k,v 256x128 + o 256x256 + FFN 3 x 256 x 512 = 589,824;
  // x 2 layers = 1,179,648 + tied token_embd/head 262,144 = 1,441,792 params x 2 B = 2,883,584 B;
  // vectors (norms) 2 x (256 + 256 + 64 + 64) + 256 = 1,536 x 4 B (F32) = 6,144 B
  CHECK(rl.dense_weight_bytes() == 2'889'728.0);
  // KV per token: 2 x 2 layers x 2 heads x 64 x 2 B = 1024 B
  CHECK(rl.kv_bytes_per_token() == 1024.0);
  const StepCost c = rl.decode_step(1, 100);
  CHECK(c.weight_bytes == 2'889'728.0 + 512.0);   // + one token_embd row (256 x 2 B) for the lookup
  CHECK(c.kv_bytes == 100 * 1024.0 + 1024.0);     // read 100 tokens, write 1
  // FLOPs: 2 x 1,441,792 + attention 4 x 2 layers x 256 x 100 = 2,883,584 + 204,800
  CHECK(c.flops == 3'088'384.0);
  CHECK(c.memory_s == doctest::Approx((2'890'240.0 + 103'424.0) / 1e12));
  CHECK_FALSE(c.compute_bound);
  // batch 4 reads the weights once, the KV four times
  const StepCost b4 = rl.decode_step(4, 100);
  CHECK(b4.weight_bytes == 2'889'728.0 + 4 * 512.0);
  CHECK(b4.kv_bytes == 4 * 101 * 1024.0);
  // a verify pass of 5 tokens per sequence: same weights, 5x the matmul FLOPs
  const StepCost v = rl.decode_step(1, 100, 5);
  CHECK(v.flops == doctest::Approx(5 * 3'088'384.0));
}

TEST_CASE("prefill: weights once, causal attention P(P+1)/2") {
  const ModelSpec s = tiny();
  const Roofline rl(s, uniform_weights_layout(s, "BF16"), {}, device("1 TB/s", "1 TFLOPS"));
  const StepCost p = rl.prefill(10);
  // The head (tied, 262,144 params) runs for the last prompt token only, as engines compute:
  // 2 x (1,441,792 - 262,144) x 10 + 2 x 262,144 x 1 + 4 x 2 x 256 x (10 x 11 / 2)
  // = 23,592,960 + 524,288 + 112,640
  CHECK(p.flops == 24'229'888.0);
  CHECK(p.kv_bytes == 10 * 1024.0);
  CHECK(p.compute_s == doctest::Approx(24'229'888.0 / 1e12));
}

TEST_CASE("seed 002: a 7B FP16 model at 1-2 TB/s takes at least 7-14 ms per token") {
  const ModelSpec s = load_model("llama-2-7b");
  const WeightsLayout w = uniform_weights_layout(s, "F16");
  const double at_1tbs = Roofline(s, w, {}, device("1 TB/s")).decode_step(1, 1).time_s * 1e3;
  const double at_2tbs = Roofline(s, w, {}, device("2 TB/s")).decode_step(1, 1).time_s * 1e3;
  // 13.2 GB of matrices read per token (the embedding is looked up, not read whole)
  CHECK(at_1tbs == doctest::Approx(13.2).epsilon(0.01));
  CHECK(at_2tbs == doctest::Approx(6.6).epsilon(0.01));
  // SPEC 8: INT8 / INT4 cut the floor towards 1/2 and 1/4 (Q8_0 8.5 bit, Q4_0 4.5 bit with metadata)
  const double q8 = Roofline(s, uniform_weights_layout(s, "Q8_0"), {}, device("1 TB/s")).decode_step(1, 1).time_s * 1e3;
  const double q4 = Roofline(s, uniform_weights_layout(s, "Q4_0"), {}, device("1 TB/s")).decode_step(1, 1).time_s * 1e3;
  CHECK(q8 / at_1tbs == doctest::Approx(8.5 / 16).epsilon(0.01));
  CHECK(q4 / at_1tbs == doctest::Approx(4.5 / 16).epsilon(0.01));
}

TEST_CASE("MoE: active experts only, each distinct expert once per batch") {
  const ModelSpec s = load_model("qwen3-235b-a22b");
  const Roofline rl(s, uniform_weights_layout(s, "Q8_0"), {}, device("4 TB/s"));
  CHECK(rl.distinct_experts(1) == doctest::Approx(8.0));          // one token: exactly k experts
  CHECK(rl.distinct_experts(2) == doctest::Approx(128 * (1 - (120.0 / 128) * (120.0 / 128))));
  CHECK(rl.distinct_experts(10000) == doctest::Approx(128.0));    // a large batch touches all
  const StepCost one = rl.decode_step(1, 1);
  // batch 1 reads dense + 8/128 of the experts
  CHECK(one.weight_bytes == doctest::Approx(rl.dense_weight_bytes() + rl.expert_weight_bytes() * 8 / 128).epsilon(1e-3));
}

TEST_CASE("tensor parallel: weights split, all-reduce added") {
  const ModelSpec s = load_model("qwen3-8b");
  const WeightsLayout w = uniform_weights_layout(s, "BF16");
  const Roofline one(s, w, {}, device("4 TB/s"));
  const Roofline two(s, w, {}, device("4 TB/s"), 2);
  CHECK(two.dense_weight_bytes() == doctest::Approx(one.dense_weight_bytes() / 2));
  const StepCost c = two.decode_step(1, 1);
  // 2 all-reduces x 36 layers x 4096 x 2 B x 2 (N-1)/N = 589,824 B over 100 GB/s
  CHECK(c.comm_bytes == 589'824.0);
  // plus a latency per call: 72 calls x 5 us (the default when the link states none) = 0.36 ms
  CHECK(c.comm_s == doctest::Approx(589'824.0 / 100e9 + 72 * 5e-6));
  HwProfile stated = device("4 TB/s");
  stated.device_link->all_reduce_latency_s = 2e-6;
  CHECK(Roofline(s, w, {}, stated, 2).decode_step(1, 1).comm_s == doctest::Approx(589'824.0 / 100e9 + 72 * 2e-6));
  // no device link: the host link carries the all-reduce (PCIe peer to peer), said so in the rates
  HwProfile pcie = device("4 TB/s");
  pcie.device_link.reset();
  pcie.host_links.push_back({"pcie-gen4-x16", "", 32e9, std::nullopt});
  const Roofline over_pcie(s, w, {}, pcie, 2);
  CHECK(over_pcie.decode_step(1, 1).comm_s == doctest::Approx(589'824.0 / 32e9 + 72 * 5e-6));
  CHECK(over_pcie.rates().all_reduce_source == "pcie-gen4-x16 (no device link: the host link), 32 GB/s, 5 us per call (assumed)");
  // past one machine's devices the ring crosses the node link: 4 devices, 2 per node, 25 GB/s and
  // 20 us per call (the default between nodes): 2 x 36 x 4096 x 2 B x 2 (3/4) = 884,736 B
  HwProfile nodes = device("4 TB/s");
  nodes.devices_per_node = 2;
  CHECK_THROWS_WITH_AS(Roofline(s, w, {}, nodes, 4), doctest::Contains("holds 2 devices per node, and has no 'node_link'"),
                       InputError);
  nodes.node_link = LinkProfile{"200g", "", 25e9, std::nullopt};
  CHECK(Roofline(s, w, {}, nodes, 4).decode_step(1, 1).comm_s == doctest::Approx(884'736.0 / 25e9 + 72 * 20e-6));
  CHECK(Roofline(s, w, {}, nodes, 2).decode_step(1, 1).comm_s == doctest::Approx(589'824.0 / 100e9 + 72 * 5e-6));
  HwProfile no_link = device("4 TB/s");
  no_link.device_link.reset();
  no_link.host_links.clear();
  CHECK_THROWS_WITH_AS(Roofline(s, w, {}, no_link, 2), doctest::Contains("no 'device_link' nor 'host_links'"), InputError);
}

TEST_CASE("measured per-type rates: each tensor is read and multiplied at its own type's rate") {
  const ModelSpec s = load_model("qwen3-0.6b");
  const WeightsLayout q8 = uniform_weights_layout(s, "Q8_0");
  HwProfile hw = device("100 GB/s", "1 TFLOPS");
  const Roofline plain(s, q8, {}, hw);
  hw.measured = MeasuredFigures{};
  hw.measured->matvec_bytes_per_s["Q8_0"] = 50e9;   // half the memory rate
  hw.measured->matmul_ops_per_s["Q8_0"] = 0.25e12;  // a quarter of the compute rate
  const Roofline probed(s, q8, {}, hw);
  const StepCost a = plain.decode_step(1, 1), b = probed.decode_step(1, 1);
  // Matrices are Q8_0; the F32 norms (a few KB) stay at 100 GB/s, as does one embedding row and
  // the KV of 1 token, so the weight time almost exactly doubles.
  const double kv_s = a.kv_bytes / 100e9;
  CHECK(b.memory_s - kv_s == doctest::Approx(2 * (a.memory_s - kv_s)).epsilon(0.002));
  // Prefill of 512 tokens is compute-bound; its matrix products take 4x as long (attention does not).
  const StepCost pa = plain.prefill(512), pb = probed.prefill(512);
  CHECK(pb.compute_s > 3.5 * pa.compute_s);
  CHECK(pb.compute_s < 4.0 * pa.compute_s);
  CHECK(b.weight_bytes == a.weight_bytes);  // the bytes themselves do not change
}

TEST_CASE("rates: measured beats datasheet x efficiency, and says so") {
  HwProfile hw = device("4.8 TB/s", "989 TFLOPS");
  CHECK(roofline_rates(hw).memory_source == "datasheet 4.8 TB/s");
  hw.memory_efficiency = 0.9;
  CHECK(roofline_rates(hw).memory_bytes_per_s == doctest::Approx(4.32e12));
  hw.measured = MeasuredFigures{};
  hw.measured->memory_bandwidth_bytes_per_s = 4.3e12;
  hw.measured->compute_ops_per_s = {{"bf16", 790e12}};
  hw.measured->source = "probe";
  CHECK(roofline_rates(hw).memory_bytes_per_s == 4.3e12);
  CHECK(roofline_rates(hw).compute_ops_per_s == 790e12);
  CHECK(roofline_rates(hw).memory_source.find("measured") == 0);
}

TEST_CASE("launch overhead: a CPU projection per product, a CUDA kernel per graph node") {
  const ModelSpec s = load_model("qwen3-8b");  // 36 dense layers, Qwen3: q/k norms, no biases
  const WeightsLayout bf16 = uniform_weights_layout(s, "BF16");
  HwProfile hw = device("4800 GB/s", "990 TFLOPS");
  hw.measured = MeasuredFigures{};
  hw.measured->launch_overhead_s = 2e-6;
  // The CPU runtime: q, k, v, attention, output, gate, up, down per layer, and the head:
  // 36 x 8 + 1 = 289 launches x 2 us = 0.578 ms.
  CHECK(Roofline(s, bf16, {}, hw).decode_step(1, 100).overhead_s == doctest::Approx(289 * 2e-6));
  // The CUDA decoder: (11 + 2 q/k norms) attention + 6 FFN kernels per layer, and 5 for the pass:
  // 36 x 19 + 5 = 689 graph nodes x 2 us = 1.378 ms.
  hw.measured->launch_unit = "kernel";
  CHECK(Roofline(s, bf16, {}, hw).decode_step(1, 100).overhead_s == doctest::Approx(689 * 2e-6));
}

TEST_CASE("prefill by weight type: each type's share of the products at its own efficiency") {
  const ModelSpec s = load_model("qwen3-0.6b");
  const WeightsLayout layout = uniform_weights_layout(s, "Q4_K");
  HwProfile hw = device("100 GB/s", "1 TFLOPS");
  const std::map<std::string, double> share = Roofline(s, layout, {}, hw).matmul_share_by_type();
  double sum = 0;
  for (const auto& [type, x] : share) sum += x;
  CHECK(sum == doctest::Approx(1.0));  // shares of the parameters one token multiplies
  CHECK(share.at("Q4_K") > 0.99);      // a uniform layout: every matrix Q4_K (no other type's products)
  StepCalibration shared;
  shared.prefill.emplace();
  shared.prefill->fixed_s = 0.001;
  shared.prefill->compute_efficiency = 0.5;
  hw.calibration = shared;
  const StepCost a = Roofline(s, layout, {}, hw).prefill(512);
  // Every type at half the shared efficiency costs what a shared efficiency of a quarter costs:
  // compute / 0.5 + compute x share x (1 / 0.25 - 1 / 0.5) = compute / 0.25 when the shares sum to 1.
  StepCalibration by_type = shared;
  for (const auto& [type, x] : share) by_type.prefill->compute_efficiency_by_type[type] = 0.25;
  hw.calibration = by_type;
  const StepCost b = Roofline(s, layout, {}, hw).prefill(512);
  StepCalibration quarter = shared;
  quarter.prefill->compute_efficiency = 0.25;
  hw.calibration = quarter;
  const StepCost c = Roofline(s, layout, {}, hw).prefill(512);
  CHECK(b.time_s == doctest::Approx(c.time_s).epsilon(1e-9));
  CHECK(b.time_s > a.time_s * 1.9);  // compute-bound at 512 tokens: about twice
}
