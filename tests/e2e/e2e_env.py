"""Helpers of the end-to-end tests: running capbench, and looking for what a run left behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from capbench import netns

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"


def missing_prerequisite() -> str | None:
    if os.geteuid() != 0:
        return "end-to-end tests need root (network namespaces, veth, XDP): run `sudo make test`"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is missing: apt-get install iproute2"
    return None


def capbench_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "capbench", *args]


def capbench_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    env.pop("CAPBENCH_BUILD_DIR", None)
    return env


def run_capbench(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(capbench_cmd(*args), capture_output=True, text=True, env=capbench_env(),
                          timeout=timeout, stdin=subprocess.DEVNULL)


def capbench_namespaces() -> set[str]:
    return {ns for ns in netns.list_netns() if ns.startswith("capbench-")}


def xdp_attached(ns: str | None = None) -> list[str]:
    """Interfaces (in `ns`, or capbench's own namespace) that have an XDP program attached."""
    out = netns.ip(*(["-n", ns] if ns else []), "-o", "link", "show")
    # `2: cb1a2b3cc@if2: <...> mtu 1500 xdp qdisc ...`: the name without the veth's @peer
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if " xdp" in line]
