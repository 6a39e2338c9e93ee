"""Learned absolute position tables: the initial values against NumPy's
generator and the truncated normal's moments, the resampling against torch's
linear interpolation written out and against torch itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc


# ---------------------------------------------------------------- initial values
def test_learned_table(xp):
    t = xp.call(posenc.learned_table, 256, 32, seed=3, xp=xp.ns, device=xp.device)
    xp.check_array(t, shape=(256, 32), dtype=xp.default_float)
    ref = np.random.default_rng(3).standard_normal((256, 32)) * 0.02
    xp.assert_close(t, ref, atol=xp.tol() * 0.02 + 1e-9, rtol=1e-6)
    tr = posenc.learned_table(4096, 8, std=1.0, truncate=2.0, seed=0)
    assert np.abs(tr).max() <= 2.0 and tr.std() < 0.95


@pytest.mark.parametrize("c", [0.3, 1e-300])
def test_learned_table_small_truncation(c):
    """Small truncations terminate (uniform proposals) and follow the
    truncated normal: std from its variance 1 - 2c phi(c) / (2 Phi(c) - 1)."""
    t = posenc.learned_table(20000, 4, std=1.0, truncate=c, seed=1)
    assert np.abs(t).max() <= c
    np.testing.assert_array_equal(t, posenc.learned_table(20000, 4, std=1.0, truncate=c, seed=1))
    if c > 1e-3:
        phi = math.exp(-c * c / 2) / math.sqrt(2 * math.pi)
        want = math.sqrt(1 - 2 * c * phi / math.erf(c / math.sqrt(2)))
    else:  # the limit: uniform on [-c, c]
        want = c / math.sqrt(3)
    assert t.std() == pytest.approx(want, rel=0.02)


# ---------------------------------------------------------------- resampling
@pytest.mark.parametrize("align_corners", [False, True])
def test_resample_table(xp, align_corners):
    rng = np.random.default_rng(2)
    t = rng.standard_normal((7, 3))
    got = xp.call(posenc.resample_table, xp.asarray(t), 11, align_corners=align_corners)
    # oracle: torch's linear interpolation written out (one output row at a time)
    exp = np.empty((11, 3))
    for j in range(11):
        if align_corners:
            src = j * (7 - 1) / (11 - 1)
        else:
            src = max((j + 0.5) * 7 / 11 - 0.5, 0.0)
        i0 = min(int(math.floor(src)), 6)
        i1 = min(i0 + 1, 6)
        f = src - i0
        exp[j] = t[i0] * (1 - f) + t[i1] * f
    xp.assert_close(got, exp, atol=4 * xp.tol(), rtol=4 * xp.tol())


def test_resample_table_matches_torch():
    torch = pytest.importorskip("torch")
    t = torch.randn(2, 9, 5, dtype=torch.float64)
    for n, ac in ((4, False), (20, False), (20, True)):
        got = posenc.resample_table(t, n, align_corners=ac)
        exp = torch.nn.functional.interpolate(t.transpose(1, 2), size=n, mode="linear", align_corners=ac)
        exp = exp.transpose(1, 2)
        torch.testing.assert_close(got, exp)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: posenc.learned_table(4, 8, std=-1.0), ValueError, "std"),
        (lambda: posenc.learned_table(4, 8, seed="x"), TypeError, "seed"),
        (lambda: posenc.resample_table(np.zeros((3, 2)), 0), ValueError, "num_positions"),
        (lambda: posenc.resample_table(np.zeros(3), 4), ValueError, "table"),
        (lambda: posenc.learned_table(4, 4, std=1e6, dtype="float16"), ValueError, "`std`"),
    ],
)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()
