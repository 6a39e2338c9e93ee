"""How exact is the RoPE of the model you already have?

:func:`audit_rope` runs the rotary modules of a loaded model (or of a
config) with their own code, at the model's dtype, over positions up to the
model's context, and compares their ``cos`` / ``sin`` with posenc's exact
tables: a :class:`RopeAudit` with one :class:`RopeModuleAudit` per module.

torch and transformers are imported when the function runs, never when
:mod:`posenc` is imported (the torch side lives in ``posenc.torch``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["audit_rope"]

#: the upper edges of the position bands of a report (then 2**22, ... up to the context)
BAND_EDGES = (2**7, 2**10, 2**13, 2**16, 2**19)


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

    The rotary modules of the vision towers of Qwen2-VL, Qwen2.5-VL and
    Pixtral run at the ids ``(p, p)`` (both axes at the position ``p``) up
    to the side of the tower's grid (``image_size // patch_size``; 1024 for
    Qwen2-VL and Qwen2.5-VL, whose configs set no image size), Llama 4's
    over its whole fixed grid (each patch at the larger of its two ids,
    the class token at 0), all against :func:`posenc.rope_axes_cos_sin`;
    one more cause there: ``freqs_ci cast to bfloat16: its imaginary part
    (the sines) dropped`` (``model.to(dtype)``, even ``.to(torch.float32)``,
    casts Llama 4's complex buffer to its real part).  In a diffusers
    transformer, ``FluxPosEmbed`` / ``Flux2PosEmbed`` (every
    axis at the position, up to 4096) and ``Timesteps`` (the positions are
    timesteps, up to 1000) are audited against
    :func:`posenc.rope_axes_cos_sin` and :func:`posenc.timestep_embedding`.
    A module posenc cannot reproduce (its config refused by
    :func:`~posenc.scaling.from_hf`; the other vision towers, diffusers'
    other modules, not audited yet) is listed as not audited, with the
    reason.

    Parameters
    ----------
    source : torch.nn.Module, config, dict or path
        A loaded transformers model, one of its rotary modules (or a module
        :func:`posenc.torch.patch_rope` put in), a transformers config, a
        config dictionary (with ``model_type``) or the path of a
        ``config.json`` (or of its directory): for a config, the rotary
        modules of its modeling file are built from it, or from its text
        or vision config (with the frequencies in float32, as
        ``from_pretrained`` keeps them).
    dtype : torch.dtype or str, optional
        The dtype to run the modules at (their tables' dtype).  Default:
        the dtype of the model's parameters; for a config its ``dtype``
        (``torch_dtype``); else float32.
    positions : array of int, optional
        The positions to compare (default: 0 and 192 log-spaced positions up
        to the context; for a vision tower, up to its grid's side; of
        Llama 4's fixed grid, the positions given that it has).

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

    The rotary module of Qwen2-VL's vision tower (its default config), as
    built, then cast to bfloat16 (its tables stay float32, its
    frequencies do not):

    >>> from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLVisionRotaryEmbedding
    >>> vision = Qwen2VLVisionRotaryEmbedding(transformers.Qwen2VLVisionConfig())
    >>> print(posenc.audit_rope(vision.to(torch.bfloat16)))
    <source> (Qwen2VLVisionRotaryEmbedding, float32): inv_freq stored in bfloat16
      positions        0-125      error  2.09e-01   floor  2.98e-08
      positions      129-1023     error  1.58e+00   floor  2.98e-08
    """
    from posenc.torch._audit import audit

    return RopeAudit(tuple(audit(source, dtype, positions, RopeModuleAudit)))
