"""The examples of the docs (README.md and docs/*.md), as tests/py and tests/e2e read them: the
```toml blocks and each `capbench ...` command line of a code block; and how the end-to-end tests
shorten the lines that measure (`shortened`) so that all of them run in a few minutes."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

from capbench.campaign import matrix as campaign
from capbench.options import option_value, without

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def toml_blocks(path: Path) -> list[str]:
    return re.findall(r"^```toml\n(.*?)^```", path.read_text(), re.S | re.M)


def command_lines() -> list[tuple[str, list[str]]]:
    """(file, argv after `capbench`) of every `capbench ...` line in a code block of the docs;
    a comment after two spaces is left out, a line ending in \\ goes on."""
    lines = []
    for p in DOCS:
        for block in re.findall(r"^```[a-z]*\n(.*?)^```", p.read_text(), re.S | re.M):
            block = block.replace("\\\n", " ")
            for line in block.splitlines():
                m = re.match(r"^\s*(?:\$ )?(?:sudo )?capbench (?!=)(.*)$", line)
                if m:
                    lines.append((p.name, shell_words(re.split(r"\s{2,}[#(]", m.group(1))[0])))
    return lines


def shell_words(text: str) -> list[str]:
    """The words of a command line up to its first shell operator (`> run.jsonl`, `| jq ...`)."""
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    words = []
    for word in lex:
        if word and set(word) <= set("();<>|&"):
            break
        words.append(word)
    return words


# How the end-to-end tests shorten an example that measures, as an option or a campaign key: the
# load 1/20 of the docs' length, from 0.2 to 1 s (1, 10, 60 s: 0.2, 0.5, 1 s), a count 1/50 of the
# docs' (at least 1,000), a search trial of 1 s (rfc2544's least) at 25 % precision (an answer in about
# four trials), no pause.
SEARCHES = {"trial": "1s", "precision": 25.0, "pause": "0"}


def short_seconds(values: list[str]) -> list[str]:
    return [f"{min(1.0, max(0.2, float(str(v).rstrip('s')) / 20)):g}s" for v in values]


def short_counts(values: list[int]) -> list[int]:
    return [max(1000, int(v) // 50) for v in values]


def shortened(argv: list[str], results: Path) -> list[str]:
    """A `capbench run` line with its trials shortened and its results in `results` (a campaign
    file's are shortened by shortened_campaign)."""
    out = [*without(argv, "--duration", "--count", "--results", *(f"--{k}" for k in SEARCHES)),
           "--results", str(results)]
    if "--campaign" in argv:
        return out
    if count := option_value(argv, "--count"):
        out += ["--count", ",".join(map(str, short_counts(count.split(","))))]
    else:
        given = option_value(argv, "--duration") or ",".join(f"{x:g}" for x in campaign.default_of("duration"))
        out += ["--duration", ",".join(short_seconds(given.split(",")))]
    if (option_value(argv, "--method") or "iperf") != "iperf":
        out += [w for k, v in SEARCHES.items() for w in (f"--{k}", str(v))]
    return out


def shortened_campaign(text: str) -> str:
    """A campaign file's text with its trials shortened as `shortened` does a command line's: each
    `duration`, `count` and search key of any table replaced, and the search keys set in [campaign]."""
    def short(m: re.Match) -> str:
        key, value = m.group(1), tomllib.loads(f"v = {m.group(2)}")["v"]
        listed = value if isinstance(value, list) else [value]
        new = short_seconds(listed) if key == "duration" else short_counts(listed) if key == "count" else [SEARCHES[key]]
        return f"{key} = {json.dumps(new if isinstance(value, list) else new[0])}"

    text = re.sub(rf"^({'|'.join(['duration', 'count', *SEARCHES])}) = (.*)$", short, text, flags=re.M)
    head = "".join(f"{k} = {json.dumps(v)}\n" for k, v in SEARCHES.items() if not re.search(rf"^{k} = ", text, re.M))
    return re.sub(r"^\[campaign\][^\n]*\n", lambda m: m.group(0) + head, text, count=1, flags=re.M)
