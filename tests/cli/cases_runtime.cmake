# CLI cases for `run`, `report` and `probe` (issue 5): a tiny closed batch runs end to end and
# prints the bytes fit predicts; bad input is refused with the field or flag named, exit 2.
infer_plan_cli_case(run_tiny EXIT 0 ARGS run --model qwen3-0.6b --scale 0.1 --weights Q8_0 --ctx 40 --output 8 --requests 2 --quiet
  MATCH "weights_bytes +[0-9]+ B" "2 completed, 0 rejected")
infer_plan_cli_case(bad_run_recipe_type EXIT 2 ARGS run --model qwen3-0.6b --scale 0.1 --weights IQ2_XS --ctx 40 --output 8 --quiet
  MATCH "weights: .* is stored as IQ2_XS, which the CPU runtime cannot multiply.*Q4_0:pure")
# Phi-4 (Phi-3's graph: q, k and v rows in one matrix, gate and up in one ffn_up), a tenth of its size
infer_plan_cli_case(run_phi4 EXIT 0 ARGS run --model phi-4 --scale 0.1 --weights Q4_K_M --ctx 40 --output 8 --requests 2 --quiet
  MATCH "2 completed, 0 rejected")
# Gemma 3 27B at a tenth: its embedding scale, norms after attention and FFN, GELU, five sliding layers
# in six with their own RoPE base, q scaled by query_pre_attn_scalar 168
infer_plan_cli_case(run_gemma3 EXIT 0 ARGS run --model gemma-3-27b --scale 0.1 --weights Q4_K_M --ctx 40 --output 8 --requests 2 --quiet
  MATCH "2 completed, 0 rejected")
# Gemma 2 9B at a tenth: scores soft-capped at 50, logits at 30, every other layer sliding
infer_plan_cli_case(run_gemma2 EXIT 0 ARGS run --model gemma-2-9b --scale 0.1 --weights Q8_0 --ctx 40 --output 8 --requests 2 --quiet
  MATCH "2 completed, 0 rejected")
# GPT-OSS 20B at a tenth, as llama.cpp's MXFP4_MOE file: sinks, biases, clamped SwiGLU, top-4 of 32 experts
infer_plan_cli_case(run_gpt_oss EXIT 0 ARGS run --model gpt-oss-20b --scale 0.1 --weights MXFP4_MOE --ctx 40 --output 8 --requests 2 --quiet
  MATCH "2 completed, 0 rejected")
# the most downloaded file type: Q4_K with Q6_K for half of attn_v and ffn_down and for the output head
infer_plan_cli_case(run_q4_k_m EXIT 0 ARGS run --model qwen3-0.6b --scale 0.1 --weights Q4_K_M --ctx 40 --output 8 --requests 2 --quiet
  MATCH "2 completed, 0 rejected")
# (a profile file, so no probe: 30 s is far beyond any prediction either way)
infer_plan_cli_case(run_deadline_closed EXIT 0 ARGS run --model qwen3-0.6b --scale 0.1 --weights Q8_0 --ctx 40 --output 8 --requests 2 --deadline 30 --quiet
  --hw hwprofiles/h200.json MATCH "2 completed, 0 rejected")
infer_plan_cli_case(bad_run_output EXIT 2 ARGS run --model qwen3-0.6b --scale 0.1 --weights Q8_0 --ctx 40 --output 40 --quiet
  MATCH "output 40 must be at least 1 and less than context 40")
infer_plan_cli_case(bad_run_scale EXIT 2 ARGS run --model qwen3-0.6b --scale 2 --quiet
  MATCH "--scale: 2 is out of range")
infer_plan_cli_case(bad_run_backend EXIT 2 ARGS run --model qwen3-0.6b --scale 0.1 --weights Q8_0 --ctx 40 --output 8 --backend tpu --quiet
  MATCH "tpu")
# (probe --backend cuda: its refusal without a device is checked in tests/runtime/test_cpu_backend.cpp,
# which knows whether this build has CUDA and a device; a CLI case would fail on a GPU machine.)
infer_plan_cli_case(bad_probe_backend EXIT 2 ARGS probe --backend tpu MATCH "--backend: probe measures cpu or cuda, not 'tpu'")
infer_plan_cli_case(bad_probe_out EXIT 2 ARGS probe --out /nonexistent-dir/p.json
  MATCH "--out: cannot write '/nonexistent-dir/p.json': folder '/nonexistent-dir' does not exist")
infer_plan_cli_case(bad_report_plan_field EXIT 2 ARGS report ${PROJECT_SOURCE_DIR}/tests/data/plan_m2_seed.json --load-rate 2
  MATCH "--load-rate")
infer_plan_cli_case(bad_report_profile EXIT 2 ARGS report --model qwen3-8b --scale 0.25 --ctx 64 --output 32
  --hw ${PROJECT_SOURCE_DIR}/tests/data/malformed_profile.json MATCH "malformed_profile.json: malformed JSON: parse error at line 3")
# Speculative decoding in the report (issue 6): the sweep's table and the best-block rows.
infer_plan_cli_case(report_spec_tiny EXIT 0 ARGS report ${PROJECT_SOURCE_DIR}/tests/data/plan_spec_tiny.json --backend cpu
  --model ${PROJECT_SOURCE_DIR}/tests/data/tiny_config.json --threads 1 --spec-repeats 1 --quiet
  MATCH "spec_best_block " "spec_tokens_per_round m=[1-3]" "first 1 of 2 layers draft, temperature 1, 16 tokens x 1 repeats")
# report --json carries the decode steps by batch size, which `calibrate` reads (issue 13).
infer_plan_cli_case(report_json_decode_steps EXIT 0 ARGS report --model ${PROJECT_SOURCE_DIR}/tests/data/tiny_config.json
  --weights Q8_0 --ctx 40 --output 16 --requests 3 --backend cpu --threads 1 --json --quiet
  MATCH "\"decode_steps\": {" "\"by_batch\": ." "\"backend\": \"cpu\"" "\"weights\": \"Q8_0\"")
# --check-exact: bytes and laws decide the exit; the tiny plan's timings (meaningless at this size)
# are printed with their verdict beside it.
infer_plan_cli_case(report_check_exact_tiny EXIT 0 ARGS report ${PROJECT_SOURCE_DIR}/tests/data/plan_spec_tiny.json --backend cpu
  --model ${PROJECT_SOURCE_DIR}/tests/data/tiny_config.json --threads 1 --spec-repeats 1 --quiet --check-exact
  MATCH "weights_bytes .* exact  ok" "byte counts and laws hold; timing bounds: .* \\(not counted by --check-exact\\)")
infer_plan_cli_case(bad_report_check_both EXIT 2 ARGS report ${PROJECT_SOURCE_DIR}/tests/data/plan_spec_tiny.json --check --check-exact
  MATCH "excludes")
infer_plan_cli_case(bad_report_spec_repeats EXIT 2 ARGS report ${PROJECT_SOURCE_DIR}/tests/data/plan_spec_tiny.json --backend cpu
  --model ${PROJECT_SOURCE_DIR}/tests/data/tiny_config.json --threads 1 --quiet --spec-repeats 0 MATCH "--spec-repeats")
infer_plan_cli_case(spec_draft_layers EXIT 0 ARGS spec --draft-layers 4 --accept 0.8
  MATCH "draft its first 4 layers and head, batch 1" "<- best")
infer_plan_cli_case(bad_spec_draft_layers EXIT 2 ARGS spec --draft-layers 40
  MATCH "--draft-layers: 40 is more than qwen3-8b's 36 layers")
infer_plan_cli_case(bad_spec_draft_layers_times EXIT 2 ARGS spec --draft-layers 4 --verify-ms 20
  MATCH "excludes")
infer_plan_cli_case(run_spec_tiny EXIT 0 ARGS run ${PROJECT_SOURCE_DIR}/tests/data/plan_spec_tiny.json --threads 1
  --model ${PROJECT_SOURCE_DIR}/tests/data/tiny_config.json --spec-repeats 1 --quiet
  MATCH "draft first 1 of 2 layers \\(temperature 1\\)" "m = 3 +[0-9.]+ ms/token" "best block [1-3]")
# A speculative field the sweep refuses is refused before the serving run (here 8 GB of weights:
# the timeout fails the case if run starts writing them).
infer_plan_cli_case(run_refuses_spec_first EXIT 2 ARGS run ${PROJECT_SOURCE_DIR}/tests/data/plan_spec_bad_group.json --quiet
  MATCH "speculative.group: 4; the runtime's draft proposes one token per pass")
set_tests_properties(cli_run_refuses_spec_first PROPERTIES TIMEOUT 15)
infer_plan_cli_case(report_refuses_spec_first EXIT 2 ARGS report ${PROJECT_SOURCE_DIR}/tests/data/plan_spec_bad_group.json --quiet
  --probe MATCH "speculative.group: 4")
set_tests_properties(cli_report_refuses_spec_first PROPERTIES TIMEOUT 15)
# Offload (issue 6): a tiny plan runs with its FFN of layer 1 in the host pool; bad fields named.
infer_plan_cli_case(bad_run_offload_every EXIT 2 ARGS run ${PROJECT_SOURCE_DIR}/tests/data/plan_bad_offload.json --quiet
  MATCH "offload.every \\(--every\\): 0 is out of range; expected 1 \\(every layer\\) to 3")
# A deadline on the CPU predicts admission with this CPU's probed profile, not the plan's h200
# (issue 15, class 9): with h200's it rejected none of these 40 and all finished late.
infer_plan_cli_case(run_deadline_cpu_profile EXIT 0 ARGS run ${PROJECT_SOURCE_DIR}/tests/data/plan_deadline_cpu.json --json
  MATCH "probing it" "\"rejected\": [1-9][0-9]*,")
# It probes the CPU (about 10 s at -O2, the plan's types only): the sanitizer pass, 10x slower, leaves it out.
set_tests_properties(cli_run_deadline_cpu_profile PROPERTIES LABELS timing)
# What this machine cannot hold or the model was not trained for is refused before a weight is
# written (issue 15, class 6): Qwen3-235B at BF16 is about 440 GiB.
infer_plan_cli_case(bad_run_host_memory EXIT 2 ARGS run --model qwen3-235b-a22b --quiet
  MATCH "run: the plan needs [0-9.]+ GiB of memory \\(weights [0-9.]+ GiB, KV [0-9.]+ GiB\\) but cpu has [0-9.]+ GiB available")
infer_plan_cli_case(bad_run_trained_context EXIT 2 ARGS run --model qwen3-0.6b --scale 0.1 --ctx 1M --quiet
  MATCH "run: context 1048576 tokens is beyond the 40960 tokens qwen3-0.6b@0.1 was trained for")

# RoPE scaling the decoder does not apply (issue 17): run refuses it, naming the key, instead of
# computing another model's logits in silence; the planner's figures do not depend on it. YaRN
# runs, and serves its original 256 tokens times 4.
infer_plan_cli_case(bad_run_rope_longrope EXIT 2 ARGS run --model tests/data/tiny_config_longrope.json --ctx 40 -n 8 --quiet
  MATCH "rope_scaling.rope_type = 'longrope': the runtime applies RoPE scaling none, llama3, linear and yarn")
infer_plan_cli_case(fit_rope_longrope EXIT 0 ARGS fit --model tests/data/tiny_config_longrope.json MATCH "verdict: FITS")
infer_plan_cli_case(run_rope_yarn EXIT 0 ARGS run --model tests/data/tiny_config_yarn.json --ctx 1024 -n 4 --requests 1 --quiet)
# Prompts and emitted tokens (issue 17): ids in, one JSON line per token out, logits optional.
infer_plan_cli_case(run_emit_top_logits EXIT 0 ARGS run -m tests/data/tiny_config.json --prompt-tokens 1,2,3 -n 3
  --emit logits --logits-top-k 2 -q
  MATCH "\"request\": 0, \"step\": 2, \"position\": 4, \"token\": [0-9]+, \"top_logits\": \\[\\[[0-9]+, -?[0-9.e+-]+\\], \\[[0-9]+, -?[0-9.e+-]+\\]\\]}"
  NOMATCH "measured on" "\"step\": 3")
infer_plan_cli_case(run_emit_tokens_summary EXIT 0 ARGS run -m tests/data/tiny_config.json --prompt-tokens 1,2,3 -n 2
  --emit tokens MATCH "\"step\": 1, \"position\": 3, \"token\": [0-9]+}" "measured on cpu" "1 completed")
infer_plan_cli_case(bad_run_emit_json EXIT 2 ARGS run -m tests/data/tiny_config.json --emit tokens --json
  MATCH "--out FILE instead of -o/--json")
infer_plan_cli_case(bad_run_logits_top_k EXIT 2 ARGS run -m tests/data/tiny_config.json --logits-top-k 3
  MATCH "--logits-top-k: only with --emit logits")
infer_plan_cli_case(bad_run_prompt_tokens EXIT 2 ARGS run -m tests/data/tiny_config.json --prompt-tokens 1,,2
  MATCH "--prompt-tokens: '' is not a token id")
infer_plan_cli_case(bad_run_prompt_vocab EXIT 2 ARGS run -m tests/data/tiny_config.json --prompt-tokens 1,1024 -n 2
  MATCH "prompt token 1024 is not in the vocabulary \\(ids 0..1023\\)")
# A GGUF llama.cpp loads (synthetic weights and vocabulary), and text to ids with its vocabulary
# (issue 17); the conformance test compares both with llama.cpp.
infer_plan_cli_case(gguf_write_toy EXIT 0 ARGS gguf write -m tests/data/tiny_config.json -w Q4_0:pure
  --out ${CMAKE_BINARY_DIR}/cli_toy.gguf -q
  MATCH "tiny_config at Q4_0 \\(uniform\\), 24 tensors, .*vocabulary of 1024 tokens \\(qwen2, [0-9]+ merges\\)")
infer_plan_cli_case(tokenize_synthetic EXIT 0 ARGS tokenize -m tests/data/tiny_config.json --json -- "Hello, world!"
  MATCH "\"count\": [0-9]+" "\"ids\"" "\"vocabulary\": \"synthetic\"" "\"pieces\"")
infer_plan_cli_case(tokenize_decode EXIT 0 ARGS tokenize -m tests/data/tiny_config.json --ids 72,101,108,108,111 MATCH "^Hello$")
infer_plan_cli_case(bad_tokenize_nothing EXIT 2 ARGS tokenize -m tests/data/tiny_config.json
  MATCH "give exactly one of TEXT, --file FILE, --jsonl FILE or --ids")
infer_plan_cli_case(bad_tokenize_utf8 EXIT 2 ARGS tokenize -m tests/data/tiny_config.json --file tests/data/invalid_utf8.txt
  MATCH "text is not valid UTF-8 at byte 2 \\(0xc3\\)")
infer_plan_cli_case(bad_tokenize_id EXIT 2 ARGS tokenize -m tests/data/tiny_config.json --ids 5000
  MATCH "token 5000 is not in the vocabulary \\(ids 0..1023\\)")
infer_plan_cli_case(bad_gguf_write_out EXIT 2 ARGS gguf write -m tests/data/tiny_config.json MATCH "--out FILE is required")
infer_plan_cli_case(bad_gguf_write_dir EXIT 2 ARGS gguf write -m tests/data/tiny_config.json --out /nonexistent/x.gguf
  MATCH "folder '/nonexistent' does not exist")
infer_plan_cli_case(bad_gguf_write_type EXIT 2 ARGS gguf write -m tests/data/tiny_config.json -w Q9 --out ${CMAKE_BINARY_DIR}/x.gguf
  MATCH "unknown type 'Q9'")
infer_plan_cli_case(bad_gguf_write_vocab EXIT 2 ARGS gguf write -m qwen3-0.6b --scale 0.001 --out ${CMAKE_BINARY_DIR}/x.gguf
  MATCH "cannot hold a byte-level vocabulary")
# Text prompts and decoded output; the quality cost of a type (issue 17).
infer_plan_cli_case(run_prompt_text EXIT 0 ARGS run -m tests/data/tiny_config.json --prompt "Hello world" -n 3 --emit text -q
  MATCH "\"request\":0,\"text\":\"[^\"]*\",\"tokens\":3")
infer_plan_cli_case(bad_run_two_prompts EXIT 2 ARGS run -m tests/data/tiny_config.json --prompt x --prompt-tokens 1
  MATCH "give one of --prompt, --prompt-file and --prompt-tokens")
infer_plan_cli_case(quality_synthetic EXIT 0 ARGS quality -m tests/conformance/models/llama.json -w Q4_0:pure -c 128
  MATCH "Mean KLD +[0-9.]+ ± [0-9.]+" "Same top p +[0-9.]+ ± [0-9.]+ %" "note: synthetic weights")
infer_plan_cli_case(bad_quality_no_weights EXIT 2 ARGS quality -m tests/conformance/models/llama.json
  MATCH "-w names the weights to compare with the reference")
infer_plan_cli_case(bad_quality_short_text EXIT 2 ARGS quality -m tests/conformance/models/llama.json -w Q8_0:pure -c 100000
  MATCH "less than one chunk of --ctx-size 100000")
infer_plan_cli_case(report_quality EXIT 0 ARGS report --model tests/conformance/models/llama.json -w Q4_0:pure -c 64 -n 4
  -np 1 --quality --quality-ctx 128 --quiet MATCH "quality of llama at Q4_0" "Mean KLD +[0-9.]+ ± [0-9.]+")
# Mixtral (issue 18): MoE under its own model_type; its config relabelled dense is refused.
infer_plan_cli_case(model_mixtral EXIT 0 ARGS model mixtral-8x7b
  MATCH "MoE: 8 experts, 2 active, expert FFN 14336" "46702792704 total" "12879925248 active")
infer_plan_cli_case(run_mixtral EXIT 0 ARGS run -m mixtral-8x7b --scale 0.05 -w Q8_0:pure -c 64 -n 4 -np 2 --quiet
  MATCH "2 completed")
# DeepSeek's MLA (issue 18): planned (KV from the latent), refused by run, named.
infer_plan_cli_case(kv_deepseek_v3 EXIT 0 ARGS kv -m deepseek-v3 -c 1K --types bf16 --json
  MATCH "\"bytes_per_token\": 70272")
infer_plan_cli_case(model_deepseek_v3 EXIT 0 ARGS model deepseek-v3
  MATCH "MLA: q_lora_rank 1536, kv latent 512 \\+ RoPE key 64" "671026419200 total" "1 shared; first 3 layers dense")
# DeepSeek-V2-Lite at a tenth: latent attention absorbed, its YaRN with mscale, a dense first layer,
# 6 of 64 routed experts without renormalisation beside 2 shared ones; as Q4_K_M, whose 128-wide
# attn_k_b rows llama.cpp writes as Q5_0
infer_plan_cli_case(run_deepseek_v2_lite EXIT 0 ARGS run -m deepseek-v2-lite --scale 0.1 -w Q4_K_M -c 40 -n 8 --requests 2 --quiet
  MATCH "2 completed, 0 rejected")
# DeepSeek-V3 at a twentieth: the q bottleneck, 8 of 16 experts by sigmoid scores with their bias
# within the best 4 of 8 groups, renormalised and scaled by 2.5
infer_plan_cli_case(run_deepseek_v3 EXIT 0 ARGS run -m deepseek-v3 --scale 0.05 -w Q4_K_M -c 40 -n 8 --requests 2 --quiet
  MATCH "2 completed, 0 rejected")
# advise --verify: the winner written as a plan and executed by report on this machine (the CPU,
# the model scaled to ~150M parameters) under its own load, predicted beside measured: Poisson
# arrivals at the rate report solves to fill the batch as the winner's simulation does (the
# prompt 512 and output 256 scaled by min(128/512, 32/256) = 0.125), llama.cpp's scheduling, the
# schedule replayed. Its timings are not checked.
infer_plan_cli_case(advise_verify EXIT 0 ARGS advise --model qwen3-8b --hw h200 --rate 2 --slo-tpot-p99 50ms --weights Q8_0
  --kv q8_0 --tp 1 --max-batch 8 --verify --verify-plan ${CMAKE_BINARY_DIR}/advise-verify.json
  MATCH "verify #1 on this machine \\(cpu\\): qwen3-8b at scale" "weights_bytes \\(B\\) +[0-9]+ +[0-9]+ +\\+0.0% +exact +ok"
        "decode_iteration_ms p50" "Poisson arrivals keeping [0-9.]+ of 4 in the system" "prompts of 64 and outputs of 32 tokens .the means x 0.125."
        "llama.cpp's scheduling" "Poisson [0-9.]+ req/s .solved for [0-9.]+ in the system." "schedule replayed .steps. +([0-9]+) +([0-9]+) +.0.0% +identical +ok")
set_tests_properties(cli_advise_verify PROPERTIES LABELS timing)
