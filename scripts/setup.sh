#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and run surfgym: Chromium and the
# PostgreSQL server binaries (Debian packages). Safe to run again: it only installs what is
# missing. Nothing is downloaded from outside the package registries.
set -euo pipefail

missing=()
[ -x "${SURFGYM_CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium)
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 && ! command -v pg_ctl >/dev/null 2>&1; then
  missing+=(postgresql)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to apt-get install ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y "${missing[@]}" >/tmp/surfgym-apt.log 2>&1; then
    $sudo apt-get update >>/tmp/surfgym-apt.log 2>&1
    $sudo apt-get install -y "${missing[@]}" >>/tmp/surfgym-apt.log 2>&1 || {
      echo "setup: apt-get install ${missing[*]} failed; see /tmp/surfgym-apt.log" >&2
      exit 1
    }
  fi
fi

command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (rustup) first" >&2; exit 1; }
