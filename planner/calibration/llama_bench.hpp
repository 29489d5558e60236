// Measurements in the formats users already have: llama-bench's `-o json` (an array of objects),
// `-o jsonl`, `-o csv` and the markdown table it prints by default, plus the project's own data
// files (an object whose "points" are llama-bench objects with a "source" URL each). One row is
// one test of one model file: "tg128" (n_gen 128, decode) or "pp512" (n_prompt 512, prefill).
// Served runs (planner/calibration/serving_bench: `vllm bench serve --save-result`, infer-plan's own
// `report --json`) give decode steps at a batch and context: `step_s`, `batch`, `context`.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infer_plan {

struct BenchRow {
  std::string model_type;                // "llama 7B Q4_0", "qwen2 7B Q4_K - Medium"
  std::optional<uint64_t> model_bytes;   // the file's size (model_size)
  std::optional<double> params;          // model_n_params
  uint64_t n_prompt = 0;                 // pp512 -> 512
  uint64_t n_gen = 0;                    // tg128 -> 128
  uint64_t n_depth = 0;                  // tokens already in the KV cache ("tg128 @ d512")
  uint64_t n_ubatch = 0;                 // -ub: a prompt's micro-batch; 0: not stated (llama-bench's 512)
  double tokens_per_s = 0;               // avg_ts
  std::optional<double> stddev_tokens_per_s;
  std::string kv_k, kv_v;                // type_k / type_v ("f16"); empty when not stated
  std::string backend, gpu_info, build;  // as printed; build: commit or build number
  std::string source;                    // a URL (data files) or empty
  std::string model;                     // data files: the infer-plan model the source names
  std::string exclude;                   // data files: why this row is kept out of fits
  std::string origin;                    // "file.md:7", for messages and the point table
  // Served runs: a decode step measured directly, at `batch` sequences of `context` tokens each
  // (0: the test's n_depth + n_gen / 2); the weights type when model_type is not llama-bench's
  // (vLLM's "BF16"); the model's shrink factor (infer-plan's CPU runs); the engine that measured.
  double step_s = 0;
  uint64_t batch = 1;
  uint64_t context = 0;
  std::string file_type;
  double model_scale = 1;
  std::string engine;
  std::string test;                      // the test's name when not tg/pp ("served, 12 in flight")

  bool is_decode() const { return n_gen > 0 && n_prompt == 0; }
  bool is_prefill() const { return n_prompt > 0 && n_gen == 0; }
  // Seconds per decode step (1 / t/s) or per prompt (n_prompt / t/s).
  double measured_s() const;
  std::string test_name() const;         // "tg128", "pp512", "pp512+tg128"
};

// The file's rows, format detected from its text. InputError (file, line, what was expected) on
// anything unreadable; rows that are not single tests (pp512+tg128) are kept and left to the
// caller to skip with a reason.
std::vector<BenchRow> read_bench_file(const std::string& path);
std::vector<BenchRow> parse_bench_text(std::string_view text, const std::string& origin);

// The parts of a llama-bench model_type: "llama 7B Q4_K - Medium" -> arch "llama", size "7B",
// file type "Q4_K_M" (llama.cpp's ftype name, as llama-quantize spells it; "mostly" dropped).
struct BenchModelType {
  std::string arch, size_label, file_type;
};
BenchModelType parse_bench_model_type(std::string_view model_type, std::string_view where);

// The era of engine builds a measurement stands for, read from its build as printed: a build
// number in parentheses ("4426e298 (2824)": b4400 on is 2025), else the latest year it names
// ("PR #16834 master column, 2025-10-29"); neither: before 2025. A type a pool of devices never
// read is priced from a wider pool's points of the same era, and a device with no data is
// predicted as today's builds run.
enum class BuildEra { before_2025, from_2025 };
BuildEra build_era(const std::string& build);

}  // namespace infer_plan
