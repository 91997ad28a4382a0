"""Property checks that take any implementation (``spec_verify.adapters.Implementation``).

Each check is a function ``check_<property>(impl, case)`` that returns None when the property
holds and raises ``PropertyViolation`` (an ``AssertionError`` naming the property) when it
does not. They call the implementation only through the protocol's methods, and, for the
generation properties, through ``impl.module`` when ``"generation"`` is in its capabilities
(run on the reference's models, which check the cache and log every pass).

The oracles are the contract's rules written out here (the argmax chain with penalties, prompt
lookup), the implementation's own ``sampling_distribution`` (which tokens its target rules
out), and, for generation, plain decoding: no property compares against the reference's
outputs, so a port that rounds differently is judged by the rules, not by bits (the parity
tier compares bits).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._implementations import Implementation, TreeImplementation
from spec_verify.errors import ImplementationError
from spec_verify.tiers._drive import (
    generation_module,
    module_attr,
)
from spec_verify.tiers.generation import rollback_problem
from spec_verify.uniforms import CountingUniforms

from .strategies import GenerationCase, TreeCase, VerifyCase

__all__ = [
    "GENERATION_PROPERTIES",
    "PROPERTIES",
    "TREE_PROPERTIES",
    "VERIFY_PROPERTIES",
    "PropertyViolation",
    "check_cache_holds_kept_positions",
    "check_emitted_is_accepted_plus_one",
    "check_eos_and_stop_strings",
    "check_greedy_is_argmax_chain",
    "check_greedy_speculative_equals_plain",
    "check_ids_in_range",
    "check_logprobs_equal_plain",
    "check_max_tokens_respected",
    "check_no_zero_probability_tokens",
    "check_prompt_lookup_rules",
    "check_same_stream_same_output",
    "check_tree_no_zero_probability_tokens",
    "check_tree_result_is_a_path",
    "check_uniform_draw_count",
    "contract_greedy_token",
    "contract_prompt_lookup",
]

T = TypeVar("T")


class PropertyViolation(AssertionError):
    """A property does not hold: ``property`` names it, ``message`` says where and how."""

    def __init__(self, property: str, message: str) -> None:
        self.property = property
        self.message = message
        super().__init__(f"property {property} violated: {message}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.property, self.message))


def _fail(name: str, message: str) -> NoReturn:
    raise PropertyViolation(name, message)


def _call(name: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call the implementation; its crash, garbage or refusal of a valid call is a violation."""
    try:
        return fn(*args, **kwargs)
    except PropertyViolation:
        raise
    except ImplementationError as error:
        _fail(name, str(error))
    except ValueError as error:
        _fail(name, f"a valid call was refused: {type(error).__name__}: {error}")


# --- the contract's rules, written out -------------------------------------------------------


def contract_greedy_token(
    logits: Sequence[float] | NDArray[np.float64],
    params: dict[str, Any] | Any,
    history: Sequence[int],
    prompt: Sequence[int] = (),
) -> int:
    """The greedy token of CONTRACT.md section 2: penalties, then argmax, ties to the lowest id.

    The repetition penalty sees ``prompt + history`` (divide positive logits, multiply the
    others); presence and frequency penalties see ``history`` only.

    >>> contract_greedy_token([1.0, 3.0, 3.0], {}, [])
    1
    >>> contract_greedy_token([1.0, 3.0, 2.0], {"repetition_penalty": 2.0}, [1])
    2
    """
    fields = dict(params)
    row = np.array(logits, dtype=np.float64)
    r = float(fields.get("repetition_penalty", 1.0))
    if r != 1.0:
        for token in sorted(set(prompt) | set(history)):
            row[token] = row[token] / r if row[token] > 0 else row[token] * r
    presence = float(fields.get("presence_penalty", 0.0))
    frequency = float(fields.get("frequency_penalty", 0.0))
    if presence or frequency:
        for token, count in sorted(Counter(history).items()):
            row[token] -= presence + frequency * count
    return int(np.argmax(row))


def contract_prompt_lookup(
    ctx: Sequence[int], k: int, max_ngram: int = 3, min_ngram: int = 1
) -> list[int]:
    """Prompt lookup as CONTRACT.md section 4 pins it: longest n-gram first, most recent
    earlier occurrence first, at most ``k`` tokens.

    >>> contract_prompt_lookup([1, 2, 3, 9, 1, 2], 3)
    [3, 9, 1]
    """
    tokens = list(ctx)
    if k == 0:
        return []
    L = len(tokens)
    for n in range(min(max_ngram, L - 1), min_ngram - 1, -1):
        tail = tokens[L - n :]
        for start in range(L - n - 1, -1, -1):
            if tokens[start : start + n] == tail:
                return tokens[start + n : start + n + k]
    return []


# --- verify_draft properties -----------------------------------------------------------------


def _verify(name: str, impl: Implementation, case: VerifyCase, rng: Any) -> tuple[list[int], int]:
    p = _call(name, impl.params, **case.params)
    emitted, accepted = _call(
        name,
        impl.verify_draft,
        case.target_logits,
        list(case.draft_ids),
        case.draft_probs,
        p,
        list(case.history),
        rng,
        list(case.prompt),
    )
    return [int(t) for t in emitted], int(accepted)


def _rng(case: VerifyCase) -> np.random.Generator:
    return np.random.default_rng(case.seed)


def check_emitted_is_accepted_plus_one(impl: Implementation, case: VerifyCase) -> None:
    """``len(emitted) == n_accepted + 1``, ``0 <= n_accepted <= m``, and the kept prefix is the
    draft's: ``emitted[:n] == draft_ids[:n]``."""
    name = "emitted_is_accepted_plus_one"
    emitted, n = _verify(name, impl, case, _rng(case))
    if not 0 <= n <= case.m:
        _fail(name, f"n_accepted={n} for m={case.m} drafts")
    if len(emitted) != n + 1:
        _fail(name, f"emitted {emitted} ({len(emitted)} ids) with n_accepted={n}")
    if emitted[:n] != list(case.draft_ids[:n]):
        _fail(
            name,
            f"the kept prefix {emitted[:n]} is not the draft's first {n} ids "
            f"{list(case.draft_ids[:n])}",
        )


def check_ids_in_range(impl: Implementation, case: VerifyCase) -> None:
    """Every emitted id is in ``[0, V)``."""
    name = "ids_in_range"
    emitted, _ = _verify(name, impl, case, _rng(case))
    bad = [t for t in emitted if not 0 <= t < case.vocab_size]
    if bad:
        _fail(name, f"emitted {emitted}: ids {bad} are outside [0, {case.vocab_size})")


def _target_distribution(
    name: str, impl: Implementation, case: VerifyCase, row: int, history: Sequence[int]
) -> tuple[NDArray[np.float64], str]:
    """The target's distribution at ``row``: the implementation's own when it offers one."""
    logits = case.target_logits[row]
    if "sampling_distribution" in impl.capabilities:
        p = _call(name, impl.params, **case.params)
        dist = _call(name, impl.sampling_distribution, logits, p, list(history), list(case.prompt))
        return np.asarray(dist, dtype=np.float64), f"{impl.name}'s sampling_distribution"
    from spec_verify.reference import SamplingParams, sampling_distribution

    dist = sampling_distribution(logits, SamplingParams(**case.params), history, case.prompt)
    return dist, "the contract's sampling_distribution"


def check_no_zero_probability_tokens(impl: Implementation, case: VerifyCase) -> None:
    """No emitted token has probability 0 under the target at its position (its history is
    ``history`` plus the tokens emitted before it)."""
    name = "no_zero_probability_tokens"
    emitted, _ = _verify(name, impl, case, _rng(case))
    for i, token in enumerate(emitted):
        if not 0 <= token < case.vocab_size or i > case.m:
            return  # other properties report these
        dist, source = _target_distribution(name, impl, case, i, [*case.history, *emitted[:i]])
        if not dist[token] > 0:
            drafted = i < case.m and case.draft_ids[i] == token
            _fail(
                name,
                f"emitted {emitted}: token {token} at position {i} has target probability 0 "
                f"({source}, logit {float(case.target_logits[i][token])!r})"
                + ("; it was the drafted token, which must be rejected" if drafted else ""),
            )


def check_greedy_is_argmax_chain(impl: Implementation, case: VerifyCase) -> None:
    """At temperature 0, the output is the argmax chain: drafts kept while each equals the
    argmax of its (penalised) row, ties to the lowest id; then the argmax of the next row."""
    name = "greedy_is_argmax_chain"
    greedy = case.with_params(temperature=0.0)
    emitted, n = _verify(name, impl, greedy, _NoDraws(name))
    expected: list[int] = []
    for i in range(case.m + 1):
        best = contract_greedy_token(
            case.target_logits[i], greedy.params, [*case.history, *expected], case.prompt
        )
        if i == case.m or case.draft_ids[i] != best:
            expected.append(best)
            break
        expected.append(best)
    if emitted != expected or n != len(expected) - 1:
        _fail(
            name,
            f"drafts {list(case.draft_ids)} gave {emitted} with n_accepted={n}; the argmax "
            f"chain is {expected} with n_accepted={len(expected) - 1}",
        )


class _NoDraws:
    """A uniform source for greedy calls: drawing from it is a violation."""

    def __init__(self, name: str) -> None:
        self.name = name

    def random(self) -> float:
        _fail(self.name, "greedy verification drew a uniform; it must draw none")


def check_uniform_draw_count(impl: Implementation, case: VerifyCase) -> None:
    """Sampled: exactly two uniforms per verified position (``u_accept``, ``u_resample``) and
    one for the bonus after ``m`` keeps; greedy: none."""
    name = "uniform_draw_count"
    source = CountingUniforms(_rng(case))
    emitted, n = _verify(name, impl, case, source)
    if case.greedy:
        expected = 0
    elif n < case.m:
        expected = 2 * (n + 1)
    else:
        expected = 2 * case.m + 1
    if source.drawn != expected:
        mode = "greedy" if case.greedy else f"sampled, {n} of {case.m} drafts kept"
        _fail(
            name,
            f"drew {source.drawn} uniforms ({mode}, emitted {emitted}); the contract's draw "
            f"order takes {expected}",
        )


def check_same_stream_same_output(impl: Implementation, case: VerifyCase) -> None:
    """Two calls with equal uniform streams give equal outputs and draw equally many."""
    name = "same_stream_same_output"
    first_source, second_source = CountingUniforms(_rng(case)), CountingUniforms(_rng(case))
    first = _verify(name, impl, case, first_source)
    second = _verify(name, impl, case, second_source)
    if first != second or first_source.drawn != second_source.drawn:
        _fail(
            name,
            f"the same stream gave {first} ({first_source.drawn} draws), then {second} "
            f"({second_source.drawn} draws)",
        )


VERIFY_PROPERTIES: dict[str, Callable[[Implementation, VerifyCase], None]] = {
    "emitted_is_accepted_plus_one": check_emitted_is_accepted_plus_one,
    "ids_in_range": check_ids_in_range,
    "no_zero_probability_tokens": check_no_zero_probability_tokens,
    "greedy_is_argmax_chain": check_greedy_is_argmax_chain,
    "uniform_draw_count": check_uniform_draw_count,
    "same_stream_same_output": check_same_stream_same_output,
}


# --- prompt lookup ---------------------------------------------------------------------------


def check_prompt_lookup_rules(
    impl: Implementation, ctx: Sequence[int], k: int, max_ngram: int = 3, min_ngram: int = 1
) -> None:
    """Prompt lookup: at most ``k`` ids, none for ``k = 0``, and the continuation of the most
    recent earlier occurrence of the longest matching tail n-gram (``max_ngram`` down to
    ``min_ngram``)."""
    name = "prompt_lookup_rules"
    got = _call(name, impl.prompt_lookup, list(ctx), k, max_ngram, min_ngram)
    got = [int(t) for t in got]
    where = f"ctx={list(ctx)}, k={k}, max_ngram={max_ngram}, min_ngram={min_ngram}"
    if len(got) > k:
        _fail(name, f"{where}: proposed {len(got)} ids {got}, more than k={k}")
    expected = contract_prompt_lookup(ctx, k, max_ngram, min_ngram)
    if got != expected:
        _fail(
            name,
            f"{where}: proposed {got}, the contract's lookup gives {expected}"
            + _diagnose_lookup(ctx, k, max_ngram, min_ngram, got),
        )


def _diagnose_lookup(
    ctx: Sequence[int], k: int, max_ngram: int, min_ngram: int, got: list[int]
) -> str:
    """Which of the seed's pitfalls (oldest occurrence, shortest n-gram first) explains it."""
    tokens, L = list(ctx), len(ctx)
    sizes = list(range(min(max_ngram, L - 1), min_ngram - 1, -1))

    def oldest(n: int) -> range:
        return range(0, L - n)

    def most_recent(n: int) -> range:
        return range(L - n - 1, -1, -1)

    for label, order, starts in (
        ("the oldest occurrence", sizes, oldest),
        ("the shortest n-gram first", sizes[::-1], most_recent),
    ):
        for n in order:
            found = [s for s in starts(n) if tokens[s : s + n] == tokens[L - n :]]
            if found:
                if tokens[found[0] + n : found[0] + n + k] == got and got:
                    return f" (it matches {label}: the seed's pitfall 8)"
                break
    return ""


# --- generation properties -------------------------------------------------------------------


def _setup(case: GenerationCase) -> tuple[Any, Callable[[], Any]]:
    from spec_verify.reference import AttentionLM, BagLM, CharTokenizer

    if case.target == "bag":
        tok = CharTokenizer("abcdefg")
        return tok, lambda: BagLM(tok.vocab_size, seed=case.model_seed)
    tok = CharTokenizer()
    return tok, lambda: AttentionLM(
        vocab_size=tok.vocab_size, seed=case.model_seed, logit_scale=2.0, max_positions=128
    )


def _draft(
    impl: Implementation, kind: str, case: GenerationCase, tok: Any, make_target: Callable[[], Any]
) -> Any:
    from spec_verify.reference import AttentionLM, BagLM

    V = tok.vocab_size
    if kind == "prompt_lookup":
        return module_attr(impl, "PromptLookupDraft")()
    if kind == "ngram":
        lm = module_attr(impl, "NGramLM")(3, V).train([list(case.prompt)])
        return module_attr(impl, "NGramDraft")(lm)
    if kind == "small_model":
        small = (
            BagLM(V, seed=case.model_seed + 1)
            if case.target == "bag"
            else AttentionLM(
                vocab_size=V, d_model=16, n_layers=1, n_heads=2, seed=9, max_positions=128
            )
        )
        return module_attr(impl, "ModelDraft")(small)
    return module_attr(impl, "ModelDraft")(make_target())


def _speculative(
    name: str,
    impl: Implementation,
    case: GenerationCase,
    target: Any,
    tok: Any,
    draft_kind: str | None = None,
    make_target: Callable[[], Any] | None = None,
    eos_ids: Sequence[int] = (),
    **overrides: Any,
) -> Any:
    module = generation_module(impl)
    fields = {**case.params, **overrides}
    p = _call(name, impl.params, **fields)
    draft = _draft(impl, draft_kind or case.draft, case, tok, make_target or (lambda: target))
    return _run_generation(
        name,
        module.speculative_generate,
        target,
        draft,
        tok,
        list(case.prompt),
        p,
        k=case.k,
        eos_ids=list(eos_ids),
    )


def _run_generation(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    from spec_verify.reference import CacheMismatch

    try:
        return fn(*args, **kwargs)
    except CacheMismatch as error:
        _fail(name, f"a target pass saw the wrong cache: {error}")
    except PropertyViolation:
        raise
    except ValueError as error:
        _fail(name, f"a valid generation was refused: {type(error).__name__}: {error}")
    except Exception as error:  # the implementation's own crash
        _fail(name, f"generation raised {type(error).__name__}: {error}")


def _greedy_chain(case: GenerationCase, make_target: Callable[[], Any], n: int) -> list[int]:
    """Plain greedy by the contract's rule, one fresh full pass per token (no cache reuse)."""
    fields = {**case.params, "temperature": 0.0}
    ctx = list(case.prompt)
    out: list[int] = []
    model = make_target()
    for _ in range(min(n, model.max_positions - len(ctx))):
        model = make_target()
        logits = model.forward(ctx, model.new_cache(), 0)[-1]
        token = contract_greedy_token(logits, fields, out, case.prompt)
        out.append(token)
        ctx.append(token)
    return out


def check_cache_holds_kept_positions(impl: Implementation, case: GenerationCase) -> None:
    """At every target pass the cache holds exactly the kept positions: each pass starts at
    the kept length and scores the pending token (the previous round's last) first."""
    name = "cache_holds_kept_positions"
    tok, make_target = _setup(case)
    target = make_target()
    out = _speculative(name, impl, case, target, tok, make_target=make_target)
    problem = rollback_problem(target.call_log, case.prompt, [int(t) for t in out.ids])
    if problem is not None:
        _fail(name, f"{problem} (output {list(out.ids)})")


def check_greedy_speculative_equals_plain(impl: Implementation, case: GenerationCase) -> None:
    """At temperature 0, speculative output equals plain greedy decoding for every draft
    (prompt lookup, n-gram, a small model, the target itself), and plain ``generate`` is the
    contract's argmax chain."""
    name = "greedy_speculative_equals_plain"
    tok, make_target = _setup(case)
    module = generation_module(impl)
    greedy = {**case.params, "temperature": 0.0}
    chain = _greedy_chain(case, make_target, case.max_tokens)
    p = _call(name, impl.params, **greedy)
    plain = _run_generation(name, module.generate, make_target(), tok, list(case.prompt), p)
    if list(plain.ids) != chain:
        _fail(name, f"plain generate gave {list(plain.ids)}; the argmax chain is {chain}")
    for kind in ("prompt_lookup", "ngram", "small_model", "self"):
        out = _speculative(name, impl, case, make_target(), tok, kind, make_target, temperature=0.0)
        if list(out.ids) != chain:
            _fail(
                name,
                f"with the {kind} draft (k={case.k}) speculative greedy gave {list(out.ids)}; "
                f"plain greedy gives {chain}",
            )


def check_max_tokens_respected(impl: Implementation, case: GenerationCase) -> None:
    """Never more than ``max_tokens`` ids, and no round drafts more than it could emit
    (at most ``k`` and at most the remaining budget minus one)."""
    name = "max_tokens_respected"
    tok, make_target = _setup(case)
    target = make_target()
    out = _speculative(name, impl, case, target, tok, make_target=make_target)
    if len(out.ids) > case.max_tokens:
        _fail(name, f"{len(out.ids)} ids {list(out.ids)} for max_tokens={case.max_tokens}")
    L = len(case.prompt)
    for number, (start, chunk) in enumerate(target.call_log):
        pending = L if number == 0 else 1
        emitted_before = 0 if number == 0 else start - L + 1
        remaining = case.max_tokens - emitted_before
        drafted = len(chunk) - pending
        allowed = max(0, min(case.k, remaining - 1))
        if drafted > allowed:
            _fail(
                name,
                f"pass {number} scored {drafted} drafts with {remaining} tokens left of "
                f"max_tokens={case.max_tokens} (k={case.k}); at most {allowed} can be used",
            )


def check_eos_and_stop_strings(impl: Implementation, case: GenerationCase) -> None:
    """EOS ends generation without being emitted; a stop string cuts the text before it and
    the ids with it (greedy: exactly plain greedy output cut there; sampled: neither ever
    appears in the output)."""
    name = "eos_and_stop_strings"
    tok, make_target = _setup(case)
    seed = int(case.params.get("seed", 0))
    reference_ids = _greedy_chain(case, make_target, case.max_tokens)
    eos = reference_ids[seed % len(reference_ids)]
    out = _speculative(name, impl, case, make_target(), tok, make_target=make_target, eos_ids=[eos])
    ids = [int(t) for t in out.ids]
    if eos in ids:
        _fail(name, f"EOS id {eos} was emitted: {ids}")
    if case.greedy:
        first = reference_ids.index(eos)
        if ids != reference_ids[:first] or out.finish_reason != "eos":
            _fail(
                name,
                f"EOS id {eos}: got {ids} ({out.finish_reason!r}); plain greedy cut at its "
                f"first EOS is {reference_ids[:first]} ('eos')",
            )
    text = tok.decode(reference_ids)
    if not text:
        return
    at = seed % len(text)
    stop = text[at : at + 1 + seed % 2]
    out = _speculative(name, impl, case, make_target(), tok, make_target=make_target, stop=(stop,))
    if stop in out.text:
        _fail(name, f"stop string {stop!r} is in the text {out.text!r}")
    if tok.decode(list(out.ids)) != out.text:
        _fail(
            name,
            f"ids {list(out.ids)} decode to {tok.decode(list(out.ids))!r}, "
            f"not the text {out.text!r}",
        )
    if case.greedy:
        cut = text.index(stop)
        if out.text != text[:cut] or out.finish_reason != "stop":
            _fail(
                name,
                f"stop string {stop!r}: got {out.text!r} ({out.finish_reason!r}); plain greedy "
                f"text cut before it is {text[:cut]!r} ('stop')",
            )


def check_logprobs_equal_plain(impl: Implementation, case: GenerationCase) -> None:
    """The reported logprobs are the target's: equal to a fresh full pass's log-softmax at the
    emitted ids, and (greedy) equal to plain ``generate``'s."""
    name = "logprobs_equal_plain"
    from spec_verify.reference import token_logprobs

    tok, make_target = _setup(case)
    out = _speculative(name, impl, case, make_target(), tok, make_target=make_target)
    ids = [int(t) for t in out.ids]
    if len(out.logprobs) != len(ids):
        _fail(name, f"{len(out.logprobs)} logprobs for {len(ids)} ids")
    if ids:
        model = make_target()
        rows = model.forward([*case.prompt, *ids], model.new_cache(), 0)
        L = len(case.prompt)
        expected = token_logprobs(rows[L - 1 : L - 1 + len(ids)], ids)
        worst = max(abs(a - b) for a, b in zip(out.logprobs, expected, strict=True))
        if not worst <= 1e-9:
            _fail(
                name,
                f"logprobs {list(out.logprobs)} differ from the target's {expected} "
                f"by up to {worst:.3g}",
            )
    if case.greedy:
        module = generation_module(impl)
        p = _call(name, impl.params, **case.params)
        plain = _run_generation(name, module.generate, make_target(), tok, list(case.prompt), p)
        if list(plain.ids) == ids and (
            len(plain.logprobs) != len(ids)
            or not all(
                math.isclose(a, b, rel_tol=0, abs_tol=1e-12)
                for a, b in zip(out.logprobs, plain.logprobs, strict=True)
            )
        ):
            _fail(
                name,
                f"greedy logprobs {list(out.logprobs)} differ from plain generate's "
                f"{list(plain.logprobs)}",
            )


def _verify_tree(name: str, impl: Implementation, case: TreeCase) -> tuple[list[int], list[int]]:
    """``verify_tree`` on the case; the adapters check that the nodes are a path down from the
    root carrying the emitted tokens and that ids are in range (a breach is a violation)."""
    if not isinstance(impl, TreeImplementation):
        _fail(name, f"{impl.name} offers verify_tree but has no verify_tree method")
    r = case.round
    p = _call(name, impl.params, **case.params)
    rng = None if case.temperature == 0.0 else np.random.default_rng(case.seed)
    result: tuple[list[int], list[int]] = _call(
        name, impl.verify_tree, case.target_logits, list(r.parents), list(r.token_ids),
        case.draft_probs, p, [], rng, [], rule=r.rule,
    )  # fmt: skip
    return result


def check_tree_result_is_a_path(impl: Implementation, case: TreeCase) -> None:
    """``verify_tree`` returns accepted nodes that form a path down from the root, carrying the
    emitted tokens in order, and one more token than nodes, every id in ``[0, V)``."""
    _verify_tree("tree_result_is_a_path", impl, case)


def check_tree_no_zero_probability_tokens(impl: Implementation, case: TreeCase) -> None:
    """No token ``verify_tree`` emits has target probability 0 at its place: the root's row for
    the first, then the row of the node accepted before it."""
    name = "tree_no_zero_probability_tokens"
    emitted, nodes = _verify_tree(name, impl, case)
    rows = [0, *(node + 1 for node in nodes)]
    for position, (token, row) in enumerate(zip(emitted, rows, strict=False)):
        target = case.round.p_rows[row]
        if case.temperature == 0.0:
            top = max(target)
            allowed = target.index(top) == token
        else:
            allowed = target[token] > 0
        if not allowed:
            _fail(
                name,
                f"emitted {emitted} (nodes {nodes}): token {token} at position {position} "
                f"{'is not the argmax of' if case.temperature == 0.0 else 'has probability 0 in'}"
                f" target row {row}",
            )


TREE_PROPERTIES: dict[str, Callable[[Implementation, TreeCase], None]] = {
    "tree_result_is_a_path": check_tree_result_is_a_path,
    "tree_no_zero_probability_tokens": check_tree_no_zero_probability_tokens,
}


GENERATION_PROPERTIES: dict[str, Callable[[Implementation, GenerationCase], None]] = {
    "cache_holds_kept_positions": check_cache_holds_kept_positions,
    "greedy_speculative_equals_plain": check_greedy_speculative_equals_plain,
    "max_tokens_respected": check_max_tokens_respected,
    "eos_and_stop_strings": check_eos_and_stop_strings,
    "logprobs_equal_plain": check_logprobs_equal_plain,
}

PROPERTIES: tuple[str, ...] = (
    *VERIFY_PROPERTIES,
    "prompt_lookup_rules",
    *GENERATION_PROPERTIES,
    *TREE_PROPERTIES,
)
