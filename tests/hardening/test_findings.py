"""Regression tests of the hardening findings (ids in ``findings.py``).

Each test states the promised behaviour.  While its finding is open it is
``xfail(strict=True)``: the fix makes it pass, the strict xfail then fails,
and the id is deleted from ``findings.OPEN``.  Findings whose check lives
elsewhere (the huge-request table of ``test_huge.py``, the constants test of
``test_fuzz.py``) are not repeated here.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import posenc

from .findings import OPEN, is_open


def finding(fid: str, *, run: bool = True):
    return pytest.mark.xfail(is_open(fid), strict=True, run=run, reason=f"{fid}: {OPEN.get(fid, 'fixed')}")


@finding("P1")
def test_import_keeps_the_decimal_context():
    code = "import decimal; import posenc; print(decimal.getcontext().prec)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "28"


@finding("P2")
@pytest.mark.parametrize("offset", [np.array(3.0), np.array(3), np.float64(3.0)])
def test_shift_matrix_of_a_0d_offset(offset):
    got = posenc.shift_matrix(offset, 4)
    np.testing.assert_allclose(got, posenc.shift_matrix(3.0, 4), atol=1e-15)


@finding("P7")
@pytest.mark.parametrize(
    "call",
    [
        lambda: posenc.learned_table(2, 2, std=1e300, dtype="float32"),
        lambda: posenc.wavelengths(4, base=1e300, dtype="float32"),
        lambda: posenc.frequencies(8, base=1e-300, dtype="float32"),
    ],
    ids=["learned_table-std", "wavelengths-base", "frequencies-base"],
)
def test_valid_finite_arguments_never_overflow_silently(call):
    """Either a finite table or a ValueError naming the argument, never a
    RuntimeWarning and inf values."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            out = call()
        except ValueError as exc:
            assert "`" in str(exc)
            return
    assert np.isfinite(out).all()


@finding("B2")
@pytest.mark.parametrize("q,k", [(2, 0), (3, 0)])
def test_relative_sinusoidal_bidirectional_rows(q, k):
    out = posenc.relative_sinusoidal(q, k, dim=4, bidirectional=True)
    assert out.shape == (k + q - 1, 4)


@finding("B3")
@pytest.mark.parametrize("fn", ["t5_bucket", "t5_buckets", "relative_positions"])
def test_integer_dtype_given_an_array(fn):
    torch = pytest.importorskip("torch")
    args = (np.array([1, -2]),) if fn == "t5_bucket" else (3, 4)
    kwargs = {} if fn == "t5_bucket" else {"xp": np}
    with pytest.raises(TypeError, match="`dtype`"):
        getattr(posenc, fn)(*args, dtype=torch.zeros(3), **kwargs)


@finding("B1", run=False)
def test_alibi_heads_are_bounded():
    with pytest.raises(ValueError, match="num_heads|2\\*\\*40"):
        posenc.alibi_slopes(2**41)
    with pytest.raises(ValueError, match="num_heads|2\\*\\*40"):
        posenc.alibi_bias(2**41, 0)


@finding("G1")
def test_fourier_features_bound_max_log2_freq():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="`max_log2_freq`"):
            posenc.fourier_features(np.zeros((2, 1)), 2, max_log2_freq=1e300)


@finding("V2")
def test_plot_dimensions_of_one_row():
    import matplotlib.pyplot as plt

    import posenc_viz

    fig, ax = plt.subplots()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            posenc_viz.plot_dimensions(posenc.sinusoidal(1, 4), [0, 1], ax=ax)
    finally:
        plt.close(fig)


@finding("V3")
@pytest.mark.parametrize("call", ["plot_encoding", "to_numpy"])
def test_str_parameters_refuse_non_strings(call):
    import matplotlib.pyplot as plt

    import posenc_viz

    fig, ax = plt.subplots()
    try:
        with pytest.raises(TypeError):
            if call == "to_numpy":
                posenc_viz.to_numpy(np.zeros(2), name=0)
            else:
                posenc_viz.plot_encoding(np.zeros((2, 2)), ax=ax, cbar_label=0)
    finally:
        plt.close(fig)


@finding("V4")
def test_figure_set_formats_of_a_0d_array(tmp_path):
    import posenc_viz

    with pytest.raises(TypeError, match="`formats`"):
        posenc_viz.figure_set(tmp_path, formats=np.array(3), names=["wavelengths"])
    assert list(tmp_path.iterdir()) == []


@finding("P8")
def test_similarity_by_offset_bounds_the_offsets():
    with pytest.raises(ValueError, match="offsets|2\\*\\*40"):
        posenc.similarity_by_offset(2**41, 1)


@finding("B5")
@pytest.mark.parametrize("fn", ["relative_positions", "t5_buckets"])
def test_lengths_are_bounded_when_the_output_is_empty(fn):
    with pytest.raises(ValueError, match="query_len|2\\*\\*40"):
        getattr(posenc, fn)(2**41, 0)


@finding("R2")
def test_rope_tiny_base_without_float64():
    xs = pytest.importorskip("array_api_strict")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            p = xs.asarray([1.0, 2.0], device=xs.Device("no_float64"))
            cos, sin = posenc.rope_cos_sin(p, 4, base=1e-300)
        except ValueError as exc:
            assert "`base`" in str(exc)
            return
    assert bool(xs.all(xs.isfinite(cos)))


@finding("V5")
def test_to_numpy_of_a_dtype_object():
    xs = pytest.importorskip("array_api_strict")
    import posenc_viz

    with pytest.raises(TypeError, match="`x`"):
        posenc_viz.to_numpy(xs.int64)


@finding("P9", run=False)
def test_learned_table_tiny_truncate_terminates():
    """A truncation almost no normal draw meets: refused or met, never redrawn forever."""
    import time

    t0 = time.perf_counter()
    try:
        t = posenc.learned_table(3, 4, truncate=1e-300, seed=1)
    except ValueError as exc:
        assert "`truncate`" in str(exc)
        return
    assert time.perf_counter() - t0 < 5.0
    assert np.isfinite(t).all() and (np.abs(t) <= 1e-300 * 0.02).all()


@finding("V7")
def test_plot_rope_scaling_names_its_own_parameter():
    import matplotlib.pyplot as plt

    import posenc_viz

    fig, ax = plt.subplots()
    try:
        with pytest.raises(TypeError, match="`scalings`"):
            posenc_viz.plot_rope_scaling(8, 0, ax=ax)
    finally:
        plt.close(fig)


@finding("P10")
@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16"])
@pytest.mark.parametrize("where", ["jax", "strict-no_float64"])
def test_small_integer_positions_without_float64(where, dtype):
    vals = {"int8": [-128, -1, 5], "int16": [-32768, 300, 7], "uint8": [0, 200, 255], "uint16": [65535, 3, 0]}[dtype]
    if where == "jax":
        jnp = pytest.importorskip("jax.numpy")
        p = jnp.asarray(np.array(vals, dtype=dtype))
    else:
        xs = pytest.importorskip("array_api_strict")
        p = xs.asarray(np.array(vals, dtype=dtype), device=xs.Device("no_float64"))
    from posenc_viz import to_numpy

    got = to_numpy(posenc.sinusoidal(p, 8))
    want = posenc.sinusoidal(np.array(vals, dtype=np.float64), 8)
    np.testing.assert_allclose(got, want, atol=1e-6)


# ------------------------------------------------------------ second round


def _finite_or_named(call, param):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            out = call()
        except ValueError as exc:
            assert f"`{param}`" in str(exc), exc
            return
    assert np.isfinite(np.asarray(out)).all()


@finding("N1")
@pytest.mark.parametrize(
    "call,param",
    [
        (lambda: posenc.alibi_bias(1, 2, slopes=np.array([1e300]), dtype="float32"), "slopes"),
        (lambda: posenc.kerple_bias(2, r1=np.array([1e300]), r2=np.array([1.0]), dtype="float32"), "r1"),
    ],
    ids=["alibi_bias-slopes", "kerple_bias-r1"],
)
def test_bias_parameters_that_overflow_float32(call, param):
    _finite_or_named(call, param)


@finding("N3")
def test_fourier_features_bounds_num_bands():
    with pytest.raises(ValueError, match="num_bands|2\\*\\*40"):
        posenc.fourier_features(np.zeros((0, 1)), 2**41, include_input=False)


@finding("N4")
def test_gaussian_matrix_scale_that_overflows_float32():
    _finite_or_named(lambda: posenc.gaussian_matrix(2, 2, scale=1e300, seed=0, dtype="float32"), "scale")


@finding("N5")
def test_plot_wavelengths_of_a_tiny_base():
    import matplotlib.pyplot as plt

    import posenc_viz

    fig, ax = plt.subplots()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                posenc_viz.plot_wavelengths(2, quantity="frequency", base=1e-300, ax=ax)
            except ValueError as exc:
                assert "`base`" in str(exc)
    finally:
        plt.close(fig)


@finding("N7")
def test_longrope_factor_lists_of_the_wrong_kind():
    with pytest.raises(TypeError, match="`short_factor`"):
        posenc.scaling.LongRoPE(np.int64, [1.0], 2)


@finding("N8")
@pytest.mark.parametrize("freqs", [np.zeros(0), []], ids=["array", "list"])
def test_sines_bounds_positions_when_the_output_is_empty(freqs):
    with pytest.raises(ValueError, match="positions|2\\*\\*40"):
        posenc.sines(2**41, freqs)


@finding("N9")
def test_plot_similarity_by_offset_of_a_huge_view():
    import matplotlib.pyplot as plt

    import posenc_viz

    fig, ax = plt.subplots()
    try:
        with pytest.raises(ValueError, match="offsets|2\\*\\*40"):
            posenc_viz.plot_similarity_by_offset(2, np.broadcast_to(np.zeros(1), (2**41,)), ax=ax)
    finally:
        plt.close(fig)


# ---------------------------------------------------------------- third round (T1-T..., all fixed)
@finding("T1")
@pytest.mark.parametrize(
    "cfg,exc,key",
    [
        ({"model_type": "qwen2_vl_vision", "embed_dim": 2**70, "num_heads": 32,
          "rope_parameters": {"rope_type": "axial"}}, ValueError, "`embed_dim`"),
        ({"hidden_size": 2**80, "num_attention_heads": 2}, ValueError, "`hidden_size`"),
        ({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 0.5}}, ValueError, "`factor`"),
        ({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 1e-300}}, ValueError, "`factor`"),
        ({"head_dim": 64, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "dynamic", "factor": 0.5}},
         ValueError, "`factor`"),
        ({"head_dim": 64, "max_position_embeddings": 4096, "rope_scaling": {
            "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}},
         ValueError, "`original_max_position_embeddings`"),
        ({"head_dim": 64, "max_position_embeddings": 4096, "rope_scaling": {
            "rope_type": "yarn", "factor": 4.0, "beta_fast": 1.0, "beta_slow": 32.0}}, ValueError, "`beta_fast`"),
        ({"model_type": "gemma4_text", "head_dim": 64, "layer_types": "full_attention",
          "per_layer_config": {"0": {"head_dim": 128}},
          "rope_parameters": {"full_attention": {"rope_type": "default"}}},
         TypeError, "`layer_types`"),
    ],
    ids=["vision-embed_dim-2**70", "hidden_size-2**80", "linear-0.5", "linear-1e-300", "dynamic-0.5",
         "yarn-original-above-max", "yarn-betas-swapped", "layer_types-str"],
)  # fmt: skip
def test_from_hf_refuses_nonsense_configs(cfg, exc, key):
    with pytest.raises(exc, match=key):
        posenc.scaling.from_hf(cfg)


def test_from_hf_accepts_the_neighbours_of_the_refusals():
    """The values next to each refusal of T1 still read (factor 1, the
    original length equal to the maximum, beta_fast just above beta_slow)."""
    base = {"head_dim": 64, "max_position_embeddings": 4096}
    assert posenc.scaling.from_hf({**base, "rope_scaling": {"rope_type": "linear", "factor": 1.0}})["dim"] == 64
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 2.0,
            "beta_slow": 1.0}  # fmt: skip
    assert posenc.scaling.from_hf({**base, "rope_scaling": yarn})["scaling"].beta_fast == 2.0


@finding("T2")
@pytest.mark.parametrize(
    "call,key",
    [
        (lambda: posenc.grid_ids((4097,), dtype="float16"), "`dtype` float16"),
        (lambda: posenc.grid_ids((300, 2), dtype="bfloat16", xp=pytest.importorskip("torch")), "`dtype` bfloat16"),
        (lambda: posenc.grid_ids((4, 4), normalize="separate", dtype="float16"), "`dtype` float16"),
        (lambda: posenc.grid_ids((2, 3), scale=1e308, offset=10), "`scale` and `offset`"),
        (lambda: posenc.grid_ids((2, 3), scale=1e300, dtype="float32"), "`dtype` float32"),
    ],
    ids=["float16-4097", "bfloat16-300", "float16-fractional", "scale-1e308", "float32-1e300"],
)
def test_grid_ids_refuse_ids_the_dtype_cannot_hold(call, key):
    with pytest.raises(ValueError, match=key):
        call()


def test_grid_ids_in_a_narrow_dtype_where_exact():
    """float16 holds the integers up to 2**11 exactly: a grid up to there is
    accepted, every id distinct and equal to the int64 ids."""
    got = posenc.grid_ids((2049,), dtype="float16")
    np.testing.assert_array_equal(got.astype(np.int64), posenc.grid_ids((2049,)))
    torch = pytest.importorskip("torch")
    got = posenc.grid_ids((16, 16), dtype=torch.bfloat16, xp=torch)
    assert torch.equal(got.to(torch.int64), posenc.grid_ids((16, 16), xp=torch))


@finding("T3")
@pytest.mark.parametrize(
    "call,key",
    [
        (lambda: posenc.timestep_embedding(np.array([1.0, 7.0]), 8, scale=1e30), r"`scale` = 1e\+30"),
        (lambda: posenc.timestep_embedding(np.array([1.0]), 8, scale=2.0**51), "`scale`"),
        (lambda: posenc.timestep_embedding(np.array([1.0]), 8, max_period=1e-20), "`max_period`"),
        (lambda: posenc.rope_cos_sin(np.array([1.0, 2.0]), 64, base=1e-40), "`base` = 1e-40"),
        (lambda: posenc.rope(np.ones((2, 8)), 2, base=1e-40), "`base` = 1e-40"),
        (lambda: posenc.rope_axes_cos_sin(posenc.grid_ids((2, 2)), [8, 8], base=1e-40), "`base` = 1e-40"),
        (lambda: posenc.rope_axes_cos_sin(posenc.grid_ids((2, 2)), freqs=np.full((4, 2), 1e299)), "`freqs`"),
        (lambda: posenc.rope_axes_cos_sin(posenc.grid_ids((2, 2)), freqs=np.full((4, 2), 1e301)), "`freqs`"),
    ],
    ids=["timestep-scale-1e30", "timestep-scale-2**51", "timestep-max_period", "rope_cos_sin-base",
         "rope-base", "rope_axes-base", "rope_axes-freqs-1e299", "rope_axes-freqs-1e301"],
)  # fmt: skip
def test_frequencies_beyond_the_exact_angles_are_refused(call, key):
    """Frequencies whose angles posenc's engine cannot reduce exactly even at
    |p| = 1 (above 2**50 radians per position; 2**40 for a frequency matrix)
    are refused naming the argument, never a silently wrong table."""
    with pytest.raises(ValueError, match=key):
        call()


def test_frequencies_at_the_exact_limit_are_exact():
    """The largest accepted frequencies give the exact values (mpmath)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 200
    t = np.array([1.0, 0.75])
    got = posenc.timestep_embedding(t, 2, scale=2.0**50, dtype="float64")
    want = [[float(mpmath.sin(mpmath.mpf(x) * 2**50)), float(mpmath.cos(mpmath.mpf(x) * 2**50))] for x in t]
    np.testing.assert_allclose(got, want, atol=1e-15)
    cos, sin = posenc.rope_axes_cos_sin(np.array([[1.0, 0.0]]), freqs=np.array([[2.0**40, 0.0]]))
    assert abs(cos[0, 0] - float(mpmath.cos(mpmath.mpf(2) ** 40))) < 1e-15
    cos, sin = posenc.rope_cos_sin(np.array([1.0]), 4, base=2.0**-100)
    assert abs(sin[0, 1] - float(mpmath.sin(mpmath.mpf(2) ** 50))) < 1e-15


@finding("T4")
@pytest.mark.parametrize(
    "g",
    [np.full(4, -1e308), np.array([1e308, -1e308, 1e308]), np.full(3, 1e308)],
    ids=["negative", "mixed", "positive"],
)
def test_cumulative_gate_bias_of_overflowing_sums(g):
    """Finite gates whose sums overflow gave a NaN diagonal: refused naming
    the gates (never a NaN)."""
    with pytest.raises(ValueError, match="`log_gates`"):
        posenc.cumulative_gate_bias(g)
    with pytest.raises(ValueError, match="`backward_log_gates`"):
        posenc.cumulative_gate_bias(np.zeros(g.shape), causal=False, backward_log_gates=g)


def test_cumulative_gate_bias_of_huge_finite_sums():
    """Gates just inside the limit: exact sums (the entries, -inf where the
    float32 output overflows) and a 0 diagonal."""
    g = np.full(4, -1e300)
    got = posenc.cumulative_gate_bias(g)
    np.testing.assert_array_equal(np.diag(got), 0.0)
    assert got[3, 0] == -3e300 and got[2, 1] == -1e300
    got32 = posenc.cumulative_gate_bias(g, dtype="float32")
    assert np.isneginf(got32[3, 0]) and (np.diag(got32) == 0).all() and not np.isnan(got32).any()


@finding("T5")
def test_torch_modules_built_under_inference_mode_train():
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    with torch.inference_mode():
        rope = pt.RotaryEmbedding(8, max_positions=16)
        sin = pt.SinusoidalEmbedding(8, max_positions=16)
        alibi = pt.ALiBi(4, learned=True)
        axes = pt.AxesRotaryEmbedding([4, 4])
    for m in (rope, sin, alibi, axes):
        assert not any(t.is_inference() for t in (*m.buffers(), *m.parameters())), m
    q = torch.randn(1, 2, 4, 8, requires_grad=True)
    k = torch.randn(1, 2, 4, 8, requires_grad=True)
    qr, kr = rope(q, k)
    (qr * kr).sum().backward()  # saved the inference-mode tables for backward: RuntimeError before
    assert q.grad is not None and torch.isfinite(q.grad).all()
    alibi(torch.randn(1, 4, 3, 3, requires_grad=True)).sum().backward()
    assert alibi.slopes.grad is not None
    x = torch.randn(1, 4, 8, requires_grad=True)
    (sin(x) ** 2).sum().backward()
    ids = torch.tensor([[1.0, 2.0]], requires_grad=True)
    c, s = axes(ids)
    (c * s).sum().backward()
    assert ids.grad is not None


@finding("T6")
def test_axes_rotary_embedding_names_a_bad_device():
    pytest.importorskip("torch")
    import posenc.torch as pt

    with pytest.raises(ValueError, match="`device`"):
        pt.AxesRotaryEmbedding([4, 4], device="nope")


def _cli_usage(capsys, args):
    from posenc_viz import cli

    with pytest.raises(SystemExit) as info:
        cli.main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().splitlines()[0].startswith("usage: posenc-viz")
    return err.strip().splitlines()[-1]


_VISION = {"model_type": "qwen2_vl_vision", "embed_dim": 1280, "num_heads": 16,
           "rope_parameters": {"rope_type": "axial"}}  # fmt: skip


@finding("T7")
@pytest.mark.parametrize(
    "config,extra,expect",
    [
        ({"axes_dims_rope": [2] * 9}, [], "argument --hf-config: `axes_dims_rope` of the config must name 1 to 8 axes"),
        ({"axes_dims_rope": [2] * 100000}, [], "`axes_dims_rope` of the config must name 1 to 8 axes"),
        ({"axes_dims_rope": 16}, [], "argument --hf-config: `axes_dims_rope` of the config must be a list"),
        ({"rope_axes_dim": [16, 56, 56], "attention_head_dim": "128"}, [], "`attention_head_dim`"),
        ({**_VISION, "image_size": 224, "patch_size": 0}, [], "`patch_size`"),
        ({**_VISION, "image_size": 224, "patch_size": -16}, [], "`patch_size`"),
        ({**_VISION, "image_size": 10**30, "patch_size": 14}, [], "`image_size`"),
        ({**_VISION, "image_size": 14, "patch_size": 16}, [], "`patch_size`"),
        (None, ["--axes-dim", "4,,4"], "argument --axes-dim: expected comma-separated"),
        (None, ["--head-dim", "2"], "argument --head-dim: the default figure splits the head"),
    ],
    ids=["9-axes", "100000-axes", "axes_dims_rope-int", "attention_head_dim-str", "patch_size-0", "patch_size-neg",
         "image_size-huge", "patch-above-image", "axes-dim-empty-entry", "head-dim-2"],
)  # fmt: skip
def test_cli_rope_axes_refuses_hostile_configs(tmp_path, capsys, config, extra, expect):
    import json

    args = ["rope-axes", "--out", str(tmp_path / "o"), "--format", "png", "--dpi", "50", *extra]
    if config is not None:
        cfg = tmp_path / "config.json"
        cfg.write_text(json.dumps(config))
        args += ["--hf-config", str(cfg)]
    assert expect in _cli_usage(capsys, args)


@finding("T8")
@pytest.mark.parametrize(
    "call,names",
    [
        (lambda: posenc.sinusoidal(2**30, 2**12), "`positions` or `dim`"),
        (lambda: posenc.rope_cos_sin(2**30, 2**12), "`positions` or `dim`"),
        (lambda: posenc.timestep_embedding(np.broadcast_to(np.zeros(1), (2**30,)), 2**12), "`t` or `dim`"),
        (lambda: posenc.grid_ids((2**20, 2**20)), "`shape`, `prefix_tokens` or `suffix_tokens`"),
        (lambda: posenc.alibi_bias(2**12, 2**16), "`num_heads`, `query_len` or `key_len`"),
        (lambda: posenc.rope_axes_cos_sin(np.broadcast_to(np.zeros((1, 2)), (2**35, 2)), [64, 64]),
         "`ids` or `axes_dim`"),
    ],
    ids=["sinusoidal", "rope_cos_sin", "timestep_embedding", "grid_ids", "alibi_bias", "rope_axes_cos_sin"],
)  # fmt: skip
def test_size_limit_refusals_name_the_parameters(call, names):
    with pytest.raises(ValueError, match=r"2\*\*40; reduce ") as info:
        call()
    assert names in str(info.value)
