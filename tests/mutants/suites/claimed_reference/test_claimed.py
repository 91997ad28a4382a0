import os

import spec_verify.reference as ref


def test_the_run_copy_is_in_use():
    assert ref.SamplingParams().temperature == 1.0
    assert os.sep + os.path.join("lib", "reference", "__init__.py") in ref.__file__
