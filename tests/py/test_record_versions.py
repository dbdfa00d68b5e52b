"""Records written by earlier capbench versions still load: trials.jsonl lines and run.json as
each version wrote them (tests/py/fixtures), read by the loaders and by `capbench report` and
`capbench compare` in this process.

run-iperf: the first records of schema 1 (written 2026-11-23, before most of today's fields);
run-records-v1: a run of schema 1 with every field of 2026-11-25 (afp-v3 and fanout, 1 and 2
processes, a ring size, 64 B and imix:seed), recorded by a real `capbench run` before records
were typed end to end.
"""

import json
import shutil
from pathlib import Path

import pytest
from capbench.results import read_run, read_trials, scan_trials

from inproc import capbench_inproc

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OLD_RUNS = ["run-iperf", "run-records-v1"]


@pytest.mark.parametrize("name", OLD_RUNS)
def test_old_trials_load_whole(name):
    path = FIXTURES / name
    scan = scan_trials(path)
    lines = (path / "trials.jsonl").read_text().splitlines()
    assert not scan.skipped
    assert len(scan.trials) == len(lines)
    for trial, line in zip(scan.trials, lines):
        record = json.loads(line)
        for key, value in record.items():  # every field written is read back as written
            got = getattr(trial, key)
            assert got == value or (isinstance(got, tuple) and json.loads(json.dumps(got)) == value), key


@pytest.mark.parametrize("name", OLD_RUNS)
def test_old_run_json_loads_whole(name):
    meta = read_run(FIXTURES / name)
    assert meta == json.loads((FIXTURES / name / "run.json").read_text())


@pytest.mark.parametrize("name", OLD_RUNS)
def test_old_runs_report(name, tmp_path):
    run = tmp_path / name
    shutil.copytree(FIXTURES / name, run)
    p = capbench_inproc("report", str(run), "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    assert "skipped" not in p.stderr and "left out" not in p.stderr
    assert (tmp_path / "out" / "report.html").exists()


def test_old_runs_compare(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(FIXTURES / "run-records-v1", a)
    shutil.copytree(FIXTURES / "run-records-v1", b)
    p = capbench_inproc("compare", str(a), str(b), "--out", str(tmp_path / "cmp"))
    assert p.returncode == 0, p.stderr
    assert "capbench:" not in p.stderr
    assert (tmp_path / "cmp" / "compare.html").exists()
    assert len(read_trials(a)) == 8
