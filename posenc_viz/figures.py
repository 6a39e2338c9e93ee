"""The standard figure set, written to files."""

from __future__ import annotations

import inspect
import itertools
import math
import numbers
import os
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import posenc

from . import _mpl
from ._internals import TABLE_LAYOUTS, check_bool, check_int, show
from .audit import plot_rope_audit
from .bias import plot_bias, plot_window_bias
from .grid_similarity import cosine_maps, grid_figsize, plot_grid_similarity
from .heatmap import plot_encoding
from .similarity import plot_similarity, plot_similarity_by_offset
from .spectrum import plot_dimensions, plot_rope_scaling, plot_wavelengths, scaling_label
from .style import paper_style

__all__ = ["figure_set", "FIGURES", "FORMATS", "OutputExistsError"]


class OutputExistsError(FileExistsError):
    """Some of the files to write exist already (and ``force`` is false)."""

    def __init__(self, folder: Path, paths: list[Path]) -> None:
        self.folder = folder
        self.paths = paths
        super().__init__(f"{self.summary()}; pass force=True to overwrite")

    def summary(self) -> str:
        shown = ", ".join(p.name for p in self.paths[:3]) + (", ..." if len(self.paths) > 3 else "")
        return f"{len(self.paths)} of the files exist in {str(self.folder)!r} ({shown})"

FORMATS = ("pdf", "png", "svg")
COLUMNS = ("single", "double")

#: Limits of the figure set's sizes (the similarity matrix is length x length).
MAX_DIM = 16384
MAX_LENGTH = 4096
MAX_HEAD_DIM = 1024
DPI_RANGE = (50, 1200)
#: Limits of a table read from a file: its size, and the rows of the
#: similarity figures (an N x N matrix) and the maps of grid_similarity.
MAX_TABLE_SIZE = 2**26
MAX_GRID_MAPS = 4096


@dataclass(frozen=True)
class Params:
    dim: int
    length: int
    base: float
    layout: str
    head_dim: int
    #: a 2-D host table read from a file: drawn instead of posenc's sinusoidal one
    table: Any = None
    #: (prefix rows, height, width) of the grid_similarity figure
    grid: tuple[int, int, int] | None = None
    #: a model's RoPE: from_hf's "dim", "base", "scaling" and a "label"
    rope: Mapping[str, Any] | None = None
    #: a multi-axis RoPE: "axes_dim", "base", "split", "grid_shape" and a "label"
    axes: Mapping[str, Any] | None = None
    #: a report of posenc.audit_rope and its "label" (the rope_audit figure): (report, label)
    audit: Any = None


def _table(p: Params) -> np.ndarray:
    if p.table is not None:
        return p.table
    return np.asarray(posenc.sinusoidal(p.length, p.dim, base=p.base, layout=p.layout))


def _draw_encoding(fig: Any, p: Params) -> None:
    ax = fig.subplots()
    plot_encoding(_table(p), ax=ax, cbar_kws={"pad": 0.01, "aspect": 30})


def _draw_wavelengths(fig: Any, p: Params) -> None:
    ax = fig.subplots()
    plot_wavelengths(p.dim, base=p.base, ax=ax)
    ax.grid(True, which="major", axis="y", alpha=0.3)


def _clock_columns(p: Params) -> list[tuple[int, float]]:
    """Sine columns with wavelengths spread from 2*pi to a few times the length."""
    lam = np.asarray(posenc.wavelengths(p.dim, base=p.base), dtype=np.float64)
    targets = np.geomspace(2.0 * math.pi, max(2.0 * math.pi, 2.0 * p.length), 4)
    picked: list[int] = []
    for t in targets:
        i = int(np.argmin(np.abs(np.log(lam) - np.log(t))))
        if i not in picked:
            picked.append(i)
    half = p.dim // 2
    return [((2 * i if p.layout == "interleaved" else i), float(lam[i])) for i in picked if i < half]


def _draw_table_dimensions(ax: Any, table: np.ndarray) -> None:
    """Four columns spread evenly over a table's width, against the row."""
    d = table.shape[1]
    cols = list(dict.fromkeys(int(round(c)) for c in np.linspace(0, d - 1, 4)))
    plot_dimensions(table, cols, labels=[f"dim {c}" for c in cols], ax=ax, legend=False)
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi + 0.45 * (hi - lo))  # room for the legend above the curves
    ax.legend(loc="upper center", ncols=2, columnspacing=1.0, handlelength=1.4, borderaxespad=0.1)


def _draw_dimensions(fig: Any, p: Params) -> None:
    ax = fig.subplots()
    if p.table is not None:
        _draw_table_dimensions(ax, p.table)
        return
    cols = _clock_columns(p)
    labels = [f"dim {c} (λ ≈ {lam:.3g})" for c, lam in cols]
    # fractional positions (posenc takes any real position): smooth curves
    pos = np.linspace(0.0, p.length - 1.0, 16 * max(p.length - 1, 1) + 1)
    pe = np.asarray(posenc.sinusoidal(pos, p.dim, base=p.base, layout=p.layout))
    plot_dimensions(pe, [c for c, _ in cols], positions=pos, labels=labels, ax=ax, legend=False)
    ax.set_ylim(-1.1, 1.6)
    ax.legend(loc="upper center", ncols=2, columnspacing=1.0, handlelength=1.4, borderaxespad=0.1)


def _draw_similarity(fig: Any, p: Params) -> None:
    fig.set_layout_engine("compressed")  # square Axes: keep the colour bar beside it
    ax = fig.subplots()
    # a table from a file has its own scale: cosine similarity compares directions
    plot_similarity(_table(p), normalize=p.table is not None, ax=ax)
    ax.set_aspect("equal")


def offset_profile(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offsets ``k = -(n-1) .. n-1`` and the mean cosine similarity of the
    rows ``t`` and ``t + k`` of a table (float64; symmetric in ``k``).  Pairs
    with a zero row have no cosine and are left out of the mean (NaN where an
    offset has no other pair)."""
    n = table.shape[0]
    sim = cosine_maps(table, table)
    ks = np.arange(-(n - 1), n)
    means = []
    for k in ks:
        d = np.diagonal(sim, int(k))
        d = d[~np.isnan(d)]
        means.append(float(np.mean(d)) if d.size else math.nan)
    return ks, np.array(means)


def _draw_similarity_by_offset(fig: Any, p: Params) -> None:
    ax = fig.subplots()
    if p.table is None:
        plot_similarity_by_offset(p.dim, p.length, base=p.base, ax=ax)
        return
    ks, y = offset_profile(p.table)
    ax.plot(ks, y)
    if ks.size > 1:
        ax.axvline(0.0, color="0.6", linewidth=0.6, zorder=0)
        ax.set_xlim(float(ks[0]), float(ks[-1]))
    ax.set_xlabel("offset $k$ (rows)")
    ax.set_ylabel("mean cosine similarity")


def _draw_rope_decay(fig: Any, p: Params) -> None:
    ax = fig.subplots()
    n = max(p.length, 256)
    plot_similarity_by_offset(p.head_dim, np.arange(n + 1), base=p.base, kind="rope_bound", ax=ax)
    ax.set_xlabel("relative distance $k$ (positions)")


def _draw_rope_scaling(fig: Any, p: Params) -> None:
    from posenc import scaling as sc

    ax = fig.subplots()
    if p.rope is not None:
        s = p.rope["scaling"]
        if s is None:  # a model without scaling: its own curve is the unscaled one
            curves = {f"{p.rope['label']} (no scaling)": None}
            plot_rope_scaling(p.rope["dim"], curves, base=p.rope["base"], original=False, ax=ax)
        else:
            label = f"{p.rope['label']} ({scaling_label(s)})"
            plot_rope_scaling(p.rope["dim"], {label: s}, base=p.rope["base"], ax=ax)
        return
    factor, original = 4.0, 4096
    scalings = {
        "Linear ×4": sc.Linear(factor),
        "NTK ×4": sc.NTK(factor),
        "YaRN ×4": sc.YaRN(factor, original),
        "Llama 3 ×4": sc.Llama3(factor, original),
    }
    plot_rope_scaling(p.head_dim, scalings, base=p.base, ax=ax)


def default_axes(head_dim: int, base: float) -> dict[str, Any]:
    """The video RoPE of the standard set: ``head_dim`` split over frames,
    rows and columns as Wan 2.1 splits it (rows and columns ``2 * (head_dim
    // 6)`` each, frames the rest), over Wan 2.1's 480p latent grid."""
    hw = 2 * (head_dim // 6)
    dims = [head_dim - 2 * hw, hw, hw] if hw else [head_dim]
    grid = [21, 30, 52] if hw else [21]
    label = "video (Wan 2.1 split)" if hw else "one axis (head_dim below 6: no Wan 2.1 split)"
    return {"axes_dim": dims, "base": base, "split": "blocks", "grid_shape": grid, "label": label}


def _draw_rope_axes(fig: Any, p: Params) -> None:
    from .axes import plot_rope_axes

    ax = fig.subplots()
    a = default_axes(p.head_dim, p.base) if p.axes is None else p.axes
    n = len(a["axes_dim"])
    names = {1: ["t"], 2: ["h", "w"], 3: ["t", "h", "w"], 4: ["t", "h", "w", "l"]}.get(n)
    plot_rope_axes(
        a["axes_dim"],
        base=a["base"],
        split=a.get("split", "blocks"),
        grid_shape=a.get("grid_shape"),
        names=names or [f"axis {k}" for k in range(n)],
        ax=ax,
    )
    ax.set_title(f"{a['label']}: axes_dim {list(a['axes_dim'])}", fontsize="medium")


def _draw_alibi(fig: Any, p: Params) -> None:
    heads = 8
    n = min(p.length, 64)
    bias = np.asarray(posenc.alibi_bias(heads, n), dtype=np.float64)
    causal = np.triu(np.ones((n, n), dtype=bool), k=1)
    bias = np.where(causal, -np.inf, bias)  # the causal mask, drawn grey
    slopes = np.asarray(posenc.alibi_slopes(heads), dtype=np.float64)
    shown = (0, 2, 4, 7)
    fig.set_layout_engine("compressed")
    rows, cols = (1, 4) if fig.get_figwidth() > 5.0 else (2, 2)
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
    lo = float(np.min(bias[0][np.isfinite(bias[0])]))
    for ax, h in zip(axes.flat, shown):
        plot_bias(
            bias,
            head=h,
            ax=ax,
            vmin=lo,
            vmax=0.0,
            cbar=False,
            xlabel=None,
            ylabel=None,
            title=f"head {h + 1}, $m = 1/{round(1.0 / slopes[h]):d}$",
        )
        ax.set_aspect("equal")
    label = {"fontsize": _mpl.require("matplotlib").rcParams["axes.labelsize"]}
    fig.supxlabel("key position $j$", **label)
    fig.supylabel("query position $i$", **label)
    fig.colorbar(axes.flat[0].images[0], ax=axes, label="bias", shrink=0.9 if rows == 1 else 1.0)


def _draw_t5(fig: Any, p: Params) -> None:
    fig.set_layout_engine("compressed")
    ax = fig.subplots()
    n = min(p.length, 128)
    buckets = posenc.t5_buckets(n, n, num_buckets=32, max_distance=128, bidirectional=True)
    plot_bias(buckets, ax=ax, cbar_label="bucket")
    ax.set_aspect("equal")


#: the window of the ``window_bias`` figure
_WINDOW = (5, 5)


def _draw_window_bias(fig: Any, p: Params) -> None:
    # a bias falling with the Euclidean length of the 2-D offset (one ALiBi-like
    # head in two dimensions), looked up as Swin does: table[relative_position_index]
    h, w = _WINDOW
    dr, dc = np.meshgrid(np.arange(1 - h, h), np.arange(1 - w, w), indexing="ij")
    table = -0.5 * np.hypot(dr, dc).reshape(-1)
    bias = table[np.asarray(posenc.relative_position_index(_WINDOW))]
    plot_window_bias(bias, _WINDOW, fig=fig)


def _draw_rope_audit(fig: Any, p: Params) -> None:
    report, label = p.audit
    plot_rope_audit(report, ax=fig.subplots(), title=label)


def _window_aspect(p: Params, column: str) -> float:
    from .style import COLUMN_WIDTHS

    h, w = _WINDOW
    width = COLUMN_WIDTHS[column]
    with paper_style(column):
        return grid_figsize(width, h, w, ratio=h / w, labels=False) / width


def _draw_grid_similarity(fig: Any, p: Params) -> None:
    prefix, h, w = p.grid
    plot_grid_similarity(p.table, (h, w), num_prefix_tokens=prefix, fig=fig)


def _grid_aspect(p: Params, column: str) -> float:
    from .style import COLUMN_WIDTHS

    _, h, w = p.grid
    width = COLUMN_WIDTHS[column]
    with paper_style(column):  # the margins follow the fonts the figure is drawn with
        return grid_figsize(width, h, w, ratio=h / w) / width


@dataclass(frozen=True)
class _Spec:
    draw: Callable[[Any, Params], None]
    column: str
    # height / width at single and at double width, or a function of the parameters and the column
    aspect: tuple[float, float] | Callable[[Params, str], float]


_SPECS: dict[str, _Spec] = {
    "encoding": _Spec(_draw_encoding, "double", (0.7, 0.42)),
    "wavelengths": _Spec(_draw_wavelengths, "single", (0.72, 0.42)),
    "dimensions": _Spec(_draw_dimensions, "single", (0.72, 0.4)),
    "similarity": _Spec(_draw_similarity, "single", (0.85, 0.5)),
    "similarity_by_offset": _Spec(_draw_similarity_by_offset, "single", (0.62, 0.34)),
    "rope_decay": _Spec(_draw_rope_decay, "single", (0.62, 0.34)),
    "rope_scaling": _Spec(_draw_rope_scaling, "single", (0.8, 0.45)),
    "rope_axes": _Spec(_draw_rope_axes, "single", (0.8, 0.45)),
    "alibi": _Spec(_draw_alibi, "double", (0.95, 0.3)),
    "t5_buckets": _Spec(_draw_t5, "single", (0.85, 0.5)),
    "window_bias": _Spec(_draw_window_bias, "single", _window_aspect),
}

#: Names of the figures of the standard set, in the order they are written.
FIGURES = tuple(_SPECS)

#: Figures of a table read from a file only (not in the standard set).
_TABLE_SPECS: dict[str, _Spec] = {
    "grid_similarity": _Spec(_draw_grid_similarity, "single", _grid_aspect),
    "rope_audit": _Spec(_draw_rope_audit, "single", (0.8, 0.45)),
}


def available_figures() -> tuple[str, ...]:
    """The figures of the standard set (every one of them draws functions
    that posenc always has): :data:`FIGURES`."""
    return FIGURES


def check_params(dim: Any, length: Any, base: Any, layout: Any, head_dim: Any) -> Params:
    dim = check_int(dim, "dim", minimum=2, maximum=MAX_DIM)
    if dim % 2:
        msg = f"`dim` must be a positive even integer, got {dim}"
        raise ValueError(msg)
    length = check_int(length, "length", minimum=1, maximum=MAX_LENGTH)
    head_dim = check_int(head_dim, "head_dim", minimum=2, maximum=MAX_HEAD_DIM)
    if head_dim % 2:
        msg = f"`head_dim` must be a positive even integer, got {head_dim}"
        raise ValueError(msg)
    if isinstance(base, bool) or not isinstance(base, numbers.Real):
        msg = f"`base` must be a real number, got {show(base)}"
        raise TypeError(msg)
    base = float(base)
    if not (math.isfinite(base) and 1.0 < base <= 1e12):
        msg = f"`base` must be a finite number in (1, 1e12], got {show(base)}"
        raise ValueError(msg)
    if not isinstance(layout, str) or layout not in TABLE_LAYOUTS:
        msg = f"`layout` must be 'interleaved' or 'concat', got {show(layout)}"
        raise (ValueError if isinstance(layout, str) else TypeError)(msg)
    return Params(dim, length, base, layout, head_dim)


def _check_names(names: Any) -> tuple[str, ...]:
    if names is None:
        return FIGURES
    if isinstance(names, str):
        names = (names,)
    names = _as_tuple(names, "names", "a figure name or a sequence of them")
    for n in names:
        if not isinstance(n, str) or n not in _SPECS:
            listed = ", ".join(_SPECS)
            msg = f"`names` must be figure names ({listed}), got {show(n)}"
            raise (ValueError if isinstance(n, str) else TypeError)(msg)
    if not names:
        msg = "`names` must name at least one figure"
        raise ValueError(msg)
    return tuple(dict.fromkeys(names))


_MAX_ITEMS = 1000


def _as_tuple(value: Any, name: str, what: str) -> tuple:
    """The items of a collection argument; bytes, mappings and objects that
    do not iterate (0-d arrays, numbers) are a TypeError naming ``name``."""
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        msg = f"`{name}` must be {what}, got {show(value)}"
        raise TypeError(msg)
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and math.prod(shape) > _MAX_ITEMS:  # a huge array, or a view of one
        msg = f"`{name}` must be {what}, got {show(value)}"
        raise ValueError(msg)
    try:
        # never materialise an unbounded iterable: the set has a handful of entries
        items = tuple(itertools.islice(value, _MAX_ITEMS + 1))
    except TypeError:  # iterable in type only
        msg = f"`{name}` must be {what}, got {show(value)}"
        raise TypeError(msg) from None
    if len(items) > _MAX_ITEMS:
        msg = f"`{name}` must be {what}, got more than {_MAX_ITEMS} entries"
        raise ValueError(msg)
    return items


def _check_formats(formats: Any) -> tuple[str, ...]:
    if isinstance(formats, str):
        formats = (formats,)
    formats = _as_tuple(formats, "formats", f"a sequence of {', '.join(FORMATS)}")
    out = []
    for f in formats:
        if not isinstance(f, str) or f.lower().lstrip(".") not in FORMATS:
            msg = f"`formats` must contain only {', '.join(FORMATS)}, got {show(f)}"
            raise (ValueError if isinstance(f, str) else TypeError)(msg)
        out.append(f.lower().lstrip("."))
    if not out:
        msg = "`formats` must name at least one format"
        raise ValueError(msg)
    return tuple(dict.fromkeys(out))


def _check_progress(progress: Any) -> None:
    """A function of one path, refused before anything is drawn or written."""
    if not callable(progress):
        msg = f"`progress` must be callable, got {type(progress).__name__}"
        raise TypeError(msg)
    if isinstance(progress, type):  # np.int64 is callable, but not a callback
        msg = f"`progress` must be a function called with each path, got {show(progress)}"
        raise TypeError(msg)
    try:
        sig = inspect.signature(progress)
    except (TypeError, ValueError):  # builtins without a signature: trust them
        return
    try:
        sig.bind(Path("."))
    except TypeError:
        msg = f"`progress` must accept one argument (the path written), got a callable with signature {sig}"
        raise TypeError(msg) from None


def _prepare_dir(out_dir: Any) -> Path:
    if not isinstance(out_dir, (str, os.PathLike)):
        msg = f"`out_dir` must be a path, got {type(out_dir).__name__}"
        raise TypeError(msg)
    if os.fspath(out_dir) == "":
        # Path("") is the current folder: an unset variable must not write there
        msg = "`out_dir` must not be empty (pass '.' for the current folder)"
        raise ValueError(msg)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        msg = f"output folder {str(out)!r} exists and is not a folder"
        raise NotADirectoryError(msg)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a parent is a file
        msg = f"cannot create the output folder {str(out)!r}: a parent is not a folder"
        raise NotADirectoryError(msg) from None
    except PermissionError:
        msg = f"cannot create the output folder {str(out)!r}: permission denied"
        raise PermissionError(msg) from None
    except NotADirectoryError:
        msg = f"cannot create the output folder {str(out)!r}: a parent is not a folder"
        raise NotADirectoryError(msg) from None
    if not os.access(out, os.W_OK | os.X_OK):
        msg = f"cannot write to the output folder {str(out)!r}: permission denied"
        raise PermissionError(msg)
    return out


def _render(
    name: str,
    p: Params,
    column: str | None,
    outputs: list[tuple[str, Path]],
    dpi: int,
    progress: Callable[[Path], None] | None,
) -> list[Path]:
    """Draw one figure and write each format atomically (temp file, then rename)."""
    mfig = _mpl.require("matplotlib.figure")
    spec = _SPECS[name] if name in _SPECS else _TABLE_SPECS[name]
    col = spec.column if column is None else column
    aspect = spec.aspect(p, col) if callable(spec.aspect) else spec.aspect[0 if col == "single" else 1]
    written = []
    with paper_style(col, aspect=aspect):
        fig = mfig.Figure()
        spec.draw(fig, p)
        for fmt, path in outputs:
            tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
            try:
                with open(tmp, "xb") as fh:
                    fig.savefig(fh, format=fmt, dpi=dpi, metadata=_metadata(fmt))
                os.replace(tmp, path)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            written.append(path)
            if progress is not None:
                progress(path)
    return written


def _metadata(fmt: str) -> dict[str, Any]:
    # reproducible files: no creation date in PDF/SVG
    if fmt == "pdf":
        return {"CreationDate": None, "Creator": "posenc_viz"}
    if fmt == "svg":
        return {"Date": None, "Creator": "posenc_viz"}
    return {"Software": "posenc_viz"}


def figure_set(
    out_dir: str | os.PathLike,
    *,
    dim: int = 512,
    length: int = 100,
    base: float = 10000.0,
    layout: str = "interleaved",
    head_dim: int = 128,
    formats: Iterable[str] = ("pdf", "png"),
    dpi: int = 300,
    column: str | None = None,
    names: Iterable[str] | str | None = None,
    force: bool = False,
    progress: Callable[[Path], None] | None = None,
) -> list[Path]:
    r"""Write the standard figure set to ``out_dir``.

    The figures (file stems in :data:`FIGURES`): ``encoding`` (the
    ``length x dim`` table as a heatmap), ``wavelengths`` (the spectrum from
    :math:`2\pi` to :math:`\mathrm{base}\cdot 2\pi`), ``dimensions`` (four
    sine columns against position), ``similarity`` (the
    :math:`PE_s \cdot PE_t` matrix), ``similarity_by_offset`` (its even
    profile), ``rope_decay`` (RoFormer's long-term decay bound),
    ``rope_scaling`` (RoPE wavelengths under Linear, NTK, YaRN and Llama 3
    scaling), ``rope_axes`` (the per-axis spectrum of a video RoPE: the
    head split over frames, rows and columns as Wan 2.1 splits it, against
    its 21 x 30 x 52 latent grid), ``alibi`` (four heads of a causal ALiBi bias),
    ``t5_buckets`` (T5's relative position buckets) and ``window_bias``
    (the 2-D relative bias of a 5 x 5 attention window, Swin-style, one map
    per query patch).  Figures whose posenc
    functions are missing from the installation are left out.

    Each figure is drawn under :func:`paper_style` at its natural width (one
    column or the full text width, or ``column`` for all), then written to
    a temporary file in ``out_dir`` and renamed, so a failure never leaves a
    partial file.  Nothing is overwritten unless ``force``: existing targets
    are reported before anything is drawn.

    Parameters
    ----------
    out_dir : str or path
        Output folder, created (with its parents) if missing.
    dim : int, default 512
        Model dimension of the sinusoidal figures (even, at most 16384).
    length : int, default 100
        Number of positions (at most 4096).
    base : float, default 10000.0
        Frequency base of every figure.
    layout : {"interleaved", "concat"}
        Column layout of the encoding table.
    head_dim : int, default 128
        Rotary dimension of the RoPE figures.
    formats : sequence of {"pdf", "png", "svg"}, default ("pdf", "png")
        One file per figure and format.  PDF embeds TrueType fonts.
    dpi : int, default 300
        Resolution of raster output (50 to 1200).
    column : {"single", "double"}, optional
        Width of every figure; default each figure's own.
    names : str or sequence of str, optional
        Only these figures (default: the whole set).
    force : bool, default False
        Overwrite existing files.
    progress : callable, optional
        Called with each file's path right after it is written.

    Returns
    -------
    list of pathlib.Path
        The files written, in order.

    Raises
    ------
    FileExistsError
        When a target exists and ``force`` is false (nothing is written).
    NotADirectoryError, PermissionError
        When ``out_dir`` cannot be used as the output folder.

    Examples
    --------
    >>> import tempfile, posenc_viz
    >>> with tempfile.TemporaryDirectory() as d:
    ...     names = ["encoding", "wavelengths"]
    ...     files = posenc_viz.figure_set(d, dim=64, length=32, names=names, formats=["png"], dpi=72)
    ...     print([f.name for f in files])
    ['encoding.png', 'wavelengths.png']
    """
    p = check_params(dim, length, base, layout, head_dim)
    chosen = _check_names(names)
    fmts = _check_formats(formats)
    dpi = check_int(dpi, "dpi", minimum=DPI_RANGE[0], maximum=DPI_RANGE[1])
    if column is not None and (not isinstance(column, str) or column not in COLUMNS):
        msg = f"`column` must be 'single', 'double' or None, got {show(column)}"
        raise (ValueError if isinstance(column, str) else TypeError)(msg)
    check_bool(force, "force")
    if progress is not None:
        _check_progress(progress)
    _mpl.require("matplotlib.figure")  # fail before touching the file system
    return write_set(out_dir, p, chosen, fmts, dpi=dpi, column=column, force=force, progress=progress)


def write_set(
    out_dir: str | os.PathLike,
    p: Params,
    chosen: tuple[str, ...],
    fmts: tuple[str, ...],
    *,
    dpi: int,
    column: str | None,
    force: bool,
    progress: Callable[[Path], None] | None,
) -> list[Path]:
    """Write checked figures: the folder is made, existing targets are
    refused unless ``force``, then each figure is drawn and written."""
    out = _prepare_dir(out_dir)
    targets = [(n, f, out / f"{n}.{f}") for n in chosen for f in fmts]
    blocked = [t for _, _, t in targets if t.is_dir()]
    if blocked:
        msg = f"cannot write {str(blocked[0])!r}: a folder of that name exists"
        raise IsADirectoryError(msg)
    if not force:
        # lexists: a symbolic link is a file of that name even when its target is missing
        existing = [t for _, _, t in targets if os.path.lexists(t)]
        if existing:
            raise OutputExistsError(out, existing)
    written: list[Path] = []
    for name in chosen:
        outputs = [(f, path) for n, f, path in targets if n == name]
        written += _render(name, p, column, outputs, dpi, progress)
    return written
