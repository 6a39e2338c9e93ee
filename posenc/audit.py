"""How exact is the RoPE of the model you already have?

:func:`audit_rope` runs the rotary modules of a loaded model (or of a
config) with their own code, at the model's dtype, over positions up to the
model's context, and compares their ``cos`` / ``sin`` with posenc's exact
tables: a :class:`RopeAudit` with one :class:`RopeModuleAudit` per module.

torch and transformers are imported when the function runs, never when
:mod:`posenc` is imported.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import _checks

__all__ = ["audit_rope"]

#: the upper edges of the position bands of a report (then 2**22, ... up to the context)
BAND_EDGES = (2**7, 2**10, 2**13, 2**16, 2**19)
#: a module is "at the floor" when its error is at most this many times the floor
AT_FLOOR = 4.0
#: positions sampled, log-spaced, between 1 and the context
SAMPLES = 192


@dataclasses.dataclass(frozen=True)
class RopeModuleAudit:
    """The audit of one rotary module (one layer type of it).

    Attributes
    ----------
    name : str
        Where the module sits in the model (``"model.rotary_emb"``; ``""``
        for the source itself), with the layer type in brackets
        (``"model.rotary_emb[sliding_attention]"``).
    module : str
        The module's class name.
    dtype : str
        The dtype the module ran at (its tables' dtype).
    audited : bool
        Whether posenc reproduced the module; if not, ``reason`` says why.
    reason : str
        Why the module was not audited (``""`` if it was).
    cause : str
        What the error comes from: ``"inv_freq stored in bfloat16"``,
        ``"the float32 angle product"``, ``"tables cast to bfloat16 (at the
        floor)"``, ``"at the float32 floor"``, ``"a scaling read
        differently: ..."``.
    positions : tuple of int
        The positions compared (0, then log-spaced up to the context).
    error : tuple of float
        Per position: the largest ``|cos - cos_exact|`` and ``|sin - sin_exact|``
        of the module's tables over the features.
    floor : tuple of float
        Per position: the same for the exact tables rounded once to
        ``dtype`` (the best any table of that dtype can do).
    """

    name: str
    module: str
    dtype: str
    audited: bool
    reason: str = ""
    cause: str = ""
    positions: tuple[int, ...] = ()
    error: tuple[float, ...] = ()
    floor: tuple[float, ...] = ()

    def bands(self) -> list[tuple[int, int, float, float]]:
        """``(first, last, max error, max floor)`` per band of positions
        (``[0, 128)``, ``[128, 1024)``, ... each 8 times the last, up to the context)."""
        if not self.positions:
            return []
        top = self.positions[-1] + 1
        edges = [e for e in BAND_EDGES if e < top]
        while not edges or edges[-1] * 8 < top:
            edges.append((edges[-1] * 8) if edges else 2**7)
        edges = [0, *[e for e in edges if e < top], top]
        out = []
        p = np.asarray(self.positions)
        e, f = np.asarray(self.error), np.asarray(self.floor)
        for lo, hi in zip(edges[:-1], edges[1:]):
            m = (p >= lo) & (p < hi)
            if m.any():
                out.append((int(p[m].min()), int(p[m].max()), float(e[m].max()), float(f[m].max())))
        return out

    @property
    def max_error(self) -> float:
        """The largest error over every position (NaN if not audited)."""
        return max(self.error) if self.error else math.nan

    def to_rows(self) -> list[dict[str, Any]]:
        """One dict per band of positions: ``module``, ``class``, ``dtype``,
        ``positions`` (``"first-last"``), ``error``, ``floor``, ``cause``; one
        row with ``error`` NaN and the ``reason`` as cause if not audited."""
        base = {"module": self.name, "class": self.module, "dtype": self.dtype}
        if not self.audited:
            return [{**base, "positions": "", "error": math.nan, "floor": math.nan, "cause": self.reason}]
        return [
            {**base, "positions": f"{lo}-{hi}", "error": err, "floor": fl, "cause": self.cause}
            for lo, hi, err, fl in self.bands()
        ]

    def __str__(self) -> str:
        head = f"{self.name or '<source>'} ({self.module}, {self.dtype})"
        if not self.audited:
            return f"{head}: not audited: {self.reason}"
        lines = [f"{head}: {self.cause}"]
        lines += [f"  positions {lo:>8}-{hi:<8} error {err:9.2e}   floor {fl:9.2e}" for lo, hi, err, fl in self.bands()]
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class RopeAudit:
    """What :func:`audit_rope` found: one :class:`RopeModuleAudit` per
    rotary module (and layer type), in the order of the model's modules.

    Iterating gives the module audits; ``str(report)`` is a readable table;
    :meth:`to_rows` gives the rows of a table (one per module and band of
    positions).
    """

    modules: tuple[RopeModuleAudit, ...]

    def __iter__(self) -> Iterator[RopeModuleAudit]:
        return iter(self.modules)

    def __len__(self) -> int:
        return len(self.modules)

    def __getitem__(self, i: int) -> RopeModuleAudit:
        return self.modules[i]

    def to_rows(self) -> list[dict[str, Any]]:
        """Every module's :meth:`RopeModuleAudit.to_rows`, one list."""
        return [row for m in self.modules for row in m.to_rows()]

    def __str__(self) -> str:
        if not self.modules:
            return "no rotary module found"
        return "\n".join(str(m) for m in self.modules)


# ---------------------------------------------------------------------- finding the modules
def _is_rotary(module: Any) -> bool:
    name = type(module).__name__
    return name.endswith("RotaryEmbedding") or (
        type(module).__module__.startswith("diffusers") and ("PosEmbed" in name or "Rope" in name)
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

    from torch import nn

    where = type(config).__module__
    if ".configuration_" not in where:
        msg = f"`source` must be a transformers config, model or rotary module, got {_checks.show(config)}"
        raise TypeError(msg)
    modeling = importlib.import_module(where.replace(".configuration_", ".modeling_"))
    found: list[tuple[str, Any]] = []
    for name, cls in vars(modeling).items():
        if not (isinstance(cls, type) and issubclass(cls, nn.Module) and name.endswith("RotaryEmbedding")):
            continue
        if cls.__module__ != modeling.__name__:
            continue
        built = None
        for cfg in (config, getattr(config, "get_text_config", lambda: config)()):
            try:
                built = cls(config=cfg)
                break
            except Exception:  # not built from this config: try the next reading
                continue
        found.append((name, built if built is not None else cls))
    return found


def _sources(source: Any) -> tuple[list[tuple[str, Any]], Any]:
    """``[(name, module)]`` and the dtype of the model (None: unknown)."""
    from torch import nn

    if isinstance(source, nn.Module):
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
def _positions(context: int, positions: Any) -> np.ndarray:
    if positions is not None:
        try:
            raw = np.asarray(positions)
        except Exception:
            raw = np.asarray(None)
        if raw.dtype.kind not in "iu":
            msg = f"`positions` must be an array or list of integers, got {_checks.show(positions)}"
            raise TypeError(msg)
        p = np.unique(raw.astype(np.int64).ravel())
        if p.size == 0 or p[0] < 0 or p[-1] >= 2**53:
            msg = f"`positions` must be non-negative integers below 2**53, at least one, got {_checks.show(positions)}"
            raise ValueError(msg)
        return p
    top = max(int(context) - 1, 1)
    return np.unique(np.concatenate([[0], np.round(np.geomspace(1, top, SAMPLES)).astype(np.int64)]))


def _context(config: Any, kw: dict[str, Any]) -> int:
    n = getattr(config, "max_position_embeddings", None) or 4096
    factor = getattr(kw.get("scaling"), "factor", 1.0) or 1.0
    return int(n * max(float(factor), 1.0))


def _dtype_name(dt: Any) -> str:
    return str(dt).removeprefix("torch.")


def _cause(module: Any, inv: Any, kw: dict[str, Any], dtype: Any, err: np.ndarray, floor: np.ndarray) -> str:
    import torch

    import posenc
    from posenc.scaling._formulas import length_dependent

    if inv is not None and inv.dtype in (torch.bfloat16, torch.float16):
        return f"inv_freq stored in {_dtype_name(inv.dtype)}"
    if inv is not None and "dim" in kw and not length_dependent(kw.get("scaling")):
        want = np.asarray(posenc.rope_frequencies(kw["dim"], base=kw["base"], scaling=kw["scaling"]))
        got = inv.detach().to("cpu", torch.float64).numpy()
        if got.shape == want.shape:
            rel = float(np.max(np.abs(got - want) / want))
            if rel > 1e-5:
                return f"a scaling read differently: inv_freq differs from the config's by {rel:.2g} (relative)"
    ratio = float(np.max(err / np.maximum(floor, 2.0**-26)))
    if ratio <= AT_FLOOR:
        if dtype in (torch.bfloat16, torch.float16):
            return f"tables cast to {_dtype_name(dtype)} (at the floor)"
        return f"at the {_dtype_name(dtype)} floor"
    return "the float32 angle product"


def _inv_freq(module: Any, layer_type: str | None) -> Any:
    name = f"{layer_type}_inv_freq" if layer_type else "inv_freq"
    buf = getattr(module, name, None)
    import torch

    return buf if isinstance(buf, torch.Tensor) else None


def _audit_one(name: str, module: Any, layer_type: str | None, dtype: Any, positions: Any) -> RopeModuleAudit:
    import torch

    import posenc

    label = f"{name}[{layer_type}]" if layer_type else name
    cls = type(module).__name__ if not isinstance(module, type) else module.__name__
    dname = _dtype_name(dtype)

    def skip(reason: str) -> RopeModuleAudit:
        return RopeModuleAudit(label, cls, dname, False, reason)

    if isinstance(module, type):
        return skip("its constructor does not take this config (a vision tower or another part of the model)")
    config = getattr(module, "config", None)
    if config is None:
        return skip("it holds no transformers config (a vision tower or a diffusers module): not audited yet")
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
        cos, sin = module(x, ids, **call)
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
    return RopeModuleAudit(
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
    import torch

    if isinstance(dtype, str) and isinstance(getattr(torch, dtype, None), torch.dtype):
        dtype = getattr(torch, dtype)
    if dtype is None or (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        return dtype
    msg = f"`dtype` must be a torch floating dtype or its name, got {_checks.show(dtype)}"
    raise TypeError(msg)


def audit_rope(source: Any, *, dtype: Any = None, positions: Any = None) -> RopeAudit:
    """Compare the RoPE tables of a model's own rotary modules with posenc's exact ones.

    Every rotary module found in ``source`` (and every layer type of it:
    Gemma 3's sliding and full attention) runs its **own** ``forward`` at
    the model's dtype over positions log-spaced up to the model's context
    (``max_position_embeddings`` times the scaling's factor), and its
    ``cos`` / ``sin`` are compared with the float64 tables of
    :func:`posenc.rope_cos_sin` (or :func:`posenc.mrope_cos_sin`) of
    :func:`posenc.scaling.from_hf` of its config.  The report gives, per
    band of positions, the largest error of the module's tables, the floor
    of the dtype (the exact tables rounded once to it: what an exact table
    of that dtype reaches) and the cause found:

    * ``inv_freq stored in bfloat16`` (or float16): the model was cast with
      ``model.to(torch.bfloat16)``, ``.half()`` or ``.bfloat16()`` after it
      was built, which casts the frequencies' buffer: its angles are off by
      ``p * w * 2**-9`` (the error reaches 2, cos of the opposite sign,
      beyond about a thousand positions);
    * ``the float32 angle product``: the module forms ``p * inv_freq`` in
      float32: off by about ``p * 2**-24`` (2.4e-4 at 4096, 7.7e-3 at
      128K), above the floor of float32 tables;
    * ``tables cast to bfloat16 (at the floor)`` / ``at the float32 floor``:
      within 4 times the floor;
    * ``a scaling read differently``: the module's frequencies differ from
      the config's (a modified module or config).

    A module posenc cannot reproduce (its config refused by
    :func:`~posenc.scaling.from_hf`, the vision towers and diffusers'
    modules, not audited yet) is listed as not audited, with the reason.

    Parameters
    ----------
    source : torch.nn.Module, config, dict or path
        A loaded transformers model, one of its rotary modules (or a module
        :func:`posenc.torch.patch_rope` put in), a transformers config, a
        config dictionary (with ``model_type``) or the path of a
        ``config.json`` (or of its directory): for a config, the rotary
        modules of its modeling file are built from it (with the
        frequencies in float32, as ``from_pretrained`` keeps them).
    dtype : torch.dtype or str, optional
        The dtype to run the modules at (their tables' dtype).  Default:
        the dtype of the model's parameters; for a config its ``dtype``
        (``torch_dtype``); else float32.
    positions : array of int, optional
        The positions to compare (default: 0 and 192 log-spaced positions up
        to the context).

    Returns
    -------
    RopeAudit
        One :class:`RopeModuleAudit` per module and layer type;
        ``str(report)`` is a table, ``report.to_rows()`` its rows.

    Examples
    --------
    The rotary module of a Llama 3.1 config, as ``from_pretrained`` builds it
    (frequencies in float32), then cast as ``model.to(torch.bfloat16)``
    casts it:

    >>> import torch, transformers, posenc
    >>> from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    >>> cfg = transformers.LlamaConfig(head_dim=128, max_position_embeddings=131072, rope_parameters={
    ...     "rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
    ...     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    >>> rope = LlamaRotaryEmbedding(cfg)
    >>> posenc.audit_rope(rope)[0].cause
    'the float32 angle product'
    >>> report = posenc.audit_rope(rope.to(torch.bfloat16), positions=[0, 100, 1774, 10**5])
    >>> print(report)
    <source> (LlamaRotaryEmbedding, bfloat16): inv_freq stored in bfloat16
      positions        0-100      error  1.77e-01   floor  1.95e-03
      positions     1774-1774     error  2.00e+00   floor  1.95e-03
      positions   100000-100000   error  1.97e+00   floor  1.94e-03
    >>> report.to_rows()[1]["error"] > 1.99
    True
    """
    dt = _torch_dtype(dtype)
    modules, model_dtype = _sources(source)
    import torch

    run = dt or model_dtype
    out = []
    for name, mod in modules:
        here = run
        if here is None:
            inv = next((b for b in getattr(mod, "buffers", list)() if b.is_floating_point()), None)
            here = inv.dtype if inv is not None else torch.float32
        here = _torch_dtype(here) if isinstance(here, str) else here
        types = None
        if not isinstance(mod, type):
            lt = getattr(mod, "layer_types", None)
            if lt and "layer_type" in inspect.signature(mod.forward).parameters:
                types = [t for t in lt if _inv_freq(mod, t) is not None or not hasattr(mod, f"{t}_inv_freq")]
        for t in types or [None]:
            out.append(_audit_one(name, mod, t, here, positions))
    return RopeAudit(tuple(out))
