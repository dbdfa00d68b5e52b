"""The package without the Makefile: a wheel of this checkout (meson-python compiles the C
programs into it), installed into a fresh venv, gives a `capbench` that finds its own programs
and runs a trial; `meson install` under a prefix likewise. Each compiles the programs once
(about 25 s on 2 CPUs).

The wheel is built without build isolation (the build requirements are in the Makefile's venv,
tools/dev_venv.py) and installed without its index; the fresh venv reads rich and matplotlib
from the venv these tests run in (a .pth line), so nothing is downloaded. capbench itself comes
only from the wheel (checked).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from capbench import __version__
from capbench.binaries import PROGRAMS
from e2e_env import REPO, assert_run_measured, decided_trials, missing_prerequisite


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")  # not meson-python's default, a .mesonpy-* in the checkout
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-build-isolation",
                        "--no-deps", "--no-index", f"--config-settings=build-dir={build}", "-w", str(out), str(REPO)],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    assert p.returncode == 0, f"pip wheel failed (are the build requirements in this venv? `make venv`):\n" \
                              f"{p.stdout[-3000:]}{p.stderr[-3000:]}"
    (whl,) = out.glob("capbench-*.whl")
    return whl


def install(wheel: Path, venv: Path) -> Path:
    """A fresh venv with the wheel installed; its bin directory."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(py), "install",
                    "-q", "--no-deps", "--no-index", str(wheel)], check=True, stdin=subprocess.DEVNULL)
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv / "bin"


def installed_env() -> dict[str, str]:
    """What a user who runs VENV/bin/capbench without activating the venv has: the system's PATH
    (the programs are not on it), no source tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CAPBENCH_BUILD_DIR")}
    env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    return env


def run(bin_dir: Path, *argv: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / argv[0]), *argv[1:]], capture_output=True, text=True, cwd=cwd,
                          env=installed_env(), stdin=subprocess.DEVNULL, timeout=timeout)


def test_wheel_ships_the_programs_and_the_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    scripts = {Path(n).name for n in names if ".data/scripts/" in n}
    assert scripts == set(PROGRAMS)
    package = REPO / "python" / "capbench"
    sources = {f"capbench/{p.relative_to(package)}".removesuffix(".in") for p in package.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}  # _version.py.in: the build writes _version.py
    # in purelib (a platform wheel whose root is not purelib: the programs)
    shipped = {n.removeprefix(f"capbench-{__version__}.data/purelib/") for n in names if "/scripts/" not in n
               and not n.startswith(f"capbench-{__version__}.dist-info/")}
    assert shipped == sources  # every module and data file, no caches
    # programs and no extension module: any Python 3 on this platform
    assert re.fullmatch(rf"capbench-{re.escape(__version__)}-py3-none-linux_\w+\.whl", wheel.name), wheel.name


def test_installed_capbench_finds_its_programs(wheel, tmp_path):
    bin_dir = install(wheel, tmp_path / "venv")
    p = run(bin_dir, "python", "-c", "import json, capbench, capbench.binaries as b; "
                                     "print(json.dumps([capbench.__file__, [str(b.find_program(n)) for n in b.PROGRAMS]]))",
            cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    module, programs = json.loads(p.stdout)
    assert Path(module).is_relative_to(tmp_path / "venv")  # the wheel's capbench, not the source tree's
    assert programs == [str(bin_dir / name) for name in PROGRAMS]

    p = run(bin_dir, "capbench", "--version", cwd=tmp_path)
    assert (p.returncode, p.stdout.strip()) == (0, f"capbench {__version__}")
    # The venv lies in a git checkout that is not capbench's: a run does not record its commit.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "t"], check=True)
    p = run(bin_dir, "python", "-c", "from capbench.campaign.results import git_commit; print(git_commit())",
            cwd=tmp_path)
    assert (p.returncode, p.stdout.strip()) == (0, "('unknown', None)"), p.stderr
    p = run(bin_dir, "capbench", "backends", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("pcap ")
    if os.geteuid() == 0:
        assert lines[0].startswith("pcap     works here"), p.stdout


@pytest.mark.parametrize("program", PROGRAMS)
def test_installed_capbench_without_its_programs(wheel, tmp_path, program):
    """A venv with one of the programs gone: `backends` says so in one line naming where it looked
    and the fix, exit 2 (not "works here" for a run that cannot start)."""
    bin_dir = install(wheel, tmp_path / "venv")
    (bin_dir / program).unlink()
    p = run(bin_dir, "capbench", "backends", cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == [
        f"capbench: {program} not found in {bin_dir.resolve()} nor on PATH: reinstall capbench (`pip install` "
        f"builds the programs into {bin_dir.resolve()}; it needs the build packages of docs/manual.md, \"Installing\"), "
        f"or set CAPBENCH_BUILD_DIR to a build directory"]


@pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite()))
def test_installed_capbench_runs_a_trial(wheel, tmp_path):
    bin_dir = install(wheel, tmp_path / "venv")
    p = run(bin_dir, "capbench", "run", "--sizes", "64", "--duration", "1", "--backends", "pcap", "--no-report",
            "--results", str(tmp_path / "results"), cwd=tmp_path, timeout=300)
    assert_run_measured(p)
    (trials,) = (tmp_path / "results").glob("*/trials.jsonl")
    (trial,) = decided_trials(trials)  # a trial the host disturbed is run again
    # the installed capbench-gen sent, capbench-xdpcount and capbench-cap counted
    assert trial["backend"] == "pcap" and trial["sent"] > 0 and trial["delivered"] > 0 and trial["received"] > 0
    assert trial["raw"].keys() >= {"gen", "cap", "xdpcount"}


def test_meson_install_under_a_prefix(tmp_path):
    """The manual's `meson install`: the programs in PREFIX/bin, the package in the Python directory
    under PREFIX, where the installed capbench finds them (not the checkout's)."""
    prefix, build = tmp_path / "prefix", tmp_path / "build"
    for argv in (["meson", "setup", "--prefix", str(prefix), str(build), str(REPO)], ["ninja", "-C", str(build)],
                 ["meson", "install", "-C", str(build), "--quiet"]):
        p = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
        assert p.returncode == 0, f"{argv}: {p.stdout[-3000:]}{p.stderr[-3000:]}"
    (package,) = prefix.glob("lib/python3*/*-packages/capbench")
    env = dict(installed_env(), PYTHONPATH=str(package.parent))
    p = subprocess.run([sys.executable, "-c", "import json, capbench, capbench.binaries as b; "
                        "print(json.dumps([capbench.__file__, [str(b.find_program(n)) for n in b.PROGRAMS]]))"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    module, programs = json.loads(p.stdout)
    assert Path(module).is_relative_to(package)
    assert programs == [str(prefix / "bin" / name) for name in PROGRAMS]
    p = subprocess.run([sys.executable, "-m", "capbench", "backends"], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("pcap "), p.stderr
