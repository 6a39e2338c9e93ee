"""posenc.torch.flex: FlexAttention score and mask functions (torch tensors only).

The factories return functions, not arrays: each case calls the returned
function on broadcast indices (as FlexAttention's unfused path does) and,
where posenc materialises the same bias, compares it with posenc's matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.conftest import BackendKind
from tests.hardening._fuzz import Backend, Case

from ._draw import real_array
from ._spec import Draw, register

BACKENDS = (BackendKind.TORCH, BackendKind.TORCH_META)
FACTORY = "a factory of FlexAttention functions: the tensors it closes over decide namespace, device and dtype"
RETURNS_FUNCTION = "returns a function closed over the caller's tensors (learned tables are read when it runs)"
NO_ALLOCATION = "closes over the caller's tensors (and O(heads) or O(n) of its own)"


def _grid(q: int, k: int, heads: int, be: Backend) -> tuple[Any, Any, Any]:
    import torch

    dev = be.device
    return (
        torch.arange(heads, device=dev)[:, None, None],
        torch.arange(q, device=dev)[:, None],
        torch.arange(k, device=dev)[None, :],
    )


def _score_check(
    be: Backend, heads: int, q: int, k: int, dtype: Any, want: Any = None, batch: int | None = None
) -> Any:
    """Check of a returned score_mod: callable, the bias of shape (heads, q, k)
    (per batch row), equal to ``want()`` (posenc's matrix) where given."""
    import torch

    def check(fn: Any) -> None:
        assert callable(fn), f"not a function: {fn!r}"
        h, qi, ki = _grid(q, k, heads, be)
        zero = torch.zeros((heads, q, k), dtype=dtype, device=be.device)
        rows = [0] if batch is None else list(range(batch))
        got = [fn(zero, b, h, qi, ki) for b in rows]
        for g in got:
            assert tuple(g.shape) == (heads, q, k), tuple(g.shape)
        if want is None or not be.has_values:
            return
        ref = want()
        ref = ref if batch is not None else ref[None]
        for b, g in zip(rows, got):
            a, r = g.detach().cpu().numpy(), ref[b].detach().cpu().numpy()
            tol = 1e-12 if dtype == torch.float64 else 4e-6
            np.testing.assert_allclose(a, r, rtol=tol, atol=tol)

    return check


def _offset(draw: Draw, be: Backend, kw: dict, q: int, k: int) -> int:
    """Draw an ``offset`` (queries among the keys): an int or a 0-d tensor."""
    off = draw(st.integers(0, max(k - q, 0)))
    choice = draw(st.integers(0, 2))
    if choice == 1:
        kw["offset"] = off
    elif choice == 2:
        kw["offset"] = be.asarray(np.array(off), dtype=draw(st.sampled_from(["int32", "int64"])))
    else:
        off = 0
    return off


def _lengths(draw: Draw) -> tuple[int, int]:
    q = draw(st.integers(1, 5))
    return q, q + draw(st.integers(0, 4))


@register(
    "torch.flex.alibi",
    backends=BACKENDS,
    trio=FACTORY,
    function=RETURNS_FUNCTION,
    aliases={
        "num_heads": ("slopes",),
        "slopes": ("num_heads", "max_bias"),
        "max_bias": ("slopes",),
        "offset": ("positions",),
        "positions": ("offset",),
    },
    huge=(lambda: ((2**41,), {}),),
)
def _alibi(draw: Draw, be: Backend) -> Case:
    import torch

    import posenc

    heads = draw(st.integers(1, 6))
    q, k = _lengths(draw)
    kw: dict[str, Any] = {}
    form = draw(st.sampled_from([None, "paper", "bloom"]))
    if form is not None:
        kw["form"] = form
    causal = draw(st.booleans())
    if causal or draw(st.booleans()):
        kw["causal"] = causal
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    off = 0
    if draw(st.booleans()):
        pos = be.asarray(np.array(draw(st.lists(st.integers(-50, 50), min_size=k, max_size=k))))
        kw["positions"] = (pos[k - q :], pos)
    else:
        off = _offset(draw, be, kw, q, k)
    if draw(st.booleans()):
        sl, _ = real_array(draw, be, (heads,), 0.001, 1.0)
        kw["slopes"] = sl
    else:
        if draw(st.booleans()):
            kw["max_bias"] = draw(st.floats(0.5, 16.0))
        if draw(st.booleans()):
            kw["device"] = be.device

    def want() -> Any:
        common = {k_: v for k_, v in kw.items() if k_ in ("form", "causal", "slopes")}
        if "slopes" not in kw:
            common["max_bias"] = kw.get("max_bias", 8.0)
        if "positions" in kw:
            out = posenc.alibi_bias(heads, positions=kw["positions"], dtype=dtype, **common)
        else:
            out = posenc.alibi_bias(heads, q, k, offset=off, dtype=dtype, xp=torch, device=be.device, **common)
        return out.expand(heads, q, k)

    return Case(be, (heads,), kw, kind="object", check=_score_check(be, heads, q, k, dtype, want))


@register(
    "torch.flex.t5",
    backends=BACKENDS,
    trio=FACTORY,
    function=RETURNS_FUNCTION,
    aliases={"num_buckets": ("bias",), "bias": ("num_buckets",), "offset": ("positions",), "positions": ("offset",)},
    huge=(lambda: ((_t5_table(),), {"num_buckets": 8, "max_distance": 2**41}),),
)
def _t5(draw: Draw, be: Backend) -> Case:
    import torch

    import posenc

    heads = draw(st.integers(1, 4))
    bidirectional = draw(st.booleans())
    nb = 2 * draw(st.integers(2, 8))
    md = draw(st.integers(nb // 2 + 1, 40))
    q, k = _lengths(draw)
    table, _ = real_array(draw, be, (nb, heads), -2.0, 2.0)
    kw: dict[str, Any] = {"num_buckets": nb, "max_distance": md, "bidirectional": bidirectional}
    off = _offset(draw, be, kw, q, k)

    def want() -> Any:
        b = posenc.t5_buckets(q, k, offset=off, num_buckets=nb, max_distance=md, bidirectional=bidirectional, xp=torch)
        return table[b.to(table.device)].permute(2, 0, 1)

    return Case(be, (table,), kw, kind="object", check=_score_check(be, heads, q, k, table.dtype, want))


def _t5_table() -> Any:
    import torch

    return torch.zeros(8, 2)


@register(
    "torch.flex.relative_table",
    backends=BACKENDS,
    trio=FACTORY,
    function=RETURNS_FUNCTION,
    no_allocation=NO_ALLOCATION,
    aliases={
        "table": ("index", "max_distance"),
        "index": ("max_distance", "table"),
        "max_distance": ("index", "table"),
        "offset": ("index",),
    },
)
def _relative_table(draw: Draw, be: Backend) -> Case:
    import torch

    import posenc

    heads = draw(st.integers(1, 4))
    if draw(st.booleans()):
        window = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        cls = draw(st.booleans())
        index = posenc.relative_position_index(window, class_token=cls, xp=torch, device=be.device)
        rows = (2 * window[0] - 1) * (2 * window[1] - 1) + (3 if cls else 0)
        table, _ = real_array(draw, be, (rows, heads), -2.0, 2.0)
        n = int(index.shape[0])
        check = _score_check(be, heads, n, n, table.dtype, lambda: table[index].permute(2, 0, 1))
        return Case(be, (table, index), {}, kind="object", check=check)
    dist = draw(st.integers(0, 4))
    table, _ = real_array(draw, be, (2 * dist + 1, heads), -2.0, 2.0)
    q, k = _lengths(draw)
    kw: dict[str, Any] = {"max_distance": dist}
    off = _offset(draw, be, kw, q, k)

    def want() -> Any:
        rel = posenc.relative_positions(q, k, offset=off, max_distance=dist, xp=torch, device=be.device) + dist
        return table[rel].permute(2, 0, 1)

    return Case(be, (table,), kw, kind="object", check=_score_check(be, heads, q, k, table.dtype, want))


@register(
    "torch.flex.kerple",
    backends=BACKENDS,
    trio=FACTORY,
    function=RETURNS_FUNCTION,
    no_allocation=NO_ALLOCATION,
    aliases={"r1": ("r2",), "r2": ("r1", "kind"), "kind": ("r2",), "offset": ("positions",), "positions": ("offset",)},
)
def _kerple(draw: Draw, be: Backend) -> Case:
    import posenc

    heads = draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["log", "power"]))
    dt = draw(st.sampled_from(["float32", "float64"]))
    r1, _ = real_array(draw, be, (heads,), 0.01, 4.0, dtype=dt)
    r2, _ = real_array(draw, be, (heads,), 0.01, 2.0, dtype=dt)
    causal = draw(st.booleans())
    q, k = _lengths(draw)
    kw: dict[str, Any] = {"kind": kind, "causal": causal}
    off = _offset(draw, be, kw, q, k)

    def want() -> Any:
        return posenc.kerple_bias(q, k, r1=r1, r2=r2, kind=kind, causal=causal, offset=off)

    return Case(be, (r1, r2), kw, kind="object", check=_score_check(be, heads, q, k, r1.dtype, want))


def _broadcast_gates() -> Any:
    import torch

    return torch.zeros(1).expand(2**41)  # one value, 2**41 elements


@register(
    "torch.flex.forgetting_gate",
    backends=BACKENDS,
    trio=FACTORY,
    function=RETURNS_FUNCTION,
    # the n cumulative sums of the caller's gates: a broadcast view of more than the limit is refused by its size
    huge=(lambda: ((_broadcast_gates(),), {"causal": False}),),
    aliases={
        "log_gates": ("backward_log_gates",),
        "backward_log_gates": ("log_gates", "causal"),
        "causal": ("backward_log_gates",),
    },
)
def _forgetting_gate(draw: Draw, be: Backend) -> Case:
    import posenc

    heads = draw(st.integers(1, 3))
    n = draw(st.integers(1, 6))
    layout = draw(st.sampled_from([(n,), (heads, n), (2, heads, n)]))
    g, _ = real_array(draw, be, layout, -3.0, 0.0)
    causal = draw(st.booleans())
    kw: dict[str, Any] = {"causal": causal}
    e = None
    if not causal and draw(st.booleans()):
        e, _ = real_array(draw, be, layout, -3.0, 0.0, dtype=str(g.dtype).split(".")[-1])
        kw["backward_log_gates"] = e
    batch = 2 if len(layout) == 3 else None

    def want() -> Any:
        out = posenc.cumulative_gate_bias(g, causal=causal, backward_log_gates=e)
        return out.expand(heads, n, n) if len(layout) == 1 else out

    return Case(be, (g,), kw, kind="object", check=_score_check(be, heads, n, n, g.dtype, want, batch=batch))


@register(
    "torch.flex.compose",
    backends=BACKENDS,
    trio=FACTORY,
    function=RETURNS_FUNCTION,
    no_allocation="composes the functions it is given",
)
def _compose(draw: Draw, be: Backend) -> Case:
    import torch

    import posenc
    from posenc.torch import flex

    heads = draw(st.integers(1, 4))
    n = draw(st.integers(1, 5))
    parts = draw(st.lists(st.floats(0.5, 8.0), min_size=1, max_size=3))
    mods = tuple(flex.alibi(heads, max_bias=mb, device=be.device) for mb in parts)

    def want() -> Any:
        return sum(
            posenc.alibi_bias(heads, n, max_bias=mb, xp=torch, dtype=torch.float64, device=be.device) for mb in parts
        )

    return Case(be, mods, {}, kind="object", check=_score_check(be, heads, n, n, torch.float64, want))


def _mask_check(be: Backend, q: int, k: int, oracle: Any, batch: int = 1) -> Any:
    def check(fn: Any) -> None:
        assert callable(fn), f"not a function: {fn!r}"
        _, qi, ki = _grid(q, k, 1, be)
        for b in range(batch):
            got = fn(b, 0, qi, ki)
            if not be.has_values:
                continue
            ii, jj = np.meshgrid(np.arange(q), np.arange(k), indexing="ij")
            want = np.broadcast_to(oracle(b, ii, jj), (q, k))
            np.testing.assert_array_equal(np.broadcast_to(got.cpu().numpy(), (q, k)), want)

    return check


@register("torch.flex.causal", backends=BACKENDS, trio=FACTORY, function=RETURNS_FUNCTION, no_allocation=NO_ALLOCATION)
def _causal(draw: Draw, be: Backend) -> Case:
    q, k = _lengths(draw)
    kw: dict[str, Any] = {}
    off = _offset(draw, be, kw, q, k)
    return Case(be, (), kw, kind="object", check=_mask_check(be, q, k, lambda b, i, j: j <= i + off))


@register(
    "torch.flex.sliding_window", backends=BACKENDS, trio=FACTORY, function=RETURNS_FUNCTION, no_allocation=NO_ALLOCATION
)
def _sliding_window(draw: Draw, be: Backend) -> Case:
    q, k = _lengths(draw)
    w = draw(st.integers(1, 6))
    causal = draw(st.booleans())
    kw: dict[str, Any] = {"causal": causal}
    off = _offset(draw, be, kw, q, k)

    def oracle(b: int, i: Any, j: Any) -> Any:
        d = i + off - j
        return ((d >= 0) & (d < w)) if causal else (np.abs(d) < w)

    return Case(be, (w,), kw, kind="object", check=_mask_check(be, q, k, oracle))


@register(
    "torch.flex.documents", backends=BACKENDS, trio=FACTORY, function=RETURNS_FUNCTION, no_allocation=NO_ALLOCATION
)
def _documents(draw: Draw, be: Backend) -> Case:
    n = draw(st.integers(1, 8))
    batch = draw(st.integers(1, 2))
    ids = np.array([sorted(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))) for _ in range(batch)])
    doc = be.asarray(
        ids if draw(st.booleans()) or batch > 1 else ids[0], dtype=draw(st.sampled_from(["int32", "int64"]))
    )
    return Case(
        be, (doc,), {}, kind="object", check=_mask_check(be, n, n, lambda b, i, j: ids[b][i] == ids[b][j], batch)
    )


@register(
    "torch.flex.prefix_lm", backends=BACKENDS, trio=FACTORY, function=RETURNS_FUNCTION, no_allocation=NO_ALLOCATION
)
def _prefix_lm(draw: Draw, be: Backend) -> Case:
    q, k = _lengths(draw)
    q = k
    if draw(st.booleans()):
        p = draw(st.integers(0, k + 2))
        return Case(be, (p,), {}, kind="object", check=_mask_check(be, q, k, lambda b, i, j: (j < p) | (j <= i)))
    ps = draw(st.lists(st.integers(0, k + 2), min_size=2, max_size=2))
    arg = be.asarray(np.array(ps), dtype="int64")
    return Case(
        be, (arg,), {}, kind="object", check=_mask_check(be, q, k, lambda b, i, j: (j < ps[b]) | (j <= i), batch=2)
    )


@register(
    "torch.flex.document_positions",
    backends=BACKENDS,
    trio="positions of the caller's `doc_ids`: their device, int64",
    no_allocation="returns an array the size of its input",
)
def _document_positions(draw: Draw, be: Backend) -> Case:
    import torch

    shape = draw(st.sampled_from([(draw(st.integers(0, 8)),), (2, draw(st.integers(0, 8)))]))
    ids = np.sort(
        np.array(draw(st.lists(st.integers(0, 3), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))).reshape(
            shape
        ),
        axis=-1,
    )
    doc = be.asarray(ids, dtype=draw(st.sampled_from(["int32", "int64", "uint8"])))

    def check(r: Any) -> None:
        if not be.has_values:
            return
        want = np.zeros(shape, dtype=np.int64)
        for idx in np.ndindex(shape):
            *row, t = idx
            want[idx] = 0 if t == 0 or ids[(*row, t - 1)] != ids[idx] else want[(*row, t - 1)] + 1
        np.testing.assert_array_equal(r.cpu().numpy(), want)

    return Case(be, (doc,), {}, shape=shape, dtype=torch.int64, check=check)
