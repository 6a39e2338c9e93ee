"""Generate ``grid_golden.npz``: reference tables of the 2-D / N-D sincos
encodings and NeRF's embedder, in float64.

The peers cannot be installed next to posenc's test stack (timm pulls its own
torch; MAE and NeRF are research repositories, not packages), so this script
re-states their published formulas step by step in NumPy float64, keeping
their structure (meshgrid order, which half is which, how the columns are
stacked), and records the results.  Regenerate with::

    python tests/posenc/data/make_grid_golden.py

Facts transcribed (read from the published sources):

MAE, ``util/pos_embed.py``
    ``get_1d_sincos_pos_embed_from_grid(D, pos)``: ``omega_i = 1 / 10000 **
    (i / (D/2))`` for ``i < D/2``; output ``[sin(pos * omega) | cos(pos *
    omega)]`` (D/2 sines, then D/2 cosines).
    ``get_2d_sincos_pos_embed_from_grid(D, grid)``: ``emb_h`` is the 1-D
    table of width D/2 of ``grid[0]``, ``emb_w`` that of ``grid[1]``, output
    ``[emb_h | emb_w]``.
    ``get_2d_sincos_pos_embed(D, grid_size, cls_token)``: ``grid =
    np.meshgrid(grid_w, grid_h)`` ("here w goes first"), so ``grid[0]`` holds
    the column index w and is encoded first; tokens are row-major over
    (h, w); ``cls_token`` prepends one zero row.  The original takes a
    square ``grid_size``; the usual non-square extension (``grid_h =
    arange(H)``, ``grid_w = arange(W)``, reshape to ``(2, 1, H, W)``) is
    transcribed here.

timm, ``timm/layers/pos_embed_sincos.py``
    ``build_sincos2d_pos_embed(feat_shape, dim, temperature, reverse_coord,
    interleave_sin_cos)``: ``pos_dim = dim // 4``; bands ``1 / temperature **
    (arange(pos_dim) / pos_dim)``; if ``reverse_coord`` the shape is reversed;
    the grid is ``ndgrid`` (``'ij'``) over ``feat_shape``, flattened to
    ``(N, 2)`` with columns in ``feat_shape`` order; ``pos2 = grid[:, :, None]
    * bands`` has shape (N, 2, pos_dim); the output stacks ``[sin(pos2),
    cos(pos2)]`` on axis 1 (default: sin h, sin w, cos h, cos w) or axis 2
    (``interleave_sin_cos=True``: sin h, cos h, sin w, cos w) and flattens.

positional-encodings (``positional_encodings.torch_encodings``)
    ``PositionalEncodingND(channels)`` for N = 1, 2, 3: per-axis width
    ``C = 2 * ceil(channels / (2N))``; ``inv_freq = 1 / 10000 ** (arange(0, C,
    2) / C)``; each axis is ``get_emb``: ``stack([sin, cos], -1)`` flattened,
    i.e. sin f0, cos f0, sin f1, cos f1, ...; the axes' blocks are placed in
    axis order and the table is cut to the first ``channels`` columns.

NeRF, ``run_nerf_helpers.py``
    ``Embedder`` with ``include_input``, ``max_freq_log2 = multires - 1``,
    ``num_freqs = multires``, ``log_sampling``: bands ``2 ** linspace(0,
    max_freq, N)`` (log) or ``linspace(1, 2 ** max_freq, N)``; the embedding
    concatenates ``x`` then, per band, ``sin(x * f)`` and ``cos(x * f)``,
    each over all input dimensions.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "grid_golden.npz"


# ---------------------------------------------------------------- MAE
def mae_1d(embed_dim: int, pos: np.ndarray) -> np.ndarray:
    assert embed_dim % 2 == 0
    half = embed_dim // 2
    omega = 1.0 / 10000.0 ** (np.arange(half, dtype=np.float64) / half)
    out = np.outer(np.asarray(pos, dtype=np.float64).reshape(-1), omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def mae_2d_from_grid(embed_dim: int, grid: np.ndarray) -> np.ndarray:
    assert embed_dim % 2 == 0
    first = mae_1d(embed_dim // 2, grid[0])  # MAE's "emb_h": holds the w coordinate
    second = mae_1d(embed_dim // 2, grid[1])
    return np.concatenate([first, second], axis=1)


def mae_2d(embed_dim: int, grid_size, cls_token: bool = False) -> np.ndarray:
    h, w = (grid_size, grid_size) if isinstance(grid_size, int) else grid_size
    grid_h = np.arange(h, dtype=np.float64)
    grid_w = np.arange(w, dtype=np.float64)
    grid = np.stack(np.meshgrid(grid_w, grid_h), axis=0).reshape(2, 1, h, w)  # w goes first
    emb = mae_2d_from_grid(embed_dim, grid)
    if cls_token:
        emb = np.concatenate([np.zeros((1, embed_dim)), emb], axis=0)
    return emb


# ---------------------------------------------------------------- timm
def timm_sincos2d(feat_shape, dim, temperature=10000.0, reverse_coord=False, interleave_sin_cos=False):
    assert dim % 4 == 0
    pos_dim = dim // 4
    bands = 1.0 / temperature ** (np.arange(pos_dim, dtype=np.float64) / pos_dim)
    if reverse_coord:
        feat_shape = feat_shape[::-1]
    axes = np.meshgrid(*[np.arange(s, dtype=np.float64) for s in feat_shape], indexing="ij")
    grid = np.stack(axes).reshape(len(feat_shape), -1).T  # (N, ndim)
    pos2 = grid[:, :, None] * bands[None, None, :]
    stack_axis = 2 if interleave_sin_cos else 1
    emb = np.stack([np.sin(pos2), np.cos(pos2)], axis=stack_axis)
    return emb.reshape(emb.shape[0], -1)


# ---------------------------------------------------------------- positional-encodings
def pe_package(shape, channels):
    nd = len(shape)
    c = int(math.ceil(channels / (2 * nd)) * 2)
    inv_freq = 1.0 / 10000.0 ** (np.arange(0, c, 2, dtype=np.float64) / c)
    blocks = []
    for k, n in enumerate(shape):
        ang = np.outer(np.arange(n, dtype=np.float64), inv_freq)
        emb = np.stack([np.sin(ang), np.cos(ang)], axis=-1).reshape(n, c)
        view = [1] * nd + [c]
        view[k] = n
        blocks.append(np.broadcast_to(emb.reshape(view), tuple(shape) + (c,)))
    return np.concatenate(blocks, axis=-1)[..., :channels]


# ---------------------------------------------------------------- NeRF
def nerf_embed(x, multires, log_sampling=True, include_input=True):
    max_freq = multires - 1
    if log_sampling:
        bands = 2.0 ** np.linspace(0.0, max_freq, multires)
    else:
        bands = np.linspace(2.0**0.0, 2.0**max_freq, multires)
    parts = [x] if include_input else []
    for f in bands:
        parts.append(np.sin(x * f))
        parts.append(np.cos(x * f))
    return np.concatenate(parts, axis=-1)


def cases() -> dict[str, np.ndarray]:
    out = {}
    out["mae_14x14_d64_cls"] = mae_2d(64, 14, cls_token=True)
    out["mae_3x5_d16"] = mae_2d(16, (3, 5))
    out["mae_1d_n9_d12"] = mae_1d(12, np.arange(9))
    out["timm_3x5_d16"] = timm_sincos2d([3, 5], 16)
    out["timm_4x6_d32_t100"] = timm_sincos2d([4, 6], 32, temperature=100.0)
    out["timm_3x5_d16_reverse"] = timm_sincos2d([3, 5], 16, reverse_coord=True)
    out["timm_3x5_d16_interleave"] = timm_sincos2d([3, 5], 16, interleave_sin_cos=True)
    out["pe_1d_n7_c10"] = pe_package((7,), 10)
    out["pe_1d_n7_c9"] = pe_package((7,), 9)
    out["pe_2d_3x4_c16"] = pe_package((3, 4), 16)
    out["pe_2d_3x4_c10"] = pe_package((3, 4), 10)
    out["pe_3d_2x3x4_c18"] = pe_package((2, 3, 4), 18)
    out["pe_3d_2x3x4_c14"] = pe_package((2, 3, 4), 14)
    # multiples of 1/16: exact in float32, so devices without float64 see the same inputs
    x = (((np.arange(15) * 37) % 61 - 25) / 16.0).reshape(5, 3)
    out["nerf_x"] = x
    out["nerf_L10"] = nerf_embed(x, 10)
    out["nerf_L4_linear"] = nerf_embed(x, 4, log_sampling=False)
    out["nerf_L4_noinput"] = nerf_embed(x, 4, include_input=False)
    return out


def main() -> None:
    np.savez_compressed(OUT, **cases())
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
