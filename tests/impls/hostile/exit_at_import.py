"""Calls sys.exit(0) at import."""

import sys

from ._wrong import *  # noqa: F403
from ._wrong import wrong_verify_draft as verify_draft  # noqa: F401

sys.exit(0)
