"""Set up the Makefile's development venv from pyproject.toml: `VENV/bin/python tools/dev_venv.py [EXTRA...]`.

It installs what pyproject.toml declares (the dependencies, the extras named, the build
requirements, so `pip wheel --no-build-isolation .` works offline), puts the source tree's
python/ on the venv's sys.path with a .pth file and writes the [project.scripts] commands.

Why not `pip install -e .`: meson-python's editable install (the build backend) imports
capbench through a finder placed before sys.path that rebuilds ./build on every import, so
PYTHONPATH=other-checkout/python would still import this checkout's capbench. A .pth entry
comes after PYTHONPATH, as setuptools' editable install did, and the C programs stay those of
`make build` (./build, where capbench.binaries looks in a source tree).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PTH = "capbench-source-tree.pth"


def main(extras: list[str]) -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    requirements = [*project["dependencies"], *pyproject["build-system"]["requires"]]
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    # An older venv of this checkout had capbench installed with setuptools' editable install:
    # its metadata in the venv and the egg-info it wrote into python/ (on sys.path here, where
    # pip would take it for an installed capbench) go; the sources stay.
    shutil.rmtree(REPO / "python" / f"{project['name']}.egg-info", ignore_errors=True)
    if subprocess.run([*pip, "show", project["name"]], capture_output=True).returncode == 0:
        subprocess.run([*pip, "uninstall", "-y", project["name"]], check=True)
    subprocess.run([*pip, "install", *requirements], check=True)
    Path(sysconfig.get_path("purelib"), PTH).write_text(f"{REPO / 'python'}\n", encoding="utf-8")
    for name, target in project.get("scripts", {}).items():
        module, _, func = target.partition(":")
        script = Path(sysconfig.get_path("scripts"), name)
        script.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {func}\n"
                          f"sys.exit({func}())\n", encoding="utf-8")
        script.chmod(0o755)


if __name__ == "__main__":
    main(sys.argv[1:])
