"""The real-bug family: r01.., each the smallest change of the reference that rebuilds a bug
reported against an engine in 2025-26 (issue 26), with its citation.

Each entry is a ``Mutant`` of the same format as the catalogue's (exact text replacements of
the reference source, so ``mutant:r03``, ``spec-verify mutants show r03`` and ``spec-verify
grade --mutants r03`` work as for ``s03``), plus where it comes from (``citation``) and what
kills it: the tests of ours in ``killed_by`` (graded like the catalogue's) and the
``spec-verify check`` checks in ``killed_by_checks`` (``tier/check-name``), which
``tests/mutants/test_real_bugs.py`` runs. The family is NOT part of ``CATALOGUE``: the default
grading stays the 36 mutants; ``REAL_BUGS`` is selected by id.

Bugs of the issue the reference's API cannot express, so not here (each has its rebuilt
implementation and its check elsewhere):

- q rows misaligned by a batch reorder (vLLM PR #41044, #45956): the reference verifies one
  request per call, so there is no slot to misalign; ``tests/impls/kernel_stale_slot_q``
  and ``check_batched``'s reordered context.
- greedy rows divided by a near-zero temperature (TensorRT-LLM PR #12588): the reference's
  greedy path is an argmax over float64 logits, where dividing by a small temperature keeps
  the argmax (no float32 overflow, no sampling of greedy rows), so the minimal change of the
  reference is the clean reference.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._mutant import Change, Mutant, _lines

__all__ = ["REAL_BUGS", "RealBug"]

_CATALOGUE_TESTS = "reference/test_spec_catalogue.py"
_REAL_TESTS = "reference/test_real_bugs.py"
_TREE_TESTS = "reference/test_tree.py"


@dataclass(frozen=True)
class RealBug(Mutant):
    """A mutant that rebuilds a reported bug.

    Attributes (besides ``Mutant``'s):
        citation: repository and issue or pull request of the report.
        killed_by_checks: ``tier/check`` names of ``spec-verify check`` that fail with it
            (``tier`` is the tier to run, the rest a prefix of the check's name).
    """

    citation: str = ""
    killed_by_checks: tuple[str, ...] = ()


REAL_BUGS: tuple[RealBug, ...] = (
    RealBug(
        "r01", "noise coupling: the draft samples with the verifier's uniforms", None,
        "the draft's token x_1 is drawn with the same uniform as its acceptance test (and the "
        "residual with the draft's next one), so the output leans towards the draft",
        (Change("generate.py",
                "        draft_ids, draft_probs = draft.propose(ids + out.ids, k_round, rng)\n",
                "        draft_ids, draft_probs = draft.propose(\n"
                "            ids + out.ids, k_round, __import__('copy').deepcopy(rng))\n"),),
        (f"{_REAL_TESTS}::test_a_sampled_draft_and_its_verification_use_independent_noise",),
        origin="real", citation="vllm-project/vllm PR #47386, fixed in PR #54282",
    ),
    RealBug(
        "r02", "the residual drawn with the acceptance uniform", 3,
        "after a rejection the residual is sampled at u_accept, which lies above p(x)/q(x): "
        "only the upper part of the residual's CDF is reachable unless it is a point mass",
        (Change("rejection.py",
                "    return sample_with(residual(p, q), u_resample), False\n",
                "    return sample_with(residual(p, q), u_accept), False\n"),),
        (f"{_CATALOGUE_TESTS}::test_one_token_output_is_the_target_exactly",),
        origin="real", citation="flashinfer-ai/flashinfer PR #424",
        # one_position's generated cases have residuals of two tokens or more (issue 26)
        killed_by_checks=("exact/one_position",),
    ),
    RealBug(
        "r03", "min-p applied to the bonus row only", None,
        "verified positions ignore min_p: tokens min-p bans are accepted or resampled",
        (Change("verify.py",
                "        p_i = _distribution(rows[i], p, history + kept, prompt)\n",
                "        p_i = _distribution(rows[i], __import__('dataclasses').replace(p, "
                "min_p=0.0), history + kept, prompt)\n"),),
        (f"{_REAL_TESTS}::test_min_p_cuts_at_every_verified_position",),
        origin="real", citation="vllm-project/vllm PR #42802",
        killed_by_checks=("edges/uniforms",),
    ),
    RealBug(
        "r04", "q taken before the draft's processors (its temperature)", 1,
        "a model draft samples from softmax(logits / T) but reports softmax(logits): the "
        "verifier divides by the wrong q and the output is biased unless T = 1",
        (Change("drafts.py",
                _lines("                dist = _softmax(logits / self.temperature)",
                       "                token = sample(dist, rng)"),
                _lines("                token = sample(_softmax(logits / self.temperature), rng)",
                       "                dist = _softmax(logits)")),),
        (f"{_REAL_TESTS}::test_a_model_draft_reports_the_distribution_it_sampled_from",),
        origin="real", citation="huggingface/transformers PR #48007",
    ),
    RealBug(
        "r05", "tree: a node's children verified against the previous node's row", None,
        "the children of node n are tested against the target row packed before n's: every "
        "path below the first child follows the wrong row",
        (Change("tree.py",
                "        r = dist(node, kept)\n",
                "        r = dist(max(node - 1, -1), kept)\n"),),
        (f"{_TREE_TESTS}::test_tree_float_path_is_exact_per_fixed_tree",),
        origin="real", citation="NVIDIA/TensorRT-LLM PR #15098",
        killed_by_checks=("exact/tree",),
    ),
    RealBug(
        "r06", "draft probabilities overwritten in place", None,
        "after a rejection the caller's draft_probs row holds the residual: a caller that "
        "reuses its buffer (a retry, a log, the next step) reads other numbers",
        (Change("verify.py",
                _lines("        if not accepted:", "            return [*kept, token], len(kept)"),
                _lines("        if not accepted:",
                       "            if q is not None:",
                       "                q[i] = np.maximum(p_i - q_i, 0.0)",
                       "            return [*kept, token], len(kept)")),),
        (),  # a graded suite gets the reference's answers by value: no test can see the write
        origin="real", citation="vllm-project/vllm PR #16952",
        killed_by_checks=("contract/inputs",),
    ),
    RealBug(
        "r07", "the first draft never checked", None,
        "the first drafted token is always kept: the first emitted token follows the draft",
        (Change("verify.py",
                "        token, accepted = step(p_i, q_i, x, u_accept, u_resample)\n",
                "        token, accepted = (x, True) if i == 0 else step(p_i, q_i, x, "
                "u_accept, u_resample)\n"),),
        (f"{_CATALOGUE_TESTS}::test_one_token_output_is_the_target_exactly",),
        origin="real", citation="a 2026 engine report (issue 26: 'the first draft never checked')",
        killed_by_checks=("exact/one_position",),
    ),
    RealBug(
        "r08", "logprobs of 0 for accepted drafts under speculation", None,
        "speculative generation reports log-probability 0 for every kept draft token, where "
        "plain generation reports the target's",
        (Change("generate.py",
                "        logprobs = [token_logprobs(rows[i], [t])[0] for i, t in "
                "enumerate(emitted)]\n",
                "        logprobs = [0.0 if i < n else token_logprobs(rows[i], [t])[0]\n"
                "                    for i, t in enumerate(emitted)]\n"),),
        (f"{_CATALOGUE_TESTS}::test_logprobs_are_the_targets",),
        origin="real", citation="ggml-org/llama.cpp issue #27972",
        killed_by_checks=("generation/logprobs",),
    ),
)
