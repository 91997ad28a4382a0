"""The mutant catalogue: s01 to s24, each a small planted bug in the reference, declared as data.

A mutant is one or more exact text replacements (``Change``) against the reference's source
files. Each entry names the pitfall of seed section 5 it embodies (s13, s14, s20 and s21 are the
project's own: other real bugs of speculative samplers) and the test of ours that kills it: the
kill matrix (``tests/mutants/test_kill_matrix.py``) shows that test fails with the bug planted.

A change whose ``old`` text is not found exactly once in its file no longer applies to the
reference; ``apply_mutant`` then raises ``MutantDoesNotApply`` naming the file and the snippet,
so a refactoring of the reference cannot silently turn a mutant into the clean sampler.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from spec_verify.errors import InvalidArgument, SpecVerifyError
from spec_verify.mutants._mutant import Change, Mutant, _lines

__all__ = [
    "CATALOGUE",
    "CHAIN_MUTANTS",
    "PITFALLS",
    "TREE_MUTANTS",
    "Change",
    "Mutant",
    "MutantDoesNotApply",
    "UnknownMutant",
    "apply_mutant",
    "mutant_by_id",
    "unified_diff",
]

# Seed section 5, the pitfalls table: number -> the pitfall as the seed words it.
PITFALLS: Mapping[int, str] = {
    1: "treating the draft as if it sampled from the target (q = p), or ignoring draft_probs",
    2: "a deterministic draft treated as uniform, or its one-hot at the wrong index",
    3: "resampling from p instead of the residual after a rejection",
    4: "drawing the uniforms in another order",
    5: "greedy: keeping the draft on a mismatch",
    6: "the bonus from the wrong row",
    7: "penalties that do not see the drafts kept this round",
    8: "prompt lookup: oldest occurrence, shortest n-gram first, or ignoring k",
    9: "a model draft that does not truncate or re-feed its own cache",
    10: "no rollback, or the extra token counted as cached, or never fed",
    11: "EOS kept in ids, or a stop string not cut",
    12: "a round allowed k + 1 tokens when fewer remain",
}

# Where the killing tests live, relative to the project's tests/ folder.
_CATALOGUE_TESTS = "reference/test_spec_catalogue.py"
_TREE_TESTS = "reference/test_tree.py"


class MutantDoesNotApply(SpecVerifyError):
    """A declared change no longer matches the reference source exactly once."""

    def __init__(self, mutant_id: str, file: str, old: str, count: int) -> None:
        self.mutant_id = mutant_id
        self.file = file
        self.old = old
        self.count = count
        where = "is not found" if count == 0 else f"is found {count} times"
        super().__init__(
            f"mutant {mutant_id}: the text to replace in reference/{file} {where}; it must "
            f"match exactly once. Update the catalogue entry to the current source. "
            f"Text: {old!r}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.mutant_id, self.file, self.old, self.count))


class UnknownMutant(InvalidArgument):
    """A mutant id that is not in the catalogue."""


def _test(name: str) -> str:
    return f"{_CATALOGUE_TESTS}::{name}"


def _tree_test(name: str) -> str:
    return f"{_TREE_TESTS}::{name}"


CHAIN_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "s01", "the draft treated as if sampled from the target (q = p)", 1,
        "every draft with p(x) > 0 is kept: the output follows the draft, not the target",
        (Change("verify.py",
                "        q_i = q[i] if q is not None else _one_hot(x, V)\n",
                "        q_i = p_i\n"),),
        (_test("test_one_token_output_is_the_target_exactly"),),
    ),
    Mutant(
        "s02", "a deterministic draft treated as a uniform draft", 2,
        "prompt-lookup and greedy n-gram drafts are accepted with probability V p(x): biased",
        (Change("verify.py",
                _lines("    q = np.zeros(V)", "    q[x] = 1.0", "    return q"),
                _lines("    return np.full(V, 1.0 / V)")),),
        (_test("test_deterministic_draft_is_exact"),),
    ),
    Mutant(
        "s03", "resampling from p instead of the residual after a rejection", 3,
        "tokens the draft favours are over-represented",
        (Change("rejection.py",
                "    return sample_with(residual(p, q), u_resample), False\n",
                "    return sample_with(p, u_resample), False\n"),),
        (_test("test_one_token_output_is_the_target_exactly"),),
    ),
    Mutant(
        "s04", "u_resample drawn before u_accept", 4,
        "the same seed gives other tokens than the Rust port: the streams diverge",
        (Change("verify.py",
                _lines("        u_accept = draw_uniform(rng)",
                       "        u_resample = draw_uniform(rng)"),
                _lines("        u_resample = draw_uniform(rng)",
                       "        u_accept = draw_uniform(rng)")),),
        (_test("test_hand_example"),),
    ),
    Mutant(
        "s05", "greedy verification keeps the draft token on a mismatch", 5,
        "greedy output changes with the draft",
        (Change("verify.py",
                _lines("        if x != best:", "            return [*kept, best], len(kept)"),
                _lines("        if x != best:", "            return [*kept, x], len(kept)")),),
        (_test("test_hand_example_greedy"),),
    ),
    Mutant(
        "s06", "the greedy bonus token read from the last draft's row", 6,
        "the token after a fully kept draft is wrong",
        (Change("verify.py",
                "    best = _greedy_token(rows[len(ids)], p, history + kept, prompt)\n",
                "    best = _greedy_token(rows[len(ids) - 1], p, history + kept, prompt)\n"),),
        (_test("test_hand_example_greedy"),),
    ),
    Mutant(
        "s07", "draft_probs validated but ignored (one-hot q used instead)", 1,
        "acceptance, not the law: a sampled draft verified as if deterministic accepts x "
        "with p(x) and resamples from p without x, so the output is still the target's "
        "(lossless) but each position accepts sum p q, not sum min(p, q)",
        (Change("verify.py",
                "        q_i = q[i] if q is not None else _one_hot(x, V)\n",
                "        q_i = _one_hot(x, V)\n"),),
        (_test("test_one_token_output_is_the_target_exactly"),),
    ),
    Mutant(
        "s08", "penalties do not see the drafts kept this round", 7,
        "with penalties, speculative output differs from plain generation",
        (Change("verify.py",
                "        p_i = _distribution(rows[i], p, history + kept, prompt)\n",
                "        p_i = _distribution(rows[i], p, history, prompt)\n"),
         Change("verify.py",
                "        best = _greedy_token(rows[i], p, history + kept, prompt)\n",
                "        best = _greedy_token(rows[i], p, history, prompt)\n")),
        (_test("test_penalties_see_the_accepted_drafts"),),
    ),
    Mutant(
        "s09", "a deterministic draft's one-hot at the next index", 2,
        "q(x) = 0 for the drafted x: every draft with p(x) > 0 is kept; biased output",
        (Change("verify.py", "    q[x] = 1.0\n", "    q[(x + 1) % V] = 1.0\n"),),
        (_test("test_deterministic_draft_is_exact"),),
    ),
    Mutant(
        "s10", "prompt lookup takes the oldest occurrence", 8,
        "different drafts than the Rust port's lookup",
        (Change("drafts.py",
                "            for start in range(L - n - 1, -1, -1):\n",
                "            for start in range(L - n):\n"),),
        (_test("test_prompt_lookup_hand_example"),),
    ),
    Mutant(
        "s11", "prompt lookup tries the shortest n-gram first", 8,
        "different drafts than the Rust port's lookup",
        (Change("drafts.py",
                "        for n in range(min(self.max_ngram, L - 1), self.min_ngram - 1, -1):\n",
                "        for n in range(self.min_ngram, min(self.max_ngram, L - 1) + 1):\n"),),
        (_test("test_prompt_lookup_hand_example"),),
    ),
    Mutant(
        "s12", "prompt lookup ignores k", 8,
        "drafts longer than asked",
        (Change("drafts.py",
                "                    return tokens[start + n : start + n + k], None\n",
                "                    return tokens[start + n :], None\n"),),
        (_test("test_prompt_lookup_hand_example"),),
    ),
    Mutant(
        "s13", "the residual normalised by a softmax instead of by its sum", 3,
        "after a rejection every token gets some probability, even those with p(v) <= q(v)",
        (Change("rejection.py",
                "        return d / z\n",
                "        return np.exp(d) / float(np.cumsum(np.exp(d))[-1])\n"),),
        (_test("test_one_token_output_is_the_target_exactly"),),
        origin="ours",
    ),
    Mutant(
        "s14", "a model draft truncates its cache one position too far", 9,
        "the re-fed context lands one position early: proposals drift from the draft model",
        (Change("drafts.py",
                _lines("        self.cache.truncate(shared)",
                       "        logits = self.model.forward(ctx[shared:], self.cache, shared)"),
                _lines("        self.cache.truncate(max(shared - 1, 0))",
                       "        logits = self.model.forward(ctx[shared:], self.cache, "
                       "self.cache.length)")),),
        (_test("test_model_draft_syncs_its_cache"),),
        origin="ours",
    ),
    Mutant(
        "s15", "a model draft that does not truncate its cache", 9,
        "rejected drafts stay in the draft's cache: stale keys (the bundled models refuse it)",
        (Change("drafts.py", "        self.cache.truncate(shared)\n", ""),),
        (_test("test_model_draft_syncs_its_cache"),),
    ),
    Mutant(
        "s16", "a model draft that does not re-feed the new context", 9,
        "only the last token is fed: proposals drift from the draft model's greedy output",
        (Change("drafts.py",
                "        logits = self.model.forward(ctx[shared:], self.cache, shared)\n",
                "        logits = self.model.forward(ctx[-1:], self.cache, shared)\n"),),
        (_test("test_model_draft_syncs_its_cache"),),
    ),
    Mutant(
        "s17", "no rollback of the target's cache", 10,
        "the next pass attends to rejected drafts (the bundled models refuse it)",
        (Change("generate.py", "        cache.truncate(committed)\n", ""),),
        (_test("test_rejected_drafts_are_rolled_back"),),
    ),
    Mutant(
        "s18", "the round's extra token counted as cached", 10,
        "the kept length is one too long: a rejected draft stays in the cache",
        (Change("generate.py",
                "        committed += len(pending) + n\n",
                "        committed += len(pending) + n + 1\n"),),
        (_test("test_rejected_drafts_are_rolled_back"),),
    ),
    Mutant(
        "s19", "the round's extra token never fed to the target", 10,
        "the next pass misses the correction token: output diverges",
        (Change("generate.py", "        pending = [emitted[-1]]\n", "        pending = []\n"),),
        (_test("test_rejected_drafts_are_rolled_back"),),
    ),
    Mutant(
        "s20", "the rejected position counted as accepted", 10,
        "n_accepted is one too high after a rejection: stats lie and the rollback keeps a "
        "rejected draft",
        (Change("verify.py",
                "            return [*kept, token], len(kept)\n",
                "            return [*kept, token], len(kept) + 1\n"),),
        (_test("test_hand_example"),),
        origin="ours",
    ),
    Mutant(
        "s21", "the n-gram draft queries its model with one token of context", None,
        "an order-n model read as a bigram: drafts (and their q) are not the model's",
        (Change("drafts.py",
                "            dist = _softmax(self.lm.logprobs(context))\n",
                "            dist = _softmax(self.lm.logprobs(context[-1:]))\n"),),
        (_test("test_ngram_draft_follows_the_model"),),
        origin="ours",
    ),
    Mutant(
        "s22", "EOS kept in ids", 11,
        "the API returns the EOS token",
        (Change("generate.py",
                _lines("            if token in self.eos:",
                       '                self.finish_reason = "eos"',
                       "                return True",
                       "            self.ids.append(token)",
                       "            self.logprobs.append(logprob)"),
                _lines("            self.ids.append(token)",
                       "            self.logprobs.append(logprob)",
                       "            if token in self.eos:",
                       '                self.finish_reason = "eos"',
                       "                return True")),),
        (_test("test_eos_stop_and_budget"),),
    ),
    Mutant(
        "s23", "a stop string found but not cut", 11,
        "the API returns text past the stop",
        (Change("generate.py",
                _lines("        while self.ids and len(self.tok.decode(self.ids)) > cut:",
                       "            self.ids.pop()",
                       "            self.logprobs.pop()"),
                ""),
         Change("generate.py",
                "            text = text[: min(hits)] if hits else text\n",
                "")),
        (_test("test_eos_stop_and_budget"),),
    ),
    Mutant(
        "s24", "a round allowed k + 1 tokens when fewer remain", 12,
        "more than max_tokens ids",
        (Change("generate.py",
                "        k_round = max(0, min(k, out.remaining - 1))\n",
                "        k_round = max(0, min(k, out.remaining))\n"),
         Change("generate.py",
                _lines("            if self.remaining == 0:",
                       '                self.finish_reason = "length"',
                       "                return True",
                       "        return False"),
                _lines("        if self.remaining <= 0:",
                       '            self.finish_reason = "length"',
                       "            return True",
                       "        return False"))),
        (_test("test_eos_stop_and_budget"),),
    ),
)

# Tree verification (CONTRACT.md section 6, issue 16): the bugs engines ship in tree and
# multi-draft verification. They change reference/tree.py; their killers compare the float
# path, cell by cell, with the exact path of tree_exact.py (which shares no code with it).
_KEEP_LAST_REJECTED = _lines(
    "            if j == len(kids) - 1 and shape.children[child]:",
    "                kept.append(x)",
    "                nodes.append(child)",
    "                node = child",
    "                moved = True",
    "                break",
    "            if j == len(kids) - 1:",
    "                return [*kept, sample_with(r, u_resample)], nodes",
)
_LAST_CHILD = _lines(
    "            if j == len(kids) - 1:",
    "                return [*kept, sample_with(r, u_resample)], nodes",
)
_PER_TREE = _tree_test("test_tree_float_path_is_exact_per_fixed_tree")
_TWO = _tree_test("test_tree_hand_example_two_rejections")

TREE_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "t01", "tree: the residual not updated after a sibling is rejected", None,
        "a later sibling is tested against the stale target and the final residual forgets the "
        "earlier rejections: tokens the draft favoured are over-represented",
        (Change("tree.py",
                _lines("            r = residual(r, q_j)", *_LAST_CHILD.splitlines()),
                _lines("            if j == len(kids) - 1:",
                       "                return [*kept, sample_with(residual(r, q_j), "
                       "u_resample)], nodes")),),
        (_PER_TREE,), origin="tree",
    ),
    Mutant(
        "t02", "tree: the draft not renormalised after a draw without replacement", None,
        "later siblings are accepted with min(1, r/q) for the wrong q: biased output",
        (Change("tree.py", "                q = _without(q, x)\n", "                pass\n"),),
        (_tree_test("test_tree_hand_example"), _TWO), origin="tree",
    ),
    Mutant(
        "t03", "tree: the bonus drawn from the parent's row", None,
        "after a fully kept path the extra token follows the wrong distribution",
        (Change("tree.py",
                "            return [*kept, sample(r, rng)], nodes\n",
                "            return [*kept, sample(dist(shape.parents[node] if node >= 0 else -1, "
                "kept[:-1]), rng)], nodes\n"),),
        (_tree_test("test_tree_bonus_comes_from_the_kept_leaf"),), origin="tree",
    ),
    Mutant(
        "t04", "tree: a child's subtree verified after the child was rejected", None,
        "the last rejected child is kept when it has children: a token the target rejected "
        "is emitted",
        (Change("tree.py", _LAST_CHILD, _KEEP_LAST_REJECTED),),
        (_PER_TREE,), origin="tree",
    ),
    Mutant(
        "t05", "tree: sampled siblings verified as deterministic (draft_probs ignored)", None,
        "each child is accepted with p(x) instead of p(x)/q(x): biased towards the draft",
        (Change("tree.py",
                "            q_j = q if q is not None else _one_hot(x, V)\n",
                "            q_j = _one_hot(x, V)\n"),),
        (_PER_TREE,), origin="tree",
    ),
    Mutant(
        "t06", "tree: each sibling tested against the target, not the residual", None,
        "after a rejection the next sibling is kept too often: the draft's tokens are "
        "over-represented",
        (Change("tree.py",
                "            if u_accept * q_j[x] < r[x]:\n",
                "            if u_accept * q_j[x] < dist(node, kept)[x]:\n"),),
        (_PER_TREE,), origin="tree",
    ),
    Mutant(
        "t07", "tree: the replacement drawn from the target after every child is rejected", None,
        "tokens the draft already offered come out again: the output is biased towards them",
        (Change("tree.py",
                "                return [*kept, sample_with(r, u_resample)], nodes\n",
                "                return [*kept, sample_with(dist(node, kept), u_resample)], "
                "nodes\n"),),
        (_tree_test("test_tree_hand_example"), _PER_TREE), origin="tree",
    ),
    Mutant(
        "t08", "tree: u_resample drawn only when every child is rejected", None,
        "exact in law, but the same seed gives other tokens than the reference: a port's "
        "streams diverge (draw order)",
        (Change("tree.py",
                _lines("            u_resample = rng.random()",
                       "            if u_accept * q_j[x] < r[x]:"),
                _lines("            if u_accept * q_j[x] < r[x]:")),
         Change("tree.py",
                "                return [*kept, sample_with(r, u_resample)], nodes\n",
                "                return [*kept, sample_with(r, rng.random())], nodes\n")),
        (_tree_test("test_tree_hand_example"),), origin="tree",
    ),
    Mutant(
        "t09", "greedy tree: the bonus taken from the last kept node's parent", None,
        "greedy tree output differs from plain greedy decoding after a kept path",
        (Change("tree.py",
                "        last = dist(best[-1] if best else -1, path)\n",
                "        last = dist(shape.parents[best[-1]] if best else -1, path)\n"),),
        (_tree_test("test_greedy_tree_follows_the_argmax_chain"),), origin="tree",
    ),
    Mutant(
        "t10", "tree: penalties do not see the kept path", None,
        "with penalties, tree output differs from plain generation",
        (Change("tree.py",
                "        return sampling_distribution(rows[node + 1], p, history + path, prompt)\n",
                "        return sampling_distribution(rows[node + 1], p, history, prompt)\n"),),
        (_tree_test("test_greedy_tree_penalties_see_the_kept_path"),), origin="tree",
    ),
    Mutant(
        "t11", "greedy tree: the first agreeing child instead of the longest path", None,
        "lossless, but fewer tokens per round than the contract's rule and other tokens than "
        "a port's on the same tree",
        (Change("tree.py",
                "                if len(below) > len(found):\n",
                "                if not found:\n"),),
        (_tree_test("test_greedy_tree_takes_the_longest_agreeing_path"),), origin="tree",
    ),
    Mutant(
        "t12", "tree: the residual taken against the original draft without replacement", None,
        "after a rejection the residual subtracts the draft the child was not drawn from: biased",
        (Change("tree.py",
                "            r = residual(r, q_j)\n",
                "            r = residual(r, q_rows[node + 1] if q is not None else q_j)\n"),),
        (_TWO,), origin="tree",
    ),
)

CATALOGUE = CHAIN_MUTANTS + TREE_MUTANTS

_MUTANT_BY_ID = {m.id: m for m in CATALOGUE}


def mutant_by_id(mutant_id: str) -> Mutant:
    """The catalogue entry ``mutant_id`` (``s03``), or a real-bug entry (``r02``,
    ``mutants/real_bugs.py``).

    Raises:
        UnknownMutant: no such id; the message lists the valid ones.
    """
    try:
        return _MUTANT_BY_ID[mutant_id]
    except (KeyError, TypeError):
        pass
    from .real_bugs import REAL_BUGS  # the family of real bugs, selected by id only

    for mutant in REAL_BUGS:
        if mutant.id == mutant_id:
            return mutant
    raise UnknownMutant(
        "mutant", mutant_id,
        f"is not in the catalogue ({CATALOGUE[0].id}..{CATALOGUE[-1].id}) or the real-bug "
        f"family ({REAL_BUGS[0].id}..{REAL_BUGS[-1].id})",
        "see `spec-verify mutants list`",
    )


def apply_mutant(mutant: Mutant, sources: Mapping[str, str]) -> dict[str, str]:
    """The reference source tree with ``mutant``'s changes applied (``sources`` is unchanged).

    ``sources`` maps file names relative to the reference package (``verify.py``) to text.

    Raises:
        MutantDoesNotApply: a change's ``old`` text is not found exactly once in its file (or
            the file is missing).
    """
    out = dict(sources)
    for change in mutant.changes:
        text = out.get(change.file)
        count = 0 if text is None else text.count(change.old)
        if text is None or count != 1:
            raise MutantDoesNotApply(mutant.id, change.file, change.old, count)
        out[change.file] = text.replace(change.old, change.new, 1)
    return out


def unified_diff(mutant: Mutant, sources: Mapping[str, str]) -> str:
    """The mutant as a unified diff against the reference (``a/reference/...``, ``b/...``)."""
    mutated = apply_mutant(mutant, sources)
    parts: list[str] = []
    for file in mutant.files:
        parts.extend(difflib.unified_diff(
            sources[file].splitlines(keepends=True), mutated[file].splitlines(keepends=True),
            f"a/reference/{file}", f"b/reference/{file}", n=2,
        ))
    return "".join(parts)
