#!/usr/bin/env python3
"""Write a tiny random-weight vision-language model in the onnx-community Qwen2-VL export layout.

    python scripts/models/tiny_qwen2vl.py --out DIR [--seed 0]

Byte-for-byte deterministic for a given seed (and the pinned package versions):

    DIR/config.json                  Qwen2-VL-style config (model_type "qwen2_vl", rope_scaling mrope)
    DIR/generation_config.json       bos/eos/pad ids
    DIR/preprocessor_config.json     Qwen2VLImageProcessor settings (patch 14, temporal 2, merge 2)
    DIR/tokenizer.json               byte-level BPE (512 tokens) with Qwen2-VL's special tokens
    DIR/tokenizer_config.json        special tokens + the Qwen2-VL chat template
    DIR/chat_template.json           the chat template again
    DIR/onnx/vision_encoder.onnx     pixel_values [num_patches, 1176], grid_thw [num_images, 3]
                                     -> image_features [num_patches / 4, hidden]
    DIR/onnx/embed_tokens.onnx       input_ids -> inputs_embeds
    DIR/onnx/decoder_model_merged.onnx  decoder with KV cache and M-RoPE position_ids [3, batch, seq]

The vision tower is a linear patch embedding, a 2x2 merge of consecutive patch rows (the
processor's order puts each merged block's four patches next to each other) and a projection,
plus a position term computed from grid_thw: each merged token's (row, col) in its image's merged
grid. So grid_thw is consumed as in the real tower (which derives its rotary positions from it),
and a wrong grid changes the features. The decoder rotates each section of the rotary dims by
one of the three position axes (rope_scaling.mrope_section), so wrong M-RoPE positions change the
logits.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_onnx  # noqa: E402
import tiny_vlm  # noqa: E402
from llama_onnx import F32, I64, GraphBuilder  # noqa: E402
from onnx import helper  # noqa: E402

# The Qwen2-VL-Instruct chat template: ChatML with a default system turn; each image part becomes
# <|vision_start|><|image_pad|><|vision_end|> (the processor then repeats <|image_pad|> once per
# merged patch).
QWEN2VL_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: "
    "{% endif %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

VOCAB_SIZE = 512
PATCH_SIZE = 14
TEMPORAL_PATCH_SIZE = 2
MERGE_SIZE = 2
PATCH_DIM = 3 * TEMPORAL_PATCH_SIZE * PATCH_SIZE * PATCH_SIZE  # 1176
VISION_WIDTH = 32
# Small bounds keep a 1280x720 screenshot at 280x504 pixels: 20x36 patches, 180 image tokens.
MIN_PIXELS = 56 * 56
MAX_PIXELS = 384 * 384
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

TEXT_CONFIG = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "rope_theta": 1000000.0,
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6,
    # head_dim / 2 = 8 rotary frequencies: 2 temporal, 3 height, 3 width (Qwen2-VL-2B: 16, 24, 24 of 64).
    "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
}

# Qwen2-VL adds these after its BPE vocabulary (real ids 151643...151656), in this order.
SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]


def build_tokenizer():
    # Qwen2-VL's specials all come after the trained vocabulary.
    return tiny_vlm.build_tokenizer(added=SPECIALS, vocab_size=VOCAB_SIZE, base_specials=[])


def build_vision_encoder(rng: np.random.RandomState, text_hidden: int):
    c, m2 = VISION_WIDTH, MERGE_SIZE * MERGE_SIZE
    embed_w = (rng.standard_normal((PATCH_DIM, c)) / np.sqrt(PATCH_DIM)).astype(np.float32)
    embed_b = (0.1 * rng.standard_normal(c)).astype(np.float32)
    pos_w = (0.7 * rng.standard_normal((2, c * m2))).astype(np.float32)
    pos_b = rng.uniform(0, 2 * np.pi, c * m2).astype(np.float32)
    proj = (rng.standard_normal((c * m2, text_hidden)) / np.sqrt(c * m2)).astype(np.float32)

    g = GraphBuilder()
    x = g.op("MatMul", ["pixel_values", g.weight("visual.patch_embed.weight_t", embed_w)], "patch_embeds")
    x = g.op("Tanh", [g.op("Add", [x, g.weight("visual.patch_embed.bias", embed_b)], "patch_bias")], "patch_act")
    # Four consecutive rows are one merged token's 2x2 block.
    x = g.op("Reshape", [x, g.const([-1, c * m2])], "merged")  # [M, 4C]

    # Each merged token's (row, col) in its image's merged grid, from grid_thw alone.
    def column(k: int, name: str) -> str:  # grid_thw[:, k] as [I] (GraphBuilder constants are 1-D)
        return g.op("Reshape", [g.op("Gather", ["grid_thw", g.const([k])], f"{name}_2d", axis=1), g.const([-1])], name)

    t = column(0, "grid_t")
    h = g.op("Div", [column(1, "grid_h"), g.const([MERGE_SIZE])], "grid_hm")
    w = g.op("Div", [column(2, "grid_w"), g.const([MERGE_SIZE])], "grid_wm")
    count = g.op("Mul", [g.op("Mul", [t, h], "count_th"), w], "count")  # merged tokens per image
    start = g.op("CumSum", [count, g.const(0)], "start", exclusive=1)  # [I] (CumSum's axis may be [1])
    n = g.op("Gather", [g.op("Shape", [x], "merged_shape"), g.const(0)], "merged_n", axis=0)
    j = g.op("Range", [g.const(0), n, g.const(1)], "token_idx")  # [M]
    after = g.op("GreaterOrEqual", [g.op("Unsqueeze", [j, g.const([1])], "j2"), start], "after_start")  # [M, I]
    image = g.op(
        "Sub", [g.op("ReduceSum", [g.op("Cast", [after], "after_i", to=I64), g.const([1])], "n_started", keepdims=0),
                g.const(1)], "image_of_token")
    local = g.op("Sub", [j, g.op("Gather", [start, image], "token_start", axis=0)], "local")
    wm = g.op("Gather", [w, image], "token_wm", axis=0)
    hm = g.op("Gather", [h, image], "token_hm", axis=0)
    col = g.op("Mod", [local, wm], "col")
    row = g.op("Mod", [g.op("Div", [local, wm], "row_all"), hm], "row")
    rc = g.op("Concat", [g.op("Unsqueeze", [row, g.const([1])], "row2"), g.op("Unsqueeze", [col, g.const([1])], "col2")],
              "rc", axis=1)  # [M, 2]
    rc_f = g.op("Cast", [rc], "rc_f", to=F32)
    pos = g.op("Sin", [g.op("Add", [g.op("MatMul", [rc_f, g.weight("visual.pos.weight", pos_w)], "pos_lin"),
                                    g.weight("visual.pos.bias", pos_b)], "pos_pre")], "pos")
    x = g.op("Add", [x, pos], "with_pos")
    g.op("MatMul", [x, g.weight("visual.merger.weight_t", proj)], outputs=["image_features"])
    return g.make_model(
        "vision_encoder",
        [
            helper.make_tensor_value_info("pixel_values", F32, ["num_patches", PATCH_DIM]),
            helper.make_tensor_value_info("grid_thw", I64, ["num_images", 3]),
        ],
        [helper.make_tensor_value_info("image_features", F32, ["num_image_tokens", text_hidden])],
        doc="tiny random Qwen2-VL vision encoder: linear patch embed -> 2x2 merge + grid position term -> linear",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    args = ap.parse_args()
    out = args.out
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)

    tok = build_tokenizer()
    ids = {t: tok.token_to_id(t) for t in SPECIALS}
    llama_onnx.save_tokenizer(tok, os.path.join(out, "tokenizer.json"))
    eot, im_end = ids["<|endoftext|>"], ids["<|im_end|>"]

    config = {
        "architectures": ["Qwen2VLForConditionalGeneration"],
        "model_type": "qwen2_vl",
        "vocab_size": VOCAB_SIZE,
        **TEXT_CONFIG,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "use_cache": True,
        "bos_token_id": eot,
        "eos_token_id": im_end,
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
        "vision_token_id": ids["<|vision_pad|>"],
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_config": {
            "model_type": "qwen2_vl",
            "depth": 0,
            "embed_dim": VISION_WIDTH,
            "hidden_size": TEXT_CONFIG["hidden_size"],
            "in_chans": 3,
            "patch_size": PATCH_SIZE,
            "spatial_merge_size": MERGE_SIZE,
            "temporal_patch_size": TEMPORAL_PATCH_SIZE,
        },
        "surfgym": {
            "generator": "scripts/models/tiny_qwen2vl.py",
            "seed": args.seed,
            "note": "random weights; vision tower is a linear patch embedding + 2x2 merge (no transformer layers)",
        },
    }
    w = tiny_vlm.write_json
    w(os.path.join(out, "config.json"), config)
    w(os.path.join(out, "generation_config.json"),
      {"bos_token_id": eot, "eos_token_id": [im_end, eot], "pad_token_id": eot, "do_sample": False})
    w(
        os.path.join(out, "preprocessor_config.json"),
        {
            "do_convert_rgb": True,
            "do_normalize": True,
            "do_rescale": True,
            "do_resize": True,
            "image_mean": CLIP_MEAN,
            "image_std": CLIP_STD,
            "image_processor_type": "Qwen2VLImageProcessor",
            "max_pixels": MAX_PIXELS,
            "merge_size": MERGE_SIZE,
            "min_pixels": MIN_PIXELS,
            "patch_size": PATCH_SIZE,
            "processor_class": "Qwen2VLProcessor",
            "resample": 3,
            "rescale_factor": 1 / 255,
            "size": {"longest_edge": MAX_PIXELS, "shortest_edge": MIN_PIXELS},
            "temporal_patch_size": TEMPORAL_PATCH_SIZE,
        },
    )
    w(os.path.join(out, "chat_template.json"), {"chat_template": QWEN2VL_CHAT_TEMPLATE})
    w(
        os.path.join(out, "tokenizer_config.json"),
        {
            "add_prefix_space": False,
            "added_tokens_decoder": {str(ids[t]): tiny_vlm.added_token_entry(t) for t in SPECIALS},
            "additional_special_tokens": SPECIALS[1:],
            "bos_token": None,
            "chat_template": QWEN2VL_CHAT_TEMPLATE,
            "clean_up_tokenization_spaces": False,
            "eos_token": "<|im_end|>",
            "model_max_length": TEXT_CONFIG["max_position_embeddings"],
            "pad_token": "<|endoftext|>",
            "processor_class": "Qwen2VLProcessor",
            "tokenizer_class": "Qwen2Tokenizer",
            "unk_token": None,
            "vocab_size": VOCAB_SIZE,
        },
    )

    rng = np.random.RandomState(args.seed)
    vision = build_vision_encoder(rng, TEXT_CONFIG["hidden_size"])
    embed, weights = tiny_vlm.text_weights(rng, TEXT_CONFIG)
    llama_onnx.save_model(vision, os.path.join(out, "onnx", "vision_encoder.onnx"))
    llama_onnx.save_model(llama_onnx.build_embed_tokens(embed), os.path.join(out, "onnx", "embed_tokens.onnx"))
    llama_onnx.save_model(llama_onnx.build_decoder(weights, {"vocab_size": VOCAB_SIZE, **TEXT_CONFIG}),
                          os.path.join(out, "onnx", "decoder_model_merged.onnx"))
    print(f"tiny-qwen2vl: wrote {out} (vocab {VOCAB_SIZE}, image_token_id {ids['<|image_pad|>']}, seed {args.seed})")


if __name__ == "__main__":
    main()
