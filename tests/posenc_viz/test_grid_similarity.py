"""plot_grid_similarity: the ViT paper's grid of cosine-similarity maps."""

from __future__ import annotations

import itertools
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.testing.decorators import check_figures_equal

import posenc
from posenc_viz import plot_grid_similarity


def _cosine_oracle(table: np.ndarray, p: int, q: int) -> float:
    """cos(e_p, e_q) with exactly rounded float64 sums (math.fsum)."""
    a = [float(v) for v in table[p]]
    b = [float(v) for v in table[q]]
    dot = math.fsum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b)))


def _maps(fig) -> list:
    return [ax for ax in fig.axes if ax.images]


def test_maps_against_float64_oracle(xp):
    h, w, prefix, dim = 3, 4, 2, 10
    rng = np.random.default_rng(1)
    host = rng.standard_normal((prefix + h * w, dim)).astype(np.float32)
    table = xp.asarray(host)
    if not xp.has_values:
        with pytest.raises(ValueError, match="`table` is a torch meta tensor"):
            plot_grid_similarity(table, (h, w), num_prefix_tokens=prefix)
        return
    fig = plot_grid_similarity(table, (h, w), num_prefix_tokens=prefix)
    maps = _maps(fig)
    assert len(maps) == h * w
    patches = host[prefix:]
    for k, ax in enumerate(maps):
        r, c = divmod(k, w)
        assert ax.get_label() == f"patch ({r}, {c})"
        assert len(ax.images) == 1
        got = np.asarray(ax.images[0].get_array())
        assert got.shape == (h, w)
        expected = np.array([[_cosine_oracle(patches, k, i * w + j) for j in range(w)] for i in range(h)])
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-13)
        assert got[r, c] == pytest.approx(1.0, abs=1e-14)


def test_layout_shared_scale_and_colour_bar():
    fig = plot_grid_similarity(posenc.sincos_grid((4, 4), 16, flatten=True))
    maps = _maps(fig)
    assert len(maps) == 16
    boxes = [ax.get_position() for ax in maps]
    # row-major: x grows along a row, y falls from one row to the next
    for r in range(4):
        row = boxes[4 * r : 4 * r + 4]
        assert all(a.x0 < b.x0 for a, b in zip(row, row[1:]))
        assert all(abs(b.y0 - row[0].y0) < 1e-12 for b in row)
    assert all(boxes[4 * r].y0 > boxes[4 * (r + 1)].y0 for r in range(3))
    assert all(not ax.axison for ax in maps)  # no ticks: the grid speaks
    images = [ax.images[0] for ax in maps]
    assert len({id(im.norm) for im in images}) == 1  # one colour scale
    assert images[0].get_clim() == (-1.0, 1.0)
    assert images[0].get_cmap().name.startswith("viridis")
    assert images[0].get_interpolation() == "nearest"
    bars = [ax for ax in fig.axes if ax not in maps]
    assert len(bars) == 1 and bars[0].get_ylabel() == "cosine similarity"
    assert images[0].colorbar is not None and images[0].colorbar.ax is bars[0]
    # the colour bar is right of every map, and no map overlaps another
    assert bars[0].get_position().x0 > max(b.x1 for b in boxes)
    assert fig._supxlabel.get_text() == "input patch column" and fig._supylabel.get_text() == "input patch row"
    numbers = sorted(t.get_text() for t in fig.texts if t.get_text().isdigit())
    assert numbers == sorted([str(i) for i in range(1, 5)] * 2)


def test_square_grid_is_inferred_and_refused_naming_grid_shape():
    vit = posenc.sincos_grid((14, 14), 32, cls_token=True, flatten=True)  # (197, 32)
    with pytest.raises(ValueError) as info:
        plot_grid_similarity(vit)
    msg = str(info.value)
    assert msg.startswith(
        "`grid_shape` is required: 197 patch rows (197 rows of `table` less `num_prefix_tokens` = 0) are not a "
        "square grid"
    )
    assert "set `num_prefix_tokens` to 1 (14x14 patches)" in msg
    fig = plot_grid_similarity(vit, num_prefix_tokens=1)
    assert len(_maps(fig)) == 196
    # both arguments named: the grid or the prefix may be the wrong one
    pattern = (
        r"`grid_shape` must be a pair of positive integers with height \* width = 196 "
        r"\(the 197 rows of `table` less `num_prefix_tokens` = 1\)"
    )
    with pytest.raises(ValueError, match=pattern):
        plot_grid_similarity(vit, (14, 15), num_prefix_tokens=1)


@check_figures_equal(extensions=["png"])
def test_prefix_rows_are_dropped(fig_test, fig_ref):
    grid = np.asarray(posenc.sincos_grid((3, 4), 12, flatten=True))
    prefixed = np.concatenate([np.full((2, 12), 7.0), grid])[None]  # (1, 2 + 12, 12), as ViTs store it
    plot_grid_similarity(prefixed, (3, 4), num_prefix_tokens=2, fig=fig_test)
    plot_grid_similarity(grid, (3, 4), fig=fig_ref)


@check_figures_equal(extensions=["png"])
def test_same_figure_from_torch_and_numpy(fig_test, fig_ref):
    torch = pytest.importorskip("torch")
    grid = np.asarray(posenc.sincos_grid((2, 3), 8, flatten=True), dtype=np.float32)
    plot_grid_similarity(torch.asarray(grid), (2, 3), fig=fig_test, cmap="RdBu_r")
    plot_grid_similarity(grid, [2, 3], fig=fig_ref, cmap="RdBu_r")


def test_a_patch_may_repeat_on_a_small_grid():
    """Repeats count toward the limit of 64 maps (or four per patch): five
    maps of the one patch of a 1x1 grid are drawn."""
    fig = plot_grid_similarity(np.ones((1, 4)), (1, 1), patches=[0, 0, (0, 0), 0, 0])
    maps = _maps(fig)
    assert len(maps) == 5 and {ax.get_label() for ax in maps} == {"patch (0, 0)"}
    plt.close(fig)


def test_chosen_patches_are_outlined():
    grid = np.asarray(posenc.sincos_grid((3, 5), 16, flatten=True))
    fig = plot_grid_similarity(grid, (3, 5), patches=[(2, 4), 6, np.int64(0)], vmin=0.0)
    maps = _maps(fig)
    assert [ax.get_label() for ax in maps] == ["patch (2, 4)", "patch (1, 1)", "patch (0, 0)"]
    for ax, (r, c) in zip(maps, [(2, 4), (1, 1), (0, 0)]):
        (box,) = ax.patches
        assert box.get_xy() == (c - 0.5, r - 0.5) and box.get_width() == box.get_height() == 1
        assert np.argmax(ax.images[0].get_array()) == r * 5 + c
    assert maps[0].images[0].get_clim() == (0.0, 1.0)
    assert fig._supxlabel is None  # the layout is not the grid: no row/column labels
    boxes = [ax.get_position() for ax in maps]
    assert boxes[0].y0 == boxes[1].y0 and boxes[2].y0 < boxes[0].y0  # two per row


def test_zero_rows_are_grey_and_fig_and_subfigure_are_used():
    table = np.ones((4, 3))
    table[2] = 0.0
    fig = plt.figure(layout="constrained")
    assert plot_grid_similarity(table, fig=fig, cbar=False) is fig
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    assert not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)  # turned off: the maps are placed by hand
    maps = _maps(fig)
    assert len(fig.axes) == 4  # no colour bar
    assert np.ma.getmaskarray(maps[2].images[0].get_array()).all()  # a zero row has no direction
    assert np.ma.getmaskarray(maps[0].images[0].get_array()).tolist() == [[False, False], [True, False]]
    parent = plt.figure()
    left, right = parent.subfigures(1, 2)
    assert plot_grid_similarity(table, fig=right) is right
    assert len(right.axes) == 5 and not left.axes


def test_bad_arguments():
    grid = np.asarray(posenc.sincos_grid((2, 2), 8, flatten=True))
    cases = [
        (dict(table=np.zeros(4)), ValueError, "`table` must be a 2-D table"),
        (dict(table=np.zeros((2, 4, 8))), ValueError, "`table` must be a 2-D table"),
        (dict(table=np.zeros((0, 8))), ValueError, "`table` must not be empty"),
        (dict(grid_shape=4), TypeError, "`grid_shape` must be a pair"),
        (dict(grid_shape=(1, 2, 2)), ValueError, "`grid_shape` must be a pair"),
        (dict(grid_shape=(2.0, 2)), TypeError, "`grid_shape` must be an integer"),
        (dict(num_prefix_tokens=True), TypeError, "`num_prefix_tokens` must be an integer"),
        (dict(num_prefix_tokens=4), ValueError, r"`num_prefix_tokens` must be in \[0, 3\]"),
        (dict(patches=3), TypeError, "`patches` must be a sequence"),
        (dict(patches=[]), ValueError, "`patches` must name at least one patch"),
        (dict(patches=[4]), ValueError, r"`patches` must hold indices in \[0, 3\]"),
        (dict(patches=[(2, 0)]), ValueError, r"inside the 2x2 grid, got \(2, 0\)"),
        (dict(patches=[1.0]), TypeError, "got an item 1.0"),
        # (a 2x2 grid: 64 maps at most, repeats included; an endless iterable is read no further)
        (dict(patches=itertools.repeat(0)), ValueError, r"`patches` must be .* \(at most 64\), got more"),
        (dict(fig="new"), TypeError, "`fig` must be a matplotlib Figure"),
        (dict(cbar=1), TypeError, "`cbar` must be a bool"),
        (dict(vmin=1.0, vmax=0.0), ValueError, "`vmin` must be less than `vmax`"),
        (dict(vmin=float("nan")), ValueError, "`vmin` must be finite"),
        (dict(norm="linear"), TypeError, "`norm` must be a matplotlib Normalize"),
        (dict(cmap="no_such_map"), ValueError, "`cmap` must be a matplotlib colormap"),
    ]
    for kw, exc, match in cases:
        kw = {"table": grid, **kw}
        before = plt.get_fignums()
        with pytest.raises(exc, match=match):
            plot_grid_similarity(**kw)
        assert plt.get_fignums() == before, kw  # refused before a figure is made


def test_default_figure_height_follows_the_grid():
    import matplotlib

    with matplotlib.rc_context({"figure.figsize": (4.0, 3.0)}):
        tall = plot_grid_similarity(np.asarray(posenc.sincos_grid((8, 2), 8, flatten=True)), (8, 2))
        wide = plot_grid_similarity(np.asarray(posenc.sincos_grid((2, 8), 8, flatten=True)), (2, 8))
    assert isinstance(tall, Figure) and tall.get_figwidth() == wide.get_figwidth() == 4.0
    assert tall.get_figheight() > 4.0 > 1.5 > wide.get_figheight()
    # each map keeps the grid's aspect: (2, 8) maps are four times as wide as high
    box = _maps(wide)[0].get_position()
    assert box.width * 4.0 / (box.height * wide.get_figheight()) == pytest.approx(4.0, rel=1e-6)
