"""
Position embeddings of your own ViT
===================================

The ViT paper (Dosovitskiy et al., 2021, Fig. 7) shows what a vision
transformer's learned position embeddings learned: for each patch, the
cosine similarity between its embedding and every other patch's, drawn as a
small map where the patch sits in the image.  Each map peaks at its own
patch and stays high along its row and its column: the table has learned
the 2-D layout from 1-D positions.

:func:`posenc_viz.load_table` reads such a table from a file (``.npy``,
``.npz``, ``.safetensors`` or a PyTorch checkpoint) and
:func:`posenc_viz.plot_grid_similarity` draws the figure.  A trained
ViT-B/16 at 224 px has a ``(1, 197, 768)`` ``pos_embed``: one cls row, then
14 x 14 patches.  This example makes a stand-in for one, saves it as a
checkpoint would hold it, and reads it back.

*Needs:* posenc, posenc_viz (the ``viz`` extra), NumPy.
"""

import os
import shutil
import tempfile

import matplotlib.pyplot as plt
import numpy as np

import posenc
import posenc_viz

# %%
# A stand-in for a trained table: each patch's embedding is a random
# projection of smooth random features of its row and of its column (what
# training tends to find), plus a little noise; the cls row comes first.
rng = np.random.default_rng(0)
h = w = 14
rows, cols = np.divmod(np.arange(h * w), w)


def smooth_features(x, m, length):
    freq = rng.normal(0.0, 1.0 / length, m)
    phase = rng.uniform(0.0, 2.0 * np.pi, m)
    return np.sqrt(2.0 / m) * np.cos(np.outer(x, freq) + phase)


features = np.concatenate([smooth_features(rows, 384, 2.5), smooth_features(cols, 384, 2.5)], axis=1)
features -= features.mean(axis=0)
rotation, _ = np.linalg.qr(rng.standard_normal((768, 768)))
patches = features @ rotation + 0.02 * rng.standard_normal((h * w, 768))
pos_embed = np.concatenate([0.02 * rng.standard_normal((1, 768)), patches])[None].astype(np.float32)

folder = tempfile.mkdtemp()
path = os.path.join(folder, "vit_b16.npz")
np.savez(path, pos_embed=pos_embed, cls_token=np.zeros((1, 1, 768), np.float32))

# %%
# Read it back by its key, and draw every patch's map.  The table keeps its
# leading axis of 1; the figure drops it, and ``num_prefix_tokens=1`` drops
# the cls row.  The command line does the same:
# ``posenc-viz grid-similarity --table vit_b16.npz:pos_embed --prefix 1``
# (see :ref:`cli-own-model`).
table = posenc_viz.load_table(path, "pos_embed")
print(table.shape, table.dtype)

with posenc_viz.paper_style("single"):
    fig = posenc_viz.plot_grid_similarity(table, num_prefix_tokens=1)

# %%
# A few patches, larger: the corners and the centre, each with its own
# patch outlined.
with posenc_viz.paper_style("single"):
    fig = posenc_viz.plot_grid_similarity(
        table, num_prefix_tokens=1, patches=[(0, 0), (0, 13), (7, 7), (13, 0), (13, 13), (3, 10)]
    )

# %%
# For comparison, the fixed 2-D sin-cos table of MAE
# (:func:`posenc.sincos_grid`).  Its embedding is a row part and a column
# part side by side, each of constant norm, so every map is a row term plus
# a column term: a cross through the patch.  With 768 features and base
# 10000 most frequencies are too slow to tell 14 patches apart, so all
# similarities are high; the colour scale starts at 0.6 to show the cross.
fixed = posenc.sincos_grid((14, 14), 768, cls_token=True, flatten=True)
grid = np.asarray(fixed, dtype=np.float64)[1:]
unit = grid / np.linalg.norm(grid, axis=1, keepdims=True)
print(f"smallest cosine similarity of the fixed table: {(unit @ unit.T).min():.3f}")
with posenc_viz.paper_style("single"):
    fig = posenc_viz.plot_grid_similarity(fixed, num_prefix_tokens=1, vmin=0.6, vmax=1.0)

shutil.rmtree(folder)  # the files were only needed to show the reading
plt.show()
