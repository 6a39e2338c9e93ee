"""Relative positions and attention biases.

Clipped relative positions (Shaw et al., 2018), T5's log-spaced relative
position buckets (Raffel et al., 2020), Transformer-XL's relative sinusoid
table (Dai et al., 2019) and KERPLE's log and power kernels (Chi et al.,
2022).  ALiBi's slopes and biases live in :mod:`posenc.alibi` (and are
importable from here as before).

Conventions shared by every function here:

* the relative position of key ``j`` seen from query ``i`` is
  ``j - (i + offset)`` (key minus query, as in Hugging Face's T5);
* the queries are, by default, the *last* ``query_len`` of the
  ``key_len`` positions (``offset = key_len - query_len``): the layout of
  incremental decoding with a key/value cache;
* integer outputs keep an integer dtype (the namespace's default integer
  dtype unless ``dtype`` says otherwise); floating outputs follow the float
  rules of the package (computed in at least float32, cast at the end).

Matrices that depend on ``j - i`` only (Toeplitz matrices) are computed as a
vector over the ``query_len + key_len - 1`` distinct distances and gathered
into place, so costly element functions (``log``, ``pow``) run once per
distance, not once per (query, key) pair.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from . import _angles, _cache, _checks, _compat, _exact
from ._compat import Array, Context
from ._relative import (
    array_args,
    check_per_head,
    check_positive,
    check_span,
    float_dtype_of,
    float_param,
    iinfo,
    int_dtype,
    is_traced,
    lengths,
    query_offset,
    rel_matrix,
    rel_range,
    rel_vector,
    toeplitz,
)
from ._tables import kept_on_devices
from ._trace import host_constant

# ALiBi moved to posenc.alibi; posenc.bias.alibi_bias (and the rest) still import from here
from .alibi import ALIBI_FORMS, alibi_bias, alibi_slopes  # noqa: F401

__all__ = [
    "relative_positions",
    "alibi_slopes",
    "alibi_bias",
    "t5_bucket",
    "t5_buckets",
    "relative_sinusoidal",
    "kerple_bias",
]

KERPLE_KINDS = ("log", "power")
#: above this ``max_distance``-sized bound T5 buckets count thresholds instead
#: of looking them up in a table of ``2 * top + 1`` entries
_TABLE_LIMIT = 2**16


# --------------------------------------------------------------------------
# relative positions (Shaw et al.)
# --------------------------------------------------------------------------
@kept_on_devices
def relative_positions(
    query_len: int,
    key_len: int | None = None,
    *,
    offset: int | None = None,
    max_distance: int | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    """The ``(query_len, key_len)`` matrix of relative positions ``j - i``.

    Entry ``[i, j]`` is ``j - (i + offset)``: key position minus query
    position, negative for keys in the past.

    Parameters
    ----------
    query_len : int
        Number of queries.
    key_len : int, optional
        Number of keys (default: ``query_len``).
    offset : int or 0-d int array, optional
        Position of the first query on the key axis.  Default
        ``key_len - query_len``: the queries are the last ``query_len`` of
        the ``key_len`` positions, as when decoding with a key/value cache
        (``offset`` is then the number of cached tokens).  Pass ``0`` for
        queries that start with the keys.  It may be traced (a 0-d integer
        array under ``jax.jit``, a ``SymInt`` or tensor under
        ``torch.compile``): the output's shape does not depend on it.
    max_distance : int, optional
        Clip to ``[-max_distance, max_distance]`` (Shaw et al.'s ``k``).
        Add ``max_distance`` to get indices into a table of
        ``2 * max_distance + 1`` learned relative embeddings.
    dtype : int dtype, optional
        Output dtype (default: the namespace's default integer dtype, int32
        on JAX without x64).
    device, xp
        Output device and array namespace (default NumPy).

    Returns
    -------
    array
        Integer array of shape ``(query_len, key_len)``.

    See Also
    --------
    t5_buckets : The same matrix bucketed as in T5.

    References
    ----------
    .. [1] P. Shaw, J. Uszkoreit, A. Vaswani, "Self-attention with relative position
           representations", NAACL 2018, https://doi.org/10.18653/v1/N18-2074

    Examples
    --------
    >>> import posenc
    >>> posenc.relative_positions(3)
    array([[ 0,  1,  2],
           [-1,  0,  1],
           [-2, -1,  0]])

    One new query after four cached tokens, clipped to distance 2:

    >>> posenc.relative_positions(1, 5, max_distance=2)
    array([[-2, -2, -2, -1,  0]])
    """
    ctx = _compat.resolve(array_args(offset), xp=xp, device=device, dtype=dtype, float_output=False)
    q, k = lengths(query_len, key_len)
    off = query_offset(offset, q, k, ctx)
    if max_distance is not None:
        max_distance = _checks.check_int(max_distance, "max_distance", minimum=0)
    out_t = int_dtype(dtype, ctx)
    _checks.check_size((q, k), "matrix")
    if q == 0 or k == 0:
        return _angles.zeros((q, k), out_t, ctx)
    check_span(off, off + q - 1, out_t, ctx, "query positions")
    check_span(*rel_range(q, k, off), out_t, ctx, "relative positions")
    rel = rel_matrix(q, k, off, ctx, out_t)
    if max_distance is not None:
        lo, hi = rel_range(q, k, off)
        if is_traced(off) or lo < -max_distance or hi > max_distance:
            rel = ctx.xp.clip(rel, -max_distance, max_distance)
    return rel


# --------------------------------------------------------------------------
# T5 buckets (Raffel et al.)
# --------------------------------------------------------------------------
def _t5_large(n: int, max_exact: int, max_distance: int, num_buckets: int) -> int:
    """Mesh TensorFlow's / Hugging Face's large-distance bucket of ``n >= max_exact``,
    evaluated the way they do it: in float32, then truncated toward zero."""
    f32 = np.float32
    x = f32(n) / f32(max_exact)
    v = f32(math.log(float(x)))  # float32 log, correctly rounded
    v = v / f32(math.log(max_distance / max_exact)) * f32(num_buckets - max_exact)
    return max_exact + int(v)


@host_constant
def _t5_thresholds(num_buckets: int, max_distance: int) -> tuple[int, ...]:
    """The cached thresholds (a constant for torch's tracer, which calls this
    once instead of tracing the search)."""
    return _t5_thresholds_cached(num_buckets, max_distance)


@_cache.memoize(128)
def _t5_thresholds_cached(num_buckets: int, max_distance: int) -> tuple[int, ...]:
    """For each bucket ``b`` above ``max_exact``: the smallest distance that
    reaches it.  The float32 formula is monotone in the distance, so a
    distance ``n >= max_exact`` falls in ``max_exact + #{t <= n}``."""
    me = num_buckets // 2
    out = []
    for b in range(me + 1, num_buckets):
        lo, hi = me, 2 * max_distance + 16
        while _t5_large(hi, me, max_distance, num_buckets) < b:
            hi *= 2
        while lo < hi:
            mid = (lo + hi) // 2
            if _t5_large(mid, me, max_distance, num_buckets) >= b:
                hi = mid
            else:
                lo = mid + 1
        out.append(lo)
    return tuple(out)


def _t5_args(num_buckets: Any, max_distance: Any, bidirectional: Any) -> tuple[int, int, bool]:
    bidirectional = _checks.check_bool(bidirectional, "bidirectional")
    nb = _checks.check_int(num_buckets, "num_buckets")
    if bidirectional and (nb < 4 or nb % 2):
        msg = f"`num_buckets` must be an even integer >= 4 when `bidirectional` is True, got {nb!r}"
        raise ValueError(msg)
    if nb < 2:
        msg = f"`num_buckets` must be an integer >= 2, got {nb!r}"
        raise ValueError(msg)
    md = _checks.check_int(max_distance, "max_distance")
    if md <= nb // 2:
        msg = f"`max_distance` must be greater than `num_buckets` // 2 = {nb // 2}, got {md!r}"
        raise ValueError(msg)
    return nb, md, bidirectional


@_cache.memoize(64)
def _t5_table(num_buckets: int, max_distance: int, bidirectional: bool) -> tuple[int, np.ndarray]:
    """``(top, table)``: the bucket of every relative position in ``[-top, top]``.

    Every distance at or beyond ``top`` (the last threshold) shares the last
    bucket, so clipping to ``[-top, top]`` changes no bucket.
    """
    nbe = num_buckets // 2 if bidirectional else num_buckets
    me = nbe // 2
    thr = np.asarray(_t5_thresholds(nbe, max_distance), dtype=np.int64)
    top = int(thr[-1]) if thr.size else me
    n = np.arange(top + 1, dtype=np.int64)
    side = np.minimum(n, me) + np.searchsorted(thr, n, side="right")  # buckets of distances 0 .. top
    past = side[::-1]  # relative positions -top .. 0
    if bidirectional:
        future = side[1:] + nbe  # relative positions 1 .. top
    else:
        future = np.zeros(top, dtype=np.int64)
    table = np.concatenate([past, future])
    table.setflags(write=False)
    return top, table


def _t5_core(rel: Array, nb: int, md: int, bidirectional: bool, ctx: Context, out_t: Any) -> Array:
    """Buckets of the integer array ``rel`` (key - query): clip, then one lookup.

    Clipping comes first, so nothing is negated or cast before it is small
    (no overflow at the most negative integer, no ``log(0)``), and the lookup
    table holds the reference's float32 buckets exactly.
    """
    xp = ctx.xp
    nbe = nb // 2 if bidirectional else nb
    thr = _t5_thresholds(nbe, md)
    if thr and thr[-1] > _TABLE_LIMIT or ctx.traced:
        # while torch traces: comparisons with Python ints, no host table
        return _t5_core_compare(rel, nbe, thr, bidirectional, ctx, out_t)
    top, table = _t5_table(nb, md, bidirectional)
    idt = _compat.default_dtype(ctx.xp, ctx.device, "indexing")
    rmin, rmax = iinfo(xp, rel.dtype)
    r = xp.clip(rel, max(-top, rmin), min(top, rmax))
    idx = _angles.cast(r, idt, xp) + top
    shape = tuple(rel.shape)
    looked = xp.take(ctx.from_host(table, out_t), xp.reshape(idx, (-1,)), axis=0)
    return xp.reshape(looked, shape)


def _t5_core_compare(
    rel: Array, nbe: int, thr: tuple[int, ...], bidirectional: bool, ctx: Context, out_t: Any
) -> Array:
    """The same buckets by counting thresholds (for very large ``max_distance``)."""
    xp = ctx.xp
    me = nbe // 2
    wdt = _compat.default_dtype(ctx.xp, ctx.device, "indexing")
    rmin, rmax = iinfo(xp, rel.dtype)
    _, wmax = iinfo(xp, wdt)
    top = min(thr[-1] if thr else me, rmax, wmax)
    hi = top if bidirectional else 0
    r = _angles.cast(xp.clip(rel, max(-top, rmin), min(hi, rmax)), wdt, xp)
    n = xp.abs(r)
    out = xp.clip(n, None, me)
    for t in thr:
        if t <= top:
            out = out + _angles.cast(n >= t, wdt, xp)
    if bidirectional:
        out = out + _angles.cast(r > 0, wdt, xp) * nbe
    return _angles.cast(out, out_t, xp)


def _check_bucket_dtype(out_t: Any, nb: int, ctx: Context) -> None:
    _, dmax = iinfo(ctx.xp, out_t)
    if dmax < nb - 1:
        msg = f"`dtype` {out_t} cannot hold bucket {nb - 1} of num_buckets={nb}"
        raise ValueError(msg)


def t5_bucket(
    relative_positions: Array,
    *,
    num_buckets: int = 32,
    max_distance: int = 128,
    bidirectional: bool = True,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""T5's relative position buckets (Raffel et al., 2020) of an integer array.

    Bit-identical to Hugging Face's ``T5Attention._relative_position_bucket``
    (and Mesh TensorFlow's): with :math:`B` = ``num_buckets`` (halved when
    bidirectional, the upper half then holding the positive distances),
    distances below :math:`B/2` get their own bucket and larger ones share
    log-spaced buckets up to ``max_distance``, beyond which all share the
    last bucket.

    Parameters
    ----------
    relative_positions : int array or list
        ``key - query`` positions (see :func:`relative_positions`), any
        shape.  Floating arrays are a :class:`TypeError`: round them
        yourself.
    num_buckets : int, default 32
        Total number of buckets; even and at least 4 when bidirectional.
    max_distance : int, default 128
        Distances from here on share the last bucket; must exceed
        ``num_buckets // 2``.
    bidirectional : bool, default True
        ``True`` for encoders (T5's encoder and its relative attention
        bias); ``False`` for decoders, where keys after the query
        (positive relative positions) all fall in bucket 0.
    dtype : int dtype, optional
        Output dtype; default the namespace's default indexing dtype (int64,
        int32 on JAX without x64), ready for ``take`` or an embedding lookup.
    device, xp
        For list inputs only; arrays decide both.

    Returns
    -------
    array
        Buckets in ``[0, num_buckets)``, same shape as the input.

    Notes
    -----
    The reference evaluates, for a distance :math:`n \ge B/2`,
    ``B/2 + int(log(float32(n) / (B/2)) / log(max_distance / (B/2)) *
    (B - B/2))`` in float32.  posenc finds once, on the host, the smallest
    distance that reaches each of those buckets under exactly that float32
    arithmetic (with a correctly rounded float32 logarithm), and turns them
    into a table of the buckets of every relative position up to the last
    threshold.  On the device the input is clipped to that range and looked
    up: no logarithm, nothing negated or cast before it is clipped (so
    ``log(0) = -inf`` never meets an integer cast and the most negative
    integer cannot overflow), and the same buckets on every backend, with
    or without float64.

    The result equals Hugging Face's (PyTorch, CPU) at every distance for
    the usual configurations (``num_buckets=32, max_distance=128``, both
    directions, and every other one tested).  A sweep of 47,212
    configurations (``num_buckets`` up to 128, ``max_distance`` up to 4096)
    found 20 where one or two distances differ: distances that lie exactly
    on a bucket boundary of the real-number formula (``27 / 8 = 1.5**3``
    with 17 buckets, for example), where the reference's float32 result
    depends on the last bit of the platform's float32 ``log`` (PyTorch,
    NumPy and JAX evaluating the reference formula disagree with each other
    at those points too).

    References
    ----------
    .. [1] C. Raffel et al., "Exploring the limits of transfer learning with a unified
           text-to-text transformer", JMLR 21(140), 2020,
           https://arxiv.org/abs/1910.10683

    Examples
    --------
    >>> import numpy as np, posenc
    >>> rel = np.array([-200, -20, -3, 0, 3, 20, 200])
    >>> posenc.t5_bucket(rel)
    array([15, 10,  3,  0, 19, 26, 31])
    >>> posenc.t5_bucket(rel, bidirectional=False)
    array([31, 17,  3,  0,  0,  0,  0])
    """
    arrays = {"relative_positions": relative_positions}
    ctx = _compat.resolve(arrays, xp=xp, device=device, dtype=dtype, float_output=False)
    nb, md, bidirectional = _t5_args(num_buckets, max_distance, bidirectional)
    rel = _checks.check_int_array(relative_positions, "relative_positions", ctx)
    _checks.check_size(tuple(rel.shape), "buckets")
    out_t = int_dtype(dtype, ctx, "indexing")
    _check_bucket_dtype(out_t, nb, ctx)
    return _t5_core(rel, nb, md, bidirectional, ctx, out_t)


@kept_on_devices
def t5_buckets(
    query_len: int,
    key_len: int | None = None,
    *,
    offset: int | None = None,
    num_buckets: int = 32,
    max_distance: int = 128,
    bidirectional: bool = True,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    """T5's bucket matrix: :func:`t5_bucket` of :func:`relative_positions`.

    The ``(query_len, key_len)`` matrix that T5's ``compute_bias`` feeds to
    its ``relative_attention_bias`` embedding.  Hugging Face's
    ``past_seen_tokens`` is ``offset`` here (default ``key_len -
    query_len``: the queries are the last ones).

    Parameters
    ----------
    query_len, key_len, offset
        As in :func:`relative_positions`.
    num_buckets, max_distance, bidirectional
        As in :func:`t5_bucket`.
    dtype, device, xp
        Integer output dtype (default: the namespace's default indexing
        dtype), device and namespace.

    Returns
    -------
    array
        Integer array of shape ``(query_len, key_len)``.

    Notes
    -----
    The matrix depends on ``j - i`` only: the ``query_len + key_len - 1``
    distinct buckets are computed once and gathered into place.

    References
    ----------
    .. [1] C. Raffel et al., "Exploring the limits of transfer learning with a unified
           text-to-text transformer", JMLR 21(140), 2020,
           https://arxiv.org/abs/1910.10683

    Examples
    --------
    >>> import posenc
    >>> posenc.t5_buckets(4, num_buckets=8, max_distance=16)
    array([[0, 5, 6, 6],
           [1, 0, 5, 6],
           [2, 1, 0, 5],
           [2, 2, 1, 0]])

    A decoder query at position 200 after 200 cached tokens:

    >>> posenc.t5_buckets(1, 201, bidirectional=False)[0, [0, 100, 180, 199, 200]]
    array([31, 30, 17,  1,  0])
    """
    ctx = _compat.resolve(array_args(offset), xp=xp, device=device, dtype=dtype, float_output=False)
    q, k = lengths(query_len, key_len)
    off = query_offset(offset, q, k, ctx)
    nb, md, bidirectional = _t5_args(num_buckets, max_distance, bidirectional)
    out_t = int_dtype(dtype, ctx, "indexing")
    _check_bucket_dtype(out_t, nb, ctx)
    _checks.check_size((q, k), "matrix")
    if q == 0 or k == 0:
        return _angles.zeros((q, k), out_t, ctx)
    idt = _compat.default_dtype(ctx.xp, ctx.device, "indexing")
    check_span(*rel_range(q, k, off), idt, ctx, "relative positions")
    vec = _t5_core(rel_vector(q, k, off, ctx, idt), nb, md, bidirectional, ctx, out_t)
    return toeplitz(vec, q, k, ctx)


# --------------------------------------------------------------------------
# Transformer-XL's relative sinusoids (Dai et al.)
# --------------------------------------------------------------------------
@host_constant
def _xl_freqs(dim: int, base: float) -> _angles.Freqs:
    """``base ** (-2i / dim)`` in float64 (a constant for torch's tracer)."""
    return _angles.Freqs.exact(*_exact.evaluate(_exact.geometric, base, Fraction(2, dim), dim // 2))


@kept_on_devices
def relative_sinusoidal(
    query_len: int,
    key_len: int | None = None,
    *,
    dim: int,
    base: float = 10000.0,
    clamp_len: int | None = None,
    bidirectional: bool = False,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""Transformer-XL's sinusoid table of relative distances (Dai et al., 2019).

    Row ``r`` encodes the distance :math:`\delta_r = \text{key\_len} - 1 - r`
    (largest distance first, down to 0) with the concatenated layout
    ``[sin(δ ω) | cos(δ ω)]``, :math:`\omega_i = \mathrm{base}^{-2i/d}`:
    the ``pos_emb`` of Transformer-XL's ``RelPartialLearnable`` attention,
    whose "relative shift" then aligns row ``key_len - 1 - (p - j)`` with
    query position ``p`` and key ``j``.  ``key_len`` counts the memory
    (``mlen + qlen``).

    Parameters
    ----------
    query_len : int
        Number of queries; only the bidirectional table depends on it.
    key_len : int, optional
        Number of keys, memory included (default ``query_len``).
    dim : int
        Feature dimension (``d_model``), a positive even integer.
    base : float, default 10000.0
        Frequency base.
    clamp_len : int, optional
        Clip the distances to ``[-clamp_len, clamp_len]`` (Transformer-XL's
        and XLNet's ``clamp_len``).
    bidirectional : bool, default False
        Also encode the negative distances down to ``-(query_len - 1)``:
        rows for ``key_len - 1, ..., 0, ..., -(query_len - 1)``, the distances
        a query attending to later keys needs (XLNet's ``attn_type="bi"``
        table, distances ``key_len`` down to ``-(query_len - 1)``, without
        its first row, which its relative shift discards).  The row count
        is ``key_len + query_len - 1`` for all lengths, as in XLNet, even
        when one of them is 0 (no rows only when both are).
    dtype, device, xp
        Output floating dtype, device and namespace.

    Returns
    -------
    array
        Shape ``(key_len, dim)``, or ``(key_len + query_len - 1, dim)`` when
        bidirectional.

    Notes
    -----
    The sines and cosines come from posenc's exact angles: a float32 table
    stays within a few ulp of the float64 values at every distance.

    References
    ----------
    .. [1] Z. Dai et al., "Transformer-XL: attentive language models beyond a fixed-
           length context", ACL 2019, https://doi.org/10.18653/v1/P19-1285

    Examples
    --------
    >>> import posenc
    >>> posenc.relative_sinusoidal(3, dim=4).round(4)
    array([[ 0.9093,  0.02  , -0.4161,  0.9998],
           [ 0.8415,  0.01  ,  0.5403,  1.    ],
           [ 0.    ,  0.    ,  1.    ,  1.    ]])
    >>> posenc.relative_sinusoidal(2, 3, dim=4, bidirectional=True).shape
    (4, 4)
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    q, k = lengths(query_len, key_len)
    dim = _checks.check_dim(dim, even=True)
    base = _checks.check_float(base, "base", positive=True)
    bidirectional = _checks.check_bool(bidirectional, "bidirectional")
    if clamp_len is not None:
        clamp_len = _checks.check_int(clamp_len, "clamp_len", minimum=0)
    # distances k - 1 down to lo: XLNet's table (``arange(klen, end, -1)``,
    # end = -qlen bidirectional, -1 otherwise) without its first row, for
    # every q and k (its row count does not depend on whether pairs exist)
    hi, lo = k - 1, (-(q - 1) if bidirectional else 0)
    rows = max(hi - lo + 1, 0)
    _checks.check_size((rows, dim), "table")
    xp_ = ctx.xp
    if rows == 0:
        return _angles.zeros((0, dim), ctx.dtype, ctx)
    w = _xl_freqs(dim, base)
    c_hi, c_lo = hi, lo
    if clamp_len is not None:
        c_hi, c_lo = (min(max(d, -clamp_len), clamp_len) for d in (hi, lo))
    s, c = _angles.sincos_range(c_lo, c_hi - c_lo + 1, w, ctx)
    table = xp_.flip(xp_.concat([s, c], axis=-1), axis=0)  # distances c_hi .. c_lo
    if c_hi == c_lo:  # one distinct (clamped) distance: every row is that one
        if rows > 1:  # concat: a new array, not a read-only broadcast view
            table = xp_.concat([xp_.broadcast_to(table, (rows - 1, dim)), table], axis=0)
    elif c_hi != hi or c_lo != lo:
        # c_hi > c_lo: the range crosses (-clamp_len, clamp_len), so the
        # distances above and below it are the clamped first and last rows
        parts = []
        if hi > c_hi:
            parts.append(xp_.broadcast_to(table[:1, ...], (hi - c_hi, dim)))
        parts.append(table)
        if c_lo > lo:
            parts.append(xp_.broadcast_to(table[-1:, ...], (c_lo - lo, dim)))
        table = xp_.concat(parts, axis=0)
    return _angles.cast(table, ctx.dtype, xp_)


# --------------------------------------------------------------------------
# KERPLE (Chi et al.)
# --------------------------------------------------------------------------
def kerple_bias(
    query_len: int,
    key_len: int | None = None,
    *,
    r1: Array,
    r2: Array,
    kind: str = "log",
    offset: int | None = None,
    causal: bool = False,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""KERPLE's kernelized relative position biases (Chi et al., 2022).

    .. math::

        \text{log:}\quad -r_1 \log(1 + r_2 |i - j|), \qquad
        \text{power:}\quad -r_1 |i - j|^{r_2}, \quad 0 < r_2 \le 2,

    with per-head parameters :math:`r_1, r_2 > 0`, added to the attention
    logits.  ALiBi is the power kernel with :math:`r_2 = 1`.

    Parameters
    ----------
    query_len : int
        Number of queries.
    key_len : int, optional
        Number of keys (default ``query_len``).
    r1, r2 : array
        Per-head parameters of shape ``(num_heads,)``.  Pass your
        framework's trainable tensors (a ``torch.nn.Parameter``, a JAX array
        under ``jax.grad``): gradients flow through.  Values must be
        positive (and ``r2 <= 2`` for the power kernel); this is checked on
        concrete arrays only, never on traced or lazy ones (clamp them in
        training as the KERPLE code does).
    kind : {"log", "power"}, default "log"
        Which kernel.
    offset : int or 0-d int array, optional
        Position of the first query; default ``key_len - query_len``.  May
        be traced, as in :func:`relative_positions`.
    causal : bool, default False
        Put ``-inf`` on the keys after each query.
    dtype, device, xp
        Output floating dtype (default: the dtype of ``r1`` and ``r2``,
        computed in at least float32), device and namespace (those of the
        parameters; for Python lists, ``xp`` and ``device``).

    Returns
    -------
    array
        Shape ``(num_heads, query_len, key_len)``.

    References
    ----------
    .. [1] T.-C. Chi, T.-H. Fan, P. J. Ramadge, A. I. Rudnicky, "KERPLE: kernelized
           relative positional embedding for length extrapolation", NeurIPS 2022,
           https://arxiv.org/abs/2205.09921

    Examples
    --------
    >>> import numpy as np, posenc
    >>> posenc.kerple_bias(3, r1=np.array([1.0, 2.0]), r2=np.array([1.0, 0.5])).round(4)
    array([[[ 0.    , -0.6931, -1.0986],
            [-0.6931,  0.    , -0.6931],
            [-1.0986, -0.6931,  0.    ]],
    <BLANKLINE>
           [[ 0.    , -0.8109, -1.3863],
            [-0.8109,  0.    , -0.8109],
            [-1.3863, -0.8109,  0.    ]]])
    >>> posenc.kerple_bias(1, 3, r1=np.array([0.5]), r2=np.array([2.0]), kind="power")
    array([[[-2. , -0.5,  0. ]]])
    """
    kind = _checks.check_choice(kind, "kind", KERPLE_KINDS)
    causal = _checks.check_bool(causal, "causal")
    q, k = lengths(query_len, key_len)
    if dtype is None:
        dtype = float_dtype_of({"r1": r1, "r2": r2}, xp, device)
    ctx = _compat.resolve({"r1": r1, "r2": r2, **array_args(offset)}, xp=xp, device=device, dtype=dtype)
    off = query_offset(offset, q, k, ctx)
    xp_ = ctx.xp
    for name, v in (("r1", r1), ("r2", r2)):
        if _compat.is_array(v):  # the shapes first (O(1)): a broadcast view may be huge
            heads = check_per_head(v, name)
            _checks.check_size((heads,), f"`{name}`", f"`{name}`")  # (its values are read below)
            _checks.check_size((heads, q, k), "bias", f"`{name}`, `query_len` or `key_len`")
    a = float_param(r1, "r1", ctx)
    b = float_param(r2, "r2", ctx)
    n = check_per_head(a, "r1")
    check_per_head(b, "r2", n)
    check_positive(a, "r1", ctx)
    check_positive(b, "r2", ctx, upper=2.0 if kind == "power" else None)
    _checks.check_size((n, q, k), "bias")
    if q == 0 or k == 0:
        return ctx.place(_angles.zeros((n, q, k), ctx.dtype, ctx), like=a)
    a = _angles.cast(a, ctx.work, xp_)[:, None]
    b = _angles.cast(b, ctx.work, xp_)[:, None]
    idt = _compat.default_dtype(ctx.xp, ctx.device, "integral")
    check_span(*rel_range(q, k, off), idt, ctx, "relative positions")
    rel = rel_vector(q, k, off, ctx, idt)
    d = _angles.cast(xp_.abs(rel), ctx.work, xp_)[None, :]
    f = xp_.log1p(b * d) if kind == "log" else xp_.pow(d, b)
    vec = 0.0 - a * f  # +0.0 on the diagonal
    if causal:
        vec = xp_.where((rel > 0)[None, :], -math.inf, vec)
    return _angles.cast(toeplitz(vec, q, k, ctx), ctx.dtype, xp_)
