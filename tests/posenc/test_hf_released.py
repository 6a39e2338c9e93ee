"""``from_hf`` on the RoPE fields of released checkpoints' ``config.json``
(``data/released_configs.py``), in the spellings transformers itself writes.

Each checkpoint's fields go through its configuration class exactly as
``AutoConfig.from_pretrained`` passes them (``from_dict``: transformers 5
completes the RoPE entry in place, turns a legacy ``type`` into
``rope_type``, Qwen2-VL's ``"mrope"`` into ``"default"`` beside the old
``type``), and ``from_hf`` of the model's text configuration must match the
model's own rotary module (the sweep's comparison: float64 with transformers'
float32 casts lifted, and float32) at every layer type; the same fields as a
dictionary (the file, and the file after transformers has filled it in place)
read the same.  A checkpoint transformers runs is never refused.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
from pathlib import Path

import pytest

from posenc import scaling

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

DATA = Path(__file__).parent / "data"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RELEASED = _load("released_configs")
SWEEP = _load("make_hf_sweep")


def _config_class(model_type: str):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]


def _rotary_class(model_type: str, config):
    """The text model's rotary class of the model type's modeling module:
    the one that takes ``config``."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    name = model_type_to_module_name(model_type)
    module = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
    if not any("RotaryEmbedding" in clsname for clsname in vars(module)):
        # GPT-J's attention builds its own table before transformers 5.24 (test_hf_models runs the model)
        pytest.skip(f"transformers {transformers.__version__}'s modeling_{name} has no rotary module")
    for clsname, cls in sorted(vars(module).items()):
        if not (inspect.isclass(cls) and "RotaryEmbedding" in clsname and cls.__module__ == module.__name__):
            continue
        if "Vision" in clsname:
            continue
        try:
            cls(config)
        except Exception:  # another sub-model's module
            continue
        return cls
    raise LookupError(f"no rotary class of {model_type!r} takes {type(config).__name__}")


def _text(fields: dict) -> dict:
    return fields.get("text_config", fields)


def _build(fields: dict):
    """The text configuration as ``AutoConfig.from_pretrained`` builds it."""
    with SWEEP._quiet():
        top = _config_class(fields["model_type"]).from_dict(copy.deepcopy(fields))
    return top.get_text_config()


CASES = sorted(set(RELEASED.CHECKPOINTS) - set(RELEASED.TRANSFORMERS_REFUSES))


def test_enough_checkpoints():
    assert len(CASES) >= 40
    families = {fields["model_type"] for fields in RELEASED.CHECKPOINTS.values()}
    assert len(families) >= 25


@pytest.mark.parametrize("repo", CASES)
def test_released_config_matches_the_module(repo):
    fields = RELEASED.CHECKPOINTS[repo]
    config = _build(fields)
    cls = _rotary_class(fields["model_type"], config)
    expect = RELEASED.EXPECT.get(repo, "match")
    layer_types = SWEEP._layer_types(config, cls)
    with SWEEP._quiet():
        import torch

        with torch.no_grad():
            for lt in layer_types:
                out = SWEEP.compare(config, cls, lt)
                if expect == "match":
                    assert out["status"] == "match", (repo, lt, out)
                    assert "dict" not in out, (repo, lt, out)  # config.to_dict() reads the same
                else:
                    assert out["status"] == "refused" and expect in out["reason"], (repo, lt, out)
    if expect != "match":
        return
    for lt in layer_types:
        read = scaling.from_hf(config, layer_type=lt)
        # the file's fields as a dictionary
        assert SWEEP._same_kw(scaling.from_hf(copy.deepcopy(_text(fields)), layer_type=lt), read), (repo, lt)
        # the dictionary after transformers filled it in place (AutoConfig mutates the dict it is given)
        given = copy.deepcopy(fields)
        with SWEEP._quiet():
            _config_class(fields["model_type"])(**given)
        assert SWEEP._same_kw(scaling.from_hf(_text(given), layer_type=lt), read), (repo, lt, _text(given))


@pytest.mark.parametrize("repo", sorted(RELEASED.TRANSFORMERS_REFUSES))
def test_config_transformers_refuses_reads_as_its_revision(repo):
    """A revision transformers 5 cannot load (Phi-3-mini-128k's first
    ``"su"`` file): its class raises; ``from_hf`` reads the dictionary as the
    revised file, which transformers runs."""
    fields = RELEASED.CHECKPOINTS[repo]
    with pytest.raises(KeyError, match="original_max_position_embeddings"), SWEEP._quiet():
        _config_class(fields["model_type"]).from_dict(copy.deepcopy(fields))
    revised = RELEASED.CHECKPOINTS[RELEASED.TRANSFORMERS_REFUSES[repo]]
    assert SWEEP._same_kw(scaling.from_hf(copy.deepcopy(fields)), scaling.from_hf(_build(revised)))


def test_issue_qwen2_vl_text_config_and_reused_dict():
    """The reproducer: ``from_hf(AutoConfig(...).text_config)`` of Qwen2-VL,
    and the dictionary AutoConfig was given, read as the file does."""
    fields = copy.deepcopy(RELEASED.CHECKPOINTS["Qwen/Qwen2-VL-7B-Instruct"])
    want = scaling.from_hf(copy.deepcopy(fields))
    assert want == {
        "dim": 128,
        "base": 1000000.0,
        "scaling": None,
        "mrope_section": (16, 24, 24),
        "mrope_interleaved": False,
    }
    with SWEEP._quiet():
        config = transformers.AutoConfig.for_model(**fields)
    assert fields["rope_scaling"]["rope_type"] == "default" and fields["rope_scaling"]["type"] == "mrope"
    assert scaling.from_hf(config.text_config) == want
    assert scaling.from_hf(fields) == want
    assert scaling.from_hf(config.text_config.to_dict()) == want


def test_control_a_wrong_reading_is_caught(monkeypatch):
    """The comparison fails when ``from_hf`` reads a released config wrong
    (the base one part in 1e6 off, the M-RoPE sections swapped)."""
    fields = RELEASED.CHECKPOINTS["meta-llama/Llama-3.1-8B"]
    config = _build(fields)
    cls = _rotary_class("llama", config)
    real = scaling.from_hf

    def off_base(cfg, **kw):
        out = real(cfg, **kw)
        return {**out, "base": out["base"] * (1 + 1e-6)}

    monkeypatch.setattr(scaling, "from_hf", off_base)
    assert SWEEP.compare(config, cls, None)["status"] == "mismatch"

    def swapped(cfg, **kw):
        out = real(cfg, **kw)
        return {**out, "mrope_section": out["mrope_section"][::-1]}

    monkeypatch.setattr(scaling, "from_hf", swapped)
    fields = RELEASED.CHECKPOINTS["Qwen/Qwen2-VL-7B-Instruct"]
    config = _build(fields)
    assert SWEEP.compare(config, _rotary_class("qwen2_vl", config), None)["status"] == "mismatch"
