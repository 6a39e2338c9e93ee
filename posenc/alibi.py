r"""ALiBi and its data-dependent relatives: attention biases linear in the distance.

ALiBi's per-head slopes and biases (Press et al., 2022, with BLOOM's and
MPT's equivalent forms), at the positions of a sequence of lengths or at any
given query and key positions (packed sequences, left padding, custom
positions), and the cumulative gate bias of the Forgetting Transformer (Lin
et al., 2025), a data-dependent ALiBi whose per-token slopes are learned
forget gates.

Positions follow :mod:`posenc.bias`: the relative position of key ``j``
seen from query ``i`` is ``j - (i + offset)``, with the queries, by default,
the last ``query_len`` of the ``key_len`` positions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _angles, _checks, _compat
from ._compat import Array, Context
from ._relative import (
    arange,
    array_args,
    check_per_head,
    check_span,
    float_dtype_of,
    float_param,
    head_count,
    iinfo,
    lengths,
    mask_future,
    query_offset,
    rel_matrix,
    rel_range,
)
from ._tables import kept_on_devices
from ._trace import graph_constant

__all__ = ["alibi_slopes", "alibi_bias", "cumulative_gate_bias"]

ALIBI_FORMS = ("paper", "bloom", "mpt")
#: head counts up to this get correctly rounded slopes from Python's ``**``
_SLOPES_EXACT = 2**16


# --------------------------------------------------------------------------
# slopes (Press et al.)
# --------------------------------------------------------------------------
def _slopes(n: int, max_bias: float, ctx: Context) -> Array:
    """ALiBi's slopes as a fresh ``ctx.work`` array (a graph constant while
    torch traces)."""
    return graph_constant(_host_slopes, n, max_bias, ctx=ctx, keep=False)


def _host_slopes(n: int, max_bias: float) -> np.ndarray:
    """Press et al.'s ``get_slopes`` in float64, generalised to ``max_bias``.

    With ``c`` the largest power of two ``<= n``: the ``c`` slopes
    ``2^(-max_bias * h / c)``, ``h = 1 .. c``, then the first ``n - c`` of
    the odd-numbered slopes of ``2c`` heads, ``2^(-max_bias * h / (2c))``,
    ``h = 1, 3, 5, ...``.  Up to ``_SLOPES_EXACT`` heads each slope is one
    correctly rounded Python power; beyond, NumPy's vectorised power (within
    an ulp) keeps the cost linear in C, not in Python.
    """
    c = 1 << (n.bit_length() - 1)
    if n <= _SLOPES_EXACT:
        slopes = [2.0 ** (-max_bias * h / c) for h in range(1, c + 1)]
        slopes += [2.0 ** (-max_bias * h / (2 * c)) for h in range(1, 2 * (n - c), 2)]
        return np.asarray(slopes, dtype=np.float64)
    first = np.arange(1, c + 1, dtype=np.float64)
    extra = np.arange(1, 2 * (n - c), 2, dtype=np.float64)
    return np.power(2.0, np.concatenate([(-max_bias * first) / c, (-max_bias * extra) / (2 * c)]))


def _check_max_bias(max_bias: Any) -> float:
    return _checks.check_float(max_bias, "max_bias", positive=True)


def alibi_slopes(
    num_heads: int,
    *,
    max_bias: float = 8.0,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""ALiBi's per-head slopes (Press et al., 2022) for any number of heads.

    For ``n`` a power of two the slopes are the geometric sequence
    :math:`m_h = 2^{-8h/n}`, :math:`h = 1, \dots, n` (``1/2, 1/4, ...,
    1/256`` for 8 heads).  For other head counts the reference ``get_slopes``
    takes the slopes of the closest power of two below, ``c``, and then every
    other slope (the 1st, 3rd, 5th, ...) of the ``2c`` sequence, so the
    extra heads interleave between the first ones.

    Parameters
    ----------
    num_heads : int
        Number of attention heads (at least 1).
    max_bias : float, default 8.0
        The ``8`` of :math:`2^{-8h/n}`; MPT's ``alibi_bias_max``.
    dtype, device, xp
        Output floating dtype (default: the namespace's default float),
        device and namespace.

    Returns
    -------
    array
        Shape ``(num_heads,)``, decreasing within each of the two groups.

    Notes
    -----
    The slopes are computed on the host in float64 with Python's ``math``
    and rounded once to the output dtype.  BLOOM (``_get_alibi_slopes``) and
    MPT (``build_mpt_alibi_tensor``, which orders the odd and even slopes of
    the next power of two) produce the same slopes.

    References
    ----------
    .. [1] O. Press, N. A. Smith, M. Lewis, "Train short, test long: attention with
           linear biases enables input length extrapolation", ICLR 2022,
           https://arxiv.org/abs/2108.12409

    Examples
    --------
    >>> import posenc
    >>> posenc.alibi_slopes(8)
    array([0.5       , 0.25      , 0.125     , 0.0625    , 0.03125   ,
           0.015625  , 0.0078125 , 0.00390625])
    >>> posenc.alibi_slopes(12)[8:].round(5)
    array([0.70711, 0.35355, 0.17678, 0.08839])
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    n = head_count(num_heads)
    max_bias = _check_max_bias(max_bias)
    return _angles.cast(_slopes(n, max_bias, ctx), ctx.dtype, ctx.xp)


# --------------------------------------------------------------------------
# ALiBi biases
# --------------------------------------------------------------------------
def _position_arrays(positions: Any) -> tuple[Any, Any]:
    """``(query positions, key positions)``: a pair of arrays, or one array for both."""
    if isinstance(positions, (tuple, list)) and any(
        _compat.is_array(p) or isinstance(p, (tuple, list)) for p in positions
    ):
        # a sequence of sequences: a (query, key) pair of arrays, nothing else
        # (nested lists could be read as a pair or as a batch)
        if len(positions) != 2 or not all(_compat.is_array(p) for p in positions):
            msg = (
                "`positions` must be one array of shape (..., n) or a pair (query positions, key positions) of "
                f"arrays, got a {type(positions).__name__} of {len(positions)} items that are not both arrays"
            )
            raise TypeError(msg)
        return positions[0], positions[1]
    return positions, positions


def _position_array(p: Any, ctx: Context) -> Array:
    """Integer or real floating positions of shape ``(..., n)`` (lists converted)."""
    if not (_compat.is_array(p) or isinstance(p, (list, tuple))):
        msg = (
            "`positions` must be an array of shape (..., n), or a pair (query positions, key positions) of them, "
            f"got {_checks.show(p)}"
        )
        raise TypeError(msg)
    x = _checks.check_positions(p, "positions", ctx)
    if x.ndim == 0:
        msg = f"`positions` must have shape (..., n), got {_checks.show(x)}"
        raise ValueError(msg)
    return x


def _int_positions(x: Array, ctx: Context) -> Array:
    """Integer positions in the default integer dtype, refused where a
    difference of two of them could overflow it (concrete arrays only)."""
    xp = ctx.xp
    idt = _compat.default_dtype(xp, ctx.device, "integral")
    concrete = _compat.is_concrete(x)
    x = _angles.cast(x, idt, xp)
    if concrete and math.prod(x.shape):
        bound = (iinfo(xp, idt)[1] + 1) // 4
        lo, hi = int(xp.min(x)), int(xp.max(x))
        if lo < -bound or hi >= bound:
            msg = (
                f"`positions` must lie in [-{bound}, {bound}) (their differences must fit in {idt}), "
                f"got values in [{lo}, {hi}]"
            )
            raise ValueError(msg)
    return x


def _positions_shape(qp: Array, kp: Array, n: int, form: str, causal: bool) -> tuple[int, ...]:
    """The bias's shape ``batch + (heads, rows, k)`` for query and key positions."""
    batch = _checks.broadcast_shapes(tuple(qp.shape[:-1]), tuple(kp.shape[:-1]))
    if batch is None:
        msg = (
            f"`positions` of the queries {tuple(qp.shape)} and of the keys {tuple(kp.shape)} must have "
            "batch axes that broadcast (shapes (..., q) and (..., k))"
        )
        raise ValueError(msg)
    rows = qp.shape[-1] if (form == "paper" or causal) else 1
    return (*batch, n, rows, kp.shape[-1])


def _at_positions(
    m: Array, qp: Array, kp: Array, shape: tuple[int, ...], form: str, causal: bool, ctx: Context
) -> Array:
    """ALiBi at given positions, of ``shape`` (:func:`_positions_shape`), in ``ctx.work``."""
    xp = ctx.xp
    if math.prod(shape) == 0:
        return _angles.zeros(shape, ctx.dtype, ctx)
    ints = _compat.is_integer_dtype(xp, qp.dtype) and _compat.is_integer_dtype(xp, kp.dtype)
    same = kp is qp
    if ints:
        qp = _int_positions(qp, ctx)
        kp = qp if same else _int_positions(kp, ctx)
    else:
        f64 = ctx.float64 and xp.float64 in (qp.dtype, kp.dtype, ctx.work)
        ft = xp.float64 if f64 else xp.float32
        qp = _angles.cast(qp, ft, xp)
        kp = qp if same else _angles.cast(kp, ft, xp)
    d = kp[..., None, :] - qp[..., :, None]  # key minus query, (..., q, k), exact for integers
    if form == "paper":
        # 0 - |d|: +0.0 where the positions coincide, never -0.0
        nd = _angles.cast(-xp.abs(d), ctx.work, xp) if ints else _angles.cast(0.0 - xp.abs(d), ctx.work, xp)
        out = m[:, None, None] * nd[..., None, :, :]
    else:  # BLOOM: m * (key position), over the batch axes of both arrays
        out = m[:, None, None] * _angles.cast(kp, ctx.work, xp)[..., None, None, :]
        if causal:
            out = xp.broadcast_to(out, shape)
        elif tuple(out.shape) != shape:
            # the queries' batch axes (their values do not matter here): a
            # dense array of its own, as the paper's form returns
            out = xp.asarray(xp.broadcast_to(out, shape), copy=True)
    if causal:
        out = xp.where((d > 0)[..., None, :, :], -math.inf, out)
    return out


@kept_on_devices
def alibi_bias(
    num_heads: int,
    query_len: int | None = None,
    key_len: int | None = None,
    *,
    offset: int | None = None,
    positions: Array | tuple[Array, Array] | None = None,
    form: str = "paper",
    causal: bool = False,
    slopes: Array | None = None,
    max_bias: float | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""ALiBi attention bias: :math:`-m_h\,|i - j|` per head (Press et al., 2022).

    Add it to the attention logits :math:`q_i \cdot k_j / \sqrt{d}` before
    the softmax; there is no position embedding.  The queries and keys are
    either the positions of sequences of ``query_len`` and ``key_len``
    tokens, or any ``positions`` (packed sequences, left padding, positions
    of your own).

    Parameters
    ----------
    num_heads : int
        Number of heads.
    query_len : int
        Number of queries (not with ``positions``).
    key_len : int, optional
        Number of keys (default ``query_len``).
    offset : int or 0-d int array, optional
        Position of the first query on the key axis; default
        ``key_len - query_len`` (the queries are the last ones, as with a
        key/value cache).  May be traced.  See :func:`relative_positions`.
    positions : array or (array, array), optional
        Instead of lengths: the positions of the tokens, an integer or real
        floating array of shape ``(..., n)`` for queries and keys alike
        (self-attention), or a pair ``(query_positions, key_positions)`` of
        shapes ``(..., q)`` and ``(..., k)`` whose leading (batch) axes
        broadcast.  The bias of query :math:`i` and key :math:`j` is
        :math:`-m_h |p^k_j - p^q_i|`, of shape ``batch + (num_heads, q,
        k)``, the layout of batched attention logits: packed sequences
        whose positions restart at every document, BLOOM's positions under
        left padding (``(cumsum(mask) - 1) * mask``), x-transformers'
        ``AlibiPositionalBias.forward_custom_pos``.  Integer positions are
        subtracted exactly.
    form : {"paper", "bloom", "mpt"}
        ``"paper"``: :math:`-m_h |j - (i + \text{offset})|`, shape
        ``(num_heads, query_len, key_len)``, zero on the diagonal and
        symmetric, so it also serves bidirectional encoders.
        ``"bloom"``: :math:`m_h\,j` (BLOOM's ``build_alibi_tensor`` and the
        reference repository), shape ``(num_heads, 1, key_len)``; with
        ``positions``, :math:`m_h\,p^k_j`, shape ``batch + (num_heads, 1,
        k)`` (BLOOM's tensor for a padded batch).
        ``"mpt"``: :math:`m_h\,(j - (\text{key\_len} - 1))` (MPT's
        ``build_mpt_alibi_tensor``), shape ``(num_heads, 1, key_len)``;
        not with ``positions``.
        The last two broadcast over the queries and equal the paper's form
        only after a softmax over the causal keys (see Notes).
    causal : bool, default False
        Put ``-inf`` on the keys after each query (``j > i + offset``, or a
        key position greater than the query's): the result is a ready
        causal mask plus bias of shape ``(num_heads, query_len, key_len)``
        (``batch + (num_heads, q, k)``) for every ``form``.
    slopes : array, optional
        Slopes of shape ``(num_heads,)`` to use instead of
        :func:`alibi_slopes` (learned or custom slopes; gradients flow to
        them).  The output then follows their namespace, device and, unless
        ``dtype`` is given, their dtype.  They are not checked for NaN or
        inf (learned parameters, often on a device): such a slope gives NaN
        or inf entries in its head.
    max_bias : float, optional
        ``max_bias`` of :func:`alibi_slopes` (default 8.0); not with
        ``slopes``.
    dtype, device, xp
        Output floating dtype, device and namespace (those of
        ``positions`` when given).

    Returns
    -------
    array
        ``(num_heads, query_len, key_len)``, or ``(num_heads, 1, key_len)``
        for the ``"bloom"`` and ``"mpt"`` forms without ``causal``; with
        ``positions``, ``batch + (num_heads, q, k)`` (``batch + (num_heads,
        1, k)`` for ``"bloom"`` without ``causal``).

    Notes
    -----
    A softmax is unchanged when a constant is added to every logit of a
    row.  For query :math:`i` (at key position :math:`p = i + \text{offset}`)
    the causal keys are :math:`j \le p`, where

    .. math::

        -m_h |j - p| = m_h (j - p) = m_h\,j - m_h\,p
        = m_h\,(j - (L - 1)) - m_h\,(p - (L - 1)),

    so the paper's form, BLOOM's :math:`m_h j` (also the form of the
    reference repository, which adds it to its causal mask) and MPT's
    :math:`m_h (j - (L - 1))` differ by a per-row constant on the causal
    keys and give the same attention probabilities.  They differ on the
    future keys (the broadcast forms must be combined with a causal mask)
    and in rounding: the paper's form stays small near the diagonal, where
    the attention mass is, while BLOOM's grows with the key position, so in
    bfloat16 the paper's form keeps more of the nearby differences.

    References
    ----------
    .. [1] O. Press, N. A. Smith, M. Lewis, "Train short, test long: attention with
           linear biases enables input length extrapolation", ICLR 2022,
           https://arxiv.org/abs/2108.12409

    Examples
    --------
    >>> import numpy as np, posenc
    >>> posenc.alibi_bias(2, 3)
    array([[[ 0.        , -0.0625    , -0.125     ],
            [-0.0625    ,  0.        , -0.0625    ],
            [-0.125     , -0.0625    ,  0.        ]],
    <BLANKLINE>
           [[ 0.        , -0.00390625, -0.0078125 ],
            [-0.00390625,  0.        , -0.00390625],
            [-0.0078125 , -0.00390625,  0.        ]]])
    >>> posenc.alibi_bias(2, 1, 4, form="bloom")[0]
    array([[0.    , 0.0625, 0.125 , 0.1875]])
    >>> posenc.alibi_bias(1, 2, causal=True, max_bias=1.0)
    array([[[ 0. , -inf],
            [-0.5,  0. ]]])

    Two documents packed in one row, positions restarting at the second:

    >>> pos = np.array([[0, 1, 2, 0, 1]])
    >>> posenc.alibi_bias(1, positions=pos, max_bias=1.0)[0, 0]
    array([[ 0. , -0.5, -1. ,  0. , -0.5],
           [-0.5,  0. , -0.5, -0.5,  0. ],
           [-1. , -0.5,  0. , -1. , -0.5],
           [ 0. , -0.5, -1. ,  0. , -0.5],
           [-0.5,  0. , -0.5, -0.5,  0. ]])
    """
    form = _checks.check_choice(form, "form", ALIBI_FORMS)
    causal = _checks.check_bool(causal, "causal")
    n = head_count(num_heads)
    if positions is not None:
        for name, value in (("query_len", query_len), ("key_len", key_len), ("offset", offset)):
            if value is not None:
                msg = f"`{name}` and `positions` exclude each other: the positions say where the tokens are"
                raise ValueError(msg)
        if form == "mpt":
            msg = "`form` 'mpt' takes no `positions` (MPT's bias depends on the key length only): use 'paper', 'bloom'"
            raise ValueError(msg)
    elif query_len is None:
        msg = "`query_len` (or `positions`) must be given"
        raise TypeError(msg)
    if slopes is not None and max_bias is not None:
        msg = "`max_bias` and `slopes` exclude each other: the slopes are given"
        raise ValueError(msg)
    if dtype is None and _compat.is_array(slopes):
        dtype = float_dtype_of({"slopes": slopes}, xp, device)
    qp = kp = None
    if positions is not None:
        qp, kp = _position_arrays(positions)
        arrays = {"slopes": slopes, "positions": qp}
        if kp is not qp:
            arrays["key positions"] = kp
    else:
        arrays = {"slopes": slopes, **array_args(offset)}
    ctx = _compat.resolve(arrays, xp=xp, device=device, dtype=dtype)
    xp_ = ctx.xp
    if positions is not None:
        qp = _position_array(qp, ctx)
        kp = qp if kp is positions else _position_array(kp, ctx)
    if qp is not None:
        shape = _positions_shape(qp, kp, n, form, causal)
        # (before the slopes of a huge head count are made)
        _checks.check_size(shape, "bias", "`num_heads` or `positions`")
        m = _head_slopes(n, slopes, max_bias, ctx)
        return _angles.cast(_at_positions(m, qp, kp, shape, form, causal, ctx), ctx.dtype, xp_)
    q, k = lengths(query_len, key_len)
    off = query_offset(offset, q, k, ctx)
    rows = q if (form == "paper" or causal) else 1
    _checks.check_size((n, rows, k), "bias", "`num_heads`, `query_len` or `key_len`")
    m = _head_slopes(n, slopes, max_bias, ctx)
    if rows == 0 or k == 0:
        return _angles.zeros((n, rows, k), ctx.dtype, ctx)
    idt = _compat.default_dtype(ctx.xp, ctx.device, "integral")
    if form == "paper":
        check_span(*rel_range(q, k, off), idt, ctx, "relative positions")
        # -|r| as integers, so the diagonal is +0.0, not -0.0; one multiply
        # per element (cheaper than gathering a Toeplitz vector)
        nd = _angles.cast(-xp_.abs(rel_matrix(q, k, off, ctx, idt)), ctx.work, xp_)
        out = m[:, None, None] * nd[None, ...]
    else:
        start = 0 if form == "bloom" else -(k - 1)
        pos = _angles.cast(arange(start, start + k, ctx, idt), ctx.work, xp_)
        out = (m[:, None] * pos[None, :])[:, None, :]
        if causal:
            out = xp_.broadcast_to(out, (n, q, k))
    if causal:
        out = mask_future(out, q, k, off, ctx)
    return _angles.cast(out, ctx.dtype, xp_)


def _head_slopes(n: int, slopes: Any, max_bias: Any, ctx: Context) -> Array:
    """The ``(n,)`` slopes in ``ctx.work``: given ones, or :func:`alibi_slopes`'."""
    if slopes is None:
        return _slopes(n, 8.0 if max_bias is None else _check_max_bias(max_bias), ctx)
    if _compat.is_array(slopes):  # the shape first (O(1)): a broadcast view may be huge
        check_per_head(slopes, "slopes", n)
    m = float_param(slopes, "slopes", ctx)
    check_per_head(m, "slopes", n)
    return _angles.cast(m, ctx.work, ctx.xp)


# --------------------------------------------------------------------------
# cumulative gates (Forgetting Transformer, data-dependent ALiBi)
# --------------------------------------------------------------------------
def _check_gate_sums(gates: Any, n: int, wide: Any, ctx: _compat.Context) -> None:
    """Refuse concrete gates whose sums over the sequence could overflow the
    working dtype (``n * max |log f|`` above half its largest value: the
    differences of the sums, or the sums of mixed signs, would be NaN)."""
    xp = ctx.xp
    if ctx.traced:
        return
    limit = (1.7976931348623157e308 if ctx.float64 else 3.4028234663852886e38) / 2
    for a, name in gates:
        if a is None or not _compat.is_concrete(a) or math.prod(a.shape) == 0:
            continue
        if limit / n >= _checks.largest(ctx, a.dtype)[0]:  # no value of a's dtype reaches the bound
            continue
        if bool(xp.any(xp.abs(a) > limit / n)):
            msg = (
                f"`{name}` has values beyond {limit / n:.3g} in magnitude: their sums over the {n} tokens could "
                f"overflow {'float64' if ctx.float64 else 'float32'} (n * max |log f| must stay below {limit:.3g})"
            )
            raise ValueError(msg)


def cumulative_gate_bias(
    log_gates: Array,
    *,
    causal: bool = True,
    backward_log_gates: Array | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""The Forgetting Transformer's bias: sums of log forget gates between query and key (Lin et al., 2025).

    With a forget gate :math:`f_t \in (0, 1]` per token (and head), query
    :math:`i` sees key :math:`j \le i` through the gates of the tokens
    after the key, up to the query:

    .. math::

        D_{ij} = \sum_{l = j + 1}^{i} \log f_l \quad (j \le i), \qquad
        D_{ij} = -\infty \quad (j > i,\ \text{causal}),

    added to the attention logits, so that
    :math:`\operatorname{softmax}_j(q_i \cdot k_j + D_{ij})` decays the
    keys by the product of the gates in between.  This is ALiBi with
    learned, data-dependent slopes: constant gates :math:`\log f = -m`
    give :math:`-m (i - j)`, the causal ALiBi of slope :math:`m`
    (x-transformers' ``DataDependentAlibi`` computes the same bias from
    ``logsigmoid`` gates).

    Parameters
    ----------
    log_gates : array
        Shape ``(..., n)``, real floating: :math:`\log f_t` for the ``n``
        tokens (``logsigmoid`` of the gate logits, usually with batch and
        head axes in front).  Any finite real values whose sums over the
        sequence stay finite are accepted (checked on concrete arrays:
        ``n * max |log f|`` at most half the largest value of the working
        dtype, float64 where the device has it; a closed gate, ``log 0 =
        -inf``, must be clamped to a finite value); gradients flow to them.
    causal : bool, default True
        ``-inf`` on the keys after each query.  ``False`` fills them too,
        :math:`D_{ij} = \sum_{l = i + 1}^{j} \log g_l` for :math:`j > i`
        with the gates ``backward_log_gates`` (default ``log_gates``; with
        equal constant gates the bias is then the symmetric ALiBi
        :math:`-m |i - j|`).
    backward_log_gates : array, optional
        The gates :math:`\log g` of the keys after the query (``causal=False``
        only), of the shape of ``log_gates``: x-transformers' bidirectional
        ``DataDependentAlibi`` learns them as a second set of heads.
    dtype, device, xp
        Output floating dtype (default that of ``log_gates``), device and
        namespace (those of ``log_gates``; for lists, ``xp`` and ``device``).

    Returns
    -------
    array
        Shape ``(..., n, n)``: queries down, keys across.

    Notes
    -----
    Where the device has float64, the gates are summed along the sequence
    in float64, :math:`c_i = \sum_{l \le i} \log f_l`, and
    :math:`D_{ij} = c_i - c_j`: for float32 outputs every entry is the
    correctly rounded value up to the float64 error of the sums (about
    :math:`n \cdot 10^{-16} \max_i |c_i|`).  The usual float32 difference
    of cumulative sums loses :math:`\max_i |c_i| \cdot 6 \cdot 10^{-8}` to
    rounding, which near the diagonal, where :math:`D` is small and the
    attention looks, can be larger than :math:`D` itself.  Without float64
    (JAX's default, array-api-strict's ``no_float64`` device) each row is
    summed outward from the diagonal in float32, so an entry's error is
    relative to the entry, at most :math:`(i - j)` float32 roundings of it.

    References
    ----------
    .. [1] Z. Lin, E. Nikishin, X. O. He, A. Courville, "Forgetting transformer:
           softmax attention with a forget gate", ICLR 2025,
           https://arxiv.org/abs/2503.02130

    Examples
    --------
    >>> import numpy as np, posenc
    >>> g = np.log([0.5, 0.5, 0.25, 1.0])
    >>> np.exp(posenc.cumulative_gate_bias(g))
    array([[1.   , 0.   , 0.   , 0.   ],
           [0.5  , 1.   , 0.   , 0.   ],
           [0.125, 0.25 , 1.   , 0.   ],
           [0.125, 0.25 , 1.   , 1.   ]])

    Constant gates are ALiBi:

    >>> b = posenc.cumulative_gate_bias(np.full(4, -0.5), causal=False)
    >>> bool(np.all(b == posenc.alibi_bias(1, 4, slopes=np.array([0.5]))[0]))
    True
    """
    causal = _checks.check_bool(causal, "causal")
    if backward_log_gates is not None and causal:
        msg = "`backward_log_gates` applies to `causal`=False (a causal bias has no keys after the query)"
        raise ValueError(msg)
    params = {"log_gates": log_gates, "backward_log_gates": backward_log_gates}
    if dtype is None:
        dtype = float_dtype_of(params, xp, device)
    ctx = _compat.resolve(params, xp=xp, device=device, dtype=dtype)
    xp_ = ctx.xp
    g = _checks.check_float_array(log_gates, "log_gates", ctx)
    if g.ndim == 0:
        msg = f"`log_gates` must have shape (..., n), got {_checks.show(g)}"
        raise ValueError(msg)
    _checks.check_all_finite(g, "log_gates", ctx)
    h = None
    if backward_log_gates is not None:
        h = _checks.check_float_array(backward_log_gates, "backward_log_gates", ctx)
        if tuple(h.shape) != tuple(g.shape):
            msg = f"`backward_log_gates` must have the shape of `log_gates` {tuple(g.shape)}, got {tuple(h.shape)}"
            raise ValueError(msg)
        _checks.check_all_finite(h, "backward_log_gates", ctx)
    n = int(g.shape[-1])
    shape = (*tuple(g.shape[:-1]), n, n)
    _checks.check_size(shape, "bias", "`log_gates`")
    if math.prod(shape) == 0:
        return ctx.place(_angles.zeros(shape, ctx.dtype, ctx), like=g)
    wide = ctx.wide
    _check_gate_sums(((g, "log_gates"), (h, "backward_log_gates")), n, wide, ctx)
    g = _angles.cast(g, wide, xp_)
    h = g if h is None else _angles.cast(h, wide, xp_)
    idt = _compat.default_dtype(xp_, ctx.device, "indexing")
    i = xp_.arange(n, dtype=idt, device=ctx.device)
    later = i[None, :] > i[:, None]  # key j after query i
    if ctx.float64:
        # c_i = sum_{l <= i} g_l as a product with an upper triangle of ones (a
        # matmul, O(n^2) like the output; traces under torch.compile, which
        # the namespace's cumulative_sum wrapper does not)
        upper = _angles.cast(i[:, None] <= i[None, :], wide, xp_)
        c = xp_.matmul(g[..., None, :], upper)[..., 0, :]
        fwd = c[..., :, None] - c[..., None, :]  # c_i - c_j
        if not causal:
            e = c if h is g else xp_.matmul(h[..., None, :], upper)[..., 0, :]
            bwd = e[..., None, :] - e[..., :, None]  # e_j - e_i
    else:
        # row i: the gates l <= i summed from l = i down (outward from the diagonal)
        zero = xp_.zeros((), dtype=wide, device=ctx.device)
        rows = xp_.where(later, zero, g[..., None, :])  # [i, l] = g_l for l <= i
        s = xp_.flip(xp_.cumulative_sum(xp_.flip(rows, axis=-1), axis=-1), axis=-1)  # sum_{l' = l}^{i}
        fwd = xp_.concat([s[..., 1:], xp_.zeros((*shape[:-1], 1), dtype=wide, device=ctx.device)], axis=-1)
        if not causal:
            cols = xp_.where(later, h[..., None, :], zero)  # [i, l] = h_l for l > i
            bwd = xp_.cumulative_sum(cols, axis=-1)  # sum_{l = i + 1}^{j}
    out = xp_.where(later, -math.inf, fwd) if causal else xp_.where(later, bwd, fwd)
    if ctx.dtype != wide:  # sums beyond the output dtype are its infinities (no overflow in the cast)
        big, _ = _checks.largest(ctx, ctx.dtype)
        out = xp_.where(out > big, math.inf, xp_.where(out < -big, -math.inf, out))
    return _angles.cast(out, ctx.dtype, xp_)
