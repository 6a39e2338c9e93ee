"""The sweep of :func:`posenc.scaling.from_hf` over every RoPE model of the
installed ``transformers``; writes ``hf_sweep.json`` and ``docs/models.rst``.

Regenerate with (transformers 5.x on torch CPU)::

    python tests/posenc/data/make_hf_sweep.py

How the sweep works (``sweep()`` is also what the test suite runs):

1. Discovery: every ``transformers.models.<type>.modeling_*`` module whose
   source defines a class named ``*RotaryEmbedding*`` (found by reading the
   source, imported only then).  Each class is paired with its configuration
   class through the annotation of its ``config`` argument.
2. One instance of the configuration class with its defaults (the rotary
   modules carry no weights: the sizes cost nothing, and the defaults are
   the model's own head size, base, partial rotary factor and multimodal
   sections), plus the variants of ``VARIANTS`` (the key aliases and rope
   types seen in released ``config.json`` files).
3. The module's ``forward(x, position_ids[, layer_type])`` at positions on
   both sides of ``original_max_position_embeddings`` (or
   ``max_position_embeddings``), once with the ``float32`` casts of
   transformers lifted to ``float64`` (``lifted_float32``) and once as is.
4. ``posenc.scaling.from_hf(config[, layer_type=...])`` and then
   ``posenc.rope_cos_sin`` (or ``posenc.mrope_cos_sin`` when the result has
   ``mrope_section``) at the same positions, with ``seq_len = max + 1`` as
   transformers uses.  Each (class, layer type, variant) ends as

   * ``match``: float64 within ``RTOL64`` relative of the lifted module, and
     float32 within transformers' own float32 rounding (``atol32``);
   * ``refused``: ``from_hf`` raised ``ValueError`` (its message is kept);
   * ``mismatch``: anything else -- the test suite fails on it;
   * ``not a config RoPE``: the module does not take ``(x, position_ids)``
     with a text-model configuration (2-D vision, audio time stamps, ...);
     from_hf is not for them and they are listed apart.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
OUT = HERE / "hf_sweep.json"
DOCS = HERE.parents[2] / "docs" / "models.rst"

#: float64 tolerance against the lifted module, relative to the largest
#: angle p * w (two float64 computations of cos(p w) differ by about
#: p w 2**-53, whatever the method)
RTOL64 = 1e-12

#: extra configurations per model type: key aliases and rope types of
#: released checkpoints (name -> (model type, config keyword arguments))
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "llama linear": ("llama", {"rope_scaling": {"rope_type": "linear", "factor": 4.0}}),
    "llama dynamic": (
        "llama",
        {"max_position_embeddings": 64, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
    ),
    "llama yarn": (
        "llama",
        {
            "max_position_embeddings": 256,
            "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
        },
    ),
    "llama llama3": (
        "llama",
        {
            "rope_theta": 500000.0,
            "max_position_embeddings": 512,
            "rope_scaling": {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            },
        },
    ),
    "llama proportional": (
        "llama",
        {
            "rope_parameters": {
                "rope_type": "proportional",
                "rope_theta": 10000.0,
                "partial_rotary_factor": 0.25,
                "factor": 2.0,
            }
        },
    ),
    "phi3 longrope": (
        "phi3",
        {
            "hidden_size": 64,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "max_position_embeddings": 256,
            "original_max_position_embeddings": 64,
            "partial_rotary_factor": 0.5,
            "rope_scaling": {
                "rope_type": "longrope",
                "short_factor": [1.0 + 0.1 * i for i in range(8)],
                "long_factor": [1.0 + 0.9 * i for i in range(8)],
            },
        },
    ),
    "gpt_neox rotary_emb_base": ("gpt_neox", {"rotary_emb_base": 500.0, "rotary_pct": 0.25}),
    "gpt_neox_japanese rotary_emb_base": ("gpt_neox_japanese", {"rotary_emb_base": 500.0, "rotary_pct": 0.5}),
    "gemma3 rope_local_base_freq": ("gemma3_text", {"rope_theta": 1000000.0, "rope_local_base_freq": 10000.0}),
    "glm4v_text partial 0.5": (
        "glm4v_text",
        {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}},
    ),
    "qwen4_exp_text partial 0.25": (
        "qwen4_exp_text",
        {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}},
    ),
    "qwen2_vl_text sections": (
        "qwen2_vl_text",
        {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [16, 24, 24]}},
    ),
    "qwen3_vl_text interleaved": (
        "qwen3_vl_text",
        {
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 5e6,
                "mrope_section": [24, 20, 20],
                "mrope_interleaved": True,
            }
        },
    ),
    "qwen2 yarn": (
        "qwen2",
        {
            "max_position_embeddings": 256,
            "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
        },
    ),
}


# --------------------------------------------------------------------------
# float64 transformers
# --------------------------------------------------------------------------
@contextlib.contextmanager
def lifted_float32():
    """transformers' RoPE code in float64: ``torch.float`` / ``torch.float32``
    and ``Tensor.float()`` mean float64 inside the block (module attributes
    looked up at call time; nothing of torch's own kernels changes)."""
    import torch

    saved = (torch.float, torch.float32, torch.Tensor.float, torch.get_default_dtype())
    torch.float = torch.float64
    torch.float32 = torch.float64
    torch.Tensor.float = torch.Tensor.double
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.float, torch.float32, torch.Tensor.float = saved[:3]
        torch.set_default_dtype(saved[3])


# --------------------------------------------------------------------------
# discovery
# --------------------------------------------------------------------------
def discover() -> list[tuple[str, str, str]]:
    """``(model directory, modeling module, class name)`` of every rotary class."""
    import transformers.models

    root = Path(transformers.models.__path__[0])
    out = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        for f in sorted(d.glob("modeling_*.py")):
            src = f.read_text(encoding="utf-8")
            for cls in re.findall(r"^class (\w*RotaryEmbedding\w*)\(", src, re.M):
                out.append((d.name, f.stem, cls))
    return out


def _config_class(module: Any, cls: Any) -> Any:
    ann = inspect.signature(cls.__init__).parameters.get("config")
    if ann is None or ann.annotation is inspect.Parameter.empty:
        return None
    a = ann.annotation
    if isinstance(a, str):
        a = getattr(module, a.strip("'\""), None)
    return a if inspect.isclass(a) else None


# --------------------------------------------------------------------------
# one comparison
# --------------------------------------------------------------------------
def _positions(config: Any) -> list[int]:
    rp = getattr(config, "rope_parameters", None) or {}
    flat = [rp] + [v for v in rp.values() if isinstance(v, dict)]
    orig = None
    for p in flat:
        orig = orig or p.get("original_max_position_embeddings")
    orig = (
        orig
        or getattr(config, "original_max_position_embeddings", None)
        or getattr(config, "max_position_embeddings", None)
    )
    orig = int(orig or 2048)
    return [0, 1, 2, 7, orig - 1, orig, orig + 3]


def _module_tables(rot: Any, pid: Any, layer_type: str | None, dtype: Any) -> tuple[Any, Any]:
    """The module's cos and sin as float64 NumPy, rows flattened; a complex
    output (Llama 4, DeepSeek-V2: ``cos + i sin`` per pair) is split."""
    import torch

    x = torch.zeros(1, 1, 1, dtype=dtype)
    args = (x, pid) if layer_type is None else (x, pid, layer_type)
    out = rot(*args)
    if isinstance(out, torch.Tensor) and out.is_complex():
        cos, sin = out.real, out.imag
    else:
        cos, sin = out
    cos = cos.detach().to(torch.float64).numpy()
    sin = sin.detach().to(torch.float64).numpy()
    return cos.reshape(-1, cos.shape[-1]), sin.reshape(-1, sin.shape[-1])


#: how a module lays its table out: name -> (posenc layout, column slice)
FORMS = {
    "half": ("half", slice(None)),
    "interleaved": ("interleaved", slice(None)),
    "compact": ("half", "first"),  # cos of each frequency once (gpt-oss, complex rotations)
}


def _posenc_tables(kw: dict, pid: Any, dtype: Any, form: str) -> tuple[Any, Any]:
    import numpy as np

    import posenc

    layout, cols = FORMS[form]
    seq_len = int(pid.max()) + 1
    p = pid.numpy()
    fn = posenc.mrope_cos_sin if "mrope_section" in kw else posenc.rope_cos_sin
    cos, sin = fn(p, **kw, layout=layout, seq_len=seq_len, dtype=dtype)
    cos, sin = np.asarray(cos, np.float64), np.asarray(sin, np.float64)
    if cols == "first":
        cos, sin = cos[..., : kw["dim"] // 2], sin[..., : kw["dim"] // 2]
    return cos.reshape(-1, cos.shape[-1]), sin.reshape(-1, sin.shape[-1])


def _error(h: tuple[Any, Any], p: tuple[Any, Any]) -> tuple[float, float]:
    import numpy as np

    if h[0].shape != p[0].shape:
        return math.inf, 1.0
    err = max(float(np.max(np.abs(h[0] - p[0]))), float(np.max(np.abs(h[1] - p[1]))))
    scale = max(float(np.max(np.abs(h[0]))), float(np.max(np.abs(h[1]))), 1.0)
    return err, scale


def _freq_kw(kw: dict) -> dict:
    return {k: kw[k] for k in ("dim", "base", "scaling")}


def compare(config: Any, rot_cls: Any, layer_type: str | None) -> dict[str, Any]:
    """Compare one rotary module with posenc; the outcome as a dict."""
    import numpy as np
    import torch

    import posenc
    from posenc import scaling

    pos = _positions(config)
    try:
        kw = scaling.from_hf(config, layer_type=layer_type)
    except ValueError as exc:
        return {"status": "refused", "reason": str(exc)}
    if "mrope_section" in kw:  # three different rows: temporal, height, width
        pid = torch.tensor([pos, [p // 2 for p in pos], [max(p - 3, 0) for p in pos]], dtype=torch.int64)[:, None, :]
    else:
        pid = torch.tensor([pos], dtype=torch.int64)
    out: dict[str, Any] = {"status": "match", "dim": kw["dim"], "base": kw["base"], "scaling": repr(kw["scaling"])}
    if "mrope_section" in kw:
        out["mrope"] = f"{list(kw['mrope_section'])}{' interleaved' if kw['mrope_interleaved'] else ''}"
    with lifted_float32():
        h64 = _module_tables(rot_cls(config), pid, layer_type, torch.float64)
    h32 = _module_tables(rot_cls(config), pid, layer_type, torch.float32)
    best = None
    for form in FORMS:
        try:
            p64 = _posenc_tables(kw, pid, np.float64, form)
        except (ValueError, TypeError) as exc:
            return {**out, "status": "mismatch", "reason": f"posenc raised {type(exc).__name__}: {exc}"}
        err, scale = _error(h64, p64)
        scale *= max(1.0, max(pos) * float(np.max(posenc.rope_frequencies(**_freq_kw(kw)))))
        if best is None or err / scale < best[1]:
            best = (form, err / scale)
        if err <= RTOL64 * scale:
            break
    form, rel = best
    if not rel <= RTOL64:
        shape = f"the module's width {h64[0].shape[-1]}, posenc's dim {kw['dim']}"
        return {**out, "status": "mismatch", "reason": f"float64 differs by {rel:.3g} relative ({shape})"}
    out["form"], out["err64"] = form, rel
    err, scale = _error(h32, _posenc_tables(kw, pid, np.float32, form))
    # transformers rounds p * w to float32 (half an ulp of the angle) and its
    # frequencies carry about ln(base) * 2**-24 relative error
    tol = scale * (max(pos) * 2.0**-23 * (1.0 + math.log(max(kw["base"], 2.0))) + 4 * 2.0**-23)
    out["err32"] = err / scale
    if not err <= tol:
        return {**out, "status": "mismatch", "reason": f"float32 differs by {err:.3g} (tolerance {tol:.3g})"}
    return out


# --------------------------------------------------------------------------
# the sweep
# --------------------------------------------------------------------------
def _quiet() -> contextlib.AbstractContextManager:
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    try:
        from transformers.utils import logging as hf_logging

        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        stack.callback(hf_logging.set_verbosity, level)
    except Exception:  # pragma: no cover
        pass
    return stack


def _cases(model: str, modname: str, clsname: str) -> list[tuple[str, Any, Any]]:
    """``(label, config, rotary class)`` for one class: defaults and variants."""
    module = importlib.import_module(f"transformers.models.{model}.{modname}")
    cls = getattr(module, clsname)
    cfg_cls = _config_class(module, cls)
    params = list(inspect.signature(cls.__init__).parameters)[1:]
    fwd = list(inspect.signature(cls.forward).parameters)[1:]
    if cfg_cls is None or params[:1] != ["config"] or fwd[:2] != ["x", "position_ids"]:
        return []
    out = [("default", cfg_cls, cls, {})]
    mt = getattr(cfg_cls, "model_type", None)
    for label, (vt, kwargs) in VARIANTS.items():
        if vt == mt:
            out.append((label, cfg_cls, cls, kwargs))
    return out


def sweep(select: Any = None) -> dict[str, Any]:
    """Run the sweep; ``select(model_dir) -> bool`` restricts it."""
    import torch
    import transformers

    results: dict[str, Any] = {}
    with _quiet(), torch.no_grad():
        for model, modname, clsname in discover():
            if select is not None and not select(model):
                continue
            key = f"{model}.{clsname}"
            try:
                cases = _cases(model, modname, clsname)
            except Exception as exc:  # an optional dependency of one model
                results[key] = {"status": "not a config RoPE", "reason": f"import: {type(exc).__name__}"}
                continue
            if not cases:
                results[key] = {"status": "not a config RoPE", "reason": "signature"}
                continue
            for label, cfg_cls, cls, kwargs in cases:
                try:
                    config = _build(cfg_cls, cls, kwargs)
                except Exception as exc:
                    results[f"{key} {label}"] = {
                        "status": "not a config RoPE",
                        "reason": f"construction: {type(exc).__name__}: {str(exc)[:80]}",
                    }
                    continue
                layer_types = [None]
                if "layer_type" in inspect.signature(cls.forward).parameters:
                    rp = getattr(config, "rope_parameters", None) or {}
                    declared = (
                        set(getattr(config, "layer_types", None) or [])
                        | set(getattr(config, "_rope_type_labels", None) or [])
                    )
                    layer_types = sorted(
                        k for k, v in rp.items() if isinstance(v, dict) and (k in declared or not declared)
                    ) or [None]
                for lt in layer_types:
                    name = f"{key} {label}" + ("" if lt is None else f" [{lt}]")
                    try:
                        results[name] = {
                            "model_type": getattr(cfg_cls, "model_type", model),
                            **compare(config, cls, lt),
                        }
                    except Exception as exc:
                        results[name] = {
                            "model_type": getattr(cfg_cls, "model_type", model),
                            "status": "not a config RoPE",
                            "reason": f"forward: {type(exc).__name__}: {str(exc)[:80]}",
                        }
    return {"transformers": transformers.__version__, "results": results}


def _build(cfg_cls: Any, cls: Any, kwargs: dict) -> Any:
    """The configuration the rotary class takes: the class's own, or the
    text / sub-configuration of a composite one (as the model passes it)."""
    top = cfg_cls(**kwargs)
    candidates = [top]
    get_text = getattr(top, "get_text_config", None)
    if callable(get_text):
        candidates.append(get_text())
    for name in getattr(top, "sub_configs", {}) or {}:
        sub = getattr(top, name, None)
        if sub is not None and not isinstance(sub, (list, dict)):
            candidates.append(sub)
    err: Exception | None = None
    for c in candidates:
        try:
            cls(c)
            return c
        except Exception as exc:
            err = exc
    raise err  # type: ignore[misc]


def _flat(rp: Any) -> list[dict]:
    if not isinstance(rp, dict):
        return []
    nested = [v for v in rp.values() if isinstance(v, dict)]
    return nested or [rp]


def _rst(res: dict[str, Any]) -> str:
    rows = res["results"]
    counts = {s: sum(v["status"] == s for v in rows.values()) for s in ("match", "refused", "not a config RoPE")}
    total = counts["match"] + counts["refused"]
    lines = [
        ".. This page is written by tests/posenc/data/make_hf_sweep.py; do not edit by hand.",
        "",
        "Models covered by from_hf",
        "=========================",
        "",
        f"Every rotary-embedding module of transformers {res['transformers']} (found by walking",
        "``transformers.models.*.modeling_*`` for classes named ``*RotaryEmbedding*``), built",
        "from its configuration class (defaults, plus the key aliases and rope types of",
        "released ``config.json`` files), was compared with",
        ":func:`posenc.scaling.from_hf` followed by :func:`posenc.rope_cos_sin` (or",
        ":func:`posenc.mrope_cos_sin`) at positions on both sides of",
        "``original_max_position_embeddings``: float64 (transformers' float32 casts",
        "lifted) within 1e-12 of the largest angle, float32 within transformers' own",
        "rounding.  Each (module, layer type, variant) either matches or is refused by",
        "``from_hf`` with a ``ValueError`` naming what is unsupported.",
        "",
        (
            f"**{counts['match']} matched, {counts['refused']} refused, {total} in all**"
            f" ({counts['not a config RoPE']} more modules take no text-model configuration"
        ),
        "and are listed at the end).  Regenerate with",
        "``python tests/posenc/data/make_hf_sweep.py``; ``tests/posenc/test_hf_models.py``",
        "runs the same sweep.",
        "",
        "Column *table*: ``half`` is posenc's default layout; ``interleaved`` needs",
        "``layout=\"interleaved\"``; ``compact`` means the model keeps one column per",
        "frequency (the first ``dim // 2`` columns of the half table: gpt-oss, and the",
        "complex rotations of Llama 4 and DeepSeek-V2, which pair neighbours:",
        "``layout=\"interleaved\"`` for ``apply_rope``).  GPT-J and CodeGen have no rotary",
        "module (``create_sinusoidal_positions``); their full forward passes are tested",
        "with ``layout=\"interleaved\"``.",
        "",
        ".. list-table::",
        "   :header-rows: 1",
        "   :widths: 30 14 56",
        "",
        "   * - module [layer type] variant",
        "     - result",
        "     - from_hf / reason",
    ]
    other = []
    for k, v in rows.items():
        if v["status"] == "not a config RoPE":
            other.append(f"``{k}`` ({v.get('reason', '')})")
            continue
        if v["status"] == "match":
            extra = f"dim {v['dim']}, base {v['base']:g}, {v['scaling']}"
            if v.get("mrope"):
                extra += f", mrope {v['mrope']}"
            extra += f"; table {v['form']}"
            result = "match"
        else:
            extra, result = v["reason"], v["status"]
        extra = extra.replace("`", "'").replace("*", "\\*")
        lines += [f"   * - ``{k}``", f"     - {result}", f"     - {extra}"]
    lines += ["", "Not a configuration RoPE (2-D vision grids, audio time stamps, other signatures):", ""]
    lines += [f"* {o}" for o in other]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    res = sweep()
    for k, v in res["results"].items():
        print(f"{v['status']:18s} {k}  {v.get('reason', '')[:150]}")
    OUT.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    DOCS.write_text(_rst(res))
