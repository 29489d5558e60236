#!/usr/bin/env bash
# The device check: on a machine with an NVIDIA GPU (and no package access, no network), run the
# CUDA tests, probe the GPU, run the GPU reports and the matrix-vector bench, into OUT_DIR. Steps
# run in order of value, so a lease that ends early still brings back the most:
#   1 the binaries: the prebuilt bundle's start (--prebuilt), else configure, build infer-plan alone,
#     then build the CUDA tests and the bench (a failure there skips only them)
#   2 each CUDA test as its own step, under its cap (build folder's cuda-tests.txt)
#   3 probe   4 one report per weight type (Qwen3-8B BF16, Q8_0, Q4_K_M, Q2_K)
#   then, without --quick: 5 bench_cuda_gemv   6 KV q8_0/q4_0, batch 8, offload, speculative reports
#   tools/device-check.sh [--quick] [--prebuilt DIR] [--archive] [--dry-run] OUT_DIR
# --prebuilt DIR: run the binaries tools/device-bundle.sh built on another machine (no configure,
#   no build); if they do not start here, build here instead, with the build's budget.
# --archive: keep OUT_DIR to two files, summary.txt and device-check.tar.gz (everything so far,
#   rewritten after every step and every 15 s within one), so that a run killed at any moment
#   still brings back what it measured; the working files live in a folder under $TMPDIR.
# --quick: steps 1-4 (240 s with --prebuilt, 440 s building here).
# --dry-run: print each step, its cap and its command; run nothing (any machine).
# Budgets (DEVICE_CHECK_BUDGET_S overrides): --prebuilt 240 s quick, 390 s full; building here
# 440 s quick, 600 s full. Every step has its own cap, and the caps of a mode add up to at most
# its budget. The planner's figures (no GPU needed) are tools/device-planner.sh's, run afterwards.
# Building here needs tools/vendor-deps.sh's third_party/include (carry it along). Exit 0 when
# every step that ran passed, 1 otherwise, 2 for a setup problem (no GPU visible, missing tools).
# Environment: CUDA_ARCH (default 90), DEVICE_CHECK_BUILD (build folder, default build-device),
# DEVICE_CHECK_JOBS (default: all cores).
set -euo pipefail

quick=0
dry_run=0
archive=0
prebuilt=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    --archive) archive=1; shift ;;
    --prebuilt)
      [ $# -ge 2 ] || { echo "device-check: --prebuilt needs a folder (tools/device-bundle.sh's)" >&2; exit 2; }
      prebuilt=$2; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "device-check: unknown option '$1' (expected --quick, --prebuilt DIR, --archive, --dry-run)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -ne 1 ]; then
  echo "usage: $0 [--quick] [--prebuilt DIR] [--archive] [--dry-run] OUT_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "$prebuilt" ]; then
  [ -d "$prebuilt" ] || { echo "device-check: --prebuilt $prebuilt is not a folder (make it with tools/device-bundle.sh)" >&2; exit 2; }
  prebuilt=$(cd "$prebuilt" && pwd)
fi
mkdir -p "$1"
dest=$(cd "$1" && pwd)
if [ $archive -eq 1 ] && [ $dry_run -eq 0 ]; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/device-check.XXXXXX")/device-check
else
  out=$dest
fi
mkdir -p "$out/logs"
build=${DEVICE_CHECK_BUILD:-$root/build-device}
budget_for() {  # the budget of a mode: prebuilt (1/0)
  if [ "$1" -eq 1 ]; then [ $quick -eq 1 ] && echo 240 || echo 390
  else [ $quick -eq 1 ] && echo 440 || echo 600; fi
}
budget_s=${DEVICE_CHECK_BUDGET_S:-$(budget_for "$([ -n "$prebuilt" ] && echo 1 || echo 0)")}
arch=${CUDA_ARCH:-90}
jobs=${DEVICE_CHECK_JOBS:-$(nproc)}
start_s=$(date +%s)
summary="$out/summary.txt"
: >"$summary"
failures=0
planned=0  # --dry-run: the caps so far

note() { echo "$*" | tee -a "$summary"; }
seconds_left() { echo $((budget_s - ($(date +%s) - start_s))); }

# With --archive: OUT_DIR's summary.txt and device-check.tar.gz replaced whole (written beside,
# then renamed), so that what a killed run leaves there is always a complete file.
archive_now() {
  [ $archive -eq 1 ] && [ $dry_run -eq 0 ] || return 0
  cp "$summary" "$dest/summary.txt.part" && mv -f "$dest/summary.txt.part" "$dest/summary.txt"
  tar -czf "$dest/device-check.tar.gz.part" -C "$(dirname "$out")" device-check &&
    mv -f "$dest/device-check.tar.gz.part" "$dest/device-check.tar.gz"
}

# step NAME CAP_S COMMAND...: runs COMMAND under `timeout` (its cap, or what is left of the
# budget), output to logs/NAME.log; records ok / FAILED (rc) / TIMEOUT with the seconds it took.
# Returns the command's exit status; the archive is rewritten every 15 s while it runs and after.
step() {
  local name=$1 cap=$2
  shift 2
  if [ $dry_run -eq 1 ]; then
    planned=$((planned + cap))
    note "$(printf '%-34s cap %4d s  (sum %4d s)  %s' "$name" "$cap" "$planned" "$*")"
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
  local t0 rc pid ticks=0
  t0=$(date +%s)
  timeout --kill-after=3 "$cap" "$@" >"$out/logs/$name.log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.2
    ticks=$((ticks + 1))
    [ $((ticks % 75)) -eq 0 ] && archive_now
  done
  if wait "$pid"; then rc=0; else rc=$?; fi
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
  archive_now
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
  note "device-check: $failures problem(s), $(($(date +%s) - start_s)) s; outputs in $dest"
  archive_now
  [ "$out" = "$dest" ] || rm -rf "$(dirname "$out")"  # --archive: all of it is in the tarball
  [ "$failures" -eq 0 ] && exit 0
  exit 1
}

# The CUDA tests as "NAME CAP_S" lines: the build's (or bundle's) cuda-tests.txt, else (a dry run
# before any build) the same list read from tests/CMakeLists.txt.
cuda_test_list() {  # MANIFEST
  if [ -f "$1" ]; then cat "$1"
  else sed -n 's/^ *infer_plan_cuda_test(\([A-Za-z0-9_]*\) \([0-9]*\)).*/\1 \2/p' "$root/tests/CMakeLists.txt"; fi
}

# --- setup: the tools, the device ----------------------------------------------------------------
if [ $dry_run -eq 1 ]; then
  note "device-check --dry-run$([ $quick -eq 1 ] && echo ' --quick')$([ -n "$prebuilt" ] && echo " --prebuilt $prebuilt"): budget ${budget_s} s, sm_${arch}; the steps in order:"
  nvcc=${CUDACXX:-nvcc}
else
  command -v timeout >/dev/null || { echo "device-check: 'timeout' is not on the PATH" >&2; exit 2; }
  note "device-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), budget ${budget_s} s$([ -n "$prebuilt" ] && echo ", prebuilt $prebuilt")"
  if command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
       >"$out/nvidia-smi.txt" 2>&1; then
    note "gpu: $(head -n 1 "$out/nvidia-smi.txt")"
  else
    note "device-check: no GPU visible (nvidia-smi missing or failing); this check needs one (--dry-run lists the steps)"
    archive_now
    exit 2
  fi
  (cd "$root" && git rev-parse HEAD 2>/dev/null || echo "not a git checkout") | sed 's/^/commit: /' | tee -a "$summary"
  # cuBLAS is opened at run time: where the toolkit keeps it, if the loader would not find it
  for lib in "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/../lib64" /usr/local/cuda/lib64; do
    [ -d "$lib" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$lib"
  done
fi
cd "$root"

# --- 1 the binaries: the bundle's, if they start here; else built here -------------------------------
if [ -n "$prebuilt" ]; then
  bin=$prebuilt
  [ $dry_run -eq 0 ] && [ -f "$prebuilt/BUNDLE.txt" ] && sed 's/^/bundle: /' "$prebuilt/BUNDLE.txt" | tee -a "$summary"
  if ! step bundle-start 5 "$bin/infer-plan" --version; then
    prebuilt=""
    budget_s=${DEVICE_CHECK_BUDGET_S:-$(budget_for 0)}
    note "         the bundle does not start here (log: logs/bundle-start.log); building here, budget now ${budget_s} s"
  fi
fi
tests_built=1
if [ -z "$prebuilt" ]; then
  bin=$build
  if [ $dry_run -eq 0 ]; then
    for dir in CLI fmt nlohmann doctest eigen3/Eigen; do
      if [ ! -d "$root/third_party/include/$dir" ]; then
        note "device-check: $root/third_party/include/$dir is missing. Run tools/vendor-deps.sh on a machine with the"
        note "  Debian packages before copying the tree here (this machine has no package access), or use --prebuilt."
        archive_now
        exit 2
      fi
    done
    for tool in cmake ninja; do
      command -v "$tool" >/dev/null || { note "device-check: '$tool' is not on the PATH"; archive_now; exit 2; }
    done
    nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    [ -x "$nvcc" ] || { note "device-check: nvcc not found (PATH, CUDACXX, /usr/local/cuda/bin)"; archive_now; exit 2; }
    note "nvcc: $("$nvcc" --version | tail -n 1), sm_${arch}"
  fi
  step configure 30 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DINFER_PLAN_VENDORED_DEPS=ON -DINFER_PLAN_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DINFER_PLAN_BENCH=ON || finish
  # infer-plan alone first: the probe and the reports need only it
  step build-infer-plan 110 cmake --build "$build" -j "$jobs" --target infer-plan || finish
  bench_target=$([ $quick -eq 1 ] && echo "" || echo bench_cuda_gemv)
  # shellcheck disable=SC2046  # one target per word
  step build-cuda-tests $([ $quick -eq 1 ] && echo 60 || echo 80) cmake --build "$build" -j "$jobs" --target \
    $(cuda_test_list "$build/cuda-tests.txt" | cut -d' ' -f1) $bench_target || tests_built=0
  [ $tests_built -eq 1 ] || note "         the CUDA tests and the bench are skipped (their build failed); the probe and the reports go on"
  manifest="$build/cuda-tests.txt"
  test_dir="$build/tests"
  bench_bin="$build/bench/bench_cuda_gemv"
else
  manifest="$prebuilt/cuda-tests.txt"
  test_dir="$prebuilt"
  bench_bin="$prebuilt/bench_cuda_gemv"
fi
ip="$bin/infer-plan"

# --- 2 the CUDA tests, one step each: on a GPU machine a skip (exit 77) is a failure -----------------
if [ $tests_built -eq 1 ]; then
  while read -r name cap; do
    [ -n "$name" ] || continue
    rc=0
    step "$name" "$cap" "$test_dir/$name" </dev/null || rc=$?
    [ $rc -eq 77 ] && note "         $name: exit 77 is a skip, a failure here: the test saw no device"
  done < <(cuda_test_list "$manifest")
fi

# --- 3 probe: the measured profile every GPU prediction uses -----------------------------------------
probed=""
if step probe $([ $quick -eq 1 ] && echo 35 || echo 50) "$ip" probe --backend cuda $([ $quick -eq 1 ] && echo --quick) \
     --out "$out/probe-cuda.json" && [ $dry_run -eq 0 ]; then
  probed="$out/probe-cuda.json"
  cp "$out/logs/probe.log" "$out/probe-cuda.txt"
fi

# --- 4 GPU reports: the plan predicted with the probed profile, executed by the CUDA decoder --------
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
for w in BF16 Q8_0:pure Q4_K_M Q2_K:pure; do
  gpu_report "qwen3-8b-${w%%:*}-kv-bf16" $([ $quick -eq 1 ] && echo 20 || echo 25) --model qwen3-8b --weights "$w" \
    --kv bf16 --ctx 1024 --output-len $([ $quick -eq 1 ] && echo 32 || echo 64) --parallel 1
done
[ $quick -eq 1 ] && finish

# --- 5 bench: the matrix-vector kernels against a device copy, 1 GiB per type (targets: >= 85% of
# the copy for BF16 and Q8_0, >= 70% for Q4_0 and Q2_K; printed, judged by a reader) ------------------
if [ $tests_built -eq 1 ] && step bench-cuda-gemv 30 "$bench_bin" 1 && [ $dry_run -eq 0 ]; then
  cp "$out/logs/bench-cuda-gemv.log" "$out/bench-cuda-gemv.txt"
fi
for kv in q8_0 q4_0; do
  gpu_report "qwen3-8b-Q8_0-kv-$kv" 15 --model qwen3-8b --weights Q8_0:pure --kv "$kv" --ctx 1024 --output-len 64 --parallel 1
done
gpu_report qwen3-8b-BF16-batch8 15 --model qwen3-8b --weights BF16 --kv bf16 --ctx 1024 --output-len 64 --parallel 8
gpu_report offload-pcie 15 "$root/scenarios/plans/h200-offload.json"
gpu_report speculative 20 "$root/scenarios/plans/h200-spec.json" --spec-repeats 2

finish
