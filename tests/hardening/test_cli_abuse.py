"""``posenc-viz`` under abuse, run as a user would (``python -m posenc_viz``).

Every bad invocation: exit status 2, an argparse usage plus exactly one
error line naming the problem, no traceback, nothing on stdout and nothing
written (no figure, no temporary file, no folder).  Complements
``tests/posenc_viz/test_cli.py`` (the documented behaviour) with hostile
values, uncreatable and unusable output folders, partial collisions with
existing files and an interrupt in the middle of a run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ._fuzz import COUNTS

pytest.importorskip("matplotlib")

SMALL = ("--dim", "16", "--length", "8", "--head-dim", "8", "--dpi", "50")


def run(*args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, "-m", "posenc_viz", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env
    )


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def assert_usage_error(res: subprocess.CompletedProcess, *needles: str, max_len: int = 400) -> None:
    err = res.stderr
    assert res.returncode == 2, f"exit {res.returncode}: {err[-500:]}"
    assert "Traceback" not in err, err
    assert res.stdout == "", f"stdout: {res.stdout!r}"
    lines = err.strip().splitlines()
    assert lines and lines[0].startswith("usage: posenc-viz"), err
    errors = [ln for ln in lines if ": error: " in ln]
    assert len(errors) == 1 and errors[0] == lines[-1], f"expected one error line, last: {err!r}"
    assert len(lines[-1]) < max_len, f"error line too long: {lines[-1]!r}"
    for needle in needles:
        assert needle in lines[-1], f"{needle!r} not in {lines[-1]!r}"
    COUNTS["cli-abuse"] += 1


BAD = [
    (("wavelengths", "--dim", "0"), "--dim"),
    (("wavelengths", "--dim", "-4"), "--dim"),
    (("wavelengths", "--dim", "7"), "--dim"),
    (("wavelengths", "--dim", "1e3"), "--dim"),
    (("wavelengths", "--dim", "nan"), "--dim"),
    (("wavelengths", "--dim", "9" * 40), "--dim"),
    (("wavelengths", "--length", "-1"), "--length"),
    (("wavelengths", "--length", "4097"), "--length"),
    (("wavelengths", "--base", "nan"), "--base"),
    (("wavelengths", "--base", "-inf"), "--base"),
    (("wavelengths", "--base", "1"), "--base"),
    (("wavelengths", "--dpi", "0"), "--dpi"),
    (("wavelengths", "--dpi", "1e9"), "--dpi"),
    (("wavelengths", "--layout", "spiral"), "--layout"),
    (("wavelengths", "--column", "triple"), "--column"),
    (("wavelengths", "--format", "bmp"), "--format"),
    (("wavelengths", "--format", "png,bmp"), "--format"),
    (("wavelengths", "--format", ""), "--format"),
    (("wavelengths", "--format", ",,,"), "--format"),
    (("wavelengths", "--dim"), "--dim"),
    (("wavelengths", "--bogus"), "--bogus"),
    (("wavelengths", "extra-positional"), "extra-positional"),
    (("bogus",), "bogus"),
    ((), "COMMAND"),
]


@pytest.mark.parametrize("args,needle", BAD, ids=[" ".join(a) or "<none>" for a, _ in BAD])
def test_bad_arguments(tmp_path, args, needle):
    # "--out out" after the bad argument, except where it would change its meaning
    plain = not args or args[0] == "bogus" or args[-1] == "--dim"
    res = run(*args, cwd=tmp_path) if plain else run(*args, "--out", "out", cwd=tmp_path)
    assert_usage_error(res, needle)
    assert tree(tmp_path) == [], f"files written: {tree(tmp_path)}"


@pytest.mark.parametrize(
    "out,needle",
    [
        ("/proc/posenc-hardening/figures", "/proc/posenc-hardening"),  # cannot be created, even by root
        ("{tmp}/file.txt/sub", "file.txt"),  # a parent is a file
        ("{tmp}/file.txt", "file.txt"),  # the output folder is a file
        ("/dev/null", "/dev/null"),
        ("{tmp}/" + "x" * 300, "x" * 20),  # name too long for the file system
    ],
    ids=["uncreatable", "under-a-file", "is-a-file", "device", "name-too-long"],
)
def test_unusable_output_folders(tmp_path, out, needle):
    (tmp_path / "file.txt").write_text("keep")
    out = out.format(tmp=tmp_path)
    res = run("wavelengths", "--out", out, "--format", "svg", *SMALL, cwd=tmp_path)
    assert_usage_error(res, needle, max_len=400 + len(out))
    assert tree(tmp_path) == ["file.txt"]
    assert (tmp_path / "file.txt").read_text() == "keep"


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root writes to read-only folders")
def test_read_only_folder(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        res = run("wavelengths", "--out", str(ro), "--format", "svg", *SMALL, cwd=tmp_path)
        assert_usage_error(res, "ro")
        assert tree(ro) == []
    finally:
        ro.chmod(0o755)


def test_existing_file_in_the_set_blocks_the_whole_set(tmp_path):
    """One existing target without --force: exit 2 naming it, nothing else written,
    the existing file untouched; with --force everything is written."""
    out = tmp_path / "figs"
    out.mkdir()
    mine = out / "similarity.svg"
    mine.write_text("mine")
    res = run("all", "--out", "figs", "--format", "svg", *SMALL, cwd=tmp_path)
    assert_usage_error(res, "similarity.svg")
    assert tree(out) == ["similarity.svg"], f"partially written: {tree(out)}"
    assert mine.read_text() == "mine"
    forced = run("all", "--out", "figs", "--format", "svg", "--force", *SMALL, cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert mine.read_text() != "mine"
    written = tree(out)
    assert "similarity.svg" in written and len(written) >= 5, written
    assert not [p for p in written if p.startswith(".") or p.endswith(".tmp")], written
    COUNTS["cli-abuse"] += 1


def test_existing_file_of_a_second_format_blocks_the_first(tmp_path):
    (tmp_path / "wavelengths.png").write_text("mine")
    res = run("wavelengths", "--out", ".", "--format", "svg,png", *SMALL, cwd=tmp_path)
    assert_usage_error(res, "wavelengths.png")
    assert tree(tmp_path) == ["wavelengths.png"]


def test_empty_output_folder_is_refused(tmp_path):
    """``--out ""`` (an unset shell variable) must not write into the current folder."""
    res = run("wavelengths", "--out", "", "--format", "svg", *SMALL, cwd=tmp_path)
    assert_usage_error(res, "--out")
    assert tree(tmp_path) == []


def test_interrupt_leaves_only_complete_files(tmp_path):
    """Ctrl-C in the middle of the set: exit status 130, a one-line message, no
    traceback, no temporary file, and every file that exists is complete."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "posenc_viz", "all", "--out", "figs", "--format", "png,pdf,svg", "--dpi", "300"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()  # the first file is written: the run is under way
        assert first.startswith("wrote "), first
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    if proc.returncode == 0:
        pytest.skip("the set finished before the interrupt arrived")
    assert proc.returncode == 130, (proc.returncode, err[-1000:])
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    files = tree(tmp_path / "figs")
    assert not [f for f in files if f.startswith(".") or f.endswith(".tmp")], f"temporary files left: {files}"
    for name in files:
        data = (tmp_path / "figs" / name).read_bytes()
        if name.endswith(".png"):
            assert data.startswith(b"\x89PNG") and data.rstrip().endswith(b"IEND\xaeB`\x82"), f"{name} is truncated"
        elif name.endswith(".pdf"):
            assert data.startswith(b"%PDF") and data.rstrip().endswith(b"%%EOF"), f"{name} is truncated"
        elif name.endswith(".svg"):
            assert data.rstrip().endswith(b"</svg>"), f"{name} is truncated"
    COUNTS["cli-abuse"] += 1
