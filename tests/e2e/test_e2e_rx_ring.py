"""The receive ring of a NIC's depth (--rx-mode cpumap, --rx-ring) on real veth pairs: the ring holds
the frames it was asked to, its overflow is counted exactly, and the account still closes.

The module's test bed is a cpumap one with the receive work on CPU 1 and the generator on CPU 0, the
ring's thread at real-time priority RING_SCHED (a NIC's poll preempts user space): only the busy loop
below, at a higher priority, holds it off, whatever else this host runs on CPU 1.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from capbench import declared
from capbench.rates import Rate
from capbench.testbed import rxmode
from capbench.testbed import veth_pair as testbed
from capbench.trial.measure import Measurer, TrialSetup

from e2e_env import (assert_one_line_usage_error, gen_engine, capbench_namespaces, left_behind, missing_prerequisite,
                     run_capbench)
from host_interference import REPEATS

RATE_PPS = 100_000
HOLD_S = 0.1  # 10,000 frames at RATE_PPS: far beyond the ring under test
RX_CPU = 1
RING_SCHED = "fifo:50"
TOLERANCE = 0.1  # of the frames sent during the hold: what the host's own stops may add or take

# A busy loop of known length at real-time priority on the receive CPU: the ring's thread (normal
# scheduler) and the counter cannot run meanwhile, so the ring fills at the generator's rate and
# overflows once it holds its depth. The 6.18 fair server lets normal tasks run under a real-time
# hog only after it has starved them for most of a second; 0.1 s is far below. It prints how long it
# held the CPU, by CLOCK_MONOTONIC.
HOG = f"""
import os, time
os.sched_setaffinity(0, {{{RX_CPU}}})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(60))  # above RING_SCHED
t0 = time.monotonic()
while time.monotonic() - t0 < {HOLD_S}:
    pass
print(time.monotonic() - t0)
"""


@pytest.fixture(scope="module")
def ring_bed(binaries):
    why = missing_prerequisite()
    if why:
        pytest.skip(why)
    with testbed.testbed(rx_cpu=RX_CPU, rx_mode="cpumap", napi_sched=RING_SCHED, purpose="pytest rx ring") as bed:
        yield bed


# perf's buffer per CPU, in pages: one event per flush of up to 8 frames, ~100 B each, 3 s at
# RATE_PPS fit several times over, so no event is lost while perf itself is held off the CPUs.
PERF_PAGES = 4096


@contextlib.contextmanager
def tracepoint_record(folder: Path) -> Iterator[Path]:
    """perf record of every xdp:xdp_cpumap_enqueue event meanwhile, into a file of `folder`: the
    kernel's own record of each flush into a cpumap queue (processed, drops), read apart from
    capbench's BPF program. perf finds tracepoints in tracefs, which this host does not mount: it is
    mounted in a mount namespace of perf's own, gone with perf. perf starts with its events off and
    turns them on through its control FIFO: its ack says it records from then on."""
    folder.mkdir()
    ctl, ack, data = folder / "ctl", folder / "ack", folder / "perf.data"
    os.mkfifo(ctl)
    os.mkfifo(ack)
    p = subprocess.Popen(["unshare", "-m", "sh", "-c", "mount -t tracefs nodev /sys/kernel/tracing && exec perf "
                          f"record -q -a -m {PERF_PAGES} -D -1 --control fifo:{ctl},{ack} "
                          f"-e xdp:xdp_cpumap_enqueue -o {data}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with open(ctl, "w") as c, open(ack) as a:
            c.write("enable\n")
            c.flush()
            assert a.readline().strip() == "ack"
            yield data
    finally:
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
    # perf record ends a SIGINT by raising it again once its file is written (record__sig_exit).
    assert p.returncode in (0, -signal.SIGINT), err


def tracepoint_counts(path: Path, map_id: int, cpu: int) -> tuple[int, int, int]:
    """(processed, drops, duplicates) of map `map_id`'s queue of `cpu` in a perf record of
    xdp:xdp_cpumap_enqueue.

    perf 6.1 on this kernel now and then writes one sample twice: two records of identical bytes,
    one after the other in the file, to the nanosecond (in about one run in three here, 1 to 13
    frames' worth among 280,000 events).
    The kernel cannot fire the tracepoint twice in one nanosecond on one CPU: each event ends a
    flush of the bulk queue (bq_flush_to_queue), which takes the ring's producer lock first. So a
    sample whose CPU, time and fields repeat the one before is perf's copy, counted once; how many
    there were is returned, for the assertion's message."""
    out = subprocess.run(["perf", "script", "--ns", "-F", "cpu,time,trace", "-i", str(path)],
                         capture_output=True, text=True, check=True).stdout
    processed = drops = duplicates = 0
    previous = None
    for line in out.splitlines():
        if line == previous:
            duplicates += 1
            continue
        previous = line
        fields = dict(re.findall(r"(\w+)=(-?\d+)", line))
        if int(fields.get("map_id", -1)) == map_id and int(fields.get("to_cpu", -1)) == cpu:
            processed += int(fields["processed"])
            drops += int(fields["drops"])
    return processed, drops, duplicates


def held_trial(binaries, bed, frames: int, folder: Path):
    """One 3 s trial at RATE_PPS through a ring of `frames`, the receive CPU held for HOLD_S a second
    into the load; the record and how long the hold was."""
    hog: list[subprocess.Popen] = []

    def hold_once(_progress) -> None:  # a second into the load
        if not hog:
            hog.append(subprocess.Popen([sys.executable, "-c", HOG], stdout=subprocess.PIPE, text=True))

    # Not an engine that sends from softirq (the xdploop engine): with its loop saturating CPU 0's
    # softirq, xdp:xdp_cpumap_enqueue fired for 4,000-8,400 fewer of the 300,000 frames in 2 of 3 runs
    # (perf and capbench-xdpcount agreeing, both short of sent, the ring's drops undercounted by as
    # much) while runs without the witness and perf beside it counted all: under investigation
    # (issue note of 2026-12-08). This test is of the ring's counter against the kernel's.
    setup = TrialSetup(backend="afp-v3", frame_len=64, rx_ring=frames, engine=gen_engine(shared_cpu=True))
    with tracepoint_record(folder) as data:
        r = Measurer(binaries, bed, setup, on_second=hold_once).measure(3.0, Rate.from_pps(RATE_PPS))
    return r, float(hog[0].communicate(timeout=10)[0]), data


def test_the_ring_overflows_at_its_depth_and_its_counter_agrees_with_the_kernel(binaries, ring_bed, tmp_path):
    frames = 1024
    stops = []
    for attempt in range(1 + REPEATS):
        r, held_s, data = held_trial(binaries, ring_bed, frames, tmp_path / str(attempt))
        assert (r.rx_mode, r.rx_ring, r.kernel_rx_cpu) == ("cpumap", frames, RX_CPU)
        # Exactly what the kernel's tracepoint says of this ring (perf saw every frame the trial
        # offered it), and every lost frame is the ring's.
        ring = r.raw["xdpcount"]
        processed, drops, perf_copies = tracepoint_counts(data, int(ring["ring_map_id"]), RX_CPU)
        assert (processed, drops) == (ring["ring_enqueued"], r.rx_ring_drops), f"perf's copies: {perf_copies}"
        assert ring["ring_enqueued"] == r.sent
        assert dict((n, c) for n, c, _ in r.loss_layers)["rx ring"] == r.rx_ring_drops == r.lost
        # The counter's sequence numbers see every lost frame but those after its last one.
        assert r.unexplained == 0 and r.seq_lost <= r.lost
        # Lost: what came during the hold beyond what the ring holds (the generator runs on the
        # other CPU). Never much less: a deeper ring would have held more. More when the host also
        # stopped the receive CPU (a vCPU stop, another real-time task): then once more.
        sent_in_hold = RATE_PPS * held_s
        assert r.rx_ring_drops >= sent_in_hold - frames - TOLERANCE * sent_in_hold, (r.rx_ring_drops, held_s)
        if r.rx_ring_drops <= sent_in_hold - frames + TOLERANCE * sent_in_hold:
            return
        stops.append(f"{r.rx_ring_drops:,} lost, {sent_in_hold - frames:,.0f} expected")
        warnings.warn(f"the host held the receive CPU beyond the busy loop: {stops[-1]}")
    pytest.skip(f"the host held the receive CPU beyond the busy loop in every attempt: {'; '.join(stops)}")


@pytest.mark.parametrize("backend", declared.names_where(lambda b: not b.own_xdp))
def test_every_backend_closes_the_account_with_the_ring(binaries, ring_bed, backend):
    r = Measurer(binaries, ring_bed, TrialSetup(backend=backend, frame_len=512, engine=gen_engine())).measure(
        0.5, Rate.from_pps(RATE_PPS))
    assert (r.rx_mode, r.rx_ring, r.kernel_rx_cpu, r.napi_cpus_seen) == ("cpumap", rxmode.DEFAULT_RX_RING, RX_CPU,
                                                                         (RX_CPU,))
    assert r.rx_ring_drops is not None and r.unexplained == 0, (r.loss_layers, r.loss_remarks)
    assert sum(n for _, n, _ in r.loss_layers) == r.lost == r.sent - r.received


@pytest.mark.parametrize("backend", declared.names_where(lambda b: b.own_xdp))
def test_a_backend_with_its_own_xdp_program_runs_as_napi_on_a_ring_bed(binaries, ring_bed, backend):
    r = Measurer(binaries, ring_bed, TrialSetup(backend=backend, frame_len=512, engine=gen_engine())).measure(
        0.5, Rate.from_pps(RATE_PPS))
    assert (r.rx_mode, r.rx_ring, r.rx_ring_drops, r.napi_cpus_seen) == ("napi", rxmode.VETH_RING_FRAMES, None,
                                                                         (RX_CPU,))
    assert r.unexplained == 0 and sum(n for _, n, _ in r.loss_layers) == r.lost


@pytest.mark.parametrize("args, words", [
    (("--rx-mode", "cpumap", "--rx-ring", "0"), ("--rx-ring '0'", "1 to 16384")),
    (("--rx-mode", "cpumap", "--rx-ring", "16385"), ("--rx-ring '16385'", "1 to 16384")),
    (("--rx-mode", "cpumap", "--rx-ring", "deep"), ("--rx-ring 'deep'", "frames")),
    (("--rx-mode", "napi", "--rx-ring", "1024"), ("--rx-ring 1024", "--rx-mode cpumap")),
    (("--rx-mode", "cpumap", "--rx-ring", "1024", "--backends", "afxdp"), ("afxdp", "leave out --rx-ring")),
    (("--rx-ring", "1024", "--gen-iface", "eth0", "--cap-iface", "eth1"), ("--rx-ring 1024", "ethtool -G")),
    (("--rx-mode", "cpumap", "--gen-iface", "eth0", "--cap-iface", "eth1"), ("--rx-mode", "leave out --rx-mode")),
])
def test_bad_ring_input_is_one_line_and_leaves_nothing(args, words):
    before = capbench_namespaces()
    p = run_capbench("run", "--sizes", "64", "--duration", "1", *args, "--no-report", "--results", "/tmp/cb-nothing")
    assert_one_line_usage_error(p, "capbench", *words)
    assert left_behind(before) == set()
    assert not Path("/tmp/cb-nothing").exists()
