"""Section 3: a repeated identical call against the first, and mutation safety."""

from __future__ import annotations

import time

import numpy as np

import posenc
from posenc import _cache

from .harness import Config, Row, verdict

SIZES = ((4096, 512), (65536, 128))
QUICK_SIZES = ((256, 64),)
TARGET = 10.0


def _first_second(call, rounds: int) -> tuple[list[float], list[float]]:
    """Per round: empty the caches (untimed), time the first call, then the second."""
    first, second = [], []
    for _ in range(rounds + 1):
        _cache.clear()
        t0 = time.perf_counter()
        a = call()
        t1 = time.perf_counter()
        b = call()
        t2 = time.perf_counter()
        del a, b
        first.append(t1 - t0)
        second.append(t2 - t1)
    return first[1:], second[1:]  # the first round warms the interpreter


def _mutation_is_harmless(backend: str, call, expected: np.ndarray) -> tuple[bool, str]:
    a = call()
    if backend == "numpy":
        try:
            a[0, 0] = 123.0
        except ValueError:
            how = "write refused (read-only)"
        else:
            how = "write accepted"
    else:
        a.fill_(123.0)
        how = "tensor overwritten in place"
    b = call()
    got = b if backend == "numpy" else b.numpy()
    return bool(np.array_equal(got, expected)), how


def run(cfg: Config) -> list[Row]:
    import statistics

    rows: list[Row] = []
    backends = [("numpy", lambda n, d: posenc.sinusoidal(n, d, dtype=np.float32))]
    try:
        import torch

        backends.append(("torch-cpu", lambda n, d: posenc.sinusoidal(n, d, dtype=torch.float32, xp=torch)))
    except ImportError:  # pragma: no cover
        rows.append(Row("cache", "-", "torch-cpu", "-", status="SKIP", note="torch not installed"))
    for n, d in QUICK_SIZES if cfg.quick else SIZES:
        case = f"{n}x{d}"
        for backend, fn in backends:
            call = lambda fn=fn, n=n, d=d: fn(n, d)  # noqa: E731
            first, second = _first_second(call, cfg.rounds)
            speedup = statistics.median(f / s for f, s in zip(first, second))
            rows.append(Row("cache", case, backend, "first call", ms=statistics.median(first) * 1e3))
            rows.append(
                Row(
                    "cache",
                    case,
                    backend,
                    "second call",
                    ms=statistics.median(second) * 1e3,
                    speedup=speedup,
                    target=f">= {TARGET:.0f}x",
                    status=verdict(speedup >= TARGET),
                    note="read-only view" if backend == "numpy" else "copy-on-write copy",
                )
            )
            _cache.clear()
            expected = np.array(call() if backend == "numpy" else call().numpy(), copy=True)
            ok, how = _mutation_is_harmless(backend, call, expected)
            rows.append(
                Row("cache", case, backend, "mutate, call again", target="unchanged", status=verdict(ok), note=how)
            )
    _cache.clear()
    return rows
