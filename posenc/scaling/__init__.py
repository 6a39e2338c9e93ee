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

from ._formulas import NTK, DynamicNTK, Linear, Llama3, LongRoPE, Proportional, Scaling, YaRN
from ._hf import from_hf

__all__ = ["Scaling", "Linear", "NTK", "DynamicNTK", "YaRN", "Llama3", "LongRoPE", "Proportional", "from_hf"]

# the public names live here (pickles, reprs and the API pages name them posenc.scaling.X)
for _obj in (Scaling, Linear, NTK, DynamicNTK, YaRN, Llama3, LongRoPE, Proportional, from_hf):
    _obj.__module__ = __name__
del _obj
