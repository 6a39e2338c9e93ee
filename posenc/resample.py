"""Resampling learned 2-D position tables to a new grid (a ViT fine-tuned or
run at a new resolution), with the sampling of
``torch.nn.functional.interpolate``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _angles, _checks, _compat
from ._compat import Array, Context
from .grid import _grid_shape
from .learned import _linear_weights

__all__ = ["resample_grid"]

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


def _scale(old: int, new: int, align_corners: bool) -> float:
    if align_corners:
        return (old - 1) / (new - 1) if new > 1 else 0.0
    return old / new


def _taps(old: int, new: int, method: str, align_corners: bool, antialias: bool) -> tuple[np.ndarray, np.ndarray]:
    """Source indices and weights, each (new, taps), of one axis of ``F.interpolate``.

    PyTorch's conventions (``aten/src/ATen/native/UpSample.h``):
    ``align_corners=False`` reads source coordinate ``(t + 0.5) * old/new - 0.5``
    (clamped at 0 for bilinear, not for bicubic), ``align_corners=True``
    reads ``t * (old-1)/(new-1)``; bicubic uses Keys' kernel with
    ``a = -0.75`` on taps ``floor(x)-1 .. floor(x)+2`` clamped to the border.
    ``antialias=True`` is PIL's resampler (``_upsample_*_aa``): a triangle or
    a ``a = -0.5`` cubic filter, widened by the scale when downsampling, whose
    weights are normalised over the taps inside the table.
    """
    t = np.arange(new, dtype=np.float64)
    scale = _scale(old, new, align_corners)
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
        lo, hi, frac = _linear_weights(old, new, align_corners)
        return np.stack([lo, hi], axis=1), np.stack([1.0 - frac, frac], axis=1)
    src = t * scale if align_corners else (t + 0.5) * scale - 0.5
    base = np.floor(src)
    f = src - base
    idx = np.clip(base.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :], 0, old - 1)
    w = np.stack(
        [_cubic(f + 1.0, _CUBIC_A), _cubic(f, _CUBIC_A), _cubic(1.0 - f, _CUBIC_A), _cubic(2.0 - f, _CUBIC_A)], axis=1
    )
    return idx, w


@_compat.host_constant
def _plan(
    old: int, new: int, method: str, align_corners: bool, antialias: bool
) -> tuple[tuple[tuple[int, ...], tuple[float, ...]], ...]:
    """The taps of :func:`_taps` with a nonzero weight, as Python values:
    ``(indices, weights)`` per tap (a constant for torch's tracer)."""
    idx, w = _taps(old, new, method, align_corners, antialias)
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
        g = xp.take(x, xp.asarray(idx, dtype=idx_t, device=ctx.device), axis=x.ndim + axis)
        term = g * xp.reshape(xp.asarray(w, dtype=dtype, device=ctx.device), (-1,) + trailing)
        out = term if out is None else out + term
    return out  # not None: every row's weights sum to 1


def resample_grid(
    table: Array,
    new_grid_shape: int | Sequence[int],
    *,
    num_prefix_tokens: int = 0,
    method: str = "bilinear",
    old_grid_shape: Sequence[int] | None = None,
    align_corners: bool = False,
    antialias: bool = False,
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

    Returns
    -------
    array
        Shape ``(..., num_prefix_tokens + new_H * new_W, dim)``.

    Notes
    -----
    Indices and weights depend only on the sizes: they are computed on the
    host in float64 and applied with ``take`` and multiply-adds, one axis
    at a time (width, then height), so the function runs under ``jax.jit``
    and builds a lazy Dask graph.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> t = np.arange(1 + 4, dtype=np.float64)[:, None]  # class token + 2x2 grid
    >>> posenc.resample_grid(t, (3, 3), num_prefix_tokens=1, align_corners=True)[:, 0]
    array([0. , 1. , 1.5, 2. , 2. , 2.5, 3. , 3. , 3.5, 4. ])
    >>> table = posenc.sincos_grid((14, 14), 64, cls_token=True)
    >>> posenc.resample_grid(table, 16, num_prefix_tokens=1, method="bicubic").shape
    (257, 64)
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
        msg = "`antialias=True` supports `align_corners=False` only"
        raise ValueError(msg)
    prefix = _checks.check_int(num_prefix_tokens, "num_prefix_tokens", minimum=0)
    # the token count is fixed while tracing (the interpolation weights depend on it)
    tokens, dim = operator.index(table.shape[-2]), int(table.shape[-1])
    if prefix > tokens:
        msg = f"`num_prefix_tokens` must be at most the number of rows of `table` ({tokens}), got {prefix}"
        raise ValueError(msg)
    n_grid = tokens - prefix
    new = tuple(map(operator.index, _grid_shape(new_grid_shape, "new_grid_shape", max_ndim=2, square_int=True)))
    if old_grid_shape is None:
        side = math.isqrt(n_grid)
        if side * side != n_grid or side == 0:
            msg = (
                f"`table` has {n_grid} grid rows after {prefix} prefix tokens, not a square "
                "number: pass `old_grid_shape`"
            )
            raise ValueError(msg)
        old = (side, side)
    else:
        old = tuple(map(operator.index, _grid_shape(old_grid_shape, "old_grid_shape", max_ndim=2)))
        if old[0] * old[1] != n_grid:
            msg = (
                f"`old_grid_shape` {old} holds {old[0] * old[1]} positions but `table` has "
                f"{n_grid} grid rows after {prefix} prefix tokens"
            )
            raise ValueError(msg)
    lead = tuple(table.shape[:-2])
    _checks.check_size(lead + (prefix + new[0] * new[1], dim), "table")
    work = _compat.resolve({"table": table}, dtype=table.dtype).work
    grid = table[..., prefix:, :]
    grid = xp_.reshape(_angles.cast(grid, work, xp_), lead + (old[0], old[1], dim))
    # width first, then height, as PyTorch's kernels accumulate
    grid = _resample_axis(grid, -2, _plan(old[1], new[1], method, align_corners, antialias), ctx, work)
    grid = _resample_axis(grid, -3, _plan(old[0], new[0], method, align_corners, antialias), ctx, work)
    grid = _angles.cast(xp_.reshape(grid, lead + (new[0] * new[1], dim)), table.dtype, xp_)
    if prefix:
        grid = xp_.concat([table[..., :prefix, :], grid], axis=-2)
    return grid
