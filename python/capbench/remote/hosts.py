"""The hosts of a topology's run: opened (one SSH login each), checked before anything starts (the
same capbench, the programs the run needs, every interface it names), and described for run.json
(capbench version, kernel, CPU model, clock offset). Every problem is one UsageError naming the
host and the fix (exit status 2)."""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from capbench import __version__
from capbench.errors import RunError, UsageError
from capbench.remote import clock, version
from capbench.remote.ssh import Host
from capbench.remote.topology import Topology
from capbench.testbed import nic

T = TypeVar("T")


@contextlib.contextmanager
def opened(topo: Topology, *, insecure_ssh: bool = False) -> Iterator[dict[str, Host]]:
    """One open Host per host of the topology (`local` too: no SSH), closed when the block ends;
    `insecure_ssh` (--insecure-ssh): ssh may use the settings remote.ssh_rules refuses."""
    with contextlib.ExitStack() as stack:
        hosts = {}
        for name, spec in topo.hosts.items():
            h = Host(name, spec.ssh, build_dir=spec.build_dir, ssh_options=spec.ssh_options,
                     ssh_config=spec.ssh_config, capbench=spec.capbench, insecure_ssh=insecure_ssh)
            stack.enter_context(h)
            hosts[name] = h
        yield hosts


def check_interfaces(host: Host, ifaces: dict[str, str]) -> None:
    """Every interface of `ifaces` ({iface: the role naming it}) exists on `host` (one command)."""
    if not ifaces:
        return
    script = 'for i; do ip link show dev "$i" >/dev/null 2>&1 || echo "$i"; done'
    p = host.run(["sh", "-c", script, "sh", *ifaces], timeout_s=15)
    missing = [line.strip() for line in p.stdout.splitlines() if line.strip() in ifaces]
    if p.returncode != 0 or missing:
        iface = missing[0] if missing else next(iter(ifaces))
        raise UsageError(f"host {host.where} has no interface {iface} ({ifaces[iface]} in the topology): check its "
                         f"iface, or list that host's interfaces with `ip link`")


def turned_round(connection: str) -> str:
    """An SSH_CONNECTION ("client port server port") as the client's end sees it (its two ends swapped)."""
    client, client_port, server, server_port = connection.split()
    return f"{server} {server_port} {client} {client_port}"


def ssh_connections(name: str, host: Host, seen: dict[str, str | None]) -> dict[str, str | None]:
    """The SSH connections no interface of `host` may carry ({what: SSH_CONNECTION as that host sees
    it}): on a remote host, capbench's own to it (`seen`: each host's, Host.ssh_connection); on this
    machine, the user's session and capbench's connection to every other host."""
    if not host.local:
        return {"capbench's SSH connection to that host": seen.get(name)}
    found = {"this SSH session": os.environ.get("SSH_CONNECTION")}
    for other, connection in seen.items():
        if connection and len(connection.split()) == 4:
            found[f"capbench's SSH connection to {other!r}"] = turned_round(connection)
    return found


def check_safe_interfaces(host: Host, ifaces: dict[str, str], connections: dict[str, str | None]) -> None:
    """No role sends or captures on an interface that carries `host`'s default route or one of
    `connections` (testbed.nic.send_hazard, the rule of local ports, with that host's `ip` facts)."""
    for iface, role in ifaces.items():
        why = nic.send_hazard(None, iface, ssh_connections=connections, ip_json=host.ip_json)
        if why:
            raise UsageError(f"host {host.where}, {role} iface: {why}; give another interface in the topology, or "
                             f"add {nic.FORCE_FLAG} if it is a test port")


def check_agent(host: Host) -> None:
    """The host's capbench (the `capbench side` agent of a remote sensor): there, and this version."""
    argv = [*host.capbench, "--version"]
    try:
        p = host.run(argv, timeout_s=30)
    except RunError as e:
        raise UsageError(f"host {host.where}: `{shlex.join(argv)}` did not answer: {e}") from None
    words = p.stdout.split()
    if p.returncode != 0 or len(words) != 2 or words[0] != "capbench":
        said = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1][:200]
        raise UsageError(f"host {host.where}: `{shlex.join(argv)}` does not run capbench ({said}): install capbench "
                         f"{__version__} there (pip install, or its source tree) and give the command as the host's "
                         f"capbench = \"...\" in the topology")
    if words[1] != __version__:
        raise UsageError(f"host {host.where} runs capbench {words[1]} ({shlex.join(host.capbench)}), this is capbench "
                         f"{__version__}: install capbench {__version__} there (or run this capbench's version "
                         f"{words[1]} here), so both measure the same way")


def each(hosts: dict[str, Host], work: Callable[[str, Host], T]) -> dict[str, T]:
    """`work(name, host)` for every host at once (their round trips overlap); the first error in
    host order is raised, once all have ended."""
    with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        futures = {name: pool.submit(work, name, host) for name, host in hosts.items()}
    return {name: f.result() for name, f in futures.items()}


def check(topo: Topology, hosts: dict[str, Host], programs: dict[str, Sequence[str]], *,
          force_iface: bool = False) -> None:
    """Everything a run needs of its hosts, before anything starts or changes on any of them:
    `programs` the sensors' capture programs (tcpdump ...) by sensor name; every interface a role
    names is safe to use (check_safe_interfaces) unless `force_iface` (--force-iface)."""
    g = topo.generator
    needs: dict[str, list[str]] = {name: [] for name in hosts}
    ifaces: dict[str, dict[str, str]] = {name: {} for name in hosts}
    needs[g.host] += ["capbench-gen"] + (["capbench-xdpcount"] if topo.tap else [])
    ifaces[g.host][g.iface] = "[generator]"
    if topo.tap:
        for iface in (topo.tap.iface, *topo.tap.clone_to):
            ifaces[g.host][iface] = "[tap]"
    if topo.latency_valid and not hosts[g.host].local:
        needs[g.host].append(hosts[g.host].capbench[0])
    for i, s in enumerate(topo.sensors):
        needs[s.host] += ["capbench-cap", "capbench-xdpcount", *programs.get(s.name, ())]
        ifaces[s.host][s.iface] = f"[[sensor]] #{i + 1}"

    seen = {} if force_iface else each(hosts, lambda name, host: host.ssh_connection())

    def one(name: str, host: Host) -> None:
        if not host.local:  # this capbench's own programs are checked as for any run
            sensor_host = any(s.host == name for s in topo.sensors)
            wants = list(dict.fromkeys(needs[name])) + ([host.capbench[0]] if sensor_host else [])
            version.check_programs(host, wants)
            version.check_version(host, [p for p in ("capbench-cap", "capbench-gen") if p in wants])
            if sensor_host or (name == g.host and topo.latency_valid):  # the agent, or its clock reading
                check_agent(host)
        check_interfaces(host, ifaces[name])
        if not force_iface:
            check_safe_interfaces(host, ifaces[name], ssh_connections(name, host, seen))

    each(hosts, one)


def describe(hosts: dict[str, Host]) -> dict[str, dict]:
    """run.json's `hosts`: each host's destination, capbench, kernel, CPU model and clock offset."""
    def one(name: str, host: Host) -> dict:
        p = host.run(["sh", "-c", "uname -r; sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -n 1; nproc"],
                     timeout_s=15)
        lines = (p.stdout.splitlines() + ["", "", ""])[:3]
        try:
            off = clock.measure_offset(host)
            offset = {"clock_offset_ns": off.offset_ns, "uncertainty_ns": off.uncertainty_ns}
        except RunError as e:
            offset = {"clock_offset_ns": None, "uncertainty_ns": None, "clock_error": str(e)}
        return {"destination": host.destination or "this machine", "version": __version__,
                "kernel": lines[0], "cpu": lines[1], "cpus": int(lines[2]) if lines[2].isdigit() else None, **offset}

    return each(hosts, one)
