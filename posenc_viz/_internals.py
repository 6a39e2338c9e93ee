"""The private helpers of :mod:`posenc` that posenc_viz uses, imported here
and nowhere else in posenc_viz: its argument checks (errors that name the
parameter) and its classifier of backends (the one place that knows
array-api-compat).
"""

from __future__ import annotations

from posenc._checks import TABLE_LAYOUTS, check_bool, check_int, check_size, show
from posenc._compat import array_kind, has_values, is_array

__all__ = [
    "TABLE_LAYOUTS",
    "array_kind",
    "check_bool",
    "check_int",
    "check_size",
    "is_array",
    "has_values",
    "show",
]
