"""Backend-specific kernels: the NumPy and torch CPU fast paths.

Everything else in posenc is written once against the Array API.  The
functions here compute *the same floating-point operations in the same
order* as a portable path named in their docstring, with the backend's own
functions: no array-api-compat wrappers, ``out=`` arguments and in-place
updates instead of temporaries, cache-sized blocks.  They are chosen by the
portable code through :func:`eager_kind` (one classifier, built on
:func:`posenc._compat.namespace_kind`), never while torch's compiler traces,
and every kernel is tested equal to its portable path in
``tests/posenc/test_kernels.py`` (bit for bit unless its docstring says
otherwise).

Family modules and :mod:`posenc._angles` call the kernels by name; they
contain no backend checks of their own.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

_TWO_PI = 2.0 * math.pi


def eager_kind(x: Any) -> str | None:
    """``"numpy"`` for a NumPy array, ``"torch"`` for a plain eager torch
    tensor (not a subclass, not traced by torch's compiler), else None.

    The device and autograd are not looked at: each kernel says what else it
    needs.
    """
    if type(x) is np.ndarray:
        return "numpy"
    torch = sys.modules.get("torch")
    if torch is not None and type(x) is torch.Tensor and not torch.compiler.is_compiling():
        return "torch"
    return None


# --------------------------------------------------------------------------
# angles in turns (posenc._angles._sincos_turns)
# --------------------------------------------------------------------------
# Integer positions only (|p| < 2**53: the conversion to float64 is exact, as
# the portable path's cast); the conversion is folded into the product and
# the temporary is updated in place.  For the small tables of a decode step,
# where per-operation overhead is the cost.
def turns_numpy(p: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 ``(sin, cos)`` of ``2 pi frac(p * v)``: ``_sincos_turns`` in NumPy."""
    t = np.multiply(p[..., None], v)
    t -= np.round(t)
    t *= _TWO_PI
    a = t.astype(np.float32)
    return np.sin(a), np.cos(a)


def turns_torch(p: Any, v: Any) -> tuple[Any, Any]:
    """float32 ``(sin, cos)`` of ``2 pi frac(p * v)``: ``_sincos_turns`` in torch."""
    import torch

    t = p[..., None] * v
    t.sub_(torch.round(t)).mul_(_TWO_PI)
    a = t.to(torch.float32)
    return torch.sin(a), torch.cos(a)


TURNS = {"numpy": turns_numpy, "torch": turns_torch}


# --------------------------------------------------------------------------
# small rotations (posenc.rotary._rotate_portable, full tables, all features)
# --------------------------------------------------------------------------
# The formula itself, ``x * cos + rotate(x) * sin``, with the backend's own
# concatenate / stack: below posenc.rotary._FAST_MIN elements (a decode step)
# per-operation overhead is the cost, and five operations are the minimum.
# x, cos and sin share one floating dtype; autograd flows through them.
def rotate_small_numpy(x: np.ndarray, c: np.ndarray, s: np.ndarray, layout: str) -> np.ndarray:
    """``x * c + rotate(x) * s`` in NumPy (half: ``[-x2, x1]``; interleaved: pairs ``(-x_odd, x_even)``)."""
    if layout == "half":
        h = x.shape[-1] // 2
        rot = np.concatenate((-x[..., h:], x[..., :h]), axis=-1)
    else:
        rot = np.stack((-x[..., 1::2], x[..., 0::2]), axis=-1).reshape(x.shape)
    return x * c + rot * s


def rotate_small_torch(x: Any, c: Any, s: Any, layout: str) -> Any:
    """``x * c + rotate(x) * s`` in torch (see :func:`rotate_small_numpy`)."""
    import torch

    if layout == "half":
        h = x.shape[-1] // 2
        rot = torch.cat((-x[..., h:], x[..., :h]), dim=-1)
    else:
        rot = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).reshape(x.shape)
    return x * c + rot * s


ROTATE_SMALL = {"numpy": rotate_small_numpy, "torch": rotate_small_torch}
