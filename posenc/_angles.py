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
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from . import _compat
from ._compat import Context

__all__ = ["sincos", "sincos_range", "cast"]

_DIGIT = 256
_LEVELS = 4


def _two_pi_parts() -> tuple[float, float, float]:
    """2*pi as C1 + C2 + C3: C1 and C2 with 20 significant bits (so ``k * C1``
    and ``k * C2`` are exact for ``|k| < 2**33``), C3 the float64 rest."""
    from decimal import Decimal, getcontext

    getcontext().prec = 60
    two_pi = Decimal("6.283185307179586476925286766559005768394338798750211641949889")
    c1 = math.ldexp(math.floor(math.ldexp(float(two_pi), 17)), -17)
    c2 = math.ldexp(math.floor(math.ldexp(float(two_pi - Decimal(c1)), 37)), -37)
    c3 = float(two_pi - Decimal(c1) - Decimal(c2))
    return c1, c2, c3


_C1, _C2, _C3 = _two_pi_parts()
_INV_TWO_PI = 1.0 / (2.0 * math.pi)
_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitter for float64
#: below this |p * w| the reduced angle is exact to ~1e-16 (k * C1 exact)
_EXACT_LIMIT = 2.0**33


def reduced_angle(p: Any, w: Any, xp: Any) -> Any:
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


def cast(x: Any, dtype: Any, xp: Any) -> Any:
    """``xp.astype`` that does not copy when the dtype already matches."""
    if x.dtype == dtype:
        return x
    return xp.astype(x, dtype)


def _block(n: int) -> int:
    """Power-of-two block size near sqrt(n)."""
    if n <= 1:
        return 1
    return 1 << math.ceil(math.log2(n) / 2)


def _readonly(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for a in arrays:
        a.setflags(write=False)
    return arrays


@functools.lru_cache(maxsize=128)
def _range_tables(start: int, nq: int, block: int, freqs_key: bytes) -> tuple[np.ndarray, ...]:
    w = np.frombuffer(freqs_key, dtype=np.float64)[None, :]
    # start + q*block are exact integers in float64 (|p| < 2**53)
    coarse = reduced_angle((start + np.arange(nq, dtype=np.float64) * block)[:, None], w, np)
    fine = reduced_angle(np.arange(block, dtype=np.float64)[:, None], w, np)
    return _readonly(np.sin(coarse), np.cos(coarse), np.sin(fine), np.cos(fine))


@functools.lru_cache(maxsize=32)
def _digit_tables(freqs_key: bytes) -> tuple[np.ndarray, np.ndarray]:
    w = np.frombuffer(freqs_key, dtype=np.float64)
    k = np.arange(_DIGIT, dtype=np.float64)
    scale = np.float64(_DIGIT) ** np.arange(_LEVELS, dtype=np.float64)
    ang = reduced_angle(k[None, :, None] * scale[:, None, None], w[None, None, :], np)  # (levels, 256, m)
    return _readonly(np.sin(ang), np.cos(ang))


def _key(freqs: np.ndarray) -> bytes:
    return np.ascontiguousarray(freqs, dtype=np.float64).tobytes()


def sincos_range(start: int, n: int, freqs: np.ndarray, ctx: Context) -> tuple[Any, Any]:
    """``(sin, cos)`` of ``p * freqs`` for ``p = start .. start+n-1``, shape (n, m)."""
    xp = ctx.xp
    m = int(freqs.shape[0])
    block = _block(n)
    nq = -(-n // block) if n else 0
    if n == 0 or m == 0:
        z = xp.zeros((n, m), dtype=ctx.work, device=ctx.device) if ctx.device is not None else xp.zeros((n, m), dtype=ctx.work)
        return z, z
    sq, cq, sr, cr = (_compat.from_host(t, ctx) for t in _range_tables(int(start), nq, block, _key(freqs)))
    sq, cq = sq[:, None, :], cq[:, None, :]
    sr, cr = sr[None, ...], cr[None, ...]
    s = sq * cr + cq * sr
    c = cq * cr - sq * sr
    s = xp.reshape(s, (nq * block, m))
    c = xp.reshape(c, (nq * block, m))
    if nq * block != n:
        s, c = s[:n, ...], c[:n, ...]
    return s, c


def sincos(positions: int | Any, freqs: np.ndarray, ctx: Context) -> tuple[Any, Any]:
    """``(sin, cos)`` of ``positions[..., None] * freqs`` in ``ctx.work`` dtype.

    ``positions`` is a Python int n (meaning 0..n-1) or a validated real array.
    """
    if isinstance(positions, int):
        return sincos_range(0, positions, freqs, ctx)
    if ctx.float64:
        return _sincos_f64(positions, freqs, ctx)
    return _sincos_digits(positions, freqs, ctx)


def _sincos_f64(p: Any, freqs: np.ndarray, ctx: Context) -> tuple[Any, Any]:
    xp = ctx.xp
    w = _compat.from_host(freqs, ctx, xp.float64)
    a = reduced_angle(cast(p, xp.float64, xp)[..., None], w, xp)
    return cast(xp.sin(a), ctx.work, xp), cast(xp.cos(a), ctx.work, xp)


def _index_dtype(ctx: Context) -> Any:
    info = ctx.xp.__array_namespace_info__()
    try:
        return info.default_dtypes(device=ctx.device)["indexing"]
    except Exception:  # pragma: no cover
        return info.default_dtypes()["indexing"]


def _sincos_digits(p: Any, freqs: np.ndarray, ctx: Context) -> tuple[Any, Any]:
    xp = ctx.xp
    f32 = xp.float32
    m = int(freqs.shape[0])
    shape = tuple(p.shape)
    flat = xp.reshape(p, (-1,))
    idx_t = _index_dtype(ctx)
    ts, tc = _digit_tables(_key(freqs))
    neg = flat < 0
    frac = None
    if _compat.is_integer_dtype(xp, flat.dtype):
        a = xp.abs(flat)
        digits = []
        for level in range(_LEVELS):
            digits.append(xp.astype((a // _DIGIT**level) % _DIGIT, idx_t) if level < 4 else None)
        overflow = (a // _DIGIT**_LEVELS) > 0 if _bits(xp, flat.dtype) > 32 else None
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
        w32 = _compat.from_host(freqs, ctx, f32)
        fa = frac[:, None] * w32
        fs, fc = xp.sin(fa), xp.cos(fa)
        s, c = s * fc + c * fs, c * fc - s * fs
    s = xp.where(neg[:, None], -s, s)
    if overflow is not None:
        nan = xp.asarray(float("nan"), dtype=f32, device=ctx.device) if ctx.device is not None else xp.asarray(float("nan"), dtype=f32)
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
