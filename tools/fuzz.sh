#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + coverage) in build-fuzz/ and runs the
# GGUF reader's for SECONDS (default 60) from a seed corpus of tests/data/gguf. Exits non-zero
# on a finding (the crashing input is left in build-fuzz/). Installs clang if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
missing=()
for p in clang libclang-rt-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINFER_PLAN_FUZZ=ON \
  -DINFER_PLAN_TESTS=OFF -DINFER_PLAN_CUDA=OFF -DINFER_PLAN_BENCH=OFF >/dev/null
cmake --build build-fuzz -j2 --target fuzz_gguf_reader
corpus=build-fuzz/corpus
mkdir -p "$corpus"
cp tests/data/gguf/*.gguf "$corpus/"
cd build-fuzz
./fuzz/fuzz_gguf_reader corpus -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 2>&1 | tail -n 25
