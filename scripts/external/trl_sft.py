#!/usr/bin/env python3
"""An external trainer for surfgym training runs: supervised fine-tuning with TRL.

surfgym runs it once per iteration (docs/guides/training.md, "External trainers"), e.g.

    "trainer": {"kind": "external", "format": "trl",
                "command": [".surfgym/venv-trl/bin/python", "scripts/external/trl_sft.py",
                            "{input}", "{output}", "--epochs", "2", "--lr", "1e-4"]}

It trains the decoder of a Llama-family model that surfgym runs in ONNX (tiny-text,
SmolLM2 as converted by scripts/setup-python.sh) with TRL's SFTTrainer, on the samples of
the iteration whose advantage is above --min-advantage (filtered behaviour cloning: for
GRPO's selection, the steps of rollouts that did better than their group), and gives the
weights back keyed by ONNX initializer name.

* Data: train.jsonl's ``input_ids`` and ``completion_mask`` (the exact tokens the policy
  saw and sampled; nothing is re-templated or re-tokenised), which SFTTrainer takes as an
  already tokenised dataset; the loss is on the completion only.
* Weights in: SURFGYM_BASE_WEIGHTS (the current version's decoder, ONNX names) and the
  frozen token embeddings from the base model's onnx/embed_tokens.onnx, laid into a
  transformers LlamaForCausalLM built from the model's config.json.
* Weights out: SURFGYM_TRAIN_OUTPUT/weights.safetensors, every decoder tensor in the
  ONNX layout (``*.weight_t`` = the transpose of ``nn.Linear.weight``, the attention
  scale 1/sqrt(head_dim) folded into q_proj, as scripts/models/llama_onnx.py builds it),
  and report.json with the loss.

Needs torch, transformers, trl, datasets, safetensors and onnx (not installed by surfgym's
setup; e.g. ``python -m venv .surfgym/venv-trl && .surfgym/venv-trl/bin/pip install torch
transformers trl datasets safetensors onnx onnxruntime``). With onnxruntime it also checks,
before training, that the transformers model gives the ONNX decoder's logits on a training
row (the weight round trip alone would not catch a wrong rotary or scale convention). Text-only models: a vision model's
screenshots (train.jsonl's ``images``) would need its vision tower, which this example does
not build.
"""

import argparse
import json
import math
import os
import sys
import tempfile


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("input", nargs="?", default=os.environ.get("SURFGYM_TRAIN_INPUT"))
    p.add_argument("output", nargs="?", default=os.environ.get("SURFGYM_TRAIN_OUTPUT"))
    p.add_argument("--base", default=os.environ.get("SURFGYM_BASE_MODEL"), help="the current version's directory")
    p.add_argument("--weights", default=os.environ.get("SURFGYM_BASE_WEIGHTS"), help="its decoder tensors (ONNX names)")
    p.add_argument("--epochs", type=float, default=2.0)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--min-advantage", type=float, default=0.0, help="train on samples above this advantage")
    a = p.parse_args()
    for name in ("input", "output", "base", "weights"):
        if not getattr(a, name):
            p.error(f"{name}: not given and its SURFGYM_* variable is not set (run by surfgym?)")
    return a


def original_model(version_dir):
    """The base export behind a version (train.json's base), or the directory itself."""
    lineage = os.path.join(version_dir, "train.json")
    if os.path.isfile(lineage):
        with open(lineage) as f:
            return json.load(f)["base"]
    return version_dir


def onnx_to_hf(onnx_tensors, embed, cfg, torch):
    """ONNX initializer names and layout -> LlamaForCausalLM's state dict."""
    q_unscale = math.sqrt(cfg.head_dim)
    sd = {"model.embed_tokens.weight": embed}
    for name, t in onnx_tensors.items():
        if name.endswith(".weight_t"):
            w = t.T.contiguous()
            if name.endswith("self_attn.q_proj.weight_t"):
                w = w * q_unscale
            sd[name[: -len("_t")]] = w
        else:
            sd[name] = t
    return sd


def hf_to_onnx(state, names, cfg):
    """The trained state dict back into the names and layout surfgym's versions hold."""
    q_scale = 1.0 / math.sqrt(cfg.head_dim)
    out = {}
    for name in names:
        if name.endswith(".weight_t"):
            w = state[name[: -len("_t")]].detach().float()
            if name.endswith("self_attn.q_proj.weight_t"):
                w = w * q_scale
            out[name] = w.T.contiguous().cpu()
        else:
            out[name] = state[name].detach().float().contiguous().cpu()
    return out


def onnx_agrees(model, base, onnx_tensors, embed, ids, cfg):
    """The transformers model must compute what surfgym's ONNX decoder computes: the same
    logits on a training row's tokens, the version's weights given to ONNX Runtime as the
    initializers surfgym overrides. Skipped (with a note) without onnxruntime."""
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime not installed: the logits are not compared with ONNX's", flush=True)
        return
    import torch

    opts = ort.SessionOptions()
    # ONNX Runtime borrows the buffers: they must outlive the session.
    values = {n: ort.OrtValue.ortvalue_from_numpy(t.numpy()) for n, t in onnx_tensors.items()}
    for n, v in values.items():
        opts.add_initializer(n, v)
    sess = ort.InferenceSession(os.path.join(base, "onnx", "decoder_model_merged.onnx"), opts)
    feeds = {"inputs_embeds": embed[ids][None].astype(np.float32),
             "attention_mask": np.ones((1, len(ids)), np.int64),
             "position_ids": np.arange(len(ids), dtype=np.int64)[None]}
    for i in sess.get_inputs():
        if i.name.startswith("past_key_values"):
            feeds[i.name] = np.zeros((1, cfg.num_key_value_heads, 0, cfg.head_dim), np.float32)
        elif i.name == "use_cache_branch":
            feeds[i.name] = np.array([False])
    want = sess.run(["logits"], feeds)[0][0]
    with torch.no_grad():
        got = model(torch.tensor([ids])).logits[0].numpy()
    worst = float(np.abs(got - want).max())
    scale = float(np.abs(want).max())
    print(f"logits against ONNX Runtime: max difference {worst:.2e} (largest logit {scale:.1f})", flush=True)
    if worst > 1e-3 * max(scale, 1.0):
        sys.exit(f"the transformers model does not compute what the ONNX decoder computes (logits differ by {worst})")


def main():
    a = parse_args()
    import onnx
    import torch
    from datasets import Dataset
    from onnx import numpy_helper
    from safetensors.torch import load_file, save_file
    from transformers import AutoConfig, AutoTokenizer, LlamaForCausalLM
    from trl import SFTConfig, SFTTrainer

    with open(os.path.join(a.input, "manifest.json")) as f:
        manifest = json.load(f)
    rows = []
    with open(os.path.join(a.input, "train.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r["advantage"] > a.min_advantage:
                rows.append({"input_ids": r["input_ids"], "completion_mask": r["completion_mask"]})
    print(f"iteration {manifest['iteration']}: {len(rows)} of {manifest['samples']} samples "
          f"above advantage {a.min_advantage}", flush=True)

    base = original_model(a.base)
    cfg = AutoConfig.from_pretrained(base)
    if getattr(cfg, "head_dim", None) is None:
        cfg.head_dim = cfg.hidden_size // cfg.num_attention_heads
    cfg.tie_word_embeddings = False  # surfgym's decoder has its own lm_head.weight_t
    onnx_tensors = load_file(a.weights)
    embed_model = onnx.load(os.path.join(base, "onnx", "embed_tokens.onnx"))
    embed = next(numpy_helper.to_array(i) for i in embed_model.graph.initializer
                 if i.name == "model.embed_tokens.weight")
    model = LlamaForCausalLM(cfg).float()
    missing, unexpected = model.load_state_dict(
        onnx_to_hf(onnx_tensors, torch.from_numpy(embed.copy()), cfg, torch), strict=False)
    missing = [m for m in missing if "rotary" not in m]
    if missing or unexpected:
        sys.exit(f"the ONNX weights do not fit {cfg.model_type}: missing {missing}, unexpected {unexpected}")
    # The mapping must be exact before any training: back to ONNX gives the input.
    back = hf_to_onnx(model.state_dict(), onnx_tensors.keys(), cfg)
    worst = max((back[n] - onnx_tensors[n]).abs().max().item() for n in onnx_tensors)
    if worst > 1e-5:
        sys.exit(f"ONNX -> transformers -> ONNX moved a weight by {worst}")
    if rows:
        onnx_agrees(model, base, onnx_tensors, embed, rows[0]["input_ids"], cfg)
    # surfgym runs the token embeddings frozen in ONNX Runtime: only the decoder trains.
    model.model.embed_tokens.weight.requires_grad_(False)

    report = {"samples": len(rows), "of": manifest["samples"], "min_advantage": a.min_advantage}
    if rows:
        tokenizer = AutoTokenizer.from_pretrained(base)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        with tempfile.TemporaryDirectory() as scratch:
            args = SFTConfig(
                output_dir=scratch,
                num_train_epochs=a.epochs,
                learning_rate=a.lr,
                per_device_train_batch_size=a.batch_size,
                completion_only_loss=True,
                logging_steps=1,
                save_strategy="no",
                report_to=[],
                use_cpu=not torch.cuda.is_available(),
                bf16=False,
                fp16=False,
            )
            trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                                 processing_class=tokenizer)
            result = trainer.train()
        report["train_loss"] = result.training_loss
        report["steps"] = result.global_step
        print(f"trained: {result.global_step} steps, loss {result.training_loss:.4f}", flush=True)
    else:
        print("nothing to train on: the weights go back unchanged", flush=True)

    out = hf_to_onnx(model.state_dict(), onnx_tensors.keys(), cfg)
    save_file(out, os.path.join(a.output, "weights.safetensors"))
    with open(os.path.join(a.output, "report.json"), "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
