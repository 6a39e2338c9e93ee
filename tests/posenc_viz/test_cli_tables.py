"""``posenc-viz`` with tables and configs from files: --table, grid-similarity, rope-scaling --hf-config."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

import posenc
from posenc_viz import cli, figures

OUT = ["--format", "png", "--dpi", "50"]

#: the RoPE entries of Llama 3.1 8B's config.json
LLAMA31 = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "torch_dtype": "bfloat16",
}


def _params(**kw) -> figures.Params:
    return replace(figures.check_params(512, 100, 10000.0, "interleaved", 128), **kw)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run(
        [sys.executable, "-m", "posenc_viz", *args], capture_output=True, text=True, cwd=cwd, timeout=300, env=env
    )


def _usage(capsys, args: list[str]) -> str:
    with pytest.raises(SystemExit) as info:
        cli.main(args)
    assert info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("usage: posenc-viz")
    assert sum(1 for line in lines if "error:" in line) == 1 and "Traceback" not in "\n".join(lines)
    return lines[-1]


@pytest.fixture
def vit(tmp_path) -> tuple[Path, np.ndarray]:
    """A (1, 197, 32) table shaped like a ViT's pos_embed (cls row first), saved as .npy."""
    grid = np.asarray(posenc.sincos_grid((14, 14), 32, flatten=True), dtype=np.float32)
    table = np.concatenate([np.full((1, 32), 0.5, np.float32), grid])[None]
    path = tmp_path / "vit.npy"
    np.save(path, table)
    return path, table


# ------------------------------------------------------------ the drawings
def test_table_figures_draw_the_table():
    table = np.random.default_rng(3).standard_normal((12, 8))
    fig = plt.figure()
    figures._draw_encoding(fig, _params(table=table))
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), table)

    fig = plt.figure()
    figures._draw_similarity(fig, _params(table=table))
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), unit @ unit.T, atol=1e-13)
    assert fig.axes[0].images[0].colorbar.ax.get_ylabel() == "cosine similarity"

    fig = plt.figure()
    figures._draw_dimensions(fig, _params(table=table))
    lines = [ln for ln in fig.axes[0].lines if ln.get_label().startswith("dim ")]
    assert [ln.get_label() for ln in lines] == ["dim 0", "dim 2", "dim 5", "dim 7"]
    for ln, col in zip(lines, (0, 2, 5, 7)):
        np.testing.assert_array_equal(ln.get_ydata(), table[:, col])


def test_table_offset_profile_against_loops():
    table = np.random.default_rng(4).standard_normal((9, 5))
    fig = plt.figure()
    figures._draw_similarity_by_offset(fig, _params(table=table))
    line = fig.axes[0].lines[0]
    k, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    np.testing.assert_array_equal(k, np.arange(-8, 9))

    def cos(a, b):
        return math.fsum(a * b) / math.sqrt(math.fsum(a * a) * math.fsum(b * b))

    for off, val in zip(k, y):
        pairs = [cos(table[t], table[t + off]) for t in range(9) if 0 <= t + off < 9]
        assert val == pytest.approx(math.fsum(pairs) / len(pairs), abs=1e-13)
    assert fig.axes[0].get_ylabel() == "mean cosine similarity"


def _llama3_wavelengths(dim: int, base: float, factor: float, low: float, high: float, original: int) -> np.ndarray:
    """Llama 3.1's frequency rule (Meta's reference code), in float64."""
    out = []
    for i in range(dim // 2):
        f = base ** (-2.0 * i / dim)
        wavelen = 2 * math.pi / f
        if wavelen < original / high:
            g = f
        elif wavelen > original / low:
            g = f / factor
        else:
            smooth = (original / wavelen - low) / (high - low)
            g = (1 - smooth) * f / factor + smooth * f
        out.append(2 * math.pi / g)
    return np.array(out)


def test_hf_config_figure_against_llama31_oracle():
    from posenc import scaling

    rope = dict(scaling.from_hf(LLAMA31), label="llama")
    fig = plt.figure()
    figures._draw_rope_scaling(fig, _params(rope=rope))
    ax = fig.axes[0]
    curves = [ln for ln in ax.lines if ln.get_label() in ("original", "llama (Llama3 ×8)")]
    assert [ln.get_label() for ln in curves] == ["original", "llama (Llama3 ×8)"]
    unscaled = 2 * math.pi / (500000.0 ** (-2.0 * np.arange(64) / 128))
    np.testing.assert_allclose(curves[0].get_ydata(), unscaled, rtol=1e-12)
    expected = _llama3_wavelengths(128, 500000.0, 8.0, 1.0, 4.0, 8192)
    np.testing.assert_allclose(curves[1].get_ydata(), expected, rtol=1e-12)
    assert any("original context 8192" in t.get_text() for t in ax.texts)
    assert ax.get_yscale() == "log"


def test_hf_config_without_scaling_draws_one_curve():
    fig = plt.figure()
    rope = {"dim": 64, "base": 10000.0, "scaling": None, "label": "gpt_neox"}
    figures._draw_rope_scaling(fig, _params(rope=rope))
    labels = [ln.get_label() for ln in fig.axes[0].lines if not ln.get_label().startswith("_")]
    assert labels == ["gpt_neox (no scaling)"]


# ------------------------------------------------------------- the command
def test_table_subcommands_write_files(tmp_path, capsys, vit):
    path, table = vit
    torch = pytest.importorskip("torch")
    torch.save({"model": {"pos_embed": torch.asarray(table)}}, tmp_path / "ckpt.pt")
    np.savez(tmp_path / "vit.npz", pos_embed=table, cls_token=table[:, :1])
    out = tmp_path / "o"
    runs = [
        ("encoding", str(path)),
        ("similarity", f"{tmp_path / 'vit.npz'}:pos_embed"),
        ("similarity-by-offset", f"{tmp_path / 'ckpt.pt'}:model.pos_embed"),
        ("dimensions", str(path)),
    ]
    for cmd, spec in runs:
        assert cli.main([cmd, "--table", spec, "--out", str(out), *OUT]) == 0
    written = capsys.readouterr().out.splitlines()
    assert written == [f"wrote {out / n}.png" for n in ("encoding", "similarity", "similarity_by_offset", "dimensions")]


def test_grid_similarity_vit_b16_subprocess(tmp_path, vit):
    path, _ = vit
    args = ("--table", str(path), "--grid", "14x14", "--prefix", "1", "--out", "figs", "--format", "png,svg")
    res = _run("grid-similarity", *args, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [f"wrote {Path('figs') / f'grid_similarity.{ext}'}" for ext in ("png", "svg")]
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["grid_similarity.png", "grid_similarity.svg"]
    again = _run(
        "grid-similarity", "--table", str(path), "--prefix", "1", "--out", "figs", "--format", "png", cwd=tmp_path
    )
    assert again.returncode == 2 and "nothing was written; pass --force to overwrite" in again.stderr


def test_grid_similarity_in_process(tmp_path, capsys, vit):
    path, _ = vit
    out = tmp_path / "g"
    args = ["grid-similarity", "--table", str(path), "--prefix", "1", "--out", str(out), "--column", "double", *OUT]
    assert cli.main(args) == 0
    assert capsys.readouterr().out.splitlines() == [f"wrote {out / 'grid_similarity.png'}"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["grid-similarity"], "the following arguments are required: --table"),
        (
            ["grid-similarity", "--table", "{vit}", "--grid", "14"],
            "argument --grid: expected HxW such as 14x14, got '14'",
        ),
        (["grid-similarity", "--table", "{vit}", "--grid", "0x4"], "argument --grid: expected HxW with positive sizes"),
        (["grid-similarity", "--table", "{vit}", "--grid", "100x100"], "at most 4096 patches"),
        (
            ["grid-similarity", "--table", "{vit}", "--grid", "14x14"],
            "--grid must be a pair of positive integers with height * width = 197",
        ),
        (
            ["grid-similarity", "--table", "{vit}"],
            (
                "--grid is required: 197 patch rows (197 rows of --table less --prefix = 0) are not a square grid; "
                "with a cls token first, set --prefix to 1"
            ),
        ),
        (["grid-similarity", "--table", "{vit}", "--prefix", "197"], "--prefix must be in [0, 196]"),
        (
            ["grid-similarity", "--table", "{vit}", "--prefix", "-1"],
            "argument --prefix: expected an integer in [0, 1024]",
        ),
        (["grid-similarity", "--table", "{tmp}/none.npy"], "argument --table: file '{tmp}/none.npy' does not exist"),
        (
            ["grid-similarity", "--table", "{tmp}/t.csv"],
            "argument --table: the file must be one of .npy, .npz, .safetensors and torch checkpoints",
        ),
        (
            ["similarity", "--table", "{tmp}/vit.npz:pos"],
            "argument --table: KEY 'pos' is not in 'vit.npz'; it has 2 arrays: cls_token, pos_embed",
        ),
        (["similarity", "--table", "{tmp}/vit.npz"], "argument --table: KEY is required: 'vit.npz' has 2 arrays"),
        (["similarity", "--table", "{tmp}/vit.npz:"], "argument --table: expected PATH:KEY with a key after the colon"),
        (["encoding", "--table", "{tmp}/flat.npy"], "argument --table: the table must be a 2-D table (positions, dim)"),
        (
            ["encoding", "--table", "{vit}", "--dim", "64"],
            "argument --dim: not allowed with --table (the table sets the figure)",
        ),
        (["dimensions", "--table", "{vit}", "--layout", "concat"], "argument --layout: not allowed with --table"),
        (["wavelengths", "--table", "{vit}"], "unrecognized arguments: --table"),
        (["all", "--table", "{vit}"], "unrecognized arguments: --table"),
    ],
)
def test_bad_tables_are_usage_errors(tmp_path, capsys, vit, args, needle):
    np.savez(tmp_path / "vit.npz", pos_embed=vit[1], cls_token=vit[1][:, :1])
    np.save(tmp_path / "flat.npy", np.zeros(5))
    (tmp_path / "t.csv").write_text("1\n")
    fill = {"vit": str(vit[0]), "tmp": str(tmp_path)}
    args = [a.format(**fill) for a in args]
    last = _usage(capsys, [*args, "--out", str(tmp_path / "o"), *OUT])
    assert needle.format(**fill) in last
    assert not (tmp_path / "o").exists()  # nothing written, not even the folder


def test_hf_config_command(tmp_path, capsys):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(LLAMA31))
    out = tmp_path / "o"
    assert cli.main(["rope-scaling", "--hf-config", str(cfg), "--out", str(out), *OUT]) == 0
    assert capsys.readouterr().out.splitlines() == [f"wrote {out / 'rope_scaling.png'}"]


def test_hf_config_subprocess(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA31))
    res = _run("rope-scaling", "--hf-config", "config.json", "--out", ".", "--format", "svg", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["wrote rope_scaling.svg"]
    assert (tmp_path / "rope_scaling.svg").read_text().lstrip().startswith("<?xml")


@pytest.mark.parametrize(
    ("content", "extra", "needle"),
    [
        (None, [], "argument --hf-config: file '{cfg}' does not exist"),
        ("{not json", [], "argument --hf-config: '{cfg}' is not JSON (Expecting property name"),
        ("[1, 2]", [], "argument --hf-config: '{cfg}' must hold a JSON object, got a list"),
        (
            json.dumps({**LLAMA31, "rope_scaling": {"rope_type": "no-such-type"}}),
            [],
            "argument --hf-config: `rope_type` 'no-such-type' is not supported",
        ),
        (
            json.dumps({"model_type": "pixtral", "hidden_size": 64, "num_attention_heads": 4, "rope_theta": 1e4}),
            [],
            "argument --hf-config: '{cfg}' describes RoPE over several axes (a vision tower)",
        ),
        (json.dumps(LLAMA31), ["--base", "1000"], "argument --base: not allowed with --hf-config (the config sets it)"),
        (json.dumps(LLAMA31), ["--head-dim", "64"], "argument --head-dim: not allowed with --hf-config"),
        (
            json.dumps(LLAMA31),
            ["--layer-type", "full_attention"],
            "argument --hf-config: --layer-type applies to configs with per-layer RoPE entries only",
        ),
    ],
)
def test_bad_hf_configs_are_usage_errors(tmp_path, capsys, content, extra, needle):
    cfg = tmp_path / "config.json"
    if content is not None:
        cfg.write_text(content)
    last = _usage(capsys, ["rope-scaling", "--hf-config", str(cfg), *extra, "--out", str(tmp_path / "o"), *OUT])
    assert needle.format(cfg=cfg) in last
    assert not (tmp_path / "o").exists()


def test_layer_type_needs_hf_config(tmp_path, capsys):
    last = _usage(capsys, ["rope-scaling", "--layer-type", "x", "--out", str(tmp_path / "o")])
    assert "argument --layer-type: only with --hf-config" in last


def test_missing_safetensors_is_exit_1(tmp_path, capsys, monkeypatch):
    (tmp_path / "m.safetensors").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "safetensors", None)
    assert cli.main(["encoding", "--table", f"{tmp_path / 'm.safetensors'}:x", "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err.strip() == (
        "posenc-viz: error: reading .safetensors files needs the safetensors package: pip install safetensors"
    )
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------ hostile inputs, figures
def _table_path(tmp_path: Path, table: np.ndarray) -> str:
    np.save(tmp_path / "t.npy", table)
    return str(tmp_path / "t.npy")


@pytest.mark.parametrize("command", ["encoding", "similarity", "similarity-by-offset", "dimensions"])
def test_tables_with_nan_or_inf_are_refused(tmp_path, capsys, command):
    """A NaN or infinite cell was drawn as a blank cell, a blank row and column
    of the similarity matrix or a curve of NaN, with exit 0: refused, saying how
    many cells and which row."""
    table = np.random.default_rng(1).standard_normal((12, 8))
    table[3, 2], table[3, 5], table[7, 0] = np.nan, np.inf, -np.inf
    last = _usage(capsys, [command, "--table", _table_path(tmp_path, table), "--out", str(tmp_path / "o"), *OUT])
    assert last.endswith(
        "argument --table: the table has 3 non-finite values (NaN or infinity) in 2 rows (first: row 3) of 12; "
        "a figure of it would mislead"
    )
    assert not (tmp_path / "o").exists()


def _zero_row_table() -> np.ndarray:
    table = np.random.default_rng(2).standard_normal((10, 6))
    table[0] = 0.0  # a padding row, as fairseq's learned positions have
    table[6] = 0.0
    return table


def test_zero_rows_offset_profile_leaves_undefined_pairs_out():
    """The mean at offset k is over the pairs (t, t+k) of non-zero rows (a
    zero row has no direction); one zero row made every mean NaN."""
    table = _zero_row_table()
    ks, y = figures.offset_profile(table)
    n = table.shape[0]

    def cos(a, b):
        return math.fsum(a * b) / math.sqrt(math.fsum(a * a) * math.fsum(b * b))

    live = [bool(np.any(r)) for r in table]
    for k, got in zip(ks, y):
        pairs = [cos(table[t], table[t + k]) for t in range(n) if 0 <= t + k < n and live[t] and live[t + k]]
        if pairs:
            assert got == pytest.approx(math.fsum(pairs) / len(pairs), abs=1e-13), k
        else:
            assert math.isnan(got), k
    assert list(ks[np.isnan(y)]) == [-9, 9]  # the one pair (0, 9) has a zero row


@pytest.mark.parametrize(
    "command,left_out",
    [("similarity", False), ("similarity-by-offset", True), ("grid-similarity", False)],
)
def test_zero_rows_are_drawn_with_a_note(tmp_path, capsys, command, left_out):
    table = np.vstack([_zero_row_table(), np.ones((6, 6))])  # 16 rows: a 4 x 4 grid
    out = tmp_path / "o"
    assert cli.main([command, "--table", _table_path(tmp_path, table), "--out", str(out), *OUT]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    note = (
        "posenc-viz: note: 2 zero rows (0, 6): a zero row has no direction, "
        "its cosine similarities are undefined and drawn grey"
    )
    assert err == [note + ("; left out of the mean at each offset" if left_out else "")]
    assert len(list(out.iterdir())) == 1


def test_zero_rows_before_the_prefix_are_not_noted(tmp_path, capsys):
    table = np.vstack([np.zeros((1, 6)), np.random.default_rng(3).standard_normal((16, 6))])
    args = ["grid-similarity", "--table", _table_path(tmp_path, table), "--prefix", "1", "--out", str(tmp_path / "o")]
    assert cli.main([*args, *OUT]) == 0
    assert capsys.readouterr().err == ""


def test_cosine_similarity_of_huge_and_tiny_rows():
    """Rows of 1e200 overflowed the norms (NaN cells, RuntimeWarnings);
    subnormal rows underflowed: rows are scaled before they are normalised."""
    table = np.random.default_rng(4).standard_normal((8, 5))
    scaled = table * np.array([1e200, 1e-310, 1.0, 1e150, 3e-300, 1.0, 1e-5, 1e300])[:, None]
    fig = plt.figure()
    figures._draw_similarity(fig, _params(table=scaled))
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), unit @ unit.T, atol=1e-13)
    _, y = figures.offset_profile(scaled)
    np.testing.assert_allclose(y, figures.offset_profile(table)[1], atol=1e-13)


def test_table_size_limit_is_passed_into_the_reader(tmp_path, capsys, monkeypatch):
    """The limit of a figure is checked from the file's header: a header that
    promises more values than a figure draws is refused before its data (here
    absent) is read; it was read whole and then measured."""
    from tests.hardening.hostile_files import npy_header

    monkeypatch.setattr(figures, "MAX_TABLE_SIZE", 1000)
    (tmp_path / "t.npy").write_bytes(npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (64, 64), }"))
    last = _usage(capsys, ["encoding", "--table", str(tmp_path / "t.npy"), "--out", str(tmp_path / "o"), *OUT])
    assert last.endswith(
        "argument --table: the file 't.npy' holds an array of shape (64, 64) (4096 values), "
        "more than the limit of a figure (1000)"
    )


@pytest.mark.parametrize("kind", ["folder", "device", "deep", "large", "binary"])
def test_hf_configs_that_are_not_small_json_files(tmp_path, capsys, monkeypatch, kind):
    """A folder and a device are refused before they are opened (a FIFO too:
    see the hardening suite); a 200,000-deep JSON (RecursionError), a file
    over the size limit and bytes that are not UTF-8 are usage errors."""
    cfg = tmp_path / "config.json"
    needle = {
        "folder": f"argument --hf-config: file {str(cfg)!r} is a folder, not a regular file",
        "device": f"argument --hf-config: file {str(cfg)!r} is a character device, not a regular file",
        "deep": f"argument --hf-config: {str(cfg)!r} is nested deeper than 64 levels",
        "large": f"argument --hf-config: file {str(cfg)!r} has 2001 bytes, more than the 2000 a config may have",
        "binary": f"argument --hf-config: file {str(cfg)!r} is not UTF-8 text (invalid start byte at byte 0)",
    }[kind]
    if kind == "folder":
        cfg.mkdir()
    elif kind == "device":
        os.symlink(os.devnull, cfg)
    elif kind == "deep":
        cfg.write_text("[" * 200_000 + "]" * 200_000)
    elif kind == "large":
        monkeypatch.setattr(cli, "MAX_CONFIG_BYTES", 2000)
        cfg.write_text('{"model_type": "' + "x" * 1983 + '"}')  # 2001 bytes
    else:
        cfg.write_bytes(b"\xff\xfe{}")
    last = _usage(capsys, ["rope-scaling", "--hf-config", str(cfg), "--out", str(tmp_path / "o"), *OUT])
    assert last.endswith(needle), last


def test_hf_config_nested_65_levels(tmp_path, capsys):
    """The depth is bounded by the command, not by the interpreter's recursion
    limit: 64 levels are read (and handed to from_hf, which finds no RoPE in
    them), 65 are refused."""
    cfg = tmp_path / "config.json"
    args = ["rope-scaling", "--hf-config", str(cfg), "--out", str(tmp_path / "o"), *OUT]
    cfg.write_text(json.dumps({"extra": json.loads("[" * 63 + "]" * 63)}))
    assert "argument --hf-config: `config` must have head_dim" in _usage(capsys, args)
    cfg.write_text(json.dumps({"extra": json.loads("[" * 64 + "]" * 64)}))
    assert _usage(capsys, args).endswith("is nested deeper than 64 levels")


def test_a_dangling_link_in_place_of_a_figure_is_not_replaced(tmp_path, capsys):
    """A symbolic link with a figure's name whose target is missing was
    replaced without --force (Path.exists follows the link)."""
    out = tmp_path / "o"
    out.mkdir()
    link = out / "wavelengths.png"
    os.symlink(tmp_path / "elsewhere.png", link)
    last = _usage(capsys, ["wavelengths", "--dim", "16", "--out", str(out), *OUT])
    assert last.endswith("1 of the files exist in " + repr(str(out)) + " (wavelengths.png); nothing was written; "
                         "pass --force to overwrite")
    assert os.readlink(link) == str(tmp_path / "elsewhere.png")
    assert cli.main(["wavelengths", "--dim", "16", "--out", str(out), "--force", *OUT]) == 0
    assert not link.is_symlink() and link.read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / "elsewhere.png").exists()  # the link was replaced, not written through


def _signal_mid_write(monkeypatch, signum):
    """savefig writes a few bytes, then the process gets ``signum``."""
    import signal

    from matplotlib.figure import Figure

    real = Figure.savefig

    def savefig(self, fh, *args, **kwargs):
        fh.write(b"partial")
        signal.raise_signal(signum)
        return real(self, fh, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)


def test_sighup_mid_write_unwinds_and_is_raised_again(tmp_path, monkeypatch):
    """SIGHUP in the middle of writing a figure: the temporary file is
    removed, nothing is written, the handlers are restored and the signal is
    raised again for them (by default it ends the process: see the
    hardening suite, which checks the exit status of a real process)."""
    import signal

    got = []
    before = signal.signal(signal.SIGHUP, lambda s, f: got.append(s))
    term = signal.getsignal(signal.SIGTERM)
    try:
        _signal_mid_write(monkeypatch, signal.SIGHUP)
        code = cli.main(["wavelengths", "--dim", "16", "--out", str(tmp_path / "o"), *OUT])
        after = signal.getsignal(signal.SIGHUP), signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGHUP, before)
    assert code == 128 + signal.SIGHUP
    assert got == [signal.SIGHUP]
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == []
    assert after[1] is term and after[0] is not signal.SIG_IGN


def test_ignored_sighup_stays_ignored(tmp_path, monkeypatch, capsys):
    """Under nohup (SIGHUP ignored) the command goes on and writes its figure."""
    import signal

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        _signal_mid_write(monkeypatch, signal.SIGHUP)
        code = cli.main(["wavelengths", "--dim", "16", "--out", str(tmp_path / "o"), *OUT])
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)
    assert code == 0
    assert (tmp_path / "o" / "wavelengths.png").read_bytes().startswith(b"partial\x89PNG")  # the savefig above
