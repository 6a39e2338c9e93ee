"""Hugging Face configurations: :func:`posenc.scaling.from_hf`, its readers and
the model tables it knows (the part of :mod:`posenc.scaling` that grows with
``transformers``)."""

from __future__ import annotations

import importlib.metadata
import numbers
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from posenc import _checks

from ._formulas import NTK, DynamicNTK, Linear, Llama3, LongRoPE, Proportional, Scaling, YaRN, default_inv_freq
from ._models import (
    ATTRIBUTE_MAP,
    AXIAL,
    AXIAL_HEAD,
    AXIAL_REFUSED,
    CHANGED_IN,
    COMMON_KEYS,
    DEFAULT_THETA,
    FIXED_TABLE,
    FUYU_TEXT_DEFAULTS,
    FUYU_TEXT_KEYS,
    HEAD_DIMS,
    HEADS,
    HF_TYPES,
    HIDDEN,
    LOCAL_GLOBAL,
    MODEL_KEYS,
    MROPE,
    MROPE_KEYS,
    MROPE_OTHER,
    PARTIAL_DEFAULTS,
    ROTARY_DIM,
    TABLE_NEUTRAL_KEYS,
    TYPE_CONVERSIONS,
    TYPE_KEYS,
)

__all__ = ["from_hf"]


# --------------------------------------------------------------------------
# Hugging Face configs: the readers
# --------------------------------------------------------------------------
def _differ(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except Exception:  # values without a plain comparison (arrays)
        return True


def _transformers_version() -> tuple[str, tuple[int, int]] | None:
    """The version of the transformers that runs the models, and its ``(major,
    minor)``: the imported module's, else the installed distribution's (read
    from its metadata, not imported); None without one."""
    version = getattr(sys.modules.get("transformers"), "__version__", None)
    if not isinstance(version, str):
        try:
            version = importlib.metadata.version("transformers")
        except importlib.metadata.PackageNotFoundError:
            return None
    m = re.match(r"(\d+)\.(\d+)", version)
    return None if m is None else (version, (int(m[1]), int(m[2])))


def _check_changed_in(name: str, what: str) -> None:
    """Refuse a reading that changed in a transformers release (``CHANGED_IN``)
    while an older transformers runs the models: its module gives another table."""
    (major, minor), older = CHANGED_IN[name]
    found = _transformers_version()
    if found is not None and found[1] < (major, minor):
        msg = (
            f"{what} is not supported with transformers {found[0]}: releases before {major}.{minor} {older}; "
            f"posenc reads it as transformers >= {major}.{minor} does"
        )
        raise ValueError(msg)


class _HFConfig:
    """A configuration read the way transformers reads it: a config object
    through its attributes (``attribute_map`` aliases resolved by the object),
    a dictionary through the aliases of its ``model_type``."""

    __slots__ = ("_obj", "_dict", "_stored", "model_type", "aliases")

    def __init__(self, config: Any) -> None:
        self._stored: Mapping[str, Any] | None = None
        self.aliases: dict[str, str] = {}
        self._obj: Any = None
        self._dict: Any = None
        if isinstance(config, Mapping):
            self._obj, self._dict = None, config
        else:
            if not callable(getattr(config, "to_dict", None)):
                msg = f"`config` must be a dict or have a to_dict() method, got {type(config).__name__}"
                raise TypeError(msg)
            self._obj, self._dict = config, None
        mt = self.get("model_type")
        if mt is not None and not isinstance(mt, str):
            msg = f"`model_type` of `config` must be a str, got {_checks.show(mt)}"
            raise TypeError(msg)
        self.model_type: str | None = mt or None
        self.aliases = ATTRIBUTE_MAP.get(self.model_type or "", {}) if self._obj is None else {}

    @property
    def is_object(self) -> bool:
        return self._obj is not None

    def stored(self) -> Mapping[str, Any]:
        """``to_dict()`` of a config object (once)."""
        if self._stored is None:
            d = self._obj.to_dict()
            if not isinstance(d, Mapping):
                msg = f"`config`.to_dict() must return a dict, got {type(d).__name__}"
                raise TypeError(msg)
            self._stored = d
        return self._stored

    def get(self, key: str) -> Any:
        """The value of ``key`` or None."""
        if self._obj is not None:
            try:
                v = getattr(self._obj, key)
            except Exception:  # missing, or an attribute that refuses to be read globally: the stored value
                v = None
            if v is None or callable(v):  # (a method of the same name is not a value)
                v = self.stored().get(key)
            return v
        v = self._dict.get(key)
        alias = self.aliases.get(key)
        if alias is not None:
            va = self._dict.get(alias)
            if v is not None and va is not None and _differ(v, va):
                msg = (
                    f"`config` has both `{key}` = {_checks.show(v)} and `{alias}` = {_checks.show(va)}, which "
                    f"model_type {self.model_type!r} reads as one attribute: keep one"
                )
                raise ValueError(msg)
            v = va if v is None else v
        return v

    def get_int(self, key: str, minimum: int = 1) -> int | None:
        v = self.get(key)
        return None if v is None else _checks.check_int(v, key, minimum=minimum)


def _rope_parameters(cfg: _HFConfig) -> tuple[Mapping[str, Any], str]:
    """The RoPE entry of the configuration and the key it came from.

    Both ``rope_parameters`` and ``rope_scaling`` (a ``config.json`` written
    by transformers 4 and completed by 5, or a dictionary that transformers
    has filled in place): transformers reads ``rope_scaling`` and drops
    ``rope_parameters``, so the two must give the same reading (the same rope
    type, base, rotated fraction, original length and scaling keys)."""
    found = {}
    for key in ("rope_parameters", "rope_scaling"):
        v = cfg.get(key)
        if v is not None and not isinstance(v, Mapping):
            msg = f"`{key}` of `config` must be a dict, got {type(v).__name__}"
            raise TypeError(msg)
        if v:
            found[key] = v
    if len(found) == 2:
        a, b = found["rope_parameters"], found["rope_scaling"]
        if a is not b and _differ(_canonical(cfg, a), _canonical(cfg, b)):
            msg = (
                "`config` has both `rope_parameters` and `rope_scaling` and they read differently (transformers "
                "reads rope_scaling and drops rope_parameters): keep one"
            )
            raise ValueError(msg)
        return b, "rope_scaling"
    for key, v in found.items():
        return v, key
    return {}, "rope_parameters"


#: the keys of a RoPE entry that transformers fills in from the top level
_FILLED = ("type", "rope_type", "rope_theta", "partial_rotary_factor", "original_max_position_embeddings")


def _canonical(cfg: _HFConfig, params: Mapping[str, Any]) -> Any:
    """A RoPE entry (or per-layer-type entries) as transformers completes
    it: the rope type resolved, the base, rotated fraction and original length
    filled in from the top level; for comparing two spellings."""
    if any(isinstance(v, Mapping) for v in params.values()):
        return {k: (_canonical(cfg, v) if isinstance(v, Mapping) else v) for k, v in params.items()}
    out = {k: v for k, v in params.items() if k not in _FILLED}
    rope_type = _rope_type(params, "the RoPE parameters", cfg.model_type)
    out["rope_type"] = {"su": "longrope", "mrope": "default"}.get(rope_type, rope_type)
    out["rope_theta"] = _base(cfg, params)
    _, fraction = _partial(cfg, params)
    out["partial_rotary_factor"] = 1.0 if fraction is None else fraction
    if out["rope_type"] in ("yarn", "llama3", "longrope"):
        orig = cfg.get("original_max_position_embeddings")
        if orig is None:
            orig = params.get("original_max_position_embeddings")
        out["original_max_position_embeddings"] = orig if orig is not None else cfg.get("max_position_embeddings")
    return out


def _local_global(cfg: _HFConfig, params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The per-layer-type entries of the older format with a local base
    (Gemma 3 ``rope_local_base_freq``, ModernBERT ``local_rope_theta``)."""
    mt = cfg.model_type
    local = cfg.get("rope_local_base_freq")
    if local is None:
        local = cfg.get("local_rope_theta")
    if local is None and mt not in LOCAL_GLOBAL:
        return None
    glob_default, local_default = LOCAL_GLOBAL.get(mt or "", (10000.0, 10000.0))
    full = dict(params)
    theta = cfg.get("rope_theta")
    full.setdefault("rope_theta", theta if theta is not None else cfg.get("global_rope_theta") or glob_default)
    if mt in ("modernbert", "modernbert-decoder"):  # the scaling applies to both
        sliding = {k: v for k, v in params.items() if k != "rope_theta"}
    else:
        sliding = {"rope_type": "default"}
    sliding["rope_theta"] = local if local is not None else local_default
    return {"full_attention": full, "sliding_attention": sliding}


def _rope_entry(cfg: _HFConfig, layer_type: str | None) -> tuple[dict[str, Any], str, bool | None]:
    """The RoPE entry for ``layer_type``, its name for messages and, for a
    per-layer-type entry, the ``truncate`` transformers applies to it."""
    params, where = _rope_parameters(cfg)
    labels = set()
    for key in ("layer_types", "_rope_type_labels"):
        v = cfg.get(key)
        if isinstance(v, (str, bytes)):
            msg = f"`{key}` of `config` must be a list of layer types (str), got the string {_checks.show(v)}"
            raise TypeError(msg)
        if isinstance(v, Sequence) and not isinstance(v, (str, bytes)):
            labels |= {t for t in v if isinstance(t, str)}
    nested = [k for k, v in params.items() if isinstance(v, Mapping) or (v is None and k in labels)]
    if not nested:
        per_type = _local_global(cfg, params)
        if per_type is not None:
            params, nested = per_type, list(per_type)
    if not nested:
        if layer_type is not None:
            msg = f"`layer_type` applies to configs with per-layer RoPE entries only, got {_checks.show(layer_type)}"
            raise ValueError(msg)
        return dict(params), where, None
    if layer_type is None:
        msg = f"`layer_type` is required: this config has one RoPE entry per layer type {sorted(nested)}"
        raise ValueError(msg)
    if layer_type not in nested:
        msg = f"`layer_type` must be one of {sorted(nested)}, got {_checks.show(layer_type)}"
        raise ValueError(msg)
    for key in params:
        if key not in nested and key != "truncate":
            msg = (
                f"`{key}` next to the per-layer-type entries of {where} is not supported (transformers reads "
                "the entries of the layer types only, and `truncate` for YaRN)"
            )
            raise ValueError(msg)
    entry = params[layer_type]
    if entry is None:
        msg = f"`layer_type` {layer_type!r} has no RoPE (its entry of {where} is None)"
        raise ValueError(msg)
    # transformers' YaRN reads `truncate` from the top level of the RoPE
    # parameters, never from a per-layer-type entry
    truncate = params.get("truncate")
    truncate = True if truncate is None else _checks.check_bool(truncate, "truncate")
    return dict(entry), f"{where}[{layer_type!r}]", truncate


def _rope_type(entry: Mapping[str, Any], where: str, model_type: str | None = None) -> str:
    """``rope_type`` or its older alias ``type``.  Both, differing, are read as
    transformers 5 does (``rope_type``) where the pair is one its configuration
    classes write themselves (``TYPE_CONVERSIONS``: the two readings give one
    table); any other differing pair is refused."""
    has_new, has_old = "rope_type" in entry, "type" in entry
    new, old = entry.get("rope_type"), entry.get("type")
    if has_new and has_old and _differ(new, old):
        pair = (old, new) if isinstance(old, str) and isinstance(new, str) else None
        ok = pair in TYPE_CONVERSIONS
        if ok and pair == ("mrope", "default"):  # with M-RoPE sections only
            ok = entry.get("mrope_section") is not None or (model_type or "") in MROPE
        elif ok:
            models = TYPE_CONVERSIONS[pair]  # type: ignore[index]
            ok = models is None or (model_type or "") in models
        if not ok:
            msg = (
                f"`rope_type` = {_checks.show(new)} and `type` = {_checks.show(old)} of {where} disagree "
                "(transformers versions read one or the other): keep one"
            )
            raise ValueError(msg)
    for name, value, present in (("rope_type", new, has_new), ("type", old, has_old)):
        if present and not isinstance(value, str):
            msg = f"`{name}` of {where} must be a str, got {_checks.show(value)}"
            raise TypeError(msg)
    value = new if has_new else old if has_old else "default"
    return str(value)


def _mrope(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str) -> tuple[Any, bool] | None:
    """``(sections, interleaved)`` of a multimodal RoPE, or None."""
    mt = cfg.model_type or ""
    section = entry.get("mrope_section")
    other = MROPE_OTHER.get(mt)
    if other is not None and (section is not None or other[1] or rope_type == "mrope"):
        msg = (
            f"`mrope_section` of model_type {mt!r} is not supported: its rows are recombined differently "
            f"({other[0]}) from the Qwen2-VL / Qwen3-VL layouts of posenc.mrope_cos_sin"
        )
        raise ValueError(msg)
    flags: dict[str, bool] = {}  # the flags the config gives, which must agree
    for key, v in (
        ("mrope_interleaved", entry.get("mrope_interleaved")),
        ("interleaved", entry.get("interleaved")),
        ("mrope_interleaved", cfg.get("mrope_interleaved")),
    ):
        if v is not None:
            v = _checks.check_bool(v, key)
            if any(f != v for f in flags.values()):
                msg = f"`{key}` = {v} disagrees with the other multimodal flags of `config`: keep one"
                raise ValueError(msg)
            flags.setdefault(key, v)
    known = MROPE.get(mt)
    if known is not None:
        for key, v in flags.items():
            if v != known[1]:
                msg = (
                    f"`{key}` = {v} contradicts model_type {mt!r}, whose rotary module "
                    f"{'interleaves' if known[1] else 'keeps contiguous'} the sections (transformers reads no "
                    f"such key): drop it"
                )
                raise ValueError(msg)
        return (known[0] if section is None else section), known[1]
    if section is None:
        if flags:
            key = next(iter(flags))
            msg = f"`{key}` is not supported without `mrope_section` (model_type {mt or None!r})"
            raise ValueError(msg)
        return None
    if not flags:
        msg = (
            f"`mrope_interleaved` must be given for the `mrope_section` of model_type {mt or None!r}, whose "
            "recombination posenc does not know (False: Qwen2-VL's contiguous sections, True: Qwen3-VL's "
            "interleaved ones)"
        )
        raise ValueError(msg)
    return section, next(iter(flags.values()))


def _check_keys(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, where: str, mrope: bool) -> None:
    """Every key of the RoPE entry is understood or known not to change the tables."""
    mt = cfg.model_type or ""
    allowed = set(COMMON_KEYS) | set(TYPE_KEYS.get(rope_type, ())) | set(TABLE_NEUTRAL_KEYS)
    allowed |= set(MODEL_KEYS.get(mt, {}).get(rope_type, ()))
    if mrope:
        allowed |= set(MROPE_KEYS)
    for key in entry:
        if key not in allowed:
            msg = (
                f"`{key}` of {where} is not supported for rope_type {rope_type!r}"
                f"{f' of model_type {mt!r}' if mt else ''}: posenc refuses the keys it does not know to leave "
                f"the tables unchanged (it reads {', '.join(sorted(allowed - set(TABLE_NEUTRAL_KEYS)))})"
            )
            raise ValueError(msg)


#: model types whose default base for a RoPE entry without one changed (``CHANGED_IN``)
_DEFAULT_THETA_CHANGED = ("pe_audio_encoder", "pe_audio_video_encoder", "pe_video_encoder")


def _base(cfg: _HFConfig, entry: Mapping[str, Any]) -> float:
    """``rope_theta``: the entry's, else the top level's (GPT-NeoX
    ``rotary_emb_base``, DBRX ``attn_config``), else the model's default."""
    key, theta = "rope_theta", entry.get("rope_theta")
    if theta is None:
        for k in ("rope_theta", "rotary_emb_base"):
            if cfg.get(k) is not None:
                key, theta = k, cfg.get(k)
                break
    if theta is None:
        attn = cfg.get("attn_config")
        if isinstance(attn, Mapping) and attn.get("rope_theta") is not None:
            theta = attn["rope_theta"]
    mt = cfg.model_type or ""
    entries = ("rope_parameters", "rope_scaling")
    if (
        theta is None
        and not cfg.is_object
        and mt in _DEFAULT_THETA_CHANGED
        and any(cfg.get(k) is not None for k in entries)
    ):
        _check_changed_in(mt, f"a RoPE entry without `rope_theta` of model_type {mt!r}")
    if theta is None:
        default = cfg.get("default_theta") if cfg.is_object else DEFAULT_THETA.get(cfg.model_type or "")
        theta = default if isinstance(default, numbers.Real) else 10000.0
    base = _checks.check_float(theta, key, positive=True)
    if not base > 1.0:
        msg = f"`{key}` must be > 1 (the frequencies are base ** (-2i / dim)), got {base!r}"
        raise ValueError(msg)
    return base


def _layer_config(cfg: _HFConfig, layer_type: str | None) -> Any:
    """Gemma 4: the configuration of the layers of ``layer_type`` (its own
    head size), as transformers indexes ``config.per_layer_config``."""
    if layer_type is None or not cfg.is_object:
        return None
    per_layer = cfg.get("per_layer_config")
    try:
        sub = per_layer[layer_type]
    except Exception:  # not indexed by layer type
        return None
    return sub if callable(getattr(sub, "to_dict", None)) else None


def _layer_sizes(config: Mapping[str, Any], layer_type: str | None) -> Any:
    """The head size of the layers of ``layer_type`` of a config dictionary
    where it differs per layer (Gemma 4: ``per_layer_config``,
    ``global_head_dim``), else None."""
    if layer_type is None:
        return None
    per_layer = config.get("per_layer_config")
    types = config.get("layer_types")
    if isinstance(per_layer, Mapping) and isinstance(types, Sequence):
        sizes = []
        for i, t in enumerate(types):
            if t == layer_type:
                over = per_layer.get(i, per_layer.get(str(i))) or {}
                if isinstance(over, Mapping) and over.get("head_dim") is not None:
                    size = _checks.check_int(over["head_dim"], "head_dim", minimum=1)
                    if size not in sizes:
                        sizes.append(size)
        if len(sizes) > 1:
            msg = f"`config` per_layer_config gives the {layer_type!r} layers different head sizes {sorted(sizes)}"
            raise ValueError(msg)
        return sizes[0] if sizes else None
    if layer_type == "full_attention" and config.get("global_head_dim") is not None:
        return config["global_head_dim"]
    return None


def _head_size(cfg: _HFConfig, layer_type: str | None) -> int:
    """The head size: ``head_dim`` (through the model's aliases; per layer
    type for Gemma 4), else ``hidden_size // num_attention_heads``."""
    sub = _layer_config(cfg, layer_type)
    if sub is not None:
        return _head_size(_HFConfig(sub), None)
    if cfg.is_object:
        keys: tuple[str, ...] = ("head_dim",)
        hidden_keys: tuple[str, ...] = ("hidden_size",)
        head_keys: tuple[str, ...] = ("num_attention_heads",)
        size = None
    else:
        keys, hidden_keys, head_keys = HEAD_DIMS, HIDDEN, HEADS
        size = _layer_sizes(cfg._dict, layer_type)
        if size is not None:
            return _checks.check_int(size, "head_dim", minimum=1)
    for key in keys:
        value = cfg.get_int(key)
        if value is not None:
            return _head_bound(value, key)
    hidden = next(((k, cfg.get(k)) for k in hidden_keys if cfg.get(k) is not None), None)
    heads = next(((k, cfg.get(k)) for k in head_keys if cfg.get(k) is not None), None)
    if hidden is None or heads is None:
        msg = (
            "`config` must have head_dim (or qk_rope_head_dim, attention_head_dim, kv_channels), "
            "or both hidden_size (n_embd, d_model) and num_attention_heads (n_head, n_heads)"
        )
        if cfg.get("text_config") is not None:
            msg += "; it has a text_config: pass that"
        raise ValueError(msg)
    head = _checks.check_int(hidden[1], hidden[0], minimum=1) // _checks.check_int(heads[1], heads[0], minimum=1)
    return _head_bound(head, hidden[0])


def _partial(cfg: _HFConfig, entry: Mapping[str, Any]) -> tuple[str, Any]:
    """``partial_rotary_factor``: the entry's, else the top level's (which
    transformers copies into every entry), else GPT-NeoX's ``rotary_pct``."""
    for key, v in (
        ("partial_rotary_factor", entry.get("partial_rotary_factor")),
        ("partial_rotary_factor", cfg.get("partial_rotary_factor")),
        ("rotary_pct", cfg.get("rotary_pct")),
    ):
        if v is not None:
            return key, v
    return "partial_rotary_factor", None


def _has_head_size(cfg: _HFConfig) -> bool:
    keys = ("head_dim",) if cfg.is_object else HEAD_DIMS
    if any(cfg.get(k) is not None for k in keys):
        return True
    hidden_keys, head_keys = (("hidden_size",), ("num_attention_heads",)) if cfg.is_object else (HIDDEN, HEADS)
    return any(cfg.get(k) is not None for k in hidden_keys) and any(cfg.get(k) is not None for k in head_keys)


def _rotary_dim(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, layer_type: str | None) -> int:
    """The rotated width: GPT-J's ``rotary_dim``, else the head size times
    ``partial_rotary_factor`` (the entry's, the top level's, GPT-NeoX's
    ``rotary_pct``, the model's default); the whole head for proportional."""
    mt = cfg.model_type or ""
    rotary_dim = cfg.get_int("rotary_dim")
    reading = ROTARY_DIM.get(mt, "width" if not mt else None)
    if rotary_dim is not None and reading is None:
        msg = (
            f"`rotary_dim` of model_type {mt!r} is not supported: transformers' modeling code of this model "
            "does not read it (use partial_rotary_factor)"
        )
        raise ValueError(msg)
    if mt in FIXED_TABLE:  # GPT-J, CodeGen: rotary_dim, else the hidden size; ESM: the head
        if FIXED_TABLE[mt][1] is None:
            head = _head_size(cfg, layer_type)
            return head
        width = rotary_dim if rotary_dim is not None else cfg.get_int("hidden_size")
        if width is None:
            msg = f"`config` of model_type {mt!r} needs rotary_dim (or hidden_size)"
            raise ValueError(msg)
        head = _head_size(cfg, layer_type)
        if width > head:
            msg = f"`rotary_dim` = {width} must be at most the head size {head}"
            raise ValueError(msg)
        return width
    if rotary_dim is not None and reading == "width" and rope_type != "proportional":
        if _has_head_size(cfg):  # a bare {"rotary_dim": n} is the rotated width itself
            head = _head_size(cfg, layer_type)
            if rotary_dim > head:
                msg = f"`rotary_dim` = {rotary_dim} must be at most the head size {head}"
                raise ValueError(msg)
        return rotary_dim
    head = _head_size(cfg, layer_type)
    if rope_type == "proportional":
        return head
    key, factor = _partial(cfg, entry)
    if factor is None and rotary_dim is not None:  # MiniMax-M2
        key, factor = "rotary_dim", rotary_dim / head
    if factor is None:
        factor = PARTIAL_DEFAULTS.get(mt, 1.0)
    factor = _checks.check_float(factor, key, positive=True)
    if factor > 1.0:
        msg = f"`{key}` must be in (0, 1] (a rotary width above the head size), got {factor!r}"
        raise ValueError(msg)
    if mt == "gpt_neox_japanese" and int(head * factor) < head:
        _check_changed_in(mt, f"`{key}` = {factor!r} of model_type {mt!r}")
    return int(head * factor)


def _original(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, nested: bool) -> int:
    """``original_max_position_embeddings`` as transformers standardizes it:
    the top level first (Phi-3; not for per-layer-type entries), then the
    entry, then ``max_position_embeddings``."""
    for source in ("top", "entry", "max"):
        if source == "top" and not nested:
            key, v = "original_max_position_embeddings", cfg.get("original_max_position_embeddings")
        elif source == "entry":
            key, v = "original_max_position_embeddings", entry.get("original_max_position_embeddings")
        elif source == "max":
            key, v = "max_position_embeddings", cfg.get("max_position_embeddings")
        else:
            continue
        if v is not None:
            return _checks.check_int(v, key, minimum=1)
    msg = f"`config` rope_type {rope_type!r} needs original_max_position_embeddings or max_position_embeddings"
    raise ValueError(msg)


def _need(entry: Mapping[str, Any], key: str, rope_type: str) -> Any:
    v = entry.get(key)
    if v is None:
        msg = f"`config` rope_type {rope_type!r} needs {key!r} in its RoPE parameters"
        raise ValueError(msg)
    return v


def _max_positions(cfg: _HFConfig, rope_type: str) -> int:
    v = cfg.get_int("max_position_embeddings")
    if v is None:
        msg = f"`config` rope_type {rope_type!r} needs max_position_embeddings"
        raise ValueError(msg)
    return v


def _ratio_factor(cfg: _HFConfig, entry: Mapping[str, Any], orig: int, rope_type: str) -> float:
    """``factor``, else transformers' ``max_position_embeddings / original``."""
    f = entry.get("factor")
    if f is not None:
        return _checks.check_float(f, "factor", positive=True)
    max_pos = cfg.get_int("max_position_embeddings")
    if max_pos is None:
        msg = f"`config` rope_type {rope_type!r} needs 'factor' in its RoPE parameters (or max_position_embeddings)"
        raise ValueError(msg)
    return max_pos / orig


def _optional(entry: Mapping[str, Any], key: str) -> Any:
    v = entry.get(key)
    return None if v is None else _checks.check_float(v, key)


class _Read:
    """What a scaling reader gets: the configuration, the RoPE entry, its rope
    type, the rotary width and, for a per-layer-type entry, transformers'
    ``truncate`` (None for a flat entry)."""

    __slots__ = ("cfg", "entry", "rope_type", "dim", "truncate")

    def __init__(self, cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, dim: int, truncate: bool | None):
        self.cfg, self.entry, self.rope_type, self.dim, self.truncate = cfg, entry, rope_type, dim, truncate

    def need(self, key: str) -> Any:
        return _need(self.entry, key, self.rope_type)

    def original(self) -> int:
        return _original(self.cfg, self.entry, self.rope_type, self.truncate is not None)

    def ratio_factor(self, orig: int) -> float:
        return _ratio_factor(self.cfg, self.entry, orig, self.rope_type)


def _at_least_one(r: _Read, key: str = "factor") -> float:
    """A scaling factor of a config: >= 1, as transformers' validation asks
    (below 1 the "extension" shortens the context: Linear's frequencies grow
    by 1 / factor, up to overflow; DynamicNTK's base shrinks below 1)."""
    f = _checks.check_float(r.need(key), key, positive=True)
    if not f >= 1.0:
        msg = (
            f"`{key}` of rope_type {r.rope_type!r} must be >= 1 (transformers' validation of the RoPE "
            f"parameters asks for it), got {f!r}"
        )
        raise ValueError(msg)
    return f


def _read_linear(r: _Read) -> tuple[Scaling, int]:
    return Linear(_at_least_one(r)), r.dim


def _read_proportional(r: _Read) -> tuple[Scaling, int]:
    key, fraction = _partial(r.cfg, r.entry)
    try:
        return Proportional(1.0 if fraction is None else fraction, _get_or(r.entry, "factor", 1.0)), r.dim
    except (TypeError, ValueError) as exc:  # name the config's key rather than the dataclass's field
        raise type(exc)(str(exc).replace("`fraction`", f"`{key}`")) from None


def _read_dynamic(r: _Read) -> tuple[Scaling, int]:
    alpha = r.entry.get("alpha")
    if alpha is None:
        return DynamicNTK(_at_least_one(r), _max_positions(r.cfg, r.rope_type)), r.dim
    # Hunyuan: a fixed NTK-alpha, base * alpha ** (d / (d - 2)) over the head ("factor" unread)
    alpha = _checks.check_float(alpha, "alpha", positive=True)
    if r.entry.get("factor") is not None:
        _checks.check_float(r.entry["factor"], "factor")
    head = r.cfg.get_int("head_dim")
    if head is None:
        msg = "`config` with an NTK `alpha` needs head_dim (transformers' Hunyuan reads config.head_dim)"
        raise ValueError(msg)
    if head != r.dim:
        msg = (
            f"`alpha` rotates the whole head ({head}) in transformers' Hunyuan, but the config asks for a "
            f"rotary width of {r.dim} (partial_rotary_factor): drop one"
        )
        raise ValueError(msg)
    if head == 2:
        msg = "`alpha` needs a head size above 2 (its exponent is d / (d - 2))"
        raise ValueError(msg)
    _check_changed_in("alpha", f"`alpha` of rope_type 'dynamic' (model_type {r.cfg.model_type!r})")
    return NTK(alpha), head


def _read_yarn(r: _Read) -> tuple[Scaling, int]:
    orig = r.original()
    max_pos = r.cfg.get_int("max_position_embeddings")
    if max_pos is not None and orig > max_pos:
        msg = (
            f"`original_max_position_embeddings` = {orig} of rope_type 'yarn' must be at most "
            f"`max_position_embeddings` = {max_pos} (YaRN extends the original context to the maximum)"
        )
        raise ValueError(msg)
    fast, slow = _get_or(r.entry, "beta_fast", 32.0), _get_or(r.entry, "beta_slow", 1.0)
    reals = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in (fast, slow))
    if reals and not fast > slow:
        msg = (
            f"`beta_fast` = {fast!r} of rope_type 'yarn' must be greater than `beta_slow` = {slow!r} (the "
            "dimensions turning more than beta_fast times in the original context keep their frequency, those "
            "turning fewer than beta_slow times are interpolated): swapped?"
        )
        raise ValueError(msg)
    own = r.entry.get("truncate")
    own = None if own is None else _checks.check_bool(own, "truncate")
    # a per-layer-type entry takes transformers' top-level truncate, never its own
    truncate = r.truncate if r.truncate is not None else (True if own is None else own)
    scaling = YaRN(
        r.ratio_factor(orig),
        orig,
        beta_fast=_get_or(r.entry, "beta_fast", 32.0),
        beta_slow=_get_or(r.entry, "beta_slow", 1.0),
        mscale=_optional(r.entry, "mscale"),
        mscale_all_dim=_optional(r.entry, "mscale_all_dim"),
        attention_factor=r.entry.get("attention_factor"),
        truncate=truncate,
    )
    return scaling, r.dim


def _read_llama3(r: _Read) -> tuple[Scaling, int]:
    orig = r.original()
    low, high = r.need("low_freq_factor"), r.need("high_freq_factor")
    return Llama3(r.need("factor"), orig, low_freq_factor=low, high_freq_factor=high), r.dim


def _read_longrope(r: _Read) -> tuple[Scaling, int]:
    orig = r.original()
    short, long = r.need("short_factor"), r.need("long_factor")
    kw: dict[str, Any] = {"attention_factor": r.entry.get("attention_factor")}
    if r.cfg.model_type == "phimoe":  # short_factor at every length, cos and sin times short / long_mscale
        if r.entry.get("attention_factor") is not None:
            msg = "`attention_factor` of model_type 'phimoe' is not supported: transformers' PhiMoE uses the mscales"
            raise ValueError(msg)
        long = short
        kw = {key: r.need(key) for key in ("short_mscale", "long_mscale")}
    scaling = LongRoPE(short, long, orig, factor=r.ratio_factor(orig), **kw)
    if len(scaling.short_factor) != r.dim // 2:
        msg = (
            f"`short_factor` and `long_factor` must have dim // 2 = {r.dim // 2} entries for the "
            f"rotary dimension {r.dim}, got {len(scaling.short_factor)}"
        )
        raise ValueError(msg)
    return scaling, r.dim


#: one reader per rope type: the scaling and the rotary width (changed only
#: by Hunyuan's NTK-alpha, which rotates the whole head)
_READERS = {
    "default": lambda r: (None, r.dim),
    "linear": _read_linear,
    "proportional": _read_proportional,
    "dynamic": _read_dynamic,
    "yarn": _read_yarn,
    "llama3": _read_llama3,
    "longrope": _read_longrope,
    "su": _read_longrope,
}


def _scaling_of(
    cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, dim: int, truncate: bool | None
) -> tuple[Scaling | None, int]:
    """The scaling of ``rope_type`` and the rotary width."""
    if cfg.model_type == "phimoe" and rope_type not in ("default", "longrope", "su"):
        msg = (
            f"`rope_type` {rope_type!r} of model_type 'phimoe' is not supported: transformers' PhiMoE multiplies "
            "cos and sin by short_mscale / long_mscale and recomputes the frequencies without the sequence length"
        )
        raise ValueError(msg)
    return _READERS[rope_type](_Read(cfg, entry, rope_type, dim, truncate))


def _get_or(entry: Mapping[str, Any], key: str, default: float) -> Any:
    v = entry.get(key)
    return default if v is None else v


def _check_fixed_table(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, where: str) -> None:
    """GPT-J, CodeGen, ESM: the rotary module reads no RoPE entry."""
    mt = cfg.model_type or ""
    what, base = FIXED_TABLE[mt]
    if rope_type != "default" or set(entry) - {"rope_type", "type", "rope_theta"}:
        msg = (
            f"`{where}` of model_type {mt!r} is not supported: transformers' rotary module of this model "
            f"reads none of it ({what})"
        )
        raise ValueError(msg)
    if base is not None:
        for key in ("rope_theta", "rotary_emb_base"):
            theta = entry.get(key) if key == "rope_theta" and entry.get(key) is not None else cfg.get(key)
            if theta is not None and _checks.check_float(theta, key, positive=True) != base:
                msg = f"`{key}` of model_type {mt!r} is not supported: transformers' module uses base {base:g}"
                raise ValueError(msg)


# --------------------------------------------------------------------------
# vision towers: RoPE over several axes
# --------------------------------------------------------------------------
#: the keys an axial rotary module reads from its RoPE entry
_AXIAL_KEYS = ("rope_type", "type", "rope_theta")


def _head_bound(head: int, key: str) -> int:
    """A head size no table can have is refused (a table of one position has
    ``head`` columns: at most posenc's size limit of 2**40 elements)."""
    if head > _checks.MAX_ELEMENTS:
        msg = f"the head size {head} from `{key}` of `config` is above posenc's limit of 2**40 elements per table"
        raise ValueError(msg)
    return head


def _axial_head(cfg: _HFConfig, mt: str) -> int:
    """The head size an axial module reads (see ``AXIAL_HEAD``), bounded."""
    how = AXIAL_HEAD.get(mt, "head_dim")
    key = {"memory_attention": "memory_attention_hidden_size", "embed_dim": "embed_dim"}.get(how, "hidden_size")
    head = _axial_head_size(cfg, mt)
    return _head_bound(head, "head_dim" if how == "head_dim" and cfg.get("head_dim") is not None else key)


def _axial_head_size(cfg: _HFConfig, mt: str) -> int:
    how = AXIAL_HEAD.get(mt, "head_dim")
    if how == "memory_attention":  # SAM2 / SAM3-tracker / EdgeTAM video memory attention
        keys = (
            "memory_attention_hidden_size",
            "memory_attention_downsample_rate",
            "memory_attention_num_attention_heads",
        )
        values = [cfg.get_int(k) for k in keys]
        missing = [k for k, v in zip(keys, values) if v is None]
        if missing:
            msg = f"`config` of model_type {mt!r} needs `{missing[0]}` (its rotary module reads the head size from it)"
            raise ValueError(msg)
        return values[0] // (values[1] * values[2])  # type: ignore[operator]
    if how == "head_dim":
        head = cfg.get_int("head_dim")
        if head is not None:
            return head
    hidden_key = "embed_dim" if how == "embed_dim" else "hidden_size"
    hidden, heads = cfg.get_int(hidden_key), cfg.get_int("num_attention_heads")
    if hidden is None or heads is None:
        need = "`head_dim`, or " if how in ("head_dim", "embed_dim") else ""
        msg = f"`config` of model_type {mt!r} needs {need}`{hidden_key}` and `num_attention_heads`"
        raise ValueError(msg)
    return hidden // heads


def _axial_freqs(pattern: str, f: Any) -> Any:
    """The frequency matrix ``(hd // 2, 2)`` of the recompositions that
    reorder the axes of the module's ids (h, w)."""
    q = len(f)
    F = np.zeros((2 * q, 2))
    if pattern == "alternating":  # w f0, h f0, w f1, h f1, ...
        F[0::2, 1] = f
        F[1::2, 0] = f
    else:  # cat(w f, h f)
        F[:q, 1] = f
        F[q:, 0] = f
    return F  # a new array on every call: a caller's change reaches no later result


def _axial(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, where: str) -> dict[str, Any]:
    """The keyword arguments of :func:`posenc.rope_axes_cos_sin` for a
    vision tower's RoPE over several axes (refused, once read, where an
    older installed transformers reads it otherwise)."""
    out = _axial_kw(cfg, entry, rope_type, where)
    mt = cfg.model_type or ""
    if mt in CHANGED_IN:
        _check_changed_in(mt, f"`rope_type` {rope_type!r} of model_type {mt!r}")
    return out


def _axial_kw(cfg: _HFConfig, entry: Mapping[str, Any], rope_type: str, where: str) -> dict[str, Any]:
    mt = cfg.model_type or ""
    if mt in AXIAL_REFUSED:
        msg = f"`rope_type` {rope_type!r} of model_type {mt!r} is not supported: {AXIAL_REFUSED[mt]}"
        raise ValueError(msg)
    kind = AXIAL.get(mt)
    if kind is None:
        msg = (
            f"`rope_type` 'axial' of model_type {mt or None!r} is not supported: the vision towers recompose the "
            "angles of their axes in different ways and posenc reads only the model types it knows (see "
            "posenc.rope_axes_cos_sin to build the table)"
        )
        raise ValueError(msg)
    own = "default" if kind in ("llama4", "dinov3") else "axial"
    # transformers' vision configs turn "default" into their own rope type
    if rope_type not in (own, "default"):
        msg = f"`rope_type` {rope_type!r} of model_type {mt!r} is not supported: its rotary module takes {own!r} only"
        raise ValueError(msg)
    for key in entry:
        if key not in _AXIAL_KEYS:
            msg = (
                f"`{key}` of {where} is not supported for the {own!r} RoPE of model_type {mt!r}: its rotary "
                f"module reads {', '.join(_AXIAL_KEYS)} only"
            )
            raise ValueError(msg)
    if kind == "dinov3" and mt == "dinov3_vit" and entry.get("rope_theta") is not None:
        msg = f"`rope_theta` of {where} is not supported for model_type 'dinov3_vit': its module reads the top level's"
        raise ValueError(msg)
    for key in ("partial_rotary_factor", "rotary_dim"):
        if cfg.get(key) is not None:
            msg = f"`{key}` of model_type {mt!r} is not supported: its rotary module rotates the whole head"
            raise ValueError(msg)
    if mt == "dinov3_vit" and cfg.get("rope_theta") is None:
        base = 100.0  # DINOv3ViTConfig's default rope_theta (its class names no default_theta)
    else:
        base = _base(cfg, entry)
    head = _axial_head(cfg, mt)
    if kind == "thw":  # MiniMax-M3-VL: three axes of 2 * ((hd // 3) // 2), the rest of the head unrotated
        width = 2 * ((head // 3) // 2)
        if width < 2:
            msg = f"the head size {head} of model_type {mt!r} is too small for three rotary axes (head_dim >= 6)"
            raise ValueError(msg)
        return {"axes_dim": (width,) * 3, "base": base, "layout": "half", "split": "blocks"}
    if head % 4:
        msg = (
            f"the head size {head} of model_type {mt!r} (head_dim, or hidden_size // num_attention_heads) must be "
            "a multiple of 4: its rotary module gives each of two axes a quarter of the head's planes"
        )
        raise ValueError(msg)
    dims = (head // 2, head // 2)
    if kind in ("hw", "strided", "dinov3"):
        out = {"axes_dim": dims, "base": base, "layout": "half", "split": "strided" if kind == "strided" else "blocks"}
        if kind == "dinov3":
            out["turns"] = True
        return out
    if kind in ("pairs", "llama4"):
        return {"axes_dim": dims, "base": base, "layout": "interleaved", "split": "blocks"}
    f = default_inv_freq(head // 2, base)
    layout = "interleaved" if kind == "wh interleaved" else "half"
    return {"freqs": _axial_freqs(kind, f), "layout": layout}


def _fuyu_text(cfg: _HFConfig) -> Any:
    """Fuyu's language model configuration, the one its rotary module reads:
    ``text_config`` (a dictionary without ``model_type`` is Persimmon's);
    without one, the keys ``FUYU_TEXT_KEYS`` of the top level with
    ``partial_rotary_factor`` 0.5, or ``FUYU_TEXT_DEFAULTS`` without any of
    them, as transformers' configuration class builds it.  Every other
    top-level key is not the language model's and is not read."""
    text = cfg.get("text_config")
    if text is not None:
        if isinstance(text, Mapping):
            return {**text, "model_type": text.get("model_type") or "persimmon"}
        if not callable(getattr(text, "to_dict", None)):
            msg = f"`text_config` of `config` must be a dict or have a to_dict() method, got {type(text).__name__}"
            raise TypeError(msg)
        return text
    if cfg.is_object:  # transformers' configuration always builds one
        msg = "`config` of model_type 'fuyu' has no text_config: pass its language model's configuration"
        raise ValueError(msg)
    moved = {k: cfg._dict[k] for k in FUYU_TEXT_KEYS if k in cfg._dict}
    if not moved:
        return {"model_type": "persimmon", **FUYU_TEXT_DEFAULTS}
    return {**moved, "model_type": "persimmon", "partial_rotary_factor": 0.5}


def from_hf(config: Mapping[str, Any] | Any, *, layer_type: str | None = None) -> dict[str, Any]:
    """Keyword arguments ``{"dim", "base", "scaling"}`` from a Hugging Face config.

    Reads the RoPE parameters the way ``transformers`` does, so that
    ``rope_frequencies(**from_hf(cfg))`` and
    ``rope_cos_sin(positions, **from_hf(cfg))`` give the model's tables:

    * a config object is read through its attributes (so the aliases of its
      class's ``attribute_map`` apply: DBRX's ``max_seq_len``, Bailing's
      ``model_max_length``, ...); a config dictionary through the same
      aliases of its ``model_type`` (both spellings, differing, are refused);
    * the ``rope_parameters`` (transformers 5) or ``rope_scaling`` (older)
      entry with its ``rope_type`` (or older ``type``), in every spelling
      transformers writes from a released ``config.json``: ``type`` and
      ``rope_type`` both, equal or one of the pairs its configuration classes
      write themselves (Qwen2-VL's ``"mrope"`` beside ``"default"``, Phi-3's
      ``"su"`` / ``"yarn"`` beside ``"longrope"``: ``rope_type`` is read, as
      transformers 5 does); both ``rope_scaling`` and ``rope_parameters``
      (``rope_scaling`` is read, as transformers does) where they give one
      reading; a dictionary transformers has filled in place.  Refused: a
      ``type`` and ``rope_type`` that differ otherwise (transformers 4 read
      ``type``, 5 reads ``rope_type``), and the two entries reading
      differently.  Every key of the entry is either understood or known not
      to change the tables; any other key is refused by name;
    * the base: ``rope_theta`` (in the entry or at the top level), GPT-NeoX's
      ``rotary_emb_base``, DBRX's ``attn_config``; else the model's default
      (10000 for most); it must be > 1;
    * the head size: ``head_dim`` (a dictionary also: DeepSeek's
      ``qk_rope_head_dim``, ``attention_head_dim``, ``kv_channels``), else
      ``hidden_size`` (``n_embd``, ``d_model``) ``//``
      ``num_attention_heads`` (``n_head``, ``n_heads``);
    * the rotated part: GPT-J / CodeGen ``rotary_dim`` (MiniMax-M2: the
      partial factor ``rotary_dim / head_dim``), else the head size times
      ``partial_rotary_factor`` (or GPT-NeoX's ``rotary_pct``; the model's
      own default where transformers has one), at most the whole head;
    * ``max_position_embeddings`` and ``original_max_position_embeddings``
      (top level first, as for Phi-3) for the scalings;
    * one entry per layer type (Gemma 3, ModernBERT, ...), also from the
      older format with ``rope_local_base_freq`` (or ``local_rope_theta`` /
      ``global_rope_theta``): pass ``layer_type``.  As transformers does, a
      YaRN entry of a layer type takes ``truncate`` from the top level of the
      RoPE parameters (default True), not its own;
    * multimodal RoPE (Qwen2-VL family, HY-V4-VL, GLM-4V, ``mrope_section``):
      the result also has ``"mrope_section"`` (the model's default sections
      when the config has none) and ``"mrope_interleaved"`` (fixed by the
      model's rotary module: ``True`` for the Qwen3-VL family and HY-V4-VL; a
      model type posenc does not know must say ``mrope_interleaved``), for
      :func:`posenc.mrope_cos_sin`; passing it to
      :func:`posenc.rope_cos_sin` fails with a ``TypeError``;
    * Hunyuan's ``{"rope_type": "dynamic", "alpha": a}`` is a fixed
      NTK-alpha: :class:`NTK` ``(a)`` over the whole head; PhiMoE's LongRoPE
      uses ``short_factor`` at every length and multiplies cos and sin by
      ``short_mscale`` / ``long_mscale`` (:class:`LongRoPE`); GPT-J, CodeGen
      and ESM read no RoPE entry (a scaling is refused).
    * Fuyu (a config object or dictionary of model type ``"fuyu"``): its
      language model's configuration is read, as transformers builds it:
      ``text_config`` (Persimmon's when it names no ``model_type``), else
      the language-model keys of the top level transformers moves into it
      (``hidden_size``, ``num_attention_heads``, ``rope_theta``,
      ``rope_scaling``, ...) with ``partial_rotary_factor`` 0.5 and
      Persimmon's base 10000; the other top-level keys
      (``partial_rotary_factor``, ``rope_parameters``, ``head_dim``) are not
      the language model's and are not read.

    * vision towers (transformers' ``rope_type`` ``"axial"``, also the
      ``"default"`` their configurations turn into it; Llama 4's vision
      model; DINOv3 and EoMT-DINOv3): the result is the keyword arguments
      of :func:`posenc.rope_axes_cos_sin`, not of ``rope_cos_sin`` (which
      refuses them with a ``TypeError``), for position ids in the column
      order of the model's rotary module (see below).

    The vision towers, with ``hd`` the head size (``head_dim``, else
    ``hidden_size // num_attention_heads``; Qwen2-VL: ``embed_dim //
    num_heads``; SAM2 / SAM3-tracker / EdgeTAM video:
    ``memory_attention_hidden_size // (memory_attention_downsample_rate *
    memory_attention_num_attention_heads)``), ``theta`` the config's
    ``rope_theta`` and the ids as :func:`posenc.grid_ids` builds them for
    one image of ``h x w`` patches (``t`` frames):

    * Qwen2-VL, Qwen2.5-VL, Qwen2.5-Omni, Qwen3-VL (MoE), Qwen3-Omni-MoE,
      Qwen3.5 (MoE), Qwen4-exp, GLM-4V (MoE), GLM-OCR, GLM5-next,
      ERNIE-4.5-VL, PaddleOCR-VL, EXAONE-4.5, LFM3-VL, MLCD, Muse, Cohere
      Compass, dots3, VideoLLaMA3 (``cat(h, w)`` doubled):
      ``axes_dim=(hd/2, hd/2)``, ``layout="half"``; ids
      ``grid_ids((h, w), merge=spatial_merge_size)`` (the model's
      ``get_vision_position_ids``, repeated for each frame);
    * Pixtral: the same with ``split="strided"`` (h the even, w the odd
      frequencies of one RoPE of the head); ids ``grid_ids((h, w))``;
    * MiniMax-M3-VL: ``axes_dim=(s, s, s)``, ``s = 2 ((hd // 3) // 2)``,
      ``layout="half"``, the rest of the head unrotated
      (:func:`posenc.rope_axes` does that); ids ``(t, h, w)`` per patch;
    * Inkling2 / Step3p7 (``cat(w, h)`` of the module's ``(h, w)`` ids):
      ``freqs`` of shape ``(hd/2, 2)``, ``layout="interleaved"`` /
      ``"half"``; Kimi-K2.5 (``w f0, h f0, w f1, h f1, ...``): ``freqs``,
      ``layout="half"``; ids ``(h, w)`` per patch as the module takes them
      (Step3p7, Kimi-K2.5: ``grid_ids((h, w))``; Inkling2's model adds 1 to
      its merged-order ids and gives its other tokens 0);
    * SAM3 ViT, SAM2 / SAM3-tracker / EdgeTAM video: ``axes_dim=(hd/2,
      hd/2)``, ``layout="interleaved"``; ids ``(x, y)``:
      ``grid_ids((h, w), indexing="xy")`` (SAM3 also times ``window_size /
      w``);
    * Llama 4 vision: ``axes_dim=(hd/2, hd/2)``, ``layout="interleaved"``;
      ids ``grid_ids((n, n), offset=1, indexing="xy", suffix_tokens=1)``,
      ``n = image_size // patch_size``;
    * DINOv3 ViT, EoMT-DINOv3: ``axes_dim=(hd/2, hd/2)``,
      ``layout="half"``, ``turns=True`` (base 100 by default); ids
      ``grid_ids((h, w), normalize="separate")`` (in eval mode: the
      training augmentations are random).

    ``freqs`` is a new float64 NumPy array on every call (one RoPE of width
    ``hd / 2`` per axis, its planes reordered; ``torch.asarray(kw["freqs"])``
    for torch ids).  Refused: Gemma 4's vision tower (each axis rotated by
    ``rotate_half`` inside its own block of the head, which no single
    layout expresses: the message gives the two-call recipe), a head size
    that is not a multiple of 4 (MiniMax: below 6), any key of the RoPE
    entry besides ``rope_type`` and ``rope_theta``, ``partial_rotary_factor``
    or ``rotary_dim``, a rope type other than the module's, and an
    ``"axial"`` model type posenc does not know.  No configuration of
    transformers carries per-axis scalings (Cosmos's per-axis NTK lives in
    diffusers): none is read; pass ``scaling=[...]`` to
    :func:`posenc.rope_axes_cos_sin` yourself.

    The models are read as transformers 5.24 runs them.  A few readings
    changed in an earlier release; while an older transformers is imported
    (or, not imported, installed), whose module computes another table,
    they are refused with a message naming both versions: Hunyuan's
    ``alpha`` before 5.20 (recomputed as a dynamic NTK of ``factor`` once a
    position reaches ``max_position_embeddings``), a partial
    GPT-NeoX-Japanese before 5.18, the vision towers of MiniMax-M3-VL (before
    5.18) and Step3p7 (before 5.23), a top-level Fuyu config and a PE
    encoder's RoPE entry without ``rope_theta`` before 5.20.

    For a language model the layout is not part of the result: most Hugging Face models rotate
    halves (``layout="half"``, the default of posenc); GPT-J and CodeGen, GLM,
    Helium, ERNIE 4.5 (and DeepSeek with ``rope_interleave``, Llama 4's
    complex rotation, ...) pair neighbours: pass ``layout="interleaved"`` for
    them.  The models covered, with the layout each rotates, are listed in
    the documentation (:doc:`/models`).

    Parameters
    ----------
    config : dict or object
        A config dictionary (``config.json`` loaded with :mod:`json`) or an
        object with ``to_dict()`` such as a ``transformers`` config.
    layer_type : str, optional
        For configs with one RoPE entry per layer type (Gemma 3:
        ``"full_attention"``, ``"sliding_attention"``): which one to read.

    Returns
    -------
    dict
        ``{"dim": rotary dimension, "base": theta, "scaling": Scaling or None}``,
        plus ``"mrope_section"`` and ``"mrope_interleaved"`` for multimodal
        RoPE; for a vision tower ``{"axes_dim", "base", "layout", "split"}``
        (DINOv3: also ``"turns"``) or ``{"freqs", "layout"}``, the keyword
        arguments of :func:`posenc.rope_axes_cos_sin`.  ``freqs`` (Inkling2,
        Step3p7, Kimi-K2.5) is a float64 NumPy array: with the ids of another
        namespace, convert it first, ``kw["freqs"] = xp.asarray(kw["freqs"],
        device=ids.device)`` (``torch.asarray(kw["freqs"], device=ids.device)``,
        ``jax.numpy.asarray(kw["freqs"])``); ``rope_axes_cos_sin`` refuses
        a NumPy matrix with torch ids rather than move it.

    Raises
    ------
    ValueError
        Naming the key that is not supported (a ``rope_type`` such as
        ``"axial"``, a key of the RoPE entry posenc does not know, a
        multimodal recombination other than Qwen2-VL's or Qwen3-VL's),
        missing, contradictory (two spellings of one key that differ) or out
        of range (a rotary width above the head size, ``rope_theta <= 1``,
        a non-positive attention factor), or a reading that changed in a
        transformers release newer than the one imported or installed (see
        above).  posenc never returns a table that differs from the model's.
    TypeError
        Naming the key whose value has the wrong kind (a length that is not
        an integer, a flag that is not a bool, ...).

    Examples
    --------
    >>> from posenc import scaling
    >>> cfg = {"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000.0,
    ...        "max_position_embeddings": 131072,
    ...        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
    ...                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}
    >>> scaling.from_hf(cfg)
    {'dim': 128, 'base': 500000.0,
     'scaling': Llama3(factor=8.0, original_max_positions=8192, low_freq_factor=1.0, high_freq_factor=4.0)}
    >>> scaling.from_hf({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64})
    {'dim': 64, 'base': 10000.0, 'scaling': None}
    >>> scaling.from_hf({"model_type": "qwen2_vl", "hidden_size": 1536, "num_attention_heads": 12,
    ...                  "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}})
    {'dim': 128, 'base': 10000.0, 'scaling': None, 'mrope_section': (16, 24, 24), 'mrope_interleaved': False}
    >>> scaling.from_hf({"model_type": "hunyuan_v1_dense", "head_dim": 128, "rope_theta": 10000.0,
    ...                  "rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 1.0}})
    {'dim': 128, 'base': 10000.0, 'scaling': NTK(factor=1000.0)}
    >>> vision = {"model_type": "qwen2_vl_vision", "embed_dim": 1280, "num_heads": 16,
    ...           "rope_parameters": {"rope_type": "axial", "rope_theta": 10000.0}}
    >>> kw = scaling.from_hf(vision)
    >>> kw
    {'axes_dim': (40, 40), 'base': 10000.0, 'layout': 'half', 'split': 'blocks'}
    >>> import posenc
    >>> cos, sin = posenc.rope_axes_cos_sin(posenc.grid_ids((4, 6), merge=2), **kw)
    >>> cos.shape
    (24, 80)
    >>> scaling.from_hf({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 2.0, "scale": 3}})
    Traceback (most recent call last):
      ...
    ValueError: `scale` of rope_scaling is not supported for rope_type 'linear': ...
    """
    if layer_type is not None and not isinstance(layer_type, str):
        msg = f"`layer_type` must be a str or None, got {_checks.show(layer_type)}"
        raise TypeError(msg)
    cfg = _HFConfig(config)
    if cfg.model_type == "fuyu":  # the language model's configuration (Persimmon), not the top level's keys
        if not cfg.is_object:
            _check_changed_in("fuyu", "`model_type` 'fuyu' (a top-level Fuyu config)")
        return from_hf(_fuyu_text(cfg), layer_type=layer_type)
    entry, where, truncate = _rope_entry(cfg, layer_type)
    rope_type = _rope_type(entry, where, cfg.model_type)
    if rope_type == "axial" or cfg.model_type in AXIAL or cfg.model_type in AXIAL_REFUSED:
        return _axial(cfg, entry, rope_type, where)
    mrope = _mrope(cfg, entry, rope_type)
    if rope_type == "mrope" and mrope is not None:  # older Qwen2-VL config.json: plain RoPE plus sections
        rope_type = "default"
    if rope_type not in HF_TYPES:
        what = {
            "axial": " (2-D vision RoPE: see posenc.axial_rope_cos_sin)",
            "mrope": " without `mrope_section`",
        }.get(rope_type, "")
        msg = (
            f"`rope_type` {rope_type!r}{what} is not supported; posenc reads "
            f"{', '.join(repr(t) for t in HF_TYPES if t != 'su')} (and the older 'su' for longrope)"
        )
        raise ValueError(msg)
    if cfg.model_type in FIXED_TABLE:
        _check_fixed_table(cfg, entry, rope_type, where)
        base = FIXED_TABLE[cfg.model_type][1] or _base(cfg, entry)
    else:
        _check_keys(cfg, entry, rope_type, where, mrope is not None)
        base = _base(cfg, entry)
    cfg.get_int("max_position_embeddings")  # a length, whether a scaling reads it or not
    dim = _rotary_dim(cfg, entry, rope_type, layer_type)
    scaling, dim = _scaling_of(cfg, entry, rope_type, dim, truncate)
    if dim < 2 or dim % 2:
        msg = (
            f"the rotary dimension must be a positive even integer, got {dim} (the head size `head_dim` times "
            "`partial_rotary_factor`, or `rotary_dim`, of the config)"
        )
        raise ValueError(msg)
    out: dict[str, Any] = {"dim": dim, "base": base, "scaling": scaling}
    if mrope is not None:
        out["mrope_section"] = _checks.check_sections(mrope[0], dim)
        out["mrope_interleaved"] = mrope[1]
    return out
