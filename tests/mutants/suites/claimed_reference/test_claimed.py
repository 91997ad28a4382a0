import spec_verify.reference as ref


def test_the_served_proxy_is_in_use():
    assert ref.SamplingParams().temperature == 1.0
    assert getattr(ref, "__file__", None) is None  # the proxy, not the installed files
