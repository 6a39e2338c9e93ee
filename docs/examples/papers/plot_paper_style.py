"""
Figures for papers: ``paper_style``
===================================

:func:`posenc_viz.paper_style` is a context manager (a
:func:`matplotlib.rc_context`): inside the ``with`` block new figures are one
column (3.3 in) or the full text width (7 in) wide, with fonts sized for
print and TrueType fonts embedded in PDF files.  Outside it nothing changes.

*Needs:* posenc, posenc_viz (the ``viz`` extra).
"""

import matplotlib.pyplot as plt

import posenc
import posenc_viz

print(dict(posenc_viz.COLUMN_WIDTHS), posenc_viz.figsize("single"))

with posenc_viz.paper_style("single"):
    fig, ax = plt.subplots()
    posenc_viz.plot_encoding(posenc.sinusoidal(100, 128), ax=ax)
    # fig.savefig("encoding.pdf") writes a 3.3-inch-wide PDF with embedded fonts
print(fig.get_size_inches())

# %%
# Two columns wide, two panels:
with posenc_viz.paper_style("double", aspect=0.35):
    fig, (ax0, ax1) = plt.subplots(1, 2)
    posenc_viz.plot_wavelengths(512, ax=ax0)
    posenc_viz.plot_similarity_by_offset(512, 100, normalize=True, ax=ax1)
print(fig.get_size_inches())
