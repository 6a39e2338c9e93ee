"""
A diffusion timestep embedding
==============================

:func:`posenc.timestep_embedding` of the 1000 timesteps of a DDPM schedule,
drawn with :func:`posenc_viz.plot_encoding`: the Stable Diffusion UNet's
320 channels (``[cos | sin]``, ``downscale_freq_shift=0``).  The first
channels of each half turn fast with the timestep, the last ones barely
move; the cosine half starts at 1 for ``t = 0``.

*Needs:* posenc, posenc_viz (the ``viz`` extra), NumPy.
"""

import matplotlib.pyplot as plt
import numpy as np

import posenc
import posenc_viz

t = np.arange(1000)
emb = posenc.timestep_embedding(t, 320, flip_sin_to_cos=True, downscale_freq_shift=0)
fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
posenc_viz.plot_encoding(emb, ax=ax, ylabel="timestep", xlabel="channel",
                         title="timestep_embedding(t, 320, flip_sin_to_cos=True, downscale_freq_shift=0)")

# %%
# Shift and odd widths
# --------------------
# diffusers' default shift of 1 (DDPM) puts the slowest frequency at exactly
# ``1 / max_period``; a shift of 0 (DiT, GLIDE, Stable Diffusion) stops one
# step short of it.  The frequencies of 16 channels on a log scale, and a
# 9-channel embedding, whose zero channel stays last after the flip:
fig, axes = plt.subplots(1, 2, figsize=(7, 3), layout="constrained")
for shift in (1.0, 0.5, 0.0):
    # at t = 1 the angles are the frequencies (all below pi / 2): read them back from the sines
    sines = posenc.timestep_embedding(np.array([1.0]), 16, downscale_freq_shift=shift)[0, :8]
    axes[0].semilogy(np.arcsin(sines), marker="o", label=f"shift {shift:g}")
axes[0].set(xlabel="frequency index i", ylabel="frequency", title="dim = 16")
axes[0].legend()
posenc_viz.plot_encoding(posenc.timestep_embedding(t[:200], 9, flip_sin_to_cos=True), ax=axes[1],
                         ylabel="timestep", xlabel="channel", title="dim = 9, flipped")
