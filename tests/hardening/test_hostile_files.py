"""Hostile files under a memory cap: ``load_table`` and the file options of
``posenc-viz`` against the probes of :mod:`tests.hardening.hostile_files`.

One child process runs every probe (a 3 KB bzip2 ``.npz`` that inflates to
4 GiB, checkpoints whose sparse or zero-stride tensor would become 16 GiB,
FIFOs, configs symlinked to devices or nested 200,000 deep, corrupt zip
members, ambiguous keys, tables with NaN or zero rows, a figure's name taken
by a dangling link) under ``RLIMIT_AS`` (its imports plus 1 GiB) with a timer
per probe; two more run the command and kill it with SIGTERM and SIGHUP in
the middle of writing a figure.  Each probe must end as it says: a clean
error (``load_table``: a ``ValueError`` naming ``source`` or ``key``, or a
``FileNotFoundError``; the command: exit status 2, the usage and one error
line) or the right result -- never a crash, a hang, a silent result or a
partial file.  ``python tests/hardening/hostile_files.py -v`` prints the
same outcomes as a table.
"""

from __future__ import annotations

import sys

import pytest

from . import hostile_files as H
from ._fuzz import COUNTS

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the memory cap (RLIMIT_AS), /proc and FIFOs of Linux"
)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    for name in ("torch", "safetensors", "matplotlib"):
        pytest.importorskip(name)
    return H.run([p.name for p in H.PROBES], tmp_path_factory.mktemp("hostile"))


def test_every_hostile_file_ends_cleanly(outcomes: dict[str, dict]) -> None:
    """One test for all probes (one capped child, run once even under
    ``pytest -n``): the message lists every probe that ended otherwise."""
    bad = []
    for probe in H.PROBES:
        got = outcomes[probe.name]
        ok = got["outcome"] == probe.want
        if ok and probe.want == "clean" and got["kind"] == "table":
            ok = got["detail"].startswith(("ValueError:", "FileNotFoundError:"))
        if not ok:
            bad.append(f"{probe.group}/{probe.name}: {got['outcome']} (want {probe.want}): {got['detail']}")
        COUNTS[f"hostile-files:{probe.group}"] += 1
    assert not bad, f"{len(bad)} of {len(H.PROBES)} probes:\n" + "\n".join(bad) + "\n\n" + H.table(outcomes)


def test_the_probes_cover_each_finding() -> None:
    """The probes of the findings this suite was grown by are all there (a
    probe renamed or dropped must be dropped here on purpose)."""
    findings = {
        "npz-bzip2-bomb", "pt-sparse-16gib", "pt-zero-stride-16gib", "cli-table-bzip2-bomb",
        "npy-header-unterminated", "npy-shape-overflows", "npz-corrupt-bzip2", "npz-corrupt-lzma",
        "npz-unknown-method", "npz-encrypted-member", "fifo-npy", "cli-table-fifo", "cli-hf-config-fifo",
        "cli-hf-config-dev-zero", "cli-hf-config-200000-deep", "pt-key-none-one-tensor-shadowed",
        "cli-rope-axes-hf-config-fifo", "cli-rope-axes-hf-config-dev-zero",
        "pt-record-fails-its-crc", "npy-structured-float64", "sigterm-mid-write", "sighup-mid-write",
        "cli-dangling-symlink-target", "cli-nan-table-encoding", "cli-zero-rows-similarity-by-offset",
    }  # fmt: skip
    assert findings <= set(H.BY_NAME), sorted(findings - set(H.BY_NAME))
    assert {p.want for p in H.PROBES} == {"clean", "correct"}
