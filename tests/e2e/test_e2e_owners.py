"""One owner at a time, on real runs (issue 15): a results folder has one writer, a host setting
several runs raised goes back only when the last of them ends, and a SIGTERM at any early moment
of a run leaves nothing behind."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from capbench import owners
from capbench.testbed import host_sysctl
from capbench.testbed import netns
from capbench.testbed import preflight
from capbench.testbed import veth_pair as testbed
from e2e_env import (decided_trials, READ_INTERPRETER, as_user_argv, assert_ended_measured, assert_one_line_usage_error,
                     assert_run_measured, capbench_cmd,
                     capbench_env, missing_prerequisite, run_capbench, second_user, start_run, unprotected_links)

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
        out, err = proc.communicate(timeout=60)
    assert_ended_measured(proc, out, err)
    trials = decided_trials(d / "trials.jsonl")
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
        out, err = run_b.communicate(timeout=60)
    assert_ended_measured(run_b, out, err)  # 3: the generator fell short at 10 %, a lower bound
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


# --- issue 27: a registry no user can steer, results no user's link can lead astray -----------------
#
# Each as a real second user (useradd), with the kernel's link and FIFO protections off as on the
# audited machine. Root's runs here see a folder of the test's as /run/capbench (bound over it in a
# mount namespace of their own, `unshare --propagation slave`: their mounts stay theirs), so that
# neither the host's registry nor the other runs on this host change what a test sees.

TINY = ("--sizes", "64", "--duration", "0.2", "--backends", "pcap", "--no-report")


@pytest.fixture
def user():
    """A real second user with a home of its own (cbre...), the kernel's link protections off."""
    with unprotected_links(), second_user("cbre") as pw:
        yield pw


@pytest.fixture
def work():
    """A folder every user can reach (as /tmp), root's, 0755: `run` is what root's runs see as
    /run/capbench, `victim.conf` a root file the user can read and must not change."""
    d = Path(tempfile.mkdtemp(prefix="cbreg-"))
    try:
        d.chmod(0o755)
        (d / "run").mkdir(mode=0o755)
        (d / "victim.conf").write_text("precious\n")
        (d / "victim.conf").chmod(0o644)
        yield d
    finally:
        shutil.rmtree(d)


def as_user(pw: pwd.struct_passwd, argv: list[str], caps: tuple[str, ...] = (), **kw) -> subprocess.CompletedProcess:
    return subprocess.run(as_user_argv(pw.pw_uid, pw.pw_gid, argv, caps), capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, **kw)


def with_run_dir(run_dir: Path, argv: list[str]) -> list[str]:
    """`argv` in a mount namespace of its own where `run_dir` is /run/capbench."""
    return ["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c",
            'mount --bind "$0" /run/capbench && exec "$@"', str(run_dir), *argv]


def root_run(work: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`capbench run ARGS` as root, with work/run as /run/capbench."""
    env = capbench_env()
    env.pop(testbed.STATE_DIR_ENV, None)
    return subprocess.run(with_run_dir(work / "run", capbench_cmd("run", *args)), capture_output=True, text=True,
                          env=env, timeout=120, stdin=subprocess.DEVNULL, cwd=cwd)


# The user writes a registry that names the victim, as the audit did: the file's content as `set`
# (so that root's teardown would find it "still set") and its own text as `original`.
PLANT = """
import json, sys
registry, victim = sys.argv[1:3]
entry = {"original": "PWNED", "set": open(victim).read().strip(), "holders": {}}
with open(registry, "w") as f:
    json.dump({"settings": {victim: entry}}, f)
"""


def assert_refused(p: subprocess.CompletedProcess, *words: str) -> None:
    """Exit status 2 and one error line, after at most the run's plan lines (its steps, the engine it
    sends with where the kernel refuses the default: runner.RunOptions.notes), naming `words`."""
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = [line for line in p.stderr.splitlines()
             if not line.startswith(("capbench campaign ", "capbench run: sending with the "))]
    assert len(lines) == 1 and lines[0].startswith("capbench: ") and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


def plant_as(pw: pwd.struct_passwd, work: Path, caps: tuple[str, ...] = ()) -> None:
    p = as_user(pw, ["/usr/bin/python3", "-c", PLANT, str(work / "run" / owners.REGISTRY), str(work / "victim.conf")],
                caps)
    assert p.returncode == 0, p.stderr


def test_a_registry_a_user_owns_is_refused_and_the_victim_left_alone(user, work):
    # The audit: a run with the capabilities (dac_override) made the registry, so the user owns it;
    # with no capability left, the user writes into it; the next root run would have written PWNED.
    plant_as(user, work, caps=("dac_override",))  # the run with the capabilities: the file is theirs now
    plant_as(user, work)  # and without any: they own it
    assert (work / "run" / owners.REGISTRY).stat().st_uid == user.pw_uid
    p = root_run(work, "--results", str(work / "results"), *TINY)
    assert_refused(p, f"/run/capbench/{owners.REGISTRY} is owned by uid {user.pw_uid} "
                                f"({user.pw_name}), not root", f"(rm /run/capbench/{owners.REGISTRY})")
    assert (work / "victim.conf").read_text() == "precious\n"
    assert not (work / "results").exists() and not list((work / "run" / "testbeds").glob("*.json"))


def test_a_registry_folder_a_user_owns_is_refused(user, work):
    # A user whose run was the first after boot made /run/capbench: they need no capability to plant.
    os.chown(work / "run", user.pw_uid, user.pw_gid)
    plant_as(user, work)
    p = root_run(work, "--results", str(work / "results"), *TINY)
    assert_refused(p, f"/run/capbench is owned by uid {user.pw_uid} ({user.pw_name}), "
                                "not root", "(rm -r /run/capbench)")
    assert (work / "victim.conf").read_text() == "precious\n"
    assert not (work / "results").exists()


def test_an_entry_capbench_does_not_make_is_dropped_with_a_line_never_written(user, work):
    # Root's own registry (one written before this check, say) naming the victim: root's run drops it.
    plant_as(user, work, caps=("dac_override",))
    os.chown(work / "run" / owners.REGISTRY, 0, 0)
    p = root_run(work, "--results", str(work / "results"), *TINY)
    assert_run_measured(p)
    warnings = [line for line in p.stderr.splitlines() if owners.REGISTRY in line]
    assert warnings == [f"capbench: warning: /run/capbench/{owners.REGISTRY} names {str(work / 'victim.conf')!r}, "
                        f"which is not a host setting capbench makes (capbench makes no such file setting, or not "
                        f"at 'PWNED'): dropped, never read or written"], p.stderr
    assert (work / "victim.conf").read_text() == "precious\n"
    assert json.loads((work / "run" / owners.REGISTRY).read_text())["settings"] == {}


def test_a_run_with_the_capabilities_keeps_its_own_registry(user, work):
    # Root's folder (bound as /run/capbench, empty) is never touched: the user's state folder is used.
    results = Path(user.pw_dir) / "results"
    env = capbench_env() | {"HOME": user.pw_dir}
    env.pop(testbed.STATE_DIR_ENV, None)
    env.pop("XDG_STATE_HOME", None)
    argv = as_user_argv(user.pw_uid, user.pw_gid, capbench_cmd("run", "--results", str(results), *TINY),
                        preflight.RUN_CAPS + READ_INTERPRETER)
    p = subprocess.run(with_run_dir(work / "run", argv), capture_output=True, text=True, env=env, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert_run_measured(p)
    assert list((work / "run").iterdir()) == []
    state = Path(user.pw_dir) / ".local" / "state" / "capbench"
    for path, mode in ((state, 0o755), (state / owners.REGISTRY, 0o644), (state / testbed.STATE_SUBDIR, 0o755)):
        st = path.stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (user.pw_uid, mode), path
    assert json.loads((state / owners.REGISTRY).read_text())["settings"] == {}


def test_a_results_link_another_user_planted_is_refused(user, work):
    # A shared working folder (sticky and world-writable, as /tmp); the user plants `results` there,
    # leading to a root folder (/etc, say). Root's run in that folder writes nowhere.
    shared, target = work / "shared", work / "target"
    shared.mkdir()
    shared.chmod(0o1777)
    target.mkdir()
    p = as_user(user, ["ln", "-s", str(target), str(shared / "results")])
    assert p.returncode == 0, p.stderr
    p = root_run(work, *TINY, cwd=shared)
    assert_one_line_usage_error(p, "capbench", f"--results results: {shared}/results is a symbolic link of uid "
                                f"{user.pw_uid} ({user.pw_name}): capbench follows a link on the way to its results "
                                "only if you or root made it")
    assert list(target.iterdir()) == []
    # A link of root's own is followed.
    (shared / "results").unlink()
    (shared / "results").symlink_to(target)
    p = root_run(work, *TINY, cwd=shared)
    assert_run_measured(p)
    assert [d.name for d in target.iterdir()] and (next(target.iterdir()) / "trials.jsonl").exists()
