"""posenc: positional encodings written once against the Python Array API standard.

Every function runs unchanged on NumPy, CuPy, PyTorch, JAX, Dask and
array-api-strict arrays; the output lives on the input's device.
"""

from __future__ import annotations

from . import scaling
from .alibi import alibi_bias, alibi_slopes, cumulative_gate_bias
from .audit import audit_rope
from .axes import grid_ids, rope_axes, rope_axes_cos_sin
from .bias import (
    kerple_bias,
    relative_positions,
    relative_sinusoidal,
    t5_bucket,
    t5_buckets,
)
from .caches import cache_limits, clear_caches
from .fourier import fourier_features, gaussian_fourier_features, gaussian_matrix
from .fused import rope_cache
from .grid import axial_rope_cos_sin, sincos_coords, sincos_grid
from .learned import learned_table, resample_table
from .mrope import mrope_cos_sin
from .properties import shift_matrix, similarity, similarity_by_offset
from .resample import grid_interpolation_taps, resample_grid
from .rotary import apply_rope, rope, rope_cos_sin, rope_frequencies, rope_permutation, xpos_scale
from .sinusoidal import add_sinusoidal, binary, frequencies, sines, sinusoidal, wavelengths
from .timesteps import timestep_embedding
from .windows import (
    decomposed_relative_positions,
    relative_log_coords,
    relative_position_index,
    resample_relative_table,
)

__version__ = "0.1.0.dev0"

__all__ = [
    # sinusoidal family
    "add_sinusoidal",
    "binary",
    "frequencies",
    "learned_table",
    "resample_table",
    "shift_matrix",
    "similarity",
    "similarity_by_offset",
    "sines",
    "sinusoidal",
    "timestep_embedding",
    "wavelengths",
    # vision and coordinates
    "axial_rope_cos_sin",
    "fourier_features",
    "gaussian_fourier_features",
    "gaussian_matrix",
    "grid_interpolation_taps",
    "grid_ids",
    "resample_grid",
    "sincos_coords",
    "sincos_grid",
    # relative positions and attention biases
    "alibi_bias",
    "alibi_slopes",
    "cumulative_gate_bias",
    "kerple_bias",
    "relative_positions",
    "relative_sinusoidal",
    "t5_bucket",
    "t5_buckets",
    # 2-D relative positions of windowed vision attention
    "decomposed_relative_positions",
    "relative_log_coords",
    "relative_position_index",
    "resample_relative_table",
    # rotary embeddings
    "apply_rope",
    "audit_rope",
    "mrope_cos_sin",
    "rope",
    "rope_axes",
    "rope_axes_cos_sin",
    "rope_cos_sin",
    "rope_frequencies",
    "rope_cache",
    "rope_permutation",
    "scaling",
    "xpos_scale",
    # caches
    "cache_limits",
    "clear_caches",
]
