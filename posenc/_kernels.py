"""Backend-specific kernels: the NumPy and torch CPU fast paths.

Everything else in posenc is written once against the Array API.  The
functions here compute *the same floating-point operations in the same
order* as a portable path named in their docstring, with the backend's own
functions: no array-api-compat wrappers, ``out=`` arguments and in-place
updates instead of temporaries, cache-sized blocks.  The portable code
chooses them through the classifier of backends in :mod:`posenc._compat`
(:func:`~posenc._compat.eager_kind` for arrays,
:func:`~posenc._compat.namespace_kind` for namespaces), never while torch's
compiler traces, and every kernel is tested equal to its portable path in
``tests/posenc/test_kernels.py`` (bit for bit unless its docstring says
otherwise).  Kernels of torch CPU tensors may run NumPy's functions on the
tensors' memory (``Tensor.numpy()`` views, ``torch.from_numpy`` results):
elementwise arithmetic is then bit for bit torch's; float32 ``sin`` / ``cos``
are NumPy's, within an ulp of torch's.

Family modules and :mod:`posenc._angles` call the kernels by name; they
contain no backend checks of their own.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from . import _compat
from ._compat import Array

_TWO_PI = 2.0 * math.pi


# --------------------------------------------------------------------------
# torch CPU tensors through their NumPy views
# --------------------------------------------------------------------------
def forward_ad_active() -> bool:
    """Whether torch's forward-mode AD (``torch.autograd.forward_ad.dual_level``)
    is on: its dual tensors look like plain ones to every other check.  A
    torch without the level counter reads as on (torch's own operations)."""
    import torch

    return getattr(torch.autograd.forward_ad, "_current_level", 0) >= 0


def torch_numpy_views(*arrays: Array) -> tuple[np.ndarray, ...] | None:
    """NumPy views of torch CPU tensors whose result needs no autograd, or
    None: a tensor that requires grad, one of functorch's transforms
    (``vmap``, ``grad``: NumPy cannot view them), a negative or conjugate
    view, a dtype NumPy does not have (bfloat16), or forward-mode AD (its
    dual tensors have NumPy views but their tangents would be lost)."""
    if forward_ad_active():
        return None
    try:
        return tuple(a.numpy() for a in arrays)
    except (RuntimeError, TypeError):  # TypeError: dtypes NumPy lacks (bfloat16)
        return None


# --------------------------------------------------------------------------
# angles in turns (posenc._angles._sincos_turns)
# --------------------------------------------------------------------------
# Float positions: ``f = p*v1 - round(p*v1)``, ``f += p*v2``, ``f -= round(f)``,
# ``a = 2 pi f`` in float64 -- the portable path's operations in its order,
# bit for bit (float positions clipped to |p| <= 2**64 first, as it does).
#
# Integer positions (NumPy and torch CPU memory only): the turns ``frac(p *
# v)`` as 64-bit fixed point, ``p * V`` with ``V = round(v * 2**64)`` in
# int64 arithmetic, which wraps modulo 2**64 in NumPy: the product is the
# fractional part of ``p * v`` exactly, up to ``V``'s rounding (``|p| *
# 2**-65`` turns, 3.7e-10 rad at |p| = 2**31), then ``a = float64(p * V) * 2
# pi / 2**64``.  Two operations instead of seven, no rounding that grows with
# the position below 2**62; not the portable path's bits (its float64
# reduction, right to 1e-13 rad): the two agree within an ulp of the float32
# result, both within posenc's bound (tested).
#
# Then float32 ``(sin, cos)`` of ``a`` without rounding the angle: float64 sin
# and cos cast once for tables of at most SMALL_F64 elements (a decode step:
# the fewest operations), else ``ah = float32(a)``, ``al = float32(a - ah)``,
# ``sin a = sin ah + cos ah * al``, ``cos a = cos ah - sin ah * al``
# (posenc._angles.finish_f32), with ``out=`` buffers over blocks of rows that
# stay in cache.

#: elements (rows x frequencies) of one block of the NumPy turns kernel: its
#: float64 and float32 temporaries (about 40 bytes per element) stay in L2
TURNS_BLOCK = 1 << 13
#: tables up to this many elements take float64 sin and cos (exact to half a
#: float32 ulp; each costs about as much as the two float32 passes it saves)
SMALL_F64 = 256
_MAX_POSITION = 2.0**64
#: 2 pi / 2**64: fixed-point turns to radians
_FIXED_TO_RAD = _TWO_PI / 2.0**64


def _reduce_rows(p: np.ndarray, turns: tuple[np.ndarray, ...], f: np.ndarray, t: np.ndarray) -> None:
    """The reduced angle ``a`` of positions ``p`` (k, 1) into ``f`` (k, m) float64."""
    if p.dtype.kind in "iu":
        np.multiply(p, turns[2], out=t.view(np.int64))  # wraps modulo 2**64: the fractional turns
        np.multiply(t.view(np.int64), _FIXED_TO_RAD, out=f)
        return
    v1, v2 = turns[0], turns[1]
    np.multiply(p, v1, out=f)
    np.rint(f, out=t)  # np.round with no decimals, without its Python wrapper
    np.subtract(f, t, out=f)
    np.multiply(p, v2, out=t)
    np.add(f, t, out=f)
    np.rint(f, out=t)
    np.subtract(f, t, out=f)
    np.multiply(f, _TWO_PI, out=f)


def _finish_rows(
    f: np.ndarray, s: np.ndarray, c: np.ndarray, ah: np.ndarray, al: np.ndarray, t: np.ndarray
) -> None:
    """float32 ``(sin, cos)`` of float64 angles ``f`` into ``s``, ``c``
    (``f`` and the float64 buffer ``t`` are overwritten):
    posenc._angles.finish_f32, bit for bit."""
    np.copyto(ah, f, casting="same_kind")
    np.copyto(t, ah)  # float64(ah): exact; a separate pass beats a mixed-type subtract
    np.subtract(f, t, out=f)
    np.copyto(al, f, casting="same_kind")
    np.sin(ah, out=s)
    np.cos(ah, out=c)
    np.multiply(c, al, out=ah)  # ah is free again: cos(ah) * al
    np.multiply(s, al, out=al)  # sin(ah) * al
    np.add(s, ah, out=s)
    np.subtract(c, al, out=c)


def _lay_out(out: np.ndarray, x: np.ndarray, layout: str | None) -> None:
    """Write compact rows ``x`` (k, m) into ``out`` (k, m) or, laid out as a
    RoPE table, (k, 2m): ``[x, x]`` (``"half"``) or each column twice
    (``"interleaved"``); casts to ``out``'s dtype."""
    if layout is None:
        np.copyto(out, x, casting="same_kind")
    elif layout == "half":
        m = x.shape[-1]
        np.copyto(out[:, :m], x, casting="same_kind")
        np.copyto(out[:, m:], x, casting="same_kind")
    else:
        np.copyto(out[:, 0::2], x, casting="same_kind")
        np.copyto(out[:, 1::2], x, casting="same_kind")


def _laid_out(x: np.ndarray, layout: str) -> np.ndarray:
    """One compact row laid out as a RoPE table's row."""
    return np.concatenate([x, x]) if layout == "half" else np.repeat(x, 2)


def _turns_rows_range(
    pf: np.ndarray,
    turns: tuple[np.ndarray, ...],
    s: np.ndarray,
    c: np.ndarray,
    layout: str | None,
    rows: int,
    lo: int,
    hi: int,
) -> None:
    """Rows ``lo .. hi-1`` of :func:`turns_numpy`'s blocked path, ``rows`` at a time."""
    m = turns[0].shape[-1]
    f, t = np.empty((rows, m)), np.empty((rows, m))
    ah, al = np.empty((rows, m), dtype=np.float32), np.empty((rows, m), dtype=np.float32)
    sb, cb = (s, c) if layout is None else (np.empty((rows, m), np.float32), np.empty((rows, m), np.float32))
    for a in range(lo, hi, rows):
        b = min(hi, a + rows)
        k = b - a
        _reduce_rows(pf[a:b], turns, f[:k], t[:k])
        if layout is None:
            _finish_rows(f[:k], s[a:b], c[a:b], ah[:k], al[:k], t[:k])
        else:
            _finish_rows(f[:k], sb[:k], cb[:k], ah[:k], al[:k], t[:k])
            _lay_out(s[a:b], sb[:k], layout)
            _lay_out(c[a:b], cb[:k], layout)


def turns_numpy(
    p: np.ndarray,
    turns: tuple[np.ndarray, ...],
    scale: float = 1.0,
    clip: bool = False,
    layout: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """float32 ``(sin, cos)`` of ``p[..., None] * v`` in NumPy, times
    ``scale`` (RoPE's attention factor) when it is not 1, laid out as a RoPE
    table when ``layout`` is given (``(..., 2m)``).  ``turns`` is ``(v1, v2,
    V)`` (:func:`posenc._angles.kernel_turns`), optionally with ``V`` laid out
    in the table's columns as a fourth entry (decode steps).  One thread: the
    blocks are a few microseconds each, and two Python threads stepping
    through them contend for the GIL more than they gain (measured: 2.6x
    slower at two threads)."""
    m = turns[0].shape[-1]
    width = m if layout is None else 2 * m
    shape = p.shape + (width,)
    if p.size == 1 and p.dtype.kind in "iu" and width <= SMALL_F64:
        # one integer position (a decode step): float64 sin and cos of the angles, laid
        # out already (``turns[3]``: ``V`` in the table's columns, when given)
        q = int(p.reshape(()))
        if -(2**62) < q < 2**62:
            a = ((turns[3] if len(turns) > 3 and layout is not None else turns[2]) * q) * _FIXED_TO_RAD
            s, c = np.sin(a).astype(np.float32), np.cos(a).astype(np.float32)
            if layout is not None and len(turns) <= 3:
                s, c = _laid_out(s, layout), _laid_out(c, layout)
            if scale != 1.0:
                s *= scale
                c *= scale
            return s.reshape(shape), c.reshape(shape)
    if p.dtype.kind in "iu":
        pf = p.reshape(-1, 1).astype(np.int64, copy=False)
    else:
        pf = p.reshape(-1, 1).astype(np.float64)
        if clip:
            np.clip(pf, -_MAX_POSITION, _MAX_POSITION, out=pf)
    n = pf.shape[0]
    s = np.empty((n, width), dtype=np.float32)
    c = np.empty((n, width), dtype=np.float32)
    if n * m <= SMALL_F64:
        f = np.empty((n, m))
        _reduce_rows(pf, turns, f, np.empty((n, m)))
        _lay_out(s, np.sin(f), layout)
        _lay_out(c, np.cos(f), layout)
    else:
        _turns_rows_range(pf, turns, s, c, layout, max(1, min(n, TURNS_BLOCK // max(m, 1))), 0, n)
    if scale != 1.0:
        s *= scale
        c *= scale
    return s.reshape(shape), c.reshape(shape)


def turns_torch(
    p: Array, turns: tuple[Array, ...], scale: float = 1.0, clip: bool = False, layout: str | None = None
) -> tuple[Array, Array]:
    """float32 ``(sin, cos)`` of ``p[..., None] * v``: ``_sincos_turns`` in
    torch (any device, autograd; ``turns`` starts with ``(v1, v2)`` on the
    positions' device), the portable path's operations, times ``scale`` when
    it is not 1."""
    import torch

    v1, v2 = turns[0], turns[1]
    p64 = p.to(torch.float64)
    if clip:
        p64 = p64.clamp(-_MAX_POSITION, _MAX_POSITION)
    p64 = p64[..., None]
    f = p64 * v1
    f = (f - torch.round(f)) + p64 * v2
    f = (f - torch.round(f)) * _TWO_PI
    ah = f.to(torch.float32)
    al = (f - ah.to(torch.float64)).to(torch.float32)
    sn, cs = torch.sin(ah), torch.cos(ah)
    s, c = sn + cs * al, cs - sn * al
    if scale != 1.0:
        s = s * scale
        c = c * scale
    if layout == "half":
        return torch.cat([s, s], dim=-1), torch.cat([c, c], dim=-1)
    if layout == "interleaved":
        return s.repeat_interleave(2, dim=-1), c.repeat_interleave(2, dim=-1)
    return s, c


def turns_torch_cpu(
    p: Array, turns: tuple[np.ndarray, ...], scale: float = 1.0, clip: bool = False, layout: str | None = None
) -> tuple[Array, Array]:
    """:func:`turns_numpy` on a torch CPU tensor's memory (``turns`` on the
    host): blocks of NumPy operations cost a fraction of torch's passes over
    whole tensors.  Tensors NumPy cannot view (functorch's transforms,
    forward-mode AD) take :func:`turns_torch`."""
    import torch

    views = torch_numpy_views(p)
    if views is None:
        # copies: the host arrays are read-only
        return turns_torch(p, tuple(torch.tensor(v) for v in turns[:2]), scale, clip, layout)
    s, c = turns_numpy(views[0], turns, scale, clip, layout)
    return torch.from_numpy(s), torch.from_numpy(c)


#: the kernels of ``_sincos_turns`` by kernel kind (``"torch-cpu"``: torch CPU
#: tensors, see :func:`small_kind`); ``turns`` are the host arrays ``(v1, v2,
#: V)`` for ``"numpy"`` and ``"torch-cpu"``, ``(v1, v2)`` as float64 tensors on
#: the positions' device for ``"torch"``
TURNS = {"numpy": turns_numpy, "torch": turns_torch, "torch-cpu": turns_torch_cpu}


def small_kind(kind: str | None, x: Any) -> str | None:
    """The kernel kind of the turns and small-rotation kernels: ``"torch-cpu"``
    for torch CPU tensors (computed through their NumPy views), else ``kind``."""
    if kind == "torch" and x.device.type == "cpu":
        return "torch-cpu"
    return kind


# --------------------------------------------------------------------------
# small rotations (posenc.rotary._rotate_portable, full tables, all features)
# --------------------------------------------------------------------------
# Below posenc.rotary._FAST_MIN elements (a decode step) per-operation
# overhead is the cost.  ``x * c + rotate(x) * s`` as ``x * c + swap(x) *
# signed(s)``: ``swap`` exchanges the two features of each pair (a view of x
# with a reversed axis), ``signed`` negates the sine of the first one (a
# product of the small table with +-1).  ``(-x2) * s1`` and ``x2 * (-s1)`` are
# the same float, so this is the portable formula bit for bit, in three
# operations on arrays of x's size instead of five and no concatenation.
# x, cos and sin share one floating dtype.
_SIGNS: dict[tuple[str, int], np.ndarray] = {}


def _signs(layout: str, d: int) -> np.ndarray:
    """float32 ``[-1 .. -1, 1 .. 1]`` (half) or ``[-1, 1, -1, 1 ..]``
    (interleaved) of length ``d`` (cached; products with them are exact in
    every float dtype)."""
    sign = _SIGNS.get((layout, d))
    if sign is None:
        h = d // 2
        sign = np.repeat(np.float32([-1.0, 1.0]), h) if layout == "half" else np.tile(np.float32([-1.0, 1.0]), h)
        sign.flags.writeable = False
        _compat.remember(_SIGNS, (layout, d), sign, 64)
    return sign


def rotate_small_numpy(x: np.ndarray, c: np.ndarray, s: np.ndarray, layout: str) -> np.ndarray:
    """``x * c + rotate(x) * s`` in NumPy (half: ``[-x2, x1]``; interleaved:
    pairs ``(-x_odd, x_even)``), as ``x * c + swap(x) * signed(s)``."""
    d = x.shape[-1]
    pair = (2, d // 2) if layout == "half" else (d // 2, 2)
    xs = x.reshape(x.shape[:-1] + pair)
    xs = xs[..., ::-1, :] if layout == "half" else xs[..., ::-1]
    # one row of tables (a decode step): a contiguous product
    ss = (s.reshape(d) if s.size == d else s) * _signs(layout, d)
    r = xs * ss.reshape(ss.shape[:-1] + pair)
    out = x * c
    out += r.reshape(r.shape[:-2] + (d,))
    return out


def rotate_small_torch(x: Array, c: Array, s: Array, layout: str) -> Array:
    """``x * c + rotate(x) * s`` with torch's own operations (any device,
    autograd): the portable formula."""
    import torch

    if layout == "half":
        h = x.shape[-1] // 2
        rot = torch.cat((-x[..., h:], x[..., :h]), dim=-1)
    else:
        rot = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).reshape(x.shape)
    return x * c + rot * s


def rotate_small_torch_cpu(x: Array, c: Array, s: Array, layout: str) -> Array:
    """:func:`rotate_small_numpy` on torch CPU tensors' memory, else
    :func:`rotate_small_torch` (autograd, functorch's transforms)."""
    import torch

    views = torch_numpy_views(x, c, s)
    if views is None:
        return rotate_small_torch(x, c, s, layout)
    return torch.from_numpy(rotate_small_numpy(*views, layout))


ROTATE_SMALL = {"numpy": rotate_small_numpy, "torch": rotate_small_torch, "torch-cpu": rotate_small_torch_cpu}


# --------------------------------------------------------------------------
# rope of a decode step (posenc.rotary.rope: rope_cos_sin, then apply_rope)
# --------------------------------------------------------------------------
def rope_small_numpy(
    x: np.ndarray, p: np.ndarray, v: tuple[np.ndarray, np.ndarray], scale: float, shape: tuple[int, ...] | None,
    layout: str,
) -> np.ndarray:
    """The tables of integer positions ``p`` (:func:`turns_numpy`, reshaped to
    ``shape`` when given), then :func:`rotate_small_numpy`."""
    s, c = turns_numpy(p, v, scale, False, layout)
    if shape is not None:
        s, c = s.reshape(shape), c.reshape(shape)
    return rotate_small_numpy(x, c, s, layout)


def rope_small_torch(
    x: Array, p: Array, v: tuple[Array, Array], scale: float, shape: tuple[int, ...] | None, layout: str
) -> Array:
    """:func:`rope_small_numpy` with torch's own operations (``v`` on the
    device)."""
    s, c = turns_torch(p, v, scale, False, layout)
    if shape is not None:
        s, c = s.reshape(shape), c.reshape(shape)
    return rotate_small_torch(x, c, s, layout)


def rope_small_torch_cpu(
    x: Array, p: Array, v: tuple[np.ndarray, np.ndarray], scale: float, shape: tuple[int, ...] | None, layout: str
) -> Array:
    """:func:`rope_small_numpy` on torch CPU tensors' memory (``v`` on the
    host), else :func:`rope_small_torch`."""
    import torch

    views = torch_numpy_views(x, p)
    if views is None:
        return rope_small_torch(x, p, tuple(torch.tensor(t) for t in v[:2]), scale, shape, layout)
    return torch.from_numpy(rope_small_numpy(views[0], views[1], v, scale, shape, layout))


ROPE_SMALL = {"numpy": rope_small_numpy, "torch": rope_small_torch, "torch-cpu": rope_small_torch_cpu}


# --------------------------------------------------------------------------
# large rotations (posenc.rotary._rotate_portable, from rotary._FAST_MIN)
# --------------------------------------------------------------------------
# The same products as the portable path without its temporaries the size of
# x: NumPy arrays and torch CPU tensors of float32 / float64 that need no
# autograd.  NumPy's are bit-identical; torch's addcmul_ may fuse a multiply
# and an add (within 4 ulp of the portable path, tested).

#: elements per block of the NumPy fast path (256 KiB of float32: L2-resident)
NP_BLOCK = 1 << 16
#: elements per block of the torch fast path (4 MiB of float32: x's and the
#: output's block stay in the last-level cache across the three passes;
#: few enough blocks that per-call overhead and thread hand-offs stay small)
TORCH_BLOCK = 1 << 20


def blocks(shape: tuple[int, ...], target: int, keep: int = 1):
    """Index tuples that cut an array of ``shape`` (its last ``keep`` axes
    kept whole) into slabs of about ``target`` elements, in memory order."""
    nd = len(shape)
    if nd <= keep:
        yield ()
        return
    # suffix[j] = elements in one index of axis j-1 (axes j .. end)
    suffix = [1] * (nd + 1)
    for j in range(nd - 1, -1, -1):
        suffix[j] = suffix[j + 1] * shape[j]
    k = 0
    while k < nd - keep - 1 and suffix[k + 1] > target:
        k += 1
    step = max(1, target // max(suffix[k + 1], 1))
    for idx in np.ndindex(*shape[:k]):
        for a in range(0, shape[k], step):
            yield idx + (slice(a, min(a + step, shape[k])),)


def rotate_numpy(
    x: np.ndarray, c: np.ndarray, s: np.ndarray, layout: str, rotary_dim: int, lead: tuple[int, ...]
) -> np.ndarray:
    """NumPy fast path: ``out=`` ufuncs over cache-sized blocks (half layout)
    or one complex multiply (interleaved layout)."""
    dt = x.dtype
    head_dim = x.shape[-1]
    half = rotary_dim // 2
    out = np.empty(lead + (head_dim,), dtype=dt)
    if layout == "interleaved":
        cis = np.empty(c.shape, dtype=np.complex64 if dt == np.float32 else np.complex128)
        cis.real = c
        cis.imag = s
        xb = np.broadcast_to(x, lead + (head_dim,)) if x.shape[:-1] != lead else x
        xc = xb[..., :rotary_dim].view(cis.dtype)
        np.multiply(xc, cis, out=out[..., :rotary_dim].view(cis.dtype))
    else:
        # out = x * [c, c] + swap_halves(x) * [-s, s], on views of shape (..., 2, half)
        shape2 = lead + (2, half)
        cc = np.broadcast_to(np.stack([c, c], axis=-2), shape2)
        ss = np.broadcast_to(np.stack([-s, s], axis=-2), shape2)
        xr = np.broadcast_to(x[..., :rotary_dim].reshape(tuple(x.shape[:-1]) + (2, half)), shape2)
        orr = out[..., :rotary_dim].reshape(shape2)  # splitting the last axis: a view
        xs = xr[..., ::-1, :]
        tmp = np.empty(0, dtype=dt)
        for idx in blocks(shape2, NP_BLOCK, keep=2):
            ob = orr[idx]
            if tmp.size < ob.size:  # the first block is the largest
                tmp = np.empty(ob.size, dtype=dt)
            t = tmp[: ob.size].reshape(ob.shape)
            np.multiply(xr[idx], cc[idx], out=ob)
            np.multiply(xs[idx], ss[idx], out=t)
            np.add(ob, t, out=ob)
    if rotary_dim < head_dim:
        np.copyto(out[..., rotary_dim:], x[..., rotary_dim:])
    return out


def rotate_torch(x: Array, c: Array, s: Array, layout: str, rotary_dim: int, lead: tuple[int, ...]) -> Array:
    """torch CPU fast path: ``torch.mul(..., out=)`` and ``addcmul_`` into one
    preallocated output, in blocks of about ``TORCH_BLOCK`` elements (half
    layout), or one complex multiply (interleaved).

    The output's memory is NumPy's (``torch.from_numpy``): NumPy asks the
    kernel for huge pages on large buffers, where torch's allocator maps
    4 KiB pages unless ``THP_MEM_ALLOC_ENABLE=1`` is set, and first-touching
    a fresh output page by page costs more than the rotation itself (about
    twice as fast at one thread; see :func:`torch_cpu_table`)."""
    import torch

    head_dim = int(x.shape[-1])
    half = rotary_dim // 2
    out = torch.from_numpy(np.empty(lead + (head_dim,), dtype=_compat.numpy_dtype(x.dtype)))
    xb = x.expand(lead + (head_dim,)) if tuple(x.shape[:-1]) != lead else x
    if layout == "interleaved":
        xc = torch.view_as_complex(xb[..., :rotary_dim].unflatten(-1, (half, 2)))
        oc = torch.view_as_complex(out[..., :rotary_dim].unflatten(-1, (half, 2)))
        torch.mul(xc, torch.complex(c, s), out=oc)
    else:
        # per block: out = x * [c, c] (one contiguous pass), then the cross
        # terms in place while the block's x and out are still in cache
        cc = torch.cat([c, c], dim=-1).expand(lead + (rotary_dim,))
        ss = s.expand(lead + (half,))
        for idx in blocks(lead + (head_dim,), TORCH_BLOCK):
            o, xi, si = out[idx], xb[idx], ss[idx]
            torch.mul(xi[..., :rotary_dim], cc[idx], out=o[..., :rotary_dim])
            o[..., :half].addcmul_(xi[..., half:rotary_dim], si, value=-1.0)
            o[..., half:rotary_dim].addcmul_(xi[..., :half], si)
    if rotary_dim < head_dim:
        out[..., rotary_dim:].copy_(xb[..., rotary_dim:])
    return out


def rotate_candidate(x: Array, c: Array, s: Array) -> str | None:
    """``"numpy"`` or ``"torch"`` where a fast path may apply to arrays like
    these (types, dtypes, device, strides); grad is decided per call."""
    kind = _compat.eager_kind(x, c, s)
    if kind == "numpy":
        return kind if x.dtype in (np.float32, np.float64) and x.strides[-1] == x.itemsize else None
    if kind == "torch":
        import torch

        if x.device.type != "cpu" or x.dtype not in (torch.float32, torch.float64) or x.stride(-1) != 1:
            return None
    return kind


def rotate_ok(kind: str, x: Array, c: Array, s: Array) -> bool:
    """Per call: the torch fast path writes into a fresh tensor with ``out=``
    operations, so it is not for inputs that need autograd (reverse or
    forward mode); NumPy views keep their strides."""
    if kind == "numpy":
        return x.strides[-1] == x.itemsize
    if x.stride(-1) != 1:
        return False
    import torch

    if forward_ad_active():
        return False
    return not (torch.is_grad_enabled() and (x.requires_grad or c.requires_grad or s.requires_grad))


def complex_viewable(x: Array) -> bool:
    """Whether torch can view ``x``'s feature pairs (and those of a fresh
    output of its shape) as complex numbers: even strides and offset."""
    return x.shape[-1] % 2 == 0 and x.storage_offset() % 2 == 0 and all(st % 2 == 0 for st in x.stride()[:-1])


# --------------------------------------------------------------------------
# tables of ranges (posenc._angles.range_table and sincos_range)
# --------------------------------------------------------------------------
# ``T[q*block + r] = U[q] * X[r] + V[q] * Y[r]`` (see the comment above
# posenc._angles.range_table) written row by row into one preallocated
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
    (any shape), shape ``p.shape + (dim,)``; one ``take``."""
    idx = np.subtract(p, lo).reshape(-1)
    return np.take(table, idx, axis=0).reshape(tuple(p.shape) + (table.shape[1],))


def take_rows_torch(table: Array, p: Array, lo: int) -> Array:
    """:func:`take_rows_numpy` in torch (one ``index_select``)."""
    idx = (p - lo).reshape(-1)
    return table.index_select(0, idx).reshape(tuple(p.shape) + (table.shape[1],))


TAKE_ROWS = {"numpy": take_rows_numpy, "torch": take_rows_torch}


def is_consecutive_torch(p: Array) -> bool:
    """Whether the integer tensor ``p``, read in memory order, counts up by
    one (an ``arange`` of any shape); one pass over ``p``."""
    import torch

    flat = p.reshape(-1)
    return flat.numel() < 2 or bool(torch.all(flat[1:] - flat[:-1] == 1))


def torch_on_cpu(ctx: Any) -> bool:
    """Whether a torch context makes its arrays on the CPU."""
    if ctx.device is not None:
        return getattr(ctx.device, "type", None) == "cpu"
    import torch

    return torch.get_default_device().type == "cpu"


def torch_from_numpy(a: np.ndarray) -> Array:
    """A torch CPU tensor sharing ``a``'s memory."""
    import torch

    return torch.from_numpy(a)


def torch_cpu_table(fill: Any, shape: tuple[int, int], ctx: Any, *, cached: bool) -> Array:
    """A torch CPU table written by the NumPy kernel: ``fill(dtype, out, lo)``
    writes rows ``lo .. lo + len(out) - 1`` into ``out``; None off the CPU.

    A table that will not be cached is allocated by NumPy and wrapped with
    ``torch.from_numpy``: NumPy asks the kernel for huge pages on large
    buffers, which makes first-touching a 256 MiB table about 4x cheaper than
    in ``torch.empty``'s memory.  A table that goes to the cache is allocated
    by torch, because only torch-allocated storage can be handed out as
    copy-on-write clones (:func:`torch_share`).  The rows are written by as
    many threads as torch's intra-op setting (:func:`fill_parallel`).
    """
    import torch

    dtype = _compat.numpy_dtype(ctx.dtype)
    if not cached:
        probe = torch.empty((0,), dtype=ctx.dtype, device=ctx.device)
        if probe.device.type != "cpu":
            return None
        out = np.empty(shape, dtype=dtype)
        fill_parallel(fill, out, dtype, torch.get_num_threads())
        return torch.from_numpy(out)
    t = torch.empty(shape, dtype=ctx.dtype, device=ctx.device)
    if t.device.type != "cpu":
        return None
    fill_parallel(fill, t.numpy(), dtype, torch.get_num_threads())
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
    in_threads(lambda a, b: fill(dtype, out[a:b], a), list(zip(bounds, bounds[1:])))


def torch_share(value: Array) -> Array:
    """A copy of a cached torch table that cannot change it: on the CPU
    torch's copy-on-write clone (``torch._lazy_clone``, present since torch
    2.3), which shares the cached memory until the first write to it (an
    in-place op, ``.numpy()``, ``data_ptr()``); a plain ``clone()``
    elsewhere, or where torch cannot share the storage."""
    if value.device.type == "cpu":
        lazy = getattr(sys.modules["torch"], "_lazy_clone", None)
        if lazy is not None:
            try:
                return lazy(value)  # copy-on-write: the first write copies
            except RuntimeError:  # storage torch cannot share (not torch-allocated)
                pass
    return value.clone()


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
        return rows_of(offsets[i], sizes[i])

    meta = np.empty((0,) * (1 + len(tail)), dtype=dtype)
    chunks = (sizes,) + tuple((t,) for t in tail)
    return da.map_blocks(chunk, chunks=chunks, dtype=dtype, meta=meta, name=prefix + tokenize(*token, sizes))
