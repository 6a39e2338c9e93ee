"""Timing, the machine header, result rows and their tables."""

from __future__ import annotations

import contextlib
import datetime
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Row:
    """One contestant of one case.

    ``ratio`` is this contestant's time over the reference's (median of the
    per-round ratios); ``speedup`` is used where a target is "at least Nx
    faster" (the cache section).
    """

    section: str
    case: str
    backend: str
    contestant: str
    ms: float | None = None
    reference: str | None = None
    ratio: float | None = None
    speedup: float | None = None
    error: float | None = None
    target: str = ""
    status: str = ""  # PASS / FAIL / SKIP / INFO / ""
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Config:
    quick: bool = False
    rounds: int = 15
    sections: tuple[str, ...] = ()


def interleaved(
    contestants: dict[str, Callable[[], Any]],
    rounds: int,
    *,
    setup: dict[str, Callable[[], Any]] | None = None,
    warmup: int = 1,
) -> dict[str, list[float]]:
    """Time each contestant once per round, in a rotating order; seconds.

    ``setup[name]`` runs before each call of ``name`` and is not timed (the
    benchmarks use it to empty posenc's caches for cold calls).  The garbage
    collector runs once per round and is off while a call runs; results are
    dropped right after.
    """
    setup = setup or {}
    names = list(contestants)
    for _ in range(warmup):
        for name in names:
            if name in setup:
                setup[name]()
            contestants[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        k = r % len(names)
        gc.collect()
        for name in names[k:] + names[:k]:
            if name in setup:
                setup[name]()
            gc.disable()
            try:
                t0 = time.perf_counter()
                out = contestants[name]()
                t1 = time.perf_counter()
            finally:
                gc.enable()
            del out
            times[name].append(t1 - t0)
    return times


def torch_thread_settings(torch: Any) -> list[tuple[str, int]]:
    """``(backend label, threads)``: torch's default intra-op threads and, when
    that is more than one, a single thread as well.  On a machine whose cores
    are shared, multi-threaded torch kernels wait for descheduled threads
    (milliseconds per call); the single-thread rows show the comparison
    without that penalty."""
    n = torch.get_num_threads()
    out = [("torch-cpu", n)]
    if n > 1:
        out.append(("torch-cpu 1 thread", 1))
    return out


@contextlib.contextmanager
def torch_threads(torch: Any, n: int):
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def median_ms(ts: list[float]) -> float:
    return statistics.median(ts) * 1e3


def paired_ratio(a: list[float], b: list[float]) -> float:
    """Median over rounds of ``a[r] / b[r]``."""
    return statistics.median(x / y for x, y in zip(a, b))


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


# ---------------------------------------------------------------- header
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_total_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _version(mod: str) -> str | None:
    try:
        m = __import__(mod)
    except Exception:
        return None
    for part in mod.split(".")[1:]:
        m = getattr(m, part)
    return str(getattr(m, "__version__", "?"))


def verdict_counts(sections: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
    """How many rows of a report's sections (rows as dicts) PASS, FAIL and SKIP."""
    counts: dict[str, int] = {}
    for rows in sections.values():
        for r in rows:
            if r["status"] in ("PASS", "FAIL", "SKIP"):
                counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts


def header(argv: list[str]) -> dict[str, Any]:
    import numpy as np

    import posenc

    versions = {"python": platform.python_version(), "posenc": posenc.__version__, "numpy": np.__version__}
    for mod in ("torch", "jax", "dask", "array_api_compat", "array_api_strict", "cupy", "transformers"):
        v = _version(mod)
        if v is not None:
            versions[mod] = v
    try:
        from importlib.metadata import version

        versions["positional-encodings"] = version("positional-encodings")
    except Exception:
        pass
    info: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python -m benchmarks " + " ".join(argv),
        "machine": f"{platform.system()} {platform.machine()}",
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_gib": _mem_total_gib(),
        "versions": versions,
    }
    commit = _commit()
    if commit is not None:
        info["commit"] = commit
    if "torch" in sys.modules or versions.get("torch"):
        import torch

        info["torch_threads"] = torch.get_num_threads()
    thp = _transparent_huge_pages()
    if thp is not None:
        info["huge_pages"] = thp
    with contextlib.suppress(OSError):
        info["load_average_start"] = [round(x, 2) for x in os.getloadavg()]
    return info


def _commit() -> str | None:
    """The checkout's commit (``git rev-parse --short HEAD``), with ``+``
    where tracked files differ from it; None without git or a repository
    (a copy of the working tree on another machine)."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+" if dirty else "") if head else None


def _transparent_huge_pages() -> str | None:
    """The kernel's transparent-huge-page mode (Linux) and whether torch's CPU
    allocator asks for huge pages.  Both decide what a copy of a large fresh
    array costs, so they are part of every copy-relative ratio."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            text = f.read()
    except OSError:
        return None
    mode = text[text.index("[") + 1 : text.index("]")] if "[" in text else text.strip()
    torch_thp = os.environ.get("THP_MEM_ALLOC_ENABLE", "unset")
    return f"{mode} (NumPy asks for them on large arrays; torch only with THP_MEM_ALLOC_ENABLE=1, here {torch_thp})"


# ---------------------------------------------------------------- tables
def _fmt(v: Any, kind: str) -> str:
    if v is None:
        return ""
    if kind == "ms":
        return f"{v:.3g}" if v < 100 else f"{v:.0f}"
    if kind == "x":
        return f"{v:.2f}x"
    if kind == "err":
        return f"{v:.1e}"
    return str(v)


COLUMNS = (
    ("case", "case", ""),
    ("backend", "backend", ""),
    ("contestant", "contestant", ""),
    ("ms", "median ms", "ms"),
    ("ratio", "time / ref", "x"),
    ("reference", "ref", ""),
    ("speedup", "speed-up", "x"),
    ("error", "max abs err", "err"),
    ("target", "target", ""),
    ("status", "status", ""),
    ("note", "note", ""),
)


def table_cells(rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    used = [c for c in COLUMNS if any(getattr(r, c[0]) not in (None, "") for r in rows)]
    head = [c[1] for c in used]
    body = [[_fmt(getattr(r, c[0]), c[2]) for c in used] for r in rows]
    return head, body


def text_table(rows: list[Row]) -> str:
    head, body = table_cells(rows)
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    out = [line(head), line(["-" * w for w in widths])]
    out += [line(b) for b in body]
    return "\n".join(out)


def markdown_table(rows: list[Row]) -> str:
    head, body = table_cells(rows)
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in b) + " |" for b in body]
    return "\n".join(out)


def guard_check_us(fn: Callable, f_locals: dict[str, Any], calls: int = 2000) -> float | None:
    """Microseconds of one check of the guards of ``fn``'s first compiled
    entry against ``f_locals`` (its arguments), or None where this torch
    does not expose them (a private interface)."""
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        check = _debug_get_cache_entry_list(fn.__code__)[0].guard_manager.check
        cells = zip(fn.__code__.co_freevars, fn.__closure__ or ())
        f_locals = {**f_locals, **{name: cell.cell_contents for name, cell in cells}}  # (a closure's variables too)
        if not check(f_locals):
            return None
        t0 = time.perf_counter()
        for _ in range(calls):
            check(f_locals)
        return (time.perf_counter() - t0) / calls * 1e6
    except Exception:  # noqa: BLE001 - a diagnostic only
        return None
