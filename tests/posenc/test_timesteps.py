"""Diffusion timestep embeddings: timestep_embedding, posenc.torch.Timesteps,
and the flipped Gaussian Fourier features of score-SDE.

Oracles: a float64 NumPy formula written here from DDPM / diffusers'
definition; diffusers' own ``get_timestep_embedding`` and ``Timesteps`` (as
shipped, in float32, and the same source run in float64: its one
``torch.float32`` and one ``.float()`` replaced); facebookresearch DiT's
``TimestepEmbedder.timestep_embedding`` transliterated from its published
source; diffusers' ``GaussianFourierProjection`` in float64 and float32.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import posenc


def ref_embedding(t, dim, *, flip=False, shift=1.0, scale=1.0, max_period=10000.0):
    """float64 formula: [sin | cos] of t * scale * max_period**(-i / (dim//2 - shift)),
    flipped, then a zero column for odd dim."""
    t = np.asarray(t, dtype=np.float64)
    half = dim // 2
    denom = half - shift if half > 1 else 1.0
    w = scale * np.exp(-math.log(max_period) * np.arange(half) / denom)
    a = t[..., None] * w
    parts = [np.cos(a), np.sin(a)] if flip else [np.sin(a), np.cos(a)]
    if dim % 2:
        parts.append(np.zeros(t.shape + (1,)))
    return np.concatenate(parts, axis=-1)


#: timesteps in [0, 1000], fractional, exactly representable in float32 (every
#: backend and both dtypes embed the same numbers)
T = np.concatenate([[0.0, 1.0, 750.0, 999.0, 1000.0], np.random.default_rng(0).uniform(0, 1000, 27)]).astype(
    np.float32
)


# ---------------------------------------------------------------- every backend
@pytest.mark.parametrize(
    ("dim", "kw"),
    [
        (320, {}),
        (33, {"flip_sin_to_cos": True, "downscale_freq_shift": 0.0}),
        (16, {"downscale_freq_shift": 0.5, "max_period": 1000.0}),
    ],
)
def test_backends(xp, dim, kw):
    t = xp.asarray(T.reshape(4, 8))
    got = xp.call(posenc.timestep_embedding, t, dim, **kw)
    want = ref_embedding(T.reshape(4, 8), dim, flip=kw.get("flip_sin_to_cos", False), **_ref_kw(kw))
    xp.assert_close(got, want, atol=xp.tol(), dtype=xp.default_float)


def _ref_kw(kw):
    return {"shift": kw.get("downscale_freq_shift", 1.0), "max_period": kw.get("max_period", 10000.0)}


def test_backends_integer_timesteps(xp):
    t = xp.asarray(np.array([0, 1, 500, 999], dtype=np.int32))
    got = xp.call(posenc.timestep_embedding, t, 64, flip_sin_to_cos=True, dtype="float32")
    xp.assert_close(got, ref_embedding([0, 1, 500, 999], 64, flip=True), atol=xp.tol("float32"), dtype=xp.ns.float32)


def test_a_callers_numpy_error_state_changes_nothing(xp):
    """Under ``np.seterr(all="raise")`` a first call (its frequencies and
    turns made, with no NumPy error state of their own for ordinary
    frequencies) gives the table of the default state, bit for bit."""
    t = xp.asarray(T)
    posenc.clear_caches()
    want = xp.call(posenc.timestep_embedding, t, 320, flip_sin_to_cos=True)
    posenc.clear_caches()
    with np.errstate(all="raise"):
        got = xp.call(posenc.timestep_embedding, t, 320, flip_sin_to_cos=True)
    if xp.has_values:
        np.testing.assert_array_equal(xp.to_numpy(got), xp.to_numpy(want))
    xp.assert_close(got, ref_embedding(T, 320, flip=True), atol=xp.tol(), dtype=xp.default_float)


def test_scale_on_devices_without_float64():
    """scale=1000 with t in [0, 1]: without float64 the fractional part's angle
    is one float32 product, frac(t) * w rounded, at most about w * 2**-23."""
    xs = pytest.importorskip("array_api_strict")
    t = T / 1000
    got = posenc.timestep_embedding(xs.asarray(t, device=xs.Device("no_float64")), 320, scale=1000.0)
    got = np.asarray(got.to_device(xs.Device("CPU_DEVICE")))
    err = np.abs(got - ref_embedding(t, 320, scale=1000.0)).max()
    assert err <= 1000.0 * 2.0**-23 + 5e-7
    # with float64 on the device: the exact reduction
    err64 = np.abs(posenc.timestep_embedding(t, 320, scale=1000.0, dtype="float32") - ref_embedding(t, 320, scale=1e3))
    assert err64.max() <= 2.5e-7


def test_odd_and_tiny_dims():
    t = np.array([0.5, 3.0])
    np.testing.assert_array_equal(posenc.timestep_embedding(t, 1), np.zeros((2, 1)))
    # dim 2 and 3: the one frequency is `scale` whatever the shift (diffusers: 0/0 for shift 1)
    for dim in (2, 3):
        for shift in (0.0, 1.0, 0.5):
            got = posenc.timestep_embedding(t, dim, downscale_freq_shift=shift, scale=2.0)
            np.testing.assert_allclose(got[:, :2], np.stack([np.sin(2 * t), np.cos(2 * t)], -1), atol=1e-15)
    got = posenc.timestep_embedding(t, 7, flip_sin_to_cos=True)
    np.testing.assert_array_equal(got[:, -1], 0.0)
    np.testing.assert_allclose(got, ref_embedding(t, 7, flip=True), atol=1e-15)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_is_computed_in_float32_or_better(dtype):
    torch = pytest.importorskip("torch")
    dt = getattr(torch, dtype)
    t32 = torch.tensor([750.0, 999.0, 0.25])
    got = posenc.timestep_embedding(t32, 320, dtype=dt)
    assert got.dtype == dt
    # the embedding of t = 750 (not of its bfloat16 rounding 752), rounded once at the end
    want = torch.as_tensor(ref_embedding(t32.numpy(), 320)).to(dt)
    assert torch.equal(got, want)
    # half-precision timesteps are widened exactly (bfloat16 holds 752, not 750)
    th = t32.to(dt)
    got = posenc.timestep_embedding(th, 320)
    assert got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), ref_embedding(th.float().numpy(), 320), atol=2.5e-7)
    if dtype == "bfloat16":
        assert float(th[0]) == 752.0
        assert np.abs(got.numpy()[0] - ref_embedding([750.0], 320)[0]).max() > 0.5


def test_bad_input():
    t = np.array([1.0, 2.0])
    with pytest.raises(TypeError, match="`t`"):
        posenc.timestep_embedding(500, 32)
    with pytest.raises(TypeError, match="`t`"):
        posenc.timestep_embedding(0.5, 32)
    with pytest.raises(TypeError, match="`t`"):
        posenc.timestep_embedding(np.array([True]), 32)
    with pytest.raises(ValueError, match="`t`"):
        posenc.timestep_embedding(np.array([np.nan]), 32)
    with pytest.raises(ValueError, match="downscale_freq_shift"):
        posenc.timestep_embedding(t, 32, downscale_freq_shift=16.0)
    with pytest.raises(ValueError, match="downscale_freq_shift"):
        posenc.timestep_embedding(t, 32, downscale_freq_shift=float("nan"))
    with pytest.raises(ValueError, match="max_period"):
        posenc.timestep_embedding(t, 32, max_period=0.0)
    with pytest.raises(ValueError, match="max_period"):
        posenc.timestep_embedding(t, 32, max_period=1e-300, downscale_freq_shift=15.999)
    with pytest.raises(TypeError, match="flip_sin_to_cos"):
        posenc.timestep_embedding(t, 32, flip_sin_to_cos=1)
    with pytest.raises(TypeError, match="scale"):
        posenc.timestep_embedding(t, 32, scale="1000")
    with pytest.raises(ValueError, match="dim"):
        posenc.timestep_embedding(t, 0)
    with pytest.raises(ValueError, match=r"2\*\*40"):
        posenc.timestep_embedding(np.broadcast_to(np.zeros(1), (2**30,)), 2**12)


# ---------------------------------------------------------------- diffusers
@pytest.fixture(scope="module")
def diffusers_embedding():
    """diffusers' get_timestep_embedding as shipped, and its source run in float64."""
    pytest.importorskip("torch")
    emb = pytest.importorskip("diffusers.models.embeddings")
    src = inspect.getsource(emb.get_timestep_embedding)
    assert src.count("torch.float32") == 1 and src.count(".float()") == 1, "diffusers changed: review this test"
    ns = dict(emb.__dict__)
    exec(src.replace("torch.float32", "torch.float64").replace(".float()", ".double()"), ns)  # noqa: S102
    return emb.get_timestep_embedding, ns["get_timestep_embedding"]


#: the largest errors against diffusers (for the record; asserted below)
DIFFUSERS_ERRORS: dict[str, float] = {}


def _record(key, err):
    DIFFUSERS_ERRORS[key] = max(DIFFUSERS_ERRORS.get(key, 0.0), float(err))


@pytest.mark.parametrize("max_period", [10000, 1000])
@pytest.mark.parametrize("scale", [1, 1000])
@pytest.mark.parametrize("flip", [False, True])
def test_matches_diffusers(diffusers_embedding, flip, scale, max_period):
    """The full grid of the issue: flip x shift x scale x dim x max_period, fractional t."""
    import torch

    d32, d64 = diffusers_embedding
    t = torch.as_tensor(T / 1000 if scale == 1000 else T)  # float32 values
    for shift in (0, 1, 0.5):
        for dim in (256, 320, 33):
            args = (dim, flip, shift, scale, max_period)
            kw = dict(flip_sin_to_cos=flip, downscale_freq_shift=shift, scale=scale, max_period=max_period)
            want64 = d64(t.double(), *args)
            got64 = posenc.timestep_embedding(t.double(), dim, **kw, dtype=torch.float64)
            got32 = posenc.timestep_embedding(t, dim, **kw)
            assert got32.dtype == torch.float32 and got32.shape == (len(T), dim)
            _record("float64 vs diffusers in float64", (got64 - want64).abs().max())
            _record("float32 vs diffusers in float64", (got32.double() - want64).abs().max())
            assert float((got64 - want64).abs().max()) <= 1e-12
            assert float((got32.double() - want64).abs().max()) <= 2.5e-7
            # diffusers as shipped forms frequencies and angles in float32: its own
            # error, up to a few float32 ulp of the angles (|t w| <= 1000)
            want32 = d32(t, *args)
            _record("float32 vs diffusers as shipped", (got32 - want32).abs().max())
            _record("diffusers as shipped vs its float64 run", (want32.double() - want64).abs().max())
            assert float((got32 - want32).abs().max()) <= 2.5e-4
            # controls: the other order, and the other spacing, are far off
            wrong = posenc.timestep_embedding(t.double(), dim, **{**kw, "flip_sin_to_cos": not flip})
            assert float((wrong.double() - want64).abs().max()) > 0.5
            wrong = posenc.timestep_embedding(t.double(), dim, **{**kw, "downscale_freq_shift": shift + 0.5})
            assert float((wrong.double() - want64).abs().max()) > 0.1


def test_odd_dim_control_paper_spacing(diffusers_embedding):
    """The composition the issue names (the paper's concat table of scale * t)
    has the paper's spacing for odd dims: off by more than 1."""
    import torch

    _, d64 = diffusers_embedding
    t = torch.as_tensor(T).double()
    want = d64(t, 33, False, 0, 1, 10000)
    paper = posenc.sinusoidal(t, 33, layout="concat")
    assert float((paper - want).abs().max()) > 1.0
    got = posenc.timestep_embedding(t, 33, downscale_freq_shift=0, dtype=torch.float64)
    assert float((got - want).abs().max()) <= 1e-12


def dit_timestep_embedding(t, dim, max_period=10000):
    """facebookresearch DiT ``TimestepEmbedder.timestep_embedding`` (models.py),
    transliterated in float64: ``half = dim // 2``, frequencies
    ``exp(-log(max_period) * arange(half) / half)``, ``[cos | sin]``, a zero
    column for odd ``dim``."""
    import torch

    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float64) / half)
    args = t[:, None].double() * freqs[None]
    embedding = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        embedding = torch.cat([embedding, torch.zeros_like(embedding[:, :1])], dim=-1)
    return embedding


@pytest.mark.parametrize("dim", [256, 33])
def test_matches_dit(dim):
    torch = pytest.importorskip("torch")
    t = torch.as_tensor(T).double()
    want = dit_timestep_embedding(t, dim)
    got = posenc.timestep_embedding(t, dim, flip_sin_to_cos=True, downscale_freq_shift=0, dtype=torch.float64)
    assert float((got - want).abs().max()) <= 1e-12
    got32 = posenc.timestep_embedding(t.float(), dim, flip_sin_to_cos=True, downscale_freq_shift=0)
    assert float((got32.double() - want).abs().max()) <= 2.5e-7
    control = posenc.timestep_embedding(t, dim, dtype=torch.float64)  # diffusers' defaults
    assert float((control - want).abs().max()) > 0.5


# ---------------------------------------------------------------- posenc.torch.Timesteps
@pytest.mark.parametrize(
    ("args", "kw"), [((320, True, 0), {}), ((256, False, 1), {"scale": 1000}), ((33, True, 1), {})]
)
def test_timesteps_module_matches_diffusers(args, kw):
    torch = pytest.importorskip("torch")
    emb = pytest.importorskip("diffusers.models.embeddings")
    from posenc.torch import Timesteps

    t = torch.as_tensor(T / 1000 if kw else T)
    ours, theirs = Timesteps(*args, **kw), emb.Timesteps(*args, **kw)
    got, want32 = ours(t), theirs(t)
    assert got.dtype == want32.dtype == torch.float32 and got.shape == want32.shape
    assert float((got - want32).abs().max()) <= 2.5e-4  # diffusers' own float32 rounding
    assert list(ours.state_dict()) == list(theirs.state_dict()) == []
    flip, shift = args[1], args[2]
    exact = ref_embedding(t.numpy(), args[0], flip=flip, shift=shift, scale=kw.get("scale", 1))
    np.testing.assert_allclose(got.numpy(), exact, atol=2.5e-7)
    control = Timesteps(args[0], not flip, shift, **kw)(t)
    assert float((control - want32).abs().max()) > 0.5


def test_timesteps_module_meta_to_empty_and_dtypes():
    torch = pytest.importorskip("torch")
    from posenc.torch import Timesteps

    t = torch.tensor([1.5, 400.0])
    with torch.device("meta"):
        m = Timesteps(64, True, 0)
        assert m(torch.zeros(3)).device.type == "meta"
    m = m.to_empty(device="cpu")
    want = torch.as_tensor(ref_embedding(t.numpy(), 64, flip=True, shift=0.0)).float()
    torch.testing.assert_close(m(t), want, atol=2.5e-7, rtol=0)
    # the model's dtype does not change the embedding (float32, as diffusers')
    m = m.to(torch.bfloat16)
    assert m(t.to(torch.bfloat16)).dtype == torch.float32
    m16 = Timesteps(64, True, 0, dtype=torch.bfloat16)
    assert torch.equal(m16(t), want.to(torch.bfloat16))
    with torch.inference_mode():
        torch.testing.assert_close(Timesteps(64, True, 0)(t), want, atol=2.5e-7, rtol=0)
    assert "max_period=1000.0" in repr(Timesteps(8, False, 1, max_period=1000.0))
    with pytest.raises(ValueError, match="downscale_freq_shift"):
        Timesteps(8, False, 4)
    with pytest.raises(TypeError, match="flip_sin_to_cos"):
        Timesteps(8, 1, 1)
    with pytest.raises(ValueError, match="num_channels"):
        Timesteps(0, False, 1)


def test_compiles_fullgraph():
    torch = pytest.importorskip("torch")
    from posenc.torch import Timesteps

    m = Timesteps(320, True, 0)

    def step(t, x):
        return x + m(t * 1000.0) + posenc.timestep_embedding(t, 320, scale=1000.0)

    t, x = torch.linspace(0, 1, 6), torch.zeros(6, 320)
    torch._dynamo.reset()
    got = torch.compile(step, fullgraph=True, backend="eager")(t, x)
    torch.testing.assert_close(got, step(t, x), atol=2e-7, rtol=0)


# ---------------------------------------------------------------- score-SDE / NCSN++ Gaussian Fourier features
@pytest.mark.parametrize("flip", [False, True])
@pytest.mark.parametrize("log", [True, False])
def test_gaussian_fourier_projection_matches_diffusers(flip, log):
    """diffusers' GaussianFourierProjection (score-SDE's NCSN++ noise-level
    embedding) is gaussian_fourier_features of x[:, None] with B = W[:, None]."""
    torch = pytest.importorskip("torch")
    emb = pytest.importorskip("diffusers.models.embeddings")
    torch.manual_seed(0)
    proj = emb.GaussianFourierProjection(64, scale=16.0, log=log, flip_sin_to_cos=flip)
    sigma = torch.as_tensor(np.geomspace(0.01, 50.0, 17).astype(np.float32))

    def ours(s, w, flip=flip):
        x = torch.log(s) if log else s
        return posenc.gaussian_fourier_features(x[:, None], w[:, None], flip_sin_to_cos=flip, dtype=s.dtype)

    want32 = proj(sigma)  # as shipped: float32 angles
    got32 = ours(sigma, proj.weight)
    proj = proj.double()  # the same (float32) weights and inputs, in float64
    want64 = proj(sigma.double())
    got64 = ours(sigma.double(), proj.weight)
    assert got32.dtype == torch.float32 and got64.dtype == torch.float64
    _record("gaussian float64 vs diffusers in float64", (got64 - want64).abs().max())
    _record("gaussian float32 vs diffusers as shipped", (got32 - want32).abs().max())
    # the peer's float64 angles (up to ~1.6e4 here) carry its own rounding, a few ulp of them
    x64 = torch.log(sigma.double()) if log else sigma.double()
    top = float(x64.abs().max() * proj.weight.abs().max()) * 2 * math.pi
    assert float((got64 - want64).abs().max()) <= top * 2.0**-50
    # float32: against the float64 peer on the same float32 coordinates (log taken in float32)
    peer = emb.GaussianFourierProjection(64, log=False, flip_sin_to_cos=flip).double()
    peer.weight.data = proj.weight.data
    x32 = torch.log(sigma) if log else sigma
    err = float((got32.double() - peer(x32.double())).abs().max())
    _record("gaussian float32 vs diffusers in float64", err)
    assert err <= 5e-7
    # diffusers' float32 angles (up to ~1.3e3 here) carry a few float32 ulp of error
    assert float((got32 - want32).abs().max()) <= 1e-3
    wrong = ours(sigma.double(), proj.weight, flip=not flip)  # the control: the other order
    assert float((wrong - want64).abs().max()) > 0.5


def test_gaussian_fourier_features_flip(xp):
    c = np.array([[0.25, 1.0], [0.1, -0.3]])
    B = np.array([[1.0, 0.0], [0.0, 0.5], [0.3, 0.2]])
    got = xp.call(posenc.gaussian_fourier_features, xp.asarray(c), xp.asarray(B), flip_sin_to_cos=True)
    a = 2 * np.pi * c @ B.T
    xp.assert_close(got, np.concatenate([np.cos(a), np.sin(a)], -1), atol=xp.tol() * 2)
    with pytest.raises(TypeError, match="flip_sin_to_cos"):
        posenc.gaussian_fourier_features(c, B, flip_sin_to_cos="yes")
