"""load_table: real files written in tmp_path (npy, npz, safetensors, torch checkpoints)."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

from posenc_viz import load_table
from tests.hardening.hostile_files import flip, npy_bytes, npy_header, payload_span, zip_archive, zipped


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
    with pytest.raises(ValueError, match=r"`source` 'o.npy' holds an array of dtype object \(pickled Python objects"):
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
    with pytest.raises(ValueError, match="`source` '.*d.npz' is a folder, not a regular file"):
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


# --------------------------------------------------------- untrusted files
# (the bombs that would take the machine, FIFOs that block and signals run under
# a memory cap and a timer in tests/hardening/test_hostile_files.py)
def _raises_source(exc_type, call, *needles):
    with pytest.raises(exc_type) as info:
        call()
    msg = str(info.value)
    assert msg.startswith(("`source`", "`key`")), msg
    for needle in needles:
        assert needle in msg, (needle, msg)
    return msg


@pytest.mark.parametrize("max_size", [1000, 2**20])
def test_max_size_is_checked_from_the_header(tmp_path, max_size):
    """A 100-byte .npy whose header promises 2**40 floats is refused from the
    header, naming the shape, the count and the limit; a table within the
    limit is read."""
    header = npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576), }")
    (tmp_path / "huge.npy").write_bytes(header + bytes(16))
    _raises_source(
        ValueError,
        lambda: load_table(tmp_path / "huge.npy", max_size=max_size),
        "shape (1048576, 1048576)",
        "1099511627776 values",
        f"more than `max_size` ({max_size})",
    )
    np.save(tmp_path / "ok.npy", np.ones((10, 100)))
    np.testing.assert_array_equal(load_table(tmp_path / "ok.npy", max_size=1000), np.ones((10, 100)))
    with pytest.raises(ValueError, match=r"more than `max_size` \(999\)"):
        load_table(tmp_path / "ok.npy", max_size=999)
    for bad, kind in ((0, ValueError), (-1, ValueError), (2.5, TypeError), (True, TypeError)):
        with pytest.raises(kind, match="`max_size`"):
            load_table(tmp_path / "ok.npy", max_size=bad)


def test_npy_headers_that_escaped_as_other_errors(tmp_path):
    """An unterminated header (tokenize.TokenError) and a shape of 2**70
    (OverflowError) are ValueErrors naming the file."""
    (tmp_path / "open.npy").write_bytes(npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (3,") + bytes(24))
    _raises_source(ValueError, lambda: load_table(tmp_path / "open.npy"), "'open.npy' is not a readable .npy file")
    big = npy_header(f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({2**70},), }}")
    (tmp_path / "big.npy").write_bytes(big + bytes(16))
    _raises_source(ValueError, lambda: load_table(tmp_path / "big.npy"), "more than `max_size`")


@pytest.mark.parametrize(
    "dtype,needle",
    [
        ([("a", "<f8")], "structured dtype [('a', '<f8')]"),
        ([("a", "<f8"), ("b", "<i4")], "structured dtype"),
        ("complex64", "dtype complex64"),
        ("datetime64[s]", "dtype datetime64[s]"),
        ("<U3", "dtype <U3"),
    ],
    ids=["structured-f8", "structured-two", "complex", "datetime", "str"],
)
@pytest.mark.parametrize("suffix", ["npy", "npz"])
def test_arrays_that_are_not_real_numbers_are_refused(tmp_path, dtype, needle, suffix):
    """A structured array of float64 fields came back as float32; every dtype
    that is not bool, integer or float is refused, naming the dtype."""
    arr = np.zeros(4, dtype=dtype)
    path = tmp_path / f"t.{suffix}"
    np.save(path, arr) if suffix == "npy" else np.savez(path, pos=arr)
    _raises_source(ValueError, lambda: load_table(path), needle, "load_table reads bool, integer and float arrays")


def test_npz_members_read_with_bounds_and_crc(tmp_path):
    """Deflate, bzip2 and LZMA members are read; corrupt ones, unknown methods,
    encrypted members, a bad CRC and a member that is not a .npy array are
    ValueErrors naming the file (zlib.error, OSError, LZMAError,
    NotImplementedError, RuntimeError and TypeError escaped before)."""
    import zipfile

    arr = np.linspace(-1, 1, 4000)
    for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        path = tmp_path / f"m{method}.npz"
        path.write_bytes(zipped({"pos.npy": npy_bytes(arr)}, method))
        np.testing.assert_array_equal(load_table(path), arr)
        data = path.read_bytes()
        start, size = payload_span(data, "pos.npy")
        path.write_bytes(flip(data, start + size // 2, 16))
        _raises_source(ValueError, lambda path=path: load_table(path), f"'m{method}.npz' is not a readable .npz file")
    cases = {
        "m99.npz": ({"method": 99}, "compression method 99"),
        "enc.npz": ({"flags": 1}, "is encrypted"),
        "crc.npz": ({"crc": 12345}, "fails its CRC-32 check"),
        "raw.npz": ({"payload": b"hello, world" * 4}, "does not start with the .npy magic"),
    }
    for name, (fields, needle) in cases.items():
        member = {"name": "pos.npy", "payload": npy_bytes(np.zeros(4)), **fields}
        (tmp_path / name).write_bytes(zip_archive([member]))
        _raises_source(ValueError, lambda name=name: load_table(tmp_path / name), needle)


def test_npz_member_declared_larger_than_max_size_is_not_inflated(tmp_path):
    """The directory's size is checked before the member is opened: a member
    declaring 2**40 bytes is refused without reading its stream."""
    member = {"name": "pos.npy", "payload": b"x" * 64, "method": 12, "size": 2**32 - 1}
    (tmp_path / "d.npz").write_bytes(zip_archive([member]))
    msg = "member 'pos.npy' declares 4294967295 bytes, more than an array of `max_size` (1000) values takes"
    _raises_source(ValueError, lambda: load_table(tmp_path / "d.npz", max_size=1000), msg)


@pytest.mark.parametrize(
    "members,needle",
    [
        (["pos.npy", "pos.npy"], "('pos.npy', 'pos.npy')"),
        (["pos", "pos.npy"], "('pos', 'pos.npy')"),
    ],
    ids=["twice", "with-and-without-suffix"],
)
def test_npz_names_given_twice_are_ambiguous(tmp_path, members, needle):
    """NumPy read the last (or the suffix-less) member silently."""
    arc = zip_archive([{"name": n, "payload": npy_bytes(np.full(3, float(i)))} for i, n in enumerate(members)])
    (tmp_path / "two.npz").write_bytes(arc)
    msg = _raises_source(ValueError, lambda: load_table(tmp_path / "two.npz", "pos"), needle)
    assert msg.startswith("`key` 'pos' of 'two.npz' is ambiguous")


def test_safetensors_name_given_twice(tmp_path):
    """Two header entries of one name over the same bytes (float32, then int32):
    the file is refused instead of read one way."""
    pytest.importorskip("safetensors")
    import struct

    header = (
        b'{"pos": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, '
        b'"pos": {"dtype": "I32", "shape": [4], "data_offsets": [0, 16]}}'
    )
    data = struct.pack("<Q", len(header)) + header + np.arange(4, dtype=np.float32).tobytes()
    (tmp_path / "dup.safetensors").write_bytes(data)
    _raises_source(ValueError, lambda: load_table(tmp_path / "dup.safetensors", "pos"), "gives that name twice")


def test_safetensors_size_from_the_header(tmp_path):
    from safetensors.numpy import save_file

    save_file({"pos": np.ones((64, 64), np.float32)}, str(tmp_path / "m.safetensors"))
    _raises_source(ValueError, lambda: load_table(tmp_path / "m.safetensors", max_size=4095), "(4096 values)")
    assert load_table(tmp_path / "m.safetensors", max_size=4096).shape == (64, 64)


@pytest.mark.parametrize("kind", ["folder", "socket", "device"])
def test_only_regular_files_are_opened(tmp_path, kind):
    """A folder, a socket and a device (through a symbolic link) are refused
    from their file type, before anything is opened (a FIFO too: see the
    hardening suite, where a regression could block)."""
    path = tmp_path / "t.npy"
    if kind == "folder":
        path.mkdir()
    elif kind == "socket":
        import socket

        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()
    else:
        os.symlink(os.devnull, path)
    what = {"folder": "a folder", "socket": "a socket", "device": "a character device"}[kind]
    _raises_source(ValueError, lambda: load_table(path), f"is {what}, not a regular file")


def test_symbolic_links(tmp_path):
    """A link to a table is followed; a broken link and a loop of links are named as such."""
    np.save(tmp_path / "real.npy", np.arange(6.0))
    os.symlink(tmp_path / "real.npy", tmp_path / "link.npy")
    np.testing.assert_array_equal(load_table(tmp_path / "link.npy"), np.arange(6.0))
    os.symlink(tmp_path / "gone.npy", tmp_path / "broken.npy")
    _raises_source(FileNotFoundError, lambda: load_table(tmp_path / "broken.npy"), "is a broken symbolic link")
    os.symlink(tmp_path / "b.npy", tmp_path / "a.npy")
    os.symlink(tmp_path / "a.npy", tmp_path / "b.npy")
    _raises_source(ValueError, lambda: load_table(tmp_path / "a.npy"), "cannot be opened")


# ----------------------------------------------- torch checkpoints, hostile
def _save(obj, path, **kw):
    torch = pytest.importorskip("torch")
    torch.save(obj, path, **kw)
    return path


def test_key_none_gives_the_only_tensor(tmp_path):
    """One tensor at 'a' -> 'b' and a number under the flat name 'a.b': the
    tensor, not the number that shadowed its dotted name."""
    torch = pytest.importorskip("torch")
    t = torch.arange(6.0).reshape(2, 3)
    got = load_table(_save({"a": {"b": t}, "a.b": 7}, tmp_path / "s.pt"))
    np.testing.assert_array_equal(got, t.numpy())


@pytest.mark.parametrize(
    "state,key,readings",
    [
        (lambda t: {"a.b": t(0.0), "a": {"b": t(1.0)}}, "a.b", "(['a.b'], ['a']['b'])"),
        (lambda t: {0: t(0.0), "0": t(1.0)}, "0", "([0], ['0'])"),
        (lambda t: {"m": {"x.y": t(0.0), "x": [t(2.0)], "x.y.z": 1}}, "m.x.y", "['m']['x.y']"),
    ],
    ids=["flat-and-nested", "int-and-str", "nested"],
)
def test_a_key_with_two_readings_is_refused(tmp_path, state, key, readings):
    torch = pytest.importorskip("torch")
    path = _save(state(lambda v: torch.full((2, 3), v)), tmp_path / "k.pt")
    if key == "m.x.y":  # 'x' is a list: 'y' is not an index, so one reading only
        np.testing.assert_array_equal(load_table(path, key), np.zeros((2, 3), np.float32))
        return
    msg = _raises_source(ValueError, lambda: load_table(path, key), readings)
    assert msg.startswith(f"`key` {key!r} of 'k.pt' is ambiguous: it names 2 different entries")


def test_checkpoint_records_are_checked_against_their_crc(tmp_path):
    """A flipped byte in a tensor's record loaded with wrong values (the memory
    map never checks the CRC); a checkpoint saved without CRCs is read."""
    import io
    import zipfile

    torch = pytest.importorskip("torch")
    t = torch.arange(64.0)
    path = _save({"pos": t}, tmp_path / "crc.pt")
    data = path.read_bytes()
    name = next(n for n in zipfile.ZipFile(io.BytesIO(data)).namelist() if n.endswith("/data/0"))
    start, _ = payload_span(data, name)
    path.write_bytes(flip(data, start + 40, 4))
    _raises_source(ValueError, lambda: load_table(path, "pos"), f"member {name!r} fails its CRC-32 check")
    torch.serialization.set_crc32_options(False)
    try:
        _save({"pos": t}, tmp_path / "nocrc.pt")
    finally:
        torch.serialization.set_crc32_options(True)
    np.testing.assert_array_equal(load_table(tmp_path / "nocrc.pt", "pos"), t.numpy())


def test_checkpoint_with_compressed_records_is_refused(tmp_path):
    import zipfile

    torch = pytest.importorskip("torch")
    _save({"pos": torch.arange(64.0)}, tmp_path / "src.pt")
    with zipfile.ZipFile(tmp_path / "src.pt") as z, zipfile.ZipFile(tmp_path / "z.pt", "w") as out:
        for n in z.namelist():
            out.writestr(n, z.read(n), compress_type=zipfile.ZIP_DEFLATED if "/data/" in n else zipfile.ZIP_STORED)
    _raises_source(ValueError, lambda: load_table(tmp_path / "z.pt", "pos"), "is compressed (deflate)")


def test_checkpoint_sizes_from_tensor_metadata(tmp_path):
    """A view with zero strides and a sparse tensor are sized by what they
    would become (64 x 64), before anything is copied or densified; within the
    limit they are read like any tensor."""
    torch = pytest.importorskip("torch")
    zero = torch.arange(16.0).as_strided((64, 16), (0, 1))  # 16 floats shown 64 times
    sparse = torch.sparse_coo_tensor([[0, 5], [3, 63]], [1.5, -2.0], (64, 64), check_invariants=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "sparse CSR support is in beta"
        csr = sparse.to_dense().to_sparse_csr()
    path = _save({"zero": zero, "sparse": sparse, "csr": csr}, tmp_path / "m.pt")
    _raises_source(ValueError, lambda: load_table(path, "zero", max_size=1000), "shape (64, 16) (1024 values)")
    for key in ("sparse", "csr"):
        _raises_source(ValueError, lambda key=key: load_table(path, key, max_size=4095), "(4096 values)")
        np.testing.assert_array_equal(load_table(path, key, max_size=4096), sparse.to_dense().numpy())
    np.testing.assert_array_equal(load_table(path, "zero", max_size=1024), zero.numpy())


def test_checkpoint_views_are_read_from_their_records(tmp_path):
    """Views sharing one storage (a column, a transpose, an offset slice) read
    the bytes they show, in their own strides."""
    torch = pytest.importorskip("torch")
    base = torch.arange(48.0).reshape(6, 8)
    views = {"w": base, "col": base[:, 3], "t": base[1:5, ::3].t(), "tail": base[4:]}
    path = _save(views, tmp_path / "v.pt")
    for key, v in views.items():
        np.testing.assert_array_equal(load_table(path, key), v.numpy())


def _rezip(src, dst, change=lambda name, data: data):
    """The records of a checkpoint written again by Python's zipfile (another layout than torch's)."""
    import zipfile

    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for n in z.namelist():
            out.writestr(n, change(n, z.read(n)))
    return dst


def test_checkpoint_written_big_endian(tmp_path):
    """A checkpoint whose byteorder record says big (the bytes of a big-endian
    machine): read whole and swapped, where torch's meta load would swap
    storages that have no bytes and crash the process."""
    torch = pytest.importorskip("torch")
    t = torch.linspace(-2.0, 2.0, 12).reshape(3, 4).double()
    _save({"pos": t, "ids": torch.arange(4)}, tmp_path / "le.pt")

    def big(name, data):
        if name.endswith("/byteorder"):
            return b"big"
        if "/data/" in name:  # both dtypes are 8 bytes wide
            return np.frombuffer(data, "<u8").byteswap().tobytes()
        return data

    path = _rezip(tmp_path / "le.pt", tmp_path / "be.pt", big)
    np.testing.assert_array_equal(load_table(path, "pos"), t.numpy())
    np.testing.assert_array_equal(load_table(path, "ids"), np.arange(4))
    path = _rezip(tmp_path / "le.pt", tmp_path / "odd.pt", lambda n, d: b"middle" if n.endswith("/byteorder") else d)
    _raises_source(ValueError, lambda: load_table(path, "pos"), "its byte order record says 'middle'")


def test_checkpoint_rewritten_by_another_zip_tool(tmp_path):
    """Records that are not where torch.save puts them: torch's meta load
    computes the offsets of all but the first storage, so the file is read
    whole instead (records checked against their CRC first)."""
    torch = pytest.importorskip("torch")
    state = {"a": torch.arange(5.0), "b": torch.arange(7.0), "c": torch.ones(3, 3)}
    path = _rezip(_save(state, tmp_path / "m.pt"), tmp_path / "rezipped.pt")
    for key, t in state.items():
        np.testing.assert_array_equal(load_table(path, key), t.numpy())
    data = path.read_bytes()
    start, size = payload_span(data, next(n for n in zipfile_names(path) if n.endswith("/data/2")))
    path.write_bytes(flip(data, start + 4, 4))
    _raises_source(ValueError, lambda: load_table(path, "c"), "fails its CRC-32 check")
    np.testing.assert_array_equal(load_table(path, "a"), state["a"].numpy())  # its record only is read


def zipfile_names(path):
    import zipfile

    with zipfile.ZipFile(path) as z:
        return z.namelist()


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "bfloat16", "float16", "uint16", "int8", "bool"])
def test_checkpoint_dtypes(tmp_path, dtype):
    """Small floats (8-bit included, which escaped as TypeError) become
    float32; integers and bool are kept."""
    torch = pytest.importorskip("torch")
    values = [0.0, 1.0, 2.0, 0.5, -3.0, 448.0] if "float" in dtype else [0, 1, 2, 3, 1, 0]
    t = torch.tensor(values).to(getattr(torch, dtype))
    got = load_table(_save({"pos": t}, tmp_path / "d.pt"), "pos")
    want = t.float().numpy() if t.is_floating_point() else t.numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_checkpoint_complex_and_meta_tensors_are_refused(tmp_path):
    torch = pytest.importorskip("torch")
    path = _save({"c": torch.ones(3, dtype=torch.complex64), "m": torch.empty(3, device="meta")}, tmp_path / "c.pt")
    _raises_source(ValueError, lambda: load_table(path, "c"), "dtype torch.complex64")
    _raises_source(ValueError, lambda: load_table(path, "m"), "is a torch meta tensor")


def test_checkpoint_with_one_list_many_times_over(tmp_path):
    """40 levels of [x, x] are 2**40 paths to one tensor: the walk that lists
    the names stops at its budget instead of running for hours."""
    torch = pytest.importorskip("torch")
    node = [torch.zeros(2)]
    for _ in range(40):
        node = [node, node]
    path = _save({"nest": node}, tmp_path / "dag.pt")
    _raises_source(ValueError, lambda: load_table(path, "pos"), "entries to walk")
    np.testing.assert_array_equal(load_table(path, "nest." + "0." * 40 + "0"), np.zeros(2, np.float32))


def test_checkpoint_values_that_are_not_arrays_are_shown_short(tmp_path):
    """A key naming a list of 100,000 numbers or a deep list says so in a
    short message (the whole repr was built); a key of more than 256 dotted
    parts is refused before it is followed."""
    path = _save({"losses": list(range(100_000)), "nest": [[[[[[1.5]]]]]]}, tmp_path / "v.pt")
    msg = _raises_source(ValueError, lambda: load_table(path, "losses"), "names a list ([0, 1, 2, 3, 4, 5, ...])")
    assert len(msg) < 120, msg
    _raises_source(ValueError, lambda: load_table(path, "nest"), "names a list ([[[[...]]]]), not an array")
    _raises_source(ValueError, lambda: load_table(path, ".".join(["nest"] + ["0"] * 300)), "has 301 dotted parts")
