"""Probes of the device path, run on the CPU: no value read back, and the
work launched per call.

On a GPU a call that reads a value back (``.item()``, ``bool()`` of a
tensor, a host ``min`` / ``max``, a copy to host memory) stalls the stream,
and every operation launches a kernel.  Inside
:func:`posenc._kernels.as_device` CPU torch tensors take exactly the
decisions of CUDA tensors, and these two context managers watch them:

* :func:`no_reads` fails on any read of a tensor's value (the aten
  operations that read one, and ``Tensor.numpy`` / ``tolist`` / ``item``,
  through which NumPy and Python read host memory);
* :func:`count_launches` counts the aten operations that launch work (not
  the views and the allocations, which launch nothing) plus the Triton
  kernels launched (:data:`posenc._kernels.triton.on_launch`).

On the H100 the portable path's counts matched its CUDA kernels within
about 20% (``torch.profiler``); they are the budget the tests hold each call
of a model's step to.

Used by the test suite, the benchmarks and the device check; import torch
before calling them.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

__all__ = ["ValueRead", "count_launches", "no_reads", "warm_launches"]


class ValueRead(AssertionError):
    """A value of a tensor was read back on the device path."""


#: aten operations that read a value back to the host
_READS = ("_local_scalar_dense", "item", "equal", "is_nonzero", "allclose", "tolist")
#: aten operations that launch no work: allocations and bookkeeping
_FREE = (
    "empty",
    "empty_like",
    "empty_strided",
    "detach",
    "alias",
    "lift_fresh",
    "set_",
    "resize_",
    "_reshape_alias",
    "_unsafe_view",
    "view",
    "_has_compatible_shallow_copy_type",
)


def _name(func: Any) -> str:
    """``aten.add.Tensor`` -> ``add``."""
    return func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)


def _launches(func: Any) -> bool:
    """Whether an aten operation launches work on a device."""
    if getattr(func, "is_view", False):
        return False
    return _name(func).rstrip("_") not in _FREE and _name(func) not in _FREE


def _mode_base() -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


@contextlib.contextmanager
def no_reads() -> Iterator[None]:
    """Fail (:class:`ValueRead`) on any read of a torch tensor's value inside:
    the aten operations that read one (``_local_scalar_dense`` behind
    ``item``, ``bool()``, ``int()`` and ``float()``; ``equal``; ``is_nonzero``)
    and ``Tensor.numpy`` / ``tolist`` / ``item`` / ``__array__`` (NumPy's view
    of host memory: the read of a device array's copy to the host)."""
    import torch

    class _NoReads(_mode_base()):  # type: ignore[misc]
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if _name(func) in _READS:
                raise ValueRead(f"the device path read a value back: aten.{_name(func)}")
            return func(*args, **(kwargs or {}))

    def refuse(what: str) -> Any:
        def read(*args: Any, **kwargs: Any) -> Any:
            raise ValueRead(f"the device path read a value back: Tensor.{what}")

        return read

    patched = ("numpy", "tolist", "item", "__array__")
    saved = {name: torch.Tensor.__dict__.get(name) for name in patched}
    for name in patched:
        setattr(torch.Tensor, name, refuse(name))
    try:
        with _NoReads():
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                delattr(torch.Tensor, name)
            else:
                setattr(torch.Tensor, name, value)


class Launches(Counter[str]):
    """The work launched inside :func:`count_launches`, by operation name
    (``aten.mul``, ``triton.rope``); ``total()`` is the sum."""

    def __str__(self) -> str:
        return f"{self.total()} launches: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.items()))


@contextlib.contextmanager
def count_launches() -> Iterator[Launches]:
    """Count the work launched inside: aten operations that launch a kernel
    on a device (views and allocations do not) and Triton kernels."""
    from . import triton_hook

    counts = Launches()

    class _Count(_mode_base()):  # type: ignore[misc]
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if _launches(func):
                counts[f"aten.{_name(func)}"] += 1
            return func(*args, **(kwargs or {}))

    def launched(name: str) -> None:
        counts[f"triton.{name}"] += 1

    with triton_hook(launched), _Count():
        yield counts


def warm_launches(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, Launches]:
    """``(result, launches)`` of a warm call of ``fn`` (called once before,
    so that plans and cached tables are made outside the count), under
    :func:`no_reads`."""
    fn(*args, **kwargs)
    with no_reads(), count_launches() as counts:
        out = fn(*args, **kwargs)
    return out, counts
