"""The package tree is the architecture: every module imports only its own layer or lower ones.

Layers, lowest first: the top-level modules shared by all (errors, inputs, options, rates, binaries,
held_signals, owners, records, declared, ...) < testbed and remote (a host's programs, reached
with ssh: beside the test bed, each may use the other) < trial < methods < campaign < report < tune < cli.
The test bed knows nothing of trials, a trial nothing of methods, a method nothing of campaigns, the
campaign layer nothing of how its results are shown (it tells the command layer through callbacks,
campaign.runner.RunCallbacks), and nothing but `python -m capbench` imports the command line.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "python" / "capbench"
# Above the top-level modules, lowest first; the packages of one entry are one layer.
LAYERS = (("testbed", "remote", "profile"), ("trial",), ("methods",), ("campaign",), ("report",), ("tune",), ("cli",))
PACKAGES = {name: i for i, names in enumerate(LAYERS) for name in names}
TOP = "__main__"  # `python -m capbench`: above everything

# (importing module, imported module) pairs allowed against the order, each with the reason it stays.
ALLOWED: dict[tuple[str, str], str] = {}  # none today


def module_name(path: Path) -> str:
    parts = ("capbench", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    """0 for capbench and its top-level modules, 1 + the index in LAYERS for a subpackage's."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] == TOP:
        return len(LAYERS) + 1
    if len(parts) > 1 and parts[1] in PACKAGES:
        return PACKAGES[parts[1]] + 1
    return 0


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(module: str, path: Path) -> set[str]:
    """The capbench modules `module` imports, anywhere in it (inside functions too): `from X import
    name` counts as X.name where that is a module, else X."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, `level - 1` packages up
                up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base)
    return {m for m in found if m == "capbench" or m.startswith("capbench.")}


def test_the_layers_see_the_whole_tree():
    """Every module is in a layer the test knows (a new subpackage must be placed in LAYERS)."""
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages == set(PACKAGES), f"place {subpackages ^ set(PACKAGES)} in LAYERS"
    assert {"capbench.cli.main", "capbench.campaign.runner", "capbench.errors"} <= set(MODULES)


def test_no_module_imports_a_higher_layer():
    wrong = sorted(f"{m} (layer {layer(m)}) imports {i} (layer {layer(i)})"
                   for m, path in MODULES.items() for i in imports(m, path)
                   if layer(i) > layer(m) and (m, i) not in ALLOWED)
    assert not wrong, "\n".join(wrong)


def test_every_allowed_exception_is_still_needed():
    """An exception nobody needs any more is removed, so the list shows only what is left to fix."""
    for m, i in ALLOWED:
        assert i in imports(m, MODULES[m]), f"{m} no longer imports {i}: remove it from ALLOWED"


@pytest.mark.parametrize("source, allowed", [
    ("from capbench.report import tables", False),
    ("from capbench.report.tables import print_tables", False),
    ("import capbench.cli.main", False),
    ("from ..report import tables", False),
    ("from . import results", True),
    ("from capbench.trial.measure import TrialResult", True),
    ("from capbench import errors", True),
])
def test_the_check_sees_a_campaign_module_import_upwards(tmp_path, source, allowed):
    """The check itself: a campaign module that imports the report or the command line is caught,
    absolute or relative, inside a function too."""
    probe = tmp_path / "runner.py"
    probe.write_text(f"def f():\n    {source}\n")
    found = imports("capbench.campaign.runner", probe)
    assert found and all(layer(i) <= layer("capbench.campaign.runner") for i in found) is allowed


def test_the_command_line_loads_matplotlib_only_to_draw():
    """`capbench` with any command starts without matplotlib (it wants a writable config directory, which
    an unprivileged user running capbench may not have, and takes a third of a second): the commands that
    draw import it where they draw (cli/run.py, cli/info.py, cli/tune.py)."""
    code = "import sys, capbench.cli.main; print(sorted(m for m in sys.modules if m.startswith('matplotlib'))[:3])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)}).stdout
    assert out.strip() == "[]", out
