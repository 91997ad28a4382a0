"""An adversarial suite: it looks for any sign of a mutant outside the reference's behaviour.

It fails (so it would "kill" the mutant) whenever it finds one: a mutant id or the word
"mutant" in the environment, the command line, sys.path, the working directory, the module
names (the grader's own package, spec_verify.mutants, is loaded in every run alike), the
reference's file names, attributes and loader. It also writes a fingerprint of all
of that to the folder named by SPEC_VERIFY_SIDE_CHANNEL (set by the test that grades it), so
the test can compare every run's view. It calls the reference once so the canary catches it.
"""

import json
import os
import re
import sys
import uuid
from pathlib import Path

import spec_verify.reference as ref

SIGN = re.compile(r"mutant|\bs(?:0[1-9]|1\d|2[0-4])\b", re.IGNORECASE)


def _reference_modules():
    return {name: module for name, module in sorted(sys.modules.items())
            if name == "spec_verify.reference" or name.startswith("spec_verify.reference.")}


def _fingerprint():
    run = str(Path.cwd().parent)
    root = str(Path.cwd().parent.parent)

    def norm(value):  # the random temporary names are no sign of anything
        return str(value).replace(run, "<RUN>").replace(root, "<ROOT>")

    modules = {}
    for name, module in _reference_modules().items():
        spec = module.__spec__
        modules[name] = {
            "file": norm(getattr(module, "__file__", None)),
            "cached": norm(getattr(module, "__cached__", None)),
            "origin": norm(spec.origin),
            "package": module.__package__,
            "loader": type(module.__loader__).__qualname__,
            "path": [norm(p) for p in getattr(module, "__path__", [])],
            "attributes": sorted(vars(module)),
        }
    file = getattr(ref, "__file__", None)  # the proxy has none: no source to find
    reference_dir = Path(file).parent if file else None
    return {
        "env": sorted((k, norm(v)) for k, v in os.environ.items()),
        "argv": [norm(a) for a in sys.argv],
        "sys.path": [norm(p) for p in sys.path],
        "cwd": norm(os.getcwd()),
        "meta_path": [type(finder).__qualname__ for finder in sys.meta_path],
        "reference": modules,
        "reference_files": sorted(p.relative_to(reference_dir).as_posix()
                                  for p in reference_dir.rglob("*")) if reference_dir else [],
        "run_folder": sorted(p.name for p in Path(run).iterdir()),
        "modules": sorted(sys.modules),
    }


def _signs(fingerprint):
    text = json.dumps({k: v for k, v in fingerprint.items() if k != "modules"})
    text += " ".join(name for name in sys.modules if not name.startswith("spec_verify.mutants"))
    return sorted(set(SIGN.findall(text)))


def test_the_reference_runs():
    assert ref.SamplingParams().temperature == 1.0


def test_no_sign_of_anything():
    ref.request_rng(0)  # the canary stops here, before the dump
    fingerprint = _fingerprint()
    side_channel = os.environ.get("SPEC_VERIFY_SIDE_CHANNEL")
    if side_channel:
        path = Path(side_channel) / f"{uuid.uuid4().hex}.json"
        path.write_text(json.dumps(fingerprint))
    assert _signs(fingerprint) == []
