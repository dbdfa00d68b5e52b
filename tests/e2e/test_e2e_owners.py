"""One owner at a time, on real runs (issue 15): a results folder has one writer, a host setting
several runs raised goes back only when the last of them ends, and a SIGTERM at any early moment
of a run leaves nothing behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from capbench import owners
from capbench.testbed import host_sysctl
from capbench.testbed import netns
from capbench.testbed import veth_pair as testbed
from e2e_env import (assert_one_line_usage_error, capbench_cmd, capbench_env, missing_prerequisite, run_capbench,
                     start_run)

pytestmark = pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite()))

QUICK = ("--backends", "afp-v3", "--rate", "10%", "--no-report")


def backlog() -> int:
    return int(host_sysctl.read(host_sysctl.BACKLOG))


def holders() -> set[str]:
    """The test beds holding a host setting now (the registry every run sees)."""
    return {h for entry in owners.HostSettings().held().values() for h in entry["holders"]}


def test_resume_of_a_live_run_is_refused_naming_its_pid(tmp_path):
    proc, _ = start_run(tmp_path, *QUICK, "--sizes", "64,128", "--duration", "2")
    (d,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    try:
        p = run_capbench("run", "--resume", str(d))
        assert_one_line_usage_error(p, "capbench", f"{d} is being written by the run of pid {proc.pid}")
    finally:
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    trials = [json.loads(line) for line in (d / "trials.jsonl").read_text().splitlines()]
    assert [t["frame_len"] for t in trials] == [64, 128]  # the refused resume wrote nothing
    assert json.loads((d / "run.json").read_text())["status"] == "complete"


@pytest.mark.parametrize("b_above_a", [False, True])
def test_testbed_down_of_a_killed_run_keeps_what_a_living_run_holds(tmp_path, b_above_a):
    before = backlog()
    a_value = before + 2000
    b_value = a_value + 1000 if b_above_a else before + 1000
    run_a, a = start_run(tmp_path / "a", *QUICK, "--sizes", "64", "--duration", "30", "--backlog", str(a_value))
    os.killpg(run_a.pid, signal.SIGKILL)  # no chance to clean up: its test bed and its hold stay
    run_a.communicate(timeout=10)
    run_b, b = start_run(tmp_path / "b", *QUICK, "--sizes", "64", "--duration", "3", "--backlog", str(b_value))
    try:
        assert {a, b} <= holders()
        assert backlog() == max(a_value, b_value)
        status = run_capbench("testbed", "status").stdout
        assert re.search(rf"{host_sysctl.BACKLOG} = {max(a_value, b_value)}, held by test bed\(s\) .*{min(a, b)}, "
                         rf".*{max(a, b)}.*: back to {before} when the last of them is removed", status), status
        p = run_capbench("testbed", "down", a)
        assert p.returncode == 0 and f"removed test bed {a}" in p.stdout, p.stderr
        assert backlog() == max(a_value, b_value)  # run B still measures with it
        assert a not in holders() and b in holders()
    finally:
        _, err = run_b.communicate(timeout=60)
    assert run_b.returncode == 0, err
    assert backlog() == before  # the original, found by the first holder
    (d,) = [p for p in (tmp_path / "b").iterdir() if p.is_dir()]
    system = json.loads((d / "run.json").read_text())["system"]
    assert system["host_settings"] == [{"key": host_sysctl.BACKLOG, "was": str(a_value),
                                        "set": str(max(a_value, b_value)), "restores_to": str(before)}]
    assert not {a, b} & holders()
    assert not {f"capbench-{x}-{side}" for x in (a, b) for side in ("gen", "cap")} & set(netns.list_netns())


# From the start of the interpreter, through the results folder (~0.25 s here) and the test bed
# (~0.3 s), into the first trial; and the moments something appears, seen by polling: the results
# folder (the run made it a few ms before it makes the test bed), the test bed's state file (the
# first thing of a test bed), its capture namespace (the middle of its making).
EARLY = (0.0, 0.05, 0.1, 0.2, 0.23, 0.26, 0.3, 0.35, 0.4, 0.6, 1.0, "results", "state", "namespace")


def wait_for(what: str, results: Path, state: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        if what == "results" and results.exists():
            return
        if what == "state" and state.exists() and list(state.glob("*.json")):
            return
        if what == "namespace" and state.exists():
            ids = [p.stem for p in state.glob("*.json")]
            if ids and (owners.NETNS_DIR / f"capbench-{ids[0]}-cap").exists():
                return
        time.sleep(0.0005)
    pytest.fail(f"capbench run never made its {what}")


@pytest.mark.parametrize("moment", EARLY)
def test_sigterm_at_any_early_moment_leaves_nothing(tmp_path, moment):
    before = backlog()
    raised = before + 777
    results, state = tmp_path / "results", tmp_path / "state"
    env = capbench_env() | {testbed.STATE_DIR_ENV: str(state)}  # this run's test beds only
    proc = subprocess.Popen(capbench_cmd("run", "--results", str(results), *QUICK, "--sizes", "64",
                                         "--duration", "2", "--backlog", str(raised)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if isinstance(moment, str):
        wait_for(moment, results, state, proc)
    else:
        time.sleep(moment)
    proc.send_signal(signal.SIGTERM)  # `kill PID`: to capbench alone, not its children
    _, err = proc.communicate(timeout=30)
    # 143 from capbench's handler; killed by the signal itself before Python ran it
    assert proc.returncode in (143, -signal.SIGTERM), err
    assert "Traceback" not in err
    assert not results.exists(), err  # no empty results folder (nor the folder above it)
    assert not (list(state.glob("*.json")) if state.exists() else []), err
    for tb_id in re.findall(r"test bed ([0-9a-f]{6}):", err):
        assert not {f"capbench-{tb_id}-gen", f"capbench-{tb_id}-cap"} & set(netns.list_netns()), err
        assert tb_id not in holders(), err
    assert backlog() != raised
