# CLI cases for `queue` (Little's law, the serving simulation, the rate search) and `admit`:
# SPEC 6 figures from the command line, and bad input that must exit 2 naming the flag.

# --- Little's law (SPEC 6, SPEC 9 "Little: 4 req/s * 0.5 s = 2; * 2 s = 8") ---
infer_plan_cli_case(queue_little_2 EXIT 0 ARGS queue --rate 4 --sojourn 0.5
  MATCH "mean in system \\(n\\) +2 requests +<- solved" "not by how many KV slots fit")
infer_plan_cli_case(queue_little_8_json EXIT 0 ARGS queue --rate 4 --sojourn 2 --json
  MATCH "\"mean_in_system\": 8.0" "\"rate_per_s\": 4.0" "\"mean_sojourn_s\": 2.0" "\"solved_for\": \"mean_in_system\"")
infer_plan_cli_case(queue_little_rate EXIT 0 ARGS queue --in-system 8 --sojourn 2 --explain
  MATCH "arrival rate \\(lambda\\) +4 req/s +<- solved" "lambda = n / T = 8 requests / 2 s = 4 req/s")

# --- admission (SPEC 6: 0.196 + 6.76 = 6.956 s, 0.044 s inside 7 s; +0.1 s queueing -> reject) ---
infer_plan_cli_case(admit_seed EXIT 0 ARGS admit --ttft 0.196 --generation 6.76 --deadline 7
  MATCH "= 6.956 s after arrival" "ADMIT with 0.044 s to spare")
infer_plan_cli_case(admit_seed_json EXIT 0 ARGS admit --ttft 0.196 --generation 6.76 --deadline 7 --json
  MATCH "\"admit\": true" "\"finish_s\": 6.95(6|59)" "\"margin_s\": 0.044")
infer_plan_cli_case(admit_queued EXIT 0 ARGS admit --queue-wait 0.1 --ttft 0.196 --generation 6.76 --deadline 7
  MATCH "= 7.056 s after arrival" "DO NOT ADMIT: misses the deadline by 0.056 s" "reject now" "hand off"
        "faster configuration: generation must take <= 6.704 s")
infer_plan_cli_case(admit_queued_json EXIT 0 ARGS admit --queue-wait 0.1 --ttft 0.196 --generation 6.76 --deadline 7 --json
  MATCH "\"admit\": false" "\"finish_s\": 7.056" "\"margin_s\": -0.056" "\"generation_speedup_needed\": 1.008")
infer_plan_cli_case(admit_kv EXIT 0 ARGS admit --ttft 0.196 --generation 6.76 --deadline 7 --kv-free 8000 --kv-need 8448
  MATCH "KV: needs 8448 tokens, 8000 free: does not fit" "DO NOT ADMIT: no KV space")
infer_plan_cli_case(admit_help EXIT 0 ARGS admit --help MATCH "--queue-wait" "seconds \\(default 0\\)" "--kv-need")

# --- simulation ---
# M/D/1: S = 0.1 s, rho = 0.5: Pollaczek-Khinchine Wq = 0.5 x 0.1 / (2 x 0.5) = 0.05 s, L = 0.75
# (10^5 requests, seed 1: within 4% by the spread measured over seeds)
set(_md1 queue --simulate --rate 5 --num-prompts 100000 --iteration-ms 10 --prefill-ms 100 --output-len 1 --max-batch 1)
infer_plan_cli_case(queue_sim_md1 EXIT 0 ARGS ${_md1} --json
  MATCH "\"stable\": true" "\"queue_wait_ms\": {[^}]*\"mean\": (4[89]|5[01])\\." "\"mean_in_system\": 0.7[45]"
        "\"utilisation\": 0.50" "\"rejected\": 0")
infer_plan_cli_case(queue_sim_text EXIT 0 ARGS ${_md1} --explain
  MATCH "stability: stable \\(work rho >= 0.50" "queue wait +(4[89]|5[01])\\.[0-9][0-9] " "Little: 5.0[0-9]* req/s x 0.15[0-9]* s mean E2EL = 0.75"
        "each prompt prefilled alone in its step" "percentiles: nearest rank")
# rho = 1.3: unstable, said so, and the latencies are of these N requests only (as vLLM's bench
# reports an overloaded run): 10000 arrivals over ~769 s (Poisson), 1000 s of work: the last waits ~200-250 s
set(_md1_over queue --simulate --rate 13 --num-prompts 10000 --iteration-ms 10 --prefill-ms 100 --output 1 --max-batch 1)
infer_plan_cli_case(queue_sim_unstable EXIT 0 ARGS ${_md1_over}
  MATCH "stability: UNSTABLE: .*rho >= 1.2" "latency: of these 10000 requests only")
infer_plan_cli_case(queue_sim_unstable_json EXIT 0 ARGS ${_md1_over} --json
  MATCH "\"stable\": false" "\"ttft_ms\": {[^}]*\"max\": 2[0-4][0-9][0-9][0-9][0-9]\.")
# The SPEC 6 request on a batch-1 server, arrivals every 6.856 s: each second one would wait
# 0.1 s and finish at 7.056 s -> rejected at arrival; the others finish at 6.956 s.
infer_plan_cli_case(queue_sim_deadline EXIT 0 ARGS queue --simulate --arrivals fixed --rate 0.145857642940490 --num-prompts 4
  --input-len 1000 --output-len 256 --prefill-ms 196 --iteration-ms 26.509803921568627 --max-batch 1 --deadline 7 --json
  MATCH "\"completed\": 2" "\"deadline\": 2" "\"rejection_rate\": 0.5" "\"e2el_ms\": {[^}]*\"max\": 695[56]\\.")
# D/D/1 with S = 0.1 s: every rate below 10 req/s meets a 0.15 s TTFT, none above is stable.
infer_plan_cli_case(queue_max_rate EXIT 0 ARGS queue --max-rate --arrivals fixed --requests 200 --iteration-ms 10
  --prefill-ms 100 --output 1 --max-batch 1 --slo-ttft-p99 0.15
  MATCH "SLO: stable, p99 TTFT <= 0.15 s" "max sustainable rate: 9.9[0-9]* req/s")
infer_plan_cli_case(queue_help EXIT 0 ARGS queue --help
  MATCH "--iteration-ms" "--deadline-rule" "--kv-tokens" "default 1000" "default persists")

# --- bad input: exit 2, the message names the flag ---
infer_plan_cli_case(bad_queue_one EXIT 2 ARGS queue --rate 4 MATCH "needs exactly two of --rate .*1 given")
infer_plan_cli_case(bad_queue_three EXIT 2 ARGS queue --rate 4 --sojourn 0.5 --in-system 2
  MATCH "leave out the one to solve for")
infer_plan_cli_case(bad_queue_zero_rate EXIT 2 ARGS queue --rate 0 --sojourn 1 MATCH "--rate: 0 is out of range; expected above 0")
infer_plan_cli_case(bad_queue_negative EXIT 2 ARGS queue --rate 4 --sojourn -1 MATCH "--sojourn: -1 is out of range; expected above 0")
infer_plan_cli_case(bad_queue_sim_flag EXIT 2 ARGS queue --rate 4 --sojourn 1 --iteration-ms 5
  MATCH "--iteration-ms needs --simulate")
infer_plan_cli_case(bad_queue_sim_no_iteration EXIT 2 ARGS queue --simulate --rate 4 MATCH "--simulate needs the server.s times: --hw .* or --iteration-ms")
infer_plan_cli_case(bad_queue_sim_no_rate EXIT 2 ARGS queue --simulate --iteration-ms 20 MATCH "--rate is required")
infer_plan_cli_case(bad_queue_sim_little EXIT 2 ARGS queue --simulate --rate 2 --sojourn 1 --iteration-ms 5
  MATCH "--sojourn and --in-system belong to Little's law")
infer_plan_cli_case(bad_queue_prompt EXIT 2 ARGS queue --simulate --rate 2 --iteration-ms 5 --input-len 512:256
  MATCH "--input-len: '512:256'")
infer_plan_cli_case(bad_queue_requests EXIT 2 ARGS queue --simulate --rate 2 --iteration-ms 5 --num-prompts 0
  MATCH "--num-prompts: 0 is out of range")
infer_plan_cli_case(bad_queue_prefill EXIT 2 ARGS queue --simulate --rate 2 --iteration-ms 5 --prefill-ms -5
  MATCH "--prefill-ms: -5 is out of range; expected at least 0")
infer_plan_cli_case(bad_queue_arrivals EXIT 2 ARGS queue --simulate --rate 2 --iteration-ms 5 --arrivals bursty
  MATCH "--arrivals")
infer_plan_cli_case(bad_queue_kv EXIT 2 ARGS queue --simulate --rate 2 --iteration-ms 5 --kv-tokens 0
  MATCH "--kv-tokens: must be at least 1")
infer_plan_cli_case(bad_queue_slo EXIT 2 ARGS queue --max-rate --iteration-ms 5 --slo-reject 2
  MATCH "--slo-reject: 2 is out of range; expected at least 0 and at most 1")
infer_plan_cli_case(bad_admit_missing EXIT 2 ARGS admit --ttft 0.2 --generation 6 MATCH "--deadline is required")
infer_plan_cli_case(bad_admit_deadline EXIT 2 ARGS admit --ttft 0.2 --generation 6 --deadline 0
  MATCH "--deadline: 0 is out of range; expected above 0")
infer_plan_cli_case(bad_admit_wait EXIT 2 ARGS admit --queue-wait -0.1 --ttft 0.2 --generation 6 --deadline 7
  MATCH "--queue-wait: -0.1 is out of range; expected at least 0")
infer_plan_cli_case(bad_admit_kv EXIT 2 ARGS admit --ttft 0.2 --generation 6 --deadline 7 --kv-free 100
  MATCH "--kv-free and --kv-need: give both or neither")

# --tp on the roofline's server, and what its times rest on
infer_plan_cli_case(queue_simulate_tp EXIT 0 ARGS queue --simulate --rate 4 --hw h100-sxm -m llama-3.1-70b --tp 4 --num-prompts 50
  --input-len 512 --output-len 64 --engine llama.cpp -w Q4_K_M --json
  MATCH "\"basis\": \"transferred\"" "4 x h100-sxm .layer split." "\"ttft_ms\": " "\"itl_ms\": ")
infer_plan_cli_case(bad_queue_tp_no_hw EXIT 2 ARGS queue --simulate --rate 4 --iteration-ms 20 --tp 2
  MATCH "--tp: tensor parallel needs --hw")
# vLLM bench's --request-rate inf: 50 requests at once on a 10 ms-per-iteration server with 100 ms
# prefills, one batch of 64: the 50 prefills run one after another (FCFS, prefill first), so the
# last first token comes at 50 x 0.1 = 5 s: its TTFT is that less its arrival, within the burst's 0.1 s.
infer_plan_cli_case(queue_sim_rate_inf EXIT 0 ARGS queue --simulate --rate inf --num-prompts 50 --iteration-ms 10
  --prefill-ms 100 --output-len 2 --max-batch 64 --json
  MATCH "\"ttft_ms\": {[^}]*\"max\": 4[89][0-9][0-9]\\." "\"rate_per_s\": 500")
infer_plan_cli_case(bad_queue_rate_inf_little EXIT 2 ARGS queue --rate inf --sojourn 2
  MATCH "--rate inf: every request at once is a simulated benchmark run")
# llama-server's policy: -np slots, prompts' tokens up to n_batch (-b) beside the slots' decodes
infer_plan_cli_case(queue_sim_llama_slots EXIT 0 ARGS queue --simulate --rate 2 --hw rtx-4090 -m llama-3.1-8b -w Q4_K_M
  --engine llama.cpp --input-len 2048 --output-len 128 --num-prompts 50 -np 4 -b 512
  MATCH "max batch 4, KV [0-9]+ tokens; FCFS, prompts within 512 tokens a step beside the batch.s decodes")
infer_plan_cli_case(bad_queue_parallel_engine EXIT 2 ARGS queue --simulate --rate 2 --hw rtx-4090 -m llama-3.1-8b
  --engine vllm --parallel 4
  MATCH "--parallel and --batch-size are llama-server.s slots and n_batch; the engine here is vllm")
infer_plan_cli_case(bad_queue_parallel_and_max_batch EXIT 2 ARGS queue --simulate --rate 2 --hw rtx-4090 -m llama-3.1-8b
  -w Q4_K_M --engine llama.cpp --parallel 4 --max-batch 8
  MATCH "--parallel and --max-batch: both set the most running requests; give one")
infer_plan_cli_case(bad_queue_batch_size_zero EXIT 2 ARGS queue --simulate --rate 2 --hw rtx-4090 -m llama-3.1-8b
  -w Q4_K_M --engine llama.cpp -b 0 MATCH "-b: 0 is out of range; expected 1 to 16777216 tokens")
infer_plan_cli_case(bad_queue_parallel_zero EXIT 2 ARGS queue --simulate --rate 2 --hw rtx-4090 -m llama-3.1-8b
  -w Q4_K_M --engine llama.cpp --parallel 0 MATCH "--parallel: 0 slots; expected at least 1")
# queue refuses what its engine cannot run, as fit and roofline do
infer_plan_cli_case(bad_queue_engine_kv EXIT 2 ARGS queue --simulate --hw h100-sxm -m llama-3.1-8b --rate 2 --engine vllm --kv q8_0
  MATCH "vLLM has no q8_0 KV cache")
