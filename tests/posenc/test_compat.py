"""The plumbing of the hot path: cached resolution and validation never change
what a call accepts, and the host-constant mark is torch's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import posenc
from posenc import _cache, _compat, _rope, _trace
from posenc._compat import Backend


def test_host_constant_sets_torchs_mark():
    """posenc marks host functions without importing torch; the mark must be
    the one torch.compiler.assume_constant_result sets."""
    torch = pytest.importorskip("torch")

    def f():
        return 1

    marked = torch.compiler.assume_constant_result(f)
    flags = {k for k, v in vars(marked).items() if v is True}
    wrapped = _trace.host_constant(lambda: 1)
    assert flags <= {k for k, v in vars(wrapped.__wrapped_host__).items() if v is True}
    assert not any(v is True for v in vars(wrapped).values() if not callable(v))


def test_cached_contexts_still_refuse_mixed_namespaces_and_devices():
    torch = pytest.importorskip("torch")
    x = np.zeros((3, 4))
    ctx = _compat.resolve({"x": x})
    assert _compat.resolve({"x": x}) is ctx  # one lookup per (type, dtype, device)
    with pytest.raises(TypeError, match="namespace"):
        _compat.resolve({"x": x, "y": torch.zeros(2)})
    with pytest.raises(ValueError, match="device"):
        _compat.resolve({"x": torch.zeros(2), "y": torch.zeros(2, device="meta")})


def test_cached_contexts_compare_no_dtypes_across_libraries():
    """A requested dtype of another library, after a cached context with
    NumPy's equal-hashing dtype, is refused as such: the lookup compares the
    dtypes' types first (array-api-strict warns when its dtype is compared
    with NumPy's, an error where warnings are errors)."""
    xs = pytest.importorskip("array_api_strict")
    x = np.zeros((3, 1), np.float32)
    _cache.clear()
    posenc.sinusoidal(x[:, 0], 4, dtype=np.dtype("float32"))
    assert hash(xs.float32) == hash(np.dtype("float32"))  # (the collision this guards against)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TypeError, match="`dtype` must be a real floating dtype of array_api_compat.numpy"):
            posenc.sinusoidal(x[:, 0], 4, dtype=xs.float32)
        with pytest.raises(TypeError, match="`dtype` must be a real floating dtype of array_api_compat.numpy"):
            posenc.rope_axes_cos_sin(x, [2], dtype=xs.float32)


def test_cached_plans_keep_every_check():
    """A plan cached for one call never admits a call that differs only in
    an argument's type (4 vs 4.0, 1 vs True) or an array's shape or dtype."""
    x = np.zeros((2, 3, 5, 8))
    cos, sin = posenc.rope_cos_sin(5, 8)
    posenc.apply_rope(x, cos, sin, rotary_dim=8)
    with pytest.raises(TypeError, match="rotary_dim"):
        posenc.apply_rope(x, cos, sin, rotary_dim=8.0)
    pid = np.zeros((2, 5), np.int64)
    c2, s2 = posenc.rope_cos_sin(pid, 8)
    posenc.apply_rope(x, c2, s2, heads_axis=1)
    with pytest.raises(TypeError, match="heads_axis"):
        posenc.apply_rope(x, c2, s2, heads_axis=True)
    with pytest.raises(TypeError, match="dtype"):
        posenc.apply_rope(x.astype(np.int64), cos, sin)
    posenc.rope_cos_sin(np.arange(4), 8)
    with pytest.raises(TypeError, match="dim"):
        posenc.rope_cos_sin(np.arange(4), 8.0)
    with pytest.raises(ValueError, match="positions"):
        posenc.rope_cos_sin(np.array([0.0, np.nan]), 8)
    assert len(_rope.APPLY_PLANS) > 0 and len(_rope.TABLE_PLANS) > 0


def test_namespace_kind():
    import array_api_compat.numpy as anp

    assert _compat.backend_of(np) is Backend.NUMPY and _compat.backend_of(anp) is Backend.NUMPY
    assert _compat.backend_of(object()) is Backend.OTHER


def test_default_dtype():
    import array_api_compat.numpy as xp

    assert _compat.default_dtype(xp, None, "real floating") == xp.float64
    assert _compat.default_dtype(xp, None, "indexing") == xp.int64
    xs = pytest.importorskip("array_api_strict")
    assert _compat.default_dtype(xs, None, "real floating") == xs.float64
    assert _compat.default_dtype(xs, xs.Device("no_float64"), "real floating") == xs.float32
    torch = pytest.importorskip("torch")
    import array_api_compat.torch as tns

    assert _compat.default_dtype(tns, torch.device("cpu"), "real floating") == torch.get_default_dtype()
    assert _compat.default_dtype(tns, torch.device("cpu"), "integral") == torch.int64


def test_remember_drops_the_oldest_entry(monkeypatch):
    cache = _cache.Memo("test.remember", 3)
    try:
        for i in range(5):
            cache.put(i, str(i))
        assert list(cache) == [2, 3, 4]
    finally:
        del _cache.CACHES[cache.name]
    # apply_rope's plans: a model meeting ever new shapes keeps its latest ones
    _rope.APPLY_PLANS.clear()
    monkeypatch.setattr(_rope.APPLY_PLANS, "limit", 4)
    c = np.ones((1, 8), np.float32)
    for n in range(1, 8):
        posenc.apply_rope(np.ones((n, 8), np.float32), c, c)
    assert len(_rope.APPLY_PLANS) == 4
    key = _compat.call_key((np.ones((7, 8), np.float32), c, c), ("half", None, False, None))
    assert key in _rope.APPLY_PLANS


def test_host_data_moves_to_the_device_unsynchronised(xp):
    """``Context.from_host`` (posenc's constants) and ``Context.asarray``
    (Python numbers and lists) put host data on the backend's device; a
    torch tensor is a copy (a later change of the host array does not reach
    it).  On the ``torch-cuda`` lane, which runs under
    ``torch.cuda.set_sync_debug_mode("error")``, neither synchronises
    (:func:`posenc._compat.torch_upload`: asynchronous copies from pinned
    memory)."""
    ctx = _compat.resolve(xp=xp.ns, device=xp.device)
    want = np.array([[0.5, -1.25, 3.0], [2.0**-20, 7.0, 1e3]])
    host = want.copy()
    got = ctx.from_host(host)
    kept = ctx.from_host(host, ctx.xp.float32, kept=True)
    if xp.family == "torch":
        host[:] = 0.0
    xp.assert_close(got, want, dtype=ctx.work)
    xp.assert_close(kept, want.astype(np.float32), dtype=ctx.xp.float32)
    xp.assert_close(ctx.asarray((0.5, 1.5), ctx.work), np.array([0.5, 1.5]), dtype=ctx.work)
    ints = ctx.asarray([[1, 2], [3, 4]])
    xp.assert_close(ints, np.array([[1, 2], [3, 4]]))
    assert _compat.is_integer_dtype(ctx.xp, ints.dtype)  # the namespace infers the dtype
    with pytest.raises(ValueError):  # a ragged list: the namespace's own error
        ctx.asarray([[1, 2], [3]])


def test_torch_float64_answer_agrees_with_the_namespace_probe():
    """torch's CPU (and CUDA) devices answer float64 without the namespace's
    probe (a tensor of each dtype made there): the same answer as the probe;
    other devices still take it."""
    torch = pytest.importorskip("torch")
    import array_api_compat.torch as xp

    devices = [torch.device("cpu"), torch.device("meta")]
    devices += [torch.device("cuda")] if torch.cuda.is_available() else []
    for dev in devices:
        assert _compat.has_float64(xp, dev) == ("float64" in _compat._real_float_dtypes(xp, dev)), dev
    probed = []
    real = _compat._real_float_dtypes
    try:
        _compat._real_float_dtypes = lambda *a: probed.append(a[1]) or real(*a)
        _compat.has_float64(xp, torch.device("cpu"))
        _compat.has_float64(xp, torch.device("meta"))
    finally:
        _compat._real_float_dtypes = real
    assert probed == [torch.device("meta")]


def test_torch_tensors_resolve_as_the_full_path_does():
    """Torch tensors on the CPU, with no ``xp``, ``device`` or ``dtype``,
    take a short path to their context (no array-api-compat lookups): the
    context the full path makes, under either default dtype; other inputs
    (other devices, mixed namespaces, a list beside a tensor) take the full
    path and its checks."""
    torch = pytest.importorskip("torch")
    import array_api_compat.torch as xp

    fields = ("xp", "device", "dtype", "work", "float64", "backend", "traced", "wide", "keeps")
    calls = []
    real = _compat._aac.array_namespace
    try:
        _compat._aac.array_namespace = lambda *a, **k: calls.append(a) or real(*a, **k)
        for default in (torch.float32, torch.float64):
            old = torch.get_default_dtype()
            torch.set_default_dtype(default)
            try:
                for arrays in ({"t": torch.zeros(3)}, {"t": torch.zeros(3, dtype=torch.bfloat16), "n": 5},
                               {"a": torch.zeros(2, dtype=torch.int64), "b": torch.ones(1), "c": None}):
                    fast = _compat._resolve(arrays, xp=None, device=None, dtype=None, float_output=True)
                    assert not calls
                    full = _compat._resolve(arrays, xp=xp, device=None, dtype=None, float_output=True)
                    assert calls
                    calls.clear()
                    assert [getattr(fast, f) for f in fields] == [getattr(full, f) for f in fields]
                    assert fast.dtype == default
            finally:
                torch.set_default_dtype(old)
        assert _compat._torch_context({"t": torch.zeros(2, device="meta")}) is None
        assert _compat._torch_context({"t": torch.zeros(2), "u": [1, 2]}) is None
        assert _compat._torch_context({"t": torch.zeros(2), "u": np.zeros(2)}) is None
        assert _compat._torch_context({"t": torch.zeros(2), "u": torch.zeros(2, device="meta")}) is None
        assert _compat._torch_context({"n": 4}) is None
    finally:
        _compat._aac.array_namespace = real
    with pytest.raises(TypeError, match="namespace"):
        _compat._resolve({"t": torch.zeros(2), "u": np.zeros(2)}, xp=None, device=None, dtype=None, float_output=True)
