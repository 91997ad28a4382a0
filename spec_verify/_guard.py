"""Calling an implementation under test: its crash or hang is its failure, not the harness's."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import ImplementationError

T = TypeVar("T")

__all__ = ["guarded_call"]


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException so the implementation's ``except Exception`` can't
    swallow it."""


def guarded_call(impl: str, call: str, timeout: float, fn: Callable[..., T], *args: Any) -> T:
    """Call ``fn(*args)``; contract errors (``ValueError``) pass through, anything else the
    implementation raises, or a run longer than ``timeout`` seconds, is an ImplementationError.

    The time limit uses ``SIGALRM`` and so applies on the main thread of a POSIX process (pure
    Python code); native code that hangs needs a worker process (the FFI adapter has one).
    """
    use_alarm = (
        timeout > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    previous: Any = None
    if use_alarm:

        def on_alarm(signum: int, frame: Any) -> None:
            raise _Timeout

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return fn(*args)
    except _Timeout:
        raise ImplementationError(impl, call, f"did not return within {timeout:g} s") from None
    except ValueError:
        raise
    except RecursionError as exc:
        raise ImplementationError(impl, call, f"recursed without end ({exc})") from exc
    except Exception as exc:  # the implementation's own bug: report it, keep the run going
        raise ImplementationError(impl, call, f"raised {type(exc).__name__}: {exc}") from exc
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
