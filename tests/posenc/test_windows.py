"""2-D relative positions of windowed vision attention (posenc.windows).

Oracles: timm 1.0.31's ``pos_embed_rel`` functions (golden values in
``data/windows_golden.npz``, made by ``data/make_windows_golden.py``);
transformers' Swin, Swin-V2, BEiT, SAM and ViTDet modules, run live; integer
and float64 formulas written here from the papers.  Every peer comparison has
a control, a plausible wrong convention that must miss by a clear margin.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import posenc

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def golden():
    with np.load(DATA / "windows_golden.npz") as f:
        return {k: f[k] for k in f.files}


def index_dtype(xp):
    return xp.ns.__array_namespace_info__().default_dtypes(device=xp.device)["indexing"]


# ---------------------------------------------------------------- oracles
def ref_index(h, w, cls=False, sign=1):
    """Swin's index from its definition: offset (query - key) row-major over
    (2h-1, 2w-1); ``sign=-1`` is the key-minus-query control."""
    r, c = np.divmod(np.arange(h * w), w)
    dr = sign * (r[:, None] - r[None, :]) + h - 1
    dc = sign * (c[:, None] - c[None, :]) + w - 1
    idx = dr * (2 * w - 1) + dc
    if cls:
        n = (2 * h - 1) * (2 * w - 1)
        idx = np.pad(idx, ((1, 0), (1, 0)))
        idx[0, :], idx[:, 0], idx[0, 0] = n, n + 1, n + 2
    return idx


def ref_log(h, w, ph=None, pw=None, mode="swin"):
    """Swin-V2's log-spaced coordinates in float64 (the paper's formula)."""
    axes = []
    for side, p in ((h, ph or h), (w, pw or w)):
        d = np.arange(-(side - 1), side, dtype=np.float64)
        if mode == "swin":
            x = 8.0 * d / (p - 1) if p > 1 else 0.0 * d
            axes.append(np.sign(x) * np.log2(1.0 + np.abs(x)) / 3.0)
        else:
            axes.append(np.sign(d) * np.log(1.0 + np.abs(d)))
    a, b = np.meshgrid(*axes, indexing="ij")
    return np.stack([a, b], axis=-1)


def ref_sam_exact(q, k):
    """The exact rational floor of SAM's coordinates (the control: SAM rounds in float32)."""
    i, j = np.arange(q)[:, None], np.arange(k)[None, :]
    return i + ((k - 1 - j) * q) // k if q >= k else (i * k) // q + (k - 1 - j)


def ref_sam_float32(q, k):
    """SAM's index as its code computes it, in float32 (a transcription)."""
    f = np.float32
    i, j = np.arange(q, dtype=f)[:, None], np.arange(k, dtype=f)[None, :]
    return ((i * f(max(k / q, 1.0)) - j * f(max(q / k, 1.0))) + f((k - 1) * max(q / k, 1.0))).astype(np.int64)


def ref_linear(table, n):
    """``F.interpolate(mode="linear", align_corners=False)`` of the rows, float64."""
    L = table.shape[0]
    src = np.clip((np.arange(n) + 0.5) * L / n - 0.5, 0.0, None)
    lo = np.minimum(np.floor(src).astype(int), L - 1)
    hi = np.minimum(lo + 1, L - 1)
    f = (src - lo)[:, None]
    return (1 - f) * table[lo] + f * table[hi]


def _golden_windows(golden, prefix):
    return sorted({tuple(map(int, k.rsplit("_", 1)[1].split("x"))) for k in golden if k.startswith(prefix)})


def _some(xp, cases, keep=3):
    """Every golden case on NumPy, a few on the other backends (their rules are the same)."""
    cases = list(cases)
    return cases if xp.name == "numpy" else cases[:: max(1, len(cases) // keep)][:keep]


# ---------------------------------------------------------------- relative_position_index
def test_golden_script_is_committed_with_its_data(golden):
    spec = importlib.util.spec_from_file_location("make_windows_golden", DATA / "make_windows_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    keys = {f"index_{h}x{w}" for h, w in mod.WINDOWS} | {f"index_cls_{h}x{w}" for h, w in mod.WINDOWS}
    keys |= {f"log_{m}_{h}x{w}_p{a}x{b}" for (h, w), (a, b), m in mod.LOG_CASES}
    for kind, old, new, cls in mod.RESIZE_CASES:
        key = f"{kind}{'_cls' if cls else ''}_{old[0]}x{old[1]}_to_{new[0]}x{new[1]}"
        keys |= {f"resize_in_{key}", f"resize_out_{key}"}
    assert keys == set(golden)


@pytest.mark.parametrize("cls", [False, True], ids=["plain", "class_token"])
def test_index_matches_timm(xp, golden, cls):
    for h, w in _some(xp, _golden_windows(golden, "index_")):
        want = golden[f"index_{'cls_' if cls else ''}{h}x{w}"]
        assert want.dtype == np.int64
        got = xp.call(posenc.relative_position_index, (h, w), class_token=cls, xp=xp.ns, device=xp.device)
        xp.assert_close(got, want, dtype=index_dtype(xp))
        np.testing.assert_array_equal(want, ref_index(h, w, cls))
        if h * w > 1:  # control: key minus query reads the table mirrored
            assert (ref_index(h, w, cls, sign=-1) != want).mean() > 0.3


def test_index_int_window_and_dtypes():
    np.testing.assert_array_equal(posenc.relative_position_index(3), ref_index(3, 3))
    assert posenc.relative_position_index(3, dtype="int16").dtype == np.int16
    # unsigned: no negative intermediate
    np.testing.assert_array_equal(posenc.relative_position_index((2, 5), dtype=np.uint8), ref_index(2, 5))
    with pytest.raises(ValueError, match="`dtype`"):
        posenc.relative_position_index(9, class_token=True, dtype="int8")  # index 291 > 127


def test_index_matches_transformers_swin_and_beit():
    torch = pytest.importorskip("torch")
    swin = pytest.importorskip("transformers.models.swin.modeling_swin")
    beit = pytest.importorskip("transformers.models.beit.modeling_beit")
    for window in ((3, 3), (2, 5), (7, 7)):
        mod = swin.SwinRelativePositionBias(2, window)
        got = posenc.relative_position_index(window, xp=torch)
        torch.testing.assert_close(got.reshape(-1), mod.relative_position_index, rtol=0, atol=0)
        # the bias the module builds from its table: table[index], heads first
        table = torch.randn(mod.relative_position_bias_table.shape, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            mod.relative_position_bias_table.copy_(table)
            want = mod()[0]
        torch.testing.assert_close(table[got].permute(2, 0, 1), want, rtol=0, atol=0)
        # control: the transposed convention gives another bias
        wrong = table[posenc.relative_position_index(window, xp=torch).T].permute(2, 0, 1)
        assert (wrong - want).abs().max() > 0.5
    for side in (2, 4):
        idx = beit.BeitRelativePositionBias.generate_relative_position_index((side, side))
        got = posenc.relative_position_index(side, class_token=True, xp=torch)
        torch.testing.assert_close(got, idx, rtol=0, atol=0)
        assert not torch.equal(posenc.relative_position_index(side, xp=torch), idx[1:, 1:].T.contiguous())


# ---------------------------------------------------------------- relative_log_coords
def _log_cases(golden):
    for key in sorted(k for k in golden if k.startswith("log_")):
        _, mode, win, pre = key.split("_")
        h, w = map(int, win.split("x"))
        ph, pw = map(int, pre[1:].split("x"))
        yield key, (h, w), ((ph, pw) if ph else None), mode


def test_log_coords_match_timm(xp, golden):
    for key, window, pre, mode in _some(xp, _log_cases(golden), keep=4):
        want = golden[key].astype(np.float64)
        got = xp.call(
            posenc.relative_log_coords, window, pretrained_window=pre, mode=mode, dtype="float32", xp=xp.ns,
            device=xp.device,
        )
        # timm's float32 log2 against posenc's once-rounded float64: within an ulp
        xp.assert_close(got, want, atol=1.2e-7, rtol=0, dtype=xp.ns.float32)
        ph, pw = pre or (None, None)
        np.testing.assert_allclose(want, ref_log(*window, ph, pw, mode), atol=2.4e-7)
        # control: the "cr" formula for a "swin" table (or the reverse) misses by far
        other = "cr" if mode == "swin" else "swin"
        assert np.abs(ref_log(*window, mode=other) - want).max() > 0.2


def test_log_coords_float64_and_default(xp):
    if not xp.float64:
        pytest.skip("no float64 on this device")
    got = xp.call(posenc.relative_log_coords, (4, 3), pretrained_window=3, dtype="float64", xp=xp.ns, device=xp.device)
    xp.assert_close(got, ref_log(4, 3, 3, 3), rtol=5e-16, atol=0, dtype=xp.ns.float64)


def test_log_coords_match_transformers_swinv2():
    torch = pytest.importorskip("torch")
    m = pytest.importorskip("transformers.models.swinv2.modeling_swinv2")
    config = m.Swinv2Config()
    for window, pre in (((4, 4), (0, 0)), ((6, 4), (3, 3)), ((8, 8), (4, 4)), ((1, 1), (0, 0))):
        att = m.Swinv2SelfAttention(config, 8, 2, window, pretrained_window_size=list(pre))
        want = att.relative_coords_table[0]
        got = posenc.relative_log_coords(window, pretrained_window=pre, xp=torch)
        torch.testing.assert_close(got, want, rtol=0, atol=1.2e-7)
        idx = posenc.relative_position_index(window, xp=torch).reshape(-1)
        torch.testing.assert_close(idx, att.relative_position_index.reshape(-1), rtol=0, atol=0)
        if window != (1, 1):  # control: the unnormalised ("cr") coordinates
            assert (posenc.relative_log_coords(window, mode="cr", xp=torch) - want).abs().max() > 0.2


def test_log_coords_rules():
    # (0, 0) and 0 spell "no pretrained window", as in the peers' defaults
    np.testing.assert_allclose(posenc.relative_log_coords(3, pretrained_window=(0, 0)), ref_log(3, 3), rtol=5e-16)
    np.testing.assert_array_equal(posenc.relative_log_coords(3, pretrained_window=0), posenc.relative_log_coords(3))
    # one patch: the only offset is 0, coordinate 0 (timm divides by zero there)
    assert np.all(posenc.relative_log_coords((1, 3))[..., 0] == 0.0)
    with pytest.raises(ValueError, match="`pretrained_window`"):
        posenc.relative_log_coords(3, pretrained_window=(4, 1))
    with pytest.raises(ValueError, match="`pretrained_window`"):
        posenc.relative_log_coords(3, pretrained_window=(0, 5))
    with pytest.raises(ValueError, match="`pretrained_window`"):
        posenc.relative_log_coords(3, pretrained_window=5, mode="cr")


# ---------------------------------------------------------------- resample_relative_table
def _resize_cases(golden):
    for key in sorted(k[len("resize_out_") :] for k in golden if k.startswith("resize_out_")):
        parts = key.split("_")
        old = tuple(map(int, parts[-3].split("x")))
        new = tuple(map(int, parts[-1].split("x")))
        yield key, old, new, "_cls_" in key


def test_resample_matches_timm(xp, golden):
    for key, old, new, cls in _some(xp, _resize_cases(golden), keep=4):
        table, want = golden[f"resize_in_{key}"], golden[f"resize_out_{key}"].astype(np.float64)
        got = xp.call(posenc.resample_relative_table, xp.asarray(table), new, old_window=old, class_token=cls)
        # timm's float32 interpolation coordinates against posenc's float64 weights
        xp.assert_close(got, want, atol=3e-6, rtol=0, dtype=xp.ns.float32)
        # control: plain bilinear interpolation of the same table
        plain = posenc.resample_relative_table(table, new, old_window=old, class_token=cls, method="bilinear")
        assert np.abs(plain - want).max() > 0.05


def test_resample_bilinear_matches_transformers_beit():
    torch = pytest.importorskip("torch")
    beit = pytest.importorskip("transformers.models.beit.modeling_beit")
    config = beit.BeitConfig(image_size=28, patch_size=4, num_attention_heads=3)  # window 7 x 7
    mod = beit.BeitRelativePositionBias(config)
    with torch.no_grad():
        mod.relative_position_bias_table.normal_(generator=torch.Generator().manual_seed(2))
    table = mod.relative_position_bias_table.detach()
    for new in (5, 10):
        with torch.no_grad():
            want = mod((new, new))[0]  # (heads, N + 1, N + 1) from the table resampled to the new window
        got_table = posenc.resample_relative_table(table, new, old_window=7, class_token=True, method="bilinear")
        idx = posenc.relative_position_index(new, class_token=True, xp=torch)
        got = got_table[idx].permute(2, 0, 1)
        torch.testing.assert_close(got, want, rtol=0, atol=5e-6)  # torch: float32 coordinates
        control = posenc.resample_relative_table(table, new, old_window=7, class_token=True)[idx].permute(2, 0, 1)
        assert (control - want).abs().max() > 0.05


def test_resample_layouts_agree_and_unchanged_windows_copy():
    rng = np.random.default_rng(0)
    grid = rng.standard_normal((2, 5, 7))
    flat = np.concatenate([grid.reshape(2, -1).T, rng.standard_normal((3, 2))])
    for method in ("geometric", "bilinear"):
        g = posenc.resample_relative_table(grid, (5, 3), method=method)
        f = posenc.resample_relative_table(flat, (5, 3), old_window=(3, 4), class_token=True, method=method)
        np.testing.assert_allclose(f[:-3], g.reshape(2, -1).T, rtol=0, atol=1e-15)
        np.testing.assert_array_equal(f[-3:], flat[-3:])
    same = posenc.resample_relative_table(grid, (3, 4))
    np.testing.assert_array_equal(same, grid)
    same[0, 0, 0] = 99.0
    assert grid[0, 0, 0] != 99.0


def test_resample_is_linear_and_differentiable():
    torch = pytest.importorskip("torch")
    t = torch.randn(9, 2, dtype=torch.float64, requires_grad=True)

    def f(x):
        return posenc.resample_relative_table(x, (3, 2), old_window=(2, 2))

    assert torch.autograd.gradcheck(f, (t,))
    # bfloat16 tables: interpolated in float32, returned in bfloat16
    out = posenc.resample_relative_table(t.detach().to(torch.bfloat16), 4, old_window=2)
    assert out.dtype == torch.bfloat16 and out.shape == (49, 2)


# ---------------------------------------------------------------- decomposed_relative_positions
SAM_SIZES = [(4, 4), (8, 6), (6, 8), (14, 14), (16, 13), (13, 16), (64, 14), (3, 7), (1, 5), (5, 1)]


def test_decomposed_matches_sam_and_vitdet():
    torch = pytest.importorskip("torch")
    sam = pytest.importorskip("transformers.models.sam.modeling_sam")
    vitdet = pytest.importorskip("transformers.models.vitdet.modeling_vitdet")
    config = sam.SamVisionConfig(hidden_size=8, num_attention_heads=2, image_size=64, patch_size=16)
    att = sam.SamVisionAttention(config, window_size=4)
    gen = torch.Generator().manual_seed(3)
    misses = 0
    for q, k in SAM_SIZES:
        for rows in (2 * max(q, k) - 1, 9):
            table = torch.randn(rows, 5, generator=gen)
            got = posenc.decomposed_relative_positions(q, k, table)
            for want in (att.get_rel_pos(q, k, table), vitdet.get_rel_pos(q, k, table)):
                # resampled tables: torch places the samples in float32 (an ulp of
                # the source coordinate, times the table's steps), posenc in float64
                tol = 0 if rows == 2 * max(q, k) - 1 else 4e-6
                torch.testing.assert_close(got, want, rtol=0, atol=tol)
        # control: the exact rational floor picks other rows for some sizes
        exact = torch.from_numpy(ref_sam_exact(q, k))
        misses += int((torch.from_numpy(ref_sam_float32(q, k)) != exact).sum())
        table = torch.randn(2 * max(q, k) - 1, 5, generator=gen)
        want = att.get_rel_pos(q, k, table)
        if (ref_sam_float32(q, k) != ref_sam_exact(q, k)).any():
            assert (table[exact] - want).abs().max() > 0.1
    assert misses > 0


@pytest.mark.parametrize(("q", "k", "rows"), [(4, 4, 7), (8, 6, 15), (3, 7, 9), (5, 2, 4), (1, 1, 1)])
def test_decomposed_backends(xp, q, k, rows):
    rng = np.random.default_rng(q * 10 + k)
    table = rng.standard_normal((rows, 3))
    t = xp.asarray(table)
    got = xp.call(posenc.decomposed_relative_positions, q, k, t)
    size = 2 * max(q, k) - 1
    resized = table if rows == size else ref_linear(table, size)
    want = resized[ref_sam_float32(q, k)]
    xp.assert_close(got, want, atol=2 * xp.tol(t.dtype), rtol=2 * xp.tol(t.dtype), dtype=t.dtype)


def test_decomposed_gradients_and_sam_bias():
    torch = pytest.importorskip("torch")
    table = torch.randn(9, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: posenc.decomposed_relative_positions(6, 4, t), (table,))
    # the decomposed bias of SAM's attention: rel_h[:, :, :, :, None] + rel_w[:, :, :, None, :]
    sam = pytest.importorskip("transformers.models.sam.modeling_sam")
    config = sam.SamVisionConfig(hidden_size=8, num_attention_heads=2, image_size=64, patch_size=16)
    att = sam.SamVisionAttention(config, window_size=4)
    with torch.no_grad():
        att.rel_pos_h.normal_(generator=torch.Generator().manual_seed(4))
        att.rel_pos_w.normal_(generator=torch.Generator().manual_seed(5))
    query = torch.randn(2, 4 * 3, 4, generator=torch.Generator().manual_seed(6))
    want = att.get_decomposed_rel_pos(query, att.rel_pos_h, att.rel_pos_w, (4, 3), (2, 5))
    rh = posenc.decomposed_relative_positions(4, 2, att.rel_pos_h.detach())
    rw = posenc.decomposed_relative_positions(3, 5, att.rel_pos_w.detach())
    r_q = query.reshape(2, 4, 3, 4)
    got = torch.einsum("bhwc,hkc->bhwk", r_q, rh)[..., :, None] + torch.einsum("bhwc,wkc->bhwk", r_q, rw)[..., None, :]
    torch.testing.assert_close(got.reshape(want.shape), want, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- devices, bad input
def test_meta_and_strict_devices():
    torch = pytest.importorskip("torch")
    out = posenc.resample_relative_table(torch.zeros(3, 5, 5, device="meta"), 4)
    assert out.device.type == "meta" and out.shape == (3, 7, 7)
    out = posenc.decomposed_relative_positions(3, 5, torch.zeros(4, 2, device="meta"))
    assert out.device.type == "meta" and out.shape == (3, 5, 2)
    xs = pytest.importorskip("array_api_strict")
    d1 = xs.Device("device1")
    assert posenc.relative_log_coords(2, xp=xs, device=d1).device == d1
    assert posenc.relative_position_index(2, xp=xs, device=d1).device == d1


@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: posenc.relative_position_index(0), ValueError, "window"),
        (lambda: posenc.relative_position_index((2, 3, 4)), ValueError, "window"),
        (lambda: posenc.relative_position_index(2.0), TypeError, "window"),
        (lambda: posenc.relative_position_index(True), TypeError, "window"),
        (lambda: posenc.relative_position_index(np.array([2, 2])), TypeError, "window"),
        (lambda: posenc.relative_position_index(2, class_token=1), TypeError, "class_token"),
        (lambda: posenc.relative_position_index(2, dtype=np.float32), TypeError, "dtype"),
        (lambda: posenc.relative_log_coords(2, mode="log"), ValueError, "mode"),
        (lambda: posenc.relative_log_coords((2, 0)), ValueError, "window"),
        (lambda: posenc.resample_relative_table(np.zeros((9, 2)), 3), ValueError, "old_window"),
        (lambda: posenc.resample_relative_table(np.zeros((10, 2)), 3, old_window=2), ValueError, "table"),
        (lambda: posenc.resample_relative_table(np.zeros((2, 4, 3)), 3), ValueError, "table"),
        (lambda: posenc.resample_relative_table(np.zeros((2, 3, 3)), 3, old_window=3), ValueError, "old_window"),
        (lambda: posenc.resample_relative_table(np.zeros((2, 3, 3)), 3, class_token=True), ValueError, "class_token"),
        (lambda: posenc.resample_relative_table(np.zeros(9), 3), ValueError, "table"),
        (lambda: posenc.resample_relative_table(np.zeros((9, 2), int), 3, old_window=2), TypeError, "table"),
        (lambda: posenc.resample_relative_table([[0.0]], 3, old_window=1), TypeError, "table"),
        (lambda: posenc.resample_relative_table(np.zeros((1, 1, 1)), 2, method="bicubic"), ValueError, "method"),
        (lambda: posenc.decomposed_relative_positions(0, 3, np.zeros((5, 2))), ValueError, "q_size"),
        (lambda: posenc.decomposed_relative_positions(3, 2.0, np.zeros((5, 2))), TypeError, "k_size"),
        (lambda: posenc.decomposed_relative_positions(3, 3, np.zeros(5)), ValueError, "table"),
        (lambda: posenc.decomposed_relative_positions(3, 3, np.zeros((0, 2))), ValueError, "table"),
        (lambda: posenc.decomposed_relative_positions(3, 3, np.zeros((5, 2), int)), TypeError, "table"),
    ],
)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=f"`{name}`"):
        call()


def test_huge_requests_are_refused_before_allocating():
    with pytest.raises(ValueError, match=r"2\*\*40"):
        posenc.relative_position_index(2**11)  # (2**22)**2 entries
    with pytest.raises(ValueError, match=r"2\*\*40"):
        posenc.relative_log_coords(2**21)
    with pytest.raises(ValueError, match=r"2\*\*40"):
        posenc.decomposed_relative_positions(2**20, 2**20, np.zeros((3, 2)))
    assert math.prod(posenc.relative_position_index((1, 2**10)).shape) == 2**20
