"""Kernels of tables of ranges of positions (:func:`posenc._tables.range_table`
and :func:`posenc._angles.sincos_range`): the rows written into one
preallocated output in cache-sized steps (NumPy, torch CPU tensors through
their memory, each chunk of a Dask table), by several threads for large
tables, and the lazy Dask tables chunked along the rows; rows of a range
table gathered for arrays of positions.

Chosen by :func:`posenc._kernels.range_table`, :func:`~posenc._kernels.lazy`,
:func:`~posenc._kernels.range_sincos` and :func:`~posenc._kernels.gather`;
tested equal to the portable path in ``tests/posenc/test_kernels.py``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from posenc import _cache
from posenc._compat import Array, numpy_dtype

__all__ = [
    "dask_by_rows",
    "dask_rows",
    "fill_parallel",
    "in_threads",
    "fill_rows",
    "fill_rows_complex",
    "fits_complex_rows",
    "complex_factors",
    "is_consecutive_torch",
    "numpy_fill_table",
    "numpy_sincos",
    "numpy_table",
    "take_pair_numpy",
    "take_pair_torch",
    "take_rows_numpy",
    "take_rows_torch",
    "torch_cpu_table",
    "torch_range_sincos",
    "numpy_range_sincos",
    "dask_range_sincos",
]


# --------------------------------------------------------------------------
# tables of ranges (posenc._tables.range_table, posenc._angles.sincos_range)
# --------------------------------------------------------------------------
# ``T[q*block + r] = U[q] * X[r] + V[q] * Y[r]`` (see the comment above
# posenc._tables.range_table) written row by row into one preallocated
# output, in cache-sized steps: the portable path's products and sum, bit for
# bit.  Used for NumPy, for torch CPU tensors through their NumPy view and
# for each chunk of a Dask table.

#: bytes of one step of the row loop: the output rows of a step and their
#: temporary (twice this) stay in a core's L2 cache (measured on a 1 MiB L2:
#: 256 KiB steps beat 16, 64 and 512 KiB ones)
FAST_STEP_BYTES = 256 * 2**10


def fill_rows(out: np.ndarray, lo: int, block: int, u: np.ndarray, v: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    """NumPy fast path: write rows ``lo .. lo+len(out)-1`` of ``U*X + V*Y`` into ``out``.

    ``out`` is a (rows, 2m) view (rows may be strided, columns contiguous).
    Steps of about :data:`FAST_STEP_BYTES` so that each step's output rows and
    its temporary are still in cache when they are added; whole blocks
    ``q`` are done as one broadcast (k, block, 2m) step when they fit.
    """
    rows, width = out.shape
    per = max(1, FAST_STEP_BYTES // (width * out.itemsize))
    tmp = np.empty((min(per, rows), width), dtype=out.dtype)
    i, g = 0, lo
    while i < rows:
        q, r = divmod(g, block)
        if r == 0 and block <= per and rows - i >= block:
            k = min(per // block, (rows - i) // block)
            step = k * block
            o = out[i : i + step].reshape(k, block, width)
            t = tmp[:step].reshape(k, block, width)
            np.multiply(u[q : q + k, None, :], x, out=o)
            np.multiply(v[q : q + k, None, :], y, out=t)
        else:
            step = min(block - r, rows - i, per)
            o = out[i : i + step]
            t = tmp[:step]
            np.multiply(u[q], x[r : r + step], out=o)
            np.multiply(v[q], y[r : r + step], out=t)
        np.add(o, t, out=o)
        i += step
        g += step


#: elements of one torch operation of :func:`fill_rows_complex` where it
#: stays in the calling thread: below torch's grain size
#: (``at::internal::GRAIN_SIZE``), where an operation is never split over
#: torch's threads.  A forked child that enters torch's OpenMP pool after its
#: parent used it hangs there; and with products over whole tables split
#: anywhere, one run of the threads test (tests/hardening/test_concurrency.py)
#: saw other bits than one thread's, which products that are never split
#: cannot give.
TORCH_INLINE = 30000
#: torch's grain size: an operation of at least ``threads * TORCH_GRAIN``
#: elements is split over all of torch's intra-op threads, in equal runs
TORCH_GRAIN = 32768
#: :func:`fill_rows_complex` takes rows of a multiple of this many columns:
#: whole SIMD vectors of complex numbers (AVX2 and AVX-512, float32 and
#: float64).  The scalar loop of a row's remainder may fuse a multiply-add,
#: which changes bits (measured: rows of 20 and 130 columns).
COMPLEX_COLUMNS = 32


def fill_rows_complex(out: np.ndarray, lo: int, block: int, e: Array, f: Array) -> None:
    """torch CPU fast path of an ``"interleaved"`` sinusoidal table: rows
    ``lo .. lo+len(out)-1`` of ``U*X + V*Y`` as one complex product per row,
    ``E[q] * F[r]`` (:func:`complex_factors`).

    In that layout ``U`` holds the pairs ``(sin_q, cos_q)``, ``V`` the pairs
    ``(cos_q, sin_q)``, ``X`` the pairs ``(cos_r, cos_r)`` and ``Y`` the pairs
    ``(sin_r, -sin_r)``, so a row is ``E[q] * F[r]`` with ``E = sin_q + i
    cos_q`` and ``F = cos_r - i sin_r``: the real part ``sin_q cos_r + cos_q
    sin_r``, the imaginary part ``cos_q cos_r - sin_q sin_r``, the portable
    path's two products and one sum, bit for bit (torch's vectorized complex
    product on the CPU forms ``ac - bd`` and ``ad + bc`` without a fused
    multiply-add: tested; rows of a multiple of :data:`COMPLEX_COLUMNS`
    columns only, :func:`fits_complex_rows`).  One pass over the output where
    :func:`fill_rows` makes three.  ``out`` is a C-contiguous (rows, 2m)
    view.
    """
    import torch

    rows, width = out.shape
    if rows == 0:
        return
    m = width // 2
    o = torch.view_as_complex(torch.from_numpy(out).view(rows, m, 2))
    # rows of one product: at one intra-op thread torch never splits an
    # operation nor enters its pool, so whole blocks go in as few products as
    # their shapes allow (the calls cost more than the products: 0.8 ms of a
    # cold 4096x512 table's 2.4 ms in 64 products); at more, products stay
    # below the grain size, except those that _pooled_blocks lets torch split
    threads = torch.get_num_threads()
    pool = _may_pool(threads)
    per = rows if threads == 1 else max(1, TORCH_INLINE // m)
    i, g = 0, lo
    while i < rows:
        q, r = divmod(g, block)
        k = _pooled_blocks((rows - i) // block, block, m, threads) if pool and r == 0 else 0
        if k:  # whole blocks in one product that torch splits over its threads at whole vectors
            step = k * block
            torch.mul(e[q : q + k].view(k, 1, m), f, out=o[i : i + step].view(k, block, m))
        elif r == 0 and block <= per and rows - i >= block:
            # whole blocks, k per product: the views of all of them in two
            # calls (unbind) rather than three tensor indexings per product
            k = min(per // block, (rows - i) // block)
            groups = (rows - i) // (k * block)
            step = groups * k * block
            es = e[q : q + groups * k].view(groups, k, 1, m).unbind(0)
            os = o[i : i + step].view(groups, k, block, m).unbind(0)
            for a, b in zip(es, os):
                torch.mul(a, f, out=b)
        else:
            step = min(block - r, rows - i, per)
            torch.mul(e[q], f[r : r + step], out=o[i : i + step])
        i += step
        g += step


def fits_complex_rows(out: np.ndarray, dim: int) -> bool:
    """Whether :func:`fill_rows_complex` writes the rows ``out`` of a table of
    ``dim`` columns: whole SIMD vectors of complex numbers per row, float32
    or float64, C-contiguous."""
    return dim % COMPLEX_COLUMNS == 0 and out.flags.c_contiguous and out.dtype in (np.float32, np.float64)


def complex_factors(
    sq: np.ndarray, cq: np.ndarray, sr: np.ndarray, cr: np.ndarray, factor: float, dtype: np.dtype
) -> tuple[Array, Array]:
    """The factors of :func:`fill_rows_complex` from the host float64 tables
    of the coarse and fine angles: ``E = factor (sin_q + i cos_q)`` and ``F =
    cos_r - i sin_r``, each part rounded once to ``dtype`` (the values of
    the pair tables ``U``, ``X`` and ``Y`` in ``dtype``), as torch CPU
    tensors (kept in the host cache; only the kernel reads them)."""
    import torch

    cdt = np.complex64 if dtype == np.float32 else np.complex128
    e = np.empty(sq.shape, dtype=cdt)
    e.real, e.imag = (sq, cq) if factor == 1.0 else (sq * factor, cq * factor)
    f = np.empty(sr.shape, dtype=cdt)
    f.real, f.imag = cr, -sr
    return torch.from_numpy(e), torch.from_numpy(f)


def _may_pool(threads: int) -> bool:
    """Whether :func:`fill_rows_complex` may hand torch products it splits
    over its intra-op threads: more than one, in the main thread (whose
    operations get the whole pool: another Python thread's may get a
    smaller team, split elsewhere), never in a forked child
    (:data:`posenc._cache.FORKED`: it hangs in a pool its parent used)."""
    main = threading.current_thread() is threading.main_thread()
    return threads > 1 and main and not _cache.FORKED and not _SPLIT


def _pooled_blocks(blocks: int, block: int, m: int, threads: int) -> int:
    """How many of ``blocks`` whole blocks (``block`` rows of ``m`` complex
    numbers) one product may take so that torch splits it over all of its
    ``threads`` threads (at least ``threads * TORCH_GRAIN`` numbers) in runs
    of a multiple of :data:`COMPLEX_COLUMNS` numbers: whole SIMD vectors,
    every number computed as a product of one thread computes it (the same
    bits).  0 where no such product fits."""
    k = blocks
    while k > 0 and (k * block * m) % (COMPLEX_COLUMNS * threads):
        k -= 1
    return k if k * block * m >= threads * TORCH_GRAIN else 0


def numpy_table(
    block: int,
    tables: tuple[np.ndarray, ...],
    n: int,
    dim: int,
    dtype: Any,
    *,
    lo: int = 0,
    rows: int | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Rows ``lo .. lo+rows-1`` of the ``(n, dim)`` table of the host tables
    ``U, V, X, Y`` (``tables``, width ``2m``; a zero last column for odd
    ``dim``), into ``out`` or a fresh array."""
    rows = n - lo if rows is None else rows
    u, v, x, y = tables
    width = int(u.shape[1])
    if out is None:
        out = np.empty((rows, dim), dtype=dtype)
    if width == 0:  # dim == 1: the zero column only
        out[...] = 0
        return out
    fill_rows(out[:, :width] if width != dim else out, lo, block, u, v, x, y)
    if width != dim:
        out[:, width:] = 0
    return out


def numpy_sincos(
    block: int, tables: tuple[np.ndarray, ...], lo: int, rows: int, dtype: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``lo .. lo+rows-1`` of ``(sin, cos)`` of a range from its coarse
    and fine host tables ``(sin_q, cos_q, sin_r, cos_r)``: the operations of
    the portable :func:`posenc._angles.sincos_range`, bit for bit."""
    sq, cq, sr, cr = (a.astype(dtype) for a in tables)
    qa, qb = lo // block, (lo + rows - 1) // block + 1
    sq, cq = sq[qa:qb, None, :], cq[qa:qb, None, :]
    s = (sq * cr[None] + cq * sr[None]).reshape(-1, sr.shape[1])
    c = (cq * cr[None] - sq * sr[None]).reshape(-1, sr.shape[1])
    a = lo - qa * block
    if a == 0 and rows == s.shape[0]:
        return s, c
    return s[a : a + rows], c[a : a + rows]


def take_rows_numpy(table: np.ndarray, p: np.ndarray, lo: int) -> np.ndarray:
    """``table[p - lo]``: rows of a range table for integer positions ``p``
    (any shape), shape ``p.shape + (dim,)``; one ``take``.  The indices are
    formed in ``intp``: in the positions' own dtype they wrap (int8 ``127 -
    (-1)`` is -128, which NumPy takes from the end of the table)."""
    idx = np.subtract(p, lo, dtype=np.intp).reshape(-1)
    rows: np.ndarray = np.take(table, idx, axis=0)
    return rows.reshape(tuple(p.shape) + (table.shape[1],))


def _wide(p: Array) -> Array:
    """Integer positions as int64 (int64 and int32 as they are): torch
    indexes with these two only, has no arithmetic in uint16, uint32 and
    uint64, and differences of 8- and 16-bit integers wrap (in uint8, 0 - 255
    is 1).  Positions here lie within a range table's span (below 2**53)."""
    import torch

    return p if p.dtype in (torch.int64, torch.int32) else p.to(torch.int64)


def take_rows_torch(table: Array, p: Array, lo: int) -> Array:
    """:func:`take_rows_numpy` in torch (one ``index_select``)."""
    idx = (_wide(p) - lo).reshape(-1)
    return table.index_select(0, idx).reshape(tuple(p.shape) + (table.shape[1],))


def take_pair_numpy(s: np.ndarray, c: np.ndarray, p: np.ndarray, lo: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`take_rows_numpy` of two tables (sin and cos), the indices made once."""
    idx = np.subtract(p, lo, dtype=np.intp).reshape(-1)
    shape = tuple(p.shape) + (s.shape[1],)
    return np.take(s, idx, axis=0).reshape(shape), np.take(c, idx, axis=0).reshape(shape)


def take_pair_torch(s: Array, c: Array, p: Array, lo: int) -> tuple[Array, Array]:
    """:func:`take_pair_numpy` in torch."""
    idx = (_wide(p) - lo).reshape(-1)
    shape = tuple(p.shape) + (s.shape[1],)
    return s.index_select(0, idx).reshape(shape), c.index_select(0, idx).reshape(shape)


def is_consecutive_torch(p: Array) -> bool:
    """Whether the integer tensor ``p``, read in memory order, counts up by
    one (an ``arange`` of any shape); one pass over ``p``."""
    import torch

    flat = _wide(p).reshape(-1)
    return flat.numel() < 2 or bool(torch.all(flat[1:] - flat[:-1] == 1))


def torch_cpu_table(fill: Callable[..., None], shape: tuple[int, int], ctx: Any) -> Array | None:
    """A torch CPU table written by the NumPy kernel: ``fill(dtype, out, lo)``
    writes rows ``lo .. lo + len(out) - 1`` into ``out``; None off the CPU.

    The table is allocated by torch, like the formulas it replaces: only
    torch-allocated storage can be handed out as copy-on-write clones
    (:data:`posenc._cache.Share.COW`), and torch does not ask the kernel for
    huge pages.  NumPy does (``madvise``) on large buffers, which makes
    first-touching a 256 MiB table about 4x cheaper when huge pages are free
    and up to 10x dearer when the kernel must first compact memory to find
    them (measured, 1048576x64 float32 at one thread: 86 to 1150 ms in
    NumPy's memory against a steady 150 ms in torch's).  The rows are written
    by as many threads as torch's intra-op setting (:func:`fill_parallel`).
    """
    import torch

    dtype = numpy_dtype(ctx.dtype)
    t = torch.empty(shape, dtype=ctx.dtype, device=ctx.device)
    if t.device.type != "cpu":
        return None
    fill_parallel(functools.partial(fill, torch_memory=True), t.numpy(), dtype, torch.get_num_threads())
    return t


#: elements of a table from which its rows are written by several threads.
#: Measured at two threads (2 shared cores): 64 MiB of float32, 0.65x one
#: thread's time; 32 MiB, 0.94x; 8 MiB, 1.18x (first-touch page faults of
#: the two threads contend)
PARALLEL_MIN = 1 << 24


def in_threads(fn: Any, calls: list[tuple[Any, ...]]) -> None:
    """``fn(*args)`` for each ``args`` of ``calls``, the first in the calling
    thread and the others in threads started and joined here (NumPy releases
    the GIL inside its loops).  No thread outlives the call, so a process that
    forks afterwards (a DataLoader worker) inherits none; an exception of any
    call is raised here."""
    if len(calls) <= 1:
        for args in calls:
            fn(*args)
        return
    import threading

    errors: list[BaseException] = []

    def run(args: tuple[Any, ...]) -> None:
        try:
            fn(*args)
        except BaseException as exc:  # re-raised in the calling thread
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(args,), name="posenc-worker", daemon=True) for args in calls[1:]]
    for w in workers:
        w.start()
    try:
        fn(*calls[0])
    finally:
        for w in workers:
            w.join()
    if errors:
        raise errors[0]


def fill_parallel(fill: Any, out: np.ndarray, dtype: Any, threads: int) -> None:
    """``fill(dtype, out[a:b], a)`` over ``threads`` row ranges at once
    (NumPy releases the GIL inside its loops; every row is computed as when
    written alone, so the table is the same bit for bit); one call for
    tables below :data:`PARALLEL_MIN` elements or one thread.

    The helper threads are started and joined by this call: posenc keeps no
    thread (or pool) between calls, so a process that forks afterwards (a
    DataLoader worker, multiprocessing's fork start method) inherits none.
    Starting two threads costs about 0.1 ms, against tens of milliseconds
    for a table of this size.
    """
    n = out.shape[0]
    threads = max(1, min(threads, n))
    if threads == 1 or out.size < PARALLEL_MIN:
        fill(dtype, out, 0)
        return
    fill(dtype, out[:0], 0)  # the host tables, once, before the threads read them
    bounds = [n * i // threads for i in range(threads + 1)]
    _SPLIT.append(threads)  # (the rows' threads are the parallelism: no torch pool under them)
    try:
        in_threads(lambda a, b: fill(dtype, out[a:b], a), list(zip(bounds, bounds[1:])))
    finally:
        _SPLIT.pop()


#: the tables :func:`fill_parallel` is writing in several threads (no
#: product of :func:`fill_rows_complex` enters torch's pool meanwhile)
_SPLIT: list[int] = []


def dask_rows(n: int, row_bytes: int, block: int) -> tuple[int, ...]:
    """Row chunks for Dask: Dask's ``array.chunk-size`` per chunk, whole blocks
    of the coarse/fine split where a block fits."""
    import dask
    from dask.utils import parse_bytes

    limit = parse_bytes(dask.config.get("array.chunk-size", "128MiB"))
    rows = max(1, limit // max(row_bytes, 1))
    if rows >= block:
        rows -= rows % block
    rows = min(rows, n)
    sizes = [rows] * (n // rows)
    if n % rows:
        sizes.append(n % rows)
    return tuple(sizes)


def dask_by_rows(
    rows_of: Any,
    n: int,
    tail: tuple[int, ...],
    block: int,
    row_bytes: int,
    dtype: np.dtype,
    prefix: str,
    token: tuple[Any, ...],
) -> Array:
    """A lazy Dask array of shape ``(n,) + tail``, chunked along the rows
    (:func:`dask_rows`); chunk ``i`` is ``rows_of(lo, rows)``, computed when
    the graph is.  Its name is ``prefix`` and a token of ``token`` and the
    chunks: equal arguments give equal graphs."""
    import dask.array as da
    from dask.base import tokenize

    sizes = dask_rows(n, row_bytes, block)
    offsets = np.cumsum((0,) + sizes).tolist()

    def chunk(block_id: tuple[int, ...] = (0,) * (1 + len(tail))) -> np.ndarray:
        i = block_id[0]
        got: np.ndarray = rows_of(offsets[i], sizes[i])
        return got

    meta = np.empty((0,) * (1 + len(tail)), dtype=dtype)
    chunks = (sizes,) + tuple((t,) for t in tail)
    return da.map_blocks(chunk, chunks=chunks, dtype=dtype, meta=meta, name=prefix + tokenize(*token, sizes))


def numpy_fill_table(fill: Callable[..., None], shape: tuple[int, int], ctx: Any) -> np.ndarray:
    """A NumPy table written by the NumPy kernel: ``fill(dtype, out, lo)``
    writes rows ``lo .. lo + len(out) - 1`` into ``out`` (one thread:
    NumPy's tables are cached below a quarter of the budget, where a second
    thread does not pay)."""
    dtype = np.dtype(ctx.dtype)
    out = np.empty(shape, dtype=dtype)
    fill(dtype, out, 0)
    return out


def numpy_range_sincos(
    tables: tuple[np.ndarray, ...], block: int, n: int, token: tuple[Any, ...], ctx: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``(sin, cos)`` of a range of ``n`` positions from its coarse and fine
    host tables (:func:`numpy_sincos`, the portable path's operations)."""
    return numpy_sincos(block, tables, 0, n, np.dtype(ctx.work))


def torch_range_sincos(
    tables: tuple[np.ndarray, ...], block: int, n: int, token: tuple[Any, ...], ctx: Any
) -> tuple[Array, Array]:
    """:func:`numpy_range_sincos` on torch CPU, wrapped without a copy
    (single-threaded: torch's intra-op threads cost more than they save on
    tables this small)."""
    import torch

    s, c = numpy_sincos(block, tables, 0, n, numpy_dtype(ctx.work))
    return torch.from_numpy(s), torch.from_numpy(c)


def dask_range_sincos(
    tables: tuple[np.ndarray, ...], block: int, n: int, token: tuple[Any, ...], ctx: Any
) -> tuple[Array, Array]:
    """:func:`numpy_range_sincos` as a lazy Dask array chunked along the
    rows (:func:`dask_by_rows`, named after ``token`` and the dtype); each
    chunk is computed when the graph is."""
    work = np.dtype(ctx.work)
    m = int(tables[0].shape[1])

    def chunk(lo: int, k: int) -> np.ndarray:
        return np.stack(numpy_sincos(block, tables, lo, k, work), axis=-1)

    sc = dask_by_rows(chunk, n, (m, 2), block, 2 * m * work.itemsize, work, "posenc-sincos-", (*token, work.str))
    return sc[..., 0], sc[..., 1]
