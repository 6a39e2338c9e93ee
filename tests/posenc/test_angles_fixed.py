"""The fixed-point path of integer positions on devices without float64.

JAX without x64 (and array-api-strict's ``no_float64`` device, and any
namespace whose device lacks float64) reduces the angles of integer
positions in 32-bit integer arithmetic (``posenc._angles._sincos_fixed``):
no gather, no table, one fused loop under ``jax.jit``.  Checked here: the
reduced angle against the exact reduction (rational arithmetic on the host
turns), within the bound its docstring derives; the tables against the
exact sines and cosines and against the digit path; every integer dtype,
positions near +-2**31 and +-2**32, negative and empty positions, and the
path taken under ``jax.jit``.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest

import posenc
from benchmarks import accuracy
from posenc import _angles, _compat
from posenc._turns import turns_of

BOUND = 2.5e-7

#: integer positions at the edges of the exact range and in between
EDGES = [0, 1, -1, 2, -2, 255, -256, 65535, 65536, -65537, 2**24 + 1, -(2**24) - 1, 2**31 - 1, -(2**31),
         -(2**31) + 1, 2**31 - 2, 123456789, -987654321]
WIDE = [2**31, -(2**31) - 1, 2**32 - 1, -(2**32) + 1, 3 * 2**30 + 12345]


def _positions(extra: list[int], n: int = 40) -> np.ndarray:
    rng = np.random.default_rng(34)
    return np.array(EDGES + extra + rng.integers(-(2**31), 2**31, n).tolist(), dtype=np.int64)


def _exact_angles(p: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``2 pi frac(p * v)`` in [-pi, pi), with ``v = vh + vl`` the host
    turns of ``w`` taken exactly (rational arithmetic), in float64."""
    t = turns_of(_angles.as_freqs(w).key)
    out = np.empty((len(p), len(w)))
    for j, (vh, vl) in enumerate(zip(t.vh.tolist(), t.vl.tolist())):
        v = Fraction(vh) + Fraction(vl)
        for i, q in enumerate(p.tolist()):
            f = (q * v) % 1
            out[i, j] = 2 * math.pi * float(f - 1 if f >= Fraction(1, 2) else f)
    return out


def _strict(p: np.ndarray):
    xs = pytest.importorskip("array_api_strict")
    return xs.asarray(p, device=xs.Device("no_float64"))


def _to_numpy(a) -> np.ndarray:
    from posenc_viz import to_numpy

    return np.asarray(to_numpy(a), dtype=np.float64)


def _torch_without_float64(p: np.ndarray):
    """torch CPU tensors in a context that says the device has no float64
    (the decisions a device such as Apple's MPS takes)."""
    torch = pytest.importorskip("torch")
    t = torch.asarray(p)
    return t, dataclasses.replace(_compat.resolve({"positions": t}), float64=False)


def _jax(p: np.ndarray):
    jax = pytest.importorskip("jax")
    if jax.config.jax_enable_x64:  # pragma: no cover
        pytest.skip("JAX with x64 has float64")
    return jax.numpy.asarray(p)


CASES = {
    "strict-int64": lambda p: (_strict(p), None),
    "strict-int32": lambda p: (_strict(p.astype(np.int32)), None),
    "jax-int32": lambda p: (_jax(p.astype(np.int32)), None),
    "torch-int64": lambda p: _torch_without_float64(p),
    "torch-int32": lambda p: _torch_without_float64(p.astype(np.int32)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_reduced_angle_against_the_exact_reduction(case):
    """The float32 pair ``a + a_lo`` with the sign of ``p`` is the exact
    reduced angle within the docstring's ``|p| 2**-64 pi + 2.5e-10`` (a unit
    of 2**-32 turns lost in the carries would be 1.5e-9); ``a`` in [-pi, pi],
    ``|a_lo| <= 2**-23``."""
    p = _positions(WIDE if case.endswith("int64") else [])
    q, ctx = CASES[case](p)
    ctx = ctx or _compat.resolve({"positions": q})
    assert not ctx.float64
    w = posenc.frequencies(64)
    a, a_lo, sign, overflow = _angles.fixed_angle(q, _angles.as_freqs(w).key, ctx)
    assert overflow is None or not _to_numpy(overflow).any()
    a, a_lo, sign = _to_numpy(a), _to_numpy(a_lo), _to_numpy(sign)
    assert np.abs(a).max() <= np.float32(math.pi) and np.abs(a_lo).max() <= 2.0**-23
    np.testing.assert_array_equal(sign[:, 0], np.where(p < 0, -1.0, 1.0))
    exact = _exact_angles(p, w)
    err = np.abs(sign * (a + a_lo) - exact)
    err = np.minimum(err, 2 * math.pi - err)  # (+-pi are the same angle)
    bound = np.abs(p)[:, None] * 2.0**-64 * math.pi + 2.5e-10
    assert (err <= bound).all(), err.max()


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_every_integer_dtype_within_the_bound(dtype):
    """Tables of every integer dtype on a device without float64: within
    posenc's bound of the exact values and of the digit path (the path of
    such devices before, kept for real positions)."""
    info = np.iinfo(dtype)
    hi = min(int(info.max), 2**32 - 1)
    lo = max(int(info.min), -(2**32) + 1)
    p = np.array(sorted({0, 1, lo, lo + 1, hi, hi - 1, hi // 3, lo // 7, 100}), dtype=dtype)
    q = _strict(p)
    got = posenc.sinusoidal(q, 64)
    a = _angles.prepare(q, _angles.as_freqs(posenc.frequencies(64)), _compat.resolve({"positions": q}))
    assert a.path is _angles._sincos_fixed
    truth = np.zeros((len(p), 64))
    ts, tc = accuracy.exact_angle_sincos(p.astype(np.float64), posenc.frequencies(64))
    truth[:, 0::2], truth[:, 1::2] = ts, tc
    got = _to_numpy(got)
    np.testing.assert_allclose(got, truth, rtol=0, atol=BOUND)
    digits = _angles._sincos_digits(q, a)
    fixed = a.path(q, a)
    for x, y in zip(fixed, digits):
        np.testing.assert_allclose(_to_numpy(x), _to_numpy(y), rtol=0, atol=BOUND)


def test_shapes_and_empty_positions():
    p = _positions([])[:12].reshape(3, 4)
    w = posenc.frequencies(16)
    q = _strict(p.astype(np.int32))
    a = _angles.prepare(q, _angles.as_freqs(w), _compat.resolve({"positions": q}))
    s, c = a(q)
    assert tuple(s.shape) == (3, 4, 8) and tuple(c.shape) == (3, 4, 8)
    ts, tc = accuracy.exact_angle_sincos(p.reshape(-1).astype(np.float64), w)
    np.testing.assert_allclose(_to_numpy(s).reshape(12, 8), ts, rtol=0, atol=BOUND)
    np.testing.assert_allclose(_to_numpy(c).reshape(12, 8), tc, rtol=0, atol=BOUND)
    for shape in [(0,), (2, 0)]:
        e = _strict(np.zeros(shape, np.int32))
        s, c = a(e)
        assert tuple(s.shape) == shape + (8,) and tuple(c.shape) == shape + (8,)


def test_wide_positions_give_nan_rows():
    """|p| >= 2**32 (int64, uint64; the most negative int64 too): NaN rows;
    just inside, exact rows."""
    p = np.array([2**32, -(2**32), -(2**63), 2**40 + 5, 2**32 - 1, -(2**32) + 1, 5], dtype=np.int64)
    got = _to_numpy(posenc.sinusoidal(_strict(p), 8))
    assert np.isnan(got[:4]).all() and np.isfinite(got[4:]).all()
    truth = np.zeros((3, 8))
    truth[:, 0::2], truth[:, 1::2] = accuracy.exact_angle_sincos(p[4:].astype(np.float64), posenc.frequencies(8))
    np.testing.assert_allclose(got[4:], truth, rtol=0, atol=BOUND)
    u = np.array([2**63, 2**32, 2**32 - 1], dtype=np.uint64)
    got = _to_numpy(posenc.sinusoidal(_strict(u), 8))
    assert np.isnan(got[:2]).all() and np.isfinite(got[2]).all()


def test_under_jax_jit():
    """Under ``jax.jit`` integer positions take the fixed-point path (traced:
    no gather of a range's rows); sinusoidal tables and RoPE tables of
    position ids within the bound."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    p = _positions([]).astype(np.int32)
    q = _jax(p)
    fr = _angles.as_freqs(posenc.frequencies(32))

    def path(x):
        ctx = _compat.resolve({"positions": x})
        assert not ctx.float64
        return _angles.prepare(x, fr, ctx).path

    seen = []
    jax.jit(lambda x: seen.append(path(x)) or x)(q)
    assert seen == [_angles._sincos_fixed]
    # elementwise only: no gather of a table (the digit path gathered eight), one sine and one cosine
    jaxpr = str(jax.make_jaxpr(lambda x: posenc.sinusoidal(x, 32))(q))
    assert "gather" not in jaxpr and jaxpr.count(" sin ") == 1 and jaxpr.count(" cos ") == 1, jaxpr
    got = np.asarray(jax.jit(lambda x: posenc.sinusoidal(x, 32))(q), dtype=np.float64)
    ts, tc = accuracy.exact_angle_sincos(p.astype(np.float64), posenc.frequencies(32))
    np.testing.assert_allclose(got[:, 0::2], ts, rtol=0, atol=BOUND)
    np.testing.assert_allclose(got[:, 1::2], tc, rtol=0, atol=BOUND)
    ids = jnp.asarray(p[None, :])
    cos, sin = jax.jit(lambda x: posenc.rope_cos_sin(x, 32))(ids)
    w = 1.0 / 10000.0 ** (np.arange(0, 32, 2) / 32)
    ts, tc = accuracy.exact_angle_sincos(p.astype(np.float64), w)
    np.testing.assert_allclose(np.asarray(sin, np.float64)[0], np.concatenate([ts, ts], -1), rtol=0, atol=BOUND)
    np.testing.assert_allclose(np.asarray(cos, np.float64)[0], np.concatenate([tc, tc], -1), rtol=0, atol=BOUND)


@pytest.mark.parametrize("k", [1.0, 3.5])
def test_table_bound_for_a_libm_off_by_k_ulp(k):
    """The table bound of this path on paper, ``(k + 1/2) * 2**-24`` plus the
    reduction's 1e-9 and the Taylor terms' 1e-9, holds with a float32 sine
    and cosine off by ``k`` ulp (3.5: the worst any backend documents), and
    stays below posenc's 2.5e-7."""
    from tests.posenc.test_accuracy import U, _WorstLibm

    rng = np.random.default_rng(3)
    p = accuracy.int_positions(rng, 2**20, 2**31, 1000)
    p = np.concatenate([p, -p]).astype(np.int32)
    w = posenc.frequencies(128)
    ctx = dataclasses.replace(_compat.resolve({"positions": p}), float64=False)
    a, a_lo, sign, _ = _angles.fixed_angle(p, _angles.as_freqs(w).key, ctx)
    s, c = _angles._finish_fixed(a, a_lo, _WorstLibm(k))
    s = s * sign
    ts, tc = accuracy.exact_angle_sincos(p.astype(np.float64), w)
    err = max(np.abs(s - ts).max(), np.abs(c - tc).max())
    paper = (k + 0.5) * U + 2e-9
    assert err <= paper <= BOUND
    # control: the sine and cosine of the head alone (no first-order terms) are not within it
    lib = _WorstLibm(k)
    assert max(np.abs(lib.sin(a) * sign - ts).max(), np.abs(lib.cos(a) - tc).max()) > paper
