"""The documentation: every public name has an API page, and the site builds.

``test_sphinx_build`` runs the same build as ``make docs`` (``-W
--keep-going``: every warning fails) on a copy of ``docs/`` (and of the
benchmark report it includes) in a temporary folder, so that the test leaves
the source tree untouched.  It executes the
gallery examples and the build-time code of the theory pages.
"""

from __future__ import annotations

import importlib
import inspect
import io
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

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
    examples = sorted((DOCS / "examples").glob("plot_*.py"))
    assert examples, "docs/examples has no plot_*.py"
    assert (DOCS / "examples" / "README.rst").is_file()
    for path in examples:
        text = path.read_text(encoding="utf-8")
        m = re.match(r'"""\n(.+)\n(=+)\n', text)
        assert m and len(m.group(2)) >= len(m.group(1)), f"{path.name}: needs a docstring with an rst title"


def test_every_figure_has_a_gallery_example():
    viz = pytest.importorskip("posenc_viz")
    figures = [n for n in viz.__all__ if n.startswith("plot_") or n in ("paper_style", "figure_set")]
    text = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "examples").glob("plot_*.py"))
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
    bound = f"{posenc_docs.ACCURACY_BOUND:.1e}".replace("e-07", "e-7")
    assert f"within {bound} of the exact values" in readme
    assert f"integer position |p| < 2^{posenc_docs.ACCURACY_RANGE_LOG2}" in readme
    assert f"real one |p| < 2^{posenc_docs.ACCURACY_FLOAT_LOG2}" in readme
    assert f"|p| >= 2^{posenc_docs.NAN_LOG2} give NaN rows" in readme


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
    # the performance page includes ../benchmarks/RESULTS.md
    (tmp_path / "benchmarks").mkdir()
    shutil.copy2(ROOT / "benchmarks" / "RESULTS.md", tmp_path / "benchmarks" / "RESULTS.md")
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
    worked = (out / "theory" / "sinusoidal.html").read_text(encoding="utf-8")
    # the worked example's correct values, computed at build time
    assert "0.0100" in worked and "0.9998" in worked
    # the benchmark report: one HTML row per Markdown table row
    perf = (out / "performance.html").read_text(encoding="utf-8")
    report = perf.split('class="posenc-report"', 1)[1]
    rows = sum(len(t) for t in markdown_tables((ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")))
    assert report.count("<tr") == rows
