"""posenc's caches: emptying them and their byte budgets.

They take and return no arrays (no dtype/device/xp trio) and allocate
nothing of their own.  A drawn budget is restored after every case: the
rest of the suite runs with the defaults.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

import posenc
from tests.hardening._fuzz import Backend, Case

from ._spec import Draw, register

#: why the cache controls take no dtype/device/xp and allocate nothing
CONTROL = "controls posenc's caches: no arrays in or out"


def _restore() -> Any:
    before = posenc.cache_limits()
    return lambda: posenc.cache_limits(**before)


@register("clear_caches", hostile=(), trio=CONTROL, no_allocation=CONTROL)
def _clear_caches(draw: Draw, be: Backend) -> Case:
    def check(result: Any) -> None:
        assert result is None

    return Case(be, (), {}, kind="object", check=check)


@register("cache_limits", trio=CONTROL, no_allocation=CONTROL)
def _cache_limits(draw: Draw, be: Backend) -> Case:
    before = posenc.cache_limits()
    kw: dict[str, Any] = {}
    for name in ("tables", "host"):
        if draw(st.booleans()):
            kw[name] = draw(st.sampled_from([0, 1, 4096, before[name], 2**40]))

    def check(result: Any) -> None:
        assert result == before, result  # the budgets before the call
        now = posenc.cache_limits()
        assert now == {**before, **kw}, now

    return Case(be, (), kw, kind="object", check=check, cleanup=_restore())
