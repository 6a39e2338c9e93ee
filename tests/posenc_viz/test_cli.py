"""The ``posenc-viz`` command, run as a user would (subprocesses into tmp_path)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from posenc_viz import cli, figures

SMALL = ["--dim", "32", "--length", "16", "--head-dim", "16", "--dpi", "50"]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run(
        [sys.executable, "-m", "posenc_viz", *args], capture_output=True, text=True, cwd=cwd, timeout=300, env=env
    )


def _usage_error(res: subprocess.CompletedProcess, needle: str) -> None:
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[0].startswith("usage: posenc-viz")
    assert lines[-1].startswith("posenc-viz")
    assert needle in lines[-1]
    assert sum(1 for line in lines if "error:" in line) == 1


def test_all_then_no_overwrite_then_force(tmp_path):
    res = run("all", "--out", "figs/new", "--format", "png", *SMALL, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    names = figures.available_figures()
    expected = [f"wrote {Path('figs/new') / f'{n}.{ext}'}" for n in names for ext in ("png",)]
    assert res.stdout.splitlines() == expected  # one progress line per file
    assert res.stderr == ""
    out = tmp_path / "figs" / "new"
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{n}.png" for n in names)
    stamp = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}

    again = run("all", "--out", "figs/new", "--format", "png", *SMALL, cwd=tmp_path)
    _usage_error(again, "nothing was written; pass --force to overwrite")
    assert again.stdout == ""
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == stamp

    forced = run("wavelengths", "--out", "figs/new", "--format", "png", "--force", *SMALL, cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.splitlines() == [f"wrote {Path('figs/new') / 'wavelengths.png'}"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["all", "--dim", "7"], "argument --dim: expected an even integer"),
        (["all", "--dim", "abc"], "argument --dim"),
        (["encoding", "--length", "0"], "argument --length"),
        (["encoding", "--base", "1"], "argument --base"),
        (["encoding", "--base", "nan"], "argument --base"),
        (["encoding", "--format", "jpg"], "argument --format"),
        (["encoding", "--dpi", "5"], "argument --dpi"),
        (["encoding", "--layout", "half"], "argument --layout: invalid choice"),
        (["encoding", "--colour", "red"], "unrecognized arguments"),
        (["heatmap"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_arguments_in_process(tmp_path, capsys, args, needle):
    with pytest.raises(SystemExit) as info:
        cli.main([*args, "--out", str(tmp_path / "o")] if args else [])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines[0].startswith("usage: posenc-viz")
    assert needle in lines[-1]
    assert not (tmp_path / "o").exists()


def test_empty_out_is_refused(tmp_path, capsys, monkeypatch):
    """``--out "$UNSET"`` must not write into the current folder."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        cli.main(["wavelengths", "--out", "", *SMALL])
    assert info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --out: expected a folder name, got an empty string" in last
    assert list(tmp_path.iterdir()) == []


def test_bad_argument_subprocess_has_no_traceback(tmp_path):
    _usage_error(run("similarity", "--dim", "-4", cwd=tmp_path), "--dim")
    assert not (tmp_path / "figures").exists()


def test_output_path_is_a_file(tmp_path):
    (tmp_path / "taken").write_text("x")
    res = run("encoding", "--out", "taken", *SMALL, cwd=tmp_path)
    _usage_error(res, "exists and is not a folder")
    assert (tmp_path / "taken").read_text() == "x"


def test_unwritable_folder_in_process(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(figures.os, "access", lambda *a, **k: False)
    with pytest.raises(SystemExit) as info:
        cli.main(["wavelengths", "--out", str(tmp_path / "ro"), *SMALL])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("posenc-viz wavelengths: error: cannot write to the output folder")
    assert "permission denied" in err[-1]


def test_os_errors_are_one_line(tmp_path, capsys, monkeypatch):
    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "x.png"))

    monkeypatch.setattr(figures, "_render", fail)
    with pytest.raises(SystemExit) as info:
        cli.main(["wavelengths", "--out", str(tmp_path), *SMALL])
    assert info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.endswith("No space left on device")
    assert "x.png" in last


def test_single_figure_in_process(tmp_path, capsys):
    assert cli.main(["similarity-by-offset", "--out", str(tmp_path), "--format", "svg", *SMALL]) == 0
    assert capsys.readouterr().out.splitlines() == [f"wrote {tmp_path / 'similarity_by_offset.svg'}"]
    assert cli.main(["dimensions", "--out", str(tmp_path), "--layout", "concat", "--column", "double", *SMALL]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "dimensions.pdf",
        "dimensions.png",
        "similarity_by_offset.svg",
    ]


def test_every_command_has_help(capsys):
    parser, subs = cli._build()
    assert set(subs) == {"all", "audit", *cli.COMMANDS, *cli.TABLE_COMMANDS}
    assert {name for name, _ in cli.COMMANDS.values()} == set(figures.FIGURES)
    for cmd in subs:
        with pytest.raises(SystemExit) as info:
            cli.main([cmd, "--help"])
        assert info.value.code == 0
        text = capsys.readouterr().out
        for opt in ("--format", "--dpi", "--out", "--force", "--column"):
            assert opt in text, (cmd, opt)
        sizes = ("--dim", "--length", "--base", "--layout", "--head-dim")
        if cmd == "audit":
            assert not any(opt in text for opt in sizes) and "--hf-config" in text and "--dtype" in text
        elif cmd in cli.TABLE_COMMANDS:
            assert not any(opt in text for opt in sizes), cmd
            assert all(opt in text for opt in ("--table", "--grid", "--prefix")), cmd
        else:
            assert all(opt in text for opt in sizes), cmd
            assert ("--table" in text) == (cmd in cli.TABLE_OPTION), cmd
            assert ("--hf-config" in text) == (cmd in ("rope-scaling", "rope-axes")), cmd


def test_help_and_version_subprocess(tmp_path):
    res = run("--help", cwd=tmp_path)
    assert res.returncode == 0
    assert "posenc-viz" in res.stdout and "all" in res.stdout
    ver = run("--version", cwd=tmp_path)
    assert ver.returncode == 0 and ver.stdout.startswith("posenc-viz ")


def test_console_script_is_installed(tmp_path):
    exe = shutil.which("posenc-viz", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the posenc-viz console script is not installed next to this Python")
    res = subprocess.run([exe, "encoding", "--help"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 0
    assert "--force" in res.stdout
