"""The torch side of :func:`posenc.audit_rope`: finding a model's rotary
modules, running them, comparing their tables with posenc's exact ones."""

from __future__ import annotations

import inspect
import json
import os
from typing import Any

import numpy as np
import torch

from posenc import _checks
from posenc.torch._audit_common import AT_FLOOR, _cause, _dtype_name, _inv_freq, _positions


# ---------------------------------------------------------------------- finding the modules
def _is_diffusers(module: Any) -> bool:
    """A diffusers positional module, or what patch_rope put in its place."""
    where, name = type(module).__module__, type(module).__name__
    return where.startswith("diffusers") or (where.startswith("posenc.torch") and name in _PATCHED_DIFFUSERS)


def _is_rotary(module: Any) -> bool:
    name = type(module).__name__
    return name.endswith("RotaryEmbedding") or (
        _is_diffusers(module) and ("PosEmbed" in name or "Rope" in name or name == "Timesteps")
    )


#: the positions (timesteps) a diffusers module is audited over by default
DIFFUSERS_CONTEXT = {"FluxPosEmbed": 4096, "Flux2PosEmbed": 4096, "Timesteps": 1000, "ExactAxesRotaryEmbedding": 4096}
#: the modules patch_rope puts in place of diffusers' (audited as those)
_PATCHED_DIFFUSERS = (
    "ExactAxesRotaryEmbedding",
    "Timesteps",
    "ExactWanRotaryPosEmbed",
    "ExactHunyuanVideoRotaryPosEmbed",
    "ExactQwenEmbedRope",
    "ExactQwenEmbedLayer3DRope",
)


def _audit_diffusers(label: str, module: Any, positions: Any, make: Any) -> Any:
    """Flux's and Flux 2's multi-axis RoPE (every axis at the position) and
    ``Timesteps`` (the positions are timesteps) against posenc's float64
    tables; the other diffusers modules are not audited yet."""
    import posenc

    cls = type(module).__name__
    if cls not in DIFFUSERS_CONTEXT:
        return make(label, cls, "float32", False, "a diffusers module posenc does not audit yet")
    pos = _positions(DIFFUSERS_CONTEXT[cls], positions)
    t = torch.as_tensor(pos, dtype=torch.float64)
    with torch.no_grad():
        if cls == "Timesteps":
            got = [module(t.float())]
            want = [
                posenc.timestep_embedding(
                    t,
                    module.num_channels,
                    flip_sin_to_cos=bool(module.flip_sin_to_cos),
                    downscale_freq_shift=float(module.downscale_freq_shift),
                    scale=float(module.scale),
                    dtype=torch.float64,
                )
            ]
        else:
            ids = t[:, None].expand(-1, len(module.axes_dim))
            got = list(module(ids.float()))
            want = list(
                posenc.rope_axes_cos_sin(
                    ids, tuple(module.axes_dim), base=float(module.theta), layout="interleaved", dtype=torch.float64
                )
            )
    out_dtype = got[0].dtype
    err = np.max([(g.double() - w).abs().amax(-1).numpy() for g, w in zip(got, want)], axis=0)
    floor = np.max([(w.to(out_dtype).double() - w).abs().amax(-1).numpy() for w in want], axis=0)
    ratio = float(np.max(err / np.maximum(floor, 2.0**-26)))
    cause = f"at the {_dtype_name(out_dtype)} floor" if ratio <= AT_FLOOR else "the float32 angle product"
    return make(
        label,
        cls,
        _dtype_name(out_dtype),
        True,
        cause=cause,
        positions=tuple(int(p) for p in pos),
        error=tuple(float(e) for e in err),
        floor=tuple(float(f) for f in floor),
    )


def _load_config(source: Any) -> Any:
    """A transformers config object from a config object, a dict or a path."""
    import transformers

    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        if not os.path.isfile(path):
            msg = f"`source` is a path, but no config.json is there: {path!r}"
            raise ValueError(msg)
        try:
            with open(path, encoding="utf-8") as f:
                source = json.load(f)
        except (OSError, ValueError) as exc:
            msg = f"`source` is a path, but {path!r} is not a readable JSON config: {exc}"
            raise ValueError(msg) from None
        if not isinstance(source, dict):
            msg = f"`source` is a path, but {path!r} holds no JSON object"
            raise ValueError(msg)
    if isinstance(source, dict):
        raw = dict(source)
        model_type = raw.pop("model_type", None)
        if not isinstance(model_type, str):
            msg = "`source` is a config dictionary without a `model_type`: say which model it configures"
            raise ValueError(msg)
        try:
            return transformers.AutoConfig.for_model(model_type, **raw)
        except (ValueError, TypeError, KeyError) as exc:
            msg = f"`source` is not a config transformers reads: {exc}"
            raise ValueError(msg) from None
    return source


def _modules_of_config(config: Any) -> list[tuple[str, Any]]:
    """The rotary modules the config's modeling file defines, built from the config."""
    import importlib

    where = type(config).__module__
    if ".configuration_" not in where:
        msg = f"`source` must be a transformers config, model or rotary module, got {_checks.show(config)}"
        raise TypeError(msg)
    modeling = importlib.import_module(where.replace(".configuration_", ".modeling_"))
    found: list[tuple[str, Any]] = []
    for name, cls in vars(modeling).items():
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module) and name.endswith("RotaryEmbedding")):
            continue
        if cls.__module__ != modeling.__name__:
            continue
        built = None
        text = getattr(config, "get_text_config", lambda: config)()
        for cfg in (config, text, *([config.vision_config] if hasattr(config, "vision_config") else [])):
            try:
                built = cls(config=cfg)
                break
            except Exception:  # not built from this config: try the next reading
                continue
        found.append((name, built if built is not None else cls))
    return found


def _sources(source: Any) -> tuple[list[tuple[str, Any]], Any]:
    """``[(name, module)]`` and the dtype of the model (None: unknown)."""
    if isinstance(source, torch.nn.Module):
        if _is_rotary(source):
            return [("", source)], None
        mods = []
        skip: list[str] = []
        for name, mod in source.named_modules():
            if any(name.startswith(s + ".") for s in skip):
                continue
            if _is_rotary(mod):
                mods.append((name, mod))
                skip.append(name)
        dt = next((p.dtype for p in source.parameters() if p.is_floating_point()), None)
        return mods, dt
    config = _load_config(source)
    dt = getattr(config, "dtype", None)
    return _modules_of_config(config), dt


# ---------------------------------------------------------------------- running one module
def _context(config: Any, kw: dict[str, Any]) -> int:
    n = getattr(config, "max_position_embeddings", None) or 4096
    factor = getattr(kw.get("scaling"), "factor", 1.0) or 1.0
    return int(n * max(float(factor), 1.0))


def _audit_one(name: str, module: Any, layer_type: str | None, dtype: Any, positions: Any, make: Any) -> Any:

    import posenc

    label = f"{name}[{layer_type}]" if layer_type else name
    cls = type(module).__name__ if not isinstance(module, type) else module.__name__
    dname = _dtype_name(dtype)

    def skip(reason: str) -> Any:
        return make(label, cls, dname, False, reason)

    if isinstance(module, type):
        return skip("its constructor does not take this config (a vision tower or another part of the model)")
    if _is_diffusers(module):
        return _audit_diffusers(label, module, positions, make)
    from posenc.torch._audit_vision import audit_vision, is_vision

    if is_vision(module):
        return audit_vision(label, module, dtype, positions, make)
    config = getattr(module, "config", None)
    if config is None:
        return skip("it holds no transformers config (a vision tower): not audited yet")
    try:
        params = set(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):  # pragma: no cover
        params = set()
    if "position_ids" not in params:
        return skip("its forward takes no position_ids (a vision tower): not audited yet")
    try:
        kw = posenc.scaling.from_hf(config, layer_type=layer_type)
    except (ValueError, TypeError) as exc:
        return skip(f"posenc cannot reproduce it: {exc}")
    if "axes_dim" in kw or "freqs" in kw:
        return skip("RoPE over several axes (a vision tower): not audited yet")
    pos = _positions(_context(config, kw), positions)
    dev = next((b.device for b in module.buffers()), torch.device("cpu"))
    ids = torch.as_tensor(pos, device=dev)[None]
    mrope = "mrope_section" in kw
    if mrope:
        ids = ids[None].expand(3, 1, -1)
    x = torch.zeros(1, 1, 1, dtype=dtype, device=dev)
    call: dict[str, Any] = {"layer_type": layer_type} if "layer_type" in params else {}
    with torch.no_grad():
        out = module(x, ids, **call)
        if not (isinstance(out, tuple) and len(out) == 2):  # Llama 4's text module: complex freqs_cis
            kind = f"a {_dtype_name(out.dtype)} tensor" if isinstance(out, torch.Tensor) else type(out).__name__
            return skip(f"its forward returns {kind}, not (cos, sin): not audited yet")
        cos, sin = out
        if mrope:
            tc, ts = posenc.mrope_cos_sin(ids.cpu(), **kw, dtype=torch.float64)
        else:
            tc, ts = posenc.rope_cos_sin(ids.cpu(), **kw, dtype=torch.float64, xp=torch)
    cos, sin = cos.reshape(-1, cos.shape[-1]), sin.reshape(-1, sin.shape[-1])
    tc, ts = tc.reshape(-1, tc.shape[-1]), ts.reshape(-1, ts.shape[-1])
    if cos.shape != tc.shape:
        return skip(f"its tables have shape {tuple(cos.shape)}, posenc's reading of its config {tuple(tc.shape)}")
    cos64, sin64 = cos.to("cpu", torch.float64), sin.to("cpu", torch.float64)
    err = torch.maximum((cos64 - tc).abs().amax(-1), (sin64 - ts).abs().amax(-1)).numpy()
    fc = (tc.to(dtype).to(torch.float64) - tc).abs().amax(-1)
    fs = (ts.to(dtype).to(torch.float64) - ts).abs().amax(-1)
    floor = torch.maximum(fc, fs).numpy()
    cause = _cause(module, _inv_freq(module, layer_type), kw, dtype, err, floor)
    return make(
        label,
        cls,
        dname,
        True,
        cause=cause,
        positions=tuple(int(p) for p in pos),
        error=tuple(float(e) for e in err),
        floor=tuple(float(f) for f in floor),
    )


def _torch_dtype(dtype: Any) -> Any:

    if isinstance(dtype, str) and isinstance(getattr(torch, dtype, None), torch.dtype):
        dtype = getattr(torch, dtype)
    if dtype is None or (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        return dtype
    msg = f"`dtype` must be a torch floating dtype or its name, got {_checks.show(dtype)}"
    raise TypeError(msg)


def audit(source: Any, dtype: Any, positions: Any, make: Any) -> list[Any]:
    """The module audits of ``source`` (``make`` builds one: posenc.audit.RopeModuleAudit)."""
    dt = _torch_dtype(dtype)
    modules, model_dtype = _sources(source)

    run = dt or model_dtype
    out = []
    for name, mod in modules:
        here = run
        if here is None:
            bufs = [] if isinstance(mod, type) else mod.buffers()  # a class: its constructor refused the config
            inv = next((b for b in bufs if b.is_floating_point()), None)
            here = inv.dtype if inv is not None else torch.float32
        here = _torch_dtype(here) if isinstance(here, str) else here
        types = None
        if not isinstance(mod, type):
            lt = getattr(mod, "layer_types", None)
            if lt and "layer_type" in inspect.signature(mod.forward).parameters:
                types = [t for t in lt if _inv_freq(mod, t) is not None or not hasattr(mod, f"{t}_inv_freq")]
        for t in types or [None]:
            out.append(_audit_one(name, mod, t, here, positions, make))
    return out
