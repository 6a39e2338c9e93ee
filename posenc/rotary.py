r"""Rotary position embeddings (RoPE, Su et al. 2021) and xPos.

RoPE rotates each pair of query / key features by the angle
:math:`p\,\omega_i`, so that the product of a query at position :math:`m`
and a key at position :math:`n` depends on :math:`m - n` only.  Libraries
disagree on which features form a pair:

* ``layout="half"``: feature :math:`i` pairs with :math:`i + d/2` (GPT-NeoX,
  Llama and every Hugging Face model using ``rotate_half``);
* ``layout="interleaved"``: features :math:`2i` and :math:`2i + 1` (GPT-J,
  RoFormer, Meta's original Llama code with complex numbers).

:func:`rope_permutation` converts projection weights between the two.  The
context-extension scalings live in :mod:`posenc.scaling`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _angles, _checks, _compat, _kernels, _rope, _tables
from ._compat import Array
from ._trace import compiling, host_constant
from .scaling import Scaling
from .scaling._formulas import check_seq_len

__all__ = [
    "rope_frequencies",
    "rope_cos_sin",
    "apply_rope",
    "rope",
    "rope_permutation",
    "xpos_scale",
]


# --------------------------------------------------------------------------
# frequencies and tables
# --------------------------------------------------------------------------
def rope_frequencies(
    dim: int,
    *,
    base: float = 10000.0,
    scaling: Scaling | None = None,
    seq_len: int | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""The ``dim // 2`` inverse frequencies of RoPE, after scaling.

    .. math:: \omega_i = \mathrm{base}^{-2i/d}, \qquad i = 0, \dots, d/2 - 1,

    then transformed by ``scaling`` (see :mod:`posenc.scaling`).  Computed in
    float64 on the host and cast.

    Parameters
    ----------
    dim : int
        The rotary dimension (head dimension, or the rotated part of it),
        a positive even integer.
    base : float, default 10000.0
        RoPE's base :math:`\theta` (Hugging Face ``rope_theta``).
    scaling : posenc.scaling.Scaling, optional
        A context-extension scaling (:class:`~posenc.scaling.Linear`,
        :class:`~posenc.scaling.YaRN`, ...).
    seq_len : int, optional
        The current sequence length, for the length-dependent scalings
        (:class:`~posenc.scaling.DynamicNTK` and
        :class:`~posenc.scaling.LongRoPE`); ``None``: the original length.
    dtype, device, xp
        Output dtype, device and namespace (default: NumPy, default float).

    Returns
    -------
    array
        Shape ``(dim // 2,)``.

    References
    ----------
    .. [1] J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu, "RoFormer: Enhanced
           Transformer with Rotary Position Embedding", 2021,
           https://arxiv.org/abs/2104.09864

    Examples
    --------
    >>> import posenc
    >>> posenc.rope_frequencies(8)
    array([1.   , 0.1  , 0.01 , 0.001])
    >>> posenc.rope_frequencies(8, scaling=posenc.scaling.Linear(4.0))
    array([0.25   , 0.025  , 0.0025 , 0.00025])
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    seq_len = check_seq_len(seq_len)
    _, base, scaling, freqs, _ = _rope.inv_freq_of(dim, base, scaling, seq_len, _rope.top_of(ctx))
    source = _rope.freq_source(base, scaling)
    _checks.check_fits(freqs.top, ctx, f"{source} gives inverse frequencies", "use a larger base")
    return _angles.cast(ctx.from_host(_angles.freqs_array(freqs.key)), ctx.dtype, ctx.xp)


def rope_cos_sin(
    positions: int | Array,
    dim: int,
    *,
    base: float = 10000.0,
    scaling: Scaling | None = None,
    layout: str = "half",
    seq_len: int | None = None,
    offset: int | Array = 0,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> tuple[Array, Array]:
    r"""The ``cos`` and ``sin`` tables of RoPE.

    ``cos[..., j] = a * cos(p * w_k)`` and ``sin[..., j] = a * sin(p * w_k)``
    with ``w`` from :func:`rope_frequencies`, ``a`` the scaling's
    :meth:`~posenc.scaling.Scaling.attention_scaling` (the Hugging Face
    contract: YaRN and LongRoPE multiply the tables, not the logits), and
    ``k = j mod dim/2`` for ``layout="half"`` or ``k = j // 2`` for
    ``layout="interleaved"``.

    Parameters
    ----------
    positions : int or array
        An int ``n`` (positions ``0 .. n-1``) or an array of any shape of
        integer or real positions (offsets for incremental decoding,
        negative, fractional).
    dim : int
        Rotary dimension, a positive even integer.
    base : float, default 10000.0
        RoPE's base (``rope_theta``).
    scaling : posenc.scaling.Scaling, optional
        Context-extension scaling.
    layout : {"half", "interleaved"}
        ``"half"``: ``[c_0 .. c_{d/2-1}, c_0 .. c_{d/2-1}]`` (Hugging Face,
        GPT-NeoX); ``"interleaved"``: ``[c_0, c_0, c_1, c_1, ...]`` (GPT-J,
        RoFormer).
    seq_len : int, optional
        The sequence length the length-dependent scalings
        (:class:`~posenc.scaling.DynamicNTK`,
        :class:`~posenc.scaling.LongRoPE`) switch on.  Default, as Hugging
        Face's ``max(position_ids) + 1``: ``offset + n`` for an int ``n``;
        for a concrete array, its largest value + 1 (read only for those two
        scalings).  Traced (``jax.jit``, ``torch.compile``) and lazy (Dask)
        positions cannot be read: with a length-dependent scaling they need
        ``seq_len``, and a :class:`ValueError` says so.
    offset : int or 0-d int array, default 0
        Added to the positions: ``rope_cos_sin(1, dim, offset=t)`` is the
        table of the decode step at position ``t``.  May be a traced integer
        (a 0-d array under ``jax.jit``, a ``SymInt`` under
        ``torch.compile``): the output shape does not depend on it.
    dtype, device, xp
        Output dtype (half precision is computed in float32 and cast at the
        end), the device for int positions, and the namespace.

    Returns
    -------
    cos : array
        Shape ``positions.shape + (dim,)``.
    sin : array
        Shape ``positions.shape + (dim,)``.

    Notes
    -----
    The angles are exact: float32 tables are within 2.5e-7 of the sines and
    cosines of the mathematical frequencies (float64 tables within 1e-15, to
    :math:`2^{53}`) at every position below :math:`2^{20}`
    and beyond, on devices with and without float64; the usual
    ``cos(float32(p) * inv_freq)`` is off by about 2e-4 at p = 4096 and by
    4e-2 near :math:`10^6` (see :func:`posenc.sinusoidal`).

    References
    ----------
    .. [1] J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu, "RoFormer: Enhanced
           Transformer with Rotary Position Embedding", 2021,
           https://arxiv.org/abs/2104.09864

    Examples
    --------
    >>> import posenc
    >>> cos, sin = posenc.rope_cos_sin(3, 4)
    >>> cos.round(4)
    array([[ 1.    ,  1.    ,  1.    ,  1.    ],
           [ 0.5403,  1.    ,  0.5403,  1.    ],
           [-0.4161,  0.9998, -0.4161,  0.9998]])
    >>> posenc.rope_cos_sin(3, 4, layout="interleaved")[1][2].round(4)
    array([0.9093, 0.9093, 0.02  , 0.02  ])
    """
    if compiling():  # the Python arguments checked in one host constant
        got = _rope.traced_tables(positions, dim, base, scaling, layout, seq_len, offset, dtype, device, xp)
        if got is not None:
            return got
    key = None
    if type(offset) is int and offset and _kernels.shifted_on_device(positions, offset):
        positions, offset = positions + offset, 0  # (the kept plan of these positions: no masks of the sum)
    if type(offset) is int and offset == 0:
        options = (dim, base, scaling, layout, seq_len, dtype, device, xp)
        if type(positions) is int:
            key = _compat.int_key(positions, options, xp, device, dtype)
        else:
            key = _compat.call_key((positions,), options)
    plan = _rope.TABLE_PLANS.get_or_make(
        key, _rope.table_plan, positions, dim, base, scaling, layout, seq_len, offset, dtype, device, xp, key
    )
    if plan.positions is not None:
        positions, offset = plan.positions, plan.offset
    if plan.scan:
        _checks.check_finite(positions, "positions", plan.ctx.xp)
    if plan.small is not None and plan.angles.guard(positions):  # small integer tables in one pass (a decode step)
        lane, turns = plan.small
        ctx = plan.ctx
        if lane.fused:  # one launch, the positions checked in it, half precision written by it
            s, c = lane.turns(positions, turns, plan.attention, False, plan.layout, plan.angles.mask, ctx.dtype)
        else:
            s, c = lane.turns(positions, turns, plan.attention, False, plan.layout)
        if ctx.dtype == ctx.work or s.dtype == ctx.dtype:  # the kernel's float32, or the dtype it wrote
            return c, s
        return _angles.cast(c, ctx.dtype, ctx.xp), _angles.cast(s, ctx.dtype, ctx.xp)
    return _rope.tables(plan, positions, offset)


# --------------------------------------------------------------------------
# applying the rotation
# --------------------------------------------------------------------------
def apply_rope(
    x: Array | tuple[Array, ...],
    cos: Array,
    sin: Array,
    *,
    layout: str = "half",
    rotary_dim: int | None = None,
    compact: bool = False,
    heads_axis: int | None = None,
) -> Array:
    r"""Rotate the last axis of ``x`` by the angles of ``cos`` / ``sin``.

    For ``layout="half"``, with :math:`h` = ``rotary_dim // 2``:

    .. math::

        y_i = x_i \cos\theta_i - x_{i+h} \sin\theta_i, \qquad
        y_{i+h} = x_{i+h} \cos\theta_i + x_i \sin\theta_i,

    which is Hugging Face's ``x * cos + rotate_half(x) * sin``; for
    ``layout="interleaved"`` the pairs are :math:`(x_{2i}, x_{2i+1})` (GPT-J's
    ``rotate_every_two``).  Features from ``rotary_dim`` on pass through
    unchanged (partial rotary: GPT-J's ``rotary_dim``, Hugging Face's
    ``partial_rotary_factor``).

    Parameters
    ----------
    x : array, or tuple of arrays
        Queries or keys, shape ``(..., seq, head_dim)``: ``(batch, heads,
        seq, head_dim)``, or any layout with ``heads_axis``.  A tuple ``(q,
        k)`` rotates each by the same tables (Hugging Face's
        ``apply_rotary_pos_emb(q, k, cos, sin)``; any head counts): one
        launch for both on a GPU.
    cos, sin : array
        Tables from :func:`rope_cos_sin` (with the same ``layout``), shape
        ``(..., rotary_dim)``.  Their width is the rotary width, as in
        Hugging Face: tables narrower than ``x``'s head dimension rotate only
        the first features (Phi-3's ``partial_rotary_factor``).  Their leading
        axes broadcast against ``x``'s: either ``(seq, rotary_dim)``, or the
        rank of ``x`` (``(batch, 1, seq, rotary_dim)``, Hugging Face's
        ``cos.unsqueeze(1)``), or any shape together with ``heads_axis``.
        Full tables are Hugging Face's formula: the second feature of a pair
        takes its own entries (``cos[..., i + h]``), so tables whose pairs
        hold two values are rotated alike on every path.
    layout : {"half", "interleaved"}
        Which features are paired, see :func:`rope_cos_sin`.
    rotary_dim : int, optional
        A check of the rotary width: it must equal the tables' width (twice
        it for ``compact=True``).
    compact : bool, default False
        The tables hold each angle once, shape ``(..., rotary_dim // 2)``
        (``cos[..., :h]`` of full half-layout tables).  Never guessed from
        the width: a width that is no full table is an error.
    heads_axis : int, optional
        The axis of ``x`` that holds the heads (``1`` for ``(batch, heads,
        seq, head_dim)``, ``2`` or ``-2`` for ``(batch, seq, heads,
        head_dim)``).  The tables (``(batch, seq, rotary_dim)`` from position
        ids of shape ``(batch, seq)``, or ``(seq, rotary_dim)``) then get a
        size-1 axis there, as Hugging Face's ``unsqueeze_dim`` does.  Without
        it, tables with more than one leading axis but fewer than ``x`` are
        refused: they could line a batch axis up with the heads.

    Returns
    -------
    array, or tuple of arrays
        The rotated ``x``: same dtype (bfloat16 / float16 inputs are computed
        in float32 and rounded once), same device, shape ``x.shape``
        broadcast with the tables' leading axes; for a tuple, a tuple of
        each one rotated.

    Notes
    -----
    Arguments are validated once per combination of types, dtypes, devices
    and shapes (the latest 2048 are kept), so a repeated call (every decode
    step) costs little beyond the rotation.  The result has the values of
    the formula above on every backend, bit for bit, whichever path computes
    it; the interleaved layout is the faster of the two on NumPy and torch
    CPU tensors.  How the paths work and what they cost:
    :ref:`performance-apply-rope`.

    References
    ----------
    .. [1] J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu, "RoFormer: Enhanced
           Transformer with Rotary Position Embedding", 2021,
           https://arxiv.org/abs/2104.09864

    Examples
    --------
    >>> import numpy as np, posenc
    >>> x = np.array([[1.0, 0.0, 0.0, 1.0]])          # one position, head_dim 4
    >>> cos, sin = posenc.rope_cos_sin(np.array([2]), 4)
    >>> posenc.apply_rope(x, cos, sin).round(4)
    array([[-0.4161, -0.02  ,  0.9093,  0.9998]])
    >>> float(np.linalg.norm(posenc.apply_rope(x, cos, sin)))  # a rotation
    1.414213...

    Hugging Face's shapes: ``q`` of ``(batch, heads, seq, head_dim)`` and
    tables from ``position_ids`` of shape ``(batch, seq)``:

    >>> q = np.ones((2, 4, 3, 8))
    >>> cos, sin = posenc.rope_cos_sin(np.array([[0, 1, 2], [5, 6, 7]]), 8)
    >>> posenc.apply_rope(q, cos, sin, heads_axis=1).shape
    (2, 4, 3, 8)

    Queries and keys (two key heads) by the same tables:

    >>> k = np.ones((2, 2, 3, 8))
    >>> q_rot, k_rot = posenc.apply_rope((q, k), cos, sin, heads_axis=1)
    >>> bool((k_rot == posenc.apply_rope(k, cos, sin, heads_axis=1)).all()), k_rot.shape
    (True, (2, 2, 3, 8))
    """
    if isinstance(x, (tuple, list)):
        return _rope.apply_many(tuple(x), cos, sin, layout, rotary_dim, compact, heads_axis)
    key = _compat.call_key((x, cos, sin), (layout, rotary_dim, compact, heads_axis))
    plan = _rope.APPLY_PLANS.get_or_make(key, _rope.apply_plan, x, cos, sin, layout, rotary_dim, compact, heads_axis)
    if plan.small is not None and plan.table_shape is None:  # a decode step
        return plan.small(x, cos, sin, plan.layout)
    return _rope.apply(plan, x, cos, sin)


def rope(
    x: Array,
    positions: int | Array,
    *,
    base: float = 10000.0,
    scaling: Scaling | None = None,
    layout: str = "half",
    rotary_dim: int | None = None,
    seq_len: int | None = None,
    offset: int | Array = 0,
    heads_axis: int | None = None,
) -> Array:
    """Rotary position embedding in one call.

    :func:`rope_cos_sin`, then :func:`apply_rope`.

    Parameters
    ----------
    x : array
        Queries or keys, shape ``(..., seq, head_dim)`` (or any layout with
        ``heads_axis``).
    positions : int or array
        ``n`` (positions ``offset .. offset+n-1``, with ``n == seq``) or an
        array of positions broadcasting against ``x.shape[:-1]``: ``(seq,)``,
        or ``(batch, seq)`` position ids with ``heads_axis``, or ``(batch, 1,
        seq)``.  It must be on ``x``'s device.
    base, scaling, layout
        As in :func:`rope_cos_sin`.
    rotary_dim : int, optional
        Rotate only the first ``rotary_dim`` features (even, at most
        ``head_dim``); the frequencies are those of a ``rotary_dim``-dimensional
        RoPE.  Default: all of them.
    seq_len, offset
        As in :func:`rope_cos_sin`.
    heads_axis : int, optional
        The axis of ``x`` that holds the heads, as in :func:`apply_rope`:
        needed for position ids of shape ``(batch, seq)`` against ``x`` of
        shape ``(batch, heads, seq, head_dim)`` (``heads_axis=1``).

    Returns
    -------
    array
        The rotated ``x`` (its dtype; tables computed in float32, or float64
        for float64 ``x``).

    References
    ----------
    .. [1] J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu, "RoFormer: Enhanced
           Transformer with Rotary Position Embedding", 2021,
           https://arxiv.org/abs/2104.09864

    Examples
    --------
    >>> import numpy as np, posenc
    >>> q = np.ones((2, 5, 8))            # (heads, seq, head_dim)
    >>> posenc.rope(q, 5).shape
    (2, 5, 8)
    >>> np.allclose(posenc.rope(q, 5)[:, 0], q[:, 0])   # position 0 is not rotated
    True
    >>> q = np.ones((2, 4, 3, 8))         # (batch, heads, seq, head_dim)
    >>> posenc.rope(q, np.array([[0, 1, 2], [5, 6, 7]]), heads_axis=1).shape
    (2, 4, 3, 8)
    """
    key = None
    if type(offset) is int and offset and _kernels.shifted_on_device(positions, offset):
        positions, offset = positions + offset, 0  # (as in rope_cos_sin)
    if type(offset) is int and offset == 0:
        key = _compat.call_key((x, positions), (base, scaling, layout, rotary_dim, seq_len, heads_axis))
    plan = _rope.ROPE_PLANS.get_or_make(
        key, _rope.rope_plan, x, positions, base, scaling, layout, rotary_dim, seq_len, offset, heads_axis, key
    )
    if plan.positions is not None:
        positions, offset = plan.positions, plan.offset
    if plan.scan:
        _checks.check_finite(positions, "positions", plan.ctx.xp)
    if plan.small is not None and plan.angles.guard(positions):
        # the full tables in one kernel pass, then the formula (a decode step)
        lane, turns = plan.small
        shape = None if plan.aligned is None else plan.aligned + (plan.dim,)
        if lane.fused:  # tables and rotation in one launch, the positions checked in it
            return lane.rope(x, positions, turns, plan.attention, shape, plan.layout, plan.angles.mask)
        return lane.rope(x, positions, turns, plan.attention, shape, plan.layout)
    xp = plan.ctx.xp
    c, s = _rope.compact_cos_sin(positions, plan.freqs, plan.attention, plan.ctx, offset, plan.angles)
    if plan.aligned is not None:
        c, s = xp.reshape(c, plan.aligned + (plan.dim // 2,)), xp.reshape(s, plan.aligned + (plan.dim // 2,))
        heads_axis = None
    return apply_rope(x, c, s, layout=plan.layout, compact=True, heads_axis=heads_axis)


# --------------------------------------------------------------------------
# layout conversion
# --------------------------------------------------------------------------
def rope_permutation(
    dim: int,
    *,
    source: str = "interleaved",
    target: str = "half",
    rotary_dim: int | None = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    """Indices converting per-head q / k weights between RoPE layouts.

    With ``perm = rope_permutation(head_dim)``, the rows of a query or key
    projection laid out for ``source`` become ``W_target = W_source[perm]``
    (per head, along the head-dimension axis of the output features), and
    the rotated products agree: ``rope(x @ W_target.T, layout=target)`` is
    ``rope(x @ W_source.T, layout=source)[..., perm]``, so every attention
    score is unchanged.  Converting GPT-J / Meta-Llama (interleaved) weights
    to Hugging Face's ``rotate_half`` layout (``source="interleaved",
    target="half"``) gives ``[0, 2, 4, ..., 1, 3, 5, ...]``; the opposite
    direction is its inverse.

    Parameters
    ----------
    dim : int
        The head dimension (positive; even unless ``rotary_dim`` is given).
    source, target : {"interleaved", "half"}
        Layouts of the weights you have and of the ones you want.
    rotary_dim : int, optional
        Only the first ``rotary_dim`` features are rotated (partial rotary);
        the rest keep their place.  Default: ``dim``.
    device, xp
        Namespace and device of the index array (default NumPy).

    Returns
    -------
    array
        Integer indices of shape ``(dim,)`` (the namespace's index dtype).

    Examples
    --------
    >>> import posenc
    >>> posenc.rope_permutation(8)
    array([0, 2, 4, 6, 1, 3, 5, 7])
    >>> posenc.rope_permutation(8, source="half", target="interleaved")
    array([0, 4, 1, 5, 2, 6, 3, 7])
    >>> posenc.rope_permutation(6, rotary_dim=4)
    array([0, 2, 1, 3, 4, 5])

    For a Hugging Face ``q_proj`` weight of shape ``(heads * head_dim,
    hidden)`` from interleaved weights ``w``:
    ``w.reshape(heads, head_dim, hidden)[:, perm].reshape(heads * head_dim, hidden)``.
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=None)
    source = _checks.check_choice(source, "source", _checks.ROPE_LAYOUTS)
    target = _checks.check_choice(target, "target", _checks.ROPE_LAYOUTS)
    if rotary_dim is None:
        dim = _checks.check_dim(dim, even=True)
        r = dim
    else:
        dim = _checks.check_dim(dim)
        r = _checks.check_dim(rotary_dim, "rotary_dim", even=True)
        if r > dim:
            msg = f"`rotary_dim` must be at most `dim` = {dim}, got {r}"
            raise ValueError(msg)
    index = _compat.default_dtype(ctx.xp, ctx.device, "indexing")
    return ctx.from_host(_host_permutation(dim, r, source, target), index)


@host_constant
def _host_permutation(dim: int, r: int, source: str, target: str) -> np.ndarray:
    h = r // 2
    if source == target:
        perm = np.arange(r)
    elif source == "interleaved":  # half position j <- interleaved 2j (j < h), 2(j - h) + 1
        perm = np.concatenate([np.arange(0, r, 2), np.arange(1, r, 2)])
    else:  # interleaved position 2i <- half i, 2i + 1 <- half h + i
        perm = np.stack([np.arange(h), np.arange(h, r)], axis=-1).reshape(r)
    return np.concatenate([perm, np.arange(r, dim)])


# --------------------------------------------------------------------------
# xPos
# --------------------------------------------------------------------------
@host_constant
def _xpos_rates(dim: int, scale_base: float) -> tuple[np.ndarray, float]:
    """xPos's decay rates ``log(zeta) / scale_base`` (host float64) and their
    largest magnitude."""
    zeta = (np.arange(0, dim, 2, dtype=np.float64) + 0.4 * dim) / (1.4 * dim)
    with np.errstate(over="ignore"):
        host_rate = np.log(zeta) / scale_base  # negative: log(zeta) < 0
    return host_rate, float(np.max(np.abs(host_rate)))


# --------------------------------------------------------------------------
# xPos functions
# --------------------------------------------------------------------------
def xpos_scale(
    positions: int | Array,
    dim: int,
    *,
    scale_base: float = 512.0,
    layout: str = "half",
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""The xPos decay scales (Sun et al., 2022, "A Length-Extrapolatable Transformer").

    .. math::

        \zeta_i = \frac{2i + 0.4\,d}{1.4\,d}, \qquad
        \mathrm{scale}_{p, i} = \zeta_i^{\,p / \mathrm{scale\_base}},
        \qquad i = 0, \dots, d/2 - 1,

    laid out like :func:`rope_cos_sin`.  Queries are multiplied by the scale
    and keys by its inverse (``xpos_scale(-positions, ...)``), so that the
    product at offset :math:`m - n` decays like
    :math:`\zeta_i^{(m - n)/\mathrm{scale\_base}}`.  Apply it together with
    RoPE: ``apply_rope(q * scale, cos, sin)``.

    Parameters
    ----------
    positions : int or array
        As in :func:`rope_cos_sin` (torchscale centres the positions of a
        block; pass them so if you want that).
    dim : int
        Rotary dimension, a positive even integer.
    scale_base : float, default 512
        The positions per decay step (> 0).
    layout : {"half", "interleaved"}
        As in :func:`rope_cos_sin`.
    dtype, device, xp
        Output dtype, device and namespace.

    Returns
    -------
    array
        Shape ``positions.shape + (dim,)``, positive.  Computed as
        ``exp(p * log(zeta) / scale_base)`` in float64 where the device has
        it (relative error about :math:`|p \ln\zeta / \mathrm{scale\_base}|
        \cdot 2^{-24}` in float32 otherwise).  Scales of negative positions
        beyond the range of the output dtype saturate just below its largest
        value (never ``inf``); those of large positive positions underflow
        to 0.

    References
    ----------
    .. [1] Y. Sun et al., "A Length-Extrapolatable Transformer", ACL 2023,
           https://arxiv.org/abs/2212.10554

    Examples
    --------
    >>> import posenc
    >>> posenc.xpos_scale(2, 4, scale_base=1.0).round(4)
    array([[1.    , 1.    , 1.    , 1.    ],
           [0.2857, 0.6429, 0.2857, 0.6429]])
    """
    ctx = _compat.resolve({"positions": positions}, xp=xp, device=device, dtype=dtype)
    layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
    dim = _checks.check_dim(dim, even=True)
    scale_base = _checks.check_float(scale_base, "scale_base", positive=True)
    positions = _checks.check_positions(positions, "positions", ctx, out_tail=(dim,), what="table")
    xp_ = ctx.xp
    host_rate, big = _xpos_rates(dim, scale_base)
    wide_max = float(xp_.finfo(ctx.wide).max)
    if not big <= wide_max:
        msg = (
            f"`scale_base` = {scale_base!r} gives decay rates up to {big:.3g}, beyond the range of "
            f"{getattr(ctx.wide, '__name__', None) or ctx.wide}; use a larger scale_base"
        )
        raise ValueError(msg)
    rate = ctx.from_host(host_rate, ctx.wide)
    p = positions
    if isinstance(p, int):
        p_max = float(max(p - 1, 0))
        p = xp_.arange(p, dtype=ctx.wide, device=ctx.device)
    else:
        p_max = wide_max
        p = _angles.cast(p, ctx.wide, xp_)
    # |p * rate| stays finite: beyond |p| = limit every column's exponent is
    # below -1e25 or above 1e25 (the rates differ by at most a factor ~dim),
    # so clipping p there changes no scale
    limit = (wide_max / 2.0) / big if big > 0.0 else math.inf
    if p_max > limit:
        p = xp_.clip(p, -limit, limit)
    e = p[..., None] * rate
    if not isinstance(positions, int):  # negative positions grow the scale
        # scales beyond the output range saturate at its largest value, never inf
        top = min(float(xp_.finfo(ctx.work).max), float(xp_.finfo(ctx.dtype).max))
        e = xp_.clip(e, None, math.log(top) - 1e-3)  # a margin of many float32 ulp
    scale = xp_.exp(e)
    scale = _angles.cast(scale, ctx.work, xp_)
    return _angles.cast(_tables.lay_out(scale, layout, xp_), ctx.dtype, xp_)

