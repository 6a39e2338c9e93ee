"""Namespaces, devices and dtypes, resolved once per call into a :class:`Context`.

This is the only module of :mod:`posenc` that imports :mod:`array_api_compat`.
Every public function resolves its arguments through :func:`resolve`, which
returns a :class:`Context`: the array namespace and its :class:`Backend`, the
device, the output dtype, the dtype the computation runs in (never narrower
than float32), whether the device has float64 and whether torch's compiler
traces the call.  The engine and the kernels read those answers from the
context instead of asking again at every step.

Rules:

* namespace: ``xp`` if given (a bare module such as ``torch`` or ``numpy`` is
  normalised once to its array-API-compatible namespace and cached), else
  inferred from the array arguments, else NumPy;
* device: the device of the array arguments; ``device=`` is for pure creation
  calls and a conflict with the arrays' device is a :class:`ValueError`;
* dtype: the requested dtype or the namespace's default real floating dtype
  on that device; backend dtype objects (``torch.bfloat16``) and names
  (``"float32"``) are accepted.  Computation happens in float32 or float64,
  never in a half-precision type, and the result is cast at the end.

Imports: :mod:`posenc._cache` and :mod:`posenc._trace`.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import numbers
import sys
from dataclasses import dataclass
from typing import Any, TypeAlias

import array_api_compat as _aac
import numpy as np

from . import _cache
from ._trace import host_constant, is_symbolic

__all__ = [
    "Array",
    "Backend",
    "Context",
    "array_kind",
    "backend_of",
    "call_key",
    "int_key",
    "default_dtype",
    "has_float64",
    "is_array",
    "is_concrete",
    "has_values",
    "in_host_memory",
    "AS_DEVICE",
    "widest_int",
    "is_integer_dtype",
    "is_real_float_dtype",
    "namespace_name",
    "native_dtype",
    "normalize_namespace",
    "numpy_dtype",
    "resolve",
    "show",
    "torch_upload",
]


#: An array of any namespace that follows the Python Array API standard:
#: NumPy, PyTorch, CuPy, JAX, Dask, array-api-strict.  The standard defines no
#: runtime protocol of arrays yet (no class or ``typing.Protocol`` that all of
#: these satisfy), so the alias is :data:`typing.Any`; annotations say
#: ``Array`` where a value is such an array, and keep ``Any`` for namespaces,
#: dtypes, devices and values of any kind.
Array: TypeAlias = Any


class Backend(enum.Enum):
    """The namespaces posenc tells apart (:func:`backend_of`); every other
    array-API namespace (array-api-strict, ...) is :attr:`OTHER`."""

    NUMPY = "numpy"
    TORCH = "torch"
    CUPY = "cupy"
    DASK = "dask"
    JAX = "jax"
    OTHER = "other"


#: module names of the namespaces posenc tells apart (the modules and their
#: array-api-compat wrappers)
_BACKENDS = {
    "numpy": Backend.NUMPY,
    "array_api_compat.numpy": Backend.NUMPY,
    "torch": Backend.TORCH,
    "array_api_compat.torch": Backend.TORCH,
    "cupy": Backend.CUPY,
    "array_api_compat.cupy": Backend.CUPY,
    "dask.array": Backend.DASK,
    "array_api_compat.dask.array": Backend.DASK,
    "jax.numpy": Backend.JAX,
    "jax.experimental.array_api": Backend.JAX,
}


def _tracing() -> bool:
    """:func:`posenc._trace.compiling`, asked here where every call passes
    (resolving, keying a plan): without a call into another module."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def backend_of(xp: Any) -> Backend:
    """The one classifier of namespaces, by module name (plain string
    comparisons, which torch's compiler folds while tracing)."""
    return _BACKENDS.get(getattr(xp, "__name__", ""), Backend.OTHER)


# --------------------------------------------------------------------------
# messages
# --------------------------------------------------------------------------
def show(value: Any) -> str:
    """A short description of ``value`` for an error message.

    Arrays are described by shape and dtype (their repr can run to thousands
    of lines); other reprs are cut to about 80 characters.
    """
    if is_array(value) and hasattr(value, "shape") and not isinstance(value, type):
        try:
            shape = tuple(value.shape)
        except Exception:  # pragma: no cover - exotic lazy shapes
            shape = "?"  # type: ignore[assignment]
        if shape == ():
            try:
                return f"a 0-d array {_cut(repr(value))}"
            except Exception:  # pragma: no cover - traced values
                pass
        return f"an array of shape {shape} and dtype {value.dtype}"
    try:
        return _cut(repr(value))
    except Exception:  # pragma: no cover - a broken __repr__
        return f"<{type(value).__name__} object>"


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."


def namespace_name(xp: Any) -> str:
    return getattr(xp, "__name__", repr(xp))


# --------------------------------------------------------------------------
# arrays
# --------------------------------------------------------------------------
#: is_array's answer per type (array-ness is a property of the class)
_IS_ARRAY = _cache.Memo("compat.is_array", 256)


def is_array(x: Any) -> bool:
    """True for an array of any supported backend (NumPy scalars included).

    Classes are not arrays, even those whose instances are (``numpy.float32``
    has an ``__array_namespace__`` attribute).
    """
    torch = sys.modules.get("torch")
    if torch is not None and torch.compiler.is_compiling():
        # no cache lookups while torch traces (its tracer would follow them)
        if isinstance(x, torch.Tensor):
            return True
        if x is None or isinstance(x, (bool, int, float, complex, str, list, tuple, torch.SymInt)):
            return False
    t = type(x)
    got = _IS_ARRAY.get(t)
    if got is None:
        if issubclass(t, type):
            return False
        # torch first: array-api-compat's checks would be traced by torch.compile
        got = (torch is not None and issubclass(t, torch.Tensor)) or _aac.is_array_api_obj(x)
        _IS_ARRAY.put(t, got)
    return got


def array_kind(x: Any) -> str:
    """The backend an array belongs to, as a short name.

    One of ``"numpy"`` (arrays and NumPy scalars), ``"torch"``, ``"jax"``
    (concrete and traced arrays), ``"dask"``, ``"cupy"``, ``"strict"``
    (array-api-strict) or ``"other"``: any other array-API object, and any
    object that is not an array (:func:`is_array` is false: classes, dtype
    objects, lists).  For posenc_viz, which must leave the array API to read
    values on the host; computations use the namespace instead.
    """
    if not is_array(x):
        return "other"
    if _aac.is_numpy_array(x):
        return "numpy"
    if _aac.is_torch_array(x):
        return "torch"
    if _aac.is_jax_array(x):
        return "jax"
    if _aac.is_dask_array(x):
        return "dask"
    if _aac.is_cupy_array(x):
        return "cupy"
    try:
        strict = _aac.is_array_api_strict_namespace(_aac.array_namespace(x))
    except Exception:  # noqa: BLE001 - an array-like without a usable namespace
        strict = False
    return "strict" if strict else "other"


def _jax_eager() -> bool:
    """Whether JAX runs eagerly here: inside ``jax.jit`` (or ``vmap``, ``grad``)
    even a concrete array closed over by the traced function gives traced
    results, on which ``bool()`` raises."""
    try:
        from jax._src.core import trace_state_clean
    except ImportError:  # pragma: no cover - another JAX: assume it may trace
        return False
    return bool(trace_state_clean())


#: whether CPU torch tensors take the decisions of a device's
#: (:func:`posenc._kernels.as_device` sets it, for tests, counts and checks)
AS_DEVICE = False


def in_host_memory(x: Array) -> bool:
    """Whether the values of an eager array live in host memory, where
    reading them costs no device round trip: NumPy arrays, torch CPU tensors
    (not under :func:`posenc._kernels.as_device`), JAX arrays on the CPU,
    array-api-strict arrays; not CUDA tensors, CuPy arrays or JAX arrays on
    an accelerator."""
    if type(x) is np.ndarray:
        return True
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return x.device.type == "cpu" and not AS_DEVICE
    if _aac.is_cupy_array(x):
        return False
    if _aac.is_jax_array(x):
        try:
            return all(d.platform == "cpu" for d in x.devices())
        except Exception:  # noqa: BLE001 - a tracer or an array without devices
            return False
    return True


def has_values(x: Array) -> bool:
    """Whether ``x`` holds values at all (not traced, lazy or ``meta``),
    wherever they live."""
    if type(x) is np.ndarray:
        return True
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        # traced by torch.compile / torch.export: fake values, never read; a
        # tensor of torch.func's transforms (vmap: bool() on it raises)
        return (
            x.device.type != "meta"
            and not torch.compiler.is_compiling()
            and not torch._C._functorch.is_functorch_wrapped_tensor(x)
        )
    if _aac.is_jax_array(x):
        jax = sys.modules.get("jax")
        return jax is not None and not isinstance(x, jax.core.Tracer) and _jax_eager()
    if _aac.is_dask_array(x):
        return False
    return not _aac.is_lazy_array(x)


def is_concrete(x: Array) -> bool:
    """Whether the values of ``x`` can be read cheaply: it holds values
    (:func:`has_values`: not traced, lazy or ``meta``) in host memory
    (:func:`in_host_memory`: not on a device).

    Value checks (NaN positions, out-of-range codes) run only on concrete
    arrays; traced and lazy arrays are never computed by posenc, and a
    device array is never read back (its checks become NaN rows).
    """
    return has_values(x) and in_host_memory(x)


def int_range(xp: Any, x: Array) -> tuple[int, int]:
    """``(min, max)`` of a concrete, non-empty integer array as Python ints
    (one reduction for torch tensors, two elsewhere; ``xp`` its namespace,
    or None for a NumPy array or a torch tensor).

    torch has no reduction, sum or ordering comparison of uint16, uint32
    and uint64 tensors: those are read as int64, uint64 through its bits with
    the sign bit flipped (``u - 2**63``, a map onto int64 that keeps the
    order: exact over the whole uint64 range)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):  # (one reduction for both)
        if not x.dtype.is_signed and x.dtype.itemsize > 1:
            if x.dtype == torch.uint64:
                lo, hi = torch.aminmax(x.view(torch.int64) ^ _INT64_MIN)
                return int(lo) - _INT64_MIN, int(hi) - _INT64_MIN
            x = x.to(torch.int64)
        lo, hi = torch.aminmax(x)
        return int(lo), int(hi)
    if xp is None:
        return int(x.min()), int(x.max())
    return int(xp.min(x)), int(xp.max(x))


#: the smallest int64, the sign bit: flipped in uint64's bits by :func:`int_range`
_INT64_MIN = -(2**63)


# --------------------------------------------------------------------------
# namespaces
# --------------------------------------------------------------------------
#: normalize_namespace's answers
_NAMESPACES = _cache.Memo("compat.namespaces", 64)


def _normalize_cached(xp: Any) -> Any:
    if _tracing():
        return _normalize(xp)
    got = _NAMESPACES.get(xp)
    if got is None:
        got = _normalize(xp)
        _NAMESPACES.put(xp, got)
    return got


#: the array-API-compatible module of each backend
_COMPAT_MODULES = {
    Backend.NUMPY: "array_api_compat.numpy",
    Backend.TORCH: "array_api_compat.torch",
    Backend.CUPY: "array_api_compat.cupy",
    Backend.DASK: "array_api_compat.dask.array",
    Backend.JAX: "jax.numpy",
}


def _normalize(xp: Any) -> Any:
    name = _COMPAT_MODULES.get(backend_of(xp))
    if name is not None:
        module = sys.modules.get(name)
        return module if module is not None else importlib.import_module(name)
    if hasattr(xp, "__array_api_version__") and hasattr(xp, "asarray"):
        return xp
    msg = f"`xp` must be an array namespace (such as numpy, torch, jax.numpy), got {show(xp)}"
    raise TypeError(msg)


def normalize_namespace(xp: Any) -> Any:
    """Return the array-API-compatible namespace for a module or namespace.

    ``numpy``, ``torch``, ``cupy``, ``dask.array`` and ``jax.numpy`` are mapped
    to their :mod:`array_api_compat` wrappers (or themselves where they comply).
    """
    if not hasattr(xp, "__name__") or isinstance(xp, str):
        msg = f"`xp` must be an array namespace (such as numpy, torch, jax.numpy), got {show(xp)}"
        raise TypeError(msg)
    try:
        return _normalize_cached(xp)
    except TypeError as exc:  # unhashable objects
        if "unhashable" in str(exc):
            msg = f"`xp` must be an array namespace (such as numpy, torch, jax.numpy), got {show(xp)}"
            raise TypeError(msg) from None
        raise


def _namespace_from_dtype(dtype: Any) -> Any | None:
    """Guess a namespace from a backend dtype object (torch, array-api-strict)."""
    mod = type(dtype).__module__ or ""
    if mod.startswith("torch"):
        import torch

        return normalize_namespace(torch)
    if mod.startswith("array_api_strict"):
        import array_api_strict

        return array_api_strict
    return None


def _namespace_from_device(device: Any) -> Any | None:
    """The namespace a device object belongs to (torch, CuPy, JAX,
    array-api-strict), or None for strings, ints and unknown objects."""
    if isinstance(device, (str, int)):
        return None
    mod = type(device).__module__ or ""
    for prefix, name in (("torch", "torch"), ("cupy", "cupy"), ("jaxlib", "jax.numpy"), ("jax", "jax.numpy")):
        if mod.startswith(prefix) and name.split(".")[0] in sys.modules:
            return normalize_namespace(importlib.import_module(name))
    if mod.startswith("array_api_strict"):
        import array_api_strict

        return array_api_strict
    return None


# --------------------------------------------------------------------------
# devices
# --------------------------------------------------------------------------
def _same_device(xp: Any, a: Any, b: Any) -> bool:
    if a is None or b is None:
        return True
    if backend_of(xp) is Backend.TORCH:
        import torch

        a, b = torch.device(a), torch.device(b)
        if a.type != b.type:
            return False
        return a.index is None or b.index is None or a.index == b.index
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - exotic device objects
        return a is b


def _normalize_device(xp: Any, device: Any) -> Any:
    if device is None:
        return None
    if isinstance(device, (bool, float, complex, bytes)):
        msg = f"`device` must be a device of {namespace_name(xp)}, got {show(device)}"
        raise TypeError(msg)
    if backend_of(xp) is Backend.TORCH and not isinstance(device, bool):
        import torch

        if isinstance(device, torch.device):
            return device
        if not isinstance(device, (str, numbers.Integral)):
            msg = f"`device` must be a torch device, got {show(device)}"
            raise TypeError(msg)
        try:
            return torch.device(device if isinstance(device, str) else int(device))
        except (RuntimeError, ValueError, TypeError):
            msg = f"`device` must be a torch device, got {show(device)}"
            raise ValueError(msg) from None
    return device


#: (namespace, device type, device repr) -> whether arrays can be made there
_DEVICE_OK = _cache.Memo("compat.device_ok", 1024)


def _check_device(xp: Any, device: Any) -> None:
    """Refuse a ``device=`` that the namespace cannot create arrays on.

    Tried once per device with an empty array (cached): an unknown device
    (``device=0`` for NumPy, ``"cuda"`` without a GPU) is a :class:`ValueError`
    naming ``device`` instead of a backend error from deep inside a call.
    """
    if isinstance(device, (bool, float, complex, bytes)):
        msg = f"`device` must be a device of {namespace_name(xp)}, got {show(device)}"
        raise TypeError(msg)
    try:
        key: Any = (namespace_name(xp), type(device).__name__, repr(device))
    except Exception:  # pragma: no cover - a device without repr
        key = None
    ok = _DEVICE_OK.get(key) if key is not None else None
    if ok is None:
        try:
            xp.empty((0,), device=device)
            ok = True
        except Exception:
            ok = False
        if key is not None:
            _DEVICE_OK.put(key, ok)
    if not ok:
        msg = f"`device` must be a device of {namespace_name(xp)} that is available here, got {show(device)}"
        raise ValueError(msg)


#: array types whose ``.device`` attribute is the device array-api-compat reports
_DEVICE_ATTR = _cache.Memo("compat.device_attr", 256)


def _has_device_attr(x: Any) -> bool:
    """:func:`_device_attr_ok` kept per type."""
    t = type(x)
    ok = _DEVICE_ATTR.get(t)
    if ok is None:
        ok = _device_attr_ok(x)
        _DEVICE_ATTR.put(t, ok)
    return ok


def _device_attr_ok(v: Any) -> bool:
    """Whether arrays of ``type(v)`` carry their device as ``.device`` (NumPy
    2, torch, CuPy, array-api-strict): not JAX (a tracer has no device),
    not Dask, not objects that are no arrays (lists, numbers)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(v, torch.Tensor):
        # decided without array-api-compat, whose checks torch.compile would trace
        return True
    if not is_array(v) or _aac.is_jax_array(v) or _aac.is_dask_array(v):
        return False
    try:
        return v.device == _aac.device(v) and hasattr(v, "dtype")
    except Exception:
        return False


# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------
def _real_float_dtypes(xp: Any, device: Any) -> dict[str, Any]:
    info = xp.__array_namespace_info__()
    try:
        return dict(info.dtypes(device=device, kind="real floating"))
    except Exception:  # some namespaces reject device objects they did not make
        return dict(info.dtypes(kind="real floating"))


def has_float64(xp: Any, device: Any) -> bool:
    """Whether float64 is available on ``device`` of namespace ``xp`` (torch's
    CPU and CUDA devices answered without the namespace's probe, which makes
    a tensor of each dtype there)."""
    tp = type(device)
    if tp.__module__ == "torch" and tp.__name__ == "device" and device.type in _TORCH_F64_DEVICES:
        return True
    return "float64" in _real_float_dtypes(xp, device)


#: torch device types that always have float64
_TORCH_F64_DEVICES = frozenset({"cpu", "cuda"})


def default_dtype(xp: Any, device: Any, kind: str = "real floating") -> Any:
    """The default dtype of ``kind`` (``"real floating"``, ``"integral"``,
    ``"indexing"``) of namespace ``xp`` on ``device``."""
    info = xp.__array_namespace_info__()
    try:
        return info.default_dtypes(device=device)[kind]
    except Exception:  # namespaces that reject device objects they did not make
        return info.default_dtypes()[kind]


def numpy_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype of a NumPy, torch or CuPy floating / integer dtype
    (``torch.float32`` -> ``float32``), for host-side buffers."""
    return np.dtype(str(dtype).removeprefix("torch."))


#: (namespace, dtype, kind) -> answer of the two dtype predicates below
_DTYPE_KIND = _cache.Memo("compat.dtype_kind", 1024)


def is_real_float_dtype(xp: Any, dtype: Any) -> bool:
    return _dtype_is(xp, dtype, "real floating")


def is_integer_dtype(xp: Any, dtype: Any) -> bool:
    return _dtype_is(xp, dtype, "integral")


def widest_int(xp: Any) -> Any:
    """The widest signed integer dtype of ``xp``: int64, or the default
    integer where int64 does not exist (JAX without ``jax_enable_x64``:
    int32).  Offsets are added to integer positions in it."""
    # (no lookup while torch's compiler traces: its tracer must not follow the memo)
    return _WIDEST_INT.get_or_make(None if _tracing() else xp, _widest_int, xp)


def _widest_int(xp: Any) -> Any:
    info = xp.__array_namespace_info__()
    signed = info.dtypes(kind="signed integer")
    return signed["int64"] if "int64" in signed else info.default_dtypes()["integral"]


_WIDEST_INT = _cache.Memo("compat.widest_int", 64)


def _dtype_is(xp: Any, dtype: Any, kind: str) -> bool:
    """``xp.isdtype(dtype, kind)``, kept per (namespace, dtype, kind) outside
    torch's tracer (NumPy's ``isdtype`` costs microseconds per call)."""
    if _tracing():
        return _isdtype(xp, dtype, kind)
    key: Any = (xp, type(dtype), dtype, kind)  # (the type first: see _fast_key)
    try:
        got = _DTYPE_KIND.get(key)
    except TypeError:  # an unhashable non-dtype
        key, got = None, None
    if got is None:
        got = _isdtype(xp, dtype, kind)
        if key is not None:
            _DTYPE_KIND.put(key, got)
    return got


def _isdtype(xp: Any, dtype: Any, kind: str) -> bool:
    try:
        return bool(xp.isdtype(dtype, kind))
    except Exception:
        # torch's bfloat16/float16 and other extension types
        if kind == "real floating" and backend_of(xp) is Backend.TORCH:
            import torch

            return isinstance(dtype, torch.dtype) and dtype.is_floating_point and not dtype.is_complex
        return False


def native_dtype(xp: Any, dtype: Any) -> Any:
    """``dtype`` as the namespace's own dtype object where the namespace has
    several spellings of one (NumPy and Dask: ``np.dtype`` of it), or None
    where it is none; other namespaces' dtypes as given."""
    if backend_of(xp) in (Backend.NUMPY, Backend.DASK):
        try:
            return np.dtype(dtype)
        except (TypeError, ValueError):
            return None
    return dtype


def _normalize_dtype(xp: Any, dtype: Any, name: str = "dtype") -> Any:
    if is_array(dtype) or isinstance(dtype, (bool, int, float, complex, bytes)) or dtype is np:
        # a value, not a dtype (``np.float64(2.0)`` would pass for float64)
        msg = f"`{name}` must be a real floating dtype of {xp.__name__}, got {show(dtype)}"
        raise TypeError(msg)
    if isinstance(dtype, str):
        obj = getattr(xp, dtype, None)
        if obj is None:
            msg = f"`{name}` must be a real floating dtype of {xp.__name__}, got {dtype!r}"
            raise ValueError(msg)
        dtype = obj
    native = native_dtype(xp, dtype)
    if native is None:
        msg = f"`{name}` must be a real floating dtype of {xp.__name__}, got {show(dtype)}"
        raise TypeError(msg)
    dtype = native
    if not is_real_float_dtype(xp, dtype):
        msg = f"`{name}` must be a real floating dtype of {xp.__name__}, got {show(dtype)}"
        raise TypeError(msg)
    return dtype


def _is(xp: Any, dtype: Any, name: str) -> bool:
    try:
        if dtype == getattr(xp, name):
            return True
    except Exception:  # pragma: no cover
        return False
    if backend_of(xp) is Backend.TORCH:
        return False
    # NumPy-like namespaces: ``np.float64`` and ``jnp.float64`` name one dtype
    try:
        return np.dtype(dtype) == np.dtype(name)
    except Exception:
        return False


# --------------------------------------------------------------------------
# the context of a call
# --------------------------------------------------------------------------
@_cache.holds_no_arrays
@dataclass(frozen=True, slots=True)
class Context:
    """Resolved namespace, device and dtypes of one call, and the answers
    the engine and the kernels need about them.

    Attributes
    ----------
    xp : namespace
        The array-API-compatible namespace.
    device : object or None
        The device of the inputs (``None``: the namespace's default device).
    dtype : dtype
        The output dtype.
    work : dtype
        The dtype the computation runs in: float64 for float64 output,
        float32 otherwise (float16 / bfloat16 outputs are computed in float32).
    float64 : bool
        Whether float64 exists on the device.
    backend : Backend
        The namespace's backend (:func:`backend_of`).
    traced : bool
        Whether torch's compiler or exporter traced the call when it was
        resolved (a traced context is never cached).
    wide : dtype
        The widest real float on the device (float64 where it exists).
    keeps : bool
        Whether device copies of host constants may be kept for it (eager
        NumPy and torch: :func:`posenc._trace.graph_constant`).
    """

    xp: Any
    device: Any
    dtype: Any
    work: Any
    float64: bool
    backend: Backend = Backend.OTHER
    traced: bool = False
    wide: Any = None
    keeps: bool = False

    def with_dtype(self, dtype: Any) -> Context:
        """This context with ``dtype`` as both output and working dtype
        (float32 or float64: the tables of an input's working dtype)."""
        return dataclasses.replace(self, dtype=dtype, work=dtype)

    def place(self, out: Any, like: Any = None) -> Any:
        """``out`` (an array or a tuple of arrays) on this context's device,
        also where ``jax.jit`` traces the call.

        Under ``jax.jit`` the device of a result is decided by the
        computation, not by the ``device=`` of the calls that made its parts:
        ``zeros``, ``ones``, ``full`` and ``empty`` ignore ``device=`` there, and
        a concrete array the trace closes over (a cached table) loses its
        placement, so such a result would land on JAX's default device.
        ``jax.device_put`` with a single-device sharding is the placement
        ``jax.jit`` honours (a sharding constraint of the result).  Elsewhere
        (other namespaces, no device: traced inputs carry their own
        placement) ``out`` is returned as it is; eager JAX arrays are moved
        only where an operation left the device (empty arrays may land on
        the default one).

        ``like``: the traced input a result that does not depend on it (an
        empty table, a zero column) belongs with.  A traced input has no
        device to ask for, and ``jax.jit`` places a result that depends on no
        input on the default device: the result is made to depend on
        ``like`` (plus a zero reduced from none of its elements).
        """
        if self.backend is not Backend.JAX:
            return out
        if self.device is None:
            if like is None or _jax_eager():
                return out
            xp = self.xp
            zero = xp.sum(xp.reshape(like, (-1,))[:0])
            if isinstance(out, (tuple, list)):
                return type(out)(a + xp.astype(zero, a.dtype) for a in out)
            return out + xp.astype(zero, out.dtype)
        if _jax_eager() and all(getattr(a, "device", None) == self.device for a in _leaves(out)):
            return out
        import jax
        from jax.sharding import SingleDeviceSharding

        return jax.device_put(out, SingleDeviceSharding(self.device))

    def from_host(self, array: np.ndarray, dtype: Any = None, *, kept: bool = False) -> Array:
        """Move a host NumPy array to this context's namespace and device, in
        ``dtype`` (default: the working dtype).

        Under ``jax.jit`` the array becomes a constant; on Dask a single-chunk
        array; a torch tensor never aliases the host array (posenc may reuse
        it), except while torch's compiler traces, which copies it into the
        graph.  ``kept``: the array outlives the call (a cached constant), so
        a torch tensor is never an inference tensor, which a later call under
        autograd could not save for backward.
        """
        dtype = self.work if dtype is None else dtype
        if self.backend is Backend.NUMPY:
            return np.asarray(array, dtype=dtype)
        if self.backend is Backend.TORCH:
            import torch

            if torch.compiler.is_dynamo_compiling():
                return torch.as_tensor(array, dtype=dtype, device=self.device)
            # a copy: torch cannot wrap a read-only NumPy buffer without a warning
            host = np.array(array, copy=True)
            if kept and torch.is_inference_mode_enabled():
                with torch.inference_mode(False):
                    return torch_upload(torch.as_tensor(host, dtype=dtype, device="cpu"), self.device)
            return torch_upload(torch.as_tensor(host, dtype=dtype, device="cpu"), self.device)
        return self.xp.asarray(array, dtype=dtype, device=self.device)

    def asarray(self, obj: Any, dtype: Any = None) -> Array:
        """Host data (a Python number, a (nested) list or tuple of them) as
        an array of this context's namespace, on its device:
        ``xp.asarray(obj, dtype=dtype, device=device)`` (``dtype=None``: the
        namespace infers it), except that a torch tensor is made on the
        host and moved with :func:`torch_upload`, which does not
        synchronise a CUDA device.  While torch's compiler traces, the
        namespace's own ``asarray`` (a constant of the graph).  Errors are
        the namespace's (a ragged list: its ``ValueError``)."""
        if self.backend is Backend.TORCH and not self.traced:
            import torch

            if not torch.compiler.is_dynamo_compiling():
                return torch_upload(torch.asarray(obj, dtype=dtype, device="cpu"), self.device)
        return self.xp.asarray(obj, dtype=dtype, device=self.device)


def torch_upload(host: Array, device: Any) -> Array:
    """A torch CPU tensor that nothing else holds (posenc's own copy of host
    data) on ``device`` (``None``: torch's default device), without
    synchronising a CUDA device.

    torch's default copy to a CUDA device (``non_blocking=False``) waits for
    the copy, and so for every kernel queued before it on the stream: a
    synchronisation (``torch.cuda.set_sync_debug_mode`` reports it).  Here the
    data is staged in page-locked (pinned) memory and copied with
    ``non_blocking=True``: an asynchronous copy, queued on the current stream
    like a kernel, which the kernels that read the result follow in stream
    order.  The pinned buffer comes from torch's caching host allocator,
    which records the copy on the stream and reuses the buffer only once the
    copy has run, so it may be dropped at once.  From pinned memory the copy
    is asynchronous (CUDA's "API synchronization behavior" notes); a copy
    from pageable memory, even a ``non_blocking`` one, may wait for the
    stream while the driver stages it.  Where no pinned memory can be had,
    the pageable copy is still ``non_blocking``: torch issues no
    synchronisation, and a copy from pageable memory to a CUDA device is the
    one asynchronous copy that is safe without one (torch's guide on
    ``non_blocking`` and ``pin_memory``: the data is staged before the call
    returns), so the temporary may be freed.

    A result kept across calls (a constant of :data:`posenc._trace.CONSTANTS`)
    is, like a table a kernel computed and posenc cached, ready in the order
    of the stream it was made on.  Other devices (the CPU, ``meta``) take
    torch's plain ``to``.
    """
    import torch

    target = torch.get_default_device() if device is None else torch.device(device)
    if target.type != "cuda":
        return host.to(target)
    try:
        staged = host.pin_memory()
    except RuntimeError:  # no page-locked memory to be had: the pageable copy
        staged = host
    return staged.to(target, non_blocking=True)


def _leaves(out: Any) -> tuple[Any, ...]:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _context(xp: Any, device: Any, dtype: Any, work: Any, f64: bool, traced: bool = False) -> Context:
    backend = backend_of(xp)
    return Context(
        xp=xp,
        device=device,
        dtype=dtype,
        work=work,
        float64=f64,
        backend=backend,
        traced=traced,
        wide=xp.float64 if f64 else xp.float32,
        keeps=backend in (Backend.NUMPY, Backend.TORCH) and not traced,
    )


#: resolved contexts of the common call (no ``xp``, no ``device``), keyed by
#: the arrays' (type, dtype, device) and the requested dtype: resolving then
#: costs one dictionary lookup
_CONTEXTS = _cache.Memo("compat.contexts", 1024)


def _fast_key(arrays: dict[str, Any] | None, dtype: Any, float_output: bool) -> Any:
    """The cache key of a call, or None where the call must take the full path."""
    parts = []
    for v in (arrays or {}).values():
        if v is None or type(v) is int:
            continue
        if not _has_device_attr(v):
            return None
        parts.append((type(v), v.dtype, v.device))
    if not parts:
        return None
    # (the dtype's type first: a lookup compares it before the dtype, never
    # array-api-strict's dtype with NumPy's, which strict warns about)
    key = (tuple(parts), type(dtype), dtype, float_output)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def resolve(
    arrays: dict[str, Any] | None = None,
    *,
    xp: Any = None,
    device: Any = None,
    dtype: Any = None,
    float_output: bool = True,
) -> Context:
    """Resolve namespace, device and dtype for one call.

    Parameters
    ----------
    arrays : dict
        The array arguments by parameter name (non-arrays are ignored).
    xp, device, dtype
        The user's keyword arguments.
    float_output : bool
        When False, ``dtype`` is not validated as a float dtype (the caller
        handles integer outputs itself).

    The common call (arrays of one namespace and device, no ``xp``, no
    ``device``) is cached per (type, dtype, device) of the arrays and the
    requested ``dtype``: the checks below run once per such combination.
    While torch's compiler traces, nothing is cached and the context says
    ``traced``.
    """
    if _tracing():
        ctx = _traced_resolve(arrays, xp, device, dtype, float_output)
        if ctx is None:
            ctx = _resolve(arrays, xp=xp, device=device, dtype=dtype, float_output=float_output)
            ctx = dataclasses.replace(ctx, traced=True, keeps=False)
        return ctx
    key = None
    if xp is None and device is None:
        key = _fast_key(arrays, dtype, float_output)
        if key is not None:
            ctx = _CONTEXTS.get(key)
            if ctx is not None:
                return ctx
    ctx = _resolve(arrays, xp=xp, device=device, dtype=dtype, float_output=float_output)
    if key is not None:
        _CONTEXTS.put(key, ctx)
    return ctx


def _traced_resolve(
    arrays: dict[str, Any] | None, xp: Any, device: Any, dtype: Any, float_output: bool
) -> Context | None:
    """:func:`resolve` while torch's compiler traces: torch tensors (or a
    creation call with ``xp=torch``) are resolved from their device alone, on
    the host (:func:`_traced_torch_dtypes`), without the array-api-compat
    checks the tracer would have to follow.  None where the call is anything
    else, or is an error: the full path then decides (and raises)."""
    torch = sys.modules["torch"]
    devices = []
    for v in (arrays or {}).values():
        if isinstance(v, torch.Tensor):
            devices.append(v.device)
        elif not (v is None or isinstance(v, (bool, int, float, str, list, tuple)) or is_symbolic(v)):
            # lists and tuples of numbers are converted in the namespace later
            return None
    if xp is not None and xp is not torch and xp is not sys.modules.get("array_api_compat.torch"):
        return None
    if not devices and xp is None:
        return None
    if devices:
        if any(d != devices[0] for d in devices) or device is not None:
            return None
        dev = devices[0]
    else:
        dev = device
    import array_api_compat.torch as ns

    dev, out, work, f64 = _traced_torch_dtypes(dev, dtype, float_output)
    return _context(ns, dev, out, work, f64, traced=True)


@host_constant
def _traced_torch_dtypes(device: Any, dtype: Any, float_output: bool) -> tuple[Any, Any, Any, bool]:
    """Device, output dtype, working dtype and float64 availability of torch
    tensors on ``device``, for calls traced by torch's compiler (run once on
    the host while tracing: the tensors themselves are fake there)."""
    import torch

    ctx = _resolve(None, xp=torch, device=device, dtype=dtype, float_output=float_output)
    return ctx.device, ctx.dtype, ctx.work, ctx.float64


def _resolve(arrays: dict[str, Any] | None, *, xp: Any, device: Any, dtype: Any, float_output: bool) -> Context:
    if xp is None and device is None and dtype is None:
        ctx = _torch_context(arrays)
        if ctx is not None:
            return ctx
    named = {k: v for k, v in (arrays or {}).items() if v is not None and is_array(v)}
    if xp is not None:
        xp = normalize_namespace(xp)
        for k, v in named.items():
            got = normalize_namespace(_aac.array_namespace(v))
            if got is not xp:
                msg = f"`{k}` is a {got.__name__} array but `xp` is {xp.__name__}"
                raise TypeError(msg)
    elif named:
        spaces = {k: normalize_namespace(_aac.array_namespace(v)) for k, v in named.items()}
        first_name, xp = next(iter(spaces.items()))
        for k, ns in spaces.items():
            if ns is not xp:
                msg = (
                    f"`{k}` is a {ns.__name__} array but `{first_name}` is a "
                    f"{xp.__name__} array; pass arrays of one namespace"
                )
                raise TypeError(msg)
    elif dtype is not None and not isinstance(dtype, str) and (ns := _namespace_from_dtype(dtype)) is not None:
        xp = ns
    elif device is not None and (ns := _namespace_from_device(device)) is not None:
        # a device object names its namespace: device=torch.device("cpu")
        xp = ns
    else:
        xp = normalize_namespace(np)

    # device
    arr_device = None
    arr_device_name = None
    for k, v in named.items():
        d = _aac.device(v)
        if arr_device_name is None:
            arr_device, arr_device_name = d, k
        elif not _same_device(xp, arr_device, d):
            msg = f"`{k}` is on device {d!r} but `{arr_device_name}` is on {arr_device!r}"
            raise ValueError(msg)
    device = _normalize_device(xp, device)
    if device is not None and arr_device_name is None:
        _check_device(xp, device)
    if device is not None and arr_device_name is not None and not _same_device(xp, device, arr_device):
        msg = (
            f"`device` is {device!r} but `{arr_device_name}` is on {arr_device!r}; "
            "the output always lives on the inputs' device"
        )
        raise ValueError(msg)
    if arr_device_name is not None and (arr_device is not None or device is None):
        # (a traced JAX array has no device: a `device=` given with it is kept, and honoured by Context.place)
        device = arr_device

    f64 = has_float64(xp, device)
    if dtype is None:
        out = default_dtype(xp, device)
    elif float_output:
        out = _normalize_dtype(xp, dtype)
        if not f64 and _is(xp, out, "float64"):
            msg = f"`dtype` float64 is not available on device {device!r} of {xp.__name__}"
            raise ValueError(msg)
    else:
        out = dtype
    work = xp.float64 if _is(xp, out, "float64") else xp.float32
    return _context(xp, device, out, work, f64)


def _torch_context(arrays: dict[str, Any] | None) -> Context | None:
    """The context of torch tensors on one CPU or CUDA device with no
    ``xp``, ``device`` or ``dtype`` given (a model's call), from the tensors
    alone: array-api-compat's namespace, torch's default float dtype (what
    its ``default_dtypes`` answers), float64 present.  None for anything
    else (the full path decides, and raises).  A first call spares the
    namespace and device lookups, whose cost is mostly that of code not run
    lately."""
    torch = sys.modules.get("torch")
    if torch is None or not arrays:
        return None
    dev = None
    for v in arrays.values():
        if v is None or type(v) is int:
            continue
        if not isinstance(v, torch.Tensor):
            return None
        d = v.device
        if dev is None:
            dev = d
        elif d != dev:
            return None
    if dev is None or dev.type not in _TORCH_F64_DEVICES:
        return None
    xp = sys.modules.get("array_api_compat.torch") or importlib.import_module("array_api_compat.torch")
    out = torch.get_default_dtype()
    return _context(xp, dev, out, xp.float64 if out == torch.float64 else xp.float32, True)


def call_key(arrays: tuple[Any, ...], options: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The cache key of a call, for the plans of the hot paths
    (:meth:`posenc._cache.Memo.get_or_make`): each array's ``(type, dtype,
    device, shape)`` and each option with its type (``128``, ``128.0`` and
    ``True`` hash alike but are checked differently).  NumPy arrays leave out
    the device (always the CPU).

    None where an array's type does not carry its device as an attribute
    (JAX, Dask, lists, numbers: they take the full checks) or torch's
    compiler traces the call (its tracer must not follow cache lookups).
    The key is not hashed here (the lookup hashes it, and treats unhashable
    options as no key).  Built by appends in one loop (a decode step builds
    three keys: each costs about a microsecond).
    """
    if _tracing():
        return None
    first = type(arrays[0])
    key: list[Any] = [first]
    add = key.append
    for a in arrays:
        t = type(a)
        if t is np.ndarray and first is t:
            add(a.dtype)
            add(a.shape)
        elif _has_device_attr(a):
            add(t)
            add(a.dtype)
            add(a.device)
            add(a.shape)
        else:
            return None
    for o in options:
        add(type(o))
        add(o)
    return tuple(key)


def int_key(n: Any, options: tuple[Any, ...], xp: Any, device: Any, dtype: Any) -> tuple[Any, ...] | None:
    """The plan key of a call whose positions are a Python int ``n`` (see
    :func:`call_key`), where the call resolves to NumPy whatever the state of
    other libraries: no ``xp``, no ``device``, ``dtype`` None, a name or a
    NumPy dtype (a torch context without a device would follow torch's
    default device and dtype, which may change between calls).  Else None."""
    if type(n) is not int or xp is not None or device is not None or _tracing():
        return None
    numpy_like = dtype is None or isinstance(dtype, str) or type(dtype).__module__.startswith(("numpy", "builtins"))
    if not numpy_like:
        return None
    key: list[Any] = [int, n]
    add = key.append
    for o in options:
        add(type(o))
        add(o)
    return tuple(key)
