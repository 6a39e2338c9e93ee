"""Generate ``axes_golden.npz``: the multi-axis RoPE tables of timm and torchtune,
recorded from their own code.

timm and torchtune cannot be installed next to posenc's test stack (timm
imports torchvision, torchtune torchao, and either would pull another torch
build), so their outputs are recorded here, in a separate environment with
the exact torch of ``requirements/lock.txt`` and the two packages installed
without their dependencies::

    python -m venv venv-golden
    venv-golden/bin/pip install torch==2.13.0      # first, alone
    venv-golden/bin/pip install timm==1.0.31 torchtune==0.6.1 numpy --no-deps
    venv-golden/bin/python tests/posenc/data/make_axes_golden.py

Only the modules that hold the position embeddings are imported (their
packages' ``__init__`` files, which import torchvision and torchao, are
skipped).  Recorded, each as the module returns it:

timm 1.0.31, ``timm/layers/pos_embed_sincos.py``
    ``eva_*``: ``RotaryEmbeddingCat(16, in_pixels=False, feat_shape=[3, 5],
    ref_feat_shape=[4, 4]).get_embed()`` (EVA-02's RoPE: ``[sin | cos]``,
    each interleaved) and ``apply_rot_embed_cat`` of a random ``x``;
    ``dinov3_{separate,min,max}_*``: ``RotaryEmbeddingDinoV3(16,
    temperature=100, normalize_coords=...).get_embed((2, 4))`` (float32; with
    ``dtype=torch.float64`` its periods are still computed in float32) and
    ``apply_rot_embed_cat(..., half=True)`` of a random ``x``;
    ``mixed_*``: RoPE-Mixed, ``init_random_2d_freqs(16, depth=2,
    num_heads=2, temperature=10)`` (seed 0), the grid of
    ``get_mixed_grid([3, 4], grid_indexing='xy')`` and
    ``get_mixed_freqs(freqs, t_x, t_y)``.

torchtune 0.6.1, ``torchtune/modules/position_embeddings.py``
    ``tune_{last,first}_*``: ``VisionRotaryPositionalEmbeddings(patch_size=4,
    tile_size=12, max_num_tiles=1, dim=8, append_cls_token=...)``: its
    ``cache`` ``(tokens, dim, 2)`` of ``[cos, sin]`` (always float32: its
    angles are cast with ``.float()``) and ``forward`` of a random ``x`` of
    shape ``(1, 10, 1, 16)``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent


def _module(name: str) -> types.ModuleType:
    """Import ``name`` without running its parents' ``__init__`` files."""
    top, *rest = name.split(".")
    root = Path(importlib.util.find_spec(top).submodule_search_locations[0])
    for i in range(len(rest)):
        pkg = ".".join([top, *rest[:i]])
        if pkg not in sys.modules or not hasattr(sys.modules[pkg], "__path__"):
            stub = types.ModuleType(pkg)
            stub.__path__ = [str(root.joinpath(*rest[:i]))]
            sys.modules[pkg] = stub
    return importlib.import_module(name)


def main() -> None:
    sincos = _module("timm.layers.pos_embed_sincos")
    tune = _module("torchtune.modules.position_embeddings")
    from importlib.metadata import version

    out: dict[str, np.ndarray] = {
        "versions": np.array(
            [f"torch {torch.__version__}", f"timm {version('timm')}", f"torchtune {version('torchtune')}"]
        ),
    }
    gen = torch.Generator().manual_seed(0)

    # EVA-02: RotaryEmbeddingCat, index grid rescaled to the pre-training grid
    eva = sincos.RotaryEmbeddingCat(16, in_pixels=False, feat_shape=[3, 5], ref_feat_shape=[4, 4])
    emb = eva.get_embed()
    x = torch.randn(1, 15, 16, generator=gen)
    out["eva_embed"] = emb.numpy()
    out["eva_x"] = x.numpy()
    out["eva_rotated"] = sincos.apply_rot_embed_cat(x, emb, half=False).numpy()

    # DINOv3: centred coordinates in [-1, 1], angles 2 pi c / period, half layout
    x = torch.randn(1, 8, 16, generator=gen)
    out["dinov3_x"] = x.numpy()
    for norm in ("separate", "min", "max"):
        rope = sincos.RotaryEmbeddingDinoV3(16, temperature=100.0, normalize_coords=norm)
        emb = rope.get_embed((2, 4))
        out[f"dinov3_{norm}_embed"] = emb.numpy()
        out[f"dinov3_{norm}_rotated"] = sincos.apply_rot_embed_cat(x, emb, half=True).numpy()

    # RoPE-Mixed: learned (here: random) frequencies per block and head
    torch.manual_seed(0)
    freqs = sincos.init_random_2d_freqs(16, 2, 2, temperature=10.0, rotate=True)
    t_x, t_y = sincos.get_mixed_grid([3, 4], grid_indexing="xy")
    out["mixed_freqs"] = freqs.numpy()
    out["mixed_grid"] = torch.stack([t_x, t_y], dim=-1).numpy()
    out["mixed_embed"] = sincos.get_mixed_freqs(freqs, t_x, t_y).numpy()

    # torchtune: 2-D RoPE of a tile, positions + 1, the class token unrotated
    for where, append in (("last", True), ("first", False)):
        rope = tune.VisionRotaryPositionalEmbeddings(
            patch_size=4, tile_size=12, max_num_tiles=1, dim=8, append_cls_token=append
        )
        x = torch.randn(1, 10, 1, 16, generator=gen)
        out[f"tune_{where}_cache"] = rope.cache.numpy()
        out[f"tune_{where}_x"] = x.numpy()
        out[f"tune_{where}_rotated"] = rope(x).numpy()

    np.savez_compressed(HERE / "axes_golden.npz", **out)
    print(f"wrote {HERE / 'axes_golden.npz'}: {', '.join(sorted(out))}")


if __name__ == "__main__":
    main()
