#!/usr/bin/env bash
# Builds the device check's binaries on this machine (no GPU needed: nvcc compiles for the target
# architecture here), so that a GPU lease spends none of its minutes configuring or compiling:
# infer-plan, the CUDA tests and bench_cuda_gemv, for sm_${CUDA_ARCH:-90}, with the CUDA runtime,
# libstdc++ and libgcc linked in (cuBLAS is still opened at run time from the device's toolkit;
# glibc stays shared), stripped, into DIR with cuda-tests.txt (each test's cap) and BUNDLE.txt
# (commit, compiler, the newest glibc symbol version the binaries need). Then it checks them here:
# each links only glibc, infer-plan prints --help, every CUDA test and the bench skip (exit 77)
# without a device; and it prints what a device call would carry (tree, third_party, bundle) against
# the 64 MiB a call takes.
#   tools/device-bundle.sh [DIR]      DIR defaults to build-device-bundle/bundle (ignored by git)
# On the GPU machine: tools/device-check.sh --prebuilt DIR --archive --quick OUT (README, GPU
# verification). Environment: CUDA_ARCH (default 90), DEVICE_BUNDLE_BUILD (build folder, default
# build-device-bundle), DEVICE_BUNDLE_JOBS (default 2).
set -euo pipefail
case ${1:-} in -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; -*) echo "usage: $0 [DIR]" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${DEVICE_BUNDLE_BUILD:-build-device-bundle}
dir=${1:-$build/bundle}
arch=${CUDA_ARCH:-90}
jobs=${DEVICE_BUNDLE_JOBS:-2}
limit_mib=64
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "device-bundle: nvcc not found (PATH, CUDACXX, /usr/local/cuda/bin)" >&2; exit 2; }

# The vendored headers: fmt header-only, so that no libfmt.so is needed there (and the device's
# fallback build needs them anyway).
[ -d third_party/include/CLI ] || tools/vendor-deps.sh
pcre=()  # the tokenizer's PCRE2 linked in, where Debian's static library is present
for a in /usr/lib/x86_64-linux-gnu/libpcre2-8.a /usr/lib/libpcre2-8.a; do
  [ -f "$a" ] && { pcre=("-DINFER_PLAN_PCRE2_LIBRARY=$a"); break; }
done
echo "device-bundle: configuring $build (sm_$arch, static CUDA runtime and libstdc++)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" \
  -DINFER_PLAN_VENDORED_DEPS=ON -DINFER_PLAN_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DINFER_PLAN_CUDART_STATIC=ON -DINFER_PLAN_TESTS=ON -DINFER_PLAN_BENCH=ON \
  "-DCMAKE_EXE_LINKER_FLAGS=-static-libstdc++ -static-libgcc -s" "${pcre[@]}" >/dev/null
tests=$(cut -d' ' -f1 "$build/cuda-tests.txt" | tr '\n' ' ')
[ -n "$tests" ] || { echo "device-bundle: $build/cuda-tests.txt lists no CUDA tests (is the CUDA build on?)" >&2; exit 1; }
echo "device-bundle: building infer-plan, bench_cuda_gemv and $tests"
# shellcheck disable=SC2086  # one target per word
cmake --build "$build" -j "$jobs" --target infer-plan bench_cuda_gemv $tests

rm -rf "$dir"
mkdir -p "$dir"
cp "$build/infer-plan" "$build/bench/bench_cuda_gemv" "$dir/"
for t in $tests; do cp "$build/tests/$t" "$dir/"; done
cp "$build/cuda-tests.txt" "$dir/"

# --- checks on this machine ------------------------------------------------------------------------
problems=0
glibc_max=""
for f in "$dir"/*; do
  [ -x "$f" ] && [ ! -d "$f" ] || continue
  # anything but glibc's own libraries would be missing on the device machine
  other=$(ldd "$f" | awk '{print $1}' | grep -v -E '^(linux-vdso\.so|/lib64/ld-linux-x86-64\.so|lib(c|m|dl|pthread|rt)\.so)' || true)
  if [ -n "$other" ]; then
    echo "device-bundle: $(basename "$f") links $(echo "$other" | tr '\n' ' ')(only glibc may stay shared)" >&2
    problems=$((problems + 1))
  fi
  v=$(objdump -T "$f" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
  glibc_max=$(printf '%s\n%s\n' "$glibc_max" "$v" | sort -V | tail -n 1)
done
if ! "$dir/infer-plan" --help >/dev/null; then
  echo "device-bundle: $dir/infer-plan --help failed" >&2
  problems=$((problems + 1))
fi
device_here=0
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && device_here=1
while read -r name cap; do
  rc=0
  timeout 60 "$dir/$name" >"$build/bundle-check-$name.log" 2>&1 || rc=$?  # (opening cuBLAS from a cold disk takes seconds)
  if [ $device_here -eq 0 ] && [ $rc -ne 77 ]; then
    echo "device-bundle: $name exited $rc without a device (expected 77, a skip); log: $build/bundle-check-$name.log" >&2
    problems=$((problems + 1))
  elif [ $device_here -eq 1 ] && [ $rc -ne 0 ]; then
    echo "device-bundle: $name exited $rc on this machine's GPU; log: $build/bundle-check-$name.log" >&2
    problems=$((problems + 1))
  fi
done <"$build/cuda-tests.txt"
rc=0
timeout 30 "$dir/bench_cuda_gemv" 0.01 >"$build/bundle-check-bench.log" 2>&1 || rc=$?
if [ $device_here -eq 0 ] && [ $rc -ne 77 ]; then
  echo "device-bundle: bench_cuda_gemv exited $rc without a device (expected 77)" >&2
  problems=$((problems + 1))
fi

{
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $("$nvcc" --version | tail -n 1), sm_$arch"
  echo "needs glibc >= ${glibc_max#GLIBC_} and an NVIDIA driver for CUDA $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') or newer; cuBLAS from the device's toolkit"
} >"$dir/BUNDLE.txt"

mib() { du -sbc "$@" 2>/dev/null | tail -n 1 | awk '{printf "%.1f", $1 / 1048576}'; }
bundle_mib=$(mib "$dir")
tree_mib=$(git ls-files -z | xargs -0 du -bc 2>/dev/null | awk '/total$/ {s += $1} END {printf "%.1f", s / 1048576}')
tp_mib=$(mib third_party)
total=$(echo "$bundle_mib $tree_mib $tp_mib" | awk '{printf "%.1f", $1 + $2 + $3}')
sed 's/^/device-bundle: /' "$dir/BUNDLE.txt"
echo "device-bundle: $dir holds $(find "$dir" -type f | wc -l) files, ${bundle_mib} MiB; a call carries the tree ${tree_mib} MiB" \
  "+ third_party ${tp_mib} MiB + the bundle = ${total} MiB of ${limit_mib}"
if awk -v t="$total" -v l=$limit_mib 'BEGIN {exit !(t >= l)}'; then
  echo "device-bundle: over the ${limit_mib} MiB a device call carries" >&2
  problems=$((problems + 1))
fi
if [ $problems -gt 0 ]; then
  echo "device-bundle: $problems problem(s)" >&2
  exit 1
fi
echo "device-bundle: ok; carry ${dir} and third_party, run tools/device-check.sh --prebuilt $dir --archive --quick OUT"
