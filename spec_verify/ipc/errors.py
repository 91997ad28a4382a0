"""Every way a conversation with another process fails, as one family.

``WireError`` is the root: the peer broke the protocol (a malformed, oversized or truncated
frame, or a value outside the schema). Its subclasses say how:

- ``FrameTooLarge``: a frame or one of its parts above the limits (nothing was allocated);
- ``WireTimeout``: no whole frame arrived, or could be sent, by the deadline;
- ``PeerClosed``: the stream ended between frames (the peer exited or closed its end);
- ``ProtocolError``: a whole, well-formed frame whose *content* breaks the message schema
  (a handle RPC answers it to the peer instead of giving the stream up).

``FrameError`` is another name for ``WireError`` (the grader's RPC catches it by that name).
``RemoteError`` is not a wire failure: it is an exception the peer raised, of a type that has
no counterpart here, carried as its type name and message.
"""

from __future__ import annotations

__all__ = [
    "FrameError",
    "FrameTooLarge",
    "PeerClosed",
    "ProtocolError",
    "RemoteError",
    "WireError",
    "WireTimeout",
]


class WireError(Exception):
    """A frame or message that is malformed, oversized or truncated: the peer broke the
    protocol."""


FrameError = WireError


class FrameTooLarge(WireError):
    """A frame (or one of its parts) above the limits; nothing of its size was allocated."""


class WireTimeout(WireError):
    """No whole frame arrived (or could be sent) before the deadline."""


class PeerClosed(WireError):
    """The stream ended before a new frame began (the peer exited or closed its end)."""


class ProtocolError(WireError):
    """A whole frame whose content is outside the message schema (a broken or hostile
    peer); the stream itself is still in step."""


class RemoteError(Exception):
    """An exception raised on the other side, of a type with no counterpart here: its type
    name and message travel as text."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message
