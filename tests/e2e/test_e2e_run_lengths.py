"""The run length as an axis on the real test bed: docs/campaigns.md's short campaign of two
durations, run as the docs say, and `--count`: a trial sends exactly the frames asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from docs_examples import ROOT, toml_blocks
from e2e_env import decided_trials, assert_run_measured, missing_prerequisite, run_capbench

pytestmark = pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite()))

def records(results: Path) -> list[dict]:
    (d,) = [p for p in results.iterdir() if p.is_dir()]
    return decided_trials(d / "trials.jsonl")


def short_campaign() -> str:
    """The docs' short campaign (the ```toml block with name = "short-and-long")."""
    (block,) = [b for b in toml_blocks(ROOT / "docs" / "campaigns.md") if 'name = "short-and-long"' in b]
    return block


def test_the_docs_short_campaign_measures_each_length_at_each_duration(tmp_path):
    path = tmp_path / "short-and-long.toml"
    path.write_text(short_campaign())
    p = run_capbench("run", "--campaign", str(path), "--results", str(tmp_path / "results"), "--no-report")
    assert_run_measured(p)
    got = records(tmp_path / "results")
    assert [(r["frame_len"], r["requested_duration_s"]) for r in got] == [(64, 0.5), (1518, 0.5), (64, 2.0),
                                                                         (1518, 2.0)]
    for r in got:
        assert f"|dur={r['requested_duration_s']:g}s|" in r["step"] and r["requested_frames"] == 0
        # A paced rate sends round(rate x duration) frames: the duration is what the trial ran.
        assert r["sent"] == round(r["offered_pps"] * r["requested_duration_s"])
    # The tables show the run length where it varies: one table per duration.
    assert "run 0.5 s" in p.stdout and "run 2 s" in p.stdout


def test_a_count_sends_exactly_that_many_frames(tmp_path):
    p = run_capbench("run", "--backends", "afp-v3", "--sizes", "64,imix:seed", "--rate", "5%", "--count",
                     "20000,50000", "--results", str(tmp_path), "--no-report")
    assert_run_measured(p)
    got = records(tmp_path)
    assert [(r["size"] or str(r["frame_len"]), r["requested_frames"]) for r in got] == [
        ("64", 20000), ("imix:seed", 20000), ("64", 50000), ("imix:seed", 50000)]
    for r in got:
        assert r["sent"] == r["requested_frames"] and f"|count={r['requested_frames']}|" in r["step"]
        assert r["sent"] == r["received"] + r["lost"]
