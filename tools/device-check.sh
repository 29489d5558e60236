#!/usr/bin/env bash
# The device check (issue 7): on a machine with an NVIDIA GPU, nvcc, CMake and ninja but no package
# access and no network, build infer-plan with CUDA, run the CUDA tests, probe the GPU, run the GPU
# reports and the matrix-vector bench, and write the planner's H200 figures beside them, all into
# OUT_DIR. Steps run in order of value, so a lease that ends early still brings back the most:
#   1 configure, build   2 CUDA tests   3 probe   4 one report per weight type (Qwen3-8B BF16, Q8_0,
#   Q4_0, Q2_K)   then, without --quick: 5 bench_cuda_gemv   6 KV q8_0/q4_0, batch 8, offload,
#   speculative reports   7 the planner's figures.
#   tools/device-check.sh [--quick] [--dry-run] OUT_DIR
# --quick: steps 1-4 within 360 s (a 15-minute lease less the machine's start and the copies).
# --dry-run: print each step, its cap and its command; run nothing (any machine).
# Before the tree travels, run tools/vendor-deps.sh on a machine with the Debian packages: it
# copies the header-only dependencies into third_party/include (ignored by git; carry it along).
# Ends within DEVICE_CHECK_BUDGET_S seconds (default 540, 360 with --quick); every step has its
# own cap as well, and the caps of the steps a mode runs add up to at most its budget. Exit 0 when
# every step that ran passed, 1 otherwise, 2 for a setup problem (no GPU visible, missing tools).
# Environment: CUDA_ARCH (default 90), DEVICE_CHECK_BUILD (build folder, default build-device),
# DEVICE_CHECK_JOBS (default: all cores).
set -euo pipefail

quick=0
dry_run=0
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "device-check: unknown option '$1' (expected --quick, --dry-run)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -ne 1 ]; then
  echo "usage: $0 [--quick] [--dry-run] OUT_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
mkdir -p "$out/logs" "$out/planner"
build=${DEVICE_CHECK_BUILD:-$root/build-device}
budget_s=${DEVICE_CHECK_BUDGET_S:-$([ $quick -eq 1 ] && echo 360 || echo 540)}
arch=${CUDA_ARCH:-90}
jobs=${DEVICE_CHECK_JOBS:-$(nproc)}
start_s=$(date +%s)
summary="$out/summary.txt"
: >"$summary"
failures=0
planned=0  # --dry-run: the caps so far

note() { echo "$*" | tee -a "$summary"; }
seconds_left() { echo $((budget_s - ($(date +%s) - start_s))); }

# step NAME CAP_S COMMAND...: runs COMMAND under `timeout` (its cap, or what is left of the
# budget), output to logs/NAME.log; records ok / FAILED (rc) / TIMEOUT with the seconds it took.
step() {
  local name=$1 cap=$2
  shift 2
  if [ $dry_run -eq 1 ]; then
    planned=$((planned + cap))
    note "$(printf '%-28s cap %4d s  (sum %4d s)  %s' "$name" "$cap" "$planned" "$*")"
    return 0
  fi
  local left
  left=$(seconds_left)
  if [ "$left" -lt 5 ]; then
    note "SKIPPED  $name: the ${budget_s} s budget is spent"
    failures=$((failures + 1))
    return 1
  fi
  [ "$cap" -gt "$left" ] && cap=$left
  local t0 rc
  t0=$(date +%s)
  if timeout --kill-after=10 "$cap" "$@" >"$out/logs/$name.log" 2>&1; then rc=0; else rc=$?; fi
  local took=$(($(date +%s) - t0))
  if [ $rc -eq 0 ]; then
    note "ok       $name (${took} s)"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    note "TIMEOUT  $name after ${took} s (cap ${cap} s); log: logs/$name.log"
    failures=$((failures + 1))
  else
    note "FAILED   $name: exit $rc after ${took} s; log: logs/$name.log"
    tail -n 15 "$out/logs/$name.log" | sed 's/^/         | /' | tee -a "$summary"
    failures=$((failures + 1))
  fi
  return $rc
}

finish() {
  if [ $dry_run -eq 1 ]; then
    note "--- dry run: caps sum to ${planned} s of the ${budget_s} s budget; nothing was run"
    [ "$planned" -le "$budget_s" ] && exit 0
    exit 1
  fi
  note "---"
  if [ -f "$out/probe-cuda.txt" ]; then
    note "probe (profile: probe-cuda.json):"
    sed 's/^/  /' "$out/probe-cuda.txt" | tee -a "$summary"
  fi
  if [ -f "$out/bench-cuda-gemv.txt" ]; then
    note "bench_cuda_gemv (weights read per second against a device copy):"
    sed 's/^/  /' "$out/bench-cuda-gemv.txt" | tee -a "$summary"
  fi
  note "device-check: $failures problem(s), $(($(date +%s) - start_s)) s; outputs in $out"
  [ "$failures" -eq 0 ] && exit 0
  exit 1
}

# --- setup: the vendored headers, the tools, the device ------------------------------------------
if [ $dry_run -eq 1 ]; then
  note "device-check --dry-run$([ $quick -eq 1 ] && echo ' --quick'): budget ${budget_s} s, sm_${arch}; the steps in order:"
  nvcc=${CUDACXX:-nvcc}
else
for dir in CLI fmt nlohmann doctest eigen3/Eigen; do
  if [ ! -d "$root/third_party/include/$dir" ]; then
    echo "device-check: $root/third_party/include/$dir is missing. Run tools/vendor-deps.sh on a machine" >&2
    echo "  with the Debian packages (libcli11-dev libfmt-dev nlohmann-json3-dev libeigen3-dev doctest-dev)" >&2
    echo "  before copying the tree here: this machine has no package access." >&2
    exit 2
  fi
done
for tool in cmake ninja timeout; do
  command -v "$tool" >/dev/null || { echo "device-check: '$tool' is not on the PATH" >&2; exit 2; }
done
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "device-check: nvcc not found (PATH, CUDACXX, /usr/local/cuda/bin)" >&2; exit 2; }

note "device-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), budget ${budget_s} s, sm_${arch}"
note "nvcc: $("$nvcc" --version | tail -n 1)"
if command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
     >"$out/nvidia-smi.txt" 2>&1; then
  note "gpu: $(head -n 1 "$out/nvidia-smi.txt")"
else
  note "device-check: no GPU visible (nvidia-smi missing or failing); this check needs one (--dry-run lists the steps)"
  exit 2
fi
(cd "$root" && git rev-parse HEAD 2>/dev/null || echo "not a git checkout") | sed 's/^/commit: /' | tee -a "$summary"
fi

# --- build: vendored header-only dependencies, fmt header-only, CUDA on ----------------------------
step configure 40 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DINFER_PLAN_VENDORED_DEPS=ON -DINFER_PLAN_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DINFER_PLAN_BENCH=ON || finish
# Only what the check runs: the CLI, the CUDA tests and the GPU bench (the CPU suite is CI's job).
# The CUDA tests are the ctest entries labelled cuda, each named after its executable.
if [ $dry_run -eq 1 ]; then
  cuda_tests="(the ctest entries labelled cuda)"
else
  cuda_tests=$(ctest --test-dir "$build" -L cuda -N 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: *\([A-Za-z0-9_]*\).*/\1/p' | tr '\n' ' ') || cuda_tests=""
  [ -n "$cuda_tests" ] || { note "FAILED   configure: ctest lists no tests labelled cuda"; failures=$((failures + 1)); finish; }
fi
bench_target=$([ $quick -eq 1 ] && echo "" || echo bench_cuda_gemv)
# shellcheck disable=SC2086  # one target per word
step build $([ $quick -eq 1 ] && echo 130 || echo 150) cmake --build "$build" -j "$jobs" --target infer-plan $bench_target $cuda_tests || finish
ip="$build/infer-plan"

# --- the CUDA tests: on a GPU machine a skip (exit 77) is a failure ---------------------------------
if step cuda-tests $([ $quick -eq 1 ] && echo 45 || echo 60) ctest --test-dir "$build" -L cuda --output-on-failure && [ $dry_run -eq 0 ]; then
  if grep -q "Not Run\|Skipped" "$out/logs/cuda-tests.log"; then
    note "FAILED   cuda-tests: reported skipped (no device visible to the tests); log: logs/cuda-tests.log"
    failures=$((failures + 1))
  fi
fi
cp "$out/logs/cuda-tests.log" "$out/cuda-tests.txt" 2>/dev/null || true

# --- probe: the measured profile every GPU prediction uses -----------------------------------------
probed=""
if step probe $([ $quick -eq 1 ] && echo 35 || echo 50) "$ip" probe --backend cuda $([ $quick -eq 1 ] && echo --quick) \
     --out "$out/probe-cuda.json" && [ $dry_run -eq 0 ]; then
  probed="$out/probe-cuda.json"
  cp "$out/logs/probe.log" "$out/probe-cuda.txt"
fi

# --- GPU reports: the plan predicted with the probed profile, executed by the CUDA decoder ----------
# First Qwen3-8B at each weight type with KV bf16; without --quick then KV q8_0 and q4_0 at Q8_0,
# batch 8, offload over PCIe and a speculative block-length sweep. Each writes markdown
# (report-*.md), JSON (report-*.json, the same run's rows: --json prints them) and SVG plots (svg-*/).
hw=${probed:-h200}
gpu_report() {  # NAME CAP ARGS...: the report as text (log), markdown, JSON and SVG from one run
  local name=$1 cap=$2
  shift 2
  step "report-$name" "$cap" "$ip" report "$@" --backend cuda --hw "$hw" --quiet \
    --out "$out/report-$name.md" --svg "$out/svg-$name" --json || return 0
  [ $dry_run -eq 1 ] && return 0
  # stdout's JSON object (its braces alone at column 0), without stderr's lines around it
  sed -n '/^{/,/^}/p' "$out/logs/report-$name.log" >"$out/report-$name.json"
  note "         $(grep -m1 -o '"holds": [a-z]*' "$out/report-$name.json" || echo 'no verdict in the JSON')"
}
for w in BF16 Q8_0:pure Q4_0:pure Q2_K:pure; do
  gpu_report "qwen3-8b-${w%%:*}-kv-bf16" 25 --model qwen3-8b --weights "$w" \
    --kv bf16 --ctx 1024 --output-len $([ $quick -eq 1 ] && echo 32 || echo 64) --parallel 1
done
[ $quick -eq 1 ] && finish

# --- bench: the matrix-vector kernels against a device copy, 1 GiB per type (issue 7's targets:
# >= 85% of the copy for BF16 and Q8_0, >= 70% for Q4_0 and Q2_K; printed, judged by a reader) ---
if step bench-cuda-gemv 30 "$build/bench/bench_cuda_gemv" 1 && [ $dry_run -eq 0 ]; then
  cp "$out/logs/bench-cuda-gemv.log" "$out/bench-cuda-gemv.txt"
fi
for kv in q8_0 q4_0; do
  gpu_report "qwen3-8b-Q8_0-kv-$kv" 15 --model qwen3-8b --weights Q8_0:pure --kv "$kv" --ctx 1024 --output-len 64 --parallel 1
done
gpu_report qwen3-8b-BF16-batch8 15 --model qwen3-8b --weights BF16 --kv bf16 --ctx 1024 --output-len 64 --parallel 8
gpu_report offload-pcie 15 "$root/scenarios/plans/h200-offload.json"
gpu_report speculative 20 "$root/scenarios/plans/h200-spec.json" --spec-repeats 2

# --- the planner's figures for the H200 (datasheet) and, when probed, for the measured profile ------
# shellcheck disable=SC2317  # run through `bash -c` (exported) so that `timeout` can bound it
planner_outputs() {  # HW TAG
  local hw=$1 tag=$2 w kv
  for w in BF16 Q8_0 Q4_0 Q2_K; do
    for kv in bf16 q8_0 q4_0; do
      "$ip" roofline --model qwen3-8b --hw "$hw" --weights "$w" --kv "$kv" --batch 1 --json \
        >"$out/planner/roofline-$tag-qwen3-8b-$w-kv-$kv.json"
    done
    "$ip" spec --model qwen3-8b --hw "$hw" --weights "$w" --draft-layers 4 --accept 0.8 --json \
      >"$out/planner/spec-$tag-qwen3-8b-$w.json"
    "$ip" offload --model qwen3-8b --hw "$hw" --weights "$w" --json >"$out/planner/offload-$tag-qwen3-8b-$w.json"
  done
}
export -f planner_outputs
export ip out
# shellcheck disable=SC2016  # $1 and $2 expand in the child shell, as intended
step planner-h200 5 bash -c 'set -euo pipefail; planner_outputs "$1" "$2"' _ h200 h200 || true
if [ -n "$probed" ] || [ $dry_run -eq 1 ]; then
  # shellcheck disable=SC2016
  step planner-probed 5 bash -c 'set -euo pipefail; planner_outputs "$1" "$2"' _ "${probed:-PROBED}" probed || true
fi

finish
