"""Hostile implementations: each is a *wrong* sampler with one way of attacking the harness
(forging its verdict, ending or hanging the run, leaving processes behind, breaking the wire).
``tests/adapters/test_hostile.py`` runs each in a worker and checks that the verdict is not
PASSED, the run ends in time, and nothing is left running. ``probe.py`` attacks the harness's
files and processes from inside the worker (``tests/adapters/test_sandbox.py``)."""
