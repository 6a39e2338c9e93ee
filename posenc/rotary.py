r"""Rotary position embeddings (RoPE, Su et al. 2021) and xPos.

RoPE rotates each pair of query / key features by the angle
:math:`p\,\omega_i`, so that the product of a query at position :math:`m`
and a key at position :math:`n` depends on :math:`m - n` only.  Libraries
disagree on which features form a pair:

* ``layout="half"``: feature :math:`i` pairs with :math:`i + d/2` (GPT-NeoX,
  Llama and every Hugging Face model using ``rotate_half``);
* ``layout="interleaved"``: features :math:`2i` and :math:`2i + 1` (GPT-J,
  RoFormer, Meta's original Llama code with complex numbers).

:func:`rope_permutation` converts projection weights between the two.  The
context-extension scalings live in :mod:`posenc.scaling`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _angles, _checks, _compat, _kernels
from ._compat import Array, Context
from .scaling import DynamicNTK, LongRoPE, Scaling, _seq_len, check_scaling, default_inv_freq

__all__ = [
    "rope_frequencies",
    "rope_cos_sin",
    "apply_rope",
    "rope",
    "rope_permutation",
    "xpos_scale",
]



# --------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------
def _freq_source(base: float, scaling: Scaling | None) -> str:
    return f"`base` = {base!r}" if scaling is None else f"`base` = {base!r} with `scaling` = {_checks.show(scaling)}"


#: results of _host_inv_freq by its (hashable) arguments: a repeated call
#: (every decode step) costs a dictionary lookup
_INV_FREQ: dict[Any, tuple[int, float, Scaling | None, _angles.Freqs, float]] = {}


@_compat.host_constant
def _host_inv_freq(
    dim: Any, base: Any, scaling: Any, seq_len: int | None, top: float = math.inf
) -> tuple[int, float, Scaling | None, _angles.Freqs, float]:
    """Validated ``dim``, ``base``, ``scaling``; the inverse frequencies and
    the attention factor.  Host work on Python arguments only: a constant of
    torch's traced graphs.  ``top`` is the largest value the tables' dtypes
    hold (an attention factor beyond it is refused)."""
    key = (type(dim), dim, type(base), base, scaling, seq_len, top)
    try:
        got = _INV_FREQ.get(key)
    except TypeError:  # unhashable arguments: the checks below say what is wrong
        key, got = None, None
    if got is not None:
        return got
    got = _inv_freq_checked(dim, base, scaling, seq_len, top)
    if key is not None:
        _compat.remember(_INV_FREQ, key, got, 1024)
    return got


def _inv_freq_checked(
    dim: Any, base: Any, scaling: Any, seq_len: int | None, top: float
) -> tuple[int, float, Scaling | None, _angles.Freqs, float]:
    dim = _checks.check_dim(dim, even=True)
    base = _checks.check_float(base, "base", positive=True)
    scaling = check_scaling(scaling)
    # a tiny base (or an extreme scaling) can ask for frequencies beyond the
    # float64 range: refused below, never a RuntimeWarning and inf
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        try:
            if scaling is None:
                w = default_inv_freq(dim, base)
            else:
                w = scaling._inv_freq(dim, base, seq_len)
        except OverflowError:  # Python float arithmetic of a scaling
            w = None
        finite = w is not None and bool(np.all(np.isfinite(w)))
    if not finite:
        msg = f"{_freq_source(base, scaling)} overflows float64 in the inverse frequencies"
        raise ValueError(msg)
    freqs = _angles.Freqs.from_array(w)
    a = 1.0 if scaling is None else float(scaling.attention_scaling(seq_len))
    if not abs(a) <= top:
        msg = (
            f"`scaling` = {_checks.show(scaling)} has the attention factor {a!r}, which multiplies "
            f"cos and sin beyond the range of the table dtype (largest {top:.3g})"
        )
        raise ValueError(msg)
    return dim, base, scaling, freqs, a


#: the largest value both the working and the output dtype hold, per
#: (namespace, work dtype, output dtype)
_TOPS: dict[Any, float] = {}


def _top(ctx: Context) -> float:
    if _compat.compiling():
        return _checks.largest(ctx, ctx.work, ctx.dtype)[0]
    key = (ctx.xp, ctx.work, ctx.dtype)
    top = _TOPS.get(key)
    if top is None:
        top = _checks.largest(ctx, ctx.work, ctx.dtype)[0]
        _compat.remember(_TOPS, key, top, 256)
    return top


def _shape_of(positions: Any) -> tuple[int, ...]:
    return (positions,) if isinstance(positions, int) or _compat.is_symbolic(positions) else tuple(positions.shape)


def _length_dependent(scaling: Any) -> bool:
    return isinstance(scaling, (DynamicNTK, LongRoPE))


def _effective_seq_len(seq_len: int | None, positions: Any, offset: Any, scaling: Any) -> int | None:
    """``seq_len`` for the length-dependent scalings, as Hugging Face takes it:
    ``max(positions) + 1``.  An int ``n`` of positions (from ``offset``) means
    ``offset + n``; a concrete array is read (one reduction over the
    positions, only for :class:`~posenc.scaling.DynamicNTK` and
    :class:`~posenc.scaling.LongRoPE`); a traced or lazy one must come with
    ``seq_len``: guessing would silently give the unscaled tables."""
    if seq_len is not None or not _length_dependent(scaling):
        return seq_len
    if isinstance(positions, int) and isinstance(offset, int):
        return positions + offset if positions + offset > 0 else None
    if (
        not _compat.is_symbolic(positions)
        and _compat.is_array(positions)
        and _compat.is_concrete(positions)
        and not _compat.is_array(offset)
        and not _compat.is_symbolic(offset)
    ):
        size = math.prod(positions.shape)
        if size == 0:
            return None
        xp = _compat.resolve({"positions": positions}).xp
        top = xp.max(positions)
        top = float(top) + offset + 1.0
        if not math.isfinite(top):
            return None
        return max(1, math.ceil(top))
    msg = (
        f"`seq_len` is required with `scaling` = {_checks.show(scaling)} for traced or lazy positions "
        "(its tables depend on the sequence length; Hugging Face uses max(positions) + 1): pass seq_len"
    )
    raise ValueError(msg)


def _layout(c: Array, dim: int, layout: str, xp: Any) -> Array:
    """Lay a compact (..., dim // 2) table out as (..., dim)."""
    if layout == "half":
        return xp.concat([c, c], axis=-1)
    lead = tuple(c.shape[:-1])
    return xp.reshape(xp.stack([c, c], axis=-1), lead + (dim,))


def _compact_cos_sin(
    positions: int | Array, freqs: _angles.Freqs, attention: float, ctx: Context, offset: Any = 0
) -> tuple[Array, Array]:
    """cos and sin of ``(positions + offset) * w`` times the attention factor,
    (..., dim // 2), in ``ctx.work``."""
    if isinstance(positions, int) and (isinstance(offset, int) or _compat.is_symbolic(offset)):
        s, c = _angles.sincos_range(offset, positions, freqs, ctx)
    else:
        if isinstance(positions, int) or _compat.is_symbolic(positions):
            positions = ctx.xp.arange(positions, device=ctx.device)
        if not (isinstance(offset, int) and offset == 0):
            positions = positions + offset
        s, c = _angles.sincos(positions, freqs, ctx)
    if attention != 1.0:
        c = c * attention
        s = s * attention
    return c, s


# --------------------------------------------------------------------------
# frequencies and tables
# --------------------------------------------------------------------------
def rope_frequencies(
    dim: int,
    *,
    base: float = 10000.0,
    scaling: Scaling | None = None,
    seq_len: int | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""The ``dim // 2`` inverse frequencies of RoPE, after scaling.

    .. math:: \omega_i = \mathrm{base}^{-2i/d}, \qquad i = 0, \dots, d/2 - 1,

    then transformed by ``scaling`` (see :mod:`posenc.scaling`).  Computed in
    float64 on the host and cast.

    Parameters
    ----------
    dim : int
        The rotary dimension (head dimension, or the rotated part of it),
        a positive even integer.
    base : float, default 10000.0
        RoPE's base :math:`\theta` (Hugging Face ``rope_theta``).
    scaling : posenc.scaling.Scaling, optional
        A context-extension scaling (:class:`~posenc.scaling.Linear`,
        :class:`~posenc.scaling.YaRN`, ...).
    seq_len : int, optional
        The current sequence length, for the length-dependent scalings
        (:class:`~posenc.scaling.DynamicNTK` and
        :class:`~posenc.scaling.LongRoPE`); ``None``: the original length.
    dtype, device, xp
        Output dtype, device and namespace (default: NumPy, default float).

    Returns
    -------
    array
        Shape ``(dim // 2,)``.

    References
    ----------
    .. [1] J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu, "RoFormer: Enhanced
           Transformer with Rotary Position Embedding", 2021,
           https://arxiv.org/abs/2104.09864

    Examples
    --------
    >>> import posenc
    >>> posenc.rope_frequencies(8)
    array([1.   , 0.1  , 0.01 , 0.001])
    >>> posenc.rope_frequencies(8, scaling=posenc.scaling.Linear(4.0))
    array([0.25   , 0.025  , 0.0025 , 0.00025])
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    seq_len = _seq_len(seq_len)
    _, base, scaling, freqs, _ = _host_inv_freq(dim, base, scaling, seq_len, _top(ctx))
    _checks.check_fits(freqs.top, ctx, f"{_freq_source(base, scaling)} gives inverse frequencies", "use a larger base")
    return _angles.cast(_compat.from_host(_angles._host_freqs(freqs.key), ctx, ctx.work), ctx.dtype, ctx.xp)


def rope_cos_sin(
    positions: int | Array,
    dim: int,
    *,
    base: float = 10000.0,
    scaling: Scaling | None = None,
    layout: str = "half",
    seq_len: int | None = None,
    offset: int | Array = 0,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> tuple[Array, Array]:
    r"""The ``cos`` and ``sin`` tables of RoPE.

    ``cos[..., j] = a * cos(p * w_k)`` and ``sin[..., j] = a * sin(p * w_k)``
    with ``w`` from :func:`rope_frequencies`, ``a`` the scaling's
    :meth:`~posenc.scaling.Scaling.attention_scaling` (the Hugging Face
    contract: YaRN and LongRoPE multiply the tables, not the logits), and
    ``k = j mod dim/2`` for ``layout="half"`` or ``k = j // 2`` for
    ``layout="interleaved"``.

    Parameters
    ----------
    positions : int or array
        An int ``n`` (positions ``0 .. n-1``) or an array of any shape of
        integer or real positions (offsets for incremental decoding,
        negative, fractional).
    dim : int
        Rotary dimension, a positive even integer.
    base : float, default 10000.0
        RoPE's base (``rope_theta``).
    scaling : posenc.scaling.Scaling, optional
        Context-extension scaling.
    layout : {"half", "interleaved"}
        ``"half"``: ``[c_0 .. c_{d/2-1}, c_0 .. c_{d/2-1}]`` (Hugging Face,
        GPT-NeoX); ``"interleaved"``: ``[c_0, c_0, c_1, c_1, ...]`` (GPT-J,
        RoFormer).
    seq_len : int, optional
        The sequence length the length-dependent scalings
        (:class:`~posenc.scaling.DynamicNTK`,
        :class:`~posenc.scaling.LongRoPE`) switch on.  Default, as Hugging
        Face's ``max(position_ids) + 1``: ``offset + n`` for an int ``n``;
        for a concrete array, its largest value + 1 (read only for those two
        scalings).  Traced (``jax.jit``, ``torch.compile``) and lazy (Dask)
        positions cannot be read: with a length-dependent scaling they need
        ``seq_len``, and a :class:`ValueError` says so.
    offset : int or 0-d integer array, default 0
        Added to the positions: ``rope_cos_sin(1, dim, offset=t)`` is the
        table of the decode step at position ``t``.  May be a traced integer
        (a 0-d array under ``jax.jit``, a ``SymInt`` under
        ``torch.compile``): the output shape does not depend on it.
    dtype, device, xp
        Output dtype (half precision is computed in float32 and cast at the
        end), the device for int positions, and the namespace.

    Returns
    -------
    cos, sin : array
        Each of shape ``positions.shape + (dim,)``.

    Notes
    -----
    The angles are exact: float32 tables are within a few float32 ulp
    (below 1e-6) of the float64 truth at every position below :math:`2^{20}`
    and beyond, on devices with and without float64; the usual
    ``cos(float32(p) * inv_freq)`` is off by about 2e-4 at p = 4096 and by
    4e-2 near :math:`10^6` (see :func:`posenc.sinusoidal`).

    References
    ----------
    .. [1] J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu, "RoFormer: Enhanced
           Transformer with Rotary Position Embedding", 2021,
           https://arxiv.org/abs/2104.09864

    Examples
    --------
    >>> import posenc
    >>> cos, sin = posenc.rope_cos_sin(3, 4)
    >>> cos.round(4)
    array([[ 1.    ,  1.    ,  1.    ,  1.    ],
           [ 0.5403,  1.    ,  0.5403,  1.    ],
           [-0.4161,  0.9998, -0.4161,  0.9998]])
    >>> posenc.rope_cos_sin(3, 4, layout="interleaved")[1][2].round(4)
    array([0.9093, 0.9093, 0.02  , 0.02  ])
    """
    key = _table_key(positions, dim, base, scaling, layout, seq_len, offset, dtype, device, xp)
    key, plan = _compat.lookup(_TABLE_PLANS, key)
    if plan is not None:
        ctx, dim, freqs, attention, scan, small = plan
        if scan:
            _checks.check_all_finite(positions, "positions", ctx)
    else:
        ctx = _compat.resolve({"positions": positions, "offset": offset}, xp=xp, device=device, dtype=dtype)
        layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
        seq_len = _seq_len(seq_len)
        dim = _checks.check_dim(dim, even=True)
        offset = _checks.check_offset(offset, "offset", ctx)
        # the table size from the shape, before the values are scanned
        positions = _checks.check_positions(positions, "positions", ctx, out_tail=(dim,), what="table")
        scaling = check_scaling(scaling)
        dependent = seq_len is None and _length_dependent(scaling)
        seq_len = _effective_seq_len(seq_len, positions, offset, scaling)
        dim, _, scaling, freqs, attention = _host_inv_freq(dim, base, scaling, seq_len, _top(ctx))
        small = _small_table(positions, freqs, layout, ctx) if key is not None else None
        if key is not None and not dependent:
            scan = _compat.is_real_float_dtype(ctx.xp, positions.dtype)
            _compat.remember(_TABLE_PLANS, key, (ctx, dim, freqs, attention, scan, small), _PLANS_MAX)
    xp_ = ctx.xp
    if small is not None:
        s, c = _kernels.TURNS[small[0]](positions, small[1], attention, False, layout)
        if ctx.dtype == ctx.work:  # the kernel's float32
            return c, s
        return _angles.cast(c, ctx.dtype, xp_), _angles.cast(s, ctx.dtype, xp_)
    c, s = _compact_cos_sin(positions, freqs, attention, ctx, offset)
    return (
        _angles.cast(_layout(c, dim, layout, xp_), ctx.dtype, xp_),
        _angles.cast(_layout(s, dim, layout, xp_), ctx.dtype, xp_),
    )


#: elements of a table up to which rope_cos_sin computes integer positions'
#: angles in the table's layout directly (one kernel pass over the doubled
#: frequencies, bit-identical) instead of half the table and a concatenation:
#: the tables of a decode step, where per-operation overhead is the cost
_SMALL_TABLE = 1 << 14


def _small_table(positions: Array, freqs: _angles.Freqs, layout: str, ctx: Context) -> tuple[str, Any] | None:
    """``(kernel kind, turns)`` for small tables of eager integer NumPy /
    torch positions on a device with float64 and float32 work (the turns path
    of :func:`posenc._angles.sincos`), else None.  The turns (frequencies
    over 2 pi, laid out) stay on the host for the kernels that compute
    through NumPy."""
    kind = _angles._kernel_kind(positions, ctx)
    if (
        kind is None
        or not ctx.float64
        or ctx.work != ctx.xp.float32
        or not _compat.is_integer_dtype(ctx.xp, positions.dtype)
    ):
        return None
    if math.prod(positions.shape) * 2 * freqs.m > _SMALL_TABLE:
        return None
    kind = _kernels.small_kind(kind, positions)
    if kind == "torch":
        return kind, tuple(_compat.from_host(t, ctx, ctx.xp.float64) for t in _angles.kernel_turns(freqs.key)[:2])
    return kind, _angles.kernel_turns(freqs.key) + (_angles.laid_out_fixed(freqs.key, layout),)


#: rope_cos_sin's validated arguments and host constants for array positions,
#: keyed by the positions' (type, dtype, device, shape) and the other
#: arguments (offset 0): a repeated call (every decode step) skips the checks
#: and only scans float positions for NaN
_TABLE_PLANS: dict[Any, tuple[Context, int, _angles.Freqs, float, bool, Any]] = {}


def _table_key(positions: Any, *args: Any) -> Any:
    offset = args[5]  # (dim, base, scaling, layout, seq_len, offset, dtype, device, xp)
    if type(offset) is not int or offset != 0:
        return None
    return _compat.call_key((positions,), args)


# --------------------------------------------------------------------------
# applying the rotation
# --------------------------------------------------------------------------
def _work_dtype(xp: Any, dtype: Any) -> Any:
    return dtype if dtype == getattr(xp, "float64", None) else xp.float32


def _check_x(x: Any, name: str = "x") -> None:
    if not _compat.is_array(x):
        msg = f"`{name}` must be an array of shape (..., seq, head_dim), got {type(x).__name__}"
        raise TypeError(msg)


def _check_x_array(x: Array, xp: Any, rotary_dim: Any) -> int:
    """``x`` (an array of namespace ``xp``) is real floating with a feature
    axis, even when all of it is rotated (``rotary_dim`` None); its length."""
    _checks.check_real_float(x, "x", xp)
    if x.ndim < 1:
        msg = f"`x` must have at least one axis (..., head_dim), got shape {tuple(x.shape)}"
        raise ValueError(msg)
    head_dim = int(x.shape[-1])
    if rotary_dim is None and (head_dim % 2 or head_dim == 0):
        msg = (
            f"`x` must have an even, non-zero last axis (head_dim) for RoPE, got {head_dim}; "
            "pass rotary_dim to rotate only the first features"
        )
        raise ValueError(msg)
    return head_dim


def _check_heads_axis(heads_axis: Any, x_ndim: int) -> int | None:
    """``heads_axis`` as a non-negative axis of ``x``'s leading axes, or None."""
    if heads_axis is None:
        return None
    if isinstance(heads_axis, bool) or not isinstance(heads_axis, int):
        msg = f"`heads_axis` must be an int (an axis of `x`) or None, got {_checks.show(heads_axis)}"
        raise TypeError(msg)
    lead = x_ndim - 1
    axis = heads_axis + x_ndim if heads_axis < 0 else heads_axis
    if not 0 <= axis < lead:
        msg = (
            f"`heads_axis` must name one of the {lead} leading axes of `x` (not its last, head_dim), "
            f"got {heads_axis} for `x` with {x_ndim} axes"
        )
        raise ValueError(msg)
    return axis


def _align(shape: tuple[int, ...], x_shape: tuple[int, ...], heads: int | None, name: str) -> tuple[int, ...] | None:
    """The shape the leading axes ``shape`` of a table (or of positions) take
    against ``x``'s leading axes ``x_shape``: with ``heads`` (an axis of
    ``x``) a size-1 axis is put there; without it, a table must either have
    ``x``'s number of leading axes or at most one (the sequence axis):
    anything between could line a batch axis up with the heads."""
    tl, xl = len(shape), len(x_shape)
    if heads is None:
        if 1 < tl < xl:
            msg = (
                f"`{name}` of leading shape {tuple(shape)} has {tl} leading axes but `x` of leading shape "
                f"{tuple(x_shape)} has {xl}: which axis of `x` holds the heads is ambiguous. Pass heads_axis "
                f"(heads_axis=1 for x of shape (batch, heads, seq, head_dim), heads_axis=2 for (batch, seq, heads, "
                f"head_dim)), or give `{name}` the rank of `x` (e.g. a size-1 heads axis: cos[:, None])"
            )
            raise ValueError(msg)
        return None
    if tl == xl:
        if shape[heads] != 1:
            msg = (
                f"`{name}` of leading shape {tuple(shape)} has {shape[heads]} entries on the heads axis "
                f"{heads} of `x`; tables and positions carry no heads axis (or a size-1 one)"
            )
            raise ValueError(msg)
        return None
    if tl > xl - 1:
        msg = (
            f"`{name}` of leading shape {tuple(shape)} has more leading axes than `x` of leading shape "
            f"{tuple(x_shape)} without its heads axis {heads}"
        )
        raise ValueError(msg)
    full = (1,) * (xl - 1 - tl) + tuple(shape)
    aligned = full[:heads] + (1,) + full[heads:]
    # None where the size-1 axis only adds leading ones (batch 1, or no batch
    # axis): broadcasting lines the axes up alike, and nothing is reshaped
    # (not while torch traces: no comparison of traced sizes)
    if not _compat.compiling() and _strip_ones(aligned) == _strip_ones(tuple(shape)):
        return None
    return aligned


def _strip_ones(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` without its leading ones."""
    i = 0
    while i < len(shape) and shape[i] == 1:
        i += 1
    return shape[i:]


@dataclass(slots=True)
class _Plan:
    """What ``apply_rope`` does with arrays of given types, dtypes, devices
    and shapes: validated once, cached (see :func:`_plan`)."""

    xp: Any
    layout: str
    rotary_dim: int
    head_dim: int
    half: int
    lead: tuple[int, ...]
    table_shape: tuple[int, ...] | None
    compact: bool
    wt: Any
    #: the kernel kind of arrays from _FAST_MIN elements, or None
    fast: str | None
    #: the formula with the backend's own functions below _FAST_MIN, or None
    small: Any


#: apply_rope's plans, keyed by the arguments' (type, dtype, device, shape)
#: and the keyword arguments: repeated calls (every decode step) skip the checks
_PLANS: dict[Any, _Plan] = {}
_PLANS_MAX = 2048
#: elements of ``x`` from which the NumPy / torch CPU fast paths pay off
#: (below, the formula's few small operations are cheaper)
_FAST_MIN = 1 << 15


def _make_plan(x: Array, cos: Array, sin: Array, layout: Any, rotary_dim: Any, compact: Any, heads_axis: Any) -> _Plan:
    """Validate ``apply_rope``'s arguments (shapes, dtypes, widths, axes)."""
    _check_x(x)
    for name, v in (("cos", cos), ("sin", sin)):
        if not _compat.is_array(v):
            msg = f"`{name}` must be an array of shape (..., rotary_dim), got {type(v).__name__}"
            raise TypeError(msg)
    ctx = _compat.resolve({"x": x, "cos": cos, "sin": sin})
    xp = ctx.xp
    layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
    compact = _checks.check_bool(compact, "compact")
    head_dim = _check_x_array(x, xp, True)
    for name, v in (("cos", cos), ("sin", sin)):
        _checks.check_real_float(v, name, xp)
    if tuple(cos.shape) != tuple(sin.shape):
        msg = f"`sin` must have the shape of `cos`, got {tuple(sin.shape)} and {tuple(cos.shape)}"
        raise ValueError(msg)
    if cos.ndim < 1 or int(cos.shape[-1]) == 0:
        msg = f"`cos` must have a non-empty last axis (the rotary width), got shape {tuple(cos.shape)}"
        raise ValueError(msg)
    width = int(cos.shape[-1])
    # the tables' width is the rotary width (Hugging Face's rule); compact
    # half-width tables only when the call says so
    implied = 2 * width if compact else width
    if implied % 2:
        msg = (
            f"`cos` has an odd last axis {width}: full tables hold rotary_dim values per position, an even "
            f"number at most x's head_dim {head_dim}; pass compact=True for tables of rotary_dim // 2 values"
        )
        raise ValueError(msg)
    if rotary_dim is not None:
        rotary_dim = _checks.check_dim(rotary_dim, "rotary_dim", even=True)
        if rotary_dim != implied:
            other = "compact=False (full tables)" if compact else "compact=True (tables of rotary_dim // 2 values)"
            msg = (
                f"`rotary_dim` = {rotary_dim} does not match `cos` of width {width}: "
                f"{'compact' if compact else 'full'} tables of that width rotate {implied} features. "
                f"Omit rotary_dim (the tables' width decides, as in Hugging Face) or pass {other}"
            )
            raise ValueError(msg)
    rotary_dim = implied
    if rotary_dim > head_dim:
        msg = (
            f"`cos` of width {width} rotates {rotary_dim} features, more than the head dimension {head_dim} of `x`"
            + ("" if compact else "; for compact tables of rotary_dim // 2 values pass compact=True")
        )
        raise ValueError(msg)
    heads = _check_heads_axis(heads_axis, x.ndim)
    x_lead = tuple(x.shape[:-1])
    table_shape = _align(tuple(cos.shape[:-1]), x_lead, heads, "cos")
    t_lead = tuple(cos.shape[:-1]) if table_shape is None else table_shape
    lead = _checks.broadcast_shapes(x_lead, t_lead)
    if lead is None:
        msg = (
            f"`cos` and `sin` of shape {tuple(cos.shape)} do not broadcast against `x` of shape "
            f"{tuple(x.shape)} (leading axes {t_lead} vs {x_lead})"
        )
        raise ValueError(msg)
    # shape arithmetic only (O(1), nothing read): a broadcast view may be huge
    _checks.check_size(lead + (head_dim,), "output")
    wt = _work_dtype(xp, x.dtype)
    # the kernels never while torch traces (the plan of a traced call is not
    # kept), and no size comparison then: a traced size would be guarded
    fast = small = None
    if not _compat.compiling():
        size = math.prod(lead) * head_dim
        if size >= _FAST_MIN:
            fast = _kernels.rotate_candidate(x, cos, sin)
        elif not compact and rotary_dim == head_dim and x.dtype == wt == cos.dtype == sin.dtype:
            kind = _kernels.small_kind(_compat.eager_kind(x, cos, sin), x)
            if kind is not None:
                small = _kernels.ROTATE_SMALL[kind]
    return _Plan(
        xp=xp,
        layout=layout,
        rotary_dim=rotary_dim,
        head_dim=head_dim,
        half=rotary_dim // 2,
        lead=lead,
        table_shape=None if table_shape is None else table_shape + (width,),
        compact=compact,
        wt=wt,
        fast=fast,
        small=small,
    )


def _apply(plan: _Plan, x: Array, c: Array, s: Array) -> Array:
    """Rotate ``x`` by the tables ``c``, ``s`` as ``plan`` says."""
    if plan.small is not None:  # NumPy / torch: their own reshape
        if plan.table_shape is not None:
            c, s = c.reshape(plan.table_shape), s.reshape(plan.table_shape)
        return plan.small(x, c, s, plan.layout)
    xp = plan.xp
    if plan.table_shape is not None:
        c, s = xp.reshape(c, plan.table_shape), xp.reshape(s, plan.table_shape)
    kind = plan.fast
    if kind is not None and _kernels.rotate_ok(kind, x, c, s):
        if kind == "torch" and plan.layout == "interleaved" and not _kernels.complex_viewable(x):
            return _rotate_portable(x, c, s, plan)
        if not plan.compact:
            h = plan.half
            c, s = (c[..., :h], s[..., :h]) if plan.layout == "half" else (c[..., ::2], s[..., ::2])
        c, s = _angles.cast(c, plan.wt, xp), _angles.cast(s, plan.wt, xp)
        if kind == "numpy":
            return _kernels.rotate_numpy(x, c, s, plan.layout, plan.rotary_dim, plan.lead)
        return _kernels.rotate_torch(x, c, s, plan.layout, plan.rotary_dim, plan.lead)
    return _rotate_portable(x, c, s, plan)


def _rotate_portable(x: Array, c: Array, s: Array, plan: _Plan) -> Array:
    """The Array API reference: rotate ``x[..., :rotary_dim]`` by ``c``, ``s``.

    Full tables (``(..., rotary_dim)``): Hugging Face's
    ``x * cos + rotate_half(x) * sin`` (interleaved: GPT-J's
    ``rotate_every_two``); compact ones (``(..., rotary_dim // 2)``):
    ``x1 * c - x2 * s`` and ``x2 * c + x1 * s`` per pair.  Both round the same
    products in the same order, so they agree bit for bit on tables whose
    pairs hold one value.  ``x`` keeps its dtype; computed in float32
    (float64 for float64 ``x``).
    """
    xp = plan.xp
    out_dtype = x.dtype
    wt = plan.wt
    rd, h, head_dim = plan.rotary_dim, plan.half, plan.head_dim
    xw = _angles.cast(x, wt, xp)
    c, s = _angles.cast(c, wt, xp), _angles.cast(s, wt, xp)
    xr = xw if rd == head_dim else xw[..., :rd]
    if plan.layout == "half":
        x1, x2 = xw[..., :h], xw[..., h:rd]
        if plan.compact:
            rot = xp.concat([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
        else:
            rot = xr * c + xp.concat([-x2, x1], axis=-1) * s
    else:
        xe, xo = xw[..., 0:rd:2], xw[..., 1:rd:2]
        if plan.compact:
            rot = xp.stack([xe * c - xo * s, xo * c + xe * s], axis=-1)
        else:
            pairs = xp.stack([-xo, xe], axis=-1)
            rot = xr * c + xp.reshape(pairs, tuple(pairs.shape[:-2]) + (rd,)) * s
        if plan.compact:
            rot = xp.reshape(rot, tuple(rot.shape[:-2]) + (rd,))
    if rd < head_dim:
        rest = x[..., rd:]
        if tuple(rest.shape[:-1]) != plan.lead:
            rest = xp.broadcast_to(rest, plan.lead + (head_dim - rd,))
        rot = xp.concat([_angles.cast(rot, out_dtype, xp), rest], axis=-1)
    return _angles.cast(rot, out_dtype, xp)


def apply_rope(
    x: Array,
    cos: Array,
    sin: Array,
    *,
    layout: str = "half",
    rotary_dim: int | None = None,
    compact: bool = False,
    heads_axis: int | None = None,
) -> Array:
    r"""Rotate the last axis of ``x`` by the angles of ``cos`` / ``sin``.

    For ``layout="half"``, with :math:`h` = ``rotary_dim // 2``:

    .. math::

        y_i = x_i \cos\theta_i - x_{i+h} \sin\theta_i, \qquad
        y_{i+h} = x_{i+h} \cos\theta_i + x_i \sin\theta_i,

    which is Hugging Face's ``x * cos + rotate_half(x) * sin``; for
    ``layout="interleaved"`` the pairs are :math:`(x_{2i}, x_{2i+1})` (GPT-J's
    ``rotate_every_two``).  Features from ``rotary_dim`` on pass through
    unchanged (partial rotary: GPT-J's ``rotary_dim``, Hugging Face's
    ``partial_rotary_factor``).

    Parameters
    ----------
    x : array
        Queries or keys, shape ``(..., seq, head_dim)``: ``(batch, heads,
        seq, head_dim)``, or any layout with ``heads_axis``.
    cos, sin : array
        Tables from :func:`rope_cos_sin` (with the same ``layout``), shape
        ``(..., rotary_dim)``.  Their width is the rotary width, as in
        Hugging Face: tables narrower than ``x``'s head dimension rotate only
        the first features (Phi-3's ``partial_rotary_factor``).  Their leading
        axes broadcast against ``x``'s: either ``(seq, rotary_dim)``, or the
        rank of ``x`` (``(batch, 1, seq, rotary_dim)``, Hugging Face's
        ``cos.unsqueeze(1)``), or any shape together with ``heads_axis``.
    layout : {"half", "interleaved"}
        Which features are paired, see :func:`rope_cos_sin`.
    rotary_dim : int, optional
        A check of the rotary width: it must equal the tables' width (twice
        it for ``compact=True``).
    compact : bool, default False
        The tables hold each angle once, shape ``(..., rotary_dim // 2)``
        (``cos[..., :h]`` of full half-layout tables).  Never guessed from
        the width: a width that is no full table is an error.
    heads_axis : int, optional
        The axis of ``x`` that holds the heads (``1`` for ``(batch, heads,
        seq, head_dim)``, ``2`` or ``-2`` for ``(batch, seq, heads,
        head_dim)``).  The tables (``(batch, seq, rotary_dim)`` from position
        ids of shape ``(batch, seq)``, or ``(seq, rotary_dim)``) then get a
        size-1 axis there, as Hugging Face's ``unsqueeze_dim`` does.  Without
        it, tables with more than one leading axis but fewer than ``x`` are
        refused: they could line a batch axis up with the heads.

    Returns
    -------
    array
        The rotated ``x``: same dtype (bfloat16 / float16 inputs are computed
        in float32 and rounded once), same device, shape ``x.shape``
        broadcast with the tables' leading axes.

    Notes
    -----
    Validation depends only on types, dtypes, devices and shapes, and is done
    once per combination (cached, the latest 2048 kept).  Below
    :math:`2^{15}` elements (a decode step) NumPy arrays and torch tensors
    take the formula as ``x * cos + swap(x) * signed(sin)``: three
    operations on arrays of ``x``'s size, bit for bit the Array API
    formula's values (``(-x2) * s`` and ``x2 * (-s)`` are the same float);
    torch CPU tensors run them through their NumPy views, unless autograd,
    forward-mode AD or a ``torch.func`` transform needs torch's own
    operations.  From about :math:`2^{15}` elements, NumPy arrays and
    torch CPU tensors (float32 / float64, no autograd) take a fast path that
    computes the same products into one preallocated output, in cache-sized
    blocks of three passes for the half layout and with a single complex
    multiplication for the interleaved layout, where the textbook
    ``x * cos + rotate_half(x) * sin`` makes five temporaries the size of
    ``x``; it reads the first half (every other value, interleaved) of full
    tables, whose pairs :func:`rope_cos_sin` fills with one value.  A torch
    output of that path lives in memory NumPy allocated (huge pages, wrapped
    by ``torch.from_numpy``).  The interleaved layout is the faster of the
    two (see :ref:`performance`).  Every other case (JAX, CuPy, Dask, array-api-strict, autograd,
    ``torch.compile``) uses the Array API formula; the fast paths are tested
    equal to it.

    References
    ----------
    .. [1] J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu, "RoFormer: Enhanced
           Transformer with Rotary Position Embedding", 2021,
           https://arxiv.org/abs/2104.09864

    Examples
    --------
    >>> import numpy as np, posenc
    >>> x = np.array([[1.0, 0.0, 0.0, 1.0]])          # one position, head_dim 4
    >>> cos, sin = posenc.rope_cos_sin(np.array([2]), 4)
    >>> posenc.apply_rope(x, cos, sin).round(4)
    array([[-0.4161, -0.02  ,  0.9093,  0.9998]])
    >>> float(np.linalg.norm(posenc.apply_rope(x, cos, sin)))  # a rotation
    1.414213...

    Hugging Face's shapes: ``q`` of ``(batch, heads, seq, head_dim)`` and
    tables from ``position_ids`` of shape ``(batch, seq)``:

    >>> q = np.ones((2, 4, 3, 8))
    >>> cos, sin = posenc.rope_cos_sin(np.array([[0, 1, 2], [5, 6, 7]]), 8)
    >>> posenc.apply_rope(q, cos, sin, heads_axis=1).shape
    (2, 4, 3, 8)
    """
    key, plan = _compat.lookup(_PLANS, _compat.call_key((x, cos, sin), (layout, rotary_dim, compact, heads_axis)))
    if plan is None:
        plan = _make_plan(x, cos, sin, layout, rotary_dim, compact, heads_axis)
        if key is not None:
            _compat.remember(_PLANS, key, plan, _PLANS_MAX)
    if plan.small is not None and plan.table_shape is None:  # a decode step
        return plan.small(x, cos, sin, plan.layout)
    return _apply(plan, x, cos, sin)


def rope(
    x: Array,
    positions: int | Array,
    *,
    base: float = 10000.0,
    scaling: Scaling | None = None,
    layout: str = "half",
    rotary_dim: int | None = None,
    seq_len: int | None = None,
    offset: int | Array = 0,
    heads_axis: int | None = None,
) -> Array:
    """Rotary position embedding in one call: :func:`rope_cos_sin` then
    :func:`apply_rope`.

    Parameters
    ----------
    x : array
        Queries or keys, shape ``(..., seq, head_dim)`` (or any layout with
        ``heads_axis``).
    positions : int or array
        ``n`` (positions ``offset .. offset+n-1``, with ``n == seq``) or an
        array of positions broadcasting against ``x.shape[:-1]``: ``(seq,)``,
        or ``(batch, seq)`` position ids with ``heads_axis``, or ``(batch, 1,
        seq)``.  It must be on ``x``'s device.
    base, scaling, layout, seq_len, offset
        As in :func:`rope_cos_sin`.
    rotary_dim : int, optional
        Rotate only the first ``rotary_dim`` features (even, at most
        ``head_dim``); the frequencies are those of a ``rotary_dim``-dimensional
        RoPE.  Default: all of them.
    heads_axis : int, optional
        The axis of ``x`` that holds the heads, as in :func:`apply_rope`:
        needed for position ids of shape ``(batch, seq)`` against ``x`` of
        shape ``(batch, heads, seq, head_dim)`` (``heads_axis=1``).

    Returns
    -------
    array
        The rotated ``x`` (its dtype; tables computed in float32, or float64
        for float64 ``x``).

    References
    ----------
    .. [1] J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu, "RoFormer: Enhanced
           Transformer with Rotary Position Embedding", 2021,
           https://arxiv.org/abs/2104.09864

    Examples
    --------
    >>> import numpy as np, posenc
    >>> q = np.ones((2, 5, 8))            # (heads, seq, head_dim)
    >>> posenc.rope(q, 5).shape
    (2, 5, 8)
    >>> np.allclose(posenc.rope(q, 5)[:, 0], q[:, 0])   # position 0 is not rotated
    True
    >>> q = np.ones((2, 4, 3, 8))         # (batch, heads, seq, head_dim)
    >>> posenc.rope(q, np.array([[0, 1, 2], [5, 6, 7]]), heads_axis=1).shape
    (2, 4, 3, 8)
    """
    key = None
    if type(offset) is int and offset == 0:
        key = _compat.call_key((x, positions), (base, scaling, layout, rotary_dim, seq_len, heads_axis))
    key, plan = _compat.lookup(_ROPE_PLANS, key)
    if plan is None:
        plan, checked, offset = _rope_plan(
            x, positions, base, scaling, layout, rotary_dim, seq_len, offset, heads_axis, key is not None
        )
        # kept where the positions are used as given (not converted)
        if key is not None and plan.cache and checked is positions:
            _compat.remember(_ROPE_PLANS, key, plan, _PLANS_MAX)
        positions = checked
    elif plan.scan:
        _checks.check_all_finite(positions, "positions", plan.ctx)
    if plan.small is not None:
        # the full tables in one kernel pass, then the formula (a decode step)
        kind, v = plan.small
        shape = None if plan.aligned is None else plan.aligned + (plan.dim,)
        return _kernels.ROPE_SMALL[kind](x, positions, v, plan.attention, shape, plan.layout)
    xp = plan.ctx.xp
    c, s = _compact_cos_sin(positions, plan.freqs, plan.attention, plan.ctx, offset)
    if plan.aligned is not None:
        c, s = xp.reshape(c, plan.aligned + (plan.dim // 2,)), xp.reshape(s, plan.aligned + (plan.dim // 2,))
        heads_axis = None
    return apply_rope(x, c, s, layout=plan.layout, compact=True, heads_axis=heads_axis)


@dataclass(slots=True)
class _RopePlan:
    """What ``rope`` does with arrays of given types, dtypes, devices and
    shapes (see :func:`_rope_plan`)."""

    ctx: Context
    dim: int
    freqs: _angles.Freqs
    attention: float
    layout: str
    aligned: tuple[int, ...] | None
    #: float positions: scanned for NaN on every call
    scan: bool
    #: (kernel kind, turns) of a decode step (_kernels.ROPE_SMALL), or None
    small: tuple[str, Any] | None
    #: whether the plan may be kept (not where seq_len was read from the values)
    cache: bool


#: rope's plans, keyed like apply_rope's (offset 0 only)
_ROPE_PLANS: dict[Any, _RopePlan] = {}


def _rope_plan(
    x: Array,
    positions: int | Array,
    base: Any,
    scaling: Any,
    layout: Any,
    rotary_dim: Any,
    seq_len: Any,
    offset: Any,
    heads_axis: Any,
    keyed: bool,
) -> tuple[_RopePlan, Any, Any]:
    """Validate ``rope``'s arguments: the plan (host constants of the tables,
    shapes, kernels), the checked positions and offset."""
    _check_x(x)
    ctx = _compat.resolve({"x": x, "positions": positions, "offset": offset})
    xp = ctx.xp
    head_dim = _check_x_array(x, xp, rotary_dim)
    _checks.check_size(tuple(x.shape), "output")  # before anything is computed for a huge view
    dim = head_dim if rotary_dim is None else _checks.check_dim(rotary_dim, "rotary_dim", even=True)
    if dim > head_dim:
        msg = f"`rotary_dim` must be at most the head dimension {head_dim} of `x`, got {dim}"
        raise ValueError(msg)
    wt = _work_dtype(xp, x.dtype)
    tctx = Context(xp=xp, device=ctx.device, dtype=wt, work=wt, float64=ctx.float64)
    layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
    given_seq_len = seq_len = _seq_len(seq_len)
    offset = _checks.check_offset(offset, "offset", tctx)
    checked = _checks.check_positions(positions, "positions", tctx, out_tail=(head_dim,), what="output")
    pshape = _shape_of(checked)
    heads = _check_heads_axis(heads_axis, x.ndim)
    aligned = _align(pshape, tuple(x.shape[:-1]), heads, "positions")
    lead = _checks.broadcast_shapes(tuple(x.shape[:-1]), pshape if aligned is None else aligned)
    if lead is None:
        msg = f"`positions` of shape {pshape} do not broadcast against the leading axes {tuple(x.shape[:-1])} of `x`"
        raise ValueError(msg)
    _checks.check_size(lead + (head_dim,), "output")
    scaling = check_scaling(scaling)
    seq_len = _effective_seq_len(seq_len, checked, offset, scaling)
    _checks.check_size(pshape + (dim // 2,), "table")
    dim, _, scaling, freqs, attention = _host_inv_freq(dim, base, scaling, seq_len, _top(tctx))
    small = None
    if keyed and dim == head_dim and x.dtype == wt and math.prod(lead) * head_dim < _FAST_MIN:
        kind = _compat.eager_kind(x, checked)
        small = _small_table(checked, freqs, layout, tctx) if kind is not None else None
        if small is not None and _kernels.small_kind(kind, x) != small[0]:
            small = None  # x and the positions on different devices: the portable path says so
    return _RopePlan(
        ctx=tctx,
        dim=dim,
        freqs=freqs,
        attention=attention,
        layout=layout,
        aligned=aligned,
        scan=_compat.is_array(checked) and _compat.is_real_float_dtype(xp, checked.dtype),
        small=small,
        # seq_len read from the positions' values: not for the next call
        cache=given_seq_len is not None or not _length_dependent(scaling),
    ), checked, offset


# --------------------------------------------------------------------------
# layout conversion
# --------------------------------------------------------------------------
def rope_permutation(
    dim: int,
    *,
    source: str = "interleaved",
    target: str = "half",
    rotary_dim: int | None = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    """Indices converting per-head q / k weights between RoPE layouts.

    With ``perm = rope_permutation(head_dim)``, the rows of a query or key
    projection laid out for ``source`` become ``W_target = W_source[perm]``
    (per head, along the head-dimension axis of the output features), and
    the rotated products agree: ``rope(x @ W_target.T, layout=target)`` is
    ``rope(x @ W_source.T, layout=source)[..., perm]``, so every attention
    score is unchanged.  Converting GPT-J / Meta-Llama (interleaved) weights
    to Hugging Face's ``rotate_half`` layout (``source="interleaved",
    target="half"``) gives ``[0, 2, 4, ..., 1, 3, 5, ...]``; the opposite
    direction is its inverse.

    Parameters
    ----------
    dim : int
        The head dimension (positive; even unless ``rotary_dim`` is given).
    source, target : {"interleaved", "half"}
        Layouts of the weights you have and of the ones you want.
    rotary_dim : int, optional
        Only the first ``rotary_dim`` features are rotated (partial rotary);
        the rest keep their place.  Default: ``dim``.
    device, xp
        Namespace and device of the index array (default NumPy).

    Returns
    -------
    array
        Integer indices of shape ``(dim,)`` (the namespace's index dtype).

    Examples
    --------
    >>> import posenc
    >>> posenc.rope_permutation(8)
    array([0, 2, 4, 6, 1, 3, 5, 7])
    >>> posenc.rope_permutation(8, source="half", target="interleaved")
    array([0, 4, 1, 5, 2, 6, 3, 7])
    >>> posenc.rope_permutation(6, rotary_dim=4)
    array([0, 2, 1, 3, 4, 5])

    For a Hugging Face ``q_proj`` weight of shape ``(heads * head_dim,
    hidden)`` from interleaved weights ``w``:
    ``w.reshape(heads, head_dim, hidden)[:, perm].reshape(heads * head_dim, hidden)``.
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=None)
    source = _checks.check_choice(source, "source", _checks.ROPE_LAYOUTS)
    target = _checks.check_choice(target, "target", _checks.ROPE_LAYOUTS)
    if rotary_dim is None:
        dim = _checks.check_dim(dim, even=True)
        r = dim
    else:
        dim = _checks.check_dim(dim)
        r = _checks.check_dim(rotary_dim, "rotary_dim", even=True)
        if r > dim:
            msg = f"`rotary_dim` must be at most `dim` = {dim}, got {r}"
            raise ValueError(msg)
    return _compat.from_host(
        _host_permutation(dim, r, source, target), ctx, _compat.default_dtype(ctx.xp, ctx.device, "indexing")
    )


@_compat.host_constant
def _host_permutation(dim: int, r: int, source: str, target: str) -> np.ndarray:
    h = r // 2
    if source == target:
        perm = np.arange(r)
    elif source == "interleaved":  # half position j <- interleaved 2j (j < h), 2(j - h) + 1
        perm = np.concatenate([np.arange(0, r, 2), np.arange(1, r, 2)])
    else:  # interleaved position 2i <- half i, 2i + 1 <- half h + i
        perm = np.stack([np.arange(h), np.arange(h, r)], axis=-1).reshape(r)
    return np.concatenate([perm, np.arange(r, dim)])


# --------------------------------------------------------------------------
# xPos
# --------------------------------------------------------------------------
@_compat.host_constant
def _xpos_rates(dim: int, scale_base: float) -> tuple[np.ndarray, float]:
    """xPos's decay rates ``log(zeta) / scale_base`` (host float64) and their
    largest magnitude."""
    zeta = (np.arange(0, dim, 2, dtype=np.float64) + 0.4 * dim) / (1.4 * dim)
    with np.errstate(over="ignore"):
        host_rate = np.log(zeta) / scale_base  # negative: log(zeta) < 0
    return host_rate, float(np.max(np.abs(host_rate)))


# --------------------------------------------------------------------------
# xPos functions
# --------------------------------------------------------------------------
def xpos_scale(
    positions: int | Array,
    dim: int,
    *,
    scale_base: float = 512.0,
    layout: str = "half",
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""xPos decay scales (Sun et al., 2022, "A Length-Extrapolatable Transformer").

    .. math::

        \zeta_i = \frac{2i + 0.4\,d}{1.4\,d}, \qquad
        \mathrm{scale}_{p, i} = \zeta_i^{\,p / \mathrm{scale\_base}},
        \qquad i = 0, \dots, d/2 - 1,

    laid out like :func:`rope_cos_sin`.  Queries are multiplied by the scale
    and keys by its inverse (``xpos_scale(-positions, ...)``), so that the
    product at offset :math:`m - n` decays like
    :math:`\zeta_i^{(m - n)/\mathrm{scale\_base}}`.  Apply it together with
    RoPE: ``apply_rope(q * scale, cos, sin)``.

    Parameters
    ----------
    positions : int or array
        As in :func:`rope_cos_sin` (torchscale centres the positions of a
        block; pass them so if you want that).
    dim : int
        Rotary dimension, a positive even integer.
    scale_base : float, default 512
        The positions per decay step (> 0).
    layout : {"half", "interleaved"}
        As in :func:`rope_cos_sin`.
    dtype, device, xp
        Output dtype, device and namespace.

    Returns
    -------
    array
        Shape ``positions.shape + (dim,)``, positive.  Computed as
        ``exp(p * log(zeta) / scale_base)`` in float64 where the device has
        it (relative error about :math:`|p \ln\zeta / \mathrm{scale\_base}|
        \cdot 2^{-24}` in float32 otherwise).  Scales of negative positions
        beyond the range of the output dtype saturate just below its largest
        value (never ``inf``); those of large positive positions underflow
        to 0.

    References
    ----------
    .. [1] Y. Sun et al., "A Length-Extrapolatable Transformer", ACL 2023,
           https://arxiv.org/abs/2212.10554

    Examples
    --------
    >>> import posenc
    >>> posenc.xpos_scale(2, 4, scale_base=1.0).round(4)
    array([[1.    , 1.    , 1.    , 1.    ],
           [0.2857, 0.6429, 0.2857, 0.6429]])
    """
    ctx = _compat.resolve({"positions": positions}, xp=xp, device=device, dtype=dtype)
    layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
    dim = _checks.check_dim(dim, even=True)
    scale_base = _checks.check_float(scale_base, "scale_base", positive=True)
    positions = _checks.check_positions(positions, "positions", ctx, out_tail=(dim,), what="table")
    xp_ = ctx.xp
    host_rate, big = _xpos_rates(dim, scale_base)
    wide_max = float(xp_.finfo(ctx.wide).max)
    if not big <= wide_max:
        msg = (
            f"`scale_base` = {scale_base!r} gives decay rates up to {big:.3g}, beyond the range of "
            f"{getattr(ctx.wide, '__name__', None) or ctx.wide}; use a larger scale_base"
        )
        raise ValueError(msg)
    rate = _compat.from_host(host_rate, ctx, ctx.wide)
    p = positions
    if isinstance(p, int):
        p_max = float(max(p - 1, 0))
        p = xp_.arange(p, dtype=ctx.wide, device=ctx.device)
    else:
        p_max = wide_max
        p = _angles.cast(p, ctx.wide, xp_)
    # |p * rate| stays finite: beyond |p| = limit every column's exponent is
    # below -1e25 or above 1e25 (the rates differ by at most a factor ~dim),
    # so clipping p there changes no scale
    limit = (wide_max / 2.0) / big if big > 0.0 else math.inf
    if p_max > limit:
        p = xp_.clip(p, -limit, limit)
    e = p[..., None] * rate
    if not isinstance(positions, int):  # negative positions grow the scale
        # scales beyond the output range saturate at its largest value, never inf
        top = min(float(xp_.finfo(ctx.work).max), float(xp_.finfo(ctx.dtype).max))
        e = xp_.clip(e, None, math.log(top) - 1e-3)  # a margin of many float32 ulp
    scale = xp_.exp(e)
    scale = _angles.cast(scale, ctx.work, xp_)
    return _angles.cast(_layout(scale, dim, layout, xp_), ctx.dtype, xp_)

