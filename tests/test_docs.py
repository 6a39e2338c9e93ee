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
    pages += sorted((DOCS / "examples").glob("plot_*.py"))
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


def test_citation_names_this_version():
    import posenc

    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf'^version: "{re.escape(posenc.__version__)}"$', cff, re.M)
    if ".dev" not in posenc.__version__:  # a release: its date, as the changelog gives it
        date = re.search(r"^date-released: \"?(\d{4}-\d{2}-\d{2})", cff, re.M)
        assert date and f"[{posenc.__version__}] - {date.group(1)}" in (ROOT / "CHANGELOG.md").read_text()
