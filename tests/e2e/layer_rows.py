"""A trial's own loss rows by layer, from a TrialResult or a trials.jsonl line (record version 2:
the capture program's rows, `layers`, hold what the named socket_drops/xsk_drops held before)."""

from __future__ import annotations

from typing import Any


def own_rows(layers: Any) -> list[tuple[str, int]]:
    """A trial's own loss rows (TrialResult.layers, or a record's `layers`), cross-checks left out."""
    rows = [(row["layer"], row["packets"], row.get("cross_check", False)) if isinstance(row, dict)
            else (row.layer, row.packets, row.cross_check) for row in layers or ()]
    return [(layer, packets) for layer, packets, cross_check in rows if not cross_check]


def socket_drops(layers: Any) -> int:
    """The drops of the capture program's socket row(s): a packet socket's ring, libpcap's ps_drop."""
    return sum(n for layer, n in own_rows(layers) if layer == "socket")


def xsk_drops(layers: Any) -> int:
    """The drops of its AF_XDP rows: the fill and RX rings, queues without a socket."""
    return sum(n for layer, n in own_rows(layers) if layer.startswith("AF_XDP"))


def own_drops(layers: Any) -> int:
    """Every drop of the program's own rows (accounting.layer_drops, for a record's dicts too)."""
    return sum(n for _, n in own_rows(layers))
