"""`capbench tune` of a capture program from a user's adapter file, under a CPU limit (issue 30),
and the backlog knob on the real host setting, on real veth test beds. Short: a tune whose
configurations are all over the limit measures each once (no race), and a run of two 0.5 s trials."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from capbench.testbed import host_sysctl
from e2e_env import (assert_run_measured, capbench_namespaces, decided_trials, left_behind, missing_prerequisite,
                     run_capbench)


@pytest.fixture
def prerequisites():
    why = missing_prerequisite()
    if why:
        pytest.skip(why)


def users_adapter(folder: Path) -> Path:
    """The built-in tcpdump adapter as a user's own program, `mydump`, whose -B knob is `kib`: a knob
    only this file declares."""
    text = resources.files("capbench.trial").joinpath("apps.toml").read_text()
    own = text[text.index("[tcpdump]"):text.index("[dumpcap]")]
    f = folder / "mine.toml"
    f.write_text(own.replace("[tcpdump", "[mydump").replace("{buffer}", "{kib}").replace("knobs.buffer", "knobs.kib"))
    return f


def test_a_tune_of_a_users_program_searches_its_knob_fills_its_template_and_judges_its_cpu(tmp_path, prerequisites):
    before = capbench_namespaces()
    results = tmp_path / "results"
    # 0.01 % of a CPU: no tcpdump meets it, so every configuration is measured once and none races
    p = run_capbench("tune", "--apps-file", str(users_adapter(tmp_path)), "--backends", "mydump", "--sizes", "64",
                     "--rate", "100kpps", "--knobs", "mydump:kib", "--candidates", "mydump:kib=256,8192",
                     "--max-app-cpu", "0.01", "--budget", "40s", "--probe", "0", "--no-report",
                     "--results", str(results), timeout=240)
    assert_run_measured(p)
    (folder,) = results.iterdir()
    (summary,) = json.loads((folder / "tune" / "tune.json").read_text())
    assert {r["label"] for r in summary["ranking"]} == {"defaults", "mydump:kib=256", "mydump:kib=8192"}
    assert all(re.fullmatch(r"not eligible: app CPU \d+ % > --max-app-cpu 0\.01 %", r["verdict"])
               for r in summary["ranking"]), summary["ranking"]
    assert "no configuration is eligible" in p.stdout, p.stdout
    best = summary["ranking"][0]["config"].get("mydump:kib", "2048")
    assert summary["command"] == f"tcpdump -i {{iface}} -n -p -B {best} -w {{out}}"
    assert f"mydump's command with it: {summary['command']}" in p.stdout, p.stdout
    assert summary["run"][summary["run"].index("--apps-file") + 1].endswith("mine.toml")
    # each configuration ran the program with its knob's value in its command
    for t in decided_trials(folder / "trials.jsonl"):
        kib = t["knobs"].get("mydump:kib", "2048")
        assert f" -B {kib} " in t["app_command"], t["app_command"]
    assert not left_behind(before)


def test_the_backlog_knob_holds_each_steps_value_on_the_host_and_puts_the_hosts_back(tmp_path, prerequisites):
    before, found = capbench_namespaces(), host_sysctl.read(host_sysctl.BACKLOG)
    p = run_capbench("run", "--rx-mode", "rps", "--backends", "pcap", "--sizes", "64", "--rate", "20kpps",
                     "--duration", "0.5", "--vary", "backlog=300,5000", "--no-report", "--results", str(tmp_path))
    assert_run_measured(p)
    (folder,) = tmp_path.iterdir()
    trials = decided_trials(folder / "trials.jsonl")
    assert sorted((t["knobs"]["backlog"], t["backlog"]) for t in trials) == [("300", 300), ("5000", 5000)]
    assert host_sysctl.read(host_sysctl.BACKLOG) == found  # put back by the registry
    assert not left_behind(before)
