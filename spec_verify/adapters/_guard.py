"""Calling an implementation under test: its crash or hang is its failure, not the harness's."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from spec_verify.errors import ImplementationError

T = TypeVar("T")

__all__ = ["guarded_call"]


_REPEAT = 0.1  # seconds between alarms once a call's limit has run out
_SWALLOW_GRACE = 5.0  # seconds of swallowed alarms before the run is ended


def _abort_run(impl: str, call: str, timeout: float) -> None:
    """End the process with a clear message: the implementation hangs and catches every
    exception the time limit raises, so nothing in this process can stop it."""
    sys.stderr.write(
        f"\nspec-verify: {impl}: {call} did not return within {timeout:g} s and caught every "
        f"timeout raised into it for {_SWALLOW_GRACE:g} s more (a bare 'except:' or 'except "
        "BaseException' around a loop?); a Python implementation runs in this process, so the "
        "run ends here with exit code 3. Fix the implementation, or let BaseException "
        "propagate.\n"
    )
    sys.stderr.flush()
    os._exit(3)


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException so the implementation's ``except Exception`` can't
    swallow it."""


def guarded_call(
    impl: str,
    call: str,
    timeout: float,
    fn: Callable[..., T],
    *args: Any,
    passthrough: tuple[type[BaseException], ...] = (),
) -> T:
    """Call ``fn(*args)``; contract errors (``ValueError``) pass through, anything else the
    implementation raises (``sys.exit`` included), or a run longer than ``timeout`` seconds, is
    an ImplementationError.

    The time limit uses ``SIGALRM`` and so applies on the main thread of a POSIX process (pure
    Python code); native code that hangs needs a worker process (the FFI adapter has one).
    Guarded calls nest: an inner call runs under the smaller of its limit and what is left of
    the outer one; when the outer limit is the one that ran out, the outer call reports it, and
    otherwise the outer timer runs on with what it had left. Exceptions of the
    ``passthrough`` types (the harness's own instruments' verdicts, such as a model's
    ``CacheMismatch``) are raised as they are.
    """
    use_alarm = (
        timeout > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    previous: Any = None
    outer_left = 0.0
    started = time.monotonic()
    outer_expired = False
    if use_alarm:
        outer_left = signal.getitimer(signal.ITIMER_REAL)[0]
        own_limit_binds = outer_left <= 0 or timeout < outer_left
        limit = timeout if own_limit_binds else outer_left

        fired = [0]

        def on_alarm(signum: int, frame: Any) -> None:
            # The timer repeats: an implementation that swallows the first alarm (a bare
            # ``except:`` in a retry loop) gets it again; one that swallows every alarm for
            # _SWALLOW_GRACE seconds cannot be stopped in-process, and the run ends loudly.
            fired[0] += 1
            if fired[0] * _REPEAT > _SWALLOW_GRACE:
                _abort_run(impl, call, timeout)
            raise _Timeout

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, limit, _REPEAT)
    try:
        return fn(*args)
    except _Timeout:
        if use_alarm and not own_limit_binds:
            outer_expired = True
            raise  # the enclosing guarded call's limit ran out: it reports the hang
        raise ImplementationError(impl, call, f"did not return within {timeout:g} s") from None
    except (ValueError, ImplementationError):
        raise
    except passthrough:
        raise
    except RecursionError as exc:
        raise ImplementationError(impl, call, f"recursed without end ({exc})") from exc
    except SystemExit as exc:  # an implementation must not end the harness's process
        raise ImplementationError(
            impl, call, f"called sys.exit({exc.code!r}); an implementation must not exit"
        ) from None
    except Exception as exc:  # the implementation's own bug: report it, keep the run going
        raise ImplementationError(impl, call, f"raised {type(exc).__name__}: {exc}") from exc
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if outer_left > 0:  # the outer timer goes on (repeating, should this be swallowed)
                left = outer_left - (time.monotonic() - started)
                next_alarm = _REPEAT if outer_expired else max(left, 1e-3)
                signal.setitimer(signal.ITIMER_REAL, next_alarm, _REPEAT)
