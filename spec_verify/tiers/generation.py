"""The generation tier: ``speculative_generate`` end to end (implementations that offer it).

- ``rollback``: every target pass starts at the kept length with the pending token, so
  rejected drafts leave nothing in the KV cache (read from the models' ``call_log``);
- ``stats``: drafted, accepted, acceptance_rate and target_calls agree with the passes made;
- ``eos_stop_budget``: generation ends at the first EOS (not emitted), cuts the text before a
  stop string, and never exceeds ``max_tokens``, whatever ``k``;
- ``logprobs``: the reported log-probabilities are the target's own (one fresh full pass), and
  at temperature 0 equal plain generation's;
- ``drafts``: the n-gram draft follows its model (greedy ids are the argmax chain, sampled rows
  are the model's distribution given the whole context) and the model draft's proposals equal
  a fresh draft's greedy decoding while the context changes under it (its cache follows).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec_verify.adapters._implementations import Implementation
from spec_verify.errors import ImplementationError
from spec_verify.results import CheckResult, Progress, Status
from spec_verify.tiers._generation_kit import Kit, Setup, kit_for, setups

__all__ = ["rollback_problem", "run_generation_tier"]



def rollback_problem(
    call_log: Sequence[tuple[int, Sequence[int]]], prompt: Sequence[int], ids: Sequence[int]
) -> str | None:
    """Why a target's pass log is not a correct speculative rollback of ``ids``, or None."""
    context = list(prompt) + list(ids)
    if not call_log:
        return "the target was never called"
    if call_log[0][0] != 0 or list(call_log[0][1][: len(prompt)]) != list(prompt):
        return f"the first pass {call_log[0]} does not start with the prompt at position 0"
    expected_start, pending = 0, len(prompt)
    for number, (start, chunk) in enumerate(call_log):
        if start > expected_start:
            return (
                f"pass {number} starts at position {start}, but the kept length is "
                f"{expected_start}: rejected drafts were left in the cache"
            )
        if start < expected_start:
            # The kept length is read off the output: a draft equal to the token emitted at
            # its position counts as kept, so this is either a cache cut too short or a
            # replacement equal to the rejected draft (which the residual never allows).
            return (
                f"pass {number} starts at position {start}, before the kept length "
                f"{expected_start} read off the output: the cache was truncated too far, or the "
                "token emitted after a rejection repeats the rejected draft"
            )
        if list(chunk[:pending]) != context[start : start + pending]:
            return f"pass {number} does not feed the pending token first ({list(chunk)})"
        kept = 0
        for i, token in enumerate(chunk[pending:]):
            if start + pending + i < len(context) and context[start + pending + i] == token:
                kept += 1
            else:
                break
        expected_start, pending = start + pending + kept, 1
    return None


def _result(name: str, failure: str | None, runs: int, passed: str, start: float) -> CheckResult:
    seconds = time.perf_counter() - start
    if failure is None:
        return CheckResult("generation", name, Status.PASSED, passed, n=runs, seconds=seconds)
    return CheckResult("generation", name, Status.FAILED, failure, n=runs, seconds=seconds)


def _rollback(kit: Kit, cases: list[Setup], seeds: int) -> CheckResult:
    start, runs, failure = time.perf_counter(), 0, None
    for setup in cases:
        for temperature in (0.0, 1.0):
            for seed in range(seeds):
                p = kit.SamplingParams(temperature=temperature, max_tokens=30, seed=seed)
                for name, draft in setup.drafts(kit).items():
                    target = setup.make_target()
                    out = kit.speculative_generate(target, draft, setup.tok, setup.prompt, p, k=3)
                    runs += 1
                    problem = rollback_problem(target.call_log, setup.prompt, out.ids)
                    if problem:
                        failure = (
                            f"{setup.name}, draft {name}, temperature {temperature}, seed {seed}:"
                            f" {problem}"
                        )
                        return _result("rollback", failure, runs, "", start)
    return _result(
        "rollback",
        failure,
        runs,
        f"{runs} generations: every target pass started at the kept length with the pending token",
        start,
    )


def _stats(kit: Kit, cases: list[Setup]) -> CheckResult:
    start, runs = time.perf_counter(), 0
    for setup in cases:
        for temperature in (0.0, 1.0):
            p = kit.SamplingParams(temperature=temperature, max_tokens=24, seed=3)
            for name, draft in setup.drafts(kit).items():
                for k in (0, 2, 4):
                    target = setup.make_target()
                    out = kit.speculative_generate(target, draft, setup.tok, setup.prompt, p, k=k)
                    runs += 1
                    s = out.stats
                    where = f"{setup.name}, draft {name}, temperature {temperature}, k={k}"
                    expected_rate = s["accepted"] / s["drafted"] if s["drafted"] else 0.0
                    problem = None
                    if s["target_calls"] != len(target.call_log):
                        problem = (
                            f"target_calls={s['target_calls']} but the target made "
                            f"{len(target.call_log)} passes"
                        )
                    elif not 0 <= s["accepted"] <= s["drafted"] <= k * s["target_calls"]:
                        problem = f"stats {s} break 0 <= accepted <= drafted <= k * target_calls"
                    elif not math.isclose(s["acceptance_rate"], expected_rate, abs_tol=1e-12):
                        problem = f"acceptance_rate {s['acceptance_rate']} is not accepted/drafted"
                    elif len(out.ids) > s["accepted"] + s["target_calls"]:
                        problem = (
                            f"{len(out.ids)} tokens from {s['target_calls']} passes and "
                            f"{s['accepted']} accepted drafts: more than one token per pass "
                            "beyond the accepted drafts"
                        )
                    elif k == 0 and s["drafted"]:
                        problem = f"k=0 drafted {s['drafted']} tokens"
                    elif name == "self" and temperature == 0 and s["accepted"] != s["drafted"]:
                        problem = (
                            f"a draft equal to the target had rejections at temperature 0: {s}"
                        )
                    if problem:
                        return _result("stats", f"{where}: {problem}", runs, "", start)
    return _result(
        "stats",
        None,
        runs,
        f"{runs} generations: drafted, accepted, acceptance_rate and target_calls agree with the "
        "passes made",
        start,
    )


def _eos_stop_budget(kit: Kit, setup: Setup) -> CheckResult:
    start, runs = time.perf_counter(), 0
    tok, prompt = setup.tok, setup.prompt
    greedy = kit.SamplingParams(temperature=0, max_tokens=30)
    plain = kit.generate(setup.make_target(), tok, prompt, greedy)
    draft = kit.PromptLookupDraft()
    eos = plain.ids[6]
    first = plain.ids.index(eos)
    for k in (0, 2, 4):
        out = kit.speculative_generate(
            setup.make_target(), draft, tok, prompt, greedy, k=k, eos_ids=[eos]
        )
        runs += 1
        if list(out.ids) != list(plain.ids[:first]) or out.finish_reason != "eos":
            return _result(
                "eos_stop_budget",
                f"EOS {eos}, k={k}: ids {list(out.ids)}, finish_reason {out.finish_reason!r}; "
                f"expected {list(plain.ids[:first])} and 'eos'",
                runs,
                "",
                start,
            )
    stop = plain.text[8:10]
    cut = plain.text.index(stop)
    stopped = kit.SamplingParams(temperature=0, max_tokens=30, stop=(stop,))
    for k in (0, 2, 4):
        out = kit.speculative_generate(setup.make_target(), draft, tok, prompt, stopped, k=k)
        runs += 1
        if (
            out.text != plain.text[:cut]
            or tok.decode(out.ids) != out.text
            or out.finish_reason != "stop"
        ):
            return _result(
                "eos_stop_budget",
                f"stop {stop!r}, k={k}: text {out.text!r}, finish_reason {out.finish_reason!r}; "
                f"expected {plain.text[:cut]!r} and 'stop'",
                runs,
                "",
                start,
            )
    for max_tokens in (1, 2, 3, 7, 10):
        for k in (1, 4, 9):
            budget = kit.SamplingParams(temperature=0, max_tokens=max_tokens)
            out = kit.speculative_generate(
                setup.make_target(), kit.ModelDraft(setup.make_target()), tok, prompt, budget, k=k
            )
            runs += 1
            if list(out.ids) != list(plain.ids[:max_tokens]) or out.finish_reason != "length":
                return _result(
                    "eos_stop_budget",
                    f"max_tokens={max_tokens}, k={k}: {len(out.ids)} ids {list(out.ids)}, "
                    f"finish_reason {out.finish_reason!r}; expected {list(plain.ids[:max_tokens])}"
                    " and 'length'",
                    runs,
                    "",
                    start,
                )
    return _result(
        "eos_stop_budget",
        None,
        runs,
        f"{runs} generations: EOS ends without being emitted, stop strings cut the text, "
        "max_tokens is never exceeded",
        start,
    )


def _logprobs(kit: Kit, setup: Setup) -> CheckResult:
    start, runs = time.perf_counter(), 0
    tok, prompt = setup.tok, setup.prompt
    for temperature in (0.0, 1.0):
        p = kit.SamplingParams(temperature=temperature, max_tokens=25, seed=5)
        plain = kit.generate(setup.make_target(), tok, prompt, p)
        draft = kit.ModelDraft(setup.make_target())
        spec = kit.speculative_generate(setup.make_target(), draft, tok, prompt, p, k=3)
        runs += 1
        model = setup.make_target()
        logits = model.forward(list(prompt) + list(spec.ids), model.new_cache(), 0)
        rows = logits[len(prompt) - 1 : len(prompt) - 1 + len(spec.ids)]
        want = kit.token_logprobs(rows, list(spec.ids)) if spec.ids else []
        if len(spec.logprobs) != len(spec.ids) or any(
            not math.isclose(a, b, rel_tol=0, abs_tol=1e-9)
            for a, b in zip(spec.logprobs, want, strict=False)
        ):
            return _result(
                "logprobs",
                f"temperature {temperature}: logprobs {list(spec.logprobs)[:6]}... are not the "
                f"target's {list(want)[:6]}...",
                runs,
                "",
                start,
            )
        if temperature == 0 and list(spec.logprobs) != list(plain.logprobs):
            return _result(
                "logprobs",
                "temperature 0: speculative logprobs differ from plain generation's",
                runs,
                "",
                start,
            )
    return _result(
        "logprobs",
        None,
        runs,
        "reported log-probabilities are the target's own, and equal plain generation's at "
        "temperature 0",
        start,
    )


def _ngram_problem(kit: Kit, rng_seed: int) -> str | None:
    V = 6
    corpus = [[(3 * i * i + j) % V for i in range(40)] for j in range(3)]
    lm = kit.NGramLM(3, V).train(corpus)
    for ctx in ([1, 2, 3], [0], [5, 4, 4, 2, 0, 1]):
        ids, probs = kit.NGramDraft(lm).propose(ctx, 5, None)
        chain = list(ctx)
        for token in ids:
            logprobs = [float(v) for v in lm.logprobs(chain)]
            best = logprobs.index(max(logprobs))  # ties to the lowest id
            if token != best:
                return (
                    f"n-gram draft after {ctx}: greedy id {token} at {chain[len(ctx) :]} is "
                    f"not the model's argmax {best}"
                )
            chain.append(token)
        ids, probs = kit.NGramDraft(lm).propose(ctx, 5, kit.request_rng(rng_seed))
        chain = list(ctx)
        for i, token in enumerate(ids):
            want = [math.exp(v) for v in lm.logprobs(chain)]
            row = [float(v) for v in probs[i]]
            if any(abs(a - b) > 1e-9 for a, b in zip(row, want, strict=True)):
                return (
                    f"n-gram draft after {chain}: sampled row {[round(v, 4) for v in row]} "
                    f"is not the model's distribution {[round(v, 4) for v in want]}"
                )
            chain.append(token)
    return None


def _model_draft_problem(kit: Kit, setup: Setup) -> str | None:
    V = setup.tok.vocab_size

    def make() -> Any:
        return kit.AttentionLM(vocab_size=V, d_model=16, n_layers=1, n_heads=2, seed=3)

    draft = kit.ModelDraft(make())
    ctx = list(setup.prompt)
    for step in range(10):
        ids, _ = draft.propose(ctx, 4, None)
        fresh, _ = kit.ModelDraft(make()).propose(ctx, 4, None)
        if list(ids) != list(fresh):
            return (
                f"model draft, round {step}: proposed {list(ids)} after a changed context, "
                f"a fresh draft proposes {list(fresh)}: its cache does not follow"
            )
        keep = step % (len(ids) + 1)  # keep a prefix, then a token of the target's own
        ctx = ctx + list(ids[:keep]) + [1 + (step * 7) % (V - 1)]
    return None


def _sampled_model_draft_problem(kit: Kit, setup: Setup, rng_seed: int) -> str | None:
    """Each row a sampling model draft returns is its model's distribution after the context
    and the tokens drafted before it (what the rejection step divides by), round after round
    as the context changes; the expected rows come from a fresh copy of the model."""
    V = setup.tok.vocab_size

    def make() -> Any:
        return kit.AttentionLM(vocab_size=V, d_model=16, n_layers=1, n_heads=2, seed=5)

    draft = kit.ModelDraft(make())
    temperature = float(getattr(draft, "temperature", 1.0))
    ctx = list(setup.prompt)
    for step in range(4):
        ids, rows = draft.propose(ctx, 4, kit.request_rng(rng_seed + step))
        if rows is None or np.shape(rows) != (len(ids), V):
            return (
                f"model draft, sampled round {step}: {len(ids)} ids came with draft rows of "
                f"shape {np.shape(rows)}; a sampling draft returns one row of {V} per id"
            )
        for i in range(len(ids)):
            chain = ctx + [int(t) for t in ids[:i]]
            fresh = make()
            logits = np.asarray(fresh.forward(chain, fresh.new_cache(), 0)[-1]) / temperature
            want = np.exp(logits - logits.max())
            want /= want.sum()
            got = np.asarray(rows[i], dtype=np.float64)
            if np.max(np.abs(got - want)) > 1e-9:
                worst = int(np.argmax(np.abs(got - want)))
                return (
                    f"model draft, sampled round {step}: row {i} (after ...{chain[-4:]}) gives "
                    f"token {worst} probability {got[worst]:.6g}, its model {want[worst]:.6g}: "
                    "the draft rows are not the draft model's distributions"
                )
        keep = step % (len(ids) + 1)
        ctx = ctx + [int(t) for t in ids[:keep]] + [1 + (step * 5) % (V - 1)]
    return None


def _drafts(kit: Kit, setup: Setup, seed: int) -> CheckResult:
    start = time.perf_counter()
    failure = (
        _ngram_problem(kit, seed)
        or _model_draft_problem(kit, setup)
        or _sampled_model_draft_problem(kit, setup, seed)
    )
    return _result(
        "drafts",
        failure,
        16,
        "the n-gram draft follows its model (argmax chain, sampled rows); the model draft's "
        "proposals equal fresh greedy decoding and its sampled rows its model's distributions "
        "as the context changes",
        start,
    )


def run_generation_tier(
    impl: Implementation,
    *,
    seed: int = 0,
    quick: bool = False,
    progress: Progress | None = None,
    **options: Any,
) -> list[CheckResult]:
    """The generation tier's five checks (nothing when the implementation has no generation)."""
    kit = kit_for(impl)
    if kit is None:
        return [CheckResult("generation", "all", Status.SKIPPED, "no speculative_generate offered")]
    cases = setups(kit)
    checks: list[tuple[str, Callable[[], CheckResult]]] = [
        ("rollback", lambda: _rollback(kit, cases, 1 if quick else 2)),
        ("stats", lambda: _stats(kit, cases)),
        ("eos_stop_budget", lambda: _eos_stop_budget(kit, cases[1])),
        ("logprobs", lambda: _logprobs(kit, cases[1])),
        ("drafts", lambda: _drafts(kit, cases[1], seed)),
    ]
    results = []
    for name, check in checks:
        if progress:
            progress(f"generation: {name}")
        try:
            results.append(check())
        except ImplementationError as exc:
            results.append(CheckResult("generation", name, Status.ERROR, str(exc)))
        except (ValueError, AssertionError) as exc:
            results.append(
                CheckResult(
                    "generation", name, Status.FAILED, f"raised {type(exc).__name__}: {exc}"
                )
            )
    return results
