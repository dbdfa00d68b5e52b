"""Issue 28 item 8: with several sensors on one stream, the line after each trial and `run --json`
told of the last sensor's record only (the runner passed `trials[-1]`). Each sensor's record is
told of now."""

from __future__ import annotations

import argparse
import json

from capbench.campaign.runner import Unshown
from capbench.cli.run import callbacks
from capbench.report.console import trial_progress
from records import make_result


def sensor_records() -> list:
    return [make_result(sensor=i, sensors=3, received=1_000_000 - i, step="s1") for i in (1, 2, 3)]


def test_the_runner_tells_of_every_record_of_a_trial_once():
    trials = [make_result()]  # a resumed run's trial: told of before
    unshown = Unshown(trials)
    trials += sensor_records()
    assert [r.sensor for r in unshown.take()] == [1, 2, 3]
    assert unshown.take() == []
    trials.append(make_result())
    assert unshown.take() == [trials[-1]]


def test_the_line_after_a_trial_names_each_sensor():
    lines = trial_progress(1, 4, 60.0, 7, sensor_records()).splitlines()
    assert len(lines) == 3
    assert all(f"[{n}] " in line for n, line in zip((7, 8, 9), lines))
    assert all(f"sensor {i} pcap" in line for i, line in zip((1, 2, 3), lines))


def test_json_has_a_trial_line_per_sensor(capsys):
    cb = callbacks(argparse.Namespace(json=True, quiet=True))
    cb.on_trial(1, 4, 60.0, 1, sensor_records())
    out, err = capsys.readouterr()
    trials = [json.loads(line) for line in out.splitlines()]
    assert [t["type"] for t in trials] == ["trial"] * 3 and [t["sensor"] for t in trials] == [1, 2, 3]
    assert "sensor 3" in err
