"""capbench-gen --replay and the engines: the engine that replays a capture is the one whose
declaration says so (capabilities.replay in --describe), not a name written into gen_config.c;
an engine that does not is refused in one line naming the one that does."""

from __future__ import annotations

import json
import struct
import subprocess

import pytest
from capbench import declared
from capbench.binaries import find_program

PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)  # microseconds, Ethernet
ONE_FRAME = struct.pack("<IIII", 0, 0, 60, 60) + bytes(60)


def replay_engines() -> list[str]:
    return [e.name for e in declared.gen().engines if e.capabilities.get("replay")]


def gen_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(find_program("capbench-gen")), "--check", "--mtu", "1500", "--rate", "original",
                           *args],
                          capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)


@pytest.fixture
def capture(tmp_path):
    f = tmp_path / "one.pcap"
    f.write_bytes(PCAP_HEADER + ONE_FRAME)
    return f


def test_without_engine_replay_takes_the_first_engine_that_declares_it(capture):
    assert replay_engines(), "no engine declares replay"
    p = gen_check("--replay", str(capture))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["engine"] == replay_engines()[0]


@pytest.mark.parametrize("engine", declared.engine_names())
def test_an_engine_takes_replay_exactly_when_it_declares_it(capture, engine):
    p = gen_check("--engine", engine, "--replay", str(capture))
    if engine in replay_engines():
        assert p.returncode == 0, p.stderr
        return
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout)
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and f"--engine {replay_engines()[0]}" in lines[0] and engine in lines[0], p.stderr
