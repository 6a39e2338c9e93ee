r"""RoPE context extension: the scalings of the inverse frequencies.

Each scaling is a small frozen dataclass.  Pass one as ``scaling=`` to
:func:`posenc.rope_frequencies`, :func:`posenc.rope_cos_sin` or
:func:`posenc.rope`; :func:`from_hf` builds the right one from a Hugging Face
model configuration.

The frequencies follow the Hugging Face ``transformers`` implementation
(``modeling_rope_utils``) formula by formula, evaluated in float64 on the host
(Hugging Face evaluates them in float32).  With :math:`d` the rotary
dimension, :math:`b` the base and :math:`\omega_i = b^{-2i/d}`:

=================  ==========================================================
``Linear``         :math:`\omega_i / s` (position interpolation)
``NTK``            :math:`b' = b\, s^{d/(d-2)}` (static "NTK-aware" base)
``DynamicNTK``     :math:`b' = b\,(s L / L_0 - (s - 1))^{d/(d-2)}` with
                   :math:`L = \max(\text{seq\_len}, L_0)`
``YaRN``           ramp between :math:`\omega_i` and :math:`\omega_i / s`
                   over the dimensions whose wavelengths lie between
                   ``beta_fast`` and ``beta_slow`` rotations in :math:`L_0`;
                   attention factor :math:`0.1 \ln s + 1`
``Llama3``         :math:`\omega_i / s` for wavelengths above
                   :math:`L_0 / \text{low}`, :math:`\omega_i` below
                   :math:`L_0 / \text{high}`, a smooth blend between
``LongRoPE``       :math:`\omega_i / \lambda_i` with per-frequency factors
                   :math:`\lambda` (``short_factor`` up to :math:`L_0`,
                   ``long_factor`` beyond); attention factor
                   :math:`\sqrt{1 + \ln s / \ln L_0}`
=================  ==========================================================

Every scaling has :meth:`~Scaling.attention_scaling`, the factor that
multiplies ``cos`` and ``sin`` (Hugging Face's ``attention_scaling``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _checks

__all__ = ["Scaling", "Linear", "NTK", "DynamicNTK", "YaRN", "Llama3", "LongRoPE", "Proportional", "from_hf"]


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def default_inv_freq(dim: int, base: float) -> np.ndarray:
    """The unscaled ``dim // 2`` inverse frequencies ``base ** (-2i / dim)`` (float64)."""
    return 1.0 / np.power(base, np.arange(0, dim, 2, dtype=np.float64) / dim)


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


def _positive(obj: Any, name: str) -> None:
    _set(obj, name, _checks.check_float(getattr(obj, name), name, positive=True))


def _optional_positive(obj: Any, name: str) -> None:
    if getattr(obj, name) is not None:
        _positive(obj, name)


def _optional_real(obj: Any, name: str) -> None:
    if getattr(obj, name) is not None:
        _set(obj, name, _checks.check_float(getattr(obj, name), name))


def _positions(obj: Any, name: str = "original_max_positions") -> None:
    _set(obj, name, _checks.check_int(getattr(obj, name), name, minimum=1))


def _seq_len(seq_len: Any) -> int | None:
    if seq_len is None:
        return None
    return _checks.check_int(seq_len, "seq_len", minimum=1)


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    if scale <= 1.0:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


# --------------------------------------------------------------------------
# the scalings
# --------------------------------------------------------------------------
class Scaling:
    """Base class of the RoPE scalings (for ``isinstance`` checks)."""

    __slots__ = ()

    def attention_scaling(self, seq_len: int | None = None) -> float:
        """The factor that multiplies ``cos`` and ``sin`` (1.0 unless stated).

        Parameters
        ----------
        seq_len : int, optional
            The current sequence length (for the length-dependent scalings).
        """
        _seq_len(seq_len)
        return 1.0

    def _inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


@dataclass(frozen=True)
class Linear(Scaling):
    r"""Linear position interpolation (Chen et al., 2023; kaiokendev):
    every frequency divided by ``factor``.

    Equivalent to dividing the positions by ``factor``; Hugging Face
    ``rope_type="linear"``.

    Parameters
    ----------
    factor : float
        The interpolation factor, > 0 (usually the ratio of the new to the
        original context length).

    References
    ----------
    .. [1] S. Chen, S. Wong, L. Chen, Y. Tian, "Extending context window of large
           language models via positional interpolation", 2023,
           https://arxiv.org/abs/2306.15595

    Examples
    --------
    >>> import posenc
    >>> from posenc import scaling
    >>> posenc.rope_frequencies(4, scaling=scaling.Linear(2.0))
    array([0.5  , 0.005])
    """

    factor: float

    def __post_init__(self) -> None:
        _positive(self, "factor")

    def _inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        return default_inv_freq(dim, base) / self.factor


@dataclass(frozen=True)
class NTK(Scaling):
    r"""Static "NTK-aware" scaling (bloc97, 2023): a larger base.

    .. math:: b' = b \cdot \mathrm{factor}^{d / (d - 2)}

    The highest frequency is unchanged and the lowest is divided by
    ``factor``.  For ``d = 2`` the single frequency is 1 whatever the base.

    Parameters
    ----------
    factor : float
        Context extension factor, > 0.

    Examples
    --------
    >>> import posenc
    >>> from posenc import scaling
    >>> posenc.rope_frequencies(4, base=100.0).round(6)
    array([1. , 0.1])
    >>> posenc.rope_frequencies(4, base=100.0, scaling=scaling.NTK(4.0)).round(6)
    array([1.   , 0.025])
    """

    factor: float

    def __post_init__(self) -> None:
        _positive(self, "factor")

    def _inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        if dim == 2:
            return np.ones(1)
        return default_inv_freq(dim, base * self.factor ** (dim / (dim - 2)))


@dataclass(frozen=True)
class DynamicNTK(Scaling):
    r"""Dynamic NTK scaling (emozilla, 2023): the base grows with the length.

    .. math::

        b' = b \left(\frac{\mathrm{factor}\, L}{L_0} - (\mathrm{factor} - 1)\right)^{d/(d-2)},
        \qquad L = \max(\text{seq\_len}, L_0)

    so nothing changes up to the original length :math:`L_0`.  Hugging Face
    ``rope_type="dynamic"`` (where :math:`L_0` is the model's
    ``max_position_embeddings``); its module keeps the frequencies of the
    longest ``seq_len`` seen so far and resets below :math:`L_0`, posenc is
    stateless: pass the length you want.

    Parameters
    ----------
    factor : float
        Scaling factor, > 0.
    original_max_positions : int
        :math:`L_0`.

    Examples
    --------
    >>> import posenc
    >>> from posenc import scaling
    >>> s = scaling.DynamicNTK(2.0, original_max_positions=1024)
    >>> posenc.rope_frequencies(4, base=100.0, scaling=s, seq_len=512).round(6)
    array([1. , 0.1])
    >>> posenc.rope_frequencies(4, base=100.0, scaling=s, seq_len=2048).round(6)
    array([1.      , 0.033333])
    """

    factor: float
    original_max_positions: int

    def __post_init__(self) -> None:
        _positive(self, "factor")
        _positions(self)

    def _inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        if dim == 2:
            return np.ones(1)
        length = self.original_max_positions if seq_len is None else max(seq_len, self.original_max_positions)
        grow = self.factor * length / self.original_max_positions - (self.factor - 1.0)
        return default_inv_freq(dim, base * grow ** (dim / (dim - 2)))


@dataclass(frozen=True)
class YaRN(Scaling):
    r"""YaRN (Peng et al., 2023): "NTK-by-parts" interpolation plus an
    attention temperature.

    Dimensions whose wavelength makes more than ``beta_fast`` rotations in the
    original context keep their frequency, those with fewer than ``beta_slow``
    rotations are divided by ``factor``, and a linear ramp blends the two in
    between.  The ramp bounds are

    .. math:: \mathrm{dim}(\beta) = \frac{d \ln(L_0 / (2\pi\beta))}{2 \ln b}

    floored / ceiled when ``truncate`` and clipped to ``[0, d - 1]``.  The
    attention factor (applied to ``cos`` and ``sin``) is ``attention_factor``
    if given, else :math:`m(s, \mathrm{mscale}) / m(s, \mathrm{mscale\_all\_dim})`
    when both are set and non-zero (DeepSeek), else :math:`m(s, 1)`, with
    :math:`m(s, a) = 0.1\, a \ln s + 1` for :math:`s > 1` and 1 otherwise;
    it must be positive.  Hugging Face ``rope_type="yarn"``.

    Parameters
    ----------
    factor : float
        Context extension factor :math:`s`, > 0.
    original_max_positions : int
        The pretraining context length :math:`L_0`.
    beta_fast, beta_slow : float, default 32 and 1
        Rotation counts bounding the ramp (> 0).
    mscale, mscale_all_dim : float, optional
        DeepSeek's attention-factor parameters.
    attention_factor : float, optional
        Explicit attention factor (overrides the formula).
    truncate : bool, default True
        Round the ramp bounds to whole dimensions (``False``: gpt-oss).

    References
    ----------
    .. [1] B. Peng, J. Quesnelle, H. Fan, E. Shippole, "YaRN: efficient context window
           extension of large language models", ICLR 2024,
           https://arxiv.org/abs/2309.00071

    Examples
    --------
    >>> from posenc import scaling
    >>> round(scaling.YaRN(4.0, 4096).attention_scaling(), 6)
    1.138629
    """

    factor: float
    original_max_positions: int
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    mscale: float | None = None
    mscale_all_dim: float | None = None
    attention_factor: float | None = None
    truncate: bool = True

    def __post_init__(self) -> None:
        _positive(self, "factor")
        _positions(self)
        _positive(self, "beta_fast")
        _positive(self, "beta_slow")
        _optional_real(self, "mscale")
        _optional_real(self, "mscale_all_dim")
        _optional_positive(self, "attention_factor")
        _checks.check_bool(self.truncate, "truncate")
        a = self.attention_scaling()
        if not (math.isfinite(a) and a > 0.0):
            msg = (
                f"`mscale` = {self.mscale!r} and `mscale_all_dim` = {self.mscale_all_dim!r} give the attention "
                f"factor {a!r} for factor {self.factor!r}; it must be positive and finite"
            )
            raise ValueError(msg)

    def attention_scaling(self, seq_len: int | None = None) -> float:
        """The YaRN attention factor (independent of ``seq_len``)."""
        _seq_len(seq_len)
        if self.attention_factor is not None:
            return self.attention_factor
        if self.mscale and self.mscale_all_dim:
            den = _yarn_mscale(self.factor, self.mscale_all_dim)
            if den == 0.0:
                msg = (
                    f"`mscale_all_dim` = {self.mscale_all_dim!r} makes the attention factor divide by "
                    "0.1 * mscale_all_dim * log(factor) + 1 = 0"
                )
                raise ValueError(msg)
            return _yarn_mscale(self.factor, self.mscale) / den
        return _yarn_mscale(self.factor)

    def _inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        if base == 1.0:
            msg = "`base` must differ from 1 for YaRN (the ramp bounds divide by log(base))"
            raise ValueError(msg)
        pos_freqs = np.power(base, np.arange(0, dim, 2, dtype=np.float64) / dim)
        extrapolation = 1.0 / pos_freqs
        interpolation = 1.0 / (self.factor * pos_freqs)

        def correction_dim(rotations: float) -> float:
            return dim * math.log(self.original_max_positions / (rotations * 2 * math.pi)) / (2 * math.log(base))

        low, high = correction_dim(self.beta_fast), correction_dim(self.beta_slow)
        if self.truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001  # Hugging Face's guard against a zero-width ramp
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
        return interpolation * ramp + extrapolation * (1.0 - ramp)


@dataclass(frozen=True)
class Llama3(Scaling):
    r"""Llama 3.1's frequency-dependent interpolation.

    With :math:`\lambda_i = 2\pi / \omega_i` the wavelengths: frequencies with
    :math:`\lambda_i > L_0 / \mathrm{low}` are divided by ``factor``, those
    with :math:`\lambda_i < L_0 / \mathrm{high}` are kept, and in between
    :math:`(1 - \mu)\,\omega_i / s + \mu\, \omega_i` with
    :math:`\mu = (L_0 / \lambda_i - \mathrm{low}) / (\mathrm{high} - \mathrm{low})`.
    Hugging Face ``rope_type="llama3"``.

    Parameters
    ----------
    factor : float
        Scaling factor :math:`s` (8 for Llama 3.1), > 0.
    original_max_positions : int
        :math:`L_0` (8192 for Llama 3.1).
    low_freq_factor, high_freq_factor : float, default 1 and 4
        Bounds of the blend, ``0 < low < high``.

    References
    ----------
    .. [1] A. Grattafiori et al., "The Llama 3 herd of models", 2024,
           https://arxiv.org/abs/2407.21783

    Examples
    --------
    >>> import posenc
    >>> from posenc import scaling
    >>> s = scaling.Llama3(8.0, 8192)
    >>> w = posenc.rope_frequencies(128, base=500000.0, scaling=s)
    >>> (w[:3] / posenc.rope_frequencies(128, base=500000.0)[:3]).round(6)
    array([1., 1., 1.])
    >>> float(w[-1] / posenc.rope_frequencies(128, base=500000.0)[-1])
    0.125
    """

    factor: float
    original_max_positions: int
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0

    def __post_init__(self) -> None:
        _positive(self, "factor")
        _positions(self)
        _positive(self, "low_freq_factor")
        _positive(self, "high_freq_factor")
        if not self.high_freq_factor > self.low_freq_factor:
            msg = (
                "`high_freq_factor` must be greater than `low_freq_factor`, got "
                f"{self.high_freq_factor!r} <= {self.low_freq_factor!r}"
            )
            raise ValueError(msg)

    def _inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        inv = default_inv_freq(dim, base)
        old = float(self.original_max_positions)
        lo, hi = self.low_freq_factor, self.high_freq_factor
        low_wavelen, high_wavelen = old / lo, old / hi
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > low_wavelen, inv / self.factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1.0 - smooth) * scaled / self.factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        return np.where(medium, smoothed, scaled)


def _factor_list(value: Any, name: str) -> tuple[float, ...]:
    if isinstance(value, type):  # a class such as np.float64 has an unbound tolist
        msg = f"`{name}` must be a sequence of positive numbers, got the class {value.__name__}"
        raise TypeError(msg)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) and not hasattr(value, "tolist"):
        msg = f"`{name}` must be a sequence of positive numbers, got {type(value).__name__}"
        raise TypeError(msg)
    if hasattr(value, "tolist") and not isinstance(value, Sequence):
        try:
            value = value.tolist()
        except Exception as exc:  # an object whose tolist does not work
            msg = f"`{name}` must be a sequence of positive numbers, got {type(value).__name__} ({exc})"
            raise TypeError(msg) from None
        if not isinstance(value, list):
            msg = f"`{name}` must be one-dimensional, got a scalar"
            raise ValueError(msg)
    out = tuple(_checks.check_float(v, name, positive=True) for v in value)
    if not out:
        msg = f"`{name}` must not be empty"
        raise ValueError(msg)
    return out


@dataclass(frozen=True)
class LongRoPE(Scaling):
    r"""LongRoPE (Ding et al., 2024; Phi-3): searched per-frequency factors.

    :math:`\omega_i / \lambda_i` with :math:`\lambda` = ``short_factor``
    while the sequence length is at most :math:`L_0`, ``long_factor`` beyond
    (for every position: Hugging Face switches the whole table on
    ``seq_len``).  The attention factor is ``attention_factor`` if given,
    else :math:`\sqrt{1 + \ln s / \ln L_0}` for ``factor`` :math:`s > 1` and
    1 otherwise.  Hugging Face ``rope_type="longrope"``.

    PhiMoE (Phi-3.5-MoE) multiplies ``cos`` and ``sin`` by ``short_mscale``
    while the sequence length is at most :math:`L_0` and by ``long_mscale``
    beyond, instead of the attention factor (and transformers' PhiMoE uses
    ``short_factor`` at every length: :func:`from_hf` passes it as both
    factor lists).

    Parameters
    ----------
    short_factor, long_factor : sequence of float
        The ``dim // 2`` factors for short and long sequences (positive).
    original_max_positions : int
        :math:`L_0`, the pretraining context (4096 for Phi-3-mini-128k).
    factor : float, optional
        The context extension ratio :math:`s` (Hugging Face: the model's
        ``max_position_embeddings / original_max_position_embeddings`` when
        the config has no ``factor``).  Only used for the attention factor;
        ``None`` means no extension (factor 1).
    attention_factor : float, optional
        Explicit attention factor.
    short_mscale, long_mscale : float, optional
        PhiMoE's length-dependent attention factors (positive; both or
        neither, and not with ``attention_factor``).

    References
    ----------
    .. [1] Y. Ding et al., "LongRoPE: extending LLM context window beyond 2 million
           tokens", ICML 2024, https://arxiv.org/abs/2402.13753

    Examples
    --------
    >>> from posenc import scaling
    >>> s = scaling.LongRoPE([1.0, 2.0], [4.0, 8.0], 4096, factor=32.0)
    >>> round(s.attention_scaling(), 6)
    1.190238
    >>> s = scaling.LongRoPE([1.0, 2.0], [1.0, 2.0], 4096, short_mscale=1.243, long_mscale=1.3)
    >>> s.attention_scaling(seq_len=100), s.attention_scaling(seq_len=5000)
    (1.243, 1.3)
    """

    short_factor: Sequence[float]
    long_factor: Sequence[float]
    original_max_positions: int
    factor: float | None = None
    attention_factor: float | None = None
    short_mscale: float | None = None
    long_mscale: float | None = None

    def __post_init__(self) -> None:
        short = _factor_list(self.short_factor, "short_factor")
        long = _factor_list(self.long_factor, "long_factor")
        if len(short) != len(long):
            msg = (
                f"`short_factor` and `long_factor` must have the same length, got {len(short)} and {len(long)}"
            )
            raise ValueError(msg)
        _set(self, "short_factor", short)
        _set(self, "long_factor", long)
        _positions(self)
        _optional_positive(self, "factor")
        _optional_positive(self, "attention_factor")
        _optional_positive(self, "short_mscale")
        _optional_positive(self, "long_mscale")
        if (self.short_mscale is None) != (self.long_mscale is None):
            name = "long_mscale" if self.long_mscale is None else "short_mscale"
            msg = f"`{name}` must be given with `short_mscale` / `long_mscale` (PhiMoE sets both), got None"
            raise ValueError(msg)
        if self.short_mscale is not None and self.attention_factor is not None:
            msg = "`attention_factor` must be None with `short_mscale` and `long_mscale` (they replace it)"
            raise ValueError(msg)
        formula = self.attention_factor is None and self.short_mscale is None
        if formula and (self.factor or 1.0) > 1.0 and self.original_max_positions < 2:
            msg = "`original_max_positions` must be >= 2 for the LongRoPE attention factor (it divides by its log)"
            raise ValueError(msg)

    def attention_scaling(self, seq_len: int | None = None) -> float:
        """The LongRoPE attention factor (PhiMoE's mscales: ``long_mscale``
        for ``seq_len`` beyond the original length, else ``short_mscale``)."""
        seq_len = _seq_len(seq_len)
        if self.short_mscale is not None:
            long = seq_len is not None and seq_len > self.original_max_positions
            return self.long_mscale if long else self.short_mscale
        if self.attention_factor is not None:
            return self.attention_factor
        s = 1.0 if self.factor is None else self.factor
        if s <= 1.0:
            return 1.0
        return math.sqrt(1.0 + math.log(s) / math.log(self.original_max_positions))

    def _inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        if len(self.short_factor) != dim // 2:
            msg = (
                f"`short_factor` and `long_factor` of LongRoPE must have dim // 2 = {dim // 2} entries "
                f"for dim={dim}, got {len(self.short_factor)}"
            )
            raise ValueError(msg)
        long = seq_len is not None and seq_len > self.original_max_positions
        ext = np.asarray(self.long_factor if long else self.short_factor, dtype=np.float64)
        return 1.0 / (ext * np.power(base, np.arange(0, dim, 2, dtype=np.float64) / dim))


@dataclass(frozen=True)
class Proportional(Scaling):
    r"""Proportional RoPE (Gemma 4): a fraction of the frequencies rotate, the
    rest stay still, every exponent over the whole head.

    With :math:`d` the head dimension and :math:`r = \lfloor f d / 2 \rfloor`
    rotated pairs (``f = fraction``):

    .. math:: \omega_i = b^{-2i/d} / s \quad (i < r), \qquad \omega_i = 0 \quad (i \ge r)

    so the table spans the whole head (``cos = 1``, ``sin = 0`` on the
    still pairs), unlike a partial rotary dimension, whose exponents run over
    the rotated part only.  Hugging Face ``rope_type="proportional"``.

    Parameters
    ----------
    fraction : float
        The rotated fraction of the head (``partial_rotary_factor``), in
        ``[0, 1]``.
    factor : float, default 1.0
        Linear interpolation factor :math:`s` applied to every frequency, > 0.

    Examples
    --------
    >>> import posenc
    >>> from posenc import scaling
    >>> posenc.rope_frequencies(8, base=100.0, scaling=scaling.Proportional(0.5))
    array([1.        , 0.31622777, 0.        , 0.        ])
    """

    fraction: float
    factor: float = 1.0

    def __post_init__(self) -> None:
        _set(self, "fraction", _checks.check_float(self.fraction, "fraction", nonnegative=True))
        if self.fraction > 1.0:
            msg = f"`fraction` must be in [0, 1], got {self.fraction!r}"
            raise ValueError(msg)
        _positive(self, "factor")

    def _inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        rotated = int(self.fraction * dim // 2)  # Hugging Face's int(fraction * head_dim // 2)
        w = default_inv_freq(dim, base)
        return np.where(np.arange(dim // 2) < rotated, w, 0.0) / self.factor


# --------------------------------------------------------------------------
# Hugging Face configs: the model tables
# --------------------------------------------------------------------------
_HF_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "longrope", "su", "proportional")

#: the keys of a RoPE entry (``rope_parameters`` / ``rope_scaling``) each
#: rope type reads, besides ``_COMMON_KEYS``
_TYPE_KEYS: dict[str, tuple[str, ...]] = {
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor",),
    "yarn": (
        "factor",
        "original_max_position_embeddings",
        "attention_factor",
        "beta_fast",
        "beta_slow",
        "mscale",
        "mscale_all_dim",
        "truncate",
    ),
    "llama3": ("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
    "longrope": ("short_factor", "long_factor", "original_max_position_embeddings", "factor", "attention_factor"),
    "su": ("short_factor", "long_factor", "original_max_position_embeddings", "factor", "attention_factor"),
    "proportional": ("factor",),
}
_COMMON_KEYS = ("rope_type", "type", "rope_theta", "partial_rotary_factor")
_MROPE_KEYS = ("mrope_section", "mrope_interleaved", "interleaved")
#: keys of a RoPE entry known not to change the cos / sin tables (the
#: allowlist: any other key is refused by name)
_TABLE_NEUTRAL_KEYS = {
    # Ministral 3, Mistral 4: the queries are scaled by 1 + beta log(1 + floor(p / L0)) after the rotation
    "llama_4_scaling_beta": "scales the queries after the rotation",
    # Ministral 3, Mistral 4: the lengths transformers reads are the top-level ones
    "max_position_embeddings": "transformers reads the top-level max_position_embeddings",
}
#: keys one family's rotary module reads besides the standard ones:
#: model type -> {rope type: keys}
_MODEL_KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    "phimoe": {"longrope": ("short_mscale", "long_mscale"), "su": ("short_mscale", "long_mscale")},
    **dict.fromkeys(("hunyuan_v1_dense", "hunyuan_v1_moe", "hunyuan_vl", "hunyuan_vl_text"), {"dynamic": ("alpha",)}),
}

#: keys a released ``config.json`` may spell differently (first found wins;
#: read for config dictionaries only, after the model's attribute aliases)
_HIDDEN = ("hidden_size", "n_embd", "d_model")
_HEADS = ("num_attention_heads", "n_head", "n_heads")
#: head sizes before ``hidden_size // num_attention_heads`` in a config
#: dictionary: MLA's rotated part (DeepSeek), Zamba2's attention heads,
#: JetMoE's key/value channels
_HEAD_DIMS = ("head_dim", "qk_rope_head_dim", "attention_head_dim", "kv_channels")

#: the ``attribute_map`` aliases of transformers' configuration classes for
#: the keys posenc reads (transformers 5.24): a config object resolves them
#: itself, a config dictionary through this table
_ATTRIBUTE_MAP: dict[str, dict[str, str]] = {
    "bailing_hybrid": {"max_position_embeddings": "model_max_length"},
    "codegen": {"max_position_embeddings": "n_positions", "hidden_size": "n_embd", "num_attention_heads": "n_head"},
    "dbrx": {"num_attention_heads": "n_heads", "hidden_size": "d_model", "max_position_embeddings": "max_seq_len"},
    "glm4_moe_lite": {"head_dim": "qk_rope_head_dim"},
    "gptj": {"max_position_embeddings": "n_positions", "hidden_size": "n_embd", "num_attention_heads": "n_head"},
    "jetmoe": {"head_dim": "kv_channels"},
    "kimi_linear": {"max_position_embeddings": "model_max_length"},
    "moonshine": {"num_attention_heads": "decoder_num_attention_heads"},
    "zamba": {"head_dim": "attention_head_dim"},
    "zamba2": {"head_dim": "attention_head_dim"},
}

#: transformers' default ``rope_theta`` of the configuration classes whose
#: default is not 10000 (``default_theta``), for config dictionaries without one
_DEFAULT_THETA: dict[str, float] = {
    "apertus": 12e6, "apertus1p5_text": 12e6, "bitnet": 5e5, "blt": 5e5, "cohere": 5e5, "cosmos3_edge_text": 1e8,
    "csm": 5e5, "cwm": 1e6, "dots3_note_text": 8e7, "emu3_text_model": 1e6, "ernie4_5": 5e5, "ernie4_5_moe": 5e5,
    "ernie4_5_vl_moe_text": 5e5, "evolla": 5e5, "exaone": 5e5, "flex_olmo": 5e5, "fuyu": 25000.0, "gpt_oss": 150000.0,
    "gemma4_vision": 100.0, "gte": 160000.0, "helium": 1e5, "hy_v3": 11158840.0, "jina_embeddings_v3": 20000.0,
    "lfm2": 1e6, "lfm2_moe": 1e6, "lfm3": 1e6, "lfm3_vl_vision": 1e6, "llama4_text": 5e5, "longcat_flash": 1e7,
    "minimax": 1e6, "minimax_m2": 5e6, "minimax_m3_vl_text": 5e6, "mixtral": 1e6, "mllama_text_model": 5e5,
    "muse_glimmer_assistant": 5e5, "nomic_bert": 1000.0, "olmo3": 5e5, "openai_privacy_filter": 150000.0,
    "paddleocr_vl_text": 5e5, "pe_audio_encoder": 20000.0, "pe_audio_video_encoder": 20000.0,
    "pe_video_encoder": 20000.0, "phimoe": 1e6,
    "qwen2_5_omni_talker": 1e6, "qwen2_5_omni_text": 1e6, "qwen2_5_vl_text": 1e6, "qwen2_vl_text": 1e6,
    "qwen3_omni_moe_text": 1e6, "qwen3_vl_moe_text": 5e5, "qwen3_vl_text": 5e5, "sarvam_moe": 8e6, "smollm3": 2e6,
    "solar_open": 1e6,
}  # fmt: skip

#: transformers' per-model defaults for keys older ``config.json`` files omit
_PARTIAL_DEFAULTS = {"gpt_neox": 0.25, "stablelm": 0.25, "persimmon": 0.5}
#: (global, local) default thetas of the models with a sliding-window base
_LOCAL_GLOBAL = {
    "gemma3_text": (1e6, 1e4),
    "gemma3n_text": (1e6, 1e4),
    "t5gemma2_text": (1e6, 1e4),
    "t5gemma2_decoder": (1e6, 1e4),
    "t5gemma2_encoder": (1e6, 1e4),
    "modernbert": (160000.0, 1e4),
    "modernbert-decoder": (160000.0, 1e4),
}

#: multimodal RoPE of the Qwen2-VL family: model type -> (the sections
#: transformers uses when the config has none, interleaved).  Whether the
#: sections are interleaved is fixed by each model's rotary module
#: (transformers reads no ``mrope_interleaved`` key).
_MROPE = {
    **dict.fromkeys(
        ("qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text", "qwen2_5_omni", "qwen2_5_omni_thinker",
         "qwen2_5_omni_text", "qwen2_5_omni_talker", "paddleocr_vl", "paddleocr_vl_text"),
        ((16, 24, 24), False),
    ),
    **dict.fromkeys(
        ("glm4v", "glm4v_text", "glm4v_moe", "glm4v_moe_text", "glm_image", "glm_image_text", "glm_ocr", "glm_ocr_text",
         "glm46v"),
        ((8, 12, 12), False),
    ),
    **dict.fromkeys(
        ("qwen3_vl", "qwen3_vl_text", "qwen3_vl_moe", "qwen3_vl_moe_text", "qwen3_omni_moe", "qwen3_omni_moe_text",
         "qwen3_omni_moe_thinker", "qwen3_omni_moe_talker", "cosmos3_edge", "cosmos3_edge_text", "cohere_compass",
         "cohere_compass_text"),
        ((24, 20, 20), True),
    ),
    **dict.fromkeys(
        ("qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "qwen4_exp", "qwen4_exp_text"),
        ((11, 11, 10), True),
    ),
    # HY-V4-VL: the configuration class sets [12, 10, 10] when the config has none
    **dict.fromkeys(("hy_v4_vl", "hy_v4_vl_text"), ((12, 10, 10), True)),
}  # fmt: skip
#: multimodal RoPE that recombines the rows another way: model type ->
#: (how, whether the module uses it even without ``mrope_section``)
_MROPE_OTHER = {
    "ernie4_5_vl_moe": ("height / width pairs interleaved, then the temporal block", True),
    "ernie4_5_vl_moe_text": ("height / width pairs interleaved, then the temporal block", True),
    "hunyuan_vl": ("sections over the doubled table", False),
    "hunyuan_vl_text": ("sections over the doubled table", False),
    "neomme": ("two rows interleaved pair by pair", True),
}

#: models whose rotary module reads no RoPE entry: model type -> (what it
#: reads, its fixed base or None for the config's ``rope_theta``)
_FIXED_TABLE = {
    "gptj": ("a table of rotary_dim columns with base 10000", 10000.0),
    "codegen": ("a table of rotary_dim columns with base 10000", 10000.0),
    "esm": ("the default table with the top-level rope_theta", None),
}
#: how each model type reads ``rotary_dim``: the table's width (GPT-J,
#: CodeGen) or ``partial_rotary_factor = rotary_dim / head_dim`` (MiniMax-M2);
#: any other model type with a ``rotary_dim`` is refused
_ROTARY_DIM = {"gptj": "width", "codegen": "width", "minimax_m2": "partial"}


# --------------------------------------------------------------------------
# Hugging Face configs: the readers
# --------------------------------------------------------------------------
def _differ(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except Exception:  # values without a plain comparison (arrays)
        return True


class _HFConfig:
    """A configuration read the way transformers reads it: a config object
    through its attributes (``attribute_map`` aliases resolved by the object),
    a dictionary through the aliases of its ``model_type``."""

    __slots__ = ("_obj", "_dict", "_stored", "model_type", "aliases")

    def __init__(self, config: Any) -> None:
        self._stored: Mapping[str, Any] | None = None
        self.aliases: dict[str, str] = {}
        if isinstance(config, Mapping):
            self._obj, self._dict = None, config
        else:
            if not callable(getattr(config, "to_dict", None)):
                msg = f"`config` must be a dict or have a to_dict() method, got {type(config).__name__}"
                raise TypeError(msg)
            self._obj, self._dict = config, None
        mt = self.get("model_type")
        if mt is not None and not isinstance(mt, str):
            msg = f"`model_type` of `config` must be a str, got {_checks.show(mt)}"
            raise TypeError(msg)
        self.model_type: str | None = mt or None
        self.aliases = _ATTRIBUTE_MAP.get(self.model_type or "", {}) if self._obj is None else {}

    @property
    def is_object(self) -> bool:
        return self._obj is not None

    def stored(self) -> Mapping[str, Any]:
        """``to_dict()`` of a config object (once)."""
        if self._stored is None:
            d = self._obj.to_dict()
            if not isinstance(d, Mapping):
                msg = f"`config`.to_dict() must return a dict, got {type(d).__name__}"
                raise TypeError(msg)
            self._stored = d
        return self._stored

    def get(self, key: str) -> Any:
        """The value of ``key`` or None."""
        if self._obj is not None:
            try:
                v = getattr(self._obj, key)
            except Exception:  # missing, or an attribute that refuses to be read globally: the stored value
                v = None
            if v is None or callable(v):  # (a method of the same name is not a value)
                v = self.stored().get(key)
            return v
        v = self._dict.get(key)
        alias = self.aliases.get(key)
        if alias is not None:
            va = self._dict.get(alias)
            if v is not None and va is not None and _differ(v, va):
                msg = (
                    f"`config` has both `{key}` = {_checks.show(v)} and `{alias}` = {_checks.show(va)}, which "
                    f"model_type {self.model_type!r} reads as one attribute: keep one"
                )
                raise ValueError(msg)
            v = va if v is None else v
        return v

    def get_int(self, key: str, minimum: int = 1) -> int | None:
        v = self.get(key)
        return None if v is None else _checks.check_int(v, key, minimum=minimum)


def _rope_parameters(cfg: _HFConfig) -> tuple[Mapping[str, Any], str]:
    """The RoPE entry of the configuration and the key it came from."""
    found = {}
    for key in ("rope_parameters", "rope_scaling"):
        v = cfg.get(key)
        if v is not None and not isinstance(v, Mapping):
            msg = f"`{key}` of `config` must be a dict, got {type(v).__name__}"
            raise TypeError(msg)
        if v:
            found[key] = v
    if len(found) == 2 and _differ(dict(found["rope_parameters"]), dict(found["rope_scaling"])):
        msg = (
            "`config` has both `rope_parameters` and `rope_scaling` and they differ (transformers 5 takes "
            "rope_scaling, older versions rope_parameters): keep one"
        )
        raise ValueError(msg)
    for key, v in found.items():
        return v, key
    return {}, "rope_parameters"


def _local_global(cfg: _HFConfig, params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The per-layer-type entries of the older format with a local base
    (Gemma 3 ``rope_local_base_freq``, ModernBERT ``local_rope_theta``)."""
    mt = cfg.model_type
    local = cfg.get("rope_local_base_freq")
    if local is None:
        local = cfg.get("local_rope_theta")
    if local is None and mt not in _LOCAL_GLOBAL:
        return None
    glob_default, local_default = _LOCAL_GLOBAL.get(mt or "", (10000.0, 10000.0))
    full = dict(params)
    theta = cfg.get("rope_theta")
    full.setdefault("rope_theta", theta if theta is not None else cfg.get("global_rope_theta") or glob_default)
    if mt in ("modernbert", "modernbert-decoder"):  # the scaling applies to both
        sliding = {k: v for k, v in params.items() if k != "rope_theta"}
    else:
        sliding = {"rope_type": "default"}
    sliding["rope_theta"] = local if local is not None else local_default
    return {"full_attention": full, "sliding_attention": sliding}


def _rope_entry(cfg: _HFConfig, layer_type: str | None) -> tuple[dict[str, Any], str, bool | None]:
    """The RoPE entry for ``layer_type``, its name for messages and, for a
    per-layer-type entry, the ``truncate`` transformers applies to it."""
    params, where = _rope_parameters(cfg)
    labels = set()
    for key in ("layer_types", "_rope_type_labels"):
        v = cfg.get(key)
        if isinstance(v, Sequence) and not isinstance(v, (str, bytes)):
            labels |= {t for t in v if isinstance(t, str)}
    nested = [k for k, v in params.items() if isinstance(v, Mapping) or (v is None and k in labels)]
    if not nested:
        per_type = _local_global(cfg, params)
        if per_type is not None:
            params, nested = per_type, list(per_type)
    if not nested:
        if layer_type is not None:
            msg = f"`layer_type` applies to configs with per-layer RoPE entries only, got {_checks.show(layer_type)}"
            raise ValueError(msg)
        return dict(params), where, None
    if layer_type is None:
        msg = f"`layer_type` is required: this config has one RoPE entry per layer type {sorted(nested)}"
        raise ValueError(msg)
    if layer_type not in nested:
        msg = f"`layer_type` must be one of {sorted(nested)}, got {_checks.show(layer_type)}"
        raise ValueError(msg)
    for key in params:
        if key not in nested and key != "truncate":
            msg = (
                f"`{key}` next to the per-layer-type entries of {where} is not supported (transformers reads "
                "the entries of the layer types only, and `truncate` for YaRN)"
            )
            raise ValueError(msg)
    entry = params[layer_type]
    if entry is None:
        msg = f"`layer_type` {layer_type!r} has no RoPE (its entry of {where} is None)"
        raise ValueError(msg)
    # transformers' YaRN reads `truncate` from the top level of the RoPE
    # parameters, never from a per-layer-type entry
    truncate = params.get("truncate")
    truncate = True if truncate is None else _checks.check_bool(truncate, "truncate")
    return dict(entry), f"{where}[{layer_type!r}]", truncate


def _rope_type(entry: Mapping[str, Any], where: str) -> str:
    """``rope_type`` or its older alias ``type``; both, differing, are refused."""
    has_new, has_old = "rope_type" in entry, "type" in entry
    new, old = entry.get("rope_type"), entry.get("type")
    if has_new and has_old and _differ(new, old):
        msg = (
            f"`rope_type` = {_checks.show(new)} and `type` = {_checks.show(old)} of {where} disagree (transformers "
            "versions read one or the other): keep one"
        )
        raise ValueError(msg)
    value = new if has_new else old if has_old else "default"
    if not isinstance(value, str):
        name = "rope_type" if has_new else "type"
        msg = f"`{name}` of {where} must be a str, got {_checks.show(value)}"
        raise TypeError(msg)
    return value


def _mrope(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str) -> tuple[Any, bool] | None:
    """``(sections, interleaved)`` of a multimodal RoPE, or None."""
    mt = cfg.model_type or ""
    section = entry.get("mrope_section")
    other = _MROPE_OTHER.get(mt)
    if other is not None and (section is not None or other[1] or rope_type == "mrope"):
        msg = (
            f"`mrope_section` of model_type {mt!r} is not supported: its rows are recombined differently "
            f"({other[0]}) from the Qwen2-VL / Qwen3-VL layouts of posenc.mrope_cos_sin"
        )
        raise ValueError(msg)
    flags: dict[str, bool] = {}  # the flags the config gives, which must agree
    for key, v in (
        ("mrope_interleaved", entry.get("mrope_interleaved")),
        ("interleaved", entry.get("interleaved")),
        ("mrope_interleaved", cfg.get("mrope_interleaved")),
    ):
        if v is not None:
            v = _checks.check_bool(v, key)
            if any(f != v for f in flags.values()):
                msg = f"`{key}` = {v} disagrees with the other multimodal flags of `config`: keep one"
                raise ValueError(msg)
            flags.setdefault(key, v)
    known = _MROPE.get(mt)
    if known is not None:
        for key, v in flags.items():
            if v != known[1]:
                msg = (
                    f"`{key}` = {v} contradicts model_type {mt!r}, whose rotary module "
                    f"{'interleaves' if known[1] else 'keeps contiguous'} the sections (transformers reads no "
                    f"such key): drop it"
                )
                raise ValueError(msg)
        return (known[0] if section is None else section), known[1]
    if section is None:
        if flags:
            key = next(iter(flags))
            msg = f"`{key}` is not supported without `mrope_section` (model_type {mt or None!r})"
            raise ValueError(msg)
        return None
    if not flags:
        msg = (
            f"`mrope_interleaved` must be given for the `mrope_section` of model_type {mt or None!r}, whose "
            "recombination posenc does not know (False: Qwen2-VL's contiguous sections, True: Qwen3-VL's "
            "interleaved ones)"
        )
        raise ValueError(msg)
    return section, next(iter(flags.values()))


def _check_keys(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, where: str, mrope: bool) -> None:
    """Every key of the RoPE entry is understood or known not to change the tables."""
    mt = cfg.model_type or ""
    allowed = set(_COMMON_KEYS) | set(_TYPE_KEYS.get(rope_type, ())) | set(_TABLE_NEUTRAL_KEYS)
    allowed |= set(_MODEL_KEYS.get(mt, {}).get(rope_type, ()))
    if mrope:
        allowed |= set(_MROPE_KEYS)
    for key in entry:
        if key not in allowed:
            msg = (
                f"`{key}` of {where} is not supported for rope_type {rope_type!r}"
                f"{f' of model_type {mt!r}' if mt else ''}: posenc refuses the keys it does not know to leave "
                f"the tables unchanged (it reads {', '.join(sorted(allowed - set(_TABLE_NEUTRAL_KEYS)))})"
            )
            raise ValueError(msg)


def _base(cfg: _HFConfig, entry: Mapping[str, Any]) -> float:
    """``rope_theta``: the entry's, else the top level's (GPT-NeoX
    ``rotary_emb_base``, DBRX ``attn_config``), else the model's default."""
    key, theta = "rope_theta", entry.get("rope_theta")
    if theta is None:
        for k in ("rope_theta", "rotary_emb_base"):
            if cfg.get(k) is not None:
                key, theta = k, cfg.get(k)
                break
    if theta is None:
        attn = cfg.get("attn_config")
        if isinstance(attn, Mapping) and attn.get("rope_theta") is not None:
            theta = attn["rope_theta"]
    if theta is None:
        default = cfg.get("default_theta") if cfg.is_object else _DEFAULT_THETA.get(cfg.model_type or "")
        theta = default if isinstance(default, numbers.Real) else 10000.0
    base = _checks.check_float(theta, key, positive=True)
    if not base > 1.0:
        msg = f"`{key}` must be > 1 (the frequencies are base ** (-2i / dim)), got {base!r}"
        raise ValueError(msg)
    return base


def _layer_config(cfg: _HFConfig, layer_type: str | None) -> Any:
    """Gemma 4: the configuration of the layers of ``layer_type`` (its own
    head size), as transformers indexes ``config.per_layer_config``."""
    if layer_type is None or not cfg.is_object:
        return None
    per_layer = cfg.get("per_layer_config")
    try:
        sub = per_layer[layer_type]
    except Exception:  # not indexed by layer type
        return None
    return sub if callable(getattr(sub, "to_dict", None)) else None


def _layer_sizes(config: Mapping[str, Any], layer_type: str | None) -> Any:
    """The head size of the layers of ``layer_type`` of a config dictionary
    where it differs per layer (Gemma 4: ``per_layer_config``,
    ``global_head_dim``), else None."""
    if layer_type is None:
        return None
    per_layer = config.get("per_layer_config")
    types = config.get("layer_types")
    if isinstance(per_layer, Mapping) and isinstance(types, Sequence):
        sizes = []
        for i, t in enumerate(types):
            if t == layer_type:
                over = per_layer.get(i, per_layer.get(str(i))) or {}
                if isinstance(over, Mapping) and over.get("head_dim") is not None:
                    size = _checks.check_int(over["head_dim"], "head_dim", minimum=1)
                    if size not in sizes:
                        sizes.append(size)
        if len(sizes) > 1:
            msg = f"`config` per_layer_config gives the {layer_type!r} layers different head sizes {sorted(sizes)}"
            raise ValueError(msg)
        return sizes[0] if sizes else None
    if layer_type == "full_attention" and config.get("global_head_dim") is not None:
        return config["global_head_dim"]
    return None


def _head_size(cfg: _HFConfig, layer_type: str | None) -> int:
    """The head size: ``head_dim`` (through the model's aliases; per layer
    type for Gemma 4), else ``hidden_size // num_attention_heads``."""
    sub = _layer_config(cfg, layer_type)
    if sub is not None:
        return _head_size(_HFConfig(sub), None)
    if cfg.is_object:
        keys: tuple[str, ...] = ("head_dim",)
        hidden_keys: tuple[str, ...] = ("hidden_size",)
        head_keys: tuple[str, ...] = ("num_attention_heads",)
        size = None
    else:
        keys, hidden_keys, head_keys = _HEAD_DIMS, _HIDDEN, _HEADS
        size = _layer_sizes(cfg._dict, layer_type)
        if size is not None:
            return _checks.check_int(size, "head_dim", minimum=1)
    for key in keys:
        if cfg.get(key) is not None:
            return cfg.get_int(key)
    hidden = next(((k, cfg.get(k)) for k in hidden_keys if cfg.get(k) is not None), None)
    heads = next(((k, cfg.get(k)) for k in head_keys if cfg.get(k) is not None), None)
    if hidden is None or heads is None:
        msg = (
            "`config` must have head_dim (or qk_rope_head_dim, attention_head_dim, kv_channels), "
            "or both hidden_size (n_embd, d_model) and num_attention_heads (n_head, n_heads)"
        )
        if cfg.get("text_config") is not None:
            msg += "; it has a text_config: pass that"
        raise ValueError(msg)
    return _checks.check_int(hidden[1], hidden[0], minimum=1) // _checks.check_int(heads[1], heads[0], minimum=1)


def _partial(cfg: _HFConfig, entry: Mapping[str, Any]) -> tuple[str, Any]:
    """``partial_rotary_factor``: the entry's, else the top level's (which
    transformers copies into every entry), else GPT-NeoX's ``rotary_pct``."""
    for key, v in (
        ("partial_rotary_factor", entry.get("partial_rotary_factor")),
        ("partial_rotary_factor", cfg.get("partial_rotary_factor")),
        ("rotary_pct", cfg.get("rotary_pct")),
    ):
        if v is not None:
            return key, v
    return "partial_rotary_factor", None


def _has_head_size(cfg: _HFConfig) -> bool:
    keys = ("head_dim",) if cfg.is_object else _HEAD_DIMS
    if any(cfg.get(k) is not None for k in keys):
        return True
    hidden_keys, head_keys = (("hidden_size",), ("num_attention_heads",)) if cfg.is_object else (_HIDDEN, _HEADS)
    return any(cfg.get(k) is not None for k in hidden_keys) and any(cfg.get(k) is not None for k in head_keys)


def _rotary_dim(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, layer_type: str | None) -> int:
    """The rotated width: GPT-J's ``rotary_dim``, else the head size times
    ``partial_rotary_factor`` (the entry's, the top level's, GPT-NeoX's
    ``rotary_pct``, the model's default); the whole head for proportional."""
    mt = cfg.model_type or ""
    rotary_dim = cfg.get_int("rotary_dim")
    reading = _ROTARY_DIM.get(mt, "width" if not mt else None)
    if rotary_dim is not None and reading is None:
        msg = (
            f"`rotary_dim` of model_type {mt!r} is not supported: transformers' modeling code of this model "
            "does not read it (use partial_rotary_factor)"
        )
        raise ValueError(msg)
    if mt in _FIXED_TABLE:  # GPT-J, CodeGen: rotary_dim, else the hidden size; ESM: the head
        if _FIXED_TABLE[mt][1] is None:
            head = _head_size(cfg, layer_type)
            return head
        width = rotary_dim if rotary_dim is not None else cfg.get_int("hidden_size")
        if width is None:
            msg = f"`config` of model_type {mt!r} needs rotary_dim (or hidden_size)"
            raise ValueError(msg)
        head = _head_size(cfg, layer_type)
        if width > head:
            msg = f"`rotary_dim` = {width} must be at most the head size {head}"
            raise ValueError(msg)
        return width
    if rotary_dim is not None and reading == "width" and rope_type != "proportional":
        if _has_head_size(cfg):  # a bare {"rotary_dim": n} is the rotated width itself
            head = _head_size(cfg, layer_type)
            if rotary_dim > head:
                msg = f"`rotary_dim` = {rotary_dim} must be at most the head size {head}"
                raise ValueError(msg)
        return rotary_dim
    head = _head_size(cfg, layer_type)
    if rope_type == "proportional":
        return head
    key, factor = _partial(cfg, entry)
    if factor is None and rotary_dim is not None:  # MiniMax-M2
        key, factor = "rotary_dim", rotary_dim / head
    if factor is None:
        factor = _PARTIAL_DEFAULTS.get(mt, 1.0)
    factor = _checks.check_float(factor, key, positive=True)
    if factor > 1.0:
        msg = f"`{key}` must be in (0, 1] (a rotary width above the head size), got {factor!r}"
        raise ValueError(msg)
    return int(head * factor)


def _original(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, nested: bool) -> int:
    """``original_max_position_embeddings`` as transformers standardizes it:
    the top level first (Phi-3; not for per-layer-type entries), then the
    entry, then ``max_position_embeddings``."""
    for source in ("top", "entry", "max"):
        if source == "top" and not nested:
            key, v = "original_max_position_embeddings", cfg.get("original_max_position_embeddings")
        elif source == "entry":
            key, v = "original_max_position_embeddings", entry.get("original_max_position_embeddings")
        elif source == "max":
            key, v = "max_position_embeddings", cfg.get("max_position_embeddings")
        else:
            continue
        if v is not None:
            return _checks.check_int(v, key, minimum=1)
    msg = f"`config` rope_type {rope_type!r} needs original_max_position_embeddings or max_position_embeddings"
    raise ValueError(msg)


def _need(entry: Mapping[str, Any], key: str, rope_type: str) -> Any:
    v = entry.get(key)
    if v is None:
        msg = f"`config` rope_type {rope_type!r} needs {key!r} in its RoPE parameters"
        raise ValueError(msg)
    return v


def _max_positions(cfg: _HFConfig, rope_type: str) -> int:
    v = cfg.get_int("max_position_embeddings")
    if v is None:
        msg = f"`config` rope_type {rope_type!r} needs max_position_embeddings"
        raise ValueError(msg)
    return v


def _ratio_factor(cfg: _HFConfig, entry: Mapping[str, Any], orig: int, rope_type: str) -> float:
    """``factor``, else transformers' ``max_position_embeddings / original``."""
    f = entry.get("factor")
    if f is not None:
        return _checks.check_float(f, "factor", positive=True)
    max_pos = cfg.get_int("max_position_embeddings")
    if max_pos is None:
        msg = f"`config` rope_type {rope_type!r} needs 'factor' in its RoPE parameters (or max_position_embeddings)"
        raise ValueError(msg)
    return max_pos / orig


def _optional(entry: Mapping[str, Any], key: str) -> Any:
    v = entry.get(key)
    return None if v is None else _checks.check_float(v, key)


class _Read:
    """What a scaling reader gets: the configuration, the RoPE entry, its rope
    type, the rotary width and, for a per-layer-type entry, transformers'
    ``truncate`` (None for a flat entry)."""

    __slots__ = ("cfg", "entry", "rope_type", "dim", "truncate")

    def __init__(self, cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, dim: int, truncate: bool | None):
        self.cfg, self.entry, self.rope_type, self.dim, self.truncate = cfg, entry, rope_type, dim, truncate

    def need(self, key: str) -> Any:
        return _need(self.entry, key, self.rope_type)

    def original(self) -> int:
        return _original(self.cfg, self.entry, self.rope_type, self.truncate is not None)

    def ratio_factor(self, orig: int) -> float:
        return _ratio_factor(self.cfg, self.entry, orig, self.rope_type)


def _read_linear(r: _Read) -> tuple[Scaling, int]:
    return Linear(r.need("factor")), r.dim


def _read_proportional(r: _Read) -> tuple[Scaling, int]:
    key, fraction = _partial(r.cfg, r.entry)
    try:
        return Proportional(1.0 if fraction is None else fraction, _get_or(r.entry, "factor", 1.0)), r.dim
    except (TypeError, ValueError) as exc:  # name the config's key rather than the dataclass's field
        raise type(exc)(str(exc).replace("`fraction`", f"`{key}`")) from None


def _read_dynamic(r: _Read) -> tuple[Scaling, int]:
    alpha = r.entry.get("alpha")
    if alpha is None:
        return DynamicNTK(r.need("factor"), _max_positions(r.cfg, r.rope_type)), r.dim
    # Hunyuan: a fixed NTK-alpha, base * alpha ** (d / (d - 2)) over the head ("factor" unread)
    alpha = _checks.check_float(alpha, "alpha", positive=True)
    if r.entry.get("factor") is not None:
        _checks.check_float(r.entry["factor"], "factor")
    head = r.cfg.get_int("head_dim")
    if head is None:
        msg = "`config` with an NTK `alpha` needs head_dim (transformers' Hunyuan reads config.head_dim)"
        raise ValueError(msg)
    if head != r.dim:
        msg = (
            f"`alpha` rotates the whole head ({head}) in transformers' Hunyuan, but the config asks for a "
            f"rotary width of {r.dim} (partial_rotary_factor): drop one"
        )
        raise ValueError(msg)
    if head == 2:
        msg = "`alpha` needs a head size above 2 (its exponent is d / (d - 2))"
        raise ValueError(msg)
    return NTK(alpha), head


def _read_yarn(r: _Read) -> tuple[Scaling, int]:
    orig = r.original()
    own = r.entry.get("truncate")
    own = None if own is None else _checks.check_bool(own, "truncate")
    # a per-layer-type entry takes transformers' top-level truncate, never its own
    truncate = r.truncate if r.truncate is not None else (True if own is None else own)
    scaling = YaRN(
        r.ratio_factor(orig),
        orig,
        beta_fast=_get_or(r.entry, "beta_fast", 32.0),
        beta_slow=_get_or(r.entry, "beta_slow", 1.0),
        mscale=_optional(r.entry, "mscale"),
        mscale_all_dim=_optional(r.entry, "mscale_all_dim"),
        attention_factor=r.entry.get("attention_factor"),
        truncate=truncate,
    )
    return scaling, r.dim


def _read_llama3(r: _Read) -> tuple[Scaling, int]:
    orig = r.original()
    low, high = r.need("low_freq_factor"), r.need("high_freq_factor")
    return Llama3(r.need("factor"), orig, low_freq_factor=low, high_freq_factor=high), r.dim


def _read_longrope(r: _Read) -> tuple[Scaling, int]:
    orig = r.original()
    short, long = r.need("short_factor"), r.need("long_factor")
    kw: dict[str, Any] = {"attention_factor": r.entry.get("attention_factor")}
    if r.cfg.model_type == "phimoe":  # short_factor at every length, cos and sin times short / long_mscale
        if r.entry.get("attention_factor") is not None:
            msg = "`attention_factor` of model_type 'phimoe' is not supported: transformers' PhiMoE uses the mscales"
            raise ValueError(msg)
        long = short
        kw = {key: r.need(key) for key in ("short_mscale", "long_mscale")}
    scaling = LongRoPE(short, long, orig, factor=r.ratio_factor(orig), **kw)
    if len(scaling.short_factor) != r.dim // 2:
        msg = (
            f"`short_factor` and `long_factor` must have dim // 2 = {r.dim // 2} entries for the "
            f"rotary dimension {r.dim}, got {len(scaling.short_factor)}"
        )
        raise ValueError(msg)
    return scaling, r.dim


#: one reader per rope type: the scaling and the rotary width (changed only
#: by Hunyuan's NTK-alpha, which rotates the whole head)
_READERS = {
    "default": lambda r: (None, r.dim),
    "linear": _read_linear,
    "proportional": _read_proportional,
    "dynamic": _read_dynamic,
    "yarn": _read_yarn,
    "llama3": _read_llama3,
    "longrope": _read_longrope,
    "su": _read_longrope,
}


def _scaling_of(
    cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, dim: int, truncate: bool | None
) -> tuple[Scaling | None, int]:
    """The scaling of ``rope_type`` and the rotary width."""
    if cfg.model_type == "phimoe" and rope_type not in ("default", "longrope", "su"):
        msg = (
            f"`rope_type` {rope_type!r} of model_type 'phimoe' is not supported: transformers' PhiMoE multiplies "
            "cos and sin by short_mscale / long_mscale and recomputes the frequencies without the sequence length"
        )
        raise ValueError(msg)
    return _READERS[rope_type](_Read(cfg, entry, rope_type, dim, truncate))


def _get_or(entry: Mapping[str, Any], key: str, default: float) -> Any:
    v = entry.get(key)
    return default if v is None else v


def _check_fixed_table(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, where: str) -> None:
    """GPT-J, CodeGen, ESM: the rotary module reads no RoPE entry."""
    mt = cfg.model_type or ""
    what, base = _FIXED_TABLE[mt]
    if rope_type != "default" or set(entry) - {"rope_type", "type", "rope_theta"}:
        msg = (
            f"`{where}` of model_type {mt!r} is not supported: transformers' rotary module of this model "
            f"reads none of it ({what})"
        )
        raise ValueError(msg)
    if base is not None:
        for key in ("rope_theta", "rotary_emb_base"):
            theta = entry.get(key) if key == "rope_theta" and entry.get(key) is not None else cfg.get(key)
            if theta is not None and _checks.check_float(theta, key, positive=True) != base:
                msg = f"`{key}` of model_type {mt!r} is not supported: transformers' module uses base {base:g}"
                raise ValueError(msg)


def from_hf(config: Mapping[str, Any] | Any, *, layer_type: str | None = None) -> dict[str, Any]:
    """Keyword arguments ``{"dim", "base", "scaling"}`` from a Hugging Face config.

    Reads the RoPE parameters the way ``transformers`` does, so that
    ``rope_frequencies(**from_hf(cfg))`` and
    ``rope_cos_sin(positions, **from_hf(cfg))`` give the model's tables:

    * a config object is read through its attributes (so the aliases of its
      class's ``attribute_map`` apply: DBRX's ``max_seq_len``, Bailing's
      ``model_max_length``, ...); a config dictionary through the same
      aliases of its ``model_type`` (both spellings, differing, are refused);
    * the ``rope_parameters`` (transformers 5) or ``rope_scaling`` (older)
      entry with its ``rope_type`` (or older ``type``; both, differing, are
      refused).  Every key of the entry is either understood or known not to
      change the tables; any other key is refused by name;
    * the base: ``rope_theta`` (in the entry or at the top level), GPT-NeoX's
      ``rotary_emb_base``, DBRX's ``attn_config``; else the model's default
      (10000 for most); it must be > 1;
    * the head size: ``head_dim`` (a dictionary also: DeepSeek's
      ``qk_rope_head_dim``, ``attention_head_dim``, ``kv_channels``), else
      ``hidden_size`` (``n_embd``, ``d_model``) ``//``
      ``num_attention_heads`` (``n_head``, ``n_heads``);
    * the rotated part: GPT-J / CodeGen ``rotary_dim`` (MiniMax-M2: the
      partial factor ``rotary_dim / head_dim``), else the head size times
      ``partial_rotary_factor`` (or GPT-NeoX's ``rotary_pct``; the model's
      own default where transformers has one), at most the whole head;
    * ``max_position_embeddings`` and ``original_max_position_embeddings``
      (top level first, as for Phi-3) for the scalings;
    * one entry per layer type (Gemma 3, ModernBERT, ...), also from the
      older format with ``rope_local_base_freq`` (or ``local_rope_theta`` /
      ``global_rope_theta``): pass ``layer_type``.  As transformers does, a
      YaRN entry of a layer type takes ``truncate`` from the top level of the
      RoPE parameters (default True), not its own;
    * multimodal RoPE (Qwen2-VL family, HY-V4-VL, GLM-4V, ``mrope_section``):
      the result also has ``"mrope_section"`` (the model's default sections
      when the config has none) and ``"mrope_interleaved"`` (fixed by the
      model's rotary module: ``True`` for the Qwen3-VL family and HY-V4-VL; a
      model type posenc does not know must say ``mrope_interleaved``), for
      :func:`posenc.mrope_cos_sin`; passing it to
      :func:`posenc.rope_cos_sin` fails with a ``TypeError``;
    * Hunyuan's ``{"rope_type": "dynamic", "alpha": a}`` is a fixed
      NTK-alpha: :class:`NTK` ``(a)`` over the whole head; PhiMoE's LongRoPE
      uses ``short_factor`` at every length and multiplies cos and sin by
      ``short_mscale`` / ``long_mscale`` (:class:`LongRoPE`); GPT-J, CodeGen
      and ESM read no RoPE entry (a scaling is refused).

    The layout is not part of the result: most Hugging Face models rotate
    halves (``layout="half"``, the default of posenc); GPT-J and CodeGen, GLM,
    Helium, ERNIE 4.5 (and DeepSeek with ``rope_interleave``, Llama 4's
    complex rotation, ...) pair neighbours: pass ``layout="interleaved"`` for
    them.  The models covered, with the layout each rotates, are listed in
    the documentation (:doc:`/models`).

    Parameters
    ----------
    config : dict or object
        A config dictionary (``config.json`` loaded with :mod:`json`) or an
        object with ``to_dict()`` such as a ``transformers`` config.
    layer_type : str, optional
        For configs with one RoPE entry per layer type (Gemma 3:
        ``"full_attention"``, ``"sliding_attention"``): which one to read.

    Returns
    -------
    dict
        ``{"dim": rotary dimension, "base": theta, "scaling": Scaling or None}``,
        plus ``"mrope_section"`` and ``"mrope_interleaved"`` for multimodal
        RoPE.

    Raises
    ------
    ValueError
        Naming the key that is not supported (a ``rope_type`` such as
        ``"axial"``, a key of the RoPE entry posenc does not know, a
        multimodal recombination other than Qwen2-VL's or Qwen3-VL's),
        missing, contradictory (two spellings of one key that differ) or out
        of range (a rotary width above the head size, ``rope_theta <= 1``,
        a non-positive attention factor).  posenc never returns a table that
        differs from the model's.
    TypeError
        Naming the key whose value has the wrong kind (a length that is not
        an integer, a flag that is not a bool, ...).

    Examples
    --------
    >>> from posenc import scaling
    >>> cfg = {"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000.0,
    ...        "max_position_embeddings": 131072,
    ...        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
    ...                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}
    >>> scaling.from_hf(cfg)
    {'dim': 128, 'base': 500000.0,
     'scaling': Llama3(factor=8.0, original_max_positions=8192, low_freq_factor=1.0, high_freq_factor=4.0)}
    >>> scaling.from_hf({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64})
    {'dim': 64, 'base': 10000.0, 'scaling': None}
    >>> scaling.from_hf({"model_type": "qwen2_vl", "hidden_size": 1536, "num_attention_heads": 12,
    ...                  "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}})
    {'dim': 128, 'base': 10000.0, 'scaling': None, 'mrope_section': (16, 24, 24), 'mrope_interleaved': False}
    >>> scaling.from_hf({"model_type": "hunyuan_v1_dense", "head_dim": 128, "rope_theta": 10000.0,
    ...                  "rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 1.0}})
    {'dim': 128, 'base': 10000.0, 'scaling': NTK(factor=1000.0)}
    >>> scaling.from_hf({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 2.0, "scale": 3}})
    Traceback (most recent call last):
      ...
    ValueError: `scale` of rope_scaling is not supported for rope_type 'linear': ...
    """
    if layer_type is not None and not isinstance(layer_type, str):
        msg = f"`layer_type` must be a str or None, got {_checks.show(layer_type)}"
        raise TypeError(msg)
    cfg = _HFConfig(config)
    entry, where, truncate = _rope_entry(cfg, layer_type)
    rope_type = _rope_type(entry, where)
    mrope = _mrope(cfg, entry, rope_type)
    if rope_type == "mrope" and mrope is not None:  # older Qwen2-VL config.json: plain RoPE plus sections
        rope_type = "default"
    if rope_type not in _HF_TYPES:
        what = {
            "axial": " (2-D vision RoPE: see posenc.axial_rope_cos_sin)",
            "mrope": " without `mrope_section`",
        }.get(rope_type, "")
        msg = (
            f"`rope_type` {rope_type!r}{what} is not supported; posenc reads "
            f"{', '.join(repr(t) for t in _HF_TYPES if t != 'su')} (and the older 'su' for longrope)"
        )
        raise ValueError(msg)
    if cfg.model_type in _FIXED_TABLE:
        _check_fixed_table(cfg, entry, rope_type, where)
        base = _FIXED_TABLE[cfg.model_type][1] or _base(cfg, entry)
    else:
        _check_keys(cfg, entry, rope_type, where, mrope is not None)
        base = _base(cfg, entry)
    cfg.get_int("max_position_embeddings")  # a length, whether a scaling reads it or not
    dim = _rotary_dim(cfg, entry, rope_type, layer_type)
    scaling, dim = _scaling_of(cfg, entry, rope_type, dim, truncate)
    if dim < 2 or dim % 2:
        msg = (
            f"the rotary dimension must be a positive even integer, got {dim} (the head size `head_dim` times "
            "`partial_rotary_factor`, or `rotary_dim`, of the config)"
        )
        raise ValueError(msg)
    out: dict[str, Any] = {"dim": dim, "base": base, "scaling": scaling}
    if mrope is not None:
        from .mrope import check_sections  # the one check of sections, shared with mrope_cos_sin

        out["mrope_section"] = check_sections(mrope[0], dim)
        out["mrope_interleaved"] = mrope[1]
    return out


def check_scaling(scaling: Any) -> Scaling | None:
    """``scaling`` must be ``None`` or one of the scaling dataclasses."""
    if scaling is None or isinstance(scaling, Scaling):
        return scaling
    msg = (
        "`scaling` must be None or a posenc.scaling object (Linear, NTK, DynamicNTK, YaRN, Llama3, "
        f"LongRoPE, Proportional), got {type(scaling).__name__}"
    )
    if isinstance(scaling, numbers.Number):
        msg += "; for a plain factor use posenc.scaling.Linear(factor)"
    raise TypeError(msg)
