#include "apps/quality_report.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "apps/format.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/kv_cache.hpp"
#include "planner/plan/predict.hpp"
#include "planner/weights/gguf_reader.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/quality.hpp"
#include "runtime/thread_pool.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer_plan::apps {

Json measure_quality(Plan plan, const QualityInputs& in) {
  plan.context = in.context;
  plan.requests = 1;
  plan.output = 1;
  plan.load.reset();
  plan.speculative.reset();
  plan.offload.reset();
  const ResolvedPlan rp = resolve_plan(plan);
  const ModelSpec& spec = rp.spec;
  const bool from_file = is_gguf_path(spec.source);
  Plan reference_plan = plan;
  reference_plan.weights = from_file ? "file" : in.reference;
  reference_plan.kv = {GgmlType::F16, GgmlType::F16};  // llama.cpp's default KV, its baseline's too
  const ResolvedPlan ref = resolve_plan(reference_plan);

  // The text, through the model's tokenizer.
  const tokenizer::Tokenizer tok(tokenizer::vocabulary_for(spec));
  const std::string text = in.text_file.empty() ? std::string(tokenizer::synthetic_corpus()) : read_text_file(in.text_file);
  const std::vector<uint32_t> tokens = tok.encode(text);

  runtime::CpuBackend backend;
  runtime::ThreadPool pool(in.threads);
  const bool tty = !in.quiet && isatty(fileno(stderr));
  if (tty) fmt::print(stderr, "\r\033[Kquality: writing the reference ({}) and the model at {}", ref.weights.label, rp.weights.label);
  const runtime::ModelWeights reference =
      from_file ? runtime::ModelWeights(backend, spec, ref.weights.layout, spec.source, pool)
                : runtime::ModelWeights(backend, spec, ref.weights.layout, in.seed, pool);
  const runtime::ModelWeights quantized(backend, reference, rp.weights.layout, pool);
  const runtime::QualityFigures q = runtime::compare_quality(
      backend, pool, {&reference, reference_plan.kv}, {&quantized, plan.kv}, tokens, plan.context, in.chunks,
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
  std::string from;
  const double ms = plan_iteration_s(rp, &from) * 1e3, ref_ms = plan_iteration_s(ref, &from) * 1e3;
  Json j{{"model", spec.name},
         {"weights", rp.weights.label},
         {"kv_k", std::string(ggml_type_info(plan.kv.k).name)},
         {"kv_v", std::string(ggml_type_info(plan.kv.v).name)},
         {"reference", source},
         {"text", in.text_file.empty() ? "built-in" : in.text_file},
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
         {"kv_bytes_per_token", kv_bytes_per_token(spec, plan.kv)},
         {"reference_kv_bytes_per_token", kv_bytes_per_token(spec, reference_plan.kv)},
         {"hw", rp.hw.name},
         {"decode_iteration_ms", ms},
         {"reference_decode_iteration_ms", ref_ms}};
  const GgufValue* synthetic = from_file ? read_gguf_model(spec.source).find(kSyntheticWeightsKey) : nullptr;
  if (!from_file || (synthetic && synthetic->type == GgufType::boolean && synthetic->u64))
    j["note"] = "synthetic weights: this measures how quantization noise propagates through the network, not what a "
                "trained model loses";
  return j;
}

std::string quality_text(const Json& q) {
  const auto d = [&](const char* key) { return q.at(key).get<double>(); };
  const auto u = [&](const char* key) { return q.at(key).get<uint64_t>(); };
  std::string t = fmt::format("quality of {} at {}, KV {}/{}, against {} with KV F16/F16\n",
                              q.at("model").get<std::string>(), q.at("weights").get<std::string>(),
                              q.at("kv_k").get<std::string>(), q.at("kv_v").get<std::string>(),
                              q.at("reference").get<std::string>());
  t += fmt::format("  text: {} ({} tokens), {} chunks of {}, {} positions scored (the second half of each chunk)\n",
                   q.at("text").get<std::string>(), u("text_tokens"), u("chunks"), u("context"), u("positions"));
  t += fmt::format("  Mean PPL(Q)          {:.6g}\n", d("ppl"));
  t += fmt::format("  Mean PPL(ref)        {:.6g}\n", d("ppl_reference"));
  t += fmt::format("  ln(PPL(Q)/PPL(ref))  {:.6f} ± {:.6f}\n", d("ln_ppl_ratio"), d("ln_ppl_ratio_stderr"));
  t += fmt::format("  Mean KLD             {:.6f} ± {:.6f}\n", d("kld_mean"), d("kld_stderr"));
  t += fmt::format("  99.0% KLD            {:.6f}\n", d("kld_p99"));
  t += fmt::format("  Maximum KLD          {:.6f}\n", d("kld_max"));
  t += fmt::format("  Same top p           {:.3f} ± {:.3f} %\n", 100 * d("top1_agreement"), 100 * d("top1_stderr"));
  t += fmt::format("  buys                 weights {} (reference {}), KV {}/token ({}), decode {:.4g} ms/step ({:.4g}) "
                   "predicted on {}\n", format_bytes(u("weights_bytes")), format_bytes(u("reference_weights_bytes")),
                   format_bytes(u("kv_bytes_per_token")), format_bytes(u("reference_kv_bytes_per_token")),
                   d("decode_iteration_ms"), d("reference_decode_iteration_ms"), q.at("hw").get<std::string>());
  if (q.contains("note")) t += fmt::format("  note: {}\n", q.at("note").get<std::string>());
  return t;
}

}  // namespace infer_plan::apps
