"""Learned absolute tables: their initial values and their resampling.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case, creation_kwargs

from ._draw import (
    out_dtype,
    real_array,
    shapes,
)
from ._spec import Draw, register


@register("learned_table", huge=(lambda: ((2**30, 2**11), {}),))
def _learned_table(draw: Draw, be: Backend) -> Case:
    n = draw(st.integers(0, 30))
    dim = draw(st.integers(1, 16))
    dk, dt = out_dtype(draw, be)
    kw = {**dk, **creation_kwargs(draw, be)}
    if draw(st.booleans()):
        kw["std"] = draw(st.floats(0.0, 10.0))
    if draw(st.booleans()):
        kw["truncate"] = draw(st.floats(0.5, 4.0))
    if draw(st.booleans()):
        kw["seed"] = draw(st.integers(0, 2**32) | st.builds(np.random.default_rng, st.integers(0, 100)))
    return Case(be, (n, dim), kw, shape=(n, dim), dtype=dt)


@register(
    "resample_table",
    huge=(lambda: ((np.zeros((4, 2**11), np.float32), 2**30), {}),),
    trio="interpolates `table`: the result has its namespace, device and dtype",
)
def _resample_table(draw: Draw, be: Backend) -> Case:
    shape = draw(shapes(min_dims=2, max_dims=3, min_side=1))
    x, _ = real_array(draw, be, shape, -10, 10)
    n = draw(st.integers(1, 12))
    kw = {}
    if draw(st.booleans()):
        kw["align_corners"] = draw(st.booleans())
    return Case(be, (x, n), kw, shape=shape[:-2] + (n, shape[-1]), dtype=x.dtype)
