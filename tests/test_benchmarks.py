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

import numpy as np
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


# ---------------------------------------------------------------- the device check
def _cuda() -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    return torch.cuda.is_available()


def test_gpu_check_dry_run(tmp_path, capsys):
    """Without a device the check says it is a dry run, runs every part's code once at tiny sizes on the CPU
    and writes its JSON with every verdict "no device" (the lanes, a pytest subprocess, and the compiled and
    diffusion rows are left to ``python -m benchmarks --gpu-check`` itself: they cost tens of seconds here)."""
    pytest.importorskip("torch")
    if _cuda():  # pragma: no cover - on a GPU machine the command measures for real
        pytest.skip("a CUDA device is present: the check is not a dry run here")
    from benchmarks import gpu_check
    from benchmarks.run import main

    rows = ("position ids", "apply_rope", "table", "cupy", "jax", "model")
    assert gpu_check.run_check(["--gpu-check"], tmp_path, 1.0, run_lanes=False, rows=rows) == 0
    printed = capsys.readouterr().out
    assert "DRY RUN (no CUDA device)" in printed and "no number below is a measurement" in printed
    data = json.loads((tmp_path / "gpu_check.json").read_text())
    assert data["dry_run"] is True and data["device"] is None and data["errors"] == {}
    got = {r["case"].split(" (")[0].split(" position")[0] for r in data["rows"]}
    assert {"rope_cos_sin", "apply_rope", "apply_rope q", "CuPy sinusoidal(64, 16) f32, cold"} <= got, got
    assert any(r["case"].startswith("Llama-shaped model") for r in data["rows"])
    assert data["rows"] and all(r["status"] == gpu_check.NO_DEVICE for r in data["rows"])
    assert all(r["ms"] > 0 for r in data["rows"])
    # NumPy stood in for CuPy: its rows took CuPy's route (the Triton kernels through DLPack), and say so
    cupy = [r for r in data["rows"] if r["case"].startswith("CuPy") and r["contestant"].startswith("posenc")]
    assert len(cupy) == 2 and all("route: Triton through DLPack" in r["note"] for r in cupy), cupy
    # posenc's RoPE ran in every layer of the model in place of its own, and gave its logits (bf16)
    llama = next(r for r in data["rows"] if r["contestant"] == "posenc's RoPE patched in")
    assert "patched into 2 layers" in llama["note"], llama["note"]
    assert float(llama["note"].split("logits differ by ")[1].split(";")[0]) < 0.05, llama["note"]
    # accuracy: every path and range measured, within the bound even at tiny sizes
    acc = data["accuracy"]
    assert len(acc) >= 15 and all(a["error"] is not None and a["error"] <= gpu_check.BOUND for a in acc), acc
    assert {a["positions"] for a in acc} >= {"int |p| in [2^24, 2^31)", "float |p| in [2^10, 2^22)"}
    calls = {r["call"]: r for r in data["launches"]}
    assert set(calls) == set(gpu_check.LAUNCH_TARGETS)
    assert all(r["posenc"] > 0 and r["peer"] > 0 and r["syncs"] is None for r in calls.values())
    # a dry run is never merged into the results
    with pytest.raises(SystemExit, match="dry run"):
        main(["--merge-gpu", str(tmp_path / "gpu_check.json"), "--json", str(tmp_path / "r.json")])


def test_gpu_check_merges_a_device_run(tmp_path):
    """A device run's JSON replaces the GPU section of the results, with the device named in the Markdown."""
    from benchmarks.run import main

    results = {
        "header": {"date": "d", "command": "c", "machine": "m", "cpu": "c", "cpu_count": 1, "memory_gib": 1,
                   "versions": {"numpy": "2"}},
        "counts": {"PASS": 1},
        "sections": {"gpu": [{"section": "gpu", "case": "stale row", "backend": "cuda", "contestant": "-",
                              "status": "SKIP"}]},
    }
    row = {"section": "gpu", "case": "apply_rope", "backend": "torch-cuda", "contestant": "posenc", "ms": 1.0,
           "reference": "copy of x", "ratio": 1.1, "target": "<= 1.3x", "status": "PASS", "note": "H100"}
    check = {"device": "NVIDIA H100 80GB HBM3", "dry_run": False, "header": {"date": "now", "versions": {"torch": "2"}},
             "rows": [row], "accuracy": [{"backend": "cupy", "path": "sinusoidal", "positions": "int", "error": 1e-7,
                                          "bound": 2.5e-7, "status": "PASS"}],
             "launches": [{"call": "Flux ids", "posenc": 30, "peer": 44, "target": 41, "syncs": 1, "status": "FAIL"}]}
    (tmp_path / "r.json").write_text(json.dumps(results))
    (tmp_path / "c.json").write_text(json.dumps(check))
    md = tmp_path / "r.md"
    assert main(["--merge-gpu", str(tmp_path / "c.json"), "--json", str(tmp_path / "r.json"), "--md", str(md)]) == 0
    merged = json.loads((tmp_path / "r.json").read_text())
    cases = [r["case"] for r in merged["sections"]["gpu"]]
    assert cases == ["apply_rope", "accuracy sinusoidal, int", "launches per call: Flux ids"]
    assert merged["counts"] == {"PASS": 2, "FAIL": 1}
    text = md.read_text()
    assert "NVIDIA H100 80GB HBM3" in text and "| apply_rope |" in text and "stale row" not in text


def test_gpu_check_reads_pytest_summaries():
    from benchmarks.gpu_check import summarize

    done = summarize("....F\n= 1488 passed, 139 skipped, 33 failed in 201.5s =")
    assert done["counts"] == {"passed": 1488, "skipped": 139, "failed": 33}
    cut = summarize("..F.s.. [ 10%]\n..s", cut=True)
    assert cut["counts"] == {"passed": 7, "failed": 1, "skipped": 2} and cut["summary"].startswith("cut at")


def test_peer_formulas_equal_diffusers():
    """benchmarks.peers writes out diffusers' two formulas for machines without diffusers: equal to diffusers'
    own functions, bit for bit; a wrong convention (the frequency shift, the axes' order) differs."""
    torch = pytest.importorskip("torch")
    embeddings = pytest.importorskip("diffusers.models.embeddings")
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed

    from benchmarks import peers

    t = torch.rand(37, generator=torch.Generator().manual_seed(0)) * 1000.0
    for dim, flip, shift, scale in [(320, True, 0.0, 1.0), (63, False, 1.0, 2.5), (16, True, 1.0, 1.0)]:
        want = embeddings.get_timestep_embedding(t, dim, flip, shift, scale)
        assert torch.equal(peers.timestep_embedding(t, dim, flip, shift, scale), want)
    wrong = peers.timestep_embedding(t, 320, True, 1.0)  # control: another frequency shift
    assert not torch.allclose(wrong, embeddings.get_timestep_embedding(t, 320, True, 0.0), atol=1e-3)
    ids = np.stack([np.zeros(50), np.arange(50) // 7, np.arange(50) % 7 + 1000.5], -1)
    ids = torch.as_tensor(ids, dtype=torch.float32)
    axes = [16, 56, 56]
    want = FluxPosEmbed(theta=10000, axes_dim=axes)(ids)
    got = peers.flux_rope(ids, axes)
    assert all(torch.equal(g, w) for g, w in zip(got, want))
    control = peers.flux_rope(ids.flip(-1), axes)
    assert not torch.allclose(control[0], want[0], atol=1e-3)


def test_gpu_check_reads_a_cut_lanes_log():
    """The lanes' log of a run interrupted at its time cap: pytest's own
    summary line, and the failures counted by cause (``--tb=line``)."""
    from benchmarks import gpu_check

    log = "\n".join([
        "..F.Fs [ 40%]",
        "/repo/posenc/_compat.py:725: RuntimeError: called a synchronizing CUDA operation",
        "/repo/tests/a.py:9: AssertionError: assert 1 == 2",
        "/repo/posenc/_compat.py:725: RuntimeError: called a synchronizing CUDA operation",
        "FAILED tests/a.py::test_x[torch-cuda] - RuntimeError: called a synchronizing CUDA operation",
        "!!!!!!!!!!!!!!!!!!!! KeyboardInterrupt !!!!!!!!!!!!!!!!!!!!",
        "3 failed, 2 passed, 1 skipped in 150.00s (0:02:30)",
    ])
    got = gpu_check.summarize(log, cut=True)
    assert got["counts"] == {"failed": 3, "passed": 2, "skipped": 1}
    assert gpu_check.causes(log) == [
        (2, "RuntimeError: called a synchronizing CUDA operation"), (1, "AssertionError: assert 1 == 2")
    ]


def test_a_run_without_a_device_keeps_the_merged_device_rows(tmp_path):
    """``make bench`` on a machine without a GPU (its GPU section all SKIP)
    keeps the device check's rows merged into the report it replaces; a run
    with device rows of its own replaces them."""
    import json

    from benchmarks.run import _keep_device_section

    path = tmp_path / "results.json"
    device_rows = [{"status": "PASS", "case": "on the device"}, {"status": "FAIL", "case": "on the device"}]
    path.write_text(json.dumps({"header": {"gpu_device": "NVIDIA H200", "gpu_date": "d", "date": "old"},
                                "sections": {"gpu": device_rows}}))
    payload = {"header": {"date": "new"}, "sections": {"cpu": [{"status": "PASS"}], "gpu": [{"status": "SKIP"}]}}
    assert _keep_device_section(path, payload)
    assert payload["sections"]["gpu"] == device_rows
    assert payload["header"] == {"date": "new", "gpu_device": "NVIDIA H200", "gpu_date": "d"}
    assert payload["counts"] == {"PASS": 2, "FAIL": 1}
    measured = {"header": {}, "sections": {"gpu": [{"status": "PASS"}]}}
    assert not _keep_device_section(path, measured) and measured["sections"]["gpu"] == [{"status": "PASS"}]
