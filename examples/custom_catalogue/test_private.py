"""The instructors' kill tests of catalogue.json: each passes on the clean reference and
fails with its entry's mutant planted (``spec-verify grade --catalogue`` checks both).

Like a graded suite, they reach the reference through ``spec_verify.reference``'s public
names only: every graded run serves the reference from the sampler's process."""

import numpy as np

from spec_verify.reference import SamplingParams, sampling_distribution, speculative_step


def test_min_p_keeps_a_token_on_the_threshold():
    # both tokens have exactly min_p (1.0) times the largest probability: both stay
    dist = sampling_distribution([0.0, 0.0], SamplingParams(temperature=1.0, min_p=1.0))
    assert np.allclose(dist, [0.5, 0.5])


def test_a_token_the_target_forbids_is_never_accepted():
    # p(1) = 0: the draft's token 1 is rejected even at u_accept = 0, the residual gives 0
    p, q = np.array([1.0, 0.0]), np.array([0.5, 0.5])
    assert speculative_step(p, q, 1, 0.0, 0.5) == (0, False)
