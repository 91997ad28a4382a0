"""A Gradescope autograder bundle: the grader run on Gradescope's own containers.

``write_bundle(folder)`` writes what Gradescope's "zip upload" autograder wants at the top of
its zip, plus the grader's configuration:

- ``setup.sh``: installs Python and spec-verify (from the bundled source when the bundle was
  made from a checkout, else the same version from the package index);
- ``run_autograder``: grades ``/autograder/submission`` and writes
  ``/autograder/results/results.json`` (``python3 -m spec_verify.mutants.gradescope run``);
- ``grade.json``: the options of ``grade`` (mutants, decoys, repeats, time limits, and the
  instructors' catalogue, a path relative to ``grade.json``'s folder);
- ``catalogue/``: with ``write_bundle(..., catalogue=FILE)``, a copy of the folder of an
  instructors' catalogue (``grade --catalogue``: the JSON file and the kill tests beside it),
  checked when the bundle is written (a broken entry is refused there, named);
- ``source/``: the project's source, when available;
- ``autograder.zip``: all of the above, to upload.

``run(root)`` is what ``run_autograder`` calls. ``root`` is ``/autograder`` on Gradescope
(``AUTOGRADER_ROOT`` overrides it, which is how the tests run a bundle locally on a temporary
folder laid out the same way). It always writes ``results.json``, also when the grader itself
fails: Gradescope shows that file to the student.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import traceback
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spec_verify import __version__
from spec_verify.errors import InvalidArgument

__all__ = ["CATALOGUE_FOLDER", "CONFIG_NAME", "DEFAULT_OPTIONS", "main", "run", "write_bundle"]

CONFIG_NAME = "grade.json"
# Options of ``grade`` a course may set (anything else in grade.json is refused).
DEFAULT_OPTIONS: Mapping[str, Any] = {
    "mutants": None, "decoys": 3, "repeats": 3, "confirmations": 2, "clean_reruns": None,
    "timeout_factor": 5.0, "min_timeout": 10.0, "clean_timeout": 600.0, "jobs": None,
    # where the container refuses namespaces (docs/grading.md), grading is refused unless this
    # is true: Gradescope's container per submission is then the only seal
    "allow_unsealed": False,
    # the instructors' catalogue (``grade --catalogue``), relative to grade.json's folder
    "catalogue": None,
}
CATALOGUE_FOLDER = "catalogue"  # where the bundle keeps the catalogue's folder

_SETUP = """#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image.
set -euo pipefail
if ! command -v python3 >/dev/null || ! python3 -m pip --version >/dev/null 2>&1; then
    apt-get update && apt-get install -y python3 python3-pip python3-venv
fi
cd /autograder/source
if [ -f pyproject.toml ]; then
    python3 -m pip install --break-system-packages . || python3 -m pip install .
else
    python3 -m pip install --break-system-packages "spec-verify=={version}" \\
        || python3 -m pip install "spec-verify=={version}"
fi
"""

_RUN = """#!/usr/bin/env bash
# Gradescope runs this for each submission: the student's files are in
# $ROOT/submission, the results go to $ROOT/results/results.json.
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PYTHON="${{SPEC_VERIFY_PYTHON:-python3}}"
cd "$ROOT"  # not a folder that could hold a spec_verify/ of its own (python -m imports from it)
exec "$PYTHON" -m spec_verify.mutants.gradescope run "$ROOT"
"""


def _checkout() -> Path | None:
    """The source checkout spec_verify runs from, if it is one (a pyproject.toml above it)."""
    import spec_verify

    root = Path(spec_verify.__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "reference").is_dir() else None


def _check_config(config: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(config) - set(DEFAULT_OPTIONS))
    if unknown:
        raise InvalidArgument(CONFIG_NAME, unknown, "names options grade does not take",
                              f"use only {sorted(DEFAULT_OPTIONS)}")
    return {**DEFAULT_OPTIONS, **config}


def _bundle_catalogue(out: Path, catalogue: str | os.PathLike[str]) -> str:
    """Copy the catalogue's folder into the bundle (loaded first: a broken entry is refused
    now, named, not on the first submission); its path relative to ``grade.json``."""
    from .custom import load_catalogue

    path = Path(catalogue).resolve()
    load_catalogue(path)  # CatalogueError (a usage error) naming the entry
    target = out / CATALOGUE_FOLDER
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(path.parent, target, ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", ".git"))
    return f"{CATALOGUE_FOLDER}/{path.name}"


def write_bundle(folder: str | os.PathLike[str], options: Mapping[str, Any] | None = None,
                 source: str | os.PathLike[str] | None = None,
                 catalogue: str | os.PathLike[str] | None = None) -> Path:
    """Write the bundle into ``folder`` (created); returns the zip to upload.

    Args:
        options: ``grade`` options for ``grade.json`` (defaults: ``DEFAULT_OPTIONS``).
        source: a spec-verify checkout to bundle (default: the one running, if any; without
            one, ``setup.sh`` installs this version from the package index).
        catalogue: an instructors' catalogue file (``grade --catalogue``); its folder (the
            kill tests beside it) is bundled and every submission is graded against it, mixed
            with built-ins as ``options["mutants"]`` says.

    Raises:
        InvalidArgument: an option grade does not take, or a catalogue that does not load
            (``custom.CatalogueError``, naming the entry).
    """
    out = Path(folder)
    config = _check_config(dict(options or {}))
    if config["catalogue"] is not None:
        raise InvalidArgument("options", {"catalogue": config["catalogue"]},
                              "the catalogue is given as write_bundle's catalogue argument",
                              "pass catalogue=FILE: the bundle carries a copy of its folder")
    out.mkdir(parents=True, exist_ok=True)
    if catalogue is not None:
        config["catalogue"] = _bundle_catalogue(out, catalogue)
    checkout = Path(source) if source is not None else _checkout()
    (out / "setup.sh").write_text(_SETUP.format(version=__version__), encoding="utf-8")
    (out / "run_autograder").write_text(_RUN.format(), encoding="utf-8")
    for name in ("setup.sh", "run_autograder"):
        path = out / name
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (out / CONFIG_NAME).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if checkout is not None:
        target = out / "source"
        if target.exists():
            shutil.rmtree(target)
        target.mkdir()
        for name in ("pyproject.toml", "README.md", "spec_verify", "reference", "properties",
                     "mutants"):
            path = checkout / name
            if path.is_dir():
                shutil.copytree(path, target / name, ignore=shutil.ignore_patterns(
                    "__pycache__", "*.pyc", "*.so", "target"))
            elif path.is_file():
                shutil.copy2(path, target / name)
    bundle = out / "autograder.zip"
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(out.rglob("*")):
            if path.is_file() and path != bundle:
                info = zipfile.ZipInfo.from_file(path, path.relative_to(out).as_posix())
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, path.read_bytes())
    return bundle


def _config(root: Path) -> dict[str, Any]:
    for candidate in (root / "source" / CONFIG_NAME, root / CONFIG_NAME):
        if candidate.is_file():
            data = json.loads(candidate.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise InvalidArgument(CONFIG_NAME, data, "must be a JSON object")
            config = _check_config(data)
            if config["catalogue"] is not None:  # relative to grade.json's folder
                config["catalogue"] = str(candidate.parent / str(config["catalogue"]))
            return config
    return dict(DEFAULT_OPTIONS)


def run(root: str | os.PathLike[str]) -> dict[str, Any]:
    """Grade ``root/submission``, write ``root/results/results.json``; returns it."""
    from .grader import grade
    from .reports import gradescope_results

    base = Path(root)
    results = base / "results"
    results.mkdir(parents=True, exist_ok=True)
    try:
        options = _config(base)
        result = grade(base / "submission", **options)
        data = gradescope_results(result)
    except Exception as exc:
        data = {"score": 0, "execution_time": 0, "visibility": "visible",
                "output": "The grader could not grade this submission (this is not a verdict "
                          f"on it; tell the course staff):\n{type(exc).__name__}: {exc}\n\n"
                          + traceback.format_exc(limit=5),
                "tests": []}
    (results / "results.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def main(argv: list[str] | None = None) -> int:
    """``python -m spec_verify.mutants.gradescope run ROOT``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "run":
        print("usage: python -m spec_verify.mutants.gradescope run ROOT", file=sys.stderr)
        return 2
    run(args[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
