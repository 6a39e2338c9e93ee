"""plot_window_bias: a window's (N, N) relative bias as a grid of per-query maps."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

import posenc
from posenc_viz import plot_window_bias


def _swin_bias(h, w, heads=2, seed=0):
    """A Swin bias from its definition: table[(dr + h - 1) * (2w - 1) + dc + w - 1], heads first."""
    table = np.random.default_rng(seed).standard_normal(((2 * h - 1) * (2 * w - 1), heads))
    r, c = np.divmod(np.arange(h * w), w)
    idx = (r[:, None] - r[None, :] + h - 1) * (2 * w - 1) + (c[:, None] - c[None, :] + w - 1)
    return np.moveaxis(table[idx], -1, 0)


def _maps(fig):
    return [ax for ax in fig.axes if ax.images]


def test_maps_are_the_rows_of_the_bias(xp):
    bias = _swin_bias(3, 4)
    arr = xp.asarray(bias)
    if not xp.has_values:
        with pytest.raises(ValueError, match="`bias` is a torch meta tensor"):
            plot_window_bias(arr, (3, 4), head=0)
        return
    fig = plot_window_bias(arr, (3, 4), head=1)
    maps = _maps(fig)
    assert len(maps) == 12
    for p, ax in enumerate(maps):
        r, c = divmod(p, 4)
        assert ax.get_label() == f"query ({r}, {c})"
        np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), bias[1, p].reshape(3, 4), rtol=1e-6)
        # the query's own cell is outlined
        (frame,) = ax.patches
        assert frame.get_xy() == (c - 0.5, r - 0.5)
    # both signs: one diverging scale centred on 0, shared by every map
    lim = np.abs(bias[1]).max()
    assert all(ax.images[0].get_clim() == pytest.approx((-lim, lim)) for ax in maps)
    assert maps[0].images[0].get_cmap().name.startswith("RdBu_r")
    assert fig.axes[-1].get_ylabel() == "bias"


def test_posenc_index_and_class_token():
    h, w = 2, 3
    table = -np.arange(float((2 * h - 1) * (2 * w - 1) + 3))[:, None]
    idx = posenc.relative_position_index((h, w), class_token=True)
    bias = table[idx][..., 0]
    fig = plot_window_bias(bias, (h, w), class_token=True, cbar=False)
    maps = _maps(fig)
    assert len(maps) == 6 and len(fig.axes) == 6
    np.testing.assert_array_equal(np.asarray(maps[4].images[0].get_array()), bias[5, 1:].reshape(h, w))
    # all <= 0: a sequential map over the data range
    assert maps[0].images[0].get_cmap().name.startswith("viridis")
    assert maps[0].images[0].get_clim() == (float(bias[1:, 1:].min()), float(bias[1:, 1:].max()))


def test_shift_structure_of_a_relative_bias():
    """Neighbouring queries see the same map moved by one cell."""
    bias = _swin_bias(4, 4, heads=1)[0]
    fig = plot_window_bias(bias, 4)
    maps = [np.asarray(ax.images[0].get_array()) for ax in _maps(fig)]
    np.testing.assert_array_equal(maps[5][:, 0:3], maps[6][:, 1:4])  # query (1, 1) and (1, 2)
    np.testing.assert_array_equal(maps[5][0:3, :], maps[9][1:4, :])  # query (1, 1) and (2, 1)


@pytest.mark.parametrize(
    ("bias", "window", "kwargs", "kind", "match"),
    [
        (np.zeros((9, 9)), 2, {}, ValueError, r"`bias` must have shape \(4, 4\)"),
        (np.zeros((2, 9, 9)), 3, {}, ValueError, "`head` must be given"),
        (np.zeros((2, 9, 9)), 3, {"head": 2}, ValueError, r"`head` must lie in \[0, 2\)"),
        (np.zeros((9, 9)), 3, {"head": 0}, ValueError, "`head` applies to a 3-D bias"),
        (np.zeros((9, 9)), 3.0, {}, TypeError, "`window`"),
        (np.zeros((9, 9)), (3, 0), {}, ValueError, "`window`"),
        (np.zeros((10, 10)), 3, {"class_token": 1}, TypeError, "`class_token`"),
        (np.zeros((9, 9)), 3, {"cbar": "yes"}, TypeError, "`cbar`"),
    ],
)
def test_bad_input(bias, window, kwargs, kind, match):
    with pytest.raises(kind, match=match):
        plot_window_bias(bias, window, **kwargs)


def test_into_a_given_figure():
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    fig = plt.figure(layout="constrained")
    out = plot_window_bias(np.eye(4), (2, 2), fig=fig)
    # the maps are placed by hand: the layout engine is turned off
    assert out is fig and not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)
    assert len(_maps(fig)) == 4
