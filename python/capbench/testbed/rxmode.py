"""Where the capture host's receive work runs: the test bed's receive model (`--rx-mode`).

A NIC host: the NIC writes frames into its receive ring, and the interrupt CPU's
NAPI poll takes them from there into the stack (skb allocation, the packet taps,
the protocol hooks); the application reads on its own CPU. A frame that finds
the ring full is lost there, and the NIC counts it.

A veth pair: the sender's veth_xmit (or an XDP redirect) puts each frame into
the peer's 256-entry ptr_ring (VETH_RING_SIZE in drivers/net/veth.c), and
schedules the peer's NAPI. Two models here:

  napi  the capture veth's NAPI runs as a kernel thread
        (/sys/class/net/IF/threaded = 1) pinned to the receive CPU: the generator's
        CPU only transmits, the receive CPU does all receive work, and the 256-frame
        ring plays the NIC's receive ring. Its overflow is counted exactly by the
        sender's `ethtool -S` tx_queue_N_xdp_xmit_errors (an XDP redirect into a
        full ring) and, mirrored, by the capture veth's rx_dropped.
  rps   the NAPI poll runs in the softirq of the sending CPU (the generator's),
        and RPS (rps_cpus) hands each frame to the receive CPU's backlog queue.
  cpumap (default) a receive ring of a NIC's depth (`--rx-ring N` frames, up to 16384):
        the capture veth's poll runs in the sender's softirq (the generator's
        CPU) and its XDP program (capbench-xdpcount --ring) only moves each
        frame into the queue of a BPF cpumap entry for the receive CPU, of N
        frames. The entry's kernel thread ("cpumap/<cpu>/map:<id>", bound to
        that CPU by the kernel) takes the frames from there, builds the skbs and
        hands them to the stack, where the packet sockets see them: the queue
        plays the NIC's ring, the thread the NIC's poll. The queue's overflow is
        counted from the xdp:xdp_cpumap_enqueue tracepoint; the veth's own
        256-frame ring, drained on the generator's CPU, still counts its
        overflow in the sender's xdp_xmit_errors. The backends with their own
        XDP program (afxdp, xdp) cannot use it: their trials run as napi.

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
from capbench.options import whole_number

# name -> what it means (the --help and the tables read these).
RX_MODES = {
    "napi": "the capture veth's NAPI in a kernel thread on the receive CPU (a NIC host's model)",
    "rps": "NAPI in the sender's softirq, RPS to the receive CPU's backlog (the first wave's model)",
    "cpumap": "a receive ring of --rx-ring frames (a BPF cpumap queue) whose kernel thread does the receive work "
              "on the receive CPU (a NIC host's ring and poll)",
}
# The models whose frames wait in the receive CPU's backlog queue (net.core.netdev_max_backlog,
# enqueue_to_backlog): RPS hands each frame there. napi and cpumap hand them to the stack from their
# thread's poll (netif_receive_skb, RPS off: steer), past no backlog, so its depth changes nothing.
BACKLOG_MODES = ("rps",)
# The kernel thread that does a model's receive work, as titles and tables name it (rps has none: the
# sender's softirq does it).
RECEIVE_THREADS = {"napi": "NAPI thread", "cpumap": "cpumap ring's thread"}
# cpumap: a ring of a NIC's depth (bench/bench_rx_ring.py, bench/README.md "Receive ring"); napi and rps stay.
DEFAULT_RX_MODE = "cpumap"
# The normal scheduler: bench_rx_mode.py measured that at real-time priority the NAPI thread
# starves a counter on its CPU (2 % of it) and the generator holds its rate less often (bench/README.md).
DEFAULT_NAPI_SCHED = "other"
# drivers/net/veth.c VETH_RING_SIZE: the frames one receive queue of a veth holds.
VETH_RING_FRAMES = 256
# kernel/bpf/cpumap.c cpu_map_update_elem refuses a larger qsize (-EOVERFLOW); capbench-xdpcount
# checks the same limit (CB_RX_RING_MAX).
RX_RING_MAX = 16384
# The cpumap model's ring when --rx-ring is not given: the depth of a common NIC's receive ring
# (mlx5 1024 by default, ixgbe/i40e 512, up to 4096-8192), chosen from bench_rx_ring.py (bench/README.md).
DEFAULT_RX_RING = 4096
# The cpumap thread's scheduling when --napi-sched is not given (bench_rx_ring.py, bench/README.md).
DEFAULT_RING_SCHED = "other"
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


def ring_frames(mode: str, asked: int = 0) -> int:
    """The frames the receive ring of model `mode` holds: the cpumap queue's as asked (0: the
    default), else the veth's fixed ring."""
    return (asked or DEFAULT_RX_RING) if mode == "cpumap" else VETH_RING_FRAMES


def parse_rx_ring(text: str) -> int:
    """--rx-ring's one depth in frames: a whole number from 1 to RX_RING_MAX."""
    frames = whole_number(text, 1, RX_RING_MAX)
    if frames is None:
        raise UsageError(f"--rx-ring {text!r}: give the receive ring's depth in frames, 1 to {RX_RING_MAX} "
                         f"(a NIC's is 512-4096), e.g. --rx-ring {DEFAULT_RX_RING}")
    return frames


def ring_args(mode: str, depth: int, rx_cpu: int | None) -> list[str]:
    """capbench-xdpcount's options for the receive model `mode`: in the cpumap model the ring of
    `depth` frames whose kthread runs on `rx_cpu`; none in the others (the veth's own ring)."""
    return ["--ring", str(depth), "--ring-cpu", str(rx_cpu)] if mode == "cpumap" else []


def default_sched(mode: str) -> str:
    """The receive thread's scheduling when --napi-sched is not given: the NAPI thread's, or the
    cpumap thread's."""
    return DEFAULT_RING_SCHED if mode == "cpumap" else DEFAULT_NAPI_SCHED


def check_mode(mode: str) -> str:
    if mode not in RX_MODES:
        raise UsageError(f"--rx-mode {mode!r} is not a receive model: give one of {', '.join(RX_MODES)} "
                         f"({'; '.join(f'{k}: {v}' for k, v in RX_MODES.items())})")
    return mode


THREADED_SYSFS = Path("/sys/class/net/lo/threaded")  # every netdev has it where the kernel has threaded NAPI


# The kernel's symbols name each tracepoint (__traceiter_<name>); its BTF names the type of its
# raw form (btf_trace_<name>). A kernel without BPF cpumap has neither.
RING_TRACEPOINTS = ("xdp_cpumap_enqueue", "xdp_cpumap_kthread")
KERNEL_BTF = Path("/sys/kernel/btf/vmlinux")
KALLSYMS = Path("/proc/kallsyms")


def kernel_has_tracepoints(names: tuple[str, ...], btf: Path = KERNEL_BTF, kallsyms: Path = KALLSYMS) -> bool:
    """Whether this kernel has the tracepoints `names`: in its BTF where it has one, else in its
    symbols."""
    try:
        if btf.exists():
            data = btf.read_bytes()
            return all(f"btf_trace_{n}".encode() in data for n in names)
        text = kallsyms.read_text()
    except OSError:
        return False
    return all(f"__traceiter_{n}" in text for n in names)


def check_available(mode: str, probe: Path = THREADED_SYSFS, has_tracepoints=kernel_has_tracepoints) -> None:
    """Threaded NAPI needs Linux 5.12 or later (/sys/class/net/IF/threaded); the cpumap ring needs
    BPF cpumap and its tracepoints (the only place its drops are counted)."""
    if mode == "napi" and not probe.exists():
        raise UsageError("threaded NAPI is not available on this kernel (no /sys/class/net/*/threaded; "
                         "it needs Linux 5.12 or later): use --rx-mode rps")
    if mode == "cpumap" and not has_tracepoints(RING_TRACEPOINTS):
        raise UsageError("this kernel has no BPF cpumap tracepoints (xdp:xdp_cpumap_enqueue), the only counter "
                         "of the cpumap ring's drops: use --rx-mode napi")


def thread_pids(ifname: str, proc: Path = Path("/proc")) -> list[int]:
    """The NAPI kernel threads of interface `ifname` (comm "napi/<ifname>-<id>", cut to 15
    characters). Interface names of test beds are unique, so the prefix is enough."""
    prefix = f"napi/{ifname}-"[:15]
    return cpu.pids_named(lambda comm: comm.startswith(prefix), proc)


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


def enable(netns_name: str | None, ifname: str, on: bool = True) -> None:
    """Turn the interface's NAPI into kernel threads, or (`on` False) back into the softirq of
    the CPU that schedules it (needs a NAPI instance: an XDP program attached, or GRO on; the
    kernel refuses the write otherwise)."""
    try:
        netns.write_file(netns_name, f"/sys/class/net/{ifname}/threaded", "1" if on else "0")
    except RunError as e:
        raise RunError(f"{ifname}: threaded NAPI could not be turned {'on' if on else 'off'} ({e}); "
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


def ring_thread_name(cpu_: int, map_id: int) -> str:
    """The cpumap entry's kernel thread's name (cpumap.c: "cpumap/%d/map:%d"). Its comm is cut to 15
    characters, but /proc/PID/stat shows a kernel thread's whole name."""
    return f"cpumap/{cpu_}/map:{map_id}"


def ring_thread_pids(cpu_: int, map_id: int, proc: Path = Path("/proc")) -> list[int]:
    """The kernel thread of the cpumap entry of `cpu_` in map `map_id` (map ids are unique on the host)."""
    wanted = f"({ring_thread_name(cpu_, map_id)})"
    pids = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if stat[stat.find("("):stat.rfind(")") + 1] == wanted:
            pids.append(int(entry.name))
    return sorted(pids)


def place_ring(cpu_: int, map_id: int, sched: NapiSched) -> NapiThreads:
    """The cpumap thread of a trial's ring, with `sched`. The kernel binds it to its CPU
    (kthread_bind: no affinity can be set), which is checked."""
    pids = ring_thread_pids(cpu_, map_id)
    if not pids:
        raise RunError(f"no kernel thread {ring_thread_name(cpu_, map_id)} runs: the receive ring's cpumap entry "
                       f"is gone (did capbench-xdpcount end?)")
    for pid in pids:
        try:
            sched.apply(pid)
        except OSError as e:
            raise RunError(f"could not give the cpumap thread {pid} {sched.text}: {e.strerror}") from None
        if os.sched_getaffinity(pid) != {cpu_} or not sched.holds(pid):
            raise RunError(f"the cpumap thread {pid} is not on CPU {cpu_} with {sched.text}")
    return NapiThreads(tuple(pids), cpu_, sched)


def place_testbed(tb, model: str | None = None, ring_map_id: int | None = None) -> NapiThreads | None:
    """The receive thread of one trial on a test bed (capbench.testbed.veth_pair.Testbed), once the
    programs that give its capture veth NAPI are attached. `model`: the trial's receive model
    (Measurer.rx_model; the test bed's by default). napi: `place()`; cpumap: the capture veth's poll
    back in the sender's softirq (an earlier napi trial of an afxdp or xdp backend turned threads
    on) and the ring's thread given its scheduling (`ring_map_id`: its map, capbench-xdpcount's
    ready line); rps: nothing to place."""
    model = model or tb.rx_mode
    if model == "napi":
        return place(tb.cap_ns, tb.cap_if, tb.rx_cpu, NapiSched.parse(tb.napi_sched))
    if model == "cpumap":
        enable(tb.cap_ns, tb.cap_if, on=False)
        assert ring_map_id is not None and tb.rx_cpu is not None
        return place_ring(tb.rx_cpu, ring_map_id, NapiSched.parse(tb.napi_sched))
    return None
