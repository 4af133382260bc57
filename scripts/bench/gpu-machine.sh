# Sourced by the GPU-machine benchmarks (gpu-overlap.sh, gpu-curriculum.sh) once they have
# set `root` (the repository), `bundle` (scripts/bundle.sh's output) and `say`.
#
#   gpu_machine NAME   the CUDA libraries on LD_LIBRARY_PATH, what the machine is, the
#                      `postgres` user the embedded database runs as (when root), and a
#                      fresh work folder `work` ($WORK, else /tmp/NAME-work; mode 755,
#                      since that user must read it) holding SURFGYM_DATA_DIR
#   gpu_database       the bundle's database started (DATABASE_URL exported), stopped on exit
gpu_machine() {
  . "$root/scripts/bench/cuda-libs.sh"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || say "no nvidia-smi"
  say "$(nproc) cores; LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then useradd --system postgres; fi
  work="${WORK:-/tmp/$1-work}"
  rm -rf "$work" && mkdir -p "$work" && chmod 755 "$work"
  export SURFGYM_DATA_DIR="$work/data"
  mkdir -p "$SURFGYM_DATA_DIR"
}

gpu_database() {
  "$bundle/surfgym" db start >"$work/db.txt" 2>&1 || { cat "$work/db.txt"; return 1; }
  export "$(grep '^DATABASE_URL=' "$work/db.txt")"
  trap '"$bundle/surfgym" db stop >/dev/null 2>&1' EXIT
}
