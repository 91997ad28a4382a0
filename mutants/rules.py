"""Rule mutants: planted bugs of the reference rules other than the contract's token rule
(``reference/block.py``, ``reference/sampler_match.py``), each the minimal change that
reproduces a wrong port, with its citation where one exists.

They are a family of their own, never part of ``CATALOGUE`` (whose 36 entries the default
grading counts): ``spec-verify prove --rule block --impl mutant:b01`` selects one explicitly,
and each is WRONG there with a witness (``tests/mutants/test_rule_mutants.py``).
"""

from __future__ import annotations

import importlib

from spec_verify.adapters._implementations import PythonImplementation
from spec_verify.errors import UnknownImplementation

from ._load import PRIVATE_PREFIX, load_source_tree
from ._source import reference_sources
from .catalogue import Change, Mutant, apply_mutant

__all__ = [
    "MULTIDRAFT_MUTANTS",
    "MULTIDRAFT_OF_MUTANT",
    "RULE_MUTANTS",
    "RULE_OF_MUTANT",
    "load_rule_mutant",
    "rule_mutant_by_id",
]

_TESTS = "mutants/test_rule_mutants.py::test_each_rule_mutant_is_wrong_with_a_witness"

RULE_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "b01", "block: the token rule's residual max(p - q, 0) for the weighted one", None,
        "after a kept block the added token and the stop weight use the unadjusted residual: "
        "later positions lean (vllm-ascend #7807/#7808)",
        (Change("block.py",
                "    d = np.maximum(weights[i] * rnd.target(i) - rnd.draft(i), 0.0)\n",
                "    d = np.maximum(rnd.target(i) - rnd.draft(i), 0.0)\n"),),
        (_TESTS,), origin="rule",
    ),
    Mutant(
        "b02", "block: cumprod of probability ratios, clipped once at the end", None,
        "w_i = min(prod p/q, 1) instead of the running min: right for deterministic drafts "
        "(ratios <= 1), biased for sampled ones (vllm-ascend #7839)",
        (Change("block.py",
                "        weights.append(min(weights[-1] * float(rnd.target(i)[x]) / "
                "float(rnd.draft(i)[x]), 1.0))\n    return weights\n",
                "        weights.append(weights[-1] * float(rnd.target(i)[x]) / "
                "float(rnd.draft(i)[x]))\n    return [min(w, 1.0) for w in weights]\n"),),
        (_TESTS,), origin="rule",
    ),
    Mutant(
        "b03", "block: the first failed position ends the round (contiguous prefix)", None,
        "keeps the prefix before the first eta_i >= h_i instead of the longest passing block: "
        "the reading a review bot demanded on vllm-ascend #11985; biased",
        (Change("block.py",
                "            tau = i\n",
                "            tau = i\n        else:\n            break\n"),),
        (_TESTS,), origin="rule",
    ),
    Mutant(
        "m01", "sampler-match: no break after a mismatch", None,
        "the round goes on past a mismatch, emitting samples of rows conditioned on drafts "
        "it did not keep (the sabotage one project's suite barely noticed)",
        (Change("sampler_match.py",
                "        if token != x:\n            return [*kept, token], len(kept)\n",
                ""),),
        (_TESTS,), origin="rule",
    ),
    Mutant(
        "v01", "traversal: a deleted node's parent judged by its own sequence acceptance", None,
        "after the leaf is rejected each parent is kept with w_i instead of R_i / (R_i + 1 - "
        "w_i): the acceptance ignores what the deleted subtree already took; biased",
        (Change("traversal.py",
                "        if depth == 0 or owed <= 0.0 or draw_uniform(rng) < mass / owed:\n",
                "        if depth == 0 or owed <= 0.0 or draw_uniform(rng) < w[depth]:\n"),),
        (_TESTS,), origin="rule",
    ),
    Mutant(
        "v02", "traversal: the token after a deleted child from the target row", None,
        "the residual is not updated after a rejection: the added token is drawn from p_i "
        "instead of max(w_i p_i - q_i, 0), so the deleted child's mass is drawn twice; biased",
        (Change("traversal.py",
                "    if mass <= 0.0:  # rounding, or the 0/0 node: its own target row\n",
                "    if True:  # planted: the residual is never used\n"),),
        (_TESTS,), origin="rule",
    ),
)

# Which reference rule (module) each mutant plants its bug in.
RULE_OF_MUTANT = {"b01": "block", "b02": "block", "b03": "block", "m01": "sampler_match",
                  "v01": "traversal", "v02": "traversal"}

_MULTI_TESTS = "mutants/test_multidraft_mutants.py::test_each_multidraft_mutant_is_wrong"

# The multi-draft chain rules' planted bugs (``prove --rule kseq|rrs``; their implementations
# are ``verify_tree`` modules, so they are kept apart from the chain rules' above).
MULTIDRAFT_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "k01", "K-SEQ: rho fixed at 1 (the token rule's acceptance tried K times)", None,
        "each of the K drafts is kept with min(1, p/q): with K >= 2 the kept token's mass "
        "c min(q, p) exceeds p where q > p, the residual is clipped at 0; biased (planted: "
        "the rho of SpecTr's K-SEQ left out)",
        (Change("kseq_chains.py",
                "    rho = kseq_rho(p, q, len(tokens))\n",
                "    rho = 1.0  # planted: K-SEQ's rho left out\n"),),
        (_MULTI_TESTS,), origin="rule",
    ),
    Mutant(
        "w01", "RRS: the draft not renormalised after a rejection (without replacement)", None,
        "heads drawn without replacement verified as if i.i.d.: the residual after a "
        "rejection is taken against q, not q without the rejected token; biased (planted: "
        "the with-replacement rule on distinct drafts)",
        (Change("rrs.py",
                "            if renormalise:\n                q_j = _without(q_j, x)\n",
                ""),),
        (_MULTI_TESTS,), origin="rule",
    ),
    Mutant(
        "w02", "RRS: survivors sharing a node each try its token (without replacement)", None,
        "below a branching node the chains that share a prefix try their shared token once "
        "per chain: after its rejection the renormalised draft gives it 0, so the repeat is "
        "kept whenever the residual has mass there; biased (planted: the chain walk read "
        "token by token, the draft tree's nodes not merged; WRONG on multi/4)",
        (Change("_multidraft.py",
                "        if distinct:  # survivors sharing a prefix share its node: its "
                "children, once each\n            tokens = list(dict.fromkeys(tokens))\n",
                ""),),
        (_MULTI_TESTS,), origin="rule",
    ),
)

# Which reference module each multi-draft mutant plants its bug in, and the rule it breaks.
MULTIDRAFT_OF_MUTANT = {"k01": ("kseq_chains", "kseq"), "w01": ("rrs", "rrs"),
                        "w02": ("rrs", "rrs")}

_BY_ID = {m.id: m for m in (*RULE_MUTANTS, *MULTIDRAFT_MUTANTS)}


def rule_mutant_by_id(mutant_id: str) -> Mutant | None:
    """The rule mutant ``mutant_id`` (``b01``), or None for any other id."""
    return _BY_ID.get(mutant_id)


def load_rule_mutant(spec: str) -> PythonImplementation:
    """``mutant:b01`` (or ``mutant:k01``): the rule's module of the reference, mutant planted.

    In process: the mutant is our own reference's source, not an implementation under test.

    Raises:
        UnknownImplementation: ``spec`` names no rule mutant.
    """
    mutant = rule_mutant_by_id(spec.partition(":")[2])
    if not spec.startswith("mutant:") or mutant is None:
        raise UnknownImplementation("impl", spec, f"is not a rule mutant ({', '.join(_BY_ID)})")
    sources = apply_mutant(mutant, reference_sources())
    package = PRIVATE_PREFIX + "rule_" + mutant.id
    load_source_tree(package, sources, f"<mutant {mutant.id}>")
    name = (RULE_OF_MUTANT[mutant.id] if mutant.id in RULE_OF_MUTANT
            else MULTIDRAFT_OF_MUTANT[mutant.id][0])
    module = importlib.import_module(f"{package}.{name}")
    return PythonImplementation(spec, module)
