// llama.cpp's layer split (-ngl): which bytes the device and the host hold, the fit on both
// sides, -ngl auto, and the step time with the host's layers at the host's bandwidth.
#include <doctest/doctest.h>

#include <vector>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/layer_split.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/predict.hpp"
#include "planner/weights/weights_size.hpp"

using namespace infer_plan;

namespace {

// qwen3-8b in F16 throughout (norms F32): 36 alike blocks, token_embd and output each
// 151936 x 4096 x 2 B = 1,244,659,712 B, output_norm 4096 x 4 B.
constexpr uint64_t kEmbd = 151936ull * 4096 * 2;
constexpr uint64_t kOutputNorm = 4096 * 4;

HwProfile with_host(HwProfile hw, uint64_t capacity) {
  hw.host = HostProfile{"test host", capacity, 0, 100e9, 0.5};
  return hw;
}

}  // namespace

TEST_CASE("a split holds the last N blocks on the device, and the head as the (layers + 1)-th") {
  const ModelSpec spec = load_model("qwen3-8b");
  const PlanWeights w = plan_weights(spec, "F16:pure", std::nullopt);
  REQUIRE(spec.layers == 36);
  CHECK(split_layer_count(spec) == 37);
  const uint64_t blocks = w.bytes - 2 * kEmbd - kOutputNorm;  // what the 36 blocks hold
  REQUIRE(blocks % 36 == 0);
  const uint64_t block = blocks / 36;

  const LayerSplit ten = layer_split(spec, w, 10);
  CHECK(ten.device_blocks == 10);
  CHECK_FALSE(ten.head_on_device);
  CHECK(ten.device_weights_bytes == 10 * block);
  CHECK(ten.host_weights_bytes == w.bytes - 10 * block);
  CHECK(ten.embd_bytes == kEmbd);
  CHECK(ten.device_part.layers == 10);
  CHECK(ten.host_part.layers == 26);

  const LayerSplit blocks_only = layer_split(spec, w, 36);  // every block, the head still on the host
  CHECK(blocks_only.device_weights_bytes == blocks);
  CHECK(blocks_only.host_weights_bytes == 2 * kEmbd + kOutputNorm);
  const LayerSplit all = layer_split(spec, w, 99);  // clamped: everything
  CHECK(all.gpu_layers == 37);
  CHECK(all.head_on_device);
  CHECK(all.device_weights_bytes == w.bytes);
  CHECK(all.host_weights_bytes == 0);
  CHECK(layer_split_label(ten, spec) ==
        "10/37 layers on the device (the last 10 blocks); in host memory: token_embd, blocks 0-25 and the head");
}

TEST_CASE("the fit with a split: each side holds its layers' KV, and both must fit") {
  const ModelSpec spec = load_model("qwen3-8b");
  const PlanWeights w = plan_weights(spec, "F16:pure", std::nullopt);
  const LayerSplit split = layer_split(spec, w, 10);
  FitRequest request;
  request.context = 8192;
  request.requests = 1;
  request.kv = {GgmlType::F16, GgmlType::F16};
  // qwen3-8b caches 2 x 8 KV heads x 128 x 2 B = 4096 B per token and layer
  const FitResult r = fit_memory(spec, with_host(load_hw_profile("rtx-4090"), 64 * GiB), request, w.bytes, "F16", true,
                                 nullptr, &split);
  CHECK(r.device_weights_bytes == split.device_weights_bytes);
  CHECK(r.kv_bytes_per_token == 10 * 4096);
  CHECK(r.kv_bytes == 10ull * 4096 * 8192);
  REQUIRE(r.host);
  CHECK(r.host->weights_bytes == split.host_weights_bytes);
  CHECK(r.host->kv_bytes == 26ull * 4096 * 8192);
  CHECK(r.host->headroom_bytes ==
        static_cast<int64_t>(64 * GiB) - static_cast<int64_t>(split.host_weights_bytes + r.host->kv_bytes));
  CHECK(r.fits);

  // 8 GiB of host memory do not hold 26 blocks (about 0.4 GiB each) and two 1.2 GiB embedding tables
  const FitResult small = fit_memory(spec, with_host(load_hw_profile("rtx-4090"), 8 * GiB), request, w.bytes, "F16",
                                     false, nullptr, &split);
  CHECK(small.headroom_bytes >= 0);  // the device's side fits
  CHECK_FALSE(small.host->fits);
  CHECK_FALSE(small.fits);
  CHECK(small.max_requests == 0);

  // -ngl 0: the device keeps nothing of the KV; the host bounds the requests
  const LayerSplit none = layer_split(spec, w, 0);
  const FitResult host_only = fit_memory(spec, with_host(load_hw_profile("rtx-4090"), 64 * GiB), request, w.bytes,
                                         "F16", false, nullptr, &none);
  CHECK(host_only.kv_bytes == 0);
  CHECK(host_only.host->kv_bytes == 36ull * 4096 * 8192);
  const uint64_t host_room = 64 * GiB - none.host_weights_bytes;
  CHECK(host_only.max_requests == host_room / (36ull * 4096 * 8192));
}

TEST_CASE("a split refuses a device without a host, tensor parallel and an offload beside it") {
  const ModelSpec spec = load_model("qwen3-8b");
  const PlanWeights w = plan_weights(spec, "Q8_0", std::nullopt);
  const LayerSplit split = layer_split(spec, w, 20);
  FitRequest request;
  request.context = 4096;
  request.requests = 1;
  CHECK_THROWS_WITH_AS(fit_memory(spec, load_hw_profile("h200"), request, w.bytes, "Q8_0", false, nullptr, &split),
                       doctest::Contains("profile h200 has no 'host' section"), InputError);
  request.tp = 2;
  CHECK_THROWS_WITH_AS(fit_memory(spec, with_host(load_hw_profile("h200"), 64 * GiB), request, w.bytes, "Q8_0", false,
                                  nullptr, &split),
                       doctest::Contains("with tensor parallel (--tp) is not modelled"), InputError);
}

TEST_CASE("-ngl auto: the most layers whose split fits the device") {
  Plan plan;
  plan.model = "llama-3.1-70b";
  plan.weights = "Q4_K_M";
  plan.hw = "rtx-4090";
  plan.context = 8192;
  plan.requests = 1;
  plan.gpu_layers_auto = true;
  const ResolvedPlan rp = resolve_plan(plan);
  REQUIRE(rp.split);
  const uint64_t n = rp.split->gpu_layers;
  CHECK(n > 0);
  CHECK(n < split_layer_count(rp.spec));
  CHECK(rp.fit.headroom_bytes >= 0);
  const LayerSplit one_more = layer_split(rp.spec, rp.weights, n + 1);
  const FitResult over = fit_memory(rp.spec, rp.hw, plan, rp.weights.bytes, rp.weights.label, false, nullptr, &one_more);
  CHECK(over.headroom_bytes < 0);  // the device's side: one more layer does not fit
  // every layer fits an H200's 141 GB: auto keeps them all, no split
  plan.hw = "h200";
  CHECK_FALSE(resolve_plan(plan).split);
  // a profile with no host has nowhere to put layers: auto is every layer, and the plain verdict
  plan.hw = "a100-40gb";
  const ResolvedPlan no_host = resolve_plan(plan);
  CHECK_FALSE(no_host.split);
  CHECK_FALSE(no_host.fit.fits);
}

TEST_CASE("a split step: the host's share of the reads at the host's bandwidth, the rest of the device's time") {
  const ModelSpec spec = load_model("qwen3-8b");
  const PlanWeights w = plan_weights(spec, "F16:pure", std::nullopt);
  const LayerSplit split = layer_split(spec, w, 18);  // half the blocks; token_embd and the head on the host
  // weights read per step, token_embd aside: 36 blocks + the head; the host's part: 18 blocks + the head
  const double block = static_cast<double>(w.bytes - 2 * kEmbd - kOutputNorm) / 36;
  const double host_share = (18 * block + kEmbd + kOutputNorm) / (36 * block + kEmbd + kOutputNorm);
  CHECK(split_host_weight_share(split) == doctest::Approx(host_share));
  CHECK(split_host_kv_share(split, spec) == doctest::Approx(0.5));
  StepCost whole;
  whole.weight_bytes = 1e9;
  whole.kv_bytes = 2e8;
  whole.time_s = 0.004;
  const HostProfile host{"", 64 * GiB, 0, 100e9, 0.5};  // reads at 50 GB/s
  const double host_bytes = 1e9 * host_share + 2e8 * 0.5;
  CHECK(split_step_s(whole, split, spec, host) ==
        doctest::Approx(0.004 * (1 - host_bytes / 1.2e9) + host_bytes / 50e9));
}

TEST_CASE("plan files and profiles: gpu_layers, host memory and bandwidth") {
  Plan p = plan_from_json(Json::parse(R"({"gpu_layers": "auto", "host_memory": "32 GiB", "host_bandwidth": "40 GB/s"})"),
                          "p.json");
  CHECK(p.gpu_layers_auto);
  CHECK(p.host_memory_bytes == 32 * GiB);
  CHECK(p.host_bandwidth_bytes_per_s == doctest::Approx(40e9));
  CHECK(plan_from_json(Json::parse(R"({"gpu_layers": 12})"), "p.json").gpu_layers == 12u);
  CHECK_THROWS_WITH_AS(plan_from_json(Json::parse(R"({"gpu_layers": -1})"), "p.json"),
                       doctest::Contains("p.json: field 'gpu_layers' is -1; expected a layer count >= 0"), InputError);
  const HwProfile hw = load_hw_profile("rtx-4090");
  REQUIRE(hw.host);
  CHECK(hw.host->achieved_bandwidth() == doctest::Approx(89.6e9 * 0.7));
  CHECK(hw.host->usable_bytes() == 60 * GiB);
  const Json bad = Json::parse(R"({"memory": {"capacity": "24 GB", "bandwidth": "1 TB/s"},
                                   "host": {"memory": {"capacity": "64 GiB", "bandwidth": "90 GB/s"}, "speed": 1}})");
  CHECK_THROWS_WITH_AS(hw_profile_from_json(bad, "x", "x.json", [](const std::string&) { return LinkProfile{}; }),
                       doctest::Contains("x.json: host: unknown field 'speed'"), InputError);
}

TEST_CASE("--n-cpu-moe: the first layers' routed experts in host memory, the routed reads there at its bandwidth") {
  const ModelSpec spec = load_model("qwen3-30b-a3b");  // 48 alike MoE layers, 128 experts, 8 per token
  const PlanWeights w = plan_weights(spec, "Q8_0:pure", std::nullopt);
  REQUIRE(spec.layers == 48);
  const LayerSplit all = layer_split(spec, w, 99, HostTensors{48, {}});  // --cpu-moe: every layer's experts
  REQUIRE(all.expert_bytes > 0);
  CHECK(all.host_expert_bytes == all.expert_bytes);
  CHECK(all.host_weights_bytes == all.expert_bytes);  // nothing else leaves the device
  CHECK(all.device_weights_bytes + all.host_weights_bytes == w.bytes);
  CHECK(all.device_part.layers == 48);  // the KV stays on the device
  CHECK(split_host_expert_share(all) == 1.0);
  CHECK(split_host_weight_share(all) == 0.0);  // no layer is the host's

  const LayerSplit twelve = layer_split(spec, w, 99, HostTensors{12, {}});  // alike layers: a quarter of the experts
  CHECK(twelve.host_expert_bytes * 4 == twelve.expert_bytes);
  CHECK(split_host_expert_share(twelve) == doctest::Approx(0.25));
  CHECK(layer_split_label(twelve, spec) ==
        "49/49 layers on the device (all); the routed experts of layers 0-11 in host memory");
  // the step: a quarter of the routed reads at the host's 50 GB/s, the rest of the device's time
  StepCost whole;
  whole.weight_bytes = 1e9;
  whole.expert_bytes = 6e8;
  whole.kv_bytes = 2e8;
  whole.time_s = 0.004;
  const HostProfile host{"", 64 * GiB, 0, 100e9, 0.5};
  const double host_bytes = 6e8 * 0.25;
  CHECK(split_step_s(whole, twelve, spec, host) == doctest::Approx(0.004 * (1 - host_bytes / 1.2e9) + host_bytes / 50e9));
  // a dense model has no experts to keep
  Plan plan;
  plan.model = "qwen3-8b";
  plan.cpu_moe_layers = 4;
  CHECK_THROWS_WITH_AS(resolve_plan(plan), doctest::Contains("qwen3-8b has no experts"), InputError);
}

TEST_CASE("-ot REGEX=BUFFER: tensors placed by name, the first pattern that matches deciding") {
  const ModelSpec spec = load_model("qwen3-30b-a3b");
  const PlanWeights w = plan_weights(spec, "Q8_0:pure", std::nullopt);
  // llama.cpp's --n-cpu-moe 12 is its own -ot of layers 0-11's experts: the same split
  const std::vector<TensorOverride> first12 = parse_tensor_overrides(R"(blk\.([0-9]|1[01])\.ffn_.*_exps=CPU)", "-ot");
  REQUIRE(first12.size() == 1);
  CHECK(first12[0].host);
  const LayerSplit by_name = layer_split(spec, w, 99, host_tensors(w, 0, first12));
  const LayerSplit by_count = layer_split(spec, w, 99, HostTensors{12, {}});
  CHECK(by_name.host_expert_bytes == by_count.host_expert_bytes);
  CHECK(by_name.host_weights_bytes == by_count.host_weights_bytes);
  CHECK(by_name.override_host_tensors == 12 * 3);  // gate, up and down of 12 layers
  CHECK(split_host_expert_share(by_name) == doctest::Approx(0.25));
  CHECK(split_host_weight_share(by_name) == 0.0);

  // Dense tensors: every attention tensor of Qwen3-8B in host memory; the host's share of the reads is
  // their bytes (summed here from the layout by name) over every weight but token_embd.
  const ModelSpec dense = load_model("qwen3-8b");
  const PlanWeights d = plan_weights(dense, "Q8_0:pure", std::nullopt);
  uint64_t attn = 0, embd = 0, blk0_q = 0;
  for (const TensorPlacement& t : d.layout.tensors) {
    const std::string& name = t.tensor.name;
    if (name.find("attn_") != std::string::npos) attn += t.bytes;
    if (name.starts_with("blk.0.attn_q.")) blk0_q = t.bytes;
    if (t.tensor.role == TensorRole::token_embd) embd = t.bytes;
  }
  const LayerSplit attn_host = layer_split(dense, d, 99, host_tensors(d, 0, parse_tensor_overrides("attn_=CPU", "-ot")));
  CHECK(attn_host.override_host_tensors == 36 * 7);  // q, k, v, output and their norms: q_norm, k_norm, attn_norm
  CHECK(attn_host.override_host_bytes == attn);
  CHECK(attn_host.host_weights_bytes == attn);
  CHECK(split_host_weight_share(attn_host) == doctest::Approx(double(attn) / double(d.bytes - embd)));
  CHECK(layer_split_label(attn_host, dense).find("252 tensors") != std::string::npos);
  // the first pattern decides: block 0's attn_q stays on the device
  const LayerSplit but_one = layer_split(
      dense, d, 99, host_tensors(d, 0, parse_tensor_overrides(R"(blk\.0\.attn_q\.=CUDA0,attn_=CPU)", "-ot")));
  CHECK(but_one.override_host_bytes == attn - blk0_q);
  // what llama.cpp refuses
  CHECK_THROWS_WITH_AS(parse_tensor_overrides("exps", "-ot"), doctest::Contains("expected REGEX=BUFFER"), InputError);
  CHECK_THROWS_WITH_AS(parse_tensor_overrides("exps=GPU", "-ot"), doctest::Contains("buffer 'GPU' is none llama.cpp names"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_tensor_overrides("(exps=CPU", "-ot"), doctest::Contains("is not a regular expression"),
                       InputError);
  CHECK(tensor_overrides_text(parse_tensor_overrides("a=CPU,b=CUDA0", "-ot")) == "a=CPU,b=CUDA0");
  // a plan's field: a string or a list of them, written back as one string
  const Plan plan = plan_from_json(Json::parse(R"({"model": "qwen3-8b", "override_tensor": ["a=CPU", "b=CPU,c=CUDA0"]})"), "p.json");
  REQUIRE(plan.override_tensor.size() == 3);
  CHECK_FALSE(plan.override_tensor[2].host);
  CHECK(plan_to_json(plan).at("override_tensor") == "a=CPU,b=CPU,c=CUDA0");
  CHECK_THROWS_WITH_AS(plan_from_json(Json::parse(R"({"override_tensor": 3})"), "p.json"),
                       doctest::Contains("p.json: field 'override_tensor' is 3; expected \"REGEX=BUFFER\""), InputError);
  CHECK_THROWS_WITH_AS(plan_from_json(Json::parse(R"({"override_tensor": ["a=CPU", 3]})"), "p.json"),
                       doctest::Contains("p.json: field 'override_tensor' holds 3"), InputError);
}

TEST_CASE("llama.cpp deals layers to its devices by their cumulative shares, the head to the last") {
  // Qwen3-8B F16: 37 slots (36 blocks, then the head). Two equal devices: slot i goes to device 0 while
  // i / 37 < 0.5, so blocks 0-18 (19) there and blocks 19-35 (17) and the head on device 1.
  const ModelSpec spec = load_model("qwen3-8b");
  const PlanWeights w = plan_weights(spec, "F16:pure", std::nullopt);
  const uint64_t block = (w.bytes - 2 * kEmbd - kOutputNorm) / 36;
  const std::vector<DeviceLayers> two = device_layers(spec, w, {1, 1});
  REQUIRE(two.size() == 2);
  CHECK(two[0].first == 0);
  CHECK(two[0].end == 19);
  CHECK_FALSE(two[0].head);
  CHECK(two[1].first == 19);
  CHECK(two[1].end == 36);
  CHECK(two[1].head);
  CHECK(two[0].weights_bytes == 19 * block);
  CHECK(two[1].weights_bytes == 17 * block + kEmbd + kOutputNorm);  // the head; token_embd stays on the host
  CHECK(two[0].part.layers == 19);
  CHECK(device_layers_label(two[1]) == "layers 19-35 and the output head");
  // -ts 3,1: i / 37 < 0.75 -> slots 0-27 on device 0 (28 blocks), 8 blocks and the head on device 1
  const std::vector<DeviceLayers> three_one = device_layers(spec, w, {3, 1});
  CHECK(three_one[0].end == 28);
  CHECK(three_one[1].end - three_one[1].first == 8);
  // A device with a zero share gets nothing
  const std::vector<DeviceLayers> zero = device_layers(spec, w, {1, 0, 1});
  CHECK(zero[1].part.layers == 0);
  CHECK(zero[1].weights_bytes == 0);
  CHECK(device_layers_label(zero[1]) == "no layer");
}

TEST_CASE("a llama.cpp plan over several devices shows the one with the least to spare; -ts is its own") {
  Plan plan;
  plan.model = "llama-3.1-70b";
  plan.weights = "Q4_K_M";
  plan.hw = "rtx-3090";
  plan.engine = "llama.cpp";
  plan.context = 8192;
  plan.requests = 1;
  plan.tp = 2;
  const FitResult even = resolve_plan(plan).fit;
  // 81 slots: blocks 0-40 on the first device (41 of them), more than the second's 39 and the head
  CHECK(even.device_note == "layers 0-40, the device with the least to spare");
  CHECK(even.kv_bytes_per_token == uint64_t{41} * 8 * 128 * 2 * 2);
  plan.tensor_split = {1, 3};  // i / 81 < 0.25: blocks 0-20 first, the rest and the head second
  const FitResult skewed = resolve_plan(plan).fit;
  CHECK(skewed.device_note == "layers 21-79 and the output head, the device with the least to spare");
  CHECK(skewed.kv_bytes_per_token == uint64_t{59} * 8 * 128 * 2 * 2);
  plan.tensor_split = {1, 1, 1};
  CHECK_THROWS_WITH_AS(resolve_plan(plan), doctest::Contains("3 shares for 2 devices"), InputError);
  plan.tensor_split = {1, 1};
  plan.engine = "vllm";
  plan.weights = "BF16";
  CHECK_THROWS_WITH_AS(resolve_plan(plan), doctest::Contains("field 'tensor_split' is llama.cpp's"), InputError);
}

TEST_CASE("llama.cpp over different devices: layers by their memory, each at its own speed, the tighter one shown") {
  Plan plan;
  plan.model = "llama-3.1-70b";
  plan.weights = "Q4_K_M";
  plan.engine = "llama.cpp";
  plan.context = 8192;
  plan.requests = 1;
  plan.hw = "rtx-4090";
  plan.devices = {"rtx-4090", "rtx-4080"};
  plan.tp = 2;
  const ResolvedPlan mixed = resolve_plan(plan);
  const HwProfile a = load_hw_profile("rtx-4090"), b = load_hw_profile("rtx-4080");
  // llama.cpp's default split is by the devices' free memory: 23.99 and 15.99 GiB of the 81 slots
  const std::vector<DeviceLayers> dealt = device_layers(mixed.spec, mixed.weights,
                                                        {double(a.usable_bytes()), double(b.usable_bytes())});
  REQUIRE(dealt.size() == 2);
  CHECK(dealt[0].end == 49);  // i / 81 < 23.99 / 39.98 for i up to 48
  // the 4090's 49 layers leave it less to spare than the 4080's 31 and the head
  CHECK(mixed.fit.device_note == "rtx-4090: layers 0-48, the device with the least to spare");
  CHECK(mixed.fit.weights_bytes == dealt[0].weights_bytes);
  // A step: each device's share of the weights of its own whole-model step, and the hand-over once
  // (the two-device step of one kind of card is its whole step plus the hand-over)
  const double f0 = double(dealt[0].weights_bytes) / double(dealt[0].weights_bytes + dealt[1].weights_bytes);
  Plan one = plan;
  one.devices.clear();
  one.tp = 1;
  const double t0 = resolve_plan(one).roofline->decode_step(1, 512).time_s;
  one.hw = "rtx-4080";
  const double t1 = resolve_plan(one).roofline->decode_step(1, 512).time_s;
  Plan pair = plan;
  pair.devices.clear();
  const StepCost two = resolve_plan(pair).roofline->decode_step(1, 512);
  const StepCost step = mixed.roofline->decode_step(1, 512);
  CHECK(step.comm_s == doctest::Approx(two.comm_s));
  CHECK(step.time_s == doctest::Approx(f0 * t0 + (1 - f0) * t1 + two.comm_s).epsilon(1e-9));
  CHECK(step.time_s > two.time_s);  // slower than two 4090s, faster than two 4080s
  // Only llama.cpp splits by layers over different devices; the list and tp agree
  plan.engine = "vllm";
  plan.weights = "BF16";
  CHECK_THROWS_WITH_AS(resolve_plan(plan), doctest::Contains("field 'devices' lists different devices"), InputError);
  plan.engine = "llama.cpp";
  plan.tp = 3;
  CHECK_THROWS_WITH_AS(validate_plan(plan, "plan"), doctest::Contains("2 devices and"), InputError);
  // a plan file's list sets hw and tp
  const Plan from_file = plan_from_json(Json{{"model", "llama-3.1-70b"}, {"devices", {"rtx-3090", "rtx-4090"}}}, "p.json");
  CHECK(from_file.hw == "rtx-3090");
  CHECK(from_file.tp == 2);
  CHECK(plan_to_json(from_file).at("devices") == Json{"rtx-3090", "rtx-4090"});
}
