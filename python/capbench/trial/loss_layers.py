"""The per-layer loss account of a trial, in words: where each lost packet was dropped,
which counter says so, and where the counters disagree.

Layers, from the wire up (each with the counter it comes from):

    generator    frames that left late (capbench-gen's schedule; late, not lost)
    rx ring      sent − delivered (the XDP program on the capture veth counts
                 what arrived), the part the capture veth's 256-frame receive ring
                 had no room for: the sender's tx_queue_N_xdp_xmit_errors (ethtool -S),
                 the NIC ring's overflow ...
                 ... in the cpumap model (rxmode) the ring of --rx-ring frames:
                 its xdp:xdp_cpumap_enqueue drops (capbench-xdpcount's
                 tracepoint program; "delivered" is counted after it) ...
    veth ring    ... and there the veth's own 256-frame ring, drained on the
                 generator's CPU: the sender's xdp_xmit_errors ...
    interface    ... (records without that counter: the part the capture
                 interface's rx_dropped counted) ...
    link         ... and the part no interface counter saw (accounting.interface_share)
    backlog      the RPS queue's drops: the capture interface's own rx_dropped less
                 the ring's (the kernel charges a refused frame to its device);
                 softnet_stat, per CPU for the whole host, only where that was not read
    the capture  the rows the capture program declares (record.LayerCount: capbench-cap's
    program's    backend in its C file, an adapter in apps.toml), each with its counter, as
    own layers   they are: PACKET_STATISTICS tp_drops at the socket (freeze_q counted
                 apart), libpcap's ps_drop, XDP_STATISTICS' causes in the AF_XDP rings,
                 frames on receive queues no AF_XDP socket is bound to, or a layer only a
                 new backend has. No backend is named here; its cross-check rows (pcap's
                 NIC) are layers capbench counts itself, so they are no layer here.
    application  frames that the socket took but the counter never read
                 (kernel packets − kernel drops − frames read; the record's app_drops)

The packets of the layers add up to `lost − unexplained`: no frame in two layers.

Checks that users keep filing bugs about: libpcap's own drop counter (ps_drop)
sees only the socket layer, never the backlog before it; the kernel's drop
counters that disagree with the sequence numbers the counter saw; and the
interfaces' own drop counters that disagree with the link layer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from capbench.trial import accounting
from capbench.testbed import rxmode
from capbench.trial.measure import TrialResult
from capbench.trial.record import (AF_XDP_QUEUES, LIBPCAP_SOCKET_COUNTER, PACKET_SOCKET_COUNTER, LayerCount,
                                   gen_refusals_of)

# The layers' names, one each wherever a layer is named: this account, the tables' headers, the
# figures' legends, compare. The receive ring is "rx ring" everywhere; "link" is only the part of
# sent − delivered that no counter holds.
RX_RING = "rx ring"
NIC = "NIC"  # a real NIC's own drops (nic_layers): its receive ring or FIFO had no room
VETH_RING = "veth ring"  # the cpumap model: the veth's own ring before the rx ring, drained on the generator's CPU
LINK = "link"
BACKLOG = "backlog"
SOCKET = "socket"
AF_XDP_RINGS = "AF_XDP rings"
OTHER_OWN = "the capture's other layers"  # the figures' bar for layers only one backend or adapter declares
AF_XDP = "AF_XDP"  # the family of the AF_XDP layers ("AF_XDP RX ring", ...), counted together in the tables
APPLICATION = "application"
UNEXPLAINED = "unexplained"


def _cap(r: TrialResult) -> dict[str, Any]:
    cap = r.raw.get("cap", {}) if isinstance(r.raw, dict) else {}
    return cap if isinstance(cap, dict) else {}


def _kernel(r: TrialResult) -> dict[str, Any]:
    kernel = _cap(r).get("kernel", {})
    return kernel if isinstance(kernel, dict) else {}


def _iface(r: TrialResult, program: str, fallback: str) -> str:
    summary = r.raw.get(program, {}) if isinstance(r.raw, dict) else {}
    name = summary.get("iface") if isinstance(summary, dict) else None
    return str(name) if name else fallback


def cap_iface(r: TrialResult) -> str:
    return _iface(r, "cap", "the capture interface")


def gen_iface(r: TrialResult) -> str:
    return _iface(r, "gen", "the generator's interface")


def xsk_ring_drops(r: TrialResult) -> int:
    """The frames AF_XDP sockets' rings dropped (XDP_STATISTICS rx_dropped + rx_ring_full): the
    program's rows of the AF_XDP family but the queues no socket reads. A failed redirect into such
    a ring counts in the capture interface's rx_dropped too (interface_share)."""
    return sum(row.packets for row in own_rows(r) if family(row.layer) == AF_XDP and row.layer != AF_XDP_QUEUES)


def ring_drops(r: TrialResult) -> int:
    """The part of the link layer (sent − delivered) the rings' own counters hold: the sender's
    xdp_xmit_errors (the veth's ring) and in the cpumap model the cpumap ring's tracepoint count,
    at most the link layer; 0 in records without those counters."""
    return max(0, min(r.link_drops, (r.ring_drops or 0) + (r.rx_ring_drops or 0)))


def cpumap_ring_layers(r: TrialResult, base: str) -> list[tuple[str, int, str]]:
    """The link layer of the cpumap model: the ring of --rx-ring frames, the veth's own ring before
    it (drained on the generator's CPU) and what neither counted."""
    ring = max(0, min(r.link_drops, r.rx_ring_drops or 0))
    veth = max(0, min(r.link_drops - ring, r.ring_drops or 0))
    where = "" if r.kernel_rx_cpu is None else f" of CPU {r.kernel_rx_cpu}"
    parts = [
        (RX_RING, ring, f"{base}: no room in the {r.rx_ring or 0:,}-frame receive ring (the cpumap queue{where}: "
                          f"xdp:xdp_cpumap_enqueue drops)"),
        (VETH_RING, veth, f"{base}: {gen_iface(r)} tx_queue_N_xdp_xmit_errors (ethtool -S), no room in "
                            f"{cap_iface(r)}'s {rxmode.VETH_RING_FRAMES}-frame veth ring, drained on the generator's "
                            f"CPU"),
        (LINK, r.link_drops - ring - veth, f"{base}, in no ring counter"),
    ]
    return [p for p in parts if p[1]]


def link_only_drops(r: TrialResult) -> int:
    """The part of sent − delivered that is not the receive ring's (ring_drops): the "link" layer."""
    return r.link_drops - ring_drops(r)


def interface_share(r: TrialResult) -> accounting.InterfaceShare | None:
    """How the capture interface's rx_dropped splits the link layer; None where it was not read."""
    if r.iface_rx_dropped is None:
        return None
    return accounting.interface_share(link_drops=r.link_drops, iface_rx_dropped=r.iface_rx_dropped,
                                      backlog_drops=r.backlog_drops, xsk_ring_drops=xsk_ring_drops(r))


def layers(r: TrialResult) -> list[tuple[str, int, str]]:
    """(layer, packets, counter) for every layer that lost packets, in order from the wire up.
    Their packets add up to lost − unexplained."""
    out: list[tuple[str, int, str]] = []
    kernel = _kernel(r)
    if r.link_drops:
        out += _link_layers(r)
    if r.backlog_drops:
        if r.iface_rx_dropped is None:
            cpu = "" if r.kernel_rx_cpu is None else f", CPU {r.kernel_rx_cpu}"
            out.append(("backlog", r.backlog_drops, f"/proc/net/softnet_stat drops{cpu} (host-wide: "
                                                    f"{cap_iface(r)} rx_dropped was not read)"))
        else:
            out.append(("backlog", r.backlog_drops, f"{cap_iface(r)} rx_dropped {r.iface_rx_dropped:,} − rx ring "
                                                    f"{r.ring_drops or 0:,}: the RPS backlog queue was full"))
    out += [(row.layer, row.packets, _counter_text(row, kernel)) for row in own_rows(r) if row.packets]
    if r.app_drops and r.app_command:
        out.append(("application", r.app_drops,
                    f"{r.backend} says it captured {r.app_counts.get('captured', 0):,}, its capture file holds "
                    f"{r.file_frames or 0:,}"))
    elif r.app_drops:
        out.append(("application", r.app_drops,
                    "taken by the socket, never read by the counter (kernel packets − kernel drops − frames read)"))
    return out


def own_rows(r: TrialResult) -> list[LayerCount]:
    """The capture program's own layers (its declared rows, record.layers), cross-checks left out:
    their packets are its drops in the account (accounting.layer_drops)."""
    return [row for row in r.layers if not row.cross_check]


def _counter_text(row: LayerCount, kernel: dict[str, Any]) -> str:
    """A row's counter as the account says it: with PACKET_STATISTICS, how often the ring froze."""
    # tp_freeze_q_cnt counts how often the ring froze (every block was owned by user space,
    # af_packet.c prb_freeze_queue), not the packets dropped while it was.
    freeze = kernel.get("freeze_q") if row.counter == PACKET_SOCKET_COUNTER else None
    return row.counter + (f"; the ring froze {freeze:,} time{'s' if freeze != 1 else ''} (tp_freeze_q_cnt)"
                          if freeze else "")


def family(layer: str) -> str:
    """The group a layer is counted in where the tables and remarks give one figure for several:
    the AF_XDP rings' causes are "AF_XDP"; any other layer is its own."""
    return AF_XDP if layer.startswith(AF_XDP + " ") else layer


def own_families(r: TrialResult) -> dict[str, int]:
    """The capture program's own drops by family, in the order its rows are declared; families
    that lost nothing left out."""
    out: dict[str, int] = {}
    for row in own_rows(r):
        if row.packets:
            out[family(row.layer)] = out.get(family(row.layer), 0) + row.packets
    return out


def own_drops(r: TrialResult, family_name: str) -> int:
    """The capture program's drops in one family of its layers (SOCKET, AF_XDP)."""
    return own_families(r).get(family_name, 0)


def other_own_drops(r: TrialResult) -> int:
    """The capture program's drops in layers of neither the socket nor the AF_XDP rings: a layer
    only its backend or adapter declares."""
    return sum(n for name, n in own_families(r).items() if name not in (SOCKET, AF_XDP))


def saw_nothing(r: TrialResult) -> bool:
    """A capture program that captured none of the frames the interface delivered, by its own count
    and its file (a filter that excludes capbench's stream, say): not a loss of any layer."""
    counts = r.app_counts
    return (bool(r.app_command) and not r.failure and r.delivered > 0 and r.received == 0
            and counts.get("captured") == 0 and counts.get("seen", 0) == 0)


def counter_filter(r: TrialResult) -> str | None:
    """The capture filter capbench's counter ran with (its summary's `filter`: --backend-args
    'B=--filter EXPR'), None without one."""
    cap = r.raw.get("cap") if isinstance(r.raw, dict) else None
    found = cap.get("filter") if isinstance(cap, dict) else None
    return str(found) if found is not None else None


def filter_remarks(r: TrialResult) -> list[str]:
    """capbench's counter whose filter matched none of the stream: the kernel queued none of it to the
    socket (the filter runs before), so its loss is the filter's, not a layer's."""
    expr = counter_filter(r)
    if expr is None or r.app_command or r.failure or r.delivered <= 0 or r.received:
        return []
    queued = ((r.raw.get("cap") or {}).get("kernel") or {}).get("packets")
    return [f"capbench-cap's filter '{expr}' matched none of the {r.delivered:,} frames delivered to its interface"
            + (f" (the kernel queued {queued:,} frames to its socket)" if isinstance(queued, int) else "")
            + ": the filter excludes the stream; its loss is that, not a layer's"]


def program_remarks(r: TrialResult) -> list[str]:
    """A capture program's trial has two witnesses: the program's own counts and capbench's (the
    kernel's counters, and the frames in the program's capture file by their sequence numbers).
    Where they disagree, and what the program's figures leave out."""
    if not r.app_command:
        return []
    out = [f"FAILED: {r.failure}"] if r.failure else []
    counts = r.app_counts
    if saw_nothing(r):
        own = ", ".join(f"{k} {counts[k]:,}" for k in ("seen", "captured") if k in counts)
        out.append(f"{r.backend} saw none of the {r.delivered:,} frames delivered to its interface (its own count: "
                   f"{own}): its capture filter or settings exclude the stream; its loss is that, not a layer's")
    for program in r.raw.get("programs", ()):
        for name, w in program.get("wrapped", {}).items():
            out.append(f"{program['name']}'s {w['bits']}-bit '{name}' counter wrapped {w['times']} time"
                       f"{'s' if w['times'] > 1 else ''}: it printed {w['printed']:,}, capbench counts "
                       f"{program['counts'][name]:,} (against its file and the delivered frames)")
    if r.file_frames is None:
        out.append(f"received is {r.backend}'s own count: it wrote no capture file capbench could decode")
    elif "captured" in counts and counts["captured"] < r.file_frames:
        out.append(f"{r.backend} says it captured {counts['captured']:,}, fewer than the {r.file_frames:,} frames "
                   f"its capture file holds")
    if "dropped" in counts:
        # Frames that passed the interface and the backlog but are not in the file: the socket's
        # and the program's share, as the kernel's side sees them.
        missing = r.delivered - r.backlog_drops - r.received
        if r.file_frames is not None and counts["dropped"] != missing - r.app_drops:
            diff = missing - r.app_drops - counts["dropped"]
            out.append(f"{r.backend} reports {counts['dropped']:,} dropped; delivered − backlog − its file leave "
                       f"{missing - r.app_drops:,} missing after the stack: it reports {abs(diff):,} "
                       f"{'fewer' if diff > 0 else 'more'} than the kernel's side shows")
    else:
        out.append(f"{r.backend} reports no drop count: the socket layer's losses are in 'no counter explains'")
    if "seen" in counts and "captured" in counts and "dropped" in counts:
        rest = counts["seen"] - counts["captured"] - counts["dropped"]
        if rest:
            out.append(f"{r.backend}'s 'seen' {counts['seen']:,} − captured − dropped = {rest:,} "
                       f"({'frames still unread at the stop' if rest > 0 else 'it counts drops apart'})")
    return out


# A real NIC's own drops before the stack (rtnl_link_stats64, kernel Documentation/networking/
# statistics.rst): no room in the host's receive buffers (missed), the receiver's FIFO (fifo, over).
NIC_DROP_COUNTERS = ("link.rx_missed_errors", "link.rx_fifo_errors", "link.rx_over_errors")


def nic_layers(r: TrialResult) -> list[tuple[str, int, str]]:
    """A run on ports: the capture NIC's own drop counters, each at most what the link layer has
    left (a NIC may count one event in two of them)."""
    out, left = [], r.link_drops
    for name in NIC_DROP_COUNTERS:
        n = min(left, int(r.nic_counters.get(name, 0)))
        if n > 0:
            out.append((NIC, n, f"{cap_iface(r)} {name.removeprefix('link.')} (ip -s -s link): the NIC had no "
                                  f"room for them"))
            left -= n
    return out


def tap_layers(r: TrialResult) -> list[tuple[str, int, str]]:
    """A sensor behind the tap: its link layer (sent − delivered) split at the tap. Before it, the
    tap's own 256-frame ring (the generator veth's xdp_xmit_errors, lost for every sensor alike) and
    what no counter saw; after it, this sensor's ring (the tap's veth to it: xdp_xmit_errors) and
    what the tap saw but never put into that ring (a failed clone or a skipped target)."""
    tap_ring = max(0, min(r.link_drops, r.tap_ring_drops or 0))
    before = max(0, r.sent - r.tap_seen - tap_ring)
    ring = max(0, min(r.tap_seen - r.delivered, r.ring_drops or 0))
    cpumap = max(0, min(r.tap_seen - r.delivered - ring, r.rx_ring_drops or 0))  # the cpumap model's
    clone = max(0, r.tap_seen - r.delivered - ring - cpumap)
    rest = r.link_drops - tap_ring - before - ring - cpumap - clone
    parts = [
        ("tap ring", tap_ring, f"{gen_iface(r)}'s peer, the tap's input: no room in its "
                               f"{rxmode.VETH_RING_FRAMES}-frame ring (the sender's tx_queue_N_xdp_xmit_errors); "
                               f"lost for every sensor"),
        ("link", before + rest, "sent − seen by the tap − the tap's ring: in no counter"),
        ("sensor ring", ring, f"the tap's veth to sensor {r.sensor}: tx_queue_N_xdp_xmit_errors (ethtool -S), no room "
                              f"in {cap_iface(r)}'s ring"),
        ("rx ring", cpumap, f"sensor {r.sensor}'s {r.rx_ring or 0:,}-frame receive ring (the cpumap queue: "
                            f"xdp:xdp_cpumap_enqueue drops)"),
        ("tap clone", clone, f"seen by the tap ({r.tap_seen:,}) but not delivered to sensor {r.sensor} nor counted by "
                             f"its ring: the clone failed or the target was skipped"),
    ]
    return [p for p in parts if p[1]]


def _link_layers(r: TrialResult) -> list[tuple[str, int, str]]:
    """The link layer (sent − delivered): a real NIC's own drop counters, the receive ring's
    overflow by the sender's own counter, and the rest, which no counter saw; records without the
    ring counter are split by the capture interface's rx_dropped."""
    if r.tap_seen is not None:
        return tap_layers(r)
    nic = nic_layers(r)
    if nic:
        left = r.link_drops - sum(n for _, n, _ in nic)
        rest = _link_layers(dataclasses.replace(r, link_drops=left, nic_counters={})) if left else []
        return nic + rest
    counter = ("capbench-xdpcount on the capture veth" if "xdpcount" in r.raw
               else f"{r.backend}'s XDP program")
    base = f"sent − delivered ({counter})"
    if r.rx_ring_drops is not None:
        return cpumap_ring_layers(r, base)
    if r.ring_drops is not None:
        ring = ring_drops(r)
        out = []
        if ring:
            out.append(("rx ring", ring, f"{base}: {gen_iface(r)} tx_queue_N_xdp_xmit_errors (ethtool -S), no room "
                                         f"in {cap_iface(r)}'s {rxmode.VETH_RING_FRAMES}-frame receive ring"))
        if r.link_drops - ring:
            out.append(("link", r.link_drops - ring, f"{base}, in no interface counter (the ring's overflow "
                                                     f"counted {r.ring_drops:,})"))
        return out
    share = interface_share(r)
    if share is None:  # not read: a record of an older capbench, or a counter that could not be read
        return [("interface", r.link_drops, base)]
    out = []
    if share.counted:
        text = f"{base}: {cap_iface(r)} rx_dropped, no room in its receive ring before the XDP count"
        if gen_refusals_of(r) == "lost" and r.gen_tx_dropped:
            text += f" (the sender's {gen_iface(r)} tx_dropped: {r.gen_tx_dropped:,})"
        out.append(("interface", share.counted, text))
    if share.uncounted:
        out.append(("link", share.uncounted, f"{base}, in no interface counter ({cap_iface(r)} rx_dropped "
                                             f"{r.iface_rx_dropped:,} during the trial)"))
    return out


def kernel_drops(r: TrialResult) -> tuple[int, list[str]]:
    """The kernel's drop counters of this trial (rx ring + backlog + socket + AF_XDP): their sum,
    and the names of those that counted. The ring's is the part of the link layer the sender's
    xdp_xmit_errors counted (records without it: none)."""
    parts = [(name, n) for name, n in (("rx ring", ring_drops(r)), ("backlog", r.backlog_drops)) if n]
    parts += list(own_families(r).items())
    return sum(n for _, n in parts), [f"{name} {n:,}" for name, n in parts]


# The counters a capture program's users read as its whole loss, though they see only its own
# layer, never the backlog before it (libpcap's ps_drop), by the rows' counters that name them.
OWN_VIEW = {LIBPCAP_SOCKET_COUNTER: "libpcap's ps_drop", "pcap_stats ps_drop": "libpcap's ps_drop"}


def remarks(r: TrialResult) -> list[str]:
    """What a reader of the account should know about this trial's counters (one line each)."""
    out = []
    if r.gen_late:
        out.append(f"generator: {r.gen_late:,} frames left more than one gap late "
                   f"(largest lag {r.gen_max_lag_ns / 1e3:,.0f} us); late, not lost")
    if r.backlog_drops:
        out += [f"{OWN_VIEW[row.counter]} counted {row.packets:,} of the {r.lost:,} lost: it cannot see the "
                f"{r.backlog_drops:,} dropped before the socket" for row in own_rows(r) if row.counter in OWN_VIEW]
    seq_gaps = r.seq_lost  # None: the counter read no sequence numbers (a kernel counter, app load none)
    if seq_gaps is not None and r.lost and seq_gaps > r.lost:
        out.append(f"the sequence numbers show {seq_gaps:,} missing, more than the {r.lost:,} lost by the counts")
    kernel, parts = kernel_drops(r)
    if seq_gaps is not None and kernel != seq_gaps:
        counted = f"the kernel's drop counters count {kernel:,}" + (f" ({' + '.join(parts)})" if parts else "")
        diff = seq_gaps - kernel
        line = (f"{counted}, the sequence numbers show {seq_gaps:,} missing: "
                f"{abs(diff):,} {'more' if diff > 0 else 'fewer'} than the kernel counted")
        notes = []
        uncounted = r.link_drops - ring_drops(r)
        if uncounted:
            notes.append(f"the link layer lost {uncounted:,} before those counters could see them")
        if r.lost > seq_gaps:  # missing above the highest sequence number received: no gap shows them
            notes.append(f"{r.lost - seq_gaps:,} lost after the last frame received leave no gap")
        out.append(line + (f" ({', '.join(notes)})" if notes else ""))
    # A cross-check row (pcap's ps_ifdrop: the NIC's drops) counts a layer capbench reads itself.
    out += [f"{row.counter} counted {row.packets:,} in the {row.layer} layer, which capbench counts from its own "
            f"counter (the account's {row.layer} line, if any): a cross-check, not added"
            for row in r.layers if row.cross_check and row.packets]
    if r.app_load == "none" and r.lost:
        out.append("app load none: the counter read no stamps, so `received` counts every frame, "
                   "foreign ones too, and no sequence check ran")
    out += _softnet_remarks(r)
    if r.schedule_slipped:
        gen = r.raw.get("gen") if isinstance(r.raw, dict) else None
        catch_up = (gen or {}).get("catch_up", rxmode.VETH_RING_FRAMES)
        out.append(f"generator: fell up to {r.gen_max_lag_ns / 1e6:,.1f} ms behind, owing about "
                   f"{r.catchup_burst_frames:,} frames; it sends at most {catch_up:,} of them faster than the link "
                   f"(--catch-up), the rest at the link's wire rate")
    out += _interface_remarks(r)
    out += polling_remarks(r)
    out += program_remarks(r)
    out += filter_remarks(r)
    if r.unexplained > 0:
        out.append(f"{r.unexplained:,} lost packets no counter explains")
    elif r.unexplained < 0:
        out.append(f"the kernel counters claim {-r.unexplained:,} more drops than packets were lost "
                   f"(other traffic on the same CPU, or a counter that wrapped)")
    return out


def polling_remarks(r: TrialResult) -> list[str]:
    """A counter that polls (record.polls) on the CPU of the kernel thread that drains the receive
    ring (its NAPI thread, or the cpumap ring's): the poller never yields, so that thread runs only
    when the scheduler takes the CPU from it, and the ring overflows. Said where the rx ring lost
    frames, from its counter, with the fix (campaign/plan.placement gives a poller a CPU of its own
    where there is one)."""
    if not r.polls or r.cap_cpu is None or r.cap_cpu != r.kernel_rx_cpu:
        return []
    ring = [(n, counter) for name, n, counter in layers(r) if name == RX_RING]
    if not ring:
        return []
    n, counter = ring[0]
    return [f"{r.backend} polls on CPU {r.cap_cpu}, where the kernel thread that drains the receive ring runs only when "
            f"the scheduler takes the CPU from the poller: the rx ring lost {n:,} by its counter, {counter}; give the "
            f"counter a CPU apart with --pin A:B or --cap-cpu"]


def _softnet_remarks(r: TrialResult) -> list[str]:
    """softnet_stat's backlog drops, a host-wide cross-check: what they say beyond this trial's own
    device counter is other traffic on the receive CPU (another test bed, another device)."""
    if r.iface_rx_dropped is None:  # the backlog layer is softnet_stat's (an older record, or not read)
        if r.other_testbeds and (r.backlog_drops or r.unexplained):
            return [f"other capbench test beds were in use during this trial ({', '.join(r.other_testbeds)}): "
                    f"softnet_stat counts backlog drops per CPU for the whole host, theirs included"]
        return []
    if r.host_softnet_drops is None or r.host_softnet_drops == r.backlog_drops:
        return []
    cpu = "" if r.kernel_rx_cpu is None else f" on CPU {r.kernel_rx_cpu}"
    beds = f"; other capbench test beds in use: {', '.join(r.other_testbeds)}" if r.other_testbeds else ""
    if r.host_softnet_drops > r.backlog_drops:
        return [f"softnet_stat counted {r.host_softnet_drops:,} backlog drops{cpu} (whole host), this trial's "
                f"{cap_iface(r)} {r.backlog_drops:,}: {r.host_softnet_drops - r.backlog_drops:,} were other "
                f"traffic's, not charged here{beds}"]
    return [f"softnet_stat counted {r.host_softnet_drops:,} backlog drops{cpu}, fewer than the {r.backlog_drops:,} "
            f"that {cap_iface(r)}'s rx_dropped leaves for the backlog (rx_dropped counts other drops too)"]


def _interface_remarks(r: TrialResult) -> list[str]:
    """Where the interfaces' own drop counters disagree with the layers."""
    out = []
    share = interface_share(r)
    if share is not None and share.beyond > 0:
        out.append(f"{cap_iface(r)} rx_dropped counted {r.iface_rx_dropped:,}: {share.beyond:,} more than the "
                   f"link, backlog and AF_XDP layers hold (dropped after the XDP count, or other traffic)")
    elif share is not None and share.beyond < 0:
        later = r.backlog_drops + xsk_ring_drops(r)
        out.append(f"{cap_iface(r)} rx_dropped counted {r.iface_rx_dropped:,}, fewer than the {later:,} backlog "
                   f"and AF_XDP drops it also counts on a veth (softnet_stat counts all traffic of its CPU)")
    if r.gen_tx_dropped and gen_refusals_of(r) == "retried":
        out.append(f"{gen_iface(r)} refused {r.gen_tx_dropped:,} frames (tx_dropped); capbench-gen's "
                   f"{r.gen_engine} engine sent them again: not lost")
    elif r.gen_tx_dropped and gen_refusals_of(r) == "lost" and r.gen_tx_dropped != r.link_drops:
        out.append(f"the sender's {gen_iface(r)} tx_dropped counted {r.gen_tx_dropped:,}, the link layer "
                   f"lost {r.link_drops:,}")
    if r.gen_refused:
        out.append(f"capbench-gen's {r.gen_engine} engine could not hand {r.gen_refused:,} frames due to "
                   f"{gen_iface(r)} (refused: not sent, so not lost; the generator fell short by them)")
    return out


def explain(r: TrialResult) -> str:
    """One line: lost = layer + layer + ... (counter), remarks."""
    if not r.lost and not r.unexplained:
        return ""
    parts = [f"{name} {n:,} ({src})" for name, n, src in layers(r)]
    line = f"lost {r.lost:,} = " + (" + ".join(parts) if parts else "nothing a counter saw")
    rem = remarks(r)
    return line + ("; " + "; ".join(rem) if rem else "")
