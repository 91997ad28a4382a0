"""The pytest plugin, tested with pytester: options, header, fixtures, markers, profiles, the
reproduction line, and the built-in properties and statistics run through it."""

from __future__ import annotations

from collections.abc import Iterator

import hypothesis._settings
import numpy  # noqa: F401 (in-process runs must find C extensions already imported)
import pytest
import scipy.stats  # noqa: F401
from hypothesis import settings

import spec_verify.properties
import spec_verify.tiers.statistical  # noqa: F401

pytest_plugins = ["pytester"]

ACCEPT_ALL = "python:tests.properties.impls.accept_all"


@pytest.fixture(autouse=True)
def _fresh_hypothesis_profile() -> Iterator[None]:
    """In-process runs share Hypothesis's global profile: start each from the default one and
    give the outer session its own back."""
    outer = settings.get_current_profile_name()
    settings.load_profile("default")
    yield
    settings.load_profile(outer)


# Every variable by which Hypothesis recognises a CI service (its own list where it has one).
_CI_VARIABLES = tuple(getattr(hypothesis._settings, "_CI_VARS", {"CI": None}))


@pytest.fixture(autouse=True)
def _outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine running our tests may itself be a CI service; these tests start outside one."""
    for name in _CI_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_header_names_the_implementation_the_seed_and_the_profile(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--spec-seed=7")
    result.stdout.fnmatch_lines(["spec-verify: impl=reference, seed=7, hypothesis profile=dev"])
    result.assert_outcomes(passed=1)


def test_options_live_in_one_prefixed_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["speculative sampler verification:"])
    text = result.stdout.str()
    section = text[text.index("speculative sampler verification:") :]
    for option in (
        "--spec-impl=SPEC",
        "--spec-seed=N",
        "--spec-hypothesis-profile",
        "--spec-alpha=ALPHA",
        "--spec-delta=DELTA",
        "--spec-power=POWER",
        "--spec-sequential",
    ):
        assert option in section, option


def test_a_negative_seed_is_refused(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--spec-seed=-3")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--spec-seed*"])


FIXTURES = """
import numpy as np

def test_one(spec_impl, spec_seed, spec_rng, spec_params):
    assert spec_impl.name == "reference"
    assert spec_seed == 5
    p = spec_params(temperature=0.5, top_k=3)
    assert type(p).__name__ == "SamplingParams" and p.top_k == 3
    print("ONE", spec_rng.random())

def test_two(spec_rng):
    print("TWO", spec_rng.random())

def test_rng_is_a_uniform_source(spec_impl, spec_rng, spec_params):
    rows = np.log(np.array([[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]]))
    q = np.array([[0.25, 0.5, 0.25]])
    emitted, n = spec_impl.verify_draft(rows, [1], q, spec_params(), [], spec_rng)
    assert len(emitted) == n + 1
"""


def _printed(result: pytest.RunResult, tag: str) -> str:
    """The text a test printed after ``tag`` (``-s`` output shares lines with progress)."""
    line = next(line for line in result.outlines if tag in line)
    return line[line.index(tag) :].rstrip(".sF ")


def test_fixtures_give_the_implementation_and_seeded_generators(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(FIXTURES)
    first = pytester.runpytest("--spec-seed=5", "-s")
    first.assert_outcomes(passed=3)
    again = pytester.runpytest("--spec-seed=5", "-s")
    other = pytester.runpytest(
        "--spec-seed=6", "-s", "-k", "test_two or test_one", "-p", "no:randomly"
    )
    assert _printed(first, "ONE") == _printed(again, "ONE")  # same seed, same stream
    assert _printed(first, "TWO") == _printed(again, "TWO")
    assert _printed(first, "ONE")[4:] != _printed(first, "TWO")[4:]  # tests don't share
    assert _printed(other, "TWO") != _printed(first, "TWO")  # the seed matters
    other.assert_outcomes(passed=1, failed=1)  # test_one asserts seed 5


VERIFY_ONLY = """
from spec_verify.reference import verify_draft, SamplingParams
"""


def test_the_capability_marker_skips_what_the_implementation_lacks(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(verify_only=VERIFY_ONLY)
    pytester.syspathinsert()
    pytester.makepyfile(
        test_marked="""
import pytest

@pytest.mark.spec_capability("generation")
def test_needs_generation(spec_impl):
    raise AssertionError("must not run")

@pytest.mark.spec_capability("verify_draft")
@pytest.mark.spec_property
@pytest.mark.spec_statistical
def test_needs_verify(spec_impl):
    assert "verify_draft" in spec_impl.capabilities
"""
    )
    result = pytester.runpytest(
        "--spec-impl=python:verify_only", "--strict-markers", "-rs", "test_marked.py"
    )
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*python:verify_only does not offer generation*"])


def test_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.spec_property:*",
            "@pytest.mark.spec_statistical:*",
            "@pytest.mark.spec_capability(*names):*",
        ]
    )


def test_a_failure_prints_the_reproduction_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_fails="""
def test_uses_the_plugin(spec_impl):
    assert False, "planted"

def test_does_not(request):
    assert False, "planted too"
"""
    )
    result = pytester.runpytest("--spec-seed=3", "--spec-delta=0.2", "--spec-sequential")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*spec-verify reproduction*",
            "pytest 'test_fails.py::test_uses_the_plugin' --spec-impl=reference --spec-seed=3 "
            "--spec-delta=0.2 --spec-sequential",
        ]
    )
    assert result.stdout.str().count("spec-verify reproduction") == 1


PROFILE_PROBE = """
from hypothesis import settings

def test_profile(spec_seed):  # a plugin fixture: the plugin is in use
    print("PROFILE", settings.get_current_profile_name(), settings().derandomize,
          settings().deadline)
"""


@pytest.mark.parametrize(
    ("ci", "args", "profile", "derandomized"),
    [
        (False, [], "dev", "False"),
        (True, [], "ci", "True"),
        (True, ["--spec-hypothesis-profile=dev"], "dev", "False"),
        (False, ["--spec-hypothesis-profile=ci"], "ci", "True"),
    ],
)
def test_hypothesis_profiles(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    ci: bool,
    args: list[str],
    profile: str,
    derandomized: str,
) -> None:
    if ci:
        monkeypatch.setenv("CI", "true")
    pytester.makepyfile(PROFILE_PROBE)
    result = pytester.runpytest("-s", *args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*hypothesis profile={profile}*"])
    assert _printed(result, "PROFILE") == f"PROFILE {profile} {derandomized} None"


def test_a_profile_chosen_elsewhere_is_left_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    settings.register_profile("mine", max_examples=3)
    pytester.makepyfile(PROFILE_PROBE)
    result = pytester.runpytest("-s", "--hypothesis-profile=mine")
    assert _printed(result, "PROFILE").startswith("PROFILE mine")


# --- the built-in properties and statistics, run through the plugin --------------------------

QUICK = ("-p", "no:cacheprovider", "--spec-hypothesis-profile=ci")


def test_builtin_properties_pass_on_the_reference(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--pyargs", "spec_verify.properties.test_properties", "--spec-impl=reference", *QUICK
    )
    result.assert_outcomes(passed=14)


def test_builtin_properties_fail_on_the_planted_bug_naming_the_property(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest(
        "--pyargs",
        "spec_verify.properties.test_properties",
        f"--spec-impl={ACCEPT_ALL}",
        "-k",
        "greedy_is_argmax_chain or (no_zero_probability and not tree) or ids_in_range",
        *QUICK,
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*property no_zero_probability_tokens violated:*",
            "*property greedy_is_argmax_chain violated: drafts*",
            "pytest --pyargs 'spec_verify.properties.test_properties::test_greedy_is_argmax_chain'"
            f" --spec-impl={ACCEPT_ALL} --spec-seed=0 --spec-hypothesis-profile=ci",
        ]
    )


def test_builtin_statistics_fail_on_the_planted_bug_naming_the_check(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest(
        "--pyargs",
        "spec_verify.properties.test_statistics",
        f"--spec-impl={ACCEPT_ALL}",
        "--spec-delta=0.3",
        "--spec-sequential",
        "-k",
        "first_token or acceptance_rate",
        *QUICK,
    )
    from spec_verify.tiers.statistical import check_names

    # accept-all is wrong for every first-token and acceptance-rate law, so each one fails
    selected = [n for n in check_names() if "first_token" in n or "acceptance_rate" in n]
    assert len(selected) >= 5
    result.assert_outcomes(failed=len(selected))
    result.stdout.fnmatch_lines(
        ["*acceptance_rate: not the target (p=*", "*test_statistical_check?acceptance_rate?*"]
    )


INERT = """
import sys

def test_untouched():
    from hypothesis import settings
    assert settings.get_current_profile_name() == "default"
    assert "numpy" not in sys.modules
    assert "spec_verify.adapters" not in sys.modules
"""


def test_the_plugin_is_inert_in_a_project_that_does_not_use_it(pytester: pytest.Pytester) -> None:
    """A plain pytest run elsewhere: no profile loaded, nothing heavy imported, no header."""
    pytester.makepyfile(INERT)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "spec-verify:" not in result.stdout.str()


def test_a_fixture_activates_the_plugin_after_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "from hypothesis import settings\n"
        "def test_seeded(spec_seed):\n"
        "    assert spec_seed == 0\n"
        "    assert settings.get_current_profile_name() == 'dev'\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["spec-verify: impl=reference, seed=0, hypothesis profile=dev"])
