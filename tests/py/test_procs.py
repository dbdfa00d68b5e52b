import os
import signal
import sys
import textwrap
import time

import pytest
from capbench.owners import process_start_ticks
from capbench.testbed import cgroups, procs
from capbench.testbed.procs import Child, ChildError, ChildSet


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


def test_kept_lines_hold_no_control_character():
    """What a program prints goes into records (stdout_tail, stderr_tail) and error lines, which
    may hold no control character (records.control_text): each is kept as '?'."""
    child = Child("flood", script(r"import sys; sys.stderr.write('a\0\x1b[2Jb\n'); print('c\x07d'); sys.exit(1)"))
    assert child.wait(5) == 1
    assert list(child.stderr_lines) == ["a??[2Jb"] and list(child.stdout_lines) == ["c?d"]
    with pytest.raises(ChildError, match=r"exit status 1.: a\?\?\[2Jb$"):
        child.summary()


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


# --- what a child prints, held within a bound (issue 27, item 4) ------------------------------


def test_lines_end_at_newline_or_carriage_return_and_are_cut():
    lines = procs.Lines(limit=8)
    assert lines.feed(b"ab\ncd\rPackets: 1\r\n") == ["ab", "cd", "Packets:"]
    # A line longer than the limit keeps its start; the rest, over any number of reads, is dropped.
    assert lines.feed(b"0123456789" * 3) == []
    assert lines.feed(b"more\nnext") == ["01234567"]
    assert lines.end() == ["next"] and lines.end() == []
    assert procs.Lines().feed(b"\xff\xfeok\n") == ["\ufffd\ufffdok"]


def test_a_tail_keeps_the_last_lines_cut():
    tail = procs.Tail(keep=3)
    for i in range(1000):
        tail.append(f"{i}" + "x" * 5000)
    assert len(tail) < 6 and tail[-1].startswith("999") and len(tail[-1]) == procs.TAIL_LINE_CHARS


def test_every_line_goes_to_on_line_as_it_arrives_and_only_a_tail_is_kept():
    seen = {"stdout": 0, "stderr": 0}
    last = {}

    def on_line(stream, line):
        seen[stream] += 1
        last[stream] = line

    child = Child("chatty", script("""
        import sys
        for i in range(100000):
            print(f"line {i}")
            print(f"err {i}", file=sys.stderr)
        """), on_line=on_line)
    assert child.wait(60) == 0
    assert seen == {"stdout": 100000, "stderr": 100000} and last == {"stdout": "line 99999", "stderr": "err 99999"}
    assert len(child.stdout_lines) < 2 * procs.TAIL_LINES and child.stdout_lines[-1] == "line 99999"
    assert len(child.stderr_lines) < 2 * procs.TAIL_LINES and child.stderr_lines[-1] == "err 99999"
    # Its stdout messages: the latest, within their bound.
    kept = child.messages
    assert kept[-1] == {"type": "text", "text": "line 99999"}
    assert len(kept) * procs.MESSAGE_OVERHEAD_BYTES <= procs.MESSAGES_MAX_BYTES


def test_output_without_a_line_end_is_cut_not_held():
    child = Child("zeros", script("""
        import sys
        sys.stdout.buffer.write(b"{" + b"0" * (50 << 20))
        sys.stdout.flush()
        print()
        print('{"type": "summary", "received": 1}')
        """))
    assert child.wait(60) == 0
    assert child.summary() == {"type": "summary", "received": 1}
    assert len(child.stdout_lines[0]) == procs.TAIL_LINE_CHARS
    assert [m["type"] for m in child.messages] == ["text", "summary"]
    assert len(child.messages[0]["text"]) == procs.TAIL_LINE_CHARS


def test_wait_for_reads_each_message_once_in_order():
    child = Child("counter", script("""
        import json
        for t in ("ready", "interval", "ready", "summary"):
            print(json.dumps({"type": t}), flush=True)
        """))
    assert child.wait_for("ready", 5) == {"type": "ready"}
    assert child.wait_for("summary", 5) == {"type": "summary"}  # passing the interval and the 2nd ready
    with pytest.raises(ChildError, match="ended before its 'ready' line"):
        child.wait_for("ready", 5)


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
def test_a_command_that_left_a_child_running_ends_without_waiting_for_it():
    # An adapter's post command: its background child holds the pipes, and the group's end
    # closes them, so capbench waits for the command, not for that child.
    t0 = time.monotonic()
    post = Child("post", ["sh", "-c", "sleep 777 & echo $!; echo done >&2"])
    assert post.wait(10) == 0
    assert time.monotonic() - t0 < 5
    assert post.stderr_lines[-1] == "done"
    assert not running(int(post.stdout_lines[0]))


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
