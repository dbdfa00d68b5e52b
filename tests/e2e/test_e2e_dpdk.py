"""capbench-cap's dpdk backend on a real veth test bed: net_af_xdp (with capbench's own XDP
program) and net_af_packet capture every frame through `capbench run`, and nothing of DPDK's is
left behind: no XDP program, no EAL runtime directory, no process; also after SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from capbench import declared
from capbench.testbed import cpu, netns

from e2e_env import (assert_run_measured, gen_engine, capbench_namespaces, decided_trials, interrupted_capbench, left_behind,
                     run_capbench, xdp_attached)
from host_interference import spoiled, until_undisturbed

# EAL's runtime directories, as root (the backend removes its own, and a killed one's next time).
EAL_RUNTIME = Path("/var/run/dpdk")
FRAMES = 100_000


@pytest.fixture(scope="module", autouse=True)
def dpdk_built(binaries):
    absent = declared.backend("dpdk").absent
    if absent:
        pytest.skip(f"the dpdk backend is not built: {absent}")


def eal_dirs() -> set[str]:
    return {p.name for p in EAL_RUNTIME.glob("capbench-*")} if EAL_RUNTIME.is_dir() else set()


@pytest.mark.parametrize("driver", ["af_xdp", "af_packet"])
def test_captures_every_frame(tmp_path, driver):
    # 100,000 frames at 50 kpps. The worker polls its CPU (100 %): it gets CPU 1 alone, and the
    # capture veth's receive work (its NAPI thread) runs on CPU 0 with the generator, so the
    # polling never starves the kernel's side of the rings; real-time, so that other work on a
    # busy host does not hold it past the veth ring's 5 ms (measured: without, 15-50 % of the
    # frames lost in that ring while other tests ran, with afxdp too; with, none).
    before_ns, before_dirs = capbench_namespaces(), eal_dirs()

    def attempt(i: int) -> tuple[Path, list[dict]]:
        results = tmp_path / f"r{i}"
        p = run_capbench("run", "--backends", "dpdk", "--backend-args", f"dpdk=--dpdk-driver {driver}",
                         "--sizes", "64", "--rate", "50kpps", "--duration", "2", "--gen-cpu", "0", "--rx-cpu", "0",
                         "--cap-cpu", "1", "--napi-sched", "fifo:50", "--results", str(results), "--no-report", timeout=200)
        assert_run_measured(p)
        (d,) = [x for x in results.iterdir() if x.is_dir()]
        return d, decided_trials(d / "trials.jsonl")

    _, trials = until_undisturbed(attempt, f"the dpdk backend ({driver})", lambda r: spoiled(r[1]))
    (t,) = trials
    cap = t["raw"]["cap"]
    assert cap["dpdk_driver"] == f"net_{driver}" and cap["polls"] is True, cap
    # At 50 kpps most of the worker's polls find nothing: the record says how much of its CPU that was.
    assert t["idle_poll_pct"] == cap["idle_poll_pct"] and 50 < t["idle_poll_pct"] < 100, t["idle_poll_pct"]
    assert t["sent"] == FRAMES and t["received"] == FRAMES and t["lost"] == 0, t
    if driver == "af_xdp":  # capbench's own XDP program counted every frame that reached the interface
        assert cap["delivered"] == FRAMES and cap["xdp"]["capbench"] == FRAMES, cap
    else:  # net_af_packet has none: the test bed's counter (capbench-xdpcount) is on the interface
        assert "xdp" not in cap and "delivered" not in cap and t["delivered"] == FRAMES, t
    assert cap["imissed"] == cap["rx_nombuf"] == cap["ierrors"] == 0, cap
    assert left_behind(before_ns) == set()
    assert eal_dirs() <= before_dirs
    assert not xdp_attached(), "an XDP program was left on an interface of capbench's namespace"


def stream(binaries, tb, driver: str, frames: int, rate: str, *cap_args: str,
           pin: tuple[str, ...] = ("--cpu", "0"), wrap: tuple[str, ...] = ()) -> tuple[dict, dict]:
    """`frames` at `rate` to a dpdk counter: (generator, counter) summaries. The worker polls CPU 0;
    the capture veth's receive work and the generator are on CPU 1 (the test bed's rx_cpu), so
    the frames arrive on the veth's receive queue 1 (the sender's CPU), which net_af_xdp binds.
    net_af_packet attaches no XDP program: as in a run, capbench-xdpcount is on the interface (its
    program gives the veth's queue the NAPI instance the generator's redirected frames need), and
    its count is the counter's "delivered"."""
    from capbench.testbed.procs import ChildSet

    with ChildSet() as kids:
        xdp = None
        if driver == "af_packet":
            xdp = kids.start("capbench-xdpcount", [str(binaries.xdpcount), "--iface", tb.cap_if], netns_name=tb.cap_ns)
            xdp.wait_for("ready", 10)
        cap = kids.start("capbench-cap", [*wrap, str(binaries.cap), "--iface", tb.cap_if, "--backend", "dpdk",
                                          "--dpdk-driver", driver, *pin, *cap_args,
                                          *(["--queue", "1"] if driver == "af_xdp" else [])],
                         netns_name=tb.cap_ns)
        cap.wait_for("ready", 10)
        gen = kids.start("capbench-gen", [str(binaries.gen), "--iface", tb.gen_if, "--cpu", "1", "--trailer", "0",
                                          "--dst-mac", tb.dst_mac, "--rate", rate, "--count", str(frames),
                                          "--engine", gen_engine()],
                         netns_name=tb.gen_ns)
        gen.wait(30)
        time.sleep(0.5)  # the worker reads what its ring still holds
        kids.stop_all()
        summary = cap.summary()
        if xdp is not None:
            summary["delivered"] = xdp.summary()["packets"]
        return gen.summary(), summary


def judge(r: tuple[dict, dict]) -> str | None:
    """The host's doing: frames lost before the capture veth's XDP hook (its receive ring)."""
    gen, cap = r
    short = gen["sent"] - cap["delivered"]
    return f"{short:,} frames lost before the capture veth's XDP hook" if short else None


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_writes_what_it_reads(binaries, tb, tmp_path, fmt):
    out = tmp_path / f"dpdk.{fmt}"
    gen, cap = until_undisturbed(lambda _: stream(binaries, tb, "af_xdp", 5_000, "50kpps", "--write", str(out)),
                                 f"dpdk --write .{fmt}", judge)
    assert cap["received"] == 5_000 and cap["write"]["records"] == cap["packets"], cap
    assert cap["write"]["format"] == fmt
    info = subprocess.run(["capinfos", "-M", "-c", "-t", str(out)], capture_output=True, text=True, check=True)
    assert f"Number of packets:   {cap['packets']}" in info.stdout, info.stdout
    assert ("pcapng" in info.stdout.lower()) == (fmt == "pcapng"), info.stdout


def test_each_queue_is_polled_and_accounted(binaries, tb):
    # net_af_packet with two queues (two sockets in a fanout group, which DPDK 22.11 fills by flow
    # hash: capbench-gen's one flow lands on one of them). Both workers poll CPU 0 by turns, apart
    # from the generator and the receive work on CPU 1. Each queue's counts are its own: they add
    # up to the port's, and the queue that got nothing spent all of its polling idle.
    # (--worker-cpus takes distinct CPUs: the process is put on CPU 0 and its workers left unpinned.)
    gen, cap = until_undisturbed(lambda _: stream(binaries, tb, "af_packet", 5_000, "20kpps", "--queue", "0-1",
                                                  pin=(), wrap=("taskset", "-c", "0")), "dpdk with two queues", judge)
    assert cap["received"] == 5_000 and cap["kernel_drops"] == 0, cap
    queues, workers = cap["queues"], cap["workers"]
    assert [q["queue"] for q in queues] == [0, 1] and len(workers) == 2 and cap["packet_sockets"] == 2, cap
    assert sum(q["ipackets"] for q in queues) == cap["packets"] == sum(w["packets"] for w in workers), cap
    assert sum(w["received"] for w in workers) == 5_000
    for q, w in zip(queues, workers):
        assert q["ipackets"] == w["packets"] and q["bursts"] >= q["empty_bursts"] > 0, (q, w)
        assert w["kernel_drops"] == 0 and [r["layer"] for r in w["account"]] == [
            r["layer"] for r in cap["account"]], w
        assert 0 < q["idle_poll_pct"] <= 100 and q["poll_s"] > 0, q
    idle = [q for q in queues if q["ipackets"] == 0]
    for q in idle:  # the queue the flow did not hash to: every burst empty, all of its time idle polling
        assert q["empty_bursts"] == q["bursts"] and q["idle_poll_pct"] == 100.0, q
    assert 0 < cap["idle_poll_pct"] <= 100


def test_a_second_process_with_the_same_file_prefix_is_refused(binaries):
    # Two capbench-caps given one EAL file prefix (--eal): the second finds the first's lock in
    # EAL's runtime directory and is refused in one line, exit 2, before it opens its port; the
    # first runs on and, stopped, leaves nothing. net_null: a port with no interface behind it.
    prefix = f"capbench-e2e-{os.getpid()}"
    before = set(EAL_RUNTIME.iterdir()) if EAL_RUNTIME.is_dir() else set()
    argv = [str(binaries.cap), "--backend", "dpdk", "--dpdk-devargs", "net_null0", "--cpu", "0",
            "--eal", f"--file-prefix {prefix}"]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stdout is not None
        ready = json.loads(first.stdout.readline() or "null")
        assert ready and ready["type"] == "ready", first.stderr.read() if first.poll() is not None else ready
        second = subprocess.run([*argv, "--duration", "0.2"], capture_output=True, text=True, timeout=30)
        assert second.returncode == 2 and second.stdout == "", (second.returncode, second.stdout, second.stderr)
        (line,) = second.stderr.splitlines()
        assert f"another DPDK process runs with EAL's file prefix '{prefix}'" in line, line
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGTERM)
        out, err = first.communicate(timeout=10)
    assert first.returncode == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["type"] == "summary" and summary["hugepages"] is False and summary["dpdk_driver"] == "net_null"
    assert (set(EAL_RUNTIME.iterdir()) if EAL_RUNTIME.is_dir() else set()) <= before


def test_procs_2_with_net_af_xdp_is_refused_in_one_line(tmp_path):
    # Each net_af_xdp process attaches capbench's XDP program to the capture interface, which holds
    # one (and an AF_XDP queue hands each frame to one socket): the line names what shares it.
    before_ns = capbench_namespaces()
    p = run_capbench("run", "--backends", "dpdk", "--procs", "2", "--sizes", "64", "--rate", "10kpps",
                     "--duration", "0.5", "--results", str(tmp_path), "--no-report", timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    (line,) = [x for x in p.stderr.splitlines() if "2 with dpdk" in x]
    assert "an interface holds one XDP program" in line and "dpdk with --dpdk-driver af_packet" in line, p.stderr
    assert left_behind(before_ns) == set() and not xdp_attached()


def test_procs_2_with_net_af_packet_each_see_every_frame(tmp_path):
    # net_af_packet names its fanout group after the process (DPDK 22.11), so each of two dpdk
    # processes, each its own EAL (--file-prefix capbench-PID), gets every frame, as --procs means;
    # the test bed's counter counts "delivered" for both. Both poll CPU 1; the receive work runs on
    # CPU 0 with the generator, real-time (as in test_captures_every_frame).
    before_ns, before_dirs = capbench_namespaces(), eal_dirs()
    frames = 40_000

    def attempt(i: int) -> list[dict]:
        results = tmp_path / f"r{i}"
        p = run_capbench("run", "--backends", "dpdk", "--backend-args", "dpdk=--dpdk-driver af_packet",
                         "--procs", "2", "--sizes", "64", "--rate", "20kpps", "--duration", "2", "--gen-cpu", "0",
                         "--rx-cpu", "0", "--cap-cpu", "1", "--napi-sched", "fifo:50", "--results", str(results),
                         "--no-report", timeout=200)
        assert_run_measured(p)
        (d,) = [x for x in results.iterdir() if x.is_dir()]
        return decided_trials(d / "trials.jsonl")

    (t,) = until_undisturbed(attempt, "two dpdk net_af_packet processes", spoiled)
    assert t["procs"] == 2 and t["sent"] == frames and t["delivered"] == frames, t
    assert t["proc_received"] == [frames, frames] and t["lost"] == 0, t["proc_received"]
    assert left_behind(before_ns) == set() and eal_dirs() <= before_dirs and not xdp_attached()


@pytest.mark.parametrize("driver, row", [("af_xdp", "imissed"), ("af_packet", "tp_drops")])
def test_overload_lands_in_the_layer_that_counted_it(binaries, tb, driver, row):
    # net_af_xdp: the fill ring runs out first (the driver keeps 2,048 frames in it, the RX ring
    # has as many), counted as the socket's rx_dropped, which is the port's imissed.
    # net_af_packet: its ring fills, PACKET_STATISTICS tp_drops, which DPDK does not count.
    # 20 us of work per frame: at most 50 kpps, offered 100 kpps.
    gen, cap = until_undisturbed(lambda _: stream(binaries, tb, driver, 20_000, "100kpps", "--app-load", "spin:20000"),
                                 f"dpdk {driver} overload", judge)
    assert gen["sent"] == cap["delivered"] == 20_000
    lost = 20_000 - cap["received"]
    assert lost > 1_000, cap
    assert cap[row] == lost == cap["kernel_drops"], cap
    assert cap["rx_nombuf"] == cap["ierrors"] == 0, cap


def test_bad_input_is_one_line(binaries):
    before = eal_dirs()

    def refused(*args: str) -> str:
        p = subprocess.run([str(binaries.cap), "--backend", "dpdk", "--iface", "lo", "--duration", "0.2", *args],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout, p.stderr)
        (line,) = p.stderr.splitlines()
        return line

    # EAL's own reason, for an option it refuses and for one it does not know.
    assert "Option --legacy-mem is not compatible with --in-memory" in refused("--eal", "--in-memory")
    assert "unrecognized option '--bogus'" in refused("--eal", "--bogus")
    assert "Unable to parse device 'net_nosuch0'" in refused("--dpdk-devargs", "net_nosuch0")
    assert "dpdk-devbind.py" in refused("--dpdk-devargs", "0000:99:00.0")
    assert "consecutive receive queues" in refused("--queue", "0,2")
    assert eal_dirs() <= before


def start_cap(binaries, tb, driver: str) -> subprocess.Popen:
    p = subprocess.Popen(["ip", "netns", "exec", tb.cap_ns, str(binaries.cap), "--backend", "dpdk", "--dpdk-driver",
                          driver, "--iface", tb.cap_if, "--cpu", "1"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    ready = json.loads(p.stdout.readline() or "null")
    assert ready and ready["type"] == "ready", p.stderr.read() if p.poll() is not None else ready
    return p


def promiscuity(tb) -> int:
    out = netns.ip("-n", tb.cap_ns, "-d", "-j", "link", "show", "dev", tb.cap_if)
    return json.loads(out)[0]["promiscuity"]


@pytest.mark.parametrize("driver", ["af_xdp", "af_packet"])
def test_nothing_is_left_after_sigterm_or_sigkill(binaries, tb, driver):
    before = eal_dirs()
    p = start_cap(binaries, tb, driver)
    # net_af_xdp runs capbench's program; net_af_packet none (a run's capbench-xdpcount counts there)
    assert xdp_attached(tb.cap_ns) == ([tb.cap_if] if driver == "af_xdp" else []) and promiscuity(tb) == 1
    assert len(eal_dirs() - before) == 1
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=10)
    assert p.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["type"] == "summary"
    assert xdp_attached(tb.cap_ns) == [] and promiscuity(tb) == 0 and eal_dirs() == before

    # SIGKILL: the kernel removes the bpf_link (so the program) and the promiscuous membership
    # with the last descriptor; EAL's empty runtime directory stays until the next start.
    p = start_cap(binaries, tb, driver)
    (killed,) = eal_dirs() - before
    p.kill()
    p.communicate(timeout=10)
    deadline = time.monotonic() + 5
    while xdp_attached(tb.cap_ns) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert xdp_attached(tb.cap_ns) == [] and promiscuity(tb) == 0
    assert eal_dirs() - before == {killed}
    p = start_cap(binaries, tb, driver)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=10)
    assert p.returncode == 0 and eal_dirs() == before


def test_testpmd_rxonly_counts_what_the_dpdk_backend_counts(tmp_path):
    # The same bounded stream (100,000 frames at 50 kpps) to capbench-cap's dpdk backend and to
    # DPDK's own testpmd rxonly, each on the same port (net_af_packet on the capture veth) and
    # placed as test_captures_every_frame's: testpmd's counts are the port's rte_eth_stats it
    # printed, its rows those its adapter declares, and they agree with the backend's, layer by layer.
    if shutil.which("dpdk-testpmd") is None:
        pytest.skip("dpdk-testpmd is not installed: apt-get install dpdk-dev")
    before_ns = capbench_namespaces()

    def attempt(i: int) -> list[dict]:
        results = tmp_path / f"r{i}"
        p = run_capbench("run", "--backends", "dpdk,testpmd", "--backend-args", "dpdk=--dpdk-driver af_packet",
                         "--sizes", "64", "--rate", "50kpps", "--duration", "2", "--gen-cpu", "0", "--rx-cpu", "0",
                         "--cap-cpu", "1", "--napi-sched", "fifo:50", "--results", str(results), "--no-report",
                         timeout=300)
        assert_run_measured(p)
        (d,) = [x for x in results.iterdir() if x.is_dir()]
        return decided_trials(d / "trials.jsonl")

    trials = until_undisturbed(attempt, "dpdk and testpmd", spoiled)
    by = {t["backend"]: t for t in trials}
    dpdk, testpmd = by["dpdk"], by["testpmd"]
    for t in (dpdk, testpmd):
        assert t["sent"] == t["received"] == FRAMES and t["lost"] == t["unexplained"] == 0, t
        assert t["polls"] is True and t["cap_cpu"] == 1, t
    # testpmd's own counts: the port's statistics it printed (every frame the port received), and
    # its sockets' PACKET_STATISTICS, which capbench read through copies of them before the stop.
    assert testpmd["app_counts"] == {"captured": FRAMES, "dropped": 0, "errors": 0, "nombuf": 0,
                                     "tp_drops": 0}, testpmd["app_counts"]
    assert "--forward-mode=rxonly" in testpmd["app_command"] and testpmd["failure"] == ""
    assert dpdk["raw"]["cap"]["packets"] == FRAMES

    def rows(t: dict) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in t["layers"]:
            out[row["layer"]] = out.get(row["layer"], 0) + row["packets"]
        return out

    # testpmd declares the port's, the pool's and its sockets' rows; the backend has those too.
    assert set(rows(testpmd)) == {"DPDK port", "mbuf pool", "socket"} <= set(rows(dpdk))
    assert {k: rows(dpdk)[k] for k in rows(testpmd)} == rows(testpmd) == {"DPDK port": 0, "mbuf pool": 0,
                                                                           "socket": 0}
    # Nothing of testpmd's is left: its process, its EAL runtime directory (the adapter's post
    # command removes it), the test bed.
    assert not (EAL_RUNTIME.is_dir() and list(EAL_RUNTIME.glob("capbench-testpmd-*")))
    assert subprocess.run(["pgrep", "-f", "capbench-testpmd-"], capture_output=True).returncode == 1
    assert left_behind(before_ns) == set()


def test_a_run_of_testpmd_stopped_with_ctrl_c_leaves_nothing(tmp_path):
    # Ctrl-C while testpmd captures: the run ends as interrupted, and what its adapter's post
    # command removes after a normal stop (EAL's runtime directory) is removed all the same
    # (ProgramRun.cleanup), with its process and the test bed.
    if shutil.which("dpdk-testpmd") is None:
        pytest.skip("dpdk-testpmd is not installed: apt-get install dpdk-dev")
    before_ns = capbench_namespaces()
    rc, _, err = interrupted_capbench("run", "--backends", "testpmd", "--sizes", "64", "--rate", "50kpps",
                                      "--duration", "20", "--results", str(tmp_path), "--no-report",
                                      when=lambda: EAL_RUNTIME.is_dir() and bool(list(EAL_RUNTIME.glob(
                                          "capbench-testpmd-*"))), wait_s=60, after_s=1.0)  # into the load
    assert rc == 130, err
    assert not (EAL_RUNTIME.is_dir() and list(EAL_RUNTIME.glob("capbench-testpmd-*")))
    assert subprocess.run(["pgrep", "-f", "capbench-testpmd-"], capture_output=True).returncode == 1
    assert left_behind(before_ns) == set()


def rx_packets(ns: str) -> int:
    """The most frames any link of namespace `ns` received (ip -s link's own counter)."""
    p = subprocess.run(["ip", "-n", ns, "-j", "-s", "link", "show"], capture_output=True, text=True, timeout=10)
    links = json.loads(p.stdout or "[]") if p.returncode == 0 else []
    return max((int(x.get("stats64", {}).get("rx", {}).get("packets", 0)) for x in links), default=0)


def test_testpmds_full_socket_rings_are_its_socket_row(tmp_path):
    # testpmd stopped (SIGSTOP) for 0.5 s while 100 kpps arrive: its net_af_packet socket's ring
    # (framecnt 2,048) fills and the kernel counts the rest in PACKET_STATISTICS tp_drops, which
    # DPDK 22.11 never reads; capbench reads them through a copy of the socket before the stop.
    # They are testpmd's tp_drops and its socket row, and the account closes.
    if shutil.which("dpdk-testpmd") is None:
        pytest.skip("dpdk-testpmd is not installed: apt-get install dpdk-dev")
    before_ns = capbench_namespaces()
    stalled: list[int] = []

    def stall() -> None:
        """Once 30,000 frames reached the capture veth, stop testpmd for 0.5 s."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not stalled:
            pids = subprocess.run(["pgrep", "-f", "dpdk-testpmd .*capbench-testpmd-"], capture_output=True,
                                  text=True).stdout.split()
            new = capbench_namespaces() - before_ns
            if pids and new and max(rx_packets(ns) for ns in new) > 30_000:
                for pid in pids:
                    os.kill(int(pid), signal.SIGSTOP)
                time.sleep(0.5)
                for pid in pids:
                    os.kill(int(pid), signal.SIGCONT)
                stalled.extend(int(pid) for pid in pids)
            time.sleep(0.05)

    staller = threading.Thread(target=stall, daemon=True)
    staller.start()
    p = run_capbench("run", "--backends", "testpmd", "--sizes", "64", "--rate", "100kpps", "--duration", "3",
                     "--gen-cpu", "0", "--rx-cpu", "0", "--cap-cpu", "1", "--napi-sched", "fifo:50",
                     "--results", str(tmp_path), "--no-report", timeout=300)
    staller.join(10)
    assert_run_measured(p)
    assert stalled, "testpmd never received 30,000 frames"
    (d,) = [x for x in tmp_path.iterdir() if x.is_dir()]
    first = json.loads((d / "trials.jsonl").read_text().splitlines()[0])  # the trial it stopped
    drops = first["app_counts"]["tp_drops"]
    assert 10_000 < drops < 50_000 + 2_048, first["app_counts"]  # about 0.5 s of 100 kpps, less the ring
    socket = [row for row in first["layers"] if row["layer"] == "socket"]
    assert [row["packets"] for row in socket] == [drops] and "tp_drops" in socket[0]["counter"], first["layers"]
    assert first["unexplained"] == 0 and first["lost"] >= drops, first
    assert first["app_counts"]["captured"] == first["received"]
    assert left_behind(before_ns) == set() and not [x for x in eal_dirs() if "testpmd" in x]


def test_packet_statistics_are_read_from_outside_the_program(binaries, tb):
    # A program's packet socket that never reads (a small receive buffer, nothing read): capbench
    # reads its PACKET_STATISTICS through a copy of the socket (pidfd_getfd), as it reads testpmd's
    # net_af_packet sockets before the stop; the kernel zeroes them on each read.
    from capbench.testbed import cpu as cpus
    from capbench.testbed.procs import ChildSet
    from capbench.trial.program_run import packet_statistics

    holder = ("import socket, sys, time\n"
              "s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))\n"
              "s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)\n"
              f"s.bind(({tb.cap_if!r}, 0))\n"
              "print('{\"type\": \"ready\"}', flush=True)\n"
              "time.sleep(30)\n")
    with ChildSet() as kids:
        prog = kids.start("holder", [sys.executable, "-c", holder], netns_name=tb.cap_ns)
        prog.wait_for("ready", 10)
        # The afpacket engine: its frames take the veth's skb path into the capture namespace's
        # stack, where the socket sees them, whatever XDP the test bed's receive model holds.
        gen = kids.start("capbench-gen", [str(binaries.gen), "--iface", tb.gen_if, "--cpu", "1", "--trailer", "0",
                                          "--engine", "afpacket", "--dst-mac", tb.dst_mac, "--rate", "50kpps",
                                          "--count", "2000"], netns_name=tb.gen_ns)
        gen.wait(30)
        time.sleep(0.2)
        packets, drops = packet_statistics(frozenset(cpus.process_tree(prog.pid)))
        again = packet_statistics(frozenset(cpus.process_tree(prog.pid)))
        kids.stop_all()
    # The buffer holds a few frames: the rest of the 2,000 (and any other frame) were dropped.
    assert packets >= 2_000 and 1_000 < drops < packets, (packets, drops)
    assert again[0] < 100, again  # zeroed by the first read: only what came since


def test_a_poller_gets_a_cpu_of_its_own_or_the_run_says_why_not(tmp_path):
    # The default placement (A:A) with the dpdk backend, one short trial: on two CPUs its worker
    # must share the receive CPU, which the run says before the trials (and in run.json); with a
    # third CPU it goes there.
    p = run_capbench("run", "--backends", "dpdk", "--sizes", "64", "--rate", "10kpps", "--duration", "0.5",
                     "--results", str(tmp_path), "--no-report", timeout=120)
    assert_run_measured(p)
    (d,) = [x for x in tmp_path.iterdir() if x.is_dir()]
    (t,) = [json.loads(line) for line in (d / "trials.jsonl").read_text().splitlines()][-1:]
    notes = json.loads((d / "run.json").read_text()).get("notes", [])
    assert t["polls"] is True
    if len(cpu.usable_cpus()) > 2:
        assert t["cap_cpu"] not in (t["gen_cpu"], t["kernel_rx_cpu"]), t
        assert "polls on CPU" not in p.stderr
    else:
        assert t["cap_cpu"] == t["kernel_rx_cpu"] == 1, t
        line = "placement A:A: dpdk polls on CPU 1, the CPU of the kernel thread that drains the receive ring"
        assert line in p.stderr and any(n.startswith(line) for n in notes), (p.stderr, notes)
        assert "--pin A:B or --cap-cpu" in p.stderr
