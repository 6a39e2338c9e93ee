"""RoPE: frequencies, cos/sin tables, applying the rotation, layout
permutations and xPos scales.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

import posenc
from tests.hardening._fuzz import Backend, Case, creation_kwargs, index_dtype, int_dtypes, real_dtypes

from ._draw import (
    arr,
    base,
    even_dim,
    out_dtype,
    positions,
    real_array,
    rope_kwargs,
    scaling_obj,
    shapes,
)
from ._spec import Draw, register


@register("rope_frequencies", huge=(lambda: ((2**42,), {}),))
def _rope_frequencies(draw: Draw, be: Backend) -> Case:
    dim = even_dim(draw)
    kw = rope_kwargs(draw, dim, seq_len=True)
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    kw.update(creation_kwargs(draw, be))
    return Case(be, (dim,), kw, shape=(dim // 2,), dtype=dt)


@register("rope_cos_sin", huge=(lambda: ((2**30, 2**12), {}),))
def _rope_cos_sin(draw: Draw, be: Backend) -> Case:
    pos, pshape, is_int = positions(draw, be)
    dim = even_dim(draw, hi=32)
    kw = rope_kwargs(draw, dim, layout=True, seq_len=True)
    dk, dt = out_dtype(draw, be, half=True)
    kw.update(dk)
    if is_int:
        kw.update(creation_kwargs(draw, be))
    return Case(be, (pos, dim), kw, shape=(pshape + (dim,),) * 2, dtype=dt, kind="arrays")


def _rope_x(draw: Draw, be: Backend) -> tuple[Any, tuple, int]:
    lead = draw(shapes(max_dims=2, min_side=1, max_side=3))
    seq = draw(st.integers(0, 6))
    head = even_dim(draw, hi=16)
    dt = draw(st.sampled_from(real_dtypes(be)))
    x, _ = real_array(draw, be, lead + (seq, head), -4, 4, dtype=dt)
    return x, lead + (seq, head), head


@register(
    "apply_rope",
    data=("x",),
    huge=(
        lambda: (
            (
                np.broadcast_to(np.zeros((1, 1), np.float32), (2**30, 2**11)),
                np.ones((1, 2**11), np.float32),
                np.zeros((1, 2**11), np.float32),
            ),
            {},
        ),
    ),
    trio="rotates `x`: the result has x's namespace, device and dtype",
)
def _apply_rope(draw: Draw, be: Backend) -> Case:
    x, shape, head = _rope_x(draw, be)
    rd = head if draw(st.booleans()) else even_dim(draw, 2, head)
    layout = draw(st.sampled_from(["half", "interleaved"]))
    pos = draw(st.integers(0, 2**20))
    cos, sin = posenc.rope_cos_sin(arr(be, np.arange(pos, pos + shape[-2])), rd, layout=layout, dtype=x.dtype)
    kw: dict[str, Any] = {"layout": layout}
    if rd != head or draw(st.booleans()):
        kw["rotary_dim"] = rd

    def check(r: Any) -> None:  # rotations keep the norm
        a, b = be.to_numpy(x).astype(np.float64), be.to_numpy(r).astype(np.float64)
        np.testing.assert_allclose(np.linalg.norm(b, axis=-1), np.linalg.norm(a, axis=-1), rtol=1e-4, atol=1e-4)

    return Case(be, (x, cos, sin), kw, shape=shape, dtype=x.dtype, check=check)


@register(
    "rope",
    data=("x",),
    huge=(lambda: ((np.broadcast_to(np.zeros((1, 1), np.float32), (2**30, 2**11)), 2**30), {}),),
    trio="rotates `x`: the result has x's namespace, device and dtype",
)
def _rope(draw: Draw, be: Backend) -> Case:
    x, shape, head = _rope_x(draw, be)
    seq = shape[-2]
    if draw(st.booleans()):
        pos: Any = seq
    else:
        p0 = draw(st.integers(-(2**20), 2**20))
        pos = arr(be, np.arange(p0, p0 + seq), draw(st.sampled_from(int_dtypes(be) + real_dtypes(be))))
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["half", "interleaved"]))
    if draw(st.booleans()):
        kw["rotary_dim"] = even_dim(draw, 2, head)
    rd = kw.get("rotary_dim", head)
    s = scaling_obj(draw, rd)
    if s is not None:
        kw["scaling"] = s
    if draw(st.booleans()):
        kw["base"] = base(draw)
    return Case(be, (x, pos), kw, shape=shape, dtype=x.dtype)


@register(
    "rope_permutation",
    aliases={"rotary_dim": ("dim",), "dim": ("rotary_dim",)},
    huge=(lambda: ((2**42,), {}),),
    trio="an index array: the namespace's index dtype, no float dtype to choose",
)
def _rope_permutation(draw: Draw, be: Backend) -> Case:
    dim = draw(st.integers(1, 40))
    kw: dict[str, Any] = {}
    if dim % 2 or draw(st.booleans()):
        kw["rotary_dim"] = even_dim(draw, 2, max(2, dim - dim % 2)) if dim >= 2 else None
        if kw["rotary_dim"] is None:
            dim = 2
            del kw["rotary_dim"]
    for k in ("source", "target"):
        if draw(st.booleans()):
            kw[k] = draw(st.sampled_from(["half", "interleaved"]))
    kw.update(creation_kwargs(draw, be))

    def check(r: Any) -> None:
        a = be.to_numpy(r)
        assert sorted(a.tolist()) == list(range(dim)), f"not a permutation: {a}"

    return Case(be, (dim,), kw, shape=(dim,), dtype=index_dtype(be), check=check)


@register("xpos_scale", huge=(lambda: ((2**30, 2**12), {}),))
def _xpos_scale(draw: Draw, be: Backend) -> Case:
    # |p| / scale_base <= 64: zeta**64 is representable in float32 (zeta >= 2/7)
    sb = draw(st.floats(64.0, 4096.0))
    pos, pshape, is_int = positions(draw, be, lo=-sb * 64, hi=sb * 64)
    dim = even_dim(draw, hi=32)
    kw: dict[str, Any] = {"scale_base": sb}
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["half", "interleaved"]))
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    if is_int:
        kw.update(creation_kwargs(draw, be))

    def check(r: Any) -> None:
        a = be.to_numpy(r)
        assert (a >= 0).all(), "xpos scales must be positive"

    return Case(be, (pos, dim), kw, shape=pshape + (dim,), dtype=dt, check=check)
