"""Importing posenc must stay cheap and side-effect free."""

import subprocess
import sys

HEAVY = ("torch", "jax", "cupy", "dask", "matplotlib", "array_api_strict")


def test_import_pulls_no_backend():
    code = (
        "import sys, posenc; "
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import posenc imported {out.stdout.strip()}"


def test_public_names_resolve():
    import posenc

    for name in posenc.__all__:
        assert callable(getattr(posenc, name)) or name == "scaling", name
