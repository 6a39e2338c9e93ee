"""plot_rope_axes and the rope-axes figure / subcommand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import posenc
from posenc_viz import cli, figures, plot_rope_axes


def test_each_axis_its_wavelengths(ax):
    plot_rope_axes([16, 56, 56], base=[10000.0, 10000.0, 256.0], grid_shape=[1, 64, 32], names=["t", "h", "w"], ax=ax)
    curves = [line for line in ax.lines if line.get_label().endswith("dims")]
    assert [c.get_label() for c in curves] == ["t: 16 dims", "h: 56 dims", "w: 56 dims"]
    for c, (d, b) in zip(curves, [(16, 10000.0), (56, 10000.0), (56, 256.0)]):
        i = np.arange(d // 2)
        np.testing.assert_array_equal(c.get_xdata(), i)
        np.testing.assert_allclose(c.get_ydata(), 2 * math.pi * b ** (2 * i / d), rtol=1e-12)
    grid = {line.get_label(): line.get_ydata()[0] for line in ax.lines if "position" in line.get_label()}
    assert grid == {"t: 1 position": 1, "h: 64 positions": 64, "w: 32 positions": 32}
    assert ax.get_yscale() == "log"
    assert ax.get_ylabel() == "wavelength (positions)"


def test_strided_turns_and_shared_grid_line(ax):
    plot_rope_axes([8, 8], split="strided", turns=True, grid_shape=[16, 16], names=["h", "w"], ax=ax)
    w = 10000.0 ** (-np.arange(0, 16, 2) / 16)
    curves = [line for line in ax.lines if line.get_label().endswith("dims")]
    np.testing.assert_allclose(curves[0].get_ydata(), 1 / w[0::2], rtol=1e-12)  # turns: 2 pi / (2 pi w)
    np.testing.assert_allclose(curves[1].get_ydata(), 1 / w[1::2], rtol=1e-12)
    assert [line.get_label() for line in ax.lines if "positions" in line.get_label()] == ["h, w: 16 positions"]


def test_frequency_quantity_and_options(ax):
    plot_rope_axes([4, 6], quantity="frequency", legend=False, ax=ax, linewidth=2.5)
    curves = ax.lines
    np.testing.assert_allclose(curves[1].get_ydata(), posenc.rope_frequencies(6), rtol=1e-12)
    assert curves[0].get_linewidth() == 2.5
    assert ax.get_legend() is None


@pytest.mark.parametrize(
    ("kwargs", "kind", "match"),
    [
        ({"axes_dim": 16}, TypeError, "`axes_dim`"),
        ({"axes_dim": [16, 5]}, ValueError, "`axes_dim`"),
        ({"axes_dim": [16, 16], "grid_shape": [4]}, ValueError, "`grid_shape`"),
        ({"axes_dim": [16, 16], "grid_shape": [4, 0]}, ValueError, "`grid_shape`"),
        ({"axes_dim": [16, 16], "names": ["a"]}, ValueError, "`names`"),
        ({"axes_dim": [16, 16], "base": [10.0]}, ValueError, "`base`"),
        ({"axes_dim": [16, 16], "quantity": "period"}, ValueError, "`quantity`"),
    ],
)
def test_bad_arguments(ax, kwargs, kind, match):
    with pytest.raises(kind, match=match):
        plot_rope_axes(ax=ax, **kwargs)


def test_figure_and_subcommand(tmp_path, capsys):
    assert "rope_axes" in figures.FIGURES
    assert cli.main(["rope-axes", "--out", str(tmp_path / "a"), "--format", "svg", "--dpi", "50"]) == 0
    svg = (tmp_path / "a" / "rope_axes.svg").read_text()
    assert "axes_dim [44, 42, 42]" in svg  # the default: a 128 head split as Wan 2.1 splits it
    args = ["--out", str(tmp_path / "b"), "--format", "svg", "--dpi", "50"]
    assert cli.main(["rope-axes", "--axes-dim", "16,56,56", "--grid-shape", "1,64,64", *args]) == 0
    assert "axes_dim [16, 56, 56]" in (tmp_path / "b" / "rope_axes.svg").read_text()
    cfg = tmp_path / "qwen.json"
    vision = {"model_type": "qwen2_vl", "embed_dim": 1280, "num_heads": 16}
    vision["rope_parameters"] = {"rope_type": "axial", "rope_theta": 10000.0}
    cfg.write_text(json.dumps({"model_type": "qwen2_vl", "vision_config": vision}))
    assert cli.main(["rope-axes", "--hf-config", str(cfg), *args, "--force"]) == 0
    assert "qwen2_vl: axes_dim [40, 40]" in (tmp_path / "b" / "rope_axes.svg").read_text()
    capsys.readouterr()


@pytest.mark.parametrize(
    ("extra", "config", "needle"),
    [
        (["--axes-dim", "16,5"], None, "--axes-dim"),
        (["--axes-dim", "16,16", "--grid-shape", "4"], None, "--grid-shape"),
        (["--base", "100"], {"axes_dims_rope": [16, 56, 56]}, "--base"),
        ([], {"rope_axes_dim": [256, 256], "attention_head_dim": 128}, "CogView4"),
        ([], {"rope_theta": 10000.0}, "--axes-dim"),
    ],
)
def test_subcommand_usage_errors(tmp_path, capsys, extra, config, needle):
    args = ["rope-axes", "--out", str(tmp_path), "--format", "png", *extra]
    if config is not None:
        (tmp_path / "c.json").write_text(json.dumps(config))
        args += ["--hf-config", str(tmp_path / "c.json")]
    with pytest.raises(SystemExit) as info:
        cli.main(args)
    assert info.value.code == 2
    assert needle in capsys.readouterr().err.strip().splitlines()[-1]
    assert not any(tmp_path.glob("*.png"))


def test_axes_from_config_reads_through_from_hf():
    """The vision towers are read by posenc.scaling.from_hf: its widths,
    base and split, the ones it refuses refused with its reason."""
    from posenc_viz.axes import axes_from_config

    pix = {"model_type": "pixtral", "head_dim": 64, "image_size": 64, "patch_size": 16}
    assert axes_from_config(pix) == {
        "axes_dim": [32, 32], "base": 10000.0, "split": "strided", "grid_shape": [4, 4], "label": "pixtral",
    }  # fmt: skip
    # a frequency matrix (Kimi-K2.5 interleaves the axes plane by plane): one RoPE of width 16 per axis
    kimi = {"model_type": "kimi_k25_vision", "hidden_size": 64, "num_attention_heads": 2,
            "rope_parameters": {"rope_type": "axial", "rope_theta": 500.0}}  # fmt: skip
    got = axes_from_config({"model_type": "kimi_k25", "vision_config": kimi})
    assert (got["axes_dim"], got["base"], got["split"]) == ([16, 16], 500.0, "blocks")
    with pytest.raises(ValueError, match="gemma4_vision"):
        axes_from_config({"model_type": "gemma4_vision", "head_dim": 64})
    with pytest.raises(ValueError, match="turns"):
        axes_from_config({"model_type": "dinov3_vit", "hidden_size": 64, "num_attention_heads": 2})
