"""
Columns against position: the clock hands
=========================================

:func:`posenc_viz.plot_dimensions` draws chosen columns of a table against
the position.  Each column is a sinusoid; the low ones turn fast and the high
ones slowly, like the second, minute and hour hands of a clock.

*Needs:* posenc, posenc_viz (the ``viz`` extra), NumPy.
"""

import matplotlib.pyplot as plt
import numpy as np

import posenc
import posenc_viz

pe = posenc.sinusoidal(100, 128)
fig, ax = plt.subplots(figsize=(7, 3), layout="constrained")
posenc_viz.plot_dimensions(pe, [0, 10, 20, 40], ax=ax)

# %%
# Sine-only codes
# ---------------
# The hand-made code of the tutorials, :math:`\sin(x), \sin(x/2),
# \sin(x/5)` (:func:`posenc.sines`), at fractional positions.  Unlike the
# sin/cos pairs, a shift of these columns is not a linear map of them.
x = np.linspace(0.0, 30.0, 301)
codes = posenc.sines(x, [1.0, 0.5, 0.2])
fig, ax = plt.subplots(figsize=(7, 3), layout="constrained")
posenc_viz.plot_dimensions(codes, [0, 1, 2], positions=x,
                           labels=["sin(x)", "sin(0.5x)", "sin(0.2x)"], ax=ax)
