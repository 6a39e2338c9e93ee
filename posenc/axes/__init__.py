r"""RoPE over several axes from position ids: image and video diffusion
transformers, the vision towers of VLMs, EVA, DINOv3 and RoPE-Mixed.

A token of an image or a video carries one position per axis (frame, row,
column; Flux adds a text axis).  Multi-axis RoPE gives every axis :math:`k`
its own rotary width :math:`d_k` (``axes_dim``), base and scaling, and turns
the :math:`d_k / 2` planes of axis :math:`k` by that axis' position:

.. math::

    \theta^{(k)}_i = p_k\,\omega^{(k)}_i, \qquad
    \omega^{(k)} = \mathtt{rope\_frequencies}(d_k, b_k, s_k),

the angles of all axes concatenated (axis 0's planes first) and laid out
over the rotary width :math:`D = \sum_k d_k` as :func:`posenc.apply_rope`
expects.  Models disagree on three things, each an argument here:

* the **layout** of :math:`D`: per-axis interleaved pairs (Flux, Wan,
  HunyuanVideo, CogVideoX, Qwen-Image, Llama 4 vision, EVA, RoPE-Mixed) or
  one half split over all axes (Qwen2-VL's vision tower, Pixtral, Cosmos,
  CogView4, DINOv3);
* which **frequencies** an axis takes: a RoPE of its own width (``split=
  "blocks"``) or every ``n``-th frequency of one RoPE of the whole width
  (``split="strided"``, Pixtral), or a learned or custom frequency matrix
  (``freqs=``: RoPE-Mixed, Mochi, LTX-Video);
* the **ids**: row-major or merged-patch order, offsets, centred or
  normalised coordinates, rescaled grids, text tokens; :func:`grid_ids`
  builds those of every model above.

Every angle is exact as in :func:`posenc.rope_cos_sin` (float32 tables
within a few float32 ulp of the float64 truth), on devices with and without
float64.
"""

from __future__ import annotations

from ._grid_ids import grid_ids
from ._rope_axes import rope_axes, rope_axes_cos_sin

__all__ = ["rope_axes_cos_sin", "rope_axes", "grid_ids"]

# the public names live here (the API pages and the hardening registry name them posenc.axes.X)
for _fn in (rope_axes_cos_sin, rope_axes, grid_ids):
    _fn.__module__ = __name__
del _fn
