"""capbench-gen --replay on damaged captures: one line, exit status 2, never a crash.

capbench-gen runs as root; a pcap record whose captured length exceeds the frame's length
used to overrun the frame's buffer (SIGSEGV). `--check --mtu` reads the capture without
an interface or privileges.
"""

from __future__ import annotations

import struct
import subprocess

import pytest
from capbench.binaries import find_program

PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)  # microseconds, Ethernet


def record(caplen: int, orig_len: int, data_len: int | None = None) -> bytes:
    return struct.pack("<IIII", 0, 0, caplen, orig_len) + bytes(caplen if data_len is None else data_len)


def check(path) -> subprocess.CompletedProcess:
    gen = find_program("capbench-gen")
    return subprocess.run([str(gen), "--check", "--mtu", "1500", "--engine", "afpacket", "--rate", "original",
                           "--replay", str(path)],
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("caplen, orig_len", [(200, 64), (61, 60), (1514, 0), (65535, 1)])
def test_a_record_claiming_more_captured_bytes_than_the_frame_had_is_refused(tmp_path, caplen, orig_len):
    f = tmp_path / "bad.pcap"
    f.write_bytes(PCAP_HEADER + record(caplen, orig_len))
    p = check(f)
    assert p.returncode == 2, (p.returncode, p.stderr)  # not -11 (SIGSEGV)
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and "frame 1 claims" in lines[0] and "damaged" in lines[0], p.stderr


def test_a_whole_short_frame_is_still_padded_and_accepted(tmp_path):
    f = tmp_path / "ok.pcap"
    f.write_bytes(PCAP_HEADER + record(42, 42) + record(60, 60))
    p = check(f)
    assert p.returncode == 0, p.stderr
