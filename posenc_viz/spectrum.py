"""Frequency content: wavelength spectra, per-dimension curves, RoPE scalings."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import posenc

from . import _mpl
from ._common import matrix_2d, set_labels
from ._convert import to_numpy
from ._internals import check_bool, show

__all__ = ["plot_wavelengths", "plot_dimensions", "plot_rope_scaling"]

QUANTITIES = ("wavelength", "frequency")
YLABEL = {
    "wavelength": "wavelength (positions)",
    "frequency": "angular frequency (rad / position)",
}


def check_quantity(quantity: Any) -> str:
    if not isinstance(quantity, str) or quantity not in QUANTITIES:
        msg = f"`quantity` must be 'wavelength' or 'frequency', got {show(quantity)}"
        raise (ValueError if isinstance(quantity, str) else TypeError)(msg)
    return quantity


def _fmt_number(x: float) -> str:
    """10000 -> '10^4' (as mathtext), 500000 -> '5·10^5', 2.5 -> '2.5'."""
    if x > 0:
        e = math.floor(math.log10(x) + 1e-12)
        m = x / 10.0**e
        if e >= 4 and abs(m - round(m)) < 1e-9:
            m = round(m)
            return f"10^{{{e}}}" if m == 1 else rf"{m}\cdot 10^{{{e}}}"
    return f"{x:g}"


def _bound_line(ax: Any, y: float, text: str, *, linestyle: Any = (0, (4, 2)), left: bool = False) -> None:
    """A grey horizontal reference line at ``y``, its label just above it at
    the right (or left) edge."""
    ax.axhline(y, color="0.45", linestyle=linestyle, linewidth=0.8, zorder=1)
    ax.annotate(
        text,
        xy=(0.0 if left else 1.0, y),
        xycoords=("axes fraction", "data"),
        xytext=(2 if left else -2, 2),
        textcoords="offset points",
        ha="left" if left else "right",
        va="bottom",
        fontsize="small",
        color="0.3",
    )


#: plotted values beyond these (decades) leave no room for matplotlib's log
#: axis margins and tick decades within the float range
_LOG_RANGE = (1e-200, 1e200)


def check_log_range(shown: list[float], quantity: str, what: str, base: Any) -> None:
    """``ValueError`` naming ``what`` unless every value in ``shown`` fits a log axis."""
    if not (_LOG_RANGE[0] <= min(shown) and max(shown) <= _LOG_RANGE[1]):
        msg = (
            f"{what} puts the {quantity} axis at {min(shown):.3g} to {max(shown):.3g}, beyond what a log axis "
            f"can draw ({_LOG_RANGE[0]:g} to {_LOG_RANGE[1]:g}), got base={show(base)}"
        )
        raise ValueError(msg)


def plot_wavelengths(
    dim: int,
    *,
    base: float = 10000.0,
    convention: str = "paper",
    quantity: str = "wavelength",
    bounds: bool = True,
    ax: Any = None,
    xlabel: str | None = "frequency index $i$",
    ylabel: str | None = None,
    title: str | None = None,
    **kwargs: Any,
) -> Any:
    r"""Wavelength (or frequency) of each sin/cos pair, on a log scale.

    The sinusoidal table's wavelengths :math:`2\pi/\omega_i` form a
    geometric progression from :math:`2\pi` (the fastest pair) to just below
    :math:`\mathrm{base}\cdot 2\pi`: a straight line on the log scale.  The
    two bounds are drawn as dashed lines.

    Parameters
    ----------
    dim : int
        Model dimension; ``dim // 2`` pairs are drawn.
    base : float, default 10000.0
        Base of the progression; the values drawn (with the bounds) must lie
        within 1e-200 and 1e200, the range a log axis can draw.
    convention : {"paper", "fairseq", "tensor2tensor"}
        Frequency spacing, see :func:`posenc.frequencies`.
    quantity : {"wavelength", "frequency"}
        ``"wavelength"``: :math:`2\pi/\omega_i` in positions, bounds
        :math:`2\pi` and :math:`\mathrm{base}\cdot 2\pi`.  ``"frequency"``:
        :math:`\omega_i` in radians per position, bounds 1 and ``1/base``.
    bounds : bool, default True
        Mark the two bounds.
    ax : matplotlib.axes.Axes, optional
        Default the current Axes.
    xlabel, ylabel, title : str or None
        ``ylabel`` defaults to the quantity with its unit.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.plot` (``label``, ``color``).

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
    >>> ax = posenc_viz.plot_wavelengths(512)
    >>> ax.get_yscale(), len(ax.lines[0].get_ydata())
    ('log', 256)
    >>> plt.close(fig)
    """
    quantity = check_quantity(quantity)
    check_bool(bounds, "bounds")
    if quantity == "wavelength":
        y = np.asarray(posenc.wavelengths(dim, base=base, convention=convention), dtype=np.float64)
    else:
        y = np.asarray(posenc.frequencies(dim, base=base, convention=convention), dtype=np.float64)
    if y.size == 0:
        msg = f"`dim` must be at least 2 to have a sin/cos pair, got {show(dim)}"
        raise ValueError(msg)
    if quantity == "wavelength":
        lines = [2.0 * math.pi, float(base) * 2.0 * math.pi]
    else:
        lines = [1.0, 1.0 / float(base)]
    check_log_range([float(np.min(y)), float(np.max(y)), *lines], quantity, "`base`", base)
    ax = _mpl.get_ax(ax)
    opts: dict[str, Any] = {"marker": "o" if y.size <= 32 else None}
    opts.update(kwargs)
    ax.plot(np.arange(y.size), y, **opts)
    ax.set_yscale("log")
    if bounds:
        b = _fmt_number(float(base))
        if quantity == "wavelength":
            _bound_line(ax, lines[0], r"$2\pi$")
            _bound_line(ax, lines[1], rf"${b}\cdot 2\pi$")
        else:
            _bound_line(ax, lines[0], "$1$")
            _bound_line(ax, lines[1], rf"$1/{b}$" if "cdot" not in b else rf"$1/({b})$")
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi * 3.0)  # room for the upper bound's label
    ax.set_xlim(-0.5, y.size - 0.5)
    set_labels(ax, xlabel, YLABEL[quantity] if ylabel is None else ylabel, title)
    return ax


def _check_dims(dims: Any, width: int) -> list[int]:
    if isinstance(dims, numbers.Integral) and not isinstance(dims, bool):
        dims = [dims]
    array_like = hasattr(dims, "__array_namespace__") or isinstance(dims, np.ndarray)
    if isinstance(dims, (str, bytes)) or not isinstance(dims, Sequence) and not array_like:
        msg = f"`dims` must be an int or a sequence of ints, got {type(dims).__name__}"
        raise TypeError(msg)
    if not isinstance(dims, Sequence):
        arr = to_numpy(dims, name="dims")
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            msg = f"`dims` must be a 1-D array of integers, got dtype {arr.dtype} and shape {arr.shape}"
            raise TypeError(msg)
        dims = arr.tolist()
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            msg = f"`dims` must contain integers, got {show(d)}"
            raise TypeError(msg)
        d = int(d)
        if not 0 <= d < width:
            msg = f"`dims` must lie in [0, {width}) for a table with {width} columns, got {d}"
            raise ValueError(msg)
        out.append(d)
    if not out:
        msg = "`dims` must name at least one column"
        raise ValueError(msg)
    return out


def plot_dimensions(
    pe: Any,
    dims: Any,
    *,
    positions: Any = None,
    labels: Sequence[str] | None = None,
    legend: bool = True,
    ax: Any = None,
    xlabel: str | None = "position",
    ylabel: str | None = "value",
    title: str | None = None,
    **kwargs: Any,
) -> Any:
    """Chosen columns of a table against the position (the "clock hands").

    Each column of the sinusoidal table is a sinusoid of the position; the
    low columns turn fast, the high ones slowly, like the hands of a clock.

    Parameters
    ----------
    pe : array
        Table of shape ``(positions, dim)`` from any backend.
    dims : int or sequence of int
        The columns to draw.
    positions : array, optional
        The positions of the rows (default ``0 .. n-1``), any backend.
    labels : sequence of str, optional
        Legend entries, one per column (default ``"dim j"``).
    legend : bool, default True
        Draw a legend.
    ax : matplotlib.axes.Axes, optional
        Default the current Axes.
    xlabel, ylabel, title : str or None
        Axis labels and title.
    **kwargs
        Passed to every :meth:`matplotlib.axes.Axes.plot` call.

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
    >>> ax = posenc_viz.plot_dimensions(posenc.sinusoidal(100, 64), [0, 8, 16], ax=ax)
    >>> [line.get_label() for line in ax.lines]
    ['dim 0', 'dim 8', 'dim 16']
    >>> plt.close(fig)
    """
    data = matrix_2d(pe, "pe")
    n, width = data.shape
    cols = _check_dims(dims, width)
    if positions is None:
        x = np.arange(n)
    else:
        x = to_numpy(positions, name="positions")
        if x.ndim != 1 or x.shape[0] != n:
            msg = f"`positions` must be 1-D with {n} entries (one per row of `pe`), got shape {tuple(x.shape)}"
            raise ValueError(msg)
    if labels is None:
        labels = [f"dim {d}" for d in cols]
    elif isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence):
        msg = f"`labels` must be a sequence of {len(cols)} strings (one per column), got {show(labels)}"
        raise TypeError(msg)
    elif len(labels) != len(cols):
        msg = f"`labels` must be a sequence of {len(cols)} strings (one per column), got {len(labels)} entries"
        raise ValueError(msg)
    elif not all(isinstance(lab, str) for lab in labels):
        bad = next(lab for lab in labels if not isinstance(lab, str))
        msg = f"`labels` must contain strings, got {show(bad)}"
        raise TypeError(msg)
    check_bool(legend, "legend")
    ax = _mpl.get_ax(ax)
    opts: dict[str, Any] = {"marker": "o"} if n == 1 else {}  # one row: a point, not an invisible line
    opts.update(kwargs)
    for d, lab in zip(cols, labels):
        ax.plot(x, data[:, d], label=lab, **opts)
    limits = _position_limits(x)
    if limits is not None:
        ax.set_xlim(*limits)
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), borderaxespad=0.2)
    set_labels(ax, xlabel, ylabel, title)
    return ax


def _position_limits(x: np.ndarray) -> tuple[float, float] | None:
    """x-limits that span the finite positions; half a position either side of
    a single one (matplotlib warns about identical limits)."""
    finite = x[np.isfinite(x)] if x.dtype.kind == "f" else x
    if finite.size == 0:
        return None
    lo, hi = float(np.min(finite)), float(np.max(finite))
    if lo == hi:
        half = max(0.5, abs(lo) * 1e-3)  # still a gap at huge positions
        lo, hi = lo - half, hi + half
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def scaling_label(s: Any) -> str:
    if s is None:
        return "original"
    name = type(s).__name__
    factor = getattr(s, "factor", None)
    if isinstance(factor, numbers.Real) and not isinstance(factor, bool):
        return f"{name} ×{float(factor):g}"
    return name


def _scaling_items(scalings: Any) -> list[tuple[str, Any]]:
    if isinstance(scalings, Mapping):
        items = []
        for k, v in scalings.items():
            if not isinstance(k, str):
                msg = f"`scalings` keys must be str labels, got {show(k)}"
                raise TypeError(msg)
            items.append((k, v))
    elif isinstance(scalings, (list, tuple)):
        items = [(scaling_label(s), s) for s in scalings]
    else:
        items = [(scaling_label(scalings), scalings)]
    if not items:
        msg = "`scalings` must hold at least one scaling"
        raise ValueError(msg)
    from posenc.scaling import Scaling

    for _, s in items:
        if s is not None and not isinstance(s, Scaling):
            msg = (
                "`scalings` must be a posenc.scaling object (Linear, NTK, DynamicNTK, YaRN, Llama3, "
                f"LongRoPE), a sequence of them or a dict of them by label, got {show(s)}"
            )
            if isinstance(s, numbers.Number) and not isinstance(s, bool):
                msg += "; for a plain factor use posenc.scaling.Linear(factor)"
            raise TypeError(msg)
    return items


def plot_rope_scaling(
    dim: int,
    scalings: Any,
    *,
    base: float = 10000.0,
    seq_len: int | None = None,
    quantity: str = "wavelength",
    original: bool = True,
    context: bool = True,
    ax: Any = None,
    xlabel: str | None = "frequency index $i$",
    ylabel: str | None = None,
    title: str | None = None,
    legend: bool = True,
    **kwargs: Any,
) -> Any:
    """RoPE wavelengths (or frequencies) under context-extension scalings.

    One curve per scaling from :func:`posenc.rope_frequencies` (each with its
    own dash pattern, as the curves coincide where a method leaves the
    frequencies alone), against the unscaled original in black.  Linear interpolation shifts every wavelength by the
    factor; NTK stretches the slow end most; YaRN and Llama 3 keep the fast
    pairs and interpolate only those whose wavelength exceeds the original
    context, drawn as a dotted line when a scaling defines it.

    Parameters
    ----------
    dim : int
        Rotary (head) dimension.
    scalings : scaling, sequence of scalings or dict
        Objects of :mod:`posenc.scaling`; a dict maps legend labels to
        scalings.
    base : float, default 10000.0
        RoPE base (``rope_theta``).
    seq_len : int, optional
        Sequence length for the dynamic methods.
    quantity : {"wavelength", "frequency"}
        What to draw on the log-scaled y axis.
    original : bool, default True
        Also draw the unscaled frequencies (in black).
    context : bool, default True
        Mark the original context length (wavelength only) when a scaling
        has ``original_max_positions``.
    ax : matplotlib.axes.Axes, optional
        Default the current Axes.
    xlabel, ylabel, title : str or None
        Labels; ``ylabel`` defaults to the quantity with its unit.
    legend : bool, default True
        Draw a legend.
    **kwargs
        Passed to every :meth:`matplotlib.axes.Axes.plot` call.

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
    >>> from posenc.scaling import Linear, NTK
    >>> fig, ax = plt.subplots()
    >>> ax = posenc_viz.plot_rope_scaling(128, [Linear(4.0), NTK(4.0)], ax=ax)
    >>> [line.get_label() for line in ax.get_lines()][:3]
    ['original', 'Linear ×4', 'NTK ×4']
    >>> plt.close(fig)
    """
    rope_frequencies = getattr(posenc, "rope_frequencies", None)
    if rope_frequencies is None:  # pragma: no cover - until the RoPE family lands
        msg = "plot_rope_scaling needs posenc.rope_frequencies (posenc's RoPE family)"
        raise ImportError(msg)
    quantity = check_quantity(quantity)
    for name, flag in (("original", original), ("context", context), ("legend", legend)):
        check_bool(flag, name)
    items = _scaling_items(scalings)
    curves = []
    if original:
        curves.append(("original", None, {"color": "black", "linewidth": 1.4, "zorder": 3}))
    dashes = ["-", "--", "-.", (0, (1, 1)), (0, (5, 1, 1, 1, 1, 1))]
    curves += [(label, s, {"linestyle": dashes[k % len(dashes)]}) for k, (label, s) in enumerate(items)]
    ys = []
    for _, s, _ in curves:
        kw: dict[str, Any] = {"base": base, "scaling": s}
        if seq_len is not None:
            kw["seq_len"] = seq_len
        f = to_numpy(rope_frequencies(dim, **kw), name="rope_frequencies").astype(np.float64)
        ys.append(2.0 * math.pi / f if quantity == "wavelength" else f)
    if ys:  # every curve is computed and checked before the Axes is touched
        extent = [min(float(np.min(y)) for y in ys), max(float(np.max(y)) for y in ys)]
        check_log_range(extent, quantity, "`base` (with `scalings`)", base)
    ax = _mpl.get_ax(ax)
    lengths = []
    for (label, s, style), y in zip(curves, ys):
        opts = dict(style)
        opts.update(kwargs)
        ax.plot(np.arange(y.size), y, label=label, **opts)
        ctx_len = getattr(s, "original_max_positions", None)
        if isinstance(ctx_len, numbers.Integral) and not isinstance(ctx_len, bool):
            lengths.append(int(ctx_len))
    ax.set_yscale("log")
    if context and quantity == "wavelength" and lengths:
        _bound_line(ax, lengths[0], f"original context {lengths[0]}", linestyle=":", left=True)
    n = len(ax.lines[0].get_xdata()) if ax.lines else 1
    ax.set_xlim(-0.5, n - 0.5)
    if legend:
        ax.legend(loc="lower right" if quantity == "wavelength" else "upper right")
    set_labels(ax, xlabel, YLABEL[quantity] if ylabel is None else ylabel, title)
    return ax
