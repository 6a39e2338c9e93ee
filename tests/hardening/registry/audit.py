"""``audit_rope``: the RoPE of a model's own rotary modules against posenc's.

It reads a model or a config (no array computation of its own): no
dtype/device/xp trio; its tables come from posenc's calls.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.conftest import BackendKind
from tests.hardening._fuzz import Backend, Case

from ._spec import Draw, register

READS = "reads a model or a config: the report is a dataclass, the tables inside come from torch and posenc"


@register("audit_rope", trio=READS, no_allocation=READS, backends=(BackendKind.NUMPY,))
def _audit_rope(draw: Draw, be: Backend) -> Case:
    import pytest

    pytest.importorskip("transformers")
    heads = draw(st.sampled_from([2, 4]))
    cfg = {
        "model_type": "llama",
        "hidden_size": 8 * heads,
        "num_attention_heads": heads,
        "max_position_embeddings": draw(st.integers(1, 4096)),
        "rope_theta": draw(st.sampled_from([100.0, 10000.0, 500000.0])),
    }
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["positions"] = draw(st.lists(st.integers(0, 2**20), min_size=1, max_size=5))
    if draw(st.booleans()):
        kw["dtype"] = draw(st.sampled_from(["float32", "bfloat16", "float16", "float64"]))

    def check(report: Any) -> None:
        (a,) = report
        assert a.audited and a.module == "LlamaRotaryEmbedding", a
        assert len(a.error) == len(a.floor) == len(a.positions) > 0
        assert all(e >= 0 for e in a.error)

    return Case(be, (cfg,), kw, kind="object", check=check)
