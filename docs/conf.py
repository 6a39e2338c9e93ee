"""Sphinx configuration of the posenc documentation.

Build with ``make docs`` (``python -m sphinx -W --keep-going -b html docs
docs/_build/html``).  The build runs offline: the theory pages compute their
numbers with posenc (the ``posenc-exec`` directive of ``_ext/posenc_docs.py``),
matplotlib's ``plot`` directive draws their figures, and sphinx-gallery runs
``examples/plot_*.py``, all with the Agg backend.

Cross-links to other projects (intersphinx) read the inventories committed
under ``docs/_intersphinx/`` (``<name>.inv``, written by
``docs/_intersphinx/make_inventories.py`` with the names the pages link), so
the build needs no network; ``POSENC_DOCS_INTERSPHINX=1`` downloads the
projects' full inventories instead.

The built site reads offline too: no page loads a script, style sheet or font
from elsewhere (``tests/test_docs.py`` checks every built page).  MathJax comes
from the copy that the ``sphinx-mathjax-offline`` package (the ``docs`` extra)
ships, copied into ``_static/mathjax``; without it the build fails rather than
point the pages at a CDN.  sphinx-gallery's table of execution times, which
loads its scripts from CDNs, is not written.  The search shows excerpts from
``file://`` pages (``_static/posenc_search.js``).

Every code block a page shows runs as shown: the build runs the shown blocks
of a page, top to bottom, in a namespace of their own (hidden blocks read it
but add nothing to it), and each ``.. plot::`` block with its own imports
(``plot_pre_code`` is empty); ``tests/test_docs.py`` runs them again from the
built pages.
The accuracy numbers quoted across the pages (``|accuracy|``, ``|naive-1e6|``,
...) are measured when the site is built (``posenc_docs.accuracy_prolog``).
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
ROOT = Path(os.environ.get("POSENC_DOCS_ROOT", HERE.parent)).resolve()
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(ROOT))  # document the packages of this tree, whatever is installed

import posenc  # noqa: E402
import posenc_docs  # noqa: E402

# -- project -----------------------------------------------------------------
project = "posenc"
author = "The posenc developers"
copyright = "The posenc developers, BSD-3-Clause"  # noqa: A001
release = posenc.__version__
version = release.split(".dev")[0]

# -- general -----------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "matplotlib.sphinxext.plot_directive",
    # Markdown: the benchmark report (benchmarks/RESULTS.md) on the performance page, the changelog
    "myst_parser",
    "sphinx_copybutton",
    "posenc_docs",
]
templates_path = ["_templates"]
exclude_patterns = ["_build", "examples", "_intersphinx", "**.ipynb_checkpoints", "sg_execution_times.rst"]
default_role = "autolink"
pygments_style = "sphinx"
posenc_repo_root = str(ROOT)
# the one accuracy statement and the one-liner's errors, measured now
rst_prolog = posenc_docs.accuracy_prolog()

# -- autodoc / autosummary / numpydoc ------------------------------------------
# the API pages by name, so that a page added since the last build gets its
# stubs in an incremental build too
autosummary_generate = sorted(p.relative_to(HERE).as_posix() for p in (HERE / "api").glob("*.rst"))
autosummary_generate_overwrite = True
# the types are those of the numpydoc "Parameters" sections; the annotations
# (arrays are ``Array``, an alias of ``Any`` in posenc._compat) stay out of the
# signatures, where Sphinx would print ``Any`` or, through
# ``autodoc_type_aliases``, a ``TypeAliasForwardRef`` inside unions
autodoc_typehints = "none"
autodoc_default_options = {"member-order": "bysource"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True
# "See also" links of each API page (rendered by _templates/autosummary)
autosummary_context = {"see_also": posenc_docs.SEE_ALSO}

# -- intersphinx (offline unless asked for, see the module docstring) ----------
_INVENTORIES = {
    "python": "https://docs.python.org/3/",
    "numpy": "https://numpy.org/doc/stable/",
    "array-api": "https://data-apis.org/array-api/latest/",
    "torch": "https://docs.pytorch.org/docs/stable/",
    "jax": "https://docs.jax.dev/en/latest/",
    "dask": "https://docs.dask.org/en/stable/",
    "matplotlib": "https://matplotlib.org/stable/",
}
_ONLINE = os.environ.get("POSENC_DOCS_INTERSPHINX", "") == "1"
intersphinx_mapping: dict[str, tuple[str, object]] = {}
for _name, _url in _INVENTORIES.items():
    _local = HERE / "_intersphinx" / f"{_name}.inv"
    if _local.is_file():
        intersphinx_mapping[_name] = (_url, str(_local))
    elif _ONLINE:
        intersphinx_mapping[_name] = (_url, None)
intersphinx_timeout = 10

# -- sphinx-gallery --------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    # one section per folder of examples/ (each with its README.rst), in this order
    "subsection_order": [
        "examples/sequences",
        "examples/rope",
        "examples/biases",
        "examples/papers",
        "examples/backends",
        "*",
    ],
    "within_subsection_order": "posenc_docs.GalleryOrder",
    "download_all_examples": False,
    "remove_config_comments": True,
    "doc_module": ("posenc", "posenc_viz"),
    "backreferences_dir": "api/generated/backreferences",
    "reference_url": {"posenc": None, "posenc_viz": None},
    # matplotlib's scraper, with alt texts that describe each figure
    "image_scrapers": (posenc_docs.GalleryScraper(),),
    # examples print what they mean to show; the value of a last expression
    # (an Axes, a Line2D) is not output
    "capture_repr": (),
    "min_reported_time": 2,
    # the execution-time page loads jQuery and DataTables from CDNs: not written
    "write_computation_times": False,
    "show_memory": False,
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
}

# Examples and plots print no warnings into the pages.
warnings.filterwarnings("ignore", category=UserWarning, message="Matplotlib is currently using agg")

# -- matplotlib plot directive (figures of the theory pages) ----------------------
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]
# every plot block shows its own imports (a reader copies it as it is)
plot_pre_code = ""
plot_rcparams = {"figure.figsize": (6.4, 3.2), "figure.constrained_layout.use": True, "font.size": 10}
plot_apply_rcparams = True

# -- math -------------------------------------------------------------------------
# MathJax 3 from the local copy of sphinx-mathjax-offline (TeX to SVG: no web
# fonts, works from file://); POSENC_DOCS_MATHJAX points the pages at another
# copy.  Without either the build stops: Sphinx's default would load MathJax
# from a CDN, and the site would show raw TeX offline.
_mathjax = posenc_docs.local_mathjax()
posenc_mathjax_dir = str(_mathjax) if _mathjax else ""
if os.environ.get("POSENC_DOCS_MATHJAX"):
    mathjax_path = os.environ["POSENC_DOCS_MATHJAX"]
    posenc_mathjax_dir = ""
elif _mathjax:
    mathjax_path = "mathjax/tex-svg.js"
else:
    raise RuntimeError(
        "no local MathJax: install the docs extra (pip install -e '.[docs]', which has "
        "sphinx-mathjax-offline), or set POSENC_DOCS_MATHJAX to the address of a MathJax 3 copy"
    )

# -- copy button ------------------------------------------------------------------
# on the code, not on what it printed; the prompts of doctest and shell blocks
# are left out of the copy
copybutton_selector = "div:not(.posenc-exec-output) > div.highlight pre"
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True

# -- HTML ---------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"posenc {version}"
html_static_path = ["_static"]
html_css_files = ["posenc.css"]
html_js_files = ["posenc_search.js"]
html_theme_options = {
    "logo": {"text": "posenc"},
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # the first seven entries of the toctree of index.rst (up to the API reference), then "More"
    "header_links_before_dropdown": 7,
    # the page's contents on the right; the comparison's eight columns take the whole width
    "secondary_sidebar_items": {"**": ["page-toc"], "comparison": []},
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
# the repository's address in the header, once pyproject.toml states one
# ([project.urls] "Repository"); until then the header has no such link, and
# the citing page says how to cite without one
repository = posenc_docs.repository_url(ROOT)
if repository:
    html_theme_options["icon_links"] = [
        {"name": "Source repository", "url": repository, "icon": "fa-solid fa-code-branch", "type": "fontawesome"}
    ]
# single pages: no section navigation, more room for code and tables
html_sidebars = {
    page: []
    for page in (
        "index",
        "install",
        "getting_started",
        "which_function",
        "conventions",
        "models",
        "migration",
        "faq",
        "backends",
        "cli",
        "performance",
        "comparison",
        "changelog",
        "bibliography",
        "citing",
    )
}
html_show_sourcelink = False
html_copy_source = False
