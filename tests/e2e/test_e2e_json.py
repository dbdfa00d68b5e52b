"""`capbench run --json` (docs/json.md) and the live view, end to end on the command's own test bed:
stdout holds only JSON Lines of the documented types, each trial line a record capbench's own
reader loads, the end line names the results folder and the exit status; the live line appears on
a terminal only, and not with --quiet."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from capbench.campaign.results import TRIALS_FILE
from capbench.trial.record import load_trial

from e2e_env import capbench_cmd, capbench_env, run_capbench

DOCUMENTED = {"trial", "answer", "end"}
LIVE = "\x1b[K"


def test_run_json_is_json_lines_of_the_documented_types(tmp_path):
    p = run_capbench("run", "--json", "--backends", "afp-v3", "--sizes", "64", "--duration", "1", "--method",
                     "iperf,rfc2544", "--trial", "1", "--precision", "25", "--pause", "0", "--no-report",
                     "--results", str(tmp_path), timeout=300)
    assert p.returncode in (0, 3, 4), p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    assert lines and {m["type"] for m in lines} <= DOCUMENTED
    trials = [m for m in lines if m["type"] == "trial"]
    answers = [m for m in lines if m["type"] == "answer"]
    end = lines[-1]
    assert end["type"] == "end" and end["status"] == p.returncode and end["report"] is None
    results = Path(end["results"])
    on_disk = (results / TRIALS_FILE).read_text().splitlines()
    assert len(trials) == len(on_disk) >= 2
    for line, disk in zip(trials, on_disk):
        record = {k: v for k, v in line.items() if k != "type"}
        assert load_trial(record) == load_trial(json.loads(disk))
    assert len(answers) == 1 and answers[0]["method"] == "rfc2544"
    # The human view is on stderr: its tables and the results line.
    assert f"results: {results}" in p.stderr
    assert LIVE not in p.stderr  # not a terminal: no live line


def run_on_terminal(tmp_path: Path, *extra: str) -> str:
    """capbench run with a pseudo-terminal as its stdout and stderr (util-linux `script`)."""
    cmd = " ".join(capbench_cmd("run", "--backends", "afp-v3", "--sizes", "64", "--duration", "3", "--no-report",
                                "--results", str(tmp_path), *extra))
    # Bytes, not text: text mode would turn the live line's carriage returns into line ends.
    p = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True,
                       env={**capbench_env(), "COLUMNS": "200"}, timeout=120, stdin=subprocess.DEVNULL)
    out = p.stdout.decode(errors="replace")
    assert p.returncode in (0, 3, 4), out
    return out


def test_live_line_on_a_terminal_and_not_with_quiet(tmp_path):
    shown = run_on_terminal(tmp_path / "a")
    updates = [u for u in shown.split("\r") if u.startswith(LIVE) and "iperf afp-v3 64 B at 100%" in u]
    assert len(updates) >= 2, shown[-2000:]
    assert any("captured" in u and "% busy" in u for u in updates), updates
    # Sent and captured of one instant (the programs' interval lines of the same tick): never more
    # captured than sent but for the few frames of the milliseconds between the two readings; lines
    # up to a second apart made it up to a second's frames (1.49 million at 100 % of 1 GbE).
    behind = [int(m.group(1).replace(",", "")) for u in updates
              for m in [re.search(r"not captured so far (-?[\d,]+)", u)] if m]
    assert behind and min(behind) > -20_000, updates
    quiet = run_on_terminal(tmp_path / "b", "--quiet")
    assert "iperf afp-v3 64 B at 100%:" not in quiet


def test_backends_json_lists_every_declared_backend_and_program():
    from capbench import declared
    from capbench.trial import apps

    p = run_capbench("backends", "--json")
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    assert [m["name"] for m in lines if m["type"] == "backend"] == list(declared.backend_names())
    assert {m["name"] for m in lines if m["type"] == "program"} == set(apps.builtin())
    assert all(set(m) == {"type", "name", "works", "why", "account"} and isinstance(m["works"], bool) for m in lines)
    # Each one's loss account as declared (its C file, its adapter): layer and counter of each row.
    rows = {m["name"]: [(a["layer"], a["counter"]) for a in m["account"]] for m in lines}
    assert rows["afp-v3"] == [(r.layer, r.counter) for r in declared.backend("afp-v3").account]
    assert ("socket", "PACKET_STATISTICS tp_drops") in rows["afp-v3"] and rows["argus"] == []
    assert all(m["works"] for m in lines if m["name"] in ("afp-v3", "pcap", "tcpdump")), lines


def documented_lines(program: str) -> dict[str, list[set[str]]]:
    """{type: the fields of each example line of that type} that docs/programs.md gives under
    `## PROGRAM` (a line that goes on on the next, indented; `…` for a value that varies). A
    type may have several (capbench-cap's summary of a capture and of --read FILE)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "programs.md").read_text()
    section = text.split(f"\n## {program} ")[1].split("\n## ")[0]
    found: dict[str, list[set[str]]] = {}
    for block in re.findall(r"^```\n(.*?)^```", section, re.S | re.M):
        for line in re.sub(r"\n ", "", block).splitlines():
            if line.startswith('{"type":'):
                doc = json.loads(line.replace("{…}", "{}").replace("[…]", "[]").replace("…", "0"))
                found.setdefault(doc["type"], []).append(set(doc))
    return found


def test_gen_and_capture_json_lines_have_the_documented_fields(tb):
    """`capbench capture` and `capbench gen` on a test bed: each line parses, and has every field of
    an example line of its type in docs/programs.md; each type documented there is printed (but
    `check`, of --check only)."""
    cap = subprocess.Popen(capbench_cmd("capture", "--netns", tb.cap_ns, "--iface", tb.cap_if, "--backend", "afp-v3",
                                        "--duration", "3"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=capbench_env(), stdin=subprocess.DEVNULL)
    assert cap.stdout is not None
    first = cap.stdout.readline()
    gen = run_capbench("gen", "--netns", tb.gen_ns, "--iface", tb.gen_if, "--engine", "afpacket", "--rate", "50kpps",
                       "--duration", "1.5", "--size", "64", timeout=30)
    out, err = cap.communicate(timeout=30)
    assert gen.returncode == 0 and cap.returncode == 0, (gen.stderr, err)
    for program, text in (("capbench-cap", first + out), ("capbench-gen", gen.stdout)):
        lines = [json.loads(line) for line in text.splitlines()]
        documented = documented_lines(program)
        assert {m["type"] for m in lines} >= set(documented) - {"check"}, (program, lines)
        for m in lines:
            examples = documented.get(m["type"], [set()])
            assert any(doc <= set(m) for doc in examples), (program, m["type"], [doc - set(m) for doc in examples])
