"""The Triton kernels (posenc/_kernels/triton.py) against the portable path
they replace, run by Triton's interpreter on CPU tensors.

The interpreter is switched on per test (``TRITON_INTERPRET=1`` through
``monkeypatch``): the module builds its interpreted kernels itself and reads
the variable when :func:`available` is asked, so nothing has to be set before
triton is imported, and no other test of the process sees the variable.

Under the interpreter ``sin`` and ``cos`` are NumPy's float32 functions and
``round`` is an exact half-to-even: the kernels' results are compared bit for
bit with the portable formula written in NumPy (:func:`np_turns`), within an
ulp of torch's CPU functions (:data:`ULP_TORCH`), and with an exact oracle
(float64 from rational arithmetic) within posenc's bound.  Rotations involve
no sine: they equal the portable rotation bit for bit.
"""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton", reason="triton is not installed (the Triton kernels are optional)")

from posenc import _rope  # noqa: E402
from posenc._kernels import triton as kt  # noqa: E402
from posenc._kernels.angles import turns_torch  # noqa: E402
from posenc._kernels.rotations import rope_small_torch, rotate_small_torch  # noqa: E402
from posenc._turns import as_freqs, turn_arrays  # noqa: E402

#: the worst difference from torch's CPU path measured here, in float32 ulp
#: (NumPy's float32 sin / cos against torch's; both within posenc's bound)
ULP_TORCH = 2
#: posenc's documented accuracy of float32 tables
BOUND = 2.5e-7


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    """Triton's interpreter on for the test, and a launch counter."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    launches: list[str] = []
    monkeypatch.setattr(kt, "on_launch", launches.append)
    return launches


def _freqs(m: int = 8, base: float = 10000.0) -> np.ndarray:
    return 1.0 / base ** (np.arange(m) * 2.0 / (2 * m))


def _turns(freqs: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.from_numpy(turn_arrays(as_freqs(freqs).key, ("v1", "v2")))
    return t[0], t[1]


def np_turns(p, v1, v2, scale=1.0, clip=False, layout=None):
    """posenc._angles._sincos_turns in NumPy (float32 sin / cos: the
    interpreter's), laid out as turns_torch lays it out."""
    p64 = np.asarray(p).astype(np.float64)
    if clip:
        p64 = np.clip(p64, -(2.0**64), 2.0**64)
    p64 = p64[..., None]
    f = p64 * v1
    f = (f - np.rint(f)) + p64 * v2
    f = (f - np.rint(f)) * (2.0 * math.pi)
    ah = f.astype(np.float32)
    al = (f - ah.astype(np.float64)).astype(np.float32)
    sn, cs = np.sin(ah), np.cos(ah)
    s, c = sn + cs * al, cs - sn * al
    s, c = s * np.float32(scale), c * np.float32(scale)
    if layout == "half":
        return np.concatenate([s, s], -1), np.concatenate([c, c], -1)
    if layout == "interleaved":
        return np.repeat(s, 2, -1), np.repeat(c, 2, -1)
    return s, c


def ulps(a, b) -> int:
    """The largest distance between float32 arrays in ulp (NaNs must match)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(2**31) - ia, ia)  # ordered: adjacent floats are adjacent ints
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    ok = ~np.isnan(a)
    return int(np.abs(ia - ib)[ok].max(initial=0))


def exact_sincos(p, freqs):
    """float64 sin / cos of ``p * freqs`` from the exact turns ``frac(p *
    (v1 + v2))`` (the frequencies posenc uses, to about 106 bits)."""
    t = turn_arrays(as_freqs(freqs).key, ("v1", "v2"))
    vs = [Fraction(float(a)) + Fraction(float(b)) for a, b in zip(t[0], t[1], strict=True)]
    out = np.empty(np.shape(p) + (len(vs), 2))
    for idx, q in np.ndenumerate(np.asarray(p)):
        q = Fraction(float(q)) if isinstance(q, np.floating) else Fraction(int(q))
        for j, v in enumerate(vs):
            f = q * v
            a = 2 * math.pi * float(f - round(f))
            out[idx + (j, 0)], out[idx + (j, 1)] = math.sin(a), math.cos(a)
    return out[..., 0], out[..., 1]


INT_POSITIONS = [0, 1, -1, 7, -5, 4095, 4096, 123456789, -987654321, 2**31 - 1, -(2**31), 2**31 - 77]
FLOAT_POSITIONS = [0.0, 0.5, -0.25, 3.75, 1000.125, -4096.5, 2.0**22 - 0.5, -(2.0**22) + 0.25, 4194303.75, 1e-3]


# --------------------------------------------------------------------------
# availability, import, launches
# --------------------------------------------------------------------------
def test_available(monkeypatch, interpreter):
    assert kt.available("cpu")
    assert not kt.available("meta")
    assert not kt.available("mps")
    assert kt.available("cuda") == torch.cuda.is_available()
    monkeypatch.delenv("TRITON_INTERPRET")
    assert not kt.available("cpu")  # read when asked, not at import
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert not kt.available("cpu")
    monkeypatch.setattr(kt, "cpu_interpreter", True)  # without the variable (as_device())
    assert kt.available("cpu") and not kt.interpreting()
    v = _turns(_freqs(4))
    s, _ = kt.turns_triton(torch.arange(3), v)
    np.testing.assert_array_equal(s.numpy(), np_turns(np.arange(3), v[0].numpy(), v[1].numpy())[0])
    assert interpreter == ["_turns_kernel"]


def test_import_posenc_imports_no_triton():
    code = "import sys, posenc; print('triton' in sys.modules, 'posenc._kernels.triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_interpreter_off_takes_the_portable_path(monkeypatch, interpreter):
    monkeypatch.delenv("TRITON_INTERPRET")
    p = torch.arange(5)
    v = _turns(_freqs(4))
    s, c = kt.turns_triton(p, v)
    s0, c0 = turns_torch(p, v)
    assert torch.equal(s, s0) and torch.equal(c, c0)  # torch's own operations: the same bits
    assert interpreter == []
    assert kt.rotate_large_triton(torch.ones(2, 8), c0, s0, "half", 8, (5, 8), False, torch.float32) is None


#: aten operations a wrapper may issue besides its kernel: allocations and views (no work, no value read)
NO_WORK = {"aten.empty.memory_format", "aten.view.default", "aten.expand.default", "aten.as_strided.default"}


def test_one_launch_and_no_other_work(interpreter):
    """Each wrapper: its kernel's one launch, and otherwise only allocations
    and views (the interpreter's own host copies stay hidden from dispatch
    modes, as a device launch issues none)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.add(str(func))
            return func(*args, **(kwargs or {}))

    v = _turns(_freqs(8))
    q, k, p = torch.randn(1, 4, 1, 16), torch.randn(1, 2, 1, 16), torch.tensor([[4096]])
    c, s = torch.randn(1, 1, 1, 16), torch.randn(1, 1, 1, 16)
    ids, fm = torch.randn(5, 2), torch.randn(3, 4, 2)
    calls = {
        "_turns_kernel": lambda: kt.turns_triton(p, v, 1.0, False, "half"),
        "_table_kernel": lambda: kt.table_triton(5, 3, v, "concat", torch.float32, "cpu"),
        "_rotate_kernel": lambda: kt.rotate_large_triton(q, c, s, "half", 16, (1, 4, 1), False, torch.float32),
        "_rotate_pair_kernel": lambda: kt.rotate_pair_triton(q, k, c, s, "interleaved"),
        "_rope_kernel": lambda: kt.rope_small_triton(q, p, v, 1.0, (1, 1, 1, 16), "half"),
        "_rope_pair_kernel": lambda: kt.rope_pair_triton(q, k, p, v, 1.0, (1, 1, 1, 16), "half"),
        "_matrix_kernel": lambda: kt.matrix_triton(ids, fm, False, torch.float32),
    }
    for name, call in calls.items():
        interpreter.clear()
        with Ops() as mode:
            call()
        assert interpreter == [name]
        assert mode.ops <= NO_WORK, (name, mode.ops - NO_WORK)


# --------------------------------------------------------------------------
# angles of positions
# --------------------------------------------------------------------------
@pytest.mark.parametrize("layout", [None, "half", "interleaved"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "float64", "float32"])
def test_turns(layout, dtype, interpreter):
    freqs = _freqs(6)  # 6 frequencies: not a power of two (masked columns)
    v1, v2 = _turns(freqs)
    values = INT_POSITIONS if dtype.startswith("int") else FLOAT_POSITIONS
    if dtype == "float32":
        values = [float(np.float32(v)) for v in values]
    p = torch.tensor(values, dtype=getattr(torch, dtype)).reshape(2, -1)  # 2-D positions
    scale = 0.8125
    s, c = kt.turns_triton(p, (v1, v2), scale, p.is_floating_point(), layout)
    assert interpreter == ["_turns_kernel"]  # one launch writes both tables
    width = 6 if layout is None else 12
    assert s.shape == c.shape == p.shape + (width,) and s.dtype == c.dtype == torch.float32
    ref_s, ref_c = np_turns(p.numpy(), v1.numpy(), v2.numpy(), scale, p.is_floating_point(), layout)
    np.testing.assert_array_equal(s.numpy(), ref_s)
    np.testing.assert_array_equal(c.numpy(), ref_c)
    ts, tc = turns_torch(p, (v1, v2), scale, p.is_floating_point(), layout)
    assert ulps(s, ts) <= ULP_TORCH and ulps(c, tc) <= ULP_TORCH


@pytest.mark.parametrize("dtype", ["int16", "uint8", "float16", "bfloat16"])
def test_turns_small_dtypes(dtype):
    v1, v2 = _turns(_freqs(4))
    p = torch.tensor([0, 3, 100, 127], dtype=getattr(torch, dtype))
    s, c = kt.turns_triton(p, (v1, v2), 1.0, p.is_floating_point(), "half")
    ts, tc = turns_torch(p, (v1, v2), 1.0, p.is_floating_point(), "half")
    assert ulps(s, ts) <= ULP_TORCH and ulps(c, tc) <= ULP_TORCH


@pytest.mark.parametrize("layout", [None, "half", "interleaved"])
def test_turns_written_in_half_precision(layout, interpreter):
    """Half-precision tables written by the kernel (a decode step's
    ``rope_cos_sin(..., dtype=torch.bfloat16)``, one launch): the float32
    tables rounded to nearest even, bit for bit, NaN rows kept."""
    v = _turns(_freqs(8))
    p = torch.tensor([[0, 3, -100], [4096, 2**31 - 1, 2**40]])
    s32, c32 = kt.turns_triton(p, v, 0.75, False, layout, 2.0**32)
    for dtype in (torch.bfloat16, torch.float16):
        interpreter.clear()
        s, c = kt.turns_triton(p, v, 0.75, False, layout, 2.0**32, dtype)
        assert interpreter == ["_turns_kernel"]
        assert s.dtype == c.dtype == dtype
        for got, ref in ((s, s32), (c, c32)):
            assert torch.equal(got[:, :2], ref[:, :2].to(dtype)) and got[1, 2].isnan().all()
    assert kt.turns_triton(p, v, 0.75, False, layout, 2.0**32, torch.float64)[0].dtype == torch.float32


def test_turns_non_contiguous_scalar_and_empty():
    v1, v2 = _turns(_freqs(5))
    p = torch.arange(-42, 42, 3).reshape(-1, 2).T  # transposed: copied first
    s, c = kt.turns_triton(p, (v1, v2))
    ref_s, ref_c = np_turns(p.numpy(), v1.numpy(), v2.numpy())
    np.testing.assert_array_equal(s.numpy(), ref_s)
    np.testing.assert_array_equal(c.numpy(), ref_c)
    s, c = kt.turns_triton(torch.tensor(12345), (v1, v2), layout="interleaved")  # 0-d positions
    assert s.shape == (10,)
    np.testing.assert_array_equal(s.numpy(), np_turns(np.int64(12345), v1.numpy(), v2.numpy(), layout="interleaved")[0])
    s, c = kt.turns_triton(torch.zeros((0, 3), dtype=torch.int64), (v1, v2))
    assert s.shape == (0, 3, 5)


def test_turns_clips_float_positions_and_keeps_nan():
    v1, v2 = _turns(_freqs(3))
    p = torch.tensor([float("nan"), float("inf"), -float("inf"), 1e30, -3.5])
    s, c = kt.turns_triton(p, (v1, v2), 1.0, True)
    ts, tc = turns_torch(p, (v1, v2), 1.0, True)
    assert torch.isnan(s[0]).all() and torch.isnan(c[0]).all()
    assert ulps(s, ts) <= ULP_TORCH and ulps(c, tc) <= ULP_TORCH


def test_turns_needing_autograd_take_torch():
    v1, v2 = _turns(_freqs(3))
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    s, _ = kt.turns_triton(p, (v1, v2))
    assert s.requires_grad  # torch's operations, differentiable


@pytest.mark.parametrize("kind", ["int", "float"])
def test_turns_accuracy(kind):
    """Within posenc's bound of the exact values: integers to 2**31, floats to 2**22."""
    freqs = np.concatenate([_freqs(6), [1.0, 0.7853981633974483]])
    p = np.array(INT_POSITIONS if kind == "int" else FLOAT_POSITIONS, dtype=np.int64 if kind == "int" else np.float64)
    s, c = kt.turns_triton(torch.from_numpy(p), _turns(freqs), 1.0, kind == "float")
    es, ec = exact_sincos(p, freqs)
    err = max(np.abs(s.numpy() - es).max(), np.abs(c.numpy() - ec).max())
    assert err <= BOUND, err
    # a deliberately wrong control: the angle rounded to float32 first (the naive formula) fails
    naive = np.sin(p[:, None].astype(np.float32) * freqs.astype(np.float32))
    assert np.abs(naive - es).max() > BOUND


# --------------------------------------------------------------------------
# tables of a range
# --------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("lo", [0, -37, 2**31 - 300])
def test_table_rope(layout, lo, interpreter):
    v = _turns(_freqs(5))
    n = 37  # not a multiple of a block
    out = kt.table_triton(n, lo, v, layout, torch.float32, "cpu", scale=1.25)
    assert interpreter == ["_table_kernel"]
    assert out.shape == (2, n, 10)
    s, c = kt.turns_triton(torch.arange(lo, lo + n), v, 1.25, False, layout)
    assert torch.equal(out[0], c) and torch.equal(out[1], s)


@pytest.mark.parametrize("layout", ["sin-cos", "concat"])
@pytest.mark.parametrize("dim", [10, 11])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_table_sinusoidal(layout, dim, dtype):
    v = _turns(_freqs(5))
    n, lo = 19, 3
    out = kt.table_triton(n, lo, v, layout, getattr(torch, dtype), "cpu", dim=dim)
    assert out.shape == (n, dim) and out.dtype == getattr(torch, dtype)
    s, c = kt.turns_triton(torch.arange(lo, lo + n), v)
    ref = torch.stack([s, c], -1).reshape(n, 10) if layout == "sin-cos" else torch.cat([s, c], -1)
    ref = torch.cat([ref, torch.zeros(n, dim - 10)], -1).to(getattr(torch, dtype))
    assert torch.equal(out, ref)  # written in the dtype: the float32 table, rounded once


def test_table_accuracy_and_bad_dim():
    freqs = _freqs(4)
    lo, n = 2**31 - 20, 20
    out = kt.table_triton(n, lo, _turns(freqs), "concat", torch.float32, "cpu")
    es, ec = exact_sincos(np.arange(lo, lo + n), freqs)
    assert np.abs(out.numpy() - np.concatenate([es, ec], -1)).max() <= BOUND
    with pytest.raises(ValueError, match="`dim` must be 2m or 2m \\+ 1"):
        kt.table_triton(4, 0, _turns(freqs), "concat", torch.float32, "cpu", dim=12)


# --------------------------------------------------------------------------
# rotations
# --------------------------------------------------------------------------
def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    ("xshape", "tshape"),
    [((2, 3, 5, 12), (1, 1, 5, 12)), ((5, 12), (5, 12)), ((3, 12), (2, 3, 12)), ((1, 4, 1, 12), (1, 1, 1, 12))],
)
def test_rotate_small(layout, dtype, xshape, tshape, interpreter):
    g = _gen()
    dt = getattr(torch, dtype)
    x = torch.randn(xshape, generator=g, dtype=dt)
    c, s = torch.randn(tshape, generator=g, dtype=dt), torch.randn(tshape, generator=g, dtype=dt)  # any full tables
    out = kt.rotate_small_triton(x, c, s, layout)
    assert interpreter == ["_rotate_kernel"]
    assert torch.equal(out, rotate_small_torch(x, c, s, layout))


def test_rotate_small_strided_and_fallbacks(interpreter):
    g = _gen(1)
    x = torch.randn(5, 3, 16, generator=g).transpose(0, 1)  # strided leading axes
    c, s = torch.randn(5, 16, generator=g), torch.randn(5, 16, generator=g)
    assert torch.equal(kt.rotate_small_triton(x, c, s, "half"), rotate_small_torch(x, c, s, "half"))
    xg = x.clone().requires_grad_(True)
    assert kt.rotate_small_triton(xg, c, s, "half").requires_grad  # autograd: torch's formula
    x6 = torch.randn(2, 2, 2, 2, 2, 4, generator=g)  # five leading axes of size > 1
    assert torch.equal(kt.rotate_small_triton(x6, torch.ones(4), torch.zeros(4), "interleaved"), x6)
    assert interpreter == ["_rotate_kernel"]


def _apply_case(x, c, s, layout, compact, heads_axis=None):
    """posenc._rope's plan and its portable rotation (the spec)."""
    plan = _rope.apply_plan(x, c, s, layout, None, compact, heads_axis)
    cc, ss = c, s
    if plan.table_shape is not None:
        cc, ss = c.reshape(plan.table_shape), s.reshape(plan.table_shape)
    return plan, cc, ss, _rope.rotate_portable(x, cc, ss, plan)


def _rope_tables(seq, rd, layout, compact, dtype=torch.float32, lo=0):
    v = _turns(_freqs(rd // 2))
    s, c = kt.turns_triton(torch.arange(lo, lo + seq), v, 1.0, False, None if compact else layout)
    return c.to(dtype), s.to(dtype)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize(
    ("dtype", "tdtype"),
    [("float32", "float32"), ("float64", "float64"), ("bfloat16", "float32"), ("float16", "float32"),
     ("bfloat16", "bfloat16")],
)
@pytest.mark.parametrize("rd", [16, 10])  # 10 of 16 features: partial rotary, the rest passes through
def test_rotate_large(layout, compact, dtype, tdtype, rd, interpreter):
    g = _gen(2)
    x = torch.randn(2, 3, 7, 16, generator=g).to(getattr(torch, dtype))
    c, s = _rope_tables(7, rd, layout, compact, getattr(torch, tdtype))
    interpreter.clear()
    plan, cc, ss, ref = _apply_case(x, c[None, None], s[None, None], layout, compact)
    out = kt.rotate_large_triton(x, cc, ss, layout, plan.rotary_dim, plan.lead, compact, plan.wt)
    assert interpreter == ["_rotate_kernel"]
    assert out.dtype == x.dtype and out.shape == ref.shape
    assert torch.equal(out, ref)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rotate_large_heads_axis_strided_and_in_place(layout, interpreter):
    g = _gen(3)
    base = torch.randn(2, 4, 9, 20, generator=g)
    x = base[..., :18].transpose(1, 2)  # (batch, seq, heads, 18): strided, not contiguous
    c, s = _rope_tables(9, 12, layout, False)
    interpreter.clear()
    plan, cc, ss, ref = _apply_case(x, c, s, layout, False, heads_axis=2)
    out = kt.rotate_large_triton(x, cc, ss, layout, plan.rotary_dim, plan.lead, False, plan.wt)
    assert torch.equal(out, ref)
    xi = x.clone()
    got = kt.rotate_large_triton(xi, cc, ss, layout, plan.rotary_dim, plan.lead, False, plan.wt, inplace=True)
    assert got is xi and torch.equal(xi, ref)  # the features beyond rotary_dim untouched
    assert interpreter == ["_rotate_kernel", "_rotate_kernel"]


def test_rotate_large_none(interpreter):
    x = torch.randn(3, 4, 8)
    c, s = _rope_tables(4, 8, "half", False)
    interpreter.clear()
    lead = (3, 4)
    args = ("half", 8, lead, False)
    assert kt.rotate_large_triton(x.requires_grad_(True), c, s, *args, torch.float32) is None  # autograd
    x = x.detach()
    assert kt.rotate_large_triton(x, c, s, *args, torch.float64) is None  # another working dtype
    assert kt.rotate_large_triton(x[:1], c, s, *args, torch.float32, inplace=True) is None  # a broadcast x
    x6 = torch.randn(2, 2, 2, 2, 2, 4, 8)
    assert kt.rotate_large_triton(x6, c, s, "half", 8, tuple(x6.shape[:-1]), False, torch.float32) is None
    assert kt.rotate_large_triton(x.to(torch.int32), c, s, *args, torch.float32) is None
    assert interpreter == []


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rotate_pair(layout, compact, dtype, interpreter):
    g = _gen(4)
    dt = getattr(torch, dtype)
    q = torch.randn(1, 6, 5, 16, generator=g).to(dt)  # 6 query heads, 2 key heads (GQA)
    k = torch.randn(1, 2, 5, 16, generator=g).to(dt)
    c, s = _rope_tables(5, 12, layout, compact)
    c, s = c[None, None], s[None, None]
    interpreter.clear()
    got = kt.rotate_pair_triton(q, k, c, s, layout, compact=compact)
    assert interpreter == ["_rotate_pair_kernel"]  # q and k in one launch
    for x, out in zip((q, k), got, strict=True):
        assert torch.equal(out, _apply_case(x, c, s, layout, compact)[3])
    qi, ki = q.clone(), k.clone()
    got = kt.rotate_pair_triton(qi, ki, c, s, layout, compact=compact, inplace=True)
    assert got[0] is qi and got[1] is ki
    assert torch.equal(qi, _apply_case(q, c, s, layout, compact)[3])
    assert torch.equal(ki, _apply_case(k, c, s, layout, compact)[3])


def test_rotate_pair_none():
    q, k = torch.randn(1, 4, 3, 8), torch.randn(1, 2, 3, 8)
    c, s = _rope_tables(3, 8, "half", False)
    assert kt.rotate_pair_triton(q, k.double(), c, s, "half") is None  # dtypes differ
    assert kt.rotate_pair_triton(q, torch.randn(1, 2, 3, 6), c, s, "half") is None  # head dims differ
    assert kt.rotate_pair_triton(q, k, c, s, "half", rotary_dim=6) is None  # not the tables' width
    assert kt.rotate_pair_triton(q, k, c[:2], s[:2], "half") is None  # tables that do not broadcast


# --------------------------------------------------------------------------
# rope's decode step
# --------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(
    ("xshape", "pos", "shape"),
    [
        ((1, 6, 1, 16), [[4096]], None),  # a decode step: (batch, heads, 1, head_dim), position ids (1, 1)
        ((2, 5, 3, 16), [7, -2, 2**31 - 9, 0, 11], (5, 1, 16)),  # (batch, seq, heads): heads_axis=2
        ((3, 7, 16), [0, 1, 2, 3, 4, 5, 6], None),
    ],
)
def test_rope_small(layout, xshape, pos, shape, interpreter):
    g = _gen(5)
    x = torch.randn(xshape, generator=g)
    p = torch.tensor(pos)
    v = _turns(_freqs(8))
    out = kt.rope_small_triton(x, p, v, 0.75, shape, layout)
    assert interpreter == ["_rope_kernel"]  # the tables and the rotation: one launch
    # the kernel's own tables then the formula: bit for bit
    s, c = kt.turns_triton(p, v, 0.75, False, layout)
    if shape is not None:
        s, c = s.reshape(shape), c.reshape(shape)
    assert torch.equal(out, rotate_small_torch(x, c, s, layout))
    # torch's own operations: within the ulp of sin / cos, times |x| (rounded sums of two products)
    ref = rope_small_torch(x, p, v, 0.75, shape, layout)
    assert torch.allclose(out, ref, rtol=0, atol=4 * 2**-24 * float(x.abs().max()))


def test_rope_small_fallbacks(interpreter):
    v = _turns(_freqs(4))
    x = torch.randn(2, 3, 8, requires_grad=True)
    out = kt.rope_small_triton(x, torch.arange(3), v, 1.0, None, "half")
    assert out.requires_grad and interpreter == []  # autograd: torch's operations


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_pair(layout, interpreter):
    """A decode step's RoPE of q and k (GQA head counts) in one launch."""
    g = _gen(6)
    q, k = torch.randn(2, 6, 1, 16, generator=g), torch.randn(2, 2, 1, 16, generator=g)
    p = torch.tensor([[4096], [17]])  # position ids (batch, 1): one per sequence
    v = _turns(_freqs(8))
    shape = (2, 1, 1, 16)  # the tables aligned against (batch, heads, seq)
    got = kt.rope_pair_triton(q, k, p, v, 1.5, shape, layout)
    assert interpreter == ["_rope_pair_kernel"]
    for x, out in zip((q, k), got, strict=True):
        assert torch.equal(out, kt.rope_small_triton(x, p, v, 1.5, shape, layout))
    assert kt.rope_pair_triton(q, k.double(), p, v, 1.0, shape, layout) is None  # dtypes differ
    assert kt.rope_pair_triton(q, k, p.double(), v, 1.0, shape, layout) is None  # float positions


# --------------------------------------------------------------------------
# frequency matrices
# --------------------------------------------------------------------------
def _matrix_ids(dtype: str) -> torch.Tensor:
    """Ids of two axes: a 3 x 4 grid about the origin, large ones, and for
    float ids fractions, a NaN (a NaN row) and an infinity (clipped)."""
    grid = np.stack(np.meshgrid(np.arange(-1, 2), np.arange(4), indexing="ij"), -1).reshape(-1, 2)
    if dtype.startswith("int"):
        extra = [[2**31 - 1, -(2**31)], [123456789, 4096]]
    else:
        extra = [[0.375, -2.5e-3], [1e6 + 0.5, -4096.25], [float("nan"), 1.0], [2.0, float("inf")]]
    return torch.tensor(np.concatenate([grid, extra]).astype(dtype))


@pytest.mark.parametrize("dtype", ["int64", "int32", "float64", "float32"])
@pytest.mark.parametrize("turns", [False, True])
@pytest.mark.parametrize("work", ["float32", "float64"])
def test_matrix(dtype, turns, work, interpreter):
    """One launch: the portable arithmetic bit for bit (NumPy's), within an
    ulp of torch's CPU path, NaN rows where an id is NaN; heads
    first, frequencies of any float dtype, columns not a power of two."""
    from posenc import _compat, _kernels, _matrix

    ids = _matrix_ids(dtype)
    g = torch.Generator().manual_seed(3)
    for freqs in (torch.randn(2, 3, 6, 2, generator=g) * 0.3, torch.randn(5, 2, generator=g).double()):
        s, c = kt.matrix_triton(ids, freqs, turns, getattr(torch, work))
        assert interpreter == ["_matrix_kernel"]
        interpreter.clear()
        assert s.shape == c.shape == freqs.shape[:-2] + ids.shape[:-1] + freqs.shape[-2:-1]
        assert s.dtype == c.dtype == getattr(torch, work)
        # the portable path in NumPy: the interpreter's float32 sin / cos
        rs, rc = _matrix.matrix_sincos(ids.numpy(), freqs.numpy(), turns,
                                       _compat.resolve({"ids": ids.numpy()}, dtype=work))
        np.testing.assert_array_equal(s.numpy(), rs)
        np.testing.assert_array_equal(c.numpy(), rc)
        ctx = _compat.resolve({"ids": ids, "freqs": freqs}, dtype=work)
        with _kernels.disabled():
            ts, tc = _matrix.matrix_sincos(ids, freqs, turns, ctx)
        if work == "float32":
            assert ulps(s, ts) <= ULP_TORCH and ulps(c, tc) <= ULP_TORCH
        else:
            np.testing.assert_allclose(s.numpy(), ts.numpy(), rtol=0, atol=4e-16)
            np.testing.assert_allclose(c.numpy(), tc.numpy(), rtol=0, atol=4e-16)
        bad = torch.isnan(ids.double()).any(-1)  # (infinite ids are clipped to 2**64, as the portable path does)
        assert torch.isnan(s[..., bad, :]).all() and torch.isfinite(s[..., ~bad, :]).all()


def test_matrix_accuracy_strides_and_fallbacks(interpreter):
    """Within posenc's bound of the exact angles (rational arithmetic) for
    angles up to about 1e6; strided ids and frequencies read in place; None
    for autograd, more axes than the kernel unrolls, integer frequencies;
    empty tables without a launch."""
    g = torch.Generator().manual_seed(5)
    ids = (torch.rand(40, 6, generator=g, dtype=torch.float64) * 2e4 - 1e4).float()[:, ::2]  # strided, 3 axes
    freqs = (torch.rand(4, 7, 3, generator=g) * 30).transpose(0, 1)[:, :, :]  # (7, 4, 3) strided: heads of 7
    s, c = kt.matrix_triton(ids, freqs, False, torch.float32)
    assert interpreter == ["_matrix_kernel"] and s.shape == (7, 40, 4)
    for h in (0, 6):
        for i in (0, 17, 39):
            for j in range(4):
                a = sum(Fraction(float(ids[i, k])) * Fraction(float(freqs[h, j, k])) for k in range(3))
                t = a / (2 * Fraction(math.pi))  # (math.pi: the angle's own rounding is far below the bound)
                r = 2 * math.pi * float(t - round(t))
                assert abs(float(s[h, i, j]) - math.sin(r)) <= BOUND and abs(float(c[h, i, j]) - math.cos(r)) <= BOUND
    interpreter.clear()
    f = torch.randn(4, 3, requires_grad=True)
    assert kt.matrix_triton(ids, f, False, torch.float32) is None
    with torch.no_grad():
        assert kt.matrix_triton(ids, f, False, torch.float32) is not None
    assert kt.matrix_triton(torch.zeros(2, 9), torch.zeros(4, 9), False, torch.float32) is None
    assert kt.matrix_triton(ids, torch.ones(4, 3, dtype=torch.int64), False, torch.float32) is None
    interpreter.clear()
    s, c = kt.matrix_triton(torch.zeros(0, 3), torch.zeros(2, 4, 3), False, torch.float32)
    assert s.shape == (2, 0, 4) and interpreter == []


# --------------------------------------------------------------------------
# the compiled form (no GPU needed to compile)
# --------------------------------------------------------------------------
@pytest.mark.slow
def test_compiled_form_compiles_for_cuda():
    """Every kernel's compiled form builds for an H100 (sm_90) without a
    device: the interpreter does not type-check as the compiler does.  No
    approximate sine or cosine, no flush-to-zero, no fused multiply-add
    outside libdevice's own functions (the rotation has none)."""
    import re

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    forms = kt._forms(False)
    pointers = {
        "_turns_kernel": {"p_ptr": "*i64", "s_ptr": "*fp32", "c_ptr": "*fp32"},
        "_table_kernel": {"o_ptr": "*bf16", "lo": "i64"},
        "_rotate_kernel": {"x_ptr": "*bf16", "c_ptr": "*fp32", "s_ptr": "*fp32", "o_ptr": "*bf16"},
        "_rotate_pair_kernel": dict.fromkeys(
            ("q_ptr", "qo_ptr", "k_ptr", "ko_ptr", "qc_ptr", "qs_ptr", "kc_ptr", "ks_ptr"), "*bf16"
        ),
        "_rope_kernel": {"x_ptr": "*fp32", "p_ptr": "*i64", "o_ptr": "*fp32"},
        "_rope_pair_kernel": {"q_ptr": "*fp32", "qp_ptr": "*i64", "qo_ptr": "*fp32", "k_ptr": "*fp32",
                              "kp_ptr": "*i64", "ko_ptr": "*fp32"},
        "_matrix_kernel": {"ids_ptr": "*fp32", "f_ptr": "*fp32", "s_ptr": "*fp32", "c_ptr": "*fp32", "is0": "i64",
                           "fs0": "i64"},
    }
    blocks = {"BLOCK_R": 16, "BLOCK_M": 64, "BLOCK_H": 64, "BLOCK_REST": 64}
    options = dict(kt._options(False))
    for name, types in pointers.items():
        fn = forms[name]
        constexprs = {}
        signature = {}
        for arg, param in zip(fn.arg_names, fn.params, strict=True):
            if param.is_constexpr:
                constexprs[arg] = blocks.get(arg, {"LAYOUT": 1, "NAXES": 3}.get(arg, False))
                signature[arg] = "constexpr"
            else:
                signature[arg] = types.get(arg, "*fp64" if arg.startswith("v") and arg.endswith("_ptr") else
                                           ("fp32" if arg == "scale" else "i32"))
        if name == "_rotate_kernel":
            constexprs["REST"] = True
        ptx = triton.compile(ASTSource(fn, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                             options=options).asm["ptx"]
        assert not re.search(r"(sin|cos)\.approx|\.ftz", ptx), name
        if "rotate" in name:
            assert "fma." not in ptx, name
    # the frequency matrix's float64 branch (libdevice's float64 sine), integer ids, bfloat16 frequencies, turns
    fn = forms["_matrix_kernel"]
    types = {"ids_ptr": "*i64", "f_ptr": "*bf16", "s_ptr": "*fp64", "c_ptr": "*fp64"}
    signature = {a: "constexpr" if p.is_constexpr else types.get(a, "i64") for a, p in zip(fn.arg_names, fn.params,
                                                                                             strict=True)}
    constexprs = {"NAXES": 2, "FLOAT_IDS": False, "TURNS": True, "INTERP": False, "BLOCK_R": 4, "BLOCK_M": 128}
    ptx = triton.compile(ASTSource(fn, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                         options=options).asm["ptx"]
    assert ".f64" in ptx and not re.search(r"\.ftz", ptx)  # (it builds: Triton type-checks the branch)
    # the range table's interleaved layouts, with the arguments a launch specializes (16-byte aligned pointers,
    # sizes divisible by 16), as the tile of a CUDA launch: each thread's stores are vectors of four (the pairs
    # are written as one contiguous run, not as two runs of stride 2, which cost twice the memory traffic)
    fn = forms["_table_kernel"]
    aligned = ("o_ptr", "v1_ptr", "v2_ptr", "m", "width", "plane")
    attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in aligned}
    br, bm, warps = kt._table_tile(256, torch.device("cuda"))
    for layout in (2, 3):
        signature = {a: "constexpr" if p.is_constexpr else {"o_ptr": "*fp32", "lo": "i64", "plane": "i64",
                                                              "scale": "fp32"}.get(a, "*fp64" if a[0] == "v" else "i32")
                     for a, p in zip(fn.arg_names, fn.params, strict=True)}
        constexprs = {"LAYOUT": layout, "INTERP": False, "BLOCK_R": br, "BLOCK_M": bm}
        ptx = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget("cuda", 90, 32),
                             options=dict(options, num_warps=warps)).asm["ptx"]
        stores = re.findall(r"st\.global(\.v\d)?\.b32", ptx)
        assert stores.count(".v4") >= 8 and len(stores) - stores.count(".v4") <= 1, (layout, stores)


# --------------------------------------------------------------------------
# on a GPU: the compiled kernels against torch's own CUDA operations
# --------------------------------------------------------------------------
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (the compiled kernels)")
def test_cuda_compiled(monkeypatch, interpreter):
    """Compiled, on the device: the rotations bit for bit the portable path;
    the angles within an ulp of torch's CUDA path (both libdevice's
    ``sinf`` / ``cosf``: expected equal) and within posenc's bound."""
    monkeypatch.delenv("TRITON_INTERPRET")
    dev = torch.device("cuda")
    freqs = np.concatenate([_freqs(62), [1.0, 0.7853981633974483]])
    v = tuple(t.to(dev) for t in _turns(freqs))
    for values, dtype in ((INT_POSITIONS, torch.int64), (FLOAT_POSITIONS, torch.float64)):
        p = torch.tensor(values, dtype=dtype, device=dev)
        for layout in (None, "half", "interleaved"):
            s, c = kt.turns_triton(p, v, 1.0, p.is_floating_point(), layout)
            ts, tc = turns_torch(p, v, 1.0, p.is_floating_point(), layout)
            assert ulps(s.cpu(), ts.cpu()) <= 1 and ulps(c.cpu(), tc.cpu()) <= 1
        s, c = kt.turns_triton(p, v, 1.0, p.is_floating_point())
        es, ec = exact_sincos(p.cpu().numpy(), freqs)
        assert max(np.abs(s.cpu().numpy() - es).max(), np.abs(c.cpu().numpy() - ec).max()) <= BOUND
    g = torch.Generator(device=dev).manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16):
        q = torch.randn(2, 8, 33, 128, generator=g, device=dev).to(dtype)
        k = torch.randn(2, 2, 33, 128, generator=g, device=dev).to(dtype)
        for layout in ("half", "interleaved"):
            for compact, rd in ((False, 128), (True, 128), (False, 96)):
                s, c = kt.turns_triton(torch.arange(33, device=dev), tuple(t[: rd // 2] for t in v), 1.0, False,
                                       None if compact else layout)
                c, s = c[None, None], s[None, None]
                got = kt.rotate_pair_triton(q, k, c, s, layout, compact=compact)
                for x, out in zip((q, k), got, strict=True):
                    assert torch.equal(out, _apply_case(x, c, s, layout, compact)[3])
    table = kt.table_triton(1000, 2**31 - 1000, v, "sin-cos", torch.bfloat16, dev)
    s, c = turns_torch(torch.arange(2**31 - 1000, 2**31, device=dev), v)
    for got, ref in ((table[:, 0::2], s), (table[:, 1::2], c)):  # one bfloat16 rounding of the float32 values
        assert (got.float() - ref.to(torch.bfloat16).float()).abs().max() <= 2**-8
    from posenc import _compat, _kernels, _matrix

    for dtype in ("int64", "float32"):  # a frequency matrix: the portable arithmetic on the device, within an ulp
        ids, freqs = _matrix_ids(dtype).to(dev), (torch.randn(2, 6, 2, generator=g, device=dev) * 0.3)
        s, c = kt.matrix_triton(ids, freqs, False, torch.float32)
        with _kernels.disabled():
            ts, tc = _matrix.matrix_sincos(ids, freqs, False, _compat.resolve({"ids": ids, "freqs": freqs}))
        assert ulps(s.cpu(), ts.cpu()) <= ULP_TORCH and ulps(c.cpu(), tc.cpu()) <= ULP_TORCH


def test_several_programs_and_loops(interpreter):
    """Grids of several programs (a partial last one), a second program along
    the frequencies, and the loops over blocks of pairs and of the features
    that pass through: the offsets of every program, not only the first."""
    g = _gen(7)
    v = _turns(_freqs(8))
    p = torch.arange(-1500, 1600, dtype=torch.int64)  # 3100 rows: two programs of 2048
    s, c = kt.turns_triton(p, v, 1.0, False, "interleaved")
    ref_s, ref_c = np_turns(p.numpy(), v[0].numpy(), v[1].numpy(), layout="interleaved")
    np.testing.assert_array_equal(s.numpy(), ref_s)
    np.testing.assert_array_equal(c.numpy(), ref_c)
    wide = _turns(_freqs(130))  # 130 frequencies: two programs along them
    s, c = kt.turns_triton(torch.tensor([3, -77, 2**31 - 5]), wide, 1.0, False, "half")
    ref_s, ref_c = np_turns(np.array([3, -77, 2**31 - 5]), wide[0].numpy(), wide[1].numpy(), layout="half")
    np.testing.assert_array_equal(s.numpy(), ref_s)
    np.testing.assert_array_equal(c.numpy(), ref_c)
    table = kt.table_triton(3100, -1500, v, "interleaved", torch.float32, "cpu")
    assert torch.equal(table[1], kt.turns_triton(torch.arange(-1500, 1600), v, 1.0, False, "interleaved")[0])
    # rotations: 80 pairs (two blocks of 64, blocks of 128 rows), 30 features passed through
    x = torch.randn(3, 100, 190, generator=g)  # 300 rows: three programs
    cs, sn = _rope_tables(100, 160, "half", False)
    plan, cc, ss, ref = _apply_case(x, cs, sn, "half", False)
    out = kt.rotate_large_triton(x, cc, ss, "half", plan.rotary_dim, plan.lead, False, plan.wt)
    assert torch.equal(out, ref)
    q, k = torch.randn(3, 50, 190, generator=g), torch.randn(1, 100, 190, generator=g)  # 150 and 100 rows
    cs, sn = _rope_tables(1, 160, "interleaved", True)
    got = kt.rotate_pair_triton(q, k, cs, sn, "interleaved", compact=True)
    for x, out in zip((q, k), got, strict=True):
        assert torch.equal(out, _apply_case(x, cs, sn, "interleaved", True)[3])
    q, k = torch.randn(150, 160, generator=g), torch.randn(2, 150, 160, generator=g)  # 150 and 300 rows
    pos = torch.arange(5, 155)
    wide = _turns(_freqs(80))
    got = kt.rope_pair_triton(q, k, pos, wide, 1.0, None, "half")
    s, c = kt.turns_triton(pos, wide, 1.0, False, "half")
    assert torch.equal(got[0], rotate_small_torch(q, c, s, "half"))
    assert torch.equal(got[1], rotate_small_torch(k, c, s, "half"))


class _Compiled:
    """A stand-in for Triton's ``CompiledKernel``: records its launcher's calls."""

    def __init__(self, calls):
        self.calls = calls
        self.function = object()
        self.packed_metadata = ("meta",)

    def run(self, *args):
        self.calls.append(("direct", args))


class _JIT:
    """A stand-in for Triton's ``JITFunction`` of ``f(x, n, out, A: constexpr, B: constexpr = 7)``."""

    def __init__(self):
        import inspect

        def f(x, n, out, A, B=7):
            pass

        self.signature = inspect.signature(f)
        self.arg_names = list(self.signature.parameters)
        self.calls: list = []
        self.compiled: list = []

    def __getitem__(self, grid):
        def run(*args, **meta):
            self.calls.append(("run", grid, args, meta))
            c = _Compiled(self.calls)
            self.compiled.append(c)
            return c

        return run


def test_launches_skip_jit_run_once_specialized(monkeypatch):
    """A launch whose specialization (dtypes, alignments modulo 256, other
    arguments' values, constants) was seen calls the compiled kernel's
    launcher with every parameter's value, in the signature's order; anything
    new, and every launch while Triton's hooks are set, goes through
    ``JITFunction.run``."""
    from triton import knobs

    monkeypatch.setattr(kt, "_DIRECT", [(lambda dev: 1234, knobs.runtime)])
    monkeypatch.setattr(kt, "_COMPILED", {})
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    jit = _JIT()
    buf = torch.zeros(1024)
    x, y, out = buf[:64], buf[256:320], buf[512:576]  # 1 KiB apart: one address modulo 256
    kinds = lambda: [c[0] for c in jit.calls]  # noqa: E731

    kt._run_compiled(jit, "k", (3,), (x, 5, out), {"A": 2, "INTERP": False, "num_warps": 4})
    assert kinds() == ["run"] and jit.calls[0][1:] == ((3,), (x, 5, out), {"A": 2, "INTERP": False, "num_warps": 4})
    kt._run_compiled(jit, "k", (5, 2), (y, 5, out), {"A": 2, "INTERP": False, "num_warps": 4})
    assert kinds() == ["run", "direct"]
    g0, g1, g2, stream, fn, packed, md, enter, leave, *rest = jit.calls[1][1]
    assert (g0, g1, g2, stream, md, enter, leave) == (5, 2, 1, 1234, None, None, None)
    assert fn is jit.compiled[0].function and packed == ("meta",)
    assert rest[0] is y and rest[1:] == [5, out, 2, 7]  # the constant A, then B's default

    # each of these is a specialization not seen before
    kt._run_compiled(jit, "k", (3,), (x, 6, out), {"A": 2, "INTERP": False, "num_warps": 4})  # an int's value
    kt._run_compiled(jit, "k", (3,), (x[1:], 5, out), {"A": 2, "INTERP": False, "num_warps": 4})  # alignment
    kt._run_compiled(jit, "k", (3,), (x.double(), 5, out), {"A": 2, "INTERP": False, "num_warps": 4})  # dtype
    kt._run_compiled(jit, "k", (3,), (x, 5, out), {"A": 3, "INTERP": False, "num_warps": 4})  # a constant
    kt._run_compiled(jit, "k", (3,), (x, 5, out), {"A": 2, "INTERP": False, "num_warps": 8})  # an option
    kt._run_compiled(jit, "k2", (3,), (x, 5, out), {"A": 2, "INTERP": False, "num_warps": 4})  # another kernel
    kt._run_compiled(jit, "k", (3,), (x, True, out), {"A": 2, "INTERP": False, "num_warps": 4})  # a bool, not 1
    assert kinds() == ["run", "direct"] + ["run"] * 7
    kt._run_compiled(jit, "k", (3,), (x[1:], 5, out), {"A": 2, "INTERP": False, "num_warps": 4})
    assert kinds()[-1] == "direct"

    kt._run_compiled(jit, "k", (3,), (x, 5, out), {"A": 2, "INTERP": False, "num_warps": 4})
    assert kinds()[-1] == "direct"
    hook = lambda *a: None  # noqa: E731
    chain = knobs.runtime.launch_enter_hook
    if hasattr(chain, "add"):  # a HookChain (Triton 3.5 on): set once it holds a hook
        chain.add(hook)
        try:
            kt._run_compiled(jit, "k", (3,), (x, 5, out), {"A": 2, "INTERP": False, "num_warps": 4})
        finally:
            chain.remove(hook)
        assert kinds()[-1] == "run"
    monkeypatch.setattr(knobs.runtime, "launch_exit_hook", hook)
    kt._run_compiled(jit, "k", (3,), (x, 5, out), {"A": 2, "INTERP": False, "num_warps": 4})
    assert kinds()[-1] == "run"


def test_direct_launches_can_be_turned_off(monkeypatch):
    monkeypatch.setattr(kt, "_DIRECT", [])
    monkeypatch.setenv("POSENC_TRITON_DIRECT", "0")
    assert kt._direct() is None
    jit = _JIT()
    for _ in range(2):
        kt._run_compiled(jit, "k", (1,), (torch.zeros(4), 5, torch.zeros(4)), {"A": 2})
    assert [c[0] for c in jit.calls] == ["run", "run"]


def test_kept_launches_skip_the_argument_key(monkeypatch, interpreter):
    """A launch kept by its caller (a rotation's kept spec) is keyed only by
    the device and its tensors' addresses modulo 256: a repeat calls the
    compiled kernel's launcher with the same argument values; the launch
    counter hears of every launch."""
    import types

    monkeypatch.delenv("TRITON_INTERPRET")
    jit = _JIT()
    monkeypatch.setattr(kt, "_forms", lambda interp: {"k": jit})
    from triton import knobs

    monkeypatch.setattr(kt, "_DIRECT", [(lambda dev: 7, knobs.runtime)])
    monkeypatch.setattr(kt, "_COMPILED", {})
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    dev = types.SimpleNamespace(type="cuda", index=None)
    buf = torch.zeros(1024)
    x, y, out = buf[:64], buf[256:320], buf[512:576]
    kept: dict = {}
    kinds = lambda: [c[0] for c in jit.calls]  # noqa: E731

    kt._launch_kept(kept, (x, out), "k", dev, (3,), x, 5, out, A=2)
    assert kinds() == ["run"] and len(kept) == 1
    kt._launch_kept(kept, (y, out), "k", dev, (4,), y, 5, out, A=2)
    assert kinds() == ["run", "direct"]
    g0, g1, g2, stream, *_, rest = jit.calls[1][1][:9] + (list(jit.calls[1][1][9:]),)
    assert (g0, g1, g2, stream) == (4, 1, 1, 7)
    assert rest[0] is y and rest[1:] == [5, out, 2, 7]
    kt._launch_kept(kept, (x[1:], out), "k", dev, (3,), x[1:], 5, out, A=2)  # another alignment
    assert kinds()[-1] == "run" and len(kept) == 2
    kt._launch_kept(kept, (x[1:], out), "k", dev, (3,), x[1:], 5, out, A=2)
    assert kinds()[-1] == "direct"
    assert interpreter == ["k"] * 4
