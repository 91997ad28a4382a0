"""``spec_verify.reference`` as the graded suite sees it: a thin proxy of another process.

The suite's process never holds the graded sampler's code: ``install(sock)`` puts a finder
first on ``sys.meta_path`` that answers for ``spec_verify.reference`` and its submodules with
proxy modules built from the serving process's ``describe`` (``_sampler.py``): every public
name of every module (its ``__all__``), so the proxy follows the reference's API without a list
of its own. There is no source, no bytecode and no pristine copy of the reference here to
compare with; only behaviour.

- a **function** is a stub that sends its arguments and returns the result;
- a **class** is a local class of the same name, module and bases (``isinstance``,
  ``issubclass``, ``pytest.raises`` and ``except`` work): constructing one builds the object
  in the serving process and keeps a handle; methods, properties and attributes go there;
  dataclasses keep their fields (``dataclasses.replace`` works); a ``typing.Protocol`` is a
  local protocol with the same method names (a suite may subclass it for its own drafts);
- an **exception** class is a local exception class; the reference's exceptions arrive as
  instances of it, with their arguments and attributes;
- a **constant** is its value.

What a suite passes in (its uniform source, a draft or model of its own, a subclass of a
proxy class) stays here and is called back. Plain data (numbers, strings, lists, tuples, dicts,
numpy arrays) is copied each way: an attribute holding a list or an array is a copy, so
changing it here does not change the object there (docs/grading.md lists what cannot be
proxied).
"""

from __future__ import annotations

import dataclasses
import importlib.abc
import importlib.machinery
import socket
import sys
import typing
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from ._rpc import DUNDERS, Endpoint, Remote, pickle_handle

__all__ = ["PACKAGE", "connect", "install"]

PACKAGE = "spec_verify.reference"


class _ClassAttribute:
    """A class-level value of a proxied class: the value on the class, the serving object's
    attribute on an instance (an instance may hold its own)."""

    def __init__(self, name: str, value: Any) -> None:
        self.name = name
        self.value = value

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self.value
        return instance._sv_endpoint.getattr(_target(instance), self.name)


class _Proxied:
    """The base of every proxied class: an instance is a handle on the serving object."""

    _sv_endpoint: Endpoint
    _sv_class: Any  # the handle on the serving class

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_sv_") or name.startswith("__"):
            raise AttributeError(name)
        if "_sv_id" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__} object is not initialised "
                                 f"(its __init__ did not run): no attribute {name!r}")
        return self._sv_endpoint.getattr(_target(self), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_sv_"):
            object.__setattr__(self, name, value)
            return
        if "_sv_id" not in self.__dict__:
            object.__setattr__(self, name, value)
            return
        try:
            self._sv_endpoint.setattr(_target(self), name, value)
        except AttributeError:
            if type(self) in self._sv_endpoint.handle_types:
                raise
            object.__setattr__(self, name, value)  # a suite's subclass: its own attribute

    def __repr__(self) -> str:
        if "_sv_id" not in self.__dict__:
            return object.__repr__(self)
        return str(self._sv_endpoint.builtin("repr", _target(self)))

    def __del__(self) -> None:
        number = self.__dict__.get("_sv_id")
        if number is not None and type(self) in self._sv_endpoint.handle_types:
            self._sv_endpoint.forget(number)

    def __copy__(self) -> Any:
        return self._sv_endpoint.builtin("copy", _target(self))

    def __deepcopy__(self, memo: Any) -> Any:
        return self._sv_endpoint.builtin("deepcopy", _target(self))

    def __reduce_ex__(self, protocol: Any) -> Any:
        if type(self) not in self._sv_endpoint.handle_types:
            raise TypeError(f"a {type(self).__name__} (a subclass of a class served from the "
                            "graded sampler's process) cannot be pickled")
        return pickle_handle(self, _target(self))


def _bind(instance: Any, endpoint: Endpoint, number: int) -> None:
    object.__setattr__(instance, "_sv_id", number)


class _Builder:
    """Builds the proxy modules, classes and functions from one ``describe``."""

    def __init__(self, endpoint: Endpoint, description: dict[str, Any]) -> None:
        self.endpoint = endpoint
        self.description = description
        self.classes: dict[str, type] = {}
        self.keep: list[Any] = []  # handles on the serving classes and functions

    def class_for(self, key: str) -> type:
        if key in self.classes:
            return self.classes[key]
        if key.startswith("builtins:"):
            import builtins

            return getattr(builtins, key.split(":", 1)[1])  # type: ignore[no-any-return]
        info = self.description["classes"][key]
        handle = info["object"]
        self.keep.append(handle)
        bases = tuple(self.class_for(b) for b in info["bases"])
        endpoint = self.endpoint
        namespace: dict[str, Any] = {"__module__": info["module"],
                                     "__qualname__": info["qualname"], "__doc__": None}
        if info["protocol"]:
            for name in info["methods"]:
                namespace[name] = _protocol_stub(name)
            cls = type(info["name"], (*[b for b in bases if not issubclass(b, _Proxied)],
                                      typing.Protocol), namespace)
            self.classes[key] = cls
            return cls
        if info["exception"]:
            namespace["__init__"] = _exception_init(endpoint, handle)
            namespace["__reduce__"] = _exception_reduce
            namespace["_sv_class"] = handle
            cls = type(info["name"], bases or (Exception,), namespace)
            self.classes[key] = cls
            return cls
        namespace["_sv_endpoint"] = endpoint
        namespace["_sv_class"] = handle
        namespace["__init__"] = _constructor()
        for name in info["methods"]:
            namespace[name] = _method(name)
        for name in info["statics"]:
            namespace[name] = staticmethod(_static(endpoint, handle, name))
        for name in info["properties"]:
            namespace[name] = _property(name)
        for name in info["dunders"]:
            namespace[name] = _dunder(DUNDERS[name])
        for name, value in info["attributes"].items():
            namespace[name] = _ClassAttribute(name, value)
        if info["unhashable"]:
            namespace["__hash__"] = None
        if info["fields"] is not None:
            shape = dataclasses.make_dataclass(
                info["name"], [(f, typing.Any) for f in info["fields"]],
                frozen=info["frozen"])
            namespace["__dataclass_fields__"] = shape.__dataclass_fields__  # type: ignore[attr-defined]
            namespace["__dataclass_params__"] = shape.__dataclass_params__  # type: ignore[attr-defined]
            namespace["__match_args__"] = tuple(info["fields"])
        proxied_bases = tuple(b for b in bases if issubclass(b, _Proxied)) or (_Proxied,)
        cls = type(info["name"], proxied_bases, namespace)
        self.classes[key] = cls
        endpoint.handle_types.add(cls)
        endpoint.aliases[id(cls)] = (cls, handle._sv_id)
        return cls

    def function(self, entry: dict[str, Any]) -> Any:
        handle = entry["object"]
        self.keep.append(handle)
        endpoint = self.endpoint

        def function(*args: Any, **kwargs: Any) -> Any:
            return endpoint.builtin("call", handle, *args, **kwargs)

        function.__name__ = entry["name"]
        function.__qualname__ = entry["qualname"]
        function.__module__ = entry["module"]
        function.__doc__ = None
        endpoint.aliases[id(function)] = (function, handle._sv_id)
        self.keep.append(function)
        return function

    def module(self, name: str) -> ModuleType:
        """A new proxy module ``name`` (not entered in ``sys.modules``)."""
        module = ModuleType(name)
        self.populate(module)
        return module

    def populate(self, module: ModuleType) -> None:
        info = self.description["modules"].get(module.__name__)
        if info is None:
            raise ImportError(f"{module.__name__} is not a module of the graded reference")
        if info["error"]:
            raise ImportError(f"{module.__name__} failed to import in the graded sampler's "
                              f"process: {info['error']}")
        names = info["names"]
        for name, entry in names.items():
            kind = entry["kind"]
            if kind == "class":
                value: Any = self.class_for(entry["key"])
            elif kind == "function":
                value = self.function(entry)
            elif kind == "module":
                value = importlib.import_module(entry["name"])
            else:
                value = entry["value"]
            setattr(module, name, value)
        module.__all__ = list(info.get("all") or names)  # type: ignore[attr-defined]

        def missing(name: str) -> Any:
            raise AttributeError(
                f"module {module.__name__!r} has no public attribute {name!r}: the grader "
                "serves the reference from another process and proxies the names in each "
                "module's __all__ only (docs/grading.md)")

        module.__getattr__ = missing  # type: ignore[method-assign]


def _protocol_stub(name: str) -> Any:
    """A member of a proxied ``typing.Protocol`` (the reference declares them with ``...``
    bodies): the local Protocol class needs the names for structural checks; a call on the
    Protocol itself, which the reference never makes, raises as an abstract method would."""

    def stub(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(name)

    stub.__name__ = name
    return stub


def _exception_init(endpoint: Endpoint, handle: Any) -> Any:
    def init(self: BaseException, *args: Any, **kwargs: Any) -> None:
        made = endpoint.request({"op": "construct_exception"}, [handle, list(args), kwargs])
        made_args, attributes = made
        BaseException.__init__(self, *made_args)
        for name, value in attributes.items():
            setattr(self, name, value)

    init.__name__ = "__init__"
    return init


def _exception_reduce(self: BaseException) -> tuple[Any, ...]:
    """Pickle and copy an exception here, without asking the sampler's process to build it
    again (the reference's exceptions pickle; a suite may check that they do)."""
    attributes = {k: v for k, v in vars(self).items() if not k.startswith("_sv_")}
    return (_rebuild_exception, (type(self), self.args, attributes))


def _rebuild_exception(kind: type[BaseException], args: tuple[Any, ...],
                       attributes: dict[str, Any]) -> BaseException:
    error = kind.__new__(kind)
    error.args = args
    for name, value in attributes.items():
        setattr(error, name, value)
    return error


def _constructor() -> Any:
    def init(self: _Proxied, *args: Any, **kwargs: Any) -> None:
        # the serving class of this proxy class or, for a suite's subclass, of its nearest
        # proxied base
        cls = next(c for c in type(self).__mro__ if "_sv_class" in c.__dict__)
        endpoint = self._sv_endpoint
        made = endpoint.builtin("call", cls.__dict__["_sv_class"], *args, **kwargs)
        number = endpoint.peer_id(made)
        object.__setattr__(self, "_sv_id", number)
        if type(self) in endpoint.handle_types and number is not None:
            object.__setattr__(made, "_sv_id", None)  # this object is the handle from now on
            endpoint.adopt(number, self)
        else:  # a suite's subclass: requests about it name the serving object built here
            object.__setattr__(self, "_sv_made", made)

    init.__name__ = "__init__"
    return init


def _method(name: str) -> Any:
    def method(self: _Proxied, *args: Any, **kwargs: Any) -> Any:
        return self._sv_endpoint.call_method(_target(self), name, args, kwargs)

    method.__name__ = name
    return method


def _target(instance: _Proxied) -> Any:
    """What to name in a request about ``instance``: itself, or for a suite's subclass the
    serving object it was built on (so an overridden method calls the served one)."""
    if type(instance) in instance._sv_endpoint.handle_types:
        return instance
    return instance.__dict__.get("_sv_made", instance)


def _static(endpoint: Endpoint, handle: Any, name: str) -> Any:
    def static(*args: Any, **kwargs: Any) -> Any:
        return endpoint.call_method(handle, name, args, kwargs)

    static.__name__ = name
    return static


def _property(name: str) -> property:
    def get(self: _Proxied) -> Any:
        return self._sv_endpoint.getattr(_target(self), name)

    return property(get)


def _dunder(builtin: str) -> Any:
    def method(self: _Proxied, *args: Any) -> Any:
        return self._sv_endpoint.builtin(builtin, _target(self), *args)

    return method


class _Loader(importlib.abc.Loader):
    def __init__(self, builder: _Builder) -> None:
        self.builder = builder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        self.builder.populate(module)


class _Finder(importlib.abc.MetaPathFinder):
    """Answers for ``spec_verify.reference`` and its submodules with proxy modules."""

    def __init__(self, builder: _Builder) -> None:
        self.builder = builder
        self.loader = _Loader(builder)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != PACKAGE and not fullname.startswith(PACKAGE + "."):
            return None
        modules = self.builder.description["modules"]
        if fullname not in modules:
            return None
        package = any(name.startswith(fullname + ".") for name in modules)
        spec = importlib.machinery.ModuleSpec(fullname, self.loader, is_package=package)
        if package:
            spec.submodule_search_locations = []
        return spec


def _make_handle(builder_ref: list[_Builder], endpoint: Endpoint, number: int,
                 key: str | None) -> Any:
    builder = builder_ref[0] if builder_ref else None
    if builder is not None and key is not None and key in builder.description["classes"]:
        cls = builder.class_for(key)
        if issubclass(cls, _Proxied):
            instance = cls.__new__(cls)
            _bind(instance, endpoint, number)
            return instance
    handle = Remote.__new__(Remote)
    object.__setattr__(handle, "_sv_endpoint", endpoint)
    object.__setattr__(handle, "_sv_id", number)
    return handle


def connect(sock: socket.socket) -> _Builder:
    """Ask the sampler served on ``sock`` for its API; the builder of its proxy modules."""
    builder_ref: list[_Builder] = []

    def exception_class(key: str) -> type[BaseException] | None:
        if not builder_ref or key not in builder_ref[0].description["classes"]:
            return None
        found = builder_ref[0].class_for(key)
        return found if issubclass(found, BaseException) else None

    endpoint = Endpoint(
        sock, make_proxy=lambda e, n, k: _make_handle(builder_ref, e, n, k),
        exception_class=exception_class)
    description = endpoint.request({"op": "describe"}, [])
    if not isinstance(description, dict) or not {"modules", "classes"} <= set(description):
        raise ImportError("the graded sampler's process sent no description of its API")
    builder = _Builder(endpoint, description)
    builder_ref.append(builder)
    return builder


def install(sock: socket.socket) -> None:
    """Make ``spec_verify.reference`` the proxy of the sampler served on ``sock``."""
    builder = connect(sock)
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    sys.meta_path.insert(0, _Finder(builder))
