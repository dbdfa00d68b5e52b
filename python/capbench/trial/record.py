"""The trial record: one line of trials.jsonl, what a trial measured (capbench.trial.measure runs it).

Its versions (the `schema` field of each line), the way pyperf keeps its format's history:

  1 - (capbench 0.1) the first record. Fields were added within version 1, each with a default
      that says what a record written before it measured (no AF_XDP drops, one process, rx mode
      rps, the method iperf ...): a record that lacks one is read with that default (or with the
      run's own value, for the method: load_trial's `defaults`).

  2 - (issue 29) the capture program's loss account is its declared rows (`layers`) only: the
      named fields socket_drops and xsk_drops are gone, and the account adds up the rows. The
      step from 1 maps a record's named fields onto rows (named_layers) where it has none.

A change to a field's meaning or type makes the next version: TRIAL_SCHEMA goes up, and _UPGRADES
gets the step from the older shape to the newer, so that load_trial stays the one place that knows
the older shapes and every reader sees today's.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from capbench.records import (RecordError, control_text, field_types, from_json, number_problem, short, to_json,
                              type_problem, upgrade)
from capbench.trial import accounting
from capbench.trial.accounting import LayerCount

TRIAL_SCHEMA = 2
# The record's field of the program's rows (TrialResult.layers).
LAYERS = "layers"
# Version 1's named fields of the program's drops, which version 2 holds as rows.
NAMED_DROP_FIELDS = ("socket_drops", "xsk_drops")


def _named_fields_to_rows(record: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: the named fields become rows where the record has none (written before
    issue 29), and go; a record with rows already (those add up to the named fields) keeps its rows."""
    for name in NAMED_DROP_FIELDS:  # counts, as version 1 checked them: RecordError otherwise
        if name in record:
            problem = type_problem(name, record[name], int) or number_problem(name, record[name], signed=False)
            if problem:
                raise RecordError("invalid", problem)
    out = {k: v for k, v in record.items() if k not in NAMED_DROP_FIELDS}
    if record.get(LAYERS) is None:
        try:
            out[LAYERS] = named_layers(record)
        except (TypeError, ValueError, AttributeError) as e:  # raw, free-form, of another shape
            raise RecordError("invalid", f"its drops cannot be read as rows: {e}") from None
    return out


# Version N -> the function from a record of version N to one of N+1.
_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _named_fields_to_rows}


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
    received: int
    lost: int
    loss_pct: float
    unexplained: int
    # The counter's own view from the stamps; None where it read none (--app-load none):
    duplicates: int | None
    reordered: int | None
    foreign: int | None
    seq_lost: int | None  # sequence numbers missing below the highest seen
    rx_pps: float  # received / duration_s: the seed's iperf-like throughput
    rx_gbps: float  # rx_pps on the wire, with 20 B preamble+gap per frame (rx_gbps_from says whose lengths)
    app_cpu_pct: float  # counter's user+system time, % of one CPU over the load window
    # softirq+irq time of the kernel receive CPU over the load window (and its NAPI threads' time);
    # None: not measured (a remote sensor or a port whose receive CPU is not known). Records before
    # issue 28 wrote 0.0 there.
    kernel_cpu_pct: float | None
    window_s: float
    gen_cpu: int | None
    cap_cpu: int | None
    kernel_rx_cpu: int | None
    # What becomes of a frame the generator's interface had no room for, as its engine declares it
    # (declared.Engine.refusals): "retried" or "lost"; "" in records before it (gen_refusals_of).
    gen_refusals: str = ""
    # Frames due that the engine could not hand to its interface (its summary's "refused"): lost
    # before the wire, so neither sent nor capture loss; the generator fell short by them.
    gen_refused: int = 0
    gen_late: int = 0  # frames that left more than one gap after their scheduled time
    gen_max_lag_ns: int = 0  # the largest such delay
    # The generator sent < OFFERED_MIN_SHARE of the offered load: it did not hold the target.
    invalid_offered_load: bool = False
    # The frames the generator owed at its largest lag (gen_max_lag_ns x offered_pps);
    # schedule_slipped when that was more than it may send faster than the link (its summary's
    # catch_up): it then caught up at the wire rate, or not at all at 100 %.
    catchup_burst_frames: int = 0
    schedule_slipped: bool = False
    # Frames the socket queued that the counter never read: kernel packets − kernel drops − frames
    # read (raw, afp-v2, afp-v3, fanout; 0 for the others). A stage of the account, like the drops above.
    app_drops: int = 0
    # The interfaces' own drop counters over the trial (`ip -s link`: rx_dropped of the capture
    # interface, tx_dropped of the generator's); None where they were not read (older records).
    # They split the link layer (loss_layers), they are no stage of their own: on a veth they also
    # count frames of the backlog and AF_XDP layers.
    iface_rx_dropped: int | None = None
    gen_tx_dropped: int | None = None
    # Frames the capture veth's receive ring had no room for: the sender's `ethtool -S`
    # tx_queue_N_xdp_xmit_errors over the trial (the NIC ring's overflow); None where not read.
    ring_drops: int | None = None
    # softnet_stat's backlog drops on the receive CPU over the trial: host-wide, every test bed's
    # and every device's; a cross-check of backlog_drops, never charged to the trial when the
    # capture interface's own counter was read. None where not read.
    host_softnet_drops: int | None = None
    # The test bed's receive model (rxmode.RX_MODES, or ports.NIC_RX_MODE for a real interface's
    # driver; records without it, and those of real interfaces before issue 28, are "rps"), the NAPI
    # thread's scheduling ("other", "fifo:N"; "" in rps mode) and the CPUs it ran on.
    rx_mode: str = "rps"
    napi_sched: str = ""
    napi_cpus_seen: tuple[int, ...] = ()
    # The receive ring's depth in frames (--rx-ring; rxmode): the cpumap queue's in the cpumap model,
    # else the capture veth's own, which records without the field had (256, VETH_RING_SIZE); None on
    # ports (the NIC's ring: the record's nic). In the cpumap model ring_drops stays the veth's
    # ring (drained on the generator's CPU) and rx_ring_drops counts the cpumap queue's overflow
    # (the xdp:xdp_cpumap_enqueue tracepoint, this ring's map and CPU); None in the other models.
    rx_ring: int | None = 256
    rx_ring_drops: int | None = None
    # net.core.netdev_max_backlog as the trial ended (read back), where its step set it (the backlog
    # knob: capbench run --vary backlog=N, capbench tune); None: the host's own, which run.json's
    # system records.
    backlog: int | None = None
    size: str = ""  # capbench-gen --size: the frame length, or a profile such as imix:seed
    mean_frame_len: float = 0.0  # of the frames sent; frame_len is its rounding for a profile
    method: str = "iperf"  # the method that ran the trial (methods/dispatch.py)
    purpose: str = ""  # why it ran: "constant load", "search", "verify", "phase 2/3", "step 4/26", "burst"
    step: str = ""  # the campaign step it belongs to (campaign.Step.key)
    repeat: int = 1  # which repetition of its step
    requested_frames: int = 0  # the frames the trial was to send (capbench run --count); 0: by requested_duration_s
    # With several capture processes (procs > 1) the fields above are those of the one that
    # received least (app_cpu_pct: of all together); each one's figures are in these lists.
    procs: int = 1
    proc_cpus: tuple[int | None, ...] = ()
    proc_received: tuple[int, ...] = ()
    proc_socket_drops: tuple[int, ...] = ()
    proc_app_cpu_pct: tuple[float, ...] = ()
    # From the counter's summary (docs/programs.md): one-way latency from the TX stamp and
    # inter-arrival time of capbench frames, {"min_ns", "p50_ns", "p90_ns", "p99_ns",
    # "p99.9_ns", "max_ns"}; which clock timed the receipt ("kernel", "read"); and with
    # groups, the frames received of each group.
    latency: dict[str, int] = field(default_factory=dict)
    # False: the generator ran on another host and the clocks are not known to agree (a topology
    # without [clocks] synchronized = "ptp"): latency is left out, being meaningless.
    latency_valid: bool = True
    host: str = ""  # a topology's run: the host the capture ran on (docs/topology.md); "": this machine
    iat: dict[str, int] = field(default_factory=dict)
    rx_clock: str = ""
    group_size: int = 0
    group_received: tuple[int, ...] = ()
    # The kernel buffer of one socket the trial ran (capbench-cap's summary: what its options made,
    # after --ring and --backend-args), where the trial set one; 0 = the backend's default. Before
    # issue 30 it was the --ring asked for, which a later --backend-args option could override.
    ring_bytes: int = 0
    backend_args: str = ""  # the backend's own options from --backend-args, as given
    # The knobs its step set (capbench run --vary, capbench tune): knob -> value as given
    # ("afp-v3:block-size": "1M", "ring": "4M"); {}: none (the settings above say the rest).
    knobs: dict[str, str] = field(default_factory=dict)
    cap_cpus_seen: tuple[int, ...] = ()  # CPUs the counter's read loops last ran on (end of the load)
    worker_cpus: tuple[int, ...] = ()  # fanout: the CPUs its workers were pinned to, in worker order
    # The counter polls (its backend's or adapter's `polls`: dpdk, testpmd): its CPU was busy
    # whatever the traffic, so app_cpu_pct is ~100 % per worker by design, and beside the receive
    # work it starves the ring's kernel thread (loss_layers.polling_remarks).
    polls: bool = False
    # Of a polling counter's time, the share its read loops spent in polls that found nothing (its
    # summary's idle_poll_pct: the dpdk backend times each turn of its loop); the idle part of its
    # ~100 % CPU. None: it does not poll, or does not say (testpmd, records before issue 29).
    idle_poll_pct: float | None = None
    # The frame lengths behind rx_gbps: "frame length" (one size), "received" (the counter's
    # histogram of the frames it received, for a mix), "sent mix" (no histogram: the counter
    # read no stamps, so the received frames are taken to have the mix sent).
    rx_gbps_from: str = "frame length"
    # Other capbench test beds in use during the trial: softnet_stat and /proc/stat count
    # per CPU for the whole host, so their traffic on the same CPUs is in this trial's figures.
    other_testbeds: tuple[str, ...] = ()
    # The host's interference over the trial's window, per CPU the trial used, keyed by the CPU's
    # number as text: {"roles": [...], "steal_ms", "others_ms", "others_top": [[name, ms], ...],
    # "others_longest_ms", "others_longest_name", "trial_ms", "stops", "stop_ms", "longest_stop_us",
    # "stops_us", "stop_min_us", and "not_measured" where a figure (then null) could not be read}
    # (trial/witness.py says what each is and how it was read; docs/json.md).
    # Empty: not measured (older records, a capture side on another host).
    host_interference: dict[str, Any] = field(default_factory=dict)
    # The loss of this trial could be the host's doing, by host_interference and the generator's
    # lag: `disturbed_reason` says which counter shows it ("" when not disturbed).
    disturbed: bool = False
    disturbed_reason: str = ""
    # 1 + how many times this trial had been run before at the same step and load because the
    # host disturbed the earlier runs (every run is recorded; methods decide on the last).
    attempt: int = 1
    # A capture program under test (trial/apps.py, `backend` is its adapter's name): its command
    # line ("" for capbench's own counter), the counts it reported itself ({"captured", "dropped",
    # "seen", ...}, its own witness; capbench's is `received` from its capture file), the user and
    # system time of its whole process tree (% of one CPU over the load window; app_cpu_pct is
    # their sum) and the frames its capture file holds, capbench frames or not (None: no file).
    app_command: str = ""
    app_counts: dict[str, int] = field(default_factory=dict)
    app_user_cpu_pct: float | None = None
    app_system_cpu_pct: float | None = None
    file_frames: int | None = None
    # Why the trial failed ("" when it did not): the program under test ended before the stop,
    # did not stop within its grace time and was killed, or its counts could not be read. Its
    # loss counts as measured; a failed trial is never lossless (methods/verdict.py).
    failure: str = ""
    # A run on the user's own ports (testbed.ports, --gen-iface/--cap-iface): the capture port as
    # testbed.nic.describe saw it at the trial's end (driver, firmware, rings, channels, coalescing,
    # offloads, each queue's IRQ and its CPUs) and the increase of each of its NIC counters that
    # changed ("link.rx_missed_errors", "nic.<driver's name>", "std.GROUP.<name>"). Empty on the
    # veth test bed.
    ports: bool = False
    nic: dict[str, Any] = field(default_factory=dict)
    nic_counters: dict[str, int] = field(default_factory=dict)
    # Sensors on one stream (seed 004's tap, trial_run.Tap): which sensor this record is (1-based;
    # 0: no tap) of how many, the capbench frames the tap saw, the frames its receive ring had no
    # room for (lost for every sensor alike), and the CPU of its receive work. The link layer of a
    # sensor splits into the tap's ring, the tap's clone to this sensor (seen − delivered − this
    # sensor's ring), this sensor's ring (ring_drops: the tap's veth to it) and the rest.
    sensor: int = 0
    sensors: int = 0
    tap_seen: int | None = None
    tap_ring_drops: int | None = None
    tap_cpu: int | None = None
    # --profile (capbench.profile.analysis): how the load window was sampled (perf's cpu-clock,
    # period_ns, samples, unresolved frames, the folded stacks' file under the results folder)
    # and, for each role (generator, receive, tap, counter) its CPUs' shares of time (NET_RX,
    # kernel, user, idle), the groups of groups.toml, its top functions and its CPU time per
    # captured packet. Empty: not profiled.
    profile: dict[str, Any] = field(default_factory=dict)
    # The capture program's own part of the loss account, its declared rows with their packets
    # (LayerCount): from capbench-cap's summary `account` or the adapter's declared rows; the rows
    # that are no cross-check are its drops in the account (accounting.account). Records before
    # issue 29 had named fields instead (socket_drops, xsk_drops): the upgrade to version 2 maps
    # them onto rows (named_layers).
    layers: tuple[LayerCount, ...] = ()
    # The per-layer account (loss_layers.py): [layer, packets, counter] from the wire up,
    # and what the counters' disagreements say.
    loss_layers: tuple = ()
    loss_remarks: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False)  # the programs' summary lines
    schema: int = TRIAL_SCHEMA

    @property
    def size_label(self) -> str:
        """The frame length, or the profile of a mixed-length trial."""
        return self.size if self.size and not self.size.isdigit() else str(self.frame_len)

    def to_record(self) -> dict[str, Any]:
        """The record as a line of trials.jsonl holds it (JSON: tuples as lists)."""
        return to_json(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TrialResult:
        """A record read back (load_trial); RecordError saying why when it holds no trial."""
        return load_trial(record)


# The account's signed differences (accounting.py): counters that disagree show as a value below 0.
SIGNED_FIELDS = frozenset({"unexplained", "link_drops"})
# Fields whose numbers are not counts, rates or times, so may be below zero: the per-layer
# account (loss_layers.py splits the link layer with a signed remainder) and the programs' raw summaries.
UNSIGNED_EXEMPT = frozenset({"loss_layers", "raw"})
# Fields that hold what another program said (the C programs' summaries, a NIC's description):
# type-checked as a whole, their inner numbers not judged as counts.
FREE_FORM = frozenset({"raw", "nic"})
# The account's inputs (accounting.account's parameters, absent ones 0) and what it derives from them.
_ACCOUNT_INPUTS = tuple(inspect.signature(accounting.account).parameters)
_ACCOUNT_DERIVED = tuple(f.name for f in dataclasses.fields(accounting.LossAccount) if f.name not in _ACCOUNT_INPUTS)


def record_problem(record: Mapping[str, Any]) -> str | None:
    """Why `record` cannot be a trial capbench measured (None: it can). Derived from TrialResult's
    fields and types and from accounting.account: a wrong type, NaN or infinity, a number beyond
    a 64-bit counter, a count, rate or time below zero, more frames received than sent, or an
    account (lost, link_drops, unexplained, loss_pct) other than the one the counts give. A record of
    an older version is judged in today's shape (its upgrade)."""
    version = record.get("schema")
    if isinstance(version, int) and not isinstance(version, bool) and min(_UPGRADES) <= version < TRIAL_SCHEMA:
        try:
            record = upgrade(dict(record), current=TRIAL_SCHEMA, steps=_UPGRADES, what="trial")
        except RecordError as e:
            return str(e)
    for name, tp in field_types(TrialResult).items():
        if name not in record:
            continue
        value = record[name]
        problem = type_problem(name, value, tp) or (
            None if name in FREE_FORM else number_problem(name, value, signed=name in SIGNED_FIELDS | UNSIGNED_EXEMPT))
        if problem:
            return problem
    text = control_text(dict(record))
    if text is not None:
        return f"holds {text}, a text with a control character"
    if any(k not in record for k in ("sent", "delivered", "received")):
        return None  # the constructor says which field is missing
    counts = {k: record.get(k, 0) for k in _ACCOUNT_INPUTS}
    counts[LAYERS] = [LayerCount(**row) for row in record.get(LAYERS) or ()]
    if counts["received"] > counts["sent"]:
        return f"received {counts['received']:,} is above sent {counts['sent']:,}"
    acc = accounting.account(**counts)
    for name in _ACCOUNT_DERIVED:
        if name not in record:
            continue
        want = getattr(acc, name)
        if isinstance(want, float):
            if not math.isclose(record[name], want, rel_tol=1e-9, abs_tol=1e-12):
                return f"{name} is {record[name]!r}, but the counts give {want!r}"
        elif record[name] != want:
            return f"{name} is {short(record[name])}, but the counts give {want:,}"
    return None


# The rows a record before issue 29 stands for, with the counters' words the account used then.
PROGRAM_SOCKET_COUNTER = ("{backend}'s own report of the kernel's drops (its 'dropped' count; for libpcap programs "
                          "ps_drop, PACKET_STATISTICS tp_drops)")
LIBPCAP_SOCKET_COUNTER = "libpcap's ps_drop (pcap_stats)"
PACKET_SOCKET_COUNTER = "PACKET_STATISTICS tp_drops"
# The layer of frames that arrived on receive queues no AF_XDP socket reads (afxdp's and dpdk's
# rows of the XDP program's not_redirected): passed to the stack, no ring of a socket dropped them.
AF_XDP_QUEUES = "AF_XDP queues"


def named_layers(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The capture program's rows of a record written before issue 29 (version 1 without rows),
    from its named fields:
    socket_drops (a program's own 'dropped', libpcap's ps_drop, else PACKET_STATISTICS tp_drops),
    xsk_drops split by the XDP_STATISTICS counters in raw (each cause a row when they add up,
    else one row) and the afxdp program's not_redirected. The one place that knows those shapes."""
    socket, xsk = int(record.get("socket_drops", 0)), int(record.get("xsk_drops", 0))
    raw = record.get("raw") if isinstance(record.get("raw"), dict) else {}
    cap = raw.get("cap") if isinstance(raw.get("cap"), dict) else {}
    kernel = cap.get("kernel") if isinstance(cap.get("kernel"), dict) else {}
    if record.get("app_command"):
        counter = PROGRAM_SOCKET_COUNTER.format(backend=record.get("backend", ""))
    else:
        counter = LIBPCAP_SOCKET_COUNTER if record.get("backend") == "pcap" else PACKET_SOCKET_COUNTER
    rows = [("socket", counter, socket)] if socket or not xsk else []
    if xsk:
        other_queues = int((cap.get("xdp") or {}).get("not_redirected", 0))
        rows += _xsk_rows(xsk - other_queues, kernel)
        if other_queues:
            bound = ", ".join(str(q) for q in cap.get("queues", [cap.get("queue", 0)]))
            rows.append((AF_XDP_QUEUES, f"on receive queues without a socket (bound: {bound}), passed to the "
                                          f"stack: the XDP program's not_redirected; --queue all binds every queue",
                         other_queues))
    return [{"layer": layer, "counter": counter, "packets": n} for layer, counter, n in rows]


def _xsk_rows(rings: int, kernel: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """The AF_XDP rings' drops of an older afxdp record, one row per XDP_STATISTICS cause.

    A frame that finds the fill ring empty counts in rx_dropped and in rx_fill_ring_empty_descs
    (the same frames); one that finds the RX ring full only in rx_ring_full. Without those
    counters, or when they do not add up to the ring drops, one row for all."""
    try:
        dropped, full = int(kernel["rx_dropped"]), int(kernel["rx_ring_full"])
        empty = int(kernel.get("rx_fill_ring_empty_descs", 0))
    except (KeyError, TypeError, ValueError):
        dropped = full = empty = -1
    if dropped < 0 or full < 0 or dropped + full != rings:
        return [("AF_XDP rings", "XDP_STATISTICS rx_dropped + rx_ring_full", rings)] if rings else []
    fill = min(max(empty, 0), dropped)
    rows = [("AF_XDP fill ring", f"XDP_STATISTICS rx_dropped: the fill ring was empty (rx_fill_ring_empty_descs "
                                 f"{empty:,})", fill),
            ("AF_XDP rx_dropped", "XDP_STATISTICS rx_dropped, not an empty fill ring", dropped - fill),
            ("AF_XDP RX ring", "XDP_STATISTICS rx_ring_full: the RX ring was full", full)]
    return [row for row in rows if row[2]]


def load_trial(record: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> TrialResult:
    """The trial a record of any version holds, in today's shape: the one reader of trials.jsonl
    lines. A field the record lacks takes `defaults`' value when given there (what the run says:
    the method of run.json's settings), else TrialResult's default. One RecordError otherwise:
    "schema" (a version this capbench does not read), "invalid" (record_problem), "corrupt" (a
    field every version has is missing)."""
    record = upgrade(dict(record), current=TRIAL_SCHEMA, steps=_UPGRADES, what="trial")
    problem = record_problem(record)
    if problem:
        raise RecordError("invalid", problem)
    return from_json(TrialResult, {**(defaults or {}), **record}, "trial record")


# The engines of the records written before they declared their refusals (gen_refusals).
_REFUSALS_BEFORE = {"xdp": "lost", "afpacket": "retried"}


def gen_refusals_of(r: TrialResult) -> str:
    """What became of the frames r's generator interface had no room for: "retried" or "lost"."""
    return r.gen_refusals or _REFUSALS_BEFORE.get(r.gen_engine, "")
