"""Write classic pcap files for tests: a capture of frames of given lengths."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101


# A frame to another host (the capture side's promiscuous socket takes it), of a
# local experimental EtherType, with its number in the payload.
DST_MAC = bytes.fromhex("02cb00000002")
SRC_MAC = bytes.fromhex("02cb00000101")


def frame(i: int, n: int) -> bytes:
    return (DST_MAC + SRC_MAC + b"\x88\xb5" + i.to_bytes(4, "big") + bytes(max(0, n - 18)))[:n]


def write_pcap(path: Path, wire_lens: Iterable[int], *, linktype: int = LINKTYPE_ETHERNET,
               snaplen: int = 96, gap_us: int = 1) -> Path:
    """One record per length, `gap_us` apart: `len` is the on-wire length without FCS,
    the data (see frame()) is cut at snaplen."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype))
        for i, n in enumerate(wire_lens):
            cap = min(n, snaplen)
            t = i * gap_us
            f.write(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, cap, n))
            f.write(frame(i, n)[:cap])
    return path
