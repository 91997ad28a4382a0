"""The pytest plugin (entry point ``pytest11``): the implementation under test and ready fixtures.

Options (one ``spec-verify`` group, all prefixed ``--spec-``):

- ``--spec-impl=SPEC``: the implementation (``reference``, ``python:pkg.mod``, ``ffi:lib.so``,
  ``mutant:s03``);
- ``--spec-seed=N``: the root seed of every seeded generator the fixtures give (default 0, so a
  run is reproducible; the report header prints it);
- ``--spec-hypothesis-profile={dev,ci}``: the Hypothesis profile (``ci`` is derandomized and
  is chosen when Hypothesis detects a CI service, e.g. ``CI`` is set, ``dev`` otherwise);
- ``--spec-alpha``, ``--spec-delta``, ``--spec-power``, ``--spec-sequential``: the statistical
  tier's family-wise false-alarm rate, detectable distance, power and early stopping.

Fixtures: ``spec_impl`` (the loaded implementation), ``spec_seed``, ``spec_rng`` (a numpy
``Generator`` per test, from the root seed and the test's id; its ``random()`` makes it a
uniform source), ``spec_params`` (``spec_params(**fields)`` builds the implementation's sampling
parameters), ``spec_statistics`` (the statistical tier's keyword arguments).

Markers: ``spec_property``, ``spec_statistical``, and ``spec_capability(name, ...)``, which skips
a test when the implementation lacks a capability. A failing test that uses the plugin prints a
reproduction line: the pytest command with the implementation and the seed.

The plugin is inert unless used: in a project that gives no ``--spec-*`` option and collects
no test using its fixtures or markers, it registers its options and markers and nothing else
(no Hypothesis profile is loaded, no header line is printed, numpy is never imported). Once
used, it loads the Hypothesis profile after collection and prints its seed line there.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import zlib
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from spec_verify.seeds import seed_option

__all__ = [
    "PROFILES",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_report_collectionfinish",
    "pytest_report_header",
    "pytest_runtest_makereport",
    "pytest_runtest_setup",
    "spec_impl",
    "spec_params",
    "spec_rng",
    "spec_seed",
    "spec_statistics",
]

PROFILES = ("dev", "ci")
_FIXTURES = frozenset({"spec_impl", "spec_seed", "spec_rng", "spec_params", "spec_statistics"})
_MARKERS = (
    "spec_property: a built-in property of spec-verify (runs against --spec-impl)",
    "spec_statistical: a statistical check of spec-verify (declared alpha, delta, power)",
    "spec_capability(*names): skip unless the implementation under test offers every "
    "capability named (verify_draft, injected_uniforms, sampling_distribution, prompt_lookup, "
    "pcg32, generation)",
)
_IMPL_KEY = pytest.StashKey[Any]()
_PROFILE_KEY = pytest.StashKey[str]()
# Options that go into the reproduction line when they differ from their defaults.
_REPRO_OPTIONS = ("alpha", "delta", "power")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("spec-verify", "speculative sampler verification")
    group.addoption(
        "--spec-impl",
        action="store",
        default="reference",
        metavar="SPEC",
        help="implementation under test: reference, python:pkg.mod, ffi:lib.so, mutant:s03",
    )
    group.addoption(
        "--spec-seed",
        action="store",
        type=_seed,
        default=0,
        metavar="N",
        help="root seed of the seeded generators and the statistical tier (default: 0)",
    )
    group.addoption(
        "--spec-hypothesis-profile",
        action="store",
        choices=PROFILES,
        default=None,
        help="Hypothesis profile: dev, or ci (derandomized; the default when CI is set)",
    )
    group.addoption(
        "--spec-alpha",
        action="store",
        type=float,
        default=1e-6,
        metavar="ALPHA",
        help="statistical tier: family-wise false-alarm rate (default: 1e-6)",
    )
    group.addoption(
        "--spec-delta",
        action="store",
        type=float,
        default=0.05,
        metavar="DELTA",
        help="statistical tier: total-variation distance each check detects (default: 0.05)",
    )
    group.addoption(
        "--spec-power",
        action="store",
        type=float,
        default=0.99,
        metavar="POWER",
        help="statistical tier: probability of detecting a sampler DELTA away (default: 0.99)",
    )
    group.addoption(
        "--spec-sequential",
        action="store_true",
        default=False,
        help="statistical tier: stop a check early once its e-process rejects",
    )


_seed = seed_option("--spec-seed")


def pytest_configure(config: pytest.Config) -> None:
    for line in _MARKERS:
        config.addinivalue_line("markers", line)
    if _options_used(config):
        _check_impl_option(config)
        _check_statistical_options(config)
        config.stash[_PROFILE_KEY] = _load_profile(config)


def _check_impl_option(config: pytest.Config) -> None:
    """A ``--spec-impl`` that names nothing loadable (an unknown scheme, a missing module or
    file) stops the session at its start with one usage error and the closest valid name,
    instead of one load error per test that uses the implementation."""
    from spec_verify._specs import check_spec
    from spec_verify.errors import UnknownImplementation

    spec = config.getoption("--spec-impl")
    try:
        check_spec(spec)
    except UnknownImplementation as exc:
        fix = f"; {exc.fix}" if exc.fix else ""
        raise pytest.UsageError(f"--spec-impl {spec!r}: {exc.rule}{fix}") from None


def _check_statistical_options(config: pytest.Config) -> None:
    """``--spec-alpha``, ``--spec-delta`` and ``--spec-power`` out of their range stop the
    session at its start with one usage error (the statistics' own rules: a rate in (0, 1), a
    total-variation distance in (0, 1], a power above alpha), not one error per statistical
    test. ``--spec-seed`` and ``--spec-hypothesis-profile`` are checked by their parser types."""
    alpha = config.getoption("--spec-alpha")
    delta = config.getoption("--spec-delta")
    power = config.getoption("--spec-power")
    problem = None
    if not 0 < alpha < 1:
        problem = f"--spec-alpha {alpha:g}: must be a false-alarm rate in (0, 1); e.g. 1e-6"
    elif not 0 < delta <= 1:
        problem = (f"--spec-delta {delta:g}: must be a total-variation distance in (0, 1]; "
                   "e.g. 0.05")
    elif not alpha < power < 1:
        problem = (f"--spec-power {power:g}: must be a probability in (--spec-alpha {alpha:g}, "
                   "1) (rejecting at random already has power alpha); e.g. 0.99")
    if problem is not None:
        raise pytest.UsageError(problem)


def _options_used(config: pytest.Config) -> bool:
    """Whether a ``--spec-*`` option was given (command line, PYTEST_ADDOPTS or ``addopts``)."""
    words = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    with contextlib.suppress(ValueError):  # no addopts ini key
        words += [str(w) for w in config.getini("addopts")]
    return any(str(word).startswith("--spec-") for word in words)


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Activate the plugin (its Hypothesis profile) once a collected test uses it."""
    if _PROFILE_KEY not in config.stash and any(_uses_plugin(item) for item in items):
        config.stash[_PROFILE_KEY] = _load_profile(config)


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    """The seed line when a collected test activated the plugin (given ``--spec-*`` options, the
    header already printed it; an inert plugin prints nothing)."""
    if _PROFILE_KEY not in config.stash or _options_used(config):
        return []
    return [_header(config)]


def _in_ci() -> bool:
    """The CI test Hypothesis itself uses (``CI`` set to anything, ``GITHUB_ACTIONS``, ...), so
    that the two never disagree; ``CI`` alone where that function is unavailable."""
    try:
        from hypothesis._settings import is_in_ci
    except ImportError:  # a Hypothesis without the helper
        return "CI" in os.environ
    return bool(is_in_ci())


def _load_profile(config: pytest.Config) -> str:
    """Register the profiles and load the chosen one; an explicit choice of another profile
    (``--hypothesis-profile`` or one loaded by a conftest) is left alone."""
    from hypothesis import HealthCheck, settings
    from hypothesis.errors import InvalidArgument

    # Both profiles derive from Hypothesis's "default" profile, not from whatever profile is
    # loaded now: under CI Hypothesis has already loaded its own derandomized "ci" profile, and
    # a "dev" built on top of it would silently be derandomized too.
    base = settings.get_profile("default")
    profiles = {
        "dev": settings(
            base,
            max_examples=50,
            derandomize=False,
            deadline=None,
            print_blob=True,
            suppress_health_check=[HealthCheck.too_slow],
        ),
        "ci": settings(
            base,
            max_examples=100,
            derandomize=True,
            database=None,
            deadline=None,
            print_blob=True,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    }
    for name, profile in profiles.items():
        try:
            settings.get_profile(name)
        except InvalidArgument:  # not registered yet; a user's own "dev" or "ci" is kept
            settings.register_profile(name, profile)
    chosen = config.getoption("--spec-hypothesis-profile")
    current = settings.get_current_profile_name()
    if chosen is None:
        if config.getoption("--hypothesis-profile", None) or current != "default":
            return current
        chosen = "ci" if _in_ci() else "dev"
    settings.load_profile(chosen)
    return str(chosen)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The seed line at the top when a ``--spec-*`` option was given."""
    return [_header(config)] if _options_used(config) else []


def _header(config: pytest.Config) -> str:
    return (
        f"spec-verify: impl={config.getoption('--spec-impl')}, "
        f"seed={config.getoption('--spec-seed')}, "
        f"hypothesis profile={config.stash.get(_PROFILE_KEY, 'default')}"
    )


def _implementation(config: pytest.Config) -> Any:
    """The implementation under test, loaded once per session."""
    if _IMPL_KEY not in config.stash:
        from spec_verify.adapters._loader import load_implementation

        # From a worker, as ``check`` does: the fixtures hand test authors proxies of the
        # module's objects. Under the grader, ``spec_verify.reference`` here is already the
        # grader's proxy of a sampler in another process (mutants/_proxy.py), which a worker
        # would not see (it would import the installed reference), so that run keeps it here.
        graded = any(type(f).__module__ == "spec_verify.mutants._proxy" for f in sys.meta_path)
        config.stash[_IMPL_KEY] = load_implementation(
            config.getoption("--spec-impl"), in_process=graded
        )
    return config.stash[_IMPL_KEY]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the session's implementation worker when the session ends (pytest run in process,
    as pytester and IDEs do, keeps the config alive long after)."""
    impl = config.stash.get(_IMPL_KEY, None)
    close = getattr(impl, "close", None)
    if close is not None:
        close()


@pytest.fixture(scope="session")
def spec_impl(request: pytest.FixtureRequest) -> Any:
    """The implementation under test, loaded from ``--spec-impl``."""
    return _implementation(request.config)


@pytest.fixture(scope="session")
def spec_seed(request: pytest.FixtureRequest) -> int:
    """The root seed (``--spec-seed``, default 0)."""
    seed: int = request.config.getoption("--spec-seed")
    return seed


@pytest.fixture
def spec_rng(request: pytest.FixtureRequest, spec_seed: int) -> Any:
    """A numpy ``Generator`` for this test: seeded from the root seed and the test's id, so
    tests do not share streams and each one reproduces alone. ``random()`` makes it a uniform
    source for ``verify_draft``."""
    import numpy as np

    key = zlib.crc32(request.node.nodeid.encode())
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([spec_seed, key])))


@pytest.fixture(scope="session")
def spec_params(spec_impl: Any) -> Callable[..., Any]:
    """``spec_params(**fields)``: the implementation's sampling parameters from the contract's
    field names (``temperature``, ``top_k``, ``top_p``, ...)."""

    def build(**fields: Any) -> Any:
        return spec_impl.params(**fields)

    return build


@pytest.fixture(scope="session")
def spec_statistics(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Keyword arguments of ``run_statistical_tier`` from the ``--spec-`` options."""
    option = request.config.getoption
    return {
        "family_alpha": option("--spec-alpha"),
        "delta": option("--spec-delta"),
        "power": option("--spec-power"),
        "sequential": option("--spec-sequential"),
    }


def pytest_runtest_setup(item: pytest.Item) -> None:
    names = [name for mark in item.iter_markers("spec_capability") for name in mark.args]
    if not names:
        return
    impl = _implementation(item.config)
    missing = [name for name in names if name not in impl.capabilities]
    if missing:
        pytest.skip(f"{impl.name} does not offer {', '.join(missing)}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome: Any = yield
    report: pytest.TestReport = outcome.get_result()
    if report.failed and _uses_plugin(item):
        report.sections.append(("spec-verify reproduction", reproduction_line(item)))


def _uses_plugin(item: pytest.Item) -> bool:
    fixtures = set(getattr(item, "fixturenames", ()))
    marks = ("spec_property", "spec_statistical", "spec_capability")
    marked = any(item.get_closest_marker(name) is not None for name in marks)
    return bool(fixtures & _FIXTURES) or marked


def reproduction_line(item: pytest.Item) -> str:
    """The pytest command that runs this test alone with the same implementation and seed."""
    config = item.config
    options = [
        f"--spec-impl={config.getoption('--spec-impl')}",
        f"--spec-seed={config.getoption('--spec-seed')}",
    ]
    for name in _REPRO_OPTIONS:
        value = config.getoption(f"--spec-{name}")
        default = {"alpha": 1e-6, "delta": 0.05, "power": 0.99}[name]
        if value != default:
            options.append(f"--spec-{name}={value:g}")
    if config.getoption("--spec-sequential"):
        options.append("--spec-sequential")
    profile = config.getoption("--spec-hypothesis-profile")
    if profile:
        options.append(f"--spec-hypothesis-profile={profile}")
    return "pytest " + _target(item) + " " + " ".join(options)


def _target(item: pytest.Item) -> str:
    """How to name the test on a command line: ``--pyargs`` for the built-in modules."""
    _, _, rest = item.nodeid.partition("::")
    path = Path(str(item.path))
    spec = importlib.util.find_spec("spec_verify.properties")
    builtin = spec is not None and spec.origin is not None and Path(spec.origin).parent
    if path.parent == builtin:
        return f"--pyargs 'spec_verify.properties.{path.stem}::{rest}'"
    try:
        shown = os.path.relpath(path, config_dir(item.config))
    except ValueError:  # another drive (Windows)
        shown = str(path)
    return f"'{shown}::{rest}'" if rest else f"'{shown}'"


def config_dir(config: pytest.Config) -> Path:
    return Path(config.invocation_params.dir)
