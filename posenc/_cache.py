"""The one memo mechanism of posenc, and how a cached table is handed out.

Every value posenc keeps between calls lives in a registered cache of this
module, of one of two kinds:

* :class:`Memo`: a dict of at most ``limit`` entries (the oldest one is
  dropped when it is full), for small answers that are asked again and
  again -- resolved contexts, dtype predicates, namespaces, device copies of
  host constants, the plans of the hot paths (validated arguments and the
  kernel chosen for arrays of one type, dtype, device and shape), sign
  tables, T5 thresholds.  Reading one is a plain ``dict.get`` (no Python
  call on the hot path); :meth:`Memo.get_or_make` is the plan pattern;
  :func:`memoize` makes a function of hashable arguments a memo;
* :class:`LRU`: least-recently-used with a byte budget, for tables:
  :data:`HOST` (the float64 / float32 NumPy tables of coarse and fine angles,
  turns and digit tables of :mod:`posenc._angles`; one entry may take the
  whole budget) and :data:`TABLES` (finished tables of integer positions,
  per namespace, device and dtype; an entry above a quarter of the budget is
  never kept: a one-off huge table should not pin memory for the rest of the
  process).

Each cache registers itself in :data:`CACHES` when it is made: :func:`clear`
(``posenc.clear_caches``) empties every one of them, :func:`limits`
(``posenc.cache_limits``) reads and sets the byte budgets, and a forked child
(DataLoader workers, multiprocessing's fork start method) starts with new
locks and empty caches (``os.register_at_fork``).

A cached table is handed out by :func:`share` in one of the :class:`Share`
modes (which one, for a backend, :mod:`posenc._kernels` decides), so that
nothing a caller does to a returned array changes a later result.

This module is the bottom of the package: it imports nothing of posenc.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "CACHES",
    "HOST",
    "LRU",
    "Memo",
    "Share",
    "TABLES",
    "clear",
    "device_key",
    "holds_no_arrays",
    "limits",
    "MEMO_BYTES",
    "memoize",
    "nbytes_of",
    "readonly",
    "set_max_bytes",
    "share",
    "sizeof",
    "typed_key",
]

#: every cache of posenc by name (a :class:`Memo` or an :class:`LRU`)
CACHES: dict[str, Memo | LRU] = {}


def _register(name: str, cache: Memo | LRU) -> None:
    if name in CACHES:
        msg = f"a cache named {name!r} exists already"
        raise ValueError(msg)
    CACHES[name] = cache


#: bytes of arrays one :class:`Memo` may keep (plans, frequencies and device
#: constants grow with ``dim``: 40 calls with ``dim = 2**20`` kept 3 GB); an
#: entry above a quarter of it is not kept (computed again per call)
MEMO_BYTES = 32 * 2**20


#: types whose values hold no arrays: filled as :func:`sizeof` meets them
#: (scalars, strings, types, modules, dtypes, devices, enumerations) and by
#: :func:`holds_no_arrays`, so that walking a plan costs a set lookup per
#: such attribute (a timestep embedding's first call walks about 140 values)
_NO_ARRAYS: set[type] = {bool, int, float, complex, str, type(None), type, type(os)}


def holds_no_arrays(cls: type) -> type:
    """Class decorator: :func:`sizeof` counts no bytes for its instances
    (posenc's value objects that hold a namespace, a device and dtypes)."""
    _NO_ARRAYS.add(cls)
    return cls


def sizeof(value: Any, depth: int = 0) -> int:
    """Bytes of the arrays held by ``value`` (a memo's entry): arrays of any
    namespace (``nbytes``), ``bytes`` (:class:`posenc._turns.Freqs`), tuples, lists, dicts, objects with slots or a
    ``__dict__`` and the cells of closures, a few levels deep (modules,
    types and namespaces are not walked)."""
    tp = type(value)
    if tp in _NO_ARRAYS or depth > 6:
        return 0
    if tp is bytes or tp is bytearray:  # frequencies travel as their float64 bytes
        return len(value)
    if isinstance(value, (bool, int, float, str, type, enum.Enum)):
        _NO_ARRAYS.add(tp)
        return 0
    nb = getattr(value, "nbytes", None) if hasattr(value, "shape") else None
    if isinstance(nb, int):
        return nb
    if isinstance(value, (tuple, list, frozenset, set)):
        return _sum_of(value, depth + 1)
    if isinstance(value, dict):
        return _sum_of(value.values(), depth + 1)
    if tp.__module__.split(".")[0] != "posenc" and not callable(value):
        if nb is None:  # (an array type whose size is not known is not remembered)
            _NO_ARRAYS.add(tp)
        return 0  # a namespace, device or dtype object
    total = 0
    if callable(value):
        cells = getattr(value, "__closure__", None) or ()
        total += sum(sizeof(c.cell_contents, depth + 1) for c in cells if _cell_full(c))
        owner = getattr(value, "__self__", None)
        if owner is not None and type(owner).__module__.split(".")[0] == "posenc":
            total += sizeof(owner, depth + 1)
        for name in ("args", "keywords"):  # functools.partial
            total += sizeof(getattr(value, name, None), depth + 1) if isinstance(value, functools.partial) else 0
        if tp.__module__.split(".")[0] != "posenc":
            return total
    for cls in tp.__mro__:
        total += _sum_of([getattr(value, name, None) for name in getattr(cls, "__slots__", ())], depth + 1)
    inst = getattr(value, "__dict__", None)
    if isinstance(inst, dict):
        total += _sum_of(inst.values(), depth + 1)
    return total


def _sum_of(values: Any, depth: int) -> int:
    """:func:`sizeof` summed over ``values``, skipping known array-free types
    without a call, and flat tuples of them (the ``(type, value)`` pairs of
    typed keys) with one look at each item."""
    skip = _NO_ARRAYS
    total = 0
    for v in values:
        tp = type(v)
        if tp in skip:
            continue
        if isinstance(v, tuple) and depth < 6:  # (shapes too)
            for u in v:
                if type(u) not in skip:
                    total += sizeof(v, depth)
                    break
            continue
        total += sizeof(v, depth)
    return total


def _cell_full(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


class Memo:
    """A registered dict of at most ``limit`` entries and :data:`MEMO_BYTES`
    bytes of arrays.

    Read it with ``memo.get(key)`` (the dict's own ``get``: no Python call on
    the hot path; ``None`` for a missing key); :meth:`put` stores a value,
    dropping the oldest entry when the memo is full (a model that meets ever
    new shapes keeps its latest ones; the oldest ones go too while the arrays
    the memo holds pass its byte budget, and an entry above a quarter of it
    is not kept, see :func:`sizeof`).  Values are computed outside any lock:
    two threads asking for the same missing key may both compute it, and the
    second ``put`` wins (harmless for pure functions).  Memos are never read
    while torch's compiler traces (its tracer would follow the lookups and
    guard on the contents), except inside host constants
    (:func:`posenc._trace.host_constant`), which it runs eagerly.
    """

    __slots__ = ("name", "limit", "max_bytes", "nbytes", "_data", "_sizes", "get")

    def __init__(self, name: str, limit: int, max_bytes: int = MEMO_BYTES) -> None:
        self.name = name
        self.limit = int(limit)
        self.max_bytes = int(max_bytes)
        self.nbytes = 0
        self._data: dict[Any, Any] = {}
        self._sizes: dict[Any, int] = {}  # keys of entries that hold arrays
        self.get = self._data.get
        _register(name, self)

    def __repr__(self) -> str:
        return f"Memo({self.name!r}, {len(self)}/{self.limit} entries)"

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Any:
        return iter(self._data)

    def __contains__(self, key: Any) -> bool:
        return key in self._data

    def values(self) -> Any:
        return self._data.values()

    def clear(self) -> None:
        self._data.clear()
        self._sizes.clear()
        self.nbytes = 0

    def _drop_oldest(self) -> None:
        data = self._data
        # another thread may have evicted it first
        with contextlib.suppress(KeyError, RuntimeError, StopIteration):
            old = next(iter(data))
            del data[old]
            self.nbytes -= self._sizes.pop(old, 0)

    def put(self, key: Any, value: Any) -> None:
        """Keep ``value`` under ``key``, dropping the oldest entries while the
        memo is full (in entries or in bytes); a value of more than a quarter
        of the byte budget is not kept."""
        skip = _NO_ARRAYS  # (answers of a type, a flag: no call)
        size = (0 if type(value) in skip else sizeof(value)) + (0 if type(key) in skip else sizeof(key))
        # (keys hold frequencies as bytes)
        if size > self.max_bytes // 4:
            return
        data = self._data
        if key in data:
            self.nbytes -= self._sizes.pop(key, 0)
            with contextlib.suppress(KeyError):
                del data[key]
        while data and (len(data) >= self.limit or (size and self.nbytes + size > self.max_bytes)):
            self._drop_oldest()
        data[key] = value
        if size:
            self._sizes[key] = size
            self.nbytes += size

    def get_or_make(self, key: Any, make: Callable[..., Any], *args: Any) -> Any:
        """The value under ``key``, or ``make(*args)`` (then kept).

        The plan pattern of the public functions: ``key`` is
        :func:`posenc._compat.call_key` of the call (``None`` where the call
        cannot be keyed: traced, lazy or converted arguments), ``make``
        validates the arguments and returns the plan.  Nothing is kept for
        no key, an unhashable key (the full checks then say what is wrong),
        or a value whose ``keep`` attribute is false (a plan that read the
        values of its arguments).
        """
        if key is None:
            return make(*args)
        try:
            got = self.get(key)
        except TypeError:  # unhashable options
            return make(*args)
        if got is None:
            got = make(*args)
            if getattr(got, "keep", True):
                self.put(key, got)
        return got


def typed_key(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The memo key of Python arguments with their types: ``128``, ``128.0``
    and ``True`` hash alike but are checked (and refused) differently."""
    return tuple((type(a), a) for a in args)


def memoize(limit: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Keep the results of a function of hashable positional arguments in a
    registered :class:`Memo` of ``limit`` entries (named after the function,
    reachable as the wrapper's ``memo``)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        memo = Memo(f"{fn.__module__}.{fn.__qualname__}", limit)

        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            got = memo.get(args)
            if got is None:
                got = fn(*args)
                memo.put(args, got)
            return got

        call.memo = memo  # type: ignore[attr-defined]
        return call

    return deco


class LRU:
    """A least-recently-used mapping with a byte budget, registered under
    ``name`` (posenc's caches are named; an unnamed one is a test's own).

    ``get`` and ``put`` take a lock; values are computed outside it (two
    threads asking for the same missing key may both compute it, and the
    second ``put`` wins: harmless for pure functions).
    """

    def __init__(self, max_bytes: int, *, max_entry_fraction: float = 0.25, name: str | None = None) -> None:
        self.name = name
        self._data: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._bytes = 0
        self.max_bytes = int(max_bytes)
        self.max_entry_fraction = float(max_entry_fraction)
        self.hits = 0
        self.misses = 0
        if name is not None:
            _register(name, self)

    def __repr__(self) -> str:
        return f"LRU({self.name!r}, {len(self)} entries, {self._bytes}/{self.max_bytes} bytes)"

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
        """Store ``value`` (``nbytes``, plus what its key holds: frequencies as
        bytes); False (and nothing stored) when it is too large."""
        nbytes = int(nbytes) + sizeof(key)
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

    def _reset(self) -> None:
        """A new lock and no entries (a forked child: the parent's lock may be held)."""
        self._lock = threading.Lock()
        self._data = OrderedDict()
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
HOST = LRU(128 * 2**20, max_entry_fraction=1.0, name="host")
#: finished tables of integer positions, on their namespace and device
TABLES = LRU(256 * 2**20, name="tables")


def clear() -> None:
    """Empty every cache of posenc (:data:`CACHES`)."""
    for cache in list(CACHES.values()):
        cache.clear()


#: whether this process is a forked child (set after the fork): posenc's
#: torch CPU kernels then keep out of torch's OpenMP pool, which a child
#: cannot enter once its parent has used it (it hangs there)
FORKED = False


def _after_fork_in_child() -> None:
    """A forked child starts with new locks and empty caches.

    A lock another thread of the parent held at the fork stays held forever
    in the child (which has only the forking thread); cached tables may live
    on a device the child cannot use (CUDA is not usable after a fork).
    """
    global FORKED
    FORKED = True
    for cache in list(CACHES.values()):
        if isinstance(cache, LRU):
            cache._reset()
        else:
            cache.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def set_max_bytes(max_bytes: int) -> None:
    """Byte budget of the finished-table cache (0 disables it)."""
    TABLES.set_max_bytes(max_bytes)


def limits(tables: int | None = None, host: int | None = None) -> dict[str, int]:
    """Set the byte budgets given (validated by the caller) and return the
    budgets in effect, ``{"tables": ..., "host": ...}``."""
    if tables is not None:
        TABLES.set_max_bytes(tables)
    if host is not None:
        HOST.set_max_bytes(host)
    return {"tables": TABLES.max_bytes, "host": HOST.max_bytes}


def nbytes_of(a: Any, xp: Any) -> int:
    """Bytes of a real floating array of any namespace."""
    size = 1
    for d in a.shape:
        size *= int(d)
    return size * (int(xp.finfo(a.dtype).bits) // 8)


def device_key(ctx: Any) -> str:
    """A hashable name for the device a table of ``ctx`` lands on.

    ``ctx.device is None`` means the namespace's current default device,
    which can change (``torch.set_default_device``, ``jax.default_device``),
    so it is read from a zero-size array of that namespace.
    """
    dev = ctx.device
    if dev is None:
        dev = ctx.xp.empty((0,), dtype=ctx.work).device
    return f"{type(dev).__module__}.{type(dev).__name__}:{dev!r}"


class Share(enum.Enum):
    """How a cached table is handed out (:func:`share`), so that callers
    cannot change it.  :func:`posenc._kernels.handout` picks the mode of a
    backend."""

    #: a NumPy table: a fresh read-only copy.  A view of the cached table
    #: would not do: ``torch.from_numpy``, ``torch.as_tensor``, DLPack and
    #: ``register_buffer`` + ``load_state_dict`` write through read-only
    #: NumPy memory, and ``setflags(write=True)`` succeeds on a base that
    #: owns its memory.  The copy costs a ``memcpy`` of the table (measured
    #: by ``python -m benchmarks --only cache``)
    COPY_READONLY = "read-only copy"
    #: immutable arrays (JAX): the array itself
    SAME = "same"
    #: tensors (they cannot be made read-only, and ``load_state_dict`` copies
    #: into registered buffers in place): a copy-on-write clone that shares
    #: the cached memory until the first write to it (an in-place op,
    #: ``.numpy()``, ``data_ptr()``), which copies; a plain clone where the
    #: storage cannot be shared (not allocated by the tensor library)
    COW = "copy-on-write"
    #: anything else: ``asarray(copy=True)`` in the array's namespace
    COPY = "copy"


def share(value: Any, mode: Share, xp: Any) -> Any:
    """What a cached table is handed out as (see :class:`Share`)."""
    if mode is Share.COPY_READONLY:
        out = np.array(value, copy=True)
        out.setflags(write=False)
        return out
    if mode is Share.SAME:
        return value
    if mode is Share.COW:
        try:
            return value._lazy_clone()
        except (AttributeError, RuntimeError):  # an older torch; storage that cannot be shared
            return value.clone()
    return xp.asarray(value, copy=True)


def readonly(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Mark NumPy arrays read-only (host constants and cached tables); returns them."""
    for a in arrays:
        a.setflags(write=False)
    return arrays
