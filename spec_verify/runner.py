"""The check runner: every tier an implementation supports, in order, as one report.

The CLI (``spec-verify check``) and the pytest plugin are thin faces over ``run_checks``. The
phases (ARCHITECTURE.md): load → contract → greedy → exact → parity → properties →
statistical → generation → report. A load failure ends the run as one failed check; so does a
crash or hang on the contract tier's first minimal calls (the later tiers are skipped rather
than reporting the same crash once each). A tier that raises is one ERROR result: the run
always finishes.

Tiers are found through one registry (``spec_verify.tiers.TIERS``), each by one entry point
with one signature; an entry point that does not resolve is an ERROR of its tier. Whether a
result blocks the run is decided in one place, ``CheckReport.blocks``, which the summary, the
exit code, JSON and JUnit all read.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import re
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from spec_verify.adapters import Implementation, load_implementation
from spec_verify.adapters._implementations import apply_capabilities, check_capabilities
from spec_verify.errors import (
    BudgetExhausted,
    ImplementationError,
    InvalidArgument,
    UnknownImplementation,
)
from spec_verify.profiles import (
    Claim,
    Profile,
    RunContext,
    claim_of,
    not_applicable_reason,
    parse_profile,
    why_claim,
)
from spec_verify.repro import repro_command
from spec_verify.results import CheckResult, ExitCode, Progress, Status
from spec_verify.seeds import check_seed
from spec_verify.tiers import TIER_NAMES, TIERS, TierEntryPointError, TierSpec, resolve_entry_point
from spec_verify.tiers._rules import check_rule

__all__ = [
    "DEFAULT_BUDGET",
    "TIERS",
    "CheckReport",
    "TierSpec",
    "repro_command",
    "run_checks",
]



def result_blocks(result: CheckResult, profile: Profile, allow_not_provable: bool,
                  rule: str = "token") -> bool:
    """Whether ``result`` keeps a run under ``profile`` from passing (``CheckReport.blocks``
    says the rule; ``run_checks(fail_fast=True)`` stops on the first such result)."""
    if result.status is Status.NOT_APPLICABLE:
        return False
    lossless = profile is Profile.LOSSLESS
    if (lossless or rule != "token") and claim_of(result.tier, result.name) is Claim.EFFICIENCY:
        return False  # another rule's efficiency is not the token rule's: reported only
    if result.status is Status.NOT_PROVABLE:
        return not (allow_not_provable or lossless)
    return not result.status.ok


_GATE = ("contract", "calls")  # a crash on the first minimal calls skips the later tiers


def _round_shape(result: CheckResult) -> tuple[str, int] | None:
    """What rounds a law check that ran judged: a description and the most drafts one of its
    rounds had; None for other checks."""
    ran = (Status.PASSED, Status.FAILED, Status.NOT_PROVABLE)
    if claim_of(result.tier, result.name) is not Claim.LAW or result.status not in ran:
        return None
    if result.tier == "exact":
        drafts = sorted({int(c["drafts"]) for c in result.details.get("cases", [])
                         if "drafts" in c})
        if not drafts:
            return None
        plural = "draft" if drafts == [1] else "drafts"
        return f"rounds of {', '.join(map(str, drafts))} {plural}, exactly", drafts[-1]
    if result.tier == "statistical":
        for pattern, shape in _STATISTICAL_SHAPES:
            if (match := re.fullmatch(pattern, result.name)) is not None:
                return shape(match)
    return None


# The statistical tier's law checks by name (their names are stable: tests/tiers).
_STATISTICAL_SHAPES: list[tuple[str, Callable[[re.Match[str]], tuple[str, int]]]] = [
    (r"first_token\..*", lambda m: ("one draft, the first token", 1)),
    (r"sequence\.law_k(\d+)(_deterministic)?", lambda m: (
        f"a chain of {m.group(1)} {'deterministic ' if m.group(2) else ''}drafts, everything "
        "it emits", int(m.group(1)))),
    (r"tree\.b(\d+)_d(\d+).*", lambda m: (
        f"trees of {m.group(1)} branches, depth {m.group(2)}", int(m.group(2)))),
    (r"generation\..*", lambda m: ("whole generations, rounds of up to 3 drafts", 3)),
]


@dataclass(frozen=True)
class CheckReport:
    """The results of one ``spec-verify check`` run."""

    impl: str
    seed: int
    tiers: tuple[str, ...]
    results: tuple[CheckResult, ...]
    seconds: float
    quick: bool = False
    tier_seconds: dict[str, float] = field(default_factory=dict)
    allow_not_provable: bool = False
    profile: Profile = Profile.CONFORMANCE
    capabilities: tuple[str, ...] = ()
    # which protections held around the implementation's code (``spec_verify._sandbox``), None
    # when it ran in this process or none of it ran (a spec refused before any worker started)
    sandbox: dict[str, Any] | None = None
    # the verification rule conformance was asked of (``check --rule``; CONTRACT.md 3, 8, 9)
    rule: str = "token"

    def blocks(self, result: CheckResult) -> bool:
        """The one verdict rule: whether ``result`` keeps this run from passing.

        FAILED and ERROR block; NOT_APPLICABLE, PASSED and SKIPPED (a capability the
        implementation does not offer) do not. NOT_PROVABLE blocks under the conformance
        profile unless ``allow_not_provable`` (the exact tier proved nothing there); under the
        lossless profile it does not (the statistical tier's evidence decides, and the report
        shows it). Under the lossless profile an efficiency check (``profiles.Claim``) never
        blocks. The summary, the exit code, JSON and JUnit all read this.
        """
        return result_blocks(result, self.profile, self.allow_not_provable, self.rule)

    def law_checks_passed(self) -> bool:
        """Whether the run fails only on conformance (and efficiency) checks, every law check
        having passed: then the implementation may be lossless but not a port of the contract's
        mechanics, and ``--profile lossless`` asks the question it answers."""
        failing = self.failures()
        if self.profile is not Profile.CONFORMANCE:
            return False
        return bool(failing) and all(
            claim_of(r.tier, r.name) is not Claim.LAW and r.status is not Status.ERROR
            for r in failing
        ) and any(r.status is Status.PASSED and claim_of(r.tier, r.name) is Claim.LAW
                  for r in self.results)

    @property
    def passed(self) -> bool:
        """True when the run checked something and no result blocks it."""
        return bool(self.results) and not self.failures()

    @property
    def exit_code(self) -> ExitCode:
        """The process exit code this report calls for."""
        return ExitCode.PASSED if self.passed else ExitCode.FAILED

    def counts(self) -> dict[str, int]:
        out = {status.value: 0 for status in Status}
        for result in self.results:
            out[result.status.value] += 1
        return out

    def failures(self) -> list[CheckResult]:
        """The checks that keep the run from passing (``blocks``), in run order."""
        return [r for r in self.results if self.blocks(r)]

    def evidence(self) -> dict[str, Any]:
        """What the run established, by kind: proven exactly, tested statistically (at which
        alpha and power), not applicable (and why), and the efficiency checks, reported apart."""
        proven = [f"{r.tier}/{r.name}" for r in self.results
                  if r.tier == "exact" and r.status is Status.PASSED]
        tested = [
            {
                "check": f"{r.tier}/{r.name}",
                "status": r.status.value,
                "alpha": r.alpha,
                "power": r.details.get("power"),
                "delta": r.details.get("delta"),
                "n": r.n,
            }
            for r in self.results
            if r.tier == "statistical" and r.status in (Status.PASSED, Status.FAILED)
            and claim_of(r.tier, r.name) is Claim.LAW
        ]
        not_applicable = {f"{r.tier}/{r.name}": r.message for r in self.results
                          if r.status is Status.NOT_APPLICABLE}
        efficiency = [
            {
                "check": f"{r.tier}/{r.name}",
                "status": r.status.value,
                "why": why_claim(r.tier, r.name),
            }
            for r in self.results
            if claim_of(r.tier, r.name) is Claim.EFFICIENCY
        ]
        not_provable = [f"{r.tier}/{r.name}" for r in self.results
                        if r.status is Status.NOT_PROVABLE]
        shapes = {f"{r.tier}/{r.name}": shape for r in self.results
                  if (shape := _round_shape(r)) is not None}
        return {
            "round_shapes": shapes,
            "multi_draft_law_tested": any(most >= 2 for _, most in shapes.values()),
            "proven_exactly": proven,
            "tested_statistically": tested,
            "not_applicable": not_applicable,
            "not_provable": not_provable,
            "efficiency": efficiency,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "impl": self.impl,
            "seed": self.seed,
            "quick": self.quick,
            "allow_not_provable": self.allow_not_provable,
            "profile": self.profile.value,
            "rule": self.rule,
            "capabilities": list(self.capabilities),
            "sandbox": self.sandbox,
            "tiers": list(self.tiers),
            "passed": self.passed,
            "exit_code": int(self.exit_code),
            "counts": self.counts(),
            "blocking": [f"{r.tier}/{r.name}" for r in self.failures()],
            "evidence": self.evidence(),
            "only_conformance_failed": self.law_checks_passed(),
            "seconds": self.seconds,
            "tier_seconds": self.tier_seconds,
            "results": [r.to_json() for r in self.results],
        }


def _load_failure(spec: str, exc: Exception, seed: int) -> CheckResult:
    return CheckResult(
        "load",
        "load",
        Status.FAILED,
        f"could not load it: {exc}",  # exc names the spec (impl='...'): said once
        repro=repro_command(spec, ["contract"], seed=seed),
    )


# The CLI's whole-run budget in seconds when --budget is not given: generous for the reference
# (about 2 minutes full, 30 s quick on 2 cores) and a port of similar speed, short enough that
# a library taking 50 ms a call fails in CI instead of running for hours.
DEFAULT_BUDGET = {"full": 3600.0, "quick": 900.0}


def run_checks(
    impl: str | Implementation = "reference",
    *,
    tiers: Sequence[str] | None = None,
    seed: int = 0,
    quick: bool = False,
    case_seed: int | None = None,
    timeout: float | None = None,
    progress: Progress | None = None,
    family_alpha: float = 1e-6,
    allow_not_provable: bool = False,
    profile: Profile | str = Profile.CONFORMANCE,
    capabilities: Mapping[str, bool] | None = None,
    in_process: bool = False,
    budget: float | None = None,
    fail_fast: bool = False,
    rule: str = "token",
    on_plan: Callable[[Implementation, tuple[str, ...]], None] | None = None,
    on_result: Callable[[CheckResult, bool], None] | None = None,
) -> CheckReport:
    """Run the gate on ``impl`` (a spec string or a loaded implementation).

    Args:
        tiers: tier names to run (default: every tier the implementation supports).
        seed: root seed of every generated case and statistical sample.
        quick: smaller case counts (parity 2,000 cases) for a fast signal.
        case_seed: replay one parity case (with ``tiers=["parity"]``).
        timeout: seconds per call for implementations that take a time limit.
        progress: called with short status lines while the run goes.
        in_process: import a ``python:``, ``mutant:`` or ``reference`` spec into this process
            instead of serving it from a worker (``adapters._python_adapter``). Only for
            benchmarks of the worker's cost: an implementation in the harness's process can
            change its verdict (docs/threat-model.md).
        budget: seconds for the whole run (None: no limit). Calls to an implementation in a
            worker are cut off when it runs out, and every check not finished by then is an
            ERROR ("budget exhausted"), so the run fails with its report written. The CLI
            defaults to ``DEFAULT_BUDGET``.
        allow_not_provable: let "not provable" exact checks pass the run (by default they fail
            it: the exact tier proved nothing there).
        profile: ``conformance`` (the default: the whole gate for ports of the contract) or
            ``lossless`` (only claims about the output law; see ``spec_verify.profiles``).
        capabilities: overrides of what the implementation declares or the adapter detected,
            ``{name: offered}`` over ``CAPABILITIES`` (the CLI's ``--capability`` and
            ``--no-capability``).
        fail_fast: stop after the tier of the first law check (``profiles.Claim.LAW``: a
            claim about the output law) whose result blocks the run; the tiers after it are
            SKIPPED, naming that check. A failed conformance or efficiency check does not stop
            the run. It can only shorten a run that fails.
        rule: the verification rule conformance is asked of (``tiers._rules.CHECK_RULES``):
            ``token`` (the contract, section 3), ``block`` or ``sampler_match`` (CONTRACT.md
            sections 8 and 9; parity against the rule module, the exact tier's ``rule.NAME``).
            Law checks are the same under every rule; the token rule's draw count and
            efficiency checks are NOT_APPLICABLE under another.
        on_plan: called once the implementation is loaded, before the first tier, with it and
            the names of the tiers that will run (those its capabilities and the profile let
            run), so that a face can print the plan and an estimate up front.
        on_result: called with each result as the run records it, and whether it blocks the
            run, so that a face can print each verdict as it comes.

    Returns:
        A ``CheckReport``; ``report.passed`` is the verdict.
    """
    started = time.perf_counter()
    if budget is not None and not (isinstance(budget, (int, float)) and 0 < budget < math.inf):
        raise InvalidArgument(
            "budget", budget, "must be a positive, finite number of seconds", "e.g. budget=900"
        )
    check_seed(seed)
    if case_seed is not None:
        check_seed(case_seed, "case_seed")
    profile = parse_profile(profile)
    rule = check_rule(rule)
    overrides = check_capabilities(capabilities or {}, "capabilities")
    wanted = tuple(tiers) if tiers else TIER_NAMES
    unknown = [t for t in wanted if t not in TIER_NAMES]
    if unknown:
        raise UnknownImplementation(
            "tier", unknown, f"unknown tier; the tiers are {', '.join(TIER_NAMES)}"
        )
    _import_harness(wanted)
    if isinstance(impl, str):
        if progress:
            progress(f"loading {impl}")
        try:
            loaded: Implementation = load_implementation(impl, in_process=in_process)
        except (UnknownImplementation, ImplementationError) as exc:
            return CheckReport(
                impl,
                seed,
                wanted,
                (_load_failure(impl, exc, seed),),
                time.perf_counter() - started,
                quick,
                profile=profile,
                sandbox=exc.sandbox,  # what held while its code loaded (None: none ran)
                rule=rule,
            )
    elif isinstance(impl, Implementation):
        loaded = impl
    else:
        raise InvalidArgument(
            "impl",
            impl,
            "must be a spec string or an Implementation",
            "subclass spec_verify.adapters.Implementation (override what it offers)",
        )
    name = loaded.name
    saved = _settings_of(loaded)  # a caller's implementation gets them back at the end
    refused = loaded.use_rule(rule)
    if refused is not None:
        _restore(loaded, saved)
        if isinstance(impl, str):
            loaded.close()
        refusal = CheckResult("load", "rule", Status.ERROR, refused)
        return CheckReport(name, seed, wanted, (refusal,), time.perf_counter() - started, quick,
                           profile=profile, rule=rule)
    if timeout is not None:
        loaded.timeout = timeout
    if budget is not None:
        loaded.budget = float(budget)
        loaded.budget_deadline = time.monotonic() + budget - (time.perf_counter() - started)
    if overrides:
        loaded.capabilities = apply_capabilities(loaded.capabilities, overrides)
    offered = loaded.capabilities
    options: dict[str, Any] = {
        "seed": seed,
        "quick": quick,
        "progress": progress,
        "family_alpha": family_alpha,
        "rule": rule,
        # the run's question: tiers skip what it does not ask before computing it
        "run": RunContext(profile, rule, offered),
    }
    if case_seed is not None:
        options["case_seed"] = case_seed
    tier_seconds: dict[str, float] = {}
    stopped_by: str | None = None  # why the tiers from here on are not run
    results: list[CheckResult] = []

    def record(result: CheckResult) -> None:
        results.append(result)
        if on_result is not None:  # the verdict as it comes (the CLI prints it)
            on_result(result, result_blocks(result, profile, allow_not_provable, rule))

    try:
        if on_plan is not None:
            on_plan(loaded, tuple(
                spec.name for spec in TIERS
                if spec.name in wanted and offered & spec.needs_any
                and not_applicable_reason(spec.name, "*", profile, offered, rule) is None
            ))
        for spec in TIERS:
            if spec.name not in wanted:
                continue
            tier_start = time.perf_counter()
            if budget is not None and tier_start - started >= budget:
                record(
                    CheckResult(
                        spec.name,
                        "all",
                        Status.ERROR,
                        f"not run: the run's budget of {budget:g} s is exhausted (raise "
                        "--budget, or use --quick)",
                    )
                )
                continue
            if stopped_by is not None:
                record(CheckResult(spec.name, "all", Status.SKIPPED, stopped_by))
                continue
            reason = not_applicable_reason(spec.name, "*", profile, offered, rule)
            if reason is not None:
                record(CheckResult(spec.name, "all", Status.NOT_APPLICABLE, reason))
                continue
            if not offered & spec.needs_any:
                record(
                    CheckResult(
                        spec.name,
                        "all",
                        Status.SKIPPED,
                        f"{name} offers none of {sorted(spec.needs_any)}",
                    )
                )
                continue
            if progress:
                progress(f"{spec.name}: {spec.summary}")
            tier_results = _run_tier(spec, loaded, options)
            for found in tier_results:
                result = found
                reason = not_applicable_reason(result.tier, result.name, profile, offered, rule)
                if reason is not None:  # not asked of this implementation: whatever it did
                    result = replace(result, status=Status.NOT_APPLICABLE, message=reason)
                unproven = result.status is Status.NOT_PROVABLE
                if (not result.status.ok or unproven) and not result.repro:
                    result = replace(
                        result,
                        repro=repro_command(
                            name, [result.tier], seed=seed, quick=quick, profile=profile.value,
                            capabilities=overrides, rule=rule,
                        ),
                    )
                record(result)
                if stopped_by is not None:
                    continue
                if (result.tier, result.name) == _GATE and not result.status.ok:
                    stopped_by = (
                        f"not run: {result.tier}/{result.name} failed (the implementation "
                        "fails on minimal calls)"
                    )
                elif (fail_fast and result_blocks(result, profile, allow_not_provable, rule)
                      and claim_of(result.tier, result.name) is Claim.LAW):
                    stopped_by = (f"not run: --fail-fast, and the law check "
                                  f"{result.tier}/{result.name} failed")
            tier_seconds[spec.name] = time.perf_counter() - tier_start
    finally:
        _restore(loaded, saved)
        if isinstance(impl, str):
            loaded.close()
    return CheckReport(
        name,
        seed,
        wanted,
        tuple(results),
        time.perf_counter() - started,
        quick,
        tier_seconds,
        allow_not_provable,
        profile,
        tuple(sorted(offered)),
        loaded.sandbox(),
        rule,
    )


# What a run sets on the implementation it drives: the adapters read these on every call (the
# per-call limit, what is left of the run's budget, the capabilities granted, the rule whose
# chain symbol a library's verify_draft calls).
_RUN_SETTINGS = ("timeout", "budget", "budget_deadline", "capabilities", "rule")


_UNSET = object()  # a setting the instance did not hold (its class's default showed through)


def _settings_of(impl: Implementation) -> dict[str, Any]:
    """The settings of ``impl`` a run changes (``_RUN_SETTINGS``), as the instance holds them
    now (read from its ``__dict__``: settings are data, not protocol hooks to probe for)."""
    held = vars(impl)
    return {setting: held.get(setting, _UNSET) for setting in _RUN_SETTINGS}


def _restore(impl: Implementation, saved: Mapping[str, Any]) -> None:
    """Put back what ``_settings_of`` saw: an implementation a caller passed to
    ``run_checks`` leaves it as it came (a setting it did not hold is removed again)."""
    held = vars(impl)
    for setting, value in saved.items():
        if value is _UNSET:
            held.pop(setting, None)
        else:
            held[setting] = value


def _import_harness(tiers: Sequence[str]) -> None:
    """Import the whole harness before the first worker starts: the code of the tiers that
    will run, and every other module of ``spec_verify`` (what tiers import inside functions
    included), so that nothing a worker could rewrite on disk, or plant as bytecode, is read
    later. A tier whose code does not import is reported when it runs (``_run_tier``)."""
    for spec in TIERS:
        if spec.name in tiers:
            with contextlib.suppress(TierEntryPointError):
                resolve_entry_point(spec)
    import_every_module()


# Modules of the package that are implementations, imported only by the worker that serves
# them (never by the harness: importing vLLM takes 15-65 s and hides torchvision).
IMPLEMENTATION_SIDE = frozenset({"spec_verify.adapters._vllm"})


def import_every_module() -> list[str]:
    """Import every module of the installed ``spec_verify`` package; the names that could not
    be imported (an optional extra that is not installed). Entry points (``__main__``) and
    the implementations in ``IMPLEMENTATION_SIDE`` are left out."""
    import pkgutil

    import spec_verify

    missing: list[str] = []
    for info in pkgutil.walk_packages(spec_verify.__path__, "spec_verify."):
        if info.name.rsplit(".", 1)[-1] == "__main__" or info.name in IMPLEMENTATION_SIDE:
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # an extra that is not installed: listed
            missing.append(info.name)
    return missing


def _run_tier(spec: TierSpec, impl: Any, options: dict[str, Any]) -> list[CheckResult]:
    start = time.perf_counter()
    try:
        run = resolve_entry_point(spec)
    except TierEntryPointError as exc:
        return [CheckResult(spec.name, "import", Status.ERROR, str(exc))]
    try:
        results = list(run(impl, **options))
    except BudgetExhausted as exc:
        return [
            CheckResult(
                spec.name, "run", Status.ERROR,
                f"not finished: the run's budget ran out during this tier ({exc.call} "
                f"{exc.reason})",
                seconds=time.perf_counter() - start,
            )
        ]  # fmt: skip
    except (ImplementationError, SystemExit) as exc:  # SystemExit: only an implementation's
        message = (  # call can raise it, and it must never end the run as a pass
            f"the implementation failed: {exc}"
            if isinstance(exc, ImplementationError)
            else f"the implementation called sys.exit({exc.code!r}) during the {spec.name} "
            "tier; an implementation must not exit the process"
        )
        return [
            CheckResult(
                spec.name, "run", Status.ERROR, message, seconds=time.perf_counter() - start
            )
        ]
    except Exception as exc:  # a bug in a tier must not end the run
        return [
            CheckResult(
                spec.name,
                "run",
                Status.ERROR,
                f"the {spec.name} tier raised {type(exc).__name__}: {exc} (a harness bug: "
                "please report it)",
                details={"traceback": traceback.format_exc(limit=8)},
                seconds=time.perf_counter() - start,
            )
        ]
    if not results:  # a tier that checked nothing proved nothing: never a pass
        return [
            CheckResult(
                spec.name,
                "all",
                Status.ERROR,
                f"the {spec.name} tier ran no check (a harness bug: please report it)",
            )
        ]
    return results
