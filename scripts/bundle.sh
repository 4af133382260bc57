#!/usr/bin/env bash
# Packs surfgym with what it runs on into one relocatable directory, for machines that have
# no network and no package manager to use: cluster nodes running `surfgym worker`, a GPU box
# lent for an hour. The bundle carries the surfgym binary, this machine's Chromium and
# PostgreSQL server, every shared library they load that is not part of glibc, fonts,
# MiniWoB++'s pages, the generated models and ONNX Runtime. Nothing is downloaded.
#
#   scripts/bundle.sh [--out DIR] [--debug] [--no-build] [--features F] [--ort-dylib PATH]
#                     [--no-postgres] [--archive] [--compress xz|zstd|gzip] [--split MB]
#
#   --out DIR        where to write the bundle (default target/bundle; replaced if present)
#   --debug          bundle target/debug/surfgym instead of a release build
#   --no-build       use the binary already built
#   --features F     cargo features of the build (e.g. cuda)
#   --ort-dylib P    the libonnxruntime.so to carry (default: $ORT_DYLIB_PATH, else the venv's)
#   --no-postgres    leave the database server out (workers that reach a remote one)
#   --archive        also write DIR.tar.xz (xz is on every Debian and Ubuntu install; zstd
#                    is not always: pick it with --compress zstd for DIR.tar.zst)
#   --split MB       and cut the archive into parts of MB megabytes (DIR.tar.xz.part-aa, ...)
#
# On the target: `DIR/surfgym ...` runs with the bundle's environment (see DIR/env.sh).
# Needs there: Linux on the same architecture with glibc at least as new as this machine's.
# As root, the embedded database runs as a `postgres` user that must exist
# (`useradd --system postgres`); PostgreSQL reads time zones from /usr/share/zoneinfo.
# Environment: SURFGYM_DATA_DIR (models and MiniWoB++ taken from there; default .surfgym),
# SURFGYM_CHROMIUM (the Chromium to carry; default Debian's /usr/lib/chromium), PG_BIN_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/bundle profile=release build=1 features="" ort="${ORT_DYLIB_PATH:-}" postgres=1
archive=0 split="" compress=xz
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --debug) profile=debug; shift ;;
    --no-build) build=0; shift ;;
    --features) features="$2"; shift 2 ;;
    --ort-dylib) ort="$2"; shift 2 ;;
    --no-postgres) postgres=0; shift ;;
    --archive) archive=1; shift ;;
    --split) archive=1; split="$2"; shift 2 ;;
    --compress) archive=1; compress="$2"; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bundle: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
say() { echo "bundle: $*" >&2; }
die() { say "$*"; exit 1; }
case "$compress" in xz|zstd|gzip) ;; *) echo "bundle: --compress $compress: use xz, zstd or gzip" >&2; exit 2 ;; esac

data="${SURFGYM_DATA_DIR:-.surfgym}"
case "$data" in /*) ;; *) data="$PWD/$data" ;; esac

# --- what goes in, checked before anything is written -----------------------------------
chromium_exe="${SURFGYM_CHROMIUM:-/usr/lib/chromium/chromium}"
# Debian's /usr/bin/chromium is a shell wrapper; the bundle carries the directory it runs.
if [ "$(head -c 2 "$chromium_exe" 2>/dev/null)" = "#!" ]; then chromium_exe=/usr/lib/chromium/chromium; fi
[ -x "$chromium_exe" ] || die "no Chromium at $chromium_exe: run ./scripts/setup.sh or set SURFGYM_CHROMIUM"
chromium_dir="$(dirname "$(readlink -f "$chromium_exe")")"
if [ "$postgres" = 1 ]; then
  pg_bin="${PG_BIN_DIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
  [ -x "$pg_bin/pg_ctl" ] || die "no PostgreSQL server binaries (run ./scripts/setup.sh, or pass --no-postgres)"
  pg_root="$(readlink -f "$pg_bin/..")"          # /usr/lib/postgresql/15
  # Debian's layout; a self-built server keeps share/ beside bin/.
  pg_share="/usr/share/postgresql/$(basename "$pg_root")"
  [ -d "$pg_share" ] || pg_share="$pg_root/share"
  [ -d "$pg_share" ] || die "PostgreSQL's share directory not found (looked at $pg_share)"
fi
if [ -z "$ort" ]; then ort="$(ls "$data"/venv/lib/python3*/site-packages/onnxruntime/capi/libonnxruntime.so.* 2>/dev/null | head -1 || true)"; fi
miniwob="${SURFGYM_MINIWOB_DIR:-$(ls -d "$data"/venv/lib/python3*/site-packages/miniwob/html 2>/dev/null | head -1 || true)}"

bin="${CARGO_TARGET_DIR:-target}/$profile/surfgym"
if [ "$build" = 1 ]; then
  args=(build --bin surfgym)
  [ "$profile" = release ] && args+=(--release)
  [ -n "$features" ] && args+=(--features "$features")
  say "cargo ${args[*]}"
  cargo "${args[@]}"
fi
[ -x "$bin" ] || die "$bin not built (drop --no-build)"

# --- copy -----------------------------------------------------------------------------
rm -rf "$out"
mkdir -p "$out"/bin "$out"/lib "$out"/data
out="$(cd "$out" && pwd)"
cp "$bin" "$out/bin/surfgym"
# The symbol table is an eighth of a release binary and only backtraces read it (they
# print addresses without it); binutils may be missing, then the copy stays whole.
command -v strip >/dev/null 2>&1 && strip --strip-unneeded "$out/bin/surfgym"

say "Chromium from $chromium_dir"
mkdir -p "$out/chromium"
# Everything but the Vulkan validation layer and mock driver (test tools, ~40 MB) and the
# translations other than en-US.
tar -C "$chromium_dir" --exclude='libVkLayer_khronos_validation.so' --exclude='libVkICD_mock_icd.so' \
  --exclude='locales/*' -cf - . | tar -C "$out/chromium" -xf -
mkdir -p "$out/chromium/locales"
cp "$chromium_dir"/locales/en-US.pak* "$out/chromium/locales/" 2>/dev/null || true
# Debian's wrapper adds these two switches; the bundle's launcher keeps Chromium as tested.
# The bundled libraries are set for Chromium and PostgreSQL alone: a target's own programs
# that surfgym starts (runuser, a shell) must keep the target's libraries.
cat >"$out/chromium/launch" <<'EOF'
#!/bin/sh
d="$(cd "$(dirname "$0")" && pwd)"
LD_LIBRARY_PATH="$d/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/chromium" \
  --enable-gpu-rasterization --show-component-extension-options "$@"
EOF
chmod +x "$out/chromium/launch"

if [ "$postgres" = 1 ]; then
  say "PostgreSQL from $pg_root"
  # PostgreSQL finds its share and lib directories relative to its binaries, by the paths it
  # was built with: keep them, under the bundle's own root.
  mkdir -p "$out/postgres$pg_root" "$out/postgres$pg_share"
  tar -C "$pg_root" --exclude='lib/llvmjit*' --exclude='lib/bitcode' -cf - . | tar -C "$out/postgres$pg_root" -xf -
  cp -a "$pg_share/." "$out/postgres$pg_share/"
  # What PG_BIN_DIR points at: the same tools, started with the bundle's libraries (the
  # server they start inherits them).
  mkdir -p "$out/postgres/bin"
  for t in "$out/postgres$pg_root"/bin/*; do
    w="$out/postgres/bin/$(basename "$t")"
    printf '#!/bin/sh\nd="$(cd "$(dirname "$0")/../.." && pwd)"\nLD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/postgres%s/bin/%s" "$@"\n' \
      "$pg_root" "$(basename "$t")" >"$w"
    chmod +x "$w"
  done
fi

if [ -n "$ort" ] && [ -f "$ort" ]; then
  mkdir -p "$out/onnxruntime"
  cp "$(readlink -f "$ort")" "$out/onnxruntime/$(basename "$ort")"
  # The GPU wheel's provider libraries sit beside it and are loaded by name.
  for p in "$(dirname "$(readlink -f "$ort")")"/libonnxruntime_providers_*.so; do
    [ -f "$p" ] && cp "$p" "$out/onnxruntime/"
  done
else
  say "no ONNX Runtime library found: the onnx policy will not run from this bundle (pass --ort-dylib)"
fi
[ -n "$miniwob" ] && [ -d "$miniwob" ] && cp -a "$miniwob" "$out/miniwob" \
  || say "MiniWoB++ not found: the miniwob site will be missing (run ./scripts/setup-python.sh)"
[ -d "$data/models" ] && cp -a "$data/models" "$out/data/models"

# Fonts: the ones this machine renders with, found by the bundle's own fontconfig file.
mkdir -p "$out/fonts"
for d in /usr/share/fonts/truetype/dejavu /usr/share/fonts/truetype/liberation /usr/share/fonts/truetype/liberation2 /usr/share/fonts/opentype/noto; do
  [ -d "$d" ] && cp -a "$d" "$out/fonts/"
done
[ -n "$(ls -A "$out/fonts")" ] || cp -a /usr/share/fonts/. "$out/fonts/" 2>/dev/null || true
cat >"$out/fonts/fonts.conf" <<'EOF'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir prefix="relative">.</dir>
  <cachedir prefix="xdg">surfgym-fontconfig</cachedir>
  <alias><family>sans-serif</family><prefer><family>DejaVu Sans</family></prefer></alias>
  <alias><family>serif</family><prefer><family>DejaVu Serif</family></prefer></alias>
  <alias><family>monospace</family><prefer><family>DejaVu Sans Mono</family></prefer></alias>
</fontconfig>
EOF

# --- shared libraries ------------------------------------------------------------------
# Every library the executables and Chromium's own .so files resolve to, except glibc's
# (it must come from the target: it is tied to its dynamic loader and kernel).
glibc='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnss_[a-z]+|libBrokenLocale|libmvec)\.so'
objects=("$out/bin/surfgym" "$out/chromium/chromium" "$out"/chromium/*.so "$out"/chromium/chrome_crashpad_handler)
[ "$postgres" = 1 ] && objects+=("$out/postgres$pg_root"/bin/* "$out/postgres$pg_root"/lib/*.so)
[ -d "$out/onnxruntime" ] && objects+=("$out"/onnxruntime/*)
for o in "${objects[@]}"; do
  [ -f "$o" ] || continue
  LD_LIBRARY_PATH="$out/chromium:$out/onnxruntime" ldd "$o" 2>/dev/null | awk '/=> \// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $glibc ]] && continue
  case "$path" in "$out"/*) continue ;; esac
  [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
done
# CUDA and cuDNN come from the target's driver installation, never from here.
rm -f "$out"/lib/libcuda.so* "$out"/lib/libnvidia-*

# --- environment ---------------------------------------------------------------------------
cat >"$out/env.sh" <<EOF
# Source this (or run \$BUNDLE/surfgym) to use the bundle. Paths are relative to this file.
B="\$(cd "\$(dirname "\${BASH_SOURCE[0]:-\$0}")" && pwd)"
export PATH="\$B/bin:\$PATH"
export SURFGYM_CHROMIUM="\$B/chromium/launch"
export FONTCONFIG_FILE="\$B/fonts/fonts.conf"
export SURFGYM_DATA_DIR="\${SURFGYM_DATA_DIR:-\$B/data}"
[ -d "\$B/miniwob" ] && export SURFGYM_MINIWOB_DIR="\${SURFGYM_MINIWOB_DIR:-\$B/miniwob}"
[ -d "\$B/postgres" ] && export PG_BIN_DIR="\$B/postgres/bin"
for f in "\$B"/onnxruntime/libonnxruntime.so*; do [ -f "\$f" ] && export ORT_DYLIB_PATH="\${ORT_DYLIB_PATH:-\$f}"; done
unset B
EOF
[ "$postgres" = 1 ] || sed -i '/PG_BIN_DIR/d' "$out/env.sh"
cat >"$out/surfgym" <<'EOF'
#!/usr/bin/env bash
. "$(dirname "$(readlink -f "$0")")/env.sh"
exec surfgym "$@"
EOF
chmod +x "$out/surfgym"
git rev-parse HEAD >"$out/COMMIT" 2>/dev/null || true

# A library left unresolved here will be unresolved on the target too.
unresolved="$(for o in "${objects[@]}"; do [ -f "$o" ] && LD_LIBRARY_PATH="$out/lib:$out/chromium:$out/onnxruntime" ldd "$o" 2>/dev/null | grep 'not found' | grep -v 'libcuda\|libcudnn\|libcublas\|libcurand\|libcufft\|libnvrtc\|libcudart\|libnvinfer\|libnvJitLink' || true; done | sort -u)"
[ -z "$unresolved" ] || say "warning: unresolved libraries: $unresolved"
say "wrote $out ($(du -sh "$out" | cut -f1)); run $out/surfgym --help"

if [ "$archive" = 1 ]; then
  parent="$(dirname "$out")" name="$(basename "$out")"
  case "$compress" in
    xz) tool=(xz -T0 -6) ext=xz ;;
    zstd) tool=(zstd -q -19 -T0) ext=zst ;;
    gzip) tool=(gzip -6) ext=gz ;;
  esac
  command -v "${tool[0]}" >/dev/null || die "${tool[0]} is not installed (pick another --compress)"
  file="$out.tar.$ext"
  say "compressing with ${tool[*]} (a few minutes)"
  tar -C "$parent" -cf - "$name" | "${tool[@]}" >"$file"
  if [ -n "$split" ]; then
    rm -f "$file".part-*
    split -b "${split}M" "$file" "$file.part-"
    rm "$file"
    say "wrote $(ls "$file".part-* | wc -l) parts: $file.part-* (on the target: cat $(basename "$file").part-* >$(basename "$file") && tar -xf $(basename "$file"))"
  else
    say "wrote $file ($(du -sh "$file" | cut -f1))"
  fi
fi
