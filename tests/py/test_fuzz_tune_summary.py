"""Fuzz: tune/tune.json, which `capbench report` reads from a results folder (report.tune_summary).
Each input ends in summaries the report draws without an exception (its part of the page, its
Markdown, its figure), or in no summary and one note of one line; never another exception."""

from __future__ import annotations

import io
import json

from capbench.report import tune_section
from capbench.tune import output
from capbench.report.tune_figure import figure
from capbench.report.tune_summary import read_summaries, to_json
from fuzzing import JSON, examples, mutated, no_hang, one_line, scratch_dir
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.console import Console
from sim_tune import Lab, drive, small_tune

DIR = scratch_dir("capbench-fuzz-tune-")
(DIR / "tune").mkdir()


def _summary() -> dict:
    tune = drive(small_tune(), Lab())
    space = tune.spaces[0]
    return json.loads(to_json([output.summary_of(tune, space, output.rows_of(tune, space))]))[0]


SUMMARY = _summary()
RANKED = SUMMARY["ranking"][0]
KNOB = SUMMARY["knobs"][0]


def report_of(data: bytes) -> None:
    """What the report does with a tune.json holding `data`."""
    (DIR / "tune" / "tune.json").write_bytes(data)
    notes: list[str] = []
    with no_hang():
        tunes = read_summaries(DIR, notes)
        if not tunes:
            assert len(notes) <= 1
            for n in notes:
                one_line(n)
            return
        assert notes == []
        tune_section.section_html(tunes)
        tune_section.markdown(tunes)
        for s in tunes:
            fig = figure(s)
            if fig is not None:
                fig.savefig(io.BytesIO(), format="svg")


@given(st.binary(max_size=300))
@example(b"")
@example(b"[" * 5000)
@example(b"\xff")
@example(json.dumps([SUMMARY]).encode())
@example(json.dumps([SUMMARY, SUMMARY]).encode())
def test_fuzz_tune_json_bytes(data):
    report_of(data)


@given(st.lists(mutated(SUMMARY), min_size=1, max_size=2))
@example([{**SUMMARY, "knobs": [{**KNOB, "name": "$\\frac{x}{", "candidates": ["$a$", "$\\x$"]}]}])
@example([{**SUMMARY, "knobs": [{**KNOB, "candidates": [], "default": None}]}])
@example([{**SUMMARY, "ranking": [{**RANKED, "values": [], "screening_values": [], "finalist": True}]}])
@example([{**SUMMARY, "ranking": [{**RANKED, "values": [1e300, 0.0], "cpu_ns": None}]}])
@example([{**SUMMARY, "size": "imix:1", "backend": "../../x"}])
@settings(max_examples=examples(0.2))  # a figure drawn per example
def test_fuzz_tune_summaries(items):
    report_of(json.dumps(items).encode())


@given(st.lists(mutated(RANKED), min_size=1, max_size=3), st.lists(mutated(KNOB), max_size=2))
@settings(max_examples=examples(0.2))
def test_fuzz_tune_ranked_configurations(ranking, knobs):
    report_of(json.dumps([{**SUMMARY, "ranking": ranking, "knobs": knobs}]).encode())


@given(JSON)
def test_fuzz_tune_json_any_value(value):
    report_of(json.dumps(value).encode())


def test_the_example_reads():
    (DIR / "tune" / "tune.json").write_text(json.dumps([SUMMARY]))
    notes: list[str] = []
    (s,) = read_summaries(DIR, notes)
    assert notes == [] and s.backend == "afp-v3" and s.ranking
