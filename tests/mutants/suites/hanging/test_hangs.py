import time

from spec_verify.reference import SamplingParams


def test_hangs():
    SamplingParams()
    time.sleep(3600)
