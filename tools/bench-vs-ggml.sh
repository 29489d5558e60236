#!/usr/bin/env bash
# Side by side with ggml's CPU backend (issue 19): the products of a 4096 x 14336 weight matrix
# (test-backend-ops' MUL_MAT perf shape) with n = 1, 2, 4, 8 activation columns, per weight type,
# measured by ggml's test-backend-ops and by our bench_tokens on the same shape and thread count,
# interleaved type by type, ROUNDS times; prints the median time of each and the ratio
# ggml / ours (above 1: we are faster) as a Markdown table.
#   tools/bench-vs-ggml.sh GGML_DIR [ROUNDS]
# GGML_DIR is a checkout of github.com/ggml-org/ggml (or llama.cpp's ggml/ folder) that you fetched:
# nothing is downloaded here and none of its code enters this repository. Its test-backend-ops is
# built in GGML_DIR/build-infer-plan (Release, native CPU); ours in build/ (tools/setup.sh test).
# ggml's CPU backend uses every core the machine has (std::thread::hardware_concurrency()), so our
# bench runs with $(nproc) threads. Environment: TYPES (default: every type the runtime multiplies),
# TOKENS (default "1 2 4 8").
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ ! -f "$1/CMakeLists.txt" ]; then
  echo "usage: $0 GGML_DIR [ROUNDS]   (GGML_DIR: a ggml checkout, with its CMakeLists.txt)" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
ggml=$(cd "$1" && pwd)
rounds=${2:-3}
types=${TYPES:-F16 BF16 Q8_0 Q4_0 Q5_0 Q4_1 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS MXFP4}
tokens=${TOKENS:-1 2 4 8}
threads=$(nproc)
case $rounds in '' | *[!0-9]* | 0) echo "bench-vs-ggml: ROUNDS must be a positive integer" >&2; exit 2 ;; esac

gbuild="$ggml/build-infer-plan"
if [ ! -x "$gbuild/bin/test-backend-ops" ]; then
  echo "bench-vs-ggml: building ggml's test-backend-ops in $gbuild" >&2
  cmake -S "$ggml" -B "$gbuild" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_BUILD_TESTS=ON \
    -DGGML_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$gbuild" -j "$threads" --target test-backend-ops >/dev/null
fi
tbo="$gbuild/bin/test-backend-ops"
ours="$root/build/bench/bench_tokens"
if [ ! -x "$ours" ]; then
  echo "bench-vs-ggml: building our bench_tokens in $root/build" >&2
  cmake --build "$root/build" -j "$threads" --target bench_tokens >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
alternation=$(echo "$tokens" | tr ' ' '|')

for round in $(seq 1 "$rounds"); do
  for t in $types; do
    lower=$(echo "$t" | tr '[:upper:]' '[:lower:]' | sed 's/_k$/_K/')  # ggml's names: q8_0, bf16, q2_K
    echo "bench-vs-ggml: round $round/$rounds, $t" >&2
    # ggml: one SQL row per case (its CSV leaves the times out): values in single quotes, time_us
    # the 10th field, op_params (with n=) the 5th
    "$tbo" perf -o MUL_MAT -b CPU -p "type_a=$lower,type_b=f32,m=4096,n=($alternation),k=14336," --output sql \
      >"$work/ggml.sql" 2>/dev/null || true
    awk -v t="$t" '/^INSERT INTO/ {
        values = substr($0, index($0, "VALUES (") + 9); sub(/'"'"'\);$/, "", values)
        n = split(values, f, "'"'"', '"'"'")
        if (n < 10 || !match(f[5], /,n=[0-9]+,/)) next
        print t, substr(f[5], RSTART + 3, RLENGTH - 4), "ggml", f[10] }' "$work/ggml.sql" >>"$work/times.txt"
    # ours: Google Benchmark's CSV, real_time in ms
    "$ours" --cols=14336 --rows=4096 --threads="$threads" --benchmark_filter="^product/$t/tokens:($alternation)/" \
      --benchmark_format=csv 2>/dev/null |
      awk -F, -v t="$t" '/^"product\// { name = $1; gsub(/"/, "", name); split(name, p, "[:/]"); print t, p[4], "ours", $3 * 1000 }' \
        >>"$work/times.txt"
  done
done

echo
echo "ggml test-backend-ops MUL_MAT 4096 x 14336 (k = 14336) vs infer-plan bench_tokens, $threads threads, median of $rounds"
echo "rounds; ratio = ggml time / ours (above 1: infer-plan is faster)"
echo
awk -v types="$types" -v tokens="$tokens" '
  { key = $1 " " $2 " " $3; v[key, ++count[key]] = $4 }
  function median(key,   n, i, j, a, tmp) {
    n = count[key]; if (n == 0) return -1
    for (i = 1; i <= n; ++i) a[i] = v[key, i]
    for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (a[j] < a[i]) { tmp = a[i]; a[i] = a[j]; a[j] = tmp }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    nt = split(types, T, " "); nn = split(tokens, N, " ")
    header = "| type |"; rule = "|---|"
    for (j = 1; j <= nn; ++j) { header = header " n=" N[j] " |"; rule = rule "---|" }
    print header; print rule
    for (i = 1; i <= nt; ++i) {
      row = "| " T[i] " |"
      for (j = 1; j <= nn; ++j) {
        g = median(T[i] " " N[j] " ggml"); o = median(T[i] " " N[j] " ours")
        row = row (g > 0 && o > 0 ? sprintf(" %.2f (%.0f / %.0f us)", g / o, g, o) : " -") " |"
      }
      print row
    }
  }' "$work/times.txt"
