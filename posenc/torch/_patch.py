"""Make the RoPE of a loaded transformers model exact, in one call: :func:`patch_rope`."""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import nn

import posenc
from posenc import _checks
from posenc.torch._patch_vision import EXACT_VISION, is_vision_tower, vision_replacement

from ._patch_diffusers import REPLACEMENTS as _DIFFUSERS_ROTARY

__all__ = ["patch_rope"]


def _readings(module: nn.Module) -> dict[str | None, dict[str, Any]]:
    """``{layer_type: from_hf(config, layer_type)}`` of a transformers rotary
    module; ValueError (naming the module's class) where posenc cannot
    reproduce it."""
    cls = type(module).__name__
    config = getattr(module, "config", None)
    try:
        params = inspect.signature(module.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover
        params = {}  # type: ignore[assignment]
    if config is None or "position_ids" not in params:
        msg = (
            f"{cls} cannot be patched: posenc reproduces the rotary modules of transformers' language models "
            "(built from their config, called with position_ids) and of the vision towers of Qwen2-VL, Qwen2.5-VL, "
            "Pixtral and Llama 4; other modules are not patched yet (pass strict=False to patch the others)"
        )
        raise ValueError(msg)
    types = getattr(module, "layer_types", None) if "layer_type" in params else None
    out: dict[str | None, dict[str, Any]] = {}
    for lt in types or [None]:
        try:
            kw = posenc.scaling.from_hf(config, layer_type=lt)
        except (ValueError, TypeError) as exc:
            msg = f"{cls} cannot be patched: posenc cannot read its config ({exc})"
            raise ValueError(msg) from exc
        if "axes_dim" in kw or "freqs" in kw:
            msg = f"{cls} cannot be patched: RoPE over several axes that is not one of the vision towers posenc patches"
            raise ValueError(msg)
        out[lt] = kw
    return out


class ExactRotaryEmbedding(nn.Module):
    """What :func:`patch_rope` puts in place of a transformers rotary module.

    Its ``forward(x, position_ids, layer_type=None)`` returns what the
    replaced module's did (``cos``, ``sin`` of shape ``position_ids.shape +
    (rotary_dim,)`` in ``x.dtype``, the attention factor included), from
    posenc's exact float32 tables (:func:`posenc.rope_cos_sin`,
    :func:`posenc.mrope_cos_sin`) rounded once to ``x.dtype`` (float64
    tables for a float64 ``x``).  It holds no
    float tensor of its own, so ``model.to(dtype)`` cannot round its
    frequencies; the replaced module is kept as ``original`` (it follows
    ``.to()`` with the model) for :meth:`RopePatch.remove`.
    """

    def __init__(self, original: nn.Module, readings: dict[str | None, dict[str, Any]]) -> None:
        super().__init__()
        self.original = original
        self.config = original.config
        self.readings = readings
        self.layer_types = getattr(original, "layer_types", None) if None not in readings else None
        if hasattr(original, "attention_scaling"):  # read by a few models outside the module
            self.attention_scaling = original.attention_scaling

    def forward(
        self, x: torch.Tensor, position_ids: torch.Tensor, layer_type: str | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        kw = self.readings[layer_type]
        work = torch.float64 if x.dtype == torch.float64 else torch.float32
        if "mrope_section" in kw:
            if position_ids.ndim == 2:  # text-only positions: the same on the three axes
                position_ids = position_ids[None].expand(3, -1, -1)
            cos, sin = posenc.mrope_cos_sin(position_ids, **kw, dtype=work)
        else:
            cos, sin = posenc.rope_cos_sin(position_ids, **kw, dtype=work, xp=torch)
        return cos.to(x.dtype), sin.to(x.dtype)

    def extra_repr(self) -> str:
        return ", ".join(f"{lt}: {kw}" if lt else str(kw) for lt, kw in self.readings.items())


class ExactAxesRotaryEmbedding(nn.Module):
    """What :func:`patch_rope` puts in place of diffusers' ``FluxPosEmbed`` /
    ``Flux2PosEmbed``: ``forward(ids)`` returns ``(cos, sin)`` of
    :func:`posenc.rope_axes_cos_sin` (pairs of neighbours, one RoPE of
    ``axes_dim[k]`` features per column of ``ids``), in float32 as the
    replaced module returns them (float64 for float64 ids)."""

    def __init__(self, theta: float, axes_dim: Any) -> None:
        super().__init__()
        self.theta = float(theta)
        self.axes_dim = tuple(int(d) for d in axes_dim)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        work = torch.float64 if ids.dtype == torch.float64 else torch.float32
        return posenc.rope_axes_cos_sin(ids, self.axes_dim, base=self.theta, layout="interleaved", dtype=work)

    def extra_repr(self) -> str:
        return f"theta={self.theta}, axes_dim={self.axes_dim}"


#: diffusers' positional modules patch_rope replaces, and how it builds each replacement
_DIFFUSERS = ("FluxPosEmbed", "Flux2PosEmbed", *_DIFFUSERS_ROTARY, "Timesteps")


def _diffusers_replacement(module: nn.Module) -> nn.Module:
    """The exact module for one of diffusers' modules; ValueError (naming the class) for the others."""
    cls = type(module).__name__
    if cls == "Timesteps":
        from posenc.torch import Timesteps

        return Timesteps(
            module.num_channels,
            bool(module.flip_sin_to_cos),
            float(module.downscale_freq_shift),
            float(module.scale),
        )
    if cls in ("FluxPosEmbed", "Flux2PosEmbed"):
        return ExactAxesRotaryEmbedding(module.theta, module.axes_dim)
    if cls in _DIFFUSERS_ROTARY:  # Wan, HunyuanVideo, Qwen-Image: _patch_diffusers.py
        return _DIFFUSERS_ROTARY[cls](module)
    msg = (
        f"{cls} cannot be patched: of diffusers' positional modules, posenc patches {', '.join(_DIFFUSERS)} "
        "(pass strict=False to patch the others)"
    )
    raise ValueError(msg)


class RopePatch:
    """The handle :func:`patch_rope` returns: what it patched, what it left,
    and :meth:`remove` (also on leaving a ``with`` block).

    Attributes
    ----------
    patched : list of str
        The names of the modules replaced (``"model.rotary_emb"``).
    left : list of tuple
        ``(name, class name, reason)`` of the modules left as they were
        (``strict=False`` only).
    """

    def __init__(self, swaps: list[tuple[nn.Module, str, nn.Module]], patched: list[str], left: list) -> None:
        self._swaps = swaps
        self.patched = patched
        self.left = left

    def remove(self) -> None:
        """Put the original modules back (a second call does nothing)."""
        for parent, attr, original in reversed(self._swaps):
            setattr(parent, attr, original)
        self._swaps = []

    def __enter__(self) -> RopePatch:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"RopePatch(patched={self.patched}, left={[n for n, _, _ in self.left]})"


def _is_diffusers(module: nn.Module) -> bool:
    return type(module).__module__.startswith("diffusers")


def _is_rotary(module: nn.Module) -> bool:
    name = type(module).__name__
    if isinstance(module, (ExactRotaryEmbedding, *EXACT_VISION)):
        return False
    return name.endswith("RotaryEmbedding") or (
        _is_diffusers(module) and ("PosEmbed" in name or "Rope" in name or name == "Timesteps")
    )


def patch_rope(model: nn.Module, *, strict: bool = True) -> RopePatch:
    """Replace the rotary modules of a loaded transformers model with exact ones.

    Every rotary module of ``model`` (each module whose class name ends in
    ``RotaryEmbedding``: the language model's, every layer type of Gemma 3
    and the like, the multimodal RoPE of Qwen2-VL and its relatives) is
    replaced by an ``ExactRotaryEmbedding`` that reads the same config
    with :func:`posenc.scaling.from_hf` and returns what the module returned
    (same shapes, layouts, dtypes and attention factor), computed from
    posenc's exact tables kept in float32 whatever the model's dtype and
    rounded once to it.  In a diffusers transformer, the rotary position
    module of Flux and Flux 2 (``FluxPosEmbed``, ``Flux2PosEmbed``), Wan
    (``WanRotaryPosEmbed``, also in Wan VACE, Wan Animate and Sana Video),
    HunyuanVideo (``HunyuanVideoRotaryPosEmbed``) and Qwen-Image
    (``QwenEmbedRope``; Qwen-Image-Layered's ``QwenEmbedLayer3DRope``)
    becomes exact multi-axis tables (:func:`posenc.rope_axes_cos_sin` over
    the ids of :func:`posenc.grid_ids`) returned as the module returned them
    (same signature, shapes, layouts; Qwen-Image's complex ``exp(i p w)``),
    float32 whatever the model's dtype (Wan's own are buffers that
    ``model.to(torch.bfloat16)`` rounds) and float64 for float64 work
    (float64 hidden states; a Qwen-Image module converted with
    ``.double()``: complex128); every ``Timesteps`` becomes a
    :class:`posenc.torch.Timesteps` (exact angles where diffusers forms them
    in float32).  The rotary modules of the vision towers of Qwen2-VL,
    Qwen2.5-VL and Pixtral (``forward(x, position_ids)``: ``cos``, ``sin``
    over the patches' (height, width) ids, in float32 as Qwen2-VL returns
    them, in ``x.dtype`` as Pixtral does) and of Llama 4
    (``forward(hidden_states)``: the complex ``freqs_ci`` of its fixed
    grid, complex64) are replaced by exact ones
    (:func:`posenc.rope_axes_cos_sin` of
    :func:`~posenc.scaling.from_hf` of the tower's config), each first
    compared with the tower's own module at a few small ids (a module whose
    convention differs, from a transformers release posenc does not know,
    is refused); the tower's attention code is not touched.  CogVideoX has
    no rotary module to replace: its pipeline forms the tables with
    ``get_3d_rotary_pos_embed`` and passes them to the transformer's
    ``forward`` as ``image_rotary_emb``; pass posenc's instead (last
    example: ids ``(frame, row, column)``, widths ``(d / 4, 3 d / 8, 3 d /
    8)`` of the head dimension ``d``, pairs of neighbours; for a crop
    ``((top, left), (bottom, right))`` of the ``(h, w)`` grid, the rows are
    ``torch.linspace(top, bottom * (h - 1) / h, h)`` and the columns alike,
    in float64).  A model cast with ``model.to(torch.bfloat16)``
    (whose own ``inv_freq`` is then rounded to bfloat16, its tables off by
    up to 2 beyond a thousand positions: see :func:`posenc.audit_rope`)
    gets tables at the bfloat16 floor; a float32 model gets exact tables in
    place of the float32 angle product's.

    The patch survives ``model.to(dtype / device)`` (the new modules hold no
    float tensor), ``torch.compile(model, fullgraph=True)`` and
    ``generate`` with a KV cache; the attention code of the model is not
    touched (it rotates with the tables it is given), and the
    ``state_dict`` keeps its keys.  The length-dependent scalings (dynamic
    NTK, LongRoPE) take their length from ``max(position_ids) + 1`` as
    transformers does, which ``torch.compile`` cannot read: compiled, such a
    model needs the patch of a fixed length (not provided yet), as the
    model's own module breaks the graph there.

    Parameters
    ----------
    model : torch.nn.Module
        A transformers model (a language model, a multimodal one with its
        vision tower, or a vision tower alone), a diffusers transformer
        (Flux, Flux 2, Wan, HunyuanVideo, Qwen-Image), or any module holding
        them.
    strict : bool, default True
        Refuse (a :class:`ValueError` naming the module's class, nothing
        patched) when a rotary module cannot be reproduced: the vision
        towers other than those above (Qwen3-VL's, GLM-4V's, Gemma 4's, ...)
        are not patched yet, nor a config
        :func:`~posenc.scaling.from_hf` refuses; of diffusers, the rotary
        modules of the other families (Cosmos, CogView4, LTX-Video,
        HunyuanVideo 1.5, Lumina 2, ...) are not patched yet, nor a
        ``WanRotaryPosEmbed`` whose tables are not those of base 10000 (it
        does not keep its base; diffusers builds it with no other).
        ``False``: patch the
        others and list what was left in ``handle.left``.

    Returns
    -------
    RopePatch
        ``handle.remove()`` (or leaving ``with patch_rope(model):``) puts the
        original modules back: the model is then bit for bit what it was.

    Examples
    --------
    >>> import torch, transformers
    >>> from posenc.torch import patch_rope
    >>> cfg = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4, num_hidden_layers=1,
    ...                                vocab_size=32, intermediate_size=64, rope_theta=500000.0)
    >>> model = transformers.LlamaForCausalLM(cfg).eval().to(torch.bfloat16)
    >>> handle = patch_rope(model)
    >>> handle
    RopePatch(patched=['model.rotary_emb'], left=[])
    >>> type(model.model.rotary_emb).__name__
    'ExactRotaryEmbedding'
    >>> logits = model(torch.arange(8)[None]).logits
    >>> handle.remove()
    >>> type(model.model.rotary_emb).__name__
    'LlamaRotaryEmbedding'

    A vision tower (Pixtral's):

    >>> vcfg = transformers.PixtralVisionConfig(hidden_size=64, intermediate_size=64, num_hidden_layers=1,
    ...                                         num_attention_heads=2, head_dim=32)
    >>> tower = transformers.PixtralVisionModel(vcfg).eval()
    >>> with patch_rope(tower) as handle:
    ...     print(handle.patched, type(tower.patch_positional_embedding).__name__)
    ['patch_positional_embedding'] ExactVisionRotaryEmbedding

    CogVideoX's tables, exact, where its pipeline calls
    ``get_3d_rotary_pos_embed`` (a crop covering the grid, as at the
    model's sample size):

    >>> import posenc
    >>> from diffusers.models.embeddings import get_3d_rotary_pos_embed
    >>> frames, h, w, d = 13, 30, 45, 64
    >>> ids = posenc.grid_ids((frames, h, w), xp=torch)
    >>> cos, sin = posenc.rope_axes_cos_sin(ids, [d // 4, d // 8 * 3, d // 8 * 3], dtype=torch.float32)
    >>> own_cos, own_sin = get_3d_rotary_pos_embed(d, ((0, 0), (h, w)), (h, w), frames)
    >>> cos.shape == own_cos.shape, float((sin - own_sin).abs().max()) < 1e-5
    (True, True)
    """
    if not isinstance(model, nn.Module):
        msg = f"`model` must be a torch.nn.Module, got {_checks.show(model)}"
        raise TypeError(msg)
    strict = _checks.check_bool(strict, "strict")
    found: dict[int, tuple[str, nn.Module]] = {}
    refs: list[tuple[nn.Module, str, nn.Module]] = []
    for pname, parent in model.named_modules(remove_duplicate=False):
        if isinstance(parent, (ExactRotaryEmbedding, *EXACT_VISION)):
            continue
        for attr, child in parent.named_children():
            if _is_rotary(child):
                found.setdefault(id(child), (f"{pname}.{attr}" if pname else attr, child))
                refs.append((parent, attr, child))
    if _is_rotary(model):
        msg = "`model` is a rotary module itself: pass the model that holds it (patch_rope replaces it there)"
        raise ValueError(msg)
    replacements: dict[int, nn.Module] = {}
    patched: list[str] = []
    left: list[tuple[str, str, str]] = []
    for key, (name, mod) in found.items():
        try:
            if _is_diffusers(mod):
                replacements[key] = _diffusers_replacement(mod)
            elif is_vision_tower(mod):
                replacements[key] = vision_replacement(mod)
            else:
                replacements[key] = ExactRotaryEmbedding(mod, _readings(mod))
        except ValueError as exc:
            if strict:
                raise
            left.append((name, type(mod).__name__, str(exc)))
            continue
        patched.append(name)
    swaps = []
    for parent, attr, child in refs:
        new = replacements.get(id(child))
        if new is not None:
            setattr(parent, attr, new)
            swaps.append((parent, attr, child))
    return RopePatch(swaps, patched, left)
