"""The plumbing of :mod:`posenc.rotary` and :mod:`posenc.axes`: RoPE's
frequencies after a scaling (validated, cached host constants), the plans of
``rope_cos_sin``, ``apply_rope`` and ``rope`` (their arguments validated once
per type, dtype, device and shape, and the kernels chosen for such arrays),
the tables they compute and the portable rotation every kernel is tested
against.

Imports: :mod:`posenc._tables` and below, :mod:`posenc.scaling`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _angles, _cache, _checks, _compat, _kernels, _tables
from ._compat import Array, Context
from ._trace import compiling, host_constant, is_symbolic
from .scaling._formulas import Scaling, check_scaling, check_seq_len, exact_inv_freq, length_dependent


# --------------------------------------------------------------------------
# frequencies
# --------------------------------------------------------------------------
def freq_source(base: float, scaling: Scaling | None) -> str:
    return f"`base` = {base!r}" if scaling is None else f"`base` = {base!r} with `scaling` = {_shown(scaling)}"


#: results of inv_freq_of by its (hashable) arguments: a repeated call
#: (every decode step) costs a dictionary lookup
_INV_FREQ = _cache.Memo("rotary.inv_freq", 1024)


@host_constant
def inv_freq_of(
    dim: Any, base: Any, scaling: Any, seq_len: int | None, top: float = math.inf
) -> tuple[int, float, Scaling | None, _angles.Freqs, float]:
    """Validated ``dim``, ``base``, ``scaling``; the inverse frequencies and
    the attention factor.  Host work on Python arguments only: a constant of
    torch's traced graphs.  ``top`` is the largest value the tables' dtypes
    hold (an attention factor beyond it is refused)."""
    key = (type(dim), dim, type(base), base, scaling, seq_len, top)
    return _INV_FREQ.get_or_make(key, _inv_freq_checked, dim, base, scaling, seq_len, top)


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
            w, lo = exact_inv_freq(scaling, dim, base, seq_len)
        except OverflowError:  # Python float arithmetic of a scaling
            w, lo = None, None
        finite = w is not None and bool(np.all(np.isfinite(w)))
    if not finite:
        msg = f"{freq_source(base, scaling)} overflows float64 in the inverse frequencies"
        raise ValueError(msg)
    # the frequencies posenc defines carry their exact values (about 106 bits)
    freqs = _angles.Freqs.from_array(w) if lo is None else _angles.Freqs.exact(w, lo)
    a = 1.0 if scaling is None else float(scaling.attention_scaling(seq_len))
    if not abs(a) <= top:
        msg = (
            f"`scaling` = {_shown(scaling)} has the attention factor {a!r}, which multiplies "
            f"cos and sin beyond the range of the table dtype (largest {top:.3g})"
        )
        raise ValueError(msg)
    return dim, base, scaling, freqs, a


#: the largest value both the working and the output dtype hold, per
#: (namespace, work dtype, output dtype)
_TOPS = _cache.Memo("rotary.tops", 256)


def top_of(ctx: Context) -> float:
    """The largest value both the working and the output dtype of ``ctx``
    hold (an attention factor beyond it is refused)."""
    if ctx.traced:
        return _checks.largest(ctx, ctx.work, ctx.dtype)[0]
    key = (ctx.xp, ctx.work, ctx.dtype)
    top = _TOPS.get(key)
    if top is None:
        top = _checks.largest(ctx, ctx.work, ctx.dtype)[0]
        _TOPS.put(key, top)
    return top


def _shape_of(positions: Any) -> tuple[int, ...]:
    return (positions,) if isinstance(positions, int) or is_symbolic(positions) else tuple(positions.shape)


def effective_seq_len(seq_len: int | None, positions: Any, offset: Any, scaling: Any) -> int | None:
    """``seq_len`` for the length-dependent scalings, as Hugging Face takes it:
    ``max(positions) + 1``.  An int ``n`` of positions (from ``offset``) means
    ``offset + n``; a concrete array is read (one reduction over the
    positions, only for :class:`~posenc.scaling.DynamicNTK` and
    :class:`~posenc.scaling.LongRoPE`); a traced or lazy one must come with
    ``seq_len``: guessing would silently give the unscaled tables."""
    if seq_len is not None or not length_dependent(scaling):
        return seq_len
    if isinstance(positions, int) and isinstance(offset, int):
        return positions + offset if positions + offset > 0 else None
    xp = None
    if _compat.is_array(positions) and not is_symbolic(positions):
        xp = _compat.resolve({"positions": positions}).xp
        real = _compat.is_integer_dtype(xp, positions.dtype) or _compat.is_real_float_dtype(xp, positions.dtype)
        if not real:  # (bool, complex: not positions, which the caller's checks refuse by name)
            return None
    if (
        xp is not None
        and _compat.is_concrete(positions)
        and not _compat.is_array(offset)
        and not is_symbolic(offset)
    ):
        size = math.prod(positions.shape)
        if size == 0:
            return None
        if _compat.is_integer_dtype(xp, positions.dtype):
            top = float(_compat.int_range(xp, positions)[1] + offset + 1)
        else:
            top = float(xp.max(positions)) + offset + 1.0
        if not math.isfinite(top):
            return None
        return max(1, math.ceil(top))
    msg = (
        f"`seq_len` is required with `scaling` = {_shown(scaling)} for traced, lazy or device "
        "`positions` (its tables depend on the sequence length; Hugging Face uses max(positions) + 1, which posenc "
        "does not read back from a device): pass seq_len"
    )
    raise ValueError(msg)


@host_constant
def _shown(scaling: Any) -> str:
    """:func:`posenc._checks.show` of a scaling, made on the host (torch's
    tracer cannot follow a dataclass's ``repr``: the message of an error
    raised while it traces would be lost)."""
    return _checks.show(scaling)


def compact_cos_sin(
    positions: int | Array, freqs: _angles.Freqs, attention: float, ctx: Context, offset: Any, angles: Any
) -> tuple[Array, Array]:
    """cos and sin of ``(positions + offset) * w`` times the attention factor,
    (..., dim // 2), in ``ctx.work``; ``angles`` the plan's prepared angles
    of array positions (offset 0), or None."""
    if angles is not None:  # array positions of a kept plan, offset 0
        s, c = angles(positions)
    elif isinstance(positions, int) and (isinstance(offset, int) or is_symbolic(offset)):
        s, c = _angles.sincos_range(offset, positions, freqs, ctx)
    else:
        if isinstance(positions, int) or is_symbolic(positions):
            positions = ctx.xp.arange(positions, device=ctx.device)
        shown = "`positions`" if type(offset) is int and offset == 0 else "`positions` + `offset`"
        positions, wrapped = _checks.add_offset(positions, offset, ctx)
        s, c = _angles.prepare(positions, freqs, ctx)(positions, shown)
        if wrapped is not None:  # traced positions whose sum left the integer type: NaN rows
            s, c = _angles.nan_rows(s, c, wrapped, ctx)
    if attention != 1.0:
        c = c * attention
        s = s * attention
    return c, s


# --------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------
@dataclass(slots=True)
class TablePlan:
    """What :func:`rope_cos_sin` does with positions of one type, dtype,
    device and shape and given options (offset 0): validated once, kept in
    :data:`TABLE_PLANS`; a repeated call (every decode step) skips the
    checks and only scans float positions for NaN."""

    ctx: Context
    layout: str
    freqs: _angles.Freqs
    attention: float
    #: concrete float positions: scanned for NaN on every call
    scan: bool
    #: (lane, turns) of the one-pass kernel of small integer tables, or None
    small: tuple[_kernels.Lane, tuple[Array, ...]] | None
    #: the angles of array positions, or None
    angles: _angles.Angles | None
    #: a range's tables come from the cached exact tables whatever their size
    #: (a device: one launch hands out a cached table where the small
    #: tables' formula takes a dozen)
    device_range: bool
    #: the checked positions and offset of a call whose plan is not kept
    positions: Any
    offset: Any
    #: False where the tables depend on the positions' values (seq_len read from them)
    keep: bool


#: rope_cos_sin's plans, keyed by the positions' (type, dtype, device, shape)
#: and the other arguments (offset 0)
TABLE_PLANS = _cache.Memo("rotary.table_plans", 2048)


def table_plan(
    positions: Any, dim: Any, base: Any, scaling: Any, layout: Any, seq_len: Any, offset: Any, dtype: Any,
    device: Any, xp: Any, key: Any,
) -> TablePlan:
    """Validate ``rope_cos_sin``'s arguments: the table size from the shape,
    before the positions are scanned (by the caller, on every call)."""
    keyed = key is not None  # a kept plan holds no arguments of the call
    ctx = _compat.resolve({"positions": positions, "offset": offset}, xp=xp, device=device, dtype=dtype)
    layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
    seq_len = check_seq_len(seq_len)
    dim = _checks.check_dim(dim, even=True)
    offset = _checks.check_offset(offset, "offset", ctx)
    positions = _checks.check_positions(positions, "positions", ctx, out_tail=(dim,), what="table", scan=False)
    scaling = check_scaling(scaling)
    dependent = seq_len is None and length_dependent(scaling)
    seq_len = effective_seq_len(seq_len, positions, offset, scaling)
    dim, _, scaling, freqs, attention = inv_freq_of(dim, base, scaling, seq_len, top_of(ctx))
    _checks.check_table_frequency(freqs.top, lambda: freq_source(base, scaling))
    small = angles = None
    scan = False
    if _compat.is_array(positions):
        scan = _compat.is_real_float_dtype(ctx.xp, positions.dtype) and _compat.is_concrete(positions)
        if keyed:
            small = _angles.table_kernel(positions, freqs, layout, ctx)
            angles = _angles.prepare(positions, freqs, ctx)
    device_range = isinstance(positions, int) and _kernels.device_table(ctx, "pair:" + layout) is not None
    return TablePlan(
        ctx=ctx, layout=layout, freqs=freqs, attention=attention, scan=scan, small=small, angles=angles,
        device_range=device_range, positions=None if keyed else positions, offset=None if keyed else offset,
        keep=not dependent,
    )


@host_constant
def traced_table_args(
    dim: Any, base: Any, scaling: Any, layout: Any, seq_len: Any, work: Any, out: Any
) -> tuple[str, int, _angles.Freqs, float] | None:
    """``rope_cos_sin``'s Python arguments checked on the host for a call
    torch's compiler traces (a constant of its graph: none of these checks
    is traced, guarded or run again per call): ``(layout, dim, freqs,
    attention)`` for tables in the working dtype ``work`` and the output
    dtype ``out``, or None where the frequencies depend on the positions (a
    length-dependent scaling without ``seq_len``: :func:`table_plan` decides)."""
    layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
    seq_len = check_seq_len(seq_len)
    dim = _checks.check_dim(dim, even=True)
    scaling = check_scaling(scaling)
    if seq_len is None and length_dependent(scaling):
        return None
    top = _checks.largest(_compat.resolve(dtype=out), work, out)[0]  # (top_of's, on the host)
    dim, _, scaling, freqs, attention = inv_freq_of(dim, base, scaling, seq_len, top)
    _checks.check_table_frequency(freqs.top, lambda: freq_source(base, scaling))
    return layout, dim, freqs, attention


def traced_tables(
    positions: Any, dim: Any, base: Any, scaling: Any, layout: Any, seq_len: Any, offset: Any, dtype: Any,
    device: Any, xp: Any,
) -> tuple[Array, Array] | None:
    """``rope_cos_sin`` while torch's compiler traces it: the checks of the
    Python arguments in one host constant (:func:`traced_table_args`), so
    that the compiled call guards on little more than its tensors; None
    where :func:`table_plan` must decide."""
    ctx = _compat.resolve({"positions": positions, "offset": offset}, xp=xp, device=device, dtype=dtype)
    args = traced_table_args(dim, base, scaling, layout, seq_len, ctx.work, ctx.dtype)
    if args is None:
        return None
    layout, dim, freqs, attention = args
    offset = _checks.check_offset(offset, "offset", ctx)
    positions = _checks.check_positions(positions, "positions", ctx, out_tail=(dim,), what="table", scan=False)
    plan = TablePlan(
        ctx=ctx, layout=layout, freqs=freqs, attention=attention, scan=False, small=None, angles=None,
        device_range=False, positions=positions, offset=offset, keep=False,
    )
    return tables(plan, positions, offset)


def tables(plan: TablePlan, positions: int | Array, offset: Any) -> tuple[Array, Array]:
    """``rope_cos_sin``'s tables of checked ``positions`` as ``plan`` says
    (the one-pass kernel of small integer tables aside): the compact tables
    laid out."""
    ctx = plan.ctx
    freqs = plan.freqs
    ranged = isinstance(positions, int) and (isinstance(offset, int) or is_symbolic(offset))
    if ranged and not ctx.traced and (plan.device_range or positions * freqs.m >= _kernels.SMALL_TABLE):
        # a range: its cached tables
        return _tables.rope_range(offset, positions, freqs, plan.layout, plan.attention, ctx)
    a = plan.angles
    if a is not None and a.rows is not None:  # dense integer positions: rows of a range's cached tables
        bad, extremes = (
            (None, None)
            if a.limit is None
            else _angles.check_magnitude(positions, a.limit, a.read, unsigned=a.unsigned)
        )
        if bad is None:
            got = _tables.gathered_rope(positions, a.rows, freqs, plan.layout, plan.attention, ctx, extremes)
            if got is not None:
                return got
            # not dense: every angle, without reading the positions' range a second time
            s, c = a.path(positions, a)
            if plan.attention != 1.0:
                c, s = c * plan.attention, s * plan.attention
            return _tables.rope_tables(c, s, plan.layout, ctx)
    c, s = compact_cos_sin(positions, freqs, plan.attention, ctx, offset, a)
    return _tables.rope_tables(c, s, plan.layout, ctx)


# --------------------------------------------------------------------------
# rotations
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


def _align(
    shape: tuple[int, ...], x_shape: tuple[int, ...], heads: int | None, name: str, traced: bool
) -> tuple[int, ...] | None:
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
                f"{tuple(x_shape)} has {xl}: which axis of `x` holds the heads is ambiguous. Pass `heads_axis` "
                f"(heads_axis=1 for x of shape (batch, heads, seq, head_dim), heads_axis=2 for (batch, seq, heads, "
                f"head_dim)), or give `{name}` the rank of `x` (e.g. a size-1 heads axis: cos[:, None])"
            )
            raise ValueError(msg)
        return None
    if tl == xl:
        if shape[heads] != 1:
            msg = (
                f"`{name}` of leading shape {tuple(shape)} has {shape[heads]} entries on the heads axis of `x` "
                f"(`heads_axis` = {heads}); tables and positions carry no heads axis (or a size-1 one)"
            )
            raise ValueError(msg)
        return None
    if tl > xl - 1:
        msg = (
            f"`{name}` of leading shape {tuple(shape)} has more leading axes than `x` of leading shape "
            f"{tuple(x_shape)} without its heads axis (`heads_axis` = {heads})"
        )
        raise ValueError(msg)
    full = (1,) * (xl - 1 - tl) + tuple(shape)
    aligned = full[:heads] + (1,) + full[heads:]
    # None where the size-1 axis only adds leading ones (batch 1, or no batch
    # axis): broadcasting lines the axes up alike, and nothing is reshaped
    # (not while torch traces: no comparison of traced sizes)
    if not traced and _strip_ones(aligned) == _strip_ones(tuple(shape)):
        return None
    return aligned


def _strip_ones(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` without its leading ones."""
    i = 0
    while i < len(shape) and shape[i] == 1:
        i += 1
    return shape[i:]


@dataclass(slots=True)
class ApplyPlan:
    """What ``apply_rope`` does with arrays of given types, dtypes, devices
    and shapes: validated once, kept in :data:`APPLY_PLANS`."""

    xp: Any
    layout: str
    rotary_dim: int
    head_dim: int
    half: int
    lead: tuple[int, ...]
    table_shape: tuple[int, ...] | None
    compact: bool
    wt: Any
    #: the formula with the backend's own functions (a decode step), or None
    small: Any
    #: the blocked fast path of large arrays (None for a call it does not apply to), or None
    large: Any


#: apply_rope's plans, keyed by the arguments' (type, dtype, device, shape)
#: and the keyword arguments: repeated calls (every decode step) skip the checks
APPLY_PLANS = _cache.Memo("rotary.apply_plans", 2048)


def apply_plan(
    x: Array, cos: Array, sin: Array, layout: Any, rotary_dim: Any, compact: Any, heads_axis: Any
) -> ApplyPlan:
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
            other = "`compact`=False (full tables)" if compact else "`compact`=True (tables of rotary_dim // 2 values)"
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
            + (
                "; `compact`=True reads them as tables of rotary_dim // 2 values: pass compact=False for full tables"
                if compact
                else "; for compact tables of rotary_dim // 2 values pass compact=True"
            )
        )
        raise ValueError(msg)
    heads = _check_heads_axis(heads_axis, x.ndim)
    x_lead = tuple(x.shape[:-1])
    table_shape = _align(tuple(cos.shape[:-1]), x_lead, heads, "cos", ctx.traced)
    t_lead = tuple(cos.shape[:-1]) if table_shape is None else table_shape
    lead = _checks.broadcast_shapes(x_lead, t_lead)
    if lead is None:
        placed = "" if heads is None else f" with `heads_axis` = {heads_axis}"
        msg = (
            f"`cos` and `sin` of shape {tuple(cos.shape)} do not broadcast against `x` of shape "
            f"{tuple(x.shape)}{placed} (leading axes {t_lead} vs {x_lead})"
        )
        raise ValueError(msg)
    # shape arithmetic only (O(1), nothing read): a broadcast view may be huge
    _checks.check_size(lead + (head_dim,), "output", "`x`, `cos` or `sin`")
    wt = _work_dtype(xp, x.dtype)
    # no kernel while torch traces (the plan of a traced call is not kept),
    # and no size comparison then: a traced size would be guarded
    small = large = None
    if not ctx.traced:
        full = not compact and rotary_dim == head_dim and x.dtype == wt == cos.dtype == sin.dtype
        small, large = _kernels.rotation(x, cos, sin, ctx, size=math.prod(lead) * head_dim, small=full)
    return ApplyPlan(
        xp=xp,
        layout=layout,
        rotary_dim=rotary_dim,
        head_dim=head_dim,
        half=rotary_dim // 2,
        lead=lead,
        table_shape=None if table_shape is None else table_shape + (width,),
        compact=compact,
        wt=wt,
        small=small,
        large=large,
    )


def apply_many(
    xs: tuple[Array, ...], cos: Array, sin: Array, layout: Any, rotary_dim: Any, compact: Any, heads_axis: Any
) -> tuple[Array, ...]:
    """``apply_rope`` of each of ``xs`` by the same tables: a pair whose
    plans both take the Triton rotation, with the same tables, in one launch
    (:func:`posenc._kernels.triton.rotate_pair_triton`); else one call each."""
    if not xs:
        msg = "`x` must be an array or a non-empty tuple of arrays (q, k), got an empty tuple"
        raise ValueError(msg)
    for i, x in enumerate(xs):
        if isinstance(x, (tuple, list)):
            msg = f"`x` must be an array or a flat tuple (q, k) of arrays, got a {type(x).__name__} at x[{i}]"
            raise TypeError(msg)
    opts = (layout, rotary_dim, compact, heads_axis)
    if compiling():  # no keys, no memos, no Triton pair: each rotated as its plan says
        return tuple(apply(apply_plan(x, cos, sin, *opts), x, cos, sin) for x in xs)
    key = _compat.call_key((*xs, cos, sin), (*opts, "tuple"))  # (never a single array's key)
    plans = APPLY_PLANS.get_or_make(key, _plans, xs, cos, sin, opts)
    if len(xs) == 2:
        got = _apply_pair(plans[0], plans[1], xs[0], xs[1], cos, sin)
        if got is not None:
            return got
    return tuple(apply(p, x, cos, sin) for p, x in zip(plans, xs, strict=True))


def _plans(xs: tuple[Array, ...], cos: Array, sin: Array, opts: tuple[Any, ...]) -> tuple[ApplyPlan, ...]:
    """The plan of each of ``xs`` (a tuple's plans are kept together: one lookup per call)."""
    plans = []
    for x in xs:
        key = _compat.call_key((x, cos, sin), opts)
        plans.append(APPLY_PLANS.get_or_make(key, apply_plan, x, cos, sin, *opts))
    return tuple(plans)


def _apply_pair(pq: ApplyPlan, pk: ApplyPlan, q: Array, k: Array, c: Array, s: Array) -> tuple[Array, Array] | None:
    """``(q, k)`` rotated in one launch where both plans take the Triton
    rotation with one table shape and working dtype, else None."""
    large = pq.large
    if large is None or pk.large is not large or pq.table_shape != pk.table_shape or pq.wt != pk.wt:
        return None
    from posenc._kernels.triton import rotate_large_triton, rotate_pair_triton

    if large is not rotate_large_triton:
        return None
    if pq.table_shape is not None:
        xp = pq.xp
        c, s = xp.reshape(c, pq.table_shape), xp.reshape(s, pq.table_shape)
    return rotate_pair_triton(q, k, c, s, pq.layout, pq.rotary_dim, pq.compact)


def apply(plan: ApplyPlan, x: Array, c: Array, s: Array) -> Array:
    """Rotate ``x`` by the tables ``c``, ``s`` as ``plan`` says."""
    if plan.table_shape is not None:
        xp = plan.xp
        c, s = xp.reshape(c, plan.table_shape), xp.reshape(s, plan.table_shape)
    if plan.small is not None:
        return plan.small(x, c, s, plan.layout)
    if plan.large is not None:
        out = plan.large(x, c, s, plan.layout, plan.rotary_dim, plan.lead, plan.compact, plan.wt)
        if out is not None:
            return out
    return rotate_portable(x, c, s, plan)


def rotate_portable(x: Array, c: Array, s: Array, plan: ApplyPlan) -> Array:
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


@dataclass(slots=True)
class RopePlan:
    """What ``rope`` does with arrays of given types, dtypes, devices and
    shapes (see :func:`rope_plan`), kept in :data:`ROPE_PLANS`."""

    ctx: Context
    dim: int
    freqs: _angles.Freqs
    attention: float
    layout: str
    aligned: tuple[int, ...] | None
    #: concrete float positions: scanned for NaN on every call
    scan: bool
    #: (lane, turns) of a decode step (the lane's rope kernel), or None
    small: tuple[_kernels.Lane, tuple[Array, ...]] | None
    #: the angles of array positions, or None
    angles: _angles.Angles | None
    #: the checked positions and offset of a call whose plan is not kept
    positions: Any
    offset: Any
    #: False where seq_len was read from the positions' values (not for the next call)
    keep: bool


#: rope's plans, keyed like apply_rope's (offset 0 only)
ROPE_PLANS = _cache.Memo("rotary.rope_plans", 2048)


def rope_plan(
    x: Array,
    positions: int | Array,
    base: Any,
    scaling: Any,
    layout: Any,
    rotary_dim: Any,
    seq_len: Any,
    offset: Any,
    heads_axis: Any,
    key: Any,
) -> RopePlan:
    """Validate ``rope``'s arguments: the plan (host constants of the tables,
    shapes, kernels; the checked positions and offset where it is not kept)."""
    keyed = key is not None  # a kept plan holds no arguments of the call
    _check_x(x)
    ctx = _compat.resolve({"x": x, "positions": positions, "offset": offset})
    xp = ctx.xp
    head_dim = _check_x_array(x, xp, rotary_dim)
    _checks.check_size(tuple(x.shape), "output", "`x`")  # before anything is computed for a huge view
    dim = head_dim if rotary_dim is None else _checks.check_dim(rotary_dim, "rotary_dim", even=True)
    if dim > head_dim:
        msg = f"`rotary_dim` must be at most the head dimension {head_dim} of `x`, got {dim}"
        raise ValueError(msg)
    wt = _work_dtype(xp, x.dtype)
    tctx = ctx.with_dtype(wt)
    layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
    given_seq_len = seq_len = check_seq_len(seq_len)
    offset = _checks.check_offset(offset, "offset", tctx)
    checked = _checks.check_positions(positions, "positions", tctx, out_tail=(head_dim,), what="output", scan=False)
    pshape = _shape_of(checked)
    heads = _check_heads_axis(heads_axis, x.ndim)
    aligned = _align(pshape, tuple(x.shape[:-1]), heads, "positions", ctx.traced)
    lead = _checks.broadcast_shapes(tuple(x.shape[:-1]), pshape if aligned is None else aligned)
    if lead is None:
        msg = f"`positions` of shape {pshape} do not broadcast against the leading axes {tuple(x.shape[:-1])} of `x`"
        if heads is not None:  # (the alignment follows heads_axis)
            msg += f" with its heads on `heads_axis` = {heads}" + ("" if aligned is None else f" (as {aligned})")
        raise ValueError(msg)
    _checks.check_size(lead + (head_dim,), "output", "`x` or `positions`")
    scaling = check_scaling(scaling)
    seq_len = effective_seq_len(seq_len, checked, offset, scaling)
    # (rope has no `dim`: the rotated width is rotary_dim, or x's head dimension)
    dname = "`rotary_dim`" if rotary_dim is not None else "`x`.shape[-1]"
    _checks.check_size(pshape + (dim // 2,), "table", f"`positions` or {dname}")
    try:
        dim, _, scaling, freqs, attention = inv_freq_of(dim, base, scaling, seq_len, top_of(tctx))
    except (ValueError, TypeError) as exc:
        raise type(exc)(str(exc).replace("`dim`", dname)) from None
    _checks.check_table_frequency(freqs.top, lambda: freq_source(base, scaling))
    small = angles = None
    scan = False
    if _compat.is_array(checked):
        scan = _compat.is_real_float_dtype(xp, checked.dtype) and _compat.is_concrete(checked)
        if keyed:
            angles = _angles.prepare(checked, freqs, tctx)
            if dim == head_dim and x.dtype == wt:
                # x and the positions of one kind and device (else the portable path says what is wrong)
                small = _angles.rope_kernel(x, checked, freqs, layout, tctx, math.prod(lead) * head_dim)
    return RopePlan(
        ctx=tctx,
        dim=dim,
        freqs=freqs,
        attention=attention,
        layout=layout,
        aligned=aligned,
        scan=scan,
        small=small,
        angles=angles,
        positions=None if keyed else checked,
        offset=None if keyed else offset,
        keep=given_seq_len is not None or not length_dependent(scaling),
    )


