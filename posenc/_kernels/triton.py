"""Fused exact Triton kernels of torch tensors: the angles of positions, the
rotation of ``apply_rope`` (one tensor, or q and k together), rope's decode
step, and whole tables of a range of positions, each in one launch.

Each kernel computes *the same floating-point operations in the same order*
as the portable function it replaces (named in its docstring): the float64
turns reduction of :func:`posenc._angles._sincos_turns` (``f = p*v1 -
round(p*v1)``, ``f += p*v2``, ``f -= round(f)``, ``a = 2 pi f``), its float32
finish (``ah = float32(a)``, ``al = float32(a - ah)``, ``sin a = sin ah +
cos ah * al``, ``cos a = cos ah - sin ah * al``), and the products of
:func:`posenc._rope.rotate_portable`, with no fused multiply-add (every
launch passes ``enable_fp_fusion=False``): elementwise arithmetic is bit for
bit the portable path's.  On CUDA, ``round``, ``sin`` and ``cos`` are
libdevice's ``rint``, ``sinf`` and ``cosf``, without flush-to-zero where
Triton lets it be turned off: the functions torch's own CUDA kernels call
(``tl.sin`` / ``tl.cos`` may lower to approximate instructions).  Under
Triton's interpreter ``round`` is an exact round-half-to-even made of
``floor``, and ``sin`` / ``cos`` are NumPy's (within an ulp of
torch's CPU functions).

Two forms of every kernel are built, lazily, from the same Python source:
compiled (``triton.jit``) for CUDA tensors and interpreted (Triton's
``InterpretedFunction``) for CPU tensors.  ``triton.jit`` reads
``TRITON_INTERPRET`` when it decorates a function; this module decorates
nothing at import and picks the form per launch from the tensors' device,
so the variable need not be set before anything is imported.  (That holds
because the kernels call only Triton's builtins: the functions that
``triton.language`` itself defines with ``triton.jit`` -- ``tl.zeros``,
``tl.sum``, ``tl.cdiv`` ... -- are decorated when triton is imported, and the
interpreter can call them only if the variable was set by then.)  CPU
tensors take these kernels only while the interpreter is on
(:func:`available`): ``TRITON_INTERPRET`` (which interprets CUDA tensors
too, as ``triton.jit`` would) or :data:`cpu_interpreter` (CPU tensors only).

This module is never imported by ``import posenc``, and imports triton only
when a kernel is first built (:func:`available` imports it to answer).
Every launch goes through :func:`_launch`, which calls :data:`on_launch`
with the kernel's name first.

Tested equal to the portable path under the interpreter in
``tests/posenc/test_triton.py``.
"""

from __future__ import annotations

import math
import os
import types
from collections.abc import Callable
from typing import Any, Literal

from posenc import _cache
from posenc._compat import Array
from posenc._kernels.eft import two_prod, two_sum

__all__ = [
    "available",
    "interpreting",
    "cpu_interpreter",
    "on_launch",
    "rope_pair_triton",
    "rope_small_triton",
    "rotate_large_triton",
    "rotate_pair_triton",
    "rotate_small_triton",
    "table_triton",
    "turns_triton",
]

#: called with a kernel's name before each launch (a launch counter), or None
on_launch: Callable[[str], None] | None = None
#: True: CPU tensors take the kernels (interpreted) without ``TRITON_INTERPRET``
#: (``posenc._kernels.as_device()``: CUDA tensors stay compiled meanwhile)
cpu_interpreter: bool = False

_TWO_PI = 2.0 * math.pi
#: float positions are clipped to |p| <= 2**64 (posenc._turns.MAX_POSITION)
_MAX_POSITION = 2.0**64
#: the RoPE layouts: 0 compact (no layout), 1 "half", 2 "interleaved"
_LAYOUTS = {None: 0, "half": 1, "interleaved": 2}
#: leading axes of size > 1 a rotation kernel indexes (more: the portable path)
_MAX_LEAD = 4
#: a rotation's rows ordered with the axes its tables broadcast along (the
#: heads) innermost (:func:`_lead4`)
BROADCAST_INNER = True

# --------------------------------------------------------------------------
# triton, imported lazily
# --------------------------------------------------------------------------
_triton_state: list[Any] = []  # [module or None] once looked for


def _triton() -> Any:
    """The triton module, or None where it cannot be imported."""
    if not _triton_state:
        try:
            import triton
            import triton.language
        except Exception:  # ImportError, or a broken install: no kernels
            triton = None
        _triton_state.append(triton)
    return _triton_state[0]


def interpreting() -> bool:
    """Whether Triton's interpreter is on for every tensor (``TRITON_INTERPRET``
    set to a true value, read now): CUDA tensors are then interpreted too, as
    ``triton.jit`` would have them."""
    v = os.environ.get("TRITON_INTERPRET")
    return v is not None and v.strip().lower() in ("1", "true", "yes", "on")


def available(device_type: str) -> bool:
    """Whether the kernels can run on tensors of ``device_type``: triton
    importable, and a CUDA device for ``"cuda"``, the interpreter on for
    ``"cpu"`` (``TRITON_INTERPRET``, read now, or :data:`cpu_interpreter`);
    False for any other device."""
    if device_type not in ("cuda", "cpu") or _triton() is None:
        return False
    if device_type == "cpu":
        return cpu_interpreter or interpreting()
    if not _cuda_state:
        import torch

        _cuda_state.append(bool(torch.cuda.is_available()))
    return _cuda_state[0]


_cuda_state: list[bool] = []  # [whether torch sees a CUDA device] once asked


# --------------------------------------------------------------------------
# the kernels' source (plain functions: built by _forms)
# --------------------------------------------------------------------------
# Every name used inside these functions is a module global: ``tl``,
# ``libdevice`` and the helpers are bound in the namespace of each form.
# Constants of float64 arithmetic are made with ``tl.full(..., tl.float64)``
# (a Python float operand may be typed float32 by older Triton versions).
tl: Any = None
libdevice: Any = None


def _rint(f, INTERP):
    """``round`` half to even of float64 ``f`` (torch.round)."""
    if INTERP:
        # exact: ``f - floor(f)`` has no rounding error; |f| >= 2**52 is integral
        r = tl.floor(f)
        d = f - r
        h = r * 0.5
        odd = (h - tl.floor(h)) != 0.0
        return tl.where((d > 0.5) | ((d == 0.5) & odd), r + 1.0, r)
    else:
        return libdevice.rint(f)


def _bound(v, INTERP):
    """A loop bound from a runtime scalar ``v``.  Some interpreters (Triton
    3.6) hold scalar arguments as one-element arrays whose ``__index__``
    fails under current NumPy: there the bound is read as a Python int."""
    if INTERP:
        return int(v.handle.data.reshape(-1)[0]) if hasattr(v, "handle") else int(v)
    else:
        return v


def _sin32(a, INTERP):
    if INTERP:
        return tl.sin(a)
    else:
        return libdevice.sin(a)


def _cos32(a, INTERP):
    if INTERP:
        return tl.cos(a)
    else:
        return libdevice.cos(a)


def _cast_out(v, ty, INTERP):
    """``v`` (float32 or float64) in the output dtype ``ty``, rounded to
    nearest even.  The interpreter truncates float32 to bfloat16 (the compiled
    conversion rounds to nearest even): there the rounding is done on the bits."""
    if INTERP:
        if ty == tl.bfloat16:
            v = v.to(tl.float32)
            b = v.to(tl.uint32, bitcast=True)
            r = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
            r = tl.where(v != v, 0x7FC0, r)
            return r.to(tl.uint16).to(tl.bfloat16, bitcast=True)
        else:
            return v.to(ty)
    else:
        return v.to(ty)


def _sincos(p, v1, v2, INTERP):
    """float32 ``(sin, cos)`` of ``p * (v1 + v2)`` turns, float64 ``p``:
    posenc._angles._sincos_turns and finish_f32, in their order."""
    two_pi = tl.full([1], 6.283185307179586, tl.float64)
    f = p * v1
    f = (f - _rint(f, INTERP)) + p * v2
    f = (f - _rint(f, INTERP)) * two_pi
    ah = f.to(tl.float32)
    al = (f - ah.to(tl.float64)).to(tl.float32)
    sn = _sin32(ah, INTERP)
    cs = _cos32(ah, INTERP)
    return sn + cs * al, cs - sn * al


def _turns_kernel(
    p_ptr, ps, v1_ptr, v2_ptr, s_ptr, c_ptr, n, m, scale, lim,
    CLIP: tl.constexpr, LAYOUT: tl.constexpr, INTERP: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_M: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rm = rows < n
    cm = cols < m
    p = tl.load(p_ptr + rows.to(tl.int64) * ps, mask=rm, other=0).to(tl.float64)
    # |p| >= lim (integer positions beyond the exact range; infinite ones): NaN rows
    bad = ((p >= lim) | (p <= -lim))[:, None]
    if CLIP:
        p = tl.where(p > 18446744073709551616.0, 18446744073709551616.0, p)
        p = tl.where(p < -18446744073709551616.0, -18446744073709551616.0, p)
    v1 = tl.load(v1_ptr + cols, mask=cm, other=0.0)
    v2 = tl.load(v2_ptr + cols, mask=cm, other=0.0)
    s, c = _sincos(p[:, None], v1[None, :], v2[None, :], INTERP)
    s = _cast_out(tl.where(bad, float("nan"), s * scale), s_ptr.dtype.element_ty, INTERP)
    c = _cast_out(tl.where(bad, float("nan"), c * scale), c_ptr.dtype.element_ty, INTERP)
    mask = rm[:, None] & cm[None, :]
    r64 = rows.to(tl.int64)[:, None]
    if LAYOUT == 0:
        off = r64 * m + cols[None, :]
        tl.store(s_ptr + off, s, mask=mask)
        tl.store(c_ptr + off, c, mask=mask)
    elif LAYOUT == 1:
        off = r64 * (2 * m) + cols[None, :]
        tl.store(s_ptr + off, s, mask=mask)
        tl.store(c_ptr + off, c, mask=mask)
        tl.store(s_ptr + off + m, s, mask=mask)
        tl.store(c_ptr + off + m, c, mask=mask)
    else:
        off = r64 * (2 * m) + 2 * cols[None, :]
        tl.store(s_ptr + off, s, mask=mask)
        tl.store(c_ptr + off, c, mask=mask)
        tl.store(s_ptr + off + 1, s, mask=mask)
        tl.store(c_ptr + off + 1, c, mask=mask)


def _table_kernel(
    o_ptr, v1_ptr, v2_ptr, n, lo, m, width, plane, scale,
    LAYOUT: tl.constexpr, INTERP: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_M: tl.constexpr,
):
    """LAYOUT 1 / 2: RoPE cos (plane 0) and sin (plane 1) laid out "half" /
    "interleaved"; 3: sinusoidal interleaved pairs (sin, cos); 4: sinusoidal
    [sin | cos].  ``width`` is a row's length."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rm = rows < n
    cm = cols < m
    r64 = rows.to(tl.int64)
    p = (r64 + lo).to(tl.float64)
    v1 = tl.load(v1_ptr + cols, mask=cm, other=0.0)
    v2 = tl.load(v2_ptr + cols, mask=cm, other=0.0)
    s, c = _sincos(p[:, None], v1[None, :], v2[None, :], INTERP)
    s = _cast_out(s * scale, o_ptr.dtype.element_ty, INTERP)
    c = _cast_out(c * scale, o_ptr.dtype.element_ty, INTERP)
    mask = rm[:, None] & cm[None, :]
    base = r64[:, None] * width
    if LAYOUT == 1:
        off = base + cols[None, :]
        tl.store(o_ptr + off, c, mask=mask)
        tl.store(o_ptr + off + m, c, mask=mask)
        tl.store(o_ptr + plane + off, s, mask=mask)
        tl.store(o_ptr + plane + off + m, s, mask=mask)
    elif LAYOUT <= 3:
        # pairs of columns written as one contiguous run of 2 * BLOCK_M
        # (two stores of stride 2 each cost the run's memory traffic twice)
        cols2 = 2 * tl.program_id(1) * BLOCK_M + tl.arange(0, 2 * BLOCK_M)
        mask2 = rm[:, None] & (cols2 < 2 * m)[None, :]
        off2 = base + cols2[None, :]
        if LAYOUT == 2:
            tl.store(o_ptr + off2, tl.reshape(tl.join(c, c), [BLOCK_R, 2 * BLOCK_M]), mask=mask2)
            tl.store(o_ptr + plane + off2, tl.reshape(tl.join(s, s), [BLOCK_R, 2 * BLOCK_M]), mask=mask2)
        else:
            tl.store(o_ptr + off2, tl.reshape(tl.join(s, c), [BLOCK_R, 2 * BLOCK_M]), mask=mask2)
    else:
        off = base + cols[None, :]
        tl.store(o_ptr + off, s, mask=mask)
        tl.store(o_ptr + off + m, c, mask=mask)
    if (width > 2 * m) & (tl.program_id(1) == 0):  # odd sinusoidal dim: the zero last column
        zero = tl.full([BLOCK_R], 0.0, o_ptr.dtype.element_ty)
        tl.store(o_ptr + r64 * width + 2 * m, zero, mask=rm)


def _matrix_term(ids_ptr, io, rm, f_ptr, fo, mask, split, FLOAT_IDS):
    """The exact product of one axis' ids (offsets ``io``) and frequencies
    (offsets ``fo``) as a float64 pair (float ids clipped to ``|p| <=
    2**64`` first, which keeps every product finite; NaN stays NaN);
    ``split`` is Veltkamp's splitter of float64."""
    p = tl.load(ids_ptr + io, mask=rm, other=0).to(tl.float64)
    if FLOAT_IDS:
        p = tl.where(p > 18446744073709551616.0, 18446744073709551616.0, p)
        p = tl.where(p < -18446744073709551616.0, -18446744073709551616.0, p)
    f = tl.load(f_ptr + fo, mask=mask, other=0.0).to(tl.float64)
    return two_prod(p[:, None], f, split)


def _matrix_kernel(
    ids_ptr, is0, is1, f_ptr, fs0, fs1, fs2, s_ptr, c_ptr, n_rows, lead, m,
    NAXES: tl.constexpr, FLOAT_IDS: tl.constexpr, TURNS: tl.constexpr, INTERP: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_M: tl.constexpr,
):
    """``(sin, cos)`` of ``sum_k ids[l, k] * F[h, j, k]`` for the rows ``r =
    h * lead + l`` and the columns ``j``: posenc._matrix.matrix_sincos on a
    device with float64, in its order (exact products summed with their
    errors carried, turns reduced exactly, the float32 finish or the float64
    sine by the output's dtype)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rm = rows < n_rows
    cm = cols < m
    mask = rm[:, None] & cm[None, :]
    r64 = rows.to(tl.int64)
    hh = r64 // lead
    ll = r64 - hh * lead
    fo = hh[:, None] * fs0 + cols.to(tl.int64)[None, :] * fs1
    split = tl.full([1, 1], 134217729.0, tl.float64)  # 2**27 + 1
    s_hi, lo = _matrix_term(ids_ptr, ll * is0, rm, f_ptr, fo, mask, split, FLOAT_IDS)
    for k in tl.static_range(1, NAXES):
        h, e = _matrix_term(ids_ptr, ll * is0 + k * is1, rm, f_ptr, fo + k * fs2, mask, split, FLOAT_IDS)
        s_hi, e2 = two_sum(s_hi, h)
        lo = lo + (e2 + e)
    if not TURNS:  # radians to turns: a double-length product with 1 / (2 pi)
        inv_hi = tl.full([1, 1], 0.15915494309189535, tl.float64)
        inv_lo = tl.full([1, 1], -9.839338337591243e-18, tl.float64)
        h, e = two_prod(s_hi, inv_hi, split)
        lo = e + (s_hi * inv_lo + lo * inv_hi)
        s_hi = h
    r = s_hi - _rint(s_hi, INTERP)
    f = r + lo
    f = f - _rint(f, INTERP)
    a = f * tl.full([1, 1], 6.283185307179586, tl.float64)
    if s_ptr.dtype.element_ty == tl.float64:
        sn = _sin32(a, INTERP)
        cs = _cos32(a, INTERP)
    else:
        ah = a.to(tl.float32)
        al = (a - ah.to(tl.float64)).to(tl.float32)
        sa = _sin32(ah, INTERP)
        ca = _cos32(ah, INTERP)
        sn = sa + ca * al
        cs = ca - sa * al
    off = r64[:, None] * m + cols[None, :]
    tl.store(s_ptr + off, sn, mask=mask)
    tl.store(c_ptr + off, cs, mask=mask)


def _row_offsets(rows, B1, B2, B3, t0, t1, t2, t3):
    """Element offsets of the rows of a 4-axis lead (sizes ``(*, B1, B2,
    B3)``, strides ``t0 .. t3``), int64."""
    r = rows.to(tl.int64)
    i3 = r % B3
    r = r // B3
    i2 = r % B2
    r = r // B2
    i1 = r % B1
    i0 = r // B1
    return i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3


def _rotate_rows(
    rows, n_rows, x_ptr, c_ptr, s_ptr, o_ptr, B1, B2, B3,
    x0, x1, x2, x3, xd, c0, c1, c2, c3, cd, s0, s1, s2, s3, sd, o0, o1, o2, o3, od,
    half, rd, head_dim,
    LAYOUT: tl.constexpr, COMPACT: tl.constexpr, REST: tl.constexpr, F64: tl.constexpr, INTERP: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_REST: tl.constexpr,
):
    """Rotate the pairs of ``rows`` (posenc._rope.rotate_portable): ``o1 =
    x1*c1 - x2*s1`` and ``o2 = x2*c2 + x1*s2`` in the working dtype (``c2``,
    ``s2``: the second feature's entries of full tables, the pair's one value
    of compact ones), then the features from ``rd`` copied (``REST``)."""
    rm = rows < n_rows
    xr = _row_offsets(rows, B1, B2, B3, x0, x1, x2, x3)[:, None]
    cr = _row_offsets(rows, B1, B2, B3, c0, c1, c2, c3)[:, None]
    sr = _row_offsets(rows, B1, B2, B3, s0, s1, s2, s3)[:, None]
    orow = _row_offsets(rows, B1, B2, B3, o0, o1, o2, o3)[:, None]
    for j0 in range(0, _bound(half, INTERP), BLOCK_H):
        k = j0 + tl.arange(0, BLOCK_H)
        mask = rm[:, None] & (k < half)[None, :]
        if LAYOUT == 1:
            j1 = k.to(tl.int64)[None, :]
            j2 = j1 + half
        else:
            j1 = 2 * k.to(tl.int64)[None, :]
            j2 = j1 + 1
        xa = tl.load(x_ptr + xr + j1 * xd, mask=mask, other=0.0)
        xb = tl.load(x_ptr + xr + j2 * xd, mask=mask, other=0.0)
        if COMPACT:
            kk = k.to(tl.int64)[None, :]
            ca = tl.load(c_ptr + cr + kk * cd, mask=mask, other=0.0)
            sa = tl.load(s_ptr + sr + kk * sd, mask=mask, other=0.0)
            cb = ca
            sb = sa
        else:
            ca = tl.load(c_ptr + cr + j1 * cd, mask=mask, other=0.0)
            sa = tl.load(s_ptr + sr + j1 * sd, mask=mask, other=0.0)
            cb = tl.load(c_ptr + cr + j2 * cd, mask=mask, other=0.0)
            sb = tl.load(s_ptr + sr + j2 * sd, mask=mask, other=0.0)
        if F64:
            xa = xa.to(tl.float64)
            xb = xb.to(tl.float64)
            ca = ca.to(tl.float64)
            sa = sa.to(tl.float64)
            cb = cb.to(tl.float64)
            sb = sb.to(tl.float64)
        else:
            xa = xa.to(tl.float32)
            xb = xb.to(tl.float32)
            ca = ca.to(tl.float32)
            sa = sa.to(tl.float32)
            cb = cb.to(tl.float32)
            sb = sb.to(tl.float32)
        oa = xa * ca - xb * sa
        ob = xb * cb + xa * sb
        tl.store(o_ptr + orow + j1 * od, _cast_out(oa, o_ptr.dtype.element_ty, INTERP), mask=mask)
        tl.store(o_ptr + orow + j2 * od, _cast_out(ob, o_ptr.dtype.element_ty, INTERP), mask=mask)
    if REST:
        for j0 in range(_bound(rd, INTERP), _bound(head_dim, INTERP), BLOCK_REST):
            j = j0 + tl.arange(0, BLOCK_REST)
            mask = rm[:, None] & (j < head_dim)[None, :]
            jj = j.to(tl.int64)[None, :]
            v = tl.load(x_ptr + xr + jj * xd, mask=mask, other=0.0)
            tl.store(o_ptr + orow + jj * od, v, mask=mask)


def _rotate_kernel(
    x_ptr, c_ptr, s_ptr, o_ptr, n_rows, B1, B2, B3,
    x0, x1, x2, x3, xd, c0, c1, c2, c3, cd, s0, s1, s2, s3, sd, o0, o1, o2, o3, od,
    half, rd, head_dim,
    LAYOUT: tl.constexpr, COMPACT: tl.constexpr, REST: tl.constexpr, F64: tl.constexpr, INTERP: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_REST: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    _rotate_rows(
        rows, n_rows, x_ptr, c_ptr, s_ptr, o_ptr, B1, B2, B3,
        x0, x1, x2, x3, xd, c0, c1, c2, c3, cd, s0, s1, s2, s3, sd, o0, o1, o2, o3, od,
        half, rd, head_dim, LAYOUT, COMPACT, REST, F64, INTERP, BLOCK_H, BLOCK_REST,
    )


def _rotate_pair_kernel(
    q_ptr, qc_ptr, qs_ptr, qo_ptr, nq, progs_q, QB1, QB2, QB3,
    qx0, qx1, qx2, qx3, qxd, qc0, qc1, qc2, qc3, qcd, qs0, qs1, qs2, qs3, qsd, qo0, qo1, qo2, qo3, qod,
    k_ptr, kc_ptr, ks_ptr, ko_ptr, nk, KB1, KB2, KB3,
    kx0, kx1, kx2, kx3, kxd, kc0, kc1, kc2, kc3, kcd, ks0, ks1, ks2, ks3, ksd, ko0, ko1, ko2, ko3, kod,
    half, rd, head_dim,
    LAYOUT: tl.constexpr, COMPACT: tl.constexpr, REST: tl.constexpr, F64: tl.constexpr, INTERP: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_REST: tl.constexpr,
):
    pid = tl.program_id(0)
    if pid < progs_q:
        rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
        _rotate_rows(
            rows, nq, q_ptr, qc_ptr, qs_ptr, qo_ptr, QB1, QB2, QB3,
            qx0, qx1, qx2, qx3, qxd, qc0, qc1, qc2, qc3, qcd, qs0, qs1, qs2, qs3, qsd, qo0, qo1, qo2, qo3, qod,
            half, rd, head_dim, LAYOUT, COMPACT, REST, F64, INTERP, BLOCK_H, BLOCK_REST,
        )
    else:
        rows = (pid - progs_q) * BLOCK_R + tl.arange(0, BLOCK_R)
        _rotate_rows(
            rows, nk, k_ptr, kc_ptr, ks_ptr, ko_ptr, KB1, KB2, KB3,
            kx0, kx1, kx2, kx3, kxd, kc0, kc1, kc2, kc3, kcd, ks0, ks1, ks2, ks3, ksd, ko0, ko1, ko2, ko3, kod,
            half, rd, head_dim, LAYOUT, COMPACT, REST, F64, INTERP, BLOCK_H, BLOCK_REST,
        )


def _rope_rows(
    rows, n_rows, x_ptr, p_ptr, v1_ptr, v2_ptr, o_ptr, B1, B2, B3,
    x0, x1, x2, x3, xd, p0, p1, p2, p3, o0, o1, o2, o3, od, half, scale, lim,
    LAYOUT: tl.constexpr, INTERP: tl.constexpr, BLOCK_H: tl.constexpr,
):
    """rope's decode step for ``rows``: the tables of integer positions (the
    turns kernel, times ``scale``), then the rotation of full tables whose
    pairs hold one value (posenc._kernels.rotations.rope_small_torch)."""
    rm = rows < n_rows
    xr = _row_offsets(rows, B1, B2, B3, x0, x1, x2, x3)[:, None]
    orow = _row_offsets(rows, B1, B2, B3, o0, o1, o2, o3)[:, None]
    pr = _row_offsets(rows, B1, B2, B3, p0, p1, p2, p3)
    p = tl.load(p_ptr + pr, mask=rm, other=0).to(tl.float64)[:, None]
    bad = (p >= lim) | (p <= -lim)  # beyond the exact range: NaN rows
    for j0 in range(0, _bound(half, INTERP), BLOCK_H):
        k = j0 + tl.arange(0, BLOCK_H)
        km = k < half
        mask = rm[:, None] & km[None, :]
        v1 = tl.load(v1_ptr + k, mask=km, other=0.0)[None, :]
        v2 = tl.load(v2_ptr + k, mask=km, other=0.0)[None, :]
        s, c = _sincos(p, v1, v2, INTERP)
        s = tl.where(bad, float("nan"), s * scale)
        c = tl.where(bad, float("nan"), c * scale)
        if LAYOUT == 1:
            j1 = k.to(tl.int64)[None, :]
            j2 = j1 + half
        else:
            j1 = 2 * k.to(tl.int64)[None, :]
            j2 = j1 + 1
        xa = tl.load(x_ptr + xr + j1 * xd, mask=mask, other=0.0)
        xb = tl.load(x_ptr + xr + j2 * xd, mask=mask, other=0.0)
        oa = xa * c.to(xa.dtype) - xb * s.to(xa.dtype)
        ob = xb * c.to(xa.dtype) + xa * s.to(xa.dtype)
        tl.store(o_ptr + orow + j1 * od, oa, mask=mask)
        tl.store(o_ptr + orow + j2 * od, ob, mask=mask)


def _rope_kernel(
    x_ptr, p_ptr, v1_ptr, v2_ptr, o_ptr, n_rows, B1, B2, B3,
    x0, x1, x2, x3, xd, p0, p1, p2, p3, o0, o1, o2, o3, od, half, scale, lim,
    LAYOUT: tl.constexpr, INTERP: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    _rope_rows(
        rows, n_rows, x_ptr, p_ptr, v1_ptr, v2_ptr, o_ptr, B1, B2, B3,
        x0, x1, x2, x3, xd, p0, p1, p2, p3, o0, o1, o2, o3, od, half, scale, lim, LAYOUT, INTERP, BLOCK_H,
    )


def _rope_pair_kernel(
    q_ptr, qp_ptr, qo_ptr, nq, progs_q, QB1, QB2, QB3,
    qx0, qx1, qx2, qx3, qxd, qp0, qp1, qp2, qp3, qo0, qo1, qo2, qo3, qod,
    k_ptr, kp_ptr, ko_ptr, nk, KB1, KB2, KB3,
    kx0, kx1, kx2, kx3, kxd, kp0, kp1, kp2, kp3, ko0, ko1, ko2, ko3, kod,
    v1_ptr, v2_ptr, half, scale, lim,
    LAYOUT: tl.constexpr, INTERP: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr,
):
    pid = tl.program_id(0)
    if pid < progs_q:
        rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
        _rope_rows(
            rows, nq, q_ptr, qp_ptr, v1_ptr, v2_ptr, qo_ptr, QB1, QB2, QB3,
            qx0, qx1, qx2, qx3, qxd, qp0, qp1, qp2, qp3, qo0, qo1, qo2, qo3, qod, half, scale, lim,
            LAYOUT, INTERP, BLOCK_H,
        )
    else:
        rows = (pid - progs_q) * BLOCK_R + tl.arange(0, BLOCK_R)
        _rope_rows(
            rows, nk, k_ptr, kp_ptr, v1_ptr, v2_ptr, ko_ptr, KB1, KB2, KB3,
            kx0, kx1, kx2, kx3, kxd, kp0, kp1, kp2, kp3, ko0, ko1, ko2, ko3, kod, half, scale, lim,
            LAYOUT, INTERP, BLOCK_H,
        )


_HELPERS = (
    "_rint", "_bound", "_sin32", "_cos32", "_cast_out", "_sincos", "two_prod", "two_sum", "_matrix_term",
    "_row_offsets", "_rotate_rows", "_rope_rows",
)
_KERNELS = (
    "_turns_kernel", "_table_kernel", "_rotate_kernel", "_rotate_pair_kernel", "_rope_kernel", "_rope_pair_kernel",
    "_matrix_kernel",
)
#: the built forms: {False: compiled, True: interpreted}, each {name: kernel}
_FORMS: dict[bool, dict[str, Any]] = {}


def _libdevice() -> Any:
    """libdevice's functions, wherever this Triton keeps them."""
    try:
        from triton.language.extra import libdevice as lib
    except ImportError:
        try:
            from triton.language.extra.cuda import libdevice as lib
        except ImportError:  # triton 2.x
            from triton.language import math as lib
    return lib


def _forms(interp: bool) -> dict[str, Any]:
    """The kernels, compiled (``triton.jit``'s ``JITFunction``) or
    interpreted, built once each from the functions above in a namespace of
    their own (where the helpers' names are bound to helpers of the same
    form)."""
    got = _FORMS.get(interp)
    if got is not None:
        return got
    import triton.language as tl_

    if interp:
        from triton.runtime.interpreter import InterpretedFunction

        wrap: Any = InterpretedFunction
    else:
        # the class itself: triton.jit would read TRITON_INTERPRET now
        from triton.runtime.jit import JITFunction

        wrap = JITFunction
    ns: dict[str, Any] = dict(globals())
    ns["tl"] = tl_
    ns["libdevice"] = None if interp else _libdevice()
    made = {}
    for name in _HELPERS + _KERNELS:
        fn = globals()[name]
        copy = types.FunctionType(fn.__code__, ns, name, fn.__defaults__, fn.__closure__)
        # the kernels' tl.constexpr marks as the class itself (every Triton version reads that); other
        # annotations dropped (posenc._kernels.eft's functions carry none: Triton would read them)
        copy.__annotations__ = {k: tl_.constexpr for k, v in fn.__annotations__.items() if v == "tl.constexpr"}
        copy.__doc__ = fn.__doc__
        copy.__qualname__ = fn.__qualname__
        copy.__module__ = fn.__module__
        ns[name] = made[name] = wrap(copy)
    _FORMS[interp] = made
    return made


_OPTIONS: dict[bool, dict[str, Any]] = {}


def _options(interp: bool) -> dict[str, Any]:
    """The compile options of every launch: no fused multiply-add (the
    portable path rounds each product), and where this Triton has the option,
    libdevice without flush-to-zero (``sinf`` / ``cosf`` as torch's CUDA
    kernels compute them, subnormal results kept)."""
    got = _OPTIONS.get(interp)
    if got is None:
        got = {"enable_fp_fusion": False}
        if not interp:
            try:
                from triton.backends.nvidia.compiler import CUDAOptions

                if "enable_reflect_ftz" in CUDAOptions.__dataclass_fields__:
                    got["enable_reflect_ftz"] = False
            except (ImportError, AttributeError):
                pass
        _OPTIONS[interp] = got
    return got


def _launch(name: str, device: Any, grid: tuple[int, ...], *args: Any, **meta: Any) -> Any:
    """Launch kernel ``name`` on ``grid`` for tensors on ``device``: the
    compiled form on CUDA (on that device), the interpreted one on the CPU;
    :data:`on_launch` hears of it first.  What :func:`_run_compiled` answers
    (the compiled kernel kept for direct launches), or None."""
    hook = on_launch
    if hook is not None:
        hook(name)
    interp = device.type != "cuda" or interpreting()
    kernel = _forms(interp)[name]
    meta["INTERP"] = interp
    meta.update(_options(interp))
    import torch

    if interp:
        # the interpreter stands in for one launch: the host copies it makes of
        # the tensors' storages (aten new_empty / set_ / copy_) are its own,
        # hidden from dispatch modes (launch counters, checks for value reads)
        with _no_dispatch_modes():
            kernel[grid](*args, **meta)
        return None
    if device.index is not None and device.index != torch.cuda.current_device():
        with torch.cuda.device(device):
            return _run_compiled(kernel, name, grid, args, meta)
    return _run_compiled(kernel, name, grid, args, meta)


def _launch_kept(
    kept: dict[Any, Any], tensors: tuple[Any, ...], name: str, device: Any, grid: tuple[int, ...], *args: Any,
    **meta: Any,
) -> None:
    """:func:`_launch` of a launch kept by its caller (:data:`_ROTATIONS`,
    :data:`_PAIRS`), whose arguments other than ``tensors`` are fixed for the
    kept entry: ``kept`` (the entry's own dict) holds the compiled kernel by
    the current device and the tensors' addresses modulo 256, so a repeated
    launch (every decode step) skips building :func:`_run_compiled`'s key of
    every argument."""
    stream_of = _direct_now() if device.type == "cuda" and not interpreting() else None
    if stream_of is not None:
        import torch

        dev = torch.cuda.current_device()
        if device.index is None or device.index == dev:
            key = (dev, *[t.data_ptr() & 255 for t in tensors])
            hit = kept.get(key)
            if hit is not None:
                hook = on_launch
                if hook is not None:
                    hook(name)
                _call(hit, grid, stream_of(dev), args)
                return
            got = _launch(name, device, grid, *args, **meta)
            if got is not None:
                if len(kept) >= 16:
                    kept.clear()
                kept[key] = got
            return
    _launch(name, device, grid, *args, **meta)


#: the compiled kernels that :func:`_run_compiled` launches directly: by the
#: kernel's name, the current device and every argument's specialization
#: (a tensor's dtype and 16-byte alignment, any other argument's type and
#: value, the constants and options), the Triton ``CompiledKernel`` that
#: ``JITFunction.run`` chose for such arguments and the values of the
#: kernel's remaining parameters; cleared when full
_COMPILED: dict[tuple[Any, ...], tuple[Any, tuple[Any, ...]]] = {}
_COMPILED_MAX = 512
#: [whether launches may skip ``JITFunction.run``, the current-stream function]
#: once asked (:func:`_direct`); POSENC_TRITON_DIRECT=0 turns it off
_DIRECT: list[Any] = []


def _direct() -> Any:
    """``(the function giving CUDA's current stream, triton.knobs.runtime)``
    where a launch may call a compiled kernel's launcher itself, else None:
    a Triton whose
    ``JITFunction.run`` ends in ``kernel.run(grid..., stream, function,
    packed_metadata, launch_metadata, enter_hook, exit_hook, *bound_args)``
    (3.4 on, with ``triton.knobs``), and POSENC_TRITON_DIRECT not ``0``."""
    if not _DIRECT:
        got = None
        if os.environ.get("POSENC_TRITON_DIRECT", "1").strip() != "0":
            try:
                from triton import knobs
                from triton.runtime.driver import driver

                if hasattr(knobs, "runtime"):
                    got = (driver.active.get_current_stream, knobs.runtime)
            except Exception:  # another Triton: JITFunction.run every time
                got = None
        _DIRECT.append(got)
    return _DIRECT[0]


def _hooked(hook: Any) -> bool:
    """Whether a Triton launch hook is set: not None, and (a ``HookChain``) not empty."""
    return hook is not None and bool(getattr(hook, "calls", True))


def _direct_now() -> Any:
    """The current-stream function of :func:`_direct` where this launch may
    call a compiled kernel's launcher itself (no launch hook set, a
    profiler's, and Triton's debug mode off), else None."""
    direct = _direct()
    if direct is None:
        return None
    stream_of, rt = direct
    if _hooked(rt.launch_enter_hook) or _hooked(rt.launch_exit_hook) or rt.debug:
        return None
    return stream_of


def _call(kept: tuple[Any, tuple[Any, ...]], grid: tuple[int, ...], stream: Any, args: tuple[Any, ...]) -> None:
    """Launch a kept ``(compiled kernel, values of the remaining
    parameters)`` on ``grid`` with the arguments ``JITFunction.run`` would
    pass its launcher (no launch metadata, no hooks)."""
    compiled, rest = kept
    g = grid + (1, 1)
    compiled.run(g[0], g[1], g[2], stream, compiled.function, compiled.packed_metadata, None, None, None, *args,
                 *rest)


def _run_compiled(
    kernel: Any, name: str, grid: tuple[int, ...], args: tuple[Any, ...], meta: dict[str, Any]
) -> tuple[Any, tuple[Any, ...]] | None:
    """Launch the compiled ``kernel`` on the current CUDA device.

    ``kernel[grid](*args, **meta)`` binds and specializes every argument in
    Python on each launch (tens of microseconds of host time, a decode step's
    largest cost).  Its answer, the compiled kernel, depends only on the
    specialization: each tensor's dtype and whether its address is a multiple
    of 16 (keyed here by the address modulo 256), each other argument's value, the constants and options.  Here a
    launch whose specialization was seen before calls that compiled kernel's
    launcher directly with the arguments ``JITFunction.run`` would pass; the
    first of each goes through ``JITFunction.run``, as do all where Triton's
    launch hooks are set (a profiler) or :func:`_direct` declines.  The kept
    ``(compiled kernel, values of the remaining parameters)``, or None."""
    stream_of = _direct_now()
    if stream_of is None:
        kernel[grid](*args, **meta)
        return None
    import torch

    dev = torch.cuda.current_device()
    key: list[Any] = [name, dev]
    for a in args:
        if isinstance(a, torch.Tensor):
            key.append(a.dtype)
            key.append(a.data_ptr() & 255)  # (Triton's rule: a multiple of 16; any rule up to 256 holds)
        else:
            key.append(type(a))
            key.append(a)
    key.extend(meta.items())
    k = tuple(key)
    hit = _COMPILED.get(k)
    if hit is not None:
        _call(hit, grid, stream_of(dev), args)
        return hit
    compiled = kernel[grid](*args, **meta)
    names = getattr(kernel, "arg_names", None)
    params = getattr(getattr(kernel, "signature", None), "parameters", None)
    if compiled is None or names is None or params is None or getattr(compiled, "function", None) is None:
        return None
    rest: list[Any] = []  # the values of the parameters after the positional arguments
    for n in names[len(args):]:
        if n in meta:
            rest.append(meta[n])
        elif params[n].default is not params[n].empty:
            rest.append(params[n].default)
        else:
            return None
    if len(_COMPILED) >= _COMPILED_MAX:
        _COMPILED.clear()
    _COMPILED[k] = kept = (compiled, tuple(rest))
    return kept


def _no_dispatch_modes() -> Any:
    """A context without torch's Python dispatch modes (a no-op where this
    torch lacks the helper)."""
    import contextlib

    try:
        from torch.utils._python_dispatch import _disable_current_modes
    except ImportError:
        return contextlib.nullcontext()
    return _disable_current_modes()


# --------------------------------------------------------------------------
# block sizes
# --------------------------------------------------------------------------
def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _tile(cols: int, device: Any) -> tuple[int, int]:
    """``(BLOCK_R, BLOCK_C)`` of a tile over rows and ``cols`` columns: about
    2**11 elements on CUDA, 2**14 under the interpreter (each program there
    is a Python call: fewer, larger ones)."""
    target = 1 << (14 if device.type != "cuda" or interpreting() else 11)
    bc = min(_pow2(max(cols, 1)), 128)
    return max(1, target // bc), bc


def _table_tile(cols: int, device: Any) -> tuple[int, int, int]:
    """``(BLOCK_R, BLOCK_M, num_warps)`` of the range-table kernel: on CUDA
    tiles of 512 pairs (up to 256 columns) in two warps.  Measured on one
    H200 for ``sinusoidal(2**20, 512)``, the kernel alone (a copy of the
    table's bytes 1.05 ms): 0.82 ms in tiles of 2 x 256 in two warps, 0.86 in
    1 x 256 in one, 1.08 in 4 x 256 in two, 1.19 in 16 x 256 in eight, and
    3.06 in :func:`_tile`'s 16 x 128 in four with the earlier stores of
    stride 2.  Under the interpreter :func:`_tile`'s larger tiles."""
    if device.type != "cuda" or interpreting():
        return (*_tile(cols, device), 4)
    bm = min(_pow2(max(cols, 1)), 256)
    return max(1, 512 // bm), bm, 2


# --------------------------------------------------------------------------
# when a kernel applies
# --------------------------------------------------------------------------
def _needs_autograd(*arrays: Any) -> bool:
    import torch

    from .angles import forward_ad_active

    if forward_ad_active():
        return True
    if any(torch._C._functorch.is_functorch_wrapped_tensor(a) for a in arrays):
        return True
    return torch.is_grad_enabled() and any(a.requires_grad for a in arrays)


def _kernel_device(*arrays: Any) -> bool:
    """Plain tensors on one device this module runs on."""
    import torch

    dev = arrays[0].device
    for a in arrays:
        if type(a) is not torch.Tensor or a.device != dev:
            return False
    return available(dev.type)


_FLOATS = ("float32", "float64", "bfloat16", "float16")


def _lead4(
    lead: tuple[int, ...], *views: Any, inner: tuple[Any, ...] = ()
) -> tuple[list[int], list[list[int]]] | None:
    """The lead's axes of size > 1, front-padded to four: their sizes and
    each view's strides along them (views of shape ``lead + (d,)``), or None
    for more than four.  ``inner``: views whose axes of stride 0 (broadcast
    along, such as a rotation's tables along the heads) go innermost, in
    their order, when :data:`BROADCAST_INNER` is set: consecutive rows of a
    tile then read the same table row."""
    axes = [i for i, b in enumerate(lead) if b != 1]
    if inner and BROADCAST_INNER:
        axes.sort(key=lambda i: all(v.stride(i) == 0 for v in inner))
    if len(axes) > _MAX_LEAD:
        return None
    pad = _MAX_LEAD - len(axes)
    sizes = [1] * pad + [int(lead[i]) for i in axes]
    strides = [[0] * pad + [int(v.stride(i)) for i in axes] for v in views]
    return sizes, strides


# --------------------------------------------------------------------------
# angles of positions
# --------------------------------------------------------------------------
def turns_triton(
    p: Array, turns: tuple[Array, ...], scale: float = 1.0, clip: bool = False, layout: str | None = None,
    limit: float | None = None, dtype: Any = None,
) -> tuple[Array, Array]:
    """float32 ``(sin, cos)`` of ``p[..., None] * v`` turns, times ``scale``,
    laid out as a RoPE table for ``layout`` (``(..., 2m)``): the contract of
    :func:`posenc._kernels.angles.turns_torch` (``turns`` starts with float64
    ``(v1, v2)`` on ``p``'s device; ``p`` any integer or float dtype, any
    shape; float positions clipped to ``|p| <= 2**64`` with ``clip``), in one
    launch that writes both tables.  Positions that need autograd take
    :func:`~posenc._kernels.angles.turns_torch` (torch's operations); positions
    that are not contiguous are copied first (a second launch).  ``limit``:
    positions with ``|p| >= limit`` give NaN rows, checked in the kernel (no
    value read back, no other launch; ``inf`` for real positions: an infinite
    one is a NaN row); None: no check (the caller checked).  ``dtype``:
    bfloat16 or float16 tables written by the kernel, each value the float32
    one rounded to nearest even (``.to(dtype)`` of the float32 tables, bit
    for bit, without two more launches); else float32."""
    import torch

    v1, v2 = turns[0], turns[1]
    if _needs_autograd(p) or not _kernel_device(p, v1, v2):
        from .angles import turns_torch

        return _masked(p, turns_torch(p, turns, scale, clip, layout), limit)
    m = int(v1.shape[-1])
    width = m if layout is None else 2 * m
    shape = tuple(p.shape) + (width,)
    out = dtype if dtype in (torch.bfloat16, torch.float16) else torch.float32
    s = torch.empty(shape, dtype=out, device=p.device)
    c = torch.empty(shape, dtype=out, device=p.device)
    n = p.numel()
    if n == 0 or m == 0:
        return s, c
    pf = p.reshape(-1)
    if pf.dtype == torch.bool:
        pf = pf.to(torch.uint8)
    br, bm = _tile(m, p.device)
    grid = (-(-n // br), -(-m // bm))
    _launch(
        "_turns_kernel", p.device, grid, pf, pf.stride(0), v1.contiguous(), v2.contiguous(), s, c, n, m, float(scale),
        _limit(limit), CLIP=bool(clip) and p.is_floating_point(), LAYOUT=_LAYOUTS[layout], BLOCK_R=br, BLOCK_M=bm,
    )
    return s, c


#: the widest frequency matrix :func:`matrix_triton` takes (its axes are
#: unrolled in the kernel)
MATRIX_AXES = 8
#: the dtypes of the ids :func:`matrix_triton` reads
_MATRIX_IDS = _FLOATS + ("int64", "int32", "int16", "int8", "uint8")


def matrix_triton(ids: Array, freqs: Array, turns: bool, work: Any) -> tuple[Array, Array] | None:
    """``(sin, cos)`` of ``ids . freqs^T`` (times 2 pi with ``turns``) in
    ``work`` (float32 or float64), shape ``freqs.shape[:-2] + ids.shape[:-1]
    + (m,)``: the contract of :func:`posenc._matrix.matrix_sincos` on a
    device with float64, in one launch (the portable path takes 114 for
    three axes of float ids: each two-product and two-sum is several).  None where the
    kernel does not apply (autograd, another device, more than
    :data:`MATRIX_AXES` axes, a dtype it does not read)."""
    import torch

    if _needs_autograd(ids, freqs) or not _kernel_device(ids, freqs):
        return None
    n = int(ids.shape[-1])
    if not 0 < n <= MATRIX_AXES or work not in (torch.float32, torch.float64):
        return None
    kinds = str(ids.dtype).removeprefix("torch."), str(freqs.dtype).removeprefix("torch.")
    if kinds[0] not in _MATRIX_IDS or kinds[1] not in _FLOATS:
        return None
    fl, lead, m = tuple(freqs.shape[:-2]), tuple(ids.shape[:-1]), int(freqs.shape[-2])
    s = torch.empty(fl + lead + (m,), dtype=work, device=ids.device)
    c = torch.empty(fl + lead + (m,), dtype=work, device=ids.device)
    rows, per = math.prod(fl) * math.prod(lead), math.prod(lead)
    if rows == 0 or m == 0:
        return s, c
    i2 = ids.reshape(per, n)  # (views where the strides allow)
    f3 = freqs.reshape(math.prod(fl), m, n)
    br, bm = _tile(m, ids.device)
    if ids.device.type == "cuda" and not interpreting():
        # about 512 entries a program: some twenty float64 values live per
        # entry (the two-products), against 2**11 float32 ones of the other
        # kernels (a choice from register counts, not yet timed on a device)
        br = max(1, 512 // bm)
    _launch(
        "_matrix_kernel", ids.device, (-(-rows // br), -(-m // bm)), i2, i2.stride(0), i2.stride(1), f3,
        f3.stride(0), f3.stride(1), f3.stride(2), s, c, rows, per, m, NAXES=n, FLOAT_IDS=ids.is_floating_point(),
        TURNS=bool(turns), BLOCK_R=br, BLOCK_M=bm,
    )
    return s, c


def _limit(limit: float | None) -> float:
    """The kernels' bound on ``|p|`` (NaN: no check, every comparison with
    it is false; ``inf``: the infinities only)."""
    return math.nan if limit is None else float(limit)


def _masked(p: Array, sc: tuple[Array, Array], limit: float | None) -> tuple[Array, Array]:
    """``(sin, cos)`` of torch's operations with NaN rows where ``|p| >=
    limit``, as the kernels give them (the fallback of autograd)."""
    if limit is None:
        return sc
    import torch

    bad = (p.to(torch.float64).abs() >= limit)[..., None]
    s, c = sc
    return torch.where(bad, torch.nan, s), torch.where(bad, torch.nan, c)


# --------------------------------------------------------------------------
# rotations
# --------------------------------------------------------------------------
def _rotate_into(x: Array, c: Array, s: Array, out: Array, lead: tuple[int, ...]) -> list[Any] | None:
    """The kernel arguments rotating ``x`` into ``out`` (both broadcast to
    ``lead``), or None (too many leading axes)."""
    head_dim = int(x.shape[-1])
    width = int(c.shape[-1])
    xb = x.expand(lead + (head_dim,))
    cb = c.expand(lead + (width,))
    sb = s.expand(lead + (width,))
    got = _lead4(lead, xb, cb, sb, out, inner=(cb, sb))
    if got is None:
        return None
    sizes, (tx, tc, ts, to) = got
    return [
        xb, cb, sb, out, math.prod(lead), sizes[1], sizes[2], sizes[3],
        *tx, int(xb.stride(-1)), *tc, int(cb.stride(-1)), *ts, int(sb.stride(-1)), *to, int(out.stride(-1)),
    ]


def _rotation_meta(x: Array, layout: str, rotary_dim: int, compact: bool, rest: bool, rows: int) -> dict[str, Any]:
    half = rotary_dim // 2
    head_dim = int(x.shape[-1])
    interp = x.device.type != "cuda" or interpreting()
    bh = min(_pow2(max(half, 1)), 64)
    # on CUDA: tiles of 16 rows of 64 pairs, in four warps for float32 and two for 16-bit types.  Measured on one
    # H200, apply_rope of (8, 32, 4096, 128), the kernel alone (CUDA graphs of ten launches), rows ordered with the
    # heads innermost (BROADCAST_INNER): float32 0.275 ms in 16 rows and four warps or two, 0.287 in 32 and eight,
    # 0.292 in 8 and four (a copy of x: 0.263 ms eager); bfloat16 0.157 ms in 16 rows and two warps, 0.172 in four,
    # 0.170 in 32 and four, 0.225 in 8 (a copy: 0.128 ms).  The heads innermost: float32 0.275 against 0.285 at
    # best in the plain order, bfloat16 0.157 against 0.156
    narrow = not interp and x.dtype.itemsize == 2
    target = 1 << (14 if interp else 11)
    br = max(1, min(target // (2 * bh), _pow2(max(rows, 1))))
    return {
        "LAYOUT": _LAYOUTS[layout], "COMPACT": bool(compact), "REST": bool(rest),
        "F64": x.dtype.itemsize == 8, "BLOCK_R": br, "BLOCK_H": bh,
        "BLOCK_REST": min(_pow2(max(head_dim - rotary_dim, 1)), 64), "num_warps": 2 if narrow else 4,
    }


def _rotation_ok(x: Array, c: Array, s: Array, wt: Any = None) -> bool:
    return _rotation_kinds_ok(x, c, s, wt) and not _needs_autograd(x, c, s)


def _rotation_kinds_ok(x: Array, c: Array, s: Array, wt: Any = None) -> bool:
    """What a rotation kernel needs of the arrays' kinds (plain tensors on
    one device it runs on, float dtypes, the working dtype ``wt`` its own),
    the same for every call with these types, dtypes and devices."""
    import torch

    if not _kernel_device(x, c, s):
        return False
    if any(str(a.dtype).removeprefix("torch.") not in _FLOATS for a in (x, c, s)):
        return False
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    return wt is None or wt == work


def rotate_small_triton(x: Array, c: Array, s: Array, layout: str) -> Array:
    """``x * c + rotate(x) * s`` (full tables, ``x``, ``c``, ``s`` of one
    dtype, broadcasting): the contract of
    :func:`posenc._kernels.rotations.rotate_small_torch`, bit for bit, in one
    launch.  Inputs that need autograd, or whose broadcast leading shape has
    more than four axes of size > 1, take ``rotate_small_torch``."""
    import torch

    from .rotations import rotate_small_torch

    if not _rotation_ok(x, c, s):
        return rotate_small_torch(x, c, s, layout)
    d = int(x.shape[-1])
    lead = tuple(torch.broadcast_shapes(tuple(x.shape[:-1]), tuple(c.shape[:-1]), tuple(s.shape[:-1])))
    out = torch.empty(lead + (d,), dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out
    args = _rotate_into(x, c, s, out, lead)
    if args is None:
        return rotate_small_torch(x, c, s, layout)
    rows = math.prod(lead)
    meta = _rotation_meta(x, layout, d, False, False, rows)
    _launch("_rotate_kernel", x.device, (-(-rows // meta["BLOCK_R"]),), *args, d // 2, d, d, **meta)
    return out


def _inplace_ok(x: Array, lead: tuple[int, ...]) -> bool:
    import torch

    return tuple(x.shape[:-1]) == lead and torch._debug_has_internal_overlap(x) == 0


def rotate_large_triton(
    x: Array, c: Array, s: Array, layout: str, rotary_dim: int, lead: tuple[int, ...], compact: bool, wt: Any,
    inplace: bool = False,
) -> Array | None:
    """``apply_rope``'s rotation (:func:`posenc._rope.rotate_portable`, bit for
    bit; the contract of :func:`posenc._kernels.rotations.rotate_large_torch`)
    in one launch: ``x`` of any float dtype (bfloat16 / float16 computed in
    float32 in registers) and strides, tables full (``(..., rotary_dim)``:
    both entries of each pair read) or ``compact`` (``(..., rotary_dim //
    2)``) in any float dtype, broadcasting to ``lead``; the features from
    ``rotary_dim`` pass through.  ``inplace``: the result is written into
    ``x`` and ``x`` returned (features beyond ``rotary_dim`` untouched).

    None where it does not apply: autograd (reverse or forward mode,
    torch.func), a device this module does not run on, a working dtype
    ``wt`` other than float32 (float64 for float64 ``x``), more than four
    leading axes of size > 1, and in place: ``x`` broadcast or overlapping
    itself."""
    key = (
        type(x), type(c), type(s), x.shape, x.stride(), c.shape, c.stride(), s.shape, s.stride(), x.dtype, c.dtype,
        s.dtype, x.device, c.device, s.device, layout, rotary_dim, lead, compact, wt, inplace, interpreting(),
    )
    spec = _ROTATIONS.get(key)
    if spec is None:
        spec = _rotation_spec(x, c, s, layout, rotary_dim, lead, compact, wt, inplace)
        _ROTATIONS.put(key, spec)
    if spec is False or _needs_autograd(x, c, s):
        return None
    import torch

    shape, meta, grid, scalars, kept = spec
    out = x if inplace else torch.empty(shape, dtype=x.dtype, device=x.device)
    if grid is None:  # nothing to compute
        return out
    # the arrays themselves: the kernel reads their memory by the strides of their broadcast views (a broadcast
    # view starts where its array starts)
    _launch_kept(kept, (x, c, s, out), "_rotate_kernel", x.device, grid, x, c, s, out, *scalars, **meta)
    return out


#: :func:`rotate_large_triton`'s launches by the arrays' types, shapes, strides, dtypes and devices and the
#: options: the output's shape, the kernel's constants, its grid and scalar arguments and the dict of
#: :func:`_launch_kept`, or False where the kernel does not apply.  A decode step's rotation then costs a lookup,
#: an allocation and the launch.
_ROTATIONS = _cache.Memo("triton.rotations", 256)


def _rotation_spec(
    x: Array, c: Array, s: Array, layout: str, rotary_dim: int, lead: tuple[int, ...], compact: bool, wt: Any,
    inplace: bool,
) -> tuple[tuple[int, ...], dict[str, Any], tuple[int] | None, list[Any], dict[Any, Any]] | Literal[False]:
    """The launch of :func:`rotate_large_triton` for arrays like these (see :data:`_ROTATIONS`)."""
    if not _rotation_kinds_ok(x, c, s, wt):
        return False
    import torch

    lead = tuple(int(b) for b in lead)
    head_dim = int(x.shape[-1])
    shape = lead + (head_dim,)
    if inplace:
        if not _inplace_ok(x, lead):
            return False
        out = x
    else:
        out = torch.empty(shape, dtype=x.dtype, device=x.device)  # (its strides: those of every call's output)
    rest = rotary_dim < head_dim and not inplace
    args = _rotate_into(x, c, s, out, lead)
    if args is None:
        return False
    rows = math.prod(lead)
    meta = _rotation_meta(x, layout, rotary_dim, compact, rest, rows)
    if out.numel() == 0:
        return shape, meta, None, [], {}
    return shape, meta, (-(-rows // meta["BLOCK_R"]),), [*args[4:], rotary_dim // 2, rotary_dim, head_dim], {}


def rotate_pair_triton(
    q: Array, k: Array, c: Array, s: Array, layout: str, rotary_dim: int | None = None, compact: bool = False,
    inplace: bool = False,
) -> tuple[Array, Array] | None:
    """``apply_rope`` of ``q`` and ``k`` by the same tables in one launch
    (:func:`rotate_large_triton` of each): ``q`` and ``k`` of one dtype and
    head dimension, any head counts; ``c`` and ``s`` broadcast against each
    one's leading axes (Hugging Face's ``(batch, 1, seq, d)`` tables against
    ``(batch, heads, seq, d)``; for ``heads_axis`` the caller reshapes them
    first, as ``apply_rope``'s plan does); ``rotary_dim`` defaults to the tables' width
    (twice that for ``compact`` tables).  ``(q_out, k_out)``, or None where
    :func:`rotate_large_triton` would answer None for either, or where they
    differ in dtype or head dimension, or the tables do not broadcast."""
    key = (
        type(q), type(k), type(c), type(s), q.shape, q.stride(), k.shape, k.stride(), c.shape, c.stride(), s.shape,
        s.stride(), q.dtype, k.dtype, c.dtype, s.dtype, q.device, k.device, c.device, s.device, layout, rotary_dim,
        compact, inplace, interpreting(),
    )
    spec = _PAIRS.get(key)
    if spec is None:
        spec = _pair_spec(q, k, c, s, layout, rotary_dim, compact, inplace)
        _PAIRS.put(key, spec)
    if spec is False or _needs_autograd(q, k, c, s):
        return None
    import torch

    q_shape, k_shape, meta, grid, q_args, k_args, kept = spec
    if inplace:
        oq, ok = q, k
    else:
        oq = torch.empty(q_shape, dtype=q.dtype, device=q.device)
        ok = torch.empty(k_shape, dtype=k.dtype, device=k.device)
    if grid is not None:
        # the arrays themselves, as in rotate_large_triton: a broadcast view starts where its array starts
        _launch_kept(kept, (q, c, s, oq, k, ok), "_rotate_pair_kernel", q.device, grid, q, c, s, oq, *q_args, k, c,
                     s, ok, *k_args, **meta)
    return oq, ok


#: :func:`rotate_pair_triton`'s launches, kept as :data:`_ROTATIONS` keeps
#: :func:`rotate_large_triton`'s: both outputs' shapes, the kernel's
#: constants, its grid and the scalar arguments of q and of k (the tables'
#: width and the head dimension last) and the dict of :func:`_launch_kept`, or
#: False where it does not apply.
_PAIRS = _cache.Memo("triton.rotation_pairs", 256)


def _pair_spec(
    q: Array, k: Array, c: Array, s: Array, layout: str, rotary_dim: int | None, compact: bool, inplace: bool,
) -> (
    tuple[tuple[int, ...], tuple[int, ...], dict[str, Any], tuple[int] | None, list[Any], list[Any], dict[Any, Any]]
    | Literal[False]
):
    """The launch of :func:`rotate_pair_triton` for arrays like these (see :data:`_PAIRS`)."""
    import torch

    if q.dtype != k.dtype or q.shape[-1] != k.shape[-1]:
        return False
    if not _rotation_kinds_ok(q, c, s) or not _rotation_kinds_ok(k, c, s):
        return False
    head_dim = int(q.shape[-1])
    width = int(c.shape[-1])
    rd = (2 * width if compact else width) if rotary_dim is None else int(rotary_dim)
    if rd % 2 or rd > head_dim or rd != (2 * width if compact else width) or tuple(c.shape) != tuple(s.shape):
        return False
    leads = []
    for x in (q, k):
        try:
            leads.append(tuple(int(b) for b in torch.broadcast_shapes(tuple(x.shape[:-1]), tuple(c.shape[:-1]))))
        except RuntimeError:
            return False
    outs = []
    for x, lead in zip((q, k), leads, strict=True):
        if inplace:
            if not _inplace_ok(x, lead):
                return False
            outs.append(x)
        else:  # (their strides: those of every call's outputs)
            outs.append(torch.empty(lead + (head_dim,), dtype=x.dtype, device=x.device))
    rest = rd < head_dim and not inplace
    qa = _rotate_into(q, c, s, outs[0], leads[0])
    ka = _rotate_into(k, c, s, outs[1], leads[1])
    if qa is None or ka is None:
        return False
    shapes = leads[0] + (head_dim,), leads[1] + (head_dim,)
    nq, nk = math.prod(leads[0]), math.prod(leads[1])
    meta = _rotation_meta(q, layout, rd, compact, rest, max(nq, nk))
    if nq + nk == 0 or head_dim == 0:
        return shapes[0], shapes[1], meta, None, [], [], {}
    br = meta["BLOCK_R"]
    progs_q = -(-nq // br)
    grid = (progs_q + -(-nk // br),)
    return shapes[0], shapes[1], meta, grid, [qa[4], progs_q, *qa[5:]], [*ka[4:], rd // 2, rd, head_dim], {}


# --------------------------------------------------------------------------
# rope's decode step
# --------------------------------------------------------------------------
def _rope_args(
    x: Array, p: Array, shape: tuple[int, ...] | None, d: int
) -> tuple[list[Any], Array, int] | None:
    """``(arguments, output, rows)`` of :func:`_rope_rows` for ``x`` and the
    positions ``p`` (reshaped to ``shape[:-1]`` when given, broadcast against
    ``x``'s leading axes), or None (they do not broadcast, or more than four
    leading axes of size > 1)."""
    import torch

    tlead = tuple(shape[:-1]) if shape is not None else tuple(p.shape)
    try:
        lead = tuple(torch.broadcast_shapes(tuple(x.shape[:-1]), tlead))
    except RuntimeError:
        return None
    axes = [i for i, b in enumerate(lead) if b != 1]
    if len(axes) > _MAX_LEAD:
        return None
    out = torch.empty(lead + (d,), dtype=x.dtype, device=x.device)
    pb = p.reshape(tlead).expand(lead)
    xb = x.expand(lead + (d,))
    pad = _MAX_LEAD - len(axes)
    sizes = [1] * pad + [int(lead[i]) for i in axes]
    tx = [0] * pad + [int(xb.stride(i)) for i in axes]
    tp = [0] * pad + [int(pb.stride(i)) for i in axes]
    to = [0] * pad + [int(out.stride(i)) for i in axes]
    rows = math.prod(lead)
    args = [xb, pb, out, rows, sizes[1], sizes[2], sizes[3], *tx, int(xb.stride(-1)), *tp, *to, int(out.stride(-1))]
    return args, out, rows


def _rope_blocks(x: Array, m: int, rows: int) -> tuple[int, int]:
    interp = x.device.type != "cuda" or interpreting()
    bh = min(_pow2(max(m, 1)), 64)
    return max(1, min((1 << (14 if interp else 11)) // (2 * bh), _pow2(max(rows, 1)))), bh


def _rope_ok(x: Array, p: Array, v1: Array, v2: Array) -> bool:
    import torch

    return (
        not _needs_autograd(x, p) and _kernel_device(x, p, v1, v2)
        and x.dtype in (torch.float32, torch.float64) and not p.is_floating_point()
        and int(x.shape[-1]) == 2 * int(v1.shape[-1])
    )


def rope_small_triton(
    x: Array, p: Array, turns: tuple[Array, ...], scale: float, shape: tuple[int, ...] | None, layout: str,
    limit: float | None = None,
) -> Array:
    """The tables of integer positions ``p`` (:func:`turns_triton` laid out,
    times ``scale``, reshaped to ``shape`` when given), then the rotation of
    ``x`` by them, fused in one launch: the contract of
    :func:`posenc._kernels.rotations.rope_small_torch` (``x`` float32 or
    float64 of head dimension ``2m``).  Inputs that need autograd, or whose
    broadcast leading shape has more than four axes of size > 1, take
    ``rope_small_torch``.  ``limit`` as in :func:`turns_triton`."""
    from .rotations import rope_small_torch

    v1, v2 = turns[0], turns[1]
    got = _rope_args(x, p, shape, int(x.shape[-1])) if _rope_ok(x, p, v1, v2) else None
    if got is None:
        if limit is None:
            return rope_small_torch(x, p, turns, scale, shape, layout)
        from .angles import turns_torch
        from .rotations import rotate_small_torch

        sn, cs = _masked(p, turns_torch(p, turns, scale, False, layout), limit)
        if shape is not None:
            sn, cs = sn.reshape(shape), cs.reshape(shape)
        return rotate_small_torch(x, cs.to(x.dtype), sn.to(x.dtype), layout)
    args, out, rows = got
    if rows == 0 or out.numel() == 0:
        return out
    br, bh = _rope_blocks(x, int(v1.shape[-1]), rows)
    _launch(
        "_rope_kernel", x.device, (-(-rows // br),), args[0], args[1], v1.contiguous(), v2.contiguous(), *args[2:],
        int(v1.shape[-1]), float(scale), _limit(limit), LAYOUT=_LAYOUTS[layout], BLOCK_R=br, BLOCK_H=bh,
    )
    return out


def rope_pair_triton(
    q: Array, k: Array, p: Array, turns: tuple[Array, ...], scale: float, shape: tuple[int, ...] | None,
    layout: str, limit: float | None = None,
) -> tuple[Array, Array] | None:
    """:func:`rope_small_triton` of ``q`` and of ``k`` (one dtype and head
    dimension, any head counts) at the same positions, in one launch: a
    decode step's RoPE.  ``(q_out, k_out)``, or None where
    :func:`rope_small_triton` would not launch for either (autograd, float
    positions, dtypes, shapes)."""
    v1, v2 = turns[0], turns[1]
    if q.dtype != k.dtype or not _rope_ok(q, p, v1, v2) or not _rope_ok(k, p, v1, v2):
        return None
    d = int(q.shape[-1])
    qa, ka = _rope_args(q, p, shape, d), _rope_args(k, p, shape, d)
    if qa is None or ka is None:
        return None
    (qargs, qout, nq), (kargs, kout, nk) = qa, ka
    if nq + nk == 0 or d == 0:
        return qout, kout
    m = int(v1.shape[-1])
    br, bh = _rope_blocks(q, m, max(nq, nk))
    progs_q = -(-nq // br)
    _launch(
        "_rope_pair_kernel", q.device, (progs_q + -(-nk // br),), *qargs[:4], progs_q, *qargs[4:], *kargs,
        v1.contiguous(), v2.contiguous(), m, float(scale), _limit(limit), LAYOUT=_LAYOUTS[layout], BLOCK_R=br,
        BLOCK_H=bh,
    )
    return qout, kout


# --------------------------------------------------------------------------
# tables of a range
# --------------------------------------------------------------------------
#: table layouts: RoPE's (cos and sin, each value twice) and sinusoidal's
_TABLE_LAYOUTS = {"half": 1, "interleaved": 2, "sin-cos": 3, "concat": 4}


def table_triton(
    n: int, lo: int, turns: tuple[Array, ...], layout: str, dtype: Any, device: Any, *, scale: float = 1.0,
    dim: int | None = None,
) -> Array:
    """The table of the positions ``lo .. lo+n-1`` (``|lo|``, ``|lo+n-1| <
    2**32``: ``p * v1`` exact) written in ``dtype`` (float32, bfloat16 or
    float16) in one launch, from float64 turns ``(v1, v2)`` (``m`` of them)
    on ``device``:

    * ``"half"`` / ``"interleaved"`` (RoPE): shape ``(2, n, 2m)``, ``[0]`` the
      cos table and ``[1]`` the sin table laid out as
      :func:`turns_triton` lays them out, times ``scale``;
    * ``"sin-cos"`` (sinusoidal ``"interleaved"``: ``sin, cos, sin, cos ...``)
      and ``"concat"`` (``[sin ... | cos ...]``): shape ``(n, dim)``, ``dim``
      (default ``2m``) may be ``2m + 1`` (a zero last column).

    The values are :func:`turns_triton`'s of ``arange(lo, lo + n)`` (then
    cast to ``dtype``), bit for bit on the same device: the turns path, not
    the range path's angle-addition products (both within posenc's bound)."""
    import torch

    code = _TABLE_LAYOUTS[layout]
    device = torch.device(device)
    v1, v2 = turns[0].contiguous(), turns[1].contiguous()
    m = int(v1.shape[-1])
    if code <= 2:
        width = 2 * m
        out = torch.empty((2, n, width), dtype=dtype, device=device)
    else:
        width = 2 * m if dim is None else int(dim)
        if width not in (2 * m, 2 * m + 1):
            msg = f"`dim` must be 2m or 2m + 1 for m = {m} frequencies, got {dim!r}"
            raise ValueError(msg)
        out = torch.empty((n, width), dtype=dtype, device=device)
    if n == 0:
        return out
    if m == 0:
        return out.zero_()
    br, bm, warps = _table_tile(m, device)
    grid = (-(-n // br), -(-m // bm))
    _launch(
        "_table_kernel", device, grid, out, v1, v2, n, int(lo), m, width, n * width, float(scale),
        LAYOUT=code, BLOCK_R=br, BLOCK_M=bm, num_warps=warps,
    )
    return out
