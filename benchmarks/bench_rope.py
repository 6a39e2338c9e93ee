"""Section 2: applying RoPE against a plain copy and the Hugging Face formula."""

from __future__ import annotations

import contextlib

import numpy as np

import posenc

from . import seeds
from .harness import Config, Row, interleaved, median_ms, paired_ratio, torch_thread_settings, torch_threads, verdict

SHAPE = (1, 32, 4096, 128)
QUICK_SHAPE = (1, 2, 64, 32)
#: torch CPU: the half layout against a clone (1 and 2 threads)
TARGET = 1.5
#: NumPy: the half and the interleaved layout against the one-multiply floor
NUMPY_TARGETS = {"posenc.apply_rope": 1.3, "apply_rope interleaved": 1.1}
FLOOR = "floor: x * cos"
FLOOR3 = "floor: x * c + y * s (3 ufuncs)"
INTERLEAVED = "apply_rope interleaved"


def _three_ufuncs(x: np.ndarray, c: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Two products and a sum, each one NumPy ufunc pass into preallocated
    memory: the fewest passes any ufunc formulation of the half layout makes
    (its cross term pairs features half a row apart, which no single NumPy
    ufunc combines).  Not RoPE (no swap of the halves): a floor."""
    out = np.multiply(x, c)
    t = np.multiply(x, s)
    np.add(out, t, out=out)
    return out


def _truth(x: np.ndarray, positions: np.ndarray, layout: str = "half") -> np.ndarray:
    """float64 RoPE of ``x``, written from the paper: feature pairs
    ``(i, i + d/2)`` (half layout) or ``(2i, 2i + 1)`` (interleaved)."""
    d = x.shape[-1]
    h = d // 2
    w = 10000.0 ** (-2.0 * np.arange(h) / d)
    a = positions[:, None].astype(np.float64) * w
    c, s = np.cos(a), np.sin(a)
    x = x.astype(np.float64)
    if layout == "half":
        x1, x2 = x[..., :h], x[..., h:]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return np.stack([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1).reshape(x.shape)


def run(cfg: Config) -> list[Row]:
    shape = QUICK_SHAPE if cfg.quick else SHAPE
    case = "x".join(map(str, shape))
    if not hasattr(posenc, "apply_rope") or not hasattr(posenc, "rope_cos_sin"):
        return [Row("rope", case, "-", "-", status="SKIP", note="posenc.apply_rope is not available yet")]
    rows: list[Row] = []
    seq, d = shape[-2], shape[-1]
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(shape, dtype=np.float32)
    truth = {layout: _truth(x_np, np.arange(seq), layout) for layout in ("half", "interleaved")}
    cos_np, sin_np = posenc.rope_cos_sin(seq, d, dtype=np.float32)
    backends = [("numpy", x_np, cos_np, sin_np, np.copy, seeds.hf_apply_rotary_numpy, lambda a: a)]
    try:
        import torch

        x_t = torch.from_numpy(x_np.copy())
        cos_t, sin_t = posenc.rope_cos_sin(seq, d, dtype=torch.float32, xp=torch)
        backends.append(("torch-cpu", x_t, cos_t, sin_t, torch.clone, seeds.hf_apply_rotary_torch, lambda a: a.numpy()))
    except ImportError:  # pragma: no cover
        rows.append(Row("rope", case, "torch-cpu", "-", status="SKIP", note="torch not installed"))
    runs = []
    for backend, x, cos, sin, copy, hf, to_np in backends:
        if backend == "numpy":
            runs.append((backend, None, x, cos, sin, copy, hf, to_np))
        else:
            for label, threads in torch_thread_settings(torch):
                runs.append((label, threads, x, cos, sin, copy, hf, to_np))
    for backend, threads, x, cos, sin, copy, hf, to_np in runs:
        with contextlib.ExitStack() as stack:
            if threads is not None:
                stack.enter_context(torch_threads(torch, threads))
            rows += _run_one(case, backend, seq, x, cos, sin, copy, hf, to_np, truth, cfg)
    return rows


def _run_one(case, backend, seq, x, cos, sin, copy, hf, to_np, truth, cfg) -> list[Row]:
    """The four contestants of one backend, interleaved."""
    rows: list[Row] = []
    ci, si = posenc.rope_cos_sin(seq, int(x.shape[-1]), layout="interleaved", dtype=cos.dtype)
    contestants = {
        "copy": lambda x=x, copy=copy: copy(x),
        "posenc.apply_rope": lambda x=x, c=cos, s=sin: posenc.apply_rope(x, c, s),
        INTERLEAVED: lambda x=x, c=ci, s=si: posenc.apply_rope(x, c, s, layout="interleaved"),
        "posenc.rope": lambda x=x: posenc.rope(x, seq),
        "HF rotate_half": lambda x=x, c=cos, s=sin, hf=hf: hf(x, c, s),
        # Not RoPE: the single elementwise product any formulation needs at
        # least once, into a fresh output.  Its ratio is a floor for every
        # implementation made of the backend's elementwise operations.
        FLOOR: lambda x=x, c=cos: x * c,
    }
    if backend == "numpy":
        contestants[FLOOR3] = lambda x=x, c=cos, s=sin: _three_ufuncs(x, c, s)
    errors = {
        name: float(np.abs(to_np(f()) - truth["interleaved" if name == INTERLEAVED else "half"]).max())
        for name, f in contestants.items()
        if name not in ("copy", FLOOR, FLOOR3)
    }
    times = interleaved(contestants, cfg.rounds)
    for name, ts in times.items():
        row = Row("rope", case, backend, name, ms=median_ms(ts), error=errors.get(name))
        if name != "copy":
            row.reference = "copy"
            row.ratio = paired_ratio(ts, times["copy"])
        if name == INTERLEAVED:
            row.note = "GPT-J pairs: one complex multiplication"
        if name == FLOOR:
            row.status = "INFO"
            row.note = "one multiply, not RoPE: the floor of any elementwise formulation"
        if name == FLOOR3:
            row.status = "INFO"
            row.note = "not RoPE: the floor of any NumPy ufunc formulation of the half layout"
        if name == "posenc.apply_rope" and backend != "numpy":
            row.target = f"<= {TARGET}x copy"
            row.status = verdict(row.ratio <= TARGET)
        rows.append(row)
        if backend == "numpy" and name in NUMPY_TARGETS:
            r = paired_ratio(ts, times[FLOOR])
            target = NUMPY_TARGETS[name]
            note = ""
            if name == "posenc.apply_rope":
                r3 = paired_ratio(ts, times[FLOOR3])
                note = f"{r3:.2f}x the three-ufunc floor"
            rows.append(
                Row(
                    "rope", case, backend, f"{name} vs floor", reference=FLOOR, ratio=r,
                    target=f"<= {target}x floor", status=verdict(r <= target), note=note,
                )
            )
    rows.append(
        Row(
            "rope",
            case,
            backend,
            "apply_rope vs HF",
            reference="HF rotate_half",
            ratio=paired_ratio(times["posenc.apply_rope"], times["HF rotate_half"]),
            status="INFO",
        )
    )
    return rows
