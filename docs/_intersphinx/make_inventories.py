"""Write the intersphinx inventories of this folder (``<project>.inv``).

The documentation links the names of other projects (``torch.compile``,
``jax.jit``, matplotlib's ``Axes.plot``, ...) through intersphinx, which
needs each project's ``objects.inv``.  The build must not need the network,
so the inventories are committed here, cut down to the names the pages link:
``NAMES`` below, each with the address of its page in the project's
documentation (``$`` stands for the name, as in Sphinx's own inventories).
Regenerate after adding a name::

    python docs/_intersphinx/make_inventories.py

With network access, ``--check`` compares every address with the project's
published inventory and prints the names whose address differs or is gone.
A name left out of ``NAMES`` renders as plain code, as without intersphinx.
"""

from __future__ import annotations

import argparse
import sys
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: project -> (base address, version, {name: (role, address)})
NAMES: dict[str, tuple[str, str, dict[str, tuple[str, str]]]] = {
    "python": (
        "https://docs.python.org/3/",
        "3",
        {"typing.Any": ("py:data", "library/typing.html#$")},
    ),
    "torch": (
        "https://docs.pytorch.org/docs/stable/",
        "2",
        {
            "torch.compile": ("py:function", "generated/torch.compile.html#$"),
            "torch.nn": ("py:module", "nn.html#module-$"),
            "torch.nn.Module": ("py:class", "generated/torch.nn.Module.html#$"),
            "torch.nn.Parameter": (
                "py:class",
                "generated/torch.nn.parameter.Parameter.html#torch.nn.parameter.Parameter",
            ),
            "torch.compiler.assume_constant_result": (
                "py:function",
                "generated/torch.compiler.assume_constant_result.html#$",
            ),
            "torch.nn.functional.scaled_dot_product_attention": (
                "py:function",
                "generated/torch.nn.functional.scaled_dot_product_attention.html#$",
            ),
            "torch.nn.attention.flex_attention.flex_attention": ("py:function", "nn.attention.flex_attention.html#$"),
            "torch.nn.attention.flex_attention.create_block_mask": (
                "py:function",
                "nn.attention.flex_attention.html#$",
            ),
            "torch.nn.attention.flex_attention.and_masks": ("py:function", "nn.attention.flex_attention.html#$"),
        },
    ),
    "jax": (
        "https://docs.jax.dev/en/latest/",
        "0",
        {"jax.jit": ("py:function", "_autosummary/jax.jit.html#$")},
    ),
    "matplotlib": (
        "https://matplotlib.org/stable/",
        "3",
        {
            "matplotlib.axes.Axes.plot": ("py:method", "api/_as_gen/matplotlib.axes.Axes.plot.html#$"),
            "matplotlib.axes.Axes.imshow": ("py:method", "api/_as_gen/matplotlib.axes.Axes.imshow.html#$"),
            "matplotlib.figure.Figure.colorbar": (
                "py:method",
                "api/_as_gen/matplotlib.figure.Figure.colorbar.html#$",
            ),
            "matplotlib.artist.Artist.get_label": (
                "py:method",
                "api/_as_gen/matplotlib.artist.Artist.get_label.html#$",
            ),
            "matplotlib.rcParams": ("py:data", "api/matplotlib_configuration_api.html#$"),
        },
    ),
}


def inventory(project: str, version: str, names: dict[str, tuple[str, str]]) -> bytes:
    """A Sphinx inventory (version 2) of ``names``."""
    head = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        f"# Version: {version}\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    lines = "".join(f"{name} {role} 1 {uri} -\n" for name, (role, uri) in sorted(names.items()))
    return head.encode() + zlib.compress(lines.encode())


def check() -> int:
    """Compare the addresses with the projects' published inventories (network)."""
    from urllib.request import urlopen

    from sphinx.util.inventory import InventoryFile

    bad = 0
    for project, (base, _, names) in NAMES.items():
        with urlopen(base + "objects.inv", timeout=30) as f:
            inv = InventoryFile.load(f, base, lambda a, b: a + b)
        for name, (role, uri) in names.items():
            found = inv.get(role, {}).get(name)
            there = None if found is None else getattr(found, "uri", None) or found[2]
            want = base + uri.replace("$", name)
            if there != want:
                bad += 1
                print(f"{project}: {role} {name}: {want} here, {there or 'absent'} there")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the published inventories (network)")
    if parser.parse_args(argv).check:
        return check()
    for project, (_, version, names) in NAMES.items():
        (HERE / f"{project}.inv").write_bytes(inventory(project, version, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
