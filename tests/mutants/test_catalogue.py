"""The catalogue as data: ids, the seed's mapping, changes that apply, the in-process loader."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import spec_verify.mutants as mutants_package
from spec_verify.adapters._implementations import PythonImplementation
from spec_verify.adapters._loader import load_implementation
from spec_verify.cli import main
from spec_verify.errors import UnknownImplementation
from spec_verify.mutants import (
    CATALOGUE,
    CHAIN_MUTANTS,
    PITFALLS,
    TREE_MUTANTS,
    Change,
    Mutant,
    MutantDoesNotApply,
    UnknownMutant,
    apply_mutant,
    mutant_by_id,
    unified_diff,
)
from spec_verify.mutants._load import PRIVATE_PREFIX, load_source_tree
from spec_verify.mutants._source import CANARY_MESSAGE, canary_sources, reference_sources

TESTS = Path(__file__).resolve().parents[1]
SOURCES = reference_sources()

# Seed section 5: the pitfall each seed-named mutant embodies.
SEED_PITFALL_BY_ID = {
    "s01": 1, "s07": 1, "s02": 2, "s09": 2, "s03": 3, "s04": 4, "s05": 5, "s06": 6, "s08": 7,
    "s10": 8, "s11": 8, "s12": 8, "s15": 9, "s16": 9, "s17": 10, "s18": 10, "s19": 10,
    "s22": 11, "s23": 11, "s24": 12,
}
OURS = {"s13", "s14", "s20", "s21"}


def test_ids_are_s01_to_s24_then_t01_to_t12_in_order():
    assert [m.id for m in CHAIN_MUTANTS] == [f"s{i:02d}" for i in range(1, 25)]
    assert [m.id for m in TREE_MUTANTS] == [f"t{i:02d}" for i in range(1, 13)]
    assert CATALOGUE == CHAIN_MUTANTS + TREE_MUTANTS


def test_tree_mutants_change_the_tree_module_and_name_its_tests():
    for mutant in TREE_MUTANTS:
        assert mutant.origin == "tree" and mutant.pitfall is None
        assert mutant.files == ("tree.py",)
        assert all(node.startswith("reference/test_tree.py::") for node in mutant.killed_by)


def test_the_seed_names_twenty_and_we_define_four():
    assert {m.id for m in CATALOGUE if m.origin == "ours"} == OURS
    for mutant in CHAIN_MUTANTS:
        if mutant.id in OURS:
            assert mutant.pitfall is None or mutant.pitfall in PITFALLS
        else:
            assert mutant.origin == "seed"
            assert mutant.pitfall == SEED_PITFALL_BY_ID[mutant.id], mutant.id


@pytest.mark.parametrize("mutant", CATALOGUE, ids=lambda m: m.id)
def test_every_entry_is_documented(mutant):
    assert mutant.title and mutant.symptom and mutant.changes and mutant.killed_by
    assert all(c.old != c.new for c in mutant.changes)


@pytest.mark.parametrize("mutant", CATALOGUE, ids=lambda m: m.id)
def test_every_change_applies_to_the_current_reference(mutant):
    mutated = apply_mutant(mutant, SOURCES)
    assert len(mutant.files) == 1, "reports place a mutant in one file"
    for name in mutant.files:
        assert mutated[name] != SOURCES[name]
        ast.parse(mutated[name], filename=name)  # still Python
    assert {n for n in SOURCES if mutated[n] != SOURCES[n]} == set(mutant.files)


@pytest.mark.parametrize("mutant", CATALOGUE, ids=lambda m: m.id)
def test_the_killing_tests_exist(mutant):
    for node in mutant.killed_by:
        file, _, name = node.partition("::")
        source = (TESTS / file).read_text(encoding="utf-8")
        assert re.search(rf"^def {re.escape(name)}\(", source, re.MULTILINE), node


def test_mutants_are_distinct():
    trees = {m.id: tuple(sorted(apply_mutant(m, SOURCES).items())) for m in CATALOGUE}
    assert len(set(trees.values())) == len(CATALOGUE)


def test_a_change_that_no_longer_applies_fails_loudly():
    gone = Mutant("s99", "t", 1, "s", (Change("verify.py", "no such line\n", "x\n"),), ("t",))
    with pytest.raises(MutantDoesNotApply, match=r"s99.*reference/verify.py.*is not found"):
        apply_mutant(gone, SOURCES)
    twice = Mutant("s98", "t", 1, "s", (Change("verify.py", "import", "x"),), ("t",))
    with pytest.raises(MutantDoesNotApply, match=r"is found \d+ times"):
        apply_mutant(twice, SOURCES)
    missing = Mutant("s97", "t", 1, "s", (Change("nowhere.py", "a", "b"),), ("t",))
    with pytest.raises(MutantDoesNotApply, match=r"nowhere\.py"):
        apply_mutant(missing, SOURCES)


def test_does_not_apply_pickles():
    import pickle

    error = MutantDoesNotApply("s01", "verify.py", "x", 0)
    again = pickle.loads(pickle.dumps(error))
    assert (again.mutant_id, again.file, again.count) == ("s01", "verify.py", 0)


def test_unknown_ids_are_refused():
    with pytest.raises(UnknownMutant, match="s25") as info:
        mutant_by_id("s25")
    assert isinstance(info.value, ValueError)
    with pytest.raises(UnknownImplementation, match="mutant:s25"):
        load_implementation("mutant:s25")


def test_the_diff_shows_the_change():
    diff = unified_diff(mutant_by_id("s03"), SOURCES)
    assert diff.startswith("--- a/reference/rejection.py\n+++ b/reference/rejection.py\n")
    assert "-    return sample_with(residual(p, q), u_resample), False" in diff
    assert "+    return sample_with(p, u_resample), False" in diff


def _isort_style(name):
    """ruff's RUF022 order: CONSTANTS, then CamelCase, then the rest, each alphabetical."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize("module", ["", ".catalogue", ".grader", ".reports", "._load"])
def test_all_is_sorted_and_importable(module):
    import importlib

    loaded = importlib.import_module("spec_verify.mutants" + module)
    assert list(loaded.__all__) == sorted(loaded.__all__, key=_isort_style)
    assert all(hasattr(loaded, name) for name in loaded.__all__)
    assert mutants_package.__all__


# --- in process: mutant:sNN for the gate ----------------------------------------------------

def test_mutant_loads_as_a_private_package_beside_the_reference():
    from spec_verify import reference

    # In process: the test looks inside the loaded module (check runs it in a worker).
    impl = load_implementation("mutant:s04", in_process=True)
    assert isinstance(impl, PythonImplementation)
    assert impl.name == "mutant:s04"
    assert impl.module.__name__ == PRIVATE_PREFIX + "s04"
    assert impl.module is not reference
    assert impl.module.verify.__name__ == PRIVATE_PREFIX + "s04.verify"
    assert sys.modules["spec_verify.reference"] is reference
    assert impl.capabilities >= {"verify_draft", "generation", "prompt_lookup"}
    # The bug is planted: the hand example of section 3 draws in the other order.
    rows = np.log([[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]])
    q = np.array([[0.25, 0.5, 0.25]])

    class Uniforms:
        def __init__(self):
            self.values = [0.7, 0.4, 0.1]

        def random(self):
            return self.values.pop(0)

    clean = reference.verify_draft(rows, [1], q, reference.SamplingParams(), [], Uniforms())
    mutated = impl.verify_draft(rows, [1], q, impl.params(), [], Uniforms())
    assert clean == ([0], 0)
    assert mutated != clean
    assert load_implementation("mutant:s04", in_process=True).module is impl.module  # loaded once


def test_mutant_source_is_inspectable():
    import inspect

    impl = load_implementation("mutant:s03", in_process=True)
    source = inspect.getsource(impl.module.rejection)
    assert "return sample_with(p, u_resample), False" in source
    assert impl.module.__file__ == "<mutant s03>/__init__.py"


def test_the_canary_raises_everywhere():
    canary = load_source_tree("_spec_verify_canary_test", canary_sources(SOURCES), "<canary>")
    with pytest.raises(RuntimeError, match=CANARY_MESSAGE):
        canary.SamplingParams()
    with pytest.raises(RuntimeError, match=CANARY_MESSAGE):
        canary.request_rng(0)
    with pytest.raises(RuntimeError, match=CANARY_MESSAGE):
        canary.sampling.argmax_lowest(np.zeros(3))
    assert issubclass(canary.InvalidDraft, ValueError)  # errors are left alone
    assert sorted(vars(canary.verify)) == sorted(
        n for n in vars(load_source_tree("_spec_verify_clean_test", SOURCES, "<clean>").verify))


# --- the command line -----------------------------------------------------------------------

def test_cli_lists_the_catalogue(capsys):
    assert main(["mutants", "list"]) == 0
    out = capsys.readouterr().out
    assert all(re.search(rf"^{m.id} ", out, re.MULTILINE) for m in CATALOGUE)
    assert main(["mutants", "list", "--json"]) == 0
    import json

    listed = json.loads(capsys.readouterr().out)
    assert [m["id"] for m in listed] == [m.id for m in CATALOGUE]


def test_cli_shows_one_mutant_with_its_diff(capsys):
    assert main(["mutants", "show", "s03"]) == 0
    out = capsys.readouterr().out
    assert "pitfall:   3. resampling from p instead of the residual" in out
    assert "killed by: tests/reference/test_spec_catalogue.py::" in out
    assert "+    return sample_with(p, u_resample), False" in out
    assert main(["mutants", "show", "s42"]) == 2
    assert "s42" in capsys.readouterr().err
