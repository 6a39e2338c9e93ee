"""Fuzz every public function with valid and hostile arguments.

* ``test_valid``: documented-valid calls (sizes 0, 1 and small, every option,
  every dtype request, positions of any shape, every fuzz backend) succeed,
  return the documented shape and dtype on the input's namespace and device,
  and never hold NaN or inf (``-inf`` only where a causal mask is asked for).
* ``test_hostile``: the same calls with one argument replaced by a hostile
  value (zero, negative, huge, NaN, inf, bool, str, float-for-int, wrong
  dtypes, 0-d and empty arrays, other namespaces and devices, modules,
  ragged lists, ...): the call raises a ``ValueError`` / ``TypeError`` whose
  message names that argument, or, when the value is acceptable, returns a
  finite result.  A ``bool`` accepted as a number, a float accepted as an
  int or a non-string accepted as a choice is a failure.
* ``test_mixed_backends``: one array argument moved to another namespace
  (NumPy <-> torch) or device (array-api-strict's default device <->
  ``device1``) while the others stay: an error naming an argument, never a
  silent result.

Bounded: a fixed number of examples per function and no database, so the
whole file runs in about a minute.  The examples are the same on every run
(the ``posenc`` hypothesis profile is derandomized, so CI is reproducible);
``HYPOTHESIS_PROFILE=explore`` draws fresh ones, and ``POSENC_FUZZ_SCALE``
multiplies their number, for a search that may find something new.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
import zlib
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import strategies as st

from tests.conftest import BackendKind

from . import registry as R
from ._fuzz import (
    BACKENDS,
    COUNTS,
    HOSTILE,
    Case,
    Hang,
    backend,
    check_result,
    must_refuse,
    names_param,
    parameters,
    substitute,
    time_limit,
)
from .findings import hostile_skip

#: examples per function; ``POSENC_FUZZ_SCALE=4`` runs four times as many
#: (for a long local run), ``0.2`` a fifth (a quick look)
SCALE = float(os.environ.get("POSENC_FUZZ_SCALE", "1"))
N_VALID = max(1, round(30 * SCALE))
N_HOSTILE = max(1, round(60 * SCALE))
N_MIXED = max(1, round(15 * SCALE))
N_VIZ_VALID = max(1, round(6 * SCALE))
N_VIZ_HOSTILE = max(1, round(15 * SCALE))
CALL_LIMIT_S = 60.0  # generous: CI machines are shared; a real hang runs forever

HYPOTHESIS = dict(
    deadline=None,
    # no "explain" phase (line tracing is slow) and one bug per test: a
    # failure shrinks quickly to one small example
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    report_multiple_bugs=False,
    # derandomize / database come from the profile (tests/conftest.py): the same
    # examples on every CI run, fresh ones with HYPOTHESIS_PROFILE=explore
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

NAMES = sorted(R.REGISTRY)


@contextlib.contextmanager
def _scratch_cwd():
    """Run the body in a new, empty working directory, removed afterwards."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="posenc-fuzz-cwd-") as tmp:
        os.chdir(tmp)
        try:
            yield
        finally:
            os.chdir(old)


def _backends(spec: R.Spec) -> list:
    if spec.backends is None:
        bes = list(BACKENDS)
    else:
        bes = [b for b in BACKENDS if b.kind in spec.backends]
    if not bes:
        pytest.skip("none of this function's fuzz backends is selected")
    return bes


def _describe(args: tuple, kwargs: dict) -> str:
    from posenc._compat import is_array

    def short(v: Any) -> str:
        if is_array(v):
            return f"<{type(v).__module__.split('.')[0]} {tuple(v.shape)} {v.dtype}>"
        r = repr(v)
        return r if len(r) < 60 else r[:57] + "..."

    parts = [short(a) for a in args] + [f"{k}={short(v)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _call(fn: Any, args: tuple, kwargs: dict, what: str, *, allow: type[Warning] | None = None) -> Any:
    """``fn(*args, **kwargs)`` with every warning an error (but ``allow``)."""
    with time_limit(CALL_LIMIT_S, what), warnings.catch_warnings():
        warnings.simplefilter("error")
        if allow is not None:
            warnings.simplefilter("ignore", allow)
        return fn(*args, **kwargs)


# ------------------------------------------------------------ completeness
def test_every_public_name_is_registered():
    public = R.public_keys()
    missing = [n for n in public if n not in R.REGISTRY and n not in R.CONSTANTS]
    assert not missing, f"public names without a fuzz registry entry (tests/hardening/registry/): {missing}"


def test_registry_has_no_stale_entries():
    public = set(R.public_keys())
    stale = [n for n in R.REGISTRY if n not in public]
    assert not stale, f"registry entries that are not public (renamed or removed?): {stale}"


def test_registry_mirrors_the_package():
    """Each name is registered in the family module named as the posenc module
    that defines it (``viz`` for posenc_viz), so a moved function moves here too."""
    wrong = []
    for name, spec in R.REGISTRY.items():
        package, _, module = R.resolve_name(name).__module__.partition(".")
        home = "viz" if package == "posenc_viz" else module.replace(".", "_")  # torch.flex -> torch_flex
        if spec.family != home:
            wrong.append(f"{name}: registry/{spec.family}.py, defined in {package}.{module}")
    assert not wrong, f"registry entries outside the module that mirrors their home: {wrong}"


@pytest.mark.parametrize("name", sorted(R.CONSTANTS))
def test_public_constants_are_read_only(name):
    """Public constants cannot be changed by accident (a shared mutable default
    would be global state every later call sees)."""
    obj = R.resolve_name(name)
    from types import MappingProxyType

    assert isinstance(obj, (tuple, frozenset, MappingProxyType, str, int, float)), (
        f"{name} is a mutable {type(obj).__name__}: assigning to it changes every later figure"
    )


# ------------------------------------------------------------------- valid
@pytest.mark.parametrize("name", NAMES)
def test_valid(name):
    spec = R.REGISTRY[name]
    fn = R.resolve_name(name)
    bes = _backends(spec)

    @settings(max_examples=N_VIZ_VALID if spec.viz else N_VALID, **HYPOTHESIS)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        be = data.draw(st.sampled_from(bes), label="backend")
        _no_open_figures(spec)
        case: Case = spec.valid(data.draw, be)
        what = f"{name}{_describe(case.args, case.kwargs)} on {be.name}"
        try:
            result = _call(fn, case.args, case.kwargs, what)
            check_result(case, result, what)
        finally:
            if case.cleanup is not None:
                case.cleanup()
        COUNTS[f"fuzz-valid:{name}"] += 1

    run()


# ----------------------------------------------------------------- hostile
def _result_arrays(result: Any) -> list:
    from posenc._compat import is_array

    if isinstance(result, tuple):
        return [r for r in result if is_array(r)]
    return [result] if is_array(result) else []


def _sane(case: Case, result: Any, what: str, *, allow_inf: bool = False, allow_nan: bool = False) -> None:
    """A result of an accepted hostile value: finite where the case promises
    it (``allow_nan``: NaN rows, no infinities)."""
    from posenc_viz import to_numpy

    if case.kind == "object":
        return
    for r in _result_arrays(result):
        parts = [r]
        if "complex" in str(getattr(r, "dtype", "")):  # (rope_cache's complex layout): both parts
            from array_api_compat import array_namespace

            ns = array_namespace(r)
            parts = [ns.real(r), ns.imag(r)]
        for part in parts:
            try:
                a = to_numpy(part)
            except ValueError:  # meta tensors: no values
                continue
            if a.dtype.kind != "f" or case.finite == "any":
                continue
            if allow_nan and (allow_inf or case.finite == "no-nan"):
                continue  # (neither NaN rows nor a mask's -inf are errors here)
            bad = np.isinf(a) if allow_nan else np.isnan(a) if case.finite == "no-nan" or allow_inf else ~np.isfinite(a)
            assert not bad.any(), f"{what}: accepted, but {int(bad.sum())} of {a.size} values are NaN/inf"


def _no_open_figures(spec: R.Spec) -> None:
    """A viz example starts with no open figure: figures left by an example
    that stopped early (hypothesis ending a draw midway) would add up to
    matplotlib's warning about many open figures, an error here, raised
    while the next example draws its data (which hypothesis then reports as
    a flaky strategy)."""
    if spec.viz:
        import matplotlib.pyplot as plt

        plt.close("all")


def _hostile_example(
    data: st.DataObject, fn: Any, spec: R.Spec, case: Case, params: list, pool: list, name: str
) -> Any:
    """One example of :func:`test_hostile`: one parameter of the valid
    ``case`` replaced by a hostile value; returns the hostile value's
    :class:`Hostile`."""
    from posenc._compat import is_array

    be = case.be
    p = data.draw(st.sampled_from(params), label="parameter")
    h = data.draw(st.sampled_from(pool), label="hostile value")
    if hostile_skip(name, p.name, h.label) is not None:
        reject()  # an open finding (findings.py) has its own regression test
    value = h.make(be)
    args, kwargs = substitute(fn, case, p.name, value)
    what = f"{name}{_describe(args, kwargs)} on {be.name} ({p.name}={h.label})"
    try:
        # a hostile string in place of an output folder is a relative path:
        # each example writes into a fresh working directory, never the checkout
        with _scratch_cwd() if spec.viz else contextlib.nullcontext():
            # NaN or inf in a caller's data (Spec.data): NumPy's RuntimeWarning of the arithmetic, as the
            # formula written out gives it; any other warning is still an error
            quiet = RuntimeWarning if p.name in spec.data and not h.finite else None
            result = _call(fn, args, kwargs, what, allow=quiet)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        also = ("xp", "device", "dtype") if is_array(value) else ()
        assert names_param(msg, p.name, (*spec.aliases.get(p.name, ()), *also)), (
            f"{what}: {type(exc).__name__} does not name `{p.name}`: {msg}"
        )
        assert len(msg) <= 2000, f"{what}: error message is not short: {msg[:600]!r}..."
    except Hang as exc:
        raise AssertionError(f"{what}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the finding itself
        raise AssertionError(f"{what}: raised {type(exc).__name__}: {exc}") from exc
    else:
        why = must_refuse(p.annotation, value, p.default)
        assert why is None, f"{what}: accepted {why}"
        if h.finite:
            # a causal mask asked for by the hostile value is -inf by design; a huge int
            # (an offset) puts positions beyond the exact range, which posenc refuses
            # where it reads positions (NumPy, torch CPU) and gives NaN rows elsewhere
            # (docs/theory/precision.rst)
            nan_rows = h.cls == "huge int" and be.kind not in (BackendKind.NUMPY, BackendKind.TORCH)
            _sane(case, result, what, allow_inf=p.name == "causal", allow_nan=nan_rows)
    return h


@pytest.mark.parametrize("name", NAMES)
def test_hostile(name):
    spec = R.REGISTRY[name]
    fn = R.resolve_name(name)
    params = [p for p in parameters(fn) if spec.hostile is None or p.name in spec.hostile]
    if not params:
        pytest.skip(f"{name} takes no arguments")
    bes = _backends(spec)
    # hypothesis leans on the first element of a list: a per-function order
    # spreads that lean over the classes of hostile values
    pool = sorted(HOSTILE, key=lambda h: zlib.crc32(f"{name}/{h.label}".encode()))

    @settings(max_examples=N_VIZ_HOSTILE if spec.viz else N_HOSTILE, **HYPOTHESIS)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        be = data.draw(st.sampled_from(bes), label="backend")
        _no_open_figures(spec)
        case: Case = spec.valid(data.draw, be)
        try:
            h = _hostile_example(data, fn, spec, case, params, pool, name)
        finally:
            # also where the example stops before the call (a rejection, a
            # failure to build the hostile value): a viz case's figures are closed
            if case.cleanup is not None:
                case.cleanup()
        COUNTS[f"fuzz-hostile:{name}"] += 1
        COUNTS[f"hostile-class:{h.cls}"] += 1

    run()


# ------------------------------------------------------ mixed backends
MIX_BACKENDS = (BackendKind.NUMPY, BackendKind.TORCH, BackendKind.STRICT, BackendKind.STRICT_DEVICE1)


def _move(kind: BackendKind, x: Any) -> tuple[Any, str]:
    """``x`` on the other backend of its pair, and the kind of move."""
    from posenc_viz import to_numpy

    a = to_numpy(x)
    if kind is BackendKind.NUMPY:
        import torch

        return torch.asarray(a), "namespace"
    if kind is BackendKind.TORCH:
        return a, "namespace"
    import array_api_strict as xs

    if kind is BackendKind.STRICT:
        return xs.asarray(a, device=xs.Device("device1")), "device"
    return xs.asarray(a), "device"


@pytest.mark.parametrize("name", [n for n in NAMES if not R.REGISTRY[n].viz])
def test_mixed_backends(name):
    from posenc._compat import is_array

    spec = R.REGISTRY[name]
    fn = R.resolve_name(name)
    kinds = [k for k in MIX_BACKENDS if spec.backends is None or k in spec.backends]
    bes = [b for b in (backend(k) for k in kinds) if b is not None]
    if not bes:
        pytest.skip("none of this function's mixed backends is selected")
    pnames = [p.name for p in parameters(fn)]

    @settings(max_examples=N_MIXED, **HYPOTHESIS)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        be = data.draw(st.sampled_from(bes), label="backend")
        case: Case = spec.valid(data.draw, be)
        slots = [("arg", i, pnames[i]) for i, a in enumerate(case.args) if is_array(a)]
        slots += [("kw", k, k) for k, v in case.kwargs.items() if is_array(v)]
        if not slots:
            return
        where, key, pname = data.draw(st.sampled_from(slots), label="moved")
        args, kwargs = list(case.args), dict(case.kwargs)
        src = args[key] if where == "arg" else kwargs[key]
        moved, kind = _move(be.kind, src)
        if where == "arg":
            args[key] = moved
        else:
            kwargs[key] = moved
        involved = {pname} | {s[2] for s in slots}
        # a second source of namespace / device when the moved array is alone
        if len(slots) == 1:
            if kind == "namespace" and "xp" in pnames:
                kwargs["xp"] = be.ns
                involved.add("xp")
            elif kind == "device" and "device" in pnames:
                import array_api_strict as xs

                kwargs["device"] = be.device if be.device is not None else xs.Device("CPU_DEVICE")
                involved.add("device")
            else:
                return  # the moved array decides alone: nothing conflicts
        what = f"{name}{_describe(tuple(args), kwargs)} ({pname} moved to another {kind})"
        try:
            _call(fn, tuple(args), kwargs, what)
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            assert any(f"`{n}`" in msg for n in involved), f"{what}: error names none of {sorted(involved)}: {msg}"
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(f"{what}: raised {type(exc).__name__}: {exc}") from exc
        else:
            raise AssertionError(f"{what}: mixed {kind}s were accepted silently")
        finally:
            if case.cleanup is not None:
                case.cleanup()
        COUNTS[f"fuzz-mixed:{name}"] += 1

    run()
