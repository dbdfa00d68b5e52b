"""Write classic pcap files for tests: a capture of frames of given lengths."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101


def write_pcap(path: Path, wire_lens: Iterable[int], *, linktype: int = LINKTYPE_ETHERNET,
               snaplen: int = 96) -> Path:
    """One record per length: `len` is the on-wire length without FCS, the data is cut at snaplen."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype))
        for i, n in enumerate(wire_lens):
            cap = min(n, snaplen)
            f.write(struct.pack("<IIII", i, 0, cap, n))
            f.write(bytes(cap))
    return path
