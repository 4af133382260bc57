#!/usr/bin/env bash
# The main job on a fresh machine: installs what is missing, builds, then runs
# `surfgym demo` (private Postgres unless DATABASE_URL is set, bundled practice sites and
# tasks, a scripted and a random campaign, a summary table, and the dashboard until
# Ctrl-C). Extra arguments go to `surfgym demo`, e.g. --exit-when-done.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# ONNX Runtime, the tiny VLM and MiniWoB++ (its suite is registered and served too).
./scripts/setup-python.sh >/dev/null
cargo build --bin surfgym
exec ./target/debug/surfgym demo "$@"
