"""The ``xp`` fixture: every backend test runs on every installed array backend.

Backends (select a subset with ``POSENC_BACKENDS=numpy,torch``; the names are
the ids of the parametrised tests, so ``-k numpy`` selects too):

=============================  ==============================================
``numpy``                      NumPy through array-api-compat
``strict``                     array-api-strict, default device
``strict-device1``             array-api-strict on ``Device("device1")``
``strict-no_float64``          array-api-strict on a device without float64
``torch``                      PyTorch on the CPU
``torch-meta``                 PyTorch ``meta`` tensors: shapes, dtypes and
                               device propagation only (no values)
``torch-device``               PyTorch CPU tensors on the device path
                               (``posenc._kernels.as_device()``): every call
                               through ``xp.call`` fails on a read of a
                               value (``posenc._kernels.probes.no_reads``)
``jax``                        jax.numpy, eager (float64 disabled, as JAX's
                               default), on the last CPU device
``jax-jit``                    the same calls under ``jax.jit``
``dask``                       dask.array; the call must not compute the graph
``cupy``, ``torch-cuda``       GPU backends, skipped without a GPU;
                               ``torch-cuda`` fails on any synchronising CUDA
                               operation (``set_sync_debug_mode("error")``)
=============================  ==============================================

The JAX lanes ask for the last CPU device: with two host devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=2``) that is not JAX's
default device, as the CPU is not on a GPU machine, so the lanes check that
``device=`` is honoured, under ``jax.jit`` too.

Each is a member of :class:`BackendKind`; a backend whose library is not
installed (or whose GPU is absent) is collected with a skip marker.  Tests get
a :class:`Backend`: ``xp.ns`` is the namespace to pass as ``xp=``,
``xp.asarray`` puts NumPy data on the backend's device, ``xp.call`` runs a
function the way the backend wants (under ``jax.jit``, with Dask computing
forbidden), ``xp.to_numpy`` reads a result back and ``xp.assert_close``
checks namespace, device, shape and values against a NumPy oracle.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import importlib
import importlib.util
import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import settings

# The scripts that record golden values (tests/posenc/data/make_*.py) run by
# hand against peers the suite does not install; --doctest-modules must not
# import them.
collect_ignore_glob = ["posenc/data/make_*.py"]

# Property and fuzz tests draw the same examples on every run (derandomized),
# so CI is reproducible; HYPOTHESIS_PROFILE=explore draws fresh random examples.
# No per-example deadline: speed is the benchmarks' business, and a busy 2-core
# runner must not turn a slow example into a failure.
settings.register_profile("posenc", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", derandomize=False, database=None, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "posenc"))


class BackendKind(enum.Enum):
    """The array backends of the ``xp`` fixture.  A value is the backend's
    name: its test id and its spelling in ``POSENC_BACKENDS``."""

    NUMPY = "numpy"
    STRICT = "strict"
    STRICT_DEVICE1 = "strict-device1"
    STRICT_NO_FLOAT64 = "strict-no_float64"
    TORCH = "torch"
    TORCH_META = "torch-meta"
    TORCH_DEVICE = "torch-device"
    JAX = "jax"
    JAX_JIT = "jax-jit"
    DASK = "dask"
    CUPY = "cupy"
    TORCH_CUDA = "torch-cuda"

    @property
    def family(self) -> str:
        """The library behind the backend: numpy, strict, torch, jax, dask or cupy."""
        return self.value.split("-", 1)[0]

    @property
    def requires(self) -> str:
        """The module that must import for the backend to run."""
        return _REQUIRES.get(self.family, self.family)

    @property
    def gpu(self) -> bool:
        return self in (BackendKind.CUPY, BackendKind.TORCH_CUDA)

    def missing(self) -> str | None:
        """Why the backend cannot run here, or ``None`` when it can."""
        return _missing(self)

    def param(self) -> Any:
        """The backend as a test parameter: its id, and a skip marker where it cannot run."""
        reason = self.missing()
        return pytest.param(self, id=self.value, marks=() if reason is None else pytest.mark.skip(reason=reason))

    def make(self) -> Backend:
        return _BUILDERS[self.family](self)


_REQUIRES = {"strict": "array_api_strict", "dask": "dask.array"}


def _gpu_count(kind: BackendKind) -> int:
    if kind is BackendKind.CUPY:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@functools.cache
def _missing(kind: BackendKind) -> str | None:
    try:
        installed = importlib.util.find_spec(kind.requires) is not None
    except ImportError:  # the parent package of a submodule is absent
        installed = False
    if not installed:
        return f"{kind.requires} is not installed"
    if kind.gpu:
        try:
            if _gpu_count(kind) < 1:
                return "no CUDA device"
        except Exception:  # noqa: BLE001 - a driver or runtime that cannot start
            return "no CUDA device"
    return None


def selected() -> tuple[BackendKind, ...]:
    """The backends ``POSENC_BACKENDS`` names (comma-separated), or all of them."""
    env = os.environ.get("POSENC_BACKENDS", "").strip()
    if not env:
        return tuple(BackendKind)
    names = [s.strip() for s in env.split(",") if s.strip()]
    known = {kind.value: kind for kind in BackendKind}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise pytest.UsageError(f"POSENC_BACKENDS: unknown backends {unknown}; known: {tuple(known)}")
    return tuple(known[n] for n in names)


def _forbid_compute(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the Dask graph was computed while it was being built")


def set_sync_debug_mode(torch: Any, mode: int | str) -> None:
    """``torch.cuda.set_sync_debug_mode(mode)`` without the notice torch
    gives on its first call in a process ("Synchronization debug mode is a
    prototype feature and does not yet detect all synchronizing
    operations", a UserWarning): under the suite's warning filter it is an
    error, raised after the mode is set, which would leave the mode set for
    every later test of the worker."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Synchronization debug mode is a prototype feature", category=UserWarning
        )
        torch.cuda.set_sync_debug_mode(mode)


@contextlib.contextmanager
def syncs_allowed() -> Any:
    """The test's own host transfers (putting data on a CUDA device, reading a
    result back) inside the ``torch-cuda`` lane, which otherwise runs with
    ``torch.cuda.set_sync_debug_mode("error")``: any synchronising CUDA
    operation posenc performs is an error there.  Outside that lane (the
    mode is off) nothing is changed."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        yield
        return
    old = torch.cuda.get_sync_debug_mode()
    if old == 0:
        yield
        return
    set_sync_debug_mode(torch, 0)
    try:
        yield
    finally:
        set_sync_debug_mode(torch, old)


def _torch_to_numpy(x: Any) -> np.ndarray:
    import torch

    with syncs_allowed():
        x = x.detach().to("cpu")
    return x.to(torch.float32 if x.dtype in (torch.bfloat16, torch.float16) else x.dtype).numpy()


def _strict_to_numpy(x: Any) -> np.ndarray:
    import array_api_strict as xs

    return np.asarray(x.to_device(xs.Device("CPU_DEVICE")))


#: how each library's arrays are read back (NumPy and JAX: ``np.asarray``)
_READERS: dict[str, Callable[[Any], np.ndarray]] = {
    "strict": _strict_to_numpy,
    "torch": _torch_to_numpy,
    "dask": lambda x: np.asarray(x.compute()),
    "cupy": lambda x: x.get(),
}


@dataclass
class Backend:
    """One array backend as seen by the tests."""

    kind: BackendKind
    ns: Any  # array-API namespace to pass as ``xp=``
    device: Any = None
    float64: bool = True
    has_values: bool = True
    lazy: bool = False
    jit: bool = False
    module: Any = None  # the user-facing module (torch, jax.numpy, ...)
    device_path: bool = False  # CPU tensors taking a device's decisions (as_device)

    @property
    def host(self) -> bool:
        """Whether posenc reads the values of this backend's arrays (host
        memory, eager): checks refuse there; traced, lazy, ``meta`` and
        device arrays (the GPU lanes, and the CPU tensors of the
        ``torch-device`` lane, which take a device's decisions) give NaN rows
        instead."""
        return self.has_values and not (self.jit or self.lazy or self.device_path or self.kind.gpu)

    @property
    def name(self) -> str:
        """The backend's name (``"strict-device1"``): its test id."""
        return self.kind.value

    @property
    def family(self) -> str:
        return self.kind.family

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
            if a.dtype == np.int64 and self.family == "jax":
                a = a.astype(np.int32)
        else:
            a = a.astype(dtype if isinstance(dtype, str) else str(np.dtype(dtype)))
        if self.device is None:
            return self.ns.asarray(a)
        with syncs_allowed():
            return self.ns.asarray(a, device=self.device)

    def to_numpy(self, x: Any) -> np.ndarray:
        if not self.has_values:
            raise AssertionError(f"{self.name} arrays have no values")
        if isinstance(x, (tuple, list)):
            return type(x)(self.to_numpy(v) for v in x)
        return _READERS.get(self.family, np.asarray)(x)

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
        if self.device_path:
            from posenc._kernels.probes import no_reads

            with no_reads():
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    # ------------------------------------------------------------- checks
    def check_array(self, x: Any, *, shape: tuple | None = None, dtype: Any = None) -> None:
        """Namespace, device, shape and dtype of a result."""
        from array_api_compat import array_namespace
        from array_api_compat import device as device_of

        from posenc._compat import normalize_namespace

        assert normalize_namespace(array_namespace(x)) is normalize_namespace(self.ns), (
            f"result is a {type(x)}, not an array of {self.name}"
        )
        if self.device is not None:
            got = device_of(x)
            # torch: cuda and cuda:0 are the same device
            same = got.type == self.device.type if self.family == "torch" else got == self.device
            assert same, f"result on {got}, expected {self.device}"
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
        got = got.astype(np.float64) if got.dtype.kind == "f" else got
        np.testing.assert_allclose(got, expected, atol=atol, rtol=rtol)

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


# ----------------------------------------------------------------- builders
# One per library; the backend's library is installed (its skip marker says so).
def _numpy(kind: BackendKind) -> Backend:
    import array_api_compat.numpy as ns

    return Backend(kind, ns, module=np)


def _strict(kind: BackendKind) -> Backend:
    import array_api_strict as xs

    name = {BackendKind.STRICT_DEVICE1: "device1", BackendKind.STRICT_NO_FLOAT64: "no_float64"}.get(kind)
    device = None if name is None else xs.Device(name)
    return Backend(kind, xs, device=device, float64=kind is not BackendKind.STRICT_NO_FLOAT64, module=xs)


def _torch(kind: BackendKind) -> Backend:
    import array_api_compat.torch as ns
    import torch

    device = {BackendKind.TORCH_META: "meta", BackendKind.TORCH_CUDA: "cuda"}.get(kind, "cpu")
    return Backend(
        kind,
        ns,
        device=torch.device(device),
        has_values=kind is not BackendKind.TORCH_META,
        module=torch,
        device_path=kind is BackendKind.TORCH_DEVICE,
    )


def _jax(kind: BackendKind) -> Backend:
    import jax
    import jax.numpy as jnp

    return Backend(
        kind,
        jnp,
        device=jax.devices("cpu")[-1],
        float64=bool(jax.config.jax_enable_x64),
        jit=kind is BackendKind.JAX_JIT,
        module=jnp,
    )


def _dask(kind: BackendKind) -> Backend:
    import array_api_compat.dask.array as ns

    return Backend(kind, ns, lazy=True, module=importlib.import_module("dask.array"))


def _cupy(kind: BackendKind) -> Backend:
    import array_api_compat.cupy as ns
    import cupy

    return Backend(kind, ns, device=cupy.cuda.Device(), module=cupy)


_BUILDERS: dict[str, Callable[[BackendKind], Backend]] = {
    "numpy": _numpy,
    "strict": _strict,
    "torch": _torch,
    "jax": _jax,
    "dask": _dask,
    "cupy": _cupy,
}


@pytest.fixture(params=[kind.param() for kind in selected()])
def xp(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """One array backend (see the module docstring).  The ``torch-device``
    lane runs inside ``posenc._kernels.as_device()``; the ``torch-cuda`` lane
    runs with ``torch.cuda.set_sync_debug_mode("error")``: a call that reads a
    value back from the device (or waits for it) fails; the test's own
    transfers go through :func:`syncs_allowed`."""
    backend = request.param.make()
    if backend.device_path:
        from posenc import _kernels

        with _kernels.as_device():
            yield backend
        return
    if request.param is not BackendKind.TORCH_CUDA:
        yield backend
        return
    import torch

    old = torch.cuda.get_sync_debug_mode()
    try:
        set_sync_debug_mode(torch, "error")
        yield backend
    finally:
        set_sync_debug_mode(torch, old)
