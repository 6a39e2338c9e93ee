"""posenc_viz: the figure functions, the paper style, loading and converting
tables.

They draw the user's arrays or call posenc (whose calls check their sizes):
none allocates a table of its own, and none returns an array of a chosen
namespace (no dtype/device/xp trio).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

import posenc
from tests.conftest import BackendKind
from tests.hardening._fuzz import Backend, Case

from ._draw import (
    arr,
    base,
    even_dim,
    real_array,
    scaling_obj,
    shapes,
)
from ._spec import Draw, register

VIZ_BACKENDS = (BackendKind.NUMPY, BackendKind.TORCH, BackendKind.STRICT_DEVICE1, BackendKind.JAX)
NUMPY_ONLY = (BackendKind.NUMPY,)
#: the figures whose tables come from posenc calls
POSENC_CALLS = "tables come from posenc calls, which check their sizes"


def _axes_case(be: Backend, args: tuple, kw: dict) -> Case:
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    if kw.get("ax", "new") == "new":
        fig, ax = plt.subplots()
        kw["ax"] = ax

    def check(r: Any) -> None:
        assert isinstance(r, Axes), f"expected an Axes, got {type(r).__name__}"
        if kw.get("ax") is not None:
            assert r is kw["ax"]

    return Case(be, args, kw, kind="object", check=check, cleanup=lambda: plt.close("all"))


def _viz_ax(draw: Draw) -> dict:
    return {} if draw(st.booleans()) else {"ax": None}


def _table(draw: Draw, be: Backend, *, min_side: int = 1) -> Any:
    n, d = draw(st.integers(min_side, 12)), draw(st.integers(min_side, 12))
    x, _ = real_array(draw, be, (n, d), -1.0, 1.0)
    return x


@register("posenc_viz.plot_encoding", viz=True, backends=VIZ_BACKENDS, no_allocation="draws the user's table")
def _plot_encoding(draw: Draw, be: Backend) -> Case:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["cbar"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["center"] = draw(st.none() | st.floats(-1, 1))
    if draw(st.booleans()):
        kw["cmap"] = draw(st.sampled_from(["viridis", "RdBu_r"]))
    if draw(st.booleans()):
        kw["title"] = draw(st.text(max_size=8))
    kw.update(_viz_ax(draw))
    return _axes_case(be, (_table(draw, be),), kw)


@register("posenc_viz.plot_wavelengths", viz=True, backends=NUMPY_ONLY, no_allocation=POSENC_CALLS)
def _plot_wavelengths(draw: Draw, be: Backend) -> Case:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["base"] = base(draw)
    if draw(st.booleans()):
        kw["convention"] = draw(st.sampled_from(["paper", "fairseq", "tensor2tensor"]))
    if draw(st.booleans()):
        kw["quantity"] = draw(st.sampled_from(["wavelength", "frequency"]))
    if draw(st.booleans()):
        kw["bounds"] = draw(st.booleans())
    return _axes_case(be, (draw(st.integers(2, 600)),), kw)


@register("posenc_viz.plot_dimensions", viz=True, backends=VIZ_BACKENDS, no_allocation="draws the user's table")
def _plot_dimensions(draw: Draw, be: Backend) -> Case:
    t = _table(draw, be)
    d = int(t.shape[1])
    dims = draw(st.integers(0, d - 1) | st.lists(st.integers(0, d - 1), min_size=1, max_size=4))
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        n = int(t.shape[0])
        start, step = draw(st.floats(-100.0, 100.0)), draw(st.floats(0.01, 10.0))
        kw["positions"] = arr(be, start + step * np.arange(n))  # increasing positions
    if draw(st.booleans()):
        kw["legend"] = draw(st.booleans())
    return _axes_case(be, (t, dims), kw)


@register(
    "posenc_viz.plot_similarity",
    viz=True,
    backends=VIZ_BACKENDS,
    no_allocation="the similarity of the user's table (posenc.similarity checks its size)",
)
def _plot_similarity(draw: Draw, be: Backend) -> Case:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["normalize"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["cbar"] = draw(st.booleans())
    t = _table(draw, be)
    if kw.get("normalize"):  # rows of zeros have no direction
        t = arr(be, np.asarray(be.to_numpy(t)) + 2.0)
    return _axes_case(be, (t,), kw)


@register("posenc_viz.plot_similarity_by_offset", viz=True, backends=VIZ_BACKENDS, no_allocation=POSENC_CALLS)
def _plot_similarity_by_offset(draw: Draw, be: Backend) -> Case:
    dim = even_dim(draw, 2, 128)
    kw: dict[str, Any] = {}
    args: tuple = (dim,)
    if draw(st.booleans()):
        if draw(st.booleans()):
            args = (dim, draw(st.integers(1, 200)))
        else:
            o, _ = real_array(draw, be, (draw(st.integers(1, 20)),), -300, 300, integer=True)
            args = (dim, o)
    if draw(st.booleans()):
        kw["normalize"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["kind"] = draw(st.sampled_from(["sinusoidal", "rope_bound"]))
    if draw(st.booleans()):
        kw["base"] = base(draw)
    return _axes_case(be, args, kw)


@register("posenc_viz.plot_rope_scaling", viz=True, backends=NUMPY_ONLY, no_allocation=POSENC_CALLS)
def _plot_rope_scaling(draw: Draw, be: Backend) -> Case:
    dim = even_dim(draw, 4, 128)
    n = draw(st.integers(1, 3))
    scs = [s for s in (scaling_obj(draw, dim) for _ in range(n)) if s is not None] or [posenc.scaling.Linear(2.0)]
    val: Any = scs[0] if len(scs) == 1 and draw(st.booleans()) else scs
    if draw(st.booleans()) and isinstance(val, list):
        val = {f"s{i}": s for i, s in enumerate(val)}
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["quantity"] = draw(st.sampled_from(["wavelength", "frequency"]))
    if draw(st.booleans()):
        kw["seq_len"] = draw(st.integers(1, 2**17))
    for k in ("original", "context", "legend"):
        if draw(st.booleans()):
            kw[k] = draw(st.booleans())
    return _axes_case(be, (dim, val), kw)


@register("posenc_viz.plot_rope_axes", viz=True, backends=NUMPY_ONLY, no_allocation=POSENC_CALLS)
def _plot_rope_axes(draw: Draw, be: Backend) -> Case:
    n = draw(st.integers(1, 3))
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        dims = [even_dim(draw, 2, 16)] * n
        kw["split"] = "strided"
    else:
        dims = [even_dim(draw, 2, 32) for _ in range(n)]
        if draw(st.booleans()):
            kw["base"] = [base(draw) for _ in range(n)] if draw(st.booleans()) else base(draw)
    if draw(st.booleans()):
        kw["turns"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["grid_shape"] = [draw(st.integers(1, 4096)) for _ in range(n)]
    if draw(st.booleans()):
        kw["names"] = [f"a{k}" for k in range(n)]
    if draw(st.booleans()):
        kw["quantity"] = draw(st.sampled_from(["wavelength", "frequency"]))
    if draw(st.booleans()):
        kw["legend"] = draw(st.booleans())
    return _axes_case(be, (dims,), kw)


@register(
    "posenc_viz.plot_bias",
    viz=True,
    backends=VIZ_BACKENDS,
    aliases={"bias": ("head",), "head": ("bias",)},
    no_allocation="draws the user's bias",
)
def _plot_bias(draw: Draw, be: Backend) -> Case:
    h = draw(st.integers(1, 3))
    q, k = draw(st.integers(1, 10)), draw(st.integers(1, 10))
    kind = draw(st.sampled_from(["alibi", "t5", "rel"]))
    if kind == "alibi":
        b = posenc.alibi_bias(h, q, k, causal=draw(st.booleans()), xp=be.ns, device=be.device)
    elif kind == "t5":
        b, h = posenc.t5_buckets(q, k, xp=be.ns, device=be.device), 1
    else:
        b, h = posenc.relative_positions(q, k, xp=be.ns, device=be.device), 1
    kw: dict[str, Any] = {}
    if (h > 1 or draw(st.booleans())) and b.ndim == 3:
        kw["head"] = draw(st.integers(0, h - 1))
    return _axes_case(be, (b,), kw)


@register(
    "posenc_viz.plot_window_bias",
    viz=True,
    backends=VIZ_BACKENDS,
    aliases={
        "bias": ("window", "head", "class_token"),
        "window": ("bias",),
        "head": ("bias",),
        "class_token": ("bias",),
    },
    no_allocation="draws the user's bias (one map per query patch of the window)",
)
def _plot_window_bias(draw: Draw, be: Backend) -> Case:
    import matplotlib.pyplot as plt
    from matplotlib.figure import FigureBase

    h, w, heads = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 2))
    cls = draw(st.booleans())
    n = h * w + (1 if cls else 0)
    b, _ = real_array(draw, be, (heads, n, n), -2.0, 2.0)
    kw: dict[str, Any] = {}
    if heads > 1 or draw(st.booleans()):
        kw["head"] = draw(st.integers(0, heads - 1))
    if cls or draw(st.booleans()):
        kw["class_token"] = cls
    if draw(st.booleans()):
        kw["cbar"] = draw(st.booleans())
    window: Any = h if h == w and draw(st.booleans()) else (h, w)

    def check(r: Any) -> None:
        assert isinstance(r, FigureBase), f"expected a Figure, got {type(r).__name__}"
        assert sum(1 for ax in r.axes if ax.images) == h * w

    return Case(be, (b, window), kw, kind="object", check=check, cleanup=lambda: plt.close("all"))


@register(
    "posenc_viz.plot_grid_similarity",
    viz=True,
    backends=VIZ_BACKENDS,
    no_allocation="the similarity maps of the user's table (one per patch, of the grid's size)",
)
def _plot_grid_similarity(draw: Draw, be: Backend) -> Case:
    import matplotlib.pyplot as plt
    from matplotlib.figure import FigureBase

    h, w, prefix = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(0, 2))
    x, _ = real_array(draw, be, (prefix + h * w, draw(st.integers(1, 8))), -1.0, 1.0)
    args: tuple = (x,) if h == w and draw(st.booleans()) else (x, (h, w))
    kw: dict[str, Any] = {}
    if prefix or draw(st.booleans()):
        kw["num_prefix_tokens"] = prefix
    shown = h * w
    if draw(st.booleans()):
        chosen = draw(st.lists(st.integers(0, h * w - 1), min_size=1, max_size=5))
        kw["patches"] = [divmod(i, w) if draw(st.booleans()) else i for i in chosen]
        shown = len(chosen)
    if draw(st.booleans()):
        kw["cbar"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["fig"] = plt.figure()

    def check(r: Any) -> None:
        assert isinstance(r, FigureBase), f"expected a Figure, got {type(r).__name__}"
        if kw.get("fig") is not None:
            assert r is kw["fig"]
        maps = [ax for ax in r.axes if ax.images]
        assert len(maps) == shown and all(len(ax.images) == 1 for ax in maps), (len(maps), shown)
        assert all(ax.images[0].get_array().shape == (h, w) for ax in maps)

    return Case(be, args, kw, kind="object", check=check, cleanup=lambda: plt.close("all"))


@register(
    "posenc_viz.load_table",
    viz=True,
    backends=NUMPY_ONLY,
    trio="reads a file into a host NumPy array",
    no_allocation="reads the user's file (its arrays are the file's, bounded by `max_size` from its headers; "
    "the hostile files are in test_hostile_files.py)",
)
def _load_table(draw: Draw, be: Backend) -> Case:
    import shutil
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="posenc-hardening-"))
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=1))
    _, ref = real_array(draw, be, shape, -1e3, 1e3)
    kind = draw(st.sampled_from(["npy", "npz", "safetensors", "pt"]))
    key = draw(st.sampled_from(["pos_embed", "model.pos_embed", "vit.embeddings.position_embeddings"]))
    one = draw(st.booleans())  # a file of one array: the key may be left out
    path = folder / f"table.{kind}"
    if kind == "npy":
        np.save(path, ref)
        key = None
    elif kind == "npz":
        np.savez(path, **({key: ref} if one else {key: ref, "other": np.zeros(2)}))
    elif kind == "safetensors":
        from safetensors.numpy import save_file

        save_file({key: ref} if one else {key: ref, "other": np.zeros(2)}, str(path))
    else:
        import torch

        t = torch.asarray(ref)
        head, _, leaf = key.rpartition(".")
        state: Any = {leaf: t} if one else {leaf: t, "other": torch.zeros(2)}
        if head:
            state = {head: state} if draw(st.booleans()) else {f"{head}.{k}": v for k, v in state.items()}
        torch.save(state, path)
    args: tuple = (path if draw(st.booleans()) else str(path),)
    if key is not None and not (one and draw(st.booleans())):
        args += (key,)
    kw: dict[str, Any] = {}
    if draw(st.booleans()):  # a limit the table fits (exactly, at the smallest)
        kw["max_size"] = ref.size + draw(st.sampled_from([0, 1, 10**6]))

    def check(r: Any) -> None:
        assert isinstance(r, np.ndarray), type(r)
        assert r.shape == shape and r.dtype == ref.dtype, (r.shape, r.dtype)
        assert r.flags.writeable and not np.shares_memory(r, ref)
        np.testing.assert_array_equal(r, ref)

    cleanup = lambda: shutil.rmtree(folder, ignore_errors=True)  # noqa: E731
    return Case(be, args, kw, kind="object", check=check, cleanup=cleanup)


@register("posenc_viz.paper_style", viz=True, backends=NUMPY_ONLY, no_allocation="matplotlib settings")
def _paper_style(draw: Draw, be: Backend) -> Case:
    import matplotlib

    kw: dict[str, Any] = {}
    args: tuple = ()
    if draw(st.booleans()):
        args = (draw(st.sampled_from(["single", "double"])),)
    if draw(st.booleans()):
        kw["aspect"] = draw(st.floats(0.1, 3.0))
    if draw(st.booleans()):
        kw["rc"] = {"lines.linewidth": draw(st.floats(0.1, 3.0))}
    before = dict(matplotlib.rcParams)

    def check(cm: Any) -> None:
        with cm:
            assert matplotlib.rcParams["pdf.fonttype"] == 42
        assert dict(matplotlib.rcParams) == before, "paper_style left rcParams changed"

    return Case(be, args, kw, kind="object", check=check)


@register("posenc_viz.figsize", viz=True, backends=NUMPY_ONLY, no_allocation="two floats")
def _figsize(draw: Draw, be: Backend) -> Case:
    args: tuple = ()
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        args = (draw(st.sampled_from(["single", "double"])),)
    if draw(st.booleans()):
        kw["aspect"] = draw(st.floats(0.1, 3.0))

    def check(r: Any) -> None:
        assert isinstance(r, tuple) and len(r) == 2, r
        assert all(isinstance(v, float) and v > 0 and math.isfinite(v) for v in r), r

    return Case(be, args, kw, kind="object", check=check)


@register(
    "posenc_viz.to_numpy",
    viz=True,
    aliases={"x": ("table",)},
    trio="returns a host NumPy array by definition",
    no_allocation="copies the user's array; no table of its own",
)
def _to_numpy(draw: Draw, be: Backend) -> Case:
    shape = draw(shapes())
    integer = draw(st.booleans())
    x, ref = real_array(draw, be, shape, -1000, 1000, integer=integer)
    kw = {"name": "table"} if draw(st.booleans()) else {}

    def check(r: Any) -> None:
        assert isinstance(r, np.ndarray) and r.shape == shape, (type(r), getattr(r, "shape", None))
        np.testing.assert_array_equal(r, np.asarray(be.to_numpy(x)))

    return Case(be, (x,), kw, kind="object", check=check)


@register(
    "posenc_viz.figure_set",
    viz=True,
    backends=NUMPY_ONLY,
    no_allocation="sizes capped by its own limits (MAX_DIM, MAX_LENGTH), checked by the fuzz suite",
)
def _figure_set(draw: Draw, be: Backend) -> Case:
    import tempfile
    from pathlib import Path

    out = Path(tempfile.mkdtemp(prefix="posenc-hardening-"))
    name = draw(st.sampled_from(["wavelengths", "similarity_by_offset", "t5_buckets"]))
    fmt = draw(st.sampled_from(["svg", "png"]))
    kw: dict[str, Any] = {
        "dim": even_dim(draw, 4, 64),
        "length": draw(st.integers(1, 16)),
        "formats": (fmt,),
        "dpi": 50,
        "names": [name],
        "head_dim": even_dim(draw, 4, 32),
    }

    def check(r: Any) -> None:
        assert isinstance(r, list) and [p.name for p in r] == [f"{name}.{fmt}"], r
        assert sorted(p.name for p in out.iterdir()) == [f"{name}.{fmt}"]

    def cleanup() -> None:
        import shutil

        import matplotlib.pyplot as plt

        shutil.rmtree(out, ignore_errors=True)
        plt.close("all")

    return Case(be, (out,), kw, kind="object", check=check, cleanup=cleanup)


#: constants in ``__all__``: not called, but checked for immutability
CONSTANTS = ("posenc_viz.FIGURES", "posenc_viz.COLUMN_WIDTHS")


def _audit_report(draw: Draw) -> Any:
    """A report of posenc.audit_rope, built by hand (the figure reads its fields only)."""
    from posenc.audit import RopeAudit, RopeModuleAudit

    mods = []
    for k in range(draw(st.integers(0, 2))):
        n = draw(st.integers(0, 6))
        pos = tuple(sorted(set(draw(st.lists(st.integers(0, 2**20), min_size=n, max_size=n)))))
        err = tuple(draw(st.floats(0.0, 2.0)) for _ in pos)
        floor = tuple(draw(st.floats(0.0, 1e-2)) for _ in pos)
        ok = draw(st.booleans())
        mods.append(RopeModuleAudit(f"m{k}", "R", "float32", ok, "" if ok else "why", "cause", pos, err, floor))
    return RopeAudit(tuple(mods))


@register("posenc_viz.plot_rope_audit", viz=True, backends=NUMPY_ONLY, no_allocation="draws the report's numbers")
def _plot_rope_audit(draw: Draw, be: Backend) -> Case:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["legend"] = draw(st.booleans())
    return _axes_case(be, (_audit_report(draw),), kw)
