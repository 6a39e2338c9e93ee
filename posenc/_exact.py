r"""The frequencies from their mathematical definitions, to about 106 bits.

Every family's frequencies are closed forms of its Python arguments: a
geometric sequence :math:`A e^{-c i}` (:math:`b^{-2i/d}`, fairseq's and
tensor2tensor's timescales, diffusion timesteps, grids, the NTK bases) and a
scaling's blend of such sequences (linear, YaRN, Llama 3, LongRoPE,
proportional).  They are evaluated here as the exact real numbers of those
formulas, with the float64 arguments read as the rationals they are:

* the scalars (``ln b``, the exponent step ``c``, YaRN's ramp bounds,
  Llama 3's thresholds) in exact rational arithmetic (:class:`fractions.Fraction`;
  a geometric sequence's fast path keeps its rationals as pairs of integers)
  and fixed-point logarithms and exponentials of Python integers
  (:func:`ln`, :func:`exp_scaled`: to about 2**-128, and 2**-340 in the
  fallback);
* the vectors in double-double arithmetic (:class:`DD`: a value is ``hi +
  lo``, two float64 NumPy arrays): a geometric sequence is the outer product
  of two short ones (``sqrt(m)`` powers each, made exactly in integers and
  rounded once to pairs), then a scaling's few vector operations (Dekker's
  products, Knuth's sums, the division of Bailey's QD library), each within
  a few 2**-104 relative.

The float64 frequency is ``hi``, correctly rounded: :func:`evaluate` checks
that every ``hi + lo`` decides its rounding with a margin of 2**-96 (far
above the errors) and recomputes the entries that do not, and those outside
the range where a pair keeps 106 bits (beyond 2**990 or below 2**-960), with
the same formula in :class:`Dec` (Python's :mod:`decimal` at 100 digits,
scalars to 2**-340).  A value beyond the float64 range comes back as ``inf``
(the callers refuse it).

Host NumPy and the standard library only (no mpmath at run time; the tests
compare every family with it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Context, Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np

from ._kernels.eft import two_sum

__all__ = ["DD", "Dec", "evaluate", "exp_scaled", "frac", "geometric", "ln", "pi", "times"]

_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitter
#: beyond these magnitudes a double-double pair loses bits (or its split overflows)
_TOP = 2.0**990
_BOTTOM = 2.0**-960
#: the relative margin within which a double-double value does not decide the rounding
_MARGIN = 2.0**-96
#: decimal digits of the fallback
_DIGITS = 100


# --------------------------------------------------------------------------
# scalars: exact rationals, fixed-point logarithms and exponentials
# --------------------------------------------------------------------------
def frac(x: Any) -> Fraction:
    """A Python real (float, int, NumPy scalar, Fraction) as the exact rational it is."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return Fraction(int(x))
    return Fraction(float(x))


def _ratio(x: Any) -> tuple[int, int]:
    """:func:`frac` as the integers ``(numerator, denominator)`` (in lowest
    terms, the denominator positive) without a :class:`Fraction`: the scalar
    steps of a first call run on Python integers alone."""
    if isinstance(x, Fraction):
        return x.numerator, x.denominator
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x), 1
    return float(x).as_integer_ratio()


#: the working precision of the constants below (bits); every use is below it
_CONST_BITS = 640


def _ln2_digits() -> int:
    """``ln 2 * 2**_CONST_BITS`` rounded down (``2 atanh(1/3)``, integers only)."""
    one = 1 << (_CONST_BITS + 16)
    term, total, k = one // 3, 0, 1
    while term:
        total += term // k
        term //= 9
        k += 2
    return (2 * total) >> 16


def _pi_digits() -> int:
    """``pi * 2**_CONST_BITS`` (Machin's formula in integers)."""
    one = 1 << (_CONST_BITS + 16)

    def arctan_inv(n: int) -> int:
        total, term, k, sign, n2 = 0, one // n, 1, 1, n * n
        while term:
            total += sign * (term // k)
            term //= n2
            k += 2
            sign = -sign
        return total

    return (4 * (4 * arctan_inv(5) - arctan_inv(239))) >> 16


_LN2_DIGITS = _ln2_digits()
_PI_DIGITS = _pi_digits()


def _ln2_fixed(g: int) -> int:
    """``ln 2 * 2**g`` rounded down (``g <= 640``)."""
    return _LN2_DIGITS >> (_CONST_BITS - g)


def pi(bits: int) -> Fraction:
    """pi to about ``2**-bits`` (``bits <= 620``)."""
    g = bits + 16
    return Fraction(_PI_DIGITS >> (_CONST_BITS - g), 1 << g)


def ln(x: Any, bits: int) -> Fraction:
    """``ln x`` of a positive rational to about ``2**-bits`` absolute (or
    better): ``y = math.log(x)`` corrected by ``ln(1 + t) = t - t**2/2 +
    t**3/3`` with ``1 + t = x exp(-y)`` (``|t| < 2**-50``) in integers; where
    ``math.log`` does not apply (beyond the float64 range, or ``x`` near 1
    where ``t`` is not small relative to ``ln x``) the series of
    :func:`_ln_series` (:func:`_ln_ratio`)."""
    num, den = _ratio(x)
    if num <= 0:
        msg = f"ln of a non-positive number {x!r}"
        raise ValueError(msg)
    return Fraction(*_ln_ratio(num, den, bits))


def _ln_ratio(num: int, den: int, bits: int) -> tuple[int, int]:
    """:func:`ln` of ``num / den > 0`` as integers ``(n, d)``, ``d > 0`` (not
    reduced)."""
    try:
        y = math.log(num / den)  # (the float of the rational, as Fraction's)
    except (OverflowError, ValueError):
        return _ln_series(num, den, bits)
    if abs(y) < 0.5:
        return _ln_series(num, den, bits)
    g = bits + 24
    n, s = _exp_fixed(*(-y).as_integer_ratio(), bits + 16)
    # t = x exp(-y) - 1 in units 2**-g
    num *= n
    t = ((num << (g + s)) // den if g + s >= 0 else (num // den) >> -(g + s)) - (1 << g)
    t2 = (t * t) >> g
    t3 = (t2 * t) >> g
    yn, yd = y.as_integer_ratio()  # y + (t - t2/2 + t3/3) 2**-g
    return (yn << g) + (t - t2 // 2 + t3 // 3) * yd, yd << g


def _ln_series(num: int, den: int, bits: int) -> tuple[int, int]:
    """``ln(num / den)`` as ``e ln 2 + 2 atanh((m - 1)/(m + 1))`` with ``m``
    in ``[1/sqrt 2, sqrt 2)`` (integers only; ``(n, 2**g)``)."""
    e = num.bit_length() - den.bit_length()
    # m = q / 2**e in [1/2, 2); move it into [1/sqrt 2, sqrt 2): m^2 against 2 (exact)
    n, d = (num, den << e) if e >= 0 else (num << -e, den)
    if 2 * n * n < d * d:
        n, e = 2 * n, e - 1
    elif n * n >= 2 * d * d:
        d, e = 2 * d, e + 1
    g = bits + 24
    # atanh is odd: the series of |t| (every term >= 0, so it ends), then the sign
    t = (abs(n - d) << g) // (n + d)
    t2 = (t * t) >> g
    total, term, k = 0, t, 1
    while term:
        total += term // k
        term = (term * t2) >> g
        k += 2
    return e * _ln2_fixed(g) + (2 * total if n >= d else -2 * total), 1 << g


def exp_scaled(x: Fraction, bits: int) -> tuple[int, int]:
    """``exp(x)`` as ``n * 2**s`` with ``n`` of about ``bits + 8`` bits, to
    about ``2**-bits`` relative (``k ln 2`` reduction, ``2**-8`` scaling,
    the series, eight squarings; integers only: :func:`_exp_fixed`)."""
    return _exp_fixed(x.numerator, x.denominator, bits)


def _exp_fixed(num: int, den: int, bits: int) -> tuple[int, int]:
    """:func:`exp_scaled` of ``num / den`` (``den > 0``; the result depends
    on the value alone)."""
    g = bits + 24
    l2 = _ln2_fixed(g)
    xf = (num << g) // den
    k = xf // l2  # floor(x / ln 2): 0 <= r < 2**-8 ln 2 (in units 2**-g), every term >= 0
    r = (xf - k * l2) >> 8
    one = 1 << g
    total, term, j = one, one, 1
    while term:
        term = (term * r >> g) // j
        total += term
        j += 1
    for _ in range(8):
        total = (total * total) >> g
    return total, k - g


def _split_pairs(values: list[tuple[int, int]]) -> np.ndarray:
    """``n * 2**s`` for each ``(n, s)`` as float64 pairs ``hi + lo``: the
    leading 53 and the next 53 bits of ``n`` (truncated: ``0 <= lo <
    ulp(hi)`` in magnitude, not normalised; exact to 2**-105 relative; inf
    or 0 beyond the float64 range, which :func:`evaluate` recomputes), with
    Veltkamp's split of each ``hi`` (:func:`_split`: the factors of Dekker's
    products): one float64 array of shape ``(4, len(values))``, the rows
    ``hi``, ``lo`` and the split's two parts.

    Python floats scaled by :func:`math.ldexp` (exact, or rounded once
    below the normal range, as NumPy's ``ldexp``), one array at the end (a
    first call pays for each NumPy call it makes more than for the values);
    a value beyond the float64 range makes the loop run again with
    :func:`_ldexp`."""
    try:
        return _pairs_of(values, math.ldexp)
    except OverflowError:
        return _pairs_of(values, _ldexp)


def _pairs_of(values: list[tuple[int, int]], ldexp: Callable[[float, int], float]) -> np.ndarray:
    rows: list[list[float]] = [[], [], [], []]
    heads, tails, tops, rests = rows
    for n, s in values:
        m = -n if n < 0 else n
        extra = m.bit_length() - 106
        t = m >> extra if extra > 0 else m << -extra
        e = s + extra
        h, low = ldexp(float(t >> 53), e + 53), ldexp(float(t & _LOW53), e)
        if n < 0:
            h, low = -h, -low
        heads.append(h)
        tails.append(low)
        # the head's split, in Python floats (inf and NaN as NumPy's would
        # make them: the check of the products declines them)
        top, rest = _split(h)
        tops.append(top)
        rests.append(rest)
    return np.array(rows)


#: the low 53 bits of an integer
_LOW53 = (1 << 53) - 1


def _ldexp(x: float, e: int) -> float:
    """``x * 2**e`` (``x >= 0``), inf beyond the float64 range."""
    try:
        return math.ldexp(x, e)
    except OverflowError:
        return math.inf


def _pair_of(q: Fraction) -> tuple[float, float]:
    """A rational as a float64 pair (``hi`` correctly rounded)."""
    try:
        hi = float(q)
    except OverflowError:
        return (math.inf if q > 0 else -math.inf), 0.0
    if hi == 0.0 or not math.isfinite(hi):
        return hi, 0.0
    return hi, float(q - Fraction(hi))


def _powers(num: int, den: int, count: int, bits: int) -> list[tuple[int, int]]:
    """``exp(x * j)`` of ``x = num / den`` for ``j < count`` as ``(n, s)``
    pairs (``n * 2**s``), by repeated products of ``exp(x)`` kept to ``bits +
    8`` bits."""
    n1, s1 = _exp_fixed(num, den, bits)
    out = [(1, 0)]
    n, s = 1, 0
    keep = bits + 8
    for _ in range(count - 1):
        n, s = n * n1, s + s1
        extra = n.bit_length() - keep
        if extra > 0:
            n, s = n >> extra, s + extra
        out.append((n, s))
    return out


def _times(ns: tuple[int, int], a: tuple[int, int]) -> tuple[int, int]:
    """``n * 2**s * a`` as ``(n', s')`` (``a`` a positive rational's
    :func:`_ratio`; exact for a dyadic ``a``, else to 2**-200 relative)."""
    n, s = ns
    num, den = a
    if den & (den - 1) == 0:  # a power of two
        return n * num, s - (den.bit_length() - 1)
    return (n * num << 200) // den, s - 200


def _geometric_pairs(c: tuple[int, int], m: int, a: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """``a * exp(-c i)`` for ``0 < m`` values ``i`` as the float64 pair
    arrays of :meth:`DD.geometric` (``c`` and ``a`` rationals as integer
    pairs, ``a`` in lowest terms): the outer product of ``B`` powers and
    ``ceil(m / B)`` strides, each rounded once to a pair.  Values beyond the
    range give inf and NaN, which :func:`evaluate` recomputes: the NumPy
    operations run under ``np.errstate(all="ignore")`` unless every factor
    and both ends of the products lie within :data:`QUIET` (then no
    operation can raise a floating-point flag but inexact, see
    :func:`_quiet`, and a first call spares the error state's switch)."""
    b = max(1, math.isqrt(m - 1) + 1)
    rows = -(-m // b)
    cn, cd = c
    small = _powers(-cn, cd, b, DD.BITS)
    big = _powers(-cn * b, cd, rows, DD.BITS)
    # (both lists in one conversion: its NumPy calls cost more than its values)
    if a != (1, 1):
        big = [_times(ns, a) for ns in big]
    # the outer product, as DD(h[b:, None], lo[b:, None]) * DD(h[:b], lo[:b])
    # computes it (Dekker's product, the splits made once per factor)
    f = _split_pairs(small + big)  # (the rows hi, lo and hi's two parts)
    # the products run over i < b * rows (past m - 1 where b does not divide
    # m), monotone: big[0] and big[-1] * small[-1] are their ends
    last = big[-1][0] * small[-1][0], big[-1][1] + small[-1][1]
    y, x = f[:, b:, None], f[:, :b]
    if _quiet(last, *small, *big):
        s, e = _product(y[0], y[1], x[0], x[1], (y[2], y[3]), (x[2], x[3]))
    else:
        with np.errstate(all="ignore"):
            s, e = _product(y[0], y[1], x[0], x[1], (y[2], y[3]), (x[2], x[3]))
    return s.reshape(-1)[:m], e.reshape(-1)[:m]


#: the binary exponents within which the double-double operations of
#: :func:`_geometric_pairs` and :func:`times` raise no floating-point flag
#: but inexact (:func:`_quiet`)
QUIET = 800


def quiet_floats(*values: float) -> bool:
    """Whether every ``|v|`` of ``values`` (Python floats: the ends of a
    monotone sequence) lies within ``[2**-800, 2**800]`` (:func:`_quiet`;
    the ``quiet`` of :func:`times`)."""
    return all(_QUIET_LOW <= abs(v) <= _QUIET_HIGH for v in values)


_QUIET_LOW, _QUIET_HIGH = 2.0**-QUIET, 2.0**QUIET


def _quiet(*values: tuple[int, int]) -> bool:
    """Whether every ``n * 2**s`` of ``values`` (``n != 0``) lies within
    ``[2**-800, 2**800)`` in magnitude (``2**(L + s - 1) <= |n| 2**s <
    2**(L + s)`` with ``L`` the bits of ``|n|``).

    Where the factors of :func:`_geometric_pairs` and the ends of the
    products it computes (so every product) lie there, each term of Dekker's products is
    zero or at least ``2**-106`` times a product of heads (a split part is a
    multiple of its head's ulp, a rest of 106 truncated bits at least
    ``2**-106`` of its head), so above ``2**-906``, and below ``2**830``;
    their exact differences and the pairs' rests lie on grids of ``2**-960``
    or coarser, in the normal range.  No operation overflows,
    underflows or is invalid, whatever ``np.seterr`` a caller set (likewise
    :func:`times` of such values with ``1 / (2 pi)``)."""
    for n, s in values:
        e = n.bit_length() + s
        if not -QUIET < e <= QUIET:
            return False
    return True


# --------------------------------------------------------------------------
# error-free transformations (float64 NumPy arrays; Knuth's two-sum is
# posenc._kernels.eft's)
# --------------------------------------------------------------------------
def _fast_two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    s = a + b
    return s, b - (s - a)


def _split(a: Any) -> tuple[Any, Any]:
    t = a * _SPLIT
    hi = t - (t - a)
    return hi, a - hi


def _product(ah: Any, al: Any, bh: Any, bl: Any, a_split: tuple[Any, Any], b_split: tuple[Any, Any]) -> tuple[Any, Any]:
    """``(ah + al) * (bh + bl)`` as a normalised pair: Dekker's product of
    the heads (``a_split``, ``b_split``: their :func:`_split`, made once per
    factor where one factor meets many), the cross terms, one fast two-sum."""
    (a1, a2), (b1, b2) = a_split, b_split
    p = ah * bh
    e = (((a1 * b1 - p) + a1 * b2 + a2 * b1) + a2 * b2) + (ah * bl + al * bh)
    s = p + e
    return s, e - (s - p)


# --------------------------------------------------------------------------
# the vectors: double-double (fast path) and decimal (fallback)
# --------------------------------------------------------------------------
class DD:
    """Double-double values ``hi + lo`` (float64 NumPy arrays, ``|lo| <=
    ulp(hi) / 2``) with the operations of the frequency formulas.  ``BITS``:
    the precision of the formulas' scalars."""

    __slots__ = ("hi", "lo")
    BITS = 128

    def __init__(self, hi: Any, lo: Any = None) -> None:
        self.hi = np.asarray(hi, dtype=np.float64)
        self.lo = np.zeros_like(self.hi) if lo is None else np.asarray(lo, dtype=np.float64)

    @classmethod
    def const(cls, x: Any) -> DD:
        """A Python real or rational (``hi`` correctly rounded)."""
        return cls(*_pair_of(frac(x)))

    @classmethod
    def arange(cls, n: int) -> DD:
        return cls(np.arange(n, dtype=np.float64))

    @classmethod
    def array(cls, values: Any) -> DD:
        """float64 values, exactly."""
        return cls(np.asarray(values, dtype=np.float64).reshape(-1))

    @classmethod
    def geometric(cls, c: Fraction, m: int, a: Fraction = Fraction(1)) -> DD:
        """``a * exp(-c i)`` for ``i < m``: the outer product of ``B``
        powers and ``ceil(m / B)`` strides, each rounded once to a pair."""
        if m == 0:
            return cls(np.zeros(0))
        return cls(*_geometric_pairs((c.numerator, c.denominator), m, (a.numerator, a.denominator)))

    @classmethod
    def two_pi(cls) -> DD:
        return cls.const(2 * pi(cls.BITS))

    @staticmethod
    def where(cond: Any, a: DD, b: DD) -> DD:
        return DD(np.where(cond, a.hi, b.hi), np.where(cond, a.lo, b.lo))

    @staticmethod
    def _of(x: Any) -> DD:
        if isinstance(x, DD):
            return x
        return DD(x) if isinstance(x, np.ndarray) else DD.const(x)

    def __neg__(self) -> DD:
        return DD(-self.hi, -self.lo)

    def __add__(self, other: Any) -> DD:
        o = DD._of(other)
        s, e = two_sum(self.hi, o.hi)
        t, f = two_sum(self.lo, o.lo)
        s, e = _fast_two_sum(s, e + t)
        return DD(*_fast_two_sum(s, e + f))

    __radd__ = __add__

    def __sub__(self, other: Any) -> DD:
        return self + (-DD._of(other))

    def __rsub__(self, other: Any) -> DD:
        return DD._of(other) + (-self)

    def __mul__(self, other: Any) -> DD:
        o = DD._of(other)
        return DD(*_product(self.hi, self.lo, o.hi, o.lo, _split(self.hi), _split(o.hi)))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> DD:
        o = DD._of(other)
        q1 = self.hi / o.hi
        r = self - o * q1
        q2 = r.hi / o.hi
        r = r - o * q2
        q3 = r.hi / o.hi
        return DD(*_fast_two_sum(q1, q2)) + q3

    def __rtruediv__(self, other: Any) -> DD:
        return DD._of(other) / self

    def __lt__(self, other: Any) -> Any:
        return (self - other).hi < 0.0

    def __gt__(self, other: Any) -> Any:
        return (self - other).hi > 0.0

    def __le__(self, other: Any) -> Any:
        return (self - other).hi <= 0.0

    def __ge__(self, other: Any) -> Any:
        return (self - other).hi >= 0.0


def _dec(x: Any) -> Decimal:
    """A Python real or rational as a decimal (at the context's precision)."""
    q = frac(x)
    return Decimal(q.numerator) / Decimal(q.denominator)


def _objects(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class Dec:
    """The values of :class:`DD` as Python decimals (object arrays) at the
    context's precision (:func:`evaluate`: 100 digits), scalars to
    2**-``BITS``: the fallback of the entries double-double does not decide,
    and an oracle of the tests."""

    __slots__ = ("v",)
    BITS = 340

    def __init__(self, v: Any) -> None:
        self.v = np.asarray(v, dtype=object) if not isinstance(v, np.ndarray) else v

    @classmethod
    def const(cls, x: Any) -> Dec:
        return cls(np.asarray(_dec(x), dtype=object))

    @classmethod
    def arange(cls, n: int) -> Dec:
        return cls(_objects([Decimal(i) for i in range(n)]))

    @classmethod
    def array(cls, values: Any) -> Dec:
        return cls(_objects([Decimal(float(v)) for v in np.asarray(values, dtype=np.float64).reshape(-1)]))

    @classmethod
    def geometric(cls, c: Fraction, m: int, a: Fraction = Fraction(1)) -> Dec:
        out = []
        ratio = (a.numerator, a.denominator)
        for n, s in _powers(-c.numerator, c.denominator, m, cls.BITS):
            n, s = _times((n, s), ratio)
            out.append(Decimal(n) * Decimal(2) ** s)
        return cls(_objects(out))

    @classmethod
    def two_pi(cls) -> Dec:
        return cls.const(2 * pi(cls.BITS))

    @staticmethod
    def where(cond: Any, a: Dec, b: Dec) -> Dec:
        return Dec(np.where(cond, a.v, b.v))

    @staticmethod
    def _of(x: Any) -> Any:
        if isinstance(x, Dec):
            return x.v
        if isinstance(x, np.ndarray):
            return Dec.array(x).v
        return _dec(x)

    def __neg__(self) -> Dec:
        return Dec(-self.v)

    def __add__(self, other: Any) -> Dec:
        return Dec(self.v + Dec._of(other))

    __radd__ = __add__

    def __sub__(self, other: Any) -> Dec:
        return Dec(self.v - Dec._of(other))

    def __rsub__(self, other: Any) -> Dec:
        return Dec(Dec._of(other) - self.v)

    def __mul__(self, other: Any) -> Dec:
        return Dec(self.v * Dec._of(other))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Dec:
        return Dec(self.v / Dec._of(other))

    def __rtruediv__(self, other: Any) -> Dec:
        return Dec(Dec._of(other) / self.v)

    def __lt__(self, other: Any) -> Any:
        return np.asarray(self.v < Dec._of(other), dtype=bool)

    def __gt__(self, other: Any) -> Any:
        return np.asarray(self.v > Dec._of(other), dtype=bool)

    def __le__(self, other: Any) -> Any:
        return np.asarray(self.v <= Dec._of(other), dtype=bool)

    def __ge__(self, other: Any) -> Any:
        return np.asarray(self.v >= Dec._of(other), dtype=bool)


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------
def _undecided(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Entries whose pair does not decide the float64 rounding (within the
    margin of a midpoint) or lies outside the range of 106-bit pairs.

    Both sides are held to half the spacing below ``|hi|`` (half the one
    above except at powers of two, where it is a quarter: a few such entries
    are recomputed that needed not be); NaN and infinite values fail every
    comparison.  Fifteen operations on small arrays: a first call pays each
    one's dispatch."""
    a = np.abs(hi)
    with np.errstate(all="ignore"):
        bound = (a - np.nextafter(a, 0.0)) * 0.5 - a * _MARGIN
        ok = (np.abs(lo) < bound) & (a <= _TOP) & (a >= _BOTTOM)
    return ~ok & (hi != 0.0)


def evaluate(formula: Callable[..., Any], *args: Any) -> tuple[np.ndarray, np.ndarray]:
    """``formula(N, *args)`` (``N`` one of :class:`DD`, :class:`Dec`) as
    float64 arrays ``(hi, lo)``: ``hi`` correctly rounded (``inf`` beyond the
    float64 range), ``hi + lo`` within about 2**-100 relative (in the normal
    range; below 2**-960 ``lo`` is 0).  A zero of the formula (a still pair)
    must be an exact zero of both classes."""
    if formula is geometric and len(args) >= 3 and type(args[2]) is int and args[2] > 0:
        got = _geometric_decided(*args)
        if got is not None:
            return got
    with np.errstate(all="ignore"):
        y = formula(DD, *args)
        hi = np.array(y.hi, dtype=np.float64).reshape(-1)
        ylo = y.lo if y.lo.shape == y.hi.shape else np.broadcast_to(y.lo, y.hi.shape)
        lo = np.array(ylo, dtype=np.float64).reshape(-1)
        lo[hi == 0.0] = 0.0
        undecided = _undecided(hi, lo)
    if undecided.any():
        with localcontext(Context(prec=_DIGITS, Emax=10**7, Emin=-(10**7))):
            z = np.broadcast_to(np.asarray(formula(Dec, *args).v, dtype=object), hi.shape)
            for j in np.flatnonzero(undecided).tolist():
                h, low = _pair_of(Fraction(z[j]))
                hi[j], lo[j] = h, (0.0 if abs(h) < _BOTTOM else low)
    return hi, lo


def geometric(n: Any, base: Any, step: Any, m: int, a: Any = 1) -> Any:
    """The formula ``a * base ** (-step i)`` for ``i < m`` (``base > 0``,
    ``step`` and ``a`` rationals) as numbers of class ``n`` (:class:`DD` or
    :class:`Dec`): for :func:`evaluate`."""
    return n.geometric(frac(step) * ln(base, n.BITS), m, frac(a))


def _geometric_decided(base: Any, step: Any, m: int, a: Any = 1) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`evaluate` of :func:`geometric` where double-double decides
    every entry (the same arrays), else None: the pairs and their check,
    without the vector objects and copies of the general path, the scalars
    in Python integers without a :class:`Fraction` (a first call of a
    frequency table pays for each NumPy call it makes, and for each distinct
    function it runs).

    The check is :func:`_undecided`'s in three operations.  A geometric
    sequence is monotone in magnitude, so its ends (Python floats) bound it
    within the range of 106-bit pairs, without zeros, NaN or inf (to the
    pairs' 2**-100: the range's bounds have a margin far above it).  Inside
    it ``hi`` is the correctly rounded value when ``hi + lo (1 + 2**-40)``
    rounds to ``hi``: then ``|lo| (1 + 2**-40)`` is at most half the spacing
    on ``lo``'s side of ``hi``, which is at least ``|hi| 2**-54``, so ``|lo|``
    stays below it by more than ``|hi| 2**-96``, the margin of
    :func:`_undecided` (which also declines positive rests above a quarter
    spacing at powers of two, where this check rightly accepts them: an exact
    power of two rounded from an irrational value, about ``2**-53`` of
    entries)."""
    num, den = _ratio(base)
    if num <= 0:
        return None  # (ln's error, from the general path)
    sn, sd = _ratio(step)
    ln_n, ln_d = _ln_ratio(num, den, DD.BITS)
    # c = step * ln(base) as integers (not reduced: every use is a floor of its value)
    hi, lo = _geometric_pairs((sn * ln_n, sd * ln_d), m, _ratio(a))
    first, last = abs(float(hi[0])), abs(float(hi[-1]))
    if not (_BOTTOM <= first <= _TOP and _BOTTOM <= last <= _TOP):  # (NaN compares False)
        return None  # (zeros and the rest: the general path)
    # every entry lies within the ends: finite and nonzero, where bitwise
    # equality is equality (two operations and a comparison of bytes)
    if quiet_floats(first, last):
        decided = _rounds_to(hi, lo)
    else:
        with np.errstate(all="ignore"):
            decided = _rounds_to(hi, lo)
    return (hi, lo) if decided else None


def _rounds_to(hi: np.ndarray, lo: np.ndarray) -> bool:
    """Whether ``hi + lo (1 + 2**-40)`` rounds to ``hi`` in every entry
    (finite, nonzero entries)."""
    return (hi + lo * _DECIDE).tobytes() == hi.tobytes()


#: ``1 + 2**-40``: :func:`_geometric_decided`'s rests stretched past the margin
_DECIDE = 1.0 + 2.0**-40


def times(
    hi: np.ndarray, lo: np.ndarray, c: tuple[float, float], *, quiet: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``(hi + lo) * (c[0] + c[1])`` as a normalised float64 pair (host arrays;
    the constant split once, in Python floats: the same roundings).
    ``quiet``: ``(hi, lo)`` are :func:`evaluate`'s pairs with every nonzero
    ``|hi|`` within ``[2**-800, 2**800]`` and ``c`` a normalised pair of
    magnitude about 1 (such as ``1 / (2 pi)``): no floating-point flag can
    arise (:func:`_quiet`), and no error state is switched."""
    c0, c1 = float(c[0]), float(c[1])
    hi = np.asarray(hi, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    if quiet:
        return _product(hi, lo, c0, c1, _split(hi), _split(c0))
    with np.errstate(all="ignore"):
        return _product(hi, lo, c0, c1, _split(hi), _split(c0))
