"""The documentation: every public name has an API page, and the site builds.

``test_sphinx_build`` runs the same build as ``make docs`` (``-W
--keep-going``: every warning fails) on a copy of ``docs/`` (and of the
benchmark report and the changelog it includes) in a temporary folder, so
that the test leaves the source tree untouched.  It executes the gallery
examples and the build-time code of the pages, and then checks the built
site, once (the build is the largest test of the suite):

* offline: no page loads a script, style sheet, font or image from outside
  the site (:func:`external_assets`, also over the site's CSS files);
* every code block a page shows runs as shown, imports included: the blocks
  are read back from the built HTML and run page by page, top to bottom, each
  page in a fresh namespace (:func:`shown_code`, :data:`RUNNER`).
"""

from __future__ import annotations

import ast
import html.parser
import importlib
import inspect
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API = DOCS / "api"

#: entries starting with one of these are absolute, the others relative to
#: the current module (as autosummary resolves them)
_PACKAGES = ("posenc", "posenc_viz")
_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([\w:-]+)::\s*(.*)$")


def autosummary_entries(text: str) -> list[str]:
    """Fully qualified names listed in the ``autosummary`` blocks of an rst text."""
    names: list[str] = []
    current = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _DIRECTIVE.match(lines[i])
        i += 1
        if not m:
            continue
        indent, name, arg = m.groups()
        if name in ("currentmodule", "module", "py:currentmodule", "py:module"):
            current = "" if arg.strip() == "None" else arg.strip()
            continue
        if name != "autosummary":
            continue
        # the block: lines indented deeper than the directive
        while i < len(lines):
            line = lines[i]
            if line.strip() and len(line) - len(line.lstrip()) <= len(indent):
                break
            i += 1
            entry = line.strip()
            if not entry or entry.startswith((":", "..")):
                continue
            entry = entry.lstrip("~").split()[0]
            if current and entry.split(".")[0] not in _PACKAGES:
                entry = f"{current}.{entry}"
            names.append(entry)
    return names


def documented_names() -> set[str]:
    names: set[str] = set()
    for page in sorted(API.glob("*.rst")):
        names.update(autosummary_entries(page.read_text(encoding="utf-8")))
    return names


def public_names() -> list[str]:
    """Every name that must have an API page."""
    import posenc

    names = [f"posenc.{n}" for n in posenc.__all__ if not inspect.ismodule(getattr(posenc, n))]
    try:
        scaling = importlib.import_module("posenc.scaling")
    except ModuleNotFoundError as exc:
        if exc.name != "posenc.scaling":
            raise
    else:
        members = getattr(scaling, "__all__", None)
        if members is None:
            members = [
                n
                for n, v in vars(scaling).items()
                if not n.startswith("_") and getattr(v, "__module__", "") == scaling.__name__
            ]
        names += [f"posenc.scaling.{n}" for n in members]
    try:
        viz = importlib.import_module("posenc_viz")
    except ModuleNotFoundError as exc:
        if exc.name != "posenc_viz":
            raise
    else:
        names += [f"posenc_viz.{n}" for n in getattr(viz, "__all__", [])]
    try:
        modules = importlib.import_module("posenc.torch")
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
    else:
        names += [f"posenc.torch.{n}" for n in modules.__all__]
        flex = importlib.import_module("posenc.torch.flex")
        names += [f"posenc.torch.flex.{n}" for n in flex.__all__]
    return names


def test_autosummary_parser():
    text = """
Title
=====

.. currentmodule:: posenc

.. autosummary::
   :toctree: generated/

   sinusoidal
   posenc.frequencies
   ~posenc.scaling.YaRN

Text after the block.

.. autosummary::
   :toctree: generated/
   :nosignatures:

   posenc_viz.plot_encoding
"""
    assert autosummary_entries(text) == [
        "posenc.sinusoidal",
        "posenc.frequencies",
        "posenc.scaling.YaRN",
        "posenc_viz.plot_encoding",
    ]


def test_every_public_name_has_an_api_page():
    missing = sorted(set(public_names()) - documented_names())
    assert not missing, f"public names missing from the autosummary blocks of docs/api/*.rst: {missing}"


def test_api_pages_list_only_existing_names():
    stale = []
    for name in sorted(documented_names()):
        module, _, attr = name.rpartition(".")
        try:
            obj = importlib.import_module(module)
        except ModuleNotFoundError:
            stale.append(name)
            continue
        if not hasattr(obj, attr):
            stale.append(name)
    assert not stale, f"docs/api/*.rst lists names that do not exist: {stale}"


def test_every_api_page_is_in_the_toctree():
    index = (API / "index.rst").read_text(encoding="utf-8")
    pages = [p.stem for p in API.glob("*.rst") if p.stem != "index"]
    missing = [p for p in pages if not re.search(rf"^\s+{re.escape(p)}\s*$", index, re.MULTILINE)]
    assert not missing, f"docs/api/index.rst does not list {missing}"


def test_api_toctree_entries_exist():
    index = (API / "index.rst").read_text(encoding="utf-8")
    block = index.split(".. toctree::", 1)[1]
    entries = [ln.strip() for ln in block.splitlines()[1:] if ln.strip() and not ln.strip().startswith(":")]
    missing = [e for e in entries if not (API / f"{e}.rst").is_file()]
    assert entries and not missing, f"docs/api/index.rst lists missing pages {missing}"


def markdown_tables(text: str) -> list[list[list[str]]]:
    """The pipe tables of a Markdown text: rows of cell texts, the ``|---|`` line left out."""
    tables: list[list[list[str]]] = []
    previous = ""
    for line in text.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line):
                tables[-1].append([c.strip() for c in line.strip().strip("|").split("|")])
        previous = line
    return tables


def test_benchmark_report_renders_through_myst():
    """The performance page includes benchmarks/RESULTS.md with myst-parser's
    parser; that parser reads every heading, table row and cell of the report
    without a warning."""
    pytest.importorskip("myst_parser")
    from docutils import nodes
    from docutils.core import publish_doctree
    from myst_parser.parsers.docutils_ import Parser

    page = (DOCS / "performance.rst").read_text(encoding="utf-8")
    assert re.search(r"^\.\. include:: \.\./benchmarks/RESULTS\.md\n +:parser: myst_parser\.sphinx_$", page, re.M)

    text = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    warnings = io.StringIO()
    doctree = publish_doctree(
        text, parser=Parser(), settings_overrides={"warning_stream": warnings, "report_level": 1, "halt_level": 5}
    )
    assert warnings.getvalue() == ""
    assert not list(doctree.findall(nodes.system_message))
    headings = [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]
    assert [t.astext() for t in doctree.findall(nodes.title)] == headings
    expected = markdown_tables(text)
    assert expected, "benchmarks/RESULTS.md has no table"
    got = [
        [[entry.astext() for entry in row.findall(nodes.entry)] for row in table.findall(nodes.row)]
        for table in doctree.findall(nodes.table)
    ]
    assert got == expected


def markdown_emphasis(text: str) -> list[str]:
    """The texts a Markdown document renders in bold or italics (CommonMark, as myst-parser reads it)."""
    from markdown_it import MarkdownIt

    found = []
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        children = token.children or []
        for i, child in enumerate(children):
            if child.type in ("strong_open", "em_open"):
                close = child.type.replace("_open", "_close")
                j = next(j for j in range(i + 1, len(children)) if children[j].type == close)
                found.append("".join(c.content for c in children[i + 1 : j]))
    return found


def test_markdown_emphasis_is_found():
    pytest.importorskip("markdown_it")
    text = "at 2**31 and 2**22; `2**40` and 2\\*\\*8 stay; **bold** and *it*"
    assert markdown_emphasis(text) == ["31 and 2", "bold", "it"]


@pytest.mark.parametrize("name", ["CHANGELOG.md", "benchmarks/RESULTS.md"])
def test_powers_are_not_bold(name):
    """``2**31 ... 2**22`` outside a code span renders as bold ``31 ... 2``
    (on the site's changelog and on any Markdown viewer): powers go in code
    spans (`` `2**31` ``)."""
    pytest.importorskip("markdown_it")
    text = (ROOT / name).read_text(encoding="utf-8")
    accidental = [e for e in markdown_emphasis(text) if e[:1].isdigit() or e[-1:].isdigit()]
    assert not accidental, f"{name} renders these as bold or italics (put the powers in code spans): {accidental}"


def _row(section, case, backend, contestant, **kw):
    row = dict(
        section=section,
        case=case,
        backend=backend,
        contestant=contestant,
        ms=None,
        reference=None,
        ratio=None,
        speedup=None,
        error=None,
        target="",
        status="",
        note="",
        extra={},
    )
    row.update(kw)
    return row


def test_performance_summary_shows_failing_targets_and_gpu_rows():
    """The "In short" of the performance page lists every target not met and,
    once a GPU run is committed, its rows with their device."""
    summary = docs_extension().performance_summary
    header = {"date": "2026-01-01", "machine": "Linux", "cpu": "some CPU", "cpu_count": 8}
    rows = [
        _row("hotpath", "decode", "numpy", "rope x2", ratio=1.59, reference="HF step", target="<= 1.0x", status="FAIL"),
        _row("rope", "1x32x4096x128", "numpy", "apply_rope vs HF", ratio=0.8, target="<= 1.0x", status="PASS"),
        _row("gpu", "-", "cuda", "-", status="SKIP", note="no CUDA device on this machine"),
    ]
    for r in rows:
        r["_header"], r["_counts"] = header, {"PASS": 1, "FAIL": 1, "SKIP": 1}
    text = summary(rows)
    assert "No GPU numbers yet" in text and "The 1 target not met" in text
    failing = text.split("The 1 target not met", 1)[1]
    assert "rope x2" in failing and "1.59x" in failing and "<= 1.0x" in failing and "apply_rope vs HF" not in failing

    gpu = [
        _row(
            "gpu",
            "4096x512 f32",
            "torch-cuda",
            "posenc.sinusoidal",
            ms=0.05,
            ratio=1.6,
            reference="copy",
            target="<= 2.0x copy",
            status="PASS",
            note="NVIDIA H100 80GB HBM3",
        ),
        _row("gpu", "4096x512 f32", "torch-cuda", "copy", ms=0.03, note="NVIDIA H100 80GB HBM3"),
    ]
    for r in gpu:
        r["_header"], r["_counts"] = header, {}
    text = summary(rows[:2] + gpu)
    assert "No GPU numbers yet" not in text
    assert "On the GPU (NVIDIA H100 80GB HBM3)" in text and text.count("NVIDIA H100 80GB HBM3") == 3
    assert "posenc.sinusoidal" in text and "1.60x" in text and "0.03 ms" in text
    assert "Every target is met" in summary(rows[1:2])
    assert "No benchmark report" in summary(None)


def test_performance_summary_of_the_committed_report():
    """Every FAIL row of ``benchmarks/results.json`` is in the page's summary."""
    ext = docs_extension()
    rows = ext.benchmark_rows(ROOT)
    if rows is None:
        pytest.skip("no benchmarks/results.json")
    text = ext.performance_summary(rows)
    failing = [r for r in rows if r["status"] == "FAIL"]
    if failing:
        table = text.split(" not met:", 1)[1]
        cells = [ln.strip(" *-") for ln in table.splitlines()]
        assert sum(1 for ln in table.splitlines() if ln.startswith("   * - ")) == len(failing) + 1  # + header
        for r in failing:
            assert r["contestant"] in cells and r["target"] in cells, r
    measured = [r for r in rows if r["section"] == "gpu" and r.get("ms") is not None]
    assert ("No GPU numbers yet" in text) == (not measured)


#: numpydoc's checks the public docstrings are not held to, and why:
#: ES01 (an extended summary) -- a short function needs none;
#: SA01 ("See Also") -- the API pages render it from one table,
#: ``posenc_docs.SEE_ALSO``, instead of a section in every docstring;
#: SS05 ("infinitive verb") -- a summary may name what is returned ("ALiBi's
#: per-head slopes ..."), and the check reads every first word ending in "s"
#: ("ALiBi's", "Indices") as a verb in the third person.
NUMPYDOC_IGNORED = {"ES01", "SA01", "SS05"}


def numpydoc_names() -> list[str]:
    """The public functions and classes whose docstrings numpydoc validates:
    ``posenc.__all__``, ``posenc.torch.__all__`` and ``posenc_viz.__all__``
    (modules and constants left out: a constant's documentation is its ``#:``
    comment, which numpydoc does not read)."""
    names = []
    for package in ("posenc", "posenc.torch", "posenc_viz"):
        try:
            module = importlib.import_module(package)
        except ModuleNotFoundError as exc:
            if exc.name not in ("torch", "matplotlib"):
                raise
            continue
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isroutine(obj) or inspect.isclass(obj):
                names.append(f"{package}.{name}")
    return names


def numpydoc_errors(name: str) -> list[tuple[str, str]]:
    """numpydoc's validation errors of a docstring, less :data:`NUMPYDOC_IGNORED`
    and PR04 ("no type") where the type is stated once for several parameters:
    a group (``dtype, device, xp``: "Output dtype, device and namespace"),
    ``*args`` / ``**kwargs``, or "As in :func:`...`" (the type is on that page)."""
    from numpydoc.validate import Validator, get_doc_object, validate

    module, _, attr = name.rpartition(".")
    # the object itself: numpydoc's own lookup of "posenc.sinusoidal" finds the module of that name
    obj = getattr(importlib.import_module(module), attr)
    params = Validator(get_doc_object(obj)).doc_parameters
    shared = {}
    for param, (typ, desc) in params.items():
        shared.setdefault((typ, tuple(desc)), []).append(param)

    def typed_elsewhere(param: str) -> bool:
        typ, desc = params.get(param, ("", []))
        return (
            len(shared[(typ, tuple(desc))]) > 1
            or param.startswith("*")
            or " ".join(desc).startswith(("As in ", "As for "))
        )

    errors = []
    for code, msg in validate(get_doc_object(obj))["errors"]:
        if code in NUMPYDOC_IGNORED:
            continue
        m = re.match(r'Parameter "(.+)" has no type', msg)
        if code == "PR04" and m and typed_elsewhere(m.group(1)):
            continue
        errors.append((code, msg))
    return errors


def test_public_docstrings_pass_numpydoc_validation():
    """Every public docstring passes numpydoc's validation (its checks less
    :data:`NUMPYDOC_IGNORED`), as the numpydoc renderer of the API pages reads them."""
    pytest.importorskip("numpydoc")
    names = numpydoc_names()
    assert len(names) > 50, names
    failed = {name: errors for name in names if (errors := numpydoc_errors(name))}
    report = "\n".join(f"{name}: {code} {msg}" for name, errors in failed.items() for code, msg in errors)
    assert not failed, f"numpydoc validation:\n{report}"


def test_numpydoc_validation_reports(tmp_path, monkeypatch):
    """The check finds a missing type, an undocumented parameter, a summary
    over two lines, and lets a group of parameters share one description."""
    pytest.importorskip("numpydoc")
    (tmp_path / "npd_probe.py").write_text(
        '''def good(x, *, dtype=None, device=None):
    """Return x.

    Parameters
    ----------
    x : int
        A value.
    dtype, device
        Output dtype and device.

    Returns
    -------
    int
        The value.

    Examples
    --------
    >>> good(1)
    1
    """
    return x


def bad(x, y):
    """Return x
    plus y.

    Parameters
    ----------
    x
        A value.

    Returns
    -------
    int
        The sum.

    Examples
    --------
    >>> bad(1, 2)
    3
    """
    return x + y
''',
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert numpydoc_errors("npd_probe.good") == []
    codes = {code for code, _ in numpydoc_errors("npd_probe.bad")}
    assert {"PR01", "PR04", "SS06"} <= codes, codes


def test_every_public_function_has_an_example():
    without = []
    for name in public_names():
        module, _, attr = name.rpartition(".")
        obj = getattr(importlib.import_module(module), attr)
        if not inspect.isroutine(obj):  # functions; classes and constants document themselves
            continue
        doc = inspect.getdoc(obj) or ""
        if not re.search(r"^Examples\n-{8}", doc, re.MULTILINE) or ">>>" not in doc:
            without.append(name)
    assert not without, f"no 'Examples' section with doctest lines in the docstrings of {without}"


def test_gallery_examples_are_complete():
    examples = sorted((DOCS / "examples").rglob("plot_*.py"))
    assert examples, "docs/examples has no plot_*.py"
    assert (DOCS / "examples" / "README.rst").is_file()
    # the gallery's sections: every folder of examples has a header
    for folder in {p.parent for p in examples} - {DOCS / "examples"}:
        assert (folder / "README.rst").is_file(), f"{folder.name}/ needs a README.rst (its section's title and text)"
    for path in examples:
        text = path.read_text(encoding="utf-8")
        m = re.match(r'"""\n(.+)\n(=+)\n', text)
        assert m and len(m.group(2)) >= len(m.group(1)), f"{path.name}: needs a docstring with an rst title"


def test_rope_axes_example_legends_leave_the_curves_clear(monkeypatch):
    """The legends of the ``plot_rope_axes`` example sit outside the panels,
    where they cover no curve."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = next((DOCS / "examples").rglob("plot_rope_axes.py"))
    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    try:
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), {"__name__": "__main__"})
        fig = plt.gcf()
        fig.canvas.draw()
        panels = [ax for ax in fig.axes if ax.lines]
        assert len(panels) == 2
        for ax in panels:
            legend = ax.get_legend()
            assert legend is not None
            assert not legend.get_window_extent().overlaps(ax.get_window_extent()), ax.get_title()
    finally:
        plt.close("all")


def test_every_figure_has_a_gallery_example():
    viz = pytest.importorskip("posenc_viz")
    figures = [n for n in viz.__all__ if n.startswith("plot_") or n in ("paper_style", "figure_set")]
    text = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "examples").rglob("plot_*.py"))
    missing = [n for n in figures if f"posenc_viz.{n}(" not in text]
    assert not missing, f"no gallery example calls {missing}"


@pytest.mark.slow
def test_readme_states_the_sites_accuracy():
    """The README's accuracy sentence is the site's one statement (same bound,
    same ranges, same NaN rule)."""
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import posenc_docs
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    bound = posenc_docs.bound_text()
    assert f"within {bound} of the exact values" in readme
    assert f"integer position |p| < 2^{posenc_docs.ACCURACY_RANGE_LOG2}" in readme
    assert f"real one |p| < 2^{posenc_docs.ACCURACY_FLOAT_LOG2}" in readme
    assert f"|p| >= 2^{posenc_docs.NAN_LOG2} give NaN rows" in readme


def test_rotation_layouts_read_any_signature(tmp_path):
    """The conventions page's list of interleaved RoPE functions reads the
    functions whatever their signature (a return annotation, several lines)."""
    sources = {
        "plain": "def rotate_half(x):\n    x1, x2 = x[..., ::2], x[..., 1::2]\n    return x1\n",
        "annotated": "def rotate_every_two(x: torch.Tensor) -> torch.Tensor:\n    x1 = x[:, :, ::2]\n    return x1\n",
        "wrapped": "def rotate_half(\n    x: 'T',\n    dim: int = -1,\n) -> 'T':\n    return x[..., 1::2]\n",
        "halves": "def rotate_half(x: Tensor) -> Tensor:\n    x1 = x[..., : x.shape[-1] // 2]\n    return x1\n",
        "method": "class A:\n    def rotate_half(self, x):\n        return x[..., ::2]\n",
    }
    for name, text in sources.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / f"modeling_{name}.py").write_text(text, encoding="utf-8")
    interleaved, half = docs_extension().rotation_layouts(tmp_path)
    assert interleaved == {"annotated": "rotate_every_two", "plain": "rotate_half", "wrapped": "rotate_half"}
    assert half == ["halves"]


def test_rotation_layouts_of_transformers(tmp_path):
    """GPT-J and CodeGen (``rotate_every_two(x: torch.Tensor) -> torch.Tensor``)
    are on the page's list; Llama (halves) is not."""
    transformers = pytest.importorskip("transformers")
    models = Path(transformers.__file__).parent / "models"
    for name in ("gptj", "codegen", "llama"):
        shutil.copytree(models / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    interleaved, half = docs_extension().rotation_layouts(tmp_path)
    assert interleaved == {"codegen": "rotate_every_two", "gptj": "rotate_every_two"}
    assert half == ["llama"]


_CODE_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+(code-block|sourcecode|code|posenc-exec|plot)::\s*(\S*)")
#: the widest code line that the column of a how-to page (between its two
#: sidebars) shows without a scroll bar at 1400 px (PEP 8's 79 characters)
CODE_COLUMNS = 79


def shown_code_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, code)`` of the lines of the Python blocks an rst page
    shows (``code-block:: python``, ``posenc-exec`` without ``:hide-code:``,
    ``plot``), their block's indentation removed."""
    lines = text.splitlines()
    found: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        m = _CODE_DIRECTIVE.match(lines[i])
        i += 1
        if not m or (m.group(2) in ("code-block", "sourcecode", "code") and m.group(3) not in _PYTHON):
            continue
        indent = len(m.group(1))
        body: list[tuple[int, str]] = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            body.append((i + 1, lines[i]))
            i += 1
        options = [ln.strip() for _, ln in body if re.match(r"\s*:[\w-]+:", ln)]
        if ":hide-code:" in options or m.group(2) == "plot" and not body:
            continue
        code = [(n, ln) for n, ln in body if ln.strip() and not re.match(r"\s*:[\w-]+:", ln)]
        if code:
            base = min(len(ln) - len(ln.lstrip()) for _, ln in code)
            found += [(n, ln[base:]) for n, ln in code]
    return found


def test_shown_code_lines_are_read():
    text = """Text.

.. code-block:: python

   import posenc
   x = 1

.. code-block:: console

   $ pip install a-very-long-name

.. posenc-exec::
   :hide-code:

   hidden = 1

.. posenc-exec::
   :output: rst

   def f():
       return 2
"""
    assert shown_code_lines(text) == [(5, "import posenc"), (6, "x = 1"), (20, "def f():"), (21, "    return 2")]


def test_code_fits_the_column():
    """The code of the how-to guides and the migration page fits their text
    column at 1400 px (no line hidden behind a scroll bar)."""
    pages = sorted((DOCS / "howto").glob("*.rst")) + [DOCS / "migration.rst"]
    wide = {
        p.relative_to(DOCS).as_posix(): [
            n for n, ln in shown_code_lines(p.read_text(encoding="utf-8")) if len(ln) > CODE_COLUMNS
        ]
        for p in pages
    }
    wide = {k: v for k, v in wide.items() if v}
    assert not wide, f"code lines longer than {CODE_COLUMNS} characters (page: line numbers): {wide}"


def rst_code_blocks(text: str) -> list[tuple[list[str], str]]:
    """``(options, code)`` of the ``posenc-exec`` blocks of an rst page, in order."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        m = _CODE_DIRECTIVE.match(lines[i])
        i += 1
        if not m or m.group(2) != "posenc-exec":
            continue
        indent = len(m.group(1))
        body = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            body.append(lines[i])
            i += 1
        options = [ln.strip() for ln in body if re.match(r"\s*:[\w-]+:", ln)]
        code = [ln for ln in body if not re.match(r"\s*:[\w-]+:", ln)]
        blocks.append((options, textwrap.dedent("\n".join(code)).strip("\n") + "\n"))
    return blocks


def which_function_examples() -> tuple[str, list[str]]:
    """The lines the "Which function?" page shows first, and the example of each row of its tables."""
    blocks = rst_code_blocks((DOCS / "which_function.rst").read_text(encoding="utf-8"))
    setup = next(code for options, code in blocks if ":hide-code:" not in options)
    hidden = next(code for options, code in blocks if ":hide-code:" in options)
    sections = next(
        node.value
        for node in ast.parse(hidden).body
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["sections"]
    )
    rows = [row for rows in ast.literal_eval(sections).values() for row in rows]
    return setup, [example for *_, example in rows]


def test_which_function_rows_run_as_copied():
    """Each example of the "Which function?" page runs after the lines the page
    shows above its tables, alone (a fresh namespace per row), as a reader
    copies them."""
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    setup, examples = which_function_examples()
    assert len(examples) >= 30, len(examples)
    code = compile(setup, "which_function.rst (the lines above the tables)", "exec")
    failed = {}
    for example in examples:
        ns: dict = {"__name__": "__main__"}
        exec(code, ns)
        try:
            eval(example, ns)
        except Exception as exc:
            failed[example] = f"{type(exc).__name__}: {exc}"
        finally:
            plt.close("all")
    assert not failed, f"rows of which_function.rst that do not run as copied: {failed}"


# --------------------------------------------------------------------------
# One bound: the accuracy bound is written one way on every page
# --------------------------------------------------------------------------
#: the bound, or its one-digit rounding (``f"{2.5e-7:.0e}"`` is ``2e-07``); about
#: 3e-7 is another statement (the ``freqs`` path of rope_axes_cos_sin without float64)
_MANTISSA = r"(?<![\w.])(2\.5|2)(?:\.0+)?"
_BOUND_SPELLINGS = re.compile(
    _MANTISSA
    + r"(?:"
    + r"\s*[eE]\s*([-\u2212])\s*0*7(?![\d.])"  # 2.5e-7, 2.5e-07
    + r"|\s*(?:\u00b7|\u00d7|\*|x|\\cdot|\\times)\s*10\s*"  # 2·10⁻⁷, 2.5 \times 10^{-7}, 2.5 x 10**-7
    + r"(?:\u207b\u2077|\^\s*\{?\s*[-\u2212]\s*7\s*\}?|\*\*\s*\(?\s*-\s*7|<sup>\s*[-\u2212]\s*7\s*</sup>)"
    + r")"
)


def bound_spellings(text: str) -> set[str]:
    """The spellings of the accuracy bound (2.5e-7, or its one-digit
    rounding 2e-7) in a text: e-notation (the zeros of the exponent
    left out: ``2.5e-07`` is ``2.5e-7``), ``·10⁻⁷``, ``× 10^{-7}`` (TeX),
    ``10<sup>-7</sup>``."""
    found = set()
    for m in _BOUND_SPELLINGS.finditer(html.unescape(text)):
        if m.group(2):  # e-notation, as bound_text() writes it
            found.add(f"{m.group(1)}e-7")
        else:
            found.add(" ".join(m.group(0).split()))
    return found


def test_bound_spellings_are_found():
    text = """within 2.5e-7 of the exact values; err &lt;= 2.5e-07 | PASS; off by 2&#183;10⁻⁷;
    the bound :math:`2.5 \\times 10^{-7}`, 2.5&nbsp;x&nbsp;10**-7, 2·10<sup>-7</sup>, 2.5E-7;
    not the bound: 1.4e-07, 12.5e-7, 2.4·10⁻⁷, 2.5e-70, 0.2e-7, x2e-7, 2.5e-5, about 3e-7"""
    assert bound_spellings(text) == {
        "2.5e-7",
        "2·10⁻⁷",
        "2.5 \\times 10^{-7}",
        "2.5 x 10**-7",
        "2·10<sup>-7</sup>",
    }


def docs_extension():
    """``docs/_ext/posenc_docs.py``, the site's extension, as a module."""
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        return importlib.import_module("posenc_docs")
    finally:
        sys.path.remove(str(DOCS / "_ext"))


def test_the_site_writes_the_bound_as_the_readme():
    """The site's ``|acc-bound|`` is the README's spelling (not a rounding of it)."""
    posenc_docs = docs_extension()
    assert posenc_docs.bound_text() == "2.5e-7" == posenc_docs.bound_text(posenc_docs.ACCURACY_BOUND)
    assert float(posenc_docs.bound_text()) == posenc_docs.ACCURACY_BOUND
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert bound_spellings(readme) == {posenc_docs.bound_text()}


# --------------------------------------------------------------------------
# The built site: offline assets and the code it shows
# --------------------------------------------------------------------------
#: ``<link rel=...>`` values whose address the browser loads with the page
_LOADED_RELS = {"stylesheet", "preload", "modulepreload", "prefetch", "icon", "manifest", "apple-touch-icon"}
#: tags whose ``src`` (or ``srcset``, ``data``) the browser loads with the page
_LOADED_SRC = {"script", "img", "iframe", "embed", "source", "video", "audio", "track", "input", "object"}
_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""", re.IGNORECASE)


def is_external(url: str) -> bool:
    """Whether an address points outside the site (``http(s)``, ``ftp`` or protocol-relative)."""
    url = url.strip()
    return url.startswith("//") or urlsplit(url).scheme.lower() in ("http", "https", "ftp")


def css_urls(css: str) -> list[str]:
    """The addresses a style sheet loads (``url(...)``, ``@import``)."""
    return [a or b for a, b in _CSS_URL.findall(css)]


class _Assets(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.loaded: list[tuple[str, str]] = []
        self._style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "link" and set(a.get("rel", "").lower().split()) & _LOADED_RELS and a.get("href"):
            self.loaded.append((f"link rel={a['rel']}", a["href"]))
        if tag in _LOADED_SRC:
            for key in ("src", "data"):
                if a.get(key):
                    self.loaded.append((tag, a[key]))
            for part in a.get("srcset", "").split(","):
                if part.strip():
                    self.loaded.append((tag, part.split()[0]))
        self.loaded += [(f"{tag} style", u) for u in css_urls(a.get("style", ""))]
        self._style = self._style or tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._style = False

    def handle_data(self, data: str) -> None:
        if self._style:
            self.loaded += [("style", u) for u in css_urls(data)]


class _Images(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.images: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            a = {k: v or "" for k, v in attrs}
            self.images.append((a.get("src", ""), a.get("alt", "")))


def poor_alt_texts(page: str) -> list[tuple[str, str]]:
    """``(src, alt)`` of the figures of a page whose alt text does not describe
    them: empty, a file name, or sphinx-gallery's name of the example.  Gallery
    thumbnails are left out (their link text, beside them, names them)."""
    parser = _Images()
    parser.feed(page)
    parser.close()
    poor = []
    for src, alt in parser.images:
        if "_thumb" in src or "/_static/" in src or not src:
            continue
        words = alt.split()
        if len(words) < 4 or alt.startswith("plot ") or alt.endswith((".png", ".svg")) or "_images/" in alt:
            poor.append((src, alt))
    return poor


def test_poor_alt_texts_are_found():
    page = """<img alt="" src="_images/a.png">
    <img alt="plot window bias" src="_images/sphx_glr_plot_window_bias_001.png">
    <img alt="_images/index-1.png" src="_images/index-1.png"><img alt="" src="_images/sphx_glr_plot_x_thumb.png">
    <img alt="heatmap of position against dimension" src="_images/b.png">"""
    assert [src for src, _ in poor_alt_texts(page)] == [
        "_images/a.png",
        "_images/sphx_glr_plot_window_bias_001.png",
        "_images/index-1.png",
    ]


def external_assets(page: str) -> list[tuple[str, str]]:
    """The scripts, style sheets, fonts and images an HTML page loads from outside the site."""
    parser = _Assets()
    parser.feed(page)
    parser.close()
    return [(kind, url) for kind, url in parser.loaded if is_external(url)]


def test_external_assets_are_found():
    page = """<html><head>
    <script src="_static/local.js"></script><script src="https://cdn.example.org/mathjax.js"></script>
    <link rel="stylesheet" href="//fonts.example.org/css"><link rel="preload" as="font" href="_static/f.woff2">
    <link rel="canonical" href="https://example.org/page.html">
    <style>@font-face { src: url('https://fonts.example.org/a.woff2'); } .x { background: url(img.png) }</style>
    </head><body><a href="https://example.org/">a link loads nothing</a>
    <img src="data:image/png;base64,AAAA" srcset="x.png 1x, http://example.org/y.png 2x">
    <div style="background-image: url(&quot;https://example.org/z.png&quot;)"></div></body></html>"""
    assert external_assets(page) == [
        ("script", "https://cdn.example.org/mathjax.js"),
        ("link rel=stylesheet", "//fonts.example.org/css"),
        ("style", "https://fonts.example.org/a.woff2"),
        ("img", "http://example.org/y.png"),
        ("div style", "https://example.org/z.png"),
    ]
    assert css_urls("@import 'https://a.org/x.css'; b { src: url(\"f.woff\") }") == ["https://a.org/x.css", "f.woff"]


#: the languages of the code blocks that run as Python
_PYTHON = {"python", "python3", "py", "ipython", "ipython3"}
#: parts of the site whose code is run elsewhere: docstring examples (doctests
#: of pytest) and the gallery (sphinx-gallery runs each example as a script)
_CODE_ELSEWHERE = ("api/generated/", "auto_examples/", "_modules/")
#: the class of a shown block that cannot run here (its page says why)
NORUN = "posenc-norun"


class _Code(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, set[str], str]] = []
        self._divs: list[tuple[str, set[str]] | None] = []
        self._pre: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "div":
            classes = set((dict(attrs).get("class") or "").split())
            lang = next((c[len("highlight-") :] for c in classes if c.startswith("highlight-")), None)
            self._divs.append(None if lang is None else (lang, classes))
        elif tag == "pre" and any(self._divs):
            self._pre = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._divs:
            self._divs.pop()
        elif tag == "pre" and self._pre is not None:
            lang, classes = next(d for d in reversed(self._divs) if d)
            self.blocks.append((lang, classes, "".join(self._pre)))
            self._pre = None

    def handle_data(self, data: str) -> None:
        if self._pre is not None:
            self._pre.append(data)


def code_blocks(page: str) -> list[tuple[str, set[str], str]]:
    """``(language, classes, code)`` of every highlighted block of an HTML page, in order."""
    parser = _Code()
    parser.feed(page)
    parser.close()
    return parser.blocks


def shown_code(page: str) -> tuple[list[str], list[str]]:
    """The Python blocks a page shows (to run, in order), and the blocks whose
    language is not named (``::`` blocks: Python or a shell, the reader cannot tell)."""
    run, unnamed = [], []
    for lang, classes, code in code_blocks(page):
        if lang == "default":
            unnamed.append(code)
        elif lang in _PYTHON and NORUN not in classes:
            run.append(code)
    return run, unnamed


def test_shown_code_is_read_back():
    page = """<div class="highlight-python notranslate posenc-exec-source"><div class="highlight"><pre>
<span></span><span class="kn">import</span> <span class="nn">numpy</span> <span class="k">as</span> np
<span class="nb">print</span>(np.arange(3) &lt; 2)</pre></div></div>
<div class="highlight-none posenc-exec-output"><div class="highlight"><pre>[ True  True False]</pre></div></div>
<div class="highlight-console notranslate"><div class="highlight"><pre>$ pip install posenc</pre></div></div>
<div class="highlight-python notranslate posenc-norun"><div class="highlight"><pre>import cupy</pre></div></div>
<div class="highlight-default notranslate"><div class="highlight"><pre>x = 1</pre></div></div>"""
    run, unnamed = shown_code(page)
    assert run == ["\nimport numpy as np\nprint(np.arange(3) < 2)"]
    assert unnamed == ["x = 1"]


#: runs the shown blocks of each page (JSON ``{page: [code, ...]}`` on stdin)
#: in a fresh namespace and a fresh working folder per page, with matplotlib's
#: defaults; prints JSON ``{page: traceback}`` of the pages whose code raised
RUNNER = r"""
import contextlib, io, json, os, sys, tempfile, traceback
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
pages = json.load(sys.stdin)
failed, here = {}, os.getcwd()
for page, blocks in pages.items():
    ns = {"__name__": "__main__"}
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        matplotlib.rcdefaults()
        for i, code in enumerate(blocks, 1):
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(code, f"<{page}, shown block {i}>", "exec"), ns)
            except BaseException:
                failed[page] = f"block {i}:\n{code}\n{traceback.format_exc(limit=-4)}"
                break
            finally:
                plt.close("all")
        os.chdir(here)
print(json.dumps(failed))
"""


def run_shown_code(site: Path, env: dict[str, str]) -> tuple[dict[str, str], dict[str, list[str]], int]:
    """Run the shown code of every page of a built site; the failures, the
    unnamed blocks per page and the number of blocks run."""
    pages: dict[str, list[str]] = {}
    unnamed: dict[str, list[str]] = {}
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site).as_posix()
        if rel.startswith(_CODE_ELSEWHERE):
            continue
        run, bare = shown_code(path.read_text(encoding="utf-8"))
        if run:
            pages[rel] = run
        if bare:
            unnamed[rel] = bare
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(pages),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), unnamed, sum(map(len, pages.values()))


def test_sphinx_build(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    pytest.importorskip("pydata_sphinx_theme")
    pytest.importorskip("matplotlib")
    src = tmp_path / "docs"
    shutil.copytree(
        DOCS,
        src,
        ignore=shutil.ignore_patterns("_build", "generated", "auto_examples", "sg_execution_times.rst", "__pycache__"),
    )
    out = tmp_path / "html"
    env = dict(os.environ)
    env["POSENC_DOCS_ROOT"] = str(ROOT)
    env["MPLBACKEND"] = "Agg"
    env.pop("POSENC_DOCS_INTERSPHINX", None)  # offline, as CI
    env.pop("PYTHONWARNINGS", None)
    # the performance page includes ../benchmarks/RESULTS.md, the changelog page ../CHANGELOG.md
    (tmp_path / "benchmarks").mkdir()
    shutil.copy2(ROOT / "benchmarks" / "RESULTS.md", tmp_path / "benchmarks" / "RESULTS.md")
    shutil.copy2(ROOT / "CHANGELOG.md", tmp_path / "CHANGELOG.md")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    cmd += ["-d", str(tmp_path / "doctrees"), str(src), str(out)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 0, (
        f"sphinx-build failed after {elapsed:.0f} s:\n{proc.stdout[-6000:]}\n{proc.stderr[-12000:]}"
    )
    pages = ("index.html", "theory/sinusoidal.html", "api/generated/posenc.sinusoidal.html", "auto_examples/index.html")
    for page in pages:
        assert (out / page).is_file(), page
    # the landing figure: a row of three panels, and the same stacked for a phone
    landing = (out / "index.html").read_text(encoding="utf-8")
    assert re.search(r'<img[^>]+class="[^"]*posenc-landing-wide', landing)
    assert re.search(r'<img[^>]+class="[^"]*posenc-landing-stacked', landing)
    css = (out / "_static" / "posenc.css").read_text(encoding="utf-8")
    assert re.search(r"@media \(max-width: \d+px\) \{\s*img\.posenc-landing-wide \{ display: none; \}", css)
    worked = (out / "theory" / "sinusoidal.html").read_text(encoding="utf-8")
    # the worked example's correct values, computed at build time
    assert "0.0100" in worked and "0.9998" in worked
    # the benchmark report: one HTML row per Markdown table row
    perf = (out / "performance.html").read_text(encoding="utf-8")
    report = perf.split('class="posenc-report"', 1)[1]
    rows = sum(len(t) for t in markdown_tables((ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")))
    assert report.count("<tr") == rows

    # offline: nothing is loaded from outside the site (MathJax, fonts, the gallery's tables)
    outside = {}
    for path in sorted(out.rglob("*.html")):
        found = external_assets(path.read_text(encoding="utf-8"))
        if found:
            outside[path.relative_to(out).as_posix()] = found
    for path in sorted(out.rglob("*.css")):
        found = [u for u in css_urls(path.read_text(encoding="utf-8", errors="replace")) if is_external(u)]
        if found:
            outside[path.relative_to(out).as_posix()] = found
    assert not outside, f"the built site loads from outside it: {outside}"
    assert (out / "_static" / "mathjax" / "tex-svg.js").is_file()

    # one bound: every page writes the accuracy bound as the README does, and
    # no page a rounding of it (2·10⁻⁷) or another spelling (2.5·10⁻⁷)
    spelled: dict[str, list[str]] = {}
    for path in sorted(out.rglob("*.html")):
        for spelling in bound_spellings(path.read_text(encoding="utf-8")):
            spelled.setdefault(spelling, []).append(path.relative_to(out).as_posix())
    assert set(spelled) == {docs_extension().bound_text()}, f"the accuracy bound is written as {spelled}"

    # every figure has a text alternative that describes it
    poor = {}
    for path in sorted(out.rglob("*.html")):
        found = poor_alt_texts(path.read_text(encoding="utf-8"))
        if found:
            poor[path.relative_to(out).as_posix()] = found
    assert not poor, f"figures without a describing alt text: {poor}"

    # every code block shown runs as shown (from the built pages, a fresh namespace per page)
    failed, unnamed, count = run_shown_code(out, env)
    assert count > 100, count
    assert not unnamed, f"code blocks without a language (use code-block:: python / console): {unnamed}"
    assert not failed, "shown code that does not run as shown:\n" + "\n\n".join(f"{k}: {v}" for k, v in failed.items())


def test_models_page_is_written_from_the_record():
    """docs/models.rst is make_hf_sweep.py's page of the recorded sweep
    (hf_sweep.json, which the tests read too): regenerate it with
    ``python tests/posenc/data/make_hf_sweep.py --page``."""
    spec = importlib.util.spec_from_file_location("make_hf_sweep", ROOT / "tests/posenc/data/make_hf_sweep.py")
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    recorded = json.loads((ROOT / "tests/posenc/data/hf_sweep.json").read_text(encoding="utf-8"))
    page = (DOCS / "models.rst").read_text(encoding="utf-8")
    assert page == sweep._rst(recorded), "docs/models.rst is stale: run make_hf_sweep.py --page"
    assert f"transformers {recorded['transformers']}" in page
    # grouped by family, each family a section of the page's table of contents
    assert sweep.family("qwen2_vl") == "Qwen" and sweep.family("t5gemma2") == "Gemma"
    assert sweep.family("video_llama_3") == sweep.OTHER
    assert page.count("\n.. list-table::") >= 20


def test_guides_and_examples_say_what_they_need():
    pages = [p for p in sorted((DOCS / "howto").glob("*.rst")) if p.stem != "index"]
    pages += sorted((DOCS / "examples").rglob("plot_*.py"))
    missing = [p.name for p in pages if not re.search(r"^\*Needs:\* \S", p.read_text(encoding="utf-8"), re.M)]
    assert not missing, f"no '*Needs:* ...' line in {missing}"


def test_api_reference_is_in_the_top_bar():
    """The header shows the first ``header_links_before_dropdown`` entries of
    the main toctree; the API reference is one of them."""
    conf = (DOCS / "conf.py").read_text(encoding="utf-8")
    shown = int(re.search(r'"header_links_before_dropdown": (\d+)', conf).group(1))
    index = (DOCS / "index.rst").read_text(encoding="utf-8").split(".. toctree::", 1)[1]
    entries = [ln.strip() for ln in index.splitlines()[1:] if ln.strip() and not ln.strip().startswith(":")]
    entries = [re.sub(r".*<(.+)>$", r"\1", e) for e in entries]
    assert "api/index" in entries[:shown], entries[:shown]
    assert all((DOCS / f"{e}.rst").is_file() or e == "auto_examples/index" for e in entries)


def test_one_roformer_author_list():
    """The RoFormer paper is cited with the same authors in the bibliography,
    the docstrings and CITATION.cff."""
    bib = " ".join((DOCS / "bibliography.rst").read_text(encoding="utf-8").split())
    lists = {re.search(r"\*\*\[Su2021\]\*\* (.+?)\. RoFormer", bib).group(1)}
    for path in sorted((ROOT / "posenc").glob("*.py")):
        text = " ".join(path.read_text(encoding="utf-8").split())
        lists.update(re.findall(r"\.\. \[\d+\] ([^\"]+?), \"RoFormer", text))
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    block = cff.split('title: "RoFormer', 1)[1].split("year:", 1)[0]
    names = re.findall(r"family-names: (\S+)\n\s+given-names: (\S+)", block)
    lists.add(", ".join(f"{given[0]}. {family}" for family, given in names))
    assert len(lists) == 1, lists


def test_citation_links_the_repository_only_when_known(tmp_path):
    """``CITATION.cff`` has a ``repository-code`` exactly when ``pyproject.toml``
    names the repository (``[project.urls]``), the same address (the site's
    header link and BibTeX ``url`` come from there too); without one, its
    message says how to cite without it.  No placeholder address anywhere."""
    ext = docs_extension()
    url = ext.repository_url(ROOT)
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    stated = re.findall(r'^repository-code: "?([^"\n]+)"?$', cff, re.M)
    assert stated == ([url] if url else []), (stated, url)
    assert ("no public repository address" in cff) == (url is None)
    assert not re.search(r"example\.(com|org)|<[^>]*(url|repo)[^>]*>|TODO|XXX", cff, re.I)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[project.urls]\nHomepage = "https://h.test/"\nRepository = "https://r.test/x"\n'
        '\n[tool.other]\nRepository = "no"\n',
        encoding="utf-8",
    )
    assert ext.repository_url(tmp_path) == "https://r.test/x"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    assert ext.repository_url(tmp_path) is None


def test_citation_names_this_version():
    import posenc

    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf'^version: "{re.escape(posenc.__version__)}"$', cff, re.M)
    if ".dev" not in posenc.__version__:  # a release: its date, as the changelog gives it
        date = re.search(r"^date-released: \"?(\d{4}-\d{2}-\d{2})", cff, re.M)
        assert date and f"[{posenc.__version__}] - {date.group(1)}" in (ROOT / "CHANGELOG.md").read_text()
