// How each engine schedules by default: the batch limit and the tokens one step may carry
// (chunked prefill). One table, read by the serving simulation's server (resolve_plan), the fit of
// the engines' published runs and `queue`'s defaults.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "planner/cost/engine_memory.hpp"
#include "planner/model/hw_profile.hpp"

namespace infer_plan {

// The runtime's forward pass over a prompt (RunOptions::prefill_chunk): a longer prompt takes several.
inline constexpr uint64_t kRuntimePrefillPassTokens = 256;

struct EnginePolicy {
  uint64_t max_batch = 256;                      // requests running at once
  std::optional<uint64_t> step_token_budget;     // chunked prefill; absent: a prefill stalls the batch
  bool mix_decodes = true, chunk_prompts = true;  // how the budget is spent (ServerModel)
  uint64_t kv_page_tokens = 1;  // the KV pool's block: a request holds whole blocks
  bool kv_on_demand = false;    // blocks as tokens are written, preemption by recompute (ServerModel)
  bool prefix_caching = false;  // a shared prefix's blocks computed once (ServerModel)
  // A prompt's tokens one forward pass takes, every layer's KV written within it (what a streamed
  // disaggregated transfer sends per layer and pass, PdServerModel); 0: the whole prompt in one.
  uint64_t prefill_pass_tokens = kRuntimePrefillPassTokens;
};

// vLLM V1 (vllm/engine/arg_utils.py, get_batch_defaults, for `vllm serve`): max_num_seqs 1024 and
// max_num_batched_tokens 8192 on a device of 70 GiB or more that is not an A100, else 256 and
// 2048. SGLang (server_args, 0.5.4 and later): chunked_prefill_size 2048 below 35 GiB of device
// memory, 4096 below 60, 8192 below 160, else 16384; max_running_requests set by its KV pool (no cap here).
// KV blocks: vLLM's block_size 16, TensorRT-LLM's tokens_per_block 32, SGLang's page_size 1,
// llama.cpp's cells one token each. vLLM (V0 and V1) takes blocks as tokens are written and
// preempts the newest request by recompute when they run out (preemption_mode recompute, V1's
// only one); TensorRT-LLM's default capacity policy (guaranteed no evict) reserves each request's
// whole KV at admission, llama-server's slots hold their context; SGLang's retraction of running
// requests under its token-ratio admission is not modelled (its whole KV is reserved).
// Prefix caching is on by default in vLLM V1 (enable_prefix_caching; off in V0), SGLang (the radix
// cache) and TensorRT-LLM (enable_block_reuse); llama-server's slots reuse only their own last
// prompt (cache_prompt), which is not modelled (off here). SGLang runs a step of prompts whenever it can form one and decodes otherwise (mixed chunks are
// off by default). TensorRT-LLM (trtllm-serve): max_batch_size 2048, max_num_tokens 8192, prompts
// beside the decodes in one step but each whole (chunked context off by default). llama.cpp
// (llama-server, update_slots): each step takes the slots' new tokens, then prompts' tokens up to
// n_batch (field 'batch', -b; 2048), a long prompt over several steps; its running requests are
// its slots (-np). No engine (infer-plan's runtime): 256 running, each prefill a step of its own.
// A prompt's forward pass: the runtime's kRuntimePrefillPassTokens, llama.cpp's micro-batch
// (n_ubatch), the step budget where prompts are chunked (vLLM V1, SGLang), whole where not
// (TensorRT-LLM, vLLM V0).
// A plan's enable_prefix_caching replaces the default of the engines that have one (InputError
// for llama.cpp or no engine). A plan's max_num_seqs and max_num_batched_tokens replace the defaults of the engines that have
// them (vLLM, SGLang, TensorRT-LLM); InputError for llama.cpp or no engine, naming what they have.
EnginePolicy engine_policy(std::string_view engine, const HwProfile& hw, const EngineSettings& settings = {});

}  // namespace infer_plan
