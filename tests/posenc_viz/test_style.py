"""paper_style is a local rc_context with paper sizes and embedded fonts."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import pytest

from posenc_viz import COLUMN_WIDTHS, figsize, paper_style


def test_column_widths():
    assert COLUMN_WIDTHS == {"single": 3.3, "double": 7.0}
    assert figsize() == (3.3, round(3.3 * 0.75, 4))
    assert figsize("double", aspect=0.5) == (7.0, 3.5)


def test_column_widths_are_read_only():
    # a shared mutable constant would change every later figure
    with pytest.raises(TypeError):
        COLUMN_WIDTHS["single"] = 9.0  # type: ignore[index]
    with pytest.raises(TypeError):
        del COLUMN_WIDTHS["double"]  # type: ignore[attr-defined]
    assert not hasattr(COLUMN_WIDTHS, "update")
    assert figsize("single") == (3.3, round(3.3 * 0.75, 4))


@pytest.mark.parametrize("column", ["single", "double"])
def test_settings_apply_inside_only(column):
    before = dict(matplotlib.rcParams)
    with paper_style(column, aspect=0.5):
        assert matplotlib.rcParams["pdf.fonttype"] == 42
        assert matplotlib.rcParams["ps.fonttype"] == 42
        assert matplotlib.rcParams["figure.constrained_layout.use"] is True
        fig = plt.figure()
        assert tuple(fig.get_size_inches()) == pytest.approx((COLUMN_WIDTHS[column], COLUMN_WIDTHS[column] * 0.5))
    assert dict(matplotlib.rcParams) == before


def test_extra_rc_and_decorator():
    before = matplotlib.rcParams["lines.linewidth"]

    @paper_style("double", rc={"lines.linewidth": 2.5})
    def draw():
        return matplotlib.rcParams["lines.linewidth"], matplotlib.rcParams["figure.figsize"]

    width, size = draw()
    assert width == 2.5
    assert size[0] == 7.0
    assert matplotlib.rcParams["lines.linewidth"] == before != 2.5


@pytest.mark.parametrize(
    ("kwargs", "kind", "match"),
    [
        ({"column": "triple"}, ValueError, "`column` must be 'single' or 'double', got 'triple'"),
        ({"column": 1}, TypeError, "`column` must be 'single' or 'double'"),
        ({"aspect": 0}, ValueError, "`aspect` must be in"),
        ({"aspect": "wide"}, TypeError, "`aspect` must be a number"),
        ({"rc": [("a", 1)]}, TypeError, "`rc` must be a dict"),
    ],
)
def test_bad_arguments(kwargs, kind, match):
    with pytest.raises(kind, match=match):
        paper_style(**kwargs)
