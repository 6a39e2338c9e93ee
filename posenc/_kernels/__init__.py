"""Every backend-specific fast path of posenc, and the choice of one.

Everything else in posenc is written once against the Array API, and that
portable code is the specification.  The kernels in this package compute
*the same floating-point operations in the same order* as the portable path
their docstring names, with the backend's own functions: no array-api-compat
wrappers, ``out=`` arguments and in-place updates instead of temporaries,
cache-sized blocks.  Kernels of torch CPU tensors may run NumPy's functions
on the tensors' memory (``Tensor.numpy()`` views, ``torch.from_numpy``
results): elementwise arithmetic is then bit for bit torch's; float32
``sin`` / ``cos`` are NumPy's, within an ulp of torch's.

The choice is made here and nowhere else: one chooser per operation returns
a kernel, or None for the portable path.  Family modules and
:mod:`posenc._angles` call the chooser and hold no backend names of their
own.

=======================  ====================  ==========================================
operation                chooser               kernels (module)
=======================  ====================  ==========================================
angles of positions      :func:`turns`         a :class:`Lane`: NumPy, torch CPU through
                                               NumPy views, torch (:mod:`.angles`)
one-pass small tables    :func:`table_turns`   the lane of :func:`turns`, small tables only
``[sin | cos]`` tables   :func:`joined`        torch CPU, written in place (:mod:`.angles`)
rope's decode step       :func:`rope_step`     the lane of the positions and ``x``
rotation                 :func:`rotation`      small: the lane's formula; large: blocked
                                               NumPy / torch CPU (:mod:`.rotations`)
table of a range         :func:`range_table`   NumPy, torch CPU (:mod:`.tables`)
sin/cos of a range       :func:`range_sincos`  NumPy, torch CPU through NumPy; Dask, lazily
lazy tables              :func:`lazy`          Dask, chunked along the rows
rows of a range table    :func:`gather`        NumPy ``take``, torch ``index_select``
table of a range, device :func:`device_table`  Triton, one launch (:mod:`.triton`)
CuPy arrays on a device  :func:`dlpack_route`  the Triton kernels through DLPack
                                               (:mod:`.dlpack`), for each operation above
hand-out of a table      :func:`handout`       the :class:`posenc._cache.Share` mode
=======================  ====================  ==========================================

Device arrays (CUDA tensors; CPU tensors inside :func:`as_device`) take the
fused lane of posenc's Triton kernels (:func:`triton_lane`, :mod:`.triton`)
where Triton is installed: one launch per call at any size, the positions
checked in the kernel; nothing is read back from them (no ``extremes``).
CuPy arrays on a CUDA device take the same kernels through DLPack where
torch with triton is importable (:func:`dlpack_route`: zero-copy torch views
in, the result viewed back as a CuPy array, on the caller's CuPy stream);
else the portable path.

A kernel is never chosen while torch's compiler traces (``Context.traced``),
and small inputs take the cheapest route (the thresholds below).  Every
kernel is tested equal to its portable path in
``tests/posenc/test_kernels.py`` (bit for bit unless its docstring says
otherwise), through one switch: inside :func:`disabled` every chooser answers
None.

Imports: :mod:`posenc._cache`, :mod:`posenc._compat` (and its own modules).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from posenc import _cache, _compat, _trace
from posenc._cache import Share
from posenc._compat import Array, Backend, Context

from .angles import joined_torch_cpu, turns_numpy, turns_torch, turns_torch_cpu
from .rotations import (
    rope_small_numpy,
    rope_small_torch,
    rope_small_torch_cpu,
    rotate_large_numpy,
    rotate_large_torch,
    rotate_small_numpy,
    rotate_small_torch,
    rotate_small_torch_cpu,
)
from .tables import (
    dask_by_rows,
    dask_range_sincos,
    is_consecutive_torch,
    numpy_fill_table,
    numpy_range_sincos,
    take_pair_numpy,
    take_pair_torch,
    take_rows_numpy,
    take_rows_torch,
    torch_cpu_table,
    torch_range_sincos,
)

if TYPE_CHECKING:
    from .dlpack import Route

__all__ = [
    "GATHER_MIN",
    "LANES",
    "ROTATE_MIN",
    "SMALL_TABLE",
    "Gather",
    "Lane",
    "as_device",
    "device_table",
    "disabled",
    "dlpack_route",
    "gather",
    "off_the_host",
    "handout",
    "joined",
    "lazy",
    "range_sincos",
    "range_table",
    "rope_step",
    "rotation",
    "table_turns",
    "triton_hook",
    "triton_lane",
    "turns",
]

#: elements of ``x`` from which apply_rope's blocked NumPy / torch CPU
#: rotations pay off (below, the formula's few small operations are cheaper)
ROTATE_MIN = 1 << 15
#: elements of a table up to which rope_cos_sin computes integer positions'
#: angles in the table's layout directly (one kernel pass over the doubled
#: frequencies, bit-identical) instead of half the table and a concatenation:
#: the tables of a decode step, where per-operation overhead is the cost
SMALL_TABLE = 1 << 14
#: elements of a table from which gathering rows of an exact range table pays
#: off against computing every angle (below: one pass of the array path)
GATHER_MIN = 1 << 16

#: whether the choosers may choose a kernel (:func:`disabled`)
_enabled = True


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Every chooser answers None inside (the portable paths everywhere), to
    compare kernels with the portable code.  posenc's caches are cleared on
    entry and on exit: plans and cached tables keep the kernels they were
    made with.  Dask's lazy tables are no fast path and stay (:func:`lazy`)."""
    global _enabled
    before = _enabled
    _cache.clear()
    _enabled = False
    try:
        yield
    finally:
        _enabled = before
        _cache.clear()


@contextlib.contextmanager
def as_device() -> Iterator[None]:
    """CPU torch tensors take exactly the decisions of CUDA tensors inside:
    the device lanes and kernels (Triton's, where Triton is installed, run
    by its interpreter: :data:`posenc._kernels.triton.cpu_interpreter`), no
    value read back (checks become NaN rows),
    cached tables handed out as copies.  For the tests, the launch counts and
    the device check, which prove the device path on a machine without one
    (:mod:`posenc._kernels.probes`).  posenc's caches are cleared on entry
    and on exit, as in :func:`disabled`."""
    from . import triton as kernels  # (imports no Triton)

    before = _compat.AS_DEVICE, kernels.cpu_interpreter
    _cache.clear()
    _compat.AS_DEVICE = kernels.cpu_interpreter = True
    try:
        yield
    finally:
        _compat.AS_DEVICE, kernels.cpu_interpreter = before
        _cache.clear()


@contextlib.contextmanager
def triton_hook(hook: Callable[[str], None]) -> Iterator[None]:
    """Call ``hook(name)`` at each launch of a Triton kernel inside (for
    :func:`posenc._kernels.probes.count_launches`; the module imports no
    Triton until a kernel runs)."""
    from . import triton as kernels

    before = kernels.on_launch
    kernels.on_launch = hook
    try:
        yield
    finally:
        kernels.on_launch = before


#: the namespaces whose device arrays take posenc's Triton kernels through
#: DLPack (:func:`dlpack_route`; the tests add NumPy, whose host arrays stand
#: in for CuPy's inside :func:`as_device`)
DLPACK = frozenset({Backend.CUPY})
_ROUTES: dict[Any, Route | None] = {}  # the dlpack.Route of each namespace, or None (no torch / triton)


def dlpack_route(ctx: Context, *arrays: Any) -> Route | None:
    """The :class:`~posenc._kernels.dlpack.Route` of ``ctx``'s namespace (the
    Triton kernels through DLPack), or None: a namespace of :data:`DLPACK`,
    kernels enabled, nothing traced, the ``arrays`` (if any) of one type on
    one device, a CUDA device where Triton runs (CuPy), or host memory inside
    :func:`as_device` (Triton's interpreter).  Every chooser asks this first,
    so that such arrays take no host lane (:data:`DLPACK`'s NumPy stand-in of
    the tests included)."""
    if ctx.backend not in DLPACK or not _enabled or ctx.traced:
        return None
    cuda = ctx.backend is Backend.CUPY
    if arrays:
        x = arrays[0]
        try:
            where = x.__dlpack_device__()
            if any(type(a) is not type(x) or a.__dlpack_device__() != where for a in arrays[1:]):
                return None
        except (AttributeError, TypeError, RuntimeError):  # not a DLPack producer
            return None
        cuda = where[0] == 2  # kDLCUDA
    if not cuda and not _compat.AS_DEVICE:
        return None
    if ctx.xp not in _ROUTES:
        from . import dlpack

        try:
            made = dlpack.route(ctx.xp, dlpack.cupy_stream if ctx.backend is Backend.CUPY else None)
        except ImportError:  # no torch (or no from_dlpack in the namespace)
            _ROUTES[ctx.xp] = None
        else:
            lane = Lane("dlpack", False, made.turns, made.rotate, made.rope, fused=True)
            _ROUTES[ctx.xp] = dataclasses.replace(made, lane=lane)
    route = _ROUTES[ctx.xp]
    if route is None or triton_lane("cuda" if cuda else "cpu") is None:
        return None
    return route


def _host(x: Any) -> bool:
    """Whether a torch tensor's memory is host memory as the choosers see it
    (a CPU tensor, outside :func:`as_device`)."""
    return x.device.type == "cpu" and not _compat.AS_DEVICE


# --------------------------------------------------------------------------
# eager arrays
# --------------------------------------------------------------------------
def _eager(x: Any, *more: Any) -> Backend | None:
    """NUMPY for a NumPy array, TORCH for a plain torch tensor (not a
    subclass), else None; with ``more`` arrays, their common kind (None where
    they differ).  The device and autograd are not looked at: each chooser
    says what else it needs; the caller has checked ``Context.traced``."""
    kind = None
    if type(x) is np.ndarray:
        kind = Backend.NUMPY
    else:
        torch = sys.modules.get("torch")
        if torch is not None and type(x) is torch.Tensor:
            kind = Backend.TORCH
    if kind is None or all(type(m) is type(x) for m in more):
        return kind
    return None


@dataclass(frozen=True)
class Lane:
    """The small-array kernels of one kind of eager arrays.

    Attributes
    ----------
    name : str
        ``"numpy"``, ``"torch-cpu"`` (torch CPU tensors, computed through
        their NumPy views) or ``"torch"`` (torch's own operations, any
        device, autograd).
    host : bool
        Whether the kernels take the turns as host NumPy arrays ``(v1, v2,
        V)`` (:func:`posenc._angles.kernel_turns`, optionally with ``V`` laid
        out as a fourth entry) or as float64 arrays ``(v1, v2)`` on the
        positions' device.
    turns : callable
        ``(p, turns, scale, clip, layout) -> (sin, cos)`` in float32 (a
        ``fused`` lane takes ``limit`` and the output ``dtype`` too: see
        :func:`posenc._kernels.triton.turns_triton`).
    rotate : callable
        ``(x, cos, sin, layout) -> rotated x``, full tables.
    rope : callable
        ``(x, p, turns, scale, shape, layout) -> rotated x``: the tables of
        integer positions, then ``rotate`` (rope's decode step).
    """

    name: str
    host: bool
    turns: Callable[..., tuple[Array, Array]]
    rotate: Callable[..., Array]
    rope: Callable[..., Array]
    #: one launch per call at any size (fused device kernels): chosen above
    #: the thresholds of the small-array lanes too
    fused: bool = False


NUMPY = Lane("numpy", True, turns_numpy, rotate_small_numpy, rope_small_numpy)
TORCH_CPU = Lane("torch-cpu", True, turns_torch_cpu, rotate_small_torch_cpu, rope_small_torch_cpu)
TORCH = Lane("torch", False, turns_torch, rotate_small_torch, rope_small_torch)


def _triton_lane() -> Lane:
    from . import triton as tk

    return Lane("triton", False, tk.turns_triton, tk.rotate_small_triton, tk.rope_small_triton, fused=True)


#: the lanes by name (``"triton"``: :func:`triton_lane`, where Triton is installed)
LANES = {lane.name: lane for lane in (NUMPY, TORCH_CPU, TORCH)}
_TRITON: list[Lane | None] = []  # [the Triton lane, or None] once looked for


def triton_lane(device_type: str) -> Lane | None:
    """The lane of posenc's Triton kernels (:mod:`posenc._kernels.triton`)
    for torch tensors on ``device_type``, or None: Triton installed, and a
    CUDA device, or CPU tensors under :func:`as_device` (Triton's
    interpreter)."""
    if not _TRITON:
        try:
            _TRITON.append(_triton_lane())
        except ImportError:  # pragma: no cover - a build without the module
            _TRITON.append(None)
    lane = _TRITON[0]
    if lane is None:
        return None
    from . import triton as tk

    return lane if tk.available(device_type) else None


def _lane(x: Any, *more: Any) -> Lane | None:
    kind = _eager(x, *more)
    if kind is Backend.NUMPY:
        return NUMPY
    if kind is Backend.TORCH:
        if _host(x):
            return TORCH_CPU
        if not _enabled:
            return TORCH
        return triton_lane(x.device.type) or TORCH
    return None


def off_the_host(xp: Any, device: Any) -> bool:
    """Whether arrays made with ``xp=`` and ``device=`` may live on a device
    (a cheap first test, before a context is resolved: CuPy, torch off the
    CPU or under :func:`as_device`); False for host namespaces and a
    torch CPU device."""
    kind = _compat.backend_of(xp)
    if kind in DLPACK:
        return True
    if kind is not Backend.TORCH:
        return False
    try:
        return not _torch_host_device(device)
    except (RuntimeError, TypeError, ValueError):  # (the call says what is wrong)
        return True


def _torch_on_cpu(ctx: Context) -> bool:
    """Whether a torch context makes its arrays on the CPU."""
    return _torch_host_device(ctx.device)


def _torch_host_device(device: Any) -> bool:
    """Whether torch makes arrays on the CPU on ``device`` (None: torch's
    default device; never under :func:`as_device`)."""
    if _compat.AS_DEVICE:
        return False
    import torch

    if device is None:
        device = torch.get_default_device()
    elif not isinstance(device, torch.device):
        device = torch.device(device)
    return bool(device.type == "cpu")


#: the largest ``|offset|`` :func:`shifted_on_device` adds to int64 positions:
#: a sum that leaves int64 wraps to a magnitude of at least ``2**63 -
#: |offset|``, above every table's exact range (2**53), whose rows are NaN
MAX_SHIFT = 2**62


def shifted_on_device(positions: Any, offset: int) -> bool:
    """Whether ``rope_cos_sin`` and ``rope`` take int64 ``positions`` off
    the host with a nonzero int ``offset`` as ``positions + offset`` and
    offset 0 (one launch, then the kept plan of such positions), not through
    :func:`posenc._checks.add_offset`'s masks of the sums that leave int64
    and the plan-less path (9 launches per call against 2 for
    ``rope_cos_sin``): such a sum wraps to a magnitude beyond
    the exact range, whose rows are NaN on a device anyway (no value is read
    there).  Not while torch traces (its graph takes the sum as it is)."""
    torch = sys.modules.get("torch")
    return (
        torch is not None
        and isinstance(positions, torch.Tensor)
        and positions.dtype == torch.int64
        and abs(offset) <= MAX_SHIFT
        and not _trace.compiling()
        and not _compat.in_host_memory(positions)
    )


# --------------------------------------------------------------------------
# the choosers
# --------------------------------------------------------------------------
def turns(p: Array, ctx: Context) -> Lane | None:
    """The lane of the turns kernels for array positions ``p``: eager NumPy
    arrays and torch tensors that need no autograd (torch's own operations
    off the CPU, NumPy's in cache-sized blocks on NumPy and torch CPU
    memory)."""
    if not _enabled or ctx.traced:
        return None
    route = dlpack_route(ctx, p)
    if route is not None:
        fused: Lane | None = route.lane
        return fused
    lane = _lane(p)
    if lane is None or (lane is not NUMPY and p.requires_grad):
        return None
    return lane


def joined(p: Array, ctx: Context) -> Callable[..., Array] | None:
    """The kernel of a ``[sin | cos]`` table of real positions ``p`` in one
    buffer (a timestep embedding): ``kernel(p, w64, flip, pad)`` with the
    host float64 frequencies, float32, or None per call where it does not
    take the positions (:func:`.angles.joined_torch_cpu`); None unless ``p``
    takes the torch CPU lane and the table is float32 (elsewhere the caller
    concatenates the lane's sine and cosine)."""
    if ctx.work != ctx.xp.float32 or _compat.is_integer_dtype(ctx.xp, p.dtype):
        return None
    return joined_torch_cpu if turns(p, ctx) is TORCH_CPU else None


def matrix(ids: Array, freqs: Array, ctx: Context) -> Callable[..., tuple[Array, Array] | None] | None:
    """The fused kernel of a frequency matrix's ``(sin, cos)``
    (:func:`posenc._matrix.matrix_sincos`):
    ``kernel(ids, freqs, turns, work)``, or None per call where it does not
    apply; None unless ``ids`` and ``freqs`` are plain torch tensors off the
    host on the Triton lane, or arrays of a namespace that takes the kernels
    through DLPack (CuPy), eager, on a device with float64 (elsewhere the
    namespace's operations: one launch each)."""
    if not _enabled or ctx.traced or not ctx.float64:
        return None
    route = dlpack_route(ctx, ids, freqs)
    if route is not None:
        return route.matrix
    if _eager(ids, freqs) is not Backend.TORCH or _host(ids):
        return None
    lane = triton_lane(ids.device.type)
    if lane is None:
        return None
    from . import triton as tk

    return tk.matrix_triton


def table_turns(p: Array, ctx: Context, width: int) -> Lane | None:
    """The lane of :func:`turns` for tables computed in their layout in one
    pass: tables of at most :data:`SMALL_TABLE` elements (``width`` per
    position), or any size on a fused lane (one launch)."""
    lane = turns(p, ctx)
    if lane is None or lane.fused:
        return lane
    return None if math.prod(p.shape) * width > SMALL_TABLE else lane


def rope_step(x: Array, p: Array, ctx: Context, *, size: int, width: int) -> Lane | None:
    """The lane of rope's decode step (the one-pass tables of ``p``, then the
    small rotation of ``x``, ``size`` elements in all): ``x`` and the
    positions of one kind and device, below :data:`ROTATE_MIN` (any size on
    a fused lane: tables and rotation in one launch)."""
    route = dlpack_route(ctx, x, p)
    if route is not None:
        return route.lane if table_turns(p, ctx, width) is not None else None
    if _eager(x, p) is None:
        return None
    lane = table_turns(p, ctx, width)
    if lane is None or lane is not _lane(x):
        return None
    return lane if lane.fused or size < ROTATE_MIN else None


def rotation(
    x: Array, c: Array, s: Array, ctx: Context, *, size: int, small: bool
) -> tuple[Callable[..., Array] | None, Callable[..., Array | None] | None]:
    """``(small, large)`` rotations of ``apply_rope`` for arrays like these
    (types, dtypes, device, strides; ``size`` elements of output), at most one
    of them not None.

    * ``small(x, c, s, layout)``: below :data:`ROTATE_MIN` elements, where
      ``small`` says the formula applies as is (full tables of one dtype
      rotating every feature): NumPy arrays and torch tensors;
    * ``large(x, c, s, layout, rotary_dim, lead, compact, wt)``: from
      :data:`ROTATE_MIN`, NumPy arrays and torch CPU tensors of float32 /
      float64 with a contiguous feature axis, and at any size device tensors
      with Triton (one launch); it returns None for a call it does not apply
      to (autograd, a strided view): the portable formula.
    """
    if not _enabled or ctx.traced:
        return None, None
    route = dlpack_route(ctx, x, c, s)
    if route is not None:  # a device array of another namespace: one launch, as a CUDA tensor
        return None, route.rotate_large
    kind = _eager(x, c, s)
    if kind is Backend.TORCH and not _host(x) and triton_lane(x.device.type) is not None:
        # a device: one launch at any size, any dtypes, part of the features
        from .triton import rotate_large_triton

        return None, rotate_large_triton
    if size >= ROTATE_MIN:
        if kind is Backend.NUMPY:
            if x.dtype in (np.float32, np.float64) and x.strides[-1] == x.itemsize:
                return None, rotate_large_numpy
        elif kind is Backend.TORCH:
            import torch

            if _host(x) and x.dtype in (torch.float32, torch.float64) and x.stride(-1) == 1:
                return None, rotate_large_torch
        return None, None
    if small:
        lane = _lane(x, c, s)
        if lane is not None:
            return lane.rotate, None
    return None, None


def range_table(ctx: Context) -> Callable[..., Array | None] | None:
    """The kernel of a finished table of a range in the working dtype:
    ``kernel(fill, shape, ctx)`` allocates the table and has
    ``fill(dtype, out, lo)`` write its rows (NumPy; torch CPU, through the
    tensor's memory and by several threads for large tables, None off the
    CPU)."""
    if not _enabled or ctx.traced or ctx.dtype != ctx.work or ctx.backend in DLPACK:
        return None
    if ctx.backend is Backend.NUMPY:
        return numpy_fill_table
    if ctx.backend is Backend.TORCH and _torch_on_cpu(ctx):
        return torch_cpu_table
    return None


#: the layouts of posenc._tables.range_table that table_triton writes, by its names
_DEVICE_LAYOUTS = {"interleaved": "sin-cos", "concat": "concat", "pair:half": "half", "pair:interleaved": "interleaved"}


def device_table(ctx: Context, layout: str) -> Callable[..., Array] | None:
    """The one-launch kernel of a whole table of a range on a device, or
    None: ``kernel(n, start, turns, dim, factor)`` writes the table of
    positions ``start .. start+n-1`` (``|p| < 2**32``; ``turns`` the float64
    ``(v1, v2)`` on the device) in ``ctx.dtype`` (float32, bfloat16,
    float16), in ``layout``: sinusoidal ``"interleaved"`` / ``"concat"``, or
    ``"pair:half"`` / ``"pair:interleaved"``, RoPE's cos and sin tables
    stacked ``(2, n, 2m)``.  torch tensors off the host with Triton
    (:func:`triton_lane`), and CuPy arrays through DLPack
    (:func:`dlpack_route`)."""
    route = dlpack_route(ctx) if layout in _DEVICE_LAYOUTS else None
    if route is not None:
        if ctx.work != ctx.xp.float32 or ctx.dtype not in (ctx.xp.float32, ctx.xp.float16):
            return None
        name = _DEVICE_LAYOUTS[layout]

        def through(n: int, start: int, turns: tuple[Array, ...], dim: int, factor: float) -> Array:
            return route.table(n, start, turns, name, ctx.dtype, factor, dim)

        return through
    if not _enabled or ctx.traced or ctx.backend is not Backend.TORCH or layout not in _DEVICE_LAYOUTS:
        return None
    import torch

    if ctx.work != torch.float32 or ctx.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return None
    device = torch.device(ctx.device) if ctx.device is not None else torch.get_default_device()
    if _torch_on_cpu(ctx) or triton_lane(device.type) is None:
        return None
    from .triton import table_triton

    name = _DEVICE_LAYOUTS[layout]

    def kernel(n: int, start: int, turns: tuple[Array, ...], dim: int, factor: float) -> Array:
        return table_triton(n, start, turns, name, ctx.dtype, device, scale=factor, dim=dim)

    return kernel


def range_sincos(ctx: Context) -> Callable[..., tuple[Array, Array]] | None:
    """The kernel of ``(sin, cos)`` of a range of ``n`` positions from its
    coarse and fine host tables: ``kernel(tables, block, n, token, ctx)``.
    NumPy and torch CPU (NumPy's operations on the host tables, the portable
    path's, bit for bit); Dask lazily, chunked along the rows and named after
    ``token`` (not a fast path: :func:`disabled` keeps it)."""
    if ctx.traced:
        return None
    if ctx.backend is Backend.DASK:
        return dask_range_sincos
    if not _enabled or ctx.backend in DLPACK:
        return None
    if ctx.backend is Backend.NUMPY:
        return numpy_range_sincos
    if ctx.backend is Backend.TORCH and _torch_on_cpu(ctx):
        return torch_range_sincos
    return None


def lazy(ctx: Context) -> Callable[..., Array] | None:
    """How tables of ranges are built lazily: Dask's chunked along the rows
    (:func:`posenc._kernels.tables.dask_by_rows`), each chunk by the NumPy
    kernel when the graph is computed.  Not a fast path (a Dask table of
    8 GiB is reduced chunk by chunk): :func:`disabled` keeps it."""
    if ctx.backend is Backend.DASK and not ctx.traced:
        return dask_by_rows
    return None


class Gather(NamedTuple):
    """Rows of a range table for integer positions ``p``: ``take(table, p,
    lo)``, ``take_pair(sin, cos, p, lo)`` (two tables, one index), and
    ``consecutive(p)`` (positions that count up by one in memory order, whose
    rows are the range table itself) or None."""

    take: Callable[..., Array]
    take_pair: Callable[..., tuple[Array, Array]]
    consecutive: Callable[[Array], bool] | None


_GATHER_NUMPY = Gather(take_rows_numpy, take_pair_numpy, None)
_GATHER_TORCH = Gather(take_rows_torch, take_pair_torch, is_consecutive_torch)


def _extremes_numpy(p: Any) -> tuple[int, int] | None:
    if p.size == 1:
        v = int(p.item())
        return v, v
    if p.size == 0:
        return 0, 0
    return int(p.min()), int(p.max())


def _extremes_torch(p: Any, real: bool = False) -> tuple[Any, Any] | None:
    """``(min, max)``: ints of integer positions, floats of ``real`` ones."""
    torch = sys.modules["torch"]
    if torch._C._functorch.is_functorch_wrapped_tensor(p):
        return None  # a tensor of torch.func's transforms (vmap): its values are not read
    n = p.numel()
    if n == 1:
        v = float(p.item()) if real else int(p.item())
        return v, v
    if n == 0:
        return 0, 0
    if real:
        lo, hi = torch.aminmax(p.detach())
        return float(lo), float(hi)
    return _compat.int_range(torch, p)  # (torch's uint16, uint32, uint64 included)


def _real_extremes_numpy(p: Any) -> tuple[float, float] | None:
    if p.size == 0:
        return 0.0, 0.0
    # (the ufuncs' reductions called directly: NaN propagates, and compares false with the limit)
    return float(np.minimum.reduce(p, None)), float(np.maximum.reduce(p, None))


_real_extremes_torch = functools.partial(_extremes_torch, real=True)


def extremes(p: Array, ctx: Context) -> Callable[[Any], tuple[Any, Any] | None] | None:
    """How to read ``(min, max)`` of concrete positions in host memory
    (NumPy arrays, torch CPU tensors) without a device round trip: Python
    ints of integer positions, floats of real ones; the reader answers None
    for a tensor it must not read (torch.func), and this chooser None for
    other arrays (traced, lazy, device: the caller masks rows instead).  Not
    a fast path: :func:`disabled` leaves it on."""
    if ctx.traced or ctx.backend in DLPACK:
        return None
    kind = _eager(p)
    integer = _compat.is_integer_dtype(ctx.xp, p.dtype)
    if kind is Backend.NUMPY:
        return _extremes_numpy if integer else _real_extremes_numpy
    if kind is Backend.TORCH and _host(p):
        return _extremes_torch if integer else _real_extremes_torch
    return None


def gather(p: Array, ctx: Context, size: int) -> Gather | None:
    """How to gather the rows of a range table for the positions ``p`` of a
    table of ``size`` elements: eager NumPy and torch (no autograd), from
    :data:`GATHER_MIN` elements."""
    if size < GATHER_MIN:
        return None
    lane = turns(p, ctx)
    if lane is None or lane.name == "dlpack":
        return None
    return _GATHER_NUMPY if lane is NUMPY else _GATHER_TORCH


def handout(ctx: Context) -> Share:
    """How a cached table of ``ctx`` is handed out (:func:`posenc._cache.share`):
    a NumPy table as a read-only copy, a JAX array as itself, a torch CPU
    tensor as a copy-on-write clone, anything else (CuPy) as a copy."""
    if ctx.backend in DLPACK:
        return Share.COPY
    if ctx.backend is Backend.NUMPY:
        return Share.COPY_READONLY
    if ctx.backend is Backend.JAX:
        return Share.SAME
    if ctx.backend is Backend.TORCH and _torch_on_cpu(ctx):
        return Share.COW
    return Share.COPY
