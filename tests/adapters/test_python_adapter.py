"""The Python worker adapter's batched paths give what the same calls give in process.

``call_many``'s LIVE rounds, ``generate_many`` and scripted uniform sources sent as data are
speed paths (one round trip instead of one per round, per generation, per draw): each must be
invisible to the tiers, so each is compared here with the in-process implementation on the
same inputs, and each keeps the checks a single call has (inputs read-only, draws counted,
draws past the script refused).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from spec_verify.adapters import Call, Outcome, UniformPlan, load_implementation
from spec_verify.adapters._generation_request import GenerationRequest
from spec_verify.errors import ImplementationError
from spec_verify.uniforms import DrewPastScript, ScriptedUniforms, TooManyDraws


@pytest.fixture(scope="module")
def worker():
    impl = load_implementation("reference")
    yield impl
    impl.close()


@pytest.fixture(scope="module")
def local():
    return load_implementation("reference", in_process=True)


def _rounds(n: int, seed: int = 5):
    rng = np.random.default_rng(seed)
    rounds = []
    for _ in range(n):
        m = int(rng.integers(1, 4))
        logits = rng.normal(size=(m + 1, 6))
        probs = rng.dirichlet(np.ones(6), size=m)
        ids = [int(rng.choice(6, p=row)) for row in probs]
        rounds.append((logits, ids, probs, [1, 2], [3]))
    return rounds


def test_the_worker_runs_in_its_own_process(worker) -> None:
    assert type(worker).__name__ == "WorkerImplementation"
    assert worker.module.__class__.__name__ == "RemoteObject"


def _live(rounds: list[Any], p: Any) -> list[Call]:
    return [Call.verify(*r[:3], p, *r[3:], UniformPlan.live()) for r in rounds]


def test_live_rounds_equal_the_same_rounds_in_process(worker, local) -> None:
    rounds = _rounds(300)  # more than one request's worth (256 rounds)
    p_worker = worker.params(temperature=0.8, top_k=4)
    p_local = local.params(temperature=0.8, top_k=4)
    got = worker.call_many(_live(rounds, p_worker), worker.request_rng(7))
    want = local.call_many(_live(rounds, p_local), local.request_rng(7))
    assert got == want and len(got) == 300 and all(o.is_ok for o in got)


def test_scripted_rounds_equal_the_same_rounds_in_process(worker, local) -> None:
    """Planned rounds (scripted, forbidden, seeded) one call each: the same outcomes and draw
    counts as in this process, a round that runs out of its script an ERR outcome."""
    rounds = _rounds(6)
    plans = [UniformPlan.scripted([0.3, 0.7, 0.2, 0.9, 0.5]), UniformPlan.scripted([0.99]),
             UniformPlan.seeded(11), UniformPlan.scripted([0.1] * 9),
             UniformPlan.seeded(12), UniformPlan.scripted([])]  # fmt: skip
    outcomes = {}
    for name, impl in (("worker", worker), ("local", local)):
        p = impl.params(temperature=0.8)
        calls = [Call.verify(*r[:3], p, *r[3:], plan)
                 for r, plan in zip(rounds, plans, strict=True)]  # fmt: skip
        outcomes[name] = [(o.outcome, o.value if o.is_ok else type(o.value).__name__, o.drawn)
                          for o in impl.call_many(calls)]  # fmt: skip
    assert outcomes["worker"] == outcomes["local"]
    assert outcomes["local"][-1][0] is Outcome.ERR  # no uniform for a sampled round
    assert outcomes["local"][0][0] is Outcome.OK and outcomes["local"][0][2]


def test_generate_many_equals_the_same_generations_in_process(worker, local) -> None:
    request = GenerationRequest(length=3, params={"temperature": 0.9})
    seeds = list(range(70))  # more than one request's worth (64 seeds)
    assert worker.generate_many(request, seeds) == local.generate_many(request, seeds)


def test_a_generation_request_refuses_malformed_data() -> None:
    data = GenerationRequest().to_data()
    with pytest.raises(ValueError, match="prompt"):
        GenerationRequest.from_data({**data, "prompt": ["a"]})
    with pytest.raises(ValueError, match="fields"):
        GenerationRequest.from_data({**data, "extra": 1})
    with pytest.raises(ValueError, match="draft_kind"):
        GenerationRequest(draft_kind="tree")


@pytest.mark.parametrize("script", [(0.3, 0.9), (0.99, 0.2, 0.6, 0.1, 0.5)])
def test_a_scripted_source_crosses_as_data_and_counts_its_draws(worker, local, script) -> None:
    logits = np.log(np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]]))
    probs = np.array([[0.2, 0.6, 0.2], [0.3, 0.3, 0.4]])
    outcomes = []
    for impl in (worker, local):
        source = ScriptedUniforms(script, then=0.5)
        result = impl.verify_draft(logits, [1, 2], probs, impl.params(), [], source)
        outcomes.append((result, source.drawn))
    assert outcomes[0] == outcomes[1]


def test_drawing_past_the_script_is_refused_across_the_boundary(worker) -> None:
    logits = np.log(np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]))
    probs = np.array([[0.2, 0.6, 0.2]])
    source = ScriptedUniforms((0.99,))  # the draft is rejected: a second uniform is drawn
    with pytest.raises(DrewPastScript, match="the script allows 1"):
        worker.verify_draft(logits, [1], probs, worker.params(), [], source)
    assert source.drawn == 2
    limited = ScriptedUniforms((), then=0.99, limit=1)
    with pytest.raises(TooManyDraws):
        worker.verify_draft(logits, [1], probs, worker.params(), [], limited)


def test_a_batch_that_changes_its_inputs_is_the_implementations_failure() -> None:
    impl = load_implementation("python:tests.impls.hostile.appends_to_history")
    try:
        with pytest.raises(ImplementationError, match="changed one of its list arguments"):
            impl.call_many(_live(_rounds(3), impl.params()), np.random.default_rng(0))
        source = ScriptedUniforms((0.5,), then=0.5)
        with pytest.raises(ImplementationError, match="changed one of its list arguments"):
            impl.verify_draft(*_rounds(1)[0][:3], impl.params(), [1], source)
    finally:
        impl.close()


def test_an_implementation_dropped_without_close_stops_its_worker() -> None:
    """Its finalizer closes the worker once nothing holds the implementation (a session held
    its owner strongly, so dropped implementations kept their workers until exit)."""
    import gc
    import os
    import time

    impl = load_implementation("reference")
    pid = impl._start().worker.pid
    os.kill(pid, 0)  # alive
    del impl
    gc.collect()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
            os.kill(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"worker {pid} still runs after its implementation was dropped")


def test_objects_of_a_dropped_implementation_say_so() -> None:
    impl = load_implementation("reference")
    module = impl.module
    assert module.SamplingParams is not None
    session = impl._start()
    del impl
    import gc

    gc.collect()
    with pytest.raises(ImplementationError, match="garbage-collected"):
        session.owner  # noqa: B018 -- the property raises


def test_the_workers_import_limit_is_lifted_by_name_and_a_bad_value_is_refused(monkeypatch):
    """SPEC_VERIFY_START_TIMEOUT lifts the 60 s import limit (vLLM's import alone can take
    65 s); a value that is not a positive number of seconds is a usage error naming it."""
    from spec_verify.adapters._python_adapter import worker_start_timeout
    from spec_verify.errors import InvalidArgument

    monkeypatch.delenv("SPEC_VERIFY_START_TIMEOUT", raising=False)
    assert worker_start_timeout() == 60.0
    monkeypatch.setenv("SPEC_VERIFY_START_TIMEOUT", "300")
    assert worker_start_timeout() == 300.0
    for bad in ("soon", "0", "-5", "inf", "nan"):
        monkeypatch.setenv("SPEC_VERIFY_START_TIMEOUT", bad)
        with pytest.raises(InvalidArgument, match=r"SPEC_VERIFY_START_TIMEOUT=.*positive number"):
            worker_start_timeout()
