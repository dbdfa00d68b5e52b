"""The interference witness's arithmetic and judging (trial/witness.py), from readings made up here:
a stop of d seconds at r frames per second overflows a ring of N frames when d·r > N, a lossless
trial is never disturbed, and a figure not measured stays null."""

from __future__ import annotations

import dataclasses

import pytest
from capbench.testbed import cpu
from capbench.testbed import rxmode
from capbench.trial import witness
from capbench.trial.record import TrialResult

from records import make_result

RING = 256


def jiffies(steal: int = 0) -> cpu.CpuJiffies:
    return cpu.CpuJiffies(user=0, nice=0, system=0, idle=0, iowait=0, irq=0, softirq=0, steal=steal)


def view(c: int, *, others_ns=0, trial_ns=0, stops_ns=(), longest_other=(0, ""), top=()) -> dict:
    """One CPU of a capbench-witness snapshot line."""
    return {"cpu": c, "trial_ns": trial_ns, "others_ns": others_ns, "idle_ns": 0, "stopped_ns": sum(stops_ns),
            "canary_fires": 100, "others_longest_ns": longest_other[0], "others_longest_name": longest_other[1],
            "stops": len(stops_ns), "stop_ns": sum(stops_ns), "longest_stop_ns": max(stops_ns, default=0),
            "stops_ns": sorted(stops_ns, reverse=True), "others_top": [{"name": n, "ns": ns} for n, ns in top]}


def reading(*views: dict, steal: dict[int, int] | None = None, window_s: float = 5.0, **kw) -> witness.Reading:
    steal = steal or {}
    cpus = {v["cpu"] for v in views} | set(steal) | {0, 1}
    return witness.Reading(window_s, {c: jiffies() for c in cpus}, {c: jiffies(steal.get(c, 0)) for c in cpus},
                           {"type": "snapshot", "cpus": list(views)} if views else None, **kw)


def lossy(lost: int, pps: float = 100_000.0, **kw) -> TrialResult:
    """A 5 s trial at `pps` that lost `lost` frames in the ring."""
    sent = int(pps * 5)
    kw = {"achieved_pps": pps, "offered_pps": pps, "window_s": 5.0, **kw}
    return make_result(frame_len=512, sent=sent, delivered=sent - lost, received=sent - lost, **kw)


def marked(r: TrialResult, rd: witness.Reading) -> TrialResult:
    return witness.mark(r, rd, RING)


def test_a_stop_longer_than_the_ring_lasts_explains_the_loss_and_the_reason_says_so():
    # 12.4 ms at 250 kpps: 3,100 frames, 2,844 beyond a 256-frame ring.
    r = marked(lossy(2_844, pps=250_000), reading(view(1, stops_ns=[12_400_000, 600_000])))
    assert r.disturbed
    assert r.disturbed_reason.startswith("CPU 1: stopped 12.4 ms (longest of 2), 3,100 frames at 250 kpps; "
                                         "ring 256 frames")
    cpu1 = r.host_interference["1"]
    assert cpu1["roles"] == ["receive", "counter"] and cpu1["longest_stop_us"] == 12_400
    assert cpu1["stops"] == 2 and cpu1["stop_ms"] == pytest.approx(13.0) and cpu1["stops_us"] == [12_400, 600]


def test_stops_within_the_ring_explain_nothing():
    # 2 ms at 100 kpps: 200 frames, which a 256-frame ring holds.
    r = marked(lossy(5_000), reading(view(1, stops_ns=[2_000_000] * 10)))
    assert not r.disturbed and r.disturbed_reason == ""


def test_a_loss_far_beyond_what_the_host_explains_is_the_stacks():
    # A 3 ms stop at 100 kpps loses at most 44 frames; 100,000 lost is the capture stack's.
    r = marked(lossy(100_000), reading(view(1, stops_ns=[3_000_000])))
    assert not r.disturbed


def test_a_lossless_trial_is_never_disturbed():
    r = marked(lossy(0), reading(view(1, stops_ns=[50_000_000], others_ns=4_000_000_000)))
    assert not r.disturbed and r.disturbed_reason == ""
    short = marked(lossy(0, invalid_offered_load=True, achieved_pps=50_000.0), reading(view(1)))
    assert not short.disturbed


def test_another_tasks_stretch_on_the_receive_cpu_explains_the_loss():
    r = marked(lossy(29_000), reading(view(1, others_ns=310_000_000, longest_other=(300_000_000, "hog")),
                                      window_s=5.0))
    assert r.disturbed and "CPU 1: hog ran 300 ms at a stretch" in r.disturbed_reason


def test_others_whole_time_counts_once_it_is_a_share_of_the_window():
    # Others took 2 s of 5 s on the receive CPU in short pieces: 200,000 frames arrived meanwhile.
    busy = view(1, others_ns=2_000_000_000, longest_other=(1_000_000, "cc1"), top=[("cc1", 1_500_000_000)])
    r = marked(lossy(150_000), reading(busy))
    assert r.disturbed and "CPU 1: others ran 2000 ms, 40% of the trial, most cc1 1500 ms" in r.disturbed_reason
    # The same pieces at 5 % of the window are a quiet host's: they do not count as a whole.
    quiet = view(1, others_ns=250_000_000, longest_other=(1_000_000, "kworker/1:1"))
    assert not marked(lossy(10_000), reading(quiet)).disturbed


def test_the_generators_cpu_counts_only_through_the_generator():
    # A stop of the generator's CPU holds no consumer off: it shows as the generator's shortfall.
    r = marked(lossy(3_000), reading(view(0, stops_ns=[50_000_000]), view(1)))
    assert r.host_interference["0"]["roles"] == ["generator"] and not r.disturbed
    short = marked(lossy(3_000, invalid_offered_load=True, achieved_pps=90_000.0, offered_pps=100_000.0),
                   reading(view(0, stops_ns=[50_000_000]), view(1)))
    # It sent less: what it sent and the capture lost is capture loss, never the host's for that alone.
    assert not short.disturbed and short.disturbed_reason == ""


def test_a_catch_up_burst_beyond_the_ring_explains_the_loss():
    r = marked(lossy(1_500, catchup_burst_frames=2_000, gen_max_lag_ns=20_000_000), reading(view(1)))
    assert r.disturbed and r.disturbed_reason.startswith("generator: 20 ms behind its schedule")


def test_without_the_witness_steal_is_recorded_and_the_rest_is_null_with_the_reason():
    rd = reading(steal={1: 3}, why_not="capbench-witness failed: no BTF")
    r = marked(lossy(2_000), rd)
    cpu1 = r.host_interference["1"]
    assert cpu1["steal_ms"] == pytest.approx(3 * 1000 / cpu.CLK_TCK)
    assert cpu1["others_ms"] is None and cpu1["stops"] is None and cpu1["longest_stop_us"] is None
    assert "no BTF" in cpu1["not_measured"]
    # Steal alone, with no canary, still says the CPU stopped: 30 ms at 100 kpps is 3,000 frames.
    if cpu.CLK_TCK == 100:
        assert r.disturbed and "30 ms stolen by the hypervisor" in r.disturbed_reason


def test_a_canary_that_could_not_start_leaves_stops_unmeasured():
    rd = reading(view(1, others_ns=1_000_000), canary_why_not="no cpu-clock perf event on CPU 1: ENOENT")
    cpu1 = witness.interference(rd, {1: ["receive"]})["1"]
    assert cpu1["others_ms"] == 1.0 and cpu1["stops"] is None and "cpu-clock" in cpu1["not_measured"]


def test_roles_come_from_the_record():
    r = make_result(gen_cpu=0, cap_cpu=1, kernel_rx_cpu=1, cap_cpus_seen=(1,), tap_cpu=0, worker_cpus=(1,))
    assert witness.trial_roles(r) == {0: ["generator", "tap"], 1: ["receive", "counter"]}
    fanout = make_result(gen_cpu=0, cap_cpu=1, kernel_rx_cpu=1, cap_cpus_seen=(1,), worker_cpus=(0, 1))
    assert witness.trial_roles(fanout) == {0: ["generator", "workers"], 1: ["receive", "counter"]}
    remote = dataclasses.replace(r, host="sensor1")  # the generator's CPU is another machine's
    assert "generator" not in witness.trial_roles(remote).get(0, [])


def test_the_ring_depth_is_the_trials_own():
    # A trial records its ring (rx_ring: the cpumap queue's, or the veth's 256); None on ports.
    assert witness.ring_frames(None) == 256 and witness.ring_frames(4096) == 4096
    assert rxmode.ring_frames("cpumap", 0) == rxmode.DEFAULT_RX_RING and rxmode.ring_frames("napi", 4096) == 256


def probe(stops_us: list[int], top_pps: float | None, ring: int = RING) -> witness.Probe:
    v = {"steal_ms": 0.0, "others_ms": 20.0, "stops": len(stops_us), "longest_stop_us": max(stops_us, default=0),
         "stops_us": stops_us}
    return witness.Probe(2.0, {"1": v}, ring, top_pps)


def test_the_probe_says_above_which_rate_the_hosts_stops_overflow_the_ring():
    p = probe([2_000, 600], top_pps=1_488_095.0)
    assert p.overflow_pps() == pytest.approx(128_000)  # 256 frames in 2 ms
    assert p.noisy()
    line = p.line()
    assert line.startswith("host probe (2 s idle): CPU 1 stops 1/s, longest 2 ms, others 1.0 %, steal 0 ms")
    assert "overflows the 256-frame ring above 128 kpps" in line
    assert "Too noisy for this run: its stops overflow the ring at the run's top rate (1.49 Mpps)" in line
    assert "deeper ring, --repeat" in line
    assert p.to_json()["noisy"] is True and p.to_json()["overflow_pps"] == pytest.approx(128_000)


def test_a_deeper_ring_or_a_lower_rate_makes_the_same_host_quiet_enough():
    assert not probe([2_000], top_pps=81_274.0).noisy()  # 1518 B at 1 GbE: 2 ms is 163 frames
    assert not probe([2_000], top_pps=1_488_095.0, ring=4096).noisy()  # 4,096 frames last 2.75 ms there
    assert not probe([], top_pps=1_488_095.0).noisy() and probe([], 1e6).overflow_pps() is None


def test_other_work_on_a_cpu_of_the_run_makes_the_host_too_noisy():
    p = probe([], top_pps=81_274.0)
    busy = witness.Probe(2.0, {"1": {**p.cpus["1"], "others_ms": 1_800.0}}, RING, 81_274.0)
    assert not p.noisy() and busy.noisy_because() == ["other work takes CPU 1 90 %"]
    assert "Too noisy for this run: other work takes CPU 1 90 %, so expect loss" in busy.line()


def test_a_probe_without_stops_measured_prints_a_dash_not_zero():
    p = witness.Probe(2.0, {"0": {"steal_ms": 10.0, "others_ms": None, "stops": None, "longest_stop_us": None}},
                      RING, 1e6)
    assert "CPU 0 stops —, others —, steal 10 ms" in p.line() and not p.noisy()


def test_the_tables_and_the_live_line_mark_a_disturbed_loss_and_say_why():
    from capbench.report import console, tables, tables_md

    r = marked(lossy(2_844, pps=250_000), reading(view(1, stops_ns=[12_400_000])))
    quiet = marked(lossy(2_844, pps=250_000), reading(view(1)))
    loss = tables.HEADERS.index("Loss [%]")
    assert tables.row_cells([r])[loss].endswith(tables.DISTURBED_MARK)
    assert not tables.row_cells([quiet])[loss].endswith(tables.DISTURBED_MARK)
    assert f"{tables.DISTURBED_MARK} DISTURBED: CPU 1: stopped 12.4 ms" in console.trial_line(1, r)
    assert tables.DISTURBED_MARK not in console.trial_line(1, quiet)
    assert tables_md.group_note([r, quiet]).endswith(f"the host interfered in 1 of 2 repetitions: {r.disturbed_reason}")
    assert tables.disturbed_note([r, quiet]).startswith(f"{tables.DISTURBED_MARK} the host's interference could "
                                                        f"explain this loss (1 trial:")
    assert tables.disturbed_note([quiet]) == ""


@pytest.mark.parametrize("args, words", [
    ([], "no CPUs given: use --cpus LIST"),
    (["--cpus", "0-100000"], "bad --cpus '0-100000'"),
    (["--cpus", "0", "--period-us", "10"], "bad --period-us '10': give microseconds from 50 to 100000"),
    (["--cpus", "0", "--cgroup", "/nonexistent-witness"], "--cgroup /nonexistent-witness"),
])
def test_capbench_witness_refuses_bad_input_in_one_line(args, words):
    import subprocess

    from capbench.binaries import find_program

    program = find_program("capbench-witness")
    p = subprocess.run([str(program), *args], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and p.stdout == "", p.stderr
    assert p.stderr.splitlines() == [p.stderr.strip()] and words in p.stderr, p.stderr


def test_the_run_watches_the_cpus_of_its_placements_and_knows_its_top_rate():
    from capbench.campaign import matrix as cmod
    from capbench.campaign import plan, resume, runner

    def plan_of(settings: dict, cpus=(0, 1, 2, 3)) -> plan.Plan:
        c = cmod.build({"backends": ["pcap"], **settings}, [], backends_known=("pcap",))
        return plan.plan_of(c, resume.progress_of([], []), list(cpus))

    iperf = plan_of({"methods": ["iperf"], "sizes": [512, 1518], "pin": ["A:A"], "rate": "50%"})
    assert runner.run_cpus(iperf) == [0, 1]
    assert runner.top_rate(iperf) == pytest.approx(0.5 * 1e9 / ((512 + 20) * 8))  # the campaign's load
    search = plan_of({"methods": ["rfc2544"], "sizes": [64], "pin": ["A:B"]})
    assert runner.run_cpus(search) == [0, 1, 2]
    assert runner.top_rate(search) == pytest.approx(1_488_095.238)  # a search may go up to the wire rate
    assert runner.run_cpus(plan_of({"methods": ["iperf"], "sizes": [64], "pin": ["auto"]})) == [0, 1, 2, 3]
