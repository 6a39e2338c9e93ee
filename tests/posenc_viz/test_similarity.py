"""plot_similarity and plot_similarity_by_offset."""

from __future__ import annotations

import cmath
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.testing.decorators import check_figures_equal

import posenc
from posenc_viz import plot_similarity, plot_similarity_by_offset


def _pe64(n: int, dim: int) -> np.ndarray:
    p = np.arange(n, dtype=np.float64)[:, None]
    w = 10000.0 ** (-2 * np.arange(dim // 2) / dim)
    return np.stack([np.sin(p * w), np.cos(p * w)], axis=-1).reshape(n, dim)


def test_similarity_matrix_from_every_backend(xp, ax):
    pe = posenc.sinusoidal(xp.asarray(np.arange(24)), 32, xp=xp.ns)
    if not xp.has_values:
        with pytest.raises(ValueError, match="meta tensor"):
            plot_similarity(pe, ax=ax)
        return
    assert plot_similarity(pe, ax=ax) is ax
    im = ax.images[0]
    ref = _pe64(24, 32)
    expected = ref @ ref.T
    np.testing.assert_allclose(np.asarray(im.get_array()), expected, atol=1e-4 if not xp.float64 else 1e-9)
    arr = np.asarray(im.get_array())
    np.testing.assert_allclose(arr, arr.T, atol=1e-12)
    # constant along every diagonal: depends on t - s only
    for k in range(-5, 6):
        d = np.diagonal(arr, k)
        np.testing.assert_allclose(d, d[0], atol=1e-4)
    assert im.get_clim() == pytest.approx((arr.min(), arr.max()))
    assert im.get_cmap().name.startswith("viridis")
    assert im.colorbar.ax.get_ylabel() == r"$PE_s \cdot PE_t$"
    assert ax.get_xlabel() == "position $t$" and ax.get_ylabel() == "position $s$"


def test_similarity_normalized_and_centered(ax):
    pe = posenc.sinusoidal(10, 16) * 3.0
    plot_similarity(pe, normalize=True, center=0.0, ax=ax)
    im = ax.images[0]
    arr = np.asarray(im.get_array())
    np.testing.assert_allclose(np.diag(arr), 1.0, atol=1e-12)
    lo, hi = im.get_clim()
    assert lo == -hi == pytest.approx(-1.0)
    assert im.get_cmap().name.startswith("RdBu_r")
    assert im.colorbar.ax.get_ylabel() == "cosine similarity"
    fig, ax2 = plt.subplots()
    plot_similarity(np.zeros((3, 4)), normalize=True, ax=ax2)  # zero rows: masked, no warning
    assert np.ma.getmaskarray(ax2.images[0].get_array()).all()


@check_figures_equal(extensions=["png"])
def test_similarity_equals_plain_imshow(fig_test, fig_ref):
    pe = posenc.sinusoidal(16, 8)
    plot_similarity(pe, ax=fig_test.subplots(), cbar=False)
    ax = fig_ref.subplots()
    ax.imshow(pe @ pe.T, cmap="viridis", aspect="auto", interpolation="antialiased")
    ax.set_xlabel("position $t$")
    ax.set_ylabel("position $s$")


def test_similarity_bad_input(ax):
    with pytest.raises(ValueError, match="`pe` must be a 2-D array"):
        plot_similarity(np.zeros(3), ax=ax)
    with pytest.raises(TypeError, match="`normalize` must be a bool"):
        plot_similarity(np.eye(2), normalize=1, ax=ax)
    with pytest.raises(TypeError, match="`cbar_label` must be a str or None, got int"):
        plot_similarity(np.eye(2), cbar_label=0, ax=ax)
    for normalize in (np.zeros((50, 50), dtype=bool), np.array(True)):
        with pytest.raises(TypeError, match="`normalize` must be a bool, got a") as info:
            plot_similarity(np.eye(2), normalize=normalize, ax=ax)
        assert len(str(info.value)) < 200
    with pytest.raises(TypeError, match="`normalize` must be a bool") as info:
        plot_similarity_by_offset(8, 4, normalize=np.zeros(1000), ax=ax)
    assert "shape (1000,)" in str(info.value) and len(str(info.value)) < 200
    assert not ax.images and not ax.lines


# -------------------------------------------------------------------- offset
@pytest.mark.parametrize("dim", [512, 10])
def test_offset_curve_is_even(ax, dim):
    plot_similarity_by_offset(dim, 40, ax=ax)
    line = ax.lines[0]
    k = np.asarray(line.get_xdata())
    y = np.asarray(line.get_ydata())
    np.testing.assert_array_equal(k, np.arange(-40, 41))
    w = 10000.0 ** (-2 * np.arange(dim // 2) / dim)
    np.testing.assert_allclose(y, np.cos(k[:, None] * w).sum(axis=1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y, y[::-1], atol=1e-12)
    assert y[40] == pytest.approx(dim / 2)
    assert ax.get_xlim() == (-40.0, 40.0)
    assert any(tuple(line.get_xdata()) == (0.0, 0.0) for line in ax.lines[1:])  # k = 0 marked
    assert ax.get_xlabel() == "offset $k$ (positions)"
    assert ax.get_ylabel() == r"$PE_t \cdot PE_{t+k}$"


def test_offsets_from_every_backend(xp, ax):
    k_np = np.arange(-8, 9)
    k = xp.asarray(k_np, dtype="int32")
    if not xp.has_values:
        with pytest.raises(ValueError, match="`offsets` is a torch meta tensor"):
            plot_similarity_by_offset(16, k, ax=ax)
        return
    plot_similarity_by_offset(16, k, normalize=True, ax=ax, color="k")
    y = np.asarray(ax.lines[0].get_ydata())
    w = 10000.0 ** (-2 * np.arange(8) / 16)
    np.testing.assert_allclose(y, np.cos(k_np[:, None] * w).mean(axis=1), atol=1e-12)
    assert y[8] == pytest.approx(1.0)
    assert ax.get_ylabel() == "cosine similarity"


def _rope_bound_oracle(k: int, dim: int, base: float = 10000.0) -> float:
    """RoFormer (Su et al.), section 3.4.3: (1/(d/2)) sum_j |sum_{i<j} e^{i k theta_i}|."""
    m = dim // 2
    theta = [base ** (-2.0 * i / dim) for i in range(m)]
    total, s = 0.0, 0j
    for j in range(m):
        s += cmath.exp(1j * k * theta[j])
        total += abs(s)
    return total / m


def test_rope_bound(ax):
    plot_similarity_by_offset(128, np.arange(0, 257, 16), kind="rope_bound", ax=ax)
    line = ax.lines[0]
    y = np.asarray(line.get_ydata())
    expected = [_rope_bound_oracle(int(k), 128) for k in line.get_xdata()]
    np.testing.assert_allclose(y, expected, rtol=1e-12)
    assert y[0] == pytest.approx((64 + 1) / 2)
    assert y[-1] < y[0] / 3  # the long-term decay
    assert ax.get_ylabel() == "relative upper bound"
    fig, ax2 = plt.subplots()
    plot_similarity_by_offset(128, 4, kind="rope_bound", normalize=True, ax=ax2)
    y2 = np.asarray(ax2.lines[0].get_ydata())
    assert y2[4] == pytest.approx(1.0)
    np.testing.assert_allclose(y2, y2[::-1], atol=1e-12)


@pytest.mark.parametrize(
    ("offsets", "kwargs", "kind", "match"),
    [
        (-1, {}, ValueError, "`offsets` must be a non-negative int"),
        (2.5, {}, TypeError, "`offsets` must be an int n"),
        (np.zeros((2, 2)), {}, ValueError, "`offsets` must be a non-empty 1-D array"),
        (np.array([0.0, math.nan]), {}, ValueError, "`offsets` must be finite"),
        (4, {"kind": "alibi"}, ValueError, "`kind` must be 'sinusoidal' or 'rope_bound'"),
        (4, {"normalize": "yes"}, TypeError, "`normalize` must be a bool"),
        (4, {"base": 0.0}, ValueError, "`base` must be > 0"),
    ],
)
def test_offset_bad_input(offsets, kwargs, kind, match):
    with pytest.raises(kind, match=match):
        plot_similarity_by_offset(16, offsets, **kwargs)
