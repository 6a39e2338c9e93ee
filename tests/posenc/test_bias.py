"""Relative positions and attention biases.

Oracles: pure-Python transcriptions of the published rules (Press et al.'s
``get_slopes``, Mesh TensorFlow's / T5's bucket formula evaluated in float32
with ``struct``, Transformer-XL's ``PositionalEmbedding``, KERPLE's kernels)
and, when installed, Hugging Face ``transformers`` itself (T5, BLOOM, MPT,
XLNet).
"""

from __future__ import annotations

import math
import struct
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc


# ---------------------------------------------------------------- oracles
def ref_rel(q, k, off=None):
    off = k - q if off is None else off
    return np.array([[j - (i + off) for j in range(k)] for i in range(q)], dtype=np.int64).reshape(q, k)


def ref_get_slopes(n):
    """Press et al.'s reference ``get_slopes`` (attention_with_linear_biases)."""

    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + ref_get_slopes(2 * closest)[0::2][: n - closest]


def f32(x):
    """Round a Python float to float32 (the reference computes in float32)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def ref_bucket(rp, num_buckets=32, max_distance=128, bidirectional=True):
    """Mesh TensorFlow's ``_relative_position_bucket`` for one int, in float32."""
    ret = 0
    n = -rp
    if bidirectional:
        num_buckets //= 2
        ret += num_buckets if n < 0 else 0
        n = abs(n)
    else:
        n = max(n, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    x = f32(f32(n) / f32(max_exact))
    v = f32(math.log(x))
    v = f32(v / f32(math.log(max_distance / max_exact)))
    v = f32(v * f32(num_buckets - max_exact))
    return ret + min(max_exact + int(v), num_buckets - 1)


def ref_txl(klen, dim, base=10000.0, clamp=None, qlen=None):
    """Transformer-XL: pos_seq = klen-1 .. 0 (.. -(qlen-1) when qlen is given),
    inv_freq = 1 / base ** (arange(0, d, 2) / d), [sin | cos]."""
    lo = 0 if qlen is None else -(qlen - 1)
    pos = np.arange(klen - 1, lo - 1, -1, dtype=np.float64)
    if clamp is not None:
        pos = np.clip(pos, -clamp, clamp)
    inv = 1.0 / base ** (np.arange(0.0, dim, 2.0) / dim)
    a = pos[:, None] * inv
    return np.concatenate([np.sin(a), np.cos(a)], axis=-1)


def ref_kerple(q, k, r1, r2, kind, off=None):
    d = np.abs(ref_rel(q, k, off)).astype(np.float64)
    r1, r2 = np.asarray(r1, np.float64)[:, None, None], np.asarray(r2, np.float64)[:, None, None]
    if kind == "log":
        return -r1 * np.log(1.0 + r2 * d)
    return -r1 * d**r2


def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(-1, keepdims=True)


def default_int(xp):
    return xp.ns.__array_namespace_info__().default_dtypes(device=xp.device)["integral"]


T5_CONFIGS = [
    (32, 128, True),
    (32, 128, False),
    (32, 100, True),
    (64, 1000, False),
    (16, 50, True),
    (8, 20, False),
    (128, 4096, True),
    (48, 333, True),
    (4, 3, True),
    (2, 2, False),
    (3, 2, False),
    # configurations where float32 rounding moves a bucket boundary away from
    # the real-number formula (a float64 evaluation gets them wrong)
    (9, 128, False),
    (20, 160, True),
    (38, 288, True),
    # thresholds beyond the lookup table: counted instead
    (32, 10**6, True),
    (16, 300_000, False),
]


# ---------------------------------------------------------------- relative positions
@pytest.mark.parametrize(
    ("q", "k", "off"), [(5, 5, None), (3, 7, None), (4, 6, 0), (2, 3, -4), (6, 2, None), (0, 3, None)]
)
def test_relative_positions(xp, q, k, off):
    got = xp.call(posenc.relative_positions, q, k, offset=off, xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_rel(q, k, off), dtype=default_int(xp))


@pytest.mark.parametrize("max_distance", [0, 1, 3, 50])
def test_relative_positions_clipped(xp, max_distance):
    got = xp.call(posenc.relative_positions, 4, 9, max_distance=max_distance, xp=xp.ns, device=xp.device)
    exp = np.clip(ref_rel(4, 9), -max_distance, max_distance)
    xp.assert_close(got, exp, dtype=default_int(xp))
    # Shaw et al.'s table indices
    if xp.has_values:
        idx = xp.to_numpy(got) + max_distance
        assert idx.min() >= 0 and idx.max() <= 2 * max_distance


def test_relative_positions_dtype(xp):
    got = xp.call(posenc.relative_positions, 3, 4, dtype=xp.dtype("int32"), xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_rel(3, 4), dtype=xp.dtype("int32"))
    got = xp.call(posenc.relative_positions, 3, 4, dtype="int16", xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_rel(3, 4), dtype=xp.dtype("int16"))


def test_relative_positions_jax_default_int32():
    jnp = pytest.importorskip("jax.numpy")
    import jax

    if jax.config.jax_enable_x64:
        pytest.skip("x64 enabled")
    assert posenc.relative_positions(3, xp=jnp).dtype == jnp.int32
    assert posenc.t5_buckets(3, xp=jnp).dtype == jnp.int32


def test_relative_positions_dtype_too_narrow():
    with pytest.raises(ValueError, match="dtype"):
        posenc.relative_positions(200, dtype=np.int8)
    with pytest.raises(TypeError, match="dtype"):
        posenc.relative_positions(3, dtype=np.float32)
    with pytest.raises(ValueError, match="dtype"):
        posenc.relative_positions(3, dtype="int77")


@settings(max_examples=40, deadline=None)
@given(q=st.integers(0, 12), k=st.integers(0, 12), off=st.integers(-20, 20), md=st.integers(0, 15))
def test_relative_positions_property(q, k, off, md):
    r = posenc.relative_positions(q, k, offset=off)
    np.testing.assert_array_equal(r, ref_rel(q, k, off))
    rc = posenc.relative_positions(q, k, offset=off, max_distance=md)
    np.testing.assert_array_equal(rc, np.clip(ref_rel(q, k, off), -md, md))


# ---------------------------------------------------------------- ALiBi slopes
def test_alibi_slopes_reference_1_to_64():
    for n in range(1, 65):
        got = posenc.alibi_slopes(n)
        ref = np.array(ref_get_slopes(n))
        assert got.shape == (n,) and got.dtype == np.float64
        # the reference multiplies start * ratio**i and accumulates a few ulp
        np.testing.assert_allclose(got, ref, rtol=1e-14, atol=0, err_msg=f"num_heads={n}")


def test_alibi_slopes_correctly_rounded():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    for n in (3, 8, 12, 16, 24, 37, 64):
        got = posenc.alibi_slopes(n)
        c = 2 ** math.floor(math.log2(n))
        expo = [mpmath.mpf(8) * h / c for h in range(1, c + 1)]
        expo += [mpmath.mpf(8) * h / (2 * c) for h in range(1, 2 * c + 1, 2)][: n - c]
        exact = np.array([float(mpmath.power(2, -e)) for e in expo])
        np.testing.assert_allclose(got, exact, rtol=2.3e-16, atol=0)


@pytest.mark.parametrize("n", [1, 5, 8, 12, 40])
def test_alibi_slopes_backends(xp, n):
    got = xp.call(posenc.alibi_slopes, n, xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_get_slopes(n), rtol=xp.tol(), dtype=xp.default_float)


def test_alibi_slopes_values():
    np.testing.assert_array_equal(posenc.alibi_slopes(8), 2.0 ** -np.arange(1, 9))
    # 12 heads: the 8 slopes of 8 heads, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
    np.testing.assert_allclose(posenc.alibi_slopes(12)[8:], 2.0 ** -np.array([0.5, 1.5, 2.5, 3.5]), rtol=1e-15)


def test_alibi_slopes_match_transformers():
    torch = pytest.importorskip("torch")
    bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
    mpt = pytest.importorskip("transformers.models.mpt.modeling_mpt")
    for n in (1, 3, 6, 8, 12, 16, 24, 33, 40, 64):
        ours = posenc.alibi_slopes(n, xp=torch)
        # BLOOM raises a float32 base to integer powers: a few float32 ulp off ours.  Its slopes are
        # build_alibi_tensor's row of the second position (slope * 1; every transformers 5 has it)
        theirs = bloom.build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), n, torch.float32)[:, 0, 1]
        torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=0)
        for max_bias in (8.0, 16.0):
            # MPT: (num_heads, 1, L) = slope * (j - (L - 1)); take j = 0 (value -(L-1) * slope)
            t = mpt.build_mpt_alibi_tensor(n, 2, alibi_bias_max=max_bias)
            mine = posenc.alibi_slopes(n, max_bias=max_bias, xp=torch)
            torch.testing.assert_close(-t[:, 0, 0], mine, rtol=2e-7, atol=0)


# ---------------------------------------------------------------- ALiBi bias
@pytest.mark.parametrize(
    ("h", "q", "k", "off"), [(4, 5, 5, None), (6, 2, 9, None), (3, 4, 6, 0), (1, 1, 1, None), (2, 0, 3, None)]
)
def test_alibi_bias_paper(xp, h, q, k, off):
    got = xp.call(posenc.alibi_bias, h, q, k, offset=off, xp=xp.ns, device=xp.device)
    m = np.array(ref_get_slopes(h))[:, None, None]
    exp = -m * np.abs(ref_rel(q, k, off))
    xp.assert_close(got, exp, atol=0, rtol=2 * xp.tol(), dtype=xp.default_float)
    if xp.has_values and q == k:
        assert np.all(np.diagonal(xp.to_numpy(got), axis1=1, axis2=2) == 0)


@pytest.mark.parametrize("form", ["bloom", "mpt"])
def test_alibi_bias_broadcast_forms(xp, form):
    got = xp.call(posenc.alibi_bias, 5, 3, 7, form=form, xp=xp.ns, device=xp.device)
    m = np.array(ref_get_slopes(5))[:, None, None]
    j = np.arange(7)[None, None, :]
    exp = m * (j if form == "bloom" else j - 6)
    xp.assert_close(got, exp, atol=0, rtol=2 * xp.tol(), dtype=xp.default_float)


@pytest.mark.parametrize("form", ["paper", "bloom", "mpt"])
def test_alibi_bias_causal(xp, form):
    got = xp.call(posenc.alibi_bias, 3, 4, 6, form=form, causal=True, xp=xp.ns, device=xp.device)
    xp.check_array(got, shape=(3, 4, 6), dtype=xp.default_float)
    if not xp.has_values:
        return
    g = xp.to_numpy(got)
    future = ref_rel(4, 6) > 0
    assert np.all(np.isneginf(g[:, future])) and np.all(np.isfinite(g[:, ~future]))
    # every form gives the paper's attention
    paper = -np.array(ref_get_slopes(3))[:, None, None] * np.abs(ref_rel(4, 6))
    np.testing.assert_allclose(softmax(g), softmax(np.where(future, -np.inf, paper)), atol=5e-7)


@pytest.mark.parametrize(("h", "q", "k"), [(8, 16, 16), (12, 5, 21), (5, 1, 40)])
def test_alibi_forms_same_attention_after_causal_softmax(h, q, k):
    """The paper's -m|i-j|, BLOOM's m*j, MPT's m*(j-(L-1)) and the reference
    repository's m*j + triu(-inf) give one attention (queries: the last q)."""
    rng = np.random.default_rng(h * 100 + q)
    logits = rng.standard_normal((h, q, k)) * 3
    future = ref_rel(q, k) > 0
    mask = np.where(future, -np.inf, 0.0)
    m = np.array(ref_get_slopes(h))[:, None, None]
    j = np.arange(k)[None, None, :]
    # the reference repository (fairseq): alibi = slopes * arange(maxpos), added to the future mask
    ref_repo = softmax(logits + m * j + mask)
    paper = softmax(logits + posenc.alibi_bias(h, q, k) + mask)
    bloom = softmax(logits + posenc.alibi_bias(h, q, k, form="bloom") + mask)
    mpt = softmax(logits + posenc.alibi_bias(h, q, k, form="mpt") + mask)
    for other in (ref_repo, bloom, mpt):
        np.testing.assert_allclose(paper, other, rtol=1e-12, atol=1e-15)
    # while the raw biases differ (the broadcast forms are not the paper's matrix)
    assert np.abs(posenc.alibi_bias(h, q, k, form="bloom") - posenc.alibi_bias(h, q, k)).max() > 0.1


def test_alibi_bias_matches_transformers():
    torch = pytest.importorskip("torch")
    bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
    mpt = pytest.importorskip("transformers.models.mpt.modeling_mpt")
    h, q, k = 12, 7, 19
    ours_b = posenc.alibi_bias(h, q, k, form="bloom", xp=torch)
    hf_b = bloom.build_alibi_tensor(torch.ones(1, k, dtype=torch.long), h, torch.float32)
    torch.testing.assert_close(ours_b, hf_b, rtol=3e-7, atol=0)
    ours_m = posenc.alibi_bias(h, q, k, form="mpt", xp=torch)
    torch.testing.assert_close(ours_m, mpt.build_mpt_alibi_tensor(h, k), rtol=3e-7, atol=0)
    # after the causal softmax, BLOOM's tensor gives the paper's attention
    logits = torch.randn(h, q, k, dtype=torch.float64)
    mask = torch.from_numpy(np.where(ref_rel(q, k) > 0, -np.inf, 0.0))
    a = torch.softmax(logits + posenc.alibi_bias(h, q, k, xp=torch, dtype=torch.float64) + mask, -1)
    for hf in (hf_b, mpt.build_mpt_alibi_tensor(h, k)):
        b = torch.softmax(logits + hf.double() + mask, -1)
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_alibi_bias_slopes_array(xp):
    s = np.array([0.5, 0.1, 0.01])
    got = xp.call(posenc.alibi_bias, 3, 4, slopes=xp.asarray(s))
    exp = -s[:, None, None] * np.abs(ref_rel(4, 4))
    xp.assert_close(got, exp, rtol=2 * xp.tol(), dtype=xp.asarray(s).dtype)


def test_alibi_bias_slopes_gradient():
    torch = pytest.importorskip("torch")
    s = torch.tensor([0.5, 0.25], requires_grad=True)
    posenc.alibi_bias(2, 3, slopes=s).sum().backward()
    # d/ds_h sum(-s_h |i - j|) = -sum|i - j| = -8 for a 3x3 matrix
    torch.testing.assert_close(s.grad, torch.tensor([-8.0, -8.0]))


def test_alibi_bias_dtypes():
    torch = pytest.importorskip("torch")
    b = posenc.alibi_bias(4, 3, 5, dtype=torch.bfloat16)
    assert b.dtype == torch.bfloat16 and b.shape == (4, 3, 5)
    assert posenc.alibi_bias(4, 3, dtype=np.float32).dtype == np.float32
    s = torch.tensor([0.5, 0.25], dtype=torch.float16)
    assert posenc.alibi_bias(2, 3, slopes=s).dtype == torch.float16


def test_alibi_bias_long_range_float32():
    # |i - j| up to 10**5: the float32 bias is the rounded float64 product
    got = posenc.alibi_bias(4, 3, 100_000, dtype=np.float32)
    exp = -np.array(ref_get_slopes(4))[:, None, None] * np.abs(ref_rel(3, 100_000))
    np.testing.assert_allclose(got, exp, rtol=1.2e-7)


# ---------------------------------------------------------------- T5 buckets
@pytest.mark.parametrize(("nb", "md", "bidir"), T5_CONFIGS)
def test_t5_bucket_pure_python_oracle(nb, md, bidir):
    rng = np.random.default_rng(nb + md)
    rp = np.unique(
        np.concatenate(
            [
                np.arange(-3000, 3001),
                np.round(np.geomspace(1, 10**6, 400)).astype(np.int64),
                -np.round(np.geomspace(1, 10**6, 400)).astype(np.int64),
                rng.integers(-(10**6), 10**6 + 1, 2000),
                [10**6, -(10**6)],
            ]
        )
    )
    got = posenc.t5_bucket(rp, num_buckets=nb, max_distance=md, bidirectional=bidir)
    exp = np.array([ref_bucket(int(r), nb, md, bidir) for r in rp])
    np.testing.assert_array_equal(got, exp)
    assert got.dtype == np.int64


@pytest.mark.parametrize(("nb", "md", "bidir"), T5_CONFIGS)
def test_t5_bucket_bit_identical_to_transformers(nb, md, bidir):
    torch = pytest.importorskip("torch")
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    rp = torch.arange(-(10**6), 10**6 + 1)
    hf = t5.T5Attention._relative_position_bucket(rp, bidirectional=bidir, num_buckets=nb, max_distance=md)
    ours = posenc.t5_bucket(rp, num_buckets=nb, max_distance=md, bidirectional=bidir)
    assert ours.dtype == hf.dtype == torch.int64
    assert torch.equal(ours, hf)


@pytest.mark.parametrize(("nb", "md", "bidir"), [(34, 27, True), (17, 343, False), (96, 81, True)])
def test_t5_bucket_exact_boundaries(nb, md, bidir):
    """Where the real-number formula lands exactly on a bucket boundary, the
    float32 result depends on the rounding of the platform's float32 log:
    torch, NumPy and JAX disagree there.  posenc uses the correctly rounded
    float32 log (the pure-Python oracle); transformers may differ from it at
    those distances only."""
    torch = pytest.importorskip("torch")
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    rp = np.arange(-5000, 5001)
    ours = posenc.t5_bucket(rp, num_buckets=nb, max_distance=md, bidirectional=bidir)
    np.testing.assert_array_equal(ours, [ref_bucket(int(r), nb, md, bidir) for r in rp])
    hf = t5.T5Attention._relative_position_bucket(
        torch.from_numpy(rp), bidirectional=bidir, num_buckets=nb, max_distance=md
    )
    nbe = nb // 2 if bidir else nb
    me = nbe // 2
    for r in rp[ours != hf.numpy()]:
        n = abs(int(r))
        # (n / me) ** (nbe - me) == (md / me) ** b for an integer b: an exact boundary
        b = round(math.log(n / me) / math.log(md / me) * (nbe - me))
        assert n ** (nbe - me) * me**b == md**b * me ** (nbe - me), f"distance {r} is no exact boundary"


def test_t5_table_and_threshold_paths_agree(monkeypatch):
    from posenc import bias

    rp = np.concatenate([np.arange(-3000, 3001), [-(2**62), 2**62]])
    for nb, md, bidir in T5_CONFIGS[:9]:
        table = posenc.t5_bucket(rp, num_buckets=nb, max_distance=md, bidirectional=bidir)
        monkeypatch.setattr(bias, "_TABLE_LIMIT", 0)
        counted = posenc.t5_bucket(rp, num_buckets=nb, max_distance=md, bidirectional=bidir)
        monkeypatch.setattr(bias, "_TABLE_LIMIT", 2**16)
        np.testing.assert_array_equal(table, counted)


@pytest.mark.parametrize(
    ("nb", "md", "bidir"), [(32, 128, True), (32, 128, False), (16, 50, True), (64, 1000, False), (32, 10**6, False)]
)
def test_t5_bucket_backends(xp, nb, md, bidir):
    rp = np.concatenate([np.arange(-300, 301), [-(10**6), -5000, 1999, 10**6]]).reshape(-1, 5)
    got = xp.call(posenc.t5_bucket, xp.asarray(rp), num_buckets=nb, max_distance=md, bidirectional=bidir)
    exp = np.vectorize(lambda r: ref_bucket(int(r), nb, md, bidir))(rp)
    idx = xp.ns.__array_namespace_info__().default_dtypes(device=xp.device)["indexing"]
    xp.assert_close(got, exp, dtype=idx)


def test_t5_bucket_integer_extremes():
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32):
        info = np.iinfo(dt)
        cand = {int(info.min), int(info.min) + 1, -1, 0, 1, 7, 100, int(info.max) - 1, int(info.max)}
        vals = np.array(sorted(v for v in cand if info.min <= v <= info.max), dtype=dt)
        for bidir in (True, False):
            got = posenc.t5_bucket(vals, bidirectional=bidir)
            exp = [ref_bucket(int(v), 32, 128, bidir) for v in vals]
            np.testing.assert_array_equal(got, exp, err_msg=f"{dt} bidirectional={bidir}")
    torch = pytest.importorskip("torch")
    got = posenc.t5_bucket(torch.tensor([-(2**63), 2**63 - 1, -(2**31), 0]))
    assert got.tolist() == [15, 31, 15, 0]


def test_t5_bucket_dtypes_and_shapes():
    rp = np.arange(-6, 6, dtype=np.int32).reshape(2, 3, 2)
    got = posenc.t5_bucket(rp, dtype=np.int16)
    assert got.shape == (2, 3, 2) and got.dtype == np.int16
    np.testing.assert_array_equal(got, np.vectorize(lambda r: ref_bucket(int(r)))(rp))
    assert posenc.t5_bucket([3, -3]).tolist() == [19, 3]
    assert posenc.t5_bucket(np.array(-200)).shape == ()
    with pytest.raises(ValueError, match="dtype"):
        posenc.t5_bucket(rp, num_buckets=512, max_distance=1024, dtype=np.int8)


@pytest.mark.parametrize(("q", "k", "off"), [(7, 7, None), (1, 300, None), (5, 40, 0), (40, 9, None), (0, 4, None)])
@pytest.mark.parametrize("bidir", [True, False])
def test_t5_buckets(xp, q, k, off, bidir):
    got = xp.call(posenc.t5_buckets, q, k, offset=off, bidirectional=bidir, xp=xp.ns, device=xp.device)
    exp = np.vectorize(lambda r: ref_bucket(int(r), 32, 128, bidir), otypes=[np.int64])(ref_rel(q, k, off))
    idx = xp.ns.__array_namespace_info__().default_dtypes(device=xp.device)["indexing"]
    xp.assert_close(got, exp.reshape(q, k), dtype=idx)


def test_t5_buckets_match_transformers_compute_bias():
    torch = pytest.importorskip("torch")
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    for q, k, past, bidir in ((64, 64, 0, True), (1, 513, 512, False), (17, 300, 283, False), (300, 300, 0, False)):
        rel = torch.arange(k)[None, :] - (torch.arange(q)[:, None] + past)
        hf = t5.T5Attention._relative_position_bucket(rel, bidirectional=bidir, num_buckets=32, max_distance=128)
        ours = posenc.t5_buckets(q, k, offset=past, bidirectional=bidir, xp=torch)
        assert torch.equal(ours, hf)


@settings(max_examples=50, deadline=None)
@given(
    rp=st.lists(st.integers(-(10**6), 10**6), min_size=1, max_size=30),
    cfg=st.sampled_from(T5_CONFIGS),
)
def test_t5_bucket_property(rp, cfg):
    nb, md, bidir = cfg
    got = posenc.t5_bucket(np.array(rp), num_buckets=nb, max_distance=md, bidirectional=bidir)
    assert got.min() >= 0 and got.max() < nb
    np.testing.assert_array_equal(got, [ref_bucket(r, nb, md, bidir) for r in rp])


@settings(max_examples=30, deadline=None)
@given(q=st.integers(0, 30), k=st.integers(0, 30), off=st.integers(-40, 200), bidir=st.booleans())
def test_t5_buckets_equal_bucket_of_relative_positions(q, k, off, bidir):
    a = posenc.t5_buckets(q, k, offset=off, bidirectional=bidir, num_buckets=16, max_distance=40)
    rel = posenc.relative_positions(q, k, offset=off)
    b = posenc.t5_bucket(rel, bidirectional=bidir, num_buckets=16, max_distance=40)
    np.testing.assert_array_equal(a, b)


def test_t5_bucket_monotone():
    # buckets never decrease with the distance, on each side
    d = np.arange(0, 5000)
    for bidir in (True, False):
        neg = posenc.t5_bucket(-d, bidirectional=bidir)
        assert np.all(np.diff(neg) >= 0)
    pos = posenc.t5_bucket(d[1:])
    assert np.all(np.diff(pos) >= 0) and pos.min() == 17


# ---------------------------------------------------------------- Transformer-XL
@pytest.mark.parametrize(("q", "k", "dim"), [(4, 4, 8), (3, 10, 16), (1, 1, 2), (5, 0, 4)])
def test_relative_sinusoidal(xp, q, k, dim):
    got = xp.call(posenc.relative_sinusoidal, q, k, dim=dim, xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_txl(k, dim).reshape(k, dim), atol=xp.tol(), dtype=xp.default_float)


@pytest.mark.parametrize("clamp", [0, 2, 5, 100])
@pytest.mark.parametrize("bidir", [False, True])
def test_relative_sinusoidal_clamp_bidirectional(xp, clamp, bidir):
    got = xp.call(
        posenc.relative_sinusoidal,
        4,
        7,
        dim=6,
        clamp_len=clamp,
        bidirectional=bidir,
        base=500.0,
        xp=xp.ns,
        device=xp.device,
    )
    exp = ref_txl(7, 6, base=500.0, clamp=clamp, qlen=4 if bidir else None)
    xp.assert_close(got, exp, atol=xp.tol(), dtype=xp.default_float)


def test_relative_sinusoidal_long_float32():
    got = posenc.relative_sinusoidal(8, 200_000, dim=32, dtype=np.float32)
    assert np.abs(got - ref_txl(200_000, 32)).max() <= 2.5e-7
    # the usual float32 table (pos_seq * inv_freq rounded in float32) is far off
    pos = np.arange(199_999, -1, -1, dtype=np.float32)[:, None]
    inv = (1.0 / 10000 ** (np.arange(0.0, 32, 2.0) / 32)).astype(np.float32)
    assert np.abs(np.sin(pos * inv) - ref_txl(200_000, 32)[:, :16]).max() > 1e-3


def test_relative_sinusoidal_matches_transformer_xl_and_xlnet():
    torch = pytest.importorskip("torch")
    xlnet = pytest.importorskip("transformers.models.xlnet.modeling_xlnet")
    m = xlnet.XLNetModel
    for q, k, attn, clamp in ((5, 9, "bi", -1), (5, 9, "uni", -1), (6, 6, "bi", 3)):
        self = types.SimpleNamespace(
            d_model=16, attn_type=attn, bi_data=False, clamp_len=clamp, positional_embedding=m.positional_embedding
        )
        hf = m.relative_positional_encoding(self, q, k)[:, 0, :]  # distances k .. -(q-1) (bi) or k .. 0 (uni)
        clamp_len = None if clamp < 0 else clamp
        ours = posenc.relative_sinusoidal(q, k, dim=16, bidirectional=attn == "bi", clamp_len=clamp_len, xp=torch)
        # XLNet's first row (distance k) is dropped by its relative shift
        torch.testing.assert_close(ours, hf[1:], atol=1e-5, rtol=0)
    # Transformer-XL's PositionalEmbedding written out in torch, float64
    k, d = 12, 10
    pos_seq = torch.arange(k - 1, -1, -1.0, dtype=torch.float64)
    inv_freq = 1 / (10000 ** (torch.arange(0.0, d, 2.0, dtype=torch.float64) / d))
    sinusoid = torch.outer(pos_seq, inv_freq)
    txl = torch.cat([sinusoid.sin(), sinusoid.cos()], dim=-1)
    ours = posenc.relative_sinusoidal(3, k, dim=d, xp=torch, dtype=torch.float64)
    torch.testing.assert_close(ours, txl, atol=1e-14, rtol=0)


@pytest.mark.parametrize(("q", "k"), [(2, 0), (3, 0), (0, 3), (1, 0), (0, 1), (4, 1)])
@pytest.mark.parametrize("clamp", [None, 0, 1])
def test_relative_sinusoidal_bidirectional_any_lengths(xp, q, k, clamp):
    # XLNet's attn_type="bi" table holds the distances klen .. -(qlen - 1)
    # (``arange(klen, -qlen, -1)``) whatever the lengths; posenc's is that
    # table without its first row: k + q - 1 rows, k - 1 down to -(q - 1)
    got = xp.call(
        posenc.relative_sinusoidal, q, k, dim=4, bidirectional=True, clamp_len=clamp, xp=xp.ns, device=xp.device
    )
    dist = np.arange(k, -q, -1.0)[1:]
    if clamp is not None:
        dist = np.clip(dist, -clamp, clamp)
    ang = dist[:, None] * 10000.0 ** (-np.arange(0.0, 4.0, 2.0) / 4)
    exp = np.concatenate([np.sin(ang), np.cos(ang)], axis=-1).reshape(k + q - 1, 4)
    xp.assert_close(got, exp, atol=xp.tol(), dtype=xp.default_float)


def test_relative_sinusoidal_empty_lengths_match_xlnet():
    torch = pytest.importorskip("torch")
    xlnet = pytest.importorskip("transformers.models.xlnet.modeling_xlnet")
    m = xlnet.XLNetModel
    for q, k, attn in ((2, 0, "bi"), (0, 3, "bi"), (3, 0, "uni"), (0, 3, "uni")):
        self = types.SimpleNamespace(
            d_model=8, attn_type=attn, bi_data=False, clamp_len=-1, positional_embedding=m.positional_embedding
        )
        hf = m.relative_positional_encoding(self, q, k)[:, 0, :]
        ours = posenc.relative_sinusoidal(q, k, dim=8, bidirectional=attn == "bi", xp=torch)
        assert ours.shape == hf[1:].shape
        torch.testing.assert_close(ours, hf[1:], atol=1e-6, rtol=0)
    assert posenc.relative_sinusoidal(0, 0, dim=4, bidirectional=True).shape == (0, 4)


def test_relative_sinusoidal_clamped_rows_are_writable():
    # every row one clamped distance: still a new array, not a broadcast view
    t = posenc.relative_sinusoidal(0, 5, dim=4, clamp_len=0)
    assert t.shape == (5, 4) and t.flags.writeable
    np.testing.assert_array_equal(t, np.tile([0.0, 0.0, 1.0, 1.0], (5, 1)))


def test_relative_sinusoidal_rows_match_sinusoidal():
    # row r is the concat sinusoidal code of distance key_len - 1 - r
    t = posenc.relative_sinusoidal(4, 9, dim=8, bidirectional=True)
    dist = np.arange(8, -4, -1)
    np.testing.assert_allclose(t, posenc.sinusoidal(dist, 8, layout="concat"), atol=1e-15)


# ---------------------------------------------------------------- KERPLE
R1 = np.array([0.5, 1.0, 2.5])
R2 = np.array([0.1, 1.0, 1.9])


@pytest.mark.parametrize("kind", ["log", "power"])
@pytest.mark.parametrize(("q", "k", "off"), [(6, 6, None), (2, 9, None), (4, 5, 0), (3, 0, None)])
def test_kerple_bias(xp, kind, q, k, off):
    r1, r2 = xp.asarray(R1), xp.asarray(R2)
    got = xp.call(posenc.kerple_bias, q, k, r1=r1, r2=r2, kind=kind, offset=off)
    exp = ref_kerple(q, k, R1, R2, kind, off)
    xp.assert_close(got, exp, atol=4 * xp.tol(), rtol=4 * xp.tol(), dtype=r1.dtype)


def test_kerple_bias_causal(xp):
    got = xp.call(posenc.kerple_bias, 3, 5, r1=xp.asarray(R1), r2=xp.asarray(R2), causal=True)
    exp = np.where(ref_rel(3, 5) > 0, -np.inf, ref_kerple(3, 5, R1, R2, "log"))
    xp.assert_close(got, exp, atol=4 * xp.tol(), rtol=4 * xp.tol())


def test_kerple_bias_lists_and_dtype(xp):
    got = xp.call(posenc.kerple_bias, 3, r1=[1.0, 2.0], r2=[0.5, 0.25], kind="power", xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_kerple(3, 3, [1.0, 2.0], [0.5, 0.25], "power"), atol=4 * xp.tol(), dtype=xp.default_float)


def test_kerple_power_r2_one_is_alibi():
    s = np.array(ref_get_slopes(4))
    power = posenc.kerple_bias(5, 8, r1=s, r2=np.ones(4), kind="power")
    np.testing.assert_allclose(power, posenc.alibi_bias(4, 5, 8), rtol=1e-15)


@pytest.mark.parametrize("kind", ["log", "power"])
def test_kerple_gradients_torch(kind):
    torch = pytest.importorskip("torch")
    r1 = torch.tensor(R1, requires_grad=True)
    r2 = torch.tensor(R2, requires_grad=True)
    bias = posenc.kerple_bias(4, 6, r1=r1, r2=r2, kind=kind)
    assert bias.dtype == torch.float64 and bias.requires_grad
    bias.sum().backward()
    d = np.abs(ref_rel(4, 6)).astype(np.float64)[None]
    a, b = R1[:, None, None], R2[:, None, None]
    if kind == "log":
        g1 = -np.log1p(b * d).sum((1, 2))
        g2 = (-a * d / (1 + b * d)).sum((1, 2))
    else:
        with np.errstate(divide="ignore"):
            logd = np.where(d > 0, np.log(np.where(d > 0, d, 1.0)), 0.0)
        g1 = -(d**b).sum((1, 2))
        g2 = (-a * d**b * logd).sum((1, 2))
    np.testing.assert_allclose(r1.grad.numpy(), g1, rtol=1e-12)
    np.testing.assert_allclose(r2.grad.numpy(), g2, rtol=1e-12)
    # bfloat16 parameters: computed in float32, returned in bfloat16, gradients flow
    p = torch.tensor([1.0, 0.5], dtype=torch.bfloat16, requires_grad=True)
    out = posenc.kerple_bias(3, r1=p, r2=p, kind=kind)
    assert out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert p.grad is not None and torch.isfinite(p.grad).all()


@pytest.mark.parametrize("kind", ["log", "power"])
def test_kerple_gradients_jax(kind):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def loss(r1, r2):
        return jnp.sum(posenc.kerple_bias(4, 6, r1=r1, r2=r2, kind=kind))

    r1, r2 = jnp.asarray(R1, dtype=jnp.float32), jnp.asarray(R2, dtype=jnp.float32)
    g1, g2 = jax.jit(jax.grad(loss, argnums=(0, 1)))(r1, r2)
    d = np.abs(ref_rel(4, 6)).astype(np.float64)[None]
    a, b = R1[:, None, None], R2[:, None, None]
    if kind == "log":
        e1, e2 = -np.log1p(b * d).sum((1, 2)), (-a * d / (1 + b * d)).sum((1, 2))
    else:
        logd = np.log(np.where(d > 0, d, 1.0))
        e1, e2 = -(d**b).sum((1, 2)), (-a * d**b * logd).sum((1, 2))
    np.testing.assert_allclose(np.asarray(g1), e1, rtol=2e-6)
    np.testing.assert_allclose(np.asarray(g2), e2, rtol=2e-6)


def test_kerple_traced_values_not_checked():
    jax = pytest.importorskip("jax")
    # under jit the values are unknown: no check, no crash (non-positive values give NaN or junk)
    out = jax.jit(lambda a, b: posenc.kerple_bias(2, r1=a, r2=b))(jax.numpy.ones(1), -jax.numpy.ones(1))
    assert out.shape == (1, 2, 2)


# ---------------------------------------------------------------- offsets as arrays
@pytest.mark.parametrize(("q", "k", "off"), [(1, 6, 5), (3, 40, 30), (2, 5, -3)])
def test_array_offsets(xp, q, k, off):
    """``offset`` as a 0-d integer array (a decode step's cache length): traced
    under ``jax.jit`` and lazy on Dask, where the shapes do not depend on it."""
    o = xp.asarray(np.asarray(off, dtype=np.int32))
    kw = {"offset": o, "xp": xp.ns, "device": xp.device}
    rel = ref_rel(q, k, off)
    got = xp.call(posenc.relative_positions, q, k, max_distance=4, **kw)
    xp.assert_close(got, np.clip(rel, -4, 4), dtype=default_int(xp))
    m = np.array(ref_get_slopes(3))[:, None, None]
    got = xp.call(posenc.alibi_bias, 3, q, k, causal=True, **kw)
    exp = np.where(rel > 0, -np.inf, -m * np.abs(rel))
    xp.assert_close(got, exp, rtol=2 * xp.tol(), dtype=xp.default_float)
    got = xp.call(posenc.t5_buckets, q, k, bidirectional=False, **kw)
    idx = xp.ns.__array_namespace_info__().default_dtypes(device=xp.device)["indexing"]
    xp.assert_close(got, np.vectorize(lambda r: ref_bucket(int(r), 32, 128, False))(rel), dtype=idx)
    got = xp.call(posenc.kerple_bias, q, k, r1=xp.asarray(R1), r2=xp.asarray(R2), offset=o)
    xp.assert_close(got, ref_kerple(q, k, R1, R2, "log", off), atol=4 * xp.tol(), rtol=4 * xp.tol())


def test_array_offset_refused_when_not_integer():
    with pytest.raises(TypeError, match="`offset` must be an integer"):
        posenc.relative_positions(2, 3, offset=np.asarray(1.0))
    with pytest.raises(ValueError, match="`offset`"):
        posenc.t5_buckets(2, 3, offset=np.asarray(2**62))


def test_jax_jit_offset_does_not_retrace():
    """One trace serves every cache length of a jitted decode step."""
    jax = pytest.importorskip("jax")
    traces = []

    def step(off):
        traces.append(off)
        return posenc.alibi_bias(2, 1, 8, offset=off, xp=jax.numpy), posenc.t5_buckets(1, 8, offset=off, xp=jax.numpy)

    f = jax.jit(step)
    for off in (0, 3, 7, 100):
        bias, buckets = f(jax.numpy.asarray(off))
        np.testing.assert_array_equal(np.asarray(bias), posenc.alibi_bias(2, 1, 8, offset=off, dtype=np.float32))
        np.testing.assert_array_equal(np.asarray(buckets), posenc.t5_buckets(1, 8, offset=off).astype(np.int32))
    assert len(traces) == 1


# ---------------------------------------------------------------- devices, laziness
def test_dask_stays_lazy_and_chunked():
    da = pytest.importorskip("dask.array")
    import dask

    from tests.conftest import _forbid_compute

    r1 = da.from_array(R1, chunks=1)
    with dask.config.set(scheduler=_forbid_compute):
        b = posenc.kerple_bias(30, 40, r1=r1, r2=da.from_array(R2, chunks=2))
        t = posenc.t5_bucket(da.arange(-500, 500, chunks=100))
        m = posenc.t5_buckets(50, 60)
        a = posenc.alibi_bias(4, 30, 40, xp=da)
    np.testing.assert_allclose(b.compute(), ref_kerple(30, 40, R1, R2, "log"), rtol=1e-12)
    np.testing.assert_array_equal(t.compute(), [ref_bucket(r) for r in range(-500, 500)])
    np.testing.assert_array_equal(m, posenc.t5_buckets(50, 60))
    np.testing.assert_allclose(a.compute(), posenc.alibi_bias(4, 30, 40))


def test_torch_meta_and_strict_devices():
    torch = pytest.importorskip("torch")
    r = torch.ones(3, device="meta")
    out = posenc.kerple_bias(4, 5, r1=r, r2=r)
    assert out.device.type == "meta" and out.shape == (3, 4, 5)
    out = posenc.t5_bucket(torch.arange(-5, 5, device="meta"))
    assert out.device.type == "meta" and out.dtype == torch.int64
    with pytest.raises(ValueError, match="device"):
        posenc.alibi_bias(2, 3, slopes=torch.ones(2, device="meta"), device="cpu")
    st = pytest.importorskip("array_api_strict")
    d1 = st.Device("device1")
    assert posenc.t5_bucket(st.asarray([1, -1], device=d1)).device == d1
    assert posenc.relative_positions(2, xp=st, device=d1).device == d1


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: posenc.alibi_slopes(0), ValueError, "num_heads"),
        (lambda: posenc.alibi_slopes(-2), ValueError, "num_heads"),
        (lambda: posenc.alibi_slopes(2.0), TypeError, "num_heads"),
        (lambda: posenc.alibi_slopes(4, max_bias=0.0), ValueError, "max_bias"),
        (lambda: posenc.alibi_bias(0, 3), ValueError, "num_heads"),
        (lambda: posenc.alibi_bias(2, -1), ValueError, "query_len"),
        (lambda: posenc.alibi_bias(2, 3, -4), ValueError, "key_len"),
        (lambda: posenc.alibi_bias(2, 3, form="t5"), ValueError, "form"),
        (lambda: posenc.alibi_bias(2, 3, causal=1), TypeError, "causal"),
        (lambda: posenc.alibi_bias(2, 3, slopes=np.ones(3)), ValueError, "slopes"),
        (lambda: posenc.alibi_bias(2, 3, slopes=np.ones(2), max_bias=4.0), ValueError, "max_bias"),
        (lambda: posenc.alibi_bias(2, 3, slopes=np.ones(2, dtype=np.int64)), TypeError, "slopes"),
        (lambda: posenc.relative_positions(-1), ValueError, "query_len"),
        (lambda: posenc.relative_positions(3, -2), ValueError, "key_len"),
        (lambda: posenc.relative_positions(3, offset=1.5), TypeError, "offset"),
        (lambda: posenc.relative_positions(3, max_distance=-1), ValueError, "max_distance"),
        (lambda: posenc.t5_bucket(np.arange(3), num_buckets=31), ValueError, "num_buckets"),
        (lambda: posenc.t5_bucket(np.arange(3), num_buckets=2), ValueError, "num_buckets"),
        (lambda: posenc.t5_bucket(np.arange(3), num_buckets=1, bidirectional=False), ValueError, "num_buckets"),
        (lambda: posenc.t5_bucket(np.arange(3), max_distance=16), ValueError, "max_distance"),
        (
            lambda: posenc.t5_bucket(np.arange(3), num_buckets=8, max_distance=2, bidirectional=False),
            ValueError,
            "max_distance",
        ),
        (lambda: posenc.t5_bucket(np.arange(3.0)), TypeError, "relative_positions"),
        (lambda: posenc.t5_bucket([1.5, 2.0]), TypeError, "relative_positions"),
        (lambda: posenc.t5_bucket(2.0), TypeError, "relative_positions"),
        (lambda: posenc.t5_bucket(np.array([True])), TypeError, "relative_positions"),
        (lambda: posenc.t5_bucket(np.arange(3), bidirectional="yes"), TypeError, "bidirectional"),
        (lambda: posenc.t5_bucket(np.arange(3), dtype=np.float32), TypeError, "dtype"),
        (lambda: posenc.t5_buckets(-3), ValueError, "query_len"),
        (lambda: posenc.t5_buckets(3, num_buckets=33), ValueError, "num_buckets"),
        (lambda: posenc.t5_buckets(3, max_distance=10), ValueError, "max_distance"),
        (lambda: posenc.relative_sinusoidal(3, dim=5), ValueError, "dim"),
        (lambda: posenc.relative_sinusoidal(3, dim=0), ValueError, "dim"),
        (lambda: posenc.relative_sinusoidal(3, -1, dim=4), ValueError, "key_len"),
        (lambda: posenc.relative_sinusoidal(3, dim=4, clamp_len=-1), ValueError, "clamp_len"),
        (lambda: posenc.relative_sinusoidal(3, dim=4, base=-2.0), ValueError, "base"),
        (lambda: posenc.kerple_bias(3, r1=np.ones(2), r2=np.ones(3)), ValueError, "r2"),
        (lambda: posenc.kerple_bias(3, r1=np.ones((2, 1)), r2=np.ones(2)), ValueError, "r1"),
        (lambda: posenc.kerple_bias(3, r1=np.array(1.0), r2=np.ones(1)), ValueError, "r1"),
        (lambda: posenc.kerple_bias(3, r1=np.array([1.0, 0.0]), r2=np.ones(2)), ValueError, "r1"),
        (lambda: posenc.kerple_bias(3, r1=np.ones(2), r2=np.array([1.0, -1.0])), ValueError, "r2"),
        (lambda: posenc.kerple_bias(3, r1=np.ones(2), r2=np.array([1.0, np.nan])), ValueError, "r2"),
        (lambda: posenc.kerple_bias(3, r1=np.ones(2), r2=np.array([1.0, 2.5]), kind="power"), ValueError, "r2"),
        (lambda: posenc.kerple_bias(3, r1=np.ones(2, dtype=np.int64), r2=np.ones(2)), TypeError, "r1"),
        (lambda: posenc.kerple_bias(3, r1="a", r2=np.ones(2)), TypeError, "r1"),
        (lambda: posenc.kerple_bias(3, r1=np.ones(2), r2=np.ones(2), kind="exp"), ValueError, "kind"),
        (lambda: posenc.kerple_bias(-1, r1=np.ones(2), r2=np.ones(2)), ValueError, "query_len"),
    ],
)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=f"`{name}`"):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: posenc.alibi_slopes(2**41),
        lambda: posenc.alibi_bias(2**41, 0),
        lambda: posenc.alibi_bias(2**64, 2),
        lambda: posenc.relative_positions(2**41, 0),
        lambda: posenc.relative_positions(0, 2**41),
        lambda: posenc.t5_buckets(2**41, 0),
        lambda: posenc.kerple_bias(0, 2**41, r1=np.ones(1), r2=np.ones(1)),
        lambda: posenc.relative_sinusoidal(2**41, 0, dim=2, bidirectional=True),
    ],
)
def test_counts_above_the_limit_are_refused_at_once(call):
    # even when the output would be empty, lengths and head counts above
    # 2**40 are refused before any loop or allocation of that length
    with pytest.raises(ValueError, match=r"2\*\*40"):
        call()


def test_huge_bucket_input_is_refused_without_reading():
    view = np.broadcast_to(np.zeros(1, np.int64), (2**41,))
    with pytest.raises(ValueError, match=r"2\*\*40"):
        posenc.t5_bucket(view)


def test_list_parameters_beyond_the_working_dtype():
    # Python lists become arrays of the working dtype: values it cannot hold
    # are refused (no overflow to inf in the conversion)
    with pytest.raises(ValueError, match="`slopes`"):
        posenc.alibi_bias(2, 3, slopes=[1e300, 1.0], dtype="float32")
    with pytest.raises(ValueError, match="`r1`"):
        posenc.kerple_bias(3, r1=[1e300], r2=[1.0], dtype="float32")
    with pytest.raises(ValueError, match="`r2`"):
        posenc.kerple_bias(3, r1=[1.0], r2=[math.nan])
    # float64 holds 1e300
    assert np.isfinite(posenc.alibi_bias(1, 2, slopes=[1e300])).all()


def test_empty_outputs_allocate_nothing_long():
    # an empty output at the limit is made directly, without an arange of 2**40
    assert posenc.relative_positions(2**40, 0).shape == (2**40, 0)
    assert posenc.t5_buckets(0, 2**40).shape == (0, 2**40)
    assert posenc.alibi_bias(2, 2**40, 0).shape == (2, 2**40, 0)
    assert posenc.alibi_bias(2, 0, 2**40, form="bloom", causal=True).shape == (2, 0, 2**40)


def test_alibi_slopes_many_heads():
    # above the exact (Python) range the slopes come from NumPy, within an ulp
    n = 2**16 + 37
    got = posenc.alibi_slopes(n)
    c = 2**16
    expo = np.concatenate([8.0 * np.arange(1, c + 1) / c, 8.0 * np.arange(1, 2 * (n - c), 2) / (2 * c)])
    np.testing.assert_allclose(got, [2.0**-e for e in expo], rtol=2.3e-16, atol=0)


@pytest.mark.parametrize("fn", ["t5_bucket", "t5_buckets", "relative_positions"])
def test_integer_dtype_given_an_array(fn):
    torch = pytest.importorskip("torch")
    args = (np.array([1, -2]),) if fn == "t5_bucket" else (3, 4)
    for bad in (torch.zeros(3), np.zeros(3, np.int64)):
        with pytest.raises(TypeError, match="`dtype`") as info:
            getattr(posenc, fn)(*args, dtype=bad, xp=np)
        assert "array of shape (3,)" in str(info.value)


def test_bad_input_torch_parameters():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="`r1`"):
        posenc.kerple_bias(3, r1=torch.tensor([1.0, -1.0], requires_grad=True), r2=torch.ones(2))
    with pytest.raises(TypeError, match="`r2`"):
        posenc.kerple_bias(3, r1=torch.ones(2), r2=np.ones(2))
    # a power-kernel r2 of exactly 2 is allowed (Gaussian-like)
    posenc.kerple_bias(3, r1=torch.ones(2), r2=torch.full((2,), 2.0), kind="power")
