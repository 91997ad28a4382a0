"""Outside implementations for the exact engine's tests, each loadable as ``python:tests.impls.X``.

Each module exposes the contract's ``verify_draft`` (and re-exports the reference's
``SamplingParams`` so the adapter can build parameters). ``_scaffold`` holds the loop they share.
"""
