#!/usr/bin/env bash
# Runs the GGUF reader's libFuzzer target for SECONDS (default 60) from a seed corpus of
# tests/data/gguf. BUILD_DIR (default build-fuzz) must be configured with clang and
# -DINFER_PLAN_FUZZ=ON (tools/setup.sh sanitize does; so does this script when BUILD_DIR is
# absent). Exits non-zero on a finding; the crashing input is left in BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
dir=${2:-build-fuzz}
if [ ! -f "$dir/CMakeCache.txt" ]; then
  CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINFER_PLAN_FUZZ=ON \
    -DINFER_PLAN_TESTS=OFF -DINFER_PLAN_CUDA=OFF -DINFER_PLAN_BENCH=OFF >/dev/null
fi
cmake --build "$dir" -j2 --target fuzz_gguf_reader
mkdir -p "$dir/corpus"
cp tests/data/gguf/*.gguf "$dir/corpus/"
cd "$dir"
echo "fuzz: GGUF reader for ${seconds} s"
rc=0
./fuzz/fuzz_gguf_reader corpus -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 >fuzz.log 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
  tail -n 60 fuzz.log
  echo "fuzz: FINDING (exit $rc); the input is in $dir (crash-*, leak-*, timeout-*)"
  exit "$rc"
fi
grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)" fuzz.log || true
echo "fuzz: no finding in ${seconds} s"
