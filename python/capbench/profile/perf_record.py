"""Sampling every CPU with perf during a trial's load window.

Why perf (linux-perf) and not a BPF sampler of our own: the sampling is the kernel's either way
(a perf event of the software cpu-clock, an hrtimer per CPU: this VM has no hardware PMU), but
perf also resolves what the stacks mean. It reads /proc/kallsyms for the kernel, the ELF symbol
tables of every object each process had mapped (followed through the mmap records perf itself
keeps), and the JIT-compiled BPF programs' names (PERF_RECORD_KSYMBOL), and it counts what its
ring buffers lost. A BPF sampler would need all of that written again.

The window is exact: perf starts with its events disabled (--delay -1) and is enabled and
disabled through its control FIFO (--control fifo:CTL,ACK), which acknowledges each command once
it is done, so only the generator's sending time is sampled. Nothing of this runs without
--profile.
"""

from __future__ import annotations

import errno
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from capbench.errors import RunError, UsageError
from capbench.profile import perf_script
from capbench.records import printable
from capbench.testbed import cpu
from capbench.testbed.procs import Child, ChildSet

# A prime near 1 kHz: the samples do not fall in step with the kernel's periodic tick (CONFIG_HZ
# 100, 250, 300 or 1000) nor with work it drives, which a round rate could over- or under-count.
DEFAULT_HZ = 997
HZ_RANGE = (10, 20000)  # above ~20 kHz the kernel throttles (kernel.perf_event_max_sample_rate)
CONTROL_TIMEOUT_S = 20.0  # perf answers a command once its main loop runs (after it read /proc)
SCRIPT_TIMEOUT_S = 300.0
FIX_PERF = "install linux-perf (Debian; `make deps` does) or your distribution's perf"
_UNORDERED = re.compile(r"\d+ out of order events recorded")
# What perf says when the kernel refuses perf_event_open (perf's evsel__open_strerror).
_REFUSED = re.compile(r"Permission denied|Access to performance monitoring|perf_event_paranoid|"
                      r"Operation not permitted|not supported|No such file or directory|Function not implemented",
                      re.IGNORECASE)


@dataclass(frozen=True)
class Profiling:
    """--profile's settings: the sampling rate per CPU, and where the trials' files go."""

    hz: int = DEFAULT_HZ
    folder: Path | None = None  # the results folder's profiles/ (None: keep no files)
    tool: str = "perf"  # perf's version (check()), for the records

    @property
    def period_ns(self) -> int:
        return round(1e9 / self.hz)


def perf_program() -> str:
    found = shutil.which("perf")
    if found is None:
        raise UsageError(f"--profile needs perf, which is not installed: {FIX_PERF}")
    return found


def perf_version() -> str:
    try:
        p = subprocess.run([perf_program(), "--version"], capture_output=True, text=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        return "perf"
    return p.stdout.strip() or "perf"


def record_argv(perf: str, period_ns: int, out: Path, control: tuple[Path, Path] | None) -> list[str]:
    """perf record of every CPU: the cpu-clock event every `period_ns` of CPU time, with kernel and
    user call stacks (frame pointers: the kernel's, and capbench's own programs are built with
    them), into `out`; started disabled and driven through the FIFOs `control` (CTL, ACK)."""
    argv = [perf, "record", "--quiet", "-e", "cpu-clock", "-c", str(period_ns), "-a", "-g", "-o", str(out)]
    if control is not None:
        argv += ["--delay", "-1", "--control", f"fifo:{control[0]},{control[1]}"]
    return argv


def refusal(stderr: str) -> str:
    """perf's own reason, in one line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    reason = next((line for line in lines if _REFUSED.search(line)), lines[-1] if lines else "no message")
    return reason.rstrip(".")


def check() -> str:
    """That perf is here and the kernel lets it sample every CPU (UsageError otherwise): a short
    perf record of `true`. Its version, for the run's record."""
    perf = perf_program()
    with tempfile.TemporaryDirectory(prefix="capbench-perf-check-") as tmp:
        argv = record_argv(perf, 10_000_000, Path(tmp) / "check.data", None) + ["--", "true"]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise UsageError("--profile: `perf record` did not finish a 0 s check within 60 s") from None
        if p.returncode != 0:
            raise UsageError(f"--profile: the kernel refuses perf events here ({refusal(p.stderr)}): sampling every "
                             f"CPU needs CAP_PERFMON (or root: docs/capabilities.md) and the perf_event_open system call "
                             f"(allow it in the container or seccomp profile), or run without --profile")
    return perf_version()


class Sampler:
    """perf record over every CPU for one trial, its events enabled only between enable() and
    disable(); its perf.data in `workdir`, read by samples()."""

    def __init__(self, profiling: Profiling, workdir: Path):
        self.profiling = profiling
        self.data = workdir / "perf.data"
        self.ctl, self.ack = workdir / "perf.ctl", workdir / "perf.ack"
        self.child: Child | None = None
        self.ctl_fd = self.ack_fd = -1
        self.window_s = 0.0
        self.enabled = False  # enable() was called (a window began)

    def start(self, kids: ChildSet) -> None:
        os.mkfifo(self.ctl)
        os.mkfifo(self.ack)
        # Our end of ACK first, non-blocking: perf opens both FIFOs at its start.
        self.ack_fd = os.open(self.ack, os.O_RDONLY | os.O_NONBLOCK)
        self.child = kids.start("perf record (--profile)", record_argv(perf_program(), self.profiling.period_ns,
                                                                         self.data, (self.ctl, self.ack)))
        deadline = time.monotonic() + CONTROL_TIMEOUT_S
        while self.ctl_fd < 0:
            try:  # ENXIO until perf has opened CTL for reading
                self.ctl_fd = os.open(self.ctl, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
                if not self.child.running:
                    raise UsageError(f"--profile: perf record failed ({self._why()})") from None
                if time.monotonic() > deadline:
                    raise RunError(f"--profile: perf record did not open its control FIFO within "
                                   f"{CONTROL_TIMEOUT_S:g} s") from None
                time.sleep(0.01)

    def _why(self) -> str:
        """perf record's own reason, from what it wrote on stderr."""
        assert self.child is not None
        return refusal("\n".join(self.child.stderr_lines))

    def _command(self, word: str) -> None:
        """Send `word` to perf and wait for its "ack": the command has taken effect."""
        assert self.child is not None
        os.write(self.ctl_fd, f"{word}\n".encode())
        got = b""
        deadline = time.monotonic() + CONTROL_TIMEOUT_S
        while b"ack" not in got:
            left = deadline - time.monotonic()
            if left <= 0 or not self.child.running:
                raise RunError(f"--profile: perf record did not acknowledge {word!r}"
                               f"{'' if self.child.running else f' (it ended: {self._why()})'}")
            ready, _, _ = select.select([self.ack_fd], [], [], min(left, 0.2))
            if ready:
                got += os.read(self.ack_fd, 64)

    def enable(self) -> None:
        self._command("enable")
        self.enabled_at = time.monotonic()
        self.stat0 = cpu.read_proc_stat()
        self.enabled = True

    def disable(self) -> None:
        self._command("disable")
        self.window_s = time.monotonic() - self.enabled_at
        self.stat1 = cpu.read_proc_stat()

    @property
    def proc_stat(self) -> tuple[dict[int, cpu.CpuJiffies], dict[int, cpu.CpuJiffies]] | None:
        """/proc/stat at the window's ends: the kernel's account of the same time (idle, steal)."""
        return (self.stat0, self.stat1) if self.enabled and self.window_s else None

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    def stop(self) -> None:
        """perf writes its file's end on SIGINT and exits."""
        if self.child is None:
            return
        self.child.signal(signal.SIGINT)
        rc = self.child.stop(timeout_s=CONTROL_TIMEOUT_S, signalled=True)
        for fd in (self.ctl_fd, self.ack_fd):
            if fd >= 0:
                os.close(fd)
        self.ctl_fd = self.ack_fd = -1
        if rc not in (0, -signal.SIGINT, 128 + signal.SIGINT):
            raise RunError(f"--profile: perf record failed ({self._why()})")

    def samples(self) -> tuple[perf_script.Parsed, list[str]]:
        """The samples perf recorded, and what perf script warned of (lost chunks, unreadable
        objects): kept in the record, never dropped."""
        argv = [perf_program(), "script", "-i", str(self.data), "-F", "comm,pid,tid,cpu,period,ip,sym,dso"]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S, check=False,
                               stdin=subprocess.DEVNULL, errors="replace")
        except subprocess.TimeoutExpired:
            raise RunError(f"--profile: perf script took over {SCRIPT_TIMEOUT_S:g} s") from None
        # On a busy host perf may record a few events out of time order; perf script then prints
        # every sample and says "N out of order events recorded", with a failing exit status. The
        # samples are good: kept, and the line kept among the warnings.
        unordered = _UNORDERED.search(p.stderr)
        if p.returncode != 0 and not (unordered and p.stdout):
            raise RunError(f"--profile: perf script failed ({refusal(p.stderr)})")
        warnings = [printable(line.strip()) for line in p.stderr.splitlines()
                    if line.strip() and ("lost" in line.lower() or _UNORDERED.search(line))]
        return perf_script.parse(p.stdout.splitlines()), warnings
