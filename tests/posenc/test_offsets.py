"""Offsets added to integer positions of every width, on every backend.

``positions + offset`` in the positions' own dtype wraps (``uint8`` 255 + 1 is
position 0, ``int32`` 2**31 - 1 + 1 is -2**31): posenc adds in the widest
integer type of the namespace (int64; int32 for JAX without x64), refuses a
concrete sum that leaves it (a ``ValueError`` naming ``offset``) and gives NaN
rows for traced positions whose sum left it (``jax.jit``) -- never the row of
another position.  The oracle is the float64 formula ``sin(p * base**(-2i/dim))``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import posenc

#: each integer dtype at its top, plus one
EDGES = {"uint8": 255, "int8": 127, "int16": 32767, "uint16": 65535, "int32": 2**31 - 1}


def _sin_row(p: int, dim: int) -> np.ndarray:
    w = 10000.0 ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    return np.sin(p * w)


def _widest_bits(xp) -> int:
    from posenc._compat import widest_int

    return int(xp.ns.iinfo(widest_int(xp.ns)).bits)


@pytest.mark.parametrize("dtype", sorted(EDGES))
@pytest.mark.parametrize("fn", ["rope_cos_sin", "rope"])
def test_offset_past_the_top_of_the_dtype(xp, dtype, fn):
    if not hasattr(xp.ns, dtype):
        pytest.skip(f"{xp.name} has no {dtype}")
    top = EDGES[dtype]
    pos = xp.asarray(np.array([top - 1, top]), dtype=dtype)
    want = np.stack([_sin_row(top, 8), _sin_row(top + 1, 8)])
    x = xp.asarray(np.zeros((2, 8)) + np.array([0, 0, 0, 0, 1, 1, 1, 1.0]))  # rope: x2 = 1 -> x'1 = -sin

    def call(p):
        if fn == "rope_cos_sin":
            return posenc.rope_cos_sin(p, 8, offset=1, xp=xp.ns)[1][..., :4]
        return -posenc.rope(x, p, offset=1)[..., :4]

    if top + 1 >= 2 ** (_widest_bits(xp) - 1):  # int32 positions where int32 is the widest (JAX without x64)
        if xp.jit:
            got = xp.to_numpy(xp.call(call, pos))
            assert np.isnan(got[1]).all() and not np.isnan(got[0]).any()  # NaN, never another position's row
            return
        with pytest.raises(ValueError, match="`offset`"):
            xp.call(call, pos)
        return
    got = xp.call(call, pos)
    xp.assert_close(got, want, atol=1e-6, dtype=got.dtype)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16"])
def test_negative_offset_below_the_dtype(xp, dtype):
    """A negative offset takes unsigned positions below zero (uint8 0 - 1 is not 255)."""
    pos = xp.asarray(np.array([0, 1]), dtype=dtype)
    got = xp.call(lambda p: posenc.rope_cos_sin(p, 8, offset=-(2**15 + 1), xp=xp.ns)[1][..., :4], pos)
    want = np.stack([_sin_row(-(2**15 + 1), 8), _sin_row(-(2**15), 8)])
    xp.assert_close(got, want, atol=5e-6, dtype=got.dtype)


def test_offset_that_leaves_int64_refused():
    pos = np.array([2**63 - 1], dtype=np.int64)
    with pytest.raises(ValueError, match="`offset`"):
        posenc.rope_cos_sin(pos, 8, offset=1)
    with pytest.raises(ValueError, match="`offset`"):
        posenc.rope_cos_sin(np.array([0], dtype=np.uint8), 8, offset=2**63)


def test_traced_offset_jax_int32():
    """A traced offset (jax.jit) with JAX's default int32 positions: the rows
    whose sum wrapped are NaN."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    if jax.config.jax_enable_x64:
        pytest.skip("int64 exists: no wrap")
    pos = jnp.array([0, 2**31 - 1], dtype=jnp.int32)
    got = jax.jit(lambda p, o: posenc.rope_cos_sin(p, 8, offset=o)[1])(pos, jnp.asarray(1, dtype=jnp.int32))
    got = np.asarray(got)
    assert np.isnan(got[1]).all()
    np.testing.assert_allclose(got[0, :4], _sin_row(1, 8), atol=3e-7)
    out = jax.jit(lambda x, o: posenc.add_sinusoidal(x, offset=o))(jnp.zeros((2, 8)), jnp.asarray(2**31 - 1))
    out = np.asarray(out)
    assert not np.isnan(out[0]).any() and np.isnan(out[1]).all()
    assert math.isclose(float(out[0, 0]), math.sin(2**31 - 1), abs_tol=1e-3)


# -- integer positions beyond the exact range ---------------------------------
# float32 tables of integer position arrays are exact for |p| < 2**32, float64
# tables and every range table for |p| < 2**53.  Beyond, the rows drift (0.94 at
# 2**53 + 3 in float64; 4e-5 at 2**48 in float32 before this check): a concrete
# position in host memory is a ValueError naming it; a traced, lazy or device one
# gives a NaN row (as does any one on a device without float64, documented).


def _cos_row_f64(p: int, dim: int, base: int = 10000) -> np.ndarray:
    """cos of p times the mathematical frequencies base**(-2i/dim) (posenc's definition of exact), in
    200-bit arithmetic (mpmath)."""
    import mpmath

    with mpmath.workprec(200):
        w = [mpmath.power(base, -mpmath.mpf(2 * i) / dim) for i in range(dim // 2)]
        return np.array([float(mpmath.cos(mpmath.mpf(p) * f)) for f in w])


def _in_host_memory(xp, a) -> bool:
    """Whether posenc may read the values of the positions ``a`` (the documented rule): a concrete array in
    host memory (NumPy, torch CPU tensors); not a traced (``jax.jit``), lazy (Dask) or device array (CUDA,
    CuPy, JAX on any device, ``meta``).  (A lane that runs CPU tensors under ``posenc._kernels.as_device()``
    takes a device's decisions: there they are device arrays.)"""
    if xp.jit or xp.lazy:
        return False
    if xp.family == "numpy":
        return True
    if xp.family == "torch":
        return a.device.type == "cpu"
    return False


@pytest.mark.parametrize(("dtype", "limit"), [("float32", 2**32), ("float64", 2**53)])
@pytest.mark.parametrize("fn", ["rope_cos_sin", "rope", "sinusoidal"])
def test_positions_beyond_the_exact_range(xp, dtype, limit, fn):
    if not hasattr(xp.ns, "int64") or _widest_bits(xp) < 64:
        pytest.skip(f"{xp.name} has no int64 positions")
    if dtype == "float64" and not xp.float64:
        pytest.skip(f"{xp.name} has no float64")
    if not xp.has_values:
        pytest.skip(f"{xp.name} arrays have no values")
    x = xp.asarray(np.ones((2, 8)), dtype=dtype)

    def call(p):
        if fn == "rope_cos_sin":
            return posenc.rope_cos_sin(p, 8, dtype=getattr(xp.ns, dtype), xp=xp.ns)[0]
        if fn == "rope":
            return posenc.rope(x, p)
        return posenc.sinusoidal(p, 8, dtype=getattr(xp.ns, dtype), xp=xp.ns)

    inside = xp.asarray(np.array([3, limit - 1]), dtype="int64")
    got = xp.to_numpy(xp.call(call, inside))
    assert np.isfinite(got).all()
    if fn == "rope_cos_sin":  # the last position inside is right (the control of the refusal below)
        np.testing.assert_allclose(got[1, :4], _cos_row_f64(limit - 1, 8), atol=2.5e-7 if dtype == "float32" else 1e-12)
    for bad in (limit, -limit, 2**62):
        pos = xp.asarray(np.array([3, bad]), dtype="int64")
        # positions in host memory (NumPy, torch CPU) are read; traced, lazy and device arrays (and the digit
        # path of a device without float64) get NaN rows, without a round trip to the host
        if not (xp.host and _in_host_memory(xp, pos) and xp.float64):
            got = xp.to_numpy(xp.call(call, pos))
            assert np.isnan(got[1]).all() and not np.isnan(got[0]).any()  # NaN, never a drifted row
            continue
        with pytest.raises(ValueError, match=rf"`positions` holds the position {bad}: .*exact for \|p\| < 2\*\*"):
            xp.call(call, pos)


def test_positions_moved_beyond_the_exact_range_by_an_offset_name_it():
    """An offset that carries integer positions past the exact range is named
    with them: the positions alone are inside it."""
    x = np.zeros((1, 2), np.float32)
    ids = np.array([0, 5], np.int32)
    for call in (
        lambda: posenc.rope(x, ids[:1], offset=2**41),
        lambda: posenc.rope_cos_sin(ids, 2, offset=2**41, dtype=np.float32),
    ):
        with pytest.raises(ValueError, match=r"`positions` \+ `offset` holds the position 219902325555[27]: "):
            call()
    cos, _ = posenc.rope_cos_sin(ids, 2, offset=2**31, dtype=np.float32)  # control: inside, exact rows
    np.testing.assert_allclose(cos[:, 0], np.cos(np.array([2**31, 2**31 + 5], np.float64)), atol=2.5e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_range_tables_beyond_2_53_are_refused(dtype):
    cos, _ = posenc.rope_cos_sin(2, 8, offset=2**53 - 2, dtype=dtype)  # the last exact range
    np.testing.assert_allclose(cos[1, :4], _cos_row_f64(2**53 - 1, 8), atol=2.5e-7 if dtype == "float32" else 1e-12)
    for call in (
        lambda: posenc.rope_cos_sin(2, 8, offset=2**53 - 1, dtype=dtype),
        lambda: posenc.rope_cos_sin(1, 8, offset=-(2**53), dtype=dtype),
        lambda: posenc.add_sinusoidal(np.zeros((2, 8), dtype=dtype), offset=2**60),
    ):
        with pytest.raises(ValueError, match=r"`offset` puts positions at .*exact for integer \|p\| < 2\*\*53"):
            call()


def test_offset_as_a_numpy_integer_scalar(xp):
    """A NumPy integer scalar is a host number, as a Python int, whatever the
    arrays' namespace: the same table as offset=5."""
    x = xp.asarray(np.zeros((3, 8)), "float32")
    want = xp.call(posenc.add_sinusoidal, x, offset=5)
    got = xp.call(lambda a: posenc.add_sinusoidal(a, offset=np.int64(5)), x)
    xp.assert_close(got, xp.to_numpy(want) if xp.has_values else posenc.sinusoidal(np.arange(5, 8), 8), atol=0)


def test_offset_of_another_namespace_is_refused_as_such():
    """A 0-d integer array of another namespace than the call's is refused
    naming the namespace (it is an integer), without a warning from
    array-api-strict's dtype comparisons; a float one as not an integer."""
    torch = pytest.importorskip("torch")
    xs = pytest.importorskip("array_api_strict")
    add = posenc.add_sinusoidal
    calls = [
        (lambda: add(torch.zeros(1, 2), offset=np.array(5)), r"namespace \(array_api_compat\.torch\)"),
        (lambda: add(np.zeros((1, 2)), offset=torch.tensor(5)), r"namespace \(array_api_compat\.numpy\)"),
        (lambda: posenc.add_sinusoidal(np.zeros((1, 2)), offset=np.array(5.0)), "`offset` must be an integer"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = xs.asarray(np.zeros((1, 2), np.float32))
        want = posenc.add_sinusoidal(x, offset=xs.asarray(5))  # keeps (strict, int64) in the dtype-kind memo
        got = posenc.add_sinusoidal(x, offset=np.int64(5))  # then NumPy's int64, which hashes alike
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        for call, match in calls:
            with pytest.raises(TypeError, match=match):
                call()


@pytest.mark.parametrize("fn", ["rope_cos_sin", "rope"])
def test_real_positions_plus_an_offset_add_exactly(xp, fn):
    """A float32 position plus an int offset is the exact sum where the
    device has float64 (in float32, 2694.3137 + 4096 rounds to 6790.3135:
    2e-4 rad at the first frequency); without float64 the sum rounds to
    float32, as documented."""
    if not xp.has_values:
        pytest.skip(f"{xp.name} arrays have no values")
    p = np.array([2694.3137], dtype=np.float32)
    exact = float(p[0]) + 4096  # float64: exact
    pos = xp.asarray(p, dtype="float32")
    x = xp.asarray(np.array([[1.0, 0.0]]), dtype="float32")  # rope: x2 = 0 -> x'1 = cos

    def call(q):
        if fn == "rope_cos_sin":
            return posenc.rope_cos_sin(q, 2, offset=4096, xp=xp.ns)[0][..., 0]
        return posenc.rope(x, q, offset=4096)[..., 0]

    got = xp.to_numpy(xp.call(call, pos))
    rounded = float(np.float32(p[0]) + np.float32(4096))
    assert abs(math.cos(exact) - math.cos(rounded)) > 1e-4  # (the two sums' rows differ)
    at = exact if xp.float64 else rounded
    np.testing.assert_allclose(got, [math.cos(at)], atol=2.5e-7 if xp.float64 else 1e-6, rtol=0)


@pytest.mark.parametrize("off", [2**64, -(2**64), 2**63 + 2**40])
def test_real_positions_plus_an_offset_beyond_int64(xp, off):
    """An int offset beyond int64 (offsets up to 2**64 are allowed) with real
    positions: torch raised OverflowError converting the int.  The sums lie
    beyond the exact range of real positions in float32 tables (2**30 for the
    float64 sums, 2**50 for the float32 sums of devices without float64):
    refused by name where posenc reads positions, NaN rows elsewhere."""
    from .test_offsets import _in_host_memory

    if not xp.has_values:
        pytest.skip(f"{xp.name} arrays have no values")
    p = xp.asarray(np.array([0.0, 3.0], dtype=np.float32), dtype="float32")
    if xp.host and _in_host_memory(xp, p):
        with pytest.raises(ValueError, match=r"`positions` \+ `offset` holds the position"):
            xp.call(posenc.rope_cos_sin, p, 4, offset=off, dtype=xp.ns.float32, xp=xp.ns)
        return
    cos, sin = xp.call(posenc.rope_cos_sin, p, 4, offset=off, dtype=xp.ns.float32, xp=xp.ns)
    assert np.isnan(xp.to_numpy(cos)).all() and np.isnan(xp.to_numpy(sin)).all()
