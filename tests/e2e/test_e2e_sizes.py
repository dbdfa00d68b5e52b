"""Size profiles on a real veth test bed: every frame arrives, with the lengths the profile draws.

The generator reports the lengths it sent (`sent_lengths`, from its schedule);
capbench-xdpcount on the capture veth counts the bytes that arrived, and the
counter the frames. Both engines must send the same frames for the same seed.
"""

from __future__ import annotations

import pytest
from e2e_env import (assert_one_line_usage_error, engine_refusal, engines, gen_required, run_in, run_stream,
                     xdp_engine_refusal)
from pcap_file import LINKTYPE_RAW, write_pcap

FRAMES = 20_000
FCS = 4


def send_profile(binaries, tb, size: str, *, engine: str | None = None, seed: int = 1, rate: str = "100kpps",
                 count: int | None = FRAMES, extra: tuple[str, ...] = (), cpu: int | None = 0,
                 cap_args: tuple[str, ...] = ()) -> tuple[dict, dict, dict]:
    """(generator, counter, xdpcount) summaries of `count` frames (None: `extra` says how many)."""
    return run_stream(binaries, tb, [
        *(("--engine", engine) if engine else ()), "--size", size, "--seed", str(seed), "--rate", rate, "--link", "10g",
        *(("--count", str(count)) if count else ()), *(("--cpu", str(cpu)) if cpu is not None else ()),
        "--dst-mac", tb.dst_mac, *extra], cap_args=cap_args)


def assert_complete(gen: dict, cap: dict, xdp: dict, count: int = FRAMES) -> dict[int, int]:
    lengths = {int(k): v for k, v in gen["sent_lengths"].items()}
    assert gen["sent"] == count and sum(lengths.values()) == count
    assert xdp["capbench"] == count
    # Every frame arrived with its length: the bytes on the capture veth are the sum of them.
    assert xdp["bytes"] == sum((n - FCS) * c for n, c in lengths.items())
    assert (cap["received"], cap["lost"], cap["duplicates"]) == (count, 0, 0)
    # The counter's own length histogram: the same frames, length by length.
    assert {int(k): v for k, v in cap["lengths"].items()} == lengths
    assert cap["latency_ns"]["n"] == count and cap["rx_clock"] == "kernel"
    assert 0 < cap["latency_ns"]["min"] <= cap["latency_ns"]["p50"] <= cap["latency_ns"]["max"]
    return lengths


@pytest.mark.parametrize("engine", engines())
def test_imix_arrives_complete_with_its_mix(binaries, tb, engine):
    gen, cap, xdp = send_profile(binaries, tb, "imix:seed", engine=engine)
    lengths = assert_complete(gen, cap, xdp)
    assert set(lengths) == {64, 570, 594, 1518}
    for n, share in {64: 0.57, 570: 0.07, 594: 0.16, 1518: 0.20}.items():
        assert lengths[n] / FRAMES == pytest.approx(share, abs=0.02), (n, lengths)


def test_every_engine_sends_the_same_frames_for_a_seed(binaries, tb):
    here = [e for e in engines() if engine_refusal(e) is None]
    if len(here) < 2:
        pytest.skip(f"one engine runs here ({here[0]}): {xdp_engine_refusal()}")
    seven = {e: send_profile(binaries, tb, "random:64-1518", engine=e, seed=7)[0]["sent_lengths"] for e in here}
    eight = send_profile(binaries, tb, "random:64-1518", engine=here[0], seed=8)[0]["sent_lengths"]
    assert all(lengths == seven[here[0]] for lengths in seven.values()), seven
    assert eight != seven[here[0]]


def test_random_lengths_arrive_complete(binaries, tb):
    gen, cap, xdp = send_profile(binaries, tb, "random:64-1518", seed=3)
    lengths = assert_complete(gen, cap, xdp)
    assert min(lengths) >= 64 and max(lengths) <= 1518 and len(lengths) > 1000


def test_trace_derived_lengths(binaries, tb, tmp_path):
    # A capture of 60 B (64 B on the wire with FCS), 590 B and 1514 B frames, 2:1:1.
    trace = write_pcap(tmp_path / "trace.pcap", [60, 60, 590, 1514] * 50)
    gen, cap, xdp = send_profile(binaries, tb, f"trace:{trace}")
    lengths = assert_complete(gen, cap, xdp)
    assert set(lengths) == {64, 594, 1518}
    assert lengths[64] / FRAMES == pytest.approx(0.5, abs=0.02)


def test_dist_file_and_a_cycled_list(binaries, tb, tmp_path):
    dist = tmp_path / "lengths.csv"
    dist.write_text("length,weight\n128,3\n1024,1\n")
    lengths = assert_complete(*send_profile(binaries, tb, f"dist:{dist}"))
    assert set(lengths) == {128, 1024} and lengths[128] / FRAMES == pytest.approx(0.75, abs=0.02)
    lengths = assert_complete(*send_profile(binaries, tb, "seed", count=13_000), count=13_000)
    assert lengths == {n: 1000 for n in (64, 73, 128, 207, 256, 313, 512, 726, 1024, 1174, 1280, 1319, 1518)}


def test_bit_rate_pacing_gives_each_frame_its_wire_time(binaries, tb):
    # 10 % of 1 GbE with IMIX: 100 Mbit/s on the wire, whatever the mix of the frames sent.
    g = run_stream(binaries, tb, ["--size", "imix:seed", "--rate", "10%", "--link", "1g", "--count", "30000",
                                  "--cpu", "0"])[0]
    assert g["achieved_wire_bps"] == pytest.approx(100e6, rel=0.001)
    assert g["offered_share"] == pytest.approx(1.0, abs=0.001)


@pytest.fixture
def bad_files(tmp_path):
    files = {
        "negative": tmp_path / "negative.csv",
        "zero": tmp_path / "zero.csv",
        "text": tmp_path / "text.csv",
    }
    files["negative"].write_text("64,5\n128,-1\n")
    files["zero"].write_text("64,0\n")
    files["text"].write_text("64,5\nabc,def\n")
    write_pcap(tmp_path / "truncated.pcap", [60] * 10)
    with open(tmp_path / "truncated.pcap", "r+b") as f:
        f.truncate(24 + 10 * 16 + 9 * 60 + 20)
    write_pcap(tmp_path / "raw.pcap", [60] * 10, linktype=LINKTYPE_RAW)
    write_pcap(tmp_path / "jumbo.pcap", [60, 4000])
    return tmp_path


@pytest.mark.parametrize("size, words", [
    ("imix:huge", ["imix:huge", "imix:seed"]),
    ("zipf:1", ["zipf:1", "random:MIN-MAX"]),
    ("random:100-64", ["random:MIN-MAX"]),
    ("random:10-100", ["64"]),
    ("dist:{d}/negative.csv", ["negative.csv line 2", ">= 0"]),
    ("dist:{d}/zero.csv", ["zero.csv", "positive weight"]),
    ("dist:{d}/text.csv", ["text.csv line 2"]),
    ("dist:{d}/missing.csv", ["missing.csv"]),
    ("trace:{d}/truncated.pcap", ["truncated.pcap", "truncated"]),
    ("trace:{d}/raw.pcap", ["raw.pcap", "link type"]),
    ("trace:{d}/jumbo.pcap", ["trace:", "4004 B", "MTU 1500"]),
])
def test_bad_profiles(binaries, tb, bad_files, size, words):
    p = run_in(tb.gen_ns, [str(binaries.gen), "--iface", tb.gen_if, *gen_required(tb), "--size",
                                 size.format(d=bad_files)])
    assert_one_line_usage_error(p, "capbench-gen", *words)


def test_rate_above_the_wire_rate_of_a_mix(binaries, tb):
    # IMIX averages 475 B: 300 kpps needs 1.19 Gbit/s.
    p = run_in(tb.gen_ns, [str(binaries.gen), "--iface", tb.gen_if, "--size", "imix:seed", "--rate", "300kpps"])
    assert_one_line_usage_error(p, "capbench-gen", "wire rate", "imix:seed", "mean frame")
