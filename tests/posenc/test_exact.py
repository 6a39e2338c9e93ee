"""One definition of exact: every family's tables against the mathematical
values of its frequencies, computed here with mpmath (200 bits) from each
family's formula.

* the float64 frequencies are the correctly rounded values of the formulas
  (``base ** (-2i/d)``, the scalings' closed forms, ...), and posenc carries
  each one (and its turns, ``w / 2 pi``) to about 106 bits;
* float32 tables are within ``BOUND = 2.5e-7`` of ``sin(p w)``, ``cos(p w)``
  for every integer ``|p| < 2**31`` and real ``|p| < 2**22``; float64 tables
  within ``BOUND64 = 1e-15`` for integer ``|p| < 2**53`` and real ``|p| <
  2**40`` (positions chosen hard: the ends of the ranges, and random).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest

import posenc
from benchmarks.accuracy import BOUND, BOUND64
from posenc import _angles, _exact, _rope, grid, timesteps
from posenc import scaling as S

MP = mpmath.mpf


def _mp_rope(d: int, b: float) -> list[Any]:
    return [MP(b) ** (-MP(2 * i) / d) for i in range(d // 2)]


def _mp_yarn(s: S.YaRN, d: int, b: float) -> list[Any]:
    def dim_of(rot: float) -> Any:
        return d * mpmath.log(s.original_max_positions / (MP(rot) * 2 * mpmath.pi)) / (2 * mpmath.log(b))

    low, high = dim_of(s.beta_fast), dim_of(s.beta_slow)
    if s.truncate:
        low, high = mpmath.floor(low), mpmath.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += MP(0.001)
    out = []
    for i, w in enumerate(_mp_rope(d, b)):
        ramp = min(max((i - low) / (high - low), 0), 1)
        out.append(w / s.factor * ramp + w * (1 - ramp))
    return out


def _mp_llama3(s: S.Llama3, d: int, b: float) -> list[Any]:
    old, lo, hi = MP(s.original_max_positions), MP(s.low_freq_factor), MP(s.high_freq_factor)
    out = []
    for w in _mp_rope(d, b):
        wl = 2 * mpmath.pi / w
        if wl < old / hi:
            out.append(w)
        elif wl > old / lo:
            out.append(w / s.factor)
        else:
            smooth = (old / wl - lo) / (hi - lo)
            out.append((1 - smooth) * w / s.factor + smooth * w)
    return out


def _mp_scaled(s: Any, d: int, b: float, seq_len: int | None) -> list[Any]:
    """The mathematical inverse frequencies of each scaling, written from its docstring."""
    if s is None:
        return _mp_rope(d, b)
    if isinstance(s, S.Linear):
        return [w / s.factor for w in _mp_rope(d, b)]
    if isinstance(s, S.NTK):
        return [(b * MP(s.factor) ** (MP(d) / (d - 2))) ** (-MP(2 * i) / d) for i in range(d // 2)]
    if isinstance(s, S.DynamicNTK):
        L0 = s.original_max_positions
        grow = MP(s.factor) * max(seq_len or L0, L0) / L0 - (MP(s.factor) - 1)
        return [(b * grow ** (MP(d) / (d - 2))) ** (-MP(2 * i) / d) for i in range(d // 2)]
    if isinstance(s, S.YaRN):
        return _mp_yarn(s, d, b)
    if isinstance(s, S.Llama3):
        return _mp_llama3(s, d, b)
    if isinstance(s, S.LongRoPE):
        ext = s.long_factor if seq_len is not None and seq_len > s.original_max_positions else s.short_factor
        return [w / MP(e) for w, e in zip(_mp_rope(d, b), ext)]
    if isinstance(s, S.Proportional):
        r = int(s.fraction * d // 2)
        return [w / s.factor if i < r else MP(0) for i, w in enumerate(_mp_rope(d, b))]
    raise AssertionError(s)


def _mp_timesteps(d: int, shift: float, scale: float, period: float) -> list[Any]:
    h = d // 2
    den = h - MP(shift) if h > 1 else MP(1)
    return [scale * MP(period) ** (-MP(i) / den) for i in range(h)]


def _mp_sinusoidal(d: int, b: float, convention: str, lo: float = 1.0, hi: float | None = None) -> list[Any]:
    h = d // 2
    if convention == "paper":
        return [MP(b) ** (-MP(2 * i) / d) for i in range(h)]
    if convention == "fairseq":
        return [MP(b) ** (-MP(i) / max(h - 1, 1)) for i in range(h)]
    hi = b if hi is None else hi
    return [lo * (MP(hi) / lo) ** (-MP(i) / max(h - 1, 1)) for i in range(h)]


SCALINGS = [
    None,
    S.Linear(4.0),
    S.Linear(3.0),
    S.NTK(8.0),
    S.DynamicNTK(2.0, 2048),
    S.YaRN(16.0, 4096, attention_factor=1.0),
    S.YaRN(32.0, 4096, beta_fast=32.0, beta_slow=1.0, truncate=False, attention_factor=1.0),
    S.Llama3(8.0, 8192),
    S.Llama3(32.0, 8192, 1.0, 4.0),
    S.LongRoPE([1.0 + 0.37 * k for k in range(32)], [3.0 + 0.7 * k for k in range(32)], 4096, attention_factor=1.0),
    S.Proportional(0.25, 2.0),
]
SEQ_LEN = 10000  # beyond the original lengths: DynamicNTK grows, LongRoPE takes long_factor


def _mp_pair(x: Any) -> tuple[float, float]:
    hi = float(x)
    return hi, float(x - MP(hi))


# --------------------------------------------------------------------------
# the frequencies: correctly rounded, and 106 bits with their turns
# --------------------------------------------------------------------------
def _check_freqs(freqs: Any, exact: list[Any]) -> None:
    hi, lo, vh, vl = freqs.pairs()
    with mpmath.workprec(200):
        want = np.array([float(x) for x in exact])
        np.testing.assert_array_equal(hi, want)  # correctly rounded
        for h, low, th, tl, x in zip(hi, lo, vh, vl, exact):
            if x == 0:
                assert h == low == th == tl == 0.0
                continue
            assert abs((MP(h) + MP(low)) / x - 1) < MP(2) ** -100
            assert abs((MP(th) + MP(tl)) * 2 * mpmath.pi / x - 1) < MP(2) ** -100


@pytest.mark.parametrize("scaling", SCALINGS, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize(("dim", "base"), [(64, 10000.0), (128, 500000.0), (96, 1e6)])
def test_rope_frequencies_are_the_correctly_rounded_values(scaling: Any, dim: int, base: float) -> None:
    if isinstance(scaling, S.LongRoPE) and dim != 64:
        short, long = [1.0 + 0.1 * k for k in range(dim // 2)], [2.0 + 0.3 * k for k in range(dim // 2)]
        scaling = S.LongRoPE(short, long, 4096, attention_factor=1.0)
    with mpmath.workprec(200):
        exact = _mp_scaled(scaling, dim, base, SEQ_LEN)
    freqs = _rope.inv_freq_of(dim, base, scaling, SEQ_LEN)[3]
    _check_freqs(freqs, exact)
    # the public float64 frequencies are the same values
    np.testing.assert_array_equal(
        posenc.rope_frequencies(dim, base=base, scaling=scaling, seq_len=SEQ_LEN, dtype="float64"), freqs.array
    )


@pytest.mark.parametrize(
    ("dim", "base", "kw"),
    [
        (128, 10000.0, {"convention": "paper"}),
        (512, 10000.0, {"convention": "paper"}),
        (100, 1e4, {"convention": "fairseq"}),
        (64, 1e4, {"convention": "tensor2tensor", "min_timescale": 3.0, "max_timescale": 1e5}),
    ],
)
def test_sinusoidal_frequencies_are_the_correctly_rounded_values(dim: int, base: float, kw: dict[str, Any]) -> None:
    from posenc.sinusoidal import freq_args

    lo, hi = kw.get("min_timescale", 1.0), kw.get("max_timescale")
    with mpmath.workprec(200):
        exact = _mp_sinusoidal(dim, base, kw["convention"], lo, hi)
    freqs = freq_args(dim, base, kw["convention"], kw.get("min_timescale"), kw.get("max_timescale"))[1]
    _check_freqs(freqs, exact)
    np.testing.assert_array_equal(posenc.frequencies(dim, base=base, **kw), freqs.array)


def test_frequencies_and_rope_frequencies_agree() -> None:
    """The issue's reproducer: they disagreed in 24 of 64 entries, and neither was correctly rounded."""
    with mpmath.workprec(200):
        want = np.array([float(x) for x in _mp_rope(128, 10000.0)])
    np.testing.assert_array_equal(posenc.frequencies(128), want)
    np.testing.assert_array_equal(posenc.rope_frequencies(128), want)
    # the float64 formulas they replaced are not correctly rounded (the check can fail)
    i = np.arange(64, dtype=np.float64)
    assert (np.power(10000.0, -2 * i / 128) != want).sum() > 0
    assert (1.0 / np.power(10000.0, 2 * i / 128) != want).sum() > 0


@pytest.mark.parametrize(("dim", "shift", "scale", "period"), [(64, 1.0, 1.0, 10000.0), (33, 0.0, 1000.0, 10000.0),
                                                               (256, 0.5, -3.0, 1e4), (8, 1.0, 0.0, 10.0)])
def test_timestep_frequencies(dim: int, shift: float, scale: float, period: float) -> None:
    with mpmath.workprec(200):
        exact = _mp_timesteps(dim, shift, scale, period)
    _check_freqs(timesteps._timestep_freqs(dim, shift, scale, period)[1], exact)


@pytest.mark.parametrize(("m", "base"), [(16, 10000.0), (60, 100.0)])
def test_grid_frequencies(m: int, base: float) -> None:
    with mpmath.workprec(200):
        exact = [MP(base) ** (-MP(i) / m) for i in range(m)]
    _check_freqs(grid._axis_freqs(m, base), exact)


def test_turns_of_rope_axes_are_the_frequencies() -> None:
    """``turns=True``: the turns per position are the RoPE frequencies themselves (106 bits)."""
    from posenc.axes._rope_axes import axes_freqs

    (f0, f1), _ = axes_freqs((16, 16), (100.0, 100.0), (None, None), "strided", True, math.inf)
    with mpmath.workprec(200):
        exact = _mp_rope(32, 100.0)
        _check_freqs(f0, [2 * mpmath.pi * x for x in exact[0::2]])
        _check_freqs(f1, [2 * mpmath.pi * x for x in exact[1::2]])


@pytest.mark.parametrize(("dim", "shift", "scale"), [(320, 0.0, 1.0), (256, 1.0, 1.0), (33, 0.5, 1000.0)])
def test_timestep_turns_within_two_to_the_minus_52(dim: int, shift: float, scale: float) -> None:
    """The turns of timestep frequencies that the one-buffer kernel reads
    (``_Exact.turns``): within ``2**-52`` of the mathematical turns ``w / (2
    pi)``, relatively (the torch CPU table kernels' precondition), and the
    same turns rounded to float32 are not."""
    v = timesteps._eager_exact(dim, shift, scale, 10000.0)[1].turns()
    with mpmath.workprec(200):
        exact = [x / (2 * mpmath.pi) for x in _mp_timesteps(dim, shift, scale, 10000.0)]
        rel = [abs((MP(float(a)) - e) / e) for a, e in zip(v, exact) if e != 0]
        coarse = [abs((MP(float(np.float32(a))) - e) / e) for a, e in zip(v, exact) if e != 0]
    assert v.dtype == np.float64 and v.shape == (dim // 2,)
    assert max(rel) <= MP(2) ** -52
    assert max(coarse) > MP(2) ** -52


def test_the_decimal_fallback_gives_the_same_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every entry through the fallback (the margin made huge): the same
    correctly rounded values, and ``lo`` to 2**-100 of the double-double one."""
    cases: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
        (_exact.geometric, (10000.0, Fraction(2, 64), 32)),
        (S.YaRN(16.0, 4096)._formula, (64, 10000.0, None)),
        (S.Llama3(8.0, 8192)._formula, (64, 500000.0, None)),
        (S.Proportional(0.5)._formula, (64, 10000.0, None)),
    ]
    fast = [_exact.evaluate(f, *a) for f, a in cases]
    monkeypatch.setattr(_exact, "_MARGIN", 1.0)
    for (f, a), (hi, lo) in zip(cases, fast):
        hi2, lo2 = _exact.evaluate(f, *a)
        np.testing.assert_array_equal(hi2, hi)
        assert np.all(np.abs(lo2 - lo) <= np.abs(hi) * 2.0**-100)


def test_extreme_bases_fall_back_and_stay_exact() -> None:
    """Frequencies beyond 2**990 or below 2**-960 (no 106-bit pair) go
    through the decimal fallback: still correctly rounded, overflow is inf."""
    hi, _ = _exact.evaluate(_exact.geometric, 1e-300, Fraction(2, 4), 2)
    assert hi[0] == 1.0 and hi[1] == float(MP(1e-300) ** (-0.5))
    hi, _ = _exact.evaluate(_exact.geometric, 1e300, Fraction(2, 8), 4)
    with mpmath.workprec(200):
        assert hi.tolist() == [float(MP(1e300) ** (-MP(2 * i) / 8)) for i in range(4)]
    hi, _ = _exact.evaluate(_exact.geometric, 1e-300, Fraction(2, 1), 3)
    assert hi[2] == math.inf


def test_pairs_of_integers_keep_their_leading_106_bits() -> None:
    """``n * 2**s`` as ``hi + lo``: the leading 53 and next 53 bits of ``n``
    (truncated) in the normal range, inf beyond it (the wide path), 0 far
    below it; one value beyond the range does not change the others.  The
    last two rows are Veltkamp's split of ``hi``, as NumPy's arrays make it."""
    rng = np.random.default_rng(5)
    values = []
    for bits in (1, 2, 52, 53, 54, 105, 106, 107, 200, 400):
        for _ in range(3):
            n = int(rng.integers(1, 2**62)) | 1 << (bits - 1)
            n &= (1 << bits) - 1
            sign = -1 if rng.random() < 0.5 else 1
            values.append((sign * n, int(rng.integers(-900, 900)) - bits))
    hi, lo, top, rest = _exact._split_pairs(values)
    want_top, want_rest = _exact._split(hi)
    np.testing.assert_array_equal(top, want_top)
    np.testing.assert_array_equal(rest, want_rest)
    assert (top + rest == hi).all()
    assert (np.abs(top).view(np.int64) & ((1 << 26) - 1) == 0).all()  # (26 bits of hi's 53, and a sign)
    for (n, s), h, low in zip(values, hi.tolist(), lo.tolist()):
        m = abs(n)
        extra = max(m.bit_length() - 106, 0)
        want = Fraction(m >> extra << extra) * Fraction(2) ** s * (1 if n > 0 else -1)
        assert Fraction(h) + Fraction(low) == want
        assert abs(low) < math.ulp(h)
    wide = [*values, (1, 1100), (-3, 2000), (1, -1200)]
    hi2, lo2, _, _ = _exact._split_pairs(wide)
    assert hi2[:-3].tolist() == hi.tolist() and lo2[:-3].tolist() == lo.tolist()
    assert hi2[-3:].tolist() == [math.inf, -math.inf, 0.0] and lo2[-1] == 0.0


def test_intermediates_beyond_float64_do_not_matter() -> None:
    """NTK's base ``1 * (1e300) ** 2`` overflows a Python float, its frequencies do not."""
    assert posenc.rope_frequencies(4, base=1.0, scaling=S.NTK(1e300)).tolist() == [1.0, 1e-300]


# --------------------------------------------------------------------------
# the tables against the mathematical values
# --------------------------------------------------------------------------
def _positions(kind: str) -> np.ndarray:
    rng = np.random.default_rng(37)
    if kind == "int32":  # float32 tables, integers to 2**31
        top = 2**31
        p = np.r_[top - 1, -(top - 1), top - 2, top - 977, 2**24 + 1, 12345, 0]
        p = np.r_[p, rng.integers(2**24, top, 5), -rng.integers(0, top, 3)]
        return p.astype(np.int64)
    if kind == "real32":  # float32 tables, reals to 2**22
        p = np.r_[2.0**22 - 0.25, -(2.0**22 - 0.5), 4194303.75, 1.5, 0.1]
        return np.r_[p, rng.uniform(-(2.0**22), 2.0**22, 6)].astype(np.float32)
    if kind == "int64":  # float64 tables, integers to 2**53
        top = 2**53
        p = np.r_[top - 1, -(top - 1), top - 2, top - 4097, 2**31 + 3, 7]
        return np.r_[p, rng.integers(2**31, top, 5, dtype=np.int64)].astype(np.int64)
    # float64 tables, reals to 2**40
    p = np.r_[2.0**40 - 0.5, -(2.0**40 - 0.25), 1099511627775.75, 0.3]
    return np.r_[p, rng.uniform(-(2.0**40), 2.0**40, 5)]


CASES = [("int32", "float32"), ("real32", "float32"), ("int64", "float64"), ("real64", "float64")]


def _truth(p: np.ndarray, exact: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """float64 ``sin``, ``cos`` of ``p * w`` for the mathematical ``w`` (mpmath)."""
    s = np.empty((len(p), len(exact)))
    c = np.empty_like(s)
    with mpmath.workprec(256):
        for i, x in enumerate(np.asarray(p).tolist()):
            for j, w in enumerate(exact):
                a = MP(x) * w
                s[i, j], c[i, j] = float(mpmath.sin(a)), float(mpmath.cos(a))
    return s, c


def _check(table: Any, want: np.ndarray, dtype: str) -> float:
    got = np.asarray(table, dtype=np.float64)
    assert np.asarray(table).dtype == np.dtype(dtype)
    err = float(np.abs(got - want).max())
    assert err <= (BOUND if dtype == "float32" else BOUND64), err
    return err


@pytest.mark.parametrize(("kind", "dtype"), CASES)
@pytest.mark.parametrize("scaling", SCALINGS, ids=lambda s: type(s).__name__)
def test_rope_tables(scaling: Any, kind: str, dtype: str) -> None:
    p = _positions(kind)
    with mpmath.workprec(200):
        exact = _mp_scaled(scaling, 64, 10000.0, SEQ_LEN)
    s, c = _truth(p, exact)
    cos, sin = posenc.rope_cos_sin(p, 64, scaling=scaling, seq_len=SEQ_LEN, dtype=dtype)
    _check(cos, np.concatenate([c, c], axis=-1), dtype)
    _check(sin, np.concatenate([s, s], axis=-1), dtype)


@pytest.mark.parametrize(("kind", "dtype"), CASES)
@pytest.mark.parametrize(
    "kw", [{"convention": "paper"}, {"convention": "fairseq"}, {"convention": "tensor2tensor", "min_timescale": 2.0}]
)
def test_sinusoidal_tables(kw: dict[str, Any], kind: str, dtype: str) -> None:
    p = _positions(kind)
    with mpmath.workprec(200):
        exact = _mp_sinusoidal(48, 10000.0, kw["convention"], kw.get("min_timescale", 1.0))
    s, c = _truth(p, exact)
    want = np.stack([s, c], axis=-1).reshape(len(p), -1)  # interleaved: sin w0, cos w0, sin w1, ...
    _check(posenc.sinusoidal(p, 48, dtype=dtype, **kw), want, dtype)


@pytest.mark.parametrize(("kind", "dtype"), CASES)
def test_timestep_tables(kind: str, dtype: str) -> None:
    p = _positions(kind)
    with mpmath.workprec(200):
        exact = _mp_timesteps(40, 1.0, 1.0, 10000.0)
    s, c = _truth(p, exact)
    _check(posenc.timestep_embedding(p, 40, dtype=dtype), np.c_[s, c], dtype)


@pytest.mark.parametrize(("kind", "dtype"), CASES)
def test_rope_axes_tables(kind: str, dtype: str) -> None:
    p = _positions(kind)
    ids = np.stack([p, p[::-1]], axis=-1)
    with mpmath.workprec(200):
        e0, e1 = _mp_rope(16, 10000.0), _mp_scaled(S.NTK(2.0), 24, 256.0, None)
    s0, c0 = _truth(ids[:, 0], e0)
    s1, c1 = _truth(ids[:, 1], e1)
    cos, sin = posenc.rope_axes_cos_sin(ids, (16, 24), base=(10000.0, 256.0), scaling=(None, S.NTK(2.0)),
                                        layout="half", dtype=dtype)
    _check(cos, np.c_[c0, c1, c0, c1], dtype)
    _check(sin, np.c_[s0, s1, s0, s1], dtype)


@pytest.mark.parametrize(("kind", "dtype"), CASES)
def test_grid_tables(kind: str, dtype: str) -> None:
    p = _positions(kind)
    with mpmath.workprec(200):
        exact = [MP(10000.0) ** (-MP(i) / 8) for i in range(8)]
    s, c = _truth(p, exact)
    _check(posenc.sincos_coords(p[:, None], 16, dtype=dtype), np.c_[s, c], dtype)


def test_the_float64_frequencies_alone_miss_the_float64_bound() -> None:
    """Control: tables built from the float64-rounded frequencies (the
    previous definition of exact) are off by far more than BOUND64 near
    2**53: the table tests above can tell the two apart."""
    p = _positions("int64")
    with mpmath.workprec(200):
        exact = _mp_rope(64, 10000.0)
        rounded = [MP(float(x)) for x in exact]
    s, _ = _truth(p, exact)
    s_rounded, _ = _truth(p, rounded)
    assert np.abs(s - s_rounded).max() > 100 * BOUND64


@pytest.mark.parametrize(("dtype", "top"), [("float32", 2.0**13), ("float64", 2.0**31)])
@pytest.mark.parametrize(("log_sampling", "max_log2"), [(True, 7.5), (False, 7.0)])
def test_fourier_frequencies_and_tables(dtype: str, top: float, log_sampling: bool, max_log2: float) -> None:
    """NeRF's fixed frequencies ``pi 2**(k M / (N-1))`` (or ``pi linspace(1, 2**M, N)``):
    correctly rounded, and the tables against mpmath where ``|x f| < 2**22`` (float32) or ``2**40``."""
    from posenc import fourier

    nb = 6
    with mpmath.workprec(200):
        k = [MP(i) for i in range(nb)]
        if log_sampling:
            exact = [mpmath.pi * MP(2) ** (i * MP(max_log2) / (nb - 1)) for i in k]
        else:
            exact = [mpmath.pi * (1 + i * (MP(2) ** MP(max_log2) - 1) / (nb - 1)) for i in k]
    _check_freqs(fourier._nerf_plan(nb, max_log2, log_sampling, True)[0], exact)
    rng = np.random.default_rng(5)
    x = np.r_[top - 0.25, -(top - 0.5), 0.1, rng.uniform(-top, top, 6)].astype(dtype)
    s, c = _truth(x, exact)
    got = posenc.fourier_features(x[:, None], nb, max_log2_freq=max_log2, include_input=False,
                                  log_sampling=log_sampling, scale_pi=True, dtype=dtype)
    _check(got, np.stack([s, c], axis=-1).reshape(len(x), -1), dtype)


def _general(n: Any, *args: Any) -> Any:
    """:func:`posenc._exact.geometric` under another name: the general path
    of :func:`posenc._exact.evaluate` (vector objects, copies, the check)."""
    return _exact.geometric(n, *args)


def test_geometric_sequences_decided_at_once_equal_the_general_path() -> None:
    """``evaluate(geometric, ...)`` takes the pairs and their check without
    the general path's objects where double-double decides every entry: the
    same arrays, bit for bit; where it does not (a subnormal, a zero, an
    entry beyond 2**990), the general path answers."""
    rng = np.random.default_rng(11)
    cases: list[tuple[Any, ...]] = [
        (10000.0, Fraction(1, 160), 160, Fraction(1)),
        (10000.0, Fraction(2, 128), 64),
        (500000.0, Fraction(2, 80), 40, Fraction(3, 7)),
        (2.0, Fraction(1, 3), 1),
        (1e-300, Fraction(2, 1), 3),
        (1e6, Fraction(3, 31), 549, Fraction(1, 2)),
        (10000.0, Fraction(1, 4), 8, 0.0),
        # the integer path reads every argument type frac reads: float steps
        # (dyadic rationals), NumPy scalars, int bases, a Fraction scale
        (10000.0, 1 / 160, 160, 1.0),
        (np.float32(500000.0), np.float64(2 / 96), 48, np.float32(0.25)),
        (10000, 1, 5, Fraction(2, 3)),
        (0.5, Fraction(1, 7), 9, -3),
    ]
    for _ in range(40):
        base = float(10.0 ** rng.uniform(-3.0, 8.0))
        step = Fraction(int(rng.integers(1, 5)), int(rng.integers(1, 900)))
        scale = float(rng.choice([1.0, 0.5, 3.0, 1 / 3, -2.5, 1e-3]))
        cases.append((base, step, int(rng.integers(1, 700)), scale))
    declined = 0
    for args in cases:
        hi, lo = _exact.evaluate(_exact.geometric, *args)
        hi2, lo2 = _exact.evaluate(_general, *args)
        np.testing.assert_array_equal(hi, hi2)
        np.testing.assert_array_equal(lo, lo2)
        declined += _exact._geometric_decided(*args) is None
    assert declined >= 3  # (the subnormals, the overflow and the zero scale)


def test_geometric_check_accepts_only_decided_pairs() -> None:
    """The fast path's check (``hi + lo (1 + 2**-40)`` rounds to ``hi``)
    accepts a pair only where its rest stays ``|hi| 2**-96`` inside half the
    spacing on its side of ``hi`` (exact rationals), and accepts every rest
    up to ``1 - 2**-38`` of that half spacing.  Rests are put at and around
    the edge, on both sides, at powers of two and inside binades."""
    rng = np.random.default_rng(11)
    magnitudes = [1.0, 1.5, 2.0**-500, 3 * 2.0**400, 1.9999999999999998]
    magnitudes += (rng.uniform(1, 2, 40) * 2.0 ** rng.integers(-900, 900, 40)).tolist()

    def half_spacing(h: float, low: float) -> Fraction:
        """Half the spacing of float64 on ``low``'s side of ``h``."""
        toward_zero = abs(h) == 2.0 ** (math.frexp(abs(h))[1] - 1) and (low < 0) == (h > 0)
        return Fraction(math.ulp(h)) / (4 if toward_zero else 2)

    hi, lo = [], []
    for m in magnitudes:
        for h in (m, -m):
            for side in (1.0, -1.0):
                edge = float(half_spacing(h, side))
                for f in (0.0, 0.5, 1 - 2.0**-38, 1 - 2.0**-41, 1 - 2.0**-44, 1 - 2.0**-52, 1.0, 1 + 2.0**-40):
                    hi.append(h)
                    lo.append(side * edge * f)
    accepted = [_exact._rounds_to(np.array([h]), np.array([low])) for h, low in zip(hi, lo)]
    for h, low, ok in zip(hi, lo, accepted):
        half = half_spacing(h, low)
        inside = abs(Fraction(low)) + abs(Fraction(h)) * Fraction(2) ** -96 < half
        if ok:
            assert inside, (h, low)
        if abs(Fraction(low)) <= half * (1 - Fraction(2) ** -38):
            assert ok, (h, low)
    assert 0 < sum(accepted) < len(accepted)


def test_quiet_range_of_the_fast_path() -> None:
    """``n * 2**s`` is quiet within ``[2**-800, 2**800)`` in magnitude, read
    from the integers alone (their bits and the exponent), either sign."""
    assert _exact._quiet((1, -800), (3, 798), (-1, 799), (2**60 + 1, -860))
    for outside in ((1, -801), (1, 800), (-1, 800), (2**53 - 1, -854), (2**61, 739)):
        assert not _exact._quiet((1, 0), outside), outside


@pytest.mark.parametrize(
    ("base", "step", "m", "a"),
    [
        (10000.0, Fraction(1, 160), 160, 1.0),  # quiet: no error state switched
        (10000.0, Fraction(1, 64), 64, 2.0**-850),  # decided near the bottom: under an error state
        (10000.0, Fraction(1, 64), 64, 2.0**970),  # ... and near the top
        (10000.0, Fraction(1, 64), 64, 2.0**-990),  # below the range of pairs: the general path
        (2.0, Fraction(700), 3, 2.0**700),  # decided, the ends quiet, the product past them (i = 3) not
        (2.0**-20, Fraction(3), 40, 2.0**-100),  # the ends beyond float64: the general path
    ],
)
def test_evaluate_under_a_callers_error_state(base: float, step: Fraction, m: int, a: float) -> None:
    """A caller's ``np.seterr(all="raise")`` changes nothing: the fast path
    switches NumPy's error state only where a value may leave the normal
    range (and the quiet one raises no flag), the general path always; the
    same bits as under the default state, and the turns likewise."""
    want = _exact.evaluate(_exact.geometric, base, step, m, a)
    with np.errstate(all="raise"):
        got = _exact.evaluate(_exact.geometric, base, step, m, a)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    inv = (_angles.INV_HI, _angles.INV_LO)  # 1 / (2 pi)
    turns = _exact.times(*want, inv)
    with np.errstate(all="raise"):
        quiet = _exact.quiet_floats(float(want[0][0]), float(want[0][-1]))
        for g, w in zip(_exact.times(*want, inv, quiet=quiet), turns):
            np.testing.assert_array_equal(g, w)


def test_evaluate_under_a_raising_error_state_random_sequences() -> None:
    """Random geometric sequences whose values (and the fast path's
    factors and products) run up to, across and past the quiet range's
    edges: under ``np.errstate(all="raise")`` the same bits as under the
    default state, and no floating-point error (the quiet analysis of
    :func:`posenc._exact._quiet`)."""
    rng = np.random.default_rng(5)
    quiet = 0
    for _ in range(300):
        m = int(rng.integers(1, 300))
        base = float(2.0 ** rng.uniform(-30, 30))
        step = Fraction(int(rng.integers(1, 50)), int(rng.integers(1, 50)))
        # the first value near one of the edges, or anywhere
        a = float(2.0 ** rng.choice([rng.uniform(-1000, 1000), rng.uniform(790, 810), rng.uniform(-810, -790)]))
        if base == 1.0 or a == 0.0 or not math.isfinite(a):
            continue
        want = _exact.evaluate(_exact.geometric, base, step, m, a)
        with np.errstate(all="raise"):
            got = _exact.evaluate(_exact.geometric, base, step, m, a)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        quiet += _exact.quiet_floats(float(want[0][0]), float(want[0][-1]))
    assert 30 < quiet < 270  # both kinds of sequences were drawn


def test_undecided_entries() -> None:
    """A pair is undecided within 2**-96 of a midpoint of the float64
    rounding (on both sides; half the smaller spacing at powers of two), at
    NaN and infinite values and outside ``[2**-960, 2**990]``; a zero is
    decided."""
    one, x = 1.0, 1.5
    u = math.ulp(x)
    hi = np.array([x, x, x, x, -x, one, one, one, 0.0, math.nan, math.inf, 2.0**995, 2.0**-970, x])
    lo = np.array([0.0, u / 2 * (1 - 2.0**-40), u / 2 * (1 - 2.0**-100), -u / 2 * (1 - 2.0**-100),
                   u / 2 * (1 - 2.0**-100), -math.ulp(one) / 4, math.ulp(one) / 4 * (1 - 2.0**-30),
                   -math.ulp(one) / 4 * (1 - 2.0**-30), 0.0, 0.0, 0.0, 0.0, 0.0, math.nan])
    want = [False, False, True, True, True, True, False, False, False, True, True, True, True, True]
    assert _exact._undecided(hi, lo).tolist() == want
