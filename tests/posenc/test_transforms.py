"""posenc under function transforms: ``torch.func.vmap`` at any size and
``jax.jit`` over a concrete array the traced function closes over.

The fast paths of ``apply_rope`` / ``rope`` (``out=`` operations, from 2**15
elements per sample) have no batching rule, and the NaN scans of concrete
positions call ``bool()``, which a vmapped tensor or a value traced by
``jax.jit`` refuses: under a transform posenc takes its portable path and
skips the value checks.  Each result is compared with the same call without
the transform, per sample, and with the float64 oracle.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc

torch = pytest.importorskip("torch")

#: 2**15 elements per sample: the size from which the fast paths start
SEQ, DIM = 256, 128


def _rotate_oracle(x: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Half-split RoPE in float64 from the paper's formula."""
    half = x.shape[-1] // 2
    w = 10000.0 ** (-np.arange(half, dtype=np.float64) / half)
    ang = positions[..., None].astype(np.float64) * w
    c, s = np.cos(ang), np.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


@pytest.mark.parametrize("fn", ["apply_rope", "rope", "rope-ids"])
def test_torch_vmap_rotations_at_fast_path_size(fn):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 1, SEQ, DIM, generator=gen, dtype=torch.float64)
    cos, sin = posenc.rope_cos_sin(SEQ, DIM, dtype=torch.float64, xp=torch)
    ids = torch.arange(SEQ).expand(3, SEQ) + torch.tensor([[0], [5], [9]])
    if fn == "apply_rope":
        got = torch.func.vmap(lambda a: posenc.apply_rope(a, cos, sin))(x)
        pos = np.broadcast_to(np.arange(SEQ), (3, SEQ))
    elif fn == "rope":
        got = torch.func.vmap(lambda a: posenc.rope(a, SEQ))(x)
        pos = np.broadcast_to(np.arange(SEQ), (3, SEQ))
    else:
        got = torch.func.vmap(lambda a, p: posenc.rope(a, p))(x, ids)
        pos = ids.numpy()
    want = _rotate_oracle(x.numpy(), pos[:, None, :])
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-12)


def test_torch_vmap_of_grad():
    cos, sin = posenc.rope_cos_sin(SEQ, DIM, xp=torch)
    x = torch.randn(2, 1, SEQ, DIM)
    g = torch.func.vmap(torch.func.grad(lambda a: posenc.apply_rope(a, cos, sin).sum()))(x)
    # d/dx of sum(rotate(x)): per feature pair (c - s, c + s) in the half-split layout
    c, s = cos[:, : DIM // 2], sin[:, : DIM // 2]
    want = torch.cat([c + s, c - s], dim=-1)
    torch.testing.assert_close(g, want.expand_as(g), atol=1e-6, rtol=0)


@pytest.mark.parametrize("fn", ["timestep_embedding", "sinusoidal", "rope_cos_sin"])
def test_torch_vmap_of_positions(fn):
    ts = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    call = {
        "timestep_embedding": lambda a: posenc.timestep_embedding(a, 8),
        "sinusoidal": lambda a: posenc.sinusoidal(a, 8),
        "rope_cos_sin": lambda a: posenc.rope_cos_sin(a, 8)[1],
    }[fn]
    got = torch.func.vmap(call)(ts)
    # the same call per sample (its own path may round differently: within posenc's bound)
    want = torch.stack([call(t) for t in ts])
    torch.testing.assert_close(got, want, atol=2.5e-7, rtol=0)
    # and the formula: every one of these tables starts with sin(p * 1)
    assert float(got[1, 1, 0]) == pytest.approx(math.sin(4.0), abs=2.5e-7)


@pytest.mark.parametrize("fn", ["timestep_embedding", "sinusoidal", "rope_cos_sin"])
def test_jax_jit_over_a_closed_concrete_array(fn):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    c = jnp.array([1.0, 2.0])
    call = {
        "timestep_embedding": lambda: posenc.timestep_embedding(c, 8),
        "sinusoidal": lambda: posenc.sinusoidal(c, 8),
        "rope_cos_sin": lambda: posenc.rope_cos_sin(c, 8)[1],
    }[fn]
    got = jax.jit(lambda z: call() + z)(jnp.zeros(8))
    np.testing.assert_allclose(np.asarray(got), np.asarray(call()), atol=1e-6, rtol=0)
