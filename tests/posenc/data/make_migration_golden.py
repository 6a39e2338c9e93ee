"""Generate ``migration_golden.npz``: rotations of rotary-embedding-torch,
recorded from its own code, for the migration page of the documentation
(``docs/migration.rst`` checks its posenc calls against them when the site
is built).

rotary-embedding-torch is not part of posenc's test stack (it would pull
another torch build), so its outputs are recorded here, in an environment
with the exact torch of ``requirements/lock.txt`` and the package installed
without its dependencies (it needs only torch and einops)::

    python -m venv venv-golden
    venv-golden/bin/pip install torch==2.13.0      # first, alone
    venv-golden/bin/pip install rotary-embedding-torch==0.9.1 einops numpy --no-deps
    venv-golden/bin/python tests/posenc/data/make_migration_golden.py

Recorded (rotary-embedding-torch 0.9.1, ``rotary_embedding_torch.py``), for
``q`` and ``k`` of shape ``(1, 2, 16, 64)`` (batch, heads, positions,
features; float32, seed 0):

``partial``
    ``RotaryEmbedding(dim=32).rotate_queries_or_keys(q)``: the first 32
    features rotated in neighbouring pairs, the rest passed through.
``offset``
    the same with ``offset=5`` (the positions of a cache's next tokens).
``interpolate``
    ``RotaryEmbedding(dim=32, interpolate_factor=2.0)``: positions divided
    by 2.
``ntk``
    ``RotaryEmbedding(dim=32, theta_rescale_factor=2.0)``: the base times
    ``2 ** (32 / 30)``.
``xpos_q``, ``xpos_k``
    ``RotaryEmbedding(dim=64, use_xpos=True).rotate_queries_and_keys(q, k)``:
    xPos with its positions centred on the block (``t - len(t) // 2``).
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch
from rotary_embedding_torch import RotaryEmbedding

HERE = Path(__file__).resolve().parent


def main() -> None:
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 16, 64, generator=gen)
    k = torch.randn(1, 2, 16, 64, generator=gen)
    out = {
        "versions": np.array(
            [f"torch {torch.__version__}", f"rotary-embedding-torch {version('rotary-embedding-torch')}"]
        ),
        "q": q.numpy(),
        "k": k.numpy(),
        "partial": RotaryEmbedding(dim=32).rotate_queries_or_keys(q).numpy(),
        "offset": RotaryEmbedding(dim=32).rotate_queries_or_keys(q, offset=5).numpy(),
        "interpolate": RotaryEmbedding(dim=32, interpolate_factor=2.0).rotate_queries_or_keys(q).numpy(),
        "ntk": RotaryEmbedding(dim=32, theta_rescale_factor=2.0).rotate_queries_or_keys(q).numpy(),
    }
    xq, xk = RotaryEmbedding(dim=64, use_xpos=True).rotate_queries_and_keys(q, k)
    out["xpos_q"], out["xpos_k"] = xq.numpy(), xk.numpy()
    np.savez_compressed(HERE / "migration_golden.npz", **out)
    print(", ".join(f"{k} {v.shape}" for k, v in out.items()))


if __name__ == "__main__":
    main()
