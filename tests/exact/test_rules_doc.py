"""docs/rules.md's efficiency table is what the code computes, and its commands exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spec_verify.cli import build_parser
from spec_verify.exact._multidraft import multidraft_markdown
from spec_verify.exact._rules import efficiency_markdown
from spec_verify.mutants.rules import MULTIDRAFT_MUTANTS, RULE_MUTANTS

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def test_the_efficiency_table_is_the_codes() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = re.search(r"<!-- efficiency table: begin -->\n(.*?)\n<!-- efficiency table: end -->",
                      text, re.S)
    assert table is not None
    assert table.group(1) == efficiency_markdown()


def test_every_rule_mutant_is_in_the_doc_and_every_documented_command_parses() -> None:
    text = DOC.read_text(encoding="utf-8")
    for mutant in (*RULE_MUTANTS, *MULTIDRAFT_MUTANTS):
        assert f"| `{mutant.id}` |" in text
    parser = build_parser()
    commands = re.findall(r"^spec-verify (prove [^#\n]*?)\s*(?:#.*)?$", text, re.M)
    assert len(commands) == 7
    for command in commands:
        parser.parse_args(command.split())


@pytest.mark.slow  # exact rounds of four cases and scipy's LP: ~5 s on 2 cores
def test_the_multidraft_table_is_the_codes() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = re.search(r"<!-- multi-draft table: begin -->\n(.*?)\n<!-- multi-draft table: end -->",
                      text, re.S)
    assert table is not None
    assert table.group(1) == multidraft_markdown()
