"""Every public name of posenc, posenc.scaling and posenc_viz, with a builder of
valid calls, the documented rules of their results and the rules they are
exempt from.

``REGISTRY[name]`` is a :class:`Spec`.  ``name`` is the public name as a
registry key: ``sinusoidal`` for ``posenc.sinusoidal``, ``scaling.YaRN`` for
``posenc.scaling.YaRN``, ``posenc_viz.plot_encoding`` as is.  A public name
without an entry fails ``test_every_public_name_is_registered``, so a new
function cannot slip past the fuzz suite.

One module per family, named as posenc's modules are (``posenc_viz`` in
:mod:`.viz`, ``posenc.torch.flex`` in :mod:`.torch_flex`); each writes, in one
:func:`register` call per public name, all the suite knows about it: its builder, its huge requests (or why it
allocates nothing), its reason for not taking the ``dtype, device, xp`` trio.
Builders look their function up as ``posenc.<name>`` (never through the module
that defines it), so moving a function between posenc's modules changes
nothing here.

Builders draw sizes 0, 1 and small, every documented option, every valid
dtype request, positions of any shape (int and float, negative, fractional)
and arrays of every fuzz backend; the expected shape and dtype are the rules
of the function's docstring.
"""

from __future__ import annotations

# each family module fills REGISTRY when imported
from . import (  # noqa: F401
    alibi,
    audit,
    axes,
    bias,
    caches,
    fourier,
    fused,
    grid,
    learned,
    mrope,
    properties,
    resample,
    rotary,
    scaling,
    sinusoidal,
    timesteps,
    torch_flex,
    viz,
    windows,
)
from ._spec import FUZZED_SUBMODULES, NOT_FUZZED, REGISTRY, Spec, key, public_keys, qualified, register, resolve_name
from .viz import CONSTANTS

__all__ = [
    "CONSTANTS",
    "FUZZED_SUBMODULES",
    "NOT_FUZZED",
    "REGISTRY",
    "Spec",
    "key",
    "public_keys",
    "qualified",
    "register",
    "resolve_name",
]
