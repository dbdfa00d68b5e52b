"""`capbench compare A B --json` (docs/json.md): one strict JSON document on stdout, the tables on
stderr, every change with the fields the doc names; profiles' changes where both runs profiled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
CHANGE_FIELDS = {"figure", "label", "unit", "a", "b", "delta", "rel_pct", "judged", "significant", "worse",
                 "by_repetitions", "p", "answer", "lower_bound_in", "disturbed_in", "not_judged_because"}


def compare_json(a: str, b: str, tmp_path: Path, *extra: str) -> tuple[dict, subprocess.CompletedProcess]:
    p = subprocess.run([sys.executable, "-m", "capbench", "compare", str(FIXTURES / a), str(FIXTURES / b), "--json",
                        "--out", str(tmp_path / "cmp"), *extra], capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(PYTHON_DIR), "PATH": "/usr/bin:/bin"})

    def no_nan(name: str):
        raise AssertionError(f"{name} in the JSON: not JSON")

    return json.loads(p.stdout, parse_constant=no_nan), p


def test_compare_json_is_one_document_of_the_documented_fields(tmp_path):
    doc, p = compare_json("run-searches-a", "run-searches-b", tmp_path)
    assert p.returncode == 0, p.stderr
    assert doc["type"] == "comparison" and doc["a"].endswith("run-searches-a") and doc["b"].endswith("run-searches-b")
    assert doc["changes"] and all(set(c) == {"measurement"} | CHANGE_FIELDS for c in doc["changes"])
    assert all(set(c["a"]) == {"median", "min", "max", "n", "sd"} for c in doc["changes"])
    assert any(c["answer"] for c in doc["changes"])  # the searches' answers are compared too
    assert "regressions" not in doc
    assert "comparison:" in p.stderr  # the human lines are on stderr


def test_compare_json_holds_the_profiles_changes(tmp_path):
    doc, p = compare_json("run-profile", "run-profile-spin", tmp_path, "--fail-on-regression", "5")
    assert p.returncode in (0, 1), p.stderr
    groups = {c["group"] for c in doc["profile"]}
    assert "all" in groups and "app" in groups
    for c in doc["profile"]:
        assert set(c["share_pct"]) == CHANGE_FIELDS
    assert isinstance(doc["regressions"], list) and (p.returncode == 1) == bool(doc["regressions"])


@pytest.mark.parametrize("bad", ["/nonexistent", "run-profile/trials.jsonl"])
def test_compare_json_of_a_bad_folder_is_one_line_and_exit_2(tmp_path, bad):
    p = subprocess.run([sys.executable, "-m", "capbench", "compare", str(FIXTURES / bad), str(FIXTURES / "run-profile"),
                        "--json"], capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(PYTHON_DIR)})
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.strip().splitlines()) == 1, p.stderr
