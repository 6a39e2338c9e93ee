"""The sinusoidal family against float64 formulas written from the papers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc


# ---------------------------------------------------------------- oracles
def ref_freqs(dim, base=10000.0, convention="paper", lo=1.0, hi=None):
    half = dim // 2
    if convention == "paper":
        # Vaswani et al.: 1 / base^(2i/d)
        return np.array([1.0 / base ** (2 * i / dim) for i in range(half)])
    if convention == "fairseq":
        # fairseq SinusoidalPositionalEmbedding.get_embedding: exp(-i * log(base) / (half - 1))
        return np.array([math.exp(-i * math.log(base) / max(half - 1, 1)) for i in range(half)])
    hi = base if hi is None else hi
    inc = math.log(hi / lo) / max(half - 1, 1)
    return np.array([lo * math.exp(-i * inc) for i in range(half)])


def ref_table(pos, dim, base=10000.0, layout="interleaved", convention="paper", **kw):
    pos = np.asarray(pos, dtype=np.float64)
    w = ref_freqs(dim, base, convention, **kw)
    a = pos[..., None] * w
    s, c = np.sin(a), np.cos(a)
    if layout == "interleaved":
        out = np.stack([s, c], axis=-1).reshape(pos.shape + (2 * len(w),))
    else:
        out = np.concatenate([s, c], axis=-1)
    if dim % 2:
        out = np.concatenate([out, np.zeros(pos.shape + (1,))], axis=-1)
    return out


# ---------------------------------------------------------------- frequencies
@pytest.mark.parametrize("convention", ["paper", "fairseq", "tensor2tensor"])
@pytest.mark.parametrize("dim", [1, 2, 3, 4, 7, 64, 513])
def test_frequencies(xp, convention, dim):
    got = xp.call(posenc.frequencies, dim, convention=convention, xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_freqs(dim, convention=convention), rtol=xp.tol() * 4, dtype=xp.default_float)
    wl = xp.call(posenc.wavelengths, dim, convention=convention, xp=xp.ns, device=xp.device)
    xp.assert_close(wl, 2 * np.pi / ref_freqs(dim, convention=convention), rtol=xp.tol() * 4)


def test_frequency_endpoints():
    w = posenc.frequencies(512)
    assert w[0] == 1.0
    assert w[-1] == pytest.approx(10000.0 ** (-510 / 512), rel=1e-15)
    wf = posenc.frequencies(512, convention="fairseq")
    assert wf[-1] == pytest.approx(1e-4, rel=1e-14)
    wl = posenc.wavelengths(512)
    assert wl[0] == pytest.approx(2 * np.pi)
    assert 2 * np.pi * 9000 < wl[-1] < 2 * np.pi * 10000


def test_tensor2tensor_timescales():
    got = posenc.frequencies(8, convention="tensor2tensor", min_timescale=2.0, max_timescale=1e3)
    np.testing.assert_allclose(got, ref_freqs(8, convention="tensor2tensor", lo=2.0, hi=1e3), rtol=1e-15)
    # no division by zero for a single pair
    np.testing.assert_allclose(posenc.frequencies(2, convention="tensor2tensor"), [1.0])


# ---------------------------------------------------------------- tables
@pytest.mark.parametrize("layout", ["interleaved", "concat"])
@pytest.mark.parametrize("convention", ["paper", "fairseq"])
@pytest.mark.parametrize("dim", [1, 2, 5, 16])
def test_sinusoidal_int(xp, layout, convention, dim):
    got = xp.call(posenc.sinusoidal, 37, dim, layout=layout, convention=convention, xp=xp.ns, device=xp.device)
    want = ref_table(np.arange(37), dim, layout=layout, convention=convention)
    xp.assert_close(got, want, atol=xp.tol(), dtype=xp.default_float)


@pytest.mark.parametrize("pdtype", ["int32", "float32", "float64"])
def test_sinusoidal_array_positions(xp, pdtype):
    if pdtype == "float64" and not xp.float64:
        pytest.skip("no float64 on this device")
    p = np.array([[-3.5, 0.0, 0.25], [7.0, 1e3, 65535.0]]).astype(pdtype)
    got = xp.call(posenc.sinusoidal, xp.asarray(p), 12, base=500.0)
    # float64: the product p * w is rounded once (|p * w| <= 65535: 0.5 ulp = 7e-12)
    tol = max(xp.tol(), 2e-11)
    xp.assert_close(got, ref_table(p, 12, base=500.0), atol=tol, dtype=xp.default_float)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_sinusoidal_dtypes(xp, dtype):
    if not hasattr(xp.ns, dtype) and not xp.name.startswith("torch"):
        pytest.skip(f"{xp.name} has no {dtype}")
    if dtype == "float64" and not xp.float64:
        pytest.skip("no float64 on this device")
    dt = getattr(xp.module, dtype, None) if xp.name.startswith("torch") else getattr(xp.ns, dtype, None)
    if dt is None:
        pytest.skip(f"{xp.name} has no {dtype}")
    got = xp.call(posenc.sinusoidal, 300, 16, dtype=dt, xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_table(np.arange(300), 16), atol=xp.tol(dt), dtype=dt)


def test_dtype_string_and_torch_objects():
    torch = pytest.importorskip("torch")
    t = posenc.sinusoidal(5, 4, dtype=torch.bfloat16)  # namespace from the dtype
    assert isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16
    n = posenc.sinusoidal(5, 4, dtype="float32")
    assert n.dtype == np.float32
    t = posenc.sinusoidal(5, 4, xp=torch, dtype="float16")
    assert t.dtype == torch.float16


def test_accuracy_float32_long_range():
    # every position below 2**20 for dim 64, blocks of the range for dim 1024
    pe = posenc.sinusoidal(2**20, 64, dtype=np.float32)
    pos = np.arange(2**20)
    err = 0.0
    for lo in range(0, 2**20, 2**17):
        err = max(err, np.abs(pe[lo : lo + 2**17] - ref_table(pos[lo : lo + 2**17], 64)).max())
    assert err <= 2.5e-7
    # the naive float32 one-liner is far off at the same positions (what posenc fixes)
    w32 = ref_freqs(64).astype(np.float32)
    naive = np.sin(np.float32(2**20 - 1) * w32)
    assert np.abs(naive - np.sin((2**20 - 1) * ref_freqs(64))).max() > 5e-3


def test_accuracy_float32_dim1024():
    from posenc import _angles, _compat

    ctx = _compat.resolve(dtype=np.float32)
    w = ref_freqs(1024)
    for start in (0, 2**20 - 2048, 10**6):
        s, c = _angles.sincos_range(start, 2048, w, ctx)
        a = np.arange(start, start + 2048, dtype=np.float64)[:, None] * w
        assert np.abs(s - np.sin(a)).max() <= 2.5e-7
        assert np.abs(c - np.cos(a)).max() <= 2.5e-7


def exact_ld_table(p, dim):
    """The interleaved table of the mathematical frequencies ``10000 **
    (-2i/dim)`` at positions ``p`` from the exact angle (benchmarks/accuracy.py's
    truth: the float64 product of the reference formula rounds by |p w|
    2**-53, 2.4e-7 at 2**31)."""
    from benchmarks.accuracy import exact_angle_sincos, math_frequencies

    s, c = exact_angle_sincos(np.asarray(p, dtype=np.float64).reshape(-1), *math_frequencies(dim))
    return np.stack([s, c], axis=-1).reshape(np.shape(p) + (dim,))


def exact_table(pos, cols, dim=1024):
    """sin/cos of p * w for the mathematical frequencies ``10000 ** (-2i/dim)``
    of the columns ``cols``, with 40 significant digits."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(40):
        w = [mpmath.mpf(10000) ** (-mpmath.mpf(2 * i) / dim) for i in range(dim // 2)][cols]
        s = np.array([[float(mpmath.sin(mpmath.mpf(float(p)) * x)) for x in w] for p in pos])
        c = np.array([[float(mpmath.cos(mpmath.mpf(float(p)) * x)) for x in w] for p in pos])
    return s, c


def test_accuracy_float64():
    w = posenc.frequencies(1024)
    np.testing.assert_allclose(w, ref_freqs(1024), rtol=4e-16)
    # (a table of 2**17 rows: 1 GiB of float64; the suite runs two such workers side by side)
    rows = np.r_[0:40, 2**17 - 40 : 2**17]
    pe = posenc.sinusoidal(2**17, 1024)[rows]
    s, c = exact_table(rows, slice(None, None, 9))
    assert np.abs(pe[:, 0::2][:, ::9] - s).max() <= 1e-12
    assert np.abs(pe[:, 1::2][:, ::9] - c).max() <= 1e-12
    # arrays of positions, far beyond what the naive float64 product handles
    p = np.array([0.5, 123456.75, -98765.25, 2.0**20 - 1, 2.0**30 + 3])
    pe = posenc.sinusoidal(p, 1024)
    s, c = exact_table(p, slice(None, None, 5))
    assert np.abs(pe[:, 0::2][:, ::5] - s).max() <= 1e-12
    assert np.abs(pe[:, 1::2][:, ::5] - c).max() <= 1e-12
    naive = np.sin(p[:, None] * w[::5])
    assert np.abs(naive - s).max() > 1e-9


def test_accuracy_without_float64():
    st = pytest.importorskip("array_api_strict")
    dev = st.Device("no_float64")
    rng = np.random.default_rng(0)
    # (the truth is a long-double table of positions x 512 frequencies: a few thousand positions each)
    for p in (np.arange(0, 2**20, 97), rng.integers(-(2**24), 2**24, 5000), rng.integers(-(2**31) + 1, 2**31, 2000)):
        got = posenc.sinusoidal(st.asarray(p.astype(np.int64), device=dev), 1024)
        got = np.asarray(got.to_device(st.Device("CPU_DEVICE")))
        assert np.abs(got - exact_ld_table(p, 1024)).max() <= 2.5e-7
    pf = rng.uniform(-(2.0**22), 2.0**22, 4000).astype(np.float32)
    got = posenc.sinusoidal(st.asarray(pf, device=dev), 1024)
    assert np.abs(np.asarray(got.to_device(st.Device("CPU_DEVICE"))) - exact_ld_table(pf, 1024)).max() <= 2.5e-7
    # beyond 2**32 a float32 position yields NaN rows, not a wrong table
    big = posenc.sinusoidal(st.asarray(np.array([2.0**33, 3.0], dtype=np.float32), device=dev), 4)
    big = np.asarray(big.to_device(st.Device("CPU_DEVICE")))
    assert np.isnan(big[0]).all() and np.isfinite(big[1]).all()


def test_worked_example_d4():
    # the tutorials' d_model = 4 example, with correct numbers: w = (1, 10000**-0.5 = 0.01)
    pe = posenc.sinusoidal(6, 4)
    expected = np.array(
        [[math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)] for p in range(6)]
    )
    np.testing.assert_allclose(pe, expected, atol=1e-15)
    assert pe[2, 2] == pytest.approx(0.019998666693333080, abs=1e-15)


def test_output_shape_any_positions(xp):
    p = xp.asarray(np.arange(24).reshape(2, 3, 4))
    got = xp.call(posenc.sinusoidal, p, 6)
    xp.check_array(got, shape=(2, 3, 4, 6))
    got = xp.call(posenc.sinusoidal, 0, 6, xp=xp.ns, device=xp.device)
    xp.check_array(got, shape=(0, 6))
    got = xp.call(posenc.sinusoidal, xp.asarray(np.array(3.0)), 6)
    xp.assert_close(got, ref_table(3.0, 6), atol=xp.tol())


# ---------------------------------------------------------------- variants
def test_sines(xp):
    got = xp.call(posenc.sines, 10, [1.0, 0.5, 0.2], xp=xp.ns, device=xp.device)
    p = np.arange(10.0)[:, None]
    xp.assert_close(got, np.sin(p * np.array([1.0, 0.5, 0.2])), atol=xp.tol())
    f = xp.asarray(np.array([1.0, 0.5, 0.2]))
    pos = xp.asarray(np.array([0.0, 1.5, -2.0]))
    got = xp.call(posenc.sines, pos, f)
    xp.assert_close(got, np.sin(np.array([0.0, 1.5, -2.0])[:, None] * np.array([1.0, 0.5, 0.2])), atol=2 * xp.tol())


@pytest.mark.parametrize("signed", [False, True])
def test_binary(xp, signed):
    got = xp.call(posenc.binary, 8, 3, signed=signed, xp=xp.ns, device=xp.device)
    bits = np.array([[(p >> j) & 1 for j in range(3)] for p in range(8)], dtype=np.float64)
    xp.assert_close(got, 2 * bits - 1 if signed else bits)
    p = xp.asarray(np.array([[5, 0], [1023, 512]]))
    got = xp.call(posenc.binary, p, 10)
    exp = np.array([[[(v >> j) & 1 for j in range(10)] for v in row] for row in [[5, 0], [1023, 512]]], dtype=float)
    xp.assert_close(got, exp)


def test_binary_range():
    with pytest.raises(ValueError, match="positions"):
        posenc.binary(9, 3)
    with pytest.raises(ValueError, match="positions"):
        posenc.binary(np.array([8]), 3)
    with pytest.raises(ValueError, match="positions"):
        posenc.binary(np.array([-1]), 3)
    with pytest.raises(TypeError, match="positions"):
        posenc.binary(np.array([1.0]), 3)
    # wide codes: bits above the integer width are zero
    got = posenc.binary(np.array([2**40 + 1]), 70)
    assert got.shape == (1, 70) and got[0, 0] == 1 and got[0, 40] == 1 and got[0, 64:].sum() == 0


def test_add_sinusoidal(xp):
    x = np.random.default_rng(1).standard_normal((2, 5, 6))
    xa = xp.asarray(x)
    got = xp.call(posenc.add_sinusoidal, xa, offset=3, input_scale=math.sqrt(6))
    exp = x * math.sqrt(6) + ref_table(np.arange(3, 8), 6)
    tol = 4 * xp.tol()
    xp.assert_close(got, exp, atol=tol, rtol=tol, dtype=xa.dtype)


def test_add_sinusoidal_bf16():
    torch = pytest.importorskip("torch")
    x = torch.zeros(4, 8, dtype=torch.bfloat16)
    y = posenc.add_sinusoidal(x, offset=1000)
    assert y.dtype == torch.bfloat16
    np.testing.assert_allclose(y.float().numpy(), ref_table(np.arange(1000, 1004), 8), atol=2**-8)


# ---------------------------------------------------------------- properties


@settings(max_examples=40, deadline=None)
@given(
    pos=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=20),
    dim=st.integers(1, 64),
)
def test_bounds_and_norm(pos, dim):
    pe = posenc.sinusoidal(np.array(pos), dim)
    assert np.abs(pe).max() <= 1.0
    np.testing.assert_allclose((pe**2).sum(-1), dim // 2, rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 3000), lo=st.integers(0, 2999), dim=st.integers(1, 32))
def test_slice_equals_rows_of_full_table(n, lo, dim):
    lo = min(lo, n - 1)
    full = posenc.sinusoidal(n, dim, dtype=np.float32)
    part = posenc.sinusoidal(np.arange(lo, n), dim, dtype=np.float32)
    np.testing.assert_allclose(part, full[lo:], atol=4e-7)
    shard = posenc.add_sinusoidal(np.zeros((n - lo, dim), np.float32), offset=lo)
    np.testing.assert_allclose(shard, full[lo:], atol=4e-7)


# ---------------------------------------------------------------- devices
def test_output_on_input_device_strict():
    st = pytest.importorskip("array_api_strict")
    d1 = st.Device("device1")
    out = posenc.sinusoidal(st.asarray([1, 2], device=d1), 4)
    assert out.device == d1
    out = posenc.sinusoidal(3, 4, xp=st, device=d1)
    assert out.device == d1
    with pytest.raises(ValueError, match="device"):
        posenc.sinusoidal(st.asarray([1, 2], device=d1), 4, device=st.Device("CPU_DEVICE"))


def test_torch_meta_device():
    torch = pytest.importorskip("torch")
    out = posenc.sinusoidal(torch.arange(5, device="meta"), 8)
    assert out.device.type == "meta" and out.shape == (5, 8)
    with pytest.raises(ValueError, match="device"):
        posenc.sinusoidal(torch.arange(5, device="meta"), 8, device="cpu")


def test_dask_is_lazy():
    da = pytest.importorskip("dask.array")
    import dask

    from tests.conftest import _forbid_compute

    p = da.arange(10_000, chunks=1000)
    with dask.config.set(scheduler=_forbid_compute):
        out = posenc.sinusoidal(p, 16)
    assert out.chunks[0] == p.chunks[0]
    np.testing.assert_allclose(out.compute(), ref_table(np.arange(10_000), 16), atol=1e-12)


def test_jax_grad_of_positions():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    g = jax.grad(lambda p: posenc.sinusoidal(p, 4)[..., 0].sum())(jnp.asarray([0.0, 1.0]))
    np.testing.assert_allclose(np.asarray(g), np.cos([0.0, 1.0]), atol=1e-6)


# ---------------------------------------------------------------- extreme arguments
def test_huge_positions_are_refused_or_nan_rows(xp):
    """Positions far beyond the exact range: no overflow (a warning would
    fail the test), and never the rows of another position (they were the
    rows of +-2**64, clipped): a refusal by name where posenc reads the
    positions, NaN rows elsewhere; the other rows exact."""
    from .test_offsets import _in_host_memory

    pos = xp.asarray(np.array([1e30, -1e30, 2.0**64, -(2.0**64), 3.5]))  # (float32 holds them)
    if xp.host and _in_host_memory(xp, pos):
        with pytest.raises(ValueError, match="`positions` holds the position"):
            xp.call(posenc.sinusoidal, pos, 8)
        return
    got = xp.call(posenc.sinusoidal, pos, 8)
    xp.check_array(got, shape=(5, 8))
    if xp.has_values:
        a = xp.to_numpy(got)
        assert np.isnan(a[:4]).all()
        # float64 tables to 1e-12; float32 ones within posenc's bound of 2.5e-7
        tol = 1e-12 if a.dtype == np.float64 else 2.5e-7
        np.testing.assert_allclose(a[4], ref_table([3.5], 8)[0], rtol=0, atol=tol)


def test_extreme_frequencies_give_finite_rows(xp):
    """A base far below 1 (frequencies up to 1e305) and a huge sine frequency:
    finite rows on every backend; the first frequency (1) is still exact."""
    kw = {"base": 1e-305, "convention": "fairseq"}
    for pos in (4, xp.asarray(np.array([0.0, 1.0, 2.0, 3.0]))):
        extra = {"xp": xp.ns, "device": xp.device} if isinstance(pos, int) else {}
        got = xp.call(posenc.sinusoidal, pos, 4, **kw, **extra)
        xp.check_array(got, shape=(4, 4))
        if xp.has_values:
            a = xp.to_numpy(got)
            assert np.isfinite(a).all() and np.abs(a).max() <= 1.0 + 1e-6
            np.testing.assert_allclose(a[:, :2], ref_table(np.arange(4), 2), atol=2 * xp.tol())
            np.testing.assert_allclose(a[0], [0.0, 1.0, 0.0, 1.0], atol=xp.tol())
    got = xp.call(posenc.sines, 3, [1e305, 1.0], xp=xp.ns, device=xp.device)
    if xp.has_values:
        a = xp.to_numpy(got)
        assert np.isfinite(a).all()
        np.testing.assert_allclose(a[:, 1], np.sin(np.arange(3.0)), atol=2 * xp.tol())


def test_digit_path_integer_extremes():
    """Without float64: |p| >= 2**32 (also the most negative int64, whose
    abs() stays negative) give NaN rows; int32's most negative value is exact."""
    xs = pytest.importorskip("array_api_strict")
    from posenc_viz import to_numpy

    p = xs.asarray(np.array([-(2**63), 2**32, -(2**31), 7], dtype=np.int64), device=xs.Device("no_float64"))
    got = to_numpy(posenc.sinusoidal(p, 8))
    assert np.isnan(got[:2]).all()
    np.testing.assert_allclose(got[2:], ref_table([-(2**31), 7], 8), atol=1e-6)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: posenc.sinusoidal(4, 0), ValueError, "dim"),
        (lambda: posenc.sinusoidal(4, -2), ValueError, "dim"),
        (lambda: posenc.sinusoidal(4, 4.0), TypeError, "dim"),
        (lambda: posenc.sinusoidal(4, True), TypeError, "dim"),
        (lambda: posenc.sinusoidal(4, "8"), TypeError, "dim"),
        (lambda: posenc.sinusoidal(4, 8, base=0.0), ValueError, "base"),
        (lambda: posenc.sinusoidal(4, 8, base=-1), ValueError, "base"),
        (lambda: posenc.sinusoidal(4, 8, base=float("nan")), ValueError, "base"),
        (lambda: posenc.sinusoidal(4, 8, base="1e4"), TypeError, "base"),
        (lambda: posenc.sinusoidal(4, 8, layout="half"), ValueError, "layout"),
        (lambda: posenc.sinusoidal(4, 8, convention="vaswani"), ValueError, "convention"),
        (lambda: posenc.sinusoidal(-1, 8), ValueError, "positions"),
        (lambda: posenc.sinusoidal(4.0, 8), TypeError, "positions"),
        (lambda: posenc.sinusoidal("4", 8), TypeError, "positions"),
        (lambda: posenc.sinusoidal(np.array([1.0, np.nan]), 8), ValueError, "positions"),
        (lambda: posenc.sinusoidal(np.array([np.inf]), 8), ValueError, "positions"),
        (lambda: posenc.sinusoidal(np.array([True]), 8), TypeError, "positions"),
        (lambda: posenc.sinusoidal(np.array([1j]), 8), TypeError, "positions"),
        (lambda: posenc.sinusoidal(4, 8, dtype=np.int32), TypeError, "dtype"),
        (lambda: posenc.sinusoidal(4, 8, dtype="float128x"), ValueError, "dtype"),
        (lambda: posenc.sinusoidal(4, 8, xp="numpy"), TypeError, "xp"),
        (lambda: posenc.sinusoidal(4, 8, min_timescale=2.0), ValueError, "min_timescale"),
        (lambda: posenc.sinusoidal(2**30, 2**12), ValueError, "2\\*\\*40"),
        (lambda: posenc.frequencies(0), ValueError, "dim"),
        (lambda: posenc.sines(4, "abc"), TypeError, "frequencies"),
        (lambda: posenc.sines(4, [1.0, float("inf")]), ValueError, "frequencies"),
        (lambda: posenc.binary(4, 0), ValueError, "dim"),
        (lambda: posenc.binary(4, 3, signed=1), TypeError, "signed"),
        (lambda: posenc.add_sinusoidal(np.zeros(4)), ValueError, "x"),
        (lambda: posenc.add_sinusoidal(np.zeros((2, 4), dtype=int)), TypeError, "x"),
        (lambda: posenc.add_sinusoidal([[0.0]]), TypeError, "x"),
        (lambda: posenc.add_sinusoidal(np.zeros((2, 4)), offset=1.5), TypeError, "offset"),
        # extreme arguments: a ValueError naming them, never inf values
        (lambda: posenc.frequencies(8, base=5e-324, convention="fairseq"), ValueError, "`base`"),
        (lambda: posenc.wavelengths(4, base=1e308, convention="fairseq"), ValueError, "`base`"),
        (
            lambda: posenc.wavelengths(8, convention="tensor2tensor", min_timescale=1e-300, max_timescale=1e300),
            ValueError,
            "`min_timescale` = 1e-300 with `max_timescale`",
        ),
        (lambda: posenc.wavelengths(8, base=1e20, dtype="float16"), ValueError, "`base`.*float16"),
        (lambda: posenc.add_sinusoidal(np.zeros((2, 4), np.float32), input_scale=1e39), ValueError, "input_scale"),
        (lambda: posenc.add_sinusoidal(np.zeros((2, 4)), offset=2**65), ValueError, "offset"),
    ],
)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


def test_xp_conflict():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="positions"):
        posenc.sinusoidal(torch.arange(3), 4, xp=np)


# ---------------------------------------------------------------- hot path of array positions
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dense_int_positions_gather_the_range_table(xp, dtype):
    """Dense integer positions (an arange, a window, batches of nearby
    sequences) are rows of the exact range table on NumPy / torch CPU; every
    backend agrees with the float64 truth at posenc's bound."""
    if dtype == "float64" and not xp.float64:
        pytest.skip("no float64 on this device")
    p = (np.arange(2 * 300).reshape(2, 1, 300) + 70_000).astype(np.int64)
    got = xp.call(posenc.sinusoidal, xp.asarray(p), 256, dtype=getattr(xp.ns, dtype))
    xp.check_array(got, shape=(2, 1, 300, 256))
    if xp.has_values:
        # the float64 oracle's own product rounds by ~1e-11 at p = 7e4
        tol = 1e-10 if dtype == "float64" else 2.5e-7
        np.testing.assert_allclose(xp.to_numpy(got), ref_table(p, 256), rtol=0, atol=tol)
    if xp.name in ("numpy", "torch"):
        # the very rows of the range table (bit for bit)
        want = posenc.add_sinusoidal(xp.asarray(np.zeros((600, 256)), dtype), offset=70_000)
        np.testing.assert_array_equal(xp.to_numpy(got).reshape(600, 256), xp.to_numpy(want))


@pytest.mark.parametrize("kind", ["int", "float"])
def test_array_positions_accuracy(xp, kind):
    """float32 tables of array positions: within 2.5e-7 of the truth for
    |p| < 2**31 (int) and 2**22 (float), every row, on every backend (the
    naive float32 formula is off by 1e-1 there)."""
    rng = np.random.default_rng(3)
    if kind == "int":
        p = rng.integers(-(2**31) + 1, 2**31, 3000).astype(np.int32)
    else:
        p = rng.uniform(-(2.0**22), 2.0**22, 3000).astype(np.float32)
    got = xp.call(posenc.sinusoidal, xp.asarray(p), 128, dtype=xp.ns.float32)
    if xp.has_values:
        err = np.abs(xp.to_numpy(got).astype(np.float64) - exact_ld_table(p, 128)).max()
        assert err <= 2.5e-7, err


def test_padding_index_no_position_can_equal(xp):
    """A padding index that no position of the positions' dtype can equal
    zeroes no row: torch would wrap 2**32 + 1 around int32 to 1 and round
    2**24 + 1 to 2**24 in float32, JAX refuse it; exact ids still match."""
    table = lambda p, **kw: xp.call(posenc.sinusoidal, p, 8, **kw)  # noqa: E731
    ints = xp.asarray([0, 1, 2], "int32")
    want = ref_table(np.array([0, 1, 2]), 8)
    xp.assert_close(table(ints, padding_idx=2**32 + 1), want, atol=10 * xp.tol())
    xp.assert_close(table(ints, padding_idx=-(2**70)), want, atol=10 * xp.tol())
    xp.assert_close(table(ints, padding_idx=1), want * [[1], [0], [1]], atol=10 * xp.tol())  # control
    reals = xp.asarray([2.0**24, 3.0], "float32")
    want = ref_table(np.array([2.0**24, 3.0]), 8)
    # (angles near 2**24 rad: float64 tables within 1e-10 of them, float32 ones within posenc's bound)
    xp.assert_close(table(reals, padding_idx=2**24 + 1), want, atol=2.5e-7)
    xp.assert_close(table(reals, padding_idx=2**24), want * [[0], [1]], atol=2.5e-7)  # control
    n = xp.call(posenc.sinusoidal, 3, 8, padding_idx=2**64, xp=xp.ns, device=xp.device)
    xp.assert_close(n, ref_table(np.arange(3), 8), atol=10 * xp.tol())


def test_padding_row_matches_m2m100(xp):
    """fairseq / M2M100: the padding row is zero (``padding_idx``), the other
    rows the fairseq table; on every backend, against transformers' own table."""
    m2m = pytest.importorskip("transformers.models.m2m_100.modeling_m2m_100")
    torch = pytest.importorskip("torch")
    for n, d in ((10, 8), (7, 9)):
        # transformers builds it in float32: its own rounding, a few 1e-8
        want = m2m.M2M100SinusoidalPositionalEmbedding.get_embedding(n, d, 1).to(torch.float64).numpy()
        got = xp.call(
            posenc.sinusoidal, n, d, convention="fairseq", layout="concat", padding_idx=1, xp=xp.ns, device=xp.device
        )
        xp.assert_close(got, want, atol=2e-7)
        assert not np.any(want[1]) and np.any(want[2])
    p = np.array([[1, 2, 3], [1, 1, 5]])
    got = xp.call(posenc.sinusoidal, xp.asarray(p), 8, convention="fairseq", layout="concat", padding_idx=1)
    want = ref_table(p, 8, convention="fairseq", layout="concat") * (p != 1)[..., None]
    xp.assert_close(got, want, atol=10 * xp.tol())
