"""
Dask: a table larger than memory
================================

With Dask positions posenc builds a lazy graph: nothing is computed until you
ask, and only the chunks you read are computed.  Chunk the positions; the
chunks of the table follow them.

*Needs:* posenc, NumPy, Dask, matplotlib.
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

import posenc

positions = da.arange(10**8, chunks=2**16)
pe = posenc.sinusoidal(positions, 64, dtype="float32")
print(pe)
print(f"{pe.nbytes / 1e9:.1f} GB as float32, in {pe.npartitions} chunks")

# %%
# Reading a window far into the table computes one chunk:
window = pe[50_000_000:50_000_200].compute()
print(type(window).__name__, window.shape)
ref = posenc.sinusoidal(np.arange(50_000_000, 50_000_200), 64)
print("max error against float64:", np.abs(window - ref).max())

fig, ax = plt.subplots(figsize=(7, 3))
im = ax.imshow(window.T, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1,
               interpolation="nearest",
               extent=(50_000_000, 50_000_200, 64, 0))
ax.set(xlabel="position", ylabel="dimension",
       title="positions 5·10⁷ … 5·10⁷ + 200")
fig.colorbar(im, ax=ax)

# %%
# Reductions stream over the chunks.  For example the mean of the slowest
# column over the first two million positions (a few chunks):
print(pe[: 2 * 10**6, -2].mean().compute())
