"""A served sampler holds its own tree and no other: read from its memory, as a suite could
where its run is not sealed off (``/proc/<pid>/mem``; reading it here needs root or a
descendant's ptrace rights, which this test has: the sampler is its descendant)."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from spec_verify.ipc.frames import send_message
from spec_verify.mutants import catalogue as catalogue_module
from spec_verify.mutants._proxy import connect
from spec_verify.mutants._runner import RunPool
from spec_verify.mutants._source import reference_sources
from spec_verify.mutants.catalogue import CATALOGUE, Mutant, apply_mutant

SUITES = Path(__file__).parent / "suites"


def _distinct_mutants(clean: Mapping[str, str], count: int) -> list[tuple[Mutant, str]]:
    """``count`` mutants, each with a text of its tree found in no other tree of the test
    (the clean reference, the other mutants) nor in the catalogue's own source: its changed
    text with the 80 characters before it. Every process of the grading imports the
    catalogue, so the replacement alone is everywhere; with its context it is in the tree."""
    chosen: list[tuple[Mutant, str]] = []
    catalogue = Path(catalogue_module.__file__ or "").read_text(encoding="utf-8")
    for mutant in CATALOGUE:
        change = mutant.changes[0]
        text = apply_mutant(mutant, clean)[change.file]
        at = text.find(change.new)
        needle = text[max(0, at - 80):at + len(change.new)]
        if at < 0 or len(change.new.strip()) < 8 or needle in catalogue or any(
                needle in t for t in clean.values()):
            continue
        if any(needle in t or other in text for m, other in chosen
               for t in apply_mutant(m, clean).values()):
            continue
        chosen.append((mutant, needle))
        if len(chosen) == count:
            return chosen
    raise AssertionError("the catalogue has too few mutants with distinct changed texts")


def _encodings(text: str) -> list[bytes]:
    # a str is held as 1, 2 or 4 bytes a character (whichever its widest character needs),
    # and as UTF-8 in the bytes a socket delivered
    return [text.encode("utf-8"), text.encode("utf-16-le"), text.encode("utf-32-le")]


def found_in_memory(pid: int, needles: Mapping[str, str]) -> set[str]:
    """The names of ``needles`` whose text is somewhere in the writable memory of ``pid``."""
    patterns = {name: _encodings(text) for name, text in needles.items()}
    longest = max(len(p) for ps in patterns.values() for p in ps)
    found: set[str] = set()
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for start, end in _resident_writable_regions(pid):
            tail = b""
            for offset in range(start, end, 1 << 22):
                try:
                    mem.seek(offset)
                    chunk = tail + mem.read(min(1 << 22, end - offset))
                except OSError:
                    break
                for name, encoded in patterns.items():
                    if name not in found and any(p in chunk for p in encoded):
                        found.add(name)
                tail = chunk[-longest:]
    return found


def _resident_writable_regions(pid: int) -> list[tuple[int, int]]:
    """The writable mappings of ``pid`` with pages in memory (heap, arenas, stacks: where its
    objects live; an untouched reservation, such as a thread's malloc arena, is skipped)."""
    regions: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:  # a mapping's first line
                start, end = (int(v, 16) for v in fields[0].split("-"))
                current = (start, end) if fields[1].startswith("rw") else None
            elif fields[0] == "Rss:" and current is not None and int(fields[1]) > 0:
                regions.append(current)
    return regions


def _grandchildren(pid: int) -> set[int]:
    def children_of(parent: int) -> set[int]:
        out = set()
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", "rb") as handle:
                        text = handle.read()
                except OSError:
                    continue
                if int(text[text.rfind(b")") + 2:].split()[1]) == parent:
                    out.add(int(entry))
        return out

    return {g for c in children_of(pid) for g in children_of(c)}


def _serve(pool: RunPool, control: socket.socket, tree: Mapping[str, str]) -> socket.socket:
    """Start a served child of ``tree`` on its tree's server and wait until it loaded."""
    ours, theirs = socket.socketpair()
    with theirs:
        socket.send_fds(control, [json.dumps({"op": "serve", "token": "t"}).encode()],
                        [theirs.fileno()])
    send_message(ours, {"sources": dict(tree), "private": False},
                 deadline=time.monotonic() + 60)
    assert connect(ours).module("spec_verify.reference").SamplingParams is not None
    return ours


def _old_layout_server(pool: RunPool, trees: Iterable[Mapping[str, str]]) -> socket.socket:
    """A tree server that compiled every tree, as the one fork server once did (the control
    this test plants)."""
    assert pool._sampler_control is not None
    files = [[n, t] for tree in trees for n, t in tree.items() if n.endswith(".py")]
    ours, theirs = socket.socketpair()
    control, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with theirs, server_end:
        socket.send_fds(pool._sampler_control, [json.dumps({"op": "tree"}).encode()],
                        [theirs.fileno(), server_end.fileno()])
    with ours:
        send_message(ours, {"files": files}, deadline=time.monotonic() + 60)
    return control


def _served_child_memory(pool: RunPool, control: socket.socket, tree: Mapping[str, str],
                         needles: Mapping[str, str]) -> set[str]:
    assert pool._sampler is not None
    before = _grandchildren(pool._sampler.pid)
    link = _serve(pool, control, tree)
    try:
        (child,) = _grandchildren(pool._sampler.pid) - before
        return found_in_memory(child, needles)
    finally:
        link.close()


def test_a_served_child_holds_its_own_mutant_and_no_other() -> None:
    clean = reference_sources()
    (first, first_text), (second, second_text) = _distinct_mutants(clean, 2)
    trees = {m.id: apply_mutant(m, clean) for m in (first, second)}
    needles = {first.id: first_text, second.id: second_text}
    with RunPool(SUITES / "sealed") as pool:
        pool.precompile([clean, *trees.values()])  # as the grader does: every tree first
        try:
            held = _served_child_memory(pool, pool._tree_control(trees[first.id]),
                                        trees[first.id], needles)
        except PermissionError:
            pytest.skip("this process may not read its descendants' memory (ptrace denied)")
        assert held == {first.id}
        assert _served_child_memory(pool, pool._tree_control(clean), clean, needles) == set()
        # negative control: a server that compiled every tree, as the fork server once did,
        # gives its children every tree's changed text, and the reading finds it
        old = _old_layout_server(pool, [clean, *trees.values()])
        try:
            assert _served_child_memory(pool, old, trees[first.id], needles) == {
                first.id, second.id}
        finally:
            old.close()
