"""Build the Rust port (``rust/spec_verify_port``) with cargo and return its shared library.

Each feature set (the clean port, or one or more planted ``bug_*`` features) builds in its own
cargo target directory, so variants never clobber each other and a rebuild is incremental.
The directory name is an opaque digest of the feature set: a path never names the planted bug,
so a suite under test cannot tell a variant from the clean port by its path (DESIGN.md, "the
mutant catalogue and the grader"), and the clean port goes through the same mechanism.

The crate is found relative to this repository (``<repo>/rust/spec_verify_port``), or from the
``SPEC_VERIFY_RUST_CRATE`` environment variable, or from an explicit ``crate_dir``. No registry
is needed: the crate has no dependencies and builds with ``--offline``.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from spec_verify.errors import SpecVerifyError

__all__ = [
    "CRATE_ENV",
    "CRATE_NAME",
    "PortBuildError",
    "build_port",
    "find_cargo",
    "find_crate",
    "library_filename",
    "port_features",
    "variant_target_dir",
]

CRATE_NAME = "spec_verify_port"
CRATE_ENV = "SPEC_VERIFY_RUST_CRATE"  # an explicit crate directory, when not in the repository
_REPO_CRATE = pathlib.Path(__file__).resolve().parents[2] / "rust" / CRATE_NAME
_DEFAULT_TIMEOUT = 900.0  # seconds; a clean release build takes a few seconds


class PortBuildError(SpecVerifyError, RuntimeError):
    """The Rust port could not be built: cargo missing, no crate, bad feature, failed build."""

    def __init__(self, reason: str, command: Sequence[str] = (), output: str = "") -> None:
        self.reason = reason
        self.command = tuple(command)
        self.output = output
        text = reason
        if command:
            text += f"\n  command: {' '.join(command)}"
        if output:
            text += "\n  cargo said:\n" + _indent(_tail(output))
        super().__init__(text)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.command, self.output))


def find_cargo() -> str | None:
    """The cargo executable: on ``PATH``, else rustup's default ``~/.cargo/bin/cargo``."""
    found = shutil.which("cargo")
    if found:
        return found
    home = pathlib.Path(os.environ.get("CARGO_HOME", pathlib.Path.home() / ".cargo"))
    candidate = home / "bin" / ("cargo.exe" if sys.platform == "win32" else "cargo")
    return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None


def find_crate(crate_dir: str | os.PathLike[str] | None = None) -> pathlib.Path:
    """The crate directory: ``crate_dir``, else ``$SPEC_VERIFY_RUST_CRATE``, else the repo's.

    Raises:
        PortBuildError: the directory holds no ``Cargo.toml``.
    """
    if crate_dir is not None:
        crate, origin = pathlib.Path(crate_dir), "crate_dir"
    elif os.environ.get(CRATE_ENV):
        crate, origin = pathlib.Path(os.environ[CRATE_ENV]), f"${CRATE_ENV}"
    else:
        crate, origin = _REPO_CRATE, "the repository layout"
    crate = crate.expanduser().resolve()
    if not (crate / "Cargo.toml").is_file():
        raise PortBuildError(
            f"no Cargo.toml in {crate} (from {origin}); pass crate_dir=<path to "
            f"rust/{CRATE_NAME}> or set {CRATE_ENV} (an installed package does not ship the "
            "crate: build from a checkout of the repository)"
        )
    return crate


def port_features(crate_dir: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """The cargo features the crate declares (``default`` excluded), sorted."""
    manifest = (find_crate(crate_dir) / "Cargo.toml").read_text(encoding="utf-8")
    names: set[str] = set()
    in_features = False
    for raw in manifest.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("["):
            in_features = line == "[features]"
            continue
        match = re.match(r"([A-Za-z0-9_\-]+)\s*=", line) if in_features else None
        if match and match.group(1) != "default":
            names.add(match.group(1))
    return tuple(sorted(names))


def library_filename(platform: str = sys.platform) -> str:
    """The file name cargo gives the cdylib on ``platform``."""
    if platform == "win32":
        return f"{CRATE_NAME}.dll"
    if platform == "darwin":
        return f"lib{CRATE_NAME}.dylib"
    return f"lib{CRATE_NAME}.so"


def variant_target_dir(crate: pathlib.Path, features: Sequence[str]) -> pathlib.Path:
    """The default target directory of a feature set: ``<crate>/target/variants/<digest>``.

    The digest is of the sorted feature names, so the path does not name a planted bug.
    """
    key = ",".join(sorted(set(features)))
    digest = hashlib.sha256(f"{CRATE_NAME}:{key}".encode()).hexdigest()[:16]
    return crate / "target" / "variants" / digest


def build_port(
    features: Sequence[str] = (),
    target_dir: str | os.PathLike[str] | None = None,
    *,
    crate_dir: str | os.PathLike[str] | None = None,
    cargo: str | None = None,
    timeout: float = _DEFAULT_TIMEOUT,
) -> pathlib.Path:
    """Build the port with ``cargo build --release --offline`` and return the shared library.

    Args:
        features: cargo features to enable, e.g. ``("bug_bonus_wrong_row",)``; ``()`` is the
            clean port. Order and repeats do not matter.
        target_dir: cargo's target directory; default: one per feature set under
            ``<crate>/target/variants/`` (see ``variant_target_dir``).
        crate_dir: the crate; default: see ``find_crate``.
        cargo: the cargo executable; default: see ``find_cargo``.
        timeout: seconds before the build is abandoned.

    Returns:
        The absolute path of the built cdylib (``libspec_verify_port.so`` on Linux).

    Raises:
        PortBuildError: cargo is missing, the crate is not found, a feature is unknown, or the
            build failed (the message carries the command and cargo's output).

    Builds of different feature sets may run at once; builds of the same one wait for cargo's
    lock on their target directory.
    """
    if isinstance(features, str):
        raise PortBuildError(
            f"features={features!r}: must be a sequence of feature names, not a string; "
            f"wrap one in a tuple: ({features!r},)"
        )
    crate = find_crate(crate_dir)
    wanted = tuple(sorted(set(features)))
    known = port_features(crate)
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise PortBuildError(
            f"features={list(features)!r}: {unknown} not declared by {crate / 'Cargo.toml'}; "
            f"known features: {list(known)}"
        )
    executable = cargo or find_cargo()
    if executable is None:
        raise PortBuildError(
            "cargo not found: the Rust port needs a Rust toolchain (cargo on PATH or in "
            "~/.cargo/bin); install one with rustup or your system's package manager "
            "(e.g. `apt-get install cargo`), or skip the tests marked `rust`"
        )
    out_dir = (
        pathlib.Path(target_dir).expanduser().resolve()
        if target_dir is not None
        else variant_target_dir(crate, wanted)
    )
    command = [
        executable,
        "build",
        "--release",
        "--offline",
        "--lib",
        "--manifest-path",
        str(crate / "Cargo.toml"),
        "--target-dir",
        str(out_dir),
    ]
    if wanted:
        command += ["--features", ",".join(wanted)]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError as error:
        raise PortBuildError(f"cargo could not be run: {error}", command) from error
    except subprocess.TimeoutExpired as error:
        output = error.stderr if isinstance(error.stderr, str) else ""
        raise PortBuildError(
            f"cargo build did not finish in {timeout} s", command, output
        ) from error
    if done.returncode != 0:
        raise PortBuildError(
            f"cargo build failed with exit code {done.returncode}",
            command,
            done.stderr + done.stdout,
        )
    library = out_dir / "release" / library_filename()
    if not library.is_file():
        raise PortBuildError(
            f"cargo build succeeded but {library} does not exist", command, done.stderr
        )
    return library


def _tail(text: str, lines: int = 40) -> str:
    kept = text.rstrip().splitlines()[-lines:]
    return "\n".join(kept)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
