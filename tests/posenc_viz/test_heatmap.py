"""plot_encoding: the table as an image with symmetric colour limits."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.testing.decorators import check_figures_equal

import posenc
from posenc_viz import plot_encoding


def _oracle(n: int, dim: int) -> np.ndarray:
    """Vaswani et al.'s table in float64, interleaved."""
    p = np.arange(n, dtype=np.float64)[:, None]
    i = np.arange(dim // 2, dtype=np.float64)[None, :]
    ang = p / 10000.0 ** (2 * i / dim)
    out = np.empty((n, dim))
    out[:, 0::2] = np.sin(ang)
    out[:, 1::2] = np.cos(ang)
    return out


def test_image_is_the_table(xp, ax):
    # built the backend's way: under jax.jit, as a lazy (uncomputed) Dask graph
    pe = xp.call(posenc.sinusoidal, xp.asarray(np.arange(20)), 16)
    if not xp.has_values:
        with pytest.raises(ValueError, match="`pe` is a torch meta tensor"):
            plot_encoding(pe, ax=ax)
        return
    out = plot_encoding(pe, ax=ax)
    assert out is ax
    (im,) = ax.images
    np.testing.assert_allclose(np.asarray(im.get_array()), _oracle(20, 16), atol=1e-6)
    lo, hi = im.get_clim()
    assert lo == -hi
    assert hi == pytest.approx(1.0)
    assert ax.get_xlabel() == "dimension"
    assert ax.get_ylabel() == "position"
    assert im.colorbar is not None
    assert im.colorbar.ax.get_ylabel() == "value"
    assert im.get_cmap().name.startswith("RdBu_r")


def test_symmetric_limits_follow_the_data(ax):
    data = np.array([[0.1, -0.3], [0.2, 0.05]])
    plot_encoding(data, ax=ax)
    assert ax.images[0].get_clim() == (-0.3, 0.3)
    plot_encoding(data + 1.0, ax=ax, center=1.0, cbar=False)
    lo, hi = ax.images[1].get_clim()
    assert (lo, hi) == pytest.approx((0.7, 1.3))
    plot_encoding(data, ax=ax, vmax=2.0, cbar=False)
    assert ax.images[2].get_clim() == (-2.0, 2.0)
    plot_encoding(np.zeros((2, 2)), ax=ax, cbar=False)  # a flat table still has a range
    assert ax.images[3].get_clim() == (-1.0, 1.0)


def test_sequential_without_center(ax):
    codes = posenc.binary(8, 3)
    plot_encoding(codes, ax=ax, center=None, cbar_label="bit")
    im = ax.images[0]
    assert im.get_clim() == (0.0, 1.0)
    assert im.get_cmap().name.startswith("viridis")
    assert im.colorbar.ax.get_ylabel() == "bit"


def test_current_axes_and_kwargs():
    fig, ax = plt.subplots()
    out = plot_encoding(np.eye(3), cmap="PuOr", interpolation="bilinear", cbar=False, title="t", xlabel=None)
    assert out is ax
    im = ax.images[0]
    assert im.get_cmap().name.startswith("PuOr")
    assert im.get_interpolation() == "bilinear"
    assert ax.get_title() == "t"
    assert ax.get_xlabel() == ""
    assert im.colorbar is None
    assert len(fig.axes) == 1


def test_nonfinite_cells_are_masked(ax):
    data = np.array([[0.5, np.nan], [-np.inf, -0.25]])
    plot_encoding(data, ax=ax, cbar=False)
    arr = ax.images[0].get_array()
    assert np.ma.is_masked(arr)
    np.testing.assert_array_equal(np.ma.getmaskarray(arr), [[False, True], [True, False]])
    assert ax.images[0].get_clim() == (-0.5, 0.5)


@check_figures_equal(extensions=["png"])
def test_equals_plain_imshow(fig_test, fig_ref):
    pe = posenc.sinusoidal(30, 24)
    plot_encoding(pe, ax=fig_test.subplots())
    ax = fig_ref.subplots()
    im = ax.imshow(pe, cmap="RdBu_r", vmin=-1.0, vmax=1.0, aspect="auto", interpolation="antialiased")
    fig_ref.colorbar(im, ax=ax, label="value")
    ax.set_xlabel("dimension")
    ax.set_ylabel("position")


@pytest.mark.parametrize(
    ("pe", "kwargs", "kind", "match"),
    [
        (np.zeros(4), {}, ValueError, r"`pe` must be a 2-D array, got shape \(4,\)"),
        (np.zeros((1, 2, 3)), {}, ValueError, "`pe` must be a 2-D array"),
        (np.zeros((0, 3)), {}, ValueError, "`pe` must not be empty"),
        ("table", {}, TypeError, "`pe` must be an array"),
        (np.eye(2), {"cmap": "no-such-map"}, ValueError, "`cmap` must be a matplotlib colormap"),
        (np.eye(2), {"cmap": 3}, TypeError, "`cmap` must be a matplotlib colormap"),
        (np.eye(2), {"vmin": -1, "vmax": 2}, ValueError, "at most one of `vmin` and `vmax`"),
        (np.eye(2), {"center": "zero"}, TypeError, "`center` must be a real number"),
        (np.eye(2), {"vmax": math.inf}, ValueError, "`vmax` must be finite"),
        (np.eye(2), {"cbar": 1}, TypeError, "`cbar` must be a bool"),
        (np.eye(2), {"cbar_kws": 1}, TypeError, "`cbar_kws` must be a dict"),
        (np.eye(2), {"xlabel": 5}, TypeError, "`xlabel` must be a str"),
        (np.eye(2), {"cbar_label": 0}, TypeError, "`cbar_label` must be a str or None, got int"),
        (np.eye(2), {"cbar_label": b"v"}, TypeError, "`cbar_label` must be a str or None, got bytes"),
        (np.eye(2), {"cbar_label": 0, "cbar": False}, TypeError, "`cbar_label` must be a str or None"),
        (np.eye(2), {"ax": "left"}, TypeError, "`ax` must be a matplotlib Axes"),
    ],
)
def test_bad_input(pe, kwargs, kind, match):
    with pytest.raises(kind, match=match):
        plot_encoding(pe, **kwargs)


def test_messages_describe_arrays_briefly(ax):
    """An array passed for a number is described by shape and dtype, not printed."""
    with pytest.raises(TypeError, match="`center` must be a real number or None") as info:
        plot_encoding(np.eye(2), center=np.zeros((100, 100)), ax=ax)
    msg = str(info.value)
    assert "shape (100, 100)" in msg and len(msg) < 200
    assert not ax.images  # refused before drawing
