"""PyTorch anchor for `surfgym bench train`: the same decoder, batch and objective, timed.

What a user would run instead of surfgym's trainer: PyTorch on the CPU, fp32, the Llama
decoder of scripts/models/llama_onnx.py (RMSNorm, rotary halves, grouped-query attention
through scaled_dot_product_attention as transformers' default "sdpa" path, SiLU-gated MLP,
final norm, head) with the sizes of the model's config.json, random weights (the figures
depend on shapes, not values). Like surfgym's trainer, the input is embeddings (the
embedding table is frozen there: it runs in ONNX Runtime), the head is a trainable
[vocab, hidden] matrix applied to the response rows only, and the loss is filtered
behaviour cloning: minus the mean over samples of each response's token-mean
log-likelihood. One timed update is one forward, one backward, global-norm clipping at 1
and one AdamW step (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01: the trainer's
defaults), after one untimed warm-up update.

Not used by the test suite and nothing in CI needs torch: scripts/bench/setup-torch.sh
installs it into its own virtual environment; scripts/bench/train-vs-torch.sh runs it
beside `surfgym bench train`.

On a GPU (--device cuda) the same update runs there; --dtype bf16 is PyTorch's automatic
mixed precision (torch.autocast: bf16 products over f32 weights and optimiser state, the
log-softmax in f32), the counterpart of the trainer's --precision bf16.

Usage: train_torch.py --model DIR [--batch 8] [--prompt-tokens 512] [--response-tokens 32]
                      [--steps 3] [--threads N] [--device cpu|cuda] [--dtype f32|bf16] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Layer(nn.Module):
    def __init__(self, cfg: dict) -> None:
        super().__init__()
        h, nh, kv, d, inter = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"], cfg["inter"]
        self.nh, self.kv, self.d = nh, kv, d
        self.input_layernorm = RMSNorm(h, cfg["eps"])
        self.q_proj = nn.Linear(h, nh * d, bias=False)
        self.k_proj = nn.Linear(h, kv * d, bias=False)
        self.v_proj = nn.Linear(h, kv * d, bias=False)
        self.o_proj = nn.Linear(nh * d, h, bias=False)
        self.post_attention_layernorm = RMSNorm(h, cfg["eps"])
        self.gate_proj = nn.Linear(h, inter, bias=False)
        self.up_proj = nn.Linear(h, inter, bias=False)
        self.down_proj = nn.Linear(inter, h, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        y = self.input_layernorm(x)
        q = self.q_proj(y).view(b, s, self.nh, self.d).transpose(1, 2)
        k = self.k_proj(y).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(y).view(b, s, self.kv, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        g = self.nh // self.kv
        # transformers' repeat_kv: key/value head i serves query heads i*G .. i*G+G-1.
        k = k.repeat_interleave(g, dim=1)
        v = v.repeat_interleave(g, dim=1)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(attn.transpose(1, 2).reshape(b, s, self.nh * self.d))
        y = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))


class Decoder(nn.Module):
    def __init__(self, cfg: dict) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg["layers"]))
        self.norm = RMSNorm(cfg["hidden"], cfg["eps"])
        self.lm_head = nn.Linear(cfg["hidden"], cfg["vocab"], bias=False)
        d = cfg["head_dim"]
        inv_freq = 1.0 / (cfg["theta"] ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, embeds: torch.Tensor, rows: slice) -> torch.Tensor:
        """Logits of the rows `rows` of every sample (the response's predicting positions)."""
        s = embeds.shape[1]
        freqs = torch.arange(s, dtype=torch.float32, device=embeds.device)[:, None] * self.inv_freq[None, :]
        emb = torch.cat([freqs, freqs], dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        x = embeds
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x[:, rows]))


def read_config(model: str) -> dict:
    with open(os.path.join(model, "config.json")) as f:
        raw = json.load(f)
    c = raw.get("text_config", raw)
    heads = c["num_attention_heads"]
    return {
        "hidden": c["hidden_size"],
        "heads": heads,
        "kv_heads": c.get("num_key_value_heads", heads),
        "head_dim": c.get("head_dim") or c["hidden_size"] // heads,
        "inter": c["intermediate_size"],
        "layers": c["num_hidden_layers"],
        "vocab": c["vocab_size"],
        "eps": float(c.get("rms_norm_eps", 1e-6)),
        "theta": float(c.get("rope_theta", 10000.0)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="model directory (its config.json gives the sizes)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--response-tokens", type=int, default=32)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads (default: every core)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32", help="bf16: torch.autocast")
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    a = ap.parse_args()
    dev = torch.device(a.device)
    for name in ("batch", "prompt_tokens", "response_tokens", "steps", "threads"):
        if getattr(a, name) < 1:
            sys.exit(f"train_torch: --{name.replace('_', '-')} must be at least 1")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cfg = read_config(a.model)
    model = Decoder(cfg).to(dev)
    # transformers' initialisation scale; the values do not change the timing.
    for p in model.parameters():
        if p.dim() == 2:
            nn.init.normal_(p, std=0.02)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)

    b, p, r = a.batch, a.prompt_tokens, a.response_tokens
    embeds = torch.rand(b, p + r, cfg["hidden"], device=dev) - 0.5
    targets = torch.randint(0, cfg["vocab"], (b, r), device=dev)
    bf16 = a.dtype == "bf16"

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize()

    rows = slice(p - 1, p - 1 + r)  # the logits at position t predict the token at t + 1

    def update() -> float:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(embeds, rows)
        lp = torch.log_softmax(logits.float(), dim=-1).gather(-1, targets[..., None]).squeeze(-1)
        loss = -lp.mean(dim=1).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    first = update()
    sync()
    if not math.isfinite(first):
        sys.exit(f"train_torch: the loss is {first}")
    times = []
    for _ in range(a.steps):
        start = time.perf_counter()
        update()
        sync()
        times.append(time.perf_counter() - start)
    total = sum(times)
    result = {
        "model": os.path.basename(os.path.normpath(a.model)),
        "framework": f"torch {torch.__version__}",
        "threads": torch.get_num_threads(),
        "device": str(dev),
        "dtype": a.dtype,
        "batch": b,
        "prompt": p,
        "response": r,
        "steps": a.steps,
        "parameters": params,
        "tokens_per_s": b * (p + r) * a.steps / total,
        "samples_per_s": b * a.steps / total,
        "step_s": statistics.median(times),
    }
    if a.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['model']}: torch {torch.__version__}, {result['threads']} threads, {params:,} parameters, "
            f"batch {b} x ({p} + {r}): {result['tokens_per_s']:.0f} tokens/s, "
            f"{result['samples_per_s']:.2f} samples/s, {result['step_s']:.3f} s/step"
        )


if __name__ == "__main__":
    main()
