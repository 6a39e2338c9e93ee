"""Kernels of the angles of array positions: ``sin`` and ``cos`` of
``p * v`` turns (:func:`posenc._angles.sincos`, the turns path), in NumPy,
in torch on any device, and on torch CPU tensors through their NumPy views.

Chosen by :func:`posenc._kernels.turns`; tested equal to the portable path in
``tests/posenc/test_kernels.py``.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from posenc import _cache
from posenc._compat import Array

__all__ = [
    "forward_ad_active",
    "joined_torch_cpu",
    "sincos_f64_torch",
    "torch_numpy_views",
    "turns_numpy",
    "turns_torch",
    "turns_torch_cpu",
]

_TWO_PI = 2.0 * math.pi


# --------------------------------------------------------------------------
# torch CPU tensors through their NumPy views
# --------------------------------------------------------------------------
def forward_ad_active() -> bool:
    """Whether torch's forward-mode AD (``torch.autograd.forward_ad.dual_level``)
    is on: its dual tensors look like plain ones to every other check.  A
    torch without the level counter reads as on (torch's own operations)."""
    torch = sys.modules["torch"]  # (its tensors are here: imported)

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
# angles in turns (the turns path of posenc._angles.sincos)
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


#: tables of more elements (positions x frequencies) than this take
#: :func:`sincos_f64_torch` (below, the per-call cost of torch's operations
#: outweighs the passes saved)
F64_MIN = 1 << 12
#: angles ``|p * w|`` up to which torch CPU tables of many positions take
#: :func:`sincos_f64_torch`: its float64 turns ``p * v`` are then right to
#: ``|p w| 2**-52 * 1.5`` rad, within posenc's 1e-9 for the reduction
F64_ANGLE_LIMIT = 2.0**21
#: elements (positions x frequencies) of one step of :func:`sincos_f64_torch`
#: per intra-op thread: its float64 turns (512 KiB a thread) stay in L2
F64_BLOCK = 1 << 16


def sincos_f64_torch(
    p: Array,
    view: np.ndarray,
    v64: np.ndarray,
    scale: float = 1.0,
    layout: str | None = None,
    into: tuple[Array, Array] | None = None,
) -> tuple[Array, Array] | None:
    """float32 ``(sin, cos)`` of ``p[..., None] * 2 pi v`` on torch CPU
    memory through float64 turns, or None where the angles may be large
    (then the turns kernel reduces them exactly); ``view`` is ``p``'s NumPy
    view, ``v64`` the frequencies in turns, ``w / (2 pi)``, within ``2**-52
    |v|`` (a writable host array).

    Per block of rows, in place: ``x = p * v`` in float64 (positions exact
    in float64: integers below ``2**53``, every float32), ``f = frac(x)``
    (exact), ``a = 2 pi f`` in (-2 pi, 2 pi), then
    :func:`posenc._angles.finish_f32`: ``a = ah + al`` with ``ah =
    float32(a)`` and the float32 rest ``al`` (``|al| <= 2**-22``), ``sin a =
    sin ah + cos ah * al`` and ``cos a = cos ah - sin ah * al`` (the next
    terms are below ``al**2 / 2 = 2**-45``), the last two written into the
    table.  The turns ``x`` are right to ``|p v| 1.5 * 2**-52`` (``v64`` and
    the product), ``1.5 |p w| 2**-52`` rad: for ``|p w| <=
    2**21`` (:data:`F64_ANGLE_LIMIT`) below the 1e-9 that posenc's bound
    allows the reduction, and the table's error is that of the float32 sine
    and cosine of ``ah`` (``k`` ulp) plus one rounding, ``(k + 1/2) 2**-24 +
    1e-9`` (docs/theory/precision.rst).  The sine and cosine are NumPy's
    (one thread, its SIMD kernels, documented within 2 ulp; measured within
    7.2e-8 over every float32 in [-2 pi, 2 pi]), the same whatever torch's
    thread count; the six other passes are torch's, on its intra-op
    threads.  One read of ``p``'s range decides (host memory: this kernel
    never sees a device's tensor): NaN, infinite and larger angles take the
    turns kernel, and so does every call of a forked child
    (``posenc._cache.FORKED``: torch's operations enter its OpenMP pool,
    where a child hangs once its parent used it).  ``into``: float32
    ``(sin, cos)`` destinations of shape ``(p.size, width)`` (views into a
    caller's buffer), written and returned when the kernel takes the
    positions.
    """
    torch = sys.modules["torch"]  # (its tensors are here: imported)

    m = v64.shape[-1]
    if view.size == 0 or m == 0 or _cache.FORKED:
        return None
    # (the ufuncs' reductions called directly: NumPy's wrappers cost more than
    # the reductions of a first call's cold caches)
    top = max(-float(np.minimum.reduce(view, None)), float(np.maximum.reduce(view, None)))
    top *= float(np.maximum.reduce(np.absolute(v64))) * _TWO_PI  # NaN compares False
    if not top <= F64_ANGLE_LIMIT:
        return None
    v = torch.from_numpy(v64)
    flat = p.reshape(-1, 1)
    n = flat.shape[0]
    width = m if layout is None else 2 * m
    if into is None:
        s = torch.empty((n, width), dtype=torch.float32)
        c = torch.empty((n, width), dtype=torch.float32)
    else:
        s, c = into
    # rows of one step: F64_BLOCK elements per intra-op thread (the threads
    # split each operation), the rows spread evenly over the steps (no short
    # last step that leaves threads idle)
    steps = -(-n * m // (F64_BLOCK * max(1, torch.get_num_threads())))
    rows = max(1, -(-n // max(1, steps)))
    k0 = min(rows, n)
    x = torch.empty((k0, m), dtype=torch.float64)
    p64 = torch.empty((k0, 1), dtype=torch.float64)
    ah = torch.empty((k0, m), dtype=torch.float32)
    al = torch.empty((k0, m), dtype=torch.float32)
    ah_np = ah.numpy()
    # the sine goes straight into its place in the table (NumPy writes
    # through the table's view), the cosine into ah's buffer
    cols = slice(None) if layout is None else slice(0, m) if layout == "half" else slice(0, None, 2)
    s_np = s.numpy()
    for i in range(0, n, rows):
        j = min(n, i + rows)
        k = j - i
        a = torch.mul(p64[:k].copy_(flat[i:j]), v, out=x[:k]).frac_().mul_(_TWO_PI)
        h = ah[:k].copy_(a)
        lo = al[:k].copy_(a.sub_(h))  # a - float64(h): exact, then rounded once
        np.sin(ah_np[:k], out=s_np[i:j, cols])
        np.cos(ah_np[:k], out=ah_np[:k])  # h is cos(h) from here
        sn, cs = s[i:j, cols], c[i:j, cols]
        torch.addcmul(h, sn, lo, value=-1, out=cs)
        torch.addcmul(sn, h, lo, out=sn)
        for out in (s[i:j], c[i:j]):
            if layout == "half":
                out[:, m:].copy_(out[:, :m])
            elif layout is not None:
                out[:, 1::2].copy_(out[:, 0::2])
            if scale != 1.0:
                out.mul_(scale)
    shape = tuple(p.shape) + (width,)
    return s.reshape(shape), c.reshape(shape)


def joined_torch_cpu(p: Array, v64: np.ndarray, flip: bool, pad: int) -> Array | None:
    """``[sin | cos]`` (``[cos | sin]`` with ``flip``) of real positions ``p``
    (a torch CPU tensor) and ``pad`` zero columns, float32, shape ``p.shape +
    (2m + pad,)``: the timestep embedding's table written in place by
    :func:`sincos_f64_torch` with the frequencies' turns ``v64`` (no
    concatenation: a pass over the output saved), or None where that
    kernel does not take the positions (NaN, infinite or large angles, a
    forked child, a table of at most :data:`F64_MIN` elements) or NumPy
    cannot view them (autograd, functorch's transforms): the caller's path.
    A table it writes proves the positions finite (their range was read)."""
    torch = sys.modules["torch"]  # (its tensors are here: imported)

    views = torch_numpy_views(p)
    m = v64.shape[-1]
    n = p.numel()
    if views is None or n * m <= F64_MIN or _cache.FORKED:
        return None
    table = torch.empty((n, 2 * m + pad), dtype=torch.float32)
    first, second = table[:, :m], table[:, m : 2 * m]
    if sincos_f64_torch(p, views[0], v64, into=(second, first) if flip else (first, second)) is None:
        return None
    if pad:
        table[:, 2 * m :].zero_()
    return table.reshape(tuple(p.shape) + (2 * m + pad,))


def turns_torch_cpu(
    p: Array, turns: tuple[np.ndarray, ...], scale: float = 1.0, clip: bool = False, layout: str | None = None
) -> tuple[Array, Array]:
    """:func:`turns_numpy` on a torch CPU tensor's memory (``turns`` on the
    host): blocks of NumPy operations cost a fraction of torch's passes over
    whole tensors; tables of many positions whose angles are moderate take
    :func:`sincos_f64_torch` instead.  Tensors NumPy cannot view
    (functorch's transforms, forward-mode AD) take :func:`turns_torch`."""
    torch = sys.modules["torch"]  # (its tensors are here: imported)

    views = torch_numpy_views(p)
    if views is None:
        # copies: the host arrays are read-only
        return turns_torch(p, tuple(torch.tensor(v) for v in turns[:2]), scale, clip, layout)
    if p.numel() * turns[0].shape[-1] > F64_MIN:
        got = sincos_f64_torch(p, views[0], turns[0] + turns[1], scale, layout)
        if got is not None:
            return got
    s, c = turns_numpy(views[0], turns, scale, clip, layout)
    return torch.from_numpy(s), torch.from_numpy(c)
