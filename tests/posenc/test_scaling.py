"""RoPE context-extension scalings.

Oracles:

* float64 formulas written here from the papers and the reference code of
  each method (plain Python loops over the frequencies);
* Hugging Face ``transformers``: the golden values of
  ``data/rope_hf_golden.json`` (made by ``data/make_rope_hf_golden.py``,
  always checked) and the installed ``transformers`` itself (when present).

A note on YaRN: the paper writes the ramp as linear in the number of
rotations ``r = L / lambda``; the reference code (and Hugging Face) ramp
linearly in the dimension index between the dimensions where ``r`` equals
``beta_fast`` and ``beta_slow``.  posenc follows the code; the oracle below
is written in index space accordingly.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import posenc
from posenc import scaling

DATA = Path(__file__).parent / "data"
GOLDEN = json.loads((DATA / "rope_hf_golden.json").read_text())["configs"]


# ---------------------------------------------------------------- oracles
def ref_default(dim, base):
    return [1.0 / base ** (2 * i / dim) for i in range(dim // 2)]


def ref_linear(dim, base, factor):
    # Chen et al. 2023: positions divided by s, i.e. frequencies divided by s
    return [w / factor for w in ref_default(dim, base)]


def ref_ntk(dim, base, factor):
    # bloc97: base' = base * s^(d / (d - 2))
    return ref_default(dim, base * factor ** (dim / (dim - 2)))


def ref_dynamic(dim, base, factor, orig, seq_len):
    # emozilla: base' = base * (s * L / L0 - (s - 1))^(d / (d - 2)), L = max(seq_len, L0)
    length = orig if seq_len is None else max(seq_len, orig)
    return ref_default(dim, base * (factor * length / orig - (factor - 1)) ** (dim / (dim - 2)))


def ref_yarn(dim, base, factor, orig, beta_fast=32.0, beta_slow=1.0, truncate=True):
    # YaRN reference code: the dimension index where a wavelength makes
    # `n` rotations in L0 is d * ln(L0 / (2 pi n)) / (2 ln base)
    def index(n):
        return dim * math.log(orig / (n * 2 * math.pi)) / (2 * math.log(base))

    lo, hi = index(beta_fast), index(beta_slow)
    if truncate:
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, dim - 1)
    if lo == hi:
        hi += 0.001
    out = []
    for i, w in enumerate(ref_default(dim, base)):
        gamma = min(max((i - lo) / (hi - lo), 0.0), 1.0)  # 0: keep, 1: interpolate
        out.append((1 - gamma) * w + gamma * w / factor)
    return out


def ref_yarn_attention(factor, mscale=None, mscale_all_dim=None):
    def m(s, a=1.0):
        return 1.0 if s <= 1 else 0.1 * a * math.log(s) + 1.0

    if mscale and mscale_all_dim:
        return m(factor, mscale) / m(factor, mscale_all_dim)
    return m(factor)


def ref_llama3(dim, base, factor, orig, low=1.0, high=4.0):
    # Meta's llama-models apply_scaling, one frequency at a time
    low_wavelen, high_wavelen = orig / low, orig / high
    out = []
    for w in ref_default(dim, base):
        wavelen = 2 * math.pi / w
        if wavelen < high_wavelen:
            out.append(w)
        elif wavelen > low_wavelen:
            out.append(w / factor)
        else:
            smooth = (orig / wavelen - low) / (high - low)
            out.append((1 - smooth) * w / factor + smooth * w)
    return out


def ref_longrope(dim, base, factors):
    # Phi-3 / LongRoPE: inv_freq = 1 / (lambda_i * base^(2i/d))
    return [1.0 / (f * base ** (2 * i / dim)) for i, f in enumerate(factors)]


def ref_longrope_attention(factor, orig):
    return 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(orig))


SHORT = [1.0 + 0.1 * i for i in range(8)]
LONG = [2.0 + 0.7 * i for i in range(8)]

#: (scaling, oracle for dim 16 / base 500 at seq_len)
CASES = {
    "linear": (scaling.Linear(3.0), lambda L: ref_linear(16, 500.0, 3.0), 1.0),
    "ntk": (scaling.NTK(4.0), lambda L: ref_ntk(16, 500.0, 4.0), 1.0),
    "dynamic": (scaling.DynamicNTK(2.0, 64), lambda L: ref_dynamic(16, 500.0, 2.0, 64, L), 1.0),
    "yarn": (scaling.YaRN(8.0, 64), lambda L: ref_yarn(16, 500.0, 8.0, 64), ref_yarn_attention(8.0)),
    "yarn_nt": (
        scaling.YaRN(5.0, 100, beta_fast=8, beta_slow=0.5, truncate=False),
        lambda L: ref_yarn(16, 500.0, 5.0, 100, 8.0, 0.5, truncate=False),
        ref_yarn_attention(5.0),
    ),
    "llama3": (scaling.Llama3(8.0, 64), lambda L: ref_llama3(16, 500.0, 8.0, 64), 1.0),
    "longrope": (
        scaling.LongRoPE(SHORT, LONG, 64, factor=4.0),
        lambda L: ref_longrope(16, 500.0, LONG if L is not None and L > 64 else SHORT),
        ref_longrope_attention(4.0, 64),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seq_len", [None, 50, 200])
def test_frequencies_against_formulas(name, seq_len):
    s, oracle, attention = CASES[name]
    got = posenc.rope_frequencies(16, base=500.0, scaling=s, seq_len=seq_len)
    np.testing.assert_allclose(got, oracle(seq_len), rtol=1e-14)
    assert s.attention_scaling(seq_len) == pytest.approx(attention, rel=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_frequencies_every_backend(xp, name):
    s, oracle, _ = CASES[name]
    got = xp.call(posenc.rope_frequencies, 16, base=500.0, scaling=s, seq_len=100, xp=xp.ns, device=xp.device)
    xp.assert_close(got, oracle(100), rtol=xp.tol(), dtype=xp.default_float)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cos_sin_carry_attention_factor(xp, name):
    s, oracle, attention = CASES[name]
    cos, sin = xp.call(posenc.rope_cos_sin, 100, 16, base=500.0, scaling=s, xp=xp.ns, device=xp.device)
    # an int n of positions means seq_len = n for the length-dependent scalings
    a = np.arange(100)[:, None] * np.array(oracle(100))
    a = np.concatenate([a, a], axis=-1)
    tol = 4 * xp.tol() * max(attention, 1.0)
    xp.assert_close(cos, attention * np.cos(a), atol=tol)
    xp.assert_close(sin, attention * np.sin(a), atol=tol)


# ---------------------------------------------------------------- specific behaviour
def test_dynamic_is_unscaled_up_to_original_length():
    s = scaling.DynamicNTK(4.0, 1024)
    plain = posenc.rope_frequencies(64)
    for seq_len in (None, 1, 1000, 1024):
        np.testing.assert_array_equal(posenc.rope_frequencies(64, scaling=s, seq_len=seq_len), plain)
    longer = posenc.rope_frequencies(64, scaling=s, seq_len=4096)
    assert longer[0] == 1.0 and np.all(longer[1:] < plain[1:])
    # the base grows to base * (4 * 4096/1024 - 3)^(64/62)
    np.testing.assert_allclose(longer, ref_default(64, 10000.0 * 13.0 ** (64 / 62)), rtol=1e-14)


def test_ntk_and_dynamic_dim2():
    for s in (scaling.NTK(2.0), scaling.DynamicNTK(2.0, 8)):
        np.testing.assert_array_equal(posenc.rope_frequencies(2, scaling=s, seq_len=100), [1.0])


def test_yarn_keeps_high_and_interpolates_low_frequencies():
    s = scaling.YaRN(16.0, 2048)
    w = posenc.rope_frequencies(128, scaling=s)
    plain = posenc.rope_frequencies(128)
    ratio = w / plain
    assert ratio[0] == 1.0 and ratio[-1] == pytest.approx(1 / 16, rel=1e-14)
    assert np.all(np.diff(ratio) <= 1e-15)  # monotone ramp from 1 down to 1/s


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({}, 0.1 * math.log(40) + 1),
        ({"mscale": 1.0, "mscale_all_dim": 1.0}, 1.0),
        ({"mscale": 0.707, "mscale_all_dim": 0.707}, 1.0),
        ({"mscale": 1.0, "mscale_all_dim": 0.8}, (0.1 * math.log(40) + 1) / (0.08 * math.log(40) + 1)),
        ({"mscale": 1.0}, 0.1 * math.log(40) + 1),  # both needed (Hugging Face's rule)
        ({"mscale": 1.0, "mscale_all_dim": 0.0}, 0.1 * math.log(40) + 1),
        ({"attention_factor": 0.5}, 0.5),
    ],
)
def test_yarn_attention_factor(kw, expected):
    assert scaling.YaRN(40.0, 4096, **kw).attention_scaling() == pytest.approx(expected, rel=1e-15)


def test_yarn_factor_at_most_one_has_no_temperature():
    assert scaling.YaRN(1.0, 4096).attention_scaling() == 1.0
    assert scaling.YaRN(0.5, 4096).attention_scaling() == 1.0


def test_llama3_bands():
    s = scaling.Llama3(8.0, 8192)
    w = posenc.rope_frequencies(128, base=500000.0, scaling=s)
    plain = posenc.rope_frequencies(128, base=500000.0)
    wavelen = 2 * np.pi / plain
    np.testing.assert_array_equal(w[wavelen < 2048], plain[wavelen < 2048])
    np.testing.assert_allclose(w[wavelen > 8192], plain[wavelen > 8192] / 8, rtol=1e-15)
    mid = (wavelen >= 2048) & (wavelen <= 8192)
    assert mid.sum() > 0 and np.all((w[mid] < plain[mid]) & (w[mid] > plain[mid] / 8))
    np.testing.assert_allclose(w, ref_llama3(128, 500000.0, 8.0, 8192), rtol=1e-14)


def test_longrope_switch_and_attention():
    s = scaling.LongRoPE(SHORT, LONG, 64, factor=4.0)
    with pytest.raises(ValueError, match=r"must have `dim` // 2 = 4 entries for `dim` = 8, got 8"):
        posenc.rope_frequencies(8, scaling=s)  # factors for dim 16: both arguments named
    short = posenc.rope_frequencies(16, scaling=s)
    np.testing.assert_array_equal(posenc.rope_frequencies(16, scaling=s, seq_len=64), short)
    long = posenc.rope_frequencies(16, scaling=s, seq_len=65)
    np.testing.assert_allclose(long, ref_longrope(16, 10000.0, LONG), rtol=1e-15)
    # the table of n > L0 positions uses the long factors for every row (Hugging Face)
    cos_long, _ = posenc.rope_cos_sin(65, 16, scaling=s)
    cos_short, _ = posenc.rope_cos_sin(64, 16, scaling=s)
    a = s.attention_scaling()
    np.testing.assert_allclose(cos_long[:64, :8], a * np.cos(np.arange(64)[:, None] * long), atol=1e-13)
    np.testing.assert_allclose(cos_short[:, :8], a * np.cos(np.arange(64)[:, None] * short), atol=1e-13)
    # an array of positions: seq_len defaults to max(positions) + 1 (Hugging Face)
    c2, _ = posenc.rope_cos_sin(np.arange(65), 16, scaling=s)
    np.testing.assert_allclose(c2, cos_long, atol=1e-13)
    c2, _ = posenc.rope_cos_sin(np.arange(64), 16, scaling=s)
    np.testing.assert_allclose(c2, cos_short, atol=1e-13)
    c3, _ = posenc.rope_cos_sin(np.arange(65), 16, scaling=s, seq_len=65)
    np.testing.assert_allclose(c3, cos_long, atol=1e-13)
    assert a == pytest.approx(math.sqrt(1 + math.log(4) / math.log(64)))
    assert scaling.LongRoPE(SHORT, LONG, 64).attention_scaling() == 1.0
    assert scaling.LongRoPE(SHORT, LONG, 64, factor=4.0, attention_factor=1.3).attention_scaling() == 1.3


def test_dataclasses_are_frozen_hashable_and_normalised():
    s = scaling.LongRoPE(np.array(SHORT), LONG, 64)
    assert s.short_factor == tuple(SHORT) and isinstance(s.long_factor, tuple)
    assert hash(s) == hash(scaling.LongRoPE(SHORT, LONG, 64))
    y = scaling.YaRN(4, 128, beta_fast=16)
    assert isinstance(y.factor, float) and y.beta_fast == 16.0
    for obj in (y, s, scaling.Linear(2.0), scaling.Llama3(8.0, 64)):
        assert isinstance(obj, scaling.Scaling)
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.factor = 3.0


# ---------------------------------------------------------------- Hugging Face parity
#: transformers computes base ** (2i / d) in float32: a relative error of
#: about ln(base) * 2**-24 on each frequency
RTOL_HF = 2e-6


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_transformers_frequencies(name):
    g = GOLDEN[name]
    kw = scaling.from_hf(g["config"])
    for seq_len, expected in g["inv_freq"].items():
        seq = None if seq_len == "None" else int(seq_len)
        got = posenc.rope_frequencies(**kw, seq_len=seq)
        np.testing.assert_allclose(got, expected, rtol=RTOL_HF, err_msg=f"{name} seq_len={seq}")
    attention = 1.0 if kw["scaling"] is None else kw["scaling"].attention_scaling()
    assert attention == pytest.approx(g["attention"], rel=1e-12)


@pytest.mark.parametrize("name", sorted(k for k, v in GOLDEN.items() if "module" in v))
def test_golden_transformers_module(name):
    """The rotary module's cos / sin at positions 0..n-1: the dynamic base and
    the LongRoPE long / short switch follow n."""
    g = GOLDEN[name]
    m = g["module"]
    kw = scaling.from_hf(g["config"])
    cos, sin = posenc.rope_cos_sin(m["n"], **kw, dtype=np.float32)
    # transformers rounds the angle p * w to float32: up to ~n * 1.2e-7
    atol = m["n"] * 1.5e-7 + 1e-6
    np.testing.assert_allclose(cos[m["rows"]], m["cos"], atol=atol, err_msg=name)
    np.testing.assert_allclose(sin[m["rows"]], m["sin"], atol=atol, err_msg=name)


def _generator():
    spec = importlib.util.spec_from_file_location("make_rope_hf_golden", DATA / "make_rope_hf_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_live_transformers(name):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    ref = _generator().hf_reference(name)
    kw = scaling.from_hf(ref["config"])
    for seq_len, expected in ref["inv_freq"].items():
        seq = None if seq_len == "None" else int(seq_len)
        np.testing.assert_allclose(posenc.rope_frequencies(**kw, seq_len=seq), expected, rtol=RTOL_HF)
    attention = 1.0 if kw["scaling"] is None else kw["scaling"].attention_scaling()
    assert attention == pytest.approx(ref["attention"], rel=1e-12)
    if "module" in ref:
        m = ref["module"]
        cos, sin = posenc.rope_cos_sin(m["n"], **kw, dtype=np.float32)
        atol = m["n"] * 1.5e-7 + 1e-6
        np.testing.assert_allclose(cos[m["rows"]], m["cos"], atol=atol)
        np.testing.assert_allclose(sin[m["rows"]], m["sin"], atol=atol)


def test_live_transformers_config_object():
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        hidden_size=64,
        num_attention_heads=2,
        max_position_embeddings=4096,
        rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
    )
    kw = scaling.from_hf(cfg)
    assert kw["dim"] == 32 and kw["base"] == 10000.0
    assert kw["scaling"] == scaling.YaRN(4.0, 1024)


# ---------------------------------------------------------------- from_hf
def test_from_hf_keys():
    base = {"hidden_size": 512, "num_attention_heads": 8, "max_position_embeddings": 4096}
    assert scaling.from_hf(base) == {"dim": 64, "base": 10000.0, "scaling": None}
    assert scaling.from_hf({**base, "head_dim": 128, "rope_theta": 1e6})["dim"] == 128
    assert scaling.from_hf({**base, "rope_theta": 1e6})["base"] == 1e6
    # rope_parameters' theta wins over the top level (transformers 5)
    cfg = {**base, "rope_theta": 1e6, "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}}
    assert scaling.from_hf(cfg)["base"] == 5e5
    # older rope_scaling with "type"
    cfg = {**base, "rope_scaling": {"type": "linear", "factor": 2.0}}
    assert scaling.from_hf(cfg)["scaling"] == scaling.Linear(2.0)
    cfg = {**base, "rope_scaling": {"type": "dynamic", "factor": 2.0}}
    assert scaling.from_hf(cfg)["scaling"] == scaling.DynamicNTK(2.0, 4096)
    # partial rotary: partial_rotary_factor (top level or in the parameters), rotary_pct, rotary_dim
    assert scaling.from_hf({**base, "partial_rotary_factor": 0.5})["dim"] == 32
    cfg = {**base, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.25}}
    assert scaling.from_hf(cfg)["dim"] == 16
    assert scaling.from_hf({**base, "rotary_pct": 0.25})["dim"] == 16
    assert scaling.from_hf({**base, "rotary_dim": 24})["dim"] == 24
    # yarn: factor from the lengths when missing, Phi-3's top-level original length wins
    cfg = {**base, "rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 1024}}
    assert scaling.from_hf(cfg)["scaling"] == scaling.YaRN(4.0, 1024)
    cfg = {
        **base,
        "original_max_position_embeddings": 2048,
        "rope_scaling": {"type": "su", "short_factor": [1.0] * 32, "long_factor": [2.0] * 32},
    }
    s = scaling.from_hf(cfg)["scaling"]
    assert s == scaling.LongRoPE([1.0] * 32, [2.0] * 32, 2048, factor=2.0)
    # a None rope_scaling is the default RoPE
    assert scaling.from_hf({**base, "rope_scaling": None})["scaling"] is None


def test_from_hf_layer_types():
    cfg = {
        "head_dim": 32,
        "rope_parameters": {
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
        },
    }
    assert scaling.from_hf(cfg, layer_type="full_attention") == {"dim": 32, "base": 1e6, "scaling": scaling.Linear(8.0)}
    assert scaling.from_hf(cfg, layer_type="sliding_attention")["scaling"] is None
    with pytest.raises(ValueError, match="layer_type"):
        scaling.from_hf(cfg)
    with pytest.raises(ValueError, match="layer_type"):
        scaling.from_hf(cfg, layer_type="global")
    with pytest.raises(ValueError, match="layer_type"):
        scaling.from_hf({"head_dim": 8}, layer_type="full_attention")
    # not a str: a TypeError with a short description, never a whole array
    for bad in (np.zeros(1000), 3, ["full_attention"]):
        with pytest.raises(TypeError, match="`layer_type` must be a str") as info:
            scaling.from_hf(cfg, layer_type=bad)
        assert len(str(info.value)) < 200
    with pytest.raises(ValueError, match="`mscale_all_dim`"):
        # 0.1 * mscale_all_dim * log(factor) + 1 = 0: the YaRN ratio would divide by zero
        scaling.YaRN(math.e, 16, mscale=1.0, mscale_all_dim=-10.0).attention_scaling()
    with pytest.raises(TypeError, match=r"`truncate` must be a bool, got an array of shape \(1000,\)"):
        scaling.YaRN(2.0, 100, truncate=np.zeros(1000))


def test_from_hf_round_trip(xp):
    cfg = {
        "head_dim": 16,
        "max_position_embeddings": 1024,
        "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256},
    }
    cos, sin = xp.call(posenc.rope_cos_sin, 10, **scaling.from_hf(cfg), xp=xp.ns, device=xp.device)
    a = np.arange(10)[:, None] * np.array(ref_yarn(16, 10000.0, 4.0, 256))
    a = np.concatenate([a, a], axis=-1)
    att = ref_yarn_attention(4.0)
    xp.assert_close(cos, att * np.cos(a), atol=4 * xp.tol())
    xp.assert_close(sin, att * np.sin(a), atol=4 * xp.tol())


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: scaling.Linear(0.0), ValueError, "factor"),
        (lambda: scaling.Linear(-2.0), ValueError, "factor"),
        (lambda: scaling.Linear("2"), TypeError, "factor"),
        (lambda: scaling.NTK(float("inf")), ValueError, "factor"),
        (lambda: scaling.DynamicNTK(0.0, 10), ValueError, "factor"),
        (lambda: scaling.DynamicNTK(2.0, 0), ValueError, "original_max_positions"),
        (lambda: scaling.DynamicNTK(2.0, 10.5), TypeError, "original_max_positions"),
        (lambda: scaling.YaRN(-1.0, 10), ValueError, "factor"),
        (lambda: scaling.YaRN(2.0, 10, beta_fast=0), ValueError, "beta_fast"),
        (lambda: scaling.YaRN(2.0, 10, beta_slow=-1), ValueError, "beta_slow"),
        (lambda: scaling.YaRN(2.0, 10, attention_factor=0.0), ValueError, "attention_factor"),
        (lambda: scaling.YaRN(2.0, 10, truncate=1), TypeError, "truncate"),
        (lambda: scaling.YaRN(2.0, 10, mscale="1"), TypeError, "mscale"),
        (lambda: scaling.Llama3(0.0, 10), ValueError, "factor"),
        (lambda: scaling.Llama3(8.0, 10, low_freq_factor=4.0, high_freq_factor=2.0), ValueError, "high_freq_factor"),
        (lambda: scaling.Llama3(8.0, 10, low_freq_factor=-1.0), ValueError, "low_freq_factor"),
        (lambda: scaling.LongRoPE([1.0, 2.0], [1.0], 10), ValueError, "long_factor"),
        (lambda: scaling.LongRoPE([], [], 10), ValueError, "short_factor"),
        (lambda: scaling.LongRoPE([1.0, 0.0], [1.0, 2.0], 10), ValueError, "short_factor"),
        (lambda: scaling.LongRoPE("ab", [1.0, 2.0], 10), TypeError, "short_factor"),
        (lambda: scaling.LongRoPE([1.0], [1.0], 10, factor=0.0), ValueError, "factor"),
        (lambda: scaling.LongRoPE([1.0], [1.0], 1, factor=2.0), ValueError, "original_max_positions"),
        (
            lambda: posenc.rope_frequencies(16, scaling=scaling.LongRoPE([1.0] * 4, [1.0] * 4, 10)),
            ValueError,
            "short_factor",
        ),
        (lambda: posenc.rope_frequencies(16, scaling=scaling.YaRN(2.0, 10), base=1.0), ValueError, "base"),
        (lambda: posenc.rope_frequencies(16, scaling=2.0), TypeError, "scaling"),
        (lambda: posenc.rope_frequencies(16, scaling="linear"), TypeError, "scaling"),
        (lambda: posenc.rope_frequencies(16, scaling=scaling.DynamicNTK(2.0, 8), seq_len=0), ValueError, "seq_len"),
        (lambda: posenc.rope_frequencies(16, seq_len=2.5), TypeError, "seq_len"),
        (lambda: scaling.Linear(2.0).attention_scaling(-1), ValueError, "seq_len"),
        (lambda: scaling.from_hf({"head_dim": 8, "rope_scaling": {"rope_type": "mrope"}}), ValueError, "mrope"),
        (lambda: scaling.from_hf({"head_dim": 8, "rope_scaling": {"type": "axial"}}), ValueError, "'axial'"),
        (lambda: scaling.Proportional(1.5), ValueError, "fraction"),
        (lambda: scaling.Proportional(0.5, factor=0.0), ValueError, "factor"),
        (
            lambda: scaling.from_hf({"model_type": "minimax_m3_vl_text", "head_dim": 8, "rotary_dim": 4}),
            ValueError,
            "rotary_dim",
        ),
        (lambda: scaling.from_hf({"head_dim": 8, "rope_scaling": {"rope_type": "linear"}}), ValueError, "factor"),
        (
            lambda: scaling.from_hf({"head_dim": 8, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}),
            ValueError,
            "max_position_embeddings",
        ),
        (
            lambda: scaling.from_hf({"head_dim": 8, "rope_scaling": {"rope_type": "yarn", "factor": 2.0}}),
            ValueError,
            "max_position_embeddings",
        ),
        (lambda: scaling.from_hf({"hidden_size": 64}), ValueError, "num_attention_heads"),
        (lambda: scaling.from_hf({"head_dim": 9}), ValueError, "rotary"),
        (lambda: scaling.from_hf({"head_dim": 10, "partial_rotary_factor": 0.5}), ValueError, "partial_rotary_factor"),
        (lambda: scaling.from_hf({"head_dim": 8, "rope_theta": -1.0}), ValueError, "rope_theta"),
        (lambda: scaling.from_hf({"head_dim": 8, "rope_scaling": [1, 2]}), TypeError, "rope_scaling"),
        (lambda: scaling.from_hf("config.json"), TypeError, "config"),
        (
            lambda: scaling.from_hf(
                {
                    "head_dim": 8,
                    "max_position_embeddings": 64,
                    "rope_scaling": {"rope_type": "longrope", "short_factor": [1.0] * 3, "long_factor": [1.0] * 3},
                }
            ),
            ValueError,
            "short_factor",
        ),
    ],
)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


# ---------------------------------------------------------------- from_hf: key aliases of released configs
def test_from_hf_aliases():
    # GPT-J / CodeGen: n_embd / n_head / rotary_dim (no head size needed first)
    assert scaling.from_hf({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64}) == {
        "dim": 64,
        "base": 10000.0,
        "scaling": None,
    }
    assert scaling.from_hf({"rotary_dim": 32})["dim"] == 32
    # GPT-NeoX: rotary_emb_base and rotary_pct; its default rotary_pct is 0.25
    neox = {"model_type": "gpt_neox", "hidden_size": 512, "num_attention_heads": 8}
    assert scaling.from_hf({**neox, "rotary_emb_base": 500, "rotary_pct": 0.5}) == {
        "dim": 32,
        "base": 500.0,
        "scaling": None,
    }
    assert scaling.from_hf(neox)["dim"] == 16
    # DBRX: d_model / n_heads, theta in attn_config
    assert scaling.from_hf({"d_model": 256, "n_heads": 4, "attn_config": {"rope_theta": 5e5}}) == {
        "dim": 64,
        "base": 5e5,
        "scaling": None,
    }
    # MLA, Zamba2, JetMoE head sizes
    assert scaling.from_hf({"hidden_size": 4096, "num_attention_heads": 32, "qk_rope_head_dim": 64})["dim"] == 64
    assert scaling.from_hf({"hidden_size": 2560, "num_attention_heads": 32, "attention_head_dim": 160})["dim"] == 160
    assert scaling.from_hf({"hidden_size": 2048, "num_attention_heads": 32, "kv_channels": 128})["dim"] == 128


def test_from_hf_local_global_older_format():
    g3 = {"model_type": "gemma3_text", "head_dim": 256, "rope_theta": 1e6, "rope_local_base_freq": 1e4,
          "rope_scaling": {"rope_type": "linear", "factor": 8.0}}
    with pytest.raises(ValueError, match="layer_type"):
        scaling.from_hf(g3)
    assert scaling.from_hf(g3, layer_type="full_attention") == {"dim": 256, "base": 1e6, "scaling": scaling.Linear(8.0)}
    assert scaling.from_hf(g3, layer_type="sliding_attention") == {"dim": 256, "base": 1e4, "scaling": None}
    # ModernBERT: global / local theta, the scaling applies to both
    mb = {
        "model_type": "modernbert",
        "hidden_size": 768,
        "num_attention_heads": 12,
        "global_rope_theta": 160000.0,
        "local_rope_theta": 10000.0,
    }
    assert scaling.from_hf(mb, layer_type="full_attention")["base"] == 160000.0
    assert scaling.from_hf(mb, layer_type="sliding_attention")["base"] == 10000.0
    # Gemma 4: the full-attention layers have their own head size
    g4 = {
        "head_dim": 16,
        "layer_types": ["sliding_attention", "full_attention"],
        "per_layer_config": {"1": {"head_dim": 32}},
        "rope_parameters": {
            "sliding_attention": {"rope_type": "default"},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6},
        },
    }
    assert scaling.from_hf(g4, layer_type="full_attention") == {
        "dim": 32,
        "base": 1e6,
        "scaling": scaling.Proportional(0.25),
    }
    assert scaling.from_hf(g4, layer_type="sliding_attention")["dim"] == 16


def test_proportional_frequencies():
    # Gemma 4: exponents over the whole head, the last (1 - fraction) of the pairs still
    for dim, fraction, factor in ((16, 0.25, 1.0), (32, 0.5, 2.0), (12, 1.0, 1.0), (8, 0.0, 1.0)):
        w = posenc.rope_frequencies(dim, base=1e6, scaling=scaling.Proportional(fraction, factor))
        r = int(fraction * dim // 2)
        expected = [1e6 ** (-2 * i / dim) / factor if i < r else 0.0 for i in range(dim // 2)]
        np.testing.assert_allclose(w, expected, rtol=1e-15)
    cos, sin = posenc.rope_cos_sin(10, 16, scaling=scaling.Proportional(0.25))
    np.testing.assert_array_equal(cos[:, 2:8], 1.0)
    np.testing.assert_array_equal(sin[:, 2:8], 0.0)


# ---------------------------------------------------------------- from_hf: the causes the sweep found
class HFObject:
    """A configuration object as transformers makes one: attributes (the
    class's aliases resolved by properties) and ``to_dict()`` with the stored
    names only."""

    aliases: dict = {}

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __getattr__(self, name):
        alias = type(self).aliases.get(name)
        if alias is None:
            raise AttributeError(name)
        return getattr(self, alias)

    def to_dict(self):
        return dict(self.__dict__)


class DbrxLike(HFObject):
    model_type = "dbrx"
    aliases = {"max_position_embeddings": "max_seq_len", "hidden_size": "d_model", "num_attention_heads": "n_heads"}


@pytest.fixture
def newest_transformers(monkeypatch):
    """posenc's reading whatever transformers is installed (as without one):
    an older release refuses some readings (``test_from_hf_changed_in``)."""
    monkeypatch.setattr(scaling._hf, "_transformers_version", lambda: None)


@pytest.mark.usefixtures("newest_transformers")
def test_from_hf_hunyuan_ntk_alpha():
    # transformers' HunYuanDenseV1RotaryEmbedding: dynamic + alpha is a fixed NTK-alpha over the head,
    # base * alpha ** (d / (d - 2)), whatever the length ("factor" unused)
    cfg = {
        "model_type": "hunyuan_v1_dense",
        "head_dim": 128,
        "max_position_embeddings": 32768,
        "rope_theta": 10000.0,
        "rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 1.0},
    }
    kw = scaling.from_hf(cfg)
    assert kw == {"dim": 128, "base": 10000.0, "scaling": scaling.NTK(1000.0)}
    expected = ref_default(128, 10000.0 * 1000.0 ** (128 / 126))
    for seq_len in (None, 10, 100000):
        np.testing.assert_allclose(posenc.rope_frequencies(**kw, seq_len=seq_len), expected, rtol=1e-13)
    # the old reading (dynamic with factor 1: no scaling at all) is off by the factor alpha ** (d / (d - 2))
    control = posenc.rope_frequencies(128, scaling=scaling.DynamicNTK(1.0, 32768))
    assert control[-1] / expected[-1] > 500.0
    for bad, exc in ((0.0, ValueError), (-2.0, ValueError), ("1000", TypeError), (True, TypeError)):
        with pytest.raises(exc, match="`alpha`"):
            scaling.from_hf({**cfg, "rope_scaling": {"type": "dynamic", "alpha": bad, "factor": 1.0}})
    # alpha is read for dynamic only, and by Hunyuan only
    with pytest.raises(ValueError, match="`alpha`"):
        scaling.from_hf({**cfg, "rope_scaling": {"type": "linear", "alpha": 1000.0, "factor": 1.0}})
    with pytest.raises(ValueError, match="`alpha`"):
        scaling.from_hf({**cfg, "model_type": "llama"})
    with pytest.raises(ValueError, match="partial_rotary_factor"):
        scaling.from_hf({**cfg, "partial_rotary_factor": 0.5})


PHIMOE = {
    "model_type": "phimoe",
    "hidden_size": 64,
    "num_attention_heads": 2,
    "max_position_embeddings": 256,
    "original_max_position_embeddings": 64,
    "rope_theta": 10000.0,
    "rope_scaling": {
        "type": "longrope",
        "short_factor": [1.0 + 0.1 * i for i in range(16)],
        "long_factor": [1.0 + 0.9 * i for i in range(16)],
        "short_mscale": 1.243,
        "long_mscale": 1.3,
        "original_max_position_embeddings": 64,
    },
}


def test_from_hf_phimoe_mscale():
    # transformers' PhimoeRotaryEmbedding: short_factor at every length, cos and sin times
    # short_mscale up to the original length and long_mscale beyond
    kw = scaling.from_hf(PHIMOE)
    s = kw["scaling"]
    short = PHIMOE["rope_scaling"]["short_factor"]
    assert s == scaling.LongRoPE(short, short, 64, factor=4.0, short_mscale=1.243, long_mscale=1.3)
    assert (s.attention_scaling(), s.attention_scaling(64), s.attention_scaling(65)) == (1.243, 1.243, 1.3)
    expected = [1.0 / (short[i] * 10000.0 ** (2 * i / 32)) for i in range(16)]
    for seq_len in (10, 64, 65, 1000):
        np.testing.assert_allclose(posenc.rope_frequencies(**kw, seq_len=seq_len), expected, rtol=1e-13)
    cos, _ = posenc.rope_cos_sin(np.arange(48), **kw)
    assert float(cos[0, 0]) == pytest.approx(1.243)
    cos, _ = posenc.rope_cos_sin(np.arange(80), **kw)
    assert float(cos[0, 0]) == pytest.approx(1.3)
    # the old reading: the formula's attention factor sqrt(1 + ln 4 / ln 64) = 1.153 and long_factor beyond 64
    old = scaling.LongRoPE(short, PHIMOE["rope_scaling"]["long_factor"], 64, factor=4.0)
    assert abs(old.attention_scaling() - 1.243) > 0.05
    entry = dict(PHIMOE["rope_scaling"])
    del entry["long_mscale"]
    with pytest.raises(ValueError, match="long_mscale"):
        scaling.from_hf({**PHIMOE, "rope_scaling": entry})
    with pytest.raises(ValueError, match="`rope_type` 'yarn' of model_type 'phimoe'"):
        scaling.from_hf({**PHIMOE, "rope_scaling": {"type": "yarn", "factor": 4.0}})
    # the mscales are PhiMoE's: another model type does not read them
    with pytest.raises(ValueError, match="`short_mscale`"):
        scaling.from_hf({**PHIMOE, "model_type": "phi3"})


def test_longrope_mscales():
    s = scaling.LongRoPE([1.0], [2.0], 100, short_mscale=1.5, long_mscale=2.5)
    assert (s.attention_scaling(None), s.attention_scaling(100), s.attention_scaling(101)) == (1.5, 1.5, 2.5)
    cos, sin = posenc.rope_cos_sin(np.arange(150), 2, scaling=s)
    np.testing.assert_allclose(cos[:, 0], 2.5 * np.cos(np.arange(150) / 2.0), atol=1e-6)
    with pytest.raises(ValueError, match="`long_mscale`"):
        scaling.LongRoPE([1.0], [2.0], 100, short_mscale=1.5)
    with pytest.raises(ValueError, match="`short_mscale`"):
        scaling.LongRoPE([1.0], [2.0], 100, long_mscale=1.5)
    with pytest.raises(ValueError, match="`attention_factor`"):
        scaling.LongRoPE([1.0], [2.0], 100, attention_factor=1.2, short_mscale=1.5, long_mscale=1.5)
    with pytest.raises(ValueError, match="`short_mscale`"):
        scaling.LongRoPE([1.0], [2.0], 100, short_mscale=-1.0, long_mscale=1.5)


def test_from_hf_hy_v4_vl_interleaved_sections():
    # transformers' HYV4VLRotaryEmbedding interleaves the sections (j % 3), and its configuration
    # class sets [12, 10, 10] when the config has none
    cfg = {"model_type": "hy_v4_vl_text", "head_dim": 64, "rope_parameters": {"rope_type": "default"}}
    kw = scaling.from_hf(cfg)
    assert kw["mrope_section"] == (12, 10, 10) and kw["mrope_interleaved"] is True
    with pytest.raises(ValueError, match="`mrope_interleaved` = False contradicts model_type 'hy_v4_vl_text'"):
        scaling.from_hf({**cfg, "rope_parameters": {"rope_type": "default", "mrope_interleaved": False}})


def test_from_hf_mrope_defaults_and_other_recombinations():
    # the sections of the module when the config has none; interleaving fixed by the model type
    kw = scaling.from_hf({"model_type": "qwen2_vl_text", "head_dim": 128})
    assert kw["mrope_section"] == (16, 24, 24) and kw["mrope_interleaved"] is False
    with pytest.raises(ValueError, match="`mrope_interleaved` = True contradicts model_type 'qwen2_vl_text'"):
        scaling.from_hf({"model_type": "qwen2_vl_text", "head_dim": 128, "mrope_interleaved": True})
    # ERNIE 4.5 VL and NeoMME recombine their rows another way, with or without mrope_section
    for mt in ("ernie4_5_vl_moe_text", "neomme"):
        with pytest.raises(ValueError, match=f"`mrope_section` of model_type '{mt}' is not supported"):
            scaling.from_hf({"model_type": mt, "head_dim": 128})
    # a model type posenc does not know must say how its sections are laid out
    cfg = {"head_dim": 32, "rope_parameters": {"rope_type": "default", "mrope_section": [4, 6, 6]}}
    with pytest.raises(ValueError, match="`mrope_interleaved` must be given"):
        scaling.from_hf(cfg)
    cfg["rope_parameters"]["mrope_interleaved"] = True
    assert scaling.from_hf(cfg)["mrope_interleaved"] is True


def test_from_hf_per_layer_yarn_truncate_is_transformers():
    # transformers' YaRN reads `truncate` from the top level of rope_parameters: a per-layer-type
    # entry's own flag is not read (posenc mirrors it), the top-level one applies to every entry
    entry = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "truncate": False}
    cfg = {
        "head_dim": 64,
        "max_position_embeddings": 256,
        "layer_types": ["sliding_attention", "full_attention"],
        "rope_parameters": {"full_attention": entry, "sliding_attention": {"rope_type": "default"}},
    }
    assert scaling.from_hf(cfg, layer_type="full_attention")["scaling"].truncate is True
    cfg["rope_parameters"]["truncate"] = False
    assert scaling.from_hf(cfg, layer_type="full_attention")["scaling"].truncate is False
    cfg["rope_parameters"]["truncate"] = "no"
    with pytest.raises(TypeError, match="`truncate`"):
        scaling.from_hf(cfg, layer_type="full_attention")
    cfg["rope_parameters"] = {"full_attention": entry, "sliding_attention": {"rope_type": "default"}, "factor": 2}
    with pytest.raises(ValueError, match="`factor` next to the per-layer-type entries"):
        scaling.from_hf(cfg, layer_type="full_attention")
    # a flat entry's flag is read
    flat = {"head_dim": 64, "max_position_embeddings": 256, "rope_parameters": entry}
    assert scaling.from_hf(flat)["scaling"].truncate is False


def test_from_hf_attribute_aliases():
    # DBRX stores max_position_embeddings as max_seq_len: a dict through the model type's aliases,
    # an object through its own attributes
    dyn = {"rope_type": "dynamic", "factor": 2.0}
    d = {"model_type": "dbrx", "d_model": 256, "n_heads": 4, "max_seq_len": 4096, "rope_scaling": dyn}
    assert scaling.from_hf(d)["scaling"] == scaling.DynamicNTK(2.0, 4096)
    obj = DbrxLike(d_model=256, n_heads=4, max_seq_len=4096, rope_parameters=dyn)
    assert scaling.from_hf(obj) == scaling.from_hf(d)
    with pytest.raises(ValueError, match="`max_position_embeddings` = 2048 and `max_seq_len` = 4096"):
        scaling.from_hf({**d, "max_position_embeddings": 2048})
    # LongRoPE's attention factor from the aliased length (Bailing: model_max_length)
    long = {"rope_type": "longrope", "short_factor": [1.0] * 8, "long_factor": [2.0] * 8}
    cfg = {
        "model_type": "bailing_hybrid",
        "head_dim": 16,
        "model_max_length": 4096,
        "original_max_position_embeddings": 1024,
        "rope_parameters": long,
    }
    s = scaling.from_hf(cfg)["scaling"]
    assert s.factor == 4.0 and s.attention_scaling() == pytest.approx(math.sqrt(1 + math.log(4) / math.log(1024)))
    # a numpy integer head_dim attribute is read
    obj = HFObject(head_dim=np.int64(64), hidden_size=512, num_attention_heads=4)
    assert scaling.from_hf(obj)["dim"] == 64


def test_from_hf_models_without_a_rope_entry():
    # GPT-J / CodeGen: a table of rotary_dim columns, base 10000, no RoPE entry read; ESM likewise
    gptj = {"model_type": "gptj", "n_embd": 256, "n_head": 4, "rotary_dim": 32}
    assert scaling.from_hf(gptj) == {"dim": 32, "base": 10000.0, "scaling": None}
    with pytest.raises(ValueError, match="model_type 'gptj' is not supported"):
        scaling.from_hf({**gptj, "rope_scaling": {"type": "linear", "factor": 2.0}})
    with pytest.raises(ValueError, match="`rope_theta` of model_type 'codegen'"):
        scaling.from_hf({**gptj, "model_type": "codegen", "rope_theta": 5e5})
    with pytest.raises(ValueError, match="`rotary_dim` = 128 must be at most the head size 64"):
        scaling.from_hf({**gptj, "rotary_dim": 128})
    esm = {"model_type": "esm", "hidden_size": 320, "num_attention_heads": 20, "rope_theta": 500.0}
    assert scaling.from_hf(esm) == {"dim": 16, "base": 500.0, "scaling": None}
    with pytest.raises(ValueError, match="model_type 'esm' is not supported"):
        scaling.from_hf({**esm, "rope_scaling": {"type": "dynamic", "factor": 2.0}})
    # rotary_dim of another model is not read by transformers: refused; MiniMax-M2 reads it as a fraction
    with pytest.raises(ValueError, match="`rotary_dim` of model_type 'llama'"):
        scaling.from_hf({"model_type": "llama", "head_dim": 64, "rotary_dim": 32})
    assert scaling.from_hf({"model_type": "minimax_m2", "head_dim": 128, "rotary_dim": 64})["dim"] == 64


def test_from_hf_default_bases_of_dictionaries():
    # a config dictionary without rope_theta takes its model's default, as transformers does
    assert scaling.from_hf({"model_type": "mixtral", "head_dim": 128})["base"] == 1e6
    assert scaling.from_hf({"model_type": "llama", "head_dim": 128})["base"] == 10000.0
    assert scaling.from_hf({"head_dim": 128})["base"] == 10000.0


# ---------------------------------------------------------------- from_hf: malformed configs
BASE = {"hidden_size": 512, "num_attention_heads": 8, "max_position_embeddings": 4096}
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}
LONGROPE = {"rope_type": "longrope", "short_factor": [1.0] * 32, "long_factor": [2.0] * 32}
ORIG, MAXP, MI, MS = (
    "`original_max_position_embeddings`",
    "`max_position_embeddings`",
    "`mrope_interleaved`",
    "`mrope_section`",
)


def _with(entry=None, **top):
    cfg = {**BASE, **top}
    if entry is not None:
        cfg["rope_parameters"] = entry
    return cfg


#: (config, exception, the key its message names): every probe of the issue's
#: malformed-config list is a ValueError / TypeError naming the key
PROBES = {
    "mrope_interleaved 'false'": (
        _with({"mrope_section": [8, 12, 12], "mrope_interleaved": "false"}), TypeError, MI
    ),
    "mrope_interleaved 2": (_with({"mrope_section": [8, 12, 12], "mrope_interleaved": 2}), TypeError, MI),
    "mrope_interleaved [0]": (
        _with({"mrope_section": [8, 12, 12], "mrope_interleaved": [0]}), TypeError, MI
    ),
    "rope_type and type differ": (
        _with({"rope_type": "linear", "type": "dynamic", "factor": 2.0}), ValueError, "`type`"
    ),
    "rope_type None, type linear": (_with({"rope_type": None, "type": "linear", "factor": 2.0}), ValueError, "`type`"),
    "rope_type None": (_with({"rope_type": None, "factor": 2.0}), TypeError, "`rope_type`"),
    "rope_type 3": (_with({"rope_type": 3}), TypeError, "`rope_type`"),
    "max_position_embeddings True": (_with(YARN, max_position_embeddings=True), TypeError, MAXP),
    "max_position_embeddings True, yarn factor from it": (
        _with({"rope_type": "yarn", "original_max_position_embeddings": 1024}, max_position_embeddings=True),
        TypeError,
        MAXP,
    ),
    "max_position_embeddings '4096'": (
        _with({"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings="4096"),
        TypeError,
        MAXP,
    ),
    "max_position_embeddings 0": (
        _with({"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=0), ValueError, MAXP
    ),
    "original 0": (_with({**YARN, "original_max_position_embeddings": 0}), ValueError, ORIG),
    "original '1024'": (
        _with({**YARN, "original_max_position_embeddings": "1024"}), TypeError, ORIG
    ),
    "original 1024.0": (
        _with({**YARN, "original_max_position_embeddings": 1024.0}), TypeError, ORIG
    ),
    "top-level original True": (
        _with(LONGROPE, original_max_position_embeddings=True), TypeError, ORIG
    ),
    "head_dim 64.0": (_with(head_dim=64.0), TypeError, "`head_dim`"),
    "head_dim True": (_with(head_dim=True), TypeError, "`head_dim`"),
    "head_dim 0": (_with(head_dim=0), ValueError, "`head_dim`"),
    "num_attention_heads 0": (_with(num_attention_heads=0), ValueError, "`num_attention_heads`"),
    "hidden_size '512'": (_with(hidden_size="512"), TypeError, "`hidden_size`"),
    "rotary_dim above the head": (_with(rotary_dim=128), ValueError, "`rotary_dim`"),
    "rotary_dim 32.0": (_with(rotary_dim=32.0), TypeError, "`rotary_dim`"),
    "partial_rotary_factor 1.5": (_with(partial_rotary_factor=1.5), ValueError, "`partial_rotary_factor`"),
    "partial_rotary_factor 0": (_with({"partial_rotary_factor": 0.0}), ValueError, "`partial_rotary_factor`"),
    "rotary_pct '0.5'": (_with(rotary_pct="0.5"), TypeError, "`rotary_pct`"),
    "rope_theta 1": (_with(rope_theta=1.0), ValueError, "`rope_theta`"),
    "rope_theta 0.5": (_with({"rope_theta": 0.5}), ValueError, "`rope_theta`"),
    "rope_theta -1": (_with(rope_theta=-1.0), ValueError, "`rope_theta`"),
    "rope_theta inf": (_with(rope_theta=math.inf), ValueError, "`rope_theta`"),
    "rope_theta '1e4'": (_with(rope_theta="1e4"), TypeError, "`rope_theta`"),
    "rotary_emb_base 1": (_with(rotary_emb_base=1), ValueError, "`rotary_emb_base`"),
    "factor 0": (_with({"rope_type": "linear", "factor": 0.0}), ValueError, "`factor`"),
    "factor -2": (_with({"rope_type": "dynamic", "factor": -2.0}), ValueError, "`factor`"),
    "factor inf": (_with({**YARN, "factor": math.inf}), ValueError, "`factor`"),
    "factor nan": (_with({"rope_type": "llama3", "factor": math.nan, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0}), ValueError, "`factor`"),  # fmt: skip
    "factor '2'": (_with({"rope_type": "linear", "factor": "2"}), TypeError, "`factor`"),
    "factor True": (_with({"rope_type": "linear", "factor": True}), TypeError, "`factor`"),
    "mscale negative": (_with({**YARN, "mscale": -100.0, "mscale_all_dim": 1.0}), ValueError, "`mscale`"),
    "mscale_all_dim zero denominator": (
        _with({**YARN, "factor": math.e, "mscale": 1.0, "mscale_all_dim": -10.0}), ValueError, "`mscale_all_dim`"
    ),
    "attention_factor 0": (_with({**YARN, "attention_factor": 0.0}), ValueError, "`attention_factor`"),
    "attention_factor -1": (_with({**LONGROPE, "attention_factor": -1.0}), ValueError, "`attention_factor`"),
    "attention_factor inf": (_with({**YARN, "attention_factor": math.inf}), ValueError, "`attention_factor`"),
    "attention_factor nan": (_with({**LONGROPE, "attention_factor": math.nan}), ValueError, "`attention_factor`"),
    "beta_fast True": (_with({**YARN, "beta_fast": True}), TypeError, "`beta_fast`"),
    "beta_slow -1": (_with({**YARN, "beta_slow": -1.0}), ValueError, "`beta_slow`"),
    "truncate 'false'": (_with({**YARN, "truncate": "false"}), TypeError, "`truncate`"),
    "truncate 0": (_with({**YARN, "truncate": 0}), TypeError, "`truncate`"),
    "low_freq_factor above high": (
        _with({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0}),
        ValueError,
        "`high_freq_factor`",
    ),
    "short_factor a str": (_with({**LONGROPE, "short_factor": "1,2"}), TypeError, "`short_factor`"),
    "short_factor too short": (_with({**LONGROPE, "short_factor": [1.0] * 3}), ValueError, "`short_factor`"),
    "long_factor with a zero": (_with({**LONGROPE, "long_factor": [0.0] * 32}), ValueError, "`long_factor`"),
    "unknown key": (_with({"rope_type": "linear", "factor": 2.0, "scale": 3.0}), ValueError, "`scale`"),
    "yarn key under linear": (_with({"rope_type": "linear", "factor": 2.0, "beta_fast": 8}), ValueError, "`beta_fast`"),
    "mscales outside PhiMoE": (
        _with({**LONGROPE, "short_mscale": 1.0, "long_mscale": 1.1}), ValueError, "`short_mscale`"
    ),
    "rope_parameters a list": (_with([1, 2]), TypeError, "`rope_parameters`"),
    "rope_parameters and rope_scaling differ": (
        _with({"rope_type": "linear", "factor": 2.0}, rope_scaling={"rope_type": "linear", "factor": 4.0}),
        ValueError,
        "`rope_scaling`",
    ),
    "mrope_section with a bool": (
        _with({"mrope_section": [True, 15, 16], "mrope_interleaved": False}), TypeError, MS
    ),
    "mrope_section wrong sum": (_with({"mrope_section": [8, 8, 8], "mrope_interleaved": False}), ValueError, MS),
    "model_type 5": (_with(model_type=5), TypeError, "`model_type`"),
    "layer entry None": (
        _with({"full_attention": None, "sliding_attention": {"rope_type": "default"}}, layer_types=["full_attention"]),
        ValueError,
        "`layer_type` 'full_attention' has no RoPE",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PROBES))
def test_from_hf_malformed(name):
    cfg, exc, key = PROBES[name]
    layer = "full_attention" if name == "layer entry None" else None
    with pytest.raises(exc, match=re.escape(key)) as info:
        scaling.from_hf(cfg, layer_type=layer)
    assert len(str(info.value)) < 600


def test_from_hf_accepts_numpy_scalars_and_mirrors_transformers_defaults():
    cfg = _with({"rope_type": "yarn", "factor": np.float64(4.0), "original_max_position_embeddings": np.int64(1024)})
    assert scaling.from_hf(cfg)["scaling"] == scaling.YaRN(4.0, 1024)
    # keys known not to change the tables are accepted (Ministral 3's query scaling)
    cfg = _with({**YARN, "llama_4_scaling_beta": 0.1, "max_position_embeddings": 4096})
    assert scaling.from_hf(cfg)["scaling"] == scaling.YaRN(4.0, 1024)


# ---------------------------------------------------------------- vision towers: RoPE over several axes
def _axes_oracle(ids, blocks, base, layout):
    """float64 NumPy tables from the formulas: ``blocks`` lists, per plane
    group, (the column of ids, the rotary width of its frequencies); angles
    concatenated, then repeated pairwise (interleaved) or doubled (half)."""
    ids = np.asarray(ids, np.float64)
    ang = np.concatenate([ids[:, [col]] * base ** (-np.arange(0, d, 2) / d) for col, d in blocks], axis=-1)
    ang = np.repeat(ang, 2, axis=-1) if layout == "interleaved" else np.concatenate([ang, ang], axis=-1)
    return np.cos(ang), np.sin(ang)


AXES_IDS = np.array([[0, 0], [1, 2], [3, 1], [7, 11], [250, 31]])


@pytest.mark.parametrize(
    "config, blocks, layout",
    [
        # Qwen2-VL (embed_dim // num_heads = 16): cat(h, w) doubled
        ({"model_type": "qwen2_vl_vision", "embed_dim": 32, "num_heads": 2, "hidden_size": 3584}, [(0, 8), (1, 8)],
         "half"),
        # SAM2 video: the memory attention's head, cat(col0, col1), each angle twice
        ({"model_type": "sam2_video", "memory_attention_hidden_size": 64, "memory_attention_downsample_rate": 2,
          "memory_attention_num_attention_heads": 2}, [(0, 8), (1, 8)], "interleaved"),
        # Inkling2: cat(w, h), each angle twice
        ({"model_type": "inkling2_vision", "hidden_size": 32, "num_attention_heads": 2}, [(1, 8), (0, 8)],
         "interleaved"),
        # Step3p7: cat(w, h) doubled
        ({"model_type": "step3p5_vision", "hidden_size": 32, "num_attention_heads": 2}, [(1, 8), (0, 8)], "half"),
        # LFM3-VL: its own default base (1e6)
        ({"model_type": "lfm3_vl_vision", "hidden_size": 32, "num_attention_heads": 2}, [(0, 8), (1, 8)], "half"),
    ],
)  # fmt: skip
@pytest.mark.usefixtures("newest_transformers")
def test_from_hf_axial_tables(config, blocks, layout):
    kw = scaling.from_hf(config)
    assert kw["layout"] == layout
    cos, sin = posenc.rope_axes_cos_sin(AXES_IDS, **kw, dtype="float64")
    base = 1e6 if config["model_type"] == "lfm3_vl_vision" else 1e4
    c, s = _axes_oracle(AXES_IDS, blocks, base, layout)
    np.testing.assert_allclose(cos, c, atol=1e-13)
    np.testing.assert_allclose(sin, s, atol=1e-13)
    if "freqs" in kw:  # a new array on every call: a caller's change reaches no later result
        kw["freqs"][:] = 0.0
        assert np.any(scaling.from_hf(config)["freqs"] != 0.0)


@pytest.mark.usefixtures("newest_transformers")
def test_from_hf_axial_pixtral_minimax_kimi():
    ids = AXES_IDS
    # Pixtral: one RoPE of the head (16), h the even and w the odd frequencies
    kw = scaling.from_hf({"model_type": "pixtral", "head_dim": 16, "rope_parameters": {"rope_type": "axial"}})
    assert kw == {"axes_dim": (8, 8), "base": 10000.0, "layout": "half", "split": "strided"}
    f = 1e4 ** (-np.arange(0, 16, 2) / 16)
    ang = np.concatenate([ids[:, :1] * f[0::2], ids[:, 1:] * f[1::2]], axis=-1)
    np.testing.assert_allclose(posenc.rope_axes_cos_sin(ids, **kw, dtype="float64")[1],
                               np.sin(np.concatenate([ang, ang], -1)), atol=1e-13)  # fmt: skip
    # MiniMax-M3-VL: three axes of 2 * ((hd // 3) // 2) = 10 of a head of 32
    kw = scaling.from_hf({"model_type": "minimax_m3_vl_vision", "hidden_size": 64, "num_attention_heads": 2})
    assert kw["axes_dim"] == (10, 10, 10) and kw["layout"] == "half"
    # Kimi-K2.5: w f0, h f0, w f1, h f1, ... doubled
    kw = scaling.from_hf({"model_type": "kimi_k25_vision", "hidden_size": 32, "num_attention_heads": 2})
    f = 1e4 ** (-np.arange(0, 8, 2) / 8)
    ang = np.stack([ids[:, 1:] * f, ids[:, :1] * f], axis=-1).reshape(len(ids), -1)
    np.testing.assert_allclose(posenc.rope_axes_cos_sin(ids, **kw, dtype="float64")[0],
                               np.cos(np.concatenate([ang, ang], -1)), atol=1e-13)  # fmt: skip


def test_from_hf_axial_llama4_dinov3():
    kw = scaling.from_hf({"model_type": "llama4_vision_model", "hidden_size": 64, "num_attention_heads": 2,
                          "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}})  # fmt: skip
    assert kw == {"axes_dim": (16, 16), "base": 10000.0, "layout": "interleaved", "split": "blocks"}
    kw = scaling.from_hf({"model_type": "dinov3_vit", "hidden_size": 64, "num_attention_heads": 2})
    assert kw == {"axes_dim": (16, 16), "base": 100.0, "layout": "half", "split": "blocks", "turns": True}


@pytest.mark.parametrize(
    "config, match",
    [
        ({"model_type": "new_vision", "head_dim": 16, "rope_parameters": {"rope_type": "axial"}},
         "`rope_type` 'axial' of model_type 'new_vision'"),
        ({"head_dim": 16, "rope_parameters": {"rope_type": "axial"}}, "`rope_type` 'axial' of model_type None"),
        ({"model_type": "gemma4_vision", "head_dim": 16},
         "`rope_type` 'default' of model_type 'gemma4_vision'.*rope_cos_sin"),
        ({"model_type": "qwen2_vl_vision", "embed_dim": 32, "num_heads": 2,
          "rope_parameters": {"rope_type": "linear", "factor": 2.0}}, "`rope_type` 'linear' of model_type"),
        ({"model_type": "qwen2_vl_vision", "embed_dim": 32, "num_heads": 2,
          "rope_parameters": {"rope_type": "axial", "factor": 2.0}}, "`factor` of rope_parameters"),
        ({"model_type": "qwen2_vl_vision", "embed_dim": 32, "num_heads": 2, "partial_rotary_factor": 0.5},
         "`partial_rotary_factor` of model_type 'qwen2_vl_vision'"),
        ({"model_type": "qwen2_vl_vision", "embed_dim": 20, "num_heads": 2}, "head size 10 .* multiple of 4"),
        ({"model_type": "qwen2_vl_vision", "hidden_size": 32, "num_heads": 2}, "`embed_dim`"),
        ({"model_type": "qwen2_vl_vision", "embed_dim": 32, "num_heads": 2, "num_attention_heads": 4},
         "`num_attention_heads` = 4 and `num_heads` = 2"),
        ({"model_type": "sam2_video", "memory_attention_hidden_size": 64}, "`memory_attention_downsample_rate`"),
        ({"model_type": "dinov3_vit", "hidden_size": 64, "num_attention_heads": 2,
          "rope_parameters": {"rope_theta": 5.0}}, "`rope_theta` of rope_parameters .* top level"),
        ({"model_type": "qwen2_vl_vision", "embed_dim": 32, "num_heads": 2, "rope_parameters": {"rope_theta": 1.0}},
         "`rope_theta` must be > 1"),
        ({"model_type": "minimax_m3_vl_vision", "head_dim": 4}, "too small for three rotary axes"),
    ],
)  # fmt: skip
def test_from_hf_axial_refusals(config, match):
    with pytest.raises(ValueError, match=match):
        scaling.from_hf(config)


HUNYUAN = {"model_type": "hunyuan_v1_dense", "head_dim": 16, "max_position_embeddings": 64}
#: a configuration of each reading of ``CHANGED_IN``, and one of the same
#: model that an older release reads as posenc does
CHANGED = {
    "alpha": (
        {**HUNYUAN, "rope_scaling": {"type": "dynamic", "alpha": 10.0}},
        {**HUNYUAN, "rope_scaling": {"type": "dynamic", "factor": 2.0}},
    ),
    "gpt_neox_japanese": (
        {"model_type": "gpt_neox_japanese", "hidden_size": 64, "num_attention_heads": 2, "rotary_pct": 0.5},
        {"model_type": "gpt_neox_japanese", "hidden_size": 64, "num_attention_heads": 2, "rotary_pct": 1.0},
    ),
    "minimax_m3_vl_vision": ({"model_type": "minimax_m3_vl_vision", "hidden_size": 64, "num_attention_heads": 2}, None),
    "step3p5_vision": ({"model_type": "step3p5_vision", "hidden_size": 32, "num_attention_heads": 2}, None),
    "fuyu": ({"model_type": "fuyu", "hidden_size": 64, "num_attention_heads": 2, "rope_theta": 25000.0}, None),
    **{
        mt: (
            {"model_type": mt, "head_dim": 16, "rope_parameters": {"rope_type": "default"}},
            {"model_type": mt, "head_dim": 16},  # 20000 in every release
        )
        for mt in ("pe_audio_encoder", "pe_audio_video_encoder", "pe_video_encoder")
    },
}


FUYU = {"hidden_size": 64, "num_attention_heads": 2}


@pytest.mark.parametrize(
    "config, want",
    [
        # the top-level keys transformers moves into Persimmon's configuration, partial factor 0.5, base 10000
        ({"model_type": "fuyu", **FUYU}, (16, 10000.0)),
        ({"model_type": "fuyu", **FUYU, "partial_rotary_factor": 1.0, "head_dim": 8}, (16, 10000.0)),
        ({"model_type": "fuyu", **FUYU, "rope_parameters": {"rope_theta": 25000.0}}, (16, 10000.0)),
        ({"model_type": "fuyu", **FUYU, "rope_theta": 25000.0}, (16, 25000.0)),
        ({"model_type": "fuyu", "text_config": None, **FUYU}, (16, 10000.0)),
        # none of them: Fuyu-8B's language model (head 4096 / 64)
        ({"model_type": "fuyu", "partial_rotary_factor": 1.0}, (32, 10000.0)),
        # a text_config: read alone (Persimmon's without model_type)
        ({"model_type": "fuyu", "rope_theta": 5e5, **FUYU,
          "text_config": {"hidden_size": 32, "num_attention_heads": 2}}, (8, 10000.0)),
        ({"model_type": "fuyu", "text_config": {"model_type": "llama", **FUYU, "rope_theta": 500.0}}, (32, 500.0)),
    ],
)  # fmt: skip
def test_from_hf_fuyu_reads_its_language_model(monkeypatch, config, want):
    """A Fuyu dictionary reads as the language model configuration
    transformers (5.20 and later) builds from it, not its top level."""
    kw = _read_with(monkeypatch, None, config)
    assert (kw["dim"], kw["base"]) == want


def test_from_hf_fuyu_text_config_kind(monkeypatch):
    # (read as a transformers release that reads Fuyu's top level: older ones refuse it first)
    with pytest.raises(TypeError, match="`text_config` of `config` must be a dict"):
        _read_with(monkeypatch, ("5.24.0", (5, 24)), {"model_type": "fuyu", "text_config": "persimmon"})


def test_from_hf_changed_in_cases():
    assert set(CHANGED) == set(scaling._models.CHANGED_IN)


def _read_with(monkeypatch, version, config):
    """``from_hf(config)`` with ``version`` as the installed transformers
    (``(text, (major, minor))``, or None: no transformers)."""
    monkeypatch.setattr(scaling._hf, "_transformers_version", lambda: version)
    return scaling.from_hf(config)


def _same(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_from_hf_changed_in(monkeypatch, name):
    """A reading that changed in a transformers release is refused while an
    older transformers runs the models (its module gives another table),
    naming the key, the installed version and the release; that release and
    later, or no transformers at all, read it; the model's other
    configurations read the same with the older release."""
    changed, unchanged = CHANGED[name]
    (major, minor) = first = scaling._models.CHANGED_IN[name][0]
    older = ("5.17.0rc1", (major, minor - 1))
    want = _read_with(monkeypatch, None, changed)
    assert _same(_read_with(monkeypatch, (f"{major}.{minor}.0", first), changed), want)
    with pytest.raises(ValueError, match=rf"`\w+`.* with transformers 5\.17\.0rc1: releases before {major}\.{minor} "):
        _read_with(monkeypatch, older, changed)
    if unchanged is not None:
        assert _same(_read_with(monkeypatch, older, unchanged), _read_with(monkeypatch, None, unchanged))


def test_transformers_version(monkeypatch):
    """The imported transformers' version first, else the installed
    distribution's, else None."""
    import sys
    import types

    monkeypatch.setitem(sys.modules, "transformers", types.SimpleNamespace(__version__="5.20.0.dev0"))
    assert scaling._hf._transformers_version() == ("5.20.0.dev0", (5, 20))
    monkeypatch.delitem(sys.modules, "transformers")
    monkeypatch.setattr(scaling._hf.importlib.metadata, "version", lambda name: "5.17.0")
    assert scaling._hf._transformers_version() == ("5.17.0", (5, 17))

    def missing(name):
        raise scaling._hf.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(scaling._hf.importlib.metadata, "version", missing)
    assert scaling._hf._transformers_version() is None


def test_from_hf_axial_result_is_not_for_rope_cos_sin():
    """A vision tower's keyword arguments are refused by the 1-D functions
    (no silent 1-D table)."""
    kw = scaling.from_hf({"model_type": "qwen2_vl_vision", "embed_dim": 32, "num_heads": 2})
    with pytest.raises(TypeError):
        posenc.rope_cos_sin(np.arange(4), **kw)


def test_from_hf_type_spellings_transformers_writes():
    """``type`` beside ``rope_type``: equal, or a pair transformers' own
    classes write (one table either way), read as transformers 5 reads it;
    any other differing pair is refused naming both keys."""
    qwen = {"model_type": "qwen2_vl", "hidden_size": 1536, "num_attention_heads": 12}
    want = scaling.from_hf({**qwen, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}})
    for entry in (
        {"type": "mrope", "rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 10000.0},
        {"type": "default", "rope_type": "default", "mrope_section": [16, 24, 24]},
        {"rope_type": "mrope", "mrope_section": [16, 24, 24]},
    ):
        assert scaling.from_hf({**qwen, "rope_scaling": entry}) == want
    # "mrope" without sections beside "default" is no conversion transformers writes
    with pytest.raises(ValueError, match="`rope_type` = 'default' and `type` = 'mrope'"):
        scaling.from_hf({"head_dim": 64, "rope_scaling": {"type": "mrope", "rope_type": "default"}})
    phi = {"model_type": "phi3", "hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 4096,
           "original_max_position_embeddings": 1024}  # fmt: skip
    lists = {"short_factor": [1.0] * 32, "long_factor": [2.0] * 32}
    want = scaling.from_hf({**phi, "rope_scaling": {"type": "longrope", **lists}})
    assert want["scaling"] == scaling.LongRoPE([1.0] * 32, [2.0] * 32, 1024, factor=4.0)
    for old in ("su", "yarn"):  # Phi-3's older names, which its class turns into longrope
        assert scaling.from_hf({**phi, "rope_scaling": {"type": old, "rope_type": "longrope", **lists}}) == want
    # "yarn" -> "longrope" is Phi-3's conversion only; other real conflicts name both keys
    for model_type, entry in (
        ("llama", {"type": "yarn", "rope_type": "longrope", **lists}),
        ("llama", {"type": "linear", "rope_type": "dynamic", "factor": 2.0}),
    ):
        with pytest.raises(ValueError, match="`rope_type` = .* and `type` = .* disagree"):
            scaling.from_hf({**phi, "model_type": model_type, "rope_scaling": entry})
    # a vision tower's class turns "default" into its axial rope type
    vision = {"model_type": "qwen2_vl_vision", "embed_dim": 1280, "num_heads": 16}
    assert scaling.from_hf({**vision, "rope_parameters": {"type": "default", "rope_type": "axial"}}) == (
        scaling.from_hf({**vision, "rope_parameters": {"rope_type": "axial"}})
    )


def test_from_hf_rope_scaling_beside_rope_parameters():
    """Both entries (a transformers 4 file completed by transformers 5):
    transformers reads ``rope_scaling`` with the top-level base and drops
    ``rope_parameters``; both are accepted where they read the same, refused
    where they do not."""
    top = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 8192,
           "rope_theta": 5e5}  # fmt: skip
    legacy = {"type": "yarn", "factor": 4.0}
    completed = {"type": "yarn", "rope_type": "yarn", "factor": 4.0, "rope_theta": 5e5,
                 "original_max_position_embeddings": 8192}  # fmt: skip
    want = scaling.from_hf({**top, "rope_scaling": legacy})
    assert want["scaling"] == scaling.YaRN(4.0, 8192) and want["base"] == 5e5
    assert scaling.from_hf({**top, "rope_scaling": legacy, "rope_parameters": completed}) == want
    assert scaling.from_hf({**top, "rope_scaling": completed, "rope_parameters": legacy}) == want
    for other in (
        {**completed, "rope_theta": 1e4},  # a base transformers would drop
        {**completed, "factor": 8.0},
        {"rope_type": "default", "rope_theta": 5e5},
    ):
        with pytest.raises(ValueError, match="`rope_parameters` and `rope_scaling`"):
            scaling.from_hf({**top, "rope_scaling": legacy, "rope_parameters": other})
