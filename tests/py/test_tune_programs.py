"""`capbench tune` of a capture program (issue 30): the knobs of a user's adapter file are
searched (`--apps-file`), and the output gives the program's command template with the best
values filled in, beside the `capbench run` line and the campaign file, both of which set the
program's knob as `--vary` does."""

from __future__ import annotations

import dataclasses
import shlex
import tomllib
from pathlib import Path

import pytest
from capbench import declared
from capbench.campaign import matrix as cmod
from capbench.cli import tune as tune_cli
from capbench.cli.parser import build_parser
from capbench.cli.run import campaign_from_args
from capbench.errors import UsageError
from capbench.trial import apps
from capbench.tune import knobs, output, search

MINE = """\
[mydump]
command = "tcpdump -i {iface} -n -p -B {kib} -w {out} 'not ip6'"
file_format = "pcap"

[mydump.knobs.kib]
candidates = [128, 512, 2048, 8192, 32768]
default = 1024
governs = ["socket"]
meaning = "-B in KiB"
"""


@pytest.fixture
def mine(tmp_path) -> Path:
    f = tmp_path / "mine.toml"
    f.write_text(MINE)
    return f


def tune_of(*argv: str):
    return tune_cli.tune_of(build_parser().parse_args(["tune", *argv]))


def test_a_user_adapters_knobs_are_its_space(mine):
    t = tune_of("--apps-file", str(mine), "--backends", "mydump", "--rate", "100kpps", "--budget", "20m")
    (space,) = t.spaces
    own = [k for k in space.knobs if k.backend == "mydump"]
    assert [(k.name, k.flag, k.default, k.governs) for k in own] == [("mydump:kib", "{kib}", "1024", ("socket",))]
    assert own[0].candidates == ("128", "2048", "32768")  # three spread over the declared five
    assert {"rx-ring": "4096", "mydump:kib": "32768"} in [dict(cfg) for cfg in space.configs]
    # every candidate when named; its steps carry the knob to the program's template
    t = tune_of("--apps-file", str(mine), "--backends", "mydump", "--rate", "100kpps", "--knobs", "mydump:kib",
                "--budget", "20m")
    assert [dict(cfg) for cfg in t.spaces[0].configs] == [{}] + [{"mydump:kib": v} for v in
                                                               ("128", "512", "2048", "8192", "32768")]
    step = t.step(t.spaces[0], 2, 0, 1)
    assert step.knobs == (("mydump:kib", "512"),) and step.knob_args == ()
    app = t.campaign.program("mydump").with_knob_values(cmod.program_knob_values(step.knobs, "mydump"))
    argv = app.argv(iface="veth", out="o.pcap", cpu=None, duration_s=1, outdir="d")
    assert argv[argv.index("-B") + 1] == "512"


@pytest.mark.parametrize("argv, said", [
    (("--backends", "mydump"), "unknown backend"),  # without its file
    (("--apps-file", "{mine}", "--backends", "mydump", "--knobs", "mydump:nope"), "mydump has no knob 'mydump:nope'"),
    (("--apps-file", "{mine}", "--backends", "mydump", "--candidates", "mydump:kib=-w"), "knob mydump:kib -w"),
    (("--apps-file", "{missing}", "--backends", "mydump"), "missing.toml"),
])
def test_bad_input_about_a_users_program_is_one_line(mine, argv, said):
    argv = [a.format(mine=mine, missing=mine.parent / "missing.toml") for a in argv]
    with pytest.raises(UsageError) as e:
        tune_of(*argv, "--rate", "100kpps", "--budget", "20m")
    assert said in str(e.value) and "\n" not in str(e.value)


def test_the_filled_template_keeps_the_run_fields_and_fills_the_knobs():
    tcpdump = apps.builtin()["tcpdump"]
    assert tcpdump.with_knob_values({"buffer": "16384"}).filled_command() == \
        "tcpdump -i {iface} -n -p -B 16384 -w {out}"
    assert tcpdump.filled_command() == "tcpdump -i {iface} -n -p -B 2048 -w {out}"  # its default
    mine = apps.parse(MINE, "mine.toml")["mydump"].with_knob_values({"kib": "8192"})
    filled = mine.filled_command()
    assert filled == "tcpdump -i {iface} -n -p -B 8192 -w {out} 'not ip6'"
    # what it prints is a template the adapter takes back, as `--app mydump=...` does
    again = mine.with_command(filled)
    assert again.argv(iface="i", out="o", cpu=None, duration_s=1, outdir="d")[-1] == "not ip6"
    assert shlex.split(filled)[6] == "8192"


def test_the_output_of_a_programs_tune_fills_its_template_and_its_campaign_and_line_set_the_knob(mine):
    t = tune_of("--apps-file", str(mine), "--backends", "mydump", "--rate", "100kpps", "--knobs", "mydump:kib",
                "--budget", "20m")
    space = t.spaces[0]
    best = next(i for i, cfg in enumerate(space.configs) if cfg.get("mydump:kib") == "8192")
    assert output.program_command(t, space, best) == "tcpdump -i {iface} -n -p -B 8192 -w {out} 'not ip6'"
    assert output.program_command(t, space, search.BASELINE).split()[6] == "1024"
    t.results["mydump"] = search.Outcome(final_rung=0)  # the run line names the final trial length
    line = output.run_line(t, space, best)
    args = build_parser().parse_args(line[2:])
    assert args.apps_file == [str(mine)] and args.vary == ["mydump:kib=8192"]
    c = campaign_from_args(args)
    (step,) = c.steps()
    assert step.knobs == (("mydump:kib", "8192"),)
    text = output.campaign_toml(t, space, best)
    assert tomllib.loads(text)["matrix"][0]["vary"] == {"mydump:kib": ["8192"]}
    c = cmod.loads(text, mine.parent / "elsewhere" / "best.toml", backends_known=declared.backend_names())
    assert [s.knobs for s in c.steps() if s.repeat == 1] == [(("mydump:kib", "8192"),), ()]
    # a capbench-cap backend has no template
    t = tune_of("--backends", "afp-v3", "--knobs", "rx-ring", "--budget", "20m")
    assert output.program_command(t, t.spaces[0], 1) is None


def test_tcpdumps_tune_output_names_its_command():
    t = tune_of("--backends", "tcpdump", "--rate", "100kpps", "--knobs", "tcpdump:buffer", "--budget", "20m")
    space = t.spaces[0]
    big = next(i for i, cfg in enumerate(space.configs) if cfg.get("tcpdump:buffer") == "65536")
    assert output.program_command(t, space, big) == "tcpdump -i {iface} -n -p -B 65536 -w {out}"
    text = output.campaign_toml(dataclasses.replace(t, results={"tcpdump": search.Outcome(final_rung=1)}), space, big)
    assert "apps_files" not in text and 'vary = { "tcpdump:buffer" = ["65536"] }' in text
