#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what is missing, starts a private
# Postgres (unless DATABASE_URL is set), runs every test with real Chromium and a real
# Postgres server, and stops the database it started. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh

export SURFGYM_DATA_DIR="${SURFGYM_DATA_DIR:-$PWD/.surfgym/test}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# ONNX Runtime (the PyPI wheel), the tiny generated VLM and MiniWoB++'s HTML, in the data
# directory's venv; the last line is ORT_DYLIB_PATH=...
ort="$(./scripts/setup-python.sh | tail -n 1)"
export ORT_DYLIB_PATH="${ort#ORT_DYLIB_PATH=}"

cargo build --workspace --all-targets

started_db=""
if [ -z "${DATABASE_URL:-}" ]; then
  line="$(./target/debug/surfgym db start | grep '^DATABASE_URL=')"
  export DATABASE_URL="${line#DATABASE_URL=}"
  started_db=1
fi
cleanup() {
  if [ -n "$started_db" ]; then ./target/debug/surfgym db stop >/dev/null || true; fi
}
trap cleanup EXIT

# Where, not who: the private cluster's URL carries its password.
echo "test: database …@${DATABASE_URL##*@}" >&2
# Every test executable, from one build with the workspace's feature unification, run
# directly: a `cargo test -p surfgym` or `--exclude surfgym` selection unifies features
# otherwise and would compile much of the graph again while the tests run (CI measured
# 2.5 and 15 minutes of it). The root `it` binary holds most of the slow, Chromium-bound
# tests; the crates' binaries (each test its own database and browsers) run one after
# another beside it, then `alone`, whose tests need the machine to themselves. Each
# group's output is kept apart and printed whole, so neither garbles the other's lines.
logs="$(mktemp -d)"
cargo test --workspace --no-run --message-format=json-render-diagnostics >"$logs/build.json"
# "group<TAB>package directory<TAB>executable" for each test executable.
python3 - "$logs/build.json" >"$logs/executables" <<'PY'
import json, os, sys
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable") or not m["profile"]["test"]:
        continue
    # The root package is the one whose manifest is the repository's own.
    root = os.path.dirname(os.path.abspath(m["manifest_path"])) == os.getcwd()
    name = m["target"]["name"]
    group = ("alone" if name == "alone" else "root") if root else "crates"
    print(f"{group}\t{os.path.dirname(m['manifest_path'])}\t{m['executable']}")
PY
# Runs the executables of group $1 one after another (the rest of the arguments go to
# each, as a filter), from their package's directory as cargo would; 1 if any failed.
# Each test's line carries its time (`--report-time`, which libtest keeps behind
# `-Z unstable-options` and RUSTC_BOOTSTRAP even on stable; no test runs cargo or rustc),
# so a log shows which tests hold the suite up.
run_group() {
  local group="$1" failed=0 g dir exe
  shift
  while IFS=$'\t' read -r g dir exe; do
    [ "$g" = "$group" ] || continue
    echo "     Running ${exe#"$PWD"/}"
    (cd "$dir" && RUSTC_BOOTSTRAP=1 "$exe" -Z unstable-options --report-time "$@" </dev/null) ||
      failed=1
  done <"$logs/executables"
  return "$failed"
}
if ! grep -q "^root" "$logs/executables" || ! grep -q "^crates" "$logs/executables"; then
  echo "test: the build listed no test executables (see $logs/build.json)" >&2
  exit 1
fi
# On a full run the root binary's slowest modules run in the crates' lane once the crates
# and the bundle are done, so that both lanes end about together (CI measured the root
# binary at 27 minutes against the crates' 17 when it ran them).
late_modules=(learning:: warm_start::)
root_args=("$@")
if [ $# -eq 0 ]; then
  for m in "${late_modules[@]}"; do root_args+=(--skip "$m"); done
fi
run_group root "${root_args[@]}" >"$logs/root.log" 2>&1 &
root=$!
# (The CUDA execution provider's code is compiled in every build, `--features cuda` only
# turns it on: the build above type-checks it, with no check of its own.)
crates_ok=0
# Every crate's binary runs even when one fails, so one run shows every failure. Then, on
# a full run only, the offline bundle (scripts/bundle.sh), which runs from its own copies
# in a mount namespace of its own, and the root binary's late modules: the crates alone
# end some ten minutes before the rest of the root binary.
{
  run_group crates "$@" || crates_ok=$?
  if [ $# -eq 0 ]; then
    ./scripts/test-bundle.sh || crates_ok=1
    echo "     (the root binary's ${late_modules[*]})"
    run_group root "${late_modules[@]}" || crates_ok=1
  fi
} >"$logs/crates.log" 2>&1
root_ok=0
wait "$root" || root_ok=$?
cat "$logs/crates.log" "$logs/root.log"
if [ "$crates_ok" != 0 ] || [ "$root_ok" != 0 ]; then
  echo "test: failures above (crates, bundle and the root's late modules: exit $crates_ok, root: exit $root_ok)" >&2
  exit 1
fi
run_group alone "$@"
rm -rf "$logs"
# (The bundled suite's rubric audit is a test: `rewards::the_labelled_set_...` fails on any
# finding a task file does not accept, as `surfgym tasks audit` would.)
