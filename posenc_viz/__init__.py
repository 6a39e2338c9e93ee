"""posenc_viz: publication figures of positional encodings, from any backend.

Axes-level functions in the manner of seaborn (``ax=None`` draws in the
current Axes, the Axes is returned, extra keyword arguments go to the main
artist), a paper style for one- and two-column figures, the standard
figure set behind the ``posenc-viz`` command, and figures of your own
model's tables read from files (:func:`load_table`).  Arrays may come from NumPy,
PyTorch, JAX, Dask, CuPy or array-api-strict.

matplotlib is imported only when a figure is drawn; install it with
``pip install "posenc[viz]"``.
"""

from __future__ import annotations

from ._convert import to_numpy
from .audit import plot_rope_audit
from .axes import plot_rope_axes
from .bias import plot_bias, plot_window_bias
from .figures import FIGURES, figure_set
from .grid_similarity import plot_grid_similarity
from .heatmap import plot_encoding
from .similarity import plot_similarity, plot_similarity_by_offset
from .spectrum import plot_dimensions, plot_rope_scaling, plot_wavelengths
from .style import COLUMN_WIDTHS, figsize, paper_style
from .tables import load_table

__all__ = [
    "COLUMN_WIDTHS",
    "FIGURES",
    "figsize",
    "figure_set",
    "load_table",
    "paper_style",
    "plot_bias",
    "plot_dimensions",
    "plot_encoding",
    "plot_grid_similarity",
    "plot_rope_audit",
    "plot_rope_axes",
    "plot_rope_scaling",
    "plot_similarity",
    "plot_similarity_by_offset",
    "plot_wavelengths",
    "plot_window_bias",
    "to_numpy",
]
