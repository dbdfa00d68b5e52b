"""One trial: a constant load for a fixed time through the test bed, and where every packet went.

`Measurer.measure(duration_s, load) -> TrialResult`, in the spirit of FD.io
CSIT's MLRsearch: the methods (iperf-like today; RFC 2544 and MLR searches
later) only ever see TrialResults, never traffic.

A trial:
 1. start capbench-xdpcount on the capture veth (the "delivered" counter; on a
    veth it also gives the receive side the NAPI instance XDP-redirected frames
    need), wait for its `ready` line. Not for a backend that declares own_xdp:
    an interface holds one XDP program, theirs, which counts "delivered" itself;
 2. start capbench-cap (the counter) with the backend, wait for `ready`; or the capture
    program under test (trial/program_run.py), wait until it captures;
 3. snapshot the interfaces' drop counters (`ip -s link`: the capture interface's
    rx_dropped, the generator interface's tx_dropped), softnet_stat, /proc/stat and
    the counter's CPU time;
 4. run capbench-gen in the generator namespace to completion, reading softnet_stat
    every second meanwhile (its 32-bit counters could wrap unseen: SOFTNET_SAMPLE_S);
 5. snapshot the CPU times again: steps 3-5 are the load window;
 6. wait `settle_s` for the rings and backlog queues to drain, snapshot softnet_stat
    and the interfaces' drop counters;
 7. stop a program with its own signal (it must exit within its grace time), SIGTERM the
    counter and xdpcount, read their summaries;
 8. account for every packet (accounting.account) and return a frozen TrialResult
    (its record and loader: capbench.trial.record).

Steps 1-3 and 5-8 are a CaptureSide's (trial/trial_run.py), step 4 the trial's: several
capture sides (sensors behind a tap) can share one generator.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from dataclasses import dataclass
from typing import Any

from capbench import declared
from capbench.trial import accounting
from capbench.testbed import cpu
from capbench.testbed import host_sysctl
from capbench.testbed import netns
from capbench.testbed import nic
from capbench.testbed import rxmode
from capbench.binaries import Binaries
from capbench.errors import RunError, UsageError
from capbench.options import option_value
from capbench.testbed.procs import ChildError
from capbench.rates import WIRE_OVERHEAD_B, Rate, link_name, wire_bps
from capbench.remote.ssh import Host
from capbench.testbed.veth_pair import Testbed, veth_queues
from capbench.profile.perf_record import Profiling
from capbench.trial.apps import Adapter, AccountRow, account_rows, default_account, unwrap_count
from capbench.trial.program_run import ProgramFileError, ProgramRun
from capbench.trial.record import LayerCount, TrialResult, named_layers

DECODE_TIMEOUT_S = 60.0  # capbench-cap --read of a program's file: ~1 s for 10 million frames here
STOP_TIMEOUT_S = 10.0  # how long a trial's programs have to stop after SIGTERM
# A trial whose generator sent less than this share of the offered rate did not
# offer the load it names: its loss figures are not a capture result at that load.
OFFERED_MIN_SHARE = 0.999
# A generator that falls behind its schedule owes frames. capbench-gen (xdp engine) sends at
# most --catch-up of them (default 256, a veth's receive ring) faster than the link's wire
# rate, then catches up at the wire rate: a longer burst would be loss no link of that speed
# could cause. At 100 % of the wire rate the rest of a lag stays, and the achieved rate says so.
# What `invalid_offered_load` says, for the tables' notes: a fact about the generator only (what
# follows from it for the trial's loss is capbench.methods.verdict's).
INVALID_LOAD_TEXT = f"the generator did not hold the offered load: it sent less than {OFFERED_MIN_SHARE:.1%} of it"


@dataclass(frozen=True)
class TrialSetup:
    """Everything about a trial except its duration and load."""

    backend: str
    frame_len: int  # ignored when size_profile is set
    link_bps: float = 1e9
    engine: str = "xdp"
    gen_cpu: int | None = 0
    cap_cpu: int | None = 1
    app_load: str | None = None  # capbench-cap --app-load: touch | none | spin:NS
    settle_s: float = 0.3
    ready_timeout_s: float = 5.0
    cap_args: tuple[str, ...] = ()  # the backend's own capbench-cap options (--backend-args: --pcap-api ...)
    # capbench-cap's options of the run's groups (--group-size, --groups): every counter takes them,
    # a capture program's file decode too; not the backend's own options (the record's backend_args).
    group_args: tuple[str, ...] = ()
    gen_args: tuple[str, ...] = ()  # further capbench-gen options
    size_profile: str | None = None  # capbench-gen --size profile (imix:seed, random:64-1518, ...)
    procs: int = 1  # independent capture processes on the interface, each sees every frame (seed 001)
    ring_bytes: int = 0  # the backend's kernel buffer (declared.Backend.ring_args); 0 = its default
    rx_ring: int = 0  # --rx-mode cpumap: the receive ring's frames (rxmode); 0 = rxmode.DEFAULT_RX_RING
    backlog: int = 0  # net.core.netdev_max_backlog its step holds (the backlog knob); 0 = the host's own
    # The knobs its step sets (--vary, capbench tune), (knob, value), which the record keeps: a
    # backend knob's capbench-cap options are knob_args (after cap_args), a run knob's value is in
    # ring_bytes, rx_ring or the placement.
    knobs: tuple[tuple[str, str], ...] = ()
    knob_args: tuple[str, ...] = ()
    proc_cpus: tuple[int | None, ...] | None = None  # CPU of each; None: all on cap_cpu
    # A capture program under test instead of capbench-cap (trial/apps.py): `backend` is its name.
    app: Adapter | None = None
    # --profile: every CPU sampled over the load window (capbench.profile); None: not profiled.
    profile: Profiling | None = None

    @property
    def size(self) -> str:
        """capbench-gen's --size: the profile, or the frame length."""
        return self.size_profile or str(self.frame_len)


def catchup_burst(max_lag_ns: int, offered_pps: float | None) -> int:
    """The frames a generator `max_lag_ns` behind its schedule owed, and sent in a burst to catch up."""
    return int(max_lag_ns * offered_pps / 1e9) if offered_pps else 0


def received_wire_bytes(lengths: dict | None, received: int) -> float | None:
    """Wire bytes (frame + 20 B preamble and gap) of `received` frames with the length mix of the
    counter's histogram {length incl. FCS: frames}; None without one. The histogram also counts
    duplicates, so its mix is scaled to the received count."""
    counted = sum(int(n) for n in (lengths or {}).values())
    if counted <= 0:
        return None
    wire = sum((int(length) + WIRE_OVERHEAD_B) * int(n) for length, n in lengths.items())
    return wire * received / counted


def offered_share(gen: dict, achieved_pps: float, offered_pps: float) -> float:
    """The share of the offered load the generator sent: its own figure (by wire bits for a
    bit rate, by frames for a packet rate), else achieved / offered frames per second."""
    if "offered_share" in gen:
        return float(gen["offered_share"])
    return achieved_pps / offered_pps if offered_pps else 0.0


def application_drops(backend: declared.Backend, cap: dict) -> int:
    """Frames the socket queued that the counter did not read: kernel packets − kernel drops −
    frames read (capbench-cap's summary). 0 where the backend's kernel count does not cover that
    (libpcap, AF_XDP, the ceiling). Never below 0: a counter that read more than the kernel
    says it queued leaves the difference in `unexplained`, where a disagreement belongs."""
    kernel = cap.get("kernel") or {}
    if not backend.queue_count or "packets" not in kernel or "packets" not in cap:
        return 0
    return max(0, int(kernel["packets"]) - int(kernel.get("drops", 0)) - int(cap["packets"]))


def program_drops(program: dict[str, Any], cap: dict[str, Any]) -> int:
    """The application layer of a capture program: frames it says it captured that its capture
    file does not hold (its own count − the file's records). 0 where either is missing. Never below
    0: a file with more frames than the program counted leaves the difference in `unexplained`."""
    captured = program["counts"].get("captured")
    if captured is None or "file_frames" not in cap:
        return 0
    return max(0, int(captured) - int(cap["file_frames"]))


def program_account(program: dict[str, Any]) -> list[dict[str, Any]]:
    """A capture program's loss account (its adapter's rows, apps.AccountRow) with the packets of
    its counts, in the shape of capbench-cap's summary `account`; a witness without them (written
    before issue 29) has the default account."""
    rows = program.get("account")
    account = default_account(program["name"]) if rows is None else [AccountRow(**a) for a in rows]
    return account_rows(account, program["counts"])


def account_drops(account: list[dict[str, Any]]) -> int:
    """The drops a summary's account holds: its rows but the cross-checks (capbench-cap's kernel_drops)."""
    return sum(int(row["packets"]) for row in account if not row.get("cross_check"))


def layer_counts(cap: dict[str, Any]) -> tuple[LayerCount, ...] | None:
    """The summary's `account` rows as the record keeps them; None where it has none."""
    if not isinstance(cap.get("account"), list):
        return None
    return tuple(LayerCount(layer=str(row["layer"]), counter=str(row["counter"]), packets=int(row["packets"]),
                            cross_check=bool(row.get("cross_check", False))) for row in cap["account"])


def unwrap_program_counts(program: dict[str, Any], summary: dict[str, Any], delivered: int | None) -> None:
    """A program's counters that wrapped (its adapter's `bits`: tcpdump's are 32-bit and wrap every
    4.8 min at 14.88 Mpps) unwrapped in place against capbench's own counts: `captured` against the
    frames in its capture file (else those delivered), `seen` against the frames delivered,
    `dropped` against those delivered but not in its file. The witness's `wrapped` says which, how
    often and what it printed (loss_layers.program_remarks says so); the trial's summary takes the
    unwrapped figures."""
    file_frames = int(summary["file_frames"]) if "file_frames" in summary else None
    references = {"captured": file_frames if file_frames is not None else delivered, "seen": delivered,
                  "dropped": None if delivered is None or file_frames is None else delivered - file_frames}
    counts, wrapped = program["counts"], {}
    for name, bits in program.get("bits", {}).items():
        if name in counts:
            value, times = unwrap_count(int(counts[name]), bits, references.get(name))
            if times:
                wrapped[name] = {"times": times, "printed": counts[name], "bits": bits}
                counts[name] = value
    if wrapped:
        program["wrapped"] = wrapped
        summary["account"] = program_account(program)
        summary["kernel_drops"] = account_drops(summary["account"])
        if file_frames is None:
            summary["received"] = int(counts.get("captured", 0))


SCRATCH_PREFIX = "capbench-trial-"  # + the pid of the capbench that made it + "-" + a random part


@contextlib.contextmanager
def scratch_dir(needed: bool = True) -> Iterator[Path | None]:
    """A folder for one trial's files (a program's {out} and {outdir}, --profile's perf data),
    removed when the trial ends; None when nothing of the trial needs one (nothing made, nothing
    a SIGKILL could leave). Its name carries capbench's pid: `testbed down` removes the folders
    of a capbench that was killed (testbed.hygiene.folders_of)."""
    if not needed:
        yield None
        return
    path = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def program_backend(app: Adapter) -> declared.Backend:
    """A capture program seen as a backend: no XDP program of its own, no kernel counter capbench
    reads directly, no ring capbench sizes (its template does), one process per --procs."""
    return declared.Backend(name=app.name, summary=app.summary, seed="the user's own capture program",
                            options=(), own_xdp=False, kernel_counter=False, xsk_stats=False, queue_count=False,
                            kernel_stats="program", clock="file", writes_pcap=app.file_format is not None,
                            workers=False, queues=False, needs=(), ring=None, polls=app.polls)


def read_link_drops(netns_name: str | None, iface: str) -> tuple[int, int] | None:
    """(rx_dropped, tx_dropped) of `iface` as seen in `netns_name` (`ip -s -j link show`: the
    64-bit counters of /sys/class/net/IF/statistics); None where they cannot be read."""
    try:
        out = netns.ip(*(["-n", netns_name] if netns_name else []), "-s", "-j", "link", "show", "dev", iface)
        stats = json.loads(out)[0]["stats64"]
        return int(stats["rx"]["dropped"]), int(stats["tx"]["dropped"])
    except (RunError, ValueError, LookupError, TypeError):
        return None


def backlog_from_device(iface_rx_dropped: int | None, ring_drops: int | None, link_drops: int,
                        host_softnet_drops: int) -> int:
    """The backlog layer of a trial whose frames went up the stack, from the capture interface's
    own counter: enqueue_to_backlog charges a refused frame to the receiving device's rx_dropped,
    which on a veth also holds the ring's overflow (the peer's xdp_xmit errors, mirrored). So:
    rx_dropped − ring drops; where the ring's counter was not read, rx_dropped less the link
    layer (sent − delivered: the frames lost before the XDP count, the ring's). Never below 0 (a
    counter that disagrees is a remark, loss_layers). Only where the interface counter could not
    be read, the receive CPU's softnet_stat drops, which count every device's traffic there."""
    if iface_rx_dropped is None:
        return host_softnet_drops
    before_stack = ring_drops if ring_drops is not None else min(iface_rx_dropped, max(0, link_drops))
    return max(0, iface_rx_dropped - before_stack)


# How often a trial reads softnet_stat. Its counters are 32-bit (struct softnet_data's unsigned
# int fields, printed with %08x), so over a long trial one can wrap, more than once; read at its
# start and end only, a wrap would be lost. A drop counter grows at most as fast as packets arrive
# at its CPU: 2**32 drops take 2,886 s at 1.488 Mpps (1 GbE, 64 B), 716 s at the ~6 Mpps the
# fastest generator here reaches, 289 s at 10 GbE's 14.88 Mpps. Read every second, no wrap is
# missed. The other kernel counters a trial reads are 64-bit and need no sampling: /proc/stat
# and /proc/PID/stat times (u64), the interfaces' rtnl_link_stats64 (`ip -s -j link`: the
# unsigned long counters of /sys/class/net/IF/statistics), `ethtool -S` (u64 by its ABI).
SOFTNET_SAMPLE_S = 1.0


class SoftnetDrops:
    """softnet_stat's backlog drops on `cpus` (None: every CPU) since creation, followed through
    32-bit wraps: each sample adds the increase since the last one modulo 2**32 (cpu.counter_delta)
    to a Python int, so the total is right as long as samples come before a counter goes round
    once (SOFTNET_SAMPLE_S)."""

    def __init__(self, cpus: set[int] | None, path: str = "/proc/net/softnet_stat"):
        self.cpus, self.path = cpus, path
        self.last = cpu.read_softnet_drops(path)
        self.total = 0

    def sample(self) -> None:
        now = cpu.read_softnet_drops(self.path)
        self.total += cpu.counter_delta(self.last, now, self.cpus)
        self.last = now


def wait_sampling(child: Any, timeout_s: float, sample: Callable[[], None],
                  every_s: float = SOFTNET_SAMPLE_S) -> None:
    """child.wait(timeout_s), calling `sample` every `every_s` until the child ends."""
    deadline = time.monotonic() + timeout_s
    while deadline - time.monotonic() > every_s:
        try:
            child.proc.wait(timeout=every_s)
            break
        except subprocess.TimeoutExpired:
            sample()
    child.wait(max(0.0, deadline - time.monotonic()))


def sleep_sampling(seconds: float, sample: Callable[[], None], every_s: float = SOFTNET_SAMPLE_S) -> None:
    """time.sleep(seconds), calling `sample` every `every_s` meanwhile."""
    deadline = time.monotonic() + seconds
    while deadline - time.monotonic() > every_s:
        time.sleep(every_s)
        sample()
    time.sleep(max(0.0, deadline - time.monotonic()))


def read_ring_drops(netns_name: str | None, iface: str, host: Host | None = None) -> int | None:
    """The frames XDP redirects from `iface` could not put into its veth peer's receive ring:
    the sum of `ethtool -S` tx_queue_N_xdp_xmit_errors (drivers/net/veth.c counts each frame
    veth_xdp_xmit finds no room for). None where the counters cannot be read (not a veth).
    `host`: another host's interface, read over its SSH connection."""
    try:
        if host is not None and not host.local:
            p = host.run(["ethtool", "-S", iface], timeout_s=10)
            if p.returncode != 0:
                return None
            out = p.stdout
        else:
            out = netns.run_in(netns_name, ["ethtool", "-S", iface])
    except (RunError, UsageError):
        return None
    found = [v for k, v in nic.parse_stats(out).items()
             if k.startswith("tx_queue_") and k.endswith("_xdp_xmit_errors") and v >= 0]
    return sum(found) if found else None


def increase(before: int | None, after: int | None) -> int | None:
    """after − before of a counter read twice; None where either reading failed."""
    return None if before is None or after is None else after - before


def _delta(before: tuple[int, int] | None, after: tuple[int, int] | None, i: int) -> int | None:
    return increase(None if before is None else before[i], None if after is None else after[i])


def ring_ran(backend: declared.Backend, ring_bytes: int, cap_args: tuple[str, ...], cap: dict) -> int:
    """The kernel buffer a trial ran, for its record and labels: capbench-cap's own summary says
    it (`ring_bytes`: one socket's, after every option, the last of each winning), wherever the
    trial set it (--ring, or the backend's options that --ring maps to); 0 where it set nothing
    (the backend's default, as records have said since --ring came) or a summary without it (a
    capture program, a capbench-cap from before it said so: then the one asked for)."""
    spec = backend.ring
    set_here = ring_bytes or (spec is not None and any(option_value(list(cap_args), o) is not None
                                                        for o in spec.options))
    if not set_here:
        return 0
    return int(cap.get("ring_bytes", ring_bytes))


def _percentiles(h: dict | None) -> dict[str, int]:
    """capbench-cap's {"n", "min", "p50", ..., "p99_9", "max"} as {"min_ns", "p50_ns", ..., "p99.9_ns"}."""
    if not h or not h.get("n"):
        return {}
    return {f"{k.replace('_', '.')}_ns": int(v) for k, v in h.items() if k != "n"}


def _opt(flag: str, value: Any) -> list[str]:
    return [] if value is None else [flag, str(value)]


def _utc_now() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


class Measurer:
    """Runs trials of one TrialSetup on one test bed."""

    def __init__(self, binaries: Binaries, testbed: Testbed, setup: TrialSetup, *, cap_host: Host | None = None,
                 gen_host: Host | None = None, latency_valid: bool = True, gen_clock_ns: int | None = None,
                 on_second: Callable[[Any], None] | None = None):
        self.binaries = binaries
        self.testbed = testbed
        self.setup = setup
        # Told a trial_run.Progress once a second while the generator sends (the live view).
        self.on_second = on_second
        # Several hosts (a topology, docs/topology.md): where the capture side runs (another host:
        # a `capbench side` agent there, trial.remote_side) and where the generator and the tap
        # run; None: this machine. `latency_valid` False: the generator's stamps and the capture's
        # clock are not known to agree (other hosts, no PTP), so the record leaves latency out.
        self.cap_host = cap_host
        self.gen_host = gen_host
        self.latency_valid = latency_valid
        # A capture on another host than the generator's, clocks synchronised: the generator's
        # host's CLOCK_REALTIME − CLOCK_MONOTONIC (trial_run.assemble moves the latencies by it).
        self.gen_clock_ns = gen_clock_ns

    @property
    def backend(self) -> declared.Backend:
        """The setup's backend as capbench-cap declares it (--describe), or its capture program's view."""
        if self.setup.app is not None:
            return program_backend(self.setup.app)
        # as its options run it: dpdk with --dpdk-driver af_packet has no XDP program of its own
        return declared.backend(self.setup.backend).ran_with((*self.setup.cap_args, *self.setup.knob_args))

    @property
    def rx_model(self) -> str:
        """This trial's receive model (rxmode): the test bed's, except that a cpumap test bed runs
        as napi the trials whose receive work no ring thread can do: a backend's own XDP program
        (an interface holds one, on the veth's own poll) or a receive CPU left to the scheduler."""
        mode = self.testbed.rx_mode
        if mode == "cpumap" and (self.backend.own_xdp or self.testbed.rx_cpu is None):
            return "napi"
        return mode

    @property
    def napi_mode(self) -> bool:
        """The capture veth's receive work runs in a kernel thread on the receive CPU (rxmode): its
        NAPI thread, or the cpumap ring's."""
        return self.rx_model in ("napi", "cpumap")

    @property
    def rx_ring(self) -> int | None:
        """The frames of the receive ring this trial's frames wait in before the receive work takes
        them: the cpumap queue's, else the veth's own; None on ports (the NIC's: the record's nic)."""
        if self.testbed.ports:
            return None
        return rxmode.ring_frames(self.rx_model, self.setup.rx_ring)

    def backlog_ran(self) -> int | None:
        """net.core.netdev_max_backlog as the trial ends, where its step set it (the backlog knob:
        the runner holds it), read back rather than taken from the step; None where the step left
        the host's own."""
        if not self.setup.backlog:
            return None
        value = host_sysctl.read(host_sysctl.BACKLOG)
        return int(value) if value is not None and value.isdigit() else None

    def xdpcount_argv(self) -> list[str]:
        """capbench-xdpcount on the capture veth: the delivered counter, and in the cpumap model the
        receive ring's programs."""
        return [str(self.binaries.xdpcount), "--iface", self.testbed.cap_if,
                *rxmode.ring_args(self.rx_model, self.rx_ring, self.testbed.rx_cpu)]

    @property
    def kernel_rx_cpu(self) -> int | None:
        """The CPU that does the capture veth's receive work.

        In napi mode the NAPI thread's CPU, for every backend: the XDP programs of afxdp
        and xdp run in that poll too. In rps mode the NAPI poll runs in the sender's
        softirq: the RPS target does the stack's work, except for the backends with their
        own XDP program, which the sender's CPU runs (RPS steers only frames that XDP
        passes on to the stack; theirs are redirected into the AF_XDP socket, copy
        included, or dropped)."""
        if self.testbed.ports:
            # the CPU its receive IRQs were steered to (ports.StepSettings); None: left where the
            # NIC's IRQ affinity had them (the record's nic says where they ran: rx_interrupts)
            return self.testbed.rx_cpu
        if self.napi_mode:
            return self.testbed.rx_cpu  # None: left to the scheduler (napi_cpus_seen says where it ran)
        if self.backend.own_xdp or self.testbed.rx_cpu is None:
            return self.setup.gen_cpu
        return self.testbed.rx_cpu

    @property
    def app_load(self) -> str | None:
        """capbench-cap's work per packet; None where no capbench-cap reads the packets (a kernel
        counter, a capture program under test)."""
        return None if self.backend.kernel_counter or self.setup.app is not None else self.setup.app_load

    def gen_argv(self, duration_s: float, load: Rate) -> list[str]:
        s, tb = self.setup, self.testbed
        remote = self.gen_host is not None and not self.gen_host.local
        return [
            "capbench-gen" if remote else str(self.binaries.gen),  # another host's: Host.program finds it
            "--iface", tb.gen_if,
            "--engine", s.engine,
            "--size", s.size,
            "--rate", load.text,
            "--link", link_name(s.link_bps),
            "--duration", f"{duration_s:g}",
            *_opt("--cpu", s.gen_cpu),
            "--dst-mac", tb.dst_mac,
            # A trial reads the exact sent count from the generator's summary, and the kernel
            # counters it reads (socket, xdpcount) could not tell trailer frames from the stream.
            "--trailer", "0",
            *s.gen_args,
        ]

    @property
    def proc_cpus(self) -> tuple[int | None, ...]:
        s = self.setup
        return s.proc_cpus if s.proc_cpus is not None else (s.cap_cpu,) * s.procs

    def cap_argv(self, cpu_: int | None = None) -> list[str]:
        s, tb = self.setup, self.testbed
        return [
            str(self.binaries.cap),
            "--iface", tb.cap_if,
            "--backend", s.backend,
            *_opt("--cpu", s.cap_cpu if cpu_ is None else cpu_),
            *_opt("--app-load", self.app_load),
            *self.backend.ring_args(s.ring_bytes),
            *self.xsk_queue_args(),
            *self.worker_cpu_args(),
            *s.cap_args,
            *s.knob_args,
            *s.group_args,
        ]

    @property
    def worker_cpus(self) -> tuple[int, ...]:
        """A backend with a --workers option (fanout): the CPU of each worker, chosen here. Given (--worker-cpus in --backend-args),
        those; else distinct usable CPUs from the counter's on, the generator's last, so a
        worker goes on the generator's CPU only when every other CPU has one (the record's
        worker_cpus and the table titles then say so). With more workers than CPUs: () and
        capbench-cap places them in turn from --cpu; its summary says where."""
        s = self.setup
        if self.backend.option("--workers") is None:
            return ()
        given = option_value(list(s.cap_args + s.knob_args), "--worker-cpus")
        if given is not None:
            return tuple(sorted(cpu.parse_cpu_list(given)))
        workers = int(option_value(list(s.cap_args + s.knob_args), "--workers") or 1)
        usable = cpu.usable_cpus()
        free = [c for c in usable if c != s.gen_cpu]
        if s.cap_cpu in free:
            free = free[free.index(s.cap_cpu):] + free[:free.index(s.cap_cpu)]
        order = free + [c for c in usable if c == s.gen_cpu]
        return tuple(order[:workers]) if workers <= len(order) else ()

    def worker_cpu_args(self) -> tuple[str, ...]:
        """--worker-cpus for the CPUs chosen here, unless --backend-args gave them."""
        if option_value(list(self.setup.cap_args + self.setup.knob_args), "--worker-cpus") is not None:
            return ()
        cpus = self.worker_cpus
        return ("--worker-cpus", ",".join(map(str, cpus))) if cpus else ()

    def xsk_queue_args(self) -> tuple[str, ...]:
        """The receive queues an AF_XDP backend binds, which must hold the generator's frames.

        The test bed's veth has one queue per CPU, and a frame sent on it lands on the
        peer's receive queue of the sending CPU (CPU modulo queues): an XDP redirect
        picks it in veth_xdp_xmit, a packet socket picks the transmit queue of its CPU,
        which veth_xmit maps to the same receive queue. So: the generator's CPU's queue
        when it is pinned to one CPU, every queue (a socket and a worker each) when it is not."""
        s = self.setup
        if not self.backend.queues or "--queue" in s.cap_args:
            return ()
        if s.gen_cpu is None or "--threads" in s.gen_args:
            return ("--queue", "all")
        return ("--queue", str(s.gen_cpu % veth_queues()))

    def check(self, load: Rate) -> None:
        """What this setup cannot run, before anything starts (UsageError)."""
        s = self.setup
        if s.size_profile is None:  # capbench-gen checks a profile's mean wire rate itself
            load.check(s.frame_len, s.link_bps)
        if s.procs < 1 or len(self.proc_cpus) != s.procs:
            raise UsageError(f"--procs {s.procs} needs one CPU per process, got {list(self.proc_cpus)}")
        if self.backend.own_xdp and s.procs > 1:
            raise UsageError(f"--procs {s.procs} with {s.backend}: an interface holds one XDP program, so one "
                             f"{s.backend} process at a time (use a backend that shares an interface: "
                             f"{declared.shared_interface_backends()})")

    def measure(self, duration_s: float, load: Rate | float) -> TrialResult:
        """Run one trial of `duration_s` at `load` (a Rate, or frames per second)."""
        from capbench.trial.trial_run import run_trial  # it drives Measurers: imported here, not at the top

        (result,) = run_trial(self, [self], duration_s, load)
        return result

    def settle_s(self) -> float:
        """How long after the load its counters wait: the setup's settle time, and a program's own
        (libpcap's buffer timeout holds frames a while before a read returns them)."""
        return self.setup.settle_s + (self.setup.app.settle_s if self.setup.app is not None else 0.0)

    def program_summary(self, prog: ProgramRun) -> dict[str, Any]:
        """A program's trial counts in the shape of capbench-cap's summary: capbench's own decode of
        the capture file the program wrote (`capbench-cap --read`: sequence numbers, duplicates,
        reordering, latency, lengths, groups, exactly as for its own counter), `received` from that
        file (else the program's own captured count) and `kernel_drops` from the program's own
        report of the kernel's drops (libpcap's ps_drop = PACKET_STATISTICS tp_drops)."""
        decoded: dict[str, Any] = {}
        if prog.file_written:
            decoded = self.decode_file(prog)
        elif prog.adapter.file_format is not None and not prog.failure:
            prog.failure = f"{prog.name} wrote no capture file at {{out}} ({prog.out})"
        counts = prog.counts
        received = decoded["received"] if "received" in decoded else counts.get("captured", 0)
        account = account_rows(prog.adapter.account, counts)
        return {**decoded, "iface": self.testbed.cap_if, "received": int(received),
                "kernel_drops": account_drops(account), "account": account}

    def decode_file(self, prog: ProgramRun) -> dict[str, Any]:
        """`capbench-cap --read FILE`'s summary of the program's capture file; {} (and the trial's
        failure) where it cannot be read."""
        # capbench-cap reads the file capbench opened (no link followed, a regular file): /dev/fd/N
        # opens the same file again.
        try:
            fd = prog.open_out()
        except ProgramFileError as e:
            prog.failure = prog.failure or f"capbench cannot read {prog.name}'s capture file: {e}"
            return {}
        argv = [str(self.binaries.cap), "--read", f"/dev/fd/{fd}", *self.setup.group_args]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=DECODE_TIMEOUT_S, check=False,
                               stdin=subprocess.DEVNULL, pass_fds=(fd,))
        except subprocess.TimeoutExpired:
            prog.failure = prog.failure or f"decoding {prog.name}'s file took over {DECODE_TIMEOUT_S:g} s"
            return {}
        finally:
            os.close(fd)
        summary = next((m for line in reversed(p.stdout.splitlines()) if line.startswith("{")
                        for m in [json.loads(line)] if m.get("type") == "summary"), None)
        if p.returncode != 0 or summary is None:
            why = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
            prog.failure = prog.failure or f"capbench cannot read {prog.name}'s capture file: {why}"
            return {}
        return {**summary, "read": str(prog.out)}  # the file it read, not the descriptor's name

    def own_layers(self, cap: dict[str, Any], raw: dict[str, Any], program: dict[str, Any] | None
                   ) -> tuple[LayerCount, ...]:
        """The capture program's declared rows with their packets (its summary's `account`); from a
        summary without them (an older capbench-cap on a capture side) the rows its kernel_drops
        stood for then: AF_XDP's rings for a backend with XDP_STATISTICS, else the socket's."""
        rows = layer_counts(cap)
        if rows is not None:
            return rows
        kernel_drops = int(cap.get("kernel_drops", 0))
        xsk = self.backend.xsk_stats
        return tuple(LayerCount(**row) for row in named_layers({
            "socket_drops": 0 if xsk else kernel_drops, "xsk_drops": kernel_drops if xsk else 0, "raw": raw,
            "app_command": shlex.join(program["argv"]) if program else "", "backend": self.setup.backend}))

    def interface_drop_counters(self) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
        """The drop counters (rx_dropped, tx_dropped) of the capture and the generator interface."""
        tb = self.testbed
        # A sensor of a topology has no sender interface on its host (gen_if ""): unknown.
        return read_link_drops(tb.cap_ns, tb.cap_if), read_link_drops(tb.gen_ns, tb.gen_if) if tb.gen_if else None

    def _result(self, *, started_at: str, duration_s: float, load: Rate, gen: dict, caps: list[dict],
                xdp: dict | None, host_softnet_drops: int, app_cpu_pcts: list[float], kernel_cpu_pct: float | None,
                window_s: float, programs: list[dict[str, Any]] = (), iface_rx_dropped: int | None = None,
                gen_tx_dropped: int | None = None, cap_cpus_seen: tuple[int, ...] = (),
                napi_cpus_seen: tuple[int, ...] = (), other_testbeds: tuple[str, ...] = (),
                ring_drops: int | None = None, nic_desc: dict[str, Any] | None = None,
                nic_counters: dict[str, int] | None = None) -> TrialResult:
        s = self.setup

        def need(summary: dict, key: str, program: str) -> Any:
            if key not in summary:
                raise ChildError(f"{program}'s summary has no {key!r} field: the program and capbench disagree "
                                 f"on docs/programs.md; rebuild with `make`")
            return summary[key]

        sent = int(need(gen, "sent", "capbench-gen"))
        send_s = float(need(gen, "duration_s", "capbench-gen"))
        for witness, summary in zip(programs, caps[len(caps) - len(programs):]):
            unwrap_program_counts(witness, summary, int(xdp["capbench"]) if xdp and "capbench" in xdp else None)
        received = [int(need(c, "received", "capbench-cap")) for c in caps]
        # The record's account is that of the process that received least (the worst case);
        # every process's own figures go in the proc_* lists.
        worst = min(range(len(caps)), key=received.__getitem__)
        cap = caps[worst]
        raw = {"gen": gen, "cap": cap}
        if len(caps) > 1:
            raw["caps"] = caps
        program = programs[worst] if programs else None
        if programs:
            raw["programs"] = list(programs)
        if xdp is not None:
            delivered = int(need(xdp, "capbench", "capbench-xdpcount"))
            raw["xdpcount"] = xdp
            backlog_drops = backlog_from_device(iface_rx_dropped, ring_drops, sent - delivered, host_softnet_drops)
        else:
            # The backend's frames are redirected or dropped in XDP: none enters a backlog queue.
            delivered = int(need(cap, "delivered", "capbench-cap"))
            backlog_drops = 0
        # The cpumap ring's overflow, counted by capbench-xdpcount's tracepoint program (rxmode).
        rx_ring_drops = int(xdp["ring_drops"]) if xdp is not None and "ring_drops" in xdp else None
        acc = accounting.account(
            sent=sent,
            delivered=delivered,
            backlog_drops=backlog_drops,
            layers=self.own_layers(cap, raw, program),
            app_drops=application_drops(self.backend, cap) if program is None else program_drops(program, cap),
            received=received[worst],
        )
        rx_pps = acc.received / send_s if send_s > 0 else 0.0
        achieved_pps = float(gen.get("achieved_pps", sent / send_s if send_s > 0 else 0.0))
        rx_gbps_from = "frame length"
        if s.size_profile is None:
            frame_len, mean_len = s.frame_len, float(s.frame_len)
            offered_pps = load.pps(s.frame_len, s.link_bps)
            rx_bps = wire_bps(rx_pps, s.frame_len)
        else:
            # A mix: the generator knows its mean length and offered rate. What arrived
            # may have another mix (small frames may be lost more often): the counter's
            # length histogram says, when it read the stamps.
            mean_len = float(need(gen, "mean_frame_len", "capbench-gen"))
            frame_len = round(mean_len)
            offered_pps = None if load.is_max else float(need(gen, "target_pps", "capbench-gen"))
            rx_wire = received_wire_bytes(cap.get("lengths"), acc.received)
            if rx_wire is not None:
                rx_bps, rx_gbps_from = (rx_wire * 8 / send_s if send_s > 0 else 0.0), "received"
            else:
                wire_bytes = int(gen.get("wire_bytes", 0))
                rx_bps, rx_gbps_from = (rx_pps * wire_bytes * 8 / sent if sent else 0.0), "sent mix"

        burst = catchup_burst(int(gen.get("max_lag_ns", 0)), offered_pps)

        def seq(key: str) -> int | None:
            # capbench-cap leaves out what it did not count (docs/programs.md): the sequence
            # checks of a kernel counter or of --app-load none.
            return int(cap[key]) if key in cap else None
        return TrialResult(
            started_at=started_at,
            backend=s.backend,
            frame_len=frame_len,
            link_bps=s.link_bps,
            rate=load.text,
            offered_pps=offered_pps,
            gen_engine=s.engine,
            app_load=self.app_load,
            requested_duration_s=duration_s,
            duration_s=send_s,
            sent=acc.sent,
            achieved_pps=achieved_pps,
            delivered=acc.delivered,
            link_drops=acc.link_drops,
            backlog_drops=acc.backlog_drops,
            app_drops=acc.app_drops,
            iface_rx_dropped=iface_rx_dropped,
            gen_tx_dropped=gen_tx_dropped,
            ring_drops=ring_drops,
            host_softnet_drops=host_softnet_drops,
            rx_mode=self.rx_model,
            napi_sched=self.testbed.napi_sched if self.napi_mode else "",
            rx_ring=self.rx_ring,
            rx_ring_drops=rx_ring_drops,
            backlog=self.backlog_ran(),
            napi_cpus_seen=napi_cpus_seen,
            received=acc.received,
            lost=acc.lost,
            loss_pct=acc.loss_pct,
            unexplained=acc.unexplained,
            duplicates=seq("duplicates"),
            reordered=seq("reordered"),
            foreign=seq("foreign"),
            seq_lost=seq("lost"),
            rx_pps=rx_pps,
            rx_gbps=rx_bps / 1e9,
            rx_gbps_from=rx_gbps_from,
            app_cpu_pct=sum(app_cpu_pcts),
            kernel_cpu_pct=kernel_cpu_pct,
            window_s=window_s,
            gen_cpu=s.gen_cpu,
            cap_cpu=s.cap_cpu,
            kernel_rx_cpu=self.kernel_rx_cpu,
            gen_refusals=declared.gen().engine(s.engine).refusals,
            gen_refused=int(gen.get("refused", 0)),
            gen_late=int(gen.get("late", 0)),
            gen_max_lag_ns=int(gen.get("max_lag_ns", 0)),
            invalid_offered_load=offered_pps is not None and (
                offered_share(gen, achieved_pps, offered_pps) < OFFERED_MIN_SHARE),
            catchup_burst_frames=burst,
            schedule_slipped=burst > int(gen.get("catch_up", rxmode.VETH_RING_FRAMES)),
            size=s.size,
            mean_frame_len=mean_len,
            latency=_percentiles(cap.get("latency_ns")),
            iat=_percentiles(cap.get("iat_ns")),
            rx_clock=str(cap.get("rx_clock", "")),
            group_size=int((cap.get("groups") or {}).get("size", 0)),
            group_received=tuple((cap.get("groups") or {}).get("received", ())),
            ring_bytes=ring_ran(self.backend, s.ring_bytes, s.cap_args + s.knob_args, cap),
            backend_args=shlex.join(s.cap_args),
            knobs=dict(s.knobs),
            cap_cpus_seen=cap_cpus_seen,
            polls=self.backend.polls,
            idle_poll_pct=float(cap["idle_poll_pct"]) if "idle_poll_pct" in cap else None,
            # Where capbench-cap pinned its workers (its summary), else where they were asked to go.
            worker_cpus=tuple(int(c) for c in cap.get("worker_cpus", ()) if int(c) >= 0) or self.worker_cpus,
            other_testbeds=other_testbeds,
            procs=len(caps),
            proc_cpus=self.proc_cpus,
            proc_received=tuple(received),
            proc_socket_drops=tuple(int(c.get("kernel_drops", 0)) for c in caps),
            proc_app_cpu_pct=tuple(app_cpu_pcts),
            app_command=shlex.join(program["argv"]) if program else "",
            app_counts=dict(program["counts"]) if program else {},
            app_user_cpu_pct=sum(p["cpu_user_pct"] or 0.0 for p in programs) if programs else None,
            app_system_cpu_pct=sum(p["cpu_system_pct"] or 0.0 for p in programs) if programs else None,
            file_frames=int(cap["file_frames"]) if program and "file_frames" in cap else None,
            failure="; ".join(p["failure"] for p in programs if p["failure"]),
            ports=self.testbed.ports,
            nic=dict(nic_desc or {}),
            nic_counters=dict(nic_counters or {}),
            layers=acc.layers,
            raw=raw,
        )

