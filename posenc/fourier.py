r"""Fourier features of coordinates: NeRF's positional encoding and Tancik et
al.'s random Gaussian Fourier features.
"""

from __future__ import annotations

import math
import numbers
import operator
from fractions import Fraction
from typing import Any

import numpy as np

from . import _angles, _checks, _compat, _exact
from ._compat import Array
from ._trace import graph_constant, host_constant

__all__ = ["fourier_features", "gaussian_fourier_features", "gaussian_matrix"]

#: on float32-only devices, up to this many input dimensions the projection is an explicit sum
_LOOP_MAX_IN_DIM = 16
#: largest ``max_log2_freq``: higher frequencies resolve nothing in float64
#: coordinates, and their products would overflow float32
_MAX_LOG2_FREQ = 64.0


def _coords_array(coords: Array, ctx: _compat.Context, out_width: Any = None) -> Array:
    """``coords`` as a real array of shape (..., in_dim).

    ``out_width(in_dim)``: the last axis of the output.  For an array, the
    output size is checked from the shape alone, before the values are
    scanned for NaN (a huge broadcast view is refused without reading it).
    """
    if isinstance(coords, (bool, numbers.Number)) and not _compat.is_array(coords):
        msg = f"`coords` must be an array of shape (..., in_dim), got {type(coords).__name__}"
        raise TypeError(msg)
    if out_width is not None and _compat.is_array(coords) and getattr(coords, "ndim", 0) >= 1:
        shape = tuple(int(n) for n in coords.shape)
        _checks.check_size(shape[:-1] + (out_width(shape[-1]),), "output")
    coords = _checks.check_positions(coords, "coords", ctx)
    if coords.ndim < 1 or int(coords.shape[-1]) < 1:
        msg = f"`coords` must have shape (..., in_dim) with in_dim >= 1, got shape {tuple(coords.shape)}"
        raise ValueError(msg)
    return coords


def _nerf_formula(n: Any, num_bands: int, max_log2_freq: float, log_sampling: bool, scale_pi: bool) -> Any:
    """NeRF's frequencies as numbers of class ``n`` (:mod:`posenc._exact`):
    ``2 ** linspace(0, M, N)`` or ``linspace(1, 2 ** M, N)``, times pi with
    ``scale_pi``, exactly in the arguments."""
    a = _exact.pi(n.BITS) if scale_pi else Fraction(1)
    gaps = max(num_bands - 1, 1)
    if log_sampling:  # a * 2 ** (k M / (N - 1))
        return _exact.geometric(n, 2, -Fraction(max_log2_freq) / gaps, num_bands, a)
    if max_log2_freq < -2000:  # 2 ** M below every float64 and its rests: 0
        two_m = Fraction(0)
    else:
        big, s = _exact.exp_scaled(Fraction(max_log2_freq) * _exact.ln(2, n.BITS), n.BITS)
        two_m = Fraction(big << s) if s >= 0 else Fraction(big, 1 << -s)  # 2 ** M
    return (n.arange(num_bands) * ((two_m - 1) / gaps) + 1) * a


def _nerf_freqs(
    num_bands: int, max_log2_freq: float, log_sampling: bool, scale_pi: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The frequencies as float64 pairs (the correctly rounded values and their rests)."""
    return _exact.evaluate(_nerf_formula, num_bands, max_log2_freq, log_sampling, scale_pi)


@host_constant
def _nerf_plan(
    num_bands: int, max_log2_freq: float, log_sampling: bool, scale_pi: bool
) -> tuple[_angles.Freqs, tuple[float, ...], bool]:
    """The frequencies as :class:`~posenc._angles.Freqs` and as Python floats,
    and whether they are all powers of two (a constant for torch's tracer)."""
    f, lo = _nerf_freqs(num_bands, max_log2_freq, log_sampling, scale_pi)
    mant, _ = np.frexp(f)
    return _angles.Freqs.exact(f, lo), tuple(f.tolist()), bool(np.all(mant == 0.5))


def fourier_features(
    coords: Array,
    num_bands: int,
    *,
    max_log2_freq: float | None = None,
    include_input: bool = True,
    log_sampling: bool = True,
    scale_pi: bool = False,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""NeRF's positional encoding :math:`\gamma(x)` of coordinates.

    For frequencies :math:`f_0, \dots, f_{L-1}` (``L = num_bands``) the
    output is, along the last axis,

    .. math::

        [x,\ \sin(f_0 x),\ \cos(f_0 x),\ \sin(f_1 x),\ \cos(f_1 x),\ \dots]

    where each term spans all ``in_dim`` input coordinates: the order of the
    reference NeRF code's ``Embedder`` (per frequency, sine then cosine, each
    over all input dimensions; the input first when ``include_input``).
    The reference uses :math:`f_k = 2^k` with no factor :math:`\pi`
    (``max_freq_log2 = multires - 1``, ``N_freqs = multires``), while the
    paper writes :math:`\sin(2^k \pi x)`; ``scale_pi=True`` gives the paper's
    version.

    Parameters
    ----------
    coords : array, shape (..., in_dim)
        Integer or real coordinates (NeRF: 3-D points with ``num_bands=10``
        and viewing directions with ``num_bands=4``).
    num_bands : int
        Number of frequencies ``L`` (NeRF's ``multires``); 0 leaves only the
        input.
    max_log2_freq : float, optional
        :math:`\log_2` of the highest frequency; default ``num_bands - 1``,
        at most 64.
    include_input : bool, default True
        Put ``coords`` itself first, as the reference code does.
    log_sampling : bool, default True
        ``True``: ``f = 2 ** linspace(0, max_log2_freq, L)``;
        ``False``: ``f = linspace(1, 2 ** max_log2_freq, L)``.
    scale_pi : bool, default False
        Multiply every frequency by :math:`\pi` (the paper's formula).
    dtype, device, xp
        Output dtype (default: the namespace's default float), device and
        namespace for list input; array ``coords`` decide the namespace and
        device.

    Returns
    -------
    array
        Shape ``coords.shape[:-1] + (in_dim * (include_input + 2 * num_bands),)``.

    Notes
    -----
    The angles are formed in float64 where the device has it.  Without
    float64 (JAX by default, MPS) posenc splits the integer part of the
    coordinates off exactly; with the default power-of-two frequencies the
    rest of the product is exact in float32 too, while ``scale_pi=True``
    leaves an error of about ``|f x| * 6e-8``.

    References
    ----------
    .. [1] B. Mildenhall et al., "NeRF: representing scenes as neural radiance fields
           for view synthesis", ECCV 2020, https://arxiv.org/abs/2003.08934

    Examples
    --------
    >>> import numpy as np, posenc
    >>> x = np.array([[0.25, -1.0, 2.0]])
    >>> posenc.fourier_features(x, 10).shape
    (1, 63)
    >>> posenc.fourier_features(np.array([0.5]), 2).round(4)
    array([0.5   , 0.4794, 0.8776, 0.8415, 0.5403])
    >>> posenc.fourier_features(np.array([0.5]), 1, scale_pi=True, include_input=False).round(4)
    array([1., 0.])
    """
    ctx = _compat.resolve({"coords": coords}, xp=xp, device=device, dtype=dtype)
    # 2 * num_bands features per coordinate: capped so that one coordinate's
    # features (and the host frequency table) stay within posenc's limit,
    # even when the output is empty
    nb = _checks.check_int(num_bands, "num_bands", minimum=0, maximum=_checks.MAX_ELEMENTS // 2)
    if max_log2_freq is not None:
        max_log2_freq = _checks.check_float(max_log2_freq, "max_log2_freq")
        if max_log2_freq > _MAX_LOG2_FREQ:
            msg = f"`max_log2_freq` must be at most {_MAX_LOG2_FREQ:g} (a frequency of 2**64), got {max_log2_freq!r}"
            raise ValueError(msg)
    include_input = _checks.check_bool(include_input, "include_input")
    log_sampling = _checks.check_bool(log_sampling, "log_sampling")
    scale_pi = _checks.check_bool(scale_pi, "scale_pi")
    if nb == 0 and not include_input:
        msg = "`num_bands` must be >= 1 when `include_input` is False (the output would be empty)"
        raise ValueError(msg)
    per = int(include_input) + 2 * nb  # output features per input dimension
    coords = _coords_array(coords, ctx, lambda d: d * per)
    xp_ = ctx.xp
    lead = tuple(coords.shape[:-1])
    d = int(coords.shape[-1])
    width = d * per
    _checks.check_size(lead + (width,), "output")
    if max_log2_freq is None:
        max_log2_freq = float(max(nb - 1, 0))
        if max_log2_freq > _MAX_LOG2_FREQ:
            msg = (
                f"`num_bands` must be at most {int(_MAX_LOG2_FREQ) + 1} with the default `max_log2_freq` "
                f"(num_bands - 1, at most {_MAX_LOG2_FREQ:g}), got {nb}; pass `max_log2_freq`"
            )
            raise ValueError(msg)
    if math.prod(lead) * width == 0:
        # nothing to compute: no frequency table (num_bands may be large)
        return _angles.zeros(lead + (width,), ctx.dtype, ctx)
    parts = []
    if include_input:
        parts.append(_angles.cast(coords, ctx.work, xp_))
    if nb:
        f, values, pow2 = _nerf_plan(nb, max_log2_freq, log_sampling, scale_pi)
        if pow2 and coords.dtype == ctx.work:
            # x * 2**k is exact in the coordinates' own dtype: no wider angle
            # needed.  It stays finite: coordinates beyond top / (2 f_max), whose
            # angles no float resolves anyway, are clipped there first
            lim = float(xp_.finfo(coords.dtype).max) / (2.0 * f.top)
            x = xp_.clip(coords, -lim, lim)
            w = ctx.asarray(values, ctx.work)
            a = x[..., None, :] * w[:, None]  # (..., nb, d)
            sc = xp_.stack([xp_.sin(a), xp_.cos(a)], axis=-2)  # (..., nb, 2, d)
        else:
            x = coords
            if _compat.is_real_float_dtype(xp_, coords.dtype):
                # as above: coordinates whose angles no float resolves are clipped, here
                # within the exact range of the angles (beyond it they would be refused)
                lim = float(_angles.real_limit(coords, ctx)) / 2.0 if ctx.float64 else 2.0**31
                if lim < float(xp_.finfo(coords.dtype).max):  # (float16 coordinates never reach it)
                    x = xp_.clip(coords, -lim, lim)
            s, c = _angles.sincos(x, f, ctx, "`coords`")  # (..., d, nb)
            sc = xp_.stack([s, c], axis=-1)  # (..., d, nb, 2)
            k = len(lead)
            sc = xp_.permute_dims(sc, tuple(range(k)) + (k + 1, k + 2, k))  # (..., nb, 2, d)
        parts.append(xp_.reshape(sc, lead + (2 * nb * d,)))
    out = parts[0] if len(parts) == 1 else xp_.concat(parts, axis=-1)
    return _angles.cast(out, ctx.dtype, xp_)


def gaussian_fourier_features(
    coords: Array,
    B: Array,
    *,
    flip_sin_to_cos: bool = False,
    dtype: Any = None,
) -> Array:
    r"""Random Fourier features :math:`[\sin(2\pi x B^\top), \cos(2\pi x B^\top)]`.

    Tancik et al. (2020), "Fourier Features Let Networks Learn High Frequency
    Functions in Low Dimensional Domains": with :math:`B` drawn from
    :math:`\mathcal{N}(0, \sigma^2)` (see :func:`gaussian_matrix`), an MLP on
    these features learns high-frequency detail.  The paper writes the cosines
    first; its reference code (and this function) concatenates
    ``[sin, cos]``.

    Parameters
    ----------
    coords : array, shape (..., in_dim)
        Integer or real coordinates.
    B : array, shape (num_features, in_dim)
        The projection, of the namespace and device of ``coords``.
    flip_sin_to_cos : bool, default False
        ``[cos | sin]`` instead of ``[sin | cos]``: diffusers'
        ``GaussianFourierProjection(flip_sin_to_cos=True)``.  The
        noise-level embedding of score-SDE's NCSN++ (its
        ``GaussianFourierProjection`` of ``log(sigma)``, diffusers'
        ``log=True``) is this function of ``coords = log(sigma)[:, None]``
        and ``B = W[:, None]``.
    dtype : dtype, optional
        Output dtype (default: the namespace's default float).

    Returns
    -------
    array
        Shape ``coords.shape[:-1] + (2 * num_features,)``.

    Notes
    -----
    The projection :math:`t = x B^\top` is formed on the device in the widest
    float it has: a float64 ``matmul`` where float64 exists; on float32-only
    devices an explicit sum of products for ``in_dim <= 16`` (a float32
    matrix multiply may run at lowered precision on accelerators, TF32 for
    instance) and ``matmul`` above.  It is reduced modulo 1
    before the multiplication by :math:`2\pi`, so the error does not grow
    with :math:`|t|`; the sines and cosines are then taken in the output
    precision (float32 for float32 output, which keeps them fast).

    References
    ----------
    .. [1] M. Tancik et al., "Fourier features let networks learn high frequency
           functions in low dimensional domains", NeurIPS 2020,
           https://arxiv.org/abs/2006.10739

    Examples
    --------
    >>> import numpy as np, posenc
    >>> B = np.array([[1.0, 0.0], [0.0, 0.5]])
    >>> posenc.gaussian_fourier_features(np.array([[0.25, 1.0]]), B).round(4)
    array([[ 1.,  0.,  0., -1.]])
    >>> B = posenc.gaussian_matrix(256, 2, scale=10.0, seed=0)
    >>> posenc.gaussian_fourier_features(np.zeros((5, 2)), B).shape
    (5, 512)
    """
    ctx = _compat.resolve({"coords": coords, "B": B}, dtype=dtype)
    flip = _checks.check_bool(flip_sin_to_cos, "flip_sin_to_cos")
    nf_of_b = int(B.shape[0]) if _compat.is_array(B) and getattr(B, "ndim", 0) == 2 else None
    coords = _coords_array(coords, ctx, None if nf_of_b is None else lambda d: 2 * nf_of_b)
    xp_ = ctx.xp
    if not _compat.is_array(B) and not isinstance(B, (list, tuple)):
        msg = f"`B` must be an array of shape (num_features, in_dim), got {type(B).__name__}"
        raise TypeError(msg)
    B = _checks.check_positions(B, "B", ctx)
    d = operator.index(coords.shape[-1])  # fixed while tracing: it may set a loop
    if B.ndim != 2 or int(B.shape[1]) != d or int(B.shape[0]) < 1:
        msg = (
            f"`B` must have shape (num_features, in_dim) with num_features >= 1 and "
            f"in_dim = coords.shape[-1] = {d}, got shape {tuple(B.shape)}"
        )
        raise ValueError(msg)
    lead = tuple(coords.shape[:-1])
    nf = int(B.shape[0])
    _checks.check_size(lead + (2 * nf,), "output")
    wide = ctx.wide
    x = _angles.cast(coords, wide, xp_)
    b = _angles.cast(B, wide, xp_)
    if ctx.float64 or d > _LOOP_MAX_IN_DIM:
        t = xp_.matmul(x, xp_.matrix_transpose(b))  # (..., nf)
    else:  # float32 only: an explicit sum, immune to lowered matmul precision
        t = x[..., 0:1] * b[:, 0]
        for j in range(1, d):
            t = t + x[..., j : j + 1] * b[:, j]
    t = t - xp_.round(t)  # sin(2 pi t) has period 1 in t: |t| <= 1/2 from here
    # |a| <= pi: one rounding; 2 pi as a literal (see posenc._angles._TRACED_TWO_PI)
    a = _angles.cast(6.283185307179586 * t, ctx.work, xp_)
    out = xp_.concat([xp_.cos(a), xp_.sin(a)] if flip else [xp_.sin(a), xp_.cos(a)], axis=-1)
    return _angles.cast(out, ctx.dtype, xp_)


def gaussian_matrix(
    num_features: int,
    in_dim: int,
    *,
    scale: float,
    seed: int | np.random.Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""A Gaussian projection :math:`B \sim \mathcal{N}(0, \sigma^2)` of coordinates.

    The matrix that :func:`gaussian_fourier_features` projects coordinates with.

    Drawn in NumPy (randomness is not part of the array API standard) and
    moved to the target namespace and device, so one seed gives the same
    matrix on every backend.

    Parameters
    ----------
    num_features, in_dim : int
        Shape ``(num_features, in_dim)`` (Tancik et al. use 256 features).
    scale : float
        Standard deviation :math:`\sigma` (the paper sweeps 1 to 100; 10 is a
        common choice for images with coordinates in [0, 1]).
    seed : int or numpy.random.Generator, optional
        For reproducible matrices.  Under :func:`torch.compile` pass an int:
        the seeded draw becomes a constant of the compiled graph.
    dtype, device, xp
        Output dtype (default: the namespace's default float), device and
        namespace.

    Returns
    -------
    array
        Shape ``(num_features, in_dim)``.

    References
    ----------
    .. [1] M. Tancik et al., "Fourier features let networks learn high frequency
           functions in low dimensional domains", NeurIPS 2020,
           https://arxiv.org/abs/2006.10739

    Examples
    --------
    >>> import posenc
    >>> B = posenc.gaussian_matrix(256, 2, scale=10.0, seed=0)
    >>> B.shape, round(float(B.std()), 1)
    ((256, 2), 10.1)
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    nf = _checks.check_int(num_features, "num_features", minimum=1)
    d = _checks.check_int(in_dim, "in_dim", minimum=1)
    scale = _checks.check_float(scale, "scale", nonnegative=True)
    if seed is not None and not isinstance(seed, np.random.Generator):
        seed = _checks.check_int(seed, "seed", minimum=0)
    _checks.check_size((nf, d), "matrix")
    top = min(float(ctx.xp.finfo(ctx.work).max), float(ctx.xp.finfo(ctx.dtype).max))
    if isinstance(seed, int):
        # a fresh array of the seeded draw (a constant of the graph while torch traces)
        b = graph_constant(_draw, nf, d, scale, seed, top, ctx=ctx, keep=False)
    else:
        b = ctx.from_host(_draw(nf, d, scale, seed, top))
    return _angles.cast(b, ctx.dtype, ctx.xp)


def _draw(nf: int, d: int, scale: float, seed: int | np.random.Generator | None, top: float) -> np.ndarray:
    """``scale`` times standard normal draws of shape ``(nf, d)`` (float64, on the host)."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    with np.errstate(over="ignore"):  # refused below
        b = rng.standard_normal((nf, d)) * scale
    if b.size and not float(np.max(np.abs(b))) <= top:
        msg = (
            f"`scale` = {scale!r} draws values up to {float(np.max(np.abs(b))):.3g}, "
            f"beyond the range of the output dtype (largest {top:.3g})"
        )
        raise ValueError(msg)
    return b
