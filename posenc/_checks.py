"""Argument validation: every error names the parameter, says what was expected
and what was given.  ``TypeError`` for the wrong kind of value, ``ValueError``
for a value of the right kind that is out of range.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable
from typing import Any

from . import _compat

__all__ = [
    "MAX_ELEMENTS",
    "check_int",
    "check_dim",
    "check_float",
    "check_choice",
    "check_positions",
    "check_size",
    "check_float_array",
    "check_int_array",
    "check_all_finite",
]

#: Largest number of elements a single output may have.  Larger requests fail
#: before anything is allocated (a table of 2**40 float32 values is 4 TiB).
MAX_ELEMENTS = 2**40


def check_int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        # 0-d integer arrays are accepted through __index__
        if isinstance(value, bool) or not hasattr(value, "__index__") or _compat.is_array(value) and getattr(value, "ndim", 1) != 0:
            msg = f"`{name}` must be an integer, got {value!r}"
            raise TypeError(msg)
        try:
            value = operator.index(value)
        except TypeError:
            msg = f"`{name}` must be an integer, got {value!r}"
            raise TypeError(msg) from None
    value = int(value)
    if minimum is not None and value < minimum:
        msg = f"`{name}` must be an integer >= {minimum}, got {value!r}"
        raise ValueError(msg)
    return value


def check_dim(value: Any, name: str = "dim", *, even: bool = False, minimum: int = 1) -> int:
    """A feature dimension: a positive integer (even when ``even``)."""
    kind = "positive even integer" if even else "positive integer"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if not (hasattr(value, "__index__") and not isinstance(value, bool)):
            msg = f"`{name}` must be a {kind}, got {value!r}"
            raise TypeError(msg)
    try:
        value = int(operator.index(value))
    except TypeError:
        msg = f"`{name}` must be a {kind}, got {value!r}"
        raise TypeError(msg) from None
    if value < minimum or (even and value % 2):
        msg = f"`{name}` must be a {kind}, got {value!r}"
        raise ValueError(msg)
    return value


def check_float(
    value: Any,
    name: str,
    *,
    positive: bool = False,
    nonnegative: bool = False,
    finite: bool = True,
) -> float:
    """Return ``value`` as a Python float (ints accepted, bools and arrays refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        msg = f"`{name}` must be a real number, got {value!r}"
        raise TypeError(msg)
    value = float(value)
    if finite and not math.isfinite(value):
        msg = f"`{name}` must be finite, got {value!r}"
        raise ValueError(msg)
    if positive and not value > 0:
        msg = f"`{name}` must be > 0, got {value!r}"
        raise ValueError(msg)
    if nonnegative and not value >= 0:
        msg = f"`{name}` must be >= 0, got {value!r}"
        raise ValueError(msg)
    return value


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        msg = f"`{name}` must be one of {listed}, got {value!r}"
        if isinstance(value, str):
            raise ValueError(msg)
        raise TypeError(msg)
    return value


def check_size(shape: tuple[int, ...], name: str = "output") -> None:
    """Refuse outputs above :data:`MAX_ELEMENTS` before allocating anything."""
    n = math.prod(shape)
    if n > MAX_ELEMENTS:
        msg = (
            f"the {name} of shape {tuple(shape)} would hold {n} elements, more than "
            f"posenc's limit of 2**40; request fewer positions or dimensions"
        )
        raise ValueError(msg)


def check_float_array(x: Any, name: str, ctx: _compat.Context) -> Any:
    """A real floating array of ``ctx``'s namespace (lists converted)."""
    xp = ctx.xp
    x = _as_array(x, name, ctx)
    if not _compat.is_real_float_dtype(xp, x.dtype):
        msg = f"`{name}` must be an array of real floating dtype, got dtype {x.dtype}"
        raise TypeError(msg)
    return x


def check_int_array(x: Any, name: str, ctx: _compat.Context) -> Any:
    x = _as_array(x, name, ctx)
    if not _compat.is_integer_dtype(ctx.xp, x.dtype):
        msg = f"`{name}` must be an array of integer dtype, got dtype {x.dtype}"
        raise TypeError(msg)
    return x


def _as_array(x: Any, name: str, ctx: _compat.Context) -> Any:
    if _compat.is_array(x):
        return x
    if isinstance(x, (list, tuple)) or isinstance(x, numbers.Real) and not isinstance(x, bool):
        try:
            if ctx.device is None:
                return ctx.xp.asarray(x)
            return ctx.xp.asarray(x, device=ctx.device)
        except Exception as exc:
            msg = f"`{name}` must be an array or a (nested) list of numbers, got {x!r}"
            raise TypeError(msg) from exc
    msg = f"`{name}` must be an array, got {type(x).__name__}"
    raise TypeError(msg)


def check_all_finite(x: Any, name: str, ctx: _compat.Context) -> None:
    """Raise on NaN/inf values of a concrete floating array.

    Traced (``jax.jit``), lazy (Dask) and ``meta`` arrays are not inspected:
    posenc never computes a lazy graph.  Non-finite positions there give NaN
    rows, never a silently finite table.
    """
    xp = ctx.xp
    if not _compat.is_real_float_dtype(xp, x.dtype) or not _compat.is_concrete(x):
        return
    if x.ndim == 0 or math.prod(x.shape) > 0:
        if not bool(xp.all(xp.isfinite(x))):
            msg = f"`{name}` must be finite: it contains NaN or infinite values"
            raise ValueError(msg)


def check_positions(positions: Any, name: str, ctx: _compat.Context) -> Any:
    """``positions``: a non-negative int n (meaning 0..n-1) or a real array.

    Returns the Python int or the (validated) array.  Boolean and complex
    arrays are refused; lists are converted in ``ctx``'s namespace.
    """
    if isinstance(positions, bool):
        msg = f"`{name}` must be an int or an array of positions, got {positions!r}"
        raise TypeError(msg)
    if isinstance(positions, numbers.Integral) and not _compat.is_array(positions):
        return check_int(positions, name, minimum=0)
    if isinstance(positions, float):
        msg = (
            f"`{name}` must be an int n (meaning 0..n-1) or an array of positions, "
            f"got the float {positions!r}"
        )
        raise TypeError(msg)
    x = _as_array(positions, name, ctx)
    xp = ctx.xp
    if not (_compat.is_real_float_dtype(xp, x.dtype) or _compat.is_integer_dtype(xp, x.dtype)):
        msg = f"`{name}` must be an array of integer or real floating dtype, got dtype {x.dtype}"
        raise TypeError(msg)
    check_all_finite(x, name, ctx)
    return x
