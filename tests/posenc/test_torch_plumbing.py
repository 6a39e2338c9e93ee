"""posenc.torch modules in real model plumbing.

Built on the ``meta`` device and materialised with ``to_empty`` (FSDP,
accelerate, large-model init), ``reset_parameters``, a cache grown under
``inference_mode`` and then trained through, position ids of every integer
dtype, non-floating inputs, dtype changes, and the bound on cache growth.
The oracle is the float64 formula of the papers: ``angle = p * base**(-2i/dim)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from posenc.torch import (  # noqa: E402
    GROW_BYTES,
    ALiBi,
    AxesRotaryEmbedding,
    RotaryEmbedding,
    SinusoidalEmbedding,
    Timesteps,
)


def rope_oracle(positions, dim, base=10000.0):
    p = np.asarray(positions, dtype=np.float64)[..., None]
    w = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    ang = np.concatenate([p * w, p * w], axis=-1)
    return np.cos(ang), np.sin(ang)


def sin_oracle(positions, dim, base=10000.0):
    p = np.asarray(positions, dtype=np.float64)[..., None]
    w = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    out = np.empty(p.shape[:-1] + (dim,))
    out[..., 0::2], out[..., 1::2] = np.sin(p * w), np.cos(p * w)
    return out


def alibi_oracle(n, max_bias=8.0):
    """Slopes of a power-of-two number of heads (Press et al.)."""
    return np.array([2.0 ** (-max_bias * (h + 1) / n) for h in range(n)])


def close(got, want, tol):
    np.testing.assert_allclose(got.detach().double().numpy(), want, rtol=0, atol=tol)


# ------------------------------------------------------------ meta + to_empty
def _poison(module):
    """What to_empty may leave: garbage in every buffer and parameter."""
    with torch.no_grad():
        for t in [*module.buffers(), *module.parameters()]:
            t.fill_(1e27)


def test_rotary_meta_to_empty_recomputes():
    with torch.device("meta"):
        rope = RotaryEmbedding(8, max_positions=16)
    rope.to_empty(device="cpu")
    cos, sin = rope.cos_sin(16)
    want_c, want_s = rope_oracle(np.arange(16), 8)
    close(cos, want_c, 2e-7)
    close(sin, want_s, 2e-7)
    _poison(rope)
    rope.reset_parameters()
    close(rope.cos_sin(16)[0], want_c, 2e-7)


def test_sinusoidal_meta_to_empty_recomputes():
    with torch.device("meta"):
        emb = SinusoidalEmbedding(8, max_positions=16)
    emb.to_empty(device="cpu")
    out = emb(torch.zeros(1, 16, 8))
    close(out[0], sin_oracle(np.arange(16), 8), 2e-7)
    _poison(emb)
    emb.reset_parameters()
    close(emb(torch.zeros(1, 16, 8))[0], sin_oracle(np.arange(16), 8), 2e-7)


@pytest.mark.parametrize("learned", [False, True])
def test_alibi_meta_to_empty(learned):
    with torch.device("meta"):
        alibi = ALiBi(4, learned=learned)
    alibi.to_empty(device="cpu")
    if learned:
        # a parameter is the model's state: the initialiser (reset_parameters) sets it
        alibi.reset_parameters()
    close(alibi.slopes, alibi_oracle(4), 1e-7)
    bias = alibi(torch.zeros(1, 4, 3, 3))
    assert float(bias[0, 0, 2, 0].detach()) == pytest.approx(-2 * 2.0**-2, abs=1e-7)


def test_axes_and_timesteps_meta_to_empty():
    with torch.device("meta"):
        axes = AxesRotaryEmbedding((4, 4))
        ts = Timesteps(8, True, 0)
    axes.to_empty(device="cpu")
    ts.to_empty(device="cpu")
    _poison(axes)
    axes.reset_parameters()
    assert torch.isfinite(axes.inv_freq).all() and float(axes.inv_freq[0]) == 1.0
    ids = torch.tensor([[3, 5]])
    cos, _ = axes(ids)
    assert float(cos[0, 0]) == pytest.approx(math.cos(3.0), abs=2e-7)
    emb = ts(torch.tensor([7.0]))
    assert float(emb[0, 0]) == pytest.approx(math.cos(7.0), abs=2e-7)


# ------------------------------------------------------------- dtype changes
@pytest.mark.parametrize("to", ["double", "half"])
def test_dtype_change_recomputes_rotary(to):
    rope = RotaryEmbedding(8, max_positions=4096)
    rope = getattr(rope, to)()
    want_c, _ = rope_oracle(np.arange(4096), 8)
    tol = 1e-12 if to == "double" else 2.0**-11  # float32 values would be off by ~1e-8
    close(rope.cos_cached, want_c, tol)
    rope.cos_sin(8, offset=4096)  # grows: one precision in the whole buffer
    close(rope.cos_cached, rope_oracle(np.arange(rope.cached), 8)[0], tol)


def test_dtype_change_recomputes_sinusoidal():
    emb = SinusoidalEmbedding(8, max_positions=4096).double()
    close(emb.table, sin_oracle(np.arange(4096), 8), 1e-12)
    alibi = ALiBi(4, max_bias=7.0).double()  # slopes 2**(-7h/4): not exact in float32
    close(alibi.slopes, alibi_oracle(4, 7.0), 1e-16)


# -------------------------------------------------------------- inference mode
def test_growth_under_inference_mode_then_training():
    rope = RotaryEmbedding(8, max_positions=4)
    emb = SinusoidalEmbedding(8, max_positions=4)
    with torch.inference_mode():
        rope(torch.ones(1, 1, 16, 8), torch.ones(1, 1, 16, 8))
        emb(torch.ones(1, 16, 8))
    assert rope.cached >= 16 and not rope.cos_cached.is_inference() and not emb.table.is_inference()
    q = torch.ones(1, 1, 16, 8, requires_grad=True)
    q_rot, _ = rope(q, q)
    (q_rot.sum() + emb(q[0]).sum()).backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


# ---------------------------------------------------------------- position ids
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_position_ids_of_any_integer_dtype(dtype):
    rope = RotaryEmbedding(8, max_positions=4)
    ids = torch.tensor([[1, 0, 3, 2]], dtype=getattr(torch, dtype))
    cos, sin = rope.cos_sin(4, position_ids=ids)
    want_c, want_s = rope_oracle(np.array([[1, 0, 3, 2]]), 8)
    close(cos, want_c, 2e-7)
    close(sin, want_s, 2e-7)
    # past the cache (grows) and negative (computed directly)
    far = -5 if dtype == "int8" else 100
    big = torch.tensor([[far]], dtype=getattr(torch, dtype))
    close(rope.cos_sin(1, position_ids=big)[0], rope_oracle(big.numpy(), 8)[0], 2e-7)


@pytest.mark.parametrize("bad", [torch.tensor([[1.0]]), torch.tensor([[True]])])
def test_position_ids_not_integer_refused(bad):
    with pytest.raises(TypeError, match="`position_ids`"):
        RotaryEmbedding(8).cos_sin(1, position_ids=bad)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
def test_sinusoidal_non_floating_x_refused(dtype):
    with pytest.raises(TypeError, match="`x`"):
        SinusoidalEmbedding(8)(torch.ones(1, 3, 8, dtype=dtype))


# --------------------------------------------------------------- cache growth
def test_far_decode_step_keeps_nothing():
    rope = RotaryEmbedding(64, max_positions=2048)
    q = torch.ones(1, 1, 1, 64)
    q_rot, _ = rope(q, q, offset=2**19)
    assert rope.cached == 2048  # nothing grown
    c, s = rope_oracle([2**19], 64)
    want = (np.ones(64) * c[0] + np.concatenate([-np.ones(32), np.ones(32)]) * s[0])
    close(q_rot[0, 0, 0], want, 1e-6)
    emb = SinusoidalEmbedding(64, max_positions=2048)
    out = emb(torch.zeros(1, 1, 64), offset=2**19)
    assert emb.cached == 2048
    close(out[0, 0], sin_oracle(2**19, 64), 1e-6)


def test_huge_position_id():
    rope = RotaryEmbedding(8, max_positions=16)
    cos, _ = rope.cos_sin(1, position_ids=torch.tensor([10**8]))
    assert rope.cached == 16
    close(cos, rope_oracle([10**8], 8)[0], 1e-6)
    with pytest.raises(ValueError, match="`offset`"):
        rope.cos_sin(1, offset=2**70)


def test_growth_by_steps_is_bounded():
    rope = RotaryEmbedding(8, max_positions=16)
    for off in (16, 40, 100, 300):
        rope.cos_sin(4, offset=off)
    assert rope.cached == 512
    limit = GROW_BYTES // (8 * 4 * 2)
    rope.cos_sin(1, offset=limit)  # the next power of two would pass the bound
    assert rope.cached * 8 * 4 * 2 <= GROW_BYTES
    close(rope.cos_sin(1, offset=limit)[0], rope_oracle([limit], 8)[0], 1e-6)
