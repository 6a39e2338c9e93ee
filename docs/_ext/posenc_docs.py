"""Sphinx directives of the posenc documentation.

``posenc-exec``
    Runs Python code at build time and shows the code and what it printed, or
    inserts what it printed as reStructuredText (``:output: rst``), so that
    the numbers on the theory pages are computed by the library itself every
    time the site is built.  Blocks of one page share a namespace, top to
    bottom.  An exception fails the build (it is reported as an error, and
    ``-W`` turns every problem into a failure)::

        .. posenc-exec::

           import posenc
           print(posenc.sinusoidal(6, 4).round(4))

    Options: ``:output: literal | rst | none`` (default ``literal``),
    ``:hide-code:`` (run without showing the source).

``posenc-markdown``
    Includes a Markdown file (GitHub tables, fenced code, lists, headings
    turned into rubrics) as document nodes, without a Markdown parser
    extension for Sphinx.  The path is relative to the repository root; a
    missing file shows the ``:missing:`` text instead::

        .. posenc-markdown:: benchmarks/RESULTS.md
           :missing: No results yet: run ``make bench``.
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

__all__ = ["setup", "markdown_to_nodes", "rst_table", "GalleryOrder"]

#: one namespace per document, created when the document is read
_NAMESPACES: dict[str, dict[str, Any]] = {}


def rst_table(
    rows: list[list[Any]],
    header: list[str],
    *,
    fmt: str = "{:.4f}",
    title: str = "",
    widths: str = "auto",
) -> str:
    """An rst ``list-table`` of numbers (``fmt`` for floats), for ``:output: rst`` blocks."""
    lines = [f".. list-table:: {title}".rstrip(), "   :header-rows: 1", f"   :widths: {widths}", "   :class: posenc-numbers", ""]

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

    for i, r in enumerate([header, *rows]):
        for j, v in enumerate(r):
            lines.append(("   * - " if j == 0 else "     - ") + cell(v))
    return "\n".join(lines) + "\n"


#: order of the gallery: the figures of posenc_viz, then the backends
GALLERY_ORDER = (
    "plot_encoding.py",
    "plot_wavelengths.py",
    "plot_dimensions.py",
    "plot_similarity.py",
    "plot_similarity_by_offset.py",
    "plot_rope_scaling.py",
    "plot_bias.py",
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


def _output_choice(arg: str | None) -> str:
    return directives.choice(arg, ("literal", "rst", "none"))


class PosencExec(SphinxDirective):
    """Run Python code at build time; show it and its output."""

    has_content = True
    option_spec = {"output": _output_choice, "hide-code": directives.flag}

    def run(self) -> list[nodes.Node]:
        import numpy as np

        code = "\n".join(self.content)
        docname = self.env.docname
        ns = _NAMESPACES.setdefault(
            docname, {"__name__": f"posenc_docs_{docname.replace('/', '_')}", "rst_table": rst_table}
        )
        buf = io.StringIO()
        filename = f"<{docname}.rst, line {self.lineno}>"
        try:
            with contextlib.redirect_stdout(buf), np.printoptions(legacy=False):
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


# --------------------------------------------------------------------------
# Markdown (the subset the benchmark report uses) to docutils nodes
# --------------------------------------------------------------------------
_LEXERS = {"python", "py", "bash", "sh", "console", "json", "text", "none", "pycon", "toml", "ini"}


def _inline(children: list[Any]) -> list[nodes.Node]:
    """markdown-it inline tokens to docutils inline nodes."""
    out: list[nodes.Node] = []
    stack: list[nodes.Element] = []

    def add(node: nodes.Node) -> None:
        if stack:
            stack[-1].append(node)
        else:
            out.append(node)

    for tok in children:
        t = tok.type
        if t == "text":
            add(nodes.Text(tok.content))
        elif t == "code_inline":
            add(nodes.literal(tok.content, tok.content))
        elif t in ("softbreak",):
            add(nodes.Text(" "))
        elif t == "hardbreak":
            add(nodes.Text("\n"))
        elif t in ("strong_open", "em_open", "s_open", "link_open"):
            if t == "strong_open":
                node: nodes.Element = nodes.strong()
            elif t == "em_open":
                node = nodes.emphasis()
            elif t == "s_open":
                node = nodes.inline(classes=["strike"])
            else:
                href = tok.attrs.get("href", "")
                node = nodes.reference("", "", refuri=href, internal=False)
            stack.append(node)
        elif t in ("strong_close", "em_close", "s_close", "link_close"):
            node = stack.pop()
            add(node)
        elif t == "image":
            alt = tok.content or tok.attrs.get("alt", "")
            add(nodes.emphasis(alt, alt))
        elif t in ("html_inline",):
            continue
        else:  # anything else: its text
            if tok.content:
                add(nodes.Text(tok.content))
    while stack:  # unbalanced markup: keep the text
        node = stack.pop()
        add(node)
    return out


def markdown_to_nodes(text: str) -> list[nodes.Node]:
    """Convert Markdown to a list of docutils block nodes.

    Headings become rubrics (so the included file cannot disturb the page's
    section structure); GitHub pipe tables become tables; fenced code
    becomes literal blocks; raw HTML is dropped.
    """
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
    tokens = md.parse(text)
    root = nodes.container()
    stack: list[nodes.Element] = [root]
    table_rows: list[list[list[nodes.Node]]] = []
    header_rows = 0
    row: list[list[nodes.Node]] | None = None
    in_head = False
    for tok in tokens:
        t = tok.type
        parent = stack[-1]
        if t == "heading_open":
            stack.append(nodes.rubric())
        elif t == "heading_close":
            node = stack.pop()
            stack[-1].append(node)
        elif t == "paragraph_open":
            if not tok.hidden:
                stack.append(nodes.paragraph())
        elif t == "paragraph_close":
            if not tok.hidden:
                node = stack.pop()
                stack[-1].append(node)
        elif t == "inline":
            if row is not None:
                row.append(_inline(tok.children or []))
            elif isinstance(parent, (nodes.paragraph, nodes.rubric)):
                parent.extend(_inline(tok.children or []))
            else:  # tight list item: no paragraph token
                p = nodes.paragraph()
                p.extend(_inline(tok.children or []))
                parent.append(p)
        elif t == "bullet_list_open":
            stack.append(nodes.bullet_list(bullet="-"))
        elif t == "ordered_list_open":
            stack.append(nodes.enumerated_list(enumtype="arabic", prefix="", suffix="."))
        elif t in ("bullet_list_close", "ordered_list_close", "list_item_close", "blockquote_close"):
            node = stack.pop()
            stack[-1].append(node)
        elif t == "list_item_open":
            stack.append(nodes.list_item())
        elif t == "blockquote_open":
            stack.append(nodes.block_quote())
        elif t in ("fence", "code_block"):
            lang = (tok.info or "").strip().split(" ")[0].lower()
            code = tok.content.rstrip("\n")
            block = nodes.literal_block(code, code, language=lang if lang in _LEXERS else "none")
            parent.append(block)
        elif t == "hr":
            parent.append(nodes.transition())
        elif t == "table_open":
            table_rows, header_rows = [], 0
        elif t == "thead_open":
            in_head = True
        elif t == "thead_close":
            in_head = False
        elif t == "tr_open":
            row = []
        elif t == "tr_close":
            table_rows.append(row or [])
            if in_head:
                header_rows += 1
            row = None
        elif t == "table_close":
            parent.append(_table(table_rows, header_rows))
        # th/td open/close, html_block: nothing to do
    return list(root.children)


def _table(rows: list[list[list[nodes.Node]]], header_rows: int) -> nodes.table:
    ncols = max((len(r) for r in rows), default=1)
    table = nodes.table(classes=["posenc-md-table"])
    group = nodes.tgroup(cols=ncols)
    table += group
    for _ in range(ncols):
        group += nodes.colspec(colwidth=1)

    def make(r: list[list[nodes.Node]]) -> nodes.row:
        rnode = nodes.row()
        for j in range(ncols):
            entry = nodes.entry()
            para = nodes.paragraph()
            if j < len(r):
                para.extend(r[j])
            entry += para
            rnode += entry
        return rnode

    if header_rows:
        head = nodes.thead()
        for r in rows[:header_rows]:
            head += make(r)
        group += head
    body = nodes.tbody()
    for r in rows[header_rows:]:
        body += make(r)
    if not len(body):
        body += make([])
    group += body
    return table


class PosencMarkdown(SphinxDirective):
    """Include a Markdown file of the repository as document nodes."""

    required_arguments = 1
    has_content = False
    option_spec = {"missing": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        root = Path(self.config.posenc_repo_root or Path(self.env.srcdir).parent)
        path = (root / self.arguments[0]).resolve()
        if not path.is_file():
            text = self.options.get("missing", f"``{self.arguments[0]}`` is not there yet.")
            para = nodes.container(classes=["posenc-missing"])
            self.state.nested_parse(StringList([text], source=str(path)), self.content_offset, para)
            return list(para.children)
        self.env.note_dependency(str(path))
        try:
            return markdown_to_nodes(path.read_text(encoding="utf-8"))
        except Exception as exc:  # pragma: no cover - keep the page, show the file
            text = path.read_text(encoding="utf-8")
            self.state.document.reporter.info(f"posenc-markdown: shown verbatim ({exc})")
            return [nodes.literal_block(text, text, language="none")]


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
            lines[:] = [line for line in docs[("", attr)]]
            return
    type_doc = inspect.getdoc(type(obj)) or ""
    if type_doc and "\n".join(lines).strip() == type_doc.strip():
        lines[:] = []


def _reset_namespace(app: Any, docname: str, source: list[str]) -> None:
    _NAMESPACES.pop(docname, None)


def _forget(app: Any, env: Any, docname: str) -> None:
    _NAMESPACES.pop(docname, None)


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("posenc_repo_root", "", "env")
    app.add_directive("posenc-exec", PosencExec)
    app.add_directive("posenc-markdown", PosencMarkdown)
    app.connect("source-read", _reset_namespace)
    app.connect("env-purge-doc", _forget)
    app.connect("autodoc-process-docstring", _data_docstring)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
