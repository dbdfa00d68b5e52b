"""Every example of the docs (README.md, docs/*.md) runs here, as a new user would run it on this
machine: the real command, as root, from a folder of its own (tests/docs_examples.py finds them;
tests/py/test_docs_campaigns.py checks that they parse and build).

- Each `capbench` command line of a code block:
  - one that needs what this machine has not (a NIC such as enp1s0f0, Suricata, a results
    folder of the user's) ends in the one line and exit status 2 that name what is missing;
  - a file it names that the docs give (a campaign's ```toml block by its `name`, the adapters
    of docs/apps.md for my-apps.toml) is written from the docs first;
  - every other line measures: its methods, backends, axes and outputs as the docs give them,
    each trial shortened (docs_examples.shortened) so that all of them take a few minutes; its
    results folder holds a trial per step (an answer per search) and the report it asked for.
- Each campaign of a ```toml block that no command line runs, and that builds other steps than
  every line does, runs the same way.
The topology lines (docs/topology.md) run in test_e2e_hosts.py on OpenSSH servers, and the
campaign tests/e2e/test_e2e_run_lengths.py runs as written is left to it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from capbench import declared
from capbench.campaign import matrix as campaign
from capbench.campaign.results import TRIALS_FILE
from capbench.cli.parser import build_parser
from capbench.cli.run import campaign_from_args

from capbench.options import option_value, without
from docs_examples import DOCS, ROOT, command_lines, shortened, shortened_campaign, toml_blocks
from e2e_env import decided_trials, capbench_cmd, capbench_env, capbench_namespaces
from test_e2e_run_lengths import short_campaign

WRONG = "typo"  # docs/campaigns.md's file that is wrong on purpose: test_docs_campaigns runs it


def examples() -> list[list[str]]:
    """The docs' distinct command lines, in their order (one that differs only in where its results
    go is the same); the topology ones are test_e2e_hosts'."""
    seen: list[list[str]] = []
    for _where, argv in command_lines():
        if "--topology" not in argv and without(argv, "--results") not in [without(a, "--results") for a in seen]:
            seen.append(argv)
    return seen


def docs_campaigns() -> dict[str, str]:
    """{name: text} of each campaign of a ```toml block of the docs."""
    found = {}
    for path in DOCS:
        for text in toml_blocks(path):
            m = re.search(r'^\[campaign\][^\n]*\nname = "([^"]+)"', text, re.M)
            if m:
                found[m.group(1)] = text
    return found


def docs_file(name: str) -> str | None:
    """The docs' text of a file an example names, or None: a campaign by its name, the adapters of
    docs/apps.md's worked examples for a file of adapters (my-apps.toml, my-ids.toml)."""
    if name.endswith(".toml") and Path(name).stem in docs_campaigns():
        return docs_campaigns()[Path(name).stem]
    if name.endswith(("-apps.toml", "-ids.toml")):
        return "\n".join(b for b in toml_blocks(ROOT / "docs" / "apps.md") if re.match(r"^\[\w+\]\ncommand = ", b))
    return None


def missing_here(argv: list[str]) -> list[str]:
    """What the line needs that this machine has not: its interfaces, the program of a --backends
    adapter, a results folder to resume."""
    words = [iface for opt in ("--gen-iface", "--cap-iface", "--iface", "-i")
             if (iface := option_value(argv, opt)) and not Path(f"/sys/class/net/{iface}").exists()]
    if resume := option_value(argv, "--resume"):
        words.append(resume)
    apps = {a.split("=", 1)[0] for a in [option_value(argv, "--app")] if a}
    words += [b for b in (option_value(argv, "--backends") or "").split(",")
              if b and b not in declared.backend_names() and b not in apps and shutil.which(b) is None]
    return words


def steps_of(c: campaign.Campaign) -> set[str]:
    return {s.key for s in c.steps()}


def campaign_of(argv: list[str], cwd: Path) -> campaign.Campaign:
    args = build_parser().parse_args(argv)
    if args.campaign:
        return campaign.load(cwd / args.campaign, backends_known=declared.backend_names())
    return campaign_from_args(args)


def run_example(argv: list[str], cwd: Path, results: Path) -> None:
    """Run a line that measures, shortened, and check what it wrote."""
    p = subprocess.run(capbench_cmd(*shortened(argv, results), "--quiet"), cwd=cwd, capture_output=True, text=True,
                       env=capbench_env(), stdin=subprocess.DEVNULL, timeout=600)
    assert p.returncode in (0, 3, 4), (argv, p.stderr[-3000:])
    (bed,) = re.findall(r"^test bed ([0-9a-f]{6}):", p.stderr, re.M)
    assert not {f"capbench-{bed}-gen", f"capbench-{bed}-cap"} & capbench_namespaces()  # its test bed is gone
    (folder,) = results.iterdir()
    trials = decided_trials(folder / TRIALS_FILE)
    searches = folder / "searches.jsonl"
    answers = searches.read_text().splitlines() if searches.exists() else []
    # a trial per iperf step, an answer per search step (its trials are the search's)
    assert sum(t["method"] == "iperf" for t in trials) + len(answers) == len(campaign_of(argv, cwd).steps()), argv
    assert (folder / "report" / "report.html").is_file() != ("--no-report" in argv)
    if "--json" in argv:
        lines = [json.loads(line) for line in p.stdout.splitlines()]
        assert lines[-1]["type"] == "end" and lines[-1]["results"] == str(folder)
    if "--profile" in argv:
        assert all(t["profile"] for t in trials)


def test_the_docs_have_examples_of_each_kind():
    lines = examples()
    assert any(missing_here(a) for a in lines) and any(not missing_here(a) and a[0] == "run" for a in lines)
    assert any("--campaign" in a and not missing_here(a) for a in lines) and any("--json" in a for a in lines)
    assert WRONG in docs_campaigns() and short_campaign() in docs_campaigns().values()


@pytest.mark.parametrize("argv", examples(), ids=lambda a: " ".join(a)[:70])
def test_every_command_line_in_the_docs_runs(argv, tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for word in argv:
        if (text := docs_file(word)) is not None:
            (cwd / word).write_text(shortened_campaign(text) if Path(word).stem in docs_campaigns() else text)
    if (name := option_value(argv, "--campaign")) and not (cwd / name).exists():
        assert name == "bad.toml"
        pytest.skip("the docs' wrong file: tests/py/test_docs_campaigns.py runs it")
    missing = missing_here(argv)
    if not missing and argv[0] == "run":
        run_example(argv, cwd, tmp_path / "results")
        return
    p = subprocess.run(capbench_cmd(*argv), cwd=cwd, capture_output=True, text=True, env=capbench_env(),
                       stdin=subprocess.DEVNULL, timeout=120)
    assert missing, f"no example but `capbench run` measures here: {argv}"
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, (argv, p.stderr)
    assert any(w in p.stderr for w in missing), (missing, p.stderr)
    assert set(cwd.iterdir()) <= {cwd / w for w in argv}  # it wrote nothing


def other_campaigns() -> list[str]:
    """The docs' campaigns that no command line names and that build other steps than every line:
    buffers-and-run-length is `run --ring 256k,64M --duration 1,10,60`, which a line runs."""
    named = {Path(w).stem for a in examples() for w in a if w.endswith(".toml")}
    by_lines = [steps_of(campaign_from_args(build_parser().parse_args(a))) for a in examples()
                if a[0] == "run" and not missing_here(a) and "--campaign" not in a]
    out = []
    for name, text in docs_campaigns().items():
        if name in named or name == WRONG or text == short_campaign():
            continue
        c = campaign.loads(text, Path(f"{name}.toml"), backends_known=declared.backend_names())
        if steps_of(c) not in by_lines:
            out.append(name)
    return out


@pytest.mark.parametrize("name", other_campaigns())
def test_every_other_campaign_in_the_docs_runs(name, tmp_path):
    (tmp_path / f"{name}.toml").write_text(shortened_campaign(docs_campaigns()[name]))
    run_example(["run", "--campaign", f"{name}.toml"], tmp_path, tmp_path / "results")
