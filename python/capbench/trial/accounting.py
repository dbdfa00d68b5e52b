"""Where the packets went: the loss accounting of one trial (pure arithmetic).

    sent (generator) ─► delivered (an XDP program on the capture veth: the
        pass-and-count program, or the backend's own) ─► past the backlog
        queue (softnet_stat drops) ─► past the capture program's own layers
        (the rows it declares: a packet socket's PACKET_STATISTICS drops, the
        AF_XDP rings' XDP_STATISTICS, a DPDK port's imissed ...) ─► read by
        the counter (frames the socket queued that it never read: app_drops)
        ─► received (counted once by the counter)

link_drops   = sent − delivered          (lost between the generator and the capture interface)
lost         = sent − received
unexplained  = lost − link_drops − backlog_drops − (the layers' packets) − app_drops

The layers are the program's declared rows (LayerCount: capbench-cap's
backend in its C file, an adapter in apps.toml), whatever they are: a row
marked cross_check counts a layer before the program's hand-over that
capbench counts itself, and is not added. app_drops is the socket's own count
of what it queued minus what the counter read (kernel packets − kernel drops
− frames read); 0 where the backend's kernel count does not say that
(libpcap, AF_XDP, the XDP ceiling).

`unexplained` is normally 0. It is kept signed: a negative value means the
counters disagree (e.g. drops of other traffic counted in softnet_stat), and
hiding that would hide a measurement problem.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class LayerCount:
    """One row of the capture program's loss account, as the program declares it: capbench-cap's
    backend in its C file (its summary's `account`, docs/programs.md), a capture program's adapter in
    apps.toml (`account`). `cross_check`: a layer before the program's hand-over that capbench reads
    from its own counter too (pcap's NIC row): shown beside that layer, not added to the account."""

    layer: str  # where: "socket", "AF_XDP RX ring", ... (one name per layer everywhere)
    counter: str  # what counts it, as its source names it ("PACKET_STATISTICS tp_drops")
    packets: int
    cross_check: bool = False


def layer_drops(layers: Iterable[LayerCount]) -> int:
    """The packets the program's own layers lost: its rows but the cross-checks."""
    return sum(row.packets for row in layers if not row.cross_check)


@dataclass(frozen=True)
class LossAccount:
    sent: int
    delivered: int
    backlog_drops: int
    layers: tuple[LayerCount, ...]
    received: int
    link_drops: int
    app_drops: int
    lost: int
    unexplained: int
    loss_pct: float  # exact, never rounded: 1 packet in 10 million is 1e-05 %


def account(*, sent: int, delivered: int, backlog_drops: int, layers: Iterable[LayerCount], received: int,
            app_drops: int = 0) -> LossAccount:
    """Split `sent − received` into the stages' drops; see the module doc."""
    layers = tuple(layers)
    link_drops = sent - delivered
    lost = sent - received
    unexplained = lost - link_drops - backlog_drops - layer_drops(layers) - app_drops
    return LossAccount(
        sent=sent,
        delivered=delivered,
        backlog_drops=backlog_drops,
        layers=layers,
        received=received,
        link_drops=link_drops,
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
