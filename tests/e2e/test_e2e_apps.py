"""Capture programs as the thing under test (trial/apps.py, trial/program_run.py), end to end on a
real veth test bed: every built-in adapter's program captures a known stream, and its own count,
capbench's decode of its capture file and the kernel's counters are checked against each other;
a program that cannot keep up loses frames in a layer a counter names; one that ends early or
hangs at the stop makes a failed trial; bad adapters and templates are refused before anything
starts."""

from __future__ import annotations

import dataclasses
import json
import shutil
import signal
from pathlib import Path

import pytest
from capbench.methods.verdict import LOSSY, verdict
from capbench.rates import parse_rate
from capbench.trial import apps
from capbench.trial.measure import Measurer, TrialSetup

from e2e_env import (decided_trials, assert_run_measured, capbench_namespaces, gen_engine, left_behind, run_capbench,
                     skip_without_xdp_frames)
from host_interference import interference, spoiled, until_undisturbed

FRAMES = 100_000
BUILTIN = apps.builtin()


def measure(binaries, tb, app, *, frames=FRAMES, rate="100kpps", frame_len=64, link_bps=10e9):
    # An emulated 10 GbE link at 100 kpps: far below any link's wire rate; the count bounds the trial.
    setup = TrialSetup(backend=app.name, frame_len=frame_len, link_bps=link_bps, app=app, engine=gen_engine(),
                       gen_args=("--count", str(frames)) if frames else ())
    duration_s = frames / parse_rate(rate).pps(frame_len, link_bps) if frames else 1.0
    return Measurer(binaries, tb, setup).measure(duration_s, parse_rate(rate))


def measure_unstalled(binaries, tb, app, **kw):
    """A trial, run again while its own counters say the host spoiled it (host_interference)."""
    return until_undisturbed(lambda _: measure(binaries, tb, app, **kw), app.name, interference)


@pytest.fixture(scope="module", autouse=True)
def programs_installed():
    for app in BUILTIN.values():
        if shutil.which(app.program) is None:
            pytest.fail(f"{app.program} is missing: `make test` installs {app.package}")


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtin_program_captures_every_frame_by_both_witnesses(binaries, tb, name):
    app = BUILTIN[name]
    r = measure_unstalled(binaries, tb, app)
    account = dict(sent=r.sent, delivered=r.delivered, received=r.received, counts=r.app_counts,
                   file_frames=r.file_frames, layers=r.loss_layers, remarks=r.loss_remarks, failure=r.failure)
    assert not r.failure, account
    assert r.sent == FRAMES and r.delivered == FRAMES, account
    # capbench's witness: the frames in the program's file, by their sequence numbers.
    if app.file_format is not None:
        assert r.file_frames is not None and r.file_frames >= FRAMES, account
        assert (r.received, r.seq_lost, r.duplicates, r.reordered) == (FRAMES, 0, 0, 0), account
        assert r.raw["cap"]["read"].endswith(".pcap")
        # The file's timestamps against the TX stamps (a µs file may round the fastest down to 0).
        assert r.latency and r.latency["p50_ns"] > 0, r.latency
    # The program's own witness.
    assert r.app_counts.get("captured") == FRAMES or app.file_format is not None and \
        r.app_counts.get("captured", 0) >= FRAMES, account
    assert r.app_counts.get("dropped", 0) == 0, account
    assert (r.lost, r.unexplained, r.loss_pct) == (0, 0, 0.0), account
    assert r.app_command.split()[0] == app.program
    assert r.app_user_cpu_pct is not None and r.app_system_cpu_pct is not None
    assert r.app_cpu_pct == pytest.approx(r.app_user_cpu_pct + r.app_system_cpu_pct)
    assert r.cap_cpus_seen and set(r.cap_cpus_seen) <= {0, 1}
    # Every file capbench gave the program is gone with the trial.
    assert not any(Path(arg).exists() for arg in r.raw["programs"][0]["argv"] if arg.startswith("/tmp/capbench-trial-"))


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtin_program_that_cannot_keep_up_loses_in_a_named_layer(binaries, tb, name):
    # 1 GbE at 64 B is 1.488 Mpps, on the CPU the program shares with the receive work. The afpacket
    # engine sends a fraction of it, which these programs keep up with (or lose only where no
    # counter looks): the overload is an engine of XDP frames'.
    skip_without_xdp_frames()
    app = BUILTIN[name]
    r = measure(binaries, tb, app, frames=0, rate="100%", link_bps=1e9)
    assert not r.failure, r.failure
    assert r.lost > 0, (r.sent, r.received)
    layered = sum(n for _, n, _ in r.loss_layers)
    assert layered == r.lost - r.unexplained, r.loss_layers
    assert layered > 0, (r.loss_layers, r.loss_remarks)  # a counter saw some of it, and names it
    assert r.received + r.lost == r.sent
    assert verdict(r) == LOSSY


def test_program_that_ends_early_fails_the_trial(binaries, tb):
    # `timeout` ends tcpdump 0.6 s after its start: before the 1 s stream is over.
    app = BUILTIN["tcpdump"].with_command("timeout 0.6 tcpdump -i {iface} -n -p -w {out}")
    r = measure(binaries, tb, app)
    assert "ended before capbench stopped it" in r.failure, r.failure
    assert r.received < r.sent and r.lost > 0
    assert verdict(r) == LOSSY
    assert any(line.startswith("FAILED:") for line in r.loss_remarks)


def test_program_that_hangs_at_the_stop_is_killed_and_fails_the_trial(binaries, tb):
    # tcpdump stops on SIGINT, but the shell around it ignores the signal and goes on sleeping:
    # the program (the process tree capbench started) does not exit within its grace time.
    app = dataclasses.replace(
        BUILTIN["tcpdump"].with_command("sh -c \"trap '' INT; tcpdump -i {iface} -n -p -w {out}; sleep 30\""),
        stop_grace_s=1.0, ready_pattern=None, ready_delay_s=1.0)
    assert app.stop_signal == signal.SIGINT
    r = measure(binaries, tb, app, frames=10_000)
    assert "did not exit within 1 s of SIGINT: killed" in r.failure, r.failure
    assert r.raw["programs"][0]["killed"] is True
    assert verdict(r) == LOSSY  # whatever it captured, never lossless


def user_adapter(tmp_path: Path, pattern: str = r"^(\d+) packets? captured") -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(f"""
[mydump]
command = "tcpdump -i {{iface}} -n -p -B 8192 -w {{out}}"
summary = "tcpdump with an 8 MiB buffer"
package = "tcpdump"
stop = {{ signal = "SIGINT", grace_s = 5 }}
ready = {{ pattern = "listening on", stream = "stderr", delay_s = 0.2 }}
settle_s = 1.2
file_format = "pcap"
notes = "a user's own adapter"
[mydump.counts.captured]
source = "stderr"
pattern = '{pattern}'
meaning = "frames tcpdump wrote"
[mydump.counts.dropped]
source = "stderr"
pattern = '^(\\d+) packets? dropped by kernel'
meaning = "libpcap's ps_drop"
""")
    return path


def test_user_adapter_from_a_toml_file_runs_through_capbench_run(tmp_path):
    results = tmp_path / "results"
    p = run_capbench("run", "--apps-file", str(user_adapter(tmp_path)), "--backends", "mydump,pcap", "--sizes", "64",
                     "--rate", "50kpps", "--duration", "1", "--link", "10g", "--no-report", "--results", str(results),
                     "--backlog", "10000", timeout=300)
    assert_run_measured(p)
    (d,) = [x for x in results.iterdir() if x.is_dir()]
    trials = {t["backend"]: t for t in map(json.loads, (d / "trials.jsonl").read_text().splitlines())}
    assert set(trials) == {"mydump", "pcap"}
    mine = trials["mydump"]
    assert "-B 8192" in mine["app_command"] and mine["file_frames"] is not None and not mine["failure"]
    assert mine["app_counts"]["captured"] >= mine["received"] > 0
    assert trials["pcap"]["app_command"] == ""
    assert "mydump" in p.stdout  # its table


@pytest.mark.parametrize("args, says", [
    (("--backends", "nosuchdump"), "unknown backend 'nosuchdump'"),
    (("--app", "ghost=ghostdump -i {iface} -w {out}", "--backends", "ghost"), "ghostdump is not installed"),
    (("--app", "noiface=tcpdump -w {out}", "--backends", "noiface"), "{iface}"),
])
def test_bad_programs_are_refused_before_anything_starts(tmp_path, args, says):
    before = capbench_namespaces()
    p = run_capbench("run", *args, "--sizes", "64", "--duration", "1", "--results", str(tmp_path / "r"))
    assert p.returncode == 2, p.stderr
    assert says in p.stderr and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not left_behind(before)
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_adapter_whose_pattern_finds_nothing_is_refused_at_its_dry_start(tmp_path):
    before = capbench_namespaces()
    path = user_adapter(tmp_path, pattern=r"^(\d+) packets? frobnicated")
    p = run_capbench("run", "--apps-file", str(path), "--backends", "mydump", "--sizes", "64", "--duration", "1",
                     "--results", str(tmp_path / "r"), timeout=120)
    assert p.returncode == 2, p.stderr
    assert "dry start" in p.stderr and "captured" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not left_behind(before)


def test_rfc2544_search_and_several_processes_measure_a_program(tmp_path):
    # 1518 B at 1 GbE is 81,274 pps: tcpdump keeps up, so the search ends at the wire rate; two
    # tcpdump processes each see every frame of an iperf trial. A search the host spoiled runs again
    # (host_interference).
    def search(attempt: int):
        results = tmp_path / str(attempt)
        p = run_capbench("run", "--method", "rfc2544", "--backends", "tcpdump", "--sizes", "1518", "--trial", "1s",
                         "--precision", "10", "--pause", "0", "--results", str(results), "--no-report",
                         "--backlog", "10000", timeout=400)
        assert_run_measured(p)
        (d,) = [x for x in results.iterdir() if x.is_dir()]
        return d, [json.loads(x) for x in (d / "trials.jsonl").read_text().splitlines()]

    d, trials = until_undisturbed(search, "the RFC 2544 search of tcpdump", lambda r: spoiled(r[1]))
    (o,) = [json.loads(x) for x in (d / "searches.jsonl").read_text().splitlines()]
    assert o["method"] == "rfc2544" and o["backend"] == "tcpdump" and o["verified"], o
    assert o["throughput_pps"] == pytest.approx(81_274, rel=0.001)
    assert all(t["app_command"].startswith("tcpdump ") and not t["failure"] for t in trials)

    p = run_capbench("run", "--backends", "tcpdump", "--procs", "2", "--sizes", "64", "--rate", "20kpps",
                     "--duration", "1", "--link", "10g", "--results", str(tmp_path / "procs"), "--no-report",
                     "--backlog", "10000", timeout=200)
    assert_run_measured(p)
    (d,) = [x for x in (tmp_path / "procs").iterdir() if x.is_dir()]
    (t,) = decided_trials(d / "trials.jsonl")
    assert t["procs"] == 2 and len(t["raw"]["programs"]) == 2
    assert t["proc_received"] == [20_000, 20_000] or t["lost"] > 0 and t["lost"] == t["link_drops"], t["proc_received"]
    assert len({prog["argv"][-1] for prog in t["raw"]["programs"]}) == 2  # each process its own {out}


def test_a_program_whose_filter_excludes_the_stream_saw_nothing_and_one_that_matches_captured_all(binaries, tb):
    """tcpdump with a filter (issue 28, item 8): "not udp" keeps none of capbench's UDP stream, and the
    record says the program saw nothing of it (its own count), not that a layer lost it; "udp" keeps
    every frame, by tcpdump's count and by capbench's decode of its file alike."""
    from capbench.trial import loss_layers

    frames, rate = 10_000, "20kpps"  # half a second each, far below what tcpdump keeps up with
    excluded = measure(binaries, tb, apps.from_spec("tdnot=tcpdump -i {iface} -w {out} not udp", BUILTIN),
                       frames=frames, rate=rate)
    account = dict(delivered=excluded.delivered, received=excluded.received, counts=excluded.app_counts,
                   remarks=excluded.loss_remarks, failure=excluded.failure)
    assert excluded.delivered == frames and excluded.received == 0, account
    assert loss_layers.saw_nothing(excluded), account
    assert any(f"saw none of the {frames:,} frames delivered" in line and "filter" in line
               for line in excluded.loss_remarks), account
    matched = measure_unstalled(binaries, tb, apps.from_spec("tdudp=tcpdump -i {iface} -w {out} udp", BUILTIN),
                                frames=frames, rate=rate)
    assert matched.received == frames == matched.app_counts.get("captured"), (matched.app_counts, matched.loss_remarks)
    assert not loss_layers.saw_nothing(matched)
