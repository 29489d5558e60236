// SPEC 7 (seed 002 §4): KV transfer per request over the network links of SPEC 11, the stall of a
// 40 ms prefill in a batch of 100 decodes, each row of the decision table, the link vetoes and the
// 1:3 prefill:decode rule. Every expected figure is worked by hand in the comment beside it.
#include <doctest/doctest.h>
#include <cmath>
#include <limits>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/cost/pd_disaggregation.hpp"
#include "planner/core/units.hpp"

using namespace infer_plan;

namespace {

// Qwen3-8B, BF16 KV, over 400 Gb/s RDMA, separate machines; each test changes what it needs.
PdInputs base(uint64_t prompt, uint64_t output, const char* link = "400g-rdma") {
  PdInputs in;
  in.spec = load_model("qwen3-8b");
  in.workload.prompt_tokens = prompt;
  in.workload.output_tokens = output;
  in.times = {40.0, 5.0, 100};
  in.deployment.link = load_link(link);
  return in;
}

std::vector<int> matched_rows(const PdResult& r) {
  std::vector<int> rows;
  for (const auto& row : r.table)
    if (row.matched) rows.push_back(row.row);
  return rows;
}

bool any_reason_contains(const PdResult& r, const std::string& text) {
  for (const auto& s : r.reasons)
    if (s.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("SPEC 11: network and NVLink profiles, per direction") {
  CHECK(load_link("1gbe").bandwidth_bytes_per_s == 0.125e9);   // 1 Gb/s / 8
  CHECK(load_link("25gbe").bandwidth_bytes_per_s == 3.125e9);  // 25 Gb/s / 8
  CHECK(load_link("100gbe").bandwidth_bytes_per_s == 12.5e9);
  CHECK(load_link("400g-rdma").bandwidth_bytes_per_s == 50e9);
  CHECK(load_link("nvlink-4").bandwidth_bytes_per_s == 450e9);  // 900 GB/s total
  CHECK(kPdMinLinkBytesPerS == 3.125e9);
}

TEST_CASE("KV per request and its transfer: Qwen3-8B BF16, 2000 tokens") {
  const ModelSpec s = load_model("qwen3-8b");
  // 144 KiB/token x 2000 = 147456 x 2000 = 294,912,000 B
  const uint64_t bytes = pd_kv_bytes_per_request(s, {}, 2000);
  CHECK(bytes == 294'912'000ull);
  // 294,912,000 B / 3.125e9 B/s = 0.09437184 s
  CHECK(kv_transfer_ms(bytes, load_link("25gbe").bandwidth_bytes_per_s) == doctest::Approx(94.37184));
  // / 50e9 = 5.89824 ms; / 12.5e9 = 23.59296 ms; / 0.125e9 = 2359.296 ms; / 450e9 = 0.65536 ms
  CHECK(kv_transfer_ms(bytes, load_link("400g-rdma").bandwidth_bytes_per_s) == doctest::Approx(5.89824));
  CHECK(kv_transfer_ms(bytes, load_link("100gbe").bandwidth_bytes_per_s) == doctest::Approx(23.59296));
  CHECK(kv_transfer_ms(bytes, load_link("1gbe").bandwidth_bytes_per_s) == doctest::Approx(2359.296));
  CHECK(kv_transfer_ms(bytes, load_link("nvlink-4").bandwidth_bytes_per_s) == doctest::Approx(0.65536));
}

TEST_CASE("KV types and GQA decide the bytes moved") {
  const ModelSpec s = load_model("qwen3-8b");
  // q8_0: 34 B per 32 values -> 147456 x 34/64 = 78336 B/token; x 2000 = 156,672,000 B
  CHECK(pd_kv_bytes_per_request(s, {GgmlType::Q8_0, GgmlType::Q8_0}, 2000) == 156'672'000ull);
  // K BF16 73728 B + V q4_0 73728 x 18/64 = 20736 B -> 94464 B/token; one token moves its whole
  // 16-token page, as the decode side holds it
  CHECK(pd_kv_bytes_per_request(s, {GgmlType::BF16, GgmlType::Q4_0}, 1) == 16 * 94'464ull);
  // MHA 7B (32 layers x 32 heads x 128 x 2 x 2 B = 512 KiB/token): 1000 tokens fill 63 pages of
  // 16 = 1008 tokens: 528,482,304 B
  CHECK(pd_kv_bytes_per_request(load_model("llama-2-7b"), {GgmlType::F16, GgmlType::F16}, 1000) == 528'482'304ull);
  // Qwen3-Next: 24,576 B per token in its 12 attention layers, and the 36 DeltaNet layers' state
  // (F32: 79,036,416 B) whatever the prompt: 2000 tokens move 49,152,000 + 79,036,416 B
  CHECK(pd_kv_bytes_per_request(load_model("qwen3-next-80b-a3b"), {GgmlType::BF16, GgmlType::BF16}, 2000) ==
        49'152'000ull + 79'036'416ull);
}

TEST_CASE("SPEC 7: a 40 ms prefill inside a batch of 100 decodes at 5-10 ms") {
  const PrefillStall fast = prefill_stall(5, 40, 100);
  CHECK(fast.step_ms == doctest::Approx(45));   // 5 + 40
  CHECK(fast.added_ms == doctest::Approx(40));
  CHECK(fast.ratio == doctest::Approx(9));      // 45 / 5
  CHECK(fast.delayed_request_ms == doctest::Approx(4000));  // 100 x 40
  const PrefillStall slow = prefill_stall(10, 40, 100);
  CHECK(slow.step_ms == doctest::Approx(50));
  CHECK(slow.ratio == doctest::Approx(5));      // 50 / 10
}

TEST_CASE("the 1:3 prefill:decode concurrency rule") {
  // Seed 002 §4.3's workers: prefill_batch_size 16, max_num_seqs 64 -> 16 x 3 = 48 <= 64
  PdConcurrencyCheck c = check_pd_concurrency(16, 64);
  CHECK(c.max_prefill_concurrency == 21);  // floor(64 / 3)
  REQUIRE(c.ok);
  CHECK(*c.ok);
  c = check_pd_concurrency(22, 64);  // 66 > 64
  CHECK_FALSE(*c.ok);
  c = check_pd_concurrency(21, 63);  // 63 <= 63: exactly one third is allowed
  CHECK(*c.ok);
  c = check_pd_concurrency(std::nullopt, 2);
  CHECK(c.max_prefill_concurrency == 0);
  CHECK_FALSE(c.ok.has_value());
}

TEST_CASE("splitting N GPUs into prefill and decode groups") {
  struct Case { uint64_t gpus, prefill, decode; bool ok; };
  // prefill = max(1, floor(N / 4)), decode = N - prefill; ok when 3 x prefill <= decode
  for (Case k : {Case{2, 1, 1, false}, Case{3, 1, 2, false}, Case{4, 1, 3, true}, Case{8, 2, 6, true},
                 Case{10, 2, 8, true}, Case{16, 4, 12, true}}) {
    CAPTURE(k.gpus);
    const PdGpuSplit s = split_pd_gpus(k.gpus);
    CHECK(s.prefill == k.prefill);
    CHECK(s.decode == k.decode);
    CHECK(s.ratio_by_count == k.ok);
  }
}

TEST_CASE("row 1: short inputs at low QPS -> no") {
  PdInputs in = base(300, 200);
  in.workload.rate_per_s = 1.0;
  const PdResult r = plan_pd(in);
  CHECK(matched_rows(r) == std::vector<int>{1});
  CHECK(r.table_verdict == PdVerdict::No);
  CHECK(r.verdict == PdVerdict::No);
  CHECK_FALSE(r.link_vetoed);  // the table said no; the link had nothing to veto
  // 499 tokens is still short, 500 is not; 1.99 req/s is still low, 2 is not
  in.workload.prompt_tokens = 499;
  in.workload.rate_per_s = 1.99;
  CHECK(plan_pd(in).table[0].matched);
  in.workload.prompt_tokens = 500;
  CHECK_FALSE(plan_pd(in).table[0].matched);
  in.workload.prompt_tokens = 300;
  in.workload.rate_per_s = kPdLowRatePerS;
  CHECK_FALSE(plan_pd(in).table[0].matched);
}

TEST_CASE("row 2: long inputs at high concurrency -> strongly yes") {
  PdInputs in = base(4096, 256);
  in.times.prefill_ms = 200;
  in.workload.rate_per_s = 10;
  in.workload.concurrency = 100;
  const PdResult r = plan_pd(in);
  CHECK(matched_rows(r) == std::vector<int>{2});
  // 4096 x 147456 = 603,979,776 B / 50e9 = 12.0796 ms < 200 ms
  CHECK(r.kv_bytes_per_request == 603'979'776ull);
  CHECK(r.transfer_ms == doctest::Approx(12.07959552));
  CHECK_FALSE(r.transfer_exceeds_prefill);
  REQUIRE(r.ttft_split_ms);
  CHECK(*r.ttft_split_ms == doctest::Approx(212.07959552));  // 200 + 12.0796
  // load = 10 x 603,979,776 / 50e9 = 0.1208
  CHECK(r.link_load == doctest::Approx(0.12079595));
  CHECK(r.verdict == PdVerdict::StronglyYes);
  CHECK_FALSE(r.split_across_gpus);
  // the band edges: 2000 tokens is not long; 63 in flight is not high
  in.workload.prompt_tokens = 2000;
  CHECK_FALSE(plan_pd(in).table[1].matched);
  in.workload.prompt_tokens = 2001;
  CHECK(plan_pd(in).table[1].matched);
  in.workload.concurrency = kPdHighConcurrency - 1;
  CHECK_FALSE(plan_pd(in).table[1].matched);
}

TEST_CASE("row 3: long outputs at medium concurrency -> yes") {
  PdInputs in = base(1000, 2000, "100gbe");
  in.times.prefill_ms = 20;
  in.workload.rate_per_s = 4;
  in.workload.concurrency = 32;
  const PdResult r = plan_pd(in);
  CHECK(matched_rows(r) == std::vector<int>{3});
  // 1000 tokens in whole pages, 1008 x 147,456 = 148,635,648 B / 12.5e9 = 11.89085 ms < 20 ms;
  // load 4 x 148,635,648 / 12.5e9 = 0.04756
  CHECK(r.transfer_ms == doctest::Approx(11.8908518));
  CHECK(r.link_load == doctest::Approx(0.0475634074));
  CHECK(r.verdict == PdVerdict::Yes);
  CHECK(any_reason_contains(r, "prefill-dedicated"));
  // 15 in flight is low, 64 is high: neither is medium
  in.workload.concurrency = 15;
  CHECK_FALSE(plan_pd(in).table[2].matched);
  in.workload.concurrency = 64;
  CHECK_FALSE(plan_pd(in).table[2].matched);
}

TEST_CASE("row 4: one machine with several GPUs -> split across GPUs") {
  PdInputs in = base(1000, 200, "nvlink-4");
  in.workload.rate_per_s = 5;
  in.workload.concurrency = 10;
  in.deployment.same_machine = true;
  in.deployment.gpus = 8;
  const PdResult r = plan_pd(in);
  CHECK(matched_rows(r) == std::vector<int>{4});
  CHECK(r.verdict == PdVerdict::Yes);
  CHECK(r.split_across_gpus);
  REQUIRE(r.gpu_split);
  CHECK(r.gpu_split->prefill == 2);
  CHECK(r.gpu_split->decode == 6);
  // 148,635,648 B (1008 tokens' pages) / 450e9 = 0.330301 ms, and NVLink 4's 3 us
  CHECK(r.transfer_ms == doctest::Approx(0.33330144));
}

TEST_CASE("no row matches -> maybe; the first matching row decides") {
  PdInputs in = base(1000, 200);
  in.workload.rate_per_s = 5;
  in.workload.concurrency = 10;
  PdResult r = plan_pd(in);
  CHECK(matched_rows(r).empty());
  CHECK(r.verdict == PdVerdict::Maybe);
  CHECK(any_reason_contains(r, "no row"));

  // short inputs at low QPS but long outputs at medium concurrency: rows 1 and 3, row 1 decides
  in = base(300, 2000);
  in.workload.rate_per_s = 1;
  in.workload.concurrency = 20;
  r = plan_pd(in);
  CHECK(matched_rows(r) == std::vector<int>{1, 3});
  CHECK(r.verdict == PdVerdict::No);

  // row 1 on one machine: still no
  in = base(300, 200, "nvlink-4");
  in.workload.rate_per_s = 1;
  in.deployment.same_machine = true;
  r = plan_pd(in);
  CHECK(matched_rows(r) == std::vector<int>{1, 4});
  CHECK(r.verdict == PdVerdict::No);
}

TEST_CASE("the link vetoes a split: transfer longer than the prefill") {
  PdInputs in = base(4096, 256, "25gbe");
  in.times.prefill_ms = 100;
  in.workload.rate_per_s = 1;
  in.workload.concurrency = 100;
  const PdResult r = plan_pd(in);
  // 603,979,776 B / 3.125e9 = 193.27 ms, and the link's 35 us, > 100 ms
  CHECK(r.transfer_ms == doctest::Approx(193.30852832));
  CHECK(r.transfer_exceeds_prefill);
  CHECK_FALSE(r.link_saturated);  // 1 x 603,979,776 / 3.125e9 = 0.193
  CHECK(r.table_verdict == PdVerdict::StronglyYes);
  CHECK(r.verdict == PdVerdict::No);
  CHECK(r.link_vetoed);
  CHECK(any_reason_contains(r, "costs more than it saves"));
  // needed: 603,979,776 B / 0.1 s = 6.0398 GB/s
  CHECK(r.link_needed_bytes_per_s == doctest::Approx(6.03979776e9));
}

TEST_CASE("the link vetoes a split: saturated by KV traffic (rate from Little's law)") {
  const PdResult r = plan_pd(base(2048, 256, "25gbe"));  // the CLI's defaults
  // concurrency = decode batch 100; W = 40 ms + 256 x 5 ms = 1.32 s; rate = 100 / 1.32 = 75.758
  CHECK(r.concurrency == 100);
  CHECK(r.rate_from_littles_law);
  CHECK(r.request_time_s == doctest::Approx(1.32));
  CHECK(r.rate_per_s == doctest::Approx(75.757576));
  // 2048 x 147456 = 301,989,888 B; load 75.758 x 301,989,888 / 3.125e9 = 7.3209
  CHECK(r.kv_bytes_per_request == 301'989'888ull);
  CHECK(r.link_load == doctest::Approx(7.320967));
  CHECK(r.link_saturated);
  CHECK_FALSE(r.ttft_split_ms);  // no steady TTFT when transfers queue without bound
  CHECK(r.verdict == PdVerdict::No);
  CHECK(r.link_vetoed);
}

TEST_CASE("the link vetoes a split: under 25 Gb/s even when the transfer is short") {
  PdInputs in = base(10, 200, "1gbe");
  in.workload.rate_per_s = 5;
  const PdResult r = plan_pd(in);
  // 10 tokens take one 16-token page: 16 x 147456 = 2,359,296 B / 0.125e9 = 18.87 ms, and the
  // link's 50 us, < 40 ms; load 5 x 2,359,296 / 0.125e9 = 0.094
  CHECK(r.transfer_ms == doctest::Approx(18.924368));
  CHECK_FALSE(r.transfer_exceeds_prefill);
  CHECK_FALSE(r.link_saturated);
  CHECK(r.link_below_minimum);
  CHECK(r.table_verdict == PdVerdict::Maybe);
  CHECK(r.verdict == PdVerdict::No);
  CHECK(r.link_vetoed);
}

TEST_CASE("one GPU has nothing to split; the 1:3 check and a GPU split reach the result") {
  PdInputs in = base(4096, 256);
  in.times.prefill_ms = 200;
  in.workload.rate_per_s = 1;
  in.workload.concurrency = 100;
  in.deployment.gpus = 1;
  PdResult r = plan_pd(in);
  CHECK(r.table_verdict == PdVerdict::StronglyYes);
  CHECK(r.verdict == PdVerdict::No);
  CHECK_FALSE(r.gpu_split);

  in.deployment.gpus = 2;
  in.deployment.prefill_concurrency = 40;  // decode concurrency defaults to 100: at most 33
  r = plan_pd(in);
  CHECK(r.concurrency_check.decode_concurrency == 100);
  CHECK(r.concurrency_check.max_prefill_concurrency == 33);
  CHECK_FALSE(*r.concurrency_check.ok);
  REQUIRE(r.gpu_split);
  CHECK(r.gpu_split->prefill == 1);
  CHECK_FALSE(r.gpu_split->ratio_by_count);
  CHECK(any_reason_contains(r, "cap the prefill side's concurrency at 33"));

  in.deployment.decode_concurrency = 120;  // 40 x 3 = 120: allowed
  CHECK(*plan_pd(in).concurrency_check.ok);
}

TEST_CASE("bad inputs name the flag") {
  auto refuses = [](PdInputs in, const char* flag) {
    CAPTURE(flag);
    CHECK_THROWS_WITH_AS(plan_pd(in), doctest::Contains(flag), InputError);
  };
  const PdInputs ok = base(2000, 256);
  PdInputs in = ok;
  in.workload.prompt_tokens = 0;
  refuses(in, "--input-len");
  in = ok;
  in.workload.output_tokens = 0;
  refuses(in, "--output");
  in = ok;
  in.times.prefill_ms = 0;
  refuses(in, "--prefill-ms");
  in.times.prefill_ms = std::numeric_limits<double>::quiet_NaN();
  refuses(in, "--prefill-ms");
  in = ok;
  in.times.decode_step_ms = -5;
  refuses(in, "--decode-ms");
  in = ok;
  in.times.decode_batch = 0;
  refuses(in, "--decode-batch");
  in = ok;
  in.workload.rate_per_s = 0.0;
  refuses(in, "--qps");
  in.workload.rate_per_s = std::numeric_limits<double>::infinity();
  refuses(in, "--qps");
  in = ok;
  in.workload.concurrency = 0;
  refuses(in, "--concurrency");
  in = ok;
  in.deployment.gpus = 0;
  refuses(in, "--gpus");
  in = ok;
  in.deployment.same_machine = true;
  in.deployment.gpus = 1;
  refuses(in, "--same-machine");
  in = ok;
  in.deployment.prefill_concurrency = 0;
  refuses(in, "--prefill-concurrency");
  in = ok;
  in.deployment.link.bandwidth_bytes_per_s = 0;
  refuses(in, "--link");
}

TEST_CASE("a rate without a concurrency: Little's law gives what is in flight, not --decode-batch") {
  PdInputs in = base(2048, 256);  // prefill 40 ms, decode step 5 ms (the defaults), decode batch 100
  in.workload.rate_per_s = 1;
  const PdResult r = plan_pd(in);
  // L = lambda x W = 1/s x (40 ms + 256 x 5 ms) = 1.32 requests: low, where --decode-batch said 100 (high)
  CHECK(r.request_time_s == doctest::Approx(1.32));
  CHECK(r.concurrency_from_littles_law);
  CHECK(r.littles_law_in_flight == doctest::Approx(1.32));
  CHECK(r.concurrency == 1);
  CHECK_FALSE(r.table[1].matched);  // row 2 needs concurrency >= 64
}
