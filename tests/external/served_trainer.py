#!/usr/bin/env python3
"""A test external trainer for a served run (tests/it/train_served.rs), standard library only.

It follows surfgym's external-trainer protocol (docs/guides/training.md, "External trainers")
for a policy served over HTTP:
- checks the training set as a served run writes it: the manifest names the served
  parent, every JSON line carries the user message as the request sent it (images
  first, on disk, then the text), the reply, the token ids and log-probabilities the
  server reported, and no prompt ids (the server's template is its own);
- "trains" by copying SERVED_TRAINER_SOURCE (a model directory) into SERVED_TRAINER_ROOT,
  the server's load root, under a new name;
- loads it into the server (POST /v1/load_lora_adapter, vLLM's route) and writes the
  name into served_model.txt. SERVED_TRAINER_MODE makes it misbehave on purpose:
  `unloaded` returns the name without loading it, `bad_name` returns "two words".
"""

import json
import os
import shutil
import sys
import urllib.request


def check(root, manifest):
    served = manifest["served"]
    assert served["model"] == os.environ["SURFGYM_SERVED_MODEL"], served
    assert served["prompt_ids"] is False, served
    assert manifest["base_weights"] is None, manifest
    assert "SURFGYM_BASE_WEIGHTS" not in os.environ
    n = 0
    with open(os.path.join(root, "train.jsonl")) as f:
        for n, line in enumerate(f, 1):
            rec = json.loads(line)
            where = f"train.jsonl line {n}"
            roles = [m["role"] for m in rec["messages"]]
            assert roles == ["user", "assistant"], f"{where}: roles {roles}"
            parts = rec["messages"][0]["content"]
            kinds = [p["type"] for p in parts]
            assert kinds[-1] == "text" and kinds[:-1] == ["image"] * len(rec["images"]), f"{where}: {kinds}"
            assert rec["images"], f"{where}: no screenshot"
            for img in rec["images"]:
                assert os.path.isfile(os.path.join(root, img)), f"{where}: {img} missing"
            assert parts[-1]["text"].startswith("You are a web agent."), f"{where}: prompt"
            assert rec["prompt_ids"] == [] and "input_ids" not in rec, f"{where}: prompt ids"
            assert len(rec["completion_ids"]) == len(rec["old_logprobs"]) > 0, f"{where}: tokens"
            assert all(lp <= 0 for lp in rec["old_logprobs"]), f"{where}: log-probability above 0"
            assert rec["messages"][1]["content"][0]["text"] == rec["completion_text"], where
    assert n == manifest["samples"] > 0, f"{n} lines, manifest says {manifest['samples']}"
    return n


def main():
    root, out = os.environ["SURFGYM_TRAIN_INPUT"], os.environ["SURFGYM_TRAIN_OUTPUT"]
    with open(os.path.join(root, "manifest.json")) as f:
        manifest = json.load(f)
    n = check(root, manifest)
    mode = os.environ.get("SERVED_TRAINER_MODE", "")
    name = f"{os.environ['SURFGYM_RUN'][:8]}-it{os.environ['SURFGYM_ITERATION']}"
    if mode == "bad_name":
        name = "two words"
    dest = os.path.join(os.environ["SERVED_TRAINER_ROOT"], name)
    shutil.copytree(os.environ["SERVED_TRAINER_SOURCE"], dest, dirs_exist_ok=True)
    if mode == "":
        body = json.dumps({"lora_name": name, "lora_path": dest}).encode()
        req = urllib.request.Request(
            os.environ["SURFGYM_SERVED_URL"].rstrip("/") + "/v1/load_lora_adapter",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.status == 200, r.status
    with open(os.path.join(out, "served_model.txt"), "w") as f:
        f.write(name + "\n")
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump({"loss": 0.25, "lines": n}, f)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"served_trainer: {e}", file=sys.stderr)
        sys.exit(2)
