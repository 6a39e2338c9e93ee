"""Attention-bias maps: ALiBi, T5 buckets, clipped relative positions, and the
2-D relative bias of an attention window."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ._common import matrix_2d
from ._convert import to_numpy
from ._internals import show
from .heatmap import draw_matrix

__all__ = ["plot_bias", "plot_window_bias"]


def plot_bias(
    bias: Any,
    *,
    head: int | None = None,
    ax: Any = None,
    cmap: Any = None,
    center: Any = "auto",
    vmin: float | None = None,
    vmax: float | None = None,
    cbar: bool = True,
    cbar_label: str | None = "bias",
    cbar_kws: dict | None = None,
    xlabel: str | None = "key position $j$",
    ylabel: str | None = "query position $i$",
    title: str | None = None,
    **kwargs: Any,
) -> Any:
    """Heatmap of an attention bias: queries down, keys across.

    For ALiBi (:func:`posenc.alibi_bias`), T5 bucket maps
    (:func:`posenc.t5_buckets`), clipped relative positions and any other
    ``(query, key)`` matrix, one head at a time.  Masked cells (NaN or
    infinite, such as a causal ``-inf``) are drawn light grey.

    Parameters
    ----------
    bias : array
        Shape ``(query, key)`` or ``(heads, query, key)``, any backend,
        floating or integer.
    head : int, optional
        The head to draw from a 3-D ``bias``; needed unless there is one head.
    ax : matplotlib.axes.Axes, optional
        Default the current Axes.
    cmap : str or Colormap, optional
        Default ``"RdBu_r"`` for a centred map, ``"viridis"`` otherwise.
    center : float, None or "auto", default "auto"
        ``"auto"``: centre on 0 (symmetric limits, diverging map) when the
        finite values have both signs, else a sequential map over the data
        range (ALiBi's biases are all <= 0, bucket indices >= 0).  A number
        centres on it; ``None`` never centres.
    vmin, vmax : float, optional
        Colour limits.
    cbar, cbar_label, cbar_kws
        The colour bar, its label and its keyword arguments.
    xlabel, ylabel, title : str or None
        Labels.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.imshow`.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn in (``ax``, by default the current Axes).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np, posenc_viz
    >>> i = np.arange(6)
    >>> bias = -0.5 * np.abs(i[None, :] - i[:, None])  # one ALiBi head
    >>> fig, ax = plt.subplots()
    >>> ax = posenc_viz.plot_bias(bias, ax=ax)
    >>> ax.images[0].get_clim()
    (-2.5, 0.0)
    >>> plt.close(fig)
    """
    arr = to_numpy(bias, name="bias")
    if arr.ndim not in (2, 3):
        msg = f"`bias` must have shape (query, key) or (heads, query, key), got shape {tuple(arr.shape)}"
        raise ValueError(msg)
    if head is not None and (isinstance(head, bool) or not isinstance(head, numbers.Integral)):
        msg = f"`head` must be an int or None, got {show(head)}"
        raise TypeError(msg)
    if arr.ndim == 3:
        heads = arr.shape[0]
        if head is None:
            if heads != 1:
                msg = f"`head` must be given for a bias with {heads} heads (shape {tuple(arr.shape)})"
                raise ValueError(msg)
            head = 0
        if not 0 <= int(head) < heads:
            msg = f"`head` must lie in [0, {heads}), got {head}"
            raise ValueError(msg)
        arr = arr[int(head)]
    elif head is not None:
        msg = f"`head` applies to a 3-D bias (heads, query, key), got shape {tuple(arr.shape)}"
        raise ValueError(msg)
    arr = matrix_2d(arr, "bias")  # 2-D by now: the emptiness check and bools as int8
    if isinstance(center, str):
        if center != "auto":
            msg = f"`center` must be a number, None or 'auto', got {show(center)}"
            raise ValueError(msg)
        finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
        both = finite.size > 0 and float(finite.min()) < 0.0 < float(finite.max())
        center = 0.0 if both else None
    return draw_matrix(
        ax,
        arr,
        cmap=cmap,
        center=center,
        vmin=vmin,
        vmax=vmax,
        cbar=cbar,
        cbar_label=cbar_label,
        cbar_kws=cbar_kws,
        xlabel=xlabel,
        ylabel=ylabel,
        title=title,
        kwargs=kwargs,
    )


def plot_window_bias(
    bias: Any,
    window: int | tuple[int, int],
    *,
    head: int | None = None,
    class_token: bool = False,
    fig: Any = None,
    cbar: bool = True,
    cbar_label: str | None = "bias",
    **kwargs: Any,
) -> Any:
    """The 2-D relative bias of an attention window as a grid of maps (Swin, BEiT).

    For each query patch of a ``height x width`` window, a small map of the
    bias it adds to every key patch, placed where the query sits in the
    window: a relative bias makes every map the same picture, shifted with
    its query (the query's own cell, outlined, is offset 0).  All maps share
    one colour scale and one colour bar: centred on 0 with a diverging map
    when the biases have both signs, else a sequential map over their range.

    Parameters
    ----------
    bias : array
        Shape ``(N, N)`` or ``(heads, N, N)`` with ``N = height * width``
        patches numbered row-major (``N + 1`` with ``class_token``), any
        backend: ``table[posenc.relative_position_index(window)]`` moved to
        heads first, as Swin adds it to its logits.
    window : int or (int, int)
        The window ``(height, width)``; an int is a square window.
    head : int, optional
        The head to draw from a 3-D ``bias``; needed unless there is one head.
    class_token : bool, default False
        The first row and column belong to a class token (BEiT): not drawn.
    fig : matplotlib.figure.Figure or SubFigure, optional
        Where to draw; default a new pyplot figure (its layout engine is
        turned off: the function places the maps itself).
    cbar, cbar_label
        The shared colour bar and its label.
    **kwargs
        Passed to every :meth:`matplotlib.axes.Axes.imshow` (``cmap``,
        ``vmin``, ``vmax``, ``interpolation`` ...).

    Returns
    -------
    matplotlib.figure.Figure
        One Axes per query patch, row-major, each named ``"query (row,
        col)"`` with one image of its ``(height, width)`` map, then the colour
        bar's Axes.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np, posenc, posenc_viz
    >>> table = -np.hypot(*np.meshgrid(np.arange(-2, 3), np.arange(-2, 3), indexing="ij")).reshape(-1, 1)
    >>> bias = table[posenc.relative_position_index(3)][..., 0]  # (9, 9), one head
    >>> fig = posenc_viz.plot_window_bias(bias, 3)
    >>> maps = [ax for ax in fig.axes if ax.images]
    >>> len(maps), maps[4].get_label(), float(maps[4].images[0].get_array()[1, 1])
    (9, 'query (1, 1)', 0.0)
    >>> plt.close(fig)
    """
    from . import _mpl
    from .grid_similarity import CBAR_PAD, CBAR_WIDTH, GAP, grid_figure, margins
    from .heatmap import colormap, real_or_none

    arr = to_numpy(bias, name="bias")
    if isinstance(window, bool) or not isinstance(window, (numbers.Integral, tuple, list)):
        msg = f"`window` must be an int or a pair (height, width) of ints, got {show(window)}"
        raise TypeError(msg)
    sides = (window, window) if isinstance(window, numbers.Integral) else tuple(window)
    if len(sides) != 2 or any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1 for s in sides):
        msg = f"`window` must be an int or a pair (height, width) of positive ints, got {show(window)}"
        raise ValueError(msg)
    h, w = int(sides[0]), int(sides[1])
    if not isinstance(class_token, (bool, np.bool_)):
        msg = f"`class_token` must be a bool, got {show(class_token)}"
        raise TypeError(msg)
    n = h * w + (1 if class_token else 0)
    if arr.ndim not in (2, 3) or arr.shape[-2:] != (n, n):
        msg = f"`bias` must have shape ({n}, {n}) or (heads, {n}, {n}) for window {(h, w)}, got shape {arr.shape}"
        raise ValueError(msg)
    if arr.ndim == 3:
        if head is None and arr.shape[0] != 1:
            msg = f"`head` must be given for a bias with {arr.shape[0]} heads (shape {tuple(arr.shape)})"
            raise ValueError(msg)
        head = 0 if head is None else head
        if isinstance(head, bool) or not isinstance(head, numbers.Integral):
            msg = f"`head` must be an int or None, got {show(head)}"
            raise TypeError(msg)
        if not 0 <= int(head) < arr.shape[0]:
            msg = f"`head` must lie in [0, {arr.shape[0]}), got {head}"
            raise ValueError(msg)
        arr = arr[int(head)]
    elif head is not None:
        msg = f"`head` applies to a 3-D bias (heads, N, N), got shape {tuple(arr.shape)}"
        raise ValueError(msg)
    if not isinstance(cbar, (bool, np.bool_)):
        msg = f"`cbar` must be a bool, got {show(cbar)}"
        raise TypeError(msg)
    if cbar_label is not None and not isinstance(cbar_label, str):
        msg = f"`cbar_label` must be a str or None, got {type(cbar_label).__name__}"
        raise TypeError(msg)
    grid = np.asarray(arr[1:, 1:] if class_token else arr, dtype=np.float64)
    mcolors = _mpl.require("matplotlib.colors")
    opts = dict(kwargs)
    vmin = real_or_none(opts.pop("vmin", None), "vmin")
    vmax = real_or_none(opts.pop("vmax", None), "vmax")
    finite = grid[np.isfinite(grid)]
    lo = float(finite.min()) if finite.size else 0.0
    hi = float(finite.max()) if finite.size else 1.0
    centred = lo < 0.0 < hi
    if centred and vmin is None and vmax is None:
        top = max(-lo, hi)
        vmin, vmax = -top, top
    vmin = lo if vmin is None else vmin
    vmax = hi if vmax is None else vmax
    if not vmin < vmax:  # a constant bias: a unit range around it
        vmin, vmax = vmin - 0.5, vmin + 0.5
    cmap = colormap(opts.pop("cmap", None), "RdBu_r" if centred else "viridis")
    norm = mcolors.Normalize(vmin=vmin, vmax=vmax)
    opts.setdefault("interpolation", "nearest")
    fig = grid_figure(fig, h, w, ratio=h / w, labels=False, cbar=cbar)
    left, right, bottom, top_m = margins(False, cbar)
    fw, fh = fig.bbox.width / fig.dpi, fig.bbox.height / fig.dpi
    avail_w, avail_h = max(fw - left - right, 1e-3), max(fh - bottom - top_m, 1e-3)
    pw = min(avail_w / w, avail_h / h)  # square cells: each map is h/w as high as wide
    ph = pw * h / w
    pw, ph = min(pw, avail_w / w), min(ph, avail_h / h)
    x0 = left + (avail_w - pw * w) / 2.0
    y0 = bottom + (avail_h - ph * h) / 2.0
    gap = GAP * min(pw, ph)
    patches_mod = _mpl.require("matplotlib.patches")
    first = None
    for p in range(h * w):
        r, c = divmod(p, w)
        rect = ((x0 + c * pw + gap / 2) / fw, (y0 + (h - 1 - r) * ph + gap / 2) / fh, (pw - gap) / fw, (ph - gap) / fh)
        ax = fig.add_axes(rect, label=f"query ({r}, {c})")
        im = ax.imshow(np.ma.masked_invalid(grid[p].reshape(h, w)), cmap=cmap, norm=norm, **opts)
        first = im if first is None else first
        ax.set_axis_off()
        ax.add_patch(
            patches_mod.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=0.8, clip_on=False)
        )
    if cbar:
        mpl = _mpl.require("matplotlib")
        box = ((x0 + pw * w + CBAR_PAD) / fw, (y0 + gap / 2) / fh, CBAR_WIDTH / fw, (ph * h - gap) / fh)
        cb = fig.colorbar(first, cax=fig.add_axes(box), **({"label": cbar_label} if cbar_label else {}))
        cb.outline.set_linewidth(mpl.rcParams["axes.linewidth"])
    return fig
