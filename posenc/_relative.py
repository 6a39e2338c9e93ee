"""Shared helpers of the relative-position and attention-bias functions
(:mod:`posenc.bias`, :mod:`posenc.alibi`, :mod:`posenc.windows`): query and
key lengths, head counts and offsets (through the one check of offsets,
:func:`posenc._checks.check_offset`); the
integer output dtype and the span it must hold; the relative positions
``j - (i + offset)`` as a matrix, a range or the vector of distinct
distances, and the gather of a vector over distances into a Toeplitz
matrix; per-head floating parameters; the causal mask.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

import numpy as np

from . import _angles, _checks, _compat
from ._compat import Array, Context
from ._trace import is_symbolic

__all__ = [
    "bounded",
    "head_count",
    "lengths",
    "query_offset",
    "is_traced",
    "array_args",
    "int_dtype",
    "iinfo",
    "check_span",
    "arange",
    "rel_matrix",
    "rel_range",
    "rel_vector",
    "toeplitz",
    "float_param",
    "float_dtype_of",
    "check_per_head",
    "check_positive",
    "short_values",
    "mask_future",
]


def bounded(value: Any, name: str, minimum: int) -> int:
    """An integer in ``[minimum, MAX_ELEMENTS]``: a length or a head count
    (every output has an axis of that length, so an empty output of a larger
    one is refused too, not only a large one).

    A traced length (a torch ``SymInt`` such as ``x.shape[-2]`` under
    ``torch.compile`` or ``torch.export``) stays traced: a shape is never
    negative, and turning it into an int would fix the graph to one length.
    """
    if is_symbolic(value):
        return value
    n = _checks.check_int(value, name, minimum=minimum)
    if n > _checks.MAX_ELEMENTS:
        msg = f"`{name}` must be at most posenc's limit of 2**40, got {n!r}"
        raise ValueError(msg)
    return n


def head_count(num_heads: Any) -> int:
    """A head count: a Python int (a traced one is fixed to its value: the
    slopes are host constants, and head counts do not change between calls)."""
    if is_symbolic(num_heads) or (isinstance(num_heads, int) and not isinstance(num_heads, bool)):
        # operator.index fixes a traced int to its value (int() would keep it traced)
        num_heads = operator.index(num_heads)
    return bounded(num_heads, "num_heads", 1)


def lengths(query_len: Any, key_len: Any) -> tuple[int, int]:
    q = bounded(query_len, "query_len", 0)
    k = q if key_len is None else bounded(key_len, "key_len", 0)
    return q, k


def query_offset(offset: Any, q: int, k: int, ctx: Context) -> Any:
    """The offset as a Python int, a torch ``SymInt`` or a traced 0-d
    integer array (``jax.jit``, ``torch.compile``); concrete 0-d arrays
    become ints; default ``k - q``.  Positions stay within posenc's size
    limit: an offset beyond 2**40 is a typo, not a cache."""
    if offset is None:
        return k - q
    return _checks.check_offset(offset, "offset", ctx, bits=40)


def is_traced(offset: Any) -> bool:
    """Whether an offset (or a value derived from it) is a traced array rather
    than a Python int or ``SymInt``."""
    return not (isinstance(offset, int) or is_symbolic(offset))


def array_args(offset: Any) -> dict[str, Any]:
    """``offset`` among the arrays that decide the namespace, when it is one."""
    if offset is None or isinstance(offset, int) or is_symbolic(offset):
        return {}
    return {"offset": offset} if _compat.is_array(offset) else {}


def int_dtype(dtype: Any, ctx: Context, kind: str = "integral") -> Any:
    """The requested integer output dtype, or the namespace's default."""
    xp = ctx.xp
    if dtype is None:
        return _compat.default_dtype(ctx.xp, ctx.device, kind)
    given = dtype
    msg = f"`dtype` must be an integer dtype of {_compat.namespace_name(xp)}, got {_checks.show(given)}"
    if _compat.is_array(dtype):  # an array is not a dtype (np.dtype(<tensor>) raises ValueError)
        raise TypeError(msg)
    if isinstance(dtype, str):
        dtype = getattr(xp, dtype, None)
        if dtype is None:
            raise ValueError(msg)
    dtype = _compat.native_dtype(xp, dtype)
    if dtype is None or not _compat.is_integer_dtype(xp, dtype):
        raise TypeError(msg)
    return dtype


def iinfo(xp: Any, dtype: Any) -> tuple[int, int]:
    """The smallest and largest value of integer ``dtype`` as Python ints."""
    info = xp.iinfo(dtype)
    return int(info.min), int(info.max)


def check_span(lo: int, hi: int, dtype: Any, ctx: Context, what: str) -> None:
    """Refuse integer values in ``[lo, hi]`` that integer ``dtype`` cannot hold
    (unchecked while the offset is traced)."""
    if is_traced(lo) or is_traced(hi):
        return  # a traced offset: its value is not known while tracing
    dmin, dmax = iinfo(ctx.xp, dtype)
    if lo < dmin or hi > dmax:
        msg = (
            f"the {what} span [{lo}, {hi}] (from `query_len`, `key_len` and `offset`), which does not fit "
            f"in `dtype` {dtype}; pass a wider integer dtype"
        )
        raise ValueError(msg)


def arange(start: int, stop: int, ctx: Context, dtype: Any) -> Array:
    """``start .. stop - 1`` in ``dtype`` on ``ctx``'s device."""
    return ctx.xp.arange(start, stop, dtype=dtype, device=ctx.device)


def rel_matrix(q: int, k: int, off: Any, ctx: Context, dtype: Any) -> Array:
    """``j - (i + off)`` for ``i < q``, ``j < k`` in integer ``dtype``."""
    j = arange(0, k, ctx, dtype)
    if is_traced(off):
        i = arange(0, q, ctx, dtype)
        return (j[None, :] - i[:, None]) - _angles.cast(off, dtype, ctx.xp)
    i = arange(off, off + q, ctx, dtype)
    return j[None, :] - i[:, None]


def rel_range(q: int, k: int, off: Any) -> tuple[Any, Any]:
    """The smallest and largest ``j - (i + off)`` (for non-empty q, k)."""
    return -(q - 1) - off, k - 1 - off


def rel_vector(q: int, k: int, off: Any, ctx: Context, dtype: Any) -> Array:
    """The ``q + k - 1`` distinct ``j - (i + off)``, increasing (for non-empty q, k)."""
    if is_traced(off):
        return arange(-(q - 1), k, ctx, dtype) - _angles.cast(off, dtype, ctx.xp)
    lo, hi = rel_range(q, k, off)
    return arange(lo, hi + 1, ctx, dtype)


def toeplitz(vec: Array, q: int, k: int, ctx: Context) -> Array:
    """``out[..., i, j] = vec[..., j - i + q - 1]`` for ``vec`` of shape (..., q + k - 1), q, k > 0."""
    xp = ctx.xp
    lead = tuple(vec.shape[:-1])
    idt = _compat.default_dtype(ctx.xp, ctx.device, "indexing")
    idx = rel_matrix(q, k, -(q - 1), ctx, idt)  # j - i + q - 1, in [0, q + k - 2]
    out = xp.take(vec, xp.reshape(idx, (-1,)), axis=len(lead))
    return xp.reshape(out, lead + (q, k))


def float_param(x: Any, name: str, ctx: Context) -> Array:
    """A real floating array (Python numbers and lists become ``ctx.dtype`` arrays)."""
    xp = ctx.xp
    if not _compat.is_array(x):
        if isinstance(x, bool) or not isinstance(x, (list, tuple, numbers.Real)):
            msg = f"`{name}` must be an array of shape (num_heads,), got {type(x).__name__}"
            raise TypeError(msg)
        if ctx.traced:
            # constants of the traced graph (value checks skip themselves there)
            return ctx.xp.asarray(x, dtype=ctx.work, device=ctx.device)
        try:
            host = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            msg = f"`{name}` must be an array or a list of numbers, got {_checks.show(x)}"
            raise TypeError(msg) from None
        top = float(ctx.xp.finfo(ctx.work).max)
        if host.size and not float(np.max(np.abs(host))) <= top:  # NaN fails too
            msg = (
                f"`{name}` must hold finite values within the range of {ctx.work} (largest {top:.3g}), "
                f"got {_checks.show(x)}"
            )
            raise ValueError(msg)
        return ctx.from_host(host, ctx.work)
    if not _compat.is_real_float_dtype(xp, x.dtype):
        msg = f"`{name}` must be an array of real floating dtype, got dtype {x.dtype}"
        raise TypeError(msg)
    top = float(xp.finfo(ctx.work).max)
    # values the working dtype cannot hold would overflow to inf in the cast
    wider = _compat.is_concrete(x) and math.prod(x.shape) and float(xp.finfo(x.dtype).max) > top
    if wider and bool(xp.any(xp.isfinite(x) & (xp.abs(x) > top))):
        msg = f"`{name}` must hold values within the range of {ctx.work} (largest {top:.3g}), got {short_values(x)}"
        raise ValueError(msg)
    return x


def float_dtype_of(params: dict[str, Any], xp: Any, device: Any) -> Any:
    """The promoted dtype of the real floating arrays among ``params`` (or None)."""
    arrays = {k: v for k, v in params.items() if _compat.is_array(v)}
    if not arrays:
        return None
    ns = _compat.resolve(arrays, xp=xp, device=device).xp
    types = [v.dtype for v in arrays.values() if _compat.is_real_float_dtype(ns, v.dtype)]
    if not types:
        return None
    return types[0] if len(types) == 1 else ns.result_type(*types)


def check_per_head(x: Array, name: str, num_heads: int | None = None) -> int:
    """The head count of a per-head parameter of shape ``(num_heads,)``."""
    if x.ndim != 1 or (num_heads is not None and int(x.shape[0]) != num_heads):
        want = "(num_heads,)" if num_heads is None else f"(num_heads,) = ({num_heads},)"
        msg = f"`{name}` must have shape {want}, got shape {tuple(x.shape)}"
        raise ValueError(msg)
    return int(x.shape[0])


def check_positive(x: Array, name: str, ctx: Context, *, upper: float | None = None) -> None:
    """Value check on concrete arrays only (never on traced or lazy ones)."""
    xp = ctx.xp
    if not _compat.is_concrete(x) or math.prod(x.shape) == 0:
        return
    ok = x > 0
    if upper is not None:
        ok = ok & (x <= upper)
    if not bool(xp.all(ok)):
        rng = "> 0" if upper is None else f"in (0, {upper:g}]"
        msg = f"`{name}` must be {rng} for every head (NaN is not), got {short_values(x)}"
        raise ValueError(msg)


def short_values(x: Array) -> str:
    """The values of a small array for an error message (a description of a large one)."""
    if math.prod(x.shape) > 16:
        return _checks.show(x)
    try:
        return repr(np.asarray(x).tolist())
    except Exception:  # pragma: no cover - devices that refuse a host copy
        return f"an array of shape {tuple(x.shape)}"


def mask_future(bias: Array, q: int, k: int, off: int, ctx: Context) -> Array:
    """Set ``-inf`` where the key lies after the query (``j > i + off``)."""
    xp = ctx.xp
    future = rel_matrix(q, k, off, ctx, _compat.default_dtype(ctx.xp, ctx.device, "integral")) > 0
    return xp.where(future, -math.inf, bias)
