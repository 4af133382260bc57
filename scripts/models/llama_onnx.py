"""Shared ONNX graph builders for the surfgym model generators.

Builds, with plain ONNX operators only (default domain, opset 17, IR version 8, so that
ONNX Runtime 1.31 loads them and no contrib ops are needed):

* ``embed_tokens.onnx``: ``input_ids`` int64 [batch, seq] -> ``inputs_embeds`` f32 [batch, seq, hidden]
* ``decoder_model_merged.onnx``: a Llama decoder (RMSNorm, rotary embeddings from ``position_ids``
  -- ``[batch, seq]``, or ``[3, batch, seq]`` with Qwen2-VL's M-RoPE when ``rope_scaling.mrope_section`` is set --,
  grouped-query attention over past+current keys with a causal mask combined with
  ``attention_mask``, SiLU-gated MLP, final norm, lm_head) with the I/O names of the
  onnx-community / transformers.js exports: inputs ``inputs_embeds``, ``attention_mask``,
  ``position_ids``, ``past_key_values.{i}.key|value``; outputs ``logits``, ``present.{i}.key|value``.

Weight layout expected by :func:`build_decoder` (numpy float32, HF orientation ``[out, in]``,
i.e. exactly ``nn.Linear.weight`` of a transformers ``LlamaForCausalLM``)::

    {"layers": [{"input_layernorm": [H], "q_proj": [NH*D, H], "k_proj": [KV*D, H],
                 "v_proj": [KV*D, H], "o_proj": [H, NH*D], "post_attention_layernorm": [H],
                 "gate_proj": [I, H], "up_proj": [I, H], "down_proj": [H, I]}, ...],
     "norm": [H], "lm_head": [V, H]}
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
F32 = TensorProto.FLOAT
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL


class GraphBuilder:
    """Minimal helper: deterministic node/tensor names, initializers and nodes."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: dict[str, int] = {}
        self._consts: dict[tuple, str] = {}

    def _unique(self, hint: str) -> str:
        n = self._names.get(hint, 0)
        self._names[hint] = n + 1
        return hint if n == 0 else f"{hint}_{n}"

    def weight(self, name: str, array: np.ndarray) -> str:
        name = self._unique(name)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def const(self, values, dtype=np.int64) -> str:
        """A small constant initializer (deduplicated)."""
        arr = np.asarray(values, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self._consts:
            self._consts[key] = self.weight("const", arr)
        return self._consts[key]

    def op(self, op_type: str, inputs: list[str], hint: str | None = None, outputs=None, n_out: int = 1, **attrs):
        base = hint or op_type.lower()
        if outputs is None:
            outputs = [self._unique(base) if n_out == 1 else self._unique(f"{base}_{k}") for k in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=self._unique(f"/{base}/{op_type}"), **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def make_model(self, name: str, inputs, outputs, doc: str = "") -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="surfgym-scripts-models",
            doc_string=doc,
        )
        model.ir_version = IR_VERSION
        return model


def save_model(model: onnx.ModelProto, path: str) -> None:
    """Check and write a model as a single file (must stay under protobuf's 2 GiB)."""
    onnx.checker.check_model(model)
    data = model.SerializeToString(deterministic=True)
    with open(path, "wb") as f:
        f.write(data)


def rms_norm(g: GraphBuilder, x: str, weight: np.ndarray, eps: float, name: str) -> str:
    w = g.weight(f"{name}.weight", weight.astype(np.float32))
    sq = g.op("Mul", [x, x], f"{name}/sq")
    var = g.op("ReduceMean", [sq], f"{name}/var", axes=[-1], keepdims=1)
    var_eps = g.op("Add", [var, g.const(np.float32(eps), np.float32)], f"{name}/var_eps")
    std = g.op("Sqrt", [var_eps], f"{name}/std")
    normed = g.op("Div", [x, std], f"{name}/normed")
    return g.op("Mul", [normed, w], f"{name}/out")


def linear(g: GraphBuilder, x: str, weight_out_in: np.ndarray, name: str) -> str:
    """y = x @ W^T for an HF-oriented [out, in] weight (stored transposed as [in, out])."""
    w = g.weight(f"{name}.weight_t", np.ascontiguousarray(weight_out_in.T.astype(np.float32)))
    return g.op("MatMul", [x, w], name)


def rotate_half(g: GraphBuilder, x: str, head_dim: int, name: str) -> str:
    half = head_dim // 2
    x1 = g.op("Slice", [x, g.const([0]), g.const([half]), g.const([-1])], f"{name}/x1")
    x2 = g.op("Slice", [x, g.const([half]), g.const([head_dim]), g.const([-1])], f"{name}/x2")
    nx2 = g.op("Neg", [x2], f"{name}/neg_x2")
    return g.op("Concat", [nx2, x1], f"{name}/rot", axis=-1)


def build_embed_tokens(embed: np.ndarray) -> onnx.ModelProto:
    vocab, hidden = embed.shape
    g = GraphBuilder()
    w = g.weight("model.embed_tokens.weight", embed.astype(np.float32))
    g.op("Gather", [w, "input_ids"], outputs=["inputs_embeds"], axis=0)
    return g.make_model(
        "embed_tokens",
        [helper.make_tensor_value_info("input_ids", I64, ["batch_size", "sequence_length"])],
        [helper.make_tensor_value_info("inputs_embeds", F32, ["batch_size", "sequence_length", hidden])],
        doc=f"token embeddings: vocab {vocab}, hidden {hidden}",
    )


def build_decoder(weights: dict, cfg: dict) -> onnx.ModelProto:
    """A Llama decoder with KV cache. ``cfg`` holds the HF text_config keys."""
    hidden = cfg["hidden_size"]
    n_heads = cfg["num_attention_heads"]
    n_kv = cfg["num_key_value_heads"]
    head_dim = cfg.get("head_dim") or hidden // n_heads
    n_layers = cfg["num_hidden_layers"]
    eps = float(cfg["rms_norm_eps"])
    theta = float(cfg["rope_theta"])
    vocab = weights["lm_head"].shape[0]
    assert n_heads % n_kv == 0 and head_dim % 2 == 0
    groups = n_heads // n_kv
    # Qwen2-VL's M-RoPE: position_ids [3, batch, seq] (temporal, height, width); the rotary
    # frequencies are split into sections, section k rotated by axis k % 3's positions.
    mrope = ((cfg.get("rope_scaling") or {}).get("mrope_section"))
    if mrope is not None:
        assert sum(mrope) == head_dim // 2, f"mrope_section {mrope} must sum to head_dim/2 = {head_dim // 2}"

    g = GraphBuilder()
    inputs = [
        helper.make_tensor_value_info("inputs_embeds", F32, ["batch_size", "sequence_length", hidden]),
        helper.make_tensor_value_info("attention_mask", I64, ["batch_size", "total_sequence_length"]),
        helper.make_tensor_value_info(
            "position_ids", I64, ([3] if mrope else []) + ["batch_size", "sequence_length"]
        ),
    ]
    outputs = [helper.make_tensor_value_info("logits", F32, ["batch_size", "sequence_length", vocab])]
    for i in range(n_layers):
        for kind in ("key", "value"):
            inputs.append(
                helper.make_tensor_value_info(
                    f"past_key_values.{i}.{kind}", F32, ["batch_size", n_kv, "past_sequence_length", head_dim]
                )
            )
            outputs.append(
                helper.make_tensor_value_info(
                    f"present.{i}.{kind}", F32, ["batch_size", n_kv, "total_sequence_length", head_dim]
                )
            )

    # Rotary tables from position_ids (HF Llama "default" rope, non-interleaved halves).
    inv_freq = 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / head_dim))
    pos = g.op("Cast", ["position_ids"], "rope/pos_f", to=F32)
    pos3 = g.op("Unsqueeze", [pos, g.const([-1])], "rope/pos3")
    freqs = g.op("Mul", [pos3, g.weight("rope.inv_freq", inv_freq.astype(np.float32))], "rope/freqs")
    emb = g.op("Concat", [freqs, freqs], "rope/emb", axis=-1)  # [B, S, D] ([3, B, S, D] with M-RoPE)
    cos = g.op("Cos", [emb], "rope/cos")
    sin = g.op("Sin", [emb], "rope/sin")
    if mrope is not None:
        # Rotary dim d takes its angle from the axis owning its section (sections repeat for
        # the second half, as the halves are rotated together): a one-hot [3, 1, 1, D] pick.
        owner = np.concatenate([np.full(n, k % 3) for k, n in enumerate(list(mrope) * 2)])
        pick = (np.arange(3)[:, None] == owner[None, :]).astype(np.float32).reshape(3, 1, 1, head_dim)
        pick_n = g.weight("rope.mrope_pick", pick)
        cos = g.op("ReduceSum", [g.op("Mul", [cos, pick_n], "rope/cos_pick"), g.const([0])], "rope/cos_m", keepdims=0)
        sin = g.op("ReduceSum", [g.op("Mul", [sin, pick_n], "rope/sin_pick"), g.const([0])], "rope/sin_m", keepdims=0)
    cos_k = g.op("Unsqueeze", [cos, g.const([1])], "rope/cos_k")  # [B, 1, S, D]
    sin_k = g.op("Unsqueeze", [sin, g.const([1])], "rope/sin_k")
    cos_q = g.op("Unsqueeze", [cos, g.const([1, 2])], "rope/cos_q")  # [B, 1, 1, S, D]
    sin_q = g.op("Unsqueeze", [sin, g.const([1, 2])], "rope/sin_q")

    # Attention bias [B, 1, 1, S, T]: query i (absolute position P+i) sees key j iff j <= P+i and
    # attention_mask[b, j] != 0.
    seq_len = g.op("Gather", [g.op("Shape", ["inputs_embeds"], "mask/shape_in"), g.const(1)], "mask/S", axis=0)
    past_len = g.op(
        "Gather", [g.op("Shape", ["past_key_values.0.key"], "mask/shape_past"), g.const(2)], "mask/P", axis=0
    )
    total_len = g.op("Add", [past_len, seq_len], "mask/T")
    k_idx = g.op("Range", [g.const(0), total_len, g.const(1)], "mask/k_idx")  # [T]
    q_idx = g.op("Range", [past_len, total_len, g.const(1)], "mask/q_idx")  # [S]
    q_idx2 = g.op("Unsqueeze", [q_idx, g.const([1])], "mask/q_idx2")  # [S, 1]
    causal = g.op("LessOrEqual", [k_idx, q_idx2], "mask/causal")  # [S, T]
    am = g.op("Cast", ["attention_mask"], "mask/am_bool", to=BOOL)
    am3 = g.op("Unsqueeze", [am, g.const([1])], "mask/am3")  # [B, 1, T]
    allowed = g.op("And", [causal, am3], "mask/allowed")  # [B, S, T]
    bias = g.op(
        "Where",
        [allowed, g.const(np.float32(0.0), np.float32), g.const(np.finfo(np.float32).min, np.float32)],
        "mask/bias",
    )
    bias5 = g.op("Unsqueeze", [bias, g.const([1, 2])], "mask/bias5")

    scale = np.float32(1.0 / np.sqrt(head_dim))
    h = "inputs_embeds"
    for i, lw in enumerate(weights["layers"]):
        p = f"model.layers.{i}"
        x = rms_norm(g, h, lw["input_layernorm"], eps, f"{p}.input_layernorm")
        q = linear(g, x, lw["q_proj"] * scale, f"{p}.self_attn.q_proj")  # 1/sqrt(D) folded into W_q
        k = linear(g, x, lw["k_proj"], f"{p}.self_attn.k_proj")
        v = linear(g, x, lw["v_proj"], f"{p}.self_attn.v_proj")
        # q: [B,S,NH*D] -> [B,KV,G,S,D] (head h = kv*G + g, as transformers' repeat_kv)
        q = g.op("Reshape", [q, g.const([0, 0, n_kv, groups, head_dim])], f"{p}/q5")
        q = g.op("Transpose", [q], f"{p}/q_t", perm=[0, 2, 3, 1, 4])
        k = g.op("Reshape", [k, g.const([0, 0, n_kv, head_dim])], f"{p}/k4")
        k = g.op("Transpose", [k], f"{p}/k_t", perm=[0, 2, 1, 3])
        v = g.op("Reshape", [v, g.const([0, 0, n_kv, head_dim])], f"{p}/v4")
        v = g.op("Transpose", [v], f"{p}/v_t", perm=[0, 2, 1, 3])
        q = g.op(
            "Add",
            [g.op("Mul", [q, cos_q], f"{p}/q_cos"), g.op("Mul", [rotate_half(g, q, head_dim, f"{p}/q"), sin_q], f"{p}/q_sin")],
            f"{p}/q_rope",
        )
        k = g.op(
            "Add",
            [g.op("Mul", [k, cos_k], f"{p}/k_cos"), g.op("Mul", [rotate_half(g, k, head_dim, f"{p}/k"), sin_k], f"{p}/k_sin")],
            f"{p}/k_rope",
        )
        k_all = g.op("Concat", [f"past_key_values.{i}.key", k], outputs=[f"present.{i}.key"], axis=2)
        v_all = g.op("Concat", [f"past_key_values.{i}.value", v], outputs=[f"present.{i}.value"], axis=2)
        k_t = g.op("Transpose", [k_all], f"{p}/k_all_t", perm=[0, 1, 3, 2])  # [B,KV,D,T]
        k_t5 = g.op("Unsqueeze", [k_t, g.const([2])], f"{p}/k_all_t5")  # [B,KV,1,D,T]
        scores = g.op("MatMul", [q, k_t5], f"{p}/scores")  # [B,KV,G,S,T]
        scores = g.op("Add", [scores, bias5], f"{p}/scores_masked")
        probs = g.op("Softmax", [scores], f"{p}/probs", axis=-1)
        v5 = g.op("Unsqueeze", [v_all, g.const([2])], f"{p}/v_all5")  # [B,KV,1,T,D]
        attn = g.op("MatMul", [probs, v5], f"{p}/attn")  # [B,KV,G,S,D]
        attn = g.op("Transpose", [attn], f"{p}/attn_t", perm=[0, 3, 1, 2, 4])
        attn = g.op("Reshape", [attn, g.const([0, 0, n_heads * head_dim])], f"{p}/attn_flat")
        o = linear(g, attn, lw["o_proj"], f"{p}.self_attn.o_proj")
        h = g.op("Add", [h, o], f"{p}/resid_attn")
        x = rms_norm(g, h, lw["post_attention_layernorm"], eps, f"{p}.post_attention_layernorm")
        gate = linear(g, x, lw["gate_proj"], f"{p}.mlp.gate_proj")
        up = linear(g, x, lw["up_proj"], f"{p}.mlp.up_proj")
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate], f"{p}/mlp/sigmoid")], f"{p}/mlp/silu")
        down = linear(g, g.op("Mul", [act, up], f"{p}/mlp/act_up"), lw["down_proj"], f"{p}.mlp.down_proj")
        h = g.op("Add", [h, down], f"{p}/resid_mlp")
    x = rms_norm(g, h, weights["norm"], eps, "model.norm")
    w_lm = g.weight("lm_head.weight_t", np.ascontiguousarray(weights["lm_head"].T.astype(np.float32)))
    g.op("MatMul", [x, w_lm], outputs=["logits"])
    return g.make_model(
        "decoder_model_merged",
        inputs,
        outputs,
        doc=(
            f"Llama decoder: {n_layers} layers, hidden {hidden}, heads {n_heads}, kv heads {n_kv}, "
            f"head_dim {head_dim}, rope_theta {theta:g}, vocab {vocab}"
        ),
    )


def save_tokenizer(tokenizer, path: str) -> None:
    """Save a `tokenizers.Tokenizer` as tokenizer.json with merges as "a b" strings.

    That is the format of the real SmolLM2 / SmolVLM tokenizer.json files (and the one every
    tokenizers version reads); recent `tokenizers` writes [["a", "b"], ...] pairs instead. Byte-level
    BPE tokens never contain a literal space (it is mapped to "Ġ"), so joining with a space is lossless.
    """
    import json

    data = json.loads(tokenizer.to_str())
    merges = data["model"].get("merges", [])
    if merges and not isinstance(merges[0], str):
        if any(" " in part for pair in merges for part in pair):
            raise ValueError("a merge contains a space: cannot write legacy 'a b' merges")
        data["model"]["merges"] = [" ".join(pair) for pair in merges]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")
