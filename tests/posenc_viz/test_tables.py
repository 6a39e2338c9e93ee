"""load_table: real files written in tmp_path (npy, npz, safetensors, torch checkpoints)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from posenc_viz import load_table


def _table(rows: int = 5, dim: int = 6, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)


# ---------------------------------------------------------------- NumPy
@pytest.mark.parametrize("dtype", ["float32", "float64", "int16"])
def test_npy_round_trip(tmp_path, dtype):
    t = (_table() * 100).astype(dtype)
    np.save(tmp_path / "t.npy", t)
    got = load_table(tmp_path / "t.npy")
    assert got.dtype == t.dtype
    np.testing.assert_array_equal(got, t)
    assert got.flags.writeable and got.flags.owndata  # a copy, not a view of the file
    with pytest.raises(ValueError, match="`key` must be None for a .npy file"):
        load_table(str(tmp_path / "t.npy"), "pos_embed")


def test_npy_half_is_float32_and_pickles_are_refused(tmp_path):
    np.save(tmp_path / "h.npy", _table().astype(np.float16))
    got = load_table(tmp_path / "h.npy")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, _table().astype(np.float16).astype(np.float32))
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"`source` 'o.npy' is not a readable .npy file"):
        load_table(tmp_path / "o.npy")


def test_npz_keys(tmp_path):
    pos, cls = _table(197, 8), _table(1, 8, seed=1)
    np.savez(tmp_path / "vit.npz", pos_embed=pos[None], cls_token=cls)
    np.testing.assert_array_equal(load_table(tmp_path / "vit.npz", "pos_embed"), pos[None])
    np.testing.assert_array_equal(load_table(tmp_path / "vit.npz", key="cls_token"), cls)
    with pytest.raises(ValueError) as info:
        load_table(tmp_path / "vit.npz")
    assert str(info.value) == "`key` is required: 'vit.npz' has 2 arrays: cls_token, pos_embed"
    np.savez(tmp_path / "one.npz", table=pos)
    np.testing.assert_array_equal(load_table(tmp_path / "one.npz"), pos)  # one array: no key needed


def test_missing_key_lists_twenty_and_a_count(tmp_path):
    np.savez(tmp_path / "many.npz", **{f"a{i:02d}": np.zeros(2) for i in range(25)})
    with pytest.raises(ValueError) as info:
        load_table(tmp_path / "many.npz", "pos_embed")
    msg = str(info.value)
    assert msg.startswith("`key` 'pos_embed' is not in 'many.npz'; it has 25 arrays: a00, a01, ")
    assert msg.endswith("a18, a19, ... (5 more)")
    assert "a20" not in msg


# ----------------------------------------------------------- safetensors
def test_safetensors_numpy_written(tmp_path):
    from safetensors.numpy import save_file

    pos = _table(17, 4)
    tensors = {"vit.embeddings.position_embeddings": pos[None], "vit.embeddings.cls_token": pos[:1]}
    save_file(tensors, str(tmp_path / "m.safetensors"))
    got = load_table(tmp_path / "m.safetensors", "vit.embeddings.position_embeddings")
    np.testing.assert_array_equal(got, pos[None])
    msg = r"^`key` 'position_embeddings' is not in 'm.safetensors'; it has 2 arrays: vit.embeddings.cls_token, vit"
    with pytest.raises(ValueError, match=msg):
        load_table(tmp_path / "m.safetensors", "position_embeddings")
    with pytest.raises(ValueError, match="`key` is required"):
        load_table(tmp_path / "m.safetensors")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_safetensors_torch_written(tmp_path, dtype):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    t = torch.linspace(-3, 3, 24).reshape(4, 6).to(getattr(torch, dtype))
    save_file({"wpe.weight": t}, str(tmp_path / "gpt.safetensors"))
    got = load_table(tmp_path / "gpt.safetensors")  # one tensor: no key needed
    assert got.dtype == np.float32
    # the oracle: torch's own widening of the stored values
    np.testing.assert_array_equal(got, t.to(torch.float32).numpy())


def test_safetensors_garbage(tmp_path):
    (tmp_path / "bad.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    with pytest.raises(ValueError, match=r"`source` 'bad.safetensors' is not a readable .safetensors file"):
        load_table(tmp_path / "bad.safetensors", "x")


# ----------------------------------------------------------------- torch
@pytest.fixture
def checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    pos = torch.randn(1, 197, 12, generator=torch.Generator().manual_seed(0))
    state = {
        "model": {
            "pos_embed": pos,
            "encoder.layers.0.pos": pos[0, :5].clone().to(torch.bfloat16),
            "blocks": [{"w": torch.ones(3, 3)}, {"w": torch.zeros(3, 3)}],
        },
        "epoch": 7,
        "args": {"lr": 0.1, "name": "vit"},
    }
    path = tmp_path / "ckpt.pth"
    torch.save(state, path)
    return path, pos


def test_torch_nested_dotted_paths(checkpoint):
    path, pos = checkpoint
    np.testing.assert_array_equal(load_table(path, "model.pos_embed"), pos.numpy())
    # a flat state-dict name with dots inside a nested dict
    got = load_table(path, "model.encoder.layers.0.pos")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, pos[0, :5].bfloat16().float().numpy())
    np.testing.assert_array_equal(load_table(path, "model.blocks.1.w"), np.zeros((3, 3), np.float32))


def test_torch_key_errors(checkpoint):
    path, _ = checkpoint
    with pytest.raises(ValueError) as info:
        load_table(path, "pos_embed")
    assert str(info.value) == (
        "`key` 'pos_embed' is not in 'ckpt.pth'; it has 4 arrays: "
        "model.pos_embed, model.encoder.layers.0.pos, model.blocks.0.w, model.blocks.1.w"
    )
    with pytest.raises(ValueError, match=r"`key` 'model' of 'ckpt.pth' names a dict of 4 arrays: pos_embed, encoder"):
        load_table(path, "model")
    with pytest.raises(ValueError, match=r"`key` 'epoch' of 'ckpt.pth' names an int \(7\), not an array"):
        load_table(path, "epoch")
    with pytest.raises(ValueError, match="`key` is required: 'ckpt.pth' has 4 arrays"):
        load_table(path)


def test_torch_bare_tensor_legacy_format_and_bin(tmp_path):
    torch = pytest.importorskip("torch")
    t = torch.arange(12.0).reshape(3, 4)
    torch.save(t, tmp_path / "t.pt", _use_new_zipfile_serialization=False)  # not memory-mappable
    np.testing.assert_array_equal(load_table(tmp_path / "t.pt"), t.numpy())
    with pytest.raises(ValueError, match="`key` must be None: 't.pt' holds one tensor"):
        load_table(tmp_path / "t.pt", "weight")
    torch.save({"embeddings.position_embeddings.weight": t}, tmp_path / "pytorch_model.bin")
    loaded = load_table(tmp_path / "pytorch_model.bin", "embeddings.position_embeddings.weight")
    np.testing.assert_array_equal(loaded, t.numpy())


class _NotAllowed:
    pass


def test_torch_weights_only_refuses_objects(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"pos": torch.ones(2, 2), "obj": _NotAllowed()}, tmp_path / "evil.pt")
    with pytest.raises(ValueError) as info:
        load_table(tmp_path / "evil.pt", "pos")
    msg = str(info.value)
    assert msg.startswith("`source` 'evil.pt' holds objects that loading with weights_only=True refuses (")
    assert "_NotAllowed" in msg and "\n" not in msg
    (tmp_path / "junk.pt").write_bytes(b"hello, not a checkpoint")
    with pytest.raises(ValueError, match=r"^`source` 'junk.pt' is not a readable torch checkpoint \("):
        load_table(tmp_path / "junk.pt")


# ----------------------------------------------------------- bad input
def test_kind_and_path_errors(tmp_path):
    (tmp_path / "t.csv").write_text("1,2\n")
    with pytest.raises(ValueError) as info:
        load_table(tmp_path / "t.csv")
    assert str(info.value) == (
        "`source` must be one of .npy, .npz, .safetensors and torch checkpoints (.pt, .pth, .bin), got 't.csv'"
    )
    with pytest.raises(FileNotFoundError, match="`source` '.*nope.npy' does not exist"):
        load_table(tmp_path / "nope.npy")
    (tmp_path / "d.npz").mkdir()
    with pytest.raises(IsADirectoryError, match="is a folder"):
        load_table(tmp_path / "d.npz")
    with pytest.raises(ValueError, match="`source` must name a file, got an empty string"):
        load_table("")
    for bad in (3, b"t.npy", None, [str(tmp_path / "t.npy")]):
        with pytest.raises(TypeError, match="`source` must be a path"):
            load_table(bad)
    np.save(tmp_path / "t.npy", np.zeros(2))
    with pytest.raises(TypeError, match="`key` must be a str or None, got 0"):
        load_table(tmp_path / "t.npy", 0)
    with pytest.raises(ValueError, match="`key` must not be empty"):
        load_table(tmp_path / "t.npy", "")
    (tmp_path / "x.npz").write_bytes(b"PK not really")
    with pytest.raises(ValueError, match="`source` 'x.npz' is not a readable .npz file"):
        load_table(tmp_path / "x.npz", "a")


def test_missing_optional_packages(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "safetensors", None)
    (tmp_path / "m.safetensors").write_bytes(b"")
    msg = "reading .safetensors files needs the safetensors package: pip install safetensors"
    with pytest.raises(ImportError, match=msg):
        load_table(tmp_path / "m.safetensors", "x")
    monkeypatch.setitem(sys.modules, "torch", None)
    (tmp_path / "m.pt").write_bytes(b"")
    msg = r"reading torch checkpoints \(.pt, .pth, .bin\) needs PyTorch: pip install torch"
    with pytest.raises(ImportError, match=msg):
        load_table(tmp_path / "m.pt")
