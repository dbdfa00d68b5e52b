"""Thin wrappers around iproute2's `ip` for network namespaces, links and sysfs/procfs writes.

Every function runs one command and raises RunError with ip's own error line
when it fails. `ip netns exec NS CMD` enters the namespace and remounts /sys,
so inside it /sys/class/net shows the namespace's devices; it then exec()s
CMD, so a Popen of it has the program's own pid.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Sequence

from capbench.errors import RunError

IP = "ip"
PACKAGES = {"ip": "iproute2", "ethtool": "ethtool", "sh": "dash"}  # program -> its Debian package


def _run(argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        package = PACKAGES.get(argv[0], argv[0])
        raise RunError(f"{argv[0]} not found: install {package} (apt-get install {package})") from None
    if check and proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise RunError(f"`{shlex.join(argv)}` failed: {msg}")
    return proc


def ip(*args: str, check: bool = True) -> str:
    """Run `ip ARGS...` and return its stdout."""
    return _run([IP, *args], check=check).stdout


def exec_argv(netns: str | None, argv: Sequence[str]) -> list[str]:
    """argv that runs `argv` inside `netns` (unchanged when netns is None)."""
    if netns is None:
        return list(argv)
    return [IP, "netns", "exec", netns, *argv]


def run_in(netns: str | None, argv: Sequence[str]) -> str:
    """Run a program inside `netns` (None: capbench's own) to completion; its stdout."""
    return _run(exec_argv(netns, argv)).stdout


def list_netns() -> list[str]:
    """Names of the named network namespaces (`ip netns list`)."""
    names = []
    for line in ip("netns", "list").splitlines():
        parts = line.split()
        if parts:
            names.append(parts[0])
    return names


def add_netns(name: str) -> None:
    ip("netns", "add", name)


def delete_netns(name: str, *, kill_timeout_s: float = 1.0) -> bool:
    """Stop the processes in a namespace, then delete it; False if it did not exist.

    A namespace (and its devices) lives on while a process runs in it, so its
    processes get SIGTERM, then SIGKILL after `kill_timeout_s`. Deleting the last
    reference destroys its devices: a veth end goes with its peer, and an XDP
    program attached to either goes with them.
    """
    if name not in list_netns():
        return False
    _stop_pids(pids(name), kill_timeout_s)
    ip("netns", "delete", name)
    return True


def _stop_pids(pid_list: list[int], timeout_s: float) -> None:
    me = os.getpid()
    pid_list = [p for p in pid_list if p != me]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        live = []
        for p in pid_list:
            try:
                os.kill(p, sig)
                live.append(p)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout_s
        while live and time.monotonic() < deadline:
            live = [p for p in live if _alive(p)]
            time.sleep(0.02)
        if not live:
            return
        pid_list = live


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie no longer counts: it holds no namespace)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def pids(name: str) -> list[int]:
    """Processes running inside namespace `name` (`ip netns pids`)."""
    out = ip("netns", "pids", name, check=False)
    return [int(p) for p in out.split() if p.isdigit()]


def sh(netns: str | None, script: str) -> str:
    """Run a /bin/sh script inside `netns` (None: capbench's own); return its stdout."""
    return _run(exec_argv(netns, ["sh", "-c", script])).stdout


def write_file(netns: str | None, path: str, value: str) -> None:
    """Write `value` to a /proc/sys or /sys file as seen from inside `netns`."""
    sh(netns, f"echo {shlex.quote(value)} > {shlex.quote(path)}")


def set_sysctl(netns: str, key: str, value: str) -> None:
    """`sysctl -w key=value` inside `netns` (net.* sysctls are per namespace)."""
    write_file(netns, "/proc/sys/" + key.replace(".", "/"), value)


def operstate(ifname: str, netns_name: str | None = None) -> str | None:
    """The operational state of a link (UP, DOWN, LOWERLAYERDOWN, ...), None if it does not exist."""
    args = (["-n", netns_name] if netns_name else []) + ["-j", "link", "show", "dev", ifname]
    proc = _run([IP, *args], check=False)
    if proc.returncode != 0:
        return None
    try:
        return json.loads(proc.stdout)[0].get("operstate")
    except (ValueError, IndexError, AttributeError):
        return None


def link_exists(ifname: str, netns: str | None = None) -> bool:
    args = (["-n", netns] if netns else []) + ["link", "show", "dev", ifname]
    return _run([IP, *args], check=False).returncode == 0


def _ip_json(netns_name: str | None, *args: str) -> list:
    proc = _run([IP, *(["-n", netns_name] if netns_name else []), "-j", *args], check=False)
    try:
        found = json.loads(proc.stdout) if proc.returncode == 0 else []
    except ValueError:
        return []
    return found if isinstance(found, list) else []


# Neighbour states whose link-layer address the kernel confirmed or is still using (ip-neighbour(8)).
_NEIGH_USABLE = {"REACHABLE", "STALE", "DELAY", "PROBE", "PERMANENT", "NOARP"}


def neighbour_mac(ip_addr: str, ifname: str, netns_name: str | None = None) -> str | None:
    """The MAC the kernel's neighbour table holds for `ip_addr` on `ifname` (None if it has none)."""
    for entry in _ip_json(netns_name, "neigh", "show", "to", ip_addr, "dev", ifname):
        if entry.get("lladdr") and _NEIGH_USABLE & set(entry.get("state") or []):
            return str(entry["lladdr"]).lower()
    return None


def veth_peer_mac(ifname: str, netns_name: str | None = None) -> tuple[str, str | None] | None:
    """(the MAC of `ifname`'s veth peer, the namespace it is in when not `netns_name`'s); None when
    `ifname` is no veth or its peer's namespace has no name here. A peer in another namespace (the
    usual two-namespace set-up): the kernel gives the link's IFLA_LINK_NETNSID (that namespace's id
    as seen from `netns_name`) and IFLA_LINK (the peer's ifindex there); `ip netns list-id` names
    the namespace of an id (those under /run/netns), and the peer is the link of that index there."""
    link = _ip_json(netns_name, "-d", "link", "show", "dev", ifname)
    if not link or (link[0].get("linkinfo") or {}).get("info_kind") != "veth":
        return None
    where: str | None = None
    if "link_netnsid" in link[0]:
        ids = _ip_json(netns_name, "netns", "list-id")
        where = next((str(n["name"]) for n in ids if n.get("nsid") == link[0]["link_netnsid"] and n.get("name")), None)
        if where is None:
            return None
        found = [x for x in _ip_json(where, "link", "show") if x.get("ifindex") == link[0].get("link_index")]
    else:
        peer = link[0].get("link")
        found = _ip_json(netns_name, "link", "show", "dev", peer) if peer else []
    return (str(found[0]["address"]).lower(), where) if found and found[0].get("address") else None
