"""Argument validation: every error names the parameter, says what was expected
and what was given.  ``TypeError`` for the wrong kind of value, ``ValueError``
for a value of the right kind that is out of range.

Imports: :mod:`posenc._compat` and :mod:`posenc._trace`.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from . import _compat, _trace
from ._compat import Array, show

__all__ = [
    "MAX_ELEMENTS",
    "MAX_OFFSET",
    "TABLE_LAYOUTS",
    "ROPE_LAYOUTS",
    "MROPE_AXES",
    "show",
    "check_bool",
    "check_int",
    "check_dim",
    "check_float",
    "check_choice",
    "check_positions",
    "check_offset",
    "check_size",
    "check_float_array",
    "check_int_array",
    "check_all_finite",
    "check_finite",
    "check_grid_shape",
    "check_sections",
    "broadcast_shapes",
    "check_table_frequency",
    "MAX_TABLE_FREQUENCY",
]

#: Largest number of elements a single output may have.  Larger requests fail
#: before anything is allocated (a table of 2**40 float32 values is 4 TiB).
MAX_ELEMENTS = 2**40

#: The largest frequency (radians per unit of position) of a cos / sin table
#: made from host frequencies (RoPE's ``base``, a timestep embedding's
#: ``scale``).  posenc's angle engine carries each frequency in turns as a
#: float64 pair (about 2**-106 relative) and reduces the angle exactly for
#: ``|p * w| < 2**50`` (the documented range of real positions): a frequency
#: above 2**50 leaves that range at ``|p| = 1`` already (and from about 1e30
#: on, the reduced angle is 0 whatever the position), so it is refused.
MAX_TABLE_FREQUENCY = 2.0**50

#: column layouts of a sinusoidal table: ``sin, cos, sin, cos, ...`` or all sines then all cosines
TABLE_LAYOUTS = ("interleaved", "concat")
#: pairings of a rotary table: feature ``i`` with ``i + d/2`` (GPT-NeoX, Hugging Face) or with ``i + 1`` (GPT-J)
ROPE_LAYOUTS = ("half", "interleaved")


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` as a Python bool, or raise a :class:`TypeError` naming ``name``.

    Python bools and NumPy bool scalars (``np.True_``, as read from a config
    or a NumPy comparison) are accepted; integers (even 0 and 1), strings,
    ``None`` and arrays (even 0-d ones, whose value may be traced or on a
    device) are refused.
    """
    if not isinstance(value, (bool, np.bool_)):
        msg = f"`{name}` must be a bool, got {show(value)}"
        raise TypeError(msg)
    return bool(value)


def check_int(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise naming ``name``.

    Python and NumPy integers and 0-d integer arrays are accepted; bools,
    floats (even integral ones) and strings are a :class:`TypeError`.  A value
    out of range is a :class:`ValueError` that states the range (``in [lo,
    hi]`` when both bounds are given).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        # 0-d integer arrays are accepted through __index__
        not_0d = _compat.is_array(value) and getattr(value, "ndim", 1) != 0
        if isinstance(value, bool) or not hasattr(value, "__index__") or not_0d:
            msg = f"`{name}` must be an integer, got {show(value)}"
            raise TypeError(msg)
        try:
            value = operator.index(value)
        except TypeError:
            msg = f"`{name}` must be an integer, got {show(value)}"
            raise TypeError(msg) from None
    number = int(value)
    low = minimum is not None and number < minimum
    high = maximum is not None and number > maximum
    if (low or high) and minimum is not None and maximum is not None:
        msg = f"`{name}` must be an integer in [{minimum}, {maximum}], got {number!r}"
        raise ValueError(msg)
    if low:
        msg = f"`{name}` must be an integer >= {minimum}, got {number!r}"
        raise ValueError(msg)
    if high:
        msg = f"`{name}` must be an integer <= {maximum}, got {number!r}"
        raise ValueError(msg)
    return number


def check_dim(value: Any, name: str = "dim", *, even: bool = False, minimum: int = 1) -> int:
    """A feature dimension: a positive integer (even when ``even``), at most
    :data:`MAX_ELEMENTS` (every output holds at least ``dim`` values, and the
    host tables of a larger ``dim`` could not be allocated)."""
    kind = "positive even integer" if even else "positive integer"
    if type(value) is not int and (isinstance(value, bool) or not isinstance(value, numbers.Integral)) and (
        not (hasattr(value, "__index__") and not isinstance(value, bool))
        or (_compat.is_array(value) and getattr(value, "ndim", 1) != 0)
    ):
        msg = f"`{name}` must be a {kind}, got {show(value)}"
        raise TypeError(msg)
    try:
        number = int(operator.index(value))
    except TypeError:
        msg = f"`{name}` must be a {kind}, got {show(value)}"
        raise TypeError(msg) from None
    if number < minimum or (even and number % 2):
        msg = f"`{name}` must be a {kind}, got {number!r}"
        raise ValueError(msg)
    if number > MAX_ELEMENTS:
        msg = f"`{name}` must be at most posenc's limit of 2**40 elements, got {number!r}"
        raise ValueError(msg)
    return number


def largest(ctx: Any, *dtypes: Any) -> tuple[float, Any]:
    """The largest finite value of the narrowest of ``dtypes`` (and that dtype)."""
    out: tuple[float, Any] = (math.inf, None)
    for t in dtypes:
        top = float(ctx.xp.finfo(t).max)
        if out[1] is None or top < out[0]:
            out = (top, t)
    return out


def dtype_name(dt: Any) -> str:
    return str(dt).removeprefix("torch.")


def check_fits(top: float, ctx: Any, source: str, hint: str) -> None:
    """Refuse values up to ``top`` (a Python float; inf and NaN are refused)
    that would overflow the output or the working dtype of ``ctx``.

    ``source`` says what gives them (``"`std` = 10.0 gives values"``),
    ``hint`` what to do instead.
    """
    limit, dt = largest(ctx, ctx.dtype, ctx.work)
    if not top <= limit:
        msg = f"{source} up to {top:.3g}, which overflow {dtype_name(dt)} (largest {limit:.3g}); {hint}"
        raise ValueError(msg)


def check_float(
    value: Any,
    name: str,
    *,
    positive: bool = False,
    nonnegative: bool = False,
    finite: bool = True,
) -> float:
    """Return ``value`` as a Python float (ints accepted, bools and arrays refused)."""
    tp = type(value)
    if tp is not float and tp is not int and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        msg = f"`{name}` must be a real number, got {show(value)}"
        raise TypeError(msg)
    if isinstance(value, float):
        # rebuilt from its exact hex form: the same value, and a plain
        # constant where torch.compile(dynamic=True) hands Python floats over
        # as lazily built (possibly symbolic) values
        value = float.fromhex(value.hex())
    number = float(value)
    if finite and not math.isfinite(number):
        msg = f"`{name}` must be finite, got {number!r}"
        raise ValueError(msg)
    if positive and not number > 0:
        msg = f"`{name}` must be > 0, got {number!r}"
        raise ValueError(msg)
    if nonnegative and not number >= 0:
        msg = f"`{name}` must be >= 0, got {number!r}"
        raise ValueError(msg)
    return number


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        msg = f"`{name}` must be one of {listed}, got {show(value)}"
        if isinstance(value, str):
            raise ValueError(msg)
        raise TypeError(msg)
    return value


def check_table_frequency(top: float, source: Any) -> None:
    """Refuse host frequencies above :data:`MAX_TABLE_FREQUENCY`; ``source``
    names the arguments they come from (```base` = 1e-40``), or is a function
    that returns that name (called only for the message)."""
    if not top <= MAX_TABLE_FREQUENCY:
        if callable(source):
            source = source()
        msg = (
            f"{source} gives frequencies up to {top:.3g} radians per position, above 2**50: posenc reduces the "
            "angles p * w exactly for |p * w| < 2**50 only"
        )
        raise ValueError(msg)


def check_size(shape: tuple[int, ...], name: str = "output", params: str | None = None) -> None:
    """Refuse outputs above :data:`MAX_ELEMENTS` before allocating anything;
    ``params`` names the arguments that set the size (```positions` or
    `dim```)."""
    n = math.prod(shape)
    if n > MAX_ELEMENTS:
        ask = f"reduce {params}" if params else "request fewer positions or dimensions"
        msg = f"the {name} of shape {tuple(shape)} would hold {n} elements, more than posenc's limit of 2**40; {ask}"
        raise ValueError(msg)


def check_real_float(x: Array, name: str, xp: Any, *, min_ndim: int = 0, shape: str = "") -> None:
    """``x``, an array of namespace ``xp``, has a real floating dtype (else a
    TypeError naming ``name``) and at least ``min_ndim`` axes (else a
    ValueError that spells the expected ``shape``, such as ``"(..., seq,
    dim)"``)."""
    if not _compat.is_real_float_dtype(xp, x.dtype):
        msg = f"`{name}` must have a real floating dtype, got {x.dtype}"
        raise TypeError(msg)
    if x.ndim < min_ndim:
        msg = f"`{name}` must have shape {shape}, got shape {tuple(x.shape)}"
        raise ValueError(msg)


def check_float_array(x: Any, name: str, ctx: _compat.Context) -> Array:
    """A real floating array of ``ctx``'s namespace (lists converted)."""
    xp = ctx.xp
    x = _as_array(x, name, ctx)
    if not _compat.is_real_float_dtype(xp, x.dtype):
        msg = f"`{name}` must be an array of real floating dtype, got dtype {x.dtype}"
        raise TypeError(msg)
    return x


def check_int_array(x: Any, name: str, ctx: _compat.Context) -> Array:
    x = _as_array(x, name, ctx)
    if not _compat.is_integer_dtype(ctx.xp, x.dtype):
        msg = f"`{name}` must be an array of integer dtype, got dtype {x.dtype}"
        raise TypeError(msg)
    return x


def _as_array(x: Any, name: str, ctx: _compat.Context) -> Array:
    if _compat.is_array(x):
        return x
    if isinstance(x, (list, tuple)) or isinstance(x, numbers.Real) and not isinstance(x, bool):
        try:
            return ctx.asarray(x)
        except Exception as exc:
            msg = f"`{name}` must be an array or a (nested) list of numbers, got {show(x)}"
            raise TypeError(msg) from exc
    msg = f"`{name}` must be an array, got {type(x).__name__}"
    raise TypeError(msg)


def check_all_finite(x: Array, name: str, ctx: _compat.Context) -> None:
    """Raise on NaN/inf values of a concrete floating array.

    Traced (``jax.jit``), lazy (Dask) and ``meta`` arrays are not inspected:
    posenc never computes a lazy graph.  Non-finite positions there give NaN
    rows, never a silently finite table.
    """
    xp = ctx.xp
    if not _compat.is_real_float_dtype(xp, x.dtype) or not _compat.is_concrete(x):
        return
    # the scan allocates a boolean array of x's size: refuse what no output may hold
    check_finite(x, name, xp)


def check_finite(x: Array, name: str, xp: Any) -> None:
    """The NaN / inf scan of :func:`check_all_finite`, for an array a plan
    knows to be a concrete floating one (the check a repeated call keeps)."""
    check_size(tuple(x.shape), f"`{name}` array", f"`{name}`")
    if (x.ndim == 0 or math.prod(x.shape) > 0) and not bool(xp.all(xp.isfinite(x))):
        msg = f"`{name}` must be finite: it contains NaN or infinite values"
        raise ValueError(msg)


def check_positions(
    positions: int | Array,
    name: str,
    ctx: _compat.Context,
    *,
    out_tail: tuple[int, ...] | None = None,
    what: str = "table",
    scan: bool = True,
) -> Any:
    """``positions``: a non-negative int n (meaning 0..n-1) or a real array.

    Returns the Python int or the (validated) array.  Boolean and complex
    arrays are refused; lists are converted in ``ctx``'s namespace.

    With ``out_tail``, the output of shape ``positions.shape + out_tail`` is
    checked against :data:`MAX_ELEMENTS` (as :func:`check_size` with
    ``what``) *before* the values are scanned for NaN: a huge (for example
    zero-stride broadcast) array is refused without reading it.  With
    ``scan=False`` the values are not scanned (a plan scans them on every
    call, :func:`check_all_finite`).
    """
    if isinstance(positions, bool):
        msg = f"`{name}` must be an int or an array of positions, got {show(positions)}"
        raise TypeError(msg)
    if type(positions) is int:
        n = check_int(positions, name, minimum=0)
        if out_tail is not None:
            check_size((n, *out_tail), what, f"`{name}` or `dim`")
        return n
    if _trace.is_symbolic(positions):
        # a traced length (``x.shape[-2]`` under torch.compile): 0..n-1
        return positions
    if isinstance(positions, numbers.Integral) and not _compat.is_array(positions):
        n = check_int(positions, name, minimum=0)
        if out_tail is not None:
            check_size((n, *out_tail), what, f"`{name}` or `dim`")
        return n
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
    if out_tail is not None:
        check_size((*tuple(x.shape), *out_tail), what, f"`{name}` or `dim`")
    if scan:
        check_all_finite(x, name, ctx)
    return x


#: largest magnitude of an integer offset of positions (array positions are
#: clipped there too)
MAX_OFFSET = 2**64


def check_offset(offset: Any, name: str, ctx: _compat.Context | None, *, bits: int = 64) -> Any:
    """An integer offset added to positions: a Python int of magnitude at
    most ``2**bits`` (2**64 for positions, 2**40 for the query offsets of
    relative positions, whose outputs stay within :data:`MAX_ELEMENTS`), a
    traced integer (torch ``SymInt``), or a 0-d integer array of ``ctx``'s
    namespace (of its own namespace for ``ctx=None``) -- concrete ones become
    ints, traced ones (``jax.jit``, ``torch.compile``) are kept as arrays,
    whose shapes never depend on them.

    The one check of offsets: ``rope_cos_sin``, ``add_sinusoidal``, the
    relative positions and biases and the torch modules all go through it.
    """
    if _trace.is_symbolic(offset):
        return offset
    if isinstance(offset, np.integer):  # a NumPy integer scalar: a host number, whatever the namespace
        offset = int(offset)
    if not isinstance(offset, int) and _compat.is_array(offset) and getattr(offset, "ndim", None) == 0:
        xp = _compat.resolve({name: offset}).xp if ctx is None else ctx.xp
        if not _compat.is_integer_dtype(xp, offset.dtype):
            own = _compat.resolve({name: offset}).xp if ctx is not None else xp  # (the refusal's path only)
            if own is not xp and _compat.is_integer_dtype(own, offset.dtype):
                msg = (
                    f"`{name}` must be an int or a 0-d integer array of the call's namespace "
                    f"({xp.__name__}), got {show(offset)}"
                )
            else:
                msg = f"`{name}` must be an integer, got {show(offset)}"
            raise TypeError(msg)
        if not _compat.is_concrete(offset):
            return offset  # traced: shapes never depend on it
        offset = int(offset)
    value = check_int(offset, name)
    if not -(2**bits) <= value <= 2**bits:
        msg = f"`{name}` must be an integer of magnitude at most 2**{bits}, got {value!r}"
        raise ValueError(msg)
    return value


def add_offset(positions: Array, offset: Any, ctx: _compat.Context, name: str = "offset") -> tuple[Array, Any]:
    """``positions + offset`` in an integer type wide enough for the sum, and
    a mask of the positions whose sum left it (``None`` where none can).

    Floating positions are added in float64 where the device has it (the
    sum of a float32 position and an int is exact there; without float64
    it rounds to the positions' dtype).

    Integer positions of a narrower dtype (uint8, int8, int16, int32, uint32)
    are widened to :func:`posenc._compat.widest_int` first: NumPy, torch and
    JAX add a Python int in the array's own dtype and wrap (``uint8`` 255 + 1
    is position 0).  Where the sum can still leave the wide type (int64
    positions near 2**63; int32, JAX's default without x64), concrete
    positions are read and refused with a ``ValueError`` naming ``name``;
    traced ones (``jax.jit``) get the mask, whose rows the caller makes NaN
    (never a finite wrong row).
    """
    if type(offset) is int and offset == 0:
        return positions, None
    xp = ctx.xp
    if not _compat.is_integer_dtype(xp, positions.dtype):
        # in float64 where the device has it: a float32 position plus an
        # int is exact there, and would round to float32 (6790.3137 is
        # 6790.3135: 2e-4 rad at the first frequency)
        if ctx.float64 and positions.dtype != xp.float64:
            positions = xp.astype(positions, xp.float64)
        # (a Python int as a float: torch cannot convert one beyond int64, up to the 2**64 offsets allow)
        return positions + (float(offset) if type(offset) is int else offset), None
    wide = _compat.widest_int(xp)
    top = xp.iinfo(wide)
    src = xp.iinfo(positions.dtype)
    if _trace.is_symbolic(offset):
        # torch's tracer (int64 everywhere): no guard on the offset's value
        p = positions if positions.dtype == wide else xp.astype(positions, wide)
        return p + offset, None
    ranged = not _compat.is_array(offset)  # a Python int: its value bounds the sum
    if ranged and not top.min <= offset <= top.max:
        msg = f"`{name}` must fit {wide} (the widest integer type here) when added to integer positions, got {offset}"
        raise ValueError(msg)
    olo, ohi = (offset, offset) if ranged else (xp.iinfo(offset.dtype).min, xp.iinfo(offset.dtype).max)
    safe = src.max <= top.max and src.min + olo >= top.min and src.max + ohi <= top.max
    p = positions if positions.dtype == wide else None
    if not safe and ranged and _compat.is_concrete(positions) and math.prod(positions.shape):
        lo, hi = _compat.int_range(xp, positions)
        if lo + offset < top.min or hi + offset > top.max or hi > top.max:
            msg = (
                f"`{name}` = {offset} moves positions {lo} .. {hi} out of {wide} "
                f"(the widest integer type here): positions {lo + offset} .. {hi + offset}"
            )
            raise ValueError(msg)
        safe = True
    if p is None:
        p = xp.astype(positions, wide)
    total = p + offset
    if safe:
        return total, None
    # traced, or an array offset: the rows whose sum wrapped
    if ranged:
        wrapped = total < p if offset > 0 else total > p
    else:
        wrapped = xp.where(offset >= 0, total < p, total > p)
    if src.min == 0 and src.max > top.max:  # uint64 positions from 2**63 turned negative in the wide type
        wrapped = wrapped | (p < 0)
    return total, wrapped


#: the axes of multimodal RoPE's position ids, in order
MROPE_AXES = ("temporal", "height", "width")


def check_sections(mrope_section: Any, dim: int) -> tuple[int, int, int]:
    """``mrope_section``: three non-negative ints that sum to ``dim // 2`` (the
    one check of sections, shared by ``mrope_cos_sin`` and ``scaling.from_hf``)."""
    if isinstance(mrope_section, (str, bytes)) or not isinstance(mrope_section, Sequence):
        msg = f"`mrope_section` must be a sequence of 3 ints, got {show(mrope_section)}"
        raise TypeError(msg)
    if len(mrope_section) != len(MROPE_AXES):
        msg = f"`mrope_section` must have 3 entries (temporal, height, width), got {len(mrope_section)}"
        raise ValueError(msg)
    out = tuple(check_int(s, "mrope_section", minimum=0) for s in mrope_section)
    if sum(out) != dim // 2:
        msg = f"`mrope_section` must sum to `dim` // 2 = {dim // 2} for `dim` = {dim}, got {list(out)} (sum {sum(out)})"
        raise ValueError(msg)
    return out  # type: ignore[return-value]


def check_grid_shape(value: Any, name: str, *, max_ndim: int = 3, square_int: bool = False) -> tuple[int, ...]:
    """A grid's shape: a tuple of 1..max_ndim positive ints (an int is a
    square 2-D grid when ``square_int``)."""
    if isinstance(value, bool):
        msg = f"`{name}` must be a tuple of positive integers, got {value!r}"
        raise TypeError(msg)
    if isinstance(value, numbers.Integral) and not _compat.is_array(value):
        if not square_int:
            msg = (
                f"`{name}` must be a tuple of positive integers, got the int {value!r}; "
                f"pass ({value},) for a 1-D grid or ({value}, {value}) for a square 2-D grid"
            )
            raise TypeError(msg)
        n = check_int(value, name)
        value = (n, n)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"`{name}` must be a tuple of positive integers, got {type(value).__name__}"
        raise TypeError(msg)
    shape = tuple(check_int(v, name) for v in value)
    if not 1 <= len(shape) <= max_ndim:
        kind = "1 to 3 axes" if max_ndim == 3 else f"{max_ndim} axes"
        if max_ndim == 2:
            kind = "2 axes (height, width)"
        msg = f"`{name}` must have {kind}, got {show(shape)}"
        raise ValueError(msg)
    if max_ndim == 2 and len(shape) != 2:
        msg = f"`{name}` must have 2 axes (height, width), got {show(shape)}"
        raise ValueError(msg)
    if any(n < 1 for n in shape):
        msg = f"`{name}` must hold positive integers, got {show(shape)}"
        raise ValueError(msg)
    return shape


def broadcast_shapes(*shapes: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The broadcast of ``shapes`` (tuples of ints or traced sizes such as
    torch ``SymInt``), or None when they do not broadcast.

    Plain Python comparisons, so traced sizes stay traced (NumPy's
    ``broadcast_shapes`` wants ints).
    """
    n = 0
    for shape in shapes:  # (no max() over a generator: torch's compiler refuses it)
        n = max(n, len(shape))
    out = [1] * n
    for shape in shapes:
        padded = (1,) * (n - len(shape)) + tuple(shape)
        for i, d in enumerate(padded):
            if out[i] == 1:
                out[i] = d
            elif not (d == 1 or d == out[i]):
                return None
    return tuple(out)
