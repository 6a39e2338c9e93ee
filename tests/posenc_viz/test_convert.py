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


# the backend each fixture name stands for (``array_kind`` of its arrays)
_KINDS = {"numpy": "numpy", "strict": "strict", "torch": "torch", "jax": "jax", "dask": "dask", "cupy": "cupy"}


def _expected_kind(backend_name: str) -> str:
    return _KINDS[backend_name.split("-")[0]]


def test_array_kind_of_every_backend(xp):
    from posenc._compat import array_kind

    arr = xp.asarray(np.arange(3.0))
    assert array_kind(arr) == _expected_kind(xp.name)
    assert array_kind(arr[:1] * 2) == _expected_kind(xp.name)  # results of operations too


def test_array_kind_of_jax_tracers():
    jax = pytest.importorskip("jax")
    from posenc._compat import array_kind

    seen = []

    def f(x):
        seen.append(array_kind(x))
        return x

    jax.jit(f)(jax.numpy.ones(2))
    assert seen == ["jax"]


@pytest.mark.parametrize(
    "value",
    [np.float32(1.0), np.array(2), np.ma.masked_array([1.0, 2.0])],
    ids=["numpy-scalar", "0-d", "masked"],
)
def test_array_kind_of_numpy_objects(value):
    from posenc._compat import array_kind

    assert array_kind(value) == "numpy"


def test_array_kind_of_non_arrays():
    from posenc._compat import array_kind

    xs = pytest.importorskip("array_api_strict")
    for value in ([1.0, 2.0], 3.0, None, "abc", np.float32, np.dtype("float32"), xs.int64, xs.Device("device1")):
        assert array_kind(value) == "other", value


@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
def test_dtype_objects_are_not_arrays(dtype):
    xs = pytest.importorskip("array_api_strict")
    with pytest.raises(TypeError, match="`x` must be an array, got DType"):
        to_numpy(getattr(xs, dtype))


def test_dtype_and_class_objects_of_other_backends():
    torch = pytest.importorskip("torch")
    for value in (torch.float32, torch.Tensor, np.float32, np.dtype("int8")):
        with pytest.raises(TypeError, match="`pe` must be an array"):
            to_numpy(value, name="pe")


@pytest.mark.parametrize("name", [0, None, b"x", ("x",)])
def test_name_must_be_a_str(name):
    with pytest.raises(TypeError, match="`name` must be a str"):
        to_numpy(np.zeros(2), name=name)


def test_only_posenc_compat_imports_array_api_compat():
    """posenc_viz tells backends apart through posenc's classifier: posenc/_compat.py is the
    only module of either package that imports array_api_compat."""
    import ast
    from pathlib import Path

    import posenc_viz

    offenders = []
    for path in sorted(Path(posenc_viz.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mods = [node.module or ""]
            else:
                continue
            if any(m.split(".")[0] == "array_api_compat" for m in mods):
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []


def test_private_helpers_of_posenc_come_through_one_module():
    """posenc_viz imports posenc's private modules (``posenc._checks``, ``posenc._compat``, ...)
    in posenc_viz/_internals.py only: one place to change when they move."""
    import ast
    from pathlib import Path

    import posenc_viz

    def private(module: str) -> bool:
        parts = module.split(".")
        return parts[0] == "posenc" and any(p.startswith("_") for p in parts[1:])

    offenders, seen = [], []
    for path in sorted(Path(posenc_viz.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                mods = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            if any(private(m) for m in mods):
                (seen if path.name == "_internals.py" else offenders).append(f"{path.name}:{node.lineno}")
    assert offenders == []
    assert seen  # the check reads the imports it is about
