"""Tables from files: :func:`load_table` reads the position table of a model."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ._convert import to_numpy
from ._internals import show

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


def load_table(source: str | os.PathLike, key: str | None = None) -> np.ndarray:
    """Read a table (for example a model's position embeddings) from a file.

    The kind of file is told by its suffix:

    ``.npy``
        One array; ``key`` must be ``None``.
    ``.npz``
        The array named ``key`` (read lazily: the other arrays are not
        loaded).
    ``.safetensors``
        The tensor named ``key``, such as
        ``"vit.embeddings.position_embeddings"`` (needs the ``safetensors``
        package; only that tensor is read).  ``BF16`` tensors are widened to
        float32.
    ``.pt``, ``.pth``, ``.bin``
        A PyTorch checkpoint: a tensor, or a state dict whose entries may
        be nested dicts and lists.  ``key`` is a dotted path such as
        ``"model.pos_embed"``; each step matches the longest key of its
        dict, so that flat state-dict names with dots
        (``"encoder.pos_embed"``) and nested dicts both work.  The file is
        read with ``torch.load(weights_only=True)`` (only tensors,
        containers, numbers and strings: never code) and memory-mapped where
        the format allows, so a large checkpoint is not read whole.

    With ``key=None`` a file that holds exactly one array gives that array.

    Parameters
    ----------
    source : str or path
        The file.
    key : str, optional
        Which array of the file.

    Returns
    -------
    numpy.ndarray
        The array as stored (a copy, detached from the file); half-precision
        floats become float32.  A ViT's ``pos_embed`` keeps its leading axis
        of 1: the plot functions and the ``posenc-viz`` command drop it.

    Raises
    ------
    ValueError
        For a file of another kind (naming the accepted ones), a missing or
        unneeded ``key`` (listing the first 20 available keys and their
        count), a ``key`` that names something other than an array, and a
        file that cannot be read as its kind.
    FileNotFoundError
        When ``source`` does not exist.
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
    """
    path = _check_source(source)
    if key is not None:
        if not isinstance(key, str):
            msg = f"`key` must be a str or None, got {show(key)}"
            raise TypeError(msg)
        if not key:
            msg = "`key` must not be empty (pass None for a file that holds one array)"
            raise ValueError(msg)
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        msg = f"`source` must be one of {_ACCEPTED}, got {str(path.name)!r}"
        raise ValueError(msg)
    if not path.exists():
        msg = f"`source` {str(path)!r} does not exist"
        raise FileNotFoundError(msg)
    if path.is_dir():
        msg = f"`source` {str(path)!r} is a folder, not a file"
        raise IsADirectoryError(msg)
    reader = {"npy": _read_npy, "npz": _read_npz, "safetensors": _read_safetensors, "torch": _read_torch}[kind]
    out = to_numpy(reader(path, key), name="source")
    return np.array(out, copy=True)


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


def _listing(names: list[str], what: str = "arrays") -> str:
    shown = ", ".join(names[:_LISTED])
    more = f", ... ({len(names) - _LISTED} more)" if len(names) > _LISTED else ""
    return f"{len(names)} {what}: {shown}{more}" if names else f"no {what}"


def _missing(key: str | None, path: Path, names: list[str]) -> ValueError:
    if key is None:
        msg = f"`key` is required: {str(path.name)!r} has {_listing(names)}"
    else:
        msg = f"`key` {key!r} is not in {str(path.name)!r}; it has {_listing(names)}"
    return ValueError(msg)


def _unreadable(path: Path, kind: str, exc: BaseException) -> ValueError:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    msg = f"`source` {str(path.name)!r} is not a readable {kind} ({type(exc).__name__}: {first[:200]})"
    return ValueError(msg)


# ------------------------------------------------------------------ NumPy
def _read_npy(path: Path, key: str | None) -> np.ndarray:
    if key is not None:
        msg = f"`key` must be None for a .npy file (it holds one array), got {key!r}"
        raise ValueError(msg)
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as exc:
        raise _unreadable(path, ".npy file", exc) from None


def _read_npz(path: Path, key: str | None) -> np.ndarray:
    import zipfile

    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise _unreadable(path, ".npz file", exc) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):  # a .npy saved under the .npz name
        msg = f"`source` {str(path.name)!r} holds a single .npy array, not an .npz archive: rename it to .npy"
        raise ValueError(msg)
    with archive:
        names = sorted(archive.files)
        if key is None and len(names) == 1:
            key = names[0]
        if key not in names:
            raise _missing(key, path, names)
        try:
            return archive[key]
        except (ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise _unreadable(path, ".npz file", exc) from None


# ------------------------------------------------------------ safetensors
def _read_safetensors(path: Path, key: str | None) -> np.ndarray:
    try:
        from safetensors import safe_open
    except ImportError:
        msg = 'reading .safetensors files needs the safetensors package: pip install safetensors'
        raise ImportError(msg, name="safetensors") from None
    try:
        with safe_open(str(path), framework="numpy") as f:
            names = sorted(f.keys())
            if key is None and len(names) == 1:
                key = names[0]
            if key not in names:
                raise _missing(key, path, names)
            dtype = f.get_slice(key).get_dtype()
            if dtype not in _SAFETENSORS_DTYPES:
                return _raw_safetensor(path, key, dtype)
            return f.get_tensor(key)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - safetensors' own error type for a bad header
        raise _unreadable(path, ".safetensors file", exc) from None


def _raw_safetensor(path: Path, key: str, dtype: str) -> np.ndarray:
    """A tensor NumPy has no dtype for, read from the file's own layout
    (8-byte header size, JSON header, data); BF16 becomes float32."""
    if dtype != "BF16":
        msg = (
            f"`key` {key!r} of {str(path.name)!r} has dtype {dtype}, which posenc_viz cannot read "
            f"(only {', '.join(_SAFETENSORS_DTYPES)}, BF16)"
        )
        raise ValueError(msg)
    with open(path, "rb") as fh:
        size = int.from_bytes(fh.read(8), "little")
        entry = json.loads(fh.read(size))[key]
        start, end = entry["data_offsets"]
        fh.seek(8 + size + start)
        raw = np.frombuffer(fh.read(end - start), dtype="<u2")
    shape = tuple(int(s) for s in entry["shape"])
    if raw.size != math.prod(shape):
        msg = f"`source` {str(path.name)!r} is not a readable .safetensors file (tensor {key!r} is truncated)"
        raise ValueError(msg)
    # bfloat16 is the upper half of a float32
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(shape)


# ------------------------------------------------------------------ torch
def _read_torch(path: Path, key: str | None) -> Any:
    try:
        import torch
    except ImportError:
        msg = "reading torch checkpoints (.pt, .pth, .bin) needs PyTorch: pip install torch"
        raise ImportError(msg, name="torch") from None
    try:
        try:
            # memory-mapped: a checkpoint of many GB is not read whole for one table
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap" not in str(exc):
                raise
            obj = torch.load(path, map_location="cpu", weights_only=True)  # the legacy format
    except Exception as exc:  # noqa: BLE001 - pickle, zip and torch errors alike
        refused = re.search(r"Unsupported global: GLOBAL (\S+)", str(exc))
        if refused:
            msg = (
                f"`source` {str(path.name)!r} holds objects that loading with weights_only=True refuses "
                f"({refused.group(1)}); load_table reads tensors, arrays, dicts, lists, numbers and strings"
            )
            raise ValueError(msg) from None
        raise _unreadable(path, "torch checkpoint", exc) from None
    return _pick(obj, key, path)


def _is_leaf(obj: Any) -> bool:
    import torch

    return isinstance(obj, (torch.Tensor, np.ndarray))


def _children(obj: Any) -> list[tuple[str, Any]]:
    if isinstance(obj, Mapping):
        return [(str(k), v) for k, v in obj.items()]
    if isinstance(obj, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(obj)]
    return []


def _leaves(obj: Any, prefix: str = "", depth: int = 0) -> list[str]:
    """Dotted paths of every array in a nested checkpoint (depth-limited)."""
    out: list[str] = []
    if depth > 32:
        return out
    for name, value in _children(obj):
        path = f"{prefix}{name}"
        if _is_leaf(value):
            out.append(path)
        else:
            out += _leaves(value, path + ".", depth + 1)
    return out


def _resolve(obj: Any, parts: list[str]) -> tuple[bool, Any]:
    """Follow ``parts`` (a dotted key split at the dots) into ``obj``: at each
    level the longest run of parts that is a key wins, shorter runs are tried
    when the rest does not resolve."""
    if not parts:
        return True, obj
    children = dict(_children(obj))
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in children:
            found, value = _resolve(children[name], parts[n:])
            if found:
                return True, value
    return False, None


def _pick(obj: Any, key: str | None, path: Path) -> Any:
    if _is_leaf(obj):
        if key is not None:
            msg = f"`key` must be None: {str(path.name)!r} holds one tensor, got {key!r}"
            raise ValueError(msg)
        return obj
    names = _leaves(obj)
    if key is None:
        if len(names) == 1:
            return _resolve(obj, names[0].split("."))[1]
        raise _missing(None, path, names)
    found, value = _resolve(obj, key.split("."))
    if not found:
        raise _missing(key, path, names)
    if _is_leaf(value):
        return value
    inner = [n[len(key) + 1 :] for n in names if n.startswith(key + ".")]
    kind = type(value).__name__
    kind = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    if inner:
        msg = f"`key` {key!r} of {str(path.name)!r} names {kind} of {_listing(inner)}, not an array"
    else:
        msg = f"`key` {key!r} of {str(path.name)!r} names {kind} ({show(value)}), not an array"
    raise ValueError(msg)
