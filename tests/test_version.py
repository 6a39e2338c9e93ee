"""One version: written in ``posenc/__init__.py``, read by the package build.

pyproject.toml declares the version dynamic and reads ``posenc.__version__``
(``[tool.setuptools.dynamic]``), so the installed metadata, the module
attribute, the ``posenc-viz --version`` output and the citation file agree.
A failure of the metadata check after a version change means the installed
metadata is stale: reinstall (``pip install -e .``).
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest

import posenc

ROOT = Path(__file__).resolve().parents[1]


def test_installed_metadata_matches_the_module():
    assert metadata.version("posenc") == posenc.__version__


def test_version_is_pep440():
    # public version identifier of PEP 440 (epoch, release, pre, post, dev), no local part
    pattern = r"([0-9]+!)?[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?"
    assert re.fullmatch(pattern, posenc.__version__), posenc.__version__


def test_pyproject_reads_the_version_from_the_module():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"], "the version is written once, in posenc/__init__.py"
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "posenc.__version__"}


def test_version_written_once_in_the_package():
    assignments = [
        path.relative_to(ROOT).as_posix()
        for pkg in ("posenc", "posenc_viz")
        for path in sorted((ROOT / pkg).rglob("*.py"))
        if re.search(r"^__version__\s*=", path.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert assignments == ["posenc/__init__.py"]


def test_posenc_viz_reports_the_same_version(capsys):
    viz = pytest.importorskip("posenc_viz")
    assert getattr(viz, "__version__", posenc.__version__) == posenc.__version__
    from posenc_viz import cli

    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.split() == ["posenc-viz", posenc.__version__]


def test_citation_file_cites_this_version():
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    m = re.search(r'^version:\s*"?([^"\n]+)"?\s*$', text, re.MULTILINE)
    assert m, "CITATION.cff has no version"
    assert m.group(1) == posenc.__version__
