"""Section: the model's hot path -- a decode step, apply_rope on one token,
arrays of positions, and a compiled decode step, against Hugging Face's code
and the naive float32 formula."""

from __future__ import annotations

import numpy as np

import posenc
from posenc import _angles, _cache, _compat, _kernels, _rope

from . import seeds
from .harness import (
    Config,
    Row,
    guard_check_us,
    interleaved,
    median_ms,
    paired_ratio,
    torch_thread_settings,
    torch_threads,
    verdict,
)

#: one new token at position 4096, q and k of (1, 32, 1, 128)
DECODE_POS = 4096
HEADS, HEAD_DIM = 32, 128
#: calls per timed sample of the microsecond-sized contestants
INNER = 50
N_TABLE, D_TABLE = 4096, 512
ROPE_SEQ = 4096
ERR_TARGET = 2.5e-7


def _inv_freq(d: int) -> np.ndarray:
    return 1.0 / 10000.0 ** (np.arange(0, d, 2, dtype=np.float64) / d)


def _repeat(f, n: int = INNER):
    def run():
        for _ in range(n):
            out = f()
        return out

    return run


def _exact_sincos(p: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 truth of sin / cos of ``p * w`` (positions below 2**24 in
    float64 are exact and their products round once, about 1e-9)."""
    a = np.asarray(p, dtype=np.float64)[..., None] * w
    return np.sin(a), np.cos(a)


def run(cfg: Config) -> list[Row]:
    rows: list[Row] = []
    rows += _decode_numpy(cfg)
    try:
        import torch
    except ImportError:  # pragma: no cover
        return rows + [Row("hotpath", "decode", "torch-cpu", "-", status="SKIP", note="torch not installed")]
    for label, threads in torch_thread_settings(torch):
        with torch_threads(torch, threads):
            rows += _decode_torch(cfg, torch, label)
            rows += _arrays_torch(cfg, torch, label)
    rows += _arrays_numpy(cfg)
    if not cfg.quick:
        with torch_threads(torch, 1):
            rows += _compiled_decode(cfg, torch)
    return rows


# ---------------------------------------------------------------- decode step
def _decode_rows(case: str, backend: str, times: dict, ref: str, names: dict[str, float]) -> list[Row]:
    out = []
    for name, target in names.items():
        r = paired_ratio(times[name], times[ref])
        out.append(
            Row(
                "hotpath", case, backend, name, ms=median_ms(times[name]) / INNER, reference=ref, ratio=r,
                target=f"<= {target}x", status=verdict(r <= target),
            )
        )
    out.append(Row("hotpath", case, backend, ref, ms=median_ms(times[ref]) / INNER, status="INFO", note="per call"))
    return out


#: the floors of the two public compositions: their kernels called directly
FLOORS = {
    "exact floor (kernels, no checks)": "rope_cos_sin + apply_rope x2",
    "floor with cached checks (kernels + plan lookups)": "rope_cos_sin + apply_rope x2",
    "exact floor of rope x2 (two tables)": "rope x2",
}


def _floor_rows(case: str, backend: str, times: dict) -> list[Row]:
    """The exact step's own work, without checks or dispatch: what the
    public functions could cost at best (``floor`` = its time over HF's)."""
    rows = []
    for name, public in FLOORS.items():
        r = paired_ratio(times[name], times["HF step"])
        over = paired_ratio(times[public], times[name])
        note = f"floor {r:.2f}x HF; {public} is {over:.2f}x the floor"
        ms = median_ms(times[name]) / INNER
        rows.append(Row("hotpath", case, backend, name, ms=ms, reference="HF step", ratio=r, status="INFO", note=note))
    return rows


def _floor_contestants(q, k, pid, turns, kind: str, dtype) -> dict:
    """The floors of FLOORS for the kernels of ``kind``: the public
    compositions' kernels called directly, and with the least a call
    validated once per shape does (build its plan key and look it up in the
    public functions' own caches, three times)."""
    lane = _kernels.LANES[kind]
    table, rotate, rope = lane.turns, lane.rotate, lane.rope
    opts = ("half", None, False, 1)
    table_opts = (HEAD_DIM, 10000.0, None, "half", None, dtype, None, None)

    def floor_step():
        s, c = table(pid, turns, 1.0, False, "half")
        return rotate(q, c, s, "half"), rotate(k, c, s, "half")

    def checked_step():
        _rope.TABLE_PLANS.get(_compat.call_key((pid,), table_opts))
        s, c = table(pid, turns, 1.0, False, "half")
        _rope.APPLY_PLANS.get(_compat.call_key((q, c, s), opts))
        oq = rotate(q, c, s, "half")
        _rope.APPLY_PLANS.get(_compat.call_key((k, c, s), opts))
        return oq, rotate(k, c, s, "half")

    def floor_rope():
        return rope(q, pid, turns, 1.0, None, "half"), rope(k, pid, turns, 1.0, None, "half")

    steps = (floor_step, checked_step, floor_rope)
    return {name: _repeat(f) for name, f in zip(FLOORS, steps)}


def _laid_out_turns(d: int) -> tuple[np.ndarray, ...]:
    """The host turns of the kernels, with the fixed-point turns laid out as a
    half-layout table's columns (the kernels' input)."""
    key = _angles.as_freqs(posenc.rope_frequencies(d)).key
    return _angles.kernel_turns(key) + (_angles.laid_out_fixed(key, "half"),)


def _decode_numpy(cfg: Config) -> list[Row]:
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, HEADS, 1, HEAD_DIM), dtype=np.float32)
    k = rng.standard_normal((1, HEADS, 1, HEAD_DIM), dtype=np.float32)
    pid = np.array([[DECODE_POS]])
    inv = _inv_freq(HEAD_DIM).astype(np.float32)

    def hf_step():
        f = (inv[None, :, None] @ pid[:, None, :].astype(np.float32)).transpose(0, 2, 1)
        emb = np.concatenate((f, f), axis=-1)
        c, s = np.cos(emb)[:, None], np.sin(emb)[:, None]
        return seeds.hf_apply_rotary_numpy(q, c, s), seeds.hf_apply_rotary_numpy(k, c, s)

    def posenc_step():
        c, s = posenc.rope_cos_sin(pid, HEAD_DIM, dtype=np.float32)
        return posenc.apply_rope(q, c, s, heads_axis=1), posenc.apply_rope(k, c, s, heads_axis=1)

    def posenc_rope():
        return posenc.rope(q, pid, heads_axis=1), posenc.rope(k, pid, heads_axis=1)

    c0, s0 = posenc.rope_cos_sin(pid, HEAD_DIM, dtype=np.float32)
    c0, s0 = c0[:, None], s0[:, None]
    turns = _laid_out_turns(HEAD_DIM)

    contestants = {
        "HF step": _repeat(hf_step),
        "rope_cos_sin + apply_rope x2": _repeat(posenc_step),
        "rope x2": _repeat(posenc_rope),
        # the kernels the public path runs, without and with the plan lookups
        **_floor_contestants(q, k, pid, turns, "numpy", np.float32),
        "formula": _repeat(lambda: seeds.hf_apply_rotary_numpy(q, c0, s0)),
        "apply_rope (tables given)": _repeat(lambda: posenc.apply_rope(q, c0, s0)),
    }
    times = interleaved(contestants, cfg.rounds)
    case = f"decode p={DECODE_POS} q,k (1,{HEADS},1,{HEAD_DIM})"
    rows = _decode_rows(case, "numpy", times, "HF step", {"rope_cos_sin + apply_rope x2": 1.0, "rope x2": 1.0})
    rows += _floor_rows(case, "numpy", times)
    rows += _decode_rows("apply_rope (1,32,1,128)", "numpy", times, "formula", {"apply_rope (tables given)": 1.5})
    return rows


def _decode_torch(cfg: Config, torch, label: str) -> list[Row]:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, HEADS, 1, HEAD_DIM, generator=g)
    k = torch.randn(1, HEADS, 1, HEAD_DIM, generator=g)
    pid = torch.tensor([[DECODE_POS]])
    inv = torch.from_numpy(_inv_freq(HEAD_DIM)).float()

    def hf_step():
        f = (inv[None, :, None] @ pid[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((f, f), dim=-1)
        c, s = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)
        return seeds.hf_apply_rotary_torch(q, c, s), seeds.hf_apply_rotary_torch(k, c, s)

    def posenc_step():
        c, s = posenc.rope_cos_sin(pid, HEAD_DIM)
        return posenc.apply_rope(q, c, s, heads_axis=1), posenc.apply_rope(k, c, s, heads_axis=1)

    def posenc_rope():
        return posenc.rope(q, pid, heads_axis=1), posenc.rope(k, pid, heads_axis=1)

    c0, s0 = posenc.rope_cos_sin(pid, HEAD_DIM)
    c0, s0 = c0[:, None], s0[:, None]
    turns = _laid_out_turns(HEAD_DIM)

    contestants = {
        "HF step": _repeat(hf_step),
        "rope_cos_sin + apply_rope x2": _repeat(posenc_step),
        "rope x2": _repeat(posenc_rope),
        # torch CPU tensors: the kernels through their NumPy views
        **_floor_contestants(q, k, pid, turns, "torch-cpu", None),
        "formula": _repeat(lambda: seeds.hf_apply_rotary_torch(q, c0, s0)),
        "apply_rope (tables given)": _repeat(lambda: posenc.apply_rope(q, c0, s0)),
    }
    with torch.inference_mode():
        times = interleaved(contestants, cfg.rounds)
    case = f"decode p={DECODE_POS} q,k (1,{HEADS},1,{HEAD_DIM})"
    rows = _decode_rows(case, label, times, "HF step", {"rope_cos_sin + apply_rope x2": 1.0, "rope x2": 1.0})
    rows += _floor_rows(case, label, times)
    rows += _decode_rows("apply_rope (1,32,1,128)", label, times, "formula", {"apply_rope (tables given)": 1.5})
    return rows


def _compiled_decode(cfg: Config, torch) -> list[Row]:
    """Both steps compiled (inductor, fullgraph, dynamic positions)."""
    import warnings

    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, HEADS, 1, HEAD_DIM, generator=g)
    k = torch.randn(1, HEADS, 1, HEAD_DIM, generator=g)
    inv = torch.from_numpy(_inv_freq(HEAD_DIM)).float()

    def hf_step(q, k, pid):
        f = (inv[None, :, None] @ pid[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((f, f), dim=-1)
        c, s = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)
        return seeds.hf_apply_rotary_torch(q, c, s), seeds.hf_apply_rotary_torch(k, c, s)

    def posenc_step(q, k, pid):
        c, s = posenc.rope_cos_sin(pid, HEAD_DIM)
        return posenc.apply_rope(q, c, s, heads_axis=1), posenc.apply_rope(k, c, s, heads_axis=1)

    case = f"compiled decode q,k (1,{HEADS},1,{HEAD_DIM})"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hf_c = torch.compile(hf_step, fullgraph=True, dynamic=True)
            pe_c = torch.compile(posenc_step, fullgraph=True, dynamic=True)
            # torch's option that drops the guards on globals (docs/performance.rst),
            # through a function of its own code: its guard check only
            skip = getattr(torch.compiler, "skip_guard_on_globals_unsafe", None)

            def unguarded(q, k, pid):
                return posenc_step(q, k, pid)

            un_c = None if skip is None else torch.compile(
                unguarded, fullgraph=True, dynamic=True, options={"guard_filter_fn": skip}
            )
            pids = [torch.tensor([[DECODE_POS + i]]) for i in range(3)]
            with torch.inference_mode():
                for p in pids:
                    hf_c(q, k, p)
                    pe_c(q, k, p)
                    if un_c is not None:
                        un_c(q, k, p)
                times = interleaved(
                    {
                        "HF step compiled": _repeat(lambda: hf_c(q, k, pids[1])),
                        "posenc step compiled": _repeat(lambda: pe_c(q, k, pids[1])),
                    },
                    cfg.rounds,
                )
                guards = [guard_check_us(fn, {"q": q, "k": k, "pid": pids[1]}) for fn in (posenc_step, hf_step)]
                guard_un = guard_check_us(unguarded, {"q": q, "k": k, "pid": pids[1]}) if un_c is not None else None
    except Exception as exc:  # noqa: BLE001 - reported as a row
        note = f"{type(exc).__name__}: {exc}"[:200]
        return [Row("hotpath", case, "torch-cpu 1 thread", "posenc step compiled", status="FAIL", note=note)]
    rows = _decode_rows(case, "torch-cpu 1 thread", times, "HF step compiled", {"posenc step compiled": 1.2})
    if None not in guards:  # the host cost a compiled call pays before its graph runs (GPU steps are host-bound)
        rows[0].note = f"dynamo's guard check alone {guards[0]:.1f} us against HF's {guards[1]:.1f} us"
        if guard_un is not None:
            rows[0].note += f" ({guard_un:.1f} us with guard_filter_fn=skip_guard_on_globals_unsafe)"
    return rows


# ---------------------------------------------------------------- arrays of positions
def _naive_np(p: np.ndarray, d: int) -> np.ndarray:
    """The naive float32 table: sin / cos of the float32 product, interleaved."""
    w = (1.0 / 10000.0 ** (np.arange(0, d, 2) / d)).astype(np.float32)
    a = p.astype(np.float32)[..., None] * w
    return np.stack([np.sin(a), np.cos(a)], axis=-1).reshape(p.shape + (d,))


#: rope_cos_sin of dense position ids against Hugging Face's rotary forward:
#: rows of a cached exact table (0.51x before the range check came in)
ROPE_IDS_TARGET = 0.6


def _arrays_numpy(cfg: Config) -> list[Row]:
    rows = []
    n, d = (256, 64) if cfg.quick else (N_TABLE, D_TABLE)
    w = posenc.frequencies(d)
    rng = np.random.default_rng(1)
    cases = {
        "int arange": np.arange(n),
        "int random < 2**24": np.sort(rng.integers(0, 2**24, n)),
        "int (b, 1, s) offset 2**20": (np.arange(n).reshape(2, 1, n // 2) + 2**20),
        "float random < 2**22": rng.uniform(0, 2.0**22, n),
    }
    for label, p in cases.items():
        is_int = p.dtype.kind == "i"
        target = 1.2 if is_int else 1.5
        s, c = _exact_sincos(p, w)
        truth = np.stack([s, c], axis=-1).reshape(p.shape + (d,))
        contestants = {
            "naive float32": lambda p=p: _naive_np(p, d),
            "posenc.sinusoidal": lambda p=p: posenc.sinusoidal(p, d, dtype="float32"),
        }
        err = {k: float(np.abs(f().astype(np.float64) - truth).max()) for k, f in contestants.items()}
        times = interleaved(contestants, cfg.rounds, setup={"posenc.sinusoidal": _cache.clear})
        r = paired_ratio(times["posenc.sinusoidal"], times["naive float32"])
        ok = r <= target and err["posenc.sinusoidal"] <= ERR_TARGET
        case = f"sinusoidal {label} ({n}, {d})"
        ms = median_ms(times["naive float32"])
        rows.append(Row("hotpath", case, "numpy", "naive float32", ms=ms, error=err["naive float32"], status="INFO"))
        rows.append(
            Row(
                "hotpath", case, "numpy", "posenc.sinusoidal", ms=median_ms(times["posenc.sinusoidal"]),
                reference="naive float32", ratio=r, error=err["posenc.sinusoidal"],
                target=f"<= {target}x, err <= {ERR_TARGET}", status=verdict(ok),
            )
        )
    return rows


def _arrays_torch(cfg: Config, torch, label: str) -> list[Row]:
    rows = []
    n, d = (256, 64) if cfg.quick else (N_TABLE, D_TABLE)
    p = torch.arange(n)
    truth_s, truth_c = _exact_sincos(np.arange(n), posenc.frequencies(d))
    truth = np.stack([truth_s, truth_c], axis=-1).reshape(n, d)
    contestants = {
        "seed000 torch": lambda: seeds.seed000_torch_exp(n, d),
        "posenc.sinusoidal(arange)": lambda: posenc.sinusoidal(p, d),
    }
    err = {k: float(np.abs(f().double().numpy() - truth).max()) for k, f in contestants.items()}
    times = interleaved(contestants, cfg.rounds, setup={"posenc.sinusoidal(arange)": _cache.clear})
    r = paired_ratio(times["posenc.sinusoidal(arange)"], times["seed000 torch"])
    case = f"sinusoidal torch.arange({n}), {d}"
    ms = median_ms(times["seed000 torch"])
    rows.append(Row("hotpath", case, label, "seed000 torch", ms=ms, error=err["seed000 torch"], status="INFO"))
    rows.append(
        Row(
            "hotpath", case, label, "posenc.sinusoidal(arange)", ms=median_ms(times["posenc.sinusoidal(arange)"]),
            reference="seed000 torch", ratio=r, error=err["posenc.sinusoidal(arange)"], target="<= 1.0x",
            status=verdict(r <= 1.0 and err["posenc.sinusoidal(arange)"] <= ERR_TARGET),
        )
    )
    # Hugging Face's rotary forward on position_ids (1, 4096) against rope_cos_sin
    seq = 256 if cfg.quick else ROPE_SEQ
    pid = torch.arange(seq)[None]
    inv = torch.from_numpy(_inv_freq(HEAD_DIM)).float()

    def hf_forward():
        f = (inv[None, :, None] @ pid[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((f, f), dim=-1)
        return emb.cos(), emb.sin()

    contestants = {
        "HF rotary forward": hf_forward,
        "posenc.rope_cos_sin(position_ids)": lambda: posenc.rope_cos_sin(pid, HEAD_DIM),
    }
    ts, tc = _exact_sincos(np.arange(seq)[None], _inv_freq(HEAD_DIM))
    tcos = np.concatenate([tc, tc], axis=-1)
    err = {k: float(np.abs(f()[0].double().numpy() - tcos).max()) for k, f in contestants.items()}
    with torch.inference_mode():
        times = interleaved(contestants, cfg.rounds)
    name = "posenc.rope_cos_sin(position_ids)"
    r = paired_ratio(times[name], times["HF rotary forward"])
    case = f"rope_cos_sin position_ids (1, {seq}), {HEAD_DIM}"
    ms = median_ms(times["HF rotary forward"])
    rows.append(Row("hotpath", case, label, "HF rotary forward", ms=ms, error=err["HF rotary forward"], status="INFO"))
    rows.append(
        Row(
            "hotpath", case, label, name, ms=median_ms(times[name]), reference="HF rotary forward", ratio=r,
            error=err[name], target=f"<= {ROPE_IDS_TARGET}x",
            status=verdict(r <= ROPE_IDS_TARGET and err[name] <= ERR_TARGET),
        )
    )
    return rows

