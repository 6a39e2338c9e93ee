"""Resampling learned 2-D tables: resample_grid (by size and by scale factor)
and grid_interpolation_taps.

Oracles: a non-separated 2-D sum written here from PyTorch's documented
sampling; ``torch.nn.functional.interpolate`` itself; the original DINOv2's
``interpolate_pos_encoding`` transliterated from its published source (with
``F.interpolate`` doing the work, as there); transformers'
``get_vision_interpolation_indices_and_weights`` (its own code, and the same
code run in float64).
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import posenc


# ---------------------------------------------------------------- by output size
def cubic_w(x, a=-0.75):
    x = abs(x)
    if x <= 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return 0.0


def axis_taps_oracle(old, new, method, align_corners, step=None):
    """Per output index: list of (source index, weight), written from PyTorch's
    documented sampling (half-pixel centres, border clamping); ``step`` is
    ``1 / scale_factor`` when F.interpolate is given a scale factor."""
    rows = []
    for t in range(new):
        if align_corners:
            src = t * (old - 1) / (new - 1) if new > 1 else 0.0
        else:
            src = (t + 0.5) * (old / new if step is None else step) - 0.5
        if method == "bilinear":
            src = max(src, 0.0)
            i0 = min(int(math.floor(src)), old - 1)
            i1 = min(i0 + 1, old - 1)
            f = src - i0
            rows.append([(i0, 1 - f), (i1, f)])
        else:
            i = math.floor(src)
            f = src - i
            rows.append([(min(max(i + d, 0), old - 1), cubic_w(f - d)) for d in (-1, 0, 1, 2)])
    return rows


def resample_oracle(grid, new, method, align_corners, steps=(None, None)):
    """grid (H, W, C) -> (H', W', C) by the non-separated 2-D sum."""
    H, W, C = grid.shape
    ry = axis_taps_oracle(H, new[0], method, align_corners, steps[0])
    rx = axis_taps_oracle(W, new[1], method, align_corners, steps[1])
    out = np.zeros((new[0], new[1], C))
    for y in range(new[0]):
        for x in range(new[1]):
            for iy, wy in ry[y]:
                for ix, wx in rx[x]:
                    out[y, x] += wy * wx * grid[iy, ix]
    return out


@pytest.mark.parametrize("method", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_resample_grid_backends(xp, method, align_corners):
    rng = np.random.default_rng(2)
    old, new, prefix, dim = (4, 5), (7, 3), 2, 3
    table = rng.standard_normal((prefix + old[0] * old[1], dim))
    if not xp.float64:
        table = table.astype(np.float32)
    got = xp.call(
        posenc.resample_grid,
        xp.asarray(table),
        new,
        num_prefix_tokens=prefix,
        method=method,
        old_grid_shape=old,
        align_corners=align_corners,
    )
    grid = resample_oracle(table[prefix:].reshape(*old, dim).astype(np.float64), new, method, align_corners)
    want = np.concatenate([table[:prefix], grid.reshape(-1, dim)])
    tol = 1e-12 if xp.float64 else 2e-6
    xp.assert_close(got, want, atol=tol)


@pytest.mark.parametrize("method", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
def test_resample_same_size_is_identity(method, antialias):
    t = np.random.default_rng(3).standard_normal((1, 1 + 12, 5))
    got = posenc.resample_grid(
        t, (3, 4), num_prefix_tokens=1, method=method, old_grid_shape=(3, 4), antialias=antialias
    )
    np.testing.assert_allclose(got, t, atol=1e-14)


def test_resample_constant_table_stays_constant():
    t = np.full((2, 36, 4), 0.75)
    for method in ("bilinear", "bicubic"):
        for aa in (False, True):
            got = posenc.resample_grid(t, (9, 4), method=method, antialias=aa)
            np.testing.assert_allclose(got, 0.75, atol=1e-14)


RESAMPLE_CASES = [
    # (old, new, prefix)
    ((4, 4), (7, 7), 1),
    ((14, 14), (24, 24), 1),
    ((7, 5), (3, 9), 0),
    ((6, 6), (2, 4), 4),
    ((1, 3), (4, 5), 0),
    ((5, 5), (1, 1), 1),
]


@pytest.mark.parametrize("method", ["bilinear", "bicubic"])
@pytest.mark.parametrize("mode", ["corners_false", "corners_true", "antialias"])
@pytest.mark.parametrize(("old", "new", "prefix"), RESAMPLE_CASES)
def test_resample_grid_matches_torch(method, mode, old, new, prefix):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    align = mode == "corners_true"
    aa = mode == "antialias"
    rng = np.random.default_rng(4)
    dim = 6

    def torch_ref(t):
        grid = t[:, prefix:].reshape(1, old[0], old[1], dim).permute(0, 3, 1, 2)
        out = F.interpolate(grid, size=new, mode=method, align_corners=align, antialias=aa)
        return torch.cat([t[:, :prefix], out.permute(0, 2, 3, 1).reshape(1, -1, dim)], dim=1)

    def ours(t):
        return posenc.resample_grid(
            t,
            new,
            num_prefix_tokens=prefix,
            method=method,
            old_grid_shape=None if old[0] == old[1] else old,
            align_corners=align,
            antialias=aa,
        )

    t64 = torch.as_tensor(rng.standard_normal((1, prefix + old[0] * old[1], dim)))
    ref = torch_ref(t64)
    got = ours(t64)
    assert got.dtype == torch.float64 and got.shape == ref.shape
    np.testing.assert_allclose(got.numpy(), ref.numpy(), atol=1e-12, rtol=0)
    # float32: PyTorch forms the source coordinates in float32 (errors of a few 1e-6);
    # posenc's weights are float64 rounded once, within ~1e-6 of the float64 result
    t32 = t64.float()
    got = ours(t32)
    assert got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), torch_ref(t32.double()).numpy(), atol=1.5e-6, rtol=0)
    np.testing.assert_allclose(got.numpy(), torch_ref(t32).numpy(), atol=2e-5, rtol=0)


def test_resample_grid_matches_mae_interpolate_pos_embed():
    # MAE: class token kept, the rest bicubic to the new size without antialiasing
    torch = pytest.importorskip("torch")
    pe = torch.as_tensor(posenc.sincos_grid((14, 14), 32, cls_token=True)[None])
    tokens = pe[:, 1:].reshape(1, 14, 14, 32).permute(0, 3, 1, 2)
    tokens = torch.nn.functional.interpolate(tokens, size=(16, 16), mode="bicubic", align_corners=False)
    ref = torch.cat([pe[:, :1], tokens.permute(0, 2, 3, 1).flatten(1, 2)], dim=1)
    got = posenc.resample_grid(pe, 16, num_prefix_tokens=1, method="bicubic")
    np.testing.assert_allclose(got.numpy(), ref.numpy(), atol=1e-12)


def test_resample_grid_half_precision():
    torch = pytest.importorskip("torch")
    t = torch.randn(1, 1 + 16, 8, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    got = posenc.resample_grid(t, (6, 6), num_prefix_tokens=1, method="bicubic")
    assert got.dtype == torch.bfloat16 and got.shape == (1, 37, 8)
    ref = posenc.resample_grid(t.float(), (6, 6), num_prefix_tokens=1, method="bicubic")
    np.testing.assert_allclose(got.float().numpy(), ref.to(torch.bfloat16).float().numpy(), atol=0)
    assert torch.equal(got[:, :1], t[:, :1])


def test_resample_grid_bad_input():
    t = np.zeros((1 + 12, 4))
    with pytest.raises(ValueError, match="old_grid_shape"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1)
    with pytest.raises(ValueError, match="old_grid_shape"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1, old_grid_shape=(4, 4))
    with pytest.raises(ValueError, match="num_prefix_tokens"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=14)
    with pytest.raises(ValueError, match="num_prefix_tokens"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=-1)
    with pytest.raises(ValueError, match="method"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1, old_grid_shape=(3, 4), method="nearest")
    # the conflict names both arguments (either one may be the one to change)
    with pytest.raises(ValueError, match="`antialias`=True supports `align_corners`=False only"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1, old_grid_shape=(3, 4), antialias=True, align_corners=True)
    with pytest.raises(ValueError, match="`antialias`=True supports `align_corners`=False only"):
        posenc.grid_interpolation_taps((3, 4), (4, 4), antialias=True, align_corners=True)
    with pytest.raises(TypeError, match="align_corners"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1, old_grid_shape=(3, 4), align_corners=0)
    with pytest.raises(ValueError, match="new_grid_shape"):
        posenc.resample_grid(t, (0, 4), num_prefix_tokens=1, old_grid_shape=(3, 4))
    with pytest.raises(ValueError, match="new_grid_shape"):
        posenc.resample_grid(t, (2, 2, 2), num_prefix_tokens=1, old_grid_shape=(3, 4))
    with pytest.raises(ValueError, match="old_grid_shape"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1, old_grid_shape=(12,))
    with pytest.raises(ValueError, match="table"):
        posenc.resample_grid(np.zeros(16), (4, 4))
    with pytest.raises(TypeError, match="table"):
        posenc.resample_grid(np.zeros((16, 2), dtype=np.int64), (4, 4))
    with pytest.raises(TypeError, match="table"):
        posenc.resample_grid([[0.0]] * 16, (4, 4))
    with pytest.raises(ValueError, match="old_grid_shape"):
        posenc.resample_grid(np.zeros((1, 4)), (4, 4), num_prefix_tokens=1)



# ---------------------------------------------------------------- by scale factor
@pytest.mark.parametrize("method", ["bilinear", "bicubic"])
def test_scale_factor_backends(xp, method):
    rng = np.random.default_rng(5)
    old, new, prefix, dim = (5, 6), (7, 3), 1, 3
    factors = ((7 + 0.1) / 5, (3 + 0.1) / 6)
    table = rng.standard_normal((prefix + old[0] * old[1], dim))
    if not xp.float64:
        table = table.astype(np.float32)
    got = xp.call(
        posenc.resample_grid,
        xp.asarray(table),
        new,
        num_prefix_tokens=prefix,
        method=method,
        old_grid_shape=old,
        scale_factor=factors,
    )
    grid = table[prefix:].reshape(*old, dim).astype(np.float64)
    want = resample_oracle(grid, new, method, False, steps=tuple(1.0 / f for f in factors))
    xp.assert_close(got, np.concatenate([table[:prefix], want.reshape(-1, dim)]), atol=1e-12 if xp.float64 else 2e-6)
    # the control: the size rule reads other source coordinates
    by_size = resample_oracle(grid, new, method, False)
    assert np.abs(by_size - want).max() > 0.05


SCALE_CASES = [
    # (old, scale factors); the new shape is floor(old * s); an axis may keep its size
    ((4, 4), (1.8, 1.8)),
    ((6, 6), (1.1, 0.7)),
    ((5, 4), (1.15, 1.2)),
    ((6, 5), (0.55, 1.3)),
    ((7, 7), (2.1, 0.6)),
    ((3, 9), (2.4, 0.25)),
]


@pytest.mark.parametrize("method", ["bilinear", "bicubic"])
@pytest.mark.parametrize("mode", ["corners_false", "corners_true", "antialias"])
@pytest.mark.parametrize(("old", "factors"), SCALE_CASES)
def test_scale_factor_matches_interpolate(method, mode, old, factors):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    align, aa = mode == "corners_true", mode == "antialias"
    new = tuple(math.floor(o * f) for o, f in zip(old, factors))
    t64 = torch.as_tensor(np.random.default_rng(6).standard_normal((1, 1 + old[0] * old[1], 4)))

    def ref(t):
        grid = t[:, 1:].reshape(1, *old, 4).permute(0, 3, 1, 2)
        out = F.interpolate(
            grid, scale_factor=factors, mode=method, align_corners=align, antialias=aa, recompute_scale_factor=False
        )
        assert tuple(out.shape[-2:]) == new
        return torch.cat([t[:, :1], out.permute(0, 2, 3, 1).reshape(1, -1, 4)], dim=1)

    kw = dict(num_prefix_tokens=1, method=method, old_grid_shape=old, align_corners=align, antialias=aa)
    got = posenc.resample_grid(t64, new, scale_factor=factors, **kw)
    np.testing.assert_allclose(got.numpy(), ref(t64).numpy(), atol=1e-12, rtol=0)
    t32 = t64.float()
    got = posenc.resample_grid(t32, new, scale_factor=factors, **kw)
    np.testing.assert_allclose(got.numpy(), ref(t32.double()).numpy(), atol=1.5e-6, rtol=0)
    np.testing.assert_allclose(got.numpy(), ref(t32).numpy(), atol=2e-5, rtol=0)
    if not align and new[0] != old[0] and new[1] != old[1]:
        # the control (align_corners=True reads the same coordinates either way)
        by_size = posenc.resample_grid(t64, new, **kw)
        assert np.abs(by_size.numpy() - ref(t64).numpy()).max() > 0.01


def dinov2_interpolate_pos_encoding(
    pos_embed, height, width, patch_size, *, offset=0.1, antialias=False, mode="bicubic"
):
    """``DinoVisionTransformer.interpolate_pos_encoding`` of the original DINOv2
    (facebookresearch/dinov2, ``dinov2/models/vision_transformer.py``),
    transliterated: the table has a class token and an ``M x M`` grid; the
    image is ``(height, width)``, which DINOv2 reads as ``w, h = x.shape[2:]``
    (its ``w`` is the height), so ``w0`` is the new number of rows.  ``mode``
    is ``"bicubic"`` there; ``"bilinear"`` runs the same code with the other
    kernel.
    """
    import torch
    import torch.nn.functional as F

    previous_dtype = pos_embed.dtype
    npatch = (height // patch_size) * (width // patch_size)
    N = pos_embed.shape[1] - 1
    if npatch == N and height == width:
        return pos_embed
    pos_embed = pos_embed.float() if pos_embed.dtype != torch.float64 else pos_embed
    class_pos_embed = pos_embed[:, 0]
    patch_pos_embed = pos_embed[:, 1:]
    dim = pos_embed.shape[-1]
    w0 = height // patch_size
    h0 = width // patch_size
    M = int(math.sqrt(N))
    assert N == M * M
    kwargs = {}
    if offset:
        sx = float(w0 + offset) / M
        sy = float(h0 + offset) / M
        kwargs["scale_factor"] = (sx, sy)
    else:
        kwargs["size"] = (w0, h0)
    patch_pos_embed = F.interpolate(
        patch_pos_embed.reshape(1, M, M, dim).permute(0, 3, 1, 2), mode=mode, antialias=antialias, **kwargs
    )
    assert (w0, h0) == patch_pos_embed.shape[-2:]
    patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, dim)
    return torch.cat((class_pos_embed.unsqueeze(0), patch_pos_embed), dim=1).to(previous_dtype)


def posenc_like_dinov2(pos_embed, height, width, patch_size, *, offset=0.1, antialias=False, mode="bicubic"):
    """The same resize with posenc (the how-to's recipe)."""
    M = math.isqrt(int(pos_embed.shape[1]) - 1)
    h, w = height // patch_size, width // patch_size
    if (h, w) == (M, M):
        return pos_embed
    factors = ((h + offset) / M, (w + offset) / M) if offset else None
    return posenc.resample_grid(
        pos_embed, (h, w), num_prefix_tokens=1, method=mode, antialias=antialias, scale_factor=factors
    )


#: the largest errors of the DINOv2 parity test, by dtype (for the record; asserted below)
DINOV2_ERRORS: dict[str, float] = {}


@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("M", [16, 37])
def test_matches_original_dinov2(M, mode, antialias):
    """DINOv2 (offset 0.1, no antialias) and DINOv2 with registers (its
    ``interpolate_antialias=True``), M = 16 (224 px / 14) and 37 (518 px / 14),
    square and non-square images; the control (the size rule) must be far off."""
    torch = pytest.importorskip("torch")
    pe = torch.as_tensor(posenc.sincos_grid((M, M), 32, cls_token=True)[None]) + 0.02 * torch.randn(
        1, 1 + M * M, 32, generator=torch.Generator().manual_seed(M), dtype=torch.float64
    )
    patch = 14
    worst_control = 0.0
    for height, width in ((224, 224), (14 * 23, 14 * 11), (14 * 9, 14 * 40), (14 * M + 5, 14 * (M - 3))):
        for dtype in (torch.float64, torch.float32):
            t = pe.to(dtype)
            want = dinov2_interpolate_pos_encoding(t, height, width, patch, antialias=antialias, mode=mode)
            got = posenc_like_dinov2(t, height, width, patch, antialias=antialias, mode=mode)
            assert got.dtype == dtype and got.shape == want.shape
            err = float((got.double() - want.double()).abs().max())
            key = "float64" if dtype == torch.float64 else "float32"
            DINOV2_ERRORS[key] = max(DINOV2_ERRORS.get(key, 0.0), err)
            assert err <= (1e-12 if dtype == torch.float64 else 2e-5), (height, width, dtype)
            if dtype == torch.float64 and (height // patch, width // patch) != (M, M):
                control = posenc_like_dinov2(t, height, width, patch, offset=0.0, antialias=antialias, mode=mode)
                worst_control = max(worst_control, float((control - want).abs().max()))
    assert worst_control > 0.03


def test_scale_factor_bad_input():
    t = np.zeros((1 + 16, 4))
    with pytest.raises(ValueError, match=r"`new_grid_shape` must be the size .* \(7, 7\), got \(8, 8\)"):
        posenc.resample_grid(t, (8, 8), num_prefix_tokens=1, scale_factor=1.75)
    with pytest.raises(ValueError, match="new_grid_shape"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1, scale_factor=(0.9, 1.0))
    with pytest.raises(ValueError, match="scale_factor"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1, scale_factor=(1.0, 0.0))
    with pytest.raises(ValueError, match="scale_factor"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1, scale_factor=(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="scale_factor"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1, scale_factor=float("inf"))
    with pytest.raises(TypeError, match="scale_factor"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1, scale_factor="2")
    with pytest.raises(TypeError, match="scale_factor"):
        posenc.resample_grid(t, (4, 4), num_prefix_tokens=1, scale_factor=np.ones(2))
    # a scale factor of one with the same size reads the same coordinates: the identity
    got = posenc.resample_grid(t + np.arange(17.0)[:, None], (4, 4), num_prefix_tokens=1, scale_factor=1.0)
    np.testing.assert_allclose(got, t + np.arange(17.0)[:, None], atol=1e-14)


# ---------------------------------------------------------------- gather taps
def _hf_helpers():
    """transformers' helper as shipped (float32) and the same source run in
    float64 (its one ``torch.float32`` replaced by ``torch.float64``)."""
    pytest.importorskip("torch")
    vu = pytest.importorskip("transformers.vision_utils")
    ns = dict(vu.__dict__)
    axis = inspect.getsource(vu._interpolation_axis_taps_weights)
    assert axis.count("torch.float32") == 1, "transformers' helper changed: review this test"
    exec(axis.replace("torch.float32", "torch.float64"), ns)  # noqa: S102 - the peer's own source
    exec(inspect.getsource(vu.get_vision_interpolation_indices_and_weights), ns)  # noqa: S102
    return vu.get_vision_interpolation_indices_and_weights, ns["get_vision_interpolation_indices_and_weights"]


#: the largest weight errors against transformers, by (dtype, method) (for the record; asserted below)
TAPS_ERRORS: dict[tuple[str, str], float] = {}


@pytest.mark.parametrize("merge", [1, 2])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("method", ["bilinear", "bicubic"])
def test_taps_match_transformers(method, align_corners, merge):
    torch = pytest.importorskip("torch")
    hf32, hf64 = _hf_helpers()
    for side in (4, 16):
        # a packed batch: an image, a 2-frame video, an image larger than the table
        thw = [[1, 2 * merge, 3 * merge], [2, 4 * merge, merge], [1, (side + 3) * merge, 5 * merge]]
        grid_thw = torch.tensor(thw)
        kw = dict(method=method, align_corners=align_corners, merge=merge, xp=torch)
        idx, w32 = posenc.grid_interpolation_taps(side, thw, dtype=torch.float32, **kw)
        _, w64 = posenc.grid_interpolation_taps((side, side), thw, dtype=torch.float64, **kw)
        for hf, w, dtype, tol in ((hf32, w32, "float32", 2e-6), (hf64, w64, "float64", 1e-15)):
            want_idx, want_w = hf(grid_thw, side, mode=method, align_corners=align_corners, spatial_merge_size=merge)
            assert idx.dtype == want_idx.dtype and w.dtype == want_w.dtype
            assert torch.equal(idx, want_idx)
            err = float((w.double() - want_w.double()).abs().max())
            TAPS_ERRORS[(dtype, method)] = max(TAPS_ERRORS.get((dtype, method), 0.0), err)
            assert err <= tol, (side, dtype)
        # the control: the other align_corners convention
        _, wrong = hf64(grid_thw, side, mode=method, align_corners=not align_corners, spatial_merge_size=merge)
        assert float((w64 - wrong).abs().max()) > 0.1


@pytest.mark.parametrize("method", ["bilinear", "bicubic"])
@pytest.mark.parametrize("mode", ["corners_false", "corners_true", "antialias"])
def test_taps_gather_is_interpolate(method, mode):
    """One gather over a packed batch gives F.interpolate of the table to each grid."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    align, aa = mode == "corners_true", mode == "antialias"
    old, dim = (5, 7), 3
    table = torch.as_tensor(np.random.default_rng(7).standard_normal((old[0] * old[1], dim)))
    grids = [(2, 3, 4), (9, 2), (1, 12, 15), (1, 1)]
    idx, w = posenc.grid_interpolation_taps(
        old, grids, method=method, align_corners=align, antialias=aa, dtype=torch.float64, xp=torch
    )
    got = (table[idx] * w[..., None]).sum(-2)
    parts = []
    for g in grids:
        t, h, ww = (1, *g) if len(g) == 2 else g
        img = table.T.reshape(1, dim, *old)
        out = F.interpolate(img, size=(h, ww), mode=method, align_corners=align, antialias=aa)
        parts.append(out.reshape(dim, h * ww).T.repeat(t, 1))
    np.testing.assert_allclose(got.numpy(), torch.cat(parts).numpy(), atol=1e-12, rtol=0)


def test_taps_merge_order():
    """merge=2: tokens in 2 x 2 blocks, block rows, block columns, then inside a block."""
    idx, w = posenc.grid_interpolation_taps((4, 6), (4, 6), merge=2)
    # the same size: each token reads its own row with weight 1 (bilinear, half-pixel centres)
    rows = (idx * (w == 1.0)).sum(axis=1)
    r, c = np.divmod(rows, 6)
    np.testing.assert_array_equal(r[:8], [0, 0, 1, 1, 0, 0, 1, 1])
    np.testing.assert_array_equal(c[:8], [0, 1, 0, 1, 2, 3, 2, 3])
    raster, _ = posenc.grid_interpolation_taps((4, 6), (4, 6))
    assert sorted(rows.tolist()) == sorted((raster * (w == 1.0)).sum(axis=1).tolist())


def test_taps_backends(xp):
    got_idx, got_w = xp.call(
        posenc.grid_interpolation_taps, (3, 4), [(2, 5), (2, 1, 3)], method="bicubic", xp=xp.ns, device=xp.device
    )
    want_idx, want_w = posenc.grid_interpolation_taps((3, 4), [(2, 5), (2, 1, 3)], method="bicubic")
    assert want_idx.shape == (16, 16)
    xp.check_array(got_idx, shape=(16, 16))
    xp.assert_close(got_w, want_w, atol=xp.tol(), dtype=xp.default_float)
    if xp.has_values:
        np.testing.assert_array_equal(xp.to_numpy(got_idx), want_idx)
    # every token's weights sum to one (the kernels are partitions of unity)
    np.testing.assert_allclose(want_w.sum(axis=1), 1.0, atol=1e-14)


def test_taps_bad_input():
    with pytest.raises(ValueError, match="merge"):
        posenc.grid_interpolation_taps(4, (3, 4), merge=2)
    with pytest.raises(ValueError, match="merge"):
        posenc.grid_interpolation_taps(4, (4, 4), merge=0)
    with pytest.raises(TypeError, match="new_shape"):
        posenc.grid_interpolation_taps(4, np.array([[1, 2, 2]]))
    with pytest.raises(TypeError, match="new_shape"):
        posenc.grid_interpolation_taps(4, 3)
    with pytest.raises(ValueError, match="new_shape"):
        posenc.grid_interpolation_taps(4, [(1, 2, 3, 4)])
    with pytest.raises(ValueError, match="new_shape"):
        posenc.grid_interpolation_taps(4, [(2, 0)])
    with pytest.raises(ValueError, match="new_shape"):
        posenc.grid_interpolation_taps(4, [])
    with pytest.raises(ValueError, match="old_shape"):
        posenc.grid_interpolation_taps((0, 4), (2, 2))
    with pytest.raises(ValueError, match="method"):
        posenc.grid_interpolation_taps(4, (2, 2), method="nearest")
    with pytest.raises(ValueError, match="antialias"):
        posenc.grid_interpolation_taps(4, (2, 2), antialias=True, align_corners=True)
    with pytest.raises(ValueError, match=r"2\*\*40"):
        posenc.grid_interpolation_taps(4, [(2**20, 2**10, 2**10)])
