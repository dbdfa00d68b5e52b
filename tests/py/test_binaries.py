"""Where capbench finds its programs: a copy of the package laid out as an installation
(PREFIX/lib/python3.11/site-packages/capbench) looks in PREFIX/bin, then PATH, and says where it
looked and how to fix it; the source tree looks in its build directory (test_cli). The real
wheel and `meson install`: tests/e2e/test_e2e_wheel.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from capbench import __version__
from capbench.binaries import PROGRAMS, repo_dir


def installed_copy(prefix: Path, site: str = "lib/python3.11/site-packages") -> Path:
    """The package copied to PREFIX/SITE/capbench; SITE's path."""
    dest = prefix / site
    shutil.copytree(repo_dir() / "python" / "capbench", dest / "capbench",
                    ignore=shutil.ignore_patterns("__pycache__", "*.in"))
    # what the build writes from meson.build's version (python/meson.build)
    template = (repo_dir() / "python" / "capbench" / "_version.py.in").read_text()
    (dest / "capbench" / "_version.py").write_text(template.replace("@VERSION@", __version__))
    return dest


def fake_programs(directory: Path, names=PROGRAMS) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_text("#!/bin/sh\nexit 0\n")
        (directory / name).chmod(0o755)


def find(site: Path, path: str, *, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CAPBENCH_BUILD_DIR"}
    env.update(PYTHONPATH=str(site), PATH=path)
    return subprocess.run([sys.executable, "-c", "import json, capbench.binaries as b; "
                           "print(json.dumps([str(b.find_program(n)) for n in b.PROGRAMS]))"],
                          capture_output=True, text=True, env=env, cwd=cwd)


def test_installed_package_finds_the_prefix_bin(tmp_path):
    tmp_path = tmp_path.resolve()
    for prefix, site in ((tmp_path / "venv", "lib/python3.11/site-packages"),
                         (tmp_path / "opt", "lib/python3/dist-packages")):  # Debian's meson install
        fake_programs(prefix / "bin")
        p = find(installed_copy(prefix, site), str(tmp_path / "nothing"), cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout) == [str(prefix / "bin" / n) for n in PROGRAMS]


def test_installed_package_then_path(tmp_path):
    tmp_path = tmp_path.resolve()
    site = installed_copy(tmp_path / "venv")
    fake_programs(tmp_path / "elsewhere")
    p = find(site, str(tmp_path / "elsewhere"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [str(tmp_path / "elsewhere" / n) for n in PROGRAMS]


def test_installed_package_without_programs_names_reinstall(tmp_path):
    tmp_path = tmp_path.resolve()
    site = installed_copy(tmp_path / "venv")
    p = find(site, str(tmp_path / "nothing"), cwd=tmp_path)
    assert p.returncode != 0
    last = p.stderr.strip().splitlines()[-1]
    bin_dir = tmp_path / "venv" / "bin"
    assert last == (f"capbench.errors.UsageError: capbench-gen not found in {bin_dir} nor on PATH: reinstall "
                    f"capbench (`pip install` builds the programs into {bin_dir}; it needs the build packages of "
                    f"docs/manual.md, \"Installing\"), or set CAPBENCH_BUILD_DIR to a build directory")
    assert "lib/python3.11" not in last.split(" nor on PATH")[0]  # not the source tree's build/ guessed there
