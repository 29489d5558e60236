// `infer-plan quality`: what a weight and KV type cost in quality beside what they buy in memory
// and speed. A reference model (a .gguf's own F16/BF16 weights, or synthetic ones at --reference)
// and the same model at the plan's types (quantized on load with the project's quantizers) run
// on the same text; it prints what llama-perplexity --kl-divergence prints (runtime/quality).
#include <fmt/format.h>

#include <memory>

#include "apps/commands.hpp"
#include "apps/output.hpp"
#include "apps/plan_options.hpp"
#include "apps/quality_report.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan::apps {
namespace {

struct QualityArgs {
  PlanOptions plan;
  std::string text_file;
  std::string reference = "F16";
  uint64_t chunks = 0;
  uint64_t seed = 1;
  unsigned threads = 0;
  bool quiet = false;
  OutputOptions out;
};

void run_quality(const QualityArgs& a) {
  if (a.plan.weights.empty())
    throw InputError("quality: -w names the weights to compare with the reference, e.g. -w Q4_0:pure (a llama.cpp "
                     "file type, TYPE:pure or a GGML type)");
  Plan plan = a.plan.resolve();
  if (a.plan.ctx.empty()) plan.context = 512;  // llama-perplexity's default chunk
  // The compared KV is the reference's F16 unless given, so that the weights alone are compared.
  if (a.plan.kv.empty() && a.plan.plan_file.empty()) {
    if (a.plan.kv_k.empty()) plan.kv.k = GgmlType::F16;
    if (a.plan.kv_v.empty()) plan.kv.v = GgmlType::F16;
  }
  const Json j = measure_quality(plan, {a.text_file, a.reference, plan.context, a.chunks, a.seed, a.threads, a.quiet});
  if (a.out.json()) {
    print_json(j);
    return;
  }
  fmt::print("{}", quality_text(j));
}

}  // namespace

void add_quality_command(CLI::App& app) {
  auto args = std::make_shared<QualityArgs>();
  CLI::App* cmd = app.add_subcommand(
      "quality", "What a weight and KV type cost in quality (KL divergence, top-1 agreement, perplexity, as "
                 "llama-perplexity --kl-divergence) beside what they buy in memory and speed");
  args->plan.add_to(*cmd, PlanOptions::kModel | PlanOptions::kMemory);
  cmd->add_option("--file,-f", args->text_file,
                  "The text to score (default: a built-in text of about a thousand tokens)")->type_name("FILE");
  cmd->add_option("--reference", args->reference,
                  "The reference weights for a model without a .gguf (synthetic weights; default F16). A .gguf's "
                  "reference is its own weights")->type_name("TYPE");
  cmd->add_option("--chunks", args->chunks, "At most this many chunks of --ctx-size tokens (default: all)")->type_name("N");
  cmd->add_option("--seed", args->seed, "Seed of synthetic reference weights (default 1)")->type_name("N");
  cmd->add_option("--threads,-t", args->threads, "CPU threads (default: one per hardware thread)")->type_name("N");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress on stderr");
  args->out.add_to(*cmd, false);
  cmd->footer("The reference runs with KV at F16 (llama.cpp's default); -ctk/-ctv set the compared model's.\n"
              "--ctx-size is the chunk (default 512, as llama-perplexity). Examples:\n"
              "  infer-plan quality -m model-f16.gguf -w Q4_K_M -f wiki.test.raw\n"
              "  infer-plan quality -m qwen3-0.6b --scale 0.25 -w Q8_0:pure,Q4_0:pure,Q2_K:pure");
  cmd->callback([args] { run_quality(*args); });
}

}  // namespace infer_plan::apps
