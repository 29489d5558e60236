// `infer-plan gguf write`: a model's shape with synthetic weights at a llama.cpp file type, and a
// synthetic byte-level BPE vocabulary, as a GGUF that llama.cpp loads: the same file in both
// engines, for comparing what they compute (tests/conformance) or how fast.
#include <fmt/format.h>

#include <memory>

#include "apps/commands.hpp"
#include "apps/format.hpp"
#include "apps/quality_report.hpp"
#include "apps/run_options.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/units.hpp"
#include "planner/model/model_scale.hpp"
#include "planner/weights/gguf_recipe.hpp"
#include "planner/weights/gguf_writer.hpp"
#include "planner/weights/weights_size.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/thread_pool.hpp"
#include "tokenizer/vocabulary.hpp"

namespace infer_plan::apps {
namespace {

struct WriteArgs {
  std::string model = "qwen3-0.6b";
  std::string type = "Q8_0";
  std::string out;
  double scale = 1.0;
  uint64_t seed = 1;
  std::string vocab = "bpe";
  bool quiet = false;
};

void run_write(const WriteArgs& a) {
  if (a.out.empty()) throw InputError("gguf write: --out FILE is required (the .gguf to write)");
  check_output_path(a.out, "--out");
  const ModelSpec spec = scale_model_spec(load_model(a.model), a.scale, "--scale");
  // What run -w takes: a llama.cpp file type (its per-tensor rules), TYPE:pure, a GGML type.
  const WeightsLayout layout = plan_weights(spec, a.type, std::nullopt).layout;
  const std::string base = a.type.substr(0, a.type.find(':'));
  const std::optional<LlamaFileTypeInfo> ftype = find_llama_file_type(base);
  uint64_t bytes = 0;
  for (const TensorPlacement& p : layout.tensors) bytes += p.bytes;
  runtime::CpuBackend backend;
  // The weights are written once in memory, then copied into the file's tensors: twice their size.
  if (const auto available = backend.available_bytes(runtime::MemoryCategory::weights); available && 2 * bytes > *available)
    throw InputError(fmt::format("gguf write: {} at {} is {}; writing it needs twice that in memory and {} is "
                                 "available (lower --scale)", spec.name, layout.file_type, format_gib(static_cast<double>(bytes)),
                                 format_gib(static_cast<double>(*available))));
  const tokenizer::Vocabulary vocab = tokenizer::synthetic_vocabulary(
      spec, a.vocab == "spm" ? tokenizer::VocabularyKind::sentencepiece : tokenizer::VocabularyKind::bpe);
  if (!a.quiet)
    fmt::print(stderr, "writing {} synthetic weights at {} ({}) and a {}-token vocabulary\n", spec.name, layout.file_type,
               format_bytes(bytes), vocab.size());
  runtime::ThreadPool pool(0);
  const runtime::ModelWeights weights(backend, spec, layout, a.seed, pool);
  std::vector<GgufTensorData> tensors;
  for (const runtime::WeightTensor& w : weights.tensors())
    tensors.push_back({w.placement.tensor.name, w.placement.tensor.shape, w.type(),
                       w.ggml_bytes()});
  std::vector<GgufKeyValue> metadata = gguf_metadata_for(spec);
  if (ftype) metadata.push_back({"general.file_type", GgufValue::of_u32(static_cast<uint32_t>(ftype->ftype))});
  // Says so to quality, which then notes that its figures measure noise propagation only.
  metadata.push_back({std::string(kSyntheticWeightsKey), GgufValue::of_bool(true)});
  for (GgufKeyValue& kv : tokenizer::vocabulary_metadata(vocab)) metadata.push_back(std::move(kv));
  write_gguf(a.out, metadata, tensors);
  fmt::print("{}: {} at {}, {} tensors, {} of weights, vocabulary of {} tokens ({}, {} merges)\n", a.out, spec.name,
             layout.file_type, tensors.size(), format_bytes(bytes), vocab.size(),
             vocab.model == "gpt2" ? vocab.pre : "SentencePiece", vocab.model == "gpt2" ? vocab.merges.size() : 0);
}

}  // namespace

void add_gguf_write_command(CLI::App& gguf) {
  auto args = std::make_shared<WriteArgs>();
  CLI::App* w = gguf.add_subcommand(
      "write", "Write a model's shape with synthetic weights at a llama.cpp file type (and a synthetic vocabulary) "
               "as a GGUF llama.cpp loads");
  w->add_option("--model,-m", args->model,
                "Model: a built-in name or a Hugging Face config.json (default qwen3-0.6b)");
  w->add_option("--weights,-w,--type", args->type,
                "The weights' types, as run -w takes them: a llama.cpp file type (F16, Q8_0, Q4_K_M: its per-tensor "
                "rules), TYPE:pure (one type throughout, e.g. Q4_0:pure), or a GGML type (default Q8_0)");
  w->add_option("--out", args->out, "The .gguf file to write")->type_name("FILE");
  w->add_option("--scale", args->scale, "Shrink the model's widths, layers and vocabulary by this factor, as run does")
      ->type_name("S");
  w->add_option("--seed", args->seed, "Seed of the synthetic weights (default 1; run --seed draws the same ones)")
      ->type_name("N");
  w->add_option("--vocab", args->vocab,
                "The synthetic vocabulary: bpe (byte-level, the family's pre-tokenizer: Qwen's, Llama 3's) or spm "
                "(SentencePiece, as Llama 2 and Mistral; default bpe)")
      ->check(CLI::IsMember({"bpe", "spm"}))
      ->type_name("bpe|spm");
  w->add_flag("--quiet,-q", args->quiet, "No progress line on stderr");
  w->footer("Examples:\n"
            "  infer-plan gguf write -m qwen3-0.6b --scale 0.25 -w Q4_0:pure --out tiny.gguf\n"
            "  infer-plan gguf write -m tests/data/tiny_config.json --type F16 --out toy.gguf");
  w->callback([args] { run_write(*args); });
}

}  // namespace infer_plan::apps
