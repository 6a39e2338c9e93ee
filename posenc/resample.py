"""Resampling learned 2-D position tables to a new grid (a ViT fine-tuned or
run at a new resolution), with the sampling of
``torch.nn.functional.interpolate``: by output size (timm, MAE) or by scale
factor (the original DINOv2), and as precomputed gather taps for packed
batches of images of different sizes (transformers' vision models).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _angles, _checks, _compat
from ._compat import Array, Context
from ._trace import host_constant

__all__ = ["resample_grid", "grid_interpolation_taps"]

METHODS = ("bilinear", "bicubic")
#: PyTorch's bicubic coefficient (``upsample_bicubic2d``, Keys' cubic with a = -0.75)
_CUBIC_A = -0.75
#: the coefficient of the antialiased (PIL-compatible) bicubic filter
_CUBIC_A_AA = -0.5


# --------------------------------------------------------------------------
# resampling learned tables
# --------------------------------------------------------------------------
def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel."""
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _triangle(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _scale(old: int, new: int, align_corners: bool, step: float | None = None) -> float:
    """PyTorch's ``area_pixel_compute_scale``: the source step per output index.

    ``step`` is ``1 / scale_factor`` when ``F.interpolate`` was given a scale
    factor (``recompute_scale_factor=False``); ``align_corners=True`` ignores it.
    """
    if align_corners:
        return (old - 1) / (new - 1) if new > 1 else 0.0
    return old / new if step is None else step


def _taps(
    old: int, new: int, method: str, align_corners: bool, antialias: bool, step: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Source indices and weights, each (new, taps), of one axis of ``F.interpolate``.

    PyTorch's conventions (``aten/src/ATen/native/UpSample.h``):
    ``align_corners=False`` reads source coordinate ``(t + 0.5) * s - 0.5``
    with ``s = old/new``, or ``s = 1/scale_factor`` when a scale factor was
    given (clamped at 0 for bilinear, not for bicubic), ``align_corners=True``
    reads ``t * (old-1)/(new-1)``; bicubic uses Keys' kernel with
    ``a = -0.75`` on taps ``floor(x)-1 .. floor(x)+2`` clamped to the border.
    ``antialias=True`` is PIL's resampler (``_upsample_*_aa``): a triangle or
    a ``a = -0.5`` cubic filter, widened by the scale when downsampling, whose
    weights are normalised over the taps inside the table.
    """
    t = np.arange(new, dtype=np.float64)
    scale = _scale(old, new, align_corners, step)
    if antialias:
        support = (1.0 if method == "bilinear" else 2.0) * max(scale, 1.0)
        invscale = 1.0 / scale if scale >= 1.0 else 1.0
        width = int(math.ceil(support)) * 2 + 1
        center = scale * (t + 0.5)
        xmin = np.maximum((center - support + 0.5).astype(np.int64), 0)
        xmax = np.minimum((center + support + 0.5).astype(np.int64), old)
        j = np.arange(width)[None, :]
        idx = xmin[:, None] + j
        valid = j < np.minimum(xmax - xmin, width)[:, None]
        x = (idx - center[:, None] + 0.5) * invscale
        w = _triangle(x) if method == "bilinear" else _cubic(x, _CUBIC_A_AA)
        w = np.where(valid, w, 0.0)
        total = w.sum(axis=1, keepdims=True)
        w = np.divide(w, total, out=np.zeros_like(w), where=total != 0)
        return np.minimum(idx, old - 1), w
    if method == "bilinear":  # the 1-D grid of resample_table
        src = t * scale if align_corners else np.maximum((t + 0.5) * scale - 0.5, 0.0)
        lo = np.minimum(np.floor(src).astype(np.int64), old - 1)
        hi = np.minimum(lo + 1, old - 1)
        frac = src - lo
        return np.stack([lo, hi], axis=1), np.stack([1.0 - frac, frac], axis=1)
    src = t * scale if align_corners else (t + 0.5) * scale - 0.5
    base = np.floor(src)
    f = src - base
    idx = np.clip(base.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :], 0, old - 1)
    w = np.stack(
        [_cubic(f + 1.0, _CUBIC_A), _cubic(f, _CUBIC_A), _cubic(1.0 - f, _CUBIC_A), _cubic(2.0 - f, _CUBIC_A)], axis=1
    )
    return idx, w


@host_constant
def _plan(
    old: int, new: int, method: str, align_corners: bool, antialias: bool, step: float | None
) -> tuple[tuple[tuple[int, ...], tuple[float, ...]], ...]:
    """The taps of :func:`_taps` with a nonzero weight, as Python values:
    ``(indices, weights)`` per tap (a constant for torch's tracer)."""
    idx, w = _taps(old, new, method, align_corners, antialias, step)
    return tuple(
        (tuple(idx[:, t].tolist()), tuple(w[:, t].tolist())) for t in range(idx.shape[1]) if np.any(w[:, t])
    )


def _resample_axis(
    x: Array, axis: int, plan: tuple[tuple[tuple[int, ...], tuple[float, ...]], ...], ctx: Context, dtype: Any
) -> Array:
    """``sum_t w_t * take(x, idx_t, axis)`` along a negative ``axis`` over the taps of ``plan``."""
    xp = ctx.xp
    idx_t = _compat.default_dtype(ctx.xp, ctx.device, "indexing")
    trailing = (1,) * (-axis - 1)
    out = None
    for idx, w in plan:
        g = xp.take(x, ctx.asarray(idx, idx_t), axis=x.ndim + axis)
        term = g * xp.reshape(ctx.asarray(w, dtype), (-1,) + trailing)
        out = term if out is None else out + term
    return out  # not None: every row's weights sum to 1


def _scale_factor(value: Any) -> tuple[float, ...]:
    """``scale_factor`` as ``(s_h, s_w)``: a positive finite number or a pair of them."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, float, int)) or isinstance(value, bool):
        msg = f"`scale_factor` must be a positive number or a pair (s_h, s_w) of them, got {_checks.show(value)}"
        raise TypeError(msg)
    pair = (value, value) if not isinstance(value, Sequence) else tuple(value)
    if len(pair) != 2:
        msg = f"`scale_factor` must be a positive number or a pair (s_h, s_w) of them, got {_checks.show(value)}"
        raise ValueError(msg)
    return tuple(_checks.check_float(v, "scale_factor", positive=True) for v in pair)


def resample_grid(
    table: Array,
    new_grid_shape: int | Sequence[int],
    *,
    num_prefix_tokens: int = 0,
    method: str = "bilinear",
    old_grid_shape: Sequence[int] | None = None,
    align_corners: bool = False,
    antialias: bool = False,
    scale_factor: float | Sequence[float] | None = None,
) -> Array:
    """Resample a learned 2-D position table to a new grid (ViT fine-tuning at a new resolution).

    ``table`` holds ``num_prefix_tokens`` rows (class, distillation or
    register tokens) followed by the ``H * W`` rows of the patch grid in
    row-major order.  The prefix rows are kept unchanged; the grid is
    interpolated to ``new_grid_shape`` exactly as
    ``torch.nn.functional.interpolate`` does on the ``(1, dim, H, W)``
    layout (what timm's ``resample_abs_pos_embed`` and MAE's
    ``interpolate_pos_embed`` call), so checkpoints resized here and there
    agree.  :func:`posenc.resample_table` is the 1-D case.

    Parameters
    ----------
    table : array, shape (..., num_prefix_tokens + H * W, dim)
        Real floating table; leading batch axes are allowed (timm's tables
        are ``(1, N, dim)``).  The result has its dtype, namespace and device;
        half-precision tables are interpolated in float32.
    new_grid_shape : int or (int, int)
        New ``(height, width)``; an int means a square grid.
    num_prefix_tokens : int, default 0
        Leading rows that are not part of the grid (1 for a class token).
    method : {"bilinear", "bicubic"}
        ``mode=`` of ``F.interpolate``.  Bicubic is PyTorch's (Keys' cubic
        with ``a = -0.75``, border rows repeated), as MAE and timm use.
    old_grid_shape : (int, int), optional
        The current ``(H, W)``; inferred for square grids when omitted.
    align_corners : bool, default False
        ``align_corners=`` of ``F.interpolate`` (False as timm and MAE).
    antialias : bool, default False
        ``antialias=`` of ``F.interpolate`` (``align_corners=False`` only).
        MAE resamples without it; timm's ``resample_abs_pos_embed`` passes
        ``antialias=True`` by default, which uses a ``a = -0.5`` cubic (or
        a triangle) filter normalised at the borders, widened when
        downsampling: pass ``antialias=True`` to match timm.
    scale_factor : float or (float, float), optional
        Sample as ``F.interpolate(scale_factor=(s_h, s_w),
        recompute_scale_factor=False)`` does rather than by output size:
        output index ``t`` reads the source coordinate ``(t + 0.5) / s - 0.5``
        instead of ``(t + 0.5) * H / new_H - 0.5`` (``align_corners=False``;
        ``align_corners=True`` reads the same coordinates either way).
        ``new_grid_shape`` must then be the size PyTorch derives,
        ``(floor(H * s_h), floor(W * s_w))``, or the call is refused.  As
        PyTorch's CPU kernels do, an axis whose size does not change is
        copied (bilinear, and both methods with ``antialias``); bicubic
        without antialiasing samples it with its scale factor.  The
        original DINOv2 (and Depth Anything, the DINOv2 of ``torch.hub``)
        resizes its table with ``scale_factor=((h + 0.1) / M, (w + 0.1) / M)``
        for a new grid ``(h, w)`` and an ``M x M`` table: the two rules
        differ by a few tenths on sin-cos-like tables (see the example).

    Returns
    -------
    array
        Shape ``(..., num_prefix_tokens + new_H * new_W, dim)``.

    Notes
    -----
    Indices and weights depend only on the sizes: they are computed on the
    host in float64 and applied with ``take`` and multiply-adds, one axis
    at a time (width, then height), so the function runs under ``jax.jit``
    and builds a lazy Dask graph.  :func:`grid_interpolation_taps` gives the
    same sampling as explicit gather indices and weights.

    References
    ----------
    .. [1] M. Oquab et al., "DINOv2: learning robust visual features without supervision",
           TMLR 2024, https://arxiv.org/abs/2304.07193

    Examples
    --------
    >>> import numpy as np, posenc
    >>> t = np.arange(1 + 4, dtype=np.float64)[:, None]  # class token + 2x2 grid
    >>> posenc.resample_grid(t, (3, 3), num_prefix_tokens=1, align_corners=True)[:, 0]
    array([0. , 1. , 1.5, 2. , 2. , 2.5, 3. , 3. , 3.5, 4. ])
    >>> table = posenc.sincos_grid((14, 14), 64, cls_token=True)
    >>> posenc.resample_grid(table, 16, num_prefix_tokens=1, method="bicubic").shape
    (257, 64)

    The original DINOv2's resize of its 37 x 37 table to a 16 x 20 grid, and
    how far the size rule is from it:

    >>> pe = posenc.sincos_grid((37, 37), 64, cls_token=True)
    >>> s = ((16 + 0.1) / 37, (20 + 0.1) / 37)
    >>> dino = posenc.resample_grid(pe, (16, 20), num_prefix_tokens=1, method="bicubic", scale_factor=s)
    >>> by_size = posenc.resample_grid(pe, (16, 20), num_prefix_tokens=1, method="bicubic")
    >>> dino.shape, round(float(np.abs(dino - by_size).max()), 2)
    ((321, 64), 0.24)
    """
    if not _compat.is_array(table):
        msg = f"`table` must be an array of shape (..., tokens, dim), got {type(table).__name__}"
        raise TypeError(msg)
    ctx = _compat.resolve({"table": table})
    xp_ = ctx.xp
    _checks.check_real_float(table, "table", xp_, min_ndim=2, shape="(..., tokens, dim)")
    method = _checks.check_choice(method, "method", METHODS)
    align_corners = _checks.check_bool(align_corners, "align_corners")
    antialias = _checks.check_bool(antialias, "antialias")
    if antialias and align_corners:
        msg = "`antialias`=True supports `align_corners`=False only: pass antialias=False or align_corners=False"
        raise ValueError(msg)
    prefix = _checks.check_int(num_prefix_tokens, "num_prefix_tokens", minimum=0)
    # the token count is fixed while tracing (the interpolation weights depend on it)
    tokens, dim = operator.index(table.shape[-2]), int(table.shape[-1])
    if prefix > tokens:
        msg = f"`num_prefix_tokens` must be at most the number of rows of `table` ({tokens}), got {prefix}"
        raise ValueError(msg)
    n_grid = tokens - prefix
    new_shape = _checks.check_grid_shape(new_grid_shape, "new_grid_shape", max_ndim=2, square_int=True)
    new = tuple(map(operator.index, new_shape))
    if old_grid_shape is None:
        side = math.isqrt(n_grid)
        if side * side != n_grid or side == 0:
            msg = (
                f"`table` has {n_grid} grid rows after {prefix} prefix tokens, not a square "
                "number: pass `old_grid_shape`"
            )
            raise ValueError(msg)
        old: tuple[int, ...] = (side, side)
    else:
        old = tuple(map(operator.index, _checks.check_grid_shape(old_grid_shape, "old_grid_shape", max_ndim=2)))
        if old[0] * old[1] != n_grid:
            msg = (
                f"`old_grid_shape` {old} holds {old[0] * old[1]} positions but `table` has "
                f"{n_grid} grid rows after {prefix} prefix tokens"
            )
            raise ValueError(msg)
    steps: tuple[float | None, ...] = (None, None)
    if scale_factor is not None:
        factors = _scale_factor(scale_factor)
        # F.interpolate's output size: the product in float64, truncated
        derived = tuple(int(float(o) * f) for o, f in zip(old, factors))
        if derived != new:
            msg = (
                f"`new_grid_shape` must be the size that `scale_factor` = {factors} gives the grid {old}, "
                f"floor(old * scale_factor) = {derived}, got {new}"
            )
            raise ValueError(msg)
        # PyTorch's CPU kernels copy an axis whose size does not change, except
        # the bicubic one without antialiasing, which samples it with the factor
        copies = method == "bilinear" or antialias
        steps = tuple(None if copies and n == o else 1.0 / f for n, o, f in zip(new, old, factors))
    lead = tuple(table.shape[:-2])
    _checks.check_size(lead + (prefix + new[0] * new[1], dim), "table")
    work = _compat.resolve({"table": table}, dtype=table.dtype).work
    grid = table[..., prefix:, :]
    grid = xp_.reshape(_angles.cast(grid, work, xp_), lead + (old[0], old[1], dim))
    # width first, then height, as PyTorch's kernels accumulate
    grid = _resample_axis(grid, -2, _plan(old[1], new[1], method, align_corners, antialias, steps[1]), ctx, work)
    grid = _resample_axis(grid, -3, _plan(old[0], new[0], method, align_corners, antialias, steps[0]), ctx, work)
    grid = _angles.cast(xp_.reshape(grid, lead + (new[0] * new[1], dim)), table.dtype, xp_)
    if prefix:
        grid = xp_.concat([table[..., :prefix, :], grid], axis=-2)
    return grid


# --------------------------------------------------------------------------
# gather taps for packed batches of grids
# --------------------------------------------------------------------------
def _hf_axis_taps(old: int, new: int, method: str, align_corners: bool) -> tuple[np.ndarray, np.ndarray]:
    """Indices and weights (new, 2 or 4) of one axis in the layout of transformers'
    ``get_vision_interpolation_indices_and_weights``: taps ``floor(x) + k``
    for ``k`` in ``0, 1`` (bilinear) or ``-1 .. 2`` (bicubic) of the source
    coordinate ``x`` (not clamped), indices clamped to the border, weights of
    the hat or Keys (``a = -0.75``) kernel at the unclamped distances.  The
    sampled values are those of ``F.interpolate``; the coordinate is formed
    in the helper's order of operations, in float64."""
    t = np.arange(new, dtype=np.float64)
    if align_corners:
        src = t * (old - 1) / max(new - 1, 1)
    else:
        src = (t + 0.5) * old / new - 0.5
    floor = np.floor(src)
    offsets = np.arange(0, 2) if method == "bilinear" else np.arange(-1, 3)
    idx = np.clip(floor.astype(np.int64)[:, None] + offsets, 0, old - 1)
    d = np.abs(src[:, None] - floor[:, None] - offsets)
    if method == "bilinear":
        w = np.maximum(1.0 - d, 0.0)
    else:
        a = _CUBIC_A
        near = ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
        far = ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a
        w = np.where(d <= 1.0, near, far)
    return idx, w


def _new_shapes(value: Any) -> tuple[tuple[int, ...], ...]:
    """``new_shape`` as ``((t, h, w), ...)``: one ``(h, w)`` / ``(t, h, w)`` or a sequence of them."""
    hint = "pass (h, w), (t, h, w) or a list of them (for a tensor `grid_thw`: `grid_thw.tolist()`)"
    if _compat.is_array(value) or isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"`new_shape` must be a tuple of ints or a list of tuples, got {_checks.show(value)}; {hint}"
        raise TypeError(msg)
    items = list(value)
    nested = bool(items) and all(isinstance(v, Sequence) and not isinstance(v, (str, bytes)) for v in items)
    grids = items if nested else [items]
    out = []
    for g in grids:
        if isinstance(g, (str, bytes)) or not isinstance(g, Sequence) or not 2 <= len(g) <= 3:
            msg = f"`new_shape` must hold grids (h, w) or (t, h, w), got {_checks.show(g)}; {hint}"
            raise (TypeError if not isinstance(g, Sequence) else ValueError)(msg)
        sizes = tuple(_checks.check_int(v, "new_shape", minimum=1) for v in g)
        out.append(sizes if len(sizes) == 3 else (1, *sizes))
    return tuple(out)


@host_constant
def _batch_taps(
    old: tuple[int, int],
    grids: tuple[tuple[int, int, int], ...],
    method: str,
    align_corners: bool,
    antialias: bool,
    merge: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Host ``(indices, weights)`` of :func:`grid_interpolation_taps` (int64, float64)."""
    per_grid = []
    for _, h, w in grids:
        if antialias:
            axes = (_taps(old[0], h, method, align_corners, True), _taps(old[1], w, method, align_corners, True))
        else:
            axes = (_hf_axis_taps(old[0], h, method, align_corners), _hf_axis_taps(old[1], w, method, align_corners))
        per_grid.append(axes)
    th = max(a[0][0].shape[1] for a in per_grid)
    tw = max(a[1][0].shape[1] for a in per_grid)
    indices, weights = [], []
    for (t, h, w), ((hi, hw), (wi, ww)) in zip(grids, per_grid):
        # antialias widths differ between sizes: padded with zero weights on index 0
        hi, hw = _pad_taps(hi, hw, th)
        wi, ww = _pad_taps(wi, ww, tw)
        within = np.arange(h * w)
        if merge == 1:
            row, col = within // w, within % w
        else:
            in_col = within % merge
            in_row = (within // merge) % merge
            block_col = (within // (merge * merge)) % (w // merge)
            block_row = within // (merge * merge * (w // merge))
            row, col = block_row * merge + in_row, block_col * merge + in_col
        idx = hi[row][:, :, None] * old[1] + wi[col][:, None, :]
        wt = hw[row][:, :, None] * ww[col][:, None, :]
        indices.append(np.tile(idx.reshape(h * w, th * tw), (t, 1)))
        weights.append(np.tile(wt.reshape(h * w, th * tw), (t, 1)))
    return np.concatenate(indices), np.concatenate(weights)


def _pad_taps(idx: np.ndarray, w: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    extra = width - idx.shape[1]
    if not extra:
        return idx, w
    return np.pad(idx, ((0, 0), (0, extra))), np.pad(w, ((0, 0), (0, extra)))


def grid_interpolation_taps(
    old_shape: int | Sequence[int],
    new_shape: Sequence[int] | Sequence[Sequence[int]],
    *,
    method: str = "bilinear",
    align_corners: bool = False,
    antialias: bool = False,
    merge: int = 1,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> tuple[Array, Array]:
    r"""Gather indices and weights that resample a learned 2-D table to one or many grids.

    For a table of ``H * W`` rows (the grid ``old_shape`` in row-major order)
    and the tokens of the grids ``new_shape``, returns ``indices`` and
    ``weights`` of shape ``(tokens, taps)`` such that

    .. code-block:: python

        resampled = (table[indices] * weights[..., None]).sum(-2)

    is ``F.interpolate`` of the table to each grid (what
    :func:`resample_grid` computes for one grid), for a whole packed batch of
    images or videos of different sizes in one gather.  Without antialiasing
    the taps are exactly those of transformers'
    ``get_vision_interpolation_indices_and_weights`` (Qwen2-VL, Qwen3-VL,
    GLM-4V and the other packed vision encoders): ``taps = 4`` (bilinear) or
    ``16`` (bicubic), height taps major, the source coordinates not clamped
    and the indices clamped to the border.

    Parameters
    ----------
    old_shape : int or (int, int)
        ``(H, W)`` of the learned table (an int: a square table,
        transformers' ``num_grid_per_side``).
    new_shape : (h, w), (t, h, w) or a sequence of them
        The grids, in token order: each contributes ``t * h * w`` tokens
        (its ``h * w`` taps repeated for ``t`` frames), like the rows of
        transformers' ``grid_thw`` (pass ``grid_thw.tolist()``: the sizes
        are read on the host, as they set the output's shape).
    method : {"bilinear", "bicubic"}
        ``mode=`` of ``F.interpolate`` (PyTorch's bicubic, Keys' ``a = -0.75``).
    align_corners : bool, default False
        ``align_corners=`` of ``F.interpolate``.
    antialias : bool, default False
        ``antialias=`` of ``F.interpolate`` (``align_corners=False`` only):
        the taps of PyTorch's antialiased filters, widened when
        downsampling; grids whose filters are narrower are padded with
        zero weights (on index 0).  transformers has no such taps.
    merge : int, default 1
        Spatial merge size: with ``merge > 1`` each grid's tokens come in
        ``merge x merge`` blocks (block rows, block columns, then the rows
        and columns inside a block), the order of the encoders that merge
        neighbouring patches; ``h`` and ``w`` must be multiples of it.
    dtype, device, xp
        The dtype of ``weights`` (default: the namespace's default float; the
        indices have its default index dtype), device and namespace.

    Returns
    -------
    indices : array
        Shape ``(tokens, taps)``: rows of the flattened table.
    weights : array
        Shape ``(tokens, taps)``: the weight of each of those rows.

    Notes
    -----
    Everything depends on the sizes only: it is computed on the host in
    float64 (each weight rounded once to ``dtype``) and moved to the device,
    a constant under ``torch.compile`` and ``jax.jit``.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> table = posenc.sincos_grid((4, 4), 8, flatten=True)
    >>> idx, w = posenc.grid_interpolation_taps((4, 4), [(2, 3), (1, 2, 2)], method="bicubic")
    >>> idx.shape, w.shape
    ((10, 16), (10, 16))
    >>> out = (table[idx] * w[..., None]).sum(-2)
    >>> first = posenc.resample_grid(table, (2, 3), method="bicubic")
    >>> bool(np.allclose(out[:6], first))
    True
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    old = tuple(map(operator.index, _checks.check_grid_shape(old_shape, "old_shape", max_ndim=2, square_int=True)))
    grids = _new_shapes(new_shape)
    method = _checks.check_choice(method, "method", METHODS)
    align_corners = _checks.check_bool(align_corners, "align_corners")
    antialias = _checks.check_bool(antialias, "antialias")
    if antialias and align_corners:
        msg = "`antialias`=True supports `align_corners`=False only: pass antialias=False or align_corners=False"
        raise ValueError(msg)
    merge = _checks.check_int(merge, "merge", minimum=1)
    for _, h, w in grids:
        if h % merge or w % merge:
            msg = f"`new_shape` grids must have sides divisible by `merge` = {merge}, got (h, w) = ({h}, {w})"
            raise ValueError(msg)
    tokens = sum(t * h * w for t, h, w in grids)
    if antialias:
        width = 1
        for n_old, axis in ((old[0], 1), (old[1], 2)):
            support = (1.0 if method == "bilinear" else 2.0) * max(n_old / min(g[axis] for g in grids), 1.0)
            width *= int(math.ceil(support)) * 2 + 1
    else:
        width = 4 if method == "bilinear" else 16
    _checks.check_size((tokens, width), "taps")
    idx_t = _compat.default_dtype(ctx.xp, ctx.device, "indexing")
    if old[0] * old[1] - 1 > int(ctx.xp.iinfo(idx_t).max):
        msg = f"`old_shape` {old} has more rows than the index dtype {idx_t} can address"
        raise ValueError(msg)
    indices, weights = _batch_taps(old, grids, method, align_corners, antialias, merge)
    idx = ctx.from_host(indices, idx_t)
    wts = _angles.cast(ctx.from_host(weights, ctx.work), ctx.dtype, ctx.xp)
    return idx, wts
