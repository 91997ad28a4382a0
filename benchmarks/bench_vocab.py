"""verify_draft calls per second against the vocabulary size: the reference, the Rust port
through FFI and (where torch and transformers are installed) transformers'
``_speculative_sampling``, on the same inputs in the same run, with the ratios.

Each call verifies k drafted tokens: target logits ``(k + 1, V)`` and draft logits ``(k, V)``
(the target is the draft plus noise, so drafts are kept about as often as in practice; the
mean accepted count is printed per implementation and must roughly agree). Every
implementation gets the same logits in float64 and pays for the same work from logits on: the
draft's softmax (transformers computes it inside ``_speculative_sampling``; for the reference
and the port it is timed as part of the call, a numpy softmax), the target's distributions,
the accept tests, the residual or bonus draw. A second reference column, "ref, q given", times
``verify_draft`` alone on precomputed draft probabilities (its own API). The reference and the
port draw from the contract's PCG32 stream of the same seed, so their decisions must be the
same (a boundary tie aside), and the benchmark counts any difference (and any between the
port with its large inputs in shared memory and "port copied", every array on the stream);
transformers draws from torch's generator. torch runs on one thread
(``torch.set_num_threads(1)``), as the reference runs on one core. The implementations are
timed in interleaved rounds, so a machine shared with other work slows them alike.

Usage: python benchmarks/bench_vocab.py [--vocab 1000 4000 ...] [--k 4] [--calls N]
       [--lib PATH] [--no-port] [--json docs/bench_vocab.json] [--plot docs/bench_vocab.png]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.reference import SamplingParams, request_rng, verify_draft

VOCABS = (1_000, 4_000, 16_000, 32_000, 64_000, 128_000, 256_000)


def softmax_rows(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    e = np.subtract(logits, logits.max(axis=1, keepdims=True))
    np.exp(e, out=e)
    e /= e.sum(axis=1, keepdims=True)
    return e


def make_calls(V: int, k: int, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` calls: draft logits, target logits = draft + noise, drafts sampled from q."""
    rng = np.random.default_rng([seed, V, k])
    calls = []
    for i in range(n):
        draft = rng.normal(0.0, 2.0, size=(k, V))
        target = np.vstack([draft, rng.normal(0.0, 2.0, size=(1, V))])
        target[:k] += rng.normal(0.0, 0.7, size=(k, V))
        q = softmax_rows(draft)
        ids = [int(rng.choice(V, p=row)) for row in q]
        calls.append({"draft": draft, "target": target, "ids": ids, "seed": seed * 10**6 + i})
    return calls


def interleaved(
    runners: dict[str, Callable[[], list[int]]], n: int, seconds: float
) -> tuple[dict[str, float], dict[str, list[int]]]:
    """Calls per second of each runner (each makes ``n`` calls per round), timed in rounds
    that take turns until every runner has had ``seconds``; the first round is a warm-up and
    gives the answers."""
    answers = {name: run() for name, run in runners.items()}
    spent = dict.fromkeys(runners, 0.0)
    rounds = 0
    while min(spent.values()) < seconds:
        for name, run in runners.items():
            start = time.perf_counter()
            run()
            spent[name] += time.perf_counter() - start
        rounds += 1
    return {name: rounds * n / t for name, t in spent.items()}, answers


def reference_runner(calls: list[dict[str, Any]], q_given: bool) -> Callable[[], list[int]]:
    p = SamplingParams()
    given = [softmax_rows(c["draft"]) for c in calls]

    def run() -> list[int]:
        out = []
        for c, q_rows in zip(calls, given, strict=True):
            q = q_rows if q_given else softmax_rows(c["draft"])
            _, n = verify_draft(c["target"], c["ids"], q, p, [], request_rng(c["seed"]))
            out.append(n)
        return out

    return run


def port_runner(impl: Any, calls: list[dict[str, Any]], batched: bool) -> Callable[[], list[int]]:
    p = SamplingParams()

    def one(c: dict[str, Any]) -> Any:
        q = softmax_rows(c["draft"])
        return impl.verify_call(c["target"], c["ids"], q, p, [], [], ("seed", c["seed"]))

    def run() -> list[int]:
        if batched:
            outcomes = impl.batch([one(c) for c in calls])
        else:
            outcomes = [impl.batch([one(c)])[0] for c in calls]
        return [int(o.value[1]) if o.is_ok else -1 for o in outcomes]

    return run


def transformers_runner(calls: list[dict[str, Any]]) -> Callable[[], list[int]] | None:
    try:
        import torch
        from transformers.generation.utils import _speculative_sampling
    except ImportError:
        return None
    torch.set_num_threads(1)
    torch.manual_seed(0)
    k = len(calls[0]["ids"])
    tensors = [
        (
            torch.tensor([[0, *c["ids"]]]),
            torch.from_numpy(c["draft"])[None],
            torch.from_numpy(c["target"])[None],
        )
        for c in calls
    ]

    def run() -> list[int]:
        out = []
        with torch.no_grad():
            for ids, draft, target in tensors:
                _, n = _speculative_sampling(ids, draft, k, target)
                out.append(int(n))
        return out

    return run


def commit() -> str:
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("+dirty" if dirty else "")


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    vocabs = [row["V"] for row in results["rows"]]
    for key, label in (
        ("reference", "reference (numpy), draft softmax included"),
        ("reference_q_given", "reference, draft probabilities given"),
        ("port_batched", "Rust port via FFI, batched"),
        ("port_one", "Rust port via FFI, one call per message"),
        ("port_copied", "Rust port via FFI, one call per message, arrays copied"),
        ("transformers", "transformers _speculative_sampling (torch, 1 thread)"),
    ):
        ys = [row.get(key) for row in results["rows"]]
        if any(y is not None for y in ys):
            ax.plot(vocabs, ys, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("vocabulary size V")
    ax.set_ylabel("verify_draft calls per second")
    ax.set_title(f"k = {results['k']}, float64, same inputs (commit {results['commit']})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, nargs="+", default=list(VOCABS))
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--calls", type=int, default=20, help="distinct calls per V")
    parser.add_argument("--seconds", type=float, default=2.0, help="timing per measurement")
    parser.add_argument("--lib", help="the port's shared library (default: build it)")
    parser.add_argument("--no-port", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()
    impl = copying = None
    if not args.no_port:
        from _port import load_port

        impl = load_port(args.lib)
        # the same port with every array on the stream, copied (the path before shared memory)
        copying = load_port(impl.path)
        copying.close()
        copying.shared_above = None
    results: dict[str, Any] = {
        "commit": commit(),
        "k": args.k,
        "machine": f"{platform.machine()}, {platform.processor() or platform.system()}",
        "numpy": np.__version__,
        "rows": [],
    }
    try:
        import torch
        import transformers

        results["torch"], results["transformers"] = torch.__version__, transformers.__version__
    except ImportError:
        pass
    print(f"k = {args.k}, {args.calls} distinct calls per V, commit {results['commit']}")
    header = (
        f"{'V':>8} {'reference':>10} {'ref,q given':>11} {'port 1/msg':>11} "
        f"{'port batch':>11} {'port copied':>11} {'port/ref':>8} {'transf.':>9} "
        f"{'ref/transf':>10} {'(q given)':>9} "
        f"{'accepted ref/port/transf':>25} {'differ':>6}"
    )
    print(header)
    for V in args.vocab:
        calls = make_calls(V, args.k, args.calls, seed=1)
        runners: dict[str, Callable[[], list[int]]] = {
            "reference": reference_runner(calls, q_given=False),
            "reference_q_given": reference_runner(calls, q_given=True),
        }
        if impl is not None:
            runners["port_one"] = port_runner(impl, calls, False)
            runners["port_batched"] = port_runner(impl, calls, True)
            runners["port_copied"] = port_runner(copying, calls, False)
        transformers_run = transformers_runner(calls)
        if transformers_run is not None:
            runners["transformers"] = transformers_run
        rates, answers = interleaved(runners, len(calls), args.seconds)
        row: dict[str, Any] = {"V": V, **rates}
        accepted = [float(np.mean(answers["reference"]))]
        differ = 0
        if impl is not None:
            accepted.append(float(np.mean(answers["port_one"])))
            differ = sum(
                a != b for a, b in zip(answers["reference"], answers["port_one"], strict=True)
            )
            differ += sum(
                a != b for a, b in zip(answers["port_one"], answers["port_copied"], strict=True)
            )
            row["port_one_over_reference"] = rates["port_one"] / rates["reference"]
        if transformers_run is not None:
            # transformers draws from torch's generator: only the mean compares
            accepted.append(float(np.mean(answers["transformers"])))
            row["reference_over_transformers"] = rates["reference"] / rates["transformers"]
            row["reference_q_given_over_transformers"] = (
                rates["reference_q_given"] / rates["transformers"]
            )
        row["mean_accepted"] = accepted
        row["reference_port_decisions_differ"] = differ
        results["rows"].append(row)

        def fmt(key: str, width: int, row: dict[str, Any] = row) -> str:
            value = row.get(key)
            return f"{value:>{width}.0f}" if value is not None else f"{'-':>{width}}"

        def ratio(key: str, width: int, row: dict[str, Any] = row) -> str:
            value = row.get(key)
            return f"{value:>{width - 1}.2f}x" if value is not None else f"{'-':>{width}}"

        print(
            f"{V:>8} {fmt('reference', 10)} {fmt('reference_q_given', 11)} "
            f"{fmt('port_one', 11)} {fmt('port_batched', 11)} {fmt('port_copied', 11)} "
            f"{ratio('port_one_over_reference', 8)} {fmt('transformers', 9)} "
            f"{ratio('reference_over_transformers', 10)} "
            f"{ratio('reference_q_given_over_transformers', 9)} "
            f"{' / '.join(f'{a:.2f}' for a in accepted):>25} {differ:>6}",
            flush=True,
        )
    if impl is not None and copying is not None:
        impl.close()
        copying.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
