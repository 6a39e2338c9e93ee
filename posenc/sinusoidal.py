"""The sinusoidal family: Vaswani et al.'s table and its conventions, its
frequencies and wavelengths, and the sine-only and binary codes.

Learned tables live in :mod:`posenc.learned`, the shift and similarity
properties in :mod:`posenc.properties`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from . import _angles, _cache, _checks, _compat, _exact, _kernels, _tables
from ._compat import Array, Context
from ._tables import kept_on_devices
from ._trace import host_constant, is_symbolic

__all__ = [
    "frequencies",
    "wavelengths",
    "sinusoidal",
    "sines",
    "binary",
    "add_sinusoidal",
]

CONVENTIONS = ("paper", "fairseq", "tensor2tensor")


# --------------------------------------------------------------------------
# frequencies
# --------------------------------------------------------------------------
def _host_frequencies(
    dim: int,
    base: float,
    convention: str,
    min_timescale: float | None,
    max_timescale: float | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The dim // 2 angular frequencies on the host as float64 pairs: the
    correctly rounded values and their rests (:mod:`posenc._exact`; extreme
    arguments may give inf or 0: :func:`freq_args` checks)."""
    half = dim // 2
    if convention == "paper":  # base ** (-2i / dim)
        return _exact.evaluate(_exact.geometric, base, Fraction(2, dim), half, Fraction(1))
    if convention == "fairseq":  # exp(-i ln(base) / (half - 1)) = base ** (-i / (half - 1))
        return _exact.evaluate(_exact.geometric, base, Fraction(1, max(half - 1, 1)), half, Fraction(1))
    # tensor2tensor's get_timing_signal_1d: lo exp(-i ln(hi / lo) / (half - 1))
    lo = 1.0 if min_timescale is None else min_timescale
    hi = base if max_timescale is None else max_timescale
    ratio = Fraction(hi) / Fraction(lo)
    return _exact.evaluate(_exact.geometric, ratio, Fraction(1, max(half - 1, 1)), half, Fraction(lo))


def _freq_source(
    base: float,
    convention: str,
    min_timescale: float | None,
    max_timescale: float | None,
) -> str:
    """The arguments that set the frequencies, for error messages."""
    if convention != "tensor2tensor":
        return f"`base` = {base!r}"
    parts = [f"`max_timescale` = {max_timescale!r}" if max_timescale is not None else f"`base` = {base!r}"]
    if min_timescale is not None:
        parts.insert(0, f"`min_timescale` = {min_timescale!r}")
    return " with ".join(parts)


def _check_fits(top: float, ctx: Context, what: str, source: str) -> None:
    """Refuse host values up to ``top`` that would overflow the output (or working) dtype."""
    _checks.check_fits(top, ctx, f"{source} gives {what}", "request a wider dtype or less extreme arguments")


#: the frequencies of recent configurations, by their arguments and the
#: arguments' types: a table of an int length on torch (no plan is kept for
#: it, as its context follows torch's default device and dtype) evaluated
#: them exactly again on every call
_FREQS = _cache.Memo("sinusoidal.freqs", 64)


@host_constant
def freq_args(
    dim: Any,
    base: Any,
    convention: Any,
    min_timescale: Any,
    max_timescale: Any,
    *,
    even: bool = False,
) -> tuple[int, _angles.Freqs]:
    """Validated ``dim`` and the host frequencies (a constant of torch's
    traced graphs: Python arguments only), kept per configuration."""
    args = (dim, base, convention, min_timescale, max_timescale, even)
    return _FREQS.get_or_make(_cache.typed_key(args), _freq_args, *args)


def _freq_args(
    dim: Any, base: Any, convention: Any, min_timescale: Any, max_timescale: Any, even: bool
) -> tuple[int, _angles.Freqs]:
    """:func:`freq_args`, computed."""
    dim = _checks.check_dim(dim, even=even)
    base = _checks.check_float(base, "base", positive=True)
    convention = _checks.check_choice(convention, "convention", CONVENTIONS)
    if convention != "tensor2tensor" and (min_timescale is not None or max_timescale is not None):
        msg = (
            "`min_timescale` and `max_timescale` apply to convention='tensor2tensor' only, "
            f"got convention={convention!r}"
        )
        raise ValueError(msg)
    if min_timescale is not None:
        min_timescale = _checks.check_float(min_timescale, "min_timescale", positive=True)
    if max_timescale is not None:
        max_timescale = _checks.check_float(max_timescale, "max_timescale", positive=True)
    w, lo = _host_frequencies(dim, base, convention, min_timescale, max_timescale)
    if not np.isfinite(w).all():
        source = _freq_source(base, convention, min_timescale, max_timescale)
        msg = f"{source} gives frequencies beyond the float64 range"
        raise ValueError(msg)
    return dim, _angles.Freqs.exact(w, lo)


@host_constant
def _host_values(
    kind: str, dim: Any, base: Any, convention: Any, min_timescale: Any, max_timescale: Any
) -> tuple[np.ndarray, float, str]:
    """The frequencies or the wavelengths (``kind``) on the host, their
    largest magnitude and the arguments that set them, for messages (a
    constant of torch's traced graphs)."""
    _, freqs = freq_args(dim, base, convention, min_timescale, max_timescale)
    w = np.array(freqs.array)
    source = _freq_source(base, convention, min_timescale, max_timescale)
    if kind == "frequencies":
        return w, freqs.top, source
    with np.errstate(all="ignore"):  # a frequency of 0 (underflow) has no finite wavelength
        lam = 2.0 * math.pi / w
    if not np.isfinite(lam).all():
        msg = f"{source} gives wavelengths beyond the float64 range"
        raise ValueError(msg)
    return lam, float(np.max(np.abs(lam))) if lam.size else 0.0, source


def frequencies(
    dim: int,
    *,
    base: float = 10000.0,
    convention: str = "paper",
    min_timescale: float | None = None,
    max_timescale: float | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""The ``dim // 2`` angular frequencies of the sinusoidal table.

    Parameters
    ----------
    dim : int
        Model (feature) dimension; odd values give ``dim // 2`` frequencies.
    base : float, default 10000.0
        The base of the geometric progression (Vaswani et al. use 10000).
    convention : {"paper", "fairseq", "tensor2tensor"}
        ``"paper"``: :math:`\omega_i = \mathrm{base}^{-2i/d}`,
        :math:`i = 0, \dots, d/2 - 1` (Vaswani et al., Keras).
        ``"fairseq"``: :math:`\omega_i = \exp(-i \ln(\mathrm{base}) / (d/2 - 1))`,
        so the last frequency is exactly ``1 / base``.
        ``"tensor2tensor"``: ``min_timescale * exp(-i * log(max_timescale /
        min_timescale) / (d/2 - 1))`` as in ``get_timing_signal_1d``.  For
        ``d/2 == 1`` both use a spacing denominator of 1 (no division by zero).
    min_timescale, max_timescale : float, optional
        For tensor2tensor's spacing only; default 1.0 and ``base``.
    dtype, device, xp
        Output dtype (default: the namespace's default float), device and
        array namespace (default NumPy).

    Returns
    -------
    array
        Shape ``(dim // 2,)``.

    Raises
    ------
    ValueError
        If the frequencies overflow the requested dtype (or float64), as a
        ``base`` far below 1 makes them do: the error names the argument.

    Examples
    --------
    >>> import posenc
    >>> posenc.frequencies(8)
    array([1.   , 0.1  , 0.01 , 0.001])
    >>> posenc.frequencies(8, convention="fairseq")
    array([1.00000000e+00, 4.64158883e-02, 2.15443469e-03, 1.00000000e-04])
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    w, top, source = _host_values("frequencies", dim, base, convention, min_timescale, max_timescale)
    _check_fits(top, ctx, "frequencies", source)
    return _angles.cast(ctx.from_host(w), ctx.dtype, ctx.xp)


def wavelengths(
    dim: int,
    *,
    base: float = 10000.0,
    convention: str = "paper",
    min_timescale: float | None = None,
    max_timescale: float | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""The wavelengths :math:`2\pi / \omega_i` of the sinusoidal table.

    They form a geometric progression from :math:`2\pi` up to (just below)
    :math:`\mathrm{base} \cdot 2\pi`.  Wavelengths that overflow the
    requested dtype (a huge ``base`` with ``dtype="float32"``) are a
    :class:`ValueError` naming the argument.

    Parameters
    ----------
    dim, base, convention, min_timescale, max_timescale, dtype, device, xp
        As in :func:`frequencies`.

    Returns
    -------
    array
        Shape ``(dim // 2,)``.

    Examples
    --------
    >>> import posenc
    >>> posenc.wavelengths(4)
    array([  6.28318531, 628.31853072])
    """
    ctx = _compat.resolve(xp=xp, device=device, dtype=dtype)
    lam, top, source = _host_values("wavelengths", dim, base, convention, min_timescale, max_timescale)
    _check_fits(top, ctx, "wavelengths", source)
    return _angles.cast(ctx.from_host(lam), ctx.dtype, ctx.xp)


# --------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------
def sinusoidal(
    positions: int | Array,
    dim: int,
    *,
    base: float = 10000.0,
    layout: str = "interleaved",
    convention: str = "paper",
    min_timescale: float | None = None,
    max_timescale: float | None = None,
    padding_idx: int | None = None,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""Sinusoidal positional encoding (Vaswani et al., 2017).

    .. math::

        PE_{(p, 2i)} = \sin(p\,\omega_i), \qquad PE_{(p, 2i+1)} = \cos(p\,\omega_i),
        \qquad \omega_i = \mathrm{base}^{-2i/d}.

    Parameters
    ----------
    positions : int or array
        An int ``n`` (positions ``0 .. n-1``) or an array of any shape of
        integer or real positions (negative, fractional and offset positions
        are fine).  NaN or infinite positions are a :class:`ValueError`.
    dim : int
        Feature dimension.  For odd ``dim`` the last column is zero (the rule
        of fairseq and tensor2tensor) and the frequencies are those of
        ``dim // 2`` pairs.
    base : float, default 10000.0
        Base of the frequency progression.
    layout : {"interleaved", "concat"}
        ``"interleaved"``: ``sin, cos, sin, cos, ...`` (the paper, Keras).
        ``"concat"``: ``[sin ... | cos ...]`` (fairseq, tensor2tensor,
        GPT-J / Transformer-XL tables).
    convention : {"paper", "fairseq", "tensor2tensor"}
        Frequency spacing, see :func:`frequencies`.
    min_timescale, max_timescale : float, optional
        The timescales of tensor2tensor's spacing.
    padding_idx : int, optional
        The row of this position is zero (fairseq's and M2M100's padding row:
        ``sinusoidal(n, dim, convention="fairseq", layout="concat",
        padding_idx=1)`` is their ``get_embedding(n, dim, 1)``).  For array
        positions, every position equal to it gives a zero row; an index
        that no value of the positions' dtype equals (beyond an integer
        dtype's range, or between two floats) gives none.
    dtype, device, xp
        Output dtype (default: the namespace's default float), the device for
        ``int`` positions, and the namespace; array positions decide both
        namespace and device.  Half-precision outputs are computed in float32.

    Returns
    -------
    array
        Shape ``positions.shape + (dim,)`` (``(n, dim)`` for an int).

    Notes
    -----
    "Exact values" are the sines and cosines of ``p * w`` with ``w`` the
    mathematical frequencies (:func:`frequencies` returns their correctly
    rounded float64 values; the tables use them to about 106 bits).
    The float32 table is within 2.5e-7 of the exact values for every integer
    :math:`|p| < 2^{31}` and every float :math:`|p| < 2^{22}`, on every
    backend, where the usual one-liner ``sin(float32(p) * float32(w))`` is
    off by about 2e-4 at p = 4096 and 4e-2 near :math:`10^6`, because the
    product ``p * w`` is rounded before the sine.  For a range of positions
    posenc splits :math:`p = qB + r`, takes the sines and cosines of the few
    coarse and fine angles in float64, and combines them with the
    angle-addition formulas in the output precision.  For arrays of positions
    the angle is reduced exactly in turns (in float64 where the device has
    it, in float32 pairs where it does not: JAX without x64, MPS) and never
    rounded to float32 before the sine (:doc:`/theory/precision`).  Float64
    tables are within 1e-15 of the exact values for integer :math:`|p| < 2^{53}` and float
    :math:`|p| < 2^{40}`.  Without float64, :math:`|p| \ge 2^{32}` gives NaN
    rows.  With float64, positions beyond :math:`2^{64}` in magnitude, whose
    angles float64 no longer resolves, are taken as :math:`\pm 2^{64}`, and
    frequencies (of a ``base`` far below 1) are capped at :math:`2^{900}`:
    extreme arguments give finite rows, never an overflow.

    For an int ``positions`` the table depends only on the arguments, so it
    is built once and cached per namespace, device and dtype (a
    least-recently-used cache of at most 256 MiB; tables above 64 MiB are not
    kept; :func:`posenc.cache_limits` sets the budget and
    :func:`posenc.clear_caches` empties it).  A repeated call is then a
    lookup, and no caller can change what a later call returns:

    * NumPy: the table is **read-only**, on the first call as on later ones
      (``pe.copy()`` gives a writable one), and each call returns its own
      copy of the cached table: ``torch.from_numpy``, DLPack and
      ``load_state_dict`` write through NumPy's read-only flag, so a view
      would not be safe (a repeated call costs a copy of the table);
    * JAX arrays are immutable and returned as they are;
    * torch, CuPy and array-api-strict: each call returns its own copy
      (tensors cannot be made read-only, and ``load_state_dict`` writes into
      registered buffers in place).  On the CPU that copy is torch's
      copy-on-write clone: it shares memory with the cached table until it is
      first written to, so a repeated call costs no copy either.  On a GPU
      where posenc's Triton kernel runs (torch on CUDA; CuPy with torch
      installed) nothing is kept: each call writes a fresh table in one
      launch, which costs about what a copy of a kept table would, and no
      device memory is held between calls.

    Tables of array positions are computed on every call and are writable.
    On Dask an int ``positions`` gives a lazy table chunked along the rows
    (chunks of about Dask's ``array.chunk-size``, 128 MiB by default), so
    tables far larger than memory can be reduced chunk by chunk.

    References
    ----------
    .. [1] A. Vaswani et al., "Attention is all you need", NeurIPS 2017,
           https://arxiv.org/abs/1706.03762

    Examples
    --------
    >>> import posenc
    >>> pe = posenc.sinusoidal(6, 4)
    >>> pe.shape
    (6, 4)
    >>> pe[1].round(4)
    array([0.8415, 0.5403, 0.01  , 1.    ])
    >>> posenc.sinusoidal(3, 4, layout="concat")[1].round(4)
    array([0.8415, 0.01  , 0.5403, 1.    ])

    The same call on torch tensors returns a tensor on their device:

    >>> import torch
    >>> posenc.sinusoidal(torch.arange(2, 5), 8, dtype=torch.bfloat16).dtype
    torch.bfloat16
    """
    options = (dim, base, layout, convention, min_timescale, max_timescale, padding_idx, dtype, device, xp)
    if type(positions) is int:
        key = _compat.int_key(positions, options, xp, device, dtype)
    else:
        key = _compat.call_key((positions,), options)
    plan = _PLANS.get_or_make(
        key, _table_plan, positions, dim, base, layout, convention, min_timescale, max_timescale, padding_idx,
        dtype, device, xp, key,
    )
    ctx = plan.ctx
    if plan.positions is not None:
        positions = plan.positions
    if plan.scan:
        _checks.check_finite(positions, "positions", ctx.xp)
    if isinstance(positions, int):
        # a range: cached, a kernel of NumPy / torch CPU, row-chunked on Dask
        table = _tables.range_table(0, positions, plan.freqs, plan.dim, plan.layout, ctx)
    else:
        table = None
        if plan.rows is not None:
            # dense integer positions (an arange, a window): rows of the exact range table
            table = _tables.gathered_table(positions, plan.rows, plan.freqs, plan.dim, plan.layout, ctx)
        if table is None:
            s, c = plan.angles(positions)
            table = _tables.assemble(s, c, plan.dim, plan.layout, ctx)
    if plan.padding_idx is None:
        return table
    xp_ = ctx.xp
    p = xp_.arange(positions, device=ctx.device) if isinstance(positions, int) else positions
    zero = _angles.zeros((), table.dtype, ctx)
    return xp_.where((p == plan.padding_idx)[..., None], zero, table)


@dataclass(slots=True)
class _TablePlan:
    """What :func:`sinusoidal` does with positions of one type, dtype, device
    and shape and given options: validated once, kept in :data:`_PLANS`."""

    ctx: Context
    dim: int
    layout: str
    freqs: _angles.Freqs
    padding_idx: int | None
    #: the angles of array positions (None for an int n)
    angles: _angles.Angles | None
    #: how rows of a range table are gathered for these positions, or None
    rows: _kernels.Gather | None
    #: concrete float positions: scanned for NaN on every call
    scan: bool
    #: the checked positions of a call whose plan is not kept (ints, converted lists)
    positions: Any


#: sinusoidal's plans, keyed by the positions' (type, dtype, device, shape)
#: and the other arguments: a repeated call (every step) skips the checks
_PLANS = _cache.Memo("sinusoidal.plans", 2048)


def _table_plan(
    positions: Any, dim: Any, base: Any, layout: Any, convention: Any, min_timescale: Any, max_timescale: Any,
    padding_idx: Any, dtype: Any, device: Any, xp: Any, key: Any,
) -> _TablePlan:
    """Validate ``sinusoidal``'s arguments: the output size from the shapes
    before the positions are scanned (by the caller, on every call)."""
    keyed = key is not None  # a kept plan holds no arguments of the call
    ctx = _compat.resolve({"positions": positions}, xp=xp, device=device, dtype=dtype)
    layout = _checks.check_choice(layout, "layout", _checks.TABLE_LAYOUTS)
    dim, freqs = freq_args(dim, base, convention, min_timescale, max_timescale)
    checked = _checks.check_positions(positions, "positions", ctx, out_tail=(dim,), what="table", scan=False)
    if padding_idx is not None:
        padding_idx = _checks.check_int(padding_idx, "padding_idx")
    angles = rows = None
    scan = False
    if is_symbolic(checked):  # a traced length (torch.compile): the positions of an arange
        checked = ctx.xp.arange(checked, device=ctx.device)
    if padding_idx is not None and not _can_equal(padding_idx, checked, ctx):
        padding_idx = None  # no position can equal it: no zero row (a comparison would wrap or round it)
    if not isinstance(checked, int):
        rows = _tables.gather_rows(checked, dim, ctx)
        angles = _angles.prepare(checked, freqs, ctx)
        if rows is not None:  # dense positions take the table's rows: the angles need not look again
            angles = dataclasses.replace(angles, rows=None)
        scan = _compat.is_real_float_dtype(ctx.xp, checked.dtype) and _compat.is_concrete(checked)
    return _TablePlan(
        ctx=ctx, dim=dim, layout=layout, freqs=freqs, padding_idx=padding_idx, angles=angles, rows=rows,
        scan=scan, positions=None if keyed else checked,
    )


def _can_equal(idx: int, positions: Any, ctx: Context) -> bool:
    """Whether a position can equal the integer ``idx``: within ``range(n)``
    for an int ``n``, within an integer dtype's range, or a value of a
    floating dtype.  Outside these, ``positions == idx`` would convert
    ``idx`` to the positions' dtype first (torch wraps it around an integer
    dtype, rounds it to a float one; JAX refuses it): no row may be zeroed
    for a position that only equals ``idx`` after that conversion."""
    if isinstance(positions, int):
        return 0 <= idx < positions
    xp = ctx.xp
    if _compat.is_integer_dtype(xp, positions.dtype):
        info = xp.iinfo(positions.dtype)
        return int(info.min) <= idx <= int(info.max)
    info = xp.finfo(positions.dtype)
    digits = 1 - round(math.log2(float(info.eps)))  # significant bits: 24 for float32, 8 for bfloat16
    n = abs(idx)
    return n == 0 or (n <= float(info.max) and (n >> ((n & -n).bit_length() - 1)).bit_length() <= digits)


def sines(
    positions: int | Array,
    frequencies: Sequence[float] | Array,
    *,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    r"""Sine-only codes with chosen frequencies: ``sin(p * frequencies[j])``.

    The hand-made codes of the tutorials (``sin(x), sin(x/2), sin(x/5)``):
    unlike the sin/cos table they are not a rotation of one another under a
    shift, which is why the paper pairs each sine with a cosine.

    Parameters
    ----------
    positions : int or array
        As in :func:`sinusoidal`.
    frequencies : sequence of float or array
        Angular frequencies, one per output column.  A Python sequence is
        evaluated with posenc's accurate angles; an array is used as given
        (in float64 where the device has it).
    dtype, device, xp
        As in :func:`sinusoidal`.

    Returns
    -------
    array
        Shape ``positions.shape + (len(frequencies),)``.

    Examples
    --------
    >>> import posenc
    >>> posenc.sines(4, [1.0, 0.5, 0.2]).round(3)
    array([[0.   , 0.   , 0.   ],
           [0.841, 0.479, 0.199],
           [0.909, 0.841, 0.389],
           [0.141, 0.997, 0.565]])
    """
    ctx = _compat.resolve({"positions": positions, "frequencies": frequencies}, xp=xp, device=device, dtype=dtype)
    if _compat.is_array(frequencies):
        f = _checks.check_float_array(frequencies, "frequencies", ctx)
        if f.ndim != 1:
            msg = f"`frequencies` must be one-dimensional, got shape {tuple(f.shape)}"
            raise ValueError(msg)
        # output size first, then the NaN scans; at least one value per
        # position counts (the positions themselves are made even when the
        # output is empty)
        tail = (max(int(f.shape[0]), 1),)
        positions = _checks.check_positions(positions, "positions", ctx, out_tail=tail, what="table")
        _checks.check_all_finite(f, "frequencies", ctx)
        xp_ = ctx.xp
        p = positions
        if isinstance(p, int):
            p = xp_.arange(p, device=ctx.device)
        a = _angles.cast(p, ctx.wide, xp_)[..., None] * _angles.cast(f, ctx.wide, xp_)
        return _angles.cast(xp_.sin(a), ctx.dtype, xp_)
    if isinstance(frequencies, (str, bytes)) or not isinstance(frequencies, Sequence):
        msg = f"`frequencies` must be a sequence of numbers or an array, got {type(frequencies).__name__}"
        raise TypeError(msg)
    w = _sine_freqs(tuple(frequencies))
    positions = _checks.check_positions(positions, "positions", ctx, out_tail=(max(w.m, 1),), what="table")
    s, _ = _angles.sincos(positions, w, ctx)
    return _angles.cast(s, ctx.dtype, ctx.xp)


@host_constant
def _sine_freqs(frequencies: tuple[Any, ...]) -> _angles.Freqs:
    values = [_checks.check_float(v, "frequencies") for v in frequencies]
    return _angles.Freqs.from_array(np.asarray(values, dtype=np.float64))


@kept_on_devices
def binary(
    positions: int | Array,
    dim: int,
    *,
    signed: bool = False,
    dtype: Any = None,
    device: Any = None,
    xp: Any = None,
) -> Array:
    """Binary position codes: column ``j`` is bit ``j`` of the position.

    Least significant bit first, so ``binary(4, 3)`` has rows
    ``000, 100, 010, 110`` read left to right.  The lowest bit flips at every
    step and bit ``j`` every ``2**j`` steps: the discrete ancestor of the
    sinusoidal table's fast and slow dimensions.

    Parameters
    ----------
    positions : int or int array
        ``n`` (positions ``0 .. n-1``) or integer positions in ``[0, 2**dim)``.
        Positions outside that range are a :class:`ValueError` (checked on
        concrete arrays; on traced or lazy arrays such rows are NaN).
    dim : int
        Number of bits.
    signed : bool, default False
        ``False``: values 0 and 1; ``True``: -1 and +1 (``2*bit - 1``).
    dtype, device, xp
        Output floating dtype, device and namespace.

    Returns
    -------
    array
        Shape ``positions.shape + (dim,)``.

    Examples
    --------
    >>> import posenc
    >>> posenc.binary(4, 3)
    array([[0., 0., 0.],
           [1., 0., 0.],
           [0., 1., 0.],
           [1., 1., 0.]])
    >>> posenc.binary(4, 2, signed=True)[3]
    array([1., 1.])
    """
    ctx = _compat.resolve({"positions": positions}, xp=xp, device=device, dtype=dtype)
    dim = _checks.check_dim(dim)
    signed = _checks.check_bool(signed, "signed")
    xp_ = ctx.xp
    if isinstance(positions, bool) or isinstance(positions, (int, np.integer)) and not _compat.is_array(positions):
        n = _checks.check_int(positions, "positions", minimum=0)
        if dim < 63 and n > 2**dim:
            msg = f"`positions` must be at most 2**dim = {2**dim} for dim={dim}, got {n}"
            raise ValueError(msg)
        _checks.check_size((n, dim), "table", "`positions` or `dim`")  # before the positions are made
        p = xp_.arange(n, device=ctx.device)
    else:
        p = _checks.check_int_array(positions, "positions", ctx)
        _checks.check_size(tuple(p.shape) + (dim,), "table", "`positions` or `dim`")
    width = int(xp_.iinfo(p.dtype).bits)
    limit = dim if dim < width - 1 else None
    if limit is not None:
        bad = (p < 0) | (p >= 2**limit)
    else:
        bad = p < 0
    if _compat.is_concrete(p) and math.prod(p.shape) > 0 and bool(xp_.any(bad)):
        hi = f"2**{dim}" if limit is not None else "infinity"
        msg = f"`positions` must lie in [0, {hi}) for dim={dim}"
        raise ValueError(msg)
    nbits = min(dim, width - 1)
    j = xp_.arange(nbits, dtype=p.dtype, device=ctx.device)
    b = xp_.bitwise_and(xp_.bitwise_right_shift(p[..., None], j), 1)
    out = _angles.cast(b, ctx.work, xp_)
    if nbits < dim:
        pad_shape = tuple(p.shape) + (dim - nbits,)
        pad = _angles.zeros(pad_shape, ctx.work, ctx)
        out = xp_.concat([out, pad], axis=-1)
    if signed:
        out = 2.0 * out - 1.0
    nan = float("nan")
    out = xp_.where(bad[..., None], nan, out)
    return ctx.place(_angles.cast(out, ctx.dtype, xp_))


def add_sinusoidal(
    x: Array,
    *,
    offset: int = 0,
    input_scale: float = 1.0,
    base: float = 10000.0,
    layout: str = "interleaved",
    convention: str = "paper",
    min_timescale: float | None = None,
    max_timescale: float | None = None,
) -> Array:
    r"""Add the sinusoidal table to embeddings: ``x * input_scale + PE``.

    ``x`` has shape ``(..., seq, dim)``; row ``t`` receives the encoding of
    position ``offset + t`` (``offset`` is the number of tokens already
    decoded, for incremental decoding with a cache).

    Parameters
    ----------
    x : array
        Real floating embeddings ``(..., seq, dim)``.  The output has the
        dtype and device of ``x``; the table is computed in at least float32.
    offset : int or 0-d int array, default 0
        Position of the first row, at most ``2**64`` in magnitude: the number
        of tokens already in the cache.  May be traced (a 0-d array under
        ``jax.jit``, a ``SymInt`` under ``torch.compile``): the output shape
        does not depend on it.
    input_scale : float, default 1.0
        Factor applied to ``x`` first; Vaswani et al. multiply the embeddings
        by :math:`\sqrt{d}`: pass ``input_scale=math.sqrt(dim)``.
    base, layout, convention, min_timescale, max_timescale
        As in :func:`sinusoidal`.

    Returns
    -------
    array
        Same shape, dtype and device as ``x``.

    References
    ----------
    .. [1] A. Vaswani et al., "Attention is all you need", NeurIPS 2017,
           https://arxiv.org/abs/1706.03762

    Examples
    --------
    >>> import numpy as np, posenc
    >>> x = np.zeros((2, 3, 4), dtype=np.float32)
    >>> y = posenc.add_sinusoidal(x, offset=5)
    >>> bool(np.allclose(y[0], posenc.sinusoidal(np.arange(5, 8), 4)))
    True
    """
    if not _compat.is_array(x):
        msg = f"`x` must be an array of shape (..., seq, dim), got {type(x).__name__}"
        raise TypeError(msg)
    ctx0 = _compat.resolve({"x": x})
    xp_ = ctx0.xp
    _checks.check_real_float(x, "x", xp_, min_ndim=2, shape="(..., seq, dim)")
    # the output has x's shape (x may be a zero-stride view of a huge shape)
    _checks.check_size(tuple(x.shape), "output", "`x`")
    ctx = _compat.resolve({"x": x}, dtype=x.dtype)
    offset = _checks.check_offset(offset, "offset", ctx)
    input_scale = _checks.check_float(input_scale, "input_scale")
    limit, _ = _checks.largest(ctx, x.dtype)
    if not abs(input_scale) <= limit:
        msg = (
            f"`input_scale` = {input_scale!r} overflows the dtype {_checks.dtype_name(x.dtype)} of `x` "
            f"(largest {limit:.3g})"
        )
        raise ValueError(msg)
    layout = _checks.check_choice(layout, "layout", _checks.TABLE_LAYOUTS)
    # a traced sequence length (torch SymInt) stays traced: no recompile per length
    seq, dim = x.shape[-2], int(x.shape[-1])
    _, w = freq_args(dim, base, convention, min_timescale, max_timescale)
    if _compat.is_array(offset):  # a traced offset (jax.jit, torch.compile): the array path
        pos, wrapped = _checks.add_offset(xp_.arange(seq, device=ctx.device), offset, ctx)
        s, c = _angles.sincos(pos, w, ctx, "`offset`")
        if wrapped is not None:  # positions that left the integer type: NaN rows
            s, c = _angles.nan_rows(s, c, wrapped, ctx)
        pe = _tables.assemble(s, c, dim, layout, ctx)
    else:
        pe = _tables.range_table(offset, seq, w, dim, layout, ctx, share=False)
    if input_scale != 1.0:
        x = x * input_scale
    return x + pe
