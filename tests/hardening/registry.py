"""Every public name of posenc, posenc.scaling and posenc_viz, with a builder of
valid calls and the documented rules of their results.

``REGISTRY[name]`` is a :class:`Spec`.  ``name`` is the name in ``__all__``
(``scaling.YaRN`` for the members of :mod:`posenc.scaling`).  A public name
without an entry fails ``test_every_public_name_is_registered``, so a new
function cannot slip past the fuzz suite.

Builders draw sizes 0, 1 and small, every documented option, every valid
dtype request, positions of any shape (int and float, negative, fractional)
and arrays of every fuzz backend; the expected shape and dtype are the rules
of the function's docstring.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import posenc

from ._fuzz import (
    Backend,
    Case,
    creation_kwargs,
    float_dtypes,
    index_dtype,
    int_default,
    int_dtypes,
    real_dtypes,
)

Draw = Callable[[Any], Any]


@dataclass
class Spec:
    """How to fuzz one public name.

    ``valid(draw, be)`` returns a :class:`Case`.  ``hostile``: the parameters
    the hostile test may replace (default: all).  ``aliases``: other
    parameter names an error about a parameter may name instead (a conflict
    between two arguments may be reported on either).  ``huge``: calls whose
    output exceeds ``MAX_ELEMENTS`` (numpy backend), for the fail-fast test.
    ``viz``: a figure function (fewer examples, figures closed after).
    """

    valid: Callable[[Draw, Backend], Case]
    hostile: tuple[str, ...] | None = None
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    huge: tuple[Callable[[], tuple[tuple, dict]], ...] = ()
    viz: bool = False
    backends: tuple[str, ...] | None = None  # restrict (e.g. viz to fewer)


REGISTRY: dict[str, Spec] = {}


def register(name: str, **kw: Any) -> Callable:
    def deco(fn: Callable) -> Callable:
        REGISTRY[name] = Spec(valid=fn, **kw)
        return fn

    return deco


# ----------------------------------------------------------------- helpers
def arr(be: Backend, a: np.ndarray, dtype: str | None = None) -> Any:
    a = np.asarray(a)
    if dtype is None:
        dtype = str(a.dtype)
    if dtype == "float64" and not be.float64:
        dtype = "float32"
    if dtype == "int64" and be.name.startswith("jax"):
        dtype = "int32"
    return be.asarray(a.astype(dtype), dtype=dtype)


def out_dtype(draw: Draw, be: Backend, *, half: bool = False) -> tuple[dict, Any]:
    """A valid ``dtype=`` request (or none) and the dtype it must give."""
    arg, expect = draw(st.sampled_from(float_dtypes(be, half=half)))
    return ({} if arg is None and draw(st.booleans()) else {"dtype": arg}), expect


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 0, max_side: int = 4) -> st.SearchStrategy:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def real_array(draw: Draw, be: Backend, shape: tuple, lo: float, hi: float, *, dtype: str | None = None, integer: bool = False) -> tuple[Any, np.ndarray]:
    """A finite array on ``be`` and its NumPy twin."""
    if integer:
        dt = dtype or draw(st.sampled_from(int_dtypes(be)))
        elems = st.integers(int(lo), int(hi))
    else:
        dt = dtype or draw(st.sampled_from(real_dtypes(be)))
        width = 32 if dt == "float32" else 64
        if width == 32:  # bounds representable in float32, inside [lo, hi]
            lo = float(np.nextafter(np.float32(lo), np.float32(np.inf))) if float(np.float32(lo)) < lo else float(np.float32(lo))
            hi = float(np.nextafter(np.float32(hi), np.float32(-np.inf))) if float(np.float32(hi)) > hi else float(np.float32(hi))
        elems = st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=width)
    a = draw(hnp.arrays(np.dtype(dt), shape, elements=elems))
    return arr(be, a, dt), a


def positions(draw: Draw, be: Backend, *, lo: float = -(2.0**20), hi: float = 2.0**20, floats: bool = True, max_n: int = 40) -> tuple[Any, tuple, bool]:
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


# =================================================================== posenc
# ----------------------------------------------------- the sinusoidal family
def _freq_kwargs(draw: Draw) -> dict:
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


@register("frequencies", huge=(lambda: ((2**42,), {}),))
def _frequencies(draw: Draw, be: Backend) -> Case:
    dim = draw(st.integers(1, 70))
    dk, dt = out_dtype(draw, be)
    kw = {**_freq_kwargs(draw), **dk, **creation_kwargs(draw, be)}

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
    kw = {**_freq_kwargs(draw), **dk, **creation_kwargs(draw, be)}
    return Case(be, (dim,), kw, shape=(dim // 2,), dtype=dt)


def _bounded_table_check(be: Backend, bound: float = 1.0) -> Callable[[Any], None]:
    def check(r: Any) -> None:
        if not be.has_values:
            return
        a = be.to_numpy(r)
        assert (np.abs(a) <= bound + 1e-3).all(), f"|values| above {bound}: max {np.abs(a).max()}"

    return check


@register(
    "sinusoidal",
    huge=(lambda: ((2**30, 2**11), {}), lambda: ((np.broadcast_to(np.zeros(1), (2**38,)), 8), {})),
)
def _sinusoidal(draw: Draw, be: Backend) -> Case:
    pos, pshape, is_int = positions(draw, be)
    dim = draw(st.integers(1, 40))
    dk, dt = out_dtype(draw, be, half=True)
    kw = {**_freq_kwargs(draw), **dk}
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["interleaved", "concat"]))
    if is_int:
        kw.update(creation_kwargs(draw, be))
    return Case(be, (pos, dim), kw, shape=pshape + (dim,), dtype=dt, check=_bounded_table_check(be))


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
    return Case(be, (pos, f), kw, shape=pshape + (m,), dtype=dt, check=_bounded_table_check(be))


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


@register("add_sinusoidal", huge=(lambda: ((np.broadcast_to(np.zeros((1, 1), np.float32), (2**30, 2**11)),), {}),))
def _add_sinusoidal(draw: Draw, be: Backend) -> Case:
    shape = draw(shapes(min_dims=2, max_dims=4, min_side=1))
    x, _ = real_array(draw, be, shape, -10, 10)
    kw = _freq_kwargs(draw)
    if draw(st.booleans()):
        kw["offset"] = draw(st.integers(-(2**20), 2**20))
    if draw(st.booleans()):
        kw["input_scale"] = draw(st.floats(-100, 100))
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["interleaved", "concat"]))
    return Case(be, (x,), kw, shape=shape, dtype=x.dtype)


@register("learned_table", huge=(lambda: ((2**30, 2**11), {}),))
def _learned_table(draw: Draw, be: Backend) -> Case:
    n = draw(st.integers(0, 30))
    dim = draw(st.integers(1, 16))
    dk, dt = out_dtype(draw, be)
    kw = {**dk, **creation_kwargs(draw, be)}
    if draw(st.booleans()):
        kw["std"] = draw(st.floats(0.0, 10.0))
    if draw(st.booleans()):
        kw["truncate"] = draw(st.floats(0.5, 4.0))
    if draw(st.booleans()):
        kw["seed"] = draw(st.integers(0, 2**32) | st.builds(np.random.default_rng, st.integers(0, 100)))
    return Case(be, (n, dim), kw, shape=(n, dim), dtype=dt)


@register("resample_table", huge=(lambda: ((np.zeros((4, 2**11), np.float32), 2**30), {}),))
def _resample_table(draw: Draw, be: Backend) -> Case:
    shape = draw(shapes(min_dims=2, max_dims=3, min_side=1))
    x, _ = real_array(draw, be, shape, -10, 10)
    n = draw(st.integers(1, 12))
    kw = {}
    if draw(st.booleans()):
        kw["align_corners"] = draw(st.booleans())
    return Case(be, (x, n), kw, shape=shape[:-2] + (n, shape[-1]), dtype=x.dtype)


@register("shift_matrix", huge=(lambda: ((3, 2**21), {}), lambda: ((np.broadcast_to(np.zeros(1), (2**30,)), 2**6), {})))
def _shift_matrix(draw: Draw, be: Backend) -> Case:
    dim = draw(st.integers(1, 16))
    kw = _freq_kwargs(draw)
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


@register("similarity", huge=(lambda: ((np.broadcast_to(np.zeros((1, 4), np.float32), (2**21, 4)),), {}),))
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
    kw = _freq_kwargs(draw)
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    if draw(st.booleans()):
        kw["normalize"] = draw(st.booleans())
    if is_int:
        kw.update(creation_kwargs(draw, be))
    bound = 1.0 if kw.get("normalize") else max(dim // 2, 1)
    return Case(be, (off, dim), kw, shape=shape, dtype=dt, check=_bounded_table_check(be, bound))


# -------------------------------------------------------------------- RoPE
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


@register("rope_frequencies", huge=(lambda: ((2**42,), {}),))
def _rope_frequencies(draw: Draw, be: Backend) -> Case:
    dim = even_dim(draw)
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["base"] = base(draw)
    s = scaling_obj(draw, dim)
    if s is not None:
        kw["scaling"] = s
    if draw(st.booleans()):
        kw["seq_len"] = draw(st.integers(1, 2**17))
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    kw.update(creation_kwargs(draw, be))
    return Case(be, (dim,), kw, shape=(dim // 2,), dtype=dt)


@register("rope_cos_sin", huge=(lambda: ((2**30, 2**12), {}),))
def _rope_cos_sin(draw: Draw, be: Backend) -> Case:
    pos, pshape, is_int = positions(draw, be)
    dim = even_dim(draw, hi=32)
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["base"] = base(draw)
    s = scaling_obj(draw, dim)
    if s is not None:
        kw["scaling"] = s
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["half", "interleaved"]))
    if draw(st.booleans()):
        kw["seq_len"] = draw(st.integers(1, 2**17))
    dk, dt = out_dtype(draw, be, half=True)
    kw.update(dk)
    if is_int:
        kw.update(creation_kwargs(draw, be))
    return Case(be, (pos, dim), kw, shape=(pshape + (dim,),) * 2, dtype=dt, kind="arrays")


@register(
    "mrope_cos_sin",
    huge=(lambda: ((np.broadcast_to(np.zeros((3, 1), np.int64), (3, 2**30)), 2**11), {"mrope_section": [2**8, 2**8, 2**9]}),),
)
def _mrope_cos_sin(draw: Draw, be: Backend) -> Case:
    shape = draw(shapes(max_dims=2))
    pid, _ = real_array(draw, be, (3,) + shape, -(2.0**20), 2.0**20, integer=draw(st.booleans()))
    dim = even_dim(draw, hi=32)
    half = dim // 2
    a = draw(st.integers(0, half))
    b = draw(st.integers(0, half - a))
    kw: dict[str, Any] = {"mrope_section": [a, b, half - a - b], "mrope_interleaved": draw(st.booleans())}
    if draw(st.booleans()):
        kw["base"] = base(draw)
    s = scaling_obj(draw, dim)
    if s is not None:
        kw["scaling"] = s
    if draw(st.booleans()):
        kw["layout"] = draw(st.sampled_from(["half", "interleaved"]))
    dk, dt = out_dtype(draw, be, half=True)
    kw.update(dk)
    return Case(be, (pid, dim), kw, shape=(shape + (dim,),) * 2, dtype=dt, kind="arrays")


def _rope_x(draw: Draw, be: Backend) -> tuple[Any, tuple, int]:
    lead = draw(shapes(max_dims=2, min_side=1, max_side=3))
    seq = draw(st.integers(0, 6))
    head = even_dim(draw, hi=16)
    dt = draw(st.sampled_from(real_dtypes(be)))
    x, _ = real_array(draw, be, lead + (seq, head), -4, 4, dtype=dt)
    return x, lead + (seq, head), head


@register("apply_rope", huge=(lambda: ((np.broadcast_to(np.zeros((1, 1), np.float32), (2**30, 2**11)), np.ones((1, 2**11), np.float32), np.zeros((1, 2**11), np.float32)), {}),))
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


@register("rope", huge=(lambda: ((np.broadcast_to(np.zeros((1, 1), np.float32), (2**30, 2**11)), 2**30), {}),))
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


@register("rope_permutation", aliases={"rotary_dim": ("dim",), "dim": ("rotary_dim",)}, huge=(lambda: ((2**42,), {}),))
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


# ------------------------------------------------------------ posenc.scaling
def _scaling_case(be: Backend, obj_args: tuple, obj_kwargs: dict, dim: int) -> Case:
    def check(obj: Any) -> None:
        from posenc import scaling as sc

        assert isinstance(obj, sc.Scaling)
        a = obj.attention_scaling()
        assert isinstance(a, float) and math.isfinite(a) and a > 0, f"attention_scaling() = {a!r}"
        w = np.asarray(posenc.rope_frequencies(dim, scaling=obj))
        assert w.shape == (dim // 2,) and np.isfinite(w).all() and (w > 0).all(), w

    return Case(be, obj_args, obj_kwargs, kind="object", check=check)


def _factor(draw: Draw) -> float:
    return draw(st.floats(0.01, 1000.0) | st.sampled_from([1, 2, 8, 1.0, 0.5]))


@register("scaling.Scaling", hostile=())
def _sc_base(draw: Draw, be: Backend) -> Case:
    def check(obj: Any) -> None:
        assert isinstance(obj, posenc.scaling.Scaling)

    return Case(be, (), {}, kind="object", check=check)


@register("scaling.Linear")
def _sc_linear(draw: Draw, be: Backend) -> Case:
    return _scaling_case(be, (_factor(draw),), {}, even_dim(draw))


@register("scaling.NTK")
def _sc_ntk(draw: Draw, be: Backend) -> Case:
    return _scaling_case(be, (_factor(draw),), {}, even_dim(draw))


@register("scaling.DynamicNTK")
def _sc_dynamic(draw: Draw, be: Backend) -> Case:
    return _scaling_case(be, (_factor(draw), draw(st.integers(1, 2**20))), {}, even_dim(draw))


@register("scaling.YaRN")
def _sc_yarn(draw: Draw, be: Backend) -> Case:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        slow = draw(st.floats(0.1, 8.0))
        kw["beta_slow"], kw["beta_fast"] = slow, slow * draw(st.floats(1.0, 64.0))
    if draw(st.booleans()):
        kw["mscale"] = draw(st.floats(0.1, 2.0))
        kw["mscale_all_dim"] = draw(st.floats(0.1, 2.0))
    if draw(st.booleans()):
        kw["attention_factor"] = draw(st.floats(0.1, 4.0))
    if draw(st.booleans()):
        kw["truncate"] = draw(st.booleans())
    return _scaling_case(be, (_factor(draw), draw(st.integers(1, 2**20))), kw, even_dim(draw))


@register("scaling.Llama3")
def _sc_llama3(draw: Draw, be: Backend) -> Case:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        lo = draw(st.floats(0.1, 4.0))
        kw["low_freq_factor"], kw["high_freq_factor"] = lo, lo + draw(st.floats(0.1, 8.0))
    return _scaling_case(be, (_factor(draw), draw(st.integers(1, 2**20))), kw, even_dim(draw))


@register("scaling.Proportional")
def _sc_proportional(draw: Draw, be: Backend) -> Case:
    dim = even_dim(draw, hi=32)
    fraction = draw(st.floats(0.0, 1.0))
    kw = {"factor": _factor(draw)} if draw(st.booleans()) else {}

    def check(obj: Any) -> None:
        from posenc import scaling as sc

        assert isinstance(obj, sc.Proportional) and obj.attention_scaling() == 1.0
        w = np.asarray(posenc.rope_frequencies(dim, scaling=obj))
        assert w.shape == (dim // 2,) and np.isfinite(w).all() and (w >= 0).all(), w
        assert int((w > 0).sum()) == int(fraction * dim // 2), (fraction, w)

    return Case(be, (fraction,), kw, kind="object", check=check)


@register("scaling.LongRoPE")
def _sc_longrope(draw: Draw, be: Backend) -> Case:
    dim = even_dim(draw, hi=32)
    m = dim // 2
    short = draw(st.lists(st.floats(0.5, 8.0), min_size=m, max_size=m))
    long = draw(st.lists(st.floats(0.5, 64.0), min_size=m, max_size=m))
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["factor"] = draw(st.floats(1.0, 64.0))
    if draw(st.booleans()):
        kw["attention_factor"] = draw(st.floats(0.1, 4.0))
    # L0 >= 2: the attention factor divides by log(L0)
    return _scaling_case(be, (short, long, draw(st.integers(2, 2**20))), kw, dim)


def hf_config(draw: Draw) -> tuple[dict, int]:
    heads = draw(st.integers(1, 8))
    head_dim = even_dim(draw, 2, 32)
    cfg: dict[str, Any] = {
        "hidden_size": heads * head_dim,
        "num_attention_heads": heads,
        "max_position_embeddings": draw(st.integers(64, 2**17)),
    }
    if draw(st.booleans()):
        cfg["rope_theta"] = base(draw)
    kind = draw(st.sampled_from(["default", "linear", "dynamic", "yarn", "llama3", None]))
    if kind is not None:
        entry: dict[str, Any] = {"rope_type": kind}
        if kind != "default":
            entry["factor"] = draw(st.floats(1.0, 32.0))
        if kind == "llama3":
            entry.update(original_max_position_embeddings=8192, low_freq_factor=1.0, high_freq_factor=4.0)
        if kind == "yarn" and draw(st.booleans()):
            entry["original_max_position_embeddings"] = 4096
        cfg[draw(st.sampled_from(["rope_scaling", "rope_parameters"]))] = entry
    return cfg, head_dim


@register("scaling.from_hf")
def _sc_from_hf(draw: Draw, be: Backend) -> Case:
    cfg, head_dim = hf_config(draw)

    def check(out: Any) -> None:
        assert isinstance(out, dict) and set(out) >= {"dim", "base", "scaling"}, out
        assert out["dim"] == head_dim, (out, head_dim)
        w = np.asarray(posenc.rope_frequencies(**out))
        assert np.isfinite(w).all() and (w > 0).all()

    return Case(be, (cfg,), {}, kind="object", check=check)


# ---------------------------------------------------------------- the biases
def _lengths(draw: Draw) -> tuple[tuple, dict, int, int]:
    q = draw(st.integers(0, 12))
    args: tuple = (q,)
    k = q
    if draw(st.booleans()):
        k = draw(st.integers(0, 12))
        args = (q, k)
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


@register("alibi_slopes", huge=(lambda: ((2**41,), {}),))
def _alibi_slopes(draw: Draw, be: Backend) -> Case:
    h = draw(st.integers(1, 80))
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["max_bias"] = draw(st.floats(0.5, 16.0))
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    kw.update(creation_kwargs(draw, be))

    def check(r: Any) -> None:
        a = be.to_numpy(r)
        assert ((a > 0) & (a <= 1.0 + 1e-6)).all(), f"slopes outside (0, 1]: {a}"

    return Case(be, (h,), kw, shape=(h,), dtype=dt, check=check)


@register("alibi_bias", aliases={"num_heads": ("slopes",), "slopes": ("num_heads",)}, huge=(lambda: ((2**10, 2**16, 2**16), {}),))
def _alibi_bias(draw: Draw, be: Backend) -> Case:
    h = draw(st.integers(1, 6))
    args, kw, q, k = _lengths(draw)
    form = draw(st.sampled_from(["paper", "bloom", "mpt", None]))
    if form is not None:
        kw["form"] = form
    causal = draw(st.booleans())
    if causal or draw(st.booleans()):
        kw["causal"] = causal
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    if draw(st.booleans()):
        sl, _ = real_array(draw, be, (h,), 0.001, 1.0)
        kw["slopes"] = sl
        if kw.get("dtype") is None:
            dt = sl.dtype
    else:
        if draw(st.booleans()):
            kw["max_bias"] = draw(st.floats(0.5, 16.0))
        kw.update(creation_kwargs(draw, be))
    rows = q if (form in (None, "paper") or causal) else 1
    return Case(be, (h, *args), kw, shape=(h, rows, k), dtype=dt, finite="no-nan" if causal else "all")


@register("kerple_bias", aliases={"r1": ("r2",), "r2": ("r1",)}, huge=(lambda: ((2**20, 2**20), {"r1": np.ones(2), "r2": np.ones(2)}),))
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
    q = draw(st.integers(0, 12))
    args: tuple = (q,)
    k = q
    if draw(st.booleans()):
        k = draw(st.integers(0, 12))
        args = (q, k)
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
    return Case(be, args, kw, shape=(max(rows, 0), dim), dtype=dt, check=_bounded_table_check(be))


def _t5_kwargs(draw: Draw) -> dict:
    kw: dict[str, Any] = {}
    bi = draw(st.booleans())
    kw["bidirectional"] = bi
    nb = 2 * draw(st.integers(2, 40)) if bi else draw(st.integers(2, 80))
    kw["num_buckets"] = nb
    half = nb // 2 if bi else nb
    kw["max_distance"] = draw(st.integers(half + 1, 2**20))
    return kw


@register("t5_bucket", aliases={"num_buckets": ("max_distance",), "max_distance": ("num_buckets",)}, huge=(lambda: ((np.broadcast_to(np.zeros(1, np.int64), (2**41,)),), {}),))
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


@register("t5_buckets", aliases={"num_buckets": ("max_distance",), "max_distance": ("num_buckets",)}, huge=(lambda: ((2**21, 2**21), {}),))
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


# -------------------------------------------------------- grids and Fourier
def _grid(draw: Draw) -> tuple[int, ...]:
    nd = draw(st.integers(1, 3))
    return tuple(draw(st.lists(st.integers(1, 6), min_size=nd, max_size=nd)))


def _grid_dim(draw: Draw, nd: int, order: str | None) -> int:
    if order == "interleaved" and draw(st.booleans()):
        return draw(st.integers(1, 40))
    return 2 * nd * draw(st.integers(1, 6))


@register("sincos_grid", huge=(lambda: (((2**15, 2**15), 2**12), {}),))
def _sincos_grid(draw: Draw, be: Backend) -> Case:
    grid = _grid(draw)
    order = draw(st.sampled_from(["mae", "timm", "blocks", "interleaved", None]))
    dim = _grid_dim(draw, len(grid), order)
    kw: dict[str, Any] = {}
    if order is not None:
        kw["order"] = order
    if draw(st.booleans()):
        kw["base"] = base(draw)
    cls = draw(st.booleans())
    flat = draw(st.booleans())
    if cls:
        kw["cls_token"] = True
    if flat:
        kw["flatten"] = True
    dk, dt = out_dtype(draw, be, half=True)
    kw.update(dk)
    kw.update(creation_kwargs(draw, be))
    n = math.prod(grid)
    shape = (1 + n, dim) if cls else (n, dim) if flat else grid + (dim,)
    return Case(be, (grid, dim), kw, shape=shape, dtype=dt, check=_bounded_table_check(be))


@register("sincos_coords", aliases={"coords": ("dim",)}, huge=(lambda: ((np.broadcast_to(np.zeros((1, 2)), (2**30, 2)), 2**12), {}),))
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
    return Case(be, (c, dim), kw, shape=lead + (dim,), dtype=dt, check=_bounded_table_check(be))


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


@register("gaussian_fourier_features", aliases={"coords": ("B",), "B": ("coords",)}, huge=(lambda: ((np.broadcast_to(np.zeros((1, 2)), (2**30, 2)), np.ones((2**10, 2))), {}),))
def _gaussian_fourier_features(draw: Draw, be: Backend) -> Case:
    in_dim = draw(st.integers(1, 20))
    lead = draw(shapes(max_dims=2))
    f = draw(st.integers(1, 8))  # B without rows is refused
    dt_in = draw(st.sampled_from(real_dtypes(be)))
    c, _ = real_array(draw, be, lead + (in_dim,), -10.0, 10.0, dtype=dt_in)
    B, _ = real_array(draw, be, (f, in_dim), -30.0, 30.0, dtype=dt_in)
    dk, dt = out_dtype(draw, be)
    return Case(be, (c, B), dk, shape=lead + (2 * f,), dtype=dt, check=_bounded_table_check(be))


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


@register(
    "resample_grid",
    aliases={
        "num_prefix_tokens": ("table", "old_grid_shape"),
        "old_grid_shape": ("table", "num_prefix_tokens"),
        "table": ("old_grid_shape", "num_prefix_tokens"),
    },
    huge=(lambda: ((np.zeros((4, 8), np.float32), 2**19), {}),))
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
    return Case(be, (t, new), kw, shape=lead + (prefix + nh * nw, dim), dtype=t.dtype)


# =============================================================== posenc_viz
VIZ_BACKENDS = ("numpy", "torch", "strict-device1", "jax")


def _axes_case(be: Backend, args: tuple, kw: dict) -> Case:
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    if kw.get("ax", "new") == "new":
        fig, ax = plt.subplots()
        kw["ax"] = ax

    def check(r: Any) -> None:
        assert isinstance(r, Axes), f"expected an Axes, got {type(r).__name__}"
        if kw.get("ax") is not None:
            assert r is kw["ax"]

    return Case(be, args, kw, kind="object", check=check, cleanup=lambda: plt.close("all"))


def _viz_ax(draw: Draw) -> dict:
    return {} if draw(st.booleans()) else {"ax": None}


def _table(draw: Draw, be: Backend, *, min_side: int = 1) -> Any:
    n, d = draw(st.integers(min_side, 12)), draw(st.integers(min_side, 12))
    x, _ = real_array(draw, be, (n, d), -1.0, 1.0)
    return x


@register("posenc_viz.plot_encoding", viz=True, backends=VIZ_BACKENDS)
def _plot_encoding(draw: Draw, be: Backend) -> Case:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["cbar"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["center"] = draw(st.none() | st.floats(-1, 1))
    if draw(st.booleans()):
        kw["cmap"] = draw(st.sampled_from(["viridis", "RdBu_r"]))
    if draw(st.booleans()):
        kw["title"] = draw(st.text(max_size=8))
    kw.update(_viz_ax(draw))
    return _axes_case(be, (_table(draw, be),), kw)


@register("posenc_viz.plot_wavelengths", viz=True, backends=("numpy",))
def _plot_wavelengths(draw: Draw, be: Backend) -> Case:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["base"] = base(draw)
    if draw(st.booleans()):
        kw["convention"] = draw(st.sampled_from(["paper", "fairseq", "tensor2tensor"]))
    if draw(st.booleans()):
        kw["quantity"] = draw(st.sampled_from(["wavelength", "frequency"]))
    if draw(st.booleans()):
        kw["bounds"] = draw(st.booleans())
    return _axes_case(be, (draw(st.integers(2, 600)),), kw)


@register("posenc_viz.plot_dimensions", viz=True, backends=VIZ_BACKENDS)
def _plot_dimensions(draw: Draw, be: Backend) -> Case:
    t = _table(draw, be)
    d = int(t.shape[1])
    dims = draw(st.integers(0, d - 1) | st.lists(st.integers(0, d - 1), min_size=1, max_size=4))
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        n = int(t.shape[0])
        start, step = draw(st.floats(-100.0, 100.0)), draw(st.floats(0.01, 10.0))
        kw["positions"] = arr(be, start + step * np.arange(n))  # increasing positions
    if draw(st.booleans()):
        kw["legend"] = draw(st.booleans())
    return _axes_case(be, (t, dims), kw)


@register("posenc_viz.plot_similarity", viz=True, backends=VIZ_BACKENDS)
def _plot_similarity(draw: Draw, be: Backend) -> Case:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["normalize"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["cbar"] = draw(st.booleans())
    t = _table(draw, be)
    if kw.get("normalize"):  # rows of zeros have no direction
        t = arr(be, np.asarray(be.to_numpy(t)) + 2.0)
    return _axes_case(be, (t,), kw)


@register("posenc_viz.plot_similarity_by_offset", viz=True, backends=VIZ_BACKENDS)
def _plot_similarity_by_offset(draw: Draw, be: Backend) -> Case:
    dim = even_dim(draw, 2, 128)
    kw: dict[str, Any] = {}
    args: tuple = (dim,)
    if draw(st.booleans()):
        if draw(st.booleans()):
            args = (dim, draw(st.integers(1, 200)))
        else:
            o, _ = real_array(draw, be, (draw(st.integers(1, 20)),), -300, 300, integer=True)
            args = (dim, o)
    if draw(st.booleans()):
        kw["normalize"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["kind"] = draw(st.sampled_from(["sinusoidal", "rope_bound"]))
    if draw(st.booleans()):
        kw["base"] = base(draw)
    return _axes_case(be, args, kw)


@register("posenc_viz.plot_rope_scaling", viz=True, backends=("numpy",))
def _plot_rope_scaling(draw: Draw, be: Backend) -> Case:
    dim = even_dim(draw, 4, 128)
    n = draw(st.integers(1, 3))
    scs = [s for s in (scaling_obj(draw, dim) for _ in range(n)) if s is not None] or [posenc.scaling.Linear(2.0)]
    val: Any = scs[0] if len(scs) == 1 and draw(st.booleans()) else scs
    if draw(st.booleans()) and isinstance(val, list):
        val = {f"s{i}": s for i, s in enumerate(val)}
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["quantity"] = draw(st.sampled_from(["wavelength", "frequency"]))
    if draw(st.booleans()):
        kw["seq_len"] = draw(st.integers(1, 2**17))
    for k in ("original", "context", "legend"):
        if draw(st.booleans()):
            kw[k] = draw(st.booleans())
    return _axes_case(be, (dim, val), kw)


@register("posenc_viz.plot_bias", viz=True, backends=VIZ_BACKENDS, aliases={"bias": ("head",), "head": ("bias",)})
def _plot_bias(draw: Draw, be: Backend) -> Case:
    h = draw(st.integers(1, 3))
    q, k = draw(st.integers(1, 10)), draw(st.integers(1, 10))
    kind = draw(st.sampled_from(["alibi", "t5", "rel"]))
    if kind == "alibi":
        b = posenc.alibi_bias(h, q, k, causal=draw(st.booleans()), xp=be.ns, device=be.device)
    elif kind == "t5":
        b, h = posenc.t5_buckets(q, k, xp=be.ns, device=be.device), 1
    else:
        b, h = posenc.relative_positions(q, k, xp=be.ns, device=be.device), 1
    kw: dict[str, Any] = {}
    if h > 1 or draw(st.booleans()):
        if b.ndim == 3:
            kw["head"] = draw(st.integers(0, h - 1))
    return _axes_case(be, (b,), kw)


@register("posenc_viz.plot_grid_similarity", viz=True, backends=VIZ_BACKENDS)
def _plot_grid_similarity(draw: Draw, be: Backend) -> Case:
    import matplotlib.pyplot as plt
    from matplotlib.figure import FigureBase

    h, w, prefix = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(0, 2))
    x, _ = real_array(draw, be, (prefix + h * w, draw(st.integers(1, 8))), -1.0, 1.0)
    args: tuple = (x,) if h == w and draw(st.booleans()) else (x, (h, w))
    kw: dict[str, Any] = {}
    if prefix or draw(st.booleans()):
        kw["num_prefix_tokens"] = prefix
    shown = h * w
    if draw(st.booleans()):
        chosen = draw(st.lists(st.integers(0, h * w - 1), min_size=1, max_size=5))
        kw["patches"] = [divmod(i, w) if draw(st.booleans()) else i for i in chosen]
        shown = len(chosen)
    if draw(st.booleans()):
        kw["cbar"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["fig"] = plt.figure()

    def check(r: Any) -> None:
        assert isinstance(r, FigureBase), f"expected a Figure, got {type(r).__name__}"
        if kw.get("fig") is not None:
            assert r is kw["fig"]
        maps = [ax for ax in r.axes if ax.images]
        assert len(maps) == shown and all(len(ax.images) == 1 for ax in maps), (len(maps), shown)
        assert all(ax.images[0].get_array().shape == (h, w) for ax in maps)

    return Case(be, args, kw, kind="object", check=check, cleanup=lambda: plt.close("all"))


@register("posenc_viz.load_table", viz=True, backends=("numpy",))
def _load_table(draw: Draw, be: Backend) -> Case:
    import shutil
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="posenc-hardening-"))
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=1))
    _, ref = real_array(draw, be, shape, -1e3, 1e3)
    kind = draw(st.sampled_from(["npy", "npz", "safetensors", "pt"]))
    key = draw(st.sampled_from(["pos_embed", "model.pos_embed", "vit.embeddings.position_embeddings"]))
    one = draw(st.booleans())  # a file of one array: the key may be left out
    path = folder / f"table.{kind}"
    if kind == "npy":
        np.save(path, ref)
        key = None
    elif kind == "npz":
        np.savez(path, **({key: ref} if one else {key: ref, "other": np.zeros(2)}))
    elif kind == "safetensors":
        from safetensors.numpy import save_file

        save_file({key: ref} if one else {key: ref, "other": np.zeros(2)}, str(path))
    else:
        import torch

        t = torch.asarray(ref)
        head, _, leaf = key.rpartition(".")
        state: Any = {leaf: t} if one else {leaf: t, "other": torch.zeros(2)}
        if head:
            state = {head: state} if draw(st.booleans()) else {f"{head}.{k}": v for k, v in state.items()}
        torch.save(state, path)
    args: tuple = (path if draw(st.booleans()) else str(path),)
    if key is not None and not (one and draw(st.booleans())):
        args += (key,)

    def check(r: Any) -> None:
        assert isinstance(r, np.ndarray) and r.shape == shape and r.dtype == ref.dtype, (type(r), getattr(r, "shape", None))
        np.testing.assert_array_equal(r, ref)

    return Case(be, args, {}, kind="object", check=check, cleanup=lambda: shutil.rmtree(folder, ignore_errors=True))


@register("posenc_viz.paper_style", viz=True, backends=("numpy",))
def _paper_style(draw: Draw, be: Backend) -> Case:
    import matplotlib

    kw: dict[str, Any] = {}
    args: tuple = ()
    if draw(st.booleans()):
        args = (draw(st.sampled_from(["single", "double"])),)
    if draw(st.booleans()):
        kw["aspect"] = draw(st.floats(0.1, 3.0))
    if draw(st.booleans()):
        kw["rc"] = {"lines.linewidth": draw(st.floats(0.1, 3.0))}
    before = dict(matplotlib.rcParams)

    def check(cm: Any) -> None:
        with cm:
            assert matplotlib.rcParams["pdf.fonttype"] == 42
        assert dict(matplotlib.rcParams) == before, "paper_style left rcParams changed"

    return Case(be, args, kw, kind="object", check=check)


@register("posenc_viz.figsize", viz=True, backends=("numpy",))
def _figsize(draw: Draw, be: Backend) -> Case:
    args: tuple = ()
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        args = (draw(st.sampled_from(["single", "double"])),)
    if draw(st.booleans()):
        kw["aspect"] = draw(st.floats(0.1, 3.0))

    def check(r: Any) -> None:
        assert isinstance(r, tuple) and len(r) == 2 and all(isinstance(v, float) and v > 0 and math.isfinite(v) for v in r), r

    return Case(be, args, kw, kind="object", check=check)


@register("posenc_viz.to_numpy", viz=True, aliases={"x": ("table",)})
def _to_numpy(draw: Draw, be: Backend) -> Case:
    shape = draw(shapes())
    integer = draw(st.booleans())
    x, ref = real_array(draw, be, shape, -1000, 1000, integer=integer)
    kw = {"name": "table"} if draw(st.booleans()) else {}

    def check(r: Any) -> None:
        assert isinstance(r, np.ndarray) and r.shape == shape, (type(r), getattr(r, "shape", None))
        np.testing.assert_array_equal(r, np.asarray(be.to_numpy(x)))

    return Case(be, (x,), kw, kind="object", check=check)


@register("posenc_viz.figure_set", viz=True, backends=("numpy",))
def _figure_set(draw: Draw, be: Backend) -> Case:
    import tempfile
    from pathlib import Path

    out = Path(tempfile.mkdtemp(prefix="posenc-hardening-"))
    name = draw(st.sampled_from(["wavelengths", "similarity_by_offset", "t5_buckets"]))
    fmt = draw(st.sampled_from(["svg", "png"]))
    kw: dict[str, Any] = {
        "dim": even_dim(draw, 4, 64),
        "length": draw(st.integers(1, 16)),
        "formats": (fmt,),
        "dpi": 50,
        "names": [name],
        "head_dim": even_dim(draw, 4, 32),
    }

    def check(r: Any) -> None:
        assert isinstance(r, list) and [p.name for p in r] == [f"{name}.{fmt}"], r
        assert sorted(p.name for p in out.iterdir()) == [f"{name}.{fmt}"]

    def cleanup() -> None:
        import shutil

        import matplotlib.pyplot as plt

        shutil.rmtree(out, ignore_errors=True)
        plt.close("all")

    return Case(be, (out,), kw, kind="object", check=check, cleanup=cleanup)


#: constants in ``__all__``: not called, but checked for type and immutability
CONSTANTS = {
    "posenc_viz.FIGURES": tuple,
    "posenc_viz.COLUMN_WIDTHS": object,
}


def public_names() -> list[str]:
    """Every public callable: posenc.__all__, posenc.scaling.__all__, posenc_viz.__all__."""
    import inspect

    import posenc_viz
    from posenc import scaling

    names = [n for n in posenc.__all__ if not inspect.ismodule(getattr(posenc, n))]
    names += [f"scaling.{n}" for n in scaling.__all__]
    names += [f"posenc_viz.{n}" for n in posenc_viz.__all__]
    return names


def resolve_name(name: str) -> Any:
    import posenc_viz
    from posenc import scaling

    if name.startswith("scaling."):
        return getattr(scaling, name.split(".", 1)[1])
    if name.startswith("posenc_viz."):
        return getattr(posenc_viz, name.split(".", 1)[1])
    return getattr(posenc, name)
