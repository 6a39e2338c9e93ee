"""The torch side of :func:`posenc.audit_rope` for the rotary modules of
transformers' vision towers (RoPE over the two axes of an image grid)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from posenc.torch._audit_common import _cause, _dtype_name, _inv_freq, _positions
from posenc.torch._patch_vision import (
    EXACT_VISION,
    VISION_TOWERS,
    ExactLlama4VisionRotaryEmbedding,
    is_vision_tower,
)

#: patches per side of the grid audited for a tower whose config has no image size (Qwen2-VL, Qwen2.5-VL)
VISION_CONTEXT = 1024


def is_vision(module: Any) -> bool:
    """A vision tower's rotary module, or what patch_rope put in its place."""
    return isinstance(module, EXACT_VISION) or is_vision_tower(module)


def _grid_side(config: Any) -> int:
    size, patch = getattr(config, "image_size", None), getattr(config, "patch_size", None)
    if isinstance(size, int) and isinstance(patch, int) and patch > 0 and size >= patch:
        return size // patch
    return VISION_CONTEXT


def _is_llama4(module: Any) -> bool:
    return isinstance(module, ExactLlama4VisionRotaryEmbedding) or VISION_TOWERS.get(type(module).__name__) == "complex"


def audit_vision(label: str, module: Any, dtype: Any, positions: Any, make: Any) -> Any:
    """The module's own tables against posenc's float64 ones, by position:
    Qwen2-VL, Qwen2.5-VL and Pixtral at the ids ``(p, p)`` (both axes at the
    position) up to the grid's side; Llama 4 over its whole fixed grid, each
    patch at the larger of its two ids."""
    import posenc

    cls = type(module).__name__
    exact = isinstance(module, EXACT_VISION)
    if not exact and cls not in VISION_TOWERS:
        reason = (
            "a vision tower posenc does not reproduce yet (it reproduces those of Qwen2-VL, Qwen2.5-VL, "
            "Pixtral and Llama 4)"
        )
        return make(label, cls, _dtype_name(dtype), False, reason)
    config = module.config
    try:
        kw = module.readings if exact else posenc.scaling.from_hf(config)
    except (ValueError, TypeError) as exc:
        return make(label, cls, _dtype_name(dtype), False, f"posenc cannot reproduce it: {exc}")
    dev = next((b.device for b in module.buffers()), torch.device("cpu"))
    lost = ""
    with torch.no_grad():
        if _is_llama4(module):
            side = _grid_side(config)
            ids = posenc.grid_ids((side, side), offset=1, indexing="xy", suffix_tokens=1, dtype=torch.float64, xp=torch)
            freqs = module(torch.zeros(1, dtype=dtype, device=dev)).reshape(ids.shape[0], -1).to("cpu")
            if freqs.is_complex():
                got = [freqs.real, freqs.imag]
                out_dtype = freqs.real.dtype
            else:  # model.to(dtype) kept the real part of the complex buffer
                got = [freqs, torch.zeros_like(freqs)]
                out_dtype = freqs.dtype
                lost = f"freqs_ci cast to {_dtype_name(freqs.dtype)}: its imaginary part (the sines) dropped"
            tc, ts = posenc.rope_axes_cos_sin(ids, **kw, dtype=torch.float64, xp=torch)
            want = [tc[:, ::2], ts[:, ::2]]
            rows = ids.amax(-1).to(torch.int64).numpy()
        else:
            pos = _positions(_grid_side(config), positions)
            ids = torch.as_tensor(pos)[:, None].expand(-1, 2)
            cos, sin = module(torch.zeros(1, dtype=dtype, device=dev), ids.to(dev))
            got = [cos.to("cpu"), sin.to("cpu")]
            out_dtype = cos.dtype
            want = list(posenc.rope_axes_cos_sin(ids, **kw, dtype=torch.float64, xp=torch))
            rows = pos
    err_rows = np.max([(g.double() - w).abs().amax(-1).numpy() for g, w in zip(got, want)], axis=0)
    floor_rows = np.max([(w.to(out_dtype).double() - w).abs().amax(-1).numpy() for w in want], axis=0)
    pos = np.unique(rows)
    if positions is not None and _is_llama4(module):
        keep = np.intersect1d(pos, _positions(1, positions))
        if keep.size == 0:
            msg = (
                f"`positions` must include positions of the grid of {cls} (0 to {int(pos[-1])}), "
                f"got none of them: {positions!r}"
            )
            raise ValueError(msg)
        pos = keep
    err = np.array([err_rows[rows == p].max() for p in pos])
    floor = np.array([floor_rows[rows == p].max() for p in pos])
    if lost:
        cause = lost
    else:
        inv = None if exact else _inv_freq(module, None)
        cause = _cause(module, inv, {}, out_dtype, err, floor)
    return make(
        label,
        cls,
        _dtype_name(out_dtype),
        True,
        cause=cause,
        positions=tuple(int(p) for p in pos),
        error=tuple(float(e) for e in err),
        floor=tuple(float(f) for f in floor),
    )
