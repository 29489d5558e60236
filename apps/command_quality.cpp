// `infer-plan quality`: what a weight and KV type cost in quality beside what they buy in memory
// and speed. A reference model (a .gguf's own F16/BF16 weights, or synthetic ones at --reference)
// and the same model at the plan's types (quantized on load with the project's quantizers) run
// on the same text; it prints what llama-perplexity --kl-divergence prints (runtime/quality).
#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "apps/commands.hpp"
#include "apps/format.hpp"
#include "apps/output.hpp"
#include "apps/plan_options.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/plan/predict.hpp"
#include "planner/weights/gguf_reader.hpp"
#include "planner/weights/weights_size.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/quality.hpp"
#include "runtime/thread_pool.hpp"
#include "tokenizer/tokenizer.hpp"

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
  plan.requests = 1;
  plan.output = 1;
  const ResolvedPlan rp = resolve_plan(plan);
  const ModelSpec& spec = rp.spec;
  const bool from_file = is_gguf_path(spec.source);
  Plan reference_plan = plan;
  reference_plan.weights = from_file ? "file" : a.reference;
  reference_plan.kv = {GgmlType::F16, GgmlType::F16};  // llama.cpp's default KV, its baseline's too
  const ResolvedPlan ref = resolve_plan(reference_plan);

  // The text, through the model's tokenizer.
  const tokenizer::Tokenizer tok(tokenizer::vocabulary_for(spec));
  const std::string text = a.text_file.empty() ? std::string(tokenizer::synthetic_corpus()) : read_text_file(a.text_file);
  const std::vector<uint32_t> tokens = tok.encode(text);

  runtime::CpuBackend backend;
  runtime::ThreadPool pool(a.threads);
  const bool tty = !a.quiet && isatty(fileno(stderr));
  if (tty) fmt::print(stderr, "\r\033[Kquality: writing the reference ({}) and the model at {}", ref.weights.label, rp.weights.label);
  const runtime::ModelWeights reference =
      from_file ? runtime::ModelWeights(backend, spec, ref.weights.layout, spec.source, pool)
                : runtime::ModelWeights(backend, spec, ref.weights.layout, a.seed, pool);
  const runtime::ModelWeights quantized(backend, reference, rp.weights.layout, pool);
  const runtime::QualityFigures q = runtime::compare_quality(
      backend, pool, {&reference, reference_plan.kv}, {&quantized, plan.kv}, tokens, plan.context, a.chunks,
      [&](uint64_t done, uint64_t chunks) {
        if (tty) fmt::print(stderr, "\r\033[Kquality: chunk {}/{}", done, chunks);
      });
  if (tty) fmt::print(stderr, "\r\033[K");

  std::string source = ref.weights.label;
  for (const TensorPlacement& p : ref.weights.layout.tensors)
    if (!p.tensor.is_vector() && p.type != GgmlType::F16 && p.type != GgmlType::BF16 && p.type != GgmlType::F32) {
      source += fmt::format(" (itself quantized: {} is {})", p.tensor.name, ggml_type_info(p.type).name);
      break;
    }
  std::string source_source;
  const double ms = plan_iteration_s(rp, &source_source) * 1e3, ref_ms = plan_iteration_s(ref, &source_source) * 1e3;
  const uint64_t kv = kv_bytes_per_token(spec, plan.kv), ref_kv = kv_bytes_per_token(spec, reference_plan.kv);
  const std::string note = from_file ? "" : "synthetic weights: this measures how quantization noise propagates "
                                            "through the network, not what a trained model loses";
  Json j{{"model", spec.name},
         {"weights", rp.weights.label},
         {"kv_k", std::string(ggml_type_info(plan.kv.k).name)},
         {"kv_v", std::string(ggml_type_info(plan.kv.v).name)},
         {"reference", source},
         {"text", a.text_file.empty() ? "built-in" : a.text_file},
         {"text_tokens", tokens.size()},
         {"context", plan.context},
         {"chunks", q.chunks},
         {"positions", q.positions},
         {"ppl", q.ppl_quantized},
         {"ppl_reference", q.ppl_reference},
         {"ln_ppl_ratio", q.ln_ppl_ratio},
         {"ln_ppl_ratio_stderr", q.ln_ppl_ratio_stderr},
         {"kld_mean", q.kld_mean},
         {"kld_stderr", q.kld_stderr},
         {"kld_p99", q.kld_p99},
         {"kld_max", q.kld_max},
         {"top1_agreement", q.top1_agreement},
         {"top1_stderr", q.top1_stderr},
         {"weights_bytes", rp.weights.bytes},
         {"reference_weights_bytes", ref.weights.bytes},
         {"kv_bytes_per_token", kv},
         {"reference_kv_bytes_per_token", ref_kv},
         {"hw", rp.hw.name},
         {"decode_iteration_ms", ms},
         {"reference_decode_iteration_ms", ref_ms}};
  if (!note.empty()) j["note"] = note;
  if (a.out.json()) {
    print_json(j);
    return;
  }
  fmt::print("quality of {} at {}, KV {}/{}, against {} with KV F16/F16\n", spec.name, rp.weights.label,
             ggml_type_info(plan.kv.k).name, ggml_type_info(plan.kv.v).name, source);
  fmt::print("  text: {} ({} tokens), {} chunks of {}, {} positions scored (the second half of each chunk)\n",
             a.text_file.empty() ? "built-in" : a.text_file, tokens.size(), q.chunks, plan.context, q.positions);
  fmt::print("  Mean PPL(Q)          {:.4f}\n", q.ppl_quantized);
  fmt::print("  Mean PPL(ref)        {:.4f}\n", q.ppl_reference);
  fmt::print("  ln(PPL(Q)/PPL(ref))  {:.6f} ± {:.6f}\n", q.ln_ppl_ratio, q.ln_ppl_ratio_stderr);
  fmt::print("  Mean KLD             {:.6f} ± {:.6f}\n", q.kld_mean, q.kld_stderr);
  fmt::print("  99.0% KLD            {:.6f}\n", q.kld_p99);
  fmt::print("  Maximum KLD          {:.6f}\n", q.kld_max);
  fmt::print("  Same top p           {:.3f} ± {:.3f} %\n", 100 * q.top1_agreement, 100 * q.top1_stderr);
  fmt::print("  buys                 weights {} (reference {}), KV {}/token ({}), decode {:.3f} ms/step ({:.3f}) "
             "predicted on {}\n", format_bytes(rp.weights.bytes), format_bytes(ref.weights.bytes), format_bytes(kv),
             format_bytes(ref_kv), ms, ref_ms, rp.hw.name);
  if (!note.empty()) fmt::print("  note: {}\n", note);
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
