// `advise`: the cheapest deployment that meets a workload's service levels, searched over the
// levers the planner models (hardware, weight type, KV type, tensor parallel, replicas, max
// batch), with the reasons in plain words. Two questions:
// - serving (a request rate given): every candidate is fitted, bounded in closed form (memory,
//   the bandwidth floor of one decode step, the prefill of the longest prompt, the replicas the
//   arrivals' work needs), and the survivors are simulated (planner/serving/serving_sim) on the
//   plan's step model (the calibrated one where the profile or --engine has it) for their p99s;
//   ranked by cost per million output tokens, with the Pareto frontier of cost against p99 E2EL.
// - capacity (no rate): what fits `requests` concurrent requests of `context` tokens on one
//   deployment, best quality first (the worked example's question: which weights, which KV type, how long a
//   context), and when the context asked for fits nowhere, why, with the longest that does.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "planner/cost/kv_cache.hpp"
#include "planner/plan/plan.hpp"
#include "planner/serving/serving_sim.hpp"

namespace infer_plan {

// A service level as the field writes it (vLLM bench's --metric-percentiles, dashboards): one
// latency's 50th, 90th, 95th or 99th percentile at most a limit.
enum class SloMetric { ttft, tpot, itl, e2el };
std::string_view slo_metric_name(SloMetric m);  // "TTFT"
struct SloBound {
  SloMetric metric = SloMetric::ttft;
  double percentile = 99;  // 50, 90, 95 or 99
  double limit_s = 0;
};
struct AdviseSlo {
  std::vector<SloBound> bounds;
  std::optional<double> rejection_max;  // fraction of arrivals rejected, with a deadline
  bool any() const { return !bounds.empty(); }
  bool has(SloMetric m) const;
  // The metric's limit at percentile p (p99 unless said): for tests and callers that set one at a time.
  AdviseSlo& at_most(SloMetric m, double limit_s, double percentile = 99);
};
// The distribution of a simulation's latencies that a bound on `m` reads (E2EL: the sojourn).
const Distribution& slo_distribution(const ServingLatency& l, SloMetric m);

// The default quality floor: weight types of fewer than 4 bits (llama.cpp's Q3_*, Q2_K, IQ3_*,
// IQ2_*, IQ1_*, TQ*) and KV types of fewer than 8 bits are a last resort, tried only when nothing
// above meets the request (and then marked), unless excluded outright. Seed 000's Q2_K case is
// such a last resort. (By type, not by the file's bits per weight: a small model's Q3_K_M file
// averages 4 bits because its embeddings stay Q6_K.)
inline constexpr const char* kAdviseQualityFloor = "4-bit weights, 8-bit KV";
bool advise_below_quality_floor(std::string_view weights, KvTypes kv);

// Speculative decoding as a lever: a draft proposes `block` tokens a round, the target
// verifies them in one pass; each accepted with `accept` (one i.i.d. rate, or one per position).
// The serving steps become rounds: (verify of block + 1 tokens + block draft steps) / expected
// tokens, and the draft's weights (a separate model) and KV come out of the KV pool.
struct AdviseSpeculative {
  std::vector<double> accept;
  std::string draft;                       // a draft model; empty: draft_layers
  std::optional<uint64_t> draft_layers;    // the target's first N layers and its head
  std::vector<uint64_t> blocks{2, 4, 6};   // block lengths tried beside plain decoding
};

// How a plan is deployed: how many of its replicas, and how they serve (apps/launch writes the
// engine's commands for it).
struct DeploymentShape {
  uint64_t replicas = 1;                    // copies of the plan's tp devices behind one endpoint
  std::optional<uint64_t> prefill, decode;  // a prefill/decode split: replicas of each pool
  uint64_t max_model_len = 0;               // the longest request (prompt + output); 0: the plan's context
  uint64_t max_batch = 0;                   // running requests per replica; 0: the plan's load.max_batch or requests
};

struct AdviseQuery {
  std::string model = "qwen3-8b";
  // "llama.cpp", "vllm", "sglang", "trtllm": its memory, step model and what it runs; "any" (the
  // command's default): every engine that runs a configuration on the device, each with a step model
  // of its own there (calibrated or transferred; a datasheet ceiling is searched only for the engine
  // named); "none": the bare budget and ceiling; empty: each plan's engine chosen from its weights
  // (resolve_plan's default_engine), without its memory
  std::string engine;
  std::vector<std::string> hw;             // profile names or paths
  std::map<std::string, double> prices;    // profile name -> US dollars per device-hour (over the profile's)
  std::vector<std::string> weights;        // candidate weight types, most bits first
  std::vector<KvTypes> kv;                 // candidate KV types, most bits first
  std::vector<uint64_t> tp;                // tensor-parallel sizes
  // The link a tensor-parallel plan's all-reduce crosses (a built-in link name or a link JSON path,
  // Plan::tp_link), for every candidate of 2 or more devices; empty: each profile's device link.
  std::string tp_link;
  std::vector<uint64_t> max_batch;         // the server's running-request limits to try
  uint64_t max_devices = 64;               // tp x replicas at most
  // Serving: arrivals (Poisson) and lengths; absent rate: the capacity question.
  std::optional<double> rate_per_s;
  TokenLengths prompt = TokenLengths::fixed(512);
  TokenLengths output = TokenLengths::fixed(256);
  uint64_t simulated_requests = 400;       // per simulation (p99 needs 100)
  uint64_t seed = 1;
  std::optional<double> deadline_s;
  AdviseSlo slo;
  std::optional<AdviseSpeculative> speculative;  // absent: plain decoding only
  bool pd = true;                          // also prefill/decode splits (where the profile has a link)
  // Capacity: tokens per request and concurrent requests.
  uint64_t context = 8192;
  uint64_t requests = 1;
  uint64_t top = 10;                       // plans listed
};

// One deployment: a configuration, what it costs and, for serving, what the simulation measured.
struct AdviseCandidate {
  std::string hw;                          // the profile's name
  std::string engine;                      // what serves it ("vllm")
  // What its latencies rest on: "calibrated" (the engine's measurements of this device),
  // "transferred" (other devices' pooled, basis_note says which) or "ceiling" (datasheet only).
  std::string basis = "ceiling";
  std::string basis_note;
  std::string weights;                     // "FP8", "Q4_K_M"
  KvTypes kv;
  uint64_t tp = 1, replicas = 1, max_batch = 1;
  std::optional<uint64_t> spec_block;      // serving: speculative decoding with this block length
  // Serving, a prefill/decode split: replicas = pd_prefill + pd_decode, the KV sent over pd_link.
  std::optional<uint64_t> pd_prefill, pd_decode;
  // Serving, weights that did not fit: the FFN of 1 layer in offload_every in host memory.
  std::optional<uint64_t> offload_every;
  std::string offload_link;
  uint64_t offload_bytes = 0;              // per device, copied in each step
  double offload_round_s = 0;              // the copy, over the link
  double offload_compute_s = 0;            // the decode step at batch 1 without it
  std::string pd_link;
  double pd_transfer_s = 0;                // the p99 prompt's KV over the link
  double pd_prefill_ttft_p99_s = 0;        // the prefill pool's own TTFT p99
  uint64_t devices() const { return tp * replicas; }
  double weight_bits = 0;                  // bits per weight of the whole model
  double kv_bits = 0;                      // bits per cached value
  bool below_quality_floor = false;
  uint64_t weights_bytes_per_device = 0;
  uint64_t kv_capacity_tokens = 0;         // per replica, all memory the weights leave
  int64_t headroom_bytes = 0;              // capacity: the margin at context x requests
  uint64_t context = 0;                    // capacity: tokens per request it holds
  uint64_t max_context = 0;                // capacity: the longest context at `requests`
  double decode_tokens_per_s = 0;          // capacity: per request at batch `requests`; serving: at batch 1
  std::optional<uint64_t> gpu_layers;      // capacity: llama.cpp's -ngl, when the model fits only split
  uint64_t layers = 0;                     // ... of this many (blocks and the output head)
  std::optional<double> price_per_hour;    // all its devices
  std::optional<double> cost_per_million_tokens;  // output tokens, at the offered rate
  std::optional<ServingResult> serving;    // serving: the simulation at rate / replicas
  bool meets = false;                      // every SLO (serving) or context and requests (capacity)
  double slo_ratio = 0;                    // serving: the largest p99 / its SLO (below 1 when it meets)
  std::string binding;                     // what limits it, in words
  std::vector<std::string> reasons;        // top plans: why, in the user's terms
  std::optional<DeploymentShape> shape;    // top plans: how it is deployed (apps/launch writes its commands)
  Plan plan;                               // one replica's plan (report and --verify run it)
};

struct AdvisePruned {
  std::string reason;  // "memory", "tensor parallel", "TPOT floor", "TTFT floor", "devices", "SLO"
  uint64_t count = 0;
  std::string example; // one candidate's figures
  bool simulated = false;  // set aside after a simulation ("SLO", "batch never reached"), not by a bound
};

struct AdviseResult {
  bool serving = false;
  uint64_t space = 0;                      // configurations in the search space
  uint64_t simulations = 0;
  std::vector<AdvisePruned> pruned;        // by reason, in the order they apply
  std::vector<AdviseCandidate> ranked;     // meeting the request, best first (top N)
  std::vector<AdviseCandidate> frontier;   // serving: cost against p99 E2EL, cheapest first
  std::vector<AdviseCandidate> near_misses;  // serving, when nothing meets: the closest
  std::vector<std::string> notes;          // what was assumed or not searched; why nothing fits
  bool priced = true;                      // every profile had a price (else cost is in device-hours)
};

// InputError (naming the flag) for an empty or unknown candidate, a rate with no SLO, and what
// the simulation refuses.
AdviseResult advise(const AdviseQuery& query);

// "2 replicas of 2 x h100-sxm (tensor parallel), FP8 weights, KV Q8_0, max batch 64": the plan in words.
std::string advise_plan_label(const AdviseCandidate& c);

// The candidate's tokens of output per hour at the offered rate.
double advise_tokens_per_hour(const AdviseQuery& query);

}  // namespace infer_plan
