"""The host constants of posenc's exact angles (:mod:`posenc._angles`): the
frequencies as :class:`Freqs` (those posenc defines carried from their
mathematical definitions, :mod:`posenc._exact`), in turns to about 106 bits
(:class:`Turns`),
as int64 fixed point for the kernels (and in 32-bit words for the integer
positions of devices without float64), in base-256 digit tables for the real
positions of such devices, and the float64 sines and cosines of the coarse and fine
positions of a range.  Host NumPy only, computed once per set of
frequencies and kept in :data:`posenc._cache.HOST` (read-only); the
functions other modules and traced code call are host constants of torch's
graphs (:func:`posenc._trace.host_constant`).  The derivation of the
reduction is in :mod:`posenc._angles`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from . import _cache
from ._exact import times
from ._trace import host_constant

__all__ = [
    "DIGIT",
    "INV_HI",
    "INV_LO",
    "LEVELS",
    "MAX_FREQUENCY",
    "MAX_POSITION",
    "TWO_PI",
    "DigitTables",
    "Freqs",
    "Turns",
    "as_freqs",
    "digit_tables",
    "fixed_limbs",
    "fixed_turns",
    "freqs_array",
    "host_sincos",
    "kernel_turns",
    "laid_out_fixed",
    "max_position",
    "range_tables",
    "range_tables_host",
    "reduce_turns",
    "turn_arrays",
    "turns_of",
]


#: the digits of integer positions on devices without float64: base 256, four levels
DIGIT = 256
LEVELS = 4

#: largest frequency magnitude used in an angle (larger ones are clipped):
#: with |p| <= MAX_POSITION every product and split of reduce_turns is finite
MAX_FREQUENCY = 2.0**900
#: largest position magnitude of array positions used in a float64 angle
MAX_POSITION = 2.0**64
_F32_MAX = float(np.finfo(np.float32).max)


@dataclass(frozen=True)
class Freqs:
    """Host float64 frequencies as a hashable constant.

    The frequencies depend only on Python arguments (``dim``, ``base``, a
    scaling), so they travel through a call as bytes: a value that torch's
    tracer treats as a constant and that keys the host caches.  Two kinds:

    * :meth:`from_array`: the float64 values are the frequencies (a caller's
      array): ``key`` is their bytes;
    * :meth:`exact`: the frequencies of a mathematical definition, carried to
      about 106 bits (:mod:`posenc._exact`): ``key`` holds the correctly
      rounded float64 values ``hi``, their rests ``lo`` and the turns ``vh +
      vl = (hi + lo) / (2 pi)``, four float64 blocks and a tag byte (an odd
      length tells the kinds apart).

    Magnitudes are clipped to :data:`MAX_FREQUENCY` (a clipped set is of the
    first kind).

    Attributes
    ----------
    key : bytes
        The frequencies as above, native byte order.
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

    @staticmethod
    def exact(hi: Any, lo: Any) -> Freqs:
        """Freqs of frequencies ``hi + lo`` (float64 host arrays: ``hi``
        correctly rounded, ``lo`` the rest, about 106 bits together)."""
        hi = np.ascontiguousarray(hi, dtype=np.float64).reshape(-1)
        lo = np.ascontiguousarray(lo, dtype=np.float64).reshape(-1)
        top = float(np.max(np.abs(hi))) if hi.size else 0.0
        if not top <= MAX_FREQUENCY or not np.isfinite(lo).all():
            return Freqs.from_array(hi)
        vh, vl = times(hi, lo, (INV_HI, INV_LO))
        return Freqs(np.concatenate([hi, lo, vh, vl]).tobytes() + _EXACT, int(hi.size), top)

    @staticmethod
    def exact_turns(vh: Any, vl: Any) -> Freqs:
        """Freqs whose turns per position are ``vh + vl`` (float64 host
        arrays, about 106 bits): angular frequencies ``2 pi (vh + vl)``."""
        vh = np.ascontiguousarray(vh, dtype=np.float64).reshape(-1)
        vl = np.ascontiguousarray(vl, dtype=np.float64).reshape(-1)
        hi, lo = times(vh, vl, (TWO_PI, TWO_PI_LO))
        top = float(np.max(np.abs(hi))) if hi.size else 0.0
        if not top <= MAX_FREQUENCY or not (np.isfinite(lo).all() and np.isfinite(vl).all()):
            return Freqs.from_array(hi)
        vh, vl = vh + vl, vl - ((vh + vl) - vh)  # normalised
        return Freqs(np.concatenate([hi, lo, vh, vl]).tobytes() + _EXACT, int(hi.size), top)

    @staticmethod
    def of_key(key: bytes) -> Freqs:
        """The Freqs whose ``key`` is ``key``."""
        hi = _parts(key)[0]
        return Freqs(key, int(hi.size), float(np.max(np.abs(hi))) if hi.size else 0.0)

    @property
    def array(self) -> np.ndarray:
        """The float64 frequencies as a read-only NumPy array (host code only)."""
        return _parts(self.key)[0]

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(hi, lo, vh, vl)``: the frequencies and their turns as float64
        pairs (read-only host arrays; for a caller's array ``lo`` is 0 and the
        turns are those of :class:`Turns`)."""
        hi, lo, vh, vl = _parts(self.key)
        if lo is None or vh is None or vl is None:
            t = _turns(self.key)
            return hi, np.zeros_like(hi), t.vh, t.vl
        return hi, lo, vh, vl

    def every(self, start: int, step: int) -> Freqs:
        """The frequencies ``start, start + step, ...`` (their pairs kept)."""
        hi, lo, vh, vl = _parts(self.key)
        if lo is None or vh is None or vl is None:
            return Freqs.from_array(hi[start::step])
        sub = [a[start::step] for a in (hi, lo, vh, vl)]
        top = float(np.max(np.abs(sub[0]))) if sub[0].size else 0.0
        return Freqs(np.concatenate(sub).tobytes() + _EXACT, int(sub[0].size), top)

    def as_turns(self) -> Freqs:
        """The Freqs that turns ``w`` times per position where these rotate
        ``w`` radians (angular frequencies ``2 pi w``, with ``w`` to 106 bits)."""
        hi, lo, _, _ = self.pairs()
        return Freqs.exact_turns(hi, lo)


def as_freqs(freqs: Any) -> Freqs:
    """``freqs`` as :class:`Freqs` (a host array is converted)."""
    return freqs if isinstance(freqs, Freqs) else Freqs.from_array(freqs)


#: the tag of exact keys
_EXACT = b"x"


def _parts(key: bytes) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``(hi, lo, vh, vl)`` of a :class:`Freqs` key (``None`` for a caller's array)."""
    if len(key) % 8 == 0:
        return np.frombuffer(key, dtype=np.float64), None, None, None
    a = np.frombuffer(key, dtype=np.float64, count=(len(key) - 1) // 8)
    m = a.size // 4
    return a[:m], a[m : 2 * m], a[2 * m : 3 * m], a[3 * m :]


def _two_pi_lo() -> float:
    """``2 pi - TWO_PI`` in float64."""
    from decimal import Decimal, localcontext

    with localcontext() as dec:
        dec.prec = 60
        return float(Decimal(TWO_PI_DIGITS) - Decimal(TWO_PI))


def _inverse_two_pi() -> tuple[float, float]:
    """``1/(2 pi)`` as a float64 pair (radians to turns)."""
    from decimal import Decimal, localcontext

    # a local context: the importing thread's decimal settings stay as they were
    with localcontext() as dec:
        dec.prec = 60
        inv = 1 / Decimal(TWO_PI_DIGITS)
        inv_hi = float(inv)
        return inv_hi, float(inv - Decimal(inv_hi))


#: 2 pi to 60 digits
TWO_PI_DIGITS = "6.283185307179586476925286766559005768394338798750211641949889"
#: 1 / (2 pi) as a float64 pair (radians to turns)
INV_HI, INV_LO = _inverse_two_pi()
TWO_PI = 2.0 * math.pi
#: the rest of 2 pi beyond TWO_PI
TWO_PI_LO = _two_pi_lo()
_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitter for float64


def _split(x: Any) -> tuple[Any, Any]:
    """Veltkamp's split of float64 ``x`` into a 26-bit head and the rest (any namespace)."""
    t = x * _SPLIT
    hi = t - (t - x)
    return hi, x - hi


def reduce_turns(p: Any, vh: Any, vl: Any, vhh: Any, vhl: Any, xp: Any) -> Any:
    """The fractional part of ``p * (vh + vl)`` in [-1/2, 1/2], float64, to about 2**-53.

    ``p * vh`` is formed exactly as ``h + e`` (Dekker's two-product; ``vhh``,
    ``vhl`` are the Veltkamp halves of ``vh``), ``h - round(h)`` is exact, and
    ``e`` and ``p * vl`` are small: the error does not grow with ``p`` while
    ``|p * v| < 2**50``.  ``p`` broadcasts against the frequencies (the caller
    adds the axis).  Works on NumPy arrays (host tables) and on any namespace
    ``xp`` (plain multiplies, adds and ``round``).
    """
    h = p * vh
    ph, pl = _split(p)
    e = ((ph * vhh - h) + ph * vhl + pl * vhh) + pl * vhl
    f = h - xp.round(h)
    f = (f + e) + p * vl
    return f - xp.round(f)


class Turns(NamedTuple):
    """The frequencies in turns per position, ``v = w / (2 pi)``, as host
    float64 arrays (read-only), in the forms the paths need.

    ``vh + vl`` is ``v`` to about 106 bits (of the mathematical frequency
    for :meth:`Freqs.exact`, of the float64 value for a caller's array);
    ``vhh + vhl`` is ``vh`` split in
    Veltkamp halves (float64 tables); ``v1`` is ``vh`` rounded to 21
    significant bits and ``v2`` the float64 rest of ``v``, so that ``p * v1``
    is exact for every integer ``|p| < 2**32`` (float32 tables).
    """

    vh: np.ndarray
    vl: np.ndarray
    vhh: np.ndarray
    vhl: np.ndarray
    v1: np.ndarray
    v2: np.ndarray


def _host_turns(w: np.ndarray) -> Turns:
    """:class:`Turns` of float64 frequencies ``w`` (host NumPy, exact products)."""
    w = np.asarray(w, dtype=np.float64)
    # w * (inv_hi + inv_lo) as a pair: Dekker's two-product of w and inv_hi
    h = w * INV_HI
    wh, wl = _split(w)
    ih, il = _split(np.float64(INV_HI))
    e = ((wh * ih - h) + wh * il + wl * ih) + wl * il
    lo = e + w * INV_LO
    vh = h + lo
    vl = lo - (vh - h)
    return _turns_from(vh, vl)


def _turns_from(vh: np.ndarray, vl: np.ndarray) -> Turns:
    """:class:`Turns` of turns ``vh + vl`` (a normalised float64 pair)."""
    vhh, vhl = _split(vh)
    # v1: vh rounded to 21 significant bits (a power-of-two scaling and rint: exact)
    mant, expo = np.frexp(vh)
    v1 = np.ldexp(np.rint(np.ldexp(mant, 21)), expo - 21)
    v2 = (vh - v1) + vl
    return Turns(*_cache.readonly(vh, vl, vhh, vhl, v1, v2))


def _turns(freqs_key: bytes) -> Turns:
    """:class:`Turns` of :class:`Freqs` bytes (cached, read-only; host code:
    other modules and traced code call :func:`turns_of`)."""
    key = ("turns", freqs_key)
    got = _cache.HOST.get(key)
    if got is None:
        hi, _, vh, vl = _parts(freqs_key)
        got = _host_turns(hi) if vh is None or vl is None else _turns_from(np.array(vh), np.array(vl))
        _cache.HOST.put(key, got, sum(a.nbytes for a in got))
    return got


#: :func:`_turns` as a host constant of torch's traced graphs
turns_of = host_constant(_turns)


def _host_sincos_turns(p: np.ndarray, t: Turns) -> tuple[np.ndarray, np.ndarray]:
    """float64 ``(sin, cos)`` of ``p[:, None] * w`` on the host (``p`` float64, exact values)."""
    f = reduce_turns(p[:, None], t.vh, t.vl, t.vhh, t.vhl, np)
    a = f * TWO_PI
    return np.sin(a), np.cos(a)


def _doubled(starts: tuple[float, ...], steps: tuple[float, ...], k: int, t: Turns) -> tuple[np.ndarray, np.ndarray]:
    """float64 ``(sin, cos)`` of ``(a + i d) * w`` for ``i < k`` and each
    start ``a`` and step ``d`` of ``starts`` and ``steps`` (shape ``(len,
    k, m)``), by doubling: the exact values of ``a w`` and of ``2**j d w``
    (``2**j < k``), then rows ``[2**j, 2**(j+1))`` from rows ``[0, 2**j)``
    by the angle-addition formula.  Each step rotates the error of the row
    it starts from (a norm kept), adds a seed's (at most ``2 * 2**-53``) and
    rounds two products and a sum (``3 * 2**-53``): row ``i`` is within
    ``(2 + 5 popcount(i)) 2**-53`` of the exact values, at most 5.8e-15 for
    the 1024 rows of a large table's block (measured: 1.5e-15).  The
    sequences are computed together (one reduction of every seed, one
    product per step), each value as if alone."""
    g = len(starts)
    bits = max(1, (k - 1).bit_length())
    seeds = list(starts) + [d * 2.0**j for d in steps for j in range(bits)]
    ss, cs = _host_sincos_turns(np.array(seeds, dtype=np.float64), t)
    m = ss.shape[1]
    rs, rc = ss[g:].reshape(g, bits, 1, m), cs[g:].reshape(g, bits, 1, m)
    s = np.empty((g, k, m))
    c = np.empty((g, k, m))
    s[:, 0], c[:, 0] = ss[:g], cs[:g]
    tmp = np.empty((g, k // 2, m))
    size, j = 1, 0
    while size < k:
        h = min(size, k - size)
        sj, cj, tt = rs[:, j], rc[:, j], tmp[:, :h]
        sa, ca, sb, cb = s[:, :h], c[:, :h], s[:, size : size + h], c[:, size : size + h]
        # s' = s cj + c sj and c' = c cj - s sj, each product and the sum rounded once
        np.multiply(sa, cj, out=sb)
        np.add(sb, np.multiply(ca, sj, out=tt), out=sb)
        np.multiply(ca, cj, out=cb)
        np.subtract(cb, np.multiply(sa, sj, out=tt), out=cb)
        size += h
        j += 1
    return s, c


def _range_tables(start: int, nq: int, block: int, freqs_key: bytes, fine: bool = True) -> tuple[np.ndarray, ...]:
    """Host float64 sin/cos of the coarse angles ``(start + q*block) * w`` and
    the fine angles ``r * w`` (cached, read-only).

    ``fine``: every value correctly reduced and within an ulp (float64
    tables).  Otherwise (tables of float32 and narrower, where a float64
    error of 1e-15 never shows) the rows are built by doubling from
    ``log2`` exact ones (:func:`_doubled`): about 5x cheaper for the first
    table of a length."""
    key = ("range", start, nq, block, freqs_key, fine)
    got = _cache.HOST.get(key)
    if got is not None:
        return got
    t = _turns(freqs_key)
    if fine:
        # coarse positions start + q*block (exact integers in float64, |p| < 2**53)
        # and fine positions r, reduced in one pass
        p = np.concatenate([start + np.arange(nq, dtype=np.float64) * block, np.arange(block, dtype=np.float64)])
        s, c = _host_sincos_turns(p, t)
        got = _cache.readonly(s[:nq], c[:nq], s[nq:], c[nq:])
    else:
        # the coarse and the fine rows in one doubling (the longer one's rows:
        # each row depends only on the seeds below it)
        s, c = _doubled((float(start), 0.0), (float(block), 1.0), max(nq, block), t)
        got = _cache.readonly(s[0, :nq], c[0, :nq], s[1, :block], c[1, :block])
    _cache.HOST.put(key, got, sum(a.nbytes for a in got))
    return got


#: :func:`_range_tables` as a host constant of torch's traced graphs (eager
#: code calls :data:`range_tables_host`)
range_tables = host_constant(_range_tables)
range_tables_host = _range_tables


class DigitTables(NamedTuple):
    """Host float32 tables of the path without float64 (read-only).

    ``hi[l, k] + lo[l, k]`` is ``frac(k * 256**l * v)`` in turns (levels l =
    0..3, digits k = 0..255, per frequency); ``va`` is ``v`` rounded to 12
    significant bits and ``vb`` the float32 rest (fractional positions);
    ``vh32`` is ``v`` in float32.  Frequencies beyond the float32 range are
    clipped there (they determine no angle of a float32 fraction).
    """

    hi: np.ndarray
    lo: np.ndarray
    va: np.ndarray
    vb: np.ndarray
    vh32: np.ndarray


@host_constant
def digit_tables(freqs_key: bytes) -> DigitTables:
    """:class:`DigitTables` of :class:`Freqs` bytes (cached, read-only)."""
    key = ("digits", freqs_key)
    got = _cache.HOST.get(key)
    if got is not None:
        return got
    t = _turns(freqs_key)
    k = (np.arange(DIGIT, dtype=np.float64)[None, :] * float(DIGIT) ** np.arange(LEVELS)[:, None]).reshape(-1)
    f = reduce_turns(k[:, None], t.vh, t.vl, t.vhh, t.vhl, np).reshape(LEVELS, DIGIT, -1)
    hi = f.astype(np.float32)
    lo = (f - hi).astype(np.float32)
    v = np.clip(t.vh, -_F32_MAX, _F32_MAX)
    mant, expo = np.frexp(v)
    va = np.ldexp(np.rint(np.ldexp(mant, 12)), expo - 12)
    with np.errstate(over="ignore", invalid="ignore"):
        va32 = va.astype(np.float32)
    va32 = np.where(np.isfinite(va32), va32, np.float32(0.0))  # 12-bit heads beyond float32: no fraction angle
    vb = (v - va32.astype(np.float64)).astype(np.float32)
    got = DigitTables(*_cache.readonly(hi, lo, va32, vb, v.astype(np.float32)))
    _cache.HOST.put(key, got, sum(a.nbytes for a in got))
    return got


def _fixed(vh: float, vl: float) -> int:
    """``vh + vl`` turns as 64-bit fixed point: ``round((vh + vl) * 2**64)``
    modulo 2**64 (ties to even), as a signed int64 value (exact integer
    arithmetic: each float is an integer over a power of two)."""
    n1, d1 = vh.as_integer_ratio()
    n2, d2 = vl.as_integer_ratio()
    d = max(d1, d2)
    q, r = divmod((n1 * (d // d1) + n2 * (d // d2)) << 64, d)
    if 2 * r > d or (2 * r == d and q & 1):
        q += 1
    q %= 2**64
    return q - 2**64 if q >= 2**63 else q


def fixed_turns(freqs_key: bytes) -> np.ndarray:
    """The frequencies in turns as int64 fixed point (``V = round(v *
    2**64)`` modulo 2**64): ``p * V`` in wrapping int64 arithmetic is the
    fractional part of ``p * v`` (the NumPy kernel of integer positions;
    cached, read-only; eager code only: the kernels never run while torch
    traces)."""
    key = ("fixed-turns", freqs_key)
    got = _cache.HOST.get(key)
    if got is None:
        t = _turns(freqs_key)
        (got,) = _cache.readonly(np.array([_fixed(a, b) for a, b in zip(t.vh.tolist(), t.vl.tolist())], np.int64))
        _cache.HOST.put(key, got, got.nbytes)
    return got


@host_constant
def fixed_limbs(freqs_key: bytes) -> np.ndarray:
    """:func:`fixed_turns` in 32-bit words for devices without float64:
    int32 array of shape (3, m), rows ``Vhi`` (its bit pattern) and the low
    and high 16 bits of ``Vlo``, with ``V = Vhi * 2**32 + Vlo`` modulo 2**64
    (both words unsigned).  Cached, read-only."""
    key = ("fixed-limbs", freqs_key)
    got = _cache.HOST.get(key)
    if got is None:
        v = fixed_turns(freqs_key).view(np.uint64)
        hi = (v >> np.uint64(32)).astype(np.uint32).view(np.int32)
        lo = (v & np.uint64(0xFFFFFFFF)).astype(np.int64)
        (got,) = _cache.readonly(np.stack([hi, lo & 0xFFFF, lo >> 16]).astype(np.int32))
        _cache.HOST.put(key, got, got.nbytes)
    return got


def kernel_turns(freqs_key: bytes, integer: bool = True) -> tuple[np.ndarray, ...]:
    """``(v1, v2, V)``: the host turns of the NumPy kernels (eager code
    only); ``(v1, v2)`` for real positions, which never read ``V``."""
    t = _turns(freqs_key)
    return (t.v1, t.v2, fixed_turns(freqs_key)) if integer else (t.v1, t.v2)


def laid_out_fixed(freqs_key: bytes, layout: str) -> np.ndarray:
    """:func:`fixed_turns` laid out as a RoPE table's columns: ``[V, V]``
    (``"half"``) or each value twice (``"interleaved"``); cached, read-only."""
    key = ("fixed-turns", freqs_key, layout)
    got = _cache.HOST.get(key)
    if got is None:
        v = fixed_turns(freqs_key)
        (got,) = _cache.readonly(np.concatenate([v, v]) if layout == "half" else np.repeat(v, 2))
        _cache.HOST.put(key, got, got.nbytes)
    return got


@host_constant
def freqs_array(freqs_key: bytes) -> np.ndarray:
    """The float64 frequencies of :class:`Freqs` bytes: a fresh host array
    (a copy: torch's tracer takes only arrays that own their memory as
    constants)."""
    return _parts(freqs_key)[0].copy()


def turn_arrays(freqs_key: bytes, names: tuple[str, ...]) -> np.ndarray:
    """The :class:`Turns` arrays ``names`` of :class:`Freqs` bytes stacked,
    shape ``(len(names), m)`` (one :func:`posenc._trace.graph_constant`)."""
    t = _turns(freqs_key)
    return np.stack([getattr(t, n) for n in names])


def max_position() -> np.ndarray:
    """``MAX_POSITION`` as a 0-d host array (a graph constant)."""
    return np.asarray(MAX_POSITION)


@host_constant
def host_sincos(p: float, freqs: Freqs | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sin, cos)`` of ``p * freqs`` for one host position ``p``, float64 NumPy.

    The float64 array path of :func:`sincos` on the host (same clipping of
    ``p`` and ``freqs``): for positions given as Python numbers, whose angles
    do not depend on the device's precision.
    """
    p = min(max(float(p), -MAX_POSITION), MAX_POSITION)
    s, c = _host_sincos_turns(np.array([p]), _turns(as_freqs(freqs).key))
    return s[0], c[0]
