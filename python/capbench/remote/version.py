"""What a host must have: the same capbench as this one, and the programs a run starts there.

capbench drives only the C programs on a host (the Python side runs here), so a host's capbench
is the `version` its `capbench-cap --describe` and `capbench-gen --describe` print (meson's
project version, the same number as capbench.__version__).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from capbench import __version__
from capbench.errors import UsageError
from capbench.remote.ssh import REMOTE_PACKAGES, Host

# The programs every remote host needs besides capbench's (the wrapper of ssh.REMOTE_WRAPPER, `run`).
BASE_NEEDS = ("sh", "setsid", "timeout", "head", "kill")
PACKAGES = {**REMOTE_PACKAGES, "kill": "procps", "tcpdump": "tcpdump", "dumpcap": "tshark",
            "netsniff-ng": "netsniff-ng", "date": "coreutils"}


def _install_hint(host: Host, program: str) -> str:
    if program.startswith("capbench-"):
        where = f"in {host.build_dir}" if host.build_dir else "on its PATH"
        return (f"build capbench {__version__} there (`make build`) and give its build folder as the host's "
                f"build_dir, or put {program} {where}")
    if program == host.capbench[0]:
        return (f"install capbench {__version__} there (pip install, or its source tree) and give the command as "
                f"the host's capbench = \"...\" in the topology")
    package = PACKAGES.get(program, program)
    return f"install it there (apt-get install {package})"


def check_programs(host: Host, needs: Sequence[str] = ("capbench-cap", "capbench-gen")) -> None:
    """UsageError (one line, the first missing one and the fix) unless every program of `needs`
    (and the wrapper's, on a remote host) can be run on `host`."""
    names = list(dict.fromkeys([*(() if host.local else BASE_NEEDS), *needs]))
    paths = [host.program(n) for n in names]
    script = 'for p; do command -v "$p" >/dev/null 2>&1 || echo "$p"; done'
    p = host.run(["sh", "-c", script, "sh", *paths], timeout_s=15)
    if p.returncode != 0:
        raise UsageError(f"host {host.where}: cannot look for programs: "
                         f"{(p.stderr.strip().splitlines() or ['exit status ' + str(p.returncode)])[-1][:200]}")
    missing = [line.strip() for line in p.stdout.splitlines() if line.strip()]
    if missing:
        name = names[paths.index(missing[0])] if missing[0] in paths else missing[0]
        raise UsageError(f"host {host.where} has no {missing[0]}: {_install_hint(host, name)}")


def remote_version(host: Host, program: str = "capbench-cap") -> str:
    """The capbench version `program --describe` prints on `host`; UsageError if it prints none."""
    path = host.program(program)
    p = host.run([path, "--describe"], timeout_s=15)
    try:
        doc = json.loads(p.stdout)
        version = doc["version"]
        if not isinstance(version, str):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        err = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1][:200]
        raise UsageError(f"host {host.where}: `{shlex.join([path, '--describe'])}` printed no capbench version "
                         f"({err}): it is older than this capbench {__version__} or not capbench's; "
                         f"{_install_hint(host, program)}") from None
    return version


def check_version(host: Host, programs: Sequence[str] = ("capbench-cap", "capbench-gen")) -> str:
    """The host's capbench version, the same as this one's; else one UsageError naming both."""
    for program in programs:
        theirs = remote_version(host, program)
        if theirs != __version__:
            raise UsageError(f"host {host.where} runs capbench {theirs} ({host.program(program)}), this is "
                             f"capbench {__version__}: install capbench {__version__} there (or run this "
                             f"capbench's version {theirs} here), so both measure the same way")
    return __version__
