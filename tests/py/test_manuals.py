"""Man pages and shell completions come from the option definitions --help comes from: every
option of every command is in them, real bash completes with them, and -V/--version answers on
every command and program with the one version (meson.build's, capbench.__version__)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from capbench import __version__, declared
from capbench.binaries import BY_HAND, find_program
from capbench.cli import manuals

PROGRAMS = BY_HAND


def build_dir() -> Path:
    return find_program("capbench-cap").parent


def built_docs() -> Path:
    """What the build made of them (docs/meson.build): capbench.1 and the completions."""
    docs = build_dir() / "docs"
    assert (docs / "capbench.1").is_file(), f"{docs}: not built (meson setup with -Dmanuals_python, or `make`)"
    return docs


def commands(p: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], list[str]]:
    """Every command of an argparse tree (its words after `capbench`) and its option strings."""
    found = {path: [s for a in p._actions for s in a.option_strings]}
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, child in a.choices.items():
                found.update(commands(child, (*path, name)))
    return found


def program_options(program: str) -> list[str]:
    if program == "capbench-xdpcount":
        return manuals._help_options(program)
    return [o.name for o in manuals._declared_options(program)] + [o.short for o in manuals._declared_options(program)
                                                                    if o.short]


def roff(path: Path) -> str:
    """A man page's source with roff's escaped dash made plain."""
    return path.read_text().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "").replace("\\fI", "")


def test_capbench_man_page_names_every_command_and_option():
    text = roff(built_docs() / "capbench.1")
    tree = commands(manuals.capbench_parser())
    assert {("run",), ("gen",), ("capture",), ("testbed", "down")} <= set(tree)
    for path, options in tree.items():
        assert " ".join(path) in text
        for option in options:
            assert option in text, (path, option)


def test_gen_and_capture_take_their_programs_options_in_the_tree():
    tree = commands(manuals.capbench_parser())
    for cmd, program in (("gen", "capbench-gen"), ("capture", "capbench-cap")):
        assert set(program_options(program)) <= set(tree[(cmd,)])
        assert "--netns" in tree[(cmd,)] and "-V" in tree[(cmd,)]
    assert {"-w", "-c", "-s", "-i", "--procs", "--profile-out"} <= set(tree[("capture",)])


@pytest.mark.parametrize("program", PROGRAMS)
def test_program_man_page_names_every_option(program):
    page = build_dir() / f"{program}.1"
    text = roff(page)
    assert f"{program} {__version__}" in text  # from its --version
    for option in program_options(program):
        assert option in text, option


@pytest.mark.parametrize("shell, pattern", manuals.SHELLS.items())
def test_completions_offer_every_option(shell, pattern):
    docs = built_docs()
    for path, options in commands(manuals.capbench_parser()).items():
        text = (docs / pattern.format(name="capbench")).read_text()
        for option in options:
            assert option in text, (shell, path, option)
    for program in PROGRAMS:
        text = (docs / pattern.format(name=program)).read_text()
        for option in program_options(program):
            assert option in text, (shell, program, option)


COMPLETE = r"""
source "$1"; shift
func=$(complete -p "$1" | sed 's/.* -F \([^ ]*\) .*/\1/')
COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
"$func" "$1" "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
printf '%s\n' "${COMPREPLY[@]}"
"""


def bash_completes(*words: str) -> set[str]:
    """What real bash offers at the end of `words` (the last one being typed), with the build's
    completion of words[0] loaded."""
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", COMPLETE, "bash", str(built_docs() / words[0]), *words],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return set(p.stdout.split())


def test_bash_completes_commands_options_and_choices():
    assert bash_completes("capbench", "run", "--back") == {"--backends", "--backend-args", "--backlog"}
    assert {"run", "testbed", "gen", "capture", "backends", "report", "compare"} <= bash_completes("capbench", "")
    assert bash_completes("capbench", "testbed", "") >= {"up", "down", "status"}
    assert bash_completes("capbench", "capture", "--snap") == {"--snaplen"}
    assert bash_completes("capbench", "capture", "--pcap-api", "") == {"next", "dispatch"}
    assert bash_completes("capbench-cap", "--fanout-mode", "") == set(
        next(o for b in declared.cap().backends for o in b.options if o.name == "--fanout-mode").choices)
    assert bash_completes("capbench-gen", "--eng") == {"--engine"}
    assert bash_completes("capbench-xdpcount", "--cl") == {"--clone-to"}
    assert bash_completes("capbench-xdpcount", "--mode", "") == {"native", "generic"}


def run_capbench(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(Path(manuals.__file__).parents[2]), CAPBENCH_BUILD_DIR=str(build_dir()))
    return subprocess.run([sys.executable, "-m", "capbench", *args], capture_output=True, text=True, env=env,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_version_on_every_command():
    for path in commands(manuals.capbench_parser()):
        for flag in ("-V", "--version"):
            p = run_capbench(*path, flag)
            want = [f"capbench {__version__}"]
            if len(path) == 1 and path[0] in manuals.PASSTHROUGH:  # a program run by capbench: its line too
                want.append(f"{manuals.PASSTHROUGH[path[0]][0]} {__version__}")
            assert (p.returncode, p.stdout.splitlines(), p.stderr) == (0, want, ""), path


@pytest.mark.parametrize("program", PROGRAMS)
def test_version_of_every_program(program):
    for flag in ("-V", "--version"):
        p = subprocess.run([str(find_program(program)), flag], capture_output=True, text=True, timeout=10)
        assert (p.returncode, p.stdout, p.stderr) == (0, f"{program} {__version__}\n", "")


def test_meson_install_installs_the_pages_and_completions(tmp_path):
    p = subprocess.run(["meson", "install", "-C", str(build_dir()), "--no-rebuild", "--quiet",
                        "--destdir", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    installed = {f.relative_to(tmp_path).as_posix().split("/share/", 1)[-1] for f in tmp_path.rglob("*") if f.is_file()}
    for name in ("capbench", *PROGRAMS):
        assert {f"man/man1/{name}.1", f"bash-completion/completions/{name}", f"zsh/site-functions/_{name}"} <= installed


def test_zsh_reads_every_zsh_completion():
    """zsh parses each completion file (-n: read, run nothing)."""
    for name in ("capbench", *PROGRAMS):
        p = subprocess.run(["zsh", "-n", str(built_docs() / f"_{name}")], capture_output=True, text=True, timeout=30)
        assert (p.returncode, p.stderr) == (0, ""), name
