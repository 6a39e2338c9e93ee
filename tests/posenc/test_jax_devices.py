"""``device=`` under ``jax.jit``: every public creation call lands where it was asked to.

On a GPU machine JAX's default device is the GPU, and a call that asks for
the CPU under ``jax.jit`` found its result on the GPU: the trace places a
result by its computation, and ``zeros`` / ``full`` (empty tables) and
concrete arrays the trace closes over (cached tables) ignore the ``device=``
of their making.  Two host devices reproduce it without a GPU
(``XLA_FLAGS=--xla_force_host_platform_device_count=2``: device 1 is not the
default one); the flag must be set before JAX is imported, so the calls run
in a subprocess.  Each call runs eagerly (which also fills posenc's caches),
then under ``jax.jit`` with those caches warm, then cold; tables of zero
rows too.  Calls whose device comes from their arrays take arrays committed
to device 1 (the arguments of the jitted function), empty ones too: a
result that depends on no traced input would be placed on the default
device.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import posenc

ROOT = Path(__file__).resolve().parents[2]

#: every public function with a ``device=`` parameter: ``name: (args, kwargs)`` of a small call; ``"A:"``
#: marks an argument that is an array (given as a list, made on device 1 in the subprocess), ``"N:"`` a NumPy
#: scalar (a jit argument on no device: ``device=`` is given with it); ``zero``: the arguments of an empty
#: result, where the function has one
CALLS = {
    "binary": {"call": ([5, 4], {}), "zero": ([0, 4], {})},
    "frequencies": {"call": ([8], {})},
    "wavelengths": {"call": ([8], {})},
    "learned_table": {"call": ([5, 4], {"seed": 0}), "zero": ([0, 4], {"seed": 0})},
    "shift_matrix": {"call": ([3, 8], {}), "numpy scalar": (["N:-3.5", 5], {})},
    "similarity_by_offset": {"call": ([5, 8], {}), "zero": ([0, 8], {})},
    "sines": {"call": ([5, [0.5, 0.25]], {}), "zero": ([0, [0.5, 0.25]], {})},
    "sinusoidal": {"call": ([4, 8], {}), "zero": ([0, 8], {}), "padded": ([4, 8], {"padding_idx": 0})},
    # (an empty ``t``, a single zero column: results that depend on no traced input, which jax.jit would
    # place on its default device)
    "timestep_embedding": {"call": (["A:[1.5, 20.0, 999.0]", 8], {}), "zero": (["A:[]", 8], {}),
                           "dim 1": (["A:[1.5, 20.0]", 1], {})},
    "axial_rope_cos_sin": {"call": ([[2, 3], 8], {})},
    "fourier_features": {"call": (["A:[[0.1, 0.2], [0.3, 0.4]]", 3], {}), "zero": (["A:[[0.1, 0.2]]", 0], {})},
    "gaussian_matrix": {"call": ([4, 2], {"scale": 1.0, "seed": 0})},
    "grid_interpolation_taps": {"call": ([[2, 2], [3, 3]], {})},
    "grid_ids": {"call": ([[2, 3]], {}), "prefix": ([[2, 3]], {"prefix_tokens": 2, "suffix_tokens": 1})},
    "sincos_coords": {"call": (["A:[[0.0, 1.0], [2.0, 3.0]]", 8], {})},
    "sincos_grid": {"call": ([[2, 3], 8], {}), "cls": ([[2, 3], 8], {"cls_token": True})},
    "alibi_bias": {"call": ([4, 3, 3], {}), "zero": ([4, 0, 3], {})},
    "alibi_slopes": {"call": ([4], {})},
    "cumulative_gate_bias": {"call": (["A:[[-0.1, -0.2, -0.3]]"], {}), "zero": (["A:[[]]"], {})},
    "kerple_bias": {"call": ([3, 4], {"r1": "A:[1.0, 2.0]", "r2": "A:[0.5, 0.5]"}),
                    "zero": ([3, 0], {"r1": "A:[1.0, 2.0]", "r2": "A:[0.5, 0.5]"})},
    "relative_positions": {"call": ([3, 4], {}), "zero": ([0, 4], {})},
    "relative_sinusoidal": {"call": ([3, 4], {"dim": 8})},
    "t5_bucket": {"call": (["A:[-3, 0, 5]"], {})},
    "t5_buckets": {"call": ([3, 4], {}), "zero": ([3, 0], {})},
    "relative_log_coords": {"call": ([3], {})},
    "relative_position_index": {"call": ([3], {})},
    "mrope_cos_sin": {"call": (["A:[[[0, 1, 2]], [[0, 1, 1]], [[0, 0, 1]]]", 16], {"mrope_section": [2, 3, 3]})},
    "rope_axes_cos_sin": {"call": (["A:[[0.0, 1.0, 2.0], [0.0, 3.0, 4.0]]", [4, 6, 6]], {})},
    "rope_cos_sin": {"call": ([5, 8], {}), "zero": ([0, 8], {}), "offset": ([3, 8], {"offset": 7})},
    "rope_cache": {"vllm": ([5, 8], {"format": "vllm"}), "flash_attn": ([5, 8], {"format": "flash_attn"})},
    "rope_frequencies": {"call": ([8], {})},
    "rope_permutation": {"call": ([8], {})},
    "xpos_scale": {"call": ([5, 8], {}), "zero": ([0, 8], {})},
}

#: run in a fresh interpreter with two host devices: prints one JSON line, the calls whose results are not
#: all on device 1, as "name/case/mode: devices"
SCRIPT = r"""
import json, sys
import jax, jax.numpy as jnp
import numpy as np
import posenc

calls = json.loads(sys.argv[1])
dev = jax.devices("cpu")[1]
assert dev != jax.devices()[0], jax.devices()

def arg(v):
    if isinstance(v, str) and v.startswith("A:"):
        return jax.device_put(jnp.asarray(json.loads(v[2:])), dev)
    if isinstance(v, str) and v.startswith("N:"):  # a NumPy scalar: traced under jit, on no device
        return np.float64(json.loads(v[2:]))
    return v

def devices(out):
    return sorted({d.id for leaf in jax.tree_util.tree_leaves(out) for d in leaf.devices()})

bad, ran = [], 0
for name, cases in calls.items():
    fn = getattr(posenc, name)
    for case, (args, kwargs) in cases.items():
        args = [arg(a) for a in args]
        kwargs = {k: arg(v) for k, v in kwargs.items()}
        arrays = {k: v for k, v in [*enumerate(args), *kwargs.items()] if isinstance(v, (jax.Array, np.generic))}
        if not any(isinstance(v, jax.Array) for v in arrays.values()):
            kwargs.update(xp=jnp, device=dev)

        def call(arrays, args=args, kwargs=kwargs, fn=fn):
            a = [arrays.get(i, v) for i, v in enumerate(args)]
            return fn(*a, **{k: arrays.get(k, v) for k, v in kwargs.items()})

        for mode in ("eager", "jit, caches warm", "jit, caches cold"):
            if mode.endswith("cold"):
                posenc.clear_caches()
            got = devices(call(arrays) if mode == "eager" else jax.jit(call)(arrays))
            ran += 1
            if got != [dev.id]:
                bad.append(f"{name}/{case}/{mode}: {got}")
print(json.dumps({"ran": ran, "bad": bad}))
"""


def test_every_creation_call_is_listed():
    """The table above covers every public function with a ``device=`` parameter (a new one must join it)."""
    public = {
        name for name in posenc.__all__
        if callable(obj := getattr(posenc, name)) and not isinstance(obj, type)
        and "device" in inspect.signature(obj).parameters
    }
    assert public == set(CALLS)


def test_device_is_honoured_under_jit_with_two_host_devices():
    pytest.importorskip("jax")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    env.pop("JAX_ENABLE_X64", None)
    code = [sys.executable, "-c", SCRIPT, json.dumps(CALLS)]
    out = subprocess.run(code, capture_output=True, text=True, cwd=ROOT, env=env, check=False, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["ran"] == 3 * sum(len(c) for c in CALLS.values())
    assert got["bad"] == [], got["bad"]
