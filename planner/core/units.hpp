// Strict parsing and formatting of sizes, rates and compute figures written with units.
// Memory sizes: decimal (kB/KB, MB, GB, TB) and binary (KiB, MiB, GiB, TiB); bytes stay integers.
// Rates: B/s, KB/s, MB/s, GB/s, TB/s (decimal) and KiB/s..TiB/s, plus bits: Mb/s, Gb/s (= Mbps, Gbps).
// Compute: FLOPS, GFLOPS, TFLOPS, PFLOPS, and TOPS for integer math (all decimal).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace infer_plan {

inline constexpr uint64_t KiB = 1024;
inline constexpr uint64_t MiB = 1024 * KiB;
inline constexpr uint64_t GiB = 1024 * MiB;
inline constexpr uint64_t TiB = 1024 * GiB;

// "96 GB" -> 96000000000, "8 GiB" -> 8589934592, "79.81GiB" -> round(79.81 * 2^30), "1024" -> 1024.
// `what` names the field or flag for the error message.
uint64_t parse_bytes(std::string_view text, std::string_view what);
// "64 GB/s" -> 64e9 (bytes per second), "25 Gb/s" -> 3.125e9.
double parse_rate(std::string_view text, std::string_view what);
// "989 TFLOPS" -> 989e12 (operations per second).
double parse_flops(std::string_view text, std::string_view what);
// "500ms" or "500" -> 500, "2s" -> 2000, "250us" -> 0.25: milliseconds (a bare number is ms, as vLLM's
// --goodput and SLO dashboards write them).
double parse_duration_ms(std::string_view text, std::string_view what);

double to_gib(uint64_t bytes);
double to_mib(uint64_t bytes);
double to_kib(uint64_t bytes);

// Human-readable with the largest binary unit that keeps the value >= 1: "144 KiB", "1.47 GiB".
// Integral values print without decimals ("1152 MiB"), others with two.
std::string format_bytes(uint64_t bytes);
std::string format_gib(double bytes);  // "81.41 GiB" (two decimals; accepts negative margins)
// The same for byte counts and signed margins, as the planner's and the CLI's messages print them.
inline std::string gib(int64_t bytes) { return format_gib(static_cast<double>(bytes)); }
inline std::string gib(uint64_t bytes) { return format_gib(static_cast<double>(bytes)); }
std::string format_mib(double bytes);  // "1152.00 MiB"
std::string format_rate(double bytes_per_s);   // "64 GB/s", "4.8 TB/s"
std::string format_flops(double ops_per_s);    // "989 TFLOPS"
std::string format_int_ops(double ops_per_s);  // integer math as datasheets give it: "1979 TOPS"
// Seconds as milliseconds to the picosecond, so that a latency given in microseconds prints as
// written (35 us: 0.035, not 0.034999999999999996).
double to_ms_exact(double seconds);

}  // namespace infer_plan

namespace infer_plan {
// Token counts: "8192", "8K" / "8k" (x 1024), "1M" (x 1048576), as the seed writes contexts.
uint64_t parse_tokens(std::string_view text, std::string_view what);
}  // namespace infer_plan
