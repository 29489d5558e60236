# advise (issue 20): the done-when searches from the command line, its exit status and bad input.
infer_plan_cli_case(advise_70b_three_gpus EXIT 0 ARGS advise --model llama-3.1-70b --hw h100-sxm,h200,a100-80gb --rate 5
  --prompt 512:2048 --output 128:512 --slo-ttft-p99 2s --slo-tpot-p99 50ms
  MATCH "cheapest plans meeting the SLOs" "   1  h(100-sxm|200) +(vllm|sglang) " "why #1:" "nearest its limit"
        "best on (h200|h100-sxm): (vLLM|SGLang): " "best on a100-80gb: "
        "Pareto frontier" "set aside:" "TPOT floor +[0-9]+  e.g. "
        "engine +[0-9]+  e.g. llama.cpp BF16 on h100-sxm: llama.cpp has no fp8 KV cache"
        "TensorRT-LLM .its step model is vLLM's. on h100-sxm: not searched, no step model of its own"
        "  launch:\n    (vllm serve meta-llama/Llama-3.1-70B|python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B) ")
infer_plan_cli_case(advise_70b_json EXIT 0 ARGS advise --model llama-3.1-70b --hw h100-sxm,h200 --rate 5
  --prompt 512:2048 --output 128:512 --slo-ttft-p99 2s --slo-tpot-p99 50ms --json
  MATCH "\"mode\": \"serving\"" "\"cost_per_million_tokens_usd\": " "\"rate_per_s\": 5.0")
# seed 000 (the SPEC's budget, --engine none): Q2_K with BF16 KV holds one 8K request (0.14 GiB to
# spare by llama.cpp's recipe); 32K fits with no KV type (q4_0 is 0.05 GiB short), so advise exits 1
# with the longest contexts.
set(_m2_advise --model qwen3-235b-a22b --hw tests/data/profile_m2_max_seed.json --parallel 1)
infer_plan_cli_case(advise_m2_8k EXIT 0 ARGS advise ${_m2_advise} --ctx 8K --engine none
  MATCH "plans that fit, best quality first" "1  m2-max-96gb-seed  none +Q2_K\\* +BF16 +1 +all +8192 +1 +79.80 GiB +0.14 GiB")
infer_plan_cli_case(advise_m2_32k EXIT 1 ARGS advise ${_m2_advise} --ctx 32K --engine none
  MATCH "KV BF16 needs 5.88 GiB \\(4.27 GiB short\\)" "KV Q4_0 needs 1.65 GiB \\(0.05 GiB short\\)"
        "the longest contexts that fit" "Q2_K\\* +BF16 +1 +all +8192" "Q2_K\\* +Q8_0 +1 +all +16384")
# ... and as llama.cpp serves it (the default, every engine that runs it: here llama.cpp alone), its
# compute buffer (0.30 GiB at 8K) leaves BF16 KV 0.17 GiB short: q8_0 is the answer
infer_plan_cli_case(advise_m2_8k_llama_cpp EXIT 0 ARGS advise ${_m2_advise} --ctx 8K
  MATCH "1  m2-max-96gb-seed  llama.cpp  Q2_K\\* +Q8_0 +1 +all +8192 +1 +79.80 GiB +0.52 GiB")
infer_plan_cli_case(advise_m2_as_built EXIT 1 ARGS advise --model qwen3-235b-a22b --hw m2-max-96gb --ctx 8K
  MATCH "Q2_K \\(79.80 GiB\\), are 7.80 GiB over the usable 72.00 GiB" "NOTHING FITS")
infer_plan_cli_case(advise_none_meets EXIT 1 ARGS advise --model qwen3-8b --hw h200 --rate 2 --slo-tpot-p99 0.1ms
  MATCH "NO PLAN MEETS THE SLOs" "TPOT floor")
# every built-in device carries an assumed price; a user's profile without one is costed in device-hours
infer_plan_cli_case(advise_unpriced EXIT 0 ARGS advise --model qwen3-8b --hw tests/data/profile_m2_max_seed.json --rate 0.2
  --slo-tpot-p99 200ms --tp 1 MATCH "no prices given" "dev-h/M tok")
infer_plan_cli_case(advise_priced_consumer EXIT 0 ARGS advise --model qwen3-8b --hw rtx-4090 --rate 1 --slo-tpot-p99 50ms --tp 1
  MATCH "\\$/M tok" "0.74")
infer_plan_cli_case(bad_advise_slo_no_rate EXIT 2 ARGS advise --model qwen3-8b --slo-tpot-p99 50ms
  MATCH "--slo-\\*: service levels need a load: give --rate")
infer_plan_cli_case(bad_advise_rate_no_slo EXIT 2 ARGS advise --model qwen3-8b --rate 2
  MATCH "a serving search needs a service level to meet: --slo-ttft-p99 2s, --slo-tpot-p95 50ms")
infer_plan_cli_case(bad_advise_price EXIT 2 ARGS advise --model qwen3-8b --rate 2 --slo-tpot-p99 50ms --price h200=free
  MATCH "--price: 'h200=free' is not NAME=USD")
infer_plan_cli_case(bad_advise_price_hw EXIT 2 ARGS advise --model qwen3-8b --rate 2 --slo-tpot-p99 50ms --price h100-sxm=2
  MATCH "--price: 'h100-sxm' is not one of the --hw profiles")
infer_plan_cli_case(bad_advise_mixed_prices EXIT 2 ARGS advise --model qwen3-8b --hw h200,tests/data/profile_m2_max_seed.json
  --rate 2 --slo-tpot-p99 50ms
  MATCH "--hw tests/data/profile_m2_max_seed.json: the profile has no price_per_hour" "--price m2-max-96gb-seed=USD")
infer_plan_cli_case(bad_advise_tp EXIT 2 ARGS advise --model qwen3-8b --tp 2,x MATCH "--tp: 'x' is not a whole number")
infer_plan_cli_case(bad_advise_exclude EXIT 2 ARGS advise --model qwen3-8b --exclude Q9_K
  MATCH "--exclude: 'Q9_K' is none of the candidate weight types")
infer_plan_cli_case(bad_advise_exclude_kv EXIT 2 ARGS advise --model qwen3-8b --exclude-kv bf16,fp8,q8_0,q4_0
  MATCH "--exclude-kv: every KV type is excluded")
infer_plan_cli_case(bad_advise_kv EXIT 2 ARGS advise --model qwen3-8b --kv q3_k MATCH "--kv: 'q3_k' is not a KV cache type")
infer_plan_cli_case(bad_advise_weights EXIT 2 ARGS advise --model qwen3-8b --weights Q9 MATCH "Q9")
infer_plan_cli_case(bad_advise_num_prompts EXIT 2 ARGS advise --model qwen3-8b --rate 1 --slo-tpot-p99 50ms --num-prompts 50
  MATCH "--num-prompts: 50 is out of range 100..100000")
infer_plan_cli_case(bad_advise_svg_no_rate EXIT 2 ARGS advise --model qwen3-8b --svg ${CMAKE_BINARY_DIR}/never.svg
  MATCH "--svg: the frontier is drawn for a serving search")
infer_plan_cli_case(advise_help EXIT 0 ARGS advise --help
  MATCH "Exit status: 0 a plan meets the request; 1 none does" "--slo-tpot-p99" "--verify")
infer_plan_cli_case(advise_speculative EXIT 0 ARGS advise -m qwen3-8b --hw h100-sxm --rate 1 -p 512:2048 -n 128:512
  --slo-tpot-p99 20ms --spec-accept 0.7 --draft qwen3-0.6b --weights BF16,FP8 --kv bf16 --no-pd
  MATCH "spec +TP" "speculative decoding, block [246]: [0-9.]+ tokens a round" "note: speculative decoding at the acceptance given")
infer_plan_cli_case(bad_advise_spec_no_draft EXIT 2 ARGS advise -m qwen3-8b --rate 1 --slo-tpot-p99 20ms --spec-accept 0.7
  MATCH "--draft MODEL or --draft-layers N")
infer_plan_cli_case(bad_advise_spec_rate EXIT 2 ARGS advise -m qwen3-8b --rate 1 --slo-tpot-p99 20ms --spec-accept 1.5 --draft qwen3-0.6b
  MATCH "--spec-accept")
infer_plan_cli_case(bad_advise_draft_layers EXIT 2 ARGS advise -m qwen3-8b --rate 1 --slo-tpot-p99 20ms --spec-accept 0.7 --draft-layers 36
  MATCH "--draft-layers: 36 is out of range 1..35")
# A 70B model on one 24 GB card: only llama.cpp's layer split holds it; the faster split first.
infer_plan_cli_case(advise_4090_layer_split EXIT 0 ARGS advise -m llama-3.1-70b --hw rtx-4090 -c 8K --weights Q8_0,Q4_K_M
  MATCH "1  rtx-4090  llama.cpp  Q4_K_M +Q8_0 +1 +47/81 +8192" "-ngl 47: 47 of 81 layers on the device" "llama.cpp's -ngl N")
infer_plan_cli_case(bad_advise_max_devices EXIT 2 ARGS advise -m qwen3-8b --max-devices 9223372036854775808
  MATCH "--max-devices: 9223372036854775808 is out of range 1..1000000")
# Each engine's launch command: llama.cpp's for a layer split on one card (-ngl the split's), and
# vLLM's multi-node form for DeepSeek-V3 over two nodes of eight H100s (Ray)
infer_plan_cli_case(advise_launch_llama_cpp EXIT 0 ARGS advise -m llama-3.1-70b --hw rtx-4090 -c 8K --weights Q4_K_M --kv q8_0
  --engine llama.cpp MATCH "llama-server -m Llama-3.1-70B-Q4_K_M.gguf -c 8192 -np 1 -ngl 47 -fa on -ctk q8_0 -ctv q8_0")
infer_plan_cli_case(advise_launch_vllm_two_nodes EXIT 0 ARGS advise -m deepseek-v3 -w FP8_BLOCK128 --kv bf16 --hw h100-sxm
  --tp 16 --rate 1 -p 1024 -n 256 --slo-tpot-p99 200ms --engine vllm
  MATCH "ray start --head --port 6379" "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 16 .* --distributed-executor-backend ray"
        "on the other node: ray start --address HEAD:6379")
infer_plan_cli_case(advise_launch_json EXIT 0 ARGS advise -m qwen3-8b --hw h100-sxm --engine sglang --json
  MATCH "\"launch\": \\[\n +\"python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 1")
# SLOs as the field writes them: p95 in ms (vLLM's units), and vLLM bench's --goodput form
infer_plan_cli_case(advise_slo_p95_ms EXIT 0 ARGS advise -m llama-3.1-8b --hw h100-sxm --rate 8 --slo-ttft-p95 1000ms
  --slo-tpot-p95 40ms --engine vllm --tp 1 --json
  MATCH "\"metric\": \"TTFT\"" "\"percentile\": 95.0" "\"limit_ms\": 1000.0" "\"ttft_p99_ms\": " "\"ttft_ms\": \\{"
        "\"p95\": ")
infer_plan_cli_case(advise_goodput EXIT 0 ARGS advise -m llama-3.1-8b --hw h100-sxm --rate 8 --goodput ttft:1000 tpot:40
  --engine vllm --tp 1 MATCH "SLO TTFT p99 <= 1000 ms, TPOT p99 <= 40 ms")
infer_plan_cli_case(bad_advise_slo_unit EXIT 2 ARGS advise -m llama-3.1-8b --rate 8 --slo-ttft-p95 1000parsecs
  MATCH "--slo-ttft-p95: unknown unit 'parsecs'")
infer_plan_cli_case(bad_advise_goodput_key EXIT 2 ARGS advise -m llama-3.1-8b --rate 8 --goodput latency:1000
  MATCH "--goodput: 'latency:1000' is not KEY:MS; KEY is ttft, tpot or e2el")
infer_plan_cli_case(advise_slo_p95_table EXIT 0 ARGS advise -m llama-3.1-8b --hw h100-sxm --rate 8 --slo-tpot-p95 40ms
  --slo-ttft-p95 1s --engine vllm --tp 1 MATCH "SLO TTFT p95 <= 1000 ms, TPOT p95 <= 40 ms" "TTFT p95 +TPOT p95 +E2EL p95")
# --emit k8s: the winner's manifest alone (tests/planner/plan/test_k8s.cpp parses them)
infer_plan_cli_case(advise_emit_k8s EXIT 0 ARGS advise -m qwen3-8b --hw h100-sxm --rate 2 --slo-tpot-p99 50ms --engine vllm
  --tp 1 --emit k8s MATCH "^# qwen3-8b on h100-sxm .vllm.: the launch advise printed\n" "\napiVersion: apps/v1\nkind: Deployment\n"
  "command: .\"vllm\", \"serve\", \"Qwen/Qwen3-8B[^\"]*\"" "nvidia.com/gpu: 1")
infer_plan_cli_case(bad_advise_emit_json EXIT 2 ARGS advise -m qwen3-8b --rate 2 --slo-tpot-p99 50ms --emit k8s --json
  MATCH "--emit k8s: the manifest is the whole output")
infer_plan_cli_case(bad_advise_emit_kind EXIT 2 ARGS advise -m qwen3-8b --rate 2 --slo-tpot-p99 50ms --emit helm MATCH "--emit")
# The frontier drawn: one panel per latency the SLOs bound, at the bound's percentile, each bound a
# labelled line, the recommendation marked and named by its engine, device, weights and shape.
infer_plan_cli_case(advise_svg_frontier_panels EXIT 0 ARGS advise -m llama-3.1-8b --hw h100-sxm --rate 4 -p 512 -n 128
  --slo-ttft-p95 500ms --slo-tpot-p90 40ms --engine vllm --svg ${CMAKE_BINARY_DIR}/cli_advise.svg FILE ${CMAKE_BINARY_DIR}/cli_advise.svg
  MATCH "height=.790." "TTFT p95 .ms.</text>" "TPOT p90 .ms.</text>" "SLO: TTFT p95 &lt.= 500 ms</text>"
        "SLO: TPOT p90 &lt.= 40 ms</text>" ">#1 vllm h100-sxm [A-Z0-9_]+ [0-9 xTP+D]+</text>" "recommended .#1.</text>")
