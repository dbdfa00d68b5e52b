"""The per-layer loss account of a trial, in words: where each lost packet was dropped,
which counter says so, and where the counters disagree.

Layers, from the wire up (each with the counter it comes from):

    generator    frames that left late (capbench-gen's schedule; late, not lost)
    interface    sent − delivered (the XDP program on the capture veth counts
                 what arrived), and the veth's own rx_dropped when it has some
    backlog      softnet_stat's drops on the receive CPU (the RPS queue)
    socket       PACKET_STATISTICS tp_drops (freeze_q counted apart)
    AF_XDP       XDP_STATISTICS (RX ring full, fill ring empty), and frames on
                 receive queues no AF_XDP socket is bound to (the program's
                 not_redirected count)
    application  frames that the socket took but the counter never read
                 (kernel packets − kernel drops − frames read), normally 0

Two checks that users keep filing bugs about: libpcap's own drop counter
(ps_drop) sees only the socket layer, never the backlog before it; and a
kernel count that disagrees with the sequence numbers the counter saw.
"""

from __future__ import annotations

from typing import Any

from capbench.trial import TrialResult


def layers(r: TrialResult) -> list[tuple[str, int, str]]:
    """(layer, packets, counter) for every layer that lost packets, in order from the wire up."""
    out: list[tuple[str, int, str]] = []
    cap: dict[str, Any] = r.raw.get("cap", {}) if isinstance(r.raw, dict) else {}
    kernel = cap.get("kernel", {}) if isinstance(cap, dict) else {}
    if r.link_drops:
        counter = ("capbench-xdpcount on the capture veth" if "xdpcount" in r.raw
                   else f"{r.backend}'s XDP program")
        out.append(("interface", r.link_drops, f"sent − delivered ({counter})"))
    if r.backlog_drops:
        cpu = "" if r.kernel_rx_cpu is None else f", CPU {r.kernel_rx_cpu}"
        out.append(("backlog", r.backlog_drops, f"/proc/net/softnet_stat drops{cpu}"))
    if r.socket_drops:
        freeze = kernel.get("freeze_q")
        extra = f", {freeze:,} while the queue was frozen" if freeze else ""
        out.append(("socket", r.socket_drops, f"PACKET_STATISTICS tp_drops{extra}"))
    if r.xsk_drops:
        # The afxdp backend's kernel drops are its sockets' ring drops plus the frames its
        # XDP program found on a receive queue no socket is bound to (those go on to the stack).
        other_queues = int((cap.get("xdp") or {}).get("not_redirected", 0)) if isinstance(cap, dict) else 0
        rings = r.xsk_drops - other_queues
        if rings:
            out.append(("AF_XDP rings", rings, "XDP_STATISTICS rx_dropped + rx_ring_full"))
        if other_queues:
            bound = ", ".join(str(q) for q in cap.get("queues", [cap.get("queue", 0)]))
            out.append(("AF_XDP queues", other_queues,
                        f"on receive queues without a socket (bound: {bound}), passed to the stack: "
                        f"the XDP program's not_redirected; --queue all binds every queue"))
    app = application_drops(r)
    if app:
        out.append(("application", app, "taken by the socket, never read by the counter"))
    return out


def application_drops(r: TrialResult) -> int:
    """Frames the socket queued that the counter did not read: kernel packets − drops − frames read.
    0 where the backend's kernel count does not cover that (libpcap, AF_XDP, the ceiling)."""
    cap = r.raw.get("cap", {}) if isinstance(r.raw, dict) else {}
    kernel = cap.get("kernel", {}) if isinstance(cap, dict) else {}
    if r.backend not in ("raw", "afp-v2", "afp-v3", "fanout") or "packets" not in kernel or "packets" not in cap:
        return 0
    return max(0, int(kernel["packets"]) - int(kernel.get("drops", 0)) - int(cap["packets"]))


def remarks(r: TrialResult) -> list[str]:
    """What a reader of the account should know about this trial's counters."""
    out = []
    if r.gen_late:
        out.append(f"generator: {r.gen_late:,} frames left more than one gap late "
                   f"(largest lag {r.gen_max_lag_ns / 1e3:,.0f} us); late, not lost")
    if r.backend == "pcap" and r.backlog_drops:
        out.append(f"libpcap's ps_drop counted {r.socket_drops:,} of the {r.lost:,} lost: it cannot see the "
                   f"{r.backlog_drops:,} dropped before the socket")
    seq_gaps = r.seq_lost
    if r.lost and seq_gaps > r.lost:
        out.append(f"the sequence numbers show {seq_gaps:,} missing, more than the {r.lost:,} lost by the counts")
    if r.unexplained > 0:
        out.append(f"{r.unexplained:,} lost packets no counter explains")
    elif r.unexplained < 0:
        out.append(f"the kernel counters claim {-r.unexplained:,} more drops than packets were lost "
                   f"(other traffic on the same CPU, or a counter that wrapped)")
    return out


def explain(r: TrialResult) -> str:
    """One line: lost = layer + layer + ... (counter), remarks."""
    if not r.lost and not r.unexplained:
        return ""
    parts = [f"{name} {n:,} ({src})" for name, n, src in layers(r)]
    line = f"lost {r.lost:,} = " + (" + ".join(parts) if parts else "nothing a counter saw")
    rem = remarks(r)
    return line + ("; " + "; ".join(rem) if rem else "")
