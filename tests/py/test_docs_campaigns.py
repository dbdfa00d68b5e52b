"""docs/campaigns.md's key table says what the declarations say (Matrix's and Campaign's fields:
every key, its table, its default as `capbench run --help` shows it), and every example in the
docs runs: each campaign in a ```toml block of README.md and docs/*.md, each file of campaigns/
and matrix.py's own example are built by the real campaign reader; each `capbench` command line
in a code block is parsed by the real argparse tree, and the `capbench run` ones build their
campaign (or, for the file that is wrong on purpose, say exactly what the docs say)."""

from __future__ import annotations

import ast
import dataclasses
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from capbench import declared
from capbench.campaign import matrix as campaign
from capbench.binaries import find_program
from capbench.cli import passthrough
from capbench.cli.parser import build_parser
from capbench.cli.run import campaign_from_args
from capbench.errors import UsageError
from capbench.testbed import preflight
from docs_examples import DOCS, command_lines, toml_blocks

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGNS_MD = ROOT / "docs" / "campaigns.md"
CODE = re.compile(r"`([^`]*)`")
TYPES = {"string": str, "number": (int, float), "integer": int, "boolean": bool, "table": dict}


def key_rows() -> dict[str, list[str]]:
    """{key: its row's cells} of the table under "## Keys"."""
    lines = CAMPAIGNS_MD.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\|\s*key\s*\|\s*table\s*\|", line))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        key = re.fullmatch(r"`(\w+)`", cells[0]).group(1)
        assert key not in rows, f"{key} has two rows"
        rows[key] = cells
    return rows


def example_of(cells: list[str]) -> dict:
    """The row's example: its code spans (`key = value` and those it needs `with`) as one table."""
    return tomllib.loads("\n".join(CODE.findall(cells[4])))


def build(top: dict, matrices: list | None = None) -> campaign.Campaign:
    return campaign.build(top, matrices or [], backends_known=declared.backend_names())


def test_the_table_has_every_key_and_only_those():
    assert set(key_rows()) == campaign.KEYS


def test_each_key_is_in_the_tables_the_reader_takes_it_from():
    for key, cells in key_rows().items():
        assert cells[1] == ("both" if key in campaign.MATRIX_KEYS else "[campaign]"), key


def test_each_default_is_the_declared_one_as_the_help_shows_it():
    for key, cells in key_rows().items():
        assert cells[3] == f"`{campaign.default_text(key)}`", key


def of_type(value, kind: str) -> bool:
    """Whether a TOML value is of the table's type `kind` ("integer", "array of strings" ...)."""
    if kind.startswith("array"):
        item = kind.removeprefix("array").removeprefix(" of ").removesuffix("s")
        return isinstance(value, list) and all(not item or of_type(v, item) for v in value)
    return isinstance(value, TYPES[kind]) and (kind == "boolean" or not isinstance(value, bool))


def test_each_example_sets_its_key_with_a_value_of_its_type(tmp_path, monkeypatch):
    shutil.copy(ROOT / "python" / "capbench" / "trial" / "apps.toml", tmp_path / "my-apps.toml")
    monkeypatch.chdir(tmp_path)  # apps_files' example names a file there
    default = build({})
    for key, cells in key_rows().items():
        example = example_of(cells)
        kinds = [k.strip() for k in re.split(r",| or ", cells[2]) if k.strip()]
        assert any(of_type(example[key], k) for k in kinds), (key, example[key], cells[2])
        c = build(example)  # the real reader takes it, and it changes what it says it sets
        assert dataclasses.replace(c, given=()) != default, key
        assert key != "name" or c.name == example["name"]


def test_a_value_of_another_type_is_one_line():
    for key in sorted(campaign.KEYS - {"name", "engine", "link", "rate"}):  # those read any value as text
        with pytest.raises(UsageError) as e:
            build({key: {"a": {"b": 1}}} if key not in ("backend_args", "apps") else {key: [1.5]})
        assert "\n" not in str(e.value), key


def campaign_blocks() -> list[tuple[str, str]]:
    """(where, text) of every campaign in the docs: a ```toml block with a [campaign] table."""
    found = [(f"{p.name} block {i + 1}", text) for p in DOCS for i, text in enumerate(toml_blocks(p))
             if re.search(r"^\[campaign\]", text, re.M)]
    doc = ast.get_docstring(ast.parse((ROOT / "python/capbench/campaign/matrix.py").read_text()))
    found.append(("matrix.py's docstring", "\n".join(line[4:] for line in doc.splitlines()
                                                      if line.startswith("    "))))
    return found


def test_the_docs_hold_the_campaigns_this_test_reads():
    where = [w for w, _ in campaign_blocks()]
    assert sum(w.startswith("campaigns.md") for w in where) >= 3 and "matrix.py's docstring" in where


@pytest.mark.parametrize("where,text", campaign_blocks(), ids=lambda x: x.split("\n")[0][:40])
def test_every_campaign_in_the_docs_builds(where, text):
    if "sise" in text:  # the example of a wrong file: test_the_wrong_file_says_what_the_docs_say
        with pytest.raises(UsageError, match="unknown key 'sise'"):
            campaign.loads(text, Path("bad.toml"), backends_known=declared.backend_names())
        return
    c = campaign.loads(text, Path("example.toml"), backends_known=declared.backend_names())
    assert c.steps()


@pytest.mark.parametrize("path", sorted((ROOT / "campaigns").glob("*.toml")), ids=lambda p: p.name)
def test_every_campaign_file_builds(path):
    c = campaign.load(path, backends_known=declared.backend_names())
    assert c.steps() and c.name == path.stem


def test_the_docstrings_example_runs_its_matrices():
    (where, text), = [(w, t) for w, t in campaign_blocks() if w == "matrix.py's docstring"]
    c = campaign.loads(text, Path("doc.toml"), backends_known=declared.backend_names())
    assert len(c.matrices) == 2 and {s.backend for s in c.steps()} >= {"pcap", "fanout"}


def test_the_docs_hold_the_command_lines_this_test_reads():
    files = {f for f, _ in command_lines()}
    assert {"manual.md", "campaigns.md", "apps.md", "topology.md"} <= files


@pytest.mark.parametrize("argv", [a for _, a in command_lines()], ids=lambda a: " ".join(a)[:60])
def test_every_command_line_in_the_docs_parses_and_its_campaign_builds(argv, tmp_path):
    if argv[0] in passthrough.PASSTHROUGH:  # capbench gen/capture: the C program reads the options
        assert_program_takes(argv[0], argv[1:])
        return
    args = build_parser().parse_args(argv)  # argparse exits (SystemExit 2) on a line it cannot read
    if args.command != "run" or args.resume or args.topology:
        return
    named = [a for a in argv if re.search(r"\.(toml|pcap|csv)$", a) and not (ROOT / a).exists()]
    if args.campaign is not None:
        if named:  # bad.toml: test_the_wrong_file_says_what_the_docs_say runs it
            return
        c = campaign.load(ROOT / args.campaign, backends_known=declared.backend_names())
    elif named:
        return  # a file of the user's own (my-apps.toml): parsed only
    else:
        c = campaign_from_args(args)
    assert c.steps()


def assert_program_takes(cmd: str, argv: list[str]) -> None:
    """The options of `capbench gen`/`capture`, split as the command splits them, judged by the
    program itself (`--check`, which opens nothing); the docs' interface is the user's: lo here."""
    _, _, _, rest = passthrough._split_passthrough(argv)
    procs, rest = passthrough._split_procs(cmd, rest)
    if cmd == "capture":
        _, _, rest = passthrough._split_profile(rest)
    rest = ["lo" if i and rest[i - 1] in ("--iface", "-i") else a for i, a in enumerate(rest)]
    prog = str(find_program(passthrough.PASSTHROUGH[cmd][0]))
    for extra in procs:
        assert preflight.program_refusal([prog, *rest, *extra, "--check"]) is None, argv


def test_the_wrong_file_says_what_the_docs_say(tmp_path):
    text = CAMPAIGNS_MD.read_text()
    (bad,) = [b for b in toml_blocks(CAMPAIGNS_MD) if "sise" in b]
    said = re.search(r"^\$ capbench (run --campaign bad\.toml)\n(.*?)…$", text, re.M)
    (tmp_path / "bad.toml").write_text(bad)
    p = subprocess.run([sys.executable, "-m", "capbench", *said.group(1).split()], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith(said.group(2)) and p.stderr.count("\n") == 1, p.stderr
