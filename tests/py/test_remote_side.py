"""A capture side on another host (trial.remote_side): what the agent is told survives JSON, and its
readings become the same record a local side's do (trial_run.assemble), latency included or left
out as the clocks allow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from capbench.binaries import PROGRAMS, Binaries
from capbench.rates import Rate
from capbench.remote.ssh import Host
from capbench.testbed.veth_pair import Testbed as Bed
from capbench.trial import apps
from capbench.trial.measure import Measurer, TrialSetup
from capbench.trial import remote_side
from capbench.trial.record import record_problem
from capbench.trial.remote_side import agent_measurer, agent_spec, setup_from_json, setup_to_json
from capbench.trial.trial_run import assemble

TB = Bed(id="side", gen_ns=None, cap_ns=None, gen_if="", cap_if="eth1", gen_mac="", cap_mac="", rx_cpu=1,
             rx_mode="rps", ports=True)
BIN = Binaries(*(Path("/b") / p for p in PROGRAMS))


def test_a_setup_survives_json():
    s = TrialSetup(backend="tcpdump", frame_len=64, gen_cpu=None, cap_cpu=3, cap_args=("--x", "1"), proc_cpus=(1, 2),
                   procs=2, app=apps.builtin()["tcpdump"])
    assert setup_from_json(json.loads(json.dumps(setup_to_json(s)))) == s
    plain = TrialSetup(backend="pcap", frame_len=1518)
    assert setup_from_json(json.loads(json.dumps(setup_to_json(plain)))) == plain


def test_the_agent_sees_its_interface_as_a_port_with_no_sender():
    spec = json.loads(json.dumps(agent_spec(Measurer(BIN, TB, TrialSetup(backend="pcap", frame_len=64)), 1.0,
                                            "/opt/capbench/build")))
    m = agent_measurer(spec)
    assert (m.testbed.cap_if, m.testbed.gen_if, m.testbed.ports, m.testbed.rx_cpu) == ("eth1", "", True, 1)
    assert str(m.binaries.cap) == "/opt/capbench/build/capbench-cap"


READINGS = {"caps": [{"received": 100, "kernel_drops": 0, "latency_ns": {"n": 100, "min": 1000, "p50": 2000,
                                                                             "max": 9000}}],
            "xdp": {"capbench": 100}, "host_softnet_drops": 0, "app_cpu_pcts": [1.0], "programs": [],
            "cap_cpus_seen": [3], "napi_cpus_seen": [], "other_testbeds": [], "kernel_cpu_pct": 0.5,
            "window_s": 1.2, "iface_rx_dropped": 0, "gen_tx_dropped": None, "ring_drops": None, "nic_desc": {},
            "nic_counters": {}}
GEN = {"sent": 100, "duration_s": 1.0, "achieved_pps": 100.0}


def record(**kw):
    m = Measurer(BIN, TB, TrialSetup(backend="pcap", frame_len=64, gen_cpu=None, cap_cpu=3), **kw)
    return assemble(m, json.loads(json.dumps(READINGS)), GEN, "t", 1.0, Rate.from_pps(100), cap_clock_ns=5_000)


def test_readings_become_a_record_with_its_host():
    r = record(cap_host=Host("s1", "root@s1"))
    assert (r.host, r.received, r.lost, r.cap_cpus_seen, r.latency_valid) == ("s1", 100, 0, (3,), True)
    assert r.latency["p50_ns"] == 2000


def test_latency_across_hosts_without_ptp_is_left_out():
    r = record(cap_host=Host("s1", "root@s1"), latency_valid=False)
    assert (r.latency, r.latency_valid) == ({}, False)


def test_latency_across_hosts_with_ptp_moves_onto_the_realtime_clocks():
    # the generator's host: realtime − monotonic 4,000 ns; the sensor's 5,000: its stamps are 1 µs later
    r = record(cap_host=Host("s1", "root@s1"), gen_clock_ns=4_000)
    assert r.latency == {"min_ns": 2000, "p50_ns": 3000, "max_ns": 10000} and r.latency_valid


def test_latency_the_clocks_would_put_below_zero_is_left_out_and_the_record_reads_back():
    # the sensor's realtime − monotonic is read 2 µs short of the generator's: its frames would
    # arrive 1 µs before they were sent
    r = record(cap_host=Host("s1", "root@s1"), gen_clock_ns=7_000)
    assert (r.latency, r.latency_valid) == ({}, False)
    assert record_problem(r.to_record()) is None


def test_the_clock_difference_is_the_sample_read_in_the_shortest_time(monkeypatch):
    # (monotonic, realtime, monotonic) readings: the first sample was stopped 200 µs between its
    # realtime and second monotonic reading; the second took 100 ns, the third 300 ns
    readings = iter([1_000, 10_001_000, 201_000,
                     300_000, 10_300_050, 300_100,
                     400_000, 10_400_100, 400_300])
    monkeypatch.setattr(remote_side.time, "clock_gettime_ns", lambda _clock: next(readings))
    assert remote_side.realtime_minus_monotonic_ns(samples=3) == 10_000_000


AGENT_SIGNALS = """
import os, signal, threading, time
from capbench.trial.remote_side import PhaseSignals
threading.Thread(target=time.sleep, args=(5,), daemon=True).start()  # like the programs' output readers
with PhaseSignals() as phases:
    # The SIGTERM comes while the main thread is busy sampling between waits: the kernel gives it
    # to a thread that does not block it (the other one, when the main thread blocks it).
    phases.wait(signal.SIGTERM, lambda: os.kill(os.getpid(), signal.SIGTERM))
print("readings")
"""


def test_the_agent_takes_a_phase_signal_that_comes_while_it_samples(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "python")}
    p = subprocess.run([sys.executable, "-c", AGENT_SIGNALS], capture_output=True, text=True, timeout=30, env=env)
    assert (p.returncode, p.stdout) == (0, "readings\n"), p.stderr
