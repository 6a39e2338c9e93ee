"""The layout of the house: imports point one way, backend names live in their
rooms, and every value kept between calls is in one registered cache that
``posenc.clear_caches()`` empties."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest

import posenc
from posenc import _cache

PACKAGE = Path(posenc.__file__).resolve().parent

#: the rooms allowed to name a backend: the namespaces, the kernels and their
#: choice, the tracers, and the torch adapters
BACKEND_ROOMS = ("posenc._compat", "posenc._kernels", "posenc._trace", "posenc.torch")

#: the private core, bottom first: a module imports only modules below it
CORE = (
    "posenc._cache", "posenc._trace", "posenc._compat", "posenc._checks", "posenc._kernels", "posenc._turns",
    "posenc._angles",
)


def _modules() -> dict[str, Path]:
    out = {"posenc": PACKAGE / "__init__.py"}
    for info in pkgutil.walk_packages([str(PACKAGE)], "posenc."):
        rel = info.name.split(".")[1:]
        path = PACKAGE.joinpath(*rel)
        out[info.name] = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
    return out


MODULES = _modules()


def _package_of(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def _imports(name: str) -> set[str]:
    """The posenc modules ``name`` imports, at module level or inside functions."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(name)
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            # ``from . import _angles`` imports a module; ``from ._compat import Array`` a name
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    # a package imports its own modules; a module its package's __init__ (when it runs)
    return {t for t in out if not name.startswith(t + ".")}


GRAPH = {name: _imports(name) for name in MODULES}


def test_no_import_circle():
    """Depth-first over every import of posenc (module level and inside
    functions): no module reaches itself."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for t in sorted(GRAPH[m]):
            if state.get(t) == 1:
                cycle = path[path.index(t) :] + [t]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m)
    # the walk sees the imports it must (a walk that finds nothing proves nothing)
    assert "posenc._compat" in GRAPH["posenc._angles"] and "posenc._checks" in GRAPH["posenc.scaling._hf"]
    assert "posenc.mrope" not in GRAPH["posenc.scaling._hf"]


def test_core_imports_point_down():
    def room(t: str) -> str:
        return "posenc._kernels" if t.startswith("posenc._kernels.") else t

    for i, m in enumerate(CORE):
        below = set(CORE[:i])
        members = [n for n in MODULES if room(n) == m]  # a package and its modules
        core_imports = {room(t) for n in members for t in GRAPH[n] if room(t) in CORE and room(t) != m}
        assert core_imports <= below, f"{m} imports {sorted(core_imports - below)}, which are not below it"


def test_backend_names_live_in_their_rooms():
    """No backend name as a string, no import of a backend, no
    array-api-compat outside the rooms that may have them."""
    name_re = re.compile(r"""["'](numpy|torch|dask|cupy|jax)["']""")
    for m, path in MODULES.items():
        if m.startswith(BACKEND_ROOMS):
            continue
        text = path.read_text(encoding="utf-8")
        assert not name_re.search(text), f"{m} names a backend: {name_re.search(text).group(0)}"
        for imp in GRAPH[m] | {n.split(".")[0] for n in re.findall(r"^\s*(?:import|from) ([\w.]+)", text, re.M)}:
            assert imp.split(".")[0] not in ("torch", "jax", "cupy", "dask", "array_api_compat"), f"{m} imports {imp}"


# --------------------------------------------------------------------- caches
def _module_objects():
    for m in MODULES:
        if m == "posenc.torch":
            continue
        mod = importlib.import_module(m)
        for name, obj in vars(mod).items():
            yield m, name, obj


def test_every_cache_is_registered():
    """Every cache object of posenc's modules is one of the registered ones,
    and no function keeps a functools cache of its own."""
    objects = list(_module_objects())  # (imports every module: its caches register then)
    registered = {id(c) for c in _cache.CACHES.values()}
    for m, name, obj in objects:
        if isinstance(obj, (_cache.Memo, _cache.LRU)):
            assert id(obj) in registered, f"{m}.{name} is not registered"
        assert not hasattr(obj, "cache_info"), f"{m}.{name} keeps a functools cache"
        wrapped = getattr(obj, "memo", None)
        if callable(obj) and isinstance(wrapped, _cache.Memo):
            assert id(wrapped) in registered, f"{m}.{name}.memo is not registered"


def _exercise() -> None:
    """Calls that fill the caches of every family."""
    torch = pytest.importorskip("torch")
    p = np.arange(6)
    posenc.sinusoidal(p, 8)
    posenc.sinusoidal(64, 8)
    posenc.sinusoidal(np.arange(4096), 32)
    posenc.add_sinusoidal(np.zeros((2, 5, 8)), offset=3)
    c, s = posenc.rope_cos_sin(p[None], 8)
    posenc.apply_rope(np.ones((1, 2, 6, 8)), c, s, heads_axis=1)
    posenc.rope(np.ones((2, 6, 8)), p)
    posenc.rope(torch.ones(1, 2, 1, 8), torch.tensor([[5]]), heads_axis=1)
    posenc.rope_cos_sin(torch.tensor([3]), 8)
    posenc.rope_frequencies(8, scaling=posenc.scaling.YaRN(4.0, 64))
    posenc.rope_axes_cos_sin(posenc.grid_ids((2, 3)), [4, 4])
    posenc.mrope_cos_sin(np.zeros((3, 4), np.int64), 8, mrope_section=[2, 1, 1])
    posenc.timestep_embedding(np.array([3.0]), 16)
    posenc.t5_buckets(4, 8)
    posenc.alibi_bias(2, 4, 4)
    posenc.decomposed_relative_positions(3, 3, np.zeros((5, 2)))
    posenc.sincos_grid((4, 4), 16)
    posenc.sinusoidal(np.arange(3, dtype=np.float32), 8, dtype="float64")


def test_clear_caches_empties_every_memo():
    """After calls of every family the caches hold entries; after
    ``posenc.clear_caches()`` every registered cache is empty, and plain
    dicts of the modules (constants) did not grow."""
    objects = list(_module_objects())  # (every module imported first: their caches register then)
    plain = {
        (m, n): len(o)
        for m, n, o in objects
        if type(o) is dict and not n.startswith("__")  # module constants (tables of names, ...)
    }
    _exercise()
    filled = [name for name, c in _cache.CACHES.items() if len(c)]
    for name in ("compat.contexts", "rotary.apply_plans", "rotary.table_plans", "rotary.rope_plans", "host"):
        assert name in filled, f"{name} was not filled by the calls"
    assert len(filled) >= 15, filled
    grown = {k: v for k, v in plain.items() if len(vars(importlib.import_module(k[0]))[k[1]]) != v}
    assert not grown, f"module dicts that grew (a cache outside posenc._cache?): {grown}"
    posenc.clear_caches()
    left = {name: len(c) for name, c in _cache.CACHES.items() if len(c)}
    assert not left, f"caches left non-empty: {left}"
    # and the calls work again from empty caches
    _exercise()


def test_cache_limits_set_and_restore():
    before = posenc.cache_limits()
    assert before == {"tables": _cache.TABLES.max_bytes, "host": _cache.HOST.max_bytes}
    try:
        assert posenc.cache_limits(tables=0) == before
        table = posenc.sinusoidal(32, 8)
        assert len(_cache.TABLES) == 0 and not table.flags.writeable  # nothing kept, still read-only
        with pytest.raises(ValueError, match="`host`"):
            posenc.cache_limits(host=-1)
        with pytest.raises(TypeError, match="`tables`"):
            posenc.cache_limits(tables=1.5)
    finally:
        posenc.cache_limits(**before)
    assert posenc.cache_limits() == before


def test_memoize_keeps_results_per_arguments():
    calls = []

    @_cache.memoize(2)
    def square(n):
        calls.append(n)
        return n * n

    try:
        assert [square(3), square(3), square(4), square(5), square(3)] == [9, 9, 16, 25, 9]
        assert calls == [3, 4, 5, 3]  # the oldest entry dropped when full
        assert len(square.memo) == 2
    finally:
        del _cache.CACHES[square.memo.name]


def test_constants_kept_under_inference_mode_serve_autograd():
    """A device constant first made under ``torch.inference_mode`` is kept
    as a normal tensor: a later call whose positions need grad can save it
    for backward."""
    torch = pytest.importorskip("torch")
    posenc.clear_caches()
    p = torch.linspace(0.0, 10.0, 5)
    with torch.inference_mode():
        first = posenc.sinusoidal(p, 8)
    q = p.clone().requires_grad_(True)
    table = posenc.sinusoidal(q, 8)
    table[:, 0].sum().backward()  # d/dp sin(p * 1) = cos(p)
    torch.testing.assert_close(q.grad, torch.cos(p), rtol=0, atol=1e-6)
    # the eager kernel (NumPy's float32 sin / cos) and torch's own operations: within an ulp
    torch.testing.assert_close(table.detach(), first, rtol=0, atol=2.0**-24)
