"""posenc.torch.flex: FlexAttention score and mask functions.

Oracle: ``scaled_dot_product_attention`` with posenc's materialised bias
(``alibi_bias``, ``t5_buckets`` + table, ``relative_position_index`` +
table, ``relative_positions``, ``kerple_bias``, ``cumulative_gate_bias``),
which its own tests hold to float64 formulas and to the peers; masks against
NumPy formulas; the peers' own code (x-transformers, transformers' T5).

FlexAttention on the CPU (torch 2.13): eager in every dtype, with gradients
(it warns that it materialises the scores: the warning is filtered here);
compiled in float32 only, without a backward pass.  Two compiled cases, small.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
flex_mod = pytest.importorskip("torch.nn.attention.flex_attention")

import torch.nn.functional as F  # noqa: E402

import posenc  # noqa: E402
from posenc.torch import flex  # noqa: E402

flex_attention = flex_mod.flex_attention
create_block_mask = flex_mod.create_block_mask
and_masks = flex_mod.and_masks

pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile:UserWarning")

F64 = torch.float64
F32 = torch.float32
TOL64 = 1e-12
EPS32 = float(torch.finfo(torch.float32).eps)
HEADS = [1, 3, 8, 12]
#: (query_len, key_len, offset): self-attention, a decode step against a cache, a chunk of queries
SHAPES = [(9, 9, 0), (1, 13, 12), (5, 13, 8)]


def _randn(*shape, seed=0, dtype=F64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _qkv(b, h, q, k, dtype=F64, d=8, seed=0):
    return (
        _randn(b, h, q, d, seed=seed, dtype=dtype),
        _randn(b, h, k, d, seed=seed + 1, dtype=dtype),
        _randn(b, h, k, d, seed=seed + 2, dtype=dtype),
    )


def _sdpa(q, k, v, bias):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))


def _flex(q, k, v, score_mod=None, block_mask=None):
    return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask)


def _err(got, want):
    return float((got - want).abs().max())


def _check(got, want):
    """float64 within 1e-12; float32 within a few ulp of the output's magnitude."""
    if got.dtype == F64:
        assert _err(got, want) <= TOL64, _err(got, want)
    else:
        scale = max(1.0, float(want.abs().max()))
        assert _err(got, want) <= 8 * EPS32 * scale, (_err(got, want), 8 * EPS32 * scale)


def _t5_bias(table, q, k, offset, **kw):
    buckets = posenc.t5_buckets(q, k, offset=offset, xp=torch, **kw)
    return table[buckets].permute(2, 0, 1)  # (heads, q, k)


# ----------------------------------------------------------------- ALiBi
def _cases(heads_list, flags, dtype=F64):
    """Every head count on self-attention; the decode shapes at 3 and 12 heads;
    each flag both ways (few cases: eager FlexAttention costs ~0.1 s a call)."""
    out = [(h, flags[0], SHAPES[0], dtype) for h in heads_list]
    out += [(h, f, shape, dtype) for h in (3, 12) for f in flags for shape in SHAPES[1:]]
    return out


#: float32 on a few cases: the decode chunk, 12 heads, each flag
F32_CASES = [(12, True, SHAPES[2], F32), (3, False, SHAPES[1], F32), (8, False, SHAPES[0], F32)]


@pytest.mark.parametrize("heads,causal,shape,dtype", _cases(HEADS, (False, True)) + F32_CASES, ids=str)
def test_alibi_equals_sdpa_with_posenc_bias(heads, causal, shape, dtype):
    q_len, k_len, off = shape
    q, k, v = _qkv(2, heads, q_len, k_len, dtype)
    bias = posenc.alibi_bias(heads, q_len, k_len, offset=off, causal=causal, xp=torch, dtype=dtype)
    want = _sdpa(q, k, v, bias)
    _check(_flex(q, k, v, flex.alibi(heads, causal=causal, offset=off)), want)
    if off:  # the offset as a 0-d tensor (a compiled decode loop changes it without recompiling)
        _check(_flex(q, k, v, flex.alibi(heads, causal=causal, offset=torch.tensor(off))), want)


@pytest.mark.parametrize("heads", [3, 12])
def test_alibi_bloom_form_and_max_bias(heads):
    q, k, v = _qkv(1, heads, 5, 13)
    bias = posenc.alibi_bias(heads, 5, 13, form="bloom", causal=True, max_bias=4.0, xp=torch, dtype=F64)
    got = _flex(q, k, v, flex.alibi(heads, form="bloom", causal=True, offset=8, max_bias=4.0))
    _check(got, _sdpa(q, k, v, bias))
    # BLOOM's form equals the paper's after the causal softmax
    paper = _flex(q, k, v, flex.alibi(heads, causal=True, offset=8, max_bias=4.0))
    assert _err(got, paper) < 1e-12


def test_alibi_slopes_are_posenc_slopes_and_the_gym_formula_is_not():
    """The control: attention-gym's ``2^(-8(h+1)/H)`` is the paper's at 8 heads only."""
    heads, n = 12, 9
    q, k, v = _qkv(1, heads, n, n)
    want = _sdpa(q, k, v, posenc.alibi_bias(heads, n, xp=torch, dtype=F64))
    got = _flex(q, k, v, flex.alibi(heads))
    _check(got, want)
    gym = torch.tensor([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)], dtype=F64)
    wrong = _flex(q, k, v, flex.alibi(heads, slopes=gym))
    assert _err(wrong, want) > 1e-3
    # ... and at a power of two the two formulas agree (the control is about the head count)
    gym8 = torch.tensor([2.0 ** (-8.0 * (h + 1) / 8) for h in range(8)], dtype=F64)
    assert torch.equal(gym8, posenc.alibi_slopes(8, xp=torch, dtype=F64))


def test_alibi_reversed_sign_fails():
    heads, n = 8, 9
    q, k, v = _qkv(1, heads, n, n)
    want = _sdpa(q, k, v, posenc.alibi_bias(heads, n, xp=torch, dtype=F64))
    m = posenc.alibi_slopes(heads, xp=torch, dtype=F64)
    _check(_flex(q, k, v, flex.alibi(heads, slopes=m)), want)
    assert _err(_flex(q, k, v, flex.alibi(heads, slopes=-m)), want) > 1e-3


def test_alibi_packed_documents_positions_restart():
    """Positions from document_positions give alibi_bias(positions=...); plain
    offsets (positions that run on across documents) are the control."""
    heads = 3
    doc = torch.tensor([[0, 0, 0, 1, 1, 2, 2, 2, 2], [5, 5, 5, 5, 5, 7, 7, 9, 9]])
    pos = flex.document_positions(doc)
    q, k, v = _qkv(2, heads, 9, 9)
    want = _sdpa(q, k, v, posenc.alibi_bias(heads, positions=pos, xp=torch, dtype=F64))
    _check(_flex(q, k, v, flex.alibi(heads, positions=pos)), want)
    assert _err(_flex(q, k, v, flex.alibi(heads)), want) > 1e-3
    # with the documents' mask and causal attention, as a packed batch trains
    mask = create_block_mask(and_masks(flex.causal(), flex.documents(doc)), 2, None, 9, 9, device="cpu")
    dense = posenc.alibi_bias(heads, positions=pos, causal=True, xp=torch, dtype=F64)
    same_doc = (doc[:, :, None] == doc[:, None, :])[:, None]
    want = _sdpa(q, k, v, torch.where(same_doc, dense, -math.inf))
    _check(_flex(q, k, v, flex.alibi(heads, positions=pos, causal=True), block_mask=mask), want)


def test_alibi_positions_pair_decode_step():
    heads = 3
    kp = torch.tensor([[0, 1, 2, 3, 4, 5], [0, 0, 0, 1, 2, 3]])  # the second row left-padded
    qp = kp[:, -1:]
    q, k, v = _qkv(2, heads, 1, 6)
    want = _sdpa(q, k, v, posenc.alibi_bias(heads, positions=(qp, kp), xp=torch, dtype=F64))
    _check(_flex(q, k, v, flex.alibi(heads, positions=(qp, kp))), want)


def test_alibi_learned_slopes_gradient():
    heads, n = 3, 7
    q, k, v = _qkv(1, heads, n, n)
    s1 = torch.tensor([0.5, 0.3, 0.1], dtype=F64, requires_grad=True)
    s2 = s1.detach().clone().requires_grad_(True)
    (g1,) = torch.autograd.grad(_flex(q, k, v, flex.alibi(heads, slopes=s1)).square().sum(), s1)
    want = _sdpa(q, k, v, posenc.alibi_bias(heads, n, slopes=s2))
    (g2,) = torch.autograd.grad(want.square().sum(), s2)
    assert _err(g1, g2) < 1e-10


# ----------------------------------------------------------------- T5
T5_SHAPES = [(40, 40, 0), (1, 41, 40), (6, 41, 35)]  # distances past max_distance = 16
T5_CASES = [(h, True, T5_SHAPES[0], F64) for h in HEADS]
T5_CASES += [(h, bd, shape, F64) for h in (3, 12) for bd in (True, False) for shape in T5_SHAPES[1:]]
T5_CASES += [(12, False, T5_SHAPES[2], F32), (3, True, T5_SHAPES[0], F32)]


@pytest.mark.parametrize("heads,bidirectional,shape,dtype", T5_CASES, ids=str)
def test_t5_equals_sdpa_with_posenc_buckets(heads, bidirectional, shape, dtype):
    q_len, k_len, off = shape
    kw = {"num_buckets": 8, "max_distance": 16, "bidirectional": bidirectional}  # distances past max_distance
    table = _randn(8, heads, seed=3, dtype=dtype)
    q, k, v = _qkv(1, heads, q_len, k_len, dtype)
    want = _sdpa(q, k, v, _t5_bias(table, q_len, k_len, off, **kw))
    _check(_flex(q, k, v, flex.t5(table, offset=off, **kw)), want)


def test_t5_defaults_and_positions():
    heads = 4
    table = _randn(32, heads, seed=4)
    q, k, v = _qkv(1, heads, 200, 200)
    want = _sdpa(q, k, v, _t5_bias(table, 200, 200, 0))
    _check(_flex(q, k, v, flex.t5(table)), want)
    # positions: a second document starting at token 120 sees the buckets of its own positions
    doc = torch.tensor([0] * 120 + [1] * 80)
    pos = flex.document_positions(doc)
    rel = pos[None, :] - pos[:, None]
    want = _sdpa(q, k, v, table[posenc.t5_bucket(rel)].permute(2, 0, 1))
    _check(_flex(q, k, v, flex.t5(table, positions=pos)), want)


def test_t5_gradient_of_the_table():
    heads = 3
    t1 = _randn(8, heads, seed=5).requires_grad_(True)
    t2 = t1.detach().clone().requires_grad_(True)
    q, k, v = _qkv(1, heads, 20, 20)
    kw = {"num_buckets": 8, "max_distance": 10}
    (g1,) = torch.autograd.grad(_flex(q, k, v, flex.t5(t1, **kw)).square().sum(), t1)
    (g2,) = torch.autograd.grad(_sdpa(q, k, v, _t5_bias(t2, 20, 20, 0, **kw)).square().sum(), t2)
    assert _err(g1, g2) < 1e-10


# ----------------------------------------------------------------- tables
@pytest.mark.parametrize("class_token", [False, True])
@pytest.mark.parametrize("heads", [3, 12])
def test_relative_table_swin_window(class_token, heads):
    window = (3, 4)
    index = posenc.relative_position_index(window, class_token=class_token, xp=torch)
    rows = 5 * 7 + (3 if class_token else 0)
    n = index.shape[0]
    table = _randn(rows, heads, seed=6)
    q, k, v = _qkv(4, heads, n, n)  # 4 windows as the batch
    want = _sdpa(q, k, v, table[index].permute(2, 0, 1))
    _check(_flex(q, k, v, flex.relative_table(table, index)), want)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint16", "uint64"])
def test_relative_table_index_of_every_integer_dtype(dtype):
    """An index of any integer dtype gives the rows it names: torch would
    take a uint8 index as a mask, and has no comparison of uint16 or uint64
    tensors (the range check), so the index is widened to int64."""
    window, heads = (3, 4), 3
    index = posenc.relative_position_index(window, xp=torch)
    table = _randn(5 * 7, heads, seed=6)
    n = index.shape[0]
    q, k, v = _qkv(2, heads, n, n)
    want = _sdpa(q, k, v, table[index].permute(2, 0, 1))
    narrow = index.to(getattr(torch, dtype))
    _check(_flex(q, k, v, flex.relative_table(table, narrow)), want)
    with pytest.raises(ValueError, match=r"`index` must hold rows of `table` in \[0, 35\), got values in \[0, 40\]"):
        flex.relative_table(table, torch.tensor([[0, 40]], dtype=getattr(torch, dtype)))


#: positions whose differences wrap in their own dtype (uint8 0 - 255 is 1,
#: int8 100 - (-100) is -56) or that torch cannot subtract at all (uint16+)
NARROW_POSITIONS = {
    "uint8": [[0, 255, 7, 200], [3, 0, 250, 1]],
    "int8": [[-100, 100, 0, 127], [-128, 5, 90, -90]],
    "uint16": [[0, 60000, 7, 1], [65535, 0, 3, 9]],
    "int16": [[-30000, 30000, 0, 5], [1, 2, 3, 4]],
    "int32": [[-(2**31), 2**31 - 1, 0, 5], [1, 2, 3, 4]],
    "uint32": [[0, 2**32 - 1, 7, 1], [5, 4, 3, 2]],
    "uint64": [[0, 2**40, 7, 1], [5, 4, 3, 2]],
}


@pytest.mark.parametrize("dtype", sorted(NARROW_POSITIONS))
@pytest.mark.parametrize("kind", ["alibi", "t5", "kerple"])
def test_positions_of_every_integer_dtype(kind, dtype):
    """Per-token positions of any integer dtype give the scores of the same
    positions in int64 (the oracle: posenc's dense bias of int64 positions):
    a uint8 or int8 pair that wraps in its own dtype gave another bias,
    silently, and torch computes no difference of uint16+ tensors."""
    heads = 3
    wide = torch.tensor(NARROW_POSITIONS[dtype], dtype=torch.int64)
    narrow = wide.to(getattr(torch, dtype))
    assert torch.equal(narrow.to(torch.int64), wide)  # (the values fit the dtype)
    q, k, v = _qkv(2, heads, 4, 4, seed=3)
    if kind == "alibi":
        make, bias = (lambda p: flex.alibi(heads, positions=p)), posenc.alibi_bias(heads, positions=wide, xp=torch)
    else:
        rel = wide[:, None, :] - wide[:, :, None]  # (batch, q, k): the key's position minus the query's
        if kind == "kerple":  # the log kernel, -r1 log(1 + r2 |i - j|), in float64
            r1, r2 = torch.tensor([1.0, 0.5, 2.0], dtype=F64), torch.tensor([1.0, 0.3, 0.7], dtype=F64)
            make = lambda p: flex.kerple(r1, r2, positions=p)  # noqa: E731
            bias = -r1[:, None, None] * torch.log1p(r2[:, None, None] * rel[:, None].abs().to(F64))
        else:
            table = _randn(32, heads, seed=4)
            make = lambda p: flex.t5(table, positions=p)  # noqa: E731
            bias = table[posenc.t5_bucket(rel)].permute(0, 3, 1, 2)
    want = _sdpa(q, k, v, bias.to(F64))
    _check(_flex(q, k, v, make(narrow)), want)
    _check(_flex(q, k, v, make(wide)), want)


def test_prefix_lm_lengths_of_every_integer_dtype():
    """Per-row prefix lengths of any integer dtype (torch compares no uint16+
    tensor with the indices: the check raised NotImplementedError)."""
    q_idx, kv_idx = torch.arange(5)[:, None], torch.arange(5)
    want = (kv_idx < 2) | (kv_idx <= q_idx)
    for dtype in (torch.uint8, torch.int8, torch.uint16, torch.uint32, torch.uint64, torch.int32):
        got = flex.prefix_lm(torch.tensor([2, 4], dtype=dtype))(0, 0, q_idx, kv_idx)
        assert torch.equal(got, want), dtype
    with pytest.raises(ValueError, match=r"`prefix_len` must lie within \+-2\*\*62"):
        flex.prefix_lm(torch.tensor([2**63], dtype=torch.uint64))


def test_positions_beyond_int64_differences_are_refused():
    """Positions whose differences could leave int64 are refused where they
    are read; uint64 ones that cannot be read (a device) by their dtype."""
    from posenc import _kernels

    with pytest.raises(ValueError, match=r"`positions` must lie within \+-2\*\*62"):
        flex.alibi(2, positions=torch.tensor([0, 2**63 - 1]))
    with pytest.raises(ValueError, match=r"`positions` must lie within \+-2\*\*62"):
        flex.t5(_randn(32, 2), positions=torch.tensor([2**63 + 1, 0], dtype=torch.uint64))
    with _kernels.as_device(), pytest.raises(TypeError, match="`positions` of dtype uint64 cannot be bounded"):
        flex.kerple(torch.ones(2), torch.ones(2), positions=torch.tensor([0, 5], dtype=torch.uint64))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_relative_table_shaw_clipped(shape):
    q_len, k_len, off = shape
    heads, dist = 3, 3
    table = _randn(2 * dist + 1, heads, seed=7)
    rel = posenc.relative_positions(q_len, k_len, offset=off, max_distance=dist, xp=torch) + dist
    q, k, v = _qkv(1, heads, q_len, k_len)
    want = _sdpa(q, k, v, table[rel].permute(2, 0, 1))
    _check(_flex(q, k, v, flex.relative_table(table, max_distance=dist, offset=off)), want)


def test_relative_table_gradient():
    heads = 2
    index = posenc.relative_position_index(3, class_token=True, xp=torch)
    t1 = _randn(28, heads, seed=8).requires_grad_(True)
    t2 = t1.detach().clone().requires_grad_(True)
    q, k, v = _qkv(2, heads, 10, 10)
    (g1,) = torch.autograd.grad(_flex(q, k, v, flex.relative_table(t1, index)).square().sum(), t1)
    (g2,) = torch.autograd.grad(_sdpa(q, k, v, t2[index].permute(2, 0, 1)).square().sum(), t2)
    assert _err(g1, g2) < 1e-10


# ----------------------------------------------------------------- KERPLE
KERPLE_CASES = [(kind, c, SHAPES[2], F64) for kind in ("log", "power") for c in (False, True)]
KERPLE_CASES += [("log", False, SHAPES[0], F64), ("power", True, SHAPES[1], F64), ("log", True, SHAPES[2], F32)]
KERPLE_CASES += [("power", False, SHAPES[0], F32)]


@pytest.mark.parametrize("kind,causal,shape,dtype", KERPLE_CASES, ids=str)
def test_kerple_equals_sdpa_with_posenc_bias(kind, causal, shape, dtype):
    q_len, k_len, off = shape
    r1 = torch.tensor([0.5, 1.0, 2.0], dtype=dtype)
    r2 = torch.tensor([0.25, 1.0, 1.5], dtype=dtype)
    q, k, v = _qkv(2, 3, q_len, k_len, dtype)
    bias = posenc.kerple_bias(q_len, k_len, r1=r1, r2=r2, kind=kind, offset=off, causal=causal)
    _check(_flex(q, k, v, flex.kerple(r1, r2, kind=kind, causal=causal, offset=off)), _sdpa(q, k, v, bias))


def test_kerple_gradients():
    a1 = torch.tensor([0.5, 1.5], dtype=F64, requires_grad=True)
    b1 = torch.tensor([0.7, 1.2], dtype=F64, requires_grad=True)
    a2, b2 = (x.detach().clone().requires_grad_(True) for x in (a1, b1))
    q, k, v = _qkv(1, 2, 9, 9)
    for kind in ("log", "power"):
        g1 = torch.autograd.grad(_flex(q, k, v, flex.kerple(a1, b1, kind=kind)).square().sum(), (a1, b1))
        bias = posenc.kerple_bias(9, r1=a2, r2=b2, kind=kind)
        g2 = torch.autograd.grad(_sdpa(q, k, v, bias).square().sum(), (a2, b2))
        assert max(_err(x, y) for x, y in zip(g1, g2)) < 1e-10


# ----------------------------------------------------------------- forget gates
def _gates(shape, seed, dtype=F64):
    return F.logsigmoid(_randn(*shape, seed=seed, dtype=dtype) + 2.0)


GATE_CASES = [(layout, c, F64) for layout in [(11,), (3, 11), (2, 3, 11)] for c in (True, False)]
GATE_CASES += [((2, 3, 11), True, F32), ((3, 11), False, F32)]


@pytest.mark.parametrize("layout,causal,dtype", GATE_CASES, ids=str)
def test_forgetting_gate_equals_sdpa_with_posenc_bias(layout, causal, dtype):
    g = _gates(layout, 9, dtype)
    e = None if causal else _gates(layout, 10, dtype)
    bias = posenc.cumulative_gate_bias(g, causal=causal, backward_log_gates=e)
    q, k, v = _qkv(2, 3, 11, 11, dtype)
    _check(_flex(q, k, v, flex.forgetting_gate(g, causal=causal, backward_log_gates=e)), _sdpa(q, k, v, bias))


def test_forgetting_gate_decode_step():
    g = _gates((3, 12), 11)
    bias = posenc.cumulative_gate_bias(g)[:, -2:, :]  # the last two queries
    q, k, v = _qkv(1, 3, 2, 12)
    _check(_flex(q, k, v, flex.forgetting_gate(g, offset=10)), _sdpa(q, k, v, bias))


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")
def test_forgetting_gate_gradients():
    """The gates are data (non-leaf tensors): FlexAttention's eager backward
    traces the score function and warns about their ``.grad``; the gradients
    are right."""
    g1 = _gates((2, 3, 10), 12).requires_grad_(True)
    e1 = _gates((2, 3, 10), 13).requires_grad_(True)
    g2, e2 = (x.detach().clone().requires_grad_(True) for x in (g1, e1))
    q, k, v = _qkv(2, 3, 10, 10)
    out = _flex(q, k, v, flex.forgetting_gate(g1, causal=False, backward_log_gates=e1))
    grads = torch.autograd.grad(out.square().sum(), (g1, e1))
    bias = posenc.cumulative_gate_bias(g2, causal=False, backward_log_gates=e2)
    want = torch.autograd.grad(_sdpa(q, k, v, bias).square().sum(), (g2, e2))
    assert max(_err(x, y) for x, y in zip(grads, want)) < 1e-10


# ----------------------------------------------------------------- composition
def test_compose_adds_the_biases():
    heads = 3
    table = _randn(8, heads, seed=14)
    q, k, v = _qkv(1, heads, 12, 12)
    bias = posenc.alibi_bias(heads, 12, xp=torch, dtype=F64) + _t5_bias(table, 12, 12, 0, num_buckets=8, max_distance=9)
    mod = flex.compose(flex.alibi(heads), flex.t5(table, num_buckets=8, max_distance=9))
    _check(_flex(q, k, v, mod), _sdpa(q, k, v, bias))


# ----------------------------------------------------------------- compiled
@pytest.fixture(scope="module")
def compiled_flex():
    torch._dynamo.reset()
    yield torch.compile(flex_attention, fullgraph=True, dynamic=False)
    torch._dynamo.reset()


def test_compiled_decode_chunk_every_score_function(compiled_flex):
    """One compiled kernel (float32: what the CPU compiles) with every score
    function composed, queries 8 .. 12 of 13 keys, under a causal block mask."""
    heads, q_len, k_len, off = 3, 5, 13, 8
    t5_table = _randn(8, heads, seed=15, dtype=F32)
    shaw = _randn(7, heads, seed=16, dtype=F32)
    win = _randn(40, heads, seed=17, dtype=F32)
    index = torch.randint(0, 40, (q_len, k_len), generator=torch.Generator().manual_seed(18))
    r1, r2 = torch.tensor([0.5, 1.0, 2.0]), torch.tensor([0.25, 1.0, 1.5])
    g = _gates((heads, k_len), 19, F32)
    mod = flex.compose(
        flex.alibi(heads, offset=off),
        flex.t5(t5_table, num_buckets=8, max_distance=9, offset=off),
        flex.relative_table(shaw, max_distance=3, offset=off),
        flex.relative_table(win, index),
        flex.kerple(r1, r2, offset=off),
        flex.forgetting_gate(g, offset=off),
    )
    bias = (
        posenc.alibi_bias(heads, q_len, k_len, offset=off, xp=torch, dtype=F32)
        + _t5_bias(t5_table, q_len, k_len, off, num_buckets=8, max_distance=9)
        + shaw[posenc.relative_positions(q_len, k_len, offset=off, max_distance=3, xp=torch) + 3].permute(2, 0, 1)
        + win[index].permute(2, 0, 1)
        + posenc.kerple_bias(q_len, k_len, r1=r1, r2=r2, offset=off)
        + posenc.cumulative_gate_bias(g)[:, off:, :]
    )
    q, k, v = _qkv(1, heads, q_len, k_len, F32, seed=20)
    mask = create_block_mask(flex.causal(offset=off), None, None, q_len, k_len, device="cpu")
    got = compiled_flex(q, k, v, score_mod=mod, block_mask=mask)
    _check(got, _sdpa(q, k, v, bias))


def test_compiled_packed_documents(compiled_flex):
    """ALiBi at 12 heads and T5 on packed documents, positions restarting, compiled."""
    heads, n = 12, 24
    doc = torch.tensor([[0] * 10 + [1] * 14, [3] * 5 + [4] * 19])
    pos = flex.document_positions(doc)
    table = _randn(32, heads, seed=21, dtype=F32)
    mod = flex.compose(flex.alibi(heads, positions=pos), flex.t5(table, bidirectional=False, positions=pos))
    rel = pos[:, None, :] - pos[:, :, None]
    bias = posenc.alibi_bias(heads, positions=pos, causal=True, xp=torch, dtype=F32)
    bias = bias + table[posenc.t5_bucket(rel, bidirectional=False)].permute(0, 3, 1, 2)
    same_doc = (doc[:, :, None] == doc[:, None, :])[:, None]
    q, k, v = _qkv(2, heads, n, n, F32, seed=22)
    want = _sdpa(q, k, v, torch.where(same_doc, bias, -math.inf))
    mask = create_block_mask(and_masks(flex.causal(), flex.documents(doc)), 2, None, n, n, device="cpu")
    got = compiled_flex(q, k, v, score_mod=mod, block_mask=mask)
    _check(got, want)


# ----------------------------------------------------------------- masks
def _dense(mask_mod, b, q_len, k_len):
    qi, ki = torch.arange(q_len)[:, None], torch.arange(k_len)[None, :]
    return torch.stack([mask_mod(i, 0, qi, ki).expand(q_len, k_len) for i in range(b)])[:, None]


def _masked(q, k, v, allowed):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)


@pytest.mark.parametrize(
    "name,make,oracle",
    [
        ("causal", lambda: flex.causal(offset=3), lambda i, j, b: j <= i + 3),
        ("window-causal", lambda: flex.sliding_window(4, offset=3), lambda i, j, b: (i + 3 - j >= 0) & (i + 3 - j < 4)),
        ("window", lambda: flex.sliding_window(3, causal=False, offset=3), lambda i, j, b: np.abs(i + 3 - j) < 3),
        ("prefix", lambda: flex.prefix_lm(5), lambda i, j, b: (j < 5) | (j <= i)),
        (
            "prefix-batch",
            lambda: flex.prefix_lm(torch.tensor([2, 6])),
            lambda i, j, b: (j < [2, 6][b]) | (j <= i),
        ),
        (
            "documents",
            lambda: flex.documents(torch.tensor([[0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2]] * 2)),
            lambda i, j, b: _DOC[i + 3] == _DOC[j],
        ),
    ],
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_masks_equal_their_formula_and_sdpa(name, make, oracle):
    q_len, k_len, b = 9, 12, 2
    mask_mod = make()
    ii, jj = np.meshgrid(np.arange(q_len), np.arange(k_len), indexing="ij")
    if name == "documents":  # queries are the last 9 of the 12 tokens: shift the mask's query index
        inner = mask_mod

        def mask_mod(b_, h, qi, ki):
            return inner(b_, h, qi + 3, ki)

    want = torch.from_numpy(np.stack([oracle(ii, jj, i) for i in range(b)])[:, None])
    assert torch.equal(_dense(mask_mod, b, q_len, k_len), want)
    heads = 3
    q, k, v = _qkv(b, heads, q_len, k_len)
    block = create_block_mask(mask_mod, b, None, q_len, k_len, device="cpu")
    _check(_flex(q, k, v, block_mask=block), _masked(q, k, v, want))


_DOC = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2])


def test_document_positions():
    doc = torch.tensor([[0, 0, 1, 1, 1, 0, 0], [2, 2, 2, 2, 2, 2, 2]], dtype=torch.int32)
    want = [[0, 1, 0, 1, 2, 0, 1], [0, 1, 2, 3, 4, 5, 6]]
    assert flex.document_positions(doc).tolist() == want
    assert flex.document_positions(doc[0]).tolist() == want[0]
    assert flex.document_positions(torch.zeros(0, dtype=torch.int64)).shape == (0,)


# ----------------------------------------------------------------- peers
def test_x_transformers_alibi():
    xt = pytest.importorskip("x_transformers.x_transformers")
    heads = 12
    peer = xt.AlibiPositionalBias(heads=heads, total_heads=heads)
    q, k, v = _qkv(1, heads, 5, 13, F32)
    want = _sdpa(q, k, v, peer(5, 13))
    _check(_flex(q, k, v, flex.alibi(heads, offset=8)), want)
    # custom positions: packed documents
    pos = flex.document_positions(torch.tensor([[0] * 6 + [1] * 7]))
    q, k, v = _qkv(1, heads, 13, 13, F32)
    want = _sdpa(q, k, v, peer.forward_custom_pos(pos))
    _check(_flex(q, k, v, flex.alibi(heads, positions=pos)), want)


@pytest.mark.parametrize("causal", [False, True])
def test_x_transformers_t5_relative_bias(causal):
    xt = pytest.importorskip("x_transformers.x_transformers")
    heads = 4
    peer = xt.RelativePositionBias(scale=1.0, causal=causal, num_buckets=16, max_distance=40, heads=heads)
    table = peer.relative_attention_bias.weight.detach()
    q, k, v = _qkv(1, heads, 30, 70, F32)
    want = _sdpa(q, k, v, peer(30, 70).detach())
    got = _flex(q, k, v, flex.t5(table, bidirectional=not causal, num_buckets=16, max_distance=40, offset=40))
    _check(got, want)


@pytest.mark.parametrize("decoder", [False, True])
def test_transformers_t5_attention(decoder):
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    from transformers import T5Config

    config = T5Config(d_model=32, d_kv=8, num_heads=4, is_decoder=decoder)
    attn = t5.T5Attention(config, has_relative_attention_bias=True).double()
    table = attn.relative_attention_bias.weight
    q_len, k_len, past = (1, 150, 149) if decoder else (150, 150, 0)
    with torch.no_grad():
        bias = attn.compute_bias(q_len, k_len, past_seen_tokens=past)[0]
    q, k, v = _qkv(1, 4, q_len, k_len)
    # T5 does not scale its scores
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1.0)
    with torch.no_grad():
        got = flex_attention(q, k, v, score_mod=flex.t5(table, bidirectional=not decoder, offset=past), scale=1.0)
    _check(got, want)


# ----------------------------------------------------------------- arguments
@pytest.mark.parametrize(
    "call,param",
    [
        (lambda: flex.alibi(0), "num_heads"),
        (lambda: flex.alibi(2, form="mpt"), "form"),
        (lambda: flex.alibi(2, slopes=np.ones(2)), "slopes"),
        (lambda: flex.alibi(2, slopes=torch.ones(3)), "slopes"),
        (lambda: flex.alibi(2, slopes=torch.ones(2), max_bias=2.0), "max_bias"),
        (lambda: flex.alibi(2, positions=torch.zeros(4)), "positions"),
        (lambda: flex.alibi(2, positions=torch.zeros(4, dtype=torch.int64), offset=1), "offset"),
        (lambda: flex.alibi(2, offset=torch.tensor([1])), "offset"),
        (lambda: flex.alibi(2, device=3), "device"),
        (lambda: flex.t5(torch.zeros(8, 2)), "bias"),
        (lambda: flex.t5(torch.zeros(8, 2), num_buckets=8, max_distance=3), "max_distance"),
        (lambda: flex.t5(torch.zeros(7, 2), num_buckets=7), "num_buckets"),
        (lambda: flex.relative_table(torch.zeros(9, 2)), "index"),
        (lambda: flex.relative_table(torch.zeros(9, 2), torch.full((2, 2), 9)), "index"),
        (lambda: flex.relative_table(torch.zeros(9, 2), max_distance=3), "max_distance"),
        (lambda: flex.kerple(torch.ones(2), -torch.ones(2)), "r2"),
        (lambda: flex.kerple(torch.ones(2), torch.full((2,), 3.0), kind="power"), "r2"),
        (lambda: flex.forgetting_gate(torch.tensor([0.0, float("nan")])), "log_gates"),
        (lambda: flex.forgetting_gate(torch.zeros(3), backward_log_gates=torch.zeros(3)), "causal"),
        (lambda: flex.compose(), "score_mods"),
        (lambda: flex.compose(3), "score_mods"),
        (lambda: flex.sliding_window(0), "window"),
        (lambda: flex.prefix_lm(torch.tensor([-1])), "prefix_len"),
        (lambda: flex.documents(torch.zeros(2, 2, 2, dtype=torch.int64)), "doc_ids"),
        (lambda: flex.document_positions([0, 0, 1]), "doc_ids"),
    ],
)
def test_errors_name_the_parameter(call, param):
    with pytest.raises((TypeError, ValueError), match=f"`{param}`"):
        call()


def test_learned_tensors_are_read_when_the_attention_runs():
    """An optimizer's in-place update is seen by the next call (no copy is kept)."""
    table = torch.zeros(8, 1, dtype=F64)
    mod = flex.t5(table, num_buckets=8, max_distance=9)
    q, kv = torch.tensor([[0]]), torch.tensor([0])
    assert float(mod(torch.zeros(1, 1, dtype=F64), 0, 0, q, kv)) == 0.0
    table += 1.0
    assert float(mod(torch.zeros(1, 1, dtype=F64), 0, 0, q, kv)) == 1.0


def test_factories_trace_inside_a_compiled_forward():
    """A model builds its score functions in ``forward`` (the gates are data):
    the factories trace under ``torch.compile(fullgraph=True)`` (dynamo with the
    eager backend: the tracing is the point, inductor is tested above)."""
    heads, n = 3, 9
    table = _randn(8, heads, seed=23, dtype=F32)

    def forward(q, k, v, log_gates, offset):
        mod = flex.compose(
            flex.t5(table, num_buckets=8, max_distance=9, offset=offset),
            flex.forgetting_gate(log_gates, offset=offset),
            flex.alibi(heads, offset=offset),
        )
        return flex_attention(q, k, v, score_mod=mod, block_mask=None)

    torch._dynamo.reset()
    try:
        compiled = torch.compile(forward, backend="eager", fullgraph=True)
        q, k, v = _qkv(1, heads, 4, n, F32, seed=24)
        g = _gates((heads, n), 25, F32)
        got = compiled(q, k, v, g, 5)
    finally:
        torch._dynamo.reset()
    bias = (
        posenc.alibi_bias(heads, 4, n, xp=torch, dtype=F32)
        + _t5_bias(table, 4, n, 5, num_buckets=8, max_distance=9)
        + posenc.cumulative_gate_bias(g)[:, 5:, :]
    )
    _check(got, _sdpa(q, k, v, bias))
