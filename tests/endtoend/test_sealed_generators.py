"""compare's generator workers are sealed off like check's (``spec_verify/_sandbox.py``):
a generator cannot write the installed harness nor see the harness's processes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from spec_verify.endtoend import draw_sequences

HOSTILE = f"python:{Path(__file__).with_name('hostile_generators.py')}:attacks"


def _reached() -> dict[str, str]:
    outcome = draw_sequences({"A": HOSTILE}, 2, length=2, vocab_size=3, workers=1)
    assert outcome.failures
    reason = outcome.failures[0].reason
    text = reason.split("HOSTILE ", 1)[1]
    return json.loads(text[: text.index("}") + 1])


def test_a_sealed_generator_reaches_nothing() -> None:
    from spec_verify.adapters._process import _namespace_prefix

    if _namespace_prefix() is None:
        pytest.skip("the kernel refuses the namespaces here")
    reached = _reached()
    assert reached["module"] != "landed" and reached["harness_cmdline"] == "refused", reached
    if os.geteuid() == 0:
        assert reached["uid"] == "65534"


@pytest.mark.skipif(os.geteuid() != 0, reason="the control needs root")
def test_unsealed_the_generator_reaches_the_harness(monkeypatch) -> None:
    monkeypatch.setenv("SPEC_VERIFY_NO_PID_NAMESPACE", "1")
    reached = _reached()
    assert reached == {"harness_cmdline": "landed", "module": "landed", "uid": "0"}
