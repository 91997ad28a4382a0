"""The contract tier: shapes, types, id ranges, and the errors on a table of bad arguments.

``calls`` comes first: one minimal valid call of each function the implementation offers. A
crash, a hang or garbage there fails it, and the runner skips the later tiers (they would only
report the same crash again). ``inputs`` makes valid calls on which the usual in-place
shortcuts change something (-inf logits, a temperature, draft rows a hair off 1) and asks that
every input come back bitwise as given: the caller owns them (an engine reuses its logits and
draft buffers; vLLM PR #16952 divided the caller's tensor in place). ``shapes`` then runs
generated valid cases and checks what comes back; ``errors`` runs ``BAD_ARGUMENTS``: every row
must raise a ``ValueError`` whose message names the argument.
"""

from __future__ import annotations

import copy
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._implementations import Implementation, TreeImplementation
from spec_verify.errors import ImplementationError
from spec_verify.profiles import RunContext, not_applicable_in
from spec_verify.results import CheckResult, Progress, Status
from spec_verify.tiers._cases import ParityCase, case_seeds, lookup_case, verify_case
from spec_verify.uniforms import ScriptedUniforms

__all__ = ["BAD_ARGUMENTS", "BadArgument", "run_contract_tier"]


# ---- the bad-argument table ----------------------------------------------------------------

_V = 4
_ROWS = np.array([[0.0, 1.0, 0.5, -1.0], [0.2, 0.1, 2.0, 0.0], [1.0, 0.0, 0.0, 0.3]])
_Q = np.array([[0.1, 0.6, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]])
_IDS = [1, 2]


def _with(array: NDArray[np.float64], where: tuple[int, int], value: float) -> Any:
    out = array.copy()
    out[where] = value
    return out


def _verify(
    rows: Any = _ROWS,
    ids: Any = _IDS,
    q: Any = _Q,
    history: Any = (),
    prompt: Any = (),
    rng: Any = "default",
    **fields: Any,
) -> Callable[[Any], Any]:
    def call(impl: Implementation) -> Any:
        source = ScriptedUniforms(then=0.5) if rng == "default" else rng
        return impl.verify_draft(
            rows, ids, q, impl.params(**fields), list(history), source, list(prompt)
        )

    return call


def _distribution(logits: Any, history: Any = (), prompt: Any = ()) -> Callable[[Any], Any]:
    def call(impl: Implementation) -> Any:
        return impl.sampling_distribution(logits, impl.params(), list(history), list(prompt))

    return call


def _make_params(**fields: Any) -> Callable[[Any], Any]:
    return lambda impl: impl.params(**fields)


def _lookup(k: int = 2, max_ngram: int = 3, min_ngram: int = 1) -> Callable[[Any], Any]:
    return lambda impl: impl.prompt_lookup([1, 2, 3, 1, 2], k, max_ngram, min_ngram)


@dataclass(frozen=True)
class BadArgument:
    """One row: the bad call must raise a ValueError whose message matches ``names``."""

    label: str
    needs: str  # the capability the call uses
    names: str  # a regex the message must match (the argument's name)
    call: Callable[[Any], Any]


_NAN = math.nan
_INF = math.inf
_ALL_BANNED = np.full((3, _V), -_INF)

BAD_ARGUMENTS: tuple[BadArgument, ...] = (
    BadArgument("target_logits with m rows, not m + 1", "verify_draft", "target_logits",
                _verify(rows=_ROWS[:2])),
    BadArgument("target_logits 1-D", "verify_draft", "target_logits", _verify(rows=_ROWS[0])),
    BadArgument("target_logits with NaN", "verify_draft", "logits",
                _verify(rows=_with(_ROWS, (1, 2), _NAN))),
    BadArgument("target_logits with NaN, greedy", "verify_draft", "logits",
                _verify(rows=_with(_ROWS, (0, 0), _NAN), temperature=0.0)),
    BadArgument("target_logits with +inf", "verify_draft", "logits",
                _verify(rows=_with(_ROWS, (0, 1), _INF))),
    BadArgument("target_logits row all -inf", "verify_draft", "logits",
                _verify(rows=_ALL_BANNED)),
    BadArgument("draft id == V", "verify_draft", "draft_ids", _verify(ids=[1, _V])),
    BadArgument("draft id negative", "verify_draft", "draft_ids", _verify(ids=[-1, 2])),
    BadArgument("draft id out of range, greedy", "verify_draft", "draft_ids",
                _verify(ids=[9, 2], temperature=0.0)),
    BadArgument("history id out of range", "verify_draft", "history", _verify(history=[0, _V])),
    BadArgument("prompt id out of range", "verify_draft", "prompt", _verify(prompt=[_V + 3])),
    BadArgument("draft_probs of shape (m, V - 1)", "verify_draft", "draft_probs",
                _verify(q=_Q[:, :3])),
    BadArgument("draft_probs of shape (m + 1, V)", "verify_draft", "draft_probs",
                _verify(q=np.vstack([_Q, _Q[:1]]))),
    BadArgument("draft_probs negative", "verify_draft", "draft_probs",
                _verify(q=np.array([[0.5, 0.6, 0.0, -0.1], [0.25, 0.25, 0.25, 0.25]]))),
    BadArgument("draft_probs NaN", "verify_draft", "draft_probs",
                _verify(q=_with(_Q, (1, 0), _NAN))),
    BadArgument("draft_probs row summing to 0.5", "verify_draft", "draft_probs",
                _verify(q=np.array([[0.1, 0.2, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25]]))),
    BadArgument("draft_probs q(x) = 0", "verify_draft", "draft_probs",
                _verify(q=np.array([[0.5, 0.0, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]]))),
    BadArgument("sampled without a uniform source", "verify_draft", "rng", _verify(rng=None)),
    BadArgument("sampling_distribution with NaN", "sampling_distribution", "logits",
                _distribution([0.0, _NAN, 1.0])),
    BadArgument("sampling_distribution all -inf", "sampling_distribution", "logits",
                _distribution([-_INF, -_INF])),
    BadArgument("sampling_distribution with +inf", "sampling_distribution", "logits",
                _distribution([0.0, _INF])),
    BadArgument("sampling_distribution history id out of range", "sampling_distribution",
                "history", _distribution([0.0, 1.0], history=[2])),
    BadArgument("sampling_distribution prompt id out of range", "sampling_distribution",
                "prompt", _distribution([0.0, 1.0], prompt=[-1])),
    BadArgument("temperature -1", "verify_draft", "temperature", _make_params(temperature=-1.0)),
    BadArgument("temperature NaN", "verify_draft", "temperature", _make_params(temperature=_NAN)),
    BadArgument("top_k -1", "verify_draft", "top_k", _make_params(top_k=-1)),
    BadArgument("top_p 0", "verify_draft", "top_p", _make_params(top_p=0.0)),
    BadArgument("top_p 1.5", "verify_draft", "top_p", _make_params(top_p=1.5)),
    BadArgument("min_p -0.1", "verify_draft", "min_p", _make_params(min_p=-0.1)),
    BadArgument("min_p 1.5", "verify_draft", "min_p", _make_params(min_p=1.5)),
    BadArgument("repetition_penalty 0", "verify_draft", "repetition_penalty",
                _make_params(repetition_penalty=0.0)),
    BadArgument("presence_penalty inf", "verify_draft", "presence_penalty",
                _make_params(presence_penalty=_INF)),
    BadArgument("frequency_penalty NaN", "verify_draft", "frequency_penalty",
                _make_params(frequency_penalty=_NAN)),
    BadArgument("prompt lookup k = -1", "prompt_lookup", r"\bk\b", _lookup(k=-1)),
    BadArgument("prompt lookup min_ngram = 0", "prompt_lookup", "min_ngram",
                _lookup(min_ngram=0)),
    BadArgument("prompt lookup max_ngram < min_ngram", "prompt_lookup", "ngram",
                _lookup(max_ngram=1, min_ngram=2)),
    BadArgument("pcg32 seed -1", "pcg32", "seed|initstate",
                lambda impl: impl.pcg32_uniforms(-1, 4)),
    BadArgument("pcg32 seed 2**64", "pcg32", "seed|initstate",
                lambda impl: impl.pcg32_uniforms(2**64, 4)),
)  # fmt: skip


def _check_errors(impl: Implementation, capabilities: frozenset[str], start: float) -> CheckResult:
    failures: list[str] = []
    ran = 0
    for row in BAD_ARGUMENTS:
        if row.needs not in capabilities:
            continue
        ran += 1
        try:
            row.call(impl)
        except ImplementationError as exc:
            failures.append(f"{row.label}: the implementation failed: {exc}")
        except ValueError as exc:
            if not re.search(row.names, str(exc)):
                failures.append(
                    f"{row.label}: raised {type(exc).__name__} without naming the argument "
                    f"({row.names}): {exc}"
                )
        except Exception as exc:
            failures.append(f"{row.label}: raised {type(exc).__name__} (not a ValueError): {exc}")
        else:
            failures.append(f"{row.label}: did not raise")
    seconds = time.perf_counter() - start
    if not failures:
        return CheckResult(
            "contract",
            "errors",
            Status.PASSED,
            f"{ran} bad arguments: each raised a ValueError naming the argument",
            n=ran,
            seconds=seconds,
        )
    return CheckResult(
        "contract",
        "errors",
        Status.FAILED,
        f"{len(failures)} of {ran} bad arguments were not rejected as the contract says: "
        + "; ".join(failures[:4])
        + (" ..." if len(failures) > 4 else ""),
        n=ran,
        details={"failures": failures},
        seconds=seconds,
    )


# ---- minimal calls and shapes --------------------------------------------------------------


def _verify_problem(  # noqa: PLR0911 -- one return per rule reads best
    case: ParityCase, result: Any, drawn: int
) -> str | None:
    """What is wrong with a verify_draft result, or None."""
    if not isinstance(result, tuple) or len(result) != 2:
        return f"returned {result!r}; the contract is (emitted_ids, n_accepted)"
    emitted, n = result
    if not isinstance(emitted, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) for t in emitted
    ):
        return f"emitted_ids {emitted!r} is not a list of ints"
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= case.m:
        return f"n_accepted {n!r} is not an int in [0, m={case.m}]"
    if len(emitted) != n + 1:
        return f"{len(emitted)} ids emitted with n_accepted={n}; it must be n_accepted + 1"
    if list(emitted[:n]) != list(case.draft_ids[:n]):
        return f"the kept prefix {emitted[:n]} is not the drafts {list(case.draft_ids[:n])}"
    if not all(0 <= t < case.V for t in emitted):
        return f"ids {emitted} out of [0, {case.V})"
    if case.greedy and drawn:
        return f"drew {drawn} uniforms at temperature 0 (greedy draws none)"
    return None


def _distribution_problem(row: NDArray[np.float64], greedy: bool, probs: Any) -> str | None:
    values = np.asarray(probs)
    if values.shape != row.shape or values.dtype.kind != "f":
        return (
            f"returned shape {values.shape}, dtype {values.dtype}; it must be ({row.size},) floats"
        )
    if not np.isfinite(values).all() or (values < 0).any():
        return "returned negative or non-finite probabilities"
    if abs(float(values.sum()) - 1.0) > 1e-9:
        return f"returned probabilities summing to {float(values.sum())!r}"
    if (values[np.isneginf(row)] > 0).any():
        return "gave a banned (-inf) token a positive probability"
    if greedy and sorted(values.tolist())[-1] != 1.0:
        return "at temperature 0 the distribution is not one-hot"
    return None


def _check_calls(impl: Implementation, capabilities: frozenset[str], start: float) -> CheckResult:
    """One minimal valid call of each offered function (the gate for the later tiers)."""
    problems: list[str] = []
    errors = 0
    probes: list[tuple[str, Callable[[], str | None]]] = []
    greedy_case = ParityCase(
        case_seed=-1,
        target_logits=_ROWS,
        draft_ids=tuple(_IDS),
        draft_probs=None,
        params={"temperature": 0.0},
        history=(),
        prompt=(),
        uniforms=(),
    )
    sampled_case = ParityCase(
        case_seed=-2,
        target_logits=_ROWS,
        draft_ids=tuple(_IDS),
        draft_probs=_Q,
        params={},
        history=(0,),
        prompt=(3,),
        uniforms=(0.25, 0.5, 0.75, 0.125, 0.625),
    )

    def probe_verify(case: ParityCase) -> Callable[[], str | None]:
        def run() -> str | None:
            source = ScriptedUniforms(case.uniforms, then=0.5)
            result = impl.verify_draft(
                case.target_logits,
                list(case.draft_ids),
                case.draft_probs,
                impl.params(**case.params),
                list(case.history),
                source,
                list(case.prompt),
            )
            return _verify_problem(case, result, source.drawn)

        return run

    if "verify_draft" in capabilities:
        if "greedy" in capabilities:  # a sampled-only implementation has no greedy path
            probes.append(("verify_draft (greedy)", probe_verify(greedy_case)))
        # an implementation with its own randomness ignores the scripted source: still a call
        probes.append(("verify_draft (sampled)", probe_verify(sampled_case)))
    if "sampling_distribution" in capabilities:
        probes.append(
            (
                "sampling_distribution",
                lambda: _distribution_problem(
                    _ROWS[0], False, impl.sampling_distribution(_ROWS[0], impl.params(), [1], [2])
                ),
            )
        )
    if "prompt_lookup" in capabilities:

        def lookup() -> str | None:
            got = impl.prompt_lookup([1, 2, 3, 9, 1, 2], 3, 3, 1)
            return None if isinstance(got, list) else f"returned {got!r}, not a list"

        probes.append(("prompt_lookup", lookup))
    if "pcg32" in capabilities:

        def pcg() -> str | None:
            got = impl.pcg32_uniforms(42, 4)
            ok = len(got) == 4 and all(isinstance(u, float) and 0.0 <= u < 1.0 for u in got)
            return None if ok else f"returned {got!r}; 4 floats in [0, 1) were asked for"

        probes.append(("pcg32_uniforms", pcg))
    for label, probe in probes:
        try:
            problem = probe()
        except ImplementationError as exc:
            errors += 1
            problems.append(f"{label}: {exc.reason}")
            continue
        except ValueError as exc:
            problem = f"raised {type(exc).__name__} on valid input: {exc}"
        except Exception as exc:
            errors += 1
            problem = f"raised {type(exc).__name__}: {exc}"
        if problem:
            problems.append(f"{label}: {problem}")
    seconds = time.perf_counter() - start
    if not problems:
        return CheckResult(
            "contract",
            "calls",
            Status.PASSED,
            f"{len(probes)} minimal calls returned well-formed results",
            n=len(probes),
            seconds=seconds,
        )
    return CheckResult(
        "contract",
        "calls",
        Status.ERROR if errors else Status.FAILED,
        "minimal valid calls failed: " + "; ".join(problems),
        n=len(probes),
        details={"problems": problems},
        seconds=seconds,
    )


def _check_shapes(
    impl: Implementation, capabilities: frozenset[str], seed: int, n: int, start: float
) -> CheckResult:
    problems: list[str] = []
    counted = 0
    seeds = case_seeds(seed + 7_777, n)
    for case_seed in seeds:
        case = verify_case(case_seed)
        try:
            if "verify_draft" in capabilities and ("greedy" in capabilities or not case.greedy):
                source = ScriptedUniforms(case.uniforms, then=0.5)
                result = impl.verify_draft(
                    case.target_logits,
                    list(case.draft_ids),
                    case.draft_probs,
                    impl.params(**case.params),
                    list(case.history),
                    source,
                    list(case.prompt),
                )
                counted += 1
                problem = _verify_problem(case, result, source.drawn)
                if problem:
                    problems.append(f"verify_draft case {case_seed}: {problem}")
            if "sampling_distribution" in capabilities:
                probs = impl.sampling_distribution(
                    case.target_logits[0],
                    impl.params(**case.params),
                    list(case.history),
                    list(case.prompt),
                )
                counted += 1
                problem = _distribution_problem(case.target_logits[0], case.greedy, probs)
                if problem:
                    problems.append(f"sampling_distribution case {case_seed}: {problem}")
            if "prompt_lookup" in capabilities:
                lc = lookup_case(case_seed)
                got = impl.prompt_lookup(list(lc.ctx), lc.k, lc.max_ngram, lc.min_ngram)
                counted += 1
                bound = min(lc.k, max(0, len(lc.ctx) - 1))
                if not isinstance(got, list) or len(got) > bound or not set(got) <= set(lc.ctx):
                    problems.append(
                        f"prompt_lookup case {case_seed}: returned {got!r} for k={lc.k}, "
                        f"ctx={list(lc.ctx)}: at most min(k, len(ctx) - 1) ids from ctx"
                    )
        except ImplementationError as exc:
            problems.append(f"case {case_seed}: {exc}")
            break
        except ValueError as exc:
            problems.append(f"case {case_seed}: raised {type(exc).__name__} on valid input: {exc}")
        if len(problems) >= 20:
            break
    seconds = time.perf_counter() - start
    if not problems:
        return CheckResult(
            "contract",
            "shapes",
            Status.PASSED,
            f"{counted} results on generated valid cases: lengths, types, ranges, the kept "
            "prefix, normalised distributions, lookup bounds",
            n=counted,
            seconds=seconds,
        )
    first = problems[0]
    found = re.search(r"case (\d+)", first)
    failing_seed = int(found.group(1)) if found else None
    return CheckResult(
        "contract",
        "shapes",
        Status.FAILED,
        f"{len(problems)} malformed results; the first: {first}",
        n=counted,
        details={"problems": problems, "case_seed": failing_seed},
        seconds=seconds,
    )


# ---- inputs belong to the caller ----------------------------------------------------------

# Valid inputs on which the usual in-place shortcuts change something: -inf logits (a
# "sanitising" rewrite to a large finite value), a temperature other than 1 (``logits /= t``),
# draft rows summing to 1 - 1e-9, within the contract's tolerance (an in-place renormalisation,
# the ``div_`` of vLLM PR #16952), non-empty history and prompt (an append).
_INPUT_ROWS = np.array(
    [[0.5, -_INF, 1.5, 0.0, -1.0], [2.0, 0.25, -_INF, 1.0, 0.0], [-_INF, 1.0, 0.5, 3.0, -2.0]]
)
_INPUT_Q = np.array([[0.3, 0.2, 0.1, 0.4 - 1e-9, 0.0], [0.25, 0.25, 0.125, 0.375, 0.0]])
_INPUT_IDS = (3, 0)


def _input_probes(capabilities: frozenset[str]) -> list[tuple[str, str, tuple[Any, ...]]]:
    """(label, call, arguments) of each probe the implementation offers; the arguments hold
    the parameters as a dict (built with ``impl.params`` at the call)."""
    rows, q, ids = _INPUT_ROWS, _INPUT_Q, list(_INPUT_IDS)
    probes: list[tuple[str, str, tuple[Any, ...]]] = []
    if "verify_draft" in capabilities:
        probes += [
            ("verify_draft (sampled)", "verify_draft",
             (rows, ids, q, {"temperature": 0.7, "top_k": 3}, [1, 3], [4, 0])),
            ("verify_draft (deterministic draft)", "verify_draft",
             (rows, ids, None, {"temperature": 1.5, "min_p": 0.05}, [2], [])),
        ]  # fmt: skip
        if "greedy" in capabilities:
            probes.append(("verify_draft (greedy)", "verify_draft",
                           (rows, ids, q, {"temperature": 0.0}, [0], [1])))  # fmt: skip
    if "sampling_distribution" in capabilities:
        probes.append(("sampling_distribution", "sampling_distribution",
                       (rows[0], {"temperature": 0.7, "top_p": 0.9}, [1], [2])))  # fmt: skip
    if "verify_tree" in capabilities:
        # two children of the root, one grandchild (CONTRACT.md section 6): n + 1 = 4 rows
        tree_rows = np.vstack([rows, rows[:1]])
        tree_q = [q[0].copy(), q[1].copy(), None, None]
        probes.append(("verify_tree (sampled)", "verify_tree",
                       (tree_rows, [-1, -1, 0], [3, 0, 1], tree_q,
                        {"temperature": 0.7, "top_k": 3}, [1], [4])))  # fmt: skip
    return probes


def _input_call(impl: Implementation, call: str, args: tuple[Any, ...]) -> None:
    if call == "verify_draft":
        rows, ids, q, fields, history, prompt = args
        impl.verify_draft(rows, ids, q, impl.params(**fields), history,
                          ScriptedUniforms((), then=0.5), prompt)  # fmt: skip
    elif call == "verify_tree":
        rows, parents, tokens, q, fields, history, prompt = args
        if not isinstance(impl, TreeImplementation):  # declared, yet no verify_tree method
            raise ImplementationError(impl.name, "verify_tree", "is declared but not offered")
        impl.verify_tree(rows, parents, tokens, q, impl.params(**fields), history,
                         ScriptedUniforms((), then=0.5), prompt)  # fmt: skip
    else:
        logits, fields, history, prompt = args
        impl.sampling_distribution(logits, impl.params(**fields), history, prompt)


_INPUT_NAMES = {
    "verify_draft": ("target_logits", "draft_ids", "draft_probs", None, "history", "prompt"),
    "sampling_distribution": ("logits", None, "history", "prompt"),
    "verify_tree": ("target_logits", "parents", "token_ids", "draft_probs", None, "history",
                    "prompt"),
}  # fmt: skip


def _check_inputs(impl: Implementation, capabilities: frozenset[str], start: float) -> CheckResult:
    """Valid calls must leave every input as it was given, bitwise.

    The adapters hand a Python implementation its own copies and compare them after the call
    (``_remote.call_checked``), and the C ABI path compares its const arrays: a write is an
    ``ImplementationError`` naming the argument. This check also compares the harness's own
    arrays after each call, so an adapter that passed them through unguarded is caught too.
    """
    from spec_verify.adapters._remote import input_change

    problems: list[str] = []
    probes = _input_probes(capabilities)
    for label, call, args in probes:
        given = [copy.deepcopy(a) if isinstance(a, (list, np.ndarray)) else a for a in args]
        try:
            _input_call(impl, call, tuple(given))
        except ImplementationError as exc:
            problems.append(f"{label}: {exc.reason}")
            continue
        except ValueError as exc:
            problems.append(f"{label}: raised {type(exc).__name__} on valid input: {exc}")
            continue
        for name, before, after in zip(_INPUT_NAMES[call], args, given, strict=True):
            change = None if name is None else input_change(before, after, name)
            if change is not None:
                problems.append(f"{label}: modified its input {change}")
                break
    seconds = time.perf_counter() - start
    if not problems:
        return CheckResult(
            "contract", "inputs", Status.PASSED,
            f"{len(probes)} valid calls with -inf logits, a temperature, draft rows a hair off "
            "1, history and prompt: every input came back bitwise as it was given",
            n=len(probes), seconds=seconds,
        )  # fmt: skip
    return CheckResult(
        "contract", "inputs", Status.FAILED,
        f"{len(problems)} of {len(probes)} valid calls changed what they were given (inputs "
        "belong to the caller: an engine reuses its logits and draft buffers): "
        + problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
        n=len(probes), details={"problems": problems}, seconds=seconds,
    )  # fmt: skip


def run_contract_tier(
    impl: Implementation,
    *,
    seed: int = 0,
    quick: bool = False,
    progress: Progress | None = None,
    run: RunContext | None = None,
    **options: Any,
) -> list[CheckResult]:
    """The contract tier: ``calls`` (the gate), ``inputs``, ``shapes`` and ``errors`` (not
    computed when the ``run`` does not ask it: a conformance check, under ``lossless``)."""
    capabilities = impl.capabilities
    calls = _check_calls(impl, capabilities, time.perf_counter())
    if not calls.status.ok:
        return [calls]
    if progress:
        progress("contract: inputs left as given")
    inputs = _check_inputs(impl, capabilities, time.perf_counter())
    if progress:
        progress("contract: shapes of generated cases")
    shapes = _check_shapes(impl, capabilities, seed, 100 if quick else 300, time.perf_counter())
    errors = not_applicable_in(run, "contract", "errors")
    if errors is None:
        if progress:
            progress("contract: the bad-argument table")
        errors = _check_errors(impl, capabilities, time.perf_counter())
    return [calls, inputs, shapes, errors]
