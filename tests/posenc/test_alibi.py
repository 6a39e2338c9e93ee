"""ALiBi at given positions and the cumulative gate bias (posenc.alibi).

The length-based ALiBi tests live in ``test_bias.py``.  Oracles: float64
formulas written here from the papers (Press et al.; Lin et al.'s
Forgetting Transformer), transformers' BLOOM (``build_alibi_tensor`` under
left padding) and x-transformers (``AlibiPositionalBias.forward_custom_pos``,
``DataDependentAlibi``), each with a control that must miss.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc

from .test_bias import ref_get_slopes


def ref_alibi_at(h, qpos, kpos, causal=False, form="paper"):
    """-m |k - q| (or BLOOM's m * k) at positions, float64, shape batch + (h, q, k)."""
    m = np.array(ref_get_slopes(h))[:, None, None]
    qpos, kpos = np.asarray(qpos, np.float64), np.asarray(kpos, np.float64)
    d = kpos[..., None, :] - qpos[..., :, None]
    if form == "paper":
        out = -m * np.abs(d)[..., None, :, :]
    else:  # over the batch axes of both arrays, one row unless causal
        out = m * kpos[..., None, None, :]
        out = np.broadcast_to(out, d.shape[:-2] + (h, d.shape[-2] if causal else 1, d.shape[-1]))
    return np.where((d > 0)[..., None, :, :], -np.inf, out) if causal else out


def ref_gates(g, h=None, causal=True):
    """The Forgetting Transformer's D_ij = sum_{j < l <= i} g_l, by loops, float64."""
    g = np.asarray(g, np.float64)
    h = g if h is None else np.asarray(h, np.float64)
    n = g.shape[-1]
    out = np.empty(g.shape + (n,))
    for i in range(n):
        for j in range(n):
            if j <= i:
                out[..., i, j] = g[..., j + 1 : i + 1].sum(-1)
            else:
                out[..., i, j] = -np.inf if causal else h[..., i + 1 : j + 1].sum(-1)
    return out


# ---------------------------------------------------------------- ALiBi at positions
POSITION_CASES = {
    "packed": (np.array([[0, 1, 2, 0, 1, 2, 3]]), None),
    "left padding": (np.array([[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]]), None),
    "pair": (np.array([[5, 6], [2, 3]]), np.arange(7)),
    "float": (np.array([0.0, 0.5, 2.25, 7.0]), np.array([[1.0, -3.5, 2.0], [0.0, 0.25, 9.0]])),
    "1-d": (np.arange(4) * 3, None),
}


@pytest.mark.parametrize("case", sorted(POSITION_CASES))
@pytest.mark.parametrize("causal", [False, True])
def test_alibi_at_positions(xp, case, causal):
    qn, kn = POSITION_CASES[case]
    if kn is None:
        got = xp.call(posenc.alibi_bias, 6, positions=xp.asarray(qn), causal=causal)
        kn = qn
    else:  # both arrays traced under jax.jit: passed to the traced function, not closed over
        pair = lambda a, b: posenc.alibi_bias(6, positions=(a, b), causal=causal)  # noqa: E731
        got = xp.call(pair, xp.asarray(qn), xp.asarray(kn))
    want = ref_alibi_at(6, qn, kn, causal)
    xp.assert_close(got, want, rtol=2 * xp.tol(), atol=0, dtype=xp.default_float)
    if xp.has_values and not causal:  # +0.0 where query and key positions coincide
        g = xp.to_numpy(got)
        assert not np.signbit(g[g == 0]).any()


def test_alibi_at_positions_bloom_form(xp):
    pos = np.array([[0, 0, 1, 2], [0, 1, 2, 3]])
    for causal in (False, True):
        got = xp.call(posenc.alibi_bias, 3, positions=xp.asarray(pos), form="bloom", causal=causal)
        want = ref_alibi_at(3, pos, pos, causal, form="bloom")
        xp.assert_close(got, want, rtol=2 * xp.tol(), atol=0, dtype=xp.default_float)
    # a pair whose query positions carry batch axes the keys' lack: the bias
    # spans both (batch + (heads, 1, k)), though only the keys' values enter
    qpos = np.arange(2 * 3 * 4).reshape(2, 3, 4) % 5
    kpos = np.array([[0, 1, 2, 3, 4], [2, 3, 4, 5, 6], [0, 0, 1, 2, 3]])
    pair = lambda a, b: posenc.alibi_bias(3, positions=(a, b), form="bloom")  # noqa: E731
    got = xp.call(pair, xp.asarray(qpos), xp.asarray(kpos))
    assert tuple(got.shape) == (2, 3, 3, 1, 5)
    xp.assert_close(got, ref_alibi_at(3, qpos, kpos, form="bloom"), rtol=2 * xp.tol(), atol=0, dtype=xp.default_float)


@pytest.mark.parametrize(("q", "k", "off"), [(5, 5, 0), (2, 7, 5), (3, 6, 1)])
@pytest.mark.parametrize("causal", [False, True])
def test_positions_equal_lengths(q, k, off, causal):
    """Positions off .. off + q - 1 against 0 .. k - 1 are the length-based call, bit for bit."""
    got = posenc.alibi_bias(4, positions=(np.arange(off, off + q), np.arange(k)), causal=causal)
    want = posenc.alibi_bias(4, q, k, offset=off, causal=causal)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_positions_match_x_transformers():
    torch = pytest.importorskip("torch")
    xt = pytest.importorskip("x_transformers.x_transformers")
    mod = xt.AlibiPositionalBias(heads=8, total_heads=8)
    gen = torch.Generator().manual_seed(0)
    pos_i = torch.randint(0, 50, (2, 5), generator=gen)
    pos_j = torch.randint(0, 50, (2, 9), generator=gen)
    for args in ((pos_i,), (pos_i, pos_j)):
        want = mod.forward_custom_pos(*args)
        got = posenc.alibi_bias(8, positions=args[0] if len(args) == 1 else args, xp=torch)
        torch.testing.assert_close(got, want, rtol=3e-7, atol=0)
        # control: the same lengths without the positions
        control = posenc.alibi_bias(8, *want.shape[-2:], xp=torch)
        assert (control - want).abs().max() > 1.0
    # float positions
    fpos = torch.rand(3, 6, generator=gen) * 20
    torch.testing.assert_close(posenc.alibi_bias(8, positions=fpos), mod.forward_custom_pos(fpos), rtol=1e-6, atol=1e-6)


def test_positions_match_bloom_left_padding():
    torch = pytest.importorskip("torch")
    bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
    mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1]])
    h = 6
    want = bloom.build_alibi_tensor(mask, h, torch.float32)  # (batch * heads, 1, k)
    pos = (mask.cumsum(-1) - 1) * mask
    got = posenc.alibi_bias(h, positions=pos, form="bloom")
    torch.testing.assert_close(got.reshape(want.shape), want, rtol=3e-7, atol=0)
    control = posenc.alibi_bias(h, positions=torch.arange(6).expand(3, 6), form="bloom")
    assert (control.reshape(want.shape) - want).abs().max() > 1.0


def test_positions_under_jit_and_compile():
    torch = pytest.importorskip("torch")

    def step(q_pos, k_pos):
        return posenc.alibi_bias(4, positions=(q_pos, k_pos), causal=True)

    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True, backend="eager", dynamic=True)
    for q, k in ((1, 5), (2, 9)):
        args = (torch.arange(k - q, k)[None].expand(2, q), torch.arange(k)[None].expand(2, k))
        torch.testing.assert_close(compiled(*args), step(*args), rtol=0, atol=0)
    jax = pytest.importorskip("jax")
    pos = np.array([[0, 1, 2, 0, 1]], dtype=np.int32)
    f = jax.jit(lambda p: posenc.alibi_bias(4, positions=p, causal=True))
    np.testing.assert_array_equal(np.asarray(f(jax.numpy.asarray(pos))), posenc.alibi_bias(4, positions=pos,
                                  causal=True, dtype=np.float32))


@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: posenc.alibi_bias(2, 3, positions=np.arange(3)), ValueError, "query_len"),
        (lambda: posenc.alibi_bias(2, key_len=3, positions=np.arange(3)), ValueError, "key_len"),
        (lambda: posenc.alibi_bias(2, offset=1, positions=np.arange(3)), ValueError, "offset"),
        (lambda: posenc.alibi_bias(2, positions=np.arange(3), form="mpt"), ValueError, "form"),
        (lambda: posenc.alibi_bias(2), TypeError, "query_len"),
        (lambda: posenc.alibi_bias(2, positions=np.array(3)), ValueError, "positions"),
        (lambda: posenc.alibi_bias(2, positions=5), TypeError, "positions"),
        (lambda: posenc.alibi_bias(2, positions=np.array([True, False])), TypeError, "positions"),
        (lambda: posenc.alibi_bias(2, positions=np.array([0.0, np.nan])), ValueError, "positions"),
        (lambda: posenc.alibi_bias(2, positions=(np.zeros((2, 3)), np.zeros((3, 3)))), ValueError, "positions"),
        (lambda: posenc.alibi_bias(2, positions=np.array([0, 2**62])), ValueError, "positions"),
        # nested lists: a pair or a batch? refused
        (lambda: posenc.alibi_bias(2, positions=([0, 1], [2, 3])), TypeError, "positions"),
        (lambda: posenc.alibi_bias(2, positions=(np.arange(2), np.arange(3), np.arange(4))), TypeError, "positions"),
    ],
)
def test_positions_bad_input(call, exc, name):
    with pytest.raises(exc, match=f"`{name}`"):
        call()


def test_positions_other_namespace_refused():
    torch = pytest.importorskip("torch")
    with pytest.raises((TypeError, ValueError), match="`positions`"):
        posenc.alibi_bias(2, positions=(np.arange(3), torch.arange(3)))


# ---------------------------------------------------------------- cumulative gate bias
def _gates(shape, seed=0):
    """logsigmoid of gate logits around 3 (forget gates near 1, as FoX initialises them)."""
    z = np.random.default_rng(seed).normal(3.0, 2.0, shape)
    return -np.logaddexp(0.0, -z)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 6), (1, 0), (4, 1)])
def test_gate_bias_causal(xp, shape):
    g = _gates(shape)
    got = xp.call(posenc.cumulative_gate_bias, xp.asarray(g))
    want = ref_gates(g)
    tol = xp.tol(xp.asarray(g).dtype)
    xp.assert_close(got, want, rtol=4 * tol, atol=4 * tol, dtype=xp.asarray(g).dtype)


def test_gate_bias_bidirectional(xp):
    g, h = _gates((2, 5), 1), _gates((2, 5), 2)
    for back in (None, h):
        kw = {} if back is None else {"backward_log_gates": xp.asarray(back)}
        got = xp.call(posenc.cumulative_gate_bias, xp.asarray(g), causal=False, **kw)
        tol = xp.tol(xp.asarray(g).dtype)
        xp.assert_close(got, ref_gates(g, back, causal=False), rtol=4 * tol, atol=4 * tol, dtype=xp.asarray(g).dtype)


def test_constant_gates_are_alibi():
    m = np.array([0.5, 0.125])
    g = np.broadcast_to(-m[:, None], (2, 7))
    np.testing.assert_array_equal(posenc.cumulative_gate_bias(g, causal=False), posenc.alibi_bias(2, 7, slopes=m))
    np.testing.assert_array_equal(posenc.cumulative_gate_bias(g), posenc.alibi_bias(2, 7, slopes=m, causal=True))


@pytest.mark.parametrize("n", [300, 1000])
def test_gate_bias_float32_accuracy(n):
    """Near the diagonal, where the bias is small, float32 entries keep their
    relative accuracy (the float32 difference of cumulative sums does not)."""
    g = _gates((n,), 3) - 0.2
    c = np.cumsum(g)
    want = c[:, None] - c[None, :]  # float64, lower triangle
    got = posenc.cumulative_gate_bias(g.astype(np.float32)).astype(np.float64)
    low = np.tril(np.ones((n, n), bool), -1)
    rel = np.abs(got - want)[low] / np.abs(want)[low]
    assert rel.max() < 1.2e-7  # the float64 sums, rounded once
    c32 = np.cumsum(g.astype(np.float32))
    naive = (c32[:, None] - c32[None, :]).astype(np.float64)
    near = low & (np.arange(n)[:, None] - np.arange(n)[None, :] <= 2)
    assert (np.abs(naive - want)[near] / np.abs(want)[near]).max() > 1e-5  # control: the usual float32 way
    # no float64 on the device: summed outward from the diagonal in float32
    xs = pytest.importorskip("array_api_strict")
    if n > 300:
        return
    gs = xs.asarray(g.astype(np.float32), device=xs.Device("no_float64"))
    got = np.asarray(posenc.cumulative_gate_bias(gs).to_device(xs.Device("CPU_DEVICE"))).astype(np.float64)
    dist = (np.arange(n)[:, None] - np.arange(n)[None, :])[low]
    assert (np.abs(got - want)[low] / np.abs(want)[low] / dist).max() < 1.2e-7


def test_gate_bias_matches_x_transformers():
    torch = pytest.importorskip("torch")
    xt = pytest.importorskip("x_transformers.x_transformers")
    torch.manual_seed(0)
    x = torch.randn(2, 7, 16)
    for causal in (True, False):
        mod = xt.DataDependentAlibi(16, 4, causal=causal)
        with torch.no_grad():
            want = mod(x)
            gates = mod.to_forget_gates(x) * mod.post_log_scale  # (b, h or 2h, n)
        if causal:
            got = posenc.cumulative_gate_bias(gates)
            low = torch.ones(7, 7, dtype=torch.bool).tril()
            torch.testing.assert_close(got[..., low], want[..., low], rtol=1e-6, atol=1e-6)
            assert torch.isneginf(got[..., ~low]).all()
            # control: the gates of the key included (sum over j <= l <= i)
            inclusive = got + gates[..., None, :]
            assert (inclusive[..., low] - want[..., low]).abs().max() > 1e-3
        else:
            fwd, back = gates.chunk(2, dim=1)
            got = posenc.cumulative_gate_bias(fwd, causal=False, backward_log_gates=back)
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
            control = posenc.cumulative_gate_bias(fwd, causal=False)
            assert (control - want).abs().max() > 1e-3


def _oracle_grad(g, w):
    """d/dg_l of sum_ij w_ij D_ij: the sum of w over the pairs j < l <= i (and,
    without the causal mask, l in (i, j] for j > i)."""
    n = g.shape[-1]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    out = np.zeros(g.shape)
    for lo in range(n):
        covers = ((j < lo) & (lo <= i)) | ((i < lo) & (lo <= j))
        out[..., lo] = (w * covers).sum((-1, -2))
    return out


def test_gate_bias_gradients_torch_and_jax():
    torch = pytest.importorskip("torch")
    g = _gates((2, 6), 4)
    w = np.random.default_rng(5).standard_normal((2, 6, 6))
    want = _oracle_grad(g, w)
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 2e-6)):
        t = torch.tensor(g, dtype=dtype, requires_grad=True)
        (posenc.cumulative_gate_bias(t, causal=False) * torch.tensor(w, dtype=dtype)).sum().backward()
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=tol, atol=tol)
        # the causal bias: -inf above the diagonal, no NaN in the gradient
        t = torch.tensor(g, dtype=dtype, requires_grad=True)
        low = torch.ones(6, 6, dtype=torch.bool).tril()
        (posenc.cumulative_gate_bias(t)[..., low] * torch.tensor(w, dtype=dtype)[..., low]).sum().backward()
        np.testing.assert_allclose(t.grad.numpy(), _oracle_grad(g, np.tril(w)), rtol=tol, atol=tol)
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def loss(x):
        return jnp.sum(posenc.cumulative_gate_bias(x, causal=False) * jnp.asarray(w, dtype=jnp.float32))

    got = jax.jit(jax.grad(loss))(jnp.asarray(g, dtype=jnp.float32))
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: posenc.cumulative_gate_bias(np.array(0.5)), ValueError, "log_gates"),
        (lambda: posenc.cumulative_gate_bias(np.arange(3)), TypeError, "log_gates"),
        (lambda: posenc.cumulative_gate_bias(np.zeros(3), causal=None), TypeError, "causal"),
        (lambda: posenc.cumulative_gate_bias(np.zeros(3), backward_log_gates=np.zeros(3)), ValueError, "causal"),
        (
            lambda: posenc.cumulative_gate_bias(np.zeros(3), causal=False, backward_log_gates=np.zeros(4)),
            ValueError,
            "backward_log_gates",
        ),
        (lambda: posenc.cumulative_gate_bias(np.broadcast_to(np.zeros(1), (2**21,))), ValueError, r"2\*\*40"),
    ],
)
def test_gate_bias_bad_input(call, exc, name):
    with pytest.raises(exc, match=name if name.startswith("2") else f"`{name}"):
        call()


def test_gate_bias_is_lazy_on_dask():
    da = pytest.importorskip("dask.array")
    import dask

    from tests.conftest import _forbid_compute

    g = _gates((3, 40))
    with dask.config.set(scheduler=_forbid_compute):
        out = posenc.cumulative_gate_bias(da.from_array(g, chunks=(1, 20)))
    np.testing.assert_allclose(out.compute(), ref_gates(g), rtol=1e-12, atol=1e-12)
    assert math.prod(out.shape) == 3 * 40 * 40
