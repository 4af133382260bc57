# Sourced, not run: puts CUDA 13's compiler and libraries on this machine without a CUDA
# installation or a GPU, and exports what a build with candle's CUDA backend needs
# (PATH, CUDA_ROOT, CUDA_COMPUTE_CAP, RUSTFLAGS). Used by build-train-device.sh and, for a
# whole bundle, `. scripts/bench/cuda-kit.sh && scripts/bundle.sh --features cuda,train-cuda`.
#
# The compiler, headers and libraries come from NVIDIA's PyPI wheels (pip download; needs
# network), unpacked under ${SURFGYM_DATA_DIR:-.surfgym}/cuda. The driver library
# (libcuda.so.1) is only on a GPU machine: the link takes a stub that exports the names
# cudarc calls, and at run time the dynamic loader binds them to the real driver.
# CUDA_COMPUTE_CAP (default 90, Hopper) picks the kernels' target.
cuda_kit_main() {
  local root data cuda_root kit stub cudarc f l w
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
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
      "nvidia-cuda-nvrtc==13.0.*" "nvidia-curand==10.4.*" || return 1
    for w in "$cuda_root"/whl/*.whl; do python3 -m zipfile -e "$w" "$cuda_root/x" || return 1; done
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
    (cd "$root" && cargo fetch -q) || return 1
    cudarc="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.* | tail -n 1)"
  fi
  grep -ohE '^ +fn cu[A-Za-z0-9_]+\(' "$cudarc/src/driver/sys/mod.rs" | sed 's/ *fn //; s/(//' | sort -u |
    awk '{print "void " $1 "(void) {}"}' >"$stub/stub.c"
  cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$stub/libcuda.so" "$stub/stub.c" || return 1

  export PATH="$kit/bin:$PATH" CUDA_PATH="$kit" CUDA_ROOT="$kit" CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"
  export RUSTFLAGS="-L $kit/lib -L $stub"
  # Its own target directory: other RUSTFLAGS would rebuild every crate of the usual one.
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cuda_root/target}"
}
cuda_kit_main || { echo "cuda-kit: failed (see above)" >&2; return 1 2>/dev/null || exit 1; }
