"""posenc.torch.AxesRotaryEmbedding: multi-axis RoPE from position ids as a module.

Oracles: posenc.rope_axes_cos_sin (the module must be that function, which
test_axes_peers.py holds to diffusers' FluxPosEmbed) and the float64 formula
of per-axis RoPE.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
from posenc import _cache  # noqa: E402
from posenc.torch import AxesRotaryEmbedding  # noqa: E402

MODES = {"grad": torch.enable_grad, "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}
DIMS = (16, 56, 56)


def ref(ids, dims=DIMS, base=10000.0):
    """float64 interleaved cos, sin of per-axis RoPE."""
    ids = np.asarray(ids, dtype=np.float64)
    a = np.concatenate(
        [ids[:, k, None] * base ** (-np.arange(0, d, 2, dtype=np.float64) / d) for k, d in enumerate(dims)], -1
    )
    return np.repeat(np.cos(a), 2, -1), np.repeat(np.sin(a), 2, -1)


def flux_ids(h, w, txt=4):
    return posenc.grid_ids((1, h, w), prefix_tokens=txt, xp=torch)


def test_forward_is_the_function_and_the_formula():
    rope = AxesRotaryEmbedding(DIMS)
    ids = flux_ids(5, 7)
    cos, sin = rope(ids)
    assert cos.dtype == torch.float32 and cos.shape == (4 + 35, 128)
    want = posenc.rope_axes_cos_sin(ids, DIMS, xp=torch)
    assert torch.equal(cos, want[0]) and torch.equal(sin, want[1])
    for g, w in zip((cos, sin), ref(ids.numpy())):
        np.testing.assert_allclose(g.double().numpy(), w, atol=2.5e-7)
    # float ids (Flux's are float32 tensors), another base and layout
    rope = AxesRotaryEmbedding((8, 8), base=[100.0, 256.0], layout="half")
    fids = torch.tensor([[0.5, 3.0], [-2.0, 7.25]])
    got = rope(fids)
    want = posenc.rope_axes_cos_sin(fids, (8, 8), base=[100.0, 256.0], layout="half")
    assert all(torch.equal(g, w) for g, w in zip(got, want))


def test_buffer_follows_to_and_stays_out_of_the_state_dict():
    rope = AxesRotaryEmbedding(DIMS)
    assert dict(rope.state_dict()) == {}
    assert [n for n, _ in rope.named_buffers()] == ["inv_freq"]
    freqs = np.concatenate([10000.0 ** (-np.arange(0, d, 2) / d) for d in DIMS])
    np.testing.assert_allclose(rope.inv_freq.numpy(), freqs, rtol=1e-7)
    rope = rope.to(torch.float64)
    assert rope.inv_freq.dtype == torch.float64
    np.testing.assert_allclose(rope.inv_freq.numpy(), freqs, rtol=1e-15)
    cos, sin = rope(flux_ids(3, 3))
    assert cos.dtype == torch.float64
    np.testing.assert_allclose(cos.numpy(), ref(flux_ids(3, 3).numpy())[0], atol=1e-13)
    rope = rope.to(torch.bfloat16)
    assert rope(flux_ids(3, 3))[0].dtype == torch.bfloat16


def test_meta_construction_then_to_empty():
    with torch.device("meta"):
        rope = AxesRotaryEmbedding(DIMS, base=256.0)
        cos, _ = rope(flux_ids(2, 3))
    assert rope.inv_freq.device.type == "meta" and cos.device.type == "meta" and cos.shape == (10, 128)
    rope.to_empty(device="cpu")
    fresh = AxesRotaryEmbedding(DIMS, base=256.0)
    assert torch.equal(rope.inv_freq, fresh.inv_freq)  # refilled, not left uninitialised
    ids = flux_ids(2, 3)
    assert all(torch.equal(a, b) for a, b in zip(rope(ids), fresh(ids)))


class CountingBackend:
    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


def test_compiles_fullgraph_across_image_sizes():
    """dynamic=True: one graph for every image size (two at most), in every
    grad mode; also with per-axis bases and scalings, turns and the half layout."""
    from posenc.scaling import NTK, YaRN

    rope = AxesRotaryEmbedding(DIMS)
    other = AxesRotaryEmbedding(
        DIMS, base=[100.0, 10000.0, 256.0], scaling=[NTK(2.0), None, YaRN(4.0, 64)], layout="half", turns=True
    )
    for mode, ctx in [*MODES.items(), ("options", torch.no_grad)]:
        if mode == "options":
            rope = other
        with ctx():
            _cache.clear()
            torch._dynamo.reset()
            backend = CountingBackend()
            compiled = torch.compile(rope, fullgraph=True, backend=backend, dynamic=True)
            for h, w in ((4, 4), (5, 7), (16, 3), (6, 9)):
                ids = flux_ids(h, w, txt=3 + h)
                for g, e in zip(compiled(ids), rope(ids)):
                    assert g.shape == e.shape
                    assert (g - e).abs().max().item() <= 2.5e-7, mode
            assert backend.graphs <= 2, f"{mode}: {backend.graphs} graphs"


def test_bad_arguments():
    with pytest.raises(ValueError, match="`axes_dim`"):
        AxesRotaryEmbedding((16, 5))
    with pytest.raises(TypeError, match="`axes_dim`"):
        AxesRotaryEmbedding(16)
    with pytest.raises(ValueError, match="`layout`"):
        AxesRotaryEmbedding(DIMS, layout="neox")
    with pytest.raises(ValueError, match="`base`"):
        AxesRotaryEmbedding(DIMS, base=[1.0, 2.0])
    with pytest.raises(TypeError, match="`dtype`"):
        AxesRotaryEmbedding(DIMS, dtype=torch.int32)
    with pytest.raises(ValueError, match="`ids` has 2 columns"):
        AxesRotaryEmbedding(DIMS)(torch.zeros(3, 2, dtype=torch.int64))
