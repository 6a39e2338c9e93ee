"""The sin-cos tables of diffusion transformers: sincos_grid with base_size,
interpolation_scale, crop_from, axis_dims, order="mae_st" and prefix rows.

Oracles: a float64 NumPy formula written here from the definitions (with
diffusers' float32 grid coordinates); diffusers' own
``get_2d_sincos_pos_embed``, ``get_3d_sincos_pos_embed``,
``PatchEmbed.cropped_pos_embed`` (SD3) and
``CogVideoXPatchEmbed._get_positional_embeddings``, each with a control of the
wrong convention that must be far off.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc


def coords_1d(n, *, base_size=None, scale=1.0, full=None):
    """diffusers' coordinates of an axis of n points (the centre crop of ``full``):
    arange / (full / base_size) / scale, each division in float32."""
    full = n if full is None else full
    start = (full - n) // 2
    x = np.arange(full, dtype=np.float32)
    if base_size is not None:
        x = x / np.float32(full / base_size)
    if scale != 1.0:
        x = x / np.float32(scale)
    return x[start : start + n].astype(np.float64)


def block(x, width, base=10000.0):
    """[sin | cos] of x with width/2 frequencies base**(-i / (width/2)), float64."""
    m = width // 2
    a = x[:, None] * base ** (-np.arange(m) / m)
    return np.concatenate([np.sin(a), np.cos(a)], axis=-1)


def ref_table(shape, widths, order, axis_coords):
    """(*shape, dim) from per-axis [sin | cos] blocks placed in ``order``."""
    nd = len(shape)
    blocks = []
    for k in range(nd):
        b = block(axis_coords[k], widths[k])
        view = tuple(shape[k] if j == k else 1 for j in range(nd)) + (widths[k],)
        blocks.append(np.broadcast_to(b.reshape(view), shape + (widths[k],)))
    axes = {"mae": list(reversed(range(nd))), "blocks": list(range(nd)), "mae_st": [0, 2, 1]}[order]
    return np.concatenate([blocks[k] for k in axes], axis=-1)


# ---------------------------------------------------------------- every backend
@pytest.mark.parametrize(
    ("shape", "dim", "kw"),
    [
        ((6, 9), 16, {"base_size": 16}),
        ((5, 7), 24, {"base_size": (4, 6), "interpolation_scale": 1.5, "order": "blocks"}),
        ((4, 6), 16, {"base_size": 8, "crop_from": (9, 10)}),
        ((3, 4, 5), 32, {"order": "mae_st", "interpolation_scale": (1.0, 1.875, 1.875)}),
        ((3, 4, 5), 24, {"axis_dims": (4, 12, 8), "crop_from": (5, 4, 8), "order": "mae"}),
    ],
)
def test_backends(xp, shape, dim, kw):
    got = xp.call(posenc.sincos_grid, shape, dim, **kw, xp=xp.ns, device=xp.device)
    order = kw.get("order", "mae")
    nd = len(shape)
    widths = kw.get("axis_dims") or ((dim // 4, 3 * dim // 8, 3 * dim // 8) if order == "mae_st" else (dim // nd,) * nd)
    sizes = kw.get("base_size")
    sizes = (sizes,) * nd if not isinstance(sizes, tuple) else sizes
    scales = kw.get("interpolation_scale", 1.0)
    scales = (scales,) * nd if not isinstance(scales, tuple) else scales
    full = kw.get("crop_from", shape)
    axis_coords = [
        coords_1d(n, base_size=b, scale=s, full=f) for n, b, s, f in zip(shape, sizes, scales, full)
    ]
    want = ref_table(shape, widths, order, axis_coords)
    xp.assert_close(got, want, atol=xp.tol() * 2, dtype=xp.default_float)


def test_prefix_rows(xp):
    got = xp.call(posenc.sincos_grid, (2, 3, 4), 32, order="mae_st", num_prefix_tokens=3, xp=xp.ns, device=xp.device)
    grid = ref_table((2, 3, 4), (8, 12, 12), "mae_st", [np.arange(n, dtype=np.float64) for n in (2, 3, 4)])
    want = np.concatenate([np.zeros((3, 32)), grid.reshape(24, 32)])
    xp.assert_close(got, want, atol=xp.tol() * 2)


def test_integer_defaults_are_unchanged():
    # base_size=n and scale 1 give the integer coordinates: the plain table
    np.testing.assert_allclose(
        posenc.sincos_grid((6, 8), 32, base_size=(6, 8)), posenc.sincos_grid((6, 8), 32), atol=1e-15
    )
    # a crop of integer coordinates is the window of the larger table
    big = posenc.sincos_grid((9, 12), 32)
    np.testing.assert_allclose(posenc.sincos_grid((5, 6), 32, crop_from=(9, 12)), big[2:7, 3:9], atol=1e-15)


def test_bad_arguments():
    with pytest.raises(ValueError, match="mae_st"):
        posenc.sincos_grid((4, 4), 32, order="mae_st")
    with pytest.raises(ValueError, match="mae_st"):
        posenc.sincos_grid((2, 4, 4), 40, order="mae_st")
    with pytest.raises(ValueError, match=r"`axis_dims` must hold one even width per axis of `grid_shape` \(2\) "):
        posenc.sincos_grid((4, 4), 32, axis_dims=(16, 8))
    with pytest.raises(ValueError, match="axis_dims"):
        posenc.sincos_grid((4, 4), 32, axis_dims=(15, 17))
    with pytest.raises(ValueError, match="axis_dims"):
        posenc.sincos_grid((4, 4), 32, axis_dims=(8, 8, 16))
    with pytest.raises(ValueError, match="axis_dims"):
        posenc.sincos_grid((4, 4), 32, axis_dims=(16, 16), order="interleaved")
    with pytest.raises(TypeError, match="axis_dims"):
        posenc.sincos_grid((4, 4), 32, axis_dims=16)
    with pytest.raises(ValueError, match="crop_from"):
        posenc.sincos_grid((4, 4), 32, crop_from=(3, 8))
    with pytest.raises(ValueError, match="crop_from"):
        posenc.sincos_grid((4, 4), 32, crop_from=(8, 8, 8))
    with pytest.raises(ValueError, match="base_size"):
        posenc.sincos_grid((4, 4), 32, base_size=0)
    with pytest.raises(ValueError, match="base_size"):
        posenc.sincos_grid((4, 4), 32, base_size=(4, 4, 4))
    with pytest.raises(ValueError, match="base_size"):
        posenc.sincos_grid((4, 4), 32, base_size=1e-300)
    with pytest.raises(ValueError, match="interpolation_scale"):
        posenc.sincos_grid((4, 4), 32, interpolation_scale=1e39)
    # one per axis: the refusal names the grid that sets the count
    one_per_axis = r"`interpolation_scale` must be a number or one per axis of `grid_shape` \(2\)"
    with pytest.raises(ValueError, match=one_per_axis):
        posenc.sincos_grid((4, 4), 32, interpolation_scale=(2.0,))
    with pytest.raises(TypeError, match="interpolation_scale"):
        posenc.sincos_grid((4, 4), 32, interpolation_scale="2")
    with pytest.raises(ValueError, match="num_prefix_tokens"):
        posenc.sincos_grid((4, 4), 32, cls_token=True, num_prefix_tokens=2)
    with pytest.raises(ValueError, match="num_prefix_tokens"):
        posenc.sincos_grid((4, 4), 32, num_prefix_tokens=-1)
    with pytest.raises(ValueError, match="order"):
        posenc.sincos_coords(np.zeros((2, 3)), 48, order="mae_st")


def test_compiles_fullgraph():
    torch = pytest.importorskip("torch")

    def f(x):
        sd3 = posenc.sincos_grid((x.shape[-2], 6), 32, base_size=8, crop_from=(12, 12), flatten=True, xp=torch)
        cog = posenc.sincos_grid((2, 3, 4), 32, order="mae_st", interpolation_scale=(1.0, 1.875, 1.875), xp=torch)
        return x + sd3.sum() + cog.sum()

    x = torch.zeros(5, 32)
    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True, backend="eager")(x)
    torch.testing.assert_close(got, f(x), atol=1e-5, rtol=1e-6)


# ---------------------------------------------------------------- diffusers
#: the largest errors against diffusers (for the record; asserted below)
DIFFUSERS_ERRORS: dict[str, float] = {}


def _record(key, err):
    DIFFUSERS_ERRORS[key] = max(DIFFUSERS_ERRORS.get(key, 0.0), float(err))
    return float(err)


@pytest.fixture(scope="module")
def emb():
    pytest.importorskip("torch")
    return pytest.importorskip("diffusers.models.embeddings")


@pytest.mark.parametrize(
    ("grid", "dim", "base_size", "scale"),
    [((32, 32), 64, 16, 1.0), ((24, 40), 96, 32, 2.0), ((7, 5), 32, 16, 1.0), ((64, 64), 1152, 32, 1.0)],
)
def test_matches_get_2d_sincos_pos_embed(emb, grid, dim, base_size, scale):
    """PixArt / Hunyuan-DiT / SD3's table; float64 as diffusers returns it, float32 as models keep it."""
    want = emb.get_2d_sincos_pos_embed(dim, grid, base_size=base_size, interpolation_scale=scale).numpy()
    kw = dict(base_size=base_size, interpolation_scale=scale, flatten=True)
    got = posenc.sincos_grid(grid, dim, **kw, dtype="float64")
    got32 = posenc.sincos_grid(grid, dim, **kw, dtype="float32")
    assert _record("2d float64", np.abs(got - want).max()) <= 1e-14
    assert _record("2d float32", np.abs(got32 - want).max()) <= 2.5e-7
    # controls: integer coordinates, the exact (float64) coordinates, timm's order
    ints = posenc.sincos_grid(grid, dim, flatten=True)
    assert np.abs(ints - want).max() > 0.1
    i, j = np.meshgrid(np.arange(grid[0]), np.arange(grid[1]), indexing="ij")
    exact = np.stack([i * base_size / grid[0] / scale, j * base_size / grid[1] / scale], -1).reshape(-1, 2)
    if grid[0] / base_size not in (0.5, 1.0, 2.0):  # coordinates float32 does not hold exactly
        assert np.abs(posenc.sincos_coords(exact, dim) - want).max() > 1e-10
    timm = posenc.sincos_grid(grid, dim, **{**kw, "flatten": False}, order="timm").reshape(-1, dim)
    assert np.abs(timm - want).max() > 0.1


@pytest.mark.parametrize(("h", "w"), [(64, 64), (48, 96), (33, 71), (192, 5)])
def test_matches_sd3_cropped_pos_embed(emb, h, w):
    """SD3's PatchEmbed(pos_embed_max_size=192), sample 128, patch 2: base_size 64."""
    import torch

    pe = emb.PatchEmbed(height=128, width=128, patch_size=2, in_channels=4, embed_dim=64, pos_embed_max_size=192)
    kw = dict(base_size=64, crop_from=(192, 192), flatten=True)
    want32 = pe.cropped_pos_embed(2 * h, 2 * w)[0].numpy()  # its float32 buffer, as shipped
    got32 = posenc.sincos_grid((h, w), 64, **kw, dtype="float32")
    assert _record("sd3 crop float32", np.abs(got32 - want32).max()) <= 2.5e-7
    # the same crop of the table in float64 (the buffer before diffusers' .float())
    pe.pos_embed = emb.get_2d_sincos_pos_embed(64, 192, base_size=64, interpolation_scale=1)[None]
    want64 = pe.cropped_pos_embed(2 * h, 2 * w)[0].numpy()
    assert pe.pos_embed.dtype == torch.float64
    got64 = posenc.sincos_grid((h, w), 64, **kw, dtype="float64")
    assert _record("sd3 crop float64", np.abs(got64 - want64).max()) <= 1e-14
    if (h, w) != (192, 192):  # the control: the top-left corner instead of the centre
        corner = posenc.sincos_grid((192, 192), 64, base_size=64)[:h, :w].reshape(-1, 64)
        assert np.abs(corner - want64).max() > 0.1


@pytest.mark.parametrize(
    ("spatial", "frames", "scales", "dim"),
    [((5, 3), 2, (1.0, 1.0), 64), ((6, 4), 3, (1.875, 1.0), 32), ((4, 4), 1, (2.0, 0.5), 48)],
)
def test_matches_get_3d_sincos_pos_embed(emb, spatial, frames, scales, dim):
    """CogVideoX's table: spatial_size = (W, H), a quarter of dim for time."""
    W, H = spatial
    want = emb.get_3d_sincos_pos_embed(dim, spatial, frames, scales[0], scales[1]).numpy()  # (T, H*W, dim)
    kw = dict(order="mae_st", interpolation_scale=(scales[1], scales[0], scales[0]))
    got = posenc.sincos_grid((frames, H, W), dim, **kw, dtype="float64").reshape(frames, H * W, dim)
    got32 = posenc.sincos_grid((frames, H, W), dim, **kw, dtype="float32").reshape(frames, H * W, dim)
    assert _record("3d float64", np.abs(got - want).max()) <= 1e-14
    assert _record("3d float32", np.abs(got32 - want).max()) <= 2.5e-7
    # controls: the (W, H) trap (the grid read in diffusers' argument order), equal widths
    if W != H:
        trap = posenc.sincos_grid((frames, W, H), dim, **kw).reshape(frames, H * W, dim)
        assert np.abs(trap - want).max() > 0.1
    equal = posenc.sincos_grid((frames, H, W), dim, **kw, axis_dims=(dim // 4, 3 * dim // 8, 3 * dim // 8))
    np.testing.assert_array_equal(equal.reshape(frames, H * W, dim), got)
    if dim % 12 == 0:
        thirds = posenc.sincos_grid((frames, H, W), dim, **kw, axis_dims=(dim // 3,) * 3)
        assert np.abs(thirds.reshape(frames, H * W, dim) - want).max() > 0.1


def test_matches_cogvideox_patch_embed(emb):
    """CogVideoXPatchEmbed's joint table: the text rows (zeros) first, then T*H*W rows."""
    cog = emb.CogVideoXPatchEmbed(
        patch_size=2,
        in_channels=4,
        embed_dim=64,
        text_embed_dim=8,
        sample_width=20,
        sample_height=12,
        sample_frames=9,
        max_text_seq_length=5,
    )
    want = cog._get_positional_embeddings(12, 20, 9)[0].numpy()  # 1.875 spatial scale (the default)
    got = posenc.sincos_grid(
        (3, 6, 10), 64, order="mae_st", interpolation_scale=(1.0, 1.875, 1.875), num_prefix_tokens=5, dtype="float64"
    )
    assert got.shape == want.shape == (5 + 3 * 6 * 10, 64)
    assert _record("cogvideox float64", np.abs(got - want).max()) <= 1e-14
    no_scale = posenc.sincos_grid((3, 6, 10), 64, order="mae_st", num_prefix_tokens=5)
    assert np.abs(no_scale - want).max() > 0.1


def test_cls_and_extra_tokens(emb):
    """diffusers adds extra_tokens zero rows only with cls_token=True."""
    want = emb.get_2d_sincos_pos_embed(32, 4, cls_token=True, extra_tokens=2, base_size=4).numpy()
    got = posenc.sincos_grid((4, 4), 32, base_size=4, num_prefix_tokens=2, dtype="float64")
    assert np.abs(got - want).max() <= 1e-15
    one = posenc.sincos_grid((4, 4), 32, base_size=4, cls_token=True, dtype="float64")
    np.testing.assert_array_equal(one, got[1:])
    assert math.prod(emb.get_2d_sincos_pos_embed(32, 4, extra_tokens=2).shape) == 16 * 32  # not without cls_token


def test_coordinates_a_device_without_float64_cannot_reduce_are_refused(xp):
    """A base_size or interpolation_scale that puts the coordinates at 2**32
    or beyond: refused on a device without float64 (whose paths would give
    NaN rows), an exact table where float64 is at hand; inside the range,
    the same table on every backend."""
    call = lambda **kw: xp.call(posenc.sincos_grid, (2, 3), 8, xp=xp.ns, device=xp.device, **kw)  # noqa: E731
    if xp.float64:
        assert np.isfinite(xp.to_numpy(call(base_size=2**41))).all() if xp.has_values else True
    else:
        with pytest.raises(ValueError, match=r"`base_size` puts grid coordinates at 1\.466\d*e\+12: .* 2\*\*32"):
            call(base_size=2**41)
        with pytest.raises(ValueError, match=r"`interpolation_scale` puts grid coordinates"):
            call(interpolation_scale=1e-12)
    want = np.asarray(posenc.sincos_grid((2, 3), 8, base_size=2**20))  # control: inside the range
    xp.assert_close(call(base_size=2**20), want, atol=2.5e-7, dtype=xp.default_float)
