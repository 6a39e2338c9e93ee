"""
The encoding table as a heatmap
===============================

:func:`posenc_viz.plot_encoding` draws a table with positions down and
dimensions across, colour limits symmetric around zero.  This is the
figure of the tutorials: 100 positions of a 512-dimensional table, the fast
low dimensions on the left, the slow high dimensions on the right.

*Needs:* posenc, posenc_viz (the ``viz`` extra).
"""

import matplotlib.pyplot as plt

import posenc
import posenc_viz

pe = posenc.sinusoidal(100, 512)
fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
posenc_viz.plot_encoding(pe, ax=ax, title="posenc.sinusoidal(100, 512)")

# %%
# Layouts and other codes
# -----------------------
# The same frequencies in the concatenated layout of fairseq and
# tensor2tensor (all sines, then all cosines), and the binary code that the
# tutorials start from (non-negative, so drawn with a sequential map:
# ``center=None``).
fig, axes = plt.subplots(1, 2, figsize=(7, 3), layout="constrained")
posenc_viz.plot_encoding(posenc.sinusoidal(100, 64, layout="concat"),
                         ax=axes[0], title='layout="concat", d = 64')
posenc_viz.plot_encoding(posenc.binary(64, 6), ax=axes[1], center=None,
                         title="binary(64, 6)", cbar_label="bit")
