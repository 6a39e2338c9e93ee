"""posenc inside a compiled forward: torch's compiler and exporter, traced lengths.

Everything posenc does differently while a tracer follows a call lives here:

* :func:`compiling`: whether torch's compiler or exporter traces the current
  call.  :func:`posenc._compat.resolve` asks it once per call and records the
  answer as ``Context.traced``; code that has a context reads that field.
  While torch traces, kernels, caches and value checks step aside: the traced
  path is the portable one, built from array operations only;
* :func:`is_symbolic`: a traced integer (``SymInt``, such as ``x.shape[-2]``
  under ``torch.compile(dynamic=True)``), which posenc keeps traced wherever
  shapes do not depend on it (no recompile per length);
* :func:`host_constant`: host work on Python arguments (frequencies, scaling
  factors, thresholds, slopes) that the tracer runs once, eagerly, and embeds
  as a constant;
* :func:`graph_constant`: a host NumPy table of Python arguments as an array
  of a call's namespace and device: a constant of the traced graph (built
  from Python floats: ``torch.export`` captures a traced NumPy array as a fake
  tensor), and outside the tracer a device copy kept per device and dtype.

JAX needs nothing of this module: ``jax.jit`` traces the same portable code,
its tracers are arrays without a device attribute (no plan or context is kept
for them) and host constants are plain NumPy there.

Imports: :mod:`posenc._cache` only (:mod:`posenc._compat` builds on this
module).
"""

from __future__ import annotations

import functools
import operator
import sys
from collections.abc import Callable
from typing import Any

from . import _cache

__all__ = ["compiling", "is_symbolic", "host_constant", "graph_constant", "CONSTANTS"]


def compiling() -> bool:
    """Whether torch's compiler or exporter is tracing the current call."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def is_symbolic(value: Any) -> bool:
    """Whether ``value`` is a traced integer of torch's compiler (``SymInt``),
    such as ``x.shape[-2]`` under ``torch.compile(dynamic=True)``."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.SymInt)


def host_constant(fn: Callable[..., Any]) -> Callable[..., Any]:
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
    fn._dynamo_marked_constant = True  # type: ignore[attr-defined]

    def unpacked(*args: Any, **kwargs: Any) -> Any:
        # what the tracer calls, eagerly: ``fn`` of the arguments with
        # posenc's frozen dataclasses rebuilt from their fields (see _plain)
        return fn(*[_unpack(a) for a in args], **{k: _unpack(v) for k, v in kwargs.items()})

    unpacked._dynamo_marked_constant = True  # type: ignore[attr-defined]

    def call(*args: Any, **kwargs: Any) -> Any:
        # A float reaches the tracer as a lazily built variable under
        # torch.compile(dynamic=True), which it refuses as an argument of a
        # constant function: rebuilding the float from its exact hex form
        # gives the same value as a plain constant.
        if compiling():
            plain = [_plain(a) for a in args]
            for k in kwargs:
                kwargs[k] = _plain(kwargs[k])
            return unpacked(*plain, **kwargs)
        return fn(*args, **kwargs)

    # the wrapper itself is traced (only the wrapped function is constant)
    functools.update_wrapper(call, fn, updated=())
    call.__wrapped_host__ = fn  # type: ignore[attr-defined]
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
    scaling = sys.modules.get("posenc.scaling._formulas")
    if scaling is not None and isinstance(a, scaling.Scaling):
        # a scaling (a frozen dataclass, often from the caller's closure):
        # handed over as a tuple of its class and fields, constants of every
        # torch release (torch 2.11 cannot pass the instance itself to a
        # constant function), and rebuilt by _unpack
        cls = type(a)
        names = getattr(cls, "__match_args__", None)
        if names is not None:
            return (_PACKED, cls, *[_plain(getattr(a, n)) for n in names])
    return a


#: the mark of a frozen dataclass packed by :func:`_plain`
_PACKED = "posenc: a frozen dataclass, packed"


def _unpack(a: Any) -> Any:
    """An argument of :func:`host_constant`'s function as it was: a frozen
    dataclass packed by :func:`_plain` rebuilt from its fields."""
    if type(a) is tuple and len(a) >= 2 and a[0] == _PACKED:
        return a[1](*[_unpack(v) for v in a[2:]])
    return a


@host_constant
def _values(make: Callable[..., Any], *args: Any) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """``make(*args)`` as Python numbers and its shape (run once by the tracer)."""
    a = make(*args)
    return tuple(a.reshape(-1).tolist()), tuple(a.shape)


#: device copies of host constants, by (function, arguments, namespace,
#: device, dtype): eager NumPy and torch only (never while torch traces,
#: never JAX tracers).  The arrays kept here are posenc's own operands and are
#: never handed out: callers combine them into fresh results.
CONSTANTS = _cache.Memo("trace.constants", 512)


def graph_constant(make: Callable[..., Any], *args: Any, ctx: Any, dtype: Any = None, keep: bool = True) -> Any:
    """``make(*args)`` -- a host NumPy array that depends only on the Python
    arguments ``args`` -- in ``ctx``'s namespace, on its device, in ``dtype``
    (default ``ctx.work``).

    * While torch's compiler traces (``ctx.traced``): built from Python
      numbers (:func:`host_constant`), a constant of the graph;
    * eager NumPy and torch (``ctx.keeps``): a device copy kept in
      :data:`CONSTANTS` per function, arguments, device and dtype;
    * elsewhere (JAX, Dask, CuPy, array-api-strict), and for ``keep=False``
      (an array handed out to the caller, who may change it): moved with
      ``ctx.from_host`` on every call (a constant under ``jax.jit``, a
      single-chunk array on Dask).
    """
    if dtype is None:
        dtype = ctx.work
    if ctx.traced:
        flat, shape = _values(make, *args)
        xp = ctx.xp
        return xp.reshape(xp.asarray(flat, dtype=dtype, device=ctx.device), shape)
    if not (keep and ctx.keeps):
        return ctx.from_host(make(*args), dtype)
    key = (make, args, ctx.xp, ctx.device, dtype)
    got = CONSTANTS.get(key)
    if got is None:
        got = ctx.from_host(make(*args), dtype, kept=True)
        CONSTANTS.put(key, got)
    return got
