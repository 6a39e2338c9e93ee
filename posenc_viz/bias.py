"""Attention-bias maps: ALiBi, T5 buckets, clipped relative positions."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ._common import matrix_2d
from ._convert import to_numpy
from ._internals import show
from .heatmap import draw_matrix

__all__ = ["plot_bias"]


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
