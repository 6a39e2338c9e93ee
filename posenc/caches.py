"""posenc's caches: how to empty them and how to bound them.

posenc keeps what it computed between calls only where a repeated call
(every step of a model) pays for it, and all of it is bounded:

* finished tables of integer positions (``sinusoidal(n, dim)``,
  ``add_sinusoidal``, the rows behind tables of dense integer positions), per
  namespace, device and dtype: least-recently-used, 256 MiB by default, a
  table above a quarter of the budget never kept;
* host tables of exact angles (NumPy, float64): least-recently-used,
  128 MiB by default;
* small answers, each memo bounded by its number of entries and by 32 MiB
  of the arrays its entries hold (frequencies, prepared angles and device
  constants grow with ``dim``; an entry above 8 MiB is not kept): resolved
  contexts, the validated arguments of a call and the kernels chosen for
  arrays of its type, dtype, device and shape (the plans of the hot paths),
  device copies of host constants, frequencies of configurations.

No caller can change what a later call returns (cached NumPy tables are
handed out as read-only copies: ``torch.from_numpy`` and DLPack write through
a read-only view; JAX arrays as they are, immutable; copies elsewhere), a
forked child process starts with empty
caches, and posenc keeps no thread or other resource beyond a call.
"""

from __future__ import annotations

from typing import Any

from . import _cache, _checks

__all__ = ["clear_caches", "cache_limits"]


def clear_caches() -> None:
    """Empty every cache of posenc.

    Later calls compute their tables and check their arguments again (with
    the same results).  For freeing the memory of cached tables, and for
    measurements of cold calls.

    Examples
    --------
    >>> import posenc
    >>> table = posenc.sinusoidal(1024, 256)   # built, and kept for the next call
    >>> posenc.clear_caches()                  # the kept table's memory is released
    >>> table.shape                            # what a call returned stays valid
    (1024, 256)
    """
    _cache.clear()


def cache_limits(*, tables: int | None = None, host: int | None = None) -> dict[str, Any]:
    """Set the byte budgets of posenc's table caches; return the previous ones.

    Parameters
    ----------
    tables : int, optional
        Bytes for finished tables of integer positions (default 256 MiB);
        a table larger than a quarter of it is never kept, and 0 keeps none.
        Lowering it drops the least recently used tables at once.
    host : int, optional
        Bytes for the host tables of exact angles (default 128 MiB); 0 keeps
        none (every call then computes them again).

    Returns
    -------
    dict
        The budgets before the call, ``{"tables": bytes, "host": bytes}``:
        ``cache_limits(**before)`` restores them, ``cache_limits()`` reads
        them.

    Examples
    --------
    >>> import posenc
    >>> before = posenc.cache_limits(tables=64 * 2**20)   # 64 MiB of finished tables
    >>> before
    {'tables': 268435456, 'host': 134217728}
    >>> posenc.cache_limits(**before)                      # the defaults again
    {'tables': 67108864, 'host': 134217728}
    """
    if tables is not None:
        tables = _checks.check_int(tables, "tables", minimum=0)
    if host is not None:
        host = _checks.check_int(host, "host", minimum=0)
    before = _cache.limits()
    _cache.limits(tables, host)
    return before
