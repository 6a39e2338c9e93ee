"""Requests beyond posenc's documented limit fail fast, before allocating.

``posenc._checks.MAX_ELEMENTS = 2**40``: no output may hold more values (a
float32 table of 2**40 values is 4 TiB).  Every function that allocates has
at least one request above the limit in the registry (sizes from ints, or
from zero-stride broadcast views whose shapes are huge while they hold one
value); each must raise a ``ValueError`` that names the limit, within a
second, with a small peak of traced memory (NumPy reports its buffers to
:mod:`tracemalloc`).
"""

from __future__ import annotations

import inspect
import time
import tracemalloc

import numpy as np
import pytest

import posenc
from posenc._checks import MAX_ELEMENTS

from . import registry as R
from ._fuzz import COUNTS, time_limit
from .findings import OPEN, is_open

#: (name, request) -> (open finding, whether the call may run: hangs do not)
HUGE_FINDINGS: dict[tuple[str, int], tuple[str, bool]] = {
    # ("binary", 0): ("P3", True),  -- example
}


def _param(name: str, i: int):
    fid, run = HUGE_FINDINGS.get((name, i), (None, True))
    marks = ()
    if fid is not None and is_open(fid):
        marks = pytest.mark.xfail(strict=True, run=run, reason=f"{fid}: {OPEN[fid]}")
    return pytest.param(name, i, marks=marks, id=f"{name}-{i}")


HUGE = [_param(name, i) for name in sorted(R.REGISTRY) for i in range(len(R.REGISTRY[name].huge))]
PEAK_LIMIT = 64 * 2**20
TIME_LIMIT = 2.0


def test_limit_value():
    assert MAX_ELEMENTS == 2**40


def test_every_allocating_function_has_a_huge_request():
    missing = sorted(n for n, spec in R.REGISTRY.items() if not spec.huge and spec.no_allocation is None)
    assert not missing, f"functions with neither a request above MAX_ELEMENTS nor a no_allocation reason: {missing}"
    both = sorted(n for n, spec in R.REGISTRY.items() if spec.huge and spec.no_allocation is not None)
    assert not both, f"functions with huge requests and a no_allocation reason (drop the reason): {both}"


def _run(fn, args, kwargs, what):
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with time_limit(30.0, what), pytest.raises((ValueError, TypeError, MemoryError, OverflowError)) as info:
            fn(*args, **kwargs)
    finally:
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return info.value, elapsed, peak


@pytest.mark.parametrize("name,i", HUGE)
def test_huge_request_fails_fast(name, i):
    fn = R.resolve_name(name)
    args, kwargs = R.REGISTRY[name].huge[i]()
    what = f"{name} huge request {i}"
    exc, elapsed, peak = _run(fn, args, kwargs, what)
    assert isinstance(exc, ValueError), f"{what}: {type(exc).__name__}: {exc} (expected a ValueError naming the limit)"
    assert "2**40" in str(exc), f"{what}: the error does not name the limit 2**40: {exc}"
    assert elapsed < TIME_LIMIT, f"{what}: took {elapsed:.2f} s to refuse"
    assert peak < PEAK_LIMIT, f"{what}: {peak / 2**20:.0f} MiB allocated before refusing"
    COUNTS["huge-requests"] += 1


def _is_creation(request) -> bool:
    """A request of Python values only (sizes, shapes, options): no array to
    take the namespace from, so ``xp=`` chooses it."""
    args, kwargs = request()
    return not any(isinstance(v, np.ndarray) for v in (*args, *kwargs.values()))


#: every huge creation request of a function that takes ``xp``
CREATION = [
    pytest.param(name, i, id=f"{name}-{i}")
    for name in sorted(R.REGISTRY)
    if "xp" in inspect.signature(R.resolve_name(name)).parameters
    for i, request in enumerate(R.REGISTRY[name].huge)
    if _is_creation(request)
]


@pytest.mark.parametrize("name,i", CREATION)
@pytest.mark.parametrize("backend", ["torch", "jax", "array_api_strict", "dask.array"])
def test_huge_request_on_other_backends(name, i, backend):
    """The size check comes before anything touches the backend."""
    mod = pytest.importorskip(backend)
    if backend == "jax":
        import jax.numpy as mod
    fn = R.resolve_name(name)
    args, kwargs = R.REGISTRY[name].huge[i]()
    t0 = time.perf_counter()
    with time_limit(30.0, name), pytest.raises(ValueError, match=r"2\*\*40"):
        fn(*args, **kwargs, xp=mod)
    assert time.perf_counter() - t0 < TIME_LIMIT
    COUNTS["huge-requests"] += 1


def test_limit_boundary_is_exact():
    """Exactly 2**40 values pass the size check (so the limit is the documented
    one, not an approximation); one more row does not."""
    from posenc import _checks

    _checks.check_size((2**20, 2**20), "table")
    with pytest.raises(ValueError, match=r"2\*\*40"):
        _checks.check_size((2**20 + 1, 2**20), "table")


def test_huge_broadcast_views_are_refused_without_reading():
    """A zero-stride view with a huge shape holds one value: posenc must look
    at its shape, not iterate over it."""
    view = np.broadcast_to(np.arange(1.0), (2**41,))
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"2\*\*40"):
        posenc.sinusoidal(view, 2)
    assert time.perf_counter() - t0 < TIME_LIMIT
    # per-head slopes of the wrong length: the shape is refused before the
    # values are scanned (a float64 view for float32 work is checked for range)
    exc, elapsed, peak = _run(posenc.alibi_bias, (1, 0), {"slopes": view, "dtype": "float32"}, "alibi_bias slopes")
    assert isinstance(exc, ValueError) and "`slopes` must have shape (num_heads,) = (1,)" in str(exc), exc
    assert elapsed < TIME_LIMIT and peak < PEAK_LIMIT
