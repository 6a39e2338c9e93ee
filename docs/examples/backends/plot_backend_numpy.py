"""
NumPy: a table, its heatmap and its columns
===========================================

With no arrays among the arguments posenc returns NumPy arrays in float64
(``dtype=`` asks for another precision).  This draws the table of the
tutorials, 100 positions and 512 dimensions, with plain matplotlib.

*Needs:* posenc, NumPy, matplotlib.
"""

import matplotlib.pyplot as plt
import numpy as np

import posenc

pe = posenc.sinusoidal(100, 512)
print(type(pe).__name__, pe.shape, pe.dtype)

# %%
# Rows are positions; the low dimensions oscillate quickly, the high ones
# hardly move over 100 positions.
fig, ax = plt.subplots(figsize=(7, 3.5))
im = ax.imshow(pe, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1,
               interpolation="nearest")
ax.set(xlabel="dimension", ylabel="position", title="posenc.sinusoidal(100, 512)")
fig.colorbar(im, ax=ax)

# %%
# A few columns against the position: the "clock hands" of the table.
fig, ax = plt.subplots(figsize=(7, 3))
for j in (0, 8, 32, 128):
    ax.plot(pe[:, j],
            label=f"column {j} (wavelength {posenc.wavelengths(512)[j // 2]:.0f})")
ax.set(xlabel="position", ylabel="value")
ax.legend(frameon=False, fontsize=8, loc="lower left")

# %%
# float32 tables are computed with exact angles, not by rounding
# ``p * w`` to float32 first:
pe32 = posenc.sinusoidal(np.arange(10**6, 10**6 + 4), 512, dtype="float32")
ref = posenc.sinusoidal(np.arange(10**6, 10**6 + 4), 512)
print(pe32.dtype, "max error against float64:", np.abs(pe32 - ref).max())
