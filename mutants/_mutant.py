"""What a planted bug is: exact text replacements in the reference, and what kills them.

The catalogue (``catalogue.py``) and the real-bug family (``real_bugs.py``) are both lists of
these; the types live here so that neither family imports the other to build its entries.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Change", "Mutant"]


@dataclass(frozen=True)
class Change:
    """Replace ``old`` (which must occur exactly once) by ``new`` in ``reference/<file>``."""

    file: str
    old: str
    new: str


@dataclass(frozen=True)
class Mutant:
    """One planted bug.

    Attributes:
        id: stable id, ``s01`` .. ``s24``.
        title: what the bug is, in a few words.
        pitfall: the number of the seed's pitfall (section 5) it embodies, or None for a
            bug outside the seed's table.
        symptom: what goes wrong for a user of the sampler.
        changes: the exact replacements that plant it.
        killed_by: node ids (relative to ``tests/``) of our tests that fail with it planted.
        origin: ``"seed"`` (named by the seed's pitfalls table) or ``"ours"``.
    """

    id: str
    title: str
    pitfall: int | None
    symptom: str
    changes: tuple[Change, ...]
    killed_by: tuple[str, ...]
    origin: str = "seed"

    @property
    def files(self) -> tuple[str, ...]:
        """The reference files the mutant touches, in order of first change."""
        return tuple(dict.fromkeys(c.file for c in self.changes))


def _lines(*lines: str) -> str:
    """Source lines joined with newlines, the last one too (indentation is kept exactly)."""
    return "\n".join(lines) + "\n"
