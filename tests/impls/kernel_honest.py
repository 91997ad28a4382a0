"""The tutorial's batched rejection kernel (examples/batched_kernel.py, which declares
``SPEC_VERIFY_KERNEL``), importable from the tests."""

import importlib.util
from pathlib import Path

_path = Path(__file__).resolve().parents[2] / "examples" / "batched_kernel.py"
_spec = importlib.util.spec_from_file_location("batched_kernel", _path)
assert _spec is not None and _spec.loader is not None
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)

SPEC_VERIFY_KERNEL = _example.SPEC_VERIFY_KERNEL
rejection_sample = _example.rejection_sample
