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
from collections import Counter

import pytest

import posenc
import posenc_viz
from posenc import scaling
from tests.test_docs import API, autosummary_entries


def public_names() -> set[str]:
    names = {f"posenc.{n}" for n in posenc.__all__ if not inspect.ismodule(getattr(posenc, n))}
    names |= {f"posenc.scaling.{n}" for n in scaling.__all__}
    names |= {f"posenc_viz.{n}" for n in posenc_viz.__all__}
    # the torch modules (imported only when used)
    names |= {f"posenc.torch.{n}" for n in importlib.import_module("posenc.torch").__all__}
    return names


def documented_entries() -> list[str]:
    out: list[str] = []
    for page in sorted(API.glob("*.rst")):
        out += autosummary_entries(page.read_text(encoding="utf-8"))
    return out


def test_docs_list_exactly_the_public_api():
    documented = set(documented_entries())
    public = public_names()
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
#: public names without the full ``dtype, device, xp`` trio, and why
TRIO_REASONS = {
    # the output follows an input array: namespace, device and dtype are the input's
    "add_sinusoidal": "adds to `x`: the result has x's namespace, device and dtype",
    "resample_table": "interpolates `table`: the result has its namespace, device and dtype",
    "resample_grid": "interpolates `table`: the result has its namespace, device and dtype",
    "similarity": "dot products of `a` and `b`: their namespace, device and dtype",
    "apply_rope": "rotates `x`: the result has x's namespace, device and dtype",
    "rope": "rotates `x`: the result has x's namespace, device and dtype",
    "gaussian_fourier_features": "namespace and device of `coords` and `B` (both arrays); `dtype` only",
    "rope_permutation": "an index array: the namespace's index dtype, no float dtype to choose",
    # not array computations
    "scaling.Scaling": "a configuration class",
    "scaling.Linear": "a configuration class",
    "scaling.NTK": "a configuration class",
    "scaling.DynamicNTK": "a configuration class",
    "scaling.YaRN": "a configuration class",
    "scaling.Llama3": "a configuration class",
    "scaling.LongRoPE": "a configuration class",
    "scaling.Proportional": "a configuration class",
    "scaling.from_hf": "returns keyword arguments (a dict), no array",
    "posenc_viz.*": "figures: they return Axes, paths or context managers, never arrays",
    "posenc_viz.to_numpy": "returns a host NumPy array by definition",
    "posenc_viz.load_table": "reads a file into a host NumPy array",
}

TRIO = ("dtype", "device", "xp")


def _functions() -> list[tuple[str, object]]:
    out = [(n, getattr(posenc, n)) for n in posenc.__all__ if not inspect.ismodule(getattr(posenc, n))]
    out += [(f"scaling.{n}", getattr(scaling, n)) for n in scaling.__all__]
    out += [(f"posenc_viz.{n}", getattr(posenc_viz, n)) for n in posenc_viz.__all__ if callable(getattr(posenc_viz, n))]
    return out


def _exempt(name: str) -> str | None:
    if name in TRIO_REASONS:
        return TRIO_REASONS[name]
    if name.startswith("posenc_viz.") and name != "posenc_viz.to_numpy":
        return TRIO_REASONS["posenc_viz.*"]
    return None


@pytest.mark.parametrize("name,fn", _functions(), ids=[n for n, _ in _functions()])
def test_trio_or_stated_reason(name, fn):
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind is not p.VAR_KEYWORD]
    present = [p.name for p in params if p.name in TRIO]
    for p in params:
        if p.name in TRIO:
            assert p.kind is p.KEYWORD_ONLY, f"{name}: `{p.name}` must be keyword-only"
            assert p.default is None, f"{name}: `{p.name}` must default to None"
    if _exempt(name) is not None:
        return
    tail = [p.name for p in params[-3:]]
    assert tail == list(TRIO), (
        f"{name} must end with the keyword-only trio dtype=None, device=None, xp=None "
        f"(it has {present or 'none of them'}); or state the reason in TRIO_REASONS"
    )


def test_trio_reasons_are_not_stale():
    names = {n for n, _ in _functions()}
    stale = sorted(k for k in TRIO_REASONS if k != "posenc_viz.*" and k not in names)
    assert not stale, f"TRIO_REASONS names functions that are not public: {stale}"
    has_trio = sorted(
        n
        for n, fn in _functions()
        if n in TRIO_REASONS and [p.name for p in inspect.signature(fn).parameters.values()][-3:] == list(TRIO)
    )
    assert not has_trio, f"these now have the trio; drop their reason: {has_trio}"


def test_keyword_only_options():
    """Data arguments positional, options keyword-only (DESIGN section 3): a
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


def test_modules_do_not_leak_helpers():
    """Each family module's ``__all__`` lists only what the package re-exports."""
    exported = set(posenc.__all__)
    leaks = []
    for modname in ("sinusoidal", "rotary", "bias", "grid", "fourier"):
        try:
            mod = importlib.import_module(f"posenc.{modname}")
        except ModuleNotFoundError:  # pragma: no cover
            continue
        for n in getattr(mod, "__all__", []):
            if n not in exported:
                leaks.append(f"posenc.{modname}.{n}")
    assert not leaks, f"in a module's __all__ but not re-exported by posenc: {leaks}"
