"""docs/manual.md's and docs/programs.md's backend tables say what the programs declare (--describe):
the same backends in the same order, and each row's options are options of that backend."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from capbench import declared

ROOT = Path(__file__).resolve().parents[2]
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def options_of(backend: declared.Backend) -> set[str]:
    return {o.name for o in backend.options}


def common_options() -> set[str]:
    return {o.name for o in declared.cap().common_options}


def readme_backend_rows() -> list[list[str]]:
    """The rows of the manual's backend table: | `name` | mechanism | the seeds' idea |."""
    lines = (ROOT / "docs" / "manual.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\|\s*backend\s*\|\s*mechanism\s*\|", line))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_readme_table_lists_the_declared_backends_in_order():
    names = [re.fullmatch(r"`([^`]+)`", row[0]).group(1) for row in readme_backend_rows()]
    assert tuple(names) == declared.backend_names()


def test_readme_table_names_only_options_of_its_row():
    for row in readme_backend_rows():
        backend = declared.backend(row[0].strip("`"))
        for option in OPTION.findall(" ".join(row[1:])):
            assert option in options_of(backend) | common_options(), (backend.name, option)


def cap_synopsis() -> list[str]:
    """The code block under "## capbench-cap" in docs/programs.md."""
    text = (ROOT / "docs" / "programs.md").read_text()
    section = text[text.index("## capbench-cap"):]
    return section[section.index("```\n") + 4:section.index("\n```", section.index("```\n") + 4)].splitlines()


def cap_synopsis_rows() -> dict[str, str]:
    """{backend: its options' text} from the synopsis' `name: [options]` lines (and their
    continuation lines, indented under them)."""
    rows: dict[str, str] = {}
    current = None
    for line in cap_synopsis():
        m = re.match(r"\s+([a-z][a-z0-9-]*):\s+(\[.*)", line)
        if m:
            current = m.group(1)
            rows[current] = m.group(2)
        elif current and re.match(r"\s{20,}\[", line):
            rows[current] += " " + line.strip()
        else:
            current = None
    return rows


def test_programs_md_synopsis_lists_the_declared_backends():
    first = " ".join(cap_synopsis())
    m = re.search(r"--backend ([a-z0-9|-]+)\]", first)
    assert m and tuple(m.group(1).split("|")) == declared.backend_names()


@pytest.mark.parametrize("backend", declared.backend_names())
def test_programs_md_synopsis_gives_each_backend_its_own_options(backend):
    b = declared.backend(backend)
    rows = cap_synopsis_rows()
    if not b.options:
        assert backend not in rows
        return
    assert set(OPTION.findall(rows[backend])) == options_of(b), backend


def test_programs_md_synopsis_common_options_and_app_loads():
    rows = cap_synopsis_rows()
    backend_lines = " ".join(rows.values())
    common = set(OPTION.findall(" ".join(cap_synopsis()))) - set(OPTION.findall(backend_lines))
    assert common <= common_options() | {"--check", "--describe"}, common - common_options()
    m = re.search(r"--app-load ([^\]]+)\]", " ".join(cap_synopsis()))
    assert m and m.group(1).split("|") == [a.form for a in declared.cap().app_loads]


def test_programs_md_has_a_paragraph_for_every_backend():
    text = (ROOT / "docs" / "programs.md").read_text()
    section = text[text.index("## capbench-cap"):text.index("## capbench-xdpcount")]
    described = re.findall(r"^- `([a-z0-9-]+)`:", section, re.M)
    # In registry order, at their first mention (the summary fields come later, some per backend).
    assert [n for n in dict.fromkeys(described) if n in declared.backend_names()] == list(declared.backend_names())


def test_programs_md_gen_synopsis_lists_the_declared_engines():
    text = (ROOT / "docs" / "programs.md").read_text()
    m = re.search(r"capbench-gen --iface IF --rate RATE --dst-mac MAC \[--engine ([a-z0-9|-]+)\]", text)
    assert m and tuple(m.group(1).split("|")) == declared.engine_names()
