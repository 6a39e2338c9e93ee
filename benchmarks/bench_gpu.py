"""Section 5: tables and RoPE on a GPU against a device copy of the same bytes.

Runs on torch-CUDA and CuPy when a CUDA device is present; otherwise every
row is a clean SKIP.  Times come from device events around each call
(synchronised), interleaved and medianed like the CPU sections.
"""

from __future__ import annotations

import statistics

from .harness import Config, Row, verdict

TABLE = (2**20, 512)
ROPE = (1, 32, 4096, 128)
QUICK_TABLE = (4096, 64)
QUICK_ROPE = (1, 2, 128, 64)


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _cupy():
    try:
        import cupy

        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:
        return None


def _time_torch(torch, fns: dict, rounds: int) -> dict[str, list[float]]:
    out = {k: [] for k in fns}
    names = list(fns)
    for f in fns.values():
        f()
    torch.cuda.synchronize()
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            res = fns[name]()
            b.record()
            torch.cuda.synchronize()
            del res
            out[name].append(a.elapsed_time(b) / 1e3)
    return out


def _time_cupy(cupy, fns: dict, rounds: int) -> dict[str, list[float]]:
    out = {k: [] for k in fns}
    names = list(fns)
    for f in fns.values():
        f()
    cupy.cuda.Device().synchronize()
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            a, b = cupy.cuda.Event(), cupy.cuda.Event()
            a.record()
            res = fns[name]()
            b.record()
            b.synchronize()
            del res
            out[name].append(cupy.cuda.get_elapsed_time(a, b) / 1e3)
    return out


def _rows(backend: str, device: str, kind: str, case: str, times: dict, target: float, faster_is: str) -> list[Row]:
    rows = []
    for name, ts in times.items():
        row = Row("gpu", case, backend, name, ms=statistics.median(ts) * 1e3, note=device)
        if name != "copy":
            row.reference = "copy"
            row.ratio = statistics.median(x / y for x, y in zip(ts, times["copy"]))
            if faster_is == "table":  # table throughput >= target * copy throughput
                row.target = f"<= {1 / target:.1f}x copy ({target:.0%} of copy bandwidth)"
                row.status = verdict(row.ratio <= 1 / target)
            else:
                row.target = f"<= {target}x copy"
                row.status = verdict(row.ratio <= target)
        rows.append(row)
    return rows


def run(cfg: Config) -> list[Row]:
    import posenc
    from posenc import _cache

    torch = _torch_cuda()
    cupy = _cupy()
    if torch is None and cupy is None:
        return [Row("gpu", "-", "cuda", "-", status="SKIP", note="no CUDA device on this machine")]
    n, d = QUICK_TABLE if cfg.quick else TABLE
    shape = QUICK_ROPE if cfg.quick else ROPE
    rows: list[Row] = []
    if torch is not None:
        dev = torch.device("cuda")
        name = torch.cuda.get_device_name(dev)
        ref = torch.empty((n, d), dtype=torch.float32, device=dev)

        def table():
            _cache.clear()  # cold: no cached table
            return posenc.sinusoidal(n, d, dtype=torch.float32, xp=torch, device=dev)

        times = _time_torch(torch, {"copy": lambda: ref.clone(), "posenc.sinusoidal": table}, cfg.rounds)
        rows += _rows("torch-cuda", name, "table", f"{n}x{d} f32", times, 0.5, "table")
        if hasattr(posenc, "apply_rope"):
            x = torch.randn(shape, device=dev)
            cos, sin = posenc.rope_cos_sin(shape[-2], shape[-1], dtype=torch.float32, xp=torch, device=dev)
            times = _time_torch(
                torch,
                {"copy": lambda: x.clone(), "posenc.apply_rope": lambda: posenc.apply_rope(x, cos, sin)},
                cfg.rounds,
            )
            rows += _rows("torch-cuda", name, "rope", "x".join(map(str, shape)), times, 1.5, "rope")
    if cupy is not None:
        name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        ref = cupy.empty((n, d), dtype=cupy.float32)

        def table_cp():
            _cache.clear()
            return posenc.sinusoidal(n, d, dtype="float32", xp=cupy)

        times = _time_cupy(cupy, {"copy": lambda: ref.copy(), "posenc.sinusoidal": table_cp}, cfg.rounds)
        rows += _rows("cupy", name, "table", f"{n}x{d} f32", times, 0.5, "table")
        if hasattr(posenc, "apply_rope"):
            x = cupy.random.standard_normal(shape, dtype=cupy.float32)
            cos, sin = posenc.rope_cos_sin(shape[-2], shape[-1], dtype="float32", xp=cupy)
            times = _time_cupy(
                cupy,
                {"copy": lambda: x.copy(), "posenc.apply_rope": lambda: posenc.apply_rope(x, cos, sin)},
                cfg.rounds,
            )
            rows += _rows("cupy", name, "rope", "x".join(map(str, shape)), times, 1.5, "rope")
    return rows
