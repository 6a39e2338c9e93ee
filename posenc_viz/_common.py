"""Argument checks and labelling shared by the plot functions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._convert import to_numpy


def matrix_2d(data: Any, name: str) -> np.ndarray:
    """``data`` as a non-empty 2-D host array (booleans as int8)."""
    arr = to_numpy(data, name=name)
    if arr.ndim != 2:
        msg = f"`{name}` must be a 2-D array, got shape {tuple(arr.shape)}"
        raise ValueError(msg)
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        msg = f"`{name}` must not be empty, got shape {tuple(arr.shape)}"
        raise ValueError(msg)
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int8)
    return arr


def set_labels(ax: Any, xlabel: str | None, ylabel: str | None, title: str | None) -> None:
    """Set the labels that are not None (each must be a str)."""
    for name, value, setter in (
        ("xlabel", xlabel, ax.set_xlabel),
        ("ylabel", ylabel, ax.set_ylabel),
        ("title", title, ax.set_title),
    ):
        if value is None:
            continue
        if not isinstance(value, str):
            msg = f"`{name}` must be a str or None, got {type(value).__name__}"
            raise TypeError(msg)
        setter(value)
