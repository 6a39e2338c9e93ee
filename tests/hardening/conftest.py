"""Hardening suite: hostile input, huge requests, threads, global state, CLI abuse.

The fuzz tests count the calls they make (valid calls, hostile calls, by class
of hostile value); the totals are printed at the end of the run in a
``posenc hardening`` section of the terminal summary.  Under ``pytest -n``
each worker counts its own calls and the controller prints nothing.
"""

from __future__ import annotations

import pytest

from ._fuzz import COUNTS

try:  # figures are drawn off-screen
    import matplotlib

    matplotlib.use("Agg")
except ImportError:  # pragma: no cover - the viz extra is part of the test extra
    pass


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not COUNTS:
        return
    tr = terminalreporter
    tr.section("posenc hardening: cases run")
    groups: dict[str, int] = {}
    for key, n in COUNTS.items():
        group = key.split(":", 1)[0]
        if group == "hostile-class":
            continue
        groups[group] = groups.get(group, 0) + n
    for group in sorted(groups):
        tr.write_line(f"{group:<28} {groups[group]:>7}")
    classes = sorted((k for k in COUNTS if k.startswith("hostile-class:")), key=lambda k: -COUNTS[k])
    if classes:
        tr.write_line("hostile calls by class of value:")
        for key in classes:
            tr.write_line(f"  {key.split(':', 1)[1]:<26} {COUNTS[key]:>7}")
    total = sum(n for k, n in COUNTS.items() if not k.startswith("hostile-class:"))
    tr.write_line(f"{'total calls':<28} {total:>7}")
