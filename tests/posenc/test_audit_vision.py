"""``posenc.audit_rope`` on the vision towers of transformers.

The towers of test_patch_rope_vision.py (Qwen2-VL, Qwen2.5-VL, Pixtral,
Llama 4; tiny, random).  The report's numbers are checked against a direct
computation: the module's own tables, run here, against ``cos`` / ``sin``
of the angles written from each tower's convention in NumPy float64
(positions up to the grid's side: 1023 for Qwen2-VL, whose config has no
image size; Pixtral's and Llama 4's ``image_size // patch_size``).  A tower
cast with ``.to(torch.bfloat16)`` is found with its ``inv_freq`` in
bfloat16 (Qwen2-VL, Pixtral) or its complex ``freqs_ci`` cast to its real
part (Llama 4); patched, at the floor.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

import posenc  # noqa: E402
from posenc.torch import patch_rope  # noqa: E402
from tests.posenc.test_patch_rope_vision import TOWERS, _axial, _tower  # noqa: E402

SPLIT = {"qwen2-vl": "blocks", "qwen2.5-vl": "blocks", "pixtral": "strided"}


def _direct_axial(module, positions, split):
    """Per position: the largest error of the module's tables at ids (p, p)
    against the float64 formula, and the floor of their dtype."""
    p = np.asarray(positions)
    ids = np.stack([p, p], axis=-1)
    a = _axial(ids, 10000.0, 16, split)
    c64, s64 = np.concatenate([np.cos(a)] * 2, -1), np.concatenate([np.sin(a)] * 2, -1)
    dt = module.inv_freq.dtype if hasattr(module, "inv_freq") else torch.float32
    with torch.no_grad():
        cos, sin = module(torch.zeros(1, dtype=dt), torch.as_tensor(ids))
    err = np.maximum(np.abs(cos.double().numpy() - c64).max(-1), np.abs(sin.double().numpy() - s64).max(-1))
    rc = torch.as_tensor(c64).to(cos.dtype).double().numpy()
    rs = torch.as_tensor(s64).to(cos.dtype).double().numpy()
    return err, np.maximum(np.abs(rc - c64).max(-1), np.abs(rs - s64).max(-1))


def _direct_llama4(module, n):
    """Per position (the larger id of a patch; 0 for the class token): the
    largest error of the module's ``freqs_ci`` and the float32 floor."""
    k = np.arange(n * n)
    x, y = k % n + 1, k // n + 1
    w = 10000.0 ** (-np.arange(0, 8, 2) / 8)
    a = np.concatenate([np.concatenate([x[:, None] * w, y[:, None] * w], -1), np.zeros((1, 8))])
    rows = np.concatenate([np.maximum(x, y), [0]])
    with torch.no_grad():
        f = module(torch.zeros(1)).reshape(n * n + 1, 8)
    c, s = (f.real, f.imag) if f.is_complex() else (f, torch.zeros_like(f))
    e = np.maximum(np.abs(c.double().numpy() - np.cos(a)).max(-1), np.abs(s.double().numpy() - np.sin(a)).max(-1))
    fl = np.maximum(
        np.abs(np.cos(a).astype(np.float32) - np.cos(a)).max(-1),
        np.abs(np.sin(a).astype(np.float32) - np.sin(a)).max(-1),
    )
    pos = np.unique(rows)
    return pos, np.array([e[rows == q].max() for q in pos]), np.array([fl[rows == q].max() for q in pos])


def _model(name, cast=None):
    build, _, attr = TOWERS[name][0]()
    model = _tower(build, torch.float32)
    if cast is not None:
        with warnings.catch_warnings():  # Llama 4: "discards the imaginary part" (warned once per process)
            warnings.simplefilter("ignore", UserWarning)
            model.to(cast)
    return model, attr


@pytest.mark.parametrize("name", ["qwen2-vl", "pixtral"])
def test_axial_towers_numbers(name):
    model, attr = _model(name)
    (audit,) = posenc.audit_rope(model)
    assert audit.audited and audit.name == attr and audit.dtype == "float32"
    side = 1024 if name == "qwen2-vl" else 8
    assert audit.positions[0] == 0 and audit.positions[-1] == side - 1
    err, floor = _direct_axial(getattr(model, attr), list(audit.positions), SPLIT[name])
    np.testing.assert_allclose(audit.error, err, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(audit.floor, floor, rtol=1e-6, atol=1e-12)
    if name == "qwen2-vl":  # positions up to 1023: the float32 angle product, above the floor
        assert audit.cause == "the float32 angle product" and audit.max_error > 1e-6
    # control: the other split's formula is not this tower's
    other = "strided" if SPLIT[name] == "blocks" else "blocks"
    wrong, _ = _direct_axial(getattr(model, attr), list(audit.positions), other)
    assert wrong.max() > 0.1


def test_llama4_numbers():
    model, attr = _model("llama4")
    (audit,) = posenc.audit_rope(model)
    pos, err, floor = _direct_llama4(model.rotary_embedding, 4)
    assert audit.audited and audit.positions == tuple(int(p) for p in pos) == (0, 1, 2, 3, 4)
    np.testing.assert_allclose(audit.error, err, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(audit.floor, floor, rtol=1e-6, atol=1e-12)
    assert audit.cause == "at the float32 floor"
    (some,) = posenc.audit_rope(model, positions=[0, 3, 99])
    assert some.positions == (0, 3)
    with pytest.raises(ValueError, match="`positions` must include positions of the grid"):
        posenc.audit_rope(model, positions=[99])


@pytest.mark.parametrize("name", ["qwen2-vl", "pixtral", "llama4"])
def test_cast_to_bfloat16_found_and_patched_at_the_floor(name):
    model, attr = _model(name, cast=torch.bfloat16)
    (audit,) = posenc.audit_rope(model)
    if name == "llama4":
        assert audit.cause == "freqs_ci cast to bfloat16: its imaginary part (the sines) dropped"
        pos, err, _ = _direct_llama4(model.rotary_embedding, 4)
        np.testing.assert_allclose(audit.error, err, rtol=1e-6, atol=1e-12)
        assert audit.max_error > 0.5
    else:
        assert audit.cause == "inv_freq stored in bfloat16"
        err, _ = _direct_axial(getattr(model, attr), list(audit.positions), SPLIT[name])
        np.testing.assert_allclose(audit.error, err, rtol=1e-6, atol=1e-12)
    with patch_rope(model):
        (fixed,) = posenc.audit_rope(model)
    assert fixed.module.startswith("Exact") and fixed.positions == audit.positions
    assert fixed.cause in ("at the float32 floor", "tables cast to bfloat16 (at the floor)"), fixed.cause
    assert max(e / max(f, 2.0**-26) for e, f in zip(fixed.error, fixed.floor)) <= 4.0
    assert fixed.max_error < audit.max_error


def test_config_and_not_audited():
    cfg = transformers.Qwen2VLConfig(vision_config={"embed_dim": 32, "num_heads": 2})
    report = posenc.audit_rope(cfg, positions=[0, 10, 500])
    vision = next(m for m in report if m.module == "Qwen2VLVisionRotaryEmbedding")
    assert vision.audited and vision.positions == (0, 10, 500)
    from transformers.models.qwen3_vl import modeling_qwen3_vl as m

    tower = m.Qwen3VLVisionRotaryEmbedding(transformers.Qwen3VLVisionConfig(hidden_size=32, num_heads=2))
    (audit,) = posenc.audit_rope(tower)
    assert not audit.audited and "does not reproduce yet" in audit.reason
