"""capbench-gen and capbench-cap on hostile input: one line, exit status 2, at once (issue 15).

Inputs read from a path are regular files of bounded size (a device, FIFO or directory is
named, never read: /dev/zero used to spin for ever, a FIFO to block); durations, counts,
intervals and rates are bounded where they are parsed, so no later arithmetic overflows
(`--duration 1e11` used to send nothing with exit status 0); `--write` takes a regular
file. `--check` runs without privileges or an interface.
"""

from __future__ import annotations

import os
import struct
import subprocess

import pytest
from capbench.binaries import find_program

PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)  # microseconds, Ethernet


def record(sec: int, usec: int = 0, length: int = 60) -> bytes:
    return struct.pack("<IIII", sec, usec, length, length) + bytes(length)


def run(prog: str, *args: str) -> subprocess.CompletedProcess:
    # A hang fails the test by its timeout instead of blocking the suite.
    return subprocess.run([str(find_program(prog)), "--check", *args], capture_output=True, text=True,
                          timeout=20, stdin=subprocess.DEVNULL)


# What capbench-gen requires (a rate, a destination), before the options a test gives (the last of
# an option given twice holds).
GEN_BASE = ("--mtu", "1500", "--rate", "1kpps", "--dst-mac", "02:cb:00:00:00:02")


def gen(*args: str) -> subprocess.CompletedProcess:
    return run("capbench-gen", *GEN_BASE, *args)


def refused(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert p.stdout == ""


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("form", ["dist:{}", "trace:{}"])
def test_size_files_must_be_regular_files(tmp_path, fifo, form):
    refused(gen("--size", form.format("/dev/zero")), "/dev/zero", "character device")
    refused(gen("--size", form.format(fifo)), str(fifo), "FIFO")
    refused(gen("--size", form.format(tmp_path)), str(tmp_path), "directory")


@pytest.mark.parametrize("form", ["dist:{}", "trace:{}"])
def test_a_pseudo_file_that_calls_itself_regular_is_not_read_for_ever(form):
    # /proc/self/pagemap is "regular", says size 0 and holds 8 bytes per page of the
    # address space (terabytes); getline() once read it looking for a newline.
    refused(gen("--size", form.format("/proc/self/pagemap")), "/proc/self/pagemap")


def test_replay_file_must_be_a_regular_file(tmp_path, fifo):
    for path, kind in (("/dev/zero", "character device"), (str(fifo), "FIFO"), (str(tmp_path), "directory")):
        refused(gen("--engine", "afpacket", "--rate", "original", "--replay", path), path, kind)


def test_a_dist_file_above_the_size_limit_is_refused_unread(tmp_path):
    f = tmp_path / "huge.csv"
    with open(f, "wb") as out:
        out.truncate(64 << 20)  # sparse: nothing to read, only the size
    refused(gen("--size", f"dist:{f}"), str(f), "MiB")


def test_replay_damaged_records(tmp_path):
    f = tmp_path / "cut.pcap"
    f.write_bytes(PCAP_HEADER + record(0) + record(1)[:30])
    refused(gen("--engine", "afpacket", "--rate", "original", "--replay", str(f)), "truncated")
    # A capture whose frames lie more than a day apart: its gaps would overflow the
    # 1/65536 ns departure times of --rate original.
    f = tmp_path / "long.pcap"
    f.write_bytes(PCAP_HEADER + record(0) + record(100_000))
    refused(gen("--engine", "afpacket", "--rate", "original", "--replay", str(f)), "a day")
    # A clock that steps back is not a gap of 2^64 ns.
    f = tmp_path / "back.pcap"
    f.write_bytes(PCAP_HEADER + record(100) + record(50) + record(51))
    p = gen("--engine", "afpacket", "--rate", "original", "--replay", str(f))
    assert p.returncode == 0, p.stderr


def test_trace_refuses_a_record_claiming_more_captured_bytes_than_its_frame_had(tmp_path):
    f = tmp_path / "bad.pcap"
    f.write_bytes(PCAP_HEADER + struct.pack("<IIII", 0, 0, 200, 64) + bytes(200))
    refused(gen("--size", f"trace:{f}"), str(f), "frame 1 claims", "damaged")


def test_pcapng_with_a_bad_block_length_is_one_line(tmp_path):
    shb = struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28)
    idb = struct.pack("<IIHHII", 1, 20, 1, 0, 65535, 20)
    epb = struct.pack("<IIIIIII", 6, 0xFFFFFF00, 0, 0, 0, 60, 60) + bytes(60)
    f = tmp_path / "bad.pcapng"
    f.write_bytes(shb + idb + epb)
    refused(gen("--size", f"trace:{f}"), str(f))
    refused(gen("--engine", "afpacket", "--rate", "original", "--replay", str(f)), str(f))


@pytest.mark.parametrize("prog", ["capbench-gen", "capbench-cap"])
def test_times_are_bounded(prog):
    extra = GEN_BASE if prog == "capbench-gen" else ()
    refused(run(prog, *extra, "--duration", "1e11"), "--duration", "86400")
    refused(run(prog, *extra, "--duration", "86401"), "--duration")
    refused(run(prog, *extra, "--interval", "1us"), "--interval", "0.01")
    refused(run(prog, *extra, "--interval", "7200"), "--interval", "3600")
    refused(run(prog, *extra, "--count", "1000000000000001"), "--count")
    assert run(prog, *extra, "--duration", "86400", "--interval", "10ms").returncode == 0


def test_paced_plans_longer_than_a_day_and_rates_below_one_pps_are_refused():
    refused(gen("--rate", "1pps", "--count", "1000000"), "--count", "a day")
    refused(gen("--rate", "0.5pps", "--count", "10"), "--rate", "below")
    refused(gen("--rate", "1kpps", "--groups", "100", "--group-size", "10", "--group-gap", "1000"),
            "--groups", "a day")
    assert gen("--rate", "1kpps", "--count", "1000").returncode == 0
    assert gen("--rate", "max", "--count", "1000000000000").returncode == 0  # unpaced: no span
    refused(gen("--rate", "max", "--groups", "1000000000000", "--group-size", "100000"), "10^15")


@pytest.mark.parametrize("target, words", [("", ("needs a file name",)), ("/dev/zero", ("character device",)),
                                           ("/dev/null", ("character device",)), ("{tmp}", ("directory",)),
                                           ("{fifo}", ("FIFO",))])
def test_write_takes_a_regular_file(tmp_path, fifo, target, words):
    path = target.format(tmp=tmp_path, fifo=fifo)
    refused(run("capbench-cap", "--write", path), *words)


def test_write_to_a_new_or_existing_file_is_accepted(tmp_path):
    assert run("capbench-cap", "--write", str(tmp_path / "new.pcap")).returncode == 0
    old = tmp_path / "old.pcap"
    old.write_bytes(b"keep")
    assert run("capbench-cap", "--write", str(old)).returncode == 0
    assert old.read_bytes() == b"keep"


@pytest.mark.parametrize("prog", ["capbench-gen", "capbench-cap"])
def test_an_error_line_shows_no_control_byte(prog, tmp_path):
    """Issue 15's check: the programs echoed a bad value as given, so '--rate ESC[2J' cleared the
    terminal and a CR broke the line. Every error line goes through one report function, which
    writes each control byte as '?' (cb_printable)."""
    p = (gen if prog == "capbench-gen" else lambda *a: run(prog, *a))("--interval", "\x1b[2J\r5")
    refused(p, "?[2J?5")
    assert not any(ord(c) < 0x20 for c in p.stderr.rstrip("\n")), repr(p.stderr)


@pytest.mark.parametrize("prog", ["capbench-cap", "capbench-gen"])
def test_an_unknown_interface_is_the_users_to_fix(prog):
    """Exit status 2 with one line naming the fix, before privileges are asked for (issue 16)."""
    required = GEN_BASE[2:] if prog == "capbench-gen" else ()
    p = subprocess.run([str(find_program(prog)), *required, "--iface", "cb-no-such-if"], capture_output=True, text=True,
                       timeout=20, stdin=subprocess.DEVNULL)
    refused(p, "unknown interface 'cb-no-such-if'", "ip link")


@pytest.mark.parametrize("backend", ["pcap", "raw", "afp-v2", "afp-v3", "fanout"])
def test_a_filter_is_compiled_before_anything_opens(backend):
    """--filter EXPR or EXPR after the options (tcpdump's way), compiled by libpcap under --check."""
    assert run("capbench-cap", "--backend", backend, "udp", "and", "port", "9").returncode == 0
    assert run("capbench-cap", "--backend", backend, "--filter", "not udp").returncode == 0
    # An empty expression is no filter, as in tcpdump.
    assert run("capbench-cap", "--backend", backend, "--filter", "").returncode == 0


def test_a_bad_filter_is_libpcaps_message_in_one_line():
    refused(run("capbench-cap", "udp", "port"), "bad filter 'udp port': ", "syntax error")
    refused(run("capbench-cap", "--filter", "ether proto nosuchproto"), "bad filter 'ether proto nosuchproto': ")


@pytest.mark.parametrize("backend", ["afxdp", "xdp"])
def test_a_backend_without_a_socket_filter_refuses_one_naming_those_that_take_it(backend):
    refused(run("capbench-cap", "--backend", backend, "udp"), f"--backend {backend} takes no capture filter",
            "use one of pcap, raw, afp-v2, afp-v3, fanout")


def test_a_filter_is_given_once_and_never_to_read(tmp_path):
    refused(run("capbench-cap", "--filter", "udp", "tcp"), "two filters: 'udp' (--filter) and 'tcp'")
    f = tmp_path / "t.pcap"
    f.write_bytes(PCAP_HEADER + record(1))
    p = subprocess.run([str(find_program("capbench-cap")), "--read", str(f), "udp"], capture_output=True, text=True,
                       timeout=20)
    refused(p, "unexpected argument 'udp'")
