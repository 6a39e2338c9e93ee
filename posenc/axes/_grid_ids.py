"""The position ids of image and video grids: :func:`posenc.grid_ids` (see
:mod:`posenc.axes`)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

from posenc import _angles, _checks, _compat
from posenc._compat import Array
from posenc._tables import kept_on_devices
from posenc._trace import is_symbolic

from ._rope_axes import is_seq, per_axis

__all__ = ["grid_ids"]

NORMALIZE = ("separate", "min", "max")
INDEXING = ("ij", "xy")


def _check_shape(shape: Any, name: str = "shape") -> tuple[Any, ...]:
    if isinstance(shape, bool) or (isinstance(shape, numbers.Integral) and not _compat.is_array(shape)):
        msg = (
            f"`{name}` must be a tuple of positive ints (one size per axis), got {_checks.show(shape)}; "
            f"pass ({shape},) for one axis"
        )
        raise TypeError(msg)
    if not is_seq(shape):
        msg = f"`{name}` must be a tuple of positive ints (one size per axis), got {type(shape).__name__}"
        raise TypeError(msg)
    if len(shape) == 0:
        msg = f"`{name}` must have at least one axis, got ()"
        raise ValueError(msg)
    out = []
    for n in shape:
        if is_symbolic(n):  # a traced size (torch.compile): kept traced
            out.append(n)
        else:
            out.append(_checks.check_int(n, name, minimum=1))
    return tuple(out)


def _per_axis_number(value: Any, name: str, nd: int) -> tuple[Any, ...]:
    """A real number (int or float) for every axis, or one per axis."""
    vals = per_axis(value, name, nd)
    out = []
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or _compat.is_array(v):
            msg = f"`{name}` must be a real number or one per axis, got {_checks.show(v)}"
            raise TypeError(msg)
        if isinstance(v, numbers.Integral):
            v = int(v)
            if abs(v) >= 2**31:
                msg = f"`{name}` must be an integer of magnitude below 2**31 (or a float), got {v!r}"
                raise ValueError(msg)
        else:
            v = _checks.check_float(v, name)
        out.append(v)
    return tuple(out)


def _check_exact(
    dims: tuple[int, ...],
    offsets: tuple[Any, ...],
    scales: tuple[Any, ...],
    centers: tuple[bool, ...],
    normalize: str | None,
    refs: tuple[int, ...] | None,
    floor: bool,
    integer: bool,
    out_dtype: Any,
    xp: Any,
) -> None:
    """Refuse ids that the output dtype cannot hold exactly: the largest
    |id| (from the Python sizes and numbers, no array read) must be finite
    and, for integer-valued ids, at most the largest integer the dtype holds
    exactly (2**11 in float16, 2**8 in bfloat16, 2**24 in float32, 2**53 in
    float64, the integer dtype's maximum); fractional ids are refused in a
    float dtype narrower than float32 (it rounds them to 2**-11 relative)."""
    top = 0.0
    lo_n = min(dims)
    for k, n in enumerate(dims):
        ends = [0.0, float(n - 1)]
        if centers[k]:
            ends = [e - (n - n // 2) for e in ends]
        ends = [e + offsets[k] for e in ends]
        if normalize is not None:
            d = n if normalize == "separate" else lo_n if normalize == "min" else max(dims)
            ends = [(e + 0.5) / d * 2.0 - 1.0 for e in ends]
        if refs is not None:
            ends = [e * refs[k] / n for e in ends]
        ends = [abs(e * scales[k]) for e in ends]
        top = max(top, *ends)
    whole = integer or floor
    if xp.isdtype(out_dtype, "integral"):
        limit, what = float(xp.iinfo(out_dtype).max), "the largest value"
    else:
        info = xp.finfo(out_dtype)
        bits = round(-math.log2(float(info.eps))) + 1
        if not whole and bits < 24:
            msg = (
                f"`dtype` {_checks.dtype_name(out_dtype)} rounds fractional ids (normalize, ref_shape or a real "
                "offset / scale): request float32 or wider"
            )
            raise ValueError(msg)
        limit = float(2**bits) if whole else float(info.max)
        what = f"the largest integer it holds exactly (2**{bits})" if whole else "its largest finite value"
    if not top <= 1.7976931348623157e308:  # inf (a comparison: traces under torch.compile)
        msg = f"`scale` and `offset` give ids of magnitude {top:g}, which no dtype holds: make them smaller"
        raise ValueError(msg)
    if top > limit:
        msg = (
            f"the ids reach {top:g}, above {what} of `dtype` {_checks.dtype_name(out_dtype)}: request a wider "
            "dtype, or a smaller grid, `scale` or `offset`"
        )
        raise ValueError(msg)


def _per_axis_bool(value: Any, name: str, nd: int) -> tuple[bool, ...]:
    return tuple(_checks.check_bool(v, name) for v in per_axis(value, name, nd))


@kept_on_devices
def grid_ids(
    shape: Sequence[int],
    *,
    offset: float | Sequence[float] = 0,
    scale: float | Sequence[float] = 1,
    center: bool | Sequence[bool] = False,
    normalize: str | None = None,
    ref_shape: Sequence[int] | None = None,
    floor: bool = False,
    merge: int | None = None,
    indexing: str = "ij",
    prefix_tokens: int = 0,
    suffix_tokens: int = 0,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""The position ids of the tokens of an image or video grid, as models build them.

    The grid point with index :math:`i_k` on axis :math:`k` (of size
    :math:`n_k`) gets the coordinate

    .. math::

        c_k = \bigl((i_k - \mathrm{center}_k + \mathrm{offset}_k)\text{, normalised, rescaled}\bigr)
              \cdot \mathrm{scale}_k,

    step by step: ``center`` subtracts :math:`\lceil n_k / 2 \rceil`, then
    ``offset`` is added; ``normalize`` maps the patch centres to
    :math:`2 (c + 1/2) / N - 1` (in :math:`[-1, 1]`); ``ref_shape``
    multiplies by :math:`r_k / n_k`; ``scale`` multiplies; ``floor``
    rounds down.  Tokens are in row-major order (the last axis fastest),
    or in Qwen's merged-patch order with ``merge``.

    ========================  ===================================================================
    model                     call
    ========================  ===================================================================
    Flux (text + image)       ``grid_ids((1, h, w), prefix_tokens=text_len)``, 3 axes ``(0, h, w)``
    Flux Kontext reference    ``grid_ids((1, h, w), offset=(1, 0, 0))``
    Flux 2 image / text       ``grid_ids((1, h, w, 1))`` / ``grid_ids((1, 1, 1, text_len))``
    Wan, HunyuanVideo         ``grid_ids((t, h, w))``
    Cosmos (video at fps)     ``grid_ids((t, h, w), scale=(24 / fps, 1, 1))``
    CogView4                  ``grid_ids((h, w), ref_shape=(256, 256), floor=True)``
    Qwen-Image                ``grid_ids((1, h, w), center=(False, True, True))``
    Qwen2-VL / 2.5-VL vision  ``grid_ids((t, h, w), merge=2)[:, 1:]`` (``(h, w)`` per token)
    Pixtral                   ``grid_ids((h, w))``
    Llama 4 vision            ``grid_ids((n, n), offset=1, indexing="xy", suffix_tokens=1)``
    torchtune vision          the same (``prefix_tokens=1`` for a leading class token)
    EVA-02 (timm)             ``grid_ids((h, w), ref_shape=(16, 16))``
    DINOv3                    ``grid_ids((h, w), normalize="separate")`` (timm: also ``"min"``, ``"max"``)
    RoPE-Mixed (timm)         ``grid_ids((h, w), indexing="xy")``
    ========================  ===================================================================

    Parameters
    ----------
    shape : tuple of int
        The grid's size per axis, any number of axes (``(h, w)``, ``(t, h,
        w)``, Flux 2's ``(t, h, w, l)``).
    offset : int, float or sequence, default 0
        Added to the (centred) index of every axis or of each (Llama 4's
        ``+1``; Flux Kontext's reference image index).
    scale : int, float or sequence, default 1
        Multiplies the coordinate of every axis or of each (a time stride;
        Cosmos's ``base_fps / fps``).
    center : bool or sequence of bool, default False
        Count the indices of an axis from its middle: :math:`i -
        \lceil n/2 \rceil`, that is :math:`-n/2 \dots n/2 - 1` for even
        :math:`n` (Qwen-Image's ``scale_rope``).
    normalize : {None, "separate", "min", "max"}
        Patch centres :math:`(i + 1/2)` over :math:`N` mapped to
        :math:`[-1, 1]` (DINOv3): :math:`N = n_k` (``"separate"``), the
        smallest or the largest size of the grid.
    ref_shape : tuple of int, optional
        Rescale each axis to a reference grid: :math:`c \cdot r_k / n_k`
        (EVA's ``ref_feat_shape``, CogView4's 256 x 256 with ``floor``).
    floor : bool, default False
        Round the coordinates down to integers (CogView4's ``i * r // n``).
    merge : int, optional
        Qwen's merged-patch order: the last two axes in ``merge x merge``
        blocks, block after block (row-major), row-major inside each block;
        their sizes must be multiples of ``merge``.
    indexing : {"ij", "xy"}
        ``"xy"`` swaps the first two columns (``(column, row)``, as
        ``numpy.meshgrid`` and timm's ``grid_indexing``); the tokens stay
        in row-major order.
    prefix_tokens, suffix_tokens : int, default 0
        Rows of zero ids before (Flux's text tokens, a class token) and
        after the grid (Llama 4's class token: angle 0, not rotated).
    dtype, device, xp
        The dtype of the ids (default: the namespace's default integer dtype
        when every coordinate is an integer, else its widest real floating
        dtype on the device, float64 where it exists, so that the angles
        are exact), device and namespace (default NumPy).

    Returns
    -------
    array
        Shape ``(prefix_tokens + prod(shape) + suffix_tokens, len(shape))``.

    Examples
    --------
    >>> import posenc
    >>> posenc.grid_ids((2, 3)).T
    array([[0, 0, 0, 1, 1, 1],
           [0, 1, 2, 0, 1, 2]])
    >>> posenc.grid_ids((2, 4), merge=2).T  # Qwen2-VL: 2 x 2 blocks
    array([[0, 0, 1, 1, 0, 0, 1, 1],
           [0, 1, 0, 1, 2, 3, 2, 3]])
    >>> posenc.grid_ids((2, 2), normalize="separate").T  # DINOv3
    array([[-0.5, -0.5,  0.5,  0.5],
           [-0.5,  0.5, -0.5,  0.5]])
    >>> posenc.grid_ids((2, 2), offset=1, indexing="xy", suffix_tokens=1).T  # Llama 4
    array([[1, 2, 1, 2, 0],
           [1, 1, 2, 2, 0]])
    """
    dims = _check_shape(shape)
    nd = len(dims)
    offsets = _per_axis_number(offset, "offset", nd)
    scales = _per_axis_number(scale, "scale", nd)
    centers = _per_axis_bool(center, "center", nd)
    if normalize is not None:
        normalize = _checks.check_choice(normalize, "normalize", NORMALIZE)
    refs = None
    if ref_shape is not None:
        refs = _check_shape(ref_shape, "ref_shape")
        if len(refs) != nd:
            msg = f"`ref_shape` must have one size per axis of `shape` ({nd}), got {_checks.show(ref_shape)}"
            raise ValueError(msg)
        if normalize is not None:
            msg = "`ref_shape` rescales indices and `normalize` maps them to [-1, 1]: pass one of them"
            raise ValueError(msg)
    floor = _checks.check_bool(floor, "floor")
    indexing = _checks.check_choice(indexing, "indexing", INDEXING)
    if indexing == "xy" and nd < 2:
        msg = "`indexing='xy'` swaps the first two columns: `shape` must have at least two axes"
        raise ValueError(msg)
    prefix = _checks.check_int(prefix_tokens, "prefix_tokens", minimum=0)
    suffix = _checks.check_int(suffix_tokens, "suffix_tokens", minimum=0)
    if merge is not None:
        merge = _checks.check_int(merge, "merge", minimum=1)
        if nd < 2:
            msg = "`merge` orders the last two axes in blocks: `shape` must have at least two axes"
            raise ValueError(msg)
        for n in dims[-2:]:
            if not is_symbolic(n) and n % merge:
                msg = f"`merge` = {merge} must divide the last two sizes of `shape`, got {_checks.show(shape)}"
                raise ValueError(msg)
    integer = (
        normalize is None
        and (refs is None or floor)
        and all(isinstance(v, int) for v in offsets + scales)
    ) or floor
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    xp_ = ctx.xp
    total = prefix + suffix
    n_grid = 1
    for n in dims:
        n_grid = n_grid * n
    if not any(is_symbolic(n) for n in dims):
        _checks.check_size((total + n_grid, nd), "ids", "`shape`, `prefix_tokens` or `suffix_tokens`")
    if dtype is None:
        out_dtype = _compat.default_dtype(xp_, ctx.device, "integral") if integer else ctx.wide
    else:
        out_dtype = ctx.dtype
    if not any(is_symbolic(n) for n in dims):
        _check_exact(dims, offsets, scales, centers, normalize, refs, floor, integer, out_dtype, xp_)
    work = xp_.float64 if ctx.float64 else xp_.float32
    denom = None
    if normalize == "min":
        denom = min(dims)
    elif normalize == "max":
        denom = max(dims)
    coords = []
    for k, n in enumerate(dims):
        c = xp_.arange(n, device=ctx.device)
        if centers[k]:
            c = c - (n - n // 2)
        if not integer or not isinstance(offsets[k], int) or not isinstance(scales[k], int) or refs is not None:
            c = _angles.cast(c, work, xp_)
        if offsets[k] != 0:
            c = c + offsets[k]
        if normalize is not None:
            d = n if normalize == "separate" else denom
            c = (_angles.cast(c, work, xp_) + 0.5) / d * 2.0 - 1.0
        if refs is not None:
            c = (c * refs[k]) / n
        if scales[k] != 1:
            c = c * scales[k]
        if floor:
            c = xp_.floor(_angles.cast(c, work, xp_))
        coords.append(c)
    grids = []
    for k, c in enumerate(coords):
        view = tuple(dims[j] if j == k else 1 for j in range(nd))
        grids.append(xp_.broadcast_to(xp_.reshape(c, view), dims))
    if indexing == "xy":
        grids[0], grids[1] = grids[1], grids[0]
    ids = xp_.stack([_angles.cast(g, out_dtype, xp_) for g in grids], axis=-1)
    if merge is not None:
        lead, (h, w) = dims[:-2], dims[-2:]
        ids = xp_.reshape(ids, lead + (h // merge, merge, w // merge, merge, nd))
        a = len(lead)
        ids = xp_.permute_dims(ids, tuple(range(a)) + (a, a + 2, a + 1, a + 3, a + 4))
    ids = xp_.reshape(ids, (n_grid, nd))
    if total:
        parts = []
        if prefix:
            parts.append(xp_.zeros((prefix, nd), dtype=out_dtype, device=ctx.device))
        parts.append(ids)
        if suffix:
            parts.append(xp_.zeros((suffix, nd), dtype=out_dtype, device=ctx.device))
        ids = xp_.concat(parts, axis=0)
    return ids
