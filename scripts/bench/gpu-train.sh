#!/usr/bin/env bash
# The trainer on a GPU machine, in one sitting: agreement with the CPU in f32 (f32 and bf16),
# then training throughput on the GPU (f32 and bf16) and on that machine's CPU, beside
# PyTorch on the same GPU and decoder. Prints one JSON line per result (also to
# $OUT/results.jsonl when OUT is set).
#
# The GPU machine has no Rust toolchain and no network, so the trainer travels as the
# `train_device` example (it runs training::bench::run, what `surfgym bench train` runs):
#   scripts/bench/build-train-device.sh         # here: a release build with the CUDA backend
#   scripts/bench/gpu-train.sh                  # there, from the repository root
# SmolLM2-135M cannot travel either: scripts/bench/random_llama.py writes a decoder of its
# shape with random weights there (the figures depend on shapes, not values).
#
# Environment: TRAIN_DEVICE_BIN (default .gpu/train_device), GPU_MODELS (default
# .gpu/models, holding tiny-text and tiny-qwen2vl), OUT (results folder).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${TRAIN_DEVICE_BIN:-$root/.gpu/train_device}"
# The binary travels gzipped (its embedded PTX text shrinks to a fifth).
if [ ! -x "$bin" ] && [ -f "$bin.gz" ]; then
  gzip -dc "$bin.gz" >/tmp/train_device && chmod +x /tmp/train_device && bin=/tmp/train_device
fi
models="${GPU_MODELS:-$root/.gpu/models}"
out="${OUT:-/tmp/gpu-train}"
mkdir -p "$out"
results="$out/results.jsonl"
: >"$results"

# candle links cuBLAS, cuRAND and NVRTC of CUDA 13: take them where the machine has them.
. "$root/scripts/bench/cuda-libs.sh"
echo "gpu-train: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
nproc
if ldd "$bin" | grep "not found"; then echo "gpu-train: missing libraries" >&2; exit 1; fi

smol=/tmp/models/smollm2-135m-random
python3 "$root/scripts/bench/random_llama.py" --shape smollm2-135m --out "$smol" || exit 1

run() {
  echo "+ $*" >&2
  local line
  line="$(timeout 300 "$@")" || { echo "gpu-train: failed: $*" >&2; return 1; }
  echo "$line" | tee -a "$results"
}

# 1. Agreement with the CPU in f32 (log-probabilities, loss, one update).
for m in "$models/tiny-text" "$models/tiny-qwen2vl"; do
  for p in f32 bf16; do
    run "$bin" cuda "$m" check --precision "$p" --batch 4 --prompt 48 --response 8
  done
done
for p in f32 bf16; do
  run "$bin" cuda "$smol" check --precision "$p" --batch 2 --prompt 128 --response 16
done

# 2. Throughput: 512 prompt + 32 response tokens per sample.
shape=(--prompt 512 --response 32)
for o in fbc grpo; do
  run "$bin" cpu "$models/tiny-text" bench --objective "$o" --precision f32 --batch 8 "${shape[@]}" --steps 3
  for p in f32 bf16; do
    run "$bin" cuda "$models/tiny-text" bench --objective "$o" --precision "$p" --batch 8 "${shape[@]}" --steps 5
  done
done
run "$bin" cpu "$smol" bench --objective fbc --precision f32 --batch 2 "${shape[@]}" --steps 2
for b in 2 8; do
  run "$bin" cuda "$smol" bench --objective fbc --precision f32 --batch "$b" "${shape[@]}" --steps 3
done
for b in 2 8; do
  run "$bin" cuda "$smol" bench --objective fbc --precision bf16 --batch "$b" "${shape[@]}" --steps 3
done
# One update on a realistic batch: 32 rollouts' steps, one optimiser step. At 32 x 544
# tokens in one pass the attention intermediates kept for the backward pass do not fit
# in 80 GB (the softmax is spelled out from primitives on the GPU), so 4 passes of 8.
for o in fbc grpo; do
  run "$bin" cuda "$smol" bench --objective "$o" --precision bf16 --batch 32 --micro-batch 8 "${shape[@]}" --steps 3
done

# 3. PyTorch on the same machine, decoder and shapes (behaviour cloning).
tshape=(--prompt-tokens 512 --response-tokens 32)
for d in f32 bf16; do
  for b in 8 32; do
    run python3 "$root/scripts/bench/train_torch.py" --json --model "$smol" --device cuda --dtype "$d" --batch "$b" "${tshape[@]}" --steps 3
  done
done
run python3 "$root/scripts/bench/train_torch.py" --json --model "$smol" --device cpu --threads "$(nproc)" --batch 2 "${tshape[@]}" --steps 2
run python3 "$root/scripts/bench/train_torch.py" --json --model "$models/tiny-text" --device cuda --dtype f32 --batch 8 "${tshape[@]}" --steps 5
echo "gpu-train: done"
