"""One way to read any backend's array on the host: :func:`to_numpy`."""

from __future__ import annotations

import contextlib
import numbers
from typing import Any

import numpy as np

from ._internals import array_kind, has_values, is_array, show

__all__ = ["to_numpy"]

# NumPy kinds matplotlib can draw: bool, signed/unsigned int, float
_PLOTTABLE_KINDS = "biuf"


def to_numpy(x: Any, *, name: str = "x") -> np.ndarray:
    """Copy an array of any supported backend to a NumPy array on the host.

    The only place where :mod:`posenc_viz` reads user arrays.  It handles
    PyTorch tensors that require grad, live on an accelerator or hold
    ``bfloat16`` / ``float16`` values (read as float32), JAX arrays (including
    ``bfloat16``), Dask arrays (computed), CuPy arrays (copied from the GPU),
    array-api-strict arrays on any of its devices, any other object that
    speaks DLPack, and plain (nested) lists of numbers.

    Parameters
    ----------
    x : array or nested sequence of numbers
        The data to read.
    name : str, default "x"
        The parameter name used in error messages.

    Returns
    -------
    numpy.ndarray
        Half-precision floats become float32; other dtypes are kept.

    Raises
    ------
    ValueError
        For arrays without values: PyTorch ``meta`` tensors and arrays traced
        under ``jax.jit``.
    TypeError
        For objects that are neither arrays nor sequences of numbers (dtype
        objects and classes included), for complex, string or object data,
        and for a ``name`` that is not a str.

    Examples
    --------
    >>> import torch
    >>> from posenc_viz import to_numpy
    >>> t = torch.ones(2, 3, dtype=torch.bfloat16, requires_grad=True)
    >>> to_numpy(t).dtype, to_numpy(t).shape
    (dtype('float32'), (2, 3))
    >>> to_numpy([[0, 1], [2, 3]])
    array([[0, 1],
           [2, 3]])
    """
    if not isinstance(name, str):
        msg = f"`name` must be a str, got {show(name)}"
        raise TypeError(msg)
    out = _read(x, name)
    if out.dtype.kind not in _PLOTTABLE_KINDS:
        if out.dtype.kind == "V" or str(out.dtype) == "bfloat16":
            out = out.astype(np.float32)
        else:
            msg = f"`{name}` must hold real numbers, got dtype {out.dtype}"
            raise TypeError(msg)
    if out.dtype == np.float16:
        out = out.astype(np.float32)
    return out


def _read(x: Any, name: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, np.generic):
        return np.asarray(x)
    # backends are told apart by posenc's classifier (the one module that
    # knows array_api_compat); dtype objects and classes are not arrays there
    if is_array(x):
        kind = array_kind(x)
        if kind == "numpy":
            return np.asarray(x)
        if kind == "torch":
            return _from_torch(x, name)
        if kind == "jax":
            return _from_jax(x, name)
        if kind == "dask":
            return _read(x.compute(), name)
        if kind == "cupy":
            return x.get()
        if kind == "strict":
            import array_api_strict as st

            return np.from_dlpack(x.to_device(st.Device("CPU_DEVICE")))
        return _from_other(x)
    if isinstance(x, (list, tuple)) or (isinstance(x, numbers.Real) and not isinstance(x, bool)):
        try:
            out = np.asarray(x)
        except ValueError:
            out = None
        if out is None or out.dtype == object:
            msg = f"`{name}` must be an array or a (nested) list of numbers of equal lengths"
            raise TypeError(msg)
        return out
    msg = f"`{name}` must be an array, got {type(x).__name__}"
    raise TypeError(msg)


def _from_other(x: Any) -> np.ndarray:
    """Any other array-API object: to the CPU if it can say so, then DLPack."""
    to_device = getattr(x, "to_device", None)
    if to_device is not None:
        with contextlib.suppress(Exception):  # device names are not standardised
            x = to_device("cpu")
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except Exception:  # noqa: BLE001 - fall back to the buffer protocol
            pass
    return np.asarray(x)


def _from_torch(x: Any, name: str) -> np.ndarray:
    import torch

    if x.device.type == "meta":
        msg = f"`{name}` is a torch meta tensor: it has no values to plot"
        raise ValueError(msg)
    x = x.detach()
    if x.layout != torch.strided:
        x = x.to_dense()
    if x.dtype in (torch.bfloat16, torch.float16):
        x = x.to(torch.float32)
    if x.is_complex():
        msg = f"`{name}` must hold real numbers, got dtype {x.dtype}"
        raise TypeError(msg)
    return x.resolve_neg().resolve_conj().cpu().numpy()


def _from_jax(x: Any, name: str) -> np.ndarray:
    import jax

    if not has_values(x):
        msg = f"`{name}` is a traced JAX array (inside jax.jit or grad): plot concrete arrays"
        raise ValueError(msg)
    out = np.asarray(jax.device_get(x))
    if out.dtype.kind == "V" or str(out.dtype) == "bfloat16":
        out = out.astype(np.float32)
    return out
