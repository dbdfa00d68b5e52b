"""capbench-cap --read FILE: a capture another program wrote, counted as a live capture counts
(docs/programs.md, "--read"). No root: the files are made here, the program only reads them."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import time
from pathlib import Path

import pytest
from capbench.binaries import find_program

DST_MAC = bytes.fromhex("02cb00000002")
SRC_MAC = bytes.fromhex("02cb00000001")
STAMP_MAGIC = 0xCB5E
TRAILER_MAGIC = 0xCB5F
LATENCY_NS = 200_000
# capbench-cap reads the clocks' offset itself, at its start: the two readings of it (here
# and there) differ by how long each took, which a preemption can stretch.
OFFSET_SLACK_NS = 50_000


def cb_frame(seq: int, tx_ns: int, length: int = 64, *, magic: int = STAMP_MAGIC, stream: int = 0) -> bytes:
    """A capbench frame (src/common/stamp.h) of `length` B incl. FCS, without the FCS."""
    n = length - 4
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, n - 14, 0, 0x4000, 64, 17, 0, bytes([198, 18, 0, 1]),
                     bytes([198, 18, 0, 2]))
    udp = struct.pack("!HHHH", 52224 + stream, 52190, n - 34, 0)
    stamp = struct.pack("<HQQ", magic, seq, tx_ns)
    return (DST_MAC + SRC_MAC + b"\x08\x00" + ip + udp + stamp).ljust(n, b"\x00")


def foreign_frame() -> bytes:
    return (DST_MAC + SRC_MAC + b"\x88\xb5").ljust(60, b"\x01")


def clock_offset_ns() -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC, as capbench-cap reads it: the reading taken in the
    shortest of 20 brackets of CLOCK_MONOTONIC."""
    best = None
    for _ in range(20):
        m0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        r = time.clock_gettime_ns(time.CLOCK_REALTIME)
        m1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if best is None or m1 - m0 < best[0]:
            best = (m1 - m0, r - (m0 + m1) // 2)
    return best[1]


def records() -> list[tuple[int, bytes, int]]:
    """(file time ns, captured bytes, wire length): in order, a gap (3), a duplicate (4), a
    reordered pair (6 before 5), a foreign frame, a 1518 B frame snapped after its stamp (7),
    a frame snapped before it, a trailer; each received LATENCY_NS after its stamp."""
    base = time.clock_gettime_ns(time.CLOCK_MONOTONIC) - 10_000_000_000
    off = clock_offset_ns()
    # File times that end in ...1001 ns: left to the clocks' chance, all of a file's times (1 ms
    # apart) end in 0 one time in ten, and the file reads as a resolution of 10 ns (10 us in µs).
    base += (1001 - (base + off + LATENCY_NS)) % 10_000
    out = []
    for i, seq in enumerate([0, 1, 2, 4, 4, 6, 5]):
        tx = base + i * 1_000_000
        out.append((tx + off + LATENCY_NS, cb_frame(seq, tx), 60))
    t = base + 7_000_000
    out.append((t + off, foreign_frame(), 60))
    out.append((t + off + 1_000_000 + LATENCY_NS, cb_frame(7, t + 1_000_000, 1518)[:60], 1514))
    out.append((t + off + 2_000_000, cb_frame(8, t + 2_000_000)[:40], 60))
    out.append((t + off + 3_000_000, cb_frame(7, 9, magic=TRAILER_MAGIC), 60))
    return out


def write_pcap(path: Path, recs, *, nano: bool = True, snaplen: int = 65535) -> Path:
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    unit = 1 if nano else 1000
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, 1))
        for ts, data, wire in recs:
            f.write(struct.pack("<IIII", ts // 1_000_000_000, ts % 1_000_000_000 // unit, len(data), wire))
            f.write(data)
    return path


def write_pcapng(path: Path, recs) -> Path:
    """pcapng without if_tsresol: microsecond times, as dumpcap and tshark write them."""
    def block(kind: int, body: bytes) -> bytes:
        body += b"\x00" * (-len(body) % 4)
        return struct.pack("<II", kind, len(body) + 12) + body + struct.pack("<I", len(body) + 12)

    with open(path, "wb") as f:
        f.write(block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
        f.write(block(1, struct.pack("<HHI", 1, 0, 262144)))
        for ts, data, wire in recs:
            us = ts // 1000
            f.write(block(6, struct.pack("<IIIII", 0, us >> 32, us & 0xFFFFFFFF, len(data), wire) + data))
    return path


def cap_read(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(find_program("capbench-cap")), "--read", *args], capture_output=True,
                          text=True, timeout=20, stdin=subprocess.DEVNULL)


def summary(p: subprocess.CompletedProcess) -> dict:
    assert p.returncode == 0, (p.returncode, p.stderr)
    lines = p.stdout.splitlines()
    s = json.loads(lines[-1])
    assert s["type"] == "summary"
    return s


def refused(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert p.stdout == ""


def check_counts(s: dict) -> None:
    assert s["file_frames"] == s["packets"] == 11
    assert s["received"] == 7  # 0, 1, 2, 4, 5, 6, 7
    assert s["lost"] == 2  # 3 in the gap, 8 cut before its stamp: the trailer says 9 were sent
    assert s["tail_loss_counted"] is True
    assert s["trailer"] == {"seen": 1, "streams": 1, "sent": 9, "last_seq": 7}
    assert (s["duplicates"], s["reordered"], s["too_old"], s["max_seq"]) == (1, 1, 0, 7)
    assert s["foreign"] == 2 and s["cut_before_stamp"] == 1
    assert s["lengths"] == {"64": 7, "1518": 1}
    assert s["kernel_drops"] is None and s["kernel"] is None and s["duration_s"] is None
    assert s["rx_clock"] == "file" and s["link_type"] == "EN10MB"
    assert s["truncated"] is False
    assert s["per_stream"]["0"]["received"] == 7


def test_read_pcap_counts_as_a_capture(tmp_path):
    p = cap_read(str(write_pcap(tmp_path / "t.pcap", records())), "--group-size", "4", "--groups", "3")
    assert p.stderr == "" and len(p.stdout.splitlines()) == 1
    s = summary(p)
    check_counts(s)
    assert s["read"] == str(tmp_path / "t.pcap") and s["snaplen"] == 65535
    assert s["ts_resolution_ns"] == 1
    assert s["groups"] == {"size": 4, "received": [3, 4, 0]}
    # Written "now" on this host: the clock offset holds, to the jitter of reading two clocks.
    lat = s["latency_ns"]
    assert lat["n"] == 8
    assert abs(lat["min"] - LATENCY_NS) < OFFSET_SLACK_NS and abs(lat["max"] - LATENCY_NS) < OFFSET_SLACK_NS
    assert s["iat_ns"]["n"] == 7


def test_read_pcapng_microseconds(tmp_path):
    s = summary(cap_read(str(write_pcapng(tmp_path / "t.pcapng", records()))))
    check_counts(s)
    # Times cut to the microsecond: latency to 1 us, and a frame can seem received before it left.
    assert s["ts_resolution_ns"] == 1000
    lat = s["latency_ns"]
    assert lat["n"] == 8 and "stamped_after_receipt" not in s
    assert abs(lat["max"] - LATENCY_NS) < OFFSET_SLACK_NS + 1000


def test_a_file_from_before_this_boot_gives_no_latency(tmp_path):
    recs = [(1_000_000_000 + i * 1000, cb_frame(i, 5_000_000_000), 60) for i in range(3)]
    s = summary(cap_read(str(write_pcap(tmp_path / "old.pcap", recs))))
    assert s["received"] == 3 and s["latency_ns"] == {"n": 0}
    assert s["stamped_after_receipt"] == 3
    assert s["iat_ns"]["min"] == s["iat_ns"]["max"] == 1000


def test_truncated_last_record_is_counted_up_to_it(tmp_path):
    for f in (write_pcap(tmp_path / "t.pcap", records()), write_pcapng(tmp_path / "t.pcapng", records())):
        data = f.read_bytes()
        f.write_bytes(data[:-10])
        p = cap_read(str(f))
        s = summary(p)
        assert s["truncated"] is True and s["file_frames"] == s["packets"] == 10
        assert len(p.stderr.splitlines()) == 1 and "frame 11" in p.stderr, p.stderr


def test_interval_lines_by_file_time(tmp_path):
    recs = [(10**18 + i * 100_000_000, cb_frame(i, 0), 60) for i in range(25)]  # 10 per second
    p = cap_read(str(write_pcap(tmp_path / "t.pcap", recs)), "--interval", "1")
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert [x["type"] for x in lines] == ["interval", "interval", "summary"]
    assert [(x["t_s"], x["packets"]) for x in lines[:2]] == [(1.0, 10), (2.0, 20)]
    # "at": the tick's time on the file's clock (its records' wall-clock times), to the millisecond
    assert [x["at"] for x in lines[:2]] == [1_000_000_001.0, 1_000_000_002.0]
    assert lines[0]["pps"] == pytest.approx(10.0)
    assert lines[2]["span_s"] == pytest.approx(2.4)


def test_empty_capture(tmp_path):
    s = summary(cap_read(str(write_pcap(tmp_path / "e.pcap", []))))
    assert s["file_frames"] == s["packets"] == s["received"] == 0 and "ts_resolution_ns" not in s


@pytest.mark.parametrize("others", [["--iface", "lo"], ["--backend", "afp-v3"], ["--write", "x.pcap"],
                                    ["--count", "5"], ["--duration", "1"], ["--cpu", "0"],
                                    ["--app-load", "none"], ["--check"]])
def test_capture_options_are_refused(tmp_path, others):
    f = write_pcap(tmp_path / "t.pcap", records())
    refused(cap_read(str(f), *others), "--read", others[0])


def test_bad_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    text = tmp_path / "t.txt"
    text.write_text("not a capture\n" * 10)
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(write_pcap(tmp_path / "whole.pcap", records()).read_bytes()[:12])
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    damaged = tmp_path / "damaged.pcap"
    # A record claiming more bytes than any Ethernet capture holds (libpcap's maximum, 256 KiB).
    damaged.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
                        + struct.pack("<IIII", 0, 0, 300000, 300000) + bytes(1000))
    refused(cap_read(str(tmp_path / "missing.pcap")), "missing.pcap", "No such file", "give")
    refused(cap_read(str(tmp_path)), "directory", "give")
    refused(cap_read("/dev/zero"), "character device", "give")
    refused(cap_read(str(fifo)), "FIFO", "give")
    refused(cap_read(str(text)), "t.txt", "give a pcap or pcapng")
    refused(cap_read(str(cut)), "cut.pcap", "give a pcap or pcapng")
    refused(cap_read(str(empty)), "empty.pcap", "give a pcap or pcapng")
    refused(cap_read(str(damaged)), "damaged.pcap", "frame", "capinfos")
    refused(cap_read(""), "empty", "give")


def test_read_is_a_declared_common_option():
    out = subprocess.run([str(find_program("capbench-cap")), "--describe"], capture_output=True, text=True,
                         check=True).stdout
    common = {o["name"]: o for o in json.loads(out)["common_options"]}
    assert common["--read"]["type"] == "string"
