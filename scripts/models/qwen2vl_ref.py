"""Reference pieces of the Qwen2-VL pipeline in numpy, and the checks check_model.py runs with them.

What a loader must reproduce (transformers' Qwen2VLImageProcessor and Qwen2-VL get_rope_index):

* ``smart_resize``: both sides rounded to multiples of ``patch * merge`` (28), the pixel count
  brought within [min_pixels, max_pixels] by scaling both sides by one factor.
* ``patch_rows``: the resized, rescaled, normalised image, repeated ``temporal_patch_size`` times,
  cut into ``[t, h/merge, w/merge, merge, merge, C, temporal, patch, patch]`` order and flattened
  to ``[num_patches, C * temporal * patch * patch]``; ``grid_thw`` = (frames / temporal, h / patch, w / patch).
* ``rope_index``: for each ``<|vision_start|>`` followed by ``<|image_pad|>``, the text before it
  counts on from the previous maximum + 1 on all three axes, then the image's merged grid gets
  (t, row, col) + the position where the image starts; the text after it resumes at max + 1.
"""

from __future__ import annotations

import json
import math

import numpy as np


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def patch_rows(chw: np.ndarray, patch: int, temporal: int, merge: int) -> tuple[np.ndarray, tuple[int, int, int]]:
    """``chw``: one normalised image [C, H, W] (sides multiples of patch * merge)."""
    c, h, w = chw.shape
    frames = np.repeat(chw[None], temporal, axis=0)  # [T, C, H, W]
    gt, gh, gw = frames.shape[0] // temporal, h // patch, w // patch
    x = frames.reshape(gt, temporal, c, gh // merge, merge, patch, gw // merge, merge, patch)
    x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gt * gh * gw, c * temporal * patch * patch), (gt, gh, gw)


def rope_index(ids: list[int], grids: list, image_id: int, start_id: int, merge: int) -> tuple[np.ndarray, int]:
    """M-RoPE positions [3, len(ids)] of one unpadded prompt, and its rope delta."""
    ids = list(ids)
    pieces = []
    st = 0
    images = iter(grids)
    for k, tok in enumerate(ids[:-1]):
        if tok != start_id or ids[k + 1] != image_id:
            continue
        t, h, w = next(images)
        lt, lh, lw = t, h // merge, w // merge
        ed = k + 1  # the first image token
        base = pieces[-1].max() + 1 if pieces else 0
        text = ed - st
        pieces.append(np.tile(np.arange(text), (3, 1)) + base)
        tt = np.repeat(np.arange(lt), lh * lw)
        hh = np.tile(np.repeat(np.arange(lh), lw), lt)
        ww = np.tile(np.arange(lw), lt * lh)
        pieces.append(np.stack([tt, hh, ww]) + text + base)
        st = ed + lt * lh * lw
    if st < len(ids):
        base = pieces[-1].max() + 1 if pieces else 0
        pieces.append(np.tile(np.arange(len(ids) - st), (3, 1)) + base)
    pos = np.concatenate(pieces, axis=1)
    return pos, int(pos.max()) + 1 - len(ids)


def _grid_name(m) -> str:
    names = [i.name for i in m.vision.get_inputs()]
    return "image_grid_thw" if "image_grid_thw" in names else "grid_thw"


def _features(m, rows: np.ndarray, grids: list) -> np.ndarray:
    return m.vision.run(["image_features"], {"pixel_values": rows.astype(np.float32),
                                             _grid_name(m): np.array(grids, np.int64)})[0]


def _merge(m) -> int:
    return m.config["vision_config"]["spatial_merge_size"]


def vision_checks(m, report) -> None:
    vc = m.config["vision_config"]
    patch, temporal, merge = vc["patch_size"], vc["temporal_patch_size"], vc["spatial_merge_size"]
    rng = np.random.RandomState(1)
    a = rng.uniform(-1, 1, (3, 56, 84)).astype(np.float32)
    b = rng.uniform(-1, 1, (3, 84, 56)).astype(np.float32)
    ra, ga = patch_rows(a, patch, temporal, merge)
    rb, gb = patch_rows(b, patch, temporal, merge)
    hidden = m.text_config["hidden_size"]
    fa = _features(m, ra, [ga])
    want = (ra.shape[0] // merge**2, hidden)
    report("vision_encoder image_features [num_patches / merge^2, hidden]", fa.shape == want, f"{fa.shape} == {want}")
    both = _features(m, np.concatenate([ra, rb]), [ga, gb])
    fb = _features(m, rb, [gb])
    d = float(np.abs(both - np.concatenate([fa, fb])).max()) if both.shape[0] == fa.shape[0] + fb.shape[0] else math.inf
    report("vision_encoder two images in one call == each alone", d < 1e-4, f"max diff {d:.2e}")
    if "surfgym" in m.config:
        # The tiny tower reads grid_thw (as the real one does for its rotary positions).
        swapped = _features(m, ra, [(ga[0], ga[2], ga[1])])
        d = float(np.abs(swapped - fa).max())
        report("vision_encoder output depends on grid_thw", d > 1e-3, f"max diff {d:.2e} with h and w swapped")


def _prompt(m, n_images: int, text: str) -> str:
    content = [{"type": "image"}] * n_images + [{"type": "text", "text": text}]
    return m.render_chat([{"role": "user", "content": content}])


def _expand(prompt: str, grids: list, merge: int) -> str:
    parts = prompt.split("<|image_pad|>")
    assert len(parts) == len(grids) + 1
    out = parts[0]
    for (t, h, w), rest in zip(grids, parts[1:]):
        out += "<|image_pad|>" * (t * h * w // merge**2) + rest
    return out


def multimodal_checks(m, report, close) -> None:
    merge = _merge(m)
    vc = m.config["vision_config"]
    image_id, start_id = m.config["image_token_id"], m.config["vision_start_token_id"]
    rng = np.random.RandomState(2)
    img = rng.uniform(-1, 1, (3, 56, 112)).astype(np.float32)
    rows, grid = patch_rows(img, vc["patch_size"], vc["temporal_patch_size"], merge)
    ids = m.tokenizer.encode(_expand(_prompt(m, 1, "What is on this page?"), [grid], merge),
                             add_special_tokens=False).ids
    n_img = sum(1 for t in ids if t == image_id)
    report("multimodal prompt: <|image_pad|> count == t*h*w / merge^2", n_img == grid[0] * grid[1] * grid[2] // merge**2,
           f"{n_img} image tokens for grid {grid}")
    emb = m.embed_ids(np.array([ids]))
    emb[0, np.array(ids) == image_id] = _features(m, rows, [grid])
    pos, delta = rope_index(ids, [grid], image_id, start_id, merge)
    mask = np.ones((1, len(ids)), np.int64)
    logits, past = m.step(emb, mask, pos[:, None, :], m.empty_past(1))
    flat, _ = m.step(emb, mask, np.arange(len(ids))[None], m.empty_past(1))
    d = float(np.abs(logits - flat).max())
    report("decoder reads M-RoPE: image-grid positions change the logits vs 1-D positions", d > 1e-3,
           f"max diff {d:.2e}; rope delta {delta}")
    # Decoding continues at max + 1 on every axis: cached steps == a full pass with those positions.
    new, step_logits = [], []
    nxt_pos = int(pos.max()) + 1
    for k in range(4):
        step_logits.append(logits[0, -1])
        tok = int(np.argmax(logits[0, -1]))
        new.append(tok)
        mask = np.ones((1, mask.shape[1] + 1), np.int64)
        logits, past = m.step(m.embed_ids(np.array([[tok]])), mask, np.full((3, 1, 1), nxt_pos + k), past)
    full_emb = np.concatenate([emb, m.embed_ids(np.array([new[:-1]]))], axis=1)
    full_pos = np.concatenate([pos, np.tile(np.arange(nxt_pos, nxt_pos + len(new) - 1), (3, 1))], axis=1)
    ref, _ = m.step(full_emb, np.ones((1, full_emb.shape[1]), np.int64), full_pos[:, None, :], m.empty_past(1))
    ref = ref[0, len(ids) - 1:]
    diff = max(float(np.abs(a - b).max()) for a, b in zip(step_logits, ref))
    ok, detail = close(diff, float(np.abs(ref).max()))
    report("image prompt: cached decoding at max position + 1 == full recompute", ok, detail)


def compare(m, path: str, report) -> None:
    """Compares what a loader computed (JSON written by engine/tests/it/onnx_qwen2vl.rs) with the reference."""
    with open(path, encoding="utf-8") as f:
        got = json.load(f)
    vc = m.config["vision_config"]
    pre = json.load(open(f"{m.path}/preprocessor_config.json", encoding="utf-8"))
    factor = vc["patch_size"] * vc["spatial_merge_size"]
    for (h, w), want in got.get("resize", []):
        ref = smart_resize(h, w, factor, pre["min_pixels"], pre["max_pixels"])
        report(f"smart_resize({h}, {w})", list(ref) == want, f"reference {ref}, loader {want}")
    img = got["image"]
    rgb = np.array(img["rgb"], np.float32).reshape(img["height"], img["width"], 3)
    chw = ((rgb * pre["rescale_factor"] - np.array(pre["image_mean"])) / np.array(pre["image_std"])).transpose(2, 0, 1)
    rows, grid = patch_rows(chw.astype(np.float32), vc["patch_size"], vc["temporal_patch_size"], vc["spatial_merge_size"])
    loader_rows = np.array(got["pixel_values"], np.float32).reshape(rows.shape if rows.size == len(got["pixel_values"]) else (-1,))
    d = float(np.abs(loader_rows - rows).max()) if loader_rows.shape == rows.shape else math.inf
    report("pixel_values rows == reference patch order", d < 1e-4 and list(grid) == got["grid_thw"],
           f"max diff {d:.2e}, grid {list(grid)} vs {got['grid_thw']}")
    ids = got["ids"]
    ref_pos, _ = rope_index(ids, got["grids"], m.config["image_token_id"], m.config["vision_start_token_id"],
                            vc["spatial_merge_size"])
    loader_pos = np.array(got["positions"], np.int64)
    same = loader_pos.shape == ref_pos.shape and bool((loader_pos == ref_pos).all())
    report("M-RoPE position ids == reference get_rope_index", same,
           f"{len(ids)} tokens, max position {int(ref_pos.max())}")
    # The loader's greedy output on that prompt, from the loader's own pixel rows: the
    # reference merges the features, prefills with its positions, decodes at max + 1 on.
    rows = np.array(got["prompt_pixel_values"], np.float32).reshape(-1, rows.shape[1])
    emb = m.embed_ids(np.array([ids]))
    emb[0, np.array(ids) == m.config["image_token_id"]] = _features(m, rows, got["grids"])
    logits, past = m.step(emb, np.ones((1, len(ids)), np.int64), ref_pos[:, None, :], m.empty_past(1))
    stops, new, nxt = m.stop_ids(), [], int(ref_pos.max()) + 1
    for k in range(got["max_new_tokens"]):
        tok = int(np.argmax(logits[0, -1]))
        if tok in stops:
            break
        new.append(tok)
        total = len(ids) + k + 1
        logits, past = m.step(m.embed_ids(np.array([[tok]])), np.ones((1, total), np.int64),
                              np.full((3, 1, 1), nxt + k), past)
    report("greedy tokens == the loader's", new == got["greedy"], f"reference {new}, loader {got['greedy']}")
