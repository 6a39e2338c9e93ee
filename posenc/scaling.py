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
    :math:`m(s, a) = 0.1\, a \ln s + 1` for :math:`s > 1` and 1 otherwise.
    Hugging Face ``rope_type="yarn"``.

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
    """

    short_factor: Sequence[float]
    long_factor: Sequence[float]
    original_max_positions: int
    factor: float | None = None
    attention_factor: float | None = None

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
        if self.attention_factor is None and (self.factor or 1.0) > 1.0 and self.original_max_positions < 2:
            msg = "`original_max_positions` must be >= 2 for the LongRoPE attention factor (it divides by its log)"
            raise ValueError(msg)

    def attention_scaling(self, seq_len: int | None = None) -> float:
        """The LongRoPE attention factor (independent of ``seq_len``)."""
        _seq_len(seq_len)
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
# Hugging Face configs
# --------------------------------------------------------------------------
_HF_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "longrope", "su", "proportional")

#: keys a released ``config.json`` may spell differently (first found wins)
_HIDDEN = ("hidden_size", "n_embd", "d_model")
_HEADS = ("num_attention_heads", "n_head", "n_heads")
#: head sizes before ``hidden_size // num_attention_heads``: MLA's rotated
#: part (DeepSeek), Zamba2's attention heads, JetMoE's key/value channels
_HEAD_DIMS = ("head_dim", "qk_rope_head_dim", "attention_head_dim", "kv_channels")

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

#: multimodal RoPE of the Qwen2-VL family: model type -> (the sections the
#: modeling code uses when the config has none, interleaved)
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
}
#: multimodal RoPE that recombines the rows another way: refused by name
_MROPE_OTHER = {
    "ernie4_5_vl_moe": "height / width pairs interleaved, then the temporal block",
    "ernie4_5_vl_moe_text": "height / width pairs interleaved, then the temporal block",
    "hunyuan_vl": "sections over the doubled table",
    "hunyuan_vl_text": "sections over the doubled table",
    "neomme": "two rows interleaved pair by pair",
}


#: configs with a ``rotary_dim`` key that transformers does not read
_ROTARY_DIM_UNUSED = ("minimax_m3_vl", "minimax_m3_vl_text")


def _layer_sizes(config: Mapping[str, Any], layer_type: str | None) -> Mapping[str, Any]:
    """``config`` with the head size of the layers of ``layer_type`` where it
    differs per layer (Gemma 4: ``per_layer_config``, ``global_head_dim``)."""
    if layer_type is None:
        return config
    per_layer = config.get("per_layer_config")
    types = config.get("layer_types")
    if isinstance(per_layer, Mapping) and isinstance(types, Sequence):
        sizes = set()
        for i, t in enumerate(types):
            if t == layer_type:
                over = per_layer.get(i, per_layer.get(str(i))) or {}
                if isinstance(over, Mapping) and over.get("head_dim") is not None:
                    sizes.add(over["head_dim"])
        if len(sizes) > 1:
            msg = f"`config` per_layer_config gives the {layer_type!r} layers different head sizes {sorted(sizes)}"
            raise ValueError(msg)
        return {**config, "head_dim": sizes.pop()} if sizes else config
    if layer_type == "full_attention" and config.get("global_head_dim") is not None:
        return {**config, "head_dim": config["global_head_dim"]}
    return config


def _get(d: Mapping[str, Any], key: str, default: Any = None) -> Any:
    v = d.get(key, default)
    return default if v is None else v


def _first(d: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, Any]:
    for k in keys:
        if d.get(k) is not None:
            return k, d[k]
    return keys[0], None


def _as_dict(config: Any) -> Mapping[str, Any]:
    if isinstance(config, Mapping):
        return config
    to_dict = getattr(config, "to_dict", None)
    if not callable(to_dict):
        msg = f"`config` must be a dict or have a to_dict() method, got {type(config).__name__}"
        raise TypeError(msg)
    d = to_dict()
    if not isinstance(d, Mapping):
        msg = f"`config`.to_dict() must return a dict, got {type(d).__name__}"
        raise TypeError(msg)
    d = dict(d)
    # sizes a config class derives in code rather than stores (head_dim of GLM-4.5, ...)
    for key in _HEAD_DIMS + ("model_type",):
        if d.get(key) is None:
            try:
                v = getattr(config, key, None)
            except Exception:  # attributes that refuse to be read globally
                v = None
            if isinstance(v, (int, str)) and not isinstance(v, bool):
                d[key] = v
    return d


def _local_global(config: Mapping[str, Any], params: Mapping[str, Any], model_type: Any) -> dict[str, Any] | None:
    """The per-layer-type entries of the older format with a local base
    (Gemma 3 ``rope_local_base_freq``, ModernBERT ``local_rope_theta``)."""
    local = _get(config, "rope_local_base_freq", config.get("local_rope_theta"))
    if local is None and model_type not in _LOCAL_GLOBAL:
        return None
    glob_default, local_default = _LOCAL_GLOBAL.get(model_type, (10000.0, 10000.0))
    full = dict(params)
    full.setdefault("rope_theta", _get(config, "rope_theta", _get(config, "global_rope_theta", glob_default)))
    if model_type in ("modernbert", "modernbert-decoder"):  # the scaling applies to both
        sliding = {k: v for k, v in params.items() if k != "rope_theta"}
    else:
        sliding = {"rope_type": "default"}
    sliding["rope_theta"] = _get(config, "rope_local_base_freq", _get(config, "local_rope_theta", local_default))
    return {"full_attention": full, "sliding_attention": sliding}


def from_hf(config: Mapping[str, Any] | Any, *, layer_type: str | None = None) -> dict[str, Any]:
    """Keyword arguments ``{"dim", "base", "scaling"}`` from a Hugging Face config.

    Reads the RoPE parameters the way ``transformers`` does, so that
    ``rope_frequencies(**from_hf(cfg))`` and
    ``rope_cos_sin(positions, **from_hf(cfg))`` give the model's tables:

    * the ``rope_parameters`` (transformers 5) or ``rope_scaling`` (older)
      entry with its ``rope_type`` (or older ``type``);
    * the base: ``rope_theta`` (in the entry or at the top level), GPT-NeoX's
      ``rotary_emb_base``, DBRX's ``attn_config``; default 10000;
    * the head size: ``head_dim``, DeepSeek's ``qk_rope_head_dim``,
      ``attention_head_dim``, ``kv_channels``, else ``hidden_size``
      (``n_embd``, ``d_model``) ``//`` ``num_attention_heads`` (``n_head``,
      ``n_heads``);
    * the rotated part: GPT-J / CodeGen ``rotary_dim``, else the head size
      times ``partial_rotary_factor`` (or GPT-NeoX's ``rotary_pct``; the
      model's own default where transformers has one);
    * ``max_position_embeddings`` and ``original_max_position_embeddings``
      (top level first, as for Phi-3) for the scalings;
    * one entry per layer type (Gemma 3, ModernBERT, ...), also from the
      older format with ``rope_local_base_freq`` (or ``local_rope_theta`` /
      ``global_rope_theta``): pass ``layer_type``;
    * multimodal RoPE (Qwen2-VL family, ``mrope_section``): the result also
      has ``"mrope_section"`` and ``"mrope_interleaved"`` (``True`` for the
      Qwen3-VL family), for :func:`posenc.mrope_cos_sin`; passing it to
      :func:`posenc.rope_cos_sin` fails with a ``TypeError``.

    The layout is not part of the result: the Hugging Face models rotate
    halves (``layout="half"``, the default of posenc); GPT-J and CodeGen
    (and DeepSeek with ``rope_interleave``, Llama 4's complex rotation) pair
    neighbours: pass ``layout="interleaved"`` for them.  The models covered
    are listed in the documentation (:doc:`/models`).

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
        Naming what is not supported (a ``rope_type`` such as ``"axial"``,
        a multimodal recombination other than Qwen2-VL's or Qwen3-VL's), a
        missing required entry, or an odd rotary dimension.  posenc never
        returns a table that differs from the model's.

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
    """
    if layer_type is not None and not isinstance(layer_type, str):
        msg = f"`layer_type` must be a str or None, got {_checks.show(layer_type)}"
        raise TypeError(msg)
    config = _as_dict(config)
    model_type = config.get("model_type")
    params = config.get("rope_parameters") or config.get("rope_scaling") or {}
    if not isinstance(params, Mapping):
        msg = f"`config` entry rope_parameters / rope_scaling must be a dict, got {type(params).__name__}"
        raise TypeError(msg)
    nested = [k for k, v in params.items() if isinstance(v, Mapping)]
    if not nested:
        per_type = _local_global(config, params, model_type)
        if per_type is not None:
            params, nested = per_type, list(per_type)
    if nested:
        if layer_type is None:
            msg = f"`layer_type` is required: this config has one RoPE entry per layer type {sorted(nested)}"
            raise ValueError(msg)
        if layer_type not in nested:
            msg = f"`layer_type` must be one of {sorted(nested)}, got {_checks.show(layer_type)}"
            raise ValueError(msg)
        params = params[layer_type]
    elif layer_type is not None:
        msg = f"`layer_type` applies to configs with per-layer RoPE entries only, got {_checks.show(layer_type)}"
        raise ValueError(msg)

    rope_type = params.get("rope_type", params.get("type")) or "default"
    section = params.get("mrope_section")
    if section is None and model_type in _MROPE:
        section = _MROPE[model_type][0]
    if rope_type == "mrope" and section is not None:  # older Qwen2-VL config.json: plain RoPE plus sections
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
    if section is not None and model_type in _MROPE_OTHER:
        msg = (
            f"`mrope_section` of model_type {model_type!r} is not supported: its rows are recombined "
            f"differently ({_MROPE_OTHER[model_type]}) from the Qwen2-VL / Qwen3-VL layouts of posenc.mrope_cos_sin"
        )
        raise ValueError(msg)

    attn = config.get("attn_config")
    attn_theta = attn.get("rope_theta") if isinstance(attn, Mapping) else None
    top_base = _get(config, "rope_theta", _get(config, "rotary_emb_base", _get({"t": attn_theta}, "t", 10000.0)))
    base = _checks.check_float(_get(params, "rope_theta", top_base), "rope_theta", positive=True)

    def head_size() -> int:
        key, head_dim = _first(_layer_sizes(config, layer_type), _HEAD_DIMS)
        if head_dim is not None:
            return _checks.check_int(head_dim, key, minimum=1)
        hkey, hidden = _first(config, _HIDDEN)
        nkey, heads = _first(config, _HEADS)
        if hidden is None or heads is None:
            msg = (
                "`config` must have head_dim (or qk_rope_head_dim, attention_head_dim, kv_channels), "
                "or both hidden_size (n_embd, d_model) and num_attention_heads (n_head, n_heads)"
            )
            raise ValueError(msg)
        return _checks.check_int(hidden, hkey, minimum=1) // _checks.check_int(heads, nkey, minimum=1)

    if config.get("rotary_dim") is not None and model_type in _ROTARY_DIM_UNUSED:
        msg = (
            f"`rotary_dim` of model_type {model_type!r} is not supported: transformers' modeling code "
            "rotates the whole head and leaves this key unused"
        )
        raise ValueError(msg)
    if config.get("rotary_dim") is not None and rope_type != "proportional":  # GPT-J, CodeGen
        dim = _checks.check_int(config["rotary_dim"], "rotary_dim", minimum=1)
        head_dim = None
    else:
        head_dim = head_size()
        factor = _get(
            params,
            "partial_rotary_factor",
            _get(config, "partial_rotary_factor", _get(config, "rotary_pct", _PARTIAL_DEFAULTS.get(model_type, 1.0))),
        )
        factor = _checks.check_float(factor, "partial_rotary_factor", positive=True)
        dim = head_dim if rope_type == "proportional" else int(head_dim * factor)
    if dim < 2 or dim % 2:
        msg = (
            f"the rotary dimension must be a positive even integer, got {dim} (head_dim={head_dim}, "
            "partial_rotary_factor / rotary_dim of the config)"
        )
        raise ValueError(msg)

    max_pos = config.get("max_position_embeddings")

    def need(key: str) -> Any:
        v = params.get(key)
        if v is None:
            msg = f"`config` rope_type {rope_type!r} needs {key!r} in its RoPE parameters"
            raise ValueError(msg)
        return v

    def original() -> int:
        v = config.get("original_max_position_embeddings")  # Phi-3: the top level wins
        if v is None:
            v = params.get("original_max_position_embeddings")
        if v is None:
            v = max_pos
        if v is None:
            msg = "`config` needs original_max_position_embeddings or max_position_embeddings"
            raise ValueError(msg)
        return v

    def ratio_factor(orig: int) -> float | None:
        f = params.get("factor")
        if f is None and max_pos is not None:
            f = max_pos / orig
        return f

    scaling: Scaling | None
    if rope_type == "default":
        scaling = None
    elif rope_type == "linear":
        scaling = Linear(need("factor"))
    elif rope_type == "proportional":
        scaling = Proportional(_get(params, "partial_rotary_factor", 1.0), _get(params, "factor", 1.0))
    elif rope_type == "dynamic":
        if max_pos is None:
            msg = "`config` rope_type 'dynamic' needs max_position_embeddings"
            raise ValueError(msg)
        scaling = DynamicNTK(need("factor"), max_pos)
    elif rope_type == "yarn":
        orig = original()
        f = ratio_factor(orig)
        if f is None:
            need("factor")
        scaling = YaRN(
            f,
            orig,
            beta_fast=params.get("beta_fast") or 32.0,
            beta_slow=params.get("beta_slow") or 1.0,
            mscale=params.get("mscale"),
            mscale_all_dim=params.get("mscale_all_dim"),
            attention_factor=params.get("attention_factor"),
            truncate=True if params.get("truncate") is None else params["truncate"],
        )
    elif rope_type == "llama3":
        scaling = Llama3(
            need("factor"),
            original(),
            low_freq_factor=need("low_freq_factor"),
            high_freq_factor=need("high_freq_factor"),
        )
    else:  # longrope, and its older name "su"
        orig = original()
        scaling = LongRoPE(
            need("short_factor"),
            need("long_factor"),
            orig,
            factor=ratio_factor(orig),
            attention_factor=params.get("attention_factor"),
        )
        if len(scaling.short_factor) != dim // 2:
            msg = (
                f"`short_factor` and `long_factor` must have dim // 2 = {dim // 2} entries for the "
                f"rotary dimension {dim}, got {len(scaling.short_factor)}"
            )
            raise ValueError(msg)
    out: dict[str, Any] = {"dim": dim, "base": base, "scaling": scaling}
    if section is not None:
        from .mrope import check_sections  # the one check of sections, shared with mrope_cos_sin

        out["mrope_section"] = check_sections(section, dim)
        interleaved = params.get("mrope_interleaved", config.get("mrope_interleaved"))
        if interleaved is None and model_type in _MROPE:
            interleaved = _MROPE[model_type][1]
        out["mrope_interleaved"] = bool(interleaved)
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
