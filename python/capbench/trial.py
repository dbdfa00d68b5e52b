"""One trial: a constant load for a fixed time through the test bed, and where every packet went.

`Measurer.measure(duration_s, load) -> TrialResult`, in the spirit of FD.io
CSIT's MLRsearch: the methods (iperf-like today; RFC 2544 and MLR searches
later) only ever see TrialResults, never traffic.

A trial:
 1. start capbench-xdpcount on the capture veth (the "delivered" counter; on a
    veth it also gives the receive side the NAPI instance XDP-redirected frames
    need), wait for its `ready` line;
 2. start capbench-cap (the counter) with the backend, wait for `ready`;
 3. snapshot softnet_stat, /proc/stat and the counter's CPU time;
 4. run capbench-gen in the generator namespace to completion;
 5. snapshot the CPU times again: steps 3-5 are the load window;
 6. wait `settle_s` for the rings and backlog queues to drain, snapshot softnet_stat;
 7. SIGTERM the counter and xdpcount, read their summaries;
 8. account for every packet (accounting.account) and return a frozen TrialResult.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from capbench import accounting, cpu
from capbench.binaries import Binaries
from capbench.errors import RunError
from capbench.procs import ChildError, ChildSet
from capbench.rates import Rate, link_name, wire_bps
from capbench.testbed import Testbed

SCHEMA = 1
# A trial whose generator sent less than this share of the offered rate did not
# offer the load it names: its loss figures are not a capture result at that load.
OFFERED_MIN_SHARE = 0.999
BACKENDS = ("pcap", "raw", "afp-v2", "afp-v3", "fanout")
ENGINES = ("xdp", "afpacket")


@dataclass(frozen=True)
class TrialSetup:
    """Everything about a trial except its duration and load."""

    backend: str
    frame_len: int
    link_bps: float = 1e9
    engine: str = "xdp"
    gen_cpu: int | None = 0
    cap_cpu: int | None = 1
    app_load: str | None = None  # capbench-cap --app-load: touch | none | spin:NS
    settle_s: float = 0.3
    ready_timeout_s: float = 5.0
    cap_args: tuple[str, ...] = ()  # further capbench-cap options (ring sizes, --pcap-api ...)
    gen_args: tuple[str, ...] = ()  # further capbench-gen options


@dataclass(frozen=True)
class TrialResult:
    """One trial record: a line of trials.jsonl. Counts are packets; names carry their units."""

    started_at: str  # UTC, ISO 8601
    backend: str
    frame_len: int
    link_bps: float
    rate: str  # the load as given to the generator (`100%`, `800000pps`, `max`)
    offered_pps: float | None  # None for an unpaced (`max`) trial
    gen_engine: str
    app_load: str | None
    requested_duration_s: float
    duration_s: float  # the generator's sending time (first to last departure)
    sent: int
    achieved_pps: float
    delivered: int
    link_drops: int
    backlog_drops: int
    socket_drops: int
    received: int
    lost: int
    loss_pct: float
    unexplained: int
    duplicates: int
    reordered: int
    foreign: int
    seq_lost: int  # the counter's own view: sequence numbers missing below the highest seen
    rx_pps: float  # received / duration_s: the seed's iperf-like throughput
    rx_gbps: float  # rx_pps on the wire, with 20 B preamble+gap per frame
    app_cpu_pct: float  # counter's user+system time, % of one CPU over the load window
    kernel_cpu_pct: float  # softirq+irq time of the kernel receive CPU over the load window
    window_s: float
    gen_cpu: int | None
    cap_cpu: int | None
    kernel_rx_cpu: int | None
    gen_late: int = 0  # frames that left more than one gap after their scheduled time
    gen_max_lag_ns: int = 0  # the largest such delay
    invalid_offered_load: bool = False  # achieved_pps < OFFERED_MIN_SHARE x offered_pps
    raw: dict[str, Any] = field(default_factory=dict, compare=False)  # the programs' summary lines
    schema: int = SCHEMA

    def to_record(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        return {"schema": d.pop("schema"), **d}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> TrialResult:
        """Read a record back; unknown keys (from newer versions) are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        try:
            return cls(**{k: v for k, v in record.items() if k in names})
        except TypeError as e:
            raise RunError(f"not a capbench trial record: {e}") from None


def _opt(flag: str, value: Any) -> list[str]:
    return [] if value is None else [flag, str(value)]


def _utc_now() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


class Measurer:
    """Runs trials of one TrialSetup on one test bed."""

    def __init__(self, binaries: Binaries, testbed: Testbed, setup: TrialSetup):
        self.binaries = binaries
        self.testbed = testbed
        self.setup = setup

    @property
    def kernel_rx_cpu(self) -> int | None:
        """The CPU that does the capture veth's receive work: the RPS target, else the sender's."""
        return self.testbed.rx_cpu if self.testbed.rx_cpu is not None else self.setup.gen_cpu

    def gen_argv(self, duration_s: float, load: Rate) -> list[str]:
        s, tb = self.setup, self.testbed
        return [
            str(self.binaries.gen),
            "--iface", tb.gen_if,
            "--engine", s.engine,
            "--size", str(s.frame_len),
            "--rate", load.text,
            "--link", link_name(s.link_bps),
            "--duration", f"{duration_s:g}",
            *_opt("--cpu", s.gen_cpu),
            "--dst-mac", tb.dst_mac,
            *s.gen_args,
        ]

    def cap_argv(self) -> list[str]:
        s, tb = self.setup, self.testbed
        return [
            str(self.binaries.cap),
            "--iface", tb.cap_if,
            "--backend", s.backend,
            *_opt("--cpu", s.cap_cpu),
            *_opt("--app-load", s.app_load),
            *s.cap_args,
        ]

    def measure(self, duration_s: float, load: Rate | float) -> TrialResult:
        """Run one trial of `duration_s` at `load` (a Rate, or frames per second)."""
        s, tb = self.setup, self.testbed
        if not isinstance(load, Rate):
            load = Rate.from_pps(load)
        load.check(s.frame_len, s.link_bps)
        started_at = _utc_now()
        with ChildSet() as kids:
            xdp = kids.start("capbench-xdpcount", [str(self.binaries.xdpcount), "--iface", tb.cap_if],
                             netns_name=tb.cap_ns)
            xdp.wait_for("ready", s.ready_timeout_s)
            cap = kids.start("capbench-cap", self.cap_argv(), netns_name=tb.cap_ns)
            cap.wait_for("ready", s.ready_timeout_s)

            softnet0 = cpu.read_softnet_drops()
            stat0 = cpu.read_proc_stat()
            ticks0 = cpu.read_pid_ticks(cap.pid)
            t0 = time.monotonic()

            gen = kids.start("capbench-gen", self.gen_argv(duration_s, load), netns_name=tb.gen_ns)
            gen.wait(duration_s + 10.0 + s.ready_timeout_s)

            t1 = time.monotonic()
            stat1 = cpu.read_proc_stat()
            try:
                ticks1 = cpu.read_pid_ticks(cap.pid)
            except FileNotFoundError:
                raise cap.failure("ended during the trial") from None
            gen_summary = gen.summary()

            time.sleep(s.settle_s)
            softnet1 = cpu.read_softnet_drops()
            for child in (cap, xdp):
                if not child.running:
                    raise child.failure("ended during the trial")
            kids.stop_all()
            cap_summary = cap.summary()
            xdp_summary = xdp.summary()

        return self._result(
            started_at=started_at, duration_s=duration_s, load=load,
            gen=gen_summary, cap=cap_summary, xdp=xdp_summary,
            backlog_drops=cpu.counter_delta(softnet0, softnet1),
            app_cpu_pct=cpu.process_cpu_pct(ticks0, ticks1, t1 - t0),
            kernel_cpu_pct=(cpu.kernel_rx_pct(stat0, stat1, self.kernel_rx_cpu)
                            if self.kernel_rx_cpu is not None else 0.0),
            window_s=t1 - t0,
        )

    def _result(self, *, started_at: str, duration_s: float, load: Rate, gen: dict, cap: dict, xdp: dict,
                backlog_drops: int, app_cpu_pct: float, kernel_cpu_pct: float, window_s: float) -> TrialResult:
        s = self.setup

        def need(summary: dict, key: str, program: str) -> Any:
            if key not in summary:
                raise ChildError(f"{program}'s summary has no {key!r} field: the program and capbench disagree "
                                 f"on docs/programs.md; rebuild with `make`")
            return summary[key]

        sent = int(need(gen, "sent", "capbench-gen"))
        send_s = float(need(gen, "duration_s", "capbench-gen"))
        acc = accounting.account(
            sent=sent,
            delivered=int(need(xdp, "capbench", "capbench-xdpcount")),
            backlog_drops=backlog_drops,
            socket_drops=int(need(cap, "kernel_drops", "capbench-cap")),
            received=int(need(cap, "received", "capbench-cap")),
        )
        rx_pps = acc.received / send_s if send_s > 0 else 0.0
        offered_pps = load.pps(s.frame_len, s.link_bps)
        achieved_pps = float(gen.get("achieved_pps", sent / send_s if send_s > 0 else 0.0))
        return TrialResult(
            started_at=started_at,
            backend=s.backend,
            frame_len=s.frame_len,
            link_bps=s.link_bps,
            rate=load.text,
            offered_pps=offered_pps,
            gen_engine=s.engine,
            app_load=s.app_load,
            requested_duration_s=duration_s,
            duration_s=send_s,
            sent=acc.sent,
            achieved_pps=achieved_pps,
            delivered=acc.delivered,
            link_drops=acc.link_drops,
            backlog_drops=acc.backlog_drops,
            socket_drops=acc.socket_drops,
            received=acc.received,
            lost=acc.lost,
            loss_pct=acc.loss_pct,
            unexplained=acc.unexplained,
            duplicates=int(cap.get("duplicates", 0)),
            reordered=int(cap.get("reordered", 0)),
            foreign=int(cap.get("foreign", 0)),
            seq_lost=int(cap.get("lost", 0)),
            rx_pps=rx_pps,
            rx_gbps=wire_bps(rx_pps, s.frame_len) / 1e9,
            app_cpu_pct=app_cpu_pct,
            kernel_cpu_pct=kernel_cpu_pct,
            window_s=window_s,
            gen_cpu=s.gen_cpu,
            cap_cpu=s.cap_cpu,
            kernel_rx_cpu=self.kernel_rx_cpu,
            gen_late=int(gen.get("late", 0)),
            gen_max_lag_ns=int(gen.get("max_lag_ns", 0)),
            invalid_offered_load=offered_pps is not None and achieved_pps < OFFERED_MIN_SHARE * offered_pps,
            raw={"gen": gen, "cap": cap, "xdpcount": xdp},
        )
