"""The exact stand-ins :func:`posenc.torch.patch_rope` puts in place of the
rotary position modules of diffusers' video and image transformers: Wan
(``WanRotaryPosEmbed``), HunyuanVideo (``HunyuanVideoRotaryPosEmbed``) and
Qwen-Image (``QwenEmbedRope``, ``QwenEmbedLayer3DRope``).

Each returns what the replaced module's ``forward`` returned (same
signature, shapes and layouts), computed from posenc's exact multi-axis
tables (:func:`posenc.rope_axes_cos_sin` over :func:`posenc.grid_ids`), and
holds no floating-point tensor: ``model.to(torch.bfloat16)`` cannot round
its tables (Wan's own module keeps them in buffers that it does round).
The real tables are float32, as the modules return them in a float32
model, and float64 where the work is float64 (float64 hidden states; for
Qwen-Image, whose forward takes no tensor, a model converted with
``.double()``: complex128 instead of complex64).

CogVideoX has no such module: its pipeline forms the tables with
``get_3d_rotary_pos_embed`` and passes them to the transformer's
``forward`` (``image_rotary_emb``); see :func:`posenc.torch.patch_rope` for
the exact tables to pass instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import posenc

__all__ = [
    "REPLACEMENTS",
    "ExactHunyuanVideoRotaryPosEmbed",
    "ExactQwenEmbedLayer3DRope",
    "ExactQwenEmbedRope",
    "ExactWanRotaryPosEmbed",
]


def _work(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _refuse(cls: str, why: str) -> ValueError:
    return ValueError(f"{cls} cannot be patched: {why} (pass strict=False to patch the others)")


class ExactWanRotaryPosEmbed(nn.Module):
    """What :func:`~posenc.torch.patch_rope` puts in place of diffusers'
    ``WanRotaryPosEmbed`` (Wan 2.1 / 2.2, Wan VACE, Wan Animate, Sana
    Video).

    ``forward(hidden_states)`` of a latent of shape ``(batch, channels,
    frames, height, width)`` returns ``(cos, sin)`` of shape ``(1, tokens,
    1, head_dim)``: the patch grid's ids ``(frame, row, column)``, one RoPE
    of widths ``(t_dim, h_dim, w_dim)`` per axis, pairs of neighbours
    (:func:`posenc.rope_axes_cos_sin`, ``layout="interleaved"``), in
    float32 (float64 for float64 hidden states).  Wan's own module slices
    buffers that ``model.to(torch.bfloat16)`` rounds to bfloat16 and that
    end at ``max_seq_len`` positions per axis; these tables are computed for
    the grid of each call.

    The replaced module (its buffers) is kept outside the model's tree and
    converted with it (``.to(dtype / device)``, ``to_empty``), so that
    ``handle.remove()`` puts back a module that matches the model.
    """

    def __init__(
        self, attention_head_dim: int, patch_size: Any, max_seq_len: int, theta: float = 10000.0,
        original: nn.Module | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.attention_head_dim = int(attention_head_dim)
        self.patch_size = tuple(int(p) for p in patch_size)
        self.max_seq_len = int(max_seq_len)
        self.theta = float(theta)
        self.h_dim = self.w_dim = 2 * (self.attention_head_dim // 6)
        self.t_dim = self.attention_head_dim - self.h_dim - self.w_dim
        self.__dict__["_original"] = original  # not a submodule: not patched, audited or listed again

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if self._original is not None:
            self._original._apply(fn, *args, **kwargs)
        return super()._apply(fn, *args, **kwargs)

    def forward(self, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _, _, frames, height, width = hidden_states.shape
        p_t, p_h, p_w = self.patch_size
        grid = (frames // p_t, height // p_h, width // p_w)
        ids = posenc.grid_ids(grid, device=hidden_states.device, xp=torch)
        cos, sin = posenc.rope_axes_cos_sin(
            ids, (self.t_dim, self.h_dim, self.w_dim), base=self.theta, layout="interleaved",
            dtype=_work(hidden_states.dtype),
        )  # fmt: skip
        return cos[None, :, None, :], sin[None, :, None, :]

    def extra_repr(self) -> str:
        dims = (self.t_dim, self.h_dim, self.w_dim)
        return f"axes_dim={dims}, patch_size={self.patch_size}, theta={self.theta}"


def _wan(module: nn.Module) -> ExactWanRotaryPosEmbed:
    cls = type(module).__name__
    try:
        new = ExactWanRotaryPosEmbed(module.attention_head_dim, module.patch_size, module.max_seq_len)
        ok = (new.t_dim, new.h_dim, new.w_dim) == (module.t_dim, module.h_dim, module.w_dim)
        table = module.freqs_cos
    except (AttributeError, TypeError, ValueError):
        ok = False
    if not ok:
        raise _refuse(cls, "not the attributes of diffusers' WanRotaryPosEmbed")
    # the module keeps no theta: diffusers builds it with the default 10000 only; its
    # buffer (where it holds values) says so, to its own rounding (read once, here, on the host:
    # float64 may not exist on its device)
    if table.device.type != "meta":
        rows = torch.arange(table.shape[0])
        want, _ = posenc.rope_axes_cos_sin(
            torch.stack([rows] * 3, dim=-1), (new.t_dim, new.h_dim, new.w_dim), base=new.theta, dtype=torch.float64
        )
        # its rounding (float32 or a cast's) and the float32 angles it forms on MPS
        tol = torch.finfo(table.dtype).eps + table.shape[0] * 2.0**-23
        have = table.detach().to("cpu").double()
        if want.shape != have.shape or float((want - have).abs().max()) > tol:
            raise _refuse(cls, "its tables are not those of theta 10000 (the only theta diffusers builds it with)")
    new.__dict__["_original"] = module
    return new


class ExactHunyuanVideoRotaryPosEmbed(nn.Module):
    """What :func:`~posenc.torch.patch_rope` puts in place of diffusers'
    ``HunyuanVideoRotaryPosEmbed``.

    ``forward(hidden_states)`` of a latent of shape ``(batch, channels,
    frames, height, width)`` returns ``(cos, sin)`` of shape ``(tokens,
    sum(rope_dim))``: ids ``(frame, row, column)`` of the patch grid, one
    RoPE of width ``rope_dim[k]`` and base ``theta`` (256) per axis, pairs of
    neighbours, in float32 (float64 for float64 hidden states), where
    diffusers' module forms the angles in float32.
    """

    def __init__(self, patch_size: int, patch_size_t: int, rope_dim: Any, theta: float = 256.0) -> None:
        super().__init__()
        self.patch_size = int(patch_size)
        self.patch_size_t = int(patch_size_t)
        self.rope_dim = tuple(int(d) for d in rope_dim)
        self.theta = float(theta)

    def forward(self, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _, _, frames, height, width = hidden_states.shape
        grid = (frames // self.patch_size_t, height // self.patch_size, width // self.patch_size)
        ids = posenc.grid_ids(grid, device=hidden_states.device, xp=torch)
        return posenc.rope_axes_cos_sin(
            ids, self.rope_dim, base=self.theta, layout="interleaved", dtype=_work(hidden_states.dtype)
        )

    def extra_repr(self) -> str:
        return (
            f"rope_dim={self.rope_dim}, patch_size={self.patch_size}, patch_size_t={self.patch_size_t}, "
            f"theta={self.theta}"
        )


def _hunyuan_video(module: nn.Module) -> ExactHunyuanVideoRotaryPosEmbed:
    try:
        rope_dim = list(module.rope_dim)
        if len(rope_dim) != 3:
            raise ValueError
        return ExactHunyuanVideoRotaryPosEmbed(module.patch_size, module.patch_size_t, rope_dim, module.theta)
    except (AttributeError, TypeError, ValueError):
        raise _refuse(type(module).__name__, "not the attributes of diffusers' HunyuanVideoRotaryPosEmbed") from None


class ExactQwenEmbedRope(nn.Module):
    """What :func:`~posenc.torch.patch_rope` puts in place of diffusers'
    ``QwenEmbedRope`` (Qwen-Image, Qwen-Image-Edit) and
    ``QwenEmbedLayer3DRope`` (Qwen-Image-Layered:
    :class:`ExactQwenEmbedLayer3DRope`).

    The same ``forward`` (``(video_fhw, device=None, max_txt_seq_len=None)``,
    the layered one ``(video_fhw, max_txt_seq_len, device=None)``) returns
    ``(vid_freqs, txt_freqs)``, complex tensors of shapes ``(image tokens,
    sum(axes_dim) / 2)`` and ``(max_txt_seq_len, sum(axes_dim) / 2)``: one
    ``exp(i p w)`` per plane, axes (frame, row, column) one after the other.
    Image ``k`` of ``video_fhw`` has ids ``(k + frame, row, column)``, rows
    and columns centred with ``scale_rope`` (``-ceil(h / 2) .. h // 2 -
    1``); the layered module's last image (the condition image) has frame
    ``-1``.  The text tokens have ids ``(m, m, m)`` from ``m`` = the largest
    image index on (``max(h // 2, w // 2)`` with ``scale_rope``, the number
    of layers at least for the layered module).

    The tables are complex64 as diffusers' (which forms the angles in
    float32 from a table of 4096 positions); complex128 once the module (the
    model) is converted to float64 (``.double()``, ``.to(torch.float64)``),
    as its forward takes no tensor whose dtype could say so.
    """

    def __init__(self, theta: float, axes_dim: Any, scale_rope: bool = False, *, layered: bool = False) -> None:
        super().__init__()
        self.theta = float(theta)
        self.axes_dim = tuple(int(d) for d in axes_dim)
        self.scale_rope = bool(scale_rope)
        self.layered = bool(layered)
        self.real_dtype = torch.float32

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        # follow the model's float dtype (complex128 for float64 work), as a float buffer would
        probe = fn(torch.empty(0, dtype=self.real_dtype))
        self.real_dtype = _work(probe.dtype)
        return super()._apply(fn, *args, **kwargs)

    def _image(self, shape: Any, frame: int | None, device: Any) -> torch.Tensor:
        f, h, w = (int(n) for n in shape)
        center = (False, self.scale_rope, self.scale_rope)
        if frame is None:  # the layered module's condition image: frame -1
            if f != 1:
                msg = f"the condition image (the last entry of `video_fhw`) must have 1 frame, got {f}"
                raise ValueError(msg)
            frame = -1
        return posenc.grid_ids((f, h, w), center=center, offset=(frame, 0, 0), device=device, xp=torch)

    def _forward(self, video_fhw: Any, device: Any, max_txt_seq_len: Any) -> tuple[torch.Tensor, torch.Tensor]:
        if max_txt_seq_len is None:
            msg = "`max_txt_seq_len` must be provided"
            raise ValueError(msg)
        if isinstance(video_fhw, list):  # a batch: the first entry's shapes (diffusers warns if they differ)
            video_fhw = video_fhw[0]
        if not isinstance(video_fhw, list):
            video_fhw = [video_fhw]
        last = len(video_fhw) - 1
        parts = []
        top = 0
        for k, fhw in enumerate(video_fhw):
            _, h, w = (int(n) for n in fhw)
            parts.append(self._image(fhw, None if self.layered and k == last else k, device))
            top = max(h // 2, w // 2, top) if self.scale_rope else max(h, w, top)
        if self.layered:
            top = max(top, last)
        text = torch.arange(top, top + int(max_txt_seq_len), device=device)
        ids = torch.cat([*parts, torch.stack([text] * 3, dim=-1).to(parts[0].dtype)])
        half = sum(self.axes_dim) // 2
        cos, sin = posenc.rope_axes_cos_sin(ids, self.axes_dim, base=self.theta, layout="half", dtype=self.real_dtype)
        table = torch.complex(cos[:, :half], sin[:, :half])
        n = ids.shape[0] - text.shape[0]
        return table[:n], table[n:]

    def forward(
        self, video_fhw: Any, device: Any = None, max_txt_seq_len: int | torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self._forward(video_fhw, device, max_txt_seq_len)

    def extra_repr(self) -> str:
        return f"theta={self.theta}, axes_dim={self.axes_dim}, scale_rope={self.scale_rope}, layered={self.layered}"


class ExactQwenEmbedLayer3DRope(ExactQwenEmbedRope):
    """:class:`ExactQwenEmbedRope` for ``QwenEmbedLayer3DRope`` (Qwen-Image-Layered), with its ``forward``."""

    def __init__(self, theta: float, axes_dim: Any, scale_rope: bool = False) -> None:
        super().__init__(theta, axes_dim, scale_rope, layered=True)

    def forward(  # type: ignore[override]
        self, video_fhw: Any, max_txt_seq_len: int | torch.Tensor, device: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self._forward(video_fhw, device, max_txt_seq_len)


def _qwen(layered: bool) -> Callable[[nn.Module], ExactQwenEmbedRope]:
    def build(module: nn.Module) -> ExactQwenEmbedRope:
        try:
            axes_dim = list(module.axes_dim)
            if len(axes_dim) != 3:
                raise ValueError
            if layered:
                return ExactQwenEmbedLayer3DRope(module.theta, axes_dim, module.scale_rope)
            return ExactQwenEmbedRope(module.theta, axes_dim, module.scale_rope)
        except (AttributeError, TypeError, ValueError):
            raise _refuse(type(module).__name__, "not the attributes of diffusers' QwenEmbedRope") from None

    return build


#: diffusers' class name -> the builder of its exact replacement (ValueError naming the class if it cannot)
REPLACEMENTS: dict[str, Callable[[nn.Module], nn.Module]] = {
    "WanRotaryPosEmbed": _wan,
    "HunyuanVideoRotaryPosEmbed": _hunyuan_video,
    "QwenEmbedRope": _qwen(layered=False),
    "QwenEmbedLayer3DRope": _qwen(layered=True),
}
