"""``posenc.torch.patch_rope`` on tiny random-init transformers models.

For each family: the patched model's logits against its own in float32
(within transformers' own float32 error) and float64 (transformers' float32
casts lifted, see ``data/make_hf_sweep.py``: 1e-10 relative, as
test_hf_models.py: at positions near 30000 and with the sharpened attention
below, float64's own rounding of the angles reaches 2e-11); a model cast
with ``.to(torch.bfloat16)`` (its ``inv_freq`` rounded to bfloat16) is, once
patched, closer to the float64 reference than unpatched, at positions past
a thousand; ``remove()`` gives back the model's own logits bit for bit.
Then ``.to(dtype)`` after patching, ``torch.compile(fullgraph=True)``,
``generate`` with a KV cache, and the refusals.  The configs and helpers
are those of test_hf_models.py.
"""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

from posenc.torch import patch_rope  # noqa: E402
from tests.posenc.test_hf_models import IDS, LLAMA, SWEEP, TINY, precision  # noqa: E402

LLAMA31 = {
    **LLAMA["llama3"],
    "max_position_embeddings": 131072,
    "rope_scaling": {**LLAMA["llama3"]["rope_scaling"], "original_max_position_embeddings": 8192},
}


def _llama():
    return transformers.LlamaForCausalLM, transformers.LlamaConfig(**TINY, **LLAMA31)


def _qwen2():
    return transformers.Qwen2ForCausalLM, transformers.Qwen2Config(**TINY, rope_theta=1e6)


def _qwen3():
    return transformers.Qwen3ForCausalLM, transformers.Qwen3Config(**TINY, head_dim=16, rope_theta=1e6)


def _gemma3():
    cfg = transformers.Gemma3TextConfig(
        **TINY, head_dim=16, rope_theta=1e6, rope_local_base_freq=1e4, sliding_window=32,
        layer_types=["sliding_attention", "full_attention"],
    )  # fmt: skip
    return transformers.Gemma3ForCausalLM, cfg


def _phi3():
    cfg = transformers.Phi3Config(
        **TINY, max_position_embeddings=65536, original_max_position_embeddings=64, partial_rotary_factor=1.0,
        pad_token_id=0, eos_token_id=1, bos_token_id=1,
        rope_scaling={
            "rope_type": "longrope",
            "short_factor": [1.0 + 0.1 * i for i in range(8)],
            "long_factor": [1.0 + 0.9 * i for i in range(8)],
        },
    )  # fmt: skip
    return transformers.Phi3ForCausalLM, cfg


def _deepseek_v3():
    cfg = transformers.DeepseekV3Config(
        **{**TINY, "num_hidden_layers": 1}, q_lora_rank=None, kv_lora_rank=16, qk_rope_head_dim=8,
        qk_nope_head_dim=8, v_head_dim=16, n_routed_experts=2, num_experts_per_tok=1, first_k_dense_replace=1,
        n_group=1, topk_group=1, rope_theta=1e4,
    )  # fmt: skip
    return transformers.DeepseekV3ForCausalLM, cfg


FAMILIES = {
    "llama3.1": _llama,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "gemma3": _gemma3,
    "phi3-longrope": _phi3,
    "deepseek-v3": _deepseek_v3,
}


def _out(model, ids, position_ids):
    return model(input_ids=ids, position_ids=position_ids).logits


def _build(cls, cfg):
    """A model of seed 0 with sharper attention (the random init's is near
    uniform: in bfloat16 its softmax would not see the positions at all).
    The weights are drawn in float32 whatever the block (the same model in
    every dtype); the rotary module is built in the block's precision."""
    with SWEEP.unlifted():
        torch.manual_seed(0)
        weights = cls(cfg).state_dict()
    model = cls(cfg).eval()
    model.load_state_dict(weights)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if re.search(r"(q_proj|k_proj|qkv_proj|kv_a_proj_with_mqa|kv_b_proj|q_norm|k_norm)\.weight$", name):
                p.mul_(4.0)
    return model


def _unlifted(model):
    """posenc runs with torch's real dtypes inside a lifted block (SWEEP.unlifted)."""
    for m in model.modules():
        if type(m).__name__ == "ExactRotaryEmbedding":

            def forward(*args, _f=m.forward, **kw):
                with SWEEP.unlifted():
                    return _f(*args, **kw)

            m.forward = forward
    return model


def _run(build, dtype, *, patch=False, cast=None, position_ids=None):
    """Logits of a freshly built model (seed 0) in ``dtype``; ``cast``: built in
    float32 then ``.to(cast)`` (what training and serving wrappers do)."""
    cls, cfg = build()
    with precision(dtype), torch.no_grad():
        model = _build(cls, cfg).to(dtype if cast is None else cast)
        handle = patch_rope(model) if patch else None
        _unlifted(model)
        out = _out(model, IDS, position_ids)
        if handle is not None:
            handle.remove()
        return out, model


def _rel(a, b):
    return float((a.double() - b.double()).abs().max() / b.double().abs().max())


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family(family):
    build = FAMILIES[family]
    far = torch.arange(30000, 30000 + IDS.shape[1])[None].expand(IDS.shape[0], -1)  # bf16 inv_freq: cos off by ~2
    own64, _ = _run(build, torch.float64, position_ids=far)
    ours64, _ = _run(build, torch.float64, patch=True, position_ids=far)
    assert _rel(ours64, own64) <= 1e-10
    own32, _ = _run(build, torch.float32, position_ids=far)
    ours32, model = _run(build, torch.float32, patch=True, position_ids=far)
    # float32: exact tables, so at least as close to the float64 reference as the model's own float32
    assert _rel(ours32, own64) <= max(_rel(own32, own64), 2e-5)
    # removed: bit for bit the model's own
    with torch.no_grad():
        assert torch.equal(_out(model, IDS, far), own32)


def _norm_rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


@pytest.mark.parametrize("family", ["llama3.1", "phi3-longrope", "qwen3"])
def test_bfloat16_cast_model_closer_to_float64(family):
    """``.to(torch.bfloat16)`` rounds ``inv_freq``: attention sees the error of
    the relative angles ``(m - n) w``, so a long sequence shows it (1024 tokens).
    The other families' tiny models (smaller frequencies, a sliding window,
    8 rotary features) show no difference above bfloat16's own noise there."""
    build = FAMILIES[family]
    ids = (torch.arange(1024) * 7919 % 97)[None]
    cls, cfg = build()
    with torch.no_grad():
        model = _build(cls, cfg)
        with precision(torch.float64):
            ref = _unlifted(model.double())(input_ids=ids).logits
        model.to(torch.bfloat16)
        own = model(input_ids=ids).logits
        used = model.model.rotary_emb.inv_freq.dtype
        if used != torch.bfloat16:
            # before 5.23 LongRoPE's long frequencies are computed at the first long forward, after the cast
            pytest.skip(f"transformers {transformers.__version__}'s {family} model used {used} frequencies")
        with patch_rope(model):
            ours = model(input_ids=ids).logits
    assert _norm_rel(ours, ref) < 0.9 * _norm_rel(own, ref), (_norm_rel(ours, ref), _norm_rel(own, ref))


def test_qwen2_vl_text_mrope():
    from transformers.models.qwen2_vl import modeling_qwen2_vl as m

    cfg = transformers.Qwen2VLTextConfig(
        **TINY, rope_parameters={"rope_type": "default", "rope_theta": 1e4, "mrope_section": [2, 3, 3]}
    )
    pid = torch.stack([torch.arange(70), torch.arange(70) // 2, torch.arange(70) % 9])[:, None].expand(3, 2, 70)
    outs = {}
    for dtype in (torch.float64, torch.float32):
        for patched in (False, True):
            with precision(dtype), torch.no_grad():
                model = _build(m.Qwen2VLTextModel, cfg).to(dtype)
                handle = patch_rope(model) if patched else None
                _unlifted(model)
                outs[dtype, patched] = model(input_ids=IDS, position_ids=pid).last_hidden_state
                if handle is not None:
                    assert handle.patched == ["rotary_emb"]
                    handle.remove()
    assert _rel(outs[torch.float64, True], outs[torch.float64, False]) <= 1e-10
    assert _rel(outs[torch.float32, True], outs[torch.float64, False]) <= 2e-4


def test_dtype_change_after_patching_and_context_manager():
    cls, cfg = _llama()
    far = torch.arange(5000, 5000 + IDS.shape[1])[None]
    with torch.no_grad():
        model = _build(cls, cfg)
        ref = model.double()(input_ids=IDS[:1], position_ids=far).logits
        model.float()
        keys = list(model.state_dict())
        with patch_rope(model):
            assert list(model.state_dict()) == keys  # a checkpoint saved while patched is the model's
            model.to(torch.bfloat16)  # the exact module holds no float tensor to round
            ours = model(input_ids=IDS[:1], position_ids=far).logits
            assert type(model.model.rotary_emb).__name__ == "ExactRotaryEmbedding"
        assert type(model.model.rotary_emb).__name__ == "LlamaRotaryEmbedding"
        own = model(input_ids=IDS[:1], position_ids=far).logits  # the original followed .to(): bf16 inv_freq
    assert model.model.rotary_emb.inv_freq.dtype == torch.bfloat16
    assert _rel(ours, ref) < _rel(own, ref)


def test_generate_with_cache_same_tokens():
    cls, cfg = _llama()
    with torch.no_grad():
        torch.manual_seed(0)
        model = cls(cfg).eval()
        kw = {"max_new_tokens": 12, "do_sample": False, "use_cache": True, "pad_token_id": 0}
        own = model.generate(IDS[:1, :20], **kw)
        with patch_rope(model):
            ours = model.generate(IDS[:1, :20], **kw)
    assert torch.equal(own, ours)


def test_compile_fullgraph():
    cls, cfg = _llama()
    with torch.no_grad():
        torch.manual_seed(0)
        model = cls(cfg).eval()
        want = model(input_ids=IDS[:1, :16]).logits
        handle = patch_rope(model)
        compiled = torch.compile(model.model, fullgraph=True, backend="eager")
        got = compiled(input_ids=IDS[:1, :16]).last_hidden_state
        handle.remove()
        ref = model.model(input_ids=IDS[:1, :16]).last_hidden_state
    assert _rel(got, ref) <= 2e-5
    assert want.shape == (1, 16, 97)


def test_refusals_and_strict_false():
    from transformers.models.qwen3_vl import modeling_qwen3_vl as vm  # a vision tower not patched yet

    holder = torch.nn.Module()
    holder.tower = torch.nn.Module()
    holder.tower.rotary_pos_emb = vm.Qwen3VLVisionRotaryEmbedding(
        transformers.Qwen3VLVisionConfig(hidden_size=32, num_heads=2)
    )
    cls, cfg = _qwen2()
    holder.lm = cls(cfg)
    before = type(holder.lm.model.rotary_emb)
    with pytest.raises(ValueError, match="Qwen3VLVisionRotaryEmbedding cannot be patched"):
        patch_rope(holder)
    assert type(holder.lm.model.rotary_emb) is before  # nothing patched
    handle = patch_rope(holder, strict=False)
    assert handle.patched == ["lm.model.rotary_emb"]
    assert [n for n, _, _ in handle.left] == ["tower.rotary_pos_emb"]
    handle.remove()
    assert type(holder.lm.model.rotary_emb) is before
    with pytest.raises(TypeError, match="`model` must be a torch.nn.Module"):
        patch_rope(cfg)
    with pytest.raises(TypeError, match="`strict` must be a bool"):
        patch_rope(holder, strict=1)
    with pytest.raises(ValueError, match="rotary module itself"):
        patch_rope(holder.lm.model.rotary_emb)




# ---------------------------------------------------------------- diffusers
def _flux():
    from diffusers import FluxTransformer2DModel

    torch.manual_seed(0)
    model = FluxTransformer2DModel(
        patch_size=1, in_channels=4, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=32, axes_dims_rope=(4, 6, 6),
    ).eval()  # fmt: skip
    h, w, txt = 4, 5, 3
    img = torch.zeros(h, w, 3)
    img[..., 1] += torch.arange(h)[:, None] * 40  # far positions: the float32 angles are off
    img[..., 2] += torch.arange(w)[None, :] * 40
    g = torch.Generator().manual_seed(0)
    inputs = {
        "hidden_states": torch.randn(1, h * w, 4, generator=g),
        "encoder_hidden_states": torch.randn(1, txt, 32, generator=g),
        "pooled_projections": torch.randn(1, 32, generator=g),
        "timestep": torch.tensor([0.937]),
        "img_ids": img.reshape(-1, 3),
        "txt_ids": torch.zeros(txt, 3),
    }
    return model, inputs


def test_flux_pos_embed_and_timesteps():
    """Flux: FluxPosEmbed (float64 angles already: the same to float32 rounding)
    and the Timesteps of its time embedding (float32 angles in diffusers)."""
    pytest.importorskip("diffusers")
    model, inputs = _flux()
    with torch.no_grad():
        own = model(**inputs).sample
        ref = copy.deepcopy(model).double()(**{k: v.double() for k, v in inputs.items()}).sample
        with patch_rope(model) as handle:
            assert handle.patched == ["pos_embed", "time_text_embed.time_proj"]
            assert type(model.pos_embed).__name__ == "ExactAxesRotaryEmbedding"
            ours = model(**inputs).sample
            cos, sin = model.pos_embed(inputs["img_ids"])
        again = model(**inputs).sample
    assert torch.equal(again, own)
    assert _rel(ours, ref) <= max(_rel(own, ref), 2e-5)
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed

    want_cos, want_sin = FluxPosEmbed(10000, [4, 6, 6])(inputs["img_ids"])
    assert cos.dtype == want_cos.dtype == torch.float32
    assert float((cos - want_cos).abs().max()) < 5e-7 and float((sin - want_sin).abs().max()) < 5e-7
    # control: posenc's half layout would not be Flux's tables
    import posenc

    half, _ = posenc.rope_axes_cos_sin(inputs["img_ids"], (4, 6, 6), layout="half", dtype=torch.float32)
    assert float((half - want_cos).abs().max()) > 1e-2


def test_diffusers_timesteps_exact_where_diffusers_is_not():
    pytest.importorskip("diffusers")
    from diffusers.models.embeddings import Timesteps as DiffusersTimesteps

    holder = torch.nn.Module()
    holder.proj = DiffusersTimesteps(64, True, 1.0)
    t = torch.tensor([1.0, 250.0, 999.0])
    with torch.no_grad():
        own = holder.proj(t)
        with patch_rope(holder):
            ours = holder.proj(t)
    half = 32
    w = np.exp(-math.log(10000.0) * np.arange(half) / (half - 1.0))
    a = np.array([1.0, 250.0, 999.0])[:, None] * w
    exact = np.concatenate([np.cos(a), np.sin(a)], axis=-1)
    err_own = np.abs(own.double().numpy() - exact).max()
    err_ours = np.abs(ours.double().numpy() - exact).max()
    assert ours.dtype == own.dtype == torch.float32
    assert err_ours < 2.5e-7 < err_own, (err_ours, err_own)


def test_diffusers_module_not_patched_yet():
    pytest.importorskip("diffusers")
    from diffusers.models.transformers.transformer_cogview4 import CogView4RotaryPosEmbed

    holder = torch.nn.Module()
    holder.rope = CogView4RotaryPosEmbed(64, patch_size=2, rope_axes_dim=(256, 256))
    with pytest.raises(ValueError, match="CogView4RotaryPosEmbed cannot be patched"):
        patch_rope(holder)
    handle = patch_rope(holder, strict=False)
    assert handle.patched == [] and [n for n, _, _ in handle.left] == ["rope"]
