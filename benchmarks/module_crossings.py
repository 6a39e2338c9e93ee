"""Count the calls between posenc's modules in one call of a public function.

    python -m benchmarks.module_crossings            # the table
    python -m benchmarks.module_crossings --detail   # and who calls whom

A *crossing* is a call of a Python function of one posenc module from a
function of another (``sys.setprofile``, ``"call"`` events whose caller and
callee frames have different module names under ``posenc``); calls into
NumPy, torch or array-api-compat are not counted.  Each case is measured
warm (the call repeated: what a model's step costs, plans and tables cached)
and cold (``posenc._cache.clear()`` before the call: the first call of a
shape).  The cases follow one ``positions`` argument through the tables of
``sinusoidal`` and ``rope_cos_sin`` on NumPy and torch CPU: integer and float
arrays, small (a decode step) and large, and an int ``n``.

Nothing here is a benchmark of time; the counts are deterministic for a given
tree and environment.
"""

from __future__ import annotations

import argparse
import collections
import sys
from collections.abc import Callable
from typing import Any


def crossings(fn: Callable[..., Any], *args: Any, cold: bool = False, **kwargs: Any) -> collections.Counter:
    """``(caller module, callee module) -> count`` of one call of ``fn``."""
    from posenc import _cache

    fn(*args, **kwargs)
    fn(*args, **kwargs)
    if cold:
        _cache.clear()
    pairs: collections.Counter = collections.Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = frame.f_globals.get("__name__", "")
        back = frame.f_back
        caller = back.f_globals.get("__name__", "") if back is not None else ""
        if callee != caller and callee.startswith("posenc") and caller.startswith("posenc"):
            pairs[(caller, callee)] += 1

    sys.setprofile(profile)
    try:
        fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return pairs


def cases() -> list[tuple[str, Callable[..., Any], tuple[Any, ...]]]:
    import numpy as np

    import posenc

    out = [
        ("sinusoidal(np.arange(16), 64)", posenc.sinusoidal, (np.arange(16), 64)),
        ("sinusoidal(np.arange(4096), 64)", posenc.sinusoidal, (np.arange(4096), 64)),
        ("sinusoidal(float positions (16,), 64)", posenc.sinusoidal, (np.linspace(0.0, 100.0, 16), 64)),
        ("sinusoidal(8, 64)", posenc.sinusoidal, (8, 64)),
        ("rope_cos_sin(np.arange(16)[None], 64)", posenc.rope_cos_sin, (np.arange(16)[None], 64)),
        ("rope_cos_sin(np.arange(4096), 128)", posenc.rope_cos_sin, (np.arange(4096), 128)),
        ("rope_cos_sin(8, 64)", posenc.rope_cos_sin, (8, 64)),
    ]
    try:
        import torch
    except ImportError:  # pragma: no cover
        return out
    return out + [
        ("sinusoidal(torch.arange(16), 64)", posenc.sinusoidal, (torch.arange(16), 64)),
        ("sinusoidal(torch float positions (16,), 64)", posenc.sinusoidal, (torch.linspace(0.0, 100.0, 16), 64)),
        ("rope_cos_sin(torch.arange(16)[None], 64)", posenc.rope_cos_sin, (torch.arange(16)[None], 64)),
        ("rope_cos_sin(torch.tensor([[4096]]), 128)", posenc.rope_cos_sin, (torch.tensor([[4096]]), 128)),
        ("rope_cos_sin(torch float positions (16,), 64)", posenc.rope_cos_sin, (torch.linspace(0.0, 100.0, 16), 64)),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.module_crossings", description=__doc__)
    parser.add_argument("--detail", action="store_true", help="the callers and callees of each warm call")
    args = parser.parse_args(argv)
    rows = []
    for name, fn, call_args in cases():
        warm = crossings(fn, *call_args)
        cold = crossings(fn, *call_args, cold=True)
        rows.append((name, sum(warm.values()), sum(cold.values()), warm))
    width = max(len(r[0]) for r in rows)
    print(f"{'call':<{width}}  {'warm':>5}  {'cold':>5}")
    for name, w, c, warm in rows:
        print(f"{name:<{width}}  {w:>5}  {c:>5}")
        if args.detail:
            for (a, b), k in warm.most_common():
                print(f"    {k:>3}  {a} -> {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
