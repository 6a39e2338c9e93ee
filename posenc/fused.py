r"""posenc's exact RoPE tables in the layouts fused attention kernels read.

Most fused RoPE kernels take a table and rotate with it, so whatever the
table holds is what the model gets: handing them posenc's exact table makes
them exact (within the rounding of the table's dtype).  A few compute the
angle ``p * w`` themselves, in float32, and can only be given the
frequencies: their error grows with the position (see
:func:`rope_cache`'s notes).
"""

from __future__ import annotations

from typing import Any

from . import _checks, _compat
from ._compat import Array
from .rotary import rope_cos_sin
from .scaling import Scaling

__all__ = ["rope_cache"]

#: the layouts :func:`rope_cache` writes
FORMATS = ("vllm", "flashinfer", "flash_attn", "hf", "complex")


def _complex_dtype(dtype: Any, xp: Any) -> tuple[Any, Any]:
    """The complex dtype asked for (complex64 by default) and its real part's dtype."""
    if dtype is None:
        return xp.complex64, xp.float32
    if isinstance(dtype, str):
        dtype = getattr(xp, dtype, None) if dtype in ("complex64", "complex128") else None
    for cname, fname in (("complex64", "float32"), ("complex128", "float64")):
        ours = getattr(xp, cname)
        try:
            same = dtype == ours or _compat.native_dtype(xp, dtype) == _compat.native_dtype(xp, ours)
        except Exception:
            same = False
        if same:
            return ours, getattr(xp, fname)
    msg = f"`dtype` must be complex64 or complex128 for format='complex', got {_checks.show(dtype)}"
    raise TypeError(msg)


def rope_cache(
    n: int,
    dim: int,
    *,
    format: str,
    base: float = 10000.0,
    scaling: Scaling | None = None,
    layout: str | None = None,
    seq_len: int | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array | tuple[Array, Array]:
    r"""Exact RoPE tables of the positions 0 to n - 1, laid out for a fused kernel.

    The tables are those of :func:`posenc.rope_cos_sin` (exact angles, the
    scaling's attention factor included, as every kernel below expects it
    in the table), one value per frequency where the kernel takes it so:

    * ``"vllm"``: one array ``(n, dim)``, the cos of the ``dim / 2``
      frequencies then their sin (``cat(cos, sin)``): the ``cos_sin_cache``
      of vLLM and SGLang (their ``forward_native`` and CUDA kernels;
      ``is_neox_style`` picks the pairs);
    * ``"flashinfer"``: the same, always float32: FlashInfer's
      ``apply_rope_with_cos_sin_cache`` (it refuses other dtypes);
    * ``"flash_attn"``: ``(cos, sin)``, each ``(n, dim / 2)``: flash-attn's
      ``apply_rotary_emb`` and its pure-torch ``apply_rotary_emb_torch``
      (``interleaved`` picks the pairs);
    * ``"hf"``: ``(cos, sin)``, each ``(n, dim)``, as
      :func:`posenc.rope_cos_sin` gives them: transformers'
      ``apply_rotary_pos_emb`` (``layout="half"``, or ``"interleaved"`` for
      the models that pair neighbours with repeated tables, such as Cohere);
    * ``"complex"``: ``(n, dim / 2)`` complex64 ``cos + i sin``: the
      ``freqs_cis`` of torchtitan, Meta's Llama code and transformers'
      Llama 4 (``view_as_complex`` of neighbour pairs).

    The pairing of the features (rotate-half or neighbours) is the
    kernel's own flag for every format but ``"hf"``, whose full tables
    differ by layout: ``layout`` is read for ``"hf"`` only, and refused
    for the others.  For partial rotary (only the first ``dim`` features of
    a larger head rotated), pass the rotary width as ``dim``: every kernel
    above reads its rotary width from the table.

    Parameters
    ----------
    n : int
        Number of positions (``max_position_embeddings`` for a serving
        engine's cache).
    dim : int
        The rotary dimension (the head size, or its rotated part), a
        positive even integer.
    format : {"vllm", "flashinfer", "flash_attn", "hf", "complex"}
        The layout (see the table above).
    base : float, default 10000.0
        RoPE's base (``rope_theta``).
    scaling : posenc.scaling.Scaling, optional
        Context-extension scaling (``rope_cache(n, **posenc.scaling.from_hf(config), format=...)``
        reads a model's config).
    layout : {"half", "interleaved"}, optional
        For ``format="hf"`` only (default ``"half"``).
    seq_len : int, optional
        For the length-dependent scalings
        (:class:`~posenc.scaling.DynamicNTK`, :class:`~posenc.scaling.LongRoPE`):
        the length whose tables to build (default ``n``).  vLLM keeps the
        short and the long LongRoPE tables one after the other: build each
        with its own ``seq_len`` and concatenate them.
    dtype : dtype, optional
        The tables' dtype (default: the namespace's default float;
        ``"flashinfer"``: float32 only; ``"complex"``: complex64 (default) or
        complex128).  Half precision is computed in float32 and rounded once.
    device, xp
        Device and namespace of the tables (default: NumPy).

    Returns
    -------
    array or (array, array)
        One array for ``"vllm"``, ``"flashinfer"`` and ``"complex"``, the
        pair ``(cos, sin)`` for ``"flash_attn"`` and ``"hf"``.

    Raises
    ------
    ValueError
        An unknown ``format``, a ``layout`` with a format other than
        ``"hf"``, or a dtype other than float32 for ``"flashinfer"``.

    Notes
    -----
    Kernels that compute the angle themselves cannot be exact, whatever
    they are given: TransformerEngine's fused RoPE takes ``freqs`` (the
    angles ``p * w`` as a float32 table), FlashInfer's
    ``apply_rope`` / ``apply_llama31_rope`` (without a cache) and MLX's
    ``fast.rope`` take ``rope_theta`` or a frequency vector and form
    ``p * w`` in float32.  Give them :func:`posenc.rope_frequencies` (the
    exact frequencies, scaled); their tables are then off by up to about
    ``p * w_0 * 2**-24`` (the rounding of the largest angle): 2e-4 at
    ``p = 4096``, 7.7e-3 at 128K and 6.2e-2 at 1M positions for
    ``w_0 = 1``, where a table from this function stays within the rounding
    of its dtype at every position.

    Examples
    --------
    >>> import posenc
    >>> cache = posenc.rope_cache(3, 4, format="vllm")   # cos of the 2 frequencies, then their sin
    >>> cache.round(4)
    array([[ 1.    ,  1.    ,  0.    ,  0.    ],
           [ 0.5403,  1.    ,  0.8415,  0.01  ],
           [-0.4161,  0.9998,  0.9093,  0.02  ]])
    >>> cos, sin = posenc.rope_cache(3, 4, format="flash_attn")
    >>> cos.shape, bool((cos == cache[:, :2]).all())
    ((3, 2), True)
    >>> posenc.rope_cache(3, 4, format="complex")[2].round(4)
    array([-0.4161+0.9093j,  0.9998+0.02j  ], dtype=complex64)

    From a model's config, in torch, for vLLM's ``cos_sin_cache`` buffer:

    >>> import torch
    >>> cfg = {"head_dim": 128, "rope_theta": 500000.0, "max_position_embeddings": 8192}
    >>> posenc.rope_cache(8192, **posenc.scaling.from_hf(cfg), format="vllm", dtype=torch.bfloat16, xp=torch).shape
    torch.Size([8192, 128])
    """
    fmt = _checks.check_choice(format, "format", FORMATS)
    n = _checks.check_int(n, "n", minimum=0, maximum=_checks.MAX_ELEMENTS)
    if layout is not None and fmt != "hf":
        msg = (
            f"`layout` is read for format='hf' only, got layout={layout!r} with format={fmt!r}: the {fmt} kernels "
            "take one value per frequency and pair the features by their own flag (vLLM's is_neox_style, "
            "flash-attn's interleaved); leave `layout` out"
        )
        raise ValueError(msg)
    kw: dict[str, Any] = {"base": base, "scaling": scaling, "seq_len": seq_len, "device": device, "xp": xp}
    if fmt == "hf":
        return rope_cos_sin(n, dim, **kw, layout="half" if layout is None else layout, dtype=dtype)
    out_dtype = dtype
    if fmt == "complex":
        ctx = _compat.resolve(xp=xp, device=device, float_output=False)
        cdt, real = _complex_dtype(dtype, ctx.xp)
        out_dtype = real
    elif fmt == "flashinfer":
        ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
        if dtype is not None and ctx.dtype != ctx.xp.float32:
            msg = f"`dtype` must be float32 or None for format='flashinfer' (FlashInfer reads float32), got {dtype}"
            raise ValueError(msg)
        out_dtype = ctx.xp.float32
    cos, sin = rope_cos_sin(n, dim, **kw, layout="half", dtype=out_dtype)
    xp_ = _compat.resolve({"cos": cos}).xp
    half = cos.shape[-1] // 2
    c, s = cos[..., :half], sin[..., :half]
    if fmt == "flash_attn":
        return c, s
    if fmt == "complex":
        return xp_.astype(c, cdt) + xp_.astype(s, cdt) * 1j
    return xp_.concat([c, s], axis=-1)
