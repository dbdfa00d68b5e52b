"""capbench-gen run directly is as safe as `capbench gen`: it sends at no rate nobody chose, to no
made-up MAC, and stops by itself unless told otherwise; --check (which opens nothing) judges the
same rules, so they are tested here without root."""

import json
import struct
import subprocess

from capbench import declared
from capbench.binaries import find_program

MAC = ("--dst-mac", "02:00:00:00:00:01")


def check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(find_program("capbench-gen")), "--check", "--mtu", "1500", *args],
                          capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)


def refused(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("capbench-gen: "), p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


def plan(*args: str) -> dict:
    p = check(*args)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_no_rate_is_refused():
    refused(check(*MAC), "no --rate", "--rate 10kpps", "--rate max")


def test_no_destination_is_refused():
    refused(check("--rate", "1kpps"), "no --dst-mac", "ip neigh")


def test_it_stops_after_its_default_duration_unless_told_otherwise():
    default = next(o.default for o in declared.gen().common_options if o.name == "--duration")
    assert isinstance(default, int) and default > 0
    assert plan("--rate", "1kpps", *MAC)["target_frames"] == 1000 * default
    assert plan("--rate", "1kpps", *MAC, "--count", "50000")["target_frames"] == 50000  # not cut to the default
    assert plan("--rate", "1kpps", *MAC, "--duration", "2")["target_frames"] == 2000
    assert plan("--rate", "1kpps", *MAC, "--duration", "0")["target_frames"] == 0  # until stopped
    refused(check("--rate", "1kpps", *MAC, "--duration", "soon"), "--duration", "0: until stopped")


def test_a_replay_sends_the_captures_own_macs_at_a_rate_it_is_given(tmp_path):
    f = tmp_path / "one.pcap"
    f.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + struct.pack("<IIII", 0, 0, 60, 60)
                  + bytes(60))
    refused(check("--replay", str(f)), "no --rate", "--rate original")
    assert plan("--replay", str(f), "--rate", "original")["engine"] == "afpacket"


def test_help_and_describe_say_so():
    text = subprocess.run([str(find_program("capbench-gen")), "--help"], capture_output=True, text=True,
                          timeout=20).stdout
    assert "--rate and --dst-mac\nare required" in text and "--duration 0 sends until SIGINT or SIGTERM" in text
    defaults = {o.name: o.default for o in declared.gen().common_options}
    assert defaults["--rate"] is None and defaults["--dst-mac"] is None and defaults["--duration"] > 0
