"""Sphinx directives of the posenc documentation.

``posenc-exec``
    Runs Python code at build time and shows the code and what it printed, or
    inserts what it printed as reStructuredText (``:output: rst``), so that
    the numbers on the theory pages are computed by the library itself every
    time the site is built.  The shown blocks of one page share a namespace,
    top to bottom, that holds only what they define (so that each runs as
    shown after the ones above it); a hidden block (``:hide-code:``) reads
    that namespace and the helpers below, and what it defines stays with the
    page's hidden blocks.  Every block runs with matplotlib's default
    settings.  An exception fails the build (it is reported as an error, and
    ``-W`` turns every problem into a failure)::

        .. posenc-exec::

           import posenc
           print(posenc.sinusoidal(6, 4).round(4))

    Options: ``:output: literal | rst | none`` (default ``literal``),
    ``:hide-code:`` (run without showing the source).  The hidden blocks also
    see ``rst_table``, ``REPO_ROOT`` and ``benchmark_rows()`` (the rows of
    ``benchmarks/results.json``).

It also measures the numbers of the site's one accuracy statement
(:func:`accuracy_prolog`, substitutions such as ``|accuracy|``), holds the
"See also" links of the API pages (:data:`SEE_ALSO`), and makes the built
site readable offline: MathJax from an installed copy, search excerpts
without ``fetch()``.
"""

from __future__ import annotations

import contextlib
import io
import numbers
import traceback
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

__all__ = [
    "setup",
    "rst_table",
    "GalleryOrder",
    "GalleryScraper",
    "describe_figure",
    "ACCURACY_BOUND",
    "bound_text",
    "accuracy_facts",
    "accuracy_prolog",
    "SEE_ALSO",
    "performance_summary",
    "repository_url",
    "rotation_layouts",
]

#: per document, the namespace of its shown blocks and that of its hidden
#: blocks, created when the document is read
_NAMESPACES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}


def rst_table(
    rows: list[list[Any]],
    header: list[str],
    *,
    fmt: str = "{:.4f}",
    title: str = "",
    widths: str = "auto",
    cls: str = "posenc-numbers",
) -> str:
    """An rst ``list-table`` (``fmt`` for floats), for ``:output: rst`` blocks;
    ``cls="posenc-numbers"`` right-aligns the cells, ``cls="posenc-text"`` not."""
    lines = [
        f".. list-table:: {title}".rstrip(),
        "   :header-rows: 1",
        f"   :widths: {widths}",
        f"   :class: {cls}",
        "",
    ]

    def cell(v: Any) -> str:
        if isinstance(v, str):
            return v.replace("|", "\\|") if v.strip() else "\\ "
        if isinstance(v, numbers.Integral):
            return str(int(v))
        try:
            x = float(v)
        except (TypeError, ValueError):
            return str(v)
        return fmt.format(x)

    for r in [header, *rows]:
        for j, v in enumerate(r):
            lines.append(("   * - " if j == 0 else "     - ") + cell(v))
    return "\n".join(lines) + "\n"


#: order of the gallery: the figures of posenc_viz, then the backends
GALLERY_ORDER = (
    "plot_encoding.py",
    "plot_wavelengths.py",
    "plot_dimensions.py",
    "plot_timestep_embedding.py",
    "plot_similarity.py",
    "plot_similarity_by_offset.py",
    "plot_rope_scaling.py",
    "plot_rope_axes.py",
    "plot_bias.py",
    "plot_window_bias.py",
    "plot_paper_style.py",
    "plot_figure_set.py",
    "plot_backend_numpy.py",
    "plot_backend_torch.py",
    "plot_backend_jax.py",
    "plot_backend_dask.py",
)


class GalleryOrder:
    """sphinx-gallery sort key (``within_subsection_order``): :data:`GALLERY_ORDER`,
    then any other example by name."""

    def __init__(self, src_dir: str) -> None:
        self.src_dir = src_dir

    def __call__(self, filename: str) -> tuple[int, str]:
        try:
            return (GALLERY_ORDER.index(filename), filename)
        except ValueError:
            return (len(GALLERY_ORDER), filename)

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"


def describe_figure(fig: Any) -> str:
    """A text alternative of a matplotlib figure, read from its artists: per
    panel the kind of plot, its title, what it plots against what, and the
    labels of its curves (the alt text of the gallery's images)."""
    parts = []
    for ax in fig.axes:
        if not ax.get_visible() or ax.get_label() == "<colorbar>":
            continue
        if ax.images or any(type(c).__name__ == "QuadMesh" for c in ax.collections):
            kind = "heatmap"
        elif ax.lines:
            kind = "line plot"
        elif ax.patches:
            kind = "bar chart"
        elif ax.texts and not ax.axison:
            kind = "text panel"
        else:
            kind = "plot"
        text = kind
        if ax.get_title():
            text += f" “{ax.get_title()}”"
        x, y = ax.get_xlabel(), ax.get_ylabel()
        if x and y:
            text += f", {y} against {x}"
        elif x or y:
            text += f", {x or y}"
        labels = [ln.get_label() for ln in ax.lines if not ln.get_label().startswith("_")]
        if labels:
            shown = ", ".join(labels[:6]) + (", ..." if len(labels) > 6 else "")
            text += f" ({len(labels)} curve{'s' if len(labels) > 1 else ''}: {shown})"
        parts.append(text)
    suptitle = fig.get_suptitle() if hasattr(fig, "get_suptitle") else ""
    head = f"{suptitle}: " if suptitle else ""
    if len(parts) > 1:
        head += f"{len(parts)} panels: "
    grouped: list[list[Any]] = []  # runs of equal panels: "25 x heatmap"
    for part in parts:
        if grouped and grouped[-1][0] == part:
            grouped[-1][1] += 1
        else:
            grouped.append([part, 1])
    parts = [text if n == 1 else f"{n} × {text}" for text, n in grouped]
    return " ".join((head + "; ".join(parts) or "a figure").split()).replace('"', "'").replace("$", "")


class GalleryScraper:
    """sphinx-gallery's matplotlib scraper, with :func:`describe_figure` as the
    alt text of each figure instead of its titles or its file name."""

    def __call__(self, block: Any, block_vars: dict[str, Any], gallery_conf: dict[str, Any]) -> str:
        import re

        import matplotlib.pyplot as plt
        from sphinx_gallery.scrapers import matplotlib_scraper

        alts = iter([describe_figure(plt.figure(num)) for num in plt.get_fignums()])
        rst = matplotlib_scraper(block, block_vars, gallery_conf)
        return re.sub(r"(:alt: )[^\n]*", lambda m: m.group(1) + next(alts, "a figure"), rst)

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"


# --------------------------------------------------------------------------
# The one accuracy statement of the site, measured at build time
# --------------------------------------------------------------------------
#: posenc's float32 tables (sinusoidal, RoPE, grids) are within this absolute
#: error of the exact values for every integer position |p| < 2**31 and every
#: float |p| < 2**22, on every backend; on a device without float64, |p| >= 2**32
#: gives NaN rows.  Derived in posenc/_angles.py; the tests and
#: :func:`accuracy_facts` measure it over a sweep of positions
#: (benchmarks/accuracy.py) and fail above MARGIN times it.
ACCURACY_BOUND = 2.5e-7
#: the range of integer positions the bound covers, as a power of two
ACCURACY_RANGE_LOG2 = 31
#: the range of float positions it covers
ACCURACY_FLOAT_LOG2 = 22
#: on a device without float64, positions from 2**NAN_LOG2 on give NaN rows
NAN_LOG2 = 32


def sci(x: float, digits: int = 1) -> str:
    """``5.9e-02`` as ``5.9·10⁻²`` (for prose and tables)."""
    mant, exp = f"{x:.{digits}e}".split("e")
    sup = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
    return f"{mant}·10{str(int(exp)).translate(sup)}"


def bound_text(x: float = 0.0) -> str:
    """The accuracy bound as the README, the docstrings, the changelog and
    the benchmark targets write it: ``2.5e-7`` (the shortest decimal that
    reads back as the bound, with no zero padding in the exponent).  The site
    writes the bound only this way; ``tests/test_docs.py`` checks the built
    pages for any other spelling of it."""
    mant, exp = f"{x or ACCURACY_BOUND:e}".split("e")
    return f"{mant.rstrip('0').rstrip('.')}e{int(exp)}"


def tutorial_torch(p: Any, d: int) -> Any:
    """The PyTorch tutorial's table (float32 angles), for positions ``p``."""
    import math

    import torch

    position = torch.as_tensor(p, dtype=torch.float).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    pe = torch.stack([torch.sin(position * div), torch.cos(position * div)], -1)
    return pe.reshape(len(p), d).numpy()


def tutorial_numpy(p: Any, d: int) -> Any:
    """The NumPy tutorial's table in float32, for positions ``p``."""
    import numpy as np

    position = np.asarray(p).astype(np.float32)[:, None]
    div = np.exp(np.arange(0, d, 2, dtype=np.float32) * np.float32(-(np.log(10000.0) / d)))
    pe = np.stack([np.sin(position * div), np.cos(position * div)], axis=-1)
    return pe.reshape(len(p), d)


def exact_table(p: Any, w: Any) -> Any:
    """sin/cos of ``p * w`` in extended precision (interleaved), as float64."""
    import numpy as np

    a = np.asarray(p, dtype=np.longdouble)[:, None] * np.asarray(w, dtype=np.longdouble)
    t = np.stack([np.sin(a), np.cos(a)], axis=-1).reshape(a.shape[0], 2 * a.shape[1])
    return t.astype(np.float64)


_FACTS: dict[str, Any] = {}


def accuracy_facts() -> dict[str, Any]:
    """Measured errors behind the site's accuracy statement (computed once per build).

    ``naive_torch`` / ``naive_numpy``: the tutorials' float32 code, largest
    error over 256 positions from p0 (4096 and 10**6), d = 512.
    ``posenc_by_path``: the largest error of each float32 table path of
    posenc over the sweep of ``benchmarks/accuracy.py`` (random positions of
    every magnitude up to 2**31, integer and float, d = 128; ``posenc_sweep``
    has it per range of positions); ``float64``: the float64 tables' sweep
    up to 2**53.  ``nan_beyond``: whether the device without float64 gives
    NaN rows at 2**32.  The build fails if a float32 path exceeds
    ``accuracy.MARGIN * ACCURACY_BOUND``.
    """
    if _FACTS:
        return _FACTS
    import array_api_strict as xps
    import numpy as np

    import posenc
    from benchmarks import accuracy

    d = 512
    naive_torch, naive_numpy = {}, {}
    for p0 in (4096, 10**6):
        p = np.arange(p0, p0 + 256)
        truth = exact_table(p, posenc.frequencies(d))
        naive_torch[p0] = float(np.abs(tutorial_torch(p, d) - truth).max())
        naive_numpy[p0] = float(np.abs(tutorial_numpy(p, d) - truth).max())

    assert accuracy.BOUND == ACCURACY_BOUND
    sweep = accuracy.sweep(n=1024)
    worst = {path: max(by_range.values()) for path, by_range in sweep.items()}
    no64 = xps.Device("no_float64")
    beyond = posenc.sinusoidal(xps.asarray(np.arange(2**NAN_LOG2, 2**NAN_LOG2 + 4), device=no64), 8)
    nan_beyond = bool(np.isnan(np.asarray(beyond.to_device(xps.Device("CPU_DEVICE")))).all())
    posenc_worst = max(worst.values())
    if not posenc_worst <= accuracy.MARGIN * ACCURACY_BOUND or not all(np.isfinite(list(worst.values()))):
        msg = (
            f"posenc's float32 tables are off by {worst}, above {accuracy.MARGIN} x the documented "
            f"{ACCURACY_BOUND}:\n{accuracy.report(sweep)}"
        )
        raise RuntimeError(msg)
    _FACTS.update(
        naive_torch=naive_torch,
        naive_numpy=naive_numpy,
        posenc_by_path=worst,
        posenc_sweep=sweep,
        posenc_worst=posenc_worst,
        float64=accuracy.sweep64(n=512),
        nan_beyond=nan_beyond,
    )
    return _FACTS


def accuracy_prolog() -> str:
    """rst substitutions with the measured numbers (``rst_prolog`` of conf.py).

    ``|accuracy|`` is the one accuracy statement of the site; ``|acc-bound|``
    the bound alone; ``|acc-measured|`` the largest error measured in this
    build; ``|naive-4096|``, ``|naive-1e6|`` (the PyTorch tutorial's float32
    code) and ``|naive-1e6-numpy|`` (the NumPy tutorial's) the one-liner's.
    """
    f = accuracy_facts()
    bound = bound_text()
    statement = (
        f"within {bound} of the exact values at every integer position "
        f":math:`|p| < 2^{{{ACCURACY_RANGE_LOG2}}}` and every real one "
        f":math:`|p| < 2^{{{ACCURACY_FLOAT_LOG2}}}` on every backend "
        f"(on a device without float64, positions with :math:`|p| \\ge 2^{{{NAN_LOG2}}}` give NaN rows)"
    )
    subs = {
        "accuracy": statement,
        "acc-bound": bound,
        "acc-range": f":math:`|p| < 2^{{{ACCURACY_RANGE_LOG2}}}`",
        "acc-measured": sci(f["posenc_worst"]),
        "naive-4096": sci(f["naive_torch"][4096]),
        "naive-1e6": sci(f["naive_torch"][10**6]),
        "naive-1e6-numpy": sci(f["naive_numpy"][10**6]),
    }
    return "\n".join(f".. |{k}| replace:: {v}" for k, v in subs.items()) + "\n"


# --------------------------------------------------------------------------
# "See also" links of the API pages (rendered by _templates/autosummary)
# --------------------------------------------------------------------------
_P = "posenc."
_S = "posenc.scaling."
_V = "posenc_viz."
#: related functions, shown under "See also" on each API page
SEE_ALSO: dict[str, list[str]] = {
    _P + "sinusoidal": [
        _P + "add_sinusoidal",
        _P + "frequencies",
        _P + "wavelengths",
        _P + "shift_matrix",
        _V + "plot_encoding",
    ],
    _P + "frequencies": [_P + "wavelengths", _P + "sinusoidal", _P + "rope_frequencies"],
    _P + "wavelengths": [_P + "frequencies", _V + "plot_wavelengths"],
    _P + "add_sinusoidal": [_P + "sinusoidal", _P + "learned_table"],
    _P + "binary": [_P + "sines", _P + "sinusoidal"],
    _P + "sines": [_P + "binary", _P + "sinusoidal"],
    _P + "learned_table": [_P + "resample_table", _P + "resample_grid", _P + "sinusoidal"],
    _P + "resample_table": [_P + "learned_table", _P + "resample_grid"],
    _P + "shift_matrix": [_P + "sinusoidal", _P + "similarity_by_offset"],
    _P + "similarity": [_P + "similarity_by_offset", _V + "plot_similarity"],
    _P + "similarity_by_offset": [_P + "similarity", _P + "shift_matrix", _V + "plot_similarity_by_offset"],
    _P + "rope_frequencies": [_P + "rope_cos_sin", _P + "frequencies", _S + "from_hf"],
    _P + "rope_cos_sin": [
        _P + "apply_rope",
        _P + "rope",
        _P + "rope_frequencies",
        _P + "axial_rope_cos_sin",
        _S + "from_hf",
    ],
    _P + "apply_rope": [_P + "rope_cos_sin", _P + "rope", _P + "rope_permutation", _P + "xpos_scale"],
    _P + "rope": [_P + "rope_cos_sin", _P + "apply_rope", _S + "from_hf"],
    _P + "rope_permutation": [_P + "apply_rope", _P + "rope"],
    _P + "xpos_scale": [_P + "apply_rope", _P + "rope_cos_sin"],
    _S + "from_hf": [_P + "rope_cos_sin", _P + "rope", _V + "plot_rope_scaling"],
    _P + "relative_positions": [_P + "t5_buckets", _P + "alibi_bias", _P + "kerple_bias"],
    _P + "alibi_slopes": [_P + "alibi_bias", _V + "plot_bias"],
    _P + "alibi_bias": [_P + "alibi_slopes", _P + "kerple_bias", _P + "relative_positions", _V + "plot_bias"],
    _P + "kerple_bias": [_P + "alibi_bias", _V + "plot_bias"],
    _P + "cumulative_gate_bias": [_P + "alibi_bias", _P + "kerple_bias"],
    _P + "relative_position_index": [
        _P + "relative_log_coords",
        _P + "resample_relative_table",
        _V + "plot_window_bias",
    ],
    _P + "relative_log_coords": [_P + "relative_position_index"],
    _P + "resample_relative_table": [_P + "relative_position_index", _P + "resample_grid"],
    _P + "decomposed_relative_positions": [_P + "relative_position_index", _P + "resample_table"],
    _P + "t5_bucket": [_P + "t5_buckets", _P + "relative_positions"],
    _P + "t5_buckets": [_P + "t5_bucket", _V + "plot_bias"],
    _P + "relative_sinusoidal": [_P + "sinusoidal", _P + "relative_positions"],
    _P + "sincos_grid": [_P + "sincos_coords", _P + "axial_rope_cos_sin", _P + "resample_grid"],
    _P + "sincos_coords": [_P + "sincos_grid", _P + "fourier_features"],
    _P + "axial_rope_cos_sin": [_P + "rope_cos_sin", _P + "apply_rope", _P + "sincos_grid"],
    _P + "resample_grid": [_P + "resample_table", _P + "grid_interpolation_taps", _P + "sincos_grid"],
    _P + "fourier_features": [_P + "gaussian_fourier_features", _P + "sincos_coords"],
    _P + "gaussian_fourier_features": [_P + "gaussian_matrix", _P + "fourier_features"],
    _P + "gaussian_matrix": [_P + "gaussian_fourier_features"],
    _V + "plot_encoding": [_P + "sinusoidal", _V + "plot_dimensions", _V + "paper_style"],
    _V + "plot_wavelengths": [_P + "wavelengths", _V + "plot_rope_scaling"],
    _V + "plot_dimensions": [_V + "plot_encoding"],
    _V + "plot_similarity": [_P + "similarity", _V + "plot_similarity_by_offset"],
    _V + "plot_similarity_by_offset": [_P + "similarity_by_offset", _V + "plot_similarity"],
    _V + "plot_rope_scaling": [_S + "from_hf", _P + "rope_frequencies", _V + "plot_wavelengths"],
    _V + "plot_bias": [_P + "alibi_bias", _P + "t5_buckets", _P + "kerple_bias"],
    _V + "plot_window_bias": [_P + "relative_position_index", _V + "plot_bias"],
    _V + "paper_style": [_V + "figsize", _V + "figure_set"],
    _V + "figure_set": [_V + "paper_style"],
}
SEE_ALSO[_P + "mrope_cos_sin"] = [_P + "rope_cos_sin", _P + "axial_rope_cos_sin", _S + "from_hf"]
SEE_ALSO[_P + "grid_interpolation_taps"] = [_P + "resample_grid", _P + "resample_table"]
SEE_ALSO[_P + "timestep_embedding"] = [_P + "sinusoidal", _P + "gaussian_fourier_features", _P + "sincos_grid"]
SEE_ALSO[_P + "rope_axes_cos_sin"] = [_P + "grid_ids", _P + "rope_axes", _P + "apply_rope", _V + "plot_rope_axes"]
SEE_ALSO[_P + "rope_axes"] = [_P + "rope_axes_cos_sin", _P + "grid_ids", _P + "apply_rope"]
SEE_ALSO[_P + "grid_ids"] = [_P + "rope_axes_cos_sin", _P + "sincos_coords"]
SEE_ALSO[_V + "plot_rope_axes"] = [_P + "rope_axes_cos_sin", _V + "plot_wavelengths"]
for _cls in ("Linear", "NTK", "DynamicNTK", "YaRN", "Llama3", "LongRoPE", "Proportional"):
    SEE_ALSO[_S + _cls] = [_S + "from_hf", _P + "rope_frequencies", _V + "plot_rope_scaling"]


#: the names transformers gives its function that swaps the pairs of RoPE
ROTATION_FUNCTIONS = ("rotate_half", "rotate_every_two")


def rotation_layouts(models: Path) -> tuple[dict[str, str], list[str]]:
    """The RoPE pair layout of each model folder of transformers, read from
    the source of its ``rotate_half`` / ``rotate_every_two`` (module-level
    functions, whatever their signature: annotations, defaults, several
    lines): ``({folder: function}, [folders])`` of the interleaved functions
    (they slice ``::2``) and of the half-split ones (they slice ``// 2``)."""
    import ast

    interleaved: dict[str, str] = {}
    half: list[str] = []
    for path in sorted(models.glob("*/modeling_*.py")):
        text = path.read_text(encoding="utf-8")
        if not any(f"def {name}(" in text for name in ROTATION_FUNCTIONS):
            continue
        for node in ast.parse(text).body:
            if not isinstance(node, ast.FunctionDef) or node.name not in ROTATION_FUNCTIONS:
                continue
            body = "\n".join(ast.get_source_segment(text, stmt) or "" for stmt in node.body)
            if "::2" in body:
                interleaved[path.parent.name] = node.name
            elif "// 2" in body:
                half.append(path.parent.name)
    return interleaved, half


def benchmark_rows(root: Path) -> list[dict[str, Any]] | None:
    """The rows of the committed benchmark report (``benchmarks/results.json``),
    with its ``header`` as the first row's ``"_header"``; None if absent."""
    import json

    path = root / "benchmarks" / "results.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = [row for section in data.get("sections", {}).values() for row in section]
    for row in rows:
        row["_header"] = data.get("header", {})
        row["_counts"] = data.get("counts", {})
    return rows


def _ratio(r: dict[str, Any] | None) -> str:
    return "–" if r is None or r.get("ratio") is None else f"{r['ratio']:.2f}x"


def _err(r: dict[str, Any] | None) -> str:
    return "–" if r is None or r.get("error") is None else f"{r['error']:.1e}"


def _measured(r: dict[str, Any]) -> str:
    """What a row measured against its target: its ratio, speed-up or error."""
    parts = []
    if r.get("ratio") is not None:
        parts.append(f"{r['ratio']:.2f}x")
    if r.get("speedup") is not None:
        parts.append(f"{r['speedup']:.1f}x faster")
    if r.get("error") is not None:
        parts.append(f"err {r['error']:.1e}")
    if r.get("ms") is not None and not parts:
        parts.append(f"{r['ms']:.3g} ms")
    return ", ".join(parts) or "–"


def gpu_device(row: dict[str, Any]) -> str:
    """The device a GPU row ran on: the row's ``extra["device"]``, else its
    note (where ``benchmarks/bench_gpu.py`` writes the device's name), else
    the report header's ``gpu``."""
    extra = row.get("extra") or {}
    header = row.get("_header") or {}
    return str(extra.get("device") or row.get("note") or header.get("gpu") or "?")


def performance_summary(rows: list[dict[str, Any]] | None) -> str:
    """The "In short" of the performance page (rst), from the rows of
    ``benchmarks/results.json`` (:func:`benchmark_rows`): the headline
    comparisons, every target the report does not meet, the GPU rows with
    their device once a run on a GPU is committed (or a sentence saying there
    are none), and the counts and machine of the run."""
    if not rows:
        return "No benchmark report has been committed yet: run ``make bench``.\n"
    head = rows[0].get("_header", {})
    counts = rows[0].get("_counts", {})
    out: list[str] = []
    gpu = [r for r in rows if r["section"] == "gpu" or "cuda" in str(r["backend"])]
    gpu_measured = [r for r in gpu if r.get("ms") is not None]
    if not gpu_measured:
        out.append(
            f"**No GPU numbers yet.**  Every number on this page was measured on CPUs "
            f"({head.get('cpu', '?')}, {head.get('cpu_count', '?')} cores, {head.get('date', '?')}); "
            "the GPU section of the benchmark is skipped until a run on a machine with a GPU is "
            "committed.\n"
        )

    def pick(section: str, backend: str, contestant: str, case: str | None = None) -> dict[str, Any] | None:
        for r in rows:
            if (
                r["section"] == section
                and r["backend"] == backend
                and r["contestant"] == contestant
                and (case is None or r["case"] == case)
            ):
                return r
        return None

    table: list[list[Any]] = []
    # (the table sizes "NxD"; the section's other cases, JAX's jitted table, have rows of their own)
    sizes = {r["case"] for r in rows if r["section"] == "sinusoidal" and r["case"].split("x")[0].isdigit()}
    cases = sorted(sizes, key=lambda c: int(c.split("x")[0]))
    for case in cases:
        for backend, seed in (("numpy", "seed001 f32"), ("torch-cpu 1 thread", "seed000 exp")):
            mine = pick("sinusoidal", backend, f"posenc vs {seed}", case)
            theirs = pick("sinusoidal", backend, seed, case)
            if mine:
                table.append(
                    [f"float32 table {case}, {backend}", seed, _ratio(mine), f"{_err(mine)} vs {_err(theirs)}"]
                )
    for backend in ("numpy", "torch-cpu 1 thread"):
        r = pick("rope", backend, "apply_rope vs HF")
        if r:
            table.append([f"RoPE {r['case']}, {backend}", "HF rotate_half", _ratio(r), "same"])
        r = pick("rope", backend, "posenc.apply_rope")
        if r:
            table.append([f"RoPE {r['case']}, {backend}", "a copy of x", _ratio(r), "–"])
    for r in rows:
        if r["section"] == "cache" and r["contestant"] == "second call" and r.get("speedup"):
            table.append(
                [f"repeated table {r['case']}, {r['backend']}", "first call", f"{1 / r['speedup']:.3f}x", "identical"]
            )
    if table:
        out.append(rst_table(table, ["what", "ref", "time / ref", "max error: posenc vs ref"], widths="40 20 15 25"))

    if gpu_measured:
        devices = sorted({gpu_device(r) for r in gpu_measured})
        out.append(f"On the GPU ({', '.join(devices)}):\n")
        gpu_rows = [
            [
                gpu_device(r),
                r["case"],
                r["backend"],
                r["contestant"],
                r.get("reference") or "–",
                _measured(r),
                r.get("target") or "–",
                r.get("status") or "–",
            ]
            for r in gpu_measured
        ]
        out.append(
            rst_table(
                gpu_rows,
                ["device", "case", "backend", "contestant", "ref", "measured", "target", "status"],
                widths="14 14 10 16 8 12 16 10",
                cls="posenc-text",
            )
        )

    failing = [r for r in rows if r.get("status") == "FAIL"]
    out.append(
        f"Targets met: {counts.get('PASS', 0)} PASS, {counts.get('FAIL', 0)} FAIL, "
        f"{counts.get('SKIP', 0)} SKIP (a SKIP is a GPU row on a machine without one).  "
        f"Measured on {head.get('date', '?')}: {head.get('machine', '?')}, {head.get('cpu', '?')}, "
        f"{head.get('cpu_count', '?')} cores.\n"
    )
    if failing:
        out.append(f"The {len(failing)} target{'s' if len(failing) > 1 else ''} not met:\n")
        fail_rows = [
            [
                r["section"],
                r["case"],
                r["backend"],
                r["contestant"],
                r.get("reference") or "–",
                _measured(r),
                r.get("target") or "–",
            ]
            for r in failing
        ]
        out.append(
            rst_table(
                fail_rows,
                ["section", "case", "backend", "contestant", "ref", "measured", "target"],
                widths="10 20 12 20 12 12 14",
                cls="posenc-text",
            )
        )
    else:
        out.append("Every target is met.\n")
    return "\n".join(out)


#: the keys of ``[project.urls]`` (pyproject.toml) that name the repository, in order of preference
REPOSITORY_KEYS = ("Repository", "Source", "Source Code", "Code")


def repository_url(root: Path) -> str | None:
    """The address of the project's public repository, as ``pyproject.toml``
    states it (``[project.urls]``, :data:`REPOSITORY_KEYS`), or None while it
    has none: the header's link, the BibTeX entry of the citing page and the
    ``repository-code`` of ``CITATION.cff`` come from here, so none of them
    is ever a placeholder."""
    import re

    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
    except ImportError:  # Python 3.10: the [project.urls] table's "key = value" lines
        table = re.search(r"^\[project\.urls\]\n((?:(?!\[).*\n?)*)", text, re.M)
        pairs = re.findall(r'^"?([\w .-]+?)"?\s*=\s*"([^"]*)"', table.group(1) if table else "", re.M)
        urls = dict(pairs)
    else:
        urls = tomllib.loads(text).get("project", {}).get("urls", {})
    return next((str(urls[k]) for k in REPOSITORY_KEYS if urls.get(k)), None)


def _output_choice(arg: str | None) -> str:
    return directives.choice(arg, ("literal", "rst", "none"))


class PosencExec(SphinxDirective):
    """Run Python code at build time; show it and its output."""

    has_content = True
    option_spec = {"output": _output_choice, "hide-code": directives.flag}

    def run(self) -> list[nodes.Node]:
        import matplotlib
        import numpy as np

        code = "\n".join(self.content)
        docname = self.env.docname
        root = Path(self.config.posenc_repo_root or Path(self.env.srcdir).parent)
        name = f"posenc_docs_{docname.replace('/', '_')}"
        shown, hidden = _NAMESPACES.setdefault(
            docname,
            (
                {"__name__": name},
                {"__name__": name, "rst_table": rst_table, "REPO_ROOT": root},
            ),
        )
        if "hide-code" in self.options:
            hidden.update(shown)
            hidden["benchmark_rows"] = lambda: benchmark_rows(root)
            ns = hidden
        else:
            ns = shown
        buf = io.StringIO()
        filename = f"<{docname}.rst, line {self.lineno}>"
        try:
            with contextlib.redirect_stdout(buf), np.printoptions(legacy=False), matplotlib.rc_context():
                # the defaults a reader's fresh session has (the plot directive sets its own)
                matplotlib.rcdefaults()
                exec(compile(code, filename, "exec"), ns)  # noqa: S102 - our own pages
        except Exception:
            tb = traceback.format_exc(limit=-3)
            raise self.error(f"posenc-exec: the code raised an exception:\n{tb}") from None
        finally:
            _close_figures()
        out = buf.getvalue()
        mode = self.options.get("output", "literal")
        result: list[nodes.Node] = []
        if "hide-code" not in self.options:
            src = nodes.literal_block(code, code, language="python")
            src["classes"].append("posenc-exec-source")
            self.set_source_info(src)
            result.append(src)
        if mode == "literal" and out.strip():
            text = out.rstrip("\n")
            lit = nodes.literal_block(text, text, language="none")
            lit["classes"].append("posenc-exec-output")
            self.set_source_info(lit)
            result.append(lit)
        elif mode == "rst" and out.strip():
            container = nodes.container(classes=["posenc-exec-rst"])
            lines = StringList(out.splitlines(), source=filename)
            nested_parse_with_titles(self.state, lines, container, self.content_offset)
            result.extend(container.children)
        return result


def _close_figures() -> None:
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


def _data_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """Module constants re-exported by a package (``posenc_viz.FIGURES``) get
    the ``#:`` comment of the submodule that defines them, not the docstring
    of their type (``tuple``, ``dict``)."""
    if what != "data":
        return
    import importlib
    import inspect
    import pkgutil

    from sphinx.pycode import ModuleAnalyzer

    modname, _, attr = name.rpartition(".")
    package = modname.split(".")[0]
    if package not in ("posenc", "posenc_viz"):
        return
    try:
        pkg = importlib.import_module(package)
    except ImportError:  # pragma: no cover
        return
    for info in pkgutil.iter_modules(pkg.__path__, package + "."):
        try:
            docs = ModuleAnalyzer.for_module(info.name).find_attr_docs()
        except Exception:  # pragma: no cover - unreadable source
            continue
        if ("", attr) in docs:
            lines[:] = list(docs[("", attr)])
            return
    type_doc = inspect.getdoc(type(obj)) or ""
    if type_doc and "\n".join(lines).strip() == type_doc.strip():
        lines[:] = []


# --------------------------------------------------------------------------
# Offline reading: a local MathJax, search excerpts without fetch()
# --------------------------------------------------------------------------
#: the MathJax files the site needs: the TeX-to-SVG component (no web fonts to
#: load, so it also works from file://) and what it loads on demand
_MATHJAX_PARTS = ("tex-svg.js", "input/tex/extensions", "ui", "a11y", "adaptors")


def local_mathjax() -> Path | None:
    """The MathJax 3 folder of an installed package that ships it, or None.

    ``sphinx-mathjax-offline`` (the ``docs`` extra) ships MathJax's files; the
    build copies the parts the pages use into ``_static/mathjax``.
    """
    from importlib import metadata

    try:
        files = metadata.files("sphinx-mathjax-offline") or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name == "tex-svg.js" and f.parent.name == "mathjax":
            folder = Path(str(f.locate())).parent
            return folder if folder.is_dir() else None
    return None


def _copy_mathjax(app: Any, exc: Exception | None) -> None:
    src = app.config.posenc_mathjax_dir
    if exc is not None or not src or app.builder.format != "html":
        return
    import shutil

    dest = Path(app.outdir) / "_static" / "mathjax"
    for part in _MATHJAX_PARTS:
        path = Path(src) / part
        if path.is_dir():
            shutil.copytree(path, dest / part, dirs_exist_ok=True)
        elif path.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / part)


#: body HTML of each page, for the search excerpts of the offline site
_PAGES: dict[str, str] = {}


def _collect_page(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    import re

    body = context.get("body")
    if not body or app.builder.format != "html":
        return
    body = re.sub(r"<img[^>]*>|<script.*?</script>|</?span[^>]*>", "", body, flags=re.DOTALL)
    _PAGES[pagename + app.builder.out_suffix] = body


def _write_pages(app: Any, exc: Exception | None) -> None:
    """``_static/posenc_pages.js``: the page texts that ``posenc_search.js``
    hands to Sphinx's search when the site is read from disk (browsers refuse
    ``fetch()`` on ``file://`` URLs, which the search uses for its excerpts)."""
    if exc is not None or app.builder.format != "html" or not _PAGES:
        return
    import json

    path = Path(app.outdir) / "_static" / "posenc_pages.js"
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = "window.POSENC_PAGES = "
    pages: dict[str, str] = {}
    if path.is_file():  # an incremental build rewrites only the changed pages
        try:
            pages = json.loads(path.read_text(encoding="utf-8")[len(prefix) :].rstrip().rstrip(";"))
        except ValueError:
            pages = {}
    pages.update(_PAGES)
    pages = {k: v for k, v in pages.items() if (Path(app.outdir) / k).is_file()}
    path.write_text(prefix + json.dumps(pages, separators=(",", ":")) + ";\n", encoding="utf-8")


def _reset_namespace(app: Any, docname: str, source: list[str]) -> None:
    _NAMESPACES.pop(docname, None)


def _forget(app: Any, env: Any, docname: str) -> None:
    _NAMESPACES.pop(docname, None)


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("posenc_repo_root", "", "env")
    app.add_config_value("posenc_mathjax_dir", "", "html")
    app.connect("html-page-context", _collect_page)
    app.connect("build-finished", _write_pages)
    app.connect("build-finished", _copy_mathjax)
    app.add_directive("posenc-exec", PosencExec)
    app.connect("source-read", _reset_namespace)
    app.connect("env-purge-doc", _forget)
    app.connect("autodoc-process-docstring", _data_docstring)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
