"""How the harness talks to another process: data-only frames, one exception family.

``frames`` reads and writes the wire format (a JSON header plus raw array bytes; never
pickle), ``errors`` holds every way a conversation with a peer can fail. The package knows no
contract type (no sampler, no implementation protocol) and imports nothing of the project
beyond itself, so the grader's suite process can load it without the reference or the
adapters. This ``__init__`` imports nothing: import the submodules.
"""
