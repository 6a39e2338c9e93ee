"""Reading untrusted files: regular files only, sizes checked before anything
is allocated, zip members inflated with a bound and checked against their CRC.

Every failure is a :class:`ValueError` that names the parameter the file came
from (``source`` for :func:`posenc_viz.load_table`), except a missing file
(:class:`FileNotFoundError`).
"""

from __future__ import annotations

import ast
import math
import os
import stat
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

#: bytes read at a time from a file (compressed input, CRC passes)
CHUNK = 1 << 20
#: the longest .npy header read (NumPy's own default limit)
MAX_NPY_HEADER = 10000
#: NumPy's limit on dimensions
MAX_NDIM = 64

_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def fail(name: str, path: Path, text: str) -> ValueError:
    return ValueError(f"`{name}` {str(path.name)!r} {text}")


def open_regular(path: Path, name: str = "source") -> tuple[BinaryIO, int]:
    """Open ``path`` for reading if it is a regular file (after following
    symbolic links); return the file and its size.

    FIFOs, devices, sockets and folders are refused from :func:`os.stat`,
    before anything is opened, so nothing blocks and no device is touched; the
    file opened is checked to be the one examined.
    """
    shown = str(path)
    try:
        before = os.stat(path)
    except FileNotFoundError:
        if os.path.lexists(path):
            msg = f"`{name}` {shown!r} is a broken symbolic link (its target does not exist)"
        else:
            msg = f"`{name}` {shown!r} does not exist"
        raise FileNotFoundError(msg) from None
    except OSError as exc:  # a loop of links, a name too long, a folder that cannot be searched
        msg = f"`{name}` {shown!r} cannot be opened: {exc.strerror or exc}"
        raise ValueError(msg) from None
    if not stat.S_ISREG(before.st_mode):
        what = _KINDS.get(stat.S_IFMT(before.st_mode), "not a file")
        msg = f"`{name}` {shown!r} is {what}, not a regular file"
        raise ValueError(msg)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        msg = f"`{name}` {shown!r} cannot be opened: {exc.strerror or exc}"
        raise ValueError(msg) from None
    after = os.fstat(fd)
    if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
        os.close(fd)
        msg = f"`{name}` {shown!r} changed while it was being opened"
        raise ValueError(msg)
    return os.fdopen(fd, "rb"), after.st_size


def read_exactly(fh: BinaryIO, size: int) -> bytes:
    """``size`` bytes from ``fh`` (fewer only at the end of the file)."""
    parts, left = [], size
    while left > 0:
        part = fh.read(min(left, CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


# ------------------------------------------------------------- .npy header
@dataclass(frozen=True)
class NpyHeader:
    dtype: np.dtype
    shape: tuple[int, ...]
    fortran: bool
    size: int  # bytes of the header, magic included

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.count * self.dtype.itemsize


def read_npy_header(read: Any, describe: Any) -> NpyHeader:
    """Parse a .npy header from ``read(n)`` (exactly ``n`` bytes or fewer at
    the end).  ``describe(detail)`` makes the error.  No NumPy reader runs: the
    header is a Python literal of at most 10000 characters, evaluated by
    :func:`ast.literal_eval`, and every field is checked."""
    magic = read(8)
    if len(magic) < 8 or magic[:6] != b"\x93NUMPY":
        raise describe("it does not start with the .npy magic string")
    major, minor = magic[6], magic[7]
    if major not in (1, 2, 3) or minor != 0:
        raise describe(f"unknown .npy format version {major}.{minor}")
    width = 2 if major == 1 else 4
    raw = read(width)
    if len(raw) < width:
        raise describe("the header is cut short")
    length = int.from_bytes(raw, "little")
    if length > MAX_NPY_HEADER:
        raise describe(f"its header has {length} bytes, more than {MAX_NPY_HEADER}")
    body = read(length)
    if len(body) < length:
        raise describe("the header is cut short")
    try:
        text = body.decode("utf-8" if major == 3 else "latin1")
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, UnicodeDecodeError):
        raise describe("its header is not a Python literal") from None
    if not isinstance(value, dict) or set(value) != {"descr", "fortran_order", "shape"}:
        raise describe("its header is not a dict of 'descr', 'fortran_order' and 'shape'")
    shape, fortran = value["shape"], value["fortran_order"]
    if (
        not isinstance(shape, tuple)
        or len(shape) > MAX_NDIM
        or not all(type(s) is int and s >= 0 for s in shape)
        or type(fortran) is not bool
    ):
        raise describe(f"its header has a bad shape or order ({str(text).strip()[:120]})")
    try:
        dtype = np.lib.format.descr_to_dtype(value["descr"])
    except Exception:  # noqa: BLE001 - any descr NumPy cannot read
        raise describe(f"its header has a dtype NumPy cannot read ({str(value['descr'])[:80]!r})") from None
    return NpyHeader(dtype, shape, fortran, 8 + width + length)


def numeric_dtype(dtype: np.dtype) -> str | None:
    """Why ``dtype`` is not an array of real numbers (``None`` if it is):
    bool, integers and floats are; structured, void, complex, datetime,
    string and object dtypes are not."""
    if dtype.names is not None or dtype.kind == "V":
        return f"the structured dtype {dtype} (read one field and save it alone)"
    if dtype.subdtype is not None:
        return f"the sub-array dtype {dtype}"
    if dtype.hasobject:
        return "dtype object (pickled Python objects are never read)"
    if dtype.kind not in "biuf":
        return f"dtype {dtype}, not real numbers"
    return None


# ---------------------------------------------------------------- zip files
STORED, DEFLATED, BZIP2, LZMA = 0, 8, 12, 14
METHODS = {STORED: "stored", DEFLATED: "deflate", BZIP2: "bzip2", LZMA: "LZMA"}


@dataclass(frozen=True)
class Member:
    name: str
    method: int
    flags: int
    crc: int
    csize: int  # compressed bytes
    size: int  # uncompressed bytes, as declared
    header_offset: int


class Archive:
    """The members of a zip file, read from its central directory (bounded by
    the file's size), and their data read with every size and CRC checked."""

    def __init__(self, fh: BinaryIO, file_size: int, describe: Any) -> None:
        import zipfile

        self.fh, self.file_size, self.describe = fh, file_size, describe
        fh.seek(0)
        try:
            with zipfile.ZipFile(fh) as z:
                infos = z.infolist()
        except Exception as exc:  # noqa: BLE001 - zipfile raises many kinds for a bad directory
            raise describe(f"{type(exc).__name__}: {_first_line(exc)}") from None
        self.members = [
            Member(i.filename, i.compress_type, i.flag_bits, i.CRC, i.compress_size, i.file_size, i.header_offset)
            for i in infos
        ]

    def data_offset(self, m: Member) -> int:
        """Where the member's data starts (after its local header); the data
        must lie inside the file."""
        if m.header_offset < 0 or m.header_offset + 30 > self.file_size:
            raise self.describe(f"member {m.name!r} starts outside the file")
        self.fh.seek(m.header_offset)
        head = read_exactly(self.fh, 30)
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            raise self.describe(f"member {m.name!r} has no local header")
        n, e = struct.unpack("<2H", head[26:30])
        start = m.header_offset + 30 + n + e
        if start + m.csize > self.file_size:
            raise self.describe(f"member {m.name!r} ends outside the file")
        return start

    def open(self, m: Member) -> MemberReader:
        if m.flags & 0x41:
            raise self.describe(f"member {m.name!r} is encrypted")
        if m.method not in METHODS:
            method = f"compression method {m.method}"
            raise self.describe(f"member {m.name!r} uses {method}, not stored, deflate, bzip2 or LZMA")
        if m.method == STORED and m.csize != m.size:
            raise self.describe(f"member {m.name!r} is stored with {m.csize} bytes but declares {m.size}")
        return MemberReader(self, m, self.data_offset(m))


class MemberReader:
    """A zip member's bytes, inflated a bounded piece at a time: never more
    output than asked for, never more than the member declares, and the CRC
    checked by :meth:`finish`."""

    def __init__(self, archive: Archive, m: Member, start: int) -> None:
        self.archive, self.m = archive, m
        self.pos = start  # next compressed byte in the file
        self.left = m.csize  # compressed bytes not yet read from the file
        self.out = 0  # uncompressed bytes handed out
        self.crc = 0
        self.pending = b""  # compressed bytes read but not yet given to the decompressor
        self.dec: Any = None
        if m.method == DEFLATED:
            self.dec = zlib.decompressobj(-15)
        elif m.method == BZIP2:
            import bz2

            self.dec = bz2.BZ2Decompressor()
        elif m.method == LZMA:
            self.dec = self._lzma()

    def _fail(self, text: str) -> ValueError:
        return self.archive.describe(f"member {self.m.name!r} {text}")

    def _raw(self, n: int) -> bytes:
        n = min(n, self.left)
        if n <= 0:
            return b""
        fh = self.archive.fh
        fh.seek(self.pos)
        data = read_exactly(fh, n)
        if len(data) < n:
            raise self._fail("is cut short")
        self.pos += n
        self.left -= n
        return data

    def _lzma(self) -> Any:
        import lzma

        head = self._raw(4)
        if len(head) < 4:
            raise self._fail("has no LZMA properties")
        psize = int.from_bytes(head[2:4], "little")
        props = self._raw(psize)
        if psize != 5 or len(props) != 5 or props[0] >= 9 * 5 * 5:
            raise self._fail("has bad LZMA properties")
        d = props[0]
        lc, lp, pb = d % 9, (d // 9) % 5, d // 45
        # a dictionary larger than the data is never used: the properties may ask for 4 GiB
        dict_size = max(4096, min(int.from_bytes(props[1:5], "little"), self.m.size))
        filters = [{"id": lzma.FILTER_LZMA1, "dict_size": dict_size, "lc": lc, "lp": lp, "pb": pb}]
        return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters)

    def _inflate(self, limit: int) -> bytes:
        """At most ``limit`` uncompressed bytes (empty at the end of the data)."""
        if self.dec is None:
            return self._raw(min(limit, CHUNK))
        import lzma

        while True:  # each turn reads input, gives output or returns
            if getattr(self.dec, "eof", False):
                return b""
            if not self.pending and getattr(self.dec, "needs_input", True):
                self.pending = self._raw(1 << 16)
            data, self.pending = self.pending, b""
            try:
                out = self.dec.decompress(data, limit)
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as exc:
                raise self._fail(f"is corrupt ({METHODS[self.m.method]}: {_first_line(exc)})") from None
            if self.m.method == DEFLATED:
                self.pending = self.dec.unconsumed_tail
            if out:
                return out
            if not data and not self.pending:  # no input left and nothing more came out
                return b""

    def read(self, n: int) -> bytes:
        """Exactly ``n`` more bytes, within the declared size."""
        if self.out + n > self.m.size:
            raise self._fail(f"declares {self.m.size} bytes, fewer than its contents need")
        parts, got = [], 0
        while got < n:
            part = self._inflate(n - got)
            if not part:
                raise self._fail("is cut short")
            parts.append(part)
            got += len(part)
        data = b"".join(parts)
        self.out += n
        self.crc = zlib.crc32(data, self.crc)
        return data

    def read_array(self, nbytes: int) -> np.ndarray:
        """The next ``nbytes`` bytes as a uint8 array.  A stored member's bytes
        are in the file, so the array is made at once; a compressed member's
        array grows (doubling) with the bytes actually inflated, so that a
        member declaring more than its stream holds costs only what it holds."""
        size = nbytes if self.m.method == STORED else min(nbytes, 1 << 24)
        out = np.empty(size, np.uint8)
        at = 0
        while at < nbytes:
            if at == size:
                size = min(nbytes, 2 * size)
                grown = np.empty(size, np.uint8)
                grown[:at] = out[:at]
                out = grown
            part = self.read(min(size - at, CHUNK))
            out[at : at + len(part)] = np.frombuffer(part, np.uint8)
            at += len(part)
        return out

    def finish(self) -> None:
        """The member must end here (nothing more to inflate) and match its CRC."""
        if self.out != self.m.size:
            raise self._fail(f"declares {self.m.size} bytes, its contents take {self.out}")
        if self._inflate(1):
            raise self._fail(f"inflates to more than the {self.m.size} bytes it declares")
        if self.crc != self.m.crc:
            raise self._fail("fails its CRC-32 check")

    def skip_to_end(self) -> None:
        """Read the rest of the declared bytes (for the CRC), keeping none."""
        while self.out < self.m.size:
            self.read(min(self.m.size - self.out, CHUNK))


def read_stored(archive: Archive, m: Member, start: int, keep: tuple[int, int], *, check: bool = True) -> bytearray:
    """The bytes ``keep = (lo, hi)`` of a stored member, after checking the
    CRC of the whole member (read a chunk at a time) unless ``check`` is false."""
    lo, hi = keep
    fh = archive.fh
    if not check:
        fh.seek(start + lo)
        out = bytearray(read_exactly(fh, hi - lo))
        if len(out) < hi - lo:
            raise archive.describe(f"member {m.name!r} is cut short")
        return out
    out = bytearray(hi - lo)
    crc, at = 0, 0
    fh.seek(start)
    while at < m.size:
        part = fh.read(min(CHUNK, m.size - at))
        if not part:
            raise archive.describe(f"member {m.name!r} is cut short")
        crc = zlib.crc32(part, crc)
        a, b = max(lo, at), min(hi, at + len(part))
        if a < b:
            out[a - lo : b - lo] = part[a - at : b - at]
        at += len(part)
    if crc != m.crc:
        raise archive.describe(f"member {m.name!r} fails its CRC-32 check")
    return out


def _first_line(exc: BaseException) -> str:
    return ((str(exc).strip().splitlines() or [type(exc).__name__])[0])[:200]


# -------------------------------------------------------------------- text
def read_text(path: Path, name: str, max_bytes: int) -> str:
    """A small UTF-8 text file (a JSON config): a regular file of at most
    ``max_bytes`` bytes."""
    fh, size = open_regular(path, name)
    with fh:
        if size > max_bytes:
            msg = f"`{name}` {str(path)!r} has {size} bytes, more than the {max_bytes} a config may have"
            raise ValueError(msg)
        data = read_exactly(fh, max_bytes + 1)
    if len(data) > max_bytes:  # it grew while being read
        msg = f"`{name}` {str(path)!r} has more than the {max_bytes} bytes a config may have"
        raise ValueError(msg)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"`{name}` {str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise ValueError(msg) from None


def json_depth(value: Any, limit: int) -> int:
    """The nesting depth of a parsed JSON value, counted without recursion
    (stops counting past ``limit``)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest
