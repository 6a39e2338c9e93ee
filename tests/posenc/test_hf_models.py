"""posenc inside real transformers models (tiny sizes, random weights).

* The sweep (``data/make_hf_sweep.py``): every rotary-embedding class of the
  installed transformers, paired with its configuration class, in its
  defaults and in every scaling variant its configuration accepts, either
  matches ``rope_cos_sin`` / ``mrope_cos_sin(**from_hf(config))`` (float64
  with transformers' float32 casts lifted: 1e-12 of the largest angle;
  float32: within transformers' own rounding) or ``from_hf`` refuses it with
  a ``ValueError`` naming a key; never a silent difference.  The test runs
  the defaults of every class and every variant of ``SWEEP_MODELS`` (one
  model per cause the sweep has found); the script runs every variant of
  every class, and ``data/hf_sweep.json`` (and docs/models.rst) is its run.
  The vision towers' modules are compared with
  ``rope_axes_cos_sin(ids, **from_hf(config))`` at their own ids.
* The model tables of ``posenc.scaling`` (attribute aliases, default bases,
  the vision towers' rope types) against the installed transformers.
* Full forward passes: the model's rotary module and apply function are
  replaced by posenc (``from_hf`` + ``rope_cos_sin`` / ``mrope_cos_sin`` +
  ``apply_rope``) and the logits compared with the model's own, in float64
  (float32 casts lifted) and float32; where posenc once read a model wrong,
  that reading is the control and must differ by a clear margin.  The
  vision towers of Qwen2-VL (merged-patch order, cat(h, w) doubled), Pixtral
  (the strided split) and Llama 4 (positions + 1, a class token, pairs of
  neighbours) run with posenc's ``rope_axes_cos_sin`` at the ids of
  ``grid_ids`` and ``apply_rope``; controls: the axes swapped, the blocks
  split, the half layout.

T5 buckets, BLOOM / MPT ALiBi and the fairseq sinusoidal table of M2M100
have their parity tests in test_bias.py and test_sinusoidal.py.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import re
from pathlib import Path

import pytest

import posenc
from posenc import scaling

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

DATA = Path(__file__).parent / "data"


def _sweep_module():
    spec = importlib.util.spec_from_file_location("make_hf_sweep", DATA / "make_hf_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SWEEP = _sweep_module()

#: the transformers release the sweep was recorded with (data/hf_sweep.json),
#: the release posenc's model tables are read from
RECORDED = json.loads((DATA / "hf_sweep.json").read_text())["transformers"]


def _release(version: str) -> tuple[int, int]:
    major, minor = re.match(r"(\d+)\.(\d+)", version).groups()
    return int(major), int(minor)


#: whether the installed transformers is older than the recorded one (a
#: model type of posenc's tables may be newer than it)
OLDER = _release(transformers.__version__) < _release(RECORDED)


def _installed(types) -> set[str]:
    """The model types of ``types`` the installed transformers has: all of
    them from the recorded release on (a name missing there is a typo of
    posenc's tables); an older release lacks the newer models."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    have = {mt for mt in types if mt in CONFIG_MAPPING}
    if not OLDER:
        assert have == set(types), sorted(set(types) - have)
    return have


#: model directories whose every scaling variant the test runs: one per cause
#: the sweep has found (the script runs them all)
SWEEP_MODELS = frozenset(
    {
        "llama",  # every scaling, legacy keys
        "phi3",  # LongRoPE, top-level original length, partial rotary
        "phimoe",  # short_mscale / long_mscale
        "hunyuan_v1_dense",  # dynamic + alpha: NTK-alpha
        "hy_v4_vl",  # interleaved M-RoPE sections by default
        "qwen2_vl",  # contiguous M-RoPE; one length over every row
        "qwen3_vl",  # interleaved M-RoPE
        "gemma3",  # per-layer-type YaRN: transformers' truncate
        "modernbert",  # local / global bases
        "dbrx",  # attribute aliases (max_seq_len)
        "bailing_hybrid",  # attribute aliases (model_max_length)
        "gptj",  # model-level table, no RoPE entry
        "gpt_oss",  # YaRN without truncation, compact table
        "ministral3",  # keys that do not change the tables
        "neomme",  # another recombination: refused
        "gemma4",  # per-layer head sizes, proportional RoPE
        "deepseek_v3",  # MLA head size, DeepSeek's YaRN
    }
)


# ---------------------------------------------------------------- the sweep
@pytest.fixture(scope="module")
def sweep():
    return SWEEP.sweep(variants=lambda model: model in SWEEP_MODELS, rotations=False)


def test_sweep_matches_or_refuses(sweep):
    res = sweep["results"]
    bad = {k: v for k, v in res.items() if v["status"] == "mismatch"}
    assert not bad, "\n".join(f"{k}: {v['reason']}" for k, v in bad.items())
    counts = SWEEP.counts(sweep)
    assert counts["mismatch"] == 0
    assert counts["match"] >= 300  # the transformers 5.x zoo, and the variants of SWEEP_MODELS
    # every model of SWEEP_MODELS that has a rotary class (an older release lacks some: GPT-J's before 5.24)
    present = {model for model, _, _ in SWEEP.discover()}
    assert OLDER or present >= SWEEP_MODELS
    assert {k.split(".")[0] for k in res} >= SWEEP_MODELS & present
    for k, v in res.items():
        if v["status"] == "refused":  # a refusal names the key it refuses
            assert re.search(r"`\w+`", v["reason"]), (k, v)


def test_sweep_list_is_current(sweep):
    """``data/hf_sweep.json`` is the script's run (regenerate with make_hf_sweep.py)."""
    recorded = json.loads((DATA / "hf_sweep.json").read_text())
    if recorded["transformers"] != transformers.__version__:
        pytest.skip(f"the list was made with transformers {recorded['transformers']}")
    assert SWEEP.counts(recorded)["mismatch"] == 0
    now = {k: v["status"] for k, v in sweep["results"].items()}
    then = {k: v["status"] for k, v in recorded["results"].items() if _in_test_selection(k)}
    assert now == then


def _in_test_selection(name: str) -> bool:
    """Whether the test's sweep runs the case ``name`` of the recorded list:
    ``dir.Class`` (not a config RoPE), ``dir.Class default [...]``, or any
    variant of a model of SWEEP_MODELS."""
    words = name.split(" ")
    return len(words) == 1 or words[1] == "default" or name.split(".")[0] in SWEEP_MODELS


def test_compare_names_new_gone_and_changed_cases():
    """``make_hf_sweep.py --compare`` (make test-latest): what changed
    against the recorded list; the record is JSON that reads back."""
    then = {"transformers": "1", "results": {"a.A default": {"status": "match"}, "b.B default": {"status": "match"}}}
    now = {
        "transformers": "2",
        "results": {"a.A default": {"status": "refused"}, "c.C default": {"status": "match"}},
    }
    lines = SWEEP.compare_recorded(now, then)
    assert lines[0] == "transformers 1 (recorded) -> 2 (installed)"
    assert [line.split()[0] for line in lines[1:]] == ["new", "gone", "changed"]
    assert "c.C default" in lines[1] and "b.B default" in lines[2] and "match -> refused" in lines[3]
    res = {
        "transformers": "2",
        "rotation": {"a.A default": "half"},
        "not_accepted": {"a.A": ["longrope"]},
        "results": {
            "a.A default": {"status": "match", "model_type": "a", "dim": 8, "base": 1e4, "scaling": "None",
                            "form": "half", "err64": 1e-17, "err32": 1e-7},
            "a.A linear": {"status": "refused", "reason": "`factor` must be > 0"},
        },
    }  # fmt: skip
    back = json.loads(SWEEP.record(res))
    assert back["results"] == {
        "a.A default": {"status": "match", "model_type": "a", "read": "dim 8, base 10000, None", "form": "half"},
        "a.A linear": {"status": "refused", "reason": "`factor` must be > 0"},
    }
    assert back["counts"]["match"] == 1 and back["counts"]["refused"] == 1 and back["counts"]["mismatch"] == 0


def test_attribute_aliases_are_transformers():
    """posenc's table of attribute aliases (read for config dictionaries) is
    the ``attribute_map`` of every RoPE model's configuration class, for the
    keys posenc reads."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    recorded = json.loads((DATA / "hf_sweep.json").read_text())
    types = {v["model_type"] for v in recorded["results"].values() if v.get("model_type")}
    types |= set(scaling._models.ATTRIBUTE_MAP)
    read = {"hidden_size", "num_attention_heads", "max_position_embeddings", "head_dim"}
    found = {}
    for mt in sorted(types):
        if mt not in CONFIG_MAPPING:
            continue
        amap = {k: v for k, v in (getattr(CONFIG_MAPPING[mt], "attribute_map", {}) or {}).items() if k in read}
        if amap:  # (the vision towers' too: from_hf reads their axial RoPE)
            found[mt] = amap
    have = _installed(scaling._models.ATTRIBUTE_MAP)
    assert found == {mt: v for mt, v in scaling._models.ATTRIBUTE_MAP.items() if mt in have}


def test_default_thetas_are_transformers():
    """The default bases posenc uses for config dictionaries without
    ``rope_theta`` are transformers' ``default_theta``."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    have = _installed(scaling._models.DEFAULT_THETA)
    changed = scaling._models.CHANGED_IN
    for mt, theta in scaling._models.DEFAULT_THETA.items():
        if mt in changed and _release(transformers.__version__) < changed[mt][0]:
            # an older reading (PE's default, Fuyu's flat keys): from_hf refuses the dictionaries that would read it
            older = rf"transformers {re.escape(transformers.__version__)}: releases before"
            with pytest.raises(ValueError, match=older):
                scaling.from_hf({"model_type": mt, "head_dim": 16, "rope_parameters": {"rope_type": "default"}})
        elif mt in have:
            assert CONFIG_MAPPING[mt].default_theta == theta, mt
    recorded = json.loads((DATA / "hf_sweep.json").read_text())
    for mt in {v["model_type"] for v in recorded["results"].values() if v.get("model_type")}:
        try:
            theta = CONFIG_MAPPING[mt].default_theta
        except (KeyError, AttributeError):  # a configuration class of no model type
            continue
        if isinstance(theta, float | int) and theta != 10000.0:
            assert scaling._models.DEFAULT_THETA.get(mt) == theta, mt


def test_mrope_tables_are_the_modules():
    """Every model type posenc reads as M-RoPE matched in the sweep with 3-row
    position ids (so its sections and interleaving are the module's)."""
    recorded = json.loads((DATA / "hf_sweep.json").read_text())
    mrope = {v["model_type"]: v["mrope"] for v in recorded["results"].values() if v.get("mrope") and "model_type" in v}
    for mt, desc in mrope.items():
        assert mt in scaling._models.MROPE, mt
        assert desc.endswith("interleaved") == scaling._models.MROPE[mt][1], (mt, desc)


def test_axial_tables_are_transformers():
    """The vision towers posenc reads: their configuration classes turn
    "default" into the rope type posenc expects of them, every one of them
    matched in the recorded sweep, and their own apply functions agree with
    apply_rope in the layout from_hf gives (never "differs")."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    models = scaling._models
    have = _installed(models.AXIAL)
    for mt, kind in models.AXIAL.items():
        if mt not in have:
            continue
        want = "default" if kind in ("llama4", "dinov3") else "axial"
        assert getattr(CONFIG_MAPPING[mt], "default_rope_type", "default") == want, mt
    assert getattr(CONFIG_MAPPING["gemma4_vision"], "default_rope_type", None) == "axial"
    recorded = json.loads((DATA / "hf_sweep.json").read_text())
    matched = {v["model_type"] for v in recorded["results"].values() if v.get("form") == "axes"}
    assert matched == set(models.AXIAL)
    rotation = recorded["rotation"]
    for k, v in recorded["results"].items():
        if v.get("form") == "axes" and k in rotation:
            assert rotation[k] in ("half", "interleaved", "?"), (k, rotation[k])
            assert rotation[k] == "?" or rotation[k] in v["read"], (k, rotation[k])


#: Fuyu configuration dictionaries, each with the reading posenc gave before
#: it read the language model's configuration (None: refused), the control
FUYU_TEXT = {"hidden_size": 256, "num_attention_heads": 4}
FUYU_DICTS = {
    "flat": ({"model_type": "fuyu", **FUYU_TEXT}, {"dim": 64, "base": 25000.0}),
    "flat partial 1": ({"model_type": "fuyu", **FUYU_TEXT, "partial_rotary_factor": 1.0}, {"dim": 64, "base": 25000.0}),
    "flat rope_theta": ({"model_type": "fuyu", **FUYU_TEXT, "rope_theta": 5000.0}, {"dim": 64, "base": 5000.0}),
    "flat head_dim": ({"model_type": "fuyu", **FUYU_TEXT, "head_dim": 32}, {"dim": 32, "base": 25000.0}),
    "flat rope_scaling": (
        {"model_type": "fuyu", **FUYU_TEXT, "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
        {"dim": 32, "base": 10000.0, "scaling": scaling.Linear(3.0)},  # (read right before; a wrong control)
    ),
    "rope_parameters only": (
        {"model_type": "fuyu", **FUYU_TEXT, "rope_parameters": {"rope_type": "default", "rope_theta": 25000.0}},
        {"dim": 64, "base": 25000.0},
    ),
    "rope_parameters, partial 0.25": (
        {"model_type": "fuyu", **FUYU_TEXT,
         "rope_parameters": {"rope_type": "default", "rope_theta": 500.0, "partial_rotary_factor": 0.25}},
        {"dim": 16, "base": 500.0},
    ),
    "no language model keys": (
        {"model_type": "fuyu", "image_size": 300, "partial_rotary_factor": 1.0, "rope_parameters": {"rope_theta": 5e5}},
        None,
    ),
    "text_config": ({"model_type": "fuyu", "text_config": {"model_type": "persimmon", **FUYU_TEXT}}, None),
    "text_config without model_type": ({"model_type": "fuyu", "text_config": dict(FUYU_TEXT)}, None),
    "text_config and top-level keys": (
        {"model_type": "fuyu", "hidden_size": 512, "num_attention_heads": 4, "rope_theta": 5e5,
         "partial_rotary_factor": 1.0, "text_config": {**FUYU_TEXT, "rope_theta": 7000.0}},
        {"dim": 128, "base": 5e5},
    ),
    "text_config, partial and scaling": (
        {"model_type": "fuyu", "text_config": {**FUYU_TEXT, "partial_rotary_factor": 0.25,
                                               "rope_parameters": {"rope_type": "linear", "factor": 4.0}}},
        None,
    ),
}  # fmt: skip


def _persimmon_table(config, n=40):
    """The cos table of the rotary module of Fuyu's language model (Persimmon)."""
    from transformers.models.persimmon.modeling_persimmon import PersimmonRotaryEmbedding

    module = PersimmonRotaryEmbedding(config.get_text_config())
    with torch.no_grad():
        cos, _ = module(torch.zeros(1, dtype=torch.float64), torch.arange(n)[None])
    return cos[0].double()


def _same_table(kw, want):
    cos, _ = posenc.rope_cos_sin(torch.arange(want.shape[0]), **kw, dtype=torch.float64)
    return cos.shape == want.shape and float((cos - want).abs().max()) <= 1e-6


@pytest.mark.skipif(
    _release(transformers.__version__) < scaling._models.CHANGED_IN["fuyu"][0], reason="refused before 5.20"
)
@pytest.mark.parametrize("name", sorted(FUYU_DICTS))
def test_fuyu_dicts_read_the_language_model(name):
    """A Fuyu configuration dictionary reads as its language model's
    configuration (Persimmon) that transformers builds from it: the
    ``text_config``, else the top-level keys the configuration class moves
    into it (``partial_rotary_factor`` 0.5, Persimmon's default base 10000:
    not Fuyu's ``default_theta``, not the top level's partial factor or
    ``rope_parameters``); the same from the config object and its
    ``to_dict()``.  The control, the reading of the top level, differs."""
    d, old = FUYU_DICTS[name]
    built = transformers.FuyuConfig.from_dict(json.loads(json.dumps(d)))
    want = _persimmon_table(built)
    assert torch.equal(want, _persimmon_table(transformers.FuyuConfig(**json.loads(json.dumps(d)))))
    for config in (d, built, built.to_dict(), built.get_text_config()):
        assert _same_table(scaling.from_hf(config), want), config
    if old is not None:
        assert not _same_table({"scaling": None, **old}, want)


def test_fuyu_text_keys_are_transformers():
    """The keys posenc takes Fuyu's language model configuration from (and
    its defaults) are those of transformers' configuration class."""
    if not hasattr(transformers.FuyuConfig, "sub_configs_defaults"):
        pytest.skip(f"transformers {transformers.__version__} builds Fuyu's text configuration otherwise (before 5.20)")
    spec = transformers.FuyuConfig.sub_configs_defaults["text_config"]
    assert set(scaling._models.FUYU_TEXT_KEYS) == set(spec.init_kwargs) | {"rope_scaling", "rope_theta"}
    for k, v in scaling._models.FUYU_TEXT_DEFAULTS.items():
        assert spec.init_kwargs[k] == v, k


# ---------------------------------------------------------------- full forward
@contextlib.contextmanager
def precision(dtype):
    """float64: transformers' float32 casts lifted (see make_hf_sweep.lifted_float32)."""
    with SWEEP.lifted_float32() if dtype == torch.float64 else contextlib.nullcontext():
        yield


def unlifted_modules(model):
    """``model`` with the forward of every module patch_rope put in place
    (``Exact*``) run with torch's real dtypes inside a lifted block
    (``SWEEP.unlifted``): posenc's own float64 work is not lifted."""
    for m in model.modules():
        if type(m).__name__.startswith("Exact"):

            def forward(*args, _f=m.forward, **kw):
                with SWEEP.unlifted():
                    return _f(*args, **kw)

            m.forward = forward
    return model


def rel_error(a, b):
    """Max |a - b| relative to max |b|, in float64."""
    return float((a.double() - b.double()).abs().max() / b.double().abs().max())


def posenc_rotary_forward(layout="half", read=None):
    """A rotary module forward computing the tables with posenc from the
    module's config (``read(config, layer_type)``: the keyword arguments,
    ``from_hf`` by default; a control reads the config another way)."""

    def forward(self, x, position_ids, layer_type=None):
        with SWEEP.unlifted():  # posenc runs with torch's real dtypes
            kw = (read or scaling.from_hf)(self.config, layer_type=layer_type)
            if "mrope_section" in kw:
                if position_ids.ndim == 2:
                    position_ids = position_ids.expand(3, -1, -1)
                # no seq_len: one length over every row, max(position_ids) + 1, as transformers
                return posenc.mrope_cos_sin(position_ids, **kw, layout=layout, dtype=x.dtype)
            return posenc.rope_cos_sin(position_ids, **kw, layout=layout, dtype=x.dtype)

    return forward


def posenc_apply(q, k, cos, sin, unsqueeze_dim=1, **_):
    """apply_rotary_pos_emb with posenc: tables given the broadcast shape of q
    (``cos[:, None]`` for q of shape (b, h, s, d)), rotary_dim explicit."""
    c, s = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    rd = cos.shape[-1]
    with SWEEP.unlifted():
        return posenc.apply_rope(q, c, s, rotary_dim=rd), posenc.apply_rope(k, c, s, rotary_dim=rd)


def logits(model_cls, config, ids, dtype, position_ids=None, patch=None):
    with precision(dtype), torch.no_grad(), contextlib.ExitStack() as stack:
        torch.manual_seed(0)
        model = model_cls(config).eval().to(dtype)
        if patch is not None:
            patch(stack)
        kw = {} if position_ids is None else {"position_ids": position_ids}
        return model(input_ids=ids, **kw).logits


def patched(module, rotary, layout="half", read=None):
    def patch(stack):
        mp = stack.enter_context(pytest.MonkeyPatch.context())
        mp.setattr(getattr(module, rotary), "forward", posenc_rotary_forward(layout, read))
        mp.setattr(module, "apply_rotary_pos_emb", posenc_apply)

    return patch


def check(model_cls, config, module, rotary, ids, position_ids=None, control=None):
    """Own vs posenc logits in float64 and float32; the errors, for the record.
    ``control(config, layer_type)``: a wrong reading of the config (posenc's
    old one) whose logits must differ by a clear margin."""
    out = {}
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 2e-4)):
        own = logits(model_cls, config, ids, dtype, position_ids)
        ours = logits(model_cls, config, ids, dtype, position_ids, patched(module, rotary))
        err = float((own - ours).abs().max() / own.abs().max())
        assert err <= tol, f"{dtype}: relative difference {err:.3g}"
        out[str(dtype)] = err
    if control is not None:
        own = logits(model_cls, config, ids, torch.float64, position_ids)
        wrong = logits(model_cls, config, ids, torch.float64, position_ids, patched(module, rotary, read=control))
        out["control"] = float((own - wrong).abs().max() / own.abs().max())
        assert out["control"] > 1e-3, f"the control differs by {out['control']:.3g} only"
    return out


IDS = torch.arange(3, 3 + 2 * 70).reshape(2, 70) % 97  # 70 positions: both sides of 64
TINY = {
    "vocab_size": 97,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}

LLAMA = {
    "default": {},
    "linear": {"rope_scaling": {"rope_type": "linear", "factor": 4.0}},
    "dynamic": {"max_position_embeddings": 64, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
    "yarn": {
        "max_position_embeddings": 256,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
    },
    "llama3": {
        "rope_theta": 500000.0,
        "max_position_embeddings": 512,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    },
}


@pytest.mark.parametrize("name", sorted(LLAMA))
def test_llama_forward(name):
    from transformers.models.llama import modeling_llama as m

    cfg = transformers.LlamaConfig(**TINY, **LLAMA[name])
    check(m.LlamaForCausalLM, cfg, m, "LlamaRotaryEmbedding", IDS)


def test_phi3_longrope_partial_forward():
    from transformers.models.phi3 import modeling_phi3 as m

    cfg = transformers.Phi3Config(
        **TINY,
        max_position_embeddings=256,
        original_max_position_embeddings=64,
        partial_rotary_factor=0.5,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
        rope_scaling={
            "rope_type": "longrope",
            "short_factor": [1.0 + 0.1 * i for i in range(4)],
            "long_factor": [1.0 + 0.9 * i for i in range(4)],
        },
    )
    assert scaling.from_hf(cfg)["dim"] == 8
    check(m.Phi3ForCausalLM, cfg, m, "Phi3RotaryEmbedding", IDS)  # 70 > 64: the long factors
    check(m.Phi3ForCausalLM, cfg, m, "Phi3RotaryEmbedding", IDS[:, :40])  # short


def test_gpt_neox_config_json_forward():
    from transformers.models.gpt_neox import modeling_gpt_neox as m

    raw = {
        "model_type": "gpt_neox",
        "vocab_size": 97,
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "rotary_emb_base": 500,
        "rotary_pct": 0.5,
        "max_position_embeddings": 128,
    }
    assert scaling.from_hf(raw) == {"dim": 8, "base": 500.0, "scaling": None}
    cfg = transformers.GPTNeoXConfig(**{k: v for k, v in raw.items() if k != "model_type"})
    assert scaling.from_hf(cfg) == scaling.from_hf(raw)
    check(m.GPTNeoXForCausalLM, cfg, m, "GPTNeoXRotaryEmbedding", IDS)


def test_gemma3_local_global_forward():
    from transformers.models.gemma3 import modeling_gemma3 as m

    raw = {
        "model_type": "gemma3_text",
        "head_dim": 16,
        "rope_theta": 1e6,
        "rope_local_base_freq": 1e4,
        "sliding_window": 32,
        "layer_types": ["sliding_attention", "full_attention"],
    }
    with pytest.raises(ValueError, match="layer_type"):
        scaling.from_hf(raw)
    assert scaling.from_hf(raw, layer_type="sliding_attention")["base"] == 1e4
    assert scaling.from_hf(raw, layer_type="full_attention")["base"] == 1e6
    cfg = transformers.Gemma3TextConfig(
        **TINY,
        head_dim=16,
        rope_theta=1e6,
        rope_local_base_freq=1e4,
        sliding_window=32,
        layer_types=["sliding_attention", "full_attention"],
    )
    for lt in ("sliding_attention", "full_attention"):
        assert scaling.from_hf(cfg, layer_type=lt) == scaling.from_hf(raw, layer_type=lt)
    check(m.Gemma3ForCausalLM, cfg, m, "Gemma3RotaryEmbedding", IDS)


def test_qwen2_vl_mrope_forward():
    from transformers.models.qwen2_vl import modeling_qwen2_vl as m

    cfg = transformers.Qwen2VLTextConfig(
        **TINY, rope_parameters={"rope_type": "default", "rope_theta": 1e4, "mrope_section": [2, 3, 3]}
    )
    pid = torch.stack([torch.arange(70), torch.arange(70) // 2, torch.arange(70) % 9])[:, None].expand(3, 2, 70)
    # the text model returns hidden states: compare those
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 2e-4)):
        outs = []
        for patch in (None, patched(m, "Qwen2VLRotaryEmbedding")):
            with precision(dtype), torch.no_grad(), contextlib.ExitStack() as stack:
                torch.manual_seed(0)
                model = m.Qwen2VLTextModel(cfg).eval().to(dtype)
                if patch is not None:
                    patch(stack)
                outs.append(model(input_ids=IDS, position_ids=pid).last_hidden_state)
        err = float((outs[0] - outs[1]).abs().max() / outs[0].abs().max())
        assert err <= tol, f"{dtype}: {err:.3g}"


def test_gptj_forward():
    from transformers.models.gptj import modeling_gptj as m

    raw = {
        "model_type": "gptj",
        "n_embd": 64,
        "n_head": 4,
        "rotary_dim": 8,
        "n_positions": 128,
        "vocab_size": 97,
        "n_layer": 2,
    }
    assert scaling.from_hf(raw) == {"dim": 8, "base": 10000.0, "scaling": None}
    cfg = transformers.GPTJConfig(**{k: v for k, v in raw.items() if k != "model_type"})
    kw = scaling.from_hf(cfg)

    def sinusoids(num_pos, dim):  # GPT-J's table: [sin | cos] of each frequency once
        dt = torch.get_default_dtype()
        with SWEEP.unlifted():
            cos, sin = posenc.rope_cos_sin(num_pos, **kw, layout="interleaved", dtype=dt)
        return torch.cat([sin[:, ::2], cos[:, ::2]], dim=1)

    def apply(tensor, sin, cos):  # (b, s, h, rd) with (b, s, rd / 2) tables
        c = torch.repeat_interleave(cos, 2, dim=-1)[:, :, None]
        s = torch.repeat_interleave(sin, 2, dim=-1)[:, :, None]
        with SWEEP.unlifted():
            return posenc.apply_rope(tensor, c, s, layout="interleaved")

    def patch(stack):
        mp = stack.enter_context(pytest.MonkeyPatch.context())
        mp.setattr(m, "apply_rotary_pos_emb", apply)

    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 2e-4)):
        own = logits(m.GPTJForCausalLM, cfg, IDS, dtype)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(m, "create_sinusoidal_positions", sinusoids)
            ours = logits(m.GPTJForCausalLM, cfg, IDS, dtype, patch=patch)
        err = float((own - ours).abs().max() / own.abs().max())
        assert err <= tol, f"{dtype}: {err:.3g}"


# ---------------------------------------------------------------- the causes the sweep found, end to end
def test_phimoe_mscale_forward():
    """PhiMoE (the Phi-3.5-MoE config.json's keys): short_factor at every
    length, cos and sin times short_mscale / long_mscale.  The control is
    posenc's old reading (the LongRoPE attention factor, long_factor beyond
    the original length)."""
    from transformers.models.phimoe import modeling_phimoe as m

    entry = {
        "type": "longrope",
        "short_factor": [1.0 + 0.1 * i for i in range(8)],
        "long_factor": [1.0 + 0.9 * i for i in range(8)],
        "short_mscale": 1.243,
        "long_mscale": 1.3,
    }
    cfg = transformers.PhimoeConfig(
        **TINY,
        num_local_experts=2,
        num_experts_per_tok=1,
        max_position_embeddings=256,
        original_max_position_embeddings=64,
        rope_theta=10000.0,
        rope_scaling=entry,
        experts_implementation="eager",  # the grouped matmul takes no float64
    )

    def old(config, layer_type=None):
        kw = scaling.from_hf(config)
        return {**kw, "scaling": scaling.LongRoPE(entry["short_factor"], entry["long_factor"], 64, factor=4.0)}

    check(m.PhimoeForCausalLM, cfg, m, "PhimoeRotaryEmbedding", IDS[:, :48], control=old)  # short
    check(m.PhimoeForCausalLM, cfg, m, "PhimoeRotaryEmbedding", IDS, control=old)  # 70 > 64


def test_hunyuan_ntk_alpha_forward():
    """Hunyuan's dynamic + alpha: a fixed NTK-alpha; the control is the old
    reading, a dynamic scaling of factor 1 (no scaling at all).  Before
    transformers 5.20 the module recomputes the table once a position reaches
    max_position_embeddings (a dynamic NTK of ``factor``, alpha dropped):
    refused, and the module's table is NTK-alpha below that length only."""
    from transformers.models.hunyuan_v1_dense import modeling_hunyuan_v1_dense as m

    cfg = transformers.HunYuanDenseV1Config(
        **TINY,
        head_dim=16,
        max_position_embeddings=64,
        rope_parameters={"rope_type": "dynamic", "alpha": 1000.0, "factor": 1.0, "rope_theta": 10000.0},
    )
    first = scaling._models.CHANGED_IN["alpha"][0]
    if _release(transformers.__version__) < first:
        since = rf"{first[0]}\.{first[1]}"
        with pytest.raises(ValueError, match=rf"`alpha`.*transformers {re.escape(transformers.__version__)}.*{since}"):
            scaling.from_hf(cfg)
        x = torch.zeros(1)
        for n, differs in ((64, False), (70, True)):
            pid = torch.arange(n)[None]
            with torch.no_grad():
                cos, _ = m.HunYuanDenseV1RotaryEmbedding(cfg)(x, pid)
            want, _ = posenc.rope_cos_sin(pid, 16, base=10000.0, scaling=scaling.NTK(1000.0), dtype=torch.float32)
            err = float((cos - want).abs().max())
            assert err > 0.1 if differs else err <= 1e-5, (n, err)
        return
    assert scaling.from_hf(cfg)["scaling"] == scaling.NTK(1000.0)

    def old(config, layer_type=None):
        return {**scaling.from_hf(config), "scaling": scaling.DynamicNTK(1.0, 64)}

    check(m.HunYuanDenseV1ForCausalLM, cfg, m, "HunYuanDenseV1RotaryEmbedding", IDS, control=old)


def test_qwen2_vl_dynamic_rows_straddle_forward():
    """M-RoPE with a length-dependent scaling: one length over every row
    (the temporal row reaches 69, the height row 34, the original length is
    32).  The control takes the original length for every row."""
    from transformers.models.qwen2_vl import modeling_qwen2_vl as m

    cfg = transformers.Qwen2VLTextConfig(
        **TINY,
        max_position_embeddings=32,
        rope_parameters={"rope_type": "dynamic", "factor": 4.0, "rope_theta": 1e4, "mrope_section": [2, 3, 3]},
    )
    pid = torch.stack([torch.arange(70), torch.arange(70) // 2, torch.arange(70) % 9])[:, None].expand(3, 2, 70)

    def old(config, layer_type=None):
        kw = scaling.from_hf(config)
        return {**kw, "scaling": scaling.Linear(1.0)}  # the height and width rows' own (unscaled) length

    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 2e-4)):
        outs = []
        for patch in (None, patched(m, "Qwen2VLRotaryEmbedding"), patched(m, "Qwen2VLRotaryEmbedding", read=old)):
            with precision(dtype), torch.no_grad(), contextlib.ExitStack() as stack:
                torch.manual_seed(0)
                model = m.Qwen2VLTextModel(cfg).eval().to(dtype)
                if patch is not None:
                    patch(stack)
                outs.append(model(input_ids=IDS, position_ids=pid).last_hidden_state)
        scale = outs[0].abs().max()
        err = float((outs[0] - outs[1]).abs().max() / scale)
        assert err <= tol, f"{dtype}: {err:.3g}"
        assert float((outs[0] - outs[2]).abs().max() / scale) > 1e-3


# ------------------------------------------------ vision towers: RoPE over several axes
def _vision_logits(build, run, dtype, patch=None):
    """The tower's output (``run(model)``) in ``dtype``, its RoPE replaced by ``patch``."""
    with precision(dtype), torch.no_grad(), contextlib.ExitStack() as stack:
        torch.manual_seed(0)
        model = build().eval()  # in the default dtype: float64 while lifted (Llama 4 keeps complex buffers)
        for name, p in model.named_parameters():  # sharper attention (the random init's is near uniform)
            if re.search(r"(qkv|q_proj|k_proj)\.weight$", name):
                p.mul_(30.0)
        if patch is not None:
            patch(stack)
        return run(model, dtype)


def _vision_check(build, run, patch, control):
    """Own vs posenc outputs in float64 (float32 casts lifted) and float32;
    the control (a wrong convention) must differ by a clear margin."""
    out = {}
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 2e-4)):
        own = _vision_logits(build, run, dtype)
        ours = _vision_logits(build, run, dtype, patch)
        err = float((own - ours).abs().max() / own.abs().max())
        assert err <= tol, f"{dtype}: relative difference {err:.3g}"
        out[str(dtype)] = err
    own = _vision_logits(build, run, torch.float64)
    wrong = _vision_logits(build, run, torch.float64, control)
    out["control"] = float((own - wrong).abs().max() / own.abs().max())
    assert out["control"] > 1e-3, f"the control differs by {out['control']:.3g} only"
    return out


def _axes_patch(module, rotary, apply_name, cfg, ids, apply, change=None):
    """Replace a vision tower's rotary module by posenc: the tables of
    ``rope_axes_cos_sin(ids, **from_hf(config))`` (``change`` edits the
    keyword arguments or the ids: the control) and its apply function by
    ``apply(q, k, cos, sin, layout)`` over :func:`posenc.apply_rope`."""

    def patch(stack):
        mp = stack.enter_context(pytest.MonkeyPatch.context())

        def forward(self, x, *args):
            with SWEEP.unlifted():
                kw, pos = scaling.from_hf(self.config), ids
                if change is not None:
                    kw, pos = change(dict(kw), pos)
                return posenc.rope_axes_cos_sin(pos, **kw, dtype=x.dtype, xp=torch)

        kw = scaling.from_hf(cfg)
        layout = (change(dict(kw), ids)[0] if change is not None else kw)["layout"]

        def apply_fn(q, k, cos=None, sin=None, freqs_ci=None, **_):
            if freqs_ci is not None:  # Llama 4 passes the module's output by name: here posenc's (cos, sin)
                cos, sin = freqs_ci
            with SWEEP.unlifted():
                return apply(q, k, cos, sin, layout)

        mp.setattr(getattr(module, rotary), "forward", forward)
        mp.setattr(module, apply_name, apply_fn)

    return patch


def test_qwen2_vl_vision_forward():
    """Qwen2-VL's vision tower (merged-patch order, cat(h, w) doubled): ids
    from grid_ids((h, w), merge=2); control: the axes swapped."""
    from transformers.models.qwen2_vl import modeling_qwen2_vl as m

    cfg = transformers.Qwen2VLVisionConfig(
        depth=2, embed_dim=32, hidden_size=32, num_heads=2, mlp_ratio=2, patch_size=2, temporal_patch_size=1,
        in_channels=3, spatial_merge_size=2,
    )  # fmt: skip
    t, h, w = 1, 4, 6
    ids = torch.as_tensor(posenc.grid_ids((h, w), merge=2))
    gen = torch.Generator().manual_seed(1)
    pixels = torch.randn(t * h * w, 3 * 2 * 2, generator=gen, dtype=torch.float64)
    grid = torch.tensor([[t, h, w]])

    def run(model, dtype):
        return model(pixels.to(dtype), grid_thw=grid).last_hidden_state

    def apply(q, k, cos, sin, layout):  # q, k: (seq, heads, head_dim)
        c, s = cos[:, None], sin[:, None]
        return posenc.apply_rope(q, c, s, layout=layout), posenc.apply_rope(k, c, s, layout=layout)

    def patch(change=None):
        return _axes_patch(m, "Qwen2VLVisionRotaryEmbedding", "apply_rotary_pos_emb_vision", cfg, ids, apply, change)

    out = _vision_check(
        lambda: m.Qwen2VisionTransformerPretrainedModel(cfg), run, patch(), patch(lambda kw, pos: (kw, pos.flip(-1)))
    )
    print("qwen2_vl vision", out)


def test_pixtral_vision_forward():
    """Pixtral's vision tower (the strided split: h the even, w the odd
    frequencies of one RoPE); control: split="blocks"."""
    from transformers.models.pixtral import modeling_pixtral as m

    cfg = transformers.PixtralVisionConfig(
        hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2, num_channels=3,
        image_size=32, patch_size=4, head_dim=16,
    )  # fmt: skip
    h, w = 3, 5
    ids = torch.as_tensor(posenc.grid_ids((h, w)))
    gen = torch.Generator().manual_seed(2)
    pixels = torch.randn(1, 3, 4 * h, 4 * w, generator=gen, dtype=torch.float64)

    def run(model, dtype):
        return model(pixels.to(dtype)).last_hidden_state

    def apply(q, k, cos, sin, layout):  # q, k: (batch, heads, seq, head_dim)
        return posenc.apply_rope(q, cos, sin, layout=layout), posenc.apply_rope(k, cos, sin, layout=layout)

    def patch(change=None):
        return _axes_patch(m, "PixtralVisionRotaryEmbedding", "apply_rotary_pos_emb", cfg, ids, apply, change)

    out = _vision_check(
        lambda: m.PixtralVisionModel(cfg), run, patch(), patch(lambda kw, pos: ({**kw, "split": "blocks"}, pos))
    )
    print("pixtral vision", out)


def test_llama4_vision_forward():
    """Llama 4's vision tower (positions + 1 in (x, y) order, an unrotated
    class token last, pairs of neighbours); control: the half layout."""
    from transformers.models.llama4 import modeling_llama4 as m

    cfg = transformers.Llama4VisionConfig(
        hidden_size=32, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_channels=3,
        image_size=16, patch_size=4, vision_output_dim=32, projector_input_dim=32, projector_output_dim=32,
        pixel_shuffle_ratio=0.5,
    )  # fmt: skip
    n = cfg.image_size // cfg.patch_size
    ids = torch.as_tensor(posenc.grid_ids((n, n), offset=1, indexing="xy", suffix_tokens=1))
    gen = torch.Generator().manual_seed(3)
    pixels = torch.randn(1, 3, cfg.image_size, cfg.image_size, generator=gen, dtype=torch.float64)

    def run(model, dtype):
        return model(pixels.to(dtype)).last_hidden_state

    def apply(q, k, cos, sin, layout):  # q, k: (batch, seq, heads, head_dim); the tables (seq, head_dim)
        c, s = cos[None, :, None], sin[None, :, None]
        return posenc.apply_rope(q, c, s, layout=layout), posenc.apply_rope(k, c, s, layout=layout)

    def patch(change=None):
        return _axes_patch(m, "Llama4VisionRotaryEmbedding", "vision_apply_rotary_emb", cfg, ids, apply, change)

    out = _vision_check(
        lambda: m.Llama4VisionModel(cfg), run, patch(), patch(lambda kw, pos: ({**kw, "layout": "half"}, pos))
    )
    print("llama4 vision", out)
