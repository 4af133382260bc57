#!/usr/bin/env python3
"""Write a tiny random-weight text-only Llama in the layout ``smollm2.py`` writes for SmolLM2.

    python scripts/models/tiny_text.py --out DIR [--seed 0]

The stand-in for the converted SmolLM2-135M in CI: the same files (flat ``llama`` config.json,
generation_config.json, tokenizer.json, tokenizer_config.json with SmolLM2's ChatML template,
special_tokens_map.json, onnx/embed_tokens.onnx, onnx/decoder_model_merged.onnx), the same
special tokens at the same ids (``<|endoftext|>`` 0, ``<|im_start|>`` 1 bos, ``<|im_end|>`` 2 eos
and pad) and no image tokens, so that ``pair_vision.py`` can be tested on it in seconds.
Text settings and weights are the tiny VLM's (``tiny_vlm.py``), with a 472-token vocabulary:
paired with the vision encoder, the image tokens get the ids they have in the tiny VLM.
Byte-for-byte deterministic from the seed.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_onnx  # noqa: E402
import tiny_vlm  # noqa: E402

# SmolLM2-135M-Instruct's chat template, as its GGUF (tokenizer.chat_template) ships it.
SMOLLM2_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# The tiny VLM's vocabulary less the tokens SmolVLM adds to SmolLM2's.
VOCAB_SIZE = tiny_vlm.VOCAB_SIZE - len(tiny_vlm.ADDED_SPECIALS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    ap.add_argument("--head-scale", type=float, default=4.0,
                    help="scale of the output head's random weights (default 4: sharp, so greedy decoding "
                         "differs between prompts; a small one starts near the uniform distribution)")
    args = ap.parse_args()
    out = args.out
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)

    tok = tiny_vlm.build_tokenizer(added=[], vocab_size=VOCAB_SIZE)
    ids = {t: tok.token_to_id(t) for t in tiny_vlm.BASE_SPECIALS}
    unk, bos, eos = ids["<|endoftext|>"], ids["<|im_start|>"], ids["<|im_end|>"]
    assert (unk, bos, eos) == (0, 1, 2), ids
    llama_onnx.save_tokenizer(tok, os.path.join(out, "tokenizer.json"))

    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": VOCAB_SIZE,
        **tiny_vlm.TEXT_CONFIG,
        "rope_scaling": None,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "pad_token_id": eos,
        "torch_dtype": "float32",
        "surfgym": {"generator": "scripts/models/tiny_text.py", "seed": args.seed, "head_scale": args.head_scale,
                    "note": "random weights"},
    }
    specials = {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "pad_token": "<|im_end|>",
                "unk_token": "<|endoftext|>"}
    extra = ["<|im_start|>", "<|im_end|>"]
    tiny_vlm.write_json(os.path.join(out, "config.json"), config)
    tiny_vlm.write_json(os.path.join(out, "generation_config.json"),
                        {"bos_token_id": bos, "eos_token_id": eos, "pad_token_id": eos, "do_sample": False})
    tiny_vlm.write_json(os.path.join(out, "tokenizer_config.json"), {
        "add_prefix_space": False,
        "added_tokens_decoder": {str(ids[t]): tiny_vlm.added_token_entry(t) for t in tiny_vlm.BASE_SPECIALS},
        "additional_special_tokens": extra,
        **specials,
        "chat_template": SMOLLM2_CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "model_max_length": tiny_vlm.TEXT_CONFIG["max_position_embeddings"],
        "tokenizer_class": "GPT2Tokenizer",
        "vocab_size": VOCAB_SIZE,
    })
    tiny_vlm.write_json(os.path.join(out, "special_tokens_map.json"), {"additional_special_tokens": extra, **specials})

    rng = np.random.RandomState(args.seed)
    embed, weights = tiny_vlm.text_weights(rng, tiny_vlm.TEXT_CONFIG, vocab=VOCAB_SIZE)
    weights["lm_head"] = weights["lm_head"] * np.float32(args.head_scale / 4.0)
    llama_onnx.save_model(llama_onnx.build_embed_tokens(embed), os.path.join(out, "onnx", "embed_tokens.onnx"))
    llama_onnx.save_model(llama_onnx.build_decoder(weights, config), os.path.join(out, "onnx", "decoder_model_merged.onnx"))
    print(f"tiny-text: wrote {out} (vocab {VOCAB_SIZE}, seed {args.seed})")


if __name__ == "__main__":
    main()
