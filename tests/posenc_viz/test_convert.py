"""to_numpy reads arrays of every backend."""

from __future__ import annotations

import numpy as np
import pytest

from posenc_viz import to_numpy


def test_every_backend(xp):
    data = np.arange(12, dtype=np.float32).reshape(3, 4) / 7.0
    arr = xp.asarray(data)
    if not xp.has_values:
        with pytest.raises(ValueError, match="`pe` is a torch meta tensor"):
            to_numpy(arr, name="pe")
        return
    out = to_numpy(arr)
    assert isinstance(out, np.ndarray)
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out.astype(np.float32), data)


def test_every_backend_integer(xp):
    data = np.arange(6).reshape(2, 3)
    arr = xp.asarray(data, dtype="int32")
    if not xp.has_values:
        with pytest.raises(ValueError, match="`x` is a torch meta tensor"):
            to_numpy(arr)
        return
    out = to_numpy(arr)
    assert out.dtype.kind == "i"
    np.testing.assert_array_equal(out, data)


def test_torch_grad_bf16_and_views():
    torch = pytest.importorskip("torch")
    t = torch.linspace(-1, 1, 8, dtype=torch.bfloat16).reshape(2, 4).requires_grad_(True)
    out = to_numpy(t * 2)  # a non-leaf that carries grad
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, (t.detach().float() * 2).numpy())
    h = torch.ones(3, dtype=torch.float16)
    assert to_numpy(h).dtype == np.float32
    # negative and conjugate views, transposes
    neg = torch.neg(torch.arange(4.0).reshape(2, 2)).T
    np.testing.assert_array_equal(to_numpy(neg), -np.arange(4.0).reshape(2, 2).T)
    sp = torch.eye(3).to_sparse()
    np.testing.assert_array_equal(to_numpy(sp), np.eye(3))


def test_jax_bf16_and_traced():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    out = to_numpy(jnp.asarray([0.5, 1.5], dtype=jnp.bfloat16))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [0.5, 1.5])

    seen = []

    def f(x):
        try:
            to_numpy(x, name="pe")
        except ValueError as exc:
            seen.append(str(exc))
        return x

    jax.jit(f)(jnp.ones(2))
    assert seen and "`pe` is a traced JAX array" in seen[0]


def test_dask_is_computed():
    da = pytest.importorskip("dask.array")
    x = da.from_array(np.arange(10.0), chunks=3) * 2
    np.testing.assert_array_equal(to_numpy(x), np.arange(10.0) * 2)


def test_lists_and_scalars():
    np.testing.assert_array_equal(to_numpy([[1, 2], [3, 4]]), [[1, 2], [3, 4]])
    assert to_numpy(2.5).shape == ()
    assert to_numpy(np.float32(1.0)).dtype == np.float32


@pytest.mark.parametrize(
    ("value", "kind", "match"),
    [
        ("abc", TypeError, "`x` must be an array, got str"),
        (None, TypeError, "`x` must be an array, got NoneType"),
        ({"a": 1}, TypeError, "`x` must be an array"),
        ([[1, 2], [3]], TypeError, "`x` must be an array or a \\(nested\\) list of numbers"),
        (np.array([1 + 2j]), TypeError, "`x` must hold real numbers"),
        (np.array(["a"]), TypeError, "`x` must hold real numbers"),
        (True, TypeError, "`x` must be an array"),
    ],
)
def test_bad_input(value, kind, match):
    with pytest.raises(kind, match=match):
        to_numpy(value)


def test_torch_complex_refused():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="`pe` must hold real numbers"):
        to_numpy(torch.ones(2, dtype=torch.complex64), name="pe")
