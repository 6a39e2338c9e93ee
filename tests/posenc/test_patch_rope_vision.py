"""``posenc.torch.patch_rope`` on the vision towers of transformers.

Qwen2-VL's (and Qwen2.5-VL's, the same module), Pixtral's and Llama 4's
vision towers, tiny and random (the configs of test_hf_models.py), with
their attention sharpened (the random init's is near uniform):

* the tables of the patched modules against a float64 NumPy formula
  written from each tower's convention, at positions up to 2000 (float32:
  within an ulp; float64: 1e-15), where the modules' own float32 angle
  products are off by 1e-5 and more;
* the patched tower's output: float64 (transformers' float32 casts lifted,
  see ``data/make_hf_sweep.py``) within 1e-12 relative of the tower's own,
  float32 at least as close to that reference as the tower's own float32;
  a wrong convention (the axes swapped, the other split, the other layout)
  must differ by a clear margin; ``remove()`` gives back the tower's own
  output bit for bit;
* Llama 4's tower cast with ``.to(torch.float32)`` or ``.to(torch.bfloat16)``
  (which turns its complex ``freqs_ci`` into its real part: the sines are
  lost) is, patched, at float32's noise again / closer to the float64
  reference than unpatched;
* a whole Qwen2-VL (``Qwen2VLForConditionalGeneration``: the text M-RoPE and
  the vision tower patched together) on an image and text;
* the patched modules under ``torch.compile(fullgraph=True)``, the towers
  posenc still refuses.
"""

from __future__ import annotations

import contextlib
import re
import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

from posenc.torch import patch_rope  # noqa: E402
from tests.posenc.test_hf_models import SWEEP, TINY, precision, rel_error, unlifted_modules  # noqa: E402


# ---------------------------------------------------------------- the towers
def _qwen2_vl():
    from transformers.models.qwen2_vl import modeling_qwen2_vl as m

    cfg = transformers.Qwen2VLVisionConfig(
        depth=2, embed_dim=32, hidden_size=32, num_heads=2, mlp_ratio=2, patch_size=2, temporal_patch_size=1,
        in_channels=3, spatial_merge_size=2,
    )  # fmt: skip
    t, h, w = 1, 4, 6
    pixels = torch.randn(t * h * w, 3 * 2 * 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    grid = torch.tensor([[t, h, w]])

    def run(model, dtype):
        return model(pixels.to(dtype), grid_thw=grid).last_hidden_state

    return (lambda: m.Qwen2VisionTransformerPretrainedModel(cfg)), run, "rotary_pos_emb"


def _qwen2_5_vl():
    from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as m

    cfg = transformers.Qwen2_5_VLVisionConfig(
        depth=2, hidden_size=32, out_hidden_size=32, intermediate_size=48, num_heads=2, patch_size=2,
        temporal_patch_size=1, in_channels=3, spatial_merge_size=2, window_size=8, fullatt_block_indexes=[1],
    )  # fmt: skip
    t, h, w = 1, 4, 8
    pixels = torch.randn(t * h * w, 3 * 2 * 2, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    grid = torch.tensor([[t, h, w]])

    def run(model, dtype):
        return model(pixels.to(dtype), grid_thw=grid).last_hidden_state

    return (lambda: m.Qwen2_5_VisionTransformerPretrainedModel(cfg)), run, "rotary_pos_emb"


def _pixtral():
    from transformers.models.pixtral import modeling_pixtral as m

    cfg = transformers.PixtralVisionConfig(
        hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2, num_channels=3,
        image_size=32, patch_size=4, head_dim=16,
    )  # fmt: skip
    h, w = 3, 5
    pixels = torch.randn(1, 3, 4 * h, 4 * w, generator=torch.Generator().manual_seed(2), dtype=torch.float64)

    def run(model, dtype):
        return model(pixels.to(dtype)).last_hidden_state

    return (lambda: m.PixtralVisionModel(cfg)), run, "patch_positional_embedding"


def _llama4():
    from transformers.models.llama4 import modeling_llama4 as m

    cfg = transformers.Llama4VisionConfig(
        hidden_size=32, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_channels=3,
        image_size=16, patch_size=4, vision_output_dim=32, projector_input_dim=32, projector_output_dim=32,
        pixel_shuffle_ratio=0.5,
    )  # fmt: skip
    pixels = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(3), dtype=torch.float64)

    def run(model, dtype):
        return model(pixels.to(dtype)).last_hidden_state

    return (lambda: m.Llama4VisionModel(cfg)), run, "rotary_embedding"


def _swap_axes(module):
    forward = module.forward
    module.forward = lambda x, position_ids: forward(x, position_ids.flip(-1))


def _reading(**change):
    def control(module):
        module.readings = {**module.readings, **change}

    return control


TOWERS = {
    # name: (tower, control: a wrong convention applied to the patched module)
    "qwen2-vl": (_qwen2_vl, _swap_axes),
    "qwen2.5-vl": (_qwen2_5_vl, _reading(layout="interleaved")),
    "pixtral": (_pixtral, _reading(split="blocks")),
    "llama4": (_llama4, _reading(layout="half")),
}


def _tower(build, dtype):
    """The tower of seed 0 (weights drawn in float32: the same model in every
    dtype), built in ``dtype`` as the default dtype (Llama 4's complex buffer
    does not survive ``.to(float64)``), attention sharpened."""
    torch.manual_seed(0)
    weights = build().state_dict()
    with precision(dtype), torch.no_grad():
        with _default_dtype(dtype):
            model = build().eval()
        model.load_state_dict(weights)
        for name, p in model.named_parameters():
            if re.search(r"(qkv|q_proj|k_proj)\.weight$", name):
                p.mul_(30.0)
    return model


@contextlib.contextmanager
def _default_dtype(dtype):
    saved = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(saved)


def _outputs(name, dtype, control=None):
    """The tower's own output, the patched one, and the own one after ``remove()``."""
    make, wrong = TOWERS[name]
    build, run, attr = make()
    model = _tower(build, dtype)
    with precision(dtype), torch.no_grad():
        own = run(model, dtype)
        with SWEEP.unlifted():  # patch_rope runs posenc (its check of the tower's own tables)
            handle = patch_rope(model)
        assert handle.patched == [attr], handle.patched
        assert type(getattr(model, attr)).__name__.startswith("Exact")
        if control:
            wrong(getattr(model, attr))
        unlifted_modules(model)
        ours = run(model, dtype)
        handle.remove()
        again = run(model, dtype)
    return own, ours, again


@pytest.mark.parametrize("name", sorted(TOWERS))
def test_tower(name):
    own64, ours64, again64 = _outputs(name, torch.float64)
    own32, ours32, again32 = _outputs(name, torch.float32)
    _, wrong64, _ = _outputs(name, torch.float64, control=True)
    err64, err32, own_err32 = rel_error(ours64, own64), rel_error(ours32, own64), rel_error(own32, own64)
    assert err64 <= 1e-12, err64
    assert err32 <= max(own_err32, 2e-5), (err32, own_err32)  # small grids: the tower's float32 noise
    assert rel_error(wrong64, own64) > 1e-3  # the wrong convention is seen
    assert torch.equal(again32, own32) and torch.equal(again64, own64)  # removed: bit for bit
    control = rel_error(wrong64, own64)
    print(f"{name}: float64 {err64:.2g}, float32 {err32:.2g} (own {own_err32:.2g}), control {control:.2g}")


# ---------------------------------------------------------------- the tables, against a float64 formula
def _axial(ids, base, width, split):
    """Angles ``(N, width / 2)`` of the two axes: Qwen2-VL's blocks (each axis a
    RoPE of width / 2 features), Pixtral's strided split (one RoPE of width
    features, the height the even, the width the odd frequencies)."""
    ids = np.asarray(ids, dtype=np.float64)
    if split == "blocks":
        w = base ** (-np.arange(0, width // 2, 2) / (width // 2))
        return np.concatenate([ids[:, :1] * w, ids[:, 1:] * w], axis=-1)
    w = base ** (-np.arange(0, width, 2) / width)
    return np.concatenate([ids[:, :1] * w[0::2], ids[:, 1:] * w[1::2]], axis=-1)


@pytest.mark.parametrize("name", ["qwen2-vl", "pixtral"])
def test_tables_exact_where_the_module_is_not(name):
    build, _, attr = TOWERS[name][0]()
    holder = torch.nn.Module()
    holder.rope = getattr(build(), attr)
    p = np.arange(0, 2000, 7)
    ids = torch.as_tensor(np.stack([p, p[::-1]], axis=-1))
    split = "blocks" if name == "qwen2-vl" else "strided"
    a = _axial(ids.numpy(), 10000.0, 16, split)
    want = (np.concatenate([np.cos(a)] * 2, -1), np.concatenate([np.sin(a)] * 2, -1))
    x32, x64 = torch.zeros(1), torch.zeros(1, dtype=torch.float64)
    with torch.no_grad():
        own = holder.rope(x32, ids)
        with patch_rope(holder):
            ours, ours64 = holder.rope(x32, ids), holder.rope(x64, ids)
    for o, u, u64, w in zip(own, ours, ours64, want):
        assert o.dtype == u.dtype == torch.float32 and u64.dtype == torch.float64 and u.shape == o.shape
        assert np.abs(u.double().numpy() - w).max() <= 2.0**-23  # an ulp of the values near 1
        assert np.abs(u64.numpy() - w).max() <= 1e-15 * np.abs(a).max()  # the formula's own float64 angles
        assert np.abs(o.double().numpy() - w).max() > 1e-6  # the float32 angle product
    # control: the other split is not this tower's table
    other = "strided" if split == "blocks" else "blocks"
    assert np.abs(np.cos(_axial(ids.numpy(), 10000.0, 16, other)) - want[0][:, :8]).max() > 0.1


def test_llama4_freqs_ci_exact():
    build, _, attr = TOWERS["llama4"][0]()
    holder = torch.nn.Module()
    holder.rope = getattr(build(), attr)
    n = 4
    k = np.arange(n * n)
    x, y = k % n + 1.0, k // n + 1.0  # column, row: ids + 1
    w = 10000.0 ** (-np.arange(0, 8, 2) / 8)
    a = np.concatenate([np.concatenate([x[:, None] * w, y[:, None] * w], -1), np.zeros((1, 8))])  # class token
    want = np.exp(1j * a)[:, None, :]
    pixels = torch.zeros(1, 3, 16, 16)
    with torch.no_grad():
        own = holder.rope(pixels)
        with patch_rope(holder):
            ours, ours64 = holder.rope(pixels), holder.rope(pixels.double())
    assert own.dtype == ours.dtype == torch.complex64 and ours64.dtype == torch.complex128
    assert ours.shape == own.shape == (n * n + 1, 1, 8)
    assert np.abs(ours.numpy() - want).max() <= 2.0**-23
    assert np.abs(ours64.numpy() - want).max() <= 1e-15
    assert np.abs(own.numpy() - want).max() <= 1e-6  # small angles: the module's own is close too
    # control: (row, column) in place of (column, row)
    swapped = np.exp(1j * np.concatenate([np.concatenate([y[:, None] * w, x[:, None] * w], -1), np.zeros((1, 8))]))
    assert np.abs(swapped[:, None, :] - want).max() > 0.1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_llama4_cast_with_to(dtype):
    """``model.to(dtype)``, even ``.to(torch.float32)``, casts Llama 4's complex
    ``freqs_ci`` buffer to its real part (torch warns): the tower then turns
    by the cosines only.  Patched, its tables stay exact: float32 at
    float32's noise again, bfloat16 closer to the float64 output."""
    make, _ = TOWERS["llama4"]
    build, run, _ = make()
    tower = _tower(build, torch.float64)
    with precision(torch.float64), torch.no_grad():
        ref = run(tower, torch.float64)
    outs = {}
    for patched in (False, True):
        model = _tower(build, torch.float32)
        with torch.no_grad():
            handle = patch_rope(model) if patched else None
            with warnings.catch_warnings():  # torch warns once per process: "discards the imaginary part"
                warnings.simplefilter("ignore", UserWarning)
                model.to(dtype)
            if handle is None:
                assert model.rotary_embedding.freqs_ci.dtype == dtype  # the sines are gone
            outs[patched] = run(model, dtype)
            if handle is not None:
                assert model.rotary_embedding(torch.zeros(1, dtype=dtype)).dtype == torch.complex64
                handle.remove()
    own, ours = rel_error(outs[False], ref), rel_error(outs[True], ref)
    if dtype == torch.float32:
        assert ours <= 2e-5 < 1e-3 < own, (ours, own)
    else:
        assert ours < 0.7 * own, (ours, own)


# ---------------------------------------------------------------- a whole model
def test_qwen2_vl_model_end_to_end():
    """Qwen2VLForConditionalGeneration: an image of 4 x 6 patches (merged 2 x 2)
    between text tokens; the text M-RoPE and the vision tower patched."""
    from transformers.models.qwen2_vl import modeling_qwen2_vl as m

    text = {**TINY, "bos_token_id": 1, "eos_token_id": 2}
    text["rope_parameters"] = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [2, 3, 3]}
    cfg = transformers.Qwen2VLConfig(
        bos_token_id=1, eos_token_id=2, image_token_id=90, vision_start_token_id=91, vision_end_token_id=92,
        text_config=text,
        vision_config={
            "depth": 2, "embed_dim": 32, "hidden_size": 64, "num_heads": 2, "mlp_ratio": 2, "patch_size": 2,
            "temporal_patch_size": 1, "in_channels": 3, "spatial_merge_size": 2,
        },
    )  # fmt: skip
    t, h, w = 1, 4, 6
    ids = torch.tensor([[5, 6, 91] + [90] * (t * h * w // 4) + [92, 7, 8, 9]])
    pixels = torch.randn(t * h * w, 12, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    inputs = {"input_ids": ids, "image_grid_thw": torch.tensor([[t, h, w]]), "mm_token_type_ids": (ids == 90).long()}
    outs = {}
    for dtype in (torch.float64, torch.float32):
        model = _tower(lambda: m.Qwen2VLForConditionalGeneration(cfg), dtype)
        with precision(dtype), torch.no_grad():
            outs[dtype, False] = model(**inputs, pixel_values=pixels.to(dtype)).logits
            with SWEEP.unlifted():
                handle = patch_rope(model)
            assert handle.patched == ["model.visual.rotary_pos_emb", "model.language_model.rotary_emb"]
            unlifted_modules(model)
            outs[dtype, True] = model(**inputs, pixel_values=pixels.to(dtype)).logits
            handle.remove()
            assert torch.equal(model(**inputs, pixel_values=pixels.to(dtype)).logits, outs[dtype, False])
    own64 = outs[torch.float64, False]
    print(
        f"qwen2-vl model: float64 {rel_error(outs[torch.float64, True], own64):.2g}, float32 "
        f"{rel_error(outs[torch.float32, True], own64):.2g} (own {rel_error(outs[torch.float32, False], own64):.2g})"
    )
    assert rel_error(outs[torch.float64, True], own64) <= 1e-12
    assert rel_error(outs[torch.float32, True], own64) <= max(rel_error(outs[torch.float32, False], own64), 2e-5)


# ---------------------------------------------------------------- compiled, refused
def test_compile_fullgraph():
    holder = torch.nn.Module()
    holder.qwen = TOWERS["qwen2-vl"][0]()[0]().rotary_pos_emb
    holder.llama4 = TOWERS["llama4"][0]()[0]().rotary_embedding
    ids = torch.stack([torch.arange(40), torch.arange(40) % 7], -1)
    x = torch.zeros(1)
    with torch.no_grad(), patch_rope(holder):
        for mod, args in ((holder.qwen, (x, ids)), (holder.llama4, (x,))):
            eager = mod(*args)
            compiled = torch.compile(mod, fullgraph=True, backend="eager")(*args)
            pairs = zip(eager, compiled) if isinstance(eager, tuple) else [(eager, compiled)]
            for e, c in pairs:
                assert e.dtype == c.dtype and e.shape == c.shape
                assert float((e - c).abs().max()) <= 2.0**-23


def test_compile_fullgraph_tower():
    """A whole tower compiled, patched: Llama 4's (Qwen2-VL's tower does not
    compile with fullgraph=True, patched or not: its grid sizes are data)."""
    build, run, _ = TOWERS["llama4"][0]()
    model = _tower(build, torch.float32)
    with torch.no_grad(), patch_rope(model):
        eager = run(model, torch.float32)
        compiled = run(torch.compile(model, fullgraph=True, backend="eager"), torch.float32)
    assert rel_error(compiled, eager) <= 2e-6


def test_state_dict_patching_twice_and_cast():
    build, _, attr = TOWERS["qwen2-vl"][0]()
    model = _tower(build, torch.float32)
    keys = list(model.state_dict())
    ids = torch.stack([torch.arange(0, 900, 9), torch.arange(100)], -1)
    with torch.no_grad(), patch_rope(model) as handle:
        assert list(model.state_dict()) == keys  # a checkpoint saved while patched is the tower's
        assert patch_rope(model).patched == []  # the exact module is not patched again
        before = model.rotary_pos_emb(torch.zeros(1), ids)
        model.to(torch.bfloat16)  # the exact module holds no float tensor to round
        after = model.rotary_pos_emb(torch.zeros(1, dtype=torch.bfloat16), ids)
        own = model.rotary_pos_emb.original(torch.zeros(1, dtype=torch.bfloat16), ids)  # inv_freq now bfloat16
    assert handle.patched == [attr]
    assert after[0].dtype == own[0].dtype == torch.float32  # as Qwen2-VL's own: float32 whatever the model's dtype
    assert torch.equal(after[0], before[0]) and torch.equal(after[1], before[1])
    assert float((own[0] - before[0]).abs().max()) > 1e-2


def test_towers_not_patched_are_refused():
    from transformers.models.qwen3_vl import modeling_qwen3_vl as m

    holder = torch.nn.Module()
    holder.rope = m.Qwen3VLVisionRotaryEmbedding(transformers.Qwen3VLVisionConfig(hidden_size=32, num_heads=2))
    with pytest.raises(ValueError, match="Qwen3VLVisionRotaryEmbedding cannot be patched"):
        patch_rope(holder)
    handle = patch_rope(holder, strict=False)
    assert handle.patched == [] and [n for n, _, _ in handle.left] == ["rope"]


def test_a_changed_module_is_refused():
    """A tower's module whose tables are not those posenc reads from its
    config (a transformers release that changed it: here its axes swapped,
    or another forward) is refused, not patched wrong."""
    build, _, _ = TOWERS["pixtral"][0]()
    holder = torch.nn.Module()
    holder.rope = build().patch_positional_embedding
    forward = holder.rope.forward
    holder.rope.forward = lambda x, position_ids: forward(x, position_ids.flip(-1))
    with pytest.raises(ValueError, match="PixtralVisionRotaryEmbedding cannot be patched: its own tables differ"):
        patch_rope(holder)
    holder.rope.forward = lambda x: forward(x, None)
    with pytest.raises(ValueError, match=r"its forward takes \(x\), not \(x, position_ids\)"):
        patch_rope(holder)
    holder.rope.forward = forward
    with patch_rope(holder) as handle:
        assert handle.patched == ["rope"]
