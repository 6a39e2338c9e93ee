"""Multi-axis RoPE (posenc.axes): rope_axes_cos_sin, rope_axes, grid_ids.

Oracles are float64 NumPy formulas written from the definitions (Su et al.'s
RoPE per axis, the layouts of the peers); the peers themselves are in
test_axes_peers.py.  Every backend through the ``xp`` fixture.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc
from posenc import scaling as sc


# ---------------------------------------------------------------- oracles
def ref_freqs(d: int, base: float = 10000.0) -> np.ndarray:
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def lay(c: np.ndarray, layout: str) -> np.ndarray:
    if layout == "half":
        return np.concatenate([c, c], axis=-1)
    return np.repeat(c, 2, axis=-1)


def ref_axes(ids, axes_dim, bases=None, layout="interleaved", freqs=None, turns=False):
    """cos, sin of the angles ids[..., k] * w_k, axes concatenated, laid out."""
    ids = np.asarray(ids, dtype=np.float64)
    n = len(axes_dim)
    bases = [10000.0] * n if bases is None else bases
    ws = freqs if freqs is not None else [ref_freqs(d, b) for d, b in zip(axes_dim, bases)]
    a = np.concatenate([ids[..., k, None] * ws[k] for k in range(n)], axis=-1)
    if turns:
        a = a * 2.0 * math.pi
    return lay(np.cos(a), layout), lay(np.sin(a), layout)


def ref_matrix(ids, F, layout="interleaved"):
    """angles[..., h, i, j] = sum_k ids[i, k] F[h, j, k], the heads first."""
    ids = np.asarray(ids, dtype=np.float64)
    F = np.asarray(F, dtype=np.float64)
    a = np.einsum("...nk,hmk->h...nm", ids, F.reshape((-1,) + F.shape[-2:]))
    a = a.reshape(F.shape[:-2] + ids.shape[:-1] + (F.shape[-2],))
    return lay(np.cos(a), layout), lay(np.sin(a), layout)


def ref_rotate(x, cos, sin, layout):
    x = np.asarray(x, dtype=np.float64)
    if layout == "half":
        h = x.shape[-1] // 2
        rot = np.concatenate([-x[..., h:], x[..., :h]], axis=-1)
    else:
        rot = np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)
    return x * cos + rot * sin


IDS = np.array([[[0, 3, -2], [7, 0, 5], [1, 40, 9]], [[2, 2, 2], [-6, 11, 0], [300, 1, 4]]])


# ---------------------------------------------------------------- rope_axes_cos_sin
def test_matches_formula(xp):
    dims, bases = [4, 6, 8], [100.0, 10000.0, 500.0]
    ids = xp.asarray(IDS)
    for layout in ("interleaved", "half"):
        got = xp.call(posenc.rope_axes_cos_sin, ids, dims, base=bases, layout=layout)
        for g, w in zip(got, ref_axes(IDS, dims, bases, layout)):
            xp.assert_close(g, w, atol=xp.tol(), dtype=xp.default_float)
    if xp.float64:
        got = xp.call(posenc.rope_axes_cos_sin, ids, dims, base=bases, dtype=xp.dtype("float64"))
        for g, w in zip(got, ref_axes(IDS, dims, bases)):
            xp.assert_close(g, w, atol=1e-13, dtype=xp.dtype("float64"))
    # float32 tables at ids near 2**20 and beyond: the exact engine, not the rounded product
    big = np.array([[2**20 - 3, 777_777, 5], [1_000_003, 5, 2**22 + 1]])
    got = xp.call(posenc.rope_axes_cos_sin, xp.asarray(big), dims, base=bases, dtype=xp.dtype("float32"))
    for g, w in zip(got, ref_axes(big, dims, bases)):
        xp.assert_close(g, w, atol=xp.tol("float32"), dtype=xp.dtype("float32"))
    naive = np.cos(np.float32(big[0, 0]) * np.float32(0.1))
    assert abs(float(naive) - math.cos(big[0, 0] * 0.1)) > 1e-3


def test_options(xp):
    """Float ids, the strided split, turns, per-axis scalings."""
    fids = np.array([[0.25, -3.5], [7.125, 1.0], [-40.0625, 12.5]])
    ids = xp.asarray(fids)
    # strided: axis k takes frequencies k, k + 2, ... of one RoPE of width 16 (Pixtral)
    w = ref_freqs(16)
    got = xp.call(posenc.rope_axes_cos_sin, ids, [8, 8], split="strided", layout="half")
    for g, wt in zip(got, ref_axes(fids, [8, 8], layout="half", freqs=[w[0::2], w[1::2]])):
        xp.assert_close(g, wt, atol=xp.tol(), dtype=xp.default_float)
    # turns: angles 2 pi p w (DINOv3)
    got = xp.call(posenc.rope_axes_cos_sin, ids, [8, 8], base=100.0, turns=True)
    for g, wt in zip(got, ref_axes(fids, [8, 8], [100.0, 100.0], turns=True)):
        xp.assert_close(g, wt, atol=xp.tol(), dtype=xp.default_float)
    # one scaling per axis; YaRN's attention factor multiplies its axis' tables
    yarn = sc.YaRN(4.0, 64)
    got = xp.call(posenc.rope_axes_cos_sin, ids, [8, 8], scaling=[sc.NTK(2.0), yarn])
    ntk_w = ref_freqs(8, 10000.0 * 2.0 ** (8 / 6))
    yarn_w = np.asarray(posenc.rope_frequencies(8, scaling=yarn), dtype=np.float64)
    c, s = ref_axes(fids, [8, 8], freqs=[ntk_w, yarn_w])
    f = np.concatenate([np.ones(8), np.full(8, yarn.attention_scaling())])
    for g, wt in zip(got, (c * f, s * f)):
        xp.assert_close(g, wt, atol=4 * xp.tol(), dtype=xp.default_float)


def test_one_axis_is_rope_cos_sin():
    pos = np.array([0, 5, 77, 1024])
    for layout in ("half", "interleaved"):
        got = posenc.rope_axes_cos_sin(pos[:, None], [16], layout=layout)
        for g, w in zip(got, posenc.rope_cos_sin(pos, 16, layout=layout)):
            np.testing.assert_allclose(g, w, atol=1e-15)


def test_relative_property():
    """Scores of rotated queries and keys depend only on the ids' differences, per axis."""
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((2, 6, 32))
    ids = rng.integers(-20, 20, size=(6, 3))
    shift = np.array([5, -7, 100])
    for layout in ("interleaved", "half"):
        kw = {"layout": layout, "dtype": np.float64}

        def scores(i, layout=layout):
            dims = [8, 12, 12]
            return posenc.rope_axes(q, i, dims, layout=layout) @ posenc.rope_axes(k, i, dims, layout=layout).T

        np.testing.assert_allclose(scores(ids), scores(ids + shift), atol=1e-10)
        # a shift of one token's ids changes its scores
        assert np.max(np.abs(scores(ids) - scores(ids + (np.arange(6) == 0)[:, None] * shift))) > 1e-2
        c, s = posenc.rope_axes_cos_sin(ids, [8, 12, 12], **kw)
        np.testing.assert_allclose(np.hypot(c, s), 1.0, atol=1e-15)


# ---------------------------------------------------------------- frequency matrices
F = np.array(
    [
        [[1.0, 0.0], [0.3, -0.7], [0.01, 2.5]],
        [[-0.25, 0.5], [3.0, 1.0], [0.001, 0.002]],
    ]
)  # (heads, m, n_axes)


def test_frequency_matrix(xp):
    ids = np.array([[0, 0], [3, -4], [1000, 77], [-512, 2048]])
    f = F if xp.float64 else F.astype(np.float32)
    got = xp.call(posenc.rope_axes_cos_sin, xp.asarray(ids), freqs=xp.asarray(F))
    for g, w in zip(got, ref_matrix(ids, f)):
        xp.assert_close(g, w, atol=xp.tol(), dtype=xp.default_float)
    # float ids, one set of frequencies (no head axis), turns, the half layout
    fids = np.array([[0.25, -3.5], [7.125, 1.0], [-40.0625, 12.5], [1.0, 2.0]])
    got = xp.call(posenc.rope_axes_cos_sin, xp.asarray(fids), freqs=xp.asarray(F[1]), turns=True, layout="half")
    a = 2 * math.pi * np.einsum("nk,mk->nm", fids, f[1])
    for g, w in zip(got, (lay(np.cos(a), "half"), lay(np.sin(a), "half"))):
        xp.assert_close(g, w, atol=xp.tol(), dtype=xp.default_float)
    # angles up to ~1e5 rad: the exact reduction on every device (float32 pairs
    # where there is no float64), where float32 products are off by ~1e-2
    rng = np.random.default_rng(2)
    big = rng.integers(-40000, 40000, size=(4, 2))
    f32 = (rng.standard_normal((2, 3, 2)) * 2.0).astype(np.float32)
    got = xp.call(posenc.rope_axes_cos_sin, xp.asarray(big), freqs=xp.asarray(f32), dtype=xp.dtype("float32"))
    want = ref_matrix(big, f32)
    for g, w in zip(got, want):
        xp.assert_close(g, w, atol=4e-7, dtype=xp.dtype("float32"))
    naive = np.cos(np.einsum("nk,hmk->hnm", big.astype(np.float32), f32))
    assert np.max(np.abs(naive - want[0][..., ::2])) > 1e-3


def test_frequency_matrix_float32_pairs_bound():
    """The float32-pair reduction (devices without float64) alone, over a
    sweep of angles up to 1e7 rad: within 3e-7 of the truth."""
    xs = pytest.importorskip("array_api_strict")

    from posenc import _compat

    rng = np.random.default_rng(3)
    ids = rng.integers(-(2**22), 2**22, size=(256, 3))
    f = rng.uniform(-2.0, 2.0, size=(8, 3)).astype(np.float32)
    dev = xs.Device("no_float64")
    got = posenc.rope_axes_cos_sin(
        xs.asarray(ids.astype(np.int64), device=dev), freqs=xs.asarray(f, device=dev), dtype="float32"
    )
    assert not _compat.has_float64(xs, dev)
    want = ref_matrix(ids, f)
    cpu = xs.Device("CPU_DEVICE")
    for g, w in zip(got, want):
        assert np.max(np.abs(np.asarray(g.to_device(cpu)) - w)) < 3e-7


def test_frequency_matrix_grad_torch():
    torch = pytest.importorskip("torch")
    ids = torch.tensor([[0, 1], [5, -3], [40, 2]])
    for dt in (torch.float32, torch.float64):
        f = torch.tensor(F, dtype=dt, requires_grad=True)
        c, s = posenc.rope_axes_cos_sin(ids, freqs=f, layout="half", dtype=dt)
        w = torch.linspace(-1.0, 1.0, c.numel(), dtype=dt).reshape(c.shape)
        (c * w + 0.5 * s * w).sum().backward()
        # d/dF[h, j, k] = sum over tokens and both halves of (-sin a w_c + 0.5 cos a w_s) ids[:, k]
        a = np.einsum("nk,hmk->hnm", ids.numpy().astype(np.float64), f.detach().double().numpy())
        wn = w.double().numpy()
        wp = wn[..., :3] + wn[..., 3:]
        g = np.einsum("hnm,nk->hmk", -np.sin(a) * wp + 0.5 * np.cos(a) * wp, ids.numpy().astype(np.float64))
        tol = 1e-12 if dt == torch.float64 else 1e-5
        np.testing.assert_allclose(f.grad.double().numpy(), g, atol=tol * np.max(np.abs(g)))


def test_frequency_matrix_compiled_with_grad():
    torch = pytest.importorskip("torch")
    f = torch.tensor(F, dtype=torch.float32, requires_grad=True)
    ids = torch.tensor([[0, 1], [5, -3], [40, 2]])

    def loss(ids, f):
        c, s = posenc.rope_axes_cos_sin(ids, freqs=f)
        return (c * s).sum() + c.sum()

    torch._dynamo.reset()
    got = torch.compile(loss, fullgraph=True, backend="eager")(ids, f)
    g_got = torch.autograd.grad(got, f)[0]
    want = loss(ids, f)
    g_want = torch.autograd.grad(want, f)[0]
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(g_got, g_want)


def test_frequency_matrix_grad_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    ids = np.array([[0, 1], [5, -3], [40, 2]], dtype=np.int32)
    f32 = F.astype(np.float32)

    def loss(f):
        c, s = posenc.rope_axes_cos_sin(jnp.asarray(ids), freqs=f)
        return jnp.sum(c) + 0.5 * jnp.sum(s)

    a = np.einsum("nk,hmk->hnm", ids.astype(np.float64), f32.astype(np.float64))
    terms = (-np.sin(a) + 0.5 * np.cos(a))[..., None] * ids.astype(np.float64)[None, :, None, :]
    g = 2 * terms.sum(axis=1)
    # float32 sums of the terms (and of the derivatives of the exact product): a few ulp of their sizes
    bound = 64 * 2.0**-24 * 2 * np.abs(terms).sum(axis=1) + 4 * np.spacing(np.abs(g).astype(np.float32))
    got = np.asarray(jax.jit(jax.grad(loss))(jnp.asarray(f32)), dtype=np.float64)
    assert np.all(np.abs(got - g) <= bound), np.max(np.abs(got - g) / bound)


# ---------------------------------------------------------------- rope_axes
def test_rope_axes_rotates(xp):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 9, 20))  # 16 of 20 features rotated
    ids = posenc.grid_ids((3, 3))
    layout = "interleaved"
    got = xp.call(posenc.rope_axes, xp.asarray(x), xp.asarray(ids), [8, 8], layout=layout)
    c, s = ref_axes(ids, [8, 8], layout=layout)
    xb = x if xp.float64 else x.astype(np.float32)
    want = np.concatenate([ref_rotate(xb[..., :16], c, s, layout), xb[..., 16:]], axis=-1)
    xp.assert_close(got, want, atol=8 * xp.tol(), dtype=xp.asarray(x).dtype)


def test_rope_axes_frequency_matrix_and_heads_axis():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 2, 4, 6))  # (batch, heads, tokens, head_dim)
    ids = rng.integers(0, 9, size=(4, 2))
    got = posenc.rope_axes(x, ids, freqs=F)
    c, s = ref_matrix(ids, F)
    np.testing.assert_allclose(got, ref_rotate(x, c, s, "interleaved"), atol=1e-12)
    bids = rng.integers(0, 9, size=(2, 4, 2))  # a batch of ids: heads on axis 1 of x
    got = posenc.rope_axes(x, bids, [4, 2], heads_axis=1)
    c, s = ref_axes(bids, [4, 2])
    np.testing.assert_allclose(got, ref_rotate(x, c[:, None], s[:, None], "interleaved"), atol=1e-12)


# ---------------------------------------------------------------- grid_ids
def ref_grid(shape):
    return np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing="ij"), axis=-1).reshape(-1, len(shape))


def test_grid_ids_orders(xp):
    got = xp.call(posenc.grid_ids, (2, 3, 4), xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_grid((2, 3, 4)))
    # Qwen2-VL: 2 x 2 blocks of the last two axes, block-major
    got = xp.call(posenc.grid_ids, (2, 4, 6), merge=2, xp=xp.ns, device=xp.device)
    g = ref_grid((2, 4, 6)).reshape(2, 2, 2, 3, 2, 3).transpose(0, 1, 3, 2, 4, 5).reshape(-1, 3)
    xp.assert_close(got, g)
    # Llama 4: (x, y) + 1 and a zero class row last; Flux: zero text rows first
    got = xp.call(posenc.grid_ids, (2, 3), offset=1, indexing="xy", suffix_tokens=1, xp=xp.ns, device=xp.device)
    xp.assert_close(got, np.concatenate([ref_grid((2, 3))[:, ::-1] + 1, [[0, 0]]]))
    got = xp.call(posenc.grid_ids, (1, 2, 2), prefix_tokens=3, xp=xp.ns, device=xp.device)
    xp.assert_close(got, np.concatenate([np.zeros((3, 3)), ref_grid((1, 2, 2))]))


def test_grid_ids_coordinates(xp):
    wide = xp.dtype("float64") if xp.float64 else xp.dtype("float32")
    tol = 1e-12 if xp.float64 else 3e-7
    call = lambda **kw: xp.call(posenc.grid_ids, (3, 4), xp=xp.ns, device=xp.device, **kw)  # noqa: E731
    i, j = ref_grid((3, 4)).T.astype(np.float64)
    # DINOv3: patch centres in [-1, 1]
    for norm, (dh, dw) in {"separate": (3, 4), "min": (3, 3), "max": (4, 4)}.items():
        want = np.stack([2 * (i + 0.5) / dh - 1, 2 * (j + 0.5) / dw - 1], axis=-1)
        xp.assert_close(call(normalize=norm), want, atol=tol, dtype=wide)
    # EVA: rescaled to a reference grid; CogView4: floor of the rescaled index
    xp.assert_close(call(ref_shape=(16, 16)), np.stack([i * 16 / 3, j * 16 / 4], -1), atol=8 * tol, dtype=wide)
    xp.assert_close(call(ref_shape=(256, 256), floor=True), np.stack([i * 256 // 3, j * 256 // 4], -1))
    # Qwen-Image: centred counts; Cosmos: a time scale
    xp.assert_close(call(center=True), np.stack([i - 2, j - 2], -1))
    xp.assert_close(call(scale=(0.8, 1), offset=(0, 0.5)), np.stack([i * 0.8, j + 0.5], -1), atol=tol, dtype=wide)
    # the floor of a real scale of integer counts: the product in the working
    # float dtype, then integer ids (array-api-strict refuses int * float)
    got = call(scale=(2.5, 0.75), floor=True)
    assert xp.ns.isdtype(got.dtype, "integral")
    xp.assert_close(got, np.stack([np.floor(i * 2.5), np.floor(j * 0.75)], -1))


def test_grid_ids_dtype_requests():
    assert posenc.grid_ids((2, 2)).dtype == np.int64
    assert posenc.grid_ids((2, 2), normalize="max").dtype == np.float64
    assert posenc.grid_ids((2, 2), dtype="float32").dtype == np.float32


# ---------------------------------------------------------------- errors
def test_errors():
    ids = np.zeros((4, 3), dtype=np.int64)
    with pytest.raises(ValueError, match="`ids` has 3 columns"):
        posenc.rope_axes_cos_sin(ids, [4, 4])
    with pytest.raises(ValueError, match="`axes_dim`"):
        posenc.rope_axes_cos_sin(ids, [4, 5, 4])
    with pytest.raises(TypeError, match="`axes_dim`"):
        posenc.rope_axes_cos_sin(ids, 12)
    with pytest.raises(TypeError, match="`axes_dim`"):
        posenc.rope_axes_cos_sin(ids)
    with pytest.raises(ValueError, match="`base`"):
        posenc.rope_axes_cos_sin(ids, [4, 4, 4], base=[100.0, 10.0])
    with pytest.raises(ValueError, match="`base`"):
        posenc.rope_axes_cos_sin(ids, [4, 4, 4], base=-1.0)
    with pytest.raises(ValueError, match="`scaling`"):
        posenc.rope_axes_cos_sin(ids, [4, 4, 4], scaling=sc.DynamicNTK(2.0, 16))
    with pytest.raises(TypeError, match="`scaling`"):
        posenc.rope_axes_cos_sin(ids, [4, 4, 4], scaling=2.0)
    with pytest.raises(ValueError, match="`layout`"):
        posenc.rope_axes_cos_sin(ids, [4, 4, 4], layout="neox")
    with pytest.raises(ValueError, match="strided"):
        posenc.rope_axes_cos_sin(ids, [4, 8, 4], split="strided")
    with pytest.raises(ValueError, match="`ids` must be finite"):
        posenc.rope_axes_cos_sin(np.array([[np.nan, 1.0]]), [4, 4])
    with pytest.raises(TypeError, match="`ids`"):
        posenc.rope_axes_cos_sin(5, [4])
    with pytest.raises(ValueError, match="`ids`"):
        posenc.rope_axes_cos_sin(np.zeros(()), [4])
    with pytest.raises(ValueError, match="`freqs`"):
        posenc.rope_axes_cos_sin(ids, freqs=np.ones((4, 2)))
    with pytest.raises(ValueError, match="`axes_dim` and `freqs`"):
        posenc.rope_axes_cos_sin(ids, [4, 4, 4], freqs=np.ones((4, 3)))
    with pytest.raises(ValueError, match="`base`"):
        posenc.rope_axes_cos_sin(ids, freqs=np.ones((4, 3)), base=100.0)
    with pytest.raises(TypeError, match="`freqs`"):
        posenc.rope_axes_cos_sin(ids, freqs=np.ones((4, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="`freqs` must be finite"):
        posenc.rope_axes_cos_sin(ids, freqs=np.full((4, 3), np.inf))
    with pytest.raises(ValueError, match="`axes_dim`"):
        posenc.rope_axes(np.ones((4, 8)), ids, [4, 4, 4])
    with pytest.raises(TypeError, match="`x`"):
        posenc.rope_axes([1.0, 2.0], ids, [4, 4, 4])


def test_grid_ids_errors():
    with pytest.raises(TypeError, match="`shape`"):
        posenc.grid_ids(4)
    with pytest.raises(ValueError, match="`shape`"):
        posenc.grid_ids((4, 0))
    with pytest.raises(ValueError, match="`merge`"):
        posenc.grid_ids((4, 5), merge=2)
    with pytest.raises(ValueError, match="`merge`"):
        posenc.grid_ids((4,), merge=2)
    with pytest.raises(ValueError, match="`offset`"):
        posenc.grid_ids((4, 4), offset=(1, 2, 3))
    with pytest.raises(TypeError, match="`scale`"):
        posenc.grid_ids((4, 4), scale="2")
    with pytest.raises(ValueError, match="`normalize`"):
        posenc.grid_ids((4, 4), normalize="both")
    with pytest.raises(ValueError, match="`ref_shape`"):
        posenc.grid_ids((4, 4), ref_shape=(8,))
    with pytest.raises(ValueError, match="`ref_shape`"):
        posenc.grid_ids((4, 4), ref_shape=(8, 8), normalize="max")
    with pytest.raises(ValueError, match="indexing"):
        posenc.grid_ids((4,), indexing="xy")
    with pytest.raises(ValueError, match="`prefix_tokens`"):
        posenc.grid_ids((4,), prefix_tokens=-1)
    with pytest.raises(TypeError, match="`center`"):
        posenc.grid_ids((4,), center=1)
