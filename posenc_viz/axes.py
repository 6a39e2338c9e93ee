"""The frequency spectrum of RoPE over several axes (image and video models)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import posenc

from . import _mpl
from ._common import set_labels
from ._convert import to_numpy
from ._internals import check_bool, show
from .spectrum import YLABEL, check_log_range, check_quantity

__all__ = ["plot_rope_axes"]


def _axes_dim(axes_dim: Any) -> tuple[int, ...]:
    if isinstance(axes_dim, (str, bytes)) or not isinstance(axes_dim, Sequence):
        msg = f"`axes_dim` must be a sequence of positive even ints (one rotary width per axis), got {show(axes_dim)}"
        raise TypeError(msg)
    return tuple(axes_dim)


def axes_frequencies(
    axes_dim: Sequence[int], *, base: Any = 10000.0, scaling: Any = None, split: str = "blocks", turns: bool = False
) -> list[np.ndarray]:
    """The angular frequencies of every axis of :func:`posenc.rope_axes_cos_sin`
    (radians per unit of the ids), float64, one array per axis."""
    dims = _axes_dim(axes_dim)
    n = len(dims)
    # every option checked (errors name it) by the function that uses them
    posenc.rope_axes_cos_sin(np.zeros((0, max(n, 1))), dims, base=base, scaling=scaling, split=split, turns=turns)
    bases = list(base) if isinstance(base, Sequence) else [base] * n
    scalings = list(scaling) if isinstance(scaling, Sequence) else [scaling] * n
    if split == "strided":
        w = to_numpy(posenc.rope_frequencies(sum(dims), base=bases[0], scaling=scalings[0]), name="freqs")
        out = [w[k::n].astype(np.float64) for k in range(n)]
    else:
        out = [
            to_numpy(posenc.rope_frequencies(d, base=b, scaling=s), name="freqs").astype(np.float64)
            for d, b, s in zip(dims, bases, scalings)
        ]
    return [w * (2.0 * math.pi) for w in out] if turns else out


def plot_rope_axes(
    axes_dim: Sequence[int],
    *,
    base: Any = 10000.0,
    scaling: Any = None,
    split: str = "blocks",
    turns: bool = False,
    grid_shape: Sequence[int] | None = None,
    names: Sequence[str] | None = None,
    quantity: str = "wavelength",
    ax: Any = None,
    xlabel: str | None = "frequency index $i$ within the axis",
    ylabel: str | None = None,
    title: str | None = None,
    legend: bool = True,
    **kwargs: Any,
) -> Any:
    r"""The frequency spectrum of a multi-axis RoPE: the wavelengths of each axis against its grid size.

    One curve per axis of :func:`posenc.rope_axes_cos_sin`: the wavelength
    :math:`2\pi / \omega^{(k)}_i` (in units of that axis' ids) of each of its
    planes, on a log scale.  With ``grid_shape``, a dashed line in the
    axis' colour (in the legend) marks its number of positions: planes above it turn less
    than once over the grid (they tell positions apart only coarsely, and
    beyond the grid they extrapolate), planes below 2 alias (a turn in
    less than two positions).  Comparing the curves shows how a model
    spends its rotary width: Flux's text axis gets 8 planes, its rows and
    columns 28 each; Wan's frames, rows and columns about a third each.

    Parameters
    ----------
    axes_dim : sequence of int
        The rotary width of each axis.
    base, scaling, split, turns
        As in :func:`posenc.rope_axes_cos_sin`.
    grid_shape : sequence of int, optional
        The number of positions of each axis (a latent of ``(frames,
        height, width)``), drawn as reference lines.
    names : sequence of str, optional
        A name per axis for the legend (default ``"axis 0"``, ...).
    quantity : {"wavelength", "frequency"}
        What the log-scaled y axis shows.
    ax : matplotlib.axes.Axes, optional
        Default the current Axes.
    xlabel, ylabel, title : str or None
        Labels; ``ylabel`` defaults to the quantity with its unit.
    legend : bool, default True
        Draw a legend.
    **kwargs
        Passed to every :meth:`matplotlib.axes.Axes.plot` call.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn in (``ax``, by default the current Axes).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import posenc_viz
    >>> fig, ax = plt.subplots()
    >>> ax = posenc_viz.plot_rope_axes([16, 56, 56], grid_shape=[1, 64, 64], names=["text", "h", "w"], ax=ax)
    >>> [len(line.get_ydata()) for line in ax.lines[:3]]
    [8, 28, 28]
    >>> plt.close(fig)
    """
    quantity = check_quantity(quantity)
    check_bool(legend, "legend")
    freqs = axes_frequencies(axes_dim, base=base, scaling=scaling, split=split, turns=turns)
    n = len(freqs)
    grid = None
    if grid_shape is not None:
        if isinstance(grid_shape, (str, bytes)) or not isinstance(grid_shape, Sequence):
            msg = f"`grid_shape` must be a sequence of positive ints (one per axis), got {show(grid_shape)}"
            raise TypeError(msg)
        if len(grid_shape) != n:
            msg = f"`grid_shape` must have one size per axis ({n}), got {len(grid_shape)}"
            raise ValueError(msg)
        for g in grid_shape:
            if isinstance(g, bool) or not isinstance(g, numbers.Integral) or g < 1:
                msg = f"`grid_shape` must hold positive ints, got {show(g)}"
                raise (ValueError if isinstance(g, numbers.Integral) and not isinstance(g, bool) else TypeError)(msg)
        grid = [int(g) for g in grid_shape]
    if names is None:
        names = [f"axis {k}" for k in range(n)]
    elif isinstance(names, (str, bytes)) or not isinstance(names, Sequence) or len(names) != n:
        msg = f"`names` must be a sequence of {n} strings (one per axis), got {show(names)}"
        raise (ValueError if isinstance(names, Sequence) and not isinstance(names, (str, bytes)) else TypeError)(msg)
    elif not all(isinstance(s, str) for s in names):
        msg = f"`names` must contain strings, got {show(names)}"
        raise TypeError(msg)
    ys = []
    for w in freqs:
        with np.errstate(divide="ignore"):
            y = 2.0 * math.pi / w if quantity == "wavelength" else w.copy()
        ys.append(np.where(np.isfinite(y) & (y > 0), y, np.nan))  # still planes (Proportional) are not drawn
    shown = [float(v) for y in ys for v in (np.nanmin(y), np.nanmax(y)) if np.any(np.isfinite(y))]
    if grid is not None and quantity == "wavelength":
        shown += [float(g) for g in grid]
    if shown:
        check_log_range(shown, quantity, "`base` (with `scaling` and `turns`)", base)
    ax = _mpl.get_ax(ax)
    dims = _axes_dim(axes_dim)
    markers, styles = ("o", "x", "+", "s"), ("-", "--", ":", "-.")
    for k, (y, name) in enumerate(zip(ys, names)):
        # axes with the same spectrum overlap: each has its own marker and dashes
        opts: dict[str, Any] = {
            "marker": markers[k % 4] if y.size <= 32 else None,
            "markersize": 4,
            "linestyle": styles[k % 4],
            "color": f"C{k}",
        }
        opts.update(kwargs)
        ax.plot(np.arange(y.size), y, label=f"{name}: {dims[k]} dims", **opts)
    ax.set_yscale("log")
    if grid is not None and quantity == "wavelength":
        lines: dict[int, list[int]] = {}
        for k, g in enumerate(grid):
            lines.setdefault(g, []).append(k)
        for g, ks in lines.items():
            # in the legend (labels beside lines of nearby sizes would collide)
            ax.axhline(
                g,
                color=f"C{ks[0]}",
                linestyle=(0, (4, 2)),
                linewidth=0.8,
                zorder=1,
                label=f"{', '.join(names[j] for j in ks)}: {g} position{'' if g == 1 else 's'}",
            )
    longest = max(y.size for y in ys)
    ax.set_xlim(-0.5, longest - 0.5)
    if legend:
        ax.legend(loc="upper left" if quantity == "wavelength" else "upper right", fontsize="small")
    set_labels(ax, xlabel, YLABEL[quantity] if ylabel is None else ylabel, title)
    return ax


#: the most axes a configuration may name (as ``posenc-viz rope-axes --axes-dim``)
MAX_AXES = 8
#: the largest ``image_size`` / ``patch_size`` of a vision config read for
#: the figure's grid lines (2**20 pixels a side)
MAX_IMAGE_SIZE = 2**20


def _vision_axes(vision: Mapping[str, Any], top: Any) -> tuple[dict[str, Any], str] | None:
    """``from_hf`` of a vision tower's configuration as ``axes_dim`` /
    ``base`` / ``split`` (a frequency matrix: each axis' frequencies are one
    RoPE's, whatever order the model interleaves them in), and its model
    type; None where no model type reads as one; from_hf's refusal of the
    configuration's own model type is raised."""
    own = vision.get("model_type")
    names = [t for t in (own, top) if isinstance(t, str) and t]
    tries = list(dict.fromkeys(names[:1] + [f"{t}{sfx}" for t in names for sfx in ("_vision", "_vision_encoder")]))
    first: ValueError | None = None
    for mtype in tries:
        try:
            kw = posenc.scaling.from_hf({**vision, "model_type": mtype})
        except ValueError as exc:
            first = first if first is not None or mtype != own else exc
            continue
        if "dim" in kw:  # a language model's RoPE: not this tower's
            continue
        if "freqs" in kw:  # one RoPE of width d per axis, the planes reordered (Inkling2, Step3p7, Kimi-K2.5)
            f = np.asarray(kw["freqs"])
            col = f[:, 0][f[:, 0] > 0]
            d = 2 * col.size
            base = float(f"{float(col[1]) ** (-d / 2):.12g}") if col.size > 1 else 10000.0
            kw = {"axes_dim": (d,) * f.shape[1], "base": base, "split": "blocks"}
        return kw, mtype
    if first is not None and own is not None:
        raise first
    return None


def axes_from_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The multi-axis RoPE of a model configuration (a parsed ``config.json``).

    Reads diffusers' transformer configurations (``axes_dims_rope`` with
    ``rope_theta`` or ``theta``: Flux, Flux 2, Qwen-Image; ``rope_axes_dim``
    summing to ``attention_head_dim``: HunyuanVideo) and transformers'
    vision towers, read by :func:`posenc.scaling.from_hf` (Qwen2-VL and its
    relatives, Pixtral's strided split, SAM, Llama 4, DINOv3, ...; also
    inside ``vision_config``, whose older ``config.json`` files name the
    model type of the whole model: ``<type>_vision`` and
    ``<type>_vision_encoder`` are tried then).  Returns ``axes_dim``,
    ``base``, ``split``, ``grid_shape`` (or None) and a ``label``; a
    ``ValueError`` says what is missing (or why from_hf refuses the config,
    or that its ids count turns: DINOv3) otherwise.
    """
    if not isinstance(config, Mapping):
        msg = f"`config` must be a mapping (a parsed config.json), got {show(config)}"
        raise TypeError(msg)
    label = config.get("model_type") or config.get("_class_name") or "model"
    for key in ("axes_dims_rope", "rope_axes_dim"):
        dims = config.get(key)
        if dims is None:
            continue
        if not isinstance(dims, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in dims
        ):
            msg = f"`{key}` of `config` must be a list of rotary widths (ints), got {show(dims)}"
            raise TypeError(msg)
        dims = list(dims)
        if not 1 <= len(dims) <= MAX_AXES:
            msg = f"`{key}` of `config` must name 1 to {MAX_AXES} axes (as --axes-dim), got {len(dims)}"
            raise ValueError(msg)
        head = config.get("attention_head_dim")
        if key == "rope_axes_dim" and head is not None:
            if not isinstance(head, int) or isinstance(head, bool):
                msg = f"`attention_head_dim` of `config` must be an int, got {show(head)}"
                raise TypeError(msg)
            if sum(dims) != head:
                msg = (
                    f"`config` names rope_axes_dim={dims}, which does not sum to attention_head_dim={head}: "
                    "they are not rotary widths (CogView4's are the size of its position grid)"
                )
                raise ValueError(msg)
        base = config.get("rope_theta", config.get("theta", 10000.0))
        return {"axes_dim": dims, "base": base, "split": "blocks", "grid_shape": None, "label": str(label)}
    vision = config.get("vision_config") if isinstance(config.get("vision_config"), Mapping) else config
    found = _vision_axes(vision, config.get("model_type"))
    if found is not None:
        kw, mtype = found
        if kw.get("turns"):
            msg = (
                f"`config` of model_type {mtype!r} turns its ids in turns (DINOv3's normalised coordinates times "
                "2 pi), which this figure does not draw: call plot_rope_axes(..., turns=True)"
            )
            raise ValueError(msg)
        grid = None
        if vision.get("image_size") is not None and vision.get("patch_size") is not None:
            sizes = {}
            for key in ("image_size", "patch_size"):
                v = vision[key]
                if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_IMAGE_SIZE:
                    msg = f"`{key}` of the vision config must be an int in [1, {MAX_IMAGE_SIZE}], got {show(v)}"
                    raise ValueError(msg)
                sizes[key] = v
            side = sizes["image_size"] // sizes["patch_size"]
            if side < 1:
                msg = (
                    f"`patch_size` = {sizes['patch_size']} of the vision config is larger than its "
                    f"`image_size` = {sizes['image_size']} (no patch fits)"
                )
                raise ValueError(msg)
            grid = [side] * len(kw["axes_dim"])
        return {
            "axes_dim": list(kw["axes_dim"]),
            "base": kw["base"],
            "split": kw["split"],
            "grid_shape": grid,
            "label": str(vision.get("model_type") or config.get("model_type") or mtype),
        }
    msg = (
        "`config` has no multi-axis RoPE that posenc_viz reads: no `axes_dims_rope` or `rope_axes_dim` (diffusers) "
        "and no vision `rope_parameters` of rope_type 'axial' (transformers); give the widths with --axes-dim"
    )
    raise ValueError(msg)
