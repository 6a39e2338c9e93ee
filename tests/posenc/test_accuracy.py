"""posenc's accuracy statement, measured over a sweep of positions.

float32 tables of every path are within ``BOUND = 2.5e-7`` of the exact
values (the sines and cosines of the mathematical frequencies) for every
integer |p| < 2**31 and float |p| < 2**22, with margin (the worst measured
error at most 0.8x the bound); float64 tables within 1e-15 for integer |p| <
2**53 and float |p| < 2**40.  The sweep is
``benchmarks/accuracy.py`` (``python -m benchmarks.accuracy`` runs it with more
positions); here it runs with fewer, under every SIMD dispatch target NumPy
offers on this CPU and every torch CPU capability, in subprocesses.  The
bound itself is derived in ``posenc/_angles.py``; a test below checks the
derivation with a float32 sine and cosine that are deliberately off by the
worst ulp error any backend documents.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import posenc
from benchmarks import accuracy
from posenc import _angles

ROOT = Path(__file__).resolve().parents[2]
U = 2.0**-24  # half an ulp of 1 is U / 2


def test_sweep_within_the_bound_with_margin():
    res = accuracy.sweep(n=256)
    assert len(res) >= 10  # every path of the installed backends
    worst = {path: max(r.values()) for path, r in res.items()}
    bad = {path: e for path, e in worst.items() if not e <= accuracy.MARGIN * accuracy.BOUND}
    assert not bad, accuracy.report(res)
    # and the ranges reach 2**31 (integers) and 2**22 (floats)
    labels = {label for r in res.values() for label in r}
    assert "int |p| in [2^24, 2^31)" in labels and "float |p| in [2^10, 2^22)" in labels


def test_float64_tables_are_exact_to_2_53():
    res = accuracy.sweep64(n=128)
    assert max(res.values()) <= accuracy.BOUND64, res
    assert "int |p| in [2^31, 2^53)" in res and "float |p| in [2^22, 2^40)" in res


def test_the_naive_float32_formula_fails_the_sweep():
    """Control: the formula posenc replaces is far outside the bound on the
    same positions and oracle (the sweep can fail)."""
    rng = np.random.default_rng(0)
    p = accuracy.int_positions(rng, 2**16, 2**24, 256)
    w = posenc.frequencies(128)
    naive = np.sin(p.astype(np.float32)[:, None] * w.astype(np.float32))
    truth, _ = accuracy.exact_angle_sincos(p.astype(np.float64), w)
    assert np.abs(naive - truth).max() > 100 * accuracy.BOUND


def test_oracle_against_mpmath():
    """The sweep's truth agrees with 60-digit mpmath (its own error ~1e-16)."""
    rng = np.random.default_rng(1)
    p = np.r_[accuracy.int_positions(rng, 2**24, 2**31, 12), accuracy.float_positions(rng, 1.0, 2.0**22, 6)]
    w = posenc.rope_frequencies(32)
    got = accuracy.exact_angle_sincos(p.astype(np.float64), w)
    want = accuracy._mpmath_sincos(p.astype(np.float64), w)
    for g, x in zip(got, want):
        assert np.abs(g - x).max() <= 2.3e-16


def _dispatch_settings() -> list[dict[str, str]]:
    """Environments that make NumPy use each SIMD dispatch target this CPU
    has (disabling the ones above it; the last one is the baseline), with
    torch's CPU capabilities alongside."""
    from numpy._core import _multiarray_umath as um

    found = [t for t in um.__cpu_dispatch__ if um.__cpu_features__.get(t)]
    settings = []
    torch_caps = ["default", "avx2", ""]
    for i in range(len(found) + 1):
        env = {"NPY_DISABLE_CPU_FEATURES": " ".join(found[i:])}
        if torch_caps:
            cap = torch_caps.pop()
            if cap:
                env["ATEN_CPU_CAPABILITY"] = cap
        settings.append(env)
    # keep the run short: the default, the lowest SIMD target and the baseline
    return [settings[-1], settings[1], settings[0]] if len(settings) > 3 else settings


@pytest.mark.slow
@pytest.mark.parametrize("env", _dispatch_settings(), ids=lambda e: e.get("NPY_DISABLE_CPU_FEATURES") or "default")
def test_bound_under_every_dispatch_target(env):
    """The bound does not depend on which SIMD implementation of float32
    sin/cos NumPy (or torch) picks: the sweep in a subprocess per target."""
    pytest.importorskip("torch")
    full = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.accuracy", "--n", "96", "--backends", "numpy,strict,torch"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=full,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OK" in out.stdout.splitlines()[-1]


def _ulp(x: np.ndarray) -> np.ndarray:
    """The float32 ulp of the exact value ``x`` (float64): the spacing of the
    float32 numbers of its binade (``2**-24`` for 0.99999997, not 1.0's)."""
    return np.ldexp(1.0, np.frexp(np.abs(x))[1] - 24)


class _WorstLibm:
    """A float32 namespace whose sin and cos are off by ``k`` ulp of the exact
    value, away from the truth in the direction that hurts the formula most
    (what a libm within k ulp may return), everything else NumPy's."""

    def __init__(self, k: float) -> None:
        self.k = k

    def __getattr__(self, name):
        return getattr(np, name)

    def astype(self, x, dtype):
        return x.astype(dtype)

    def _off(self, f, x):
        exact = f(x.astype(np.float64))
        ulp = _ulp(exact)
        r = (exact + np.sign(exact) * self.k * ulp).astype(np.float32)
        # the float32 neighbour at most k ulp from the exact value
        over = np.abs(r.astype(np.float64) - exact) > self.k * ulp
        return np.where(over, np.nextafter(r, exact.astype(np.float32)), r)

    def sin(self, x):
        return self._off(np.sin, x)

    def cos(self, x):
        return self._off(np.cos, x)


@pytest.mark.parametrize("k", [1.0, 2.5, 3.5])
def test_derived_bound_holds_for_a_libm_off_by_k_ulp(k):
    """The paper bound of the array paths, (k + 1/2) * 2**-24 plus the
    reduction's 1e-9: with float32 sin/cos off by k ulp (3.5: the worst any
    backend documents), the tables stay within it, below 2.5e-7."""
    rng = np.random.default_rng(2)
    p = accuracy.int_positions(rng, 2**20, 2**31, 2000).astype(np.float64)
    w = posenc.frequencies(128)
    t = _angles.turns_of(_angles.as_freqs(w).key)
    f = p[:, None] * t.v1
    f = (f - np.round(f)) + p[:, None] * t.v2
    f = f - np.round(f)
    s, c = _angles.finish_f32(f * (2 * math.pi), _WorstLibm(k))
    ts, tc = accuracy.exact_angle_sincos(p, w)
    err = max(np.abs(s - ts).max(), np.abs(c - tc).max())
    paper = (k + 0.5) * U + 1e-9
    assert err <= paper <= accuracy.BOUND
    # the angle rounded to float32 before the same libm (the formula posenc replaced) is not within it
    a = (f * (2 * math.pi)).astype(np.float32)
    lib = _WorstLibm(k)
    err_rounded = max(np.abs(lib.sin(a) - ts).max(), np.abs(lib.cos(a) - tc).max())
    assert err_rounded > paper


#: real positions at the edges of their exact ranges (posenc._angles): in
#: float32 tables float64 positions below 2**32 (integers there), narrower ones below 2**50;
#: float64 tables below 2**64
REAL_EDGES = [
    ("float64", "float32", 2.0**32 - 1, 2.0**32 * (1 + 2**-20)),
    ("float32", "float32", float(np.nextafter(np.float32(2.0**50), np.float32(0))), 2.0**51),
    ("float64", "float64", 2.0**64 * (1 - 2**-50), 2.0**64),
]


@pytest.mark.parametrize(("pos_dtype", "table_dtype", "inside", "beyond"), REAL_EDGES)
def test_real_positions_within_their_exact_range_and_beyond(xp, pos_dtype, table_dtype, inside, beyond):
    """Real positions just inside the exact range are within the bound of
    the exact values (mpmath); just beyond it, a refusal by name where posenc
    reads positions, NaN rows elsewhere.  They were silently wrong: 1e-4 at
    2**40 in float32 tables of float64 positions, 0.16 at 2**50, 0.79 for a
    float32 position of 3e30 (clipped to 2**64)."""
    mpmath = pytest.importorskip("mpmath")
    from .test_offsets import _in_host_memory

    if not xp.has_values or not xp.float64:
        pytest.skip(f"{xp.name}: no values, or no float64 (real positions take the digit path there)")
    if table_dtype == "float64" and xp.family == "jax":
        pytest.skip("JAX without x64 makes float32 tables")
    p = xp.asarray(np.array([inside, 1.5], dtype=pos_dtype), dtype=pos_dtype)
    cos, sin = xp.call(posenc.rope_cos_sin, p, 8, dtype=getattr(xp.ns, table_dtype), xp=xp.ns)
    with mpmath.workdps(80):
        w = [mpmath.power(10000, mpmath.mpf(-2 * j) / 8) for j in range(4)]
        want = [[float(mpmath.cos(mpmath.mpf(float(v)) * wj)) for wj in w] * 2 for v in xp.to_numpy(p).tolist()]
    bound = 2.5e-7 if table_dtype == "float32" else 1e-12
    np.testing.assert_allclose(xp.to_numpy(cos), want, atol=bound, rtol=0)
    far = xp.asarray(np.array([beyond, 1.5], dtype=pos_dtype), dtype=pos_dtype)
    if xp.host and _in_host_memory(xp, far):
        words = r"`positions` holds the position .*: float(32|64) tables of (real|float64) positions are exact"
        with pytest.raises(ValueError, match=words):
            xp.call(posenc.rope_cos_sin, far, 8, dtype=getattr(xp.ns, table_dtype), xp=xp.ns)
        return
    cos, _ = xp.call(posenc.rope_cos_sin, far, 8, dtype=getattr(xp.ns, table_dtype), xp=xp.ns)
    got = xp.to_numpy(cos)
    assert np.isnan(got[0]).all() and np.isfinite(got[1]).all()


def test_float64_positions_with_a_fraction_in_float32_tables(xp):
    """float64 positions in float32 tables: integers are exact up to 2**32;
    a fraction from 2**22 rounds the product ``p * v1`` (4e-7 rad near
    2**32): refused where posenc reads the positions (the documented range of
    real positions is |p| < 2**22)."""
    mpmath = pytest.importorskip("mpmath")
    from .test_offsets import _in_host_memory

    if not xp.has_values or not xp.float64:
        pytest.skip(f"{xp.name}: no values, or no float64")
    p = xp.asarray(np.array([2.0**31 + 3, 2.0**22 - 0.5, 1.5]), dtype="float64")
    cos, _ = xp.call(posenc.rope_cos_sin, p, 8, dtype=xp.ns.float32, xp=xp.ns)
    with mpmath.workdps(80):
        w = [mpmath.power(10000, mpmath.mpf(-2 * j) / 8) for j in range(4)]
        want = [[float(mpmath.cos(mpmath.mpf(v) * wj)) for wj in w] * 2 for v in xp.to_numpy(p).tolist()]
    np.testing.assert_allclose(xp.to_numpy(cos), want, atol=2.5e-7, rtol=0)
    q = xp.asarray(np.array([2.0**31 + 0.5, 1.5]), dtype="float64")
    if xp.host and _in_host_memory(xp, q):
        with pytest.raises(ValueError, match=r"`positions` holds the position 2147483648\.5: .* with a fraction"):
            xp.call(posenc.rope_cos_sin, q, 8, dtype=xp.ns.float32, xp=xp.ns)


def test_integer_positions_from_2_22_take_no_fraction_check():
    """The fraction check is for float64 positions only: integer ones of any
    dtype from 2**22 (torch has no abs of uint64) keep their exact rows."""
    torch = pytest.importorskip("torch")
    want = posenc.sinusoidal(np.array([2**22, 2**31 + 5], dtype=np.int64), 8, dtype=np.float32)
    for dtype in (torch.uint64, torch.uint32, torch.int64):
        got = posenc.sinusoidal(torch.tensor([2**22, 2**31 + 5], dtype=dtype), 8, dtype=torch.float32)
        np.testing.assert_array_equal(got.numpy(), want)
