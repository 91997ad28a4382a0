import spec_verify.reference


def test_imports():
    assert spec_verify.reference.__name__ == "spec_verify.reference"


def test_arithmetic():
    assert 1 + 1 == 2
