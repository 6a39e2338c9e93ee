"""``posenc.audit_rope`` on tiny random-init transformers models.

The report's numbers are checked against a direct float64 computation: the
module's own tables, run here, against ``cos`` / ``sin`` of ``p * w`` in
NumPy float64 with ``w`` the module's frequencies computed by transformers'
own code in float64 (its float32 casts lifted, ``data/make_hf_sweep.py``).
A Llama 3.1 model (head 128, theta 500000, llama3 scaling, context 1M) cast
with ``.to(torch.bfloat16)`` is found with its ``inv_freq`` in bfloat16
(error ~2 beyond ~1000 positions); the float32 original with the float32
angle product (within ``p * 2**-22`` of the exact tables); the patched
model at the floor.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

import posenc  # noqa: E402
from posenc.torch import patch_rope  # noqa: E402
from tests.posenc.test_hf_models import SWEEP, TINY  # noqa: E402

LLAMA31 = {
    "head_dim": 128,
    "max_position_embeddings": 131072,
    "rope_parameters": {
        "rope_type": "llama3",
        "rope_theta": 500000.0,
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
}


def _config(**kw):
    return transformers.LlamaConfig(**{**TINY, "num_hidden_layers": 1, **LLAMA31, **kw})


def _model(dtype=None):
    torch.manual_seed(0)
    model = transformers.LlamaModel(_config()).eval()
    return model if dtype is None else model.to(dtype)


def _direct(module, positions, dtype):
    """The module's tables at ``positions`` (run here) against float64 ones
    computed directly: per position, the largest error, and the floor."""
    with SWEEP.lifted_float32():
        lifted = type(module)(config=module.config)
    w = lifted.inv_freq.numpy()
    assert w.dtype == np.float64
    p = np.asarray(positions, dtype=np.float64)
    a = np.concatenate([p[:, None] * w, p[:, None] * w], axis=-1)
    c64, s64 = np.cos(a) * module.attention_scaling, np.sin(a) * module.attention_scaling
    with torch.no_grad():
        cos, sin = module(torch.zeros(1, dtype=dtype), torch.as_tensor(positions)[None])
    cos, sin = cos[0].double().numpy(), sin[0].double().numpy()
    err = np.maximum(np.abs(cos - c64).max(-1), np.abs(sin - s64).max(-1))
    rc = torch.as_tensor(c64).to(dtype).double().numpy()
    rs = torch.as_tensor(s64).to(dtype).double().numpy()
    floor = np.maximum(np.abs(rc - c64).max(-1), np.abs(rs - s64).max(-1))
    return err, floor


def _check_numbers(audit, module, dtype):
    err, floor = _direct(module, list(audit.positions), dtype)
    np.testing.assert_allclose(audit.error, err, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(audit.floor, floor, rtol=1e-6, atol=1e-9)


def test_llama31_float32_bfloat16_and_patched():
    model = _model()
    (a32,) = posenc.audit_rope(model)
    assert a32.name == "rotary_emb" and a32.module == "LlamaRotaryEmbedding" and a32.dtype == "float32"
    assert a32.cause == "the float32 angle product"
    assert a32.positions[0] == 0 and a32.positions[-1] == 131072 * 8 - 1
    _check_numbers(a32, model.rotary_emb, torch.float32)
    p = np.asarray(a32.positions, dtype=np.float64)
    assert (np.asarray(a32.error) <= p * 2.0**-22 + 2e-7).all()  # the float32 angle product's bound
    assert a32.max_error > 1e-2  # 4.8e-2 near 1M: far above the floor (3e-8)

    model.to(torch.bfloat16)
    (a16,) = posenc.audit_rope(model)
    assert a16.dtype == "bfloat16" and a16.cause == "inv_freq stored in bfloat16"
    _check_numbers(a16, model.rotary_emb, torch.bfloat16)
    bands = a16.bands()
    assert bands[0][:2] == (0, a16.positions[np.searchsorted(a16.positions, 128) - 1])
    beyond = [err for lo, _, err, _ in bands if lo >= 1000]
    assert min(beyond) > 1.9, bands  # cos of the opposite sign
    assert all(fl < 2e-3 for *_, fl in bands)

    with patch_rope(model):
        (ap,) = posenc.audit_rope(model)
    assert ap.module == "ExactRotaryEmbedding" and ap.cause == "tables cast to bfloat16 (at the floor)"
    assert (np.asarray(ap.error) <= np.asarray(ap.floor) * 1.0001 + 1e-12).all()

    # a model loaded in bfloat16 (inv_freq kept in float32): at the bfloat16 floor up to 8K positions,
    # beyond 32K the float32 angle product is worse than rounding an exact table to bfloat16
    (a_loaded,) = posenc.audit_rope(_model(), dtype="bfloat16", positions=np.arange(0, 8192, 64))
    assert a_loaded.cause == "tables cast to bfloat16 (at the floor)"
    (a_loaded,) = posenc.audit_rope(_model(), dtype="bfloat16")
    assert a_loaded.cause == "the float32 angle product"
    assert max(err for lo, _, err, _ in a_loaded.bands() if lo >= 2**16) > 4 * 2.0**-9
    print(str(a32), str(a16), str(ap), sep="\n")


def test_patched_float32_at_the_floor_and_rows():
    model = _model()
    with patch_rope(model):
        report = posenc.audit_rope(model, positions=[0, 5, 4096, 100000])
    (a,) = report
    assert a.cause == "at the float32 floor" and a.positions == (0, 5, 4096, 100000)
    rows = report.to_rows()
    assert [r["positions"] for r in rows] == ["0-5", "4096-4096", "100000-100000"]
    assert set(rows[0]) == {"module", "class", "dtype", "positions", "error", "floor", "cause"}
    assert all(r["error"] <= 4 * r["floor"] for r in rows)
    assert "at the float32 floor" in str(report) and "positions" in str(report)


def test_config_sources_give_the_modules_numbers(tmp_path):
    model = _model()
    want = posenc.audit_rope(model, positions=[0, 77, 5000])[0].error
    raw = {"model_type": "llama", **TINY, **LLAMA31}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    for source in (_config(), raw, path, str(tmp_path)):
        (a,) = posenc.audit_rope(source, positions=[0, 77, 5000])
        assert a.module == "LlamaRotaryEmbedding" and a.dtype == "float32"
        assert a.error == want
    (a,) = posenc.audit_rope({**raw, "dtype": "bfloat16"}, positions=[5000])
    assert a.dtype == "bfloat16"


def test_gemma3_layer_types():
    cfg = transformers.Gemma3TextConfig(
        **TINY, head_dim=16, rope_theta=1e6, rope_local_base_freq=1e4, sliding_window=32,
        layer_types=["sliding_attention", "full_attention"], max_position_embeddings=4096,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.Gemma3TextModel(cfg).to(torch.bfloat16)
    report = posenc.audit_rope(model)
    assert sorted(a.name for a in report) == ["rotary_emb[full_attention]", "rotary_emb[sliding_attention]"]
    assert all(a.cause == "inv_freq stored in bfloat16" for a in report)
    with patch_rope(model):
        assert all(a.cause.endswith("(at the floor)") for a in posenc.audit_rope(model))


def test_vision_tower_not_audited():
    from transformers.models.qwen3_vl import modeling_qwen3_vl as vm  # a vision tower posenc does not reproduce yet

    holder = torch.nn.Module()
    holder.rotary_pos_emb = vm.Qwen3VLVisionRotaryEmbedding(
        transformers.Qwen3VLVisionConfig(hidden_size=32, num_heads=2)
    )
    (a,) = posenc.audit_rope(holder)
    assert not a.audited and "vision tower" in a.reason and "not audited" in str(a)
    assert math.isnan(a.max_error)
    (row,) = a.to_rows()
    assert math.isnan(row["error"]) and row["cause"] == a.reason


def test_scaling_read_differently():
    model = _model()
    with torch.no_grad():
        model.rotary_emb.inv_freq.mul_(1.01)  # a modified module
    (a,) = posenc.audit_rope(model, positions=[0, 10, 1000])
    assert a.cause.startswith("a scaling read differently")


def test_refusals():
    with pytest.raises(TypeError, match="`dtype` must be a torch floating dtype"):
        posenc.audit_rope(_config(), dtype=3)
    with pytest.raises(ValueError, match="`positions` must be non-negative"):
        posenc.audit_rope(_config(), positions=[-1, 3])
    with pytest.raises(ValueError, match="without a `model_type`"):
        posenc.audit_rope({"hidden_size": 64})
    with pytest.raises(TypeError, match="`source` must be a transformers config"):
        posenc.audit_rope(object())
    assert str(posenc.audit_rope(torch.nn.Linear(2, 2))) == "no rotary module found"


def test_diffusers_flux_and_timesteps():
    """Flux's FluxPosEmbed (float64 angles: at the float32 floor) and the
    Timesteps of its time embedding (float32 angles: numbers checked against
    NumPy float64), then both patched (at the floor)."""
    pytest.importorskip("diffusers")
    from tests.posenc.test_patch_rope import _flux

    model, _ = _flux()
    pos_embed, time_proj = posenc.audit_rope(model)
    assert (pos_embed.name, pos_embed.module, pos_embed.cause) == ("pos_embed", "FluxPosEmbed", "at the float32 floor")
    assert time_proj.module == "Timesteps" and time_proj.cause == "the float32 angle product"
    assert time_proj.positions[-1] == 999
    t = np.asarray(time_proj.positions, dtype=np.float64)
    half = model.time_text_embed.time_proj.num_channels // 2
    w = np.exp(-math.log(10000.0) * np.arange(half) / half)  # Flux: downscale_freq_shift 0
    a = t[:, None] * w
    exact = np.concatenate([np.cos(a), np.sin(a)], axis=-1)  # flip_sin_to_cos
    with torch.no_grad():
        got = model.time_text_embed.time_proj(torch.as_tensor(t, dtype=torch.float32)).double().numpy()
    np.testing.assert_allclose(time_proj.error, np.abs(got - exact).max(-1), rtol=1e-6, atol=1e-12)
    with patch_rope(model):
        patched = posenc.audit_rope(model)
    assert [a.cause for a in patched] == ["at the float32 floor"] * 2
    assert [a.module for a in patched] == ["ExactAxesRotaryEmbedding", "Timesteps"]
