"""Accurate ``sin(p * w)`` and ``cos(p * w)`` for every backend.

The naive float32 evaluation rounds the angle ``p * w`` to float32 before
taking the sine: the angle then carries an absolute error of up to
``|p * w| * 2**-24``, about 2.4e-4 at p = 4096 and 4e-2 at p = 10**6.  posenc
avoids that error by reducing the angle exactly, in *turns*: with
``v = w / (2 pi)`` known to about 106 bits on the host (a float64 pair
``vh + vl``), the fractional part of ``p * v`` is computed without a rounding
that grows with ``p``, and only the reduced angle ``2 pi frac(p * v)`` in
``[-pi, pi]`` reaches a sine.  Four paths:

* **ranges** (``positions`` given as an int n, or ``start .. start+n-1``): the
  positions are split ``p = start + q*B + r`` with ``B`` a power of two near
  ``sqrt(n)``.  The sines and cosines of the few coarse positions
  ``start + q*B`` and fine positions ``r`` are computed on the host in
  float64 (they depend only on Python arguments, and are cached), moved to
  the device in the working dtype, and combined there with the angle-addition
  formulas ``sin(a+b) = sin a cos b + cos a sin b``: two float32 products and
  a sum per element, no float32 sine at all.
* **float32 tables of arrays on a device with float64**: ``v`` is split on
  the host into ``v1`` (21 significant bits) and ``v2 = v - v1``, so that
  ``p * v1`` is exact for every integer ``|p| < 2**32``: ``f = p*v1 -
  round(p*v1)`` (exact), ``f += p*v2``, ``f -= round(f)``, all in float64.
  The angle ``a = 2 pi f`` is then split into float32 ``ah + al`` and
  ``sin a = sin(ah) + cos(ah) * al`` (``cos`` alike): the float32 sine and
  cosine only ever see ``ah``, and the rounding of the angle to float32 no
  longer reaches the table (:func:`_sincos_turns`).
* **float64 tables**: ``p * vh`` is formed exactly as a pair (Dekker's
  two-product with Veltkamp splitting), reduced, and ``p * vl`` added: the
  reduced angle is right to about 2**-53 for every integer ``|p| < 2**53``
  and float ``|p * w| < 2**50`` (:func:`_sincos_f64`).
* **devices without float64** (JAX without x64, Apple MPS): integer
  positions are reduced in 32-bit integer arithmetic, ``p * V`` modulo
  2**64 with ``V`` the frequencies in turns as 64-bit fixed point, in
  wrapping int32 words (no gather: under ``jax.jit`` one fused loop), the
  top word split exactly into float32 parts (:func:`_sincos_fixed`).  Real
  positions: the integer part of ``|p|`` is split into four base-256 digits
  whose angles in turns come from host tables as float32 pairs (hi + lo,
  gathered with ``take``), the fractional part's turns are formed from
  12-bit pieces, and the turns are summed with exact float32 two-sums and
  reduced after each step; the angle is then split as above
  (:func:`_sincos_digits`).  ``|p| >= 2**32`` gives NaN rows rather than
  silently wrong ones.

No path relies on a fused multiply-add or its absence except the float64
tables (Veltkamp's split): the float32 products whose exactness matters are
exact by the widths of their factors.

The error bound of float32 tables, for every integer ``|p| < 2**31`` and
every float ``|p| < 2**22`` (``|w| <= 1``), on paper: with ``u = 2**-24``
(half an ulp of 1 is ``u / 2``) and ``k`` the worst ulp error of the float32
``sin`` / ``cos`` of the backend (NumPy's own accuracy test allows 2 ulp of
the correctly rounded value, i.e. ``k <= 2.5``; torch's SLEEF kernels are
documented at 1.0 and 3.5 ulp), the array paths are within ``(k + 1/2) u``
plus ``1e-9`` (the reduction and the split of the angle), at most
``4 u = 2.4e-7`` for ``k = 3.5``; the range path uses no float32 sine and is
within ``3.5 u = 2.1e-7`` (rounding of its four host factors, two products and
a sum).  Both are below the documented 2.5e-7; the test suite and the
documentation build measure it over a sweep of positions
(``benchmarks/accuracy.py``).

Frequencies are always host float64 NumPy arrays: they depend only on
arguments such as ``dim``, ``base`` and a RoPE scaling.

Extreme magnitudes never overflow: frequencies are used with magnitudes of
at most ``MAX_FREQUENCY`` (2**900) and array positions of at most
``MAX_POSITION`` (2**64), so every intermediate of the float64 angle
stays finite; on devices without float64 the frequencies of the fractional
part are limited to the float32 range.  Positions beyond the exact range of
their path (:data:`EXACT_F32`, :data:`EXACT_F64` for integers,
:func:`real_limit` for reals) are refused where posenc reads them and give
NaN rows elsewhere: never the rows of another position.

The host constants of these paths (the frequencies in turns, their
fixed-point and digit forms, the sines and cosines of a range's coarse and
fine positions) are made in :mod:`posenc._turns`.  Finished tables in their
layouts (tables of ranges, cached, and rows of them gathered for arrays of
positions) are built from these angles by :mod:`posenc._tables`.  Which kernel computes what is decided by
:mod:`posenc._kernels` (its choosers), never here; what the engine needs to
know about a call (backend, tracing, float64) it reads from the
:class:`~posenc._compat.Context`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _kernels
from ._compat import Array, Context, default_dtype, int_range, is_concrete, is_integer_dtype
from ._kernels.eft import two_sum
from ._trace import graph_constant, is_symbolic
from ._turns import (
    DIGIT,
    INV_HI,
    INV_LO,
    LEVELS,
    MAX_POSITION,
    TWO_PI,
    TWO_PI_DIGITS,
    Freqs,
    as_freqs,
    digit_tables,
    fixed_limbs,
    freqs_array,
    host_sincos,
    kernel_turns,
    laid_out_fixed,
    max_position,
    range_tables,
    range_tables_host,
    reduce_turns,
    turn_arrays,
    turns_of,
)

__all__ = [
    "Angles",
    "cast",
    "zeros",
    "sincos",
    "sincos_range",
    "check_range_span",
    "check_magnitude",
    "integer_limit",
    "EXACT_F64",
    "EXACT_F32",
    "traced_length",
    "prepare",
    "dense_span",
    "table_kernel",
    "rope_kernel",
    "lane_turns",
    "finish_f32",
    "finish_pair_f32",
    "turns_to_angle_f32",
    "two_sum",
    # the host constants the engine is built on (posenc._turns), for its callers
    "INV_HI",
    "INV_LO",
    "MAX_POSITION",
    "TWO_PI",
    "Freqs",
    "as_freqs",
    "freqs_array",
    "host_sincos",
    "kernel_turns",
    "laid_out_fixed",
    "range_split",
    "range_tables",
    "turns_of",
]

#: 2 pi as float32 parts for the digit path: a 12-bit head (its products with
#: 12-bit numbers are exact in float32), the float32 rest and the float32 rest of that
def _two_pi_f32() -> tuple[float, float, float, float]:
    from decimal import Decimal, localcontext

    with localcontext() as dec:
        dec.prec = 60
        two_pi = Decimal(TWO_PI_DIGITS)
        pa = math.ldexp(round(math.ldexp(float(two_pi), 9)), -9)  # 3217 / 512
        pb = float(np.float32(float(two_pi - Decimal(pa))))
        pc = float(np.float32(float(two_pi - Decimal(pa) - Decimal(pb))))
    return pa, pb, pc, float(np.float32(2.0 * math.pi))


#: (the arithmetic below writes these four as literals, like every float of
#: traced code: see _TRACED_TWO_PI; a test checks that they are these values)
_PA32, _PB32, _PC32, _TWO_PI32 = _two_pi_f32()

#: 2 pi as the traced arithmetic writes it: a literal equal to TWO_PI.  torch's
#: compiler lifts a float it reads from a module (or a default, or a dict) into
#: a graph input, a 0-d host tensor built on every call (about 10 us each on a
#: CPU, and a host tensor among a CUDA graph's inputs); a literal in the code is
#: a constant of the graph.  ``test_no_float_graph_inputs`` checks both.
_TRACED_TWO_PI = 6.283185307179586
#: float32 constants of the digit path: 2**12 and its inverse (splits by
#: truncation), written as literals in the arithmetic
_SCALE12, _INV12 = 4096.0, 1.0 / 4096.0


def cast(x: Array, dtype: Any, xp: Any) -> Array:
    """``xp.astype`` that does not copy when the dtype already matches."""
    if x.dtype == dtype:
        return x
    return xp.astype(x, dtype)


def zeros(shape: tuple[int, ...], dtype: Any, ctx: Context) -> Array:
    """Zeros of ``shape`` and ``dtype`` on ``ctx``'s device (under ``jax.jit`` too)."""
    return ctx.place(ctx.xp.zeros(shape, dtype=dtype, device=ctx.device))


# --------------------------------------------------------------------------
# ranges of positions
# --------------------------------------------------------------------------
def _block(n: int) -> int:
    """Power-of-two block size near sqrt(n)."""
    if n <= 1:
        return 1
    return 1 << math.ceil(math.log2(n) / 2)


def range_split(n: int) -> tuple[int, int]:
    """``(block, nq)``: the positions ``start .. start+n-1`` are
    ``start + q*block + r`` with ``0 <= q < nq`` and ``0 <= r < block``."""
    block = _block(n)
    return block, (-(-n // block) if n else 0)


def traced_length(n: Any) -> bool:
    """Whether a length (or start) of a range is a traced integer (a torch
    ``SymInt``); Python ints are answered without a call."""
    return type(n) is not int and is_symbolic(n)


#: integer positions must stay below these magnitudes: float64 tables (and
#: every range table) are exact for ``|p| < 2**53``; float32 tables of
#: integer arrays for ``|p| < 2**32`` (the exact split ``p * v1``, and the
#: fixed-point and digit paths of devices without float64).  Beyond, a position in host
#: memory is a ValueError; a traced, lazy or device one gives a NaN row.
EXACT_F64 = 2**53
EXACT_F32 = 2**32


def check_range_span(start: int, n: int, name: str = "offset") -> None:
    """Refuse a range ``start .. start+n-1`` beyond :data:`EXACT_F64`."""
    far = max(start, start + n - 1, key=abs)
    if n > 0 and abs(far) >= EXACT_F64:
        msg = f"`{name}` puts positions at {far}: posenc's tables are exact for integer |p| < 2**53 only"
        raise ValueError(msg)


def integer_limit(p: Array, ctx: Context) -> int | None:
    """The magnitude integer positions like ``p`` must stay below, or None
    where their dtype cannot reach it."""
    xp = ctx.xp
    if not ctx.float64 or not is_integer_dtype(xp, p.dtype):
        return None  # (the paths of devices without float64 give NaN rows from 2**32 on)
    limit = EXACT_F64 if ctx.work == xp.float64 else EXACT_F32
    info = xp.iinfo(p.dtype)
    return limit if max(-int(info.min), int(info.max) + 1) > limit else None


#: real positions must stay below these magnitudes: float64 tables reduce
#: them exactly up to ``2**64`` (:data:`posenc._turns.MAX_POSITION`, where
#: they would be clipped); float32 tables take ``p * v1`` with ``v1`` of 21
#: bits, exact for positions of at most 32 significant bits: float64
#: positions stay below ``2**32``, as integer ones (exact there when they
#: are integers; a fraction beyond the documented ``2**22`` rounds the
#: product by up to ``|p v| 2**-53`` turns), and narrower ones below
#: ``2**50`` (the frequencies' missing bits, ``|p v| 2**-74`` turns, 6e-8
#: rad there).  Beyond, a position in host memory is a ValueError; a traced,
#: lazy or device one gives a NaN row (they were silently wrong: 1e-4 rad at
#: ``2**40`` in float32 tables of float64 positions, 0.79 at ``3e30``).
REAL_F64 = 2**64
REAL_F32_OF_F64 = EXACT_F32
REAL_F32 = 2**50


def real_limit(p: Array, ctx: Context) -> int:
    """The magnitude real positions like ``p`` must stay below on a device
    with float64 (:data:`REAL_F64`, :data:`REAL_F32_OF_F64`,
    :data:`REAL_F32`)."""
    xp = ctx.xp
    if ctx.work == xp.float64:
        return REAL_F64
    return REAL_F32_OF_F64 if p.dtype == xp.float64 else REAL_F32


#: float64 positions with a fraction are exact in float32 tables below this
#: magnitude (:data:`REAL_F32_OF_F64`; integers up to that limit)
FRACTION_F32_OF_F64 = 2**22


def check_fractions(p: Array, extremes: tuple[float, float], name: str, ctx: Context) -> None:
    """Refuse float64 positions in host memory (their ``(min, max)``
    read: ``extremes``) for float32 tables where one of magnitude from
    :data:`FRACTION_F32_OF_F64` has a fraction: ``p * v1`` rounds there (up
    to 4.8e-7 rad below 2**32).  Integers there are exact; positions this
    large are rare, so the second pass runs only for them."""
    lo, hi = extremes
    if max(-lo, hi) < FRACTION_F32_OF_F64:
        return
    xp = ctx.xp
    big = xp.abs(p) >= FRACTION_F32_OF_F64
    frac = big & (p != xp.round(p))
    if bool(xp.any(frac)):
        bad = float(p[frac][0])
        msg = (
            f"{name} holds the position {bad!r}: float32 tables of float64 positions with a fraction are exact "
            f"for |p| < 2**22 only (integers up to 2**32): use float64 tables (exact for |p| < 2**64)"
        )
        raise ValueError(msg)


def _range_text(limit: int, real: bool) -> str:
    """What a position beyond ``limit`` is beyond, for a refusal (``real``:
    of real positions)."""
    if not real and limit == EXACT_F64:
        return "float64 tables are exact for |p| < 2**53 only"
    if not real:
        return (
            "float32 tables of integer position arrays are exact for |p| < 2**32 only: use float64 tables (exact for "
            "|p| < 2**53)"
        )
    if limit == REAL_F64:
        return "float64 tables of real positions are exact for |p| < 2**64 only"
    if limit == REAL_F32_OF_F64:
        return (
            "float32 tables of float64 positions are exact for |p| < 2**32 only: use float64 tables (exact for "
            "|p| < 2**64)"
        )
    return "float32 tables of real positions are exact for |p| < 2**50 only: use float64 tables (exact for |p| < 2**64)"


def check_magnitude(
    p: Array,
    limit: int,
    read: Callable[[Any], tuple[int, int] | None] | None,
    name: str = "`positions`",
    *,
    unsigned: bool = False,
    real: bool = False,
) -> tuple[Array | None, tuple[int, int] | None]:
    """Positions ``p`` in host memory (NumPy, torch CPU; ``read`` is
    :func:`posenc._kernels.extremes` of such arrays): raise where ``|p| >=
    limit``, naming the arguments ``name`` that made ``p``, else ``(None,
    (min, max))``.  Elsewhere (traced, lazy or device
    arrays, read without a round trip): ``(mask, None)``, the mask of the
    rows that must be NaN (``unsigned``: of ``p >= limit`` alone, as
    array-api-strict refuses to compare an unsigned array with ``-limit``;
    ``real``: real positions, for the refusal's words).
    The limits of integer positions are below ``2**63`` (Python ints, which
    every namespace compares with an int64 array exactly); that of real
    positions in float64 tables, ``2**64``, is compared as a float."""
    got = None if read is None else read(p)
    if got is None:
        lim = limit if limit < 2**63 else float(limit)
        return ((p >= lim) if unsigned else (p >= lim) | (p <= -lim)), None
    lo, hi = got
    if hi >= limit or lo <= -limit:
        bad = hi if hi >= limit else lo
        msg = f"{name} holds the position {bad}: {_range_text(limit, real)}"
        raise ValueError(msg)
    return None, got


def sincos_range(start: int, n: int, freqs: Freqs | np.ndarray, ctx: Context) -> tuple[Array, Array]:
    """``(sin, cos)`` of ``p * freqs`` for ``p = start .. start+n-1``, shape (n, m).

    ``n`` (or ``start``) may be a traced length (a torch ``SymInt``): then,
    as for every call torch's compiler traces, the positions are an
    ``arange`` and take the array path, whose constants do not depend on the
    length (no recompile per length).  Otherwise the host tables of the
    coarse and fine angles are combined on the device (two products and a
    sum per element), by the portable path or a kernel of
    :func:`posenc._kernels.range_sincos` (the same operations; on Dask a
    lazy array chunked along the rows).
    """
    xp = ctx.xp
    if not isinstance(freqs, Freqs):
        freqs = as_freqs(freqs)
    m = freqs.m
    if ctx.traced or traced_length(n) or traced_length(start):
        p = xp.arange(n, device=ctx.device)
        return sincos(p + start if not (isinstance(start, int) and start == 0) else p, freqs, ctx)
    start, n = int(start), int(n)
    check_range_span(start, n)
    block, nq = range_split(n)
    if n == 0 or m == 0:
        z = zeros((n, m), ctx.work, ctx)
        return z, z
    fkey = freqs.key
    # (eager here: the host function itself; float64 host values of float64 tables' precision)
    tables = range_tables_host(start, nq, block, fkey, ctx.work == xp.float64)
    kernel = _kernels.range_sincos(ctx)
    if kernel is not None:
        return kernel(tables, block, n, (start, n, fkey), ctx)
    sq, cq, sr, cr = (ctx.from_host(t) for t in tables)
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
# arrays of positions
# --------------------------------------------------------------------------
def sincos(
    positions: int | Array, freqs: Freqs | np.ndarray, ctx: Context, name: str = "`positions`"
) -> tuple[Array, Array]:
    """``(sin, cos)`` of ``positions[..., None] * freqs`` in ``ctx.work`` dtype;
    ``name``: the argument that holds the positions, for the refusal of one
    beyond the exact range (:meth:`Angles.__call__`).

    ``positions`` is a Python int n (meaning 0..n-1), a traced length (torch
    ``SymInt``) or a validated real array.  Array positions take one of three
    paths, by the output dtype and the device (see the module docstring):

    * float64 output: the angle in turns reduced from an exact product
      (:func:`_sincos_f64`), about 1e-16;
    * float32 (or narrower) output on a device with float64: the turns
      reduced in float64 from the 21-bit split of the frequencies, the angle
      split into float32 ``ah + al`` (:func:`_sincos_turns`);
    * no float64 on the device: integer positions in 32-bit fixed point
      (:func:`_sincos_fixed`), real ones from base-256 digit tables of turns
      in float32 pairs (:func:`_sincos_digits`).
    """
    if not isinstance(freqs, Freqs):
        freqs = as_freqs(freqs)
    if isinstance(positions, int):
        return sincos_range(0, positions, freqs, ctx)
    if is_symbolic(positions):
        positions = ctx.xp.arange(positions, device=ctx.device)
    return prepare(positions, freqs, ctx)(positions, name)


def table_kernel(
    p: Array, freqs: Freqs, layout: str, ctx: Context
) -> tuple[_kernels.Lane, tuple[Array, ...]] | None:
    """The lane (:func:`posenc._kernels.table_turns`) and its turns for
    RoPE tables of the integer positions ``p`` computed in their ``layout``
    in one kernel pass (float32 work on a device with float64: the turns
    path, bit for bit the compact tables laid out), or None."""
    if not ctx.float64 or ctx.work != ctx.xp.float32 or not is_integer_dtype(ctx.xp, p.dtype):
        return None
    lane = _kernels.table_turns(p, ctx, 2 * freqs.m)
    return None if lane is None else (lane, lane_turns(lane, freqs, ctx, layout))


def rope_kernel(
    x: Array, p: Array, freqs: Freqs, layout: str, ctx: Context, size: int
) -> tuple[_kernels.Lane, tuple[Array, ...]] | None:
    """The lane (:func:`posenc._kernels.rope_step`) and its turns for rope's
    decode step: the one-pass tables of :func:`table_kernel`, then the small
    rotation of ``x`` (``size`` elements), or None."""
    if not ctx.float64 or ctx.work != ctx.xp.float32 or not is_integer_dtype(ctx.xp, p.dtype):
        return None
    lane = _kernels.rope_step(x, p, ctx, size=size, width=2 * freqs.m)
    return None if lane is None else (lane, lane_turns(lane, freqs, ctx, layout))


def lane_turns(lane: _kernels.Lane, freqs: Freqs, ctx: Context, layout: str | None = None) -> tuple[Array, ...]:
    """The turns a lane's kernels take: the host ``(v1, v2, V)`` (with ``V``
    laid out in a RoPE table's columns for ``layout``), or ``(v1, v2)`` in
    float64 on the device."""
    if lane.host:
        host = kernel_turns(freqs.key)
        return host if layout is None else host + (laid_out_fixed(freqs.key, layout),)
    return _device_turns(freqs, ctx, ("v1", "v2"))


@dataclass(slots=True)
class Angles:
    """How :func:`sincos` computes the angles of array positions of one type,
    dtype and device (:func:`prepare`): a plan of the hot paths keeps one, so
    a repeated call goes straight to the path (and the kernel) it needs.

    Call it with the positions: ``(sin, cos)`` in ``ctx.work``.
    """

    freqs: Freqs
    ctx: Context
    #: _sincos_f64, _sincos_turns, _sincos_fixed or _sincos_digits
    path: Callable[..., tuple[Array, Array]]
    integer: bool
    #: the turns of the kernels that compute on the host, ``(v1, v2, V)``,
    #: made when a kernel first needs them (V's exact rounding costs)
    host: tuple[np.ndarray, ...] | None
    #: the turns the path reads on the device, float64 (graph constants; none for the digits)
    dev: tuple[Array, ...]
    #: MAX_POSITION on the device (float positions are clipped to it), or None
    bound: Array | None
    #: how rows of a range's sin/cos are gathered for dense integer positions
    #: like these (:func:`posenc._kernels.gather`), or None
    rows: _kernels.Gather | None = None
    #: the magnitude integer positions must stay below (:func:`integer_limit`), or None
    limit: int | None = None
    #: how the (min, max) of such positions is read (:func:`posenc._kernels.extremes`), or None
    read: Callable[[Any], tuple[int, int] | None] | None = None
    #: a fused lane (:attr:`posenc._kernels.Lane.fused`: a device's one-launch
    #: kernels), which checks the positions itself, or None
    fused: _kernels.Lane | None = None
    #: the bound on |p| a fused lane's kernels check (NaN rows beyond):
    #: :attr:`limit` (an infinite real position is a NaN row too), None
    #: where nothing needs checking
    mask: float | None = None
    #: the positions' dtype is unsigned (no lower bound to check)
    unsigned: bool = False

    def __call__(self, p: Array, name: str = "`positions`") -> tuple[Array, Array]:
        """``(sin, cos)`` of the positions ``p``; ``name``: the arguments that
        made them, for the refusal of a position beyond :attr:`limit`."""
        lane = self.fused
        if lane is not None:  # one launch: the angles, laid out, NaN rows beyond the bound
            s, c = lane.turns(p, self.dev, 1.0, not self.integer, None, self.mask)
            work, xp = self.ctx.work, self.ctx.xp
            return cast(s, work, xp), cast(c, work, xp)
        bad = extremes = None
        if self.limit is not None:
            bad, extremes = check_magnitude(
                p, self.limit, self.read, name, unsigned=self.unsigned, real=not self.integer
            )
            if extremes is not None and not self.integer and self.limit == REAL_F32_OF_F64:
                check_fractions(p, extremes, name, self.ctx)
        if self.rows is not None and bad is None:
            got = _gathered_sincos(p, self, extremes)
            if got is not None:
                return got
        s, c = self.path(p, self)
        return (s, c) if bad is None else nan_rows(s, c, bad, self.ctx)

    def guard(self, p: Array) -> bool:
        """Whether a kernel lane (which computes without :meth:`__call__`) may
        take the integer positions ``p``: True within :attr:`limit`, a
        ValueError beyond it for positions in host memory, False where only
        :meth:`__call__` can mask the rows (device arrays)."""
        if self.limit is None or self.fused is not None:  # (a fused lane checks in its kernel)
            return True
        return check_magnitude(p, self.limit, self.read, unsigned=self.unsigned)[0] is None


def prepare(p: Array, freqs: Freqs, ctx: Context) -> Angles:
    """The :class:`Angles` of array positions like ``p`` (its dtype decides
    the path, never its values)."""
    integer = is_integer_dtype(ctx.xp, p.dtype)
    # dense integer positions (an arange, a window, position ids): rows of the
    # range path's exact sin/cos, no sine per element (decided per call)
    rows = _kernels.gather(p, ctx, math.prod(p.shape) * freqs.m) if integer and is_concrete(p) else None
    if not ctx.float64:
        path = _sincos_fixed if integer else _sincos_digits
        return Angles(freqs, ctx, path, integer, None, (), None, rows)
    f64 = ctx.xp.float64
    bound = None if integer else graph_constant(max_position, ctx=ctx, dtype=f64)
    limit = integer_limit(p, ctx) if integer else real_limit(p, ctx)
    read = None if limit is None or not is_concrete(p) else _kernels.extremes(p, ctx)
    unsigned = integer and limit is not None and int(ctx.xp.iinfo(p.dtype).min) == 0
    if ctx.work == f64:
        dev = _device_turns(freqs, ctx, ("vh", "vl", "vhh", "vhl"))
        return Angles(freqs, ctx, _sincos_f64, integer, None, dev, bound, rows, limit, read, unsigned=unsigned)
    lane = _kernels.turns(p, ctx)
    # (a host lane reads the host turns: the device copies are made if a call takes the portable path)
    dev = () if lane is not None and lane.host else _device_turns(freqs, ctx, ("v1", "v2"))
    if lane is not None and lane.fused:
        mask = None if limit is None else float(limit)
        return Angles(freqs, ctx, _sincos_turns, integer, None, dev, bound, None, limit, None, lane, mask, unsigned)
    return Angles(freqs, ctx, _sincos_turns, integer, None, dev, bound, rows, limit, read, unsigned=unsigned)


def nan_rows(s: Array, c: Array, bad: Array, ctx: Context) -> tuple[Array, Array]:
    """``s`` and ``c`` (shape ``bad.shape + (m,)``) with NaN rows where ``bad``."""
    nan = zeros((), s.dtype, ctx) + math.nan
    mask = bad[..., None]
    return ctx.xp.where(mask, nan, s), ctx.xp.where(mask, nan, c)


def dense_span(p: Array, extremes: tuple[int, int] | None = None) -> tuple[int, int] | None:
    """``(lo, span)`` where the concrete integer positions ``p`` (a gather
    kernel was chosen for them) are dense enough that rows of the range ``lo
    .. lo+span-1`` beat computing every angle: ``span = max - min + 1`` at
    most twice their number (an ``arange``, a window of a cache, batches of
    nearby sequences), and below :data:`EXACT_F64` (beyond, the array path
    says which position is out of range).  Two reductions over the positions
    decide it (none where ``extremes``, their ``(min, max)``, were read
    already); else None."""
    size = math.prod(p.shape)
    lo, hi = extremes if extremes is not None else int_range(None, p)
    span = hi - lo + 1
    if span > 2 * size or max(abs(lo), abs(hi)) >= EXACT_F64:
        return None
    return lo, span


def _gathered_sincos(p: Array, a: Angles, extremes: tuple[int, int] | None) -> tuple[Array, Array] | None:
    """:func:`sincos` of dense integer positions as rows of
    :func:`sincos_range` (two products and a sum per element, within the
    range path's bound), or None (:func:`dense_span`)."""
    dense = dense_span(p, extremes)
    if dense is None:
        return None
    lo, span = dense
    s, c = sincos_range(lo, span, a.freqs, a.ctx)
    rows = a.rows
    assert rows is not None
    if rows.consecutive is not None and span == math.prod(p.shape) and rows.consecutive(p):
        shape = tuple(p.shape) + (a.freqs.m,)  # an arange in any shape: the rows in order
        xp = a.ctx.xp
        return xp.reshape(s, shape), xp.reshape(c, shape)
    return rows.take_pair(s, c, p, lo)


def _device_turns(freqs: Freqs, ctx: Context, names: tuple[str, ...]) -> tuple[Array, ...]:
    """The :class:`Turns` arrays ``names`` on ``ctx``'s device in float64
    (graph constants: Python numbers while torch traces, device copies kept
    for eager NumPy and torch)."""
    stack = graph_constant(turn_arrays, freqs.key, names, ctx=ctx, dtype=ctx.xp.float64)
    return tuple(stack[i, ...] for i in range(len(names)))


def _dev_turns(a: Angles) -> tuple[Array, ...]:
    """``(v1, v2)`` on the device: ``a.dev``, made on first use where
    :func:`prepare` chose a host lane (which reads the host turns)."""
    if not a.dev:
        a.dev = _device_turns(a.freqs, a.ctx, ("v1", "v2"))
    return a.dev


def _clipped64(p: Array, a: Angles) -> Array:
    """Positions in float64; float positions clipped to ``|p| <= MAX_POSITION``
    (every product stays finite; integer positions are below 2**64 already)."""
    xp = a.ctx.xp
    p64 = cast(p, xp.float64, xp)
    if a.bound is not None:
        p64 = xp.maximum(xp.minimum(p64, a.bound), -a.bound)
    return p64


def _sincos_f64(p: Array, a: Angles) -> tuple[Array, Array]:
    """float64 ``(sin, cos)`` of array positions: :func:`reduce_turns`, then
    float64 sine and cosine of ``2 pi f``."""
    ctx = a.ctx
    xp = ctx.xp
    vh, vl, vhh, vhl = a.dev
    f = reduce_turns(_clipped64(p, a)[..., None], vh, vl, vhh, vhl, xp)
    angle = f * 6.283185307179586  # TWO_PI, a literal: see _TRACED_TWO_PI
    return cast(xp.sin(angle), ctx.work, xp), cast(xp.cos(angle), ctx.work, xp)


def finish_f32(a: Array, xp: Any) -> tuple[Array, Array]:
    """float32 ``(sin, cos)`` of float64 angles ``a`` in [-pi, pi], without
    rounding the angle: ``a = ah + al`` with ``ah = float32(a)`` and ``al`` the
    float32 rest (``|al| <= 2**-23``), and ``sin a = sin ah + cos ah * al``,
    ``cos a = cos ah - sin ah * al`` (the next terms are below ``al**2 / 2 =
    2**-47``).  Only ``ah`` reaches the float32 sine and cosine, whose error
    (a few ulp) is then the table's."""
    ah = xp.astype(a, xp.float32)
    al = xp.astype(a - xp.astype(ah, xp.float64), xp.float32)
    s, c = xp.sin(ah), xp.cos(ah)
    return s + c * al, c - s * al


def _sincos_turns(p: Array, a: Angles) -> tuple[Array, Array]:
    """float32 ``(sin, cos)`` of array positions on a device with float64.

    With ``v1`` the frequencies in turns rounded to 21 significant bits and
    ``v2`` the rest (:class:`Turns`), ``f = p*v1 - round(p*v1)`` is exact for
    integer ``|p| < 2**32``, ``f + p*v2`` adds an error of at most
    ``2**-53 * (1/2 + |p v2|)``, and a second rounding leaves the fractional
    part in [-1/2, 1/2]: the reduced angle ``2 pi f`` is right to about 1e-13
    for ``|p * w| <= 2**31`` (float positions: ``p * v1`` rounds by
    ``|p v| 2**-53``, 5e-10 at ``|p| = 2**22``, ``w = 1``).  :func:`finish_f32`
    takes the float32 sine and cosine without rounding the angle.  Seven
    float64 and six float32 elementwise operations.  The kernels of
    :func:`posenc._kernels.turns` compute it for NumPy arrays and torch
    tensors that need no autograd: torch's operations off the CPU (the same,
    bit for bit), NumPy's in cache-sized blocks on NumPy and torch CPU memory
    (the same for float positions; for integer ones an int64 fixed-point
    reduction, within an ulp of this path and within posenc's bound), and
    for tables of many torch CPU positions with angles up to ``2**21`` one
    float64 product and ``frac`` before the same finish
    (:func:`posenc._kernels.angles.sincos_f64_torch`: six torch passes on its
    threads and NumPy's sine and cosine, within the same bound).
    """
    ctx = a.ctx
    xp = ctx.xp
    lane = _kernels.turns(p, ctx)
    if lane is not None:
        if lane.host:
            turns = a.host
            if turns is None:  # (two threads may both make them: the same arrays)
                turns = a.host = kernel_turns(a.freqs.key, a.integer)
        else:
            turns = _dev_turns(a)
        s, c = lane.turns(p, turns, 1.0, not a.integer)
        return cast(s, ctx.work, xp), cast(c, ctx.work, xp)
    v1, v2 = _dev_turns(a)
    p64 = _clipped64(p, a)[..., None]
    f = p64 * v1
    f = (f - xp.round(f)) + p64 * v2
    f = f - xp.round(f)
    s, c = finish_f32(f * 6.283185307179586, xp)  # TWO_PI, a literal: see _TRACED_TWO_PI
    return cast(s, ctx.work, xp), cast(c, ctx.work, xp)


def turns_to_angle_f32(sh: Array, sl: Array, xp: Any) -> tuple[Array, Array]:
    """The angle ``2 pi (sh + sl)`` as a float32 pair ``a + a_lo`` (``|a_lo|
    <= 2**-23``), reduced to [-pi, pi], from turns given as a float32 pair
    (``sh + sl``, ``|sl| < 1``).  A 12-bit head of the turns times the 12-bit
    head of 2 pi is exact (widths, not a fused multiply-add), the rest is
    small: the pair is right to about 1e-10."""
    s, e = two_sum(sh, sl)
    s = s - xp.round(s)
    # literals (traced code lifts module floats into graph inputs): 2**12, 2**-12,
    # _PA32, _PB32, _PC32, _TWO_PI32
    sa = xp.floor(s * 4096.0) * 0.000244140625
    ah = 6.283203125 * sa
    al = (6.283203125 * (s - sa) + -1.781781975296326e-05 * s) + (-6.605598229861287e-13 * s + 6.2831854820251465 * e)
    return two_sum(ah, al)


def finish_pair_f32(a: Array, a_lo: Array, xp: Any) -> tuple[Array, Array]:
    """float32 ``(sin, cos)`` of the angle ``a + a_lo`` (a float32 pair,
    ``|a_lo| <= 2**-23``): :func:`finish_f32`'s formula, the sine taken of
    ``a`` alone."""
    sn, cs = xp.sin(a), xp.cos(a)
    return sn + cs * a_lo, cs - sn * a_lo


#: masks and scales of the fixed-point path (:func:`_sincos_fixed`)
_M16 = 0xFFFF
_LOW20 = (1 << 20) - 1
_TURN32 = 2.0**-32  # (written as literals in the arithmetic)
_TURN48 = 2.0**-48


def _sincos_fixed(p: Array, a: Angles) -> tuple[Array, Array]:
    """float32 ``(sin, cos)`` of integer positions on a device without
    float64, in 32-bit integer arithmetic (no gather, no table).

    With the frequencies in turns as 64-bit fixed point ``V = round(v *
    2**64)`` modulo 2**64 (:func:`posenc._turns.fixed_turns`, in 32-bit
    words ``V = Vhi * 2**32 + Vlo``), the fractional part of ``u * v`` in
    units of 2**-64 is ``u * V`` modulo 2**64, for ``u = |p| < 2**32``.  Its
    top word is ``lo32(u * Vhi) + hi32(u * Vlo)`` modulo 2**32, in wrapping
    int32 arithmetic: the low half of a product is the wrapped product, the
    high half comes from the four products of the 16-bit halves (each below
    2**32) and their carries, and the middle sum of those products holds the
    top 16 bits of the next word.  (The standard leaves overflowing integer
    products, sums and casts to the library: NumPy, JAX, torch and
    array-api-strict wrap, which the tests check.)  The top word, read as a
    signed int32, is the turns in [-1/2, 1/2) times 2**32: it is split
    exactly into float32 ``sa`` (its top 12 bits) and ``sb`` (the low 20),
    plus ``sc`` from the next 16 bits, and the angle ``2 pi (sa + sb + sc)``
    is formed as a float32 pair ``a + a_lo`` (the 12-bit head of 2 pi times
    ``sa`` is exact, the rest is below 2e-3 rad), whose sine and cosine
    :func:`_finish_fixed` takes; the sines of negative positions are
    negated.

    Error: ``V``'s rounding leaves ``|p| * 2**-65`` turns, the truncation
    after 48 bits ``2**-48``, the float32 roundings of the small terms about
    ``2**-34`` rad each: the reduced angle is within ``|p| * 2**-64 pi +
    2.5e-10`` rad of the exact one, below 7e-10 for ``|p| < 2**31`` and 1e-9
    below ``2**32``; positions with ``|p| >= 2**32`` (64-bit integers only)
    give NaN rows, as on :func:`_sincos_digits`.  The float32 sine and
    cosine of ``a`` then bound the table as on the other array paths, plus
    the 1e-9 of :func:`_finish_fixed`.  About 35 elementwise operations and
    one float32 sine or cosine per element of a table, which ``jax.jit``
    fuses into one loop.
    """
    ctx = a.ctx
    xp = ctx.xp
    shape = tuple(p.shape)
    ah, al, sign, overflow = fixed_angle(xp.reshape(p, (-1,)), a.freqs.key, ctx)
    sn, cs = _finish_fixed(ah, al, xp)
    if sign is not None:  # the angles of -p are those of p negated
        sn = sn * sign
    if overflow is not None:
        nan = xp.full((), float("nan"), dtype=xp.float32, device=ctx.device)
        sn = xp.where(overflow[:, None], nan, sn)
        cs = xp.where(overflow[:, None], nan, cs)
    sn = xp.reshape(sn, shape + (a.freqs.m,))
    cs = xp.reshape(cs, shape + (a.freqs.m,))
    return cast(sn, ctx.work, xp), cast(cs, ctx.work, xp)


#: Taylor coefficients of the first-order terms of :func:`_finish_fixed`:
#: ``cos x`` to ``x**10`` and ``sin x / x`` to ``x**8``
_COS_TAYLOR = tuple((-1) ** k / math.factorial(2 * k) for k in range(6))
_SIN_TAYLOR = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(5))


def _finish_fixed(a: Array, a_lo: Array, xp: Any) -> tuple[Array, Array]:
    """float32 ``(sin, cos)`` of the angle ``a + a_lo`` (``a`` in [-pi, pi],
    ``|a_lo| <= 2**-23``): :func:`finish_pair_f32`'s first-order formula with
    the ``cos a`` and ``sin a`` of the correction terms taken from Taylor
    polynomials instead of the float32 functions.  The sine of the table
    then needs no cosine and the cosine no sine: where a table is laid out
    elementwise (``jax.jit`` fuses the sines and cosines into one loop over
    the interleaved or concatenated columns, and computes what each column
    needs), each element takes one float32 function, as the naive formula
    does.  The polynomials are within ``pi**12 / 12! < 2e-3`` (cosine) and
    ``pi**11 / 11! < 8e-3`` (sine) of the functions on [-pi, pi]: times
    ``|a_lo|``, below 1e-9 in the table, and the correction terms stay below
    the table's own rounding."""
    x2 = a * a
    # Horner's scheme of _COS_TAYLOR and _SIN_TAYLOR with the coefficients as
    # literals (torch's compiler would lift floats read from the module into
    # graph inputs, host tensors made on every call; a test checks the values)
    c = 2.48015873015873e-05 + x2 * -2.755731922398589e-07
    c = -0.001388888888888889 + x2 * c
    c = 0.041666666666666664 + x2 * c
    c = -0.5 + x2 * c
    c = 1.0 + x2 * c
    sx = -0.0001984126984126984 + x2 * 2.7557319223985893e-06
    sx = 0.008333333333333333 + x2 * sx
    sx = -0.16666666666666666 + x2 * sx
    sx = 1.0 + x2 * sx
    return xp.sin(a) + c * a_lo, xp.cos(a) - (a * sx) * a_lo


def fixed_angle(flat: Array, freqs_key: bytes, ctx: Context) -> tuple[Array, Array, Array | None, Array | None]:
    """The reduced angles of :func:`_sincos_fixed` for 1-D integer positions
    ``flat`` (n,): ``(a, a_lo, sign, overflow)``, the angles of ``|p|`` as a
    float32 pair (n, m) with ``a`` in [-pi, pi] and ``|a_lo| <= 2**-23``, the
    float32 sign of ``p`` (n, 1) (None for unsigned dtypes: the angle of
    ``p`` is ``sign * (a + a_lo)``), and the mask of the positions beyond
    ``|p| < 2**32`` (64-bit integers only; else None)."""
    xp = ctx.xp
    i32, f32 = xp.int32, xp.float32
    bits = _bits(xp, flat.dtype)
    signed = int(xp.iinfo(flat.dtype).min) < 0
    overflow = sign = None
    if signed:
        one = xp.ones((), dtype=f32, device=ctx.device)
        sign = xp.where(flat < 0, -one, one)[:, None]
    if bits > 32:
        # |p| >= 2**32 gives NaN rows (the most negative int64 too, whose abs()
        # stays negative: the comparisons need no abs())
        overflow = ((flat >= 2**32) | (flat <= -(2**32))) if signed else flat >= 2**32
        low = (xp.abs(flat) if signed else flat) & 0xFFFFFFFF
        if not signed:
            low = xp.astype(low, xp.int64)
        u = xp.astype(low - ((low >> 31) << 32), i32)  # the low 32 bits of |p| as a signed int32
    else:
        # 8- and 16-bit integers fit int32; uint32 keeps its bits (the cast
        # wraps), and so does abs(-2**31)
        u = cast(flat, i32, xp)
        if signed:
            u = xp.abs(u)
    limbs = ctx.from_host(fixed_limbs(freqs_key), i32)
    vhi, b0, b1 = (limbs[i, ...] for i in range(3))
    u0 = (u & _M16)[:, None]
    u1 = ((u >> 16) & _M16)[:, None]
    # hi32(u * Vlo) from the products of the 16-bit halves (bit patterns of
    # values below 2**32: the masks undo the sign of a wrapped product)
    p00, p10, p01, p11 = u0 * b0, u1 * b0, u0 * b1, u1 * b1
    mid = ((p00 >> 16) & _M16) + (p10 & _M16) + (p01 & _M16)
    top = u[:, None] * vhi + (p11 + ((p10 >> 16) & _M16) + ((p01 >> 16) & _M16) + (mid >> 16))
    # the turns top * 2**-32 as exact float32 parts: its 12 high bits, its 20
    # low bits, and the next 16 bits
    # (literals: _TURN32, _TURN48, _PA32, _TWO_PI32, _PB32)
    sa = xp.astype(top & ~_LOW20, f32) * 2.3283064365386963e-10
    sb = xp.astype(top & _LOW20, f32) * 2.3283064365386963e-10
    sc = xp.astype(mid & _M16, f32) * 3.552713678800501e-15
    ah = 6.283203125 * sa  # exact: 12 by 12 bits
    al = 6.2831854820251465 * (sb + sc) + -1.781781975296326e-05 * sa
    a, a_lo = two_sum(ah, al)
    return a, a_lo, sign, overflow


def _sincos_digits(p: Array, a: Angles) -> tuple[Array, Array]:
    """float32 ``(sin, cos)`` of array positions on a device without float64.

    The integer part of ``|p|`` is split into four base-256 digits; the turns
    ``frac(digit * 256**l * v)`` of each come from host tables as float32
    pairs ``hi + lo`` (:class:`DigitTables`, exact to about 2**-48) and are
    summed with exact two-sums, the sum reduced modulo 1 after each step
    (exact).  A fractional part ``x`` of a float position adds
    ``x * v = xa*va + (xa*vb + xb*v)``, with ``xa`` ``x`` truncated to 12
    bits and ``va`` ``v`` rounded to 12: ``xa*va`` is exact and the rest is
    below ``2**-12 |v|``.  The turns ``f`` become the angle ``2 pi f`` as a
    float32 pair, from a 12-bit head of ``f`` times a 12-bit head of 2 pi
    (exact) plus the small products, and :func:`finish_f32`'s formula takes
    the sine and cosine.  The reduction is right to about 1e-10 for
    ``|p| < 2**32`` (``|w| <= 1``); positions with ``|p| >= 2**32`` give NaN rows.
    """
    ctx = a.ctx
    freqs = a.freqs
    xp = ctx.xp
    f32 = xp.float32
    m = freqs.m
    shape = tuple(p.shape)
    flat = xp.reshape(p, (-1,))
    idx_t = default_dtype(ctx.xp, ctx.device, "indexing")
    tab = digit_tables(freqs.key)
    neg = flat < 0
    frac = None
    if a.integer:
        bits = _bits(xp, flat.dtype)
        if bits < 32:
            # 8- and 16-bit integers hold neither the divisors 256**level nor
            # abs(-128): their digits are taken in int32
            flat = xp.astype(flat, xp.int32)
        # abs() of the most negative integer stays negative: Python's floor
        # division and modulo still give the digits of its magnitude
        mag = xp.abs(flat)
        digits = [xp.astype((mag // DIGIT**level) % DIGIT, idx_t) for level in range(LEVELS)]
        # |p| >= 2**32, and abs() of the most negative int64 (which stays negative)
        overflow = ((mag // DIGIT**LEVELS) > 0) | (mag < 0) if bits > 32 else None
    else:
        x = xp.abs(cast(flat, f32, xp))
        k = xp.floor(x)
        frac = x - k
        digits = []
        for level in range(LEVELS):
            hi = xp.floor(k / float(DIGIT ** (level + 1)))
            lo = xp.floor(k / float(DIGIT**level))
            digits.append(xp.astype(lo - hi * float(DIGIT), idx_t))
        overflow = k >= float(DIGIT**LEVELS)
    sh = sl = None
    for level in range(LEVELS):
        th = xp.take(ctx.from_host(tab.hi[level], f32), digits[level], axis=0)
        tl = xp.take(ctx.from_host(tab.lo[level], f32), digits[level], axis=0)
        if sh is None:
            sh, sl = th, tl
        else:
            s, e = two_sum(sh, th)
            sh, sl = s - xp.round(s), sl + (tl + e)
    if frac is not None:
        va = ctx.from_host(tab.va, f32)
        vb = ctx.from_host(tab.vb, f32)
        vh = ctx.from_host(tab.vh32, f32)
        xa = xp.floor(frac * 4096.0) * 0.000244140625  # 12 bits (_SCALE12, _INV12): xa * va is exact
        xb = (frac - xa)[:, None]
        head = xa[:, None] * va
        s, e = two_sum(sh, head - xp.round(head))
        sh, sl = s - xp.round(s), sl + ((xa[:, None] * vb + xb * vh) + e)
    s, c = finish_pair_f32(*turns_to_angle_f32(sh, sl, xp), xp)
    s = xp.where(neg[:, None], -s, s)
    if overflow is not None:
        nan = xp.full((), float("nan"), dtype=f32, device=ctx.device)
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
