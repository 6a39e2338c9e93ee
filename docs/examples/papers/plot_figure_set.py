"""
The standard figure set
=======================

:func:`posenc_viz.figure_set` writes every figure of the set (the list is
:data:`posenc_viz.FIGURES`) as PDF, PNG or SVG, each at its natural width in
:func:`~posenc_viz.paper_style`.  It is what ``make figures`` and the
``posenc-viz all`` command run.  Here it writes small PNGs into a temporary
folder, shown below as thumbnails.

*Needs:* posenc, posenc_viz (the ``viz`` extra).
"""

import tempfile
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt

import posenc_viz

print(posenc_viz.FIGURES)
out = Path(tempfile.mkdtemp())
files = posenc_viz.figure_set(out, formats=["png"], dpi=60)
for f in files:
    print(f.name)

# %%
n = len(files)
cols = 3
fig, axes = plt.subplots(-(-n // cols), cols, figsize=(9, 2.6 * -(-n // cols)),
                         layout="constrained")
for ax in axes.flat:
    ax.axis("off")
for ax, f in zip(axes.flat, files):
    ax.imshow(mpimg.imread(f))
    ax.set_title(f.stem, fontsize=9)
