"""Run one C program as a child: JSON Lines on stdout, errors on stderr.

Each child runs in its own process group (so a Ctrl-C at the terminal reaches
capbench, which then stops the children in order) and, where the host allows,
in a cgroup of its own (testbed.cgroups) that holds it and everything it starts,
with a reader thread per stream that parses stdout lines into dicts and queues
them. `stop()` sends SIGTERM, then SIGKILL after a timeout, and kills what is
left in its cgroup; `ChildSet` stops every child it started when its `with`
block ends, however it ends. `run()` runs a command to its end the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence

from capbench import held_signals
from capbench.testbed import cgroups
from capbench.testbed import netns
from capbench.errors import RunError

_EOF = object()


class ChildError(RunError):
    """A child program failed: exited early, with an error, or did not answer in time."""


def _pdeathsig_prefix() -> list[str]:
    """`setpriv --pdeathsig KILL --` (util-linux) if present: the kernel then kills the
    child if capbench itself dies without cleaning up (SIGKILL, a crash), so no counter
    or XDP program outlives it. The signal survives the exec()s of setpriv and ip."""
    return ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []


def _contained_argv(group: cgroups.Group | None, netns_name: str | None, argv: Sequence[str]) -> list[str]:
    """`argv` killed with capbench (parent-death signal), in `group` (before it execs: its children
    are born there), in `netns_name`. The parent-death signal stays for what the group does not
    cover: the time between a SIGKILL of capbench and the next run, for a program that keeps its user."""
    inside = group.enter_argv([]) if group is not None else []
    return _pdeathsig_prefix() + inside + netns.exec_argv(netns_name, argv)


class Child:
    """One running program. `name` is used in error messages."""

    # Its stdin: nothing (a remote child, capbench.remote.ssh.RemoteChild, takes a pipe that
    # carries its heartbeat).
    STDIN: int = subprocess.DEVNULL

    def __init__(self, name: str, argv: Sequence[str], *, netns_name: str | None = None):
        self.name = name
        if not argv or ("/" in argv[0] and not os.access(argv[0], os.X_OK)):
            raise ChildError(f"cannot start {name}: {argv[0] if argv else '(no program)'} is not an executable file")
        self.group = cgroups.new_group(name)  # None: the process group alone holds it (cgroups.containment)
        self.argv = _contained_argv(self.group, netns_name, argv)
        self.messages: list[dict] = []  # every JSON object read so far, in order
        self.stdout_lines: list[str] = []  # every stdout line as printed (a program that prints no JSON)
        self.stderr_lines: list[str] = []
        self.killed_after_s: float | None = None  # set when stop() had to SIGKILL it
        self._queue: queue.Queue = queue.Queue()
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=self.STDIN,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
                process_group=0,
            )
        except OSError as e:
            self.end_group()
            raise ChildError(f"cannot start {name} ({shlex.join(self.argv)}): {e.strerror}") from None
        self.pid = self.proc.pid  # `ip netns exec` exec()s, so this is the program's own pid
        self._threads = [
            threading.Thread(target=self._read_stdout, name=f"{name}-stdout", daemon=True),
            threading.Thread(target=self._read_stderr, name=f"{name}-stderr", daemon=True),
        ]
        for t in self._threads:
            t.start()

    # --- reader threads (each owns one stream; they share only the queue and append-only lists)

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.stdout_lines.append(line.rstrip("\n"))
            line = line.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                msg = {"type": "text", "text": line}
            if not isinstance(msg, dict):
                msg = {"type": "text", "text": line}
            self.messages.append(msg)
            self._queue.put(msg)
        self._queue.put(_EOF)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if line.strip():
                self.stderr_lines.append(line.rstrip("\n"))

    # --- waiting

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def failure(self, what: str) -> ChildError:
        # Let the stderr reader catch up with a child that just exited.
        if self.proc.poll() is not None:
            self._threads[1].join(timeout=1.0)
        rc = self.proc.poll()
        if self.killed_after_s is not None:
            e = ChildError(f"{self.name} did not stop within {self.killed_after_s:g} s of SIGTERM, so capbench "
                           f"killed it: the host may have stalled, or the program hung; run again, and report "
                           f"it if it repeats")
            return e
        status = "still running" if rc is None else (
            f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}")
        err = self.stderr_lines[-1] if self.stderr_lines else "no message on stderr"
        e = ChildError(f"{self.name} {what} ({status}): {err}")
        if rc == 2:
            e.exit_status = 2  # the programs' "bad input": the user's to fix, as for capbench's own
        return e

    def wait_for(self, msg_type: str, timeout_s: float) -> dict:
        """The next stdout message of `msg_type`; ChildError if the child ends or times out first."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self.failure(f"sent no {msg_type!r} line within {timeout_s:g} s")
            try:
                msg = self._queue.get(timeout=left)
            except queue.Empty:
                continue
            if msg is _EOF:
                self._queue.put(_EOF)  # keep reporting EOF to later calls
                self.proc.wait()
                raise self.failure(f"ended before its {msg_type!r} line")
            if msg.get("type") == msg_type:
                return msg

    def wait_for_line(self, pattern: re.Pattern[str], stream: str, timeout_s: float) -> str | None:
        """The first line of `stream` ("stdout" or "stderr") that `pattern` finds, waiting up to
        `timeout_s`; None if the child ends or the time runs out first (the caller says which)."""
        lines = self.stdout_lines if stream == "stdout" else self.stderr_lines
        deadline = time.monotonic() + timeout_s
        seen = 0
        while True:
            for line in lines[seen:]:
                seen += 1
                if pattern.search(line):
                    return line
            if self.proc.poll() is not None:
                for t in self._threads:  # the rest of its output, then one last look
                    t.join(timeout=1.0)
                return next((line for line in lines[seen:] if pattern.search(line)), None)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def wait(self, timeout_s: float) -> int:
        """Wait for the child to exit and its output to be read; its exit status. What it
        left running is killed: it ended by itself.

        ChildError if it does not exit in time (it keeps running: call stop())."""
        try:
            rc = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise self.failure(f"did not finish within {timeout_s:g} s") from None
        self.end_group()
        for t in self._threads:
            t.join(timeout=2.0)
        return rc

    def summary(self) -> dict:
        """The `summary` line of a child that has exited; ChildError if it printed none or failed."""
        rc = self.proc.poll()
        summaries = [m for m in self.messages if m.get("type") == "summary"]
        if rc is None:
            raise ChildError(f"{self.name} is still running: no summary yet")
        if rc != 0 or not summaries:
            raise self.failure("failed" if rc != 0 else "printed no summary line")
        return summaries[-1]

    # --- stopping

    def signal(self, signum: int) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signum)
            except ProcessLookupError:
                pass

    def stop(self, timeout_s: float = 3.0, *, signalled: bool = False, since_signal_s: float | None = None) -> int:
        """SIGTERM the child's process group (once: a second one may kill a program that
        is writing its summary), SIGKILL it after `timeout_s`; its exit status. What it
        started and left running has the rest of `timeout_s`, then is killed (end_group).
        `since_signal_s`: the whole time it had since SIGTERM, for the error (default `timeout_s`)."""
        deadline = time.monotonic() + timeout_s
        if self.proc.poll() is None:
            if not signalled:
                self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.killed_after_s = timeout_s if since_signal_s is None else since_signal_s
                self.signal(signal.SIGKILL)
                self.proc.wait()
        self.end_group(deadline)
        for t in self._threads:
            t.join(timeout=2.0)
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL and reap at once, with everything it started (for cleanup after an error)."""
        self.signal(signal.SIGKILL)
        self.end_group()
        self.proc.wait()

    def end_group(self, deadline: float | None = None) -> None:
        """Once the program has ended: whatever it started that still runs (a child that ignores
        SIGTERM, one that left the process group or changed its user) has until the monotonic
        `deadline` (None: no time), then the kernel kills it (cgroup.kill); its cgroup goes."""
        if self.group is not None and self.group.end(deadline):
            self.group = None


class ChildSet:
    """Children started in a `with` block; all are stopped when it ends, in reverse order."""

    def __init__(self, stop_timeout_s: float = 3.0):
        self.children: list[Child] = []
        self.stop_timeout_s = stop_timeout_s

    def start(self, name: str, argv: Sequence[str], *, netns_name: str | None = None) -> Child:
        child = Child(name, argv, netns_name=netns_name)
        self.children.append(child)
        return child

    def stop_all(self, timeout_s: float | None = None) -> None:
        """SIGTERM every running child at once, then wait for all (SIGKILL after the timeout)."""
        timeout_s = self.stop_timeout_s if timeout_s is None else timeout_s
        live = [c for c in reversed(self.children) if c.running]
        for c in live:
            c.signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for c in live:
            c.stop(max(0.0, deadline - time.monotonic()), signalled=True, since_signal_s=timeout_s)
        for c in self.children:  # those that ended before: what they left running is the trial's too
            c.end_group()

    def __enter__(self) -> ChildSet:
        return self

    def __exit__(self, *exc) -> None:
        # Held back signals: a second Ctrl-C must not leave a child (and its namespace) behind.
        with held_signals.held():
            self.stop_all()


def run(name: str, argv: Sequence[str], *, netns_name: str | None, timeout_s: float) -> subprocess.CompletedProcess:
    """Run `argv` to its end as a Child runs (in `netns_name`, in a cgroup of its own, killed with
    capbench); its CompletedProcess (text). Whatever it leaves running when it exits is killed
    at once: its work is done. ChildError if it cannot start or does not end within `timeout_s`
    (it is killed, with all it started).

    Its output goes to unlinked files, not pipes: a child it left in the background holds the
    pipes open, and a reader of pipes would wait for that child, not for the command."""
    group = cgroups.new_group(name)
    full = _contained_argv(group, netns_name, argv)
    with tempfile.TemporaryFile("w+", errors="replace") as out, tempfile.TemporaryFile("w+", errors="replace") as err:
        try:
            proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=out, stderr=err, text=True,
                                    process_group=0)
        except OSError as e:
            if group is not None:
                group.end()
            raise ChildError(f"cannot start {name} ({shlex.join(full)}): {e.strerror}") from None
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise ChildError(f"{name} did not finish within {timeout_s:g} s: killed") from None
        finally:
            if group is not None:
                group.end()
            proc.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(list(argv), proc.returncode, out.read(), err.read())
