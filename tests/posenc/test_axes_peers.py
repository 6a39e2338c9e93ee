"""Multi-axis RoPE against the peers' own code: diffusers' image and video
transformers, transformers' vision towers, and timm's and torchtune's vision
RoPE (golden values recorded from their code, ``data/make_axes_golden.py``).

Every case compares posenc's float32 tables with the peer's as it ships them
(within the peer's own rounding: a float32 angle ``p * w`` carries
``|p w| 2**-24``), in float64 where the peer can compute in float64, and
runs a *control*: posenc with one convention deliberately wrong (the other
layout, row-major instead of merged order, no offset, ...), which must
miss the peer by far more than the tolerance.  ``PEERS`` holds the cases;
``peer_errors()`` lists every case's errors (float32, float64, control).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
from posenc.scaling import NTK  # noqa: E402

GOLDEN = Path(__file__).parent / "data" / "axes_golden.npz"
#: a control must miss the peer by this many tolerances (and by 1e-3 at least)
MARGIN = 100.0


def _np(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.is_complex():
            x = torch.view_as_real(x)
        return x.numpy().astype(np.float64)
    return np.asarray(x, dtype=np.float64)


def err(a: Any, b: Any) -> float:
    return float(np.max(np.abs(_np(a) - _np(b))))


def f32_tol(max_angle: float) -> float:
    """The rounding of a float32 angle ``p * w`` of magnitude up to
    ``max_angle`` (and of its frequency, a float32 power), a few float32 ulp."""
    return 8.0 * 2.0**-24 * max(1.0, max_angle)


def compact(t: Any, layout: str) -> Any:
    """The one value per plane of a full table."""
    return t[..., ::2] if layout == "interleaved" else t[..., : t.shape[-1] // 2]


def axes(ids: Any, axes_dim: list[int], **kw: Any) -> tuple[Any, Any]:
    return posenc.rope_axes_cos_sin(ids, axes_dim, **kw)


def _max_angle(ids: Any, base_freq: float = 1.0) -> float:
    return float(np.max(np.abs(_np(ids)))) * base_freq


def _d1_64(dim: int, pos: Any, theta: float) -> tuple[Any, Any]:
    """diffusers' get_1d_rotary_pos_embed in float64 (complex128 output), as
    (cos, sin) laid out interleaved."""
    from diffusers.models.embeddings import get_1d_rotary_pos_embed

    cis = get_1d_rotary_pos_embed(dim, pos.to(torch.float64), theta, use_real=False, freqs_dtype=torch.float64)
    assert cis.dtype == torch.complex128
    return cis.real.repeat_interleave(2, -1), cis.imag.repeat_interleave(2, -1)


def _float64_get1d(ids: Any, axes_dim: list[int], theta: float) -> tuple[Any, Any]:
    parts = [_d1_64(d, ids[:, k], theta) for k, d in enumerate(axes_dim)]
    return torch.cat([c for c, _ in parts], -1), torch.cat([s for _, s in parts], -1)


# ---------------------------------------------------------------- the cases
# Each returns a dict: "got"/"want" (posenc and the peer, float32, tuples of
# arrays), "control" (posenc with a wrong convention), "tol"; optionally
# "got64"/"want64" (float64) and "what" (the control's mistake).
def case_flux() -> dict[str, Any]:
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed

    # FluxPipeline: text ids are zeros (txt_len, 3); latent ids (0, row, col) of the packed latents
    h, w, txt = 6, 5, 8
    img = torch.zeros(h, w, 3)
    img[..., 1] += torch.arange(h)[:, None]
    img[..., 2] += torch.arange(w)[None, :]
    peer_ids = torch.cat([torch.zeros(txt, 3), img.reshape(h * w, 3)])
    ids = posenc.grid_ids((1, h, w), prefix_tokens=txt, xp=torch)
    assert torch.equal(ids.to(torch.float32), peer_ids)
    dims = [16, 56, 56]
    want = FluxPosEmbed(theta=10000, axes_dim=dims)(peer_ids)
    return {
        "got": axes(ids, dims),
        "want": want,
        "control": axes(ids, dims, layout="half"),
        "what": "layout='half'",
        "tol": 2.5e-7,
        "got64": axes(ids, dims, dtype=torch.float64),
        "want64": _float64_get1d(peer_ids, dims, 10000.0),
    }


def case_flux2() -> dict[str, Any]:
    from diffusers.models.transformers.transformer_flux2 import Flux2PosEmbed

    # Flux2Pipeline: text ids cartesian_prod(t=0, h=0, w=0, l=arange(L)); latents (0, h, w, 0)
    h, w, txt = 4, 3, 5
    text = torch.cartesian_prod(torch.arange(1), torch.arange(1), torch.arange(1), torch.arange(txt))
    lat = torch.cartesian_prod(torch.arange(1), torch.arange(h), torch.arange(w), torch.arange(1))
    peer_ids = torch.cat([text, lat])
    ids = torch.cat([posenc.grid_ids((1, 1, 1, txt), xp=torch), posenc.grid_ids((1, h, w, 1), xp=torch)])
    assert torch.equal(ids, peer_ids)
    dims = [32, 32, 32, 32]
    return {
        "got": axes(ids, dims, base=2000.0),
        "want": Flux2PosEmbed(theta=2000, axes_dim=dims)(peer_ids),
        "control": axes(ids, dims, base=10000.0),
        "what": "base 10000 (Flux 2 uses 2000)",
        "tol": 2.5e-7,
        "got64": axes(ids, dims, base=2000.0, dtype=torch.float64),
        "want64": _float64_get1d(peer_ids, dims, 2000.0),
    }


def case_wan() -> dict[str, Any]:
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

    # head 40: h = w = 2 * (40 // 6) = 12, t = 16 (unequal widths)
    rope = WanRotaryPosEmbed(attention_head_dim=40, patch_size=(1, 2, 2), max_seq_len=64)
    cos, sin = rope(torch.zeros(1, 4, 3, 8, 10))
    dims = [16, 12, 12]
    ids = posenc.grid_ids((3, 4, 5), xp=torch)
    return {
        "got": axes(ids, dims),
        "want": (cos[0, :, 0], sin[0, :, 0]),
        "control": axes(ids, [12, 12, 16]),
        "what": "axes_dim [12, 12, 16] (the widths in the wrong order)",
        "tol": 2.5e-7,
        "got64": axes(ids, dims, dtype=torch.float64),
        "want64": _float64_get1d(ids, dims, 10000.0),
    }


def case_hunyuan_video() -> dict[str, Any]:
    from diffusers.models.transformers.transformer_hunyuan_video import HunyuanVideoRotaryPosEmbed

    dims = [16, 56, 56]
    rope = HunyuanVideoRotaryPosEmbed(patch_size=2, patch_size_t=1, rope_dim=dims, theta=256.0)
    cos, sin = rope(torch.zeros(1, 4, 3, 8, 10))
    ids = posenc.grid_ids((3, 4, 5), xp=torch)
    return {
        "got": axes(ids, dims, base=256.0),
        "want": (cos, sin),
        "control": axes(ids, dims, base=10000.0),
        "what": "base 10000 (HunyuanVideo uses 256)",
        "tol": f32_tol(_max_angle(ids)),
        "got64": axes(ids, dims, base=256.0, dtype=torch.float64),
        "want64": _float64_get1d(ids, dims, 256.0),
    }


def case_cogvideox() -> dict[str, Any]:
    from diffusers.models.embeddings import get_3d_rotary_pos_embed

    # embed_dim 64: t = 64 // 4, h = w = 64 // 8 * 3; the crop covers the whole grid
    cos, sin = get_3d_rotary_pos_embed(64, ((0, 0), (4, 5)), (4, 5), 3, use_real=True)
    ids = posenc.grid_ids((3, 4, 5), xp=torch)
    dims = [16, 24, 24]
    return {
        "got": axes(ids, dims),
        "want": (cos, sin),
        "control": axes(ids, dims, layout="half"),
        "what": "layout='half'",
        "tol": f32_tol(_max_angle(ids)),
    }


def case_cosmos() -> dict[str, Any]:
    from diffusers.models.transformers.transformer_cosmos import CosmosRotaryPosEmbed

    # per-axis NTK: time 2.0 (rope_scale[0]), space 1.0; time positions t * base_fps / fps
    rope = CosmosRotaryPosEmbed(48, max_size=(16, 32, 32), patch_size=(1, 2, 2), rope_scale=(2.0, 1.0, 1.0))
    cos, sin = rope(torch.zeros(1, 4, 3, 8, 10), fps=30)
    ids = posenc.grid_ids((3, 4, 5), scale=(24 / 30, 1, 1), xp=torch)
    kw = {"scaling": [NTK(2.0), None, None], "layout": "half"}
    plain = posenc.grid_ids((3, 4, 5), xp=torch)
    return {
        "got": axes(ids, [16, 16, 16], **kw),
        "want": (cos, sin),
        "control": axes(plain, [16, 16, 16], **kw),
        "what": "time positions without the fps scale",
        "tol": f32_tol(_max_angle(ids)),
    }


def case_cosmos_image() -> dict[str, Any]:
    from diffusers.models.transformers.transformer_cosmos import CosmosRotaryPosEmbed

    rope = CosmosRotaryPosEmbed(48, max_size=(16, 32, 32), patch_size=(1, 2, 2), rope_scale=(1.0, 3.0, 3.0))
    cos, sin = rope(torch.zeros(1, 4, 2, 8, 10))
    ids = posenc.grid_ids((2, 4, 5), xp=torch)
    return {
        "got": axes(ids, [16, 16, 16], scaling=[None, NTK(3.0), NTK(3.0)], layout="half"),
        "want": (cos, sin),
        "control": axes(ids, [16, 16, 16], layout="half"),
        "what": "no per-axis NTK",
        "tol": f32_tol(_max_angle(ids)),
    }


def case_cogview4() -> dict[str, Any]:
    from diffusers.models.transformers.transformer_cogview4 import CogView4RotaryPosEmbed

    rope = CogView4RotaryPosEmbed(64, patch_size=2, rope_axes_dim=(256, 256))
    cos, sin = rope(torch.zeros(1, 4, 12, 20))
    ids = posenc.grid_ids((6, 10), ref_shape=(256, 256), floor=True, xp=torch)
    return {
        "got": axes(ids, [32, 32], layout="half"),
        "want": (cos, sin),
        "control": axes(posenc.grid_ids((6, 10), xp=torch), [32, 32], layout="half"),
        "what": "ids not rescaled to the 256 x 256 grid",
        "tol": f32_tol(_max_angle(ids)),
    }


def case_qwen_image() -> dict[str, Any]:
    from diffusers.models.transformers.transformer_qwenimage import QwenEmbedRope

    dims = [16, 56, 56]
    h, w, txt = 6, 5, 7
    vid, text = QwenEmbedRope(theta=10000, axes_dim=dims, scale_rope=True)([(1, h, w)], torch.device("cpu"), txt)
    ids = posenc.grid_ids((1, h, w), center=(False, True, True), xp=torch)
    # text tokens: one position on every axis, after the largest image index
    t = torch.arange(txt) + max(h // 2, w // 2)
    text_ids = torch.stack([t, t, t], dim=-1)
    all_ids = torch.cat([ids, text_ids])
    want = torch.cat([vid, text])
    c, s = axes(all_ids, dims)
    cc, sc = axes(torch.cat([posenc.grid_ids((1, h, w), xp=torch), text_ids]), dims)
    return {
        "got": (c[:, ::2], s[:, ::2]),
        "want": (want.real, want.imag),
        "control": (cc[:, ::2], sc[:, ::2]),
        "what": "rows and columns counted from 0 (not centred)",
        "tol": f32_tol(_max_angle(all_ids)),
    }


def _qwen_vl(module_name: str, config_name: str, rotary_name: str) -> dict[str, Any]:
    import importlib

    from transformers.vision_utils import get_vision_position_ids

    modeling = importlib.import_module(f"transformers.models.{module_name}.modeling_{module_name}")
    configuration = importlib.import_module(f"transformers.models.{module_name}.configuration_{module_name}")
    config = getattr(configuration, config_name)(embed_dim=64, hidden_size=64, num_heads=4)
    rope = getattr(modeling, rotary_name)(config)
    grid = torch.tensor([[2, 4, 6]])
    pid = get_vision_position_ids(grid, 2)
    ids = posenc.grid_ids((2, 4, 6), merge=2, xp=torch)[:, 1:]
    assert torch.equal(ids, pid)
    cos, sin = rope(torch.zeros(1), pid)
    rowmajor = posenc.grid_ids((2, 4, 6), xp=torch)[:, 1:]
    return {
        "got": axes(ids, [8, 8], layout="half"),
        "want": (cos, sin),
        "control": axes(rowmajor, [8, 8], layout="half"),
        "what": "row-major token order (no 2 x 2 merge)",
        "tol": f32_tol(_max_angle(ids)),
    }


def case_qwen2_vl() -> dict[str, Any]:
    return _qwen_vl("qwen2_vl", "Qwen2VLVisionConfig", "Qwen2VLVisionRotaryEmbedding")


def case_qwen2_5_vl() -> dict[str, Any]:
    return _qwen_vl("qwen2_5_vl", "Qwen2_5_VLVisionConfig", "Qwen2_5_VLVisionRotaryEmbedding")


def case_pixtral() -> dict[str, Any]:
    from transformers.models.pixtral.configuration_pixtral import PixtralVisionConfig
    from transformers.models.pixtral.modeling_pixtral import PixtralVisionRotaryEmbedding

    config = PixtralVisionConfig(hidden_size=64, num_attention_heads=4, head_dim=16)
    rope = PixtralVisionRotaryEmbedding(config)
    hh, ww = torch.meshgrid(torch.arange(5), torch.arange(7), indexing="ij")
    pid = torch.stack([hh.flatten(), ww.flatten()], dim=-1)  # PixtralVisionModel.forward's ids
    ids = posenc.grid_ids((5, 7), xp=torch)
    assert torch.equal(ids, pid)
    cos, sin = rope(torch.zeros(1), pid)
    return {
        "got": axes(ids, [8, 8], layout="half", split="strided"),
        "want": (cos, sin),
        "control": axes(ids, [8, 8], layout="half"),
        "what": "split='blocks' (each axis a RoPE of its own)",
        "tol": f32_tol(_max_angle(ids)),
    }


def case_llama4_vision() -> dict[str, Any]:
    from transformers.models.llama4.configuration_llama4 import Llama4VisionConfig
    from transformers.models.llama4.modeling_llama4 import Llama4VisionRotaryEmbedding

    config = Llama4VisionConfig(hidden_size=64, num_attention_heads=2, image_size=5 * 14, patch_size=14)
    cis = Llama4VisionRotaryEmbedding(config).freqs_ci[:, 0]  # (26, 16) complex: 5 x 5 patches, then CLS
    ids = posenc.grid_ids((5, 5), offset=1, indexing="xy", suffix_tokens=1, xp=torch)
    c, s = axes(ids, [16, 16])
    cc, sc = axes(posenc.grid_ids((5, 5), indexing="xy", suffix_tokens=1, xp=torch), [16, 16])
    return {
        "got": (c[:, ::2], s[:, ::2]),
        "want": (cis.real, cis.imag),
        "control": (cc[:, ::2], sc[:, ::2]),
        "what": "positions without Llama 4's +1",
        "tol": f32_tol(_max_angle(ids)),
    }


def case_dinov3_vit() -> dict[str, Any]:
    from transformers.models.dinov3_vit.configuration_dinov3_vit import DINOv3ViTConfig
    from transformers.models.dinov3_vit.modeling_dinov3_vit import DINOv3ViTRopePositionEmbedding

    config = DINOv3ViTConfig(hidden_size=64, num_attention_heads=4, patch_size=16, rope_theta=100.0)
    rope = DINOv3ViTRopePositionEmbedding(config).eval()
    cos, sin = rope(torch.zeros(1, 3, 5 * 16, 7 * 16))  # a 5 x 7 patch grid
    ids = posenc.grid_ids((5, 7), normalize="separate", xp=torch)
    kw = {"base": 100.0, "layout": "half"}
    return {
        "got": axes(ids, [8, 8], turns=True, **kw),
        "want": (cos, sin),
        "control": axes(ids, [8, 8], **kw),
        "what": "angles in radians (turns=False): no 2 pi",
        "tol": f32_tol(2.0 * math.pi),
    }


def _golden() -> Any:
    return np.load(GOLDEN)


def _sin_cos(embed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    half = embed.shape[-1] // 2
    return embed[..., half:], embed[..., :half]  # timm: [sin | cos]; returned as (cos, sin)


def case_timm_eva() -> dict[str, Any]:
    g = _golden()
    ids = posenc.grid_ids((3, 5), ref_shape=(4, 4))
    plain = posenc.grid_ids((3, 5))
    x = g["eva_x"]
    return {
        "got": axes(ids, [8, 8], dtype=np.float32) + (posenc.rope_axes(x, ids, [8, 8]),),
        "want": _sin_cos(g["eva_embed"]) + (g["eva_rotated"],),
        "control": axes(plain, [8, 8], dtype=np.float32) + (posenc.rope_axes(x, plain, [8, 8]),),
        "what": "ids not rescaled to ref_feat_shape",
        "tol": f32_tol(4.0),
    }


def _dinov3(norm: str) -> dict[str, Any]:
    g = _golden()
    ids = posenc.grid_ids((2, 4), normalize=norm)
    other = {"separate": "max", "min": "separate", "max": "min"}[norm]
    kw = {"base": 100.0, "layout": "half", "turns": True}
    x = g["dinov3_x"]
    return {
        "got": axes(ids, [8, 8], dtype=np.float32, **kw) + (posenc.rope_axes(x, ids, [8, 8], **kw),),
        "want": _sin_cos(g[f"dinov3_{norm}_embed"]) + (g[f"dinov3_{norm}_rotated"],),
        "control": axes(posenc.grid_ids((2, 4), normalize=other), [8, 8], dtype=np.float32, **kw)
        + (posenc.rope_axes(x, posenc.grid_ids((2, 4), normalize=other), [8, 8], **kw),),
        "what": f"normalize={other!r}",
        "tol": f32_tol(2.0 * math.pi),
    }


def case_timm_dinov3_separate() -> dict[str, Any]:
    return _dinov3("separate")


def case_timm_dinov3_min() -> dict[str, Any]:
    return _dinov3("min")


def case_timm_dinov3_max() -> dict[str, Any]:
    return _dinov3("max")


def case_timm_rope_mixed() -> dict[str, Any]:
    g = _golden()
    f = g["mixed_freqs"]  # (2: x and y, depth, heads, head_dim // 2)
    freqs = np.stack([f[0], f[1]], axis=-1)  # (depth, heads, m, 2)
    ids = posenc.grid_ids((3, 4), indexing="xy")
    assert np.array_equal(ids, g["mixed_grid"])
    angle = float(np.max(np.abs(ids)) * np.max(np.abs(f)) * 2)
    return {
        "got": posenc.rope_axes_cos_sin(ids, freqs=freqs, dtype=np.float32),
        "want": _sin_cos(g["mixed_embed"]),
        "control": posenc.rope_axes_cos_sin(posenc.grid_ids((3, 4)), freqs=freqs, dtype=np.float32),
        "what": "indexing='ij' (RoPE-Mixed's grid is (x, y))",
        "tol": f32_tol(angle),
    }


def _torchtune(where: str) -> dict[str, Any]:
    g = _golden()
    extra = {"suffix_tokens": 1} if where == "last" else {"prefix_tokens": 1}
    ids = posenc.grid_ids((3, 3), offset=1, indexing="xy", **extra)
    wrong = posenc.grid_ids((3, 3), indexing="xy", **extra)
    x = g[f"tune_{where}_x"]  # (batch, seq, heads, head_dim)
    cache = g[f"tune_{where}_cache"]
    c, s = axes(ids, [8, 8], dtype=np.float32)
    cc, sc = axes(wrong, [8, 8], dtype=np.float32)
    return {
        "got": (c[:, ::2], s[:, ::2], posenc.rope_axes(x, ids, [8, 8], heads_axis=2)),
        "want": (cache[..., 0], cache[..., 1], g[f"tune_{where}_rotated"]),
        "control": (cc[:, ::2], sc[:, ::2], posenc.rope_axes(x, wrong, [8, 8], heads_axis=2)),
        "what": "positions without the +1",
        "tol": f32_tol(_max_angle(ids)),
    }


def case_torchtune_cls_last() -> dict[str, Any]:
    return _torchtune("last")


def case_torchtune_cls_first() -> dict[str, Any]:
    return _torchtune("first")


#: name -> (case, the module it needs)
PEERS: dict[str, tuple[Callable[[], dict[str, Any]], str]] = {
    "diffusers Flux FluxPosEmbed": (case_flux, "diffusers"),
    "diffusers Flux 2 Flux2PosEmbed": (case_flux2, "diffusers"),
    "diffusers Wan WanRotaryPosEmbed": (case_wan, "diffusers"),
    "diffusers HunyuanVideoRotaryPosEmbed": (case_hunyuan_video, "diffusers"),
    "diffusers CogVideoX get_3d_rotary_pos_embed": (case_cogvideox, "diffusers"),
    "diffusers CosmosRotaryPosEmbed (video, fps 30)": (case_cosmos, "diffusers"),
    "diffusers CosmosRotaryPosEmbed (image, NTK 3)": (case_cosmos_image, "diffusers"),
    "diffusers CogView4RotaryPosEmbed": (case_cogview4, "diffusers"),
    "diffusers Qwen-Image QwenEmbedRope": (case_qwen_image, "diffusers"),
    "transformers Qwen2-VL vision rotary": (case_qwen2_vl, "transformers"),
    "transformers Qwen2.5-VL vision rotary": (case_qwen2_5_vl, "transformers"),
    "transformers Pixtral vision rotary": (case_pixtral, "transformers"),
    "transformers Llama 4 vision rotary": (case_llama4_vision, "transformers"),
    "transformers DINOv3 ViT rope": (case_dinov3_vit, "transformers"),
    "timm EVA-02 RotaryEmbeddingCat": (case_timm_eva, "numpy"),
    "timm RotaryEmbeddingDinoV3 (separate)": (case_timm_dinov3_separate, "numpy"),
    "timm RotaryEmbeddingDinoV3 (min)": (case_timm_dinov3_min, "numpy"),
    "timm RotaryEmbeddingDinoV3 (max)": (case_timm_dinov3_max, "numpy"),
    "timm RoPE-Mixed get_mixed_freqs": (case_timm_rope_mixed, "numpy"),
    "torchtune VisionRotaryPositionalEmbeddings (CLS last)": (case_torchtune_cls_last, "numpy"),
    "torchtune VisionRotaryPositionalEmbeddings (CLS first)": (case_torchtune_cls_first, "numpy"),
}


def errors(case: dict[str, Any]) -> dict[str, float]:
    """The max errors of a case: float32, float64 (or NaN) and the control's."""
    got, want, control = case["got"], case["want"], case["control"]
    out = {
        "f32": max(err(g, w) for g, w in zip(got, want)),
        "control": max(err(g, w) for g, w in zip(control, want)),
        "f64": math.nan,
    }
    if "got64" in case:
        out["f64"] = max(err(g, w) for g, w in zip(case["got64"], case["want64"]))
    return out


def peer_errors() -> list[tuple[str, dict[str, float], str]]:
    """Every case's errors and its control's mistake (for the documentation)."""
    rows = []
    for name, (fn, _) in PEERS.items():
        case = fn()
        rows.append((name, errors(case), case["what"]))
    return rows


@pytest.mark.parametrize("name", list(PEERS))
def test_peer(name):
    fn, needs = PEERS[name]
    pytest.importorskip(needs)
    case = fn()
    for g, w in zip(case["got"], case["want"]):
        assert tuple(np.shape(g)) == tuple(np.shape(w))
    e = errors(case)
    tol = case["tol"]
    assert e["f32"] <= tol, f"{name}: {e['f32']:.3g} > {tol:.3g}"
    if "got64" in case:
        assert e["f64"] <= 1e-13, f"{name}: float64 {e['f64']:.3g}"
    # the control (a wrong convention) misses the peer by far more than the tolerance
    assert e["control"] > max(MARGIN * tol, 1e-3), f"{name}: control ({case['what']}) only {e['control']:.3g} off"
