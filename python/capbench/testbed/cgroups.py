"""Every program capbench starts, and everything that program starts, in a cgroup (v2) of its own.

A process group and the parent-death signal (procs) do not hold a program: one that changes its
user (tcpdump -Z) loses its parent-death signal, and a child may leave the process group or ignore
SIGTERM. Membership of a cgroup survives both: a process cannot leave it without write access to
the cgroup files, its children are born in it, and `cgroup.kill` (kernel 5.14) SIGKILLs every
process in it and below, whoever they run as. Only membership and cgroup.kill are used: no
controller is enabled, so the "no internal processes" rule (a cgroup with domain controllers in
its subtree_control holds no processes) never applies to these groups.

Where: a child of capbench's own cgroup (the v2 line "0::PATH" of /proc/self/cgroup, under the
cgroup2 mount of /proc/self/mountinfo: /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid
host). It needs no write access above capbench's own cgroup (a delegated subtree is enough), the
programs stay inside capbench's own resource limits (a CPU quota on capbench covers what it
measures), and a cgroup that holds capbench itself has no domain controllers enabled, so a child
of it can always hold processes. One group per capbench process, named after it:

    <capbench's cgroup>/capbench-<pid>-<start ticks>/<n>-<program>

A run group whose owner (pid and start time, as the test bed's state file records them) no longer
runs is a killed capbench's: `hygiene` finds such groups anywhere in the hierarchy, kills what is
in them and removes them.

Without a usable cgroup v2 (none mounted, no cgroup.kill, no write access: no root and no
delegated subtree) capbench falls back to the process group and parent-death signal alone, and
`containment()` says so for run.json.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from capbench.errors import RunError
from capbench.owners import process_start_ticks

RUN_GROUP_PREFIX = "capbench-"
# capbench-<owner pid>-<its start ticks>-<its pid namespace>: a pid means a process only in its own
# pid namespace, and the cgroup hierarchy may be shared with another one (a container's, or the host's
# seen from a container): a group of another pid namespace is not this capbench's to judge.
RUN_GROUP_RE = re.compile(rf"^{RUN_GROUP_PREFIX}(\d+)-(\d+)-(\d+)$")
KILL_WAIT_S = 5.0  # after cgroup.kill: SIGKILL is delivered at once; a process in D state may take a while
POLL_S = 0.01
# Into the cgroup before the exec: the shell writes its own pid (cgroup.procs takes one pid a write),
# then exec()s the program, which starts inside the group, as does everything it starts.
# Measured here: 1.5-3 ms more per start (a dash, and the migration), beside 20-35 ms for
# `setpriv … ip netns exec NS` itself. Python 3.11's subprocess has no cgroup argument (clone3's
# CLONE_INTO_CGROUP), and a preexec_fn that writes the pid is unsafe in a process with threads.
ENTER_SCRIPT = 'echo $$ > "$0" && exec "$@"'
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.+-]+")


def pid_namespace() -> int:
    """This process's pid namespace (the inode of /proc/self/ns/pid)."""
    return os.stat("/proc/self/ns/pid").st_ino


def run_group_name(pid: int, start_ticks: int, pidns: int | None = None) -> str:
    """The name of the run group of capbench process `pid` started at `start_ticks`, in pid namespace
    `pidns` (this process's by default)."""
    return f"{RUN_GROUP_PREFIX}{pid}-{start_ticks}-{pid_namespace() if pidns is None else pidns}"


def owner_of(name: str) -> tuple[int, int, int] | None:
    """(pid, start ticks, pid namespace) of the capbench that made run group `name`; None for any
    other name."""
    m = RUN_GROUP_RE.match(name)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def _unescape(field: str) -> str:
    """A mountinfo path: space, tab, newline and backslash are written as \\040-style octal."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def cgroup2_mounts(mountinfo: str) -> list[tuple[str, str]]:
    """(root inside the hierarchy, mount point) of every cgroup2 mount in a mountinfo text."""
    found = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, fs = left.split(), right.split()
        if sep and len(fields) >= 5 and fs and fs[0] == "cgroup2":
            found.append((_unescape(fields[3]), _unescape(fields[4])))
    return found


def own_path(proc_cgroup: str) -> str | None:
    """The v2 cgroup path of a /proc/PID/cgroup text (its "0::PATH" line); None without one or when
    it lies outside this cgroup namespace (shown with "/..")."""
    for line in proc_cgroup.splitlines():
        if line.startswith("0::"):
            path = line[3:].strip()
            return path if path.startswith("/") and "/.." not in path else None
    return None


def directory_of(path: str, mounts: Sequence[tuple[str, str]]) -> Path | None:
    """Where cgroup `path` is in the file system: under the mount whose root holds it (the whole
    hierarchy's mount first); None if no mount shows it."""
    for root, point in sorted(mounts, key=lambda m: len(m[0])):
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return Path(point) / path[len(root):].lstrip("/")
    return None


def hierarchy_root(mountinfo: str | None = None) -> Path | None:
    """Where the cgroup2 hierarchy is mounted (the mount of its widest part; this process's
    /proc/self/mountinfo by default); None if nowhere."""
    text = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
    mounts = sorted(cgroup2_mounts(text), key=lambda m: len(m[0]))
    return Path(mounts[0][1]) if mounts else None


@dataclass(frozen=True)
class Group:
    """One cgroup v2 directory capbench made."""

    path: Path

    def enter_argv(self, argv: Sequence[str]) -> list[str]:
        """`argv` started inside this group (ENTER_SCRIPT)."""
        return ["sh", "-c", ENTER_SCRIPT, str(self.path / "cgroup.procs"), *argv]

    def child(self, name: str) -> Group:
        path = self.path / name
        path.mkdir()
        return Group(path)

    def pids(self) -> list[int]:
        """The processes in this group and below it."""
        found = []
        for d, _, _ in os.walk(self.path):
            with contextlib.suppress(OSError):
                found += [int(p) for p in Path(d, "cgroup.procs").read_text().split()]
        return found

    def populated(self) -> bool:
        """Whether a process runs in this group or below (cgroup.events; an exited process that
        waits to be reaped no longer counts)."""
        try:
            return "populated 1" in (self.path / "cgroup.events").read_text()
        except FileNotFoundError:
            return False

    def wait_empty(self, deadline: float) -> bool:
        """Until no process is left in it, or the monotonic `deadline`; whether it is empty."""
        while self.populated():
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)
        return True

    def kill(self) -> None:
        """SIGKILL every process in this group and below it (the kernel's, whatever user they run as).
        PermissionError without write access to it."""
        with contextlib.suppress(FileNotFoundError):
            (self.path / "cgroup.kill").write_text("1")

    def end(self, deadline: float | None = None) -> bool:
        """Let what runs in it end by itself until `deadline` (None: not at all), then kill it and
        remove the group, its children first; whether it is gone."""
        if deadline is None or not self.wait_empty(deadline):
            try:
                self.kill()
            except PermissionError:
                return False
            self.wait_empty(time.monotonic() + KILL_WAIT_S)
        gone = True
        for d, _, _ in sorted(os.walk(self.path), key=lambda w: -len(w[0])):
            try:
                os.rmdir(d)
            except FileNotFoundError:
                pass
            except OSError:
                gone = False  # still populated: the next run or `testbed down` ends it
        return gone


def program_name(seq: int, name: str) -> str:
    """The group of the `seq`-th program a capbench starts, `name` made a directory name."""
    return f"{seq}-{_NAME_CHARS.sub('-', name).strip('-')[:40] or 'program'}"


@dataclass
class _RunGroup:
    """This process's run group, made at its first program (or the reason there is none)."""

    pid: int
    group: Group | None
    why_not: str


_run: _RunGroup | None = None
_making = threading.Lock()  # the trial's threads may start programs at once
_seq = itertools.count(1)


def _make_run_group() -> _RunGroup:
    pid = os.getpid()
    try:
        mounts = cgroup2_mounts(Path("/proc/self/mountinfo").read_text())
        path = own_path(Path("/proc/self/cgroup").read_text())
    except OSError as e:
        return _RunGroup(pid, None, f"cannot read this process's cgroup: {e.strerror}")
    if not mounts:
        return _RunGroup(pid, None, "no cgroup v2 hierarchy is mounted")
    own = directory_of(path, mounts) if path is not None else None
    if own is None:
        return _RunGroup(pid, None, "capbench's own cgroup v2 is not visible here")
    group = Group(own / run_group_name(pid, process_start_ticks(pid) or 0))
    try:
        group.path.mkdir()
    except FileExistsError:
        pass
    except OSError as e:
        return _RunGroup(pid, None, f"cannot make a cgroup in {own}: {e.strerror} (no root, no delegated subtree)")
    if not (group.path / "cgroup.kill").exists():
        group.end()
        return _RunGroup(pid, None, "the kernel's cgroup v2 has no cgroup.kill (it came in Linux 5.14)")
    # Placing a process needs write access to the cgroup.procs of both groups' common ancestor:
    # try it once with a process that does nothing.
    try:
        placed = subprocess.run(group.enter_argv(["true"]), stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, timeout=10)
        ok, err = placed.returncode == 0, placed.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        ok, err = False, str(e)
    if not ok:
        group.end()
        return _RunGroup(pid, None, f"cannot place a process in {group.path}: {err or 'no reason given'}")
    atexit.register(group.end)
    return _RunGroup(pid, group, "")


def run_group() -> Group | None:
    """This process's run group (made once; a fork gets its own); None where cgroups cannot hold
    the programs (containment() says why)."""
    global _run
    with _making:
        if _run is None or _run.pid != os.getpid():
            _run = _make_run_group()
        return _run.group


def new_group(name: str) -> Group | None:
    """A new group for one program (and everything it starts) in the run group; None without one.
    RunError if the kernel refuses it (cgroup.max.descendants, say)."""
    global _run
    run = run_group()
    if run is None:
        return None
    child = program_name(next(_seq), name)
    try:
        return run.child(child)
    except FileNotFoundError:  # the run group itself was removed under us (by hand): make it again
        with _making:
            _run = None
        return new_group(name)
    except OSError as e:
        raise RunError(f"cannot make the cgroup {run.path / child} for {name}: {e.strerror}") from None


FALLBACK = ("process group and parent-death signal only: a program that changes its user (tcpdump -Z) "
            "or leaves its process group can outlive a killed capbench")


def containment() -> str:
    """How this capbench holds the programs it starts, for run.json."""
    group = run_group()
    if group is not None:
        return f"cgroup v2 {group.path} (each program and its children in a group, killed at the trial's end)"
    assert _run is not None
    return f"{FALLBACK} ({_run.why_not})"


def run_groups(root: Path | None) -> Iterator[tuple[Group, int, int]]:
    """Every run group under `root` (the hierarchy's, `hierarchy_root`) made in this pid namespace,
    with its owner's pid and start ticks."""
    here = pid_namespace()
    for d, dirs, _ in os.walk(root) if root is not None else ():
        for name in list(dirs):
            owner = owner_of(name)
            if owner is not None:
                dirs.remove(name)  # the groups in it are its programs'
                if owner[2] == here:
                    yield Group(Path(d) / name), owner[0], owner[1]


def command_line(pid: int) -> str:
    """The command line of a running process ("" once it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
