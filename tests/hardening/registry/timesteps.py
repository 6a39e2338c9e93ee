"""Diffusion timestep embeddings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case

from ._draw import bounded_table_check, out_dtype, real_array, shapes
from ._spec import Draw, register


@register(
    "timestep_embedding",
    aliases={"t": ("dim",), "downscale_freq_shift": ("dim", "max_period")},
    huge=(lambda: ((np.broadcast_to(np.zeros(1, np.float32), (2**30,)), 2**12), {}),),
)
def _timestep_embedding(draw: Draw, be: Backend) -> Case:
    shape = draw(shapes(max_dims=2))
    t, _ = real_array(draw, be, shape, 0.0, 1000.0, integer=draw(st.booleans()))
    dim = draw(st.integers(1, 48))
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["flip_sin_to_cos"] = draw(st.booleans())
    if draw(st.booleans()):
        half = dim // 2
        kw["downscale_freq_shift"] = draw(st.sampled_from([0.0, 1.0, 0.5, -2.0])) if half > 1 else 1.0
    if draw(st.booleans()):
        kw["scale"] = draw(st.sampled_from([1.0, 1000.0, 0.0, -3.0]))
    if draw(st.booleans()):
        kw["max_period"] = draw(st.sampled_from([10000.0, 1000.0, 1.0, 0.5]))
    dk, dt = out_dtype(draw, be, half=True)
    kw.update(dk)
    return Case(be, (t, dim), kw, shape=shape + (dim,), dtype=dt, check=bounded_table_check(be))
