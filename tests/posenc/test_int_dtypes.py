"""Integer positions of every width, on every backend.

Dense integer positions take rows of an exact range table, found from their
minimum and maximum and (torch) from whether they count up by one in memory
order.  In the positions' own dtype those reads go wrong: torch computes no
reduction, difference or ordering comparison of uint16, uint32 and uint64
tensors, and differences of 8-bit integers wrap (in uint8, ``0 - 255`` is
``1``: the positions ``128 .. 255, 0 .. 127`` read as one run up by one, and
were given the rows of ``0 .. 255``).  The oracle is the float64 formula.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import posenc

#: dense positions in an order that wraps in the dtype's own differences
#: (8 bits) and a dim that makes the table large enough for the rows of the
#: range table (posenc._kernels.GATHER_MIN elements)
ORDERS = {
    "uint8": list(range(128, 256)) + list(range(128)),
    "int8": list(range(128)) + list(range(-128, 0)),
    "int16": list(range(100, 256)) + list(range(100)),
    "uint16": list(range(100, 256)) + list(range(100)),
    "int32": list(range(100, 256)) + list(range(100)),
    "uint32": list(range(100, 256)) + list(range(100)),
    "int64": list(range(100, 256)) + list(range(100)),
    "uint64": list(range(100, 256)) + list(range(100)),
}
DIM = 512


def _angles(p, dim: int, base: float = 10000.0) -> np.ndarray:
    w = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    return np.asarray(p, dtype=np.float64)[..., None] * w


def _positions(xp, dtype: str):
    if not hasattr(xp.ns, dtype):
        pytest.skip(f"{xp.name} has no {dtype}")
    return xp.asarray(np.array(ORDERS[dtype]), dtype=dtype)


@pytest.mark.parametrize("dtype", sorted(ORDERS))
def test_sinusoidal_of_dense_positions_of_every_integer_dtype(xp, dtype):
    p = _positions(xp, dtype)
    got = xp.call(lambda p: posenc.sinusoidal(p, DIM, xp=xp.ns), p)
    a = _angles(ORDERS[dtype], DIM)
    want = np.stack([np.sin(a), np.cos(a)], axis=-1).reshape(len(ORDERS[dtype]), DIM)
    xp.assert_close(got, want, atol=xp.tol(got.dtype), dtype=got.dtype)


@pytest.mark.parametrize("dtype", sorted(ORDERS))
def test_rope_tables_of_dense_positions_of_every_integer_dtype(xp, dtype):
    p = _positions(xp, dtype)
    c, s = xp.call(lambda p: posenc.rope_cos_sin(p[None, :], DIM, xp=xp.ns), p)
    a = np.concatenate([_angles(ORDERS[dtype], DIM)] * 2, axis=-1)[None]
    xp.assert_close(c, np.cos(a), atol=xp.tol(c.dtype), dtype=c.dtype)
    xp.assert_close(s, np.sin(a), atol=xp.tol(s.dtype), dtype=s.dtype)


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64", "int64"])
def test_length_dependent_scaling_reads_the_largest_position(xp, dtype):
    """Dynamic NTK takes ``seq_len = max(positions) + 1`` from concrete
    positions: read in every dtype (here past its original length, so the
    scaled base differs from the plain one)."""
    if not xp.host:
        pytest.skip("positions are read only in host memory (traced, lazy and device ones need seq_len)")
    if not hasattr(xp.ns, dtype):
        pytest.skip(f"{xp.name} has no {dtype}")
    v = np.arange(0, 4096, 7)
    scaling = posenc.scaling.DynamicNTK(2.0, 2048)
    c, s = posenc.rope_cos_sin(xp.asarray(v, dtype=dtype)[None, :], 64, scaling=scaling, xp=xp.ns)
    want_c, want_s = posenc.rope_cos_sin(v[None, :], 64, scaling=scaling, seq_len=int(v[-1]) + 1)
    plain_c, _ = posenc.rope_cos_sin(v[None, :], 64)
    assert np.abs(want_c - plain_c).max() > 0.1  # (the scaling changed the tables)
    xp.assert_close(c, want_c, atol=xp.tol(c.dtype), dtype=c.dtype)
    xp.assert_close(s, want_s, atol=xp.tol(s.dtype), dtype=s.dtype)


@pytest.mark.parametrize("call", ["sinusoidal", "rope_cos_sin", "offset"])
def test_uint64_positions_beyond_int64(xp, call):
    """A uint64 position from 2**63 is beyond every exact range (read as
    int64 it would be a negative position, inside some table's range): where
    posenc reads positions (NumPy, torch CPU; every concrete array for an
    offset's sum) a refusal that names the position itself, elsewhere a NaN
    row."""
    from .test_offsets import _in_host_memory

    if not hasattr(xp.ns, "uint64") or not xp.has_values:
        pytest.skip(f"{xp.name}: no uint64 arrays with values")
    big = 2**63 + 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (JAX without x64 narrows uint64, and says so)
        p = xp.asarray(np.array([0, big], dtype=np.uint64), dtype="uint64")
    if "uint64" not in str(p.dtype):
        pytest.skip(f"{xp.name} makes {p.dtype} of uint64 data")
    fn = {
        "sinusoidal": lambda p: posenc.sinusoidal(p, 8, xp=xp.ns),
        "rope_cos_sin": lambda p: posenc.rope_cos_sin(p[None, :], 8, xp=xp.ns)[0][0, ...],
        "offset": lambda p: posenc.rope_cos_sin(p[None, :], 8, offset=2, xp=xp.ns)[0][0, ...],
    }[call]
    reads = xp.host and (_in_host_memory(xp, p) or call == "offset")
    if reads:
        with pytest.raises(ValueError, match=str(big)):
            xp.call(fn, p)
        return
    got = xp.to_numpy(xp.call(fn, p))
    assert np.isnan(got[1]).all() and np.isfinite(got[0]).all()


def test_rotary_module_uint64_ids_beyond_int64_named():
    torch = pytest.importorskip("torch")
    from posenc.torch import RotaryEmbedding

    m = RotaryEmbedding(16)
    q = k = torch.zeros(1, 2, 2, 16)
    big = 2**63 + 5
    with pytest.raises(ValueError, match=f"`position_ids` holds the id {big}"):
        m(q, k, position_ids=torch.tensor([[3, big]], dtype=torch.uint64))
    # ids below 2**63 in uint64, uint16: the rows of those ids
    for dtype in (torch.uint64, torch.uint16):
        ids = torch.tensor([[3, 700]], dtype=dtype)
        a = _angles([3, 700], 16)[None]
        qx = torch.zeros(1, 2, 2, 16)
        qx[..., 8:] = 1.0  # x2 = 1: the rotated first half is -sin
        out, _ = m(qx, qx, position_ids=ids)
        np.testing.assert_allclose(-out[0, 0, :, :8].double().numpy(), np.sin(a)[0], atol=1e-6, rtol=0)


#: calls whose integer positions come from an argument not called
#: ``positions``: the argument a refusal must name
#: (each result's leading axis runs over the two positions)
NAMED = {
    "timestep_embedding": ("`t`", lambda p, ns: posenc.timestep_embedding(p, 8, xp=ns)),
    "rope_axes_cos_sin": (
        "`ids`", lambda p, ns: posenc.rope_axes_cos_sin(ns.stack([p, p], axis=-1), [4, 4], xp=ns)[0]
    ),
    "mrope_cos_sin": (
        "`position_ids`",
        lambda p, ns: posenc.mrope_cos_sin(ns.stack([p, p, p]), 8, mrope_section=[2, 1, 1], xp=ns)[0],
    ),
    "similarity_by_offset": ("`offsets`", lambda p, ns: posenc.similarity_by_offset(p, 8, xp=ns)),
    "shift_matrix": ("`offset`", lambda p, ns: posenc.shift_matrix(p, 8, xp=ns)),
    "sincos_coords": ("`coords`", lambda p, ns: posenc.sincos_coords(p[:, None], 8, xp=ns)),
    "fourier_features": ("`coords`", lambda p, ns: posenc.fourier_features(p[:, None], 2, xp=ns)),
}


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
@pytest.mark.parametrize("call", sorted(NAMED))
def test_positions_beyond_the_exact_range_name_their_argument(xp, call, dtype):
    """Positions of 2**62 read in host memory are refused by the name of the
    argument that holds them (they said `positions` for all but mrope's
    ``position_ids``); elsewhere their rows are NaN (fourier_features keeps
    the input's own column)."""
    from .test_offsets import _in_host_memory

    if not hasattr(xp.ns, dtype) or not xp.has_values:
        pytest.skip(f"{xp.name}: no {dtype} arrays with values")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (JAX without x64 narrows 64-bit integers, and says so)
        p = xp.asarray(np.array([3, 2**62], dtype=dtype), dtype=dtype)
    if dtype not in str(p.dtype):
        pytest.skip(f"{xp.name} makes {p.dtype} of {dtype} data")
    name, fn = NAMED[call]
    if xp.host and _in_host_memory(xp, p):
        with pytest.raises(ValueError, match=f"{name} holds the position {2**62}"):
            xp.call(fn, p, xp.ns)
        return
    got = xp.to_numpy(xp.call(fn, p, xp.ns))
    assert np.isnan(got[1]).any() and np.isfinite(got[0]).all()


def test_torch_modules_name_their_own_arguments():
    """A module's refusal names the module's argument, not that of the
    function it calls (`positions` of RotaryEmbedding's ``position_ids`` or
    ``offset``, `t` of Timesteps' ``timesteps``)."""
    torch = pytest.importorskip("torch")
    from posenc.torch import RotaryEmbedding, SinusoidalEmbedding, Timesteps

    big = 2**62
    q = k = torch.zeros(1, 2, 2, 16)
    with pytest.raises(ValueError, match=f"`position_ids` holds the position {big}"):
        RotaryEmbedding(16)(q, k, position_ids=torch.tensor([[3, big]]))
    with pytest.raises(ValueError, match=f"`offset` holds the position {-big}"):
        RotaryEmbedding(16)(q, k, offset=-big)
    with pytest.raises(ValueError, match="`offset` holds the position"):
        SinusoidalEmbedding(16)(torch.zeros(1, 2, 16), offset=big)
    with pytest.raises(ValueError, match=f"`timesteps` holds the position {big}"):
        Timesteps(16, True, 0)(torch.tensor([3, big]))
    with pytest.raises(TypeError, match="`timesteps` must be an array of integer or real floating dtype"):
        Timesteps(16, True, 0)(torch.tensor([1j]))
    # within range: the modules' tables (the renaming path returns what the function does)
    t = torch.tensor([3, 700])
    emb = Timesteps(16, True, 0)(t)
    np.testing.assert_array_equal(emb.numpy(), posenc.timestep_embedding(t, 16, flip_sin_to_cos=True,
                                                                          downscale_freq_shift=0).numpy())


#: dense positions whose differences from their minimum leave their own
#: dtype (int8 127 - (-1) is -128), with a dim that takes the rows of the
#: range table: NumPy took row -128 of the table's 129 from its end
WRAPPING_SPANS = [("int8", list(range(-1, 128)), 512), ("int16", list(range(-1, 32768)), 4)]


@pytest.mark.parametrize(("dtype", "values", "dim"), WRAPPING_SPANS, ids=["int8", "int16"])
def test_dense_positions_whose_span_leaves_their_dtype(xp, dtype, values, dim):
    if not hasattr(xp.ns, dtype):
        pytest.skip(f"{xp.name} has no {dtype}")
    p = xp.asarray(np.array(values), dtype=dtype)
    a = _angles(values, dim)
    got = xp.call(lambda p: posenc.sinusoidal(p, dim, xp=xp.ns), p)
    want = np.stack([np.sin(a), np.cos(a)], axis=-1).reshape(len(values), dim)
    xp.assert_close(got, want, atol=xp.tol(got.dtype), dtype=got.dtype)
    c, _ = xp.call(lambda p: posenc.rope_cos_sin(xp.ns.flip(p), dim, xp=xp.ns), p)  # (not an arange: the take)
    xp.assert_close(c, np.cos(np.concatenate([a[::-1]] * 2, axis=-1)), atol=xp.tol(c.dtype), dtype=c.dtype)
