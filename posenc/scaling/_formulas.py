"""The RoPE scalings: the formulas of :mod:`posenc.scaling` (see there)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from posenc import _checks, _exact
from posenc._trace import _plain, compiling, host_constant

__all__ = [
    "Scaling",
    "Linear",
    "NTK",
    "DynamicNTK",
    "YaRN",
    "Llama3",
    "LongRoPE",
    "Proportional",
    "check_scaling",
    "check_seq_len",
    "default_inv_freq",
    "exact_inv_freq",
    "length_dependent",
]


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def default_inv_freq(dim: int, base: float) -> np.ndarray:
    """The unscaled ``dim // 2`` inverse frequencies ``base ** (-2i / dim)``,
    correctly rounded to float64."""
    return _exact.evaluate(_rope_freqs, dim, base)[0]


def _rope_freqs(n: Any, dim: int, base: float, a: Fraction = Fraction(1)) -> Any:
    """``a * base ** (-2i / dim)`` for ``i < dim // 2`` as numbers of class ``n``
    (:class:`posenc._exact.DD` or :class:`~posenc._exact.Dec`)."""
    return n.geometric(2 * _exact.ln(base, n.BITS) / dim, dim // 2, a)


def _ntk_freqs(n: Any, dim: int, base: float, log_grow: Fraction, a: Fraction = Fraction(1)) -> Any:
    """The frequencies of the base ``base * exp(log_grow) ** (dim / (dim - 2))``."""
    log_base = _exact.ln(base, n.BITS) + log_grow * Fraction(dim, dim - 2)
    return n.geometric(2 * log_base / dim, dim // 2, a)


def _defining(cls: type, name: str) -> type | None:
    return next((k for k in cls.__mro__ if name in vars(k)), None)


def exact_inv_freq(scaling: Scaling | None, dim: int, base: float, seq_len: int | None) -> tuple[np.ndarray, Any]:
    """The inverse frequencies of ``scaling`` as ``(hi, lo)``: ``hi`` the
    correctly rounded float64 values and ``hi + lo`` the mathematical ones to
    about 106 bits (:mod:`posenc._exact`); ``lo`` is ``None`` for a
    scaling posenc does not define (its float64 values are the frequencies)."""
    if scaling is None:
        return _exact.evaluate(_rope_freqs, dim, base)
    owner = _defining(type(scaling), "_formula")
    if owner is not None and owner is _defining(type(scaling), "inv_freq"):
        return _exact.evaluate(scaling._formula, dim, base, seq_len)  # type: ignore[attr-defined]
    return np.asarray(scaling.inv_freq(dim, base, seq_len), dtype=np.float64), None


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


def check_seq_len(seq_len: Any) -> int | None:
    """``seq_len``: None or a positive int."""
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
    """Base class of the RoPE scalings.

    A scaling changes the inverse frequencies of RoPE (:meth:`inv_freq`)
    and may multiply ``cos`` and ``sin`` by a factor
    (:meth:`attention_scaling`).  posenc accepts any subclass as
    ``scaling=``: for a scaling it does not have, write a frozen dataclass
    (its fields key posenc's caches) that implements :meth:`inv_freq`.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> import numpy as np, posenc
    >>> @dataclass(frozen=True)
    ... class Stretch(posenc.scaling.Scaling):
    ...     factor: float = 2.0
    ...
    ...     def inv_freq(self, dim, base, seq_len):
    ...         return base ** (-np.arange(0, dim, 2) / dim) / self.factor
    >>> posenc.rope_frequencies(4, scaling=Stretch())
    array([0.5  , 0.005])
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # posenc's scalings check their fields on the host when torch's
        # compiler traces their construction (see _checked_on_the_host)
        super().__init_subclass__(**kwargs)
        post = cls.__dict__.get("__post_init__")
        if post is not None and cls.__module__.startswith("posenc."):
            cls.__post_init__ = _checked_on_the_host(post)  # type: ignore[attr-defined]

    def attention_scaling(self, seq_len: int | None = None) -> float:
        """The factor that multiplies ``cos`` and ``sin`` (1.0 unless stated).

        Parameters
        ----------
        seq_len : int, optional
            The current sequence length (for the length-dependent scalings).
        """
        check_seq_len(seq_len)
        return 1.0

    def inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        """The ``dim // 2`` inverse frequencies of a RoPE of rotary dimension
        ``dim`` and base ``base`` under this scaling, as float64 values (a
        NumPy array; evaluated on the host, once per argument set).

        Parameters
        ----------
        dim : int
            The rotary dimension (positive, even).
        base : float
            RoPE's base (``rope_theta``).
        seq_len : int or None
            The current sequence length, for scalings that depend on it
            (``None``: the model's original length).
        """
        msg = f"{type(self).__name__} must implement inv_freq(dim, base, seq_len)"
        raise NotImplementedError(msg)


def _checked_on_the_host(post: Any) -> Any:
    """A scaling's ``__post_init__`` (its checks and normalised fields) that
    runs on the host while torch's compiler traces the construction (a
    scaling built inside a compiled forward): under ``dynamic=True`` its
    floats reach the checks as traced values (a default such as YaRN's
    ``beta_fast = 32.0`` too), which ``math.isfinite`` and ``math.log``
    cannot take.  The fields go to :func:`_checked_fields` as plain
    constants; the checked values come back."""

    def __post_init__(self: Any) -> None:
        if not compiling() or _ON_THE_HOST:
            post(self)
            return
        names = type(self).__match_args__
        values = _checked_fields(type(self), *[_constant(getattr(self, n)) for n in names])
        for name, value in zip(names, values):
            _set(self, name, value)

    __post_init__.__doc__ = post.__doc__
    return __post_init__


def _constant(value: Any) -> Any:
    """A field as a constant of torch's tracer (sequences of numbers too)."""
    if isinstance(value, (tuple, list)):
        return tuple(_constant(v) for v in value)
    return _plain(value)


@host_constant
def _checked_fields(cls: type, *values: Any) -> tuple[Any, ...]:
    """The fields of ``cls(*values)``, built on the host (its checks run
    there; an error is raised at trace time with its own message)."""
    _ON_THE_HOST.append(cls)  # (the tracer runs this eagerly, but still says it compiles)
    try:
        obj = cls(*values)
    finally:
        _ON_THE_HOST.pop()
    return tuple(getattr(obj, n) for n in cls.__match_args__)  # type: ignore[attr-defined]


#: the scalings :func:`_checked_fields` is building (their checks run as written)
_ON_THE_HOST: list[type] = []


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

    def inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        return _exact.evaluate(self._formula, dim, base, seq_len)[0]

    def _formula(self, n: Any, dim: int, base: float, seq_len: int | None) -> Any:
        return _rope_freqs(n, dim, base, 1 / Fraction(self.factor))


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

    def inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        return _exact.evaluate(self._formula, dim, base, seq_len)[0]

    def _formula(self, n: Any, dim: int, base: float, seq_len: int | None) -> Any:
        if dim == 2:
            return n.array(np.ones(1))
        return _ntk_freqs(n, dim, base, _exact.ln(self.factor, n.BITS))


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

    def inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        return _exact.evaluate(self._formula, dim, base, seq_len)[0]

    def _formula(self, n: Any, dim: int, base: float, seq_len: int | None) -> Any:
        if dim == 2:
            return n.array(np.ones(1))
        length = self.original_max_positions if seq_len is None else max(seq_len, self.original_max_positions)
        s = Fraction(self.factor)
        grow = s * length / self.original_max_positions - (s - 1)  # exact, >= 1
        return _ntk_freqs(n, dim, base, _exact.ln(grow, n.BITS))


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
        check_seq_len(seq_len)
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

    def inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        return _exact.evaluate(self._formula, dim, base, seq_len)[0]

    def _formula(self, n: Any, dim: int, base: float, seq_len: int | None) -> Any:
        if base == 1.0:
            msg = "`base` must differ from 1 for YaRN (the ramp bounds divide by log(base))"
            raise ValueError(msg)
        bits = n.BITS
        log_base = _exact.ln(base, bits)
        log_two_pi = _exact.ln(2 * _exact.pi(bits), bits)

        def correction_dim(rotations: float) -> Fraction:
            # dim * ln(L0 / (2 pi beta)) / (2 ln b), exactly in the arguments
            log_ratio = _exact.ln(Fraction(self.original_max_positions) / Fraction(rotations), bits) - log_two_pi
            return dim * log_ratio / (2 * log_base)

        low, high = correction_dim(self.beta_fast), correction_dim(self.beta_slow)
        if self.truncate:
            low, high = Fraction(math.floor(low)), Fraction(math.ceil(high))
        low, high = max(low, Fraction(0)), min(high, Fraction(dim - 1))
        if low == high:
            high += Fraction(0.001)  # Hugging Face's guard against a zero-width ramp
        # (1 - ramp) w + ramp w / s = w (1 - ramp (1 - 1/s)), ramp clipped to [0, 1]
        ramp = (n.arange(dim // 2) - low) / (high - low)
        ramp = n.where(ramp < 0, n.const(0), n.where(ramp > 1, n.const(1), ramp))
        blend = 1 - ramp * (1 - 1 / Fraction(self.factor))
        return _rope_freqs(n, dim, base) * blend


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
        Bounds of the blend, ``0 < low <= high``; equal (Llama 4 Scout's
        ``1.0, 1.0``): no blend, a step at :math:`L_0 / \mathrm{low}`, as
        transformers computes it.

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
        if not self.high_freq_factor >= self.low_freq_factor:
            msg = (
                "`high_freq_factor` must be at least `low_freq_factor`, got "
                f"{self.high_freq_factor!r} < {self.low_freq_factor!r}"
            )
            raise ValueError(msg)

    def inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        return _exact.evaluate(self._formula, dim, base, seq_len)[0]

    def _formula(self, n: Any, dim: int, base: float, seq_len: int | None) -> Any:
        inv = _rope_freqs(n, dim, base)
        lo, hi = Fraction(self.low_freq_factor), Fraction(self.high_freq_factor)
        inv_s = 1 / Fraction(self.factor)
        # L0 / wavelength = L0 w / (2 pi): the wavelength above L0 / low is
        # x < low, below L0 / high is x > high
        x = inv * self.original_max_positions / n.two_pi()
        long, short = x < lo, x > hi
        scaled = n.where(long, inv * inv_s, inv)
        if hi == lo:  # no band between: a step (transformers' blend divides 0 by 0 at the step only)
            return scaled
        smooth = (x - lo) / (hi - lo)
        smoothed = scaled * ((1 - smooth) * inv_s + smooth)
        return n.where(~short & ~long, smoothed, scaled)


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
        seq_len = check_seq_len(seq_len)
        if self.short_mscale is not None:
            long = seq_len is not None and seq_len > self.original_max_positions
            # both given (checked when made): the float of the length's side
            return float(self.long_mscale if long else self.short_mscale)  # type: ignore[arg-type]
        if self.attention_factor is not None:
            return self.attention_factor
        s = 1.0 if self.factor is None else self.factor
        if s <= 1.0:
            return 1.0
        return math.sqrt(1.0 + math.log(s) / math.log(self.original_max_positions))

    def inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        return _exact.evaluate(self._formula, dim, base, seq_len)[0]

    def _formula(self, n: Any, dim: int, base: float, seq_len: int | None) -> Any:
        if len(self.short_factor) != dim // 2:
            msg = (
                f"`short_factor` and `long_factor` of LongRoPE must have `dim` // 2 = {dim // 2} entries "
                f"for `dim` = {dim}, got {len(self.short_factor)}"
            )
            raise ValueError(msg)
        long = seq_len is not None and seq_len > self.original_max_positions
        ext = np.asarray(self.long_factor if long else self.short_factor, dtype=np.float64)
        return _rope_freqs(n, dim, base) / n.array(ext)


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

    def inv_freq(self, dim: int, base: float, seq_len: int | None) -> np.ndarray:
        return _exact.evaluate(self._formula, dim, base, seq_len)[0]

    def _formula(self, n: Any, dim: int, base: float, seq_len: int | None) -> Any:
        rotated = int(self.fraction * dim // 2)  # Hugging Face's int(fraction * head_dim // 2)
        w = _rope_freqs(n, dim, base, 1 / Fraction(self.factor))
        return n.where(np.arange(dim // 2) < rotated, w, n.const(0))


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


def length_dependent(scaling: Any) -> bool:
    """Whether the tables of ``scaling`` depend on the sequence length
    (:class:`DynamicNTK`, :class:`LongRoPE`)."""
    return isinstance(scaling, (DynamicNTK, LongRoPE))
