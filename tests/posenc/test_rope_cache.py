"""``rope_cache``: posenc's exact tables in the layouts of fused RoPE kernels.

* Every format on every backend against a float64 NumPy oracle written from
  the RoPE formula and each kernel's documented layout (vLLM's
  ``cos_sin_cache``: the cos of the frequencies then their sin; flash-attn's
  ``(cos, sin)`` of ``rotary_dim / 2``; transformers' full tables;
  torchtitan's complex ``freqs_cis``).
* vLLM's ``forward_native`` and flash-attn's ``apply_rotary_emb_torch`` (neither
  installs on this CPU stack: golden values recorded from their own code by
  ``data/make_rope_cache_golden.py``), both pairings, partial rotary, a YaRN
  scaling: the peer's rotation with posenc's cache is posenc's
  :func:`~posenc.apply_rope` of the same positions; the cache the peer was
  given is the one ``rope_cache`` returns today; control: the two halves of
  the cache swapped.
* transformers' own code where it is installed: Llama's
  ``apply_rotary_pos_emb`` and Cohere's (neighbour pairs, repeated tables)
  with ``format="hf"``, Llama 4's complex ``apply_rotary_emb`` with
  ``format="complex"``; controls: the other layout, the conjugate.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import posenc
from posenc import scaling

DATA = Path(__file__).parent / "data"


def ref_compact(n, dim, base=10000.0, inv=None, attention=1.0):
    """cos and sin of ``p * w_k`` in float64, one column per frequency."""
    w = np.array([base ** (-2 * k / dim) for k in range(dim // 2)]) if inv is None else np.asarray(inv)
    a = np.arange(n, dtype=np.float64)[:, None] * w[None, :]
    return attention * np.cos(a), attention * np.sin(a)


@pytest.mark.parametrize("fmt", ["vllm", "flashinfer", "flash_attn", "hf", "complex"])
def test_layouts_every_backend(xp, fmt):
    n, dim, base = 37, 12, 500.0
    out = xp.call(posenc.rope_cache, n, dim, format=fmt, base=base, xp=xp.ns, device=xp.device)
    c, s = ref_compact(n, dim, base)
    tol = 4 * xp.tol()
    if fmt in ("vllm", "flashinfer"):
        dt = xp.dtype("float32") if fmt == "flashinfer" else xp.default_float
        xp.assert_close(out, np.concatenate([c, s], axis=-1), atol=4 * xp.tol(dt), dtype=dt)
    elif fmt == "flash_attn":
        xp.assert_close(out[0], c, atol=tol, dtype=xp.default_float)
        xp.assert_close(out[1], s, atol=tol, dtype=xp.default_float)
    elif fmt == "hf":
        xp.assert_close(out[0], np.concatenate([c, c], axis=-1), atol=tol, dtype=xp.default_float)
        xp.assert_close(out[1], np.concatenate([s, s], axis=-1), atol=tol, dtype=xp.default_float)
    else:
        xp.check_array(out, shape=(n, dim // 2), dtype=xp.dtype("complex64"))
        if xp.has_values:
            got = xp.to_numpy(out)
            np.testing.assert_allclose(got.real, c, atol=5e-7)
            np.testing.assert_allclose(got.imag, s, atol=5e-7)


def test_hf_interleaved_and_scaling(xp):
    s = scaling.YaRN(4.0, 16)
    here = {"xp": xp.ns, "device": xp.device}
    cos, sin = xp.call(posenc.rope_cache, 40, 8, format="hf", layout="interleaved", scaling=s, **here)
    c, sn = ref_compact(40, 8, inv=posenc.rope_frequencies(8, scaling=s), attention=s.attention_scaling())
    tol = 4 * xp.tol()
    xp.assert_close(cos, np.repeat(c, 2, axis=-1), atol=tol, dtype=xp.default_float)
    xp.assert_close(sin, np.repeat(sn, 2, axis=-1), atol=tol, dtype=xp.default_float)
    cache = xp.call(posenc.rope_cache, 40, 8, format="vllm", scaling=s, **here)
    xp.assert_close(cache, np.concatenate([c, sn], axis=-1), atol=tol, dtype=xp.default_float)


def test_complex128_and_exact_at_long_positions():
    z = posenc.rope_cache(5, 4, format="complex", dtype="complex128")
    assert z.dtype == np.complex128
    c, s = ref_compact(5, 4)
    np.testing.assert_allclose(z.real, c, atol=1e-15)
    np.testing.assert_allclose(z.imag, s, atol=1e-15)
    # float32 tables of posenc stay at the float32 floor far out, where the float32 angle product does not
    n = 2**17
    cache = posenc.rope_cache(n, 128, format="vllm", dtype="float32")
    c, s = ref_compact(n, 128)
    err = np.abs(cache.astype(np.float64) - np.concatenate([c, s], axis=-1)).max()
    assert err < 2.5e-7, err
    w32 = np.asarray(posenc.rope_frequencies(128), dtype=np.float32)
    naive = np.cos(np.arange(n, dtype=np.float32)[:, None] * w32[None, :]).astype(np.float64)
    assert np.abs(naive - c).max() > 1e-3  # the float32 angle product, for contrast


def test_length_dependent_seq_len():
    s = scaling.DynamicNTK(2.0, 16)
    short = posenc.rope_cache(8, 8, format="vllm", scaling=s)
    long = posenc.rope_cache(8, 8, format="vllm", scaling=s, seq_len=64)
    c, sn = ref_compact(8, 8, inv=posenc.rope_frequencies(8, scaling=s, seq_len=64))
    np.testing.assert_allclose(long, np.concatenate([c, sn], axis=-1), atol=1e-12)
    assert np.abs(short - long).max() > 1e-3


def test_refusals():
    with pytest.raises(ValueError, match="`format` must be one of"):
        posenc.rope_cache(4, 8, format="sglang")
    with pytest.raises(TypeError, match="`format`"):
        posenc.rope_cache(4, 8, format=None)
    with pytest.raises(ValueError, match="`layout` is read for format='hf' only"):
        posenc.rope_cache(4, 8, format="vllm", layout="interleaved")
    with pytest.raises(ValueError, match="`dtype` must be float32 or None for format='flashinfer'"):
        posenc.rope_cache(4, 8, format="flashinfer", dtype="float64")
    with pytest.raises(TypeError, match="`dtype` must be complex64 or complex128"):
        posenc.rope_cache(4, 8, format="complex", dtype="float32")
    with pytest.raises(ValueError, match="`n` must be an integer in"):
        posenc.rope_cache(-1, 8, format="vllm")
    with pytest.raises(TypeError, match="`n` must be an integer"):
        posenc.rope_cache(4.0, 8, format="vllm")
    with pytest.raises(ValueError, match="`dim`"):
        posenc.rope_cache(4, 7, format="flash_attn")


def test_caller_writes_do_not_change_later_results():
    a = posenc.rope_cache(16, 8, format="flash_attn")
    before = posenc.rope_cache(16, 8, format="flash_attn")[0].copy()
    for t in a:
        if t.flags.writeable:
            t[...] = 7.0
    np.testing.assert_array_equal(posenc.rope_cache(16, 8, format="flash_attn")[0], before)


# ---------------------------------------------------------------- peers
torch = pytest.importorskip("torch")


def _golden():
    with np.load(DATA / "rope_cache_golden.npz") as f:
        return {k: f[k] for k in f.files}


GOLDEN_ROT, GOLDEN_SCALING = 16, scaling.YaRN(4.0, 16)


@pytest.mark.parametrize("peer", ["vllm", "flash"])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_peer_reference_paths(peer, layout):
    g = _golden()
    x, pos, out, ctrl = (torch.as_tensor(g[f"{peer}_{layout}_{k}"]) for k in ("x", "pos", "out", "control"))
    kw = {"base": 500.0, "scaling": GOLDEN_SCALING, "dtype": torch.float64, "xp": torch}
    # the cache the peer was given is today's (to the last ulps: the values were recorded before the
    # frequencies became the correctly rounded mathematical ones, which moved float64 entries by ~1e-16)
    if peer == "vllm":
        cache = posenc.rope_cache(64, GOLDEN_ROT, format="vllm", **kw)
    else:
        cache = torch.stack(posenc.rope_cache(64, GOLDEN_ROT, format="flash_attn", **kw))
    assert float((cache - torch.as_tensor(g[f"{peer}_{layout}_cache"])).abs().max()) < 1e-14
    # the peer's rotation with it is posenc's rotation of those positions (partial: 16 of 24 features)
    cos, sin = posenc.rope_cos_sin(pos, GOLDEN_ROT, layout=layout, **{k: v for k, v in kw.items() if k != "xp"})
    if peer == "vllm":  # (tokens, heads * head)
        xs = x.reshape(x.shape[0], -1, 24)
        want = posenc.apply_rope(xs, cos[:, None], sin[:, None], layout=layout, rotary_dim=GOLDEN_ROT).reshape(x.shape)
    else:  # (1, seq, heads, head)
        want = posenc.apply_rope(x, cos[None, :, None], sin[None, :, None], layout=layout, rotary_dim=GOLDEN_ROT)
    assert float((out - want).abs().max()) < 1e-13
    assert torch.equal(out[..., GOLDEN_ROT:24], x[..., GOLDEN_ROT:24]) if peer == "flash" else True
    # control: the halves of the cache swapped
    assert float((ctrl - want).abs().max()) > 1e-2


def test_hf_format_in_transformers_apply():
    pytest.importorskip("transformers")
    from transformers.models.cohere import modeling_cohere as cohere
    from transformers.models.llama import modeling_llama as llama

    gen = torch.Generator().manual_seed(0)
    # values of float32 (Cohere's apply computes in float32 at least)
    q = torch.randn(1, 2, 30, 16, generator=gen).double()
    k = torch.randn(1, 1, 30, 16, generator=gen).double()
    want = {}
    for layout in ("half", "interleaved"):
        cos, sin = posenc.rope_cos_sin(30, 16, base=50.0, layout=layout, dtype=torch.float64, xp=torch)
        want[layout] = posenc.apply_rope(q, cos, sin, layout=layout)
    for layout, module in (("half", llama), ("interleaved", cohere)):
        cos, sin = posenc.rope_cache(30, 16, format="hf", layout=layout, base=50.0, dtype=torch.float64, xp=torch)
        got, _ = module.apply_rotary_pos_emb(q, k, cos[None], sin[None])
        assert float((got - want[layout]).abs().max()) < 1e-14
        other = "interleaved" if layout == "half" else "half"
        assert float((got - want[other]).abs().max()) > 1e-2  # control: the other layout


def test_complex_format_in_llama4_apply():
    pytest.importorskip("transformers")
    from transformers.models.llama4 import modeling_llama4 as m

    gen = torch.Generator().manual_seed(1)
    q = torch.randn(1, 30, 2, 16, generator=gen, dtype=torch.float32)  # (batch, seq, heads, head)
    freqs_cis = posenc.rope_cache(30, 16, format="complex", base=50.0, xp=torch)
    got, _ = m.apply_rotary_emb(q, q, freqs_cis[None])
    cos, sin = posenc.rope_cos_sin(30, 16, base=50.0, layout="interleaved", dtype=torch.float64, xp=torch)
    want = posenc.apply_rope(q.double(), cos[None, :, None], sin[None, :, None], layout="interleaved")
    assert float((got.double() - want).abs().max()) < 1e-5
    wrong, _ = m.apply_rotary_emb(q, q, freqs_cis.conj()[None])  # control: the opposite rotation
    assert float((wrong.double() - want).abs().max()) > 1e-2
