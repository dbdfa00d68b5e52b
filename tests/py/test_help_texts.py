"""Issue 28 item 8: help texts a new user read that said something else than the code does."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def capbench_help(*args: str) -> str:
    p = subprocess.run([sys.executable, "-m", "capbench", *args, "--help"], capture_output=True, text=True,
                       check=True, env={"PYTHONPATH": str(ROOT / "python"), "COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    return p.stdout


def test_run_help_says_where_pin_and_rx_cpu_put_the_receive_work():
    """The default receive model is a cpumap ring whose thread does the receive work (rxmode): --pin
    and --rx-cpu place that thread, a NAPI thread with --rx-mode napi, and an RPS mask only with rps."""
    text = " ".join(capbench_help("run").split())
    for option in ("--pin A:A puts", "--rx-cpu N CPU"):
        at = text.index(option)
        said = text[at:at + 220]
        assert "cpumap ring's thread of the default --rx-mode cpumap" in said, said
        assert "NAPI thread with" in said and "RPS mask with" in said, said
    assert "(RPS mask of the capture veth)" not in text and "sets the RPS masks" not in text


def test_report_help_names_every_file_it_reads():
    text = " ".join(capbench_help("report").split())
    assert all(f"DIR/{name}" in text for name in ("trials.jsonl", "run.json", "searches.jsonl", "tune/tune.json"))


def test_make_help_and_bench_readme_agree_on_how_long_make_bench_takes():
    make = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    readme = " ".join((ROOT / "bench" / "README.md").read_text().split())
    said = re.search(r"make bench .*?about (\d+) minutes", make, re.S)
    written = re.search(r"`make bench` runs every benchmark below, one after the other: about (\d+) minutes", readme)
    assert said and written and said.group(1) == written.group(1), (said, written)
