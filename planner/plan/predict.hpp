// planner::predict: a Plan in, the predicted Figures out (the left half of DESIGN's picture).
// Each section is what the matching command prints with --json.
#pragma once
#include <memory>

#include "planner/catalog/catalog.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/cost/offload.hpp"
#include "planner/plan/plan.hpp"
#include "planner/cost/roofline.hpp"
#include "planner/cost/memory_fit.hpp"
#include "planner/cost/speculative.hpp"
#include "planner/serving/littles_law.hpp"
#include "planner/serving/pd_serving.hpp"
#include "planner/serving/serving_sim.hpp"
#include "planner/weights/weights_size.hpp"

namespace infer_plan {

// A plan's named inputs, loaded and checked once, with what every evaluator reads of them: the
// roofline (or the calibrated step model), the memory fit and the server the serving simulation
// runs. Nobody fits or builds a server model again.
struct ResolvedPlan {
  Plan plan;
  ModelSpec spec;
  HwProfile hw;
  PlanWeights weights;
  // The engine whose step model the roofline uses: the plan's, else the profile's own
  // calibration's, else the one the weights are served with (default_engine), whose memory the
  // fit then leaves out and the server's pool counts (pool_fit); empty: none (engine "none": the
  // bare ceiling).
  std::string engine;
  std::string engine_choice;  // why, when chosen from the weights: "Q4_K_M is a GGUF type"
  std::unique_ptr<Roofline> roofline;
  // llama.cpp's layer split, when the plan keeps fewer than every layer on the device (gpu_layers,
  // or auto: the most that fit); the fit and the server's steps count it.
  std::optional<LayerSplit> split;
  // The plan's memory fit, with its derivation; an offload section's groups and slots counted.
  FitResult fit;
  // What the server's KV pool is: fit, or where the engine was chosen from the weights, fit with
  // that engine's allocations counted too, as its scheduler and step times already are.
  FitResult pool_fit;
  // Roofline steps, the KV pool fit sized (requests x context, whole pages), at most
  // load.max_batch running (requests without a load). Its steps read *roofline (the pointer
  // stays valid when the ResolvedPlan moves).
  ServerModel server;
};
ResolvedPlan resolve_plan(const Plan& plan);
// InputError, naming why, when the plan's engine (planner/cost/engine_capabilities) cannot run its
// weights, KV types or offload section on a real device. resolve_plan does not ask: the CPU runtime
// executes an engine's scheduling policy on any GGUF weights (report's plans).
void require_engine_runs(const ResolvedPlan& rp);
// The engine a plan that names none is served with, and why: llama.cpp for GGUF weights (a
// .gguf, a llama.cpp file type or a GGML quantization) and on devices vLLM does not serve (Apple,
// CPUs); vLLM for a checkpoint format, or 16- and 32-bit weights of a Hugging Face model, on an
// NVIDIA or AMD GPU (or a profile that does not say its architecture).
std::pair<std::string, std::string> default_engine(const ModelSpec& spec, const PlanWeights& weights, const HwProfile& hw);
// ... with `steps` as the step model in place of the engine's built-in one (what a fit of an
// engine's published runs predicts those runs with, before it is the engine's).
ResolvedPlan resolve_plan(const Plan& plan, const StepCalibration& steps);
// The load a plan's `load` section offers: each request holds `context` tokens of KV, a prompt of
// context - output tokens and `output` generated tokens; arrivals at load.rate_per_s.
ServingLoad plan_serving_load(const Plan& plan);
// A load given by its mean number in the system (load.in_system) and no rate: the Poisson rate at
// which the serving simulation on the plan's server keeps that many requests in the system on
// average (a time average, as the runtime measures it), within 2%. InputError when no rate
// reaches it (more than the load's requests, or than its server holds).
double solve_serving_rate(const ResolvedPlan& rp);
// What the plan's step times come from, for a line of text: "roofline ceiling", or
// "vllm step model (transferred)".
std::string step_model_name(const ResolvedPlan& rp);
// A calibrated step's band for a line of text, "53.05-81.59 ms"; empty for a ceiling (no band).
std::string step_band_text(const StepCost& c);
// llama.cpp's automatic fit (on by default since late 2025; common/fit.cpp): it changes only what the user
// left at its default so that every device keeps `target_free_bytes` free (--fit-target, 1 GiB):
// first the context, when -c was not given (from the model's trained context down to min_context,
// --fit-ctx 4096, in steps of 256), then for a mixture of experts the routed experts of the first
// layers in host memory (--n-cpu-moe), then the layers on the device (-ngl). One device only.
struct LlamaCppFit {
  uint64_t target_free_bytes = uint64_t{1} << 30;
  uint64_t min_context = 4096;
  bool context_given = false;  // -c set: the context stays
  bool layers_given = false;   // -ngl, --n-cpu-moe set: llama.cpp's fit leaves the layers as they are
};
struct LlamaCppFitChoice {
  Plan plan;                       // the plan with what the fit chose
  bool context_changed = false, layers_changed = false;
  bool met = false;                // every device keeps the target free
  std::vector<std::string> steps;  // what it did, one line each
};
LlamaCppFitChoice llama_cpp_fit(const Plan& plan, const LlamaCppFit& fit);
// How the plan's devices share the model, for a line of text: "tensor parallel over 4 devices", or
// for llama.cpp, which gives each device whole layers, "layers split over 2 devices".
std::string devices_label(const ResolvedPlan& rp);
// The plan's model at the plan's scale: the shape the planner predicts and the runtime executes.
ModelSpec plan_model_spec(const Plan& plan);

// The decode iteration the plan uses: its measured decode_ms, else the roofline at the plan's
// batch (requests) and context; `source` says which.
double plan_iteration_s(const ResolvedPlan& rp, std::string* source);

// What the plan's offload section moves off the device and its slots take (offload_memory), for
// fit; nullopt without an offload section.
std::optional<OffloadMemory> plan_offload_memory(const Plan& plan, const ModelSpec& spec, const PlanWeights& weights);

// The offload planner's inputs from a plan with an offload section: the link (named, or the
// profile's first host link), the batch and lengths, and plan_iteration_s.
OffloadInput plan_offload_input(const ResolvedPlan& rp, LinkProfile* link_used = nullptr);

// The roofline of a speculative plan's draft: the target's first draft_layers blocks (same
// weights, KV types and hardware), or the named draft model resolved like the plan's. InputError
// when draft_layers exceeds the target's layers; null when the plan gives times instead.
std::unique_ptr<Roofline> plan_draft_roofline(const ResolvedPlan& rp);

// The planner's figures for a plan, as types (planner/plan/figures writes them as JSON). Sections
// present: fit, roofline, quant and kv always; queue when the load gives two of Little's three
// quantities; serving with load.simulate; spec and offload with their plan sections.
struct ServingPrediction {
  ServingResult result;  // Poisson arrivals on the plan's server (ResolvedPlan::server)
  uint64_t kv_capacity_tokens = 0;
  double rate_per_s = 0;
};
struct SpecPrediction {
  SpecResult table;
  double draft_ms = 0;                 // one draft position
  std::optional<uint64_t> block;       // the block the plan runs, inside the table
};
struct OffloadPrediction {
  OffloadResult result;
  std::string link;                    // the link's name
};
// The plan's pd section: its split and as many colocated servers under the load's arrivals.
struct PdPrediction {
  std::string link;                 // the link's name
  double link_bytes_per_s = 0;      // its bandwidth times pd.link_scale
  double link_message_s = 0;        // its latency per transfer over pd.link_scale
  uint64_t kv_transfer_bytes = 0;   // one request's KV (every prompt is context - output tokens)
  double kv_transfer_s = 0;         // that over the idle link, a latency per transfer included
  uint64_t prefill_workers = 0, decode_workers = 0;
  bool stream = false;              // layer by layer, overlapping the prefill
  PdServingResult split;
  ServedSummary split_served, colocated;
  PdChoice choice = PdChoice::colocate;
};
struct KvTypeCost {
  GgmlType type;
  uint64_t bytes_per_token = 0;        // K and V of this type, all layers, per device
};
struct Prediction {
  std::string model, hw;
  FitResult fit;
  std::optional<LittleResult> queue;
  std::optional<ServingPrediction> serving;
  LatencyEstimate latency;             // at the plan's requests, context and output
  RooflineRates rates;
  const GgmlTypeInfo* weights_type = nullptr;  // the weight type when it is one GGML type
  uint64_t context = 0;                // tokens per request (the kv section's per-request bytes)
  std::vector<KvTypeCost> kv;          // the common cache types, BF16 first
  std::optional<SpecPrediction> spec;
  std::optional<OffloadPrediction> offload;
  std::optional<PdPrediction> pd;
};

// The plan's disaggregated server (its pd section) as both evaluators run it: each prefill worker's
// prefill and each decode worker's steps by the plan's step model, the link scaled.
PdServerModel plan_pd_server(const ResolvedPlan& rp);
// The same from its parts (the pd command's flags): prefill and decode by `server`, a request's
// prompt KV over `link`, streamed a layer at a time once its attention has written it, in each of
// the server's forward passes over the prompt (ServerModel::prefill_pass_tokens).
PdServerModel pd_server_model(const ServerModel& server, const ModelSpec& spec, KvTypes kv, const LinkProfile& link,
                              uint64_t prefill_workers, uint64_t decode_workers, bool stream);
// pd.link, its bandwidth times pd.link_scale and its latency over it (a link slowed in proportion)
LinkProfile plan_pd_link(const Plan& plan);

Prediction predict(const ResolvedPlan& rp);
// predict(resolve_plan(plan)) as the Figures JSON the commands print and scenarios address.
Json predicted_figures(const Plan& plan);

}  // namespace infer_plan
