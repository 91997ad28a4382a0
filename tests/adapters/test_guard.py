"""guarded_call: an implementation's raise, exit or hang is its failure; guarded calls nest."""

from __future__ import annotations

import contextlib
import sys
import time

import pytest

from spec_verify.adapters._guard import guarded_call
from spec_verify.errors import ImplementationError


def _spin(seconds: float) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return "done"


def test_a_value_is_returned_and_a_contract_error_passes_through() -> None:
    assert guarded_call("impl", "f", 1.0, lambda a: a + 1, 1) == 2
    with pytest.raises(ValueError, match="bad"):
        guarded_call("impl", "f", 1.0, lambda: (_ for _ in ()).throw(ValueError("bad")))


def test_another_exception_is_the_implementations_failure() -> None:
    with pytest.raises(ImplementationError, match="raised KeyError"):
        guarded_call("impl", "f", 1.0, lambda: {}["x"])


def test_sys_exit_is_the_implementations_failure_not_the_end_of_the_run() -> None:
    with pytest.raises(ImplementationError, match=r"called sys.exit\(0\)"):
        guarded_call("impl", "f", 1.0, sys.exit, 0)


def test_a_hang_is_reported_after_the_limit() -> None:
    start = time.monotonic()
    with pytest.raises(ImplementationError, match=r"f did not return within 0.2 s"):
        guarded_call("impl", "f", 0.2, _spin, 30)
    assert time.monotonic() - start < 5


def test_an_inner_hang_under_its_own_smaller_limit_is_the_inner_calls() -> None:
    def outer() -> str:
        return guarded_call("impl", "inner", 0.2, _spin, 30)

    with pytest.raises(ImplementationError, match=r"inner did not return within 0\.2 s"):
        guarded_call("impl", "outer", 10.0, outer)


def test_when_the_outer_limit_runs_out_first_the_outer_call_reports_it() -> None:
    def outer() -> str:
        return guarded_call("impl", "inner", 30.0, _spin, 30)

    start = time.monotonic()
    with pytest.raises(ImplementationError, match=r"outer did not return within 0\.3 s"):
        guarded_call("impl", "outer", 0.3, outer)
    assert time.monotonic() - start < 5


def test_the_outer_timer_runs_on_after_an_inner_call_returns() -> None:
    def outer() -> str:
        guarded_call("impl", "inner", 5.0, _spin, 0.05)
        return _spin(30)  # the outer call hangs after the inner one returned

    start = time.monotonic()
    with pytest.raises(ImplementationError, match=r"outer did not return within 0\.4 s"):
        guarded_call("impl", "outer", 0.4, outer)
    assert time.monotonic() - start < 5


def test_an_implementation_that_swallows_every_timeout_ends_the_run_loudly(tmp_path) -> None:
    import subprocess

    script = tmp_path / "swallow.py"
    script.write_text(
        "from spec_verify.adapters._guard import guarded_call\n"
        "def stubborn():\n"
        "    while True:\n"
        "        try:\n"
        "            while True:\n"
        "                pass\n"
        "        except:  # noqa: E722\n"
        "            continue\n"
        "guarded_call('python:stubborn', 'verify_draft', 0.2, stubborn)\n"
    )
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3
    assert "verify_draft did not return within 0.2 s and caught every timeout" in done.stderr
    assert time.monotonic() - start < 30


def test_an_implementation_that_swallows_one_timeout_is_stopped_by_the_next() -> None:
    def retries_once() -> str:
        with contextlib.suppress(BaseException):  # the realistic bug: retry after any error
            _spin(30)
        return _spin(30)

    with pytest.raises(ImplementationError, match=r"did not return within 0\.2 s"):
        guarded_call("impl", "f", 0.2, retries_once)
