"""Section: diffusion models -- the timestep embedding of a sampling step
against diffusers' ``get_timestep_embedding`` (time and error side by side)."""

from __future__ import annotations

import math

import numpy as np

import posenc
from posenc import _cache

from .harness import Config, Row, interleaved, median_ms, paired_ratio, torch_thread_settings, torch_threads, verdict

#: the Stable Diffusion UNet's time projection: Timesteps(320, flip_sin_to_cos=True, downscale_freq_shift=0)
BATCH, DIM, FLIP, SHIFT = 1024, 320, True, 0.0
QUICK_BATCH = 64
ERR_TARGET = 2.5e-7


#: posenc against diffusers' get_timestep_embedding, warm (a sampling loop's
#: steps) and cold (the first step: host constants made)
WARM_TARGET = 1.5
COLD_TARGET = 2.0


def exact(t: np.ndarray, dim: int) -> np.ndarray:
    """float64 truth of the embedding (timesteps below 1000 in float64: the
    angles round once, about 1e-13)."""
    half = dim // 2
    w = np.exp(-math.log(10000.0) * np.arange(half) / (half - SHIFT))
    a = np.asarray(t, dtype=np.float64)[:, None] * w
    return np.concatenate([np.cos(a), np.sin(a)] if FLIP else [np.sin(a), np.cos(a)], axis=-1)


def run(cfg: Config) -> list[Row]:
    case = f"timestep embedding, batch {QUICK_BATCH if cfg.quick else BATCH}, dim {DIM}"
    try:
        import torch
    except ImportError:  # pragma: no cover
        return [Row("diffusion", case, "torch-cpu", "-", status="SKIP", note="torch not installed")]
    try:
        from diffusers.models.embeddings import get_timestep_embedding
    except ImportError:
        get_timestep_embedding = None
    n = QUICK_BATCH if cfg.quick else BATCH
    # fractional timesteps in [0, 1000), float32 (a sampler's schedule)
    t = torch.as_tensor(np.random.default_rng(0).uniform(0.0, 1000.0, n).astype(np.float32))
    truth = exact(t.numpy(), DIM)
    def embed():
        return posenc.timestep_embedding(t, DIM, flip_sin_to_cos=FLIP, downscale_freq_shift=SHIFT)

    contestants = {"posenc": embed, "posenc cold": embed}
    if get_timestep_embedding is not None:
        contestants["diffusers"] = lambda: get_timestep_embedding(t, DIM, FLIP, SHIFT)
    errors = {name: float(np.abs(f().double().numpy() - truth).max()) for name, f in contestants.items()}
    rows: list[Row] = []
    for backend, threads in torch_thread_settings(torch):
        with torch_threads(torch, threads):
            # warm calls, as in a sampling loop (posenc's host constants are kept between steps),
            # and cold ones (its caches emptied before the call, untimed: the first step)
            rounds = max(cfg.rounds, 5) if not cfg.quick else cfg.rounds
            times = interleaved(contestants, rounds, setup={"posenc cold": _cache.clear})
        if "diffusers" not in times:
            err = errors["posenc"]
            rows += [
                Row(
                    "diffusion", case, backend, "posenc", ms=median_ms(times["posenc"]), error=err,
                    target=f"err <= {ERR_TARGET:.1e}", status=verdict(err <= ERR_TARGET),
                ),
                Row("diffusion", case, backend, "diffusers", status="SKIP", note="not installed"),
            ]
            continue
        for name, target in (("posenc", WARM_TARGET), ("posenc cold", COLD_TARGET)):
            err = errors[name]
            r = paired_ratio(times[name], times["diffusers"])
            rows.append(
                Row(
                    "diffusion", case, backend, name, ms=median_ms(times[name]), error=err, reference="diffusers",
                    ratio=r, target=f"<= {target}x, err <= {ERR_TARGET:.1e}",
                    status=verdict(r <= target and err <= ERR_TARGET),
                )
            )
        rows += [
            Row(
                "diffusion", case, backend, "diffusers", ms=median_ms(times["diffusers"]), error=errors["diffusers"],
                status="INFO", note="get_timestep_embedding, float32 frequencies and angles",
            ),
        ]
    return rows
