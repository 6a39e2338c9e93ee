"""
The similarity matrix
=====================

:func:`posenc_viz.plot_similarity` draws :math:`PE_s \\cdot PE_t` for all
pairs of positions.  For the sinusoidal table it is constant along every
diagonal: the product depends on :math:`s - t` only.  A random (untrained)
learned table, for contrast, has no such structure.

*Needs:* posenc, posenc_viz (the ``viz`` extra).
"""

import matplotlib.pyplot as plt

import posenc
import posenc_viz

fig, axes = plt.subplots(1, 2, figsize=(7, 3), layout="constrained")
posenc_viz.plot_similarity(posenc.sinusoidal(100, 512), ax=axes[0],
                           title="sinusoidal(100, 512)")
posenc_viz.plot_similarity(
    posenc.learned_table(100, 512, seed=0),
    ax=axes[1],
    normalize=True,
    title="learned_table (initial), cosine",
)
