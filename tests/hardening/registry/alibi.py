"""ALiBi and the cumulative gate bias: slopes, biases of lengths or of given
positions, the Forgetting Transformer's bias.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.hardening._fuzz import Backend, Case, creation_kwargs, real_dtypes

from ._draw import out_dtype, real_array, shapes
from ._spec import Draw, register
from .bias import _lengths


@register("alibi_slopes", huge=(lambda: ((2**41,), {}),))
def _alibi_slopes(draw: Draw, be: Backend) -> Case:
    h = draw(st.integers(1, 80))
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["max_bias"] = draw(st.floats(0.5, 16.0))
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    kw.update(creation_kwargs(draw, be))

    def check(r: Any) -> None:
        a = be.to_numpy(r)
        assert ((a > 0) & (a <= 1.0 + 1e-6)).all(), f"slopes outside (0, 1]: {a}"

    return Case(be, (h,), kw, shape=(h,), dtype=dt, check=check)


@register(
    "alibi_bias",
    # learned slopes (gradients flow to them) are not checked for NaN or inf: such slopes give NaN or inf entries
    data=("slopes",),
    aliases={
        "num_heads": ("slopes",),
        "slopes": ("num_heads",),
        # lengths and positions exclude each other: a conflict may be reported on either
        "positions": ("query_len", "key_len", "offset", "form", "key positions"),
        "query_len": ("positions",),
        "key_len": ("positions",),
        "offset": ("positions",),
        "form": ("positions",),
    },
    huge=(
        lambda: ((2**10, 2**16, 2**16), {}),
        lambda: ((2**10,), {"positions": np.broadcast_to(np.zeros(1, np.int64), (2**21,))}),
    ),
)
def _alibi_bias(draw: Draw, be: Backend) -> Case:
    h = draw(st.integers(1, 6))
    if draw(st.integers(0, 2)) == 0:
        return _alibi_at_positions(draw, be, h)
    args, kw, q, k = _lengths(draw)
    form = draw(st.sampled_from(["paper", "bloom", "mpt", None]))
    if form is not None:
        kw["form"] = form
    causal = draw(st.booleans())
    if causal or draw(st.booleans()):
        kw["causal"] = causal
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    if draw(st.booleans()):
        sl, _ = real_array(draw, be, (h,), 0.001, 1.0)
        kw["slopes"] = sl
        if kw.get("dtype") is None:
            dt = sl.dtype
    else:
        if draw(st.booleans()):
            kw["max_bias"] = draw(st.floats(0.5, 16.0))
        kw.update(creation_kwargs(draw, be))
    rows = q if (form in (None, "paper") or causal) else 1
    return Case(be, (h, *args), kw, shape=(h, rows, k), dtype=dt, finite="no-nan" if causal else "all")


def _alibi_at_positions(draw: Draw, be: Backend, h: int) -> Case:
    """``alibi_bias(h, positions=...)``: one array or a (query, key) pair, integer or float."""
    batch = draw(shapes(max_dims=2, max_side=3))
    q, k = draw(st.integers(0, 6)), draw(st.integers(0, 6))
    integer = draw(st.booleans())
    qp, _ = real_array(draw, be, batch + (q,), -1000, 1000, integer=integer)
    pair = draw(st.booleans())
    if pair:
        kb = batch[-1:] if draw(st.booleans()) else batch
        kp, _ = real_array(draw, be, kb + (k,), -1000, 1000, integer=integer)
        positions: Any = (qp, kp)
    else:
        positions, k = qp, q
    kw: dict[str, Any] = {"positions": positions}
    form = draw(st.sampled_from(["paper", "bloom", None]))
    if form is not None:
        kw["form"] = form
    causal = draw(st.booleans())
    if causal or draw(st.booleans()):
        kw["causal"] = causal
    dk, dt = out_dtype(draw, be)
    kw.update(dk)
    if draw(st.booleans()):
        sl, _ = real_array(draw, be, (h,), 0.001, 1.0)
        kw["slopes"] = sl
        if kw.get("dtype") is None:
            dt = sl.dtype
    elif draw(st.booleans()):
        kw["max_bias"] = draw(st.floats(0.5, 16.0))
    rows = q if (form in (None, "paper") or causal) else 1
    return Case(be, (h,), kw, shape=batch + (h, rows, k), dtype=dt, finite="no-nan" if causal else "all")


@register(
    "cumulative_gate_bias",
    aliases={"log_gates": ("backward_log_gates",), "backward_log_gates": ("log_gates", "causal")},
    huge=(lambda: ((np.broadcast_to(np.zeros(1), (2**21,)),), {}),),
)
def _cumulative_gate_bias(draw: Draw, be: Backend) -> Case:
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=5))
    dt_in = draw(st.sampled_from(real_dtypes(be)))
    g, _ = real_array(draw, be, shape, -20.0, 0.0, dtype=dt_in)
    kw: dict[str, Any] = {}
    causal = draw(st.booleans())
    if not causal or draw(st.booleans()):
        kw["causal"] = causal
    if not causal and draw(st.booleans()):
        kw["backward_log_gates"], _ = real_array(draw, be, shape, -20.0, 0.0, dtype=dt_in)
    dt = g.dtype
    if draw(st.booleans()):
        dk, dt = out_dtype(draw, be)
        if dk.get("dtype") is None:
            dt = g.dtype
        kw.update(dk)
    n = shape[-1]
    return Case(be, (g,), kw, shape=shape + (n,), dtype=dt, finite="no-nan" if causal else "all")
