"""The RoPE fields of released checkpoints' ``config.json`` files.

Provenance: written down by hand from the ``config.json`` files the model
authors published on the Hugging Face Hub (the repository id is each entry's
key), keeping the keys :func:`posenc.scaling.from_hf` and transformers' rotary
modules read (``model_type``, the head sizes, ``max_position_embeddings``,
``rope_theta``, ``rope_scaling`` / ``rope_parameters`` exactly as spelled in
the file, the partial-rotary keys, the local bases, ``text_config`` nesting),
and dropping the rest (vocabulary, layer counts, weights' dtypes...).  Where
a file was revised (Phi-3's ``"su"`` became ``"longrope"``, Qwen2.5-VL's
``rope_scaling`` gained ``"rope_type"`` beside ``"type"``) both revisions
are listed.  Two entries are what a model card tells users to add
(``card:`` in the key: Qwen2.5's and Qwen3's YaRN).

The per-frequency lists of LongRoPE (``short_factor`` / ``long_factor``) of
Phi-3-mini-128k and Phi-3.5-mini are the published values as recalled; the
lists of Phi-3-medium-128k, Phi-3.5-MoE and Phi-4-mini are not reproduced:
``_ramp`` stands in for them with the published length (what the test
checks, the spelling and the reading of each key, does not depend on the
values: posenc and the model's module get the same lists).

``expect`` (not a key of the file): ``"match"`` (the default) or the text
``from_hf``'s refusal must contain.  ``test_hf_models.py`` passes each entry
through its configuration class (as ``AutoConfig.from_pretrained`` does) and
as a dictionary, and compares ``from_hf`` with the model's own rotary module.
"""

from __future__ import annotations


def _ramp(n: int, lo: float, hi: float) -> list[float]:
    """A stand-in for a LongRoPE factor list of ``n`` entries (see above)."""
    return [round(lo + (hi - lo) * i / (n - 1), 4) for i in range(n)]


_PHI3_MINI_128K_SHORT = [
    1.1, 1.1, 1.1, 1.3000000000000003, 1.3500000000000003, 1.3500000000000003, 1.4000000000000004,
    1.5500000000000005, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.0500000000000007, 2.0500000000000007,
    2.0500000000000007, 2.0500000000000007, 2.0500000000000007, 2.0500000000000007, 2.1000000000000005,
    2.1000000000000005, 2.1500000000000004, 2.25, 2.25, 2.25, 2.25, 2.25, 2.3999999999999995,
    2.4499999999999993, 2.499999999999999, 2.6999999999999984, 2.6999999999999984, 2.7499999999999982,
    2.799999999999998, 2.8999999999999977, 3.049999999999997,
]  # fmt: skip
_PHI3_MINI_128K_LONG = [
    1.0700000524520874, 1.1200000047683716, 1.149999976158142, 1.4199999570846558, 1.5699999332427979,
    1.7999999523162842, 2.129999876022339, 2.129999876022339, 3.009999990463257, 5.910000324249268,
    6.950000286102295, 9.070000648498535, 9.930000305175781, 10.710000038146973, 11.130000114440918,
    14.609999656677246, 15.409998893737793, 19.809999465942383, 37.279998779296875, 38.279998779296875,
    38.599998474121094, 40.12000274658203, 46.20000457763672, 50.940006256103516, 53.66000747680664,
    54.9373893737793, 56.89738845825195, 57.28738784790039, 59.98738479614258, 60.86738586425781,
    60.887386322021484, 61.71739196777344, 62.91739273071289, 62.957393646240234, 63.41739273071289,
    63.8173942565918, 63.83739471435547, 63.897396087646484, 63.93739700317383, 64.06739807128906,
    64.11434936523438, 64.12435150146484, 64.15435028076172, 64.19435119628906, 64.24435424804688,
    64.57435607910156, 64.69000244140625, 64.76000213623047,
]  # fmt: skip
_PHI35_MINI_SHORT = [
    1.0, 1.0199999809265137, 1.0299999713897705, 1.0299999713897705, 1.0499999523162842, 1.0499999523162842,
    1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0699999332427979, 1.0999999046325684,
    1.1099998950958252, 1.1599998474121094, 1.1599998474121094, 1.1699998378753662, 1.2899998426437378,
    1.339999794960022, 1.679999828338623, 1.7899998426437378, 1.8199998140335083, 1.8499997854232788,
    1.8799997568130493, 1.9099997282028198, 1.9399996995925903, 1.9899996519088745, 2.0199997425079346,
    2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346,
    2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,
    2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0799996852874756,
    2.0899996757507324, 2.189999580383301, 2.2199995517730713, 2.5899994373321533, 2.729999542236328,
    2.749999523162842, 2.839999437332153,
]  # fmt: skip
_PHI35_MINI_LONG = [
    1.0800000429153442, 1.1100000143051147, 1.1399999856948853, 1.340000033378601, 1.5899999141693115,
    1.600000023841858, 1.6200000047683716, 2.620000123977661, 3.2300000190734863, 3.2300000190734863,
    4.789999961853027, 7.400000095367432, 7.700000286102295, 9.09000015258789, 12.199999809265137,
    17.670000076293945, 24.46000099182129, 28.57000160217041, 30.420001983642578, 30.840002059936523,
    32.590003967285156, 32.93000411987305, 42.320003509521484, 44.96000289916992, 50.340003967285156,
    50.45000457763672, 57.55000305175781, 57.93000411987305, 58.21000289916992, 60.1400032043457,
    62.61000442504883, 62.62000274230957, 62.71000289916992, 63.1400032043457, 63.1400032043457,
    63.77000427246094, 63.93000411987305, 63.96000289916992, 63.970001220703125, 64.02999877929688,
    64.06999969482422, 64.08000183105469, 64.12000274230957, 64.41000366210938, 64.4800033569336,
    64.51000213623047, 64.52999877929688, 64.83999633666992,
]  # fmt: skip

_LLAMA31 = {
    "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192, "rope_type": "llama3",
}  # fmt: skip
_LLAMA32 = {**_LLAMA31, "factor": 32.0}
_DEEPSEEK_YARN = {
    "beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
    "original_max_position_embeddings": 4096, "type": "yarn",
}  # fmt: skip

#: repository id -> the RoPE fields of its config.json
CHECKPOINTS: dict[str, dict] = {
    # ------------------------------------------------------------ Llama
    "meta-llama/Llama-2-7b-hf": {
        "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32,
        "max_position_embeddings": 4096, "rope_theta": 10000.0, "rope_scaling": None,
    },
    "meta-llama/Llama-2-70b-hf": {
        "model_type": "llama", "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 8,
        "max_position_embeddings": 4096, "rope_theta": 10000.0, "rope_scaling": None,
    },
    "codellama/CodeLlama-7b-hf": {
        "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 16384,
        "rope_theta": 1000000, "rope_scaling": None,
    },
    "lmsys/vicuna-7b-v1.5-16k": {
        "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
        "rope_scaling": {"factor": 4.0, "type": "linear"},
    },
    "deepseek-ai/deepseek-coder-6.7b-base": {
        "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 16384,
        "rope_theta": 100000, "rope_scaling": {"factor": 4.0, "type": "linear"},
    },
    "meta-llama/Meta-Llama-3-8B": {
        "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 8192, "rope_theta": 500000.0, "rope_scaling": None,
    },
    "meta-llama/Llama-3.1-8B": {
        "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": _LLAMA31,
    },
    "meta-llama/Llama-3.1-70B": {
        "model_type": "llama", "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": _LLAMA31,
    },
    "meta-llama/Llama-3.2-1B": {
        "model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32, "head_dim": 64,
        "max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": _LLAMA32,
    },
    "meta-llama/Llama-3.2-3B": {
        "model_type": "llama", "hidden_size": 3072, "num_attention_heads": 24, "head_dim": 128,
        "max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": _LLAMA32,
    },
    "meta-llama/Llama-3.3-70B-Instruct": {
        "model_type": "llama", "hidden_size": 8192, "num_attention_heads": 64, "head_dim": 128,
        "max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": _LLAMA31,
    },
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": {
        "model_type": "llama4",
        "text_config": {
            "model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
            "max_position_embeddings": 10485760, "rope_theta": 500000.0,
            "rope_scaling": {
                "factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                "original_max_position_embeddings": 8192, "rope_type": "llama3",
            },
        },
    },
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": {
        "model_type": "llama4",
        "text_config": {
            "model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
            "max_position_embeddings": 1048576, "rope_theta": 500000.0, "rope_scaling": None,
        },
    },
    "tiiuae/Falcon3-7B-Base": {
        "model_type": "llama", "hidden_size": 3072, "num_attention_heads": 12, "head_dim": 256,
        "max_position_embeddings": 32768, "rope_theta": 1000042, "rope_scaling": None,
    },
    # ------------------------------------------------------------ Mistral
    "mistralai/Mistral-7B-v0.1": {
        "model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 32768, "rope_theta": 10000.0, "sliding_window": 4096,
    },
    "mistralai/Mistral-7B-Instruct-v0.3": {
        "model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 32768, "rope_theta": 1000000.0, "sliding_window": None,
    },
    "mistralai/Mistral-Nemo-Base-2407": {
        "model_type": "mistral", "hidden_size": 5120, "num_attention_heads": 32, "head_dim": 128,
        "max_position_embeddings": 1024000, "rope_theta": 1000000.0,
    },
    "mistralai/Mixtral-8x7B-v0.1": {
        "model_type": "mixtral", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 32768, "rope_theta": 1000000.0,
    },
    "mistralai/Mixtral-8x22B-v0.1": {
        "model_type": "mixtral", "hidden_size": 6144, "num_attention_heads": 48, "num_key_value_heads": 8,
        "max_position_embeddings": 65536, "rope_theta": 1000000.0,
    },
    # ------------------------------------------------------------ Qwen
    "Qwen/Qwen1.5-7B": {
        "model_type": "qwen2", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 32768,
        "rope_theta": 1000000.0,
    },
    "Qwen/Qwen2-7B": {
        "model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "max_position_embeddings": 131072, "rope_theta": 1000000.0,
    },
    "Qwen/Qwen2.5-7B-Instruct": {
        "model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rope_scaling": None,
    },
    "Qwen/Qwen2.5-7B-Instruct card:yarn": {
        "model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "max_position_embeddings": 32768, "rope_theta": 1000000.0,
        "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
    },
    "Qwen/Qwen2.5-72B": {
        "model_type": "qwen2", "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "rope_theta": 1000000.0,
    },
    "Qwen/Qwen3-8B": {
        "model_type": "qwen3", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
        "max_position_embeddings": 40960, "rope_theta": 1000000, "rope_scaling": None,
    },
    "Qwen/Qwen3-8B card:yarn": {
        "model_type": "qwen3", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
        "max_position_embeddings": 40960, "rope_theta": 1000000,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    },
    "Qwen/Qwen3-30B-A3B": {
        "model_type": "qwen3_moe", "hidden_size": 2048, "num_attention_heads": 32, "head_dim": 128,
        "max_position_embeddings": 40960, "rope_theta": 1000000.0, "rope_scaling": None,
    },
    "Qwen/Qwen3-235B-A22B-Instruct-2507": {
        "model_type": "qwen3_moe", "hidden_size": 4096, "num_attention_heads": 64, "head_dim": 128,
        "max_position_embeddings": 262144, "rope_theta": 5000000, "rope_scaling": None,
    },
    "Qwen/Qwen2-VL-2B-Instruct": {
        "model_type": "qwen2_vl", "hidden_size": 1536, "num_attention_heads": 12, "num_key_value_heads": 2,
        "max_position_embeddings": 32768, "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    },
    "Qwen/Qwen2-VL-7B-Instruct": {
        "model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "max_position_embeddings": 32768, "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    },
    "Qwen/Qwen2.5-VL-7B-Instruct": {
        "model_type": "qwen2_5_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "max_position_embeddings": 128000, "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    },
    "Qwen/Qwen2.5-VL-3B-Instruct (revised)": {
        "model_type": "qwen2_5_vl", "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 2,
        "max_position_embeddings": 128000, "rope_theta": 1000000.0,
        "rope_scaling": {"mrope_section": [16, 24, 24], "rope_type": "default", "type": "default"},
    },
    "Qwen/Qwen2.5-VL-72B-Instruct": {
        "model_type": "qwen2_5_vl", "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 8,
        "max_position_embeddings": 128000, "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    },
    "Qwen/Qwen3-VL-8B-Instruct": {
        "model_type": "qwen3_vl",
        "text_config": {
            "model_type": "qwen3_vl_text", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
            "max_position_embeddings": 262144, "rope_theta": 5000000,
            "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"},
        },
    },
    "Qwen/Qwen3-VL-30B-A3B-Instruct": {
        "model_type": "qwen3_vl_moe",
        "text_config": {
            "model_type": "qwen3_vl_moe_text", "hidden_size": 2048, "num_attention_heads": 32, "head_dim": 128,
            "max_position_embeddings": 262144, "rope_theta": 5000000,
            "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"},
        },
    },
    # ------------------------------------------------------------ Gemma
    "google/gemma-2-9b": {
        "model_type": "gemma2", "hidden_size": 3584, "num_attention_heads": 16, "head_dim": 256,
        "max_position_embeddings": 8192, "rope_theta": 10000.0, "sliding_window": 4096,
    },
    "google/gemma-2-27b": {
        "model_type": "gemma2", "hidden_size": 4608, "num_attention_heads": 32, "head_dim": 128,
        "max_position_embeddings": 8192, "rope_theta": 10000.0, "sliding_window": 4096,
    },
    "google/gemma-3-1b-it": {
        "model_type": "gemma3_text", "hidden_size": 1152, "num_attention_heads": 4, "head_dim": 256,
        "max_position_embeddings": 32768, "rope_theta": 1000000, "rope_local_base_freq": 10000,
        "rope_scaling": None, "sliding_window": 512, "sliding_window_pattern": 6, "num_hidden_layers": 26,
    },
    "google/gemma-3-4b-it": {
        "model_type": "gemma3",
        "text_config": {
            "model_type": "gemma3_text", "hidden_size": 2560, "num_attention_heads": 8, "head_dim": 256,
            "max_position_embeddings": 131072, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024,
            "sliding_window_pattern": 6, "num_hidden_layers": 34,
        },
    },
    "google/gemma-3-27b-it": {
        "model_type": "gemma3",
        "text_config": {
            "model_type": "gemma3_text", "hidden_size": 5376, "num_attention_heads": 32, "head_dim": 128,
            "max_position_embeddings": 131072, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024,
            "sliding_window_pattern": 6, "num_hidden_layers": 62,
        },
    },
    "google/gemma-3n-E4B-it": {
        "model_type": "gemma3n",
        "text_config": {
            "model_type": "gemma3n_text", "hidden_size": 2048, "num_attention_heads": 8, "head_dim": 256,
            "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
            "rope_scaling": None, "sliding_window": 512, "num_hidden_layers": 35,
        },
    },
    # ------------------------------------------------------------ Phi
    "microsoft/Phi-3-mini-4k-instruct": {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 4096,
        "original_max_position_embeddings": 4096, "rope_theta": 10000.0, "rope_scaling": None,
    },
    "microsoft/Phi-3-mini-128k-instruct (first release)": {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
        "rope_scaling": {"long_factor": _PHI3_MINI_128K_LONG, "short_factor": _PHI3_MINI_128K_SHORT, "type": "su"},
    },
    "microsoft/Phi-3-mini-128k-instruct": {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
        "rope_scaling": {
            "long_factor": _PHI3_MINI_128K_LONG, "short_factor": _PHI3_MINI_128K_SHORT, "type": "longrope",
        },
    },
    "microsoft/Phi-3-medium-128k-instruct": {
        "model_type": "phi3", "hidden_size": 5120, "num_attention_heads": 40, "num_key_value_heads": 10,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
        "rope_scaling": {"long_factor": _ramp(64, 1.0, 25.0), "short_factor": _ramp(64, 1.0, 1.5), "type": "longrope"},
    },
    "microsoft/Phi-3.5-mini-instruct": {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
        "rope_scaling": {"long_factor": _PHI35_MINI_LONG, "short_factor": _PHI35_MINI_SHORT, "type": "longrope"},
    },
    "microsoft/Phi-3.5-MoE-instruct": {
        "model_type": "phimoe", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
        "rope_scaling": {
            "long_factor": _ramp(64, 1.0, 64.0), "long_mscale": 1.243163121016122,
            "original_max_position_embeddings": 4096, "short_factor": _ramp(64, 1.0, 3.0),
            "short_mscale": 1.243163121016122, "type": "longrope",
        },
    },
    "microsoft/Phi-4-mini-instruct": {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 24, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
        "partial_rotary_factor": 0.75,
        "rope_scaling": {"long_factor": _ramp(48, 1.0, 60.0), "short_factor": _ramp(48, 1.0, 2.0), "type": "longrope"},
    },
    "microsoft/phi-4": {
        "model_type": "phi3", "hidden_size": 5120, "num_attention_heads": 40, "num_key_value_heads": 10,
        "max_position_embeddings": 16384, "original_max_position_embeddings": 16384, "rope_theta": 250000,
        "rope_scaling": None,
    },
    # ------------------------------------------------------------ DeepSeek
    "deepseek-ai/DeepSeek-V2-Lite": {
        "model_type": "deepseek_v2", "hidden_size": 2048, "num_attention_heads": 16, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "kv_lora_rank": 512, "q_lora_rank": None,
        "max_position_embeddings": 163840, "rope_theta": 10000,
        "rope_scaling": {**_DEEPSEEK_YARN, "mscale": 0.707, "mscale_all_dim": 0.707},
    },
    "deepseek-ai/DeepSeek-V3": {
        "model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "kv_lora_rank": 512, "q_lora_rank": 1536,
        "max_position_embeddings": 163840, "rope_theta": 10000, "rope_scaling": _DEEPSEEK_YARN,
    },
    # ------------------------------------------------------------ others
    "THUDM/glm-4-9b-chat-hf": {
        "model_type": "glm", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
        "max_position_embeddings": 131072, "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
    },
    "THUDM/GLM-4-9B-0414": {
        "model_type": "glm4", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
        "max_position_embeddings": 32768, "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
    },
    "CohereForAI/c4ai-command-r-v01": {
        "model_type": "cohere", "hidden_size": 8192, "num_attention_heads": 64, "max_position_embeddings": 131072,
        "rope_theta": 8000000.0, "rope_scaling": None,
    },
    "CohereForAI/c4ai-command-r7b-12-2024": {
        "model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 132096, "rope_theta": 50000, "rope_scaling": None, "sliding_window": 4096,
    },
    "allenai/OLMo-2-1124-7B": {
        "model_type": "olmo2", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
        "rope_theta": 500000, "rope_scaling": None,
    },
    "tiiuae/falcon-7b": {
        "model_type": "falcon", "hidden_size": 4544, "n_head": 71, "alibi": False, "multi_query": True,
        "new_decoder_architecture": False, "parallel_attn": True,
    },
    "stabilityai/stablelm-2-1_6b": {
        "model_type": "stablelm", "hidden_size": 2048, "num_attention_heads": 32, "max_position_embeddings": 4096,
        "partial_rotary_factor": 0.25, "rope_theta": 10000,
    },
    "EleutherAI/pythia-1.4b": {
        "model_type": "gpt_neox", "hidden_size": 2048, "num_attention_heads": 16, "max_position_embeddings": 2048,
        "rotary_pct": 0.25, "rotary_emb_base": 10000,
    },
    "EleutherAI/gpt-j-6b": {
        "model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64, "n_positions": 2048,
    },
    "ibm-granite/granite-3.0-8b-base": {
        "model_type": "granite", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 4096, "rope_theta": 10000.0, "rope_scaling": None,
    },
    "openai/gpt-oss-20b": {
        "model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64, "head_dim": 64,
        "max_position_embeddings": 131072, "rope_theta": 150000,
        "rope_scaling": {
            "beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
            "rope_type": "yarn", "truncate": False,
        },
    },
}  # fmt: skip

#: entries whose refusal is documented: repository id -> text of the refusal
EXPECT: dict[str, str] = {}

#: entries transformers' configuration class refuses (so no model runs
#: them): repository id -> the revision of the file that transformers runs,
#: which from_hf must read the same
TRANSFORMERS_REFUSES: dict[str, str] = {
    # transformers 5 standardizes the original length before it turns "su" into "longrope"
    "microsoft/Phi-3-mini-128k-instruct (first release)": "microsoft/Phi-3-mini-128k-instruct",
}
