"""Multi-axis RoPE: tables from position ids, the rotation, grid ids.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case, creation_kwargs, real_dtypes

from ._draw import base, bounded_table_check, even_dim, out_dtype, real_array, shapes
from ._spec import Draw, register


def _axes_options(draw: Draw, n: int) -> tuple[list[int], dict[str, Any]]:
    """``axes_dim`` and the options of the axes path, each drawn or left out."""
    from posenc import scaling as sc

    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        dims = [even_dim(draw, hi=8)] * n
        kw["split"] = "strided"
    else:
        dims = [even_dim(draw, hi=12) for _ in range(n)]
        if draw(st.booleans()):
            kw["base"] = [base(draw) for _ in range(n)] if draw(st.booleans()) else base(draw)
        if draw(st.booleans()):
            pool = st.sampled_from([None, sc.NTK(2.0), sc.Linear(4.0), sc.YaRN(8.0, 64)])
            kw["scaling"] = [draw(pool) for _ in range(n)]
    if draw(st.booleans()):
        kw["turns"] = draw(st.booleans())
    return dims, kw


def _ids(draw: Draw, be: Backend, lead: tuple, n: int) -> Any:
    ids, _ = real_array(draw, be, lead + (n,), -(2.0**20), 2.0**20, integer=draw(st.booleans()))
    return ids


@register(
    "rope_axes_cos_sin",
    aliases={"ids": ("axes_dim", "freqs"), "axes_dim": ("ids", "freqs"), "freqs": ("ids", "axes_dim")},
    huge=(
        lambda: ((np.broadcast_to(np.zeros((1, 2), np.int64), (2**30, 2)), [2**11, 2**11]), {}),
        lambda: ((np.zeros((2**15, 1)),), {"freqs": np.broadcast_to(np.ones((1, 1, 1)), (2**15, 2**11, 1))}),
    ),
)
def _rope_axes_cos_sin(draw: Draw, be: Backend) -> Case:
    n = draw(st.integers(1, 3))
    lead = draw(shapes(max_dims=2))
    ids = _ids(draw, be, lead, n)
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["half", "interleaved"]))
    dk, dt = out_dtype(draw, be, half=True)
    kw.update(dk)
    if draw(st.integers(0, 3)) == 0:  # a frequency matrix, perhaps per head
        heads = draw(shapes(max_dims=1, min_side=1, max_side=3))
        m = draw(st.integers(1, 4))
        f, _ = real_array(draw, be, heads + (m, n), -4.0, 4.0, dtype=draw(st.sampled_from(real_dtypes(be))))
        kw["freqs"] = f
        if draw(st.booleans()):
            kw["turns"] = draw(st.booleans())
        shape = heads + lead + (2 * m,)
        return Case(be, (ids,), kw, shape=(shape, shape), dtype=dt, kind="arrays")
    dims, opts = _axes_options(draw, n)
    kw.update(opts)
    shape = lead + (sum(dims),)
    return Case(be, (ids, dims), kw, shape=(shape, shape), dtype=dt, kind="arrays")


@register(
    "rope_axes",
    data=("x",),
    aliases={
        "x": ("ids", "axes_dim", "freqs"),
        "ids": ("x", "axes_dim", "freqs"),
        "axes_dim": ("x", "ids", "freqs"),
        "freqs": ("x", "ids", "axes_dim"),
        "heads_axis": ("x", "ids"),
    },
    huge=(
        lambda: (
            (np.broadcast_to(np.zeros((1, 2**11), np.float32), (2**30, 2**11)), np.zeros((2**30, 1), np.int8)),
            {"axes_dim": [2**11]},
        ),
    ),
    trio="rotates `x`: the result has x's namespace, device and dtype",
)
def _rope_axes(draw: Draw, be: Backend) -> Case:
    n = draw(st.integers(1, 3))
    seq = draw(st.integers(0, 5))
    dims, kw = _axes_options(draw, n)
    head = sum(dims) + 2 * draw(st.integers(0, 2))
    lead = draw(shapes(max_dims=2, min_side=1, max_side=3))
    dt = draw(st.sampled_from(real_dtypes(be)))
    x, _ = real_array(draw, be, lead + (seq, head), -4.0, 4.0, dtype=dt)
    ids = _ids(draw, be, (seq,), n)
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["half", "interleaved"]))
    return Case(be, (x, ids, dims), kw, shape=lead + (seq, head), dtype=x.dtype)


@register("grid_ids", huge=(lambda: (((2**20, 2**20, 2),), {}),))
def _grid_ids(draw: Draw, be: Backend) -> Case:
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=nd, max_size=nd)))
    kw: dict[str, Any] = {}
    integer = True
    if draw(st.booleans()):
        kw["offset"] = draw(st.integers(-5, 5) | st.floats(-5.0, 5.0))
        integer = integer and isinstance(kw["offset"], int)
    if draw(st.booleans()):
        kw["scale"] = draw(st.integers(1, 3) | st.floats(0.1, 4.0))
        integer = integer and isinstance(kw["scale"], int)
    if draw(st.booleans()):
        kw["center"] = draw(st.booleans())
    choice = draw(st.sampled_from(["none", "normalize", "ref"]))
    if choice == "normalize":
        kw["normalize"] = draw(st.sampled_from(["separate", "min", "max"]))
        integer = False
    elif choice == "ref":
        kw["ref_shape"] = tuple(draw(st.lists(st.integers(1, 300), min_size=nd, max_size=nd)))
        integer = False
    if draw(st.booleans()):
        kw["floor"] = True
        integer = True
    if nd >= 2 and draw(st.booleans()):
        m = draw(st.integers(1, 2))
        shape = shape[:-2] + (shape[-2] * m, shape[-1] * m)
        kw["merge"] = m
    if nd >= 2 and draw(st.booleans()):
        kw["indexing"] = draw(st.sampled_from(["ij", "xy"]))
    pre, post = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    if pre:
        kw["prefix_tokens"] = pre
    if post:
        kw["suffix_tokens"] = post
    kw.update(creation_kwargs(draw, be))
    expect = None
    if draw(st.booleans()):
        dk, expect = out_dtype(draw, be)
        kw.update(dk)
        if kw.get("dtype") is None:  # None: integer ids or the widest float, by the options
            expect = None
    rows = pre + math.prod(shape) + post
    check = None if integer else bounded_table_check(be, 1e9)
    return Case(be, (shape,), kw, shape=(rows, nd), dtype=expect, check=check)
