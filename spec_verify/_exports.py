"""``check_exports``: a package's ``__all__`` is unique and names what it defines.

ruff (RUF022) keeps every ``__all__`` sorted.

Called at the end of every ``__init__`` (as Hypothesis does), so a re-export that no longer
resolves fails at import instead of at the user's first ``from spec_verify.stats import ...``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["check_exports"]


def check_exports(module: str, names: Sequence[str], namespace: Mapping[str, Any]) -> None:
    """Raise ``ImportError`` unless ``names`` is unique and all bound in ``namespace``."""
    missing = [n for n in names if n not in namespace]
    if missing:
        raise ImportError(f"{module}.__all__ names {missing}, which {module} does not define")
    repeated = sorted({n for n in names if list(names).count(n) > 1})
    if repeated:
        raise ImportError(f"{module}.__all__ lists {repeated} more than once")
