"""The figure of :func:`posenc.audit_rope`: a model's RoPE error against position."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _mpl
from ._common import set_labels

__all__ = ["plot_rope_audit"]


def _modules(report: Any) -> list[Any]:
    from posenc.audit import RopeAudit, RopeModuleAudit

    if isinstance(report, RopeModuleAudit):
        return [report]
    if isinstance(report, RopeAudit):
        return list(report)
    msg = f"`report` must be what posenc.audit_rope returns (or one module of it), got {type(report).__name__}"
    raise TypeError(msg)


def plot_rope_audit(
    report: Any,
    *,
    ax: Any = None,
    xlabel: str | None = "position",
    ylabel: str | None = r"max $|$table $-$ exact$|$",
    title: str | None = None,
    legend: bool = True,
    **kwargs: Any,
) -> Any:
    """A model's RoPE error against position, log-log, with the floor of its dtype as a band.

    One curve per audited module (and layer type) of a report of
    :func:`posenc.audit_rope`: the largest error of the module's ``cos`` /
    ``sin`` at each position compared, over a shaded band from the bottom
    of the axes up to the floor of the module's dtype (the exact tables
    rounded once to it: what an exact table reaches).  Position 0 is left
    out (log scale).  Modules not audited are not drawn.

    Parameters
    ----------
    report : RopeAudit or RopeModuleAudit
        What :func:`posenc.audit_rope` returned (or one module of it).
    ax : matplotlib Axes, optional
        Where to draw (default: the current Axes).
    xlabel, ylabel, title : str or None
        Labels (None leaves one unset).
    legend : bool, default True
        A legend naming each module and its cause.
    **kwargs
        Passed to :meth:`~matplotlib.axes.Axes.plot` for every curve.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import torch, transformers, posenc, posenc_viz
    >>> from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    >>> rope = LlamaRotaryEmbedding(transformers.LlamaConfig(head_dim=64, rope_theta=500000.0))
    >>> report = posenc.audit_rope(rope.to(torch.bfloat16))
    >>> fig, ax = plt.subplots()
    >>> ax = posenc_viz.plot_rope_audit(report, ax=ax)
    >>> [line.get_label() for line in ax.get_lines()]
    ['<source>: inv_freq stored in bfloat16']
    >>> plt.close(fig)
    """
    if not isinstance(legend, bool):
        msg = f"`legend` must be a bool, got {type(legend).__name__}"
        raise TypeError(msg)
    mods = [m for m in _modules(report) if m.audited and len(m.positions) > 0]
    ax = _mpl.get_ax(ax)
    floors = [np.asarray(m.floor)[np.asarray(m.positions) > 0] for m in mods]
    errs = [np.asarray(m.error)[np.asarray(m.positions) > 0] for m in mods]
    positive = [v[v > 0] for v in (*floors, *errs) if np.any(v > 0)]
    bottom = min(float(v.min()) for v in positive) / 10 if positive else 1e-9
    drawn = False
    for m, fl, err in zip(mods, floors, errs):
        p = np.asarray(m.positions)
        p = p[p > 0]
        if p.size == 0:  # (position 0 alone: nothing on a log axis)
            continue
        drawn = True
        (line,) = ax.plot(p, np.maximum(err, bottom), label=f"{m.name or '<source>'}: {m.cause}", **kwargs)
        ax.fill_between(p, bottom, np.maximum(fl, bottom), color=line.get_color(), alpha=0.15, linewidth=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    set_labels(ax, xlabel, ylabel, title)
    if legend and drawn:
        ax.legend(loc="best", fontsize="small")
    return ax
