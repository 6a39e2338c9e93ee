"""Nothing a caller does to a returned array changes a later result.

Each interop route by which a caller can write into a NumPy table that
posenc handed out -- DLPack (``torch.from_dlpack``), ``torch.from_numpy``,
``torch.as_tensor`` and ``torch.asarray`` followed by an in-place op, a
registered buffer filled by ``load_state_dict``, ``setflags(write=True)`` on
the array or on its base -- is tried on the cached tables (``sinusoidal``
and ``rope_cos_sin`` of an int), and the next identical call must return the
exact values.  torch tables are tried through ``.numpy()`` and in-place ops.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc

torch = pytest.importorskip("torch")


def _writable(a: np.ndarray) -> np.ndarray:
    """``a``'s memory made writable by ``setflags`` on the array or the base that owns it."""
    b = a
    while isinstance(b.base, np.ndarray):
        b = b.base
    b.setflags(write=True)
    return b


def _dlpack(a):
    torch.from_dlpack(a).mul_(0.5)


def _from_numpy(a):
    torch.from_numpy(a).mul_(0.5)


def _as_tensor(a):
    torch.as_tensor(a).mul_(0.5)


def _asarray(a):
    torch.asarray(a).mul_(0.5)


def _buffer(a):
    m = torch.nn.Module()
    m.register_buffer("table", torch.from_numpy(a))
    m.load_state_dict({"table": torch.zeros(a.shape, dtype=torch.from_numpy(a).dtype)})


def _setflags(a):
    _writable(a)[...] = 0.0


ROUTES = [_dlpack, _from_numpy, _as_tensor, _asarray, _buffer, _setflags]
CALLS = {
    "sinusoidal": lambda: posenc.sinusoidal(16, 8),
    "rope_cos_sin": lambda: posenc.rope_cos_sin(16, 8)[0],
    "sinusoidal-float32": lambda: posenc.sinusoidal(16, 8, dtype="float32"),
}


@pytest.mark.parametrize("first", [True, False], ids=["first-call", "cached"])
@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("route", ROUTES, ids=lambda f: f.__name__.lstrip("_"))
@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")
def test_numpy_table_cannot_be_written_through(route, call, first):
    fn = CALLS[call]
    posenc.clear_caches()
    if not first:
        fn()  # the table is cached now
    a = fn()
    expect = np.array(a, copy=True)
    assert math.isclose(float(expect[1, 0]), math.sin(1.0), rel_tol=1e-6) or call == "rope_cos_sin"
    route(a)
    again = fn()
    np.testing.assert_array_equal(again, expect)
    if call.startswith("sinusoidal"):
        assert not again.flags.writeable  # cached tables stay read-only, as documented
    posenc.clear_caches()


@pytest.mark.parametrize("how", ["inplace", "numpy", "buffer"])
def test_torch_table_cannot_be_written_through(how):
    posenc.clear_caches()
    posenc.sinusoidal(16, 8, xp=torch)
    t = posenc.sinusoidal(16, 8, xp=torch)
    expect = t.clone()
    if how == "inplace":
        t.mul_(0.5)
    elif how == "numpy":
        t.numpy()[...] = 0.0
    else:
        m = torch.nn.Module()
        m.register_buffer("table", t)
        m.load_state_dict({"table": torch.zeros_like(t)})
    assert torch.equal(posenc.sinusoidal(16, 8, xp=torch), expect)
    posenc.clear_caches()
