"""The argument checks of ``posenc._checks``, called directly.

Every public function validates through these helpers, so their rules are the
library's rules: a bool is never a number, a float is never an integer, an
error names the parameter (in backticks), says what was expected and shows
what was given, and sizes above ``MAX_ELEMENTS`` are refused before anything
is allocated.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from posenc import _checks, _compat

NP = _compat.resolve(xp=np)  # a NumPy context: float64 output and work dtype
NP16 = _compat.resolve(xp=np, dtype="float16")  # float16 output, float32 work


# ----------------------------------------------------------------- show
def test_show_describes_arrays_by_shape_and_dtype():
    assert _checks.show(np.zeros((2, 3))) == "an array of shape (2, 3) and dtype float64"
    assert _checks.show(np.zeros((0,), np.int32)) == "an array of shape (0,) and dtype int32"


def test_show_prints_0d_arrays_with_their_value():
    assert _checks.show(np.array(5)) == "a 0-d array array(5)"


def test_show_never_prints_a_huge_array():
    view = np.broadcast_to(np.zeros(1), (2**41,))  # one value, a huge shape
    assert _checks.show(view) == f"an array of shape ({2**41},) and dtype float64"


def test_show_cuts_long_reprs_to_80_characters():
    text = _checks.show("x" * 200)
    assert len(text) == 80
    assert text == "'" + "x" * 76 + "..."
    assert _checks.show("x" * 78) == "'" + "x" * 78 + "'"  # exactly 80: kept whole


def test_show_puts_a_repr_on_one_line():
    class Table:
        def __repr__(self) -> str:
            return "Table(\n    [1, 2],\n    [3, 4],\n)"

    assert _checks.show(Table()) == "Table( [1, 2], [3, 4], )"
    assert _checks.show([1, 2]) == "[1, 2]"


def test_show_survives_a_broken_repr():
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    assert _checks.show(Broken()) == "<Broken object>"


# ---------------------------------------------------------- the bool rule
@pytest.mark.parametrize("value", [True, False, np.True_, np.False_])
def test_check_bool_accepts_python_and_numpy_bools(value):
    got = _checks.check_bool(value, "causal")
    assert got is bool(value)
    assert type(got) is bool


@pytest.mark.parametrize(
    "value",
    [0, 1, 1.0, "True", "", None, np.array(True), np.array([True]), np.int64(1), [True]],
    ids=repr,
)
def test_check_bool_refuses_everything_else(value):
    with pytest.raises(TypeError, match=r"^`causal` must be a bool, got "):
        _checks.check_bool(value, "causal")


@pytest.mark.parametrize("value", [True, False, np.True_])
@pytest.mark.parametrize(
    "check",
    [
        lambda v: _checks.check_int(v, "n"),
        lambda v: _checks.check_dim(v, "n"),
        lambda v: _checks.check_float(v, "n"),
        lambda v: _checks.check_positions(v, "n", NP),
        lambda v: _checks.check_offset(v, "n", NP),
    ],
    ids=["check_int", "check_dim", "check_float", "check_positions", "check_offset"],
)
def test_a_bool_is_never_a_number(check, value):
    with pytest.raises(TypeError, match="`n` must be"):
        check(value)


# ----------------------------------------------------------------- ints
@pytest.mark.parametrize(
    "value,expected",
    [(7, 7), (0, 0), (-3, -3), (2**70, 2**70), (np.int64(5), 5), (np.uint8(255), 255), (np.array(4), 4)],
    ids=repr,
)
def test_check_int_accepts_integers_and_0d_integer_arrays(value, expected):
    got = _checks.check_int(value, "n")
    assert got == expected
    assert type(got) is int


def test_check_int_accepts_0d_torch_integers():
    torch = pytest.importorskip("torch")
    got = _checks.check_int(torch.tensor(9), "n")
    assert got == 9
    assert type(got) is int


@pytest.mark.parametrize(
    "value,shown",
    [
        (3.0, "3.0"),
        (2.5, "2.5"),
        ("8", "'8'"),
        (None, "None"),
        (np.float64(2.0), "np.float64(2.0)"),
        (np.array([4]), "an array of shape (1,) and dtype int64"),
        (np.array(4.0), "array(4.)"),
        (1j, "1j"),
    ],
    ids=repr,
)
def test_check_int_refuses_non_integers_and_shows_them(value, shown):
    with pytest.raises(TypeError, match=r"^`n` must be an integer, got ") as info:
        _checks.check_int(value, "n")
    assert shown in str(info.value)


def test_check_int_states_the_range():
    assert _checks.check_int(3, "n", minimum=3, maximum=5) == 3
    assert _checks.check_int(5, "n", minimum=3, maximum=5) == 5
    with pytest.raises(ValueError, match=r"^`n` must be an integer in \[3, 5\], got 2$"):
        _checks.check_int(2, "n", minimum=3, maximum=5)
    with pytest.raises(ValueError, match=r"^`n` must be an integer in \[3, 5\], got 6$"):
        _checks.check_int(6, "n", minimum=3, maximum=5)
    with pytest.raises(ValueError, match=r"^`n` must be an integer >= 0, got -1$"):
        _checks.check_int(-1, "n", minimum=0)
    with pytest.raises(ValueError, match=r"^`n` must be an integer <= 10, got 11$"):
        _checks.check_int(11, "n", maximum=10)


def test_check_dim():
    assert _checks.check_dim(8) == 8
    assert _checks.check_dim(np.int32(3)) == 3
    assert _checks.check_dim(np.array(6), even=True) == 6
    assert _checks.check_dim(0, minimum=0) == 0
    assert _checks.check_dim(_checks.MAX_ELEMENTS) == 2**40
    with pytest.raises(ValueError, match=r"^`dim` must be a positive integer, got 0$"):
        _checks.check_dim(0)
    with pytest.raises(ValueError, match=r"^`head_dim` must be a positive even integer, got 7$"):
        _checks.check_dim(7, "head_dim", even=True)
    with pytest.raises(TypeError, match=r"^`dim` must be a positive even integer, got 8\.0$"):
        _checks.check_dim(8.0, even=True)
    with pytest.raises(TypeError, match=r"^`dim` must be a positive integer, got an array of shape \(2,\)"):
        _checks.check_dim(np.array([2, 2]))
    with pytest.raises(ValueError, match=r"^`dim` must be at most posenc's limit of 2\*\*40 elements"):
        _checks.check_dim(2**40 + 1)


# --------------------------------------------------------------- floats
@pytest.mark.parametrize("value", [2, 2.5, -1e300, np.float32(0.5), np.int64(3), 0])
def test_check_float_returns_python_floats(value):
    got = _checks.check_float(value, "base")
    assert type(got) is float
    assert got == float(value)


@pytest.mark.parametrize("value", ["1.0", None, np.array(1.0), np.array([1.0]), 1j, [1.0]], ids=repr)
def test_check_float_refuses_non_numbers(value):
    with pytest.raises(TypeError, match=r"^`base` must be a real number, got "):
        _checks.check_float(value, "base")


def test_check_float_rules():
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match=rf"^`base` must be finite, got {bad!r}$"):
            _checks.check_float(bad, "base")
    assert _checks.check_float(math.inf, "max_bias", finite=False) == math.inf
    with pytest.raises(ValueError, match=r"^`std` must be > 0, got 0\.0$"):
        _checks.check_float(0, "std", positive=True)
    assert _checks.check_float(0, "std", nonnegative=True) == 0.0
    with pytest.raises(ValueError, match=r"^`std` must be >= 0, got -0\.5$"):
        _checks.check_float(-0.5, "std", nonnegative=True)
    with pytest.raises(ValueError, match="`std` must be >= 0, got nan"):
        _checks.check_float(math.nan, "std", nonnegative=True, finite=False)


def test_largest_is_the_narrowest_dtypes_maximum():
    xp = NP.xp
    assert _checks.largest(NP, xp.float64, xp.float32) == (float(np.finfo(np.float32).max), xp.float32)
    assert _checks.largest(NP, xp.float32, xp.float16) == (65504.0, xp.float16)
    assert _checks.largest(NP, xp.float64) == (float(np.finfo(np.float64).max), xp.float64)


def test_largest_on_torch_half_dtypes():
    torch = pytest.importorskip("torch")
    ctx = _compat.resolve(xp=torch)
    top, dt = _checks.largest(ctx, torch.bfloat16, torch.float16, torch.float32)
    assert (top, dt) == (65504.0, torch.float16)  # bfloat16 reaches 3.39e38
    assert _checks.largest(ctx, torch.bfloat16)[0] == float(torch.finfo(torch.bfloat16).max)


def test_dtype_name():
    assert _checks.dtype_name(np.dtype("float32")) == "float32"
    torch = pytest.importorskip("torch")
    assert _checks.dtype_name(torch.bfloat16) == "bfloat16"


def test_check_fits_names_the_dtype_that_overflows():
    _checks.check_fits(6.5e4, NP16, "`std` = 1e4 gives values", "lower `std`")
    with pytest.raises(ValueError) as info:
        _checks.check_fits(7e4, NP16, "`std` = 1e4 gives values", "lower `std`")
    expected = "`std` = 1e4 gives values up to 7e+04, which overflow float16 (largest 6.55e+04); lower `std`"
    assert str(info.value) == expected
    _checks.check_fits(1e300, NP, "`x`", "")
    for top in (math.inf, math.nan):  # not finite: refused whatever the dtype
        with pytest.raises(ValueError, match="which overflow float64"):
            _checks.check_fits(top, NP, "`x` gives values", "")


# -------------------------------------------------------------- choices
def test_check_choice():
    assert _checks.check_choice("concat", "layout", _checks.TABLE_LAYOUTS) == "concat"
    with pytest.raises(ValueError, match=r"^`layout` must be one of 'interleaved', 'concat', got 'half'$"):
        _checks.check_choice("half", "layout", _checks.TABLE_LAYOUTS)
    with pytest.raises(TypeError, match=r"^`layout` must be one of 'half', 'interleaved', got 1$"):
        _checks.check_choice(1, "layout", _checks.ROPE_LAYOUTS)
    with pytest.raises(TypeError, match="got None"):
        _checks.check_choice(None, "layout", iter(["a"]))  # any iterable of choices


# ----------------------------------------------------------------- sizes
def test_check_size_limit_is_exact():
    assert _checks.MAX_ELEMENTS == 2**40
    _checks.check_size((2**20, 2**20))
    _checks.check_size((0, 2**60))  # nothing to allocate
    with pytest.raises(ValueError) as info:
        _checks.check_size((2**20 + 1, 2**20), "table")
    msg = str(info.value)
    assert msg.startswith(f"the table of shape ({2**20 + 1}, {2**20}) would hold {(2**20 + 1) * 2**20} elements")
    assert "posenc's limit of 2**40" in msg
    with pytest.raises(ValueError, match="^the output of shape"):
        _checks.check_size((2**41,))


# ---------------------------------------------------------------- arrays
def test_check_float_array_converts_lists_in_the_namespace(xp):
    ctx = _compat.resolve(xp=xp.ns, device=xp.device)
    got = _checks.check_float_array([[0.5, 1.0]], "coords", ctx)
    xp.check_array(got, shape=(1, 2))
    x = xp.asarray(np.array([1.5, 2.5]))
    assert _checks.check_float_array(x, "coords", ctx) is x  # arrays pass through


def test_check_float_array_refusals():
    with pytest.raises(TypeError, match=r"^`coords` must be an array of real floating dtype, got dtype int64$"):
        _checks.check_float_array(np.arange(3), "coords", NP)
    with pytest.raises(TypeError, match=r"^`coords` must be an array, got str$"):
        _checks.check_float_array("0.5", "coords", NP)
    ragged = r"^`coords` must be an array or a \(nested\) list of numbers, got \[\[1, 2\], \[3\]\]$"
    with pytest.raises(TypeError, match=ragged):
        _checks.check_float_array([[1, 2], [3]], "coords", NP)
    with pytest.raises(TypeError, match=r"^`coords` must be an array, got bool$"):
        _checks.check_float_array(True, "coords", NP)


def test_check_int_array():
    x = np.arange(4, dtype=np.int16)
    assert _checks.check_int_array(x, "ids", NP) is x
    assert _checks.check_int_array([1, 2], "ids", NP).dtype == np.int64
    with pytest.raises(TypeError, match=r"^`ids` must be an array of integer dtype, got dtype float64$"):
        _checks.check_int_array(np.zeros(2), "ids", NP)
    with pytest.raises(TypeError, match="`ids` must be an array of integer dtype, got dtype bool"):
        _checks.check_int_array(np.array([True]), "ids", NP)


def test_check_all_finite():
    _checks.check_all_finite(np.array([0.0, -1e308, 1e308]), "x", NP)
    _checks.check_all_finite(np.zeros((0, 3)), "x", NP)  # nothing to scan
    _checks.check_all_finite(np.array([1, 2]), "x", NP)  # integers are finite
    for bad in (np.array([0.0, np.nan]), np.array(np.inf), np.array([[-np.inf]])):
        with pytest.raises(ValueError, match=r"^`x` must be finite: it contains NaN or infinite values$"):
            _checks.check_all_finite(bad, "x", NP)


def test_check_all_finite_never_reads_values_it_cannot_have():
    torch = pytest.importorskip("torch")
    meta = torch.full((3,), float("nan"), device="meta")  # no values to read
    _checks.check_all_finite(meta, "x", _compat.resolve({"x": meta}))
    dask = pytest.importorskip("dask")
    import dask.array as da

    from tests.conftest import _forbid_compute

    lazy = da.from_array(np.array([np.nan, 1.0]), chunks=1)
    with dask.config.set(scheduler=_forbid_compute):  # computing the graph fails
        _checks.check_all_finite(lazy, "x", _compat.resolve({"x": lazy}))


def test_check_all_finite_refuses_a_huge_scan():
    view = np.broadcast_to(np.zeros(1), (2**41,))
    with pytest.raises(ValueError, match=r"the `x` array of shape .* posenc's limit of 2\*\*40"):
        _checks.check_all_finite(view, "x", NP)


# ------------------------------------------------------------- positions
def test_check_positions_int():
    assert _checks.check_positions(5, "positions", NP) == 5
    with pytest.raises(ValueError, match=r"^`positions` must be an integer >= 0, got -1$"):
        _checks.check_positions(-1, "positions", NP)
    a_float = r"^`positions` must be an int n \(meaning 0..n-1\) or an array of positions, got the float 4\.0$"
    with pytest.raises(TypeError, match=a_float):
        _checks.check_positions(4.0, "positions", NP)
    with pytest.raises(ValueError, match=r"^the table of shape \(1073741824, 2048\) would hold"):
        _checks.check_positions(2**30, "positions", NP, out_tail=(2**11,))
    with pytest.raises(ValueError, match=r"^the cos/sin table of shape"):
        _checks.check_positions(2**30, "positions", NP, out_tail=(2**11,), what="cos/sin table")


def test_check_positions_arrays(xp):
    ctx = _compat.resolve(xp=xp.ns, device=xp.device)
    p = xp.asarray(np.array([[-1.5, 0.0], [3.0, 2.0**20]]))
    assert _checks.check_positions(p, "positions", ctx) is p
    got = _checks.check_positions([0, 1, 2], "positions", ctx)
    xp.check_array(got, shape=(3,))
    with pytest.raises(TypeError, match=r"^`positions` must be an array of integer or real floating dtype, got dtype"):
        _checks.check_positions(xp.asarray(np.array([True, False])), "positions", ctx)


def test_check_positions_refuses_nan_and_huge_arrays():
    with pytest.raises(ValueError, match="`positions` must be finite"):
        _checks.check_positions(np.array([0.0, np.nan]), "positions", NP)
    # the size comes first: a zero-stride view of 2**41 NaNs is refused unread
    view = np.broadcast_to(np.array(np.nan), (2**41,))
    with pytest.raises(ValueError, match=r"^the table of shape \(2199023255552, 8\)"):
        _checks.check_positions(view, "positions", NP, out_tail=(8,))


# ---------------------------------------------------------------- offsets
def test_check_offset():
    assert _checks.check_offset(0, "offset", NP) == 0
    assert _checks.check_offset(-(2**64), "offset", NP) == -(2**64)
    assert _checks.check_offset(2**64, "offset", NP) == 2**64
    got = _checks.check_offset(np.array(-7), "offset", NP)
    assert got == -7
    assert type(got) is int
    assert _checks.check_offset(np.int32(3), "offset", NP) == 3
    too_far = rf"^`offset` must be an integer of magnitude at most 2\*\*64, got {2**64 + 1}$"
    with pytest.raises(ValueError, match=too_far):
        _checks.check_offset(2**64 + 1, "offset", NP)
    with pytest.raises(TypeError, match=r"^`offset` must be an integer, got 1\.0$"):
        _checks.check_offset(1.0, "offset", NP)
    with pytest.raises(TypeError, match=r"^`offset` must be an integer, got an array of shape \(1,\)"):
        _checks.check_offset(np.array([1]), "offset", NP)


def test_check_offset_keeps_traced_offsets():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")

    seen = []

    def f(o):
        ctx = _compat.resolve({"o": o})
        got = _checks.check_offset(o, "offset", ctx)
        seen.append(type(got))
        return got + 1

    assert int(jax.jit(f)(jnp.asarray(4))) == 5
    assert seen and not issubclass(seen[0], int)  # the tracer, not a Python int


# ----------------------------------------------------- dtypes and shapes
@pytest.mark.parametrize(
    "shapes,expected",
    [
        ((), ()),
        (((),), ()),
        (((3, 1), (1, 4)), (3, 4)),
        (((2, 1, 5), (7, 1), ()), (2, 7, 5)),
        (((0,), (1,)), (0,)),
        (((2,), (3,)), None),
        (((4, 3), (2, 3)), None),
    ],
)
def test_broadcast_shapes(shapes, expected):
    assert _checks.broadcast_shapes(*shapes) == expected


@given(st.lists(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3), min_size=1, max_size=4))
def test_broadcast_shapes_is_numpys(shapes):
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        expected = None
    assert _checks.broadcast_shapes(*shapes) == expected


def test_broadcast_shapes_keeps_traced_sizes():
    """Sizes are compared, never converted: each output size is one of the
    inputs' own objects (a torch ``SymInt`` stays symbolic)."""

    class Size(int):  # an int that remembers it went through
        pass

    n = Size(5)
    out = _checks.broadcast_shapes((1, n), (3, 1))
    assert out == (3, 5)
    assert out[1] is n
