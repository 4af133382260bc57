#!/usr/bin/env python3
"""Write a tiny random-weight vision-language model in the onnx-community SmolVLM (Idefics3) layout.

    python scripts/models/tiny_vlm.py --out DIR [--seed 0]

The output is byte-for-byte deterministic for a given seed (and given pinned package versions):

    DIR/config.json                  Idefics3-style config (model_type "idefics3")
    DIR/generation_config.json       bos/eos/pad ids
    DIR/preprocessor_config.json     Idefics3ImageProcessor settings (no image splitting, 512x512)
    DIR/processor_config.json        {"image_seq_len": 64, "processor_class": "Idefics3Processor"}
    DIR/tokenizer.json               byte-level BPE (512 tokens) trained on a built-in corpus
    DIR/tokenizer_config.json        special tokens + SmolVLM chat template
    DIR/special_tokens_map.json
    DIR/chat_template.json           the chat template again (as the real repo ships it)
    DIR/onnx/vision_encoder.onnx     pixel_values, pixel_attention_mask -> image_features
    DIR/onnx/embed_tokens.onnx       input_ids -> inputs_embeds
    DIR/onnx/decoder_model_merged.onnx  Llama decoder with KV cache

Weights are random: the model produces nonsense, but every shape, name, dtype and the
attention/caching/padding semantics are those of the real export, so a loader can be tested
end to end in CI in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_onnx  # noqa: E402
from llama_onnx import BOOL, F32, GraphBuilder  # noqa: E402
from onnx import helper  # noqa: E402

# SmolVLM-256M/500M-Instruct chat template (tokenizer_config.json / chat_template.json of the real repo).
SMOLVLM_CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}"
    "{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)

VOCAB_SIZE = 512
IMAGE_SIZE = 512
PATCH_SIZE = 16
SCALE_FACTOR = 4
IMAGE_SEQ_LEN = (IMAGE_SIZE // PATCH_SIZE) ** 2 // SCALE_FACTOR**2  # 64
VISION_WIDTH = 32

TEXT_CONFIG = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "rope_theta": 100000.0,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
}

# Base vocabulary specials (ids 0..2, as SmolLM2) and the tokens SmolVLM adds after the base vocabulary
# (real ids: <global-img> 49152, <row_1_col_1>..<row_6_col_6> 49153..49188,
# <fake_token_around_image> 49189, <image> 49190, <end_of_utterance> 49279 = last id).
BASE_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED_SPECIALS = (
    ["<global-img>"]
    + [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]
    + ["<fake_token_around_image>", "<image>", "<end_of_utterance>"]
)


def corpus() -> list[str]:
    """A small, fixed training corpus: English, HTML/UI words, digits, the action grammar, URLs."""
    english = (
        "the quick brown fox jumps over the lazy dog . what is the capital of france ? paris is the capital "
        "of france . you are a helpful assistant that browses the web for the user . please find the price "
        "of the item and answer the question . the page shows a list of products with their prices and "
        "ratings . i will click on the search box and type the query , then press enter . the answer is "
        "below . this is a test of the tokenizer with some common words : and or not but if then else when "
        "where who how why which there their they them this that these those have has had was were been "
        "being do does did done can could would should will shall may might must about after before under "
        "between into through during without within along across behind beyond plus except up down out "
        "off again further once here all any both each few more most other some such only own same so than "
        "too very just now new old first last long great little good bad right left next previous open "
        "close save cancel submit login logout sign register account password email name address city "
        "country order cart checkout total price quantity product item shop store buy sell add remove "
        "delete edit update create user users settings profile help contact about home page pages results "
        "result search filter sort date time today yesterday tomorrow week month year number numbers"
    )
    html = (
        "<html> <head> <title> </title> </head> <body> <div class=\"container\"> <span> <a href=\"/\"> "
        "<button type=\"submit\"> <input type=\"text\" name=\"q\" placeholder=\"Search\"> <form> </form> "
        "<ul> <li> <ol> <table> <tr> <td> <th> <thead> <tbody> <img src=\"logo.png\" alt=\"logo\"> "
        "<label for=\"email\"> <select> <option value=\"1\"> <textarea> <nav> <header> <footer> <main> "
        "<section> <article> <p> <h1> <h2> <h3> <strong> <em> <br> <hr> </div> </span> </a> </button> "
        "button link textbox checkbox radio combobox listbox menu menuitem tab tabpanel dialog heading "
        "region navigation banner img image text statictext generic document option row cell gridcell "
        "columnheader rowheader focused disabled checked selected expanded required readonly value "
        "[1] link 'Home' [2] button 'Search' [3] textbox 'Email' [12] checkbox 'Remember me' "
        "class id style onclick aria-label role data-testid"
    )
    actions = (
        "click(12) click(3) click(7) click(42) type(3, \"text\") type(5, \"hello world\") "
        "type(1, \"user@example.com\") answer(\"...\") answer(\"Paris\") answer(\"42\") "
        "scroll(down) scroll(up) goto(\"https://example.com/\") back() press(\"Enter\") hover(8) "
        "select(4, \"Blue\") wait() stop() noop() click(0) type(0, \"\") answer(\"yes\") answer(\"no\")"
    )
    urls = (
        "https://example.com/ http://localhost:8080/index.html https://www.example.org/search?q=shoes&page=2 "
        "http://127.0.0.1:3000/api/v1/items/17 https://shop.example.com/cart#checkout "
        "/static/css/main.css /login?next=/account mailto:help@example.com www. .com .org .html .php "
        "https:// http:// ?id= &sort=price_asc"
    )
    digits = "0 1 2 3 4 5 6 7 8 9 10 11 12 100 2024 3.14 $19.99 50% 1,000 #1 -5 +7 = < > ( ) [ ] { } ; :"
    text = [english, html, actions, urls, digits]
    # A few chat-formatted lines so the role markers get merges of their own.
    text += [
        "User: What is on this page?\nAssistant: A search form.\n",
        "User: Click the login button.\nAssistant: click(12)\n",
        "System: You are a web agent. Reply with one action.\n",
    ]
    # Repeat lines so that every word is seen a few times (frequencies shape the merges).
    return [line for line in text for _ in range(3)]


def build_tokenizer(
    added: list[str] = ADDED_SPECIALS, vocab_size: int = VOCAB_SIZE, base_specials: list[str] = BASE_SPECIALS
):
    """Byte-level BPE of ``vocab_size`` tokens: ``base_specials`` first, the trained base
    vocabulary, then ``added`` special tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = None
    # Same pre-tokenization as SmolLM2 (individual digits, then GPT-2 byte-level regex split).
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    tok.post_processor = processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True)
    base_size = vocab_size - len(added)
    trainer = trainers.BpeTrainer(
        vocab_size=base_size,
        min_frequency=2,
        show_progress=False,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in base_specials],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    if tok.get_vocab_size(with_added_tokens=True) != base_size:
        raise SystemExit(f"BPE training gave {tok.get_vocab_size()} tokens, wanted {base_size}: grow the corpus")
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in added])
    assert tok.get_vocab_size(with_added_tokens=True) == vocab_size
    return tok


def write_processor_configs(out: str) -> None:
    """preprocessor_config.json and processor_config.json of the tiny vision encoder (one
    IMAGE_SIZE tile, no splitting, IMAGE_SEQ_LEN tokens per image), Idefics3's format."""
    write_json(
        os.path.join(out, "preprocessor_config.json"),
        {
            "do_convert_rgb": True,
            "do_image_splitting": False,
            "do_normalize": True,
            "do_pad": True,
            "do_rescale": True,
            "do_resize": True,
            "image_mean": [0.5, 0.5, 0.5],
            "image_processor_type": "Idefics3ImageProcessor",
            "image_seq_len": IMAGE_SEQ_LEN,
            "image_std": [0.5, 0.5, 0.5],
            "max_image_size": {"longest_edge": IMAGE_SIZE},
            "processor_class": "Idefics3Processor",
            "resample": 1,
            "rescale_factor": 1 / 255,
            "size": {"longest_edge": IMAGE_SIZE},
        },
    )
    write_json(
        os.path.join(out, "processor_config.json"), {"image_seq_len": IMAGE_SEQ_LEN, "processor_class": "Idefics3Processor"}
    )


def added_token_entry(content: str) -> dict:
    return {
        "content": content,
        "lstrip": False,
        "normalized": False,
        "rstrip": False,
        "single_word": False,
        "special": True,
    }


def build_vision_encoder(rng: np.random.RandomState, text_hidden: int, out_scale: float | None = None):
    """16x16 patch conv -> (+pos emb, tanh, patch mask) -> pixel shuffle x4 -> linear to text hidden.

    The features' RMS is at most about 1 (tanh activations, a 1/sqrt(fan_in) projection);
    ``out_scale`` multiplies the projection, e.g. to give them a pretrained embedding table's RMS.
    """
    c = VISION_WIDTH
    grid = IMAGE_SIZE // PATCH_SIZE  # 32
    s = SCALE_FACTOR
    conv_w = (rng.standard_normal((c, 3, PATCH_SIZE, PATCH_SIZE)) / np.sqrt(3 * PATCH_SIZE * PATCH_SIZE)).astype(
        np.float32
    )
    conv_b = (0.1 * rng.standard_normal(c)).astype(np.float32)
    pos = (0.5 * rng.standard_normal((1, c, grid, grid))).astype(np.float32)
    proj = (rng.standard_normal((c * s * s, text_hidden)) / np.sqrt(c * s * s)).astype(np.float32)
    if out_scale is not None:
        proj = (proj * np.float32(out_scale)).astype(np.float32)

    g = GraphBuilder()
    x = g.op("Reshape", ["pixel_values", g.const([-1, 3, IMAGE_SIZE, IMAGE_SIZE])], "images")
    conv_w_n = g.weight("vision_model.embeddings.patch_embedding.weight", conv_w)
    conv_b_n = g.weight("vision_model.embeddings.patch_embedding.bias", conv_b)
    f = g.op("Conv", [x, conv_w_n, conv_b_n], "patch_embeds", kernel_shape=[PATCH_SIZE, PATCH_SIZE],
             strides=[PATCH_SIZE, PATCH_SIZE])  # [N, C, 32, 32]
    f = g.op("Add", [f, g.weight("vision_model.embeddings.position_embedding", pos)], "with_pos")
    f = g.op("Tanh", [f], "act")
    # A patch is valid when any of its pixels is (as Idefics3's patch_attention_mask); invalid -> 0.
    m = g.op("Cast", ["pixel_attention_mask"], "mask_f", to=F32)
    m = g.op("Reshape", [m, g.const([-1, 1, IMAGE_SIZE, IMAGE_SIZE])], "mask_4d")
    m = g.op("MaxPool", [m], "patch_mask", kernel_shape=[PATCH_SIZE, PATCH_SIZE], strides=[PATCH_SIZE, PATCH_SIZE])
    f = g.op("Mul", [f, m], "masked")
    f = g.op("Transpose", [f], "seq", perm=[0, 2, 3, 1])  # [N, 32(h), 32(w), C] = [N, seq, C] row-major
    # Idefics3Connector.pixel_shuffle, step by step.
    f = g.op("Reshape", [f, g.const([-1, grid, grid // s, c * s])], "ps1")
    f = g.op("Transpose", [f], "ps2", perm=[0, 2, 1, 3])
    f = g.op("Reshape", [f, g.const([-1, grid // s, grid // s, c * s * s])], "ps3")
    f = g.op("Transpose", [f], "ps4", perm=[0, 2, 1, 3])
    f = g.op("Reshape", [f, g.const([-1, IMAGE_SEQ_LEN, c * s * s])], "ps5")
    proj_n = g.weight("connector.modality_projection.proj.weight_t", proj)
    g.op("MatMul", [f, proj_n], outputs=["image_features"])  # no bias: masked tokens stay exactly 0
    return g.make_model(
        "vision_encoder",
        [
            helper.make_tensor_value_info("pixel_values", F32, ["batch_size", "num_images", 3, IMAGE_SIZE, IMAGE_SIZE]),
            helper.make_tensor_value_info("pixel_attention_mask", BOOL, ["batch_size", "num_images", IMAGE_SIZE, IMAGE_SIZE]),
        ],
        [helper.make_tensor_value_info("image_features", F32, ["batch_size*num_images", IMAGE_SEQ_LEN, text_hidden])],
        doc="tiny random vision encoder: patch conv 16x16 -> pixel shuffle x4 -> linear",
    )


def text_weights(rng: np.random.RandomState, cfg: dict, vocab: int = VOCAB_SIZE) -> tuple[np.ndarray, dict]:
    h, i_size = cfg["hidden_size"], cfg["intermediate_size"]
    nh, kv, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]

    def lin(out_dim, in_dim):
        return (rng.standard_normal((out_dim, in_dim)) / np.sqrt(in_dim)).astype(np.float32)

    def norm():
        return (1.0 + 0.1 * rng.standard_normal(h)).astype(np.float32)

    embed = rng.standard_normal((vocab, h)).astype(np.float32)
    layers = []
    for _ in range(cfg["num_hidden_layers"]):
        layers.append(
            {
                "input_layernorm": norm(),
                "q_proj": lin(nh * d, h) * 2.0,  # sharper attention than a plain init, so masks matter
                "k_proj": lin(kv * d, h) * 2.0,
                "v_proj": lin(kv * d, h),
                "o_proj": lin(h, nh * d),
                "post_attention_layernorm": norm(),
                "gate_proj": lin(i_size, h),
                "up_proj": lin(i_size, h),
                "down_proj": lin(h, i_size),
            }
        )
    weights = {"layers": layers, "norm": norm(), "lm_head": lin(vocab, h) * 4.0}
    return embed, weights


def write_json(path: str, obj) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    args = ap.parse_args()

    out = args.out
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)

    tok = build_tokenizer()
    ids = {t: tok.token_to_id(t) for t in BASE_SPECIALS + ADDED_SPECIALS}
    bos, eos, pad, unk = ids["<|im_start|>"], ids["<end_of_utterance>"], ids["<|im_end|>"], ids["<|endoftext|>"]
    llama_onnx.save_tokenizer(tok, os.path.join(out, "tokenizer.json"))

    text_config = {
        "model_type": "llama",
        "architectures": ["VLlama3ForCausalLM"],
        "vocab_size": VOCAB_SIZE,
        **TEXT_CONFIG,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "rope_scaling": None,
        "rope_interleaved": False,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "pad_token_id": pad,
        "torch_dtype": "float32",
    }
    config = {
        "architectures": ["Idefics3ForConditionalGeneration"],
        "model_type": "idefics3",
        "image_token_id": ids["<image>"],
        "fake_image_token_id": ids["<fake_token_around_image>"],
        "global_image_token_id": ids["<global-img>"],
        "end_of_utterance_token_id": ids["<end_of_utterance>"],
        "scale_factor": SCALE_FACTOR,
        "tie_word_embeddings": False,
        "use_cache": True,
        "torch_dtype": "float32",
        "bos_token_id": bos,
        "eos_token_id": eos,
        "pad_token_id": pad,
        "vision_config": {
            "model_type": "idefics3_vision",
            "image_size": IMAGE_SIZE,
            "patch_size": PATCH_SIZE,
            "num_channels": 3,
            "hidden_size": VISION_WIDTH,
            "intermediate_size": 0,
            "num_hidden_layers": 0,
            "num_attention_heads": 1,
            "max_image_size": {"longest_edge": IMAGE_SIZE},
            "size": {"longest_edge": IMAGE_SIZE},
        },
        "text_config": text_config,
        "surfgym": {
            "generator": "scripts/models/tiny_vlm.py",
            "seed": args.seed,
            "note": "random weights; vision tower is a patch conv + pixel shuffle (no transformer layers)",
        },
    }
    write_json(os.path.join(out, "config.json"), config)
    write_json(
        os.path.join(out, "generation_config.json"),
        {"bos_token_id": bos, "eos_token_id": [pad, eos], "pad_token_id": pad, "do_sample": False},
    )
    write_processor_configs(out)
    write_json(os.path.join(out, "chat_template.json"), {"chat_template": SMOLVLM_CHAT_TEMPLATE})
    extra = ["<fake_token_around_image>", "<image>", "<end_of_utterance>"]
    write_json(
        os.path.join(out, "tokenizer_config.json"),
        {
            "add_prefix_space": False,
            "added_tokens_decoder": {str(ids[t]): added_token_entry(t) for t in BASE_SPECIALS + ADDED_SPECIALS},
            "additional_special_tokens": extra,
            "bos_token": "<|im_start|>",
            "chat_template": SMOLVLM_CHAT_TEMPLATE,
            "clean_up_tokenization_spaces": False,
            "eos_token": "<end_of_utterance>",
            "extra_special_tokens": {"fake_image_token": "<fake_token_around_image>", "image_token": "<image>",
                                     "end_of_utterance_token": "<end_of_utterance>", "global_image_token": "<global-img>"},
            "legacy": False,
            "model_max_length": TEXT_CONFIG["max_position_embeddings"],
            "pad_token": "<|im_end|>",
            "processor_class": "Idefics3Processor",
            "tokenizer_class": "GPT2Tokenizer",
            "truncation_side": "left",
            "unk_token": "<|endoftext|>",
            "vocab_size": VOCAB_SIZE,
        },
    )
    write_json(
        os.path.join(out, "special_tokens_map.json"),
        {
            "additional_special_tokens": extra,
            "bos_token": "<|im_start|>",
            "eos_token": "<end_of_utterance>",
            "pad_token": "<|im_end|>",
            "unk_token": "<|endoftext|>",
        },
    )
    assert unk == 0

    rng = np.random.RandomState(args.seed)
    vision = build_vision_encoder(rng, TEXT_CONFIG["hidden_size"])
    embed, weights = text_weights(rng, TEXT_CONFIG)
    llama_onnx.save_model(vision, os.path.join(out, "onnx", "vision_encoder.onnx"))
    llama_onnx.save_model(llama_onnx.build_embed_tokens(embed), os.path.join(out, "onnx", "embed_tokens.onnx"))
    llama_onnx.save_model(llama_onnx.build_decoder(weights, text_config), os.path.join(out, "onnx", "decoder_model_merged.onnx"))
    print(f"tiny-vlm: wrote {out} (vocab {VOCAB_SIZE}, image_token_id {ids['<image>']}, seed {args.seed})")


if __name__ == "__main__":
    main()
