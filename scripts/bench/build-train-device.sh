#!/usr/bin/env bash
# Builds the `train_device` example with candle's CUDA backend on a machine without a GPU
# or a CUDA installation (the kit: scripts/bench/cuda-kit.sh), and gathers what
# scripts/bench/gpu-train.sh needs into .gpu/ (the binary and the tiny models), ready to
# travel to a GPU machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
data="${SURFGYM_DATA_DIR:-.surfgym}"
case "$data" in /*) ;; *) data="$root/$data" ;; esac
# The CUDA kit (compiler, libraries, driver stub) and the build's environment.
. "$root/scripts/bench/cuda-kit.sh"
cargo build --release -p training --features cuda --example train_device
mkdir -p "$root/.gpu/models"
cp "$CARGO_TARGET_DIR/release/examples/train_device" "$root/.gpu/train_device"
strip "$root/.gpu/train_device"
# What travels to a GPU machine is limited in size; the embedded PTX compresses well.
gzip -9f "$root/.gpu/train_device"
for m in tiny-text tiny-qwen2vl; do
  rm -rf "$root/.gpu/models/$m"
  cp -rL "$data/models/$m" "$root/.gpu/models/$m"
done
du -sh "$root/.gpu"
