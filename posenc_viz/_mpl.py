"""Lazy access to matplotlib: ``import posenc_viz`` never imports it."""

from __future__ import annotations

import importlib
from typing import Any

INSTALL_HINT = 'posenc_viz needs matplotlib: install it with  pip install "posenc[viz]"'


def require(module: str = "matplotlib") -> Any:
    """Import and return a matplotlib module, or raise a helpful ImportError."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "matplotlib":
            raise
        raise ImportError(INSTALL_HINT, name="matplotlib") from exc


def pyplot() -> Any:
    return require("matplotlib.pyplot")


def get_ax(ax: Any) -> Any:
    """``ax`` itself, or the current Axes of pyplot (seaborn's rule)."""
    if ax is None:
        return pyplot().gca()
    axes_mod = require("matplotlib.axes")
    if not isinstance(ax, axes_mod.Axes):
        msg = f"`ax` must be a matplotlib Axes or None, got {type(ax).__name__}"
        raise TypeError(msg)
    return ax
