"""
Attention biases: ALiBi, T5 buckets, KERPLE
===========================================

:func:`posenc_viz.plot_bias` draws a ``(query, key)`` bias map of one head,
masked cells (a causal ``-inf``) in light grey.  Relative schemes add such a
matrix to the attention logits instead of adding a table to the inputs.

*Needs:* posenc, posenc_viz (the ``viz`` extra), NumPy.
"""

import matplotlib.pyplot as plt
import numpy as np

import posenc
import posenc_viz

# %%
# ALiBi
# -----
# Press et al.'s linear biases :math:`-m_h\,|i - j|`, one slope per head
# (:func:`posenc.alibi_slopes`), here causal for a decoder.
slopes = posenc.alibi_slopes(8)
print(slopes)
bias = posenc.alibi_bias(8, 16, causal=True)
fig, axes = plt.subplots(1, 3, figsize=(8, 2.8), layout="constrained")
for ax, h in zip(axes, (0, 1, 3)):
    # one colour scale for every head, so that the slopes show
    posenc_viz.plot_bias(
        bias, head=h, ax=ax, vmin=-slopes[0] * 15, vmax=0.0,
        title=f"head {h}, slope {slopes[h]:g}", cbar=h == 3,
    )

# %%
# T5 relative buckets
# -------------------
# Raffel et al.'s buckets: exact for small distances, logarithmic up to
# ``max_distance``, one bucket for everything beyond; separate buckets for
# each direction when bidirectional (:func:`posenc.t5_buckets`).
fig, axes = plt.subplots(1, 2, figsize=(7, 3), layout="constrained")
posenc_viz.plot_bias(posenc.t5_buckets(64), ax=axes[0], title="bidirectional",
                     cbar_label="bucket")
posenc_viz.plot_bias(posenc.t5_buckets(64, bidirectional=False), ax=axes[1],
                     title="causal (decoder)", cbar_label="bucket")

# %%
# KERPLE
# ------
# Chi et al.'s logarithmic kernel :math:`-r_1 \log(1 + r_2 |i - j|)` decays
# more slowly than ALiBi's straight line (:func:`posenc.kerple_bias`).
kerple = posenc.kerple_bias(32, r1=np.array([1.0]), r2=np.array([1.0]))
alibi = posenc.alibi_bias(1, 32, slopes=np.array([0.25]))
fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
ax.plot(kerple[0, -1], label="KERPLE log, r1 = r2 = 1")
ax.plot(alibi[0, -1], label="ALiBi, slope 1/4")
ax.set(xlabel="key position j (query at 31)", ylabel="bias")
ax.legend(frameon=False)
