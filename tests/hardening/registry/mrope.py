"""Multimodal RoPE: three streams of position ids (time, height, width).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case

from ._draw import (
    even_dim,
    out_dtype,
    real_array,
    rope_kwargs,
    shapes,
)
from ._spec import Draw, register


@register(
    "mrope_cos_sin",
    huge=(
        lambda: (
            (np.broadcast_to(np.zeros((3, 1), np.int64), (3, 2**30)), 2**11),
            {"mrope_section": [2**8, 2**8, 2**9]},
        ),
    ),
)
def _mrope_cos_sin(draw: Draw, be: Backend) -> Case:
    shape = draw(shapes(max_dims=2))
    pid, _ = real_array(draw, be, (3,) + shape, -(2.0**20), 2.0**20, integer=draw(st.booleans()))
    dim = even_dim(draw, hi=32)
    half = dim // 2
    a = draw(st.integers(0, half))
    b = draw(st.integers(0, half - a))
    kw: dict[str, Any] = {"mrope_section": [a, b, half - a - b], "mrope_interleaved": draw(st.booleans())}
    kw.update(rope_kwargs(draw, dim, layout=True))
    dk, dt = out_dtype(draw, be, half=True)
    kw.update(dk)
    return Case(be, (pid, dim), kw, shape=(shape + (dim,),) * 2, dtype=dt, kind="arrays")
