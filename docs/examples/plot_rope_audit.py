"""
The RoPE of a model you already have, audited
=============================================

:func:`posenc.audit_rope` runs a model's own rotary module over positions up
to its context and compares its ``cos`` / ``sin`` with posenc's exact
tables; :func:`posenc_viz.plot_rope_audit` draws the error against position,
the floor of the dtype (the exact tables rounded once to it) as a band.

Three states of one small model with Llama 3.1's RoPE (head size 128,
``rope_theta`` 500000, the llama3 scaling, 1M positions with its factor):
built in float32 (the float32 angle product: its error grows with the
position), cast with ``model.to(torch.bfloat16)`` (its ``inv_freq`` rounded
to bfloat16: ``cos`` off by up to 2 beyond a thousand positions), and the
cast model patched by :func:`posenc.torch.patch_rope` (at the bfloat16
floor everywhere).

*Needs:* posenc, posenc_viz (the ``viz`` extra), torch and ``transformers``.
"""

import copy

import matplotlib.pyplot as plt
import torch
import transformers

import posenc
import posenc_viz
from posenc.torch import patch_rope

config = transformers.LlamaConfig(
    vocab_size=97,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=1,
    num_attention_heads=2,
    head_dim=128,
    max_position_embeddings=131072,
    rope_parameters={
        "rope_type": "llama3",
        "rope_theta": 500000.0,
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
)
model = transformers.LlamaModel(config).eval()
cast = copy.deepcopy(model).to(torch.bfloat16)

fig, ax = plt.subplots(figsize=(6.4, 4.0))
posenc_viz.plot_rope_audit(posenc.audit_rope(model), ax=ax, legend=False)
posenc_viz.plot_rope_audit(posenc.audit_rope(cast), ax=ax, legend=False)
with patch_rope(cast):
    patched = posenc.audit_rope(cast)
posenc_viz.plot_rope_audit(patched, ax=ax, legend=False, linestyle="--")
ax.legend(
    ax.get_lines(),
    ["float32: the float32 angle product", ".to(bfloat16): inv_freq in bfloat16", ".to(bfloat16), patched"],
    loc="lower right",
    fontsize="small",
)
ax.set_title("Llama 3.1 RoPE against the exact tables")
plt.show()

# %%
# The table behind the figure, as :func:`posenc.audit_rope` prints it:
print(posenc.audit_rope(cast))
