r"""Sinusoidal embeddings of diffusion timesteps (DDPM, every diffusion UNet and DiT).

A timestep embedding is the sinusoidal table of a few (usually fractional)
timesteps, laid out ``[sin | cos]`` or ``[cos | sin]``, with the frequencies

.. math::

    \omega_i = \mathrm{scale} \cdot \exp\!\Big(-\ln(\mathrm{max\_period})\,
    \frac{i}{h - \mathrm{shift}}\Big), \qquad i = 0, \dots, h - 1,
    \quad h = \lfloor \mathrm{dim} / 2 \rfloor,

diffusers' ``get_timestep_embedding``.  ``shift = 1`` (diffusers' default,
DDPM's) puts the last frequency at exactly ``1 / max_period``; ``shift = 0``
is the spacing of guided-diffusion, GLIDE and DiT.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from . import _angles, _cache, _checks, _compat, _exact, _kernels
from ._compat import Array, Context
from ._trace import host_constant, is_symbolic

__all__ = ["timestep_embedding"]


def _timestep_exact(dim: Any, shift: Any, scale: Any, max_period: Any) -> tuple[int, np.ndarray, np.ndarray]:
    """Validated ``dim`` and the frequencies, ``scale`` included, as float64
    ``(hi, lo)`` (``hi`` correctly rounded; :func:`posenc._exact.evaluate`)."""
    dim = _checks.check_dim(dim)
    shift = _checks.check_float(shift, "downscale_freq_shift")
    scale = _checks.check_float(scale, "scale")
    max_period = _checks.check_float(max_period, "max_period", positive=True)
    half = dim // 2
    if half > 1 and not half - shift > 0:
        msg = (
            f"`downscale_freq_shift` must be less than dim // 2 = {half} (it divides the exponent by "
            f"dim // 2 - downscale_freq_shift), got {shift!r}"
        )
        raise ValueError(msg)
    # i = 0 has the exponent 0 whatever the denominator (for dim 2 or 3 with
    # shift 1 it is 0 / 0 in diffusers' code, which gives NaN); the step
    # 1 / (half - shift) of the float shift n / d is d / (half d - n)
    n, d = shift.as_integer_ratio()
    step = Fraction(d, half * d - n) if half > 1 else 1
    # scale * exp(-i ln(max_period) / denom), exactly (posenc._exact)
    w, lo = _exact.evaluate(_exact.geometric, max_period, step, half, scale)
    # a geometric sequence is monotone: its ends are its extremes (Python
    # floats, no pass over the array)
    top = max(abs(float(w[0])), abs(float(w[-1]))) if half else 0.0
    if not math.isfinite(top):
        msg = (
            f"`max_period` = {max_period!r} with `downscale_freq_shift` = {shift!r} and `scale` = {scale!r} "
            "gives frequencies beyond the float64 range"
        )
        raise ValueError(msg)
    if not top <= _checks.MAX_TABLE_FREQUENCY:  # (Freqs.top; the message's names made only here)
        if abs(scale) > _checks.MAX_TABLE_FREQUENCY:
            source = f"`scale` = {scale!r}"
        else:
            source = f"`max_period` = {max_period!r} with `downscale_freq_shift` = {shift!r} and `scale` = {scale!r}"
        _checks.check_table_frequency(top, source)
    _cache.readonly(w, lo)
    return dim, w, lo


@host_constant
def _timestep_freqs(dim: Any, shift: Any, scale: Any, max_period: Any) -> tuple[int, _angles.Freqs]:
    """Validated ``dim`` and the host frequencies (a constant of torch's
    traced graphs)."""
    dim, w, lo = _timestep_exact(dim, shift, scale, max_period)
    return dim, _angles.Freqs.exact(w, lo)


class _Exact:
    """The frequencies of a configuration: ``m``, the float64 values ``hi``
    (correctly rounded) and their :class:`posenc._angles.Freqs`, made on
    first use (a table the one-buffer kernel writes needs only the turns,
    :meth:`turns`: a first call spares the rest and the key)."""

    __slots__ = ("m", "hi", "lo", "_freqs")

    def __init__(self, m: int, hi: Any, lo: Any, freqs: _angles.Freqs | None = None) -> None:
        self.m, self.hi, self.lo, self._freqs = m, hi, lo, freqs

    @property
    def freqs(self) -> _angles.Freqs:
        if self._freqs is None:  # (two threads may both make it: the same value)
            self._freqs = _angles.Freqs.exact(self.hi, self.lo)
        return self._freqs

    def turns(self) -> np.ndarray:
        """The turns ``w / (2 pi)`` rounded to float64, as :attr:`freqs`
        holds them (its ``vh``), in a fresh array."""
        hi = self.hi
        # (a geometric sequence: its ends bound it)
        quiet = _exact.quiet_floats(float(hi[0]), float(hi[-1])) if hi.shape[0] else True
        return _exact.times(hi, self.lo, (_angles.INV_HI, _angles.INV_LO), quiet=quiet)[0]


def _eager_exact(dim: Any, shift: Any, scale: Any, max_period: Any) -> tuple[int, _Exact]:
    dim, w, lo = _timestep_exact(dim, shift, scale, max_period)
    return dim, _Exact(int(w.shape[0]), w, lo)


#: the frequencies of recent configurations, by their arguments and the
#: arguments' types (a sampling loop embeds with one configuration every step)
_FREQS = _cache.Memo("timesteps.freqs", 64)


def _freqs(dim: Any, shift: Any, scale: Any, max_period: Any, ctx: Context) -> tuple[int, _Exact]:
    """The frequencies of a configuration: :func:`_timestep_freqs` while
    torch traces, else kept per configuration."""
    if ctx.traced:
        dim, freqs = _timestep_freqs(dim, shift, scale, max_period)
        return dim, _Exact(freqs.m, None, None, freqs)  # (no host array inside the trace)
    args = (dim, shift, scale, max_period)
    return _FREQS.get_or_make(_cache.typed_key(args), _eager_exact, *args)


@dataclass(slots=True)
class _Plan:
    """What :func:`timestep_embedding` does with timesteps of one type,
    dtype, device and shape and given options: validated once, kept in
    :data:`_PLANS` (a sampling loop embeds one batch shape every step)."""

    ctx: Context
    dim: int
    #: the frequencies (their Freqs made where a call needs them)
    exact: _Exact
    flip: bool
    #: the angles of such timesteps (None for an empty ``t`` or ``dim`` 1,
    #: and until a call needs them where :attr:`joined` is set)
    angles: _angles.Angles | None
    #: concrete real timesteps: scanned for NaN on every call
    scan: bool
    #: the kernel that writes the whole float32 table in one buffer
    #: (:func:`posenc._kernels.joined`), or None (sine and cosine concatenated)
    joined: Any
    #: the frequencies' turns :attr:`joined` reads (a fresh, writable array)
    turns: np.ndarray | None
    #: the checked timesteps of a call whose plan is not kept (lists, traced)
    t: Any


#: timestep_embedding's plans, keyed by the timesteps' (type, dtype, device,
#: shape) and the other arguments
_PLANS = _cache.Memo("timesteps.plans", 256)


def _plan(
    t: Any, dim: Any, flip_sin_to_cos: Any, shift: Any, scale: Any, max_period: Any, dtype: Any, device: Any,
    xp: Any, key: Any,
) -> _Plan:
    """Validate ``timestep_embedding``'s arguments (the output size from the
    shapes before the timesteps are scanned, by the caller on every call of
    a kept plan)."""
    ctx = _compat.resolve({"t": t}, xp=xp, device=device, dtype=dtype)
    dim, exact = _freqs(dim, shift, scale, max_period, ctx)
    flip = _checks.check_bool(flip_sin_to_cos, "flip_sin_to_cos")
    if (isinstance(t, numbers.Number) and not _compat.is_array(t)) or is_symbolic(t):
        msg = (
            f"`t` must be an array of timesteps, got the {type(t).__name__} {_checks.show(t)}; "
            "pass xp.asarray([t]) for one timestep"
        )
        raise TypeError(msg)
    keyed = key is not None  # a kept plan holds no arguments of the call
    t = _checks.check_positions(t, "t", ctx, out_tail=(dim,), what="embedding", scan=not keyed)
    scan = keyed and _compat.is_real_float_dtype(ctx.xp, t.dtype) and _compat.is_concrete(t)
    some = bool(exact.m and math.prod(t.shape))
    joined = _kernels.joined(t, ctx) if some else None
    angles = _angles.prepare(t, exact.freqs, ctx) if some and joined is None else None
    turns = exact.turns() if joined is not None else None
    return _Plan(
        ctx=ctx, dim=dim, exact=exact, flip=flip, angles=angles, scan=scan, joined=joined, turns=turns,
        t=None if keyed else t,
    )


def timestep_embedding(
    t: Array,
    dim: int,
    *,
    flip_sin_to_cos: bool = False,
    downscale_freq_shift: float = 1.0,
    scale: float = 1.0,
    max_period: float = 10000.0,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""Sinusoidal timestep embeddings, as diffusers' ``get_timestep_embedding``.

    Row ``j`` is ``[sin(t_j w) | cos(t_j w)]`` (``[cos | sin]`` with
    ``flip_sin_to_cos``) with the ``dim // 2`` frequencies
    :math:`w_i = \mathrm{scale}\cdot\mathrm{max\_period}^{-i/(\lfloor
    \mathrm{dim}/2 \rfloor - \mathrm{shift})}`, and for odd ``dim`` a last
    column of zeros (after the flip).  Every argument means what it means in
    diffusers, so a model's ``Timesteps(num_channels, flip_sin_to_cos,
    downscale_freq_shift)`` is ``timestep_embedding(t, num_channels,
    flip_sin_to_cos=..., downscale_freq_shift=...)``.

    Parameters
    ----------
    t : array
        Timesteps of any shape, integer or real (fractional timesteps, the
        sigmas of a continuous-time model), of any dtype including
        ``bfloat16`` and ``float16``.  They decide the namespace and the
        device.  Python numbers are refused: pass an array (an int would
        read as a count of timesteps elsewhere in posenc).
    dim : int
        Embedding width (diffusers' ``embedding_dim``, ``num_channels``).
    flip_sin_to_cos : bool, default False
        ``[cos | sin]`` instead of ``[sin | cos]`` (the zero column of an
        odd ``dim`` stays last).
    downscale_freq_shift : float, default 1.0
        ``shift`` in the exponent's denominator ``dim // 2 - shift``: 1 is
        diffusers' default (DDPM, the last frequency is exactly
        ``1 / max_period``), 0 the spacing of guided-diffusion, GLIDE and
        DiT; any value below ``dim // 2`` is accepted.
    scale : float, default 1.0
        Multiplies the angles (diffusers' ``scale``: 1000 for models fed
        timesteps in ``[0, 1]``).  At most ``2**50`` in magnitude, with every
        frequency (see Notes).
    max_period : float, default 10000.0
        The longest period, ``2 pi / w_min`` up to the shift.
    dtype, device, xp
        Output dtype (default: the namespace's default float), device and
        namespace for list input.

    Returns
    -------
    array
        Shape ``t.shape + (dim,)``.

    Notes
    -----
    The angle ``t * w`` is reduced exactly from the given ``t`` (the
    frequencies, ``scale`` included, are float64 host constants): in float64
    where the device has it, through float32 never a half type, and cast to
    ``dtype`` at the end, so ``bfloat16`` timesteps are widened exactly and
    a float32 ``t = 750`` asked for a ``bfloat16`` embedding is not rounded
    to 752 first.  On devices without float64 (JAX by default, MPS) the
    angles come from posenc's float32 digit decomposition.  diffusers forms
    the frequencies and the angles in float32, an error of up to about
    ``|t w| * 2**-23`` (1e-4 at ``t = 1000``): posenc's float32 embedding is
    within a few float32 ulp of the exact values instead.

    The reduction is exact for ``|t * w| < 2**50`` (the range of real
    positions of posenc's angle engine, which carries each frequency in turns
    to about ``2**-106``): a frequency above ``2**50`` (``scale`` or a
    ``max_period`` below 1) is refused, since ``t = 1`` would leave that
    range; within it, larger angles lose about ``|t w| * 2**-106`` (1e-7 at
    ``scale = 1e15, t = 1e10``).  Real timesteps beyond ``2**64`` in
    magnitude are read as ``±2**64`` (as :func:`posenc.sinusoidal` reads
    positions), where float64 no longer resolves the angle anyway.

    The same call gives the timestep embeddings of the other code bases:

    * facebookresearch DiT's ``TimestepEmbedder.timestep_embedding(t,
      dim)`` (also guided-diffusion's and GLIDE's ``timestep_embedding``):
      ``timestep_embedding(t, dim, flip_sin_to_cos=True,
      downscale_freq_shift=0)``;
    * diffusers ``Timesteps(dim, flip_sin_to_cos, downscale_freq_shift,
      scale)``: the same four arguments (:class:`posenc.torch.Timesteps` is
      the module);
    * DDPM's (and the original Stable Diffusion UNet's)
      ``get_timestep_embedding``: the defaults, ``[sin | cos]`` with
      ``shift = 1``.

    For ``dim`` of 2 or 3 the one frequency is ``scale`` whatever the shift;
    diffusers' code divides 0 by 0 there when the shift is 1 (NaN columns).

    References
    ----------
    .. [1] J. Ho, A. Jain, P. Abbeel, "Denoising diffusion probabilistic models",
           NeurIPS 2020, https://arxiv.org/abs/2006.11239
    .. [2] W. Peebles, S. Xie, "Scalable diffusion models with transformers", ICCV 2023,
           https://arxiv.org/abs/2212.09748

    Examples
    --------
    >>> import numpy as np, posenc
    >>> t = np.array([0.0, 1.0, 999.5])
    >>> e = posenc.timestep_embedding(t, 8)
    >>> e.shape
    (3, 8)
    >>> e[1].round(3)  # frequencies 1, 0.0464, 0.0022, 0.0001: [sin | cos]
    array([0.841, 0.046, 0.002, 0.   , 0.54 , 0.999, 1.   , 1.   ])

    DiT's embedding, ``[cos | sin]`` with the frequencies ``10000**(-i/4)``:

    >>> posenc.timestep_embedding(t, 8, flip_sin_to_cos=True, downscale_freq_shift=0)[1].round(3)
    array([0.54 , 0.995, 1.   , 1.   , 0.841, 0.1  , 0.01 , 0.001])

    Half-precision timesteps and output, computed in float32 or better:

    >>> import torch
    >>> posenc.timestep_embedding(torch.tensor([750.0]), 320, dtype=torch.bfloat16).dtype
    torch.bfloat16
    """
    options = (dim, flip_sin_to_cos, downscale_freq_shift, scale, max_period, dtype, device, xp)
    key = _compat.call_key((t,), options)
    plan = _PLANS.get_or_make(key, _plan, t, *options, key)
    ctx, dim, flip = plan.ctx, plan.dim, plan.flip
    xp_ = ctx.xp
    if plan.t is not None:
        t = plan.t
    if plan.joined is not None:  # (a table it writes had finite timesteps: no scan)
        table = plan.joined(t, plan.turns, flip, dim % 2)
        if table is not None:
            return _angles.cast(table, ctx.dtype, xp_)
    if plan.t is None and plan.scan:
        _checks.check_finite(t, "t", ctx.xp)
    lead = tuple(t.shape)
    if plan.exact.m == 0:  # dim == 1: diffusers' single zero column
        return ctx.place(_angles.zeros(lead + (dim,), ctx.dtype, ctx), like=t)
    angles = plan.angles
    if angles is None and plan.joined is not None:  # (two threads may both make them: the same)
        angles = plan.angles = _angles.prepare(t, plan.exact.freqs, ctx)
    s, c = angles(t, "`t`") if angles is not None else _angles.sincos(t, plan.exact.freqs, ctx, "`t`")
    parts = [c, s] if flip else [s, c]
    if dim % 2:
        parts.append(xp_.zeros(lead + (1,), dtype=s.dtype, device=ctx.device))
    out = _angles.cast(xp_.concat(parts, axis=-1), ctx.dtype, xp_)
    # (an empty t under jax.jit: the result must still depend on it, to be placed with it)
    return ctx.place(out, like=t) if math.prod(lead) == 0 else out
