"""posenc.scaling: the RoPE context-extension configurations and ``from_hf``.

They are configurations, not array computations: no dtype/device/xp trio
and no allocation of their own.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

import posenc
from tests.hardening._fuzz import Backend, Case

from ._draw import (
    base,
    even_dim,
)
from ._spec import Draw, register

#: why the configuration classes take no dtype/device/xp and allocate nothing
CONFIGURATION = "a configuration class: no array computation"


def _scaling_case(be: Backend, obj_args: tuple, obj_kwargs: dict, dim: int) -> Case:
    def check(obj: Any) -> None:
        from posenc import scaling as sc

        assert isinstance(obj, sc.Scaling)
        a = obj.attention_scaling()
        assert isinstance(a, float) and math.isfinite(a) and a > 0, f"attention_scaling() = {a!r}"
        w = np.asarray(posenc.rope_frequencies(dim, scaling=obj))
        assert w.shape == (dim // 2,) and np.isfinite(w).all() and (w > 0).all(), w

    return Case(be, obj_args, obj_kwargs, kind="object", check=check)


def _factor(draw: Draw) -> float:
    return draw(st.floats(0.01, 1000.0) | st.sampled_from([1, 2, 8, 1.0, 0.5]))


@register("scaling.Scaling", hostile=(), trio=CONFIGURATION, no_allocation=CONFIGURATION)
def _sc_base(draw: Draw, be: Backend) -> Case:
    def check(obj: Any) -> None:
        assert isinstance(obj, posenc.scaling.Scaling)

    return Case(be, (), {}, kind="object", check=check)


@register("scaling.Linear", trio=CONFIGURATION, no_allocation=CONFIGURATION)
def _sc_linear(draw: Draw, be: Backend) -> Case:
    return _scaling_case(be, (_factor(draw),), {}, even_dim(draw))


@register("scaling.NTK", trio=CONFIGURATION, no_allocation=CONFIGURATION)
def _sc_ntk(draw: Draw, be: Backend) -> Case:
    return _scaling_case(be, (_factor(draw),), {}, even_dim(draw))


@register("scaling.DynamicNTK", trio=CONFIGURATION, no_allocation=CONFIGURATION)
def _sc_dynamic(draw: Draw, be: Backend) -> Case:
    return _scaling_case(be, (_factor(draw), draw(st.integers(1, 2**20))), {}, even_dim(draw))


@register("scaling.YaRN", trio=CONFIGURATION, no_allocation=CONFIGURATION)
def _sc_yarn(draw: Draw, be: Backend) -> Case:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        slow = draw(st.floats(0.1, 8.0))
        kw["beta_slow"], kw["beta_fast"] = slow, slow * draw(st.floats(1.0, 64.0))
    if draw(st.booleans()):
        kw["mscale"] = draw(st.floats(0.1, 2.0))
        kw["mscale_all_dim"] = draw(st.floats(0.1, 2.0))
    if draw(st.booleans()):
        kw["attention_factor"] = draw(st.floats(0.1, 4.0))
    if draw(st.booleans()):
        kw["truncate"] = draw(st.booleans())
    return _scaling_case(be, (_factor(draw), draw(st.integers(1, 2**20))), kw, even_dim(draw))


@register("scaling.Llama3", trio=CONFIGURATION, no_allocation=CONFIGURATION)
def _sc_llama3(draw: Draw, be: Backend) -> Case:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        lo = draw(st.floats(0.1, 4.0))
        kw["low_freq_factor"], kw["high_freq_factor"] = lo, lo + draw(st.floats(0.1, 8.0))
    return _scaling_case(be, (_factor(draw), draw(st.integers(1, 2**20))), kw, even_dim(draw))


@register("scaling.Proportional", trio=CONFIGURATION, no_allocation=CONFIGURATION)
def _sc_proportional(draw: Draw, be: Backend) -> Case:
    dim = even_dim(draw, hi=32)
    fraction = draw(st.floats(0.0, 1.0))
    kw = {"factor": _factor(draw)} if draw(st.booleans()) else {}

    def check(obj: Any) -> None:
        from posenc import scaling as sc

        assert isinstance(obj, sc.Proportional) and obj.attention_scaling() == 1.0
        w = np.asarray(posenc.rope_frequencies(dim, scaling=obj))
        assert w.shape == (dim // 2,) and np.isfinite(w).all() and (w >= 0).all(), w
        assert int((w > 0).sum()) == int(fraction * dim // 2), (fraction, w)

    return Case(be, (fraction,), kw, kind="object", check=check)


@register(
    "scaling.LongRoPE",
    trio=CONFIGURATION,
    no_allocation="a configuration object (its factor lists are the user's)",
)
def _sc_longrope(draw: Draw, be: Backend) -> Case:
    dim = even_dim(draw, hi=32)
    m = dim // 2
    short = draw(st.lists(st.floats(0.5, 8.0), min_size=m, max_size=m))
    long = draw(st.lists(st.floats(0.5, 64.0), min_size=m, max_size=m))
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["factor"] = draw(st.floats(1.0, 64.0))
    mscales = draw(st.booleans())
    if mscales:  # PhiMoE's length-dependent attention factors (never with attention_factor)
        kw["short_mscale"], kw["long_mscale"] = draw(st.floats(0.5, 2.0)), draw(st.floats(0.5, 2.0))
    elif draw(st.booleans()):
        kw["attention_factor"] = draw(st.floats(0.1, 4.0))
    # L0 >= 2: the attention factor divides by log(L0)
    return _scaling_case(be, (short, long, draw(st.integers(2, 2**20))), kw, dim)


def hf_config(draw: Draw) -> tuple[dict, int]:
    heads = draw(st.integers(1, 8))
    head_dim = even_dim(draw, 2, 32)
    cfg: dict[str, Any] = {
        "hidden_size": heads * head_dim,
        "num_attention_heads": heads,
        "max_position_embeddings": draw(st.integers(64, 2**17)),
    }
    if draw(st.booleans()):
        cfg["rope_theta"] = base(draw)
    kind = draw(st.sampled_from(["default", "linear", "dynamic", "yarn", "llama3", None]))
    if kind is not None:
        # the rope type under its name of transformers 5, or the older "type", or both (equal)
        spelling = draw(st.sampled_from([("rope_type",), ("type",), ("rope_type", "type")]))
        entry: dict[str, Any] = dict.fromkeys(spelling, kind)
        if kind != "default":
            entry["factor"] = draw(st.floats(1.0, 32.0))
        if kind == "llama3":
            entry.update(original_max_position_embeddings=8192, low_freq_factor=1.0, high_freq_factor=4.0)
        if kind == "yarn" and draw(st.booleans()):  # at most the maximum (YaRN extends it)
            entry["original_max_position_embeddings"] = min(4096, cfg["max_position_embeddings"])
        if kind == "yarn" and draw(st.booleans()):
            entry.update(beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=draw(st.floats(0.5, 1.0)))
        if kind == "yarn" and draw(st.booleans()):
            entry["truncate"] = draw(st.booleans())
        if draw(st.booleans()):  # a key that does not change the tables (Ministral 3)
            entry["llama_4_scaling_beta"] = 0.1
        cfg[draw(st.sampled_from(["rope_scaling", "rope_parameters"]))] = entry
    return cfg, head_dim


@register(
    "scaling.from_hf",
    trio="returns keyword arguments (a dict), no array",
    no_allocation="reads a config dict",
)
def _sc_from_hf(draw: Draw, be: Backend) -> Case:
    cfg, head_dim = hf_config(draw)

    def check(out: Any) -> None:
        assert isinstance(out, dict) and set(out) >= {"dim", "base", "scaling"}, out
        assert out["dim"] == head_dim, (out, head_dim)
        w = np.asarray(posenc.rope_frequencies(**out))
        assert np.isfinite(w).all() and (w > 0).all()

    return Case(be, (cfg,), {}, kind="object", check=check)
