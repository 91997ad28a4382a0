"""The pytest plugin refuses a ``--spec-impl`` that names nothing at session start: one usage
error with the closest valid name, not one load error per test."""

from __future__ import annotations

import pytest

import spec_verify._specs

pytest_plugins = ["pytester"]

THREE_TESTS = """
def test_one(spec_impl):
    pass

def test_two(spec_impl):
    pass

def test_three(spec_impl):
    pass
"""


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("pyhton:x", "*--spec-impl 'pyhton:x': unknown scheme*did you mean 'python:x'*"),
        ("python:no_such_module_here", "*--spec-impl 'python:no_such_module_here': *"),
        ("ffi:/no/such/lib.so", "*--spec-impl 'ffi:/no/such/lib.so': *"),
        ("referense", "*--spec-impl 'referense'*did you mean*reference*"),
    ],
)
def test_a_spec_that_names_nothing_is_one_usage_error_at_start(
    pytester: pytest.Pytester, spec: str, said: str
) -> None:
    pytester.makepyfile(THREE_TESTS)
    result = pytester.runpytest(f"--spec-impl={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {said}"])
    errors = [line for line in result.stderr.lines if spec in line]
    assert len(errors) == 1, result.stderr.str()  # said once
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert "test_one" not in result.stdout.str()  # no test ran or was reported


def test_a_valid_spec_is_not_refused(pytester: pytest.Pytester) -> None:
    # tests that do not load it: the start-up check alone decides (loading is test_plugin's)
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest("--spec-impl=reference")
    result.assert_outcomes(passed=1)


def test_negative_control_without_the_start_up_check_each_test_errors(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the planted bug: the spec is not checked at start; then the session starts, and every
    # test that asks for the implementation reports the load failure on its own
    monkeypatch.setattr(spec_verify._specs, "check_spec", lambda spec, argument="impl": None)
    pytester.makepyfile(THREE_TESTS)
    result = pytester.runpytest("--spec-impl=pyhton:x")
    assert result.ret != pytest.ExitCode.USAGE_ERROR
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) + outcomes.get("failed", 0) == 3, outcomes


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("--spec-alpha=1.5", "*--spec-alpha 1.5: must be a false-alarm rate in (0, 1)*"),
        ("--spec-alpha=0", "*--spec-alpha 0: must be a false-alarm rate in (0, 1)*"),
        ("--spec-alpha=nan", "*--spec-alpha nan: must be*"),
        ("--spec-delta=0", "*--spec-delta 0: must be a total-variation distance in (0, 1]*"),
        ("--spec-delta=2", "*--spec-delta 2: must be a total-variation distance*"),
        ("--spec-power=1", "*--spec-power 1: must be a probability in (--spec-alpha 1e-06, 1)*"),
        ("--spec-power=1e-9", "*--spec-power 1e-09: must be a probability*"),
        ("--spec-alpha=x", "*--spec-alpha*invalid float value*"),
        ("--spec-seed=-1", "*--spec-seed*"),
        ("--spec-hypothesis-profile=prod", "*--spec-hypothesis-profile*invalid choice*"),
    ],
)
def test_every_option_out_of_its_range_is_one_usage_error_at_start(
    pytester: pytest.Pytester, option: str, said: str
) -> None:
    pytester.makepyfile(THREE_TESTS)
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stderr.str()
    result.stderr.fnmatch_lines([said])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert "test_one" not in result.stdout.str()


def test_statistical_options_in_range_are_not_refused(pytester: pytest.Pytester) -> None:
    # negative control of the range check: the edges it allows
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest("--spec-alpha=0.01", "--spec-delta=1", "--spec-power=0.5")
    result.assert_outcomes(passed=1)
