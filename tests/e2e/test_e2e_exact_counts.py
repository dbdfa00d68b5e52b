"""Exact counts on a real veth test bed: a paced --duration sends exactly round(rate x S) frames,
trailer frames let a standalone capture count a lost tail, and the raw backend's receive times
are the kernel's, packet by packet."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from capbench.testbed import netns

from e2e_env import engines, capbench_cmd, capbench_env, gen_engine, run_in, run_stream

# tests/bpf/xdp_drop_tail.bpf.c, built by meson with these bounds: it drops the last 10
# sequence numbers of the 2,000 frames that 10 kpps for 0.2 s send.
DROP_TAIL_OBJ = "xdp_drop_tail.bpf.o"
TAIL_RATE, TAIL_DURATION, TAIL_SENT, TAIL_DROPPED = "10kpps", "0.2", 2000, 10


# The streams below give --trailer 3 (the default) explicitly: run_stream's callers elsewhere may
# turn trailers off by default, as capbench's own trials do.
TRAILER = ("--trailer", "3")


@pytest.mark.parametrize("engine", engines())
def test_duration_at_a_rate_sends_exactly_its_frames(binaries, tb, engine):
    gen, cap, xdp = run_stream(binaries, tb, ["--engine", engine, "--duration", "2", "--rate", "100kpps",
                                              "--cpu", "0", *TRAILER])
    assert gen["sent"] == gen["target_frames"] == 200_000, gen
    assert gen["stopped_by"] == "count"
    # duration_s: first departure to last, 199,999 gaps of 10 us when on time.
    if gen["offered_share"] >= 0.999:
        assert gen["duration_s"] == pytest.approx(1.99999, abs=0.005)
    # The trailer frames are no data frames: not in sent, not in the counters' capbench counts.
    assert gen["trailer"] == 3 and gen["trailer_sent"] == 3
    assert xdp["capbench"] == 200_000
    assert cap["received"] == 200_000 and cap["lost"] == 0
    assert cap["trailer"] == {"seen": 3, "streams": 1, "sent": 200_000, "last_seq": 199_999}
    assert cap["tail_loss_counted"] is True


@pytest.mark.parametrize("engine", engines())
def test_threads_split_the_count_exactly(binaries, tb, engine):
    gen, cap, _ = run_stream(binaries, tb, ["--engine", engine, "--duration", "0.5", "--rate", "10001pps",
                                            "--threads", "2", "--cpus", "0,1", *TRAILER])
    assert gen["sent"] == gen["target_frames"] == 5_001  # round(10,001 x 0.5 = 5,000.5)
    assert (gen["streams"]["0"]["sent"], gen["streams"]["1"]["sent"]) == (2_501, 2_500)
    assert gen["trailer_sent"] == 6
    assert cap["received"] == 5_001 and cap["lost"] == 0
    assert cap["trailer"]["streams"] == 2 and cap["trailer"]["sent"] == 5_001
    assert {k: v["trailer"]["sent"] for k, v in cap["per_stream"].items()} == {"0": 2_501, "1": 2_500}


def test_unpaced_duration_stays_time_bound(binaries, tb):
    gen, _, _ = run_stream(binaries, tb, ["--duration", "0.3", "--rate", "max", "--trailer", "0"])
    assert gen["stopped_by"] == "duration" and gen["target_frames"] == 0
    assert gen["duration_s"] == pytest.approx(0.3, abs=0.02)
    assert gen["trailer_sent"] == 0


def test_a_stream_that_cannot_keep_up_ends_one_second_after_its_schedule(binaries, tb):
    # 50 Mpps is far beyond what the afpacket engine sends here (1-2 Mpps): it falls behind,
    # keeps sending, and is cut 1 s after the 0.3 s its schedule takes, short of its count.
    p = run_in(tb.gen_ns, [str(binaries.gen), "--iface", tb.gen_if, "--engine", "afpacket", "--link", "100g",
                           "--rate", "50Mpps", "--duration", "0.3", "--trailer", "0", "--cpu", "0",
                           "--dst-mac", tb.dst_mac])
    assert p.returncode == 0, p.stderr
    gen = json.loads(p.stdout.splitlines()[-1])
    assert gen["target_frames"] == 15_000_000 and gen["stopped_by"] == "deadline"
    assert 0 < gen["sent"] < gen["target_frames"]
    assert gen["duration_s"] == pytest.approx(1.3, abs=0.05)
    assert gen["offered_share"] < 0.999


def test_less_than_a_frame_is_a_usage_error(binaries, tb):
    p = run_in(tb.gen_ns, [str(binaries.gen), "--iface", tb.gen_if, "--rate", "1pps", "--duration", "0.4",
                           "--dst-mac", tb.dst_mac])
    assert p.returncode == 2 and "less than one frame" in p.stderr and p.stdout == ""


def _xdp_drops(tb) -> int:
    out = subprocess.run(netns.exec_argv(tb.cap_ns, ["ethtool", "-S", tb.cap_if]), capture_output=True,
                         text=True, check=True).stdout
    return sum(int(line.split(":")[1]) for line in out.splitlines() if "_xdp_drops:" in line)


def _capture_a_dropped_tail(binaries, tb, trailer: str) -> tuple[dict, str, int]:
    """`capbench capture` on the capture veth while tests/bpf/xdp_drop_tail.bpf.c drops the
    stream's last 10 frames there: (its summary, its stderr, the veth's XDP drops)."""
    obj = Path(binaries.gen).parent / DROP_TAIL_OBJ
    assert obj.exists(), f"{obj} is not built: run ninja -C build"
    # XDP runs in the veth's NAPI poll, before a packet socket's tap sees the frame; a tc or
    # netfilter ingress drop would come after the tap, too late. The program also gives the
    # veth the NAPI the xdp engine's redirected frames need.
    netns.ip("-n", tb.cap_ns, "link", "set", "dev", tb.cap_if, "xdpdrv", "obj", str(obj), "sec", "xdp")
    try:
        drops_before = _xdp_drops(tb)
        cap = subprocess.Popen(capbench_cmd("capture", "--netns", tb.cap_ns, "--iface", tb.cap_if,
                                            "--backend", "afp-v3", "--cpu", "1", "--duration", "3"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=capbench_env(),
                               stdin=subprocess.DEVNULL)
        try:
            assert json.loads(cap.stdout.readline())["type"] == "ready"
            g = run_in(tb.gen_ns, [str(binaries.gen), "--iface", tb.gen_if, "--rate", TAIL_RATE,
                                   "--duration", TAIL_DURATION, "--trailer", trailer, "--cpu", "0",
                                   "--dst-mac", tb.dst_mac, "--engine", gen_engine()])
            assert g.returncode == 0, g.stderr
            assert json.loads(g.stdout.splitlines()[-1])["sent"] == TAIL_SENT
            out, err = cap.communicate(timeout=15)
        finally:
            if cap.poll() is None:
                cap.kill()
                cap.wait()
        assert cap.returncode == 0, err
        summary = [json.loads(line) for line in out.splitlines() if '"summary"' in line][-1]
        return summary, err, _xdp_drops(tb) - drops_before
    finally:
        netns.ip("-n", tb.cap_ns, "link", "set", "dev", tb.cap_if, "xdpdrv", "off")


def test_capture_counts_a_lost_tail_from_the_trailer(binaries, tb):
    summary, err, dropped = _capture_a_dropped_tail(binaries, tb, "3")
    assert dropped == TAIL_DROPPED  # the veth's own counter: the frames really went
    assert summary["received"] == TAIL_SENT - TAIL_DROPPED
    assert summary["max_seq"] == TAIL_SENT - TAIL_DROPPED - 1  # no gap shows the tail
    assert summary["lost"] == TAIL_DROPPED
    assert summary["tail_loss_counted"] is True
    assert summary["trailer"] == {"seen": 3, "streams": 1, "sent": TAIL_SENT, "last_seq": TAIL_SENT - 1}
    assert "capbench: lost 10 of the 2,000 frames sent, tail included" in err


def test_capture_without_a_trailer_says_the_tail_is_not_counted(binaries, tb):
    summary, err, dropped = _capture_a_dropped_tail(binaries, tb, "0")
    assert dropped == TAIL_DROPPED
    assert summary["received"] == TAIL_SENT - TAIL_DROPPED
    assert summary["lost"] == 0  # what the numbers alone show
    assert summary["tail_loss_counted"] is False
    assert summary["trailer"] == {"seen": 0, "streams": 0}
    assert "capbench: lost 0; no trailer arrived: tail loss is not counted" in err


def test_raw_takes_each_packets_kernel_time(binaries, tb, tmp_path):
    pcap = tmp_path / "raw.pcap"
    gen, cap, _ = run_stream(binaries, tb, ["--rate", "10kpps", "--duration", "1", "--cpu", "0", *TRAILER],
                             backend="raw", cap_args=("--write", str(pcap)))
    assert gen["sent"] == cap["received"] == 10_000
    assert cap["rx_clock"] == "kernel" and cap["read_timed"] == 0
    # 10 kpps: 100 us apart (the batch read time gave every packet of a batch the same time: p50 0).
    # A receive thread the host delays stamps the frames it then takes at once a few us apart:
    # the spacing is checked on the mean, over the whole stream, below.
    assert cap["iat_ns"]["p50"] > 0, cap["iat_ns"]
    records = cap["write"]["records"]
    assert records == 10_003  # the data frames and the 3 trailers
    for tool in ("tshark", "capinfos"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing: `make test` installs it")
    info = subprocess.run(["capinfos", "-M", "-c", "-u", str(pcap)], capture_output=True, text=True, check=True)
    assert f"Number of packets:   {records}" in info.stdout, info.stdout
    times = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", "frame.time_epoch"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert len(times) == records
    # Per-packet times: nearly every one differs from the one before (a batch read time would
    # repeat over whole batches), and the data frames are 100 us apart on average: the stream's
    # second over its 10,000 frames.
    stamps = [int(t.replace(".", "")) for t in times]  # ns as integers: no float rounding
    deltas = [b - a for a, b in zip(stamps, stamps[1:])]
    assert sum(d > 0 for d in deltas) >= 0.99 * len(deltas)
    data = stamps[:10_000]  # the trailers come after the data frames
    assert 95_000 <= (data[-1] - data[0]) / (len(data) - 1) <= 105_000
