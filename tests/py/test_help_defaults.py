"""The option tables' --help shows a bytes default as its examples write bytes (2M, 64k: k, M, G
as powers of 1024, cb_parse_bytes), the value --describe declares."""

from __future__ import annotations

import re
import subprocess

from capbench import declared
from capbench.binaries import find_program

SHIFT = {"k": 10, "M": 20, "G": 30}


def help_sections() -> dict[str, str]:
    """capbench-cap --help cut at its `--backend NAME` lines, each section's lines joined."""
    text = subprocess.run([str(find_program("capbench-cap")), "--help"], capture_output=True, text=True,
                          check=True).stdout
    parts = re.split(r"^--backend ([a-z0-9_-]+)", text, flags=re.M)
    return {name: " ".join(body.split()) for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_bytes_defaults_read_as_the_declared_number():
    sections = help_sections()
    seen = 0
    for b in declared.backends():
        for o in b.options:
            if o.type != "bytes" or not isinstance(o.default, int) or isinstance(o.default, bool):
                continue
            m = re.search(re.escape(o.name) + r" BYTES .*?\(default ([^)]*)\)", sections[b.name])
            assert m, (b.name, o.name)
            shown = m.group(1)
            if o.default % 1024:
                assert shown == str(o.default), (b.name, o.name, shown)
            else:
                number, unit = re.fullmatch(r"(\d+)([kMG])", shown).groups()
                assert int(number) << SHIFT[unit] == o.default, (b.name, o.name, shown)
            seen += 1
    assert seen, "no backend declares a bytes option with a default"
