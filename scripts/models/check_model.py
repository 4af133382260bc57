#!/usr/bin/env python3
"""Check a model directory in the onnx-community SmolVLM or Qwen2-VL layout with ONNX Runtime.

    python scripts/models/check_model.py DIR [--compare JSON]

Prints one PASS/FAIL line per check and exits non-zero if any failed. Works on the tiny VLM
(tiny_vlm.py) and on text-only conversions (smollm2.py): vision checks are skipped when
DIR/onnx/vision_encoder.onnx is absent.

The helpers here (``Model``) are also a small reference of the generation loop a loader has to
implement: embed -> (merge image features) -> decoder with KV cache -> greedy next token.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen2vl_ref as qwen2vl  # noqa: E402

TOL = 1e-4  # max |logit difference|; for large logits also accepted: TOL_REL * max |logit| (fp32 rounding scales)
TOL_REL = 1e-5
RESULTS: list[bool] = []


def close(diff: float, scale: float) -> tuple[bool, str]:
    rel = diff / max(scale, 1e-30)
    ok = diff < TOL or rel < TOL_REL
    return ok, f"max |dlogit| {diff:.2e} (max |logit| {scale:.1f}, relative {rel:.1e})"


def report(name: str, ok: bool, detail: str = "") -> bool:
    RESULTS.append(bool(ok))
    print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    return bool(ok)


def info(msg: str) -> None:
    print(f"INFO {msg}", flush=True)


class Model:
    def __init__(self, path: str, sessions: bool = True):
        """``sessions=False``: configs and tokenizer only (for rendering and tokenizing)."""
        self.path = path
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            self.config = json.load(f)
        self.text_config = self.config.get("text_config", self.config)
        tc_path = os.path.join(path, "tokenizer_config.json")
        self.tokenizer_config = json.load(open(tc_path, encoding="utf-8")) if os.path.exists(tc_path) else {}
        self.tokenizer = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
        if not sessions:
            return
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        onnx_dir = os.path.join(path, "onnx")
        self.embed = ort.InferenceSession(os.path.join(onnx_dir, "embed_tokens.onnx"), opts, providers=["CPUExecutionProvider"])
        self.decoder = ort.InferenceSession(
            os.path.join(onnx_dir, "decoder_model_merged.onnx"), opts, providers=["CPUExecutionProvider"]
        )
        vpath = os.path.join(onnx_dir, "vision_encoder.onnx")
        self.vision = (
            ort.InferenceSession(vpath, opts, providers=["CPUExecutionProvider"]) if os.path.exists(vpath) else None
        )
        self.n_layers = sum(1 for i in self.decoder.get_inputs() if i.name.endswith(".key"))
        self.n_kv = self.text_config["num_key_value_heads"]
        self.head_dim = self.text_config.get("head_dim") or self.text_config["hidden_size"] // self.text_config[
            "num_attention_heads"
        ]

    # --- reference pieces of the generation loop ---------------------------------------------
    def embed_ids(self, ids: np.ndarray) -> np.ndarray:
        return self.embed.run(["inputs_embeds"], {"input_ids": ids.astype(np.int64)})[0]

    def empty_past(self, batch: int) -> dict:
        z = np.zeros((batch, self.n_kv, 0, self.head_dim), np.float32)
        return {f"past_key_values.{i}.{k}": z for i in range(self.n_layers) for k in ("key", "value")}

    @property
    def mrope(self) -> bool:
        """Qwen2-VL decoders take position_ids [3, batch, seq]."""
        return len(next(i for i in self.decoder.get_inputs() if i.name == "position_ids").shape) == 3

    def step(self, embeds: np.ndarray, attention_mask: np.ndarray, position_ids: np.ndarray, past: dict):
        if self.mrope and position_ids.ndim == 2:
            position_ids = np.stack([position_ids] * 3)  # text: the same position on every axis
        feeds = {"inputs_embeds": embeds, "attention_mask": attention_mask.astype(np.int64),
                 "position_ids": position_ids.astype(np.int64), **past}
        names = ["logits"] + [f"present.{i}.{k}" for i in range(self.n_layers) for k in ("key", "value")]
        outs = self.decoder.run(names, feeds)
        present = {n.replace("present.", "past_key_values."): o for n, o in zip(names[1:], outs[1:])}
        return outs[0], present

    def greedy(self, ids: list[int], n_new: int, stop_ids=()) -> tuple[list[int], list[np.ndarray]]:
        """Greedy decoding of one prompt with the KV cache; returns new ids and per-step logits."""
        embeds = self.embed_ids(np.array([ids]))
        mask = np.ones((1, len(ids)), np.int64)
        pos = np.arange(len(ids))[None]
        logits, past = self.step(embeds, mask, pos, self.empty_past(1))
        new, step_logits = [], []
        for _ in range(n_new):
            step_logits.append(logits[0, -1])
            nxt = int(np.argmax(logits[0, -1]))
            new.append(nxt)
            if nxt in stop_ids:
                break
            total = mask.shape[1]
            mask = np.ones((1, total + 1), np.int64)
            logits, past = self.step(self.embed_ids(np.array([[nxt]])), mask, np.array([[total]]), past)
        return new, step_logits

    def special_ids(self) -> dict:
        return {t["content"]: t["id"] for t in json.loads(open(os.path.join(self.path, "tokenizer.json")).read())["added_tokens"]}

    def stop_ids(self) -> set:
        stops = set()
        for cfg in (self.config, self.text_config):
            e = cfg.get("eos_token_id")
            stops.update(e if isinstance(e, list) else [e] if e is not None else [])
        gpath = os.path.join(self.path, "generation_config.json")
        if os.path.exists(gpath):
            e = json.load(open(gpath)).get("eos_token_id")
            stops.update(e if isinstance(e, list) else [e] if e is not None else [])
        return stops

    def render_chat(self, messages: list, add_generation_prompt: bool = True) -> str:
        import jinja2

        env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)  # as transformers renders chat templates
        return env.from_string(self.tokenizer_config["chat_template"]).render(
            messages=messages, add_generation_prompt=add_generation_prompt,
            bos_token=self.tokenizer_config.get("bos_token", ""), eos_token=self.tokenizer_config.get("eos_token", ""))

    @property
    def is_vlm(self) -> bool:
        return self.vision is not None

    @property
    def paired_with(self) -> str | None:
        """The text model a pair_vision.py model was made from (its directory), if it is one."""
        rel = self.config.get("surfgym", {}).get("paired_with")
        return os.path.normpath(os.path.join(self.path, rel)) if rel else None

    @property
    def is_qwen(self) -> bool:
        return self.config.get("model_type") in ("qwen2_vl", "qwen2_5_vl")

    def user_message(self, text: str, image: bool = False) -> list:
        if self.is_vlm:
            content = ([{"type": "image"}] if image else []) + [{"type": "text", "text": text}]
            return [{"role": "user", "content": content}]
        return [{"role": "user", "content": text}]

    def expand_image_tokens(self, prompt: str) -> str:
        """Idefics3Processor expansion of each <image> for an unsplit image (rows = cols = 0)."""
        n = self.image_seq_len()
        return prompt.replace("<image>", "<fake_token_around_image><global-img>" + "<image>" * n + "<fake_token_around_image>")

    def image_seq_len(self) -> int:
        vc = self.config["vision_config"]
        return (vc["image_size"] // vc["patch_size"]) ** 2 // self.config["scale_factor"] ** 2


def io_checks(m: Model) -> None:
    def sig(sess):
        return ({i.name: (i.type, len(i.shape), i.shape) for i in sess.get_inputs()},
                {o.name: (o.type, len(o.shape), o.shape) for o in sess.get_outputs()})

    def expect(name, got, want):
        problems = []
        if set(got) != set(want):
            problems.append(f"names {sorted(got)} != {sorted(want)}")
        for k, (t, r) in want.items():
            if k in got and (got[k][0] != t or got[k][1] != r):
                problems.append(f"{k}: {got[k][0]} rank {got[k][1]}, want {t} rank {r}")
        detail = "; ".join(problems) if problems else ", ".join(f"{k}{list(v[2])}" for k, v in list(got.items())[:4])
        report(name, not problems, detail + (" ..." if not problems and len(got) > 4 else ""))

    hidden = m.text_config["hidden_size"]
    ins, outs = sig(m.embed)
    expect("embed_tokens inputs", ins, {"input_ids": ("tensor(int64)", 2)})
    expect("embed_tokens outputs", outs, {"inputs_embeds": ("tensor(float)", 3)})
    report("embed_tokens hidden size", outs["inputs_embeds"][2][-1] == hidden, f"{outs['inputs_embeds'][2][-1]} == {hidden}")
    last = m.tokenizer.get_vocab_size(with_added_tokens=True) - 1
    try:
        row = m.embed_ids(np.array([[last]]))
        ok, detail = bool(np.isfinite(row).all()), f"id {last} embeds"
    except Exception as e:  # onnxruntime rejects an out-of-range Gather index
        ok, detail = False, f"id {last}: {e}"
    report("embed_tokens has a row for every tokenizer id", ok, detail)

    ins, outs = sig(m.decoder)
    want_in = {"inputs_embeds": ("tensor(float)", 3), "attention_mask": ("tensor(int64)", 2),
               "position_ids": ("tensor(int64)", 3 if m.is_qwen else 2)}
    want_out = {"logits": ("tensor(float)", 3)}
    n_layers = m.text_config["num_hidden_layers"]
    for i in range(n_layers):
        for k in ("key", "value"):
            want_in[f"past_key_values.{i}.{k}"] = ("tensor(float)", 4)
            want_out[f"present.{i}.{k}"] = ("tensor(float)", 4)
    expect("decoder inputs", ins, want_in)
    expect("decoder outputs", outs, want_out)
    pk = ins.get("past_key_values.0.key", (None, 0, [None] * 4))[2]
    report("decoder kv shape [batch, kv_heads, past, head_dim]",
           list(pk[1:2]) + list(pk[3:4]) == [m.n_kv, m.head_dim] and isinstance(pk[0], str) and isinstance(pk[2], str),
           str(list(pk)))
    report("decoder vocab", outs["logits"][2][-1] == m.text_config["vocab_size"],
           f"{outs['logits'][2][-1]} == {m.text_config['vocab_size']}")
    if m.is_qwen:
        ins, outs = sig(m.vision)
        grid = "image_grid_thw" if "image_grid_thw" in ins else "grid_thw"
        expect("vision_encoder inputs", ins, {"pixel_values": ("tensor(float)", 2), grid: ("tensor(int64)", 2)})
        expect("vision_encoder outputs", outs, {"image_features": ("tensor(float)", 2)})
    elif m.is_vlm:
        ins, outs = sig(m.vision)
        expect("vision_encoder inputs", ins, {"pixel_values": ("tensor(float)", 5),
                                              "pixel_attention_mask": ("tensor(bool)", 4)})
        expect("vision_encoder outputs", outs, {"image_features": ("tensor(float)", 3)})


def cache_check(m: Model, ids: list[int], n_new: int = 12) -> list[int]:
    new, step_logits = m.greedy(ids, n_new)
    full = ids + new[:-1]
    logits, _ = m.step(m.embed_ids(np.array([full])), np.ones((1, len(full)), np.int64),
                       np.arange(len(full))[None], m.empty_past(1))
    ref = logits[0, len(ids) - 1:]
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(step_logits, ref))
    same_tokens = [int(x) for x in np.argmax(ref, -1)] == new
    ok, detail = close(diff, float(np.abs(ref).max()))
    report(f"greedy {n_new} tokens with KV cache == full recompute", ok and same_tokens,
           f"{detail}, tokens {'equal' if same_tokens else 'DIFFER'}")
    info(f"greedy continuation: {m.tokenizer.decode(new, skip_special_tokens=False)!r}")
    return new


def batch_check(m: Model, prompts: list[list[int]], n_steps: int = 3) -> None:
    """Left-padded batch == each prompt alone (prefill at all real positions + a few cached steps)."""
    pad_id = m.text_config.get("pad_token_id") or 0
    b = len(prompts)
    width = max(len(p) for p in prompts)
    ids = np.full((b, width), pad_id, np.int64)
    mask = np.zeros((b, width), np.int64)
    for r, p in enumerate(prompts):
        ids[r, width - len(p):] = p
        mask[r, width - len(p):] = 1
    pos = np.cumsum(mask, -1) - 1
    pos[mask == 0] = 1  # as transformers: position_ids.masked_fill_(attention_mask == 0, 1)
    logits, past = m.step(m.embed_ids(ids), mask, pos, m.empty_past(b))

    alone = []
    for p in prompts:
        new, step_logits = m.greedy(p, n_steps + 1)
        l0, _ = m.step(m.embed_ids(np.array([p])), np.ones((1, len(p)), np.int64), np.arange(len(p))[None],
                       m.empty_past(1))
        alone.append((new, l0[0], step_logits))
    prefill = max(float(np.max(np.abs(logits[r, width - len(p):] - alone[r][1]))) for r, p in enumerate(prompts))
    step_diff = 0.0
    for s in range(n_steps):
        # Teacher-force each row with its own greedy token from the single-prompt run.
        nxt = np.array([[alone[r][0][s]] for r in range(b)], np.int64)
        step_diff = max(step_diff, max(float(np.max(np.abs(logits[r, -1] - alone[r][2][s]))) for r in range(b)))
        next_pos = pos[:, -1:] + 1
        mask = np.concatenate([mask, np.ones((b, 1), np.int64)], 1)
        pos = next_pos
        logits, past = m.step(m.embed_ids(nxt), mask, pos, past)
    step_diff = max(step_diff, max(float(np.max(np.abs(logits[r, -1] - alone[r][2][n_steps]))) for r in range(b)))
    lens = [len(p) for p in prompts]
    scale = max(float(np.abs(a[1]).max()) for a in alone)
    ok, detail = close(prefill, scale)
    report(f"left-padded batch of {b} (lengths {lens}) == each alone, prefill", ok, detail)
    ok, detail = close(step_diff, scale)
    report(f"left-padded batch of {b}, {n_steps} cached decode steps == each alone", ok, detail)


def vision_checks(m: Model) -> None:
    vc = m.config["vision_config"]
    size = vc["image_size"]
    n_tok, hidden = m.image_seq_len(), m.text_config["hidden_size"]
    rng = np.random.RandomState(1)
    pv = rng.uniform(-1, 1, (1, 2, 3, size, size)).astype(np.float32)
    out = m.vision.run(["image_features"], {"pixel_values": pv, "pixel_attention_mask": np.ones((1, 2, size, size), bool)})[0]
    report("vision_encoder output shape", out.shape == (2, n_tok, hidden), f"{out.shape} == {(2, n_tok, hidden)}")
    # batch_size 2 x 1 image == each alone (rows are ordered batch-major, then image).
    both = m.vision.run(["image_features"], {"pixel_values": pv.reshape(2, 1, 3, size, size),
                                             "pixel_attention_mask": np.ones((2, 1, size, size), bool)})[0]
    one = m.vision.run(["image_features"], {"pixel_values": pv[:, 1:2], "pixel_attention_mask": np.ones((1, 1, size, size), bool)})[0]
    d = float(np.abs(both[1] - one[0]).max()) if both.shape[0] == 2 else float("inf")
    report("vision_encoder batch rows == single runs", d < 1e-4, f"max diff {d:.2e}")
    if "surfgym" not in m.config:
        info("masked-padding checks skipped: they test a property of the models generated here "
             "(a real SigLIP tower does not zero masked patches)")
        return
    pm = np.ones((1, 2, size, size), bool)
    pm[0, 1] = False  # second image is padding
    out = m.vision.run(["image_features"], {"pixel_values": pv, "pixel_attention_mask": pm})[0]
    report("vision_encoder fully masked image -> zeros",
           out.shape[0] == 2 and float(np.abs(out[1]).max()) == 0.0 and float(np.abs(out[0]).max()) > 0,
           f"max |padding row| {float(np.abs(out[-1]).max())}, max |real row| {float(np.abs(out[0]).max()):.3f}")
    # Pixel values under the mask (patch-aligned) do not matter; masked token groups are zero.
    pm2 = np.zeros((1, 1, size, size), bool)
    pm2[0, 0, : size // 2, : 3 * size // 4] = True
    pv2 = pv[:, :1].copy()
    a = m.vision.run(["image_features"], {"pixel_values": pv2, "pixel_attention_mask": pm2})[0]
    pv2[:, :, :, size // 2:, :] = 0.0
    pv2[:, :, :, :, 3 * size // 4:] = 0.0
    b = m.vision.run(["image_features"], {"pixel_values": pv2, "pixel_attention_mask": pm2})[0]
    side = int(np.sqrt(n_tok))
    grid = a.reshape(side, side, hidden)
    report("vision_encoder pixels under the mask are ignored", float(np.abs(a - b).max()) == 0.0
           and float(np.abs(grid[side // 2:]).max()) == 0.0 and float(np.abs(grid[:, 3 * side // 4:]).max()) == 0.0,
           f"max diff {float(np.abs(a - b).max())}")


def multimodal_check(m: Model) -> None:
    """Prompt with one image: expand <image>, merge image_features into the <image> rows, decode."""
    image_id = m.config["image_token_id"]
    prompt = m.expand_image_tokens(m.render_chat(m.user_message("What is on this page?", image=True)))
    ids = m.tokenizer.encode(prompt, add_special_tokens=False).ids
    n_img = sum(1 for t in ids if t == image_id)
    size = m.config["vision_config"]["image_size"]
    pv = np.random.RandomState(2).uniform(-1, 1, (1, 1, 3, size, size)).astype(np.float32)
    feats = m.vision.run(["image_features"], {"pixel_values": pv, "pixel_attention_mask": np.ones((1, 1, size, size), bool)})[0]
    emb = m.embed_ids(np.array([ids]))
    emb[0, np.array(ids) == image_id] = feats.reshape(-1, feats.shape[-1])  # k-th <image> <- k-th feature row
    logits, _ = m.step(emb, np.ones((1, len(ids)), np.int64), np.arange(len(ids))[None], m.empty_past(1))
    report("multimodal prompt: <image> count == image_seq_len, merged logits finite",
           n_img == m.image_seq_len() and bool(np.isfinite(logits).all()),
           f"{len(ids)} prompt tokens, {n_img} <image> tokens")
    # The image rows must reach the decoder: another image gives other logits.
    pv2 = np.random.RandomState(3).uniform(-1, 1, pv.shape).astype(np.float32)
    feats2 = m.vision.run(["image_features"], {"pixel_values": pv2, "pixel_attention_mask": np.ones((1, 1, size, size), bool)})[0]
    emb2 = emb.copy()
    emb2[0, np.array(ids) == image_id] = feats2.reshape(-1, feats2.shape[-1])
    logits2, _ = m.step(emb2, np.ones((1, len(ids)), np.int64), np.arange(len(ids))[None], m.empty_past(1))
    d = float(np.abs(logits2[0, -1] - logits[0, -1]).max())
    report("multimodal prompt: another image changes the next-token logits", d > 1e-3, f"max |dlogit| {d:.3f}")
    if m.paired_with:
        info(f"image feature RMS {float(np.sqrt(np.mean(feats ** 2))):.4f}, "
             f"token embedding RMS {float(np.sqrt(np.mean(emb[0, np.array(ids) != image_id] ** 2))):.4f}")
        # Greedy decoding of the screenshot prompt (what screenshot mode runs).
        past = m.empty_past(1)
        mask = np.ones((1, len(ids)), np.int64)
        logits, past = m.step(emb, mask, np.arange(len(ids))[None], past)
        new = []
        for _ in range(12):
            nxt = int(np.argmax(logits[0, -1]))
            new.append(nxt)
            if nxt in m.stop_ids():
                break
            mask = np.ones((1, mask.shape[1] + 1), np.int64)
            logits, past = m.step(m.embed_ids(np.array([[nxt]])), mask, np.array([[mask.shape[1] - 1]]), past)
        report("screenshot prompt decodes", len(new) > 0 and all(t < logits.shape[-1] for t in new),
               repr(m.tokenizer.decode(new, skip_special_tokens=False)))


def tokenizer_checks(m: Model) -> None:
    specials = m.special_ids()
    text = "User: héllo wörld ✓ 日本語 click(12) type(3, \"a b\") answer(\"42\") https://example.com/?q=1&x=2\n\ttabs  "
    text = "".join(f"{tok} {text}" if i % 2 else tok for i, tok in enumerate(specials)) + text
    enc = m.tokenizer.encode(text, add_special_tokens=False)
    dec = m.tokenizer.decode(enc.ids, skip_special_tokens=False)
    report(f"tokenizer round-trips text with all {len(specials)} special tokens", dec == text,
           f"{len(enc.ids)} tokens" if dec == text else f"decoded {dec!r}")
    single = all(m.tokenizer.encode(t, add_special_tokens=False).ids == [i] for t, i in specials.items())
    report("each special token encodes to its single id", single)
    cfg_ok = True
    detail = []
    for key, tok in (("bos_token", "bos_token_id"), ("eos_token", "eos_token_id"), ("pad_token", "pad_token_id")):
        name = m.tokenizer_config.get(key)
        want = m.text_config.get(tok)
        if isinstance(name, dict):
            name = name.get("content")
        if name is not None and want is not None:
            got = m.tokenizer.token_to_id(name)
            cfg_ok &= got == want
            detail.append(f"{key} {name}={got}")
    if m.is_qwen:
        for key, name in (("image_token_id", "<|image_pad|>"), ("vision_start_token_id", "<|vision_start|>"),
                          ("vision_end_token_id", "<|vision_end|>")):
            cfg_ok &= m.tokenizer.token_to_id(name) == m.config[key]
            detail.append(f"{name}={m.config[key]}")
    elif m.is_vlm:
        for key, name in (("image_token_id", "<image>"), ("fake_image_token_id", "<fake_token_around_image>"),
                          ("global_image_token_id", "<global-img>")):
            if key in m.config:
                cfg_ok &= m.tokenizer.token_to_id(name) == m.config[key]
                detail.append(f"{name}={m.config[key]}")
    report("config/tokenizer_config special token ids agree with tokenizer.json", cfg_ok, ", ".join(detail))
    # Chat template renders as expected.
    if m.is_qwen:
        msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Click login."}]},
                {"role": "assistant", "content": [{"type": "text", "text": "click(12)"}]}]
        want = ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
                "<|vision_start|><|image_pad|><|vision_end|>Click login.<|im_end|>\n<|im_start|>assistant\n"
                "click(12)<|im_end|>\n<|im_start|>assistant\n")
    elif m.is_vlm and m.paired_with:
        # The text model's template, with each list of parts rendered as its texts and <image>s.
        msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Click login."}]},
                {"role": "assistant", "content": [{"type": "text", "text": "click(12)"}]},
                {"role": "user", "content": "Now?"}]
        flat = [{"role": "user", "content": "<image>Click login."}, {"role": "assistant", "content": "click(12)"},
                {"role": "user", "content": "Now?"}]
        text = Model(m.paired_with, sessions=False)
        want = text.render_chat(flat)
    elif m.is_vlm:
        msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Click login."}]},
                {"role": "assistant", "content": [{"type": "text", "text": "click(12)"}]},
                {"role": "user", "content": [{"type": "text", "text": "Now?"}]}]
        want = ("<|im_start|>User:<image>Click login.<end_of_utterance>\nAssistant: click(12)<end_of_utterance>\n"
                "User: Now?<end_of_utterance>\nAssistant:")
    else:
        msgs = [{"role": "user", "content": "Hi"}]
        want = None
    got = m.render_chat(msgs)
    if want is not None:
        kind = "Qwen2-VL" if m.is_qwen else "the text model's (image parts as <image>)" if m.paired_with else "SmolVLM"
        report(f"chat template renders {kind} turns", got == want, repr(got))
    else:
        ok = "<|im_start|>user\nHi<|im_end|>\n" in got and got.endswith("<|im_start|>assistant\n")
        report("chat template renders ChatML turns", ok, repr(got))


def pretrained_check(m: Model) -> None:
    """A converted pretrained model (SmolLM2) must write sensible, stable English: the greedy
    continuation of a fixed plain-text prompt names the expected word, the same both times."""
    prompt, expected = "The capital of France is", "Paris"
    ids = m.tokenizer.encode(prompt, add_special_tokens=False).ids
    runs = [m.greedy(ids, 8, stop_ids=m.stop_ids())[0] for _ in range(2)]
    texts = [m.tokenizer.decode(r, skip_special_tokens=True) for r in runs]
    report(f"greedy continuation of {prompt!r} contains {expected!r}", expected in texts[0], repr(texts[0]))
    report("greedy continuation is identical across two runs", runs[0] == runs[1], f"{texts[0]!r} vs {texts[1]!r}")


def paired_check(m: Model) -> None:
    """A pair_vision.py model: its language model is the text model's, untouched. Text-only prompts
    tokenize, render, embed and decode exactly as with the text model."""
    text = Model(m.paired_with)
    same = os.path.samefile(os.path.join(m.path, "onnx", "decoder_model_merged.onnx"),
                            os.path.join(text.path, "onnx", "decoder_model_merged.onnx"))
    report("decoder is the text model's file (linked, not copied)", same,
           os.path.relpath(os.path.realpath(os.path.join(m.path, "onnx", "decoder_model_merged.onnx")), m.path))
    n = text.tokenizer.get_vocab_size(with_added_tokens=True)
    added = {t: i for t, i in m.special_ids().items() if text.tokenizer.token_to_id(t) is None}
    report("image tokens appended after the text model's vocabulary",
           sorted(added.values()) == list(range(n, n + len(added))) and m.config["image_token_id"] in added.values(),
           f"{len(added)} tokens, ids {min(added.values(), default=None)}..{max(added.values(), default=None)}")
    sample = "User: héllo wörld ✓ click(12) type(3, \"a b\") <|im_start|>assistant\n https://example.com/?q=1"
    report("text tokenizes as with the text model",
           m.tokenizer.encode(sample, add_special_tokens=False).ids == text.tokenizer.encode(sample, add_special_tokens=False).ids)
    ids = np.arange(n)[None]
    d = float(np.abs(m.embed_ids(ids) - text.embed_ids(ids)).max())
    report("embedding rows of the text vocabulary unchanged", d == 0.0, f"{n} rows, max diff {d}")
    chat = [{"role": "user", "content": "What is the capital of France?"}]
    rendered = m.render_chat(chat)
    report("text-only chat renders as with the text model", rendered == text.render_chat(chat),
           repr(rendered[-60:]))
    for prompt in (rendered, "The capital of France is"):
        p_ids = m.tokenizer.encode(prompt, add_special_tokens=False).ids
        a, la = m.greedy(p_ids, 12, stop_ids=m.stop_ids())
        b, lb = text.greedy(p_ids, 12, stop_ids=text.stop_ids())
        d = max((float(np.abs(x - y).max()) for x, y in zip(la, lb)), default=0.0)
        report(f"greedy continuation identical to the text model's ({len(p_ids)}-token prompt)",
               a == b and d == 0.0, f"{m.tokenizer.decode(a, skip_special_tokens=False)!r}, max |dlogit| {d}")


def main() -> None:
    ap = argparse.ArgumentParser(description="Check a model directory with ONNX Runtime")
    ap.add_argument("dir")
    ap.add_argument("--compare", metavar="JSON",
                    help="only compare a loader's Qwen2-VL preprocessing, image tokens and M-RoPE positions "
                         "(written by surfgym's tests) with the reference in qwen2vl_ref.py")
    args = ap.parse_args()
    m = Model(args.dir)
    if args.compare:
        qwen2vl.compare(m, args.compare, report)
        n_fail = RESULTS.count(False)
        print(f"{len(RESULTS) - n_fail} passed, {n_fail} failed")
        sys.exit(1 if n_fail else 0)
    info(f"{args.dir}: model_type {m.config.get('model_type')}, {m.n_layers} layers, vocab {m.text_config['vocab_size']}, "
         f"onnxruntime {ort.__version__}, vision {'yes' if m.is_vlm else 'no (text-only: vision checks skipped)'}")
    io_checks(m)
    tokenizer_checks(m)
    prompt = m.render_chat(m.user_message("What is the capital of France?"))
    ids = m.tokenizer.encode(prompt, add_special_tokens=False).ids
    cache_check(m, ids, 12)
    prompts = [m.render_chat(m.user_message(t)) for t in
               ("Hi", "Click the login button on this page, please.", "What is 2+2?")]
    batch_check(m, [m.tokenizer.encode(p, add_special_tokens=False).ids for p in prompts])
    if m.is_qwen:
        qwen2vl.vision_checks(m, report)
        qwen2vl.multimodal_checks(m, report, close)
    elif m.is_vlm:
        vision_checks(m)
        multimodal_check(m)
    if m.paired_with:
        paired_check(m)
    surfgym = m.config.get("surfgym", {})
    if "converted_from" in surfgym or "converted_from" in surfgym.get("text_model", {}):
        pretrained_check(m)
    n_fail = RESULTS.count(False)
    print(f"{len(RESULTS) - n_fail} passed, {n_fail} failed")
    sys.exit(1 if n_fail else 0)


if __name__ == "__main__":
    main()
