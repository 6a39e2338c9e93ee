"""The benchmark command runs (tiny sizes, one round): benchmarks are not tests.

What is checked is the plumbing: every section produces rows, the targets
get a verdict, the JSON and Markdown files are written where asked and
``--quick`` leaves the committed results alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_quick_run_writes_results(tmp_path, capsys):
    pytest.importorskip("dask.array")
    from benchmarks.run import SECTIONS, main

    committed = (
        (ROOT / "benchmarks" / "RESULTS.md").read_bytes() if (ROOT / "benchmarks" / "RESULTS.md").exists() else None
    )
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    assert main(["--quick", "--rounds", "1", "--json", str(out_json), "--md", str(out_md)]) == 0
    printed = capsys.readouterr().out
    assert "targets:" in printed and "versions:" in printed
    data = json.loads(out_json.read_text())
    assert set(data["sections"]) == set(SECTIONS)
    assert data["header"]["versions"]["numpy"]
    for name, rows in data["sections"].items():
        assert rows, name
        for row in rows:
            assert row["status"] in ("PASS", "FAIL", "SKIP", "INFO", ""), row
    # the sections that measure something did measure (times and errors are numbers)
    sin = [r for r in data["sections"]["sinusoidal"] if r["contestant"] == "posenc"]
    assert sin and all(r["ms"] > 0 and r["error"] < 1e-6 for r in sin)
    mutation = [r for r in data["sections"]["cache"] if r["contestant"] == "mutate, call again"]
    assert mutation and all(r["status"] == "PASS" for r in mutation)
    scale = data["sections"]["scale"]
    assert all(r["status"] == "PASS" for r in scale), scale
    md = out_md.read_text()
    assert md.startswith("# Benchmark results") and "| case |" in md
    # the Markdown can be re-rendered from the JSON alone
    again = tmp_path / "again.md"
    assert main(["--render", str(out_json), "--md", str(again)]) == 0
    assert again.read_text() == md
    # --quick never overwrites the committed results
    after = (ROOT / "benchmarks" / "RESULTS.md").read_bytes() if committed is not None else None
    assert after == committed


def test_module_entry_point():
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "--quick" in proc.stdout
