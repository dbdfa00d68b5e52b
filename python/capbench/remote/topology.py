"""The topology file: which hosts a run uses and what each one does (docs/topology.md).

    [hosts.gen1]
    ssh = "root@gen1.lab"          # an SSH destination, as for `ssh`
    build_dir = "/opt/capbench/build"
    [hosts.here]
    local = true                   # this machine (`local` is also a host without a table)

    [generator]
    host = "gen1"
    iface = "ens1f0"
    cpu = 2

    [[sensor]]
    host = "here"
    iface = "ens1f1"
    rx_cpu = 1
    cpu = 3
    backends = ["pcap", "afp-v3"]

    [clocks]
    synchronized = "ptp"           # or false: no latency across hosts

Every problem is one UsageError naming the file, the line where tomllib leaves one out, the
table and the key, and what to write instead.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capbench import inputs
from capbench.errors import UsageError
from capbench.remote import ssh_rules
from capbench.remote.ssh import LOCAL, check_destination, check_ssh_option

TOPOLOGY_MAX_BYTES = 1 << 20
MAX_CPU = 4095
IFNAMSIZ = 16  # the kernel's limit, with its NUL
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
TABLES = ("hosts", "generator", "sensor", "clocks", "tap")
HOST_KEYS = ("ssh", "local", "build_dir", "ssh_options", "ssh_config", "capbench")
TAP_KEYS = ("iface", "clone_to")
GENERATOR_KEYS = ("host", "iface", "cpu")
SENSOR_KEYS = ("name", "host", "iface", "rx_cpu", "cpu", "backend", "backends")
CLOCK_KEYS = ("synchronized",)
CLOCK_SYNC = ("ptp",)  # what `synchronized` may name; false: not synchronised


@dataclass(frozen=True)
class HostSpec:
    name: str
    ssh: str | None  # the SSH destination; None: this machine
    build_dir: str | None = None  # where capbench's programs are there; None: its PATH
    ssh_options: tuple[str, ...] = ()  # Key=Value, each given to ssh as -o
    ssh_config: str | None = None  # an ssh_config file for this host (ssh -F) instead of ~/.ssh/config
    capbench: tuple[str, ...] = ("capbench",)  # how capbench runs there (its `capbench side` agent)

    @property
    def local(self) -> bool:
        return self.ssh is None


@dataclass(frozen=True)
class GeneratorSpec:
    host: str
    iface: str
    cpu: int | None = None  # capbench-gen's CPU; None: capbench places it


@dataclass(frozen=True)
class SensorSpec:
    name: str  # for results and messages: `name`, else HOST:IFACE
    host: str
    iface: str
    backends: tuple[str, ...]  # capbench-cap backends or capture programs, in the order run
    rx_cpu: int | None = None  # the receive CPU (kernel receive work); None: capbench places it
    cpu: int | None = None  # the capture program's CPU; None: capbench places it


@dataclass(frozen=True)
class TapSpec:
    """The tap on the generator's host: capbench-xdpcount on `iface` (the generator's frames arrive
    there) sends a copy of each to every interface of `clone_to`, each joined to one sensor's."""

    iface: str
    clone_to: tuple[str, ...]


@dataclass(frozen=True)
class Topology:
    path: str
    hosts: dict[str, HostSpec]  # every host the roles name, `local` included when named
    generator: GeneratorSpec
    sensors: tuple[SensorSpec, ...]
    clock_sync: str | None  # "ptp", or None: the clocks are not known to be synchronised
    tap: TapSpec | None = None  # [tap]: one stream to several sensors

    @property
    def latency_valid(self) -> bool:
        """Whether latency across hosts may be reported (the user said the clocks are synchronised)."""
        return self.clock_sync is not None

    def host_of(self, role: GeneratorSpec | SensorSpec) -> HostSpec:
        return self.hosts[role.host]


class _Where:
    """Builds the messages: "FILE line N [table]: key ...: fix"."""

    def __init__(self, path: Path | str, text: str):
        self.path, self.lines = str(path), text.splitlines()

    def line_of(self, header: re.Pattern[str], key: str | None, nth: int = 0) -> int:
        """The line of `key` in the nth table whose header `header` matches (the header's if key is None)."""
        seen, inside = -1, False
        assign = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=") if key else None
        for n, line in enumerate(self.lines, start=1):
            if re.match(r"^\s*\[", line):
                inside = bool(header.match(line))
                if inside:
                    seen += 1
                    if key is None and seen == nth:
                        return n
                continue
            if inside and seen == nth and assign is not None and assign.match(line):
                return n
        return 0

    def error(self, table: str, key: str | None, why: str, *, line: int = 0) -> UsageError:
        at = f" line {line}" if line else ""
        return UsageError(f"{inputs.shown(self.path)}{at} {table}{': ' + key if key else ''}: {why}")


def _header(table: str, name: str | None = None) -> re.Pattern[str]:
    if name is not None:
        return re.compile(rf"^\s*\[\s*{table}\s*\.\s*[\"']?{re.escape(name)}[\"']?\s*\]")
    if table == "sensor":
        return re.compile(r"^\s*\[\[\s*sensor\s*\]\]")
    return re.compile(rf"^\s*\[\s*{table}\s*\]")


def read(path: Path | str, *, backends_known: Sequence[str] | None = None, insecure_ssh: bool = False) -> Topology:
    """The topology in `path` (a regular UTF-8 file of at most 1 MiB)."""
    text = inputs.read_text(path, what="topology", limit=TOPOLOGY_MAX_BYTES, missing_ok=True)
    if text is None:
        raise UsageError(f"no topology file {inputs.shown(path)}: see docs/topology.md for an example")
    topo = parse(text, path, backends_known=backends_known, insecure_ssh=insecure_ssh)
    w = _Where(path, text)
    for name, host in topo.hosts.items():
        if host.ssh_config is not None:
            _check_ssh_config(w, f"[hosts.{name}]", host.ssh_config, w.line_of(_header("hosts", name), "ssh_config"),
                              insecure_ssh=insecure_ssh)
    return topo


def parse(text: str, path: Path | str = "<topology>", *, backends_known: Sequence[str] | None = None,
          insecure_ssh: bool = False) -> Topology:
    """The topology of `text`; `backends_known`: the names a sensor's backends may take (None: any
    name, checked later). Unless `insecure_ssh`, a host's ssh_options hold no setting remote.ssh_rules
    refuses (`read` checks the text of their ssh_config files too)."""
    w = _Where(path, text)
    try:
        doc = tomllib.loads(text)
    except ValueError as e:
        raise UsageError(f"{inputs.shown(path)}: not valid TOML: {str(e)[:200]}") from None
    except RecursionError:
        raise UsageError(f"{inputs.shown(path)}: not valid TOML: arrays or tables nested too deep") from None
    unknown = sorted(set(doc) - set(TABLES))
    if unknown:
        raise UsageError(f"{inputs.shown(path)}: unknown table or key {unknown[0]!r}: use [hosts.NAME], "
                         f"[generator], [[sensor]], [tap] and [clocks]")

    hosts_doc = doc.get("hosts", {})
    if not isinstance(hosts_doc, dict):
        raise w.error("[hosts]", None, "must hold one table per host: [hosts.NAME] with ssh = \"user@host\"")
    hosts = {name: _host(w, name, t, insecure_ssh) for name, t in hosts_doc.items()}
    if LOCAL not in hosts:
        hosts[LOCAL] = HostSpec(LOCAL, None)

    if "generator" not in doc:
        raise w.error("[generator]", None, "missing: give the generator's host, iface and cpu")
    generator = _generator(w, doc["generator"], hosts)
    sensors_doc = doc.get("sensor", [])
    if not isinstance(sensors_doc, list) or not sensors_doc:
        raise w.error("[[sensor]]", None, "missing: give at least one sensor ([[sensor]] with host, iface and "
                                          "backends)")
    sensors = tuple(_sensor(w, i, t, hosts, backends_known) for i, t in enumerate(sensors_doc))
    _check_distinct(w, generator, sensors)

    clocks_doc = doc.get("clocks", {})
    if not isinstance(clocks_doc, dict):
        raise w.error("[clocks]", None, "must be a table: [clocks] synchronized = \"ptp\" or false")
    _unknown_keys(w, "[clocks]", _header("clocks"), 0, clocks_doc, CLOCK_KEYS)
    sync = clocks_doc.get("synchronized", False)
    if sync is not False and sync not in CLOCK_SYNC:
        raise w.error("[clocks]", "synchronized", f"{sync!r}: give \"ptp\" (the hosts' clocks follow PTP) or "
                      f"false (latency across hosts is marked invalid)",
                      line=w.line_of(_header("clocks"), "synchronized"))

    tap = _tap(w, doc["tap"], generator, sensors) if "tap" in doc else None
    used = {generator.host, *(s.host for s in sensors)}
    return Topology(str(path), {n: h for n, h in hosts.items() if n in used}, generator, sensors,
                    sync if sync else None, tap)


def _tap(w: _Where, t: Any, g: GeneratorSpec, sensors: Sequence[SensorSpec]) -> TapSpec:
    table, header = "[tap]", _header("tap")
    if not isinstance(t, dict):
        raise w.error(table, None, "must be a table with iface and clone_to")
    _unknown_keys(w, table, header, 0, t, TAP_KEYS)
    iface = _iface(w, table, header, 0, t)
    clone_to = t.get("clone_to")
    line = w.line_of(header, "clone_to")
    if not isinstance(clone_to, list) or not clone_to:
        raise w.error(table, "clone_to", "give the generator host's interfaces the tap copies the frames to, one "
                                         "per sensor, in sensor order, e.g. [\"t1\", \"t2\"]", line=line)
    for c in clone_to:
        _iface(w, table, header, 0, {"iface": c})
    if len(clone_to) != len(sensors):
        raise w.error(table, "clone_to", f"{len(clone_to)} interfaces for {len(sensors)} sensors: give one per "
                                         f"sensor, in sensor order", line=line)
    if len(set(clone_to)) != len(clone_to) or iface in clone_to or g.iface in (iface, *clone_to):
        raise w.error(table, "clone_to", "the generator's interface, the tap's and each target must be "
                                         "different interfaces", line=line)
    return TapSpec(iface, tuple(clone_to))


def _unknown_keys(w: _Where, table: str, header: re.Pattern[str], nth: int, d: dict, keys: Sequence[str]) -> None:
    unknown = [k for k in d if k not in keys]
    if unknown:
        lines = {k: w.line_of(header, k, nth) for k in unknown}
        key = min(unknown, key=lambda k: lines[k] or 1 << 30)
        raise w.error(table, key, f"unknown key: use {', '.join(keys)}", line=lines[key])


def _host(w: _Where, name: str, t: Any, insecure_ssh: bool) -> HostSpec:
    table, header = f"[hosts.{name}]", _header("hosts", name)
    line = w.line_of(header, None)
    if not NAME.fullmatch(name):
        raise w.error(table, None, "a host name is letters, digits, '_', '.' and '-' (at most 63)", line=line)
    if not isinstance(t, dict):
        raise w.error(table, None, "must be a table: ssh = \"user@host\" or local = true", line=line)
    _unknown_keys(w, table, header, 0, t, HOST_KEYS)

    def at(key: str) -> int:
        return w.line_of(header, key)

    local = t.get("local", False)
    if not isinstance(local, bool):
        raise w.error(table, "local", f"{local!r}: give true (this machine) or leave it out", line=at("local"))
    if local == ("ssh" in t):
        raise w.error(table, None, "give either ssh = \"user@host\" (a host reached with ssh) or local = true "
                                   "(this machine)", line=line)
    if name == LOCAL and not local:
        raise w.error(table, "ssh", "the host named local is this machine: give it local = true, or name the "
                                    "SSH host otherwise", line=at("ssh"))
    ssh = t.get("ssh")
    if ssh is not None:
        if not isinstance(ssh, str):
            raise w.error(table, "ssh", f"{ssh!r}: give an SSH destination as a string, e.g. \"root@sensor1\"",
                          line=at("ssh"))
        try:
            check_destination(ssh, "the destination")
        except UsageError as e:
            raise w.error(table, "ssh", str(e), line=at("ssh")) from None
    build_dir = t.get("build_dir")
    if build_dir is not None and (not isinstance(build_dir, str) or not build_dir.startswith("/")
                                  or any(ord(c) < 32 for c in build_dir)):
        raise w.error(table, "build_dir", f"{build_dir!r}: give the absolute path of capbench's build folder on "
                                          f"that host, e.g. \"/opt/capbench/build\"", line=at("build_dir"))
    options = t.get("ssh_options", [])
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise w.error(table, "ssh_options", "give a list of Key=Value strings, e.g. [\"Port=2222\"]",
                      line=at("ssh_options"))
    if local and options:
        raise w.error(table, "ssh_options", "this machine is not reached with ssh: leave them out",
                      line=at("ssh_options"))
    for o in options:
        try:
            check_ssh_option(o, "the option")
        except UsageError as e:
            raise w.error(table, "ssh_options", str(e), line=at("ssh_options")) from None
        why = None if insecure_ssh else ssh_rules.refusal(*ssh_rules.split_option(o))
        if why:
            raise w.error(table, "ssh_options", f"{o!r} {why}: {ssh_rules.fix(repr(o))}", line=at("ssh_options"))
    ssh_config = t.get("ssh_config")
    if ssh_config is not None and (local or not isinstance(ssh_config, str) or not ssh_config.startswith("/")
                                   or any(ord(c) < 32 for c in ssh_config)):
        raise w.error(table, "ssh_config", f"{ssh_config!r}: give the absolute path of an ssh_config file for "
                                           f"this host (ssh -F), or leave it out", line=at("ssh_config"))
    for key, words in (("ssh", [ssh] if ssh else []), ("ssh_options", options),
                       ("build_dir", [build_dir] if build_dir else []), ("ssh_config", [ssh_config] if ssh_config else [])):
        try:  # each becomes a word of ssh's command line, or of a path in one
            inputs.check_words(words, "its value")
        except UsageError as e:
            raise w.error(table, key, str(e), line=at(key)) from None
    command = t.get("capbench", "capbench")
    try:
        words = inputs.command_words(command, "its command") if isinstance(command, str) else []
    except ValueError:
        words = []
    except UsageError as e:  # a NUL byte, a word or command too long to start
        raise w.error(table, "capbench", str(e), line=at("capbench")) from None
    if not words:
        raise w.error(table, "capbench", f"{command!r}: give the command that runs capbench there, e.g. "
                                         f"\"capbench\" or \"/opt/capbench/venv/bin/python -m capbench\"",
                      line=at("capbench"))
    return HostSpec(name, ssh, build_dir, tuple(options), ssh_config, tuple(words))


def _check_ssh_config(w: _Where, table: str, path: str, line: int, *, insecure_ssh: bool) -> None:
    """The ssh_config file: one the user who runs capbench may read (ssh reads it with capbench's
    privileges, and prints lines of it that it cannot take), and, unless `insecure_ssh`, none of its
    lines one that ssh_rules refuses, read before ssh reads the file (`ssh -G`,
    Host.check_settings, already runs a Match exec command, and names no file or line)."""
    try:
        text = inputs.read_text(path, what="ssh_config", limit=TOPOLOGY_MAX_BYTES, missing_ok=True)
    except UsageError as e:
        raise w.error(table, "ssh_config", str(e), line=line) from None
    if text is None:
        raise w.error(table, "ssh_config", f"no file {inputs.shown(path)}: give an ssh_config file that exists, "
                                           f"or leave it out", line=line)
    refused = [] if insecure_ssh else ssh_rules.refused_lines(text)
    if refused:
        n, setting, why = refused[0]
        raise w.error(table, "ssh_config", f"{inputs.shown(path)} line {n}: `{setting[:100]}` {why}: "
                                           f"{ssh_rules.fix('it')}", line=line)


def _role_host(w: _Where, table: str, header: re.Pattern[str], nth: int, t: dict, hosts: dict[str, HostSpec]) -> str:
    host = t.get("host")
    if host is None:
        raise w.error(table, "host", "missing: name a host of [hosts.NAME], or local", line=w.line_of(header, None, nth))
    if not isinstance(host, str) or host not in hosts:
        names = ", ".join(sorted(hosts))
        raise w.error(table, "host", f"unknown host {host!r}: use {names}, or add a [hosts.{host}] table with "
                                     f"its ssh destination", line=w.line_of(header, "host", nth))
    return host


def _iface(w: _Where, table: str, header: re.Pattern[str], nth: int, t: dict) -> str:
    iface = t.get("iface")
    line = w.line_of(header, "iface", nth)
    if iface is None:
        raise w.error(table, "iface", "missing: name the interface on that host, e.g. \"ens1f0\"",
                      line=w.line_of(header, None, nth))
    if (not isinstance(iface, str) or not iface or len(iface) >= IFNAMSIZ or iface in (".", "..")
            or any(c in "/:" or c.isspace() or ord(c) < 32 for c in iface)):
        raise w.error(table, "iface", f"{iface!r} is not an interface name: at most {IFNAMSIZ - 1} characters, "
                                      f"no '/', ':' or spaces", line=line)
    return iface


def _cpu(w: _Where, table: str, header: re.Pattern[str], nth: int, t: dict, key: str) -> int | None:
    cpu = t.get(key)
    if cpu is None:
        return None
    if isinstance(cpu, bool) or not isinstance(cpu, int) or not 0 <= cpu <= MAX_CPU:
        raise w.error(table, key, f"{cpu!r}: give a CPU number of that host (0 to {MAX_CPU})",
                      line=w.line_of(header, key, nth))
    return cpu


def _generator(w: _Where, t: Any, hosts: dict[str, HostSpec]) -> GeneratorSpec:
    table, header = "[generator]", _header("generator")
    if not isinstance(t, dict):
        raise w.error(table, None, "must be a table with host, iface and cpu")
    _unknown_keys(w, table, header, 0, t, GENERATOR_KEYS)
    return GeneratorSpec(_role_host(w, table, header, 0, t, hosts), _iface(w, table, header, 0, t),
                         _cpu(w, table, header, 0, t, "cpu"))


def _sensor(w: _Where, i: int, t: Any, hosts: dict[str, HostSpec], known: Sequence[str] | None) -> SensorSpec:
    table, header = f"[[sensor]] #{i + 1}", _header("sensor")
    if not isinstance(t, dict):
        raise w.error(table, None, "must be a table with host, iface and backends")
    _unknown_keys(w, table, header, i, t, SENSOR_KEYS)
    host = _role_host(w, table, header, i, t, hosts)
    iface = _iface(w, table, header, i, t)
    at = w.line_of(header, None, i)
    if "backend" in t and "backends" in t:
        raise w.error(table, "backend", "give backend (one) or backends (a list), not both",
                      line=w.line_of(header, "backend", i))
    if "backend" in t:
        key, value = "backend", [t["backend"]]
        if not isinstance(t["backend"], str):
            value = None
    elif "backends" in t:
        key, value = "backends", t["backends"]
    else:
        raise w.error(table, "backends", "missing: give the capbench-cap backends or capture programs to run, "
                                         "e.g. backends = [\"pcap\", \"afp-v3\"]", line=at)
    line = w.line_of(header, key, i)
    if not isinstance(value, list) or not value or not all(isinstance(b, str) and NAME.fullmatch(b) for b in value):
        raise w.error(table, key, "give capbench-cap backends or capture program names, e.g. "
                                  "backends = [\"pcap\", \"tcpdump\"]", line=line)
    if len(set(value)) != len(value):
        dup = next(b for b in value if value.count(b) > 1)
        raise w.error(table, key, f"{dup!r} is named twice: give each once", line=line)
    if known is not None:
        for b in value:
            if b not in known:
                raise w.error(table, key, f"unknown backend {b!r}: use {', '.join(known)}", line=line)
    name = t.get("name", f"{host}:{iface}")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}", name):
        raise w.error(table, "name", f"{name!r}: letters, digits, '_', '.', ':' and '-' (at most 63)",
                      line=w.line_of(header, "name", i))
    return SensorSpec(name, host, iface, tuple(value), _cpu(w, table, header, i, t, "rx_cpu"),
                      _cpu(w, table, header, i, t, "cpu"))


def _check_distinct(w: _Where, g: GeneratorSpec, sensors: Sequence[SensorSpec]) -> None:
    seen: dict[object, str] = {(g.host, g.iface): "[generator]"}
    names: dict[str, int] = {}
    for i, s in enumerate(sensors):
        table = f"[[sensor]] #{i + 1}"
        other = seen.get((s.host, s.iface))
        if other:
            raise w.error(table, "iface", f"{s.iface} on {s.host} is also {other}'s: each role captures on an "
                                          f"interface of its own", line=w.line_of(_header("sensor"), "iface", i))
        seen[(s.host, s.iface)] = table
        if s.name in names:
            raise w.error(table, "name", f"{s.name!r} is also [[sensor]] #{names[s.name] + 1}'s: give each sensor "
                                         f"a name of its own", line=w.line_of(_header("sensor"), "name", i))
        names[s.name] = i
