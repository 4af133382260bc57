#!/usr/bin/env bash
# Builds the `train_device` example with candle's CUDA backend on a machine without a GPU
# or a CUDA installation, and gathers what scripts/bench/gpu-train.sh needs into .gpu/
# (the binary and the tiny models), ready to travel to a GPU machine.
#
# CUDA 13's compiler, headers and libraries come from NVIDIA's PyPI wheels (pip download;
# needs network), unpacked under ${SURFGYM_DATA_DIR:-.surfgym}/cuda. The driver library
# (libcuda.so.1) is only on a GPU machine: the link takes a stub that exports the names
# cudarc calls, and at run time the dynamic loader binds them to the real driver.
# CUDA_COMPUTE_CAP (default 90, Hopper) picks the kernels' target.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
data="${SURFGYM_DATA_DIR:-.surfgym}"
case "$data" in /*) ;; *) data="$root/$data" ;; esac
cuda_root="$data/cuda"
kit="$cuda_root/x/nvidia/cu13"
if [ ! -x "$kit/bin/nvcc" ] || [ ! -x "$kit/nvvm/bin/cicc" ]; then
  mkdir -p "$cuda_root/whl" "$cuda_root/x"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 \
    -d "$cuda_root/whl" "nvidia-cuda-nvcc==13.0.*" "nvidia-nvvm==13.0.*" "nvidia-cuda-runtime==13.0.*" \
    "nvidia-cuda-crt==13.0.*" "nvidia-cuda-cccl==13.0.*" "nvidia-cublas==13.0.*" \
    "nvidia-cuda-nvrtc==13.0.*" "nvidia-curand==10.4.*"
  for w in "$cuda_root"/whl/*.whl; do python3 -m zipfile -e "$w" "$cuda_root/x"; done
  chmod +x "$kit"/bin/* "$kit"/nvvm/bin/*
fi
for l in cublas cublasLt curand nvrtc cudart; do
  f="$(cd "$kit/lib" && ls lib$l.so.* | head -n 1)"
  ln -sf "$f" "$kit/lib/lib$l.so"
done

# The driver stub: every cu* function cudarc declares.
stub="$cuda_root/stub"
mkdir -p "$stub"
cudarc="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.* 2>/dev/null | tail -n 1)"
if [ -z "$cudarc" ]; then
  (cd "$root" && cargo fetch -q) && cudarc="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.* | tail -n 1)"
fi
grep -ohE '^ +fn cu[A-Za-z0-9_]+\(' "$cudarc/src/driver/sys/mod.rs" | sed 's/ *fn //; s/(//' | sort -u |
  awk '{print "void " $1 "(void) {}"}' >"$stub/stub.c"
cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$stub/libcuda.so" "$stub/stub.c"

export PATH="$kit/bin:$PATH" CUDA_PATH="$kit" CUDA_ROOT="$kit" CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cuda_root/target}"
export RUSTFLAGS="-L $kit/lib -L $stub"
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
