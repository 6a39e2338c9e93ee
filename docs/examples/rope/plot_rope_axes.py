"""
Multi-axis RoPE: each axis against its grid
===========================================

Image and video transformers split the rotary width of a head over the axes
of their ids.  :func:`posenc_viz.plot_rope_axes` draws the wavelength of
every plane of every axis, and the number of positions of each axis as a
dashed line: planes above the line turn less than once over the grid.  Flux
gives 8 planes to its text axis (all its text tokens share id 0) and 28 to
rows and columns; Wan 2.1 gives its frames a little more than a third of a
128-wide head, over a 21-frame latent.

*Needs:* posenc, posenc_viz (the ``viz`` extra).
"""

import matplotlib.pyplot as plt

import posenc_viz

with posenc_viz.paper_style("double", aspect=0.62):
    fig, (left, right) = plt.subplots(1, 2, sharey=True)
    posenc_viz.plot_rope_axes(
        [16, 56, 56], grid_shape=[1, 64, 64], names=["text", "rows", "columns"], title="Flux, 1024 x 1024", ax=left
    )
    posenc_viz.plot_rope_axes(
        [44, 42, 42], grid_shape=[21, 30, 52], names=["frames", "rows", "columns"], title="Wan 2.1, 480p", ax=right
    )
    right.set_ylabel("")
    # each panel's legend below it, clear of the curves
    for ax in (left, right):
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, frameon=False)
    plt.show()
