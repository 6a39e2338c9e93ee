"""Section: attention biases in FlexAttention against a materialised bias.

ALiBi, 8 heads, float32 on the CPU, at L = 4096 and 16384 self-attention
positions: ``flex_attention`` compiled, with :func:`posenc.torch.flex.alibi`
as its score function (the bias state: 8 slopes), against
``scaled_dot_product_attention`` with :func:`posenc.alibi_bias`'s ``(8, L,
L)`` matrix (made in each call, as a model that does not keep it would).
The bias's bytes are the point: ``8 L^2`` floats against 8.  Each row gives
the time of one attention call, the bias bytes each contestant holds, and the
peak resident memory a call adds above what its inputs hold (Linux: the
process's high-water mark, reset before the call); the SDPA case is skipped
where its bias would not fit comfortably in the memory available.
``--quick`` runs FlexAttention eagerly (no compile) at a tiny length.
"""

from __future__ import annotations

import contextlib
import warnings

import posenc

from .harness import Config, Row, interleaved, median_ms, paired_ratio

SIZES = (4096, 16384)
QUICK_SIZES = (256,)
HEADS, DIM = 8, 64
#: run the materialised contestant only when its bias times this fits in the available memory
MEMORY_FACTOR = 3


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _peak_mib(call) -> float | None:
    """Peak resident memory the call adds above the resident memory before it
    (Linux: VmHWM reset through /proc/self/clear_refs); ``None`` elsewhere."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    before = _status_kib("VmRSS")
    out = call()
    peak = _status_kib("VmHWM")
    del out
    if before is None or peak is None:
        return None
    return max(peak - before, 0) / 1024


@contextlib.contextmanager
def _quiet():
    """FlexAttention's eager path warns that it materialises the scores, and
    inductor's CPU backend calls a deprecated torch.jit helper: expected here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        warnings.filterwarnings("ignore", message=".*torch.jit.script_method.* is deprecated")
        yield


def run(cfg: Config) -> list[Row]:
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention.flex_attention import flex_attention

        from posenc.torch import flex
    except ImportError:  # pragma: no cover
        return [Row("flex", "ALiBi", "torch-cpu", "-", status="SKIP", note="torch with FlexAttention not installed")]
    sizes = QUICK_SIZES if cfg.quick else SIZES
    attend = flex_attention if cfg.quick else torch.compile(flex_attention, dynamic=False)
    how = "eager" if cfg.quick else "compiled"
    rows: list[Row] = []
    gen = torch.Generator().manual_seed(0)
    for n in sizes:
        case = f"ALiBi, L={n}, {HEADS} heads, dim {DIM}, float32"
        q, k, v = (torch.randn(1, HEADS, n, DIM, generator=gen) for _ in range(3))
        score_mod = flex.alibi(HEADS)
        slopes_bytes = HEADS * 8  # float64 slopes
        bias_bytes = HEADS * n * n * 4

        def flex_call(q=q, k=k, v=v, score_mod=score_mod):
            return attend(q, k, v, score_mod=score_mod)

        def sdpa_call(q=q, k=k, v=v, n=n):
            bias = posenc.alibi_bias(HEADS, n, xp=torch, dtype=torch.float32)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)

        contestants = {"flex": flex_call}
        avail = _available_bytes()
        fits = avail is None or MEMORY_FACTOR * bias_bytes <= avail
        if fits:
            contestants["sdpa"] = sdpa_call
        # seconds per call on the CPU: few rounds (the bias bytes are the point, not the last percent)
        rounds = min(cfg.rounds, 3) if n <= 4096 else 1
        with _quiet(), torch.no_grad():
            error = None
            if fits:
                error = float((flex_call() - sdpa_call()).abs().max())  # also compiles (untimed)
            times = interleaved(contestants, rounds)
            peaks = {name: _peak_mib(f) for name, f in contestants.items()}
        flex_row = Row(
            "flex", case, "torch-cpu", f"flex_attention ({how}) + posenc.torch.flex.alibi",
            ms=median_ms(times["flex"]), error=error, status="INFO",
            note=f"bias state {slopes_bytes} B; call peak +{_fmt_mib(peaks['flex'])}",
            extra={"bias_bytes": slopes_bytes, "peak_mib": peaks["flex"], "rounds": rounds},
        )
        if not fits:
            rows += [
                flex_row,
                Row(
                    "flex", case, "torch-cpu", "SDPA + posenc.alibi_bias", status="SKIP",
                    note=f"bias {bias_bytes / 2**30:.1f} GiB: over 1/{MEMORY_FACTOR} of the available memory",
                    extra={"bias_bytes": bias_bytes},
                ),
            ]
            continue
        flex_row.reference = "SDPA + posenc.alibi_bias"
        flex_row.ratio = paired_ratio(times["flex"], times["sdpa"])
        rows += [
            flex_row,
            Row(
                "flex", case, "torch-cpu", "SDPA + posenc.alibi_bias", ms=median_ms(times["sdpa"]), status="INFO",
                note=f"bias {bias_bytes / 2**20:,.0f} MiB; call peak +{_fmt_mib(peaks['sdpa'])}",
                extra={"bias_bytes": bias_bytes, "peak_mib": peaks["sdpa"], "rounds": rounds},
            ),
        ]
    return rows


def _fmt_mib(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.0f} MiB"
