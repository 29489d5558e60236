#!/usr/bin/env bash
# tools/device-check.sh without a GPU: its plans (--dry-run) and a whole run whose steps are faked
# by shell scripts standing for the bundle's binaries and for nvidia-smi.
#   - --dry-run: with --prebuilt, no configure or build step and --quick's caps within 240 s; without
#     it, infer-plan built first and alone; every mode's caps within its budget; a bad flag exits 2.
#   - --archive: while the run goes on, OUT holds at most 8 files, none deeper than 2 folders, and
#     the tarball holds every step finished so far (each fake looks when it is called); a failing, a
#     skipping (77) and a hung test do not stop the steps after them; a run killed mid-step leaves a
#     complete tarball of what came before.
#   tests/tools/test_device_check.sh WORK_DIR      (run from the repository root)
set -euo pipefail
root=$(pwd)
dc="$root/tools/device-check.sh"
work=$1
rm -rf "$work"
mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
expect() { "$@" || fail "$*"; }

# --- the plans ------------------------------------------------------------------------------------
"$dc" --dry-run --quick --prebuilt "$work" "$work/dq" >"$work/dq.txt"
expect grep -q '^bundle-start ' "$work/dq.txt"
grep -E '^(configure|build)' "$work/dq.txt" && fail "--prebuilt lists a configure or build step"
sum=$(sed -n 's/.*caps sum to \([0-9]*\) s of the \([0-9]*\) s budget.*/\1 \2/p' "$work/dq.txt")
read -r caps budget <<<"$sum"
[ "$caps" -le 240 ] && [ "$budget" -le 240 ] || fail "--prebuilt --quick: caps $caps s, budget $budget s (want <= 240)"
"$dc" --dry-run --quick "$work/dqb" >"$work/dqb.txt"
steps=$(grep -E '^[a-z_0-9-]+ +cap' "$work/dqb.txt" | awk '{print $1}' | head -n 3 | tr '\n' ' ')
[ "$steps" = "configure build-infer-plan build-cuda-tests " ] || fail "the build's first steps: '$steps'"
expect grep -q -- '--target infer-plan$' "$work/dqb.txt"
for mode in "--quick" "" "--prebuilt $work"; do
  # shellcheck disable=SC2086  # the mode's words
  "$dc" --dry-run $mode "$work/dm" >/dev/null || fail "--dry-run $mode: caps over the budget"
done
rc=0; "$dc" --bogus "$work/b" 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "--bogus exits $rc, not 2"
rc=0; "$dc" --prebuilt "$work/nowhere" "$work/b" 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "--prebuilt of a missing folder exits $rc, not 2"

# --- a faked run ----------------------------------------------------------------------------------
fake=$work/bundle
bin=$work/bin
rec=$work/record
mkdir -p "$fake" "$bin" "$rec"
# Every fake first records what OUT holds at that moment (a step is running, the ones before it are done).
cat >"$work/look.sh" <<'EOF'
n=$(($(ls "$REC" | grep -c '^look-') + 1))
{ echo "call $n $SELF"; find "$DEST" -type f | sed "s|^$DEST/||"; } >"$REC/look-$n.txt"
if [ -f "$DEST/device-check.tar.gz" ]; then tar -tzf "$DEST/device-check.tar.gz" >"$REC/tar-$n.txt"; else : >"$REC/tar-$n.txt"; fi
EOF
cat >"$fake/infer-plan" <<'EOF'
#!/usr/bin/env bash
SELF=infer-plan; . "$LOOK"
case $1 in
  --version) echo "infer-plan fake" ;;
  probe) shift; while [ $# -gt 0 ]; do [ "$1" = --out ] && echo '{"name": "probed"}' >"$2"; shift; done; echo "probe: fake" ;;
  report) shift; while [ $# -gt 0 ]; do
            case $1 in --out) echo "| row |" >"$2" ;; --svg) mkdir -p "$2" && echo "<svg/>" >"$2/ttft.svg" ;; esac; shift
          done
          printf '{\n  "holds": true\n}\n' ;;
  *) exit 3 ;;
esac
EOF
for t in pass fail skip hang pass_after; do
  cat >"$fake/test_cuda_$t" <<EOF
#!/usr/bin/env bash
SELF=test_cuda_$t; . "\$LOOK"
case $t in pass|pass_after) exit 0 ;; fail) echo "mismatch at 3"; exit 1 ;; skip) exit 77 ;; hang) touch "\$REC/hanging"; sleep 30 ;; esac
EOF
done
printf 'test_cuda_pass 5\ntest_cuda_fail 5\ntest_cuda_skip 5\ntest_cuda_hang 1\ntest_cuda_pass_after 5\n' >"$fake/cuda-tests.txt"
printf '#!/usr/bin/env bash\necho "Fake H200, 143771 MiB, 580.0"\n' >"$bin/nvidia-smi"
chmod +x "$fake"/* "$bin/nvidia-smi"

dest=$work/out
rc=0
PATH="$bin:$PATH" TMPDIR=$work LOOK=$work/look.sh REC=$rec DEST=$dest \
  "$dc" --quick --prebuilt "$fake" --archive "$dest" >"$work/run.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "the faked run exits $rc, not 1 (three tests did not pass)"
calls=$(ls "$rec" | grep -c '^look-')
# bundle-start, 5 tests, probe, 4 reports
[ "$calls" -eq 11 ] || fail "$calls steps ran, not 11: a failure stopped the ones after it"
for n in $(seq 1 "$calls"); do
  files=$(($(wc -l <"$rec/look-$n.txt") - 1))
  [ "$files" -le 8 ] || fail "call $n: OUT holds $files files"
  tail -n +2 "$rec/look-$n.txt" | grep -q '/.*/' && fail "call $n: OUT has a file more than 2 folders down"
  logs=$(grep -c '^device-check/logs/.*\.log$' "$rec/tar-$n.txt" || true)
  [ "$logs" -eq $((n - 1)) ] || fail "call $n ($(head -n 1 "$rec/look-$n.txt")): the tarball holds $logs step logs, not $((n - 1))"
done
[ "$(ls "$dest" | tr '\n' ' ')" = "device-check.tar.gz summary.txt " ] || fail "OUT at the end: $(ls "$dest" | tr '\n' ' ')"
tar -tzf "$dest/device-check.tar.gz" >"$work/final.txt"
for f in summary.txt probe-cuda.json probe-cuda.txt nvidia-smi.txt logs/test_cuda_hang.log report-qwen3-8b-Q2_K-kv-bf16.md \
         report-qwen3-8b-Q2_K-kv-bf16.json svg-qwen3-8b-BF16-kv-bf16/ttft.svg; do
  grep -qx "device-check/$f" "$work/final.txt" || fail "the final tarball lacks $f"
done
expect grep -q 'FAILED   test_cuda_fail: exit 1' "$dest/summary.txt"
expect grep -q 'test_cuda_skip: exit 77 is a skip' "$dest/summary.txt"
expect grep -q 'TIMEOUT  test_cuda_hang' "$dest/summary.txt"
expect grep -q 'ok       test_cuda_pass_after' "$dest/summary.txt"
expect grep -q '"holds": true' "$dest/summary.txt"

# Killed mid-step (as a device call at its limit): the tarball left is whole and holds what came before.
printf 'test_cuda_pass 5\ntest_cuda_hang 20\n' >"$fake/cuda-tests.txt"
rm -rf "$rec" "$work/out2" && mkdir -p "$rec"
PATH="$bin:$PATH" TMPDIR=$work LOOK=$work/look.sh REC=$rec DEST=$work/out2 \
  setsid "$dc" --quick --prebuilt "$fake" --archive "$work/out2" >"$work/run2.txt" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -f "$rec/hanging" ] && break; sleep 0.1; done
kill -KILL -- -"$pid" 2>/dev/null || true
{ wait "$pid" || true; } 2>/dev/null
if tar -tzf "$work/out2/device-check.tar.gz" >"$work/killed.txt" 2>/dev/null; then
  for f in logs/bundle-start.log logs/test_cuda_pass.log summary.txt; do
    grep -qx "device-check/$f" "$work/killed.txt" || fail "killed mid-step: the tarball lacks $f"
  done
else
  fail "killed mid-step: no whole tarball in OUT"
fi
ls "$work/out2" | grep -v -E '^(device-check\.tar\.gz|summary\.txt)(\.part)?$' && fail "killed mid-step: OUT holds more"

[ $fails -eq 0 ] || { echo "test_device_check: $fails failure(s); the run's output:" >&2; cat "$work/run.txt" >&2; exit 1; }
echo "test_device_check: ok ($calls faked steps)"
