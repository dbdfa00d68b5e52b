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

The trial's folder is capbench's (0700, made by measure.scratch_dir): no other user can create,
rename or remove anything in it. A program that drops its privileges (its adapter's drops_to)
gets its own {outdir} and a fresh {out}, owned by the user it becomes, and may pass through the
folder (0711) but not list or change it. What capbench reads of a program's files is opened
beneath the folder one name at a time without following a symbolic link (open_in_folder), and
only when it is a regular file of at most PROGRAM_FILE_MAX_BYTES: a link, a FIFO, a device
planted there is refused, never followed or waited on. What the program prints is matched line
by line as it arrives (apps.CountReader): capbench keeps only its counts and a tail.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import os
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capbench.inputs import MIB
from capbench.testbed import cpu
from capbench.testbed.procs import Child, ChildError, ChildSet, read_lines
from capbench.trial.apps import PACKET_STATISTICS, POST, Adapter, CountError, CountReader, post_argv

READY_TIMEOUT_S = 10.0  # how long a program has to say it captures (or to live through its ready delay)
RECORD_TAIL_LINES = 5  # lines of each stream kept in the record
POST_TIMEOUT_S = 60.0  # an adapter's post command (racount of argus's flows: ~1 s for a million frames)
CLEANUP_POST_S = 5.0  # the post command run to clean up after a trial that failed or was stopped
# The largest file a count reads (a program's statistics: Suricata's eve.json with its flow events
# over a long trial); read line by line, so this bounds the time, not capbench's memory.
PROGRAM_FILE_MAX_BYTES = 256 * MIB
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


# pidfd_getfd(2) (Linux >= 5.6): one number on every architecture (the unified syscall table).
SYS_PIDFD_GETFD = 438
SOL_PACKET, PACKET_STATISTICS_OPT = 263, 6  # linux/socket.h, linux/if_packet.h
# struct tpacket_stats: tp_packets, tp_drops (u32 each); TPACKET_V3's adds tp_freeze_q_cnt.
_TPACKET_STATS = struct.Struct("II")


def packet_statistics(pids: frozenset[int]) -> tuple[int, int]:
    """(tp_packets, tp_drops) summed over the packet sockets of the processes `pids`: each read
    through a copy of its descriptor (pidfd_getfd, which needs what ptrace needs: root), so from
    outside the program as no /proc file or sock_diag answer gives them (/proc/net/packet has no
    drop column; sock_diag's drops are sk_drops, which a ring's drops in tpacket_rcv() never
    count). The kernel zeroes them on each read (packet_getsockopt): counts since the socket was
    made or last read. OSError when a process's descriptors cannot be taken."""
    libc = ctypes.CDLL(None, use_errno=True)
    packets = drops = 0
    for pid in sorted(pids):
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue  # gone: its sockets with it
        try:
            for name in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                        continue
                except OSError:
                    continue  # closed meanwhile
                fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(name), 0)
                if fd < 0:
                    err = ctypes.get_errno()
                    if err == errno.EBADF:
                        continue
                    raise OSError(err, f"pidfd_getfd of process {pid}: {os.strerror(err)}")
                with socket.socket(fileno=fd) as s:
                    if s.family != socket.AF_PACKET:
                        continue
                    raw = s.getsockopt(SOL_PACKET, PACKET_STATISTICS_OPT, 12)
                    p, d = _TPACKET_STATS.unpack_from(raw)
                    packets, drops = packets + p, drops + d
        finally:
            os.close(pidfd)
    return packets, drops


class ProgramFileError(OSError):
    """A program's file capbench will not read (the message says why, in a few words)."""


def open_in_folder(folder: Path, path: Path | str, max_bytes: int | None = PROGRAM_FILE_MAX_BYTES) -> int:
    """A read-only descriptor of the regular file `path` inside `folder`. Each name below the
    folder is opened relative to the one before it with O_NOFOLLOW, so a symbolic link anywhere on
    the way is refused (ELOOP), never followed out of the folder; O_NONBLOCK makes the open of a
    FIFO return at once instead of waiting for a writer (fifo(7)), and fstat then refuses anything
    but a regular file, and one larger than `max_bytes` (None: of any size, for a reader with its
    own bound). ProgramFileError otherwise."""
    try:
        parts = Path(path).relative_to(folder).parts
    except ValueError:
        raise ProgramFileError("it is outside the trial's folder") from None
    if not parts or any(part in (".", "..") for part in parts):
        raise ProgramFileError("it is outside the trial's folder")
    try:
        dir_fd = os.open(folder, _DIR_FLAGS)
        try:
            for part in parts[:-1]:
                fd = os.open(part, _DIR_FLAGS, dir_fd=dir_fd)
                os.close(dir_fd)
                dir_fd = fd
            fd = os.open(parts[-1], _READ_FLAGS, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as e:
        raise ProgramFileError("it is a symbolic link" if e.errno in (errno.ELOOP, errno.ENOTDIR)
                               else e.strerror or str(e)) from None
    st = os.fstat(fd)
    why = (f"it is {_kind(st.st_mode)}, not a regular file" if not stat.S_ISREG(st.st_mode) else
           f"it holds {st.st_size:,} bytes, more than the {max_bytes // MIB} MiB capbench reads"
           if max_bytes is not None and st.st_size > max_bytes else "")
    if why:
        os.close(fd)
        raise ProgramFileError(why)
    return fd


def _kind(mode: int) -> str:
    return {stat.S_IFIFO: "a FIFO", stat.S_IFDIR: "a folder", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device",
            stat.S_IFBLK: "a device", stat.S_IFLNK: "a symbolic link"}.get(stat.S_IFMT(mode), "not a file")


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
    reader: CountReader | None = None  # its counts, matched as its output arrives
    post_ran: bool = False  # its adapter's post command has run (read_counts)

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

    @property
    def post_argv(self) -> list[str] | None:
        """Its adapter's post command, filled in; None where the adapter has none."""
        return post_argv(self.adapter, iface=self.iface, out=str(self.out), cpu=self.cpu, duration_s=self.duration_s,
                         outdir=str(self.outdir))

    def start(self, kids: ChildSet) -> None:
        self.make_files()
        self.reader = CountReader(self.adapter)
        self.child = kids.start(self.name, _taskset(self.cpu) + self.argv, netns_name=self.netns_name,
                                on_line=self.reader.feed)
        kids.after_stop.append(self.cleanup)

    def cleanup(self) -> None:
        """After a trial that ended before the program's counts were read (an error, Ctrl-C): its
        adapter's post command once, its output unread, so that what the post removes does not
        stay (testpmd's EAL runtime directory in /var/run/dpdk, which EAL makes and leaves). At
        most CLEANUP_POST_S; a failure here changes nothing of the trial, which has already failed."""
        post = self.post_argv
        if post is None or self.post_ran:
            return
        self.post_ran = True
        try:
            child = Child(f"{self.name}'s post command {post[0]}", post, netns_name=self.netns_name)
        except ChildError:
            return
        try:
            child.wait(CLEANUP_POST_S)
        except ChildError:
            child.kill()

    def make_files(self) -> None:
        """The program's {outdir}, new (mkdir fails on anything already there), and for a program
        that drops its privileges, that folder and a new {out} (O_CREAT|O_EXCL|O_NOFOLLOW: never
        an existing file or link) owned by the user it becomes, and the trial's folder open to
        pass through (0711: not to list, create, rename or remove)."""
        os.mkdir(self.outdir, 0o700)
        ids = self.adapter.drop_ids()
        if ids is None:
            return
        for folder in self._folders_on_the_way():
            os.chmod(folder, 0o711)
        os.chown(self.outdir, *ids, follow_symlinks=False)
        if self.adapter.file_format is not None:
            fd = os.open(self.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                os.fchown(fd, *ids)
            finally:
                os.close(fd)

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Until the program captures: its ready line, then its adapter's delay. Sets `failure`
        if it ends first or says nothing in time."""
        a, child = self.adapter, self.child
        assert child is not None
        if a.ready_pattern is not None and not self._ready_line(timeout_s):
            self.failure = (f"{self.name} ended before it said it captures ({self._status()})" if not child.running
                            else f"{self.name} did not print /{a.ready_pattern}/ on {a.ready_stream} within "
                                 f"{timeout_s:g} s")
            return
        deadline = time.monotonic() + a.ready_delay_s
        while time.monotonic() < deadline and child.running:
            time.sleep(0.02)
        if not child.running:
            self.failure = f"{self.name} ended before the traffic ({self._status()})"

    def _folders_on_the_way(self) -> list[Path]:
        """The trial's folder and those above it up to the temporary folder (a side's folder is in
        the trial's: scratch_dir/0): a user must be allowed to pass through each to reach a file."""
        tmp = Path(tempfile.gettempdir())
        below = [d for d in self.workdir.parents if tmp in d.parents]
        return [self.workdir, *below]

    def _ready_line(self, timeout_s: float) -> bool:
        """Whether the program printed its ready line within `timeout_s` (False as soon as it ends
        without one: the rest of its output read first)."""
        assert self.child is not None and self.reader is not None
        deadline = time.monotonic() + timeout_s
        while not self.reader.ready.wait(0.02):
            if not self.child.running:
                self.child.wait(1.0)
                return self.reader.ready.is_set()
            if time.monotonic() >= deadline:
                return False
        return True

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
        """Send the adapter's stop signal to the program's process group; the time it was sent.
        Just before it, the packet sockets' statistics for the counts that read them (its last
        chance: the sockets go with the program)."""
        assert self.child is not None
        if any(c.source == PACKET_STATISTICS for c in self.adapter.counts):
            self._read_packet_statistics()
        self.child.signal(self.adapter.stop_signal)
        return time.monotonic()

    def _read_packet_statistics(self) -> None:
        assert self.reader is not None and self.child is not None
        try:
            packets, drops = packet_statistics(frozenset(cpu.process_tree(self.child.pid)))
        except OSError as e:
            self.reader.unread(PACKET_STATISTICS, f"capbench could not read its packet sockets: {e}")
            return
        self.reader.feed_text(PACKET_STATISTICS, f"tp_packets {packets}\ntp_drops {drops}")

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
        """The program's own counts: its output's, matched as it came, then its files' and its post
        command's."""
        reader = self.reader
        assert self.child is not None and reader is not None
        for template, path in self.adapter.file_paths(iface=self.iface, out=str(self.out), cpu=self.cpu,
                                                      duration_s=self.duration_s, outdir=str(self.outdir)).items():
            self._read_file(f"file:{template}", path)
        post = self.post_argv
        if post is not None:
            self._run_post(post)
        try:
            self.counts = reader.counts()
        except CountError as e:
            self.failure = self.failure or str(e)

    def _read_file(self, source: str, path: str) -> None:
        """A count's file, line by line into the reader; a file it could not read is left out (the
        count that needs it says why)."""
        assert self.reader is not None
        try:
            fd = open_in_folder(self.workdir, path)
        except ProgramFileError as e:
            self.reader.unread(source, str(e))
            return
        try:
            read_lines(fd, lambda line: self.reader.feed(source, line), max_bytes=PROGRAM_FILE_MAX_BYTES)
        finally:
            os.close(fd)
        self.reader.feed_text(source, "")  # read, if empty

    def _run_post(self, argv: list[str]) -> None:
        """The adapter's post command (it reads what the program wrote), run where the program ran
        (its namespace), in a cgroup of its own like every child: what it leaves running is killed
        when it exits, and all of it after POST_TIMEOUT_S. Its stdout goes into the reader as it
        comes; the trial's failure when it fails."""
        reader = self.reader
        assert reader is not None

        def on_line(stream: str, line: str) -> None:
            if stream == "stdout":
                reader.feed(POST, line)

        what = f"{self.name}'s post command {argv[0]}"
        self.post_ran = True
        try:
            post = Child(what, argv, netns_name=self.netns_name, on_line=on_line)
        except ChildError as e:
            self.failure = self.failure or f"{what} failed: {e}"
            return
        reader.feed_text(POST, "")
        try:
            rc = post.wait(POST_TIMEOUT_S)
        except ChildError:
            post.kill()
            self.failure = self.failure or f"{what} failed: it did not finish within {POST_TIMEOUT_S:g} s"
            return
        if rc != 0:
            why = post.stderr_lines[-1] if post.stderr_lines else f"exit status {rc}"
            self.failure = self.failure or f"{what} failed: {why}"

    def _status(self) -> str:
        rc = self.child.proc.poll() if self.child is not None else None
        if rc is None:
            return "still running"
        last = self.child.stderr_lines[-1] if self.child and self.child.stderr_lines else "no message on stderr"
        return f"{'killed by signal ' + str(-rc) if rc < 0 else 'exit status ' + str(rc)}: {last}"

    @property
    def file_written(self) -> bool:
        """Whether the program wrote its capture file: something in a regular file at {out} (a
        fresh {out} capbench made is empty until then)."""
        if self.adapter.file_format is None:
            return False
        try:
            fd = open_in_folder(self.workdir, self.out, max_bytes=None)
        except ProgramFileError:
            return False
        try:
            return os.fstat(fd).st_size > 0
        finally:
            os.close(fd)

    def open_out(self) -> int:
        """A descriptor of its capture file {out}, opened as open_in_folder does (for capbench-cap
        --read); ProgramFileError for anything but a regular file there."""
        return open_in_folder(self.workdir, self.out, max_bytes=None)

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
            "stdout_tail": child.stdout_lines[-RECORD_TAIL_LINES:] if child else [],
            "stderr_tail": child.stderr_lines[-RECORD_TAIL_LINES:] if child else [],
            # The width of its counters that wrap (measure.unwrap_program_counts).
            "bits": {c.name: c.bits for c in self.adapter.counts if c.bits < 64},
            # Its loss account's rows and the count each reads (apps.account_rows).
            "account": [dataclasses.asdict(a) for a in self.adapter.account],
        }
