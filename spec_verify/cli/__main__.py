"""``python -m spec_verify.cli``: the same as the ``spec-verify`` command."""

import sys

from spec_verify.cli._main import main

sys.exit(main())
