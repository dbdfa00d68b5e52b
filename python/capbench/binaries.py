"""Find the C programs capbench drives: capbench-gen, capbench-cap, capbench-xdpcount, capbench-witness.

Search order: the directory in $CAPBENCH_BUILD_DIR; else, for an installed capbench (a wheel:
`pip install`, pipx; or `meson install`), the bin directory of the prefix it was installed
into (a venv's bin/, where the wheel's scripts go); for the source tree, `<repo>/build` (its
meson build directory); then $PATH.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from capbench.errors import UsageError

PROGRAMS = ("capbench-gen", "capbench-cap", "capbench-xdpcount", "capbench-witness")
# Those a user also runs by hand (`capbench gen/cap/xdpcount` pass through; their completions):
# capbench-witness only runs under `capbench run`.
BY_HAND = PROGRAMS[:3]
BUILD_DIR_ENV = "CAPBENCH_BUILD_DIR"


def repo_dir() -> Path:
    """The source tree: two levels above the package directory (python/capbench -> repo)."""
    return Path(__file__).resolve().parent.parent.parent


def source_tree() -> Path | None:
    """The checkout this package runs from (its meson.build beside python/), or None for an
    installed capbench, whose prefix may lie inside some other checkout (a venv in a clone)."""
    repo = repo_dir()
    return repo if (repo / "meson.build").is_file() and (repo / "python" / "capbench").is_dir() else None


def installed_bin_dir() -> Path | None:
    """PREFIX/bin when this package is installed as PREFIX/lib/pythonX.Y/site-packages/capbench
    (a venv, pipx, pip --user or --prefix, `meson install --prefix`): where the programs were
    installed beside it. None in a source tree."""
    package = Path(__file__).resolve().parent
    if package.parent.name not in ("site-packages", "dist-packages"):
        return None
    return package.parents[3] / "bin"


@dataclass(frozen=True)
class Binaries:
    gen: Path
    cap: Path
    xdpcount: Path
    witness: Path


def find_program(name: str) -> Path:
    """The path of one program, or UsageError naming where it was looked for and the fix."""
    env = os.environ.get(BUILD_DIR_ENV)
    if env:
        path = Path(env) / name
        if os.access(path, os.X_OK):
            return path
        raise UsageError(
            f"{name} not found in ${BUILD_DIR_ENV}={env}: build it with `make` "
            f"(or `meson setup build && ninja -C build`), or unset {BUILD_DIR_ENV}"
        )
    installed = installed_bin_dir()
    where = installed if installed is not None else repo_dir() / "build"
    path = where / name
    if os.access(path, os.X_OK):
        return path
    found = shutil.which(name)
    if found:
        return Path(found)
    if installed is not None:
        fix = (f"reinstall capbench (`pip install` builds the programs into {installed}; it needs the "
               f"build packages of docs/manual.md, \"Installing\"), or set {BUILD_DIR_ENV} to a build directory")
    else:
        fix = (f"build it with `make` in {repo_dir()} (or `meson setup build && ninja -C build`), "
               f"or set {BUILD_DIR_ENV}")
    raise UsageError(f"{name} not found in {where} nor on PATH: {fix}")


def find_binaries() -> Binaries:
    """All the programs, or UsageError for the first one missing."""
    return Binaries(*(find_program(name) for name in PROGRAMS))
