"""Where the capture host's receive work runs: the test bed's receive model (`--rx-mode`).

A NIC host: the NIC writes frames into its receive ring, and the interrupt CPU's
NAPI poll takes them from there into the stack (skb allocation, the packet taps,
the protocol hooks); the application reads on its own CPU. A frame that finds
the ring full is lost there, and the NIC counts it.

A veth pair: the sender's veth_xmit (or an XDP redirect) puts each frame into
the peer's 256-entry ptr_ring (VETH_RING_SIZE in drivers/net/veth.c), and
schedules the peer's NAPI. Two models here:

  napi  (default) the capture veth's NAPI runs as a kernel thread
        (/sys/class/net/IF/threaded = 1) pinned to the receive CPU: the generator's
        CPU only transmits, the receive CPU does all receive work, and the 256-frame
        ring plays the NIC's receive ring. Its overflow is counted exactly by the
        sender's `ethtool -S` tx_queue_N_xdp_xmit_errors (an XDP redirect into a
        full ring) and, mirrored, by the capture veth's rx_dropped.
  rps   the NAPI poll runs in the softirq of the sending CPU (the generator's),
        and RPS (rps_cpus) hands each frame to the receive CPU's backlog queue.

A veth has NAPI only while GRO is on or an XDP program is attached; every trial
attaches one (capbench-xdpcount, or the afxdp/xdp backend's own), and the kernel
creates the NAPI thread when that program is attached (the device remembers
`threaded`) and stops it when it is removed. So the thread is found and placed
per trial, after the programs are ready: `place()`. The kernel names it
"napi/<ifname>-<napi id>", cut to 15 characters in comm. The sysfs value reads 1
also when no thread exists, so a thread is looked for, never assumed.

A kernel thread under the normal scheduler (SCHED_OTHER) takes turns with the
counter on a shared CPU; a NIC's softirq preempts user space. `--napi-sched
fifo:N` gives the thread real-time priority N (SCHED_FIFO), as a NIC host's
interrupt work has it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from capbench.testbed import cpu
from capbench.testbed import netns
from capbench.errors import RunError, UsageError

# name -> what it means (the --help and the tables read these).
RX_MODES = {
    "napi": "the capture veth's NAPI in a kernel thread on the receive CPU (a NIC host's model)",
    "rps": "NAPI in the sender's softirq, RPS to the receive CPU's backlog (the first wave's model)",
}
DEFAULT_RX_MODE = "napi"
# The normal scheduler: bench_rx_mode.py measured that at real-time priority the NAPI thread
# starves a counter on its CPU (2 % of it) and the generator holds its rate less often (README).
DEFAULT_NAPI_SCHED = "other"
# drivers/net/veth.c VETH_RING_SIZE: the frames one receive queue of a veth holds.
VETH_RING_FRAMES = 256
NAPI_WAIT_S = 2.0  # how long the kernel has to start the NAPI thread after the XDP attach


@dataclass(frozen=True)
class NapiSched:
    """The scheduling of the NAPI thread: SCHED_OTHER, or SCHED_FIFO at a priority."""

    policy: str  # "other" | "fifo"
    priority: int = 0

    @property
    def text(self) -> str:
        return self.policy if self.policy == "other" else f"fifo:{self.priority}"

    @classmethod
    def parse(cls, text: str) -> NapiSched:
        policy, _, prio = text.strip().partition(":")
        if policy == "other" and not prio:
            return cls("other")
        if policy == "fifo":
            try:
                n = int(prio or "50")
            except ValueError:
                n = -1
            if 1 <= n <= 99:
                return cls("fifo", n)
        raise UsageError(f"--napi-sched {text!r}: give `other` (the normal scheduler) or `fifo:N` "
                         f"(real-time priority N, 1-99), e.g. fifo:50")

    def apply(self, pid: int) -> None:
        if self.policy == "fifo":
            os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(self.priority))
        else:
            os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))

    def holds(self, pid: int) -> bool:
        policy = os.sched_getscheduler(pid)
        if self.policy == "fifo":
            return policy == os.SCHED_FIFO and os.sched_getparam(pid).sched_priority == self.priority
        return policy == os.SCHED_OTHER


def check_mode(mode: str) -> str:
    if mode not in RX_MODES:
        raise UsageError(f"--rx-mode {mode!r} is not a receive model: give one of {', '.join(RX_MODES)} "
                         f"({'; '.join(f'{k}: {v}' for k, v in RX_MODES.items())})")
    return mode


THREADED_SYSFS = Path("/sys/class/net/lo/threaded")  # every netdev has it where the kernel has threaded NAPI


def check_available(mode: str, probe: Path = THREADED_SYSFS) -> None:
    """Threaded NAPI needs Linux 5.12 or later (/sys/class/net/IF/threaded)."""
    if mode == "napi" and not probe.exists():
        raise UsageError("threaded NAPI is not available on this kernel (no /sys/class/net/*/threaded; "
                         "it needs Linux 5.12 or later): use --rx-mode rps")


def thread_pids(ifname: str, proc: Path = Path("/proc")) -> list[int]:
    """The NAPI kernel threads of interface `ifname` (comm "napi/<ifname>-<id>", cut to 15
    characters). Interface names of test beds are unique, so the prefix is enough."""
    prefix = f"napi/{ifname}-"[:15]
    pids = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue  # gone between the listing and the read
        if comm.startswith(prefix):
            pids.append(int(entry.name))
    return sorted(pids)


@dataclass(frozen=True)
class NapiThreads:
    """The NAPI threads of one trial, where they were put and how they were scheduled."""

    pids: tuple[int, ...]
    cpu: int | None
    sched: NapiSched

    def ticks(self) -> dict[int, int]:
        """Each thread's CPU time so far (clock ticks): the receive work, which a NAPI thread's
        softirq-disabled poll accounts as its own system time, not as softirq."""
        out = {}
        for pid in self.pids:
            try:
                out[pid] = cpu.read_pid_ticks(pid)
            except (FileNotFoundError, ProcessLookupError) as e:
                raise RunError(f"the capture veth's NAPI thread {pid} ended during the trial: was its XDP "
                               f"program removed?") from e
        return out

    def cpus_seen(self, before: dict[int, int], after: dict[int, int]) -> tuple[int, ...]:
        """The CPUs the threads that worked between two `ticks()` last ran on (field 39 of
        /proc/PID/stat). A thread that did not run since it was pinned (the NAPI of a receive
        queue no frame reached) still shows the CPU it was created on, so it is left out."""
        seen = set()
        for pid in self.pids:
            if after.get(pid, 0) <= before.get(pid, 0):
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    seen.add(cpu.parse_pid_stat_last_cpu(f.read()))
            except OSError:
                continue
        return tuple(sorted(seen))


def enable(netns_name: str | None, ifname: str) -> None:
    """Turn the interface's NAPI into kernel threads (needs a NAPI instance: an XDP program
    attached, or GRO on; the kernel refuses the write otherwise)."""
    try:
        netns.write_file(netns_name, f"/sys/class/net/{ifname}/threaded", "1")
    except RunError as e:
        raise RunError(f"{ifname}: threaded NAPI could not be turned on ({e}); "
                       f"use --rx-mode rps") from None


def place(netns_name: str | None, ifname: str, rx_cpu: int | None, sched: NapiSched,
          wait_s: float = NAPI_WAIT_S) -> NapiThreads:
    """Turn threaded NAPI on, find the threads, pin them to `rx_cpu` (None: every usable CPU,
    the scheduler's choice) with `sched`, and check that the kernel took both (a kernel
    thread may refuse an affinity: PF_NO_SETAFFINITY)."""
    cpus = set(cpu.usable_cpus()) if rx_cpu is None else {rx_cpu}
    enable(netns_name, ifname)
    deadline = time.monotonic() + wait_s
    while not (pids := thread_pids(ifname)):
        if time.monotonic() > deadline:
            raise RunError(f"{ifname} has no NAPI thread {wait_s:g} s after threaded NAPI was turned on "
                           f"(sysfs says threaded; no napi/{ifname}-* thread runs): use --rx-mode rps")
        time.sleep(0.01)
    for pid in pids:
        try:
            os.sched_setaffinity(pid, cpus)
            sched.apply(pid)
        except OSError as e:
            raise RunError(f"could not place the NAPI thread {pid} of {ifname} on CPU {rx_cpu} "
                           f"with {sched.text}: {e.strerror}") from None
        if os.sched_getaffinity(pid) != cpus or not sched.holds(pid):
            raise RunError(f"the NAPI thread {pid} of {ifname} did not take CPU {rx_cpu} / {sched.text}")
    return NapiThreads(tuple(pids), rx_cpu, sched)


def place_testbed(tb) -> NapiThreads | None:
    """`place()` for a test bed (capbench.testbed.veth_pair.Testbed) in napi mode, after the programs that
    give its capture veth NAPI are attached; None in rps mode (nothing to place)."""
    if tb.rx_mode != "napi":
        return None
    return place(tb.cap_ns, tb.cap_if, tb.rx_cpu, NapiSched.parse(tb.napi_sched))
