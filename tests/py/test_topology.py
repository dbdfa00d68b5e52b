"""The topology file (capbench.remote.topology): a full example, the defaults, and one line for
every problem, naming the file, the line, the table and the key."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from capbench import __version__
from capbench.errors import UsageError
from capbench.remote import hosts, topology
from capbench.remote.ssh import ssh_fault

REPO = Path(__file__).resolve().parents[2]

FULL = """\
[hosts.gen1]
ssh = "root@gen1.lab"
build_dir = "/opt/capbench/build"
ssh_options = ["Port=2222"]

[hosts.sensor1]
ssh = "capture@10.0.0.2"

[generator]
host = "gen1"
iface = "ens1f0"
cpu = 2

[[sensor]]
host = "sensor1"
iface = "ens1f1"
rx_cpu = 1
cpu = 3
backends = ["pcap", "afp-v3"]

[[sensor]]
name = "here"
host = "local"
iface = "veth1"
backend = "tcpdump"

[clocks]
synchronized = "ptp"
"""


def test_full_example():
    t = topology.parse(FULL, "t.toml")
    assert t.hosts["gen1"] == topology.HostSpec("gen1", "root@gen1.lab", "/opt/capbench/build", ("Port=2222",))
    assert t.hosts["local"].local and not t.hosts["sensor1"].local
    assert t.generator == topology.GeneratorSpec("gen1", "ens1f0", 2)
    assert t.sensors[0] == topology.SensorSpec("sensor1:ens1f1", "sensor1", "ens1f1", ("pcap", "afp-v3"), 1, 3)
    assert t.sensors[1] == topology.SensorSpec("here", "local", "veth1", ("tcpdump",), None, None)
    assert t.clock_sync == "ptp" and t.latency_valid
    assert t.host_of(t.generator).ssh == "root@gen1.lab"


def test_defaults_and_unused_hosts():
    text = FULL.replace('synchronized = "ptp"', "synchronized = false") + '[hosts.spare]\nssh = "x@y"\n'
    t = topology.parse(text)
    assert t.clock_sync is None and not t.latency_valid
    assert "spare" not in t.hosts
    t = topology.parse(re.sub(r"\[clocks\]\n.*\n", "", FULL))
    assert t.clock_sync is None


def test_tap_and_host_commands():
    t = topology.parse(sub('ssh = "capture@10.0.0.2"', 'ssh = "capture@10.0.0.2"\nssh_config = "/etc/lab_ssh"\n'
                                                        'capbench = "env A=1 /opt/venv/bin/python -m capbench"')
                       + '[tap]\niface = "t0"\nclone_to = ["t1", "t2"]\n')
    assert t.tap == topology.TapSpec("t0", ("t1", "t2"))
    assert t.hosts["sensor1"].ssh_config == "/etc/lab_ssh"
    assert t.hosts["sensor1"].capbench == ("env", "A=1", "/opt/venv/bin/python", "-m", "capbench")
    assert t.hosts["gen1"].capbench == ("capbench",) and topology.parse(FULL).tap is None


def test_docs_example_parses():
    text = (REPO / "docs" / "topology.md").read_text()
    block = re.search(r"```toml\n(.*?)```", text, re.S).group(1)
    t = topology.parse(block, "docs/topology.md")
    assert len(t.sensors) == 2


def test_read_refuses_what_inputs_refuses(tmp_path):
    with pytest.raises(UsageError, match="no topology file .*docs/topology.md"):
        topology.read(tmp_path / "none.toml")
    with pytest.raises(UsageError, match="not a regular file"):
        topology.read(tmp_path)
    (tmp_path / "t.toml").write_text(FULL)
    assert topology.read(tmp_path / "t.toml").generator.host == "gen1"


def sub(old: str, new: str, count: int = 1) -> str:
    assert old in FULL, old
    return FULL.replace(old, new, count)


BAD = [
    ("not toml", "x = [", [r"not valid TOML"]),
    ("unknown table", FULL + "[extra]\n", [r"unknown table or key 'extra'", r"\[hosts.NAME\]"]),
    ("hosts not tables", 'hosts = 3\n' + FULL.split("[hosts.gen1]")[0], [r"\[hosts\]: must hold"]),
    ("unknown host key", sub('ssh = "root@gen1.lab"', 'ssh = "root@gen1.lab"\nport = 22'),
     [r"line 3 \[hosts.gen1\]: port: unknown key: use ssh, local, build_dir, ssh_options"]),
    ("ssh and local", sub('ssh = "root@gen1.lab"', 'ssh = "root@gen1.lab"\nlocal = true'),
     [r"\[hosts.gen1\]: give either ssh"]),
    ("neither", sub('ssh = "capture@10.0.0.2"', 'build_dir = "/x"'), [r"line 6 \[hosts.sensor1\]: give either"]),
    ("local not bool", sub('ssh = "capture@10.0.0.2"', 'local = "yes"'), [r"local: 'yes': give true"]),
    ("local named ssh", FULL + '[hosts.local]\nssh = "a@b"\n', [r"\[hosts.local\]: ssh: the host named local"]),
    ("option destination", sub('"root@gen1.lab"', '"-oProxyCommand=evil"'),
     [r"line 2 \[hosts.gen1\]: ssh: .* is not an SSH destination"]),
    ("spaces", sub('"root@gen1.lab"', '"root@gen1 lab"'), [r"not an SSH destination"]),
    ("ssh not str", sub('"root@gen1.lab"', '3'), [r"ssh: 3: give an SSH destination"]),
    ("bad host name", FULL + '[hosts."a b"]\nssh = "x@y"\n', [r"\[hosts.a b\]: a host name is"]),
    ("relative build_dir", sub('"/opt/capbench/build"', '"build"'), [r"line 3 \[hosts.gen1\]: build_dir: 'build'"]),
    ("options not list", sub('["Port=2222"]', '"Port=2222"'), [r"ssh_options: give a list of Key=Value"]),
    ("option flag", sub('["Port=2222"]', '["-v"]'), [r"ssh_options: the option '-v': give ssh options as Key=Value"]),
    ("option newline", sub('["Port=2222"]', '["Port=22\\nX=1"]'), [r"ssh_options"]),
    ("no generator", re.sub(r"\[generator\]\n(.*\n){3}", "", FULL), [r"\[generator\]: missing"]),
    ("generator not table", "generator = 1\n" + FULL.replace("[generator]", "[x]").split("[x]")[0],
     [r"\[generator\]: must be a table"]),
    ("unknown generator key", sub("cpu = 2", "cpus = 2"), [r"line 12 \[generator\]: cpus: unknown key: use host, "
                                                            r"iface, cpu"]),
    ("unknown host", sub('host = "gen1"', 'host = "gen9"'),
     [r"line 10 \[generator\]: host: unknown host 'gen9': use gen1, local, sensor1, or add a \[hosts.gen9\]"]),
    ("no host", sub('host = "gen1"\n', ''), [r"line 9 \[generator\]: host: missing"]),
    ("no iface", sub('iface = "ens1f0"\n', ''), [r"\[generator\]: iface: missing"]),
    ("long iface", sub('"ens1f0"', '"abcdefghijklmnop"'), [r"line 11 \[generator\]: iface: 'abcdefghijklmnop' is not"]),
    ("slash iface", sub('"ens1f0"', '"a/b"'), [r"is not an interface name"]),
    ("cpu negative", sub("cpu = 2", "cpu = -1"), [r"line 12 \[generator\]: cpu: -1: give a CPU number"]),
    ("cpu bool", sub("cpu = 2", "cpu = true"), [r"cpu: True: give a CPU number"]),
    ("cpu float", sub("rx_cpu = 1", "rx_cpu = 1.5"), [r"line 17 \[\[sensor\]\] #1: rx_cpu: 1.5"]),
    ("no sensor", FULL.split("[[sensor]]")[0], [r"\[\[sensor\]\]: missing"]),
    ("unknown sensor key", sub('backend = "tcpdump"', 'backend = "tcpdump"\nqueue = 1'),
     [r"line 26 \[\[sensor\]\] #2: queue: unknown key"]),
    ("sensor unknown host", sub('host = "local"', 'host = "nope"'), [r"line 23 \[\[sensor\]\] #2: host: unknown host"]),
    ("both backend keys", sub('backend = "tcpdump"', 'backend = "tcpdump"\nbackends = ["pcap"]'),
     [r"#2: backend: give backend \(one\) or backends"]),
    ("no backends", sub('backends = ["pcap", "afp-v3"]\n', ''), [r"line 14 \[\[sensor\]\] #1: backends: missing"]),
    ("empty backends", sub('["pcap", "afp-v3"]', '[]'), [r"line 19 \[\[sensor\]\] #1: backends: give"]),
    ("backend not str", sub('backend = "tcpdump"', 'backend = 3'), [r"#2: backend: give"]),
    ("dup backend", sub('["pcap", "afp-v3"]', '["pcap", "pcap"]'), [r"'pcap' is named twice"]),
    ("same iface", sub('iface = "ens1f1"', 'iface = "ens1f0"').replace('host = "sensor1"', 'host = "gen1"'),
     [r"line 16 \[\[sensor\]\] #1: iface: ens1f0 on gen1 is also \[generator\]'s"]),
    ("same name", sub('name = "here"', 'name = "sensor1:ens1f1"'), [r"#2: name: 'sensor1:ens1f1' is also"]),
    ("bad name", sub('name = "here"', 'name = "a b"'), [r"line 22 \[\[sensor\]\] #2: name: 'a b'"]),
    ("clock word", sub('"ptp"', '"ntp"'), [r"line 28 \[clocks\]: synchronized: 'ntp': give \"ptp\""]),
    ("clock true", sub('"ptp"', 'true'), [r"synchronized: True"]),
    ("clock key", sub('synchronized = "ptp"', 'sync = "ptp"'), [r"line 28 \[clocks\]: sync: unknown key"]),
    ("relative ssh_config", sub('ssh = "capture@10.0.0.2"', 'ssh = "capture@10.0.0.2"\nssh_config = "cfg"'),
     [r"line 8 \[hosts.sensor1\]: ssh_config: 'cfg': give the absolute path"]),
    ("empty capbench", sub('ssh = "capture@10.0.0.2"', 'ssh = "capture@10.0.0.2"\ncapbench = ""'),
     [r"\[hosts.sensor1\]: capbench: '': give the command"]),
    ("tap no clone_to", FULL + '[tap]\niface = "t0"\n', [r"\[tap\]: clone_to: give the generator host's"]),
    ("tap count", FULL + '[tap]\niface = "t0"\nclone_to = ["t1"]\n', [r"\[tap\]: clone_to: 1 interfaces for 2 sensors"]),
    ("tap same", FULL + '[tap]\niface = "t0"\nclone_to = ["t1", "t0"]\n', [r"must be different interfaces"]),
    ("tap key", FULL + '[tap]\niface = "t0"\nclone_to = ["t1", "t2"]\nx = 1\n', [r"\[tap\]: x: unknown key"]),
    ("clocks not table", FULL.replace('[clocks]\nsynchronized = "ptp"\n', '').replace(
        "[hosts.gen1]", "clocks = 1\n[hosts.gen1]"), [r"\[clocks\]: must be a table"]),
]


@pytest.mark.parametrize("text, patterns", [(t, p) for _, t, p in BAD], ids=[i for i, _, _ in BAD])
def test_every_problem_is_one_line(text, patterns):
    with pytest.raises(UsageError) as e:
        topology.parse(text, "t.toml")
    msg = str(e.value)
    assert "\n" not in msg and e.value.exit_status == 2
    assert msg.startswith("'t.toml'"), msg
    for p in patterns:
        assert re.search(p, msg), (p, msg)


def test_known_backends():
    with pytest.raises(UsageError, match=r"#1: backends: unknown backend 'afp-v3': use pcap, tcpdump"):
        topology.parse(FULL, "t.toml", backends_known=["pcap", "tcpdump"])
    assert topology.parse(FULL, backends_known=["pcap", "afp-v3", "tcpdump"])


@pytest.mark.parametrize("stderr, words", [
    ("ssh: Could not resolve hostname nosuch: Name or service not known", ["cannot resolve"]),
    ("ssh: connect to host 10.0.0.1 port 22: Connection refused", ["refused", "start sshd"]),
    ("ssh: connect to host 10.0.0.1 port 22: Connection timed out", ["did not answer"]),
    ("No ED25519 host key is known for 10.0.0.1 and you have requested strict checking.\n"
     "Host key verification failed.", ["host key", "ssh a@b"]),
    ("a@b: Permission denied (publickey).", ["login was refused", "ssh-copy-id a@b"]),
    ("something new", ["ssh failed: something new", "`ssh a@b true`"]),
])
def test_ssh_faults_are_one_line(stderr, words):
    msg = str(ssh_fault("h", "a@b", stderr, 255))
    assert msg.startswith("host 'h' (a@b): ") and "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)


def test_the_version_is_written_once():
    """The remote check compares --describe's `version` (meson.build) with capbench.__version__,
    which a source tree reads from meson.build; the wheel's metadata takes it from there too."""
    meson = re.search(r"version\s*:\s*'([^']+)'", (REPO / "meson.build").read_text()).group(1)
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert meson == __version__


class FakeHost:
    """What hosts.check_safe_interfaces reads of a Host: its name for messages, whether it is this
    machine, and `ip -j` there (the facts of a host reached at 198.51.100.7 from 203.0.113.9)."""

    def __init__(self, local: bool = False):
        self.local, self.where = local, "'s1' (root@s1.lab)" if not local else "this machine"

    def ip_json(self, ns, *args):
        if args[:2] == ("route", "get"):
            return [{"dst": args[2], "dev": "mgmt0" if args[2] in ("203.0.113.9", "198.51.100.7") else "eth9"}]
        if args == ("addr", "show"):
            return [{"ifname": "mgmt0", "addr_info": [{"local": "198.51.100.7"}]},
                    {"ifname": "up0", "addr_info": [{"local": "203.0.113.9"}]}]
        if args == ("-4", "route", "show", "default"):
            return [{"dst": "default", "dev": "wan0"}]
        return []


def test_every_roles_interface_is_checked_with_the_ports_rule():
    """A remote host's own SSH connection (as it sees it) and default route; on this machine, the
    connections to the other hosts turned round (their client end is this machine's)."""
    seen = {"s1": "203.0.113.9 50022 198.51.100.7 22"}
    remote = FakeHost()
    connections = hosts.ssh_connections("s1", remote, seen)
    assert connections == {"capbench's SSH connection to that host": seen["s1"]}
    for iface, what in (("mgmt0", "capbench's SSH connection to that host"), ("wan0", "the default route")):
        with pytest.raises(UsageError, match=rf"^host 's1' \(root@s1.lab\), \[tap\] iface: {iface} carries {what}.*"
                                             rf"give another interface in the topology, or add --force-iface"):
            hosts.check_safe_interfaces(remote, {"t1": "[generator]", iface: "[tap]"}, connections)
    hosts.check_safe_interfaces(remote, {"t1": "[generator]", "t2": "[tap]"}, connections)
    assert hosts.turned_round(seen["s1"]) == "198.51.100.7 22 203.0.113.9 50022"
    here = FakeHost(local=True)
    connections = hosts.ssh_connections("local", here, seen)
    assert connections["capbench's SSH connection to 's1'"] == hosts.turned_round(seen["s1"])
    with pytest.raises(UsageError, match="this machine, .* up0 carries capbench's SSH connection to 's1'"):
        hosts.check_safe_interfaces(here, {"up0": "[[sensor]] #2"}, connections)
