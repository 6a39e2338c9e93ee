"""The ``xp`` fixture: every backend test runs on every installed array backend.

Backends (select a subset with ``POSENC_BACKENDS=numpy,torch``):

=============================  ==============================================
``numpy``                      NumPy through array-api-compat
``strict``                     array-api-strict, default device
``strict-device1``             array-api-strict on ``Device("device1")``
``strict-no_float64``          array-api-strict on a device without float64
``torch``                      PyTorch on the CPU
``torch-meta``                 PyTorch ``meta`` tensors: shapes, dtypes and
                               device propagation only (no values)
``jax``                        jax.numpy, eager (float64 disabled, as JAX's
                               default)
``jax-jit``                    the same calls under ``jax.jit``
``dask``                       dask.array; the call must not compute the graph
``cupy``, ``torch-cuda``       GPU backends, skipped without a GPU
=============================  ==============================================

Tests get a :class:`Backend`: ``xp.ns`` is the namespace to pass as ``xp=``,
``xp.asarray`` puts NumPy data on the backend's device, ``xp.call`` runs a
function the way the backend wants (under ``jax.jit``, with Dask computing
forbidden), ``xp.to_numpy`` reads a result back and ``xp.assert_close``
checks namespace, device, shape and values against a NumPy oracle.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import settings

# Property and fuzz tests draw the same examples on every run (derandomized),
# so CI is reproducible; HYPOTHESIS_PROFILE=explore draws fresh random examples.
# No per-example deadline: speed is the benchmarks' business, and a busy 2-core
# runner must not turn a slow example into a failure.
settings.register_profile("posenc", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", derandomize=False, database=None, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "posenc"))

ALL_BACKENDS = (
    "numpy",
    "strict",
    "strict-device1",
    "strict-no_float64",
    "torch",
    "torch-meta",
    "jax",
    "jax-jit",
    "dask",
    "cupy",
    "torch-cuda",
)


def _selected() -> tuple[str, ...]:
    env = os.environ.get("POSENC_BACKENDS", "").strip()
    if not env:
        return ALL_BACKENDS
    names = tuple(s.strip() for s in env.split(",") if s.strip())
    unknown = [n for n in names if n not in ALL_BACKENDS]
    if unknown:
        raise pytest.UsageError(f"POSENC_BACKENDS: unknown backends {unknown}; known: {ALL_BACKENDS}")
    return names


def _forbid_compute(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the Dask graph was computed while it was being built")


@dataclass
class Backend:
    """One array backend as seen by the tests."""

    name: str
    ns: Any  # array-API namespace to pass as ``xp=``
    device: Any = None
    float64: bool = True
    has_values: bool = True
    lazy: bool = False
    jit: bool = False
    module: Any = None  # the user-facing module (torch, jax.numpy, ...)
    _extra: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<Backend {self.name}>"

    # ------------------------------------------------------------------ data
    def dtype(self, name: str) -> Any:
        return getattr(self.ns, name)

    @property
    def default_float(self) -> Any:
        return self.ns.__array_namespace_info__().default_dtypes(device=self.device)["real floating"]

    def asarray(self, obj: Any, dtype: str | Any | None = None) -> Any:
        """NumPy data (or a list) as an array on this backend's device."""
        a = np.asarray(obj)
        if dtype is None:
            if a.dtype == np.float64 and not self.float64:
                a = a.astype(np.float32)
            if a.dtype == np.int64 and self.name.startswith("jax"):
                a = a.astype(np.int32)
        else:
            name = dtype if isinstance(dtype, str) else str(np.dtype(dtype))
            a = a.astype(name)
        if self.device is None:
            return self.ns.asarray(a)
        if self.name.startswith("strict"):
            return self.ns.asarray(a, device=self.device)
        return self.ns.asarray(a, device=self.device)

    def to_numpy(self, x: Any) -> np.ndarray:
        if not self.has_values:
            raise AssertionError(f"{self.name} arrays have no values")
        if isinstance(x, (tuple, list)):
            return type(x)(self.to_numpy(v) for v in x)
        n = self.name
        if n.startswith("strict"):
            import array_api_strict as st

            return np.asarray(x.to_device(st.Device("CPU_DEVICE")))
        if n.startswith("torch"):
            import torch

            return x.detach().to("cpu").to(torch.float32 if x.dtype in (torch.bfloat16, torch.float16) else x.dtype).numpy()
        if n == "dask":
            return np.asarray(x.compute())
        if n == "cupy":
            return x.get()
        return np.asarray(x)

    # ------------------------------------------------------------------ calls
    def call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """Call ``fn`` as this backend would: traced under ``jax.jit``; building
        a Dask graph must not compute it."""
        if self.jit:
            import jax
            from array_api_compat import is_array_api_obj

            pos = [i for i, a in enumerate(args) if is_array_api_obj(a)]
            kws = [k for k, v in kwargs.items() if is_array_api_obj(v)]

            def traced(*arrays: Any) -> Any:
                full = list(args)
                kw = dict(kwargs)
                for i, a in zip(pos, arrays[: len(pos)]):
                    full[i] = a
                for k, a in zip(kws, arrays[len(pos) :]):
                    kw[k] = a
                return fn(*full, **kw)

            return jax.jit(traced)(*[args[i] for i in pos], *[kwargs[k] for k in kws])
        if self.lazy:
            import dask

            with dask.config.set(scheduler=_forbid_compute):
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    # ------------------------------------------------------------- checks
    def check_array(self, x: Any, *, shape: tuple | None = None, dtype: Any = None) -> None:
        """Namespace, device, shape and dtype of a result."""
        from array_api_compat import array_namespace, device as device_of

        from posenc._compat import normalize_namespace

        assert normalize_namespace(array_namespace(x)) is normalize_namespace(self.ns), (
            f"result is a {type(x)}, not an array of {self.name}"
        )
        if self.device is not None:
            got = device_of(x)
            if self.name.startswith("torch"):
                assert got.type == self.device.type, f"result on {got}, expected {self.device}"
            else:
                assert got == self.device, f"result on {got}, expected {self.device}"
        if shape is not None:
            assert tuple(x.shape) == tuple(shape), f"shape {tuple(x.shape)} != {tuple(shape)}"
        if dtype is not None:
            assert x.dtype == dtype, f"dtype {x.dtype} != {dtype}"

    def assert_close(
        self,
        actual: Any,
        expected: Any,
        *,
        atol: float = 0.0,
        rtol: float = 0.0,
        dtype: Any = None,
    ) -> None:
        """Check ``actual`` (a backend array) against a NumPy oracle."""
        expected = np.asarray(expected)
        self.check_array(actual, shape=expected.shape, dtype=dtype)
        if not self.has_values:
            return
        got = self.to_numpy(actual)
        np.testing.assert_allclose(got.astype(np.float64) if got.dtype.kind == "f" else got, expected, atol=atol, rtol=rtol)

    def tol(self, dtype: Any = None) -> float:
        """Absolute tolerance for tables of unit magnitude in ``dtype``."""
        dtype = self.default_float if dtype is None else dtype
        name = str(dtype)
        if "float64" in name:
            return 1e-12
        if "bfloat16" in name:
            return 2**-8
        if "float16" in name:
            return 2**-11
        return 2.5e-7 if self.float64 else 5e-7


def _make(name: str) -> Backend:
    def need(mod: str) -> Any:
        try:
            return importlib.import_module(mod)
        except ImportError:
            pytest.skip(f"{mod} is not installed")

    if name == "numpy":
        import array_api_compat.numpy as ns

        return Backend(name, ns, module=np)
    if name.startswith("strict"):
        st = need("array_api_strict")
        dev = {"strict": None, "strict-device1": "device1", "strict-no_float64": "no_float64"}[name]
        device = st.Device(dev) if dev else None
        return Backend(name, st, device=device, float64=dev != "no_float64", module=st)
    if name.startswith("torch"):
        torch = need("torch")
        import array_api_compat.torch as ns

        if name == "torch-cuda":
            if not torch.cuda.is_available():
                pytest.skip("no CUDA device")
            return Backend(name, ns, device=torch.device("cuda"), module=torch)
        if name == "torch-meta":
            return Backend(name, ns, device=torch.device("meta"), has_values=False, module=torch)
        return Backend(name, ns, device=torch.device("cpu"), module=torch)
    if name.startswith("jax"):
        need("jax")
        import jax
        import jax.numpy as jnp

        return Backend(
            name,
            jnp,
            device=jax.devices("cpu")[0],
            float64=bool(jax.config.jax_enable_x64),
            jit=name == "jax-jit",
            module=jnp,
        )
    if name == "dask":
        need("dask.array")
        import array_api_compat.dask.array as ns

        return Backend(name, ns, lazy=True, module=importlib.import_module("dask.array"))
    if name == "cupy":
        cupy = need("cupy")
        try:
            if cupy.cuda.runtime.getDeviceCount() < 1:
                pytest.skip("no CUDA device")
        except Exception:
            pytest.skip("no CUDA device")
        import array_api_compat.cupy as ns

        return Backend(name, ns, device=cupy.cuda.Device(), module=cupy)
    raise AssertionError(name)  # pragma: no cover


@pytest.fixture(params=_selected())
def xp(request: pytest.FixtureRequest) -> Backend:
    """One array backend (see the module docstring)."""
    return _make(request.param)


@pytest.fixture
def numpy_backend() -> Backend:
    return _make("numpy")


@contextlib.contextmanager
def no_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield
