"""Error-free transformations of floating-point numbers, written once for
every path that needs them: the portable Array API arithmetic of
:mod:`posenc._angles` and :mod:`posenc._matrix` calls them on arrays of any
namespace, the host double-double arithmetic of :mod:`posenc._exact` on
NumPy arrays, and the Triton kernels of :mod:`posenc._kernels.triton` compile
the same functions (which is why they carry no annotations: Triton's
compiler reads a helper's annotations).  Plain multiplies and adds only.
"""

from __future__ import annotations

__all__ = ["two_prod", "two_sum"]


def two_sum(a, b):  # type: ignore[no-untyped-def]
    """Knuth's two-sum: ``s + e == a + b`` exactly (additions only: no
    fused multiply-add can change it)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def two_prod(a, b, splitter):  # type: ignore[no-untyped-def]
    """Dekker's TwoProduct with Veltkamp splitting: ``h + l == a * b`` exactly
    (plain multiplies and adds; every derivative flows through ``h``: the
    derivatives of ``l`` cancel).  ``splitter`` is ``2**27 + 1`` for float64
    and ``2**12 + 1`` for float32 (an array constant inside a kernel)."""
    h = a * b
    t = a * splitter
    ah = t - (t - a)
    al = a - ah
    t = b * splitter
    bh = t - (t - b)
    bl = b - bh
    return h, ((ah * bh - h) + ah * bl + al * bh) + al * bl
