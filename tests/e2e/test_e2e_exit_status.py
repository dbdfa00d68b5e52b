"""Issue 14, item 7: the exit status of `capbench run` tells a script whether anything valid was
measured, and rows that are lower bounds say what to do, on a real test bed."""

from __future__ import annotations

import json

import pytest
from capbench.methods.verdict import measured
from capbench.trial.measure import TrialResult
from e2e_env import missing_prerequisite, run_capbench

pytestmark = pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite()))


def trials_of(tmp_path) -> list[TrialResult]:
    (d,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    return [TrialResult.from_record(json.loads(line)) for line in (d / "trials.jsonl").read_text().splitlines()]


def test_the_exit_status_follows_the_trials_verdicts(tmp_path):
    """The afpacket engine cannot send 1,488,095 pps at 64 B on a small machine, and the xdp counter
    rarely loses what it does send: usually every trial is a lower bound (exit status 3, and the
    terminal says what to try). Whatever this machine does, the status agrees with the trials."""
    p = run_capbench("run", "--engine", "afpacket", "--backends", "xdp", "--sizes", "64", "--duration", "1",
                     "--no-report", "--results", str(tmp_path))
    trials = trials_of(tmp_path)
    assert len(trials) == 1
    if any(measured(r) for r in trials):
        assert p.returncode == 0, p.stderr
    else:
        assert p.returncode == 3, p.stderr
        assert "No trial measured the capture" in p.stdout and "To measure them, try:" in p.stdout
        assert "--method rfc2544" in p.stdout and "nothing valid was measured" in p.stderr


def test_a_run_that_measured_something_exits_0(tmp_path):
    p = run_capbench("run", "--backends", "xdp", "--sizes", "1518", "--rate", "10%", "--duration", "1",
                     "--no-report", "--results", str(tmp_path))
    [r] = trials_of(tmp_path)
    assert measured(r) and p.returncode == 0, (p.returncode, p.stderr)
    assert "To measure them" not in p.stdout
