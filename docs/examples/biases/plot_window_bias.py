"""
Relative position bias of an attention window (Swin, BEiT)
==========================================================

Swin and BEiT learn, per head, one bias for each 2-D offset between a query
patch and a key patch of a window: a table of :math:`(2W_h - 1)(2W_w - 1)`
values, indexed by :func:`posenc.relative_position_index`.
:func:`posenc_viz.plot_window_bias` draws the resulting ``(N, N)`` bias as a
grid of maps, one per query patch, each showing the bias that query adds to
every key of the window.  Because the bias depends on the offset only, every
map is the same picture moved with its query (outlined).

*Needs:* posenc, posenc_viz (the ``viz`` extra), NumPy.
"""

import matplotlib.pyplot as plt
import numpy as np

import posenc
import posenc_viz

# %%
# A table of offsets
# ------------------
# A stand-in for a trained head: the bias falls off with distance, faster
# across rows than along them (a head that looks along the row).
window = (5, 5)
dr, dc = np.meshgrid(np.arange(-4, 5), np.arange(-4, 5), indexing="ij")
table = (-0.6 * np.abs(dr) - 0.2 * np.abs(dc)).reshape(-1, 1)  # (81, heads = 1)
index = posenc.relative_position_index(window)  # (25, 25)
print(index.shape, index.min(), index.max())

# the bias Swin adds to its logits: table[index], heads first
bias = np.moveaxis(table[index], -1, 0)
fig = posenc_viz.plot_window_bias(bias, window, head=0)

# %%
# A new window size
# -----------------
# Fine-tuned at another resolution, the table moves to the new window's
# offsets.  timm (for Swin, BEiT and MaxViT checkpoints) resamples it as the
# BEiT code does: the old offsets are spread geometrically from the centre,
# so that the centre, where the bias changes most, keeps its resolution
# (:func:`posenc.resample_relative_table`).
new = posenc.resample_relative_table(table, 8, old_window=window)
big = np.moveaxis(new[posenc.relative_position_index(8)], -1, 0)
fig = posenc_viz.plot_window_bias(big, 8, head=0, cbar_label="bias (resampled)")

# %%
# Swin-V2: log-spaced coordinates
# -------------------------------
# Swin-V2 replaces the table by a small MLP of the offsets' log-spaced
# coordinates (:func:`posenc.relative_log_coords`), which extrapolate to
# windows larger than the one of pretraining.
coords = posenc.relative_log_coords(8, pretrained_window=5)
fig, ax = plt.subplots(figsize=(5, 3), layout="constrained")
ax.plot(np.arange(-7, 8), coords[:, 7, 0], "o-", label="pretrained window 5, window 8")
ax.plot(np.arange(-7, 8), posenc.relative_log_coords(8)[:, 7, 0], "s-", label="window 8")
ax.set(xlabel="row offset", ylabel="log-spaced coordinate")
ax.legend(frameon=False)
