"""Every kernel of posenc._kernels equals the portable path it replaces."""

from __future__ import annotations

import numpy as np
import pytest

import posenc
from posenc import _compat, _kernels, rotary
from posenc.scaling import YaRN

torch = pytest.importorskip("torch")

BACKENDS = {"numpy": np.asarray, "torch": torch.as_tensor}


def _np(a):
    return a.detach().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)


def test_eager_kind():
    assert _kernels.eager_kind(np.zeros(3)) == "numpy"
    assert _kernels.eager_kind(torch.zeros(3)) == "torch"
    assert _kernels.eager_kind(torch.nn.Parameter(torch.zeros(3))) is None  # a subclass
    assert _kernels.eager_kind(np.float64(1.0)) is None
    assert _kernels.eager_kind([1.0]) is None

    @torch.compile(fullgraph=True, backend="eager")
    def traced(x):
        return x + (1.0 if _kernels.eager_kind(x) is None else 2.0)

    assert float(traced(torch.zeros(()))) == 1.0  # never while torch traces


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    ("xshape", "tshape"),
    [((1, 4, 1, 16), (1, 1, 1, 16)), ((2, 3, 16), (3, 16)), ((3, 16), (2, 3, 16)), ((5, 8), (5, 8))],
)
def test_rotate_small_equals_portable(kind, layout, dtype, xshape, tshape):
    rng = np.random.default_rng(0)
    conv = BACKENDS[kind]
    x = conv(rng.standard_normal(xshape).astype(dtype))
    c = conv(rng.standard_normal(tshape).astype(dtype))  # pairs need not hold one value
    s = conv(rng.standard_normal(tshape).astype(dtype))
    plan = rotary._make_plan(x, c, s, layout, None, False, None)
    assert plan.small is _kernels.ROTATE_SMALL[kind]
    want = rotary._rotate_portable(x, c, s, plan)
    got = _kernels.ROTATE_SMALL[kind](x, c, s, layout)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(_np(got), _np(want))


def test_rotate_small_keeps_autograd():
    x = torch.randn(1, 4, 1, 16, dtype=torch.float64, requires_grad=True)
    c, s = posenc.rope_cos_sin(torch.tensor([[9]]), 16, dtype=torch.float64)
    y = posenc.apply_rope(x, c, s, heads_axis=1)
    (g,) = torch.autograd.grad(y.sum(), x)
    # d/dx of sum(x * cos + rotate_half(x) * sin): cos - sin on the first half, cos + sin on the second
    c0, s0 = c[0, 0], s[0, 0]
    want = torch.cat([c0[:8] + s0[8:], c0[8:] - s0[:8]])
    torch.testing.assert_close(g[0, :, 0], want.expand(4, 16), rtol=0, atol=1e-15)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(("dtype", "scaling"), [("float32", None), ("float16", None), ("float32", YaRN(factor=4.0, original_max_positions=64))])
def test_small_table_equals_compact_layout(kind, layout, dtype, scaling, monkeypatch):
    """rope_cos_sin's one-pass tables of small integer arrays: bit for bit
    the compact tables laid out (the path of larger tables)."""
    p = BACKENDS[kind](np.array([[0, 1, 4096, -7], [2**31 - 1, 5, 2**40 + 3, 77]]))
    dt = getattr(np if kind == "numpy" else torch, dtype)
    rotary._TABLE_PLANS.clear()
    got = posenc.rope_cos_sin(p, 32, layout=layout, scaling=scaling, dtype=dt)
    again = posenc.rope_cos_sin(p, 32, layout=layout, scaling=scaling, dtype=dt)  # from the cached plan
    plan = next(iter(rotary._TABLE_PLANS.values()))
    assert plan[-1] is not None and plan[-1][0] is _kernels.TURNS[kind]
    monkeypatch.setattr(rotary, "_SMALL_TABLE", 0)
    rotary._TABLE_PLANS.clear()
    want = posenc.rope_cos_sin(p, 32, layout=layout, scaling=scaling, dtype=dt)
    assert next(iter(rotary._TABLE_PLANS.values()))[-1] is None
    for g, a, w in zip(got, again, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(_np(g), _np(w))
        np.testing.assert_array_equal(_np(a), _np(w))


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_small_equals_tables_then_apply(kind, layout, monkeypatch):
    """rope's decode-step lane (one-pass tables, then the formula): bit for
    bit rope_cos_sin + apply_rope, and rope without the lane."""
    rng = np.random.default_rng(1)
    conv = BACKENDS[kind]
    q = conv(rng.standard_normal((2, 4, 3, 16)).astype(np.float32))
    pid = conv(np.array([[4096, 4097, 4098], [3, 2, 1]]))
    dt = np.float32 if kind == "numpy" else torch.float32
    rotary._ROPE_PLANS.clear()
    got = [posenc.rope(q, pid, layout=layout, heads_axis=1) for _ in range(2)]
    assert next(iter(rotary._ROPE_PLANS.values())).small is not None
    c, s = posenc.rope_cos_sin(pid, 16, layout=layout, dtype=dt)
    want = posenc.apply_rope(q, c, s, layout=layout, heads_axis=1)
    monkeypatch.setattr(rotary, "_small_table", lambda *args: None)  # the compact tables and the portable formula
    rotary._ROPE_PLANS.clear()
    plain = posenc.rope(q, pid, layout=layout, heads_axis=1)
    assert next(iter(rotary._ROPE_PLANS.values())).small is None
    for g in got:
        np.testing.assert_array_equal(_np(g), _np(want))
        np.testing.assert_array_equal(_np(g), _np(plain))


def test_call_key_types_and_tracing():
    a = np.zeros((2, 3), np.float32)
    k = _compat.call_key((a,), (4, None))
    assert k is not None and k != _compat.call_key((a,), (4.0, None)) and k != _compat.call_key((a,), (True, None))
    assert _compat.call_key((a,), ([1],)) is None  # unhashable: the full checks decide
    assert _compat.call_key(([1.0],), ()) is None  # not an array
    assert _compat.call_key((a,), ()) != _compat.call_key((a.reshape(3, 2),), ())
