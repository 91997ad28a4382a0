import ctypes

from spec_verify.reference import SamplingParams


def test_crashes_the_interpreter():
    SamplingParams()
    ctypes.string_at(0)  # reads address 0: SIGSEGV
