"""Rotary position embeddings against float64 formulas written from the papers.

RoFormer (Su et al. 2021) rotates pairs of features by ``p * theta_i`` with
``theta_i = base^(-2i/d)``; GPT-NeoX / Hugging Face pair feature ``i`` with
``i + d/2`` (``rotate_half``), GPT-J / RoFormer pair ``2i`` with ``2i + 1``
(``rotate_every_two``).  xPos (Sun et al. 2022) scales pair ``i`` by
``((2i + 0.4 d) / (1.4 d)) ** (p / scale_base)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc
from posenc import scaling


# ---------------------------------------------------------------- oracles
def ref_inv_freq(dim, base=10000.0):
    return np.array([1.0 / base ** (2 * i / dim) for i in range(dim // 2)])


def ref_cos_sin(pos, dim, base=10000.0, layout="half", inv=None, attention=1.0):
    pos = np.asarray(pos, dtype=np.float64)
    w = ref_inv_freq(dim, base) if inv is None else np.asarray(inv)
    a = pos[..., None] * w
    if layout == "half":
        a = np.concatenate([a, a], axis=-1)
    else:
        a = np.repeat(a, 2, axis=-1)
    return attention * np.cos(a), attention * np.sin(a)


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rotate_every_two(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return np.stack([-x2, x1], axis=-1).reshape(x.shape)


def ref_apply(x, cos, sin, layout="half", rotary_dim=None):
    """``x * cos + rotate(x) * sin`` on the first ``rotary_dim`` features (float64)."""
    x = np.asarray(x, dtype=np.float64)
    r = x.shape[-1] if rotary_dim is None else rotary_dim
    xr, rest = x[..., :r], x[..., r:]
    rot = rotate_half(xr) if layout == "half" else rotate_every_two(xr)
    out = xr * cos + rot * sin
    lead = out.shape[:-1]
    return np.concatenate([out, np.broadcast_to(rest, lead + rest.shape[-1:])], axis=-1)


def rotation_matrix(p, dim, base=10000.0, layout="half"):
    """The (dim, dim) block rotation R(p) of RoFormer, in the given layout."""
    w = ref_inv_freq(dim, base)
    m = np.zeros((dim, dim))
    h = dim // 2
    for i in range(h):
        c, s = math.cos(p * w[i]), math.sin(p * w[i])
        a, b = (i, i + h) if layout == "half" else (2 * i, 2 * i + 1)
        m[a, a], m[a, b], m[b, a], m[b, b] = c, -s, s, c
    return m


def ref_xpos(pos, dim, scale_base=512.0, layout="half"):
    pos = np.asarray(pos, dtype=np.float64)
    zeta = np.array([(2 * i + 0.4 * dim) / (1.4 * dim) for i in range(dim // 2)])
    s = zeta ** (pos[..., None] / scale_base)
    return np.concatenate([s, s], axis=-1) if layout == "half" else np.repeat(s, 2, axis=-1)


def rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- frequencies and tables
@pytest.mark.parametrize("dim", [2, 8, 64, 130])
def test_rope_frequencies(xp, dim):
    got = xp.call(posenc.rope_frequencies, dim, base=500000.0, xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_inv_freq(dim, 500000.0), rtol=2 * xp.tol(), dtype=xp.default_float)


def test_rope_frequencies_float64_exact():
    np.testing.assert_allclose(posenc.rope_frequencies(128), ref_inv_freq(128), rtol=4e-16)
    assert posenc.rope_frequencies(128, dtype="float32").dtype == np.float32


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("dim", [2, 6, 32])
def test_rope_cos_sin_int(xp, layout, dim):
    cos, sin = xp.call(posenc.rope_cos_sin, 70, dim, layout=layout, xp=xp.ns, device=xp.device)
    rc, rs = ref_cos_sin(np.arange(70), dim, layout=layout)
    xp.assert_close(cos, rc, atol=xp.tol(), dtype=xp.default_float)
    xp.assert_close(sin, rs, atol=xp.tol(), dtype=xp.default_float)


@pytest.mark.parametrize("pdtype", ["int32", "float32"])
def test_rope_cos_sin_array_positions(xp, pdtype):
    p = np.array([[0.0, 3.0, -7.0], [1e4, 4095.0, 123456.0]]).astype(pdtype)
    if pdtype == "float32":
        p = p + np.float32(0.5)
    cos, sin = xp.call(posenc.rope_cos_sin, xp.asarray(p), 16, base=1000.0, layout="interleaved")
    rc, rs = ref_cos_sin(p, 16, base=1000.0, layout="interleaved")
    tol = max(xp.tol(), 2e-11)
    xp.assert_close(cos, rc, atol=tol)
    xp.assert_close(sin, rs, atol=tol)
    xp.check_array(cos, shape=(2, 3, 16))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_rope_cos_sin_dtypes(xp, dtype):
    dt = getattr(xp.module, dtype, None) if xp.name.startswith("torch") else getattr(xp.ns, dtype, None)
    if dt is None:
        pytest.skip(f"{xp.name} has no {dtype}")
    cos, sin = xp.call(posenc.rope_cos_sin, 3000, 8, dtype=dt, xp=xp.ns, device=xp.device)
    rc, rs = ref_cos_sin(np.arange(3000), 8)
    # half precision: the exact value rounded once (never angles in half precision)
    xp.assert_close(cos, rc, atol=xp.tol(dt), dtype=dt)
    xp.assert_close(sin, rs, atol=xp.tol(dt), dtype=dt)


def test_cos_sin_float32_accuracy_below_2_20():
    """float32 tables within 1e-6 of float64 at every position below 2**20."""
    cos, sin = posenc.rope_cos_sin(2**20, 8, base=10.0, dtype=np.float32)
    for lo in range(0, 2**20, 2**18):
        rc, rs = ref_cos_sin(np.arange(lo, lo + 2**18), 8, base=10.0)
        assert np.abs(cos[lo : lo + 2**18] - rc).max() <= 1e-6
        assert np.abs(sin[lo : lo + 2**18] - rs).max() <= 1e-6
    # arrays of positions (float64 devices and the digit path of float32-only devices)
    p = np.concatenate([rng().integers(0, 2**20, 20000), np.arange(2**20 - 100, 2**20)])
    rc, rs = ref_cos_sin(p, 128)
    c, s = posenc.rope_cos_sin(p, 128, dtype=np.float32)
    assert max(np.abs(c - rc).max(), np.abs(s - rs).max()) <= 1e-6
    st_ = pytest.importorskip("array_api_strict")
    dev = st_.Device("no_float64")
    c, s = posenc.rope_cos_sin(st_.asarray(p, device=dev), 128)
    c = np.asarray(c.to_device(st_.Device("CPU_DEVICE")))
    s = np.asarray(s.to_device(st_.Device("CPU_DEVICE")))
    assert max(np.abs(c - rc).max(), np.abs(s - rs).max()) <= 1e-6
    # what the usual float32 one-liner gives at the same positions
    naive = np.cos(p[:, None].astype(np.float32) * ref_inv_freq(128).astype(np.float32))
    assert np.abs(naive - rc[:, :64]).max() > 1e-3


def test_bf16_tables_round_the_exact_values():
    torch = pytest.importorskip("torch")
    cos, _ = posenc.rope_cos_sin(torch.arange(60000, 60100), 64, dtype=torch.bfloat16)
    rc, _ = ref_cos_sin(np.arange(60000, 60100), 64)
    exact = torch.from_numpy(rc).to(torch.bfloat16)  # correctly rounded
    assert torch.equal(cos, exact)


# ---------------------------------------------------------------- apply_rope
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rotary_dim", [None, 4])
@pytest.mark.parametrize("compact", [False, True])
def test_apply_rope(xp, layout, rotary_dim, compact):
    x = rng(1).standard_normal((2, 3, 5, 8))
    r = 8 if rotary_dim is None else rotary_dim
    cos, sin = ref_cos_sin(np.arange(5) + 11, r, layout=layout)
    ccos, csin = (cos[..., : r // 2], sin[..., : r // 2]) if layout == "half" else (cos[..., ::2], sin[..., ::2])
    tc, ts = (ccos, csin) if compact else (cos, sin)
    got = xp.call(
        posenc.apply_rope,
        xp.asarray(x),
        xp.asarray(tc),
        xp.asarray(ts),
        layout=layout,
        rotary_dim=rotary_dim,
        compact=compact,
    )
    xa = xp.asarray(x)
    xp.assert_close(got, ref_apply(x, cos, sin, layout, r), atol=8 * xp.tol(), dtype=xa.dtype)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rotary_dim", [None, 2, 8])
def test_apply_rope_full_tables_whose_pairs_hold_two_values(xp, layout, rotary_dim):
    """Full tables are Hugging Face's formula on every path: the second
    feature of a pair takes its own entries.  Tables that are no RoPE
    tables at all (random values) at a size that takes the blocked NumPy /
    torch CPU rotations, which once rotated both features of a pair by the
    first one's entries (an error of 10)."""
    x = rng(3).standard_normal((1, 8, 300, 16))  # (from posenc._kernels.ROTATE_MIN elements)
    r = 16 if rotary_dim is None else rotary_dim
    cos, sin = rng(4).uniform(-1, 1, (2, 300, r))
    got = xp.call(
        posenc.apply_rope, xp.asarray(x), xp.asarray(cos), xp.asarray(sin), layout=layout, rotary_dim=rotary_dim
    )
    xa = xp.asarray(x)
    xp.assert_close(got, ref_apply(x, cos, sin, layout, r), atol=8 * xp.tol(), dtype=xa.dtype)


def test_apply_rope_broadcasts_tables(xp):
    """HF style: cos (batch, 1, seq, d) against x (batch, heads, seq, d); and
    tables with more leading axes than x."""
    x = rng(2).standard_normal((2, 3, 4, 6))
    pos = np.array([[0, 1, 2, 3], [10, 11, 12, 13]])[:, None, :]
    cos, sin = ref_cos_sin(pos, 6)
    got = xp.call(posenc.apply_rope, xp.asarray(x), xp.asarray(cos), xp.asarray(sin))
    xp.assert_close(got, ref_apply(x, cos, sin), atol=8 * xp.tol())
    # x without a batch axis, tables with one: the result broadcasts
    c4, s4 = ref_cos_sin(pos, 4)
    got = xp.call(posenc.apply_rope, xp.asarray(x[0, :1]), xp.asarray(c4), xp.asarray(s4), rotary_dim=4)
    xp.assert_close(got, ref_apply(x[0, :1], c4, s4, rotary_dim=4), atol=8 * xp.tol())
    xp.check_array(got, shape=(2, 1, 4, 6))


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rotary_dim", [None, 4])
def test_apply_rope_of_q_and_k(xp, layout, rotary_dim):
    """A tuple (q, k) of different head counts: each rotated by the same
    tables (Hugging Face's tables (batch, seq, d) with heads_axis=1), equal
    to one call each."""
    q = rng(7).standard_normal((2, 4, 5, 8))
    k = rng(8).standard_normal((2, 1, 5, 8))
    r = 8 if rotary_dim is None else rotary_dim
    pos = np.array([[0, 1, 2, 3, 4], [30, 31, 32, 33, 90]])
    cos, sin = ref_cos_sin(pos, r, layout=layout)
    kw = {"layout": layout, "rotary_dim": rotary_dim, "heads_axis": 1}
    qr, kr = xp.call(posenc.apply_rope, (xp.asarray(q), xp.asarray(k)), xp.asarray(cos), xp.asarray(sin), **kw)
    for x, got in ((q, qr), (k, kr)):
        want = ref_apply(x, cos[:, None], sin[:, None], layout, r)
        xp.assert_close(got, want, atol=8 * xp.tol(), dtype=xp.asarray(x).dtype)
        one = xp.call(posenc.apply_rope, xp.asarray(x), xp.asarray(cos), xp.asarray(sin), **kw)
        xp.assert_close(got, xp.to_numpy(one) if xp.has_values else want, atol=0 if xp.has_values else 8 * xp.tol())


def test_apply_rope_tuple_errors():
    cos, sin = ref_cos_sin(np.arange(3), 4)
    q = np.ones((2, 3, 4))
    with pytest.raises(ValueError, match="non-empty tuple"):
        posenc.apply_rope((), cos, sin)
    nested = r"`x` must be an array or a flat tuple \(q, k\) of arrays, got a tuple at x\[1\]"
    with pytest.raises(TypeError, match=nested):
        posenc.apply_rope((q, (q,)), cos, sin)
    with pytest.raises(TypeError, match=r"`x` must be .*, got a list at x\[0\]"):  # a ragged nested list
        posenc.apply_rope([[1, 2], [3]], cos, sin)
    with pytest.raises(ValueError, match="head dimension 2"):
        posenc.apply_rope((q, np.ones((2, 3, 2))), cos, sin)
    out = posenc.apply_rope([q], cos, sin)  # a list, one array
    assert isinstance(out, tuple) and len(out) == 1
    np.testing.assert_array_equal(out[0], posenc.apply_rope(q, cos, sin))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_apply_rope_half_precision(xp, dtype):
    dt = getattr(xp.module, dtype, None) if xp.name.startswith("torch") else getattr(xp.ns, dtype, None)
    if dt is None:
        pytest.skip(f"{xp.name} has no {dtype}")
    x = rng(3).standard_normal((3, 7, 16))
    x_lo = xp.ns.astype(xp.asarray(x), dt)
    xr = xp.to_numpy(xp.ns.astype(x_lo, xp.ns.float32)) if xp.has_values else x
    cos, sin = xp.call(posenc.rope_cos_sin, 7, 16, xp=xp.ns, device=xp.device)  # default float tables
    got = xp.call(posenc.apply_rope, x_lo, cos, sin)
    rc, rs = ref_cos_sin(np.arange(7), 16)
    # computed in float32 from the half-precision x, rounded once at the end
    xp.assert_close(got, ref_apply(xr, rc, rs), atol=xp.tol(dt) * 4, rtol=xp.tol(dt) * 2, dtype=dt)


#: (x shape, table shape, layout, rotary_dim, transposed x); a table width of
#: rotary_dim // 2 is a compact table (compact=True)
FAST_CASES = [
    ((2, 3, 300, 64), (300, 64), "half", None, False),  # several blocks
    ((2, 3, 300, 64), (300, 64), "interleaved", None, False),
    ((1, 4, 33, 10), (33, 6), "half", 6, False),  # partial rotary
    ((1, 4, 33, 10), (33, 3), "interleaved", 6, False),  # compact table
    ((2, 2, 50, 8), (2, 1, 50, 8), "half", None, False),  # per-batch tables
    ((4, 50, 8), (2, 1, 4, 50, 8), "interleaved", None, False),  # tables add axes
    ((3, 40, 16), (40, 16), "half", None, True),  # non-contiguous x
    ((3, 40, 16), (40, 16), "interleaved", None, True),
    ((5, 2**14 + 3, 4), (2**14 + 3, 2), "half", None, False),  # tiny rows, many of them
    ((2, 9, 7), (9, 6), "half", 6, False),  # odd head_dim, partial rotary
    ((2, 9, 7), (9, 6), "interleaved", 6, False),
]


def _duplicated(compact, layout):
    if layout == "half":
        return np.concatenate([compact, compact], axis=-1)
    return np.repeat(compact, 2, axis=-1)


def test_matches_hf_rotate_half_torch():
    """Hugging Face's ``q * cos + rotate_half(q) * sin`` in float32, to the
    last bit or two (the fast path's ``addcmul`` may fuse a multiply-add)."""
    torch = pytest.importorskip("torch")
    q = torch.randn(2, 4, 64, 32, generator=torch.Generator().manual_seed(0))
    cos, sin = posenc.rope_cos_sin(torch.arange(64), 32, dtype=torch.float32)

    def hf_rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)

    expected = q * cos + hf_rotate_half(q) * sin
    atol = 2 * 2**-23 * float(expected.abs().max())
    torch.testing.assert_close(posenc.apply_rope(q, cos, sin), expected, rtol=0, atol=atol)
    q.requires_grad_(True)  # the portable path
    torch.testing.assert_close(posenc.apply_rope(q, cos, sin), expected, rtol=0, atol=atol)


# ---------------------------------------------------------------- rope()
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_one_call(xp, layout):
    x = rng(6).standard_normal((2, 9, 12))
    got = xp.call(posenc.rope, xp.asarray(x), 9, base=300.0, layout=layout, rotary_dim=8)
    rc, rs = ref_cos_sin(np.arange(9), 8, base=300.0, layout=layout)
    xp.assert_close(got, ref_apply(x, rc, rs, layout, 8), atol=8 * xp.tol())
    # per-sequence offsets (incremental decoding): positions (batch, 1, seq)
    x4 = rng(7).standard_normal((2, 3, 4, 8))
    pos = np.array([[100, 101, 102, 103], [7, 8, 9, 10]])[:, None, :]
    got = xp.call(posenc.rope, xp.asarray(x4), xp.asarray(pos), layout=layout)
    rc, rs = ref_cos_sin(pos, 8, layout=layout)
    xp.assert_close(got, ref_apply(x4, rc, rs, layout), atol=8 * xp.tol())


def test_rope_scaling_and_attention(xp):
    s = scaling.YaRN(4.0, 16)
    x = rng(8).standard_normal((3, 20, 16))
    got = xp.call(posenc.rope, xp.asarray(x), 20, scaling=s)
    w = np.asarray(posenc.rope_frequencies(16, scaling=s))
    rc, rs = ref_cos_sin(np.arange(20), 16, inv=w, attention=s.attention_scaling())
    xp.assert_close(got, ref_apply(x, rc, rs), atol=8 * xp.tol())


def test_rope_dtype_follows_x():
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 10, 8, dtype=torch.bfloat16)
    y = posenc.rope(x, 10)
    assert y.dtype == torch.bfloat16
    rc, rs = ref_cos_sin(np.arange(10), 8)
    np.testing.assert_allclose(y.float().numpy(), ref_apply(x.float().numpy(), rc, rs), atol=2**-7, rtol=2**-7)
    assert posenc.rope(np.ones((3, 4), np.float32), 3).dtype == np.float32
    assert posenc.rope(np.ones((3, 4)), 3).dtype == np.float64


# ---------------------------------------------------------------- properties
@settings(max_examples=40, deadline=None)
@given(
    p=st.integers(-(10**6), 10**6),
    dim=st.integers(1, 32).map(lambda k: 2 * k),
    layout=st.sampled_from(["half", "interleaved"]),
    seed=st.integers(0, 2**16),
)
def test_rope_preserves_norms(p, dim, layout, seed):
    x = rng(seed).standard_normal((3, 1, dim))
    y = posenc.rope(x, np.array([p]), layout=layout)
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-13)
    # and it is RoFormer's block rotation R(p)
    np.testing.assert_allclose(y[:, 0], x[:, 0] @ rotation_matrix(p, dim, layout=layout).T, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(-(10**5), 10**5),
    n=st.integers(-(10**5), 10**5),
    shift=st.integers(-(10**5), 10**5),
    dim=st.integers(1, 24).map(lambda k: 2 * k),
    layout=st.sampled_from(["half", "interleaved"]),
    seed=st.integers(0, 2**16),
)
def test_score_depends_on_offset_only(m, n, shift, dim, layout, seed):
    q, k = rng(seed).standard_normal((2, dim))
    qm = posenc.rope(q[None], np.array([m]), layout=layout)[0]
    kn = posenc.rope(k[None], np.array([n]), layout=layout)[0]
    qs = posenc.rope(q[None], np.array([m + shift]), layout=layout)[0]
    ks = posenc.rope(k[None], np.array([n + shift]), layout=layout)[0]
    assert qm @ kn == pytest.approx(qs @ ks, abs=1e-9)
    # = q^T R(n - m) k
    assert qm @ kn == pytest.approx(q @ rotation_matrix(n - m, dim, layout=layout) @ k, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(
    heads=st.integers(1, 3),
    dim=st.integers(1, 16).map(lambda k: 2 * k),
    source=st.sampled_from(["half", "interleaved"]),
    seed=st.integers(0, 2**16),
)
def test_permutation_converts_weights(heads, dim, source, seed):
    """Weights converted with rope_permutation give the same attention scores."""
    target = "half" if source == "interleaved" else "interleaved"
    g = rng(seed)
    hidden, seq = 6, 5
    wq, wk = g.standard_normal((2, heads * dim, hidden))
    x = g.standard_normal((seq, hidden))
    perm = posenc.rope_permutation(dim, source=source, target=target)

    def convert(w):
        return w.reshape(heads, dim, hidden)[:, perm].reshape(heads * dim, hidden)

    def scores(wq, wk, layout):
        q = (x @ wq.T).reshape(seq, heads, dim).transpose(1, 0, 2)
        k = (x @ wk.T).reshape(seq, heads, dim).transpose(1, 0, 2)
        q, k = posenc.rope(q, seq, layout=layout), posenc.rope(k, seq, layout=layout)
        return q @ k.transpose(0, 2, 1), q

    s_src, q_src = scores(wq, wk, source)
    s_tgt, q_tgt = scores(convert(wq), convert(wk), target)
    np.testing.assert_allclose(s_tgt, s_src, atol=1e-10)
    np.testing.assert_allclose(q_tgt, q_src[..., perm], atol=1e-12)
    # the opposite permutation undoes it
    back = posenc.rope_permutation(dim, source=target, target=source)
    np.testing.assert_array_equal(perm[back], np.arange(dim))


def test_permutation_values(xp):
    got = xp.call(posenc.rope_permutation, 8, xp=xp.ns, device=xp.device)
    xp.assert_close(got, np.array([0, 2, 4, 6, 1, 3, 5, 7]))
    got = xp.call(posenc.rope_permutation, 8, source="half", target="interleaved", xp=xp.ns, device=xp.device)
    xp.assert_close(got, np.array([0, 4, 1, 5, 2, 6, 3, 7]))
    got = xp.call(posenc.rope_permutation, 7, rotary_dim=4, xp=xp.ns, device=xp.device)
    xp.assert_close(got, np.array([0, 2, 1, 3, 4, 5, 6]))
    got = xp.call(posenc.rope_permutation, 4, source="half", target="half", xp=xp.ns, device=xp.device)
    xp.assert_close(got, np.arange(4))


def test_permutation_partial_rotary():
    g = rng(9)
    x = g.standard_normal((5, 10))
    perm = posenc.rope_permutation(10, rotary_dim=6)
    y_src = posenc.rope(x, 5, layout="interleaved", rotary_dim=6)
    y_tgt = posenc.rope(x[:, perm], 5, layout="half", rotary_dim=6)
    np.testing.assert_allclose(y_tgt, y_src[:, perm], atol=1e-12)


def test_half_and_interleaved_tables_agree_after_permutation(xp):
    perm = posenc.rope_permutation(12)
    ch, sh = xp.call(posenc.rope_cos_sin, 9, 12, xp=xp.ns, device=xp.device)
    ci, si = posenc.rope_cos_sin(9, 12, layout="interleaved")
    xp.assert_close(ch, ci[:, perm], atol=xp.tol())
    xp.assert_close(sh, si[:, perm], atol=xp.tol())


# ---------------------------------------------------------------- gradients
def test_torch_gradient():
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 6, 8, dtype=torch.float64, requires_grad=True)
    cos, sin = posenc.rope_cos_sin(torch.arange(6), 8, dtype=torch.float64)
    g = torch.randn(2, 6, 8, dtype=torch.float64)
    (posenc.apply_rope(x, cos, sin) * g).sum().backward()
    # the gradient of a rotation is the inverse rotation of the upstream gradient
    torch.testing.assert_close(x.grad, posenc.apply_rope(g, cos, -sin))
    assert torch.autograd.gradcheck(lambda t: posenc.rope(t, 6, layout="interleaved"), (x.detach().requires_grad_(),))
    # gradients reach the tables too
    c = cos.clone().requires_grad_()
    posenc.apply_rope(x.detach(), c, sin).sum().backward()
    assert c.grad is not None and torch.isfinite(c.grad).all()


def test_jax_gradient():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = jnp.asarray(rng(10).standard_normal((6, 8)), dtype=jnp.float32)
    g = jnp.asarray(rng(11).standard_normal((6, 8)), dtype=jnp.float32)
    cos, sin = posenc.rope_cos_sin(jnp.arange(6), 8)
    grad = jax.grad(lambda t: jnp.sum(posenc.apply_rope(t, cos, sin) * g))(x)
    np.testing.assert_allclose(np.asarray(grad), np.asarray(posenc.apply_rope(g, cos, -sin)), atol=1e-6)
    grad = jax.jit(jax.grad(lambda t: jnp.sum(posenc.rope(t, 6, layout="interleaved") ** 2)))(x)
    np.testing.assert_allclose(np.asarray(grad), 2 * np.asarray(x), atol=1e-5)


# ---------------------------------------------------------------- xPos
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_xpos_scale(xp, layout):
    got = xp.call(posenc.xpos_scale, 40, 16, scale_base=64.0, layout=layout, xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_xpos(np.arange(40), 16, 64.0, layout), rtol=8 * xp.tol(), dtype=xp.default_float)
    p = np.array([[-300, 0], [5, 2000]])
    got = xp.call(posenc.xpos_scale, xp.asarray(p), 8)
    xp.assert_close(got, ref_xpos(p, 8), rtol=8 * xp.tol())


def test_xpos_relative_decay():
    q, k = rng(12).standard_normal((2, 16))
    def score(m, n):
        qm = posenc.rope(q[None] * posenc.xpos_scale(np.array([m]), 16), np.array([m]))
        kn = posenc.rope(k[None] / posenc.xpos_scale(np.array([n]), 16), np.array([n]))
        return float(qm[0] @ kn[0])
    assert score(10, 3) == pytest.approx(score(110, 103), rel=1e-10)
    assert score(3, 10) == pytest.approx(score(103, 110), rel=1e-10)
    np.testing.assert_allclose(
        posenc.xpos_scale(np.array([-7]), 16) * posenc.xpos_scale(np.array([7]), 16), 1.0, rtol=1e-14
    )


def test_xpos_scale_saturates_instead_of_overflowing(xp):
    # keys use xpos_scale(-positions): far negative positions ask for scales
    # beyond the output range; they saturate below its largest value, never inf
    p = np.array([-1e6, -40.0, 0.0, 40.0, 1e6])
    got = xp.call(posenc.xpos_scale, xp.asarray(p), 8, scale_base=4.0)
    xp.check_array(got, shape=(5, 8))
    if xp.has_values:
        v = xp.to_numpy(got)
        top = float(np.finfo(v.dtype).max)
        v = v.astype(np.float64)
        assert np.isfinite(v).all()
        assert (v[0] > 0.99 * top).all() and (v[-1] == 0.0).all()
        np.testing.assert_allclose(v[1:4], ref_xpos(p[1:4], 8, 4.0), rtol=8 * xp.tol())


def test_xpos_scale_float32_output_of_float64_scales():
    # exp(...) fits float64 but not float32: saturated, not a cast overflow to inf
    got = posenc.xpos_scale(np.array([-1e6]), 4, dtype=np.float32)
    assert got.dtype == np.float32 and np.isfinite(got).all() and got.min() > 3e38
    torch = pytest.importorskip("torch")
    got = posenc.xpos_scale(torch.tensor([-1e6, 3.0]), 4, dtype=torch.float16)
    assert torch.isfinite(got).all() and got[0].min() > 6e4


@pytest.mark.parametrize("scale_base", [1e-300, 5e-324])
def test_xpos_tiny_scale_base(scale_base):
    # decay rates log(zeta) / scale_base must fit the computing dtype (float64
    # here for 1e-300, float32 without float64); the scales then saturate
    if scale_base == 5e-324:
        with pytest.raises(ValueError, match="`scale_base`"):
            posenc.xpos_scale(np.array([1.0, -1.0]), 4, scale_base=scale_base, dtype=np.float32)
    else:
        got = posenc.xpos_scale(np.array([1.0, -1.0]), 4, scale_base=scale_base, dtype=np.float32)
        assert (got[0] == 0.0).all() and np.isfinite(got).all() and got[1].min() > 3e38
    xs = pytest.importorskip("array_api_strict")
    with pytest.raises(ValueError, match="`scale_base`"):
        posenc.xpos_scale(xs.asarray([1.0, -1.0], device=xs.Device("no_float64")), 4, scale_base=scale_base)


def test_xpos_small_scale_base_is_finite():
    # |p * log(zeta) / scale_base| would overflow float64: positions that far
    # out are clipped where every scale has saturated already
    got = posenc.xpos_scale(np.array([-1e300, -1.0, 0.0, 1.0, 1e300]), 4, scale_base=1e-30)
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got[2], 1.0)
    assert (got[3:] == 0.0).all() and (got[:2] > 1e307).all()


# ---------------------------------------------------------------- extreme arguments
def test_rope_frequencies_beyond_the_output_range():
    # base = 1e-300 asks for inverse frequencies up to 1e150: fine in float64,
    # a ValueError naming `base` where they would overflow the output dtype
    np.testing.assert_allclose(posenc.rope_frequencies(4, base=1e-300), [1.0, 1e150], rtol=1e-14)
    with pytest.raises(ValueError, match="`base` = 1e-300 .* float32"):
        posenc.rope_frequencies(4, base=1e-300, dtype="float32")
    with pytest.raises(ValueError, match="`base` .* float16"):
        posenc.rope_frequencies(4, base=1e-10, dtype="float16")


@pytest.mark.parametrize(
    ("kw", "names"),
    [
        ({"base": 5e-324}, "`base`"),
        ({"base": 1e-30, "scaling": scaling.Linear(1e-300)}, "`base` = 1e-30 with `scaling` = Linear"),
        # NTK's base * factor ** (dim / (dim - 2)) = 5e-924: its frequency 2.1e461 overflows
        ({"base": 5e-324, "scaling": scaling.NTK(1e-300)}, "`scaling` = NTK"),
    ],
)
def test_frequencies_beyond_float64_are_refused(kw, names):
    dim = 4 if "scaling" in kw and isinstance(kw["scaling"], scaling.NTK) else 2**10
    for call in (
        lambda: posenc.rope_frequencies(dim, **kw),
        lambda: posenc.rope_cos_sin(3, dim, **kw),
        lambda: posenc.rope(np.ones((3, dim)), 3, **kw),
    ):
        with pytest.raises(ValueError, match=names):
            call()


def test_attention_factor_beyond_the_table_dtype():
    s = scaling.YaRN(4.0, 16, attention_factor=1e300)
    with pytest.raises(ValueError, match="`scaling` = YaRN.*attention factor"):
        posenc.rope_cos_sin(3, 8, scaling=s, dtype="float32")
    with pytest.raises(ValueError, match="`scaling`"):
        posenc.rope(np.ones((3, 8), np.float32), 3, scaling=s)
    cos, _ = posenc.rope_cos_sin(3, 8, scaling=s)  # float64 holds it
    assert cos[0, 0] == 1e300


def test_rope_tiny_base_without_float64(xp):
    # inverse frequencies of 1e150 (and 1e-40's 5.6e38) are beyond the angles
    # posenc reduces exactly (|p * w| < 2**50): refused naming `base` on every
    # backend; 2**-100 (a top frequency of exactly 2**50) is the last accepted
    for base in (1e-300, 1e-40):
        with pytest.raises(ValueError, match=f"`base` = {base!r} gives frequencies up to .* above 2\\*\\*50"):
            xp.call(posenc.rope_cos_sin, xp.asarray(np.array([1.0, 2.0])), 4, base=base)
    got = xp.call(posenc.rope_cos_sin, xp.asarray(np.array([0.5, 1.0])), 4, base=2.0**-100)
    for t in got:
        xp.check_array(t, shape=(2, 4))
        if xp.has_values:
            v = xp.to_numpy(t)
            assert np.isfinite(v).all() and np.abs(v).max() <= 1.0


@pytest.mark.parametrize(
    "call",
    [
        lambda: posenc.apply_rope(
            np.broadcast_to(np.zeros((1, 1), np.float32), (2**30, 2**11)),
            np.ones((1, 2**11), np.float32),
            np.zeros((1, 2**11), np.float32),
        ),
        # x small, the tables huge: the broadcast output is what counts
        lambda: posenc.apply_rope(
            np.zeros((1, 2**11), np.float32),
            np.broadcast_to(np.ones((1, 2**11), np.float32), (2**30, 2**11)),
            np.broadcast_to(np.zeros((1, 2**11), np.float32), (2**30, 2**11)),
        ),
        lambda: posenc.rope(np.broadcast_to(np.zeros((1, 1), np.float32), (2**30, 2**11)), 2**30),
        lambda: posenc.rope(np.zeros((1, 2**11), np.float32), np.broadcast_to(np.zeros(1), (2**30,))),
        lambda: posenc.rope_cos_sin(np.broadcast_to(np.zeros(1), (2**30,)), 2**11),
        lambda: posenc.xpos_scale(np.broadcast_to(np.zeros(1), (2**30,)), 2**11),
    ],
)
def test_huge_views_are_refused_from_their_shapes(call):
    import time

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"2\*\*40"):
        call()
    assert time.perf_counter() - t0 < 5.0  # reading the view would take minutes


# ---------------------------------------------------------------- shapes, devices, laziness
def test_shapes_and_empty(xp):
    cos, sin = xp.call(posenc.rope_cos_sin, 0, 8, xp=xp.ns, device=xp.device)
    xp.check_array(cos, shape=(0, 8))
    cos, sin = xp.call(posenc.rope_cos_sin, xp.asarray(np.arange(24).reshape(2, 3, 4)), 6)
    xp.check_array(sin, shape=(2, 3, 4, 6))
    x = xp.asarray(np.ones((0, 4)))
    c = xp.asarray(np.ones((0, 4)))
    xp.check_array(xp.call(posenc.apply_rope, x, c, c), shape=(0, 4))


def test_dask_stays_lazy():
    da = pytest.importorskip("dask.array")
    import dask

    from tests.conftest import _forbid_compute

    x = da.from_array(rng(13).standard_normal((4, 1000, 8)), chunks=(1, 250, 8))
    with dask.config.set(scheduler=_forbid_compute):
        y = posenc.rope(x, 1000)
        cos, sin = posenc.rope_cos_sin(da.arange(1000, chunks=250), 8)
    rc, rs = ref_cos_sin(np.arange(1000), 8)
    np.testing.assert_allclose(y.compute(), ref_apply(x.compute(), rc, rs), atol=1e-12)
    np.testing.assert_allclose(cos.compute(), rc, atol=1e-12)


def test_devices():
    torch = pytest.importorskip("torch")
    x = torch.zeros(2, 5, 8, device="meta")
    assert posenc.rope(x, 5).device.type == "meta"
    st_ = pytest.importorskip("array_api_strict")
    d1 = st_.Device("device1")
    y = posenc.rope(st_.ones((5, 8), device=d1), st_.arange(5, device=d1))
    assert y.device == d1
    with pytest.raises(ValueError, match="device"):
        posenc.rope(st_.ones((5, 8), device=d1), st_.arange(5))
    assert posenc.rope_permutation(4, xp=torch).dtype == torch.int64


# ---------------------------------------------------------------- bad input
X = np.zeros((2, 5, 8))
C8 = np.ones((5, 8))


@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: posenc.rope_frequencies(7), ValueError, "dim"),
        (lambda: posenc.rope_frequencies(0), ValueError, "dim"),
        (lambda: posenc.rope_frequencies(8.0), TypeError, "dim"),
        (lambda: posenc.rope_frequencies(8, base=0.0), ValueError, "base"),
        (lambda: posenc.rope_cos_sin(4, 9), ValueError, "dim"),
        (lambda: posenc.rope_cos_sin(4, 8, layout="neox"), ValueError, "layout"),
        (lambda: posenc.rope_cos_sin(4, 8, layout=None), TypeError, "layout"),
        (lambda: posenc.rope_cos_sin(-1, 8), ValueError, "positions"),
        (lambda: posenc.rope_cos_sin(np.array([np.nan]), 8), ValueError, "positions"),
        (lambda: posenc.rope_cos_sin(4, 8, dtype=np.int32), TypeError, "dtype"),
        (
            lambda: posenc.rope_cos_sin(4, 8, scaling=scaling.LongRoPE([1.0] * 3, [1.0] * 3, 8)),
            ValueError,
            "short_factor",
        ),
        (lambda: posenc.rope_cos_sin(4, 8, seq_len=-3), ValueError, "seq_len"),
        (lambda: posenc.apply_rope(np.zeros((2, 5, 7)), np.ones((5, 7)), np.ones((5, 7))), ValueError, "head_dim"),
        (lambda: posenc.apply_rope(X, C8, C8, rotary_dim=10), ValueError, "rotary_dim"),
        (lambda: posenc.apply_rope(X, C8, C8, rotary_dim=5), ValueError, "rotary_dim"),
        (lambda: posenc.apply_rope(X, C8, C8, rotary_dim=0), ValueError, "rotary_dim"),
        (lambda: posenc.apply_rope(X, C8, C8, rotary_dim=4.0), TypeError, "rotary_dim"),
        (lambda: posenc.apply_rope(X, np.ones((4, 8)), np.ones((4, 8))), ValueError, "broadcast"),
        (lambda: posenc.apply_rope(X, np.ones((5, 10)), np.ones((5, 10))), ValueError, "cos"),
        (lambda: posenc.apply_rope(X, np.ones((5, 3)), np.ones((5, 3))), ValueError, "compact=True"),
        (lambda: posenc.apply_rope(X, np.ones((5, 4)), np.ones((5, 4)), rotary_dim=8), ValueError, "rotary_dim"),
        (lambda: posenc.apply_rope(X, C8, np.ones((5, 4))), ValueError, "sin"),
        (lambda: posenc.apply_rope(X, C8, C8, layout="neox"), ValueError, "layout"),
        (lambda: posenc.apply_rope(X.tolist(), C8, C8), TypeError, "x"),
        (lambda: posenc.apply_rope(X, 1.0, C8), TypeError, "cos"),
        (lambda: posenc.apply_rope(X.astype(int), C8, C8), TypeError, "x"),
        (lambda: posenc.apply_rope(X, C8.astype(int), C8), TypeError, "cos"),
        (lambda: posenc.apply_rope(np.float64(1.0) * np.ones(()), np.ones(()), np.ones(())), ValueError, "x"),
        (lambda: posenc.rope(X, 4), ValueError, "positions"),
        (lambda: posenc.rope(X, np.arange(5), layout="gptj"), ValueError, "layout"),
        (lambda: posenc.rope(np.zeros((5, 7)), 5), ValueError, "head_dim"),
        (lambda: posenc.rope(X, 5, rotary_dim=9), ValueError, "rotary_dim"),
        (lambda: posenc.rope(X, 5, rotary_dim=12), ValueError, "rotary_dim"),
        (lambda: posenc.rope(X, 5.0), TypeError, "positions"),
        (lambda: posenc.rope(X, 5, scaling=4.0), TypeError, "scaling"),
        (lambda: posenc.rope(X.astype(np.int64), 5), TypeError, "x"),
        (lambda: posenc.rope_permutation(7), ValueError, "dim"),
        (lambda: posenc.rope_permutation(8, source="gptj"), ValueError, "source"),
        (lambda: posenc.rope_permutation(8, target="neox"), ValueError, "target"),
        (lambda: posenc.rope_permutation(8, rotary_dim=10), ValueError, "rotary_dim"),
        (lambda: posenc.rope_permutation(8, rotary_dim=3), ValueError, "rotary_dim"),
        (lambda: posenc.xpos_scale(4, 7), ValueError, "dim"),
        (lambda: posenc.xpos_scale(4, 8, scale_base=0), ValueError, "scale_base"),
        (lambda: posenc.xpos_scale(4, 8, layout="x"), ValueError, "layout"),
    ],
)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


def test_mixed_namespaces():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="cos"):
        posenc.apply_rope(torch.zeros(5, 8), np.ones((5, 8)), np.ones((5, 8)))
    with pytest.raises(TypeError, match="positions"):
        posenc.rope(torch.zeros(5, 8), np.arange(5))


# ---------------------------------------------------------------- Hugging Face's call shapes, no guessing
def _hf_apply(q, cos, sin, unsqueeze_dim):
    """transformers' apply_rotary_pos_emb, in float64 NumPy."""
    cos, sin = np.expand_dims(cos, unsqueeze_dim), np.expand_dims(sin, unsqueeze_dim)
    h = q.shape[-1] // 2
    return q * cos + np.concatenate([-q[..., h:], q[..., :h]], axis=-1) * sin


@pytest.mark.parametrize(("b", "h"), [(2, 3), (3, 3), (1, 4)])
def test_position_ids_with_heads_axis(xp, b, h):
    """position_ids (b, s) against q (b, h, s, d) and (b, s, h, d): the named
    heads axis gives Hugging Face's result for every b, h -- also b == h,
    where plain broadcasting would line batch up with heads."""
    s, d = 3, 8
    pid = np.arange(b * s).reshape(b, s) * 7 + 2
    rc, rs = ref_cos_sin(pid, d)
    q = rng(8).standard_normal((b, h, s, d))
    want = _hf_apply(q, rc, rs, 1)
    dt = "float64" if xp.float64 else "float32"
    cos, sin = xp.call(posenc.rope_cos_sin, xp.asarray(pid), d, dtype=getattr(xp.ns, dt))
    got = xp.call(posenc.apply_rope, xp.asarray(q, dt), cos, sin, heads_axis=1)
    xp.assert_close(got, want, atol=8 * xp.tol())
    got = xp.call(posenc.rope, xp.asarray(q, dt), xp.asarray(pid), heads_axis=1)
    xp.assert_close(got, want, atol=8 * xp.tol())
    # (batch, seq, heads, head_dim): heads on axis 2 (transformers' unsqueeze_dim=2)
    qt = np.swapaxes(q, 1, 2)
    got = xp.call(posenc.apply_rope, xp.asarray(qt, dt), cos, sin, heads_axis=-2)
    xp.assert_close(got, _hf_apply(qt, rc, rs, 2), atol=8 * xp.tol())


def test_ambiguous_table_ranks_are_refused():
    q = np.zeros((3, 3, 4, 8))
    cos, sin = posenc.rope_cos_sin(np.zeros((3, 4), np.int64), 8)
    with pytest.raises(ValueError, match="Pass `heads_axis`"):
        posenc.apply_rope(q, cos, sin)  # (b, s) vs (h, s) with b == h: refused, never mixed
    with pytest.raises(ValueError, match="Pass `heads_axis`"):
        posenc.rope(q, np.zeros((3, 4), np.int64))
    with pytest.raises(ValueError, match=r"3 entries on the heads axis of `x` \(`heads_axis` = 1\)"):
        posenc.apply_rope(q, cos[:, None] * np.ones((1, 3, 1, 1)), sin[:, None] * np.ones((1, 3, 1, 1)), heads_axis=1)
    with pytest.raises(ValueError, match="heads_axis"):
        posenc.apply_rope(q, cos, sin, heads_axis=3)
    # positions that fit no axis once heads_axis has placed the heads: named with it
    with pytest.raises(ValueError, match=r"do not broadcast .* with its heads on `heads_axis` = 1"):
        posenc.rope(q, np.zeros((5,), np.int64), heads_axis=1)
    # explicit ranks and the (seq, d) table keep working without the argument
    posenc.apply_rope(q, cos[:, None], sin[:, None])
    posenc.apply_rope(q, cos[0], sin[0])


def test_table_width_is_the_rotary_width():
    """As in Hugging Face: half-width full tables (Phi-3, partial_rotary_factor
    0.5) rotate the first half of the features only; compact tables only
    with compact=True."""
    x = rng(9).standard_normal((2, 5, 8))
    c4, s4 = posenc.rope_cos_sin(5, 4)
    got = posenc.apply_rope(x, c4, s4)
    np.testing.assert_allclose(got, ref_apply(x, c4, s4, "half", 4), atol=1e-14)
    np.testing.assert_array_equal(got[..., 4:], x[..., 4:])
    c8, s8 = posenc.rope_cos_sin(5, 8)
    np.testing.assert_allclose(
        posenc.apply_rope(x, c8[..., :4], s8[..., :4], compact=True), ref_apply(x, c8, s8), atol=1e-14
    )
    with pytest.raises(ValueError, match=r"or pass `compact`=True \(tables of rotary_dim // 2 values\)"):
        posenc.apply_rope(x, c8[..., :4], s8[..., :4], rotary_dim=8)
    with pytest.raises(ValueError, match=r"or pass `compact`=False \(full tables\)"):
        posenc.apply_rope(x, c8[..., :4], s8[..., :4], rotary_dim=4, compact=True)
    # full tables of the head's width read as compact ones (twice as wide):
    # the refusal names the argument that doubled the width, and the way back
    with pytest.raises(ValueError, match=r"`compact`=True .* pass compact=False"):
        posenc.apply_rope(x, c8, s8, compact=True)
    with pytest.raises(ValueError, match=r"pass compact=True"):
        posenc.apply_rope(x[..., :4], c8, s8)


@pytest.mark.parametrize("which", ["dynamic", "longrope"])
def test_length_dependent_scaling_reads_max_position(which):
    """seq_len defaults to max(positions) + 1 on concrete arrays (Hugging
    Face), and is required for traced ones."""
    sc = scaling.DynamicNTK(4.0, 16) if which == "dynamic" else scaling.LongRoPE([1.0, 2.0], [3.0, 5.0], 16)
    pos = np.arange(40)
    got = posenc.rope_cos_sin(pos, 4, scaling=sc)
    want = posenc.rope_cos_sin(40, 4, scaling=sc)
    np.testing.assert_allclose(got[0], want[0], atol=1e-15)
    np.testing.assert_allclose(got[0], posenc.rope_cos_sin(pos, 4, scaling=sc, seq_len=40)[0], atol=1e-15)
    assert np.abs(got[0] - posenc.rope_cos_sin(pos, 4, scaling=sc, seq_len=16)[0]).max() > 1e-3
    jax = pytest.importorskip("jax")
    with pytest.raises(ValueError, match="seq_len"):
        jax.jit(lambda p: posenc.rope_cos_sin(p, 4, scaling=sc))(jax.numpy.arange(40))


def test_traced_offset_under_jit():
    jax = pytest.importorskip("jax")
    f = jax.jit(lambda off: posenc.rope_cos_sin(2, 8, offset=off))
    for off in (0, 5, 4093):
        got = np.asarray(f(jax.numpy.asarray(off))[0])
        want = ref_cos_sin(np.arange(off, off + 2), 8)[0]
        np.testing.assert_allclose(got, want, atol=2.5e-7)
    np.testing.assert_allclose(posenc.rope_cos_sin(2, 8, offset=5)[1], ref_cos_sin(np.arange(5, 7), 8)[1], atol=1e-15)


@pytest.mark.parametrize("kind", ["int", "float"])
@pytest.mark.parametrize("shape", [(1, 1), (2, 1500)])  # a decode step's table and position ids of a batch
def test_array_positions_accuracy(xp, kind, shape):
    """float32 RoPE tables of array positions (one-pass small tables and the
    general path): within 2.5e-7 of the truth for |p| < 2**31 (int) and 2**22
    (float), every row, on every backend; the usual cos(float32(p) * inv_freq)
    is off by ~1e-1."""
    rng = np.random.default_rng(7)
    if kind == "int":
        p = rng.integers(-(2**31) + 1, 2**31, shape).astype(np.int32)
    else:
        p = rng.uniform(-(2.0**22), 2.0**22, shape).astype(np.float32)
    cos, sin = xp.call(posenc.rope_cos_sin, xp.asarray(p), 64, dtype=xp.ns.float32)
    xp.check_array(cos, shape=shape + (64,), dtype=xp.ns.float32)
    if not xp.has_values:
        return
    from benchmarks.accuracy import exact_angle_sincos

    # the exact angle (the float64 product of the reference formula rounds by 2.4e-7 at 2**31)
    want_s, want_c = exact_angle_sincos(p.astype(np.float64).reshape(-1), posenc.rope_frequencies(64))
    for got, want in ((cos, np.concatenate([want_c, want_c], -1)), (sin, np.concatenate([want_s, want_s], -1))):
        err = np.abs(xp.to_numpy(got).astype(np.float64).reshape(-1, 64) - want).max()
        assert err <= 2.5e-7, err


def test_tables_that_do_not_fit_name_heads_axis():
    """The tables' placement by ``heads_axis`` is named where it makes them
    not fit ``x`` (the message named only `cos`, `sin` and `x`)."""
    x = np.zeros((2, 0, 2), np.float32)
    t = np.zeros((0, 2), np.float32)
    with pytest.raises(ValueError, match=r"of shape \(2, 0, 2\) with `heads_axis` = 1 \(leading axes"):
        posenc.apply_rope(x, t, t, heads_axis=1)
    np.testing.assert_array_equal(posenc.apply_rope(x, t, t), x)  # (without heads_axis they broadcast)


def test_rope_names_its_own_width_in_a_scaling_refusal():
    """rope has no `dim`: a scaling that does not fit the rotated width names
    `rotary_dim`, or x's head dimension."""
    from posenc.scaling import LongRoPE

    s = LongRoPE([1.0] * 8, [1.0] * 8, 64)
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match=r"must have `rotary_dim` // 2 = 2 entries for `rotary_dim` = 4, got 8"):
        posenc.rope(x, np.arange(3), scaling=s, rotary_dim=4)
    with pytest.raises(ValueError, match=r"must have `x`.shape\[-1\] // 2 = 2 entries"):
        posenc.rope(x, np.arange(3), scaling=s)
