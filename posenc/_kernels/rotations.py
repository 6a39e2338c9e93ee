"""Kernels of rotations: ``apply_rope``'s formula on small arrays (a decode
step) and its blocked fast paths on large ones, and ``rope``'s decode step
(the tables of one position, then the formula), in NumPy, in torch, and on
torch CPU tensors through their NumPy views.

Chosen by :func:`posenc._kernels.rotation` and :func:`posenc._kernels.turns`;
tested equal to the portable formula (:func:`posenc._rope.rotate_portable`)
in ``tests/posenc/test_kernels.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from posenc import _cache
from posenc._compat import Array, numpy_dtype

from .angles import forward_ad_active, torch_numpy_views, turns_numpy, turns_torch

__all__ = [
    "blocks",
    "complex_viewable",
    "rope_small_numpy",
    "rope_small_torch",
    "rope_small_torch_cpu",
    "rotate_large_numpy",
    "rotate_large_torch",
    "rotate_numpy",
    "rotate_ok",
    "rotate_small_numpy",
    "rotate_small_torch",
    "rotate_small_torch_cpu",
    "rotate_torch",
]


# --------------------------------------------------------------------------
# small rotations (posenc._rope.rotate_portable, full tables, all features)
# --------------------------------------------------------------------------
# Below posenc._kernels.ROTATE_MIN elements (a decode step) per-operation
# overhead is the cost.  ``x * c + rotate(x) * s`` as ``x * c + swap(x) *
# signed(s)``: ``swap`` exchanges the two features of each pair (a view of x
# with a reversed axis), ``signed`` negates the sine of the first one (a
# product of the small table with +-1).  ``(-x2) * s1`` and ``x2 * (-s1)`` are
# the same float, so this is the portable formula bit for bit, in three
# operations on arrays of x's size instead of five and no concatenation.
# x, cos and sin share one floating dtype.
_SIGNS = _cache.Memo("kernels.signs", 64)


def _signs(layout: str, d: int) -> np.ndarray:
    """float32 ``[-1 .. -1, 1 .. 1]`` (half) or ``[-1, 1, -1, 1 ..]``
    (interleaved) of length ``d`` (cached; products with them are exact in
    every float dtype)."""
    sign = _SIGNS.get((layout, d))
    if sign is None:
        h = d // 2
        pm = np.array([-1.0, 1.0], dtype=np.float32)
        sign = np.repeat(pm, h) if layout == "half" else np.tile(pm, h)
        sign.flags.writeable = False
        _SIGNS.put((layout, d), sign)
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
    out: np.ndarray = x * c
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
    xv, cv, sv = views
    return torch.from_numpy(rotate_small_numpy(xv, cv, sv, layout))


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


# --------------------------------------------------------------------------
# large rotations (posenc._rope.rotate_portable, from posenc._kernels.ROTATE_MIN)
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


def blocks(shape: tuple[int, ...], target: int, keep: int = 1) -> Iterator[tuple[Any, ...]]:
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
        # out = x * [c1, c2] + swap_halves(x) * [-s1, s2], on views of shape (..., 2, half): the halves of
        # full tables, or a compact table's one value per pair twice
        shape2 = lead + (2, half)
        if c.shape[-1] == rotary_dim:
            cc = np.broadcast_to(c.reshape(c.shape[:-1] + (2, half)), shape2)
            ss = np.broadcast_to(np.stack([-s[..., :half], s[..., half:]], axis=-2), shape2)
        else:
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
    a fresh output page by page costs more than the rotation itself
    (measured, (1, 32, 4096, 128) float32 at one thread: 1.47x a copy of
    ``x`` in NumPy's memory, 1.91x in torch's; a kernel that must compact
    memory for huge pages stalls now and then, about one call in fifteen
    there, where tables of 256 MiB stalled often: see
    :func:`torch_cpu_table`)."""
    import torch

    head_dim = int(x.shape[-1])
    half = rotary_dim // 2
    out = torch.from_numpy(np.empty(lead + (head_dim,), dtype=numpy_dtype(x.dtype)))
    xb = x.expand(lead + (head_dim,)) if tuple(x.shape[:-1]) != lead else x
    if layout == "interleaved":
        xc = torch.view_as_complex(xb[..., :rotary_dim].unflatten(-1, (half, 2)))
        oc = torch.view_as_complex(out[..., :rotary_dim].unflatten(-1, (half, 2)))
        torch.mul(xc, torch.complex(c, s), out=oc)
    else:
        # per block: out = x * [c1, c2] (one contiguous pass), then the cross
        # terms in place while the block's x and out are still in cache (the
        # halves of full tables, or a compact table's one value per pair twice)
        full = c.shape[-1] == rotary_dim
        cc = (c if full else torch.cat([c, c], dim=-1)).expand(lead + (rotary_dim,))
        s1 = (s[..., :half] if full else s).expand(lead + (half,))
        s2 = (s[..., half:] if full else s).expand(lead + (half,))
        for idx in blocks(lead + (head_dim,), TORCH_BLOCK):
            o, xi = out[idx], xb[idx]
            torch.mul(xi[..., :rotary_dim], cc[idx], out=o[..., :rotary_dim])
            o[..., :half].addcmul_(xi[..., half:rotary_dim], s1[idx], value=-1.0)
            o[..., half:rotary_dim].addcmul_(xi[..., :half], s2[idx])
    if rotary_dim < head_dim:
        out[..., rotary_dim:].copy_(xb[..., rotary_dim:])
    return out


def rotate_ok(kind: str, x: Array, c: Array, s: Array) -> bool:
    """Per call: the torch fast path writes into a fresh tensor with ``out=``
    operations, so it is not for inputs that need autograd (reverse or
    forward mode) or that torch.func's transforms wrap; NumPy views keep
    their strides."""
    if kind == "numpy":
        return bool(x.strides[-1] == x.itemsize)
    if x.stride(-1) != 1:
        return False
    import torch

    if forward_ad_active():
        return False
    if any(torch._C._functorch.is_functorch_wrapped_tensor(a) for a in (x, c, s)):
        return False  # torch.func's transforms (vmap, grad, jvp): no batching rule for out= operations
    return not (torch.is_grad_enabled() and (x.requires_grad or c.requires_grad or s.requires_grad))


def complex_viewable(x: Array) -> bool:
    """Whether torch can view ``x``'s feature pairs (and those of a fresh
    output of its shape) as complex numbers: even strides and offset."""
    return x.shape[-1] % 2 == 0 and x.storage_offset() % 2 == 0 and all(st % 2 == 0 for st in x.stride()[:-1])


def _one_per_pair(c: Array, s: Array, layout: str, compact: bool, same_pairs: Any) -> tuple[Array, Array] | None:
    """The tables the fast paths take: half-layout and compact tables as
    they are; of full interleaved tables, every other value, where each pair
    holds one value in both tables, bit for bit (``same_pairs``; as
    :func:`posenc.rope_cos_sin` fills them: one complex number per pair),
    else None.  Full tables whose pairs hold two values (any tables a caller
    makes) are Hugging Face's formula, which a complex product of one value
    per pair would not give (one pass over the tables, a fraction of the
    rotation's)."""
    if compact or layout == "half":
        return c, s
    if not (same_pairs(c) and same_pairs(s)):
        return None
    return c[..., ::2], s[..., ::2]


def _same_pairs_numpy(t: np.ndarray) -> bool:
    """Whether each pair of the last axis of the float32 / float64 ``t`` holds one value, bit for bit."""
    u = t.view(f"i{t.itemsize}")
    return bool(np.array_equal(u[..., 0::2], u[..., 1::2]))


def _same_pairs_torch(t: Array) -> bool:
    """:func:`_same_pairs_numpy` of a torch tensor."""
    import torch

    u = t.view(torch.int32 if t.element_size() == 4 else torch.int64)
    return bool(torch.equal(u[..., 0::2], u[..., 1::2]))


def rotate_large_numpy(
    x: np.ndarray, c: np.ndarray, s: np.ndarray, layout: str, rotary_dim: int, lead: tuple[int, ...],
    compact: bool, wt: Any,
) -> np.ndarray | None:
    """:func:`rotate_numpy` for one call (tables in the working dtype ``wt``),
    or None where it does not apply (a strided feature axis)."""
    if not rotate_ok("numpy", x, c, s):
        return None
    c = c if c.dtype == wt else c.astype(wt)
    s = s if s.dtype == wt else s.astype(wt)
    tables = _one_per_pair(c, s, layout, compact, _same_pairs_numpy)
    if tables is None:
        return None
    return rotate_numpy(x, *tables, layout, rotary_dim, lead)


def rotate_large_torch(
    x: Array, c: Array, s: Array, layout: str, rotary_dim: int, lead: tuple[int, ...], compact: bool, wt: Any
) -> Array | None:
    """:func:`rotate_torch` for one call (tables in the working dtype ``wt``),
    or None where it does not apply (autograd, forward-mode AD, a strided
    feature axis, pairs torch cannot view as complex numbers)."""
    if not rotate_ok("torch", x, c, s) or (layout == "interleaved" and not complex_viewable(x)):
        return None
    c = c if c.dtype == wt else c.to(wt)
    s = s if s.dtype == wt else s.to(wt)
    tables = _one_per_pair(c, s, layout, compact, _same_pairs_torch)
    if tables is None:
        return None
    return rotate_torch(x, *tables, layout, rotary_dim, lead)
