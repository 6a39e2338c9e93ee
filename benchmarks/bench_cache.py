"""Section 3: a repeated identical call against the first, and mutation safety.

NumPy tables are handed out as read-only copies: a view of the cached table
could be written through (``torch.from_numpy``, DLPack and ``load_state_dict``
ignore NumPy's read-only flag), so a repeated NumPy call costs a copy of the
table.  Its row compares it with a plain ``np.array(table, copy=True)`` of
the same table: the call must cost at most 2x that copy (plus 0.1 ms of call
overhead, which dominates for small tables).  torch CPU calls are
copy-on-write clones and must stay 10x faster than the first call.
"""

from __future__ import annotations

import time

import numpy as np

import posenc
from posenc import _cache

from .harness import Config, Row, verdict

SIZES = ((4096, 512), (65536, 128))
QUICK_SIZES = ((256, 64),)
TARGET = 10.0
#: a repeated NumPy call against a plain copy of its table: at most this ratio (plus COPY_SLACK_MS)
COPY_RATIO = 2.0
COPY_SLACK_MS = 0.1


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


def _copy_ms(call, rounds: int) -> float:
    """A plain copy of the table in the pattern of the second call: the first
    call's table alive, the copy into newly allocated memory."""
    import statistics

    times = []
    for _ in range(rounds + 1):
        _cache.clear()
        a = call()
        t0 = time.perf_counter()
        c = np.array(a, copy=True)
        times.append(time.perf_counter() - t0)
        del a, c
    return statistics.median(times[1:]) * 1e3


def _mutation_is_harmless(backend: str, call, expected: np.ndarray) -> tuple[bool, str]:
    a = call()
    if backend == "numpy":
        try:
            a[0, 0] = 123.0
        except ValueError:
            how = "write refused (read-only)"
        else:
            how = "write accepted"
        import contextlib

        with contextlib.suppress(ImportError):  # the interop route that wrote through a view
            import warnings

            import torch

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.from_numpy(a).fill_(123.0)
            how += "; torch.from_numpy(a).fill_ ran"
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
            second_ms = statistics.median(second) * 1e3
            if backend == "numpy":
                copy_ms = _copy_ms(call, cfg.rounds)
                rows.append(Row("cache", case, backend, "np.array(table, copy=True)", ms=copy_ms))
                ok = second_ms <= COPY_RATIO * copy_ms + COPY_SLACK_MS
                target = f"<= {COPY_RATIO}x copy + {COPY_SLACK_MS * 1e3:.0f} us"
                note = "read-only copy"
            else:
                ok = speedup >= TARGET
                target = f">= {TARGET:.0f}x"
                note = "copy-on-write copy"
            rows.append(
                Row(
                    "cache",
                    case,
                    backend,
                    "second call",
                    ms=second_ms,
                    speedup=speedup,
                    target=target,
                    status=verdict(ok),
                    note=note,
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
