"""N-D sincos grids and axial RoPE (resampling: test_resample.py).

Oracles: the golden tables of ``data/grid_golden.npz`` (float64 transcriptions
of MAE's, timm's and positional-encodings' published code, made by
``data/make_grid_golden.py``), float64 formulas written here from the
definitions and a float64 rotation for RoPE.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def golden():
    with np.load(DATA / "grid_golden.npz") as f:
        return {k: f[k] for k in f.files}


# ---------------------------------------------------------------- oracles
def ref_sincos(coords, dim, base=10000.0, order="mae"):
    """float64 table from the definitions: axis k gets m = dim / (2 ndim) pairs
    of frequency base**(-i/m); ``order`` places the columns."""
    coords = np.asarray(coords, dtype=np.float64)
    nd = coords.shape[-1]
    m = math.ceil(dim / (2 * nd)) if order == "interleaved" else dim // (2 * nd)
    w = np.array([base ** (-i / m) for i in range(m)])
    sin = [np.sin(coords[..., k, None] * w) for k in range(nd)]
    cos = [np.cos(coords[..., k, None] * w) for k in range(nd)]
    cols = []
    if order == "mae":  # last axis (x) first, [sin | cos] per axis
        for k in reversed(range(nd)):
            cols += [sin[k], cos[k]]
    elif order == "timm":  # all sines, then all cosines, axes in grid order
        cols = sin + cos
    elif order == "blocks":
        for k in range(nd):
            cols += [sin[k], cos[k]]
    else:
        for k in range(nd):
            inter = np.empty(sin[k].shape[:-1] + (2 * m,))
            inter[..., 0::2] = sin[k]
            inter[..., 1::2] = cos[k]
            cols.append(inter)
    return np.concatenate(cols, axis=-1)[..., :dim]


def grid_coords(shape):
    return np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing="ij"), axis=-1)


# ---------------------------------------------------------------- golden (peers' formulas)
def test_golden_script_reproduces_the_data(golden):
    spec = importlib.util.spec_from_file_location("make_grid_golden", DATA / "make_grid_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fresh = mod.cases()
    assert sorted(fresh) == sorted(golden)
    for k, v in fresh.items():
        np.testing.assert_allclose(golden[k], v, rtol=0, atol=1e-15, err_msg=k)


def test_golden_mae(xp, golden):
    tol = xp.tol() * 2
    got = xp.call(posenc.sincos_grid, (14, 14), 64, cls_token=True, xp=xp.ns, device=xp.device)
    xp.assert_close(got, golden["mae_14x14_d64_cls"], atol=tol, dtype=xp.default_float)
    got = xp.call(posenc.sincos_grid, (3, 5), 16, order="mae", flatten=True, xp=xp.ns, device=xp.device)
    xp.assert_close(got, golden["mae_3x5_d16"], atol=tol)
    got = xp.call(posenc.sincos_grid, (9,), 12, xp=xp.ns, device=xp.device)
    xp.assert_close(got, golden["mae_1d_n9_d12"], atol=tol)


def test_golden_mae_coords(xp, golden):
    # the same table through arbitrary coordinates (the integer grid, 'ij')
    c = xp.asarray(grid_coords((3, 5)).astype(np.float32))
    got = xp.call(posenc.sincos_coords, c, 16)
    xp.assert_close(got, golden["mae_3x5_d16"].reshape(3, 5, 16), atol=xp.tol() * 2)


def test_golden_timm(xp, golden):
    tol = xp.tol() * 2
    kw = dict(order="timm", flatten=True, xp=xp.ns, device=xp.device)
    xp.assert_close(xp.call(posenc.sincos_grid, (3, 5), 16, **kw), golden["timm_3x5_d16"], atol=tol)
    xp.assert_close(xp.call(posenc.sincos_grid, (4, 6), 32, base=100.0, **kw), golden["timm_4x6_d32_t100"], atol=tol)
    # reverse_coord=True reverses feat_shape: the table of the (W, H) grid
    xp.assert_close(xp.call(posenc.sincos_grid, (5, 3), 16, **kw), golden["timm_3x5_d16_reverse"], atol=tol)
    kw["order"] = "blocks"  # interleave_sin_cos=True
    xp.assert_close(xp.call(posenc.sincos_grid, (3, 5), 16, **kw), golden["timm_3x5_d16_interleave"], atol=tol)


@pytest.mark.parametrize(
    ("key", "shape", "dim"),
    [
        ("pe_1d_n7_c10", (7,), 10),
        ("pe_1d_n7_c9", (7,), 9),
        ("pe_2d_3x4_c16", (3, 4), 16),
        ("pe_2d_3x4_c10", (3, 4), 10),
        ("pe_3d_2x3x4_c18", (2, 3, 4), 18),
        ("pe_3d_2x3x4_c14", (2, 3, 4), 14),
    ],
)
def test_golden_positional_encodings(xp, golden, key, shape, dim):
    got = xp.call(posenc.sincos_grid, shape, dim, order="interleaved", xp=xp.ns, device=xp.device)
    xp.assert_close(got, golden[key], atol=xp.tol() * 2)


# ---------------------------------------------------------------- definitions, every order and rank
@pytest.mark.parametrize("order", ["mae", "timm", "blocks", "interleaved"])
@pytest.mark.parametrize(("shape", "dim"), [((11,), 6), ((3, 7), 12), ((7, 3), 8), ((2, 3, 5), 12), ((4, 1, 3), 24)])
def test_sincos_grid_orders(xp, order, shape, dim):
    got = xp.call(posenc.sincos_grid, shape, dim, order=order, base=300.0, xp=xp.ns, device=xp.device)
    want = ref_sincos(grid_coords(shape), dim, base=300.0, order=order)
    xp.assert_close(got, want, atol=xp.tol() * 2, dtype=xp.default_float)


def test_sincos_grid_1d_is_the_sinusoidal_table():
    np.testing.assert_allclose(posenc.sincos_grid((50,), 16), posenc.sinusoidal(50, 16, layout="concat"), atol=1e-15)
    np.testing.assert_allclose(
        posenc.sincos_grid((50,), 16, order="interleaved"), posenc.sinusoidal(50, 16), atol=1e-15
    )


def test_orders_are_permutations_of_one_another():
    # same values, different column positions; only "mae" swaps the axes
    t = {o: posenc.sincos_grid((4, 6), 16, order=o) for o in ("mae", "timm", "blocks", "interleaved")}
    for o in t:
        np.testing.assert_allclose(np.sort(t[o], axis=-1), np.sort(t["mae"], axis=-1), atol=1e-15)
    assert not np.allclose(t["mae"], t["blocks"])
    np.testing.assert_allclose(t["mae"][..., :8], t["blocks"][..., 8:], atol=0)


def test_sincos_grid_float32_is_exact_at_large_grids():
    shape = (4096, 3)
    got = posenc.sincos_grid(shape, 32, order="timm", dtype=np.float32)
    want = ref_sincos(grid_coords(shape), 32, order="timm")
    assert np.abs(got - want).max() < 3e-7


@pytest.mark.parametrize("order", ["mae", "timm", "interleaved"])
def test_sincos_coords_fractional(xp, order):
    rng = np.random.default_rng(0)
    # multiples of 2**-10: exact in float32, so every backend encodes the same points
    c = np.round(rng.uniform(-300, 300, size=(4, 5, 2)) * 1024) / 1024
    dt = "float64" if xp.float64 else "float32"
    got = xp.call(posenc.sincos_coords, xp.asarray(c, dtype=dt), 12, order=order)
    tol = 2.5e-7 if not xp.float64 else max(xp.tol(), 1e-12)
    xp.assert_close(got, ref_sincos(c, 12, order=order), atol=tol, dtype=xp.default_float)


def test_sincos_coords_3d_and_int(xp):
    c = np.array([[0, 1, 2], [5, -3, 7], [100, 200, 300]], dtype=np.int32)
    got = xp.call(posenc.sincos_coords, xp.asarray(c), 18)
    xp.assert_close(got, ref_sincos(c, 18), atol=xp.tol() * 2)
    got = posenc.sincos_coords(c.tolist(), 18, order="blocks")
    np.testing.assert_allclose(got, ref_sincos(c, 18, order="blocks"), atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_sincos_grid_dtypes(dtype):
    torch = pytest.importorskip("torch")
    dt = getattr(torch, dtype)
    got = posenc.sincos_grid((5, 7), 16, dtype=dt)
    assert isinstance(got, torch.Tensor) and got.dtype == dt and got.shape == (5, 7, 16)
    tol = {"float32": 3e-7, "float16": 2**-11, "bfloat16": 2**-8}[dtype]
    np.testing.assert_allclose(got.float().numpy(), ref_sincos(grid_coords((5, 7)), 16), atol=tol)


def test_cls_token_and_flatten(xp):
    t = xp.call(posenc.sincos_grid, (3, 4), 8, cls_token=True, xp=xp.ns, device=xp.device)
    want = np.concatenate([np.zeros((1, 8)), ref_sincos(grid_coords((3, 4)), 8).reshape(12, 8)])
    xp.assert_close(t, want, atol=xp.tol() * 2)
    t = xp.call(posenc.sincos_grid, (2, 3, 4), 12, flatten=True, xp=xp.ns, device=xp.device)
    xp.check_array(t, shape=(24, 12))


def test_device_propagation_strict():
    st_ = pytest.importorskip("array_api_strict")
    dev = st_.Device("device1")
    t = posenc.sincos_grid((2, 3), 8, xp=st_, device=dev)
    assert t.device == dev
    c = st_.asarray([[0.5, 1.5]], device=dev)
    assert posenc.sincos_coords(c, 8).device == dev
    with pytest.raises(ValueError, match="device"):
        posenc.sincos_coords(c, 8, device=st_.Device("CPU_DEVICE"))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("shape", "exc"),
    [
        ((), ValueError),
        ((0, 3), ValueError),
        ((3, -1), ValueError),
        ((2, 2, 2, 2), ValueError),
        (14, TypeError),
        ((2.0, 3), TypeError),
        ("ab", TypeError),
        (None, TypeError),
        ((True, 3), TypeError),
    ],
)
def test_bad_grid_shape(shape, exc):
    with pytest.raises(exc, match="grid_shape"):
        posenc.sincos_grid(shape, 8)
    with pytest.raises(exc, match="grid_shape"):
        posenc.axial_rope_cos_sin(shape, 12)


def test_messages_describe_arrays_briefly():
    # an array where a flag belongs is described by shape and dtype, not printed whole
    for call in (
        lambda: posenc.sincos_grid((3, 3), 8, cls_token=np.zeros(1000)),
        lambda: posenc.axial_rope_cos_sin((3, 3), 8, reverse_axes=np.zeros(1000)),
    ):
        with pytest.raises(TypeError, match=r"array of shape \(1000,\)") as info:
            call()
        assert len(str(info.value)) < 200


def test_sincos_coords_huge_view_is_refused_without_reading():
    import time

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"2\*\*40"):
        posenc.sincos_coords(np.broadcast_to(np.zeros((1, 2)), (2**30, 2)), 2**12)
    assert time.perf_counter() - t0 < 5.0  # reading the view would take minutes


def test_bad_sincos_args():
    with pytest.raises(
        ValueError, match=r"`dim` must be divisible by 2 \* ndim = 4 .*\(ndim = len\(`grid_shape`\) = 2\)"
    ):
        posenc.sincos_grid((3, 3), 6)
    with pytest.raises(
        ValueError, match=r"`dim` must be divisible by 2 \* ndim = 4 .*\(ndim = `coords`.shape\[-1\] = 2\)"
    ):
        posenc.sincos_coords(np.zeros((5, 2)), 6)
    with pytest.raises(ValueError, match="`dim` must be divisible by 2 \\* ndim = 6"):
        posenc.sincos_grid((2, 3, 3), 8, order="timm")
    with pytest.raises(ValueError, match="dim"):
        posenc.sincos_grid((3, 3), 0)
    with pytest.raises(ValueError, match="order"):
        posenc.sincos_grid((3, 3), 8, order="moco")
    with pytest.raises(TypeError, match="order"):
        posenc.sincos_grid((3, 3), 8, order=None)
    with pytest.raises(ValueError, match="base"):
        posenc.sincos_grid((3, 3), 8, base=0.0)
    with pytest.raises(TypeError, match="cls_token"):
        posenc.sincos_grid((3, 3), 8, cls_token=1)
    with pytest.raises(TypeError, match="flatten"):
        posenc.sincos_grid((3, 3), 8, flatten="yes")
    with pytest.raises(ValueError, match="coords"):
        posenc.sincos_coords(np.zeros((5, 4)), 16)
    with pytest.raises(ValueError, match="coords"):
        posenc.sincos_coords(np.zeros(()), 16)
    with pytest.raises(TypeError, match="coords"):
        posenc.sincos_coords(3.0, 16)
    with pytest.raises(TypeError, match="coords"):
        posenc.sincos_coords(np.zeros((2, 2), dtype=bool), 16)
    with pytest.raises(ValueError, match="coords"):
        posenc.sincos_coords(np.array([[np.nan, 1.0]]), 8)
    with pytest.raises(ValueError, match="`dim` must be divisible by 2 \\* ndim = 4"):
        posenc.sincos_coords(np.zeros((5, 2)), 10)


# ---------------------------------------------------------------- axial RoPE
def rope_angles(shape, dim, base=10000.0, reverse=False):
    """float64 per-plane angles (tokens, dim/2) from the definition."""
    nd = len(shape)
    da = dim // nd
    theta = np.array([base ** (-2 * j / da) for j in range(da // 2)])
    pos = grid_coords(shape).reshape(-1, nd).astype(np.float64)
    axes = list(range(nd))[::-1] if reverse else list(range(nd))
    return np.concatenate([pos[:, k, None] * theta for k in axes], axis=-1)


def rotate_oracle(x, ang, layout):
    """Rotate plane p of each row of x by ang[:, p] with explicit 2x2 rotations."""
    out = np.array(x, dtype=np.float64, copy=True)
    half = x.shape[-1] // 2
    for p in range(half):
        a, b = (p, p + half) if layout == "half" else (2 * p, 2 * p + 1)
        c, s = np.cos(ang[:, p]), np.sin(ang[:, p])
        out[..., a] = x[..., a] * c - x[..., b] * s
        out[..., b] = x[..., a] * s + x[..., b] * c
    return out


def apply_hf(x, cos, sin, layout):
    """The HF convention cos/sin are made for: x * cos + rotate(x) * sin."""
    if layout == "half":
        h = x.shape[-1] // 2
        rot = np.concatenate([-x[..., h:], x[..., :h]], axis=-1)
    else:
        rot = np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)
    return x * cos + rot * sin


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(
    ("shape", "dim", "reverse"), [((3, 5), 16, False), ((3, 5), 16, True), ((2, 3, 4), 24, False), ((6,), 8, False)]
)
def test_axial_rope_values(xp, layout, shape, dim, reverse):
    cos, sin = xp.call(
        posenc.axial_rope_cos_sin,
        shape,
        dim,
        layout=layout,
        reverse_axes=reverse,
        base=100.0,
        xp=xp.ns,
        device=xp.device,
    )
    ang = rope_angles(shape, dim, base=100.0, reverse=reverse)
    if layout == "half":
        full = np.concatenate([ang, ang], axis=-1)
    else:
        full = np.repeat(ang, 2, axis=-1)
    xp.assert_close(cos, np.cos(full), atol=xp.tol() * 2, dtype=xp.default_float)
    xp.assert_close(sin, np.sin(full), atol=xp.tol() * 2, dtype=xp.default_float)


def test_axial_rope_1d_is_rope():
    # one axis: the ordinary RoPE angles p * base**(-2j/dim)
    cos, sin = posenc.axial_rope_cos_sin((9,), 8)
    theta = 10000.0 ** (-np.arange(0, 8, 2) / 8)
    ang = np.arange(9)[:, None] * theta
    np.testing.assert_allclose(sin, np.sin(np.concatenate([ang, ang], -1)), atol=1e-15)
    np.testing.assert_allclose(cos, np.cos(np.concatenate([ang, ang], -1)), atol=1e-15)


@settings(max_examples=25, deadline=None)
@given(
    h=st.integers(2, 5),
    w=st.integers(2, 5),
    nd3=st.booleans(),
    layout=st.sampled_from(["half", "interleaved"]),
    seed=st.integers(0, 2**16),
)
def test_axial_rope_relative_property(h, w, nd3, layout, seed):
    shape = (2, h, w) if nd3 else (h, w)
    dim = 12 if nd3 else 16
    cos, sin = posenc.axial_rope_cos_sin(shape, dim, layout=layout, base=50.0)
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal(dim), rng.standard_normal(dim)
    n = math.prod(shape)
    qr = apply_hf(np.broadcast_to(q, (n, dim)), cos, sin, layout)
    kr = apply_hf(np.broadcast_to(k, (n, dim)), cos, sin, layout)
    # cos/sin rotate exactly as the explicit float64 rotations
    ang = rope_angles(shape, dim, base=50.0)
    np.testing.assert_allclose(qr, rotate_oracle(np.broadcast_to(q, (n, dim)), ang, layout), atol=1e-12)
    scores = qr @ kr.T
    pos = grid_coords(shape).reshape(n, -1)
    off = pos[:, None, :] - pos[None, :, :]
    seen: dict[tuple, float] = {}
    for i in range(n):
        for j in range(n):
            key = tuple(off[i, j])
            if key in seen:
                assert scores[i, j] == pytest.approx(seen[key], abs=1e-12)
            else:
                seen[key] = scores[i, j]
    # ... and it does see the offset along every axis
    assert len({round(v, 9) for v in seen.values()}) > 1


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(("shape", "dim"), [((3, 4), 16), ((2, 2, 3), 12)])
def test_axial_rope_with_apply_rope(xp, layout, shape, dim):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, math.prod(shape), dim))
    xa = xp.asarray(x)

    def rotate(xa):
        cos, sin = posenc.axial_rope_cos_sin(shape, dim, layout=layout, dtype=xa.dtype, xp=xp.ns, device=xp.device)
        return posenc.apply_rope(xa, cos, sin, layout=layout)

    got = xp.call(rotate, xa)
    want = rotate_oracle(x, rope_angles(shape, dim), layout)
    xp.assert_close(got, want, atol=xp.tol() * 16)
    if xp.name == "numpy":
        # the relative property through apply_rope: scores depend on the offset only
        q = np.broadcast_to(x[0, 0], x.shape[1:])
        k = np.broadcast_to(x[1, 0], x.shape[1:])
        s = posenc.apply_rope(q, *posenc.axial_rope_cos_sin(shape, dim, layout=layout), layout=layout)
        t = posenc.apply_rope(k, *posenc.axial_rope_cos_sin(shape, dim, layout=layout), layout=layout)
        scores = s @ t.T
        pos = grid_coords(shape).reshape(len(q), -1)
        for i in range(len(q)):
            for j in range(len(q)):
                ii, jj = _shift_both(pos, i, j)
                if ii is not None:
                    assert scores[i, j] == pytest.approx(scores[ii, jj], abs=1e-12)


def _shift_both(pos, i, j):
    """Token indices of pos[i] - pos[j] shifted so that the second is the origin, if on the grid."""
    d = pos[i] - pos[j]
    hits = np.nonzero((pos == d).all(axis=1))[0] if (d >= 0).all() else []
    return (int(hits[0]), 0) if len(hits) else (None, None)


def test_axial_rope_bad_input():
    with pytest.raises(ValueError, match=r"`dim` must be divisible by 2 \* ndim = 4 for the 2-D `grid_shape` \(3, 3\)"):
        posenc.axial_rope_cos_sin((3, 3), 6)
    with pytest.raises(ValueError, match="`dim` must be divisible by 2 \\* ndim = 6"):
        posenc.axial_rope_cos_sin((2, 3, 3), 16)
    with pytest.raises(ValueError, match="dim"):
        posenc.axial_rope_cos_sin((3, 3), 7)
    with pytest.raises(ValueError, match="layout"):
        posenc.axial_rope_cos_sin((3, 3), 8, layout="neox")
    with pytest.raises(TypeError, match="reverse_axes"):
        posenc.axial_rope_cos_sin((3, 3), 8, reverse_axes=None)
