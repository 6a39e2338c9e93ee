"""The sweep of :func:`posenc.scaling.from_hf` over every RoPE model of the
installed ``transformers``, in every scaling variant its configuration
accepts; writes ``hf_sweep.json`` and ``docs/models.rst``.

Regenerate with (transformers 5.x on torch CPU)::

    python tests/posenc/data/make_hf_sweep.py

Compare the installed transformers (say, the newest release) with the
recorded ``hf_sweep.json`` without writing anything (exit status 1 if any
case is silent)::

    python tests/posenc/data/make_hf_sweep.py --compare

Rewrite ``docs/models.rst`` from the recorded ``hf_sweep.json`` alone (no
sweep, no transformers needed; ``tests/test_docs.py`` checks that the page
is this function of the record)::

    python tests/posenc/data/make_hf_sweep.py --page

How the sweep works (``sweep()`` is also what the test suite runs):

1. Discovery: every ``transformers.models.<type>.modeling_*`` module whose
   source defines a class named ``*RotaryEmbedding*`` (or DINOv3's
   ``*RopePositionEmbedding*``; found by reading the
   source, imported only then).  Each class is paired with its configuration
   class through the annotation of its ``config`` argument.
2. The configuration the module takes, built with its defaults (the rotary
   modules carry no weights: the sizes cost nothing, and the defaults are the
   model's own head size, base, partial rotary factor and multimodal
   sections), then once per scaling of ``SCALINGS`` (linear, dynamic, YaRN
   with and without truncation and with DeepSeek's ``mscale`` keys, Llama 3,
   LongRoPE, and the legacy ``rope_scaling`` / ``type`` spellings), applied
   to every per-layer-type entry, keeping the model's own base, partial
   factor and multimodal keys; and the model-specific variants of
   ``VARIANTS`` (key aliases of released ``config.json`` files).  A variant
   whose configuration or module raises is not a case: the model does not
   accept it.
3. The module's ``forward(x, position_ids[, layer_type])`` at two sets of
   positions, all below the original length and reaching past it
   (``original_max_position_embeddings``, else ``max_position_embeddings``),
   once with the ``float32`` casts of transformers lifted to ``float64``
   (``lifted_float32``) and once as is.
4. ``posenc.scaling.from_hf(config[, layer_type=...])`` and then
   ``posenc.rope_cos_sin`` (or ``posenc.mrope_cos_sin`` when the result has
   ``mrope_section``) at the same positions, without ``seq_len`` (posenc
   reads ``max(positions) + 1`` over all rows, as transformers does);
   ``from_hf(config.to_dict())`` must give the same
   keyword arguments (or refuse).  Each (class, layer type, variant) ends as

   * ``match``: float64 within ``RTOL64`` relative of the lifted module, and
     float32 within transformers' own float32 rounding (``atol32``);
   * ``refused``: ``from_hf`` raised ``ValueError`` naming a key (its message
     is kept);
   * ``mismatch`` (silent): anything else -- the test suite fails on it.

   A vision tower's module (``from_hf`` returns the keyword arguments of
   ``posenc.rope_axes_cos_sin``) is compared at its own position ids
   (``compare_axes``; Llama 4 vision and DINOv3, whose modules take no
   ids, through ``SPECIAL`` at the ids their models build).  A module
   whose defaults it cannot run (audio time stamps, other signatures) is
   listed apart as ``not a config RoPE``.
5. The rotation: the model's own ``apply_rotary_pos_emb`` (the one its
   attention calls) against :func:`posenc.apply_rope` in both layouts,
   compared by the attention scores it gives (so a permuted output, as
   DeepSeek's, counts as its layout): ``half`` or ``interleaved``, the
   ``layout=`` to pass to posenc.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib
import inspect
import json
import math
import re
import sys
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

#: the original context of the scaling variants (positions reach past it)
ORIG = 64

#: the scalings tried on every model: name -> (rope parameters, top-level
#: keyword arguments, legacy).  ``legacy`` spells them the older way
#: (``rope_scaling`` with ``type``, ``rope_theta`` at the top level).
#: ``{n}`` in a list stands for the module's number of frequencies.
SCALINGS: dict[str, tuple[dict[str, Any], dict[str, Any], bool]] = {
    "linear": ({"rope_type": "linear", "factor": 4.0}, {}, False),
    "dynamic": ({"rope_type": "dynamic", "factor": 2.0}, {"max_position_embeddings": ORIG}, False),
    "yarn": (
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": ORIG},
        {"max_position_embeddings": 4 * ORIG},
        False,
    ),
    "yarn truncate=False": (
        {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": ORIG,
            "beta_fast": 16.0,
            "beta_slow": 0.5,
            "truncate": False,
        },
        {"max_position_embeddings": 4 * ORIG},
        False,
    ),
    "yarn mscale": (
        {
            "rope_type": "yarn",
            "factor": 40.0,
            "original_max_position_embeddings": ORIG,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "mscale": 1.0,
            "mscale_all_dim": 0.8,
        },
        {"max_position_embeddings": 40 * ORIG},
        False,
    ),
    "llama3": (
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": ORIG,
        },
        {"max_position_embeddings": 8 * ORIG},
        False,
    ),
    "longrope": (
        {
            "rope_type": "longrope",
            "short_factor": "{n}",
            "long_factor": "{n}",
            "original_max_position_embeddings": ORIG,
        },
        {"max_position_embeddings": 4 * ORIG},
        False,
    ),
    "legacy linear": ({"type": "linear", "factor": 2.0}, {}, True),
    "legacy dynamic": ({"type": "dynamic", "factor": 2.0}, {"max_position_embeddings": ORIG}, True),
    "legacy yarn": (
        {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": ORIG},
        {"max_position_embeddings": 4 * ORIG},
        True,
    ),
}

#: rope-parameter keys a scaling variant keeps from the model's defaults
KEEP = ("rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved", "interleaved")

#: extra configurations per model type: key aliases of released checkpoints
#: (name -> (model type, config keyword arguments))
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
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
    "phi3 longrope partial": (
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
    "phimoe Phi-3.5-MoE": (
        "phimoe",
        {
            "hidden_size": 64,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "max_position_embeddings": 256,
            "original_max_position_embeddings": 64,
            "rope_scaling": {
                "type": "longrope",
                "short_factor": [1.0 + 0.1 * i for i in range(16)],
                "long_factor": [1.0 + 0.9 * i for i in range(16)],
                "short_mscale": 1.243,
                "long_mscale": 1.3,
                "original_max_position_embeddings": 64,
            },
        },
    ),
    "hunyuan_v1_dense alpha": (
        "hunyuan_v1_dense",
        {"rope_parameters": {"rope_type": "dynamic", "alpha": 1000.0, "factor": 1.0, "rope_theta": 10000.0}},
    ),
    "hunyuan_v1_moe alpha": (
        "hunyuan_v1_moe",
        {"rope_parameters": {"rope_type": "dynamic", "alpha": 1000.0, "factor": 1.0, "rope_theta": 10000.0}},
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
    "dbrx max_seq_len": ("dbrx", {"max_seq_len": ORIG, "rope_parameters": {"rope_type": "dynamic", "factor": 2.0}}),
}


# --------------------------------------------------------------------------
# float64 transformers
# --------------------------------------------------------------------------
#: the real (torch.float, torch.float32, Tensor.float, default dtype) while lifted
_REAL: list[tuple[Any, ...]] = []


def _set_torch(values: tuple[Any, ...]) -> None:
    import torch

    torch.float, torch.float32, torch.Tensor.float = values[:3]
    torch.set_default_dtype(values[3])


@contextlib.contextmanager
def lifted_float32():
    """transformers' RoPE code in float64: ``torch.float`` / ``torch.float32``
    and ``Tensor.float()`` mean float64 inside the block (module attributes
    looked up at call time; nothing of torch's own kernels changes).  posenc
    itself must run outside it (``unlifted``): its float32 work would
    silently become float64 work with float32's algorithm."""
    import torch

    saved = (torch.float, torch.float32, torch.Tensor.float, torch.get_default_dtype())
    _REAL.append(saved)
    _set_torch((torch.float64, torch.float64, torch.Tensor.double, torch.float64))
    try:
        yield
    finally:
        _set_torch(saved)
        _REAL.pop()


@contextlib.contextmanager
def unlifted():
    """The real torch dtypes inside a ``lifted_float32`` block (for posenc)."""
    import torch

    if not _REAL:
        yield
        return
    lifted = (torch.float, torch.float32, torch.Tensor.float, torch.get_default_dtype())
    _set_torch(_REAL[-1])
    try:
        yield
    finally:
        _set_torch(lifted)


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
            for cls in re.findall(r"^class (\w*(?:RotaryEmbedding|RopePositionEmbedding)\w*)\(", src, re.M):
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
def _original_length(config: Any) -> int:
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
    return int(orig or 2048)


def _position_sets(config: Any) -> list[list[int]]:
    """Positions all below the original length, and reaching past it."""
    orig = _original_length(config)
    short = sorted({0, 1, 2, min(7, orig - 1), orig - 1})
    return [short, short + [orig, orig + 3]]


def _pid(pos: list[int], rows: int) -> Any:
    """Position ids of shape ``(1, n)`` or ``(rows, 1, n)`` with different
    rows (temporal, height, width: the temporal one reaches furthest)."""
    import torch

    if rows == 1:
        return torch.tensor([pos], dtype=torch.int64)
    every = [pos, [p // 2 for p in pos], [max(p - 3, 0) for p in pos]]
    return torch.tensor(every[:rows], dtype=torch.int64)[:, None, :]


def _module_out(rot: Any, pid: Any, layer_type: str | None, dtype: Any) -> tuple[Any, Any]:
    """The module's two outputs as float64 NumPy, rows flattened; a complex
    output (Llama 4, DeepSeek-V2: ``cos + i sin`` per pair) is split.

    Rows of position ids (``pid`` of shape ``(rows, 1, n)``) must come out as
    one table per row (``(rows, 1, n, width)``) or combined (``(1, n,
    width)``, multimodal RoPE); anything else raises ``ValueError``: the
    module does not take such rows (the modules of transformers 5.18 and
    earlier take ids of shape ``(batch, n)`` through a batched matmul, which
    broadcasts three rows into a table of another shape without an error)."""
    import torch

    x = torch.zeros(1, 1, 1, dtype=dtype)
    args = (x, pid) if layer_type is None else (x, pid, layer_type)
    out = rot(*args)
    if isinstance(out, torch.Tensor) and out.is_complex():
        a, b = out.real, out.imag
    else:
        a, b = out
    if pid.ndim == 3 and tuple(a.shape[:-1]) not in (tuple(pid.shape), tuple(pid.shape[1:])):
        raise ValueError(f"position ids of shape {tuple(pid.shape)} give a table of shape {tuple(a.shape)}")
    a = a.detach().to(torch.float64).numpy()
    b = b.detach().to(torch.float64).numpy()
    return a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])


#: how a module lays its table out: name -> (posenc layout, columns, (sin, cos) order)
FORMS = {
    "half": ("half", "all", False),
    "interleaved": ("interleaved", "all", False),
    "compact": ("half", "first", False),  # cos of each frequency once (gpt-oss, complex rotations)
    "compact (sin, cos)": ("half", "first", True),  # GPT-J, CodeGen
}


def _posenc_tables(kw: dict, pid: Any, dtype: Any, layout: str) -> tuple[Any, Any]:
    import numpy as np

    import posenc

    # no seq_len: posenc reads max(positions) + 1 from the (concrete) positions, as transformers does
    fn = posenc.mrope_cos_sin if "mrope_section" in kw else posenc.rope_cos_sin
    cos, sin = fn(pid.numpy(), **kw, layout=layout, dtype=dtype)
    return np.asarray(cos, np.float64), np.asarray(sin, np.float64)


def _as_form(kw: dict, tables: tuple[Any, Any], form: str) -> tuple[Any, Any]:
    _, cols, swapped = FORMS[form]
    cos, sin = tables
    if cols == "first":
        cos, sin = cos[..., : kw["dim"] // 2], sin[..., : kw["dim"] // 2]
    cos, sin = cos.reshape(-1, cos.shape[-1]), sin.reshape(-1, sin.shape[-1])
    return (sin, cos) if swapped else (cos, sin)


def _error(h: tuple[Any, Any], p: tuple[Any, Any]) -> tuple[float, float]:
    import numpy as np

    if h[0].shape != p[0].shape or h[1].shape != p[1].shape:
        return math.inf, 1.0
    err = max(float(np.max(np.abs(h[0] - p[0]))), float(np.max(np.abs(h[1] - p[1]))))
    scale = max(float(np.max(np.abs(h[0]))), float(np.max(np.abs(h[1]))), 1.0)
    return err, scale


def _freq_kw(kw: dict) -> dict:
    return {k: kw[k] for k in ("dim", "base", "scaling")}


def _dict_of(config: Any) -> dict:
    """The configuration as a ``config.json`` holds it."""
    d = config.to_dict()
    d.setdefault("model_type", getattr(config, "model_type", None))
    return d


def _same_kw(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k] == b[k] for k in a)


# --------------------------------------------------------------------------
# vision towers: RoPE over several axes
# --------------------------------------------------------------------------
def _axes_ids(n_axes: int) -> Any:
    """Position ids ``(N, n_axes)`` for a vision rotary module: a 3 x 4 grid
    (each column its own values) and large ids (float32 rounding)."""
    import torch

    rows = [[i, j, i + j][:n_axes] for i in range(3) for j in range(4)]
    rows += [[255, 7, 63][:n_axes], [1000, 300, 31][:n_axes], [0, 999, 500][:n_axes]]
    return torch.tensor(rows, dtype=torch.int64)


def _axes_tables(kw: dict, ids: Any, dtype: Any, compact: bool = False) -> tuple[Any, Any]:
    """posenc's tables as float64 NumPy (``compact``: one column per plane
    of the interleaved layout, as a complex table holds them)."""
    import numpy as np

    import posenc

    cos, sin = posenc.rope_axes_cos_sin(np.asarray(ids), **kw, dtype=dtype)
    cos, sin = np.asarray(cos, np.float64), np.asarray(sin, np.float64)
    return (cos[..., 0::2], sin[..., 0::2]) if compact else (cos, sin)


def _axes_read(kw: dict) -> str:
    """What from_hf read for a vision tower, in words."""
    if "freqs" in kw:
        return f"freqs {tuple(kw['freqs'].shape)}, layout {kw['layout']}"
    extra = ", turns" if kw.get("turns") else ""
    return f"axes_dim {list(kw['axes_dim'])}, base {kw['base']:g}, layout {kw['layout']}, split {kw['split']}{extra}"


def _axes_errors(h64: Any, h32: Any, kw: dict, ids: Any, compact: bool = False) -> tuple[float, float, float]:
    """float64 error relative to the largest angle, float32 error and its tolerance."""
    import numpy as np

    p64 = _axes_tables(kw, ids, np.float64, compact)
    err, scale = _error(h64, p64)
    top = float(np.max(np.abs(np.asarray(ids, np.float64))))
    if kw.get("turns"):
        top *= 2 * math.pi
    base = kw.get("base", 10000.0)
    rel = err / (scale * max(1.0, top))
    err32, scale32 = _error(h32, _axes_tables(kw, ids, np.float32, compact))
    # transformers rounds p * w to float32 (half an ulp of the angle), its
    # frequencies carry about ln(base) * 2**-24 relative error
    tol = scale32 * (top * 2.0**-23 * (1.0 + math.log(max(base, 2.0))) + 4 * 2.0**-23)
    return rel, err32, tol


def _same_axes_kw(a: dict, b: dict) -> bool:
    import numpy as np

    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k]) if k == "freqs" else a[k] == b[k] for k in a
    )


def compare_axes(config: Any, rot_cls: Any, kw: dict, out: dict) -> dict[str, Any]:
    """A vision tower's rotary module ``forward(x, position_ids)`` against
    ``rope_axes_cos_sin(ids, **from_hf(config))`` at the module's own ids."""
    import torch

    out = {**out, "read": _axes_read(kw)}
    n_axes = 2 if "freqs" in kw else len(kw["axes_dim"])
    ids = _axes_ids(n_axes)
    with lifted_float32():
        h64 = _module_out(rot_cls(config), ids, None, torch.float64)
    h32 = _module_out(rot_cls(config), ids, None, torch.float32)
    rel, err32, tol = _axes_errors(h64, h32, kw, ids.numpy())
    if not rel <= RTOL64:
        return {**out, "status": "mismatch", "reason": f"float64 differs by {rel:.3g} relative (axes)"}
    if not err32 <= tol:
        return {**out, "status": "mismatch", "reason": f"float32 differs by {err32:.3g} (tolerance {tol:.3g})"}
    return {**out, "form": "axes", "err64": rel, "err32": err32}


def _llama4_vision(module: Any, cls: Any) -> tuple[Any, Any, Any, Any]:
    """Llama 4's vision module: its whole table (complex, one column per
    plane) from the config's image size, the ids the model uses."""
    import posenc

    config = module.Llama4VisionConfig(image_size=112, patch_size=14)
    n = config.image_size // config.patch_size
    ids = posenc.grid_ids((n, n), offset=1, indexing="xy", suffix_tokens=1)

    def run():
        out = cls(config).freqs_ci
        return out.real.reshape(out.shape[0], -1), out.imag.reshape(out.shape[0], -1)

    return config, ids, run, "compact"


def _dinov3(module: Any, cls: Any) -> tuple[Any, Any, Any, Any]:
    """DINOv3's module (eval mode) on a 3 x 5 patch image, the centred ids."""
    import torch

    import posenc

    name = "DINOv3ViTConfig" if hasattr(module, "DINOv3ViTConfig") else "EomtDinov3Config"
    config = getattr(module, name)(hidden_size=64, num_attention_heads=2, patch_size=4)
    ids = posenc.grid_ids((3, 5), normalize="separate")

    def run():
        pix = torch.zeros(1, 3, 12, 20, dtype=torch.get_default_dtype())
        return cls(config).eval()(pix)

    return config, ids, run, "half"


#: rotary modules of vision towers whose forward takes no position ids:
#: class name -> (the module and class -> (config, posenc's ids, the module's
#: table, how it lays it out))
SPECIAL = {
    "Llama4VisionRotaryEmbedding": _llama4_vision,
    "DINOv3ViTRopePositionEmbedding": _dinov3,
    "EomtDinov3RotaryEmbedding": _dinov3,
}


def compare_special(module: Any, cls: Any) -> dict[str, Any]:
    """A vision tower's rotary module of :data:`SPECIAL` against
    ``rope_axes_cos_sin(ids, **from_hf(config))`` at the model's own ids."""
    import numpy as np
    import torch

    from posenc import scaling

    config, ids, run, form = SPECIAL[cls.__name__](module, cls)
    mt = {"model_type": config.model_type}
    try:
        kw = scaling.from_hf(config)
    except ValueError as exc:
        return {**mt, "status": "refused", "reason": str(exc)}
    if "dim" in kw or not _same_axes_kw(kw, scaling.from_hf(_dict_of(config))):
        return {**mt, "status": "mismatch", "reason": f"from_hf reads no axes, or its dict differs: {kw!r}"}
    out = {**mt, "status": "match", "read": _axes_read(kw)}

    def table() -> tuple[Any, Any]:
        c, s = run()
        c = c.detach().to(torch.float64).numpy().reshape(-1, c.shape[-1])
        s = s.detach().to(torch.float64).numpy().reshape(-1, s.shape[-1])
        return c, s

    with lifted_float32():
        h64 = table()
    h32 = table()
    rel, err32, tol = _axes_errors(h64, h32, kw, np.asarray(ids), form == "compact")
    if not rel <= RTOL64:
        return {**out, "status": "mismatch", "reason": f"float64 differs by {rel:.3g} relative (axes)"}
    if not err32 <= tol:
        return {**out, "status": "mismatch", "reason": f"float32 differs by {err32:.3g} (tolerance {tol:.3g})"}
    return {**out, "form": "axes", "err64": rel, "err32": err32}


def compare(config: Any, rot_cls: Any, layer_type: str | None) -> dict[str, Any]:
    """Compare one rotary module with posenc; the outcome as a dict."""
    import numpy as np
    import torch

    import posenc
    from posenc import scaling

    try:
        kw = scaling.from_hf(config, layer_type=layer_type)
    except ValueError as exc:
        return {"status": "refused", "reason": str(exc)}
    if "dim" not in kw:  # a vision tower: RoPE over several axes
        try:
            kw_dict = scaling.from_hf(_dict_of(config), layer_type=layer_type)
        except ValueError as exc:
            return {"status": "mismatch", "reason": f"from_hf(config.to_dict()) refuses: {exc}"}
        if not _same_axes_kw(kw, kw_dict):
            return {"status": "mismatch", "reason": f"from_hf(config.to_dict()) differs: {kw_dict!r}"}
        return compare_axes(config, rot_cls, kw, {"status": "match"})
    out: dict[str, Any] = {"status": "match", "dim": kw["dim"], "base": kw["base"], "scaling": repr(kw["scaling"])}
    if "mrope_section" in kw:
        out["mrope"] = f"{list(kw['mrope_section'])}{' interleaved' if kw['mrope_interleaved'] else ''}"
    try:
        kw_dict = scaling.from_hf(_dict_of(config), layer_type=layer_type)
    except ValueError as exc:
        out["dict"] = f"refused: {exc}"
    else:
        if not _same_kw(kw, kw_dict):
            return {**out, "status": "mismatch", "reason": f"from_hf(config.to_dict()) differs: {kw_dict!r}"}
    form = rows = None
    err64 = err32 = 0.0
    for pos in _position_sets(config):
        # the module gets three (then two) different rows of positions where
        # it takes them: a multimodal module that from_hf reads as plain RoPE
        # differs (its rows are recombined, not a batch of three)
        h64 = None
        for n in (3, 2, 1) if rows is None else (rows,):
            pid = _pid(pos, n)
            try:
                with lifted_float32():
                    h64 = _module_out(rot_cls(config), pid, layer_type, torch.float64)
                h32 = _module_out(rot_cls(config), pid, layer_type, torch.float32)
            except IndexError:  # a table of max_position_embeddings rows (GPT-J, CodeGen): the short positions only
                h64 = None
                out["positions"] = "below max_position_embeddings"
                break
            except Exception:  # the module takes no such rows
                if n == 1:
                    raise
                continue
            rows = n
            break
        if h64 is None:
            continue
        if "mrope_section" in kw and rows != 3:
            return {**out, "status": "mismatch", "reason": "from_hf says M-RoPE; the module takes no 3 rows"}
        try:
            p64 = {layout: _posenc_tables(kw, pid, np.float64, layout) for layout in ("half", "interleaved")}
        except (ValueError, TypeError) as exc:
            return {**out, "status": "mismatch", "reason": f"posenc raised {type(exc).__name__}: {exc}"}
        top = max(pos) * float(np.max(posenc.rope_frequencies(**_freq_kw(kw))))
        best = None
        for f in FORMS if form is None else (form,):
            err, scale = _error(h64, _as_form(kw, p64[FORMS[f][0]], f))
            scale *= max(1.0, top)
            if best is None or err / scale < best[1]:
                best = (f, err / scale)
            if err <= RTOL64 * scale:
                break
        f, rel = best
        if not rel <= RTOL64:
            shape = f"the module's width {h64[0].shape[-1]}, posenc's dim {kw['dim']}"
            return {
                **out,
                "status": "mismatch",
                "reason": f"float64 differs by {rel:.3g} relative at positions up to {max(pos)} ({shape})",
            }
        form, err64 = f, max(err64, rel)
        p32 = _as_form(kw, _posenc_tables(kw, pid, np.float32, FORMS[form][0]), form)
        err, scale = _error(h32, p32)
        # transformers rounds p * w to float32 (half an ulp of the angle) and its
        # frequencies carry about ln(base) * 2**-24 relative error
        tol = scale * (max(pos) * 2.0**-23 * (1.0 + math.log(max(kw["base"], 2.0))) + 4 * 2.0**-23)
        err32 = max(err32, err / scale)
        if not err <= tol:
            return {**out, "status": "mismatch", "reason": f"float32 differs by {err:.3g} (tolerance {tol:.3g})"}
    if form is None:
        return {**out, "status": "mismatch", "reason": "no positions could be compared"}
    out["form"], out["err64"], out["err32"] = form, err64, err32
    return out


# --------------------------------------------------------------------------
# the rotation layout, from the model's own apply function
# --------------------------------------------------------------------------
def _apply_function(module: Any, config: Any) -> Any:
    """The apply function the model's attention calls (DeepSeek-style models
    take the interleaved one when ``rope_interleave``, some always)."""
    inter = getattr(module, "apply_rotary_pos_emb_interleave", None)
    plain = getattr(module, "apply_rotary_pos_emb", None)
    if inter is not None and (plain is None or getattr(config, "rope_interleave", False)):
        return inter
    return plain or getattr(module, "apply_rotary_emb", None)


_Q_NAMES = ("q", "x", "tensor", "query", "xq")
_K_NAMES = ("k", "key", "xk", "v")


def _apply_model(fn: Any, out: Any, q: Any, k: Any, n: int, width: int) -> tuple[Any, Any] | None:
    """The model's apply function on ``q`` and ``k`` with its own tables
    ``out``, as ``(n, width)`` NumPy arrays; None where it cannot be called so."""
    names = list(inspect.signature(fn).parameters)
    for shape in ((1, 1, n, width), (1, n, 1, width)):
        qq, kk = q.reshape(shape), k.reshape(shape)
        args: dict[str, Any] = {}
        for name in names:
            if name in _Q_NAMES:
                args[name] = qq
            elif name in _K_NAMES:
                args[name] = kk
            elif name in ("freqs_cis", "freqs_ci"):
                args[name] = out
            elif name in ("cos", "sin") and isinstance(out, tuple):
                # the module's own order: (cos, sin), or GPT-J's (sin, cos) for apply(tensor, sin, cos)
                first = "sin" if names.index("sin") < names.index("cos") else "cos"
                args[name] = out[0] if name == first else out[1]
        has_k = any(name in _K_NAMES for name in names)
        try:
            if has_k:
                rq, rk = fn(**args)[:2]
            else:
                qname = next(name for name in names if name in _Q_NAMES)
                rq, rk = fn(**args), fn(**{**args, qname: kk})
        except Exception:  # another calling convention
            continue
        if tuple(rq.shape) != shape or tuple(rk.shape) != shape:
            continue
        return rq.reshape(n, width).numpy(), rk.reshape(n, width).numpy()
    return None


def _axes_rotation(module: Any, rot_cls: Any, config: Any, kw: dict) -> str:
    """A vision tower's apply function with its module's tables against
    ``apply_rope(x, *rope_axes_cos_sin(ids, **kw), layout=kw["layout"])``:
    the layout when the attention scores agree, ``"differs"`` when they do
    not, ``"?"`` where the function cannot be called."""
    import numpy as np
    import torch

    import posenc

    fn = next(
        (getattr(module, name) for name in ("apply_rotary_pos_emb_vision", "apply_rotary_pos_emb_2d",
                                             "apply_rotary_pos_emb") if hasattr(module, name)),
        None,
    )
    if fn is None:
        return "?"
    ids = _axes_ids(2 if "freqs" in kw else len(kw["axes_dim"]))
    gen = torch.Generator().manual_seed(0)
    with lifted_float32(), torch.no_grad():
        out = rot_cls(config)(torch.zeros(1, 1, 1, dtype=torch.float64), ids)
        out = tuple(o.reshape(-1, o.shape[-1]) for o in out)
        n, width = int(out[0].shape[0]), int(out[0].shape[-1])
        q = torch.randn(1, 1, n, width, generator=gen, dtype=torch.float64)
        k = torch.randn(1, 1, n, width, generator=gen, dtype=torch.float64)
        got = _apply_model(fn, out, q, k, n, width)
    if got is None:
        return "?"
    c, s = posenc.rope_axes_cos_sin(ids.numpy(), **kw, dtype=np.float64)
    rq, rk = (posenc.apply_rope(v.reshape(n, width).numpy(), c, s, layout=kw["layout"]) for v in (q, k))
    scores, ours = got[0] @ got[1].T, rq @ rk.T
    if np.allclose(scores, ours, rtol=1e-9, atol=1e-9 * float(np.abs(ours).max())):
        return kw["layout"]
    return "differs"


def rotation(module: Any, rot_cls: Any, config: Any, layer_type: str | None) -> str:
    """``"half"`` or ``"interleaved"``: the layout whose ``apply_rope`` gives
    the attention scores of the model's own apply function with its own
    tables; ``"?"`` where that function cannot be called this way."""
    import numpy as np
    import torch

    import posenc
    from posenc import scaling

    try:
        kw = scaling.from_hf(config, layer_type=layer_type)
    except ValueError:
        return "?"
    if "dim" not in kw:
        return _axes_rotation(module, rot_cls, config, kw)
    fn = _apply_function(module, config)
    if fn is None:
        return "?"
    pos = [0, 1, 2, 5, 11, 17]
    n, width = len(pos), kw["dim"]
    pid = _pid(pos, 3 if "mrope_section" in kw else 1)
    gen = torch.Generator().manual_seed(0)
    with lifted_float32(), torch.no_grad():
        x = torch.zeros(1, 1, 1, dtype=torch.float64)
        out = rot_cls(config)(*((x, pid) if layer_type is None else (x, pid, layer_type)))
        q = torch.randn(1, 1, n, width, generator=gen, dtype=torch.float64)
        k = torch.randn(1, 1, n, width, generator=gen, dtype=torch.float64)
        got = _apply_model(fn, out, q, k, n, width)
    if got is None:
        return "?"
    scores = got[0] @ got[1].T
    qn, kn = q.reshape(n, width).numpy(), k.reshape(n, width).numpy()
    for layout in ("half", "interleaved"):
        c, s = _posenc_tables(kw, pid, np.float64, layout)
        c, s = c.reshape(n, width), s.reshape(n, width)
        for sign, label in ((1.0, layout), (-1.0, f"{layout}, sin negated")):  # NanoChat turns the other way
            rq, rk = (posenc.apply_rope(v, c, sign * s, layout=layout) for v in (qn, kn))
            ours = rq @ rk.T
            if np.allclose(scores, ours, rtol=1e-9, atol=1e-9 * float(np.abs(ours).max())):
                return label
    return "?"


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


def _build(cfg_cls: Any, cls: Any, kwargs: dict) -> Any:
    """The configuration the rotary class takes: the class's own, or the
    text / sub-configuration of a composite one (as the model passes it)."""
    top = cfg_cls(**copy.deepcopy(kwargs))
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


def _layer_types(config: Any, cls: Any) -> list[str | None]:
    if "layer_type" not in inspect.signature(cls.forward).parameters:
        return [None]
    rp = getattr(config, "rope_parameters", None) or {}
    declared = set(getattr(config, "layer_types", None) or []) | set(getattr(config, "_rope_type_labels", None) or [])
    return sorted(k for k, v in rp.items() if isinstance(v, dict) and (k in declared or not declared)) or [None]


def _n_freq(rot: Any, layer_type: str | None) -> int | None:
    inv = getattr(rot, "inv_freq" if layer_type is None else f"{layer_type}_inv_freq", None)
    return None if inv is None else int(inv.numel())


def _scaling_kwargs(config: Any, cls: Any, name: str) -> dict | None:
    """Keyword arguments of the configuration class for the scaling ``name``
    applied to ``config`` (every per-layer-type entry), or None."""
    params, top, legacy = SCALINGS[name]
    rp = copy.deepcopy(getattr(config, "rope_parameters", None) or {})
    rot = cls(config)
    nested = {k: v for k, v in rp.items() if isinstance(v, dict)}
    entries = nested or {None: rp}
    new = {}
    for lt, entry in entries.items():
        n = _n_freq(rot, lt)
        e = {k: entry[k] for k in KEEP if k in entry}
        for k, v in params.items():
            if v == "{n}":
                if n is None:
                    return None
                v = [1.0 + (0.05 if k == "short_factor" else 0.5) * i for i in range(n)]
            e[k] = v
        new[lt] = e
    kwargs = dict(top)
    if nested:
        kwargs["rope_parameters"] = {**{k: v for k, v in rp.items() if k not in nested}, **new}
    elif legacy:
        entry = new[None]
        theta = entry.pop("rope_theta", None)
        kwargs["rope_scaling"] = entry
        if theta is not None:
            kwargs["rope_theta"] = theta
    else:
        kwargs["rope_parameters"] = new[None]
    return kwargs


def _cases(model: str, modname: str, clsname: str) -> tuple[Any, Any, Any, list[tuple[str, Any]], list[str]]:
    """The modeling module, the rotary class, its default configuration and
    ``(label, config)`` of every variant it accepts (raises where it takes no
    text-model configuration)."""
    module = importlib.import_module(f"transformers.models.{model}.{modname}")
    cls = getattr(module, clsname)
    cfg_cls = _config_class(module, cls)
    params = list(inspect.signature(cls.__init__).parameters)[1:]
    fwd = list(inspect.signature(cls.forward).parameters)[1:]
    if cfg_cls is None or params[:1] != ["config"] or fwd[:2] != ["x", "position_ids"]:
        raise TypeError("signature")
    default = _build(cfg_cls, cls, {})
    ccls = type(default)
    out: list[tuple[str, Any]] = [("default", default)]
    skipped: list[str] = []
    mt = getattr(ccls, "model_type", None)
    # the scalings, where the configuration class takes RoPE parameters at all
    # (GPT-J's, CodeGen's and ESM's would only keep them as unread attributes)
    takes = "rope_parameters" in (getattr(ccls, "__dataclass_fields__", None) or {})
    todo = [(name, lambda name=name: _scaling_kwargs(default, cls, name)) for name in SCALINGS if takes]
    if not takes:
        skipped += list(SCALINGS)
    todo += [(label, lambda kw=kw: copy.deepcopy(kw)) for label, (vt, kw) in VARIANTS.items() if vt == mt]
    for name, make in todo:
        config = _accepted(ccls, cls, default, make)
        if config is None:  # the model does not take this scaling
            skipped.append(name)
        else:
            out.append((name, config))
    return module, cls, default, out, skipped


def _attr(config: Any, name: str, default: Any = None) -> Any:
    try:
        return getattr(config, name, default)
    except Exception:  # attributes that refuse to be read globally (per-layer configurations)
        return default


def _accepted(ccls: Any, cls: Any, default: Any, make: Any) -> Any:
    """The configuration ``ccls(**make())`` if the rotary class takes it,
    else the same with an explicit ``head_dim`` (the scalings of transformers
    read ``config.head_dim``, which many configuration classes leave None),
    else None."""
    try:
        kwargs = make()
    except Exception:
        return None
    if kwargs is None:
        return None
    tries = [kwargs]
    hidden, heads = _attr(default, "hidden_size"), _attr(default, "num_attention_heads")
    if _attr(default, "head_dim", 0) is None and isinstance(hidden, int) and isinstance(heads, int) and heads:
        tries.append({**kwargs, "head_dim": hidden // heads})
    for kw in tries:
        try:
            config = ccls(**copy.deepcopy(kw))
            cls(config)
        except Exception:
            continue
        return config
    return None


def sweep(select: Any = None, *, variants: Any = True, rotations: bool = True) -> dict[str, Any]:
    """Run the sweep; ``select(model_dir) -> bool`` restricts it to some
    model directories, ``variants`` (a bool, or ``(model_dir) -> bool``) to
    the defaults of the others, and ``rotations=False`` skips the rotation
    layouts (for the models page)."""
    import torch
    import transformers

    results: dict[str, Any] = {}
    layouts: dict[str, str] = {}
    not_accepted: dict[str, list[str]] = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tables: a second thread only costs (a factor 40 on 2 busy cores)
    with contextlib.ExitStack() as stack, _quiet(), torch.no_grad():
        stack.callback(torch.set_num_threads, threads)
        for model, modname, clsname in discover():
            if select is not None and not select(model):
                continue
            key = f"{model}.{clsname}"
            if clsname in SPECIAL:  # a vision tower's module without position ids
                module = importlib.import_module(f"transformers.models.{model}.{modname}")
                try:
                    results[f"{key} default"] = compare_special(module, getattr(module, clsname))
                except Exception as exc:
                    results[key] = {"status": "not a config RoPE", "reason": _why(exc)}
                continue
            try:
                module, cls, default, cases, skipped = _cases(model, modname, clsname)
            except Exception as exc:  # an optional dependency, another signature
                results[key] = {"status": "not a config RoPE", "reason": _why(exc)}
                continue
            if not (variants(model) if callable(variants) else variants):
                cases = cases[:1]
            elif skipped:
                not_accepted[key] = skipped
            mt = getattr(type(default), "model_type", model)
            for label, config in cases:
                for lt in _layer_types(config, cls):
                    name = f"{key} {label}" + ("" if lt is None else f" [{lt}]")
                    try:
                        results[name] = {"model_type": mt, **compare(config, cls, lt)}
                    except Exception as exc:
                        if label != "default":  # the module does not run this variant
                            not_accepted.setdefault(key, []).append(f"{label} ({_why(exc)})")
                            continue
                        results[name] = {"model_type": mt, "status": "not a config RoPE", "reason": _why(exc)}
                        continue
                    if rotations and label == "default" and results[name]["status"] == "match":
                        try:
                            layouts[name] = rotation(module, cls, config, lt)
                        except Exception:
                            layouts[name] = "?"
    return {
        "transformers": transformers.__version__,
        "results": results,
        "rotation": layouts,
        "not_accepted": not_accepted,
    }


def _why(exc: Exception) -> str:
    text = str(exc)
    return text if text == "signature" else f"{type(exc).__name__}: {text[:80]}"


def counts(res: dict[str, Any]) -> dict[str, Any]:
    """How many cases matched, were refused, differ (``mismatch``: silent),
    and the largest errors of the matches (relative to the largest angle)."""
    rows = res["results"].values()
    out: dict[str, Any] = {
        s: sum(v["status"] == s for v in rows) for s in ("match", "refused", "mismatch", "not a config RoPE")
    }
    out["cases"] = out["match"] + out["refused"] + out["mismatch"]
    out["classes"] = len({k.split(" ")[0] for k in res["results"]})
    for key in ("err64", "err32"):
        errs = [v[key] for v in rows if key in v]
        if errs:
            out[f"max_{key}"] = float(f"{max(errs):.2g}")
    return out


def _short(text: str) -> str:
    """A scaling's repr with its long factor lists cut."""
    return re.sub(r"\(([^()]{60,}?)\)", lambda m: f"({m.group(1).count(',') + 1} values)", text)


def record(res: dict[str, Any]) -> str:
    """``hf_sweep.json``: one line per case (status, model type, what
    from_hf read or why it refused), the counts and the rotation layouts."""
    cases = {}
    for k, v in res["results"].items():
        entry = {"status": v["status"]}
        default = len(k.split(" ")) < 2 or k.split(" ")[1] == "default"
        if v.get("model_type") and default:
            entry["model_type"] = v["model_type"]
        if v["status"] == "match" and not default:  # the defaults say what from_hf reads
            if v.get("mrope"):
                entry["mrope"] = v["mrope"]
        elif v["status"] == "match":
            entry["read"] = v.get("read") or f"dim {v['dim']}, base {v['base']:g}, {_short(v['scaling'])}"
            if v.get("mrope"):
                entry["mrope"] = v["mrope"]
            entry["form"] = v["form"]
        else:
            entry["reason"] = v.get("reason", "")
        cases[k] = entry
    head = {k: res[k] for k in ("transformers", "rotation")}
    head["not_accepted"] = {k: ", ".join(v) for k, v in res["not_accepted"].items()}
    head["counts"] = counts(res)
    text = json.dumps(head, indent=1, sort_keys=True)
    lines = [f" {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(cases.items())]
    return text[:-2] + ',\n "results": {\n' + ",\n".join(f" {line}" for line in lines) + "\n }\n}\n"


# --------------------------------------------------------------------------
# the models page
# --------------------------------------------------------------------------
#: the sections of the models page: a family's title and the pattern its
#: module directories match at their start (``transformers.models.<name>``);
#: the modules of no family are listed under "Other models"
FAMILIES: tuple[tuple[str, str], ...] = (
    ("Apertus", r"apertus"),
    ("AXK", r"axk\d"),
    ("Cohere", r"cohere"),
    ("DeepSeek", r"deepseek"),
    ("dots", r"dots\d"),
    ("ERNIE", r"ernie"),
    ("ESM", r"esm"),
    ("EXAONE", r"exaone"),
    ("Falcon", r"falcon"),
    ("Gemma", r"(t5|recurrent_|embedding_|diffusion_|vault)?gemma"),
    ("GLM", r"glm"),
    ("GPT-NeoX", r"gpt_neox"),
    ("Granite", r"granite"),
    ("Hunyuan", r"hunyuan"),
    ("HY", r"hy_v\d"),
    ("LFM", r"lfm\d"),
    ("Llama", r"(diff|m)?llama\d*$"),
    ("MiniMax", r"minimax"),
    ("Mistral", r"mistral|ministral|mixtral|pixtral|voxtral"),
    ("ModernBERT", r"modernbert"),
    ("Moonshine", r"moonshine"),
    ("Muse", r"muse_"),
    ("Nemotron", r"nemotron"),
    ("OLMo", r"(flex_)?olmo"),
    ("Perception Encoder", r"pe_(audio|video)"),
    ("Phi", r"phi"),
    ("Pocket TTS", r"pocket_tts"),
    ("Qwen", r"qwen"),
    ("SAM", r"sam\d|edgetam"),
)
OTHER = "Other models"


def family(module: str) -> str:
    """The section of the models page of a module directory (``qwen2_vl`` -> ``Qwen``)."""
    for title, pattern in FAMILIES:
        if re.match(pattern, module):
            return title
    return OTHER


def _class_of(name: str) -> str:
    return name.split(" ")[0]


def _labels(joined: str) -> list[str]:
    """The variant labels of a ``not_accepted`` entry of the record (``"linear (why), dynamic"``)."""
    return [part.split(" (")[0] for part in re.split(r", (?![^()]*\))", joined) if part]


def _variant_order(label: str) -> tuple[int, str]:
    """Variants in the order of :data:`SCALINGS` (the order the sweep runs them), then by name."""
    order = list(SCALINGS)
    return (order.index(label), "") if label in order else (len(order), label)


def _rst_text(text: str) -> str:
    return text.replace("`", "'").replace("*", "\\*")


def _rst(recorded: dict[str, Any]) -> str:
    """``docs/models.rst`` from the record of a sweep (``hf_sweep.json``, :func:`record`),
    one section per model family, so that the page and the tests read the same data."""
    rows = recorded["results"]
    c = counts(recorded)
    rotation = recorded.get("rotation", {})
    not_accepted = {k: _labels(v) for k, v in recorded.get("not_accepted", {}).items()}
    by_class: dict[str, dict[str, Any]] = {}
    for k, v in sorted(rows.items()):
        by_class.setdefault(_class_of(k), {})[k] = v
    lines = [
        ".. This page is written by tests/posenc/data/make_hf_sweep.py from hf_sweep.json; do not edit by hand.",
        "",
        ".. _models:",
        "",
        "Models covered by from_hf",
        "=========================",
        "",
        f"Every rotary-embedding module of transformers {recorded['transformers']} (the version the tests run;",
        "found by walking ``transformers.models.*.modeling_*`` for classes named ``*RotaryEmbedding*``)",
        "was built from its configuration class, with its defaults and in every scaling its",
        "configuration accepts (linear, dynamic, YaRN with and without truncation and with",
        "DeepSeek's ``mscale`` keys, Llama 3, LongRoPE, the legacy ``rope_scaling`` / ``type``",
        "keys, and the key aliases of released ``config.json`` files), and its tables compared",
        "with :func:`posenc.scaling.from_hf` followed by :func:`posenc.rope_cos_sin` (or",
        ":func:`posenc.mrope_cos_sin`) at positions below and past the original length:",
        "float64 (transformers' float32 casts lifted) within 1e-12 of the largest angle, float32",
        "within transformers' own rounding; ``from_hf`` of the configuration's ``to_dict()``",
        "must agree.  The vision towers (transformers' ``axial`` RoPE, Llama 4 vision, DINOv3)",
        "are compared with :func:`posenc.rope_axes_cos_sin` ``(ids, **from_hf(config))`` at the",
        "module's own position ids (Llama 4 and DINOv3, whose modules take none: at the ids their",
        "models build), and their own apply function with :func:`posenc.apply_rope` (column",
        "*table* ``axes``).  Each case either matches or is refused by ``from_hf`` with a",
        "``ValueError`` naming the key; none differs silently.",
        "",
        (
            f"**{c['match']} matched, {c['refused']} refused, {c['mismatch']} silent: {c['cases']} cases**"
            f" over {c['classes'] - c['not a config RoPE']} modules ({c['not a config RoPE']} more take no"
        ),
        "text-model configuration and are listed at the end).  The page is written from the",
        "record of the sweep, ``tests/posenc/data/hf_sweep.json``, which the tests read too:",
        "``python tests/posenc/data/make_hf_sweep.py`` runs the sweep and writes both (``--page``",
        "rewrites this page from the record alone); ``tests/posenc/test_hf_models.py`` runs the",
        "sweep, and ``make test-latest`` compares the newest transformers with the record.",
        "",
        "Column *rotates*: the ``layout=`` to pass to :func:`posenc.apply_rope` (and",
        ":func:`posenc.rope_cos_sin`), found by running the model's own",
        "``apply_rotary_pos_emb`` and comparing the attention scores with both layouts:",
        "``half`` pairs feature *i* with *i + d/2* (``rotate_half``), ``interleaved`` pairs",
        "neighbours (GLM, GLM-4, Helium, ERNIE 4.5, Moonshine, GPT-J, CodeGen, DeepSeek with",
        "``rope_interleave``, ...; some of them call their function ``rotate_half`` too);",
        "``?`` where the function takes another calling convention.  Column *table*: how the",
        "module returns its table (``half``, ``interleaved``, ``compact`` = one column per",
        "frequency, ``compact (sin, cos)`` = GPT-J's and CodeGen's order).",
        "",
        "The modules are grouped by model family (the sections are listed in the page's",
        "table of contents); families with a single module are under :ref:`models-other`.",
    ]
    sections: dict[str, list[str]] = {}
    other = []
    refusals = []
    for cls_name, cases in by_class.items():
        first = next(iter(cases.values()))
        if first["status"] == "not a config RoPE":
            other.append(f"``{cls_name}`` ({first.get('reason', '')})")
            continue
        groups: dict[str | None, dict[str, Any]] = {}
        for k, v in cases.items():
            m = re.search(r" \[(\w+)\]$", k)
            lt = m.group(1) if m else None
            label = k[len(cls_name) + 1 :]
            if m:
                label = label[: -len(m.group(0))]
            groups.setdefault(lt, {})[label] = (k, v)
        for lt, variants in groups.items():
            name = cls_name + ("" if lt is None else f" [{lt}]")
            d = variants.get("default")
            if d is None:
                continue
            variants = dict(sorted(variants.items(), key=lambda kv: _variant_order(kv[0])))
            k0, v0 = d
            if v0["status"] == "match":
                extra = v0["read"]
                if v0.get("mrope"):
                    extra += f", mrope {v0['mrope']}"
                table = v0["form"]
                rot = rotation.get(k0, "?")
            else:
                extra, table, rot = f"{v0['status']}: {v0.get('reason', '')}", "", ""
            matched = [lb for lb, (_, v) in variants.items() if lb != "default" and v["status"] == "match"]
            refused = [lb for lb, (_, v) in variants.items() if lb != "default" and v["status"] == "refused"]
            silent = [lb for lb, (_, v) in variants.items() if lb != "default" and v["status"] == "mismatch"]
            var = []
            if all(n in matched for n in SCALINGS):
                matched = ["every scaling"] + [lb for lb in matched if lb not in SCALINGS]
            if matched:
                var.append("match: " + ", ".join(matched))
            if refused:
                var.append("refused: " + ", ".join(refused))
                for lb in refused:
                    refusals.append((name, lb, variants[lb][1]["reason"]))
            if silent:
                var.append("SILENT: " + ", ".join(silent))
            skipped = not_accepted.get(cls_name, [])
            if skipped and v0["status"] == "match":
                skipped = ["every scaling"] if all(n in skipped for n in SCALINGS) else skipped
                var.append("not taken by the model: " + ", ".join(dict.fromkeys(skipped)))
            sections.setdefault(family(cls_name.split(".")[0]), []).extend(
                [
                    f"   * - ``{name}``",
                    f"     - {_rst_text(extra)}",
                    f"     - {rot}",
                    f"     - {table}",
                    f"     - {'; '.join(var) or '–'}",
                ]
            )
    titles = sorted((t for t in sections if t != OTHER), key=str.lower) + ([OTHER] if OTHER in sections else [])
    lines += ["", "Families", "--------"]
    for title in titles:
        label = "models-other" if title == OTHER else "models-" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
        lines += ["", f".. _{label}:", "", title, "^" * len(title), ""]
        lines += [
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 26 30 8 8 28",
            "   :class: posenc-models",
            "",
            "   * - module [layer type]",
            "     - defaults: from_hf",
            "     - rotates",
            "     - table",
            "     - variants",
            *sections[title],
        ]
    grouped: dict[tuple[str, str], list[str]] = {}
    for name, label, reason in refusals:
        grouped.setdefault((name, reason), []).append(label)
    lines += ["", "Why the refused variants are refused", "------------------------------------", ""]
    for (name, reason), labels in grouped.items():
        lines.append(f"* ``{name}`` ({', '.join(labels)}): {_rst_text(reason)}")
    lines += ["", "Not a configuration RoPE", "------------------------", ""]
    lines += ["Audio time stamps, other signatures:", ""]
    lines += [f"* {o}" for o in other]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# comparing with the recorded list
# --------------------------------------------------------------------------
def compare_recorded(res: dict[str, Any], recorded: dict[str, Any]) -> list[str]:
    """Lines naming the cases that are new, gone or changed status."""
    now = {k: v["status"] for k, v in res["results"].items()}
    then = {k: v["status"] for k, v in recorded["results"].items()}
    lines = [f"transformers {recorded['transformers']} (recorded) -> {res['transformers']} (installed)"]
    for k in sorted(now.keys() - then.keys()):
        lines.append(f"new      {now[k]:18s} {k}")
    for k in sorted(then.keys() - now.keys()):
        lines.append(f"gone     {then[k]:18s} {k}")
    for k in sorted(now.keys() & then.keys()):
        if now[k] != then[k]:
            lines.append(f"changed  {then[k]} -> {now[k]}  {k}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--compare",
        action="store_true",
        help="compare the installed transformers with the recorded hf_sweep.json (writes nothing)",
    )
    parser.add_argument(
        "--page",
        action="store_true",
        help="rewrite docs/models.rst from the recorded hf_sweep.json (runs no sweep)",
    )
    args = parser.parse_args(argv)
    if args.page:
        DOCS.write_text(_rst(json.loads(OUT.read_text())))
        return 0
    res = sweep()
    bad = {k: v for k, v in res["results"].items() if v["status"] == "mismatch"}
    if args.compare:
        recorded = json.loads(OUT.read_text())
        for line in compare_recorded(res, recorded):
            print(line)
    else:
        for k, v in res["results"].items():
            print(f"{v['status']:18s} {k}  {v.get('reason', '')[:150]}")
        OUT.write_text(record(res))
        DOCS.write_text(_rst(json.loads(record(res))))
    print(json.dumps(counts(res)))
    for k, v in bad.items():
        print(f"SILENT {k}: {v['reason']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
