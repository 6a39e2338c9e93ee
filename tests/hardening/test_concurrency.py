"""Threads and mutation: shared caches never leak between calls.

posenc caches host tables (``_angles``' ``lru_cache`` of coarse / fine
angle tables, and possibly whole results).  Eight threads calling the same
functions with many different arguments (more than the caches hold, so
entries are evicted while other threads read them) must all get exactly the
single-threaded results; and a result that the caller mutates in place must
never show up in a later call, nor alias an input.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import posenc
from tests.conftest import BackendKind

from . import registry as R
from ._fuzz import COUNTS, backend, check_result

THREADS = 8


def _calls(xp: Any) -> list[tuple[str, Callable[[], Any]]]:
    """~200 distinct calls, more keys than ``_angles``' caches hold (128)."""
    calls: list[tuple[str, Callable[[], Any]]] = []
    for n in (1, 7, 64, 100, 513):
        for dim in (2, 8, 30, 64):
            for base in (10000.0, 500.0):
                call = lambda n=n, d=dim, b=base: posenc.sinusoidal(n, d, base=b, xp=xp)  # noqa: E731
                calls.append((f"sinusoidal({n},{dim},{base})", call))
    for n in (5, 33, 200):
        for dim in (4, 16, 64):
            calls.append((f"rope_cos_sin({n},{dim})", lambda n=n, d=dim: posenc.rope_cos_sin(n, d, xp=xp)))
            yarn = lambda n=n, d=dim: posenc.rope_cos_sin(n, d, scaling=posenc.scaling.YaRN(4.0, 64), xp=xp)  # noqa: E731
            calls.append((f"rope_cos_sin({n},{dim},yarn)", yarn))
            offset = lambda n=n, d=dim: posenc.sinusoidal(xp.arange(1000, 1000 + n), d)  # noqa: E731
            calls.append((f"sinusoidal(arange(1000,1000+{n}),{dim})", offset))
    for q in (3, 17):
        calls.append((f"t5_buckets({q})", lambda q=q: posenc.t5_buckets(q, 2 * q, xp=xp)))
        calls.append((f"alibi_bias({q})", lambda q=q: posenc.alibi_bias(5, q, xp=xp)))
        calls.append((f"relative_sinusoidal({q})", lambda q=q: posenc.relative_sinusoidal(q, dim=8, xp=xp)))
        calls.append((f"sincos_grid({q})", lambda q=q: posenc.sincos_grid((q, 3), 8, xp=xp)))
        calls.append((f"frequencies({q})", lambda q=q: posenc.frequencies(2 * q, xp=xp)))
        calls.append((f"shift_matrix({q})", lambda q=q: posenc.shift_matrix(q, 8, xp=xp)))
        calls.append((f"similarity_by_offset({q})", lambda q=q: posenc.similarity_by_offset(q, 16, xp=xp)))
        calls.append((f"sines({q})", lambda q=q: posenc.sines(q, [1.0, 0.5, 0.2], xp=xp)))
    return calls


def _np(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_np(v) for v in x)
    from array_api_compat import array_namespace

    from posenc_viz import to_numpy

    if "complex" in str(x.dtype):  # rope_cache(format="complex"): its real and imaginary parts
        xp = array_namespace(x)
        return (to_numpy(xp.real(x)).copy(), to_numpy(xp.imag(x)).copy())
    return to_numpy(x).copy()


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


def _scribble(x: Any) -> None:
    """Overwrite a result in place, as a careless caller would."""
    if isinstance(x, tuple):
        for v in x:
            _scribble(v)
        return
    if isinstance(x, np.ndarray):
        if x.flags.writeable:
            x[...] = -12345
        return
    try:
        import torch
    except ImportError:  # pragma: no cover
        return
    if isinstance(x, torch.Tensor) and not x.requires_grad:
        x.fill_(-12345)


@pytest.mark.parametrize("module", ["numpy", "torch"])
def test_threads_get_the_single_threaded_results(module):
    xp = pytest.importorskip(module)
    calls = _calls(xp)
    expected = {name: _np(fn()) for name, fn in calls}
    errors: list[str] = []
    barrier = threading.Barrier(THREADS)

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(calls))
        barrier.wait()
        for _ in range(2):
            for i in order:
                name, fn = calls[i]
                try:
                    got = fn()
                    snapshot = _np(got)
                    _scribble(got)  # must not reach any other call's result
                except Exception as exc:  # noqa: BLE001 - reported below
                    errors.append(f"{name}: {type(exc).__name__}: {exc}")
                    continue
                if not _equal(snapshot, expected[name]):
                    errors.append(f"{name}: differs from the single-threaded result")
                COUNTS["threaded-calls"] += 1

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    assert not errors, f"{len(errors)} bad results, e.g. {errors[:5]}"
    # and after all that scribbling, fresh calls are still right
    for name, fn in calls:
        assert _equal(_np(fn()), expected[name]), f"{name}: changed after the threaded run"


MUTATION_BACKENDS = (BackendKind.NUMPY, BackendKind.TORCH)
ARRAY_NAMES = [
    n
    for n in sorted(R.REGISTRY)
    if not R.REGISTRY[n].viz
    and not n.startswith("scaling.")
    and R.REGISTRY[n].family not in ("caches", "audit")
    and R.REGISTRY[n].function is None
]
SEEDED = {"learned_table", "gaussian_matrix"}


@pytest.mark.parametrize("name", ARRAY_NAMES)
def test_mutating_a_result_never_changes_a_later_call(name):
    """Call, copy, scribble over the result in place, call again: the second
    result equals the copy (no cached buffer is handed out), and the inputs
    are unchanged (the result does not alias them)."""
    spec = R.REGISTRY[name]
    fn = R.resolve_name(name)
    kinds = [k for k in MUTATION_BACKENDS if spec.backends is None or k in spec.backends]
    bes = [b for b in (backend(k) for k in kinds) if b is not None]

    @settings(
        max_examples=6,
        deadline=None,
        database=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        be = data.draw(st.sampled_from(bes), label="backend")
        case = spec.valid(data.draw, be)
        kwargs = dict(case.kwargs)
        if name in SEEDED:
            kwargs["seed"] = 7
        inputs = [_np(a) for a in (*case.args, *kwargs.values()) if _is_arr(a)]
        first = fn(*case.args, **kwargs)
        check_result(case, first, name)
        copy = _np(first)
        _scribble(first)
        second = fn(*case.args, **kwargs)
        assert _equal(_np(second), copy), f"{name}: a mutated result changed the next call's result"
        after = [_np(a) for a in (*case.args, *kwargs.values()) if _is_arr(a)]
        for a, b in zip(inputs, after):
            assert _equal(a, b), f"{name}: scribbling over the result changed an input (the result aliases it)"
        COUNTS["mutation-calls"] += 2

    run()


def _is_arr(x: Any) -> bool:
    from posenc._compat import is_array

    return is_array(x) and not isinstance(x, type)
