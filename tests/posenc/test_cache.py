"""The table cache, the NumPy / torch-CPU fast path and the row-chunked Dask tables.

* a repeated identical call returns the same values, and mutating what a call
  returned never changes what a later call returns (on every backend);
* the fast path is bit-identical to the portable Array API path, for every
  layout, odd dims, offsets and step sizes of its row loop;
* Dask tables are lazy, chunked along the rows and equal bit for bit to the
  eager NumPy rows;
* the cache is bounded (byte budget, LRU eviction, oversized tables not kept)
  and safe to use from several threads.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import posenc
from posenc import _angles, _cache, _compat


def ref_table(pos, dim, base=10000.0, layout="interleaved"):
    """float64 oracle written from the paper: sin/cos(p * base**(-2i/d))."""
    pos = np.asarray(pos, dtype=np.float64)
    w = base ** (-2.0 * np.arange(dim // 2) / dim)
    a = pos[..., None] * w
    s, c = np.sin(a), np.cos(a)
    if layout == "interleaved":
        out = np.stack([s, c], axis=-1).reshape(pos.shape + (2 * (dim // 2),))
    else:
        out = np.concatenate([s, c], axis=-1)
    if dim % 2:
        out = np.concatenate([out, np.zeros(pos.shape + (1,))], axis=-1)
    return out


@pytest.fixture(autouse=True)
def fresh_cache():
    _cache.clear()
    yield
    _cache.clear()


def _mutate(xp, arr):
    """Try to overwrite ``arr`` in place the way a user would; True if it worked."""
    if not xp.has_values:
        return False
    if xp.name.startswith("torch"):
        arr.fill_(123.0)
        return True
    if xp.name.startswith("jax") or xp.name == "dask":
        return False  # immutable / lazy: nothing to overwrite
    if xp.name == "numpy":
        with pytest.raises(ValueError, match="read-only"):
            arr[0, 0] = 123.0
        # the caller's own read-only copy: made writable, written (torch.from_numpy would write it too)
        arr.setflags(write=True)
        arr[0, 0] = 123.0
        return True
    arr[0, ...] = xp.asarray(np.full(arr.shape[1:], 123.0), dtype=str(arr.dtype).split(".")[-1])
    return True


# ---------------------------------------------------------------- repeat + mutation
@pytest.mark.parametrize("dtype", ["float32", None])
def test_repeat_and_mutation(xp, dtype):
    dt = None if dtype is None else xp.dtype(dtype)
    kw = dict(dtype=dt, xp=xp.ns, device=xp.device)
    expected = ref_table(np.arange(40), 12)
    first = xp.call(posenc.sinusoidal, 40, 12, **kw)
    xp.assert_close(first, expected, atol=xp.tol(dt))
    changed = _mutate(xp, first)
    second = xp.call(posenc.sinusoidal, 40, 12, **kw)
    xp.assert_close(second, expected, atol=xp.tol(dt))
    changed = _mutate(xp, second) or changed
    third = xp.call(posenc.sinusoidal, 40, 12, **kw)
    xp.assert_close(third, expected, atol=xp.tol(dt))
    if changed:  # the mutation really happened, on the arrays handed out
        assert float(xp.to_numpy(first)[0, 0]) == 123.0
    if xp.has_values and not xp.lazy and not xp.jit:
        if _written_on_device(xp, dt):  # each call's table from one launch: nothing kept
            assert len(_cache.TABLES) == 0 and _cache.TABLES.hits == 0
        else:
            assert _cache.TABLES.hits >= 2  # the repeated calls came from the cache


def _written_on_device(xp, dt) -> bool:
    """Whether this backend's ``sinusoidal(n)`` is written by a one-launch
    device kernel (a GPU with Triton; the ``torch-device`` lane)."""
    from posenc import _compat, _kernels

    ctx = _compat.resolve(None, xp=xp.ns, device=xp.device, dtype=dt)
    return _kernels.device_table(ctx, "interleaved") is not None


def test_numpy_tables_read_only_on_first_call():
    pe = posenc.sinusoidal(8, 4)
    assert not pe.flags.writeable
    assert pe.copy().flags.writeable
    np.testing.assert_allclose(pe, ref_table(np.arange(8), 4), atol=1e-15)
    # array positions are not cached and stay writable
    pa = posenc.sinusoidal(np.arange(8), 4)
    assert pa.flags.writeable
    pa[0, 0] = 5.0
    np.testing.assert_allclose(posenc.sinusoidal(np.arange(8), 4), ref_table(np.arange(8), 4), atol=1e-15)


def test_torch_copies_are_independent():
    torch = pytest.importorskip("torch")
    a = posenc.sinusoidal(16, 8, xp=torch, dtype=torch.float32)
    b = posenc.sinusoidal(16, 8, xp=torch, dtype=torch.float32)
    assert a.data_ptr() != b.data_ptr()
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    # a buffer loaded from a checkpoint writes in place: the cache must not see it
    module = torch.nn.Module()
    module.register_buffer("pe", b)
    module.load_state_dict({"pe": torch.zeros(16, 8)})
    assert float(b.abs().sum()) == 0.0
    c = posenc.sinusoidal(16, 8, xp=torch, dtype=torch.float32)
    torch.testing.assert_close(c, a, rtol=0, atol=0)
    # writes through NumPy, in-place ops and views of the tensor stay private too
    c.numpy()[0, 1] = 5.0
    d = posenc.sinusoidal(16, 8, xp=torch, dtype=torch.float32)
    d[1:3].mul_(0.0)
    d.view(-1)[-1] = 9.0
    e = posenc.sinusoidal(16, 8, xp=torch, dtype=torch.float32)
    torch.testing.assert_close(e, a, rtol=0, atol=0)
    assert float(c[0, 1]) == 5.0 and float(d[1].abs().sum()) == 0.0 and float(d[-1, -1]) == 9.0
    # autograd on a returned table
    e.requires_grad_(True)
    (2.0 * e).sum().backward()
    assert float(e.grad.sum()) == 2.0 * 16 * 8


def test_add_sinusoidal_reuses_the_table_without_leaking_it(xp):
    if not xp.has_values:
        pytest.skip("no values")
    x = xp.asarray(np.zeros((2, 5, 6)))
    first = xp.call(posenc.add_sinusoidal, x, offset=3)
    second = xp.call(posenc.add_sinusoidal, x, offset=3)
    expected = np.broadcast_to(ref_table(np.arange(3, 8), 6), (2, 5, 6))
    xp.assert_close(first, expected, atol=xp.tol())
    xp.assert_close(second, expected, atol=xp.tol())
    if xp.name == "numpy":
        first[...] = 7.0  # the sum is a new, writable array
        np.testing.assert_allclose(posenc.add_sinusoidal(np.zeros((2, 5, 6)), offset=3), expected, atol=1e-15)


def test_keys_separate_dtype_layout_and_arguments():
    a = posenc.sinusoidal(10, 6, dtype=np.float32)
    b = posenc.sinusoidal(10, 6, dtype=np.float64)
    c = posenc.sinusoidal(10, 6, layout="concat")
    d = posenc.sinusoidal(10, 6, base=100.0)
    e = posenc.sinusoidal(11, 6)
    assert a.dtype == np.float32 and b.dtype == np.float64
    np.testing.assert_allclose(c, ref_table(np.arange(10), 6, layout="concat"), atol=1e-15)
    np.testing.assert_allclose(d, ref_table(np.arange(10), 6, base=100.0), atol=1e-15)
    assert e.shape == (11, 6)
    assert len(_cache.TABLES) == 5


def test_keys_separate_devices():
    st_ = pytest.importorskip("array_api_strict")
    d1 = st_.Device("device1")
    a = posenc.sinusoidal(6, 4, xp=st_)
    b = posenc.sinusoidal(6, 4, xp=st_, device=d1)
    assert a.device != d1 and b.device == d1
    c = posenc.sinusoidal(6, 4, xp=st_)
    assert c.device == a.device


def test_torch_default_device_is_part_of_the_key():
    torch = pytest.importorskip("torch")
    a = posenc.sinusoidal(6, 4, xp=torch)
    with torch.device("meta"):
        b = posenc.sinusoidal(6, 4, xp=torch)
    assert a.device.type == "cpu" and b.device.type == "meta"


# ---------------------------------------------------------------- bounded + threads
def test_lru_budget_and_eviction():
    lru = _cache.LRU(1000)
    assert lru.put("a", 1, 200) and lru.put("b", 2, 200)
    assert not lru.put("huge", 3, 251)  # above a quarter of the budget
    assert lru.get("huge") is None
    for k in "cdef":
        lru.put(k, k, 200)
    assert lru.nbytes <= 1000 and len(lru) == 5
    lru.get("b")  # b is now the most recently used
    lru.put("g", "g", 200)
    assert lru.get("a") is None and lru.get("c") is None and lru.get("b") == 2
    lru.set_max_bytes(400)
    assert lru.nbytes <= 400 and len(lru) == 2
    lru.clear()
    assert len(lru) == 0 and lru.nbytes == 0


def test_torch_tables_too_large_for_the_cache():
    torch = pytest.importorskip("torch")
    old = _cache.TABLES.max_bytes
    try:
        _cache.set_max_bytes(4 * 50 * 8 * 4 - 4)  # a 50 x 8 float32 table is just too large
        a = posenc.sinusoidal(50, 8, xp=torch, dtype=torch.float32)
        b = posenc.sinusoidal(50, 8, xp=torch, dtype=torch.float32)
        assert len(_cache.TABLES) == 0 and a.data_ptr() != b.data_ptr()
        a.add_(1.0)
        torch.testing.assert_close(
            b, torch.from_numpy(ref_table(np.arange(50), 8).astype(np.float32)), rtol=0, atol=2.5e-7
        )
    finally:
        _cache.set_max_bytes(old)


def test_large_tables_are_not_kept():
    old = _cache.TABLES.max_bytes
    try:
        # what one 100 x 64 float32 table and its key (the frequencies' bytes) take in the cache
        posenc.clear_caches()
        posenc.sinusoidal(100, 64, dtype=np.float32)
        entry = _cache.TABLES._bytes
        assert 100 * 64 * 4 < entry < 100 * 64 * 4 + 2048  # the key: 32 frequencies, their rests and turns
        # a quarter of the budget: that entry, not 101 rows
        _cache.set_max_bytes(4 * entry)
        posenc.sinusoidal(100, 64, dtype=np.float32)
        assert len(_cache.TABLES) == 1
        posenc.sinusoidal(101, 64, dtype=np.float32)
        assert len(_cache.TABLES) == 1
        _cache.set_max_bytes(0)  # disabled
        pe = posenc.sinusoidal(7, 4)
        assert not pe.flags.writeable and len(_cache.TABLES) == 0
    finally:
        _cache.set_max_bytes(old)


def test_threads_get_the_same_tables():
    expected = ref_table(np.arange(300), 32)
    errors: list[float] = []

    def work(i: int) -> None:
        for _ in range(5):
            n = 300 - (i % 3)
            pe = posenc.sinusoidal(n, 32, dtype=np.float32)
            errors.append(float(np.abs(pe - expected[:n]).max()))
            _cache.TABLES.set_max_bytes(_cache.TABLES.max_bytes)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 30 and max(errors) <= 2.5e-7
    assert len(_cache.TABLES) == 3


# ---------------------------------------------------------------- Dask
def test_dask_table_is_lazy_chunked_and_exact():
    da = pytest.importorskip("dask.array")
    import dask

    from tests.conftest import _forbid_compute

    for dim, layout, dtype in ((17, "interleaved", np.float32), (16, "concat", np.float64)):
        with dask.config.set({"array.chunk-size": "16KiB"}), dask.config.set(scheduler=_forbid_compute):
            t = posenc.sinusoidal(5000, dim, layout=layout, xp=da, dtype=dtype)
        assert isinstance(t, da.Array) and t.shape == (5000, dim) and t.dtype == dtype
        assert len(t.chunks[0]) > 1 and t.chunks[1] == (dim,)
        assert max(t.chunks[0]) * dim * np.dtype(dtype).itemsize <= 16 * 2**10
        eager = posenc.sinusoidal(5000, dim, layout=layout, dtype=dtype)
        np.testing.assert_array_equal(t.compute(), eager)
        # a reduction chunk by chunk gives the eager checksum
        assert float(t.sum(dtype=np.float64).compute()) == pytest.approx(float(eager.sum(dtype=np.float64)), rel=1e-12)
    # same arguments, same graph keys (deterministic names)
    assert posenc.sinusoidal(100, 8, xp=da).name == posenc.sinusoidal(100, 8, xp=da).name
    assert posenc.sinusoidal(100, 8, xp=da).name != posenc.sinusoidal(100, 8, xp=da, layout="concat").name


def test_dask_sincos_range_is_chunked_and_exact():
    da = pytest.importorskip("dask.array")
    import dask

    w = posenc.frequencies(24)
    with dask.config.set({"array.chunk-size": "8KiB"}):
        s, c = _angles.sincos_range(12345, 4000, w, _compat.resolve(xp=da))
    assert len(s.chunks[0]) > 1
    s0, c0 = _angles.sincos_range(12345, 4000, w, _compat.resolve())
    np.testing.assert_array_equal(s.compute(), s0)
    np.testing.assert_array_equal(c.compute(), c0)


def test_dask_float16_and_add_sinusoidal():
    da = pytest.importorskip("dask.array")
    t = posenc.sinusoidal(50, 8, xp=da, dtype=np.float16)
    assert t.dtype == np.float16
    np.testing.assert_allclose(t.compute(), ref_table(np.arange(50), 8), atol=2**-11)
    x = da.zeros((3, 50, 8), chunks=(1, 25, 8), dtype=np.float32)
    y = posenc.add_sinusoidal(x, offset=2)
    np.testing.assert_allclose(y.compute()[1], ref_table(np.arange(2, 52), 8), atol=2.5e-7)


def test_torch_cpu_sincos_range_equals_the_portable_formula():
    torch = pytest.importorskip("torch")
    w = posenc.frequencies(48)
    for start, n in ((0, 4096), (7, 1000), (10**6, 333)):
        block, nq = _angles.range_split(n)
        tabs = _angles.range_tables(start, nq, block, _angles.as_freqs(w).key)
        for dt in (torch.float32, torch.float64):
            s, c = _angles.sincos_range(start, n, w, _compat.resolve(xp=torch, dtype=dt))
            sq, cq, sr, cr = (torch.as_tensor(np.array(t), dtype=dt) for t in tabs)
            s0 = (sq[:, None, :] * cr[None] + cq[:, None, :] * sr[None]).reshape(-1, w.shape[0])[:n]
            c0 = (cq[:, None, :] * cr[None] - sq[:, None, :] * sr[None]).reshape(-1, w.shape[0])[:n]
            assert s.dtype == dt and s.shape == (n, w.shape[0])
            torch.testing.assert_close(s, s0, rtol=0, atol=0)
            torch.testing.assert_close(c, c0, rtol=0, atol=0)
    with torch.device("meta"):  # not on the CPU: the portable path, on that device
        s, _ = _angles.sincos_range(0, 10, w, _compat.resolve(xp=torch))
    assert s.device.type == "meta"


def test_memos_are_bounded_in_bytes():
    """Plans, frequencies and device constants grow with ``dim``: 40 calls with
    ``dim = 2**20`` kept 3 GB in the memos.  Each memo keeps at most its byte
    budget (here lowered to 256 KiB), measured by what emptying it frees."""
    import gc
    import tracemalloc

    torch = pytest.importorskip("torch")
    gc.collect()
    memos = [c for c in _cache.CACHES.values() if isinstance(c, _cache.Memo)]
    old = [m.max_bytes for m in memos]
    posenc.clear_caches()
    tracemalloc.start()
    try:
        for m in memos:
            m.max_bytes = 2**18
        for i in range(6):
            d = 2**14 + 2 * i  # 64 KiB of frequencies, 128 KiB of angles per configuration
            posenc.rope_cos_sin(np.arange(3), d)
            posenc.rope_cos_sin(1, d, xp=torch)
            posenc.sinusoidal(np.arange(3), d)
            posenc.timestep_embedding(np.arange(3.0), d)
            posenc.timestep_embedding(torch.arange(3.0), d)
        for m in memos:
            assert m.nbytes <= m.max_bytes, m
            before = tracemalloc.get_traced_memory()[0]
            m.clear()
            freed = before - tracemalloc.get_traced_memory()[0]
            assert freed <= 1.25 * 2**18, (m.name, freed)
    finally:
        tracemalloc.stop()
        for m, b in zip(memos, old):
            m.max_bytes = b
        posenc.clear_caches()


def test_sizeof_counts_the_arrays_behind_array_free_types():
    """A memo entry's size: the arrays it holds, at any depth; the types met
    without arrays (dtypes, devices, contexts, enumerations) are remembered
    and skipped on later walks, which still find every array."""
    torch = pytest.importorskip("torch")
    ctx = _compat.resolve({"t": np.zeros(3)})
    assert _cache.sizeof(ctx) == 0
    a, t = np.zeros(10), torch.zeros(10, dtype=torch.float32)
    entry = (torch.float32, torch.device("cpu"), ctx, _compat.Backend.TORCH, a, [t], {"k": (t, b"12345")})
    for _ in range(2):  # the second walk takes the shortcut of the learned types
        assert _cache.sizeof(entry) == 80 + 40 + 40 + 5
