"""Hostile positions at the sizes where posenc's kernels take over.

The fuzz of every public function (test_fuzz.py) draws small arrays and
checks shapes, dtypes and bounds: it never reaches the kernels that start at
a size (rows of a cached range table from :data:`posenc._kernels.GATHER_MIN`
table elements, the float64 turns of torch CPU tables), and a wrong row of
valid sines would pass its checks.  Here integer positions of every width,
in orders that wrap in their own dtype (``0 - 255`` is ``1`` in uint8),
dense, repeated, reversed, permuted, strided or transposed, on NumPy, torch
CPU and the device path, at sizes on both sides of those thresholds, are
compared with the float64 formula.  (The fast path of uint8 positions
``128 .. 255, 0 .. 127`` once returned the rows of ``0 .. 255``.)
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc
from posenc import _kernels
from tests.posenc.test_rotary import ref_apply  # Hugging Face's formula in float64

torch = pytest.importorskip("torch")

#: integer dtypes and the positions drawn in each (float32 tables are exact
#: for |p| < 2**32: wider dtypes start anywhere below 2**31)
RANGES = {
    "uint8": (0, 255),
    "int8": (-128, 127),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31) + 1, 2**31 - 1),
    "uint32": (0, 2**31),
    "int64": (-(2**31), 2**31),
    "uint64": (0, 2**31),
}
ORDERS = ("arange", "rotated", "reversed", "permuted", "repeated", "sparse")
BOUND = 2.5e-7


def _values(data, dtype: str) -> np.ndarray:
    lo, hi = RANGES[dtype]
    n = data.draw(st.integers(1, 600), label="n")
    order = data.draw(st.sampled_from(ORDERS), label="order")
    if order == "sparse":
        return np.array(data.draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), dtype=np.int64)
    span = min(n, hi - lo + 1)
    start = data.draw(st.integers(lo, hi - span + 1), label="start")
    v = np.arange(start, start + span, dtype=np.int64)
    if order == "rotated":
        v = np.roll(v, data.draw(st.integers(0, span - 1), label="shift"))
    elif order == "reversed":
        v = v[::-1]
    elif order == "permuted":
        v = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed")).permutation(v)
    elif order == "repeated":
        v = np.resize(v, n)
    return v


def _on(kind: str, v: np.ndarray, dtype: str, layout: str):
    """``v`` as ``dtype`` on ``kind``, in memory laid out as ``layout``
    (positions of shape (2, k) for the 2-D layouts)."""
    two = v.size % 2 == 0 and layout != "flat"
    a = v.reshape(2, -1) if two else v
    if kind == "numpy":
        p = a.astype(dtype)
        if two and layout == "transposed":
            p = np.ascontiguousarray(p.T).T
        elif two and layout == "strided":
            p = np.repeat(p, 2, axis=1)[:, ::2]
        return p, a
    t = torch.from_numpy(a.copy()).to(getattr(torch, dtype))  # (a copy: from_numpy takes no negative strides)
    if two and layout == "transposed":
        t = t.T.contiguous().T
    elif two and layout == "strided":
        t = torch.stack([t, t], dim=-1).reshape(2, -1)[:, ::2]
    return t, a


def _formula(p: np.ndarray, dim: int, rope: bool) -> tuple[np.ndarray, np.ndarray]:
    """The exact values (the angles of the mathematical frequencies formed
    without rounding: ``sin(float64(p * w))`` is off by ``|p w| 2**-53``, 2e-7
    near 2**31)."""
    from benchmarks.accuracy import exact_angle_sincos, math_frequencies

    s, c = exact_angle_sincos(p.reshape(-1).astype(np.float64), *math_frequencies(dim))
    s, c = s.reshape(*p.shape, -1), c.reshape(*p.shape, -1)
    if rope:
        s, c = np.concatenate([s, s], axis=-1), np.concatenate([c, c], axis=-1)
    return s, c


def _np(x) -> np.ndarray:
    return x.double().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=np.float64)


@settings(max_examples=300, report_multiple_bugs=False)
@given(data=st.data())
def test_positions_of_every_width_at_the_kernels_sizes(data):
    kind = data.draw(st.sampled_from(["numpy", "torch", "torch-device"]), label="backend")
    dtype = data.draw(st.sampled_from(sorted(RANGES)), label="dtype")
    v = _values(data, dtype)
    layout = data.draw(st.sampled_from(["flat", "contiguous", "transposed", "strided"]), label="layout")
    p, values = _on("numpy" if kind == "numpy" else "torch", v, dtype, layout)
    # tables of (size x dim / 2) elements, on both sides of GATHER_MIN
    dim = data.draw(st.sampled_from([2, 16, 130, 256, 512]), label="dim")
    call = data.draw(st.sampled_from(["sinusoidal", "rope_cos_sin", "offset"]), label="call")
    offset = data.draw(st.integers(-(2**20), 2**20), label="offset") if call == "offset" else 0
    f32 = np.float32 if kind == "numpy" else torch.float32
    with _kernels.as_device() if kind == "torch-device" else contextlib.nullcontext():
        if call == "sinusoidal":
            got = (posenc.sinusoidal(p, dim, dtype=f32),)
        else:
            got = posenc.rope_cos_sin(p, dim, offset=offset, dtype=f32)
    s, c = _formula(values + offset, dim, rope=call != "sinusoidal")
    wants = (_interleaved(s, c, dim),) if call == "sinusoidal" else (c, s)
    _within(got, wants, BOUND, (kind, dtype, layout, dim, call))


def _interleaved(s: np.ndarray, c: np.ndarray, dim: int) -> np.ndarray:
    """A sinusoidal table ``sin, cos, sin, cos, ...`` of ``dim`` columns (a
    zero last one for odd ``dim``)."""
    want = np.zeros((*s.shape[:-1], dim))
    want[..., 0 : 2 * s.shape[-1] : 2], want[..., 1 : 2 * s.shape[-1] : 2] = s, c
    return want


def _within(got, wants, bound: float, what) -> None:
    """Each array of ``got`` has the shape of its ``wants`` and lies within ``bound`` of it."""
    for g, w in zip(got, wants):
        g = _np(g)
        assert g.shape == w.shape, (what, g.shape, w.shape)
        err = float(np.abs(g - w).max()) if g.size else 0.0
        assert err <= bound, (*what, err)


#: real dtypes of positions and the magnitudes drawn in each: float32 tables
#: are exact for real |p| < 2**22 (bfloat16 and float16 hold only a few
#: integers that large: their positions stay below 2**15)
REALS = {"float16": 2.0**15, "bfloat16": 2.0**15, "float32": 2.0**22, "float64": 2.0**22}


@settings(max_examples=200, report_multiple_bugs=False)
@given(data=st.data())
def test_real_positions_at_the_kernels_sizes(data):
    """Real positions (sinusoidal, rope_cos_sin, timestep_embedding) on
    both sides of the kernels' thresholds: the float64 turns of torch CPU
    tables from :data:`posenc._kernels.angles.F64_MIN` elements while the
    angles stay below :data:`~posenc._kernels.angles.F64_ANGLE_LIMIT`, the
    exact reduction beyond; strided and transposed; against the exact values."""
    from benchmarks.accuracy import exact_angle_sincos

    kind = data.draw(st.sampled_from(["numpy", "torch", "torch-device"]), label="backend")
    dtype = data.draw(st.sampled_from(sorted(REALS)), label="dtype")
    if kind == "numpy" and dtype == "bfloat16":
        dtype = "float32"
    top = min(data.draw(st.sampled_from([1.0, 1000.0, 2.0**16, REALS[dtype]]), label="top"), REALS[dtype])
    n = data.draw(st.integers(1, 600), label="n")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    v = np.random.default_rng(seed).uniform(-top, top, n)
    layout = data.draw(st.sampled_from(["flat", "contiguous", "transposed", "strided"]), label="layout")
    if kind == "numpy":
        p, _ = _on("numpy", v, dtype, layout)
        values = np.asarray(p, dtype=np.float64)
    else:
        p, _ = _on("torch", v, dtype, layout)
        values = p.double().numpy()
    dim = data.draw(st.sampled_from([2, 16, 130, 320, 512]), label="dim")
    call = data.draw(st.sampled_from(["sinusoidal", "rope_cos_sin", "timestep_embedding"]), label="call")
    f32 = np.float32 if kind == "numpy" else torch.float32
    with _kernels.as_device() if kind == "torch-device" else contextlib.nullcontext():
        if call == "sinusoidal":
            got = (posenc.sinusoidal(p, dim, dtype=f32),)
        elif call == "rope_cos_sin":
            got = posenc.rope_cos_sin(p, dim, dtype=f32)
        else:
            got = (posenc.timestep_embedding(p, dim, downscale_freq_shift=0.0, dtype=f32),)
    if call == "timestep_embedding":  # diffusers' spacing with shift 0: exp(-ln(10000) i / (dim // 2))
        from benchmarks.accuracy import math_frequencies

        s, c = exact_angle_sincos(values.reshape(-1), *math_frequencies(2 * (dim // 2)))
    else:
        s, c = _formula(values, dim, rope=call == "rope_cos_sin")
    s, c = s.reshape(*values.shape, -1), c.reshape(*values.shape, -1)
    if call == "sinusoidal":
        wants = (_interleaved(s, c, dim),)
    elif call == "timestep_embedding":
        want = np.zeros((*values.shape, dim))
        h = s.shape[-1]
        want[..., :h], want[..., h : 2 * h] = s, c
        wants = (want,)
    else:
        wants = (c, s)
    _within(got, wants, BOUND, (kind, dtype, layout, dim, call, top))


#: x dtypes of the rotation and their unit roundoff
EPS = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}


@settings(max_examples=200, report_multiple_bugs=False)
@given(data=st.data())
def test_rotations_at_the_kernels_sizes(data):
    """``apply_rope`` of queries (and keys) of every float dtype, laid out
    contiguous, transposed ``(batch, seq, heads, dim)`` with ``heads_axis``
    or strided, with full, partial or compact tables of another dtype that
    broadcast over the heads, at sizes on both sides of the rotation kernels'
    thresholds, on NumPy, torch and the device path, against the float64
    formula (the tables need not be cosines: any values are rotated alike)."""
    kind = data.draw(st.sampled_from(["numpy", "torch", "torch-device"]), label="backend")
    names = ["float16", "float32", "float64"] + (["bfloat16"] if kind != "numpy" else [])
    xdt = data.draw(st.sampled_from(names), label="x dtype")
    tdt = data.draw(st.sampled_from([xdt, "float32", "float64", "float16"]), label="table dtype")
    b, h, kh = data.draw(st.integers(1, 2), label="b"), data.draw(st.integers(1, 8), label="h"), 0
    if data.draw(st.booleans(), label="with k"):
        kh = data.draw(st.integers(1, 8), label="k heads")
    seq = data.draw(st.integers(1, 300), label="seq")
    d = 2 * data.draw(st.integers(1, 64), label="d/2")
    rd = 2 * data.draw(st.integers(1, d // 2), label="rotary/2")
    layout = data.draw(st.sampled_from(["half", "interleaved"]), label="layout")
    compact = data.draw(st.booleans(), label="compact")
    form = data.draw(st.sampled_from(["bhsd", "bshd", "heads axis 2", "strided"]), label="x layout")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    # values that every dtype holds exactly (the oracle sees what the call sees)
    xs = [rng.uniform(-4, 4, (b, n, seq, d)) for n in ([h, kh] if kh else [h])]
    width = rd // 2 if compact else rd
    c = rng.uniform(-1, 1, (b, seq, width))
    s = rng.uniform(-1, 1, (b, seq, width))

    def to(a: np.ndarray, dt: str):
        if kind == "numpy":
            return a.astype(dt)
        return torch.from_numpy(a).to(getattr(torch, dt))

    def back(a) -> np.ndarray:
        return _np(a)

    xs_b = [to(x, xdt) for x in xs]
    xs = [back(x) for x in xs_b]  # rounded to the dtype
    c_b, s_b = to(c, tdt), to(s, tdt)
    c, s = back(c_b), back(s_b)
    if form == "bshd":  # (batch, seq, heads, dim) views of the same values
        if kind == "numpy":
            xs_b = [x.transpose(0, 2, 1, 3).copy().transpose(0, 2, 1, 3) for x in xs_b]
        else:
            xs_b = [x.transpose(1, 2).contiguous().transpose(1, 2) for x in xs_b]
    elif form == "strided":
        if kind == "numpy":
            xs_b = [np.repeat(x, 2, axis=-1)[..., ::2] for x in xs_b]
        else:
            xs_b = [torch.stack([x, x], dim=-1).reshape(*x.shape[:-1], 2 * d)[..., ::2] for x in xs_b]
    heads_axis = 1
    if form == "heads axis 2":  # x of shape (batch, seq, heads, dim), its own memory order
        xs_b = [x.transpose(0, 2, 1, 3).copy() if kind == "numpy" else x.transpose(1, 2).contiguous() for x in xs_b]
        heads_axis = data.draw(st.sampled_from([2, -2]), label="heads_axis")
    arg = tuple(xs_b) if len(xs_b) > 1 else xs_b[0]
    with _kernels.as_device() if kind == "torch-device" else contextlib.nullcontext():
        got = posenc.apply_rope(arg, c_b, s_b, layout=layout, compact=compact, heads_axis=heads_axis)
    got = got if isinstance(got, tuple) else (got,)
    if form == "heads axis 2":  # back to (batch, heads, seq, dim) for the oracle
        got = tuple(g.transpose(0, 2, 1, 3) if kind == "numpy" else g.transpose(1, 2) for g in got)
    if compact:
        full = (lambda t: np.concatenate([t, t], -1)) if layout == "half" else (lambda t: np.repeat(t, 2, -1))
        c, s = full(c), full(s)
    wants = [ref_apply(x, c[:, None], s[:, None], layout, c.shape[-1]) for x in xs]
    # a float32 (float64) result within a few roundings; a half one rounded once more
    tol = (8 * 2.0**-24 if xdt != "float64" else 8 * 2.0**-53) * 8 + 2 * EPS[xdt] * 8
    _within(got, wants, tol, (kind, xdt, tdt, form, layout, compact, rd, d))


@settings(max_examples=150, report_multiple_bugs=False)
@given(data=st.data())
def test_rope_in_one_call_at_the_kernels_sizes(data):
    """``rope(x, positions, offset=...)`` of integer or real position ids
    ``(batch, seq)`` with ``heads_axis``, partial rotary, both layouts, on
    both sides of the decode step's one-pass lane and of the blocked
    rotations, on NumPy, torch and the device path, against the formula on
    the exact angles."""
    from benchmarks.accuracy import exact_angle_sincos, math_frequencies

    kind = data.draw(st.sampled_from(["numpy", "torch", "torch-device"]), label="backend")
    xdt = data.draw(st.sampled_from(["float32", "float64"] + (["bfloat16"] if kind != "numpy" else [])), label="x")
    pdt = data.draw(st.sampled_from(["int32", "int64", "uint16", "float32", "float64"]), label="positions")
    b, h = data.draw(st.integers(1, 2), label="b"), data.draw(st.integers(1, 8), label="h")
    seq = data.draw(st.integers(1, 200), label="seq")
    d = 2 * data.draw(st.integers(1, 64), label="d/2")
    rd = 2 * data.draw(st.integers(1, d // 2), label="rotary/2")
    layout = data.draw(st.sampled_from(["half", "interleaved"]), label="layout")
    offset = data.draw(st.sampled_from([0, 0, 7, 4096, -3]), label="offset")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    top = 60000 if pdt == "uint16" else 2**20
    pos = rng.integers(0, top, (b, seq)).astype(np.float64)
    if pdt.startswith("float"):
        pos += rng.uniform(0, 1, (b, seq))
    if offset < 0 and pdt == "uint16":
        offset = 3
    x = rng.uniform(-4, 4, (b, h, seq, d))
    if kind == "numpy":
        xa, pa = x.astype(xdt), pos.astype(pdt)
    else:
        xa = torch.from_numpy(x).to(getattr(torch, xdt))
        pa = torch.from_numpy(pos).to(getattr(torch, pdt))
    xv, pv = _np(xa), _np(pa)
    with _kernels.as_device() if kind == "torch-device" else contextlib.nullcontext():
        got = posenc.rope(xa, pa, layout=layout, rotary_dim=rd, offset=offset, heads_axis=1)
    s, c = exact_angle_sincos((pv + offset).reshape(-1), *math_frequencies(rd))
    s, c = s.reshape(b, 1, seq, -1), c.reshape(b, 1, seq, -1)
    if layout == "half":
        s, c = np.concatenate([s, s], -1), np.concatenate([c, c], -1)
    else:
        s, c = np.repeat(s, 2, -1), np.repeat(c, 2, -1)
    # the tables' error (2.5e-7) times |x| <= 4 in each of two products, and the rounding of the result
    tol = 4 * 2 * 2.5e-7 + 8 * 4 * EPS[xdt] * 2
    _within((got,), (ref_apply(xv, c, s, layout, c.shape[-1]),), tol, (kind, xdt, pdt, layout, rd, d, offset))


@settings(max_examples=150, report_multiple_bugs=False)
@given(data=st.data())
def test_rope_axes_at_the_kernels_sizes(data):
    """``rope_axes_cos_sin`` of integer or real ids ``(..., n_axes)`` (Flux's
    three axes, Wan's, DINOv3's normalised coordinates in turns), both
    layouts, per-axis bases, on NumPy, torch and the device path, on both
    sides of the kernels' sizes, against the exact angles of each axis."""
    import mpmath

    from benchmarks.accuracy import exact_angle_sincos

    kind = data.draw(st.sampled_from(["numpy", "torch", "torch-device"]), label="backend")
    pdt = data.draw(st.sampled_from(["int32", "int64", "uint16", "float32", "float64"]), label="ids")
    axes = data.draw(st.sampled_from([(16, 56, 56), (44, 42, 42), (32, 32), (8,), (2, 4, 6)]), label="axes")
    bases = data.draw(st.sampled_from([10000.0, 256.0, tuple(100.0 * (k + 1) for k in range(len(axes)))]), label="base")
    layout = data.draw(st.sampled_from(["interleaved", "half"]), label="layout")
    turns = pdt.startswith("float") and data.draw(st.booleans(), label="turns")
    n = data.draw(st.integers(1, 5000), label="n")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    ids = rng.integers(0, 4096, (n, len(axes))).astype(np.float64)
    if pdt.startswith("float"):
        ids = rng.uniform(-1, 1, (n, len(axes))) if turns else ids + rng.uniform(0, 1, (n, len(axes)))
    ia = ids.astype(pdt) if kind == "numpy" else torch.from_numpy(ids).to(getattr(torch, pdt))
    iv = _np(ia)
    with _kernels.as_device() if kind == "torch-device" else contextlib.nullcontext():
        c, s = posenc.rope_axes_cos_sin(ia, axes, base=bases, layout=layout, turns=turns)
    bs = bases if isinstance(bases, tuple) else (bases,) * len(axes)
    ss, cs = [], []
    for k, (dk, bk) in enumerate(zip(axes, bs)):
        with mpmath.workprec(200):
            unit = 2 * mpmath.pi if turns else 1
            exact = [mpmath.mpf(bk) ** (-mpmath.mpf(2 * i) / dk) * unit for i in range(dk // 2)]
            hi = np.array([float(x) for x in exact])
            lo = np.array([float(x - mpmath.mpf(float(h))) for x, h in zip(exact, hi)])
        sk, ck = exact_angle_sincos(iv[:, k], hi, lo)
        ss.append(sk)
        cs.append(ck)
    s_all, c_all = np.concatenate(ss, -1), np.concatenate(cs, -1)
    if layout == "interleaved":
        ws, wc = np.repeat(s_all, 2, -1), np.repeat(c_all, 2, -1)
    else:
        ws, wc = np.concatenate([s_all, s_all], -1), np.concatenate([c_all, c_all], -1)
    _within((c, s), (wc, ws), BOUND, (kind, pdt, axes, bases, layout, turns, n))


def _mp_pairs(values) -> tuple[np.ndarray, np.ndarray]:
    """mpmath numbers as float64 pairs ``(hi, lo)``."""
    import mpmath

    hi = np.array([float(x) for x in values])
    lo = np.array([float(x - mpmath.mpf(float(h))) for x, h in zip(values, hi)])
    return hi, lo


@settings(max_examples=150, report_multiple_bugs=False)
@given(data=st.data())
def test_table_options_at_the_kernels_sizes(data):
    """The options of the sinusoidal and timestep tables at the kernels'
    sizes: ``convention`` (paper, fairseq, tensor2tensor), ``layout``
    (interleaved, concat), odd ``dim`` (a zero column), ``padding_idx``;
    ``flip_sin_to_cos``, ``downscale_freq_shift``, ``scale`` and
    ``max_period``, against the exact frequencies (mpmath) and angles."""
    import mpmath

    from benchmarks.accuracy import exact_angle_sincos

    kind = data.draw(st.sampled_from(["numpy", "torch", "torch-device"]), label="backend")
    call = data.draw(st.sampled_from(["sinusoidal", "timestep_embedding"]), label="call")
    pdt = data.draw(st.sampled_from(["int64", "int32", "float32", "float64"]), label="positions")
    n = data.draw(st.integers(1, 3000), label="n")
    dim = data.draw(st.integers(2, 330), label="dim")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    v = rng.integers(0, 2000, n).astype(np.float64)
    if pdt.startswith("float"):
        v += rng.uniform(0, 1, n)
    pa = v.astype(pdt) if kind == "numpy" else torch.from_numpy(v).to(getattr(torch, pdt))
    pv = _np(pa)
    half = dim // 2
    f32 = np.float32 if kind == "numpy" else torch.float32
    ctx = _kernels.as_device() if kind == "torch-device" else contextlib.nullcontext()
    if call == "sinusoidal":
        convention = data.draw(st.sampled_from(["paper", "fairseq", "tensor2tensor"]), label="convention")
        layout = data.draw(st.sampled_from(["interleaved", "concat"]), label="layout")
        pad = data.draw(st.sampled_from([None, 1, int(v[0]) if pdt.startswith("int") else None]), label="padding_idx")
        with ctx:
            got = posenc.sinusoidal(pa, dim, convention=convention, layout=layout, padding_idx=pad, dtype=f32)
        with mpmath.workprec(200):
            if convention == "paper":
                w = [mpmath.mpf(10000) ** (-mpmath.mpf(2 * i) / dim) for i in range(half)]
            else:  # fairseq and tensor2tensor (min 1, max 10000): exp(-i ln(10000) / (half - 1))
                w = [mpmath.exp(-i * mpmath.log(10000) / max(half - 1, 1)) for i in range(half)]
            hi, lo = _mp_pairs(w)
        s, c = exact_angle_sincos(pv, hi, lo)
        if layout == "interleaved":
            want = _interleaved(s, c, dim)
        else:
            want = np.zeros((n, dim))
            want[:, :half], want[:, half : 2 * half] = s, c
        if pad is not None:
            want[pv == pad] = 0.0
    else:
        flip = data.draw(st.booleans(), label="flip")
        shift = data.draw(st.sampled_from([0.0, 1.0, 0.5]), label="shift")
        scale = data.draw(st.sampled_from([1.0, 1000.0, 0.25]), label="scale")
        period = data.draw(st.sampled_from([10000.0, 10.0, 1e6]), label="max_period")
        if half > 1 and not half - shift > 0:
            shift = 0.0
        with ctx:
            got = posenc.timestep_embedding(
                pa, dim, flip_sin_to_cos=flip, downscale_freq_shift=shift, scale=scale, max_period=period, dtype=f32
            )
        with mpmath.workprec(200):
            den = mpmath.mpf(half) - mpmath.mpf(shift)
            # (i = 0: the exponent 0 whatever the denominator, 0 for dim 2 or 3 with shift 1)
            ln = mpmath.log(mpmath.mpf(period))
            w = [mpmath.mpf(scale) * mpmath.exp(-ln * i / den if i else 0) for i in range(half)]
            hi, lo = _mp_pairs(w)
        s, c = exact_angle_sincos(pv, hi, lo)
        want = np.zeros((n, dim))
        want[:, :half], want[:, half : 2 * half] = (c, s) if flip else (s, c)
    _within((got,), (want,), BOUND, (kind, call, pdt, n, dim))


@settings(max_examples=60, report_multiple_bugs=False)
@given(data=st.data())
def test_rotary_module_over_a_run_of_calls(data):
    """``posenc.torch.RotaryEmbedding`` over a run of calls (its cache grows,
    ids fall outside it, are negative, of every integer dtype, offsets are
    ints or 0-d tensors), float32 / float64 / bfloat16 tables, both layouts,
    on torch and the device path: each call's rotation against the formula
    on the exact angles of its positions."""
    from benchmarks.accuracy import exact_angle_sincos, math_frequencies
    from posenc.torch import RotaryEmbedding

    kind = data.draw(st.sampled_from(["torch", "torch-device"]), label="backend")
    dim = 2 * data.draw(st.integers(1, 32), label="dim/2")
    base = data.draw(st.sampled_from([10000.0, 500000.0]), label="base")
    layout = data.draw(st.sampled_from(["half", "interleaved"]), label="layout")
    mdt = data.draw(st.sampled_from(["float32", "float64", "bfloat16"]), label="tables")
    cap = data.draw(st.sampled_from([1, 16, 300]), label="max_positions")
    hi, lo = math_frequencies(dim, base)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    with _kernels.as_device() if kind == "torch-device" else contextlib.nullcontext():
        m = RotaryEmbedding(dim, base=base, layout=layout, max_positions=cap, dtype=getattr(torch, mdt))
        for step in range(data.draw(st.integers(1, 4), label="calls")):
            seq = data.draw(st.integers(1, 64), label=f"seq {step}")
            how = data.draw(st.sampled_from(["offset", "tensor offset", "ids", "batch ids"]), label=f"how {step}")
            q = torch.from_numpy(rng.uniform(-2, 2, (2, 3, seq, dim))).to(getattr(torch, mdt))
            k = torch.from_numpy(rng.uniform(-2, 2, (2, 1, seq, dim))).to(getattr(torch, mdt))
            if how in ("offset", "tensor offset"):
                off = data.draw(st.integers(0, 5000), label=f"offset {step}")
                pos = np.broadcast_to(np.arange(off, off + seq), (2, seq))
                arg = {"offset": off if how == "offset" else torch.tensor(off)}
            else:
                idt = data.draw(st.sampled_from(["int64", "int32", "int16", "uint8", "uint16"]), label=f"ids {step}")
                top = 255 if idt == "uint8" else 30000
                bottom = 0 if idt.startswith("u") else -300
                shape = (seq,) if how == "ids" else (2, seq)
                ids = rng.integers(bottom, top, shape)
                pos = np.broadcast_to(ids, (2, seq))
                arg = {"position_ids": torch.from_numpy(ids).to(getattr(torch, idt))}
            qo, ko = m(q, k, **arg)
            s, c = exact_angle_sincos(pos.reshape(-1).astype(np.float64), hi, lo)
            s, c = s.reshape(2, 1, seq, -1), c.reshape(2, 1, seq, -1)
            if layout == "half":
                s, c = np.concatenate([s, s], -1), np.concatenate([c, c], -1)
            else:
                s, c = np.repeat(s, 2, -1), np.repeat(c, 2, -1)
            # the tables rounded to their dtype, the products and the sum rounded in it (bf16: in float32, once)
            tol = {"float64": 1e-12, "float32": 4e-6, "bfloat16": 0.07}[mdt]
            for got, x in ((qo, q), (ko, k)):
                want = ref_apply(_np(x), c, s, layout, c.shape[-1])
                err = float(np.abs(_np(got) - want).max())
                assert err <= tol, (kind, mdt, layout, how, step, err)


@settings(max_examples=100, report_multiple_bugs=False)
@given(data=st.data())
def test_add_sinusoidal_at_the_kernels_sizes(data):
    """``add_sinusoidal(x, offset=..., input_scale=...)`` of embeddings of
    every float dtype, any leading axes, strided, on NumPy, torch and the
    device path, called twice (the second call reads the kept table), against
    ``x * input_scale`` plus the exact table."""
    from benchmarks.accuracy import exact_angle_sincos, math_frequencies

    kind = data.draw(st.sampled_from(["numpy", "torch", "torch-device"]), label="backend")
    xdt = data.draw(st.sampled_from(["float32", "float64", "float16"] + (["bfloat16"] if kind != "numpy" else [])))
    lead = data.draw(st.sampled_from([(), (2,), (1, 3)]), label="lead")
    seq = data.draw(st.integers(1, 700), label="seq")
    dim = data.draw(st.integers(1, 200), label="dim")
    offset = data.draw(st.sampled_from([0, 1, 4096, 2**20]), label="offset")
    scale = data.draw(st.sampled_from([1.0, 8.0]), label="input_scale")
    strided = data.draw(st.booleans(), label="strided")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = rng.uniform(-1, 1, (*lead, seq, dim))
    if kind == "numpy":
        xa = x.astype(xdt)
        xa = np.repeat(xa, 2, axis=-1)[..., ::2] if strided else xa
    else:
        xa = torch.from_numpy(x).to(getattr(torch, xdt))
        xa = torch.stack([xa, xa], -1).reshape(*xa.shape[:-1], 2 * dim)[..., ::2] if strided else xa
    xv = _np(xa)
    with _kernels.as_device() if kind == "torch-device" else contextlib.nullcontext():
        outs = [posenc.add_sinusoidal(xa, offset=offset, input_scale=scale) for _ in range(2)]
    s, c = exact_angle_sincos(np.arange(offset, offset + seq, dtype=np.float64), *math_frequencies(dim))
    want = xv * scale + _interleaved(s, c, dim)
    eps = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}[xdt]
    tol = 2.5e-7 + 4 * eps * (scale + 1)  # the table's bound, the rounding of the table and of the sum
    assert all(str(out.dtype).endswith(xdt) for out in outs)
    _within(outs, (want, want), tol, (kind, xdt, lead, seq, dim, offset, scale, strided))


def _mrope_axis(sections: tuple[int, int, int], interleaved: bool) -> np.ndarray:
    """The axis (0 temporal, 1 height, 2 width) of each frequency: contiguous
    sections (Qwen2-VL), or Qwen3-VL's turns (transformers'
    ``apply_interleaved_mrope``: height at ``1, 4, ...`` below ``3 *
    sections[1]``, width at ``2, 5, ...`` below ``3 * sections[2]``)."""
    m = sum(sections)
    if not interleaved:
        return np.repeat(np.arange(3), sections)
    axis = np.zeros(m, dtype=int)
    for a in (1, 2):
        axis[a : 3 * sections[a] : 3] = a
    return axis


@settings(max_examples=100, report_multiple_bugs=False)
@given(data=st.data())
def test_mrope_at_the_kernels_sizes(data):
    """``mrope_cos_sin`` of ``(3, batch, seq)`` ids of every integer width
    and real ones, contiguous or interleaved sections, both layouts, on
    NumPy, torch and the device path, against each frequency's exact angle
    of its axis's position."""
    from benchmarks.accuracy import exact_angle_sincos, math_frequencies

    kind = data.draw(st.sampled_from(["numpy", "torch", "torch-device"]), label="backend")
    pdt = data.draw(st.sampled_from(["int64", "int32", "uint16", "uint8", "float32"]), label="ids")
    dim = 2 * data.draw(st.sampled_from([3, 12, 64]), label="dim/2")
    m = dim // 2
    a = data.draw(st.integers(0, m), label="t section")
    b = data.draw(st.integers(0, m - a), label="h section")
    sections = (a, b, m - a - b)
    interleaved = data.draw(st.booleans(), label="interleaved")
    layout = data.draw(st.sampled_from(["half", "interleaved"]), label="layout")
    bsz, seq = data.draw(st.integers(1, 2), label="batch"), data.draw(st.integers(1, 1500), label="seq")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    ids = rng.integers(0, 255 if pdt == "uint8" else 5000, (3, bsz, seq)).astype(np.float64)
    if pdt.startswith("float"):
        ids += rng.uniform(0, 1, ids.shape)
    ia = ids.astype(pdt) if kind == "numpy" else torch.from_numpy(ids).to(getattr(torch, pdt))
    iv = _np(ia)
    with _kernels.as_device() if kind == "torch-device" else contextlib.nullcontext():
        c, s = posenc.mrope_cos_sin(ia, dim, mrope_section=sections, mrope_interleaved=interleaved, layout=layout)
    hi, lo = math_frequencies(dim)
    axis = _mrope_axis(sections, interleaved)
    ws, wc = np.empty((bsz, seq, m)), np.empty((bsz, seq, m))
    for ax in range(3):
        cols = np.flatnonzero(axis == ax)
        if cols.size:
            sa, ca = exact_angle_sincos(iv[ax].reshape(-1), hi[cols], lo[cols])
            ws[..., cols], wc[..., cols] = sa.reshape(bsz, seq, -1), ca.reshape(bsz, seq, -1)
    lay = (lambda t: np.concatenate([t, t], -1)) if layout == "half" else (lambda t: np.repeat(t, 2, -1))
    _within((c, s), (lay(wc), lay(ws)), BOUND, (kind, pdt, sections, interleaved, layout))


@settings(max_examples=80, report_multiple_bugs=False)
@given(data=st.data())
def test_rope_cache_formats_at_the_kernels_sizes(data):
    """``rope_cache(n, dim, format=...)`` in every layout of the fused
    kernels, float32 / float64 / complex64 / complex128, on NumPy, torch and
    the device path, up to tables of the kernels' sizes, against the exact
    angles (and a second call, the table handed out again, equal)."""
    from benchmarks.accuracy import exact_angle_sincos, math_frequencies

    kind = data.draw(st.sampled_from(["numpy", "torch", "torch-device"]), label="backend")
    fmt = data.draw(st.sampled_from(["vllm", "flashinfer", "flash_attn", "hf", "complex"]), label="format")
    n = data.draw(st.integers(1, 3000), label="n")
    dim = 2 * data.draw(st.integers(1, 64), label="dim/2")
    base = data.draw(st.sampled_from([10000.0, 500000.0]), label="base")
    ns = np if kind == "numpy" else torch
    kw: dict = {"format": fmt, "base": base, "xp": ns}
    if fmt == "hf":
        kw["layout"] = data.draw(st.sampled_from(["half", "interleaved"]), label="layout")
    if fmt == "complex":
        kw["dtype"] = data.draw(st.sampled_from([ns.complex64, ns.complex128]), label="dtype")
    elif fmt != "flashinfer":
        kw["dtype"] = data.draw(st.sampled_from([ns.float32, ns.float64]), label="dtype")
    with _kernels.as_device() if kind == "torch-device" else contextlib.nullcontext():
        got, again = (posenc.rope_cache(n, dim, **kw) for _ in range(2))
    s, c = exact_angle_sincos(np.arange(n, dtype=np.float64), *math_frequencies(dim, base))
    if fmt in ("vllm", "flashinfer"):
        parts, wants = (got,), (np.concatenate([c, s], -1),)
    elif fmt == "flash_attn":
        parts, wants = got, (c, s)
    elif fmt == "hf":
        lay = (lambda t: np.concatenate([t, t], -1)) if kw["layout"] == "half" else (lambda t: np.repeat(t, 2, -1))
        parts, wants = got, (lay(c), lay(s))
    else:  # complex: cos + i sin, compared as its two parts
        z = got.numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
        parts, wants = (z.real, z.imag), (c, s)
    _within(parts, wants, BOUND, (kind, fmt, n, dim))
    for a, b in zip(got if isinstance(got, tuple) else (got,), again if isinstance(again, tuple) else (again,)):
        assert (np.asarray(a) == np.asarray(b)).all() if kind == "numpy" else torch.equal(a, b)
