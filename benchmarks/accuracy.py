"""The accuracy sweep behind posenc's one accuracy statement.

    python -m benchmarks.accuracy            # the full sweep (about a minute)
    python -m benchmarks.accuracy --quick    # fewer positions

Every float32 table path of posenc (ranges, array positions on a device with
and without float64, RoPE tables in both layouts, the one-position tables of a
decode step, torch CPU tensors, JAX without x64, the gathered rows of dense
positions) is measured against the exact sines and cosines of ``p * w`` (``w``
the mathematical frequencies ``10000 ** (-2i/d)`` from mpmath, not their
float64 roundings: :func:`math_frequencies`) over random positions in each range of magnitudes,
and the float64 tables against the same truth up to ``2**53``.  The test suite
(``tests/posenc/test_accuracy.py``) and the documentation build
(``docs/_ext/posenc_docs.py``) run the same sweep with fewer positions.

The truth: ``p * w`` formed exactly (float64 products of 26-bit halves of ``p``
and of the two float64 parts of ``w``),
reduced modulo 2*pi and evaluated in long double (x86's 80-bit format), or
with mpmath beyond ``|p w| = 2**36`` and where long double is float64
(:func:`exact_angle_sincos`).  Its own error is below 1e-18 for the float32
sweep.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

#: the documented bound of float32 tables, and the margin the sweep must keep
BOUND = 2.5e-7
MARGIN = 0.8
#: the documented bound of float64 tables (integer positions |p| < 2**53, float |p| < 2**40)
BOUND64 = 1e-15

#: ranges of integer magnitudes (lo, hi): |p| in [lo, hi), both signs
INT_RANGES = ((0, 2**16), (2**16, 2**24), (2**24, 2**31))
#: ranges of float magnitudes
FLOAT_RANGES = ((0.0, 2.0**10), (2.0**10, 2.0**22))
#: float64 tables: integer and float magnitudes up to 2**53 and 2**40
INT64_RANGES = ((0, 2**31), (2**31, 2**53))
FLOAT64_RANGES = ((0.0, 2.0**22), (2.0**22, 2.0**40))


# ---------------------------------------------------------------- the truth
def _split26(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = x * 134217729.0  # 2**27 + 1 (Veltkamp): hi has 26 bits, lo the rest
    hi = t - (t - x)
    return hi, x - hi


def _two_pi_parts() -> tuple[Any, Any, Any]:
    """2*pi as C1 + C2 + C3 in long double: C1 with 31 bits and C2 with 28, so
    that k * C1 and k * C2 are exact for |k| < 2**33."""
    from decimal import Decimal, localcontext

    ld = np.longdouble
    with localcontext() as ctx:
        ctx.prec = 80
        two_pi = Decimal("6.28318530717958647692528676655900576839433879875021164194988918461563281257241799726")
        c1 = Decimal(math.floor(two_pi * 2**28)) / 2**28
        c2 = Decimal(math.floor((two_pi - c1) * 2**56)) / 2**56
        c3 = two_pi - c1 - c2
    return ld(str(c1)), ld(str(c2)), ld(str(c3))


def math_frequencies(dim: int, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """The mathematical frequencies ``base ** (-2i / dim)`` (``i < dim // 2``)
    of the sinusoidal and RoPE tables, from mpmath at 200 bits, as float64
    pairs ``(hi, lo)``: ``hi`` correctly rounded, ``hi + lo`` to about 2**-106
    (the truth of the sweep: posenc's tables follow these, not ``hi``)."""
    import mpmath

    with mpmath.workprec(200):
        exact = [mpmath.mpf(base) ** (-mpmath.mpf(2 * i) / dim) for i in range(dim // 2)]
        hi = np.array([float(x) for x in exact])
        lo = np.array([float(x - mpmath.mpf(float(h))) for x, h in zip(exact, hi)])
    return hi, lo


def exact_angle_sincos(p: np.ndarray, w: np.ndarray, lo: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """float64 ``(sin, cos)`` of ``p[:, None] * (w + lo)``, the angle formed exactly.

    ``p``, ``w`` and ``lo`` float64 (``lo``: the rest of the frequencies
    beyond ``w``, as :func:`math_frequencies` gives it; none by default).
    With each split into 26-bit halves, ``p * w`` and ``p * lo`` are sums of
    exact float64 products; each is reduced modulo 2*pi in long double
    (x86's 64-bit mantissa) with a three-part 2*pi, then summed: the angle is
    right to about ``|p w| * 2**-90`` for ``|p w| < 2**36`` (mpmath beyond,
    and where long double is float64).
    """
    p = np.asarray(p, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    parts = [w] if lo is None else [w, np.asarray(lo, dtype=np.float64)]
    if np.finfo(np.longdouble).nmant < 63 or np.abs(p).max(initial=0) * np.abs(w).max(initial=0) >= 2.0**36:
        return _mpmath_sincos(p, w, lo)
    ld = np.longdouble
    c1, c2, c3 = _two_pi_parts()
    inv = 1 / (c1 + c2 + c3)
    ph, pl = _split26(p)
    r = np.zeros((len(p), len(w)), dtype=ld)
    for part in parts:
        wh, wl = _split26(part)
        for a in (ph, pl):
            for b in (wh, wl):
                t = (a[:, None] * b[None, :]).astype(ld)  # exact in float64 (<= 53 bits)
                k = np.round(t * inv)
                r += ((t - k * c1) - k * c2) - k * c3
    k = np.round(r * inv)
    r = ((r - k * c1) - k * c2) - k * c3
    return np.sin(r).astype(np.float64), np.cos(r).astype(np.float64)


def _mpmath_sincos(
    p: np.ndarray, w: np.ndarray, lo: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    import mpmath

    lo = np.zeros_like(w) if lo is None else np.asarray(lo, dtype=np.float64)
    s = np.empty((len(p), len(w)))
    c = np.empty_like(s)
    with mpmath.workprec(160):
        for i, pi in enumerate(np.asarray(p, dtype=np.float64)):
            for j, (wj, lj) in enumerate(zip(np.asarray(w, dtype=np.float64), lo)):
                x = mpmath.mpf(float(pi)) * (mpmath.mpf(float(wj)) + mpmath.mpf(float(lj)))
                s[i, j], c[i, j] = float(mpmath.sin(x)), float(mpmath.cos(x))
    return s, c


# ---------------------------------------------------------------- positions
def int_positions(rng: np.random.Generator, lo: int, hi: int, n: int) -> np.ndarray:
    """``n`` integers with |p| in [lo, hi), log-uniform magnitudes, both signs,
    the two ends of the range included."""
    mag = np.exp(rng.uniform(math.log(max(lo, 1)), math.log(hi), n)).astype(np.int64)
    mag = np.clip(mag, lo, hi - 1)
    mag[:4] = [lo, lo + 1, hi - 2, hi - 1]
    sign = np.where(rng.random(n) < 0.5, -1, 1)
    return mag * sign


def float_positions(rng: np.random.Generator, lo: float, hi: float, n: int, dtype: Any = np.float32) -> np.ndarray:
    mag = np.exp(rng.uniform(math.log(max(lo, 2.0**-20)), math.log(hi), n))
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    p = (mag * sign).astype(dtype)
    return p[np.abs(p) < hi]


# ---------------------------------------------------------------- the paths
class Path(NamedTuple):
    """One table path: ``run(p, dim) -> (sin, cos)`` (float64 NumPy, compact
    columns) at ``positions(p)``; ``kinds`` of positions it takes."""

    backend: str
    kinds: tuple[str, ...]
    run: Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]
    positions: Callable[[np.ndarray], np.ndarray] = lambda p: p
    rope: bool = False


def _interleaved(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sin, cos) columns of an interleaved sinusoidal table."""
    t = np.asarray(t, dtype=np.float64)
    return t[..., 0::2], t[..., 1::2]


def _rope_columns(c: Any, s: Any, layout: str) -> tuple[np.ndarray, np.ndarray]:
    c, s = np.asarray(c, dtype=np.float64), np.asarray(s, dtype=np.float64)
    if layout == "interleaved":
        return s[..., 0::2], c[..., 0::2]
    h = c.shape[-1] // 2
    return s[..., :h], c[..., :h]


#: rows of a range window (a power of four: the coarse/fine split is 64 x 64) and the stride of the
#: rows compared (prime: every fine row r of the split is met, not only r = 0)
WINDOW, STRIDE = 4096, 61


def _windows(p: np.ndarray) -> np.ndarray:
    return np.concatenate([np.arange(q, q + WINDOW, STRIDE) for q in p])


def paths(backends: tuple[str, ...] = ("numpy", "strict", "torch", "jax")) -> dict[str, Path]:
    """The float32 table paths of posenc on the installed ``backends``."""
    import posenc

    out: dict[str, Path] = {}
    if "numpy" in backends:

        def ranges(p: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
            rows = [posenc.add_sinusoidal(np.zeros((WINDOW, d), np.float32), offset=int(q))[::STRIDE] for q in p]
            return _interleaved(np.concatenate(rows))

        def rope_ranges(p: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
            rows = [posenc.rope_cos_sin(WINDOW, d, offset=int(q), dtype="float32") for q in p]
            return _rope_columns(np.concatenate([c[::STRIDE] for c, _ in rows]),
                                 np.concatenate([s[::STRIDE] for _, s in rows]), "half")

        def array(p: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
            return _interleaved(posenc.sinusoidal(p, d, dtype="float32"))

        def rope(layout: str) -> Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]:
            def run(p: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
                return _rope_columns(*posenc.rope_cos_sin(p, d, dtype="float32", layout=layout), layout)

            return run

        def decode(p: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
            # one position per call: the one-pass table of a decode step
            out = [posenc.rope_cos_sin(p[i : i + 1], d, dtype="float32") for i in range(len(p))]
            return _rope_columns(np.concatenate([o[0] for o in out]), np.concatenate([o[1] for o in out]), "half")

        def dense(p: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
            # dense positions (windows of a cache): rows gathered from an exact range table
            return _interleaved(np.concatenate([posenc.sinusoidal(q + np.arange(WINDOW), d, dtype="float32")[::STRIDE]
                                                for q in p]))

        out["range tables (add_sinusoidal with an offset)"] = Path("numpy", ("window",), ranges, _windows)
        out["RoPE range tables (rope_cos_sin(n, offset=...))"] = Path("numpy", ("window",), rope_ranges, _windows,
                                                                      rope=True)
        out["array positions (NumPy)"] = Path("numpy", ("int", "float"), array)
        out["RoPE cos/sin of array positions, interleaved"] = Path("numpy", ("int", "float"), rope("interleaved"),
                                                                   rope=True)
        out["RoPE cos/sin of array positions, half"] = Path("numpy", ("int", "float"), rope("half"), rope=True)
        out["RoPE decode step (one position per call)"] = Path("numpy", ("few",), decode, rope=True)
        def rope_dense(p: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
            rows = [posenc.rope_cos_sin(q + np.arange(WINDOW)[None], d, dtype="float32") for q in p]
            return _rope_columns(np.concatenate([c[0, ::STRIDE] for c, _ in rows]),
                                 np.concatenate([s[0, ::STRIDE] for _, s in rows]), "half")

        out["dense array positions (rows of a range table)"] = Path("numpy", ("window",), dense, _windows)
        out["RoPE of dense position ids (rows of a range table)"] = Path("numpy", ("window",), rope_dense, _windows,
                                                                         rope=True)
    if "strict" in backends:
        try:
            import array_api_strict as xps
        except ImportError:  # pragma: no cover
            xps = None
        if xps is not None:
            dev, cpu = xps.Device("no_float64"), xps.Device("CPU_DEVICE")

            def strict(p: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
                t = posenc.sinusoidal(xps.asarray(p, device=dev), d)
                return _interleaved(np.asarray(t.to_device(cpu)))

            out["array positions, no float64 (array-api-strict)"] = Path("strict", ("int", "float"), strict)
    if "torch" in backends:
        try:
            import torch
        except ImportError:  # pragma: no cover
            torch = None
        if torch is not None:

            def torch_cpu(p: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
                return _interleaved(posenc.sinusoidal(torch.from_numpy(p), d, dtype=torch.float32).numpy())

            def torch_ops(p: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
                # positions that require grad: torch's own operations, not the NumPy kernels
                pt = torch.from_numpy(p.astype(np.float64)).requires_grad_(True)
                c, s = posenc.rope_cos_sin(pt, d, dtype=torch.float32)
                return _rope_columns(c.detach().numpy(), s.detach().numpy(), "half")

            out["array positions (torch CPU)"] = Path("torch", ("int", "float"), torch_cpu)
            out["RoPE of positions that require grad (torch operations)"] = Path("torch", ("int", "float"),
                                                                                 torch_ops, rope=True)
    if "jax" in backends:
        try:
            import jax
            import jax.numpy as jnp
        except ImportError:  # pragma: no cover
            jax = None
        if jax is not None and not jax.config.jax_enable_x64:

            def jax32(p: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
                return _interleaved(jax.jit(lambda q: posenc.sinusoidal(q, d))(jnp.asarray(p)))

            out["array positions, no float64 (JAX without x64, jit)"] = Path("jax", ("int", "float"), jax32)
    return out


def _label(kind: str, lo: float, hi: float) -> str:
    lo_s = "0" if lo == 0 else f"2^{round(math.log2(lo))}"
    return f"{kind} |p| in [{lo_s}, 2^{round(math.log2(hi))})"


def sweep(n: int = 4096, dim: int = 128, seed: int = 0,
          backends: tuple[str, ...] = ("numpy", "strict", "torch", "jax")) -> dict[str, dict[str, float]]:
    """``{path: {range of positions: max |error|}}`` of posenc's float32
    tables, ``n`` random positions per range (log-uniform magnitudes, both
    signs, the ends of each range included)."""

    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, float]] = {}
    freqs = math_frequencies(dim)
    for name, path in paths(backends).items():
        # the mathematical frequencies 10000 ** (-2i/d) of both families (mpmath)
        w, w_rest = freqs
        cases: list[tuple[str, np.ndarray]] = []
        for lo, hi in INT_RANGES:
            if "int" in path.kinds:
                p = int_positions(rng, lo, hi, n)
                cases.append((_label("int", lo, hi), p.astype(np.int32) if path.backend in ("strict", "jax") else p))
            elif "few" in path.kinds:
                cases.append((_label("int", lo, hi), int_positions(rng, lo, hi, max(8, n // 64))))
            elif "window" in path.kinds:
                p = np.clip(int_positions(rng, lo, hi, max(4, n // 256)), -(2**31) + 1, 2**31 - WINDOW)
                cases.append((_label("int", lo, hi), p))
        if "float" in path.kinds:
            for lo, hi in FLOAT_RANGES:
                cases.append((_label("float", lo, hi), float_positions(rng, lo, hi, n)))
        res: dict[str, float] = {}
        for label, p in cases:
            s, c = path.run(p, dim)
            ts, tc = exact_angle_sincos(np.asarray(path.positions(p), dtype=np.float64).reshape(-1), w, w_rest)
            res[label] = float(max(np.abs(s.reshape(ts.shape) - ts).max(), np.abs(c.reshape(tc.shape) - tc).max()))
        out[name] = res
    return out


def sweep64(n: int = 2048, dim: int = 128, seed: int = 1) -> dict[str, float]:
    """``{range of positions: max |error|}`` of float64 tables of array positions (NumPy)."""
    import posenc

    w, w_rest = math_frequencies(dim)
    rng = np.random.default_rng(seed)
    res: dict[str, float] = {}
    cases = [(_label("int", lo, hi), int_positions(rng, lo, hi, n)) for lo, hi in INT64_RANGES]
    cases += [(_label("float", lo, hi), float_positions(rng, lo, hi, n, np.float64)) for lo, hi in FLOAT64_RANGES]
    for label, p in cases:
        s, c = _interleaved(posenc.sinusoidal(p, dim))
        ts, tc = exact_angle_sincos(p.astype(np.float64), w, w_rest)
        res[label] = float(max(np.abs(s - ts).max(), np.abs(c - tc).max()))
    return res


def report(res: dict[str, dict[str, float]], res64: dict[str, float] | None = None) -> str:
    """The sweep as an aligned text table."""
    lines = [f"{'float32 table':56s} {'positions':28s} max |error|"]
    for path, by_range in res.items():
        for label, err in by_range.items():
            lines.append(f"{path:56s} {label:28s} {err:.2e}")
    for label, err in (res64 or {}).items():
        lines.append(f"{'float64 table of array positions (NumPy)':56s} {label:28s} {err:.2e}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.accuracy", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="512 positions per range instead of 8192")
    ap.add_argument("--n", type=int, default=None, help="positions per range (overrides --quick)")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--backends", default="numpy,strict,torch,jax", help="comma-separated subset")
    args = ap.parse_args(argv)
    n = args.n or (512 if args.quick else 8192)
    res = sweep(n=n, dim=args.dim, backends=tuple(args.backends.split(",")))
    res64 = sweep64(n=max(256, n // 4), dim=args.dim)
    print(report(res, res64))
    worst = max(e for r in res.values() for e in r.values())
    ok = worst <= MARGIN * BOUND and max(res64.values()) <= BOUND64
    print(f"worst float32 error {worst:.2e} = {worst / BOUND:.2f}x the bound {BOUND:.1e} "
          f"(must be <= {MARGIN}x); worst float64 error {max(res64.values()):.1e} (bound {BOUND64:.0e}): "
          f"{'OK' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
