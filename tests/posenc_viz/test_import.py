"""``import posenc_viz`` is cheap; without matplotlib the error says what to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import posenc_viz

BLOCK_MPL = textwrap.dedent(
    """
    import sys

    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name == "matplotlib" or name.startswith("matplotlib."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _Block())
    """
)


def _run(code: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_import_does_not_load_matplotlib():
    out = _run(
        "import sys, posenc_viz; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'torch', 'jax', 'dask')))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_missing_matplotlib_error_names_the_extra():
    code = BLOCK_MPL + textwrap.dedent(
        """
        import posenc, posenc_viz                      # importing works without matplotlib
        try:
            posenc_viz.plot_encoding(posenc.sinusoidal(4, 8))
        except ImportError as exc:
            print("ImportError:", exc)
        try:
            with posenc_viz.paper_style():
                pass
        except ImportError as exc:
            print("ImportError:", exc)
        """
    )
    out = _run(code)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("ImportError:")
        assert 'pip install "posenc[viz]"' in line


def test_cli_without_matplotlib_exits_cleanly(tmp_path):
    code = BLOCK_MPL + "from posenc_viz.cli import main; sys.exit(main(['wavelengths', '--out', 'out']))"
    out = _run(code, cwd=tmp_path)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert 'pip install "posenc[viz]"' in out.stderr
    assert out.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()  # nothing created


def test_public_names():
    for name in posenc_viz.__all__:
        assert hasattr(posenc_viz, name), name
    assert set(posenc_viz.__all__) >= {
        "plot_encoding",
        "plot_wavelengths",
        "plot_dimensions",
        "plot_similarity",
        "plot_similarity_by_offset",
        "plot_rope_scaling",
        "plot_bias",
        "paper_style",
        "figure_set",
        "to_numpy",
    }
