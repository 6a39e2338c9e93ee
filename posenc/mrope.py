r"""Multimodal RoPE (M-RoPE, Qwen2-VL): one position per axis.

A vision-language model gives every token three positions, temporal,
height and width (the same three numbers for a text token), and splits the
``dim // 2`` RoPE frequencies among them:

* ``mrope_interleaved=False`` (Qwen2-VL, Qwen2.5-VL, GLM-4V): contiguous
  sections, frequencies ``[0, s_0)`` turn with the temporal position,
  ``[s_0, s_0 + s_1)`` with the height, the rest with the width;
* ``mrope_interleaved=True`` (Qwen3-VL, Qwen3.5): frequency ``j`` turns with
  the height when ``j % 3 == 1`` and ``j < 3 s_1``, with the width when
  ``j % 3 == 2`` and ``j < 3 s_2``, with the temporal position otherwise.

Each frequency keeps its value :math:`\omega_j` (with any scaling); only the
position that multiplies it changes.  The tables are then laid out like
:func:`posenc.rope_cos_sin`'s, so :func:`posenc.apply_rope` applies them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _checks, _compat, _rope
from ._compat import Array
from .rotary import rope_cos_sin
from .scaling import Scaling
from .scaling._formulas import check_scaling

__all__ = ["mrope_cos_sin"]

#: the axes of the position ids, in order
AXES = _checks.MROPE_AXES


def _owners(sections: tuple[int, ...], interleaved: bool) -> list[int]:
    """The axis (0, 1, 2) whose position turns each of the ``dim // 2`` frequencies."""
    half = sum(sections)
    if not interleaved:
        return [axis for axis, n in enumerate(sections) for _ in range(n)]
    out = []
    for j in range(half):
        if j % 3 == 1 and j < 3 * sections[1]:
            out.append(1)
        elif j % 3 == 2 and j < 3 * sections[2]:
            out.append(2)
        else:
            out.append(0)
    return out


def _runs(owners: list[int]) -> list[tuple[int, int, int]]:
    """``(axis, start, stop)`` of the maximal runs of equal owners."""
    runs: list[tuple[int, int, int]] = []
    for j, axis in enumerate(owners):
        if runs and runs[-1][0] == axis:
            runs[-1] = (axis, runs[-1][1], j + 1)
        else:
            runs.append((axis, j, j + 1))
    return runs


def _pick(tables: list[Array], runs: list[tuple[int, int, int]], half: int, layout: str, xp: Any) -> Array:
    """Columns of the three full tables, by frequency run, in ``layout``."""
    if layout == "half":
        spans = [(a, s, e) for a, s, e in runs] + [(a, half + s, half + e) for a, s, e in runs]
    else:
        spans = [(a, 2 * s, 2 * e) for a, s, e in runs]
    parts = [tables[a][..., s:e] for a, s, e in spans]
    return parts[0] if len(parts) == 1 else xp.concat(parts, axis=-1)


def mrope_cos_sin(
    position_ids: Array,
    dim: int,
    *,
    mrope_section: Sequence[int],
    mrope_interleaved: bool = False,
    base: float = 10000.0,
    scaling: Scaling | None = None,
    layout: str = "half",
    seq_len: int | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> tuple[Array, Array]:
    r"""The ``cos`` and ``sin`` tables of multimodal RoPE (Qwen2-VL family).

    Frequency :math:`\omega_j` (from :func:`posenc.rope_frequencies`) turns
    with the temporal, height or width row of ``position_ids`` as
    ``mrope_section`` and ``mrope_interleaved`` assign it (see
    :mod:`posenc.mrope`); ``cos[..., k] = a \cos(p_{\mathrm{axis}(j)} \omega_j)``
    with the column ``k`` laid out as in :func:`posenc.rope_cos_sin`.
    ``mrope_cos_sin(pid, **posenc.scaling.from_hf(config))`` gives the tables
    of a Qwen2-VL, Qwen2.5-VL, GLM-4V, Qwen3-VL or Qwen3.5 text model.

    Parameters
    ----------
    position_ids : array
        Shape ``(3, ...)``: temporal, height and width positions (integer or
        real), such as Hugging Face's ``(3, batch, seq)``.
    dim : int
        Rotary dimension, a positive even integer.
    mrope_section : sequence of 3 int
        How many frequencies each axis turns; they sum to ``dim // 2``.
    mrope_interleaved : bool, default False
        ``False``: contiguous sections (Qwen2-VL); ``True``: the axes take
        turns over the first ``3 * min`` frequencies (Qwen3-VL).
    base, scaling, layout, seq_len
        As for :func:`posenc.rope_cos_sin`.  ``seq_len`` is the one length of
        the whole call for the length-dependent scalings
        (:class:`~posenc.scaling.DynamicNTK`,
        :class:`~posenc.scaling.LongRoPE`): by default
        ``max(position_ids) + 1`` over every row, as transformers takes it
        (so an image whose temporal row reaches past the original length
        scales its height and width rows too).
    dtype, device, xp
        Output dtype, device for the tables and namespace.

    Returns
    -------
    cos : array
        Shape ``position_ids.shape[1:] + (dim,)``.
    sin : array
        Shape ``position_ids.shape[1:] + (dim,)``.

    Examples
    --------
    >>> import numpy as np
    >>> import posenc
    >>> pid = np.array([[0, 5], [0, 1], [0, 2]])  # two tokens: t, h, w
    >>> cos, sin = posenc.mrope_cos_sin(pid, 8, mrope_section=[2, 1, 1])
    >>> sin.shape
    (2, 8)
    >>> sin[1].round(4)  # frequencies 1, 0.1 turn with t = 5; 0.01 with h = 1; 0.001 with w = 2
    array([-0.9589,  0.4794,  0.01  ,  0.002 , -0.9589,  0.4794,  0.01  ,  0.002 ])
    """
    dim = _checks.check_dim(dim, even=True)
    sections = _checks.check_sections(mrope_section, dim)
    mrope_interleaved = _checks.check_bool(mrope_interleaved, "mrope_interleaved")
    layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
    if not _compat.is_array(position_ids):
        msg = (
            "`position_ids` must be an array of shape (3, ...) (temporal, height, width), "
            f"got {_checks.show(position_ids)}"
        )
        raise TypeError(msg)
    shape = tuple(position_ids.shape)
    if len(shape) < 1 or shape[0] != len(AXES):
        msg = f"`position_ids` must have shape (3, ...) (temporal, height, width), got shape {shape}"
        raise ValueError(msg)
    ns = _compat.resolve({"position_ids": position_ids}, xp=xp, device=device, dtype=dtype).xp
    if seq_len is None:
        # one length for the whole call, as transformers takes it: max(position_ids) + 1 over every row
        # (read only for the length-dependent scalings; traced or lazy ids must come with seq_len)
        try:
            seq_len = _rope.effective_seq_len(None, position_ids, 0, check_scaling(scaling))
        except ValueError as exc:
            raise ValueError(str(exc).replace("`positions`", "`position_ids`")) from None
    rows = [position_ids[i, ...] for i in range(len(AXES))]
    kw = {
        "base": base,
        "scaling": scaling,
        "layout": layout,
        "seq_len": seq_len,
        "dtype": dtype,
        "device": device,
        "xp": xp,
    }
    try:
        cos_sin = [rope_cos_sin(r, dim, **kw) for r in rows]
    except (ValueError, TypeError) as exc:  # the rows are the user's position_ids
        raise type(exc)(str(exc).replace("`positions`", "`position_ids`")) from None
    runs = _runs(_owners(sections, mrope_interleaved))
    half = dim // 2
    cos = _pick([c for c, _ in cos_sin], runs, half, layout, ns)
    sin = _pick([s for _, s in cos_sin], runs, half, layout, ns)
    return cos, sin
