import pytest

from spec_verify.reference import SamplingParams


@pytest.fixture
def greedy():
    return SamplingParams(temperature=0)
