"""The exit statuses of `capbench run` (issue 28): one declaration (errors.EXIT_STATUSES), from which
`run --help`, README and docs/json.md list them; "measured" and "measured, but the host interfered"
are told apart, and a run that was disturbed only in runs that were run again is "measured"."""

import dataclasses
from pathlib import Path

from capbench import errors
from capbench.campaign import runner
from capbench.cli.parser import build_parser
from capbench.methods.measurer import MAX_ATTEMPTS
from capbench.methods.simulated import SimulatedDevice
from capbench.rates import wire_pps

ROOT = Path(__file__).resolve().parents[2]


def test_readme_and_json_docs_hold_the_declared_table():
    table = "\n".join(errors.exit_status_table())
    for doc in ("README.md", "docs/json.md"):
        assert table in (ROOT / doc).read_text(), f"{doc}: its exit status table is not errors.EXIT_STATUSES'"


def test_run_help_lists_every_declared_status():
    text = " ".join(build_parser()._subparsers._group_actions[0].choices["run"].format_help().split())
    for s in errors.EXIT_STATUSES:
        assert " ".join(f"{s.text} {s.meaning}".split()) in text


def test_statuses_are_distinct_and_the_errors_use_them():
    codes = [c for s in errors.EXIT_STATUSES for c in s.codes]
    assert len(codes) == len(set(codes))
    assert errors.UsageError.exit_status == errors.BAD_INPUT.code == 2
    assert errors.RunError.exit_status == errors.RUN_FAILED.code == 1
    assert runner.NOTHING_MEASURED_STATUS == errors.NOTHING_MEASURED.code


def _trial(**kw):
    dev = SimulatedDevice(capacity_pps=5e6, **kw)
    return dev.measure(1.0, wire_pps(1e9, 1518) / 2)


def test_a_run_whose_decided_trial_stayed_disturbed_exits_with_the_disturbed_status():
    clean = _trial()
    spoiled = _trial(disturbed_trials=frozenset({0}))
    assert spoiled.disturbed and spoiled.lost > 0
    assert runner.run_status([clean]) == errors.MEASURED.code == 0
    # run again and clean the second time: the first run is superseded, the run measured
    assert runner.run_status([spoiled, dataclasses.replace(clean, attempt=2)]) == errors.MEASURED.code
    # every run disturbed: the last decided, and the run says the host interfered
    runs = [dataclasses.replace(spoiled, attempt=n) for n in range(1, MAX_ATTEMPTS + 1)]
    assert runner.run_status(runs) == errors.DISTURBED.code == 4
    assert runner.run_status([clean, runs[-1]]) == errors.DISTURBED.code
