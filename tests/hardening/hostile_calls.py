"""Hostile calls: what callers and model plumbing do to posenc's results and modules.

Each probe does what real code does -- writes into a returned table through
an interop route (DLPack, ``torch.from_numpy``, ``load_state_dict`` into a
registered buffer, ``setflags`` on the base), builds a module on the ``meta``
device and materialises it with ``to_empty``, grows a cache under
``inference_mode`` and then trains, passes position ids of a narrow integer
dtype or offsets that leave it, runs under ``torch.func.vmap`` at the sizes
of the fast paths or under ``jax.jit`` over a concrete array, asks for ever
new widths -- and says what a correct library does: the right result
(``correct``), or a clean refusal (``clean``: a ``ValueError`` /
``TypeError`` naming the argument).  Outcomes: ``clean``, ``correct``,
``crash`` (any other exception, or a dead child), ``silent`` (a wrong result,
or a result where a refusal was due), ``hang``.

The probes run in a child process under a memory cap (``RLIMIT_AS``: what
the imports take plus 2 GiB) with a timer per probe.

``python tests/hardening/hostile_calls.py`` runs every probe against the
``posenc`` it imports and prints the counts by group (``-v``: one line per
probe); run it with ``PYTHONPATH`` set to another checkout to count that
one.  ``test_hostile_calls.py`` asserts each probe's outcome.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: seconds a probe may take in the child before it counts as a hang
PROBE_TIMEOUT = 30.0
#: memory the child may allocate beyond what its imports took
HEADROOM = 2 << 30

OUTCOMES = ("clean", "correct", "crash", "silent", "hang")


@dataclass(frozen=True)
class Probe:
    name: str
    group: str
    run: Callable[[], bool]  # True: the right result; False: a wrong one; raises: a refusal or a crash
    want: tuple[str, ...]  # the acceptable outcomes
    names: str = ""  # the argument a clean refusal must name (in backquotes)


PROBES: list[Probe] = []


def probe(group: str, want: str | tuple[str, ...] = "correct", names: str = "") -> Callable:
    def deco(fn: Callable[[], bool]) -> Callable[[], bool]:
        w = (want,) if isinstance(want, str) else want
        PROBES.append(Probe(fn.__name__.lstrip("_").replace("_", "-"), group, fn, w, names))
        return fn

    return deco


def _torch() -> Any:
    import torch

    return torch


# ------------------------------------------------------------------ interop
def _sin1_ok(a: Any) -> bool:
    return abs(float(np.asarray(a)[1, 0]) - math.sin(1.0)) < 1e-6


def _interop(write: Callable[[np.ndarray], None], cached: bool) -> bool:
    import posenc

    posenc.clear_caches()
    if cached:
        posenc.sinusoidal(16, 8)
    a = posenc.sinusoidal(16, 8)
    with contextlib.suppress(ValueError, RuntimeError, BufferError, TypeError):
        write(a)  # a route may refuse the write: then nothing changed
    return _sin1_ok(posenc.sinusoidal(16, 8))


def _w_dlpack(a: np.ndarray) -> None:
    _torch().from_dlpack(a).mul_(0.5)


def _w_from_numpy(a: np.ndarray) -> None:
    _torch().from_numpy(a).mul_(0.5)


def _w_as_tensor(a: np.ndarray) -> None:
    _torch().as_tensor(a).mul_(0.5)


def _w_asarray(a: np.ndarray) -> None:
    _torch().asarray(a).mul_(0.5)


def _w_buffer(a: np.ndarray) -> None:
    torch = _torch()
    m = torch.nn.Module()
    m.register_buffer("pe", torch.from_numpy(a))
    m.load_state_dict({"pe": torch.zeros(a.shape, dtype=torch.float64)})


def _w_setflags(a: np.ndarray) -> None:
    b = a
    while isinstance(b.base, np.ndarray):
        b = b.base
    b.setflags(write=True)
    b[...] = 0.0


for _route in (_w_dlpack, _w_from_numpy, _w_as_tensor, _w_asarray, _w_buffer, _w_setflags):
    for _cached in (False, True):

        def _p(route: Callable = _route, cached: bool = _cached) -> bool:
            return _interop(route, cached)

        _p.__name__ = f"{_route.__name__[3:]}-{'cached' if _cached else 'first-call'}"
        probe("interop")(_p)


@probe("interop")
def _torch_inplace_and_numpy() -> bool:
    import posenc

    torch = _torch()
    posenc.clear_caches()
    posenc.sinusoidal(16, 8, xp=torch)
    t = posenc.sinusoidal(16, 8, xp=torch)
    t.mul_(0.5)
    posenc.sinusoidal(16, 8, xp=torch).numpy()[...] = 0.0
    return _sin1_ok(posenc.sinusoidal(16, 8, xp=torch))


# ------------------------------------------------------------------ modules
def _rope_cos(p: Any, dim: int) -> np.ndarray:
    w = 10000.0 ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    a = np.asarray(p, dtype=np.float64)[..., None] * w
    return np.cos(np.concatenate([a, a], axis=-1))


def _sin_table(p: Any, dim: int) -> np.ndarray:
    w = 10000.0 ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    a = np.asarray(p, dtype=np.float64)[..., None] * w
    return np.stack([np.sin(a), np.cos(a)], axis=-1).reshape(a.shape[:-1] + (dim,))


def _close(got: Any, want: np.ndarray, tol: float) -> bool:
    g = got.detach().double().numpy()
    return g.shape == want.shape and bool(np.all(np.abs(g - want) <= tol))


def _meta(make: Callable[[], Any]) -> Any:
    torch = _torch()
    with torch.device("meta"):
        m = make()
    return m.to_empty(device="cpu")


@probe("modules")
def _meta_rotary() -> bool:
    from posenc.torch import RotaryEmbedding

    rope = _meta(lambda: RotaryEmbedding(8, max_positions=16))
    return _close(rope.cos_sin(16)[0], _rope_cos(np.arange(16), 8), 3e-7)


@probe("modules")
def _meta_sinusoidal() -> bool:
    from posenc.torch import SinusoidalEmbedding

    emb = _meta(lambda: SinusoidalEmbedding(8, max_positions=16))
    return _close(emb(_torch().zeros(1, 16, 8))[0], _sin_table(np.arange(16), 8), 3e-7)


@probe("modules")
def _meta_alibi_fixed() -> bool:
    from posenc.torch import ALiBi

    alibi = _meta(lambda: ALiBi(4))
    return _close(alibi.slopes, np.array([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]), 0.0)


@probe("modules")
def _meta_alibi_learned_reset() -> bool:
    from posenc.torch import ALiBi

    alibi = _meta(lambda: ALiBi(4, learned=True))
    alibi.reset_parameters()
    return _close(alibi.slopes, np.array([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]), 0.0)


@probe("modules")
def _meta_axes() -> bool:
    from posenc.torch import AxesRotaryEmbedding

    mod = _meta(lambda: AxesRotaryEmbedding((4, 4)))
    cos, _ = mod(_torch().tensor([[3, 5]]))
    return abs(float(cos[0, 0]) - math.cos(3.0)) < 3e-7 and abs(float(cos[0, 4]) - math.cos(5.0)) < 3e-7


@probe("modules")
def _meta_timesteps() -> bool:
    from posenc.torch import Timesteps

    ts = _meta(lambda: Timesteps(8, True, 0))
    return abs(float(ts(_torch().tensor([7.0]))[0, 0]) - math.cos(7.0)) < 3e-7


@probe("modules")
def _reset_parameters_rotary() -> bool:
    from posenc.torch import RotaryEmbedding

    rope = RotaryEmbedding(8, max_positions=16)
    with _torch().no_grad():
        rope.cos_cached.fill_(1e27)
    rope.reset_parameters()
    return _close(rope.cos_sin(16)[0], _rope_cos(np.arange(16), 8), 3e-7)


@probe("modules")
def _inference_mode_growth_then_training_rotary() -> bool:
    from posenc.torch import RotaryEmbedding

    torch = _torch()
    rope = RotaryEmbedding(8, max_positions=4)
    with torch.inference_mode():
        rope(torch.ones(1, 1, 16, 8), torch.ones(1, 1, 16, 8))
    q = torch.ones(1, 1, 16, 8, requires_grad=True)
    rope(q, q)[0].sum().backward()
    return q.grad is not None and bool(torch.isfinite(q.grad).all())


@probe("modules")
def _inference_mode_growth_then_training_sinusoidal() -> bool:
    from posenc.torch import SinusoidalEmbedding

    torch = _torch()
    emb = SinusoidalEmbedding(8, max_positions=4)
    with torch.inference_mode():
        emb(torch.ones(1, 16, 8))
    x = torch.ones(1, 16, 8, requires_grad=True)
    emb(x).sum().backward()
    return x.grad is not None


for _dt in ("uint8", "int8", "int16"):

    def _p(dt: str = _dt) -> bool:
        from posenc.torch import RotaryEmbedding

        torch = _torch()
        rope = RotaryEmbedding(8, max_positions=8)
        ids = torch.tensor([[3, 1, 2]], dtype=getattr(torch, dt))
        return _close(rope.cos_sin(3, position_ids=ids)[0], _rope_cos(np.array([[3, 1, 2]]), 8), 3e-7)

    _p.__name__ = f"position-ids-{_dt}"
    probe("modules", ("correct", "clean"), names="position_ids")(_p)


for _dt in ("int64", "bool"):

    def _p(dt: str = _dt) -> bool:
        from posenc.torch import SinusoidalEmbedding

        torch = _torch()
        SinusoidalEmbedding(8)(torch.ones(1, 3, 8, dtype=getattr(torch, dt)))
        return False

    _p.__name__ = f"sinusoidal-x-{_dt}"
    probe("modules", "clean", names="x")(_p)


@probe("modules")
def _double_rotary() -> bool:
    from posenc.torch import RotaryEmbedding

    rope = RotaryEmbedding(8, max_positions=4096).double()
    return _close(rope.cos_cached, _rope_cos(np.arange(4096), 8), 1e-12)


@probe("modules")
def _double_sinusoidal() -> bool:
    from posenc.torch import SinusoidalEmbedding

    emb = SinusoidalEmbedding(8, max_positions=4096).double()
    return _close(emb.table, _sin_table(np.arange(4096), 8), 1e-12)


@probe("modules")
def _decode_at_2_19_keeps_no_gib() -> bool:
    from posenc.torch import RotaryEmbedding

    torch = _torch()
    rope = RotaryEmbedding(128, max_positions=2048)
    q = torch.ones(1, 1, 1, 128)
    rope(q, q, offset=2**19)
    kept = (rope.cos_cached.numel() + rope.sin_cached.numel()) * 4
    cos, _ = rope.cos_sin(1, offset=2**19)
    return kept <= 64 * 2**20 and _close(cos, _rope_cos([2**19], 128), 1e-6)


@probe("modules", ("correct", "clean"), names="position_ids")
def _position_id_1e8() -> bool:
    from posenc.torch import RotaryEmbedding

    rope = RotaryEmbedding(64, max_positions=16)
    cos, _ = rope.cos_sin(1, position_ids=_torch().tensor([10**8]))
    return rope.cached <= 2**20 and _close(cos, _rope_cos([10**8], 64), 1e-6)


# ------------------------------------------------------------------ offsets
_EDGES = {"uint8": 255, "int8": 127, "int16": 32767, "int32": 2**31 - 1}


def _offset_probe(backend: str, dt: str) -> bool:
    import posenc

    top = _EDGES[dt]
    if backend == "numpy":
        p = np.array([top], dtype=dt)
    elif backend == "torch":
        torch = _torch()
        p = torch.tensor([top], dtype=getattr(torch, dt))
    else:
        import jax.numpy as jnp

        p = jnp.array([top], dtype=dt)
    s = posenc.rope_cos_sin(p, 8, offset=1)[1]
    return abs(float(np.asarray(s)[0, 0]) - math.sin(top + 1)) < 1e-5


for _be in ("numpy", "torch", "jax"):
    for _dt in _EDGES:

        def _p(be: str = _be, dt: str = _dt) -> bool:
            return _offset_probe(be, dt)

        _p.__name__ = f"{_be}-{_dt}-top-plus-1"
        # int32 is JAX's widest without x64: the sum is refused there
        probe("offsets", ("correct", "clean") if _be == "jax" and _dt == "int32" else "correct", names="offset")(_p)


@probe("offsets", ("correct", "clean"), names="offset")
def _jit_jax_int32_top_plus_1() -> bool:
    import jax
    import jax.numpy as jnp

    import posenc

    got = jax.jit(lambda p: posenc.rope_cos_sin(p, 8, offset=1)[1])(jnp.array([2**31 - 1], dtype=jnp.int32))
    got = np.asarray(got)[0, 0]
    big = jax.config.jax_enable_x64
    return abs(got - math.sin(2**31)) < 1e-5 if big else bool(np.isnan(got))  # NaN, not another row


@probe("offsets")
def _rope_uint8_offset() -> bool:
    import posenc

    x = np.zeros((1, 8))
    x[0, 4:] = 1.0
    got = posenc.rope(x, np.array([255], dtype=np.uint8), offset=1)
    return abs(-got[0, 0] - math.sin(256.0)) < 1e-6


@probe("offsets", "clean", names="offset")
def _offset_leaves_int64() -> bool:
    import posenc

    posenc.rope_cos_sin(np.array([2**63 - 1], dtype=np.int64), 8, offset=1)
    return False


# ------------------------------------------------------------------ functorch / jit
def _vmap(fn: Callable[..., Any], *args: Any) -> Any:
    return _torch().func.vmap(fn)(*args)


@probe("functorch")
def _vmap_apply_rope_2_15() -> bool:
    import posenc

    torch = _torch()
    x = torch.randn(2, 1, 256, 128, dtype=torch.float64)
    cos, sin = posenc.rope_cos_sin(256, 128, dtype=torch.float64, xp=torch)
    got = _vmap(lambda a: posenc.apply_rope(a, cos, sin), x)
    return bool(torch.allclose(got, posenc.apply_rope(x, cos, sin), atol=1e-12, rtol=0))


@probe("functorch")
def _vmap_rope_2_15() -> bool:
    import posenc

    torch = _torch()
    x = torch.randn(2, 1, 256, 128, dtype=torch.float64)
    got = _vmap(lambda a: posenc.rope(a, 256), x)
    return bool(torch.allclose(got, posenc.rope(x, 256), atol=1e-12, rtol=0))


@probe("functorch")
def _vmap_rope_ids_2_15() -> bool:
    import posenc

    torch = _torch()
    x = torch.randn(2, 1, 256, 128, dtype=torch.float64)
    ids = torch.arange(256).expand(2, 256) + torch.tensor([[0], [7]])
    got = _vmap(lambda a, p: posenc.rope(a, p), x, ids)
    want = torch.stack([posenc.rope(x[i], ids[i]) for i in range(2)])
    return bool(torch.allclose(got, want, atol=1e-12, rtol=0))


for _fn in ("timestep_embedding", "sinusoidal", "rope_cos_sin"):

    def _p(fn: str = _fn) -> bool:
        import posenc

        torch = _torch()
        f = getattr(posenc, fn)
        call = (lambda a: f(a, 8)[1]) if fn == "rope_cos_sin" else (lambda a: f(a, 8))
        ts = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
        got = _vmap(call, ts)
        return bool(torch.allclose(got, torch.stack([call(t) for t in ts]), atol=2.5e-7, rtol=0))

    _p.__name__ = f"vmap-{_fn}"
    probe("functorch")(_p)

    def _q(fn: str = _fn) -> bool:
        import jax
        import jax.numpy as jnp

        import posenc

        f = getattr(posenc, fn)
        c = jnp.array([1.0, 2.0])
        call = (lambda: f(c, 8)[1]) if fn == "rope_cos_sin" else (lambda: f(c, 8))
        got = jax.jit(lambda z: call() + z)(jnp.zeros(8))
        return bool(np.allclose(np.asarray(got), np.asarray(call()), atol=1e-6, rtol=0))

    _q.__name__ = f"jit-closed-{_fn}"
    probe("functorch")(_q)


# ------------------------------------------------------------------ memos
def _memo_bytes(calls: Callable[[int], None], n: int) -> int:
    """Bytes the memos (not the two byte-bounded table caches) keep after ``calls(i)``, i < n."""
    import gc
    import tracemalloc

    import posenc
    from posenc import _cache

    posenc.clear_caches()
    tracemalloc.start()
    try:
        for i in range(n):
            calls(i)
        for name in ("host", "tables"):
            _cache.CACHES[name].clear()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        posenc.clear_caches()
        gc.collect()
        return before - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


@probe("memos")
def _wide_rope_dims_numpy() -> bool:
    import posenc

    kept = _memo_bytes(lambda i: posenc.rope_cos_sin(np.arange(1), 2**20 + 2 * i), 8)
    return kept <= 128 * 2**20


@probe("memos")
def _wide_sinusoidal_and_timestep_dims() -> bool:
    import posenc

    def calls(i: int) -> None:
        posenc.sinusoidal(np.arange(1), 2**20 + 2 * i)
        posenc.timestep_embedding(np.arange(1.0), 2**20 + 2 * i)

    return _memo_bytes(calls, 6) <= 128 * 2**20


@probe("memos")
def _wide_rope_dims_torch() -> bool:
    import posenc

    torch = _torch()
    kept = _memo_bytes(lambda i: posenc.rope_cos_sin(1, 2**20 + 2 * i, xp=torch), 8)
    return kept <= 128 * 2**20


@probe("memos")
def _clear_caches_empties_all() -> bool:
    import posenc
    from posenc import _cache

    posenc.rope_cos_sin(np.arange(4), 8)
    posenc.sinusoidal(16, 8)
    posenc.clear_caches()
    return all(len(c) == 0 for c in _cache.CACHES.values())


# ------------------------------------------------------------------ runner
BY_NAME = {p.name: p for p in PROBES}
assert len(BY_NAME) == len(PROBES), "probe names must be unique"


class _Timeout(BaseException):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:240]}"


def run_one(p: Probe) -> tuple[str, str]:
    try:
        ok = p.run()
    except _Timeout:
        return "hang", f"no answer in {PROBE_TIMEOUT:g} s"
    except (ValueError, TypeError) as exc:
        # a clean refusal names the argument (in backquotes); a TypeError of a
        # tracer (TracerBoolConversionError) names none
        text = str(exc)
        named = f"`{p.names}`" in text if p.names else re.search(r"`\w+`", text) is not None
        return ("clean" if named else "crash"), _describe(exc)
    except BaseException as exc:  # noqa: BLE001 - every other exception is what the probe looks for
        return "crash", _describe(exc)
    if "clean" in p.want and "correct" not in p.want:
        return "silent", "returned where a refusal was due"
    return ("correct", "") if ok else ("silent", "wrong result")


def _cap_memory() -> None:
    import resource

    with open("/proc/self/status") as fh:
        vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = vm + HEADROOM if hard == resource.RLIM_INFINITY else min(hard, vm + HEADROOM)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _child(names: list[str]) -> None:
    import warnings

    warnings.simplefilter("ignore")
    import jax  # noqa: F401
    import torch

    import posenc
    import posenc.torch

    torch.set_num_threads(1)
    posenc.sinusoidal(4, 4)  # imports first, so that the cap counts only the probes
    if sys.platform.startswith("linux"):
        _cap_memory()
    signal.signal(signal.SIGALRM, _on_alarm)
    for name in names:
        signal.setitimer(signal.ITIMER_REAL, PROBE_TIMEOUT)
        try:
            outcome, detail = run_one(BY_NAME[name])
        except _Timeout:
            outcome, detail = "hang", f"no answer in {PROBE_TIMEOUT:g} s"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        print(json.dumps({"name": name, "outcome": outcome, "detail": detail}), flush=True)


def run(names: list[str]) -> dict[str, dict]:
    """Run the probes ``names`` in capped children (a new one after a probe
    that kills its child)."""
    results: dict[str, dict] = {}
    rest = list(names)
    while rest:
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", *rest],
            capture_output=True, text=True, timeout=120 + PROBE_TIMEOUT * (len(rest) + 1), check=False,
        )
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                res = json.loads(line)
                results[res["name"]] = res
        left = [n for n in rest if n not in results]
        if left:  # the child died in the first of them
            tail = (proc.stderr.strip().splitlines() or [""])[-1]
            detail = f"child died ({proc.returncode}): {tail}"
            results[left[0]] = {"name": left[0], "outcome": "crash", "detail": detail}
            left = left[1:]
        rest = left
    return results


def table(results: dict[str, dict]) -> str:
    groups = list(dict.fromkeys(p.group for p in PROBES if p.name in results))
    head = f"{'group':<10} {'tried':>5} " + " ".join(f"{o:>7}" for o in OUTCOMES)
    lines = [head, "-" * len(head)]
    for g in [*groups, None]:
        members = [r for n, r in results.items() if g is None or BY_NAME[n].group == g]
        counts = {o: sum(r["outcome"] == o for r in members) for o in OUTCOMES}
        if g is None:
            lines.append("-" * len(head))
        lines.append(f"{g or 'all':<10} {len(members):>5} " + " ".join(f"{counts[o]:>7}" for o in OUTCOMES))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        _child(argv[1:])
        return 0
    verbose = "-v" in argv
    names = [a for a in argv if a != "-v"] or [p.name for p in PROBES]
    results = run(names)
    if verbose:
        for name in names:
            r, p = results[name], BY_NAME[name]
            mark = "ok " if r["outcome"] in p.want else "BAD"
            print(f"{mark} {p.group:<10} {name:<46} {r['outcome']:<8} {r['detail']}")
        print()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
