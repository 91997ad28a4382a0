"""Reading the implementation: compare whatever the suite's process holds of the reference
(module files, sources, code objects found anywhere in memory) with a pristine copy the suite
ships (``pristine/``, written next to this file by the test that grades it) and fail on any
difference, as if that were a mutant."""

import gc
import inspect
import sys
import types
from pathlib import Path

from _cheat import honest_part

PRISTINE = Path(__file__).parent / "pristine"


def _pristine_code():
    out = {}
    for path in PRISTINE.rglob("*.py"):
        code = compile(path.read_text(), str(path), "exec")
        stack = [code]
        while stack:
            item = stack.pop()
            out[(path.name, item.co_name)] = item.co_code
            stack.extend(c for c in item.co_consts if isinstance(c, types.CodeType))
    return out


def test_honest():
    honest_part()


def test_source_and_bytecode_compare():
    import spec_verify.reference  # noqa: F401

    differences = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("spec_verify.reference"):
            continue
        try:
            text = inspect.getsource(module)
        except (OSError, TypeError):
            continue
        pristine = PRISTINE / (name.split(".")[-1] + ".py")
        if name == "spec_verify.reference":
            pristine = PRISTINE / "__init__.py"
        if pristine.exists() and pristine.read_text() != text:
            differences.append(name)
    pristine_code = _pristine_code()
    for item in gc.get_objects():
        if isinstance(item, types.FunctionType):
            code = item.__code__
            where = (Path(code.co_filename).name, code.co_name)
            known = "reference" in code.co_filename and where in pristine_code
            if known and pristine_code[where] != code.co_code:
                differences.append(where)
    assert not differences, f"the reference differs from the pristine copy: {differences[:5]}"
