"""Finished tables in their layouts, from the angles of :mod:`posenc._angles`.

* :func:`assemble`: compact ``sin`` / ``cos`` (..., m) laid out as a
  sinusoidal table (``"interleaved"`` or ``"concat"``, a zero last column for
  odd ``dim``); :func:`lay_out`: a compact RoPE table (..., m) laid out as
  (..., 2m) (``"half"`` or ``"interleaved"``);
* :func:`range_table`: the table of a range of positions, produced directly
  in its layout as ``U[q] * X[r] + V[q] * Y[r]`` (see the comment below), by
  the portable Array API path, a kernel (NumPy, torch CPU through its memory,
  each chunk of a Dask table) or lazily on Dask, and cached per namespace,
  device and dtype (:data:`posenc._cache.TABLES`).  All paths perform the
  same floating-point operations, so they agree bit for bit;
* :func:`gathered_table`: the table of dense integer array positions as rows
  of the exact range table that spans them.

Imports: :mod:`posenc._angles` and below.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _cache, _compat, _kernels
from ._angles import (
    EXACT_F32,
    Freqs,
    as_freqs,
    cast,
    check_range_span,
    dense_span,
    lane_turns,
    range_split,
    range_tables,
    sincos_range,
    zeros,
)
from ._compat import Array, Context, has_values, is_concrete, is_integer_dtype
from ._trace import compiling, host_constant, is_symbolic

__all__ = [
    "assemble",
    "lay_out",
    "rope_tables",
    "range_table",
    "rope_range",
    "gathered_table",
    "gathered_rope",
    "gather_rows",
]


def assemble(s: Array, c: Array, dim: int, layout: str, ctx: Context) -> Array:
    """Lay compact ``sin``/``cos`` (..., m) out as a (..., dim) table in
    ``ctx.dtype``: ``"interleaved"`` or ``"concat"``; a zero last column for
    odd ``dim``."""
    xp = ctx.xp
    lead = tuple(s.shape[:-1])
    m = int(s.shape[-1])
    if m == 0:  # dim == 1: the single zero column
        return zeros(lead + (dim,), ctx.dtype, ctx)
    if layout == "interleaved":
        out = xp.reshape(xp.stack([s, c], axis=-1), lead + (2 * m,))
    else:
        out = xp.concat([s, c], axis=-1)
    if dim % 2:
        out = xp.concat([out, zeros(lead + (1,), out.dtype, ctx)], axis=-1)
    return out if out.dtype == ctx.dtype else xp.astype(out, ctx.dtype)


def rope_tables(c: Array, s: Array, layout: str, ctx: Context) -> tuple[Array, Array]:
    """Compact RoPE tables ``cos``, ``sin`` (..., m) laid out (:func:`lay_out`)
    in ``ctx.dtype``."""
    xp = ctx.xp
    c, s = lay_out(c, layout, xp), lay_out(s, layout, xp)
    if c.dtype != ctx.dtype:  # (posenc._angles.cast, without a call into it on the hot path)
        c, s = xp.astype(c, ctx.dtype), xp.astype(s, ctx.dtype)
    return c, s


def lay_out(c: Array, layout: str, xp: Any) -> Array:
    """A compact RoPE table (..., m) laid out as (..., 2m): ``[c, c]``
    (``"half"``) or each value twice (``"interleaved"``)."""
    if layout == "half":
        return xp.concat([c, c], axis=-1)
    lead = tuple(c.shape[:-1])
    return xp.reshape(xp.stack([c, c], axis=-1), lead + (2 * int(c.shape[-1]),))


# --------------------------------------------------------------------------
# finished tables of a range of positions
# --------------------------------------------------------------------------
# The table of ``p = start + q*block + r`` in a given layout is
#
#     T[q*block + r, :] = U[q, :] * X[r, :] + V[q, :] * Y[r, :]
#
# with, per frequency j (interleaved: columns 2j, 2j+1; concat: j, m+j),
#
#     U = (sin_q, cos_q)   V = (cos_q, sin_q)   X = (cos_r, cos_r)   Y = (sin_r, -sin_r)
#
# which is the angle-addition formula sin(a+b) = sin a cos b + cos a sin b,
# cos(a+b) = cos a cos b - sin a sin b, written so that the output is produced
# in its final layout by two products and one sum of contiguous rows (no
# stack, no strided writes).  Every path -- the portable Array API path below,
# the NumPy / torch-CPU kernel (posenc._kernels.tables.numpy_table) and the Dask
# blocks -- evaluates exactly these operations in the same order, so they
# agree bit for bit.


def _pair(a: np.ndarray, b: np.ndarray, layout: str) -> np.ndarray:
    if layout == "interleaved":
        return np.stack([a, b], axis=-1).reshape(a.shape[0], 2 * a.shape[1])
    return np.concatenate([a, b], axis=-1)


def _factors(sq: np.ndarray, cq: np.ndarray, sr: np.ndarray, cr: np.ndarray, layout: str) -> tuple[np.ndarray, ...]:
    """``U, V, X, Y`` of a layout: a sinusoidal table (``"interleaved"``,
    ``"concat"``: sines and cosines), or one of a RoPE table's pair
    (``"cos:half"``, ``"sin:interleaved"``, ...: the cosines or the sines,
    each value twice as the layout lays it out)."""
    if ":" not in layout:
        return tuple(_pair(a, b, layout) for a, b in ((sq, cq), (cq, sq), (cr, cr), (sr, -sr)))
    which, pairs = layout.split(":")
    u, v, x, y = (cq, sq, cr, -sr) if which == "cos" else (sq, cq, cr, sr)
    return tuple(_pair(t, t, pairs) for t in (u, v, x, y))


@host_constant
def _pair_tables(
    start: int, n: int, freqs_key: bytes, layout: str, dtype: str, factor: float = 1.0, fine: bool | None = None
) -> tuple[int, tuple[np.ndarray, ...]]:
    """``block`` and the host tables ``U, V, X, Y`` in NumPy ``dtype`` (a
    name; cached, read-only); ``U`` and ``V`` times ``factor`` (a RoPE
    scaling's attention factor) when it is not 1.  ``fine``: host values
    for a float64 table (default: ``dtype`` is float64; see
    :func:`posenc._turns.range_tables`)."""
    np_dtype = np.dtype(dtype)
    fine = np_dtype.itemsize >= 8 if fine is None else fine
    block, nq = range_split(n)
    key = ("pairs", start, nq, block, freqs_key, layout, np_dtype.str, factor, fine)
    got = _cache.HOST.get(key)
    if got is None:
        sq, cq, sr, cr = range_tables(start, nq, block, freqs_key, fine)
        u, v, x, y = _factors(sq, cq, sr, cr, layout)
        if factor != 1.0:
            u, v = u * factor, v * factor
        got = tuple(np.ascontiguousarray(t, dtype=np_dtype) for t in (u, v, x, y))
        _cache.readonly(*got)
        _cache.HOST.put(key, got, sum(a.nbytes for a in got))
    return block, got


def range_table(
    start: int,
    n: int,
    freqs: Freqs | np.ndarray,
    dim: int,
    layout: str,
    ctx: Context,
    *,
    share: bool = True,
    cache: bool = True,
    factor: float = 1.0,
) -> Array:
    """The ``(n, dim)`` sin/cos table of positions ``start .. start+n-1`` in ``ctx.dtype``.

    ``layout`` is ``"interleaved"`` (sin, cos, sin, cos, ...) or ``"concat"``
    (all sines, then all cosines); for odd ``dim`` the last column is zero.
    RoPE's tables are ``"cos:half"``, ``"sin:half"``, ``"cos:interleaved"``,
    ``"sin:interleaved"`` (``dim`` = twice the frequencies), times
    ``factor`` (the attention factor of a scaling).

    * ``cache``: finished tables of eager backends are kept in
      :data:`posenc._cache.TABLES`, keyed by every argument plus namespace,
      device and dtype.  With ``share=True`` (tables returned to users) they
      are handed out through :func:`posenc._cache.share`, in the mode
      :func:`posenc._kernels.handout` picks: a read-only NumPy copy, the JAX
      array itself, a copy elsewhere (torch, CuPy, strict).  NumPy tables are
      read-only even on the first call (the result does not depend on the
      state of the cache).  ``share=False`` is for callers that only read the
      table (``x + table``) and never hand it out.
    * The rows are written by a kernel of :func:`posenc._kernels.range_table`
      where there is one (NumPy; torch CPU), else by the portable path (the
      same operations; :func:`posenc._kernels.disabled` forces it).
    * On a device with a one-launch kernel
      (:func:`posenc._kernels.device_table`: torch with Triton, CuPy), a
      table handed out (``share=True``) is written afresh on every call and
      not kept: a kept one would be handed out as a copy, which costs about
      what the kernel does (one H200, 2**20 x 512 float32: the kernel 0.82
      ms, a copy 1.05 ms), and a first call would pay both.  Tables only
      read (``share=False``) are kept.
    * Dask: a lazy array chunked along the rows (chunk size from Dask's
      ``array.chunk-size`` setting); each chunk is built by the NumPy kernel
      when the graph is computed.  Never cached.
    * torch's compiler tracing, and a traced length ``n`` or ``start``
      (``SymInt``): the array path of :func:`posenc._angles.sincos` on an
      ``arange``, whose constants do not depend on the length (new lengths
      do not recompile; inside the tracer a traced length looks like an
      int).  Its values are within posenc's bound of the truth, like the
      range path's, but not bit-identical to them.
    """
    xp = ctx.xp
    freqs = as_freqs(freqs)
    dim = int(dim)
    # (SymInts exist only while torch traces: ints are answered without a call)
    if ctx.traced or (type(n) is not int and is_symbolic(n)) or (type(start) is not int and is_symbolic(start)):
        s, c = sincos_range(start, n, freqs, ctx)
        if ":" in layout:  # one of RoPE's tables
            t = lay_out(c if layout.startswith("cos") else s, layout.split(":")[1], xp)
            t = t * factor if factor != 1.0 else t
            return cast(t, ctx.dtype, xp)
        return assemble(s, c, dim, layout, ctx)
    start, n = int(start), int(n)
    check_range_span(start, n)
    m = freqs.m
    if n == 0 or m == 0:
        return zeros((n, dim), ctx.dtype, ctx)
    fkey = freqs.key
    lazy = _kernels.lazy(ctx)
    if lazy is not None:
        return _lazy_table(lazy, start, n, fkey, dim, layout, ctx, factor)
    key = None
    if cache and _cache.TABLES.max_bytes > 0:
        try:
            key = ("table", start, n, fkey, dim, layout, factor, xp, _cache.device_key(ctx), ctx.dtype)
            hash(key)
        except Exception:  # pragma: no cover - unhashable exotic device
            key = None
        if key is not None:
            got = _cache.TABLES.get(key)
            if got is not None:
                table, mode = got
                # (a cached JAX table closed over by a jax.jit trace: placed on the device asked for)
                return ctx.place(_cache.share(table, mode, xp) if share else table)
    table = None
    device = _kernels.device_table(ctx, layout) if max(abs(start), abs(start + n - 1)) < EXACT_F32 else None
    if device is not None:  # one launch on a device (Triton)
        table = device(n, start, lane_turns(_kernels.TORCH, freqs, ctx), dim, factor)
        if share:  # handed out: the caller owns it, nothing kept (see above)
            return table
    kernel = None if table is not None else _kernels.range_table(ctx)
    if kernel is not None:
        def fill(dtype: np.dtype, out: np.ndarray, lo: int, torch_memory: bool = False) -> None:
            _numpy_table(
                start, n, fkey, dim, layout, dtype, lo=lo, rows=out.shape[0], out=out, factor=factor,
                complex_rows=torch_memory and layout == "interleaved",
            )  # fmt: skip

        table = kernel(fill, (n, dim), ctx)
    if table is None:
        table = _portable_table(start, n, fkey, m, dim, layout, ctx, factor)
    mode = _kernels.handout(ctx)
    if mode is _cache.Share.COPY_READONLY:
        _cache.readonly(table)
    if key is not None and has_values(table) and _cache.TABLES.put(key, (table, mode), _cache.nbytes_of(table, xp)):
        # the cache holds it now: hand out what cannot change the cached one
        return _cache.share(table, mode, xp) if share else table
    return table


def kept_on_devices(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A public function of Python arguments alone (a grid's shape, a
    length: no arrays) whose tables are kept, on a device, in
    :data:`posenc._cache.TABLES` like a range table's and handed out as a
    copy: one launch per call where the formula takes a launch per
    operation (twenty and more for a small grid's tables).

    Only where :func:`posenc._kernels.device_table` has a kernel (torch on
    CUDA, CuPy; CPU tensors under :func:`posenc._kernels.as_device`):
    eager, hashable arguments; anything else calls ``fn``.  The first call
    of a set of arguments runs ``fn`` (its checks and errors); the result
    is what ``fn`` returned, its bits and its aliasing (a fresh array)."""

    @functools.wraps(fn)
    def kept(*args: Any, **kwargs: Any) -> Any:
        xp, device = kwargs.get("xp"), kwargs.get("device")
        if compiling() or (xp is None and device is None) or not _kernels.off_the_host(xp, device):
            return fn(*args, **kwargs)  # traced, or host tables
        try:
            ctx = _compat.resolve(None, xp=xp, device=device, dtype=kwargs.get("dtype"))
        except (TypeError, ValueError):  # fn says what is wrong
            return fn(*args, **kwargs)
        if ctx.traced or _kernels.device_table(ctx, "interleaved") is None:
            return fn(*args, **kwargs)
        try:
            named = tuple((k, v if k in _CONTEXT_ARGS else _typed(v)) for k, v in sorted(kwargs.items()))
            key = (kept, _typed(args), named, _cache.device_key(ctx), ctx.dtype)
            got = _cache.TABLES.get(key)
        except TypeError:  # arguments that are not plain Python values (lists, arrays)
            return fn(*args, **kwargs)
        if got is None:
            value = fn(*args, **kwargs)
            arrays = value if isinstance(value, tuple) else (value,)
            size = sum(int(a.nbytes) for a in arrays)  # (integer tables too)
            mode = _kernels.handout(ctx)
            if not all(has_values(a) for a in arrays) or not _cache.TABLES.put(key, (value, mode), size):
                return value
            got = (value, mode)
        value, mode = got
        if isinstance(value, tuple):
            return tuple(_cache.share(a, mode, ctx.xp) for a in value)
        return _cache.share(value, mode, ctx.xp)

    return kept


#: the keyword arguments that name the namespace, device and dtype (keyed as given)
_CONTEXT_ARGS = frozenset({"xp", "device", "dtype"})
#: the Python values a kept call's arguments may be
_PLAIN = frozenset({int, float, bool, str, type(None)})


def _typed(value: Any) -> Any:
    """``value`` with the type of every item (``4``, ``4.0`` and ``True``
    hash alike but are checked differently); TypeError for anything but
    plain Python values and tuples of them."""
    tp = type(value)
    if tp in _PLAIN:
        return (tp, value)
    if tp is tuple:
        return (tuple, tuple(_typed(v) for v in value))
    msg = "not a plain Python value"
    raise TypeError(msg)


def _portable_table(
    start: int, n: int, fkey: bytes, m: int, dim: int, layout: str, ctx: Context, factor: float = 1.0
) -> Array:
    """Array API path: two broadcast products and a sum, then a reshape."""
    xp = ctx.xp
    block, tabs = _pair_tables(start, n, fkey, layout, "float64", factor, ctx.dtype == xp.float64)
    u, v, x, y = (ctx.from_host(t) for t in tabs)
    nq = int(u.shape[0])
    t = u[:, None, :] * x[None, ...] + v[:, None, :] * y[None, ...]
    t = xp.reshape(t, (nq * block, 2 * m))
    if nq * block != n:
        t = t[:n, ...]
    if dim % 2:
        t = xp.concat([t, zeros((n, 1), ctx.work, ctx)], axis=-1)
    return cast(t, ctx.dtype, xp)


# ------------------------------------------------------------ NumPy rows, Dask chunks
def _numpy_table(
    start: int,
    n: int,
    fkey: bytes,
    dim: int,
    layout: str,
    dtype: np.dtype,
    *,
    lo: int = 0,
    rows: int | None = None,
    out: np.ndarray | None = None,
    factor: float = 1.0,
    complex_rows: bool = False,
) -> np.ndarray:
    """Rows ``lo .. lo+rows-1`` of the table of ``start .. start+n-1``: the
    NumPy kernel (:func:`posenc._kernels.tables.numpy_table`) on the cached host
    tables of the whole range, so a slice of rows is bit-identical to the
    same rows of the full table.  ``complex_rows``: an ``"interleaved"``
    table in torch CPU memory ``out``, written as complex products
    (:func:`posenc._kernels.tables.fill_rows_complex`) where its rows allow."""
    kernels = _kernels.tables
    if complex_rows and out is not None and kernels.fits_complex_rows(out, dim):
        block, (e, f) = _complex_tables(start, n, fkey, np.dtype(dtype).str, factor)
        kernels.fill_rows_complex(out, lo, block, e, f)
        return out
    block, tables = _pair_tables(start, n, fkey, layout, np.dtype(dtype).str, factor)
    return kernels.numpy_table(block, tables, n, dim, dtype, lo=lo, rows=rows, out=out)


def _complex_tables(start: int, n: int, fkey: bytes, dtype: str, factor: float) -> tuple[int, tuple[Any, Any]]:
    """``block`` and the factors ``E``, ``F`` of an ``"interleaved"`` table's
    complex rows (:func:`posenc._kernels.tables.complex_factors`; cached, for
    that kernel only): the values of :func:`_pair_tables`' ``U``, ``X``,
    ``Y`` without building ``V`` and the pairs."""
    np_dtype = np.dtype(dtype)
    block, nq = range_split(n)
    key = ("complex", start, nq, block, fkey, np_dtype.str, factor)
    got = _cache.HOST.get(key)
    if got is None:
        sq, cq, sr, cr = range_tables(start, nq, block, fkey, np_dtype.itemsize >= 8)
        got = _kernels.tables.complex_factors(sq, cq, sr, cr, factor, np_dtype)
        _cache.HOST.put(key, got, sum(t.nbytes for t in got))
    return block, got


def _lazy_table(
    lazy: Any, start: int, n: int, fkey: bytes, dim: int, layout: str, ctx: Context, factor: float = 1.0
) -> Array:
    """Lazy table (Dask), chunked along the rows; nothing is computed here."""
    dtype = np.dtype(ctx.dtype)
    work = np.dtype(ctx.work)
    block, _ = range_split(n)

    def rows(lo: int, k: int) -> np.ndarray:
        t = _numpy_table(start, n, fkey, dim, layout, work, lo=lo, rows=k, factor=factor)
        return t if work == dtype else t.astype(dtype)

    row_bytes = dim * max(dtype.itemsize, work.itemsize)
    token = (start, n, fkey, dim, layout, dtype.str, factor)
    return lazy(rows, n, (dim,), block, row_bytes, dtype, "posenc-table-", token)


# --------------------------------------------------------------------------
# rows of a range table for arrays of positions
# --------------------------------------------------------------------------
def gathered_table(
    p: Array, rows: _kernels.Gather, freqs: Freqs, dim: int, layout: str, ctx: Context
) -> Array | None:
    """The table of integer array positions as rows of the exact range table
    that spans them, or None where that does not pay off.

    ``rows`` is the kernel :func:`gather_rows` chose for positions like
    these (eager NumPy and torch, tables of at least
    :data:`posenc._kernels.GATHER_MIN` elements); concrete positions whose span ``max - min + 1`` is
    at most twice their number (a dense set: ``arange``, a window of a
    cache, batches of nearby sequences).  Two reductions over the positions
    (not over the table) decide it; the rows are those of
    :func:`range_table` (exact, cached), gathered with one ``take``, or, for
    consecutive positions (torch: an ``arange`` of any shape, checked in one
    pass over the positions), the range table itself as
    ``sinusoidal(n)`` hands it out.
    """
    dense = dense_span(p)
    if dense is None:
        return None
    lo, span = dense
    if rows.consecutive is not None and span == math.prod(p.shape) and rows.consecutive(p):
        # an arange in any shape: the range table itself, handed out as
        # sinusoidal(n)'s is (torch's copy-on-write clone: no copy is made)
        return ctx.xp.reshape(range_table(lo, span, freqs, dim, layout, ctx), tuple(p.shape) + (dim,))
    table = range_table(lo, span, freqs, dim, layout, ctx, share=False)
    return rows.take(table, p, lo)


def rope_range(
    start: int, n: int, freqs: Freqs, layout: str, factor: float, ctx: Context, *, share: bool = True
) -> tuple[Array, Array]:
    """RoPE's ``cos`` and ``sin`` tables ``(n, 2m)`` of the positions ``start
    .. start+n-1`` in ``layout`` (``"half"`` or ``"interleaved"``), times
    ``factor``: two :func:`range_table` tables (exact, made in their layout,
    cached)."""
    dim = 2 * freqs.m
    if n and freqs.m and _kernels.device_table(ctx, "pair:" + layout) is not None:
        # on a device, both tables in one launch (one cache entry)
        pair = range_table(start, n, freqs, dim, "pair:" + layout, ctx, share=share, factor=factor)
        return pair[0, ...], pair[1, ...]
    c = range_table(start, n, freqs, dim, "cos:" + layout, ctx, share=share, factor=factor)
    s = range_table(start, n, freqs, dim, "sin:" + layout, ctx, share=share, factor=factor)
    return c, s


def gathered_rope(
    p: Array, rows: _kernels.Gather, freqs: Freqs, layout: str, factor: float, ctx: Context,
    extremes: tuple[int, int] | None = None,
) -> tuple[Array, Array] | None:
    """RoPE's tables of dense integer array positions as rows of
    :func:`rope_range` (as :func:`gathered_table` does for a sinusoidal
    table; ``extremes`` the positions' ``(min, max)`` where the range check
    read them), or None where that does not pay off."""
    dense = dense_span(p, extremes)
    if dense is None:
        return None
    lo, span = dense
    shape = tuple(p.shape) + (2 * freqs.m,)
    if rows.consecutive is not None and span == math.prod(p.shape) and rows.consecutive(p):
        c, s = rope_range(lo, span, freqs, layout, factor, ctx)
        return ctx.xp.reshape(c, shape), ctx.xp.reshape(s, shape)
    c, s = rope_range(lo, span, freqs, layout, factor, ctx, share=False)
    return rows.take_pair(s, c, p, lo)[::-1]


def gather_rows(p: Array, dim: int, ctx: Context) -> _kernels.Gather | None:
    """How :func:`gathered_table` gathers the rows of tables of ``dim``
    columns for integer positions like ``p`` (type, dtype, device and shape
    decide it), or None: output in the working dtype and a kernel of
    :func:`posenc._kernels.gather`."""
    if ctx.dtype != ctx.work or not is_integer_dtype(ctx.xp, p.dtype) or not is_concrete(p):
        return None
    return _kernels.gather(p, ctx, math.prod(p.shape) * dim)
