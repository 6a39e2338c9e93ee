r"""FlexAttention score and mask functions for posenc's attention biases.

PyTorch's FlexAttention (:func:`torch.nn.attention.flex_attention.flex_attention`,
Dong et al., 2024) takes the bias of an attention as a function,
``score_mod(score, b, h, q_idx, kv_idx)``, and the pattern of keys a query
may see as another, ``mask_mod(b, h, q_idx, kv_idx)`` (for
:func:`~torch.nn.attention.flex_attention.create_block_mask`), and compiles
both into one attention kernel: the ``(heads, q, k)`` bias is never
materialised.  Each function here returns such a function, closed over small
tensors (ALiBi's slopes, a learned table and its bucket map, per-token
positions or gates), computing the numbers of the posenc function it is
named after:

=========================  =====================================================
score function             the same numbers as
=========================  =====================================================
:func:`alibi`              :func:`posenc.alibi_bias` (``"paper"``, ``"bloom"``)
:func:`t5`                 a ``(buckets, heads)`` table at :func:`posenc.t5_buckets`
:func:`relative_table`     a ``(rows, heads)`` table at an index: Swin's and
                           BEiT's :func:`posenc.relative_position_index`,
                           Shaw's clipped :func:`posenc.relative_positions`
:func:`kerple`             :func:`posenc.kerple_bias`
:func:`forgetting_gate`    :func:`posenc.cumulative_gate_bias`
:func:`compose`            several of them, one after the other
=========================  =====================================================

and the masks :func:`causal`, :func:`sliding_window`, :func:`documents`,
:func:`prefix_lm`, with :func:`document_positions` for positions that restart
at every document of a packed row.

Conventions, as in :mod:`posenc.bias`: the relative position of key
``kv_idx`` seen from query ``q_idx`` is ``kv_idx - (q_idx + offset)``.
FlexAttention does not tell a score function the lengths of the queries and
keys, so ``offset`` (the position of the first query on the key axis, the
number of cached tokens in a decode step) defaults to 0 here, not to
``key_len - query_len`` as in posenc's functions of lengths: pass it for a
decode step (an int, or a 0-d integer tensor, which a compiled model can
change from step to step without recompiling).  With ``positions`` (per-token
positions: packed documents, left padding) the relative position is the key's
position minus the query's.

The score functions compute their bias in the dtype of the scores, from the
closed-over tensors cast to it, as posenc's functions compute theirs in their
output dtype: float64 attention (eager) gives posenc's float64 numbers, float32
attention its float32 ones.  Learned tensors (ALiBi slopes, the T5 table, a
relative table, KERPLE's parameters, the forget gates) are used as they are
when the attention runs, so gradients flow to them and an optimizer's update
is seen by the next call.

Notes
-----
In PyTorch 2.13 FlexAttention runs on the CPU eagerly (every dtype, with
gradients; it warns that it materialises the scores) and compiled with
``torch.compile(flex_attention)`` (float32, float16 and bfloat16 only, no
backward pass); on CUDA compiled, with gradients.  The functions here build
no tensor inside the score function and read no value back, so they trace
under ``torch.compile(fullgraph=True)``.

References
----------
.. [1] J. Dong, B. Feng, D. Guessous, Y. Liang, H. He, "Flex Attention: a
       programming model for generating optimized attention kernels", 2024,
       https://arxiv.org/abs/2412.05496
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import torch

import posenc
from posenc import _checks, _compat

__all__ = [
    "alibi",
    "t5",
    "relative_table",
    "kerple",
    "forgetting_gate",
    "compose",
    "causal",
    "sliding_window",
    "documents",
    "prefix_lm",
    "document_positions",
]

ScoreMod = Callable[[torch.Tensor, Any, Any, Any, Any], torch.Tensor]
MaskMod = Callable[[Any, Any, Any, Any], Any]

#: the forms of ALiBi a score function can take (MPT's needs the key length)
FLEX_ALIBI_FORMS = ("paper", "bloom")
_NEG_INF = float("-inf")


# --------------------------------------------------------------------------
# argument checks (errors name the parameter)
# --------------------------------------------------------------------------
def _tensor(x: Any, name: str, kind: str, shape: str) -> torch.Tensor:
    """``x`` as a torch tensor of ``kind`` ``"float"`` (real floating) or
    ``"int"`` (integer, not bool); anything else is a TypeError naming ``name``."""
    if not isinstance(x, torch.Tensor):
        msg = f"`{name}` must be a torch tensor of shape {shape}, got {_checks.show(x)}"
        raise TypeError(msg)
    if kind == "float" and not (x.dtype.is_floating_point and not x.dtype.is_complex):
        msg = f"`{name}` must have a real floating dtype, got {x.dtype}"
        raise TypeError(msg)
    if kind == "int" and (x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool):
        msg = f"`{name}` must have an integer dtype, got {x.dtype}"
        raise TypeError(msg)
    return x


def _ndim(x: torch.Tensor, name: str, allowed: tuple[int, ...], shape: str) -> None:
    if x.ndim not in allowed:
        msg = f"`{name}` must have shape {shape}, got shape {tuple(x.shape)}"
        raise ValueError(msg)


def _same_device(tensors: dict[str, Any], device: Any = None) -> torch.device | None:
    """The one device of the named tensors (and of ``device`` if given)."""
    found: dict[str, torch.device] = {n: t.device for n, t in tensors.items() if isinstance(t, torch.Tensor)}
    if device is not None:
        try:
            if not isinstance(device, (torch.device, str)):
                raise TypeError
            found["device"] = torch.device(device)
        except (TypeError, RuntimeError, ValueError):
            msg = f"`device` must be a torch device or its name, got {_checks.show(device)}"
            raise TypeError(msg) from None
    if len(set(found.values())) > 1:
        listed = ", ".join(f"`{n}` on {d}" for n, d in found.items())
        msg = f"the tensors must be on one device, got {listed}"
        raise ValueError(msg)
    return next(iter(found.values()), None)


def _finite(x: torch.Tensor, name: str) -> None:
    """Refuse NaN / inf in a concrete tensor (never on traced or meta ones),
    after its size (a broadcast view may hold more elements than posenc's
    limit, and the scan, like what is made of it, one of each)."""
    _checks.check_size(tuple(x.shape), f"`{name}`", f"`{name}`")
    if x.numel() and _compat.is_concrete(x) and not bool(torch.isfinite(x).all()):
        msg = f"`{name}` must hold finite values, got {_checks.show(x)} with NaN or inf"
        raise ValueError(msg)


def _offset(offset: Any) -> Any:
    """An int, or a 0-d integer tensor (kept: a compiled model may change it per step)."""
    if isinstance(offset, torch.Tensor):
        _tensor(offset, "offset", "int", "()")
        _ndim(offset, "offset", (0,), "() (a 0-d integer tensor) or an int")
        return offset
    if _compat.is_array(offset) and not isinstance(offset, numbers.Integral):
        # a 0-d array of another namespace: not this attention's tensor
        msg = f"`offset` must be an int or a 0-d integer torch tensor, got {_checks.show(offset)}"
        raise TypeError(msg)
    return _checks.check_int(offset, "offset", minimum=-(2**62), maximum=2**62)


def _positions(positions: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``(query positions, key positions)``: integer tensors of shape ``(n,)`` or ``(batch, n)``."""
    shape = "(n,) or (batch, n), or a pair (query positions, key positions) of them"
    if isinstance(positions, (tuple, list)):
        if len(positions) != 2:
            msg = f"`positions` must be a tensor of shape {shape}, got a {type(positions).__name__} of {len(positions)}"
            raise TypeError(msg)
        qp = _tensor(positions[0], "positions", "int", shape)
        kp = _tensor(positions[1], "positions", "int", shape)
    else:
        qp = kp = _tensor(positions, "positions", "int", shape)
    for p in (qp, kp):
        _ndim(p, "positions", (1, 2), shape)
    wide = _int64(qp, "positions")
    qp, kp = wide, (wide if kp is qp else _int64(kp, "positions"))
    if qp.device != kp.device:
        msg = f"`positions` of the queries and of the keys must be on one device, got {qp.device} and {kp.device}"
        raise ValueError(msg)
    if qp.ndim != kp.ndim or (qp.ndim == 2 and qp.shape[0] != kp.shape[0]):
        msg = (
            f"`positions` of the queries {tuple(qp.shape)} and of the keys {tuple(kp.shape)} must have the same "
            "batch axis (both (n,), or (batch, q) and (batch, k))"
        )
        raise ValueError(msg)
    return qp, kp


#: the magnitude of integer positions (and prefix lengths) whose differences
#: and sums stay within int64
POSITION_LIMIT = 2**62


def _int64(p: torch.Tensor, name: str, *, negative: bool = True) -> torch.Tensor:
    """Integer positions as int64, once, where the score and mask functions
    subtract them: differences in a narrower dtype wrap (uint8 ``0 - 255``
    is 1, int8 ``100 - (-100)`` is -56: another bias, silently) and torch
    computes none in uint16, uint32 and uint64.  Concrete positions beyond
    :data:`POSITION_LIMIT` are refused; uint64 ones that cannot be read
    (traced, on a device) too, as int64 would wrap them from ``2**63``; and
    negative ones where ``negative`` is false (lengths), all from one read."""
    if p.dtype == torch.uint64 and not _compat.is_concrete(p):
        msg = (
            f"`{name}` of dtype uint64 cannot be bounded without reading them back (int64 would wrap those from "
            "2**63 to negative ones): pass int64"
        )
        raise TypeError(msg)
    if p.numel() and _compat.is_concrete(p):
        lo, hi = _compat.int_range(torch, p)
        if not negative and lo < 0:
            msg = f"`{name}` must be >= 0, got {_checks.show(p)} with negative values"
            raise ValueError(msg)
        if max(-lo, hi) > POSITION_LIMIT:
            msg = f"`{name}` must lie within +-2**62, got values in [{lo}, {hi}]"
            raise ValueError(msg)
    return p if p.dtype == torch.int64 else p.to(torch.int64)


def _token(x: torch.Tensor) -> Callable[[Any, Any], Any]:
    """``at(b, idx)``: the entry of token ``idx`` (of batch row ``b`` for a 2-D ``x``)."""
    if x.ndim == 2:
        return lambda b, i: x[b, i]
    return lambda b, i: x[i]


def _relative(positions: Any, offset: Any) -> Callable[[Any, Any, Any], Any]:
    """``rel(b, q_idx, kv_idx)``: the key's position minus the query's (integers)."""
    if positions is None:
        off = _offset(offset)
        return lambda b, q, kv: kv - (q + off)
    if not (isinstance(offset, numbers.Integral) and not isinstance(offset, bool) and offset == 0):
        msg = "`offset` and `positions` exclude each other: the positions say where the tokens are"
        raise ValueError(msg)
    qp, kp = _positions(positions)
    qat, kat = _token(qp), _token(kp)
    return lambda b, q, kv: kat(b, kv) - qat(b, q)


def _heads(x: torch.Tensor, name: str, n: int | None = None) -> int:
    if x.ndim != 1 or (n is not None and x.shape[0] != n):
        want = "(num_heads,)" if n is None else f"(num_heads,) = ({n},)"
        msg = f"`{name}` must have shape {want}, got shape {tuple(x.shape)}"
        raise ValueError(msg)
    return int(x.shape[0])


def _wide(device: torch.device | None) -> torch.dtype:
    """float64 where the device has it (not on Apple's MPS)."""
    return torch.float32 if device is not None and device.type == "mps" else torch.float64


# --------------------------------------------------------------------------
# score functions
# --------------------------------------------------------------------------
def alibi(
    num_heads: int,
    *,
    form: str = "paper",
    causal: bool = False,
    positions: torch.Tensor | tuple[torch.Tensor, torch.Tensor] | None = None,
    offset: int | torch.Tensor = 0,
    slopes: torch.Tensor | None = None,
    max_bias: float | None = None,
    device: Any = None,
) -> ScoreMod:
    r"""ALiBi as a FlexAttention ``score_mod``: :func:`posenc.alibi_bias` without the matrix.

    Adds :math:`-m_h\,|j - (i + \text{offset})|` (``form="paper"``) or
    BLOOM's :math:`m_h\,j` (``form="bloom"``) to the score of query ``i``
    and key ``j`` in head ``h``, with the slopes of
    :func:`posenc.alibi_slopes` for any head count (Press et al.'s
    ``get_slopes``: not ``2^(-8(h+1)/H)`` unless ``H`` is a power of two).

    Parameters
    ----------
    num_heads : int
        Number of heads (the ``h`` FlexAttention passes runs over them).
    form : {"paper", "bloom"}, default "paper"
        As in :func:`posenc.alibi_bias`.  BLOOM's form equals the paper's
        only after the softmax over causal keys: use it with ``causal`` or a
        causal mask.  (MPT's form needs the key length, which a score
        function is not given; it equals BLOOM's after the softmax.)
    causal : bool, default False
        Score ``-inf`` for the keys after each query.  A
        :func:`causal` block mask does the same and lets FlexAttention skip
        the masked blocks; both may be given.
    positions : int tensor or (tensor, tensor), optional
        Per-token positions of shape ``(n,)`` or ``(batch, n)`` (queries and
        keys alike), or a pair ``(query_positions, key_positions)`` of shapes
        ``(q,)``, ``(k,)`` or ``(batch, q)``, ``(batch, k)``: the bias of
        :func:`posenc.alibi_bias` with ``positions``.  Packed documents
        (:func:`document_positions`), left padding.  ``kv_idx`` and ``q_idx``
        index them; ``b`` indexes their batch axis.
    offset : int or 0-d integer tensor, default 0
        Position of the first query on the key axis (see the module's notes):
        ``key_len - query_len`` for the last queries of a key/value cache.
        Not with ``positions``.
    slopes : tensor, optional
        ``(num_heads,)`` slopes to use instead of :func:`posenc.alibi_slopes`
        (learned slopes: gradients flow to them).
    max_bias : float, optional
        ``max_bias`` of :func:`posenc.alibi_slopes` (default 8.0); not with
        ``slopes``.
    device : torch.device or str, optional
        Device of the slopes posenc makes (default: that of ``positions``,
        else the CPU); it must be the attention's device.

    Returns
    -------
    callable
        ``score_mod(score, b, h, q_idx, kv_idx)``.

    See Also
    --------
    posenc.alibi_bias : the materialised bias.
    posenc.torch.ALiBi : the bias added to materialised scores.

    References
    ----------
    .. [1] O. Press, N. A. Smith, M. Lewis, "Train short, test long: attention with
           linear biases enables input length extrapolation", ICLR 2022,
           https://arxiv.org/abs/2108.12409

    Examples
    --------
    A score function can be called on broadcast indices, as FlexAttention's
    unfused path does; it gives the bias of :func:`posenc.alibi_bias`:

    >>> import torch, posenc
    >>> from posenc.torch import flex
    >>> h, q, kv = torch.arange(3)[:, None, None], torch.arange(4)[:, None], torch.arange(4)
    >>> score_mod = flex.alibi(3, max_bias=1.0)
    >>> bias = score_mod(torch.zeros(3, 4, 4, dtype=torch.float64), 0, h, q, kv)
    >>> bias[2, 0]
    tensor([ 0.0000, -0.8409, -1.6818, -2.5227], dtype=torch.float64)
    >>> torch.equal(bias, posenc.alibi_bias(3, 4, max_bias=1.0, xp=torch, dtype=torch.float64))
    True

    In a model: ``flex_attention(query, key, value, score_mod=score_mod)``,
    compiled (see :doc:`/howto/flex_attention`).
    """
    form = _checks.check_choice(form, "form", FLEX_ALIBI_FORMS)
    causal = _checks.check_bool(causal, "causal")
    rel = _relative(positions, offset)
    if positions is not None:
        kp = _positions(positions)[1]
        key_pos = _token(kp)
    else:
        kp = None

        def key_pos(b: Any, kv: Any) -> Any:
            return kv

    if slopes is not None:
        if max_bias is not None:
            msg = "`max_bias` and `slopes` exclude each other: the slopes are given"
            raise ValueError(msg)
        m = _tensor(slopes, "slopes", "float", "(num_heads,)")
        n = _checks.check_int(num_heads, "num_heads", minimum=1)
        _heads(m, "slopes", n)
        _same_device({"slopes": m, "positions": kp}, device)
    else:
        n = _checks.check_int(num_heads, "num_heads", minimum=1)
        _checks.check_size((n,), "slopes")
        dev = _same_device({"positions": kp}, device)
        mb = 8.0 if max_bias is None else _checks.check_float(max_bias, "max_bias", positive=True)
        m = posenc.alibi_slopes(n, max_bias=mb, dtype=_wide(dev), device=dev, xp=torch)

    if form == "paper":

        def score_mod(score: torch.Tensor, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> torch.Tensor:
            d = rel(b, q_idx, kv_idx)
            out = score - m[h].to(score.dtype) * d.abs().to(score.dtype)
            return torch.where(d > 0, _NEG_INF, out) if causal else out

    else:

        def score_mod(score: torch.Tensor, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> torch.Tensor:
            out = score + m[h].to(score.dtype) * key_pos(b, kv_idx).to(score.dtype)
            return torch.where(rel(b, q_idx, kv_idx) > 0, _NEG_INF, out) if causal else out

    return score_mod


def _table(table: Any, name: str = "table", rows: str = "rows") -> torch.Tensor:
    t = _tensor(table, name, "float", f"({rows}, num_heads)")
    _ndim(t, name, (2,), f"({rows}, num_heads)")
    return t


def t5(
    bias: torch.Tensor,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
    positions: torch.Tensor | tuple[torch.Tensor, torch.Tensor] | None = None,
    offset: int | torch.Tensor = 0,
) -> ScoreMod:
    r"""T5's relative attention bias as a FlexAttention ``score_mod`` (Raffel et al., 2020).

    Adds ``bias[t5_bucket(j - (i + offset)), h]`` to the score of query
    ``i`` and key ``j`` in head ``h``: the learned ``(num_buckets,
    num_heads)`` table (Hugging Face's ``relative_attention_bias.weight``,
    x-transformers' ``RelativePositionBias``) at the buckets of
    :func:`posenc.t5_bucket`, bit-identical to Hugging Face's
    ``_relative_position_bucket``.

    Parameters
    ----------
    bias : tensor
        The learned table, shape ``(num_buckets, num_heads)``, real
        floating (a :class:`~torch.nn.Parameter`: gradients flow to it).
    bidirectional : bool, default True
        ``True`` for encoders, ``False`` for decoders (every key after the
        query in bucket 0), as in :func:`posenc.t5_bucket`.
    num_buckets, max_distance : int
        As in :func:`posenc.t5_bucket`.
    positions : int tensor or (tensor, tensor), optional
        Per-token positions, as in :func:`alibi` (packed documents:
        :func:`document_positions`).
    offset : int or 0-d integer tensor, default 0
        Position of the first query on the key axis (Hugging Face's
        ``past_seen_tokens``); not with ``positions``.

    Returns
    -------
    callable
        ``score_mod(score, b, h, q_idx, kv_idx)``.

    Notes
    -----
    Every relative position beyond ``max_distance`` falls in the bucket of
    ``max_distance``, so the function closes over the buckets of the
    ``2 * max_distance + 1`` relative positions up to there
    (:func:`posenc.t5_bucket` of them), clips, and looks up: O(max_distance)
    memory, whatever the sequence length, and no logarithm in the kernel.

    References
    ----------
    .. [1] C. Raffel et al., "Exploring the limits of transfer learning with a unified
           text-to-text transformer", JMLR 21(140), 2020,
           https://arxiv.org/abs/1910.10683

    Examples
    --------
    >>> import torch, posenc
    >>> from posenc.torch import flex
    >>> table = torch.arange(16.0).reshape(8, 2)  # (num_buckets, num_heads)
    >>> score_mod = flex.t5(table, num_buckets=8, max_distance=16)
    >>> h, q, kv = torch.arange(2)[:, None, None], torch.arange(4)[:, None], torch.arange(4)
    >>> score_mod(torch.zeros(2, 4, 4), 0, h, q, kv)[0]
    tensor([[ 0., 10., 12., 12.],
            [ 2.,  0., 10., 12.],
            [ 4.,  2.,  0., 10.],
            [ 4.,  4.,  2.,  0.]])
    >>> 2 * posenc.t5_buckets(4, num_buckets=8, max_distance=16)
    array([[ 0, 10, 12, 12],
           [ 2,  0, 10, 12],
           [ 4,  2,  0, 10],
           [ 4,  4,  2,  0]])
    """
    table = _table(bias, "bias", "num_buckets")
    nb = _checks.check_int(num_buckets, "num_buckets", minimum=2)
    if table.shape[0] != nb:
        msg = f"`bias` must have shape (num_buckets, num_heads) = ({nb}, num_heads), got shape {tuple(table.shape)}"
        raise ValueError(msg)
    md = _checks.check_int(max_distance, "max_distance", minimum=1)
    rel = _relative(positions, offset)
    kp = None if positions is None else _positions(positions)[1]
    dev = _same_device({"bias": table, "positions": kp})
    _checks.check_size((2 * md + 1,), "bucket map")
    # every distance past max_distance shares its bucket (the last one): clip, then look up
    span = torch.arange(-md, md + 1, device=dev)
    buckets = posenc.t5_bucket(span, num_buckets=nb, max_distance=md, bidirectional=bidirectional)

    def score_mod(score: torch.Tensor, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> torch.Tensor:
        r = rel(b, q_idx, kv_idx).clamp(-md, md) + md
        return score + table[buckets[r], h].to(score.dtype)

    return score_mod


def relative_table(
    table: torch.Tensor,
    index: torch.Tensor | None = None,
    *,
    max_distance: int | None = None,
    offset: int | torch.Tensor = 0,
) -> ScoreMod:
    r"""A learned table of relative-position biases as a FlexAttention ``score_mod``.

    Adds ``table[index[i, j], h]`` to the score of query ``i`` and key
    ``j`` in head ``h``: Swin's and BEiT's ``relative_position_bias_table``
    at :func:`posenc.relative_position_index` (with the class token's three
    rows), or any other ``(q, k)`` index.  With ``max_distance`` instead of
    ``index``, the index is Shaw et al.'s clipped relative position,
    ``clip(j - (i + offset), -max_distance, max_distance) + max_distance``
    (:func:`posenc.relative_positions` with ``max_distance``, shifted to a
    row of a ``2 * max_distance + 1`` table), for any length.

    Parameters
    ----------
    table : tensor
        Shape ``(rows, num_heads)``, real floating (a
        :class:`~torch.nn.Parameter`: gradients flow to it).
    index : int tensor, optional
        Shape ``(q, k)``: the row of every (query, key) pair, in ``[0,
        rows)`` (checked on concrete tensors).  For windowed attention the
        queries and keys are the patches of one window (the windows are the
        batch).
    max_distance : int, optional
        Shaw et al.'s clipping distance ``k``; ``table`` then has ``2 *
        max_distance + 1`` rows.  Exactly one of ``index`` and
        ``max_distance``.
    offset : int or 0-d integer tensor, default 0
        With ``max_distance``: the position of the first query on the key
        axis.

    Returns
    -------
    callable
        ``score_mod(score, b, h, q_idx, kv_idx)``.

    References
    ----------
    .. [1] P. Shaw, J. Uszkoreit, A. Vaswani, "Self-attention with relative position
           representations", NAACL 2018, https://doi.org/10.18653/v1/N18-2074
    .. [2] Z. Liu et al., "Swin Transformer: hierarchical vision transformer using shifted
           windows", ICCV 2021, https://arxiv.org/abs/2103.14030

    Examples
    --------
    A 2x2 Swin window: 9 offsets, one row each.

    >>> import torch, posenc
    >>> from posenc.torch import flex
    >>> table = torch.arange(9.0)[:, None]  # (9 offsets, 1 head)
    >>> index = posenc.relative_position_index(2, xp=torch)
    >>> score_mod = flex.relative_table(table, index)
    >>> q, kv = torch.arange(4)[:, None], torch.arange(4)
    >>> score_mod(torch.zeros(4, 4), 0, 0, q, kv)
    tensor([[4., 3., 1., 0.],
            [5., 4., 2., 1.],
            [7., 6., 4., 3.],
            [8., 7., 5., 4.]])

    Shaw's clipped distances, a table of ``2 * 2 + 1`` rows:

    >>> clipped = flex.relative_table(torch.arange(5.0)[:, None], max_distance=2)
    >>> clipped(torch.zeros(1, 5), 0, 0, torch.tensor([[0]]), torch.arange(5))
    tensor([[2., 3., 4., 4., 4.]])
    """
    t = _table(table)
    if (index is None) == (max_distance is None):
        msg = "exactly one of `index` and `max_distance` must be given (a (q, k) index, or Shaw's clipping)"
        raise TypeError(msg)
    if index is not None:
        if not (isinstance(offset, numbers.Integral) and not isinstance(offset, bool) and offset == 0):
            msg = "`offset` applies to `max_distance` only: an `index` says where every pair is"
            raise ValueError(msg)
        idx = _tensor(index, "index", "int", "(q, k)")
        _ndim(idx, "index", (2,), "(q, k)")
        _same_device({"table": t, "index": idx})
        rows = int(t.shape[0])
        if idx.numel() and _compat.is_concrete(idx):
            lo, hi = _compat.int_range(torch, idx)
            if lo < 0 or hi >= rows:
                msg = f"`index` must hold rows of `table` in [0, {rows}), got values in [{lo}, {hi}]"
                raise ValueError(msg)
        if idx.dtype not in (torch.int64, torch.int32):
            idx = idx.to(torch.int64)  # (a uint8 tensor would index as a mask; torch has no uint16+ indexing)

        def score_mod(score: torch.Tensor, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> torch.Tensor:
            return score + t[idx[q_idx, kv_idx], h].to(score.dtype)

        return score_mod
    k = _checks.check_int(max_distance, "max_distance", minimum=0, maximum=2**40)
    if t.shape[0] != 2 * k + 1:
        msg = (
            f"`table` must have 2 * max_distance + 1 = {2 * k + 1} rows for `max_distance` {k}, "
            f"got shape {tuple(t.shape)}"
        )
        raise ValueError(msg)
    rel = _relative(None, offset)

    def clipped(score: torch.Tensor, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> torch.Tensor:
        return score + t[rel(b, q_idx, kv_idx).clamp(-k, k) + k, h].to(score.dtype)

    return clipped


def kerple(
    r1: torch.Tensor,
    r2: torch.Tensor,
    *,
    kind: str = "log",
    causal: bool = False,
    positions: torch.Tensor | tuple[torch.Tensor, torch.Tensor] | None = None,
    offset: int | torch.Tensor = 0,
) -> ScoreMod:
    r"""KERPLE's kernels as a FlexAttention ``score_mod`` (Chi et al., 2022).

    Adds :math:`-r_1 \log(1 + r_2 |d|)` (``kind="log"``) or
    :math:`-r_1 |d|^{r_2}` (``kind="power"``) per head, with :math:`d` the
    relative position: :func:`posenc.kerple_bias` without the matrix.

    Parameters
    ----------
    r1, r2 : tensor
        Per-head parameters of shape ``(num_heads,)``, positive (and ``r2 <=
        2`` for the power kernel; checked on concrete tensors); gradients
        flow to them.
    kind : {"log", "power"}, default "log"
        Which kernel.
    causal : bool, default False
        Score ``-inf`` for the keys after each query.
    positions : int tensor or (tensor, tensor), optional
        Per-token positions, as in :func:`alibi`.
    offset : int or 0-d integer tensor, default 0
        Position of the first query on the key axis; not with ``positions``.

    Returns
    -------
    callable
        ``score_mod(score, b, h, q_idx, kv_idx)``.

    References
    ----------
    .. [1] T.-C. Chi, T.-H. Fan, P. J. Ramadge, A. I. Rudnicky, "KERPLE: kernelized
           relative positional embedding for length extrapolation", NeurIPS 2022,
           https://arxiv.org/abs/2205.09921

    Examples
    --------
    >>> import torch
    >>> from posenc.torch import flex
    >>> score_mod = flex.kerple(torch.tensor([0.5]), torch.tensor([2.0]), kind="power")
    >>> score_mod(torch.zeros(1, 3), 0, 0, torch.tensor([[2]]), torch.arange(3))
    tensor([[-2.0000, -0.5000,  0.0000]])
    """
    kind = _checks.check_choice(kind, "kind", posenc.bias.KERPLE_KINDS)
    causal = _checks.check_bool(causal, "causal")
    a = _tensor(r1, "r1", "float", "(num_heads,)")
    c = _tensor(r2, "r2", "float", "(num_heads,)")
    n = _heads(a, "r1")
    _heads(c, "r2", n)
    rel = _relative(positions, offset)
    kp = None if positions is None else _positions(positions)[1]
    _same_device({"r1": a, "r2": c, "positions": kp})
    for x, name, upper in ((a, "r1", None), (c, "r2", 2.0 if kind == "power" else None)):
        if x.numel() and _compat.is_concrete(x):
            ok = (x > 0) if upper is None else (x > 0) & (x <= upper)
            if not bool(ok.all()):
                rng = "> 0" if upper is None else f"in (0, {upper:g}]"
                msg = f"`{name}` must be {rng} for every head (NaN is not), got {_checks.show(x)}"
                raise ValueError(msg)
    log = kind == "log"

    def score_mod(score: torch.Tensor, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> torch.Tensor:
        d = rel(b, q_idx, kv_idx)
        dist = d.abs().to(score.dtype)
        s = c[h].to(score.dtype)
        f = torch.log1p(s * dist) if log else torch.pow(dist, s)
        out = score - a[h].to(score.dtype) * f
        return torch.where(d > 0, _NEG_INF, out) if causal else out

    return score_mod


def forgetting_gate(
    log_gates: torch.Tensor,
    *,
    causal: bool = True,
    backward_log_gates: torch.Tensor | None = None,
    offset: int | torch.Tensor = 0,
) -> ScoreMod:
    r"""The Forgetting Transformer's gate bias as a FlexAttention ``score_mod`` (Lin et al., 2025).

    Adds :math:`D_{ij} = \sum_{l = j + 1}^{i} \log f_l` for the keys
    :math:`j \le i` (``-inf`` after the query, or, with ``causal=False``,
    :math:`\sum_{l = i + 1}^{j} \log g_l`): :func:`posenc.cumulative_gate_bias`
    without the ``(n, n)`` matrix.  The function closes over the ``n``
    cumulative sums :math:`c_i = \sum_{l \le i} \log f_l` and adds
    :math:`c_i - c_j`.

    Parameters
    ----------
    log_gates : tensor
        :math:`\log f_t` of the ``n`` tokens, shape ``(n,)``, ``(num_heads,
        n)`` or ``(batch, num_heads, n)`` (``b`` and ``h`` index the leading
        axes), real floating and finite (checked on concrete tensors);
        gradients flow to them.  The gates are data: build the score function
        in every forward.
    causal : bool, default True
        ``-inf`` on the keys after each query; ``False`` fills them with the
        gates ``backward_log_gates`` (default ``log_gates``).
    backward_log_gates : tensor, optional
        :math:`\log g`, of the shape of ``log_gates`` (``causal=False``
        only).
    offset : int or 0-d integer tensor, default 0
        Token of the first query (the queries of a decode step are the last
        tokens: ``n - query_len``); the keys are the ``n`` tokens.

    Returns
    -------
    callable
        ``score_mod(score, b, h, q_idx, kv_idx)``.

    Notes
    -----
    The sums are taken in float64 where the device has it and the
    difference is rounded once to the dtype of the scores, as
    :func:`posenc.cumulative_gate_bias` rounds its float64 differences: no
    float32 cancellation of two large sums near the diagonal.

    References
    ----------
    .. [1] Z. Lin, E. Nikishin, X. O. He, A. Courville, "Forgetting transformer:
           softmax attention with a forget gate", ICLR 2025,
           https://arxiv.org/abs/2503.02130

    Examples
    --------
    >>> import torch
    >>> from posenc.torch import flex
    >>> g = torch.log(torch.tensor([0.5, 0.5, 0.25, 1.0], dtype=torch.float64))
    >>> score_mod = flex.forgetting_gate(g)
    >>> q, kv = torch.arange(4)[:, None], torch.arange(4)
    >>> score_mod(torch.zeros(4, 4, dtype=torch.float64), 0, 0, q, kv).exp()
    tensor([[1.0000, 0.0000, 0.0000, 0.0000],
            [0.5000, 1.0000, 0.0000, 0.0000],
            [0.1250, 0.2500, 1.0000, 0.0000],
            [0.1250, 0.2500, 1.0000, 1.0000]], dtype=torch.float64)
    """
    causal = _checks.check_bool(causal, "causal")
    shape = "(n,), (num_heads, n) or (batch, num_heads, n)"
    g = _tensor(log_gates, "log_gates", "float", shape)
    _ndim(g, "log_gates", (1, 2, 3), shape)
    _finite(g, "log_gates")
    e = None
    if backward_log_gates is not None:
        if causal:
            msg = "`backward_log_gates` applies to `causal`=False (a causal bias has no keys after the query)"
            raise ValueError(msg)
        e = _tensor(backward_log_gates, "backward_log_gates", "float", shape)
        if e.shape != g.shape:
            msg = f"`backward_log_gates` must have the shape of `log_gates` {tuple(g.shape)}, got {tuple(e.shape)}"
            raise ValueError(msg)
        _finite(e, "backward_log_gates")
    dev = _same_device({"log_gates": g, "backward_log_gates": e})
    off = _offset(offset)
    wide = _wide(dev)
    c = torch.cumsum(g.to(wide), dim=-1)
    ce = c if e is None else torch.cumsum(e.to(wide), dim=-1)
    if g.ndim == 3:

        def at(x: torch.Tensor, b: Any, h: Any, i: Any) -> Any:
            return x[b, h, i]
    elif g.ndim == 2:

        def at(x: torch.Tensor, b: Any, h: Any, i: Any) -> Any:
            return x[h, i]
    else:

        def at(x: torch.Tensor, b: Any, h: Any, i: Any) -> Any:
            return x[i]

    def score_mod(score: torch.Tensor, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> torch.Tensor:
        i = q_idx + off
        fwd = (at(c, b, h, i) - at(c, b, h, kv_idx)).to(score.dtype)
        if causal:
            return score + torch.where(kv_idx > i, _NEG_INF, fwd)
        bwd = (at(ce, b, h, kv_idx) - at(ce, b, h, i)).to(score.dtype)
        return score + torch.where(kv_idx > i, bwd, fwd)

    return score_mod


def compose(*score_mods: ScoreMod) -> ScoreMod:
    """One ``score_mod`` that applies several, in order.

    Each bias function adds its bias to the score it is given, so the
    composition adds them all (ALiBi and a learned window table, a T5 bias
    and a forget gate).

    Parameters
    ----------
    *score_mods : callable
        ``score_mod(score, b, h, q_idx, kv_idx)`` functions, at least one.

    Returns
    -------
    callable
        ``score_mod(score, b, h, q_idx, kv_idx)``.

    Examples
    --------
    >>> import torch
    >>> from posenc.torch import flex
    >>> both = flex.compose(flex.alibi(1, max_bias=1.0), flex.alibi(1, max_bias=2.0))
    >>> both(torch.zeros(1, 3), 0, 0, torch.tensor([[0]]), torch.arange(3))
    tensor([[ 0.0000, -0.7500, -1.5000]])
    """
    if not score_mods:
        msg = "`score_mods` must hold at least one score function"
        raise TypeError(msg)
    for i, f in enumerate(score_mods):
        if not callable(f):
            msg = f"`score_mods` must be callables score_mod(score, b, h, q_idx, kv_idx), got {_checks.show(f)} at {i}"
            raise TypeError(msg)
    mods = tuple(score_mods)

    def score_mod(score: torch.Tensor, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> torch.Tensor:
        for f in mods:
            score = f(score, b, h, q_idx, kv_idx)
        return score

    return score_mod


# --------------------------------------------------------------------------
# mask functions
# --------------------------------------------------------------------------
def causal(*, offset: int | torch.Tensor = 0) -> MaskMod:
    """A causal ``mask_mod``: query ``i`` sees the keys ``j <= i + offset``.

    Parameters
    ----------
    offset : int or 0-d integer tensor, default 0
        Position of the first query on the key axis (``key_len -
        query_len`` for the last queries of a key/value cache).

    Returns
    -------
    callable
        ``mask_mod(b, h, q_idx, kv_idx)``, ``True`` where the key is seen.

    Examples
    --------
    >>> import torch
    >>> from posenc.torch import flex
    >>> flex.causal(offset=2)(0, 0, torch.arange(2)[:, None], torch.arange(4))
    tensor([[ True,  True,  True, False],
            [ True,  True,  True,  True]])
    """
    off = _offset(offset)

    def mask_mod(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return kv_idx <= q_idx + off

    return mask_mod


def sliding_window(window: int, *, causal: bool = True, offset: int | torch.Tensor = 0) -> MaskMod:
    """A sliding-window ``mask_mod``: each query sees the ``window`` nearest keys.

    Parameters
    ----------
    window : int
        With ``causal``: the query and the ``window - 1`` keys before it
        (``0 <= (i + offset) - j < window``, Mistral's ``sliding_window``).
        Without: the keys within ``window - 1`` on either side (``|(i +
        offset) - j| < window``).
    causal : bool, default True
        Whether the keys after the query are hidden.
    offset : int or 0-d integer tensor, default 0
        Position of the first query on the key axis.

    Returns
    -------
    callable
        ``mask_mod(b, h, q_idx, kv_idx)``.

    Examples
    --------
    >>> import torch
    >>> from posenc.torch import flex
    >>> flex.sliding_window(2)(0, 0, torch.arange(4)[:, None], torch.arange(4)).int()
    tensor([[1, 0, 0, 0],
            [1, 1, 0, 0],
            [0, 1, 1, 0],
            [0, 0, 1, 1]], dtype=torch.int32)
    """
    w = _checks.check_int(window, "window", minimum=1, maximum=2**62)
    causal = _checks.check_bool(causal, "causal")
    off = _offset(offset)

    def mask_mod(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        d = (q_idx + off) - kv_idx
        return (d >= 0) & (d < w) if causal else (d < w) & (d > -w)

    return mask_mod


def _doc_ids(doc_ids: Any) -> torch.Tensor:
    shape = "(n,) or (batch, n)"
    d = _tensor(doc_ids, "doc_ids", "int", shape)
    _ndim(d, "doc_ids", (1, 2), shape)
    return d


def documents(doc_ids: torch.Tensor) -> MaskMod:
    """A ``mask_mod`` for packed sequences: no attention across documents.

    Parameters
    ----------
    doc_ids : int tensor
        The document of every token, shape ``(n,)`` or ``(batch, n)``
        (``b`` indexes the batch axis; pass ``B`` to ``create_block_mask``).
        The queries and the keys are the same ``n`` tokens (self-attention
        over a packed row).
        Combine with :func:`causal` by
        :func:`~torch.nn.attention.flex_attention.and_masks`; for the
        positions of the score functions, :func:`document_positions`.

    Returns
    -------
    callable
        ``mask_mod(b, h, q_idx, kv_idx)``, ``True`` within a document.

    Examples
    --------
    >>> import torch
    >>> from posenc.torch import flex
    >>> doc = torch.tensor([0, 0, 1, 1, 1])
    >>> flex.documents(doc)(0, 0, torch.arange(5)[:, None], torch.arange(5)).int()
    tensor([[1, 1, 0, 0, 0],
            [1, 1, 0, 0, 0],
            [0, 0, 1, 1, 1],
            [0, 0, 1, 1, 1],
            [0, 0, 1, 1, 1]], dtype=torch.int32)
    """
    d = _doc_ids(doc_ids)
    at = _token(d)

    def mask_mod(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return at(b, q_idx) == at(b, kv_idx)

    return mask_mod


def prefix_lm(prefix_len: int | torch.Tensor) -> MaskMod:
    """A prefix-LM ``mask_mod``: the prefix is seen by all, the rest causally.

    Query ``i`` sees key ``j`` when ``j < prefix_len`` or ``j <= i`` (the
    prefix attends bidirectionally, as in T5's and UniLM's prefix language
    models).

    Parameters
    ----------
    prefix_len : int or int tensor
        The prefix length, or one per batch row, shape ``(batch,)``.

    Returns
    -------
    callable
        ``mask_mod(b, h, q_idx, kv_idx)``.

    Examples
    --------
    >>> import torch
    >>> from posenc.torch import flex
    >>> flex.prefix_lm(2)(0, 0, torch.arange(4)[:, None], torch.arange(4)).int()
    tensor([[1, 1, 0, 0],
            [1, 1, 0, 0],
            [1, 1, 1, 0],
            [1, 1, 1, 1]], dtype=torch.int32)
    """
    if isinstance(prefix_len, torch.Tensor):
        p = _tensor(prefix_len, "prefix_len", "int", "(batch,)")
        _ndim(p, "prefix_len", (1,), "(batch,) or an int")
        p = _int64(p, "prefix_len", negative=False)  # (torch compares no uint16+ tensor with the indices)

        def mask_mod(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
            return (kv_idx < p[b]) | (kv_idx <= q_idx)

        return mask_mod
    n = _checks.check_int(prefix_len, "prefix_len", minimum=0, maximum=2**62)

    def fixed(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return (kv_idx < n) | (kv_idx <= q_idx)

    return fixed


def document_positions(doc_ids: torch.Tensor) -> torch.Tensor:
    """Positions that restart at every document of packed sequences.

    The position of a token is its distance from the first token of its run
    of equal ``doc_ids``: ``[0, 0, 1, 1, 1] -> [0, 1, 0, 1, 2]``.  Pass them
    as the ``positions`` of :func:`alibi`, :func:`t5` or :func:`kerple`
    (or of :func:`posenc.alibi_bias`), so every document sees the bias of a
    sequence of its own.

    Parameters
    ----------
    doc_ids : int tensor
        Shape ``(n,)`` or ``(batch, n)``; a document is a run of equal ids.

    Returns
    -------
    tensor
        int64, the shape of ``doc_ids``, on its device.

    Examples
    --------
    >>> import torch
    >>> from posenc.torch import flex
    >>> flex.document_positions(torch.tensor([[0, 0, 0, 1, 1], [4, 4, 7, 7, 7]]))
    tensor([[0, 1, 2, 0, 1],
            [0, 1, 0, 1, 2]])
    """
    d = _doc_ids(doc_ids)
    n = d.shape[-1]
    i = torch.arange(n, device=d.device).expand(d.shape)
    if n == 0:
        return i.clone()
    first = torch.ones(d.shape[:-1] + (1,), dtype=torch.bool, device=d.device)
    starts = torch.cat([first, d[..., 1:] != d[..., :-1]], dim=-1)
    start = torch.cummax(torch.where(starts, i, 0), dim=-1).values
    return i - start
