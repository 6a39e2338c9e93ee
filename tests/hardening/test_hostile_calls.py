"""Hostile calls in a capped child: the probes of
:mod:`tests.hardening.hostile_calls` (writes through interop routes into
returned tables, modules through model plumbing, integer offsets at the
edges of their dtypes, ``torch.func.vmap`` at the fast paths' sizes and
``jax.jit`` over concrete arrays, memos asked for ever new widths).

Each probe must end as it says -- the right result, or a clean refusal that
names the argument -- never a crash, a hang or a silent wrong result.
``python tests/hardening/hostile_calls.py -v`` prints the same outcomes as
a table.
"""

from __future__ import annotations

import sys

import pytest

from . import hostile_calls as H
from ._fuzz import COUNTS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory cap (RLIMIT_AS) of Linux")


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict]:
    for name in ("torch", "jax"):
        pytest.importorskip(name)
    return H.run([p.name for p in H.PROBES])


def test_every_hostile_call_ends_as_it_should(outcomes: dict[str, dict]) -> None:
    """One child runs every probe (once, even under ``pytest -n``); the message
    lists every probe that ended otherwise, and the table."""
    bad = []
    for probe in H.PROBES:
        got = outcomes[probe.name]
        if got["outcome"] not in probe.want:
            bad.append(f"{probe.group}/{probe.name}: {got['outcome']} (want {probe.want}): {got['detail']}")
        COUNTS[f"hostile-calls:{probe.group}"] += 1
    assert not bad, f"{len(bad)} of {len(H.PROBES)} probes:\n" + "\n".join(bad) + "\n\n" + H.table(outcomes)


def test_the_probes_cover_each_finding() -> None:
    """The probes of the findings this suite was grown by are all there."""
    findings = {
        "dlpack-cached", "from-numpy-cached", "as-tensor-cached", "asarray-cached", "buffer-cached",
        "setflags-cached", "meta-rotary", "meta-sinusoidal", "meta-alibi-fixed",
        "inference-mode-growth-then-training-rotary", "position-ids-uint8", "position-ids-int8",
        "position-ids-int16", "sinusoidal-x-int64", "double-rotary", "decode-at-2-19-keeps-no-gib",
        "position-id-1e8", "numpy-uint8-top-plus-1", "torch-int32-top-plus-1", "jax-int32-top-plus-1",
        "jit-jax-int32-top-plus-1", "vmap-apply-rope-2-15", "vmap-rope-2-15", "vmap-timestep-embedding",
        "vmap-sinusoidal", "jit-closed-timestep-embedding", "wide-rope-dims-numpy",
    }  # fmt: skip
    assert findings <= set(H.BY_NAME), findings - set(H.BY_NAME)
