import os
import signal
import sys
import textwrap
import time

import pytest
from capbench.owners import process_start_ticks
from capbench.testbed import cgroups
from capbench.testbed.procs import Child, ChildError, ChildSet, run


def script(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


READY_THEN_SUMMARY_ON_TERM = script(
    """
    import json, signal, sys, time
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    print("not json", flush=True)
    print(json.dumps({"type": "ready", "iface": "x"}), flush=True)
    while not stop:
        time.sleep(0.01)
    print(json.dumps({"type": "summary", "received": 42}), flush=True)
    """
)


def test_ready_and_summary():
    child = Child("counter", READY_THEN_SUMMARY_ON_TERM)
    assert child.wait_for("ready", 5)["iface"] == "x"
    assert child.running
    assert child.stop(5) == 0
    assert child.summary()["received"] == 42
    assert {"type": "text", "text": "not json"} in child.messages


def test_early_exit_reports_stderr_line():
    child = Child("counter", script("import sys; print('counter: no such device eth9', file=sys.stderr); sys.exit(2)"))
    with pytest.raises(ChildError, match=r"counter ended before its 'ready' line \(exit status 2\): counter: no such device eth9"):
        child.wait_for("ready", 5)


def test_missing_ready_times_out():
    child = Child("slow", script("import time; time.sleep(30)"))
    t0 = time.monotonic()
    with pytest.raises(ChildError, match="sent no 'ready' line within 0.3 s"):
        child.wait_for("ready", 0.3)
    assert time.monotonic() - t0 < 3
    child.stop(1)
    assert not child.running


def test_summary_of_failed_child_raises():
    child = Child("gen", script("import sys; print('gen: rate above wire rate', file=sys.stderr); sys.exit(2)"))
    assert child.wait(5) == 2
    with pytest.raises(ChildError, match="gen failed .exit status 2.: gen: rate above wire rate"):
        child.summary()


def test_summary_missing_raises():
    child = Child("gen", script("pass"))
    child.wait(5)
    with pytest.raises(ChildError, match="printed no summary line"):
        child.summary()


def test_sigkill_after_timeout_and_no_child_left():
    with ChildSet(stop_timeout_s=0.3) as kids:
        stubborn = kids.start("stubborn", script(
            """
            import signal, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            print('{"type": "ready"}', flush=True)
            time.sleep(60)
            """))
        stubborn.wait_for("ready", 5)
        pid = stubborn.pid
    assert stubborn.proc.returncode == -9
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # The error says capbench killed it, and after how long: not a bare "signal 9".
    with pytest.raises(ChildError, match=r"stubborn did not stop within 0.3 s of SIGTERM, so capbench killed it"):
        stubborn.summary()


def test_childset_stops_children_on_exception():
    with pytest.raises(RuntimeError):
        with ChildSet() as kids:
            child = kids.start("counter", READY_THEN_SUMMARY_ON_TERM)
            child.wait_for("ready", 5)
            raise RuntimeError("trial failed")
    assert not child.running
    assert child.summary()["received"] == 42


def test_missing_program():
    with pytest.raises(ChildError, match="cannot start nothing"):
        Child("nothing", ["/nonexistent/capbench-nothing"])


def test_own_process_group():
    child = Child("counter", READY_THEN_SUMMARY_ON_TERM)
    child.wait_for("ready", 5)
    assert os.getpgid(child.pid) == child.pid != os.getpgid(0)
    child.stop()


def no_cgroups_reason() -> str:
    """Why this host holds programs with their process group only ("" where cgroups hold them)."""
    return "" if cgroups.run_group() is not None else cgroups.containment()


needs_cgroups = pytest.mark.skipif(bool(no_cgroups_reason()), reason=no_cgroups_reason())


def running(pid: int) -> bool:
    return process_start_ticks(pid) is not None


# A program that ends on SIGTERM and leaves a child that ignores it, in a process group of its own.
LEAVES_A_STUBBORN_CHILD = script(
    """
    import json, os, signal, subprocess, sys, time
    kid = subprocess.Popen(["sh", "-c", "trap '' TERM; exec sleep 777"], process_group=0)
    print(json.dumps({"type": "ready", "kid": kid.pid}), flush=True)
    time.sleep(60)
    """
)


@needs_cgroups
def test_what_a_child_started_ends_with_it():
    """Its cgroup holds what it started, even out of its process group and deaf to SIGTERM."""
    with ChildSet(stop_timeout_s=0.5) as kids:
        child = kids.start("leaves", LEAVES_A_STUBBORN_CHILD)
        kid = child.wait_for("ready", 5)["kid"]
        group = child.group
        assert group is not None and kid in group.pids()
    assert child.proc.returncode == -signal.SIGTERM
    assert not running(kid)
    assert not group.path.exists()


@needs_cgroups
def test_run_ends_what_the_command_left_running():
    t0 = time.monotonic()
    p = run("post", ["sh", "-c", "sleep 777 & echo $!; echo done >&2"], netns_name=None, timeout_s=10)
    assert time.monotonic() - t0 < 5  # its background child holds no pipe capbench waits on
    assert p.returncode == 0 and p.stderr == "done\n"
    assert not running(int(p.stdout))


def test_run_kills_a_command_that_does_not_end():
    t0 = time.monotonic()
    with pytest.raises(ChildError, match=r"^slow did not finish within 0.3 s: killed$"):
        run("slow", ["sleep", "30"], netns_name=None, timeout_s=0.3)
    assert time.monotonic() - t0 < 3


@needs_cgroups
def test_a_child_that_ended_by_itself_takes_what_it_left_with_it():
    child = Child("gen", script(
        """
        import subprocess
        print(subprocess.Popen(["sh", "-c", "trap '' TERM; exec sleep 777"], process_group=0).pid, flush=True)
        """))
    group = child.group
    assert child.wait(10) == 0
    assert not running(int(child.stdout_lines[0]))
    assert child.group is None and not group.path.exists()
