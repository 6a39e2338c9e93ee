"""Tables from files: :func:`load_table` reads the position table of a model."""

from __future__ import annotations

import json
import math
import os
import re
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from . import _files
from ._convert import to_numpy
from ._internals import check_int, show

__all__ = ["load_table"]

#: file suffix -> kind of file
KINDS = {
    ".npy": "npy",
    ".npz": "npz",
    ".safetensors": "safetensors",
    ".pt": "torch",
    ".pth": "torch",
    ".bin": "torch",
}
_ACCEPTED = ".npy, .npz, .safetensors and torch checkpoints (.pt, .pth, .bin)"

#: how many names an error lists before it gives the count of the rest
_LISTED = 20

#: default ``max_size`` of :func:`load_table`: 2**28 values (1 GiB of float32)
MAX_SIZE = 2**28

#: safetensors dtypes that NumPy reads as they are (BF16 is widened to float32 here)
_SAFETENSORS_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U64": "<u8",
    "U32": "<u4",
    "U16": "<u2",
    "U8": "u1",
    "BOOL": "?",
}
#: the longest safetensors header read (the format's own limit)
_MAX_SAFETENSORS_HEADER = 100_000_000

#: containers and entries a checkpoint walk visits at most (a pickle can hold
#: one list many times over: 40 levels of [x, x] are 2**40 paths)
_MAX_VISITS = 200_000
#: nesting depth of a checkpoint that names are listed to
_MAX_DEPTH = 32


def load_table(source: str | os.PathLike, key: str | None = None, *, max_size: int = MAX_SIZE) -> np.ndarray:
    """Read a table (for example a model's position embeddings) from a file.

    The kind of file is told by its suffix:

    ``.npy``
        One array; ``key`` must be ``None``.
    ``.npz``
        The array named ``key`` (only that member is read).
    ``.safetensors``
        The tensor named ``key``, such as
        ``"vit.embeddings.position_embeddings"`` (needs the ``safetensors``
        package; only that tensor is read).  ``BF16`` tensors are widened to
        float32.
    ``.pt``, ``.pth``, ``.bin``
        A PyTorch checkpoint: a tensor, or a state dict whose entries may
        be nested dicts and lists.  ``key`` is a dotted path such as
        ``"model.pos_embed"``; each step matches a key of its dict (a flat
        state-dict name with dots, ``"encoder.pos_embed"``, or one level of a
        nested dict), and a path that can be read in two ways is refused.  The
        file's structure is read with ``torch.load(weights_only=True)`` (only
        tensors, containers, numbers and strings: never code) onto the
        ``meta`` device, so that no tensor is read; then only the data of the
        named tensor is read, from its record.

    With ``key=None`` a file that holds exactly one array gives that array.

    The file is untrusted: only a regular file is opened (a FIFO, a device, a
    socket or a folder is refused before anything is opened, a symbolic link
    is followed and its target checked); the size of the array is checked
    against ``max_size`` from the file's headers and tensor metadata before
    anything is allocated (sparse tensors by their dense size, views by the
    values they show and the storage they span); compressed ``.npz`` members
    are inflated a bounded piece at a time and never past their declared size;
    the zip CRC-32 of every member and record read is checked (a checkpoint
    saved with ``torch.serialization.set_crc32_options(False)`` marks every
    record 0 and is read unchecked); arrays that are not real numbers
    (structured, complex, datetime, string, object dtypes) are refused.

    Parameters
    ----------
    source : str or path
        The file.
    key : str, optional
        Which array of the file.
    max_size : int, default 2**28
        The most values the array may have (2**28 float32 values are 1 GiB).

    Returns
    -------
    numpy.ndarray
        The array as stored (a copy, detached from the file); half-precision
        and 8-bit floats become float32.  A ViT's ``pos_embed`` keeps its
        leading axis of 1: the plot functions and the ``posenc-viz`` command
        drop it.

    Raises
    ------
    ValueError
        For every file that cannot be read as its kind, naming ``source``:
        another suffix (naming the accepted ones), a file that is not a
        regular file, a corrupt or truncated file, an array larger than
        ``max_size``, a dtype that is not real numbers; and, naming ``key``,
        a missing or unneeded key (listing the first 20 available keys and
        their count), an ambiguous one, or one that names something other
        than an array.
    FileNotFoundError
        When ``source`` does not exist (or is a broken symbolic link).
    ImportError
        When reading needs ``safetensors`` or ``torch`` and it is not
        installed.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from posenc_viz import load_table
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "vit.npz")
    ...     np.savez(path, pos_embed=np.zeros((1, 197, 768), np.float32), cls_token=np.zeros((1, 1, 768)))
    ...     load_table(path, "pos_embed").shape
    (1, 197, 768)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "vit.npz")
    ...     np.savez(path, pos_embed=np.zeros((197, 8)), cls_token=np.zeros(8))
    ...     load_table(path, "pos_emb")
    Traceback (most recent call last):
    ...
    ValueError: `key` 'pos_emb' is not in 'vit.npz'; it has 2 arrays: cls_token, pos_embed
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "big.npy")
    ...     np.save(path, np.zeros((4096, 1024), np.float32))
    ...     load_table(path, max_size=2**20)
    Traceback (most recent call last):
    ...
    ValueError: `source` 'big.npy' holds an array of shape (4096, 1024) (4194304 values), more than `max_size` (1048576)
    """
    path = _check_source(source)
    if key is not None:
        if not isinstance(key, str):
            msg = f"`key` must be a str or None, got {show(key)}"
            raise TypeError(msg)
        if not key:
            msg = "`key` must not be empty (pass None for a file that holds one array)"
            raise ValueError(msg)
    max_size = check_int(max_size, "max_size", minimum=1)
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        msg = f"`source` must be one of {_ACCEPTED}, got {str(path.name)!r}"
        raise ValueError(msg)
    reader = {"npy": _read_npy, "npz": _read_npz, "safetensors": _read_safetensors, "torch": _read_torch}[kind]
    fh, size = _files.open_regular(path, "source")
    with fh:
        try:
            out = reader(_Source(path, fh, size, max_size), key)
        except OSError as exc:  # a read that fails (an I/O error, a file cut while read)
            msg = f"`source` {str(path.name)!r} could not be read: {exc.strerror or exc}"
            raise ValueError(msg) from None
    fresh = isinstance(out, _Fresh)  # read into memory of its own: no second copy
    out = to_numpy(out.array if fresh else out, name="source")
    if not (fresh or (out.flags.owndata and out.flags.writeable)):
        out = np.array(out, copy=True)
    return out


def _check_source(source: Any) -> Path:
    if isinstance(source, (bytes, bytearray)) or not isinstance(source, (str, os.PathLike)):
        msg = f"`source` must be a path (str or os.PathLike), got {show(source)}"
        raise TypeError(msg)
    text = os.fspath(source)
    if not isinstance(text, str):  # a PathLike of bytes
        msg = f"`source` must be a path of text, got {show(text)}"
        raise TypeError(msg)
    if not text:
        msg = "`source` must name a file, got an empty string"
        raise ValueError(msg)
    return Path(text)


@dataclass(frozen=True)
class _Fresh:
    """An array a reader made and filled itself (no file or library holds it)."""

    array: np.ndarray


@dataclass(frozen=True)
class _Source:
    """The opened file: its path (for messages), the file, its size, the limit."""

    path: Path
    fh: BinaryIO
    size: int
    max_size: int

    @property
    def name(self) -> str:
        return str(self.path.name)

    def unreadable(self, kind: str) -> Any:
        """The maker of this file's errors: ``describe(detail) -> ValueError``."""

        def describe(detail: str) -> ValueError:
            return ValueError(f"`source` {self.name!r} is not a readable {kind} ({detail})")

        return describe

    def check_size(self, what: str, shape: tuple[int, ...]) -> None:
        count = math.prod(shape)
        if count > self.max_size:
            msg = (
                f"`source` {self.name!r} holds {what} of shape {tuple(shape)} ({count} values), "
                f"more than `max_size` ({self.max_size})"
            )
            raise ValueError(msg)

    def check_dtype(self, what: str, dtype: np.dtype) -> None:
        why = _files.numeric_dtype(dtype)
        if why is not None:
            msg = f"`source` {self.name!r} holds {what} of {why}; load_table reads bool, integer and float arrays"
            raise ValueError(msg)


def _listing(names: list[str], what: str = "arrays") -> str:
    shown = ", ".join(names[:_LISTED])
    more = f", ... ({len(names) - _LISTED} more)" if len(names) > _LISTED else ""
    return f"{len(names)} {what}: {shown}{more}" if names else f"no {what}"


def _missing(key: str | None, name: str, names: list[str]) -> ValueError:
    if key is None:
        msg = f"`key` is required: {name!r} has {_listing(names)}"
    else:
        msg = f"`key` {key!r} is not in {name!r}; it has {_listing(names)}"
    return ValueError(msg)


def _ambiguous(key: str, name: str, readings: list[str]) -> ValueError:
    shown = ", ".join(readings[:5]) + (", ..." if len(readings) > 5 else "")
    msg = (
        f"`key` {key!r} of {name!r} is ambiguous: it names {len(readings)} different entries ({shown}); "
        "load_table does not guess (save the table under a name of its own)"
    )
    return ValueError(msg)


def _first_line(exc: BaseException) -> str:
    return ((str(exc).strip().splitlines() or [type(exc).__name__])[0])[:200]


# ------------------------------------------------------------------ NumPy
def _read_npy(src: _Source, key: str | None) -> _Fresh:
    if key is not None:
        msg = f"`key` must be None for a .npy file (it holds one array), got {key!r}"
        raise ValueError(msg)
    describe = src.unreadable(".npy file")
    header = _files.read_npy_header(lambda n: _files.read_exactly(src.fh, n), describe)
    src.check_dtype("an array", header.dtype)
    src.check_size("an array", header.shape)
    if header.size + header.nbytes > src.size:
        have = src.size - header.size
        raise describe(f"its data is cut short: the header needs {header.nbytes} bytes, the file has {have}")
    order = "F" if header.fortran else "C"
    out = np.empty(header.shape, header.dtype, order=order)  # the size is checked and the bytes are in the file
    view = memoryview(out.reshape(-1, order=order).view(np.uint8))
    at = 0
    while at < len(view):
        n = src.fh.readinto(view[at : at + _files.CHUNK])
        if not n:
            raise describe("its data is cut short")
        at += n
    return _Fresh(out)


def _read_npz(src: _Source, key: str | None) -> _Fresh:
    describe = src.unreadable(".npz file")
    archive = _files.Archive(src.fh, src.size, describe)
    entries: dict[str, list[_files.Member]] = {}
    for m in archive.members:
        if not m.name.endswith("/"):  # folders of the archive hold nothing
            entries.setdefault(m.name[:-4] if m.name.endswith(".npy") else m.name, []).append(m)
    names = sorted(entries)
    if key is None and len(names) == 1:
        key = names[0]
    if key not in entries:
        raise _missing(key, src.name, names)
    if len(entries[key]) > 1:
        raise _ambiguous(key, src.name, [repr(m.name) for m in entries[key]])
    m = entries[key][0]
    # the declared size first: nothing is inflated for a member that could not fit
    largest = _files.MAX_NPY_HEADER + 16 + 16 * src.max_size
    if m.size > largest:
        msg = (
            f"`source` {src.name!r}: member {m.name!r} declares {m.size} bytes, more than an array of "
            f"`max_size` ({src.max_size}) values takes"
        )
        raise ValueError(msg)
    reader = archive.open(m)

    def member(detail: str) -> ValueError:
        return describe(f"member {m.name!r}: {detail}")

    header = _files.read_npy_header(lambda n: reader.read(min(n, m.size - reader.out)), member)
    src.check_dtype(f"{key!r}, an array", header.dtype)
    src.check_size(f"{key!r}, an array", header.shape)
    if m.size != header.size + header.nbytes:
        raise member(f"it declares {m.size} bytes, its header {header.size + header.nbytes}")
    out = reader.read_array(header.nbytes).view(header.dtype)
    reader.finish()
    return _Fresh(out.reshape(header.shape, order="F" if header.fortran else "C"))


# ------------------------------------------------------------ safetensors
class _Duplicate(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(k)
        out[k] = v
    return out


def _safetensors_header(src: _Source) -> tuple[int, dict]:
    """The header (a JSON object, read by its own size field, at most 100 MB
    and inside the file; a name given twice is refused) and its length."""
    describe = src.unreadable(".safetensors file")
    raw = _files.read_exactly(src.fh, 8)
    if len(raw) < 8:
        raise describe("it is shorter than its 8-byte header size")
    size = int.from_bytes(raw, "little")
    if size > min(_MAX_SAFETENSORS_HEADER, src.size - 8):
        raise describe(f"its header size {size} is larger than the file or 100 MB")
    text = _files.read_exactly(src.fh, size)
    try:
        header = json.loads(text, object_pairs_hook=_no_duplicates)
    except _Duplicate as exc:
        msg = f"`key` {exc.args[0]!r} of {src.name!r} is ambiguous: its header gives that name twice"
        raise ValueError(msg) from None
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        raise describe(f"its header is not JSON: {_first_line(exc)}") from None
    if not isinstance(header, dict) or not all(isinstance(v, dict) for v in header.values()):
        raise describe("its header is not a JSON object of objects")
    return size, header


def _read_safetensors(src: _Source, key: str | None) -> np.ndarray:
    try:
        from safetensors import safe_open
    except ImportError:
        msg = "reading .safetensors files needs the safetensors package: pip install safetensors"
        raise ImportError(msg, name="safetensors") from None
    describe = src.unreadable(".safetensors file")
    size, header = _safetensors_header(src)
    names = sorted(k for k in header if k != "__metadata__")
    if key is None and len(names) == 1:
        key = names[0]
    if key not in names:
        raise _missing(key, src.name, names)
    try:
        with safe_open(str(src.path), framework="numpy") as f:  # its own checks of the header and offsets
            view = f.get_slice(key)
            dtype, shape = view.get_dtype(), tuple(int(s) for s in view.get_shape())
            src.check_size(f"{key!r}, a tensor", shape)
            if dtype in _SAFETENSORS_DTYPES:
                return f.get_tensor(key)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - safetensors' own error type for a bad header
        raise describe(f"{type(exc).__name__}: {_first_line(exc)}") from None
    return _raw_safetensor(src, key, dtype, shape, size, header[key])


def _raw_safetensor(src: _Source, key: str, dtype: str, shape: tuple[int, ...], size: int, entry: dict) -> np.ndarray:
    """A tensor NumPy has no dtype for, read from the file's own layout
    (8-byte header size, JSON header, data); BF16 becomes float32."""
    if dtype != "BF16":
        msg = (
            f"`key` {key!r} of {src.name!r} has dtype {dtype}, which posenc_viz cannot read "
            f"(only {', '.join(_SAFETENSORS_DTYPES)}, BF16)"
        )
        raise ValueError(msg)
    start, end = entry["data_offsets"]  # checked by safe_open: inside the file, 2 bytes a value
    src.fh.seek(8 + size + start)
    raw = np.frombuffer(_files.read_exactly(src.fh, end - start), dtype="<u2")
    if raw.size != math.prod(shape):
        msg = f"`source` {src.name!r} is not a readable .safetensors file (tensor {key!r} is truncated)"
        raise ValueError(msg)
    # bfloat16 is the upper half of a float32
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(shape)


# ------------------------------------------------------------------ torch
def _read_torch(src: _Source, key: str | None) -> Any:
    try:
        import torch  # noqa: F401
    except ImportError:
        msg = "reading torch checkpoints (.pt, .pth, .bin) needs PyTorch: pip install torch"
        raise ImportError(msg, name="torch") from None
    describe = src.unreadable("torch checkpoint")
    zipped = _files.read_exactly(src.fh, 4) == b"PK\x03\x04"
    src.fh.seek(0)
    if not zipped:  # the format before PyTorch 1.6: read whole, then checked like the rest
        obj = _torch_load(src, "cpu", describe)
        return _Checkpoint(src, None, describe).materialize(_pick(obj, key, src.name))
    archive = _files.Archive(src.fh, src.size, describe)
    checked = not all(m.crc == 0 for m in archive.members)  # torch marks every record 0 when saved without CRCs
    for m in archive.members:
        if m.method != _files.STORED or m.csize != m.size:
            method = _files.METHODS.get(m.method, f"method {m.method}")
            raise describe(f"record {m.name!r} is compressed ({method}); torch writes its records stored")
    order = "little"
    for m in archive.members:  # the records torch.load reads itself: the pickle, the byte order, ...
        if "/data/" not in f"/{m.name}":
            text = _files.read_stored(archive, m, archive.data_offset(m), (0, min(m.size, 16)), check=checked)
            if m.name.rsplit("/", 1)[-1] == "byteorder":
                order = bytes(text).decode("latin1")
    if order not in ("little", "big"):
        raise describe(f"its byte order record says {order!r}")
    src.fh.seek(0)
    # torch's meta load would swap the bytes of storages that have none (and crash the process)
    # for a checkpoint of the other byte order: that one is read whole, below
    if order == sys.byteorder:
        obj = _torch_load(src, "meta", describe)  # the structure, shapes and dtypes; no tensor is read
        picked = _pick(obj, key, src.name)
        try:
            return _Checkpoint(src, archive, describe, checked=checked).materialize(picked)
        except _Moved:
            pass
    # read whole (the memory of the file's tensors, no more): the records checked first, then the
    # tensor picked is checked like the rest before it is copied or densified
    for m in archive.members:
        if checked and "/data/" in f"/{m.name}":
            _files.read_stored(archive, m, archive.data_offset(m), (0, 0))
    src.fh.seek(0)
    obj = _torch_load(src, "cpu", describe)
    return _Checkpoint(src, None, describe).materialize(_pick(obj, key, src.name))


class _Moved(Exception):
    """A storage is not where torch's meta load says (an archive rewritten by
    another zip tool: torch computes the offsets of records after the first
    from the layout torch.save writes)."""


def _torch_load(src: _Source, where: str, describe: Any) -> Any:
    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's notes about sparse invariants and storages
            return torch.load(src.fh, map_location=where, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - pickle, zip and torch errors alike
        refused = re.search(r"Unsupported global: GLOBAL (\S+)", str(exc))
        if refused:
            msg = (
                f"`source` {src.name!r} holds objects that loading with weights_only=True refuses "
                f"({refused.group(1)}); load_table reads tensors, arrays, dicts, lists, numbers and strings"
            )
            raise ValueError(msg) from None
        raise describe(f"{type(exc).__name__}: {_first_line(exc)}") from None


class _Checkpoint:
    """Reads the one tensor picked from a checkpoint: from its zip record (the
    structure came from a ``meta`` load) or, for a checkpoint read whole (the
    legacy format, the other byte order), from the loaded tensor; every size
    is checked before anything is allocated or copied."""

    def __init__(self, src: _Source, archive: _files.Archive | None, describe: Any, *, checked: bool = True) -> None:
        self.src, self.archive, self.describe, self.checked = src, archive, describe, checked
        self.offsets: dict[int, _files.Member] | None = None

    def materialize(self, value: Any) -> Any:
        import torch

        if isinstance(value, np.ndarray):  # an array pickled inside the checkpoint
            self.src.check_dtype("an array", value.dtype)
            self.src.check_size("an array", value.shape)
            return value
        self.check_dtype(value.dtype)
        layout = value.layout
        if layout == torch.strided:
            out = self.strided(value)
        else:
            self.src.check_size(f"a {str(layout).replace('torch.', '')} tensor", tuple(value.shape))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch's note that compressed sparse layouts are in beta
                out = self.sparse(value).to_dense()
        if out.is_floating_point() and out.element_size() < 4:
            out = out.to(torch.float32)  # half, bfloat16 and the 8-bit floats
        return out

    def check_dtype(self, dtype: Any) -> None:
        if dtype.is_complex or not (dtype.is_floating_point or str(dtype) in _TORCH_DTYPES):
            msg = (
                f"`source` {self.src.name!r} holds a tensor of dtype {dtype}; "
                "load_table reads bool, integer and float tensors"
            )
            raise ValueError(msg)

    def sparse(self, t: Any) -> Any:
        import torch

        try:
            if t.layout == torch.sparse_coo:
                indices, values = self.strided(t._indices()), self.strided(t._values())
                return torch.sparse_coo_tensor(indices, values, t.shape, check_invariants=True)
            if t.layout in (torch.sparse_csr, torch.sparse_bsr):
                compressed, plain = t.crow_indices(), t.col_indices()
            elif t.layout in (torch.sparse_csc, torch.sparse_bsc):
                compressed, plain = t.ccol_indices(), t.row_indices()
            else:
                raise self.describe(f"a tensor of layout {t.layout} is not read")
            parts = [self.strided(x) for x in (compressed, plain, t.values())]
            return torch.sparse_compressed_tensor(*parts, t.shape, layout=t.layout, check_invariants=True)
        except RuntimeError as exc:  # the invariants of a sparse tensor
            raise self.describe(f"a sparse tensor breaks its invariants: {_first_line(exc)}") from None

    def strided(self, t: Any) -> Any:
        import torch

        shape, strides = tuple(t.shape), tuple(t.stride())
        self.src.check_size("a tensor", shape)
        if self.archive is None:  # read whole already: copied within max_size
            return t
        count = math.prod(shape)
        if count == 0:
            return torch.empty(shape, dtype=t.dtype)
        if any(s < 0 for s in strides):
            raise self.describe(f"a tensor has negative strides {strides}")
        span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
        if span > self.src.max_size:
            msg = (
                f"`source` {self.src.name!r} holds a tensor of shape {shape} that spans {span} values of its "
                f"storage, more than `max_size` ({self.src.max_size})"
            )
            raise ValueError(msg)
        storage = t.untyped_storage()
        item = t.element_size()
        lo, hi = t.storage_offset() * item, (t.storage_offset() + span) * item
        if hi > storage.nbytes():
            raise self.describe(f"a tensor of shape {shape} reaches past the end of its storage")
        record, start = self.record(getattr(storage, "_checkpoint_offset", None), storage.nbytes())
        data = _files.read_stored(self.archive, record, start, (lo, hi), check=self.checked)
        flat = torch.frombuffer(data, dtype=t.dtype)
        return flat.as_strided(shape, strides, 0)

    def record(self, offset: int | None, nbytes: int) -> tuple[_files.Member, int]:
        """The record whose data starts at ``offset`` (where torch's own loader
        would read the storage) and holds exactly ``nbytes``."""
        if self.offsets is None:
            self.offsets = {}
            for m in self.archive.members:
                if "/data/" in f"/{m.name}":
                    self.offsets[self.archive.data_offset(m)] = m
        m = self.offsets.get(offset) if offset is not None else None
        if m is None:
            raise _Moved
        if m.size != nbytes:
            raise self.describe(f"record {m.name!r} has {m.size} bytes, its storage {nbytes}")
        return m, offset


#: the torch dtypes read besides the floating ones (complex and quantized ones are not)
_TORCH_DTYPES = {
    f"torch.{n}" for n in ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
}


def _is_leaf(obj: Any) -> bool:
    import torch

    return isinstance(obj, (torch.Tensor, np.ndarray))


class _Budget:
    def __init__(self, name: str) -> None:
        self.left, self.name = _MAX_VISITS, name

    def tick(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            msg = (
                f"`source` {self.name!r} holds more than {_MAX_VISITS} entries to walk "
                "(or containers reached many times over); load_table does not read it"
            )
            raise ValueError(msg)


def _items(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return obj.items()
    if isinstance(obj, (list, tuple)):
        return enumerate(obj)
    return ()


def _leaves(obj: Any, budget: _Budget) -> list[tuple[str, Any]]:
    """(dotted path, array) of every array in a nested checkpoint, in the
    file's order, walked without recursion to depth 32 and within the budget."""
    out: list[tuple[str, Any]] = []
    stack = [("", iter(_items(obj)), 0)]
    while stack:
        prefix, entries, depth = stack[-1]
        for k, v in entries:
            budget.tick()
            if _is_leaf(v):
                out.append((f"{prefix}{k}", v))
            elif isinstance(v, (Mapping, list, tuple)) and depth < _MAX_DEPTH:
                stack.append((f"{prefix}{k}.", iter(_items(v)), depth + 1))
                break  # the container first; this one goes on after it
        else:
            stack.pop()
    return out


def _resolve_all(obj: Any, parts: list[str], budget: _Budget) -> list[tuple[tuple, Any]]:
    """Every way ``parts`` (a dotted key split at the dots) follows keys of
    ``obj``: a run of parts joined by dots matches one key (a flat state-dict
    name), list items by their index; each reading is (raw keys, value)."""
    if not parts:
        return [((), obj)]
    found: list[tuple[tuple, Any]] = []
    index: dict[str, list[tuple[Any, Any]]] = {}
    for k, v in _items(obj):
        budget.tick()
        index.setdefault(str(k), []).append((k, v))
    for n in range(len(parts), 0, -1):
        for raw, value in index.get(".".join(parts[:n]), []):
            for rest, leaf in _resolve_all(value, parts[n:], budget):
                found.append(((raw, *rest), leaf))
    return found


def _pick(obj: Any, key: str | None, name: str) -> Any:
    if _is_leaf(obj):
        if key is not None:
            msg = f"`key` must be None: {name!r} holds one tensor, got {key!r}"
            raise ValueError(msg)
        return obj
    budget = _Budget(name)
    if key is not None and key.count(".") >= _MAX_DEPTH * 8:
        msg = f"`key` has {key.count('.') + 1} dotted parts, more than the {_MAX_DEPTH * 8} a checkpoint path may have"
        raise ValueError(msg)
    if key is None:
        leaves = _leaves(obj, budget)
        if len(leaves) == 1:
            return leaves[0][1]
        raise _missing(None, name, [n for n, _ in leaves])
    found = _resolve_all(obj, key.split("."), budget)
    distinct: dict[int, tuple[tuple, Any]] = {}
    for path, value in found:
        distinct.setdefault(id(value), (path, value))
    if not distinct:
        raise _missing(key, name, [n for n, _ in _leaves(obj, _Budget(name))])
    if len(distinct) > 1:
        raise _ambiguous(key, name, ["".join(f"[{p!r}]" for p in path) for path, _ in distinct.values()])
    ((path, value),) = distinct.values()
    if _is_leaf(value):
        return value
    inner = [n for n, _ in _leaves(value, _Budget(name))]
    kind = type(value).__name__
    kind = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    if inner:
        msg = f"`key` {key!r} of {name!r} names {kind} of {_listing(inner)}, not an array"
    else:
        msg = f"`key` {key!r} of {name!r} names {kind} ({_brief(value)}), not an array"
    raise ValueError(msg)


def _brief(value: Any) -> str:
    """A repr cut in depth and length (a checkpoint's list may be nested
    thousands deep or hold a million numbers)."""
    import reprlib

    short = reprlib.Repr()
    short.maxlevel, short.maxlist, short.maxtuple, short.maxdict, short.maxstring, short.maxother = 3, 6, 6, 6, 60, 60
    return short.repr(value)
