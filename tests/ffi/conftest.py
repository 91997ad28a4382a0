"""Fixtures for the C-ABI tests: the misbehaving C libraries and the hostile ones of
``hostile/`` (compiled with gcc once per session) and the Rust port with its planted-bug
variants (built with cargo together, once for all sessions; each feature set has its own target
directory, so rebuilds are no-ops), and one shared worker for the clean port."""

from __future__ import annotations

import fcntl
import pathlib
import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.conftest import shared

LIBS = pathlib.Path(__file__).parent / "libs"
HOSTILE = pathlib.Path(__file__).parent / "hostile"
HEADER_DIR = pathlib.Path(__file__).resolve().parents[2] / "spec_verify"
C_LIBS = (
    "segfault",
    "hang",
    "abort",
    "abi_v1",
    "missing_symbols",
    "overflow",
    "bad_ids",
    "crash_at_load",
    "sampled_only",
    "caps_tree_mismatch",
    "caps_block_claimed",
    "caps_block_unclaimed",
    "caps_sampler_match_claimed",
    "caps_sampler_match_unclaimed",
    "caps_propose_claimed",
    "caps_propose_unclaimed",
)
PLANTED_BUGS = (
    "bug_resample_before_accept",
    "bug_bonus_wrong_row",
    "bug_ties_highest",
    "bug_residual_from_p",
    "bug_lookup_oldest",
    "bug_penalty_ignores_kept",
    "bug_top_p_inclusive",
    "bug_penalty_window",
    "bug_sample_inclusive",
    "bug_shared_scratch",
    "bug_tree_stale_residual",
    "bug_block_unadjusted_residual",
    "bug_sampler_match_no_break",
    "bug_draft_shares_verifier_noise",
)


@pytest.fixture(scope="session")
def c_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """name -> a compiled test library; ``not_a_library`` is a text file named like one."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler (gcc/cc) to build the test libraries")
    out = tmp_path_factory.mktemp("c_libs")
    built: dict[str, pathlib.Path] = {}
    for name in C_LIBS:
        target = out / f"lib{name}.so"
        subprocess.run(
            [compiler, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", f"-I{HEADER_DIR}",
             "-o", str(target), str(LIBS / f"{name}.c")],
            check=True,
            capture_output=True,
        )  # fmt: skip
        built[name] = target
    text = out / "libnot_a_library.so"
    text.write_text("this is not a shared library\n")
    built["not_a_library"] = text
    return built


@pytest.fixture(scope="session")
def hostile_c_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """name -> the compiled hostile library ``hostile/<name>.c`` (a wrong sampler with one
    attack each; test_hostile_c.py drives them), built two at a time."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler (gcc/cc) to build the hostile libraries")
    out = tmp_path_factory.mktemp("hostile_c_libs")

    def build(source: pathlib.Path) -> tuple[str, pathlib.Path]:
        target = out / f"lib{source.stem}.so"
        subprocess.run(
            [compiler, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-pthread",
             f"-I{HEADER_DIR}", "-o", str(target), str(source)],
            check=True,
            capture_output=True,
        )  # fmt: skip
        return source.stem, target

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(build, sorted(HOSTILE.glob("*.c"))))


CRATE = pathlib.Path(__file__).resolve().parents[2] / "rust" / "spec_verify_port"
# Every feature set the tests use, built together once: by the first test session (or xdist
# worker) that needs one, under a lock the others wait on; theirs are then no-op cargo checks.
FEATURE_SETS = ((), *((bug,) for bug in PLANTED_BUGS))


def _build_all() -> dict[tuple[str, ...], pathlib.Path]:
    from spec_verify.adapters._rust_build import PortBuildError, build_port, find_cargo

    if find_cargo() is None:
        pytest.skip("cargo not found: the Rust port cannot be built")
    lock_path = CRATE / "target" / "variants.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            # The crate passed explicitly: an installed spec_verify does not know the checkout.
            with ThreadPoolExecutor(max_workers=2) as pool:
                built = pool.map(lambda f: build_port(f, crate_dir=CRATE), FEATURE_SETS)
                return dict(zip(FEATURE_SETS, built, strict=True))
    except PortBuildError as exc:
        pytest.fail(f"the Rust port did not build: {exc}")


@pytest.fixture(scope="session")
def rust_builds() -> dict[tuple[str, ...], pathlib.Path]:
    """feature set -> its shared library (the clean port is ``()``)."""
    return _build_all()


@pytest.fixture(scope="session")
def rust_port(rust_builds: dict[tuple[str, ...], pathlib.Path]) -> pathlib.Path:
    """The clean Rust port's shared library."""
    return rust_builds[()]


@pytest.fixture(scope="session")
def rust_variants(rust_builds: dict[tuple[str, ...], pathlib.Path]) -> dict[str, pathlib.Path]:
    """feature -> the shared library of the port built with that one planted bug."""
    return {bug: rust_builds[(bug,)] for bug in PLANTED_BUGS}


@pytest.fixture(scope="session")
def port_worker(rust_port: pathlib.Path) -> Iterator[Any]:
    """The session's one worker for the clean port (use ``port`` in a test)."""
    from spec_verify.adapters import load_implementation

    impl = load_implementation(f"ffi:{rust_port}")
    try:
        yield impl
    finally:
        impl.close()


@pytest.fixture
def port(port_worker: Any) -> Iterator[Any]:
    """The clean port's shared worker, lent to one test (``tests/conftest.py``: ``shared``)."""
    with shared(port_worker) as impl:
        yield impl
