"""Generate ``windows_golden.npz``: outputs of timm's ``timm.layers.pos_embed_rel``
functions, the reference of posenc's 2-D relative positions.

timm cannot be a test dependency (it pulls torchvision), so its functions are
run once here and their outputs recorded.  Make a scratch environment with
the CPU build of torch first and alone, then timm without its dependencies,
and import only the module this script needs::

    python -m venv timm-venv
    timm-venv/bin/pip install torch==2.13.0
    timm-venv/bin/pip install timm==1.0.31 --no-deps
    timm-venv/bin/python tests/posenc/data/make_windows_golden.py

(``timm.layers`` imports torchvision in its ``__init__``: the script loads
``pos_embed_rel.py`` and the few files it imports from timm's ``layers``
folder as a package of their own, without that ``__init__``.)

Recorded, for the sizes in ``WINDOWS`` / ``LOG_CASES`` / ``RESIZE_CASES``:

* ``index_{h}x{w}`` and ``index_cls_{h}x{w}``: ``gen_relative_position_index((h,
  w), class_token=...)`` (int64);
* ``log_{mode}_{h}x{w}_p{ph}x{pw}``: ``gen_relative_log_coords((h, w),
  (ph, pw), mode)`` (float32; ``p0x0`` is no pretrained window);
* ``resize_in_*`` / ``resize_out_*``: a table of seeded normal values and
  ``resize_rel_pos_bias_table`` of it (float32), for grid tables ``(heads,
  2h-1, 2w-1)`` and flat tables ``(positions [+ 3], heads)``, the new and old
  windows in the key (``{kind}_{oh}x{ow}_to_{nh}x{nw}``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from importlib.metadata import version
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "windows_golden.npz"

WINDOWS = [(1, 1), (1, 3), (2, 2), (3, 4), (4, 2), (5, 3), (7, 7)]
LOG_CASES = [
    ((2, 2), (0, 0), "swin"),
    ((3, 4), (0, 0), "swin"),
    ((7, 7), (0, 0), "swin"),
    ((5, 3), (0, 0), "swin"),
    ((8, 8), (4, 4), "swin"),
    ((6, 5), (3, 2), "swin"),
    ((12, 12), (7, 7), "swin"),
    ((3, 4), (0, 0), "cr"),
    ((7, 7), (0, 0), "cr"),
]
#: (layout, old window, new window, class token)
RESIZE_CASES = [
    ("grid", (2, 2), (3, 3), False),
    ("grid", (3, 4), (5, 6), False),
    ("grid", (7, 7), (12, 12), False),
    ("grid", (7, 7), (4, 4), False),
    ("grid", (4, 4), (4, 6), False),
    ("flat", (7, 7), (12, 12), True),
    ("flat", (7, 7), (12, 12), False),
    ("flat", (14, 14), (16, 16), True),
    ("flat", (6, 4), (8, 5), False),
    ("flat", (12, 12), (7, 7), True),
]
HEADS = 3


def timm_pos_embed_rel() -> types.ModuleType:
    """timm's ``layers/pos_embed_rel.py``, imported without ``timm/__init__``
    and ``timm/layers/__init__``."""
    layers = Path(importlib.util.find_spec("timm").origin).parent / "layers"
    pkg = types.ModuleType("_timm_layers")
    pkg.__path__ = [str(layers)]
    sys.modules["_timm_layers"] = pkg
    return importlib.import_module("_timm_layers.pos_embed_rel")


def cases() -> dict[str, np.ndarray]:
    import torch

    rel = timm_pos_embed_rel()

    out: dict[str, np.ndarray] = {}
    for h, w in WINDOWS:
        out[f"index_{h}x{w}"] = rel.gen_relative_position_index((h, w)).numpy()
        out[f"index_cls_{h}x{w}"] = rel.gen_relative_position_index((h, w), class_token=True).numpy()
    for (h, w), (ph, pw), mode in LOG_CASES:
        out[f"log_{mode}_{h}x{w}_p{ph}x{pw}"] = rel.gen_relative_log_coords((h, w), (ph, pw), mode=mode).numpy()
    rng = np.random.default_rng(29)
    for kind, old, new, cls in RESIZE_CASES:
        key = f"{kind}{'_cls' if cls else ''}_{old[0]}x{old[1]}_to_{new[0]}x{new[1]}"
        sh, sw = 2 * old[0] - 1, 2 * old[1] - 1
        dh, dw = 2 * new[0] - 1, 2 * new[1] - 1
        extra = 3 if cls else 0
        if kind == "grid":
            table = rng.standard_normal((HEADS, sh, sw)).astype(np.float32)
            shape = (HEADS, dh, dw)
        else:
            table = rng.standard_normal((sh * sw + extra, HEADS)).astype(np.float32)
            shape = (dh * dw + extra, HEADS)
        got = rel.resize_rel_pos_bias_table(torch.from_numpy(table), new, shape, old_window_size=old)
        out[f"resize_in_{key}"] = table
        out[f"resize_out_{key}"] = got.numpy()
    return out


def main() -> None:
    if version("timm") != "1.0.31" or not version("torch").startswith("2.13.0"):
        sys.exit(f"expected timm 1.0.31 and torch 2.13.0, got {version('timm')} and {version('torch')}")
    data = cases()
    np.savez_compressed(OUT, **data)
    print(f"wrote {len(data)} arrays to {OUT.name}")


if __name__ == "__main__":
    main()
