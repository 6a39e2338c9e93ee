"""Thin :mod:`torch.nn` modules over posenc's functions.

The way torch users hold positional state: a module built once from its
configuration, whose tables are buffers that follow ``.to(device)``, called
in ``forward``.  Every module calls the same portable functions as the rest
of posenc (:func:`posenc.rope_cos_sin`, :func:`posenc.apply_rope`,
:func:`posenc.sinusoidal`, :func:`posenc.add_sinusoidal`,
:func:`posenc.alibi_bias`), so the numbers are posenc's exact ones, and each
compiles with ``torch.compile(fullgraph=True)`` and exports with
:func:`torch.export.export`.

This module imports torch; ``import posenc`` does not import it (nor this
module): import it as ``import posenc.torch`` or
``from posenc.torch import RotaryEmbedding``.  FlexAttention score and mask functions
for posenc's biases are in :mod:`posenc.torch.flex`.

:class:`Timesteps` (diffusion timestep embeddings) caches nothing: its
frequencies are host constants of its configuration, and every call embeds
the timesteps it is given.

The cached tables cover positions ``0 .. max_positions - 1``.  A call that
needs positions just beyond them grows the cache (to the next power of two)
when it runs eagerly, up to ``GROW_BYTES`` (64 MiB) per table (or the
``max_positions`` asked for, if larger); positions further out (a decode step
far beyond the cache, a huge position id) and every call while torch
compiles or exports (where a buffer cannot grow) get the tables of that call
computed directly, with the same functions.  A cache grown under
:func:`torch.inference_mode` is an ordinary tensor (later training steps can
save it for backward).

Model plumbing: the tables are recomputed from the configuration whenever
the module's tensors are converted (``_apply``: ``to_empty`` after building
on the ``meta`` device, ``.to(dtype)``, ``.double()``, ``.half()``, device
moves), so a table never holds garbage or values of two precisions; and
``reset_parameters()`` recomputes them (and re-initialises learned ALiBi
slopes) for the initialisers that call it.  Position ids of any integer
dtype are positions (``uint8`` ids never index as a boolean mask).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

import posenc
from posenc import _checks, _compat, _trace
from posenc.scaling._formulas import length_dependent

from ._patch import patch_rope

__all__ = ["RotaryEmbedding", "SinusoidalEmbedding", "ALiBi", "Timesteps", "AxesRotaryEmbedding", "patch_rope"]


#: bytes one cached table may grow to (beyond the ``max_positions`` asked for):
#: positions further out are computed per call, so a decode step far out
#: (offset 2**19) keeps nothing and a huge position id allocates nothing
GROW_BYTES = 64 * 2**20


#: from_hf caches a config's max_position_embeddings ahead up to this many
#: positions (a 128K context of head size 128 in float32: 128 MiB for cos and sin)
_FROM_HF_MAX_POSITIONS = 1 << 17


def _max_positions(value: Any) -> int:
    return _checks.check_int(value, "max_positions", minimum=0, maximum=_checks.MAX_ELEMENTS)


def _grow_rows(need: int, cached: int, row_bytes: int, floor: int) -> int | None:
    """The rows a cache of ``cached`` rows grows to for ``need`` positions, or
    ``None`` to compute that call's tables directly: the next power of two,
    when ``need`` is at most twice the cache (positions reached by steps, not
    a jump far out) and the table stays within ``GROW_BYTES`` (or the
    ``floor`` rows the module was built with)."""
    n = _grown(need)
    if need > 2 * max(cached, 1024) or n * row_bytes > max(GROW_BYTES, floor * row_bytes):
        return None
    return n


def _ids(position_ids: Any, device: Any) -> torch.Tensor:
    """Integer ``position_ids`` as int64 (or int32) on ``device``: uint8 ids
    would index as a boolean mask, int8 / int16 ones are not indices at all."""
    if (
        not isinstance(position_ids, torch.Tensor)
        or position_ids.dtype.is_floating_point
        or position_ids.dtype.is_complex
        or position_ids.dtype == torch.bool
    ):
        msg = f"`position_ids` must be an integer tensor, got {_checks.show(position_ids)}"
        raise TypeError(msg)
    if position_ids.dtype == torch.uint64 and _compat.is_concrete(position_ids) and position_ids.numel():
        # (int64 would wrap ids from 2**63 to negative ones: the refusal names the id itself)
        top = _compat.int_range(torch, position_ids)[1]
        if top >= 2**63:
            msg = f"`position_ids` holds the id {top}: beyond int64 (tables are exact for ids below 2**53)"
            raise ValueError(msg)
    if position_ids.dtype not in (torch.int64, torch.int32):
        return position_ids.to(device=device, dtype=torch.int64)
    return position_ids.to(device)


def _named(renames: tuple[tuple[str, str], ...], fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, a public function a module calls, with its
    refusals naming the module's own arguments: each ``(old, new)`` of
    ``renames`` (`` `positions` `` of a module's ``position_ids``) replaced
    in the message."""
    try:
        return fn(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        for old, new in renames:
            msg = msg.replace(old, new)
        raise type(exc)(msg) from None


#: the refusals of a module's tables named by its arguments (:func:`_named`)
_AS_IDS = (("`positions`", "`position_ids`"),)
_AS_OFFSET = (("`positions`", "`offset`"),)


def _refilled(module: nn.Module, name: str) -> torch.Tensor | None:
    """The buffer ``name`` of ``module`` if it holds values to recompute
    (not on the ``meta`` device), else ``None``."""
    buf = getattr(module, name)
    return None if buf.device.type == "meta" else buf


def _ordinary(t: Any) -> Any:
    """A tensor made under :func:`torch.inference_mode` as an ordinary one
    (a module built there can be trained later); any other value as is."""
    if isinstance(t, torch.Tensor) and t.is_inference():
        with torch.inference_mode(False), torch.no_grad():
            return t.clone()
    return t


class _FromConfig(nn.Module):
    """A module whose tensors are a function of its configuration: after
    every conversion of its tensors (``to_empty`` leaves garbage, a dtype
    change values of another precision) :meth:`_recompute` refills them.
    Its buffers are ordinary tensors even when it is built under
    :func:`torch.inference_mode`."""

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
        super().register_buffer(name, _ordinary(tensor), persistent)

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        module = super()._apply(fn, *args, **kwargs)
        self._recompute()
        return module

    def _recompute(self) -> None:
        self.reset_parameters()


def _grown(need: int) -> int:
    """The cache length that covers ``need`` positions: the next power of two."""
    return 1 << max(int(need) - 1, 0).bit_length()


def _float_dtype(dtype: Any) -> torch.dtype:
    if dtype is None:
        return torch.get_default_dtype()
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        msg = f"`dtype` must be a floating torch dtype, got {_checks.show(dtype)}"
        raise TypeError(msg)
    return dtype


def _fits(offset: Any, n: Any, cached: int) -> bool:
    """Whether positions ``offset .. offset + n - 1`` lie in a cache of ``cached`` rows
    (a Python int or traced ``SymInt`` offset; a tensor offset never does)."""
    if isinstance(offset, torch.Tensor):
        return False
    return offset >= 0 and offset + n <= cached


def _positions(seq: Any, offset: Any, device: Any) -> torch.Tensor:
    """The positions ``offset .. offset + seq - 1`` as a tensor (the array path
    of posenc's functions, for positions outside the cache while tracing)."""
    return torch.arange(seq, device=device) + offset


def _int_offset(offset: Any) -> Any:
    """An int (or ``SymInt``) offset; an eager 0-d integer tensor becomes its value,
    a traced one stays a tensor (posenc's one check of offsets)."""
    return _checks.check_offset(offset, "offset", None)


class RotaryEmbedding(_FromConfig):
    r"""Rotary position embedding (RoPE) of queries and keys.

    Holds exact ``cos`` / ``sin`` tables of :func:`posenc.rope_cos_sin` for
    positions ``0 .. max_positions - 1`` as non-persistent buffers (they
    follow ``.to(device)`` and stay out of the ``state_dict``), and rotates
    ``q`` and ``k`` with :func:`posenc.apply_rope`.

    Parameters
    ----------
    dim : int
        Rotary dimension, a positive even integer: the head size, or the
        rotated part of it (partial rotary: features from ``dim`` on pass
        through unchanged).
    base : float, default 10000.0
        RoPE's base (``rope_theta``).
    scaling : posenc.scaling.Scaling, optional
        Context-extension scaling (:mod:`posenc.scaling`).  With a
        length-dependent one (:class:`~posenc.scaling.DynamicNTK`,
        :class:`~posenc.scaling.LongRoPE`) the tables depend on the sequence
        length: nothing is cached and every call computes its own.
    layout : {"half", "interleaved"}
        Which features are paired: Hugging Face's rotate-half, or GPT-J's
        neighbours (see :func:`posenc.rope_cos_sin`).
    max_positions : int, default 2048
        Positions cached when the module is built.
    dtype : torch.dtype, optional
        The dtype of the cached tables (default: torch's default dtype).
        :func:`posenc.apply_rope` computes half-precision inputs in float32.
    device : torch.device or str, optional
        Device of the cached tables.

    Examples
    --------
    >>> import torch
    >>> from posenc.torch import RotaryEmbedding
    >>> rope = RotaryEmbedding(8)
    >>> q = torch.ones(1, 2, 3, 8)  # (batch, heads, seq, head_dim)
    >>> k = torch.ones(1, 2, 3, 8)
    >>> q_rot, k_rot = rope(q, k)
    >>> q_rot[0, 0, 1]  # position 1: pairs (i, i + 4) turned by 1, 0.1, 0.01, 0.001 rad
    tensor([-0.3012,  0.8952,  0.9900,  0.9990,  1.3818,  1.0948,  1.0099,  1.0010])
    >>> torch.allclose(q_rot.norm(dim=-1), q.norm(dim=-1))
    True

    A decode step after 3 cached tokens rotates by position 3:

    >>> q_rot, k_rot = rope(q[:, :, :1], k[:, :, :1], offset=3)
    >>> torch.equal(q_rot[0, 0, 0], rope(q, q, offset=1)[0][0, 0, 2])
    True

    Built from a Hugging Face config (a dict or a ``transformers`` config):

    >>> cfg = {"hidden_size": 64, "num_attention_heads": 4, "rope_theta": 500000.0,
    ...        "rope_scaling": {"rope_type": "linear", "factor": 2.0}}
    >>> RotaryEmbedding.from_hf(cfg)
    RotaryEmbedding(dim=16, base=500000.0, scaling=Linear(factor=2.0), layout='half', cached=2048)
    """

    #: the cached tables (non-persistent buffers)
    cos_cached: torch.Tensor
    sin_cached: torch.Tensor

    def __init__(
        self,
        dim: int,
        *,
        base: float = 10000.0,
        scaling: Any = None,
        layout: str = "half",
        max_positions: int = 2048,
        dtype: Any = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        self.layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
        self.length_dependent = length_dependent(scaling)
        n = 0 if self.length_dependent else _max_positions(max_positions)
        # validates dim, base and scaling (errors name them)
        cos, sin = posenc.rope_cos_sin(
            n, dim, base=base, scaling=scaling, layout=layout, dtype=_float_dtype(dtype), device=device, xp=torch
        )
        self.dim = _checks.check_dim(dim, even=True)
        self.base = float(base)
        self.scaling = scaling
        self.max_positions = n
        self.register_buffer("cos_cached", cos, persistent=False)
        self.register_buffer("sin_cached", sin, persistent=False)

    @classmethod
    def from_hf(cls, config: Any, *, layer_type: str | None = None, **kwargs: Any) -> RotaryEmbedding:
        """The rotary embedding of a Hugging Face config (:func:`posenc.scaling.from_hf`).

        ``kwargs`` (``layout``, ``max_positions``, ``dtype``, ``device``) go
        to the constructor; ``max_positions`` defaults to the config's
        ``max_position_embeddings`` (up to 2**17), so that a model's decode
        steps take rows of the cache and never grow it.  Multimodal RoPE configs (``mrope_section``) are
        refused: use :func:`posenc.mrope_cos_sin`; so are the RoPE over
        several axes of vision towers: use :func:`posenc.rope_axes_cos_sin`
        or :class:`AxesRotaryEmbedding`.
        """
        kw = posenc.scaling.from_hf(config, layer_type=layer_type)
        if "mrope_section" in kw:
            msg = "`config` describes multimodal RoPE (mrope_section): use posenc.mrope_cos_sin, not RotaryEmbedding"
            raise ValueError(msg)
        if "axes_dim" in kw:
            msg = (
                "`config` describes RoPE over several axes (a vision tower): use "
                "posenc.rope_axes_cos_sin(ids, **posenc.scaling.from_hf(config)) or "
                "posenc.torch.AxesRotaryEmbedding, not RotaryEmbedding"
            )
            raise ValueError(msg)
        if "max_positions" not in kwargs:  # the model's context, cached ahead (no growth while decoding)
            top = config.get("max_position_embeddings") if isinstance(config, dict) else None
            if top is None and not isinstance(config, (dict, str)):
                top = getattr(config, "max_position_embeddings", None)
            if isinstance(top, int) and not isinstance(top, bool) and 0 < top <= _FROM_HF_MAX_POSITIONS:
                kwargs["max_positions"] = top
        return cls(kw["dim"], base=kw["base"], scaling=kw["scaling"], **kwargs)

    def _table_kwargs(self) -> dict[str, Any]:
        return {"base": self.base, "scaling": self.scaling, "layout": self.layout}

    @property
    def cached(self) -> int:
        """Number of cached positions."""
        return int(self.cos_cached.shape[0])

    def _fill(self, n: int) -> None:
        """Recompute the cached tables for ``n`` positions, in the buffers'
        dtype and on their device (an ordinary tensor, also under
        ``inference_mode``)."""
        dev, dt = self.cos_cached.device, self.cos_cached.dtype
        with torch.inference_mode(False), torch.no_grad():
            self.cos_cached, self.sin_cached = posenc.rope_cos_sin(
                n, self.dim, **self._table_kwargs(), dtype=dt, device=dev, xp=torch
            )

    def _grow(self, need: int) -> bool:
        """Grow the cache to cover ``need`` positions; False where the call
        must compute its tables directly (see ``GROW_BYTES``)."""
        row_bytes = self.dim * self.cos_cached.element_size() * 2
        n = _grow_rows(need, self.cached, row_bytes, self.max_positions)
        if n is None:
            return False
        self._fill(n)
        return True

    def reset_parameters(self) -> None:
        """Recompute the cached tables from the configuration (what
        initialisers of meta-built models call)."""
        if _refilled(self, "cos_cached") is not None:
            self._fill(self.cached)

    def cos_sin(
        self,
        seq: int,
        *,
        position_ids: Any = None,
        offset: Any = 0,
        seq_len: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The ``cos`` and ``sin`` tables of ``seq`` positions.

        Positions ``offset .. offset + seq - 1``, or ``position_ids`` (any
        shape, integer) when given; ``seq_len`` as in
        :func:`posenc.rope_cos_sin` (length-dependent scalings only).
        Returns tables of shape ``(seq, dim)`` or ``position_ids.shape + (dim,)``.
        """
        dt, dev = self.cos_cached.dtype, self.cos_cached.device
        kw = self._table_kwargs()
        if self.length_dependent:
            pos = seq if position_ids is None else position_ids
            start = 0 if position_ids is not None else offset
            return _named(
                _AS_IDS if position_ids is not None else (), posenc.rope_cos_sin,
                pos, self.dim, **kw, seq_len=seq_len, offset=start, dtype=dt, device=dev, xp=torch,
            )  # fmt: skip
        if position_ids is not None:
            ids = _ids(position_ids, dev)
            if _trace.compiling() or not _compat.is_concrete(ids):
                # traced (or meta) ids cannot be bounded, device ids are not read back (no
                # sync): the exact tables of these ids (on a GPU one launch), never another row
                return _named(_AS_IDS, posenc.rope_cos_sin, ids, self.dim, **kw, dtype=dt, xp=torch)
            if ids.numel():
                lo, hi = (int(v) for v in torch.aminmax(ids))
                if lo < 0 or (hi >= self.cached and not self._grow(hi + 1)):
                    # negative or far ids: their tables directly
                    return _named(_AS_IDS, posenc.rope_cos_sin, ids, self.dim, **kw, dtype=dt, xp=torch)
            return self.cos_cached[ids], self.sin_cached[ids]
        offset = _int_offset(offset)
        if not _fits(offset, seq, self.cached):
            if _trace.compiling() or isinstance(offset, torch.Tensor) or offset < 0:
                pos = _positions(seq, offset, dev)
                return _named(_AS_OFFSET, posenc.rope_cos_sin, pos, self.dim, **kw, dtype=dt, xp=torch)
            if not self._grow(offset + seq):
                # far out: this call's tables directly, nothing kept
                return posenc.rope_cos_sin(seq, self.dim, **kw, offset=offset, dtype=dt, device=dev, xp=torch)
        return self.cos_cached[offset : offset + seq], self.sin_cached[offset : offset + seq]

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        position_ids: Any = None,
        offset: Any = 0,
        *,
        seq_len: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate queries and keys.

        Parameters
        ----------
        q, k : torch.Tensor
            Shape ``(..., seq, head_dim)`` (Hugging Face's ``(batch, heads,
            seq, head_dim)``); ``q`` and ``k`` may have different head counts
            but share ``seq``.
        position_ids : torch.Tensor, optional
            Integer positions of shape ``(seq,)`` or ``(batch, seq)`` (then
            the tables get a heads axis at 1, as Hugging Face's
            ``unsqueeze(1)``).  Default: ``offset .. offset + seq - 1``.
        offset : int or 0-d integer tensor, default 0
            The number of cached tokens in a decode step.
        seq_len : int, optional
            For the length-dependent scalings, as in :func:`posenc.rope_cos_sin`.

        Returns
        -------
        q_rot, k_rot : torch.Tensor
        """
        seq = q.shape[-2]
        cos, sin = self.cos_sin(seq, position_ids=position_ids, offset=offset, seq_len=seq_len)
        heads_axis = 1 if cos.ndim == 3 and q.ndim == 4 else None
        q_rot, k_rot = posenc.apply_rope((q, k), cos, sin, layout=self.layout, heads_axis=heads_axis)
        return q_rot, k_rot

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim}, base={self.base}, scaling={self.scaling!r}, layout={self.layout!r}, "
            f"cached={self.cached}"
        )


class SinusoidalEmbedding(_FromConfig):
    r"""Adds the sinusoidal table of Vaswani et al. to token embeddings.

    Holds the table of :func:`posenc.sinusoidal` for positions
    ``0 .. max_positions - 1`` as a non-persistent buffer and returns
    ``dropout(x * input_scale + table[offset : offset + seq])``: the module
    of the seed tutorials (a registered buffer and dropout), with posenc's
    exact table; without dropout it is :func:`posenc.add_sinusoidal` (to the
    last bit of float32: a cached row and a table computed from ``offset``
    may round differently).

    Parameters
    ----------
    dim : int
        Feature dimension (``d_model``), a positive even integer.
    base, layout, convention, min_timescale, max_timescale
        As in :func:`posenc.sinusoidal`.
    input_scale : float, default 1.0
        Multiplies ``x`` first (``sqrt(d_model)`` in the Transformer).
    dropout : float, default 0.0
        Dropout probability applied to the sum (in training mode).
    max_positions : int, default 2048
        Positions cached when the module is built.
    dtype : torch.dtype, optional
        The dtype of the cached table (default: torch's default dtype); the
        table is cast to ``x``'s dtype when added.
    device : torch.device or str, optional
        Device of the cached table.

    Examples
    --------
    >>> import torch, posenc
    >>> from posenc.torch import SinusoidalEmbedding
    >>> pe = SinusoidalEmbedding(4)
    >>> pe(torch.zeros(1, 3, 4))
    tensor([[[ 0.0000,  1.0000,  0.0000,  1.0000],
             [ 0.8415,  0.5403,  0.0100,  0.9999],
             [ 0.9093, -0.4161,  0.0200,  0.9998]]])
    >>> x = torch.randn(2, 5, 4)
    >>> torch.allclose(pe(x, offset=7), posenc.add_sinusoidal(x, offset=7), rtol=0, atol=1e-6)
    True
    """

    #: the cached table (a non-persistent buffer)
    table: torch.Tensor

    def __init__(
        self,
        dim: int,
        *,
        base: float = 10000.0,
        layout: str = "interleaved",
        convention: str = "paper",
        min_timescale: float | None = None,
        max_timescale: float | None = None,
        input_scale: float = 1.0,
        dropout: float = 0.0,
        max_positions: int = 2048,
        dtype: Any = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        self.options: dict[str, Any] = {
            "base": base,
            "layout": layout,
            "convention": convention,
            "min_timescale": min_timescale,
            "max_timescale": max_timescale,
        }
        n = _max_positions(max_positions)
        table = posenc.sinusoidal(n, dim, **self.options, dtype=_float_dtype(dtype), device=device, xp=torch)
        self.dim = _checks.check_dim(dim, even=True)
        self.input_scale = _checks.check_float(input_scale, "input_scale")
        p = _checks.check_float(dropout, "dropout", nonnegative=True)
        if p > 1.0:
            msg = f"`dropout` must be a probability in [0, 1], got {dropout!r}"
            raise ValueError(msg)
        self.dropout = nn.Dropout(p)
        self.max_positions = n
        self.register_buffer("table", table, persistent=False)

    def _fill(self, n: int) -> None:
        """Recompute the cached table for ``n`` positions in the buffer's dtype
        and on its device (an ordinary tensor, also under ``inference_mode``)."""
        with torch.inference_mode(False), torch.no_grad():
            self.table = posenc.sinusoidal(
                n, self.dim, **self.options, dtype=self.table.dtype, device=self.table.device, xp=torch
            )

    def reset_parameters(self) -> None:
        """Recompute the cached table from the configuration (what initialisers
        of meta-built models call)."""
        if _refilled(self, "table") is not None:
            self._fill(self.cached)

    @property
    def cached(self) -> int:
        """Number of cached positions."""
        return int(self.table.shape[0])

    def forward(self, x: torch.Tensor, offset: Any = 0) -> torch.Tensor:
        """``dropout(x * input_scale + PE)`` for ``x`` of shape ``(..., seq, dim)``
        at positions ``offset .. offset + seq - 1`` (``offset``: an int, the
        number of cached tokens in a decode step)."""
        if not isinstance(x, torch.Tensor) or not x.dtype.is_floating_point:
            msg = f"`x` must be a floating tensor (token embeddings), got {_checks.show(x)}"
            raise TypeError(msg)
        if x.ndim < 2 or x.shape[-1] != self.dim:
            msg = f"`x` must have shape (..., seq, {self.dim}), got shape {tuple(x.shape)}"
            raise ValueError(msg)
        seq = x.shape[-2]
        offset = _int_offset(offset)
        dt, dev = self.table.dtype, self.table.device
        if not _fits(offset, seq, self.cached):
            if _trace.compiling() or isinstance(offset, torch.Tensor) or offset < 0:
                pos = _positions(seq, offset, dev)
                pe = _named(_AS_OFFSET, posenc.sinusoidal, pos, self.dim, **self.options, dtype=dt, xp=torch)
            else:
                n = _grow_rows(offset + seq, self.cached, self.dim * self.table.element_size(), self.max_positions)
                if n is None:  # far out: this call's rows directly, nothing kept
                    pos = torch.arange(seq, device=dev, dtype=torch.int64) + offset
                    pe = _named(_AS_OFFSET, posenc.sinusoidal, pos, self.dim, **self.options, dtype=dt, xp=torch)
                else:
                    self._fill(n)
                    pe = self.table[offset : offset + seq]
        else:
            pe = self.table[offset : offset + seq]
        if pe.dtype != x.dtype:
            pe = pe.to(x.dtype)
        if self.input_scale != 1.0:
            x = x * self.input_scale
        return self.dropout(x + pe)

    def extra_repr(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items() if v is not None)
        return f"dim={self.dim}, {opts}, input_scale={self.input_scale}, cached={self.cached}"


class ALiBi(_FromConfig):
    r"""ALiBi attention biases (Press et al., 2022), with fixed or learned slopes.

    ``forward(scores)`` adds :func:`posenc.alibi_bias` to attention logits of
    shape ``(..., num_heads, query_len, key_len)``.  Fixed slopes
    (:func:`posenc.alibi_slopes`) are a non-persistent buffer; learned ones
    (``learned=True``) a :class:`torch.nn.Parameter` initialised to them,
    whose gradients flow through the bias.

    Parameters
    ----------
    num_heads : int
        Number of heads.
    max_bias : float, default 8.0
        The ``8`` of the slopes :math:`2^{-8h/n}`.
    learned : bool, default False
        Train the slopes.
    form : {"paper", "bloom", "mpt"}
        As in :func:`posenc.alibi_bias`.
    causal : bool, default False
        Also mask the future keys with ``-inf``.
    dtype : torch.dtype, optional
        The dtype of the slopes (default: torch's default dtype).
    device : torch.device or str, optional
        Device of the slopes.

    Examples
    --------
    >>> import torch
    >>> from posenc.torch import ALiBi
    >>> alibi = ALiBi(2, causal=True)
    >>> alibi(torch.zeros(1, 2, 3, 3))[0, 0]
    tensor([[ 0.0000,    -inf,    -inf],
            [-0.0625,  0.0000,    -inf],
            [-0.1250, -0.0625,  0.0000]])

    A decode step: one query after 3 cached keys (the queries are the last
    positions by default):

    >>> alibi(torch.zeros(1, 2, 1, 4))[0, 1]
    tensor([[-0.0117, -0.0078, -0.0039,  0.0000]])
    """

    def __init__(
        self,
        num_heads: int,
        *,
        max_bias: float = 8.0,
        learned: bool = False,
        form: str = "paper",
        causal: bool = False,
        dtype: Any = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        slopes = posenc.alibi_slopes(num_heads, max_bias=max_bias, dtype=_float_dtype(dtype), device=device, xp=torch)
        self.num_heads = int(slopes.shape[0])
        self.form = _checks.check_choice(form, "form", ("paper", "bloom", "mpt"))
        learned = _checks.check_bool(learned, "learned")
        causal = _checks.check_bool(causal, "causal")
        self.causal = causal
        self.max_bias = float(max_bias)
        if learned:
            self.slopes = nn.Parameter(_ordinary(slopes))
        else:
            self.register_buffer("slopes", slopes, persistent=False)

    def _fresh_slopes(self) -> torch.Tensor:
        s = self.slopes
        return posenc.alibi_slopes(self.num_heads, max_bias=self.max_bias, dtype=s.dtype, device=s.device, xp=torch)

    def reset_parameters(self) -> None:
        """Set the slopes to their initial values :func:`posenc.alibi_slopes`
        (learned slopes are re-initialised in place; what initialisers of
        meta-built models call)."""
        if _refilled(self, "slopes") is None:
            return
        with torch.inference_mode(False), torch.no_grad():
            fresh = self._fresh_slopes()
            if isinstance(self.slopes, nn.Parameter):
                self.slopes.copy_(fresh)
            else:
                self.slopes = fresh

    def _recompute(self) -> None:
        # fixed slopes are a function of the configuration; learned ones are the
        # model's state (reset_parameters initialises them)
        if not isinstance(self.slopes, nn.Parameter):
            self.reset_parameters()

    def bias(
        self, query_len: int, key_len: int | None = None, *, offset: Any = None, dtype: Any = None
    ) -> torch.Tensor:
        """The bias :func:`posenc.alibi_bias` of these slopes (arguments as there)."""
        return posenc.alibi_bias(
            self.num_heads,
            query_len,
            key_len,
            offset=offset,
            form=self.form,
            causal=self.causal,
            slopes=self.slopes,
            dtype=dtype,
        )

    def forward(self, scores: torch.Tensor, offset: Any = None) -> torch.Tensor:
        """``scores + bias`` for logits of shape ``(..., num_heads, query_len, key_len)``.

        ``offset``: position of the first query on the key axis (default
        ``key_len - query_len``, the queries are the last positions).
        """
        if scores.ndim < 3 or scores.shape[-3] != self.num_heads:
            msg = (
                f"`scores` must have shape (..., {self.num_heads}, query_len, key_len), "
                f"got shape {tuple(scores.shape)}"
            )
            raise ValueError(msg)
        return scores + self.bias(scores.shape[-2], scores.shape[-1], offset=offset, dtype=scores.dtype)

    def extra_repr(self) -> str:
        kind = "learned" if isinstance(self.slopes, nn.Parameter) else "fixed"
        return f"num_heads={self.num_heads}, {kind} slopes, form={self.form!r}, causal={self.causal}"


class Timesteps(nn.Module):
    r"""Sinusoidal timestep embeddings: diffusers' ``Timesteps`` module, exact.

    The same constructor as ``diffusers.models.embeddings.Timesteps`` (so a
    model's ``Timesteps(320, True, 0)`` reads the same), whose ``forward``
    is :func:`posenc.timestep_embedding` of the given timesteps.  The module
    holds no tensors (nothing in its ``state_dict``, as diffusers'): built on
    the ``meta`` device and materialised with ``to_empty``, moved or cast
    with ``.to()``, it computes the same embeddings, on the timesteps'
    device.

    Parameters
    ----------
    num_channels : int
        Embedding width.
    flip_sin_to_cos : bool
        ``[cos | sin]`` instead of ``[sin | cos]``.
    downscale_freq_shift : float
        The shift of the frequencies' spacing (1: DDPM, 0: DiT, GLIDE).
    scale : float, default 1
        Multiplies the angles.
    max_period : float, default 10000.0
        Keyword-only; diffusers' module always uses 10000.
    dtype : torch.dtype, optional
        Output dtype (default float32, as diffusers' module returns; cast
        it to the model's dtype as diffusers' UNets do).

    Examples
    --------
    >>> import torch
    >>> from posenc.torch import Timesteps
    >>> proj = Timesteps(8, True, 0)
    >>> proj(torch.tensor([0, 500]))[1]
    tensor([-0.8838,  0.9650,  0.2837,  0.8776, -0.4678, -0.2624, -0.9589,  0.4794])
    >>> proj
    Timesteps(num_channels=8, flip_sin_to_cos=True, downscale_freq_shift=0.0, scale=1.0)
    """

    def __init__(
        self,
        num_channels: int,
        flip_sin_to_cos: bool,
        downscale_freq_shift: float,
        scale: float = 1,
        *,
        max_period: float = 10000.0,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.num_channels = _checks.check_dim(num_channels, "num_channels")
        self.flip_sin_to_cos = _checks.check_bool(flip_sin_to_cos, "flip_sin_to_cos")
        self.downscale_freq_shift = _checks.check_float(downscale_freq_shift, "downscale_freq_shift")
        self.scale = _checks.check_float(scale, "scale")
        self.max_period = _checks.check_float(max_period, "max_period", positive=True)
        self.dtype = torch.float32 if dtype is None else _float_dtype(dtype)
        # validates the frequencies once (errors name the arguments)
        posenc.timestep_embedding(torch.zeros(0, device="meta"), self.num_channels, **self._kwargs())

    def _kwargs(self) -> dict[str, Any]:
        return {
            "flip_sin_to_cos": self.flip_sin_to_cos,
            "downscale_freq_shift": self.downscale_freq_shift,
            "scale": self.scale,
            "max_period": self.max_period,
            "dtype": self.dtype,
        }

    def forward(self, timesteps: torch.Tensor) -> torch.Tensor:
        """The embeddings of ``timesteps`` (any shape; diffusers' are 1-D),
        shape ``timesteps.shape + (num_channels,)``."""
        return _named(
            (("`t`", "`timesteps`"),), posenc.timestep_embedding, timesteps, self.num_channels, **self._kwargs()
        )

    def extra_repr(self) -> str:
        out = (
            f"num_channels={self.num_channels}, flip_sin_to_cos={self.flip_sin_to_cos}, "
            f"downscale_freq_shift={self.downscale_freq_shift}, scale={self.scale}"
        )
        if self.max_period != 10000.0:
            out += f", max_period={self.max_period}"
        if self.dtype != torch.float32:
            out += f", dtype={self.dtype}"
        return out


class AxesRotaryEmbedding(_FromConfig):
    r"""RoPE over several axes from position ids: ``forward(ids) -> (cos, sin)``.

    The module of image and video diffusion transformers (diffusers'
    ``FluxPosEmbed``): built once from the per-axis widths, called with the
    ids of every forward (text and image tokens, any grid size) and
    returning the tables of :func:`posenc.rope_axes_cos_sin`, which
    :func:`posenc.apply_rope` applies with the same ``layout``.  Its one
    buffer, ``inv_freq`` (the frequencies of every axis, concatenated), is
    non-persistent: it follows ``.to()`` and its dtype is the dtype of the
    tables; it is refilled from the configuration after ``to_empty`` (a
    module built on the ``meta`` device is right once materialised).  The
    tables themselves come from the exact engine, not from the buffer.

    Parameters
    ----------
    axes_dim : sequence of int
        The rotary width of each axis (Flux: ``(16, 56, 56)``).
    base, scaling, layout, split, turns
        As in :func:`posenc.rope_axes_cos_sin`.
    dtype : torch.dtype, optional
        The dtype of the buffer and of the tables (default: torch's default dtype).
    device : torch.device or str, optional
        Device of the buffer (the tables live on the ids' device).

    Examples
    --------
    >>> import torch, posenc
    >>> from posenc.torch import AxesRotaryEmbedding
    >>> rope = AxesRotaryEmbedding((2, 4, 4))
    >>> ids = posenc.grid_ids((1, 2, 3), prefix_tokens=2, xp=torch)  # Flux: 2 text tokens, a 2 x 3 latent
    >>> cos, sin = rope(ids)
    >>> cos.shape
    torch.Size([8, 10])
    >>> q = torch.ones(1, 4, 8, 10)  # (batch, heads, tokens, head_dim)
    >>> posenc.apply_rope(q, cos, sin, layout="interleaved").shape
    torch.Size([1, 4, 8, 10])
    """

    #: the frequencies of every axis (a non-persistent buffer)
    inv_freq: torch.Tensor

    def __init__(
        self,
        axes_dim: Any,
        *,
        base: Any = 10000.0,
        scaling: Any = None,
        layout: str = "interleaved",
        split: str = "blocks",
        turns: bool = False,
        dtype: Any = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        from posenc.axes._rope_axes import check_axes_dim

        self.axes_dim = check_axes_dim(axes_dim)
        self.base = tuple(base) if isinstance(base, list) else base
        self.scaling = tuple(scaling) if isinstance(scaling, list) else scaling
        self.layout = _checks.check_choice(layout, "layout", _checks.ROPE_LAYOUTS)
        self.split = split
        self.turns = turns
        dt = _float_dtype(dtype)
        _compat.resolve(xp=torch, device=device)  # a ValueError naming `device`, as RotaryEmbedding's
        # validates every option (errors name them) on an empty set of ids
        posenc.rope_axes_cos_sin(
            torch.zeros((0, len(self.axes_dim)), dtype=torch.int64), self.axes_dim, **self._options(), xp=torch
        )
        self.register_buffer("inv_freq", self._host_freqs(dt, device), persistent=False)

    def _options(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "scaling": self.scaling,
            "layout": self.layout,
            "split": self.split,
            "turns": self.turns,
        }

    def _host_freqs(self, dtype: Any, device: Any) -> torch.Tensor:
        import numpy as np

        from posenc.axes._rope_axes import axes_freqs, check_scalings, per_axis

        n = len(self.axes_dim)
        bases = tuple(float(b) for b in per_axis(self.base, "base", n))
        scalings = check_scalings(self.scaling, n)
        freqs, _ = axes_freqs(self.axes_dim, bases, scalings, self.split, self.turns, float("inf"))
        host = np.concatenate([f.array for f in freqs])
        return torch.tensor(host, dtype=dtype, device=device)

    def reset_parameters(self) -> None:
        """Refill ``inv_freq`` from the configuration (what initialisers of
        meta-built models call)."""
        buf = _refilled(self, "inv_freq")
        if buf is not None:
            with torch.inference_mode(False), torch.no_grad():
                self.inv_freq = self._host_freqs(buf.dtype, buf.device)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The ``cos`` and ``sin`` tables of ``ids`` (shape ``(..., n_axes)``),
        each of shape ``ids.shape[:-1] + (sum(axes_dim),)``, on the ids' device."""
        return posenc.rope_axes_cos_sin(ids, self.axes_dim, **self._options(), dtype=self.inv_freq.dtype, xp=torch)

    def extra_repr(self) -> str:
        extra = "".join(
            f", {k}={v!r}"
            for k, v in self._options().items()
            if v != {"base": 10000.0, "scaling": None, "layout": "interleaved", "split": "blocks", "turns": False}[k]
        )
        return f"axes_dim={self.axes_dim}{extra}"
