"""The exact modules :func:`posenc.torch.patch_rope` puts in place of the
rotary modules of transformers' vision towers (RoPE over the two axes of an
image grid), and how it builds them."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

import posenc

__all__ = [
    "EXACT_VISION",
    "VISION_TOWERS",
    "ExactLlama4VisionRotaryEmbedding",
    "ExactVisionRotaryEmbedding",
    "is_vision_tower",
    "vision_replacement",
]

#: the vision towers' rotary modules patch_rope replaces (class name: what it returns)
VISION_TOWERS = {
    "Qwen2VLVisionRotaryEmbedding": "tables",  # float32 (cos, sin), whatever x's dtype
    "Qwen2_5_VLVisionRotaryEmbedding": "tables",
    "PixtralVisionRotaryEmbedding": "tables",  # (cos, sin) in x's dtype
    "Llama4VisionRotaryEmbedding": "complex",  # freqs_ci, complex64, of the fixed grid
}
#: the towers whose tables are returned in the input's dtype (the others in float32)
_CAST_TO_INPUT = ("PixtralVisionRotaryEmbedding",)


def _work(dtype: torch.dtype) -> torch.dtype:
    """posenc's tables in float32, float64 for a float64 model."""
    return torch.float64 if dtype == torch.float64 else torch.float32


class ExactVisionRotaryEmbedding(nn.Module):
    """What :func:`patch_rope` puts in place of the rotary module of
    Qwen2-VL's and Qwen2.5-VL's vision towers and of Pixtral's.

    Its ``forward(x, position_ids)`` takes the ``(N, 2)`` ids of the
    patches (height, width) and returns what the replaced module's did:
    ``cos``, ``sin`` of shape ``(N, head_dim)`` in the half layout
    (``cat([h, w] * 2)``), from :func:`posenc.rope_axes_cos_sin` of
    :func:`posenc.scaling.from_hf` of the tower's config (Qwen2-VL: each
    axis a RoPE of its own, ``split="blocks"``; Pixtral: one RoPE whose even
    frequencies turn the height, the odd the width, ``split="strided"``).
    The tables are posenc's exact float32 ones, returned in float32 (Qwen2-VL,
    Qwen2.5-VL) or rounded once to ``x.dtype`` (Pixtral), as the replaced
    module returns them; float64 for a float64 ``x``.  It holds no float
    tensor of its own, so ``model.to(dtype)`` cannot round its frequencies;
    the replaced module is kept as ``original`` for :meth:`RopePatch.remove`.
    """

    def __init__(self, original: nn.Module, readings: dict[str, Any]) -> None:
        super().__init__()
        self.original = original
        self.config = original.config
        self.readings = readings
        self.cast = type(original).__name__ in _CAST_TO_INPUT
        if hasattr(original, "attention_scaling"):
            self.attention_scaling = original.attention_scaling

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        work = _work(x.dtype)
        cos, sin = posenc.rope_axes_cos_sin(position_ids, **self.readings, dtype=work, xp=torch)
        if self.cast:
            return cos.to(x.dtype), sin.to(x.dtype)
        return cos, sin

    def extra_repr(self) -> str:
        return str(self.readings)


class ExactLlama4VisionRotaryEmbedding(nn.Module):
    """What :func:`patch_rope` puts in place of Llama 4's
    ``Llama4VisionRotaryEmbedding``.

    Its ``forward(hidden_states)`` returns what the replaced module's did:
    ``freqs_ci``, the complex ``cos + i sin`` of shape ``(n * n + 1, 1,
    head_dim / 2)`` of the tower's fixed ``n x n`` grid (``n = image_size //
    patch_size``): the patch at column ``x``, row ``y`` at the ids ``(x + 1,
    y + 1)``, pairs of neighbours (``layout="interleaved"``), then the class
    token, not rotated (``1 + 0i``).  The values are posenc's exact float32
    tables (:func:`posenc.rope_axes_cos_sin` at :func:`posenc.grid_ids`), in
    complex64 (complex128 for float64 ``hidden_states``).  It holds no
    tensor of its own: ``model.to(torch.bfloat16)``, which turns the
    replaced module's complex buffer into its real part (its sines lost),
    leaves it exact.
    """

    def __init__(self, original: nn.Module, readings: dict[str, Any]) -> None:
        super().__init__()
        self.original = original
        self.config = original.config
        self.readings = readings
        self.side = int(original.config.image_size) // int(original.config.patch_size)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        work = _work(hidden_states.dtype)
        n = self.side
        ids = posenc.grid_ids(
            (n, n), offset=1, indexing="xy", suffix_tokens=1, dtype=torch.float32, device=hidden_states.device, xp=torch
        ).to(torch.int64)  # small integers, exact in float32: the integer ids of posenc's exact tables
        cos, sin = posenc.rope_axes_cos_sin(ids, **self.readings, dtype=work, xp=torch)
        return torch.complex(cos[..., ::2], sin[..., ::2])[:, None, :]

    def extra_repr(self) -> str:
        return f"side={self.side}, {self.readings}"


#: the classes above (patch_rope does not patch them again, nor look inside)
EXACT_VISION = (ExactVisionRotaryEmbedding, ExactLlama4VisionRotaryEmbedding)


def is_vision_tower(module: nn.Module) -> bool:
    """A transformers vision tower's rotary module (RoPE over several axes)."""
    return "VisionRotaryEmbedding" in type(module).__name__ and not isinstance(module, EXACT_VISION)


def vision_replacement(module: nn.Module) -> nn.Module:
    """The exact module for a vision tower's rotary module; ValueError
    (naming the class) for the towers posenc does not reproduce."""
    cls = type(module).__name__
    if cls not in VISION_TOWERS or not type(module).__module__.startswith("transformers"):
        msg = (
            f"{cls} cannot be patched: of the vision towers, posenc patches those of Qwen2-VL, Qwen2.5-VL, "
            "Pixtral and Llama 4 (pass strict=False to patch the others)"
        )
        raise ValueError(msg)
    config = getattr(module, "config", None)
    try:
        kw = posenc.scaling.from_hf(config)
    except (ValueError, TypeError) as exc:
        msg = f"{cls} cannot be patched: posenc cannot read its config ({exc})"
        raise ValueError(msg) from exc
    if "axes_dim" not in kw or len(kw["axes_dim"]) != 2:  # pragma: no cover - from_hf reads these towers so
        msg = f"{cls} cannot be patched: posenc reads its config as {kw}, not RoPE over the two axes of an image"
        raise ValueError(msg)
    import inspect

    params = list(inspect.signature(module.forward).parameters)
    want = ["hidden_states"] if VISION_TOWERS[cls] == "complex" else ["x", "position_ids"]
    if params != want:
        msg = (
            f"{cls} cannot be patched: its forward takes ({', '.join(params)}), not ({', '.join(want)}) as "
            "posenc reads it"
        )
        raise ValueError(msg)
    new: nn.Module
    if VISION_TOWERS[cls] == "complex":
        new = ExactLlama4VisionRotaryEmbedding(module, kw)
    else:
        new = ExactVisionRotaryEmbedding(module, kw)
    _self_check(cls, module, new)
    return new


#: a patched module's tables may differ from the tower's own by the tower's rounding (its ``inv_freq`` in
#: bfloat16 at ids up to 3: 1e-2), never by a convention (another axis order, split or layout: 0.3 and more)
_SELF_CHECK = 0.05


def _self_check(cls: str, module: nn.Module, new: nn.Module) -> None:
    """The tower's own tables at a few small ids against the replacement's: a
    ValueError where they differ by a convention (a transformers release that
    changed the module), nothing where they cannot be compared."""
    buffers = list(module.buffers())
    dev = buffers[0].device if buffers else torch.device("cpu")
    if dev.type == "meta":
        return
    with torch.no_grad():
        if isinstance(new, ExactLlama4VisionRotaryEmbedding):
            own = module(torch.zeros(1, device=dev))
            if not (isinstance(own, torch.Tensor) and own.is_complex()):
                return  # cast to its real part by model.to(dtype): what patching repairs
            pairs = [(own, new(torch.zeros(1, device=dev)))]
        else:
            ids = torch.tensor([[0, 0], [1, 0], [0, 1], [1, 1], [2, 3]], device=dev)
            x = torch.zeros(1, device=dev)
            pairs = list(zip(module(x, ids), new(x, ids)))
    for got, ours in pairs:
        if got.shape != ours.shape or float((got.to(ours.dtype) - ours).abs().max()) > _SELF_CHECK:
            msg = (
                f"{cls} cannot be patched: its own tables differ from posenc's reading of its config "
                f"({dict(new.readings)}): a transformers release posenc does not know yet"
            )
            raise ValueError(msg)
