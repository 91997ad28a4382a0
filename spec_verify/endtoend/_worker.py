"""The worker process that calls a user's generator: ``fn(seed) -> token sequence``.

Started by ``_draw`` as a file (``runpy``), so it imports only the standard library before the
generator's module; the working directory is on ``sys.path``, so the user's modules import.
Protocol, one JSON object per line on a private copy of the original stdout (the generator's
own prints go to stderr): first ``{"ready": true}`` or
``{"load_error": ...}``, then per seed ``{"seed", "tokens", "length"}`` or
``{"seed", "error", "traceback"}``. The request arrives on stdin as one JSON object
``{"spec", "seeds", "length"}``. Only data crosses: lists of ints and strings.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

__all__ = ["load_generator", "main"]

_TRACEBACK_CHARS = 4000


def load_generator(spec: str) -> Callable[[int], Any]:
    """Resolve ``python:module:function`` or ``python:path/to/file.py:function``.

    Raises:
        ValueError: the spec is malformed, or names no callable (the message says which).
    """
    if not spec.startswith("python:"):
        raise ValueError(f"{spec!r} is not python:module:function")
    target, sep, name = spec[len("python:") :].rpartition(":")
    if not sep or not target or not name:
        raise ValueError(f"{spec!r} is not python:module:function (e.g. python:mygen:sample)")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise ValueError(f"{spec!r}: no file {target} (from {os.getcwd()})")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"{spec!r}: cannot load {target}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[path.stem] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    function = getattr(module, name, None)
    if not callable(function):
        raise ValueError(f"{spec!r}: {target} has no callable {name!r}")
    return function  # type: ignore[no-any-return]


def _as_ids(value: Any) -> list[int]:
    """A flat list of ints from a list, tuple, numpy array or torch tensor (1-D, or one row)."""
    raw = value.tolist() if hasattr(value, "tolist") else value
    if isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], list):
        raw = raw[0]  # a (1, n) batch of one, as generate() returns
    if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
        raise TypeError(f"returned {type(value).__name__}, not a sequence of token ids")
    ids = []
    for position, token in enumerate(raw):
        if isinstance(token, bool) or not isinstance(token, int):
            raise TypeError(
                f"returned a sequence whose entry {position} is {token!r}, not an integer id"
            )
        ids.append(token)
    return ids


def _send(channel: TextIO, message: dict[str, Any]) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


def main() -> None:
    # The protocol owns the original stdout; the generator's prints go to stderr.
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    request = json.loads(sys.stdin.read())
    try:
        generator = load_generator(request["spec"])
    except BaseException as error:  # the user's import may raise anything, even SystemExit
        _send(
            channel,
            {
                "load_error": f"{type(error).__name__}: {error}",
                "traceback": traceback.format_exc()[-_TRACEBACK_CHARS:],
            },
        )
        return
    _send(channel, {"ready": True})
    length = int(request["length"])
    for seed in request["seeds"]:
        try:
            ids = _as_ids(generator(int(seed)))
        except BaseException as error:
            _send(
                channel,
                {
                    "seed": seed,
                    "error": f"{type(error).__name__}: {error}",
                    "traceback": traceback.format_exc()[-_TRACEBACK_CHARS:],
                },
            )
            return
        _send(channel, {"seed": seed, "tokens": ids[:length], "length": len(ids)})


if __name__ == "__main__":
    main()
