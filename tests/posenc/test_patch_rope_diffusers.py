"""``posenc.torch.patch_rope`` on tiny random-init diffusers video and image
transformers: Wan, HunyuanVideo, Qwen-Image (and Qwen-Image-Layered's
module), and CogVideoX, whose tables the pipeline forms and passes in.

For each family, full forwards of the model:

* float64: diffusers' float32 casts lifted to float64 (``lifted``: the
  ``torch.float32`` it names at call time, ``Tensor.float()``, and the
  float32 frequencies ``get_1d_rotary_pos_embed`` forms by default; the
  float32 output of posenc's ``Timesteps``, diffusers' contract, with
  them), the model patched, then converted, within 1e-12 relative of the
  model's own;
* float32: the patched model at least as close to that float64 reference
  as the model's own float32 (within the peer's own float32 error);
* a control: the patched model with one convention wrong (the axes' widths
  in the wrong order, another base, rows not centred, the other pair
  layout) misses the float64 reference by far more than that tolerance;
* ``remove()``: the model's own output again, bit for bit.

One compiled case (``torch.compile(fullgraph=True)`` of the HunyuanVideo
module) and the refusals close the file.
"""

from __future__ import annotations

import contextlib
import copy
import inspect

import pytest

pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")
import torch  # noqa: E402

import posenc  # noqa: E402
import posenc.torch  # noqa: E402
from posenc.torch import patch_rope  # noqa: E402
from tests.posenc.test_hf_models import SWEEP, rel_error, unlifted_modules  # noqa: E402

#: float64 (lifted) tolerance, relative to the largest output
RTOL64 = 1e-12


@contextlib.contextmanager
def lifted(dtype):
    """diffusers' float32 work in float64 (for a float64 run only)."""
    if dtype != torch.float64:
        yield
        return
    from diffusers.models import embeddings

    f = embeddings.get_1d_rotary_pos_embed
    saved = f.__defaults__
    assert list(inspect.signature(f).parameters)[-1] == "freqs_dtype" and saved[-1] is torch.float32
    f.__defaults__ = (*saved[:-1], torch.float64)  # freqs_dtype
    try:
        with SWEEP.lifted_float32():
            yield
    finally:
        f.__defaults__ = saved


# ---------------------------------------------------------------- the families
# Each builder returns (model, inputs) in float32, seed 0; the positions go
# far enough along one axis that a float32 angle product shows.
def _gen():
    return torch.Generator().manual_seed(0)


def _wan():
    from diffusers import WanTransformer3DModel

    torch.manual_seed(0)
    model = WanTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4,
        text_dim=16, freq_dim=16, ffn_dim=32, num_layers=1, rope_max_seq_len=128,
    ).eval()  # fmt: skip
    g = _gen()
    inputs = {
        "hidden_states": torch.randn(1, 4, 2, 4, 200, generator=g),  # 2 x 2 x 100 patches
        "timestep": torch.tensor([937]),
        "encoder_hidden_states": torch.randn(1, 3, 16, generator=g),
    }
    return model, inputs


def _hunyuan_video():
    from diffusers import HunyuanVideoTransformer3DModel

    torch.manual_seed(0)
    model = HunyuanVideoTransformer3DModel(
        in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=16, num_layers=1,
        num_single_layers=1, num_refiner_layers=1, patch_size=1, patch_size_t=1, text_embed_dim=16,
        pooled_projection_dim=8, rope_axes_dim=(4, 6, 6), guidance_embeds=False,
    ).eval()  # fmt: skip
    g = _gen()
    inputs = {
        "hidden_states": torch.randn(1, 4, 2, 2, 150, generator=g),
        "timestep": torch.tensor([937]),
        "encoder_hidden_states": torch.randn(1, 3, 16, generator=g),
        "encoder_attention_mask": torch.ones(1, 3),
        "pooled_projections": torch.randn(1, 8, generator=g),
    }
    return model, inputs


def _qwen_image(layered=False):
    from diffusers import QwenImageTransformer2DModel

    torch.manual_seed(0)
    model = QwenImageTransformer2DModel(
        patch_size=2, in_channels=16, out_channels=4, num_layers=1, attention_head_dim=16, num_attention_heads=2,
        joint_attention_dim=16, axes_dims_rope=(4, 6, 6), use_layer3d_rope=layered,
    ).eval()  # fmt: skip
    g = _gen()
    # Qwen-Image-Edit: two images; the layered model's last one is its condition image
    shapes = [(1, 3, 120), (1, 4, 5)]
    inputs = {
        "hidden_states": torch.randn(1, sum(f * h * w for f, h, w in shapes), 16, generator=g),
        "encoder_hidden_states": torch.randn(1, 7, 16, generator=g),
        "encoder_hidden_states_mask": torch.ones(1, 7),
        "timestep": torch.tensor([0.937]),
        "img_shapes": [shapes],
    }
    return model, inputs


def _wan_wrong(m):
    m.t_dim, m.w_dim = m.w_dim, m.t_dim  # the widths in the wrong order (time is 8, the others 4)


def _hunyuan_wrong(m):
    m.theta = 10000.0  # HunyuanVideo's base is 256


def _qwen_wrong(m):
    m.scale_rope = False  # rows and columns counted from 0, not centred


#: family -> (builder, name of the rotary module, replacement class, the control's mistake)
FAMILIES = {
    "wan": (_wan, "rope", "ExactWanRotaryPosEmbed", _wan_wrong),
    "hunyuan_video": (_hunyuan_video, "rope", "ExactHunyuanVideoRotaryPosEmbed", _hunyuan_wrong),
    "qwen_image": (_qwen_image, "pos_embed", "ExactQwenEmbedRope", _qwen_wrong),
    "qwen_image_layered": (
        lambda: _qwen_image(layered=True), "pos_embed", "ExactQwenEmbedLayer3DRope", _qwen_wrong,
    ),  # fmt: skip
}


def _cast(inputs, dtype):
    return {k: v.to(dtype) if torch.is_tensor(v) and v.is_floating_point() else v for k, v in inputs.items()}


def _rebuilt(module):
    """A fresh copy of diffusers' rotary module (its tables formed now: inside
    ``lifted``, in float64)."""
    m = module
    if hasattr(m, "freqs_cos"):  # Wan: the buffers of its constructor
        return type(m)(m.attention_head_dim, m.patch_size, m.max_seq_len)
    if hasattr(m, "pos_freqs"):  # Qwen-Image: complex tables of its constructor
        return type(m)(theta=m.theta, axes_dim=m.axes_dim, scale_rope=m.scale_rope)
    return m  # HunyuanVideo: formed in forward


def _run(build, dtype, *, patch=False, wrong=None):
    """The sample of a model built in float32 (seed 0), patched, then
    converted to ``dtype`` (float64: its rotary module's tables formed in
    float64, and run lifted)."""
    model, inputs = build()
    name = FAMILIES_MODULE[build]
    if dtype == torch.float64:
        with lifted(dtype):
            setattr(model, name, _rebuilt(getattr(model, name)))
    handle = patch_rope(model) if patch else None
    if wrong is not None:
        wrong(getattr(model, name))
    for m in model.modules():
        if isinstance(m, posenc.torch.Timesteps) and dtype == torch.float64:
            m.dtype = dtype  # its float32 output (diffusers' contract), lifted too
    model = unlifted_modules(model.to(dtype))
    with lifted(dtype), torch.no_grad():
        out = model(**_cast(inputs, dtype)).sample
    return out, model, inputs, handle


FAMILIES_MODULE = {build: name for build, name, _, _ in FAMILIES.values()}


def family_errors(family):
    """The errors the test asserts: ``{"float32 own", "float32 patched"}``
    relative to the lifted float64 model, ``"float64"`` (patched against
    the model's own, both lifted), ``"control"`` (the wrong convention,
    float64)."""
    build, name, cls, wrong = FAMILIES[family]
    own64, _, _, _ = _run(build, torch.float64)
    ours64, model64, _, handle = _run(build, torch.float64, patch=True)
    assert type(getattr(model64, name)).__name__ == cls and handle.patched[0] == name
    wrong64, _, _, _ = _run(build, torch.float64, patch=True, wrong=wrong)
    own32, _, _, _ = _run(build, torch.float32)
    ours32, model, inputs, handle = _run(build, torch.float32, patch=True)
    handle.remove()
    with torch.no_grad():
        again = model(**inputs).sample
    return {
        "float32 own": rel_error(own32, own64),
        "float32 patched": rel_error(ours32, own64),
        "float64": rel_error(ours64, own64),
        "control": rel_error(wrong64, own64),
        "removed bit for bit": bool(torch.equal(again, own32)),
    }


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family(family):
    e = family_errors(family)
    assert e["float64"] <= RTOL64, e
    # float32: exact tables, so at least as close to the float64 reference as the model's own float32
    tol32 = max(e["float32 own"], 2e-6)
    assert e["float32 patched"] <= tol32, e
    # the wrong convention misses by far more than the float32 error
    assert e["control"] > 100 * tol32, e
    assert e["removed bit for bit"], e


# ---------------------------------------------------------------- the modules themselves
def test_modules_return_what_diffusers_returns():
    """Signatures, shapes, layouts and dtypes of each module's forward, against
    diffusers' own module (float32: within its float32 rounding)."""
    from diffusers.models.transformers.transformer_hunyuan_video import HunyuanVideoRotaryPosEmbed
    from diffusers.models.transformers.transformer_qwenimage import QwenEmbedLayer3DRope, QwenEmbedRope
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

    holder = torch.nn.Module()
    holder.wan = WanRotaryPosEmbed(attention_head_dim=40, patch_size=(1, 2, 2), max_seq_len=64)
    holder.hv = HunyuanVideoRotaryPosEmbed(patch_size=2, patch_size_t=1, rope_dim=[16, 56, 56], theta=256.0)
    holder.qw = QwenEmbedRope(theta=10000, axes_dim=[16, 56, 56], scale_rope=True)
    holder.ql = QwenEmbedLayer3DRope(theta=10000, axes_dim=[16, 56, 56], scale_rope=True)
    x = torch.zeros(1, 4, 3, 8, 10)
    cpu = torch.device("cpu")
    calls = {
        "wan": ((x,), {}),
        "hv": ((x,), {}),
        "qw": (([[(1, 6, 5), (1, 3, 7)]], cpu), {"max_txt_seq_len": 9}),
        "ql": (([[(1, 6, 5), (1, 6, 5), (1, 4, 4)]], torch.tensor(9)), {"device": cpu}),
    }
    own = {k: getattr(holder, k)(*a, **kw) for k, (a, kw) in calls.items()}
    signatures = {k: list(inspect.signature(getattr(holder, k).forward).parameters) for k in calls}
    with patch_rope(holder) as handle:
        assert handle.patched == ["wan", "hv", "qw", "ql"]
        assert {k: list(inspect.signature(getattr(holder, k).forward).parameters) for k in calls} == signatures
        ours = {k: getattr(holder, k)(*a, **kw) for k, (a, kw) in calls.items()}
    for k in calls:
        for got, want in zip(ours[k], own[k], strict=True):
            assert got.shape == want.shape and got.dtype == want.dtype, k
            if got.is_complex():
                got, want = torch.view_as_real(got), torch.view_as_real(want)
            assert float((got - want).abs().max()) < 1e-6, k
    assert ours["qw"][0].dtype == torch.complex64 and ours["wan"][0].dtype == torch.float32
    # float64 work: float64 hidden states, a float64 Qwen-Image module
    with patch_rope(holder):
        assert holder.hv(x.double())[0].dtype == holder.wan(x.double())[0].dtype == torch.float64
        holder.double()
        assert holder.qw(*calls["qw"][0], **calls["qw"][1])[1].dtype == torch.complex128
        holder.to(torch.bfloat16)
        assert holder.qw(*calls["qw"][0], **calls["qw"][1])[1].dtype == torch.complex64
        assert not list(holder.qw.buffers()) and not list(holder.wan.buffers())


def test_wan_cast_to_bfloat16_keeps_exact_tables():
    """Wan's own tables are buffers: ``model.to(torch.bfloat16)`` rounds them
    (off by up to 2**-9); the patched module's stay float32, exact."""
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

    holder = torch.nn.Module()
    holder.rope = WanRotaryPosEmbed(attention_head_dim=40, patch_size=(1, 2, 2), max_seq_len=64)
    x = torch.zeros(1, 4, 3, 8, 128, dtype=torch.bfloat16)
    exact, _ = posenc.rope_axes_cos_sin(posenc.grid_ids((3, 4, 64), xp=torch), [16, 12, 12], dtype=torch.float64)
    holder.to(torch.bfloat16)
    own, _ = holder.rope(x)
    with patch_rope(holder):
        ours, _ = holder.rope(x)
    assert own.dtype == torch.bfloat16 and ours.dtype == torch.float32
    err_own = float((own[0, :, 0].double() - exact).abs().max())
    err_ours = float((ours[0, :, 0].double() - exact).abs().max())
    assert err_ours < 1.2e-7 < 1e-3 < err_own, (err_ours, err_own)


def test_wan_module_put_back_follows_the_model():
    """Wan's own module holds buffers: converted with the model while patched,
    it is put back as a never-patched module converted the same way."""
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

    holder = torch.nn.Module()
    holder.rope = WanRotaryPosEmbed(attention_head_dim=40, patch_size=(1, 2, 2), max_seq_len=64)
    plain = copy.deepcopy(holder).to(torch.bfloat16)
    x = torch.zeros(1, 4, 3, 8, 10, dtype=torch.bfloat16)
    with patch_rope(holder):
        holder.to(torch.bfloat16)
        assert not list(holder.buffers()) and [n for n, _ in holder.named_modules()] == ["", "rope"]
    for got, want in zip(holder.rope(x), plain.rope(x), strict=True):
        assert got.dtype == torch.bfloat16 and torch.equal(got, want)


def test_compiled_module():
    """torch.compile(fullgraph=True) of one patched module's forward: the exact
    tables (within float32 rounding of the float64 ones, as eager)."""
    from diffusers.models.transformers.transformer_hunyuan_video import HunyuanVideoRotaryPosEmbed

    holder = torch.nn.Module()
    holder.rope = HunyuanVideoRotaryPosEmbed(patch_size=2, patch_size_t=1, rope_dim=[4, 6, 6], theta=256.0)
    x = torch.zeros(1, 2, 2, 4, 6)
    own = holder.rope(x)
    patch_rope(holder)
    torch._dynamo.reset()
    compiled = torch.compile(holder.rope, fullgraph=True, backend="eager")
    got = compiled(x)
    exact = posenc.rope_axes_cos_sin(posenc.grid_ids((2, 2, 3), xp=torch), [4, 6, 6], base=256.0, dtype=torch.float64)
    for g, want, e in zip(got, own, exact, strict=True):
        assert g.dtype == want.dtype == torch.float32 and g.shape == want.shape
        assert float((g.double() - e).abs().max()) <= 2.0**-24
        assert float((g - want).abs().max()) < 1e-6


# ---------------------------------------------------------------- CogVideoX
def cogvideox_ids(frames, crops_coords, grid_size):
    """The ids of the grid CogVideoX's pipeline gives ``get_3d_rotary_pos_embed``
    (``grid_type="linspace"``, CogVideoX 1.0), in float64: frame, then the
    crop's rows and columns."""
    (top, left), (bottom, right) = crops_coords
    h, w = grid_size
    f64 = torch.float64
    return torch.cartesian_prod(
        torch.arange(frames, dtype=f64),
        torch.linspace(top, bottom * (h - 1) / h, h, dtype=f64),
        torch.linspace(left, right * (w - 1) / w, w, dtype=f64),
    )


def _cogvideox_tables(dim, frames, crops, grid, dtype, *, layout="interleaved"):
    ids = cogvideox_ids(frames, crops, grid)
    return posenc.rope_axes_cos_sin(ids, [dim // 4, dim // 8 * 3, dim // 8 * 3], layout=layout, dtype=dtype)


def cogvideox_errors(crops):
    """The errors the CogVideoX test asserts (as ``family_errors``), and those
    of the tables: ``"tables float32"`` (posenc's float32 against
    ``get_3d_rotary_pos_embed``'s, max abs), ``"tables float64"`` (lifted)."""
    from diffusers import CogVideoXTransformer3DModel
    from diffusers.models.embeddings import get_3d_rotary_pos_embed

    dim, frames, grid = 16, 2, (4, 50)

    def run(dtype, tables):
        torch.manual_seed(0)
        model = CogVideoXTransformer3DModel(
            num_attention_heads=2, attention_head_dim=dim, in_channels=4, out_channels=4, time_embed_dim=8,
            text_embed_dim=16, num_layers=1, sample_width=100, sample_height=8, sample_frames=5, patch_size=2,
            max_text_seq_length=3, use_rotary_positional_embeddings=True,
        ).eval()  # fmt: skip
        g = _gen()
        hidden = torch.randn(1, frames, 4, 2 * grid[0], 2 * grid[1], generator=g)
        text = torch.randn(1, 3, 16, generator=g)
        with lifted(dtype), torch.no_grad():
            if tables is None:  # the pipeline's call
                tables = get_3d_rotary_pos_embed(dim, crops, grid, frames)
            out = model.to(dtype)(hidden.to(dtype), text.to(dtype), torch.tensor([937]), image_rotary_emb=tables)
            return out.sample, tables

    own64, peer64 = run(torch.float64, None)
    exact64 = _cogvideox_tables(dim, frames, crops, grid, torch.float64)
    ours64, _ = run(torch.float64, exact64)
    own32, peer32 = run(torch.float32, None)
    ours32, exact32 = run(torch.float32, _cogvideox_tables(dim, frames, crops, grid, torch.float32))
    wrong64, _ = run(torch.float64, _cogvideox_tables(dim, frames, crops, grid, torch.float64, layout="half"))
    assert peer64[0].dtype == torch.float64 and peer32[0].dtype == exact32[0].dtype == torch.float32
    assert peer32[0].shape == exact32[0].shape == (frames * grid[0] * grid[1], dim)
    return {
        "tables float32": max(float((a - b).abs().max()) for a, b in zip(exact32, peer32, strict=True)),
        "tables float64": max(float((a - b).abs().max()) for a, b in zip(exact64, peer64, strict=True)),
        "float32 own": rel_error(own32, own64),
        "float32 patched": rel_error(ours32, own64),
        "float64": rel_error(ours64, own64),
        "control": rel_error(wrong64, own64),
    }


@pytest.mark.parametrize("crops", [((0, 0), (4, 50)), ((1, 0), (3, 50))])
def test_cogvideox_tables_from_the_pipeline_grid(crops):
    """No module holds CogVideoX's RoPE: the exact tables are posenc's over the
    pipeline's grid, checked against ``get_3d_rotary_pos_embed`` (float32:
    within its float32 angles; float64 lifted: 1e-12), and in a full
    forward of the transformer; the control (half layout) fails.  The second
    crop is one the pipeline gives a grid of another aspect (fractional
    rows)."""
    e = cogvideox_errors(crops)
    assert e["tables float64"] <= RTOL64, e
    assert e["tables float32"] <= 8 * 2.0**-24 * 50, e  # its float32 angles, up to 50 rad
    assert e["float64"] <= RTOL64, e
    tol32 = max(e["float32 own"], 2e-6)
    assert e["float32 patched"] <= tol32, e
    assert e["control"] > 100 * tol32, e


# ---------------------------------------------------------------- refusals
def test_wan_module_of_another_theta_refused():
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

    holder = torch.nn.Module()
    holder.rope = WanRotaryPosEmbed(attention_head_dim=40, patch_size=(1, 2, 2), max_seq_len=64, theta=500.0)
    with pytest.raises(ValueError, match="WanRotaryPosEmbed cannot be patched: its tables are not those of theta"):
        patch_rope(holder)
    handle = patch_rope(holder, strict=False)
    assert handle.patched == [] and [c for _, c, _ in handle.left] == ["WanRotaryPosEmbed"]


def test_other_diffusers_rotary_modules_refused():
    from diffusers.models.transformers.transformer_cosmos import CosmosRotaryPosEmbed

    holder = torch.nn.Module()
    holder.rope = CosmosRotaryPosEmbed(48, max_size=(16, 32, 32), patch_size=(1, 2, 2))
    with pytest.raises(ValueError, match="CosmosRotaryPosEmbed cannot be patched"):
        patch_rope(holder)


def test_qwen_condition_image_of_several_frames_refused():
    from diffusers.models.transformers.transformer_qwenimage import QwenEmbedLayer3DRope

    holder = torch.nn.Module()
    holder.rope = QwenEmbedLayer3DRope(theta=10000, axes_dim=[4, 6, 6], scale_rope=True)
    patch_rope(holder)
    with pytest.raises(ValueError, match="condition image"):
        holder.rope([[(1, 2, 2), (2, 2, 2)]], 3)
    from diffusers.models.transformers.transformer_qwenimage import QwenEmbedRope

    holder.rope = QwenEmbedRope(theta=10000, axes_dim=[4, 6, 6], scale_rope=True)
    patch_rope(holder)
    with pytest.raises(ValueError, match="max_txt_seq_len"):
        holder.rope([(1, 2, 2)], torch.device("cpu"))


def test_patch_survives_model_to_dtype():
    model, inputs = _hunyuan_video()
    handle = patch_rope(model)
    model.to(torch.bfloat16).float()
    with torch.no_grad():
        ours = model(**inputs).sample
        handle.remove()
        own = model(**inputs).sample
    assert rel_error(ours, own) < 1e-4


if __name__ == "__main__":  # the errors, printed: python -m tests.posenc.test_patch_rope_diffusers
    for family in sorted(FAMILIES):
        print(family, family_errors(family))
    for crops in [((0, 0), (4, 50)), ((1, 0), (3, 50))]:
        print("cogvideox", crops, cogvideox_errors(crops))
