#!/usr/bin/env bash
# The planner's figures beside a device check, made here after the lease (no GPU needed): Qwen3-8B's
# roofline (each weight type x KV type), speculative decoding and offload, for the H200's datasheet
# profile and, with --probe, for the profile the device check measured (probe-cuda.json, in the
# archive tools/device-check.sh --archive brings back). One JSON file per question in OUT_DIR.
#   tools/device-planner.sh [--probe PROBE_JSON] OUT_DIR
# Environment: INFER_PLAN (the binary, default build/infer-plan).
set -euo pipefail

probe=""
while [ $# -gt 0 ]; do
  case $1 in
    --probe)
      [ $# -ge 2 ] || { echo "device-planner: --probe needs a profile (probe-cuda.json)" >&2; exit 2; }
      probe=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "device-planner: unknown option '$1' (expected --probe PROBE_JSON)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -ne 1 ]; then
  echo "usage: $0 [--probe PROBE_JSON] OUT_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
ip=${INFER_PLAN:-$root/build/infer-plan}
[ -x "$ip" ] || { echo "device-planner: $ip is not built (tools/setup.sh run, or set INFER_PLAN)" >&2; exit 2; }
[ -z "$probe" ] || [ -f "$probe" ] || { echo "device-planner: --probe $probe: no such file" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)

figures() {  # HW TAG
  local hw=$1 tag=$2 w kv
  for w in BF16 Q8_0 Q4_K_M Q2_K; do
    for kv in bf16 q8_0 q4_0; do
      "$ip" roofline --model qwen3-8b --hw "$hw" --weights "$w" --kv "$kv" --batch 1 --json \
        >"$out/roofline-$tag-qwen3-8b-$w-kv-$kv.json"
    done
    "$ip" spec --model qwen3-8b --hw "$hw" --weights "$w" --draft-layers 4 --accept 0.8 --json \
      >"$out/spec-$tag-qwen3-8b-$w.json"
    "$ip" offload --model qwen3-8b --hw "$hw" --weights "$w" --json >"$out/offload-$tag-qwen3-8b-$w.json"
  done
}
figures h200 h200
[ -n "$probe" ] && figures "$probe" probed
echo "device-planner: $(find "$out" -name '*.json' | wc -l) files in $out"
