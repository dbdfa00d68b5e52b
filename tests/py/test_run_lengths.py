"""The seeds' remaining axes: frame-length ranges (`--sizes 64..1518/1`, seed 002 swept every
length) and the run length (`--duration` and `--count` take lists, seed 001: loss against buffer
size and run length): parsing, bad values, steps, keys, resume, and what the report groups by."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from capbench import declared, rates
from capbench.campaign import matrix as cmod
from capbench.campaign import plan as plan_mod
from capbench.campaign import results
from capbench.campaign.resume import progress_of
from capbench.cli.parser import build_parser
from capbench.cli.run import campaign_from_args
from capbench.errors import UsageError
from capbench.report import keys
from records import make_result

FIXTURES = Path(__file__).parent / "fixtures"


def run_args(*argv: str) -> cmod.Campaign:
    return campaign_from_args(build_parser().parse_args(["run", *argv]))


def test_a_range_with_a_step_ends_at_its_max():
    assert rates.parse_sizes("64..1518/64") == (*range(64, 1473, 64), 1518)
    assert rates.parse_sizes("64..320/128") == (64, 192, 320)  # the step lands on MAX: once
    assert rates.parse_sizes("100..100/5") == (100,)
    assert rates.parse_sizes("64..70") == (64, 65, 66, 67, 68, 69, 70)  # no step: every length


def test_every_length_is_1455_and_mixes_with_the_other_forms():
    assert rates.parse_sizes("64..1518/1") == tuple(range(64, 1519))
    # Each length once, in order of first mention, beside named lists and profiles.
    assert rates.parse_sizes("1518,64..128/32,imix:seed,seed") == (1518, 64, 96, 128, "imix:seed", 73, 207, 256, 313,
                                                                  512, 726, 1024, 1174, 1280, 1319)
    assert cmod.build({"sizes": "64..1518/2"}, [], backends_known=declared.backend_names()).matrices[0].sizes[-2:] \
        == (1516, 1518)


@pytest.mark.parametrize("text,words", [
    ("64..63", ["64..63", "above MAX"]),
    ("64..1518/0", ["step", "1 B or more"]),
    ("10..100/1", ["10 B", "below the Ethernet minimum"]),
    ("64..1519/1", ["1519 B", "above 1518 B"]),
    ("64..", ["MIN..MAX/STEP"]),
    ("64..128/", ["MIN..MAX/STEP"]),
    ("64..128/-1", ["MIN..MAX/STEP"]),
    ("64.5..128", ["MIN..MAX/STEP"]),
    ("64..99999999999999/1", ["MIN..MAX/STEP"]),
])
def test_a_bad_range_is_one_line(text, words):
    with pytest.raises(UsageError) as e:
        rates.parse_sizes(text)
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


def test_an_expansion_beyond_the_limit_is_refused():
    with pytest.raises(UsageError, match="more than 10,000 lengths"):
        rates.parse_sizes("64..9018/1,seed," + ",".join(f"random:64-{n}" for n in range(100, 1200)), max_len=9018)
    # A campaign of too many steps is refused before any step is made.
    argv = ["--sizes", "64..1518/1", "--pin", "A:A,A:B,auto", "--backends", "pcap,afp-v3", "--app-load", "touch,none"]
    with pytest.raises(UsageError, match=r"makes 174,600 steps, more than 100,000: give fewer --sizes"):
        run_args(*argv, "--duration", "1,2,3,4,5,6,7,8,9,10")
    # The searches choose their own trial lengths: the run lengths multiply only the iperf steps.
    c = run_args(*argv[:-2], "--duration", "1,2,3,4,5,6,7,8,9,10", "--method", "iperf,rfc2544", "--rate", "1%")
    assert len(c.steps()) == sum(m.size for m in c.matrices) == 1455 * 3 * 2 * 11


def test_two_durations_are_an_axis_and_the_key_names_them():
    c = run_args("--backends", "pcap", "--sizes", "64,1518", "--duration", "1,10")
    steps = c.steps()
    assert [(s.size, s.duration_s) for s in steps] == [(64, 1.0), (1518, 1.0), (64, 10.0), (1518, 10.0)]
    assert [s.key for s in steps][:1] == ["iperf|pcap|64|pin=A:A|load=touch|procs=1|dur=1s|rep=1"]
    assert len({s.key for s in steps}) == 4
    assert [c.trial_duration_s(s) for s in steps] == [1.0, 1.0, 10.0, 10.0]
    p = plan_mod.plan_of(c, progress_of([], []), [0, 1])
    assert p.estimated_s(p.steps) > 2 * (1 + 10)  # each step's own duration


def test_one_duration_keeps_the_keys_runs_were_written_with():
    (step,) = run_args("--backends", "pcap", "--sizes", "64", "--duration", "2").steps()
    assert step.key == "iperf|pcap|64|pin=A:A|load=touch|procs=1|rep=1" and step.duration_s == 2.0
    # Matrices of one duration each, but different ones: the campaign has two, each key names its own.
    c = cmod.build({"sizes": [64], "backends": ["pcap"]}, [{"duration": "1"}, {"duration": "3s"}],
                   backends_known=declared.backend_names())
    assert [s.key.split("|")[-2] for s in c.steps()] == ["dur=1s", "dur=3s"]


def test_the_searches_make_one_step_whatever_the_run_lengths():
    c = run_args("--backends", "pcap", "--sizes", "64", "--method", "iperf,rfc2544", "--duration", "1,2,3")
    assert [s.method for s in c.steps()] == ["iperf"] * 3 + ["rfc2544"]
    assert "dur=" not in c.steps()[-1].key


def test_a_count_sends_that_many_frames_in_a_bounded_time():
    c = run_args("--backends", "pcap", "--sizes", "64,imix:seed", "--count", "1000,1_000_000", "--rate", "10%")
    steps = c.steps()
    assert [s.count for s in steps] == [1000, 1000, 1_000_000, 1_000_000]
    assert steps[0].key == "iperf|pcap|64|pin=A:A|load=touch|procs=1|count=1000|rep=1"
    # 1,000,000 frames of 64 B at 10 % of 1 GbE (148,810 pps) take 6.7 s; the bound is above it.
    pps = rates.wire_pps(1e9, 64) / 10
    assert 1e6 / pps < c.trial_duration_s(steps[2]) < 1e6 / pps * 1.1 + 1
    # A mix of lengths: as slow as the longest frames, so the count always fits.
    assert c.trial_duration_s(steps[3]) >= 1e6 / (rates.wire_pps(1e9, 9018) / 10)


@pytest.mark.parametrize("argv,words", [
    (["--duration", "1,2", "--count", "5"], ["--duration or --count, not both"]),
    (["--count", "0"], ["--count", "1 or more"]),
    (["--count", "5,x"], ["--count", "whole numbers", "'x'"]),
    (["--count", "1000", "--rate", "max"], ["--count needs a paced --rate"]),
    (["--count", "1000", "--method", "rfc2544", "--sizes", "64"], ["--count sets the frames of an iperf trial"]),
    (["--count", "1000", "--groups", "2", "--group-size", "10", "--rate", "10%"], ["--count and --groups"]),
    (["--count", "100000000", "--rate", "1000pps", "--sizes", "64"], ["longer than 86,400 s"]),
    (["--count", str(rates.MAX_FRAMES + 1)], ["above", "the most a trial sends"]),
    (["--duration", "1,,2"], ["--duration", "separated by commas"]),
    (["--duration", "1,0"], ["--duration", "above zero"]),
    (["--duration", "1,90000"], ["--duration", "a day"]),
])
def test_a_bad_run_length_is_one_line(argv, words):
    with pytest.raises(UsageError) as e:
        run_args(*argv)
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


def test_in_a_file_the_keys_take_arrays_and_a_matrix_replaces_the_other_length(tmp_path):
    text = """
[campaign]
backends = ["pcap"]
sizes = "64..192/64"
duration = ["1s", 2.5]

[[matrix]]
ring = ["256k", "4M"]

[[matrix]]
count = 5000
"""
    c = cmod.loads(text, tmp_path / "c.toml", backends_known=declared.backend_names())
    assert c.matrices[0].durations == (1.0, 2.5) and c.matrices[0].counts == ()
    assert c.matrices[1].counts == (5000,) and c.matrices[1].lengths == ((0.0, 5000),)
    assert len(c.steps()) == 2 * 2 * 3 + 3
    with pytest.raises(UsageError, match=r"c.toml \[\[matrix\]\] #1: give duration or count, not both"):
        cmod.loads('[[matrix]]\nduration = "1"\ncount = 10\n', tmp_path / "c.toml",
                   backends_known=declared.backend_names())


def test_the_record_and_the_report_name_the_run_length():
    a, b, n, old = (make_result(step=f"iperf|pcap|64|pin=A:A|load=touch|procs=1|{part}rep=1", requested_frames=frames)
                    for part, frames in (("dur=1s|", 0), ("dur=10s|", 0), ("count=5000|", 5000), ("", 0)))
    ka, kb, kn, ko = (keys.series_key(t) for t in (a, b, n, old))
    assert ka != kb and ("run", "1 s") in ka.extra and ("run", "10 s") in kb.extra
    assert ("run", "5,000 frames") in kn.extra
    assert not any(k == "run" for k, _ in ko.extra)  # a run of one length: no axis shown
    labels = keys.series_labels([ka, kb])
    assert labels[ka] == "pcap run 1 s" and labels[kb] == "pcap run 10 s"
    assert json.loads(json.dumps(n.to_record()))["requested_frames"] == 5000


def test_resume_finds_the_steps_of_runs_written_before_run_lengths_were_an_axis():
    for name in ("run-searches-a", "run-records-v1"):
        d = FIXTURES / name
        meta = results.read_run(d)
        if "campaign_toml" in meta:
            c = cmod.loads(meta["campaign_toml"], d / "campaign.toml", backends_known=declared.backend_names())
        else:
            c = campaign_from_args(build_parser().parse_args(meta["command"][1:]))
        progress = progress_of(results.scan_trials(d).trials, results.read_outcomes(d))
        assert [s.key for s in c.steps() if not progress.done(s)] == [], name


def test_resume_of_a_run_of_two_durations_skips_what_it_holds():
    first, second = run_args("--backends", "pcap", "--sizes", "64", "--duration", "1,2").steps()
    progress = progress_of([make_result(step=first.key)], [])
    assert progress.done(first) and not progress.done(second)


def test_resume_of_an_interrupted_run_of_two_durations_runs_only_the_other(tmp_path):
    """`capbench run --resume DIR` of a run cut short after its 1 s trial: the command it started
    with (run.json) gives the same keys, and only the 2 s step is left."""
    from capbench.cli import run as cli_run

    command = ["capbench", "run", "--backends", "pcap", "--sizes", "64", "--duration", "1,2"]
    first, second = campaign_from_args(build_parser().parse_args(command[1:])).steps()
    w = results.RunWriter.create(tmp_path, {}, command=command)
    w.append(make_result(step=first.key, requested_duration_s=1.0))
    w.finish("interrupted")
    c, _, resumed = cli_run._campaign_of(build_parser().parse_args(["run", "--resume", str(w.path)]))
    p = plan_mod.plan_of(c, progress_of(results.scan_trials(resumed).trials, []), [0, 1])
    assert [s.key for s in p.todo] == [second.key] and second.duration_s == 2.0
