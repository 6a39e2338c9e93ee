"""The two properties that make the sinusoidal table useful: a shift is a
linear map of the table (:func:`shift_matrix`), and the dot product of two
rows depends on their offset only (:func:`similarity`,
:func:`similarity_by_offset`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _angles, _checks, _compat
from ._compat import Array
from ._trace import host_constant
from .sinusoidal import freq_args

__all__ = ["shift_matrix", "similarity", "similarity_by_offset"]


def shift_matrix(
    offset: float | Array,
    dim: int,
    *,
    base: float = 10000.0,
    layout: str = "interleaved",
    convention: str = "paper",
    min_timescale: float | None = None,
    max_timescale: float | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""The matrix :math:`M_k` with :math:`PE(p + k) = M_k \, PE(p)` for every p.

    By the angle-addition formulas each (sin, cos) pair of frequency
    :math:`\omega` is rotated by the angle :math:`k\omega`:

    .. math::

        \begin{pmatrix} \sin((p+k)\omega) \\ \cos((p+k)\omega) \end{pmatrix}
        = \begin{pmatrix} \cos k\omega & \sin k\omega \\
                          -\sin k\omega & \cos k\omega \end{pmatrix}
          \begin{pmatrix} \sin p\omega \\ \cos p\omega \end{pmatrix}.

    :math:`M_k` does not depend on ``p``: a shift is a linear map of the
    table.  Its blocks follow ``layout`` (2x2 blocks on the diagonal for
    ``"interleaved"``, four diagonal blocks for ``"concat"``); for odd
    ``dim`` the zero column maps to itself.

    Parameters
    ----------
    offset : int, float or array
        The shift k; an array of offsets gives ``offset.shape + (dim, dim)``
        (a 0-d array, like a number or a NumPy scalar, gives ``(dim, dim)``).
        The angles of a number are computed on the host in float64, so they
        do not depend on the device's precision.
    dim, base, layout, convention, min_timescale, max_timescale
        As in :func:`sinusoidal`.
    dtype, device, xp
        Output dtype, device and namespace.

    Returns
    -------
    array
        Shape ``(dim, dim)``, or ``offset.shape + (dim, dim)`` for an array
        of offsets.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> pe = posenc.sinusoidal(20, 8)
    >>> m = posenc.shift_matrix(3, 8)
    >>> bool(np.allclose(pe[2:17] @ m.T, pe[5:]))
    True
    """
    if isinstance(offset, np.generic):
        offset = offset.item()  # a NumPy scalar is a number, not an array of NumPy's
    ctx = _compat.resolve({"offset": offset}, xp=xp, device=device, dtype=dtype)
    layout = _checks.check_choice(layout, "layout", _checks.TABLE_LAYOUTS)
    # the matrix's size before its frequencies are made (their exact host work grows with dim)
    _checks.check_size((_checks.check_dim(dim),) * 2, "matrix")
    dim, w = freq_args(dim, base, convention, min_timescale, max_timescale)
    xp_ = ctx.xp
    if _compat.is_array(offset):
        # the output size is checked before the offsets are scanned for NaN
        k = _checks.check_positions(offset, "offset", ctx, out_tail=(dim, dim), what="matrix")
        lead = tuple(k.shape)
        s, c = _angles.sincos(k, w, ctx, "`offset`")  # lead + (m,)
    else:
        off = _checks.check_float(offset, "offset")
        lead = ()
        _checks.check_size((dim, dim), "matrix")
        hs, hc = _angles.host_sincos(off, w)
        s, c = ctx.from_host(hs, ctx.work), ctx.from_host(hc, ctx.work)
    m = w.m
    eye = ctx.from_host(_eye(m), ctx.work)
    if layout == "interleaved":
        # R[..., i, a, b]: a = output row (sin, cos), b = input (sin, cos)
        r = xp_.stack([xp_.stack([c, s], axis=-1), xp_.stack([-s, c], axis=-1)], axis=-2)
        r = r[..., :, :, None, :] * eye[:, None, :, None]
        mat = xp_.reshape(r, lead + (2 * m, 2 * m))
    else:
        dc = c[..., :, None] * eye
        ds = s[..., :, None] * eye
        top = xp_.concat([dc, ds], axis=-1)
        bottom = xp_.concat([-ds, dc], axis=-1)
        mat = xp_.concat([top, bottom], axis=-2)
    if dim % 2:
        zc = _angles.zeros(lead + (2 * m, 1), ctx.work, ctx)
        mat = xp_.concat([mat, zc], axis=-1)
        last = ctx.from_host(_eye(1, dim, dim - 1), ctx.work)
        last = xp_.broadcast_to(last, lead + (1, dim))
        mat = xp_.concat([mat, last], axis=-2)
    return ctx.place(_angles.cast(mat, ctx.dtype, xp_))


@host_constant
def _eye(n: int, m: int | None = None, k: int = 0) -> np.ndarray:
    return np.eye(n, m, k)


def similarity(a: Array, b: Array | None = None) -> Array:
    """Dot products over the last axis: ``a @ b.T`` (``b = a`` by default).

    For a table ``pe`` of shape ``(n, dim)`` this is the ``(n, n)`` matrix of
    ``PE(s) . PE(t)`` whose bands show that the product depends on
    ``s - t`` only.  Leading axes broadcast (``(..., n, d) x (..., m, d) ->
    (..., n, m)``).  The output keeps the inputs' floating dtype (computed
    in at least float32 for half-precision inputs).

    Parameters
    ----------
    a : array
        Shape ``(..., n, d)``.
    b : array, optional
        Shape ``(..., m, d)``; default ``a``.

    Returns
    -------
    array
        Shape ``(..., n, m)``.

    Examples
    --------
    >>> import posenc
    >>> pe = posenc.sinusoidal(4, 8)
    >>> posenc.similarity(pe).round(3)[0]
    array([4.   , 3.535, 2.564, 1.965])
    """
    if not _compat.is_array(a):
        msg = f"`a` must be an array of shape (..., n, dim), got {type(a).__name__}"
        raise TypeError(msg)
    if b is None:
        b = a
    elif not _compat.is_array(b):
        msg = f"`b` must be an array of shape (..., m, dim), got {type(b).__name__}"
        raise TypeError(msg)
    ctx = _compat.resolve({"a": a, "b": b})
    xp_ = ctx.xp
    for name, v in (("a", a), ("b", b)):
        _checks.check_real_float(v, name, xp_, min_ndim=2, shape="(..., n, dim)")
    if a.shape[-1] != b.shape[-1]:
        msg = f"`a` and `b` must have the same last axis, got {a.shape[-1]} and {b.shape[-1]}"
        raise ValueError(msg)
    out_t = xp_.result_type(a, b)
    work = out_t if out_t in (xp_.float32, getattr(xp_, "float64", None)) else xp_.float32
    _check_similarity_size(a, b, work)
    res = xp_.matmul(_angles.cast(a, work, xp_), xp_.matrix_transpose(_angles.cast(b, work, xp_)))
    return _angles.cast(res, out_t, xp_)


def _check_similarity_size(a: Array, b: Array, work: Any) -> None:
    """Refuse a similarity matrix (or a cast input) above posenc's size limit."""
    shapes = [tuple(a.shape), tuple(b.shape)]
    if not all(isinstance(d, int) for sh in shapes for d in sh):
        return  # unknown (lazy) sizes: nothing to check before computing
    lead = _checks.broadcast_shapes(shapes[0][:-2], shapes[1][:-2])
    if lead is None:
        msg = f"the leading axes of `a` {shapes[0][:-2]} and `b` {shapes[1][:-2]} do not broadcast"
        raise ValueError(msg)
    _checks.check_size(tuple(lead) + (shapes[0][-2], shapes[1][-2]), "similarity matrix")
    for name, v, sh in (("a", a, shapes[0]), ("b", b, shapes[1])):
        if v.dtype != work:  # the cast copies the input
            _checks.check_size(sh, f"`{name}` array")


def similarity_by_offset(
    offsets: int | Array,
    dim: int,
    *,
    base: float = 10000.0,
    convention: str = "paper",
    min_timescale: float | None = None,
    max_timescale: float | None = None,
    normalize: bool = False,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r""":math:`PE(t) \cdot PE(t + k)` as a function of the offset ``k``.

    By the angle-addition formula the product is
    :math:`\sum_i \cos(k\,\omega_i)`: independent of ``t`` and even in
    ``k`` — the sinusoidal table tells how far apart two positions are, not
    which one comes first.  The layout does not matter; the zero column of
    an odd ``dim`` adds nothing.

    Parameters
    ----------
    offsets : int or array
        An int ``n`` (offsets ``0 .. n-1``) or an array of offsets.
    dim, base, convention, min_timescale, max_timescale
        As in :func:`sinusoidal`.
    normalize : bool, default False
        Divide by :math:`|PE(t)|^2 = d/2` (cosine similarity, 1 at k = 0).
    dtype, device, xp
        Output dtype, device and namespace.

    Returns
    -------
    array
        One value per offset: shape ``(n,)`` for an int ``n``, else the
        shape of ``offsets``.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> posenc.similarity_by_offset(np.array([-3, 0, 3]), 8).round(3)
    array([1.965, 4.   , 1.965])
    """
    ctx = _compat.resolve({"offsets": offsets}, xp=xp, device=device, dtype=dtype)
    dim, w = freq_args(dim, base, convention, min_timescale, max_timescale)
    normalize = _checks.check_bool(normalize, "normalize")
    # the (offsets, dim // 2) cosines are the largest array (and the offsets
    # themselves when dim < 4): checked before the offsets are made or scanned
    k = _checks.check_positions(offsets, "offsets", ctx, out_tail=(max(dim // 2, 1),), what="intermediate")
    top = 1.0 if normalize else float(dim // 2)
    limit, dt = _checks.largest(ctx, ctx.dtype)
    if not top <= limit:
        msg = (
            f"`dtype` {_checks.dtype_name(dt)} cannot hold similarities up to dim // 2 = {dim // 2} "
            f"(largest {limit:.3g})"
        )
        raise ValueError(msg)
    _, c = _angles.sincos(k, w, ctx, "`offsets`")
    out = ctx.xp.sum(c, axis=-1)
    if normalize:
        out = out / float(max(dim // 2, 1))
    return _angles.cast(out, ctx.dtype, ctx.xp)
