"""Real SSH hosts for the tests: one OpenSSH server per network namespace.

`sshd_hosts(n)` makes namespaces sshh-<id>-<i>, each joined to capbench's own namespace by a
veth pair with a /30 of 10.250.<x>.0/24 (x picked so that no address of this machine is in it;
the tests connect only to these addresses), and runs `sshd -D` in each on its address with a host
key and a client key made for the test (ssh-keygen into a temporary folder). The client side is
an ssh_config file with that key, a known_hosts file that holds the hosts' keys (so
StrictHostKeyChecking=yes holds) and nothing of the user's. `link(i, j)` joins two hosts with a
veth pair of their own, as the data links of a topology. Everything goes when the `with` block
ends, however it ends: sshd, every process in the namespaces, the namespaces and their veths.
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from capbench.testbed import netns

PREFIX = "sshh-"
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"  # sshd re-executes itself: an absolute path


def missing() -> str | None:
    if os.geteuid() != 0:
        return "the SSH tests need root (network namespaces, sshd)"
    for prog, package in ((SSHD, "openssh-server"), ("ssh", "openssh-client"), ("ssh-keygen", "openssh-client")):
        if shutil.which(prog) is None:
            return f"{prog} is missing: apt-get install {package}"
    return None


@dataclass
class SshdHost:
    index: int
    ns: str
    address: str  # the host's address (sshd listens here)
    client_if: str  # the veth end in capbench's namespace
    dir: Path
    log: Path
    proc: subprocess.Popen | None = None

    def accepted_logins(self) -> int:
        """How many logins this sshd accepted (its log): a multiplexed command adds none."""
        return self.log.read_text(errors="replace").count("Accepted publickey")

    def pids(self) -> list[int]:
        return netns.pids(self.ns)

    def start_sshd(self) -> None:
        """`sshd -D` on the host's address, waited for until it takes a connection."""
        self.proc = subprocess.Popen(netns.exec_argv(self.ns, [SSHD, "-D", "-f", str(self.dir / "sshd_config"),
                                                               "-E", str(self.log)]),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection((self.address, 22), timeout=0.5).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    log = self.log.read_text(errors="replace") if self.log.exists() else "(no log)"
                    raise RuntimeError(f"sshd in {self.ns} did not start: {log[-500:]}") from None
                time.sleep(0.02)

    def kill_sshd(self) -> None:
        """SIGKILL every sshd process of the host, its listener and each session's, as when the
        host's sshd dies: the kernel closes their sockets, so every connection to it ends at once."""
        for pid in self.pids():
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "sshd":
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass
        if self.proc is not None:
            self.proc.wait()


@dataclass
class SshdHosts:
    id: str
    dir: Path
    hosts: list[SshdHost] = field(default_factory=list)
    ssh_config: Path = Path()
    links: list[tuple[str, str]] = field(default_factory=list)

    def destination(self, i: int) -> str:
        return f"root@{self.hosts[i].address}"

    def link(self, i: int, j: int) -> tuple[str, str]:
        """A veth pair between hosts i and j (named sl<id><i><j>a / b); its two interface names."""
        a, b = f"sl{self.id}{i}{j}a", f"sl{self.id}{i}{j}b"
        netns.ip("link", "add", a, "netns", self.hosts[i].ns, "type", "veth", "peer", "name", b,
                 "netns", self.hosts[j].ns)
        netns.ip("-n", self.hosts[i].ns, "link", "set", a, "up")
        netns.ip("-n", self.hosts[j].ns, "link", "set", b, "up")
        self.links.append((a, b))
        return a, b

    def namespaces(self) -> list[str]:
        return [h.ns for h in self.hosts]


def _subnet() -> int:
    """x of a 10.250.x.0/24 that no address or route of this machine touches."""
    used = netns.ip("-o", "addr", "show") + netns.ip("route", "show")
    free = [x for x in range(256) if f"10.250.{x}." not in used]
    if not free:
        raise RuntimeError("no free 10.250.x.0/24 on this machine")
    return random.choice(free)


def _keygen(path: Path, comment: str) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True,
                   stdin=subprocess.DEVNULL, capture_output=True)
    return (path.parent / (path.name + ".pub")).read_text().strip()


def _sshd_config(h: SshdHost, host_key: Path, authorized: Path, extra: str) -> str:
    return "\n".join([
        f"ListenAddress {h.address}", "Port 22", f"HostKey {host_key}", f"PidFile {h.dir / 'sshd.pid'}",
        f"AuthorizedKeysFile {authorized}", "StrictModes no", "UsePAM no", "PermitRootLogin prohibit-password",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
        "LogLevel VERBOSE", "MaxSessions 50", "MaxStartups 50", "PrintMotd no", "X11Forwarding no",
        "AllowTcpForwarding no", extra, ""])


@contextlib.contextmanager
def sshd_hosts(n: int, *, sshd_extra: str = "") -> Iterator[SshdHosts]:
    """n SSH hosts in namespaces of their own (see the module's text)."""
    run_id = secrets.token_hex(3)
    top = Path(tempfile.mkdtemp(prefix=f"capbench-sshd-{run_id}-"))
    hosts = SshdHosts(run_id, top)
    try:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
        client_key = top / "client_key"
        client_pub = _keygen(client_key, f"capbench-test-{run_id}")
        x = _subnet()
        known = []
        for i in range(n):
            d = top / f"host{i}"
            d.mkdir()
            h = SshdHost(i, f"{PREFIX}{run_id}-{i}", f"10.250.{x}.{4 * i + 2}", f"sshc{run_id}{i}", d, d / "sshd.log")
            hosts.hosts.append(h)
            netns.add_netns(h.ns)
            netns.ip("link", "add", h.client_if, "type", "veth", "peer", "name", "eth0", "netns", h.ns)
            netns.ip("addr", "add", f"10.250.{x}.{4 * i + 1}/30", "dev", h.client_if)
            netns.ip("link", "set", h.client_if, "up")
            netns.ip("-n", h.ns, "addr", "add", f"{h.address}/30", "dev", "eth0")
            netns.ip("-n", h.ns, "link", "set", "eth0", "up")
            netns.ip("-n", h.ns, "link", "set", "lo", "up")
            host_key = d / "host_key"
            known.append(f"{h.address} {_keygen(host_key, h.ns)}")
            authorized = d / "authorized_keys"
            authorized.write_text(client_pub + "\n")
            config = d / "sshd_config"
            config.write_text(_sshd_config(h, host_key, authorized, sshd_extra))
        (top / "known_hosts").write_text("\n".join(known) + "\n")
        hosts.ssh_config = top / "ssh_config"
        hosts.ssh_config.write_text("\n".join([
            "Host *", f"  IdentityFile {client_key}", "  IdentitiesOnly yes", "  IdentityAgent none",
            f"  UserKnownHostsFile {top / 'known_hosts'}", "  GlobalKnownHostsFile /dev/null",
            "  StrictHostKeyChecking yes", "  User root", "  LogLevel ERROR", ""]))
        for h in hosts.hosts:
            h.start_sshd()
        yield hosts
    finally:
        for h in hosts.hosts:
            if h.proc is not None and h.proc.poll() is None:
                h.proc.terminate()
                try:
                    h.proc.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    h.proc.kill()
                    h.proc.wait()
        for h in hosts.hosts:
            try:
                netns.delete_netns(h.ns)  # its other processes, then it (and its veths) go
            except Exception:
                pass
            if netns.link_exists(h.client_if):
                netns.ip("link", "del", h.client_if, check=False)
        shutil.rmtree(top, ignore_errors=True)


def leftover_namespaces() -> list[str]:
    return [ns for ns in netns.list_netns() if ns.startswith(PREFIX)]
