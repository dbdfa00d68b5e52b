"""Real trials on a real veth test bed: every frame accounted for, at every stage."""

from __future__ import annotations

import dataclasses
import json
import os
import signal

import pytest
from capbench.trial import loss_layers
from capbench.trial.accounting import layer_drops
from capbench.testbed import rxmode
from capbench.testbed.procs import ChildSet
from capbench.rates import parse_rate
from capbench.declared import backend_names, names_where
from capbench.trial.measure import Measurer, TrialSetup

from e2e_env import gen_engine, skip_without_xdp_engine, stream_interference, xdp_attached
from layer_rows import socket_drops, xsk_drops
from host_interference import interference, until_undisturbed

FRAMES = 100_000
BACKENDS = backend_names()
KERNEL_COUNTER_BACKENDS = names_where(lambda b: b.kernel_counter)
OWN_XDP_BACKENDS = names_where(lambda b: b.own_xdp)
# A polling counter (dpdk) takes its CPU whole: on this placement (gen 0, receive and counter 1)
# it starves the receive ring's thread, a loss that is the placement's (the run's note says so).
# test_e2e_dpdk captures 100,000 of 100,000 with the worker on a CPU of its own.
LOSSLESS_BACKENDS = [pytest.param(b, marks=pytest.mark.skip(reason=f"{b} polls: its lossless test gives it a CPU of "
                                                             "its own (test_e2e_dpdk)"))
                     if b in names_where(lambda b: b.polls) else b for b in BACKENDS]
# The slowed counter needs an application to slow down: the xdp ceiling counts in the kernel.
SLOWABLE = [pytest.param(b, marks=pytest.mark.skip(reason="xdp counts in the kernel: there is no application "
                                                          "to slow down, and it never drops on purpose"))
            if b == "xdp" else b for b in BACKENDS]
# Where each backend's slowed counter overflows: buffers small enough that 500 kpps
# overflow them within the second.
SLOW_CAP_ARGS = {
    "pcap": ("--buffer-size", "1M"),
    "raw": ("--buffer-size", "1M"),
    "afp-v2": ("--frame-count", "512"),
    "afp-v3": ("--block-count", "4", "--block-size", "64k"),
    "fanout": ("--block-count", "4", "--block-size", "64k"),
    "afxdp": ("--ring-size", "1024"),
    "dpdk": ("--ring-size", "64"),
}


def test_every_backend_with_an_application_has_a_small_ring():
    assert set(SLOW_CAP_ARGS) == set(BACKENDS) - set(KERNEL_COUNTER_BACKENDS)


def measure(binaries, tb, *, backend, frame_len, rate, duration_s, engine=None, app_load=None,
            count=None, cap_args=(), link_bps=10e9, procs=1):
    # An emulated 10 GbE link, so that 100 kpps of 1518 B frames are below its wire rate.
    setup = TrialSetup(backend=backend, frame_len=frame_len, engine=engine or gen_engine(), app_load=app_load, link_bps=link_bps,
                       gen_args=("--count", str(count)) if count else (), cap_args=tuple(cap_args), procs=procs)
    return Measurer(binaries, tb, setup).measure(duration_s, parse_rate(rate))


def measure_unstalled(binaries, tb, **kw):
    """A trial, run again while its own counters say the host spoiled it (host_interference)."""
    return until_undisturbed(lambda _: measure(binaries, tb, **kw), f"{kw['backend']}, {kw['frame_len']} B",
                             interference)


def measure_lossless(binaries, tb, frames=FRAMES, **kw):
    """A trial that must lose nothing, with its own checks."""
    r = measure_unstalled(binaries, tb, **kw)
    assert_nothing_lost(r, frames)
    return r


def assert_nothing_lost(r, frames=FRAMES):
    account = dict(sent=r.sent, delivered=r.delivered, backlog=r.backlog_drops, layers=r.layers, received=r.received, unexplained=r.unexplained, kernel=r.raw["cap"]["kernel"],
                   gen_late=r.gen_late, app_cpu_pct=r.app_cpu_pct)
    assert r.sent == frames, account
    assert r.delivered == frames, account
    assert r.received == frames, account
    assert (r.lost, r.seq_lost, r.unexplained) == (0, 0, 0)
    assert (r.backlog_drops, layer_drops(r.layers), r.link_drops, r.app_drops) == (0, 0, 0, 0), account
    assert r.iface_rx_dropped == 0, account  # the capture veth's own drop counter agrees
    # The kernel counter (xdp) keeps the highest number per stream: gaps, but no duplicates or
    # reordering, which it leaves out (None) rather than claim zeros.
    seq = None if r.backend in KERNEL_COUNTER_BACKENDS else 0
    assert (r.duplicates, r.reordered) == (seq, seq)
    assert r.loss_pct == 0.0


# Socket buffers that hold 100 ms at 100 kpps of 1518 B frames, like the e2e backlog
# (conftest.E2E_BACKLOG): libpcap's default of 2 MiB holds 13 ms of them, less than
# the vCPU stalls of the machines this runs on, afp-v2's 8 MiB 41 ms. afp-v3's default
# ring is 32 MiB, raw's socket buffer 64 MiB.
ROOMY = {"pcap": ("--buffer-size", "32M"), "afp-v2": ("--frame-count", "16384")}


@pytest.mark.parametrize("backend", LOSSLESS_BACKENDS)
@pytest.mark.parametrize("frame_len", [64, 512, 1518])
def test_100k_frames_at_100kpps_all_received(binaries, tb, backend, frame_len):
    # 100,000 frames at 100 kpps take 1 s; the generator stops at the count.
    r = measure_lossless(binaries, tb, backend=backend, frame_len=frame_len, rate="100kpps", duration_s=3, count=FRAMES,
                cap_args=ROOMY.get(backend, ()))
    assert r.rx_pps == pytest.approx(100_000, rel=0.01)
    assert r.achieved_pps == pytest.approx(100_000, rel=0.001)
    assert not r.invalid_offered_load
    if backend not in KERNEL_COUNTER_BACKENDS:  # the counter timed every frame against its TX stamp
        assert r.rx_clock in ("kernel", "read") and 0 < r.latency["p50_ns"] <= r.latency["max_ns"]
    assert r.raw["cap"]["kernel"]["drops"] == 0
    assert r.raw["cap"]["foreign"] == 0
    # The default test bed (--rx-mode cpumap): the ring's thread, or for a backend with its own XDP
    # program the veth's NAPI thread, runs on the receive CPU for every backend.
    assert (r.gen_cpu, r.cap_cpu, r.kernel_rx_cpu) == (0, 1, 1)
    assert (r.rx_mode, r.napi_cpus_seen) == ("napi" if backend in OWN_XDP_BACKENDS else "cpumap", (1,))
    assert 0 < r.kernel_cpu_pct < 100
    if backend in OWN_XDP_BACKENDS:
        # the backend's own XDP program counted "delivered"; capbench-xdpcount was not started
        assert r.raw["cap"]["delivered"] == FRAMES and "xdpcount" not in r.raw
        assert r.raw["cap"]["xdp_mode"] == "native"
    if backend == "afxdp":
        assert r.raw["cap"]["xdp_bind"] == "copy"  # auto on veth: no zero-copy there
        assert r.raw["cap"]["kernel"]["rx_ring_full"] == r.raw["cap"]["kernel"]["rx_dropped"] == 0
    if backend == "xdp":
        assert r.raw["cap"]["max_seq"] == FRAMES - 1 and r.raw["cap"]["streams"] == 1


def test_pcap_dispatch_api(binaries, tb):
    r = measure_lossless(binaries, tb, backend="pcap", frame_len=128, rate="100kpps", duration_s=3, count=FRAMES,
                cap_args=("--pcap-api", "dispatch", *ROOMY["pcap"]))
    assert r.raw["cap"]["pcap_api"] == "dispatch"


def test_afpacket_engine(binaries, tb):
    r = measure_lossless(binaries, tb, backend="afp-v3", frame_len=256, rate="100kpps", duration_s=3, count=FRAMES,
                engine="afpacket")
    assert r.achieved_pps == pytest.approx(100_000, rel=0.001)


@pytest.mark.parametrize("backend", SLOWABLE)
def test_slow_counter_loses_and_every_loss_is_explained(binaries, tb, backend):
    # 4 us of work per packet caps the counter near 250 kpps; 500 kpps for 1 s
    # overflows any ring, so the kernel drops and counts what the counter cannot take.
    r = measure(binaries, tb, backend=backend, frame_len=64, rate="500kpps", duration_s=1, app_load="spin:4000",
                cap_args=SLOW_CAP_ARGS[backend])
    assert r.lost > 10_000, r
    own = layer_drops(r.layers)  # the backend's own rows, as its C file declares them (the summary's account)
    stages = (r.lost, r.link_drops, r.backlog_drops, r.layers, r.app_drops, r.loss_layers)
    assert r.unexplained == 0, stages
    assert r.lost == r.link_drops + r.backlog_drops + own + r.app_drops, stages
    assert sum(n for _, n, _ in r.loss_layers) == r.lost  # the account's lines hold every loss, none twice
    assert own == sum(row["packets"] for row in r.raw["cap"]["account"] if not row.get("cross_check")), r.layers
    # The capture veth's own rx_dropped holds the link's drops (its ring was full), the backlog's
    # (the kernel charges the device) and the failed redirects into a full AF_XDP ring: no more. The
    # cpumap model's ring is no device's: its drops are its tracepoint's (rx_ring_drops).
    # dpdk's net_af_xdp: its port's imissed is its AF_XDP socket's rx_dropped (the fill ring found
    # empty), which the veth charges to rx_dropped as it does afxdp's; its "AF_XDP RX ring" row is
    # among xsk_ring_drops.
    af_xdp_port = backend == "dpdk" and r.raw["cap"].get("dpdk_driver") == "net_af_xdp"
    imissed = sum(row.packets for row in r.layers if "imissed" in row.counter) if af_xdp_port else 0
    assert r.iface_rx_dropped == (r.link_drops - (r.rx_ring_drops or 0) + r.backlog_drops
                                  + loss_layers.xsk_ring_drops(r) + imissed), (r.iface_rx_dropped, stages)
    layers = {name: (n, counter) for name, n, counter in r.loss_layers}
    if backend == "afxdp":
        # AF_XDP has no socket buffer: the frames that found no room are counted in XDP_STATISTICS,
        # each cause on its own line.
        k = r.raw["cap"]["kernel"]
        assert socket_drops(r.layers) == 0 and own > 0
        assert xsk_drops(r.layers) == own == k["rx_dropped"] + k["rx_ring_full"]
        assert k["rx_fill_ring_empty_descs"] <= k["rx_dropped"]  # an empty fill ring is one cause of rx_dropped
        assert layers.get("AF_XDP RX ring", (0, ""))[0] == k["rx_ring_full"]
        fill = layers.get("AF_XDP fill ring", (0, ""))[0]
        assert fill == k["rx_fill_ring_empty_descs"]
        assert layers.get("AF_XDP rx_dropped", (0, ""))[0] == k["rx_dropped"] - fill
    elif backend == "dpdk":
        # A DPDK port's own layers: its receive descriptors (imissed) held no room; the rows name
        # DPDK's counters (backend_dpdk.c).
        declared = {row["counter"]: row["packets"] for row in r.raw["cap"]["account"]}
        assert own > 0 and any("imissed" in c for c in declared), declared
    else:
        assert socket_drops(r.layers) > 0  # the ring overflowed: the kernel's own count says so
        # The socket's line names the counter the backend declares for it (pcap: pcap_stats
        # ps_drop; the AF_PACKET backends: PACKET_STATISTICS tp_drops).
        declared = {row["layer"]: row["counter"] for row in r.raw["cap"]["account"]}
        assert layers["socket"][1].startswith(declared["socket"])
        assert declared["socket"] == ("pcap_stats ps_drop" if backend == "pcap" else "PACKET_STATISTICS tp_drops")
    # The kernel's drop counters against the counter's sequence numbers: a remark when they differ.
    kernel, _ = loss_layers.kernel_drops(r)
    said = [x for x in r.loss_remarks if "the sequence numbers show" in x and "kernel's drop counters" in x]
    assert len(said) == (r.seq_lost is not None and kernel != r.seq_lost), (kernel, r.seq_lost, r.loss_remarks)
    assert r.sent - r.received == r.lost
    assert 0 < r.loss_pct < 100
    # The spin shows as application load: every frame received cost the counter at least
    # 4 us of CPU, whatever else shared CPU 1 (the load window also holds start-up and
    # drain, so the bound is a floor). 10 % below it allows for the 10 ms clock ticks.
    spun_pct = 100 * r.received * 4e-6 / r.window_s
    assert r.app_cpu_pct > 0.9 * spun_pct, (r.app_cpu_pct, spun_pct, r.received)


@pytest.mark.parametrize("n", [2, 4])
def test_fanout_lb_splits_the_frames_over_the_workers(binaries, tb, n):
    # Round robin: each of the n pinned workers gets every n-th frame; the summary
    # merges their sequence numbers, so the totals are exact. Four workers on this
    # 2-CPU machine share the CPUs (consecutive from --cpu 1, wrapping around).
    r = measure_lossless(binaries, tb, backend="fanout", frame_len=64, rate="100kpps", duration_s=3, count=FRAMES,
                cap_args=("--workers", str(n), "--fanout-mode", "lb"))
    cap = r.raw["cap"]
    assert cap["fanout_mode"] == "lb"
    workers = cap["workers"]
    ncpu = os.cpu_count()  # capbench-cap wraps around the configured CPUs
    assert [w["worker"] for w in workers] == list(range(n))
    assert [w["cpu"] for w in workers] == [(1 + i) % ncpu for i in range(n)]
    assert sum(w["packets"] for w in workers) == cap["packets"] == FRAMES
    assert sum(w["received"] for w in workers) == FRAMES
    for w in workers:
        assert abs(w["received"] - FRAMES // n) <= 1, workers
        assert w["kernel_drops"] == 0
    assert cap["kernel"]["packets"] == FRAMES


def test_fanout_hash_keeps_one_flow_on_one_worker(binaries, tb):
    r = measure_lossless(binaries, tb, backend="fanout", frame_len=64, rate="100kpps", duration_s=2, count=20_000,
                cap_args=("--workers", "2"), frames=20_000)
    assert r.raw["cap"]["fanout_mode"] == "hash"
    assert sorted(w["received"] for w in r.raw["cap"]["workers"]) == [0, 20_000]


def test_foreign_frames_are_counted_apart(binaries, tb):
    """Frames without the stamp (here: raw frames from the generator side) count as foreign."""
    import json
    import subprocess
    import sys

    from capbench.testbed import netns
    from capbench.testbed.procs import ChildSet

    sender = (
        "import socket,sys\n"
        "s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW)\n"
        f"s.bind(({tb.gen_if!r},0))\n"
        "f=bytes.fromhex('02cb00000002'+'02cb00000101'+'88b5')+bytes(46)\n"
        "[s.send(f) for _ in range(25)]\n"
    )
    with ChildSet() as kids:
        cap = kids.start("capbench-cap", [str(binaries.cap), "--iface", tb.cap_if, "--backend", "afp-v3"],
                         netns_name=tb.cap_ns)
        cap.wait_for("ready", 5)
        subprocess.run(netns.exec_argv(tb.gen_ns, [sys.executable, "-c", sender]), check=True, timeout=30)
        import time

        time.sleep(0.2)
        kids.stop_all()
        summary = cap.summary()
    assert summary["foreign"] == 25, json.dumps(summary)
    assert summary["received"] == 0 and summary["packets"] == 25


def test_afxdp_ring_full_drops_are_counted_apart(binaries, tb):
    """More UMEM frames than RX descriptors: a slowed reader fills the RX ring before the fill
    ring runs dry, and the kernel counts those drops in rx_ring_full, not in rx_dropped."""
    r = measure(binaries, tb, backend="afxdp", frame_len=64, rate="500kpps", duration_s=1, app_load="spin:4000",
                cap_args=("--ring-size", "256", "--frame-count", "4096"))
    k = r.raw["cap"]["kernel"]
    assert r.lost > 10_000, r
    assert k["rx_ring_full"] > 0
    assert xsk_drops(r.layers) == k["rx_ring_full"] + k["rx_dropped"]
    assert r.unexplained == 0, (r.lost, r.link_drops, r.backlog_drops, r.layers, k)
    # the RX ring's drops have their own line, named by their XDP_STATISTICS counter
    (line,) = [x for x in r.loss_layers if x[0] == "AF_XDP RX ring"]
    assert line[1] == k["rx_ring_full"] and "rx_ring_full" in line[2]


def afxdp_two_senders(binaries, tb, *cap_args: str) -> tuple[dict, dict]:
    """40,001 frames from two generator threads on CPUs 0 and 1, so on the capture veth's
    receive queues 0 and 1 (one per CPU), captured by afxdp with `cap_args`:
    (generator, counter) summaries. Sent again when the host spoiled it: frames lost before
    afxdp's XDP program saw them (the veth's receive ring, drained by a NAPI thread the host
    stopped), none in the sockets (e2e_env.stream_interference)."""
    return until_undisturbed(
        lambda _: _afxdp_two_senders_once(binaries, tb, *cap_args), "afxdp, two senders",
        lambda s: stream_interference((*s, {"capbench": s[1].get("xdp", {}).get("packets", 0)})))


def _afxdp_two_senders_once(binaries, tb, *cap_args: str) -> tuple[dict, dict]:
    import time

    with ChildSet() as kids:
        cap = kids.start("capbench-cap", [str(binaries.cap), "--iface", tb.cap_if, "--backend", "afxdp",
                                          "--cpu", "1", *cap_args], netns_name=tb.cap_ns)
        cap.wait_for("ready", 5)
        if tb.rx_mode != "rps":  # afxdp's own XDP program runs in the veth's NAPI (a cpumap bed's too)
            # Generator threads spin on both CPUs while they pace: the NAPI threads get real-time
            # priority so that they take their turn on CPU 1 when frames wait (a NIC's softirq would).
            rxmode.place(tb.cap_ns, tb.cap_if, 1, rxmode.NapiSched.parse("fifo:50"))
        gen = kids.start("capbench-gen", [str(binaries.gen), "--iface", tb.gen_if, "--dst-mac", tb.dst_mac,
                                          "--trailer", "0", "--size", "64", "--rate", "100kpps", "--count", "40001",
                                          "--threads", "2", "--cpus", "0,1", "--engine", gen_engine(shared_cpu=True)],
                         netns_name=tb.gen_ns)
        gen.wait(30)
        time.sleep(0.3)
        kids.stop_all()
        return gen.summary(), cap.summary()


def test_afxdp_binds_every_queue_with_a_worker_each(binaries, tb):
    gen, cap = afxdp_two_senders(binaries, tb, "--queue", "all")
    assert gen["sent"] == 40_001
    assert cap["queues"] == [0, 1] and cap["xdp"]["not_redirected"] == 0
    assert cap["received"] == 40_001 and cap["lost"] == 0 and cap["streams"] == 2
    # Worker i reads queue i, on consecutive CPUs from --cpu 1.
    assert [(w["worker"], w["cpu"]) for w in cap["workers"]] == [(0, 1), (1, 0)]
    assert sorted(w["received"] for w in cap["workers"]) == [20_000, 20_001]
    assert cap["kernel"]["packets"] == 40_001 and cap["kernel_drops"] == 0


def test_afxdp_on_one_queue_leaves_the_other_to_the_stack_and_says_so(binaries, tb):
    gen, cap = afxdp_two_senders(binaries, tb, "--queue", "1", "--worker-cpus", "0")
    assert cap["queues"] == [1] and [w["cpu"] for w in cap["workers"]] == [0]
    # CPU 1's thread sent the second of each pair: 20,000 frames on queue 1.
    assert cap["received"] == 20_000
    assert cap["xdp"]["not_redirected"] == 20_001 == cap["kernel_drops"]
    assert cap["xdp"]["packets"] == gen["sent"] == 40_001


def test_a_trial_binds_the_queue_its_generator_sends_on(binaries, tb):
    # The generator on CPU 1 sends on queue 1; the trial's afxdp binds that queue. The receive
    # work goes to CPU 0 with the counter: the generator spins on its CPU while it paces, and a
    # NAPI thread beside it would overflow the ring (a placement that shares the generator's CPU).
    setup = TrialSetup(backend="afxdp", frame_len=64, link_bps=10e9, gen_cpu=1, cap_cpu=0, engine=gen_engine(),
                       gen_args=("--count", "20000"))
    m = Measurer(binaries, dataclasses.replace(tb, rx_cpu=0), setup)
    assert m.xsk_queue_args() == ("--queue", "1")
    # Measured again when the host spoiled it (the NAPI thread stopped: loss in the veth's ring only).
    r = until_undisturbed(lambda _: m.measure(2, parse_rate("100kpps")), "afxdp on queue 1", interference)
    assert r.raw["cap"]["queues"] == [1]
    assert (r.sent, r.received, r.lost, r.unexplained) == (20_000, 20_000, 0, 0), r.loss_layers
    unpinned = Measurer(binaries, tb, dataclasses.replace(setup, gen_cpu=None))
    assert unpinned.xsk_queue_args() == ("--queue", "all")


def test_afxdp_busy_poll(binaries, tb):
    """Busy polling works here and every frame is accounted for.

    Not "nothing lost": with SO_PREFER_BUSY_POLL the kernel leaves the veth's NAPI work to the
    polling counter, so a counter starved of its CPU (other test runs pin there too) lets the
    veth's ring overflow. Those frames never reach the XDP program: link drops, explained."""
    r = measure(binaries, tb, backend="afxdp", frame_len=64, rate="100kpps", duration_s=3, count=FRAMES,
                cap_args=("--busy-poll", "--batch", "32"))
    assert r.raw["cap"]["busy_poll"] is True and r.raw["cap"]["batch"] == 32
    assert r.sent == FRAMES and r.received > 0
    assert r.unexplained == 0, (r.lost, r.link_drops, r.layers, r.raw["cap"]["kernel"])
    assert r.received == r.delivered - xsk_drops(r.layers)


@pytest.mark.parametrize("backend", sorted(OWN_XDP_BACKENDS))
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGKILL", "--duration"])
def test_no_xdp_program_is_left_behind(binaries, tb, backend, how):
    """Whatever ends capbench-cap, its XDP program goes with it (a bpf_link dies with its process)."""
    argv = [str(binaries.cap), "--iface", tb.cap_if, "--backend", backend]
    if how == "--duration":
        argv += ["--duration", "0.3"]
    with ChildSet() as kids:
        cap = kids.start("capbench-cap", argv, netns_name=tb.cap_ns)
        cap.wait_for("ready", 5)
        assert xdp_attached(tb.cap_ns) == [tb.cap_if]
        if how != "--duration":
            cap.signal(getattr(signal, how))
        rc = cap.wait(10)
    assert rc == (-signal.SIGKILL if how == "SIGKILL" else 0)
    if how != "SIGKILL":
        assert cap.summary()["backend"] == backend
    assert xdp_attached(tb.cap_ns) == []


@pytest.mark.parametrize("argv, message", [
    (["--backend", "afxdp", "--xdp-bind", "zerocopy"], "has no zero-copy AF_XDP"),
    (["--backend", "afxdp", "--queue", "7"], "receive queue"),  # the test bed has one per CPU
    (["--backend", "afxdp", "--queue", "0,0"], "bad --queue '0,0'"),
    (["--backend", "afxdp", "--queue", "first"], "bad --queue 'first'"),
    (["--backend", "afxdp", "--queue", "all", "--worker-cpus", "0"], "one CPU per worker"),
    (["--backend", "pcap", "--worker-cpus", "0"], "--worker-cpus is an option of --backend fanout, afxdp and dpdk"),
    (["--backend", "afxdp", "--ring-size", "1000"], "bad --ring-size"),
    (["--backend", "xdp", "--app-load", "spin:100"], "--app-load does not apply"),
    (["--backend", "pcap", "--busy-poll"], "options of --backend afxdp"),
])
def test_bad_xdp_input_is_one_line_and_leaves_nothing_attached(binaries, tb, argv, message):
    import subprocess

    from capbench.testbed import netns

    p = subprocess.run(netns.exec_argv(tb.cap_ns, [str(binaries.cap), "--iface", tb.cap_if, *argv]),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, p
    assert len(p.stderr.splitlines()) == 1 and message in p.stderr, p.stderr
    assert p.stdout == ""
    assert xdp_attached(tb.cap_ns) == []


@pytest.mark.parametrize("backend, procs", [("pcap", 2), ("afp-v3", 3)])
def test_several_capture_processes_each_see_every_frame(binaries, tb, backend, procs):
    r = measure_unstalled(binaries, tb, backend=backend, frame_len=64, rate="100kpps", duration_s=3, count=FRAMES,
                          cap_args=ROOMY.get(backend, ()), procs=procs)
    assert (r.procs, r.proc_received) == (procs, (FRAMES,) * procs)
    assert r.unexplained == 0 and len(r.raw["caps"]) == procs


def test_zlib_load_compresses_every_packet(binaries, tb):
    # seed 001's packzip: each packet it received copied and compressed; the counter says how much
    # went in and out. (Its subject is the work per packet, not the loss: another run on the counter's
    # CPU slows the compression and its socket drops what it cannot take, which the account holds.)
    r = measure_unstalled(binaries, tb, backend="afp-v3", frame_len=512, rate="20kpps", duration_s=2, count=20_000,
                          app_load="zlib:6")
    assert r.sent == 20_000 and r.received > 0 and r.unexplained == 0, (r.lost, r.layers)
    z = r.raw["cap"]["zlib"]
    assert z["level"] == 6 and z["bytes_in"] == r.received * (512 - 4)
    assert 0 < z["bytes_out"] < z["bytes_in"]  # the test frames' payload pattern compresses


def _pcap_seqs(path) -> list[int]:
    """The stamp's sequence numbers of a pcap (nanosecond magic) or pcapng file, in file order."""
    import struct

    data = path.read_bytes()
    frames = []
    if data[:4] == struct.pack("<I", 0xA1B23C4D):
        off = 24
        while off < len(data):
            _, _, caplen, _ = struct.unpack_from("<IIII", data, off)
            frames.append(data[off + 16: off + 16 + caplen])
            off += 16 + caplen
    else:
        off = 0
        while off < len(data):
            btype, blen = struct.unpack_from("<II", data, off)
            if btype == 6:
                caplen = struct.unpack_from("<I", data, off + 20)[0]
                frames.append(data[off + 28: off + 28 + caplen])
            off += blen
    return [int.from_bytes(f[44:52], "little") for f in frames]


@pytest.mark.parametrize("suffix", ["pcap", "pcapng"])
def test_written_capture_reads_back_in_order(binaries, tb, tmp_path, suffix):
    import shutil
    import subprocess

    from e2e_env import run_stream

    out = tmp_path / f"capture.{suffix}"
    gen, cap, _ = run_stream(binaries, tb, ["--size", "imix:simple", "--rate", "50kpps", "--link", "10g",
                                            "--count", "20000", "--cpu", "0", "--dst-mac", tb.dst_mac],
                             cap_args=("--write", str(out)))
    assert cap["received"] == 20_000 and cap["write"]["records"] == 20_000
    assert _pcap_seqs(out) == list(range(20_000))  # every frame, in the order the generator sent them
    for tool, argv in (("tcpdump", ["tcpdump", "-nn", "-r", str(out)]), ("tshark", ["tshark", "-r", str(out)])):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing: `make test` installs it")
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert len(p.stdout.splitlines()) == 20_000, tool


def test_write_refuses_several_workers(binaries, tb, tmp_path):
    import subprocess

    from capbench.testbed import netns

    p = subprocess.run(netns.exec_argv(tb.cap_ns, [str(binaries.cap), "--iface", tb.cap_if, "--backend", "fanout",
                                                   "--workers", "2", "--write", str(tmp_path / "x.pcap")]),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "one worker" in p.stderr
    assert not (tmp_path / "x.pcap").exists()


# Backends that pass every check of the options and then fail to open on the test bed.
OPEN_FAILURES = [
    pytest.param(("--backend", "afxdp", "--xdp-bind", "zerocopy"), "zero-copy", id="veth-has-no-zerocopy"),
]


def _run_counter(binaries, tb, *args: str):
    import subprocess

    from capbench.testbed import netns

    return subprocess.run(netns.exec_argv(tb.cap_ns, [str(binaries.cap), "--iface", tb.cap_if, *args]),
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args, message", OPEN_FAILURES)
def test_write_leaves_an_existing_file_alone_when_the_capture_cannot_open(binaries, tb, tmp_path, args, message):
    mine = tmp_path / "precious.pcap"
    mine.write_bytes(b"precious\n" * 1000)
    before = mine.stat()
    p = _run_counter(binaries, tb, *args, "--write", str(mine))
    assert p.returncode == 2, p
    assert len(p.stderr.splitlines()) == 1 and message in p.stderr, p.stderr
    assert p.stdout == ""
    assert mine.read_bytes() == b"precious\n" * 1000
    assert mine.stat().st_mtime_ns == before.st_mtime_ns
    assert xdp_attached(tb.cap_ns) == []


@pytest.mark.parametrize("args, message", OPEN_FAILURES)
def test_write_leaves_no_new_file_when_the_capture_cannot_open(binaries, tb, tmp_path, args, message):
    p = _run_counter(binaries, tb, *args, "--write", str(tmp_path / "new.pcap"))
    assert p.returncode == 2 and message in p.stderr, p
    assert list(tmp_path.iterdir()) == []


def test_write_to_a_path_that_cannot_be_created_is_one_line_before_anything_is_attached(binaries, tb, tmp_path):
    path = tmp_path / "no-such-dir" / "x.pcap"
    p = _run_counter(binaries, tb, "--backend", "afxdp", "--write", str(path))
    assert p.returncode == 2, p
    assert p.stderr.splitlines() == [f"capbench-cap: cannot write {path}: No such file or directory: "
                                     "choose another --write file"]
    assert p.stdout == ""
    assert xdp_attached(tb.cap_ns) == []
    assert not path.parent.exists()


@pytest.mark.parametrize("suffix", ["pcap", "pcapng"])
def test_write_replaces_an_existing_file_once_the_capture_runs(binaries, tb, tmp_path, suffix):
    import json
    import struct

    out = tmp_path / f"old.{suffix}"
    out.write_bytes(b"precious\n" * 1000)
    p = _run_counter(binaries, tb, "--backend", "afp-v3", "--duration", "0.3", "--write", str(out))
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout.splitlines()[-1])
    data = out.read_bytes()
    assert b"precious" not in data  # truncated, not overwritten in place
    magic = struct.pack("<I", 0xA1B23C4D) if suffix == "pcap" else struct.pack("<I", 0x0A0D0D0A)
    assert data[:4] == magic
    if summary["write"]["records"] == 0:  # the test bed is quiet: the header alone
        assert len(data) == (24 if suffix == "pcap" else 28 + 32)


def test_the_xdp_engines_probe_sends_nothing(binaries, tb):
    """capbench-gen's xdp engine runs a drop-only program on one live frame when it opens:
    the wire and the counts show exactly the frames asked for."""
    from e2e_env import run_stream

    skip_without_xdp_engine()
    gen, cap, xdp = run_stream(binaries, tb, ["--engine", "xdp", "--rate", "50kpps", "--count", "5000", "--cpu", "0",
                                              "--dst-mac", tb.dst_mac])
    assert gen["engine"] == "xdp" and gen["sent"] == 5000
    assert xdp["packets"] == xdp["capbench"] == 5000  # every frame on the wire, no probe among them
    assert (cap["packets"], cap["received"], cap["duplicates"], cap["foreign"]) == (5000, 5000, 0, 0)


def test_a_lossy_trial_keeps_its_account(binaries, tb):
    r = measure(binaries, tb, backend="afp-v3", frame_len=64, rate="500kpps", duration_s=1, app_load="spin:4000",
                cap_args=SLOW_CAP_ARGS["afp-v3"])
    assert r.lost > 0
    counted = {name: n for name, n, _ in r.loss_layers}
    assert sum(counted.values()) == r.lost - r.unexplained
    assert r.unexplained == 0, (r.lost, r.loss_layers, r.loss_remarks)
    assert counted["socket"] == socket_drops(r.layers)
    assert counted.get("application", 0) == r.app_drops


def test_zlib9_at_a_high_rate_loses_and_every_loss_is_attributed(binaries, tb):
    # Compressing every 1518 B frame at level 9 costs far more than 1.25 us, the gap at 800 kpps.
    r = measure(binaries, tb, backend="afp-v3", frame_len=1518, rate="800kpps", duration_s=1, app_load="zlib:9",
                cap_args=SLOW_CAP_ARGS["afp-v3"])
    assert r.lost > 0 and r.unexplained == 0, (r.lost, r.loss_layers, r.loss_remarks)
    assert sum(n for _, n, _ in r.loss_layers) == r.lost
    assert r.raw["cap"]["zlib"]["level"] == 9


def test_a_rate_the_generator_cannot_hold_is_invalid_not_lossy(binaries, tb):
    # 100 % of 10 GbE at 64 B is 14.9 Mpps, far beyond this generator: the trial says so.
    r = measure(binaries, tb, backend="afp-v3", frame_len=64, rate="100%", duration_s=1)
    assert r.invalid_offered_load
    assert r.achieved_pps < 0.999 * r.offered_pps and r.raw["gen"]["offered_share"] < 0.999
    assert r.gen_late > 0


def test_app_load_none_leaves_out_what_it_did_not_count(binaries, tb):
    """--app-load none reads no stamp: no foreign count and no sequence fields, not zeros."""
    p = _run_counter(binaries, tb, "--backend", "afp-v3", "--app-load", "none", "--duration", "0.3")
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout.splitlines()[-1])
    assert summary["type"] == "summary" and summary["stamps_read"] is False
    assert not {"foreign", "lost", "duplicates", "reordered", "too_old", "max_seq", "streams"} & set(summary)
