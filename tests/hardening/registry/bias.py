"""Relative positions and attention biases: clipped relative positions,
KERPLE, Transformer-XL's relative table and T5 buckets (ALiBi: :mod:`.alibi`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case, creation_kwargs, index_dtype, int_default, int_dtypes, real_dtypes

from ._draw import (
    base,
    bounded_table_check,
    even_dim,
    out_dtype,
    real_array,
    shapes,
)
from ._spec import Draw, register


def _query_key(draw: Draw) -> tuple[tuple, int, int]:
    """``(args, q, k)``: a query length, and a key length (given or not)."""
    q = draw(st.integers(0, 12))
    if draw(st.booleans()):
        k = draw(st.integers(0, 12))
        return (q, k), q, k
    return (q,), q, q


def _lengths(draw: Draw) -> tuple[tuple, dict, int, int]:
    args, q, k = _query_key(draw)
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["offset"] = draw(st.integers(-20, 20))
    return args, kw, q, k


@register("relative_positions", aliases={"offset": ("dtype",)}, huge=(lambda: ((2**21, 2**21), {}),))
def _relative_positions(draw: Draw, be: Backend) -> Case:
    args, kw, q, k = _lengths(draw)
    if draw(st.booleans()):
        kw["max_distance"] = draw(st.integers(0, 20))
    dt = int_default(be)
    if draw(st.booleans()):
        name = draw(st.sampled_from(int_dtypes(be)))
        kw["dtype"], dt = name, getattr(be.ns, name)
    kw.update(creation_kwargs(draw, be))
    return Case(be, args, kw, shape=(q, k), dtype=dt)


@register(
    "kerple_bias",
    aliases={"r1": ("r2",), "r2": ("r1",)},
    huge=(
        lambda: ((2**20, 2**20), {"r1": np.ones(2), "r2": np.ones(2)}),
        # 2**41 heads of an empty bias: refused by the parameters' own size, before their values are read
        lambda: ((0,), {"r1": np.broadcast_to(np.ones(1), (2**41,)), "r2": np.broadcast_to(np.ones(1), (2**41,)),
                        "dtype": "float32"}),
    ),
)
def _kerple_bias(draw: Draw, be: Backend) -> Case:
    args, kw, q, k = _lengths(draw)
    h = draw(st.integers(1, 5))
    kind = draw(st.sampled_from(["log", "power"]))
    dt_in = draw(st.sampled_from(real_dtypes(be)))
    r1, _ = real_array(draw, be, (h,), 0.01, 10.0, dtype=dt_in)
    r2, _ = real_array(draw, be, (h,), 0.01, 2.0 if kind == "power" else 10.0, dtype=dt_in)
    kw.update(r1=r1, r2=r2, kind=kind)
    causal = draw(st.booleans())
    if causal:
        kw["causal"] = True
    dt = r1.dtype
    if draw(st.booleans()):
        dk, dt = out_dtype(draw, be)
        if dk.get("dtype") is None:
            dt = r1.dtype
        kw.update(dk)
    return Case(be, args, kw, shape=(h, q, k), dtype=dt, finite="no-nan" if causal else "all")


@register("relative_sinusoidal", huge=(lambda: ((2**20, 2**20), {"dim": 2**21}),))
def _relative_sinusoidal(draw: Draw, be: Backend) -> Case:
    args, q, k = _query_key(draw)
    dim = even_dim(draw, hi=32)
    kw: dict[str, Any] = {"dim": dim}
    if draw(st.booleans()):
        kw["base"] = base(draw)
    if draw(st.booleans()):
        kw["clamp_len"] = draw(st.integers(0, 20))
    bi = draw(st.booleans())
    if bi:
        kw["bidirectional"] = True
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    kw.update(creation_kwargs(draw, be))
    rows = k + q - 1 if bi else k
    return Case(be, args, kw, shape=(max(rows, 0), dim), dtype=dt, check=bounded_table_check(be))


def _t5_kwargs(draw: Draw) -> dict:
    kw: dict[str, Any] = {}
    bi = draw(st.booleans())
    kw["bidirectional"] = bi
    nb = 2 * draw(st.integers(2, 40)) if bi else draw(st.integers(2, 80))
    kw["num_buckets"] = nb
    half = nb // 2 if bi else nb
    kw["max_distance"] = draw(st.integers(half + 1, 2**20))
    return kw


@register(
    "t5_bucket",
    aliases={"num_buckets": ("max_distance",), "max_distance": ("num_buckets",)},
    huge=(lambda: ((np.broadcast_to(np.zeros(1, np.int64), (2**41,)),), {}),),
)
def _t5_bucket(draw: Draw, be: Backend) -> Case:
    shape = draw(shapes())
    dt_in = draw(st.sampled_from(int_dtypes(be)))
    lim = 2**31 - 1 if dt_in == "int32" else 2**62
    rel, _ = real_array(draw, be, shape, -lim, lim, dtype=dt_in, integer=True)
    kw = _t5_kwargs(draw) if draw(st.booleans()) else {}
    nb = kw.get("num_buckets", 32)
    dt = index_dtype(be)
    if draw(st.booleans()):
        name = draw(st.sampled_from(int_dtypes(be)))
        kw["dtype"], dt = name, getattr(be.ns, name)

    def check(r: Any) -> None:
        a = be.to_numpy(r)
        assert ((a >= 0) & (a < nb)).all(), f"buckets outside [0, {nb})"

    return Case(be, (rel,), kw, shape=shape, dtype=dt, check=check)


@register(
    "t5_buckets",
    aliases={"num_buckets": ("max_distance",), "max_distance": ("num_buckets",)},
    huge=(lambda: ((2**21, 2**21), {}),),
)
def _t5_buckets(draw: Draw, be: Backend) -> Case:
    args, kw, q, k = _lengths(draw)
    if draw(st.booleans()):
        kw.update(_t5_kwargs(draw))
    dt = index_dtype(be)
    if draw(st.booleans()):
        name = draw(st.sampled_from(int_dtypes(be)))
        kw["dtype"], dt = name, getattr(be.ns, name)
    kw.update(creation_kwargs(draw, be))
    return Case(be, args, kw, shape=(q, k), dtype=dt)
