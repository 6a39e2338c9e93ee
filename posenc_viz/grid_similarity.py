"""The ViT paper's figure: a grid of cosine-similarity maps of a 2-D table,
one map per patch (:func:`plot_grid_similarity`), and the grid layouts the
command line and the figure set share."""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import _mpl
from ._convert import to_numpy
from ._internals import check_bool, show
from .heatmap import colormap, real_or_none
from .similarity import cosine_maps

__all__ = ["plot_grid_similarity"]


def table_2d(table: Any, name: str = "table") -> np.ndarray:
    """``table`` as a non-empty 2-D host array; leading axes of size 1 (a
    ViT's ``pos_embed`` of shape ``(1, N, D)``) are dropped."""
    arr = to_numpy(table, name=name)
    while arr.ndim > 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 2:
        msg = f"`{name}` must be a 2-D table (positions, dim) or (1, positions, dim), got shape {tuple(arr.shape)}"
        raise ValueError(msg)
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        msg = f"`{name}` must not be empty, got shape {tuple(arr.shape)}"
        raise ValueError(msg)
    return arr


def _int_arg(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        msg = f"{name} must be an integer, got {show(value)}"
        raise TypeError(msg)
    return int(value)


def grid_layout(
    rows: int, grid_shape: Any, num_prefix_tokens: Any, *, names: Mapping[str, str] | None = None
) -> tuple[int, int, int]:
    """``(prefix, height, width)`` of a table of ``rows`` rows: the prefix
    rows are dropped and the rest must fill the grid.  ``names`` renames the
    parameters in the messages (the command's ``--grid`` and ``--prefix``)."""
    names = {
        "grid_shape": "`grid_shape`", "num_prefix_tokens": "`num_prefix_tokens`", "table": "`table`", **(names or {})
    }
    gname, pname, tname = names["grid_shape"], names["num_prefix_tokens"], names["table"]
    prefix = _int_arg(num_prefix_tokens, pname)
    if not 0 <= prefix < rows:
        msg = f"{pname} must be in [0, {rows - 1}] ({tname} has {rows} rows), got {prefix}"
        raise ValueError(msg)
    n = rows - prefix
    if grid_shape is None:
        side = math.isqrt(n)
        if side * side != n:
            msg = (
                f"{gname} is required: {n} patch rows ({rows} rows of {tname} less {pname} = {prefix}) are not a "
                "square grid"
            )
            one = math.isqrt(n - 1) if n > 1 else 0
            if prefix == 0 and n > 1 and one * one == n - 1:
                msg += f"; with a cls token first, set {pname} to 1 ({one}x{one} patches)"
            raise ValueError(msg)
        return prefix, side, side
    if isinstance(grid_shape, (str, bytes, Mapping)) or not isinstance(grid_shape, Sequence):
        msg = f"{gname} must be a pair (height, width) of positive integers or None, got {show(grid_shape)}"
        raise TypeError(msg)
    if len(grid_shape) != 2:
        msg = f"{gname} must be a pair (height, width), got {show(grid_shape)}"
        raise ValueError(msg)
    h, w = (_int_arg(v, gname) for v in grid_shape)
    if h < 1 or w < 1 or h * w != n:
        msg = (
            f"{gname} must be a pair of positive integers with height * width = {n} "
            f"(the {rows} rows of {tname} less {pname} = {prefix}), got ({h}, {w})"
        )
        raise ValueError(msg)
    return prefix, h, w


#: ``patches`` may name up to four maps per patch of the grid, and never
#: fewer than this many (repeats included)
PATCHES_AT_LEAST = 64


def _patch_list(patches: Any, h: int, w: int) -> list[tuple[int, int]] | None:
    """``(row, col)`` of each chosen patch, or None for all of them."""
    if patches is None:
        return None
    what = "a sequence of patch indices (int, row-major) or (row, col) pairs"
    if isinstance(patches, (str, bytes, Mapping, numbers.Number)):
        msg = f"`patches` must be {what}, got {show(patches)}"
        raise TypeError(msg)
    shape = getattr(patches, "shape", None)
    limit = max(PATCHES_AT_LEAST, 4 * h * w)  # (an iterable is read that far, no further)
    if isinstance(shape, tuple) and math.prod(int(s) for s in shape) > 2 * limit:
        msg = f"`patches` must be {what} (at most {limit}), got {show(patches)}"
        raise ValueError(msg)
    try:
        items = list(itertools.islice(iter(patches), limit + 1))
    except TypeError:
        msg = f"`patches` must be {what}, got {show(patches)}"
        raise TypeError(msg) from None
    if len(items) > limit:
        msg = f"`patches` must be {what} (at most {limit}), got more"
        raise ValueError(msg)
    if not items:
        msg = "`patches` must name at least one patch"
        raise ValueError(msg)
    out = []
    for item in items:
        if isinstance(item, numbers.Integral) and not isinstance(item, (bool, np.bool_)):
            i = int(item)
            if not 0 <= i < h * w:
                msg = f"`patches` must hold indices in [0, {h * w - 1}] of the {h}x{w} grid, got {i}"
                raise ValueError(msg)
            out.append(divmod(i, w))
            continue
        pair = None
        if isinstance(item, (tuple, list)) and len(item) == 2:
            pair = item
        elif getattr(item, "shape", None) == (2,):
            pair = tuple(item)
        ints = pair is not None and all(
            isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in pair
        )
        if not ints:
            msg = f"`patches` must be {what}, got an item {show(item)}"
            raise TypeError(msg)
        r, c = int(pair[0]), int(pair[1])
        if not (0 <= r < h and 0 <= c < w):
            msg = f"`patches` must hold (row, col) pairs inside the {h}x{w} grid, got ({r}, {c})"
            raise ValueError(msg)
        out.append((r, c))
    return out


#: layout of the small maps, in inches and in font heights
GAP = 0.08  # between two maps, as a fraction of a map's pitch
EDGE = 0.04
CBAR_PAD = 0.1
CBAR_WIDTH = 0.07


def margins(labels: bool, cbar: bool) -> tuple[float, float, float, float]:
    """Left, right, bottom and top margins in inches for the current rcParams."""
    mpl = _mpl.require("matplotlib")
    font_manager = _mpl.require("matplotlib.font_manager")

    def inches(key: str) -> float:
        return font_manager.FontProperties(size=mpl.rcParams[key]).get_size_in_points() / 72.0

    label = (1.3 * inches("axes.labelsize") + 1.6 * inches("xtick.labelsize") + 2 * EDGE) if labels else EDGE
    # pad, bar, ticks, labels such as "-0.75", the bar's label
    bar = CBAR_PAD + CBAR_WIDTH + 0.05 + 3.2 * inches("ytick.labelsize") + 1.5 * inches("axes.labelsize") + 0.1
    right = bar if cbar else EDGE
    return label, right, label, EDGE


def grid_figsize(
    width: float, nrows: int, ncols: int, *, ratio: float = 1.0, labels: bool = True, cbar: bool = True
) -> float:
    """Height in inches of a ``width``-wide figure of ``nrows x ncols`` maps,
    each ``ratio`` times as high as wide."""
    left, right, bottom, top = margins(labels, cbar)
    return round(bottom + top + max(width - left - right, 0.5) * ratio * nrows / ncols, 4)


def plot_grid_similarity(
    table: Any,
    grid_shape: tuple[int, int] | None = None,
    *,
    num_prefix_tokens: int = 0,
    patches: Sequence[Any] | None = None,
    fig: Any = None,
    cbar: bool = True,
    cbar_label: str | None = "cosine similarity",
    xlabel: str | None = "input patch column",
    ylabel: str | None = "input patch row",
    **kwargs: Any,
) -> Any:
    """Cosine similarity of each patch's position embedding with every other patch's.

    The figure of the ViT paper (Dosovitskiy et al., 2021, Fig. 7): for
    each patch of a ``height x width`` grid, a small map of the cosine
    similarity between its embedding and the embedding of every patch,
    placed where the patch sits in the grid.  A learned table whose maps
    peak at the patch and fall off with distance, in rows and columns, has
    learned the 2-D layout of the image.  All maps share one colour scale
    (-1 to 1 unless ``vmin`` / ``vmax`` or ``norm`` say otherwise) and one
    colour bar; similarities are computed in float64 on the host.

    Parameters
    ----------
    table : array
        Position embeddings ``(rows, dim)`` from any backend, or
        ``(1, rows, dim)`` as ViTs store them.  The first
        ``num_prefix_tokens`` rows (cls and register tokens) are dropped;
        the rest are the patches in row-major order.
    grid_shape : (int, int), optional
        ``(height, width)`` of the patch grid.  Default: a square grid,
        when the number of patch rows is a square (a ``(197, 768)`` table
        needs ``num_prefix_tokens=1`` for 14 x 14).
    num_prefix_tokens : int, default 0
        Rows before the patches.
    patches : sequence, optional
        Only these patches, each a row-major index or a ``(row, col)`` pair
        (counted from 0), drawn in that order on a near-square layout with
        the patch itself outlined; a patch may repeat, up to 64 maps or four
        per patch of the grid, whichever is more.  Default: every patch, laid out as the
        grid (the axes then count rows and columns from 1, as the paper).
    fig : matplotlib.figure.Figure or SubFigure, optional
        Where to draw; default a new pyplot figure as wide as
        ``rcParams["figure.figsize"]`` and as high as the grid needs.  The
        function places the Axes itself (hundreds of small Axes would make
        a layout engine slow), so a Figure's layout engine is turned off.
    cbar : bool, default True
        Draw the shared colour bar.
    cbar_label : str or None, default "cosine similarity"
        Its label.
    xlabel, ylabel : str or None
        Labels of the grid's columns and rows (full grid only).
    **kwargs
        Passed to every :meth:`matplotlib.axes.Axes.imshow` (``cmap``,
        default ``"viridis"``; ``vmin``, ``vmax`` or ``norm``;
        ``interpolation`` ...).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (or ``fig``): one Axes per map, in the order drawn, each
        holding one image of the ``(height, width)`` similarity map and
        named ``"patch (row, col)"`` (:meth:`~matplotlib.artist.Artist.get_label`),
        then the colour bar's Axes.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import posenc, posenc_viz
    >>> table = posenc.sincos_grid((4, 6), 64, cls_token=True, flatten=True)
    >>> table.shape
    (25, 64)
    >>> fig = posenc_viz.plot_grid_similarity(table, (4, 6), num_prefix_tokens=1)
    >>> maps = [ax for ax in fig.axes if ax.images]
    >>> len(maps), maps[7].get_label(), maps[7].images[0].get_array().shape
    (24, 'patch (1, 1)', (4, 6))
    >>> float(maps[7].images[0].get_array()[1, 1])
    1.0
    >>> plt.close(fig)
    """
    data = table_2d(table)
    prefix, h, w = grid_layout(data.shape[0], grid_shape, num_prefix_tokens)
    chosen = _patch_list(patches, h, w)
    check_bool(cbar, "cbar")
    for name, value in (("cbar_label", cbar_label), ("xlabel", xlabel), ("ylabel", ylabel)):
        if value is not None and not isinstance(value, str):
            msg = f"`{name}` must be a str or None, got {type(value).__name__}"
            raise TypeError(msg)
    mcolors = _mpl.require("matplotlib.colors")
    opts = dict(kwargs)
    cmap = colormap(opts.pop("cmap", None), "viridis")
    norm = opts.pop("norm", None)
    vmin = real_or_none(opts.pop("vmin", None), "vmin")
    vmax = real_or_none(opts.pop("vmax", None), "vmax")
    if norm is not None:
        if vmin is not None or vmax is not None:
            msg = "pass `norm` or `vmin` / `vmax`, not both"
            raise ValueError(msg)
        if not isinstance(norm, mcolors.Normalize):
            msg = f"`norm` must be a matplotlib Normalize, got {type(norm).__name__}"
            raise TypeError(msg)
    else:
        vmin = -1.0 if vmin is None else vmin
        vmax = 1.0 if vmax is None else vmax
        if not vmin < vmax:
            msg = f"`vmin` must be less than `vmax`, got {vmin} and {vmax}"
            raise ValueError(msg)
        norm = mcolors.Normalize(vmin=vmin, vmax=vmax)
    opts.setdefault("interpolation", "nearest")  # a few pixels per cell: no smoothing

    cells = [(r, c) for r in range(h) for c in range(w)] if chosen is None else chosen
    grid = data[prefix:]
    sims = cosine_maps(grid[[r * w + c for r, c in cells]], grid)

    full = chosen is None
    if full:
        nrows, ncols = h, w
    else:
        ncols = math.ceil(math.sqrt(len(cells)))
        nrows = math.ceil(len(cells) / ncols)
    labels = full and (xlabel is not None or ylabel is not None)
    fig = grid_figure(fig, nrows, ncols, ratio=h / w, labels=labels, cbar=cbar)
    left, right, bottom, top = margins(labels, cbar)
    fw, fh = fig.bbox.width / fig.dpi, fig.bbox.height / fig.dpi
    avail_w, avail_h = max(fw - left - right, 1e-3), max(fh - bottom - top, 1e-3)
    # each map is h/w times as high as wide; the block of maps is centred
    pw = min(avail_w / ncols, avail_h / (nrows * h / w))
    ph = pw * h / w
    x0 = left + (avail_w - pw * ncols) / 2.0
    y0 = bottom + (avail_h - ph * nrows) / 2.0
    gap = GAP * min(pw, ph)
    mpl = _mpl.require("matplotlib")
    tick_size = mpl.rcParams["xtick.labelsize"]
    step_r = 1 if h <= 16 else math.ceil(h / 8)
    step_c = 1 if w <= 16 else math.ceil(w / 8)
    first = None
    for k, ((r, c), sim) in enumerate(zip(cells, sims)):
        i, j = divmod(k, ncols) if not full else (r, c)
        rect = (
            (x0 + j * pw + gap / 2) / fw,
            (y0 + (nrows - 1 - i) * ph + gap / 2) / fh,
            (pw - gap) / fw,
            (ph - gap) / fh,
        )
        ax = fig.add_axes(rect, label=f"patch ({r}, {c})")
        im = ax.imshow(np.ma.masked_invalid(sim.reshape(h, w)), cmap=cmap, norm=norm, **opts)
        if first is None:
            first = im
        ax.set_axis_off()  # no ticks or frame: hundreds of axis artists would dominate the drawing time
        if not full:
            patches_mod = _mpl.require("matplotlib.patches")
            frame = patches_mod.Rectangle(
                (c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=0.8, clip_on=False
            )
            ax.add_patch(frame)
    if labels:
        # rows and columns counted from 1 under and beside the grid, as in the paper
        pad = 0.03
        for c in range(w):
            if (c + 1) % step_c == 0 or c == 0:
                x = (x0 + (c + 0.5) * pw) / fw
                fig.text(x, (y0 - pad) / fh, str(c + 1), ha="center", va="top", fontsize=tick_size)
        for r in range(h):
            if (r + 1) % step_r == 0 or r == 0:
                y = (y0 + (h - r - 0.5) * ph) / fh
                fig.text((x0 - pad) / fw, y, str(r + 1), ha="right", va="center", fontsize=tick_size)
        cx = (x0 + pw * ncols / 2.0) / fw
        cy = (y0 + ph * nrows / 2.0) / fh
        if xlabel is not None:
            fig.supxlabel(xlabel, x=cx, y=EDGE / fh, va="bottom", fontsize=mpl.rcParams["axes.labelsize"])
        if ylabel is not None:
            fig.supylabel(ylabel, x=EDGE / fw, y=cy, ha="left", fontsize=mpl.rcParams["axes.labelsize"])
    if cbar:
        box = ((x0 + pw * ncols + CBAR_PAD) / fw, (y0 + gap / 2) / fh, CBAR_WIDTH / fw, (ph * nrows - gap) / fh)
        cax = fig.add_axes(box)
        kws = {"label": cbar_label} if cbar_label else {}
        cb = fig.colorbar(first, cax=cax, **kws)
        cb.outline.set_linewidth(mpl.rcParams["axes.linewidth"])
    return fig


def grid_figure(fig: Any, nrows: int, ncols: int, *, ratio: float, labels: bool, cbar: bool) -> Any:
    mfig = _mpl.require("matplotlib.figure")
    if fig is None:
        mpl = _mpl.require("matplotlib")
        width = float(mpl.rcParams["figure.figsize"][0])
        height = grid_figsize(width, nrows, ncols, ratio=ratio, labels=labels, cbar=cbar)
        return _mpl.pyplot().figure(figsize=(width, height), layout="none")
    if not isinstance(fig, mfig.FigureBase):
        msg = f"`fig` must be a matplotlib Figure or SubFigure or None, got {type(fig).__name__}"
        raise TypeError(msg)
    if isinstance(fig, mfig.Figure) and fig.get_layout_engine() is not None:
        try:
            fig.set_layout_engine("none")
        except RuntimeError as exc:
            msg = f"`fig` keeps its layout engine ({exc}); pass a figure without one"
            raise ValueError(msg) from None
    return fig
