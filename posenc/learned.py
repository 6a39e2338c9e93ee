"""Learned absolute position tables: their initial values (BERT, GPT-2, ViT)
and their linear resampling to a new length.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _angles, _checks, _compat
from ._compat import Array
from ._trace import host_constant

__all__ = ["learned_table", "resample_table"]


def learned_table(
    num_positions: int,
    dim: int,
    *,
    std: float = 0.02,
    truncate: float | None = None,
    seed: int | np.random.Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    """Initial values of a learned absolute position table (BERT, GPT-2, ViT).

    Draws ``N(0, std**2)`` values in NumPy (randomness is not part of the
    array API standard) and moves them to the target namespace and device.
    Wrap the result in your framework's parameter type to train it.

    Parameters
    ----------
    num_positions, dim : int
        Table shape ``(num_positions, dim)``.
    std : float, default 0.02
        Standard deviation: 0.02 is the ``initializer_range`` of Hugging
        Face's BERT and GPT-2 and ViT's; GPT-2's released code draws its
        position table with 0.01.
    truncate : float, optional
        Draw from the normal distribution truncated to ``±truncate * std``
        (BERT's original code, TensorFlow's truncated normal, and timm's
        ``trunc_normal_tf_`` cut at two standard deviations: ``truncate=2``;
        timm's ``trunc_normal_`` cuts at ±2 in absolute terms, which at
        ``std=0.02`` cuts nothing).  Values beyond the bounds are redrawn; below
        ``truncate=0.5`` the draws come from a uniform proposal accepted with
        the normal density's weight, so any positive ``truncate`` is fast.
    seed : int or numpy.random.Generator, optional
        Seed for reproducible tables.
    dtype, device, xp
        Output dtype, device and namespace.

    Returns
    -------
    array
        Shape ``(num_positions, dim)``, in the requested namespace, dtype and
        device.

    Raises
    ------
    ValueError
        If the drawn values overflow the output dtype (``std`` too large).

    Examples
    --------
    >>> import posenc
    >>> t = posenc.learned_table(512, 64, seed=0)
    >>> t.shape, round(float(t.std()), 3)
    ((512, 64), 0.02)
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    n = _checks.check_int(num_positions, "num_positions", minimum=0)
    dim = _checks.check_dim(dim)
    std = _checks.check_float(std, "std", nonnegative=True)
    _checks.check_size((n, dim), "table")
    if truncate is not None:
        truncate = _checks.check_float(truncate, "truncate", positive=True)
    if seed is not None and not isinstance(seed, np.random.Generator):
        seed = _checks.check_int(seed, "seed", minimum=0)
    if isinstance(seed, np.random.Generator):
        t, top = _draw_table(seed, n, dim, std, truncate)
    else:  # an int seed: a constant of torch's traced graphs
        t, top = _seeded_table(seed, n, dim, std, truncate)
    _checks.check_fits(top, ctx, f"`std` = {std!r} gives values", "request a smaller `std` or a wider dtype")
    return _angles.cast(ctx.from_host(t, ctx.work), ctx.dtype, ctx.xp)


def _draw_table(
    rng: np.random.Generator, n: int, dim: int, std: float, truncate: float | None
) -> tuple[np.ndarray, float]:
    """The host table ``std * N(0, 1)`` (truncated) and its largest magnitude."""
    if truncate is None:
        t = rng.standard_normal((n, dim))
    else:
        t = _truncated_normal(rng, (n, dim), truncate)
    top = float(np.max(np.abs(t))) * std if t.size else 0.0  # a Python float: inf, never a warning
    return t * std, top


@host_constant
def _seeded_table(seed: int | None, n: int, dim: int, std: float, truncate: float | None) -> tuple[np.ndarray, float]:
    return _draw_table(np.random.default_rng(seed), n, dim, std, truncate)


def _truncated_normal(rng: np.random.Generator, shape: tuple[int, ...], c: float) -> np.ndarray:
    """Standard normal values truncated to ``[-c, c]`` (exact rejection sampling)."""
    if c >= 0.5:
        # normal proposals outside [-c, c] redrawn: at least 38 % are kept
        t = rng.standard_normal(shape)
        bad = np.abs(t) > c
        while bad.any():
            t[bad] = rng.standard_normal(int(bad.sum()))
            bad = np.abs(t) > c
        return t
    # uniform proposals on [-c, c] kept with probability exp(-t**2 / 2), the
    # normal density relative to its peak: at least 88 % are kept, for any c > 0
    t = np.zeros(shape)
    todo = np.arange(t.size)
    while todo.size:
        u = rng.uniform(-c, c, todo.size)
        keep = rng.random(todo.size) < np.exp(-0.5 * u * u)
        t.flat[todo[keep]] = u[keep]
        todo = todo[~keep]
    return t


def resample_table(
    table: Array,
    num_positions: int,
    *,
    align_corners: bool = False,
) -> Array:
    """Linearly resample a learned 1-D position table to a new length.

    ``table`` has shape ``(..., L, dim)``; the result has shape
    ``(..., num_positions, dim)``.  The sampling grid is that of
    ``torch.nn.functional.interpolate(mode="linear")``: with
    ``align_corners=False`` (the default, as timm) sample ``t`` reads source
    coordinate ``(t + 0.5) * L / N - 0.5`` clamped to ``[0, L-1]``; with
    ``align_corners=True`` the first and last rows map onto each other.

    Parameters
    ----------
    table : array
        The trained table, shape ``(..., L, dim)``.
    num_positions : int
        The new length ``N``.
    align_corners : bool, default False
        Sample grid of ``interpolate``: ``False`` (timm) or ``True`` (the
        first and last rows kept).

    Returns
    -------
    array
        Shape ``(..., num_positions, dim)``, ``table``'s dtype and device.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> t = np.array([[0.0], [1.0], [2.0]])
    >>> posenc.resample_table(t, 5, align_corners=True)[:, 0]
    array([0. , 0.5, 1. , 1.5, 2. ])
    """
    if not _compat.is_array(table):
        msg = f"`table` must be an array of shape (..., L, dim), got {type(table).__name__}"
        raise TypeError(msg)
    ctx = _compat.resolve({"table": table}, dtype=None)
    xp_ = ctx.xp
    _checks.check_real_float(table, "table", xp_, min_ndim=2, shape="(..., L, dim)")
    old = int(table.shape[-2])
    if old < 1:
        msg = "`table` must have at least one position (axis -2 is empty)"
        raise ValueError(msg)
    n = _checks.check_int(num_positions, "num_positions", minimum=1)
    align_corners = _checks.check_bool(align_corners, "align_corners")
    _checks.check_size(tuple(table.shape[:-2]) + (n, int(table.shape[-1])), "table")
    lo, hi, frac = linear_weights(old, n, align_corners)
    idx_t = _compat.default_dtype(xp_, ctx.device, "indexing")
    lo_i = ctx.from_host(lo, idx_t)
    hi_i = ctx.from_host(hi, idx_t)
    f = ctx.from_host(frac[:, None], table.dtype)
    a = xp_.take(table, lo_i, axis=table.ndim - 2)
    b = xp_.take(table, hi_i, axis=table.ndim - 2)
    return a + (b - a) * f


def linear_weights(old: int, new: int, align_corners: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row indices ``lo``, ``hi`` and weights ``frac`` of ``new`` samples of
    ``old`` rows on the grid of ``torch.nn.functional.interpolate(mode="linear")``
    (sample ``t`` is ``(1 - frac) * row[lo] + frac * row[hi]``)."""
    t = np.arange(new, dtype=np.float64)
    if align_corners:
        src = t * ((old - 1) / (new - 1)) if new > 1 else np.zeros(new)
    else:
        src = np.clip((t + 0.5) * (old / new) - 0.5, 0.0, None)
    lo = np.minimum(np.floor(src).astype(np.int64), old - 1)
    hi = np.minimum(lo + 1, old - 1)
    frac = src - lo
    return lo, hi, frac
