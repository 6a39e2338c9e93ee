"""Figures are drawn with the non-interactive Agg backend and closed after each test."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def ax():
    """A fresh Axes in its own figure."""
    fig, axes = plt.subplots()
    return axes
