#!/usr/bin/env bash
# Overlapped vs synchronous training runs on a GPU machine: the same run twice, one after
# the other, differing only in `overlap` (docs/benchmarks/training.md has the figures).
# The policies roll out on ONNX Runtime (CPU cores, `POLICY_DEVICE=cuda` for the GPU where
# the bundle carries onnxruntime-gpu); the built-in trainer updates on the GPU (candle's
# CUDA backend). Prints the comparison (Markdown) and leaves each run's
# `surfgym train show --json` and log in $OUT.
#
#   here:  . scripts/bench/cuda-kit.sh && SURFGYM_DATA_DIR=DIR scripts/bundle.sh \
#            --features cuda,train-cuda --split 45      (DIR/models: the tiny models and
#            smollm2-135m-like: SmolLM2's config and tokenizer files, no weights)
#   there: cat parts | tar -xJ; scripts/bench/gpu-overlap.sh BUNDLE_DIR
#
# The GPU machine has no network: the model is SmolLM2-135M's shape, tokenizer and chat
# template with random weights (scripts/bench/random_llama.py --like), generated there.
# Wall time depends on shapes, not on values; a random policy still succeeds at times on
# these tasks, so GRPO keeps samples and every update trains.
#
# Environment: MODEL (a model directory instead of the random SmolLM2), TRAIN_DEVICE
# (cuda), POLICY_DEVICE (cpu), POLICY_THREADS (8), ITERATIONS (3), RUN_LIMIT (seconds per
# run, 240), OUT (results folder).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bundle="$(cd "${1:?usage: gpu-overlap.sh BUNDLE_DIR}" && pwd)"
out="${OUT:-/tmp/gpu-overlap}"
mkdir -p "$out"
say() { echo "gpu-overlap: $*" >&2; }

. "$root/scripts/bench/gpu-machine.sh"
gpu_machine gpu-overlap
model="${MODEL:-}"
if [ -z "$model" ]; then
  model="$work/smollm2-135m-random"
  python3 "$root/scripts/bench/random_llama.py" --shape smollm2-135m --out "$model" \
    --like "$bundle/data/models/smollm2-135m-like" || exit 1
fi
gpu_database || exit 1

config() { # NAME OVERLAP_JSON
  python3 - "$@" <<PY
import json, sys
cfg = {
    "name": "overlap on a GPU machine: " + sys.argv[1],
    "model": "$model",
    "train": {"ids": ["miniwob.click-dialog", "miniwob.focus-text"]},
    "held_out": "seeds",
    "iterations": int("${ITERATIONS:-3}"),
    "rollouts_per_task": 16,
    "curriculum": {"kind": "fixed", "horizon": 1},
    "eval_horizon": 1,
    "eval_rollouts": 8,
    "objective": "grpo",
    "grpo_k": 1,
    "lr": 0.0003,
    "epochs": 2,
    "micro_batch": 8,
    "policy": {"constrained": "action", "max_new_tokens": 16},
    "seed": 3,
    "devices": {"policy": "${POLICY_DEVICE:-cpu}", "policy_threads": int("${POLICY_THREADS:-8}"),
                "train": "${TRAIN_DEVICE:-cuda}", "precision": "bf16"},
}
if sys.argv[2] != "null":
    cfg["overlap"] = json.loads(sys.argv[2])
print(json.dumps(cfg, indent=1))
PY
}

args=()
for v in "synchronous:null" "overlapped:{\"max_staleness\": 1}"; do
  name="${v%%:*}"
  config "$name" "${v#*:}" >"$out/$name-config.json"
  say "run $name"
  start=$(date +%s)
  timeout "${RUN_LIMIT:-240}" "$bundle/surfgym" train run "$out/$name-config.json" --sites-port 0 \
    >"$out/$name.log" 2>&1
  say "run $name: exit $? after $(( $(date +%s) - start )) s"
  id="$(sed -n 's/^training run \([0-9a-f-]\{36\}\).*/\1/p' "$out/$name.log" | head -n 1)"
  [ -n "$id" ] || { tail -n 20 "$out/$name.log"; continue; }
  "$bundle/surfgym" train show --json "$id" >"$out/$name.json" && args+=("$name=$out/$name.json")
done
[ ${#args[@]} -gt 0 ] && python3 "$root/scripts/bench/overlap_summary.py" "${args[@]}" | tee "$out/summary.md"
