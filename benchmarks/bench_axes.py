"""Multi-axis RoPE from position ids: posenc against diffusers' FluxPosEmbed
and transformers' Qwen2-VL vision rotary module."""

from __future__ import annotations

import contextlib

import numpy as np

import posenc
from posenc import _cache

from .harness import Config, Row, interleaved, median_ms, paired_ratio, torch_thread_settings, torch_threads, verdict

#: Flux at 1024 x 1024: 512 text tokens (ids 0), a 64 x 64 latent (ids (0, row, column))
TEXT, SIDE = 512, 64
QUICK_TEXT, QUICK_SIDE = 8, 4
AXES = [16, 56, 56]
CASE = "Flux ids (4096+512, 3 axes), 128 dims"


def _truth(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 cos, sin of Flux's RoPE, written from its definition: per
    axis ``ids[:, k] * 10000 ** (-2i / d_k)``, each angle twice (interleaved)."""
    a = np.concatenate(
        [ids[:, k, None] * 10000.0 ** (-np.arange(0, d, 2, dtype=np.float64) / d) for k, d in enumerate(AXES)], -1
    )
    return np.repeat(np.cos(a), 2, -1), np.repeat(np.sin(a), 2, -1)


def _error(got: tuple, truth: tuple) -> float:
    return max(float(np.max(np.abs(np.asarray(g, dtype=np.float64) - t))) for g, t in zip(got, truth))


def run(cfg: Config) -> list[Row]:
    text, side = (QUICK_TEXT, QUICK_SIDE) if cfg.quick else (TEXT, SIDE)
    case = CASE if not cfg.quick else f"Flux ids ({side * side}+{text}, 3 axes), 128 dims"
    ids_np = posenc.grid_ids((1, side, side), prefix_tokens=text)
    truth = _truth(ids_np.astype(np.float64))
    rows: list[Row] = []
    f32 = ids_np.astype(np.float32)
    times = interleaved({"posenc": lambda: posenc.rope_axes_cos_sin(f32, AXES, dtype=np.float32)}, cfg.rounds)
    err = _error(posenc.rope_axes_cos_sin(f32, AXES, dtype=np.float32), truth)
    rows.append(Row("axes", case, "numpy", "posenc", ms=median_ms(times["posenc"]), error=err, status="INFO"))
    try:
        import torch
    except ImportError:  # pragma: no cover
        return rows + [Row("axes", case, "torch-cpu", "-", status="SKIP", note="torch not installed")]
    flux = None
    if cfg.quick:
        note = "not imported in a quick run"
        rows.append(Row("axes", case, "torch-cpu", "diffusers FluxPosEmbed", status="SKIP", note=note))
    else:
        try:
            from diffusers.models.transformers.transformer_flux import FluxPosEmbed

            flux = FluxPosEmbed(theta=10000, axes_dim=AXES)
        except ImportError:
            rows.append(Row("axes", case, "torch-cpu", "diffusers FluxPosEmbed", status="SKIP", note="not installed"))
    # Flux's ids are a float tensor (the pipeline builds them in the latents' dtype)
    ids_t = torch.from_numpy(f32)
    int_ids = torch.from_numpy(ids_np)
    from posenc.torch import AxesRotaryEmbedding

    module = AxesRotaryEmbedding(AXES)
    contestants = {
        "posenc.rope_axes_cos_sin": lambda: posenc.rope_axes_cos_sin(ids_t, AXES),
        "posenc, integer ids": lambda: posenc.rope_axes_cos_sin(int_ids, AXES),
        "posenc.torch.AxesRotaryEmbedding": lambda: module(ids_t),
    }
    if flux is not None:
        contestants["diffusers FluxPosEmbed"] = lambda: flux(ids_t)
    errors = {name: _error(tuple(t.numpy() for t in f()), truth) for name, f in contestants.items()}
    for label, threads in torch_thread_settings(torch):
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch_threads(torch, threads))
            with torch.no_grad():
                times = interleaved(contestants, cfg.rounds)
        for name, ts in times.items():
            row = Row("axes", case, label, name, ms=median_ms(ts), error=errors[name])
            if flux is not None and name != "diffusers FluxPosEmbed":
                row.reference = "diffusers FluxPosEmbed"
                row.ratio = paired_ratio(ts, times["diffusers FluxPosEmbed"])
            if name == "diffusers FluxPosEmbed":
                row.note = "float64 angles, cast to float32"
            row.status = "INFO"
            rows.append(row)
    return rows + _qwen2_vl_rows(cfg, torch)


#: Qwen2-VL's vision tower on a 64 x 64 patch grid (an 896 x 896 image), its
#: default configuration (head_dim 80): posenc's exact tables (the module
#: patch_rope puts in its place) against the tower's own rotary module, warm
#: (every forward of a tower) and cold (posenc's caches emptied: the first)
QWEN_SIDE, QUICK_QWEN_SIDE = 64, 8
QWEN_WARM, QWEN_COLD = 1.0, 2.0


def _qwen2_vl_rows(cfg: Config, torch) -> list[Row]:
    side = QUICK_QWEN_SIDE if cfg.quick else QWEN_SIDE
    case = f"Qwen2-VL vision rotary, {side}x{side} patches, head_dim 80"
    try:
        import transformers
        from transformers.models.qwen2_vl import modeling_qwen2_vl as m
    except ImportError:  # pragma: no cover
        return [Row("axes", case, "torch-cpu", "-", status="SKIP", note="transformers not installed")]
    from posenc.torch import patch_rope

    vcfg = transformers.Qwen2VLVisionConfig()
    own = m.Qwen2VLVisionRotaryEmbedding(vcfg)
    holder = torch.nn.ModuleDict({"rotary": m.Qwen2VLVisionRotaryEmbedding(vcfg)})
    patch_rope(holder)
    exact = holder["rotary"]
    pos = m.get_vision_position_ids(torch.tensor([[1, side, side]]), vcfg.spatial_merge_size)
    x = torch.zeros(side * side, vcfg.embed_dim)
    # truth: per axis ids * 10000**(-2i/40), [h | w] twice (the half layout)
    half = vcfg.embed_dim // vcfg.num_heads // 2
    inv = 10000.0 ** (-np.arange(0, half, 2, dtype=np.float64) / half)
    p = pos.numpy().astype(np.float64)
    a = np.concatenate([p[:, 0, None] * inv, p[:, 1, None] * inv], -1)
    a = np.concatenate([a, a], -1)
    truth = (np.cos(a), np.sin(a))
    contestants = {
        "posenc (patch_rope)": lambda: exact(x, pos),
        "posenc cold": lambda: exact(x, pos),
        "Qwen2VLVisionRotaryEmbedding": lambda: own(x, pos),
    }
    errors = {name: _error(tuple(t.numpy() for t in f()), truth) for name, f in contestants.items()}
    rows: list[Row] = []
    for label, threads in torch_thread_settings(torch):
        with torch_threads(torch, threads), torch.no_grad():
            times = interleaved(contestants, cfg.rounds, setup={"posenc cold": _cache.clear})
        ref = "Qwen2VLVisionRotaryEmbedding"
        for name, ts in times.items():
            row = Row("axes", case, label, name, ms=median_ms(ts), error=errors[name])
            if name == ref:
                row.status, row.note = "INFO", "float32 angle products"
            else:
                target = QWEN_WARM if name != "posenc cold" else QWEN_COLD
                row.reference, row.ratio = ref, paired_ratio(ts, times[ref])
                row.target = f"<= {target:.1f}x" if label.endswith("1 thread") else ""
                row.status = verdict(row.ratio <= target) if row.target else "INFO"
            rows.append(row)
    return rows
