"""The device path on the CPU: launches per call and no value read back.

Inside ``posenc._kernels.as_device()`` CPU torch tensors take exactly the
decisions of CUDA tensors (posenc's Triton kernels, run by Triton's
interpreter); ``count_launches`` counts the aten operations that launch work
and the Triton kernels, ``no_reads`` fails on any read of a value.  Each call
a model makes per step is held to the budget of issue "the device engine"
(item 2) and to the launches of the peer's own formula, counted the same
way; its values are checked against float64 formulas.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from benchmarks import peers  # noqa: E402
from posenc import _kernels  # noqa: E402
from posenc._kernels.probes import ValueRead, count_launches, no_reads, warm_launches  # noqa: E402


@pytest.fixture(autouse=True)
def _device():
    with _kernels.as_device():
        yield


# ------------------------------------------------------------------ peers' formulas
def _hf_inv_freq(dim, base):
    """transformers' inv_freq: a buffer of the rotary module, made once."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def _hf_decode(q, k, pos, inv):
    """transformers' LlamaRotaryEmbedding.forward + apply_rotary_pos_emb."""
    f = (inv[None, :, None].expand(pos.shape[0], -1, 1) @ pos[:, None, :].float()).transpose(1, 2)
    emb = torch.cat((f, f), dim=-1)
    cos, sin = emb.cos().to(q.dtype), emb.sin().to(q.dtype)

    def rot(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    cos, sin = cos[:, None], sin[:, None]
    return q * cos + rot(q) * sin, k * cos + rot(k) * sin


def _hf_rotary(pos, inv):
    f = (inv[None, :, None].expand(pos.shape[0], -1, 1) @ pos[:, None, :].float()).transpose(1, 2)
    emb = torch.cat((f, f), dim=-1)
    return emb.cos(), emb.sin()


def _diffusers_timesteps(t, dim, max_period=10000.0):
    """diffusers' get_timestep_embedding (flip_sin_to_cos=False, shift 1)."""
    half = dim // 2
    exponent = -math.log(max_period) * torch.arange(half, dtype=torch.float32) / (half - 1.0)
    emb = t[:, None].float() * torch.exp(exponent)[None, :]
    return torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)


def _diffusers_flux(ids, axes_dim, theta=10000.0):
    """diffusers' FluxPosEmbed (get_1d_rotary_pos_embed, repeat_interleave_real)."""
    cos_out, sin_out = [], []
    pos = ids.float()
    for i, d in enumerate(axes_dim):
        freqs = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64)[: d // 2] / d))
        f = torch.outer(pos[:, i].double(), freqs)
        cos_out.append(f.cos().repeat_interleave(2, dim=1).float())
        sin_out.append(f.sin().repeat_interleave(2, dim=1).float())
    return torch.cat(cos_out, dim=-1), torch.cat(sin_out, dim=-1)


# ------------------------------------------------------------------ float64 oracles
def _rope_f64(pos, dim, base):
    w = base ** (-np.arange(0, dim, 2) / dim)
    a = np.asarray(pos, np.float64)[..., None] * w
    return np.cos(np.concatenate([a, a], -1)), np.sin(np.concatenate([a, a], -1))


def _close(got, want, atol):
    np.testing.assert_allclose(got.detach().to(torch.float64).numpy(), want, atol=atol, rtol=0)


# ------------------------------------------------------------------ the calls of a model's step
def test_decode_step():
    dim, base, p = 128, 500000.0, 4096
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 32, 1, dim, generator=g).to(torch.bfloat16)
    k = torch.randn(1, 8, 1, dim, generator=g).to(torch.bfloat16)
    pid = torch.tensor([[p]])

    def step():
        c, s = posenc.rope_cos_sin(pid, dim, base=base, dtype=torch.bfloat16)
        c, s = c[:, None], s[:, None]
        return posenc.apply_rope(q, c, s), posenc.apply_rope(k, c, s)

    (qo, ko), mine = warm_launches(step)
    _, peer = warm_launches(_hf_decode, q, k, pid, _hf_inv_freq(dim, base))
    assert mine.total() <= min(17, peer.total()), (str(mine), str(peer))
    # the bfloat16 tables written by the angles' kernel (no casts after it), then one rotation each
    assert mine.total() == 3, str(mine)
    c, s = _rope_f64([[p]], dim, base)
    qd = q.double().numpy()
    want = qd * c[:, None] + np.concatenate([-qd[..., 64:], qd[..., :64]], -1) * s[:, None]
    _close(qo, want, atol=0.02)  # bfloat16 output: the tables' and the product's rounding

    def paired():  # q and k as one call, Hugging Face's tables (batch, seq, dim) and unsqueeze_dim
        c, s = posenc.rope_cos_sin(pid, dim, base=base, dtype=torch.bfloat16)
        return posenc.apply_rope((q, k), c, s, heads_axis=1)

    (qp, kp), two = warm_launches(paired)
    assert two.total() == 2, str(two)  # the tables, then q and k in one launch
    assert torch.equal(qp, qo) and torch.equal(kp, ko)


def test_rope_cos_sin_of_position_ids():
    dim, base = 128, 10000.0
    ids = torch.arange(64).reshape(2, 32) * 37
    (c, s), mine = warm_launches(posenc.rope_cos_sin, ids, dim, base=base)
    _, peer = warm_launches(_hf_rotary, ids, _hf_inv_freq(dim, base))
    assert mine.total() <= min(5, peer.total()), (str(mine), str(peer))
    wc, ws = _rope_f64(ids.numpy(), dim, base)
    _close(c, wc, 2.5e-7)
    _close(s, ws, 2.5e-7)


def test_rope_cos_sin_of_position_ids_with_an_offset():
    """Position ids and an int ``offset`` on a device: the sum in one
    launch, then the kept plan of such ids (no masks of the sums that leave
    int64: 9 launches before).  A sum that wraps is a NaN row, as every
    position beyond the exact range, never another row; nothing is read."""
    dim = 64
    ids = torch.arange(64).reshape(2, 32) * 37
    (c, s), mine = warm_launches(posenc.rope_cos_sin, ids, dim, offset=4096)
    _, plain = warm_launches(posenc.rope_cos_sin, ids, dim)
    assert mine.total() <= plain.total() + 1 <= 5, (str(mine), str(plain))
    wc, ws = _rope_f64(ids.numpy() + 4096, dim, 10000.0)
    _close(c, wc, 2.5e-7)
    _close(s, ws, 2.5e-7)
    top = 2**63 - 1
    for offset, ids, finite in ((3, [[top - 2, 5, top, -(2**60)]], {1: 8}), (-3, [[-top, 4, top]], {1: 1, 2: top - 3})):
        with no_reads():
            c, s = posenc.rope_cos_sin(torch.tensor(ids), 16, offset=offset)
        for j in range(len(ids[0])):
            if j in finite and finite[j] < 2**53:
                wc, ws = _rope_f64([finite[j]], 16, 10000.0)
                _close(c[0, j], wc[0], 2.5e-7)
                _close(s[0, j], ws[0], 2.5e-7)
            else:
                assert torch.isnan(c[0, j]).all() and torch.isnan(s[0, j]).all(), (offset, j)


@pytest.mark.parametrize(("n", "offset"), [(8, 0), (64, 4090), (4096, 0)])
def test_rope_cos_sin_of_a_length(n, offset):
    """``rope_cos_sin(seq_len, dim)`` (a prefill's tables from a length) on
    a device: the cached exact table handed out in one launch at every size
    (small tables too: their formula takes a dozen launches per call)."""
    dim = 32
    (c, s), mine = warm_launches(lambda: posenc.rope_cos_sin(n, dim, offset=offset, xp=torch))
    assert mine.total() == 1, str(mine)
    wc, ws = _rope_f64([list(range(offset, offset + n))], dim, 10000.0)
    _close(c, wc[0], 2.5e-7)
    _close(s, ws[0], 2.5e-7)


GRID_CALLS = {
    "axial_rope_cos_sin": (lambda **kw: posenc.axial_rope_cos_sin((4, 6), 16, **kw), 2),
    "sincos_grid": (lambda **kw: posenc.sincos_grid((4, 6), 16, cls_token=True, **kw), 1),
    "relative_sinusoidal": (lambda **kw: posenc.relative_sinusoidal(8, 12, dim=16, **kw), 1),
    "alibi_bias": (lambda **kw: posenc.alibi_bias(4, 16, causal=True, **kw), 1),
    "t5_buckets": (lambda **kw: posenc.t5_buckets(16, 24, **kw), 1),
    "relative_position_index": (lambda **kw: posenc.relative_position_index((3, 4), class_token=True, **kw), 1),
    "relative_positions": (lambda **kw: posenc.relative_positions(8, 12, offset=4, max_distance=3, **kw), 1),
    "grid_ids": (lambda **kw: posenc.grid_ids((4, 6), center=True, prefix_tokens=1, **kw), 1),
    "binary": (lambda **kw: posenc.binary(16, 8, signed=True, **kw), 1),
}


@pytest.mark.parametrize("name", sorted(GRID_CALLS))
def test_tables_of_lengths_are_kept_on_a_device(name):
    """Tables from Python arguments alone (a grid's shape, lengths), called
    per forward by vision towers and attention biases: on a device one copy
    of the kept table per array (the formula took 12 to 28 launches), the
    values of the NumPy call, and a caller's writes to a result never reach
    the next one."""
    call, launches = GRID_CALLS[name]
    got, mine = warm_launches(lambda: call(xp=torch))
    assert mine.total() == launches, str(mine)
    got = got if isinstance(got, tuple) else (got,)
    want = call()
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        _close(g, np.asarray(w, dtype=np.float64), 2.5e-7)
        g.fill_(7)
    again = call(xp=torch)
    again = again if isinstance(again, tuple) else (again,)
    for a, w in zip(again, want):
        _close(a, np.asarray(w, dtype=np.float64), 2.5e-7)


def test_kept_tables_key_on_the_arguments_types():
    """Arguments that hash alike but are refused (4.0 for 4, 1 for True) are
    refused after the kept call too; arrays and lists are never keys."""
    posenc.sincos_grid((4, 4), 16, cls_token=True, xp=torch)
    with pytest.raises(TypeError, match="grid_shape"):
        posenc.sincos_grid((4.0, 4), 16, cls_token=True, xp=torch)
    with pytest.raises(TypeError, match="cls_token"):
        posenc.sincos_grid((4, 4), 16, cls_token=1, xp=torch)
    a = posenc.sincos_grid([4, 4], 16, xp=torch)  # a list: the formula, every call
    _close(a, posenc.sincos_grid((4, 4), 16).astype(np.float64), 2.5e-7)


@pytest.mark.parametrize("offset", [0, 4096])
def test_rope_of_q_decode(offset):
    x = torch.randn(1, 4, 1, 64)
    pid = torch.tensor([70000])
    out, mine = warm_launches(posenc.rope, x, pid, offset=offset)
    assert mine.total() <= 2 + (offset != 0), str(mine)
    c, s = _rope_f64([[70000 + offset]], 64, 10000.0)
    xd = x.double().numpy()
    want = xd * c + np.concatenate([-xd[..., 32:], xd[..., :32]], -1) * s
    _close(out, want, 1e-6)


def test_timestep_embedding():
    t = torch.rand(64) * 1000
    out, mine = warm_launches(posenc.timestep_embedding, t, 32)
    _, peer = warm_launches(_diffusers_timesteps, t, 32)
    assert mine.total() <= min(8, peer.total()), (str(mine), str(peer))
    ref = posenc.timestep_embedding(t.double().numpy(), 32)
    _close(out, ref, 2.5e-7)


def test_flux_ids():
    ids = torch.stack([torch.zeros(48, dtype=torch.int64), torch.arange(48) // 8, torch.arange(48) % 8], -1)
    axes = (4, 6, 6)
    (c, s), mine = warm_launches(posenc.rope_axes_cos_sin, ids, axes, base=10000.0)
    _, peer = warm_launches(_diffusers_flux, ids, axes)
    assert mine.total() <= min(41, peer.total()), (str(mine), str(peer))
    rc, rs = posenc.rope_axes_cos_sin(ids.numpy(), axes, base=10000.0, dtype="float64")
    _close(c, rc, 2.5e-7)
    _close(s, rs, 2.5e-7)


def test_learned_frequency_matrix():
    """A frequency matrix (RoPE-Mixed's, three heads) in inference: one
    fused kernel and the layout (87 launches before: each two-product and
    two-sum of the exact angle was several), no more than the naive float32
    formula, within the bound of the exact tables."""
    g = torch.Generator().manual_seed(0)
    ids = torch.stack([torch.arange(48) // 8, torch.arange(48) % 8], -1).float() * 0.5
    freqs = torch.randn(3, 8, 2, generator=g)
    (c, s), mine = warm_launches(posenc.rope_axes_cos_sin, ids, freqs=freqs)
    _, peer = warm_launches(peers.rope_mixed, ids, freqs)  # RoPE-Mixed's formula, in float32
    assert mine.total() <= min(4, peer.total()), (str(mine), str(peer))
    rc, rs = posenc.rope_axes_cos_sin(ids.numpy(), freqs=freqs.numpy(), dtype="float64")
    _close(c, rc, 2.5e-7)
    _close(s, rs, 2.5e-7)
    freqs.requires_grad_(True)  # training: torch's operations, gradients to the frequencies
    c, _ = posenc.rope_axes_cos_sin(ids, freqs=freqs)
    c.sum().backward()
    assert freqs.grad is not None and torch.isfinite(freqs.grad).all()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_apply_rope(dtype):
    dt = getattr(torch, dtype)
    x = torch.randn(2, 4, 16, 64, dtype=dt)
    c, s = posenc.rope_cos_sin(16, 64, dtype=dt, xp=torch)
    out, mine = warm_launches(posenc.apply_rope, x, c, s)
    assert mine.total() <= 1, str(mine)  # one launch: no cast of x, no temporaries
    ref = posenc.apply_rope(x.double().numpy(), c.double().numpy(), s.double().numpy())
    _close(out, ref, 1e-6 if dtype == "float32" else 0.02)


def test_sinusoidal_of_positions():
    p = torch.randint(0, 10**6, (256,))
    out, mine = warm_launches(posenc.sinusoidal, p, 64, dtype=torch.float32)
    assert mine.total() <= 5, str(mine)
    _close(out, posenc.sinusoidal(p.numpy(), 64), 2.5e-7)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_sinusoidal_of_a_length_is_one_launch_and_not_kept(dtype):
    """``sinusoidal(n, dim)`` on a device: one launch on the first call as
    on later ones (the table kernel, no copy of a kept table), a fresh
    table each time, nothing kept in the table cache."""
    from posenc import _cache

    dt = getattr(torch, dtype)
    posenc.sinusoidal(8, 64, dtype=dt, xp=torch)  # (the host constants of the call: made outside the count)
    with no_reads(), count_launches() as first:
        a = posenc.sinusoidal(4096, 64, dtype=dt, xp=torch)
    b, later = warm_launches(posenc.sinusoidal, 4096, 64, dtype=dt, xp=torch)
    assert first.total() == 1 and later.total() == 1, (str(first), str(later))
    assert len(_cache.TABLES) == 0 and a.data_ptr() != b.data_ptr()
    assert torch.equal(a, b)
    _close(a.float(), posenc.sinusoidal(4096, 64), 2.5e-7 if dtype == "float32" else 4e-3)


# ------------------------------------------------------------------ no value read back
def test_limits_become_nan_rows_without_a_read():
    ids = torch.tensor([[3, 2**32, -(2**33), 7]])
    with no_reads():
        c, s = posenc.rope_cos_sin(ids, 16)
        t = posenc.sinusoidal(torch.tensor([1.0, math.inf, math.nan]), 8, dtype=torch.float32)
    assert torch.isnan(c[0, 1:3]).all() and not torch.isnan(c[0, ::3]).any()
    assert torch.isnan(t[1:]).all() and not torch.isnan(t[0]).any()


def test_no_reads_catches_a_read(monkeypatch):
    """The control: the probe fails on the reads a host path makes."""
    p = torch.arange(8)
    with pytest.raises(ValueRead), no_reads():
        int(p.max())
    with pytest.raises(ValueRead), no_reads():
        p.numpy()
    # outside as_device a CPU tensor takes the host path, which reads the positions' range
    monkeypatch.setattr(posenc._compat, "AS_DEVICE", False)
    posenc.clear_caches()
    with pytest.raises(ValueRead), no_reads():
        posenc.rope_cos_sin(torch.tensor([[5, 2**40]]), 16)


def test_count_launches_counts_work_not_views():
    x = torch.randn(4, 8)
    with count_launches() as counts:
        y = x.reshape(8, 4).t()[:, 1]  # views
        z = y * 2 + 1  # two kernels
    assert counts.total() == 2, str(counts)
    assert torch.equal(z, x.reshape(8, 4).t()[:, 1] * 2 + 1)


def test_rotary_module_decode_without_a_sync():
    """RotaryEmbedding with device position ids: no read (the host path reads
    their range to grow the cache), exact rows also beyond the cache."""
    from posenc.torch import RotaryEmbedding

    rope = RotaryEmbedding(64, max_positions=16)
    q, k = torch.randn(1, 4, 1, 64), torch.randn(1, 2, 1, 64)
    pid = torch.tensor([[100]])  # beyond the cache
    (qo, ko), mine = warm_launches(rope, q, k, position_ids=pid)
    assert mine.total() <= 17, str(mine)
    assert rope.cached == 16  # not grown: growing would have read the ids
    c, s = _rope_f64([[100]], 64, 10000.0)
    qd = q.double().numpy()
    _close(qo, qd * c + np.concatenate([-qd[..., 32:], qd[..., :32]], -1) * s, 1e-6)


def test_rotary_from_hf_caches_the_context():
    from posenc.torch import RotaryEmbedding

    cfg = {"hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 4096}
    assert RotaryEmbedding.from_hf(cfg).cached == 4096
    assert RotaryEmbedding.from_hf(cfg, max_positions=8).cached == 8
