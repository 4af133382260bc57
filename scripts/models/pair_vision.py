#!/usr/bin/env python3
"""Pair a converted text-only Llama model with a tiny random vision encoder (screenshot mode).

    python scripts/models/pair_vision.py --text DIR --out DIR [--seed 0]

``--text`` is a model directory in the layout ``smollm2.py`` (or ``tiny_text.py``) writes: a flat
``llama`` config.json, tokenizer.json, tokenizer_config.json with a chat template,
onnx/embed_tokens.onnx (one Gather over ``model.embed_tokens.weight``) and
onnx/decoder_model_merged.onnx. ``--out`` becomes a model in the onnx-community SmolVLM (Idefics3)
layout that surfgym's loader runs in screenshot (set-of-marks) mode:

    config.json                 idefics3: the text model's config as text_config, a vision_config,
                                image / fake-image / global-image token ids, scale_factor 4
    preprocessor_config.json    Idefics3ImageProcessor settings (one 512x512 tile, no splitting)
    processor_config.json       {"image_seq_len": 64}
    tokenizer.json              the text model's tokenizer + SmolVLM's image tokens appended after its
                                vocabulary, in SmolVLM's order: <global-img>, <row_1_col_1> ...
                                <row_6_col_6>, <fake_token_around_image>, <image> (for SmolLM2:
                                49152 ... 49190, the ids they have in SmolVLM-256M)
    tokenizer_config.json, special_tokens_map.json, chat_template.json
                                the text model's chat template, taught to render image parts as
                                <image> (string contents render exactly as before)
    generation_config.json      the text model's
    onnx/vision_encoder.onnx    tiny random encoder (tiny_vlm.py's) with the text model's width
    onnx/embed_tokens.onnx      the text model's rows unchanged + one row per added token
    onnx/decoder_model_merged.onnx  a relative symlink to the text model's decoder (never a copy)

The decoder's logits stay over the text model's vocabulary (image tokens are never generated);
text_config.vocab_size is that width, the tokenizer is larger. New embedding rows and the vision
projection are scaled to the text model's embedding RMS, so image rows look like token rows in
magnitude. Deterministic from the seed; the text model's outputs on text-only prompts are
unchanged (check_model.py checks it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_onnx  # noqa: E402
import tiny_vlm  # noqa: E402

# SmolVLM's additions to SmolLM2's vocabulary, in its order (ids 49152 ... 49190 there).
IMAGE_TOKENS = (
    ["<global-img>"]
    + [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]
    + ["<fake_token_around_image>", "<image>"]
)

# Per message, the content as a string whether it is one or a list of parts ({"type": "text"|"image"}),
# image parts as <image>. A namespace rather than a macro: surfgym's renderer (minijinja without
# its `macros` feature) has no macros. No whitespace between tags: the output is the same with and
# without trim_blocks/lstrip_blocks.
CONTENT_PRELUDE = (
    "{% set surfgym = namespace(content='') %}{% if message['content'] is string %}"
    "{% set surfgym.content = message['content'] %}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{% set surfgym.content = surfgym.content + '<image>' %}"
    "{% elif part['type'] == 'text' %}{% set surfgym.content = surfgym.content + part['text'] %}{% endif %}"
    "{% endfor %}{% endif %}"
)


def fail(msg: str) -> None:
    raise SystemExit(f"pair_vision: {msg}")


def read_json(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def vision_template(template: str) -> str:
    """The text model's chat template with image parts rendered as <image>.

    Text-only templates insert ``message['content']`` as a string inside
    ``{% for message in messages %}``; the loop body now starts by flattening the content to
    such a string, which every use of ``message['content']`` then reads, so string contents
    render byte-identically (check_template verifies it).
    """
    hook = "message['content']"
    loop = re.search(r"\{%-?\s*for message in messages\s*-?%\}", template)
    if hook not in template or loop is None:
        fail(f"the chat template has no {hook} inside a `for message in messages` loop: cannot teach it image parts")
    head, body = template[:loop.end()], template[loop.end():]
    return head + CONTENT_PRELUDE + body.replace(hook, "surfgym.content")


def render(template: str, messages: list, tokenizer_config: dict) -> str:
    import jinja2

    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)  # as transformers renders chat templates
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=True,
        bos_token=tokenizer_config.get("bos_token", ""), eos_token=tokenizer_config.get("eos_token", ""))


def check_template(old: str, new: str, tokenizer_config: dict) -> None:
    """The new template must render text-only chats exactly as the old one, and image parts as <image>."""
    chats = [
        [{"role": "user", "content": "What is the capital of France?"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
         {"role": "assistant", "content": "click(3)"}, {"role": "user", "content": "Next?"}],
    ]
    for chat in chats:
        if render(new, chat, tokenizer_config) != render(old, chat, tokenizer_config):
            fail("the paired chat template renders a text-only chat differently")
        parts = [{**m, "content": [{"type": "text", "text": m["content"]}]} for m in chat]
        if render(new, parts, tokenizer_config) != render(old, chat, tokenizer_config):
            fail("the paired chat template renders text parts differently from text")
    with_image = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Click login."}]}]
    as_text = [{"role": "user", "content": "<image>Click login."}]
    if render(new, with_image, tokenizer_config) != render(old, as_text, tokenizer_config):
        fail("the paired chat template does not render an image part as <image>")


def embedding_table(path: str) -> np.ndarray:
    """The [vocab, hidden] table of an embed_tokens.onnx that is one Gather over an initializer."""
    model = onnx.load(path)
    nodes = [n for n in model.graph.node if n.op_type == "Gather" and "inputs_embeds" in n.output]
    inits = {t.name: t for t in model.graph.initializer}
    if len(nodes) != 1 or nodes[0].input[0] not in inits:
        fail(f"{path}: not a single Gather over an initializer (only converted models can be paired)")
    table = numpy_helper.to_array(inits[nodes[0].input[0]])
    if table.dtype != np.float32 or table.ndim != 2:
        fail(f"{path}: embedding table is {table.dtype} {table.shape}, want float32 [vocab, hidden]")
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--text", required=True, help="converted text-only model directory")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--seed", type=int, default=0, help="seed of the vision encoder and the new rows (default 0)")
    args = ap.parse_args()
    from tokenizers import AddedToken, Tokenizer

    src, out = os.path.abspath(args.text), os.path.abspath(args.out)
    text_config = read_json(os.path.join(src, "config.json"))
    if "text_config" in text_config or "vision_config" in text_config:
        fail(f"{src} already has a vision part")
    if text_config.get("model_type") != "llama":
        fail(f"{src}: model_type {text_config.get('model_type')!r}, want llama")
    tok_cfg = read_json(os.path.join(src, "tokenizer_config.json"))
    special_map = read_json(os.path.join(src, "special_tokens_map.json"))
    generation = read_json(os.path.join(src, "generation_config.json"))
    src_decoder = os.path.join(src, "onnx", "decoder_model_merged.onnx")
    if not os.path.isfile(src_decoder):
        fail(f"{src_decoder} missing")

    tok = Tokenizer.from_file(os.path.join(src, "tokenizer.json"))
    base = tok.get_vocab_size(with_added_tokens=True)
    if any(tok.token_to_id(t) is not None for t in IMAGE_TOKENS):
        fail(f"{src}: the tokenizer already has image tokens")
    table = embedding_table(os.path.join(src, "onnx", "embed_tokens.onnx"))
    lm_vocab, hidden = table.shape
    if base != lm_vocab or text_config.get("vocab_size") != lm_vocab:
        fail(f"tokenizer size {base}, embedding rows {lm_vocab}, vocab_size {text_config.get('vocab_size')}: "
             "all three must agree")
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in IMAGE_TOKENS])
    ids = {t: tok.token_to_id(t) for t in IMAGE_TOKENS}
    if [ids[t] for t in IMAGE_TOKENS] != list(range(base, base + len(IMAGE_TOKENS))):
        fail(f"image tokens did not get consecutive ids after the vocabulary: {ids}")

    template = tok_cfg.get("chat_template")
    if not isinstance(template, str):
        fail("tokenizer_config.json has no chat_template string")
    paired_template = vision_template(template)
    check_template(template, paired_template, tok_cfg)

    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    rms = float(np.sqrt(np.mean(np.square(table, dtype=np.float64))))
    rng = np.random.RandomState(args.seed)
    vision = tiny_vlm.build_vision_encoder(rng, hidden, out_scale=rms)
    new_rows = (rng.standard_normal((len(IMAGE_TOKENS), hidden)) * rms).astype(np.float32)
    llama_onnx.save_model(vision, os.path.join(out, "onnx", "vision_encoder.onnx"))
    llama_onnx.save_model(llama_onnx.build_embed_tokens(np.concatenate([table, new_rows])),
                          os.path.join(out, "onnx", "embed_tokens.onnx"))
    del table
    # Relative, so the pair survives moving the models directory (both move together).
    for name in sorted(os.listdir(os.path.join(src, "onnx"))):
        if name.startswith("decoder_model_merged.onnx"):  # the graph and any external-data files
            link = os.path.join(out, "onnx", name)
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(os.path.relpath(os.path.join(src, "onnx", name), os.path.join(out, "onnx")), link)
    llama_onnx.save_tokenizer(tok, os.path.join(out, "tokenizer.json"))

    image_id, fake_id, global_id = ids["<image>"], ids["<fake_token_around_image>"], ids["<global-img>"]
    source_info = text_config.pop("surfgym", {})
    config = {
        "architectures": ["Idefics3ForConditionalGeneration"],
        "model_type": "idefics3",
        "image_token_id": image_id,
        "fake_image_token_id": fake_id,
        "global_image_token_id": global_id,
        "scale_factor": tiny_vlm.SCALE_FACTOR,
        "tie_word_embeddings": bool(text_config.get("tie_word_embeddings", False)),
        "use_cache": True,
        "torch_dtype": "float32",
        "bos_token_id": text_config.get("bos_token_id"),
        "eos_token_id": text_config.get("eos_token_id"),
        "pad_token_id": text_config.get("pad_token_id"),
        "vision_config": {
            "model_type": "idefics3_vision",
            "image_size": tiny_vlm.IMAGE_SIZE,
            "patch_size": tiny_vlm.PATCH_SIZE,
            "num_channels": 3,
            "hidden_size": tiny_vlm.VISION_WIDTH,
            "intermediate_size": 0,
            "num_hidden_layers": 0,
            "num_attention_heads": 1,
            "max_image_size": {"longest_edge": tiny_vlm.IMAGE_SIZE},
            "size": {"longest_edge": tiny_vlm.IMAGE_SIZE},
        },
        # vocab_size stays the decoder's logits width; the tokenizer and embed_tokens are larger.
        "text_config": text_config,
        "surfgym": {
            "generator": "scripts/models/pair_vision.py",
            "seed": args.seed,
            "paired_with": os.path.relpath(src, out),  # from this directory
            "text_model": source_info,
            "embed_rows": lm_vocab + len(IMAGE_TOKENS),
            "note": "language model: the text model's decoder (symlinked); vision encoder: random weights",
        },
    }
    w = tiny_vlm.write_json
    w(os.path.join(out, "config.json"), config)
    w(os.path.join(out, "generation_config.json"), generation)
    tiny_vlm.write_processor_configs(out)
    w(os.path.join(out, "chat_template.json"), {"chat_template": paired_template})
    added = {str(ids[t]): tiny_vlm.added_token_entry(t) for t in IMAGE_TOKENS}
    extra = list(tok_cfg.get("additional_special_tokens", [])) + ["<fake_token_around_image>", "<image>"]
    w(os.path.join(out, "tokenizer_config.json"), {
        **tok_cfg,
        "added_tokens_decoder": {**tok_cfg.get("added_tokens_decoder", {}), **added},
        "additional_special_tokens": extra,
        "chat_template": paired_template,
        "extra_special_tokens": {"fake_image_token": "<fake_token_around_image>", "image_token": "<image>",
                                 "global_image_token": "<global-img>"},
        "processor_class": "Idefics3Processor",
        "vocab_size": lm_vocab + len(IMAGE_TOKENS),
    })
    w(os.path.join(out, "special_tokens_map.json"), {**special_map, "additional_special_tokens": extra})
    print(f"pair_vision: wrote {out} ({os.path.basename(src)} + tiny vision encoder, width {hidden}; "
          f"image tokens {base}..{base + len(IMAGE_TOKENS) - 1}, <image> {image_id}; embedding RMS {rms:.4f})")


if __name__ == "__main__":
    main()
