"""The machinery of the fuzz suite: backends, cases, hostile values, checks.

A *case* is one call of a public function (positional and keyword
arguments) together with what the documentation promises about the result
(shape, dtype, finiteness).  The registry (the ``registry`` package) has, for every
public name, a builder that draws a valid case on a backend; the tests call
it as drawn (it must succeed and keep the promises) and with one argument
replaced by a hostile value (it must either raise a ``ValueError`` /
``TypeError`` whose message names that argument, or succeed with a sane
result when the value happens to be acceptable).
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import math
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.conftest import Backend, BackendKind, selected

#: calls made, by kind (``fuzz-valid:sinusoidal``) and by hostile class
COUNTS: collections.Counter = collections.Counter()

#: the eager backends the fuzz suite draws from (jit / lazy / meta flavours
#: are covered by the per-module tests; here every call must run fast)
FUZZ_BACKENDS = (
    BackendKind.NUMPY,
    BackendKind.TORCH,
    BackendKind.STRICT,
    BackendKind.STRICT_DEVICE1,
    BackendKind.STRICT_NO_FLOAT64,
    BackendKind.JAX,
)


def _selected() -> tuple[BackendKind, ...]:
    # "jax-jit" selects the jax module too
    chosen = {BackendKind.JAX if kind is BackendKind.JAX_JIT else kind for kind in selected()}
    return tuple(kind for kind in FUZZ_BACKENDS if kind in chosen)


BACKENDS: list[Backend] = [kind.make() for kind in _selected() if kind.missing() is None]
BY_KIND: dict[BackendKind, Backend] = {b.kind: b for b in BACKENDS}


def backend(kind: BackendKind) -> Backend | None:
    """The backend of ``kind`` (selected or not), or ``None`` where it cannot run."""
    if kind in BY_KIND:
        return BY_KIND[kind]
    return None if kind.missing() is not None else kind.make()


# --------------------------------------------------------------------- cases
@dataclass
class Case:
    """One call and the documented properties of its result.

    ``shape``: the expected shape (a tuple of them for tuple results, ``None``
    to skip).  ``dtype``: the expected dtype object (``None`` to skip).
    ``finite``: ``"all"`` (no NaN, no inf), ``"no-nan"`` (``-inf`` masks
    allowed) or ``"any"``.  ``kind``: ``"array"``, ``"arrays"`` (a tuple of
    arrays), ``"object"`` (checked by ``check`` only).  ``check``: an extra
    callable run on the result.
    """

    be: Backend
    args: tuple
    kwargs: dict
    shape: Any = None
    dtype: Any = None
    finite: str = "all"
    kind: str = "array"
    check: Callable[[Any], None] | None = None
    cleanup: Callable[[], None] | None = None


def default_float(be: Backend) -> Any:
    return be.default_float


def float_dtypes(be: Backend, *, half: bool = False) -> list[tuple[Any, Any]]:
    """``(dtype argument, expected dtype)`` pairs of valid float requests on ``be``."""
    ns = be.ns
    out: list[tuple[Any, Any]] = [(None, be.default_float), ("float32", ns.float32), (ns.float32, ns.float32)]
    if be.float64:
        out += [("float64", ns.float64), (ns.float64, ns.float64)]
    if half:
        if be.family == "torch":
            import torch

            out += [(torch.bfloat16, torch.bfloat16), (torch.float16, torch.float16)]
        elif be.kind in (BackendKind.NUMPY, BackendKind.JAX):
            out += [("float16", ns.float16)]
    if be.module is not None and be.kind is BackendKind.TORCH:
        import torch

        out.append((torch.float32, torch.float32))
    return out


def int_dtypes(be: Backend) -> list[str]:
    return ["int32"] if be.family == "jax" else ["int32", "int64"]


def real_dtypes(be: Backend) -> list[str]:
    return ["float32", "float64"] if be.float64 else ["float32"]


def index_dtype(be: Backend) -> Any:
    return be.ns.__array_namespace_info__().default_dtypes(device=be.device)["indexing"]


def int_default(be: Backend) -> Any:
    return be.ns.__array_namespace_info__().default_dtypes(device=be.device)["integral"]


def creation_kwargs(draw: Callable, be: Backend, *, device: bool = True) -> dict:
    """``xp=`` (the namespace or the bare module) and ``device=`` for creation calls."""
    kw: dict[str, Any] = {}
    if be.kind is BackendKind.NUMPY and draw_bool(draw):
        return kw  # NumPy is the default namespace
    kw["xp"] = be.module if (be.module is not None and draw_bool(draw)) else be.ns
    if device and be.device is not None:
        kw["device"] = be.device
    return kw


def draw_bool(draw: Callable) -> bool:
    from hypothesis import strategies as st

    return draw(st.booleans())


# ------------------------------------------------------------------- checks
def to_numpy(be: Backend, x: Any) -> np.ndarray:
    return np.asarray(be.to_numpy(x))


def assert_finite(be: Backend, x: Any, rule: str, what: str) -> None:
    if rule == "any" or not be.has_values:
        return
    a = to_numpy(be, x)
    if a.dtype.kind not in "fc":
        return
    if rule == "all":
        bad = ~np.isfinite(a)
    else:
        bad = np.isnan(a) | (a == np.inf)
    if bad.any():
        idx = tuple(int(i[0]) for i in np.nonzero(bad))
        raise AssertionError(f"{what}: {int(bad.sum())} non-finite values of {a.size} (first at {idx}: {a[idx]!r})")


def check_result(case: Case, result: Any, what: str) -> None:
    be = case.be
    if case.kind == "array":
        be.check_array(result, shape=case.shape, dtype=case.dtype)
        assert_finite(be, result, case.finite, what)
    elif case.kind == "arrays":
        assert isinstance(result, tuple), f"{what}: expected a tuple of arrays, got {type(result).__name__}"
        shapes = case.shape if case.shape is not None else (None,) * len(result)
        assert len(result) == len(shapes), f"{what}: {len(result)} arrays, expected {len(shapes)}"
        for r, s in zip(result, shapes):
            be.check_array(r, shape=s, dtype=case.dtype)
            assert_finite(be, r, case.finite, what)
    if case.check is not None:
        case.check(result)


# ----------------------------------------------------------- hostile values
@dataclass(frozen=True)
class Hostile:
    """A hostile argument value: ``make(be)`` builds it on the test's backend."""

    label: str
    cls: str  # class of bad input, for the report
    make: Callable[[Backend], Any]
    finite: bool = True  # whether the value carries no NaN / inf

    def __repr__(self) -> str:
        return f"<{self.label}>"


def _np_on(be: Backend, a: np.ndarray) -> Any:
    if not be.float64 and a.dtype == np.float64:
        a = a.astype(np.float32)
    if be.family == "jax" and a.dtype == np.int64:
        a = a.astype(np.int32)
    return be.asarray(a, dtype=str(a.dtype))


def _foreign(be: Backend, a: np.ndarray) -> Any:
    """The same data in another namespace (NumPy, or torch for NumPy tests)."""
    if be.kind is not BackendKind.NUMPY:
        return a
    import torch

    return torch.asarray(a)


def _other_device(be: Backend, a: np.ndarray) -> Any:
    """The same data on another device of the same namespace where one exists."""
    if be.family == "strict":  # (array-api-strict is optional: imported by its own lanes only)
        import array_api_strict as st

        if be.kind is BackendKind.STRICT_DEVICE1:
            return st.asarray(a)
        return st.asarray(a, device=st.Device("device1"))
    if be.kind is BackendKind.TORCH:
        import torch

        return torch.asarray(a, device="meta")
    return _foreign(be, a)


def _complex(be: Backend) -> Any:
    a = np.array([1 + 1j, 2.0, 3.0], dtype=np.complex64)
    try:
        return be.asarray(a, dtype="complex64")
    except Exception:  # pragma: no cover
        return a


def _strided(be: Backend) -> Any:
    """Every other element of a float array: a view with a step of two
    (kernels that read memory through NumPy views must follow the stride)."""
    return _np_on(be, np.array([0.5, 9.0, 1.0, 9.0, 2.0]))[::2]


def _reversed(be: Backend) -> Any:
    """A float array read backwards: a negative stride in NumPy (torch,
    which has none, and the others flip a copy)."""
    a = _np_on(be, np.array([2.0, 1.0, 0.5]))
    return a[::-1] if be.kind is BackendKind.NUMPY else be.ns.flip(a)


def _transposed(be: Backend) -> Any:
    """A (2, 3) float array that is the transpose of a (3, 2) one: not
    C-contiguous where the namespace keeps views."""
    return be.ns.permute_dims(_np_on(be, np.linspace(-1.0, 4.0, 6).reshape(3, 2)), (1, 0))


def _read_only(be: Backend) -> Any:
    """A read-only NumPy array (nothing may write into a caller's array);
    elsewhere a plain one."""
    a = np.array([0.5, 1.0, 2.0])
    if be.kind is not BackendKind.NUMPY:
        return _np_on(be, a)
    a.setflags(write=False)
    return a


def _float16_top(be: Backend) -> Any:
    """float16 values up to its largest (float32 where the namespace has no
    float16: the standard's namespaces need not)."""
    a = np.array([0.0, 6e4, 65504.0])
    return be.asarray(a, "float16" if hasattr(be.ns, "float16") else "float32")


def _int_extremes(be: Backend, dtype: str) -> Any:
    """The smallest, zero and the largest of an integer dtype (positions far
    beyond the exact range: refused on the host, NaN rows on a device)."""
    info = np.iinfo(dtype)
    if be.family == "jax" and info.bits == 64:
        dtype, info = dtype.replace("64", "32"), np.iinfo(dtype.replace("64", "32"))
    return be.asarray(np.array([info.min, 0, info.max], dtype=dtype), dtype=dtype)


def _broadcast_huge(be: Backend) -> Any:
    """A zero-stride view of 2**41 elements: no memory, a huge shape."""
    if be.kind is BackendKind.TORCH:
        import torch

        return torch.zeros(1).expand(2**41)
    return np.broadcast_to(np.zeros(1), (2**41,))


NAN = float("nan")
INF = float("inf")

HOSTILE: tuple[Hostile, ...] = (
    # integers: zero, negative, huge (far beyond any memory: these must be refused
    # by a size check or fail at once, never allocate)
    Hostile("0", "zero", lambda be: 0),
    Hostile("1", "one", lambda be: 1),
    Hostile("-1", "negative int", lambda be: -1),
    Hostile("-7", "negative int", lambda be: -7),
    Hostile("2**41", "huge int", lambda be: 2**41),
    Hostile("-(2**41)", "huge int", lambda be: -(2**41)),
    Hostile("2**64", "huge int", lambda be: 2**64),
    Hostile("np.int64(5)", "numpy scalar", lambda be: np.int64(5)),
    # floats: where ints are expected, non-finite, extreme
    Hostile("3.0", "float where int", lambda be: 3.0),
    Hostile("2.5", "float where int", lambda be: 2.5),
    Hostile("-0.5", "negative float", lambda be: -0.5),
    Hostile("0.0", "zero", lambda be: 0.0),
    Hostile("nan", "NaN", lambda be: NAN, finite=False),
    Hostile("inf", "inf", lambda be: INF, finite=False),
    Hostile("-inf", "inf", lambda be: -INF, finite=False),
    Hostile("1e300", "extreme float", lambda be: 1e300),
    Hostile("1e-300", "extreme float", lambda be: 1e-300),
    Hostile("np.float64(2.0)", "numpy scalar", lambda be: np.float64(2.0)),
    Hostile("1j", "complex", lambda be: 1j),
    # wrong kinds
    Hostile("True", "bool", lambda be: True),
    Hostile("False", "bool", lambda be: False),
    Hostile("np.True_", "bool", lambda be: np.True_),
    Hostile("None", "None", lambda be: None),
    Hostile("''", "str", lambda be: ""),
    Hostile("'x'", "str", lambda be: "x"),
    Hostile("'8'", "str", lambda be: "8"),
    Hostile("'nan'", "str", lambda be: "nan"),
    Hostile("b'8'", "bytes", lambda be: b"8"),
    Hostile("object()", "object", lambda be: object()),
    Hostile("[]", "list", lambda be: []),
    Hostile("[1, 2]", "list", lambda be: [1, 2]),
    Hostile("[[1, 2], [3]]", "ragged list", lambda be: [[1, 2], [3]]),
    Hostile("(2, 'a')", "tuple", lambda be: (2, "a")),
    Hostile("{}", "dict", lambda be: {}),
    Hostile("np", "module", lambda be: np),
    Hostile("math", "module", lambda be: math),
    Hostile("np.int32", "dtype", lambda be: np.int32),
    Hostile("'int32'", "dtype", lambda be: "int32"),
    Hostile("'complex64'", "dtype", lambda be: "complex64"),
    Hostile("ns.int64", "dtype", lambda be: be.ns.int32 if be.family == "jax" else be.ns.int64),
    Hostile("ns.bool", "dtype", lambda be: getattr(be.ns, "bool", None) or be.ns.bool_),
    # arrays of the backend: 0-d, empty, wrong dtypes, non-finite values
    Hostile("0-d int", "0-d array", lambda be: _np_on(be, np.array(4, dtype=np.int32))),
    Hostile("0-d float", "0-d array", lambda be: _np_on(be, np.array(2.5))),
    Hostile("0-d nan", "0-d array", lambda be: _np_on(be, np.array(np.nan)), finite=False),
    Hostile("empty float (0,)", "empty array", lambda be: _np_on(be, np.zeros((0,)))),
    Hostile("empty float (0, 4)", "empty array", lambda be: _np_on(be, np.zeros((0, 4)))),
    Hostile("int (3,)", "int array", lambda be: _np_on(be, np.array([0, 1, 2], dtype=np.int32))),
    Hostile("float (3,)", "float array", lambda be: _np_on(be, np.array([0.5, 1.0, 2.0]))),
    Hostile("float (2, 3, 4)", "float array", lambda be: _np_on(be, np.linspace(-1, 1, 24).reshape(2, 3, 4))),
    Hostile("float (3,) with nan", "NaN array", lambda be: _np_on(be, np.array([0.0, np.nan, 1.0])), finite=False),
    Hostile("float (3,) with inf", "inf array", lambda be: _np_on(be, np.array([0.0, np.inf, 1.0])), finite=False),
    Hostile("bool (3,)", "bool array", lambda be: be.asarray(np.array([True, False, True]))),
    Hostile("complex (3,)", "complex array", _complex),
    Hostile("strided float (3,)", "float array", _strided),
    Hostile("reversed float (3,)", "float array", _reversed),
    Hostile("transposed float (2, 3)", "float array", _transposed),
    Hostile("read-only float (3,)", "float array", _read_only),
    Hostile("float (3,) subnormal", "float array", lambda be: _np_on(be, np.array([5e-324, -0.0, 1e-310]))),
    Hostile("float16 (3,) near max", "float array", _float16_top),
    Hostile("float (3,) huge", "float array", lambda be: _np_on(be, np.array([0.0, 1e30, 1.0])), finite=False),
    Hostile("int64 extremes (3,)", "int array", lambda be: _int_extremes(be, "int64"), finite=False),
    Hostile("uint64 extremes (3,)", "int array", lambda be: _int_extremes(be, "uint64"), finite=False),
    Hostile("uint8 (3,)", "int array", lambda be: be.asarray(np.array([0, 200, 255]), dtype="uint8")),
    Hostile("int8 (3,) negative", "int array", lambda be: be.asarray(np.array([-128, -1, 5]), dtype="int8")),
    # other namespaces and devices
    Hostile("foreign float (3,)", "other namespace", lambda be: _foreign(be, np.array([0.5, 1.0, 2.0], np.float32))),
    Hostile("foreign int (3,)", "other namespace", lambda be: _foreign(be, np.array([0, 1, 2]))),
    Hostile(
        "other-device float (3,)", "other device", lambda be: _other_device(be, np.array([0.5, 1.0, 2.0], np.float32))
    ),
    Hostile("broadcast 2**41", "huge array", _broadcast_huge),
)


# ------------------------------------------------------- annotation rules
def must_refuse(annotation: Any, value: Any, default: Any) -> str | None:
    """Why ``value`` must not be accepted for a parameter with ``annotation``.

    Only the unambiguous rules: a ``bool`` is not a number, a float is not an
    int, NaN is not a float anyone means, a non-string is not a choice, a
    non-bool is not a flag.  ``None`` is fine where it is the default.
    """
    ann = str(annotation).replace("'", "").replace(" ", "")
    parts = set(ann.split("|"))
    if value is None:
        if default is None or "None" in parts:
            return None
        if parts & {"int", "float", "bool", "str"} and not parts & {"Any"}:
            return f"None for a parameter annotated {ann}"
        return None
    is_bool = isinstance(value, (bool, np.bool_))
    if parts == {"bool"} or parts == {"bool", "None"}:
        if not is_bool:
            return f"{value!r} for a bool parameter"
        return None
    if "Any" in parts or "Sequence[int]" in ann or "Sequence[float]" in ann or "Iterable" in ann:
        if "int" in parts and (is_bool or isinstance(value, (float, str, bytes, complex))):
            return f"{value!r} for an int-or-array parameter"
        return None
    int_like = (float, np.floating, str, bytes, complex)
    if parts <= {"int", "None"} and "int" in parts and (is_bool or isinstance(value, int_like)):
        return f"{value!r} for an int parameter"
    if parts <= {"float", "None"} and "float" in parts:
        if is_bool or isinstance(value, (str, bytes, complex)):
            return f"{value!r} for a float parameter"
        if isinstance(value, float) and math.isnan(value):
            return "NaN for a float parameter"
    if parts <= {"str", "None"} and "str" in parts and not isinstance(value, str):
        return f"{value!r} for a str parameter"
    return None


#: conflicts any function may report on the other argument
COMMON_ALIASES = {"xp": ("device", "dtype"), "device": ("xp",), "dtype": ("xp",)}


def names_param(message: str, param: str, aliases: tuple[str, ...] = ()) -> bool:
    """Whether an error message names ``param`` (or an argument it conflicts
    with).  A refusal for size names posenc's limit instead: several
    arguments make an output too large together."""
    if "posenc's limit of 2**40" in message:
        return True
    return any(f"`{p}`" in message for p in (param, *aliases, *COMMON_ALIASES.get(param, ())))


# ---------------------------------------------------------------- guards
class Hang(Exception):
    """A call ran past its time limit (an unbounded loop or allocation)."""


@contextlib.contextmanager
def time_limit(seconds: float, what: str):
    """Interrupt Python code that runs longer than ``seconds`` (main thread only)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Hang(f"{what} ran longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def parameters(fn: Callable) -> list[inspect.Parameter]:
    sig = inspect.signature(fn)
    return [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def substitute(fn: Callable, case: Case, param: str, value: Any) -> tuple[tuple, dict]:
    """``case``'s arguments with ``param`` set to ``value``."""
    params = parameters(fn)
    names = [p.name for p in params]
    i = names.index(param)
    args, kwargs = list(case.args), dict(case.kwargs)
    if i < len(args):
        args[i] = value
    else:
        p = params[i]
        if p.kind == p.POSITIONAL_ONLY:  # pragma: no cover - not used by posenc
            raise AssertionError("positional-only parameter beyond the case's arguments")
        kwargs[param] = value
    return tuple(args), kwargs


@dataclass
class Outcome:
    """What a hostile call did, for the failure message."""

    ok: bool
    detail: str = ""
    extra: dict = field(default_factory=dict)
