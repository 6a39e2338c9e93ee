"""NeRF and Gaussian Fourier features against float64 formulas and the golden
NeRF embeddings of ``data/grid_golden.npz`` (``data/make_grid_golden.py``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def golden():
    with np.load(DATA / "grid_golden.npz") as f:
        return {k: f[k] for k in f.files}


def ref_nerf(x, num_bands, max_log2=None, include_input=True, log_sampling=True, scale_pi=False):
    """gamma(x) from the paper's definition, one column block at a time."""
    x = np.asarray(x, dtype=np.float64)
    max_log2 = num_bands - 1 if max_log2 is None else max_log2
    if log_sampling:
        freqs = [2.0 ** (max_log2 * k / (num_bands - 1)) if num_bands > 1 else 1.0 for k in range(num_bands)]
    else:
        top = 2.0**max_log2
        freqs = [1.0 + (top - 1.0) * k / (num_bands - 1) if num_bands > 1 else 1.0 for k in range(num_bands)]
    if scale_pi:
        freqs = [f * math.pi for f in freqs]
    cols = [x] if include_input else []
    for f in freqs:
        cols += [np.sin(f * x), np.cos(f * x)]
    return np.concatenate(cols, axis=-1)


def ref_gff(x, B):
    t = np.asarray(x, dtype=np.float64) @ np.asarray(B, dtype=np.float64).T
    return np.concatenate([np.sin(2 * np.pi * t), np.cos(2 * np.pi * t)], axis=-1)


# ---------------------------------------------------------------- NeRF
def test_golden_nerf(xp, golden):
    x = xp.asarray(golden["nerf_x"])
    tol = xp.tol() * 4
    xp.assert_close(xp.call(posenc.fourier_features, x, 10), golden["nerf_L10"], atol=tol, dtype=xp.default_float)
    got = xp.call(posenc.fourier_features, x, 4, log_sampling=False)
    xp.assert_close(got, golden["nerf_L4_linear"], atol=tol)
    got = xp.call(posenc.fourier_features, x, 4, include_input=False)
    xp.assert_close(got, golden["nerf_L4_noinput"], atol=tol)


@pytest.mark.parametrize(
    "kw",
    [
        dict(num_bands=6),
        dict(num_bands=6, scale_pi=True),
        dict(num_bands=5, max_log2_freq=7.5, log_sampling=True),
        dict(num_bands=5, max_log2_freq=3.0, log_sampling=False, include_input=False),
        dict(num_bands=1),
        dict(num_bands=0),
    ],
)
def test_fourier_features(xp, kw):
    rng = np.random.default_rng(0)
    x = np.round(rng.uniform(-3, 3, size=(2, 4, 2)) * 256) / 256  # exact in float32
    nb = kw["num_bands"]
    got = xp.call(posenc.fourier_features, xp.asarray(x), **kw)
    want = ref_nerf(
        x,
        nb,
        kw.get("max_log2_freq"),
        kw.get("include_input", True),
        kw.get("log_sampling", True),
        kw.get("scale_pi", False),
    )
    # without float64, frequencies that are not powers of two (pi-scaled, fractional
    # max_log2_freq) keep the float32 rounding of the fractional part's angle, about
    # |f| * 1.2e-7; powers of two are exact
    exact = xp.float64 or not (kw.get("scale_pi") or "max_log2_freq" in kw)
    fmax = 2.0 ** kw.get("max_log2_freq", max(nb - 1, 0)) * (math.pi if kw.get("scale_pi") else 1.0)
    tol = xp.tol() * 4 if exact else xp.tol() * 4 + fmax * 1.2e-7
    xp.assert_close(got, want, atol=tol, dtype=xp.default_float)


def test_fourier_features_int_coords_and_shapes(xp):
    x = np.arange(-6, 6, dtype=np.int32).reshape(2, 2, 3)
    got = xp.call(posenc.fourier_features, xp.asarray(x), 3)
    xp.assert_close(got, ref_nerf(x, 3), atol=xp.tol() * 8)
    xp.check_array(got, shape=(2, 2, 3 * 7))
    got = xp.call(posenc.fourier_features, xp.asarray(np.array([0.5, 0.25])), 2, include_input=False)
    xp.assert_close(got, ref_nerf([0.5, 0.25], 2, include_input=False), atol=xp.tol() * 4)


def test_fourier_features_dtype_torch():
    torch = pytest.importorskip("torch")
    x = torch.tensor([[0.1, 0.2, 0.3]])
    got = posenc.fourier_features(x, 4, dtype=torch.bfloat16)
    assert got.dtype == torch.bfloat16 and got.shape == (1, 27)
    np.testing.assert_allclose(got.float().numpy(), ref_nerf(x.double().numpy(), 4), atol=2**-7)


def test_fourier_features_float32_exact_at_high_frequency(xp):
    # 2**15 * x with |x| up to 100: angles up to 3e6 rad, every one exact
    x = (np.round(np.linspace(-100, 100, 4001) * 64) / 64).astype(np.float32)[:, None]
    got = xp.call(posenc.fourier_features, xp.asarray(x), 16, include_input=False, dtype=xp.dtype("float32"))
    xp.assert_close(got, ref_nerf(x, 16, include_input=False), atol=5e-7)


@pytest.mark.parametrize("pi", [False, True])
def test_fourier_features_float64_coords_float32_output(xp, pi):
    # coordinates wider than the output: the angle is formed before any rounding
    if not xp.float64:
        pytest.skip("no float64 on this device")
    x = np.linspace(-7.3, 9.1, 30)[:, None]
    got = xp.call(
        posenc.fourier_features, xp.asarray(x), 12, scale_pi=pi, include_input=False, dtype=xp.dtype("float32")
    )
    xp.assert_close(got, ref_nerf(x, 12, scale_pi=pi, include_input=False), atol=3e-7)


@settings(max_examples=30, deadline=None)
@given(
    x=st.lists(st.floats(-50, 50, allow_nan=False, width=32), min_size=1, max_size=6),
    nb=st.integers(1, 8),
)
def test_fourier_bounds_and_slices(x, nb):
    x = np.asarray(x, dtype=np.float64)[:, None]
    full = posenc.fourier_features(x, nb)
    assert full.shape == (len(x), 1 + 2 * nb)
    np.testing.assert_array_equal(full[:, 0], x[:, 0])
    assert np.abs(full[:, 1:]).max() <= 1.0
    # a row's features do not depend on the other rows
    np.testing.assert_array_equal(posenc.fourier_features(x[-1:], nb), full[-1:])
    # sin^2 + cos^2 = 1 per band
    s, c = full[:, 1::2], full[:, 2::2]
    np.testing.assert_allclose(s**2 + c**2, 1.0, atol=1e-14)


def test_fourier_bad_input():
    x = np.zeros((4, 3))
    with pytest.raises(ValueError, match="num_bands"):
        posenc.fourier_features(x, -1)
    with pytest.raises(TypeError, match="num_bands"):
        posenc.fourier_features(x, 2.0)
    with pytest.raises(ValueError, match="num_bands"):
        posenc.fourier_features(x, 0, include_input=False)
    with pytest.raises(TypeError, match="max_log2_freq"):
        posenc.fourier_features(x, 3, max_log2_freq="9")
    with pytest.raises(ValueError, match="max_log2_freq"):
        posenc.fourier_features(x, 3, max_log2_freq=math.inf)
    with pytest.raises(TypeError, match="include_input"):
        posenc.fourier_features(x, 3, include_input=1)
    with pytest.raises(TypeError, match="scale_pi"):
        posenc.fourier_features(x, 3, scale_pi=None)
    with pytest.raises(TypeError, match="coords"):
        posenc.fourier_features(0.5, 3)
    with pytest.raises(ValueError, match="coords"):
        posenc.fourier_features(np.zeros(()), 3)
    with pytest.raises(ValueError, match="coords"):
        posenc.fourier_features(np.zeros((4, 0)), 3)
    with pytest.raises(ValueError, match="coords"):
        posenc.fourier_features(np.array([[np.inf]]), 3)
    with pytest.raises(TypeError, match="coords"):
        posenc.fourier_features(np.zeros((2, 2), dtype=complex), 3)


@pytest.mark.parametrize("m", [64.5, 1e300, 2**41])
def test_fourier_max_log2_freq_is_bounded(m):
    # 2**1e300 overflows: a ValueError naming the argument, never a RuntimeWarning and inf
    with pytest.raises(ValueError, match="`max_log2_freq` must be at most 64"):
        posenc.fourier_features(np.zeros((2, 1)), 2, max_log2_freq=m)


@pytest.mark.parametrize("scale_pi", [False, True])
@pytest.mark.parametrize("log_sampling", [False, True])
def test_fourier_highest_frequency_is_finite(xp, scale_pi, log_sampling):
    # the bound itself (and tiny or very negative exponents) give finite tables on every device
    x = xp.asarray(np.array([[0.375, -2.0], [1.0, 0.0]]))
    for m in (64.0, 1e-300, -1e300):
        got = xp.call(posenc.fourier_features, x, 3, max_log2_freq=m, scale_pi=scale_pi, log_sampling=log_sampling)
        xp.check_array(got, shape=(2, 14))
        if xp.has_values:
            v = xp.to_numpy(got)
            assert np.isfinite(v).all() and np.abs(v[..., 2:]).max() <= 1.0


def test_fourier_features_huge_coordinates_stay_finite(xp):
    # x * 2**k would overflow the coordinates' dtype: such coordinates (far
    # beyond any resolved angle) are clipped, never an overflow to inf / NaN
    c = np.array([[3e38], [-3e38], [0.5]])
    got = xp.call(posenc.fourier_features, xp.asarray(c), 10, include_input=False)
    xp.check_array(got, shape=(3, 20))
    if xp.has_values:
        v = xp.to_numpy(got)
        assert np.isfinite(v).all()
        xp.assert_close(got[2:, ...], ref_nerf(np.array([[0.5]]), 10, include_input=False), atol=xp.tol())


@pytest.mark.parametrize("scale", [1e300, 1.7e308])
def test_gaussian_matrix_scale_beyond_the_dtype(scale):
    with pytest.raises(ValueError, match="`scale`"):
        posenc.gaussian_matrix(4, 2, scale=scale, dtype=np.float32, seed=0)
    if scale == 1e300:  # float64 holds it
        assert np.isfinite(posenc.gaussian_matrix(4, 2, scale=scale, seed=0)).all()
    else:
        with pytest.raises(ValueError, match="`scale`"):
            posenc.gaussian_matrix(4, 2, scale=scale, seed=0)


def test_fourier_features_huge_views_are_refused_without_reading():
    # the output size is checked from the shape before the NaN scan of the values
    import time

    calls = [
        lambda: posenc.fourier_features(np.broadcast_to(np.zeros((1, 3)), (2**30, 3)), 2**10),
        lambda: posenc.gaussian_fourier_features(np.broadcast_to(np.zeros((1, 2)), (2**30, 2)), np.ones((2**10, 2))),
    ]
    for call in calls:
        t0 = time.perf_counter()
        with pytest.raises(ValueError, match=r"2\*\*40"):
            call()
        assert time.perf_counter() - t0 < 5.0  # reading the view would take minutes


# ---------------------------------------------------------------- Gaussian Fourier features
@pytest.mark.parametrize("in_dim", [1, 2, 20])
def test_gaussian_fourier_features(xp, in_dim):
    rng = np.random.default_rng(5)
    B = np.round(rng.standard_normal((16, in_dim)) * 10 * 64) / 64
    x = np.round(rng.uniform(0, 1, size=(3, 5, in_dim)) * 512) / 512
    got = xp.call(posenc.gaussian_fourier_features, xp.asarray(x), xp.asarray(B))
    # float32 devices: t = x B^T is exact here (few bits), the reduction mod 1 exact
    tol = xp.tol() * 4
    xp.assert_close(got, ref_gff(x, B), atol=tol, dtype=xp.default_float)


def test_gaussian_fourier_features_large_projection():
    # |t| ~ 1e4: sin(2 pi t) in float32 loses ~1e-3 when 2 pi t is rounded;
    # the reduction modulo 1 keeps posenc at the float32 rounding of t itself
    rng = np.random.default_rng(6)
    B = np.round(rng.standard_normal((64, 3)) * 4096) / 8  # multiples of 1/8: exact
    x = np.round(rng.uniform(-1, 1, size=(50, 3)) * 256) / 256
    got = posenc.gaussian_fourier_features(x.astype(np.float32), B.astype(np.float32), dtype=np.float32)
    # t has at most 24 significant bits here: exact in float32
    assert np.abs(got - ref_gff(x, B)).max() < 1e-6


def test_gaussian_fourier_features_dtype_and_lists():
    got = posenc.gaussian_fourier_features([[0.25, 0.5]], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    np.testing.assert_allclose(got, ref_gff([[0.25, 0.5]], [[1, 0], [0, 1], [1, 1]]), atol=1e-15)
    torch = pytest.importorskip("torch")
    got = posenc.gaussian_fourier_features(torch.zeros(2, 3), torch.ones(4, 3), dtype=torch.float16)
    assert got.dtype == torch.float16 and got.shape == (2, 8)


def test_gaussian_bad_input():
    x = np.zeros((4, 3))
    with pytest.raises(ValueError, match="`B`"):
        posenc.gaussian_fourier_features(x, np.zeros((5, 2)))
    with pytest.raises(ValueError, match="`B`"):
        posenc.gaussian_fourier_features(x, np.zeros(3))
    with pytest.raises(ValueError, match="`B`"):
        posenc.gaussian_fourier_features(x, np.zeros((0, 3)))
    with pytest.raises(TypeError, match="`B`"):
        posenc.gaussian_fourier_features(x, "B")
    with pytest.raises(TypeError, match="`B`"):
        posenc.gaussian_fourier_features(x, np.zeros((2, 3), dtype=bool))
    with pytest.raises(ValueError, match="`B`"):
        posenc.gaussian_fourier_features(x, np.full((2, 3), np.nan))
    with pytest.raises(TypeError, match="coords"):
        posenc.gaussian_fourier_features(1.0, np.zeros((2, 1)))
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="B"):
        posenc.gaussian_fourier_features(torch.zeros(4, 3), np.zeros((2, 3)))


def test_gaussian_matrix(xp):
    got = xp.call(posenc.gaussian_matrix, 32, 3, scale=2.5, seed=7, xp=xp.ns, device=xp.device)
    want = np.random.default_rng(7).standard_normal((32, 3)) * 2.5
    xp.assert_close(got, want, atol=xp.tol() * 8, rtol=1e-7 if not xp.float64 else 1e-15, dtype=xp.default_float)


def test_gaussian_matrix_statistics_and_seeds():
    b = posenc.gaussian_matrix(20000, 2, scale=10.0, seed=0)
    assert b.shape == (20000, 2)
    assert abs(b.std() - 10.0) < 0.2 and abs(b.mean()) < 0.2
    np.testing.assert_array_equal(
        posenc.gaussian_matrix(4, 2, scale=1.0, seed=3), posenc.gaussian_matrix(4, 2, scale=1.0, seed=3)
    )
    assert not np.array_equal(
        posenc.gaussian_matrix(4, 2, scale=1.0, seed=3), posenc.gaussian_matrix(4, 2, scale=1.0, seed=4)
    )
    g = np.random.default_rng(9)
    np.testing.assert_array_equal(
        posenc.gaussian_matrix(4, 2, scale=1.0, seed=g), np.random.default_rng(9).standard_normal((4, 2))
    )
    np.testing.assert_array_equal(posenc.gaussian_matrix(3, 2, scale=0.0, seed=1), 0.0)


def test_gaussian_matrix_bad_input():
    with pytest.raises(ValueError, match="num_features"):
        posenc.gaussian_matrix(0, 2, scale=1.0)
    with pytest.raises(ValueError, match="in_dim"):
        posenc.gaussian_matrix(4, 0, scale=1.0)
    with pytest.raises(ValueError, match="scale"):
        posenc.gaussian_matrix(4, 2, scale=-1.0)
    with pytest.raises(TypeError, match="scale"):
        posenc.gaussian_matrix(4, 2, scale="10")
    with pytest.raises(ValueError, match="seed"):
        posenc.gaussian_matrix(4, 2, scale=1.0, seed=-3)
    with pytest.raises(TypeError, match="seed"):
        posenc.gaussian_matrix(4, 2, scale=1.0, seed=1.5)


def test_default_max_log2_freq_is_bounded_by_num_bands():
    # the default max_log2_freq = num_bands - 1 obeys the same cap of 64 as an
    # explicit one (2**(num_bands - 1) would overflow float64 past 1024 bands)
    assert posenc.fourier_features(np.zeros((1, 1)), 65).shape == (1, 131)
    with pytest.raises(ValueError, match="`num_bands`"):
        posenc.fourier_features(np.zeros((1, 1)), 66)
    assert posenc.fourier_features(np.zeros((1, 1)), 1100, max_log2_freq=8.0).shape == (1, 2201)
    # an empty output allocates no frequency table
    assert posenc.fourier_features(np.zeros((0, 1)), 2**30, max_log2_freq=8.0).shape == (0, 2**31 + 1)
