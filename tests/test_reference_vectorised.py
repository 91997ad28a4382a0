"""The vectorised reference against a literal, token-by-token reading of CONTRACT.md section 2
(the lane sum, the filters, the inverse CDF), and verify_draft's lazy rows (validated before the
first draw, built only when reached)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from spec_verify.reference import InvalidLogits, SamplingParams, sampling_distribution, verify_draft
from spec_verify.reference import sampling as sampling_module
from spec_verify.reference import verify as verify_module
from spec_verify.reference.sampling import LANES, lane_sum, sample_with


def literal_lane_sum(values):
    """CONTRACT.md 2.5: lane l adds ids l, l + 1024, ... in order; then the lanes in order."""
    lanes = [0.0] * LANES
    for i, v in enumerate(values):
        lanes[i % LANES] += v
    total = 0.0
    for v in lanes:
        total += v
    return total


def literal_pick(probs, u):
    """CONTRACT.md 2: the first id whose sequential cumulative sum exceeds u, else the last
    positive id."""
    c = 0.0
    for i, v in enumerate(probs):
        c += v
        if u < c:
            return i
    return max(i for i, v in enumerate(probs) if v > 0)


def literal(logits, p, history=(), prompt=()):
    """CONTRACT.md section 2 as written: loops over tokens, a full sort by (-value, id), a walk
    for top-p. ``np.exp`` over the whole row is the reference's exp (section 2.5), so the two
    must agree bit for bit."""
    row = np.array(logits, dtype=np.float64)
    V = row.shape[0]
    if p.repetition_penalty != 1.0:
        for t in sorted(set(prompt) | set(history)):
            row[t] = row[t] / p.repetition_penalty if row[t] > 0 else row[t] * p.repetition_penalty
    for t, count in sorted(Counter(history).items()):
        if p.presence_penalty != 0.0 or p.frequency_penalty != 0.0:
            row[t] -= p.presence_penalty + p.frequency_penalty * count
    if p.temperature == 0:
        out = np.zeros(V)
        out[int(np.argmax(row))] = 1.0
        return out
    row = row / p.temperature
    if 0 < p.top_k < V:
        order = sorted(range(V), key=lambda t: (-row[t], t))
        row[order[p.top_k :]] = -np.inf
    finite = np.isfinite(row)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        e = np.exp(row - np.max(row[finite]))
    e[~finite] = 0.0
    probs = e / literal_lane_sum(e.tolist())
    keep = probs > 0
    if p.top_p < 1.0:
        running, walked = 0.0, np.zeros(V, dtype=bool)
        for t in sorted(range(V), key=lambda t: (-probs[t], t)):
            if running >= p.top_p:
                break
            walked[t] = True
            running += probs[t]
        keep &= walked
    if p.min_p > 0.0:
        keep &= probs >= p.min_p * np.max(probs[keep])
    if not keep[probs > 0].all():
        probs = np.where(keep, probs, 0.0)
        probs = probs / literal_lane_sum(probs.tolist())
    return probs


def random_case(rng):
    V = int(rng.choice([1, 2, 3, 7, 40, 300, 1024, 1025, 3000]))
    style = int(rng.integers(0, 3))
    if style == 0:  # small integers: exact ties at every cut
        row = rng.integers(-2, 3, size=V).astype(np.float64)
    else:
        row = rng.normal(0.0, float(rng.choice([0.3, 2.0, 8.0])), size=V)
    if style == 2 and V > 1:
        row[rng.random(V) < 0.3] = -np.inf
        row[int(rng.integers(0, V))] = 0.5
    fields = {}
    if rng.random() < 0.15:
        fields["temperature"] = 0.0
    elif rng.random() < 0.5:
        fields["temperature"] = float(rng.choice([1e-3, 0.3, 0.7, 1.9]))
    if rng.random() < 0.4:
        fields["top_k"] = int(rng.integers(1, V + 2))
    if rng.random() < 0.4:
        fields["top_p"] = float(rng.choice([0.05, 0.3, 0.5, 0.75, 0.9, 0.999]))
    if rng.random() < 0.3:
        fields["min_p"] = float(rng.choice([0.01, 0.1, 0.5]))
    if rng.random() < 0.4:
        fields["repetition_penalty"] = float(rng.choice([0.7, 1.3, 2.0]))
        fields["presence_penalty"] = float(rng.choice([0.0, -0.5, 0.8]))
        fields["frequency_penalty"] = float(rng.choice([0.0, 0.3, -0.2]))
    history = [int(t) for t in rng.integers(0, min(V, 5), size=int(rng.integers(0, 40)))]
    prompt = [int(t) for t in rng.integers(0, V, size=int(rng.integers(0, 6)))]
    return row, SamplingParams(**fields), history, prompt


def test_the_vectorised_distribution_is_the_literal_contract_bit_for_bit():
    rng = np.random.default_rng(2026)
    for _ in range(1000):
        row, p, history, prompt = random_case(rng)
        want = literal(row, p, history, prompt)
        got = sampling_distribution(row, p, history, prompt)
        assert np.array_equal(got, want), (row.shape, p, history, prompt)


def test_the_lane_sum_and_the_inverse_cdf_follow_their_definitions():
    rng = np.random.default_rng(11)
    for V in (1, 5, 1023, 1024, 1025, 2048, 2049, 5000, 40_000):
        for power in (1.0, 8.0, 30.0):
            x = rng.random(V) ** power
            assert lane_sum(x) == literal_lane_sum(x.tolist())
            probs = x / lane_sum(x)
            for u in (*rng.random(3).tolist(), 0.0, 1 - 2**-53):
                assert sample_with(probs, u) == literal_pick(probs.tolist(), u)
    # the lanes are not one long sum: 1e16 + 1 + 1 loses both ones added one at a time, but ids
    # 1 and 1025 share lane 1, so the lane sum keeps them
    x = np.zeros(1026)
    x[0], x[1], x[1025] = 1e16, 1.0, 1.0
    assert float(np.cumsum(x)[-1]) == 1e16 and lane_sum(x) == 1e16 + 2.0


def test_top_p_past_the_first_block_and_a_flat_row():
    # top_p needs most of a flat row: the walk outgrows its first block (256) more than once
    rng = np.random.default_rng(7)
    for V, top_p in ((5000, 0.999), (3000, 0.5), (1000, 0.9999999)):
        row = rng.normal(0.0, 0.01, size=V)
        row[:100] = 0.0  # ties among the largest
        p = SamplingParams(top_p=top_p)
        assert np.array_equal(sampling_distribution(row, p), literal(row, p))


def test_the_comparison_fails_for_top_k_ties_to_the_highest_id(monkeypatch):
    # A negative control: ties at the top-k cut broken to the highest id differ from the
    # literal contract on integer rows.
    def highest(values, k):
        order = np.lexsort((-np.arange(values.shape[0]), -values))
        keep = np.zeros(values.shape[0], dtype=bool)
        keep[order[:k]] = True
        return keep

    monkeypatch.setattr(sampling_module, "_top_k_keep", highest)
    row, p = np.array([1.0, 2.0, 2.0, 2.0]), SamplingParams(top_k=2)
    assert not np.array_equal(sampling_distribution(row, p), literal(row, p))


class Counting:
    def __init__(self, values):
        self.values = list(values)
        self.drawn = 0

    def random(self):
        self.drawn += 1
        return self.values.pop(0)


def test_every_row_is_validated_before_the_first_draw():
    rows = np.zeros((4, 5))
    rows[3, 2] = np.inf  # the bonus row: never reached when position 0 rejects
    source = Counting([0.99] * 7)
    with pytest.raises(InvalidLogits, match=r"\+inf at \(row, id\) \[\(3, 2\)\]"):
        verify_draft(rows, [0, 1, 2], None, SamplingParams(), [], source)
    assert source.drawn == 0
    rows[3] = -np.inf
    with pytest.raises(InvalidLogits, match="row 3 has no finite entry"):
        verify_draft(rows, [0, 1, 2], None, SamplingParams(), [], source)
    assert source.drawn == 0


def test_a_row_is_built_only_when_verification_reaches_it(monkeypatch):
    built = []
    real = verify_module._distribution

    def counting(row, p, history, prompt):
        built.append(len(history))
        return real(row, p, history, prompt)

    monkeypatch.setattr(verify_module, "_distribution", counting)
    rows = np.zeros((4, 5))
    # a deterministic draft of token 0 with p(0) = 1/5: u = 0.99 rejects at position 0
    ids, n = verify_draft(rows, [0, 1, 2], None, SamplingParams(), [], Counting([0.99, 0.5]))
    assert n == 0 and built == [0]
    built.clear()
    ids, n = verify_draft(rows, [0, 1, 2], None, SamplingParams(), [], Counting([0.0] * 7))
    assert n == 3 and len(ids) == 4 and built == [0, 1, 2, 3]
