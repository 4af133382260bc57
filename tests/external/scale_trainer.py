#!/usr/bin/env python3
"""A test external trainer (tests/it/train_external.rs), standard library only.

It follows surfgym's external-trainer protocol (docs/guides/training.md, "External trainers"):
reads the training set in SURFGYM_TRAIN_INPUT, checks every JSON line (token ids,
masks, log-probabilities, images on disk), and writes into SURFGYM_TRAIN_OUTPUT a
weights.safetensors holding one tensor of the base weights scaled by SCALE_FACTOR.
SCALE_TRAINER_MODE makes it misbehave on purpose: unknown (a tensor name the model does
not have), shape (a wrong shape), nan, fail (exit 3), sleep (past any timeout), nothing
(writes no output), served (a served model name, which an ONNX run refuses).
"""

import array
import json
import math
import os
import struct
import sys
import time


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        out[name] = (meta["dtype"], meta["shape"], data[start:end])
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def check_line(n, line, root):
    rec = json.loads(line)
    where = f"train.jsonl line {n}"
    roles = [m["role"] for m in rec["messages"]]
    assert roles == ["user", "assistant"], f"{where}: roles {roles}"
    ids, mask = rec["input_ids"], rec["completion_mask"]
    assert ids == rec["prompt_ids"] + rec["completion_ids"], f"{where}: input_ids"
    assert mask == [0] * len(rec["prompt_ids"]) + [1] * len(rec["completion_ids"]), f"{where}: mask"
    assert len(rec["old_logprobs"]) == len(rec["completion_ids"]) > 0, f"{where}: log-probabilities"
    assert all(lp <= 0 for lp in rec["old_logprobs"]), f"{where}: a log-probability above 0"
    images = sum(1 for part in rec["messages"][0]["content"] if part["type"] == "image")
    assert images == len(rec["images"]), f"{where}: {images} image parts, {len(rec['images'])} files"
    for img in rec["images"]:
        assert os.path.isfile(os.path.join(root, img)), f"{where}: {img} is missing"
    return rec


def main():
    mode = os.environ.get("SCALE_TRAINER_MODE", "scale")
    root, out = os.environ["SURFGYM_TRAIN_INPUT"], os.environ["SURFGYM_TRAIN_OUTPUT"]
    assert sys.argv[1:] == [root, out], f"arguments {sys.argv[1:]} are not the input and output"
    manifest = json.load(open(os.path.join(root, "manifest.json")))
    with open(os.path.join(root, "train.jsonl")) as f:
        records = [check_line(n + 1, line, root) for n, line in enumerate(f)]
    assert len(records) == manifest["samples"] == int(os.environ["SURFGYM_SAMPLES"]), "sample count"
    print(f"checked {len(records)} samples of iteration {os.environ['SURFGYM_ITERATION']}", flush=True)
    if mode == "fail":
        print("simulated failure: the trainer gave up", file=sys.stderr)
        sys.exit(3)
    if mode == "sleep":
        time.sleep(120)
    if mode == "nothing":
        return
    if mode == "served":
        with open(os.path.join(out, "served_model.txt"), "w") as f:
            f.write("tiny-text-lora@iteration-2\n")
        return
    weights = read_safetensors(os.environ["SURFGYM_BASE_WEIGHTS"])
    target = os.environ.get("SCALE_TENSOR", "model.layers.0.mlp.down_proj.weight_t")
    factor = float(os.environ.get("SCALE_FACTOR", "3"))
    dtype, shape, raw = weights[target]
    assert dtype == "F32", dtype
    values = array.array("f")
    values.frombytes(raw)
    values = array.array("f", (v * factor for v in values))
    if mode == "nan":
        values[len(values) // 2] = math.nan
    if mode == "shape":
        shape = [shape[0] - 1] + shape[1:]
        values = values[: len(values) - len(values) // (shape[0] + 1)]
    name = "model.layers.99.bogus.weight_t" if mode == "unknown" else target
    write_safetensors(os.path.join(out, "weights.safetensors"), {name: ("F32", shape, values.tobytes())})
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump({"tensor": name, "factor": factor, "samples": len(records), "train_loss": 0.5}, f)
    print(f"wrote {name} x {factor}", flush=True)


if __name__ == "__main__":
    main()
