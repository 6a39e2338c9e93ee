r"""Positional encodings of 1-D, 2-D and 3-D coordinates: the sincos tables of
Vision Transformers (MAE, timm, positional-encodings orders) and axial RoPE
angles.  Resampling learned 2-D tables is in :mod:`posenc.resample`.

All orders share one set of frequencies.  With ``ndim`` axes and ``dim``
features, each axis owns ``dim / ndim`` features, that is
``m = dim / (2 * ndim)`` (sin, cos) pairs with the angular frequencies

.. math::

    \omega_i = \mathrm{base}^{-i/m}, \qquad i = 0, \dots, m - 1,

the 1-D sinusoidal frequencies of a ``dim / ndim``-dimensional table.  MAE's
``get_1d_sincos_pos_embed_from_grid`` writes them ``1 / 10000**(i / (D/2))``
with ``D = dim / 2`` the per-axis width; timm's ``build_sincos2d_pos_embed``
writes ``1 / temperature**(i / (dim // 4))``; positional-encodings writes
``1 / 10000**(2i / C)`` with ``C = 2m``: for 2-D grids all three are
``base**(-i / (dim/4))``.  The orders differ only in where each column goes.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from . import _angles, _checks, _compat, _exact
from ._compat import Array, Context
from ._tables import kept_on_devices
from ._trace import host_constant

__all__ = ["sincos_grid", "sincos_coords", "axial_rope_cos_sin"]

ORDERS = ("mae", "timm", "blocks", "interleaved")
#: orders of sincos_grid only: "mae_st" (time block, then space in MAE's order) sets its own axis widths
GRID_ORDERS = ORDERS + ("mae_st",)


# --------------------------------------------------------------------------
# argument helpers
# --------------------------------------------------------------------------
def _pairs_per_axis(dim: int, ndim: int, order: str, source: str) -> int:
    """Number m of (sin, cos) pairs per axis; ``ValueError`` unless ``2 * ndim`` divides ``dim``.

    ``source`` says where ``ndim`` comes from, for the error message.

    Order ``"interleaved"`` follows positional-encodings instead: ``m = ceil(dim / (2 ndim))``
    and the surplus columns are cut from the end.
    """
    if order == "interleaved":
        return -(-dim // (2 * ndim))
    if dim % (2 * ndim):
        msg = (
            f"`dim` must be divisible by 2 * ndim = {2 * ndim} for a {ndim}-D grid ({source}) with "
            f"order={order!r}, got {dim}; order='interleaved' pads and truncates instead"
        )
        raise ValueError(msg)
    return dim // (2 * ndim)


@host_constant
def _axis_freqs(m: int, base: float) -> _angles.Freqs:
    """``base ** (-i / m)`` for ``i < m`` in float64 on the host (a constant
    for torch's tracer)."""
    return _angles.Freqs.exact(*_exact.evaluate(_exact.geometric, base, Fraction(1, m), m))


def _axis_sincos(
    shape: tuple[int, ...],
    freqs: _angles.Freqs | Sequence[_angles.Freqs],
    ctx: Context,
    coords: Sequence[int | np.ndarray] | None = None,
) -> tuple[list[Array], list[Array]]:
    """Per axis ``k``, sin and cos of ``x * freqs[k]`` at the grid points, each
    broadcast to ``(*shape, m_k)``.

    ``freqs``: one set for every axis, or one per axis.  ``coords[k]``: the
    first integer coordinate of axis ``k`` (its points are ``start ..
    start + n - 1``: the exact range path), or a host float32 array of the
    ``n`` coordinates; default 0 for every axis.
    """
    xp = ctx.xp
    nd = len(shape)
    freqs = [freqs] * nd if isinstance(freqs, _angles.Freqs) else list(freqs)
    coords = [0] * nd if coords is None else list(coords)
    sins, coss = [], []
    for k, (n, f, x) in enumerate(zip(shape, freqs, coords)):
        if isinstance(x, int):
            s, c = _angles.sincos_range(x, n, f, ctx)  # (n, m), exact range path
        else:  # float32 coordinates (exact in float32), angles reduced from them exactly
            s, c = _angles.sincos(ctx.from_host(x, ctx.xp.float32), f, ctx)
        view = tuple(n if j == k else 1 for j in range(nd)) + (f.m,)
        sins.append(xp.broadcast_to(xp.reshape(s, view), shape + (f.m,)))
        coss.append(xp.broadcast_to(xp.reshape(c, view), shape + (f.m,)))
    return sins, coss


def _arrange(sins: list[Array], coss: list[Array], order: str, dim: int, ctx: Context) -> Array:
    """Place per-axis ``sin``/``cos`` blocks (..., m) as the (..., dim) table of ``order``."""
    xp = ctx.xp
    nd = len(sins)
    if order == "mae":
        parts = [t for k in reversed(range(nd)) for t in (sins[k], coss[k])]
    elif order == "mae_st":  # (t, h, w): [t | w | h]
        parts = [t for k in (0, 2, 1) for t in (sins[k], coss[k])]
    elif order == "timm":
        parts = list(sins) + list(coss)
    elif order == "blocks":
        parts = [t for k in range(nd) for t in (sins[k], coss[k])]
    else:  # interleaved: sin f0, cos f0, sin f1, cos f1, ... per axis
        parts = []
        for s, c in zip(sins, coss):
            lead = tuple(s.shape[:-1])
            parts.append(xp.reshape(xp.stack([s, c], axis=-1), lead + (2 * int(s.shape[-1]),)))
    out = xp.concat(parts, axis=-1)
    if int(out.shape[-1]) != dim:
        out = out[..., :dim]
    return _angles.cast(out, ctx.dtype, xp)


def _order_args(dim: Any, base: Any, order: Any, orders: tuple[str, ...] = ORDERS) -> tuple[int, float, str]:
    dim = _checks.check_dim(dim)
    base = _checks.check_float(base, "base", positive=True)
    order = _checks.check_choice(order, "order", orders)
    return dim, base, order


def _per_axis(value: Any, name: str, nd: int, check: Any) -> tuple[Any, ...]:
    """A number for every axis, or one per axis (a sequence of ``nd``), each through ``check``."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        if len(value) != nd:
            msg = f"`{name}` must be a number or one per axis of `grid_shape` ({nd}), got {_checks.show(value)}"
            raise ValueError(msg)
        return tuple(check(v, name) for v in value)
    return (check(value, name),) * nd


def _axis_dims(value: Any, dim: int, shape: tuple[int, ...], order: str) -> tuple[int, ...] | None:
    """Per-axis feature counts (grid order), or None for the equal split."""
    nd = len(shape)
    if value is None:
        if order != "mae_st":
            return None
        if nd != 3 or dim % 16:
            msg = (
                "order='mae_st' is MAE-ST's video table: a (time, height, width) grid and `dim` divisible "
                f"by 16 (dim/4 for time, 3*dim/8 per space axis), got `grid_shape` {shape} and `dim` {dim}; "
                "pass `axis_dims` for other splits"
            )
            raise ValueError(msg)
        return (dim // 4, 3 * dim // 8, 3 * dim // 8)
    if order == "interleaved":
        msg = "`axis_dims` does not apply to order='interleaved' (positional-encodings' equal split)"
        raise ValueError(msg)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"`axis_dims` must be a tuple of even integers, one per axis, got {_checks.show(value)}"
        raise TypeError(msg)
    dims = tuple(_checks.check_dim(v, "axis_dims", even=True) for v in value)
    if len(dims) != nd or sum(dims) != dim:
        msg = (
            f"`axis_dims` must hold one even width per axis of `grid_shape` ({nd}) summing to `dim` = {dim}, "
            f"got {dims}"
        )
        raise ValueError(msg)
    return dims


@host_constant
def _scaled_coords(full: int, start: int, n: int, base_size: float | None, scale: float) -> np.ndarray:
    """diffusers' grid coordinates ``i / (full / base_size) / scale`` (without
    ``base_size``: ``i / scale``) for ``i = start .. start + n - 1``, each
    division rounded to float32 as diffusers (and PixArt's NumPy code) computes
    them: ``(full / base_size)`` in float64 then float32, the quotients in
    float32."""
    x = np.arange(start, start + n, dtype=np.float32)
    if base_size is not None:
        x = x / np.float32(full / base_size)
    if scale != 1.0:
        x = x / np.float32(scale)
    return x


# --------------------------------------------------------------------------
# sincos tables
# --------------------------------------------------------------------------
@kept_on_devices
def sincos_grid(
    grid_shape: Sequence[int],
    dim: int,
    *,
    base: float = 10000.0,
    order: str = "mae",
    axis_dims: Sequence[int] | None = None,
    base_size: float | Sequence[float] | None = None,
    interpolation_scale: float | Sequence[float] = 1.0,
    crop_from: Sequence[int] | None = None,
    cls_token: bool = False,
    num_prefix_tokens: int = 0,
    flatten: bool = False,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""Fixed sin-cos position table of a 1-D, 2-D or 3-D grid (ViT, MAE, video).

    The grid points have the integer coordinates ``(i0, i1, ...)``,
    ``0 <= ik < grid_shape[k]`` (row-major: the last axis varies fastest, as
    the patch tokens of a ViT).  Each axis is encoded with ``dim / ndim``
    sinusoidal features of the frequencies :math:`\omega_i =
    \mathrm{base}^{-i/m}`, :math:`m = \mathrm{dim} / (2\,\mathrm{ndim})`
    (see the module notes); ``order`` says where the columns go.  The
    options of diffusion transformers (diffusers' ``base_size`` and
    ``interpolation_scale`` coordinates, SD3's centre crop, CogVideoX's
    video table with its text rows) are arguments too: see
    :doc:`/howto/diffusion`.

    Parameters
    ----------
    grid_shape : tuple of int
        ``(n,)``, ``(height, width)`` or ``(time, height, width)``; any
        positive sizes, square or not.  A bare int is refused (MAE's
        ``grid_size=14`` means ``(14, 14)``).
    dim : int
        Number of features.  It must be divisible by ``2 * ndim`` except
        for ``order="interleaved"``, which follows positional-encodings'
        padding rule (below).
    base : float, default 10000.0
        Base of the frequency progression (timm calls it ``temperature``).
    order : {"mae", "timm", "blocks", "interleaved", "mae_st"}
        Column order, written for a 2-D grid ``(H, W)`` with ``h`` the row
        and ``w`` the column index; ``sin h`` stands for the ``m`` columns
        ``sin(h * omega_i)``:

        ``"mae"``
            ``[sin w | cos w | sin h | cos h]``: MAE's
            ``get_2d_sincos_pos_embed`` exactly.  MAE builds
            ``np.meshgrid(grid_w, grid_h)`` and encodes ``grid[0]`` (which
            holds the column index ``w``) first, although it names that half
            ``emb_h``: the width-first quirk.  In N-D the axes are taken
            last to first (x, y, z order); 1-D gives ``[sin | cos]``, as
            ``posenc.sinusoidal(n, dim, layout="concat")``.
        ``"timm"``
            ``[sin h | sin w | cos h | cos w]``: timm's
            ``build_sincos2d_pos_embed`` with its defaults
            (``reverse_coord=False, interleave_sin_cos=False``): the sines of
            all axes in grid order, then the cosines.  timm's
            ``reverse_coord=True`` reverses ``feat_shape`` (and with it the
            token order): it equals ``sincos_grid((W, H), dim,
            order="timm")``.
        ``"blocks"``
            ``[sin h | cos h | sin w | cos w]``: one ``[sin | cos]`` block per
            axis in grid order; timm's ``interleave_sin_cos=True`` (MAE's
            order without the axis swap).
        ``"interleaved"``
            ``[sin h0, cos h0, sin h1, cos h1, ... | sin w0, cos w0, ...]``:
            the ``PositionalEncoding1D/2D/3D`` modules of the
            positional-encodings package (each axis a paper-style
            interleaved table, axes in grid order).  Like that package it
            accepts any ``dim``: each axis gets ``2 * ceil(dim / (2 ndim))``
            columns and the table is cut to the first ``dim``.
        ``"mae_st"``
            ``[sin t | cos t | sin w | cos w | sin h | cos h]`` for a
            ``(T, H, W)`` grid, with ``dim / 4`` columns for time and
            ``3 dim / 8`` for each space axis (``axis_dims`` may set
            others): MAE-ST's ``get_3d_sincos_pos_embed``, and diffusers'
            (CogVideoX's) ``get_3d_sincos_pos_embed``, whose
            ``spatial_size`` is ``(W, H)``: ``sincos_grid((T, H, W), dim,
            order="mae_st")`` is its ``(T, (W, H))`` table.

        Which order each model uses: MAE, DiT, PixArt, SD3, Hunyuan-DiT,
        Latte's spatial table and every diffusers 2-D table: ``"mae"``;
        timm ViTs: ``"timm"``; MAE-ST and CogVideoX: ``"mae_st"``.
    axis_dims : tuple of int, optional
        Features per axis, in grid order (even, summing to ``dim``): axis
        ``k`` gets ``m_k = axis_dims[k] / 2`` pairs of frequencies
        ``base**(-i / m_k)``.  Default: ``dim / ndim`` each (``"mae_st"``:
        ``(dim/4, 3dim/8, 3dim/8)``).
    base_size : float or tuple of float, optional
        The ``base_size`` of diffusers: axis ``k`` of ``n_k`` points has the
        coordinates ``i / (n_k / base_size) / interpolation_scale``, so
        that the grid spans ``base_size / interpolation_scale`` whatever
        its resolution (PixArt, SD3, Hunyuan-DiT).  Default: integer
        coordinates ``i``.  diffusers' ``get_2d_sincos_pos_embed`` defaults
        to ``base_size=16``: pass it to match a call that leaves it out.
    interpolation_scale : float or tuple of float, default 1.0
        Divides the coordinates (diffusers' ``interpolation_scale``;
        CogVideoX's ``(temporal, spatial, spatial)`` scales).  With
        ``base_size`` or ``interpolation_scale`` the coordinates are formed
        as diffusers (and PixArt's NumPy code) forms them, each division
        rounded to float32 (``n_k / base_size`` in float64 first); the
        angles are then exact for those coordinates.  diffusers' 2-D tables
        are these float32 coordinates in float64 angles: the float64 tables
        agree to the last bits.  On a device without float64, coordinates
        of ``2**32`` or more are refused (its tables are exact below).
    crop_from : tuple of int, optional
        The table is the centre crop of the table of this larger grid:
        SD3's ``PatchEmbed(pos_embed_max_size=M)`` is ``crop_from=(M, M)``
        (rows from ``(M - H) // 2``, columns from ``(M - W) // 2``), with
        ``base_size`` and ``interpolation_scale`` applied to the ``M`` grid.
    cls_token : bool, default False
        Prepend one row of zeros for a class token, as MAE does.  The table
        is then flattened: shape ``(1 + prod(grid_shape), dim)``.
    num_prefix_tokens : int, default 0
        Prepend this many rows of zeros (then flatten): the text tokens of
        CogVideoX (``max_text_seq_length``), diffusers' ``extra_tokens``
        (which diffusers adds only with ``cls_token=True``; here give one
        of ``cls_token`` and ``num_prefix_tokens``).
    flatten : bool, default False
        Return ``(prod(grid_shape), dim)`` (the token order of a ViT) rather
        than ``(*grid_shape, dim)``.
    dtype, device, xp
        Output dtype (default: the namespace's default float), device and
        namespace (default NumPy).

    Returns
    -------
    array
        ``(*grid_shape, dim)``; ``(prod(grid_shape), dim)`` with ``flatten``;
        ``(1 + prod(grid_shape), dim)`` with ``cls_token``, ``(p +
        prod(grid_shape), dim)`` with ``num_prefix_tokens=p``.

    See Also
    --------
    sincos_coords : The same encoding of arbitrary (fractional) coordinates.
    posenc.sinusoidal : The 1-D table.

    Notes
    -----
    Some published 2-D tables divide by ``dim/4 - 1`` instead of
    ``dim/4``: not reproduced.  :func:`sincos_coords` encodes coordinates of
    your own.

    The sines and cosines are those of :func:`posenc.sinusoidal`: within a
    few float32 ulp of the float64 values at every grid size.

    References
    ----------
    .. [1] A. Dosovitskiy et al., "An image is worth 16x16 words: transformers for image
           recognition at scale", ICLR 2021, https://arxiv.org/abs/2010.11929
    .. [2] K. He et al., "Masked autoencoders are scalable vision learners", CVPR 2022,
           https://arxiv.org/abs/2111.06377
    .. [3] C. Feichtenhofer, H. Fan, Y. Li, K. He, "Masked autoencoders as spatiotemporal
           learners", NeurIPS 2022, https://arxiv.org/abs/2205.09113

    Examples
    --------
    >>> import posenc
    >>> pe = posenc.sincos_grid((2, 3), 8)
    >>> pe.shape
    (2, 3, 8)

    Row 1, column 2 in MAE order: ``[sin w, cos w, sin h, cos h]`` with
    frequencies ``1`` and ``1/100``:

    >>> pe[1, 2].round(4)
    array([ 0.9093,  0.02  , -0.4161,  0.9998,  0.8415,  0.01  ,  0.5403,  1.    ])
    >>> posenc.sincos_grid((2, 3), 8, order="timm")[1, 2].round(4)
    array([ 0.8415,  0.01  ,  0.9093,  0.02  ,  0.5403,  1.    , -0.4161,  0.9998])
    >>> posenc.sincos_grid((14, 14), 768, cls_token=True).shape
    (197, 768)

    SD3's table (``pos_embed_max_size=192``, ``base_size=64``) cropped to a
    64 x 96 latent grid, and a CogVideoX table with 4 text rows (the model
    has 226):

    >>> posenc.sincos_grid((64, 96), 64, base_size=64, crop_from=(192, 192), flatten=True).shape
    (6144, 64)
    >>> posenc.sincos_grid((2, 6, 9), 64, order="mae_st", interpolation_scale=(1.0, 1.875, 1.875),
    ...                    num_prefix_tokens=4).shape
    (112, 64)
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    shape = _checks.check_grid_shape(grid_shape, "grid_shape")
    dim, base, order = _order_args(dim, base, order, GRID_ORDERS)
    nd = len(shape)
    widths = _axis_dims(axis_dims, dim, shape, order)
    cls_token = _checks.check_bool(cls_token, "cls_token")
    prefix = _checks.check_int(num_prefix_tokens, "num_prefix_tokens", minimum=0)
    if cls_token and prefix:
        msg = "pass one of `cls_token` (one zero row) and `num_prefix_tokens`, not both"
        raise ValueError(msg)
    prefix = prefix or int(cls_token)
    flatten = _checks.check_bool(flatten, "flatten")
    full, starts = shape, [0] * nd
    if crop_from is not None:
        full = _checks.check_grid_shape(crop_from, "crop_from")
        if len(full) != nd or any(f < n for f, n in zip(full, shape)):
            msg = f"`crop_from` must be a grid of {nd} axes at least as large as `grid_shape` {shape}, got {full}"
            raise ValueError(msg)
        starts = [(f - n) // 2 for f, n in zip(full, shape)]
    sizes = None if base_size is None else _per_axis(base_size, "base_size", nd, _coord_float)
    scales = _per_axis(interpolation_scale, "interpolation_scale", nd, _coord_float)
    if widths is None:
        m = _pairs_per_axis(dim, nd, order, f"ndim = len(`grid_shape`) = {nd}")
        freqs = _axis_freqs(m, base)
    else:
        freqs = [_axis_freqs(w // 2, base) for w in widths]
    _checks.check_size((prefix + math.prod(shape), dim), "table")
    coords = _grid_coords(full, starts, shape, sizes, scales)
    if not ctx.float64:  # (host coordinates: refused here, where the device path would give NaN rows)
        given = (("`base_size`", sizes is not None), ("`interpolation_scale`", any(v != 1.0 for v in scales)))
        _check_f32_coords(coords, " with ".join(name for name, on in given if on))
    xp_ = ctx.xp
    sins, coss = _axis_sincos(shape, freqs, ctx, coords)
    out = _arrange(sins, coss, order, dim, ctx)
    if prefix or flatten:
        out = xp_.reshape(out, (math.prod(shape), dim))
    if prefix:
        out = xp_.concat([xp_.zeros((prefix, dim), dtype=ctx.dtype, device=ctx.device), out], axis=0)
    return out


def _grid_coords(
    full: tuple[int, ...],
    starts: list[int],
    shape: tuple[int, ...],
    sizes: tuple[float, ...] | None,
    scales: tuple[float, ...],
) -> list[int | np.ndarray]:
    """Per axis: the first integer coordinate, or diffusers' float32 coordinates."""
    out: list[int | np.ndarray] = []
    for k, (f, start, n, scale) in enumerate(zip(full, starts, shape, scales)):
        if sizes is None and scale == 1.0:
            out.append(start)
            continue
        if sizes is not None and not f / sizes[k] <= _F32_MAX:
            msg = f"`base_size` = {sizes[k]!r} makes the grid step {f} / base_size overflow float32"
            raise ValueError(msg)
        out.append(_scaled_coords(f, start, n, None if sizes is None else sizes[k], scale))
    return out


def _check_f32_coords(coords: list[int | np.ndarray], names: str) -> None:
    """Refuse float coordinates a device without float64 cannot reduce
    exactly (``|p| >= 2**32``: its paths give NaN rows there), naming the
    arguments that scaled them."""
    top = max((float(np.max(np.abs(c))) for c in coords if isinstance(c, np.ndarray) and c.size), default=0.0)
    if top >= _angles.EXACT_F32:
        msg = (
            f"{names} puts grid coordinates at {top:.6g}: the tables of a device without float64 are exact "
            f"for |p| < 2**32 only"
        )
        raise ValueError(msg)


_F32_MAX = float(np.finfo(np.float32).max)
_F32_TINY = float(np.finfo(np.float32).tiny)


def _coord_float(value: Any, name: str) -> float:
    """A positive number that float32 holds (coordinates are divided by it in float32)."""
    x = _checks.check_float(value, name, positive=True)
    if not _F32_TINY <= x <= _F32_MAX:
        msg = f"`{name}` must be a positive number within the float32 range, got {x!r}"
        raise ValueError(msg)
    return x


def sincos_coords(
    coords: Array,
    dim: int,
    *,
    base: float = 10000.0,
    order: str = "mae",
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""The sin-cos table of :func:`sincos_grid` at arbitrary coordinates.

    ``coords[..., k]`` is the coordinate along grid axis ``k`` (row, then
    column for 2-D), so ``sincos_coords(grid_coords, dim)`` with the integer
    grid points in ``'ij'`` order equals ``sincos_grid(grid_shape, dim)``.
    Use it for patch centres, normalised or rescaled coordinates (DiT,
    PixArt), point clouds and irregular samples.

    Parameters
    ----------
    coords : array, shape (..., ndim)
        Integer or real coordinates with ``ndim`` in 1, 2, 3.  Their
        namespace and device are those of the result.  Lists are accepted
        (NumPy, or the namespace ``xp``).
    dim : int
        Number of features (divisible by ``2 * ndim`` except for
        ``order="interleaved"``).
    base, order
        As in :func:`sincos_grid`.
    dtype, device, xp
        Output dtype (default: the namespace's default float), device and
        namespace for list input.

    Returns
    -------
    array
        Shape ``coords.shape[:-1] + (dim,)``.

    Notes
    -----
    Angles are reduced exactly (in float64 where the device has it, in
    float32 pairs where it does not), never as a rounded float32 product:
    float32 tables are within posenc's bound of 2.5e-7 for ``|coords| <
    2**22`` (:doc:`/theory/precision`).

    References
    ----------
    .. [1] K. He et al., "Masked autoencoders are scalable vision learners", CVPR 2022,
           https://arxiv.org/abs/2111.06377

    Examples
    --------
    >>> import numpy as np, posenc
    >>> c = np.array([[0.5, 0.5], [1.0, 2.0]])
    >>> posenc.sincos_coords(c, 4).round(4)
    array([[ 0.4794,  0.8776,  0.4794,  0.8776],
           [ 0.9093, -0.4161,  0.8415,  0.5403]])
    >>> grid = np.stack(np.meshgrid(np.arange(3), np.arange(5), indexing="ij"), axis=-1)
    >>> bool(np.allclose(posenc.sincos_coords(grid, 8), posenc.sincos_grid((3, 5), 8)))
    True
    """
    ctx = _compat.resolve({"coords": coords}, xp=xp, device=device, dtype=dtype)
    dim, base, order = _order_args(dim, base, order)
    if isinstance(coords, (bool, numbers.Number)) and not _compat.is_array(coords):
        msg = f"`coords` must be an array of shape (..., ndim), got {type(coords).__name__}"
        raise TypeError(msg)
    if _compat.is_array(coords) and getattr(coords, "ndim", 0) >= 1:
        # the output size from the shape alone, before the values are scanned
        _checks.check_size(tuple(int(n) for n in coords.shape[:-1]) + (dim,), "table")
    coords = _checks.check_positions(coords, "coords", ctx)
    if coords.ndim < 1 or not 1 <= int(coords.shape[-1]) <= 3:
        msg = f"`coords` must have shape (..., ndim) with ndim 1, 2 or 3, got shape {tuple(coords.shape)}"
        raise ValueError(msg)
    nd = operator.index(coords.shape[-1])  # fixed while tracing: it sets the frequencies
    m = _pairs_per_axis(dim, nd, order, f"ndim = `coords`.shape[-1] = {nd}")
    lead = tuple(coords.shape[:-1])
    _checks.check_size(lead + (dim,), "table")
    s, c = _angles.sincos(coords, _axis_freqs(m, base), ctx, "`coords`")  # (..., nd, m)
    sins = [s[..., k, :] for k in range(nd)]
    coss = [c[..., k, :] for k in range(nd)]
    return _arrange(sins, coss, order, dim, ctx)


# --------------------------------------------------------------------------
# axial RoPE
# --------------------------------------------------------------------------
@kept_on_devices
def axial_rope_cos_sin(
    grid_shape: Sequence[int],
    dim: int,
    *,
    base: float = 10000.0,
    layout: str = "half",
    reverse_axes: bool = False,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> tuple[Array, Array]:
    r"""``(cos, sin)`` of 2-D / 3-D axial RoPE for the flattened tokens of a grid.

    The rotary (head) dimension is split evenly over the axes: axis ``k``
    owns ``dim / ndim`` dimensions, i.e. ``dim / (2 ndim)`` rotation planes
    turned by the angles ``p_k * theta_j`` with :math:`\theta_j =
    \mathrm{base}^{-2j / (\mathrm{dim}/\mathrm{ndim})}`, the 1-D RoPE
    frequencies of a head of size ``dim / ndim`` (timm's
    ``RotaryEmbedding`` / ``build_rotary_pos_embed`` on an index grid, the
    axial RoPE of Heo et al., 2024).  The per-plane angles are the axes'
    angles concatenated in grid order (``[h-planes, w-planes]``), laid out
    over ``dim`` as ``apply_rope`` expects:

    * ``layout="half"``: ``cos = concat([c, c])`` (HF / GPT-NeoX rotate-half,
      timm's ``rotate_half=True``, DINOv3);
    * ``layout="interleaved"``: each value repeated twice adjacently
      (GPT-J, timm's default ``RotaryEmbedding``).

    Then ``q_rot . k_rot`` depends only on the offset between the tokens'
    grid positions, per axis.

    Parameters
    ----------
    grid_shape : tuple of int
        ``(height, width)`` or ``(time, height, width)`` (``(n,)`` gives
        ordinary 1-D RoPE).  Tokens are the grid points in row-major order.
    dim : int
        The rotary dimension; divisible by ``2 * ndim``.
    base : float, default 10000.0
        RoPE base (timm's ``temperature``).
    layout : {"half", "interleaved"}
        Layout of the rotary dimension, as for ``apply_rope``.
    reverse_axes : bool, default False
        Give the first planes to the last axis (``[w-planes, h-planes]``),
        the order of Heo et al.'s RoPE-ViT code.
    dtype, device, xp
        Output dtype, device and namespace.

    Returns
    -------
    cos : array
        Shape ``(prod(grid_shape), dim)``.
    sin : array
        Shape ``(prod(grid_shape), dim)``.

    References
    ----------
    .. [1] B. Heo, S. Park, D. Han, S. Yun, "Rotary position embedding for vision
           transformer", ECCV 2024, https://arxiv.org/abs/2403.13298

    Examples
    --------
    >>> import posenc
    >>> cos, sin = posenc.axial_rope_cos_sin((2, 3), 8)
    >>> cos.shape
    (6, 8)

    Token 5 is row 1, column 2; the planes are ``[h, h, w, w]`` with
    frequencies ``1, 0.01`` per axis:

    >>> sin[5].round(4)
    array([0.8415, 0.01  , 0.9093, 0.02  , 0.8415, 0.01  , 0.9093, 0.02  ])
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    shape = _checks.check_grid_shape(grid_shape, "grid_shape")
    dim = _checks.check_dim(dim, even=True)
    base = _checks.check_float(base, "base", positive=True)
    layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
    reverse_axes = _checks.check_bool(reverse_axes, "reverse_axes")
    nd = len(shape)
    if dim % (2 * nd):
        msg = f"`dim` must be divisible by 2 * ndim = {2 * nd} for the {nd}-D `grid_shape` {shape}, got {dim}"
        raise ValueError(msg)
    m = dim // (2 * nd)
    n = math.prod(shape)
    _checks.check_size((n, dim), "table")
    xp_ = ctx.xp
    # theta_j = base**(-2j / (dim / ndim)) = base**(-j / m): the frequencies of sincos_grid
    sins, coss = _axis_sincos(shape, _axis_freqs(m, base), ctx)
    sins = [xp_.reshape(s, (n, m)) for s in sins]
    coss = [xp_.reshape(c, (n, m)) for c in coss]
    if reverse_axes:
        sins, coss = sins[::-1], coss[::-1]
    s = xp_.concat(sins, axis=-1)
    c = xp_.concat(coss, axis=-1)
    if layout == "half":
        s = xp_.concat([s, s], axis=-1)
        c = xp_.concat([c, c], axis=-1)
    else:
        s = xp_.reshape(xp_.stack([s, s], axis=-1), (n, dim))
        c = xp_.reshape(xp_.stack([c, c], axis=-1), (n, dim))
    return _angles.cast(c, ctx.dtype, xp_), _angles.cast(s, ctx.dtype, xp_)
