"""Generate ``rope_cache_golden.npz``: the pure-PyTorch reference paths of vLLM and
flash-attn, run on the caches of :func:`posenc.rope_cache`.

Neither package installs next to posenc's test stack on a CPU machine (vLLM
pins its own torch build; flash-attn's package compiles CUDA extensions and
its ``__init__`` imports them), so their reference functions are read from
their source files and run here, with the torch of ``requirements/lock.txt``
and ``einops`` (flash-attn's only import for them)::

    PYTHONPATH=. python tests/posenc/data/make_rope_cache_golden.py \\
        --vllm-common  vllm/model_executor/layers/rotary_embedding/common.py \\
        --vllm-base    vllm/model_executor/layers/rotary_embedding/base.py \\
        --flash-attn   flash_attn/layers/rotary.py

The files: vLLM ``common.py`` at 002d181a55a03803d7d69547846630069d2378b8 and
``base.py`` at 04458da08417899fc04046216c986d28abeb85af (its
``RotaryEmbedding.forward_native``), flash-attn ``flash_attn/layers/rotary.py``
at 0251105a2fb19d2957484b7f023cd8c115286ced (fa4-v4.0.0.beta27).  Only the
named function definitions are taken from each file (with :mod:`ast`) and
executed; nothing else of the packages runs.

Recorded, for each peer and pairing (vLLM ``is_neox_style`` True / False,
flash-attn ``interleaved`` False / True), partial rotary (head 24, rotary
width 16), base 500 and a YaRN scaling (its attention factor is in the
table), in float64:

* ``{peer}_{style}_x``, ``..._pos``: the input (vLLM: ``(tokens, heads *
  head)`` with arbitrary positions; flash-attn: ``(1, seq, heads, head)``
  with positions ``0 .. seq-1``);
* ``..._cache``: posenc's cache as the peer was given it (vLLM:
  ``rope_cache(n, 16, format="vllm")``; flash-attn: the ``cos`` and ``sin``
  of ``format="flash_attn"`` stacked);
* ``..._out``: the peer's output;
* ``..._control``: the peer's output for a wrong cache (the halves swapped:
  ``cat(sin, cos)``), which must differ from the rotation.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

import posenc

HERE = Path(__file__).resolve().parent
N, ROT, HEAD, HEADS = 64, 16, 24, 2
BASE = 500.0
SCALING = posenc.scaling.YaRN(4.0, 16)


def _functions(path: str, names: tuple[str, ...], namespace: dict[str, Any]) -> dict[str, Any]:
    """Execute the definitions ``names`` (functions, or ``Class.method``) of the file at ``path``."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    found: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    found[f"{node.name}.{sub.name}"] = sub
    out = {}
    for name in names:
        node = found[name]
        node.decorator_list = []
        code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
        exec(code, namespace)  # noqa: S102 - the peer's own definition
        out[name] = namespace[node.name]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vllm-common", required=True)
    parser.add_argument("--vllm-base", required=True)
    parser.add_argument("--flash-attn", required=True)
    args = parser.parse_args()
    import einops

    ns: dict[str, Any] = {"torch": torch, "Optional": Optional}
    _functions(args.vllm_common, ("apply_rotary_emb_torch",), ns)
    forward_native = _functions(args.vllm_base, ("RotaryEmbedding.forward_native",), ns)[
        "RotaryEmbedding.forward_native"
    ]
    fa: dict[str, Any] = {"torch": torch, "rearrange": einops.rearrange, "repeat": einops.repeat}
    fa_apply = _functions(args.flash_attn, ("rotate_half", "apply_rotary_emb_torch"), fa)["apply_rotary_emb_torch"]

    gen = torch.Generator().manual_seed(0)
    out: dict[str, np.ndarray] = {"versions": np.array([f"torch {torch.__version__}", f"einops {einops.__version__}"])}
    kw = {"base": BASE, "scaling": SCALING, "dtype": torch.float64, "xp": torch}
    for neox in (True, False):
        style = "half" if neox else "interleaved"
        # vLLM: tokens at arbitrary positions, (tokens, heads * head)
        cache = posenc.rope_cache(N, ROT, format="vllm", **kw)
        pos = torch.randint(0, N, (20,), generator=gen)
        x = torch.randn(20, HEADS * HEAD, generator=gen, dtype=torch.float64)
        fields = {"head_size": HEAD, "rotary_dim": ROT, "is_neox_style": neox}
        q, _ = forward_native(type("R", (), {"cos_sin_cache": cache, **fields})(), pos, x.clone(), None)
        wrong = torch.cat([cache[:, ROT // 2 :], cache[:, : ROT // 2]], dim=-1)
        ctrl, _ = forward_native(type("R", (), {"cos_sin_cache": wrong, **fields})(), pos, x.clone(), None)
        out.update({f"vllm_{style}_x": x.numpy(), f"vllm_{style}_pos": pos.numpy()})
        out[f"vllm_{style}_cache"] = cache.numpy()
        out.update({f"vllm_{style}_out": q.numpy(), f"vllm_{style}_control": ctrl.numpy()})

        # flash-attn: (batch, seq, heads, head) with (seq, rot / 2) tables
        cos, sin = posenc.rope_cache(N, ROT, format="flash_attn", **kw)
        x = torch.randn(1, N, HEADS, HEAD, generator=gen, dtype=torch.float64)
        y = fa_apply(x, cos, sin, interleaved=not neox)
        ctrl = fa_apply(x, sin, cos, interleaved=not neox)
        out.update({f"flash_{style}_x": x.numpy(), f"flash_{style}_pos": np.arange(N)})
        out.update({f"flash_{style}_cache": torch.stack([cos, sin]).numpy()})
        out.update({f"flash_{style}_out": y.numpy(), f"flash_{style}_control": ctrl.numpy()})
    np.savez_compressed(HERE / "rope_cache_golden.npz", **out)
    print(sorted(out))


if __name__ == "__main__":
    main()
