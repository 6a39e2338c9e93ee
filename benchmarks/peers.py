"""The peers' formulas the device check measures posenc against, written out
for machines where the peer library is not installed.

diffusers is not on every GPU machine; its two formulas the device check
needs are short, and are written here from their definitions (the unit test
``tests/test_benchmarks.py`` checks them equal to diffusers' own functions
where diffusers is installed):

* :func:`timestep_embedding`: the DDPM timestep embedding of diffusers'
  ``get_timestep_embedding`` (float32 frequencies ``exp(-ln(max_period) * i /
  (half - shift))``, float32 angles, ``[sin, cos]`` halves or ``[cos, sin]``
  when flipped, a zero column for odd sizes);
* :func:`flux_rope`: the cos / sin of diffusers' ``FluxPosEmbed`` (per axis,
  float64 frequencies ``1 / theta ** (2i / d)`` and angles, each value twice
  in a row, cast to float32; axes concatenated).

The Hugging Face rotary formulas (``LlamaRotaryEmbedding.forward`` and
``apply_rotary_pos_emb``) are here too, for the same reason: the check times
them against posenc on any machine with torch.
"""

from __future__ import annotations

import math
from typing import Any


def timestep_embedding(
    t: Any, dim: int, flip_sin_to_cos: bool = False, downscale_freq_shift: float = 1.0, scale: float = 1.0,
    max_period: float = 10000.0,
) -> Any:
    """diffusers' ``get_timestep_embedding`` of the 1-D tensor ``t``, written out."""
    import torch

    half = dim // 2
    i = torch.arange(half, dtype=torch.float32, device=t.device)
    w = torch.exp(i * (-math.log(max_period)) / (half - downscale_freq_shift))
    a = scale * (t[:, None].float() * w[None, :])
    parts = (torch.cos(a), torch.sin(a)) if flip_sin_to_cos else (torch.sin(a), torch.cos(a))
    out = torch.cat(parts, dim=-1)
    if dim % 2:
        out = torch.cat((out, out.new_zeros(out.shape[0], 1)), dim=-1)
    return out


def flux_rope(ids: Any, axes_dim: list[int], theta: float = 10000.0) -> tuple[Any, Any]:
    """diffusers' ``FluxPosEmbed(theta, axes_dim)(ids)``, written out: ``(cos, sin)`` of ``(n, sum(axes_dim))``."""
    import torch

    wide = torch.float32 if ids.device.type == "mps" else torch.float64
    pos = ids.float()
    cos, sin = [], []
    for k, d in enumerate(axes_dim):
        w = 1.0 / theta ** (torch.arange(0, d, 2, dtype=wide, device=ids.device) / d)
        a = torch.outer(pos[:, k], w)
        cos.append(a.cos().repeat_interleave(2, dim=1).float())
        sin.append(a.sin().repeat_interleave(2, dim=1).float())
    return torch.cat(cos, dim=-1), torch.cat(sin, dim=-1)


def rope_mixed(ids: Any, freqs: Any) -> tuple[Any, Any]:
    """RoPE-Mixed's tables of learned frequencies (``freqs`` of ``(heads, m,
    axes)``, ids of ``(n, axes)``), the formula a model runs per forward:
    the angles ``ids @ freqs^T`` in float32, cos and sin repeated pairwise,
    ``(heads, n, 2m)``."""
    import torch

    a = torch.einsum("na,hma->hnm", ids.float(), freqs)
    return a.cos().repeat_interleave(2, dim=-1), a.sin().repeat_interleave(2, dim=-1)


def hf_rotary(inv_freq: Any, position_ids: Any, dtype: Any, scaling: float = 1.0) -> tuple[Any, Any]:
    """Hugging Face's ``LlamaRotaryEmbedding.forward``: ``(cos, sin)`` of ``(batch, seq, dim)`` in ``dtype``."""
    import torch

    f = position_ids[..., None].float() * inv_freq.float()
    emb = torch.cat((f, f), dim=-1)
    return (emb.cos() * scaling).to(dtype), (emb.sin() * scaling).to(dtype)


def hf_apply(q: Any, k: Any, cos: Any, sin: Any) -> tuple[Any, Any]:
    """Hugging Face's ``apply_rotary_pos_emb(q, k, cos, sin)`` (heads on axis 1)."""
    import torch

    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)

    def rot(x: Any) -> Any:
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    return q * cos + rot(q) * sin, k * cos + rot(k) * sin
