"""figure_set writes the standard set, never overwrites, never leaves partial files."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from matplotlib.image import imread

import posenc_viz
from posenc_viz import figures

SMALL = {"dim": 32, "length": 16, "head_dim": 16, "dpi": 50}


def _listing(path):
    return sorted(p.name for p in path.iterdir())


def test_whole_set_png(tmp_path):
    seen = []
    written = posenc_viz.figure_set(tmp_path / "a" / "b", formats=["png"], progress=seen.append, **SMALL)
    out = tmp_path / "a" / "b"  # created with its parents
    names = figures.available_figures()
    assert {"encoding", "wavelengths", "dimensions", "similarity", "similarity_by_offset", "rope_decay"} <= set(names)
    assert [p.name for p in written] == [f"{n}.png" for n in names]
    assert seen == written
    assert _listing(out) == sorted(f"{n}.png" for n in names)  # no temporary files left
    for p in written:
        img = imread(p)
        assert img.ndim == 3 and img.shape[0] > 50 and img.shape[1] > 100
        assert img[..., :3].std() > 0.05  # not blank


@pytest.mark.parametrize(("column", "width_px"), [("single", 165), ("double", 350)])
def test_exact_column_width(tmp_path, column, width_px):
    (p,) = posenc_viz.figure_set(tmp_path, names="wavelengths", formats="png", column=column, **SMALL)
    assert imread(p).shape[1] == width_px  # 3.3 in and 7 in at 50 dpi: no tight cropping


def test_pdf_embeds_truetype_fonts(tmp_path):
    (p,) = posenc_viz.figure_set(tmp_path, names=["wavelengths"], formats=["pdf"], **SMALL)
    data = p.read_bytes()
    assert data.startswith(b"%PDF")
    assert b"/FontFile2" in data  # TrueType (fonttype 42)
    assert b"/Subtype /Type3" not in data
    assert b"CreationDate" not in data  # reproducible


def test_svg(tmp_path):
    (p,) = posenc_viz.figure_set(tmp_path, names="similarity", formats=["svg"], **SMALL)
    assert p.read_text().lstrip().startswith("<?xml")


def test_never_overwrites_without_force(tmp_path):
    kw = dict(names=["encoding", "wavelengths"], formats=["png"], **SMALL)
    first = posenc_viz.figure_set(tmp_path, **kw)
    (tmp_path / "wavelengths.png").write_bytes(b"mine")
    before = {p.name: p.read_bytes() for p in first}
    with pytest.raises(figures.OutputExistsError, match=r"2 of the files exist .*force=True") as info:
        posenc_viz.figure_set(tmp_path, **kw)
    assert [p.name for p in info.value.paths] == ["encoding.png", "wavelengths.png"]
    assert {p.name: p.read_bytes() for p in first} == before
    # one missing file is not written either: the check comes before any drawing
    (tmp_path / "encoding.png").unlink()
    with pytest.raises(FileExistsError, match="1 of the files exist"):
        posenc_viz.figure_set(tmp_path, **kw)
    assert not (tmp_path / "encoding.png").exists()
    posenc_viz.figure_set(tmp_path, force=True, **kw)
    assert (tmp_path / "wavelengths.png").read_bytes().startswith(b"\x89PNG")


def test_output_folder_errors(tmp_path, monkeypatch):
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(NotADirectoryError, match="exists and is not a folder"):
        posenc_viz.figure_set(f, names="wavelengths", **SMALL)
    with pytest.raises(NotADirectoryError, match="a parent is not a folder"):
        posenc_viz.figure_set(f / "sub", names="wavelengths", **SMALL)
    (tmp_path / "d" / "wavelengths.png").mkdir(parents=True)
    with pytest.raises(IsADirectoryError, match="a folder of that name exists"):
        posenc_viz.figure_set(tmp_path / "d", names="wavelengths", formats="png", force=True, **SMALL)
    monkeypatch.setattr(figures.os, "access", lambda *a, **k: False)
    with pytest.raises(PermissionError, match="permission denied"):
        posenc_viz.figure_set(tmp_path / "e", names="wavelengths", **SMALL)


def test_failure_leaves_no_partial_file(tmp_path, monkeypatch):
    def broken(fig, p):
        fig.subplots().plot([0, 1])
        raise RuntimeError("drawing failed")

    spec = figures._SPECS["wavelengths"]
    monkeypatch.setitem(figures._SPECS, "wavelengths", figures._Spec(broken, spec.column, spec.aspect))
    with pytest.raises(RuntimeError, match="drawing failed"):
        posenc_viz.figure_set(tmp_path, names=["encoding", "wavelengths"], formats=["png"], **SMALL)
    assert _listing(tmp_path) == ["encoding.png"]

    from matplotlib.figure import Figure

    def failing_save(self, *args, **kwargs):
        args[0].write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", failing_save)
    with pytest.raises(OSError, match="No space left"):
        posenc_viz.figure_set(tmp_path, names=["similarity"], formats=["png"], **SMALL)
    assert _listing(tmp_path) == ["encoding.png"]  # the temporary file is gone


def test_layout_and_dimensions_follow_the_table(tmp_path):
    cols = figures._clock_columns(figures.Params(512, 100, 10000.0, "interleaved", 128))
    assert [c for c, _ in cols] == [0, 64, 128, 192]
    lam = [w for _, w in cols]
    assert lam[0] == pytest.approx(2 * np.pi)
    concat = figures._clock_columns(figures.Params(512, 100, 10000.0, "concat", 128))
    assert [c for c, _ in concat] == [c // 2 for c, _ in cols]


@pytest.mark.parametrize(
    ("kwargs", "kind", "match"),
    [
        ({"dim": 7}, ValueError, "`dim` must be a positive even integer"),
        ({"dim": 0}, ValueError, r"`dim` must be an integer in \[2, 16384\]"),
        ({"dim": 2.0}, TypeError, "`dim` must be an integer"),
        ({"length": 5000}, ValueError, r"`length` must be an integer in \[1, 4096\]"),
        ({"head_dim": 9}, ValueError, "`head_dim` must be a positive even integer"),
        ({"base": 1.0}, ValueError, r"`base` must be a finite number in \(1, 1e12\]"),
        ({"base": "1e4"}, TypeError, "`base` must be a real number"),
        ({"layout": "half"}, ValueError, "`layout` must be 'interleaved' or 'concat'"),
        ({"formats": ["jpg"]}, ValueError, "`formats` must contain only pdf, png, svg"),
        ({"formats": []}, ValueError, "`formats` must name at least one format"),
        ({"dpi": 10}, ValueError, r"`dpi` must be an integer in \[50, 1200\]"),
        ({"column": "wide"}, ValueError, "`column` must be 'single', 'double' or None"),
        ({"column": 1}, TypeError, "`column` must be 'single', 'double' or None, got 1"),
        ({"formats": np.array(3)}, TypeError, "`formats` must be a sequence of pdf, png, svg, got a 0-d array"),
        ({"formats": b"png"}, TypeError, "`formats` must be a sequence"),
        ({"formats": 3}, TypeError, "`formats` must be a sequence"),
        ({"formats": {"png": 1}}, TypeError, "`formats` must be a sequence"),
        ({"formats": ["png", 3]}, TypeError, "`formats` must contain only pdf, png, svg, got 3"),
        ({"names": np.array(3)}, TypeError, "`names` must be a figure name or a sequence of them, got a 0-d array"),
        ({"names": [None]}, TypeError, "`names` must be figure names"),
        ({"names": ["heatmap"]}, ValueError, "`names` must be figure names"),
        ({"names": []}, ValueError, "`names` must name at least one figure"),
        ({"force": "yes"}, TypeError, "`force` must be a bool"),
        ({"progress": 1}, TypeError, "`progress` must be callable"),
        ({"progress": np.int64}, TypeError, "`progress` must be a function called with each path, got <class"),
        ({"progress": lambda: None}, TypeError, r"`progress` must accept one argument \(the path written\)"),
        ({"progress": lambda a, b: None}, TypeError, "`progress` must accept one argument"),
    ],
)
def test_bad_arguments_write_nothing(tmp_path, kwargs, kind, match):
    out = tmp_path / "out"
    with pytest.raises(kind, match=match):
        posenc_viz.figure_set(out, **kwargs)
    assert not out.exists()


def test_empty_out_dir_is_not_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="`out_dir` must not be empty"):
        posenc_viz.figure_set("", names="wavelengths", formats="svg")
    assert list(tmp_path.iterdir()) == []


def test_formats_and_names_from_arrays_and_generators(tmp_path):
    files = posenc_viz.figure_set(
        tmp_path, dim=16, length=8, dpi=50, names=(n for n in ["wavelengths"]), formats=np.array(["svg"])
    )
    assert [f.name for f in files] == ["wavelengths.svg"]


def test_progress_callables(tmp_path):
    seen = []
    kwargs = {"dim": 16, "length": 8, "dpi": 50, "formats": "svg", "names": "wavelengths"}
    posenc_viz.figure_set(tmp_path / "a", progress=seen.append, **kwargs)  # a bound builtin
    posenc_viz.figure_set(tmp_path / "b", progress=lambda *paths: seen.extend(paths), **kwargs)
    posenc_viz.figure_set(tmp_path / "c", progress=print, **kwargs)  # a builtin with *args
    assert [p.parent.name for p in seen] == ["a", "b"]


def test_bad_out_dir_type():
    with pytest.raises(TypeError, match="`out_dir` must be a path"):
        posenc_viz.figure_set(3, names="wavelengths")


def test_figures_constant():
    assert tuple(figures._SPECS) == posenc_viz.FIGURES
    assert all(re.fullmatch(r"[a-z0-9_]+", n) for n in posenc_viz.FIGURES)
    assert os.sep not in "".join(posenc_viz.FIGURES)
