"""The instructors' catalogue is out of every sealed run's sight (``RunPool(hidden=...)``, what
``grade --catalogue`` passes): a suite cannot read the private mutants or their kill tests."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from spec_verify.mutants._runner import RunPool, RunRequest
from spec_verify.mutants._source import reference_sources
from spec_verify.mutants.grader import pytest_arguments

PEEK = '''
import os

PRIVATE = {path!r}


def test_the_catalogue_is_out_of_sight():
    assert not os.path.exists(PRIVATE), "the suite can read the instructors' catalogue"
'''


def _searchable_by_all(path: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path, *path.parents])


@pytest.fixture
def private_folder() -> Iterator[Path]:
    """A folder outside the folders every run gets empty (/tmp, /var/tmp, /dev/shm), which an
    unprivileged uid can reach: where a course keeps its catalogue."""
    for parent in (Path("/run"), Path("/var/cache"), Path("/opt"), Path("/srv")):
        if parent.is_dir() and os.access(parent, os.W_OK) and _searchable_by_all(parent):
            folder = Path(tempfile.mkdtemp(prefix="spec-verify-catalogue-", dir=parent))
            folder.chmod(0o755)
            (folder / "catalogue.json").write_text('{"mutants": []}\n', encoding="utf-8")
            (folder / "catalogue.json").chmod(0o644)
            try:
                yield folder
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            return
    pytest.skip("no writable folder outside /tmp that every uid can reach")


def _passes(tmp_path: Path, private: Path, hidden: list[Path]) -> bool:
    suite = tmp_path / f"suite{len(hidden)}"
    suite.mkdir()
    (suite / "test_peek.py").write_text(PEEK.format(path=str(private / "catalogue.json")))
    sources = reference_sources()
    with RunPool(suite, hidden=hidden) as pool:
        if not pool.sandbox.get("sealed"):
            pytest.skip(f"runs are not sealed here: {pool.sandbox.get('why_not')}")
        pool.precompile([sources])
        ((_, outcome),) = list(pool.run_all(1, [RunRequest(sources, pytest_arguments(), 60)]))
    assert outcome.finished, outcome.output[-2000:]
    return outcome.passed_cleanly


def test_a_sealed_run_cannot_read_the_hidden_catalogue(tmp_path, private_folder) -> None:
    assert _passes(tmp_path, private_folder, [private_folder])
    # negative control: not hidden, the same suite reads it and fails
    assert not _passes(tmp_path, private_folder, [])
