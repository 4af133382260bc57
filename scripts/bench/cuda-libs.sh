# Sourced on a GPU machine: puts the folders of the CUDA 13 libraries that candle's CUDA
# backend links (runtime, cuBLAS, cuRAND, NVRTC) on LD_LIBRARY_PATH, wherever that machine
# keeps them (a CUDA install, or PyTorch's nvidia wheels), each folder once.
cuda_libs_main() {
  local libs="" n f d
  for n in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcurand.so.10 libnvrtc.so.13; do
    f="$(find /usr/local /opt /usr/lib -name "$n" 2>/dev/null | head -n 1)"
    d="$(dirname "${f:-.}")"
    [ -n "$f" ] && case ":$libs:" in *":$d:"*) ;; *) libs="$libs:$d" ;; esac
  done
  export LD_LIBRARY_PATH="${libs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
cuda_libs_main
