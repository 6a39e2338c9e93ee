"""Generate ``rope_hf_golden.json``: Hugging Face ``transformers`` RoPE
frequencies, attention factors and rotary-embedding outputs for small
synthetic configs (no hub download, no weights).

Regenerate with (transformers 5.x on torch CPU)::

    python tests/posenc/data/make_rope_hf_golden.py

For every config the file records, from transformers itself:

* ``inv_freq``: the inverse frequencies of the rope-init function
  (``ROPE_INIT_FUNCTIONS[rope_type]``, or the model's
  ``compute_default_rope_parameters`` for ``"default"``), for each
  ``seq_len`` listed (``null``: the init-time call without ``seq_len``);
* ``attention``: the attention factor that function returns;
* ``module``: rows of ``LlamaRotaryEmbedding(config)(x, position_ids)`` (Phi's
  class for ``default_partial``) for
  ``position_ids = arange(n)``, which exercises the dynamic update of
  ``dynamic`` (base grown to ``seq_len = n``) and ``longrope`` (long factors
  when ``n > original_max_position_embeddings``).

transformers evaluates everything in float32; the values are stored as the
exact float32 numbers it produced.  ``hf_reference`` is also used by the test
suite to compare posenc with the installed transformers directly.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
OUT = HERE / "rope_hf_golden.json"

_SHORT = [1.0 + 0.05 * i for i in range(16)]
_LONG = [1.0 + 0.45 * i for i in range(16)]
#: Phi-3 style LongRoPE (read as a deep copy, see ``_config``)
_LONGROPE = {
    "hidden_size": 128,
    "num_attention_heads": 4,
    "max_position_embeddings": 4096,
    "original_max_position_embeddings": 512,
    "rope_parameters": {
        "rope_type": "longrope",
        "short_factor": _SHORT,
        "long_factor": _LONG,
        "rope_theta": 10000.0,
    },
}

#: name -> (LlamaConfig keyword arguments, seq_len values, module sequence length or None)
CONFIGS: dict[str, tuple[dict, list, int | None]] = {
    "default": (
        {"hidden_size": 128, "num_attention_heads": 4, "max_position_embeddings": 2048, "rope_theta": 10000.0},
        [None],
        40,
    ),
    "default_partial": (
        {
            "hidden_size": 256,
            "num_attention_heads": 4,
            "max_position_embeddings": 2048,
            "rope_theta": 25000.0,
            "partial_rotary_factor": 0.5,
        },
        [None],
        20,
    ),
    "legacy_linear": (
        {
            "hidden_size": 128,
            "num_attention_heads": 4,
            "max_position_embeddings": 2048,
            "rope_theta": 10000.0,
            "rope_scaling": {"type": "linear", "factor": 2.0},
        },
        [None],
        40,
    ),
    "linear": (
        {
            "hidden_size": 128,
            "num_attention_heads": 4,
            "max_position_embeddings": 2048,
            "rope_parameters": {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},
        },
        [None],
        None,
    ),
    "dynamic": (
        {
            "hidden_size": 128,
            "num_attention_heads": 4,
            "max_position_embeddings": 64,
            "rope_parameters": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0},
        },
        [None, 32, 64, 100, 1000],
        100,
    ),
    "dynamic_short": (
        {
            "hidden_size": 128,
            "num_attention_heads": 4,
            "max_position_embeddings": 64,
            "rope_parameters": {"rope_type": "dynamic", "factor": 3.0, "rope_theta": 10000.0},
        },
        [None],
        50,
    ),
    "yarn": (
        {
            "hidden_size": 256,
            "num_attention_heads": 4,
            "max_position_embeddings": 4096,
            "rope_parameters": {
                "rope_type": "yarn",
                "factor": 8.0,
                "original_max_position_embeddings": 512,
                "rope_theta": 10000.0,
            },
        },
        [None],
        30,
    ),
    "yarn_deepseek": (
        {
            "hidden_size": 256,
            "num_attention_heads": 4,
            "head_dim": 64,
            "max_position_embeddings": 2560,
            "rope_parameters": {
                "rope_type": "yarn",
                "factor": 40.0,
                "original_max_position_embeddings": 64,
                "mscale": 1.0,
                "mscale_all_dim": 0.8,
                "beta_fast": 16,
                "beta_slow": 2,
                "rope_theta": 10000.0,
            },
        },
        [None],
        30,
    ),
    "yarn_no_truncate": (
        {
            "hidden_size": 512,
            "num_attention_heads": 8,
            "max_position_embeddings": 131072,
            "rope_parameters": {
                "rope_type": "yarn",
                "factor": 32.0,
                "original_max_position_embeddings": 4096,
                "beta_fast": 32.0,
                "beta_slow": 1.0,
                "truncate": False,
                "rope_theta": 150000.0,
            },
        },
        [None],
        None,
    ),
    "yarn_attention_factor": (
        {
            "hidden_size": 128,
            "num_attention_heads": 4,
            "max_position_embeddings": 2048,
            "rope_parameters": {
                "rope_type": "yarn",
                "factor": 4.0,
                "original_max_position_embeddings": 512,
                "attention_factor": 1.25,
                "rope_theta": 10000.0,
            },
        },
        [None],
        30,
    ),
    "llama3": (
        {
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "max_position_embeddings": 131072,
            "rope_parameters": {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
                "rope_theta": 500000.0,
            },
        },
        [None],
        30,
    ),
    "longrope": (
        _LONGROPE,
        [None, 512, 513],
        600,
    ),
    "longrope_short_module": (
        _LONGROPE,
        [None],
        200,
    ),
    "longrope_explicit": (
        {
            "hidden_size": 128,
            "num_attention_heads": 4,
            "max_position_embeddings": 4096,
            "rope_parameters": {
                "rope_type": "longrope",
                "short_factor": _SHORT,
                "long_factor": _LONG,
                "factor": 16.0,
                "attention_factor": 1.1,
                "original_max_position_embeddings": 256,
                "rope_theta": 10000.0,
            },
        },
        [None, 1000],
        None,
    ),
}

#: rows of the module output that are recorded
MODULE_ROWS = (0, 1, 7, -1)

#: configs read through Phi's classes (whose default RoPE honours
#: ``partial_rotary_factor``; Llama's ignores it); all others through Llama's
PHI = {"default_partial"}


def _classes(name: str):
    if name in PHI:
        from transformers import PhiConfig
        from transformers.models.phi.modeling_phi import PhiRotaryEmbedding

        return PhiConfig, PhiRotaryEmbedding
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    return LlamaConfig, LlamaRotaryEmbedding


def _config(name: str):
    import copy

    return _classes(name)[0](**copy.deepcopy(CONFIGS[name][0]))


def hf_reference(name: str) -> dict:
    """transformers' frequencies, attention factor and module rows for ``CONFIGS[name]``."""
    import torch
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    kwargs, seq_lens, module_n = CONFIGS[name]
    rotary_cls = _classes(name)[1]
    config = _config(name)
    rope_type = config.rope_parameters["rope_type"]
    inv_freq = {}
    attention = None
    for seq_len in seq_lens:
        if rope_type == "default":
            inv, att = rotary_cls.compute_default_rope_parameters(config)
        elif seq_len is None:
            inv, att = ROPE_INIT_FUNCTIONS[rope_type](config, None)
        else:
            inv, att = ROPE_INIT_FUNCTIONS[rope_type](config, None, seq_len=seq_len)
        inv_freq[str(seq_len)] = [float(v) for v in inv.to(torch.float32).tolist()]
        attention = float(att)
    out = {"config": kwargs, "rope_type": rope_type, "inv_freq": inv_freq, "attention": attention}
    if module_n is not None:
        emb = rotary_cls(_config(name))
        x = torch.zeros(1, module_n, 8, dtype=torch.float32)
        cos, sin = emb(x, torch.arange(module_n)[None, :])
        rows = [r % module_n for r in MODULE_ROWS]
        out["module"] = {
            "n": module_n,
            "rows": rows,
            "cos": [[float(v) for v in cos[0, r].tolist()] for r in rows],
            "sin": [[float(v) for v in sin[0, r].tolist()] for r in rows],
        }
    return out


def main() -> None:
    import transformers

    data = {
        "generator": "tests/posenc/data/make_rope_hf_golden.py",
        "transformers": transformers.__version__,
        "configs": {name: hf_reference(name) for name in CONFIGS},
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
