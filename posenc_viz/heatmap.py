"""Heatmaps of encoding tables (positions x dimensions)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _mpl
from ._common import matrix_2d, set_labels
from ._internals import check_bool, show

__all__ = ["plot_encoding"]

#: Colour-blind-safe defaults: a diverging map for data centred on a value
#: and a perceptually uniform sequential map otherwise.
DIVERGING = "RdBu_r"
SEQUENTIAL = "viridis"


def real_or_none(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        msg = f"`{name}` must be a real number or None, got {show(value)}"
        raise TypeError(msg)
    value = float(value)
    if not math.isfinite(value):
        msg = f"`{name}` must be finite, got {show(value)}"
        raise ValueError(msg)
    return value


def colormap(cmap: Any, default: str) -> Any:
    """``cmap`` (a name or a Colormap; ``None`` means ``default``) with NaN
    and masked cells drawn light grey."""
    mpl = _mpl.require("matplotlib")
    mcolors = _mpl.require("matplotlib.colors")
    cmap = default if cmap is None else cmap
    if isinstance(cmap, str):
        try:
            cmap = mpl.colormaps[cmap]
        except KeyError:
            msg = f"`cmap` must be a matplotlib colormap or its name, got {show(cmap)}"
            raise ValueError(msg) from None
    if not isinstance(cmap, mcolors.Colormap):
        msg = f"`cmap` must be a matplotlib colormap or its name, got {type(cmap).__name__}"
        raise TypeError(msg)
    return cmap.with_extremes(bad="0.85")


def draw_matrix(
    ax: Any,
    data: np.ndarray,
    *,
    cmap: Any,
    center: float | None,
    vmin: float | None,
    vmax: float | None,
    cbar: bool,
    cbar_label: str | None,
    cbar_kws: dict | None,
    xlabel: str | None,
    ylabel: str | None,
    title: str | None,
    kwargs: dict,
) -> Any:
    """Draw a 2-D host array with ``imshow`` in ``ax`` (default the current
    Axes), label it and return the Axes; shared by every heatmap.

    With ``center`` the colour limits are symmetric around it (diverging
    map); without, they follow the data or ``vmin``/``vmax`` (sequential
    map).  NaN and infinite cells (masks such as causal ``-inf``) are drawn
    in light grey and ignored for the limits.
    """
    ax = _mpl.get_ax(ax)
    mpl = _mpl.require("matplotlib")
    center = real_or_none(center, "center")
    vmin = real_or_none(vmin, "vmin")
    vmax = real_or_none(vmax, "vmax")
    check_bool(cbar, "cbar")
    if cbar_label is not None and not isinstance(cbar_label, str):
        msg = f"`cbar_label` must be a str or None, got {type(cbar_label).__name__}"
        raise TypeError(msg)
    if cbar_kws is not None and not isinstance(cbar_kws, dict):
        msg = f"`cbar_kws` must be a dict, got {type(cbar_kws).__name__}"
        raise TypeError(msg)
    values = np.ma.masked_invalid(data.astype(np.float64, copy=False))
    finite = values.compressed()
    if center is not None:
        if vmin is not None and vmax is not None:
            msg = "pass at most one of `vmin` and `vmax` with `center` (the limits are symmetric around it)"
            raise ValueError(msg)
        if vmax is not None:
            half = abs(vmax - center)
        elif vmin is not None:
            half = abs(center - vmin)
        else:
            half = float(np.max(np.abs(finite - center))) if finite.size else 1.0
        if half == 0.0:
            half = 1.0
        vmin, vmax = center - half, center + half
        default_cmap = DIVERGING
    else:
        if finite.size and vmin is None and vmax is None and float(finite.min()) == float(finite.max()):
            vmin, vmax = float(finite.min()) - 0.5, float(finite.max()) + 0.5
        default_cmap = SEQUENTIAL
    cmap = colormap(cmap, default_cmap)
    # "antialiased": nearest-neighbour when each cell spans several pixels, a
    # smoothing filter when there are more cells than pixels (no moire)
    opts = {"aspect": "auto", "interpolation": "antialiased"}
    opts.update(kwargs)
    im = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, **opts)
    if cbar:
        kws = {"label": cbar_label} if cbar_label else {}
        kws.update(cbar_kws or {})
        cb = ax.get_figure().colorbar(im, ax=ax, **kws)
        cb.outline.set_linewidth(mpl.rcParams["axes.linewidth"])
    set_labels(ax, xlabel, ylabel, title)
    return ax


def plot_encoding(
    pe: Any,
    *,
    ax: Any = None,
    cmap: Any = None,
    center: float | None = 0.0,
    vmin: float | None = None,
    vmax: float | None = None,
    cbar: bool = True,
    cbar_label: str | None = "value",
    cbar_kws: dict | None = None,
    xlabel: str | None = "dimension",
    ylabel: str | None = "position",
    title: str | None = None,
    **kwargs: Any,
) -> Any:
    """Heatmap of an encoding table: positions down, dimensions across.

    The classic picture of the sinusoidal table: the low dimensions on the
    left oscillate fast with the position, the high dimensions on the right
    barely change.  Colour limits are symmetric around ``center`` (0), so
    white means zero in the default diverging map.

    Parameters
    ----------
    pe : array
        Table of shape ``(positions, dim)`` from any backend (see
        :func:`to_numpy`).
    ax : matplotlib.axes.Axes, optional
        Axes to draw in; default the current Axes.
    cmap : str or Colormap, optional
        Default ``"RdBu_r"`` (diverging, colour-blind safe) when ``center``
        is set, else ``"viridis"``.
    center : float or None, default 0.0
        Value at the middle of the colour map; the limits become
        ``center -/+ max|pe - center|``.  ``None``: limits from the data (for
        non-negative codes such as :func:`posenc.binary`).
    vmin, vmax : float, optional
        Colour limits; with ``center`` at most one of them (the other is its
        mirror image).
    cbar : bool, default True
        Draw a colour bar.
    cbar_label : str or None, default "value"
        Label of the colour bar.
    cbar_kws : dict, optional
        Keyword arguments for :meth:`matplotlib.figure.Figure.colorbar`.
    xlabel, ylabel, title : str or None
        Labels; ``None`` leaves them unset.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.imshow` (``interpolation``,
        ``extent``, ``rasterized``, ...).

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn in (``ax``, by default the current Axes).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import posenc, posenc_viz
    >>> fig, ax = plt.subplots()
    >>> ax = posenc_viz.plot_encoding(posenc.sinusoidal(100, 512), ax=ax)
    >>> ax.images[0].get_clim()
    (-1.0, 1.0)
    >>> plt.close(fig)
    """
    data = matrix_2d(pe, "pe")
    return draw_matrix(
        ax,
        data,
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

