"""posenc's exact RoPE tables in the layouts of fused kernels (``rope_cache``)."""

from __future__ import annotations

from hypothesis import strategies as st

import posenc  # noqa: F401 - builders look their function up as posenc.<name>
from tests.hardening._fuzz import Backend, Case, creation_kwargs

from ._draw import even_dim, out_dtype, rope_kwargs
from ._spec import Draw, register


@register("rope_cache", huge=(lambda: ((2**30, 2**12), {"format": "vllm"}),))
def _rope_cache(draw: Draw, be: Backend) -> Case:
    n = draw(st.integers(0, 40))
    dim = even_dim(draw, hi=32)
    fmt = draw(st.sampled_from(["vllm", "flashinfer", "flash_attn", "hf", "complex"]))
    kw = {"format": fmt, **rope_kwargs(draw, dim, seq_len=True)}
    kw.update(creation_kwargs(draw, be))
    if fmt == "complex":
        dt = be.ns.complex64
    elif fmt == "flashinfer":
        dt = be.ns.float32
    else:
        dk, dt = out_dtype(draw, be, half=True)
        kw.update(dk)
    if fmt == "hf":
        kw["layout"] = draw(st.sampled_from(["half", "interleaved"]))
    if fmt in ("flash_attn", "hf"):
        width = dim if fmt == "hf" else dim // 2
        return Case(be, (n, dim), kw, shape=((n, width),) * 2, dtype=dt, kind="arrays")
    return Case(be, (n, dim), kw, shape=(n, dim if fmt != "complex" else dim // 2), dtype=dt)
