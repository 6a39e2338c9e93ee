"""
Similarity against the offset
=============================

:func:`posenc_viz.plot_similarity_by_offset` draws
:math:`PE_t \\cdot PE_{t+k} = \\sum_i \\cos(k\\,\\omega_i)` against :math:`k`: an even
curve, the same for :math:`k` and :math:`-k`.  The sinusoidal table encodes
distance, not direction.

*Needs:* posenc, posenc_viz (the ``viz`` extra), NumPy.
"""

import matplotlib.pyplot as plt
import numpy as np

import posenc
import posenc_viz

fig, ax = plt.subplots(figsize=(7, 3), layout="constrained")
for d in (64, 128, 512):
    posenc_viz.plot_similarity_by_offset(d, 200, normalize=True, ax=ax,
                                         label=f"d = {d}")
ax.legend(frameon=False)
print(posenc.similarity_by_offset(np.array([-3, 0, 3]), 512))

# %%
# RoPE's long-term decay
# ----------------------
# ``kind="rope_bound"`` draws the upper bound of RoFormer (Su et al.) on the
# relative attention score of rotary embeddings, with the same frequencies:
# it decays with the distance.  Positive distances on a logarithmic axis show
# the decay over five decades; a larger base pushes it farther out.
k = np.unique(np.geomspace(1, 100_000, 600).astype(int))
fig, ax = plt.subplots(figsize=(7, 3), layout="constrained")
for base in (1e4, 5e5):
    posenc_viz.plot_similarity_by_offset(128, k, base=base, kind="rope_bound",
                                         normalize=True, ax=ax,
                                         label=f"base {base:g}")
ax.set_xscale("log")
ax.legend(frameon=False)
