"""The ssh settings capbench refuses unless the user says `--insecure-ssh` (docs/topology.md).

capbench runs `ssh` as the user who runs capbench (often root), with options a topology file names.
Some ssh settings run a command or load a library on this machine, and some let ssh log in to a host
whose key it has not checked; either turns a topology file into something more than a list of hosts.
Each such setting is one Rule, applied wherever a setting can come from:

- a topology's `ssh_options` (each `Key=Value`, as after `ssh -o`), when the file is read;
- the `ssh_config` file a topology names (ssh_config(5) lines), read as text before ssh ever reads it:
  `ssh -G` runs a `Match exec` command while it evaluates the file, and `Include` pulls in files this
  check would not see;
- what ssh will really use for the host (`ssh -G`: ~/.ssh/config and /etc/ssh/ssh_config too), before
  the first login (Host.open).

Not refused: ProxyJump (ssh runs itself, `ssh -W`, to the jump host, checking that host's key as any
login does: no command of the user's), UserKnownHostsFile or GlobalKnownHostsFile (a file that does
not hold the key, /dev/null included, makes the login fail: BatchMode never asks), VerifyHostKeyDNS (ssh
trusts only DNSSEC-signed answers without asking).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

INSECURE_FLAG = "--insecure-ssh"


@dataclass(frozen=True)
class Rule:
    keyword: str  # as ssh_config(5) spells it (ssh itself ignores case)
    unsafe: Callable[[str], bool]  # its value (the first word of it for Match) -> refused
    why: str  # what it does, for the message


def _set_to_other_than(*safe: str) -> Callable[[str], bool]:
    return lambda value: value.strip().lower() not in safe


RULES = (
    Rule("ProxyCommand", _set_to_other_than("none"), "runs a command on this machine to reach the host"),
    Rule("LocalCommand", _set_to_other_than("none"), "runs a command on this machine after the login"),
    Rule("PermitLocalCommand", lambda v: v.strip().lower() in ("yes", "true"),
         "lets ssh run LocalCommand on this machine"),
    Rule("KnownHostsCommand", _set_to_other_than("none"), "runs a command on this machine to find host keys"),
    Rule("PKCS11Provider", _set_to_other_than("none"), "loads a library into ssh"),
    Rule("SecurityKeyProvider", _set_to_other_than("internal"), "loads a library into ssh"),
    # yes (true) refuses a key it does not know; ask asks, and BatchMode=yes makes that a refusal.
    Rule("StrictHostKeyChecking", lambda v: v.strip().lower() in ("no", "off", "false", "accept-new"),
         "lets ssh log in to a host whose key it has not checked"),
    Rule("Match", lambda v: any(w.lstrip("!") == "exec" for w in v.lower().split()),
         "runs a command on this machine (Match exec)"),
    Rule("Include", lambda v: True, "reads more ssh_config files, which capbench does not check"),
)
_BY_KEYWORD = {r.keyword.lower(): r for r in RULES}
# ssh_config(5): a keyword, then its arguments after whitespace or one '=' (with optional whitespace).
_LINE = re.compile(r"\s*([A-Za-z][A-Za-z0-9]*)(?:\s*=\s*|\s+)(.*?)\s*")


def refusal(keyword: str, value: str) -> str | None:
    """What `keyword value` does that capbench refuses without --insecure-ssh (Rule.why); None: nothing."""
    rule = _BY_KEYWORD.get(keyword.lower())
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':  # ssh_config(5) quotes an argument with spaces
        value = value[1:-1]
    return rule.why if rule is not None and rule.unsafe(value) else None


def split_option(option: str) -> tuple[str, str]:
    """(keyword, value) of one `Key=Value` (or ssh_config line)."""
    m = _LINE.fullmatch(option)
    return (m.group(1), m.group(2)) if m else (option.strip(), "")


def config_lines(text: str) -> Iterator[tuple[int, str, str]]:
    """(line number, keyword, value) of each setting of an ssh_config file's text."""
    for n, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, value = split_option(stripped)
            yield n, keyword, value


def refused_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, the setting as written, why) of each line of an ssh_config file a Rule refuses."""
    found = []
    for n, keyword, value in config_lines(text):
        why = refusal(keyword, value)
        if why:
            found.append((n, f"{keyword} {value}".strip(), why))
    return found


def refused_settings(effective: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(the setting as `ssh -G` prints it, why) of each effective setting a Rule refuses."""
    return [(f"{k} {v}", why) for k, v in effective if (why := refusal(k, v))]


def parse_effective(text: str) -> list[tuple[str, str]]:
    """`ssh -G`'s output: one "keyword value" per line (keywords in lower case)."""
    return [split_option(line) for line in text.splitlines() if line.strip()]


def jump_hosts(proxyjump: str) -> list[str]:
    """The hosts of a ProxyJump value ("[user@]host[:port]" or ssh:// URIs, separated by commas;
    "none": none), as `ssh -G` takes a destination."""
    if proxyjump.strip().lower() in ("", "none"):
        return []
    hosts = []
    for hop in proxyjump.split(","):
        hop = hop.strip().removeprefix("ssh://").rpartition("@")[2]
        hop = hop[1:].partition("]")[0] if hop.startswith("[") else hop.partition(":")[0]
        if hop:
            hosts.append(hop)
    return hosts


def fix(setting: str) -> str:
    """The end of every refusal's line."""
    return f"remove {setting}, or run with {INSECURE_FLAG} if you trust it (run.json records that)"
