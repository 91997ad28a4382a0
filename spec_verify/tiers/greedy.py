"""The greedy tier: at temperature 0, speculative output is token-identical to plain greedy.

``argmax_chain`` drives ``verify_draft`` directly: for generated rows (many with exact ties,
some with penalties) and every kind of draft (the argmax chain itself, the chain with one wrong
token at each position, a random draft), the output must be the argmax chain up to the first
mismatch plus the argmax there (or the bonus after all keeps), ties to the lowest id, and no
uniform may be drawn. ``generation`` (implementations that offer it) runs
``speculative_generate`` with each draft and several ``k`` and compares with ``generate``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._implementations import Implementation
from spec_verify.errors import ImplementationError
from spec_verify.reference import SamplingParams, sampling_distribution
from spec_verify.results import CheckResult, Progress, Status
from spec_verify.tiers._cases import case_seeds, verify_case
from spec_verify.tiers._generation_kit import kit_for, setups

__all__ = ["greedy_expected", "run_greedy_tier"]



class _Counting:
    def __init__(self) -> None:
        self.drawn = 0

    def random(self) -> float:
        self.drawn += 1
        return 0.5


def _argmax(
    row: NDArray[np.float64], p: SamplingParams, history: list[int], prompt: list[int]
) -> int:
    return int(np.argmax(sampling_distribution(row, p, history, prompt)))


def greedy_expected(
    rows: NDArray[np.float64],
    draft: Sequence[int],
    p: SamplingParams,
    history: Sequence[int],
    prompt: Sequence[int],
) -> tuple[list[int], int]:
    """Plain greedy decoding's answer: keep drafts while each is the argmax (ties to the lowest
    id, penalties seeing the kept drafts), then the argmax at the first mismatch or the bonus."""
    kept: list[int] = []
    for i, x in enumerate(draft):
        best = _argmax(rows[i], p, [*history, *kept], list(prompt))
        if x != best:
            return [*kept, best], len(kept)
        kept.append(x)
    return [*kept, _argmax(rows[len(draft)], p, [*history, *kept], list(prompt))], len(draft)


def _chain(
    rows: NDArray[np.float64],
    m: int,
    p: SamplingParams,
    history: Sequence[int],
    prompt: Sequence[int],
) -> list[int]:
    chain: list[int] = []
    for i in range(m):
        chain.append(_argmax(rows[i], p, [*history, *chain], list(prompt)))
    return chain


def _check_argmax_chain(
    impl: Implementation, seed: int, n: int, progress: Progress | None
) -> CheckResult:
    start = time.perf_counter()
    calls = 0
    failure: str | None = None
    failing_seed: int | None = None
    for case_seed in case_seeds(seed + 4_242, n):
        case = verify_case(case_seed)
        fields = {**case.params, "temperature": 0.0}
        p = SamplingParams(**fields)
        rows, history, prompt = case.target_logits, list(case.history), list(case.prompt)
        chain = _chain(rows, case.m, p, history, prompt)
        drafts: list[list[int]] = [list(case.draft_ids), chain]
        for j in range(case.m):
            wrong = (chain[j] + 1 + case_seed % max(1, case.V - 1)) % case.V
            if wrong != chain[j]:
                drafts.append([*chain[:j], wrong, *chain[j + 1 :]])
        for draft in drafts:
            want = greedy_expected(rows, draft, p, history, prompt)
            source = _Counting()
            try:
                got = impl.verify_draft(
                    rows, draft, case.draft_probs, impl.params(**fields), history, source, prompt
                )
            except (ValueError, ImplementationError) as exc:
                failure = f"draft {draft}: raised {type(exc).__name__}: {exc}"
            else:
                calls += 1
                if (list(got[0]), int(got[1])) != want:
                    failure = (
                        f"V={case.V}, draft {draft}, params {case.to_json()['params']}"
                        f"{', history ' + str(history) if history else ''}: emitted "
                        f"{list(got[0])} (n_accepted {got[1]}); plain greedy gives {want[0]} "
                        f"(n_accepted {want[1]})"
                    )
                elif source.drawn:
                    failure = f"draft {draft}: drew {source.drawn} uniforms at temperature 0"
            if failure:
                failing_seed = case_seed
                break
        if failure:
            break
    if progress:
        progress(f"greedy: {calls} verify_draft calls")
    seconds = time.perf_counter() - start
    if failure is None:
        return CheckResult(
            "greedy",
            "argmax_chain",
            Status.PASSED,
            f"{calls} greedy verifications (ties, penalties, drafts right and wrong at each "
            "position) equal the argmax chain and drew no uniform",
            n=calls,
            seconds=seconds,
        )
    return CheckResult(
        "greedy",
        "argmax_chain",
        Status.FAILED,
        f"case {failing_seed} (rows of parity case {failing_seed} at temperature 0): {failure}",
        n=calls,
        details={"case_seed": failing_seed},
        seconds=seconds,
    )


def _check_generation(
    impl: Implementation, quick: bool, progress: Progress | None
) -> CheckResult | None:
    kit = kit_for(impl)
    if kit is None:
        return None
    start = time.perf_counter()
    runs = 0
    failure: str | None = None
    for setup in setups(kit):
        p = kit.SamplingParams(temperature=0, max_tokens=16 if quick else 30)
        plain = kit.generate(setup.make_target(), setup.tok, setup.prompt, p)
        for name, draft in setup.drafts(kit).items():
            for k in (1, 3) if quick else (1, 3, 5):
                spec = kit.speculative_generate(
                    setup.make_target(), draft, setup.tok, setup.prompt, p, k=k
                )
                runs += 1
                if list(spec.ids) != list(plain.ids) or spec.text != plain.text:
                    failure = (
                        f"{setup.name}, draft {name}, k={k}: speculative ids {list(spec.ids)} "
                        f"differ from plain greedy {list(plain.ids)}"
                    )
                    break
            if failure:
                break
        if failure:
            break
    if progress:
        progress(f"greedy: {runs} speculative generations")
    seconds = time.perf_counter() - start
    if failure is None:
        return CheckResult(
            "greedy",
            "generation",
            Status.PASSED,
            f"{runs} greedy speculative generations (BagLM and AttentionLM; prompt-lookup, "
            "n-gram, small-model and self drafts; several k) equal plain greedy generation",
            n=runs,
            seconds=seconds,
        )
    return CheckResult("greedy", "generation", Status.FAILED, failure, n=runs, seconds=seconds)


def run_greedy_tier(
    impl: Implementation,
    *,
    seed: int = 0,
    quick: bool = False,
    progress: Progress | None = None,
    **options: Any,
) -> list[CheckResult]:
    """The greedy tier: ``argmax_chain`` (and ``generation`` for Python modules offering it)."""
    from spec_verify.tiers.tree import check_tree_argmax

    if "verify_draft" not in impl.capabilities:  # a tree-only module
        tree = check_tree_argmax(impl, seed=seed, quick=quick, progress=progress)
        return [CheckResult("greedy", "argmax_chain", Status.SKIPPED,
                            f"{impl.name} has no verify_draft (tree-only)"),
                *([tree] if tree is not None else [])]
    results = [_check_argmax_chain(impl, seed, 60 if quick else 200, progress)]
    try:
        generation = _check_generation(impl, quick, progress)
    except ImplementationError as exc:
        generation = CheckResult("greedy", "generation", Status.ERROR, str(exc))
    except ValueError as exc:
        generation = CheckResult(
            "greedy", "generation", Status.FAILED, f"raised {type(exc).__name__}: {exc}"
        )
    if generation is not None:
        results.append(generation)
    tree = check_tree_argmax(impl, seed=seed, quick=quick, progress=progress)
    if tree is not None:  # implementations with verify_tree (CONTRACT.md section 6)
        results.append(tree)
    return results
