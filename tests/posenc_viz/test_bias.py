"""plot_bias: (heads?, query, key) maps from any backend."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.testing.decorators import check_figures_equal

import posenc
from posenc_viz import plot_bias


def _alibi_oracle(heads: int, n: int) -> np.ndarray:
    """Press et al.: -m_h |i - j| with m_h = 2^(-8h/heads) for a power of two."""
    m = 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads)
    d = np.abs(np.arange(n)[None, :] - np.arange(n)[:, None])
    return -m[:, None, None] * d


def test_hand_made_bias_from_every_backend(xp, ax):
    bias = _alibi_oracle(4, 6)
    arr = xp.asarray(bias)
    if not xp.has_values:
        with pytest.raises(ValueError, match="`bias` is a torch meta tensor"):
            plot_bias(arr, head=0, ax=ax)
        return
    assert plot_bias(arr, head=1, ax=ax) is ax
    im = ax.images[0]
    np.testing.assert_allclose(np.asarray(im.get_array()), bias[1], rtol=1e-6)
    # all <= 0: a sequential map over the data range
    assert im.get_clim() == pytest.approx((bias[1].min(), 0.0))
    assert im.get_cmap().name.startswith("viridis")
    assert ax.get_xlabel() == "key position $j$"
    assert ax.get_ylabel() == "query position $i$"
    assert im.colorbar.ax.get_ylabel() == "bias"


def test_alibi_bias_of_posenc(ax):
    if not hasattr(posenc, "alibi_bias"):
        pytest.skip("posenc.alibi_bias is not in this tree yet")
    bias = posenc.alibi_bias(8, 12)
    plot_bias(bias, head=7, ax=ax)
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), _alibi_oracle(8, 12)[7], rtol=1e-6)


def test_t5_buckets_of_posenc(ax):
    if not hasattr(posenc, "t5_buckets"):
        pytest.skip("posenc.t5_buckets is not in this tree yet")
    buckets = posenc.t5_buckets(20, 20)
    plot_bias(buckets, ax=ax, cbar_label="bucket")
    im = ax.images[0]
    np.testing.assert_array_equal(np.asarray(im.get_array()), np.asarray(buckets))
    assert im.get_clim() == (0.0, float(np.max(buckets)))


def test_signed_bias_is_centered_and_masks_grey(ax):
    bias = np.array([[0.0, -np.inf, -np.inf], [1.0, 0.5, -np.inf], [-2.0, 0.25, 0.0]])
    plot_bias(bias, ax=ax, cmap="PuOr")
    im = ax.images[0]
    assert im.get_clim() == (-2.0, 2.0)
    assert im.get_cmap().name.startswith("PuOr")
    mask = np.ma.getmaskarray(im.get_array())
    np.testing.assert_array_equal(mask, np.isinf(bias))
    assert im.get_cmap().get_bad() == pytest.approx((0.85, 0.85, 0.85, 1.0))


def test_center_options_and_single_head(ax):
    bias = np.arange(6.0).reshape(1, 2, 3) - 1.0
    plot_bias(bias, center=None, ax=ax, cbar=False)  # one head: no head= needed
    assert ax.images[0].get_clim() == (-1.0, 4.0)
    plot_bias(bias[0], center=1.5, ax=ax, cbar=False)
    assert ax.images[1].get_clim() == (-1.0, 4.0)
    plot_bias(np.ones((2, 2), dtype=bool), ax=ax, cbar=False)
    assert ax.images[2].get_clim() == (0.5, 1.5)


@check_figures_equal(extensions=["png"])
def test_bias_equals_plain_imshow(fig_test, fig_ref):
    bias = _alibi_oracle(2, 8)
    plot_bias(bias, head=0, ax=fig_test.subplots(), cbar=False, title="head 1")
    ax = fig_ref.subplots()
    ax.imshow(bias[0], cmap="viridis", aspect="auto", interpolation="antialiased")
    ax.set_xlabel("key position $j$")
    ax.set_ylabel("query position $i$")
    ax.set_title("head 1")


def test_current_axes():
    fig, ax = plt.subplots()
    assert plot_bias(np.eye(3)) is ax


@pytest.mark.parametrize(
    ("bias", "kwargs", "kind", "match"),
    [
        (np.zeros(3), {}, ValueError, r"`bias` must have shape \(query, key\) or \(heads, query, key\)"),
        (np.zeros((2, 2, 2, 2)), {}, ValueError, "`bias` must have shape"),
        (np.zeros((4, 3, 3)), {}, ValueError, "`head` must be given for a bias with 4 heads"),
        (np.zeros((4, 3, 3)), {"head": 4}, ValueError, r"`head` must lie in \[0, 4\)"),
        (np.zeros((4, 3, 3)), {"head": 1.0}, TypeError, "`head` must be an int"),
        (np.zeros((3, 3)), {"head": 0}, ValueError, "`head` applies to a 3-D bias"),
        (np.zeros((0, 3)), {}, ValueError, "`bias` must not be empty"),
        (np.zeros((3, 3)), {"center": "middle"}, ValueError, "`center` must be a number, None or 'auto'"),
        ([[1, 2], [3]], {}, TypeError, "`bias` must be an array"),
        (np.zeros((3, 3)), {"cbar_label": 0}, TypeError, "`cbar_label` must be a str or None, got int"),
        (
            np.zeros((3, 3)),
            {"head": np.zeros(500)},
            TypeError,
            r"`head` must be an int or None, got an array of shape \(500,\)",
        ),
    ],
)
def test_bad_input(bias, kwargs, kind, match):
    with pytest.raises(kind, match=match):
        plot_bias(bias, **kwargs)
