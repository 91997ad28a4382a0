"""``python -m spec_verify``: the same as the ``spec-verify`` command."""

import sys

from spec_verify.cli._main import main

if __name__ == "__main__":
    sys.exit(main())
