"""Fourier features: NeRF's log-spaced bands and Gaussian random features.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case, creation_kwargs, real_dtypes

from ._draw import (
    bounded_table_check,
    out_dtype,
    real_array,
    shapes,
)
from ._spec import Draw, register


@register("fourier_features", huge=(lambda: ((np.broadcast_to(np.zeros((1, 3)), (2**30, 3)), 2**10), {}),))
def _fourier_features(draw: Draw, be: Backend) -> Case:
    in_dim = draw(st.integers(1, 4))
    lead = draw(shapes(max_dims=2))
    c, _ = real_array(draw, be, lead + (in_dim,), -100.0, 100.0, integer=draw(st.booleans()))
    inc = draw(st.booleans())
    L = draw(st.integers(0 if inc else 1, 12))  # an empty output is refused
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["max_log2_freq"] = draw(st.floats(0.0, 16.0))
    kw["include_input"] = inc
    for k in ("log_sampling", "scale_pi"):
        if draw(st.booleans()):
            kw[k] = draw(st.booleans())
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    return Case(be, (c, L), kw, shape=lead + (in_dim * (int(inc) + 2 * L),), dtype=dt)


@register(
    "gaussian_fourier_features",
    aliases={"coords": ("B",), "B": ("coords",)},
    huge=(lambda: ((np.broadcast_to(np.zeros((1, 2)), (2**30, 2)), np.ones((2**10, 2))), {}),),
    trio="namespace and device of `coords` and `B` (both arrays); `dtype` only",
)
def _gaussian_fourier_features(draw: Draw, be: Backend) -> Case:
    in_dim = draw(st.integers(1, 20))
    lead = draw(shapes(max_dims=2))
    f = draw(st.integers(1, 8))  # B without rows is refused
    dt_in = draw(st.sampled_from(real_dtypes(be)))
    c, _ = real_array(draw, be, lead + (in_dim,), -10.0, 10.0, dtype=dt_in)
    B, _ = real_array(draw, be, (f, in_dim), -30.0, 30.0, dtype=dt_in)
    dk, dt = out_dtype(draw, be)
    if draw(st.booleans()):
        dk["flip_sin_to_cos"] = draw(st.booleans())
    return Case(be, (c, B), dk, shape=lead + (2 * f,), dtype=dt, check=bounded_table_check(be))


@register("gaussian_matrix", huge=(lambda: ((2**30, 2**11), {"scale": 1.0}),))
def _gaussian_matrix(draw: Draw, be: Backend) -> Case:
    f, d = draw(st.integers(1, 16)), draw(st.integers(1, 4))
    kw: dict[str, Any] = {"scale": draw(st.floats(0.0, 100.0))}
    if draw(st.booleans()):
        kw["seed"] = draw(st.integers(0, 2**32))
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    kw.update(creation_kwargs(draw, be))
    return Case(be, (f, d), kw, shape=(f, d), dtype=dt)
