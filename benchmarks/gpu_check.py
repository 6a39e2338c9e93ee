"""The device check: ``python -m benchmarks --gpu-check [--out DIR]``.

One command for a machine with one CUDA GPU (about four minutes on an H100),
in four parts:

1. the device accuracy sweep: float32 tables of each device backend against
   the exact values (:func:`benchmarks.accuracy.exact_angle_sincos`), integer
   positions to 2**31 and reals to 2**22, the largest error per range
   against the documented bound;
2. every row of the device targets, posenc and its peer measured side by
   side in one process (CUDA events, or host time per step where the call is
   launch-bound; interleaved rounds, medians of the per-round ratios), each
   with its target and a verdict;
3. launches and syncs per call: ``torch.profiler``'s device activities (the
   names of posenc's are kept in the JSON) and the warnings of
   ``torch.cuda.set_sync_debug_mode``;
4. the GPU test lanes (``POSENC_BACKENDS=cupy,torch-cuda,jax,jax-jit`` over
   ``tests/posenc`` and ``tests/hardening``, pytest in a subprocess with a
   time cap): their summary line.  They run last, and the JSON is written
   after every part, so a run cut at its time limit keeps what it measured.

Everything goes to ``DIR/gpu_check.json`` (default ``benchmarks/out``), which
``python -m benchmarks --merge-gpu DIR/gpu_check.json`` merges into the GPU
section of ``benchmarks/results.json`` and ``RESULTS.md``, the device named.

Without a CUDA device the check is a **dry run**: the same code, every
row's callables run once at a tiny size on CPU tensors (under
``posenc._kernels.as_device()`` where it exists, so that they take a CUDA
tensor's decisions; NumPy stands in for CuPy, taking CuPy's route of posenc's
Triton kernels through DLPack, and the CuPy rows' notes say which route ran
and its launches; JAX runs on the CPU, compiled
rows use torch's ``eager`` compiler backend), the lanes run on a single test
whose GPU cases skip, and the JSON is written with every row marked ``no
device``: a bug of the script shows here, not first on the GPU machine.

The machine needs torch, JAX, CuPy, pytest, hypothesis and transformers;
array-api-compat, when not importable, is installed from the wheel that
``make gpu-bundle`` downloads into ``benchmarks/out/wheels`` (``pip install
--no-index --find-links``); diffusers is optional (its formulas are in
:mod:`benchmarks.peers`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
WHEELS = OUT / "wheels"
NO_DEVICE = "no device"
#: the documented bound of float32 tables
BOUND = 2.5e-7
#: launches per call on the device path (item 2 of the device engine), and syncs: none
LAUNCH_TARGETS = {
    "decode step": 17,
    "rope_cos_sin(position_ids)": 5,
    "timestep_embedding": 8,
    "Flux ids": 41,
    "learned frequency matrix": 5,
    "apply_rope bf16": 5,
    "sinusoidal(positions)": 5,
}


# ---------------------------------------------------------------- environment
def ensure_array_api_compat(wheels: Path = WHEELS) -> str:
    """Install array-api-compat from ``wheels`` when it is not importable (a
    GPU machine has no package index); what was done, as a line."""
    if importlib.util.find_spec("array_api_compat") is not None:
        return "array-api-compat: installed"
    found = sorted(wheels.glob("array_api_compat-*.whl")) if wheels.is_dir() else []
    if not found:
        msg = f"array-api-compat is not installed and no wheel is in {wheels} (run `make gpu-bundle` first)"
        raise SystemExit(msg)
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheels), "array-api-compat"]
    if subprocess.run(cmd, check=False).returncode == 0:
        importlib.invalidate_caches()
        return f"array-api-compat: installed from {found[-1].name}"
    # an environment pip may not change: the wheel of a pure-Python package imports from the path
    wheel = str(found[-1])
    sys.path.insert(0, wheel)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [wheel, os.environ.get("PYTHONPATH")]))
    importlib.invalidate_caches()
    return f"array-api-compat: imported from {found[-1].name} (pip could not install it here)"


@dataclass
class Env:
    """Where the check runs: the torch device, its name, and the backends."""

    torch: Any
    device: Any
    name: str | None
    cupy: Any = None
    jax: Any = None
    notes: list[str] = field(default_factory=list)

    @property
    def dry(self) -> bool:
        return self.name is None

    def sync(self) -> None:
        if not self.dry:
            self.torch.cuda.synchronize()


def environment() -> Env:
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX must leave the GPU's memory to torch
    import torch

    if torch.cuda.is_available():
        env = Env(torch, torch.device("cuda"), torch.cuda.get_device_name(0))
    else:
        env = Env(torch, torch.device("cpu"), None)
    try:
        import cupy

        if not env.dry and cupy.cuda.runtime.getDeviceCount() > 0:
            env.cupy = cupy
    except Exception:  # noqa: BLE001 - absent, or no driver
        pass
    if env.cupy is None:
        env.notes.append("CuPy rows: " + ("NumPy stands in (dry run)" if env.dry else "CuPy is not usable here"))
    try:
        import jax

        env.jax = jax
    except ImportError:
        env.notes.append("JAX rows: JAX is not installed")
    return env


@contextlib.contextmanager
def device_decisions(env: Env):
    """In a dry run, CPU tensors take a CUDA tensor's decisions where posenc
    has the switch (``posenc._kernels.as_device()``)."""
    from posenc import _kernels

    switch = getattr(_kernels, "as_device", None)
    if env.dry and switch is not None:
        with switch():
            yield "as_device()"
    else:
        yield None


# ---------------------------------------------------------------- timing
def time_calls(
    env: Env,
    contestants: dict[str, Callable[[], Any]],
    rounds: int,
    *,
    setup: dict[str, Callable[[], Any]] | None = None,
    host: bool = False,
    inner: int = 1,
    sync: Callable[[], Any] | None = None,
    events: str = "torch",
) -> dict[str, list[float]]:
    """Seconds per call of each contestant, interleaved in rotating order.

    On the device: CUDA events around the call (``events`` "torch" or
    "cupy"), or host time of ``inner`` calls and a sync (``host``; JAX:
    ``events="host"`` with ``sync`` blocking on the result).  A dry run calls
    each contestant once and times it on the host.
    """
    setup = setup or {}
    names = list(contestants)
    out: dict[str, list[float]] = {n: [] for n in names}
    if env.dry:
        for n in names:
            if n in setup:
                setup[n]()
            t0 = time.perf_counter()
            contestants[n]()
            out[n].append(time.perf_counter() - t0)
        return out
    torch = env.torch
    block = sync or env.sync
    for n in names:  # warm-up (compilation, caches, allocator)
        if n in setup:
            setup[n]()
        r = contestants[n]()
        if events == "host" and sync is not None:
            sync(r)
    env.sync()
    for r in range(rounds):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            if n in setup:
                setup[n]()
            if events == "host" or host:
                env.sync()
                t0 = time.perf_counter()
                for _ in range(inner):
                    res = contestants[n]()
                if sync is not None:
                    sync(res)
                else:
                    block()
                out[n].append((time.perf_counter() - t0) / inner)
            elif events == "cupy":
                cp = env.cupy
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record()
                res = contestants[n]()
                b.record()
                b.synchronize()
                out[n].append(cp.cuda.get_elapsed_time(a, b) / 1e3)
            else:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                res = contestants[n]()
                b.record()
                torch.cuda.synchronize()
                out[n].append(a.elapsed_time(b) / 1e3)
            del res
    return out


def ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b))


# ---------------------------------------------------------------- rows
def _row(env: Env, case: str, backend: str, name: str, times: dict, ref: str, limit: float, *, note: str = "",
         higher: bool = False, unit: str = "ms") -> list[Any]:
    """The posenc row (``name``, with its ratio to ``ref`` and verdict) and the reference's row."""
    from .harness import Row

    r = ratio(times[name], times[ref])
    ms = statistics.median(times[name]) * 1e3
    ref_ms = statistics.median(times[ref]) * 1e3
    if higher:  # a throughput: the target is on ref time / posenc time
        target, ok, shown = f">= {limit}x throughput", 1.0 / r >= limit, 1.0 / r
    else:
        target, ok, shown = f"<= {limit}x", r <= limit, r
    status = NO_DEVICE if env.dry else ("PASS" if ok else "FAIL")
    extra = {"ratio_kind": "throughput" if higher else "time", "shown": shown}
    if unit != "ms":
        extra["unit"] = unit
    dev = env.name or "cpu (dry run)"
    return [
        Row("gpu", case, backend, name, ms=ms, reference=ref, ratio=r, target=target, status=status,
            note=f"{dev}{'; ' + note if note else ''}", extra=extra),
        Row("gpu", case, backend, ref, ms=ref_ms, status="INFO" if not env.dry else NO_DEVICE, note=dev),
    ]


@dataclass
class Sizes:
    """The sizes of the rows: the targets' on a device, tiny in a dry run."""

    decode: tuple[int, int, int, int]  # heads, kv heads, head_dim, position
    ids: tuple[int, int]  # position ids (batch, seq)
    rope: tuple[int, int, int, int]  # q (batch, heads, seq, head_dim); k has a quarter of the heads
    table: tuple[int, int]
    steps: int  # timestep batch
    flux: tuple[int, int]  # text tokens, latent side
    model: dict[str, int]
    prompt: int
    new: int
    rounds: int
    inner: int
    acc: int  # positions per range of the accuracy sweep

    @classmethod
    def of(cls, env: Env) -> Sizes:
        if env.dry:
            return cls((4, 2, 16, 40), (2, 16), (1, 4, 8, 16), (64, 16), 8, (2, 2),
                       dict(layers=2, hidden=64, heads=4, kv=2, head_dim=16, ffn=128, vocab=128), 8, 4, 1, 1, 32)
        return cls((32, 8, 128, 4096), (8, 4096), (8, 32, 4096, 128), (2**20, 512), 1024, (512, 64),
                   dict(layers=8, hidden=2048, heads=16, kv=4, head_dim=128, ffn=8192, vocab=32000), 512, 128,
                   15, 50, 4096)


def _inv_freq(torch: Any, d: int, device: Any) -> Any:
    return torch.tensor(1.0 / 10000.0 ** (np.arange(0, d, 2, dtype=np.float64) / d), dtype=torch.float32,
                        device=device)


def _compile(env: Env, fn: Callable, mode: str | None, guard_filter: Callable | None = None) -> Callable:
    torch = env.torch
    options = {} if guard_filter is None else {"guard_filter_fn": guard_filter}
    if env.dry:  # tracing only (fullgraph): inductor's compile is minutes on a small CPU
        return torch.compile(fn, fullgraph=True, dynamic=True, backend="eager", options=options)
    if mode is None:
        return torch.compile(fn, fullgraph=True, dynamic=True, options=options)
    return torch.compile(fn, fullgraph=True, mode=mode)


def rows_decode(env: Env, sz: Sizes) -> list[Any]:
    """The decode step, bf16: eager (host time per step), compiled default and reduce-overhead."""
    import posenc

    from . import peers

    torch, dev = env.torch, env.device
    h, kv, d, p = sz.decode
    g = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(1, h, 1, d, generator=g, device=dev).to(torch.bfloat16)
    k = torch.randn(1, kv, 1, d, generator=g, device=dev).to(torch.bfloat16)
    inv = _inv_freq(torch, d, dev)
    pid = torch.tensor([[p]], device=dev)

    def hf(q: Any, k: Any, pid: Any) -> Any:
        c, s = peers.hf_rotary(inv, pid, q.dtype)
        return peers.hf_apply(q, k, c, s)

    def pe(q: Any, k: Any, pid: Any) -> Any:
        c, s = posenc.rope_cos_sin(pid, d, dtype=q.dtype)
        return posenc.apply_rope((q, k), c, s, heads_axis=1)

    diff = max(float((a.float() - b.float()).abs().max()) for a, b in zip(hf(q, k, pid), pe(q, k, pid)))
    case = f"decode step bf16, q (1,{h},1,{d}) k (1,{kv},1,{d}) at {p}"
    rows = []
    with torch.inference_mode():
        t = time_calls(env, {"posenc": lambda: pe(q, k, pid), "HF rotary + formula": lambda: hf(q, k, pid)},
                       sz.rounds, host=True, inner=sz.inner)
    rows += _row(env, case + ", eager, host time per step", "torch-cuda", "posenc", t, "HF rotary + formula", 1.0,
                 note=f"largest difference from HF {diff:.1e} (bf16)")
    for mode in (None, "reduce-overhead"):
        try:
            rows += _compiled_rows(env, sz, case, mode, hf, pe, q, k)
        except Exception as exc:  # a graph break under fullgraph=True is a result on the device
            if env.dry:
                raise  # in a dry run: a failed part, so that it shows before the device run
            from .harness import Row

            note = f"{type(exc).__name__}: {exc}"[:300]
            rows.append(Row("gpu", f"{case}, compiled {mode or 'default'} (fullgraph)", "torch-cuda", "posenc",
                            status="FAIL", note=note))
    return rows


def _compiled_rows(env: Env, sz: Sizes, case: str, mode: str | None, hf: Callable, pe: Callable, q: Any,
                   k: Any) -> list[Any]:
    from .harness import guard_check_us

    torch = env.torch
    p = sz.decode[3]
    hf_c, pe_c = _compile(env, hf, mode), _compile(env, pe, mode)
    # the default mode also with torch's option that drops the guards on
    # globals (docs/performance.rst), through a function of its own code
    skip = getattr(torch.compiler, "skip_guard_on_globals_unsafe", None) if mode is None else None

    def unguarded(q: Any, k: Any, pid: Any) -> Any:
        return pe(q, k, pid)

    un_c = None if skip is None else _compile(env, unguarded, mode, skip)
    pids = [torch.tensor([[p + i]], device=env.device) for i in range(3)]
    with torch.inference_mode():
        for x in pids:
            hf_c(q, k, x)
            pe_c(q, k, x)
            if un_c is not None:
                un_c(q, k, x)
        contestants = {"posenc": lambda: pe_c(q, k, pids[1]), "HF rotary + formula": lambda: hf_c(q, k, pids[1])}
        if un_c is not None:
            contestants[UNGUARDED] = lambda: un_c(q, k, pids[1])
        t = time_calls(env, contestants, sz.rounds, host=True, inner=sz.inner)
        f_locals = {"q": q, "k": k, "pid": pids[1]}
        guards = [guard_check_us(fn, f_locals) for fn in (pe, hf)]
        guard_un = guard_check_us(unguarded, f_locals) if un_c is not None else None
        # what a compiled step launches (a dry run: the aten operations of the eager backend's graph)
        kernels = [count_launches(env, lambda f=f: f(q, k, pids[1])) for f in (pe_c, hf_c)]
    label = "compiled " + (mode or "default")
    parts = []
    if None not in guards:
        parts.append(f"dynamo's guard check alone {guards[0]:.1f} / {guards[1]:.1f} us (posenc / HF)")
    if None not in kernels:
        parts.append(f"{'aten operations' if env.dry else 'device activities'} per step {kernels[0]} / {kernels[1]}")
    note = "; ".join(parts)
    rows = _row(env, f"{case}, {label} (fullgraph)", "torch-cuda", "posenc", t, "HF rotary + formula", 1.0,
                note=note)
    if un_c is not None:
        from .harness import Row

        r = ratio(t[UNGUARDED], t["HF rotary + formula"])
        extra = "" if guard_un is None else f"; dynamo's guard check alone {guard_un:.1f} us"
        rows.append(Row("gpu", f"{case}, {label} (fullgraph)", "torch-cuda", UNGUARDED,
                        ms=statistics.median(t[UNGUARDED]) * 1e3, reference="HF rotary + formula", ratio=r,
                        status="INFO" if not env.dry else NO_DEVICE,
                        note=f"{env.name or 'cpu (dry run)'}; guard_filter_fn=skip_guard_on_globals_unsafe{extra}"))
    return rows


#: the compiled decode step without guards on globals (torch's guard_filter_fn option)
UNGUARDED = "posenc, globals unguarded"


def rows_ids(env: Env, sz: Sizes) -> list[Any]:
    """rope_cos_sin of position ids (8, 4096), 128, float32 against HF's rotary forward."""
    import posenc

    from . import peers

    torch, dev = env.torch, env.device
    b, n = sz.ids
    d = sz.decode[2]
    pid = torch.arange(n, device=dev)[None] + 7 * torch.arange(b, device=dev)[:, None]
    inv = _inv_freq(torch, d, dev)
    with torch.inference_mode():
        t = time_calls(env, {"posenc": lambda: posenc.rope_cos_sin(pid, d),
                             "HF rotary forward": lambda: peers.hf_rotary(inv, pid, torch.float32)}, sz.rounds)
    return _row(env, f"rope_cos_sin position ids ({b}, {n}), {d}, f32", "torch-cuda", "posenc", t,
                "HF rotary forward", 1.0)


def rows_apply(env: Env, sz: Sizes) -> list[Any]:
    """apply_rope of (8, 32, 4096, 128) in float32 and bfloat16 against a copy; q and k against copying both."""


    torch = env.torch
    g = torch.Generator(device=env.device).manual_seed(1)
    return _apply_rows(env, sz, torch.float32, g) + _apply_rows(env, sz, torch.bfloat16, g)


def _apply_rows(env: Env, sz: Sizes, dt: Any, g: Any) -> list[Any]:
    import posenc

    from . import peers

    torch, dev = env.torch, env.device
    b, h, n, d = sz.rope
    name = "f32" if dt is torch.float32 else "bf16"
    x = torch.randn(b, h, n, d, generator=g, device=dev).to(dt)
    kx = torch.randn(b, max(1, h // 4), n, d, generator=g, device=dev).to(dt)
    cos, sin = posenc.rope_cos_sin(n, d, dtype=dt, xp=torch, device=dev)
    rows = []
    with torch.inference_mode():
        t = time_calls(env, {"posenc.apply_rope": lambda: posenc.apply_rope(x, cos, sin),
                             "copy of x": lambda: x.clone(),
                             "HF formula": lambda: peers.hf_apply(x, x[:, :0], cos[None], sin[None])[0]},
                       sz.rounds)
        alone = kernels_alone(env, {"posenc": lambda: posenc.apply_rope(x, cos, sin), "copy": lambda: x.clone()})
        rows += _row(env, f"apply_rope ({b},{h},{n},{d}) {name}", "torch-cuda", "posenc.apply_rope", t,
                     "copy of x", 1.3,
                     note=f"HF formula {ratio(t['HF formula'], t['copy of x']):.2f}x copy{alone}")
        t = time_calls(env, {"posenc.apply_rope q, k": lambda: posenc.apply_rope((x, kx), cos, sin),
                             "copy of q and k": lambda: (x.clone(), kx.clone())}, sz.rounds)
        alone = kernels_alone(env, {"posenc": lambda: posenc.apply_rope((x, kx), cos, sin),
                                    "copy": lambda: (x.clone(), kx.clone())})
        rows += _row(env, f"apply_rope q ({b},{h},{n},{d}) and k ({b},{kx.shape[1]},{n},{d}) {name}",
                     "torch-cuda", "posenc.apply_rope q, k", t, "copy of q and k", 1.3, note=alone.lstrip("; "))
    return rows


def kernels_alone(env: Env, calls: dict[str, Callable[[], Any]], reps: int = 10) -> str:
    """The device time of each call without its host time: a CUDA graph of
    ``reps`` calls replayed, per call, as a note (``"; kernels alone: posenc
    0.157 ms, copy 0.128 ms"``); empty in a dry run or where capture fails.
    A single call's CUDA-event time also holds the host time before its
    launch, while the GPU waits."""
    if env.dry:
        return ""
    torch = env.torch
    got = []
    try:
        for name, fn in calls.items():
            fn()
            env.sync()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(reps):
                    fn()
            times = []
            for _ in range(7):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                graph.replay()
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b) / reps)
            del graph
            got.append(f"{name} {statistics.median(times):.3g} ms")
    except Exception as exc:  # noqa: BLE001 - a note, not a result
        return f"; kernels alone: not measured ({type(exc).__name__})"
    return "; kernels alone: " + ", ".join(got)


def rows_table(env: Env, sz: Sizes) -> list[Any]:
    """sinusoidal(2**20, 512) float32, cold, against a copy of its bytes."""
    import posenc
    from posenc import _cache

    torch, dev = env.torch, env.device
    n, d = sz.table
    ref = torch.empty((n, d), dtype=torch.float32, device=dev)
    w = torch.tensor(posenc.frequencies(d), dtype=torch.float32, device=dev)

    def naive() -> Any:
        a = torch.arange(n, device=dev, dtype=torch.float32)[:, None] * w
        return torch.stack((a.sin(), a.cos()), dim=-1).reshape(n, d)

    def ours() -> Any:
        return posenc.sinusoidal(n, d, dtype=torch.float32, xp=torch, device=dev)

    t = time_calls(env, {"posenc.sinusoidal": ours, "copy": lambda: ref.clone(), "naive f32 formula": naive},
                   sz.rounds, setup={"posenc.sinusoidal": _cache.clear})
    host = _host_ms(env, ours, sz.rounds, setup=_cache.clear)
    return _row(env, f"sinusoidal({n}, {d}) f32, cold", "torch-cuda", "posenc.sinusoidal", t, "copy", 2.0,
                note=f"naive f32 formula {ratio(t['naive f32 formula'], t['copy']):.2f}x copy; "
                f"host {host:.2f} ms per cold call (to the return, the device idle before it)")


def _host_ms(env: Env, fn: Callable[[], Any], rounds: int, *, setup: Callable[[], Any] | None = None) -> float:
    """Median host milliseconds of ``fn()`` up to its return (launches queued,
    not waited for), the device idle before each call."""
    times = []
    for _ in range(max(rounds, 3)):
        if setup is not None:
            setup()
        env.sync()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        env.sync()
    return statistics.median(times) * 1e3


def rows_diffusion(env: Env, sz: Sizes) -> list[Any]:
    """timestep_embedding (1024,) 320 and Flux's ids against diffusers' formulas."""
    import posenc

    from . import peers

    torch, dev = env.torch, env.device
    try:
        from diffusers.models.embeddings import get_timestep_embedding
        from diffusers.models.transformers.transformer_flux import FluxPosEmbed

        origin = "diffusers"
    except ImportError:
        get_timestep_embedding, FluxPosEmbed, origin = peers.timestep_embedding, None, "benchmarks.peers"
    rows = []
    g = torch.Generator(device=dev).manual_seed(2)
    t = torch.rand(sz.steps, generator=g, device=dev) * 1000.0
    with torch.inference_mode():
        times = time_calls(env, {
            "posenc": lambda: posenc.timestep_embedding(t, 320, flip_sin_to_cos=True, downscale_freq_shift=0.0),
            "diffusers' formula": lambda: get_timestep_embedding(t, 320, True, 0.0),
        }, sz.rounds)
    rows += _row(env, f"timestep_embedding ({sz.steps},) 320", "torch-cuda", "posenc", times, "diffusers' formula",
                 1.0, note=f"peer from {origin}")
    text, side = sz.flux
    axes = [16, 56, 56]
    ids = torch.as_tensor(posenc.grid_ids((1, side, side), prefix_tokens=text).astype(np.float32), device=dev)
    flux = FluxPosEmbed(theta=10000, axes_dim=axes) if FluxPosEmbed is not None else None
    peer = (lambda: flux(ids)) if flux is not None else (lambda: peers.flux_rope(ids, axes))
    with torch.inference_mode():
        times = time_calls(env, {"posenc": lambda: posenc.rope_axes_cos_sin(ids, axes), "FluxPosEmbed's formula": peer},
                           sz.rounds)
    rows += _row(env, f"rope_axes_cos_sin Flux ids ({ids.shape[0]}, 3), axes {tuple(axes)}", "torch-cuda", "posenc",
                 times, "FluxPosEmbed's formula", 1.0, note=f"peer from {origin}")
    grid, freqs = _learned(env, sz)
    with torch.inference_mode():
        times = time_calls(env, {"posenc": lambda: posenc.rope_axes_cos_sin(grid, freqs=freqs),
                                 "RoPE-Mixed's formula": lambda: peers.rope_mixed(grid, freqs)}, sz.rounds)
    rows += _row(env, f"rope_axes_cos_sin learned freqs {tuple(freqs.shape)}, ids ({grid.shape[0]}, 2)", "torch-cuda",
                 "posenc", times, "RoPE-Mixed's formula", 1.0, note="peer from benchmarks.peers")
    return rows


def _learned(env: Env, sz: Sizes) -> tuple[Any, Any]:
    """RoPE-Mixed's inputs: the ids of a square patch grid (the Flux side)
    and learned frequencies of 12 heads, 32 planes, 2 axes."""
    torch, dev = env.torch, env.device
    side = sz.flux[1]
    grid = torch.stack(torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij"), -1).reshape(-1, 2)
    g = torch.Generator(device=dev).manual_seed(4)
    return grid.float().to(dev), torch.randn(12, 32, 2, generator=g, device=dev)


@contextlib.contextmanager
def cupy_stand_in(env: Env):
    """In a dry run NumPy stands in for CuPy: NumPy arrays take CuPy's route
    (posenc's Triton kernels through DLPack, ``posenc._kernels.DLPACK``) where
    posenc has it, inside ``as_device()`` (interpreted); posenc's caches are
    cleared on entry and exit (plans keep the route they were made with)."""
    from posenc import _cache, _kernels
    from posenc._compat import Backend

    routes = getattr(_kernels, "DLPACK", None)
    if env.cupy is not None or routes is None:
        yield
        return
    _cache.clear()
    _kernels.DLPACK = routes | {Backend.NUMPY}
    try:
        yield
    finally:
        _kernels.DLPACK = routes
        _cache.clear()


def cupy_route(call: Callable[[], Any], setup: Callable[[], Any] | None = None) -> str:
    """Which route a CuPy call takes: posenc's Triton kernels (through DLPack),
    with their launches, or the portable path (CuPy's own operations, not
    counted here)."""
    try:
        from posenc._kernels.probes import count_launches
    except ImportError:  # a posenc without the probes
        return "route not probed"
    if setup is not None:
        setup()
    with count_launches() as counts:
        call()
    kernels = {k.removeprefix("triton."): v for k, v in counts.items() if k.startswith("triton.")}
    if not kernels:
        return "route: portable path"
    torch_ops = counts.total() - sum(kernels.values())
    shown = ", ".join(f"{k} x{v}" for k, v in sorted(kernels.items()))
    return f"route: Triton through DLPack ({shown}" + (f"; {torch_ops} torch ops)" if torch_ops else ")")


def rows_cupy(env: Env, sz: Sizes) -> list[Any]:
    """CuPy: sinusoidal cold against the naive CuPy formula; apply_rope f32 against the formula.  Each row's
    note says which route posenc took (:func:`cupy_route`)."""
    with cupy_stand_in(env):
        return _rows_cupy(env, sz)


def _rows_cupy(env: Env, sz: Sizes) -> list[Any]:
    import posenc
    from posenc import _cache

    cp = env.cupy if env.cupy is not None else np
    backend = "cupy" if env.cupy is not None else "numpy (stands in for cupy)"
    events = "cupy" if env.cupy is not None else "torch"
    n, d = sz.table
    w = cp.asarray(posenc.frequencies(d), dtype=cp.float32)

    def naive() -> Any:
        a = cp.arange(n, dtype=cp.float32)[:, None] * w
        return cp.stack((cp.sin(a), cp.cos(a)), axis=-1).reshape(n, d)

    rows = []

    def table() -> Any:
        return posenc.sinusoidal(n, d, dtype="float32", xp=cp)

    t = time_calls(env, {"posenc.sinusoidal": table, "naive CuPy formula": naive}, sz.rounds,
                   setup={"posenc.sinusoidal": _cache.clear}, events=events)
    rows += _row(env, f"CuPy sinusoidal({n}, {d}) f32, cold", backend, "posenc.sinusoidal", t, "naive CuPy formula",
                 1.0, note=cupy_route(table, _cache.clear))
    b, h, s, hd = sz.rope
    x = cp.asarray(np.random.default_rng(3).standard_normal((b, h, s, hd), dtype=np.float32))
    cos, sin = posenc.rope_cos_sin(s, hd, dtype="float32", xp=cp)

    def formula() -> Any:
        rot = cp.concatenate((-x[..., hd // 2 :], x[..., : hd // 2]), axis=-1)
        return x * cos + rot * sin

    def rotated() -> Any:
        return posenc.apply_rope(x, cos, sin)

    t = time_calls(env, {"posenc.apply_rope": rotated, "HF formula": formula}, sz.rounds, events=events)
    rows += _row(env, f"CuPy apply_rope ({b},{h},{s},{hd}) f32", backend, "posenc.apply_rope", t, "HF formula", 1.0,
                 note=cupy_route(rotated))
    return rows


def rows_jax(env: Env, sz: Sizes) -> list[Any]:
    """JAX: jit(sinusoidal)(arange(2**20), 512) against the naive jitted formula."""
    from .harness import Row

    if env.jax is None:
        return [Row("gpu", "JAX jit sinusoidal", "jax", "-", status="SKIP", note="JAX is not installed")]
    import jax
    import jax.numpy as jnp

    import posenc

    n, d = sz.table
    w = jnp.asarray(posenc.frequencies(d), dtype=jnp.float32)
    p = jnp.arange(n)
    ours = jax.jit(lambda p: posenc.sinusoidal(p, d))

    @jax.jit
    def naive(p: Any) -> Any:
        a = p.astype(jnp.float32)[:, None] * w
        return jnp.stack((jnp.sin(a), jnp.cos(a)), axis=-1).reshape(p.shape[0], d)

    t = time_calls(env, {"posenc (jit)": lambda: ours(p), "naive formula (jit)": lambda: naive(p)}, sz.rounds,
                   events="host", sync=lambda r: r.block_until_ready())
    backend = f"jax ({jax.default_backend()})"
    return _row(env, f"JAX jit sinusoidal(arange({n}), {d})", backend, "posenc (jit)", t, "naive formula (jit)", 1.3)


@contextlib.contextmanager
def posenc_rope_in(model: Any, modeling: Any):
    """The model's RoPE replaced by posenc's: its rotary module's forward by
    ``rope_cos_sin`` (the model's config read by ``from_hf``), and the
    module's ``apply_rotary_pos_emb`` by ``apply_rope`` of ``(q, k)`` (one launch for both)."""
    import posenc
    from posenc.scaling import from_hf

    kw = from_hf(model.config)
    rot = model.model.rotary_emb
    old = modeling.apply_rotary_pos_emb
    calls = {"rope_cos_sin": 0, "apply_rope": 0}  # proof that the model ran posenc's functions

    def forward(x: Any, position_ids: Any) -> Any:
        calls["rope_cos_sin"] += 1
        return posenc.rope_cos_sin(position_ids, **kw, dtype=x.dtype)

    def apply(q: Any, k: Any, cos: Any, sin: Any, unsqueeze_dim: int = 1) -> Any:
        calls["apply_rope"] += 2
        return posenc.apply_rope((q, k), cos, sin, heads_axis=unsqueeze_dim)

    rot.forward = forward
    modeling.apply_rotary_pos_emb = apply
    try:
        yield calls
    finally:
        del rot.forward
        modeling.apply_rotary_pos_emb = old


def llama(env: Env, sz: Sizes) -> tuple[Any, Any]:
    """A Llama-shaped model with random weights (Llama 3 scaling, bf16) on the device, and its module."""
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.models.llama import modeling_llama

    m = sz.model
    cfg = LlamaConfig(
        vocab_size=m["vocab"], hidden_size=m["hidden"], intermediate_size=m["ffn"], num_hidden_layers=m["layers"],
        num_attention_heads=m["heads"], num_key_value_heads=m["kv"], head_dim=m["head_dim"],
        max_position_embeddings=131072,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    )
    torch = env.torch
    torch.manual_seed(0)
    with env.device:
        model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    return model, modeling_llama


def _table_errors(model: Any, n: int, device: Any) -> str:
    """How far the model's own cos table (its rotary module as the model's dtype left it: ``.to(bfloat16)``
    casts the ``inv_freq`` buffer too) and posenc's float32 one are from the float64 table of the config, over
    the ``n`` positions of a generation: why the two generations part."""
    import torch

    import posenc
    from posenc.scaling import from_hf

    kw = from_hf(model.config)
    pos = torch.arange(n, device=device)[None]
    own, _ = model.model.rotary_emb(torch.zeros(1, dtype=torch.float32, device=device), pos)
    ours, _ = posenc.rope_cos_sin(pos, **kw, dtype=torch.float32)
    exact, _ = posenc.rope_cos_sin(pos, **kw, dtype=torch.float64)
    e_own = float((own.double() - exact).abs().max())
    e_ours = float((ours.double() - exact).abs().max())
    return (f"cos tables against float64: its own (inv_freq {model.model.rotary_emb.inv_freq.dtype}) "
            f"{e_own:.2g}, posenc's float32 {e_ours:.2g}")


def rows_model(env: Env, sz: Sizes) -> list[Any]:
    """The Llama-shaped model's eager generate: its own RoPE against posenc's patched in (tokens/s)."""
    torch = env.torch
    model, modeling = llama(env, sz)
    ids = torch.randint(0, sz.model["vocab"], (1, sz.prompt), device=env.device,
                        generator=torch.Generator(device=env.device).manual_seed(4))
    kw = dict(max_new_tokens=sz.new, min_new_tokens=sz.new, do_sample=False, eos_token_id=None, pad_token_id=0)

    def own() -> Any:
        return model.generate(ids, **kw)

    def ours() -> Any:
        with posenc_rope_in(model, modeling):
            return model.generate(ids, **kw)

    with torch.inference_mode():
        a = own()
        b = ours()
        logits = model(ids).logits[0, -1].float()
        with posenc_rope_in(model, modeling) as calls:
            logits2 = model(ids).logits[0, -1].float()
        if calls["rope_cos_sin"] != 1 or calls["apply_rope"] != 2 * sz.model["layers"]:
            msg = f"posenc's RoPE was not patched into every layer: {calls}"
            raise RuntimeError(msg)
        same = int((a[0, sz.prompt:] == b[0, sz.prompt:]).sum())
        diff = float((logits - logits2).abs().max())
        tables = _table_errors(model, sz.prompt + sz.new, env.device)
        t = time_calls(env, {"ours": ours, "own": own}, max(3, sz.rounds // 5), host=True)
    m = sz.model
    case = (f"Llama-shaped model ({m['layers']} layers, hidden {m['hidden']}, {m['heads']} heads, {m['kv']} KV, "
            f"head_dim {m['head_dim']}, Llama 3 scaling, bf16), generate {sz.new} after {sz.prompt}")
    ours_name, own_name = "posenc's RoPE patched in", "its own RoPE"
    t = {ours_name: t.pop("ours"), own_name: t.pop("own")}
    tps = {k: sz.new / statistics.median(v) for k, v in t.items()}
    note = (f"tokens/s {tps[ours_name]:.1f} vs {tps[own_name]:.1f}; {same}/{sz.new} tokens equal; "
            f"last-token logits differ by {diff:.2g}; patched into {sz.model['layers']} layers; {tables}")
    return _row(env, case, "torch-cuda", ours_name, t, own_name, 1.0, note=note, higher=True)


ROWS: dict[str, Callable[[Env, Sizes], list[Any]]] = {
    "decode": rows_decode,
    "position ids": rows_ids,
    "apply_rope": rows_apply,
    "table": rows_table,
    "diffusion": rows_diffusion,
    "cupy": rows_cupy,
    "jax": rows_jax,
    "model": rows_model,
}


# ---------------------------------------------------------------- accuracy
def accuracy(env: Env, sz: Sizes) -> list[dict[str, Any]]:
    """Largest error of float32 tables per backend and range of positions, against the exact values."""
    import posenc

    from .accuracy import (
        FLOAT_RANGES,
        INT_RANGES,
        _interleaved,
        _label,
        _rope_columns,
        exact_angle_sincos,
        float_positions,
        int_positions,
    )

    torch, dev = env.torch, env.device
    dim = 128
    paths: dict[str, tuple[str, Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], bool]] = {}
    tname = "torch-cuda" if not env.dry else "torch-cpu (dry run)"

    def t_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _interleaved(posenc.sinusoidal(torch.as_tensor(p, device=dev), dim, dtype=torch.float32).cpu().numpy())

    def t_rope(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c, s = posenc.rope_cos_sin(torch.as_tensor(p, device=dev)[None], dim, dtype=torch.float32)
        return _rope_columns(c[0].cpu().numpy(), s[0].cpu().numpy(), "half")

    paths["sinusoidal"] = (tname, t_table, False)
    paths["rope_cos_sin, half"] = (tname, t_rope, True)
    cp = env.cupy if env.cupy is not None else np
    cname = "cupy" if env.cupy is not None else "numpy (stands in for cupy)"

    def c_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with cupy_stand_in(env):  # (a dry run: NumPy takes CuPy's route)
            got = posenc.sinusoidal(cp.asarray(p), dim, dtype="float32")
        return _interleaved(got.get() if hasattr(got, "get") else np.asarray(got))

    paths["sinusoidal "] = (cname, c_table, False)
    if env.jax is not None:
        import jax
        import jax.numpy as jnp

        def j_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return _interleaved(np.asarray(jax.jit(lambda q: posenc.sinusoidal(q, dim))(jnp.asarray(p))))

        paths["sinusoidal (jit)"] = (f"jax ({jax.default_backend()})", j_table, False)
    rng = np.random.default_rng(0)
    out = []
    for name, (backend, run, rope) in paths.items():
        w = posenc.rope_frequencies(dim) if rope else posenc.frequencies(dim)
        cases = [(_label("int", lo, hi), int_positions(rng, lo, hi, sz.acc)) for lo, hi in INT_RANGES]
        cases += [(_label("float", lo, hi), float_positions(rng, lo, hi, sz.acc)) for lo, hi in FLOAT_RANGES]
        for label, p in cases:
            if backend.startswith("jax") and p.dtype == np.int64:
                p = p.astype(np.int32)  # JAX without x64
            try:
                s, c = run(p)
                ts, tc = exact_angle_sincos(p.astype(np.float64), w)
                err = float(max(np.abs(s - ts).max(), np.abs(c - tc).max()))
                status = NO_DEVICE if env.dry else ("PASS" if err <= BOUND else "FAIL")
            except Exception as exc:  # noqa: BLE001 - reported
                err, status = None, f"ERROR {type(exc).__name__}: {exc}"[:200]
            out.append({"backend": backend, "path": name.strip(), "positions": label, "error": err, "bound": BOUND,
                        "status": status})
    return out


# ---------------------------------------------------------------- launches and syncs
def launches(env: Env, sz: Sizes) -> list[dict[str, Any]]:
    """Per call: device activities (kernels and copies) of posenc and of the
    peer's formula, and the syncs posenc's call makes.  A dry run counts the
    aten operations the profiler sees on the CPU (top level) and no syncs."""
    import posenc

    from . import peers

    torch, dev = env.torch, env.device
    h, kv, d, p = sz.decode
    g = torch.Generator(device=dev).manual_seed(5)
    q = torch.randn(1, h, 1, d, generator=g, device=dev).to(torch.bfloat16)
    k = torch.randn(1, kv, 1, d, generator=g, device=dev).to(torch.bfloat16)
    pid = torch.tensor([[p]], device=dev)
    inv = _inv_freq(torch, d, dev)
    b, n = sz.ids
    ids = torch.arange(n, device=dev)[None] + 7 * torch.arange(b, device=dev)[:, None]
    t = torch.rand(sz.steps, generator=g, device=dev) * 1000.0
    text, side = sz.flux
    axes = [16, 56, 56]
    flux = torch.as_tensor(posenc.grid_ids((1, side, side), prefix_tokens=text).astype(np.float32), device=dev)
    grid, freqs = _learned(env, sz)
    bb, hh, ss, dd = sz.rope
    x = torch.randn(bb, hh, ss, dd, generator=g, device=dev).to(torch.bfloat16)
    cos, sin = posenc.rope_cos_sin(ss, dd, dtype=torch.bfloat16, xp=torch, device=dev)
    rnd = torch.randint(0, 2**20, (sz.table[0],), generator=g, device=dev)
    td = sz.table[1]
    wt = torch.tensor(posenc.frequencies(td), dtype=torch.float32, device=dev)

    def naive_rows() -> Any:
        a = rnd.float()[:, None] * wt
        return torch.stack((a.sin(), a.cos()), dim=-1).reshape(-1, td)

    calls = {
        "decode step": (
            lambda: posenc.apply_rope((q, k), *posenc.rope_cos_sin(pid, d, dtype=q.dtype), heads_axis=1),
            lambda: peers.hf_apply(q, k, *peers.hf_rotary(inv, pid, q.dtype)),
        ),
        "rope_cos_sin(position_ids)": (lambda: posenc.rope_cos_sin(ids, d),
                                       lambda: peers.hf_rotary(inv, ids, torch.float32)),
        "timestep_embedding": (
            lambda: posenc.timestep_embedding(t, 320, flip_sin_to_cos=True, downscale_freq_shift=0.0),
            lambda: peers.timestep_embedding(t, 320, True, 0.0),
        ),
        "Flux ids": (lambda: posenc.rope_axes_cos_sin(flux, axes), lambda: peers.flux_rope(flux, axes)),
        "learned frequency matrix": (lambda: posenc.rope_axes_cos_sin(grid, freqs=freqs),
                                     lambda: peers.rope_mixed(grid, freqs)),
        "apply_rope bf16": (lambda: posenc.apply_rope(x, cos, sin),
                            lambda: peers.hf_apply(x, x[:, :0], cos[None], sin[None])[0]),
        "sinusoidal(positions)": (lambda: posenc.sinusoidal(rnd, td), naive_rows),
    }
    out = []
    for name, (ours, peer) in calls.items():
        with torch.inference_mode():
            ours_names: list[str] = []
            row = {"call": name, "posenc": count_launches(env, ours, ours_names), "peer": count_launches(env, peer),
                   "target": LAUNCH_TARGETS[name], "syncs": count_syncs(env, ours),
                   "counted": "aten operations on the CPU (dry run)" if env.dry else "device activities",
                   "posenc_activities": ours_names}
        if env.dry:
            row["status"] = NO_DEVICE
        else:
            ok = row["posenc"] is not None and row["posenc"] <= row["target"] and row["syncs"] == 0
            row["status"] = "PASS" if ok else "FAIL"
        out.append(row)
    return out


def count_launches(env: Env, fn: Callable[[], Any], names: list[str] | None = None) -> int | None:
    """Device activities of one warm call (a dry run: the outermost aten operations); their names are
    appended to ``names`` where given, so that a count over target says what to remove."""
    torch = env.torch
    from torch.profiler import ProfilerActivity, profile

    fn()  # warm: caches and plans are built outside the count
    env.sync()
    acts = [ProfilerActivity.CPU] if env.dry else [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=acts) as prof:
        fn()
        env.sync()
    events = prof.events()
    if env.dry:
        seen = [e.name for e in events if e.name.startswith("aten::") and not _under_aten(e)]
    else:
        seen = [e.name for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    if names is not None:
        names += [n[:120] for n in seen]
    return len(seen)


def _under_aten(event: Any) -> bool:
    """Whether a profiler event runs inside an aten operation (a dry run counts the outermost ones: those of
    an eager call, and those of a compiled graph's region)."""
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith("aten::"):
            return True
        parent = parent.cpu_parent
    return False


def count_syncs(env: Env, fn: Callable[[], Any]) -> int | None:
    if env.dry:
        return None
    torch = env.torch
    fn()
    torch.cuda.synchronize()
    old = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(old)
    # (only torch's reports of a sync: the notice that the mode is a prototype, given the first time it is set,
    # speaks of "synchronizing operations" too, and was once counted as a sync of the first call)
    return sum(1 for w in seen if str(w.message).startswith("called a synchronizing"))


# ---------------------------------------------------------------- the test lanes
LANES = "cupy,torch-cuda,jax,jax-jit"
#: the dry run's lanes: one test, whose GPU cases skip without a device
DRY_TESTS = ("tests/posenc/test_offsets.py::test_positions_beyond_the_exact_range",)
TESTS = ("tests/posenc", "tests/hardening")


def lanes(env: Env, timeout: float, out: Path) -> dict[str, Any]:
    """pytest over the GPU lanes in a subprocess, cut at ``timeout`` seconds: the summary line, or the
    outcomes counted from the progress dots of a run that was cut."""
    tests = DRY_TESTS if env.dry else TESTS
    # pytest-benchmark, where installed, turns its "disabled under xdist" notice into an error under the
    # suite's filterwarnings = error: it is not used here
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark", "-rf", "--no-header",
           "--tb=line", *tests]
    if not env.dry and importlib.util.find_spec("xdist") is not None:
        cmd[3:3] = ["-n", str(min(8, max(2, (os.cpu_count() or 4) // 2)))]
    # the tests run `python -m posenc_viz` in subprocesses: the checkout importable there too where posenc is not
    # installed (a GPU machine runs the working tree)
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    envvars = dict(os.environ, POSENC_BACKENDS=LANES, XLA_PYTHON_CLIENT_PREALLOCATE="false", PYTHONPATH=path)
    log = out / "gpu_lanes.log"
    t0 = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=envvars)
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # an interrupt first: pytest then reports the failures so far and their summary
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            rc = None
    text = log.read_text(errors="replace")
    res: dict[str, Any] = {"command": f"POSENC_BACKENDS={LANES} " + " ".join(["python", *cmd[1:]]),
                           "seconds": round(time.perf_counter() - t0, 1), "returncode": rc, "log": str(log)}
    res.update(summarize(text, cut=rc is None))
    res["failed"] = re.findall(r"^FAILED (\S+)", text, re.M)[:100]
    res["causes"] = causes(text)
    return res


def causes(text: str, top: int = 25) -> list[tuple[int, str]]:
    """The failures' one-line tracebacks (``--tb=line``: ``path:line: error``)
    counted by error, the most frequent first: a run with hundreds of
    failures usually has a handful of causes."""
    lines = re.findall(r"^\S+:\d+: (\w[\w.]*(?:Error|Exception|Warning|Exit)\b.*)$", text, re.M)
    counts: dict[str, int] = {}
    for line in lines:
        k = re.sub(r"0x[0-9a-f]+", "0x...", line)[:160]
        counts[k] = counts.get(k, 0) + 1
    return sorted(((v, k) for k, v in counts.items()), reverse=True)[:top]


def summarize(text: str, *, cut: bool = False) -> dict[str, Any]:
    """pytest's final counts (``1488 passed, 139 skipped, 33 failed``) or, for a run cut short, the
    outcomes of its progress lines."""
    counts: dict[str, int] = {}
    summary = None
    for line in reversed(text.splitlines()):
        if re.search(r"\b\d+ (passed|failed|skipped|errors?|deselected|xfailed|xpassed)\b", line) and " in " in line:
            summary = line.strip("= ").strip()
            for num, what in re.findall(r"(\d+) (\w+)", summary.split(" in ")[0]):
                counts[what] = int(num)
            break
    if summary is None:
        marks = {".": "passed", "F": "failed", "s": "skipped", "E": "errors", "x": "xfailed", "X": "xpassed"}
        for line in text.splitlines():
            m = re.fullmatch(r"([.FsExX]+)\s*(\[\s*\d+%\])?", line.strip())
            if m:
                for ch in m.group(1):
                    counts[marks[ch]] = counts.get(marks[ch], 0) + 1
        summary = ", ".join(f"{v} {k}" for k, v in counts.items()) or "no outcome"
        if cut:
            summary = f"cut at the time cap: {summary} so far"
    return {"summary": summary, "counts": counts}


# ---------------------------------------------------------------- the command
def _section(title: str) -> None:
    print(f"\n== {title}", flush=True)


def run_check(
    argv: list[str], out: Path, lanes_timeout: float, run_lanes: bool = True, rows: tuple[str, ...] | None = None
) -> int:
    """The check (see the module docstring); ``rows``: the names of :data:`ROWS` to run (default all).
    Exit status 1 where a part could not run (a bug of the check or a missing package), else 0."""
    from .harness import header, text_table

    t_all = time.perf_counter()
    rows_wanted = rows
    out.mkdir(parents=True, exist_ok=True)
    compat = ensure_array_api_compat()
    env = environment()
    sz = Sizes.of(env)
    # (the output folder is a path of the machine the check ran on: not part of the record)
    shown = [a if i == 0 or argv[i - 1] != "--out" else "DIR" for i, a in enumerate(argv)]
    info = header([a.split("=", 1)[0] + "=DIR" if a.startswith("--out=") else a for a in shown])
    if env.dry:
        print("posenc device check: DRY RUN (no CUDA device): every row runs once at a tiny size on CPU tensors; "
              "no number below is a measurement")
    else:
        print(f"posenc device check on {env.name}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()))
    for line in [compat, *env.notes]:
        print(line)
    report: dict[str, Any] = {"device": env.name, "dry_run": env.dry, "header": info, "errors": {}}
    path = out / "gpu_check.json"
    rows: list[Any] = []
    acc: list[dict[str, Any]] = []
    la: list[dict[str, Any]] = []

    def save() -> None:
        """Write the report as it stands: a run cut at its time limit keeps the parts it finished."""
        report["rows"] = [r.as_dict() for r in rows]
        report["seconds"] = round(time.perf_counter() - t_all, 1)
        verdicts = [r.status for r in rows] + [a["status"] for a in acc] + [r["status"] for r in la]
        report["counts"] = {s: verdicts.count(s) for s in ("PASS", "FAIL", NO_DEVICE)}
        path.write_text(json.dumps(report, indent=1, default=str) + "\n")

    def part(name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            got = fn()
        except Exception as exc:  # noqa: BLE001 - one part's failure must not hide the others
            traceback.print_exc()
            report["errors"][name] = f"{type(exc).__name__}: {exc}"[:500]
            got = None
        print(f"({name}: {time.perf_counter() - t0:.1f} s)", flush=True)
        return got

    # the lanes run last: the rows are the costlier loss where a run is cut

    with device_decisions(env) as mode:
        if mode:
            print(f"(CPU tensors take a CUDA tensor's decisions: posenc._kernels.{mode})")
        report["as_device"] = mode
        _section(f"1. Device accuracy: float32 tables against the exact values (bound {BOUND:.1e})")
        acc += part("accuracy", lambda: accuracy(env, sz)) or []
        for a in acc:
            err = "-" if a["error"] is None else f"{a['error']:.2e}"
            print(f"{a['backend']:<28} {a['path']:<20} {a['positions']:<26} {err:>9}  {a['status']}")
        report["accuracy"] = acc
        save()
        _section("2. The device targets, side by side")
        for name, fn in ROWS.items():
            if rows_wanted is not None and name not in rows_wanted:
                continue
            got = part(name, lambda fn=fn: fn(env, sz))
            if got is not None:
                rows += got
                print(text_table(got), flush=True)
            save()
        _section("3. Launches and syncs per call (posenc / peer)")
        la += part("launches", lambda: launches(env, sz)) or []
        for r in la:
            syncs = "-" if r["syncs"] is None else r["syncs"]
            print(f"{r['call']:<28} {r['posenc']!s:>4} / {r['peer']!s:<4} target <= {r['target']:<3} "
                  f"syncs {syncs}  {r['status']}")
        report["launches"] = la
        save()
    _section("4. GPU test lanes" + (" (dry run: one test, its GPU cases skip)" if env.dry else ""))
    if run_lanes:
        res = part("lanes", lambda: lanes(env, lanes_timeout, out))
        if res is not None:
            print(f"{res['summary']}  [{res['seconds']} s, exit {res['returncode']}]")
            for n, cause in res["causes"]:
                print(f"  {n:>4} x {cause}")
            for name in res["failed"][:40]:
                print(f"  FAILED {name}")
        report["lanes"] = res
    else:
        print("not run (--no-lanes)")
        report["lanes"] = None
    save()
    c = report["counts"]
    tail = f"{c['PASS']} PASS, {c['FAIL']} FAIL"
    if env.dry:
        tail = f"DRY RUN: {c[NO_DEVICE]} verdicts marked '{NO_DEVICE}'"
    print(f"\n{tail}; {len(report['errors'])} parts failed to run; {report['seconds']} s; wrote {path}")
    return 1 if report["errors"] else 0


def merge(check_json: Path, results_json: Path) -> dict[str, Any]:
    """The results payload with its GPU section replaced by the device check's rows (device named)."""
    from .harness import Row, verdict_counts

    check = json.loads(check_json.read_text())
    if check.get("dry_run"):
        msg = f"{check_json} is a dry run (no device): nothing to merge"
        raise SystemExit(msg)
    payload = json.loads(results_json.read_text())
    rows = [Row(**r) for r in check["rows"]]
    for a in check.get("accuracy", []):
        # (no "|p|" in the report: a table cell's pipes would need escapes that not every reader takes)
        rows.append(Row("gpu", f"accuracy {a['path']}, {a['positions'].replace('|p|', 'magnitude')}", a["backend"],
                        "posenc", error=a["error"],
                        target=f"err <= {a['bound']:.1e}", status=a["status"]))
    for la in check.get("launches", []):
        rows.append(Row("gpu", f"launches per call: {la['call']}", "torch-cuda", "posenc", status=la["status"],
                        target=f"<= {la['target']} launches, 0 syncs",
                        note=f"{la['posenc']} launches (peer {la['peer']}), {la['syncs']} syncs"))
    payload["sections"]["gpu"] = [r.as_dict() for r in rows]
    payload["header"]["gpu_device"] = check["device"]
    payload["header"]["gpu_versions"] = check["header"]["versions"]
    payload["header"]["gpu_date"] = check["header"]["date"]
    payload["header"]["gpu_commit"] = check["header"].get("commit")
    payload["counts"] = verdict_counts(payload["sections"])
    return payload
