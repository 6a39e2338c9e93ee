"""Fuzz the posenc.torch modules through the plumbing of real models.

The function registry fuzzes functions (``NOT_FUZZED`` keeps the modules out
of it); here each module is built from a drawn configuration and taken
through a drawn sequence of what training code does to it: built on the
``meta`` device and materialised with ``to_empty``, ``reset_parameters()``,
cast with ``.double()``, called under ``torch.inference_mode`` at positions
beyond its cache (a grown cache) and then in a training step with autograd,
position ids of a drawn integer dtype (uint8 ... int64), offsets from 0 to
2**20, non-floating inputs.  Every result is compared with the float64
formula of the papers at the tolerance of the module's dtype, and a training
step must backpropagate.  Hostile inputs must raise a ``TypeError`` /
``ValueError`` naming the argument.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_docs import public_names

from ._fuzz import COUNTS
from .registry import FUZZED_SUBMODULES

torch = pytest.importorskip("torch")
import posenc.torch as pt  # noqa: E402

N = 12
HYP = dict(max_examples=N, deadline=None)
INT_DTYPES = ("uint8", "int8", "int16", "int32", "int64")


def _w(dim: int, base: float = 10000.0) -> np.ndarray:
    return base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)


def _tol(dtype, top: float = 0.0) -> float:
    """posenc's bound in ``dtype`` plus the oracle's own rounding of ``p * w``
    in float64 (about ``p`` ulps of 1)."""
    return (1e-13 if dtype == torch.float64 else 5e-7) + abs(top) * 4.5e-16


def _plumb(draw, make, dims_ok=True):
    """A module from ``make()`` taken through drawn plumbing; returns it and its dtype."""
    meta = draw(st.booleans())
    if meta:
        with torch.device("meta"):
            m = make()
        m = m.to_empty(device="cpu")
    else:
        m = make()
    if hasattr(m, "reset_parameters") and draw(st.booleans()):
        with torch.no_grad():
            for t in [*m.buffers(), *m.parameters()]:
                t.fill_(1e27)  # what to_empty may leave
        m.reset_parameters()
    dtype = torch.float32
    if draw(st.booleans()):
        m = m.double()
        dtype = torch.float64
    return m, dtype


def _ids(draw, hi: int) -> tuple[torch.Tensor, np.ndarray]:
    name = draw(st.sampled_from(INT_DTYPES))
    top = int(torch.iinfo(getattr(torch, name)).max)
    n = draw(st.integers(1, 6))
    vals = draw(st.lists(st.integers(0, min(top, hi)), min_size=n, max_size=n))
    ids = torch.tensor([vals], dtype=getattr(torch, name))
    return ids, np.array([vals], dtype=np.float64)


@settings(**HYP)
@given(data=st.data())
def test_rotary_embedding(data):
    draw = data.draw
    dim = draw(st.sampled_from([2, 8, 16]), label="dim")
    base = draw(st.sampled_from([10000.0, 500.0]), label="base")
    cached = draw(st.integers(0, 64), label="max_positions")
    rope, dtype = _plumb(draw, lambda: pt.RotaryEmbedding(dim, base=base, max_positions=cached))
    w = _w(dim, base)
    if draw(st.booleans(), label="grow under inference_mode"):
        with torch.inference_mode():
            rope.cos_sin(4, offset=draw(st.integers(0, 3 * max(cached, 1))))
    if draw(st.booleans(), label="position ids"):
        ids, p = _ids(draw, 2**20)
        seq = ids.shape[-1]
        cos, sin = rope.cos_sin(seq, position_ids=ids)
    else:
        offset = draw(st.sampled_from([0, 1, cached, 2**10, 2**19, 2**20]), label="offset")
        seq = draw(st.integers(1, 5))
        p = np.arange(offset, offset + seq, dtype=np.float64)
        cos, sin = rope.cos_sin(seq, offset=offset)
    ang = np.concatenate([p[..., None] * w, p[..., None] * w], axis=-1)
    tol = _tol(dtype, float(np.max(p)))
    np.testing.assert_allclose(cos.double().numpy(), np.cos(ang), rtol=0, atol=tol)
    np.testing.assert_allclose(sin.double().numpy(), np.sin(ang), rtol=0, atol=tol)
    assert rope.cos_cached.numel() * rope.cos_cached.element_size() <= max(pt.GROW_BYTES, 64 * dim * 8)
    # a training step through the (possibly grown) cache
    q = torch.ones(1, 1, 4, dim, dtype=dtype, requires_grad=True)
    q_rot, _ = rope(q, q)
    q_rot.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()
    COUNTS["fuzz-modules:RotaryEmbedding"] += 1


@settings(**HYP)
@given(data=st.data())
def test_sinusoidal_embedding(data):
    draw = data.draw
    dim = draw(st.sampled_from([2, 8, 16]), label="dim")
    cached = draw(st.integers(0, 64), label="max_positions")
    emb, dtype = _plumb(draw, lambda: pt.SinusoidalEmbedding(dim, max_positions=cached))
    if draw(st.booleans(), label="grow under inference_mode"):
        with torch.inference_mode():
            emb(torch.zeros(1, 3, dim, dtype=dtype), offset=draw(st.integers(0, 3 * max(cached, 1))))
    offset = draw(st.sampled_from([0, 1, cached, 2**10, 2**19, 2**20]), label="offset")
    seq = draw(st.integers(1, 5))
    x = torch.zeros(1, seq, dim, dtype=dtype, requires_grad=True)
    out = emb(x, offset=offset)
    p = np.arange(offset, offset + seq, dtype=np.float64)[:, None] * _w(dim)
    want = np.stack([np.sin(p), np.cos(p)], axis=-1).reshape(seq, dim)
    tol = _tol(dtype, offset + seq)
    np.testing.assert_allclose(out[0].detach().double().numpy(), want, rtol=0, atol=tol)
    out.sum().backward()
    assert x.grad is not None
    bad = draw(st.sampled_from([torch.int64, torch.uint8, torch.bool, torch.int32]), label="x dtype")
    with pytest.raises(TypeError, match="`x`"):
        emb(torch.zeros(1, seq, dim, dtype=bad))
    COUNTS["fuzz-modules:SinusoidalEmbedding"] += 1


@settings(**HYP)
@given(data=st.data())
def test_alibi(data):
    draw = data.draw
    heads = draw(st.sampled_from([1, 2, 4, 8]), label="num_heads")
    max_bias = draw(st.sampled_from([8.0, 7.0]), label="max_bias")
    learned = draw(st.booleans(), label="learned")
    alibi, dtype = _plumb(draw, lambda: pt.ALiBi(heads, max_bias=max_bias, learned=learned))
    if learned:
        alibi.reset_parameters()  # the initialiser of a parameter
    slopes = np.array([2.0 ** (-max_bias * (h + 1) / heads) for h in range(heads)])
    q, k = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    q = min(q, k)
    scores = torch.zeros(1, heads, q, k, dtype=dtype)
    got = alibi(scores).detach().double().numpy()[0]
    i = np.arange(q)[:, None] + (k - q)
    j = np.arange(k)[None, :]
    want = -slopes[:, None, None] * np.abs(j - i)[None]
    tol = 1e-15 if dtype == torch.float64 else 5e-7 * max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)
    COUNTS["fuzz-modules:ALiBi"] += 1


@settings(**HYP)
@given(data=st.data())
def test_timesteps(data):
    draw = data.draw
    ch = draw(st.sampled_from([2, 8, 16]), label="num_channels")
    flip = draw(st.booleans(), label="flip_sin_to_cos")
    shift = draw(st.sampled_from([0.0, 1.0]), label="downscale_freq_shift")
    ts, _ = _plumb(draw, lambda: pt.Timesteps(ch, flip, shift))
    t = draw(st.lists(st.integers(0, 1000), min_size=1, max_size=4), label="timesteps")
    got = ts(torch.tensor(t, dtype=torch.float32)).double().numpy()
    half = ch // 2
    f = np.exp(-np.log(10000.0) * np.arange(half) / (half - shift)) if half - shift > 0 else np.ones(half)
    a = np.array(t, dtype=np.float64)[:, None] * f
    want = np.concatenate([np.cos(a), np.sin(a)] if flip else [np.sin(a), np.cos(a)], axis=-1)
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-7 * (1 + max(t) * 2**-20))
    COUNTS["fuzz-modules:Timesteps"] += 1


@settings(**HYP)
@given(data=st.data())
def test_axes_rotary_embedding(data):
    draw = data.draw
    axes = tuple(draw(st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=3), label="axes_dim"))
    mod, dtype = _plumb(draw, lambda: pt.AxesRotaryEmbedding(axes))
    n = draw(st.integers(1, 4))
    name = draw(st.sampled_from(INT_DTYPES), label="ids dtype")
    top = min(int(torch.iinfo(getattr(torch, name)).max), 2**20)
    vals = draw(st.lists(st.lists(st.integers(0, top), min_size=len(axes), max_size=len(axes)), min_size=n, max_size=n))
    ids = torch.tensor(vals, dtype=getattr(torch, name))
    cos, _ = mod(ids)
    p = np.array(vals, dtype=np.float64)
    parts = []
    for a, d in enumerate(axes):
        ang = p[:, a : a + 1] * _w(d)
        parts.append(np.repeat(ang, 2, axis=-1))  # interleaved pairs
    want = np.cos(np.concatenate(parts, axis=-1))
    np.testing.assert_allclose(cos.double().numpy(), want, rtol=0, atol=_tol(dtype, float(p.max())))
    COUNTS["fuzz-modules:AxesRotaryEmbedding"] += 1


def test_every_module_is_fuzzed():
    fuzzed = {"RotaryEmbedding", "SinusoidalEmbedding", "ALiBi", "Timesteps", "AxesRotaryEmbedding"}
    # the functions of posenc.torch's submodules (posenc.torch.flex) are in the function registry
    # (functions of posenc.torch itself, patch_rope, act on a loaded model: tests/posenc/test_patch_rope.py)
    modules = {
        n.rpartition(".")[2]
        for n in public_names()
        if n.startswith("posenc.torch.")
        and not n.startswith(FUZZED_SUBMODULES)
        and isinstance(getattr(pt, n.rpartition(".")[2], None), type)
    }
    assert modules <= fuzzed, modules - fuzzed
