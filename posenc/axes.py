r"""RoPE over several axes from position ids: image and video diffusion
transformers, the vision towers of VLMs, EVA, DINOv3 and RoPE-Mixed.

A token of an image or a video carries one position per axis (frame, row,
column; Flux adds a text axis).  Multi-axis RoPE gives every axis :math:`k`
its own rotary width :math:`d_k` (``axes_dim``), base and scaling, and turns
the :math:`d_k / 2` planes of axis :math:`k` by that axis' position:

.. math::

    \theta^{(k)}_i = p_k\,\omega^{(k)}_i, \qquad
    \omega^{(k)} = \mathtt{rope\_frequencies}(d_k, b_k, s_k),

the angles of all axes concatenated (axis 0's planes first) and laid out
over the rotary width :math:`D = \sum_k d_k` as :func:`posenc.apply_rope`
expects.  Models disagree on three things, each an argument here:

* the **layout** of :math:`D`: per-axis interleaved pairs (Flux, Wan,
  HunyuanVideo, CogVideoX, Qwen-Image, Llama 4 vision, EVA, RoPE-Mixed) or
  one half split over all axes (Qwen2-VL's vision tower, Pixtral, Cosmos,
  CogView4, DINOv3);
* which **frequencies** an axis takes: a RoPE of its own width (``split=
  "blocks"``) or every ``n``-th frequency of one RoPE of the whole width
  (``split="strided"``, Pixtral), or a learned or custom frequency matrix
  (``freqs=``: RoPE-Mixed, Mochi, LTX-Video);
* the **ids**: row-major or merged-patch order, offsets, centred or
  normalised coordinates, rescaled grids, text tokens; :func:`grid_ids`
  builds those of every model above.

Every angle is exact as in :func:`posenc.rope_cos_sin` (float32 tables
within a few float32 ulp of the float64 truth), on devices with and without
float64.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _angles, _cache, _checks, _compat, _rope, _tables
from ._compat import Array, Context
from ._trace import host_constant, is_symbolic
from .rotary import apply_rope
from .scaling import Scaling
from .scaling._formulas import check_scaling, length_dependent

__all__ = ["rope_axes_cos_sin", "rope_axes", "grid_ids"]

SPLITS = ("blocks", "strided")
NORMALIZE = ("separate", "min", "max")
INDEXING = ("ij", "xy")


# --------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------
def _is_seq(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def check_axes_dim(axes_dim: Any) -> tuple[int, ...]:
    """``axes_dim``: a non-empty sequence of positive even ints."""
    if not _is_seq(axes_dim) or _compat.is_array(axes_dim):
        msg = (
            "`axes_dim` must be a sequence of positive even ints (one rotary width per axis), "
            f"got {_checks.show(axes_dim)}"
        )
        raise TypeError(msg)
    if len(axes_dim) == 0:
        msg = "`axes_dim` must name at least one axis, got an empty sequence"
        raise ValueError(msg)
    return tuple(_checks.check_dim(d, "axes_dim", even=True) for d in axes_dim)


def per_axis(value: Any, name: str, n: int) -> tuple[Any, ...]:
    """A scalar (the same for every axis) or one value per axis."""
    if _is_seq(value) and not isinstance(value, Scaling):
        if len(value) != n:
            msg = f"`{name}` must be one value or one per axis ({n}), got {len(value)} values"
            raise ValueError(msg)
        return tuple(value)
    return (value,) * n


def check_scalings(scaling: Any, n: int) -> tuple[Scaling | None, ...]:
    out = tuple(check_scaling(s) for s in per_axis(scaling, "scaling", n))
    for s in out:
        if length_dependent(s):
            msg = (
                f"`scaling` = {_checks.show(s)} depends on the sequence length, which multi-axis RoPE does not "
                "have; pass a static scaling (Linear, NTK, YaRN, Llama3, Proportional) per axis"
            )
            raise ValueError(msg)
    return out


def axes_freqs(
    axes_dim: tuple[int, ...], bases: tuple[Any, ...], scalings: tuple[Any, ...], split: str, turns: bool, top: float
) -> tuple[tuple[_angles.Freqs, ...], tuple[float, ...]]:
    """The frequencies of every axis (host float64 constants) and the
    attention factors of their scalings.  The scalings go to the host
    constant of :func:`posenc.rope_frequencies` one by one, as the caller
    gave them (torch's tracer passes an object by its source, not a tuple
    built while tracing)."""
    n = len(axes_dim)
    if split == "strided":
        if len(set(axes_dim)) != 1:
            msg = (
                f"`split='strided'` takes every {n}-th frequency of one RoPE: every axis has one width, "
                f"got axes_dim={list(axes_dim)}"
            )
            raise ValueError(msg)
        if len(set(map(repr, bases))) != 1 or len(set(map(repr, scalings))) != 1:
            msg = (
                "`split='strided'` takes the frequencies of one RoPE: pass one `base` and one `scaling`, "
                "not one per axis"
            )
            raise ValueError(msg)
        _, _, _, f, a = _rope.inv_freq_of(sum(axes_dim), bases[0], scalings[0], None, top)
        return _derived_freqs(f.key, n, turns), (a,) * n
    freqs, attention = [], []
    for d, b, sc in zip(axes_dim, bases, scalings):
        _, _, _, f, a = _rope.inv_freq_of(d, b, sc, None, top)
        freqs.append(_derived_freqs(f.key, 1, True)[0] if turns else f)
        attention.append(a)
    return tuple(freqs), tuple(attention)


@host_constant
def _derived_freqs(key: bytes, n: int, turns: bool) -> tuple[_angles.Freqs, ...]:
    """The frequencies ``key`` (float64 bytes) dealt out to ``n`` axes (axis
    ``k`` takes ``k, k + n, ...``), times 2 pi with ``turns``."""
    cache_key = (key, n, turns)
    got = _FREQS.get(cache_key)
    if got is None:
        w = np.frombuffer(key, dtype=np.float64)
        got = tuple(_angles.Freqs.from_array(w[k::n] * (2.0 * math.pi if turns else 1.0)) for k in range(n))
        _FREQS.put(cache_key, got)
    return got


#: _derived_freqs's results by their arguments
_FREQS = _cache.Memo("axes.freqs", 1024)


def _check_ids(ids: Any, ctx: Context, name: str = "ids", *, scan: bool = True) -> Array:
    """``ids``: an integer or real array (lists converted) of shape (..., n_axes)."""
    if isinstance(ids, (bool, numbers.Number)) and not _compat.is_array(ids):
        msg = f"`{name}` must be an array of position ids of shape (..., n_axes), got {_checks.show(ids)}"
        raise TypeError(msg)
    if not _compat.is_array(ids) and not isinstance(ids, (list, tuple)):
        msg = f"`{name}` must be an array of position ids of shape (..., n_axes), got {type(ids).__name__}"
        raise TypeError(msg)
    if _compat.is_array(ids) and getattr(ids, "ndim", 0) >= 1:
        # the size of the tables from the shape, before anything is scanned
        _checks.check_size(tuple(ids.shape), f"`{name}` array")
    ids = _checks.check_positions(ids, name, ctx, scan=scan)
    if ids.ndim < 1 or int(ids.shape[-1]) == 0:
        msg = f"`{name}` must have shape (..., n_axes) with at least one axis, got shape {tuple(ids.shape)}"
        raise ValueError(msg)
    return ids


def _key_of(value: Any) -> Any:
    """Lists as tuples, for the keys of the plan caches."""
    return tuple(value) if type(value) is list else value


# --------------------------------------------------------------------------
# plans
# --------------------------------------------------------------------------
@dataclass(slots=True)
class _Plan:
    """What the axes path does with ids of a given type, dtype, device and
    shape and given options: validated once, kept in :data:`_PLANS`."""

    ctx: Context
    freqs: tuple[_angles.Freqs, ...]
    attention: tuple[float, ...]
    dim: int
    layout: str
    #: concrete float ids: scanned for NaN on every call
    scan: bool
    #: the angles of every axis (a kept plan), or None
    angles: tuple[_angles.Angles, ...] | None
    #: the checked ids of a call whose plan is not kept
    ids: Any


#: plans of the axes path, keyed by the ids' (type, dtype, device, shape) and the options
_PLANS = _cache.Memo("axes.plans", 1024)


def _axes_plan(
    ids: Any, axes_dim: Any, base: Any, scaling: Any, layout: Any, split: Any, turns: Any, ctx: Context | None,
    dtype: Any, device: Any, xp: Any, keyed: bool,
) -> _Plan:
    if ctx is None:
        ctx = _compat.resolve({"ids": ids}, xp=xp, device=device, dtype=dtype)
    layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
    split = _checks.check_choice(split, "split", SPLITS)
    turns = _checks.check_bool(turns, "turns")
    dims = check_axes_dim(axes_dim)
    n = len(dims)
    bases = tuple(_checks.check_float(b, "base", positive=True) for b in per_axis(base, "base", n))
    scalings = check_scalings(scaling, n)
    ids = _check_ids(ids, ctx, scan=False)
    cols = int(ids.shape[-1])
    if cols != n:
        msg = f"`ids` has {cols} columns (one position per axis) but `axes_dim` names {n} axes: {list(dims)}"
        raise ValueError(msg)
    dim = sum(dims)
    _checks.check_size(tuple(ids.shape[:-1]) + (dim,), "table")
    top = _checks.largest(ctx, ctx.work, ctx.dtype)[0]
    freqs, attention = axes_freqs(dims, bases, scalings, split, turns, top)
    for f in freqs:
        _checks.check_fits(f.top, ctx, "the frequencies", "use a larger base")
    scan = _compat.is_real_float_dtype(ctx.xp, ids.dtype) and _compat.is_concrete(ids)
    angles = tuple(_angles.prepare(ids, f, ctx) for f in freqs) if keyed else None
    return _Plan(
        ctx=ctx, freqs=freqs, attention=attention, dim=dim, layout=layout, scan=scan, angles=angles,
        ids=None if keyed else ids,
    )


def _axes_compact(ids: Array, plan: _Plan) -> tuple[Array, Array]:
    """cos and sin of every axis' angles, concatenated: (..., D / 2) in the working dtype."""
    ctx = plan.ctx
    xp = ctx.xp
    cs, ss = [], []
    for k, (f, a) in enumerate(zip(plan.freqs, plan.attention)):
        s, c = _angles.sincos(ids[..., k], f, ctx) if plan.angles is None else plan.angles[k](ids[..., k])
        if a != 1.0:
            c, s = c * a, s * a
        cs.append(c)
        ss.append(s)
    if len(cs) == 1:
        return cs[0], ss[0]
    return xp.concat(cs, axis=-1), xp.concat(ss, axis=-1)


# --------------------------------------------------------------------------
# frequency matrices: angles = ids . F^T (posenc._angles.matrix_sincos)
# --------------------------------------------------------------------------
def _check_freqs(freqs: Any, ids: Array, ctx: Context) -> Array:
    if not _compat.is_array(freqs):
        msg = f"`freqs` must be an array of shape (..., m, n_axes), got {_checks.show(freqs)}"
        raise TypeError(msg)
    _checks.check_real_float(freqs, "freqs", ctx.xp, min_ndim=2, shape="(..., m, n_axes)")
    n = int(ids.shape[-1])
    if int(freqs.shape[-1]) != n:
        msg = (
            f"`freqs` of shape {tuple(freqs.shape)} has {int(freqs.shape[-1])} columns but `ids` has {n} "
            "(one frequency per axis and plane: shape (..., m, n_axes))"
        )
        raise ValueError(msg)
    if int(freqs.shape[-2]) == 0:
        msg = (
            f"`freqs` must hold at least one plane (shape (..., m, n_axes) with m >= 1), "
            f"got shape {tuple(freqs.shape)}"
        )
        raise ValueError(msg)
    return freqs


# --------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------
def _compact(
    ids: Any,
    axes_dim: Any,
    base: Any,
    scaling: Any,
    layout: Any,
    split: Any,
    turns: Any,
    freqs: Any,
    ctx: Context | None,
    dtype: Any,
    device: Any,
    xp: Any,
) -> tuple[Array, Array, str, Context]:
    """The compact tables (..., D / 2) in the working dtype, the layout and
    the context (``ctx`` given: that of ``rope_axes``, tables in ``x``'s
    working dtype)."""
    if freqs is not None:
        if ctx is None:
            ctx = _compat.resolve({"ids": ids, "freqs": freqs}, xp=xp, device=device, dtype=dtype)
        layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
        turns = _checks.check_bool(turns, "turns")
        if axes_dim is not None:
            msg = "`axes_dim` and `freqs` are two ways to give the frequencies: pass one (freqs sets the widths)"
            raise ValueError(msg)
        given = [
            name
            for name, unchanged in (
                ("base", type(base) in (int, float) and base == 10000.0),
                ("scaling", scaling is None),
                ("split", isinstance(split, str) and split == "blocks"),
            )
            if not unchanged
        ]
        if given:
            msg = (
                f"`{given[0]}` shapes the frequencies of `axes_dim`; with `freqs` (the frequencies themselves) "
                "leave it out"
            )
            raise ValueError(msg)
        ids = _check_ids(ids, ctx)
        freqs = _check_freqs(freqs, ids, ctx)
        shape = tuple(freqs.shape[:-2]) + tuple(ids.shape[:-1]) + (2 * int(freqs.shape[-2]),)
        _checks.check_size(shape, "table")  # from the shapes, before freqs is scanned
        _checks.check_all_finite(freqs, "freqs", ctx)
        s, c = _angles.matrix_sincos(ids, freqs, turns, ctx)
        return c, s, layout, ctx
    if axes_dim is None:
        msg = "`axes_dim` (one rotary width per axis) or `freqs` (a frequency matrix) is required"
        raise TypeError(msg)
    key = None
    if ctx is None:
        options = (_key_of(axes_dim), _key_of(base), _key_of(scaling), layout, split, turns, dtype, device, xp)
        key = _compat.call_key((ids,), options)
    args = (ids, axes_dim, base, scaling, layout, split, turns, ctx, dtype, device, xp, key is not None)
    plan = _PLANS.get_or_make(key, _axes_plan, *args)
    if plan.ids is not None:
        ids = plan.ids
    if plan.scan:
        _checks.check_finite(ids, "ids", plan.ctx.xp)
    c, s = _axes_compact(ids, plan)
    return c, s, plan.layout, plan.ctx


def rope_axes_cos_sin(
    ids: Array,
    axes_dim: Sequence[int] | None = None,
    *,
    base: float | Sequence[float] = 10000.0,
    scaling: Scaling | Sequence[Scaling | None] | None = None,
    layout: str = "interleaved",
    split: str = "blocks",
    turns: bool = False,
    freqs: Array | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> tuple[Array, Array]:
    r"""The ``cos`` and ``sin`` tables of RoPE over several axes, from position ids.

    Axis :math:`k` (column ``k`` of ``ids``) turns :math:`d_k / 2` planes,
    :math:`d_k` = ``axes_dim[k]``, by the angles
    :math:`\theta^{(k)}_i = p_k\,\omega^{(k)}_i` with
    :math:`\omega^{(k)}` = ``rope_frequencies(axes_dim[k], base=base[k],
    scaling=scaling[k])``.  The angles of all axes are concatenated (axis 0
    first) and laid out over the rotary width :math:`D = \sum_k d_k`:

    * ``layout="interleaved"``: ``cos = concat_k(repeat(cos θ_k, 2))``,
      pairs of neighbours (Flux's ``FluxPosEmbed``, Wan, HunyuanVideo,
      CogVideoX, Qwen-Image, Llama 4 vision, EVA-02, RoPE-Mixed);
    * ``layout="half"``: ``cos = concat([concat_k cos θ_k] * 2)``, one half
      split over all axes (Qwen2-VL / Qwen2.5-VL vision, Pixtral, Cosmos,
      CogView4, DINOv3).

    The tables feed :func:`posenc.apply_rope` with the same ``layout`` over
    the whole rotary width.

    Parameters
    ----------
    ids : array
        Shape ``(..., n_axes)``: one position per axis for every token,
        integer or real (negative, fractional, normalised); lists are
        converted.  :func:`grid_ids` builds the ids of image and video grids.
    axes_dim : sequence of int
        The rotary width of each axis (positive, even); one entry per
        column of ``ids``.  Flux: ``[16, 56, 56]``; Wan 2.1 with head
        dimension 128: ``[44, 42, 42]``.
    base : float or sequence of float, default 10000.0
        RoPE's base, one for every axis or one per axis (HunyuanVideo: 256).
    scaling : posenc.scaling.Scaling or sequence, optional
        A static scaling for every axis or one per axis (``None`` entries
        leave an axis unscaled): Cosmos's per-axis NTK is
        ``[NTK(2.0), None, None]``.  An attention factor (YaRN) multiplies
        the tables of its axis.  Length-dependent scalings are refused.
    layout : {"interleaved", "half"}
        See above.
    split : {"blocks", "strided"}
        ``"blocks"``: each axis has a RoPE of its own width.
        ``"strided"``: the axes share one RoPE of width :math:`D`, axis
        :math:`k` taking its frequencies :math:`k, k + n, k + 2n, \dots`
        (Pixtral: the height takes the even, the width the odd
        frequencies); every axis then has the same width and one ``base``.
    turns : bool, default False
        The product of an id and a frequency counts turns, not radians: the
        angles are :math:`2\pi p\,\omega` (DINOv3's ``coords / period``).
    freqs : array, optional
        A frequency matrix instead of ``axes_dim``: shape ``(..., m,
        n_axes)``, the angles :math:`\theta_j = \sum_k p_k F_{jk}` (``ids ·
        Fᵀ``), with leading axes for heads or blocks (RoPE-Mixed's learned
        frequencies, Mochi, LTX-Video, ``rotary-embedding-torch``'s
        ``custom_freqs``).  Gradients flow to it under torch's autograd and
        ``jax.grad``.  ``base``, ``scaling`` and ``split`` do not apply.
    dtype, device, xp
        Output dtype (half precision is computed in float32 and cast at the
        end), device and namespace (from ``ids`` when it is an array).

    Returns
    -------
    cos, sin : array
        Shape ``ids.shape[:-1] + (D,)``; with ``freqs``, ``freqs.shape[:-2]
        + ids.shape[:-1] + (2 m,)`` (the heads first: tables of shape
        ``(heads, seq, D)`` broadcast against queries of shape ``(batch,
        heads, seq, D)``).

    Notes
    -----
    Each axis' angles come from posenc's exact engine
    (:func:`posenc.rope_cos_sin`'s): float32 tables are within a few float32
    ulp of the float64 truth on devices with and without float64, where the
    usual ``cos(float32(p) * inv_freq)`` is off by :math:`|p\,\omega|
    \cdot 2^{-24}`.  With ``freqs`` the products :math:`p_k F_{jk}` are
    formed exactly (Dekker's two-product), summed with their rounding
    errors carried and reduced by :math:`2\pi` in float64 where the device
    has it (about 1e-16 for angles below :math:`2^{33}`), in pairs of
    float32 numbers where it has not (within about 3e-7 for angles below
    :math:`10^8`).

    References
    ----------
    .. [1] J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu, "RoFormer: Enhanced
           Transformer with Rotary Position Embedding", 2021,
           https://arxiv.org/abs/2104.09864
    .. [2] B. Heo, S. Park, D. Han, S. Yun, "Rotary position embedding for vision
           transformer", ECCV 2024, https://arxiv.org/abs/2403.13298

    Examples
    --------
    Flux's ids: 2 text tokens (all zeros), then a 2 x 2 latent grid
    ``(0, row, column)``:

    >>> import numpy as np, posenc
    >>> ids = posenc.grid_ids((1, 2, 2), prefix_tokens=2)
    >>> ids.T
    array([[0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 1, 1],
           [0, 0, 0, 1, 0, 1]])
    >>> cos, sin = posenc.rope_axes_cos_sin(ids, [2, 4, 4], base=100.0)
    >>> cos.shape
    (6, 10)
    >>> sin[5].round(4)  # row 1, column 1: planes (t), (h, h), (w, w)
    array([0.    , 0.    , 0.8415, 0.8415, 0.0998, 0.0998, 0.8415, 0.8415,
           0.0998, 0.0998])

    Qwen2-VL's vision tower: 2 axes of a quarter of the head each, the half
    layout:

    >>> cos, sin = posenc.rope_axes_cos_sin(np.array([[1, 2]]), [4, 4], layout="half")
    >>> sin.round(4)
    array([[0.8415, 0.01  , 0.9093, 0.02  , 0.8415, 0.01  , 0.9093, 0.02  ]])

    A frequency matrix of two heads (RoPE-Mixed):

    >>> F = np.array([[[1.0, 0.0]], [[0.5, 0.5]]])  # (heads, m, n_axes)
    >>> posenc.rope_axes_cos_sin(np.array([[2, 0]]), freqs=F)[1].round(4)
    array([[[0.9093, 0.9093]],
    <BLANKLINE>
           [[0.8415, 0.8415]]])
    """
    c, s, layout, ctx = _compact(ids, axes_dim, base, scaling, layout, split, turns, freqs, None, dtype, device, xp)
    return _tables.rope_tables(c, s, layout, ctx)


def rope_axes(
    x: Array,
    ids: Array,
    axes_dim: Sequence[int] | None = None,
    *,
    base: float | Sequence[float] = 10000.0,
    scaling: Scaling | Sequence[Scaling | None] | None = None,
    layout: str = "interleaved",
    split: str = "blocks",
    turns: bool = False,
    freqs: Array | None = None,
    heads_axis: int | None = None,
) -> Array:
    """Rotate queries or keys by multi-axis RoPE in one call:
    :func:`rope_axes_cos_sin` then :func:`posenc.apply_rope`.

    Parameters
    ----------
    x : array
        Queries or keys, shape ``(..., seq, head_dim)`` (Flux:
        ``(batch, heads, seq, head_dim)``); the first ``D = sum(axes_dim)``
        features are rotated, the rest pass through.
    ids : array
        Position ids of shape ``(seq, n_axes)`` (or ``(batch, seq,
        n_axes)`` with ``heads_axis``), on ``x``'s device.
    axes_dim, base, scaling, layout, split, turns, freqs
        As in :func:`rope_axes_cos_sin`.
    heads_axis : int, optional
        The axis of ``x`` that holds the heads, for ids with a batch axis
        (as in :func:`posenc.apply_rope`).  The tables of a frequency matrix
        with a head axis (``(heads, seq, m)``) line up with the last axes
        of ``x`` (``(batch, heads, seq, head_dim)``) without it.

    Returns
    -------
    array
        The rotated ``x``: its dtype (tables computed in float32, or float64
        for float64 ``x``), shape and device.

    References
    ----------
    .. [1] J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu, "RoFormer: Enhanced
           Transformer with Rotary Position Embedding", 2021,
           https://arxiv.org/abs/2104.09864

    Examples
    --------
    >>> import numpy as np, posenc
    >>> q = np.ones((1, 2, 6, 8))  # (batch, heads, tokens, head_dim)
    >>> ids = posenc.grid_ids((2, 3))
    >>> out = posenc.rope_axes(q, ids, [4, 4])
    >>> out.shape
    (1, 2, 6, 8)
    >>> bool(np.allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(q, axis=-1)))
    True
    """
    if not _compat.is_array(x):
        msg = f"`x` must be an array of shape (..., seq, head_dim), got {type(x).__name__}"
        raise TypeError(msg)
    xctx = _compat.resolve({"x": x, "ids": ids, "freqs": freqs})
    _checks.check_real_float(x, "x", xctx.xp, min_ndim=1, shape="(..., seq, head_dim)")
    wt = x.dtype if x.dtype == getattr(xctx.xp, "float64", None) else xctx.xp.float32
    ctx = xctx.with_dtype(wt)
    c, s, layout, _ = _compact(ids, axes_dim, base, scaling, layout, split, turns, freqs, ctx, None, None, None)
    width = 2 * int(c.shape[-1])
    if width > int(x.shape[-1]):
        what = "sum(`axes_dim`)" if freqs is None else "twice the planes of `freqs`"
        msg = f"{what} = {width} rotary features, more than the head dimension {int(x.shape[-1])} of `x`"
        raise ValueError(msg)
    if freqs is not None and c.ndim < x.ndim:
        # heads first: (heads, seq, m) tables line up with the last axes of (batch, heads, seq, head_dim)
        lead = (1,) * (x.ndim - c.ndim) + tuple(c.shape)
        c, s = xctx.xp.reshape(c, lead), xctx.xp.reshape(s, lead)
    return apply_rope(x, c, s, layout=layout, compact=True, heads_axis=heads_axis)


# --------------------------------------------------------------------------
# grid ids
# --------------------------------------------------------------------------
def _check_shape(shape: Any, name: str = "shape") -> tuple[Any, ...]:
    if isinstance(shape, bool) or (isinstance(shape, numbers.Integral) and not _compat.is_array(shape)):
        msg = (
            f"`{name}` must be a tuple of positive ints (one size per axis), got {_checks.show(shape)}; "
            f"pass ({shape},) for one axis"
        )
        raise TypeError(msg)
    if not _is_seq(shape):
        msg = f"`{name}` must be a tuple of positive ints (one size per axis), got {type(shape).__name__}"
        raise TypeError(msg)
    if len(shape) == 0:
        msg = f"`{name}` must have at least one axis, got ()"
        raise ValueError(msg)
    out = []
    for n in shape:
        if is_symbolic(n):  # a traced size (torch.compile): kept traced
            out.append(n)
        else:
            out.append(_checks.check_int(n, name, minimum=1))
    return tuple(out)


def _per_axis_number(value: Any, name: str, nd: int) -> tuple[Any, ...]:
    """A real number (int or float) for every axis, or one per axis."""
    vals = per_axis(value, name, nd)
    out = []
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or _compat.is_array(v):
            msg = f"`{name}` must be a real number or one per axis, got {_checks.show(v)}"
            raise TypeError(msg)
        if isinstance(v, numbers.Integral):
            v = int(v)
            if abs(v) >= 2**31:
                msg = f"`{name}` must be an integer of magnitude below 2**31 (or a float), got {v!r}"
                raise ValueError(msg)
        else:
            v = _checks.check_float(v, name)
        out.append(v)
    return tuple(out)


def _per_axis_bool(value: Any, name: str, nd: int) -> tuple[bool, ...]:
    return tuple(_checks.check_bool(v, name) for v in per_axis(value, name, nd))


def grid_ids(
    shape: Sequence[int],
    *,
    offset: float | Sequence[float] = 0,
    scale: float | Sequence[float] = 1,
    center: bool | Sequence[bool] = False,
    normalize: str | None = None,
    ref_shape: Sequence[int] | None = None,
    floor: bool = False,
    merge: int | None = None,
    indexing: str = "ij",
    prefix_tokens: int = 0,
    suffix_tokens: int = 0,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""The position ids of the tokens of an image or video grid, as models build them.

    The grid point with index :math:`i_k` on axis :math:`k` (of size
    :math:`n_k`) gets the coordinate

    .. math::

        c_k = \bigl((i_k - \mathrm{center}_k + \mathrm{offset}_k)\text{, normalised, rescaled}\bigr)
              \cdot \mathrm{scale}_k,

    step by step: ``center`` subtracts :math:`\lceil n_k / 2 \rceil`, then
    ``offset`` is added; ``normalize`` maps the patch centres to
    :math:`2 (c + 1/2) / N - 1` (in :math:`[-1, 1]`); ``ref_shape``
    multiplies by :math:`r_k / n_k`; ``scale`` multiplies; ``floor``
    rounds down.  Tokens are in row-major order (the last axis fastest),
    or in Qwen's merged-patch order with ``merge``.

    ========================  ===================================================================
    model                     call
    ========================  ===================================================================
    Flux (text + image)       ``grid_ids((1, h, w), prefix_tokens=text_len)``, 3 axes ``(0, h, w)``
    Flux Kontext reference    ``grid_ids((1, h, w), offset=(1, 0, 0))``
    Flux 2 image / text       ``grid_ids((1, h, w, 1))`` / ``grid_ids((1, 1, 1, text_len))``
    Wan, HunyuanVideo         ``grid_ids((t, h, w))``
    Cosmos (video at fps)     ``grid_ids((t, h, w), scale=(24 / fps, 1, 1))``
    CogView4                  ``grid_ids((h, w), ref_shape=(256, 256), floor=True)``
    Qwen-Image                ``grid_ids((1, h, w), center=(False, True, True))``
    Qwen2-VL / 2.5-VL vision  ``grid_ids((t, h, w), merge=2)[:, 1:]`` (``(h, w)`` per token)
    Pixtral                   ``grid_ids((h, w))``
    Llama 4 vision            ``grid_ids((n, n), offset=1, indexing="xy", suffix_tokens=1)``
    torchtune vision          the same (``prefix_tokens=1`` for a leading class token)
    EVA-02 (timm)             ``grid_ids((h, w), ref_shape=(16, 16))``
    DINOv3                    ``grid_ids((h, w), normalize="separate")`` (timm: also ``"min"``, ``"max"``)
    RoPE-Mixed (timm)         ``grid_ids((h, w), indexing="xy")``
    ========================  ===================================================================

    Parameters
    ----------
    shape : tuple of int
        The grid's size per axis, any number of axes (``(h, w)``, ``(t, h,
        w)``, Flux 2's ``(t, h, w, l)``).
    offset : int, float or sequence, default 0
        Added to the (centred) index of every axis or of each (Llama 4's
        ``+1``; Flux Kontext's reference image index).
    scale : int, float or sequence, default 1
        Multiplies the coordinate of every axis or of each (a time stride;
        Cosmos's ``base_fps / fps``).
    center : bool or sequence of bool, default False
        Count the indices of an axis from its middle: :math:`i -
        \lceil n/2 \rceil`, that is :math:`-n/2 \dots n/2 - 1` for even
        :math:`n` (Qwen-Image's ``scale_rope``).
    normalize : {None, "separate", "min", "max"}
        Patch centres :math:`(i + 1/2)` over :math:`N` mapped to
        :math:`[-1, 1]` (DINOv3): :math:`N = n_k` (``"separate"``), the
        smallest or the largest size of the grid.
    ref_shape : tuple of int, optional
        Rescale each axis to a reference grid: :math:`c \cdot r_k / n_k`
        (EVA's ``ref_feat_shape``, CogView4's 256 x 256 with ``floor``).
    floor : bool, default False
        Round the coordinates down to integers (CogView4's ``i * r // n``).
    merge : int, optional
        Qwen's merged-patch order: the last two axes in ``merge x merge``
        blocks, block after block (row-major), row-major inside each block;
        their sizes must be multiples of ``merge``.
    indexing : {"ij", "xy"}
        ``"xy"`` swaps the first two columns (``(column, row)``, as
        ``numpy.meshgrid`` and timm's ``grid_indexing``); the tokens stay
        in row-major order.
    prefix_tokens, suffix_tokens : int, default 0
        Rows of zero ids before (Flux's text tokens, a class token) and
        after the grid (Llama 4's class token: angle 0, not rotated).
    dtype, device, xp
        dtype of the ids (default: the namespace's default integer dtype
        when every coordinate is an integer, else its widest real floating
        dtype on the device, float64 where it exists, so that the angles
        are exact), device and namespace (default NumPy).

    Returns
    -------
    array
        Shape ``(prefix_tokens + prod(shape) + suffix_tokens, len(shape))``.

    Examples
    --------
    >>> import posenc
    >>> posenc.grid_ids((2, 3)).T
    array([[0, 0, 0, 1, 1, 1],
           [0, 1, 2, 0, 1, 2]])
    >>> posenc.grid_ids((2, 4), merge=2).T  # Qwen2-VL: 2 x 2 blocks
    array([[0, 0, 1, 1, 0, 0, 1, 1],
           [0, 1, 0, 1, 2, 3, 2, 3]])
    >>> posenc.grid_ids((2, 2), normalize="separate").T  # DINOv3
    array([[-0.5, -0.5,  0.5,  0.5],
           [-0.5,  0.5, -0.5,  0.5]])
    >>> posenc.grid_ids((2, 2), offset=1, indexing="xy", suffix_tokens=1).T  # Llama 4
    array([[1, 2, 1, 2, 0],
           [1, 1, 2, 2, 0]])
    """
    dims = _check_shape(shape)
    nd = len(dims)
    offsets = _per_axis_number(offset, "offset", nd)
    scales = _per_axis_number(scale, "scale", nd)
    centers = _per_axis_bool(center, "center", nd)
    if normalize is not None:
        normalize = _checks.check_choice(normalize, "normalize", NORMALIZE)
    refs = None
    if ref_shape is not None:
        refs = _check_shape(ref_shape, "ref_shape")
        if len(refs) != nd:
            msg = f"`ref_shape` must have one size per axis of `shape` ({nd}), got {_checks.show(ref_shape)}"
            raise ValueError(msg)
        if normalize is not None:
            msg = "`ref_shape` rescales indices and `normalize` maps them to [-1, 1]: pass one of them"
            raise ValueError(msg)
    floor = _checks.check_bool(floor, "floor")
    indexing = _checks.check_choice(indexing, "indexing", INDEXING)
    if indexing == "xy" and nd < 2:
        msg = "`indexing='xy'` swaps the first two columns: `shape` must have at least two axes"
        raise ValueError(msg)
    prefix = _checks.check_int(prefix_tokens, "prefix_tokens", minimum=0)
    suffix = _checks.check_int(suffix_tokens, "suffix_tokens", minimum=0)
    if merge is not None:
        merge = _checks.check_int(merge, "merge", minimum=1)
        if nd < 2:
            msg = "`merge` orders the last two axes in blocks: `shape` must have at least two axes"
            raise ValueError(msg)
        for n in dims[-2:]:
            if not is_symbolic(n) and n % merge:
                msg = f"`merge` = {merge} must divide the last two sizes of `shape`, got {_checks.show(shape)}"
                raise ValueError(msg)
    integer = (
        normalize is None
        and (refs is None or floor)
        and all(isinstance(v, int) for v in offsets + scales)
    ) or floor
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    xp_ = ctx.xp
    total = prefix + suffix
    n_grid = 1
    for n in dims:
        n_grid = n_grid * n
    if not any(is_symbolic(n) for n in dims):
        _checks.check_size((total + n_grid, nd), "ids")
    if dtype is None:
        out_dtype = _compat.default_dtype(xp_, ctx.device, "integral") if integer else ctx.wide
    else:
        out_dtype = ctx.dtype
    work = xp_.float64 if ctx.float64 else xp_.float32
    denom = None
    if normalize == "min":
        denom = min(dims)
    elif normalize == "max":
        denom = max(dims)
    coords = []
    for k, n in enumerate(dims):
        c = xp_.arange(n, device=ctx.device)
        if centers[k]:
            c = c - (n - n // 2)
        if not integer or not isinstance(offsets[k], int) or refs is not None:
            c = _angles.cast(c, work, xp_)
        if offsets[k] != 0:
            c = c + offsets[k]
        if normalize is not None:
            d = n if normalize == "separate" else denom
            c = (_angles.cast(c, work, xp_) + 0.5) / d * 2.0 - 1.0
        if refs is not None:
            c = (c * refs[k]) / n
        if scales[k] != 1:
            c = c * scales[k]
        if floor:
            c = xp_.floor(_angles.cast(c, work, xp_))
        coords.append(c)
    grids = []
    for k, c in enumerate(coords):
        view = tuple(dims[j] if j == k else 1 for j in range(nd))
        grids.append(xp_.broadcast_to(xp_.reshape(c, view), dims))
    if indexing == "xy":
        grids[0], grids[1] = grids[1], grids[0]
    ids = xp_.stack([_angles.cast(g, out_dtype, xp_) for g in grids], axis=-1)
    if merge is not None:
        lead, (h, w) = dims[:-2], dims[-2:]
        ids = xp_.reshape(ids, lead + (h // merge, merge, w // merge, merge, nd))
        a = len(lead)
        ids = xp_.permute_dims(ids, tuple(range(a)) + (a, a + 2, a + 1, a + 3, a + 4))
    ids = xp_.reshape(ids, (n_grid, nd))
    if total:
        parts = []
        if prefix:
            parts.append(xp_.zeros((prefix, nd), dtype=out_dtype, device=ctx.device))
        parts.append(ids)
        if suffix:
            parts.append(xp_.zeros((suffix, nd), dtype=out_dtype, device=ctx.device))
        ids = xp_.concat(parts, axis=0)
    return ids
