"""Every kernel of posenc._kernels equals the portable path it replaces (the
portable path through the one switch, ``_kernels.disabled()``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc
from posenc import _angles, _cache, _compat, _kernels, _rope, _tables
from posenc._compat import Backend
from posenc.scaling import YaRN

from .test_accuracy import U
from .test_cache import ref_table
from .test_rotary import FAST_CASES, _duplicated, ref_apply, rng

torch = pytest.importorskip("torch")

BACKENDS = {"numpy": np.asarray, "torch": torch.as_tensor}


def _np(a):
    return a.detach().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)


def test_eager_kind():
    assert _kernels._eager(np.zeros(3)) is Backend.NUMPY
    assert _kernels._eager(torch.zeros(3)) is Backend.TORCH
    assert _kernels._eager(torch.nn.Parameter(torch.zeros(3))) is None  # a subclass
    assert _kernels._eager(np.float64(1.0)) is None
    assert _kernels._eager([1.0]) is None
    assert _kernels._eager(np.zeros(3), np.zeros(2)) is Backend.NUMPY  # the common kind of several
    assert _kernels._eager(np.zeros(3), torch.zeros(3)) is None
    assert _kernels._eager(torch.zeros(3), 5) is None

    @torch.compile(fullgraph=True, backend="eager")
    def traced(x):
        return x + (1.0 if _kernels.turns(x, _compat.resolve({"x": x})) is None else 2.0)

    assert _kernels.turns(torch.zeros(()), _compat.resolve(xp=torch)) is _kernels.LANES["torch-cpu"]
    assert float(traced(torch.zeros(()))) == 1.0  # never while torch traces


#: the small kernels' kinds: NumPy, torch CPU tensors through NumPy, torch's own operations
SMALL_KINDS = ["numpy", "torch-cpu", "torch"]


@pytest.mark.parametrize("kind", SMALL_KINDS)
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    ("xshape", "tshape"),
    [
        ((1, 4, 1, 16), (1, 1, 1, 16)),
        ((2, 3, 16), (3, 16)),
        ((3, 16), (2, 3, 16)),
        ((5, 8), (5, 8)),
        ((2, 0, 8), (1, 8)),
        ((4, 2), (4, 2)),
    ],
)
def test_rotate_small_equals_portable(kind, layout, dtype, xshape, tshape):
    rng = np.random.default_rng(0)
    conv = BACKENDS["numpy" if kind == "numpy" else "torch"]
    x = conv(rng.standard_normal(xshape).astype(dtype))
    c = conv(rng.standard_normal(tshape).astype(dtype))  # pairs need not hold one value
    s = conv(rng.standard_normal(tshape).astype(dtype))
    plan = _rope.apply_plan(x, c, s, layout, None, False, None)
    assert plan.small is _kernels.LANES["numpy" if kind == "numpy" else "torch-cpu"].rotate
    with _kernels.disabled():
        want = posenc.apply_rope(x, c, s, layout=layout)
    got = _kernels.LANES[kind].rotate(x, c, s, layout)
    assert type(got) is type(want) and got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(_np(got), _np(want))


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rotate_small_signed_zeros_and_specials(layout):
    """swap(x) * signed(s) is (-x2) * s1 bit for bit: signed zeros, infinities, NaN where NaN."""
    vals = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e-45], dtype=np.float32)
    x = np.array(np.meshgrid(vals, vals, vals, vals)).reshape(4, -1).T.copy()  # every (x0, x1, x2, x3)
    c = np.array([0.5, -0.0, 0.5, -0.0], dtype=np.float32)
    s = np.array([-0.0, 2.0, -0.0, 2.0], dtype=np.float32)
    with np.errstate(invalid="ignore"), _kernels.disabled():
        want = posenc.apply_rope(x, c, s, layout=layout)
    with np.errstate(invalid="ignore"):
        got = _kernels.LANES["numpy"].rotate(x, c, s, layout)
    nan = np.isnan(want)  # a NaN's sign bit carries no meaning
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.int32)[~nan], want.view(np.int32)[~nan])


# torch's forward-mode AD scripts its decompositions when first used
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_torch_cpu_kernels_step_aside_for_autodiff(layout):
    """The kernels through NumPy views leave autograd, forward-mode AD,
    functorch's transforms and negative views to torch's own operations."""
    import torch.autograd.forward_ad as fwad

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 16, generator=g, dtype=torch.float64)
    p = torch.tensor([5, 4096, 77])
    c, s = posenc.rope_cos_sin(p, 16, layout=layout, dtype=torch.float64)
    with _kernels.disabled():
        want = posenc.apply_rope(x, c, s, layout=layout)
    assert torch.equal(_kernels.LANES["torch-cpu"].rotate(x, c, s, layout), want)
    # forward mode: the tangent of a linear map is the map of the tangent
    t = torch.randn(2, 3, 16, generator=g, dtype=torch.float64)
    with fwad.dual_level():
        out = posenc.apply_rope(fwad.make_dual(x, t), c, s, layout=layout)
        primal, tangent = fwad.unpack_dual(out)
        out_rope = posenc.rope(fwad.make_dual(x, t), p, layout=layout)
        tangent_rope = fwad.unpack_dual(out_rope).tangent
    torch.testing.assert_close(primal, want, rtol=0, atol=0)
    torch.testing.assert_close(tangent, posenc.apply_rope(t, c, s, layout=layout), rtol=0, atol=0)
    assert tangent_rope is not None
    # the large fast path (out= operations) too
    big = torch.randn(1, 8, 3, 2 * _kernels.ROTATE_MIN // 24, generator=g, dtype=torch.float64)
    cb, sb = posenc.rope_cos_sin(p, big.shape[-1], layout=layout, dtype=torch.float64)
    with fwad.dual_level():
        big_tangent = fwad.unpack_dual(posenc.apply_rope(fwad.make_dual(big, big), cb, sb, layout=layout)).tangent
    # (the reference takes the fast path, whose addcmul_ may fuse: within a few ulp)
    torch.testing.assert_close(big_tangent, posenc.apply_rope(big, cb, sb, layout=layout), rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(tangent_rope, posenc.rope(t, p, layout=layout), rtol=0, atol=0)
    # functorch: vmap over a batch, and grad
    got = torch.func.vmap(lambda xi: posenc.apply_rope(xi, c, s, layout=layout))(x)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    grad = torch.func.grad(lambda xi: posenc.apply_rope(xi, c, s, layout=layout).sum())(x)
    xr = x.clone().requires_grad_(True)
    with _kernels.disabled():
        (ref,) = torch.autograd.grad(posenc.apply_rope(xr, c, s, layout=layout).sum(), xr)
    torch.testing.assert_close(grad, ref, rtol=0, atol=0)
    # a negative view
    neg = torch._neg_view(-x)
    torch.testing.assert_close(posenc.apply_rope(neg, c, s, layout=layout), want, rtol=0, atol=0)
    # tables that need grad
    cr = c.clone().requires_grad_(True)
    (gc,) = torch.autograd.grad(posenc.apply_rope(x, cr, s, layout=layout).sum(), cr)
    torch.testing.assert_close(gc, x.sum(0), rtol=0, atol=0)


def test_rotate_small_keeps_autograd():
    x = torch.randn(1, 4, 1, 16, dtype=torch.float64, requires_grad=True)
    c, s = posenc.rope_cos_sin(torch.tensor([[9]]), 16, dtype=torch.float64)
    y = posenc.apply_rope(x, c, s, heads_axis=1)
    (g,) = torch.autograd.grad(y.sum(), x)
    # d/dx of sum(x * cos + rotate_half(x) * sin): cos - sin on the first half, cos + sin on the second
    c0, s0 = c[0, 0], s[0, 0]
    want = torch.cat([c0[:8] + s0[8:], c0[8:] - s0[:8]])
    torch.testing.assert_close(g[0, :, 0], want.expand(4, 16), rtol=0, atol=1e-15)


def _same_bits_or_one_ulp(got, want, numpy_bits: bool):
    """Bit for bit where both come from NumPy's sin / cos; torch CPU tables of
    the small lane (NumPy's) against torch's own: within one ulp of the
    dtype."""
    g, w = _np(got), _np(want)
    if numpy_bits:
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g, w, rtol=0, atol=float(np.finfo(w.dtype).eps))


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(
    ("dtype", "scaling"),
    [("float32", None), ("float16", None), ("float32", YaRN(factor=4.0, original_max_positions=64))],
)
def test_small_table_equals_compact_layout(kind, layout, dtype, scaling, monkeypatch):
    """rope_cos_sin's one-pass tables of small integer arrays: bit for bit
    the compact tables laid out (the path of larger tables) and, for torch
    CPU tensors (computed through NumPy), NumPy's tables."""
    raw = np.array([[0, 1, 4096, -7], [2**31 - 1, 5, 2**32 - 3, 77]])  # float32: exact for |p| < 2**32
    p = BACKENDS[kind](raw)
    dt = getattr(np if kind == "numpy" else torch, dtype)
    _rope.TABLE_PLANS.clear()
    got = posenc.rope_cos_sin(p, 32, layout=layout, scaling=scaling, dtype=dt)
    again = posenc.rope_cos_sin(p, 32, layout=layout, scaling=scaling, dtype=dt)  # from the cached plan
    plan = next(iter(_rope.TABLE_PLANS.values()))
    assert plan.small is not None and plan.small[0] is _kernels.LANES["numpy" if kind == "numpy" else "torch-cpu"]
    host = posenc.rope_cos_sin(raw, 32, layout=layout, scaling=scaling, dtype=getattr(np, dtype))
    monkeypatch.setattr(_kernels, "SMALL_TABLE", 0)
    _rope.TABLE_PLANS.clear()
    want = posenc.rope_cos_sin(p, 32, layout=layout, scaling=scaling, dtype=dt)
    assert next(iter(_rope.TABLE_PLANS.values())).small is None
    for g, a, w, h in zip(got, again, want, host):
        assert g.dtype == w.dtype and g.shape == w.shape and type(g) is type(w)
        _same_bits_or_one_ulp(g, w, kind == "numpy")
        np.testing.assert_array_equal(_np(a), _np(g))
        np.testing.assert_array_equal(_np(g), h)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_small_equals_tables_then_apply(kind, layout, monkeypatch):
    """rope's decode-step lane (one-pass tables, then the formula): bit for
    bit rope_cos_sin + apply_rope, and rope without the lane (torch: within
    an ulp, its tables are torch's own)."""
    rng = np.random.default_rng(1)
    conv = BACKENDS[kind]
    q = conv(rng.standard_normal((2, 4, 3, 16)).astype(np.float32))
    pid = conv(np.array([[4096, 4097, 4098], [3, 2, 1]]))
    dt = np.float32 if kind == "numpy" else torch.float32
    _rope.ROPE_PLANS.clear()
    got = [posenc.rope(q, pid, layout=layout, heads_axis=1) for _ in range(2)]
    assert next(iter(_rope.ROPE_PLANS.values())).small is not None
    c, s = posenc.rope_cos_sin(pid, 16, layout=layout, dtype=dt)
    want = posenc.apply_rope(q, c, s, layout=layout, heads_axis=1)
    # no decode-step lane: the compact tables and the portable formula
    monkeypatch.setattr(_kernels, "rope_step", lambda *args, **kwargs: None)
    _rope.ROPE_PLANS.clear()
    plain = posenc.rope(q, pid, layout=layout, heads_axis=1)
    assert next(iter(_rope.ROPE_PLANS.values())).small is None
    for g in got:
        np.testing.assert_array_equal(_np(g), _np(want))
        # |q| < 5: an ulp of a table is at most 4 float32 ulp of the result
        np.testing.assert_allclose(_np(g), _np(plain), rtol=0, atol=0 if kind == "numpy" else 4e-6)


def test_call_key_types_and_tracing():
    a = np.zeros((2, 3), np.float32)
    k = _compat.call_key((a,), (4, None))
    assert k is not None and k != _compat.call_key((a,), (4.0, None)) and k != _compat.call_key((a,), (True, None))
    # unhashable: the full checks decide, nothing is kept
    before = len(_rope.APPLY_PLANS)
    assert _rope.APPLY_PLANS.get_or_make(_compat.call_key((a,), ([1],)), lambda: "made") == "made"
    assert len(_rope.APPLY_PLANS) == before
    assert _compat.call_key(([1.0],), ()) is None  # not an array
    assert _compat.call_key((a,), ()) != _compat.call_key((a.reshape(3, 2),), ())


@pytest.mark.parametrize("blocks", ["default", "tiny"])
@pytest.mark.parametrize("case", range(len(FAST_CASES)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fast_paths_equal_portable(xp, case, dtype, blocks, monkeypatch):
    """apply_rope (fast paths on NumPy and torch CPU, forced at every size)
    equals the Array API reference path, on every backend, and the float64
    formula; ``tiny`` blocks make the blocked fast paths cut every case into
    many pieces (partial leading axes, broadcast tables sliced per block)."""
    if dtype == "float64" and not xp.float64:
        pytest.skip("no float64 on this device")
    monkeypatch.setattr(_kernels, "ROTATE_MIN", 0)
    _cache.clear()  # plans keep the kernels they chose
    if blocks == "tiny":
        if xp.name not in ("numpy", "torch"):
            pytest.skip("only the NumPy and torch CPU fast paths work in blocks")
        monkeypatch.setattr(_kernels.rotations, "NP_BLOCK", 37)
        monkeypatch.setattr(_kernels.rotations, "TORCH_BLOCK", 37)
    shape, tshape, layout, rdim, transposed = FAST_CASES[case]
    r_ = shape[-1] if rdim is None else rdim
    compact = tshape[-1] == r_ // 2
    if transposed:  # a (seq, batch, d) array seen as (batch, seq, d)
        stored = rng(4).standard_normal((shape[1], shape[0], shape[2]))
        x = np.swapaxes(stored, 0, 1)
        xa = xp.ns.permute_dims(xp.asarray(stored, dtype), (1, 0, 2))
    else:
        x = rng(4).standard_normal(shape)
        xa = xp.asarray(x, dtype)
    t = rng(5).uniform(-1, 1, tshape[:-1] + (r_ // 2,))
    hc, hs = t, np.sqrt(1 - t**2)  # one value per pair
    tc, ts = (hc, hs) if compact else (_duplicated(hc, layout), _duplicated(hs, layout))
    ca, sa = xp.asarray(tc, dtype), xp.asarray(ts, dtype)
    got = xp.call(posenc.apply_rope, xa, ca, sa, layout=layout, rotary_dim=rdim, compact=compact)

    with _kernels.disabled():
        ref = xp.call(posenc.apply_rope, xa, ca, sa, layout=layout, rotary_dim=rdim, compact=compact)
    xp.check_array(got, shape=tuple(ref.shape), dtype=ref.dtype)
    if not xp.has_values:
        return
    g, r = xp.to_numpy(got), xp.to_numpy(ref)
    eps = float(np.finfo(g.dtype).eps) * float(np.abs(x).max())
    np.testing.assert_allclose(g, r, rtol=0, atol=4 * eps)
    np.testing.assert_allclose(
        g, ref_apply(x, _duplicated(hc, layout), _duplicated(hs, layout), layout, r_), atol=8 * eps
    )


def test_fast_path_is_taken():
    big = _kernels.ROTATE_MIN

    def large(x, c):
        return _kernels.rotation(x, c, c, _compat.resolve({"x": x}), size=big, small=False)[1]

    rotate_ok = _kernels.rotations.rotate_ok
    x = np.zeros((2, 4, 8), np.float32)
    c = np.ones((4, 4), np.float32)
    assert large(x, c) is _kernels.rotations.rotate_large_numpy
    assert large(x.astype(np.float16), c) is None
    t = torch.zeros(2, 4, 8)
    tc = torch.ones(4, 4)
    assert large(t, tc) is _kernels.rotations.rotate_large_torch and rotate_ok("torch", t, tc, tc)
    assert not rotate_ok("torch", t.requires_grad_(), tc, tc)
    with torch.no_grad():
        assert rotate_ok("torch", t, tc, tc)
    assert large(torch.zeros(2, 4, 8, device="meta"), tc) is None
    assert large(torch.zeros(2, 4, 8, dtype=torch.bfloat16), tc) is None


# ---------------------------------------------------------------- tables of ranges
@pytest.mark.parametrize("layout", ["interleaved", "concat"])
@pytest.mark.parametrize(("start", "n", "dim"), [(0, 1, 2), (0, 100, 16), (5, 300, 33), (10**6, 257, 64), (0, 4096, 8)])
@pytest.mark.parametrize("step_bytes", [8, 256, None])
def test_fast_path_equals_portable_path(monkeypatch, layout, start, n, dim, step_bytes):
    if step_bytes is not None:  # exercise the sub-block and the multi-block steps
        monkeypatch.setattr(_kernels.tables, "FAST_STEP_BYTES", step_bytes)
    w = posenc.frequencies(dim)
    for dt in (np.float32, np.float64):
        ctx = _compat.resolve(dtype=dt)
        fast = _tables.range_table(start, n, w, dim, layout, ctx, cache=False)
        with _kernels.disabled():
            slow = _tables.range_table(start, n, w, dim, layout, ctx, cache=False)
        assert fast.dtype == slow.dtype == dt
        np.testing.assert_array_equal(fast, slow)
        # the float64 oracle's own product p * w is off by up to ~p * 1.1e-16
        tol = 2.5e-7 if dt == np.float32 else 1e-12 + (start + n) * 2.3e-16
        assert np.abs(fast - ref_table(np.arange(start, start + n), dim, layout=layout)).max() <= tol


@pytest.mark.parametrize("layout", ["interleaved", "concat"])
@pytest.mark.parametrize("cache", [True, False])  # torch-allocated (cached) / NumPy-allocated tables
def test_torch_fast_path_equals_portable_path(layout, cache):
    torch = pytest.importorskip("torch")
    for dt in (torch.float32, torch.float64):
        ctx = _compat.resolve(xp=torch, dtype=dt)
        w = posenc.frequencies(37)
        fast = _tables.range_table(7, 1000, w, 37, layout, ctx, cache=cache)
        with _kernels.disabled():
            slow = _tables.range_table(7, 1000, w, 37, layout, ctx, cache=False)
        assert fast.dtype == slow.dtype == dt and fast.device.type == "cpu"
        torch.testing.assert_close(fast, slow, rtol=0, atol=0)
        ref = _tables.range_table(7, 1000, w, 37, layout, _compat.resolve(dtype=str(dt).split(".")[1]), cache=False)
        np.testing.assert_array_equal(fast.numpy(), ref)


def test_every_backend_matches_the_numpy_fast_path(xp):
    w = posenc.frequencies(20)
    got = xp.call(posenc.sinusoidal, 777, 20, dtype=xp.dtype("float32"), xp=xp.ns, device=xp.device)
    ref = _tables.range_table(0, 777, w, 20, "interleaved", _compat.resolve(dtype=np.float32), cache=False)
    if xp.name.startswith(("strict", "dask", "torch", "numpy")) and not (xp.device_path or xp.kind.gpu):
        xp.assert_close(got, ref, dtype=xp.dtype("float32"))  # bit for bit: same operations
    else:  # JAX/XLA may fuse a multiply-add; a device's Triton table takes the turns path (a GPU's sinf
        # within an ulp of the host's)
        xp.assert_close(got, ref, atol=xp.tol(xp.dtype("float32")), dtype=xp.dtype("float32"))


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 3000),
    dim=st.integers(1, 24),
    start=st.integers(0, 2**24),
    data=st.data(),
)
def test_rows_of_a_slice_equal_rows_of_the_full_table(n, dim, start, data):
    lo = data.draw(st.integers(0, n - 1))
    rows = data.draw(st.integers(1, n - lo))
    key = _angles.as_freqs(posenc.frequencies(dim)).key
    full = _tables._numpy_table(start, n, key, dim, "interleaved", np.dtype(np.float32))
    part = _tables._numpy_table(start, n, key, dim, "interleaved", np.dtype(np.float32), lo=lo, rows=rows)
    np.testing.assert_array_equal(part, full[lo : lo + rows])


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_take_rows_equals_portable_take(kind):
    conv = BACKENDS[kind]
    table = conv(np.arange(40.0).reshape(10, 4))
    p = conv(np.array([[3, 12], [7, 5]]))
    take = _kernels.tables.take_rows_numpy if kind == "numpy" else _kernels.tables.take_rows_torch
    got = take(table, p, 3)
    xp = _compat.resolve({"t": table}).xp
    want = xp.reshape(xp.take(table, xp.reshape(p - 3, (-1,)), axis=0), (2, 2, 4))
    np.testing.assert_array_equal(_np(got), _np(want))
    np.testing.assert_array_equal(_np(got)[0, 1], np.arange(36.0, 40.0))  # row 12 - 3


def test_turns_kernels_equal_portable(monkeypatch):
    """The kernels of the array path against the portable path.  Float
    positions: the same operations (exact reduction in turns, the float32
    angle split), bit for bit, NaN and huge positions clipped alike.  Integer
    positions on NumPy / torch CPU memory: the int64 fixed-point reduction,
    within one float32 ulp of the portable path and within posenc's bound of
    the exact values; torch's own operations (autograd): bit for bit."""
    from benchmarks.accuracy import exact_angle_sincos

    w = posenc.frequencies(96)
    fr = _angles.as_freqs(w)
    ints = np.r_[np.arange(-70_000, 70_000, 37), 2**31 - 1, -(2**31) + 1, 123_456_789]
    floats = np.r_[np.linspace(-3e6, 3e6, 1001), np.nan, np.inf, -1e300, 2.5].astype(np.float64)
    cases = [ints, ints[None, :8], np.array([7]), np.array([[2**31 - 1]]), floats, floats[:-2].astype(np.float32)]
    cases += [torch.from_numpy(c) for c in cases]

    def portable(p, ctx):
        with _kernels.disabled():
            return _angles.sincos(p, fr, ctx)

    for p in cases:
        ctx = _compat.resolve({"p": p}, dtype="float32" if isinstance(p, np.ndarray) else torch.float32)
        assert _angles.prepare(p, fr, ctx).path is _angles._sincos_turns  # the turns path
        assert _kernels.turns(p, ctx) is not None
        got = _angles.sincos(p, fr, ctx)  # the kernel
        want = portable(p, ctx)
        integer = _np(p).dtype.kind == "i"
        truth = exact_angle_sincos(_np(p).astype(np.float64).reshape(-1), w) if integer else None
        for i, (g, x) in enumerate(zip(got, want)):
            assert g.shape == tuple(p.shape) + (48,) and g.dtype == x.dtype
            g, x = _np(g), _np(x)
            if not integer and isinstance(p, np.ndarray):
                np.testing.assert_array_equal(g, x)
                continue
            if not integer:  # torch CPU memory: NumPy's float32 sin / cos, within an ulp of torch's
                np.testing.assert_allclose(g, x, rtol=0, atol=2.0**-24)
                continue
            assert np.abs(g - x).max() <= 2.0**-24  # one ulp of numbers below 1
            assert np.abs(g.reshape(-1, 48) - truth[i]).max() <= 2.5e-7
    # requires grad: torch's own operations, the portable path's bits
    p = torch.from_numpy(floats[:-3]).requires_grad_(True)
    ctx = _compat.resolve({"p": p}, dtype=torch.float32)
    assert _kernels.turns(p, ctx) is None


def test_turns_kernel_layouts_and_scale():
    """The kernel's laid-out tables (a RoPE table's columns) and attention
    factor: the compact table laid out and multiplied, bit for bit; one
    position (a decode step, float64 sin / cos) and many."""
    fr = _angles.as_freqs(posenc.rope_frequencies(64))
    turns = _angles.kernel_turns(fr.key)
    for p in (np.array([[4096]]), np.arange(-3000, 3000, 7).reshape(2, -1)):
        s, c = _kernels.turns_numpy(p, turns)
        for layout in ("half", "interleaved"):
            lay = (lambda a: np.concatenate([a, a], -1)) if layout == "half" else (lambda a: np.repeat(a, 2, -1))
            for extra in ((), (_angles.laid_out_fixed(fr.key, layout),)):
                s2, c2 = _kernels.turns_numpy(p, turns + extra, 1.25, False, layout)
                np.testing.assert_array_equal(s2, lay(s) * np.float32(1.25))
                np.testing.assert_array_equal(c2, lay(c) * np.float32(1.25))


def test_consecutive_torch_positions_are_the_range_table():
    """sinusoidal(torch.arange(...)) in any shape: the range table's rows
    (bit for bit the gathered ones), writable without touching the cache."""
    p = torch.arange(100, 100 + 2 * 2048).reshape(2, 2048)
    assert _kernels.is_consecutive_torch(p) and _kernels.is_consecutive_torch(p[:1])
    assert not _kernels.is_consecutive_torch(p.flip(-1)) and not _kernels.is_consecutive_torch(p.T)
    got = posenc.sinusoidal(p, 64, dtype=torch.float32)
    perm = p.flip(-1)  # the same positions, gathered
    want = posenc.sinusoidal(perm, 64, dtype=torch.float32).flip(-2)
    assert torch.equal(got, want)
    rows = posenc.add_sinusoidal(torch.zeros(4096, 64), offset=100)  # the range table of 100 .. 4195
    assert torch.equal(got.reshape(-1, 64), rows)
    got.zero_()  # the caller owns it: the next call is unchanged
    assert torch.equal(posenc.sinusoidal(p, 64, dtype=torch.float32), want)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("cached", [True, False])
def test_torch_tables_written_by_threads_equal_one_thread(threads, cached, monkeypatch):
    """torch CPU range tables written by several threads (row ranges of the
    NumPy kernel): bit for bit NumPy's table, cached or not."""
    monkeypatch.setattr(_kernels.tables, "PARALLEL_MIN", 1)
    if not cached:
        monkeypatch.setattr(_cache.TABLES, "fits", lambda nbytes: False)
    calls = []
    fill_parallel = _kernels.tables.fill_parallel
    monkeypatch.setattr(_kernels.tables, "fill_parallel", lambda *a: calls.append(a[-1]) or fill_parallel(*a))
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        _cache.clear()
        got = posenc.sinusoidal(1001, 34, xp=torch)
    finally:
        torch.set_num_threads(before)
    assert calls == [threads]
    want = posenc.sinusoidal(1001, 34, dtype="float32")
    np.testing.assert_array_equal(got.numpy(), want)


def test_half_precision_torch_positions_take_torch_operations():
    """bfloat16 positions (NumPy has no view of them) and float16 ones: the
    tables of torch CPU tensors of every float dtype, exact like the rest."""
    from benchmarks.accuracy import exact_angle_sincos

    for dt in (torch.bfloat16, torch.float16):
        p = torch.tensor([0.0, 1.0, 750.0, -96.0, 2048.0], dtype=dt)
        got = posenc.sinusoidal(p, 16, dtype=torch.float32)
        s, c = exact_angle_sincos(p.double().numpy(), posenc.frequencies(16))
        np.testing.assert_allclose(got[:, 0::2].numpy(), s, atol=2.5e-7)
        np.testing.assert_allclose(got[:, 1::2].numpy(), c, atol=2.5e-7)


@pytest.fixture(params=[1, 2, 3], ids=["1-thread", "2-threads", "3-threads"])
def torch_threads(request):
    """torch's intra-op threads set for one test (restored after)."""
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_complex_rows_equal_the_real_products(dtype, monkeypatch, torch_threads):
    """A torch CPU ``"interleaved"`` table written as one complex product
    per row (``fill_rows_complex``) equals the portable path's two products
    and one sum bit for bit, on widths of whole SIMD vectors; other widths
    take ``fill_rows``.  At one thread the products span whole tables; at
    more, products of whole blocks that torch splits over all its threads
    at whole SIMD vectors (``_pooled_blocks``), the rest below torch's grain
    size: the same bits at every thread count."""
    calls, pooled = [], []
    real, blocks = _kernels.tables.fill_rows_complex, _kernels.tables._pooled_blocks
    monkeypatch.setattr(_kernels.tables, "fill_rows_complex", lambda *a: calls.append(a[0].shape) or real(*a))
    monkeypatch.setattr(_kernels.tables, "_pooled_blocks", lambda *a: pooled.append(blocks(*a)) or pooled[-1])
    for n, dim in [(4096, 512), (777, 64), (3001, 96), (130, 32), (5, 1024), (777, 20), (2**14 + 5, 256)]:
        _cache.clear()
        calls.clear()
        got = posenc.sinusoidal(n, dim, xp=torch, dtype=dtype)
        assert bool(calls) == (dim % _kernels.tables.COMPLEX_COLUMNS == 0), (n, dim)
        with _kernels.disabled():
            want = posenc.sinusoidal(n, dim, xp=torch, dtype=dtype)
        assert torch.equal(got, want), (n, dim, int((got != want).sum()))
        # rows of a slice (the threads' split, an offset inside a block) are the same rows
        key = _angles.as_freqs(posenc.frequencies(dim)).key
        dt = _np(want).dtype
        full = _tables._numpy_table(0, n, key, dim, "interleaved", dt)
        lo, k = n // 3, n // 3 + 1
        part = np.empty((k, dim), dtype=dt)
        _tables._numpy_table(0, n, key, dim, "interleaved", dt, lo=lo, rows=k, out=part, complex_rows=True)
        np.testing.assert_array_equal(part, full[lo : lo + k])
    # products split over the threads were made (the tests run in the main thread)
    assert any(pooled) == (torch_threads > 1), pooled


def test_pooled_products_split_at_whole_vectors():
    """The products ``fill_rows_complex`` lets torch split: every thread's run
    is a whole number of SIMD vector pairs (:data:`COMPLEX_COLUMNS` complex
    numbers), and there are enough numbers for all the threads."""
    T = _kernels.tables
    rng = np.random.default_rng(3)
    for _ in range(2000):
        blocks, block = int(rng.integers(0, 200)), int(rng.integers(1, 300))
        m, threads = T.COMPLEX_COLUMNS * int(rng.integers(1, 40)), int(rng.integers(2, 17))
        k = T._pooled_blocks(blocks, block, m, threads)
        if k:
            n = k * block * m
            assert k <= blocks and n % (T.COMPLEX_COLUMNS * threads) == 0 and n >= threads * T.TORCH_GRAIN
        else:  # none fits: too few numbers, or no run of whole vectors
            assert all(
                (j * block * m) % (T.COMPLEX_COLUMNS * threads) or j * block * m < threads * T.TORCH_GRAIN
                for j in range(1, blocks + 1)
            )


#: the worst error, in units of ``U``, of NumPy's float32 sine and cosine
#: (its own accuracy test allows 2 ulp of the correctly rounded value): the
#: ``k`` of posenc's bound ``(k + 1/2) U + 1e-9`` for the torch CPU kernels
#: that use them
NUMPY_K = 2.5


def test_numpy_float32_sincos_within_its_documented_ulp():
    """NumPy's float32 sine and cosine over a million float32 angles in
    [-2 pi, 2 pi] (the arguments of ``sincos_f64_torch``) are within
    ``NUMPY_K`` ulp of float64's (and not exact: the sample reaches their
    rounding errors)."""
    a = np.random.default_rng(11).uniform(-2 * np.pi, 2 * np.pi, 10**6).astype(np.float32)
    a64 = a.astype(np.float64)
    k = max(float(np.abs(f(a).astype(np.float64) - f(a64)).max()) for f in (np.sin, np.cos)) / U
    assert 0.5 < k <= NUMPY_K


def test_f64_angles_kernel_against_the_exact_values(monkeypatch):
    """torch CPU positions whose angles stay below ``F64_ANGLE_LIMIT``: float64
    turns reduced exactly, the angle split into float32 ``ah + al`` and
    NumPy's float32 sine and cosine of ``ah`` corrected by ``al``: within
    ``(k + 1/2) U + 1e-9`` of the exact values (``k = NUMPY_K``; integer and
    float positions, every layout, the attention factor, which rounds once
    more), and within two ulp of the turns kernel; the same reduction and
    sine without ``al`` (the angle rounded to float32) is not within it;
    NaN, infinite and larger angles take the turns kernel."""
    from benchmarks.accuracy import exact_angle_sincos

    K = _kernels.angles
    taken = []
    real = K.sincos_f64_torch
    monkeypatch.setattr(K, "sincos_f64_torch", lambda *a, **k: taken.append(real(*a, **k)) or taken[-1])
    w = posenc.frequencies(128)
    fr = _angles.as_freqs(w)
    turns = _angles.kernel_turns(fr.key)
    gen = np.random.default_rng(5)
    top = K.F64_ANGLE_LIMIT / float(np.abs(w).max()) * 0.999
    bound = (NUMPY_K + 0.5) * U + 1e-9
    v = turns[0] + turns[1]
    cases = [
        gen.uniform(0, 1000, 1024).astype(np.float32),
        gen.uniform(-top, top, (3, 500)),
        gen.integers(-int(top), int(top), 2000),
        np.arange(2**20, 2**20 + 256, dtype=np.int64),
    ]
    for p in cases:
        tp = torch.from_numpy(p)
        es, ec = exact_angle_sincos(p.astype(np.float64).reshape(-1), w)
        for layout, scale in ((None, 1.0), ("half", 1.0), ("interleaved", 0.75)):
            taken.clear()
            s, c = K.turns_torch_cpu(tp, turns, scale, p.dtype.kind == "f", layout)
            assert taken and taken[-1] is not None
            ls, lc = es, ec
            if layout == "half":
                ls, lc = np.concatenate([es, es], -1), np.concatenate([ec, ec], -1)
            elif layout == "interleaved":
                ls, lc = np.repeat(es, 2, -1), np.repeat(ec, 2, -1)
            for g, e in ((s, ls), (c, lc)):
                g = _np(g).reshape(e.shape).astype(np.float64)
                # the factor scales the error and rounds once more (half an ulp)
                assert np.abs(g - e * scale).max() <= scale * bound + (0.0 if scale == 1 else U / 2)
            # the turns kernel: NumPy's float32 sine and cosine too, reduced another way
            ns, nc = K.turns_numpy(p, turns, scale, p.dtype.kind == "f", layout)
            np.testing.assert_allclose(_np(s), ns, rtol=0, atol=2.0**-23)
            np.testing.assert_allclose(_np(c), nc, rtol=0, atol=2.0**-23)
        # the control: the kernel's reduction, its angle rounded to float32 (no al)
        x = p.astype(np.float64).reshape(-1, 1) * v
        a = ((x - np.trunc(x)) * (2 * np.pi)).astype(np.float32)
        naive = max(np.abs(np.sin(a) - es).max(), np.abs(np.cos(a) - ec).max())
        assert naive > bound, naive
    beyond = [np.r_[gen.uniform(0, 1, 4999), np.nan], np.r_[np.zeros(4999), np.inf], np.r_[np.zeros(4999), 2 * top]]
    for p in beyond:
        taken.clear()
        s, c = K.turns_torch_cpu(torch.from_numpy(p), turns, 1.0, True)
        assert taken == [None]
        ns, nc = K.turns_numpy(p, turns, 1.0, True)
        np.testing.assert_array_equal(_np(s), ns)


@pytest.mark.parametrize(
    ("start", "nq", "block", "dim"), [(0, 64, 64, 512), (0, 1024, 1024, 64), (10**9, 100, 1000, 128)]
)
def test_doubled_range_tables_against_the_exact_rows(start, nq, block, dim):
    """The host range tables of float32 tables, built by doubling, are within
    ``(2 + 5 popcount(i)) 2**-53`` of the exact values (row ``i``; against the
    correctly reduced float64 rows, themselves within ``2 * 2**-53``) and
    equal them at row 0."""
    from posenc import _turns

    key = _angles.as_freqs(posenc.frequencies(dim)).key
    fine = _turns._range_tables(start, nq, block, key, True)
    fast = _turns._range_tables(start, nq, block, key, False)
    for k, (a, b) in zip((nq, nq, block, block), zip(fine, fast)):
        pop = np.array([bin(i).count("1") for i in range(k)], dtype=np.float64)[:, None]
        assert np.all(np.abs(a - b) <= (4 + 5 * pop) * 2.0**-53)
        np.testing.assert_array_equal(a[0], b[0])



def test_doubled_sequences_together_equal_each_alone():
    """The coarse and fine rows doubled together (one reduction of every
    seed, one product per step over both, the longer one's rows) are the
    rows each sequence gets alone, bit for bit, whichever is longer."""
    from posenc import _turns

    t = _turns._turns(_angles.as_freqs(posenc.frequencies(96)).key)
    for (a, d, k), (b, e, j) in [((0.0, 64.0, 64), (0.0, 1.0, 64)), ((10.0**9, 1000.0, 5), (0.0, 1.0, 1000))]:
        s, c = _turns._doubled((a, b), (d, e), max(k, j), t)
        for row, (start, step, n) in enumerate(((a, d, k), (b, e, j))):
            s1, c1 = _turns._doubled((start,), (step,), n, t)
            np.testing.assert_array_equal(s[row, :n], s1[0])
            np.testing.assert_array_equal(c[row, :n], c1[0])
            # and the rows are the angle-addition steps, not their seeds alone
            exact = _turns._host_sincos_turns(np.array([start + 3 * step]), t)[0][0]
            assert n < 4 or not np.array_equal(s1[0, 3], exact)

@pytest.mark.parametrize("flip", [False, True])
@pytest.mark.parametrize(("shape", "dim"), [((1024,), 320), ((70,), 129), ((4, 33), 64), ((300,), 3)])
def test_joined_timestep_table_equals_the_concatenation(flip, shape, dim, monkeypatch):
    """The torch CPU timestep embedding written in one buffer
    (``joined_torch_cpu``: float64 turns of the frequencies, in place) is
    the concatenation of that kernel's sine and cosine bit for bit, zero
    column of an odd ``dim`` included, and within ``(k + 1/2) U + 1e-9`` of
    the exact values (``k = NUMPY_K``); where the kernel
    declines (large angles, small tables, NaN), the call takes the lane's
    path (and its NaN check)."""
    from benchmarks.accuracy import exact_angle_sincos

    K = _kernels.angles
    calls = []
    real = K.joined_torch_cpu
    monkeypatch.setattr(_kernels, "joined_torch_cpu", lambda *a: calls.append(real(*a)) or calls[-1])
    rng = np.random.default_rng(3)
    m = dim // 2
    for scale in (1.0, 1e5):  # 1e5: angles beyond F64_ANGLE_LIMIT, which the kernel declines
        t = torch.as_tensor(rng.uniform(0.0, 1000.0, shape).astype(np.float32))
        kw = dict(flip_sin_to_cos=flip, downscale_freq_shift=0.0, scale=scale)
        _cache.clear()
        calls.clear()
        got = posenc.timestep_embedding(t, dim, **kw)
        freqs = posenc.timesteps._timestep_freqs(dim, 0.0, scale, 10000.0)[1]
        taken = math.prod(shape) * m > K.F64_MIN and scale == 1.0
        assert len(calls) == 1 and (calls[0] is not None) == taken, (shape, dim, scale)
        with _kernels.disabled():
            want = posenc.timestep_embedding(t, dim, **kw)
        if taken:
            w = np.array(freqs.array)
            s, c = K.sincos_f64_torch(t, t.numpy(), np.array(_angles.turns_of(freqs.key).vh))
            parts = [c, s] if flip else [s, c]
            if dim % 2:
                parts.append(torch.zeros(shape + (1,)))
            assert torch.equal(got, torch.cat(parts, dim=-1)), (shape, dim)
            es, ec = exact_angle_sincos(t.double().numpy().reshape(-1), w, freqs.pairs()[1])
            exact = np.concatenate([ec, es] if flip else [es, ec], axis=-1).reshape(shape + (2 * m,))
            assert np.abs(got.numpy()[..., : 2 * m] - exact).max() <= (NUMPY_K + 0.5) * U + 1e-9
            torch.testing.assert_close(got, want, atol=2.5e-7, rtol=0)
        else:
            torch.testing.assert_close(got, want, atol=2.5e-7 * max(1.0, scale / 1e5), rtol=0)
    # NaN timesteps: the kernel declines, and the call's check names them
    bad = torch.full((2048,), float("nan"))
    with pytest.raises(ValueError, match="`t` must be finite"):
        posenc.timestep_embedding(bad, dim)
    # a tensor that needs autograd takes the portable path (and keeps its gradient)
    tg = torch.linspace(0.0, 10.0, 16, requires_grad=True)
    out = posenc.timestep_embedding(tg, dim)
    out.sum().backward()
    assert tg.grad is not None and torch.isfinite(tg.grad).all()
