#!/usr/bin/env bash
# Checks scripts/bundle.sh end to end: bundles the debug build, then, with this machine's
# Chromium, PostgreSQL and fonts hidden (a private mount namespace, where this user may make
# one), starts the bundle's own database, observes a MiniWoB++ page through the bundle's
# Chromium, and checks that Chromium runs on the bundle's libraries. `scripts/test.sh` runs
# it after the Rust tests; it needs target/debug/surfgym and the data directory's venv.
set -euo pipefail
cd "$(dirname "$0")/.."

out="$PWD/target/bundle-test"
work="$(mktemp -d)"
chmod 755 "$work"  # the database runs as `postgres` when this is root
trap 'rm -rf "$work"' EXIT
./scripts/bundle.sh --debug --no-build --out "$out" 2>"$work/bundle.log" || { cat "$work/bundle.log" >&2; exit 1; }
grep -q 'unresolved' "$work/bundle.log" && { cat "$work/bundle.log" >&2; echo "test-bundle: FAIL: unresolved libraries" >&2; exit 1; }
[ -d "$out/miniwob" ] || { echo "test-bundle: FAIL: MiniWoB++ was not bundled" >&2; exit 1; }

cat >"$work/inside.sh" <<'EOF'
set -euo pipefail
out="$1" work="$2" hide="$3"
if [ "$hide" = 1 ]; then
  for d in /usr/lib/chromium /usr/lib/postgresql /usr/share/postgresql /usr/share/fonts /etc/fonts /etc/chromium.d; do
    [ -d "$d" ] && mount -t tmpfs none "$d"
  done
fi
export SURFGYM_DATA_DIR="$work/data"
unset DATABASE_URL ORT_DYLIB_PATH SURFGYM_MINIWOB_DIR SURFGYM_CHROMIUM PG_BIN_DIR
# MiniWoB++'s pages from the bundle, on a port the kernel picks.
python3 -c '
import http.server, functools, sys, socketserver
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args): pass
s = socketserver.TCPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=sys.argv[1]))
print(s.server_address[1], flush=True)
s.serve_forever()' "$out/miniwob" >"$work/port" &
server=$!
trap 'kill $server' EXIT
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$work/port")/miniwob/click-checkboxes.html"

"$out/surfgym" db start | grep -q '^DATABASE_URL=postgres://' || { echo "test-bundle: FAIL: the bundle's database did not start" >&2; exit 1; }
"$out/surfgym" db stop >/dev/null

"$out/surfgym" observe "$url" --act 'wait(2500)' >"$work/observe.txt" 2>&1 &
observe=$!
# While the page waits, Chromium's processes must have the bundle's libraries mapped.
mapped=0
for _ in $(seq 40); do
  if grep -qs "$out/lib/libnss3" /proc/[0-9]*/maps; then mapped=1; break; fi
  sleep 0.1
done
wait $observe || { cat "$work/observe.txt" >&2; echo "test-bundle: FAIL: surfgym observe failed" >&2; exit 1; }
grep -q 'Title: "Click Checkboxes Task"' "$work/observe.txt" && grep -q '\[1\] button "Submit"' "$work/observe.txt" \
  || { cat "$work/observe.txt" >&2; echo "test-bundle: FAIL: the page was not observed" >&2; exit 1; }
[ "$mapped" = 1 ] || { echo "test-bundle: FAIL: Chromium did not load the bundle's libnss3" >&2; exit 1; }
EOF

hide=0
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then hide=1; fi
if [ "$hide" = 1 ]; then
  unshare -m bash "$work/inside.sh" "$out" "$work" 1
else
  echo "test-bundle: cannot make a mount namespace here; checking with the system's copies visible" >&2
  bash "$work/inside.sh" "$out" "$work" 0
fi
rm -rf "$out"
echo "test-bundle: ok (system Chromium/PostgreSQL/fonts hidden: $([ "$hide" = 1 ] && echo yes || echo no))" >&2
