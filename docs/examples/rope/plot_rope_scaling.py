"""
RoPE context extension
======================

:func:`posenc_viz.plot_rope_scaling` draws the RoPE wavelengths under one or
more context-extension scalings of :mod:`posenc.scaling` against the
original ones, with the original context marked.  Linear interpolation
shifts every wavelength; NTK stretches the slow end; YaRN and Llama 3 keep
the fast pairs and interpolate only the slow ones.

*Needs:* posenc, posenc_viz (the ``viz`` extra).
"""

from pprint import pprint

import matplotlib.pyplot as plt

import posenc
import posenc_viz
from posenc import scaling

scalings = {
    "Linear ×4": scaling.Linear(4.0),
    "NTK ×4": scaling.NTK(4.0),
    "YaRN ×4": scaling.YaRN(4.0, original_max_positions=4096),
    "Llama 3 ×4": scaling.Llama3(4.0, original_max_positions=4096),
}
fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
posenc_viz.plot_rope_scaling(128, scalings, ax=ax, title="head dim 128, base 10000")

# %%
# The same as frequency ratios, and the attention factor each scaling
# applies to the ``cos`` / ``sin`` tables:
w0 = posenc.rope_frequencies(128)
for label, s in scalings.items():
    w = posenc.rope_frequencies(128, scaling=s)
    print(f"{label:11s} first {w[0] / w0[0]:.3f}  last {w[-1] / w0[-1]:.3f}"
          f"  attention {s.attention_scaling():.4f}")

# %%
# From a Hugging Face config
# --------------------------
# :func:`posenc.scaling.from_hf` reads the RoPE entries of a ``config.json``
# (here the part of Llama 3.1's that matters):
config = {
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "rope_theta": 500000.0,
    "max_position_embeddings": 131072,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
}
kwargs = scaling.from_hf(config)
pprint(kwargs)
fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
posenc_viz.plot_rope_scaling(kwargs["dim"], [kwargs["scaling"]],
                             base=kwargs["base"], ax=ax, title="Llama 3.1")
