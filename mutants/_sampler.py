"""The graded sampler's process: one reference tree (clean, canary or mutant), served.

Started once per grading as ``python -m spec_verify.mutants._sampler FD`` (a fork server: it
imports numpy once and never the reference, and compiles the installed reference's text). For
each tree of a grading (clean, canary, each mutant) the grader asks it over the control socket
``FD`` for a tree's server, a process forked from it that is sent that one tree and compiles
it; so no process but the grader holds another tree's changed text. For each graded run the
grader sends the run's tree server a token and one end of a fresh socket pair; it forks a
child that:

1. reads the run's reference tree (``{"sources": {file: text}}``) from that socket: the grader
   wrote it into the other end before handing that end to the suite's process, so the source
   exists only here and in the grader, never in the suite's process;
2. imports it from memory as ``spec_verify.reference`` (no file, no bytecode on disk);
3. serves it (``_rpc.Endpoint``, restricted to public names) until the suite's process closes
   its end, or the grader ends the run.

``describe`` answers the suite's proxy (``_proxy.py``) with the public API of every module of
the tree, found by introspection (each module's ``__all__``), so the proxy follows whatever the
reference exports. Classes and functions travel as handles; constants by value.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import inspect
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping
from types import CodeType, ModuleType
from typing import Any

from spec_verify.ipc.supervisor import kill_tree

from ._cores import pin_to

__all__ = ["ORIGIN", "PACKAGE", "describe", "main", "module_names", "precompile"]

PACKAGE = "spec_verify.reference"
ORIGIN = "<reference>"  # the pseudo folder of a served tree's files
_TREE_DEADLINE = 60.0  # seconds to receive the tree once the child starts
_PR_SET_PDEATHSIG = 1
# Compiled texts, ``(filename, text) -> code``: in the fork server the installed reference's,
# in a tree's server those and its tree's; a served child compiles nothing its server holds.
_COMPILED: dict[tuple[str, str], CodeType] = {}


def precompile(files: Any) -> int:
    """Compile ``[[relative file, text], ...]`` (one tree) into ``_COMPILED``, each text not
    already there; the number of texts compiled. A text that does not compile is
    left out: its run compiles it and fails there, as it would without this."""
    from ._load import compile_source, tree_filename

    count = 0
    for item in files if isinstance(files, list) else []:
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(v, str)
                                                                   for v in item)):
            continue
        relative, text = item
        key = (tree_filename(ORIGIN, relative), text)
        if not relative.endswith(".py") or key in _COMPILED:
            continue
        try:
            _COMPILED[key] = compile_source(*key)
        except (SyntaxError, ValueError):
            continue
        count += 1
    return count


def module_names(sources: Mapping[str, str]) -> list[str]:
    """The modules of a tree (``{"kv.py": ...}`` -> ``spec_verify.reference.kv``), sorted."""
    out = []
    for name in sources:
        if not name.endswith(".py"):
            continue
        parts = name[:-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join([PACKAGE, *parts]))
    return sorted(out)


def class_key(value: Any) -> str | None:
    """The key of a reference class (``module:qualname``); None for any other class."""
    kind = value if isinstance(value, type) else type(value)
    module = getattr(kind, "__module__", "")
    if module == PACKAGE or module.startswith(PACKAGE + "."):
        return f"{module}:{kind.__qualname__}"
    return None


def _exception_key(kind: type[BaseException]) -> str | None:
    return class_key(kind)


def _public(module: ModuleType, private: bool = False) -> list[str]:
    if private:  # every name but dunders (the project's own tests of internals)
        return [n for n in vars(module) if not (n.startswith("__") and n.endswith("__"))]
    names = getattr(module, "__all__", None)
    if isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names):
        return list(names)
    return [n for n, v in vars(module).items()
            if not n.startswith("_") and not isinstance(v, ModuleType)]


_SKIPPED_BASES = ("builtins", "typing", "abc", "collections.abc")


def _describe_class(cls: type, classes: dict[str, Any]) -> str:
    key = class_key(cls)
    assert key is not None
    if key in classes:
        return key
    classes[key] = None  # placeholder against cycles
    bases: list[str] = []
    for base in cls.__bases__:
        if class_key(base) is not None:
            bases.append(_describe_class(base, classes))
        elif base.__module__ == "builtins" and base is not object:
            bases.append(f"builtins:{base.__qualname__}")
    methods: list[str] = []
    statics: list[str] = []
    properties: list[str] = []
    dunders: list[str] = []
    attributes: dict[str, Any] = {}
    from ._rpc import DUNDERS

    for klass in reversed(cls.__mro__):
        if class_key(klass) is None:
            continue
        for name, member in vars(klass).items():
            if name.startswith("_"):
                if name in DUNDERS and member is not None:
                    dunders.append(name)
                continue
            if isinstance(member, property):
                properties.append(name)
            elif isinstance(member, (staticmethod, classmethod)):
                statics.append(name)
            elif inspect.isfunction(member):
                methods.append(name)
            elif not inspect.isroutine(member) and not isinstance(member, type):
                attributes[name] = member
    fields = None
    frozen = False
    if dataclasses.is_dataclass(cls):
        fields = [f.name for f in dataclasses.fields(cls)]
        frozen = bool(cls.__dataclass_params__.frozen)  # type: ignore[attr-defined]
    classes[key] = {
        "key": key, "object": cls, "name": cls.__name__, "qualname": cls.__qualname__,
        "module": cls.__module__, "bases": bases,
        "exception": issubclass(cls, BaseException),
        "protocol": bool(getattr(cls, "_is_protocol", False)),
        "methods": sorted(set(methods)), "statics": sorted(set(statics)),
        "properties": sorted(set(properties)), "dunders": sorted(set(dunders)),
        "attributes": attributes, "fields": fields, "frozen": frozen,
        "unhashable": cls.__hash__ is None,
    }
    return key


def describe(private: bool = False) -> dict[str, Any]:
    """The public API of every module of the loaded tree (``private``: every name but dunders;
    only for the project's own suite, through ``run_mutants``: a graded suite never gets it).

    Returns ``{"modules": {name: {"names": {name: entry}, "errors": ...}}, "classes": {key:
    class description}}``; an entry is ``{"kind": "class", "key"}``, ``{"kind": "function",
    "object", "name", "qualname", "module"}``, ``{"kind": "module", "name"}`` or
    ``{"kind": "value", "value"}``.
    """
    classes: dict[str, Any] = {}
    modules: dict[str, Any] = {}
    package = sys.modules[PACKAGE]
    names = getattr(package, "_sv_module_names", [PACKAGE])
    for module_name in names:
        try:
            module = importlib.import_module(module_name)
        except Exception as error:
            modules[module_name] = {"names": {}, "error": f"{type(error).__name__}: {error}"}
            continue
        for value in list(vars(module).values()):  # every class the module defines
            if isinstance(value, type) and value.__module__ == module_name:
                _describe_class(value, classes)
        entries: dict[str, Any] = {}
        for name in _public(module, private):
            if not hasattr(module, name):
                continue
            value = getattr(module, name)
            if isinstance(value, type) and class_key(value) is not None:
                entries[name] = {"kind": "class", "key": _describe_class(value, classes)}
            elif isinstance(value, ModuleType):
                entries[name] = {"kind": "module", "name": value.__name__}
            elif inspect.isroutine(value):
                entries[name] = {"kind": "function", "object": value,
                                 "name": getattr(value, "__name__", name),
                                 "qualname": getattr(value, "__qualname__", name),
                                 "module": getattr(value, "__module__", module_name)}
            else:
                entries[name] = {"kind": "value", "value": value}
        public = _public(module)
        modules[module_name] = {"names": entries, "error": None, "all": public}
    return {"modules": modules, "classes": classes}


def _construct_exception(message: dict[str, Any], values: list[Any]) -> Any:
    kind, args, kwargs = values
    if not (isinstance(kind, type) and issubclass(kind, BaseException)
            and class_key(kind) is not None):
        raise TypeError("only the reference's exceptions are constructed here")
    error = kind(*args, **kwargs)
    return [list(error.args), {k: v for k, v in vars(error).items() if not k.startswith("_")}]


def load(sources: Mapping[str, str]) -> ModuleType:
    """Import ``sources`` as ``spec_verify.reference`` from memory."""
    from ._load import load_source_tree

    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    module = load_source_tree(PACKAGE, sources, ORIGIN, _COMPILED)
    module._sv_module_names = module_names(sources)  # type: ignore[attr-defined]
    return module


def serve(sock: socket.socket) -> None:
    """Everything a served child does: read the tree, load it, serve until closed."""
    from spec_verify.ipc.frames import recv_message

    from ._rpc import Endpoint

    header, _ = recv_message(sock, time.monotonic() + _TREE_DEADLINE)
    sources = header.get("sources")
    private = header.get("private") is True
    if not (isinstance(sources, dict) and all(isinstance(k, str) and isinstance(v, str)
                                               for k, v in sources.items())):
        raise SystemExit("the tree message holds no sources")
    endpoint = Endpoint(sock, restricted=True, class_key=class_key,
                        exception_key=_exception_key)
    try:
        load(sources)
    except Exception as error:
        failure = f"{type(error).__name__}: {error}"

        def broken(message: dict[str, Any], values: list[Any]) -> Any:
            raise ImportError(f"the graded reference cannot be imported: {failure}")

        endpoint.handlers["describe"] = broken
    else:
        endpoint.handlers["describe"] = lambda message, values: describe(private)
        gc.freeze()  # the tree's modules: no collection of this child walks them again
    endpoint.handlers["construct_exception"] = _construct_exception
    del sources, header
    endpoint.serve_forever()


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies (Linux; elsewhere nothing): a tree's server
    does not outlive the fork server, so a suite that kills the fork server ends every run."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _receive(fd: int) -> Any:
    """The ``files`` of the message on the stream socket ``fd`` (None when it fails)."""
    from spec_verify.ipc.errors import WireError
    from spec_verify.ipc.frames import recv_message

    with socket.socket(fileno=fd) as source, contextlib.suppress(WireError, OSError):
        return recv_message(source, time.monotonic() + _TREE_DEADLINE)[0].get("files")
    return None


def _tree_server(source_fd: int, control: socket.socket) -> None:
    """One tree's fork server: compile the tree's texts the fork server does not hold (its
    changed files), then fork a served child per run of that tree. It holds no other tree's
    text, and neither do its children."""
    _die_with_parent()
    precompile(_receive(source_fd))
    gc.collect()
    gc.freeze()
    _fork_runs(control)


def _serve_child(request: dict[str, Any], fd: int, control: socket.socket) -> int:
    """Fork the served child of one run (``fd``: its end of the run's socket pair); its pid."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setpgid(0, 0)
            _die_with_parent()
            control.close()
            pin_to(request.get("cpu"))  # the core of its suite's process (_cores)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            serve(socket.socket(fileno=fd))
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    return pid


def _fork_runs(control: socket.socket) -> None:
    """The loop of one tree's server: ``serve`` forks a run's child, ``end`` kills it; at
    EOF every child is killed."""
    children: dict[str, int] = {}
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, 1 << 16, 1)
        except InterruptedError:
            continue
        if not data:
            break
        request = json.loads(data)
        token = str(request.get("token"))
        if request.get("op") == "serve" and fds:
            children[token] = _serve_child(request, fds[0], control)
        for fd in fds:
            os.close(fd)
        if request.get("op") == "end" and token in children:
            kill_tree(children.pop(token))
        _reap()
    _kill_all(children.values())


def _kill_all(pids: Any) -> None:
    for pid in list(pids):
        kill_tree(pid)
    _reap()


def main() -> int:
    """The fork server: it compiles the installed (public) reference once, then forks one
    server per graded tree (``tree``: the tree's texts on a stream socket, and the control
    socket its runs are asked for on); ends them all at EOF.

    Every tree's server is forked from this process before it was sent any tree, so no
    process of a grading but the grader holds two trees' changed texts: a run's sampler
    holds the clean reference (public) and its own tree, compiled once in its tree's server
    before the first run (a run's sampler then only executes its modules, and no run is
    faster for its tree having been seen before).
    """
    control = socket.socket(fileno=int(sys.argv[1]))
    import numpy  # noqa: F401 (imported once here, before any fork)

    from spec_verify.ipc import errors, frames  # noqa: F401

    from . import _load, _rpc  # noqa: F401
    from ._source import reference_sources

    precompile([[name, text] for name, text in reference_sources().items()])
    # Freeze the heap before forking: a served child's collector then skips the server's
    # objects (numpy's, the compiled reference's), as the suite's worker does
    # (``_worker.py``); a child makes objects at every call it serves, and a full collection
    # walked them all.
    gc.collect()
    gc.freeze()
    servers: list[int] = []
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, 1 << 16, 2)
        except InterruptedError:
            continue
        if not data:
            break
        if json.loads(data).get("op") == "tree" and len(fds) == 2:
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    os.setpgid(0, 0)
                    control.close()
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    _tree_server(fds[0], socket.socket(fileno=fds[1]))
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)
            servers.append(pid)
        for fd in fds:
            os.close(fd)
        _reap()
    _kill_all(servers)
    return 0


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


if __name__ == "__main__":
    sys.exit(main())
