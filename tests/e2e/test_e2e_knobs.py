"""Knobs on the real test bed (issue 30): `--ring` and a `--backend-args` option that sets the
same buffer are refused before anything starts, and a `--vary` of two block sizes records what
the real capbench-cap says it ran (its summary's ring_bytes), each trial with its knob."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_env import assert_run_measured, decided_trials, missing_prerequisite, run_capbench

pytestmark = pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite()))


def test_ring_and_a_block_size_for_the_same_buffer_are_refused(tmp_path):
    p = run_capbench("run", "--backends", "afp-v3", "--sizes", "64", "--duration", "0.2", "--ring", "256k",
                     "--backend-args", "afp-v3=--block-size 4M", "--results", str(tmp_path), "--no-report")
    assert p.returncode == 2
    (line,) = [x for x in p.stderr.splitlines() if x.strip()]
    assert "--ring and --backend-args --block-size both set afp-v3's buffer" in line
    assert not any(tmp_path.iterdir())  # refused before a results folder or a test bed


def test_a_vary_of_two_block_sizes_records_what_the_program_ran(tmp_path):
    p = run_capbench("run", "--backends", "afp-v3", "--sizes", "64", "--rate", "5%", "--duration", "0.3",
                     "--vary", "afp-v3:block-size=64k,4M", "--backend-args", "afp-v3=--block-count 4",
                     "--results", str(tmp_path), "--no-report")
    assert_run_measured(p)
    (d,) = [x for x in tmp_path.iterdir() if x.is_dir()]
    got = decided_trials(Path(d) / "trials.jsonl")
    assert [r["knobs"] for r in got] == [{"afp-v3:block-size": "64k"}, {"afp-v3:block-size": "4M"}]
    # the ring capbench-cap ran, from its own summary: 4 blocks of each size
    assert [r["ring_bytes"] for r in got] == [4 * (64 << 10), 4 * (4 << 20)]
    assert [r["raw"]["cap"]["ring_bytes"] for r in got] == [r["ring_bytes"] for r in got]
    assert {r["backend_args"] for r in got} == {"--block-count 4"}
    assert "knobs block-size=64k" in p.stdout and "knobs block-size=4M" in p.stdout
    assert "Settings ranked by loss" in p.stdout
