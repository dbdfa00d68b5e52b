"""Replay of a capture on a real veth test bed: every frame arrives, at the pace asked for."""

from __future__ import annotations

import pytest
from e2e_env import assert_one_line_usage_error, gen_required, run_in, run_stream
from pcap_file import write_pcap

FRAMES = 10_000
LENS = [60, 200, 1514]  # on the wire without FCS: 64, 204 and 1518 B frames


def replay(binaries, tb, pcap, *args: str) -> tuple[dict, dict, dict]:
    """(generator, counter, xdpcount) summaries of one replay."""
    return run_stream(binaries, tb, ["--replay", str(pcap), "--rate", "original", "--cpu", "0", *args])


@pytest.fixture
def pcap(tmp_path):
    # 10,000 frames 50 us apart: 20 kpps, 0.5 s.
    return write_pcap(tmp_path / "replay.pcap", [LENS[i % 3] for i in range(FRAMES)], snaplen=2000, gap_us=50)


def assert_all_arrived(gen, cap, xdp, frames):
    assert gen["sent"] == frames
    assert xdp["packets"] == frames and xdp["capbench"] == 0
    # Replayed frames carry no stamp: the counter counts every one as foreign.
    assert cap["foreign"] == frames and cap["received"] == 0 and cap["packets"] == frames


def test_replay_at_the_original_timing(binaries, tb, pcap):
    gen, cap, xdp = replay(binaries, tb, pcap)
    assert_all_arrived(gen, cap, xdp, FRAMES)
    assert xdp["bytes"] == sum(LENS[i % 3] for i in range(FRAMES))
    assert gen["achieved_pps"] == pytest.approx(20_000, rel=0.001)
    assert gen["offered_share"] == pytest.approx(1.0, abs=0.001)


def test_replay_at_a_rate_and_looped(binaries, tb, pcap):
    gen, cap, xdp = replay(binaries, tb, pcap, "--rate", "50kpps", "--link", "10g", "--loop", "3")
    assert_all_arrived(gen, cap, xdp, 3 * FRAMES)
    assert gen["achieved_pps"] == pytest.approx(50_000, rel=0.001)


def test_replay_as_fast_as_possible(binaries, tb, pcap):
    gen, cap, xdp = replay(binaries, tb, pcap, "--rate", "max")
    assert gen["sent"] == xdp["packets"] == FRAMES
    assert gen["achieved_pps"] > 20_000


@pytest.fixture
def bad_captures(tmp_path):
    write_pcap(tmp_path / "snapped.pcap", [1514] * 3, snaplen=96)
    write_pcap(tmp_path / "jumbo.pcap", [60, 4000], snaplen=9000)
    write_pcap(tmp_path / "raw.pcap", [60], linktype=101)
    write_pcap(tmp_path / "cut.pcap", [60] * 5)
    with open(tmp_path / "cut.pcap", "r+b") as f:
        f.truncate(24 + 16 + 60 + 10)
    (tmp_path / "empty.pcap").write_bytes(b"")
    return tmp_path


@pytest.mark.parametrize("args, words", [
    (["--replay", "{d}/snapped.pcap"], ["snapped.pcap", "frame 1", "96 of its 1514"]),
    (["--replay", "{d}/jumbo.pcap"], ["jumbo.pcap", "frame 2", "MTU"]),
    (["--replay", "{d}/raw.pcap"], ["raw.pcap", "link type"]),
    (["--replay", "{d}/cut.pcap"], ["cut.pcap", "truncated"]),
    (["--replay", "{d}/empty.pcap"], ["empty.pcap"]),
    (["--replay", "{d}/missing.pcap"], ["missing.pcap"]),
    (["--replay", "{d}/cut.pcap", "--engine", "xdp"], ["--engine afpacket"]),
    (["--loop", "2"], ["--replay"]),
    (["--rate", "original"], ["--replay"]),
])
def test_bad_replays(binaries, tb, bad_captures, args, words):
    p = run_in(tb.gen_ns, [str(binaries.gen), "--iface", tb.gen_if, *gen_required(tb), *[a.format(d=bad_captures) for a in args]])
    assert_one_line_usage_error(p, "capbench-gen", *words)
