"""One :class:`Spec` per public name: everything the hardening suite knows about it."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.conftest import Backend, BackendKind
from tests.hardening._fuzz import Case
from tests.test_docs import public_names

Draw = Callable[[Any], Any]

#: the reason of every figure function for not taking the trio
FIGURES = "figures: they return Axes, paths or context managers, never arrays"


@dataclass(frozen=True)
class Spec:
    """How to fuzz one public name, and the rules it is exempt from.

    ``name``: the registry key (see :func:`key`).  ``family``: the registry
    module it is written in (mirrors the posenc module).  ``valid(draw, be)``
    returns a :class:`Case`.  ``hostile``: the parameters the hostile test may
    replace (default: all).  ``aliases``: other parameter names an error about
    a parameter may name instead (a conflict between two arguments may be
    reported on either).  ``huge``: calls whose output exceeds
    ``MAX_ELEMENTS`` (numpy backend), for the fail-fast test;
    ``no_allocation``: why a name that allocates nothing of its own has none.
    ``trio``: why the name does not end with the keyword-only
    ``dtype=None, device=None, xp=None`` trio (``None``: it does).  ``viz``: a
    figure function (fewer examples, figures closed after).  ``function``: why
    the name returns a function, not an array (the mutation test, which
    scribbles over results, skips it).  ``backends``:
    the fuzz backends it runs on (default: all of them).  ``data``: the
    caller's data that the name transforms without reading it (activations
    such as ``apply_rope``'s ``x``: never scanned, a hot path): a NaN or inf
    there gives NaN or inf where the arithmetic puts them, with the
    RuntimeWarning NumPy gives the formula written out (``inf * 0``).
    """

    name: str
    family: str
    valid: Callable[[Draw, Backend], Case]
    hostile: tuple[str, ...] | None = None
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    huge: tuple[Callable[[], tuple[tuple, dict]], ...] = ()
    no_allocation: str | None = None
    trio: str | None = None
    viz: bool = False
    function: str | None = None
    backends: tuple[BackendKind, ...] | None = None
    data: tuple[str, ...] = ()


REGISTRY: dict[str, Spec] = {}


def register(name: str, **kw: Any) -> Callable:
    """Register the decorated builder as the ``valid`` of ``name``'s spec.

    Figure functions (``viz=True``) state :data:`FIGURES` as their trio
    reason unless they give their own.
    """

    def deco(fn: Callable) -> Callable:
        assert name not in REGISTRY, f"{name} is registered twice"
        if kw.get("viz") and "trio" not in kw:
            kw["trio"] = FIGURES
        REGISTRY[name] = Spec(name=name, family=fn.__module__.rpartition(".")[2], valid=fn, **kw)
        return fn

    return deco


#: registry keys are short: ``sinusoidal`` for ``posenc.sinusoidal``,
#: ``scaling.YaRN`` for ``posenc.scaling.YaRN``; ``posenc_viz.*`` as is
_PREFIXES = (("posenc.scaling.", "scaling."), ("posenc_viz.", "posenc_viz."), ("posenc.", ""))

#: public namespaces outside the function registry: posenc.torch's nn.Module
#: adapters, fuzzed through model plumbing in tests/hardening/test_fuzz_modules.py
#: (tests/posenc/test_torch_modules.py checks them against the functions they wrap)
NOT_FUZZED = ("posenc.torch.",)
#: the functions of posenc.torch's submodules are in the registry (``torch.flex.alibi``)
FUZZED_SUBMODULES = ("posenc.torch.flex.",)


def key(qualified: str) -> str:
    """The registry key of a fully qualified public name."""
    for long, short in _PREFIXES:
        if qualified.startswith(long):
            return short + qualified[len(long) :]
    raise ValueError(f"not a public name of posenc or posenc_viz: {qualified}")


def qualified(name: str) -> str:
    """The fully qualified public name of a registry key."""
    for long, short in _PREFIXES:
        if name.startswith(short):
            return long + name[len(short) :]
    raise AssertionError(name)  # pragma: no cover - the last prefix is empty


def public_keys() -> list[str]:
    """The registry keys of every public name the fuzz suite covers:
    :func:`tests.test_docs.public_names` without :data:`NOT_FUZZED`."""
    return [key(n) for n in public_names() if not n.startswith(NOT_FUZZED) or n.startswith(FUZZED_SUBMODULES)]


def resolve_name(name: str) -> Any:
    """The object a registry key names, looked up as the public name (never
    through the module that defines it)."""
    root, *rest = qualified(name).split(".")

    def attr(obj: Any, part: str) -> Any:
        # a submodule the package does not import itself (posenc.torch.flex)
        if not hasattr(obj, part) and hasattr(obj, "__path__"):
            importlib.import_module(f"{obj.__name__}.{part}")
        return getattr(obj, part)

    return functools.reduce(attr, rest, importlib.import_module(root))
