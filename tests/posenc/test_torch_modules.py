"""posenc.torch: the thin nn.Modules over posenc's functions.

Oracles: float64 formulas of RoPE (Su et al.), the sinusoidal table (Vaswani
et al.) and ALiBi (Press et al.'s ``get_slopes``), and posenc's own functions
(the modules must be those functions with a cache in front).
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
from posenc import _cache  # noqa: E402
from posenc.torch import ALiBi, RotaryEmbedding, SinusoidalEmbedding  # noqa: E402

F32_ATOL = 4e-7  # a few float32 ulp of values of magnitude <= 1
MODES = {"grad": torch.enable_grad, "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}


def _randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# ---------------------------------------------------------------- float64 oracles
def ref_rope(x, pos, base=10000.0, layout="half"):
    """Rotate x (..., seq, d) at positions pos (seq,) or (batch, seq) in float64."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    w = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    a = np.asarray(pos, dtype=np.float64)[..., None] * w  # (..., seq, d/2)
    if a.ndim == 3 and x.ndim == 4:
        a = a[:, None]
    c, s = np.cos(a), np.sin(a)
    if layout == "half":
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return np.stack([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1).reshape(x.shape)


def ref_sinusoidal(pos, d):
    w = 10000.0 ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    a = np.asarray(pos, dtype=np.float64)[:, None] * w
    return np.stack([np.sin(a), np.cos(a)], axis=-1).reshape(len(pos), d)


def ref_slopes(n):
    c = 2 ** math.floor(math.log2(n))
    s = [2.0 ** (-8.0 * h / c) for h in range(1, c + 1)]
    return np.array(s + [2.0 ** (-8.0 * h / (2 * c)) for h in range(1, 2 * (n - c), 2)])


def close(got, want, atol=F32_ATOL):
    np.testing.assert_allclose(got.detach().double().numpy(), want, rtol=0, atol=atol)


# ---------------------------------------------------------------- import
def test_import_posenc_does_not_import_the_modules():
    code = "import sys, posenc; print('posenc.torch' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# ---------------------------------------------------------------- RotaryEmbedding
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rotary_matches_float64_rope(layout):
    rope = RotaryEmbedding(16, layout=layout, max_positions=32)
    q, k = _randn(2, 3, 5, 16), _randn(2, 1, 5, 16, seed=1)  # grouped keys: one head
    q_rot, k_rot = rope(q, k)
    close(q_rot, ref_rope(q, np.arange(5), layout=layout), 4 * F32_ATOL)
    close(k_rot, ref_rope(k, np.arange(5), layout=layout), 4 * F32_ATOL)
    # the portable functions, with the same tables
    cos, sin = posenc.rope_cos_sin(5, 16, layout=layout, xp=torch)
    assert torch.equal(q_rot, posenc.apply_rope(q, cos, sin, layout=layout))


def test_rotary_offset_is_a_decode_step():
    rope = RotaryEmbedding(8, max_positions=16)
    q, k = _randn(1, 2, 10, 8), _randn(1, 2, 10, 8, seed=1)
    full_q, full_k = rope(q, k)
    step_q, step_k = rope(q[:, :, 7:], k[:, :, 7:], offset=7)
    assert torch.equal(step_q, full_q[:, :, 7:]) and torch.equal(step_k, full_k[:, :, 7:])
    # a 0-d integer tensor offset is read once, eagerly
    assert torch.equal(rope(q[:, :, 7:], k[:, :, 7:], offset=torch.tensor(7))[0], step_q)


def test_rotary_position_ids_and_heads_axis():
    rope = RotaryEmbedding(8, max_positions=64)
    q, k = _randn(2, 3, 4, 8), _randn(2, 3, 4, 8, seed=1)
    ids = torch.tensor([[0, 1, 2, 3], [10, 11, 40, 12]])
    q_rot, _ = rope(q, k, position_ids=ids)
    close(q_rot, ref_rope(q, ids.numpy()), 4 * F32_ATOL)
    # 1-D ids broadcast over the batch
    q_rot, _ = rope(q, k, position_ids=ids[1])
    close(q_rot, ref_rope(q, ids[1].numpy()), 4 * F32_ATOL)


def test_rotary_cache_grows_eagerly_and_handles_negative_positions():
    rope = RotaryEmbedding(8, max_positions=4)
    q = _randn(1, 1, 3, 8)
    q_rot, _ = rope(q, q, offset=100)
    assert rope.cached == 128  # the next power of two
    close(q_rot, ref_rope(q, np.arange(100, 103)), 4 * F32_ATOL)
    q_rot, _ = rope(q, q, position_ids=torch.tensor([7, 0, 300]))
    assert rope.cached == 512
    close(q_rot, ref_rope(q, np.array([7, 0, 300])), 4 * F32_ATOL)
    # negative positions lie in no cache: their tables are computed
    q_rot, _ = rope(q, q, position_ids=torch.tensor([-5, 0, 3]))
    assert rope.cached == 512
    close(q_rot, ref_rope(q, np.array([-5, 0, 3])), 4 * F32_ATOL)
    q_rot, _ = rope(q, q, offset=-2)
    close(q_rot, ref_rope(q, np.arange(-2, 1)), 4 * F32_ATOL)


def test_rotary_buffers_are_non_persistent_and_follow_to():
    rope = RotaryEmbedding(8, max_positions=8)
    assert dict(rope.state_dict()) == {}
    assert {n for n, _ in rope.named_buffers()} == {"cos_cached", "sin_cached"}
    rope = rope.to(torch.float64)
    assert rope.cos_cached.dtype == torch.float64
    rope = rope.to("meta")
    q = torch.empty(1, 2, 3, 8, device="meta", dtype=torch.float64)
    q_rot, _ = rope(q, q, offset=2)
    assert q_rot.device.type == "meta" and q_rot.shape == q.shape
    q_rot, _ = rope(q, q, position_ids=torch.zeros(1, 3, dtype=torch.int64, device="meta"))
    assert q_rot.device.type == "meta" and q_rot.shape == q.shape


def test_rotary_half_precision_inputs():
    rope = RotaryEmbedding(8, max_positions=8)
    q = _randn(1, 1, 4, 8).to(torch.bfloat16)
    q_rot, _ = rope(q, q)
    assert q_rot.dtype == torch.bfloat16
    close(q_rot.float(), ref_rope(q.float(), np.arange(4)), 2.0**-7)


def test_rotary_from_hf():
    cfg = {
        "hidden_size": 64,
        "num_attention_heads": 4,
        "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "linear", "factor": 4.0},
    }
    rope = RotaryEmbedding.from_hf(cfg, max_positions=16)
    kw = posenc.scaling.from_hf(cfg)
    assert rope.dim == 16 and rope.base == 500000.0
    q = _randn(1, 4, 6, 16)
    cos, sin = posenc.rope_cos_sin(6, **kw, xp=torch)
    assert torch.equal(rope(q, q)[0], posenc.apply_rope(q, cos, sin))
    # linear scaling: positions divided by the factor
    close(rope(q, q)[0], ref_rope(q, np.arange(6) / 4.0, base=500000.0), 4 * F32_ATOL)
    mrope = dict(cfg, rope_scaling={"rope_type": "mrope", "mrope_section": [2, 3, 3]})
    with pytest.raises(ValueError, match="mrope_section"):
        RotaryEmbedding.from_hf(mrope)
    vision = {"model_type": "pixtral", "hidden_size": 64, "num_attention_heads": 4, "rope_theta": 1e4}
    with pytest.raises(ValueError, match=r"several axes .*rope_axes_cos_sin"):
        RotaryEmbedding.from_hf(vision)


def test_rotary_length_dependent_scaling_is_not_cached():
    cfg = {
        "hidden_size": 64,
        "num_attention_heads": 4,
        "max_position_embeddings": 8,
        "rope_scaling": {"rope_type": "dynamic", "factor": 2.0},
    }
    rope = RotaryEmbedding.from_hf(cfg)
    assert rope.cached == 0
    kw = posenc.scaling.from_hf(cfg)
    q = _randn(1, 4, 12, 16)
    cos, sin = posenc.rope_cos_sin(12, **kw, xp=torch)  # seq_len 12 > 8: the scaled base
    assert torch.equal(rope(q, q)[0], posenc.apply_rope(q, cos, sin))
    # a decode step: Hugging Face's seq_len, max(position) + 1 = 32
    cos, sin = posenc.rope_cos_sin(12, **kw, offset=20, seq_len=32, xp=torch)
    assert torch.equal(rope(q, q, offset=20)[0], posenc.apply_rope(q, cos, sin))
    base = 10000.0 * (2.0 * 32 / 8 - 1) ** (16 / 14)  # dynamic NTK's base at length 32
    close(rope(q, q, offset=20)[0], ref_rope(q, np.arange(20, 32), base=base), 8 * F32_ATOL)


def test_rotary_bad_arguments():
    with pytest.raises(ValueError, match="`dim`"):
        RotaryEmbedding(7)
    with pytest.raises(ValueError, match="`layout`"):
        RotaryEmbedding(8, layout="neox")
    with pytest.raises(ValueError, match="`max_positions`"):
        RotaryEmbedding(8, max_positions=-1)
    with pytest.raises(TypeError, match="`dtype`"):
        RotaryEmbedding(8, dtype=torch.int32)
    rope = RotaryEmbedding(8, max_positions=4)
    q = torch.zeros(1, 1, 2, 8)
    with pytest.raises(TypeError, match="`position_ids`"):
        rope(q, q, position_ids=torch.zeros(2))
    with pytest.raises(TypeError, match="`offset`"):
        rope(q, q, offset=torch.tensor(1.5))


# ---------------------------------------------------------------- SinusoidalEmbedding
def test_sinusoidal_module_matches_formula_and_function():
    pe = SinusoidalEmbedding(16, max_positions=64)
    x = _randn(2, 10, 16)
    close(pe(x), x.double().numpy() + ref_sinusoidal(np.arange(10), 16), 4 * F32_ATOL)
    close(pe(x, offset=30), posenc.add_sinusoidal(x, offset=30).double().numpy(), 4 * F32_ATOL)
    assert dict(pe.state_dict()) == {}


def test_sinusoidal_module_scale_dropout_growth_and_dtype():
    pe = SinusoidalEmbedding(8, input_scale=2.0, dropout=0.5, max_positions=4)
    x = _randn(3, 6, 8)
    pe.eval()
    close(pe(x, offset=100), 2.0 * x.double().numpy() + ref_sinusoidal(np.arange(100, 106), 8), 8 * F32_ATOL)
    assert pe.cached == 128
    pe.train()
    torch.manual_seed(0)
    y = pe(x)
    dropped = (y == 0).float().mean().item()
    assert 0.3 < dropped < 0.7  # about half the values
    x16 = x.to(torch.bfloat16)
    pe.eval()
    assert pe(x16).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="`x` must have shape"):
        pe(torch.zeros(2, 3, 6))
    with pytest.raises(ValueError, match="`dropout`"):
        SinusoidalEmbedding(8, dropout=1.5)


# ---------------------------------------------------------------- ALiBi
def test_alibi_module_fixed_and_learned():
    scores = _randn(2, 6, 3, 5)
    fixed = ALiBi(6, causal=True)
    rel = np.arange(5)[None, :] - (np.arange(3)[:, None] + 2)
    bias = -ref_slopes(6)[:, None, None] * np.abs(rel)
    want = np.where(rel > 0, -np.inf, scores.double().numpy() + bias)
    got = fixed(scores)
    np.testing.assert_allclose(got.double().numpy(), want, rtol=0, atol=F32_ATOL)
    assert dict(fixed.state_dict()) == {}
    learned = ALiBi(6, learned=True)
    assert set(learned.state_dict()) == {"slopes"}
    out = learned(scores, offset=0)
    out.sum().backward()
    # d/dm_h of sum(-m_h |j - i|) over the batch
    grad = -np.abs(np.arange(5)[None, :] - np.arange(3)[:, None]).sum() * 2
    np.testing.assert_allclose(learned.slopes.grad.numpy(), np.full(6, grad), rtol=1e-6)
    with pytest.raises(ValueError, match="`scores`"):
        fixed(torch.zeros(2, 5, 3, 5))
    with pytest.raises(TypeError, match="`learned`"):
        ALiBi(4, learned=1)


# ---------------------------------------------------------------- compile and export
def _step(rope, pe, alibi):
    def step(x, q, k, offset):
        q, k = rope(q, k, offset=offset)
        h = pe(x, offset=offset)
        return h, q, k, alibi(q @ k.transpose(-1, -2))

    return step


def _modules(cached):
    return (
        RotaryEmbedding(16, max_positions=cached),
        SinusoidalEmbedding(16, max_positions=cached),
        ALiBi(2, learned=True),
    )


def _inputs(seq, seed=0):
    return _randn(1, seq, 16, seed=seed), _randn(1, 2, seq, 16, seed=seed + 1), _randn(1, 2, seq, 16, seed=seed + 2)


@pytest.mark.parametrize("cached", [64, 4], ids=["inside-cache", "beyond-cache"])
def test_modules_compile_fullgraph(cached):
    """Cold caches and every grad mode; beyond the cache the traced call
    computes its tables (the buffers do not grow inside a graph)."""
    for mode, ctx in MODES.items():
        with ctx():
            mods = _modules(cached)
            step = _step(*mods)
            args = (*_inputs(3), 9)
            _cache.clear()
            torch._dynamo.reset()
            got = torch.compile(step, fullgraph=True, backend="eager")(*args)
            want = step(*_inputs(3), 9) if cached == 64 else _step(*_modules(64))(*args)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=0, atol=4 * F32_ATOL, msg=lambda m, mode=mode: f"{mode}: {m}")
        assert mods[0].cached == cached  # no growth while traced


def test_modules_decode_steps_do_not_recompile():
    mods = _modules(128)
    step = _step(*mods)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True, backend=backend)
    with torch.no_grad():
        for offset in (3, 4, 6, 11, 30, 77):
            args = (*_inputs(1, seed=offset), offset)
            for g, w in zip(compiled(*args), step(*args)):
                assert torch.equal(g, w)
    assert len(graphs) <= 2


class _Block(torch.nn.Module):
    """Embeddings, RoPE and ALiBi scores of a sequence of any length."""

    def __init__(self):
        super().__init__()
        self.rope, self.pe, self.alibi = _modules(64)

    def forward(self, x, q, k):
        q, k = self.rope(q, k)
        return self.pe(x), self.alibi(q @ k.transpose(-1, -2))


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "non-strict"])
def test_modules_export_dynamic_length(strict):
    block = _Block()
    n = torch.export.Dim("n", min=2, max=64)
    prog = torch.export.export(block, _inputs(5), dynamic_shapes={"x": {1: n}, "q": {2: n}, "k": {2: n}}, strict=strict)
    with torch.no_grad():
        for seq in (5, 23):
            args = _inputs(seq, seed=seq)
            for g, w in zip(prog.module()(*args), block(*args)):
                assert torch.equal(g, w)
