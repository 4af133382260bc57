"""Make a CUDA build of PyTorch load on a machine without the CUDA libraries.

PyPI's Linux x86_64 torch wheels are CUDA builds: their libraries name libcudart, libcublas,
libcudnn, NCCL... as dependencies, which come in several GB of nvidia-* wheels. When
PyTorch's CPU-only index cannot be reached, scripts/bench/setup-torch.sh installs that
wheel without its dependencies and this script writes empty stand-ins for the missing
libraries (every symbol torch asks for, as a function that is never called), so that
`import torch` works and the CPU code (libtorch_cpu.so, the same as in the CPU wheel) runs.
Nothing CUDA may be used with them: torch.cuda is not usable.

Usage: torch_cpu_stubs.py SITE_PACKAGES
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tempfile


def run(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def version_needs(lib: str) -> dict[str, str]:
    """Version tag -> the library file it is required from (readelf's version needs)."""
    tags: dict[str, str] = {}
    current = None
    for line in run("readelf", "-V", "--wide", lib).splitlines():
        m = re.search(r"File: (\S+)", line)
        if m:
            current = m.group(1)
            continue
        m = re.search(r"Name: (\S+)", line)
        if m and current:
            tags[m.group(1)] = current
    return tags


def missing(lib_dirs: list[str], libs: list[str]) -> dict[str, dict[str, set[str]]]:
    """Libraries ldd cannot find, with the symbols each is asked for, by version tag ("" for
    unversioned references)."""
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(lib_dirs))
    sonames: set[str] = set()
    for lib in libs:
        out = subprocess.run(["ldd", lib], capture_output=True, text=True, env=env).stdout
        sonames.update(m.group(1) for m in re.finditer(r"^\s*(\S+) => not found", out, re.M))
    wanted: dict[str, dict[str, set[str]]] = {s: {} for s in sonames}
    unversioned: set[str] = set()
    for lib in libs:
        needs = version_needs(lib)
        for line in run("nm", "-D", "--undefined-only", "--with-symbol-versions", lib).splitlines():
            parts = line.split()
            if len(parts) != 2 or parts[0] != "U":
                continue
            name, _, tag = parts[1].partition("@")
            if not tag:
                unversioned.add(name)
            elif needs.get(tag) in wanted:
                wanted[needs[tag]].setdefault(tag, set()).add(name)
    # Unversioned references (NCCL, cuFile, the driver...) may come from any of them: each
    # stand-in defines those the system libraries and torch's own do not.
    defined: set[str] = set()
    for lib in libs + [p for p in glob.glob("/lib/x86_64-linux-gnu/lib*.so.*") if "ld-linux" not in p]:
        try:
            out = run("nm", "-D", "--defined-only", lib)
        except subprocess.CalledProcessError:
            continue
        defined.update(line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip())
    extra = unversioned - defined
    for tags in wanted.values():
        taken = set().union(*tags.values()) if tags else set()
        tags[""] = extra - taken
    return wanted


def main() -> None:
    site = sys.argv[1]
    torch_lib = os.path.join(site, "torch", "lib")
    out_dir = os.path.join(site, "nvidia", "cu13", "lib")  # on torch's RPATH
    os.makedirs(out_dir, exist_ok=True)
    libs = sorted(glob.glob(os.path.join(torch_lib, "*.so"))) + glob.glob(os.path.join(site, "torch", "_C*.so"))
    want = missing([torch_lib, out_dir], libs)
    with tempfile.TemporaryDirectory() as tmp:
        for soname, tags in sorted(want.items()):
            ok = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
            tags = {t: sorted(n for n in ns if ok.fullmatch(n)) for t, ns in tags.items()}
            names = [n for ns in tags.values() for n in ns]
            c = os.path.join(tmp, "stub.c")
            with open(c, "w") as f:
                # Every call fails as "no CUDA device" (cudaErrorNoDevice and CUDA_ERROR_NO_DEVICE
                # are both 100), which is how torch's CPU paths learn there is no GPU; the
                # error-string getters return a string, as callers print it.
                for n in names:
                    if "ErrorString" in n or "ErrorName" in n:
                        f.write(f'const char *{n}(void) {{ return "no CUDA (a stub library)"; }}\n')
                    else:
                        f.write(f"long {n}(void) {{ return 100; }}\n")
            # One version node per tag torch asks for; unversioned names go in the first.
            nodes = [t for t in tags if t] or [soname]
            vs = os.path.join(tmp, "stub.map")
            with open(vs, "w") as f:
                for i, t in enumerate(nodes):
                    ns = tags.get(t, []) + (tags[""] if i == 0 else [])
                    local = " local: *;" if i == 0 else ""
                    f.write(f"{t} {{ global: {''.join(n + '; ' for n in ns)}{local} }};\n")
            target = os.path.join(out_dir, soname)
            subprocess.run(
                ["cc", "-shared", "-fPIC", "-o", target, c, f"-Wl,-soname,{soname}", f"-Wl,--version-script={vs}"],
                check=True,
            )
            print(f"torch_cpu_stubs: {soname}: {len(names)} symbols")


if __name__ == "__main__":
    main()
