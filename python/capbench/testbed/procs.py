"""Run one C program as a child: JSON Lines on stdout, errors on stderr.

Each child runs in its own process group (so a Ctrl-C at the terminal reaches
capbench, which then stops the children in order) and, where the host allows,
in a cgroup of its own (testbed.cgroups) that holds it and everything it starts,
with a reader thread per stream that parses stdout lines into dicts. `stop()`
sends SIGTERM, then SIGKILL after a timeout, and kills what is left in its
cgroup; `ChildSet` stops every child it started when its `with` block ends,
however it ends.

What a child prints is read as a stream and held within a bound, whatever it
prints (a flood, a line without end): a line ends at a newline or a carriage
return and is cut at LINE_MAX_BYTES; each stream keeps its last TAIL_LINES lines
(each cut at TAIL_LINE_CHARS) for errors and records; the JSON messages are kept
up to MESSAGES_MAX_BYTES (the oldest go first). A caller that needs every line
(a program's counts) takes them as they arrive (`on_line`). So a child costs
capbench at most about OUTPUT_MAX_BYTES of memory.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from capbench import held_signals
from capbench.testbed import cgroups
from capbench.testbed import netns
from capbench.errors import RunError
from capbench.records import printable

# A line is cut here, the rest up to its end dropped: more than capbench's own summary lines or an
# eve.json stats event hold.
LINE_MAX_BYTES = 1 << 20
TAIL_LINES = 32  # the last lines of each stream kept, for errors and records
TAIL_LINE_CHARS = 1024  # each cut here
MESSAGES_MAX_BYTES = 2 << 20  # JSON lines kept, by their length: interval lines of an hour, the summary
MESSAGE_OVERHEAD_BYTES = 512  # what a kept message costs beyond its line (a dict, its strings)
READ_CHUNK = 64 << 10  # one read(2) of a pipe
# What one child's output may hold in capbench at once, in characters of its lines (each line
# held as a Python string or dict costs a small multiple): per stream a chunk and a line being
# read; the tails; the messages.
OUTPUT_MAX_BYTES = 2 * (READ_CHUNK + LINE_MAX_BYTES + 2 * TAIL_LINES * TAIL_LINE_CHARS) + MESSAGES_MAX_BYTES
_EOL = re.compile(rb"\r\n|\r|\n")

# (stream, line): called by the reader thread for every line as it arrives; it must not raise (the
# reader would end and the child block on a full pipe).
OnLine = Callable[[str, str], None]


class Lines:
    """A byte stream cut into lines as it arrives: a line ends at "\\n", "\\r" or "\\r\\n" (progress
    output rewrites its line with "\\r"); a line longer than `limit` bytes is cut there and the rest
    of it dropped, so the partial line held never exceeds `limit`. Bytes that are not UTF-8 read as
    U+FFFD."""

    def __init__(self, limit: int = LINE_MAX_BYTES):
        self.limit = limit
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[str]:
        """The lines `data` completes."""
        *ends, rest = _EOL.split(data)
        out = []
        for part in ends:
            self._take(part)
            out.append(self._buf.decode("utf-8", "replace"))
            self._buf.clear()
        self._take(rest)
        return out

    def end(self) -> list[str]:
        """The last line, if the stream ended without a line end."""
        line = self._buf.decode("utf-8", "replace")
        self._buf.clear()
        return [line] if line else []

    def _take(self, part: bytes) -> None:
        room = self.limit - len(self._buf)
        if room > 0:
            self._buf += part[:room]


def read_lines(fd: int, on_line: Callable[[str], None], limit: int = LINE_MAX_BYTES,
               max_bytes: int | None = None) -> None:
    """Every line of `fd` (a pipe, a file) to `on_line` until its end (or `max_bytes`), in
    READ_CHUNK reads."""
    lines = Lines(limit)
    left = max_bytes
    while (left is None or left > 0) and (data := os.read(fd, READ_CHUNK if left is None else min(left, READ_CHUNK))):
        if left is not None:
            left -= len(data)
        for line in lines.feed(data):
            on_line(line)
    for line in lines.end():
        on_line(line)


class Tail(list):
    """The last `keep` lines appended (each cut at TAIL_LINE_CHARS): a list, trimmed as it grows."""

    def __init__(self, keep: int = TAIL_LINES):
        super().__init__()
        self.keep = keep

    def append(self, line: str) -> None:
        # A program may print anything (NULs, escapes): kept lines go into records and messages.
        super().append(printable(line[:TAIL_LINE_CHARS]))
        if len(self) >= 2 * self.keep:  # trimmed in batches: amortised O(1) per line
            del self[:-self.keep]


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

    def __init__(self, name: str, argv: Sequence[str], *, netns_name: str | None = None,
                 on_line: OnLine | None = None):
        self.name = name
        if not argv or ("/" in argv[0] and not os.access(argv[0], os.X_OK)):
            raise ChildError(f"cannot start {name}: {argv[0] if argv else '(no program)'} is not an executable file")
        self.group = cgroups.new_group(name)  # None: the process group alone holds it (cgroups.containment)
        self.argv = _contained_argv(self.group, netns_name, argv)
        self.stdout_lines = Tail()  # the last stdout lines as printed (a program that prints no JSON)
        self.stderr_lines = Tail()  # the last non-blank stderr lines
        self.killed_after_s: float | None = None  # set when stop() had to SIGKILL it
        self._on_line = on_line
        # The JSON messages kept (seq, message, what it costs: its line and MESSAGE_OVERHEAD_BYTES),
        # the count read so far, the next one wait_for looks at, whether stdout has ended; the lock
        # guards them all.
        self._msgs: collections.deque[tuple[int, dict, int]] = collections.deque()
        self._msg_bytes = 0
        self._seq = 0
        self._taken = 0
        self._eof = False
        self._cond = threading.Condition()
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

    # --- reader threads (each owns one stream; they share the tails, read elsewhere, and the messages,
    # under the lock)

    def _line(self, stream: str, line: str) -> None:
        if self._on_line is not None:
            self._on_line(stream, line)

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        try:
            read_lines(self.proc.stdout.fileno(), self._stdout_line)
        finally:
            with self._cond:
                self._eof = True
                self._cond.notify_all()

    def _stdout_line(self, line: str) -> None:
        self._line("stdout", line)
        self.stdout_lines.append(line)
        line = line.strip()
        if not line:
            return
        msg = None
        if line.startswith("{"):
            try:
                msg = json.loads(line)
            except (ValueError, RecursionError):
                pass
        if not isinstance(msg, dict):
            msg = {"type": "text", "text": line[:TAIL_LINE_CHARS]}
        size = len(line) + MESSAGE_OVERHEAD_BYTES
        with self._cond:
            self._msgs.append((self._seq, msg, size))
            self._seq += 1
            self._msg_bytes += size
            while self._msg_bytes > MESSAGES_MAX_BYTES and len(self._msgs) > 1:
                self._msg_bytes -= self._msgs.popleft()[2]
            self._cond.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        read_lines(self.proc.stderr.fileno(), self._stderr_line)

    def _stderr_line(self, line: str) -> None:
        self._line("stderr", line)
        if line.strip():
            self.stderr_lines.append(line)

    @property
    def messages(self) -> list[dict]:
        """The JSON objects read from stdout (its other lines as {"type": "text"}), in order: the
        latest MESSAGES_MAX_BYTES of them."""
        with self._cond:
            return [m for _, m, _ in self._msgs]

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
        with self._cond:
            while True:
                for seq, msg, _ in self._msgs:
                    if seq < self._taken:
                        continue
                    self._taken = seq + 1
                    if msg.get("type") == msg_type:
                        return msg
                if self._eof:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self.failure(f"sent no {msg_type!r} line within {timeout_s:g} s")
                self._cond.wait(left)
        self.proc.wait()
        raise self.failure(f"ended before its {msg_type!r} line")

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
        # Run in order once the block has stopped every child: what a child would have cleaned up
        # after a normal end (trial.program_run.ProgramRun.cleanup).
        self.after_stop: list[Callable[[], None]] = []

    def start(self, name: str, argv: Sequence[str], *, netns_name: str | None = None,
              on_line: OnLine | None = None) -> Child:
        child = Child(name, argv, netns_name=netns_name, on_line=on_line)
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
            for fn in self.after_stop:
                fn()

