"""The exact angles of frequency matrices: ``sin`` and ``cos`` of ``ids . F^T``
(:func:`matrix_sincos`), exact and differentiable in ``F`` (RoPE-Mixed's
learned frequencies, Mochi, LTX-Video: :func:`posenc.rope_axes_cos_sin` with
``freqs``).

The angle is formed as a double-length sum of exact products (Dekker's
two-product, TwoSum), turned into turns and reduced modulo 1 exactly, then
evaluated by the float32 finish of :mod:`posenc._angles`; every operation is
a plain multiply, add or ``round``, so gradients flow under autograd and
``jax.grad``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _kernels
from ._angles import (
    INV_HI,
    cast,
    finish_f32,
    finish_pair_f32,
    turns_to_angle_f32,
    two_sum,
)
from ._compat import Array, Context, is_integer_dtype
from ._kernels.eft import two_prod

__all__ = ["matrix_sincos"]

_SPLIT64 = 134217729.0  # 2**27 + 1: Veltkamp's splitter of float64
#: 1 / (2 pi) as float32 pairs (the angle in radians to turns without a float64 device)
_INV32_HI = float(np.float32(1.0 / (2.0 * math.pi)))
_INV32_LO = float(np.float32(INV_HI - _INV32_HI))
_SPLIT32 = 4097.0  # 2**12 + 1: Veltkamp's splitter of float32


def _matrix_parts(ids: Array, ctx: Context, dt: Any) -> list[list[Array]]:
    """The positions of every axis as float parts whose sum is exact: one
    part, or for integer ids on a device without float64 two (``p = hi +
    lo``, ``hi`` a multiple of 4096 and ``|lo| < 4096``, both of the sign of
    ``p``), each exact in float32 below 2**36."""
    xp = ctx.xp
    n = int(ids.shape[-1])
    integer = is_integer_dtype(xp, ids.dtype)
    out = []
    for k in range(n):
        p = ids[..., k]
        if dt == xp.float64 or not integer:
            q = cast(p, dt, xp)
            if not integer:  # |p| <= 2**64 (MAX_POSITION, a literal) keeps every product finite
                q = xp.clip(q, min=-1.8446744073709552e19, max=1.8446744073709552e19)
            out.append([q])
        else:
            # truncated toward zero: both parts have the sign of p (no cancelling
            # terms in the derivatives with respect to the frequencies)
            hi = (xp.abs(p) // 4096) * 4096
            hi = xp.where(p < 0, -hi, hi)
            out.append([cast(hi, dt, xp), cast(p - hi, dt, xp)])
    return out


def matrix_sincos(ids: Array, freqs: Array, turns: bool, ctx: Context) -> tuple[Array, Array]:
    r"""``(sin, cos)`` of ``sum_k ids[..., k] * freqs[..., j, k]`` (times 2 pi
    with ``turns``), shape ``freqs.shape[:-2] + ids.shape[:-1] + (m,)``, in
    ``ctx.work``.

    The products are exact (Dekker's two-product) and summed with their
    rounding errors carried (TwoSum); the angle, in that double-length form,
    is turned into turns (a double-length product with :math:`1/2\pi`),
    reduced modulo 1 exactly and evaluated without rounding it to float32
    (as every path of this module): in float64 where the device has
    it (about 1e-16 for angles below :math:`2^{40}`), else in float32 pairs
    (the reduced angle within about 1e-8 for angles below :math:`10^7`).  Every
    operation is a plain multiply, add or ``round``: gradients flow to
    ``freqs`` (and float ``ids``) under autograd and ``jax.grad``.
    """
    kernel = _kernels.matrix(ids, freqs, ctx)
    if kernel is not None:
        got = kernel(ids, freqs, turns, ctx.work)
        if got is not None:
            return got
    xp = ctx.xp
    wide = ctx.float64
    dt = xp.float64 if wide else xp.float32
    # (the constants of the arithmetic are literals: torch's compiler lifts
    # floats read from a module into graph inputs, and array-api-compat's
    # clip cannot take such a bound; a test checks the values)
    splitter = 134217729.0 if wide else 4097.0  # _SPLIT64, _SPLIT32
    fl = tuple(freqs.shape[:-2])
    lead = tuple(ids.shape[:-1])
    m = int(freqs.shape[-2])
    f = cast(freqs, dt, xp)
    s_hi: Any = None
    lo: Any = None
    for k, parts in enumerate(_matrix_parts(ids, ctx, dt)):
        fk = xp.reshape(f[..., k], fl + (1,) * len(lead) + (m,))
        for p in parts:
            pk = xp.reshape(p, (1,) * len(fl) + lead + (1,))
            h, e = two_prod(pk, fk, splitter)
            if s_hi is None:
                s_hi, lo = h, e
            else:
                s_hi, e2 = two_sum(s_hi, h)
                lo = lo + (e2 + e)
    # the angle in turns, reduced modulo 1 exactly, then the sine without
    # rounding the angle (the float32 finish of the other paths)
    if not turns:  # radians to turns: times 1 / (2 pi), as a double-length product
        # (INV_HI, INV_LO) or (_INV32_HI, _INV32_LO)
        inv_hi, inv_lo = (
            (0.15915494309189535, -9.839338337591243e-18) if wide else (0.15915493667125702, 6.4206382432985265e-09)
        )
        h, e = two_prod(s_hi, xp.full((), inv_hi, dtype=dt, device=ctx.device), splitter)
        s_hi, lo = h, e + (s_hi * inv_lo + lo * inv_hi)
    r = s_hi - xp.round(s_hi)  # exact
    if wide:
        f = r + lo
        f = f - xp.round(f)
        a = f * 6.283185307179586  # TWO_PI, a literal (see posenc._angles._TRACED_TWO_PI)
        if ctx.work == xp.float64:
            s, c = xp.sin(a), xp.cos(a)
        else:
            s, c = finish_f32(a, xp)
    else:
        s, c = finish_pair_f32(*turns_to_angle_f32(r, lo, xp), xp)
    return cast(s, ctx.work, xp), cast(c, ctx.work, xp)
