"""2-D relative positions of windowed vision attention: the Swin / BEiT index,
Swin-V2's log coordinates, table resampling, SAM's decomposed positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case, creation_kwargs, index_dtype, int_dtypes

from ._draw import out_dtype, real_array
from ._spec import Draw, register

TABLE_TRIO = "transforms `table`: the result has its namespace, device and dtype"


def _window(draw: Draw, lo: int = 1, hi: int = 6) -> tuple[Any, int, int]:
    """A window as drawn (an int or a pair) and its sides."""
    h = draw(st.integers(lo, hi))
    if draw(st.booleans()):
        return h, h, h
    w = draw(st.integers(lo, hi))
    return (h, w), h, w


@register("relative_position_index", huge=(lambda: ((2**11,), {}),))
def _relative_position_index(draw: Draw, be: Backend) -> Case:
    window, h, w = _window(draw)
    kw: dict[str, Any] = {}
    cls = draw(st.booleans())
    if cls or draw(st.booleans()):
        kw["class_token"] = cls
    dt = index_dtype(be)
    if draw(st.booleans()):
        name = draw(st.sampled_from(int_dtypes(be)))
        kw["dtype"], dt = name, getattr(be.ns, name)
    kw.update(creation_kwargs(draw, be))
    n = h * w + (1 if cls else 0)
    top = (2 * h - 1) * (2 * w - 1) + (3 if cls else 0)

    def check(r: Any) -> None:
        if be.has_values:
            a = be.to_numpy(r)
            assert a.min() >= 0 and a.max() < top, f"index outside [0, {top})"

    return Case(be, (window,), kw, shape=(n, n), dtype=dt, check=check)


@register(
    "relative_log_coords",
    aliases={"pretrained_window": ("mode",), "mode": ("pretrained_window",)},
    huge=(lambda: ((2**21,), {}),),
)
def _relative_log_coords(draw: Draw, be: Backend) -> Case:
    window, h, w = _window(draw)
    kw: dict[str, Any] = {}
    mode = draw(st.sampled_from(["swin", "cr", None]))
    if mode is not None:
        kw["mode"] = mode
    if mode != "cr" and draw(st.booleans()):
        if draw(st.booleans()):
            kw["pretrained_window"] = draw(st.sampled_from([None, 0, (0, 0)]))
        else:
            kw["pretrained_window"] = _window(draw, lo=2, hi=8)[0]
    dk, dt = out_dtype(draw, be, half=True)
    kw.update(dk)
    kw.update(creation_kwargs(draw, be))

    def check(r: Any) -> None:
        if be.has_values:
            a = be.to_numpy(r).astype(np.float64)
            assert np.abs(a).max() <= 4.0, "log coordinates beyond their range"

    return Case(be, (window,), kw, shape=(2 * h - 1, 2 * w - 1, 2), dtype=dt, check=check)


@register(
    "resample_relative_table",
    aliases={
        "table": ("old_window", "class_token"),
        "old_window": ("table", "class_token"),
        "class_token": ("table", "old_window"),
        "window": ("table",),
    },
    huge=(lambda: ((np.zeros((1, 3, 3), np.float32), 2**20), {}),),
    trio=TABLE_TRIO,
)
def _resample_relative_table(draw: Draw, be: Backend) -> Case:
    old, oh, ow = _window(draw, hi=4)
    new, nh, nw = _window(draw, hi=5)
    heads = draw(st.integers(1, 3))
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["method"] = draw(st.sampled_from(["geometric", "bilinear"]))
    if draw(st.booleans()):
        t, _ = real_array(draw, be, (heads, 2 * oh - 1, 2 * ow - 1), -3.0, 3.0)
        if draw(st.booleans()):
            kw["old_window"] = old
        shape: tuple = (heads, 2 * nh - 1, 2 * nw - 1)
    else:
        cls = draw(st.booleans())
        extra = 3 if cls else 0
        t, _ = real_array(draw, be, ((2 * oh - 1) * (2 * ow - 1) + extra, heads), -3.0, 3.0)
        kw["old_window"] = old
        if cls or draw(st.booleans()):
            kw["class_token"] = cls
        shape = ((2 * nh - 1) * (2 * nw - 1) + extra, heads)
    return Case(be, (t, new), kw, shape=shape, dtype=t.dtype)


@register(
    "decomposed_relative_positions",
    aliases={"table": ("q_size", "k_size")},
    huge=(lambda: ((2**20, 2**20, np.zeros((3, 2), np.float32)), {}),),
    trio=TABLE_TRIO,
)
def _decomposed_relative_positions(draw: Draw, be: Backend) -> Case:
    q, k = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    rows = draw(st.sampled_from([2 * max(q, k) - 1, draw(st.integers(1, 20))]))
    t, _ = real_array(draw, be, (rows, draw(st.integers(1, 4))), -3.0, 3.0)
    return Case(be, (q, k, t), {}, shape=(q, k, int(t.shape[1])), dtype=t.dtype)
