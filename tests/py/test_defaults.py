"""Every default of a campaign is declared once (campaign.matrix's Matrix and Campaign fields):
`capbench run` without a flag, a campaign file without the key, and the help texts agree."""

import dataclasses
import re
from pathlib import Path

import pytest
from capbench.cli.parser import build_parser
from capbench.cli.run import campaign_from_args
from capbench.campaign import matrix as campaign
from capbench.declared import backend_names
from capbench.rates import LINKS_BPS, RFC2544_SIZES, SEED_SIZES
from capbench.trial.measure import TrialSetup


def _run_actions() -> dict[str, object]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return {a.dest: a for a in sub.choices["run"]._actions}


def test_the_cli_and_a_campaign_file_run_the_same_defaults():
    flags = campaign_from_args(build_parser().parse_args(["run"]))
    file = campaign.loads("[campaign]\n", Path("some.toml"), backends_known=backend_names())
    assert dataclasses.replace(flags, name="", given=()) == dataclasses.replace(file, name="", given=())
    assert file.matrices[0].sizes == flags.matrices[0].sizes == SEED_SIZES  # the seed's 13 lengths, not 64 only
    # Nothing given is the declaration itself: the fields' defaults are the only ones.
    assert campaign.build({}, [], backends_known=backend_names()) == campaign.Campaign()


def test_a_key_given_replaces_its_default_only():
    file = campaign.loads('[campaign]\nsizes = [64]\nlink = "10g"\n', Path("x.toml"), backends_known=backend_names())
    assert file.matrices[0].sizes == (64,) and file.link_bps == 1e10
    assert file.matrices[0].backends == campaign.Matrix.backends and file.pause_s == campaign.Campaign.pause_s


# Flags whose help names the default of a [campaign] key; `trial` has each method's own (methods).
HELP_KEYS = {"method": "methods", "backends": "backends", "sizes": "sizes", "link": "link", "rate": "rate",
             "duration": "duration", "precision": "precision", "loss_tolerance": "loss_tolerance",
             "steps": "steps", "pause": "pause", "engine": "engine", "pin": "pin", "app_load": "app_load",
             "procs": "procs", "group_gap": "group_gap", "repeat": "repeat"}


@pytest.mark.parametrize("flag, key", HELP_KEYS.items())
def test_the_help_names_the_declared_default(flag, key):
    help_text = _run_actions()[flag].help.replace("%%", "%")
    assert re.findall(r"\(default: ([^)]*)\)", help_text) == [campaign.default_text(key)], help_text


def test_settle_default_is_the_trials():
    assert build_parser().parse_args(["run"]).settle == f"{TrialSetup.settle_s:g}"
    assert campaign.Campaign.link_bps == TrialSetup.link_bps and campaign.Campaign.engine == TrialSetup.engine


def test_the_help_lists_the_declared_links_and_named_sizes():
    """--link's speeds and --sizes' named lists come from rates (LINKS_BPS, NAMED_SIZES), as parsing does."""
    actions = _run_actions()
    link_help = actions["link"].help
    assert f"speed: {', '.join(LINKS_BPS)} (" in link_help, link_help
    sizes_help = " ".join(actions["sizes"].help.split())
    assert f"`rfc2544` ({','.join(map(str, RFC2544_SIZES))})" in sizes_help, sizes_help
    assert f"the seed's {len(SEED_SIZES)}: {SEED_SIZES[0]},{SEED_SIZES[1]},...,{SEED_SIZES[-1]}" in sizes_help
