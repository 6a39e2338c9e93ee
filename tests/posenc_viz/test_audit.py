"""``plot_rope_audit`` and ``posenc-viz audit``: the figure of a report of
``posenc.audit_rope`` (artists checked against the report's numbers), and the
subcommand on a Llama 3.1 config.json (its table printed, its figure written)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

import posenc  # noqa: E402
import posenc_viz  # noqa: E402
from posenc.audit import RopeAudit, RopeModuleAudit  # noqa: E402
from posenc_viz import cli  # noqa: E402

CONFIG = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_attention_heads": 2,
    "head_dim": 128,
    "max_position_embeddings": 131072,
    "rope_scaling": {
        "rope_type": "llama3",
        "rope_theta": 500000.0,
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
}


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def test_curves_and_floor_band_are_the_reports(ax):
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    rope = LlamaRotaryEmbedding(transformers.LlamaConfig(**{k: v for k, v in CONFIG.items() if k != "model_type"}))
    report = posenc.audit_rope(rope.to(torch.bfloat16), positions=[0, 10, 1000, 100000])
    out = posenc_viz.plot_rope_audit(report, ax=ax)
    assert out is ax and ax.get_xscale() == "log" and ax.get_yscale() == "log"
    (line,) = ax.get_lines()
    np.testing.assert_array_equal(line.get_xdata(), [10, 1000, 100000])  # position 0 left out (log scale)
    np.testing.assert_allclose(line.get_ydata(), report[0].error[1:])
    assert line.get_label() == "<source>: inv_freq stored in bfloat16"
    (band,) = ax.collections
    top = band.get_paths()[0].vertices[:, 1].max()
    assert top == pytest.approx(max(report[0].floor[1:]))
    assert ax.get_legend() is not None


def test_not_audited_modules_are_not_drawn_and_bad_input(ax):
    report = RopeAudit((RopeModuleAudit("v", "VisionRotaryEmbedding", "float32", False, "a vision tower"),))
    posenc_viz.plot_rope_audit(report, ax=ax, legend=False)
    assert not ax.get_lines() and ax.get_legend() is None
    with pytest.raises(TypeError, match="`report` must be what posenc.audit_rope returns"):
        posenc_viz.plot_rope_audit({"error": [1.0]}, ax=ax)
    with pytest.raises(TypeError, match="`legend` must be a bool"):
        posenc_viz.plot_rope_audit(report, ax=ax, legend=1)


def test_a_module_audited_at_position_zero_alone_draws_nothing(ax):
    """Position 0 is left out (log scale): a module audited there alone
    gives no curve, and no legend (matplotlib would warn of one with no
    labelled artist)."""
    report = RopeAudit((RopeModuleAudit("m", "R", "float32", True, "", "cause", (0,), (0.0,), (0.0,)),))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        posenc_viz.plot_rope_audit(report, ax=ax)
    assert not ax.get_lines() and ax.get_legend() is None


def test_cli_audit(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIG, "dtype": "bfloat16"}), encoding="utf-8")
    out = tmp_path / "o"
    args = ["audit", "--hf-config", str(path), "--out", str(out), "--format", "svg"]
    assert cli.main([*args, "--dtype", "float32"]) == 0
    text = capsys.readouterr().out
    assert "LlamaRotaryEmbedding, float32): the float32 angle product" in text
    assert "positions   545640-1048575  error  4.77e-02" in text
    assert (out / "rope_audit.svg").is_file()
    # the config's dtype: bfloat16 (inv_freq kept in float32, as from_pretrained keeps it)
    assert cli.main([*args, "--force"]) == 0
    assert "(LlamaRotaryEmbedding, bfloat16)" in capsys.readouterr().out


def test_cli_audit_errors(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hidden_size": 64}), encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        cli.main(["audit", "--hf-config", str(bad), "--out", str(tmp_path / "o")])
    assert info.value.code == 2
    assert "without a `model_type`" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit) as info:
        cli.main(["audit", "--out", str(tmp_path / "o")])
    assert info.value.code == 2
