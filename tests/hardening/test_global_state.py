"""Importing and calling posenc / posenc_viz changes no global state.

Each check runs in a fresh interpreter: it records the process-wide settings
that a library could touch (backend defaults, random states, number
formatting, warning filters, matplotlib's rcParams, backend, colormaps and
open figures), imports the package, calls its functions, and records them
again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

SNAPSHOT = r'''
import decimal, importlib, importlib.util, json, logging, os, sys, warnings
import numpy as np

def installed(*names):
    """The modules of ``names`` that are installed here, imported, by name:
    the array backends are optional, the checks run over those present."""
    out = {}
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:  # the parent package of a submodule is absent
            found = False
        if found:
            out[name] = importlib.import_module(name)
    return out

def snapshot():
    s = {
        "numpy.seterr": np.geterr(),
        "numpy.printoptions": {k: repr(v) for k, v in np.get_printoptions().items()},
        "numpy.random": repr(np.random.get_state()[1][:8].tolist()) + repr(np.random.get_state()[2:]),
        "warnings.filters": repr(warnings.filters),
        "decimal.context": repr(decimal.getcontext()),
        "logging.root": repr((logging.root.level, logging.root.handlers)),
        "recursionlimit": sys.getrecursionlimit(),
        "environ": sorted(os.environ),
    }
    if "torch" in sys.modules:
        import torch
        s["torch.default_dtype"] = str(torch.get_default_dtype())
        s["torch.default_device"] = str(torch.get_default_device())
        s["torch.grad_enabled"] = torch.is_grad_enabled()
        s["torch.num_threads"] = torch.get_num_threads()
        s["torch.deterministic"] = torch.are_deterministic_algorithms_enabled()
        s["torch.rng"] = torch.random.get_rng_state()[:64].tolist()
        s["torch.matmul_precision"] = torch.get_float32_matmul_precision()
        s["torch.printoptions"] = repr(torch._tensor_str.PRINT_OPTS.__dict__)
    if "jax" in sys.modules:
        import jax
        s["jax.enable_x64"] = bool(jax.config.jax_enable_x64)
        s["jax.default_device"] = repr(jax.config.jax_default_device)
        s["jax.matmul_precision"] = repr(jax.config.jax_default_matmul_precision)
        s["jax.numpy_rank_promotion"] = repr(jax.config.jax_numpy_rank_promotion)
    if "dask" in sys.modules:
        import dask
        s["dask.config"] = repr(sorted(dask.config.config.items(), key=lambda kv: kv[0]))
    if "array_api_strict" in sys.modules:
        import array_api_strict
        s["array_api_strict.flags"] = repr(array_api_strict.get_array_api_strict_flags())
    if "matplotlib" in sys.modules:
        import matplotlib
        s["mpl.rcParams"] = {k: repr(v) for k, v in matplotlib.rcParams.items()}
        s["mpl.backend"] = matplotlib.get_backend()
        s["mpl.interactive"] = matplotlib.is_interactive()
        s["mpl.colormaps"] = sorted(matplotlib.colormaps)
        s["mpl.style.library"] = sorted(matplotlib.style.library)
        import matplotlib.units
        s["mpl.units"] = sorted(repr(k) for k in matplotlib.units.registry)
        if "matplotlib.pyplot" in sys.modules:
            import matplotlib.pyplot as plt
            s["mpl.fignums"] = plt.get_fignums()
    return s

def diff(a, b):
    out = {}
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            if isinstance(a.get(k), dict) and isinstance(b.get(k), dict):
                keys = sorted(x for x in set(a[k]) | set(b[k]) if a[k].get(x) != b[k].get(x))
                out[k] = {x: [a[k].get(x), b[k].get(x)] for x in keys[:10]}
            else:
                out[k] = [repr(a.get(k))[:200], repr(b.get(k))[:200]]
    return out
'''


def run_script(body: str) -> dict:
    code = SNAPSHOT + textwrap.dedent(body)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_import_posenc_changes_nothing():
    """``import posenc`` with every installed backend already loaded leaves their settings alone."""
    out = run_script(
        """
        installed("torch", "jax.numpy", "dask.array", "array_api_strict")
        before = snapshot()
        import posenc
        print(json.dumps(diff(before, snapshot())))
        """
    )
    assert out == {}, f"import posenc changed global state: {out}"


def test_posenc_calls_change_nothing():
    """Calls on every installed backend (tables, RoPE, biases, grids, random
    tables with and without a seed) leave every backend's settings and random
    state alone."""
    out = run_script(
        """
        mods = installed("torch", "jax.numpy", "dask.array", "array_api_strict")
        import posenc
        before = snapshot()
        for xp in (np, *mods.values()):
            posenc.sinusoidal(16, 8, xp=xp)
            posenc.rope_cos_sin(16, 8, xp=xp)
            posenc.alibi_bias(4, 8, xp=xp)
            posenc.t5_buckets(8, 8, xp=xp)
            posenc.sincos_grid((3, 4), 8, xp=xp)
            posenc.learned_table(4, 8, xp=xp)
            posenc.learned_table(4, 8, seed=3, xp=xp)
            posenc.gaussian_matrix(4, 2, scale=1.0, xp=xp)
        if "torch" in mods:
            torch = mods["torch"]
            posenc.sinusoidal(torch.arange(5, dtype=torch.float64), 8, dtype=torch.bfloat16)
            posenc.rope(torch.zeros(2, 4, 8, requires_grad=True), 4)
        if "jax.numpy" in mods:
            import jax
            jnp = mods["jax.numpy"]
            posenc.sinusoidal(jnp.arange(5), 8, dtype="float32")
            jax.jit(lambda p: posenc.sinusoidal(p, 8))(jnp.arange(4))
        if "dask.array" in mods:
            posenc.sinusoidal(mods["dask.array"].arange(6, chunks=2), 8)
        print(json.dumps(diff(before, snapshot())))
        """
    )
    assert out == {}, f"posenc calls changed global state: {out}"


def test_posenc_viz_leaves_matplotlib_as_found():
    """Importing posenc_viz imports no matplotlib; drawing every figure, the
    paper style (also on an exception inside it) and the figure set leave
    rcParams, backend, colormaps, styles and open figures as they were."""
    out = run_script(
        """
        import tempfile
        import posenc_viz
        lazy = "matplotlib" not in sys.modules
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import posenc
        before = snapshot()
        pe = posenc.sinusoidal(12, 16)
        for draw in (
            lambda ax: posenc_viz.plot_encoding(pe, ax=ax),
            lambda ax: posenc_viz.plot_wavelengths(16, ax=ax),
            lambda ax: posenc_viz.plot_dimensions(pe, [0, 3], ax=ax),
            lambda ax: posenc_viz.plot_similarity(pe, ax=ax),
            lambda ax: posenc_viz.plot_similarity_by_offset(16, 20, ax=ax),
            lambda ax: posenc_viz.plot_rope_scaling(16, posenc.scaling.Linear(2.0), ax=ax),
            lambda ax: posenc_viz.plot_bias(posenc.alibi_bias(2, 6, causal=True), head=1, ax=ax),
        ):
            fig, ax = plt.subplots()
            draw(ax)
            plt.close(fig)
        with posenc_viz.paper_style("double", rc={"lines.linewidth": 3.0}):
            fig, ax = plt.subplots()
            posenc_viz.plot_encoding(pe, ax=ax)
            plt.close(fig)
        try:
            with posenc_viz.paper_style():
                raise KeyError("inside")
        except KeyError:
            pass
        @posenc_viz.paper_style("single")
        def decorated():
            return matplotlib.rcParams["pdf.fonttype"]
        decorated()
        posenc_viz.figsize("double")
        with tempfile.TemporaryDirectory() as d:
            posenc_viz.figure_set(d, dim=16, length=8, head_dim=8, formats=("svg",), dpi=50)
        after = snapshot()
        result = diff(before, after)
        if not lazy:
            result["import posenc_viz"] = "imported matplotlib"
        print(json.dumps(result))
        """
    )
    assert out == {}, f"posenc_viz changed global state: {out}"


def test_figure_set_failure_leaves_matplotlib_as_found(tmp_path):
    """A figure set that fails (existing target without ``force``, a bad
    argument) leaves no open figure and no changed rcParams."""
    target = tmp_path / "wavelengths.svg"
    target.write_text("mine")
    out = run_script(
        f"""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import posenc_viz
        before = snapshot()
        errors = []
        for kw in (dict(names=["wavelengths"]), dict(names=["nope"]), dict(dim=3), dict(formats=("bmp",))):
            try:
                posenc_viz.figure_set({str(tmp_path)!r}, formats=kw.pop("formats", ("svg",)), dpi=50, **kw)
            except (OSError, ValueError, TypeError) as exc:
                errors.append(type(exc).__name__)
        result = diff(before, snapshot())
        if len(errors) != 4:
            result["errors"] = errors
        print(json.dumps(result))
        """
    )
    assert out == {}, out
    assert target.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wavelengths.svg"]


@pytest.mark.parametrize("module", ["posenc", "posenc_viz"])
def test_import_installs_no_warning_filters_or_handlers(module):
    out = run_script(
        f"""
        before = snapshot()
        import {module}
        print(json.dumps(diff(before, snapshot())))
        """
    )
    assert out == {}, f"import {module} changed global state: {out}"
