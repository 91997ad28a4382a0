"""The check runner: every tier an implementation supports, in order, as one report.

The CLI (``spec-verify check``) and the pytest plugin are thin faces over ``run_checks``. The
phases (ARCHITECTURE.md): load → contract → greedy → exact → parity → properties →
statistical → generation → report. A load failure ends the run as one failed check; so does a
crash or hang on the contract tier's first minimal calls (the later tiers are skipped rather
than reporting the same crash once each). A tier that raises is one ERROR result: the run
always finishes.

Tiers owned elsewhere (the exact engine, properties, statistics) are found lazily by name; one
that is not installed yet is reported as SKIPPED with the name it was looked up under.
"""

from __future__ import annotations

import importlib
import inspect
import shlex
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from spec_verify.adapters._implementations import Implementation, load_implementation
from spec_verify.errors import ImplementationError, UnknownImplementation
from spec_verify.results import CheckResult, Status

__all__ = [
    "TIERS",
    "CheckReport",
    "TierSpec",
    "repro_command",
    "run_checks",
]

Progress = Callable[[str], None]


@dataclass(frozen=True)
class TierSpec:
    """A tier: its name, the capabilities it needs (any of ``needs_any``), and where its
    ``run(impl, **options) -> list[CheckResult]`` lives (``module:function`` candidates)."""

    name: str
    needs_any: frozenset[str]
    entry_points: tuple[str, ...]
    summary: str


TIERS: tuple[TierSpec, ...] = (
    TierSpec(
        "contract",
        frozenset({"verify_draft", "sampling_distribution", "prompt_lookup", "pcg32"}),
        ("spec_verify.tiers.contract:run_contract_tier",),
        "shapes, types, id ranges, errors on bad input",
    ),
    TierSpec(
        "greedy",
        frozenset({"verify_draft"}),
        ("spec_verify.tiers.greedy:run_greedy_tier",),
        "temperature 0 equals the argmax chain and plain greedy generation",
    ),
    TierSpec(
        "exact",
        frozenset({"injected_uniforms"}),
        (
            "spec_verify.tiers.exact:run_exact_tier",
            "spec_verify.exact._cells:run_exact_tier",
            "spec_verify.exact_tier:run_exact_tier",
        ),
        "the output distribution equals the target as Fractions",
    ),
    TierSpec(
        "parity",
        frozenset({"verify_draft", "sampling_distribution", "prompt_lookup", "pcg32"}),
        ("spec_verify.tiers.parity:run_parity_tier",),
        "the reference's decisions on shared logits and streams",
    ),
    TierSpec(
        "properties",
        frozenset({"verify_draft"}),
        (
            "spec_verify.properties:run_property_tier",
            "spec_verify.properties:run_properties_tier",
            "spec_verify.properties.checks:run_property_tier",
        ),
        "hypothesis properties that any implementation must have",
    ),
    TierSpec(
        "statistical",
        frozenset({"verify_draft"}),
        ("spec_verify.tiers.statistical:run_statistical_tier",),
        "goodness of fit with a declared false-alarm rate and power",
    ),
    TierSpec(
        "generation",
        frozenset({"generation"}),
        ("spec_verify.tiers.generation:run_generation_tier",),
        "rollback, stats, EOS/stop/budget and logprobs of speculative_generate",
    ),
)
TIER_NAMES = tuple(t.name for t in TIERS)
_GATE = ("contract", "calls")  # a crash on the first minimal calls skips the later tiers


def repro_command(
    impl: str,
    tiers: Sequence[str] = (),
    *,
    seed: int = 0,
    case_seed: int | None = None,
    quick: bool = False,
) -> str:
    """One shell command that reproduces a result."""
    words = ["spec-verify", "check"]
    if impl != "reference":
        words += ["--impl", impl]
    for tier in tiers:
        words += ["--tier", tier]
    if seed:
        words += ["--seed", str(seed)]
    if case_seed is not None:
        words += ["--case-seed", str(case_seed)]
    if quick:
        words.append("--quick")
    return shlex.join(words)


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

    @property
    def passed(self) -> bool:
        """True when every check passed. Skipped checks (a capability the implementation does
        not offer) do not fail a run; "not provable" does, unless ``allow_not_provable`` (a
        port with float32 sums, say, whose other tiers are its evidence)."""
        return bool(self.results) and not self.failures()

    def counts(self) -> dict[str, int]:
        out = {status.value: 0 for status in Status}
        for result in self.results:
            out[result.status.value] += 1
        return out

    def failures(self) -> list[CheckResult]:
        """The checks that keep the run from passing, in run order."""
        return [r for r in self.results if not r.status.ok or self._unproven(r)]

    def _unproven(self, result: CheckResult) -> bool:
        return result.status is Status.NOT_PROVABLE and not self.allow_not_provable

    def to_json(self) -> dict[str, Any]:
        return {
            "impl": self.impl,
            "seed": self.seed,
            "quick": self.quick,
            "allow_not_provable": self.allow_not_provable,
            "tiers": list(self.tiers),
            "passed": self.passed,
            "counts": self.counts(),
            "seconds": self.seconds,
            "tier_seconds": self.tier_seconds,
            "results": [r.to_json() for r in self.results],
        }


def _entry_point(spec: TierSpec) -> Callable[..., list[CheckResult]] | None:
    for candidate in spec.entry_points:
        module_name, _, function = candidate.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if exc.name is not None and not module_name.startswith(exc.name):
                raise  # the module exists but its own import failed: a real error
            continue
        found = getattr(module, function, None)
        if callable(found):
            run: Callable[..., list[CheckResult]] = found
            return run
    return None


def _call_tier(run: Callable[..., list[CheckResult]], impl: Any, options: dict[str, Any]) -> Any:
    try:
        parameters = inspect.signature(run).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    accepts_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    kwargs = {k: v for k, v in options.items() if accepts_all or k in parameters}
    return run(impl, **kwargs)


def _load_failure(spec: str, exc: Exception, seed: int) -> CheckResult:
    return CheckResult(
        "load",
        "load",
        Status.FAILED,
        f"could not load {spec!r}: {exc}",
        repro=repro_command(spec, ["contract"], seed=seed),
    )


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
) -> CheckReport:
    """Run the gate on ``impl`` (a spec string or a loaded implementation).

    Args:
        tiers: tier names to run (default: every tier the implementation supports).
        seed: root seed of every generated case and statistical sample.
        quick: smaller case counts (parity 2,000 cases) for a fast signal.
        case_seed: replay one parity case (with ``tiers=["parity"]``).
        timeout: seconds per call for implementations that take a time limit.
        progress: called with short status lines while the run goes.
        allow_not_provable: let "not provable" exact checks pass the run (by default they fail
            it: the exact tier proved nothing there).

    Returns:
        A ``CheckReport``; ``report.passed`` is the verdict.
    """
    started = time.perf_counter()
    wanted = tuple(tiers) if tiers else TIER_NAMES
    unknown = [t for t in wanted if t not in TIER_NAMES]
    if unknown:
        raise UnknownImplementation(
            "tier", unknown, f"unknown tier; the tiers are {', '.join(TIER_NAMES)}"
        )
    name = impl if isinstance(impl, str) else impl.name
    if isinstance(impl, str):
        if progress:
            progress(f"loading {impl}")
        try:
            loaded: Any = load_implementation(impl)
        except (UnknownImplementation, ImplementationError) as exc:
            return CheckReport(
                impl,
                seed,
                wanted,
                (_load_failure(impl, exc, seed),),
                time.perf_counter() - started,
                quick,
            )
    else:
        loaded = impl
    name = loaded.name
    if timeout is not None and hasattr(loaded, "timeout"):
        loaded.timeout = timeout
    capabilities = frozenset(getattr(loaded, "capabilities", frozenset()))
    options: dict[str, Any] = {
        "seed": seed,
        "quick": quick,
        "progress": progress,
        "family_alpha": family_alpha,
    }
    if case_seed is not None:
        options["case_seed"] = case_seed
    results: list[CheckResult] = []
    tier_seconds: dict[str, float] = {}
    gate_failure: CheckResult | None = None
    try:
        for spec in TIERS:
            if spec.name not in wanted:
                continue
            tier_start = time.perf_counter()
            if gate_failure is not None:
                results.append(
                    CheckResult(
                        spec.name,
                        "all",
                        Status.SKIPPED,
                        f"not run: {gate_failure.tier}/{gate_failure.name} failed (the "
                        "implementation fails on minimal calls)",
                    )
                )
                continue
            if not capabilities & spec.needs_any:
                results.append(
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
                unproven = result.status is Status.NOT_PROVABLE
                if (not result.status.ok or unproven) and not result.repro:
                    result = replace(
                        result, repro=repro_command(name, [result.tier], seed=seed, quick=quick)
                    )
                results.append(result)
                if (result.tier, result.name) == _GATE and not result.status.ok:
                    gate_failure = result
            tier_seconds[spec.name] = time.perf_counter() - tier_start
    finally:
        close = getattr(loaded, "close", None)
        if isinstance(impl, str) and callable(close):
            close()
    return CheckReport(
        name,
        seed,
        wanted,
        tuple(results),
        time.perf_counter() - started,
        quick,
        tier_seconds,
        allow_not_provable,
    )


def _run_tier(spec: TierSpec, impl: Any, options: dict[str, Any]) -> list[CheckResult]:
    start = time.perf_counter()
    try:
        run = _entry_point(spec)
    except Exception as exc:
        return [
            CheckResult(
                spec.name,
                "import",
                Status.ERROR,
                f"the {spec.name} tier could not be imported: {type(exc).__name__}: {exc}",
            )
        ]
    if run is None:
        return [
            CheckResult(
                spec.name,
                "all",
                Status.SKIPPED,
                f"the {spec.name} tier is not available in this installation (looked up "
                f"{', '.join(spec.entry_points)})",
            )
        ]
    try:
        results = list(_call_tier(run, impl, options))
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
    if not results:
        return [CheckResult(spec.name, "all", Status.SKIPPED, "the tier ran no check")]
    return results
