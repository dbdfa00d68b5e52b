"""Where the packets went: the loss accounting of one trial (pure arithmetic).

    sent (generator) ─► delivered (an XDP program on the capture veth: the
        pass-and-count program, or the backend's own) ─► past the backlog
        queue (softnet_stat drops) ─► past the socket (PACKET_STATISTICS
        drops) or the AF_XDP rings (XDP_STATISTICS drops) ─► read by the
        counter (frames the socket queued that it never read: app_drops)
        ─► received (counted once by the counter)

link_drops   = sent − delivered          (lost between the generator and the capture interface)
lost         = sent − received
unexplained  = lost − link_drops − backlog_drops − socket_drops − xsk_drops − app_drops

A backend has either socket drops (AF_PACKET, libpcap) or xsk drops (AF_XDP:
RX ring full, fill ring empty), never both; the other is 0. app_drops is the
socket's own count of what it queued minus what the counter read (kernel
packets − kernel drops − frames read); 0 where the backend's kernel count does
not say that (libpcap, AF_XDP, the XDP ceiling).

`unexplained` is normally 0. It is kept signed: a negative value means the
counters disagree (e.g. drops of other traffic counted in softnet_stat), and
hiding that would hide a measurement problem.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class LossAccount:
    sent: int
    delivered: int
    backlog_drops: int
    socket_drops: int
    received: int
    link_drops: int
    xsk_drops: int
    app_drops: int
    lost: int
    unexplained: int
    loss_pct: float  # exact, never rounded: 1 packet in 10 million is 1e-05 %


def account(*, sent: int, delivered: int, backlog_drops: int, socket_drops: int, received: int,
            xsk_drops: int = 0, app_drops: int = 0) -> LossAccount:
    """Split `sent − received` into the stages' drops; see the module doc."""
    link_drops = sent - delivered
    lost = sent - received
    unexplained = lost - link_drops - backlog_drops - socket_drops - xsk_drops - app_drops
    return LossAccount(
        sent=sent,
        delivered=delivered,
        backlog_drops=backlog_drops,
        socket_drops=socket_drops,
        received=received,
        link_drops=link_drops,
        xsk_drops=xsk_drops,
        app_drops=app_drops,
        lost=lost,
        unexplained=unexplained,
        loss_pct=loss_pct(lost, sent),
    )


def loss_pct(lost: int, sent: int) -> float:
    """100 · lost / sent; 0.0 when nothing was sent."""
    return 100.0 * lost / sent if sent else 0.0


def format_pct(pct: float, *, exact_zero: bool) -> str:
    """A percentage with enough digits that a small loss never reads as 0.

    `exact_zero` (no packet lost) prints "0"; otherwise at least two significant
    digits: 0.0021, 0.000013, 0.31, 12.35.
    """
    if exact_zero:
        return "0"
    mag = abs(pct)
    if mag == 0 or math.isnan(mag):
        return f"{pct:g}"
    if mag >= 1:
        return f"{pct:.2f}"
    decimals = max(2, -math.floor(math.log10(mag)) + 1)
    return f"{pct:.{decimals}f}"


@dataclass(frozen=True)
class InterfaceShare:
    """What the capture interface's own drop counter (rx_dropped) says about the link layer."""

    counted: int  # of the link layer (sent − delivered): frames rx_dropped counted
    uncounted: int  # of the link layer: frames no interface counter counted
    beyond: int  # rx_dropped that neither the link nor a later layer holds (signed: < 0, it counted fewer)


def interface_share(*, link_drops: int, iface_rx_dropped: int, backlog_drops: int = 0,
                    xsk_ring_drops: int = 0) -> InterfaceShare:
    """Split the link layer by the capture interface's rx_dropped, counting no frame twice.

    rx_dropped holds more than the link's drops. Measured on a veth (Linux 6.18): a frame
    the receive ring had no room for (before the XDP program counts it "delivered": the
    link layer), a frame the backlog queue refused (enqueue_to_backlog charges the
    device: the backlog layer) and a frame an XDP redirect could not put into an AF_XDP
    ring (the AF_XDP layer) all count there. The later layers' drops are taken off first;
    what remains explains the link layer up to its size, and the rest of the link layer
    no interface counter saw.
    """
    before_xdp = iface_rx_dropped - backlog_drops - xsk_ring_drops
    counted = max(0, min(link_drops, before_xdp))
    return InterfaceShare(counted=counted, uncounted=link_drops - counted, beyond=before_xdp - counted)
