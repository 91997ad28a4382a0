"""No tests here: only a helper module."""

ANSWER = 42
