"""Command line of ``python -m benchmarks``."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from . import (
    bench_axes,
    bench_cache,
    bench_diffusion,
    bench_flex,
    bench_gpu,
    bench_hotpath,
    bench_rope,
    bench_scale,
    bench_sinusoidal,
)
from .harness import Config, Row, header, markdown_table, text_table, verdict_counts

SECTIONS = {
    "sinusoidal": (bench_sinusoidal, "Sinusoidal table, float32: posenc against the seeds' code and peers"),
    "rope": (bench_rope, "RoPE: apply_rope / rope against a copy and the Hugging Face formula"),
    "axes": (bench_axes, "Multi-axis RoPE from position ids: Flux's ids against diffusers' FluxPosEmbed"),
    "hotpath": (bench_hotpath, "Hot path: decode step, one-token apply, arrays of positions, compiled step"),
    "cache": (bench_cache, "Repeated calls: second identical call against the first; mutation safety"),
    "scale": (bench_scale, "Scale: Dask table of 2**22 x 512 float32 (8 GiB), reduced chunk by chunk"),
    "gpu": (bench_gpu, "GPU: tables and RoPE against a device copy"),
    "diffusion": (bench_diffusion, "Diffusion: timestep embedding against diffusers' get_timestep_embedding"),
    "flex": (bench_flex, "FlexAttention: posenc's ALiBi score function against SDPA with the materialised bias"),
}
HERE = Path(__file__).resolve().parent


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument(
        "--quick", action="store_true", help="tiny sizes, few rounds (a smoke run; writes no files unless asked)"
    )
    p.add_argument("--only", nargs="+", choices=list(SECTIONS), help="run only these sections")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds per case (default 15, quick 3)")
    p.add_argument("--json", type=Path, default=None, help="results file (default benchmarks/results.json)")
    p.add_argument("--md", type=Path, default=None, help="Markdown table (default benchmarks/RESULTS.md)")
    p.add_argument("--no-write", action="store_true", help="print only")
    p.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    p.add_argument(
        "--render", type=Path, default=None, metavar="JSON", help="rewrite the Markdown from a results file and exit"
    )
    p.add_argument(
        "--gpu-check", action="store_true",
        help="the device check (benchmarks/gpu_check.py): GPU test lanes, device accuracy, the device targets, "
        "launches and syncs; a dry run without a CUDA device",
    )
    p.add_argument("--out", type=Path, default=None, help="--gpu-check: output folder (default benchmarks/out)")
    p.add_argument(
        "--lanes-timeout", type=float, default=110.0, help="--gpu-check: time cap of the test lanes, seconds"
    )
    p.add_argument("--no-lanes", action="store_true", help="--gpu-check: skip the test lanes")
    p.add_argument(
        "--merge-gpu", type=Path, default=None, metavar="JSON",
        help="merge a device check's JSON into the GPU section of the results (--json) and rewrite the Markdown",
    )
    return p


def _render(json_path: Path, md_path: Path) -> None:
    payload = json.loads(json_path.read_text())
    sections = {k: [Row(**r) for r in rows] for k, rows in payload["sections"].items()}
    md_path.write_text(_markdown(payload["header"], sections, payload["counts"]))


def _markdown(info: dict, sections: dict[str, list[Row]], counts: dict[str, int]) -> str:
    v = ", ".join(f"{k} {val}" for k, val in info["versions"].items())
    out = [
        "# Benchmark results",
        "",
        "Produced by `make bench` (`python -m benchmarks`); regenerate to update.",
        "Ratios are measured side by side in one process: each round runs every",
        "contestant of a case once, in a rotating order, and a ratio is the median",
        "over rounds of the per-round ratio.  posenc tables are timed cold: its",
        "caches are emptied (untimed) before every call.  Errors are max absolute",
        "differences from the float64 truth.",
        "",
        "torch rows are measured with torch's default intra-op threads and with one",
        "thread.  On a machine whose cores are busy with other work, multi-threaded",
        "kernels wait for descheduled threads and idle OpenMP threads keep spinning",
        "after each parallel region, which slows whatever runs next (the contestants",
        "are interleaved); the one-thread rows are the cleaner comparison there.",
        "",
        f"- date: {info['date']}",
        f"- command: `{info['command'].strip()}`",
        f"- machine: {info['machine']}, {info['cpu']}, {info['cpu_count']} cores, {info['memory_gib']} GiB",
        f"- versions: {v}",
    ]
    if "commit" in info:
        out.append(f"- commit: {info['commit']}")
    if "gpu_device" in info:
        gpu = f"{info['gpu_device']}, {info.get('gpu_date', '')}"
        if info.get("gpu_commit"):
            gpu += f", at commit {info['gpu_commit']}"
        out.append(f"- GPU section: {gpu} (`python -m benchmarks --gpu-check`)")
    if "torch_threads" in info:
        out.append(f"- torch threads: {info['torch_threads']}")
    if "huge_pages" in info:
        out.append(f"- transparent huge pages: {info['huge_pages']}")
    if "load_average_start" in info:
        out.append(
            f"- load average (1, 5, 15 min) at start: {info['load_average_start']}, "
            f"at end: {info.get('load_average_end')}"
        )
    out.append(f"- targets: {counts.get('PASS', 0)} PASS, {counts.get('FAIL', 0)} FAIL, {counts.get('SKIP', 0)} SKIP")
    for name, rows in sections.items():
        out += ["", f"## {SECTIONS[name][1]}", "", markdown_table(rows)]
    return "\n".join(out) + "\n"


def _keep_device_section(json_path: Path, payload: dict) -> bool:
    """Where this run had no device (its GPU section all SKIP) and the report
    it replaces holds a device check's rows (``--merge-gpu``), those rows and
    the device's header lines are kept in ``payload``; whether they were."""
    rows = payload["sections"].get("gpu")
    if rows is None or any(r["status"] != "SKIP" for r in rows) or not json_path.exists():
        return False
    old = json.loads(json_path.read_text())
    if "gpu_device" not in old.get("header", {}) or "gpu" not in old.get("sections", {}):
        return False
    payload["sections"]["gpu"] = old["sections"]["gpu"]
    for k, v in old["header"].items():
        if k.startswith("gpu_"):
            payload["header"][k] = v
    payload["counts"] = verdict_counts(payload["sections"])
    return True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    if args.render is not None:
        _render(args.render, args.md or HERE / "RESULTS.md")
        return 0
    if args.gpu_check:
        from .gpu_check import run_check

        return run_check(argv, args.out or HERE / "out", args.lanes_timeout, run_lanes=not args.no_lanes)
    if args.merge_gpu is not None:
        from .gpu_check import merge

        json_path = args.json or HERE / "results.json"
        payload = merge(args.merge_gpu, json_path)
        json_path.write_text(json.dumps(payload, indent=1) + "\n")
        _render(json_path, args.md or HERE / "RESULTS.md")
        print(f"merged {args.merge_gpu} into {json_path.name} (GPU section, {payload['header']['gpu_device']})")
        return 0
    names = tuple(args.only or SECTIONS)
    rounds = args.rounds or (3 if args.quick else 15)
    cfg = Config(quick=args.quick, rounds=rounds, sections=names)
    info = header(argv)
    print(f"posenc benchmarks  {info['date']}")
    print(f"{info['machine']}; {info['cpu']}; {info['cpu_count']} cores; {info['memory_gib']} GiB")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()))
    if "load_average_start" in info:
        print(f"load average: {info['load_average_start']}")
    results: dict[str, list[Row]] = {}
    t_all = time.perf_counter()
    for name in names:
        module, title = SECTIONS[name]
        t0 = time.perf_counter()
        rows = module.run(cfg)
        results[name] = rows
        print(f"\n== {title}  ({time.perf_counter() - t0:.1f} s)")
        print(text_table(rows))
    with contextlib.suppress(OSError):
        info["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    info["seconds"] = round(time.perf_counter() - t_all, 1)
    counts: dict[str, int] = {}
    for rows in results.values():
        for r in rows:
            if r.status in ("PASS", "FAIL", "SKIP"):
                counts[r.status] = counts.get(r.status, 0) + 1
    print(
        f"\ntargets: {counts.get('PASS', 0)} PASS, {counts.get('FAIL', 0)} FAIL, {counts.get('SKIP', 0)} SKIP  "
        f"({info['seconds']} s)"
    )
    write = not args.no_write and (not args.quick or args.json or args.md)
    if write:
        json_path = args.json or HERE / "results.json"
        md_path = args.md or HERE / "RESULTS.md"
        payload = {
            "header": info,
            "counts": counts,
            "sections": {k: [r.as_dict() for r in v] for k, v in results.items()},
        }
        if _keep_device_section(json_path, payload):
            json_path.write_text(json.dumps(payload, indent=1) + "\n")
            _render(json_path, md_path)
        else:
            json_path.write_text(json.dumps(payload, indent=1) + "\n")
            md_path.write_text(_markdown(info, results, counts))
        print(f"wrote {json_path.name} and {md_path.name}")
    return 1 if args.strict and counts.get("FAIL") else 0
