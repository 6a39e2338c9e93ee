r"""2-D relative positions of windowed vision attention.

Swin (Liu et al., 2021), BEiT (Bao et al., 2022), Swin-V2 (Liu et al., 2022),
MaxViT and ViTDet / SAM (Li et al., 2022; Kirillov et al., 2023) give each
attention head a bias that depends on the 2-D offset between a query patch
and a key patch of the same window.  This module builds the integer and
floating tables they index:

* :func:`relative_position_index`: the ``(Wh*Ww, Wh*Ww)`` index of every
  (query, key) patch pair into a table of the ``(2Wh-1)(2Ww-1)`` offsets
  (Swin, BEiT with its three class-token entries);
* :func:`relative_log_coords`: Swin-V2's log-spaced offsets, the input of
  its continuous position bias MLP;
* :func:`resample_relative_table`: a learned table of offsets moved to a
  new window size, as timm and the BEiT code do when fine-tuning at another
  resolution;
* :func:`decomposed_relative_positions`: SAM's and ViTDet's per-axis
  embeddings for queries and keys of different sizes.

Patches are numbered row-major (``p = row * Ww + col``) and the offset of a
pair is *query minus key*, ``(dr, dc) = (r_q - r_k, c_q - c_k)``, as in the
reference code of all of these models (:mod:`posenc.bias` uses *key minus
query* for its 1-D matrices, as Hugging Face's T5).  Every index is exact
integer arithmetic on Python ints or integer arrays; the floating tables are
computed on the host in float64 and rounded once.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _angles, _cache, _checks, _compat
from ._compat import Array, Context
from ._relative import iinfo, int_dtype
from ._tables import kept_on_devices
from ._trace import host_constant
from .learned import linear_weights

__all__ = [
    "relative_position_index",
    "relative_log_coords",
    "resample_relative_table",
    "decomposed_relative_positions",
]

LOG_MODES = ("swin", "cr")
RESAMPLE_METHODS = ("geometric", "bilinear")
#: rows a class token adds to a table of offsets (cls to patch, patch to cls, cls to cls)
CLASS_ROWS = 3


# --------------------------------------------------------------------------
# argument helpers
# --------------------------------------------------------------------------
def _window(value: Any, name: str, *, minimum: int = 1) -> tuple[int, int]:
    """``(height, width)`` from an int (a square window) or a pair of ints."""
    if isinstance(value, bool) or _compat.is_array(value):
        msg = f"`{name}` must be an int or a pair (height, width) of ints, got {_checks.show(value)}"
        raise TypeError(msg)
    if isinstance(value, numbers.Integral):
        value = (value, value)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"`{name}` must be an int or a pair (height, width) of ints, got {_checks.show(value)}"
        raise TypeError(msg)
    if len(value) != 2:
        msg = f"`{name}` must be an int or a pair (height, width) of ints, got {_checks.show(value)}"
        raise ValueError(msg)
    sides = tuple(_checks.check_int(v, name) for v in value)
    if any(s < minimum for s in sides) or any(s > _checks.MAX_ELEMENTS for s in sides):
        msg = f"`{name}` must hold integers in [{minimum}, 2**40], got {_checks.show(tuple(sides))}"
        raise ValueError(msg)
    return sides  # type: ignore[return-value]


def _table_array(table: Any, name: str = "table") -> Array:
    if not _compat.is_array(table):
        msg = f"`{name}` must be an array, got {type(table).__name__}"
        raise TypeError(msg)
    return table


def _work(table: Array, ctx: Context) -> Any:
    """The dtype a real floating table is interpolated in: float64 for
    float64 tables, float32 otherwise (half types too)."""
    return ctx.xp.float64 if table.dtype == ctx.xp.float64 else ctx.xp.float32


def _host(values: np.ndarray, ctx: Context, dtype: Any) -> Array:
    return ctx.from_host(values, dtype)


# --------------------------------------------------------------------------
# relative position index (Swin, BEiT)
# --------------------------------------------------------------------------
@kept_on_devices
def relative_position_index(
    window: int | tuple[int, int],
    *,
    class_token: bool = False,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""Index of every (query, key) patch pair of a window into a table of 2-D offsets.

    For patches :math:`p = (r_p, c_p)` and :math:`q = (r_q, c_q)` of a
    :math:`W_h \times W_w` window, numbered row-major, entry ``[p, q]`` is

    .. math::

        (r_p - r_q + W_h - 1)\,(2 W_w - 1) + (c_p - c_q + W_w - 1),

    the row of offset :math:`(r_p - r_q, c_p - c_q)` in a table of the
    :math:`(2W_h - 1)(2W_w - 1)` offsets ordered row-major (Swin's
    ``relative_position_index``, timm's ``gen_relative_position_index``,
    transformers' ``SwinSelfAttention``).  The bias of a head is
    ``table[index]``.

    Parameters
    ----------
    window : int or (int, int)
        Window ``(height, width)`` in patches; an int is a square window.
    class_token : bool, default False
        BEiT's layout: one more leading row and column for a class token,
        pointing at three extra rows after the :math:`N = (2W_h-1)(2W_w-1)`
        offsets: ``[0, 1:] = N`` (class token to patches), ``[1:, 0] = N +
        1`` (patches to the class token), ``[0, 0] = N + 2``.
    dtype : int dtype, optional
        Default the namespace's default indexing dtype (int64 as timm's, int32
        on JAX without x64).
    device, xp
        Output device and namespace (default NumPy).

    Returns
    -------
    array
        Shape ``(Wh*Ww, Wh*Ww)``, or ``(Wh*Ww + 1, Wh*Ww + 1)`` with
        ``class_token``; values in ``[0, N)`` (``[0, N + 3)``).

    See Also
    --------
    relative_log_coords : Swin-V2's coordinates of the same offsets.
    resample_relative_table : The table for another window size.

    References
    ----------
    .. [1] Z. Liu et al., "Swin Transformer: hierarchical vision transformer using shifted
           windows", ICCV 2021, https://arxiv.org/abs/2103.14030
    .. [2] H. Bao, L. Dong, S. Piao, F. Wei, "BEiT: BERT pre-training of image
           transformers", ICLR 2022, https://arxiv.org/abs/2106.08254

    Examples
    --------
    >>> import posenc
    >>> posenc.relative_position_index((2, 2))
    array([[4, 3, 1, 0],
           [5, 4, 2, 1],
           [7, 6, 4, 3],
           [8, 7, 5, 4]])
    >>> posenc.relative_position_index(1, class_token=True)
    array([[3, 1],
           [2, 0]])
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype, float_output=False)
    wh, ww = _window(window, "window")
    class_token = _checks.check_bool(class_token, "class_token")
    area = wh * ww
    n = area + (1 if class_token else 0)
    _checks.check_size((n, n), "index")
    out_t = int_dtype(dtype, ctx, "indexing")
    offsets = (2 * wh - 1) * (2 * ww - 1)
    top = offsets + (CLASS_ROWS - 1 if class_token else -1)
    _, dmax = iinfo(ctx.xp, out_t)
    if top > dmax:
        msg = f"`dtype` {out_t} cannot hold index {top} of window {(wh, ww)}; pass a wider integer dtype"
        raise ValueError(msg)
    xp_ = ctx.xp
    r = xp_.arange(wh, dtype=out_t, device=ctx.device)
    c = xp_.arange(ww, dtype=out_t, device=ctx.device)
    rows = xp_.reshape(xp_.broadcast_to(r[:, None], (wh, ww)), (-1,))
    cols = xp_.reshape(xp_.broadcast_to(c[None, :], (wh, ww)), (-1,))
    # (r_p + Wh - 1) - r_q >= 0: no negative intermediate, so unsigned dtypes work too
    dr = (rows[:, None] + (wh - 1)) - rows[None, :]
    dc = (cols[:, None] + (ww - 1)) - cols[None, :]
    index = dr * (2 * ww - 1) + dc
    if not class_token:
        return index

    def full(shape: tuple[int, int], value: int) -> Array:
        return xp_.full(shape, value, dtype=out_t, device=ctx.device)

    first = xp_.concat([full((1, 1), offsets + 2), full((1, area), offsets)], axis=1)
    rest = xp_.concat([full((area, 1), offsets + 1), index], axis=1)
    return xp_.concat([first, rest], axis=0)


# --------------------------------------------------------------------------
# Swin-V2 log-spaced coordinates
# --------------------------------------------------------------------------
def _pretrained(value: Any) -> tuple[int, int] | None:
    """None, or the pretrained window ``(height, width)``; ``0`` and ``(0, 0)``
    (the peers' spelling of "none") are None."""
    if value is None:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value == 0:
        return None
    pair = isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and len(value) == 2
    if pair and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v == 0 for v in value):
        return None
    sides = _window(value, "pretrained_window", minimum=1)
    if min(sides) < 2:
        msg = (
            f"`pretrained_window` sides must be >= 2 (the offsets are divided by side - 1), "
            f"got {_checks.show(tuple(sides))}; pass None (or (0, 0)) for no pretrained window"
        )
        raise ValueError(msg)
    return sides


@host_constant
def _log_axis(side: int, scale: int, mode: str) -> np.ndarray:
    """The log-spaced offsets ``-(side-1) .. side-1`` of one axis, in float64."""
    out = []
    for d in range(-(side - 1), side):
        if mode == "cr":
            x = float(d)
            out.append(math.copysign(math.log1p(abs(x)), x) if d else 0.0)
        else:
            x = 8.0 * d / (scale - 1) if scale > 1 else 0.0
            out.append(math.copysign(math.log1p(abs(x)) / math.log(8.0), x) if d else 0.0)
    return np.asarray(out, dtype=np.float64)


def relative_log_coords(
    window: int | tuple[int, int],
    *,
    pretrained_window: int | tuple[int, int] | None = None,
    mode: str = "swin",
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""Swin-V2's log-spaced coordinates of the 2-D offsets of a window (Liu et al., 2022).

    The input of Swin-V2's continuous position bias: for every offset
    :math:`(\Delta r, \Delta c)`, :math:`|\Delta r| \le W_h - 1`,
    :math:`|\Delta c| \le W_w - 1`, the pair

    .. math::

        \text{swin:}\quad \operatorname{sign}(x)\,\frac{\log_2(1 + |x|)}{\log_2 8},
        \quad x = \frac{8\,\Delta}{P - 1}; \qquad
        \text{cr:}\quad \operatorname{sign}(\Delta)\,\ln(1 + |\Delta|),

    per axis, with :math:`P` the side of the pretrained window (default the
    window's own): offsets span :math:`[-8, 8]` before the logarithm, so a
    window larger than the one trained on extrapolates smoothly.  timm's
    ``gen_relative_log_coords``; transformers' ``Swinv2SelfAttention``
    (``relative_coords_table``, which adds a leading axis of 1).

    Parameters
    ----------
    window : int or (int, int)
        Window ``(height, width)``; an int is a square window.
    pretrained_window : int or (int, int), optional
        The window the model was pretrained with (Swin-V2's
        ``pretrained_window_size``; sides >= 2).  ``0`` or ``(0, 0)``, the
        peers' default, means none.  ``"swin"`` mode only.
    mode : {"swin", "cr"}, default "swin"
        ``"swin"``: the paper's normalised coordinates; ``"cr"``: timm's
        unnormalised natural-log variant (Swin-V2 "cr" models).
    dtype, device, xp
        Output floating dtype, device and namespace.

    Returns
    -------
    array
        Shape ``(2*Wh - 1, 2*Ww - 1, 2)``: ``[..., 0]`` the row offset's
        coordinate, ``[..., 1]`` the column's.  Flattened to
        ``(-1, 2)`` its rows follow :func:`relative_position_index`.

    Notes
    -----
    The values are computed on the host in float64 with ``log1p`` and
    rounded once to ``dtype``: a float32 table is within half an ulp of the
    truth (the peers' float32 ``log2`` is within an ulp or two of it).  An
    axis of one patch has only the offset 0, whose coordinate is 0: timm
    divides by zero there and returns NaN, transformers returns 0 only when
    both sides are 1.

    References
    ----------
    .. [1] Z. Liu et al., "Swin Transformer V2: scaling up capacity and resolution",
           CVPR 2022, https://arxiv.org/abs/2111.09883

    Examples
    --------
    >>> import posenc
    >>> posenc.relative_log_coords((2, 3))[..., 1].round(4)
    array([[-1.0566, -0.774 ,  0.    ,  0.774 ,  1.0566],
           [-1.0566, -0.774 ,  0.    ,  0.774 ,  1.0566],
           [-1.0566, -0.774 ,  0.    ,  0.774 ,  1.0566]])
    >>> posenc.relative_log_coords(3, pretrained_window=2)[..., 0].max().round(4)
    np.float64(1.3625)
    >>> posenc.relative_log_coords(2, mode="cr")[0, 0].round(4)
    array([-0.6931, -0.6931])
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    wh, ww = _window(window, "window")
    mode = _checks.check_choice(mode, "mode", LOG_MODES)
    pre = _pretrained(pretrained_window)
    if pre is not None and mode == "cr":
        msg = "`pretrained_window` applies to mode 'swin' only (mode 'cr' does not normalise the offsets)"
        raise ValueError(msg)
    h, w = 2 * wh - 1, 2 * ww - 1
    _checks.check_size((h, w, 2), "table")
    ph, pw = (wh, ww) if pre is None else pre
    xp_ = ctx.xp
    rows = _host(_log_axis(wh, ph, mode), ctx, ctx.work)
    cols = _host(_log_axis(ww, pw, mode), ctx, ctx.work)
    out = xp_.stack([xp_.broadcast_to(rows[:, None], (h, w)), xp_.broadcast_to(cols[None, :], (h, w))], axis=-1)
    return _angles.cast(out, ctx.dtype, xp_)


# --------------------------------------------------------------------------
# resampling a table of offsets to a new window
# --------------------------------------------------------------------------
def _geometric_coords(src: int, dst: int) -> list[float]:
    """BEiT's source coordinates of a ``src``-long axis of offsets meant to
    cover a ``dst``-long one: spacings 1, q, q^2, ... from the centre, with the
    ratio q in [1.01, 1.5] found by bisection as in the BEiT fine-tuning
    code (and timm's ``resize_rel_pos_bias_table``)."""
    n, half = src // 2, dst // 2
    lo, hi = 1.01, 1.5
    q = lo
    while hi - lo > 1e-6:
        q = (lo + hi) / 2.0
        if (1.0 - q**n) / (1.0 - q) > half:
            hi = q
        else:
            lo = q
    dist, cur = [], 1.0
    for i in range(n):
        dist.append(cur)
        cur += q ** (i + 1)
    return [-d for d in reversed(dist)] + [0.0] + dist


def _uneven_linear(points: list[float], targets: np.ndarray) -> np.ndarray:
    """``(len(targets), len(points))`` weights of piecewise-linear
    interpolation on increasing ``points``, constant beyond the ends."""
    p = np.asarray(points, dtype=np.float64)
    w = np.zeros((targets.size, p.size))
    for t, x in enumerate(targets):
        if x <= p[0]:
            w[t, 0] = 1.0
        elif x >= p[-1]:
            w[t, -1] = 1.0
        else:
            hi = int(np.searchsorted(p, x, side="left"))
            span = p[hi] - p[hi - 1]
            w[t, hi - 1] = (p[hi] - x) / span
            w[t, hi] = (x - p[hi - 1]) / span
    return w


@host_constant
def _resample_weights(src: int, dst: int, method: str) -> np.ndarray:
    """``(dst, src)`` interpolation weights of one axis of offsets."""
    if method == "bilinear":
        lo, hi, frac = linear_weights(src, dst, False)
        w = np.zeros((dst, src))
        rows = np.arange(dst)
        np.add.at(w, (rows, lo), 1.0 - frac)
        np.add.at(w, (rows, hi), frac)
        return w
    half = dst // 2
    return _uneven_linear(_geometric_coords(src, dst), np.arange(-half, half + 1, dtype=np.float64))


def _two_taps(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The (at most two) nonzero columns of each row of 1-D interpolation
    weights: ``lo, hi, w_lo, w_hi`` (``w_hi = 0`` where one column is read)."""
    lo = np.argmax(w != 0, axis=1)
    hi = w.shape[1] - 1 - np.argmax(w[:, ::-1] != 0, axis=1)
    rows = np.arange(w.shape[0])
    w_lo = w[rows, lo]
    w_hi = np.where(hi != lo, w[rows, hi], 0.0)
    return lo, hi, w_lo, w_hi


@host_constant
def _flat_taps(sh: int, sw: int, dh: int, dw: int, method: str) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """``(rows, weights)`` of the four gathers that resample a flat table of
    ``(sh, sw)`` offsets to ``(dh, dw)``: row ``r * dw + c`` of the result is
    the sum over the taps of ``weights * table[rows]``."""
    rlo, rhi, rwlo, rwhi = _two_taps(_resample_weights(sh, dh, method))
    clo, chi, cwlo, cwhi = _two_taps(_resample_weights(sw, dw, method))
    out = []
    for r, rw in ((rlo, rwlo), (rhi, rwhi)):
        for c, cw in ((clo, cwlo), (chi, cwhi)):
            idx = (r[:, None] * sw + c[None, :]).reshape(-1)
            out.append((idx, (rw[:, None] * cw[None, :]).reshape(-1, 1)))
    return tuple(out)


def _table_grid(table: Array, old_window: Any, class_token: bool) -> tuple[bool, tuple[int, int], int]:
    """``(flat, (Sh, Sw), extra)`` of a flat ``(positions, heads)`` or grid
    ``(heads, 2Wh-1, 2Ww-1)`` table (the head count may stay traced)."""
    shape = tuple(table.shape)
    if table.ndim == 3:
        if class_token:
            msg = "`class_token` applies to flat tables (positions, heads); a (heads, H, W) table has no class rows"
            raise ValueError(msg)
        sh, sw = int(shape[1]), int(shape[2])
        if sh % 2 == 0 or sw % 2 == 0 or shape[0] == 0:
            msg = f"`table` of shape (heads, 2*Wh - 1, 2*Ww - 1) must have odd spatial sides, got shape {shape}"
            raise ValueError(msg)
        if old_window is not None:
            ow = _window(old_window, "old_window")
            if (2 * ow[0] - 1, 2 * ow[1] - 1) != (sh, sw):
                msg = f"`old_window` {ow} does not match `table` of shape {shape} (sides 2*Wh - 1, 2*Ww - 1)"
                raise ValueError(msg)
        return False, (sh, sw), 0
    if table.ndim != 2:
        msg = f"`table` must have shape (positions, heads) or (heads, 2*Wh - 1, 2*Ww - 1), got shape {shape}"
        raise ValueError(msg)
    if old_window is None:
        msg = (
            "`old_window` is needed for a flat (positions, heads) table: its row count does not say the window's "
            "height and width"
        )
        raise ValueError(msg)
    ow = _window(old_window, "old_window")
    extra = CLASS_ROWS if class_token else 0
    sh, sw = 2 * ow[0] - 1, 2 * ow[1] - 1
    if int(shape[0]) != sh * sw + extra or shape[1] == 0:
        want = f"(2*{ow[0]} - 1) * (2*{ow[1]} - 1){' + 3' if class_token else ''} = {sh * sw + extra}"
        msg = f"`table` must have {want} rows for `old_window` {ow}, got shape {shape}"
        raise ValueError(msg)
    return True, (sh, sw), extra


def resample_relative_table(
    table: Array,
    window: int | tuple[int, int],
    *,
    old_window: int | tuple[int, int] | None = None,
    class_token: bool = False,
    method: str = "geometric",
) -> Array:
    r"""Move a learned table of 2-D relative-position biases to a new window size.

    A Swin or BEiT model fine-tuned at another resolution (or window) needs
    its ``relative_position_bias_table`` for the new window's
    :math:`(2W_h - 1)(2W_w - 1)` offsets.  The table is interpolated per
    head over the grid of offsets, separably along rows and columns:

    * ``"geometric"`` (default): the BEiT fine-tuning code's resampling, as
      timm's ``resize_rel_pos_bias_table`` does it (Swin, BEiT, MaxViT,
      ViT-relpos checkpoints in timm).  The old offsets are placed at
      geometrically growing distances :math:`0, \pm 1, \pm(1 + q), \pm(1 +
      q + q^2), \dots` from the centre, the ratio :math:`q \in [1.01, 1.5]`
      chosen by bisection so that they reach the new window's largest
      offset, and the new integer offsets are read by piecewise-linear
      interpolation (constant beyond the outermost old offsets): the
      centre of the table, where the bias varies most, keeps its
      resolution.
    * ``"bilinear"``: ``torch.nn.functional.interpolate(mode="bilinear",
      align_corners=False)`` over the offsets (transformers' BEiT and
      Data2Vec-Vision with ``interpolate_pos_encoding``).

    Parameters
    ----------
    table : array
        Either flat, ``(positions, heads)`` with the offsets row-major (and
        three class-token rows last when ``class_token``): the layout of
        Swin, BEiT, timm's ``RelPosBias`` and transformers; or a grid
        ``(heads, 2*Wh - 1, 2*Ww - 1)`` (timm's MaxViT ``RelPosBiasTf``).
        Real floating; the result has its namespace, device and dtype
        (half types are interpolated in float32).  Differentiable.
    window : int or (int, int)
        The new window ``(height, width)``.
    old_window : int or (int, int), optional
        The window the table was made for.  Needed for flat tables (their
        row count does not tell height from width); read from the shape of
        grid tables (and checked when given).
    class_token : bool, default False
        A flat table ends with BEiT's three class-token rows (see
        :func:`relative_position_index`): they are kept as they are.
    method : {"geometric", "bilinear"}, default "geometric"
        How to interpolate (above).

    Returns
    -------
    array
        The same layout for ``window``: ``((2*Wh - 1)(2*Ww - 1) [+ 3],
        heads)`` or ``(heads, 2*Wh - 1, 2*Ww - 1)``.  A table whose window
        does not change is returned as a copy, as timm returns it unchanged
        (when only one side changes, both axes are resampled, as in timm).

    Notes
    -----
    Both methods are linear in the table: the result is :math:`A\,T\,B^\top`
    per head with interpolation matrices :math:`A`, :math:`B` of the two
    axes, computed on the host in float64.  timm computes the same weights in
    float32, so float32 results agree within a few ulp of the table's
    values.  transformers' BEiT reads a flat table as ``(width, height)``,
    which differs from this (and timm's) row-major reading for windows that
    are not square.

    References
    ----------
    .. [1] H. Bao, L. Dong, S. Piao, F. Wei, "BEiT: BERT pre-training of image
           transformers", ICLR 2022, https://arxiv.org/abs/2106.08254

    Examples
    --------
    >>> import numpy as np, posenc
    >>> t = np.ones((1, 5, 1)) * np.arange(5.0)  # one head, window 3 x 3, column offsets -2 .. 2
    >>> posenc.resample_relative_table(t, (3, 4))[0, 0].round(3)  # the centre keeps its spacing
    array([0.   , 0.333, 1.   , 2.   , 3.   , 3.667, 4.   ])
    >>> posenc.resample_relative_table(t, (3, 4), method="bilinear")[0, 0].round(3)
    array([0.   , 0.571, 1.286, 2.   , 2.714, 3.429, 4.   ])
    >>> flat = np.zeros(((2 * 7 - 1) ** 2 + 3, 4))
    >>> posenc.resample_relative_table(flat, 12, old_window=7, class_token=True).shape
    (532, 4)
    """
    table = _table_array(table)
    ctx = _compat.resolve({"table": table}, dtype=None)
    xp_ = ctx.xp
    _checks.check_real_float(table, "table", xp_)
    class_token = _checks.check_bool(class_token, "class_token")
    method = _checks.check_choice(method, "method", RESAMPLE_METHODS)
    flat, (sh, sw), extra = _table_grid(table, old_window, class_token)
    nh, nw = _window(window, "window")
    dh, dw = 2 * nh - 1, 2 * nw - 1
    heads = table.shape[1] if flat else table.shape[0]  # (may be traced: no host value depends on it)
    _checks.check_size((dh * dw + extra, heads), "table")
    if (sh, sw) == (dh, dw):
        return xp_.asarray(table, copy=True)
    work = _work(table, ctx)
    t = _angles.cast(table, work, xp_)
    if flat:
        # four gathers of the offsets' rows (each new offset reads at most two
        # old ones per axis): no reshape of the table (torch's compiler fails on
        # reshapes of tables whose sizes it traces)
        idt = _compat.default_dtype(xp_, ctx.device, "indexing")
        out = None
        for idx, w in _flat_taps(sh, sw, dh, dw, method):
            term = xp_.take(t, _host(idx, ctx, idt), axis=0) * _host(w, ctx, work)
            out = term if out is None else out + term
        if extra:
            out = xp_.concat([out, t[sh * sw :, ...]], axis=0)
    else:
        a = _host(_resample_weights(sh, dh, method), ctx, work)
        bt = _host(np.ascontiguousarray(_resample_weights(sw, dw, method).T), ctx, work)
        out = xp_.matmul(xp_.matmul(a, t), bt)  # (heads, dh, dw)
    return _angles.cast(out, table.dtype, xp_)


# --------------------------------------------------------------------------
# decomposed relative positions (SAM, ViTDet)
# --------------------------------------------------------------------------
@host_constant
def _sam_plan(q: int, k: int, rows: int) -> tuple[np.ndarray, ...]:
    """:func:`_sam_plan_cached` (a constant for torch's tracer)."""
    return _sam_plan_cached(q, k, rows)


@_cache.memoize(64)
def _sam_plan_cached(q: int, k: int, rows: int) -> tuple[np.ndarray, ...]:
    """SAM's row of the resized table for every (query, key) pair, flattened,
    then (when the table has ``rows != 2*max(q, k) - 1`` rows) the two table
    rows and the weights of its linear resampling: ``(index,)`` or ``(lo, hi,
    w_lo, w_hi)``.

    The index is SAM's ``(q_coords - k_coords) + (k - 1) * max(q/k, 1)``
    truncated to an integer, evaluated in float32 exactly as its PyTorch code
    does (``arange * float`` products and sums rounded to float32): it
    differs from the exact rational floor for some sizes (q = 8, k = 6: the
    pair (0, 2) reads row 3 where ``8 * 3 / 6 = 4``), and trained models use
    the float32 rows.
    """
    f32 = np.float32
    i = np.arange(q, dtype=f32)[:, None]
    j = np.arange(k, dtype=f32)[None, :]
    rel = (i * f32(max(k / q, 1.0)) - j * f32(max(q / k, 1.0))) + f32((k - 1) * max(q / k, 1.0))
    index = rel.astype(np.int64).reshape(-1)  # truncation toward zero, as torch's .long()
    size = 2 * max(q, k) - 1
    index = np.clip(index, 0, size - 1)  # (within SAM's bounds already: its lookup would fail otherwise)
    if rows == size:
        out: tuple[np.ndarray, ...] = (index,)
    else:
        lo, hi, frac = linear_weights(rows, size, False)
        out = (lo[index], hi[index], (1.0 - frac)[index, None], frac[index, None])
    for a in out:
        a.setflags(write=False)
    return out


def decomposed_relative_positions(q_size: int, k_size: int, table: Array) -> Array:
    r"""SAM's and ViTDet's relative-position embeddings of one axis, for any query and key sizes.

    The decomposed relative positions of MViTv2, ViTDet and the Segment
    Anything image encoder (``get_rel_pos``): a learned table of
    ``(L, channels)`` embeddings of the offsets along one axis (``rel_pos_h``
    or ``rel_pos_w``) is linearly resampled to the
    :math:`2\max(q, k) - 1` offsets of ``q_size`` queries and ``k_size`` keys
    (``F.interpolate(mode="linear")``, only when ``L`` differs), and the
    embedding of query :math:`i` and key :math:`j` is the row

    .. math::

        \left\lfloor i\,\max(k/q, 1) - j\,\max(q/k, 1) + (k - 1)\max(q/k, 1) \right\rfloor,

    the shorter side's coordinates stretched to the longer one's.  With
    ``Rh`` and ``Rw`` from this function for the two axes, SAM adds
    ``einsum("bhwc,hkc->bhwk", q, Rh)[..., :, None]`` and
    ``einsum("bhwc,wkc->bhwk", q, Rw)[..., None, :]`` to the attention logits
    viewed as ``(b, qh, qw, kh, kw)``.

    Parameters
    ----------
    q_size, k_size : int
        Query and key sizes along the axis (positive).
    table : array
        Shape ``(L, channels)``, real floating: the model's ``rel_pos_h`` or
        ``rel_pos_w``.  The result has its namespace, device and dtype (half
        types are interpolated in float32); gradients flow to it.

    Returns
    -------
    array
        Shape ``(q_size, k_size, channels)``.

    Notes
    -----
    The row index is evaluated in float32, as SAM's PyTorch code does: for
    ``q_size != k_size`` it differs from the exact rational floor for some
    sizes (a product such as ``3 * (8/6)`` rounds to just below 4), and the
    models were trained with the float32 rows, so posenc follows them.  The
    index depends only on the sizes and is computed once on the host.

    References
    ----------
    .. [1] Y. Li, H. Mao, R. Girshick, K. He, "Exploring plain vision transformer
           backbones for object detection", ECCV 2022, https://arxiv.org/abs/2203.16527
    .. [2] A. Kirillov et al., "Segment anything", ICCV 2023,
           https://arxiv.org/abs/2304.02643

    Examples
    --------
    >>> import numpy as np, posenc
    >>> table = np.arange(7.0)[:, None]  # offsets -3 .. 3, one channel
    >>> posenc.decomposed_relative_positions(4, 4, table)[..., 0]
    array([[3., 2., 1., 0.],
           [4., 3., 2., 1.],
           [5., 4., 3., 2.],
           [6., 5., 4., 3.]])
    >>> posenc.decomposed_relative_positions(4, 2, table)[..., 0]
    array([[2., 0.],
           [3., 1.],
           [4., 2.],
           [5., 3.]])
    """
    table = _table_array(table)
    ctx = _compat.resolve({"table": table}, dtype=None)
    xp_ = ctx.xp
    _checks.check_real_float(table, "table", xp_, min_ndim=2, shape="(L, channels)")
    if table.ndim != 2 or int(table.shape[0]) == 0:
        msg = f"`table` must have shape (L, channels) with L >= 1, got shape {tuple(table.shape)}"
        raise ValueError(msg)
    q = _checks.check_int(q_size, "q_size", minimum=1)
    k = _checks.check_int(k_size, "k_size", minimum=1)
    channels = table.shape[1]  # (may be traced)
    _checks.check_size((q, k, channels), "embeddings")
    plan = _sam_plan(q, k, int(table.shape[0]))
    idt = _compat.default_dtype(xp_, ctx.device, "indexing")
    if len(plan) == 1:
        out = xp_.take(table, _host(plan[0], ctx, idt), axis=0)
        return xp_.reshape(out, (q, k, channels))
    work = _work(table, ctx)
    t = _angles.cast(table, work, xp_)
    lo, hi, w_lo, w_hi = plan
    out = xp_.take(t, _host(lo, ctx, idt), axis=0) * _host(w_lo, ctx, work)
    out = out + xp_.take(t, _host(hi, ctx, idt), axis=0) * _host(w_hi, ctx, work)
    return _angles.cast(xp_.reshape(out, (q, k, channels)), table.dtype, xp_)
