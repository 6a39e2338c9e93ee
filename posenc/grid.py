r"""Positional encodings of 1-D, 2-D and 3-D coordinates: the sincos tables of
Vision Transformers (MAE, timm, positional-encodings orders), axial RoPE
angles, and resampling of learned 2-D position tables.

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
from typing import Any

import numpy as np

from . import _angles, _checks, _compat
from ._compat import Array, Context
from .learned import _linear_weights

__all__ = ["sincos_grid", "sincos_coords", "axial_rope_cos_sin", "resample_grid"]

ORDERS = ("mae", "timm", "blocks", "interleaved")
METHODS = ("bilinear", "bicubic")
#: PyTorch's bicubic coefficient (``upsample_bicubic2d``, Keys' cubic with a = -0.75)
_CUBIC_A = -0.75
#: the coefficient of the antialiased (PIL-compatible) bicubic filter
_CUBIC_A_AA = -0.5


# --------------------------------------------------------------------------
# argument helpers
# --------------------------------------------------------------------------
def _grid_shape(value: Any, name: str, *, max_ndim: int = 3, square_int: bool = False) -> tuple[int, ...]:
    """A tuple of 1..max_ndim positive ints (an int is a square 2-D grid when ``square_int``)."""
    if isinstance(value, bool):
        msg = f"`{name}` must be a tuple of positive integers, got {value!r}"
        raise TypeError(msg)
    if isinstance(value, numbers.Integral) and not _compat.is_array(value):
        if not square_int:
            msg = (
                f"`{name}` must be a tuple of positive integers, got the int {value!r}; "
                f"pass ({value},) for a 1-D grid or ({value}, {value}) for a square 2-D grid"
            )
            raise TypeError(msg)
        n = _checks.check_int(value, name)
        value = (n, n)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"`{name}` must be a tuple of positive integers, got {type(value).__name__}"
        raise TypeError(msg)
    shape = tuple(_checks.check_int(v, name) for v in value)
    if not 1 <= len(shape) <= max_ndim:
        kind = "1 to 3 axes" if max_ndim == 3 else f"{max_ndim} axes"
        if max_ndim == 2:
            kind = "2 axes (height, width)"
        msg = f"`{name}` must have {kind}, got {_checks.show(shape)}"
        raise ValueError(msg)
    if max_ndim == 2 and len(shape) != 2:
        msg = f"`{name}` must have 2 axes (height, width), got {_checks.show(shape)}"
        raise ValueError(msg)
    if any(n < 1 for n in shape):
        msg = f"`{name}` must hold positive integers, got {_checks.show(shape)}"
        raise ValueError(msg)
    return shape


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


@_compat.host_constant
def _axis_freqs(m: int, base: float) -> _angles.Freqs:
    """``base ** (-i / m)`` for ``i < m`` in float64 on the host (a constant
    for torch's tracer)."""
    return _angles.Freqs.from_array(np.power(base, -np.arange(m, dtype=np.float64) / m))


def _axis_sincos(shape: tuple[int, ...], freqs: _angles.Freqs, ctx: Context) -> tuple[list[Array], list[Array]]:
    """Per axis ``k``, sin and cos of ``ik * freqs`` at the grid points, each broadcast to ``(*shape, m)``."""
    xp = ctx.xp
    nd, m = len(shape), freqs.m
    sins, coss = [], []
    for k, n in enumerate(shape):
        s, c = _angles.sincos_range(0, n, freqs, ctx)  # (n, m), exact range path
        view = tuple(n if j == k else 1 for j in range(nd)) + (m,)
        sins.append(xp.broadcast_to(xp.reshape(s, view), shape + (m,)))
        coss.append(xp.broadcast_to(xp.reshape(c, view), shape + (m,)))
    return sins, coss


def _arrange(sins: list[Array], coss: list[Array], order: str, dim: int, ctx: Context) -> Array:
    """Place per-axis ``sin``/``cos`` blocks (..., m) as the (..., dim) table of ``order``."""
    xp = ctx.xp
    nd = len(sins)
    if order == "mae":
        parts = [t for k in reversed(range(nd)) for t in (sins[k], coss[k])]
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


def _order_args(dim: Any, base: Any, order: Any) -> tuple[int, float, str]:
    dim = _checks.check_dim(dim)
    base = _checks.check_float(base, "base", positive=True)
    order = _checks.check_choice(order, "order", ORDERS)
    return dim, base, order


# --------------------------------------------------------------------------
# sincos tables
# --------------------------------------------------------------------------
def sincos_grid(
    grid_shape: Sequence[int],
    dim: int,
    *,
    base: float = 10000.0,
    order: str = "mae",
    cls_token: bool = False,
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
    (see the module notes); ``order`` says where the columns go.

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
    order : {"mae", "timm", "blocks", "interleaved"}
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
    cls_token : bool, default False
        Prepend one row of zeros for a class token, as MAE does.  The table
        is then flattened: shape ``(1 + prod(grid_shape), dim)``.
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
        ``(1 + prod(grid_shape), dim)`` with ``cls_token``.

    See Also
    --------
    sincos_coords : the same encoding of arbitrary (fractional) coordinates.
    posenc.sinusoidal : the 1-D table.

    Notes
    -----
    Other published variants differ in the frequencies, not only the order:
    MAE-ST's video table gives a quarter of ``dim`` to time and the rest to
    space, and some 2-D tables divide by ``dim/4 - 1`` instead of ``dim/4``.
    Use :func:`sincos_coords` with your own coordinates for tables of
    rescaled grids (DiT/PixArt's ``base_size`` and ``interpolation_scale``).

    The sines and cosines are those of :func:`posenc.sinusoidal`: within a
    few float32 ulp of the float64 values at every grid size.

    References
    ----------
    .. [1] A. Dosovitskiy et al., "An image is worth 16x16 words: transformers for image
           recognition at scale", ICLR 2021, https://arxiv.org/abs/2010.11929
    .. [2] K. He et al., "Masked autoencoders are scalable vision learners", CVPR 2022,
           https://arxiv.org/abs/2111.06377

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
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    shape = _grid_shape(grid_shape, "grid_shape")
    dim, base, order = _order_args(dim, base, order)
    cls_token = _checks.check_bool(cls_token, "cls_token")
    flatten = _checks.check_bool(flatten, "flatten")
    m = _pairs_per_axis(dim, len(shape), order, f"ndim = len(`grid_shape`) = {len(shape)}")
    _checks.check_size(shape + (dim,), "table")
    xp_ = ctx.xp
    sins, coss = _axis_sincos(shape, _axis_freqs(m, base), ctx)
    out = _arrange(sins, coss, order, dim, ctx)
    if cls_token or flatten:
        out = xp_.reshape(out, (math.prod(shape), dim))
    if cls_token:
        out = xp_.concat([xp_.zeros((1, dim), dtype=ctx.dtype, device=ctx.device), out], axis=0)
    return out


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
    s, c = _angles.sincos(coords, _axis_freqs(m, base), ctx)  # (..., nd, m)
    sins = [s[..., k, :] for k in range(nd)]
    coss = [c[..., k, :] for k in range(nd)]
    return _arrange(sins, coss, order, dim, ctx)


# --------------------------------------------------------------------------
# axial RoPE
# --------------------------------------------------------------------------
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
    cos, sin : arrays
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
    shape = _grid_shape(grid_shape, "grid_shape")
    dim = _checks.check_dim(dim, even=True)
    base = _checks.check_float(base, "base", positive=True)
    layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
    reverse_axes = _checks.check_bool(reverse_axes, "reverse_axes")
    nd = len(shape)
    if dim % (2 * nd):
        msg = f"`dim` must be divisible by 2 * ndim = {2 * nd} for a {nd}-D grid, got {dim}"
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
