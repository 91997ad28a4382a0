"""How the harness talks to and supervises another process: frames, errors, codec, supervisor.

``frames`` reads and writes the wire format (a JSON header plus raw array bytes; never
pickle), ``errors`` holds every way a conversation with a peer can fail, ``codec`` turns
values and exceptions into wire data, and ``supervisor`` bounds, kills and accounts for the
untrusted process trees on the other end. The package knows no contract type (no sampler,
no implementation protocol) and imports nothing of the project beyond itself, so the grader's
suite process can load it without the reference or the adapters. This ``__init__`` imports
nothing: import the submodules.
"""
