"""plot_wavelengths, plot_dimensions and plot_rope_scaling."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.testing.decorators import check_figures_equal

import posenc
from posenc_viz import plot_dimensions, plot_rope_scaling, plot_wavelengths


def _hlines(ax):
    """y values of the horizontal reference lines (axhline) of ``ax``."""
    ys = []
    for line in ax.lines:
        x = np.asarray(line.get_xdata(), dtype=float)
        y = np.asarray(line.get_ydata(), dtype=float)
        if x.size == 2 and tuple(x) == (0.0, 1.0) and y[0] == y[1]:
            ys.append(float(y[0]))
    return ys


# --------------------------------------------------------------- wavelengths
@pytest.mark.parametrize(("dim", "base"), [(512, 10000.0), (64, 500000.0), (2, 100.0)])
def test_wavelengths_line_and_bounds(ax, dim, base):
    plot_wavelengths(dim, base=base, ax=ax)
    line = ax.lines[0]
    i = np.arange(dim // 2)
    np.testing.assert_array_equal(line.get_xdata(), i)
    np.testing.assert_allclose(line.get_ydata(), 2 * math.pi * base ** (2 * i / dim), rtol=1e-12)
    assert ax.get_yscale() == "log"
    bounds = _hlines(ax)
    assert bounds == pytest.approx([2 * math.pi, base * 2 * math.pi])
    lo, hi = ax.get_ylim()
    assert lo < 2 * math.pi and hi > base * 2 * math.pi  # both bounds are visible
    texts = [t.get_text() for t in ax.texts]
    assert texts[0] == r"$2\pi$"
    assert r"2\pi" in texts[1]
    assert ax.get_ylabel() == "wavelength (positions)"
    assert ax.get_xlabel() == "frequency index $i$"


def test_bound_label_of_power_of_ten(ax):
    plot_wavelengths(8, ax=ax)
    assert ax.texts[1].get_text() == r"$10^{4}\cdot 2\pi$"
    plot_wavelengths(8, base=500000.0, ax=ax, bounds=True)
    assert ax.texts[3].get_text() == r"$5\cdot 10^{5}\cdot 2\pi$"


def test_frequencies_and_conventions(ax):
    plot_wavelengths(16, quantity="frequency", convention="fairseq", ax=ax, color="C3", label="fairseq")
    line = ax.lines[0]
    np.testing.assert_allclose(line.get_ydata(), np.exp(-np.arange(8) * math.log(10000.0) / 7), rtol=1e-12)
    assert line.get_label() == "fairseq"
    assert line.get_color() == "C3"
    assert line.get_marker() == "o"  # few pairs: markers
    assert _hlines(ax) == pytest.approx([1.0, 1e-4])
    assert ax.get_ylabel() == "angular frequency (rad / position)"


def test_wavelengths_current_axes_without_bounds():
    fig, ax = plt.subplots()
    out = plot_wavelengths(128, bounds=False, ylabel="λ")
    assert out is ax
    assert len(ax.lines) == 1 and not ax.texts
    assert ax.lines[0].get_marker() in (None, "None", "")
    assert ax.get_ylabel() == "λ"


@pytest.mark.parametrize(
    ("args", "kwargs", "kind", "match"),
    [
        ((0,), {}, ValueError, "`dim` must be a positive"),
        ((1,), {}, ValueError, "`dim` must be at least 2"),
        ((8.0,), {}, TypeError, "`dim`"),
        ((8,), {"base": -1.0}, ValueError, "`base` must be > 0"),
        ((8,), {"quantity": "period"}, ValueError, "`quantity` must be 'wavelength' or 'frequency'"),
        ((8,), {"convention": "t5"}, ValueError, "`convention` must be one of"),
        ((8,), {"bounds": "yes"}, TypeError, "`bounds` must be a bool"),
    ],
)
def test_wavelengths_bad_input(args, kwargs, kind, match):
    with pytest.raises(kind, match=match):
        plot_wavelengths(*args, **kwargs)


# ---------------------------------------------------------------- dimensions
def test_dimensions_from_every_backend(xp, ax):
    pos_np = np.arange(0.0, 40.0, 0.5)
    pe = posenc.sinusoidal(xp.asarray(pos_np), 32, xp=xp.ns)
    positions = xp.asarray(pos_np)
    if not xp.has_values:
        with pytest.raises(ValueError, match="meta tensor"):
            plot_dimensions(pe, [0, 4], positions=positions, ax=ax)
        return
    plot_dimensions(pe, [0, 5, 30], positions=positions, ax=ax)
    assert [line.get_label() for line in ax.lines] == ["dim 0", "dim 5", "dim 30"]
    w = 10000.0 ** (-2 * np.array([0, 2, 15]) / 32)
    expected = [np.sin(pos_np * w[0]), np.cos(pos_np * w[1]), np.sin(pos_np * w[2])]
    for line, exp in zip(ax.lines, expected):
        np.testing.assert_allclose(np.asarray(line.get_xdata(), dtype=float), pos_np)
        np.testing.assert_allclose(np.asarray(line.get_ydata(), dtype=float), exp, atol=xp.tol() * 4)
    assert ax.get_legend() is not None
    assert ax.get_xlim() == (0.0, 39.5)
    assert ax.get_xlabel() == "position" and ax.get_ylabel() == "value"


def test_dimensions_options(ax):
    pe = posenc.sinusoidal(10, 8)
    plot_dimensions(pe, 3, labels=["cos, pair 1"], legend=False, ax=ax, linestyle="--")
    (line,) = ax.lines
    assert line.get_label() == "cos, pair 1"
    assert line.get_linestyle() == "--"
    np.testing.assert_array_equal(line.get_xdata(), np.arange(10))
    np.testing.assert_array_equal(line.get_ydata(), pe[:, 3])
    assert ax.get_legend() is None
    plot_dimensions(pe, np.array([1, 2]), ax=ax, legend=False)
    assert len(ax.lines) == 3


@pytest.mark.parametrize("position", [None, 7.0, -3.25, 1e12])
def test_dimensions_of_one_row(ax, position):
    """One position: a marker (a one-point line is invisible) and x-limits
    half a position either side, with no matplotlib warning."""
    positions = None if position is None else np.array([position])
    pe = posenc.sinusoidal(1 if positions is None else positions, 4)
    plot_dimensions(pe, [0, 1], positions=positions, ax=ax)  # warnings are errors here
    p = 0.0 if position is None else position
    half = max(0.5, abs(p) * 1e-3)
    assert ax.get_xlim() == (p - half, p + half)
    assert [line.get_marker() for line in ax.lines] == ["o", "o"]
    assert [line.get_ydata().tolist() for line in ax.lines] == [[float(pe[0, 0])], [float(pe[0, 1])]]


def test_dimensions_repeated_or_nonfinite_positions(ax):
    pe = posenc.sinusoidal(3, 4)
    plot_dimensions(pe, 0, positions=np.array([2.0, 2.0, 2.0]), ax=ax)
    assert ax.get_xlim() == (1.5, 2.5)
    assert ax.lines[0].get_marker() == "None"  # several rows: a plain line
    plot_dimensions(pe, 0, positions=np.array([0.0, np.inf, 4.0]), ax=ax)
    assert ax.get_xlim() == (0.0, 4.0)  # the limits follow the finite positions


def test_dimensions_one_row_marker_can_be_overridden(ax):
    plot_dimensions(posenc.sinusoidal(1, 4), 0, ax=ax, marker="s")
    assert ax.lines[0].get_marker() == "s"


@check_figures_equal(extensions=["png"])
def test_dimensions_equal_plain_plot(fig_test, fig_ref):
    pe = posenc.sinusoidal(50, 16)
    plot_dimensions(pe, [0, 6], ax=fig_test.subplots(), legend=False)
    ax = fig_ref.subplots()
    ax.plot(np.arange(50), pe[:, 0], label="dim 0")
    ax.plot(np.arange(50), pe[:, 6], label="dim 6")
    ax.set_xlim(0, 49)
    ax.set_xlabel("position")
    ax.set_ylabel("value")


@pytest.mark.parametrize(
    ("dims", "kwargs", "kind", "match"),
    [
        ([8], {}, ValueError, r"`dims` must lie in \[0, 8\)"),
        ([-1], {}, ValueError, "`dims` must lie in"),
        ([], {}, ValueError, "`dims` must name at least one column"),
        ([1.5], {}, TypeError, "`dims` must contain integers"),
        ([True], {}, TypeError, "`dims` must contain integers"),
        ("0", {}, TypeError, "`dims` must be an int or a sequence of ints"),
        (np.array([0.5]), {}, TypeError, "`dims` must be a 1-D array of integers"),
        ([0], {"positions": np.arange(3)}, ValueError, "`positions` must be 1-D with 10 entries"),
        ([0, 1], {"labels": ["a"]}, ValueError, "`labels` must be a sequence of 2 strings"),
        ([0], {"labels": "a"}, TypeError, "`labels` must be a sequence of 1 strings"),
        ([0, 1], {"labels": ["a", 2]}, TypeError, "`labels` must contain strings, got 2"),
        ([0], {"labels": [None]}, TypeError, "`labels` must contain strings, got None"),
        ([0], {"legend": "no"}, TypeError, "`legend` must be a bool"),
    ],
)
def test_dimensions_bad_input(dims, kwargs, kind, match):
    with pytest.raises(kind, match=match):
        plot_dimensions(posenc.sinusoidal(10, 8), dims, **kwargs)


# --------------------------------------------------------------- rope scaling
def _needs_rope():
    if not hasattr(posenc, "rope_frequencies"):
        pytest.skip("posenc.rope_frequencies is not in this tree yet")
    return pytest.importorskip("posenc.scaling")


def test_rope_scaling_curves(ax):
    sc = _needs_rope()
    plot_rope_scaling(64, [sc.Linear(4.0), sc.NTK(4.0)], base=10000.0, ax=ax)
    labels = [line.get_label() for line in ax.lines]
    assert labels[:3] == ["original", "Linear ×4", "NTK ×4"]
    i = np.arange(32)
    orig = 2 * math.pi * 10000.0 ** (2 * i / 64)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), orig, rtol=1e-6)
    np.testing.assert_allclose(ax.lines[1].get_ydata(), 4.0 * orig, rtol=1e-6)  # linear: every wavelength x4
    ntk_base = 10000.0 * 4.0 ** (64 / 62)
    np.testing.assert_allclose(ax.lines[2].get_ydata(), 2 * math.pi * ntk_base ** (2 * i / 64), rtol=1e-6)
    assert ax.get_yscale() == "log"
    assert ax.get_legend() is not None


def test_rope_scaling_dict_context_and_frequency(ax):
    sc = _needs_rope()
    plot_rope_scaling(32, {"YaRN": sc.YaRN(8.0, 2048)}, ax=ax, original=False)
    assert [line.get_label() for line in ax.lines][0] == "YaRN"
    assert 2048.0 in _hlines(ax)  # the original context is marked
    freq = np.asarray(posenc.rope_frequencies(32, scaling=sc.YaRN(8.0, 2048)), dtype=float)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), 2 * math.pi / freq)
    fig, ax2 = plt.subplots()
    plot_rope_scaling(32, sc.Linear(2.0), quantity="frequency", ax=ax2)
    np.testing.assert_allclose(
        ax2.lines[1].get_ydata(), np.asarray(posenc.rope_frequencies(32), dtype=float) / 2.0, rtol=1e-6
    )
    assert ax2.get_ylabel() == "angular frequency (rad / position)"


def test_rope_scaling_bad_input(ax):
    sc = _needs_rope()
    with pytest.raises(ValueError, match="`scalings` must hold at least one scaling"):
        plot_rope_scaling(32, [], ax=ax)
    with pytest.raises(TypeError, match="`scalings` keys must be str labels"):
        plot_rope_scaling(32, {1: sc.Linear(2.0)}, ax=ax)
    with pytest.raises(TypeError, match="`original` must be a bool"):
        plot_rope_scaling(32, sc.Linear(2.0), original=None, ax=ax)
    with pytest.raises(ValueError, match="`quantity`"):
        plot_rope_scaling(32, sc.Linear(2.0), quantity="period", ax=ax)
    # wavelengths up to 2 pi * 2 * 1e300: beyond a log axis (matplotlib's margins would overflow)
    with pytest.raises(ValueError, match=r"`base` \(with `scalings`\) puts the wavelength axis at 6.28 to .*e\+300"):
        plot_rope_scaling(82, [sc.Linear(2.0)], base=1e300, ax=ax)
    with pytest.raises(ValueError, match=r"frequency axis at 1.04e-293 to 0.5"):
        plot_rope_scaling(82, [sc.Linear(2.0)], base=1e300, quantity="frequency", original=False, ax=ax)
    assert not ax.lines  # refused before anything is drawn
    plot_rope_scaling(82, [sc.Linear(2.0)], base=1e150, ax=ax)  # inside the range: drawn
    assert len(ax.lines) == 2


@pytest.mark.parametrize(
    "scalings",
    [0, 4.0, "Linear", [None, 2.0], {"x": "NTK"}, True],
    ids=["int", "float", "str", "list-with-float", "dict-of-str", "bool"],
)
def test_rope_scaling_names_its_own_parameter(ax, scalings):
    _needs_rope()
    with pytest.raises(TypeError, match="`scalings` must be a posenc.scaling object") as info:
        plot_rope_scaling(32, scalings, ax=ax)
    assert "`scaling`" not in str(info.value)
    assert not ax.lines  # refused before anything is drawn
