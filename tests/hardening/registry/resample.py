"""Resampling a ViT's learned table to a new grid (by size or scale factor),
and the gather taps of packed batches of grids.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case, creation_kwargs

from ._draw import out_dtype, real_array, shapes
from ._spec import Draw, register


@register(
    "resample_grid",
    aliases={
        "num_prefix_tokens": ("table", "old_grid_shape"),
        "old_grid_shape": ("table", "num_prefix_tokens", "new_grid_shape"),
        "table": ("old_grid_shape", "num_prefix_tokens"),
        "new_grid_shape": ("scale_factor",),
        "scale_factor": ("new_grid_shape",),
    },
    huge=(lambda: ((np.zeros((4, 8), np.float32), 2**19), {}),),
    trio="interpolates `table`: the result has its namespace, device and dtype",
)
def _resample_grid(draw: Draw, be: Backend) -> Case:
    h, w = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    prefix = draw(st.integers(0, 2))
    dim = draw(st.integers(1, 4))
    lead = draw(shapes(max_dims=1, min_side=1, max_side=2))
    t, _ = real_array(draw, be, lead + (prefix + h * w, dim), -3.0, 3.0)
    kw: dict[str, Any] = {}
    if prefix or draw(st.booleans()):
        kw["num_prefix_tokens"] = prefix
    if h != w or draw(st.booleans()):
        kw["old_grid_shape"] = (h, w)
    new = draw(st.integers(1, 6) | st.tuples(st.integers(1, 6), st.integers(1, 6)))
    nh, nw = (new, new) if isinstance(new, int) else new
    method = draw(st.sampled_from(["bilinear", "bicubic"]))
    kw["method"] = method
    ac = draw(st.booleans())
    if ac:
        kw["align_corners"] = True
    elif draw(st.booleans()):
        kw["antialias"] = draw(st.booleans())
    if draw(st.booleans()):
        # a factor whose floor(old * s) is the new size (DINOv2 adds 0.1)
        frac = draw(st.sampled_from([0.1, 0.5, 0.9]))
        kw["scale_factor"] = ((nh + frac) / h, (nw + frac) / w)
    return Case(be, (t, new), kw, shape=lead + (prefix + nh * nw, dim), dtype=t.dtype)


def _taps_check(be: Backend, dtype: Any) -> Any:
    def check(result: Any) -> None:
        idx, w = result
        assert w.dtype == dtype, f"weights dtype {w.dtype} != {dtype}"
        if be.has_values:
            i = np.asarray(be.to_numpy(idx))
            assert i.dtype.kind == "i", f"indices dtype {i.dtype}"

    return check


@register("grid_interpolation_taps", huge=(lambda: ((4, [(2**20, 2**10, 2**10)]), {}),))
def _grid_interpolation_taps(draw: Draw, be: Backend) -> Case:
    old = draw(st.integers(1, 6) | st.tuples(st.integers(1, 6), st.integers(1, 6)))
    merge = draw(st.sampled_from([1, 1, 2]))
    grids = draw(
        st.lists(
            st.tuples(st.integers(1, 4), st.integers(1, 4))
            | st.tuples(st.integers(1, 2), st.integers(1, 4), st.integers(1, 4)),
            min_size=1,
            max_size=3,
        )
    )
    grids = [g[:-2] + (g[-2] * merge, g[-1] * merge) for g in grids]
    one = len(grids) == 1 and draw(st.booleans())
    new_shape = grids[0] if one else grids
    kw: dict[str, Any] = {}
    method = draw(st.sampled_from(["bilinear", "bicubic"]))
    kw["method"] = method
    ac = draw(st.booleans())
    if ac:
        kw["align_corners"] = True
    elif draw(st.booleans()):
        kw["antialias"] = True
    if merge > 1 or draw(st.booleans()):
        kw["merge"] = merge
    dk, dt = out_dtype(draw, be, half=True)
    kw.update(dk)
    kw.update(creation_kwargs(draw, be))
    tokens = sum(math.prod(g) for g in grids)
    if kw.get("antialias"):
        shape = None  # the tap count depends on the filters' widths
    else:
        taps = 4 if method == "bilinear" else 16
        shape = ((tokens, taps), (tokens, taps))
    return Case(be, (old, new_shape), kw, shape=shape, kind="arrays", check=_taps_check(be, dt))
