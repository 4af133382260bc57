#!/usr/bin/env python3
"""Compare training runs' wall time from `surfgym train show --json` output.

    python3 scripts/bench/overlap_summary.py NAME=FILE.json [NAME=FILE.json ...]

For each run: its span (the first phase's start to the last phase's end, the untrained
model's evaluation included), the span per training iteration, each phase's duration
(rollout / train / eval) per iteration, the staleness of the kept samples, and held-out
success. Then each run's span per iteration over the first run's (the first is the
baseline: put the synchronous run first). Prints Markdown; needs only the standard library.
"""

from __future__ import annotations

import json
import sys


def phases(it: dict) -> dict:
    return ((it.get("report") or {}).get("phases")) or {}


def summary(name: str, path: str) -> dict:
    with open(path) as f:
        shown = json.load(f)
    its = shown["iterations"]
    marks = [p for it in its for p in phases(it).values()]
    if not marks:
        raise SystemExit(f"overlap_summary: {path} has no recorded phases")
    span_s = (max(p["end_ms"] for p in marks) - min(p["start_ms"] for p in marks)) / 1000
    trained = [it for it in its if it["idx"] > 0]
    rows = []
    for it in its:
        ph = phases(it)
        dur = {k: (v["end_ms"] - v["start_ms"]) / 1000 for k, v in ph.items()}
        report = it.get("report") or {}
        rows.append({
            "idx": it["idx"],
            "wall_s": (it.get("wall_ms") or 0) / 1000,
            "phases": dur,
            "staleness": report.get("staleness"),
            "device": (report.get("update") or {}).get("device"),
            "update_s": (report.get("update") or {}).get("seconds"),
            "parts": [(report.get("update") or {}).get(k) for k in ("replay_s", "load_s", "publish_s")],
            "samples": it.get("samples"),
            "eval": it.get("eval_success"),
        })
    return {
        "name": name,
        "state": shown["run"]["state"],
        "span_s": span_s,
        "iterations": len(trained),
        "per_iteration_s": span_s / max(len(trained), 1),
        "rows": rows,
    }


def fmt(x, digits=1) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def main() -> None:
    runs = [summary(*arg.split("=", 1)) for arg in sys.argv[1:]]
    if not runs:
        raise SystemExit(__doc__)
    print("| run | state | span | training iterations | per iteration | vs first |")
    print("|---|---|---|---|---|---|")
    base = runs[0]["per_iteration_s"]
    for r in runs:
        print(f"| {r['name']} | {r['state']} | {fmt(r['span_s'])} s | {r['iterations']} | "
              f"{fmt(r['per_iteration_s'])} s | {fmt(r['per_iteration_s'] / base, 2)} |")
    print()
    print("| run | iteration | wall | rollout | train | eval | update on | optimiser / replay / load / publish | samples | staleness | held-out success |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        for row in r["rows"]:
            p = row["phases"]
            print(f"| {r['name']} | {row['idx']} | {fmt(row['wall_s'])} s | {fmt(p.get('rollout'))} | "
                  f"{fmt(p.get('train'))} | {fmt(p.get('eval'))} | {row['device'] or ''} | "
                  f"{' / '.join(fmt(x, 2) for x in [row['update_s'], *row['parts']] if x is not None)} | "
                  f"{row['samples'] if row['samples'] is not None else ''} | "
                  f"{json.dumps(row['staleness']) if row['staleness'] else ''} | {fmt(row['eval'], 3)} |")


if __name__ == "__main__":
    main()
