"""Man pages and bash/zsh completions, made from the option definitions --help is made from.

`capbench`'s page and completion come from its argparse tree (capbench.cli.parser) through
argparse-manpage and shtab; the completion of `capbench gen` and `capbench capture`, and of
capbench-gen and capbench-cap themselves, from the programs' option tables (their --describe,
read by capbench.declared), turned into argparse parsers here. capbench-xdpcount has no option
table: its completion takes the options its --help names. The programs' man pages are made by
help2man from their --help and --version in the meson build (meson.build).

    python -m capbench.cli.manuals OUTDIR

writes OUTDIR/capbench.1 and, for capbench and each program, OUTDIR/NAME (bash) and
OUTDIR/_NAME (zsh); the meson build runs it into build/docs/ and `meson install` installs them.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from capbench import __version__, declared
from capbench.binaries import BY_HAND, find_program
from capbench.cli.parser import build_parser
from capbench.cli.passthrough import PASSTHROUGH, VERSION_FLAGS, own_options

# Each shell's completion file of a command NAME, as bash-completion and zsh look them up.
SHELLS = {"bash": "{name}", "zsh": "_{name}"}


def _add_declared(p: argparse.ArgumentParser, options: list[declared.Option]) -> None:
    """The options of a C program's tables as argparse arguments: one each (an option several
    variants take is declared in each of their tables), its choices completed."""
    seen: set[str] = set()
    for o in options:
        if o.name in seen:
            continue
        seen.add(o.name)
        flags = [o.short, o.name] if o.short else [o.name]
        help_text = o.help.replace("%", "%%")
        if o.type == "flag":
            p.add_argument(*flags, action="store_true", help=help_text)
        else:
            p.add_argument(*flags, choices=o.choices or None, help=help_text)


def _declared_options(program: str) -> list[declared.Option]:
    if program == "capbench-cap":
        d = declared.cap()
        return [*d.common_options, *(o for b in d.backends for o in b.options)]
    d = declared.gen()
    return [*d.common_options, *(o for e in d.engines for o in e.options)]


def _help_text(program: str) -> str:
    return subprocess.run([str(find_program(program)), "--help"], capture_output=True, text=True,
                          timeout=10, check=True).stdout


def _help_options(program: str) -> list[str]:
    """The long options a program's --help names (capbench-xdpcount: no option table)."""
    return list(dict.fromkeys(re.findall(r"(?<![\w-])--[a-z][a-z-]*", _help_text(program))))


def _help_choices(program: str) -> dict[str, list[str]]:
    """The choices its --help writes as `--mode native|generic`."""
    return {flag: words.split("|") for flag, words in
            re.findall(r"(?<![\w-])(--[a-z][a-z-]*) ([a-z]+(?:\|[a-z]+)+)\b", _help_text(program))}


def program_parser(program: str) -> argparse.ArgumentParser:
    """An argparse parser of a C program, for its completion only (the program parses its own)."""
    p = argparse.ArgumentParser(prog=program, add_help=False)
    if program == "capbench-xdpcount":
        choices = _help_choices(program)
        for flag in _help_options(program):
            if flag in ("--help", "--version"):
                p.add_argument(flag, action="store_true")
            else:
                p.add_argument(flag, choices=choices.get(flag))
        return p
    _add_declared(p, _declared_options(program))
    return p


def capbench_parser() -> argparse.ArgumentParser:
    """capbench's argparse tree, with `gen` and `capture` (which argparse does not parse) given
    their program's options and capbench's own, so that they complete too."""
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    for cmd, (program, _text) in PASSTHROUGH.items():
        child = sub.choices[cmd]
        child.add_argument("-h", "--help", action="help", help="show this help and the program's and exit")
        child.add_argument(*VERSION_FLAGS, action="version", version=f"capbench {__version__}",
                           help="print the version of capbench and the program and exit")
        for flag, metavar, help_text in own_options(cmd):
            if metavar is None:
                child.add_argument(flag, action="store_true", help=help_text)
            else:
                child.add_argument(flag, metavar=metavar, help=help_text)
        _add_declared(child, [o for o in _declared_options(program) if o.name not in ("--help", "--version")])
    return p


def man_page(p: argparse.ArgumentParser) -> str:
    from argparse_manpage.manpage import Manpage  # a build tool: only `make` needs it

    return str(Manpage(p, _data={"project_name": "capbench", "version": __version__,
                                 "description": "an open packet-capture benchmark for Linux",
                                 "manual_title": "capbench manual", "manual_section": 1}))


def completion(p: argparse.ArgumentParser, shell: str) -> str:
    import shtab  # a build tool: only `make` needs it

    return shtab.complete(p, shell=shell)


def write_all(out: Path) -> list[Path]:
    """Write capbench.1 and every completion into out (meson.build installs them); the files."""
    out.mkdir(parents=True, exist_ok=True)
    capbench = capbench_parser()
    man = out / "capbench.1"
    man.write_text(man_page(capbench))
    written = [man]
    parsers = {"capbench": capbench, **{name: program_parser(name) for name in BY_HAND}}
    for shell, pattern in SHELLS.items():
        for name, parser in parsers.items():
            path = out / pattern.format(name=name)
            path.write_text(completion(parser, shell))
            written.append(path)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m capbench.cli.manuals OUTDIR", file=sys.stderr)
        return 2
    write_all(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
