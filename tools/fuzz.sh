#!/usr/bin/env bash
# Runs the libFuzzer targets for SECONDS each (default 60): the GGUF reader from the GGUF files in
# tests/data/gguf, and every JSON input (plan, profile, scenario, config.json) from the project's
# own JSON files. BUILD_DIR (default build-fuzz) must be configured with clang and
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
cmake --build "$dir" -j2 --target fuzz_gguf_reader fuzz_json_inputs
rm -rf "$dir/corpus-gguf" "$dir/corpus-json"
mkdir -p "$dir/corpus-gguf" "$dir/corpus-json"
cp tests/data/gguf/*.gguf "$dir/corpus-gguf/"
cp tests/data/*.json scenarios/*.json scenarios/plans/*.json hwprofiles/*.json "$dir/corpus-json/"
cd "$dir"
fuzz() {  # fuzz TARGET CORPUS MAX_LEN
  echo "fuzz: $1 for ${seconds} s"
  local rc=0
  "./fuzz/$1" "$2" -max_total_time="$seconds" -max_len="$3" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 >"$1.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$1.log"
    echo "fuzz: FINDING in $1 (exit $rc); the input is in $dir (crash-*, leak-*, timeout-*)"
    exit "$rc"
  fi
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)" "$1.log" || true
  echo "fuzz: no finding in $1 in ${seconds} s"
}
fuzz fuzz_gguf_reader corpus-gguf 8192
fuzz fuzz_json_inputs corpus-json 16384
