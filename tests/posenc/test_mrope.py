"""Multimodal RoPE against a float64 NumPy oracle written from the Qwen2-VL /
Qwen3-VL papers' description (each frequency turns with one axis of the
(temporal, height, width) position), on every backend, and against the
rotary modules and apply functions of transformers' Qwen2-VL, Qwen2.5-VL and
Qwen3-VL (when installed)."""

from __future__ import annotations

import numpy as np
import pytest

import posenc
from posenc import scaling


# ---------------------------------------------------------------- oracle
def ref_axes(section, interleaved):
    """The axis of each frequency, one loop over the frequencies."""
    half = sum(section)
    out = []
    for j in range(half):
        if not interleaved:
            out.append(0 if j < section[0] else 1 if j < section[0] + section[1] else 2)
        elif j % 3 == 1 and j < 3 * section[1]:
            out.append(1)
        elif j % 3 == 2 and j < 3 * section[2]:
            out.append(2)
        else:
            out.append(0)
    return out


def ref_mrope(pid, dim, section, interleaved=False, base=10000.0, layout="half", inv=None, attention=1.0):
    pid = np.asarray(pid, dtype=np.float64)
    w = np.array([base ** (-2 * i / dim) for i in range(dim // 2)]) if inv is None else np.asarray(inv)
    axes = ref_axes(section, interleaved)
    a = np.stack([pid[axes[j]] * w[j] for j in range(dim // 2)], axis=-1)
    a = np.concatenate([a, a], axis=-1) if layout == "half" else np.repeat(a, 2, axis=-1)
    return attention * np.cos(a), attention * np.sin(a)


PID = np.array(
    [
        [[0, 1, 2, 3, 3, 3, 3, 7, 8], [5, 6, 7, 8, 9, 10, 11, 12, 13]],
        [[0, 1, 2, 3, 3, 4, 4, 7, 8], [5, 6, 7, 8, 8, 9, 9, 12, 13]],
        [[0, 1, 2, 3, 4, 3, 4, 7, 8], [5, 6, 7, 8, 9, 8, 9, 12, 13]],
    ]
)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(
    ("section", "interleaved"), [((4, 6, 6), False), ((6, 5, 5), True), ((16, 0, 0), False), ((2, 7, 7), True)]
)
def test_against_oracle_every_backend(xp, layout, section, interleaved):
    cos, sin = xp.call(
        posenc.mrope_cos_sin,
        xp.asarray(PID),
        32,
        mrope_section=section,
        mrope_interleaved=interleaved,
        base=500.0,
        layout=layout,
    )
    ec, es = ref_mrope(PID, 32, section, interleaved, base=500.0, layout=layout)
    tol = 4 * xp.tol()
    xp.assert_close(cos, ec, atol=tol, dtype=xp.default_float)
    xp.assert_close(sin, es, atol=tol, dtype=xp.default_float)


def test_scaling_and_dtype(xp):
    s = scaling.YaRN(4.0, 8)
    cos, sin = xp.call(
        posenc.mrope_cos_sin,
        xp.asarray(PID[:, 0]),
        16,
        mrope_section=[2, 3, 3],
        scaling=s,
        dtype=xp.dtype("float32"),
    )
    inv = np.asarray(posenc.rope_frequencies(16, scaling=s))
    ec, es = ref_mrope(PID[:, 0], 16, (2, 3, 3), inv=inv, attention=s.attention_scaling())
    xp.assert_close(cos, ec, atol=1e-6, dtype=xp.dtype("float32"))
    xp.assert_close(sin, es, atol=1e-6, dtype=xp.dtype("float32"))


#: rows of an image straddling the original length 64: the temporal row
#: reaches 70, the height and width rows stay below 64
STRADDLE = np.stack([np.arange(60, 71), np.arange(0, 11), np.arange(5, 16)])


def ref_dynamic(dim, base, factor, orig, seq_len):
    # emozilla: base' = base * (s L / L0 - (s - 1)) ** (d / (d - 2)), L = max(seq_len, L0)
    length = max(seq_len, orig)
    b = base * (factor * length / orig - (factor - 1)) ** (dim / (dim - 2))
    return [b ** (-2 * i / dim) for i in range(dim // 2)]


@pytest.mark.parametrize("kind", ["dynamic", "longrope"])
def test_one_length_over_every_row(xp, kind):
    """A length-dependent scaling takes one length for the whole call,
    max(position_ids) + 1 over every row (transformers' dynamic_rope_update
    and its docstring): 71 here, although the height and width rows alone
    stay below the original length."""
    short, long = [1.0 + 0.1 * i for i in range(8)], [2.0 + 0.5 * i for i in range(8)]
    if kind == "dynamic":
        s = scaling.DynamicNTK(2.0, 64)
        inv = ref_dynamic(16, 500.0, 2.0, 64, 71)
        per_row = ref_dynamic(16, 500.0, 2.0, 64, 11)  # the height row read alone: unscaled
    else:
        s = scaling.LongRoPE(short, long, 64, factor=4.0)
        inv = [1.0 / (long[i] * 500.0 ** (2 * i / 16)) for i in range(8)]
        per_row = [1.0 / (short[i] * 500.0 ** (2 * i / 16)) for i in range(8)]
    att = s.attention_scaling(71)
    ec, es = ref_mrope(STRADDLE, 16, (2, 3, 3), inv=inv, attention=att)
    control, _ = ref_mrope(STRADDLE, 16, (2, 3, 3), inv=per_row, attention=att)
    assert np.abs(control - ec).max() > 1e-2  # the per-row reading is clearly another table
    kw = {"mrope_section": [2, 3, 3], "base": 500.0, "scaling": s}
    pid = xp.asarray(STRADDLE)
    if not xp.host:  # the values are not read (traced, lazy, device): seq_len is required
        with pytest.raises(ValueError, match="`seq_len` is required"):
            xp.call(posenc.mrope_cos_sin, pid, 16, **kw)
    else:
        cos, sin = xp.call(posenc.mrope_cos_sin, pid, 16, **kw)
        xp.assert_close(cos, ec, atol=4 * xp.tol(), dtype=xp.default_float)
        xp.assert_close(sin, es, atol=4 * xp.tol(), dtype=xp.default_float)
    cos, sin = xp.call(posenc.mrope_cos_sin, pid, 16, **kw, seq_len=71)
    xp.assert_close(cos, ec, atol=4 * xp.tol(), dtype=xp.default_float)
    xp.assert_close(sin, es, atol=4 * xp.tol(), dtype=xp.default_float)


@pytest.mark.parametrize("kind", ["complex64", "bool"])
def test_ids_of_another_kind_with_a_length_dependent_scaling(xp, kind):
    """Complex or boolean ids are refused by name, not read for the
    scaling's length first (which took the real part of complex ids, with
    NumPy's ComplexWarning, before the refusal); warnings are errors here."""
    pid = xp.asarray(np.asarray(STRADDLE) != 0) if kind == "bool" else xp.asarray(STRADDLE, dtype=kind)
    with pytest.raises(TypeError, match=r"`position_ids` must be an array of integer or real floating dtype"):
        xp.call(posenc.mrope_cos_sin, pid, 16, mrope_section=[2, 3, 3], scaling=scaling.DynamicNTK(2.0, 64))


def test_equal_rows_are_plain_rope():
    p = np.arange(50)
    cos, sin = posenc.mrope_cos_sin(np.stack([p, p, p]), 64, mrope_section=[16, 8, 8], mrope_interleaved=True)
    rc, rs = posenc.rope_cos_sin(p, 64)
    np.testing.assert_array_equal(cos, rc)
    np.testing.assert_array_equal(sin, rs)


def test_from_hf_splats_into_mrope_only():
    cfg = {
        "model_type": "qwen2_vl",
        "hidden_size": 64,
        "num_attention_heads": 2,
        "rope_scaling": {"type": "mrope", "mrope_section": [4, 6, 6]},
    }
    kw = scaling.from_hf(cfg)
    assert kw == {"dim": 32, "base": 10000.0, "scaling": None, "mrope_section": (4, 6, 6), "mrope_interleaved": False}
    cos, _ = posenc.mrope_cos_sin(PID, **kw)
    np.testing.assert_allclose(cos, ref_mrope(PID, 32, (4, 6, 6))[0], atol=1e-13)
    with pytest.raises(TypeError, match="mrope_section"):
        posenc.rope_cos_sin(PID[0], **kw)
    # sections that do not fill the head: both arguments named (either may be the wrong one)
    short = r"`mrope_section` must sum to `dim` // 2 = 16 for `dim` = 32, got \[4, 6, 5\]"
    with pytest.raises(ValueError, match=short):
        posenc.mrope_cos_sin(PID, 32, mrope_section=(4, 6, 5))
    # the Qwen3-VL family interleaves, with the modeling code's sections when the config has none
    kw = scaling.from_hf({"model_type": "qwen3_vl_text", "head_dim": 128})
    assert kw["mrope_section"] == (24, 20, 20) and kw["mrope_interleaved"] is True
    # other recombinations are refused by name
    with pytest.raises(ValueError, match="ernie4_5_vl_moe"):
        scaling.from_hf(
            {"model_type": "ernie4_5_vl_moe", "head_dim": 128, "rope_parameters": {"mrope_section": [22, 22, 20]}}
        )


@pytest.mark.parametrize(
    ("kw", "exc", "name"),
    [
        ({"mrope_section": [4, 6, 5]}, ValueError, "mrope_section"),
        ({"mrope_section": [16]}, ValueError, "mrope_section"),
        ({"mrope_section": "466"}, TypeError, "mrope_section"),
        ({"mrope_section": [4, 6, -6]}, ValueError, "mrope_section"),
        ({"mrope_section": [4, 6, 6], "mrope_interleaved": 1}, TypeError, "mrope_interleaved"),
        ({"mrope_section": [4, 6, 6], "layout": "gptj"}, ValueError, "layout"),
    ],
)
def test_bad_arguments(kw, exc, name):
    with pytest.raises(exc, match=name):
        posenc.mrope_cos_sin(PID, 32, **kw)


def test_bad_position_ids():
    with pytest.raises(ValueError, match=r"`position_ids` must have shape \(3, ...\)"):
        posenc.mrope_cos_sin(PID[:2], 32, mrope_section=[4, 6, 6])
    with pytest.raises(ValueError, match="`position_ids`"):
        posenc.mrope_cos_sin(np.zeros(()), 32, mrope_section=[4, 6, 6])
    with pytest.raises(TypeError, match="`position_ids`"):
        posenc.mrope_cos_sin(5, 32, mrope_section=[4, 6, 6])


# ---------------------------------------------------------------- transformers
QWEN = [
    ("qwen2_vl", "Qwen2VLTextConfig", "Qwen2VLRotaryEmbedding", [4, 6, 6], False),
    ("qwen2_5_vl", "Qwen2_5_VLTextConfig", "Qwen2_5_VLRotaryEmbedding", [4, 6, 6], False),
    ("qwen3_vl", "Qwen3VLTextConfig", "Qwen3VLTextRotaryEmbedding", [6, 5, 5], True),
]


@pytest.mark.parametrize(("model", "config_name", "rotary_name", "section", "interleaved"), QWEN)
def test_transformers_module_and_apply(model, config_name, rotary_name, section, interleaved):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    mod = pytest.importorskip(f"transformers.models.{model}.modeling_{model}")
    cfg = getattr(transformers, config_name)(
        hidden_size=64,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=32,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 1000.0,
            "mrope_section": section,
            "mrope_interleaved": interleaved,
        },
    )
    kw = scaling.from_hf(cfg)
    assert kw["mrope_section"] == tuple(section) and kw["mrope_interleaved"] is interleaved
    pid = torch.tensor(PID)
    x = torch.zeros(1, dtype=torch.float32)
    cos_h, sin_h = getattr(mod, rotary_name)(cfg)(x, pid)
    cos, sin = posenc.mrope_cos_sin(pid, **kw, dtype=torch.float32)
    # transformers rounds p * w to float32
    torch.testing.assert_close(cos, cos_h, atol=2e-6, rtol=0)
    torch.testing.assert_close(sin, sin_h, atol=2e-6, rtol=0)
    # and the rotation itself: transformers' apply on float64 q / k with posenc's tables
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 2, 9, 32, generator=g, dtype=torch.float64)
    k = torch.randn(2, 2, 9, 32, generator=g, dtype=torch.float64)
    c64, s64 = posenc.mrope_cos_sin(pid, **kw, dtype=torch.float64)
    ec, es = ref_mrope(PID, 32, section, interleaved, base=1000.0)
    np.testing.assert_allclose(c64.numpy(), ec, atol=1e-13)
    qh, kh = mod.apply_rotary_pos_emb(q, k, c64, s64)
    qp = posenc.apply_rope(q, c64[:, None], s64[:, None])
    kp = posenc.apply_rope(k, c64[:, None], s64[:, None])
    torch.testing.assert_close(qp, qh, atol=1e-13, rtol=0)
    torch.testing.assert_close(kp, kh, atol=1e-13, rtol=0)
