"""Accurate ``sin(p * w)`` and ``cos(p * w)`` for every backend.

The naive float32 evaluation rounds the angle ``p * w`` to float32 before
taking the sine: the angle then carries an absolute error of up to
``|p * w| * 2**-24``, about 2.4e-4 at p = 4096 and 4e-2 at p = 10**6.  posenc
avoids that error in three ways:

* **ranges** (``positions`` given as an int n, or ``start .. start+n-1``): the
  positions are split ``p = start + q*B + r`` with ``B`` a power of two near
  ``sqrt(n)``.  The sines and cosines of the few coarse angles
  ``(start + q*B) * w`` and fine angles ``r * w`` are computed on the host in
  float64 (they depend only on Python arguments, and are cached), moved to
  the device in the working dtype, and combined there with the angle-addition
  formulas ``sin(a+b) = sin a cos b + cos a sin b``.  The table itself is
  then a handful of float32 multiply-adds per element, with an error of a few
  float32 ulp at every position.
* **arrays on devices with float64**: the angle is formed and reduced in
  float64 and the result cast.
* **arrays on devices without float64** (JAX without x64, Apple MPS): the
  integer part of ``|p|`` is split into four base-256 digits whose angles come
  from small float64-accurate host tables (gathered with ``take``), the
  fractional part's angle (below ``w``) is computed directly in float32, and
  the five terms are combined with the angle-addition formulas.  The error
  stays below 5e-7 for ``|p| < 2**32``; larger magnitudes give NaN rows
  rather than silently wrong ones.

Frequencies are always host float64 NumPy arrays: they depend only on
arguments such as ``dim``, ``base`` and a RoPE scaling.

Extreme magnitudes never overflow: frequencies are used with magnitudes of
at most ``MAX_FREQUENCY`` (2**900) and array positions of at most
``MAX_POSITION`` (2**64), so every intermediate of the float64 angle
stays finite; on devices without float64 the frequencies of the fractional
part are limited to the float32 range.  Angles at such magnitudes are not
resolved by float64 anyway (one ulp of 2**64 is 4096): the rows are finite,
not meaningful.

Finished tables of ranges (:func:`range_table`, behind ``sinusoidal(n, ...)``
and ``add_sinusoidal``) are produced directly in their layout as
``U[q] * X[r] + V[q] * Y[r]`` (see the comment above :func:`range_table`), by
the portable Array API path, by a NumPy fast path that writes into one
preallocated output in cache-sized steps (also used for torch CPU tensors,
through their NumPy view, and for each chunk of a Dask table), and are
cached per namespace, device and dtype (:mod:`posenc._cache`).  All paths
perform the same floating-point operations, so they agree bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _cache, _compat, _kernels
from ._compat import Array, Context

__all__ = ["Freqs", "as_freqs", "sincos", "sincos_range", "host_sincos", "range_table", "cast"]

_DIGIT = 256
_LEVELS = 4

#: largest frequency magnitude used in an angle (larger ones are clipped):
#: with |p| <= MAX_POSITION every product and split of reduced_angle is finite
MAX_FREQUENCY = 2.0**900
#: largest position magnitude of array positions used in a float64 angle
MAX_POSITION = 2.0**64
_F32_MAX = float(np.finfo(np.float32).max)


@dataclass(frozen=True)
class Freqs:
    """Host float64 frequencies as a hashable constant.

    The frequencies depend only on Python arguments (``dim``, ``base``, a
    scaling), so they travel through a call as their float64 bytes: a value
    that torch's tracer treats as a constant and that keys the host caches.
    Magnitudes are clipped to :data:`MAX_FREQUENCY`.

    Attributes
    ----------
    key : bytes
        The float64 frequencies, native byte order.
    m : int
        How many there are.
    top : float
        The largest magnitude (0.0 when there are none).
    """

    key: bytes
    m: int
    top: float

    @staticmethod
    def from_array(values: Any) -> Freqs:
        """Freqs of a host array (eager code and host functions only)."""
        f = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
        top = float(np.max(np.abs(f))) if f.size else 0.0
        if not top <= MAX_FREQUENCY:
            f = np.clip(f, -MAX_FREQUENCY, MAX_FREQUENCY)
            top = float(np.max(np.abs(f)))
        return Freqs(f.tobytes(), int(f.size), top)

    @property
    def array(self) -> np.ndarray:
        """The frequencies as a read-only float64 NumPy array (host code only)."""
        return np.frombuffer(self.key, dtype=np.float64)


def as_freqs(freqs: Any) -> Freqs:
    """``freqs`` as :class:`Freqs` (a host array is converted)."""
    return freqs if isinstance(freqs, Freqs) else Freqs.from_array(freqs)


def _two_pi_parts() -> tuple[float, float, float]:
    """2*pi as C1 + C2 + C3: C1 and C2 with 20 significant bits (so ``k * C1``
    and ``k * C2`` are exact for ``|k| < 2**33``), C3 the float64 rest."""
    from decimal import Decimal, localcontext

    # a local context: the importing thread's decimal settings stay as they were
    with localcontext() as dec:
        dec.prec = 60
        two_pi = Decimal("6.283185307179586476925286766559005768394338798750211641949889")
        c1 = math.ldexp(math.floor(math.ldexp(float(two_pi), 17)), -17)
        c2 = math.ldexp(math.floor(math.ldexp(float(two_pi - Decimal(c1)), 37)), -37)
        c3 = float(two_pi - Decimal(c1) - Decimal(c2))
    return c1, c2, c3


_C1, _C2, _C3 = _two_pi_parts()
_INV_TWO_PI = 1.0 / (2.0 * math.pi)
_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitter for float64


def reduced_angle(p: Array, w: Array, xp: Any) -> Array:
    """``p * w`` reduced to about ``[-pi, pi]``, accurate to ~1e-16 absolute.

    Float64 only.  The product is formed exactly as ``h + l`` (Dekker's
    two-product with Veltkamp splitting) and reduced with a three-part
    Cody-Waite representation of 2*pi, so the error does not grow with
    ``|p * w|`` (up to 2**33).  Works on NumPy arrays and on any array
    namespace ``xp`` (plain multiplies, adds and ``round``).
    """
    h = p * w
    t = p * _SPLIT
    ph = t - (t - p)
    pl = p - ph
    t = w * _SPLIT
    wh = t - (t - w)
    wl = w - wh
    lo = ((ph * wh - h) + ph * wl + pl * wh) + pl * wl
    k = xp.round(h * _INV_TWO_PI)
    return (((h - k * _C1) - k * _C2) + lo) - k * _C3


def cast(x: Array, dtype: Any, xp: Any) -> Array:
    """``xp.astype`` that does not copy when the dtype already matches."""
    if x.dtype == dtype:
        return x
    return xp.astype(x, dtype)


def _block(n: int) -> int:
    """Power-of-two block size near sqrt(n)."""
    if n <= 1:
        return 1
    return 1 << math.ceil(math.log2(n) / 2)


@_compat.host_constant
def _range_tables(start: int, nq: int, block: int, freqs_key: bytes) -> tuple[np.ndarray, ...]:
    """Host float64 sin/cos of the coarse angles ``(start + q*block) * w`` and
    the fine angles ``r * w`` (cached, read-only)."""
    key = ("range", start, nq, block, freqs_key)
    got = _cache.HOST.get(key)
    if got is not None:
        return got
    w = np.frombuffer(freqs_key, dtype=np.float64)[None, :]
    # coarse positions start + q*block (exact integers in float64, |p| < 2**53)
    # and fine positions r, reduced in one pass
    p = np.concatenate([start + np.arange(nq, dtype=np.float64) * block, np.arange(block, dtype=np.float64)])
    a = reduced_angle(p[:, None], w, np)
    s, c = np.sin(a), np.cos(a)
    got = _cache.readonly(s[:nq], c[:nq], s[nq:], c[nq:])
    _cache.HOST.put(key, got, sum(a.nbytes for a in got))
    return got


@_compat.host_constant
def _digit_tables(freqs_key: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sin and cos of ``k * 256**level * w`` (levels, 256, m), and the
    frequencies clipped to the float32 range (cached, read-only)."""
    key = ("digits", freqs_key)
    got = _cache.HOST.get(key)
    if got is not None:
        return got
    w = np.frombuffer(freqs_key, dtype=np.float64)
    k = np.arange(_DIGIT, dtype=np.float64)
    scale = np.float64(_DIGIT) ** np.arange(_LEVELS, dtype=np.float64)
    ang = reduced_angle(k[None, :, None] * scale[:, None, None], w[None, None, :], np)  # (levels, 256, m)
    got = _cache.readonly(np.sin(ang), np.cos(ang), np.clip(w, -_F32_MAX, _F32_MAX))
    _cache.HOST.put(key, got, sum(a.nbytes for a in got))
    return got


@_compat.host_constant
def _turns(freqs_key: bytes) -> np.ndarray:
    """The frequencies in turns per position, ``w / (2 pi)`` (float64, read-only)."""
    key = ("turns", freqs_key)
    got = _cache.HOST.get(key)
    if got is None:
        (got,) = _cache.readonly(np.frombuffer(freqs_key, dtype=np.float64) * _INV_TWO_PI)  # owns its memory
        _cache.HOST.put(key, got, got.nbytes)
    return got


@_compat.host_constant
def _turns_values(freqs_key: bytes) -> tuple[float, ...]:
    """:func:`_turns` as Python floats (a constant torch.export keeps)."""
    return tuple(_turns(freqs_key).tolist())


def laid_out_turns(freqs_key: bytes, layout: str) -> np.ndarray:
    """:func:`_turns` laid out as a RoPE table's columns: ``[v, v]``
    (``"half"``) or each value twice (``"interleaved"``), float64."""
    v = _turns(freqs_key)
    return np.concatenate([v, v]) if layout == "half" else np.repeat(v, 2)


@_compat.host_constant
def _host_freqs(freqs_key: bytes) -> np.ndarray:
    # a copy: torch's tracer takes only arrays that own their memory as constants
    return np.frombuffer(freqs_key, dtype=np.float64).copy()


def _range_split(n: int) -> tuple[int, int]:
    """``(block, nq)``: the positions ``start .. start+n-1`` are
    ``start + q*block + r`` with ``0 <= q < nq`` and ``0 <= r < block``."""
    block = _block(n)
    return block, (-(-n // block) if n else 0)


def sincos_range(start: int, n: int, freqs: Freqs | np.ndarray, ctx: Context) -> tuple[Array, Array]:
    """``(sin, cos)`` of ``p * freqs`` for ``p = start .. start+n-1``, shape (n, m).

    ``n`` may be a traced length (a torch ``SymInt``): then the positions are
    an ``arange`` and take the array path.
    """
    xp = ctx.xp
    freqs = as_freqs(freqs)
    m = freqs.m
    if _compat.compiling() or _compat.is_symbolic(n) or _compat.is_symbolic(start):
        # torch's tracer cannot tell a traced length from an int: the array
        # path, whose constants do not depend on it (no recompile per length)
        p = xp.arange(n, device=ctx.device)
        return sincos(p + start if not (isinstance(start, int) and start == 0) else p, freqs, ctx)
    start, n = int(start), int(n)
    block, nq = _range_split(n)
    if n == 0 or m == 0:
        z = _zeros((n, m), ctx.work, ctx)
        return z, z
    kind = _compat.namespace_kind(xp)
    if kind == "dask":
        return _dask_sincos_range(start, n, freqs, ctx)
    if kind == "torch" and _kernels.torch_on_cpu(ctx):
        # torch CPU: the same operations in NumPy (single-threaded: torch's
        # intra-op threads cost more than they save on tables this small)
        s, c = _numpy_sincos(start, n, freqs.key, 0, n, _compat.numpy_dtype(ctx.work))
        return _kernels.torch_from_numpy(s), _kernels.torch_from_numpy(c)
    sq, cq, sr, cr = (_compat.from_host(t, ctx) for t in _range_tables(start, nq, block, freqs.key))
    sq, cq = sq[:, None, :], cq[:, None, :]
    sr, cr = sr[None, ...], cr[None, ...]
    s = sq * cr + cq * sr
    c = cq * cr - sq * sr
    s = xp.reshape(s, (nq * block, m))
    c = xp.reshape(c, (nq * block, m))
    if nq * block != n:
        s, c = s[:n, ...], c[:n, ...]
    return s, c


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
# the NumPy / torch-CPU kernel (posenc._kernels.numpy_table) and the Dask
# blocks -- evaluates exactly these operations in the same order, so they
# agree bit for bit.


def _pair(a: np.ndarray, b: np.ndarray, layout: str) -> np.ndarray:
    if layout == "interleaved":
        return np.stack([a, b], axis=-1).reshape(a.shape[0], 2 * a.shape[1])
    return np.concatenate([a, b], axis=-1)


@_compat.host_constant
def _pair_tables(start: int, n: int, freqs_key: bytes, layout: str, dtype: str) -> tuple[int, tuple[np.ndarray, ...]]:
    """``block`` and the host tables ``U, V, X, Y`` in NumPy ``dtype`` (a
    name; cached, read-only)."""
    dtype = np.dtype(dtype)
    block, nq = _range_split(n)
    key = ("pairs", start, nq, block, freqs_key, layout, dtype.str)
    got = _cache.HOST.get(key)
    if got is None:
        sq, cq, sr, cr = _range_tables(start, nq, block, freqs_key)
        got = tuple(
            np.ascontiguousarray(_pair(a, b, layout), dtype=dtype)
            for a, b in ((sq, cq), (cq, sq), (cr, cr), (sr, -sr))
        )
        _cache.readonly(*got)
        _cache.HOST.put(key, got, sum(a.nbytes for a in got))
    return block, got


def _zeros(shape: tuple[int, ...], dtype: Any, ctx: Context) -> Array:
    return ctx.xp.zeros(shape, dtype=dtype, device=ctx.device)


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
    fast: bool = True,
) -> Array:
    """The ``(n, dim)`` sin/cos table of positions ``start .. start+n-1`` in ``ctx.dtype``.

    ``layout`` is ``"interleaved"`` (sin, cos, sin, cos, ...) or ``"concat"``
    (all sines, then all cosines); for odd ``dim`` the last column is zero.

    * ``cache``: finished tables of eager backends are kept in
      :data:`posenc._cache.TABLES`, keyed by every argument plus namespace,
      device and dtype.  With ``share=True`` (tables returned to users) they
      are handed out through :func:`posenc._cache.share`: a read-only NumPy
      view, the JAX array itself, a copy elsewhere (torch, CuPy, strict).
      NumPy tables are read-only even on the first call (the result does not
      depend on the state of the cache).  ``share=False`` is for callers that
      only read the table (``x + table``) and never hand it out.
    * ``fast``: the NumPy fast path on NumPy and torch CPU (``False`` forces
      the portable path; the tests compare the two).
    * Dask: a lazy array chunked along the rows (chunk size from Dask's
      ``array.chunk-size`` setting); each chunk is built by the NumPy fast
      path when the graph is computed.  Never cached.
    * torch's compiler tracing, and a traced length ``n`` or ``start``
      (``SymInt``): the array path of :func:`sincos` on an ``arange``, whose
      constants do not depend on the length (new lengths do not recompile;
      inside the tracer a traced length looks like an int).  Its values are
      within posenc's bound of the truth, like the range path's, but not
      bit-identical to them.
    """
    xp = ctx.xp
    freqs = as_freqs(freqs)
    dim = int(dim)
    if _compat.compiling() or _compat.is_symbolic(n) or _compat.is_symbolic(start):
        s, c = sincos_range(start, n, freqs, ctx)
        return assemble(s, c, dim, layout, ctx)
    start, n = int(start), int(n)
    m = freqs.m
    if n == 0 or m == 0:
        return _zeros((n, dim), ctx.dtype, ctx)
    fkey = freqs.key
    backend = _compat.namespace_kind(xp)
    if backend == "dask":
        return _dask_table(start, n, fkey, dim, layout, ctx)
    key = None
    if cache and _cache.TABLES.max_bytes > 0:
        try:
            dev = _cache.device_key(ctx, numpy=backend == "numpy")
            key = ("table", start, n, fkey, dim, layout, xp, dev, ctx.dtype, fast)
            hash(key)
        except Exception:  # pragma: no cover - unhashable exotic device
            key = None
        if key is not None:
            got = _cache.TABLES.get(key)
            if got is not None:
                table, kind = got
                return _cache.share(table, kind, xp) if share else table
    table, kind = None, None
    if fast and ctx.dtype == ctx.work:
        if backend == "numpy":
            table, kind = _numpy_table(start, n, fkey, dim, layout, np.dtype(ctx.dtype)), "numpy"
        elif backend == "torch":
            cached = key is not None and _cache.TABLES.fits(n * dim * _compat.numpy_dtype(ctx.dtype).itemsize)

            def fill(dtype: np.dtype, out: np.ndarray, lo: int) -> None:
                _numpy_table(start, n, fkey, dim, layout, dtype, lo=lo, rows=out.shape[0], out=out)

            table, kind = _kernels.torch_cpu_table(fill, (n, dim), ctx, cached=cached), "torch"
    if table is None:
        table = _portable_table(start, n, fkey, m, dim, layout, ctx)
        kind = {"numpy": "numpy", "torch": "torch", "jax": "immutable"}.get(backend, "copy")
    if kind == "numpy":
        _cache.readonly(table)
    if (
        key is not None
        and _compat.is_concrete(table)
        and _cache.TABLES.put(key, (table, kind), _cache.nbytes_of(table, xp))
    ):
        # the cache holds it now: hand out what cannot change the cached one
        return _cache.share(table, kind, xp) if share else table
    return table


def assemble(s: Array, c: Array, dim: int, layout: str, ctx: Context) -> Array:
    """Lay compact ``sin``/``cos`` (..., m) out as a (..., dim) table in
    ``ctx.dtype``: ``"interleaved"`` or ``"concat"``; a zero last column for
    odd ``dim``."""
    xp = ctx.xp
    lead = tuple(s.shape[:-1])
    m = int(s.shape[-1])
    if m == 0:  # dim == 1: the single zero column
        return _zeros(lead + (dim,), ctx.dtype, ctx)
    if layout == "interleaved":
        out = xp.reshape(xp.stack([s, c], axis=-1), lead + (2 * m,))
    else:
        out = xp.concat([s, c], axis=-1)
    if dim % 2:
        out = xp.concat([out, _zeros(lead + (1,), out.dtype, ctx)], axis=-1)
    return cast(out, ctx.dtype, xp)


def _portable_table(start: int, n: int, fkey: bytes, m: int, dim: int, layout: str, ctx: Context) -> Array:
    """Array API path: two broadcast products and a sum, then a reshape."""
    xp = ctx.xp
    block, tabs = _pair_tables(start, n, fkey, layout, "float64")
    u, v, x, y = (_compat.from_host(t, ctx) for t in tabs)
    nq = int(u.shape[0])
    t = u[:, None, :] * x[None, ...] + v[:, None, :] * y[None, ...]
    t = xp.reshape(t, (nq * block, 2 * m))
    if nq * block != n:
        t = t[:n, ...]
    if dim % 2:
        t = xp.concat([t, _zeros((n, 1), ctx.work, ctx)], axis=-1)
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
) -> np.ndarray:
    """Rows ``lo .. lo+rows-1`` of the table of ``start .. start+n-1``: the
    NumPy kernel (:func:`posenc._kernels.numpy_table`) on the cached host
    tables of the whole range, so a slice of rows is bit-identical to the
    same rows of the full table."""
    block, tables = _pair_tables(start, n, fkey, layout, np.dtype(dtype).str)
    return _kernels.numpy_table(block, tables, n, dim, dtype, lo=lo, rows=rows, out=out)


def _dask_table(start: int, n: int, fkey: bytes, dim: int, layout: str, ctx: Context) -> Array:
    """Lazy Dask table, chunked along the rows; nothing is computed here."""
    dtype = np.dtype(ctx.dtype)
    work = np.dtype(ctx.work)
    block, _ = _range_split(n)

    def rows(lo: int, k: int) -> np.ndarray:
        t = _numpy_table(start, n, fkey, dim, layout, work, lo=lo, rows=k)
        return t if work == dtype else t.astype(dtype)

    row_bytes = dim * max(dtype.itemsize, work.itemsize)
    return _kernels.dask_by_rows(
        rows, n, (dim,), block, row_bytes, dtype, "posenc-table-", (start, n, fkey, dim, layout, dtype.str)
    )


def _numpy_sincos(
    start: int, n: int, fkey: bytes, lo: int, rows: int, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``lo .. lo+rows-1`` of ``sincos_range(start, n)``: the NumPy
    kernel (:func:`posenc._kernels.numpy_sincos`) on the cached host tables."""
    block, nq = _range_split(n)
    return _kernels.numpy_sincos(block, _range_tables(start, nq, block, fkey), lo, rows, dtype)


def _dask_sincos_range(start: int, n: int, freqs: Freqs, ctx: Context) -> tuple[Array, Array]:
    """Lazy Dask ``(sin, cos)``, chunked along the rows (see :func:`_dask_table`)."""
    work = np.dtype(ctx.work)
    m = freqs.m
    fkey = freqs.key
    block, _ = _range_split(n)

    def rows(lo: int, k: int) -> np.ndarray:
        return np.stack(_numpy_sincos(start, n, fkey, lo, k, work), axis=-1)

    sc = _kernels.dask_by_rows(
        rows, n, (m, 2), block, 2 * m * work.itemsize, work, "posenc-sincos-", (start, n, fkey, work.str)
    )
    return sc[..., 0], sc[..., 1]


def sincos(positions: int | Array, freqs: Freqs | np.ndarray, ctx: Context) -> tuple[Array, Array]:
    """``(sin, cos)`` of ``positions[..., None] * freqs`` in ``ctx.work`` dtype.

    ``positions`` is a Python int n (meaning 0..n-1), a traced length (torch
    ``SymInt``) or a validated real array.  Array positions take one of three
    paths, by the output dtype and the device:

    * float64 output: the angle reduced in float64 with an exact product
      (:func:`reduced_angle`), about 1e-16;
    * float32 (or narrower) output on a device with float64: the angle in
      turns, ``t = p * w / (2 pi)`` in float64, its fractional part
      ``t - round(t)`` times 2 pi rounded once to float32, and float32 sin and
      cos of that reduced angle (:func:`_sincos_turns`);
    * no float64 on the device: base-256 digit tables (:func:`_sincos_digits`).
    """
    freqs = as_freqs(freqs)
    if isinstance(positions, int):
        return sincos_range(0, positions, freqs, ctx)
    if _compat.is_symbolic(positions):
        positions = ctx.xp.arange(positions, device=ctx.device)
    if not ctx.float64:
        return _sincos_digits(positions, freqs, ctx)
    if ctx.work == ctx.xp.float64:
        return _sincos_f64(positions, freqs, ctx)
    return _sincos_turns(positions, freqs, ctx)


@_compat.host_constant
def host_sincos(p: float, freqs: Freqs | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sin, cos)`` of ``p * freqs`` for one host position ``p``, float64 NumPy.

    The float64 array path of :func:`sincos` on the host (same clipping of
    ``p`` and ``freqs``): for positions given as Python numbers, whose angles
    do not depend on the device's precision.
    """
    p = min(max(float(p), -MAX_POSITION), MAX_POSITION)
    a = reduced_angle(np.float64(p), as_freqs(freqs).array, np)
    return np.sin(a), np.cos(a)


def _sincos_f64(p: Array, freqs: Freqs, ctx: Context) -> tuple[Array, Array]:
    xp = ctx.xp
    w = _compat.from_host(_host_freqs(freqs.key), ctx, xp.float64)
    # |p| <= 2**64 keeps every intermediate of reduced_angle finite
    p = xp.clip(cast(p, xp.float64, xp), min=-MAX_POSITION, max=MAX_POSITION)
    a = reduced_angle(p[..., None], w, xp)
    return cast(xp.sin(a), ctx.work, xp), cast(xp.cos(a), ctx.work, xp)


_TWO_PI = 2.0 * math.pi


def _sincos_turns(p: Array, freqs: Freqs, ctx: Context) -> tuple[Array, Array]:
    """float32 ``(sin, cos)`` of array positions on a device with float64.

    With ``v = w / (2 pi)`` (host float64), ``t = p * v`` is the angle in
    turns, rounded once in float64 (absolute error ``|t| * 2**-53``); its
    fractional part ``f = t - round(t)`` in [-1/2, 1/2] is exact, and
    ``a = float32(2 pi f)`` in [-pi, pi] carries at most half a float32 ulp
    of pi (1.2e-7).  float32 sin and cos of ``a`` add about one ulp: the
    result is within 2.5e-7 of the truth while ``|p * w| <= 2**30``
    (every int32 position at RoPE's and the sinusoid's largest frequency,
    1), and the error then grows as ``|p * w| * 2**-52``.  Four float64
    elementwise operations and float32 transcendentals: faster than sin and
    cos in float64, which are not vectorised on every CPU.
    """
    xp = ctx.xp
    if _compat.compiling():
        # Python numbers: torch.export captures a traced NumPy constant as a
        # fake tensor
        v = xp.asarray(_turns_values(freqs.key), dtype=xp.float64, device=ctx.device)
    else:
        v = _compat.constant(("turns", freqs.key), lambda: _turns(freqs.key), ctx, xp.float64)
    kind = _kernel_kind(p, ctx)
    if kind is not None and _compat.is_integer_dtype(xp, p.dtype):
        s, c = _kernels.TURNS[kind](p, v)
        return cast(s, ctx.work, xp), cast(c, ctx.work, xp)
    p64 = cast(p, xp.float64, xp)
    if not _compat.is_integer_dtype(xp, p.dtype):
        # |p| <= 2**64 keeps every product finite (frequencies <= 2**900);
        # integer positions are below 2**64 already
        bound = _compat.constant("max-position", lambda: np.asarray(MAX_POSITION), ctx, xp.float64)
        p64 = xp.maximum(xp.minimum(p64, bound), -bound)
    t = p64[..., None] * v
    a = xp.astype((t - xp.round(t)) * _TWO_PI, ctx.float32)
    return cast(xp.sin(a), ctx.work, xp), cast(xp.cos(a), ctx.work, xp)


def _kernel_kind(p: Array, ctx: Context) -> str | None:
    """Which kernel of :mod:`posenc._kernels` may compute ``_sincos_turns``
    eagerly: NumPy arrays and torch tensors that need no autograd, outside
    torch's tracer."""
    kind = _compat.eager_kind(p)
    if kind == "torch" and p.requires_grad:
        return None
    return kind


#: elements of a table from which gathering rows of an exact range table pays
#: off against computing every angle (below: one pass of the array path)
GATHER_MIN = 1 << 16


def gathered_table(p: Array, freqs: Freqs, dim: int, layout: str, ctx: Context) -> Array | None:
    """The table of integer array positions as rows of the exact range table
    that spans them, or None where that does not pay off.

    Eager NumPy and torch (no autograd) only, tables of at least
    :data:`GATHER_MIN` elements, positions whose span ``max - min + 1`` is
    at most twice their number (a dense set: ``arange``, a window of a
    cache, batches of nearby sequences).  Two reductions over the positions
    (not over the table) decide it; the rows are those of
    :func:`range_table` (exact, cached), gathered with one ``take``, or, for
    consecutive torch positions (an ``arange`` of any shape, checked in one
    pass over the positions), the range table itself as
    ``sinusoidal(n)`` hands it out.
    """
    kind = _kernel_kind(p, ctx)
    if (
        kind is None
        or not _compat.is_integer_dtype(ctx.xp, p.dtype)
        or ctx.dtype != ctx.work
        or not _compat.is_concrete(p)
    ):
        return None
    size = math.prod(p.shape)
    if size * dim < GATHER_MIN:
        return None
    lo, hi = int(p.min()), int(p.max())
    span = hi - lo + 1
    if span > 2 * size or max(abs(lo), abs(hi)) > 2**53:
        return None
    if kind == "torch" and span == size and _kernels.is_consecutive_torch(p):
        # an arange in any shape: the range table itself, handed out as
        # sinusoidal(n)'s is (torch's copy-on-write clone: no copy is made)
        return range_table(lo, span, freqs, dim, layout, ctx).reshape(tuple(p.shape) + (dim,))
    table = range_table(lo, span, freqs, dim, layout, ctx, share=False)
    return _kernels.TAKE_ROWS[kind](table, p, lo)


def _sincos_digits(p: Array, freqs: Freqs, ctx: Context) -> tuple[Array, Array]:
    xp = ctx.xp
    f32 = xp.float32
    m = freqs.m
    shape = tuple(p.shape)
    flat = xp.reshape(p, (-1,))
    idx_t = _compat.default_dtype(ctx.xp, ctx.device, "indexing")
    ts, tc, w32host = _digit_tables(freqs.key)
    neg = flat < 0
    frac = None
    if _compat.is_integer_dtype(xp, flat.dtype):
        bits = _bits(xp, flat.dtype)
        if bits < 32:
            # 8- and 16-bit integers hold neither the divisors 256**level nor
            # abs(-128): their digits are taken in int32
            flat = xp.astype(flat, xp.int32)
        a = xp.abs(flat)
        digits = []
        for level in range(_LEVELS):
            digits.append(xp.astype((a // _DIGIT**level) % _DIGIT, idx_t))
        # |p| >= 2**32, and abs() of the most negative int64 (which stays negative)
        overflow = ((a // _DIGIT**_LEVELS) > 0) | (a < 0) if bits > 32 else None
    else:
        x = xp.abs(cast(flat, f32, xp))
        k = xp.floor(x)
        frac = x - k
        digits = []
        for level in range(_LEVELS):
            hi = xp.floor(k / float(_DIGIT ** (level + 1)))
            lo = xp.floor(k / float(_DIGIT**level))
            digits.append(xp.astype(lo - hi * float(_DIGIT), idx_t))
        overflow = k >= float(_DIGIT**_LEVELS)
    s = c = None
    for level in range(_LEVELS):
        ls = _compat.from_host(ts[level], ctx, f32)
        lc = _compat.from_host(tc[level], ctx, f32)
        ds = xp.take(ls, digits[level], axis=0)
        dc = xp.take(lc, digits[level], axis=0)
        if s is None:
            s, c = ds, dc
        else:
            s, c = s * dc + c * ds, c * dc - s * ds
    if frac is not None:
        # frequencies beyond float32 determine no angle of a float32 fraction
        w32 = _compat.from_host(w32host, ctx, f32)
        fa = frac[:, None] * w32
        fs, fc = xp.sin(fa), xp.cos(fa)
        s, c = s * fc + c * fs, c * fc - s * fs
    s = xp.where(neg[:, None], -s, s)
    if overflow is not None:
        nan = xp.asarray(float("nan"), dtype=f32, device=ctx.device)
        s = xp.where(overflow[:, None], nan, s)
        c = xp.where(overflow[:, None], nan, c)
    s = xp.reshape(s, shape + (m,))
    c = xp.reshape(c, shape + (m,))
    return cast(s, ctx.work, xp), cast(c, ctx.work, xp)


def _bits(xp: Any, dtype: Any) -> int:
    try:
        return int(xp.iinfo(dtype).bits)
    except Exception:  # pragma: no cover
        return 64
