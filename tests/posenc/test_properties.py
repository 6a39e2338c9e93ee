"""The shift matrix and the similarities against float64 formulas: the
angle-addition rotation of each (sin, cos) pair and the sum of cosines."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc

from .test_sinusoidal import ref_freqs, ref_table


# ---------------------------------------------------------------- shift matrix
@pytest.mark.parametrize("layout", ["interleaved", "concat"])
@pytest.mark.parametrize("dim", [8, 9])
def test_shift_matrix(xp, layout, dim):
    m = xp.call(posenc.shift_matrix, 5, dim, layout=layout, xp=xp.ns, device=xp.device)
    pe = ref_table(np.arange(40), dim, layout=layout)
    mm = m if not xp.has_values else xp.to_numpy(m)
    xp.check_array(m, shape=(dim, dim))
    if xp.has_values:
        np.testing.assert_allclose(pe[:-5] @ mm.T, pe[5:], atol=20 * xp.tol())
    offs = xp.asarray(np.array([1, -2]))
    ms = xp.call(posenc.shift_matrix, offs, dim, layout=layout)
    xp.check_array(ms, shape=(2, dim, dim))


@settings(max_examples=40, deadline=None)
@given(
    k=st.integers(-(10**5), 10**5),
    p=st.integers(-(10**5), 10**5),
    dim=st.integers(1, 40),
    layout=st.sampled_from(["interleaved", "concat"]),
)
def test_shift_property(k, p, dim, layout):
    m = posenc.shift_matrix(k, dim, layout=layout)
    pe = posenc.sinusoidal(np.array([p, p + k]), dim, layout=layout)
    np.testing.assert_allclose(m @ pe[0], pe[1], atol=1e-9)


def test_shift_matrix_of_numbers_on_every_backend(xp):
    """Numbers (and NumPy scalars) give a (dim, dim) matrix in the requested
    namespace, computed in float64 on the host: finite for any finite offset,
    also on devices without float64."""
    w = ref_freqs(4)
    for k in (1e6 + 0.25, np.float64(-3.5), np.int64(7)):
        m = xp.call(posenc.shift_matrix, k, 4, xp=xp.ns, device=xp.device)
        xp.check_array(m, shape=(4, 4))
        c, s = np.cos(float(k) * w), np.sin(float(k) * w)
        exp = np.array([[c[0], s[0], 0, 0], [-s[0], c[0], 0, 0], [0, 0, c[1], s[1]], [0, 0, -s[1], c[1]]])
        if xp.has_values:
            xp.assert_close(m, exp, atol=2 * xp.tol())
    m = xp.call(posenc.shift_matrix, 1e300, 4, xp=xp.ns, device=xp.device)
    if xp.has_values:
        a = xp.to_numpy(m).astype(np.float64)
        np.testing.assert_allclose(a @ a.T, np.eye(4), atol=8 * xp.tol())  # a rotation


# ---------------------------------------------------------------- similarity
def test_similarity(xp):
    pe = ref_table(np.arange(9), 8)
    got = xp.call(posenc.similarity, xp.asarray(pe))
    xp.assert_close(got, pe @ pe.T, atol=1e-5)
    got = xp.call(posenc.similarity, xp.asarray(pe[:3]), xp.asarray(pe))
    xp.assert_close(got, pe[:3] @ pe.T, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(t=st.integers(-1000, 1000), k=st.integers(-1000, 1000), dim=st.integers(2, 64))
def test_similarity_depends_on_abs_offset(t, k, dim):
    pe = posenc.sinusoidal(np.array([t, t + k, t - k]), dim)
    fwd, back = pe[0] @ pe[1], pe[0] @ pe[2]
    assert fwd == pytest.approx(back, abs=1e-9)
    assert fwd == pytest.approx(float(posenc.similarity_by_offset(np.array([k]), dim)[0]), abs=1e-9)


def test_similarity_by_offset(xp):
    got = xp.call(posenc.similarity_by_offset, 50, 16, xp=xp.ns, device=xp.device)
    exp = np.cos(np.arange(50)[:, None] * ref_freqs(16)).sum(-1)
    xp.assert_close(got, exp, atol=8 * xp.tol())
    got = xp.call(posenc.similarity_by_offset, xp.asarray(np.array([-4, 4])), 16, normalize=True)
    xp.assert_close(got, np.cos(np.array([-4, 4])[:, None] * ref_freqs(16)).mean(-1), atol=8 * xp.tol())


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: posenc.shift_matrix(float("nan"), 8), ValueError, "offset"),
        (lambda: posenc.similarity(np.zeros((2, 3)), np.zeros((2, 4))), ValueError, "last axis"),
        (lambda: posenc.similarity(np.zeros(3)), ValueError, "a"),
        (lambda: posenc.similarity_by_offset(4, 8, normalize="yes"), TypeError, "normalize"),
        (lambda: posenc.similarity_by_offset(2, 2**18, dtype="float16"), ValueError, "`dtype`"),
        (lambda: posenc.similarity(np.zeros((2, 3, 4)), np.zeros((3, 3, 4))), ValueError, "`a`.*`b`"),
    ],
)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


def test_mixed_namespaces():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="namespace"):
        posenc.similarity(np.zeros((2, 3)), torch.zeros(2, 3))


def test_flags_take_numpy_bools():
    """A NumPy bool (read from a config, or a NumPy comparison) is a bool; an int 0/1 is not."""
    want = posenc.similarity_by_offset(5, 8, normalize=True)
    np.testing.assert_array_equal(posenc.similarity_by_offset(5, 8, normalize=np.True_), want)
    np.testing.assert_array_equal(posenc.similarity_by_offset(5, 8, normalize=np.float64(2.0) > 1), want)
    for bad in (1, 0, "yes", None, np.array(True)):
        with pytest.raises(TypeError, match="`normalize` must be a bool"):
            posenc.similarity_by_offset(5, 8, normalize=bad)


@settings(max_examples=200, deadline=None)
@given(shapes=st.lists(st.lists(st.integers(0, 3), max_size=4).map(tuple), min_size=1, max_size=3))
def test_broadcast_shapes_matches_numpy(shapes):
    """The shape check of `similarity` (and of any caller with traced sizes) broadcasts as NumPy does."""
    from posenc import _checks

    try:
        want = np.broadcast_shapes(*shapes)
    except ValueError:
        want = None
    assert _checks.broadcast_shapes(*shapes) == want
