"""A capture program under test for one trial: start it, know when it captures, stop it, and
collect what it says it counted (its own witness) and the capture file it wrote.

The program (tcpdump, dumpcap, a user's IDS ...) is described by an adapter (trial/apps.py):
its command template, how it says it is ready, how it is stopped and how its counts are read.
It runs in the capture namespace, pinned to the counter's CPU with taskset (the seeds' "counter
CPU"; the template's {cpu} lets a program pin its own threads too), in its own process group.

What can go wrong is part of the measurement, not an error of capbench: a program that exits
before the stop, that does not stop within its grace time (it is killed), or whose output has
no count where its adapter says, makes a *failed* trial (`failure`), whose loss still counts and
which no method ever takes for lossless (methods/verdict.py).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capbench.testbed import cpu
from capbench.testbed import procs
from capbench.testbed.procs import Child, ChildError, ChildSet
from capbench.trial.apps import POST, Adapter, CountError, post_argv

READY_TIMEOUT_S = 10.0  # how long a program has to say it captures (or to live through its ready delay)
TAIL_LINES = 5  # lines of each stream kept in the record
POST_TIMEOUT_S = 60.0  # an adapter's post command (racount of argus's flows: ~1 s for a million frames)


def _taskset(cpu_: int | None) -> list[str]:
    return [] if cpu_ is None else ["taskset", "-c", str(cpu_)]


@dataclass
class ProgramRun:
    """One capture program in one trial. `workdir` is capbench's scratch folder for the trial
    (the template's {out} and {outdir} are in it; the caller removes it)."""

    adapter: Adapter
    netns_name: str | None
    iface: str
    cpu: int | None
    duration_s: float
    workdir: Path
    index: int = 0  # with several processes, which one
    child: Child | None = None
    failure: str = ""
    killed: bool = False
    exit_status: int | None = None
    stop_s: float | None = None  # from the stop signal to its exit
    times0: cpu.TreeTimes | None = None
    times1: cpu.TreeTimes | None = None
    cpus_seen: tuple[int, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.adapter.name if not self.index else f"{self.adapter.name} #{self.index + 1}"

    @property
    def outdir(self) -> Path:
        return self.workdir / f"{self.adapter.name}-{self.index}.d"

    @property
    def out(self) -> Path:
        return self.workdir / f"{self.adapter.name}-{self.index}.pcap"

    @property
    def argv(self) -> list[str]:
        return self.adapter.argv(iface=self.iface, out=str(self.out), cpu=self.cpu, duration_s=self.duration_s,
                                 outdir=str(self.outdir))

    def start(self, kids: ChildSet) -> None:
        # A program run as root may drop its privileges before it opens its output (tcpdump -Z):
        # the scratch folders are writable by anyone, like /tmp, and sticky.
        self.outdir.mkdir(parents=True, exist_ok=True)
        for d in (self.workdir, self.outdir):
            os.chmod(d, 0o1777)
        self.child = kids.start(self.name, _taskset(self.cpu) + self.argv, netns_name=self.netns_name)

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Until the program captures: its ready line, then its adapter's delay. Sets `failure`
        if it ends first or says nothing in time."""
        a, child = self.adapter, self.child
        assert child is not None
        if a.ready_pattern is not None:
            line = child.wait_for_line(re.compile(a.ready_pattern), a.ready_stream, timeout_s)
            if line is None:
                self.failure = (f"{self.name} ended before it said it captures ({self._status()})" if not child.running
                                else f"{self.name} did not print /{a.ready_pattern}/ on {a.ready_stream} within "
                                     f"{timeout_s:g} s")
                return
        deadline = time.monotonic() + a.ready_delay_s
        while time.monotonic() < deadline and child.running:
            time.sleep(0.02)
        if not child.running:
            self.failure = f"{self.name} ended before the traffic ({self._status()})"

    def sample_start(self) -> None:
        """The CPU times at the start of the load window."""
        assert self.child is not None
        try:
            self.times0 = cpu.read_tree_times(self.child.pid)
        except FileNotFoundError:
            self.failure = self.failure or f"{self.name} ended before the traffic ({self._status()})"

    def sample_end(self) -> None:
        """The CPU times and the threads' CPUs at the end of the load window."""
        assert self.child is not None
        try:
            self.times1 = cpu.read_tree_times(self.child.pid)
            self.cpus_seen = cpu.read_tree_cpus(self.times1.pids)
        except FileNotFoundError:
            self.failure = self.failure or f"{self.name} ended during the trial ({self._status()})"

    def check_running(self) -> None:
        """Before the stop: a program that ended by itself failed the trial."""
        assert self.child is not None
        if not self.child.running and not self.failure:
            self.failure = f"{self.name} ended before capbench stopped it ({self._status()})"

    def signal_stop(self) -> float:
        """Send the adapter's stop signal to the program's process group; the time it was sent."""
        assert self.child is not None
        self.child.signal(self.adapter.stop_signal)
        return time.monotonic()

    def wait_stopped(self, signalled_at: float) -> None:
        """Wait for the program to exit within its grace time; kill it (a failed trial) if it does not."""
        child, a = self.child, self.adapter
        assert child is not None
        try:
            child.proc.wait(timeout=max(0.0, signalled_at + a.stop_grace_s - time.monotonic()))
            self.stop_s = time.monotonic() - signalled_at
        except subprocess.TimeoutExpired:
            self.killed = True
            child.kill()
            self.failure = self.failure or (f"{self.name} did not exit within {a.stop_grace_s:g} s of "
                                            f"{signal.Signals(a.stop_signal).name}: killed")
        # What it started has the same grace: a child that ignores the signal is killed after it.
        child.end_group(signalled_at + a.stop_grace_s)
        child.wait(5.0)
        self.exit_status = child.proc.returncode
        if not self.killed and self.exit_status not in (0, None) and not self.failure:
            # tcpdump and its kin exit 0 after a stop signal; anything else is the program's error.
            self.failure = f"{self.name} exited with {self._status()} after the stop"
        self.read_counts()

    def read_counts(self) -> None:
        """The program's own counts, from its output and files (its adapter's patterns)."""
        child = self.child
        assert child is not None
        files = {}
        for template, path in self.adapter.file_paths(iface=self.iface, out=str(self.out), cpu=self.cpu,
                                                      duration_s=self.duration_s, outdir=str(self.outdir)).items():
            try:
                files[template] = Path(path).read_text(errors="replace")
            except OSError:
                files[template] = ""  # a file it did not write: the count that needs it says so
        post = post_argv(self.adapter, iface=self.iface, out=str(self.out), cpu=self.cpu, duration_s=self.duration_s,
                         outdir=str(self.outdir))
        if post is not None:
            files[POST] = self._run_post(post)
        try:
            self.counts = self.adapter.read_counts("\n".join(child.stdout_lines), "\n".join(child.stderr_lines), files)
        except CountError as e:
            self.failure = self.failure or str(e)

    def _run_post(self, argv: list[str]) -> str:
        """The stdout of the adapter's post command (it reads what the program wrote), run where the
        program ran (its namespace), in a cgroup of its own: what it leaves running is killed when it
        exits, and all of it after POST_TIMEOUT_S. "" and the trial's failure when it fails."""
        what = f"{self.name}'s post command {argv[0]}"
        try:
            p = procs.run(what, argv, netns_name=self.netns_name, timeout_s=POST_TIMEOUT_S)
        except ChildError as e:
            self.failure = self.failure or str(e)
            return ""
        if p.returncode != 0:
            why = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
            self.failure = self.failure or f"{what} failed: {why}"
        return p.stdout

    def _status(self) -> str:
        rc = self.child.proc.poll() if self.child is not None else None
        if rc is None:
            return "still running"
        last = self.child.stderr_lines[-1] if self.child and self.child.stderr_lines else "no message on stderr"
        return f"{'killed by signal ' + str(-rc) if rc < 0 else 'exit status ' + str(rc)}: {last}"

    @property
    def file_written(self) -> bool:
        return self.adapter.file_format is not None and self.out.is_file()

    @property
    def pids(self) -> frozenset[int]:
        """The processes of the program's tree at the end of the load (its own when not read)."""
        if self.times1 is not None:
            return frozenset(self.times1.pids)
        return frozenset({self.child.pid}) if self.child is not None else frozenset()

    def cpu_pct(self, window_s: float) -> tuple[float, float] | None:
        """(user, system) time of the program's process tree over the load window, % of one CPU."""
        if self.times0 is None or self.times1 is None:
            return None
        return (cpu.process_cpu_pct(self.times0.user, self.times1.user, window_s),
                cpu.process_cpu_pct(self.times0.system, self.times1.system, window_s))

    def witness(self, window_s: float) -> dict[str, Any]:
        """What the program said and did, for the record's raw["app"]."""
        child = self.child
        pct = self.cpu_pct(window_s)
        return {
            "name": self.adapter.name,
            "argv": self.argv,
            "counts": dict(self.counts),
            "exit_status": self.exit_status,
            "killed": self.killed,
            "stop_s": self.stop_s,
            "failure": self.failure,
            "cpu_user_pct": None if pct is None else pct[0],
            "cpu_system_pct": None if pct is None else pct[1],
            "processes": len(self.times1.pids) if self.times1 else 0,
            "cpus_seen": list(self.cpus_seen),
            "stdout_tail": child.stdout_lines[-TAIL_LINES:] if child else [],
            "stderr_tail": child.stderr_lines[-TAIL_LINES:] if child else [],
        }
