"""What the two halves of the torch audit share (the language models'
rotary modules in ``_audit``, the vision towers' in ``_audit_vision``):
the positions sampled, the dtype names, the cause found."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from posenc import _checks

#: a module is "at the floor" when its error is at most this many times the floor
AT_FLOOR = 4.0
#: positions sampled, log-spaced, between 1 and the context
SAMPLES = 192


def _positions(context: int, positions: Any) -> np.ndarray:
    if positions is not None:
        try:
            raw = np.asarray(positions)
        except Exception:
            raw = np.asarray(None)
        if raw.dtype.kind not in "iu":
            msg = f"`positions` must be an array or list of integers, got {_checks.show(positions)}"
            raise TypeError(msg)
        p = np.unique(raw.astype(np.int64).ravel())
        if p.size == 0 or p[0] < 0 or p[-1] >= 2**53:
            msg = f"`positions` must be non-negative integers below 2**53, at least one, got {_checks.show(positions)}"
            raise ValueError(msg)
        return p
    top = max(int(context) - 1, 1)
    return np.unique(np.concatenate([[0], np.round(np.geomspace(1, top, SAMPLES)).astype(np.int64)]))


def _dtype_name(dt: Any) -> str:
    return str(dt).removeprefix("torch.")


def _cause(module: Any, inv: Any, kw: dict[str, Any], dtype: Any, err: np.ndarray, floor: np.ndarray) -> str:

    import posenc
    from posenc.scaling._formulas import length_dependent

    if inv is not None and inv.dtype in (torch.bfloat16, torch.float16):
        return f"inv_freq stored in {_dtype_name(inv.dtype)}"
    if inv is not None and "dim" in kw and not length_dependent(kw.get("scaling")):
        want = np.asarray(posenc.rope_frequencies(kw["dim"], base=kw["base"], scaling=kw["scaling"]))
        got = inv.detach().to("cpu", torch.float64).numpy()
        if got.shape == want.shape:
            rel = float(np.max(np.abs(got - want) / want))
            if rel > 1e-5:
                return f"a scaling read differently: inv_freq differs from the config's by {rel:.2g} (relative)"
    ratio = float(np.max(err / np.maximum(floor, 2.0**-26)))
    if ratio <= AT_FLOOR:
        if dtype in (torch.bfloat16, torch.float16):
            return f"tables cast to {_dtype_name(dtype)} (at the floor)"
        return f"at the {_dtype_name(dtype)} floor"
    return "the float32 angle product"


def _inv_freq(module: Any, layer_type: str | None) -> Any:
    name = f"{layer_type}_inv_freq" if layer_type else "inv_freq"
    buf = getattr(module, name, None)

    return buf if isinstance(buf, torch.Tensor) else None
