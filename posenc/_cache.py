"""Bounded, thread-safe caches for tables that depend only on Python arguments.

Two caches live here:

* :data:`HOST`: the float64 / float32 NumPy tables of coarse and fine angles
  used by :mod:`posenc._angles` (small: about ``2 * sqrt(n) * dim`` values
  per table of ``n`` rows);
* :data:`TABLES`: finished tables of integer ``positions`` (``sinusoidal(n,
  dim, ...)``), per namespace, device and dtype, so that a repeated identical
  call costs a dictionary lookup (plus a copy where the backend's arrays are
  mutable, see :func:`share`).

Both are least-recently-used caches with a byte budget.  A finished table
larger than a quarter of :data:`TABLES`' budget is never stored (a one-off
huge table should not pin memory for the rest of the process).  :func:`clear` empties them and
:func:`set_max_bytes` changes the budget of :data:`TABLES`.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from . import _compat, _kernels
from ._compat import Array

__all__ = ["LRU", "HOST", "TABLES", "clear", "set_max_bytes", "share", "device_key"]


class LRU:
    """A least-recently-used mapping with a byte budget.

    ``get`` and ``put`` take a lock; values are computed outside it (two
    threads asking for the same missing key may both compute it, and the
    second ``put`` wins: harmless for pure functions).
    """

    def __init__(self, max_bytes: int, *, max_entry_fraction: float = 0.25) -> None:
        self._data: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._bytes = 0
        self.max_bytes = int(max_bytes)
        self.max_entry_fraction = float(max_entry_fraction)
        self.hits = 0
        self.misses = 0

    def get(self, key: Any) -> Any:
        with self._lock:
            item = self._data.get(key)
            if item is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key: Any, value: Any, nbytes: int) -> bool:
        """Store ``value``; False (and nothing stored) when it is too large."""
        nbytes = int(nbytes)
        with self._lock:
            if nbytes > self.max_bytes * self.max_entry_fraction:
                return False
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (value, nbytes)
            self._bytes += nbytes
            self._evict()
            return key in self._data

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and self._data:
            _, (_, nb) = self._data.popitem(last=False)
            self._bytes -= nb

    def fits(self, nbytes: int) -> bool:
        """Whether an entry of ``nbytes`` would be stored."""
        return 0 < int(nbytes) <= self.max_bytes * self.max_entry_fraction

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def set_max_bytes(self, max_bytes: int) -> None:
        with self._lock:
            self.max_bytes = int(max_bytes)
            self._evict()

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._data)


#: host angle tables (NumPy, read-only); one entry may take the whole budget
#: (the tables of an 8 GiB Dask table take 48 MiB and are read by every chunk)
HOST = LRU(128 * 2**20, max_entry_fraction=1.0)
#: finished tables of integer positions, on their namespace and device
TABLES = LRU(256 * 2**20)


def clear() -> None:
    """Empty both caches and every memo kept through :func:`posenc._compat.remember`."""
    HOST.clear()
    TABLES.clear()
    for memo in list(_compat.MEMOS.values()):
        memo.clear()


def _after_fork_in_child() -> None:
    """A forked child starts with new locks and empty caches.

    A lock another thread of the parent held at the fork stays held forever
    in the child (which has only the forking thread); cached tables may live
    on a device the child cannot use (CUDA is not usable after a fork).
    """
    for lru in (HOST, TABLES):
        lru._lock = threading.Lock()
        lru._data = OrderedDict()
        lru._bytes = 0
    for memo in list(_compat.MEMOS.values()):
        memo.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def set_max_bytes(max_bytes: int) -> None:
    """Byte budget of the finished-table cache (0 disables it)."""
    TABLES.set_max_bytes(max_bytes)


def nbytes_of(a: Array, xp: Any) -> int:
    """Bytes of a real floating array of any namespace."""
    size = 1
    for d in a.shape:
        size *= int(d)
    return size * (int(xp.finfo(a.dtype).bits) // 8)


def device_key(ctx: Any, numpy: bool = False) -> str:
    """A hashable name for the device a table of ``ctx`` lands on.

    ``ctx.device is None`` means the namespace's current default device,
    which can change (``torch.set_default_device``, ``jax.default_device``),
    so it is read from a zero-size array of that namespace.
    """
    xp = ctx.xp
    dev = ctx.device
    if dev is None:
        if numpy:
            return "cpu"
        dev = xp.empty((0,), dtype=ctx.work).device
    return f"{type(dev).__module__}.{type(dev).__name__}:{dev!r}"


def share(value: Array, kind: str, xp: Any) -> Array:
    """What a cached table is handed out as, so that callers cannot change it.

    ``kind`` is what :func:`posenc._angles.range_table` recorded:

    * ``"numpy"``: the cached array is read-only; callers get a fresh view of
      it (whose ``WRITEABLE`` flag cannot be switched back on, because its
      base is read-only);
    * ``"immutable"`` (JAX): the array itself;
    * ``"torch"``: a copy (a tensor cannot be made read-only, and
      ``load_state_dict`` copies into registered buffers in place).  On the
      CPU it is torch's copy-on-write clone (``torch._lazy_clone``, present
      since torch 2.3): it shares the cached memory until the first write to
      it (an in-place op, ``.numpy()``, ``data_ptr()``), which copies.  A
      plain ``clone()`` where that is missing;
    * anything else: ``asarray(copy=True)`` in the array's namespace.
    """
    if kind == "numpy":
        return value.view()
    if kind == "immutable":
        return value
    if kind == "torch":
        return _kernels.torch_share(value)
    return xp.asarray(value, copy=True)


def readonly(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Mark NumPy arrays read-only (host constants and cached tables); returns them."""
    for a in arrays:
        a.setflags(write=False)
    return arrays
