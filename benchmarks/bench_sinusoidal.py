"""Section 1: float32 sinusoidal tables against the seeds' code and peers."""

from __future__ import annotations

import numpy as np

import posenc
from posenc import _cache

from . import seeds
from .harness import Config, Row, interleaved, median_ms, paired_ratio, torch_thread_settings, torch_threads, verdict

SIZES = ((4096, 512), (65536, 128), (2**20, 64))
QUICK_SIZES = ((1000, 32),)
MAX_ERROR = 2.5e-7


def truth_error(table: np.ndarray, step: int = 2**16) -> float:
    """Max |table - float64 truth| (interleaved layout, w_i = 10000**(-2i/d)).

    The float64 truth ``sin(p * w)`` itself is within ~p * 1e-16 (1e-10 at
    2**20) of the exact value: far below the errors measured here.
    """
    n, d = table.shape
    w = 10000.0 ** (-2.0 * np.arange(d // 2) / d)
    err = 0.0
    for lo in range(0, n, step):
        a = np.arange(lo, min(n, lo + step), dtype=np.float64)[:, None] * w
        t = np.asarray(table[lo : lo + step], dtype=np.float64)
        err = max(err, float(np.abs(t[:, 0::2] - np.sin(a)).max()), float(np.abs(t[:, 1::2] - np.cos(a)).max()))
    return err


def _posenc_numpy(n: int, d: int):
    return lambda: posenc.sinusoidal(n, d, dtype=np.float32)


def _posenc_torch(n: int, d: int):
    import torch

    return lambda: posenc.sinusoidal(n, d, dtype=torch.float32, xp=torch)


def _peer_positional_encodings(n: int, d: int):
    """``positional-encodings``' PositionalEncoding1D, a fresh module per call
    (it caches its last table); the input only gives the shape."""
    import torch
    from positional_encodings.torch_encodings import PositionalEncoding1D

    x = torch.empty(1, n, d)
    return lambda: PositionalEncoding1D(d)(x)[0]


#: a cold torch table of an int n against the seeds' code (0.61x before the
#: second hardening pass)
COLD_TARGET = 0.7


def _rows(section: str, case: str, backend: str, contestants, ref_name: str, rounds: int, errors, targets) -> list[Row]:
    setup = {"posenc": _cache.clear}  # posenc cold: its caches emptied before each call (untimed)
    times = interleaved(contestants, rounds, setup=setup)
    rows = []
    for name, ts in times.items():
        row = Row(section, case, backend, name, ms=median_ms(ts), error=errors.get(name))
        if name != ref_name:
            row.reference = ref_name
            row.ratio = paired_ratio(ts, times[ref_name])
        rows.append(row)
    for name, ref, target in targets:
        ratio = paired_ratio(times[name], times[ref])
        err = errors.get(name)
        row = Row(section, case, backend, f"{name} vs {ref}", ratio=ratio, reference=ref, error=err)
        if target is None:  # a peer: reported, no target
            row.status = "INFO"
        else:
            row.target = f"<= {target:.1f}x, err <= {MAX_ERROR:.1e}"
            row.status = verdict(ratio <= target and err is not None and err <= MAX_ERROR)
        rows.append(row)
    return rows


#: JAX's jitted table of integer positions against the naive jitted formula
#: (float32, no x64: the fixed-point path; 2**20 rows is the device check's
#: size, too slow for this CPU section, where 2**16 rows take about 0.4 s)
JAX_TARGET = 1.3
JAX_SIZES = ((2**16, 512),)
JAX_QUICK_SIZES = ((4096, 64),)


def _jax_rows(cfg: Config) -> list[Row]:
    """``jax.jit(sinusoidal)(arange(n), d)`` against the naive jitted
    formula (``sin``/``cos`` of the float32 angle, stacked), warm."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:  # pragma: no cover
        return [Row("sinusoidal", "jax jit", "jax-cpu", "-", status="SKIP", note="JAX not installed")]
    if jax.config.jax_enable_x64:  # pragma: no cover
        return [Row("sinusoidal", "jax jit", "jax-cpu", "-", status="SKIP", note="JAX runs with x64")]
    rows: list[Row] = []
    for n, d in JAX_QUICK_SIZES if cfg.quick else JAX_SIZES:
        p = jnp.arange(n)
        w = jnp.asarray(posenc.frequencies(d), dtype=jnp.float32)
        ours = jax.jit(lambda p, d=d: posenc.sinusoidal(p, d))

        @jax.jit
        def naive(p, w=w, d=d):
            a = p.astype(jnp.float32)[:, None] * w
            return jnp.stack((jnp.sin(a), jnp.cos(a)), axis=-1).reshape(p.shape[0], d)

        contestants = {
            "posenc jit": lambda f=ours, p=p: f(p).block_until_ready(),
            "naive jit": lambda f=naive, p=p: f(p).block_until_ready(),
        }
        errors = {name: truth_error(np.asarray(f())) for name, f in contestants.items()}
        rounds = max(3 if cfg.quick else 5, cfg.rounds // 3)
        backend = f"jax-{jax.default_backend()}"
        rows += _rows("sinusoidal", f"jit arange({n})x{d}", backend, contestants, "naive jit", rounds, errors,
                      [("posenc jit", "naive jit", JAX_TARGET)])
    return rows


def run(cfg: Config) -> list[Row]:
    sizes = QUICK_SIZES if cfg.quick else SIZES
    rows: list[Row] = []
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    try:
        import positional_encodings.torch_encodings  # noqa: F401

        have_pe = torch is not None
    except ImportError:
        have_pe = False
    for n, d in sizes:
        case = f"{n}x{d}"
        # the largest tables allocate 256 MiB per call: first touches of fresh memory
        # sometimes wait for the kernel to compact huge pages, so keep >= 5 rounds
        rounds = max(3 if cfg.quick else 5, cfg.rounds // (3 if n * d >= 2**26 else 1))
        # ---------------------------------------------------------- NumPy
        contestants = {
            "posenc": _posenc_numpy(n, d),
            "seed001 f32": lambda n=n, d=d: seeds.seed001_numpy_float32(n, d),
            "seed001 f64": lambda n=n, d=d: seeds.seed001_numpy(n, d),
        }
        errors = {name: truth_error(f()) for name, f in contestants.items()}
        _cache.clear()
        rows += _rows(
            "sinusoidal", case, "numpy", contestants, "seed001 f32", rounds, errors, [("posenc", "seed001 f32", 1.0)]
        )
        # ---------------------------------------------------------- torch CPU
        if torch is None:
            rows.append(Row("sinusoidal", case, "torch-cpu", "-", status="SKIP", note="torch not installed"))
            continue
        contestants = {
            "posenc": _posenc_torch(n, d),
            "seed000 exp": lambda n=n, d=d: seeds.seed000_torch_exp(n, d),
            "seed002 pow": lambda n=n, d=d: seeds.seed002_torch_pow(n, d),
        }
        if have_pe:
            contestants["positional-encodings"] = _peer_positional_encodings(n, d)
        errors = {name: truth_error(f().numpy()) for name, f in contestants.items()}
        _cache.clear()
        targets = [("posenc", "seed000 exp", COLD_TARGET), ("posenc", "seed002 pow", 1.0)]
        if have_pe:
            targets.append(("posenc", "positional-encodings", None))
        for backend, threads in torch_thread_settings(torch):
            with torch_threads(torch, threads):
                rows += _rows("sinusoidal", case, backend, contestants, "seed000 exp", rounds, errors, targets)
        if not have_pe:
            rows.append(
                Row("sinusoidal", case, "torch-cpu", "positional-encodings", status="SKIP", note="not installed")
            )
    return rows + _jax_rows(cfg)
