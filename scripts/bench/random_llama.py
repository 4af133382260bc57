#!/usr/bin/env python3
"""Write a random-weight Llama decoder in the shape of a real model, for training benchmarks.

    python scripts/bench/random_llama.py --shape smollm2-135m --out DIR [--seed 0] [--like DIR]

Writes DIR/config.json and DIR/onnx/decoder_model_merged.onnx through the same exporter as
the real models (scripts/models/llama_onnx.py), so the trainer loads it exactly as it loads
SmolLM2-135M: throughput depends on shapes, not values. For machines that cannot download
the real weights (the GPU machine has no network); needs only numpy and onnx.

With --like DIR (a directory smollm2.py wrote, or only its small files: config.json and
the tokenizer's) the output is a whole policy model: DIR's tokenizer, chat template and
config beside a random embed_tokens.onnx, so `surfgym` rolls it out as it rolls out
SmolLM2 (with random weights it acts at random) and trains it as it trains SmolLM2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import llama_onnx  # noqa: E402

# SmolLM2-135M-Instruct's config.json (the text settings the trainer reads).
SHAPES = {
    "smollm2-135m": {
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "head_dim": 64,
        "vocab_size": 49152,
        "rms_norm_eps": 1e-5,
        "rope_theta": 100000.0,
    },
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--like", help="copy the tokenizer, chat template and config of this model directory")
    a = ap.parse_args()
    cfg = dict(SHAPES[a.shape])
    like_config = None
    if a.like:
        with open(os.path.join(a.like, "config.json")) as f:
            like_config = json.load(f)
        wrong = {k: (v, like_config.get(k)) for k, v in cfg.items() if like_config.get(k) != v}
        if wrong:
            raise SystemExit(f"random_llama: {a.like} is not of shape {a.shape}: {wrong}")
    rng = np.random.default_rng(a.seed)
    h, inter, vocab = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh, kv, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]

    def lin(out: int, inp: int) -> np.ndarray:
        # transformers' initialisation scale.
        return (0.02 * rng.standard_normal((out, inp), dtype=np.float32)).astype(np.float32)

    ones = lambda: np.ones(h, dtype=np.float32)  # noqa: E731
    layers = [
        {
            "input_layernorm": ones(),
            "q_proj": lin(nh * d, h),
            "k_proj": lin(kv * d, h),
            "v_proj": lin(kv * d, h),
            "o_proj": lin(h, nh * d),
            "post_attention_layernorm": ones(),
            "gate_proj": lin(inter, h),
            "up_proj": lin(inter, h),
            "down_proj": lin(h, inter),
        }
        for _ in range(cfg["num_hidden_layers"])
    ]
    weights = {"layers": layers, "norm": ones(), "lm_head": lin(vocab, h)}
    os.makedirs(os.path.join(a.out, "onnx"), exist_ok=True)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **cfg,
              "rope_scaling": None, "hidden_act": "silu", "torch_dtype": "float32"}
    if like_config is not None:
        config = dict(like_config)
        for name in os.listdir(a.like):
            src = os.path.join(a.like, name)
            if os.path.isfile(src) and name != "config.json" and not name.startswith("."):
                shutil.copyfile(src, os.path.join(a.out, name))
        embed = (0.02 * rng.standard_normal((cfg["vocab_size"], h), dtype=np.float32)).astype(np.float32)
        if config.get("tie_word_embeddings"):
            weights["lm_head"] = embed  # as smollm2.py writes a tied model
        llama_onnx.save_model(llama_onnx.build_embed_tokens(embed),
                              os.path.join(a.out, "onnx", "embed_tokens.onnx"))
    config["surfgym"] = {"random_weights": True, "shape_of": a.shape, "seed": a.seed}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    llama_onnx.save_model(llama_onnx.build_decoder(weights, config),
                          os.path.join(a.out, "onnx", "decoder_model_merged.onnx"))
    print(f"random_llama: {a.shape} -> {a.out}")


if __name__ == "__main__":
    main()
