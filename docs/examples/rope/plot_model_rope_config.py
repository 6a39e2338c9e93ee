"""
RoPE of a released model, from its config.json
===============================================

A released model's ``config.json`` says how it extends its context:
``rope_theta``, the head dimension and a ``rope_scaling`` entry.
:func:`posenc.scaling.from_hf` reads them the way ``transformers`` does, and
``posenc-viz rope-scaling --hf-config config.json`` draws the model's RoPE
wavelengths against the unscaled ones, labelled with the model type.

Here the entries of two released configs are written as JSON, as they ship
with the weights: Llama 3.1 8B (Llama 3 scaling, factor 8 over an 8192-token
original context) and Qwen2.5 7B Instruct with the YaRN entry its model card
adds for long inputs (factor 4 over 32768).

*Needs:* posenc, posenc_viz (the ``viz`` extra).
"""

import contextlib
import io
import json
import os
import shutil
import tempfile

import matplotlib.pyplot as plt

import posenc_viz
from posenc import scaling
from posenc_viz import cli

configs = {
    "llama": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
        "vocab_size": 128256,
        "torch_dtype": "bfloat16",
    },
    "qwen2": {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_attention_heads": 28,
        "num_hidden_layers": 28,
        "num_key_value_heads": 4,
        "max_position_embeddings": 32768,
        "rope_theta": 1000000.0,
        "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
        "vocab_size": 152064,
        "torch_dtype": "bfloat16",
    },
}
folder = tempfile.mkdtemp()
paths = {}
for name, config in configs.items():
    paths[name] = os.path.join(folder, f"{name}_config.json")
    with open(paths[name], "w", encoding="utf-8") as fh:
        json.dump(config, fh, indent=2)

# %%
# The command, run on each file (``--format png``; the default writes PDF
# and PNG):
for name, path in paths.items():
    out = os.path.join(folder, name)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli.main(["rope-scaling", "--hf-config", path, "--out", out, "--format", "png"])
    print(f"$ posenc-viz rope-scaling --hf-config {name}_config.json --out {name} --format png")
    print(buf.getvalue().replace(folder + os.sep, "").strip(), f"(exit {code})")

# %%
# The same figures from Python: :func:`posenc.scaling.from_hf` gives the
# keyword arguments of :func:`posenc.rope_frequencies`, and
# :func:`posenc_viz.plot_rope_scaling` draws them.  Llama 3 keeps the
# wavelengths shorter than 8192 / 4 = 2048 positions as they are, makes those
# longer than 8192 eight times longer, and blends in between.  YaRN keeps the
# pairs that turn more than 32 times within the original context, stretches
# those that turn less than once by its factor, and ramps in between.  The
# dotted line marks the original context.
fig, axes = plt.subplots(1, 2, figsize=(7, 3), layout="constrained", sharey=True)
for ax, (name, path) in zip(axes, paths.items()):
    with open(path, encoding="utf-8") as fh:
        kwargs = scaling.from_hf(json.load(fh))
    print(name, kwargs)
    s = kwargs["scaling"]
    label = f"{name} ({type(s).__name__} ×{s.factor:g})"
    posenc_viz.plot_rope_scaling(kwargs["dim"], {label: s}, base=kwargs["base"], ax=ax)
axes[1].set_ylabel(None)
shutil.rmtree(folder)  # the files were only needed to show the reading
plt.show()
