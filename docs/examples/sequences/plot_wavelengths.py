"""
The wavelength spectrum
=======================

:func:`posenc_viz.plot_wavelengths` draws the wavelength
:math:`2\\pi / \\omega_i` of each sin/cos pair on a log scale, with the bounds
:math:`2\\pi` and :math:`\\mathrm{base} \\cdot 2\\pi` marked: a straight line, since
the wavelengths form a geometric progression.

*Needs:* posenc, posenc_viz (the ``viz`` extra).
"""

import matplotlib.pyplot as plt

import posenc
import posenc_viz

fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
posenc_viz.plot_wavelengths(512, ax=ax, title="d = 512, base 10000")
print(posenc.wavelengths(512)[[0, -1]])

# %%
# Conventions and bases
# ---------------------
# fairseq and tensor2tensor space the same range with :math:`d/2 - 1` steps
# (the last wavelength is exactly :math:`\mathrm{base}\cdot 2\pi`); a larger
# base stretches the slow end.  Frequencies instead of wavelengths:
fig, axes = plt.subplots(1, 2, figsize=(7, 3), layout="constrained")
posenc_viz.plot_wavelengths(64, ax=axes[0], label="paper", bounds=False)
posenc_viz.plot_wavelengths(64, convention="fairseq", ax=axes[0],
                            label="fairseq", bounds=False)
axes[0].legend(frameon=False)
for base in (1e4, 5e5):
    posenc_viz.plot_wavelengths(64, base=base, quantity="frequency",
                                ax=axes[1], label=f"base {base:g}",
                                bounds=False)
axes[1].legend(frameon=False)
