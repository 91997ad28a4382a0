"""The installed package's import graph: no circles, and no import upward of a declared layering.

The graph is read from the source with ``ast`` (nothing is imported): every ``import`` and
``from ... import`` counts, at module level or inside a function, and importing ``a.b.c`` also
runs the packages ``a.b`` and ``a`` that contain it, so those count as imported too (except the
importer's own packages, which are always loaded first). ``importlib.import_module`` with a
string (the tier registry, the adapters' scheme table) is not an edge: it is how a lower layer
names an upper one without importing it.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

import spec_verify

# Bottom to top. A module belongs to the layer of the longest entry that is its name or a
# package containing it; it may import its own layer and the layers below, never above.
LAYERS: Sequence[tuple[str, ...]] = (
    (  # the foundation: the reference, data types, the transport, statistics
        "spec_verify._checkout",
        "spec_verify._exports",
        "spec_verify._sandbox",
        "spec_verify.errors",
        "spec_verify.ipc",
        "spec_verify.mutants",  # the catalogue's data (the grader's modules are listed below)
        "spec_verify.mutants._source",  # the reference's source files, which mutants change
        "spec_verify.reference",
        "spec_verify.repro",
        "spec_verify.results",
        "spec_verify.seeds",
        "spec_verify.stats",
        "spec_verify.summary_table",
        "spec_verify.uniforms",
    ),
    ("spec_verify._specs",),  # reading a spec string
    (  # calling an implementation
        "spec_verify.adapters",
        "spec_verify.mutants._load",
        "spec_verify.mutants.rules",
    ),
    ("spec_verify.exact", "spec_verify.plots"),  # engines over the protocol
    (  # the checks, and the profiles that say which apply
        "spec_verify.endtoend",
        "spec_verify.profiles",
        "spec_verify.properties",
        "spec_verify.tiers",
    ),
    ("spec_verify.runner",),  # run_checks
    (  # faces over the runner, and the grader
        "spec_verify.mutants._cores",
        "spec_verify.mutants._proxy",
        "spec_verify.mutants._rpc",
        "spec_verify.mutants._runner",
        "spec_verify.mutants._sampler",
        "spec_verify.mutants._worker",
        "spec_verify.mutants.batch",
        "spec_verify.mutants.custom",
        "spec_verify.mutants.grader",
        "spec_verify.mutants.gradescope",
        "spec_verify.mutants.lottery",
        "spec_verify.mutants.reports",
        "spec_verify.pytest_plugin",
        "spec_verify.reports",
    ),
    ("spec_verify", "spec_verify.__main__", "spec_verify.cli"),  # the command line, the top
)


def modules_of(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package whose folder is ``root``: dotted name -> file."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of ``modules`` it imports (anywhere in its source)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        own = {name, *_ancestors(name)}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            for written in targets:
                target = written
                while target and target not in modules:  # ``from pkg import name``: pkg
                    target = target.rpartition(".")[0]
                if target:
                    graph[name].update({target, *_ancestors(target)} - own)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layer_of(name: str, layers: Sequence[tuple[str, ...]] = LAYERS) -> int:
    best, level = -1, -1
    for number, entries in enumerate(layers):
        for entry in entries:
            if (name == entry or name.startswith(entry + ".")) and len(entry) > best:
                best, level = len(entry), number
    if level < 0:
        raise AssertionError(f"{name} is in no layer: add it to LAYERS in {__file__}")
    return level


def upward_imports(graph: Mapping[str, set[str]]) -> list[str]:
    return sorted(
        f"{name} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})"
        for name, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(name)
    )


def _installed() -> tuple[Path, dict[str, Path]]:
    root = Path(spec_verify.__file__).parent
    return root, modules_of(root, "spec_verify")


def test_the_installed_package_has_no_import_circle() -> None:
    _, modules = _installed()
    assert "spec_verify.reference.verify" in modules  # the installed layout, reference included
    assert cycles(import_graph(modules)) == []


def test_no_module_imports_upward_of_the_declared_layers() -> None:
    _, modules = _installed()
    assert upward_imports(import_graph(modules)) == []


def test_a_planted_circle_and_upward_import_are_found(tmp_path: Path) -> None:
    """The negative control: the installed package with one import planted inside a function
    of a foundation module (the results importing the runner back)."""
    root, _ = _installed()
    copy = tmp_path / "spec_verify"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    results = copy / "results.py"
    results.write_text(
        results.read_text(encoding="utf-8") + "\n\ndef _planted():\n    from . import runner\n",
        encoding="utf-8",
    )
    graph = import_graph(modules_of(copy, "spec_verify"))
    assert any({"spec_verify.results", "spec_verify.runner"} <= set(c) for c in cycles(graph))
    assert any(
        line.startswith("spec_verify.results (layer 0) imports spec_verify.runner")
        for line in upward_imports(graph)
    )


def test_a_module_outside_the_layers_is_named() -> None:
    with pytest.raises(AssertionError, match="spec_verify_other is in no layer"):
        layer_of("spec_verify_other")
