#!/usr/bin/env python3
"""Learning curves of training runs read back from `surfgym train show --json`, as Markdown.

    python scripts/bench/curriculum_summary.py run-A.json run-B.json[+STEPS] ...

For runs that `surfgym bench curriculum` started and that may not have ended (a time limit
cut the benchmark): each finished iteration's cumulative environment steps, train success
and held-out success, and a last table of held-out success at the largest number of
environment steps every run reached (the comparison at equal steps). A warm start's
scripted steps are not in its run: `run-warm.json+STEPS` starts that curve at STEPS (the
benchmark prints them: "warm start: ... N environment steps").
"""

from __future__ import annotations

import json
import os
import sys


def pct(v):
    return "-" if v is None else f"{100 * v:.1f}%"


def curve(doc, offset):
    steps, points = offset, []
    for it in sorted(doc.get("iterations", []), key=lambda i: i["idx"]):
        if it.get("phase") != "done":
            continue
        steps += max(it.get("env_steps") or 0, 0)
        horizons = sorted(set((it.get("horizons") or {}).values()))
        points.append((it["idx"], steps, it.get("train_success"), it.get("eval_success"), horizons))
    return points


def main(paths):
    runs = []
    for arg in paths:
        p, plus, offset = arg.rpartition("+")
        if not plus or not offset.isdigit():
            p, offset = arg, "0"
        try:
            with open(p) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"skipped {p}: {e}", file=sys.stderr)
            continue
        name = os.path.basename(p).removeprefix("run-").removesuffix(".json")
        runs.append((name, doc["run"].get("state"), curve(doc, int(offset))))
    if not runs:
        sys.exit("curriculum_summary: no run to show")
    print("| variant | state | curve (iteration: env steps, train, held-out, horizons) |")
    print("|---|---|---|")
    for name, state, pts in runs:
        cells = " · ".join(
            f"{i}: {s}, {pct(tr)}, {pct(ev)}" + (f", h {'/'.join(map(str, h))}" if h else "")
            for i, s, tr, ev, h in pts
        )
        print(f"| {name} | {state} | {cells} |")
    reached = [pts[-1][1] for _, _, pts in runs if pts]
    common = min(reached) if reached else 0
    print()
    print(f"| variant | held-out at start | held-out at ≤ {common} env steps | last | best | env steps |")
    print("|---|---|---|---|---|---|")
    for name, _, pts in runs:
        # A warm start's iteration 0 comes after its warm-up: it is the start of nothing else.
        evals = [p for p in pts if p[3] is not None]
        at = [p for p in evals if p[1] <= common]
        best = max((p[3] for p in evals), default=None)
        print(
            f"| {name} | {pct(evals[0][3]) if evals else '-'} | {pct(at[-1][3]) if at else '-'} "
            f"| {pct(evals[-1][3]) if evals else '-'} | {pct(best)} | {pts[-1][1] if pts else 0} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
