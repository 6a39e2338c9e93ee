"""Multi-axis RoPE's tables from position ids: :func:`posenc.rope_axes_cos_sin`
and :func:`posenc.rope_axes` (see :mod:`posenc.axes`)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from posenc import _angles, _cache, _checks, _compat, _matrix, _rope, _tables
from posenc._compat import Array, Context
from posenc._trace import host_constant
from posenc.rotary import apply_rope
from posenc.scaling import Scaling
from posenc.scaling._formulas import check_scaling, length_dependent

__all__ = ["rope_axes_cos_sin", "rope_axes", "check_axes_dim", "per_axis", "check_scalings", "axes_freqs", "is_seq"]

SPLITS = ("blocks", "strided")


# --------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------
def is_seq(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def check_axes_dim(axes_dim: Any) -> tuple[int, ...]:
    """``axes_dim``: a non-empty sequence of positive even ints."""
    if not is_seq(axes_dim) or _compat.is_array(axes_dim):
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
    if is_seq(value) and not isinstance(value, Scaling):
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
        _checks.check_table_frequency(f.top, lambda: _rope.freq_source(bases[0], scalings[0]))
        return _derived_freqs(f.key, n, turns), (a,) * n
    freqs, attention = [], []
    for d, b, sc in zip(axes_dim, bases, scalings):
        _, _, _, f, a = _rope.inv_freq_of(d, b, sc, None, top)
        _checks.check_table_frequency(f.top, lambda b=b, sc=sc: _rope.freq_source(b, sc))
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
        f = _angles.Freqs.of_key(key)
        got = tuple(f.every(k, n).as_turns() if turns else f.every(k, n) for k in range(n))
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
        _checks.check_size(tuple(ids.shape), f"`{name}` array", f"`{name}`")
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
    dtype: Any, device: Any, xp: Any, key: Any,
) -> _Plan:
    keyed = key is not None  # a kept plan holds no arguments of the call
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
    _checks.check_size(tuple(ids.shape[:-1]) + (dim,), "table", "`ids` or `axes_dim`")
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


def _axes_compact(ids: Array, plan: _Plan, half: bool = False) -> tuple[Array, Array]:
    """cos and sin of every axis' angles, concatenated: (..., D / 2) in the
    working dtype; ``half``: laid out in the half layout already, ``[c, c]``
    (..., D), in one concatenation of the axes' parts."""
    ctx = plan.ctx
    xp = ctx.xp
    cs, ss = [], []
    for k, (f, a) in enumerate(zip(plan.freqs, plan.attention)):
        p = ids[..., k]
        s, c = _angles.sincos(p, f, ctx, "`ids`") if plan.angles is None else plan.angles[k](p, "`ids`")
        if a != 1.0:
            c, s = c * a, s * a
        cs.append(c)
        ss.append(s)
    if half:
        return xp.concat(cs + cs, axis=-1), xp.concat(ss + ss, axis=-1)
    if len(cs) == 1:
        return cs[0], ss[0]
    return xp.concat(cs, axis=-1), xp.concat(ss, axis=-1)


# --------------------------------------------------------------------------
# frequency matrices: angles = ids . F^T (posenc._matrix.matrix_sincos)
# --------------------------------------------------------------------------
#: the largest |freqs| entry (radians per unit of id) of a frequency matrix:
#: the matrix path reduces the angles exactly below 2**40 in float64 (1e7 in
#: the float32 pairs of a device without float64), so an entry above that
#: leaves the range at |id| = 1 already (and from about 1e299 on, Dekker's
#: split of the products overflows: 0 or NaN rows)
MAX_MATRIX_FREQUENCY = {True: 2.0**40, False: 2.0**23}


def _check_freqs_range(freqs: Array, turns: bool, ctx: Context) -> None:
    """Refuse a concrete frequency matrix with an entry beyond
    :data:`MAX_MATRIX_FREQUENCY` (traced, lazy or meta matrices are not
    read)."""
    xp = ctx.xp
    if ctx.traced or not _compat.is_real_float_dtype(xp, freqs.dtype) or not _compat.is_concrete(freqs):
        return
    if math.prod(freqs.shape) == 0:
        return
    limit = MAX_MATRIX_FREQUENCY[bool(ctx.float64)] / (2 * math.pi if turns else 1.0)
    if limit >= _checks.largest(ctx, freqs.dtype)[0]:  # (float16 matrices: no entry reaches it)
        return
    if bool(xp.any(xp.abs(freqs) > limit)):
        unit = "turns" if turns else "radians"
        msg = (
            f"`freqs` has entries above {limit:.3g} {unit} per unit of id: the angles ids @ freqs are reduced "
            f"exactly below 2**{40 if ctx.float64 else 23} radians only"
        )
        raise ValueError(msg)


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
    laid_out: bool = False,
) -> tuple[Array, Array, str | None, Context]:
    """The compact tables (..., D / 2) in the working dtype, the layout and
    the context (``ctx`` given: that of ``rope_axes``, tables in ``x``'s
    working dtype).  ``laid_out``: tables of the half layout come laid out
    already (the layout returned is then ``None``)."""
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
        _checks.check_size(shape, "table", "`ids` or `freqs`")  # from the shapes, before freqs is scanned
        _checks.check_all_finite(freqs, "freqs", ctx)
        _check_freqs_range(freqs, turns, ctx)
        s, c = _matrix.matrix_sincos(ids, freqs, turns, ctx)
        return c, s, layout, ctx
    if axes_dim is None:
        msg = "`axes_dim` (one rotary width per axis) or `freqs` (a frequency matrix) is required"
        raise TypeError(msg)
    key = None
    if ctx is None:
        options = (_key_of(axes_dim), _key_of(base), _key_of(scaling), layout, split, turns, dtype, device, xp)
        key = _compat.call_key((ids,), options)
    plan = _PLANS.get_or_make(
        key, _axes_plan, ids, axes_dim, base, scaling, layout, split, turns, ctx, dtype, device, xp, key
    )
    if plan.ids is not None:
        ids = plan.ids
    if plan.scan:
        _checks.check_finite(ids, "ids", plan.ctx.xp)
    if laid_out and plan.layout == "half":
        c, s = _axes_compact(ids, plan, half=True)
        return c, s, None, plan.ctx
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
    cos : array
        Shape ``ids.shape[:-1] + (D,)``; with ``freqs``, ``freqs.shape[:-2]
        + ids.shape[:-1] + (2 m,)`` (the heads first: tables of shape
        ``(heads, seq, D)`` broadcast against queries of shape ``(batch,
        heads, seq, D)``).
    sin : array
        The same shape as ``cos``.

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
    c, s, laid, ctx = _compact(
        ids, axes_dim, base, scaling, layout, split, turns, freqs, None, dtype, device, xp, laid_out=True
    )
    if laid is None:  # the half layout, laid out by the concatenation of the axes' parts
        return (c, s) if c.dtype == ctx.dtype else (ctx.xp.astype(c, ctx.dtype), ctx.xp.astype(s, ctx.dtype))
    return _tables.rope_tables(c, s, laid, ctx)


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
    """Rotate queries or keys by multi-axis RoPE in one call.

    :func:`rope_axes_cos_sin`, then :func:`posenc.apply_rope`.

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
    c, s, laid, _ = _compact(ids, axes_dim, base, scaling, layout, split, turns, freqs, ctx, None, None, None)
    assert laid is not None  # (compact tables: laid_out is not asked for)
    layout = laid
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
