"""Section 4: an 8 GiB Dask table reduced chunk by chunk, in a fresh process.

The parent starts ``python -m benchmarks.bench_scale ROWS DIM CHUNK`` and
reads one JSON line back: the peak resident memory of that process
(``VmHWM``, interpreter and imports included), the time, the float64
checksum of the whole table, and the comparison of sample chunks with the
same rows computed eagerly on NumPy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .harness import Config, Row, verdict

ROWS, DIM = 2**22, 512
QUICK_ROWS, QUICK_DIM = 2**14, 64
LIMIT_GIB = 2.0


def exact_checksum(n: int, d: int) -> float:
    """sum over p < n and i < d/2 of sin(p w_i) + cos(p w_i), in closed form
    (geometric sums of exp(i p w)); float64, independent of posenc."""
    import numpy as np

    w = 10000.0 ** (-2.0 * np.arange(d // 2) / d)
    g = (1 - np.exp(1j * n * w)) / (1 - np.exp(1j * w))
    return float(np.sum(g.real + g.imag))


def peak_rss() -> int:
    """Peak resident bytes of this process: ``VmHWM`` (Linux; it starts afresh
    at ``exec``, unlike ``ru_maxrss``, which a child inherits from the parent
    that forked it), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def worker(n: int, d: int, chunk: str) -> dict:
    import time

    import dask
    import dask.array as da
    import numpy as np

    import posenc
    from posenc import _tables

    def forbid(*args, **kwargs):
        raise AssertionError("the graph was computed while it was being built")

    rss0 = peak_rss()
    with dask.config.set({"array.chunk-size": chunk}):
        t0 = time.perf_counter()
        with dask.config.set(scheduler=forbid):
            table = posenc.sinusoidal(n, d, dtype=np.float32, xp=da)
        build = time.perf_counter() - t0
    t0 = time.perf_counter()
    total = float(table.sum(dtype=np.float64).compute(scheduler="threads"))
    elapsed = time.perf_counter() - t0
    peak = peak_rss()
    # sample chunks against the same rows computed eagerly
    nchunks = len(table.chunks[0])
    offsets = np.cumsum((0,) + table.chunks[0])
    # the frequencies sinusoidal(n, d) takes (the exact ones: correctly rounded, with their rests and turns)
    from posenc.sinusoidal import freq_args

    w = posenc.frequencies(d)
    key = freq_args(d, 10000.0, "paper", None, None)[1].key
    equal, diff_array_path, truth_err = True, 0.0, 0.0
    for i in sorted({0, nchunks // 2, nchunks - 1}):
        lo, hi = int(offsets[i]), int(offsets[i + 1])
        got = table.blocks[i].compute()
        # the eager NumPy table's rows lo..hi (the code posenc.sinusoidal(n, d) runs)
        eager = _tables._numpy_table(0, n, key, d, "interleaved", np.dtype(np.float32), lo=lo, rows=hi - lo)
        equal = equal and bool(np.array_equal(got, eager))
        step = 8192
        for a in range(lo, hi, step):
            b = min(hi, a + step)
            # the eager array-positions path (float64 angles), an independent route
            arr = posenc.sinusoidal(np.arange(a, b), d, dtype=np.float32)
            diff_array_path = max(diff_array_path, float(np.abs(got[a - lo : b - lo] - arr).max()))
            ang = np.arange(a, b, dtype=np.float64)[:, None] * w
            g = got[a - lo : b - lo].astype(np.float64)
            truth_err = max(
                truth_err, float(np.abs(g[:, 0::2] - np.sin(ang)).max()), float(np.abs(g[:, 1::2] - np.cos(ang)).max())
            )
    return {
        "rows": n,
        "dim": d,
        "table_gib": n * d * 4 / 2**30,
        "chunks": nchunks,
        "chunk_mib": max(table.chunks[0]) * d * 4 / 2**20,
        "build_s": build,
        "compute_s": elapsed,
        "peak_rss_gib": peak / 2**30,
        "start_rss_gib": rss0 / 2**30,
        "checksum": total,
        "exact_checksum": exact_checksum(n, d),
        "sampled_chunks_equal_eager": equal,
        "max_diff_vs_array_path": diff_array_path,
        "max_error_vs_float64": truth_err,
    }


def run(cfg: Config) -> list[Row]:
    try:
        import dask.array  # noqa: F401
    except ImportError:
        return [Row("scale", "-", "dask", "-", status="SKIP", note="dask not installed")]
    n, d, chunk = (QUICK_ROWS, QUICK_DIM, "256KiB") if cfg.quick else (ROWS, DIM, "128MiB")
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_scale", str(n), str(d), chunk],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    case = f"{n}x{d} f32"
    if proc.returncode != 0:
        return [Row("scale", case, "dask", "-", status="FAIL", note=f"worker failed: {proc.stderr.strip()[-300:]}")]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    ok_mem = res["peak_rss_gib"] < LIMIT_GIB
    ok_eq = res["sampled_chunks_equal_eager"] and res["max_diff_vs_array_path"] <= 2.5e-7
    sum_diff = abs(res["checksum"] - res["exact_checksum"])
    return [
        Row(
            "scale",
            case,
            "dask",
            f"{res['table_gib']:.3g} GiB table, {res['chunks']} chunks of {res['chunk_mib']:.3g} MiB",
            ms=res["compute_s"] * 1e3,
            target=f"peak RSS < {LIMIT_GIB:.0f} GiB",
            status=verdict(ok_mem),
            note=(
                f"peak RSS {res['peak_rss_gib']:.2f} GiB (after imports {res['start_rss_gib']:.2f}); "
                f"graph built lazily in {res['build_s'] * 1e3:.1f} ms"
            ),
            extra=res,
        ),
        Row(
            "scale",
            case,
            "dask",
            "sample chunks vs eager rows",
            error=res["max_error_vs_float64"],
            target="bit-equal to eager NumPy rows",
            status=verdict(ok_eq),
            note=(
                f"max diff vs array-positions path {res['max_diff_vs_array_path']:.1e}; "
                f"checksum {res['checksum']:.6f} vs closed form {res['exact_checksum']:.6f} (diff {sum_diff:.1e})"
            ),
        ),
    ]


if __name__ == "__main__":
    print(json.dumps(worker(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])))
