# CLI cases for the field's conventions: llama.cpp's flag names, comma sweeps and -o formats,
# vLLM's serving metrics, the JSON schema, and help that speaks the user's language.

# --- a sweep as llama-bench runs one: -c 8K,32K x -ctk f16,q8_0 = 4 rows ---
# KV per token for qwen3-8b (36 layers, 8 KV heads x 128): V bf16 36 x 1024 x 2 B = 73728 B;
# K f16 the same, K q8_0 36 x 1024 x 34/32 B = 39168 B. x 4 requests: 8K f16 = 147456 x 8192 x 4
# = 4831838208 B; 32K q8_0 = 112896 x 32768 x 4 = 14797504512 B.
set(_sweep fit -m qwen3-8b -c 8K,32K -ctk f16,q8_0)
infer_plan_cli_case(fit_sweep_csv EXIT 0 ARGS ${_sweep} -o csv
  MATCH "^ctx-size,cache-type-k,capacity_bytes," "\n8K,f16,[^\n]*,4831838208,"
        "\n8K,q8_0,[^\n]*,3699376128," "\n32K,f16,[^\n]*,19327352832," "\n32K,q8_0,[^\n]*,14797504512,[^\n]*\n$"
  NOMATCH "schema" "\n[^\n]*\n[^\n]*\n[^\n]*\n[^\n]*\n[^\n]*\n[^\n]")
infer_plan_cli_case(fit_sweep_md EXIT 0 ARGS ${_sweep} -o md
  MATCH "^\\| ctx-size \\| cache-type-k \\| model" "\\| 32K \\| q8_0 \\| qwen3-8b \\| h200 \\| BF16 \\| Q8_0 \\| BF16 \\| 32768 \\| 4 \\| 15.26 GiB \\| 13.78 GiB \\|")
infer_plan_cli_case(fit_sweep_text EXIT 0 ARGS ${_sweep}
  MATCH "ctx-size +cache-type-k +model" "32K +q8_0 +qwen3-8b +h200 +BF16 +Q8_0 +BF16 +32768 +4 +15.26 GiB +13.78 GiB")
# a swept flag named like a figure (hw) is one column, not two; for people a size's column loses
# "_bytes" for "_gib", its cells being in GiB
infer_plan_cli_case(fit_sweep_hw_one_column EXIT 0 ARGS fit -m qwen3-8b --hw h100-sxm,h200 -o csv
  MATCH "^hw,capacity_bytes," NOMATCH "_bytes,hw,")
infer_plan_cli_case(fit_sweep_md_sizes EXIT 0 ARGS fit -m qwen3-8b --hw h100-sxm,h200 -o md
  MATCH "^\\| hw \\| model \\| weights \\| kv_k \\| kv_v \\| context \\| requests \\| weights_gib \\| kv_gib \\| headroom_gib \\|" NOMATCH "_bytes")
infer_plan_cli_case(fit_sweep_json EXIT 0 ARGS ${_sweep} --json
  MATCH "\"schema\": 1" "\"command\": \"fit\"" "\"sweep\": {[^}]*\"cache-type-k\": \"q8_0\"")
infer_plan_cli_case(fit_sweep_jsonl EXIT 0 ARGS ${_sweep} -o jsonl
  MATCH "^{[^\n]*\"kv_bytes\":4831838208[^\n]*\"sweep\":{\"cache-type-k\":\"f16\",\"ctx-size\":\"8K\"}[^\n]*}\n{")
infer_plan_cli_case(fit_sweep_weights EXIT 0 ARGS fit --weights Q4_K_M,Q8_0 -o csv MATCH "\nQ4_K_M,[^\n]*\nQ8_0,")
infer_plan_cli_case(bad_sweep_item EXIT 2 ARGS fit -c 8K,,32K MATCH "--ctx-size: '8K,,32K' has an empty item")
infer_plan_cli_case(bad_sweep_point EXIT 2 ARGS fit -c 8K,0 MATCH "\\[--ctx-size 0\\] -c: 0 tokens is out of range")
infer_plan_cli_case(bad_output_format EXIT 2 ARGS fit -o xml MATCH "-o: 'xml' is not an output format; accepted: text, md, csv, json, jsonl")
# a flag whose value is itself a list is not swept: per-position acceptance rates
infer_plan_cli_case(spec_accept_list_not_swept EXIT 0 ARGS spec --accept 0.9,0.8,0.7 --max-block 3 -o json
  MATCH "\"schema\": 1" NOMATCH "\"runs\"")
# a single run of a command whose answer is a list prints the list as rows: one per KV type.
# Q8_0: 36 layers x 1024 x 2 (K and V) x 34/32 B = 78336 B per token, x 8192 = 641728512 B.
infer_plan_cli_case(single_csv EXIT 0 ARGS kv -m qwen3-8b -c 8K -o csv
  MATCH "^bytes_all_requests,bytes_per_request,bytes_per_token,k_type," "\n2566914048,641728512,78336,Q8_0,566231040,Q8_0,Q8_0\n")

# --- llama.cpp's names mean what they mean there ---
infer_plan_cli_case(fit_llama_flags EXIT 0 ARGS fit -m qwen3-8b -c 32K -ctk q8_0 -ctv q8_0 -np 8 -ngl 99 --json
  MATCH "\"kv_k\": \"Q8_0\"" "\"kv_v\": \"Q8_0\"" "\"requests\": 8" "\"context\": 32768")
infer_plan_cli_case(bad_ngl_no_host EXIT 2 ARGS fit -m qwen3-8b -ngl 20
  MATCH "-ngl: 20 of 37 layers on the device leaves the rest in host memory, and profile h200 has no 'host' section; give the host's --host-memory and --host-bandwidth")
infer_plan_cli_case(bad_ngl_plan_no_host EXIT 2 ARGS fit --plan tests/data/plan_gpu_layers_no_host.json
  MATCH "tests/data/plan_gpu_layers_no_host.json: field 'gpu_layers': 8 of 37 layers on the device leaves the rest in host memory, and profile h200 has no 'host' section")
infer_plan_cli_case(bad_ngl_word EXIT 2 ARGS fit -m qwen3-8b -ngl most
  MATCH "-ngl: 'most' is not a layer count; expected N >= 0, all or auto")
infer_plan_cli_case(bad_host_bandwidth EXIT 2 ARGS fit -m qwen3-8b -ngl 20 --host-memory 64GiB --host-bandwidth fast
  MATCH "--host-bandwidth")
# llama.cpp's layer split (issue 20): 70B Q4_K_M on a 24 GB card keeps 47 of 81 layers (the
# test in tests/planner/cost/test_layer_split.cpp checks that 48 does not fit), the table marks it
# without -ngl, a plan that does not fit suggests the split (the profile has a host)
infer_plan_cli_case(fit_suggests_ngl EXIT 1 ARGS fit -m llama-3.1-70b -w Q4_K_M --hw rtx-4090 -c 8192 -np 1
  MATCH "-ngl 47 +47 of 81 layers on the device, the rest in host memory: decode [0-9.]+ tokens/s at batch 1, FITS")
infer_plan_cli_case(fit_ngl_auto EXIT 0 ARGS fit -m llama-3.1-70b -w Q4_K_M --hw rtx-4090 -ngl auto -c 8192 -np 1
  MATCH "47/81 layers on the device \\(the last 47 blocks\\); in host memory: token_embd, blocks 0-32 and the head"
        "->   47 " "48 .* does not fit" "decode at 47 layers, batch 1, 8192 tokens: [0-9.]+ ms per token")
# 22 of 32 blocks, token_embd and the head (10.90 GiB) and their KV (4 x 8192 x 22 x 4096 B = 2.75
# GiB) need 13.65 GiB: 12 GiB of host memory is 1.65 GiB short
infer_plan_cli_case(fit_ngl_host_given EXIT 1 ARGS fit -m llama-3.1-8b --hw h100-sxm -ngl 10 --host-memory 12GiB --host-bandwidth 50GB/s
  MATCH "verdict: DOES NOT FIT: the device holds its layers, but host memory is 1.65 GiB short" "its layers read at 50.0 GB/s")
infer_plan_cli_case(bad_fa EXIT 2 ARGS fit --engine llama.cpp -fa maybe MATCH "-fa: .maybe. is not a flash attention setting; expected on, off or auto")
infer_plan_cli_case(bad_ub EXIT 2 ARGS fit --engine llama.cpp -ub 0 MATCH "-ub: 0 is out of range; expected 1 to")
infer_plan_cli_case(roofline_n_is_output EXIT 0 ARGS roofline -m qwen3-8b -n 100 -np 2 --json
  MATCH "\"output\": 100" "\"batch\": 2")
infer_plan_cli_case(version EXIT 0 ARGS -V MATCH "^infer-plan [0-9]+\\.[0-9]+\\.[0-9]+\n$")
infer_plan_cli_case(threads_t EXIT 2 ARGS run -t 100000 MATCH "--threads")

# --- vLLM's serving vocabulary: TTFT, TPOT, ITL, E2EL in ms; throughput; goodput ---
set(_serve queue --simulate --rate 5 --num-prompts 2000 --iteration-ms 10 --per-seq-ms 1 --prefill-ms 50 -n 64 -p 256)
infer_plan_cli_case(queue_vllm_json EXIT 0 ARGS ${_serve} --goodput ttft:500 tpot:50 -o json
  MATCH "\"ttft_ms\": {[^}]*\"p99\"" "\"tpot_ms\": {[^}]*\"p99\"" "\"itl_ms\": {[^}]*\"count\": 126000" "\"e2el_ms\": {[^}]*\"p99\""
        "\"goodput_req_s\": [0-9]" "\"request_throughput_req_s\"" "\"output_throughput_tok_s\"" "\"schema\": 1"
  NOMATCH "sojourn")
infer_plan_cli_case(queue_vllm_text EXIT 0 ARGS ${_serve} --goodput ttft:500 tpot:50
  MATCH "\\(ms\\) +mean +median +p90 +p99 +max +samples" "\n +ITL +[0-9]+\\.[0-9][0-9] " "goodput [0-9.]+ req/s \\([0-9]+ of 2000 completed")
# 4 requests: p90 and p99 are each the largest value, and marked
infer_plan_cli_case(queue_few_samples EXIT 0 ARGS queue --simulate --rate 1 --num-prompts 4 --iteration-ms 10 -n 8
  MATCH "TTFT +[0-9.]+ +[0-9.]+ +[0-9.]+\\* +[0-9.]+\\*" "fewer samples than the percentile can resolve")
infer_plan_cli_case(queue_few_samples_json EXIT 0 ARGS queue --simulate --rate 1 --num-prompts 4 --iteration-ms 10 -n 8 --json
  MATCH "\"unresolved\": \\[\n +\"p90\",\n +\"p95\",\n +\"p99\"\n +\\]")
infer_plan_cli_case(bad_goodput_key EXIT 2 ARGS ${_serve} --goodput ttfb:500 MATCH "--goodput: 'ttfb:500' is not KEY:MS; KEY is ttft, tpot or e2el")
infer_plan_cli_case(bad_goodput_ms EXIT 2 ARGS ${_serve} --goodput tpot:-5 MATCH "--goodput: 'tpot:-5': '-5' is not a time in milliseconds")

# --- every command's help in the user's words, ending in examples ---
foreach(_cmd fit gguf kv roofline offload quant model hw spec pd sweep queue admit run probe report calibrate)
  infer_plan_cli_case(help_${_cmd} EXIT 0 ARGS ${_cmd} --help MATCH "\n  infer-plan ${_cmd}[^\n]*(.|\n)*\n  infer-plan ${_cmd}"
    NOMATCH "[Ss]eed 0[0-9][0-9]" "SPEC [0-9]" "the seed")
endforeach()
infer_plan_cli_case(pd_words EXIT 0 ARGS pd --link 25gbe --qps 1 --explain NOMATCH "[Ss]eed 0[0-9][0-9]" "SPEC [0-9]")
infer_plan_cli_case(spec_words EXIT 0 ARGS spec --explain NOMATCH "[Ss]eed 0[0-9][0-9]" "SPEC [0-9]")
infer_plan_cli_case(sweep_words EXIT 0 ARGS sweep scenarios/ NOMATCH "[Ss]eed 0[0-9][0-9]" "SPEC [0-9]")
infer_plan_cli_case(sweep_json EXIT 0 ARGS sweep scenarios/s23-j23.json --json MATCH "\"schema\": 1" "\"scenarios\": \\[")
infer_plan_cli_case(sweep_md EXIT 0 ARGS sweep scenarios/s23-j23.json -o md MATCH "^\\| axes \\| case \\| expected \\| got \\| ok \\|")

# run measures with the same names: TTFT, TPOT, E2EL in ms, request and output throughput
infer_plan_cli_case(run_vllm_json EXIT 0 ARGS run -m qwen3-0.6b --scale 0.1 -w Q8_0 -c 40 -n 8 -np 2 -t 1 --quiet --json
  MATCH "\"ttft_ms\": {[^}]*\"median\"" "\"e2el_ms\": {[^}]*\"count\": 2" "\"output_throughput_tok_s\"" "\"request_throughput_req_s\""
        "\"schema\": 1"
  NOMATCH "sojourn" "\"ttft_s\"")
infer_plan_cli_case(run_vllm_text EXIT 0 ARGS run -m qwen3-0.6b --scale 0.1 -w Q8_0 -c 40 -n 8 -np 1 -t 1 --quiet
  MATCH "cpu \\(1 thread\\)" "e2el_ms +median" "1 completed, 0 rejected")

# --- errors that say what is accepted ---
infer_plan_cli_case(bad_size_bare_prefix EXIT 2 ARGS fit --weights-size 14G
  MATCH "--weights-size: '14G': write 14GiB \\(binary, 2\\^30\\) or 14GB \\(decimal, 10\\^9\\)")
infer_plan_cli_case(bad_hw_format_hint EXIT 2 ARGS fit --hw tpu-v9 MATCH "unknown hardware profile 'tpu-v9'.*copy hwprofiles/h200.json")
infer_plan_cli_case(offload_plural EXIT 0 ARGS offload -np 1 MATCH "  1 request x 8192 prompt" NOMATCH "1 requests")

# --- bash completion from the CLI's own definition ---
infer_plan_cli_case(completion_bash EXIT 0 ARGS completion bash
  MATCH "complete -F _infer_plan infer-plan" "\n    fit\\) opts=\"[^\"]*--ctx-size[^\"]*-ctk" "h200" "Q4_K_M")
infer_plan_cli_case(bad_completion_shell EXIT 2 ARGS completion zhs MATCH "'zhs' is not a shell it writes .did you mean zsh.; accepted: bash, zsh, fish")
# the KV types and engines come from their tables: fp8 and iq4_nl, sglang and trtllm among them
infer_plan_cli_case(completion_bash_tables EXIT 0 ARGS completion bash MATCH "compgen -W .f32 [^\"]*iq4_nl fp8 fp8_e4m3" "--engine. COMPREPLY=.*sglang")
infer_plan_cli_case(completion_zsh EXIT 0 ARGS completion zsh MATCH "^#compdef infer-plan" "bashcompinit" "complete -F _infer_plan infer-plan")
infer_plan_cli_case(completion_fish EXIT 0 ARGS completion fish
  MATCH "complete -c infer-plan -n '__fish_seen_subcommand_from fit' -l ctx-size[^\n]* -s c" "-a '[^']*iq4_nl fp8" "-o ngl")
# and bash completes with it: a device name after --hw, llama.cpp's -ctk among fit's flags
add_test(NAME cli_completion_in_bash
         COMMAND bash -c "source <('$<TARGET_FILE:infer-plan>' completion bash) && COMP_WORDS=(infer-plan fit --hw h2) && COMP_CWORD=3 && _infer_plan && echo \"hw: \${COMPREPLY[*]}\" && COMP_WORDS=(infer-plan fit -ct) && COMP_CWORD=2 && _infer_plan && echo \"flags: \${COMPREPLY[*]}\"")
set_tests_properties(cli_completion_in_bash PROPERTIES PASS_REGULAR_EXPRESSION "hw: h20 h200\nflags: -ctk -ctv\n")
# and zsh and fish, where installed (Debian's zsh and fish packages)
find_program(INFER_PLAN_ZSH zsh)
if(INFER_PLAN_ZSH)
  # (zsh runs the bash function through bashcompinit; here: that the script loads and registers it)
  add_test(NAME cli_completion_in_zsh
           COMMAND ${INFER_PLAN_ZSH} -f -c "source <('$<TARGET_FILE:infer-plan>' completion zsh) && (( \$+functions[_infer_plan] )) && (( \$+functions[compgen] )) && echo registered")
  set_tests_properties(cli_completion_in_zsh PROPERTIES PASS_REGULAR_EXPRESSION "^registered\n$")
endif()
find_program(INFER_PLAN_FISH fish)
if(INFER_PLAN_FISH)
  add_test(NAME cli_completion_in_fish
           COMMAND ${INFER_PLAN_FISH} --no-config -c "'$<TARGET_FILE:infer-plan>' completion fish | source; complete -C 'infer-plan fit --hw h2'; complete -C 'infer-plan fit --ctx-s'")
  set_tests_properties(cli_completion_in_fish PROPERTIES PASS_REGULAR_EXPRESSION "h20[\t\n].*h200[\t\n].*--ctx-size")
endif()
# each item of a comma list is checked as a value of its own: no wrap past 2^64 - 1, no NaN
infer_plan_cli_case(bad_sweep_item_huge EXIT 2 ARGS fit -np 1,99999999999999999999999
  MATCH "--parallel: '99999999999999999999999' is beyond 2\\^64 - 1")
infer_plan_cli_case(bad_sweep_both_formats EXIT 2 ARGS sweep scenarios/ --format csv -o json
  MATCH "--format and -o \\(or --json\\) both given")
