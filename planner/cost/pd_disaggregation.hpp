// Prefill/decode (PD) disaggregation: what a split costs (one KV transfer
// per request over a link), what it saves (the stall a long prefill imposes on a mixed decode
// batch), the published rule of thumb's table, and its 1:3 prefill:decode concurrency rule.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/model/hw_profile.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/model/model_spec.hpp"

namespace infer_plan {

// Seed 002's table says "short", "long", "low QPS", "medium" and "high concurrency"; the token
// limits are its own, the rate and concurrency bands are this tool's reading of it (the
// seed gives no numbers). Medium starts at 16, the seed's prefill_batch_size; high starts at 64,
// its decode worker's max_num_seqs. Low QPS: a prefill a second or two keeps a mixed GPU mostly
// decoding.
inline constexpr uint64_t kPdShortInputTokens = 500;    // mean input below this is short
inline constexpr uint64_t kPdLongInputTokens = 2000;    // mean input above this is long
inline constexpr uint64_t kPdLongOutputTokens = 1000;   // mean output above this is long
inline constexpr double kPdLowRatePerS = 2.0;           // arrivals below this are low QPS
inline constexpr uint64_t kPdMediumConcurrency = 16;    // in flight from here: medium
inline constexpr uint64_t kPdHighConcurrency = 64;      // in flight from here: high
// Seed 002 §4.3 and §5.3: KV transfer wants at least 25 Gb/s, ideally RDMA or NVLink.
inline constexpr double kPdMinLinkBytesPerS = 25e9 / 8;  // 25 Gb/s = 3.125 GB/s
// Seed 002 §4.3: prefill concurrency at most 1/3 of decode concurrency.
inline constexpr uint64_t kPdDecodePerPrefill = 3;

// Seed 002 §4.2's own measurement (nano-vllm, 2x A100), quoted in --explain as a reference
// point; nothing in this tool computes or predicts it.
struct PdSeedReference {
  const char* setup;
  double mixed_tokens_per_s;
  double split_tokens_per_s;
  double ttft_change;  // -0.35: TTFT about 35% lower with the split
};
inline constexpr PdSeedReference kSeed002PdReference{"nano-vllm on 2x A100", 180, 260, -0.35};

// Times the roofline will fill later; the CLI takes them as flags for now.
struct PdTimes {
  double prefill_ms = 0;        // one prefill of the mean input, alone on a GPU
  double decode_step_ms = 0;    // one decode iteration of the mixed batch, without a prefill
  uint64_t decode_batch = 0;    // decodes in that iteration (each waits for the whole step)
};

struct PdWorkload {
  uint64_t prompt_tokens = 0;           // mean input per request
  uint64_t output_tokens = 0;           // mean generated tokens per request
  std::optional<double> rate_per_s;     // arrivals (QPS); absent: Little's law from concurrency
  std::optional<uint64_t> concurrency;  // requests in flight; absent: the decode batch
};

struct PdDeployment {
  LinkProfile link;                              // carries the KV from prefill to decode
  bool same_machine = false;                     // prefill and decode GPUs in one machine
  std::optional<uint64_t> gpus;                  // GPUs/instances to divide (for the split)
  std::optional<uint64_t> prefill_concurrency;   // planned, checked against the 1:3 rule
  std::optional<uint64_t> decode_concurrency;    // planned; absent: the workload's concurrency
};

struct PdInputs {
  ModelSpec spec;
  KvTypes kv;
  PdWorkload workload;
  PdTimes times;
  PdDeployment deployment;
};

enum class PdVerdict { No, Maybe, Yes, StronglyYes };
const char* pd_verdict_name(PdVerdict v);  // "no", "maybe", "yes", "strongly yes"

// A long prefill inserted into a mixed step delays every decode in that step by its full length.
struct PrefillStall {
  double step_ms = 0;             // decode step with the prefill inside: decode + prefill
  double added_ms = 0;            // = prefill
  double ratio = 0;               // step_ms / decode step alone
  double delayed_request_ms = 0;  // added_ms x decode batch: the latency the batch absorbs
};

// One row of the published rule of thumb's table, and whether this workload matches it.
struct PdTableRow {
  int row = 0;             // 1..4, the seed's order
  std::string workload;    // "mean input < 500 tokens, low QPS"
  std::string advice;      // "no: mixed is enough, a split only adds a network hop"
  bool matched = false;
  std::string because;     // the figures that decided the match
};

// The 1:3 rule on planned concurrency.
struct PdConcurrencyCheck {
  uint64_t decode_concurrency = 0;
  uint64_t max_prefill_concurrency = 0;        // floor(decode / 3)
  std::optional<uint64_t> prefill_concurrency;  // as planned, when given
  std::optional<bool> ok;                       // 3 x prefill <= decode, when prefill is given
};

// A division of N GPUs/instances into prefill and decode groups. With the same concurrency per
// instance, 1:3 on instances is 1:3 on concurrency; below 4 instances it cannot hold on counts
// alone, and the prefill instance's concurrency must be capped instead.
struct PdGpuSplit {
  uint64_t gpus = 0;
  uint64_t prefill = 0;         // max(1, floor(gpus / 4))
  uint64_t decode = 0;          // gpus - prefill
  bool ratio_by_count = false;  // 3 x prefill <= decode
};

struct PdResult {
  uint64_t kv_bytes_per_token = 0;    // K + V, all layers, whole model (no tensor parallel)
  uint64_t kv_bytes_per_request = 0;  // the prompt's cache (pd_kv_bytes_per_request)
  LinkProfile link;
  double transfer_ms = 0;             // one request's KV over an idle link
  double prefill_ms = 0;
  bool transfer_exceeds_prefill = false;
  std::optional<double> ttft_split_ms;  // prefill + transfer, no queueing; none when the link saturates
  double rate_per_s = 0;
  bool rate_from_littles_law = false;
  // With a rate and no concurrency: rate x request time, and concurrency is it rounded (at least 1).
  bool concurrency_from_littles_law = false;
  double littles_law_in_flight = 0;
  uint64_t concurrency = 0;
  double request_time_s = 0;          // prefill + output x decode step (for Little's law)
  double link_load = 0;               // rate x bytes per request / bandwidth; >= 1: saturated
  bool link_saturated = false;
  bool link_below_minimum = false;    // under 25 Gb/s
  double link_needed_bytes_per_s = 0; // for transfer <= prefill and load < 1
  double decode_step_ms = 0;
  uint64_t decode_batch = 0;
  PrefillStall stall;
  std::vector<PdTableRow> table;      // all four rows, matched or not
  PdVerdict table_verdict = PdVerdict::Maybe;  // what the table alone says
  PdVerdict verdict = PdVerdict::Maybe;        // after the link rules
  bool link_vetoed = false;           // the table wanted a split; the link rules said no
  bool split_across_gpus = false;     // true: GPUs of one machine; false: machines
  PdConcurrencyCheck concurrency_check;
  std::optional<PdGpuSplit> gpu_split;
  std::vector<std::string> reasons;
  std::vector<std::string> derivation;  // --explain: each step with its numbers substituted
};

// Bytes of KV one request hands from prefill to decode: its prompt's cache as the decode side holds
// it (kv_bytes_for_context: whole pages, windows capped, a hybrid model's state), prompt tokens x
// kv_bytes_per_token when the prompt fills whole pages of a plain model.
uint64_t pd_kv_bytes_per_request(const ModelSpec& spec, KvTypes kv, uint64_t prompt_tokens);
// The share of a layer's products done when its K and V rows are final, which is when a streamed
// prefill sends them: the attention's projections (q, k, v and output) of all the layer's matrices
// (a layer with experts counted at its active experts' share), over all the layers together.
double pd_kv_written_share(const ModelSpec& spec);
// Milliseconds to move `bytes` over a link of `bytes_per_s` (per direction), uncontended.
double kv_transfer_ms(uint64_t bytes, double link_bytes_per_s);
// Seconds to move `bytes` over `link` in `messages` transfers, uncontended: each transfer pays the
// link's message latency, and the bytes cross at its bandwidth.
double link_transfer_s(uint64_t bytes, uint64_t messages, const LinkProfile& link);
PrefillStall prefill_stall(double decode_step_ms, double prefill_ms, uint64_t decode_batch);
PdConcurrencyCheck check_pd_concurrency(std::optional<uint64_t> prefill_concurrency,
                                        uint64_t decode_concurrency);
PdGpuSplit split_pd_gpus(uint64_t gpus);  // gpus >= 2

// The whole analysis; throws InputError naming the flag when an input is out of range.
PdResult plan_pd(const PdInputs& in);

}  // namespace infer_plan
