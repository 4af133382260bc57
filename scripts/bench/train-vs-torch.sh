#!/usr/bin/env bash
# Training throughput: surfgym's trainer (candle) against PyTorch on the same decoder, batch
# and sequence lengths, back to back on this machine, and their ratio. Filtered behaviour
# cloning (one forward, backward and AdamW step per timed update). PyTorch comes from
# scripts/bench/setup-torch.sh (its own venv; nothing in CI needs it); surfgym from
# target/release (cargo build --release --bin surfgym), or SURFGYM_BIN.
#
# Usage: scripts/bench/train-vs-torch.sh [--steps N] [--prompt-tokens N] [--response-tokens N]
#                                        [MODEL[:BATCH] ...]
# MODEL is a directory, or a name under ${SURFGYM_DATA_DIR:-.surfgym}/models. Default:
# tiny-text:8, and smollm2-135m:2 when it was set up (scripts/setup-python.sh --smollm2).
# Threads: both use every core (candle's own default; torch.set_num_threads(nproc)).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
data="${SURFGYM_DATA_DIR:-.surfgym}"
case "$data" in /*) ;; *) data="$root/$data" ;; esac
bin="${SURFGYM_BIN:-$root/target/release/surfgym}"
steps=3 prompt=512 response=32
models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --prompt-tokens) prompt="$2"; shift 2 ;;
    --response-tokens) response="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "train-vs-torch: unknown option $1 (try --help)" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
if [ ${#models[@]} -eq 0 ]; then
  models=(tiny-text:8)
  [ -d "$data/models/smollm2-135m" ] && models+=(smollm2-135m:2)
fi
[ -x "$bin" ] || { echo "train-vs-torch: no $bin (cargo build --release --bin surfgym, or set SURFGYM_BIN)" >&2; exit 1; }
torch_py="$("$root/scripts/bench/setup-torch.sh" | tail -n 1)"
threads="$(nproc)"

rows=()
for spec in "${models[@]}"; do
  name="${spec%%:*}" batch=8
  [ "$name" != "$spec" ] && batch="${spec#*:}"
  dir="$name"
  [ -d "$dir" ] || dir="$data/models/$name"
  [ -d "$dir" ] || { echo "train-vs-torch: no model directory $name" >&2; exit 1; }
  shape=(--batch "$batch" --prompt-tokens "$prompt" --response-tokens "$response" --steps "$steps")
  echo "train-vs-torch: $(basename "$dir"), batch $batch x ($prompt + $response), $steps timed steps: surfgym..." >&2
  ours="$("$bin" bench train --json-lines --objectives fbc --models "$dir" "${shape[@]}" | tail -n 1)"
  echo "train-vs-torch: ... torch" >&2
  theirs="$("$torch_py" "$root/scripts/bench/train_torch.py" --json --model "$dir" --threads "$threads" "${shape[@]}")"
  echo "train-vs-torch: surfgym $ours" >&2
  echo "train-vs-torch: torch $theirs" >&2
  rows+=("$ours"$'\t'"$theirs")
done

table_py="$(cat <<'PY'
import json, sys
print("| model | parameters | batch x tokens | surfgym tokens/s | torch tokens/s | surfgym samples/s | torch samples/s | surfgym / torch |")
print("|---|---|---|---|---|---|---|---|")
for line in sys.stdin:
    ours, t = (json.loads(p) for p in line.rstrip("\n").split("\t"))
    r = ours["result"]
    sh = r["shape"]
    cells = [
        ours["model"],
        f"{r['parameters']:,}",
        f"{sh['batch']} x {sh['prompt'] + sh['response']}",
        f"{r['tokens_per_s']:,.0f}",
        f"{t['tokens_per_s']:,.0f}",
        f"{r['samples_per_s']:.3g}",
        f"{t['samples_per_s']:.3g}",
        f"{r['tokens_per_s'] / t['tokens_per_s']:.2f}",
    ]
    print("| " + " | ".join(cells) + " |")
print(f"(torch: {t['framework']}, {t['threads']} threads; surfgym: candle, CPU, fp32)")
PY
)"
printf '%s\n' "${rows[@]}" | "$torch_py" -c "$table_py"
