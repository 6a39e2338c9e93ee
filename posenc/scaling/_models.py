"""The model tables of :func:`posenc.scaling.from_hf`: what the models of
``transformers`` read from their configurations (keys, aliases, defaults,
multimodal sections), the part that grows with transformers."""

from __future__ import annotations

__all__ = [
    "HF_TYPES",
    "TYPE_KEYS",
    "COMMON_KEYS",
    "MROPE_KEYS",
    "TABLE_NEUTRAL_KEYS",
    "MODEL_KEYS",
    "HIDDEN",
    "HEADS",
    "HEAD_DIMS",
    "ATTRIBUTE_MAP",
    "DEFAULT_THETA",
    "PARTIAL_DEFAULTS",
    "LOCAL_GLOBAL",
    "MROPE",
    "MROPE_OTHER",
    "FIXED_TABLE",
    "ROTARY_DIM",
    "AXIAL",
    "AXIAL_REFUSED",
    "AXIAL_HEAD",
    "TYPE_CONVERSIONS",
    "CHANGED_IN",
    "FUYU_TEXT_KEYS",
    "FUYU_TEXT_DEFAULTS",
]

HF_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "longrope", "su", "proportional")

#: the keys of a RoPE entry (``rope_parameters`` / ``rope_scaling``) each
#: rope type reads, besides ``COMMON_KEYS``
TYPE_KEYS: dict[str, tuple[str, ...]] = {
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor",),
    "yarn": (
        "factor",
        "original_max_position_embeddings",
        "attention_factor",
        "beta_fast",
        "beta_slow",
        "mscale",
        "mscale_all_dim",
        "truncate",
    ),
    "llama3": ("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
    "longrope": ("short_factor", "long_factor", "original_max_position_embeddings", "factor", "attention_factor"),
    "su": ("short_factor", "long_factor", "original_max_position_embeddings", "factor", "attention_factor"),
    "proportional": ("factor",),
}
COMMON_KEYS = ("rope_type", "type", "rope_theta", "partial_rotary_factor")
MROPE_KEYS = ("mrope_section", "mrope_interleaved", "interleaved")
#: keys of a RoPE entry known not to change the cos / sin tables (the
#: allowlist: any other key is refused by name)
TABLE_NEUTRAL_KEYS = {
    # Ministral 3, Mistral 4: the queries are scaled by 1 + beta log(1 + floor(p / L0)) after the rotation
    "llama_4_scaling_beta": "scales the queries after the rotation",
    # Ministral 3, Mistral 4: the lengths transformers reads are the top-level ones
    "max_position_embeddings": "transformers reads the top-level max_position_embeddings",
}
#: keys one family's rotary module reads besides the standard ones:
#: model type -> {rope type: keys}
MODEL_KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    "phimoe": {"longrope": ("short_mscale", "long_mscale"), "su": ("short_mscale", "long_mscale")},
    **dict.fromkeys(("hunyuan_v1_dense", "hunyuan_v1_moe", "hunyuan_vl", "hunyuan_vl_text"), {"dynamic": ("alpha",)}),
}

#: keys a released ``config.json`` may spell differently (first found wins;
#: read for config dictionaries only, after the model's attribute aliases)
HIDDEN = ("hidden_size", "n_embd", "d_model")
HEADS = ("num_attention_heads", "n_head", "n_heads")
#: head sizes before ``hidden_size // num_attention_heads`` in a config
#: dictionary: MLA's rotated part (DeepSeek), Zamba2's attention heads,
#: JetMoE's key/value channels
HEAD_DIMS = ("head_dim", "qk_rope_head_dim", "attention_head_dim", "kv_channels")

#: the ``attribute_map`` aliases of transformers' configuration classes for
#: the keys posenc reads (transformers 5.24): a config object resolves them
#: itself, a config dictionary through this table
ATTRIBUTE_MAP: dict[str, dict[str, str]] = {
    **dict.fromkeys(
        ("cohere_compass_vision", "ernie4_5_vl_moe_vision", "exaone4_5_vision", "glm4v_vision", "glm4v_moe_vision",
         "glm5_next_vision", "glm_ocr_vision", "qwen2_5_omni_vision_encoder", "qwen2_5_vl_vision", "qwen2_vl_vision",
         "qwen3_5_vision", "qwen3_5_moe_vision", "qwen3_omni_moe_vision_encoder", "qwen3_vl_vision",
         "qwen3_vl_moe_vision", "qwen4_exp_vision"),
        {"num_attention_heads": "num_heads"},
    ),
    "bailing_hybrid": {"max_position_embeddings": "model_max_length"},
    "codegen": {"max_position_embeddings": "n_positions", "hidden_size": "n_embd", "num_attention_heads": "n_head"},
    "dbrx": {"num_attention_heads": "n_heads", "hidden_size": "d_model", "max_position_embeddings": "max_seq_len"},
    "glm4_moe_lite": {"head_dim": "qk_rope_head_dim"},
    "gptj": {"max_position_embeddings": "n_positions", "hidden_size": "n_embd", "num_attention_heads": "n_head"},
    "jetmoe": {"head_dim": "kv_channels"},
    "kimi_linear": {"max_position_embeddings": "model_max_length"},
    "moonshine": {"num_attention_heads": "decoder_num_attention_heads"},
    "zamba": {"head_dim": "attention_head_dim"},
    "zamba2": {"head_dim": "attention_head_dim"},
}

#: transformers' default ``rope_theta`` of the configuration classes whose
#: default is not 10000 (``default_theta``), for config dictionaries without one
DEFAULT_THETA: dict[str, float] = {
    "apertus": 12e6, "apertus1p5_text": 12e6, "bitnet": 5e5, "blt": 5e5, "cohere": 5e5, "cosmos3_edge_text": 1e8,
    "csm": 5e5, "cwm": 1e6, "dots3_note_text": 8e7, "emu3_text_model": 1e6,
    "eomt_dinov3": 100.0, "ernie4_5": 5e5, "ernie4_5_moe": 5e5,
    "ernie4_5_vl_moe_text": 5e5, "evolla": 5e5, "exaone": 5e5, "flex_olmo": 5e5, "fuyu": 25000.0, "gpt_oss": 150000.0,
    "gemma4_vision": 100.0, "gte": 160000.0, "helium": 1e5, "hy_v3": 11158840.0, "jina_embeddings_v3": 20000.0,
    "lfm2": 1e6, "lfm2_moe": 1e6, "lfm3": 1e6, "lfm3_vl_vision": 1e6, "llama4_text": 5e5, "longcat_flash": 1e7,
    "minimax": 1e6, "minimax_m2": 5e6, "minimax_m3_vl_text": 5e6, "mixtral": 1e6, "mllama_text_model": 5e5,
    "muse_glimmer_assistant": 5e5, "nomic_bert": 1000.0, "olmo3": 5e5, "openai_privacy_filter": 150000.0,
    "paddleocr_vl_text": 5e5, "pe_audio_encoder": 20000.0, "pe_audio_video_encoder": 20000.0,
    "pe_video_encoder": 20000.0, "phimoe": 1e6,
    "qwen2_5_omni_talker": 1e6, "qwen2_5_omni_text": 1e6, "qwen2_5_vl_text": 1e6, "qwen2_vl_text": 1e6,
    "qwen3_omni_moe_text": 1e6, "qwen3_vl_moe_text": 5e5, "qwen3_vl_text": 5e5, "sarvam_moe": 8e6, "smollm3": 2e6,
    "solar_open": 1e6,
}  # fmt: skip

#: Fuyu (a configuration without ``text_config``): the keys its configuration
#: class moves from the top level into its language model's (Persimmon)
#: configuration, which then also gets ``partial_rotary_factor`` 0.5; every
#: other top-level key (``partial_rotary_factor``, ``rope_parameters``,
#: ``head_dim``, ...) is left out of it.  Without any of them the language
#: model is built from ``FUYU_TEXT_DEFAULTS`` (the keys of them posenc reads)
FUYU_TEXT_KEYS = (
    "vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "hidden_act", "initializer_range", "layer_norm_eps", "use_cache", "qk_layernorm",
    "hidden_dropout", "attention_dropout", "eos_token_id", "rope_scaling", "rope_theta",
)  # fmt: skip
FUYU_TEXT_DEFAULTS = {"hidden_size": 4096, "num_attention_heads": 64, "max_position_embeddings": 16384}

#: transformers' per-model defaults for keys older ``config.json`` files omit
PARTIAL_DEFAULTS = {"gpt_neox": 0.25, "stablelm": 0.25, "persimmon": 0.5}
#: (global, local) default thetas of the models with a sliding-window base
LOCAL_GLOBAL = {
    "gemma3_text": (1e6, 1e4),
    "gemma3n_text": (1e6, 1e4),
    "t5gemma2_text": (1e6, 1e4),
    "t5gemma2_decoder": (1e6, 1e4),
    "t5gemma2_encoder": (1e6, 1e4),
    "modernbert": (160000.0, 1e4),
    "modernbert-decoder": (160000.0, 1e4),
}

#: multimodal RoPE of the Qwen2-VL family: model type -> (the sections
#: transformers uses when the config has none, interleaved).  Whether the
#: sections are interleaved is fixed by each model's rotary module
#: (transformers reads no ``mrope_interleaved`` key).
MROPE = {
    **dict.fromkeys(
        ("qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text", "qwen2_5_omni", "qwen2_5_omni_thinker",
         "qwen2_5_omni_text", "qwen2_5_omni_talker", "paddleocr_vl", "paddleocr_vl_text"),
        ((16, 24, 24), False),
    ),
    **dict.fromkeys(
        ("glm4v", "glm4v_text", "glm4v_moe", "glm4v_moe_text", "glm_image", "glm_image_text", "glm_ocr", "glm_ocr_text",
         "glm46v"),
        ((8, 12, 12), False),
    ),
    **dict.fromkeys(
        ("qwen3_vl", "qwen3_vl_text", "qwen3_vl_moe", "qwen3_vl_moe_text", "qwen3_omni_moe", "qwen3_omni_moe_text",
         "qwen3_omni_moe_thinker", "qwen3_omni_moe_talker", "cosmos3_edge", "cosmos3_edge_text", "cohere_compass",
         "cohere_compass_text"),
        ((24, 20, 20), True),
    ),
    **dict.fromkeys(
        ("qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "qwen4_exp", "qwen4_exp_text"),
        ((11, 11, 10), True),
    ),
    # HY-V4-VL: the configuration class sets [12, 10, 10] when the config has none
    **dict.fromkeys(("hy_v4_vl", "hy_v4_vl_text"), ((12, 10, 10), True)),
}  # fmt: skip
#: multimodal RoPE that recombines the rows another way: model type ->
#: (how, whether the module uses it even without ``mrope_section``)
MROPE_OTHER = {
    "ernie4_5_vl_moe": ("height / width pairs interleaved, then the temporal block", True),
    "ernie4_5_vl_moe_text": ("height / width pairs interleaved, then the temporal block", True),
    "hunyuan_vl": ("sections over the doubled table", False),
    "hunyuan_vl_text": ("sections over the doubled table", False),
    "neomme": ("two rows interleaved pair by pair", True),
}

#: models whose rotary module reads no RoPE entry: model type -> (what it
#: reads, its fixed base or None for the config's ``rope_theta``)
FIXED_TABLE = {
    "gptj": ("a table of rotary_dim columns with base 10000", 10000.0),
    "codegen": ("a table of rotary_dim columns with base 10000", 10000.0),
    "esm": ("the default table with the top-level rope_theta", None),
}
#: how each model type reads ``rotary_dim``: the table's width (GPT-J,
#: CodeGen) or ``partial_rotary_factor = rotary_dim / head_dim`` (MiniMax-M2);
#: any other model type with a ``rotary_dim`` is refused
ROTARY_DIM = {"gptj": "width", "codegen": "width", "minimax_m2": "partial"}

#: the vision towers whose rotary module builds a RoPE over several axes
#: (transformers' ``rope_type`` ``"axial"``, and Llama 4's and DINOv3's own
#: modules): model type -> how the module recomposes the axes' angles
#: (read from the modeling code of transformers 5.24), with ``hd`` the head
#: size and ``f = rope_frequencies(hd // 2, theta)``:
#:
#: * ``"hw"``: ``cat(h f, w f)`` doubled (``rotate_half``): axes ``[hd/2, hd/2]``, ``layout="half"``
#: * ``"strided"``: Pixtral, one RoPE of the head dealt out, h the even and w the odd frequencies
#: * ``"thw"``: MiniMax-M3-VL, three axes of ``2 * ((hd // 3) // 2)`` each, the rest of the head unrotated
#: * ``"wh interleaved"`` / ``"wh half"``: Inkling2 / Step3p7, ``cat(w f, h f)`` (the axes of the
#:   module's ids reversed) in the interleaved / half layout
#: * ``"alternating"``: Kimi-K2.5, ``w f0, h f0, w f1, h f1, ...`` doubled
#: * ``"pairs"``: SAM3 ViT, SAM2 / SAM3-tracker / EdgeTAM video, ``cat(col0 f, col1 f)``, each angle twice
#: * ``"llama4"``: Llama 4 vision (``rope_type`` ``"default"``): ``cat(x f, y f)``, each angle twice
#: * ``"dinov3"``: DINOv3 (``rope_theta`` at the top level): ``2 pi cat(y f, x f)`` doubled
AXIAL: dict[str, str] = {
    **dict.fromkeys(
        ("qwen2_vl_vision", "qwen2_5_vl_vision", "qwen2_5_omni_vision_encoder", "qwen3_vl_vision",
         "qwen3_vl_moe_vision", "qwen3_omni_moe_vision_encoder", "qwen3_5_vision", "qwen3_5_moe_vision",
         "qwen4_exp_vision", "glm4v_vision", "glm4v_moe_vision", "glm_ocr_vision", "glm5_next_vision",
         "ernie4_5_vl_moe_vision", "paddleocr_vl_vision", "exaone4_5_vision", "lfm3_vl_vision", "mlcd_vision_model",
         "muse_glimmer_vision", "muse_spark_vision", "cohere_compass_vision", "dots3_note_vision_encoder",
         "video_llama_3_vision"),
        "hw",
    ),
    "pixtral": "strided",
    "minimax_m3_vl_vision": "thw",
    "inkling2_vision": "wh interleaved",
    "step3p5_vision": "wh half",
    "kimi_k25_vision": "alternating",
    **dict.fromkeys(("sam3_vit_model", "sam2_video", "sam3_tracker_video", "edgetam_video"), "pairs"),
    "llama4_vision_model": "llama4",
    **dict.fromkeys(("dinov3_vit", "eomt_dinov3"), "dinov3"),
}  # fmt: skip
#: axial vision towers posenc refuses: model type -> why, and what to do instead
AXIAL_REFUSED = {
    "gemma4_vision": (
        "its rotary module rotates each axis by rotate_half inside its own block (h h w w), which no single "
        "layout of apply_rope expresses; rotate x[..., :hd // 2] by rope_cos_sin(h, hd // 2, base=theta) and "
        "x[..., hd // 2:] by rope_cos_sin(w, hd // 2, base=theta), each with layout='half'"
    ),
}
#: how an axial module reads its head size when not ``head_dim`` or
#: ``hidden_size // num_attention_heads``: model type -> reading
AXIAL_HEAD = {
    "qwen2_vl_vision": "embed_dim",
    **dict.fromkeys(("sam2_video", "sam3_tracker_video", "edgetam_video"), "memory_attention"),
    # these modules never read head_dim
    **dict.fromkeys(("llama4_vision_model", "dinov3_vit", "eomt_dinov3"), "hidden_size"),
}

#: the pairs ``(type, rope_type)`` that transformers' configuration classes
#: themselves write into one RoPE entry from a released ``config.json``'s older
#: ``type`` (transformers reads ``rope_type``), each with the model types that
#: write it (None: any model type), where both readings give one table:
#:
#: * ``("mrope", "default")``: Qwen2-VL and Qwen2.5-VL turn the legacy
#:   ``{"type": "mrope", "mrope_section": [...]}`` into a default RoPE over
#:   the sections (posenc reads ``"mrope"`` with sections the same way);
#: * ``("su", "longrope")``: the first name of LongRoPE (Phi-3);
#: * ``("yarn", "longrope")``: Phi-3's and Phi-4-multimodal's older
#:   ``config.json`` (their modules run LongRoPE);
#: * ``("default", "axial")``: the vision towers whose class turns
#:   ``"default"`` into its own axial rope type.
#:
#: Any other pair that differs is a real conflict: transformers 4 copied
#: ``type`` over ``rope_type`` (LlamaConfig's compatibility code), transformers 5
#: keeps ``rope_type``, so the two read different tables.
TYPE_CONVERSIONS: dict[tuple[str, str], frozenset[str] | None] = {
    ("mrope", "default"): None,  # with M-RoPE sections only (checked where it is read)
    ("su", "longrope"): None,
    ("yarn", "longrope"): frozenset({"phi3", "phi4_multimodal"}),
    ("default", "axial"): frozenset(AXIAL),
}

#: readings that changed in a transformers release: posenc reads the module
#: of that release and later, and ``from_hf`` refuses the reading while an
#: older transformers is imported (or installed), whose module gives another
#: table: name -> ((major, minor) of the first release posenc reads, what
#: the older releases compute instead)
CHANGED_IN: dict[str, tuple[tuple[int, int], str]] = {
    # Hunyuan (dense, MoE, VL): the rope type stays "dynamic", so the forward recomputes the frequencies
    "alpha": (
        (5, 20),
        (
            "keep Hunyuan's rope type 'dynamic' and recompute its frequencies as a dynamic NTK of `factor` over "
            "rope_theta (alpha dropped) once a position reaches max_position_embeddings; below that the table "
            "is the fixed NTK-alpha posenc reads (rope_cos_sin(positions, head_dim, base=rope_theta, "
            "scaling=posenc.scaling.NTK(alpha)))"
        ),
    ),
    "gpt_neox_japanese": (
        (5, 18),
        (
            "build GPT-NeoX-Japanese's table over the whole head whatever the partial factor (its attention "
            "then fails on the narrower rotated part)"
        ),
    ),
    "minimax_m3_vl_vision": (
        (5, 18),
        (
            "rotate MiniMax-M3-VL's vision ids as two axes (h, w) over the whole head, not the three axes "
            "(t, h, w) posenc reads"
        ),
    ),
    "step3p5_vision": (
        (5, 23),
        "recompose Step3p7's vision angles as cat(h f, w f), not the cat(w f, h f) posenc reads",
    ),
    # a flat config.json (the keys of the language model at the top level)
    "fuyu": (
        (5, 20),
        (
            "build Fuyu's language model configuration from Persimmon's defaults, not from the top level's "
            "rope_theta and partial_rotary_factor: read its text_config (FuyuConfig(...).text_config)"
        ),
    ),
    # the default base of a config dictionary
    **dict.fromkeys(
        ("pe_audio_encoder", "pe_audio_video_encoder", "pe_video_encoder"),
        ((5, 20), "take 10000 for a RoPE entry without rope_theta (20000 only without any RoPE entry)"),
    ),
}
