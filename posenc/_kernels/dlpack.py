"""posenc's Triton kernels for the device arrays of other namespaces (CuPy),
through DLPack, where torch with triton is importable.

The route is namespace-generic: each array argument is viewed as a torch
tensor (``torch.from_dlpack``: no copy, the same memory on the same
device), the kernel of :mod:`posenc._kernels.triton` runs on the views, and
its result is viewed back as an array of the caller's namespace
(``xp.from_dlpack``).  The kernels, and so the bits, are those of a CUDA
tensor; nothing is copied (but an array with a negative stride, a
reversed view, which torch cannot view: it is copied first, one launch) and
nothing is read back.  Where a kernel does
not apply it falls back to torch's operations on the views, as it does for
torch tensors, or answers None (the caller's portable path), as it does
for torch tensors.

Streams.  The kernels run on the *caller's* stream: CuPy's current stream
on the arrays' device (:func:`cupy_stream`).  Where that is not torch's
current stream of the device already (CuPy's and torch's defaults are both
the legacy default stream, so by default it is), torch is pointed at it for
the call (``torch.cuda.ExternalStream``, one per stream, kept), so that the
views, the launch and the output's allocation are all ordered on it:

* ``torch.from_dlpack`` hands CuPy's ``__dlpack__`` torch's current stream,
  now the caller's own: CuPy adds no event;
* the output is allocated by torch's caching allocator on that stream, and
  the CuPy array returned holds the torch tensor alive (the DLPack deleter)
  until it dies: its memory is reused only in that stream's order;
* the result is exported with no stream synchronisation (``stream=-1``: the
  kernel ran on the consumer's stream), under the result's device (torch
  refuses to export a tensor of another device than the current one).

Nothing synchronises with the host.  A CuPy stream that is a per-thread
default stream is taken as given (torch's own ``__dlpack__`` refuses to
synchronise with one; no synchronisation is asked for here).

Used by :func:`posenc._kernels.dlpack_route` for CuPy arrays on a CUDA
device; tested with NumPy arrays standing in for CuPy's, inside
:func:`posenc._kernels.as_device` (NumPy exchanges DLPack both ways on the
CPU, and the kernels run in Triton's interpreter) in
``tests/posenc/test_dlpack.py``.

This module imports torch only when a route is made.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from posenc import _cache
from posenc._compat import Array

__all__ = ["VIEWS", "Route", "cupy_stream", "route"]

#: DLPack's device type of CUDA memory (``__dlpack_device__()[0]``)
KDL_CUDA = 2
#: DLPack's device type of host memory
KDL_CPU = 1

_NULL = contextlib.nullcontext()
#: torch views of the turns ``(v1, v2)`` of the plans, by the tuple's id
#: (the tuple is held with them, so that its id stays its own)
VIEWS = _cache.Memo("dlpack.turn_views", 256)
#: torch streams standing for the callers' streams, by (pointer, device index)
_EXTERNAL: dict[tuple[int, int], Any] = {}


def cupy_stream(index: int) -> int:
    """The pointer of CuPy's current stream on device ``index`` (0: the
    legacy default stream)."""
    cupy = sys.modules["cupy"]
    if cupy.cuda.runtime.getDevice() == index:
        return int(cupy.cuda.get_current_stream().ptr)
    with cupy.cuda.Device(index):
        return int(cupy.cuda.get_current_stream().ptr)


class _Export:
    """A torch tensor as a DLPack producer that asks for no stream
    synchronisation (the kernel ran on the consumer's stream), exported
    under its own device."""

    __slots__ = ("t",)

    def __init__(self, t: Any) -> None:
        self.t = t

    def __dlpack_device__(self) -> Any:
        return self.t.__dlpack_device__()

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        t = self.t
        if t.device.type == "cuda":
            import torch

            with torch.cuda.device(t.device):
                return t.__dlpack__(stream=-1, **kwargs)
        return t.__dlpack__(**kwargs)


def _negative(a: Any) -> bool:
    """Whether the array ``a`` has a negative stride (NumPy's and CuPy's
    ``strides``; an array without them has none)."""
    return any(st < 0 for st in getattr(a, "strides", ()))


def _torch_dtype(dtype: Any) -> Any:
    """The torch dtype of a NumPy / CuPy dtype (or a torch dtype)."""
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    return getattr(torch, np.dtype(dtype).name)


@dataclass(frozen=True)
class Route:
    """The kernels of :mod:`posenc._kernels.triton` for the arrays of one
    namespace ``xp``, through DLPack.

    Attributes
    ----------
    turns, rotate, rope : callable
        :func:`~posenc._kernels.triton.turns_triton`,
        :func:`~posenc._kernels.triton.rotate_small_triton` and
        :func:`~posenc._kernels.triton.rope_small_triton` on ``xp`` arrays:
        the fused lane ``"dlpack"`` of the choosers.
    rotate_large : callable
        :func:`~posenc._kernels.triton.rotate_large_triton` on ``xp`` arrays
        (``wt`` an ``xp`` dtype); None where it does not apply.
    table : callable
        ``table(n, lo, turns, layout, dtype, scale, dim)``:
        :func:`~posenc._kernels.triton.table_triton` on the device of the
        ``xp`` arrays ``turns``, ``dtype`` an ``xp`` dtype.
    matrix : callable
        ``matrix(ids, freqs, turns, work)``:
        :func:`~posenc._kernels.triton.matrix_triton` on ``xp`` arrays
        (``work`` an ``xp`` dtype); None where it does not apply.
    lane : posenc._kernels.Lane or None
        The lane of ``turns``, ``rotate`` and ``rope``, set by the chooser.
    """

    xp: Any
    turns: Callable[..., tuple[Array, Array]]
    rotate: Callable[..., Array]
    rope: Callable[..., Array]
    rotate_large: Callable[..., Array | None]
    table: Callable[..., Array]
    matrix: Callable[..., tuple[Array, Array] | None]
    lane: Any = None


def route(xp: Any, stream: Callable[[int], int] | None) -> Route:
    """The :class:`Route` of the namespace ``xp``; ``stream(index)`` the
    pointer of the caller's current stream on CUDA device ``index`` (None:
    torch's current stream is taken).  ImportError without torch, or for a
    namespace without ``from_dlpack``."""
    import torch

    from . import triton as tk

    if not hasattr(xp, "from_dlpack"):
        msg = f"{getattr(xp, '__name__', xp)!s} has no from_dlpack"
        raise ImportError(msg)

    def scope(x: Any) -> Any:
        """The context of a call on ``x``: torch on the caller's stream."""
        if stream is None:
            return _NULL
        kind, index = x.__dlpack_device__()
        if kind != KDL_CUDA:
            return _NULL
        ptr = stream(int(index))
        if torch.cuda.current_stream(int(index)).cuda_stream == ptr:
            return _NULL
        ext = _EXTERNAL.get((ptr, int(index)))
        if ext is None:
            ext = _EXTERNAL[(ptr, int(index))] = torch.cuda.ExternalStream(ptr, device=torch.device("cuda", index))
        return torch.cuda.stream(ext)

    def view(a: Array) -> Any:
        """The torch view of ``a``; of a copy where ``a`` has a negative stride
        (a reversed view: torch has no negative strides, and aborts on one)."""
        if _negative(a):
            a = xp.asarray(a, copy=True)
        return torch.from_dlpack(a)

    def turn_views(turns: tuple[Array, ...]) -> tuple[Any, Any]:
        got = VIEWS.get(id(turns))
        if got is not None and got[0] is turns:
            kept: tuple[Any, Any] = got[1]
            return kept
        made = (view(turns[0]), view(turns[1]))
        VIEWS.put(id(turns), (turns, made))
        return made

    def back(t: Any) -> Array:
        return xp.from_dlpack(_Export(t))

    def turns(
        p: Array,
        turns: tuple[Array, ...],
        scale: float = 1.0,
        clip: bool = False,
        layout: str | None = None,
        limit: float | None = None,
        dtype: Any = None,
    ) -> tuple[Array, Array]:
        half = dtype is not None and str(dtype) in ("bfloat16", "float16")
        with scope(p):
            s, c = tk.turns_triton(view(p), turn_views(turns), scale, clip, layout, limit,
                                   _torch_dtype(dtype) if half else None)
            return back(s), back(c)

    def rotate(x: Array, c: Array, s: Array, layout: str) -> Array:
        with scope(x):
            return back(tk.rotate_small_triton(view(x), view(c), view(s), layout))

    def rope(
        x: Array,
        p: Array,
        turns: tuple[Array, ...],
        scale: float,
        shape: tuple[int, ...] | None,
        layout: str,
        limit: float | None = None,
    ) -> Array:
        with scope(x):
            return back(tk.rope_small_triton(view(x), view(p), turn_views(turns), scale, shape, layout, limit))

    def rotate_large(
        x: Array,
        c: Array,
        s: Array,
        layout: str,
        rotary_dim: int,
        lead: tuple[int, ...],
        compact: bool,
        wt: Any,
        inplace: bool = False,
    ) -> Array | None:
        if inplace and _negative(x):
            return None  # (its view would be a copy)
        with scope(x):
            tx = view(x)
            out = tk.rotate_large_triton(
                tx, view(c), view(s), layout, rotary_dim, lead, compact, _torch_dtype(wt), inplace
            )
            if out is None:
                return None
            return x if out is tx else back(out)

    def table(
        n: int, lo: int, turns: tuple[Array, ...], layout: str, dtype: Any, scale: float, dim: int | None
    ) -> Array:
        with scope(turns[0]):
            v1, v2 = view(turns[0]), view(turns[1])
            out = tk.table_triton(n, lo, (v1, v2), layout, _torch_dtype(dtype), v1.device, scale=scale, dim=dim)
            return back(out)

    def matrix(ids: Array, freqs: Array, turns: bool, work: Any) -> tuple[Array, Array] | None:
        with scope(ids):
            got = tk.matrix_triton(view(ids), view(freqs), turns, _torch_dtype(work))
            return None if got is None else (back(got[0]), back(got[1]))

    return Route(xp, turns, rotate, rope, rotate_large, table, matrix)
