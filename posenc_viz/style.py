"""Paper style: figure sizes and fonts for one- and two-column layouts."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from . import _mpl
from ._internals import show

__all__ = ["COLUMN_WIDTHS", "paper_style", "figsize"]

#: Figure widths in inches of a paper's single column and full text width
#: (two-column journals and conference templates: about 3.3 in and 7 in).
#: Read-only: pass ``rc={"figure.figsize": ...}`` to :func:`paper_style` for
#: other sizes.
COLUMN_WIDTHS = MappingProxyType({"single": 3.3, "double": 7.0})

_FONT = {"single": 8.0, "double": 9.0}

#: Okabe and Ito's colour-blind-safe palette (black left out: it marks references).
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442")


def _check_column(column: Any) -> str:
    if not isinstance(column, str) or column not in COLUMN_WIDTHS:
        msg = f"`column` must be 'single' or 'double', got {show(column)}"
        raise (ValueError if isinstance(column, str) else TypeError)(msg)
    return column


def figsize(column: str = "single", *, aspect: float = 0.75) -> tuple[float, float]:
    """Width and height in inches of a figure that spans ``column``.

    Parameters
    ----------
    column : {"single", "double"}
        One column (3.3 in) or the full text width (7 in).
    aspect : float, default 0.75
        Height divided by width.

    Returns
    -------
    tuple of float
        ``(width, height)`` in inches.

    Examples
    --------
    >>> from posenc_viz import figsize
    >>> figsize("double", aspect=0.5)
    (7.0, 3.5)
    """
    column = _check_column(column)
    if isinstance(aspect, bool) or not isinstance(aspect, (int, float)):
        msg = f"`aspect` must be a number, got {show(aspect)}"
        raise TypeError(msg)
    if not 0 < aspect <= 10:
        msg = f"`aspect` must be in (0, 10], got {show(aspect)}"
        raise ValueError(msg)
    width = COLUMN_WIDTHS[column]
    return (width, round(width * float(aspect), 4))


def paper_style(column: str = "single", *, aspect: float = 0.75, rc: dict | None = None) -> Any:
    """A context manager with matplotlib settings for figures in papers.

    It is a :func:`matplotlib.rc_context`: the settings apply inside the
    ``with`` block only and the global :data:`matplotlib.rcParams` are left
    as they were.  Inside it, new figures are ``column`` wide, fonts are
    sized for print (8 pt in a single column, 9 pt across two), lines and
    axes are thin, layouts are constrained (no clipped labels), PDF and
    PostScript files embed TrueType fonts (``fonttype 42``, as journals
    ask), lines cycle through Okabe and Ito's colour-blind-safe palette
    and raster files default to 300 dpi.  Files keep the exact figure size
    (no tight bounding box), so that fonts print at their nominal size when
    the figure is included at the column width.

    Parameters
    ----------
    column : {"single", "double"}
        Figure width: one column (3.3 in) or the full text width (7 in).
    aspect : float, default 0.75
        Height divided by width of new figures.
    rc : dict, optional
        More rcParams, applied last.

    Returns
    -------
    context manager
        Also usable as a decorator.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import posenc, posenc_viz
    >>> with posenc_viz.paper_style("single"):
    ...     fig, ax = plt.subplots()
    ...     _ = posenc_viz.plot_encoding(posenc.sinusoidal(50, 64), ax=ax)
    >>> fig.get_size_inches().round(2).tolist()
    [3.3, 2.48]
    >>> plt.close(fig)
    """
    mpl = _mpl.require("matplotlib")
    size = figsize(column, aspect=aspect)
    if rc is not None and not isinstance(rc, dict):
        msg = f"`rc` must be a dict of rcParams, got {type(rc).__name__}"
        raise TypeError(msg)
    font = _FONT[column]
    cycler = _mpl.require("cycler").cycler
    params = {
        "axes.prop_cycle": cycler(color=list(OKABE_ITO)),
        "figure.figsize": size,
        "figure.dpi": 150,
        "figure.constrained_layout.use": True,
        "figure.constrained_layout.h_pad": 0.02,
        "figure.constrained_layout.w_pad": 0.02,
        "savefig.dpi": 300,
        "savefig.bbox": None,  # keep the exact column width; constrained layout fits the labels
        "font.size": font,
        "axes.titlesize": font,
        "axes.labelsize": font,
        "xtick.labelsize": font - 1,
        "ytick.labelsize": font - 1,
        "legend.fontsize": font - 1,
        "legend.title_fontsize": font - 1,
        "figure.titlesize": font + 1,
        "axes.linewidth": 0.6,
        "lines.linewidth": 1.0,
        "lines.markersize": 3.0,
        "xtick.major.width": 0.6,
        "ytick.major.width": 0.6,
        "xtick.minor.width": 0.4,
        "ytick.minor.width": 0.4,
        "xtick.major.size": 3.0,
        "ytick.major.size": 3.0,
        "xtick.minor.size": 1.5,
        "ytick.minor.size": 1.5,
        "grid.linewidth": 0.4,
        "legend.frameon": False,
        "legend.handlelength": 1.6,
        "pdf.fonttype": 42,
        "ps.fonttype": 42,
        "svg.fonttype": "path",
        "image.interpolation": "antialiased",
        "mathtext.fontset": "dejavusans",
    }
    if rc:
        params.update(rc)
    return mpl.rc_context(params)
