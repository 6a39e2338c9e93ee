"""posenc in forked children (DataLoader workers, multiprocessing's fork start
method): no thread or pool survives a call, no lock can be inherited held,
and a child's caches start empty.

Each test forks with ``os.fork`` and lets the child report through its exit
status under an alarm: 0 = correct, 3 = wrong values, 14 = killed by the
alarm (a hang).
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import numpy as np
import pytest

import posenc
from posenc import _cache

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs os.fork")


def _in_child(body, timeout: int = 30) -> int:
    """Run ``body()`` in a forked child under an alarm; its exit status
    (0: body returned True; 3: False; -14: killed by the alarm)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(timeout)
            code = 0 if body() else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


# forking a process with running threads (xdist's, JAX's) is what users do; Python 3.12+ and
# JAX warn about it, which this suite (filterwarnings = error) would turn into an error
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:os.fork.. was called:RuntimeWarning")
def test_fork_after_a_parallel_torch_table_does_not_hang():
    """The issue's reproducer: a torch CPU table of >= 2**24 elements (written
    by several threads) in the parent, another in the child."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        posenc.sinusoidal(1 << 17, 256, xp=torch)
        alive = {t.name for t in threading.enumerate()}
        assert not any(name.startswith("posenc") for name in alive), alive  # no thread outlives the call

        def child():
            t = posenc.sinusoidal((1 << 17) + 1, 256, xp=torch)
            want = posenc.sinusoidal(np.array([0, 1 << 17]), 256, dtype="float32")
            return np.array_equal(t[[0, -1]].numpy(), want)

        assert _in_child(child) == 0
    finally:
        torch.set_num_threads(before)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:os.fork.. was called:RuntimeWarning")
def test_a_lock_held_at_the_fork_is_not_inherited():
    """Another thread of the parent inside a cache (holding its lock) when the
    process forks: the child's caches have new locks."""
    held, release = threading.Event(), threading.Event()

    def hold():
        with _cache.HOST._lock, _cache.TABLES._lock:
            held.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(10)
    try:

        def child():
            table = posenc.sinusoidal(64, 8, dtype="float32")
            return abs(float(table[1, 0]) - np.sin(1.0)) < 1e-7

        assert _in_child(child) == 0
    finally:
        release.set()
        t.join()


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:os.fork.. was called:RuntimeWarning")
def test_a_child_starts_with_empty_caches():
    posenc.sinusoidal(128, 16)
    posenc.rope_cos_sin(np.array([[5]]), 16)
    assert _cache.TABLES.nbytes > 0 and any(len(c) for c in _cache.CACHES.values())

    def child():
        empty = _cache.TABLES.nbytes == 0 and len(_cache.HOST) == 0 and not any(len(c) for c in _cache.CACHES.values())
        again = posenc.sinusoidal(128, 16)
        return empty and abs(again[3, 0] - np.sin(3.0)) < 1e-15

    assert _in_child(child) == 0
    assert _cache.TABLES.nbytes > 0  # the parent keeps its own


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:os.fork.. was called:RuntimeWarning")
def test_fork_after_a_complex_torch_table_does_not_hang():
    """After the parent used torch's OpenMP pool (a timestep embedding's
    float64 sine and cosine), a forked child writes a torch CPU table as
    complex rows (products below torch's grain size, which never enter the
    pool: a child that enters it after its parent did hangs there) and takes
    the turns kernel for float64 angles."""
    torch = pytest.importorskip("torch")
    from posenc import _kernels

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    calls = []
    real = _kernels.tables.fill_rows_complex
    try:
        _kernels.tables.fill_rows_complex = lambda *a: calls.append(1) or real(*a)
        first = posenc.sinusoidal(4096, 512, xp=torch)
        assert calls  # the complex rows were written
        freqs = posenc._angles.as_freqs(posenc.frequencies(320))
        posenc.timestep_embedding(torch.linspace(0.0, 999.0, 4096), 320)  # torch's sine and cosine, pooled

        def child():
            from posenc._kernels import angles

            t = torch.linspace(0.0, 999.0, 4096)
            if angles.turns_torch_cpu(t, posenc._angles.kernel_turns(freqs.key, False))[0].shape != (4096, 160):
                return False
            table = posenc.sinusoidal(4099, 512, xp=torch)
            # (NumPy compares: a torch operation this large would enter the pool; other host rows: an ulp)
            return bool(np.abs(table.numpy()[:4096] - first.numpy()).max() <= 2.5e-7)

        assert _in_child(child) == 0
    finally:
        _kernels.tables.fill_rows_complex = real
        torch.set_num_threads(before)
