// The flags that assemble a Plan (--model, --hw, --weights, --kv, --ctx, ...), shared by every
// command that answers a question about a configuration. A --plan file is read first; flags
// given on the command line override its fields.
#pragma once
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <optional>
#include <string>
#include <vector>

#include "apps/output.hpp"
#include "planner/plan/plan.hpp"
#include "planner/serving/serving_sim.hpp"

namespace infer_plan::apps {

// For flags bound to unsigned integers: CLI11 would otherwise wrap "-3" into 2^64 - 3.
inline const CLI::Validator kNonNegativeCount(
    [](std::string& text) {
      return !text.empty() && text[0] == '-' ? "'" + text + "' is negative; expected a whole number >= 0"
                                             : std::string();
    },
    "", "non-negative count");

// `text` as a number, the whole of it (std::stod stops early and throws); nullopt otherwise.
inline std::optional<double> parse_number(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size()) return std::nullopt;
  return v;
}

// For flags bound to floating-point figures: a number above `lo` (or from it, when `lo_closed`)
// and at most `hi`. CLI11's Range lets NaN through (every comparison with it is false).
inline CLI::Validator number_in(double lo, double hi, bool lo_closed = false) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<double> parsed = parse_number(text);
        if (!parsed) return "'" + text + "' is not a number";
        const double v = *parsed;
        if ((lo_closed ? v >= lo : v > lo) && v <= hi) return {};
        return fmt::format("{} is out of range; expected {} {:g} and at most {:g}", text,
                           lo_closed ? "at least" : "above", lo, hi);
      },
      "", "number in range");
}
inline const CLI::Validator kPositiveMs = number_in(0, kMaxTimeS * 1e3);
inline const CLI::Validator kNonNegativeMs = number_in(0, kMaxTimeS * 1e3, true);
inline const CLI::Validator kPositiveSeconds = number_in(0, kMaxTimeS);
inline const CLI::Validator kNonNegativeSeconds = number_in(0, kMaxTimeS, true);
inline const CLI::Validator kArrivalRate = number_in(0, kMaxArrivalRate);
inline const CLI::Validator kFraction = number_in(0, 1, true);

// Prefix caching's flags as vLLM names them (--enable-prefix-caching, --no-enable-prefix-caching; SGLang's
// --disable-radix-cache is the second), for every command that plans a server; the setting they give
// (nullopt: neither, the engine's default), InputError when both are given.
std::pair<CLI::Option*, CLI::Option*> add_prefix_caching_flags(CLI::App& cmd, bool& enable, bool& disable);
std::optional<bool> prefix_caching_setting(bool enable, bool disable);
// vLLM bench's --goodput KEY:MS ... (ttft, tpot, e2el; milliseconds): InputError naming the flag.
ServingLoad::Goodput parse_goodput(const std::vector<std::string>& limits);

// --tp-link's value, once it names a link (built-in or a path): InputError naming the flag otherwise.
std::string checked_tp_link(const std::string& value);

// The help of --model and of --kv, from the tables of built-in models and KV types (every command
// that takes them says the same).
std::string model_option_help(std::string_view default_model);
std::string kv_option_help(std::string_view default_note);

struct PlanOptions {
  std::string plan_file;
  std::string model, hw, engine, weights, weights_size, kv, kv_k, kv_v, ctx, gpu_layers, host_memory, host_bandwidth;
  std::optional<uint64_t> requests, tp, output;
  std::optional<double> decode_ms, deadline_s, scale, gpu_memory_utilization, mem_fraction_static,
      free_gpu_memory_fraction;
  std::optional<uint64_t> max_num_seqs, max_num_batched_tokens, cuda_graph_max_bs;
  std::string quantization;
  std::string split_mode;    // llama.cpp's -sm: layer (the only one modelled), none, row  // vLLM's and SGLang's --quantization: a checkpoint format by their name
  std::string gpu_wired_limit, flash_attn, tensor_split, engine_version, devices, tp_link;
  std::optional<uint64_t> ubatch, batch, n_cpu_moe;
  bool cpu_moe = false, enforce_eager = false;
  bool enable_prefix_caching = false, no_prefix_caching = false;  // vLLM's pair (SGLang: --disable-radix-cache)
  std::vector<std::string> reserves;  // NAME=SIZE
  std::vector<std::string> override_tensor;  // -ot REGEX=BUFFER[,...], each occurrence

  // Which groups of flags the command takes (bits, combined with |).
  static constexpr unsigned kModel = 1;      // --model --scale --kv --ctx --requests --tp --plan
  static constexpr unsigned kMemory = 2;     // --hw --engine --weights --weights-size --reserve -ngl --host-*
  static constexpr unsigned kGeneration = 4; // --output --decode-ms --deadline
  void add_to(CLI::App& cmd, unsigned groups);
  Plan resolve() const;  // throws InputError with the flag's name
};

}  // namespace infer_plan::apps
