"""
PyTorch: devices, bfloat16 and gradients
========================================

Pass tensors and posenc returns tensors on their device.  Request a dtype
with torch's own objects; bfloat16 tables are computed in float32 and cast
once.

*Needs:* posenc, NumPy, torch, matplotlib.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch

import posenc

positions = torch.arange(2048)
pe = posenc.sinusoidal(positions, 128, dtype=torch.bfloat16)
print(type(pe).__name__, pe.dtype, pe.device, tuple(pe.shape))

# %%
# The device follows the positions (``meta`` tensors carry no data, which
# makes the rule visible on any machine; on a GPU use ``device="cuda"``):
print(posenc.sinusoidal(torch.arange(4, device="meta"), 8).device)

# %%
# Adding the table to embeddings keeps the embeddings' dtype and device, and
# gradients flow to them:
emb = torch.randn(2, 16, 64, requires_grad=True)
x = posenc.add_sinusoidal(emb, input_scale=64**0.5)
x.square().sum().backward()
print(x.dtype, emb.grad.shape)

# %%
# The error of the bfloat16 table is the rounding of the result alone; the
# same formula with angles formed in bfloat16 is wrong from a few dozen
# positions on.
ref = posenc.sinusoidal(np.arange(2048), 128)
w = torch.as_tensor(posenc.frequencies(128), dtype=torch.bfloat16)
p = positions.to(torch.bfloat16)[:, None]
naive = torch.stack([torch.sin(p * w), torch.cos(p * w)], -1).reshape(2048, 128)

fig, ax = plt.subplots(figsize=(7, 3))
ax.semilogy(np.abs(naive.float().numpy() - ref).max(axis=1), lw=0.8,
            label="angles in bfloat16")
ax.semilogy(np.abs(pe.float().numpy() - ref).max(axis=1), lw=0.8,
            label="posenc, dtype=torch.bfloat16")
ax.set(xlabel="position", ylabel="max |error| over the row",
       title="bfloat16 tables, d = 128")
ax.legend(frameon=False)
