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

import time
import tracemalloc

import numpy as np
import pytest

import posenc
from posenc._checks import MAX_ELEMENTS

from . import registry as R
from ._fuzz import COUNTS, time_limit
from .findings import OPEN, is_open

#: registered names that allocate nothing proportional to their arguments
NO_ALLOCATION = {
    "scaling.Scaling": "a configuration class",
    "scaling.Linear": "a configuration object",
    "scaling.NTK": "a configuration object",
    "scaling.DynamicNTK": "a configuration object",
    "scaling.YaRN": "a configuration object",
    "scaling.Llama3": "a configuration object",
    "scaling.LongRoPE": "a configuration object (its factor lists are the user's)",
    "scaling.Proportional": "a configuration object",
    "scaling.from_hf": "reads a config dict",
    "posenc_viz.to_numpy": "copies the user's array; no table of its own",
    "posenc_viz.paper_style": "matplotlib settings",
    "posenc_viz.figsize": "two floats",
    "posenc_viz.figure_set": "sizes capped by its own limits (MAX_DIM, MAX_LENGTH), checked by the fuzz suite",
    "posenc_viz.plot_encoding": "draws the user's table",
    "posenc_viz.plot_dimensions": "draws the user's table",
    "posenc_viz.plot_similarity": "the similarity of the user's table (posenc.similarity checks its size)",
    "posenc_viz.plot_similarity_by_offset": "tables come from posenc calls, which check their sizes",
    "posenc_viz.plot_wavelengths": "tables come from posenc calls, which check their sizes",
    "posenc_viz.plot_rope_scaling": "tables come from posenc calls, which check their sizes",
    "posenc_viz.plot_bias": "draws the user's bias",
    "posenc_viz.load_table": "reads the user's file (its arrays are the file's)",
    "posenc_viz.plot_grid_similarity": "the similarity maps of the user's table (one per patch, of the grid's size)",
}

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
    missing = sorted(n for n, spec in R.REGISTRY.items() if not spec.huge and n not in NO_ALLOCATION)
    assert not missing, f"functions without a request above MAX_ELEMENTS in the registry: {missing}"
    both = sorted(n for n, spec in R.REGISTRY.items() if spec.huge and n in NO_ALLOCATION)
    assert not both, f"NO_ALLOCATION lists functions that have huge requests: {both}"


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


@pytest.mark.parametrize(
    "name,args,kwargs",
    [
        ("sinusoidal", (2**30, 2**11), {}),
        ("rope_cos_sin", (2**30, 2**12), {}),
        ("learned_table", (2**30, 2**11), {}),
        ("relative_positions", (2**21, 2**21), {}),
        ("t5_buckets", (2**21, 2**21), {}),
        ("alibi_bias", (2**10, 2**16, 2**16), {}),
        ("sincos_grid", ((2**15, 2**15), 2**12), {}),
        ("axial_rope_cos_sin", ((2**15, 2**15), 2**12), {}),
        ("gaussian_matrix", (2**30, 2**11), {"scale": 1.0}),
    ],
)
@pytest.mark.parametrize("backend", ["torch", "jax", "array_api_strict", "dask.array"])
def test_huge_request_on_other_backends(name, args, kwargs, backend):
    """The size check comes before anything touches the backend."""
    mod = pytest.importorskip(backend)
    if backend == "jax":
        import jax.numpy as mod
    fn = getattr(posenc, name)
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
