"""Fixtures for the C-ABI tests: the misbehaving C libraries and the hostile ones of
``hostile/`` (compiled with gcc once per session) and the Rust port with its planted-bug
variants (built with cargo once per session, in parallel; each feature set has its own target
directory, so rebuilds are incremental)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

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


def _build(features: tuple[str, ...]) -> pathlib.Path:
    from spec_verify.adapters._rust_build import PortBuildError, build_port, find_cargo

    if find_cargo() is None:
        pytest.skip("cargo not found: the Rust port cannot be built")
    try:
        return build_port(features)
    except PortBuildError as exc:
        pytest.fail(f"the Rust port did not build: {exc}")


@pytest.fixture(scope="session")
def rust_port() -> pathlib.Path:
    """The clean Rust port's shared library."""
    return _build(())


@pytest.fixture(scope="session")
def rust_variants(rust_port: pathlib.Path) -> dict[str, pathlib.Path]:
    """feature -> the shared library of the port built with that one planted bug."""
    with ThreadPoolExecutor(max_workers=3) as pool:
        paths = list(pool.map(lambda f: _build((f,)), PLANTED_BUGS))
    return dict(zip(PLANTED_BUGS, paths, strict=True))
