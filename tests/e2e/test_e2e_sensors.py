"""Several sensors on one stream (seed 004's tap; trial/sensors.py, trial_run.Tap) end to end: one
generator, the tap's XDP broadcast, three sensors in namespaces of their own with three backends,
each with its own account; a slowed sensor loses frames that only its own account shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from capbench.rates import parse_rate
from capbench.testbed import netns
from capbench.testbed import veth_pair as testbed
from capbench.trial.measure import Measurer, TrialSetup
from capbench.trial.sensors import SensorsMeasurer

from conftest import E2E_BACKLOG
from e2e_env import decided_trials, assert_run_measured, capbench_namespaces, gen_engine, left_behind, missing_prerequisite, run_capbench, xdp_attached
from host_interference import spoiled, until_undisturbed
from layer_rows import socket_drops


def test_three_sensors_with_three_backends_each_capture_the_whole_stream(tmp_path: Path):
    def run(attempt: int):
        results = tmp_path / str(attempt)
        p = run_capbench("run", "--sensors", "pcap,afp-v3,afxdp", "--sizes", "64", "--rate", "50kpps", "--link",
                         "10g", "--duration", "2", "--results", str(results), "--no-report", "--backlog",
                         str(E2E_BACKLOG), timeout=300)
        assert_run_measured(p)
        (d,) = [x for x in results.iterdir() if x.is_dir()]
        return p, decided_trials(d / "trials.jsonl")

    p, trials = until_undisturbed(run, "three sensors", lambda r: spoiled(r[1]))
    assert [(t["sensor"], t["sensors"], t["backend"]) for t in trials] == [
        (1, 3, "pcap"), (2, 3, "afp-v3"), (3, 3, "afxdp")]
    assert len({t["started_at"] for t in trials}) == 1  # one trial, one stream
    for t in trials:
        assert (t["sent"], t["tap_seen"], t["delivered"], t["received"], t["lost"]) == (100_000,) * 4 + (0,), t
        assert t["raw"]["tap"]["clone_to"].count(",") == 2 and t["cap_cpu"] == 1
    assert "Total loss per sensor" in p.stdout and "sensor 3: afxdp" in p.stdout
    assert "share CPU" in p.stdout  # the sensors share this machine's CPUs, and the tables say so


def test_a_slowed_sensor_loses_frames_that_only_its_account_shows():
    why = missing_prerequisite()
    if why:
        pytest.skip(why)
    from capbench.binaries import find_binaries

    b = find_binaries()
    with testbed.testbed(rx_cpu=1, sensors=3, backlog=E2E_BACKLOG, purpose="pytest sensors") as tb:
        def side(i: int, backend: str, cap_args: tuple[str, ...] = ()) -> Measurer:
            return Measurer(b, tb.sensor(i, 1), TrialSetup(backend=backend, frame_len=64, link_bps=10e9,
                                                           cap_args=cap_args, engine=gen_engine()))

        # pcap with a 16 KiB buffer: its socket overflows between libpcap's reads. (A counter that
        # spins would take CPU 1 from every sensor's receive work: they share it here.)
        sides = [side(1, "pcap", ("--buffer-size", "16k")), side(2, "afp-v3"), side(3, "afxdp")]
        sender = Measurer(b, tb, TrialSetup(backend="afp-v3", frame_len=64, link_bps=10e9,
                                            gen_args=("--count", "100000"), engine=gen_engine()))

        def measure(attempt: int):
            m = SensorsMeasurer(sender, sides, tap_cpu=None)
            worst = m.measure(1.0, parse_rate("100kpps"))
            return worst, m.siblings(worst)

        # The slowed sensor loses in its socket by design; another sensor that lost frames lost
        # them to the host (or the test fails on the assertions below).
        worst, (slow, *others) = until_undisturbed(
            measure, "a slowed sensor", lambda r: spoiled([o for o in r[1][1:] if o.lost]))
        namespaces = [tb.sensor(i, 1).cap_ns for i in (1, 2, 3)]
    assert worst.sensor == 1 and worst.backend == "pcap"  # the methods judge the sensor that lost most
    assert slow.sent == slow.tap_seen == 100_000  # the tap saw all of it
    assert slow.lost > 0 and socket_drops(slow.layers) > 0 and "socket" in {name for name, _, _ in slow.loss_layers}
    assert sum(n for _, n, _ in slow.loss_layers) == slow.lost - slow.unexplained
    for o in others:
        assert (o.received, o.lost, o.loss_layers) == (100_000, 0, ()), (o.backend, o.loss_layers)
    assert not set(namespaces) & set(netns.list_netns())  # every sensor namespace went with the test bed


def test_the_tap_refuses_bad_targets_and_a_sensor_run_leaves_nothing(tmp_path):
    before = capbench_namespaces()
    p = run_capbench("run", "--sensors", "pcap,nosuch", "--sizes", "64", "--results", str(tmp_path))
    assert p.returncode == 2 and "unknown backend 'nosuch'" in p.stderr, p.stderr
    p = run_capbench("run", "--sensors", "pcap,afp-v3", "--method", "back2back", "--sizes", "64",
                     "--results", str(tmp_path))
    assert p.returncode == 2 and "back2back" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not left_behind(before) and not xdp_attached()
