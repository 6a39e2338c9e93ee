"""``python -m benchmarks``: see :mod:`benchmarks`."""

from __future__ import annotations

import sys

if "--gpu-check" in sys.argv[1:]:
    # a GPU machine may lack array-api-compat: installed from its wheel before posenc is imported
    from .gpu_check import ensure_array_api_compat

    ensure_array_api_compat()

from .run import main

if __name__ == "__main__":
    sys.exit(main())
