"""Every run's code must name its own files (the grader reuses pytest's rewritten bytecode)."""

import inspect

from spec_verify.reference import SamplingParams


def _helper():
    return 1


def test_code_objects_name_this_copy():
    assert SamplingParams().temperature == 1.0
    assert test_code_objects_name_this_copy.__code__.co_filename == __file__
    assert _helper.__code__.co_filename == __file__
    assert "def _helper" in inspect.getsource(_helper)
