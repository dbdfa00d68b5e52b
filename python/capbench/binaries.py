"""Find the C programs capbench drives: capbench-gen, capbench-cap, capbench-xdpcount.

Search order: the directory in $CAPBENCH_BUILD_DIR, else `<repo>/build` (the
meson build directory of the source tree this package lives in), else $PATH.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from capbench.errors import UsageError

PROGRAMS = ("capbench-gen", "capbench-cap", "capbench-xdpcount")
BUILD_DIR_ENV = "CAPBENCH_BUILD_DIR"


def repo_dir() -> Path:
    """The source tree: two levels above the package directory (python/capbench -> repo)."""
    return Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class Binaries:
    gen: Path
    cap: Path
    xdpcount: Path


def find_program(name: str) -> Path:
    """The path of one program, or UsageError naming how to build it."""
    env = os.environ.get(BUILD_DIR_ENV)
    if env:
        path = Path(env) / name
        if os.access(path, os.X_OK):
            return path
        raise UsageError(
            f"{name} not found in ${BUILD_DIR_ENV}={env}: build it with `make` "
            f"(or `meson setup build && ninja -C build`), or unset {BUILD_DIR_ENV}"
        )
    build = repo_dir() / "build"
    path = build / name
    if os.access(path, os.X_OK):
        return path
    found = shutil.which(name)
    if found:
        return Path(found)
    raise UsageError(
        f"{name} not found in {build} nor on PATH: build it with `make` in {repo_dir()} "
        f"(or `meson setup build && ninja -C build`), or set {BUILD_DIR_ENV}"
    )


def find_binaries() -> Binaries:
    """All three programs, or UsageError for the first one missing."""
    return Binaries(*(find_program(name) for name in PROGRAMS))
