"""
JAX: the same functions under ``jax.jit``
=========================================

posenc never branches on array values, so its functions trace.  Python
arguments (``dim``, ``base``, ``layout``) are static; positions may be traced.
Without ``jax_enable_x64`` posenc computes exact float32 angles: integer
positions in 32-bit fixed point, real ones with a digit decomposition.

*Needs:* posenc, NumPy, JAX, matplotlib.
"""

import functools

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import posenc


@functools.partial(jax.jit, static_argnames=("dim",))
def encode(tokens, start, dim):
    """Embeddings of a decoding step: positions start .. start + seq - 1."""
    positions = start + jnp.arange(tokens.shape[-2])
    return tokens + posenc.sinusoidal(positions, dim)


x = jnp.zeros((1, 6, 32))
y = encode(x, 1000, dim=32)
print(type(y).__name__, y.dtype, y.shape)
print(np.abs(np.asarray(y[0]) - posenc.sinusoidal(np.arange(1000, 1006), 32)).max())

# %%
# A function of positions can be differentiated and vectorised like any
# other JAX function.  The derivative of the table with respect to the
# (fractional) position is the table shifted by a quarter period, times the
# frequency:
def table_of_p(p):
    return posenc.sinusoidal(p, 16)


d_dp = jax.vmap(jax.jacfwd(table_of_p))(jnp.linspace(0.0, 20.0, 200))
fig, ax = plt.subplots(figsize=(7, 3))
t = np.linspace(0.0, 20.0, 200)
for j in (0, 2, 4):
    ax.plot(t, np.asarray(d_dp)[:, j], label=f"d PE[:, {j}] / dp")
ax.set(xlabel="position p", ylabel="derivative")
ax.legend(frameon=False)
