#!/usr/bin/env bash
# Installs PyTorch (CPU) into its own virtual environment for the training comparison
# (scripts/bench/train-vs-torch.sh): ${SURFGYM_DATA_DIR:-.surfgym}/venv-torch. Nothing in the
# test suite or CI uses it. Prints the venv's python as its last line.
#
# With SURFGYM_TORCH_INDEX set (a pip index of CPU-only torch wheels), torch comes from there.
# Otherwise from PyPI, whose Linux x86_64 wheels are CUDA builds that pull several GB of
# nvidia-* wheels: the wheel is installed without them and scripts/bench/torch_cpu_stubs.py
# writes empty stand-ins for the CUDA libraries, so `import torch` works and the CPU code
# (libtorch_cpu, the same as in the CPU-only wheel) runs; torch.cuda is then unusable.
# Idempotent: does nothing when the venv's torch already imports.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
data="${SURFGYM_DATA_DIR:-.surfgym}"
case "$data" in /*) ;; *) data="$root/$data" ;; esac
venv="$data/venv-torch"
py="$venv/bin/python"
log() { echo "setup-torch: $*" >&2; }

if [ -x "$py" ] && "$py" -c 'import torch' 2>/dev/null; then
  log "torch $("$py" -c 'import torch; print(torch.__version__)') already in $venv"
  echo "$py"
  exit 0
fi
[ -x "$py" ] || "${SURFGYM_PYTHON:-python3}" -m venv "$venv"
"$py" -m pip install --quiet --upgrade pip >&2
if [ -n "${SURFGYM_TORCH_INDEX:-}" ]; then
  log "pip install torch from $SURFGYM_TORCH_INDEX"
  "$py" -m pip install --quiet --no-cache-dir torch --index-url "$SURFGYM_TORCH_INDEX" >&2
else
  log "pip install torch (PyPI's CUDA build, without its nvidia-* dependencies)"
  "$py" -m pip install --quiet --no-cache-dir --no-deps torch >&2
  "$py" -m pip install --quiet filelock typing-extensions sympy networkx jinja2 fsspec numpy 'setuptools>=77' >&2
  site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  "$py" "$root/scripts/bench/torch_cpu_stubs.py" "$site" >&2
fi
"$py" -c 'import torch; x = torch.ones(4, 4, requires_grad=True); (x @ x).sum().backward()' >&2
log "torch $("$py" -c 'import torch; print(torch.__version__)') in $venv"
echo "$py"
