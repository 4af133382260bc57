"""An in-tree PEP 517 / PEP 660 build backend using only the standard library.

Why not setuptools: the venvs Python 3.11 creates carry setuptools 65, which cannot build
a wheel without the separate ``wheel`` package, so an offline ``pip install ./python``
would fail. This backend needs nothing (``requires = []``): pip builds the wheel, sdist or
editable wheel offline, with or without build isolation. It reads the ``[project]`` table
of pyproject.toml, so the metadata is written in one place.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
PACKAGE = "surfgym"
# What an sdist carries besides the package.
SDIST_EXTRA = ("pyproject.toml", "README.md", "_build.py", "tests")


def _project() -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _dist_name(project: dict[str, Any]) -> str:
    return f"{project['name'].replace('-', '_')}-{project['version']}"


def _metadata(project: dict[str, Any]) -> str:
    """Core metadata 2.1 (PKG-INFO / METADATA) from the ``[project]`` table."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
    ]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    lic = project.get("license")
    if isinstance(lic, dict) and "text" in lic:
        lines.append(f"License: {lic['text']}")
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    body = ""
    readme = project.get("readme")
    if isinstance(readme, str) and (ROOT / readme).is_file():
        lines.append("Description-Content-Type: text/markdown")
        body = "\n" + (ROOT / readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n" + body


def _package_files() -> list[Path]:
    pkg = ROOT / PACKAGE
    return sorted(
        p
        for p in pkg.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    )


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory: str, files: dict[str, bytes]) -> str:
    """A py3-none-any wheel of ``files`` (archive name -> bytes) plus its dist-info."""
    project = _project()
    dist = _dist_name(project)
    info = f"{dist}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = _metadata(project).encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: surfgym _build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{info}/top_level.txt"] = f"{PACKAGE}\n".encode()
    record = [_record_line(n, d) for n, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / name, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in files.items():
            zi = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
    return name


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    files = {p.relative_to(ROOT).as_posix(): p.read_bytes() for p in _package_files()}
    return _write_wheel(wheel_directory, files)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    # A .pth line puts this directory on sys.path: edits to surfgym/ apply at once.
    return _write_wheel(wheel_directory, {f"_{PACKAGE}_editable.pth": f"{ROOT}\n".encode()})


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    project = _project()
    dist = _dist_name(project)
    name = f"{dist}.tar.gz"
    paths = list(_package_files())
    for extra in SDIST_EXTRA:
        p = ROOT / extra
        if p.is_dir():
            paths += sorted(q for q in p.rglob("*") if q.is_file() and "__pycache__" not in q.parts)
        elif p.is_file():
            paths.append(p)
    with tarfile.open(Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        pkg_info = _metadata(project).encode()
        ti = tarfile.TarInfo(f"{dist}/PKG-INFO")
        ti.size, ti.mode = len(pkg_info), 0o644
        tar.addfile(ti, io.BytesIO(pkg_info))
        for p in paths:
            tar.add(p, arcname=f"{dist}/{p.relative_to(ROOT).as_posix()}", recursive=False)
    return name


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


if __name__ == "__main__":  # python _build.py DIR: build a wheel and an sdist there
    import sys

    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "dist")
    os.makedirs(out, exist_ok=True)
    print(build_wheel(out), build_sdist(out))
