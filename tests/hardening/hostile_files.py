"""Hostile files for ``load_table`` and the file options of ``posenc-viz``.

Each probe writes what an untrusted source could hand the reader -- a 3 KB
bzip2 ``.npz`` that inflates to 4 GiB, a checkpoint whose sparse tensor
densifies to 16 GiB, a FIFO, a config symlinked to a device, corrupt zip
members, ambiguous keys, a table with NaN or zero rows, a signal in the middle
of writing a figure -- and says what a correct reader does with it: refuse it
cleanly (``load_table``: a ``ValueError`` naming ``source`` or ``key``, or
``FileNotFoundError``; the command: exit status 2, the usage and one error
line) or give the right result.

The probes run in a child process under a memory cap (``RLIMIT_AS``: what the
imports take plus 1 GiB) with a timer per probe, so that a bomb ends in a
``MemoryError`` and a blocking open in a timeout, not in a machine out of
memory or a hung suite.  Outcomes: ``clean`` (a clean error), ``correct``,
``crash`` (any other exception, a traceback, exit status 1, a dead child),
``silent`` (a result for a file that had to be refused, or a wrong result),
``hang`` and ``partial`` (a temporary file left behind).

``python tests/hardening/hostile_files.py`` runs every probe against the
``posenc_viz`` it imports and prints the counts by group (add ``-v`` for one
line per probe); ``test_hostile_files.py`` asserts each probe's outcome.
"""

from __future__ import annotations

import bz2
import contextlib
import io
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: seconds a probe may take in the child before it counts as a hang
PROBE_TIMEOUT = 10.0
#: memory the child may allocate beyond what its imports took
HEADROOM = 1 << 30

OUTCOMES = ("clean", "correct", "crash", "silent", "hang", "partial")


@dataclass
class Call:
    """What a probe runs: ``load_table(*args)`` (``kind="table"``), the
    command with ``argv`` (``"cli"``) or the command in its own process,
    killed by ``signum`` in the middle of writing (``"signal"``).  ``expect``
    is the array a correct ``load_table`` returns (``None``: it must refuse);
    ``check(folder, stderr)`` says whether a command that exits 0 did right."""

    kind: str
    args: tuple = ()
    expect: Any = None
    argv: list[str] = field(default_factory=list)
    check: Callable[[Path, str], bool] | None = None
    signum: int = 0


@dataclass(frozen=True)
class Probe:
    name: str
    group: str
    build: Callable[[Path], Call]
    want: str  # "clean" or "correct"
    own_process: bool = False  # the signal probes: not in the capped child


PROBES: list[Probe] = []


def probe(group: str, want: str, *, own_process: bool = False) -> Callable:
    def deco(fn: Callable[[Path], Call]) -> Callable[[Path], Call]:
        PROBES.append(Probe(fn.__name__.lstrip("_").replace("_", "-"), group, fn, want, own_process))
        return fn

    return deco


# ------------------------------------------------------------ file makers
def npy_bytes(arr: np.ndarray, **kw: Any) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=True, **kw)
    return buf.getvalue()


def npy_header(text: str, version: int = 1) -> bytes:
    """A .npy header around the literal ``text``, padded as NumPy pads it."""
    body = text.encode("latin1")
    fixed = 10 if version == 1 else 12
    pad = -(fixed + len(body) + 1) % 64
    body += b" " * pad + b"\n"
    size = struct.pack("<H", len(body)) if version == 1 else struct.pack("<I", len(body))
    return b"\x93NUMPY" + bytes([version, 0]) + size + body


def zip_archive(members: list[dict]) -> bytes:
    """A zip archive written field by field, so that sizes, CRCs, flags and
    methods can say anything.  Each member: ``name``, ``payload`` (the bytes as
    stored), and optionally ``method`` (0), ``crc``, ``size`` (the declared
    uncompressed size; default the payload's length) and ``flags``."""
    out, central = bytearray(), bytearray()
    for m in members:
        name = m["name"].encode()
        payload = m["payload"]
        method, flags = m.get("method", 0), m.get("flags", 0)
        crc = m.get("crc", zlib.crc32(payload))
        size = m.get("size", len(payload))
        offset = len(out)
        sizes = (crc, len(payload), size, len(name))
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, flags, method, 0, 0x21, *sizes, 0)
        out += name + payload
        fields = (20, 20, flags, method, 0, 0x21, *sizes, 0, 0, 0, 0, 0, offset)
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", *fields)
        central += name
    eocd = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(out), 0)
    return bytes(out + central + eocd)


def payload_span(data: bytes, name: str) -> tuple[int, int]:
    """Start and length of the stored bytes of member ``name`` of a zip archive."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo(name)
    n, e = struct.unpack("<2H", data[info.header_offset + 26 : info.header_offset + 30])
    return info.header_offset + 30 + n + e, info.compress_size


def flip(data: bytes, at: int, count: int = 8) -> bytes:
    out = bytearray(data)
    for i in range(at, at + count):
        out[i] ^= 0x5A
    return bytes(out)


def zipped(members: dict[str, bytes], method: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


#: one bzip2 block of 45,898,980 zero bytes (the most one block holds after
#: bzip2's first run-length stage): the 258 bits of ``bz2.compress(bytes(n), 9)``
#: for that ``n`` from after the ``BZh9`` header to the end-of-stream marker
#: (``_bzip2_blocks`` finds them; kept here to save half a second of
#: compressing).  Blocks are bit-aligned; a stream of k of them needs the
#: combined CRC.
_ZERO_BLOCK_BYTES = 45_898_980
_ZERO_BLOCK = (0xC50564994D66BA3A2F00057E370003000000208000C201351A85404B550A8097, 258, 0xAE8E8BC0)


def _bits(data: bytes) -> str:
    return bin(int.from_bytes(data, "big"))[2:].zfill(8 * len(data))


def _bzip2_blocks(data: bytes) -> tuple[str, list[int]]:
    """The blocks of a one-stream bzip2 file (as bits) and their CRCs."""
    bits = _bits(data)
    end = bits.rfind(format(0x177245385090, "048b"))
    body = bits[32:end]
    magic = format(0x314159265359, "048b")
    starts = [i for i in range(len(body)) if body.startswith(magic, i)]
    assert starts and starts[0] == 0
    return body, [int(body[s + 48 : s + 80], 2) for s in starts]


def bzip2_bomb(prefix: bytes, zero_blocks: int) -> bytes:
    """A bzip2 stream of ``prefix`` followed by ``zero_blocks`` x 45.9 MB of
    zeros, a few dozen bytes per block."""
    head, head_crcs = _bzip2_blocks(bz2.compress(prefix, 9))
    bits, length, crc = _ZERO_BLOCK
    zero, zero_crcs = format(bits, f"0{length}b"), [crc]
    combined = 0
    for crc in head_crcs + zero_crcs * zero_blocks:
        combined = (((combined << 1) | (combined >> 31)) & 0xFFFFFFFF) ^ crc
    bits = _bits(b"BZh9") + head + zero * zero_blocks + format(0x177245385090, "048b") + format(combined, "032b")
    bits += "0" * (-len(bits) % 8)
    return int(bits, 2).to_bytes(len(bits) // 8, "big")


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def table_call(path: Path, key: str | None = None, expect: Any = None) -> Call:
    return Call("table", (str(path),) if key is None else (str(path), key), expect=expect)


def _torch():
    import torch

    return torch


def _save(obj: Any, path: Path, **kw: Any) -> Path:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _torch().save(obj, path, **kw)
    return path


def _sparse(torch: Any, size: tuple[int, int]) -> Any:
    i = torch.tensor([[0, 1], [2, 3]])
    return torch.sparse_coo_tensor(i, torch.tensor([1.5, -2.0]), size, check_invariants=True)


# =================================================================== bombs
@probe("bombs", "clean")
def _npz_bzip2_bomb(d: Path) -> Call:
    """3 KB: a bzip2 member that inflates to 3.97 GiB (the npy header says so too)."""
    n = 93 * _ZERO_BLOCK_BYTES // 8
    header = npy_header(f"{{'descr': '<f8', 'fortran_order': False, 'shape': ({n},), }}")
    payload = bzip2_bomb(header, 93)
    arc = zip_archive([{"name": "pos.npy", "payload": payload, "method": 12, "crc": 0, "size": len(header) + 8 * n}])
    return table_call(write(d / "bomb.npz", arc), "pos")


@probe("bombs", "clean")
def _npz_header_declares_2gib(d: Path) -> Call:
    header = npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (268435456,), }")
    data = header + bytes(64)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    payload = c.compress(data) + c.flush()
    arc = zip_archive([{"name": "pos.npy", "payload": payload, "method": 8, "crc": zlib.crc32(data),
                        "size": len(header) + 8 * 268435456}])
    return table_call(write(d / "declared.npz", arc), "pos")


@probe("bombs", "clean")
def _npy_header_declares_1tib(d: Path) -> Call:
    header = npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (137438953472,), }")
    return table_call(write(d / "declared.npy", header + bytes(16)))


@probe("bombs", "clean")
def _npy_shape_overflows(d: Path) -> Call:
    header = npy_header(f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({2**70}, {2**70}), }}")
    return table_call(write(d / "overflow.npy", header + bytes(16)))


@probe("bombs", "clean")
def _npz_member_inflates_past_its_size(d: Path) -> Call:
    """The directory and the npy header say 16 floats; the stream goes on with 46 MB of zeros."""
    good = npy_bytes(np.arange(16.0))
    payload = bzip2_bomb(good, 1)
    member = {"name": "pos.npy", "payload": payload, "method": 12, "crc": zlib.crc32(good), "size": len(good)}
    arc = zip_archive([member])
    return table_call(write(d / "longer.npz", arc), "pos")


@probe("bombs", "correct")
def _npz_lzma_dictionary_4gib(d: Path) -> Call:
    """An LZMA member whose properties ask for a 4 GiB dictionary for 16 floats."""
    import lzma

    good = npy_bytes(np.arange(16.0))
    props = {"id": lzma.FILTER_LZMA1, "dict_size": 0xFFFFFFFF, "lc": 3, "lp": 0, "pb": 2}
    raw = lzma.compress(good, format=lzma.FORMAT_RAW, filters=[{**props, "dict_size": 1 << 20}])
    head = struct.pack("<BBH", 9, 4, 5) + bytes([(2 * 5 + 0) * 9 + 3]) + struct.pack("<I", 0xFFFFFFFF)
    arc = zip_archive([{"name": "pos.npy", "payload": head + raw, "method": 14, "crc": zlib.crc32(good),
                        "size": len(good), "flags": 2}])
    return table_call(write(d / "dict.npz", arc), "pos", expect=np.arange(16.0))


@probe("bombs", "clean")
def _pt_sparse_16gib(d: Path) -> Call:
    return table_call(_save({"pos": _sparse(_torch(), (2**16, 2**16))}, d / "sparse.pt"), "pos")


@probe("bombs", "clean")
def _pt_zero_stride_16gib(d: Path) -> Call:
    torch = _torch()
    view = torch.arange(16.0).as_strided((2**16, 2**16), (0, 0))
    return table_call(_save({"pos": view}, d / "stride.pt"), "pos")


@probe("bombs", "clean")
def _safetensors_shape_larger_than_data(d: Path) -> Call:
    header = json.dumps({"pos": {"dtype": "F32", "shape": [65536, 65536], "data_offsets": [0, 16]}}).encode()
    return table_call(write(d / "lie.safetensors", struct.pack("<Q", len(header)) + header + bytes(16)))


@probe("bombs", "clean")
def _safetensors_header_size_2_62(d: Path) -> Call:
    return table_call(write(d / "huge.safetensors", struct.pack("<Q", 2**62) + b"{}"), "pos")


@probe("bombs", "correct")
def _npz_bzip2_small(d: Path) -> Call:
    arr = np.linspace(-1, 1, 60).reshape(6, 10)
    return table_call(write(d / "b.npz", zipped({"pos.npy": npy_bytes(arr)}, zipfile.ZIP_BZIP2)), "pos", expect=arr)


@probe("bombs", "correct")
def _npz_lzma_small(d: Path) -> Call:
    arr = np.linspace(-1, 1, 60).reshape(6, 10).astype(np.float32)
    return table_call(write(d / "l.npz", zipped({"pos.npy": npy_bytes(arr)}, zipfile.ZIP_LZMA)), "pos", expect=arr)


@probe("bombs", "correct")
def _npz_compressed_small(d: Path) -> Call:
    arr = np.arange(24, dtype=np.int16).reshape(4, 6)
    np.savez_compressed(d / "c.npz", pos=arr, other=np.zeros(3))
    return table_call(d / "c.npz", "pos", expect=arr)


@probe("bombs", "correct")
def _pt_sparse_small(d: Path) -> Call:
    torch = _torch()
    s = _sparse(torch, (4, 5))
    return table_call(_save({"pos": s}, d / "s.pt"), "pos", expect=s.to_dense().numpy())


@probe("bombs", "correct")
def _pt_sparse_csr_small(d: Path) -> Call:
    torch = _torch()
    dense = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]])
    return table_call(_save({"pos": dense.to_sparse_csr()}, d / "csr.pt"), "pos", expect=dense.numpy())


@probe("bombs", "correct")
def _pt_zero_stride_small(d: Path) -> Call:
    torch = _torch()
    view = torch.arange(16.0).expand(4, 16)
    return table_call(_save({"pos": view}, d / "expand.pt"), "pos", expect=view.numpy().copy())


@probe("bombs", "correct")
def _pt_views_of_one_storage(d: Path) -> Call:
    torch = _torch()
    base = torch.arange(40.0).reshape(5, 8)
    _save({"w": base, "pos": base[1:4, ::2].t()}, d / "views.pt")
    return table_call(d / "views.pt", "pos", expect=base[1:4, ::2].t().numpy().copy())


# ========================================================= corrupt members
@probe("corrupt", "clean")
def _npy_header_unterminated(d: Path) -> Call:
    header = npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (3,")
    return table_call(write(d / "open.npy", header + bytes(24)))


@probe("corrupt", "clean")
def _npy_header_not_a_dict(d: Path) -> Call:
    return table_call(write(d / "list.npy", npy_header("[1, 2, 3]") + bytes(24)))


@probe("corrupt", "clean")
def _npy_truncated_data(d: Path) -> Call:
    return table_call(write(d / "short.npy", npy_bytes(np.arange(100.0))[:-300]))


def _corrupt_member(d: Path, method: int, name: str) -> Call:
    data = zipped({"pos.npy": npy_bytes(np.linspace(0, 1, 4000))}, method)
    start, size = payload_span(data, "pos.npy")
    return table_call(write(d / name, flip(data, start + size // 2, 16)), "pos")


@probe("corrupt", "clean")
def _npz_corrupt_deflate(d: Path) -> Call:
    return _corrupt_member(d, zipfile.ZIP_DEFLATED, "deflate.npz")


@probe("corrupt", "clean")
def _npz_corrupt_bzip2(d: Path) -> Call:
    return _corrupt_member(d, zipfile.ZIP_BZIP2, "bzip2.npz")


@probe("corrupt", "clean")
def _npz_corrupt_lzma(d: Path) -> Call:
    return _corrupt_member(d, zipfile.ZIP_LZMA, "lzma.npz")


@probe("corrupt", "clean")
def _npz_unknown_method(d: Path) -> Call:
    arc = zip_archive([{"name": "pos.npy", "payload": npy_bytes(np.zeros(4)), "method": 99}])
    return table_call(write(d / "m99.npz", arc), "pos")


@probe("corrupt", "clean")
def _npz_encrypted_member(d: Path) -> Call:
    arc = zip_archive([{"name": "pos.npy", "payload": npy_bytes(np.zeros(4)), "flags": 1}])
    return table_call(write(d / "enc.npz", arc), "pos")


@probe("corrupt", "clean")
def _npz_stored_bad_crc(d: Path) -> Call:
    data = npy_bytes(np.arange(8.0))
    arc = zip_archive([{"name": "pos.npy", "payload": data, "crc": zlib.crc32(data) ^ 1}])
    return table_call(write(d / "crc.npz", arc), "pos")


@probe("corrupt", "clean")
def _npz_member_not_npy(d: Path) -> Call:
    return table_call(write(d / "raw.npz", zip_archive([{"name": "pos.npy", "payload": b"hello, world" * 4}])), "pos")


@probe("corrupt", "clean")
def _npz_truncated(d: Path) -> Call:
    np.savez(d / "t.npz", pos=np.arange(100.0))
    data = (d / "t.npz").read_bytes()
    return table_call(write(d / "t.npz", data[: len(data) // 2]), "pos")


@probe("corrupt", "clean")
def _pt_record_fails_its_crc(d: Path) -> Call:
    _save({"pos": _torch().arange(64.0)}, d / "crc.pt")
    data = (d / "crc.pt").read_bytes()
    name = next(n for n in zipfile.ZipFile(io.BytesIO(data)).namelist() if n.endswith("/data/0"))
    start, size = payload_span(data, name)
    return table_call(write(d / "crc.pt", flip(data, start + 40, 4)), "pos")


@probe("corrupt", "clean")
def _pt_record_deflated(d: Path) -> Call:
    """A checkpoint re-zipped with deflate: torch's memory map reads compressed bytes as floats."""
    _save({"pos": _torch().arange(64.0)}, d / "src.pt")
    with zipfile.ZipFile(d / "src.pt") as z:
        members = {n: z.read(n) for n in z.namelist()}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, data in members.items():
            z.writestr(n, data, compress_type=zipfile.ZIP_DEFLATED if "/data/" in n else zipfile.ZIP_STORED)
    return table_call(write(d / "deflated.pt", buf.getvalue()), "pos")


@probe("corrupt", "clean")
def _pt_truncated(d: Path) -> Call:
    _save({"pos": _torch().arange(4096.0)}, d / "t.pt")
    data = (d / "t.pt").read_bytes()
    return table_call(write(d / "t.pt", data[: len(data) // 2]), "pos")


@probe("corrupt", "clean")
def _pt_quantized(d: Path) -> Call:
    torch = _torch()
    q = torch.quantize_per_tensor(torch.linspace(0, 1, 8), 0.1, 0, torch.qint8)
    return table_call(_save({"pos": q}, d / "q.pt"), "pos")


@probe("corrupt", "clean")
def _safetensors_garbage(d: Path) -> Call:
    return table_call(write(d / "g.safetensors", b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all"), "pos")


# ============================================================ dtypes, keys
@probe("dtypes-keys", "clean")
def _npy_structured_float64(d: Path) -> Call:
    arr = np.zeros(4, dtype=[("a", "<f8")])
    arr["a"] = [0.1, 1e-9, 1 / 3, 2.0**40 + 1]
    np.save(d / "s.npy", arr)
    return table_call(d / "s.npy")


@probe("dtypes-keys", "clean")
def _npz_structured_two_fields(d: Path) -> Call:
    arr = np.zeros(4, dtype=[("a", "<f8"), ("b", "<i4")])
    np.savez(d / "s.npz", pos=arr)
    return table_call(d / "s.npz", "pos")


@probe("dtypes-keys", "clean")
def _npy_complex(d: Path) -> Call:
    np.save(d / "c.npy", np.ones(4, np.complex64))
    return table_call(d / "c.npy")


@probe("dtypes-keys", "clean")
def _npy_datetime(d: Path) -> Call:
    np.save(d / "t.npy", np.arange(4).astype("datetime64[s]"))
    return table_call(d / "t.npy")


@probe("dtypes-keys", "clean")
def _npy_object(d: Path) -> Call:
    np.save(d / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return table_call(d / "o.npy")


@probe("dtypes-keys", "correct")
def _npy_big_endian(d: Path) -> Call:
    arr = np.linspace(-2, 2, 12).reshape(3, 4).astype(">f8")
    np.save(d / "be.npy", arr)
    return table_call(d / "be.npy", expect=arr)


@probe("dtypes-keys", "correct")
def _npy_fortran_order(d: Path) -> Call:
    arr = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    np.save(d / "f.npy", arr)
    return table_call(d / "f.npy", expect=arr)


@probe("dtypes-keys", "correct")
def _npy_version_3(d: Path) -> Call:
    arr = np.arange(6, dtype=np.uint16).reshape(2, 3)
    return table_call(write(d / "v3.npy", npy_bytes(arr, version=(3, 0))), expect=arr)


@probe("dtypes-keys", "clean")
def _pt_complex(d: Path) -> Call:
    return table_call(_save({"pos": _torch().ones(3, dtype=_torch().complex64)}, d / "c.pt"), "pos")


@probe("dtypes-keys", "correct")
def _pt_float8(d: Path) -> Call:
    torch = _torch()
    t = torch.tensor([0.5, -1.0, 2.0, 448.0]).to(torch.float8_e4m3fn)
    return table_call(_save({"pos": t}, d / "f8.pt"), "pos", expect=t.float().numpy())


@probe("dtypes-keys", "correct")
def _pt_bfloat16_and_uint16(d: Path) -> Call:
    torch = _torch()
    t = torch.linspace(-3, 3, 12).reshape(3, 4).to(torch.bfloat16)
    _save({"pos": t, "ids": torch.arange(5).to(torch.uint16)}, d / "bf.pt")
    return table_call(d / "bf.pt", "pos", expect=t.float().numpy())


@probe("dtypes-keys", "correct")
def _pt_key_none_one_tensor_shadowed(d: Path) -> Call:
    """One tensor, at ``a`` -> ``b``; a flat ``"a.b"`` entry is a number."""
    torch = _torch()
    t = torch.arange(6.0).reshape(2, 3)
    return table_call(_save({"a": {"b": t}, "a.b": 7}, d / "shadow.pt"), expect=t.numpy())


@probe("dtypes-keys", "clean")
def _pt_key_two_readings(d: Path) -> Call:
    torch = _torch()
    return table_call(_save({"a.b": torch.zeros(2, 3), "a": {"b": torch.ones(2, 3)}}, d / "two.pt"), "a.b")


@probe("dtypes-keys", "clean")
def _pt_int_and_str_keys(d: Path) -> Call:
    torch = _torch()
    return table_call(_save({0: torch.zeros(2, 3), "0": torch.ones(2, 3)}, d / "ks.pt"), "0")


@probe("dtypes-keys", "clean")
def _npz_duplicate_members(d: Path) -> Call:
    arc = zip_archive([{"name": "pos.npy", "payload": npy_bytes(np.zeros(3))},
                       {"name": "pos.npy", "payload": npy_bytes(np.ones(3))}])
    return table_call(write(d / "dup.npz", arc), "pos")


@probe("dtypes-keys", "clean")
def _npz_name_with_and_without_npy(d: Path) -> Call:
    arc = zip_archive([{"name": "pos", "payload": npy_bytes(np.zeros(3))},
                       {"name": "pos.npy", "payload": npy_bytes(np.ones(3))}])
    return table_call(write(d / "two.npz", arc), "pos")


@probe("dtypes-keys", "clean")
def _safetensors_duplicate_key(d: Path) -> Call:
    """One name twice in the header, over the same bytes: as float32, then as int32."""
    data = np.arange(4, dtype=np.float32).tobytes()
    header = (
        b'{"pos": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, '
        b'"pos": {"dtype": "I32", "shape": [4], "data_offsets": [0, 16]}}'
    )
    return table_call(write(d / "dup.safetensors", struct.pack("<Q", len(header)) + header + data), "pos")


@probe("dtypes-keys", "clean")
def _pt_pickle_dag(d: Path) -> Call:
    """40 nested lists, each holding the one below twice: 2**40 paths to one tensor."""
    node: Any = [_torch().zeros(2)]
    for _ in range(40):
        node = [node, node]
    return table_call(_save({"nest": node}, d / "dag.pt"), "pos")


@probe("dtypes-keys", "correct")
def _pt_saved_without_crcs(d: Path) -> Call:
    torch = _torch()
    t = torch.linspace(0, 1, 10)
    torch.serialization.set_crc32_options(False)
    try:
        _save({"pos": t}, d / "nocrc.pt")
    finally:
        torch.serialization.set_crc32_options(True)
    return table_call(d / "nocrc.pt", "pos", expect=t.numpy())


@probe("dtypes-keys", "correct")
def _pt_legacy_format(d: Path) -> Call:
    t = _torch().arange(12.0).reshape(3, 4)
    return table_call(_save({"pos": t}, d / "legacy.pt", _use_new_zipfile_serialization=False), "pos", expect=t.numpy())


def _rezip(src: Path, dst: Path, change: Callable[[str, bytes], bytes] = lambda n, b: b) -> Path:
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for n in z.namelist():
            out.writestr(n, change(n, z.read(n)))
    return dst


@probe("dtypes-keys", "correct")
def _pt_big_endian(d: Path) -> Call:
    """The byteorder record says big (torch's meta load swaps the bytes of storages that have none: a crash)."""
    t = _torch().linspace(-2, 2, 12).reshape(3, 4).double()
    _save({"pos": t}, d / "le.pt")

    def big(name: str, data: bytes) -> bytes:
        if name.endswith("/byteorder"):
            return b"big"
        return np.frombuffer(data, "<f8").byteswap().tobytes() if "/data/" in name else data

    return table_call(_rezip(d / "le.pt", d / "be.pt", big), "pos", expect=t.numpy())


@probe("dtypes-keys", "clean")
def _pt_unknown_byte_order(d: Path) -> Call:
    _save({"pos": _torch().zeros(3)}, d / "le.pt")
    change = lambda n, b: b"middle" if n.endswith("/byteorder") else b  # noqa: E731
    return table_call(_rezip(d / "le.pt", d / "odd.pt", change), "pos")


@probe("dtypes-keys", "correct")
def _pt_rewritten_by_zipfile(d: Path) -> Call:
    """Records not where torch.save puts them: the meta load computes wrong offsets for all but the first."""
    torch = _torch()
    _save({"a": torch.arange(5.0), "pos": torch.arange(12.0).reshape(3, 4)}, d / "m.pt")
    expect = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    return table_call(_rezip(d / "m.pt", d / "rezipped.pt"), "pos", expect=expect)


@probe("dtypes-keys", "clean")
def _pt_meta_tensor(d: Path) -> Call:
    return table_call(_save({"pos": _torch().empty(3, 4, device="meta")}, d / "meta.pt"), "pos")


# ======================================================= not regular files
def _fifo(d: Path, name: str) -> Path:
    os.mkfifo(d / name)
    return d / name


@probe("not-regular", "clean")
def _fifo_npy(d: Path) -> Call:
    return table_call(_fifo(d, "f.npy"))


@probe("not-regular", "clean")
def _fifo_npz(d: Path) -> Call:
    return table_call(_fifo(d, "f.npz"), "pos")


@probe("not-regular", "clean")
def _fifo_pt(d: Path) -> Call:
    return table_call(_fifo(d, "f.pt"), "pos")


@probe("not-regular", "clean")
def _fifo_safetensors(d: Path) -> Call:
    return table_call(_fifo(d, "f.safetensors"), "pos")


def _link(d: Path, name: str, target: str) -> Path:
    os.symlink(target, d / name)
    return d / name


@probe("not-regular", "clean")
def _dev_zero_npy(d: Path) -> Call:
    return table_call(_link(d, "z.npy", "/dev/zero"))


@probe("not-regular", "clean")
def _dev_zero_npz(d: Path) -> Call:
    return table_call(_link(d, "z.npz", "/dev/zero"), "pos")


@probe("not-regular", "clean")
def _dev_zero_pt(d: Path) -> Call:
    return table_call(_link(d, "z.pt", "/dev/zero"), "pos")


@probe("not-regular", "clean")
def _dev_zero_safetensors(d: Path) -> Call:
    return table_call(_link(d, "z.safetensors", "/dev/zero"), "pos")


@probe("not-regular", "clean")
def _dev_null_npy(d: Path) -> Call:
    return table_call(_link(d, "n.npy", "/dev/null"))


@probe("not-regular", "clean")
def _folder_npy(d: Path) -> Call:
    (d / "dir.npy").mkdir()
    return table_call(d / "dir.npy")


@probe("not-regular", "clean")
def _socket_npy(d: Path) -> Call:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d / "s.npy"))
    s.close()  # the socket file stays
    return table_call(d / "s.npy")


@probe("not-regular", "clean")
def _dangling_symlink(d: Path) -> Call:
    return table_call(_link(d, "gone.npy", str(d / "missing.npy")))


@probe("not-regular", "clean")
def _symlink_loop(d: Path) -> Call:
    os.symlink(d / "b.npy", d / "a.npy")
    os.symlink(d / "a.npy", d / "b.npy")
    return table_call(d / "a.npy")


@probe("not-regular", "correct")
def _symlink_to_a_regular_file(d: Path) -> Call:
    arr = np.arange(6.0).reshape(2, 3)
    np.save(d / "real.npy", arr)
    return table_call(_link(d, "link.npy", str(d / "real.npy")), expect=arr)


# ============================================================ command: input
OUT = ["--format", "png", "--dpi", "50"]


def cli_call(d: Path, *args: str, check: Callable[[Path, str], bool] | None = None) -> Call:
    return Call("cli", argv=[*args, "--out", str(d / "out"), *OUT], check=check)


def _config(d: Path, text: str, name: str = "config.json") -> Path:
    (d / name).write_text(text)
    return d / name


@probe("cli-input", "clean")
def _cli_table_fifo(d: Path) -> Call:
    return cli_call(d, "encoding", "--table", str(_fifo(d, "t.npy")))


@probe("cli-input", "clean")
def _cli_hf_config_fifo(d: Path) -> Call:
    return cli_call(d, "rope-scaling", "--hf-config", str(_fifo(d, "config.json")))


@probe("cli-input", "clean")
def _cli_rope_axes_hf_config_fifo(d: Path) -> Call:
    return cli_call(d, "rope-axes", "--hf-config", str(_fifo(d, "config.json")))


@probe("cli-input", "clean")
def _cli_rope_axes_hf_config_dev_zero(d: Path) -> Call:
    return cli_call(d, "rope-axes", "--hf-config", str(_link(d, "config.json", "/dev/zero")))


@probe("cli-input", "clean")
def _cli_hf_config_dev_zero(d: Path) -> Call:
    return cli_call(d, "rope-scaling", "--hf-config", str(_link(d, "config.json", "/dev/zero")))


@probe("cli-input", "clean")
def _cli_hf_config_200000_deep(d: Path) -> Call:
    return cli_call(d, "rope-scaling", "--hf-config", str(_config(d, "[" * 200_000 + "]" * 200_000)))


@probe("cli-input", "clean")
def _cli_hf_config_5000_digit_int(d: Path) -> Call:
    return cli_call(d, "rope-scaling", "--hf-config", str(_config(d, '{"rope_theta": ' + "9" * 5000 + "}")))


@probe("cli-input", "clean")
def _cli_hf_config_folder(d: Path) -> Call:
    (d / "config.json").mkdir()
    return cli_call(d, "rope-scaling", "--hf-config", str(d / "config.json"))


@probe("cli-input", "clean")
def _cli_table_bzip2_bomb(d: Path) -> Call:
    call = _npz_bzip2_bomb(d)
    return cli_call(d, "encoding", "--table", f"{call.args[0]}:pos")


@probe("cli-input", "clean")
def _cli_table_sparse_16gib(d: Path) -> Call:
    call = _pt_sparse_16gib(d)
    return cli_call(d, "similarity", "--table", f"{call.args[0]}:pos")


@probe("cli-input", "clean")
def _cli_table_zero_stride_16gib(d: Path) -> Call:
    call = _pt_zero_stride_16gib(d)
    return cli_call(d, "encoding", "--table", f"{call.args[0]}:pos")


@probe("cli-input", "clean")
def _cli_table_corrupt_lzma(d: Path) -> Call:
    call = _npz_corrupt_lzma(d)
    return cli_call(d, "encoding", "--table", f"{call.args[0]}:pos")


@probe("cli-input", "clean")
def _cli_table_over_the_size_limit(d: Path) -> Call:
    """2**26 + 8192 float32 zeros (a sparse file: no disk is used)."""
    header = npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (8193, 8192), }")
    with open(d / "big.npy", "wb") as fh:
        fh.write(header)
        fh.truncate(len(header) + 4 * 8193 * 8192)
    return cli_call(d, "encoding", "--table", str(d / "big.npy"))


@probe("cli-input", "correct")
def _cli_hf_config_symlink(d: Path) -> Call:
    cfg = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8, "rope_theta": 10000.0}
    real = _config(d, json.dumps(cfg), "real.json")

    def check(folder: Path, err: str) -> bool:
        return (folder / "out" / "rope_scaling.png").is_file()

    return cli_call(d, "rope-scaling", "--hf-config", str(_link(d, "config.json", str(real))), check=check)


# ========================================================== command: output
def _table_file(d: Path, table: np.ndarray) -> str:
    np.save(d / "table.npy", table)
    return str(d / "table.npy")


def _smooth(rows: int = 12, dim: int = 8) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((rows, dim))


@probe("cli-output", "clean")
def _cli_nan_table_encoding(d: Path) -> Call:
    t = _smooth()
    t[3, 2] = t[7, 0] = np.nan
    return cli_call(d, "encoding", "--table", _table_file(d, t))


@probe("cli-output", "clean")
def _cli_inf_table_similarity_by_offset(d: Path) -> Call:
    t = _smooth()
    t[5, 1] = np.inf
    return cli_call(d, "similarity-by-offset", "--table", _table_file(d, t))


def _zero_rows(d: Path) -> np.ndarray:
    t = _smooth(16, 8)
    t[0] = 0.0  # a padding row, as fairseq's learned positions have
    t[9] = 0.0
    return t


@probe("cli-output", "correct")
def _cli_zero_rows_similarity_by_offset(d: Path) -> Call:
    t = _zero_rows(d)

    def check(folder: Path, err: str) -> bool:
        """A note, and a mean at every offset that has a pair of non-zero rows."""
        from posenc_viz import figures

        ks, y = figures.offset_profile(t)
        live = t.any(axis=1)
        pairs = [any(live[i] and live[i + k] for i in range(len(t)) if 0 <= i + k < len(t)) for k in ks]
        return "zero row" in err and bool(np.array_equal(np.isfinite(y), np.array(pairs)))

    return cli_call(d, "similarity-by-offset", "--table", _table_file(d, t), check=check)


@probe("cli-output", "correct")
def _cli_zero_rows_similarity(d: Path) -> Call:
    return cli_call(d, "similarity", "--table", _table_file(d, _zero_rows(d)), check=lambda f, err: "zero row" in err)


@probe("cli-output", "correct")
def _cli_zero_rows_grid_similarity(d: Path) -> Call:
    t = _zero_rows(d)
    return cli_call(d, "grid-similarity", "--table", _table_file(d, t), check=lambda f, err: "zero row" in err)


@probe("cli-output", "clean")
def _cli_dangling_symlink_target(d: Path) -> Call:
    (d / "out").mkdir()
    os.symlink(d / "elsewhere" / "mine.png", d / "out" / "wavelengths.png")
    return cli_call(d, "wavelengths", "--dim", "16")


@probe("cli-output", "clean")
def _cli_symlink_to_a_file_target(d: Path) -> Call:
    (d / "out").mkdir()
    (d / "mine.png").write_bytes(b"mine")
    os.symlink(d / "mine.png", d / "out" / "wavelengths.png")
    return cli_call(d, "wavelengths", "--dim", "16")


@probe("cli-output", "correct", own_process=True)
def _sigterm_mid_write(d: Path) -> Call:
    return Call("signal", signum=signal.SIGTERM)


@probe("cli-output", "correct", own_process=True)
def _sighup_mid_write(d: Path) -> Call:
    return Call("signal", signum=signal.SIGHUP)


BY_NAME = {p.name: p for p in PROBES}
assert len(BY_NAME) == len(PROBES), "probe names must be unique"


# ================================================================ running
class _Timeout(BaseException):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def temporary_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*.tmp"))


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def _same(got: Any, expect: np.ndarray) -> bool:
    return (
        isinstance(got, np.ndarray)
        and got.shape == expect.shape
        and got.dtype.kind == expect.dtype.kind
        and np.array_equal(got, expect)
    )


def _run_table(call: Call) -> tuple[str, str]:
    from posenc_viz import load_table

    try:
        got = load_table(*call.args)
    except _Timeout:
        return "hang", f"no answer in {PROBE_TIMEOUT:g} s"
    except (ValueError, TypeError, FileNotFoundError, IsADirectoryError) as exc:
        named = "`source`" in str(exc) or "`key`" in str(exc)
        return ("clean" if named else "crash"), _describe(exc)
    except BaseException as exc:  # noqa: BLE001 - every other exception is what the probe looks for
        return "crash", _describe(exc)
    if call.expect is None:
        return "silent", f"returned {getattr(got, 'dtype', type(got))} {getattr(got, 'shape', '')}"
    if _same(got, call.expect):
        return "correct", f"{got.dtype} {got.shape}"
    return "silent", f"returned {getattr(got, 'dtype', type(got))} {getattr(got, 'shape', '')}, wrong values"


def _run_cli(call: Call, folder: Path) -> tuple[str, str]:
    from posenc_viz import cli

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(call.argv)
    except SystemExit as exc:
        code = exc.code
    except _Timeout:
        return "hang", f"no answer in {PROBE_TIMEOUT:g} s"
    except BaseException as exc:  # noqa: BLE001 - a traceback, exit status 1
        return "crash", _describe(exc)
    text = err.getvalue()
    left = temporary_files(folder)
    if left:
        return "partial", f"left {left}"
    lines = text.strip().splitlines()
    last = lines[-1] if lines else ""
    if code == 2:
        clean = lines and lines[0].startswith("usage:") and sum(": error: " in ln for ln in lines) == 1
        return ("clean" if clean and "Traceback" not in text else "crash"), f"exit 2: {last[:300]}"
    if code == 0:
        ok = call.check is not None and call.check(folder, text)
        return ("correct" if ok else "silent"), f"exit 0{': ' + last[:300] if last else ', nothing said'}"
    return "crash", f"exit {code}: {last[:300]}"


#: what the child of a signal probe runs: the command, with savefig sending the
#: signal to its own process after the first bytes of the figure are written
_SIGNAL_DRIVER = """
import os, sys
import matplotlib
matplotlib.use("Agg")
from matplotlib.figure import Figure
real = Figure.savefig
def savefig(self, fh, *args, **kwargs):
    fh.write(b"partial")
    fh.flush()
    os.kill(os.getpid(), int(sys.argv[1]))
    return real(self, fh, *args, **kwargs)
Figure.savefig = savefig
from posenc_viz import cli
sys.exit(cli.main(["wavelengths", "--dim", "16", "--out", sys.argv[2], "--format", "png", "--dpi", "50"]))
"""


def _root() -> str:
    import posenc_viz

    return str(Path(posenc_viz.__file__).resolve().parent.parent)


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": _root() + (os.pathsep + path if path else "")}


def start_signal(call: Call, folder: Path) -> subprocess.Popen:
    args = [sys.executable, "-c", _SIGNAL_DRIVER, str(int(call.signum)), str(folder / "out")]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())


def finish_signal(proc: subprocess.Popen, call: Call, folder: Path) -> tuple[str, str]:
    """The outcome of a signal probe: killed by its signal, with no file at all."""
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return "hang", "no end in 120 s"
    out = folder / "out"
    left = temporary_files(folder)
    if left:
        return "partial", f"exit {proc.returncode}, left {left}"
    if proc.returncode == -call.signum:
        files = sorted(p.name for p in out.iterdir()) if out.exists() else []
        return ("correct" if not files else "partial"), f"killed by signal {call.signum}, files {files}"
    tail = (err.strip().splitlines() or [""])[-1]
    return "crash", f"exit {proc.returncode}: {tail[:300]}"


def _cap_memory() -> None:
    import resource

    with open("/proc/self/status") as fh:
        vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = vm + HEADROOM if hard == resource.RLIM_INFINITY else min(hard, vm + HEADROOM)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _child(folder: Path, names: list[str]) -> None:
    """Build the files of ``names``, cap the memory, run them, one JSON line each."""
    import warnings

    warnings.simplefilter("ignore")
    import safetensors.numpy  # noqa: F401
    import torch  # noqa: F401

    import posenc_viz.cli  # noqa: F401 - imports first, so that the cap counts only the probes

    calls: dict[str, Call | str] = {}
    for name in names:
        sub = folder / name
        sub.mkdir(parents=True)
        try:
            calls[name] = BY_NAME[name].build(sub)
        except Exception as exc:  # noqa: BLE001 - a probe that cannot be built says so
            calls[name] = _describe(exc)
    _cap_memory()
    signal.signal(signal.SIGALRM, _on_alarm)
    for name in names:
        call, sub = calls[name], folder / name
        if isinstance(call, str):
            print(json.dumps({"name": name, "outcome": "unbuilt", "detail": call}), flush=True)
            continue
        signal.setitimer(signal.ITIMER_REAL, PROBE_TIMEOUT)
        try:
            outcome, detail = _run_table(call) if call.kind == "table" else _run_cli(call, sub)
        except _Timeout:
            outcome, detail = "hang", f"no answer in {PROBE_TIMEOUT:g} s"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        print(json.dumps({"name": name, "kind": call.kind, "outcome": outcome, "detail": detail}), flush=True)


def _read_results(proc: subprocess.Popen, names: list[str]) -> dict[str, dict]:
    """Result lines as they come; the probe that gets none in time is a hang,
    the one running when the child dies a crash."""
    results: dict[str, dict] = {}
    fd = proc.stdout.fileno()
    buf = b""
    deadline = time.monotonic() + 120 + PROBE_TIMEOUT  # the imports and the files first
    while len(results) < len(names):
        current = names[len(results)]
        wait = deadline - time.monotonic()
        ready = select.select([fd], [], [], max(wait, 0))[0] if wait > 0 else []
        if not ready:
            proc.kill()
            results[current] = {"name": current, "outcome": "hang", "detail": "the child stopped answering"}
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            rc = proc.wait()
            err = proc.stderr.read().decode(errors="replace").strip().splitlines()
            tail = err[-1] if err else ""
            results[current] = {"name": current, "outcome": "crash", "detail": f"child died ({rc}): {tail[:300]}"}
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            res = json.loads(line)
            results[res["name"]] = res
            deadline = time.monotonic() + PROBE_TIMEOUT + 10
    return results


def run(names: list[str], folder: Path) -> dict[str, dict]:
    """Run the probes ``names`` with their files under ``folder``: the signal
    probes each in its own process, the others in capped children (a new one
    after a probe that hangs or kills its child)."""
    results: dict[str, dict] = {}
    own = {}
    for name in names:
        if BY_NAME[name].own_process:  # started first, run beside the child
            sub = folder / name
            sub.mkdir(parents=True)
            call = BY_NAME[name].build(sub)
            own[name] = (start_signal(call, sub), call, sub)
    rest = [n for n in names if n not in own]
    attempt = 0
    while rest:
        attempt += 1  # each child builds its files afresh, in its own folder
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--child", str(folder / f"child{attempt}"), *rest],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=str(folder),
        )
        try:
            got = _read_results(proc, rest)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        results.update(got)
        rest = [n for n in rest if n not in got]
    for name, (proc, call, sub) in own.items():
        outcome, detail = finish_signal(proc, call, sub)
        results[name] = {"name": name, "kind": call.kind, "outcome": outcome, "detail": detail}
    return results


def table(results: dict[str, dict]) -> str:
    groups = list(dict.fromkeys(p.group for p in PROBES if p.name in results))
    head = f"{'group':<14} {'tried':>5} " + " ".join(f"{o:>7}" for o in OUTCOMES)
    lines = [head, "-" * len(head)]
    for g in [*groups, None]:
        members = [r for n, r in results.items() if g is None or BY_NAME[n].group == g]
        counts = {o: sum(r["outcome"] == o for r in members) for o in OUTCOMES}
        if g is None:
            lines.append("-" * len(head))
        lines.append(f"{g or 'all':<14} {len(members):>5} " + " ".join(f"{counts[o]:>7}" for o in OUTCOMES))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        _child(Path(argv[1]), argv[2:])
        return 0
    import tempfile

    verbose = "-v" in argv
    names = [a for a in argv if a != "-v"] or [p.name for p in PROBES]
    with tempfile.TemporaryDirectory(prefix="posenc-hostile-") as tmp:
        results = run(names, Path(tmp))
    if verbose:
        for name in names:
            r, want = results[name], BY_NAME[name].want
            mark = "ok " if r["outcome"] == want else "BAD"
            print(f"{mark} {BY_NAME[name].group:<12} {name:<40} {r['outcome']:<8} {r['detail']}")
        print()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
