#!/usr/bin/env python3
"""Greedy chat generation with ONNX Runtime on a model directory (reference for the Rust loader).

    python scripts/models/generate.py DIR --prompt "What is the capital of France?" [--prompt ...]
                                      [--max-new-tokens 48] [--raw]

Renders the model's chat template (tokenizer_config.json) around each prompt (unless --raw), then
decodes greedily with the KV cache until an EOS id (config / generation_config) or the token limit.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_model import Model  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description="Greedy generation with ONNX Runtime")
    ap.add_argument("dir")
    ap.add_argument("--prompt", action="append", required=True)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--raw", action="store_true", help="do not apply the chat template")
    args = ap.parse_args()
    m = Model(args.dir)
    stops = m.stop_ids()
    for p in args.prompt:
        text = p if args.raw else m.render_chat(m.user_message(p))
        ids = m.tokenizer.encode(text, add_special_tokens=False).ids
        t0 = time.time()
        new, _ = m.greedy(ids, args.max_new_tokens, stop_ids=stops)
        dt = time.time() - t0
        out = m.tokenizer.decode([t for t in new if t not in stops], skip_special_tokens=False)
        print(f"--- prompt: {p!r} ({len(ids)} tokens)")
        print(f"--- output ({len(new)} tokens, {len(new) / dt:.1f} tok/s, stop={'yes' if new and new[-1] in stops else 'no'}):")
        print(out)


if __name__ == "__main__":
    main()
