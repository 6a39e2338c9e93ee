"""What the builders of several families draw: arrays on a backend, dtype
requests, positions, dimensions, bases, sinusoidal options, RoPE scalings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.hardening._fuzz import Backend, float_dtypes, int_dtypes, real_dtypes

from ._spec import Draw


def arr(be: Backend, a: np.ndarray, dtype: str | None = None) -> Any:
    a = np.asarray(a)
    if dtype is None:
        dtype = str(a.dtype)
    if dtype == "float64" and not be.float64:
        dtype = "float32"
    if dtype == "int64" and be.family == "jax":
        dtype = "int32"
    return be.asarray(a.astype(dtype), dtype=dtype)


def out_dtype(draw: Draw, be: Backend, *, half: bool = False) -> tuple[dict, Any]:
    """A valid ``dtype=`` request (or none) and the dtype it must give."""
    arg, expect = draw(st.sampled_from(float_dtypes(be, half=half)))
    return ({} if arg is None and draw(st.booleans()) else {"dtype": arg}), expect


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 0, max_side: int = 4) -> st.SearchStrategy:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def real_array(
    draw: Draw,
    be: Backend,
    shape: tuple,
    lo: float,
    hi: float,
    *,
    dtype: str | None = None,
    integer: bool = False,
) -> tuple[Any, np.ndarray]:
    """A finite array on ``be`` and its NumPy twin."""
    if integer:
        dt = dtype or draw(st.sampled_from(int_dtypes(be)))
        elems = st.integers(int(lo), int(hi))
    else:
        dt = dtype or draw(st.sampled_from(real_dtypes(be)))
        width = 32 if dt == "float32" else 64
        if width == 32:  # bounds representable in float32, inside [lo, hi]
            lo32, hi32 = np.float32(lo), np.float32(hi)
            lo = float(np.nextafter(lo32, np.float32(np.inf))) if float(lo32) < lo else float(lo32)
            hi = float(np.nextafter(hi32, np.float32(-np.inf))) if float(hi32) > hi else float(hi32)
        elems = st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=width)
    a = draw(hnp.arrays(np.dtype(dt), shape, elements=elems))
    return arr(be, a, dt), a


def positions(
    draw: Draw,
    be: Backend,
    *,
    lo: float = -(2.0**20),
    hi: float = 2.0**20,
    floats: bool = True,
    max_n: int = 40,
) -> tuple[Any, tuple, bool]:
    """An int ``n`` or an array of positions; returns (value, shape, is_int)."""
    if draw(st.booleans()):
        n = draw(st.integers(0, max_n))
        return n, (n,), True
    shape = draw(shapes())
    integer = not floats or draw(st.booleans())
    if integer and draw(st.integers(0, 3)) == 0:  # narrow integer dtypes, full range
        small = draw(st.sampled_from(["int8", "int16", "uint8", "uint16"]))
        info = np.iinfo(small)
        x, _ = real_array(draw, be, shape, max(info.min, lo), min(info.max, hi), dtype=small, integer=True)
        return x, shape, False
    x, _ = real_array(draw, be, shape, lo, hi, integer=integer)
    return x, shape, False


def even_dim(draw: Draw, lo: int = 2, hi: int = 64) -> int:
    return 2 * draw(st.integers(lo // 2, hi // 2))


def base(draw: Draw) -> float:
    return draw(st.sampled_from([10000.0, 2.0, 500000.0, 1e6, 1.5]) | st.floats(1.01, 1e6))


def freq_kwargs(draw: Draw) -> dict:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["base"] = base(draw)
    conv = draw(st.sampled_from(["paper", "fairseq", "tensor2tensor", None]))
    if conv is not None:
        kw["convention"] = conv
    if conv == "tensor2tensor" and draw(st.booleans()):
        lo = draw(st.floats(0.1, 10.0))
        kw["min_timescale"] = lo
        kw["max_timescale"] = lo * draw(st.floats(1.0, 1e5))
    return kw


def rope_kwargs(draw: Draw, dim: int, *, layout: bool = False, seq_len: bool = False) -> dict[str, Any]:
    """RoPE's table options, each drawn or left at its default: ``base``,
    ``scaling`` and, where the function takes them, ``layout`` and ``seq_len``."""
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["base"] = base(draw)
    s = scaling_obj(draw, dim)
    if s is not None:
        kw["scaling"] = s
    if layout and draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["half", "interleaved"]))
    if seq_len and draw(st.booleans()):
        kw["seq_len"] = draw(st.integers(1, 2**17))
    return kw


def bounded_table_check(be: Backend, bound: float = 1.0) -> Callable[[Any], None]:
    def check(r: Any) -> None:
        if not be.has_values:
            return
        a = be.to_numpy(r)
        assert (np.abs(a) <= bound + 1e-3).all(), f"|values| above {bound}: max {np.abs(a).max()}"

    return check


def scaling_obj(draw: Draw, dim: int) -> Any:
    from posenc import scaling as sc

    kind = draw(st.sampled_from(["none", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope"]))
    factor = draw(st.floats(1.0, 64.0))
    L0 = draw(st.integers(16, 8192))
    if kind == "none":
        return None
    if kind == "linear":
        return sc.Linear(factor)
    if kind == "ntk":
        return sc.NTK(factor)
    if kind == "dynamic":
        return sc.DynamicNTK(factor, L0)
    if kind == "yarn":
        return sc.YaRN(factor, L0, truncate=draw(st.booleans()))
    if kind == "llama3":
        return sc.Llama3(factor, L0)
    m = dim // 2
    short = draw(st.lists(st.floats(1.0, 8.0), min_size=m, max_size=m))
    long = draw(st.lists(st.floats(1.0, 64.0), min_size=m, max_size=m))
    return sc.LongRoPE(short, long, L0, factor=draw(st.none() | st.floats(1.0, 64.0)))
