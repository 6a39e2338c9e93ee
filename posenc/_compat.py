"""Namespace, device and dtype resolution.

This is the only module of :mod:`posenc` that imports :mod:`array_api_compat`.
Every public function resolves its arguments through :func:`resolve`, which
returns a :class:`Context`: the array namespace, the device, the output dtype
and the dtype the computation runs in (never narrower than float32).

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
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import numbers
import operator
import sys
from dataclasses import dataclass
from typing import Any, TypeAlias

import array_api_compat as _aac
import numpy as np

__all__ = [
    "Array",
    "Context",
    "normalize_namespace",
    "resolve",
    "from_host",
    "is_array",
    "array_kind",
    "eager_kind",
    "namespace_kind",
    "numpy_dtype",
    "default_dtype",
    "call_key",
    "remember",
    "lookup",
    "is_concrete",
    "is_integer_dtype",
    "is_real_float_dtype",
    "has_float64",
    "host_constant",
    "compiling",
    "is_symbolic",
]


#: An array of any namespace that follows the Python Array API standard:
#: NumPy, PyTorch, CuPy, JAX, Dask, array-api-strict.  The standard defines no
#: runtime protocol of arrays yet (no class or ``typing.Protocol`` that all of
#: these satisfy), so the alias is :data:`typing.Any`; annotations say
#: ``Array`` where a value is such an array, and keep ``Any`` for namespaces,
#: dtypes, devices and values of any kind.
Array: TypeAlias = Any


#: module names of the namespaces posenc tells apart (the modules and their
#: array-api-compat wrappers)
_NAMESPACE_KINDS = {
    "numpy": "numpy",
    "array_api_compat.numpy": "numpy",
    "torch": "torch",
    "array_api_compat.torch": "torch",
    "cupy": "cupy",
    "array_api_compat.cupy": "cupy",
    "dask.array": "dask",
    "array_api_compat.dask.array": "dask",
    "jax.numpy": "jax",
    "jax.experimental.array_api": "jax",
}


def namespace_kind(xp: Any) -> str:
    """``"numpy"``, ``"torch"``, ``"cupy"``, ``"dask"``, ``"jax"`` or
    ``"other"``: the one classifier of namespaces, by module name (plain
    string comparisons, which torch's compiler folds while tracing)."""
    return _NAMESPACE_KINDS.get(getattr(xp, "__name__", None), "other")


def eager_kind(x: Any, *more: Any) -> str | None:
    """``"numpy"`` for a NumPy array, ``"torch"`` for a plain eager torch
    tensor (not a subclass, not traced by torch's compiler), else None; with
    ``more`` arrays, their common kind (None where they differ).

    The device and autograd are not looked at: each kernel says what else it
    needs.
    """
    kind = None
    if type(x) is np.ndarray:
        kind = "numpy"
    else:
        torch = sys.modules.get("torch")
        if torch is not None and type(x) is torch.Tensor and not torch.compiler.is_compiling():
            kind = "torch"
    if kind is None or all(type(m) is type(x) for m in more):
        return kind
    return None


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
        torch = sys.modules.get("torch")
        # torch first: array-api-compat's checks would be traced by torch.compile
        got = (torch is not None and issubclass(t, torch.Tensor)) or _aac.is_array_api_obj(x)
        remember(_IS_ARRAY, t, got, 256)
    return got


#: is_array's answer per type (array-ness is a property of the class)
_IS_ARRAY: dict[type, bool] = {}


def array_kind(x: Any) -> str:
    """The backend an array belongs to, as a short name.

    One of ``"numpy"`` (arrays and NumPy scalars), ``"torch"``, ``"jax"``
    (concrete and traced arrays), ``"dask"``, ``"cupy"``, ``"strict"``
    (array-api-strict) or ``"other"``: any other array-API object, and any
    object that is not an array (:func:`is_array` is false: classes, dtype
    objects, lists).  For the few places that must leave the array API, such
    as reading values on the host; computations use the namespace instead.
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


#: normalize_namespace's answers (a plain dict: torch's compiler warns about
#: tracing functools caches)
_NAMESPACES: dict[Any, Any] = {}


def _normalize_cached(xp: Any) -> Any:
    if compiling():
        return _normalize(xp)
    got = _NAMESPACES.get(xp)
    if got is None:
        got = _normalize(xp)
        remember(_NAMESPACES, xp, got, 64)
    return got


#: the array-API-compatible module of each namespace kind
_COMPAT_MODULES = {
    "numpy": "array_api_compat.numpy",
    "torch": "array_api_compat.torch",
    "cupy": "array_api_compat.cupy",
    "dask": "array_api_compat.dask.array",
    "jax": "jax.numpy",
}


def _normalize(xp: Any) -> Any:
    name = _COMPAT_MODULES.get(namespace_kind(xp))
    if name is not None:
        module = sys.modules.get(name)
        return module if module is not None else importlib.import_module(name)
    if hasattr(xp, "__array_api_version__") and hasattr(xp, "asarray"):
        return xp
    msg = f"`xp` must be an array namespace (such as numpy, torch, jax.numpy), got {_short(xp)}"
    raise TypeError(msg)


def normalize_namespace(xp: Any) -> Any:
    """Return the array-API-compatible namespace for a module or namespace.

    ``numpy``, ``torch``, ``cupy``, ``dask.array`` and ``jax.numpy`` are mapped
    to their :mod:`array_api_compat` wrappers (or themselves where they comply).
    """
    if not hasattr(xp, "__name__") or isinstance(xp, str):
        msg = f"`xp` must be an array namespace (such as numpy, torch, jax.numpy), got {_short(xp)}"
        raise TypeError(msg)
    try:
        return _normalize_cached(xp)
    except TypeError as exc:  # unhashable objects
        if "unhashable" in str(exc):
            msg = f"`xp` must be an array namespace (such as numpy, torch, jax.numpy), got {_short(xp)}"
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


def _same_device(xp: Any, a: Any, b: Any) -> bool:
    if a is None or b is None:
        return True
    if namespace_kind(xp) == "torch":
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
        msg = f"`device` must be a device of {namespace_name(xp)}, got {_short(device)}"
        raise TypeError(msg)
    if namespace_kind(xp) == "torch" and not isinstance(device, bool):
        import torch

        if isinstance(device, torch.device):
            return device
        if not isinstance(device, (str, numbers.Integral)):
            msg = f"`device` must be a torch device, got {_short(device)}"
            raise TypeError(msg)
        try:
            return torch.device(device if isinstance(device, str) else int(device))
        except (RuntimeError, ValueError, TypeError):
            msg = f"`device` must be a torch device, got {_short(device)}"
            raise ValueError(msg) from None
    return device


#: (namespace, device type, device repr) -> whether arrays can be made there
_DEVICE_OK: dict[tuple[str, str, str], bool] = {}


def _check_device(xp: Any, device: Any) -> None:
    """Refuse a ``device=`` that the namespace cannot create arrays on.

    Tried once per device with an empty array (cached): an unknown device
    (``device=0`` for NumPy, ``"cuda"`` without a GPU) is a :class:`ValueError`
    naming ``device`` instead of a backend error from deep inside a call.
    """
    if isinstance(device, (bool, float, complex, bytes)):
        msg = f"`device` must be a device of {namespace_name(xp)}, got {_short(device)}"
        raise TypeError(msg)
    try:
        key = (namespace_name(xp), type(device).__name__, repr(device))
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
            remember(_DEVICE_OK, key, ok, 1024)
    if not ok:
        msg = f"`device` must be a device of {namespace_name(xp)} that is available here, got {_short(device)}"
        raise ValueError(msg)


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


def _real_float_dtypes(xp: Any, device: Any) -> dict[str, Any]:
    info = xp.__array_namespace_info__()
    try:
        return dict(info.dtypes(device=device, kind="real floating"))
    except Exception:  # some namespaces reject device objects they did not make
        return dict(info.dtypes(kind="real floating"))


def has_float64(xp: Any, device: Any) -> bool:
    """Whether float64 is available on ``device`` of namespace ``xp``."""
    return "float64" in _real_float_dtypes(xp, device)


def default_dtype(xp: Any, device: Any, kind: str = "real floating") -> Any:
    """The default dtype of ``kind`` (``"real floating"``, ``"integral"``,
    ``"indexing"``) of namespace ``xp`` on ``device``."""
    info = xp.__array_namespace_info__()
    try:
        return info.default_dtypes(device=device)[kind]
    except Exception:  # namespaces that reject device objects they did not make
        return info.default_dtypes()[kind]


#: (namespace, dtype, kind) -> answer of the two dtype predicates below
_DTYPE_KIND: dict[Any, bool] = {}


def is_real_float_dtype(xp: Any, dtype: Any) -> bool:
    return _dtype_is(xp, dtype, "real floating")


def is_integer_dtype(xp: Any, dtype: Any) -> bool:
    return _dtype_is(xp, dtype, "integral")


def _dtype_is(xp: Any, dtype: Any, kind: str) -> bool:
    """``xp.isdtype(dtype, kind)``, kept per (namespace, dtype, kind) outside
    torch's tracer (NumPy's ``isdtype`` costs microseconds per call)."""
    if compiling():
        return _isdtype(xp, dtype, kind)
    try:
        key = (xp, dtype, kind)
        got = _DTYPE_KIND.get(key)
    except TypeError:  # an unhashable non-dtype
        key, got = None, None
    if got is None:
        got = _isdtype(xp, dtype, kind)
        if key is not None:
            remember(_DTYPE_KIND, key, got, 1024)
    return got


def _isdtype(xp: Any, dtype: Any, kind: str) -> bool:
    try:
        return bool(xp.isdtype(dtype, kind))
    except Exception:
        # torch's bfloat16/float16 and other extension types
        if kind == "real floating" and namespace_kind(xp) == "torch":
            import torch

            return isinstance(dtype, torch.dtype) and dtype.is_floating_point and not dtype.is_complex
        return False


def _normalize_dtype(xp: Any, dtype: Any, name: str = "dtype") -> Any:
    if is_array(dtype) or isinstance(dtype, (bool, int, float, complex, bytes)) or dtype is np:
        # a value, not a dtype (``np.float64(2.0)`` would pass for float64)
        msg = f"`{name}` must be a real floating dtype of {xp.__name__}, got {_short(dtype)}"
        raise TypeError(msg)
    if isinstance(dtype, str):
        obj = getattr(xp, dtype, None)
        if obj is None and namespace_kind(xp) == "jax":
            obj = getattr(xp, dtype, None)
        if obj is None:
            msg = f"`{name}` must be a real floating dtype of {xp.__name__}, got {dtype!r}"
            raise ValueError(msg)
        dtype = obj
    if namespace_kind(xp) == "numpy" or namespace_kind(xp) == "dask":
        try:
            dtype = np.dtype(dtype)
        except (TypeError, ValueError):
            msg = f"`{name}` must be a real floating dtype of {xp.__name__}, got {_short(dtype)}"
            raise TypeError(msg) from None
    if not is_real_float_dtype(xp, dtype):
        msg = f"`{name}` must be a real floating dtype of {xp.__name__}, got {_short(dtype)}"
        raise TypeError(msg)
    return dtype


@dataclass(frozen=True)
class Context:
    """Resolved namespace, device and dtypes of one call.

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
    """

    xp: Any
    device: Any
    dtype: Any
    work: Any
    float64: bool

    @property
    def float32(self) -> Any:
        return self.xp.float32

    @property
    def wide(self) -> Any:
        """The widest real float on the device (float64 where it exists)."""
        return self.xp.float64 if self.float64 else self.xp.float32


def host_constant(fn: Any) -> Any:
    """Mark ``fn`` as host work whose result depends only on its arguments.

    For functions of Python scalars, tuples, strings and bytes that return
    host constants (NumPy tables of frequencies, angles, slopes, contexts).
    Under :func:`torch.compile` and :func:`torch.export.export` the tracer
    calls such a function once, eagerly, and embeds its result as a constant
    instead of tracing the NumPy code inside it.  This sets the attribute
    that :func:`torch.compiler.assume_constant_result` sets, without importing
    torch (``import posenc`` imports no torch); a test checks that torch still
    marks functions this way.  Outside torch's tracer it changes nothing.
    """
    fn._dynamo_marked_constant = True

    def call(*args: Any, **kwargs: Any) -> Any:
        # A float reaches the tracer as a lazily built variable under
        # torch.compile(dynamic=True), which it refuses as an argument of a
        # constant function: rebuilding the float from its exact hex form
        # gives the same value as a plain constant.
        if compiling():
            plain = [_plain(a) for a in args]
            for k in kwargs:
                kwargs[k] = _plain(kwargs[k])
            return fn(*plain, **kwargs)
        return fn(*args, **kwargs)

    # the wrapper itself is traced (only the wrapped function is constant)
    functools.update_wrapper(call, fn, updated=())
    call.__wrapped_host__ = fn
    return call


def _plain(a: Any) -> Any:
    """A Python number as a plain constant of torch's tracer: floats rebuilt
    from their exact hex form (``dynamic=True`` hands them over lazily), ints
    through ``operator.index`` (a traced int, such as a head dimension read
    from a shape, is fixed for the graph: a guard, not a recompile per call)."""
    if isinstance(a, float):
        return float.fromhex(a.hex())
    if isinstance(a, int) and not isinstance(a, bool):
        return operator.index(a)
    return a


def numpy_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype of a NumPy, torch or CuPy floating / integer dtype
    (``torch.float32`` -> ``float32``), for host-side buffers."""
    return np.dtype(str(dtype).removeprefix("torch."))


def compiling() -> bool:
    """Whether torch's compiler or exporter is tracing the current call.

    Fast paths, caches and value checks step aside while it traces: the
    traced path is the portable one, built from array operations only.
    """
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def is_symbolic(value: Any) -> bool:
    """Whether ``value`` is a traced integer of torch's compiler (``SymInt``),
    such as ``x.shape[-2]`` under ``torch.compile(dynamic=True)``."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.SymInt)


#: resolved contexts of the common call (no ``xp``, no ``device``), keyed by
#: the arrays' (type, dtype, device) and the requested dtype: resolving then
#: costs one dictionary lookup
_CONTEXTS: dict[Any, Context] = {}
_CONTEXTS_MAX = 1024
#: array types whose ``.device`` attribute is the device array-api-compat reports
_DEVICE_ATTR: dict[type, bool] = {}


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
    key = (tuple(parts), dtype, float_output)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def call_key(arrays: tuple[Any, ...], options: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The cache key of a call, for the caches of per-call checks: each
    array's ``(type, dtype, device, shape)`` and each option with its type
    (``128``, ``128.0`` and ``True`` hash alike but are checked differently).
    NumPy arrays leave out the device (always the CPU).

    None where an array's type does not carry its device as an attribute
    (JAX, Dask, lists, numbers: they take the full checks) or torch's
    compiler traces the call (its tracer must not follow cache lookups).
    The key is not hashed here (a lookup hashes it): look it up with
    :func:`lookup`, which treats unhashable options as no key.  Built by
    appends in one loop (a decode step builds three keys: each costs about a
    microsecond).
    """
    if compiling():
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


def lookup(cache: dict[Any, Any], key: Any) -> tuple[Any, Any]:
    """``(key, cache.get(key))``; ``(None, None)`` for no key or an
    unhashable one (unhashable options: the full checks say what is wrong)."""
    if key is None:
        return None, None
    try:
        return key, cache.get(key)
    except TypeError:
        return None, None


#: every dict kept through :func:`remember` (emptied by ``posenc._cache.clear``
#: and in a forked child)
MEMOS: dict[int, dict[Any, Any]] = {}


def remember(cache: dict[Any, Any], key: Any, value: Any, limit: int) -> None:
    """Keep ``value`` under ``key`` in a cache of at most ``limit`` entries,
    dropping the oldest one when it is full (a model that meets ever new
    shapes keeps its latest ones cached)."""
    if id(cache) not in MEMOS:
        MEMOS[id(cache)] = cache
    if len(cache) >= limit:
        # another thread may have evicted it first
        with contextlib.suppress(KeyError, RuntimeError, StopIteration):
            del cache[next(iter(cache))]
    cache[key] = value


def _has_device_attr(x: Any) -> bool:
    """:func:`_device_attr_ok` kept per type."""
    t = type(x)
    ok = _DEVICE_ATTR.get(t)
    if ok is None:
        ok = _device_attr_ok(x)
        remember(_DEVICE_ATTR, t, ok, 256)
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
    """
    if compiling():
        ctx = _traced_resolve(arrays, xp, device, dtype, float_output)
        if ctx is not None:
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
        remember(_CONTEXTS, key, ctx, _CONTEXTS_MAX)
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
    return Context(xp=ns, device=dev, dtype=out, work=work, float64=f64)


@host_constant
def _traced_torch_dtypes(device: Any, dtype: Any, float_output: bool) -> tuple[Any, Any, Any, bool]:
    """Device, output dtype, working dtype and float64 availability of torch
    tensors on ``device``, for calls traced by torch's compiler (run once on
    the host while tracing: the tensors themselves are fake there)."""
    import torch

    ctx = _resolve(None, xp=torch, device=device, dtype=dtype, float_output=float_output)
    return ctx.device, ctx.dtype, ctx.work, ctx.float64


def _resolve(
    arrays: dict[str, Any] | None, *, xp: Any, device: Any, dtype: Any, float_output: bool
) -> Context:
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
    if arr_device_name is not None:
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
    return Context(xp=xp, device=device, dtype=out, work=work, float64=f64)


def _is(xp: Any, dtype: Any, name: str) -> bool:
    try:
        if dtype == getattr(xp, name):
            return True
    except Exception:  # pragma: no cover
        return False
    if namespace_kind(xp) == "torch":
        return False
    # NumPy-like namespaces: ``np.float64`` and ``jnp.float64`` name one dtype
    try:
        return np.dtype(dtype) == np.dtype(name)
    except Exception:
        return False


def from_host(array: np.ndarray, ctx: Context, dtype: Any = None) -> Array:
    """Move a host NumPy array of constants to ``ctx``'s namespace and device.

    Used for the small tables that depend only on Python arguments (angles of
    the coarse and fine position blocks, interpolation weights).  Under
    ``jax.jit`` they become constants; on Dask a single-chunk array.
    """
    xp = ctx.xp
    dtype = ctx.work if dtype is None else dtype
    if namespace_kind(xp) == "numpy":
        return np.asarray(array, dtype=dtype)
    if namespace_kind(xp) == "torch":
        import torch

        if torch.compiler.is_dynamo_compiling():
            # a constant of the traced graph (torch copies it into the graph)
            return torch.as_tensor(array, dtype=dtype, device=ctx.device)
        # a copy: torch cannot wrap a read-only NumPy buffer without a warning,
        # and a tensor must never alias a host table that posenc may reuse
        return torch.as_tensor(np.array(array, copy=True), dtype=dtype, device=ctx.device)
    return xp.asarray(array, dtype=dtype, device=ctx.device)


#: device copies of host constants, by (host key, namespace, device, dtype):
#: eager NumPy and torch only (never while torch traces, never JAX tracers)
_CONSTANTS: dict[Any, Any] = {}
_CONSTANTS_MAX = 512


def constant(key: Any, make: Any, ctx: Context, dtype: Any = None) -> Array:
    """``from_host(make(), ctx, dtype)``, kept per ``key`` (a hashable name of
    the host values), namespace, device and dtype for eager NumPy and torch.

    The arrays kept here are posenc's own operands and are never handed
    out: callers combine them into fresh results.
    """
    dtype = ctx.work if dtype is None else dtype
    if compiling():
        return from_host(make(), ctx, dtype)
    kind = namespace_kind(ctx.xp)
    if kind not in ("numpy", "torch"):
        return from_host(make(), ctx, dtype)
    k = (key, kind, ctx.device, dtype)
    got = _CONSTANTS.get(k)
    if got is None:
        got = from_host(make(), ctx, dtype)
        remember(_CONSTANTS, k, got, _CONSTANTS_MAX)
    return got


def is_concrete(x: Array) -> bool:
    """Whether the values of ``x`` can be read cheaply (not traced, lazy or meta).

    Value checks (NaN positions, out-of-range codes) run only on concrete
    arrays; traced and lazy arrays are never computed by posenc.
    """
    if type(x) is np.ndarray:
        return True
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        # traced by torch.compile / torch.export: fake values, never read
        return x.device.type != "meta" and not torch.compiler.is_compiling()
    if _aac.is_jax_array(x):
        jax = sys.modules.get("jax")
        return jax is not None and not isinstance(x, jax.core.Tracer)
    if _aac.is_dask_array(x):
        return False
    return not _aac.is_lazy_array(x)


def namespace_name(xp: Any) -> str:
    return getattr(xp, "__name__", repr(xp))
