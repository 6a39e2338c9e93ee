"""The public API is exactly what the docs list, and every function has one shape.

The docs' own test (``tests/test_docs.py``) checks that every public name has
an API page and that every listed name exists; this file checks the rest:
a listed name must be *public* (in ``__all__``, not a private helper or a
submodule attribute), each is listed once, ``__all__`` has no duplicates and
imports what it says, and every public function ends with the keyword-only
``dtype=None, device=None, xp=None`` trio or has a stated reason not to.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import Counter

import pytest

import posenc
import posenc_viz
from posenc import scaling
from tests.test_docs import API, autosummary_entries, public_names

from . import registry as R


def documented_entries() -> list[str]:
    out: list[str] = []
    for page in sorted(API.glob("*.rst")):
        out += autosummary_entries(page.read_text(encoding="utf-8"))
    return out


def test_docs_list_exactly_the_public_api():
    documented = set(documented_entries())
    public = set(public_names())
    not_public = sorted(documented - public)
    undocumented = sorted(public - documented)
    assert not not_public, f"docs/api lists names that are not in any __all__: {not_public}"
    assert not undocumented, f"public names missing from docs/api: {undocumented}"


def test_each_name_is_documented_once():
    twice = sorted(n for n, k in Counter(documented_entries()).items() if k > 1)
    assert not twice, f"listed on more than one API page (two generated pages, one overwrites the other): {twice}"


@pytest.mark.parametrize("module", [posenc, scaling, posenc_viz], ids=lambda m: m.__name__)
def test_all_is_unique_and_importable(module):
    names = module.__all__
    assert len(names) == len(set(names)), f"duplicates in {module.__name__}.__all__"
    namespace: dict = {}
    exec(f"from {module.__name__} import *", namespace)  # noqa: S102 - the user's view
    got = {k for k in namespace if not k.startswith("__")}
    assert got == set(names), f"star-import of {module.__name__} gives {sorted(got ^ set(names))} differently"


@pytest.mark.parametrize("module", [posenc, posenc_viz], ids=lambda m: m.__name__)
def test_no_public_function_outside_all(module):
    """A function reachable as ``module.name`` without an underscore and missing
    from ``__all__`` is an undocumented API users will start to depend on."""
    extra = []
    for name, obj in vars(module).items():
        if name.startswith("_") or name in module.__all__ or inspect.ismodule(obj):
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            extra.append(name)
    assert not extra, f"public-looking names of {module.__name__} not in __all__: {extra}"


# ----------------------------------------------------------------- the trio
TRIO = ("dtype", "device", "xp")


def _functions() -> list[tuple[str, object]]:
    """Every public callable of the registry's names (the constants aside)."""
    return [(n, R.resolve_name(n)) for n in R.public_keys() if n not in R.CONSTANTS]


def _reason(name: str) -> str | None:
    """Why ``name`` does not take the trio (its spec's ``trio``), or ``None``."""
    spec = R.REGISTRY.get(name)
    return None if spec is None else spec.trio


@pytest.mark.parametrize("name,fn", _functions(), ids=[n for n, _ in _functions()])
def test_trio_or_stated_reason(name, fn):
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind is not p.VAR_KEYWORD]
    present = [p.name for p in params if p.name in TRIO]
    for p in params:
        if p.name in TRIO:
            assert p.kind is p.KEYWORD_ONLY, f"{name}: `{p.name}` must be keyword-only"
            assert p.default is None, f"{name}: `{p.name}` must default to None"
    if _reason(name) is not None:
        return
    tail = [p.name for p in params[-3:]]
    assert tail == list(TRIO), (
        f"{name} must end with the keyword-only trio dtype=None, device=None, xp=None "
        f"(it has {present or 'none of them'}); or state the reason as `trio=` of its registry entry"
    )


def test_trio_reasons_are_not_stale():
    has_trio = sorted(
        n
        for n, fn in _functions()
        if _reason(n) is not None and [p.name for p in inspect.signature(fn).parameters.values()][-3:] == list(TRIO)
    )
    assert not has_trio, f"these now have the trio; drop the `trio=` reason of their registry entry: {has_trio}"


def test_keyword_only_options():
    """Data arguments are positional, everything else is keyword-only: a
    public posenc function takes at most three positional parameters."""
    too_many = []
    for name, fn in _functions():
        if name.startswith(("scaling.", "posenc_viz.")):
            continue
        positional = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if len(positional) > 3:
            too_many.append((name, positional))
    assert not too_many, f"options that should be keyword-only: {too_many}"


def _public_modules() -> list[str]:
    """Every public module of posenc (no underscore in its dotted name)."""
    names = [m.name for m in pkgutil.walk_packages(posenc.__path__, "posenc.")]
    return sorted(n for n in names if not any(part.startswith("_") for part in n.split(".")))


PUBLIC_MODULES = _public_modules()


def test_public_modules_include_every_family():
    """The leak check reaches every module a public name comes from."""
    sources = {getattr(posenc, n).__module__ for n in posenc.__all__ if not inspect.ismodule(getattr(posenc, n))}
    missed = sorted(sources - set(PUBLIC_MODULES))
    assert not missed, f"public names come from modules the leak check does not see: {missed}"


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_modules_do_not_leak_helpers(modname):
    """A public module's ``__all__`` lists only public names: what the package
    re-exports, or the module's own documented namespace (``posenc.scaling``,
    ``posenc.torch``)."""
    try:
        mod = importlib.import_module(modname)
    except ModuleNotFoundError as exc:  # posenc.torch without torch
        if exc.name is None or exc.name.split(".")[0] in ("posenc", "posenc_viz"):
            raise
        pytest.skip(f"{modname} needs {exc.name}")
    exported = set(posenc.__all__)
    public = set(public_names())
    names = [f"{modname}.{n}" for n in getattr(mod, "__all__", []) if n not in exported]
    leaks = [n for n in names if n not in public]
    assert not leaks, f"in a module's __all__ but neither re-exported by posenc nor documented as public: {leaks}"
