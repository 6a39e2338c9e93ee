"""The sinusoidal family: frequencies, wavelengths, the sinusoidal table,
sine-only and binary codes, and adding the table to embeddings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case, creation_kwargs

from ._draw import (
    arr,
    bounded_table_check,
    freq_kwargs,
    out_dtype,
    positions,
    real_array,
    shapes,
)
from ._spec import Draw, register


@register("frequencies", huge=(lambda: ((2**42,), {}),))
def _frequencies(draw: Draw, be: Backend) -> Case:
    dim = draw(st.integers(1, 70))
    dk, dt = out_dtype(draw, be)
    kw = {**freq_kwargs(draw), **dk, **creation_kwargs(draw, be)}

    # tensor2tensor multiplies by min_timescale (its quirk, reproduced)
    top = max(1.0, kw.get("min_timescale", 1.0))

    def check(r: Any) -> None:
        a = be.to_numpy(r)
        assert (a > 0).all() and (a <= top * (1 + 1e-6)).all(), f"frequencies outside (0, {top}]: {a}"

    return Case(be, (dim,), kw, shape=(dim // 2,), dtype=dt, check=check)


@register("wavelengths", huge=(lambda: ((2**42,), {}),))
def _wavelengths(draw: Draw, be: Backend) -> Case:
    dim = draw(st.integers(1, 70))
    dk, dt = out_dtype(draw, be)
    kw = {**freq_kwargs(draw), **dk, **creation_kwargs(draw, be)}
    return Case(be, (dim,), kw, shape=(dim // 2,), dtype=dt)


@register(
    "sinusoidal",
    huge=(lambda: ((2**30, 2**11), {}), lambda: ((np.broadcast_to(np.zeros(1), (2**38,)), 8), {})),
)
def _sinusoidal(draw: Draw, be: Backend) -> Case:
    pos, pshape, is_int = positions(draw, be)
    dim = draw(st.integers(1, 40))
    dk, dt = out_dtype(draw, be, half=True)
    kw = {**freq_kwargs(draw), **dk}
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["interleaved", "concat"]))
    if is_int:
        kw.update(creation_kwargs(draw, be))
    return Case(be, (pos, dim), kw, shape=pshape + (dim,), dtype=dt, check=bounded_table_check(be))


@register("sines", huge=(lambda: ((2**30, [1.0] * 2048), {}),))
def _sines(draw: Draw, be: Backend) -> Case:
    pos, pshape, is_int = positions(draw, be)
    m = draw(st.integers(0, 6))
    freqs = draw(st.lists(st.floats(-10.0, 10.0), min_size=m, max_size=m))
    f: Any = freqs
    if not is_int and draw(st.booleans()):
        f = arr(be, np.asarray(freqs, dtype=np.float64))
    elif draw(st.booleans()):
        f = tuple(freqs)
    dk, dt = out_dtype(draw, be)
    kw = dict(dk)
    if is_int:
        kw.update(creation_kwargs(draw, be))
    return Case(be, (pos, f), kw, shape=pshape + (m,), dtype=dt, check=bounded_table_check(be))


@register("binary", aliases={"dim": ("positions",), "positions": ("dim",)}, huge=(lambda: ((2**35, 60), {}),))
def _binary(draw: Draw, be: Backend) -> Case:
    dim = draw(st.integers(1, 40))
    dk, dt = out_dtype(draw, be)
    kw = dict(dk)
    if draw(st.booleans()):
        kw["signed"] = draw(st.booleans())
    if draw(st.booleans()):
        n = draw(st.integers(0, min(2**dim, 40)))
        pos, pshape = n, (n,)
        kw.update(creation_kwargs(draw, be))
    else:
        shape = draw(shapes())
        pos, _ = real_array(draw, be, shape, 0, min(2**dim - 1, 2**31 - 1), integer=True)
        pshape = shape
    lo = -1.0 if kw.get("signed") else 0.0

    def check(r: Any) -> None:
        a = be.to_numpy(r)
        assert np.isin(a, [lo, 1.0]).all(), f"binary values outside {{{lo}, 1}}"

    return Case(be, (pos, dim), kw, shape=pshape + (dim,), dtype=dt, check=check)


@register(
    "add_sinusoidal",
    huge=(lambda: ((np.broadcast_to(np.zeros((1, 1), np.float32), (2**30, 2**11)),), {}),),
    trio="adds to `x`: the result has x's namespace, device and dtype",
)
def _add_sinusoidal(draw: Draw, be: Backend) -> Case:
    shape = draw(shapes(min_dims=2, max_dims=4, min_side=1))
    x, _ = real_array(draw, be, shape, -10, 10)
    kw = freq_kwargs(draw)
    if draw(st.booleans()):
        kw["offset"] = draw(st.integers(-(2**20), 2**20))
    if draw(st.booleans()):
        kw["input_scale"] = draw(st.floats(-100, 100))
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["interleaved", "concat"]))
    return Case(be, (x,), kw, shape=shape, dtype=x.dtype)
