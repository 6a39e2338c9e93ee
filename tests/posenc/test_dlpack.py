"""posenc's Triton kernels for CuPy arrays, through DLPack
(posenc/_kernels/dlpack.py), proven on the CPU.

The route is namespace-generic: an array with ``__dlpack__`` in, a torch
view of it, the kernel, the result viewed back through the namespace's
``from_dlpack``.  NumPy exchanges DLPack both ways on the CPU, so NumPy
arrays stand in for CuPy's here: the ``stand_in`` fixture adds NumPy to
``posenc._kernels.DLPACK`` (the namespaces that take the route) inside
``as_device()``, where host memory takes a device's decisions and the
kernels run in Triton's interpreter.  That is the one fake: every chooser
then treats NumPy arrays as it treats CuPy arrays.

What the stand-in cannot show, and a run on a GPU must: CuPy's
``__dlpack__`` / ``from_dlpack`` with CUDA streams (the kernels on CuPy's
current stream, no event, no synchronisation), the compiled kernels' bits
on CuPy memory, CuPy's host-side checks (NumPy arrays live in host memory,
so posenc still scans NumPy positions for NaN where it would not scan CuPy's),
and the copies CuPy's hand-outs launch.
"""

from __future__ import annotations

import dataclasses
import sys
import types

import numpy as np
import pytest

import posenc

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from posenc import _compat, _kernels  # noqa: E402
from posenc._cache import Share  # noqa: E402
from posenc._compat import Backend, Context  # noqa: E402
from posenc._kernels import dlpack  # noqa: E402
from posenc._kernels import triton as tk  # noqa: E402
from posenc._kernels.probes import count_launches, no_reads, warm_launches  # noqa: E402
from tests.conftest import set_sync_debug_mode  # noqa: E402

#: posenc's documented accuracy of float32 tables
BOUND = 2.5e-7


@pytest.fixture
def stand_in(monkeypatch):
    """NumPy arrays take CuPy's route (the device path, interpreted)."""
    monkeypatch.setattr(_kernels, "DLPACK", frozenset({Backend.NUMPY}))
    monkeypatch.setattr(_kernels, "_ROUTES", {})
    with _kernels.as_device():
        yield


def _portable(fn, *args, **kwargs):
    """The same call on the portable path (every chooser answers None)."""
    with _kernels.disabled():
        return fn(*args, **kwargs)


def _leaves(out):
    return out if isinstance(out, tuple) else (out,)


def _sincos64(p, m, base=10000.0):
    """float64 oracle: sin and cos of ``p * base**(-j/m)``."""
    w = base ** (-np.arange(m) / m)
    a = np.asarray(p, np.float64)[..., None] * w
    return np.sin(a), np.cos(a)


_RNG = np.random.default_rng(34)
_P = np.array([0, 1, 7, 4095, 4096, 70000, 2**20 + 3, 2**31 - 1])
_X = _RNG.standard_normal((2, 4, 8, 64)).astype(np.float32)
_C, _S = (np.asarray(a) for a in _sincos64(np.arange(8), 32))

CASES = {
    # name: (call, kernel launched, bit for bit with the portable path)
    "sinusoidal of int positions": (lambda: posenc.sinusoidal(_P, 64, dtype=np.float32), "_turns_kernel"),
    "sinusoidal of real positions": (
        lambda: posenc.sinusoidal(_P.astype(np.float32) + 0.25, 64, dtype=np.float32),
        "_turns_kernel",
    ),
    "rope_cos_sin of position ids": (lambda: posenc.rope_cos_sin(_P[None], 64, dtype=np.float32), "_turns_kernel"),
    "timestep_embedding": (
        lambda: posenc.timestep_embedding(_P[:6].astype(np.float32), 64, dtype=np.float32),
        "_turns_kernel",
    ),
    "apply_rope": (
        lambda: posenc.apply_rope(_X, *(np.concatenate([a, a], -1).astype(np.float32) for a in (_C, _S))),
        "_rotate_kernel",
    ),
    "reversed positions (a copy first)": (lambda: posenc.sinusoidal(_P[::-1], 64, dtype=np.float32), "_turns_kernel"),
    "apply_rope of a reversed x": (
        lambda: posenc.apply_rope(_X[:, ::-1], *(np.concatenate([a, a], -1).astype(np.float32) for a in (_C, _S))),
        "_rotate_kernel",
    ),
    "rope decode step": (lambda: posenc.rope(_X[:, :, :1], np.array([[70000], [5]]), heads_axis=1), "_rope_kernel"),
    "a frequency matrix": (
        lambda: posenc.rope_axes_cos_sin(_P[:6, None] * [1, -3], freqs=_X[0, :3, :5, :2], dtype=np.float32),
        "_matrix_kernel",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_kernels_run_on_the_stand_in_and_equal_the_portable_path(name, stand_in):
    call, kernel = CASES[name]
    out, launches = warm_launches(call)
    # (1) one launch of the kernel, no other work (no casts, no copies)
    assert dict(launches) == {f"triton.{kernel}": 1}, str(launches)
    # (2) the portable path's bits: the same operations in the same order
    ref = _portable(call)
    for got, want in zip(_leaves(out), _leaves(ref), strict=True):
        # (4) the caller's namespace, dtype and device, writable
        assert type(got) is np.ndarray and got.device == "cpu" and got.flags.writeable
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_the_kernels_are_exact(stand_in):
    s = posenc.sinusoidal(_P, 64, dtype=np.float32)
    s64, c64 = _sincos64(_P, 32)
    np.testing.assert_allclose(s[:, 0::2], s64, rtol=0, atol=BOUND)
    np.testing.assert_allclose(s[:, 1::2], c64, rtol=0, atol=BOUND)
    c, s = posenc.rope_cos_sin(_P[None], 64, dtype=np.float32)
    np.testing.assert_allclose(c[0, :, :32], c64, rtol=0, atol=BOUND)
    np.testing.assert_allclose(s[0, :, 32:], s64, rtol=0, atol=BOUND)


@pytest.mark.parametrize(
    ("call", "layout"),
    [
        (lambda: posenc.sinusoidal(3000, 64, dtype=np.float32), "sinusoidal"),
        (lambda: posenc.rope_cos_sin(3000, 64, dtype=np.float32), "rope"),
        (lambda: posenc.rope_cos_sin(3000, 64, dtype=np.float16), "rope"),
    ],
    ids=["sinusoidal", "rope-f32", "rope-f16"],
)
def test_tables_of_a_range_in_one_launch_and_handed_out_as_copies(call, layout, stand_in):
    with no_reads(), count_launches() as launches:
        first = call()
    assert dict(launches) == {"triton._table_kernel": 1}, str(launches)
    s64, c64 = _sincos64(np.arange(3000), 32)
    if layout == "sinusoidal":
        want = np.stack([s64, c64], -1).reshape(3000, 64)
        got = (first,)
        wants = (want,)
    else:
        got = first
        wants = (np.concatenate([c64, c64], -1), np.concatenate([s64, s64], -1))
    for g, w in zip(got, wants, strict=True):
        assert type(g) is np.ndarray and g.flags.writeable
        # the turns path of every row (the range path's products differ by
        # an ulp): within posenc's bound, or the rounding of float16
        bound = BOUND if g.dtype == np.float32 else 2.0**-11
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=0, atol=bound)
    # (4) the cached table is handed out as a copy: writing into one result
    # changes no later one
    kept = [np.array(g) for g in got]
    for g in got:
        g[...] = 7
    again = _leaves(call())
    for a, k in zip(again, kept, strict=True):
        np.testing.assert_array_equal(a, k)


def test_writing_into_a_kernel_result_changes_no_later_one(stand_in):
    c, s = posenc.rope_cos_sin(_P[None], 64, dtype=np.float32)
    kept = c.copy(), s.copy()
    c[...] = 7
    s[...] = 7
    for a, k in zip(posenc.rope_cos_sin(_P[None], 64, dtype=np.float32), kept, strict=True):
        np.testing.assert_array_equal(a, k)


def test_limits_become_nan_rows_without_a_read(stand_in):
    ids = np.array([[3, 2**32, -(2**33), 7]])
    with no_reads(), count_launches() as launches:
        c, s = posenc.rope_cos_sin(ids, 16, dtype=np.float32)
    assert launches.total() == 1, str(launches)
    assert np.isnan(c[0, 1:3]).all() and np.isnan(s[0, 1:3]).all()
    assert not np.isnan(c[0, ::3]).any()


def test_other_arrays_keep_their_lanes(monkeypatch):
    """Without the stand-in, or outside as_device, NumPy keeps its host lane;
    a mix of namespaces takes no route."""
    with _kernels.as_device(), count_launches() as launches:
        posenc.sinusoidal(_P, 64, dtype=np.float32)
    assert launches.total() == 0
    monkeypatch.setattr(_kernels, "DLPACK", frozenset({Backend.NUMPY}))
    monkeypatch.setattr(_kernels, "_ROUTES", {})
    with count_launches() as launches:
        posenc.sinusoidal(_P, 64, dtype=np.float32)
    assert launches.total() == 0  # host memory outside as_device: the NumPy lane
    ctx = _compat.resolve({"p": _P}, xp=None, device=None, dtype=np.float32)
    with _kernels.as_device():
        assert _kernels.dlpack_route(ctx, _P) is not None
        assert _kernels.dlpack_route(ctx, _P, torch.zeros(3)) is None
        assert _kernels.dlpack_route(ctx, _P, [1, 2]) is None
        with _kernels.disabled():
            assert _kernels.dlpack_route(ctx, _P) is None


# ------------------------------------------------------------------ CuPy's own checks
class _CudaArray:
    """An array as a CuPy array on CUDA device 0 shows itself to the chooser."""

    def __dlpack_device__(self):
        return (2, 0)


def _cupy_ctx():
    ns = types.ModuleType("cupy")
    ns.float32, ns.float16, ns.from_dlpack = np.float32, np.float16, np.from_dlpack
    assert _compat.backend_of(ns) is Backend.CUPY
    return Context(xp=ns, device=None, dtype=np.float32, work=np.float32, float64=True, backend=Backend.CUPY)


def test_cupy_arrays_take_the_route_where_triton_runs_on_cuda(monkeypatch):
    """The CuPy branch of the chooser, with the one answer a CPU machine
    cannot give faked: Triton available on CUDA (on a GPU machine that
    answer is already the real one)."""
    monkeypatch.setattr(_kernels, "_ROUTES", {})
    ctx, x = _cupy_ctx(), _CudaArray()
    assert Backend.CUPY in _kernels.DLPACK
    real = tk.available
    if not real("cuda"):  # here (no CUDA device): CuPy keeps the portable path
        assert _kernels.dlpack_route(ctx, x) is None
        assert _kernels.turns(x, ctx) is None
        assert _kernels.rotation(x, x, x, ctx, size=10**6, small=False) == (None, None)
    monkeypatch.setattr(tk, "available", lambda kind: kind == "cuda" or real(kind))
    route = _kernels.dlpack_route(ctx, x)
    assert route is not None and route.xp is ctx.xp and route.lane.fused and route.lane.name == "dlpack"
    assert _kernels.turns(x, ctx) is route.lane
    assert _kernels.rope_step(x, x, ctx, size=64, width=64) is route.lane
    assert _kernels.rotation(x, x, x, ctx, size=64, small=True) == (None, route.rotate_large)
    assert _kernels.device_table(ctx, "concat") is not None
    assert _kernels.device_table(ctx.with_dtype(np.float64), "concat") is None  # float64 tables: portable
    assert _kernels.gather(x, ctx, 2**20) is None  # (a fused lane computes every row)
    assert _kernels.handout(ctx) is Share.COPY
    assert _kernels.range_table(ctx) is None and _kernels.extremes(x, ctx) is None
    # host memory of a CuPy-like namespace outside as_device: no route
    host = types.SimpleNamespace(__dlpack_device__=lambda: (1, 0))
    assert _kernels.dlpack_route(ctx, host) is None
    assert _kernels.dlpack_route(dataclasses.replace(ctx, traced=True), x) is None


def test_cupy_stream_reads_the_current_stream_of_the_arrays_device(monkeypatch):
    """:func:`posenc._kernels.dlpack.cupy_stream` against a minimal stand-in
    of CuPy's stream API (current device 0, a stream per device)."""
    state = {"device": 0, "streams": {0: 0, 1: 0x5000}}

    class Device:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            self.before, state["device"] = state["device"], self.index

        def __exit__(self, *exc):
            state["device"] = self.before

    cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDevice=lambda: state["device"]),
        get_current_stream=lambda: types.SimpleNamespace(ptr=state["streams"][state["device"]]),
        Device=Device,
    )
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
    assert dlpack.cupy_stream(0) == 0
    assert dlpack.cupy_stream(1) == 0x5000
    assert state["device"] == 0  # the current device is left as it was


def test_export_asks_for_no_synchronisation():
    """The result is exported with ``stream=-1`` (the kernel ran on the
    consumer's stream): on the CPU torch takes no stream, and NumPy's view
    shares the tensor's memory."""
    t = torch.arange(6, dtype=torch.float32)
    a = np.from_dlpack(dlpack._Export(t))
    t[0] = 41.0
    assert a[0] == 41.0 and a.flags.writeable
    np.testing.assert_array_equal(a[1:], np.arange(1, 6, dtype=np.float32))


def test_views_share_the_arrays_memory_and_a_plans_turns_are_viewed_once(stand_in, monkeypatch):
    """Zero-copy: each torch view is the NumPy array's memory; a warm decode
    step views ``x`` and the positions only (the plan's turns keep theirs)."""
    seen = []
    real = torch.from_dlpack

    def spy(a):
        t = real(a)
        seen.append((a, t))
        return t

    monkeypatch.setattr(torch, "from_dlpack", spy)
    monkeypatch.setattr(_kernels, "_ROUTES", {})  # (a route made with the spy)
    x, p = _X[:, :, :1], np.array([[70000], [5]])
    posenc.rope(x, p, heads_axis=1)
    assert len(seen) == 4  # x, p and the turns (v1, v2)
    seen.clear()
    out = posenc.rope(x, p, heads_axis=1)
    assert len(seen) == 2, [a.shape for a, _ in seen]
    for a, t in seen:
        assert t.data_ptr() == a.__array_interface__["data"][0]
    assert {a.shape for a, _ in seen} == {x.shape, p.shape}
    assert not np.shares_memory(out, x)


# ------------------------------------------------------------------ CuPy on a GPU (skipped without one)
def _cupy_on_a_device():
    cupy = pytest.importorskip("cupy")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no driver
        count = 0
    if count < 1 or not tk.available("cuda"):
        pytest.skip("no CUDA device that both CuPy and torch (with triton) see")
    return cupy


def test_cupy_on_a_device_takes_the_kernels_of_cuda_tensors():
    """The route on CuPy memory: one launch, a CuPy array on the positions'
    device, the bits of the same call on a CUDA tensor, within the bound."""
    cp = _cupy_on_a_device()
    p = cp.asarray(_P)
    with count_launches() as launches:
        out = posenc.sinusoidal(p, 64, dtype="float32")
    assert launches["triton._turns_kernel"] == 1, str(launches)
    assert type(out) is cp.ndarray and out.device == p.device and out.dtype == cp.float32
    on_torch = posenc.sinusoidal(torch.as_tensor(_P, device=f"cuda:{p.device.id}"), 64, dtype=torch.float32)
    np.testing.assert_array_equal(cp.asnumpy(out), on_torch.cpu().numpy())
    s64, c64 = _sincos64(_P, 32)
    np.testing.assert_allclose(cp.asnumpy(out)[:, 0::2], s64, rtol=0, atol=BOUND)
    with _kernels.disabled():
        ref = posenc.sinusoidal(p, 64, dtype="float32")  # CuPy's portable path
    np.testing.assert_allclose(cp.asnumpy(out), cp.asnumpy(ref), rtol=0, atol=BOUND)


@pytest.mark.parametrize("stream", ["null", "new", "per-thread"])
def test_cupy_on_a_device_runs_on_cupys_current_stream(stream):
    """On CuPy's current stream (a new non-blocking one, the per-thread
    default one): the result is the portable path's on that stream, torch's
    current stream is left as it was, and torch synchronises nothing."""
    cp = _cupy_on_a_device()
    if stream == "null":
        s = cp.cuda.Stream.null
    elif stream == "new":
        s = cp.cuda.Stream(non_blocking=True)
    else:
        s = getattr(cp.cuda.Stream, "ptds", None)
        if s is None:
            pytest.skip("this CuPy has no per-thread default stream")
    before = torch.cuda.current_stream()
    with s:
        x = cp.asarray(_X)
        c = cp.asarray(np.concatenate([_C, _C], -1).astype(np.float32))
        sn = cp.asarray(np.concatenate([_S, _S], -1).astype(np.float32))
        posenc.apply_rope(x, c, sn)  # (compiles the kernels, makes the plans)
        posenc.rope_cos_sin(cp.asarray(_P)[None], 64, dtype="float32")
        set_sync_debug_mode(torch, "error")
        try:
            with count_launches() as launches:
                got = posenc.apply_rope(x, c, sn)
                table = posenc.rope_cos_sin(cp.asarray(_P)[None], 64, dtype="float32")
        finally:
            set_sync_debug_mode(torch, 0)
        with _kernels.disabled():
            want = posenc.apply_rope(x, c, sn)
            want_table = posenc.rope_cos_sin(cp.asarray(_P)[None], 64, dtype="float32")
    s.synchronize()
    assert torch.cuda.current_stream() == before
    assert launches["triton._rotate_kernel"] == 1 and launches["triton._turns_kernel"] == 1, str(launches)
    np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(want))
    for a, b in zip(table, want_table, strict=True):
        np.testing.assert_allclose(cp.asnumpy(a), cp.asnumpy(b), rtol=0, atol=BOUND)


def test_the_routes_rotations_called_directly(stand_in):
    """The small rotation (no chooser hands it out for now) and the large one
    in place: the portable rotation's bits; in place into the caller's own
    array, which is returned; a reversed ``x`` is not rotated in place."""
    ctx = _compat.resolve({"x": _X}, xp=None, device=None, dtype=None)
    route = _kernels.dlpack_route(ctx, _X)
    c, s = (np.concatenate([a, a], -1).astype(np.float32) for a in (_C, _S))
    with _kernels.disabled():
        want = posenc.apply_rope(_X, c, s)
    with no_reads(), count_launches() as launches:
        got = route.lane.rotate(_X, c, s, "half")
    assert dict(launches) == {"triton._rotate_kernel": 1}
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, want)
    x = _X.copy()
    lead = x.shape[:-1]
    same = route.rotate_large(x, c, s, "half", 64, lead, False, np.float32, inplace=True)
    assert same is x
    np.testing.assert_array_equal(x, want)
    assert route.rotate_large(_X[:, ::-1], c, s, "half", 64, lead, False, np.float32, inplace=True) is None


def test_no_route_without_torch_or_from_dlpack(stand_in, monkeypatch):
    ctx = _compat.resolve({"p": _P}, xp=None, device=None, dtype=np.float32)
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "torch", None)  # import torch fails
        assert _kernels.dlpack_route(ctx, _P) is None
    monkeypatch.setattr(_kernels, "_ROUTES", {})
    assert _kernels.dlpack_route(ctx, _P) is not None
    monkeypatch.setattr(_kernels, "DLPACK", frozenset({Backend.CUPY}))  # (CuPy's, as shipped)
    bare = types.ModuleType("cupy")  # a CuPy-like namespace without from_dlpack
    cctx = dataclasses.replace(_cupy_ctx(), xp=bare)
    real = tk.available
    monkeypatch.setattr(tk, "available", lambda kind: kind == "cuda" or real(kind))
    assert _kernels.dlpack_route(cctx, _CudaArray()) is None
    assert _kernels.dlpack_route(_cupy_ctx(), _CudaArray()) is not None
