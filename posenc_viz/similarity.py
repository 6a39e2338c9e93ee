"""Dot products between encodings: the similarity matrix and its offset profile."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

import posenc

from . import _mpl
from ._common import matrix_2d, set_labels
from ._convert import to_numpy
from ._internals import check_bool, check_size, show
from .heatmap import draw_matrix

__all__ = ["plot_similarity", "plot_similarity_by_offset"]

KINDS = ("sinusoidal", "rope_bound")


def plot_similarity(
    pe: Any,
    *,
    normalize: bool = False,
    ax: Any = None,
    cmap: Any = None,
    center: float | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    cbar: bool = True,
    cbar_label: str | None = None,
    cbar_kws: dict | None = None,
    xlabel: str | None = "position $t$",
    ylabel: str | None = "position $s$",
    title: str | None = None,
    **kwargs: Any,
) -> Any:
    r"""The matrix of dot products :math:`PE_s \cdot PE_t` of a table.

    For the sinusoidal table every diagonal is constant: the product depends
    on :math:`t - s` only, and the matrix is symmetric, so it cannot tell
    which position comes first.  Computed on the host in float64 from any
    backend's table.

    Parameters
    ----------
    pe : array
        Table ``(positions, dim)`` from any backend.
    normalize : bool, default False
        Cosine similarity (rows scaled to unit norm; zero rows give NaN,
        drawn grey).
    ax : matplotlib.axes.Axes, optional
        Default the current Axes.
    cmap : str or Colormap, optional
        Default ``"viridis"`` (sequential), or ``"RdBu_r"`` with ``center``.
    center : float, optional
        Centre a diverging map on this value (symmetric limits).
    vmin, vmax : float, optional
        Colour limits.
    cbar, cbar_label, cbar_kws
        The colour bar, its label (default: what is drawn) and keyword
        arguments for :meth:`matplotlib.figure.Figure.colorbar`.
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
    >>> import posenc, posenc_viz
    >>> fig, ax = plt.subplots()
    >>> ax = posenc_viz.plot_similarity(posenc.sinusoidal(50, 64), ax=ax)
    >>> ax.images[0].get_array().shape
    (50, 50)
    >>> plt.close(fig)
    """
    check_bool(normalize, "normalize")
    data = matrix_2d(pe, "pe").astype(np.float64)
    # cosine similarity from unit rows: no overflow for very large rows, NaN for zero rows
    sim = cosine_maps(data, data) if normalize else np.asarray(posenc.similarity(data))
    if cbar_label is None:
        cbar_label = "cosine similarity" if normalize else r"$PE_s \cdot PE_t$"
    return draw_matrix(
        ax,
        sim,
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


def _offsets(offsets: Any) -> np.ndarray:
    if isinstance(offsets, numbers.Integral) and not isinstance(offsets, bool):
        n = int(offsets)
        if n < 0:
            msg = f"`offsets` must be a non-negative int or an array, got {n}"
            raise ValueError(msg)
        check_size((2 * n + 1,), "`offsets` range -n..n")
        return np.arange(-n, n + 1)
    if isinstance(offsets, (bool, float, str)):
        msg = f"`offsets` must be an int n (offsets -n..n) or a 1-D array, got {show(offsets)}"
        raise TypeError(msg)
    shape = getattr(offsets, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(s, numbers.Integral) for s in shape):
        # the size first (from the shape alone), before any copy or scan
        check_size(tuple(int(s) for s in shape), "`offsets` array")
    k = to_numpy(offsets, name="offsets")
    check_size(k.shape, "`offsets` array")
    if k.ndim != 1 or k.size == 0:
        msg = f"`offsets` must be a non-empty 1-D array, got shape {tuple(k.shape)}"
        raise ValueError(msg)
    if not np.all(np.isfinite(k)):
        msg = "`offsets` must be finite: it contains NaN or infinite values"
        raise ValueError(msg)
    return k


def rope_decay_bound(offsets: np.ndarray, freqs: np.ndarray) -> np.ndarray:
    r"""RoFormer's relative upper bound :math:`\frac{1}{d/2}\sum_{j=1}^{d/2} |S_j|`.

    :math:`S_j = \sum_{i<j} e^{\mathrm{i}\, k\, \theta_i}` (Su et al., 2021,
    section 3.4.3), evaluated in float64 on the host.
    """
    k = np.asarray(offsets, dtype=np.float64)
    ang = k[:, None] * np.asarray(freqs, dtype=np.float64)[None, :]
    s = np.cumsum(np.exp(1j * ang), axis=1)
    return np.abs(s).mean(axis=1)


def plot_similarity_by_offset(
    dim: int,
    offsets: Any = 100,
    *,
    base: float = 10000.0,
    convention: str = "paper",
    normalize: bool = False,
    kind: str = "sinusoidal",
    ax: Any = None,
    xlabel: str | None = "offset $k$ (positions)",
    ylabel: str | None = None,
    title: str | None = None,
    **kwargs: Any,
) -> Any:
    r"""Dot product of two encodings against their offset.

    ``kind="sinusoidal"`` draws :math:`PE_t \cdot PE_{t+k} = \sum_i
    \cos(k\,\omega_i)` (:func:`posenc.similarity_by_offset`): an even curve,
    the same for :math:`k` and :math:`-k` — the table knows distances, not
    directions.  ``kind="rope_bound"`` draws RoFormer's relative upper bound
    :math:`\frac{1}{d/2}\sum_{j=1}^{d/2}\bigl|\sum_{i<j} e^{\mathrm{i} k
    \theta_i}\bigr|` with the same frequencies: RoPE's long-term decay.  A
    thin vertical line marks :math:`k = 0`.

    Parameters
    ----------
    dim : int
        Model (or rotary head) dimension.
    offsets : int or array, default 100
        An int ``n`` draws offsets ``-n .. n``; an array (any backend) is
        used as given.
    base : float, default 10000.0
        Base of the frequencies.
    convention : {"paper", "fairseq", "tensor2tensor"}
        Frequency spacing, see :func:`posenc.frequencies`.
    normalize : bool, default False
        Divide by the value at offset 0 (:math:`d/2` for the table,
        :math:`(d/2 + 1)/2` for the bound): 1 at :math:`k = 0`.
    kind : {"sinusoidal", "rope_bound"}
        What to draw.
    ax : matplotlib.axes.Axes, optional
        Default the current Axes.
    xlabel, ylabel, title : str or None
        Labels; ``ylabel`` defaults to the quantity drawn.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.plot`.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn in (``ax``, by default the current Axes).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import posenc_viz
    >>> fig, ax = plt.subplots()
    >>> ax = posenc_viz.plot_similarity_by_offset(512, 50, ax=ax)
    >>> y = ax.lines[0].get_ydata()
    >>> bool((y == y[::-1]).all())
    True
    >>> plt.close(fig)
    """
    if not isinstance(kind, str) or kind not in KINDS:
        msg = f"`kind` must be 'sinusoidal' or 'rope_bound', got {show(kind)}"
        raise (ValueError if isinstance(kind, str) else TypeError)(msg)
    check_bool(normalize, "normalize")
    k = _offsets(offsets)
    if kind == "sinusoidal":
        y = np.asarray(
            posenc.similarity_by_offset(
                k.astype(np.float64), dim, base=base, convention=convention, normalize=normalize
            ),
            dtype=np.float64,
        )
        default_ylabel = "cosine similarity" if normalize else r"$PE_t \cdot PE_{t+k}$"
    else:
        freqs = np.asarray(posenc.frequencies(dim, base=base, convention=convention), dtype=np.float64)
        if freqs.size == 0:
            msg = f"`dim` must be at least 2 for kind='rope_bound', got {show(dim)}"
            raise ValueError(msg)
        y = rope_decay_bound(k, freqs)
        if normalize:
            y = y / ((freqs.size + 1) / 2.0)
        default_ylabel = "relative upper bound" + (" (normalised)" if normalize else "")
    ax = _mpl.get_ax(ax)
    ax.plot(k, y, **kwargs)
    lo, hi = float(np.min(k)), float(np.max(k))
    if lo < 0.0 < hi:
        ax.axvline(0.0, color="0.6", linewidth=0.6, zorder=0)
    if math.isfinite(lo) and hi > lo:
        ax.set_xlim(lo, hi)
    set_labels(ax, xlabel, default_ylabel if ylabel is None else ylabel, title)
    return ax


def _unit_rows(x: np.ndarray) -> np.ndarray:
    """The rows of ``x`` scaled to unit length in float64 (a zero row gives
    NaN); each row is divided by its largest entry first, so that neither
    very large nor subnormal rows overflow or underflow."""
    x = np.asarray(x, dtype=np.float64)
    big = np.max(np.abs(x), axis=1, keepdims=True) if x.size else np.ones((x.shape[0], 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        x = x / big
        return x / np.sqrt(np.einsum("ij,ij->i", x, x))[:, None]


def cosine_maps(patches: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Cosine similarity of each of ``patches`` with every row of ``rows``,
    in float64 (a zero row gives NaN)."""
    return _unit_rows(patches) @ _unit_rows(rows).T
