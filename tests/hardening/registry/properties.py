"""The properties of the sinusoidal table: shift matrices, similarity and
similarity by offset.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case, creation_kwargs, real_dtypes

from ._draw import (
    bounded_table_check,
    freq_kwargs,
    out_dtype,
    positions,
    real_array,
    shapes,
)
from ._spec import Draw, register


@register(
    "shift_matrix",
    huge=(lambda: ((3, 2**21), {}), lambda: ((np.broadcast_to(np.zeros(1), (2**30,)), 2**6), {})),
)
def _shift_matrix(draw: Draw, be: Backend) -> Case:
    dim = draw(st.integers(1, 16))
    kw = freq_kwargs(draw)
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["interleaved", "concat"]))
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    if draw(st.booleans()):
        off: Any = draw(st.integers(-(2**20), 2**20) | st.floats(-1e6, 1e6))
        lead: tuple = ()
        kw.update(creation_kwargs(draw, be))
    else:
        lead = draw(shapes(max_dims=2))
        off, _ = real_array(draw, be, lead, -(2**20), 2**20, integer=draw(st.booleans()))
    return Case(be, (off, dim), kw, shape=lead + (dim, dim), dtype=dt)


@register(
    "similarity",
    huge=(lambda: ((np.broadcast_to(np.zeros((1, 4), np.float32), (2**21, 4)),), {}),),
    trio="dot products of `a` and `b`: their namespace, device and dtype",
)
def _similarity(draw: Draw, be: Backend) -> Case:
    n, m, d = draw(st.integers(0, 6)), draw(st.integers(0, 6)), draw(st.integers(0, 8))
    lead = draw(shapes(max_dims=1, min_side=1))
    dt = draw(st.sampled_from(real_dtypes(be)))
    a, _ = real_array(draw, be, lead + (n, d), -4, 4, dtype=dt)
    if draw(st.booleans()):
        return Case(be, (a,), {}, shape=lead + (n, n), dtype=a.dtype)
    b, _ = real_array(draw, be, lead + (m, d), -4, 4, dtype=dt)
    return Case(be, (a, b), {}, shape=lead + (n, m), dtype=a.dtype)


@register("similarity_by_offset", huge=(lambda: ((2**41, 8), {}),))
def _similarity_by_offset(draw: Draw, be: Backend) -> Case:
    off, shape, is_int = positions(draw, be)
    dim = draw(st.integers(1, 40))
    kw = freq_kwargs(draw)
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    if draw(st.booleans()):
        kw["normalize"] = draw(st.booleans())
    if is_int:
        kw.update(creation_kwargs(draw, be))
    bound = 1.0 if kw.get("normalize") else max(dim // 2, 1)
    return Case(be, (off, dim), kw, shape=shape, dtype=dt, check=bounded_table_check(be, bound))
