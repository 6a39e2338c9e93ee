"""N-D grids: sin/cos grids and coordinates, axial RoPE (resampling: :mod:`.resample`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case, creation_kwargs

from ._draw import (
    base,
    bounded_table_check,
    out_dtype,
    real_array,
    shapes,
)
from ._spec import Draw, register


def _grid(draw: Draw) -> tuple[int, ...]:
    nd = draw(st.integers(1, 3))
    return tuple(draw(st.lists(st.integers(1, 6), min_size=nd, max_size=nd)))


def _grid_dim(draw: Draw, nd: int, order: str | None) -> int:
    if order == "interleaved" and draw(st.booleans()):
        return draw(st.integers(1, 40))
    return 2 * nd * draw(st.integers(1, 6))


@register(
    "sincos_grid",
    aliases={
        "axis_dims": ("dim", "order", "grid_shape"),
        "crop_from": ("grid_shape",),
        "base_size": ("grid_shape",),
        "interpolation_scale": ("grid_shape",),
        "num_prefix_tokens": ("cls_token",),
        "cls_token": ("num_prefix_tokens",),
        "order": ("grid_shape", "dim", "axis_dims"),
    },
    huge=(lambda: (((2**15, 2**15), 2**12), {}),),
)
def _sincos_grid(draw: Draw, be: Backend) -> Case:
    grid = _grid(draw)
    orders = ["mae", "timm", "blocks", "interleaved", None] + (["mae_st"] if len(grid) == 3 else [])
    order = draw(st.sampled_from(orders))
    nd = len(grid)
    dim = 16 * draw(st.integers(1, 3)) if order == "mae_st" else _grid_dim(draw, nd, order)
    kw: dict[str, Any] = {}
    if order is not None:
        kw["order"] = order
    if draw(st.booleans()):
        kw["base"] = base(draw)
    if order not in ("interleaved", "mae_st") and dim % (2 * nd) == 0 and draw(st.booleans()):
        # an uneven split of the same width
        pairs = [dim // (2 * nd)] * nd
        if pairs[0] > 1 and nd > 1:
            pairs[0], pairs[-1] = pairs[0] - 1, pairs[-1] + 1
        kw["axis_dims"] = tuple(2 * p for p in pairs)
    if draw(st.booleans()):
        kw["base_size"] = draw(st.sampled_from([4, 16, 0.5]) | st.just(tuple(range(1, nd + 1))))
    if draw(st.booleans()):
        kw["interpolation_scale"] = draw(st.sampled_from([1.0, 1.875, 0.25]) | st.just((2.0,) * nd))
    if draw(st.booleans()):
        kw["crop_from"] = tuple(n + draw(st.integers(0, 3)) for n in grid)
    prefix = draw(st.sampled_from([0, 0, 1, 3]))
    cls = prefix == 1 and draw(st.booleans())
    flat = draw(st.booleans())
    if cls:
        kw["cls_token"] = True
    elif prefix:
        kw["num_prefix_tokens"] = prefix
    if flat:
        kw["flatten"] = True
    dk, dt = out_dtype(draw, be, half=True)
    kw.update(dk)
    kw.update(creation_kwargs(draw, be))
    n = math.prod(grid)
    shape = (prefix + n, dim) if prefix else (n, dim) if flat else grid + (dim,)
    return Case(be, (grid, dim), kw, shape=shape, dtype=dt, check=bounded_table_check(be))


@register(
    "sincos_coords",
    aliases={"coords": ("dim",)},
    huge=(lambda: ((np.broadcast_to(np.zeros((1, 2)), (2**30, 2)), 2**12), {}),),
)
def _sincos_coords(draw: Draw, be: Backend) -> Case:
    nd = draw(st.integers(1, 3))
    lead = draw(shapes(max_dims=2))
    c, _ = real_array(draw, be, lead + (nd,), -(2.0**20), 2.0**20, integer=draw(st.booleans()))
    order = draw(st.sampled_from(["mae", "timm", "blocks", "interleaved", None]))
    dim = _grid_dim(draw, nd, order)
    kw: dict[str, Any] = {}
    if order is not None:
        kw["order"] = order
    if draw(st.booleans()):
        kw["base"] = base(draw)
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    return Case(be, (c, dim), kw, shape=lead + (dim,), dtype=dt, check=bounded_table_check(be))


@register("axial_rope_cos_sin", huge=(lambda: (((2**15, 2**15), 2**12), {}),))
def _axial_rope_cos_sin(draw: Draw, be: Backend) -> Case:
    grid = _grid(draw)
    dim = 2 * len(grid) * draw(st.integers(1, 6))
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["base"] = base(draw)
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["half", "interleaved"]))
    if draw(st.booleans()):
        kw["reverse_axes"] = draw(st.booleans())
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    kw.update(creation_kwargs(draw, be))
    shape = (math.prod(grid), dim)
    return Case(be, (grid, dim), kw, shape=(shape, shape), dtype=dt, kind="arrays")
